//! Segmented reduction over CSR segment descriptors and CSR sparse matrix * vector (Modern GPU's
//! SegReduceCsr, IndirectReduceCsr, SpmvCsr and their preprocess / apply forms).
//!
//! Segment `i` covers positions `offsets[i]..offsets[i + 1]` (the last one up to the number of
//! positions, `count`): the values there, or for indirect CSR the values from `sources[i]` on.
//! Each segment is reduced in order by the operator (which need not commute: operands keep their
//! order), an empty segment to the operator's identity. The work is balanced by positions, so the
//! speed does not depend on how segment lengths are distributed.
//!
//! Offsets are `u32` or `u64` ([`Offset`]); `u64` offsets take inputs past 2^32 values. They are
//! checked before anything is written: `offsets[0] == 0`, non-decreasing (increasing unless
//! `support_empty`), at most `count` (less unless `support_empty`); sources and column indices
//! must lie in range. A violation is an [`Error::InvalidArgument`](crate::Error) that names the
//! first bad index; nothing is written. On the GPU the check is one kernel and one small read-back.
//! A plan ([`SegPlan`], [`SpmvPlan`]) checks and partitions a geometry once, for many values.
//!
//! On the GPU, segments that span tiles are joined through the decoupled look-back in the order
//! it finds its predecessors: for floating-point values the last bits of such segments may differ
//! from run to run (like the look-back scan's); integers and other exactly associative operators
//! give the same result every time.
//!
//! A thread folds its part of a segment starting from the operator's identity, so results match a
//! fold from the segment's first item exactly when the identity is exact: `op(identity, x) == x`
//! bit for bit. Float `plus` with identity 0.0 is not, for -0.0 (0.0 + -0.0 = 0.0): a segment
//! summing to -0.0 may come back as 0.0.

use crate::buffer::{input, output, View, ViewMut};
use crate::context::{Backend, Context};
use crate::cuda::jit::Load;
use crate::cuda::memory::DeviceMem;
use crate::cuda::segreduce::SegItems;
use crate::cuda::segreduce::{self as device, Checks, Geometry, Items};
use crate::error::{invalid, Result};
use crate::source::{HostRead, Source, SourceParts};
use crate::tuning::{self, Family, Tuning, MAX_TILE_BYTES};
use crate::{Arithmetic, Element, Op, Slice, SliceMut};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::sync::Arc;

/// The type of segment offsets and sources: `u32` or `u64`.
pub trait Offset: Arithmetic + offset_sealed::Sealed {
    #[doc(hidden)]
    fn to_u64(self) -> u64;
}

mod offset_sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

impl Offset for u32 {
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl Offset for u64 {
    fn to_u64(self) -> u64 {
        self
    }
}

/// What is reduced per position.
enum ItemSource<'a, T: Element> {
    /// The values (direct or indirect).
    Values(SourceParts<'a, T>),
    /// SpMV: `x[cols[m]]`, or `mul(matrix[m], x[cols[m]])`.
    Spmv {
        matrix: Option<View<'a, T>>,
        cols: View<'a, u32>,
        x: View<'a, T>,
        mul: Option<&'a Op<T>>,
    },
}

impl<T: Element> ItemSource<'_, T> {
    fn kind(&self) -> SegItems {
        match self {
            ItemSource::Values(_) => SegItems::Values,
            ItemSource::Spmv { matrix: None, .. } => SegItems::SpmvUnary,
            ItemSource::Spmv { .. } => SegItems::SpmvBinary,
        }
    }
    /// The length of what positions (or sources) index: the values, or the columns.
    fn data_len(&self) -> usize {
        match self {
            ItemSource::Values(v) => v.len,
            ItemSource::Spmv { cols, .. } => cols.len(),
        }
    }
}

/// A CSR geometry as given: offsets, optional sources, and the number of positions.
struct Segments<'a, O: Offset> {
    offsets: View<'a, O>,
    sources: Option<View<'a, O>>,
    count: usize,
    /// Segments may be empty: validation allows them, and once it has passed, some segment is.
    support_empty: bool,
}

/// What a plan keeps on the GPU (nothing on the CPU or without positions): the tile limits and,
/// where no segment is empty, the packed heads (the seed's thread codes), which an apply copies
/// with its items instead of reading the offsets and setting the heads from them; and whether a
/// segment starts in every tile but the last, when an apply completes the segments that cross
/// tiles from each tile's neighbour instead of a spine's scan.
#[derive(Default)]
struct Prepared {
    limits: Option<DeviceMem>,
    codes: Option<DeviceMem>,
    heads_everywhere: bool,
}

/// The tuning of a segmented reduction of `T`s: the table's, with VT at most 31 (a thread's heads
/// are one 32-bit mask) and the tile's shared memory (values and a segment index per position,
/// plus columns for SpMV and last heads for indirect CSR) within the static limit.
fn seg_tuning<T: Element, O: Offset>(
    ctx: &Context,
    kind: SegItems,
    indirect: bool,
) -> Result<Tuning> {
    tuning_for::<T, O>(ctx.arch(), kind, indirect)
}

/// The tuning a segmented reduction of `T`s with offsets `O` uses on `arch` (`None`: the CPU):
/// what the kernel compile check compiles.
#[doc(hidden)]
pub fn tuning_for<T: Element, O: Offset>(
    arch: Option<u32>,
    kind: SegItems,
    indirect: bool,
) -> Result<Tuning> {
    // SpMV has a family of its own: its items are gathers, which want other tiles (tuning.rs).
    let family = if kind == SegItems::Values {
        Family::SegReduce
    } else {
        Family::Spmv
    };
    let mut t = tuning::resolve(family, arch, std::mem::size_of::<T>(), None)?;
    let o = std::mem::size_of::<O>();
    let per_item = std::mem::size_of::<T>()
        + o
        + if kind != SegItems::Values && !indirect {
            4
        } else {
            0
        }
        + if indirect { o } else { 0 };
    t.vt = t.vt.min(31);
    while t.vt > 1 && t.nv() * per_item > MAX_TILE_BYTES {
        t.vt -= if t.vt > 2 { 2 } else { 1 };
    }
    Ok(t)
}

/// Checks on the CPU, in index order; the GPU finds the same first bad index.
fn first_bad_offset(offsets: &[u64], count: u64, strict: bool) -> Option<usize> {
    (0..offsets.len()).find(|&i| !offset_ok(offsets, i, count, strict))
}

fn offset_ok(offsets: &[u64], i: usize, count: u64, strict: bool) -> bool {
    let s = offsets[i];
    let ordered = match i {
        0 => s == 0,
        _ if strict => s > offsets[i - 1],
        _ => s >= offsets[i - 1],
    };
    ordered && if strict { s < count } else { s <= count }
}

/// What is wrong with `offsets[i]`, given it and the offset before it.
fn offset_error(
    name: &str,
    i: usize,
    prev: Option<u64>,
    s: u64,
    count: u64,
    strict: bool,
) -> crate::Error {
    let empty_hint = "; pass support_empty = true to allow empty segments";
    let what = match prev {
        None if s != 0 => format!("offsets[0] = {s}, but the first segment must start at 0"),
        Some(p) if s < p => format!(
            "offsets[{i}] = {s} is less than offsets[{}] = {p}: offsets must be non-decreasing",
            i - 1
        ),
        Some(p) if strict && s == p => format!(
            "offsets[{i}] = {s} equals offsets[{}]: segment {} is empty{empty_hint}",
            i - 1,
            i - 1
        ),
        _ if s > count => {
            format!("offsets[{i}] = {s} is past the end of the input ({count} positions)")
        }
        _ => format!(
            "offsets[{i}] = {s} is the end of the input ({count} positions): segment {i} is \
             empty{empty_hint}"
        ),
    };
    crate::Error::InvalidArgument(format!("{name}: {what}"))
}

fn source_error(name: &str, i: usize, source: u64, len: u64, data_len: usize) -> crate::Error {
    crate::Error::InvalidArgument(format!(
        "{name}: sources[{i}] = {source} with segment {i}'s length {len} reads past the end of \
         the values ({data_len} elements)"
    ))
}

fn column_error(name: &str, i: usize, col: u32, x_len: usize) -> crate::Error {
    crate::Error::InvalidArgument(format!(
        "{name}: cols[{i}] = {col} is not less than the vector's length {x_len}"
    ))
}

/// A segment geometry checked and partitioned once, for reducing many value arrays of `T` (and
/// operators) with [`Context::segreduce_apply`]: Modern GPU's SegReduceCsrPreprocess. It borrows
/// the offsets, which cannot change while it lives. On the GPU it keeps the tile partition and,
/// when no segment is empty, the segment heads packed one 32-bit word per thread (about 4 bytes
/// per 23 positions for 4-byte values), so that an apply does not read the offsets. Making it
/// waits for the GPU twice (its checks, and whether a segment starts in every tile, when an
/// apply completes the segments that cross tiles without a scan); an apply does not wait.
///
/// ```
/// use mgpu::{Context, Op};
/// let ctx = Context::cpu();
/// let offsets = ctx.upload(&[0u32, 2, 5])?;
/// let plan = ctx.segreduce_plan::<i32, u32>(&offsets, 6, false)?;
/// let mut sums = ctx.zeros::<i32>(3)?;
/// for values in [[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]] {
///     let values = ctx.upload(&values)?;
///     ctx.segreduce_apply(&plan, &values, &mut sums, &Op::plus())?;
/// }
/// assert_eq!(sums.to_vec()?, vec![11, 9, 1]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct SegPlan<'a, T: Element, O: Offset> {
    offsets: View<'a, O>,
    count: usize,
    /// The tile limits and packed heads, for `tuning`.
    prepared: Prepared,
    tuning: Tuning,
    kind: SegItems,
    /// Some segment is empty (validation found it so).
    has_empty: bool,
    _values: PhantomData<T>,
}

impl<T: Element, O: Offset> SegPlan<'_, T, O> {
    /// The number of segments.
    pub fn num_segments(&self) -> usize {
        self.offsets.len()
    }
    /// The number of positions (values) the geometry covers.
    pub fn count(&self) -> usize {
        self.count
    }
}

impl<T: Element, O: Offset> std::fmt::Debug for SegPlan<'_, T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SegPlan<{}, {}>({} segments over {} positions)",
            T::CUDA_TYPE,
            O::CUDA_TYPE,
            self.num_segments(),
            self.count
        )
    }
}

/// A sparse matrix's geometry and columns checked and partitioned once, for many products with
/// [`Context::spmv_apply`] / [`Context::spmv_unary_apply`]: Modern GPU's SpmvPreprocess. It
/// borrows the offsets and the column indices.
///
/// ```
/// use mgpu::{Context, Op};
/// let ctx = Context::cpu();
/// // [[1, 0, 2], [0, 3, 0]]
/// let (offsets, cols, matrix) =
///     (ctx.upload(&[0u32, 2])?, ctx.upload(&[0u32, 2, 1])?, ctx.upload(&[1.0f32, 2.0, 3.0])?);
/// let plan = ctx.spmv_plan::<f32, u32>(&cols, &offsets, 3, false)?;
/// let x = ctx.upload(&[1.0f32, 10.0, 100.0])?;
/// let mut y = ctx.zeros::<f32>(2)?;
/// ctx.spmv_apply(&plan, &matrix, &x, &mut y, &Op::multiplies(), &Op::plus())?;
/// assert_eq!(y.to_vec()?, vec![201.0, 30.0]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct SpmvPlan<'a, T: Element, O: Offset> {
    segments: SegPlan<'a, T, O>,
    cols: View<'a, u32>,
    x_len: usize,
}

impl<T: Element, O: Offset> std::fmt::Debug for SpmvPlan<'_, T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SpmvPlan<{}, {}>({} rows, {} nonzeros, {} columns)",
            T::CUDA_TYPE,
            O::CUDA_TYPE,
            self.segments.num_segments(),
            self.segments.count,
            self.x_len
        )
    }
}

/// The geometry's device description.
fn geometry<O: Offset>(segs: &Segments<'_, O>) -> Geometry {
    let ptr = |v: &View<'_, O>| v.at.device().map_or(0, |d| d.1);
    Geometry {
        offsets: ptr(&segs.offsets),
        num_segments: segs.offsets.len() as u64,
        count: segs.count as u64,
        wide_offsets: std::mem::size_of::<O>() == 8,
        sources: segs.sources.as_ref().map_or(0, ptr),
        empty: segs.support_empty,
    }
}

fn device_ptr<X: Element>(v: &View<'_, X>) -> u64 {
    v.at.device().expect("checked to be on the GPU").1
}

/// The kernel names segments in the offsets' type, ~0 meaning none.
fn check_offset_type<O: Offset>(name: &str, segs: &Segments<'_, O>) -> Result<()> {
    if std::mem::size_of::<O>() == 4 && segs.offsets.len() as u64 >= u32::MAX as u64 {
        return invalid(format!(
            "{name}: {} segments with u32 offsets; at most 2^32 - 2 are supported: use u64 \
             offsets",
            segs.offsets.len()
        ));
    }
    Ok(())
}

/// What the GPU's validation checks besides the offsets (see `Context::check_segments`).
fn gpu_checks<O: Offset>(
    segs: &Segments<'_, O>,
    data_len: usize,
    cols: Option<&View<'_, u32>>,
    x_len: usize,
) -> Checks {
    Checks {
        strict: !segs.support_empty,
        data_len: data_len as u64,
        cols: cols.map_or(0, device_ptr),
        num_cols: cols.map_or(0, |c| c.len() as u64),
        vec_len: x_len as u64,
    }
}

/// The GPU validation's findings as `check_segments` returns them: the error for the first bad
/// index (reading the values at fault back), else whether some segment is empty.
fn validation_result<O: Offset>(
    gpu: &crate::cuda::Gpu,
    name: &str,
    segs: &Segments<'_, O>,
    bad: device::Bad,
    data_len: usize,
    cols: Option<&View<'_, u32>>,
    x_len: usize,
) -> Result<bool> {
    let (strict, count) = (!segs.support_empty, segs.count as u64);
    let read = |v: &View<'_, O>, i: usize| -> Result<u64> {
        let mut x = [O::ZERO];
        gpu.download(
            device_ptr(v) + (i * std::mem::size_of::<O>()) as u64,
            &mut x,
        )?;
        Ok(x[0].to_u64())
    };
    if let Some(i) = bad[0] {
        let i = i as usize;
        let prev = if i > 0 {
            Some(read(&segs.offsets, i - 1)?)
        } else {
            None
        };
        return Err(offset_error(
            name,
            i,
            prev,
            read(&segs.offsets, i)?,
            count,
            strict,
        ));
    }
    if let (Some(i), Some(sources)) = (bad[1], &segs.sources) {
        let i = i as usize;
        let start = read(&segs.offsets, i)?;
        let next = if i + 1 < segs.offsets.len() {
            read(&segs.offsets, i + 1)?
        } else {
            count
        };
        return Err(source_error(
            name,
            i,
            read(sources, i)?,
            next - start,
            data_len,
        ));
    }
    if let (Some(i), Some(cols)) = (bad[2], cols) {
        let i = i as usize;
        let mut c = [0u32];
        gpu.download(device_ptr(cols) + 4 * i as u64, &mut c)?;
        return Err(column_error(name, i, c[0], x_len));
    }
    Ok(bad[3].is_some())
}

impl Context {
    /// Validates a geometry (and sources, columns); returns the error for the first bad index,
    /// else whether some segment is empty. `data_len`: what sources index (the values, or the
    /// nonzeros); `cols`: column indices to check against a vector of `x_len`.
    fn check_segments<O: Offset>(
        &self,
        name: &str,
        segs: &Segments<'_, O>,
        data_len: usize,
        cols: Option<&View<'_, u32>>,
        x_len: usize,
        tuning: &Tuning,
    ) -> Result<bool> {
        let strict = !segs.support_empty;
        let count = segs.count as u64;
        check_offset_type(name, segs)?;
        match &self.backend {
            Backend::Cpu => {
                let offsets: Vec<u64> = host(&segs.offsets).iter().map(|o| o.to_u64()).collect();
                if let Some(i) = first_bad_offset(&offsets, count, strict) {
                    let prev = (i > 0).then(|| offsets[i - 1]);
                    return Err(offset_error(name, i, prev, offsets[i], count, strict));
                }
                if let Some(sources) = &segs.sources {
                    let sources = host(sources);
                    for i in 0..offsets.len() {
                        let next = offsets.get(i + 1).copied().unwrap_or(count);
                        let (s, len) = (sources[i].to_u64(), next - offsets[i]);
                        if s > data_len as u64 || len > data_len as u64 - s {
                            return Err(source_error(name, i, s, len, data_len));
                        }
                    }
                }
                if let Some(cols) = cols {
                    if let Some(i) = host(cols).iter().position(|&c| c as usize >= x_len) {
                        return Err(column_error(name, i, host(cols)[i], x_len));
                    }
                }
                // Strict offsets that pass have no empty segment.
                let ends = offsets.iter().skip(1).copied().chain([count]);
                Ok(!strict && offsets.iter().zip(ends).any(|(&start, end)| start == end))
            }
            Backend::Cuda(gpu) => {
                let checks = gpu_checks(segs, data_len, cols, x_len);
                let mut homes = homes_of(segs);
                homes.extend(cols.and_then(|c| c.at.device()).map(|d| d.0));
                let bad = gpu.ordered(&homes, || {
                    let bad = device::launch_validation(gpu, &geometry(segs), &checks, tuning)?;
                    device::read_validation(gpu, bad.as_ref())
                })?;
                validation_result(gpu, name, segs, bad, data_len, cols, x_len)
            }
        }
    }

    /// Checks lengths and places, validates unless `plan` is given, and reduces. Without empty
    /// segments (checked, or a plan's), the kernel for non-empty ones runs even if they were
    /// allowed.
    #[allow(clippy::too_many_arguments)]
    fn segreduce_run<T: Element, O: Offset>(
        &self,
        name: &str,
        mut segs: Segments<'_, O>,
        items: ItemSource<'_, T>,
        mut out: ViewMut<'_, T>,
        op: &Op<T>,
        plan: Option<(&Prepared, &Tuning)>,
    ) -> Result<()> {
        let num_segments = segs.offsets.len();
        if out.len() != num_segments {
            return invalid(format!(
                "{name}: the output holds {} elements for {num_segments} segments; it needs one \
                 per segment",
                out.len()
            ));
        }
        if num_segments == 0 && segs.count > 0 {
            return invalid(format!(
                "{name}: no segments (empty offsets) for {} positions; offsets must hold at least \
                 the first segment's start, 0",
                segs.count
            ));
        }
        if let Some(sources) = &segs.sources {
            if sources.len() != num_segments {
                return invalid(format!(
                    "{name}: {} sources for {num_segments} segments; they must have the same length",
                    sources.len()
                ));
            }
        }
        let tuning = match plan {
            Some((_, t)) => *t,
            None => seg_tuning::<T, O>(self, items.kind(), segs.sources.is_some())?,
        };
        let (cols, x_len) = match &items {
            ItemSource::Spmv { cols, x, .. } => (Some(*cols), x.len()),
            ItemSource::Values(_) => (None, 0),
        };
        // A strict one-shot on the GPU queues its validation before the reduction, whose kernels
        // honour it, and reads it back at the end: one wait for the GPU, not two. With
        // `support_empty` the validation runs first: it chooses the kernel for non-empty
        // segments when there is no empty one.
        let deferred = plan.is_none() && !segs.support_empty && self.gpu().is_some();
        if plan.is_none() && !deferred {
            segs.support_empty =
                self.check_segments(name, &segs, items.data_len(), cols.as_ref(), x_len, &tuning)?;
        }
        if deferred {
            check_offset_type(name, &segs)?;
        }
        match &self.backend {
            Backend::Cpu => {
                let out = out.host_mut().expect("checked to be on the CPU");
                reduce_host(&segs, &items, out, op);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let geometry = geometry(&segs);
                let plain = Load::plain::<T>();
                let (kind, (input, load), matrix, col_ptr, vec, mul) = match &items {
                    ItemSource::Values(v) => {
                        let (arg, load, _) = v.device();
                        (SegItems::Values, (arg, load), 0, 0, 0, None)
                    }
                    ItemSource::Spmv {
                        matrix,
                        cols,
                        x,
                        mul,
                    } => (
                        items.kind(),
                        (0, &plain),
                        matrix.as_ref().map_or(0, device_ptr),
                        device_ptr(cols),
                        device_ptr(x),
                        *mul,
                    ),
                };
                let dest = out.at.device().expect("checked to be on the GPU").1;
                let mut homes = homes_of(&segs);
                homes.extend(items_homes(&items));
                if let Some((home, _)) = out.at.device() {
                    homes.push(home);
                }
                if let Some((
                    Prepared {
                        limits: Some(limits),
                        ..
                    },
                    _,
                )) = plan
                {
                    homes.push(&limits.gpu);
                }
                let bad = gpu.ordered(&homes, || {
                    let bad = if deferred {
                        let checks = gpu_checks(&segs, items.data_len(), cols.as_ref(), x_len);
                        device::launch_validation(gpu, &geometry, &checks, &tuning)?
                    } else {
                        None
                    };
                    let owned;
                    let (limits, codes, heads_everywhere) = match plan {
                        Some((prepared, _)) => (
                            prepared.limits.as_ref(),
                            prepared.codes.as_ref(),
                            prepared.heads_everywhere,
                        ),
                        None => {
                            owned = device::partition(gpu, &geometry, &tuning)?;
                            (owned.as_ref(), None, false)
                        }
                    };
                    let items = Items {
                        kind,
                        input,
                        load,
                        matrix,
                        cols: col_ptr,
                        vec,
                    };
                    device::reduce(
                        gpu,
                        &geometry,
                        limits,
                        codes,
                        heads_everywhere,
                        bad.as_ref(),
                        items,
                        dest,
                        op,
                        mul,
                        &tuning,
                    )?;
                    Ok(bad)
                })?;
                if deferred {
                    let found = device::read_validation(gpu, bad.as_ref())?;
                    validation_result(
                        gpu,
                        name,
                        &segs,
                        found,
                        items.data_len(),
                        cols.as_ref(),
                        x_len,
                    )?;
                }
                Ok(())
            }
        }
    }

    /// Reduces each segment of `values` given by CSR `offsets` (segment `i` covers
    /// `offsets[i]..offsets[i + 1]`, the last one up to `values.len()`) with `op`, one result per
    /// segment to `out` (`out.len() == offsets.len()`): Modern GPU's SegReduceCsr. Without
    /// `support_empty` every segment must be non-empty; with it, empty segments get the identity.
    /// `values` may be a buffer, a view, a mapped input or a counting sequence.
    ///
    /// ```
    /// use mgpu::{Context, Op};
    /// let ctx = Context::cpu();
    /// let values = ctx.upload(&[1, 2, 3, 4, 5, 6])?;
    /// let offsets = ctx.upload(&[0u32, 1, 1, 4])?;
    /// let mut out = ctx.zeros::<i32>(4)?;
    /// ctx.segreduce_csr(&values, &offsets, true, &mut out, &Op::plus())?;
    /// assert_eq!(out.to_vec()?, vec![1, 0, 9, 11]);
    /// // Without support_empty, segment 1 is an error that names it.
    /// let err = ctx.segreduce_csr(&values, &offsets, false, &mut out, &Op::plus()).unwrap_err();
    /// assert!(err.to_string().contains("offsets[2] = 1 equals offsets[1]"));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segreduce_csr<T: Element, O: Offset>(
        &self,
        values: &impl Source<T>,
        offsets: &impl Slice<O>,
        support_empty: bool,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let name = "segreduce_csr";
        let values = values.parts();
        values.check(self, "the values")?;
        let segs = Segments {
            offsets: input(self, offsets, "the offsets")?,
            sources: None,
            count: values.len,
            support_empty,
        };
        let out = output(self, out, "the output")?;
        self.segreduce_run(name, segs, ItemSource::Values(values), out, op, None)
    }

    /// Like [`segreduce_csr`](Context::segreduce_csr), but segment `i`'s values start at
    /// `values[sources[i]]` (its length is still `offsets[i + 1] - offsets[i]`, the last one up to
    /// `values.len()`): Modern GPU's IndirectReduceCsr.
    ///
    /// ```
    /// use mgpu::{Context, Op};
    /// let ctx = Context::cpu();
    /// let values = ctx.upload(&[1, 2, 3, 4, 5, 6])?;
    /// let offsets = ctx.upload(&[0u32, 2, 3])?; // lengths 2, 1, 3
    /// let sources = ctx.upload(&[4u32, 0, 1])?;
    /// let mut out = ctx.zeros::<i32>(3)?;
    /// ctx.segreduce_csr_indirect(&values, &offsets, &sources, false, &mut out, &Op::plus())?;
    /// assert_eq!(out.to_vec()?, vec![5 + 6, 1, 2 + 3 + 4]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segreduce_csr_indirect<T: Element, O: Offset>(
        &self,
        values: &impl Source<T>,
        offsets: &impl Slice<O>,
        sources: &impl Slice<O>,
        support_empty: bool,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let name = "segreduce_csr_indirect";
        let values = values.parts();
        values.check(self, "the values")?;
        let segs = Segments {
            offsets: input(self, offsets, "the offsets")?,
            sources: Some(input(self, sources, "the sources")?),
            count: values.len,
            support_empty,
        };
        let out = output(self, out, "the output")?;
        self.segreduce_run(name, segs, ItemSource::Values(values), out, op, None)
    }

    /// Checks and partitions the geometry of `offsets` over `count` values once, for
    /// [`segreduce_apply`](Context::segreduce_apply) on many value arrays of `T`: Modern GPU's
    /// SegReduceCsrPreprocess. See [`SegPlan`].
    pub fn segreduce_plan<'a, T: Element, O: Offset>(
        &self,
        offsets: &'a impl Slice<O>,
        count: usize,
        support_empty: bool,
    ) -> Result<SegPlan<'a, T, O>> {
        self.plan(
            "segreduce_plan",
            offsets,
            count,
            support_empty,
            None::<(&View<'_, u32>, usize)>,
        )
    }

    fn plan<'a, T: Element, O: Offset>(
        &self,
        name: &str,
        offsets: &'a impl Slice<O>,
        count: usize,
        support_empty: bool,
        spmv: Option<(&View<'a, u32>, usize)>,
    ) -> Result<SegPlan<'a, T, O>> {
        let segs = Segments {
            offsets: input(self, offsets, "the offsets")?,
            sources: None,
            count,
            support_empty,
        };
        if segs.offsets.is_empty() && count > 0 {
            return invalid(format!(
                "{name}: no segments (empty offsets) for {count} positions; offsets must hold at \
                 least the first segment's start, 0"
            ));
        }
        let kind = if spmv.is_some() {
            SegItems::SpmvBinary
        } else {
            SegItems::Values
        };
        let tuning = seg_tuning::<T, O>(self, kind, false)?;
        let (cols, x_len) = match spmv {
            Some((cols, x_len)) => (Some(cols), x_len),
            None => (None, 0),
        };
        let mut segs = segs;
        segs.support_empty = self.check_segments(name, &segs, count, cols, x_len, &tuning)?;
        let prepared = self.prepare(&segs, &tuning)?;
        Ok(SegPlan {
            offsets: segs.offsets,
            count,
            prepared,
            tuning,
            kind,
            has_empty: segs.support_empty,
            _values: PhantomData,
        })
    }

    /// Partitions a validated direct geometry for `tuning`, where no segment is empty packs its
    /// heads, and finds whether every tile but the last holds a segment start (a small read-back):
    /// what a plan keeps.
    fn prepare<O: Offset>(&self, segs: &Segments<'_, O>, tuning: &Tuning) -> Result<Prepared> {
        let Backend::Cuda(gpu) = &self.backend else {
            return Ok(Prepared::default());
        };
        let geometry = geometry(segs);
        let homes: Vec<_> = segs.offsets.at.device().map(|d| d.0).into_iter().collect();
        gpu.ordered(&homes, || {
            let limits = device::partition(gpu, &geometry, tuning)?;
            let codes = if segs.support_empty {
                None
            } else {
                device::codes(gpu, &geometry, limits.as_ref(), tuning)?
            };
            let heads_everywhere =
                device::heads_everywhere(gpu, &geometry, limits.as_ref(), tuning)?;
            Ok(Prepared {
                limits,
                codes,
                heads_everywhere,
            })
        })
    }

    /// Reduces each segment of `plan`'s geometry over `values` (`values.len()` must be the plan's
    /// count) with `op` to `out`, skipping the checks and the partition the plan did: Modern GPU's
    /// SegReduceApply.
    pub fn segreduce_apply<T: Element, O: Offset>(
        &self,
        plan: &SegPlan<'_, T, O>,
        values: &impl Source<T>,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let name = "segreduce_apply";
        let values = values.parts();
        values.check(self, "the values")?;
        if values.len != plan.count {
            return invalid(format!(
                "{name}: {} values for a plan of {} positions; they must be the same",
                values.len, plan.count
            ));
        }
        check_plan_context(self, name, &plan.offsets, plan.kind, SegItems::Values)?;
        let segs = Segments {
            offsets: plan.offsets,
            sources: None,
            count: plan.count,
            support_empty: plan.has_empty,
        };
        let out = output(self, out, "the output")?;
        self.segreduce_run(
            name,
            segs,
            ItemSource::Values(values),
            out,
            op,
            Some((&plan.prepared, &plan.tuning)),
        )
    }

    /// Sparse matrix * vector, CSR: `y[i] = add-reduction over the nonzeros k of row i of
    /// mul(matrix[k], x[cols[k]])` (rows from `offsets`, the last one up to `cols.len()`; empty rows
    /// get `add`'s identity when `support_empty`): Modern GPU's SpmvCsrBinary. `matrix` and `cols`
    /// have one element per nonzero, `y` one per row.
    ///
    /// ```
    /// use mgpu::{Context, Op};
    /// let ctx = Context::cpu();
    /// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
    /// let offsets = ctx.upload(&[0u32, 2, 2])?;
    /// let cols = ctx.upload(&[0u32, 2, 1])?;
    /// let matrix = ctx.upload(&[1.0f64, 2.0, 3.0])?;
    /// let x = ctx.upload(&[1.0f64, 10.0, 100.0])?;
    /// let mut y = ctx.zeros::<f64>(3)?;
    /// ctx.spmv_csr(&matrix, &cols, &offsets, &x, &mut y, true, &Op::multiplies(), &Op::plus())?;
    /// assert_eq!(y.to_vec()?, vec![201.0, 0.0, 30.0]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn spmv_csr<T: Element, O: Offset>(
        &self,
        matrix: &impl Slice<T>,
        cols: &impl Slice<u32>,
        offsets: &impl Slice<O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        support_empty: bool,
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Result<()> {
        self.spmv(
            "spmv_csr",
            Some(input(self, matrix, "the matrix values")?),
            cols,
            offsets,
            None,
            x,
            y,
            support_empty,
            Some(mul),
            add,
        )
    }

    /// Unary SpMV, CSR: `y[i]` = the `add`-reduction of `x[cols[k]]` over row `i`'s nonzeros k
    /// (Modern GPU's SpmvCsrUnary).
    pub fn spmv_csr_unary<T: Element, O: Offset>(
        &self,
        cols: &impl Slice<u32>,
        offsets: &impl Slice<O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        support_empty: bool,
        add: &Op<T>,
    ) -> Result<()> {
        self.spmv(
            "spmv_csr_unary",
            None,
            cols,
            offsets,
            None,
            x,
            y,
            support_empty,
            None,
            add,
        )
    }

    /// [`spmv_csr`](Context::spmv_csr) with indirection: row `i`'s nonzeros are
    /// `matrix[sources[i]..]` and `cols[sources[i]..]` (its length still from `offsets`, the last
    /// row up to `cols.len()`): Modern GPU's SpmvCsrIndirectBinary.
    #[allow(clippy::too_many_arguments)]
    pub fn spmv_csr_indirect<T: Element, O: Offset>(
        &self,
        matrix: &impl Slice<T>,
        cols: &impl Slice<u32>,
        offsets: &impl Slice<O>,
        sources: &impl Slice<O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        support_empty: bool,
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Result<()> {
        self.spmv(
            "spmv_csr_indirect",
            Some(input(self, matrix, "the matrix values")?),
            cols,
            offsets,
            Some(input(self, sources, "the sources")?),
            x,
            y,
            support_empty,
            Some(mul),
            add,
        )
    }

    /// Unary SpMV with indirection (Modern GPU's SpmvCsrIndirectUnary).
    #[allow(clippy::too_many_arguments)]
    pub fn spmv_csr_indirect_unary<T: Element, O: Offset>(
        &self,
        cols: &impl Slice<u32>,
        offsets: &impl Slice<O>,
        sources: &impl Slice<O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        support_empty: bool,
        add: &Op<T>,
    ) -> Result<()> {
        self.spmv(
            "spmv_csr_indirect_unary",
            None,
            cols,
            offsets,
            Some(input(self, sources, "the sources")?),
            x,
            y,
            support_empty,
            None,
            add,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn spmv<T: Element, O: Offset>(
        &self,
        name: &str,
        matrix: Option<View<'_, T>>,
        cols: &impl Slice<u32>,
        offsets: &impl Slice<O>,
        sources: Option<View<'_, O>>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        support_empty: bool,
        mul: Option<&Op<T>>,
        add: &Op<T>,
    ) -> Result<()> {
        let cols = input(self, cols, "the column indices")?;
        if let Some(m) = &matrix {
            if m.len() != cols.len() {
                return invalid(format!(
                    "{name}: {} matrix values for {} column indices; they must have the same \
                     length (one per nonzero)",
                    m.len(),
                    cols.len()
                ));
            }
        }
        let segs = Segments {
            offsets: input(self, offsets, "the offsets")?,
            sources,
            count: cols.len(),
            support_empty,
        };
        let items = ItemSource::Spmv {
            matrix,
            cols,
            x: input(self, x, "the vector")?,
            mul,
        };
        let y = output(self, y, "the output vector")?;
        self.segreduce_run(name, segs, items, y, add, None)
    }

    /// Checks the rows of `offsets` over `cols.len()` nonzeros and every column index against a
    /// vector of `x_len` once, for [`spmv_apply`](Context::spmv_apply) and
    /// [`spmv_unary_apply`](Context::spmv_unary_apply) with many matrix values and vectors. See
    /// [`SpmvPlan`].
    pub fn spmv_plan<'a, T: Element, O: Offset>(
        &self,
        cols: &'a impl Slice<u32>,
        offsets: &'a impl Slice<O>,
        x_len: usize,
        support_empty: bool,
    ) -> Result<SpmvPlan<'a, T, O>> {
        let cols = input(self, cols, "the column indices")?;
        let segments = self.plan(
            "spmv_plan",
            offsets,
            cols.len(),
            support_empty,
            Some((&cols, x_len)),
        )?;
        Ok(SpmvPlan {
            segments,
            cols,
            x_len,
        })
    }

    /// The product of the plan's matrix (with values `matrix`) and `x` to `y` (Modern GPU's
    /// SpmvBinaryApply).
    #[allow(clippy::too_many_arguments)]
    pub fn spmv_apply<T: Element, O: Offset>(
        &self,
        plan: &SpmvPlan<'_, T, O>,
        matrix: &impl Slice<T>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Result<()> {
        let matrix = input(self, matrix, "the matrix values")?;
        if matrix.len() != plan.cols.len() {
            return invalid(format!(
                "spmv_apply: {} matrix values for a plan of {} nonzeros; they must be the same",
                matrix.len(),
                plan.cols.len()
            ));
        }
        self.spmv_apply_any("spmv_apply", plan, Some(matrix), x, y, Some(mul), add)
    }

    /// The unary product of the plan's matrix and `x` to `y` (Modern GPU's SpmvUnaryApply).
    pub fn spmv_unary_apply<T: Element, O: Offset>(
        &self,
        plan: &SpmvPlan<'_, T, O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        add: &Op<T>,
    ) -> Result<()> {
        self.spmv_apply_any("spmv_unary_apply", plan, None, x, y, None, add)
    }

    #[allow(clippy::too_many_arguments)]
    fn spmv_apply_any<T: Element, O: Offset>(
        &self,
        name: &str,
        plan: &SpmvPlan<'_, T, O>,
        matrix: Option<View<'_, T>>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        mul: Option<&Op<T>>,
        add: &Op<T>,
    ) -> Result<()> {
        let x = input(self, x, "the vector")?;
        if x.len() != plan.x_len {
            return invalid(format!(
                "{name}: the vector holds {} elements but the plan's columns were checked against \
                 {}; they must be the same",
                x.len(),
                plan.x_len
            ));
        }
        check_plan_context(
            self,
            name,
            &plan.segments.offsets,
            plan.segments.kind,
            SegItems::SpmvBinary,
        )?;
        let segs = Segments {
            offsets: plan.segments.offsets,
            sources: None,
            count: plan.segments.count,
            support_empty: plan.segments.has_empty,
        };
        let items = ItemSource::Spmv {
            matrix,
            cols: plan.cols,
            x,
            mul,
        };
        let y = output(self, y, "the output vector")?;
        let plan = &plan.segments;
        self.segreduce_run(
            name,
            segs,
            items,
            y,
            add,
            Some((&plan.prepared, &plan.tuning)),
        )
    }
}

/// The runs of a key array found once, for reducing many value arrays by those keys with
/// [`Context::reduce_by_key_apply`]: Modern GPU's ReduceByKeyPreprocess. It holds the start of
/// every run (offsets of type `O`: `u64` for more than 2^32 - 1 keys) and reduces like
/// [`segreduce_apply`](Context::segreduce_apply), reading the values and the run starts only.
///
/// ```
/// use mgpu::{Context, Count, Equality, Op};
/// let ctx = Context::cpu();
/// let keys = ctx.upload(&[7, 7, 2, 2, 2, 7])?;
/// let mut first_keys = ctx.zeros::<i32>(6)?;
/// let plan = ctx.reduce_by_key_plan::<i32, i64, u32>(&keys, &Equality::equal_to(), &mut first_keys)?;
/// assert_eq!(plan.num_runs(), 3);
/// let values = ctx.upload(&[1i64, 2, 3, 4, 5, 6])?;
/// let mut sums = ctx.zeros::<i64>(3)?;
/// ctx.reduce_by_key_apply(&plan, &values, &mut sums, &Op::plus())?;
/// assert_eq!(sums.to_vec()?, vec![3, 12, 6]);
/// assert_eq!(&first_keys.to_vec()?[..3], &[7, 2, 7]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct ReduceByKeyPlan<T: Element, O: Offset> {
    /// Run starts (the first `runs` elements).
    starts: crate::Buffer<O>,
    runs: usize,
    count: usize,
    prepared: Prepared,
    tuning: Tuning,
    _values: PhantomData<T>,
}

impl<T: Element, O: Offset> ReduceByKeyPlan<T, O> {
    /// The number of runs (the length of an apply's output).
    pub fn num_runs(&self) -> usize {
        self.runs
    }
    /// The number of keys (the length of an apply's values).
    pub fn count(&self) -> usize {
        self.count
    }
}

impl<T: Element, O: Offset> std::fmt::Debug for ReduceByKeyPlan<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ReduceByKeyPlan<{}, {}>({} runs of {} keys)",
            T::CUDA_TYPE,
            O::CUDA_TYPE,
            self.runs,
            self.count
        )
    }
}

impl Context {
    /// Finds the runs of keys equal under `equal` once, writing the first key of each run to
    /// `keys_out` (room for every key), for [`reduce_by_key_apply`](Context::reduce_by_key_apply)
    /// on many value arrays of `T`. See [`ReduceByKeyPlan`].
    pub fn reduce_by_key_plan<K: Element, T: Element, O: Offset>(
        &self,
        keys: &impl Slice<K>,
        equal: &crate::Equality<K>,
        keys_out: &mut impl SliceMut<K>,
    ) -> Result<ReduceByKeyPlan<T, O>> {
        let n = keys.view().len();
        if n as u64 > O::HIGHEST.to_u64() {
            return invalid(format!(
                "reduce_by_key_plan: {n} keys do not fit offsets of type {}; use u64",
                O::CUDA_TYPE
            ));
        }
        // The run starts: the positions of the keys unique_by_key keeps.
        let mut positions = self.zeros::<O>(n)?;
        self.sequence(&mut positions, O::ZERO)?;
        let mut starts = self.zeros::<O>(n)?;
        let runs = self
            .unique_by_key(
                keys,
                &positions,
                keys_out,
                &mut starts,
                equal,
                crate::Count::Host,
            )?
            .expect("a host count") as usize;
        drop(positions);
        let tuning = seg_tuning::<T, O>(self, SegItems::Values, false)?;
        let segs = Segments {
            offsets: starts.slice(..runs),
            sources: None,
            count: n,
            support_empty: false,
        };
        let prepared = self.prepare(&segs, &tuning)?;
        Ok(ReduceByKeyPlan {
            starts,
            runs,
            count: n,
            prepared,
            tuning,
            _values: PhantomData,
        })
    }

    /// Reduces `values` (one per key of the plan) by the plan's runs with `op`, in order: one
    /// result per run to `out` (`out.len() == plan.num_runs()`): Modern GPU's ReduceByKeyApply.
    pub fn reduce_by_key_apply<T: Element, O: Offset>(
        &self,
        plan: &ReduceByKeyPlan<T, O>,
        values: &impl Source<T>,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let name = "reduce_by_key_apply";
        let values = values.parts();
        values.check(self, "the values")?;
        if values.len != plan.count {
            return invalid(format!(
                "{name}: {} values for a plan of {} keys; they must be the same",
                values.len, plan.count
            ));
        }
        let starts = plan.starts.slice(..plan.runs);
        crate::buffer::check_place(self, &starts.at, "the plan")?;
        let segs = Segments {
            offsets: starts,
            sources: None,
            count: plan.count,
            support_empty: false,
        };
        let out = output(self, out, "the output")?;
        self.segreduce_run(
            name,
            segs,
            ItemSource::Values(values),
            out,
            op,
            Some((&plan.prepared, &plan.tuning)),
        )
    }
}

/// A plan is used on the backend (and GPU) it was made on, for the kind of items it was made for.
fn check_plan_context<O: Offset>(
    ctx: &Context,
    name: &str,
    offsets: &View<'_, O>,
    plan_kind: SegItems,
    kind: SegItems,
) -> Result<()> {
    crate::buffer::check_place(ctx, &offsets.at, "the plan")?;
    if plan_kind != kind {
        return invalid(format!(
            "{name}: the plan was made for {}; make it with {}",
            if plan_kind == SegItems::Values {
                "segreduce_apply"
            } else {
                "SpMV"
            },
            if kind == SegItems::Values {
                "segreduce_plan"
            } else {
                "spmv_plan"
            },
        ));
    }
    Ok(())
}

/// The streams a geometry lives on.
fn homes_of<'a, O: Offset>(segs: &Segments<'a, O>) -> Vec<&'a Arc<crate::cuda::Gpu>> {
    let mut homes: Vec<&Arc<crate::cuda::Gpu>> = Vec::new();
    homes.extend(segs.offsets.at.device().map(|d| d.0));
    homes.extend(
        segs.sources
            .as_ref()
            .and_then(|s| s.at.device())
            .map(|d| d.0),
    );
    homes
}

/// The streams a reduction's items live on.
fn items_homes<'a, T: Element>(items: &ItemSource<'a, T>) -> Vec<&'a Arc<crate::cuda::Gpu>> {
    let mut homes: Vec<&Arc<crate::cuda::Gpu>> = Vec::new();
    match items {
        ItemSource::Values(v) => {
            if let crate::source::SourceKind::Device { home, .. } = &v.kind {
                homes.push(home);
            }
        }
        ItemSource::Spmv {
            matrix, cols, x, ..
        } => {
            homes.extend(matrix.as_ref().and_then(|m| m.at.device()).map(|d| d.0));
            homes.extend(cols.at.device().map(|d| d.0));
            homes.extend(x.at.device().map(|d| d.0));
        }
    }
    homes
}

fn host<'a, X: Element>(v: &View<'a, X>) -> &'a [X] {
    v.at.host().expect("checked to be on the CPU")
}

/// The CPU reference: each segment folded in order from its first item, empty ones to the
/// identity.
fn reduce_host<T: Element, O: Offset>(
    segs: &Segments<'_, O>,
    items: &ItemSource<'_, T>,
    out: &mut [T],
    op: &Op<T>,
) {
    let offsets = host(&segs.offsets);
    let sources = segs.sources.as_ref().map(host);
    let count = segs.count as u64;
    let values: Vec<T>;
    let item: Box<dyn Fn(usize) -> T + Sync + '_> = match items {
        ItemSource::Values(v) => match v.host() {
            HostRead::Slice(s) => Box::new(move |m| s[m]),
            fill => {
                let mut all = vec![T::zeroed(); v.len];
                fill.fill(0, &mut all);
                values = all;
                Box::new(|m| values[m])
            }
        },
        ItemSource::Spmv {
            matrix,
            cols,
            x,
            mul,
        } => {
            let (cols, x) = (host(cols), host(x));
            match (matrix, mul) {
                (Some(m), Some(mul)) => {
                    let m = host(m);
                    Box::new(move |k| mul.apply(m[k], x[cols[k] as usize]))
                }
                _ => Box::new(move |k| x[cols[k] as usize]),
            }
        }
    };
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let start = offsets[i].to_u64();
        let end = offsets.get(i + 1).map_or(count, |e| e.to_u64());
        let from = sources.map_or(start, |s| s[i].to_u64()) as usize;
        let len = (end - start) as usize;
        *o = (from..from + len)
            .map(&item)
            .reduce(|a, b| op.apply(a, b))
            .unwrap_or(op.identity());
    });
}
