//! Host side of the segmented reductions (kernel_segreduce.cu): validation of the segment
//! descriptors (one small read-back), the tile partition, the tiles, and the spine that carries
//! partial reductions across tiles on the look-back machinery the scan uses.

use super::jit::{Load, Module, SegItems, SegReduceSpec};
use super::memory::DeviceMem;
use super::scan::{value_record, with_lookback};
use super::{launch, ByValue, Gpu};
use crate::error::Result;
use crate::tuning::Tuning;
use crate::{Element, Op};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// A CSR geometry on the device: segment start offsets (of 4 or 8 bytes) over `count` positions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub offsets: CUdeviceptr,
    pub num_segments: u64,
    pub count: u64,
    pub wide_offsets: bool,
    /// Indirect CSR: where each segment's items start (same type as the offsets); 0 if direct.
    pub sources: CUdeviceptr,
    /// Segments may be empty (else validation found the offsets increasing).
    pub empty: bool,
}

/// What a reduction reads besides the geometry: the values (`input`, loaded as `load` says), or
/// for SpMV the matrix values, the column indices and the vector.
#[derive(Clone, Copy)]
pub(crate) struct Items<'a> {
    pub kind: SegItems,
    pub input: u64,
    pub load: &'a Load,
    pub matrix: CUdeviceptr,
    pub cols: CUdeviceptr,
    pub vec: CUdeviceptr,
}

/// What validation checks besides the offsets (0 / none where absent).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Checks {
    /// Segments must be non-empty (offsets increasing, the last one below `count`).
    pub strict: bool,
    /// The length of the data `sources` index into.
    pub data_len: u64,
    pub cols: CUdeviceptr,
    pub num_cols: u64,
    pub vec_len: u64,
}

/// The first bad index found by each check (`None`: the check passed): offsets, sources,
/// columns; then the first empty segment (`None`: every segment has a position).
pub(crate) type Bad = [Option<u64>; 4];

/// The tiles' variant. Direct SpMV gathers lane-strided where rows are longer on average than a
/// thread's VT items: a warp's load instruction then reads consecutive nonzeros of one row, whose
/// sorted columns share cache lines where the row is locally dense (power-law rows). With 4-byte
/// values, shorter rows (stencils) keep each thread on its own items: there an instruction's
/// lanes already read neighbouring rows' columns within a few lines, and the products skip the
/// round trip through shared memory. With 8-byte values (twice the bytes, VT 15 against 11) those
/// lanes spread over more lines, and lane-strided gathers measured within 1% or faster on every
/// matrix (BENCHMARKS.md: 3-D stencil 0.434 -> 0.363 ms).
fn spec(
    geometry: &Geometry,
    kind: SegItems,
    codes: bool,
    value_size: usize,
    tuning: &Tuning,
) -> SegReduceSpec {
    let indirect = geometry.sources != 0;
    let long_rows = geometry.count >= geometry.num_segments.saturating_mul(tuning.vt as u64);
    let strided = kind != SegItems::Values && !indirect && (long_rows || value_size >= 8);
    SegReduceSpec {
        items: kind,
        indirect,
        wide_offsets: geometry.wide_offsets,
        wide_count: geometry.count > u32::MAX as u64,
        empty: geometry.empty,
        codes,
        strided,
    }
}

/// The module's helper kernels do not depend on the value type or operator: they are compiled
/// with `T = unsigned` and `plus`, once per offset width and tuning.
fn helper_module(
    gpu: &Gpu,
    geometry: &Geometry,
    tuning: &Tuning,
) -> Result<Arc<super::LoadedModule>> {
    let spec = SegReduceSpec {
        items: SegItems::Values,
        indirect: false,
        wide_offsets: geometry.wide_offsets,
        wide_count: false,
        empty: false,
        codes: false,
        strided: false,
    };
    let plain = Load::plain::<u32>();
    gpu.segreduce_module::<u32>(
        Module::SegReduceHelpers,
        &spec,
        &plain,
        &Op::plus(),
        None,
        tuning,
    )
}

/// Queues the checks of the geometry (and sources, columns) on the GPU; their findings stay on
/// the device (`None`: nothing to check) for [`reduce`] to honour and [`read_validation`] to
/// return, so that a one-shot call waits for the GPU once, after its last launch.
pub(crate) fn launch_validation(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    checks: &Checks,
    tuning: &Tuning,
) -> Result<Option<DeviceMem>> {
    let work = geometry.num_segments.max(checks.num_cols);
    if work == 0 {
        return Ok(None);
    }
    let module = helper_module(gpu, geometry, tuning)?;
    let (f, _) = module.function("mgpu_segreduce_validate");
    let bad = DeviceMem::alloc(gpu, 32)?;
    gpu.memset(bad.ptr, 0xff, 32)?; // no bad index yet
    let block = 256u32;
    let grid = work.div_ceil(block as u64).min(gpu.sm_count as u64 * 8) as u32;
    let strict = checks.strict as i32;
    launch(
        gpu,
        f,
        grid,
        block,
        &[
            &geometry.offsets,
            &geometry.num_segments,
            &geometry.count,
            &strict,
            &geometry.sources,
            &checks.data_len,
            &checks.cols,
            &checks.num_cols,
            &checks.vec_len,
            &bad.ptr,
        ],
    )?;
    Ok(Some(bad))
}

/// The findings of [`launch_validation`]: the one small read-back (it waits for the stream).
pub(crate) fn read_validation(gpu: &Gpu, bad: Option<&DeviceMem>) -> Result<Bad> {
    let Some(bad) = bad else {
        return Ok([None; 4]);
    };
    let mut out = [0u64; 4];
    gpu.download(bad.ptr, &mut out)?;
    Ok(out.map(|i| (i != u64::MAX).then_some(i)))
}

/// The tile limits of the geometry for tiles of `tuning.nv()` positions (num_tiles + 1 offsets
/// of the geometry's type), or `None` when there are no positions.
pub(crate) fn partition(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    tuning: &Tuning,
) -> Result<Option<DeviceMem>> {
    if geometry.count == 0 {
        return Ok(None);
    }
    let module = helper_module(gpu, geometry, tuning)?;
    let (f, _) = module.function("mgpu_segreduce_partition");
    let num_tiles = geometry.count.div_ceil(tuning.nv() as u64);
    let width = if geometry.wide_offsets { 8 } else { 4 };
    let limits = DeviceMem::alloc(gpu, (num_tiles as usize + 1) * width)?;
    let block = 256u32;
    let grid = (num_tiles + 1).div_ceil(block as u64) as u32;
    launch(
        gpu,
        f,
        grid,
        block,
        &[
            &geometry.offsets,
            &geometry.num_segments,
            &geometry.count,
            &num_tiles,
            &limits.ptr,
        ],
    )?;
    Ok(Some(limits))
}

/// A plan's packed heads for the tiles of `limits` (from [`partition`] with the same tuning):
/// one 32-bit word per thread of each tile and one after them, bit i set where a segment starts
/// at the thread's item i (kernel_segreduce.cu's `mgpu_segreduce_codes`). For direct geometries
/// without empty segments; `None` when there are no positions.
pub(crate) fn codes(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    limits: Option<&DeviceMem>,
    tuning: &Tuning,
) -> Result<Option<DeviceMem>> {
    let Some(limits) = limits else {
        return Ok(None);
    };
    debug_assert!(!geometry.empty && geometry.sources == 0);
    let module = helper_module(gpu, geometry, tuning)?;
    let (f, _) = module.function("mgpu_segreduce_codes");
    let num_tiles = geometry.count.div_ceil(tuning.nv() as u64);
    let codes = DeviceMem::alloc(gpu, (num_tiles * tuning.nt as u64 + 1) as usize * 4)?;
    launch(
        gpu,
        f,
        u32::try_from(num_tiles).expect("fewer than 2^32 tiles"),
        tuning.nt,
        &[
            &geometry.offsets,
            &limits.ptr,
            &geometry.num_segments,
            &geometry.count,
            &codes.ptr,
        ],
    )?;
    Ok(Some(codes))
}

/// Whether a segment starts in every tile of `limits` (from [`partition`]) but the last: then a
/// segment that crosses tiles starts in the tile before the one it ends in, and [`reduce`]
/// completes it from that neighbour (`mgpu_segreduce_fixup`) instead of a spine's scan. Waits for
/// the stream (a 4-byte read-back); false without positions.
pub(crate) fn heads_everywhere(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    limits: Option<&DeviceMem>,
    tuning: &Tuning,
) -> Result<bool> {
    let Some(limits) = limits else {
        return Ok(false);
    };
    let module = helper_module(gpu, geometry, tuning)?;
    let (f, _) = module.function("mgpu_segreduce_headless");
    let num_tiles = geometry.count.div_ceil(tuning.nv() as u64);
    let headless = DeviceMem::zeroed(gpu, 4)?;
    let block = 256u32;
    launch(
        gpu,
        f,
        u32::try_from(num_tiles.div_ceil(block as u64)).expect("fewer than 2^32 tiles"),
        block,
        &[&limits.ptr, &num_tiles, &headless.ptr],
    )?;
    let mut found = [0u32];
    gpu.download(headless.ptr, &mut found)?;
    Ok(found[0] == 0)
}

/// Tiles per thread of the spine (kernel_segreduce.cu's MGPU_SPINE_VT): a spine tile takes the
/// totals of `nt * SPINE_VT` reduction tiles.
pub(crate) const SPINE_VT: u32 = 8;

/// The segmented reduction of a geometry with its tile `limits` (from [`partition`] with the
/// same tuning) and, from a plan, its packed heads (from [`codes`]) and whether a segment starts
/// in every tile but the last (from [`heads_everywhere`]): one result per segment to `dest`, the
/// identity for empty segments. The geometry was validated, or its validation is
/// queued before (`bad`, from [`launch_validation`]): where that finds a bad index, the kernels
/// write nothing.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce<T: Element>(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    limits: Option<&DeviceMem>,
    codes: Option<&DeviceMem>,
    heads_everywhere: bool,
    bad: Option<&DeviceMem>,
    items: Items<'_>,
    dest: CUdeviceptr,
    op: &Op<T>,
    mul: Option<&Op<T>>,
    tuning: &Tuning,
) -> Result<()> {
    let Some(limits) = limits else {
        // No positions: every segment is empty (a strict geometry, then, has none; and the
        // fill waits for validation's verdict).
        if geometry.num_segments == 0 || read_validation(gpu, bad)?.iter().any(|b| b.is_some()) {
            return Ok(());
        }
        return fill(gpu, dest, geometry.num_segments, op.identity());
    };
    let bad = bad.map_or(0, |b| b.ptr);
    let spec = spec(
        geometry,
        items.kind,
        codes.is_some(),
        std::mem::size_of::<T>(),
        tuning,
    );
    let tuning = &spec.tuning(tuning);
    let codes = codes.map_or(0, |c| c.ptr);
    let module =
        gpu.segreduce_module::<T>(Module::SegReduceTiles, &spec, items.load, op, mul, tuning)?;
    let num_tiles = geometry.count.div_ceil(tuning.nv() as u64);
    let count_size = if spec.wide_count { 8 } else { 4 };
    let pair = super::compact::pair_size(
        count_size,
        std::mem::size_of::<T>(),
        std::mem::align_of::<T>(),
    );
    // What each tile leaves for the spine: its total (a pair), its lead (a T) and whether it
    // continues a segment it ends (a byte), as three arrays in one allocation.
    let align = |x: u64| x.div_ceil(256) * 256;
    let leads_at = align(num_tiles * pair as u64);
    let continued_at = leads_at + align(num_tiles * std::mem::size_of::<T>() as u64);
    // (Held until both kernels are queued: the next call on the stream then runs after them.)
    let mut carries = gpu.carries.lock().unwrap_or_else(|e| e.into_inner());
    let base = carries.reserve(gpu, (continued_at + num_tiles) as usize)?;
    let (totals, leads, continued) = (base, base + leads_at, base + continued_at);
    let identity = ByValue(op.identity());
    let (tiles, _) = module.function("mgpu_segreduce");
    launch(
        gpu,
        tiles,
        u32::try_from(num_tiles).expect("fewer than 2^32 tiles"),
        tuning.nt,
        &[
            &items.input,
            &items.matrix,
            &items.cols,
            &items.vec,
            &geometry.offsets,
            &geometry.sources,
            &limits.ptr,
            &geometry.num_segments,
            &geometry.count,
            &codes,
            &bad,
            &dest,
            &identity,
            &totals,
            &leads,
            &continued,
        ],
    )?;
    if num_tiles == 1 {
        return Ok(()); // a single tile continues no segment
    }
    if heads_everywhere {
        debug_assert!(bad == 0, "a plan's geometry was checked when it was made");
        let (fixup, _) = module.function("mgpu_segreduce_fixup");
        let grid = num_tiles.div_ceil(tuning.nt as u64);
        return launch(
            gpu,
            fixup,
            u32::try_from(grid).expect("fewer than 2^32 tiles"),
            tuning.nt,
            &[&totals, &leads, &continued, &limits.ptr, &num_tiles, &dest],
        );
    }
    let (spine, resident) = module.function("mgpu_segreduce_spine");
    let num_spine = num_tiles.div_ceil(tuning.nt as u64 * SPINE_VT as u64);
    let grid = num_spine.min((gpu.sm_count * resident) as u64);
    with_lookback(
        gpu,
        num_spine,
        grid,
        value_record(pair),
        |tickets, first_ticket, status| {
            launch(
                gpu,
                spine,
                grid as u32,
                tuning.nt,
                &[
                    &totals,
                    &leads,
                    &continued,
                    &limits.ptr,
                    &num_tiles,
                    &bad,
                    &dest,
                    &identity,
                    &tickets,
                    &first_ticket,
                    &status,
                ],
            )
        },
    )
}

/// `len` copies of `value` at `dest` (the empty segments of an input without positions: a rare
/// case, served by an upload).
fn fill<T: Element>(gpu: &Arc<Gpu>, dest: CUdeviceptr, len: u64, value: T) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let chunk = vec![value; len.min(CHUNK) as usize];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK) as usize;
        gpu.upload(dest + done * std::mem::size_of::<T>() as u64, &chunk[..n])?;
        done += n as u64;
    }
    Ok(())
}
