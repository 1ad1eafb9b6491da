//! Preprocessed segmented reduction: a geometry checked and partitioned once ([`SegPlan`]), then
//! applied to many value arrays.

use super::args::{ItemSource, Prepared, Segments};
use super::{seg_tuning, Checked, Csr, Offset};
use crate::buffer::{output, View};
use crate::context::{Backend, Context};
use crate::cuda::segreduce::{long_segments, SegItems};
use crate::error::{Error, LengthRule, Result};
use crate::source::Source;
use crate::tuning::Tuning;
use crate::{Element, Op, SliceMut};
use std::marker::PhantomData;

/// A segment geometry checked and partitioned once, for reducing many value arrays of `T` (and
/// operators) with [`Context::segreduce_apply`]: Modern GPU's SegReduceCsrPreprocess. It borrows
/// the offsets, which cannot change while it lives. On the GPU it keeps the tile partition and,
/// when no segment is empty, the segment heads packed one 32-bit word per thread (about 4 bytes
/// per 23 positions for 4-byte values), so that an apply does not read the offsets. Making it
/// waits for the GPU twice (its checks, and whether a segment starts in every tile, when an
/// apply completes the segments that cross tiles without a scan); an apply does not wait.
///
/// ```
/// use mgpu::{Context, Csr, Op};
/// let ctx = Context::cpu();
/// let offsets = ctx.upload(&[0u32, 2, 5])?;
/// let plan = ctx.segreduce_plan::<i32, u32>(Csr::new(&offsets), 6)?;
/// let mut sums = ctx.zeros::<i32>(3)?;
/// for values in [[1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1]] {
///     let values = ctx.upload(&values)?;
///     ctx.segreduce_apply(&plan, &values, &mut sums, &Op::plus())?;
/// }
/// assert_eq!(sums.to_vec()?, vec![11, 9, 1]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct SegPlan<'a, T: Element, O: Offset> {
    pub(super) offsets: View<'a, O>,
    pub(super) count: usize,
    /// The tile limits and packed heads, for `tuning`.
    pub(super) prepared: Prepared,
    pub(super) tuning: Tuning,
    pub(super) kind: SegItems,
    /// Some segment is empty (validation found it so).
    pub(super) has_empty: bool,
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

impl Context {
    /// Checks and partitions the geometry of `csr` over `count` values once, for
    /// [`segreduce_apply`](Context::segreduce_apply) on many value arrays of `T`: Modern GPU's
    /// SegReduceCsrPreprocess. See [`SegPlan`].
    pub fn segreduce_plan<'a, T: Element, O: Offset>(
        &self,
        csr: Csr<'a, O>,
        count: usize,
    ) -> Result<SegPlan<'a, T, O>> {
        self.plan("segreduce_plan", csr, count, None)
    }

    pub(super) fn plan<'a, T: Element, O: Offset>(
        &self,
        name: &'static str,
        csr: Csr<'a, O>,
        count: usize,
        spmv: Option<(&View<'a, u32>, usize)>,
    ) -> Result<SegPlan<'a, T, O>> {
        let segs = Segments {
            offsets: csr.offsets(self)?,
            sources: None,
            count,
            support_empty: csr.allow_empty,
        };
        if segs.offsets.is_empty() && count > 0 {
            return Err(super::validate::no_segments(name, count));
        }
        let kind = if spmv.is_some() {
            SegItems::SpmvBinary
        } else {
            SegItems::Values
        };
        let long = long_segments(count as u64, segs.offsets.len() as u64);
        let tuning = seg_tuning::<T, O>(self, kind, false, long)?;
        let (cols, x_len) = match spmv {
            Some((cols, x_len)) => (Some(cols), x_len),
            None => (None, 0),
        };
        let mut segs = segs;
        let bounds = super::args::Bounds {
            data_len: count,
            cols,
            x_len,
        };
        segs.support_empty = self.check_segments(name, &segs, bounds, &tuning)?;
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
    pub(crate) fn prepare<O: Offset>(
        &self,
        segs: &Segments<'_, O>,
        tuning: &Tuning,
    ) -> Result<Prepared> {
        match &self.backend {
            Backend::Cpu => Ok(Prepared::default()),
            Backend::Cuda(gpu) => crate::cuda::marshal::prepare(gpu, segs, tuning),
        }
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
        let check_plan =
            || check_plan_context(self, name, &plan.offsets, plan.kind, SegItems::Values);
        let segs = Segments {
            offsets: plan.offsets,
            sources: None,
            count: plan.count,
            support_empty: plan.has_empty,
        };
        let planned = Planned {
            segs,
            of: "positions",
            prepared: &plan.prepared,
            tuning: &plan.tuning,
        };
        self.apply_plan(name, planned, check_plan, values, out, op)
    }

    /// The apply of a plan (`segreduce_apply`, `reduce_by_key_apply`): checks `values`, then the
    /// plan (`check_plan`), then reduces them by the plan's segments.
    pub(crate) fn apply_plan<T: Element, O: Offset>(
        &self,
        name: &'static str,
        plan: Planned<'_, O>,
        check_plan: impl FnOnce() -> Result<()>,
        values: &impl Source<T>,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let values = values.parts();
        values.check(self, "the values")?;
        if values.len != plan.segs.count {
            return Err(Error::LengthMismatch {
                call: name,
                argument: "values",
                actual: values.len as u64,
                expected: plan.segs.count as u64,
                of: plan.of,
                rule: LengthRule::Plan,
            });
        }
        check_plan()?;
        let out = output(self, out, "the output")?;
        self.segreduce_run(
            name,
            plan.segs,
            ItemSource::Values(values),
            out,
            op,
            Checked::Plan(plan.prepared, plan.tuning),
        )
    }
}

/// A plan's segments and what its apply needs with them.
pub(crate) struct Planned<'a, O: Offset> {
    pub segs: Segments<'a, O>,
    /// What the plan's count counts, for the length error.
    pub of: &'static str,
    pub prepared: &'a Prepared,
    pub tuning: &'a Tuning,
}

/// A plan is used on the backend (and GPU) it was made on, for the kind of items it was made for.
pub(crate) fn check_plan_context<O: Offset>(
    ctx: &Context,
    name: &'static str,
    offsets: &View<'_, O>,
    plan_kind: SegItems,
    kind: SegItems,
) -> Result<()> {
    crate::buffer::check_place(ctx, &offsets.at, "the plan")?;
    if plan_kind != kind {
        return Err(Error::PlanMismatch {
            call: name,
            made_for: if plan_kind == SegItems::Values {
                "segreduce_apply"
            } else {
                "SpMV"
            },
            make_with: if kind == SegItems::Values {
                "segreduce_plan"
            } else {
                "spmv_plan"
            },
        });
    }
    Ok(())
}
