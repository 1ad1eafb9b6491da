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
//! given as a [`Csr`], which says whether segments may be empty, and checked before anything is
//! written: `offsets[0] == 0`, non-decreasing (increasing unless empty segments are allowed), at
//! most `count` (less unless empty segments are allowed); sources and column indices
//! must lie in range. A violation is an [`Error::InvalidOffset`],
//! [`Error::SourceOutOfRange`] or
//! [`Error::IndexOutOfRange`] that names the first bad index;
//! nothing is written. On the GPU the check is one kernel and one small read-back.
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

pub(crate) mod args;
mod plan;
mod spmv;
pub(crate) mod validate;

pub use crate::element::Offset;
pub use crate::reduce_by_key::ReduceByKeyPlan;
pub use plan::SegPlan;
pub use spmv::SpmvPlan;

pub(crate) use plan::{check_plan_context, Planned};

use crate::buffer::{input, output, View, ViewMut};
use crate::context::{Backend, Context};
use crate::cuda::segreduce::{long_segments, SegItems};
use crate::error::{Error, LengthRule, Result};
use crate::source::Source;
use crate::tuning::{self, Tuning};
use crate::{Element, Op, Slice, SliceMut};
use args::{host, ItemSource, Prepared, Segments};

/// CSR segment offsets, and whether their segments may be empty: what the segmented reductions,
/// SpMV and their plans take. Segment `i` starts at `offsets[i]` and ends where the next one
/// starts (the last one at the number of positions the call covers). [`Csr::new`]: every segment
/// must hold a position (offsets increasing, the last one below the count), the faster kernels'
/// case; [`Csr::allow_empty`]: segments may be empty (offsets non-decreasing, at most the count)
/// and reduce to the identity. Either way the offsets are checked before anything is written.
///
/// ```
/// use mgpu::{Context, Csr};
/// let ctx = Context::cpu();
/// let offsets = ctx.upload(&[0u32, 2, 2, 5])?;
/// let csr = Csr::new(&offsets);
/// assert!(!csr.allows_empty() && csr.with_empty(true).allows_empty());
/// assert_eq!(Csr::allow_empty(&offsets).num_segments(), 4);
/// # Ok::<(), mgpu::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Csr<'a, O: Offset> {
    view: View<'a, O>,
    pub(crate) allow_empty: bool,
}

impl<'a, O: Offset> Csr<'a, O> {
    /// Offsets whose segments must all be non-empty.
    pub fn new(offsets: &'a impl Slice<O>) -> Self {
        Csr {
            view: offsets.view(),
            allow_empty: false,
        }
    }
    /// Offsets whose segments may be empty (reduced to the identity).
    pub fn allow_empty(offsets: &'a impl Slice<O>) -> Self {
        Csr {
            view: offsets.view(),
            allow_empty: true,
        }
    }
    /// The same offsets, with empty segments allowed or not.
    pub fn with_empty(self, allow: bool) -> Self {
        Csr {
            allow_empty: allow,
            ..self
        }
    }
    /// Whether segments may be empty.
    pub fn allows_empty(&self) -> bool {
        self.allow_empty
    }
    /// The number of segments (of offsets).
    pub fn num_segments(&self) -> usize {
        self.view.len()
    }
    /// The offsets, checked to live on the context's backend.
    pub(crate) fn offsets(&self, ctx: &Context) -> Result<View<'a, O>> {
        crate::buffer::check_place(ctx, &self.view.at, "the offsets")?;
        Ok(self.view)
    }
}

/// The table's tuning of a segmented reduction of `T`s with offsets `O` on the context's
/// architecture, for segments `long` on average or not (the family's rule:
/// `cuda::segreduce::table_tuning`).
pub(crate) fn seg_tuning<T: Element, O: Offset>(
    ctx: &Context,
    kind: SegItems,
    indirect: bool,
    long: bool,
) -> Result<Tuning> {
    let table = tuning::table(ctx.arch());
    crate::cuda::segreduce::table_tuning::<T, O>(&table, kind, indirect, long)
}

/// Who vouches for a segmented reduction's geometry (offsets, sources, columns).
#[derive(Clone, Copy)]
pub(crate) enum Checked<'p> {
    /// Nobody yet: the call validates it.
    No,
    /// A plan, which also brings the partition and the tuning.
    Plan(&'p Prepared, &'p Tuning),
    /// The caller of an `_unchecked` function.
    Caller,
}

impl Context {
    /// Checks lengths and places, validates unless a plan or the caller vouches for the
    /// geometry, and reduces. Without empty segments (checked, or a plan's), the kernel for
    /// non-empty ones runs even if they were allowed.
    pub(crate) fn segreduce_run<T: Element, O: Offset>(
        &self,
        name: &'static str,
        mut segs: Segments<'_, O>,
        items: ItemSource<'_, T>,
        mut out: ViewMut<'_, T>,
        op: &Op<T>,
        checked: Checked<'_>,
    ) -> Result<()> {
        let plan = match checked {
            Checked::Plan(prepared, tuning) => Some((prepared, tuning)),
            _ => None,
        };
        let by_caller = matches!(checked, Checked::Caller);
        let num_segments = segs.offsets.len();
        if out.len() != num_segments {
            return Err(Error::LengthMismatch {
                call: name,
                argument: "the output",
                actual: out.len() as u64,
                expected: num_segments as u64,
                of: "segments",
                rule: LengthRule::OnePerSegment,
            });
        }
        if num_segments == 0 && segs.count > 0 {
            return Err(validate::no_segments(name, segs.count));
        }
        if let Some(sources) = &segs.sources {
            if sources.len() != num_segments {
                return Err(Error::LengthMismatch {
                    call: name,
                    argument: "sources",
                    actual: sources.len() as u64,
                    expected: num_segments as u64,
                    of: "segments",
                    rule: LengthRule::Equal,
                });
            }
        }
        let tuning = match plan {
            Some((_, t)) => *t,
            None => {
                let long = long_segments(segs.count as u64, num_segments as u64);
                seg_tuning::<T, O>(self, items.kind(), segs.sources.is_some(), long)?
            }
        };
        // A one-shot on the GPU queues its validation before the reduction, whose kernels honour
        // it, and reads it back at the end: one wait for the GPU, not two. Where empty segments
        // are allowed, the tiles are those that take them, whether or not there is one (a plan
        // chooses the faster tiles for segments that are all non-empty).
        let deferred = plan.is_none() && !by_caller && self.gpu().is_some();
        // A direct SpMV one-shot on the GPU checks its columns in the tiles, as they gather.
        let check_cols = plan.is_none()
            && !by_caller
            && segs.sources.is_none()
            && items.kind() != SegItems::Values
            && self.gpu().is_some();
        if plan.is_none() && !by_caller && !deferred {
            let (cols, x_len) = items.columns();
            let cols = if check_cols { None } else { cols };
            let (data_len, cols) = (items.data_len(), cols.as_ref());
            let bounds = args::Bounds {
                data_len,
                cols,
                x_len,
            };
            segs.support_empty = self.check_segments(name, &segs, bounds, &tuning)?;
        }
        if deferred || by_caller {
            validate::check_offset_type(name, &segs)?;
        }
        match &self.backend {
            Backend::Cpu => {
                let out = out.host_mut().expect("checked to be on the CPU");
                let sources = segs.sources.as_ref().map(host);
                let offsets = host(&segs.offsets);
                crate::cpu::segreduce::reduce(offsets, sources, segs.count, items.host(), out, op);
                Ok(())
            }
            Backend::Cuda(gpu) => crate::cuda::marshal::segreduce(
                gpu, name, &segs, &items, &out, op, plan, deferred, check_cols, &tuning,
            ),
        }
    }

    /// Reduces each segment of `values` given by CSR offsets (segment `i` covers
    /// `offsets[i]..offsets[i + 1]`, the last one up to `values.len()`) with `op`, one result per
    /// segment to `out` (`out.len()` = the number of segments): Modern GPU's SegReduceCsr. With
    /// [`Csr::new`] every segment must be non-empty; with [`Csr::allow_empty`], empty segments
    /// get the identity. `values` may be a buffer, a view, a mapped input or a counting sequence.
    ///
    /// ```
    /// use mgpu::{Context, Csr, Op};
    /// let ctx = Context::cpu();
    /// let values = ctx.upload(&[1, 2, 3, 4, 5, 6])?;
    /// let offsets = ctx.upload(&[0u32, 1, 1, 4])?;
    /// let mut out = ctx.zeros::<i32>(4)?;
    /// ctx.segreduce_csr(&values, Csr::allow_empty(&offsets), &mut out, &Op::plus())?;
    /// assert_eq!(out.to_vec()?, vec![1, 0, 9, 11]);
    /// // Where segments must not be empty, segment 1 is an error that names it.
    /// let err = ctx.segreduce_csr(&values, Csr::new(&offsets), &mut out, &Op::plus()).unwrap_err();
    /// assert!(err.to_string().contains("offsets[2] = 1 equals offsets[1]"));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segreduce_csr<T: Element, O: Offset>(
        &self,
        values: &impl Source<T>,
        csr: Csr<'_, O>,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        self.segreduce_csr_as("segreduce_csr", values, csr, out, op, Checked::No)
    }

    /// [`segreduce_csr`](Context::segreduce_csr) without the offsets' validation, for callers
    /// who validated them once (with [`segreduce_plan`](Context::segreduce_plan), or a first
    /// checked call) and reduce by them again: it skips a pass over the offsets and a wait for
    /// the GPU. Lengths, places and types are still checked, and their errors returned.
    ///
    /// # Safety
    ///
    /// The offsets must be valid, as [`segreduce_csr`](Context::segreduce_csr) would find
    /// them: `offsets[0] == 0`, each at least the one before (greater, and less than
    /// `values.len()`, with [`Csr::new`]), none past `values.len()`, and unchanged since. On the
    /// GPU others read out of bounds; the CPU backend may panic.
    ///
    /// ```
    /// use mgpu::{Context, Csr, Op};
    /// let ctx = Context::cpu();
    /// let values = ctx.upload(&[1, 2, 3, 4, 5, 6])?;
    /// let offsets = ctx.upload(&[0u32, 1, 1, 4])?;
    /// let mut out = ctx.zeros::<i32>(4)?;
    /// ctx.segreduce_csr(&values, Csr::allow_empty(&offsets), &mut out, &Op::plus())?;
    /// let values = ctx.upload(&[6, 5, 4, 3, 2, 1])?;
    /// // SAFETY: the same offsets passed the checked call above.
    /// unsafe {
    ///     ctx.segreduce_csr_unchecked(&values, Csr::allow_empty(&offsets), &mut out, &Op::plus())?
    /// };
    /// assert_eq!(out.to_vec()?, vec![6, 0, 12, 3]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub unsafe fn segreduce_csr_unchecked<T: Element, O: Offset>(
        &self,
        values: &impl Source<T>,
        csr: Csr<'_, O>,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let name = "segreduce_csr_unchecked";
        self.segreduce_csr_as(name, values, csr, out, op, Checked::Caller)
    }

    /// `segreduce_csr` and its unchecked form: the arguments' places, then the reduction.
    fn segreduce_csr_as<T: Element, O: Offset>(
        &self,
        name: &'static str,
        values: &impl Source<T>,
        csr: Csr<'_, O>,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
        checked: Checked<'_>,
    ) -> Result<()> {
        let values = values.parts();
        values.check(self, "the values")?;
        let segs = Segments {
            offsets: csr.offsets(self)?,
            sources: None,
            count: values.len,
            support_empty: csr.allow_empty,
        };
        let out = output(self, out, "the output")?;
        self.segreduce_run(name, segs, ItemSource::Values(values), out, op, checked)
    }

    /// Like [`segreduce_csr`](Context::segreduce_csr), but the segments cover `count` positions
    /// (the last one up to `count`) and segment `i`'s values start at `values[sources[i]]` (its
    /// length is still `offsets[i + 1] - offsets[i]`): Modern GPU's IndirectReduceCsr. Each
    /// segment's values, `sources[i]` on for its length, must lie within `values`; segments may
    /// overlap, so `count` may exceed `values.len()` (sliding windows) or fall short of it.
    ///
    /// ```
    /// use mgpu::{Context, Csr, Op};
    /// let ctx = Context::cpu();
    /// let values = ctx.upload(&[1, 2, 3, 4, 5, 6])?;
    /// let offsets = ctx.upload(&[0u32, 2, 3])?; // lengths 2, 1, 3 (6 positions)
    /// let sources = ctx.upload(&[4u32, 0, 1])?;
    /// let mut out = ctx.zeros::<i32>(3)?;
    /// ctx.segreduce_csr_indirect(&values, Csr::new(&offsets), &sources, 6, &mut out, &Op::plus())?;
    /// assert_eq!(out.to_vec()?, vec![5 + 6, 1, 2 + 3 + 4]);
    /// // Sums of every window of 3 values: 4 windows over 12 positions, no padding.
    /// let (starts, windows) = (ctx.upload(&[0u32, 3, 6, 9])?, ctx.upload(&[0u32, 1, 2, 3])?);
    /// let mut sums = ctx.zeros::<i32>(4)?;
    /// ctx.segreduce_csr_indirect(&values, Csr::new(&starts), &windows, 12, &mut sums, &Op::plus())?;
    /// assert_eq!(sums.to_vec()?, vec![6, 9, 12, 15]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segreduce_csr_indirect<T: Element, O: Offset>(
        &self,
        values: &impl Source<T>,
        csr: Csr<'_, O>,
        sources: &impl Slice<O>,
        count: usize,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let name = "segreduce_csr_indirect";
        let values = values.parts();
        values.check(self, "the values")?;
        let segs = Segments {
            offsets: csr.offsets(self)?,
            sources: Some(input(self, sources, "the sources")?),
            count,
            support_empty: csr.allow_empty,
        };
        let out = output(self, out, "the output")?;
        self.segreduce_run(name, segs, ItemSource::Values(values), out, op, Checked::No)
    }
}
