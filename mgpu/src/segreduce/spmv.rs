//! Sparse matrix * vector over CSR rows (Modern GPU's SpmvCsr and its preprocess / apply forms):
//! a segmented reduction whose items are products gathered from the vector.

use super::args::{ItemSource, Segments};
use super::{check_plan_context, Checked, Csr, Offset, SegPlan};
use crate::buffer::{input, output, View};
use crate::context::Context;
use crate::cuda::segreduce::SegItems;
use crate::error::{Error, LengthRule, Result};
use crate::{Element, Op, Slice, SliceMut};

/// A sparse matrix's geometry and columns checked and partitioned once, for many products with
/// [`Context::spmv_apply`] / [`Context::spmv_unary_apply`]: Modern GPU's SpmvPreprocess. It
/// borrows the offsets and the column indices.
///
/// ```
/// use mgpu::{Context, Csr, Op};
/// let ctx = Context::cpu();
/// // [[1, 0, 2], [0, 3, 0]]
/// let (offsets, cols, matrix) =
///     (ctx.upload(&[0u32, 2])?, ctx.upload(&[0u32, 2, 1])?, ctx.upload(&[1.0f32, 2.0, 3.0])?);
/// let plan = ctx.spmv_plan::<f32, u32>(&cols, Csr::new(&offsets), 3)?;
/// let x = ctx.upload(&[1.0f32, 10.0, 100.0])?;
/// let mut y = ctx.zeros::<f32>(2)?;
/// ctx.spmv_apply(&plan, &matrix, &x, &mut y, &Op::multiplies(), &Op::plus())?;
/// assert_eq!(y.to_vec()?, vec![201.0, 30.0]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct SpmvPlan<'a, T: Element, O: Offset> {
    pub(super) segments: SegPlan<'a, T, O>,
    pub(super) cols: View<'a, u32>,
    pub(super) x_len: usize,
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

impl Context {
    /// Sparse matrix * vector, CSR: `y[i] = add-reduction over the nonzeros k of row i of
    /// mul(matrix[k], x[cols[k]])` (rows from the offsets, the last one up to `cols.len()`; empty
    /// rows, where [`Csr::allow_empty`] allows them, get `add`'s identity): Modern GPU's
    /// SpmvCsrBinary. `matrix` and `cols` have one element per nonzero, `y` one per row.
    ///
    /// ```
    /// use mgpu::{Context, Csr, Op};
    /// let ctx = Context::cpu();
    /// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
    /// let offsets = ctx.upload(&[0u32, 2, 2])?;
    /// let cols = ctx.upload(&[0u32, 2, 1])?;
    /// let matrix = ctx.upload(&[1.0f64, 2.0, 3.0])?;
    /// let x = ctx.upload(&[1.0f64, 10.0, 100.0])?;
    /// let mut y = ctx.zeros::<f64>(3)?;
    /// let rows = Csr::allow_empty(&offsets);
    /// ctx.spmv_csr(&matrix, &cols, rows, &x, &mut y, &Op::multiplies(), &Op::plus())?;
    /// assert_eq!(y.to_vec()?, vec![201.0, 0.0, 30.0]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn spmv_csr<T: Element, O: Offset>(
        &self,
        matrix: &impl Slice<T>,
        cols: &impl Slice<u32>,
        rows: Csr<'_, O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Result<()> {
        let args = (matrix, cols, rows, x);
        self.spmv_csr_as("spmv_csr", args, y, mul, add, Checked::No)
    }

    /// [`spmv_csr`](Context::spmv_csr) without the checks of the rows and the column indices,
    /// for callers who checked them once (with [`spmv_plan`](Context::spmv_plan), or a first
    /// checked call) and multiply by the same matrix again: it skips a pass over the offsets and
    /// the columns and a wait for the GPU. Lengths, places and types are still checked, and their
    /// errors returned.
    ///
    /// # Safety
    ///
    /// The rows' offsets must be valid over `cols.len()` nonzeros, as
    /// [`spmv_csr`](Context::spmv_csr) would find them (`offsets[0] == 0`, non-decreasing, or
    /// increasing and less than `cols.len()` with [`Csr::new`], none past `cols.len()`), every
    /// column index less than `x.len()`, and neither changed since. On the GPU others read out
    /// of bounds; the CPU backend may panic.
    ///
    /// ```
    /// use mgpu::{Context, Csr, Op};
    /// let ctx = Context::cpu();
    /// // [[1, 0, 2], [0, 0, 0], [0, 3, 0]]
    /// let offsets = ctx.upload(&[0u32, 2, 2])?;
    /// let cols = ctx.upload(&[0u32, 2, 1])?;
    /// let matrix = ctx.upload(&[1.0f64, 2.0, 3.0])?;
    /// let x = ctx.upload(&[1.0f64, 10.0, 100.0])?;
    /// let mut y = ctx.zeros::<f64>(3)?;
    /// let rows = Csr::allow_empty(&offsets);
    /// let (mul, add) = (Op::multiplies(), Op::plus());
    /// ctx.spmv_csr(&matrix, &cols, rows, &x, &mut y, &mul, &add)?;
    /// let x = ctx.upload(&[2.0f64, 0.0, 1.0])?;
    /// // SAFETY: the same rows and columns passed the checked call above, with a vector as long.
    /// unsafe { ctx.spmv_csr_unchecked(&matrix, &cols, rows, &x, &mut y, &mul, &add)? };
    /// assert_eq!(y.to_vec()?, vec![4.0, 0.0, 0.0]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn spmv_csr_unchecked<T: Element, O: Offset>(
        &self,
        matrix: &impl Slice<T>,
        cols: &impl Slice<u32>,
        rows: Csr<'_, O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Result<()> {
        let args = (matrix, cols, rows, x);
        self.spmv_csr_as("spmv_csr_unchecked", args, y, mul, add, Checked::Caller)
    }

    /// `spmv_csr` and its unchecked form: `(matrix, cols, rows, x)`, the places, then the product.
    fn spmv_csr_as<T: Element, O: Offset>(
        &self,
        name: &'static str,
        (matrix, cols, rows, x): (&impl Slice<T>, &impl Slice<u32>, Csr<'_, O>, &impl Slice<T>),
        y: &mut impl SliceMut<T>,
        mul: &Op<T>,
        add: &Op<T>,
        checked: Checked<'_>,
    ) -> Result<()> {
        let cols = input(self, cols, "the column indices")?;
        let count = cols.len();
        let matrix = Some(input(self, matrix, "the matrix values")?);
        self.spmv(
            name,
            matrix,
            cols,
            rows,
            None,
            count,
            x,
            y,
            Some(mul),
            add,
            checked,
        )
    }

    /// Unary SpMV, CSR: `y[i]` = the `add`-reduction of `x[cols[k]]` over row `i`'s nonzeros k
    /// (Modern GPU's SpmvCsrUnary).
    pub fn spmv_csr_unary<T: Element, O: Offset>(
        &self,
        cols: &impl Slice<u32>,
        rows: Csr<'_, O>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        add: &Op<T>,
    ) -> Result<()> {
        let cols = input(self, cols, "the column indices")?;
        let count = cols.len();
        self.spmv(
            "spmv_csr_unary",
            None,
            cols,
            rows,
            None,
            count,
            x,
            y,
            None,
            add,
            Checked::No,
        )
    }

    /// [`spmv_csr`](Context::spmv_csr) with indirection: the rows cover `count` positions (the
    /// last row up to `count`), and row `i`'s nonzeros are `matrix[sources[i]..]` and
    /// `cols[sources[i]..]` for its length from the offsets: Modern GPU's SpmvCsrIndirectBinary.
    /// Each row's nonzeros must lie within `cols`; rows may share them.
    ///
    /// ```
    /// use mgpu::{Context, Csr, Op};
    /// let ctx = Context::cpu();
    /// // Rows 0 and 2 are the same nonzeros ([1, 0, 2]); row 1 is [0, 3, 0].
    /// let (cols, matrix) = (ctx.upload(&[0u32, 2, 1])?, ctx.upload(&[1.0f32, 2.0, 3.0])?);
    /// let (offsets, sources) = (ctx.upload(&[0u32, 2, 3])?, ctx.upload(&[0u32, 2, 0])?);
    /// let x = ctx.upload(&[1.0f32, 10.0, 100.0])?;
    /// let mut y = ctx.zeros::<f32>(3)?;
    /// let rows = Csr::new(&offsets);
    /// ctx.spmv_csr_indirect(&matrix, &cols, rows, &sources, 5, &x, &mut y, &Op::multiplies(), &Op::plus())?;
    /// assert_eq!(y.to_vec()?, vec![201.0, 30.0, 201.0]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    // spmv_csr's public parameters, plus the sources: the signatures repeat.
    #[allow(clippy::too_many_arguments)]
    pub fn spmv_csr_indirect<T: Element, O: Offset>(
        &self,
        matrix: &impl Slice<T>,
        cols: &impl Slice<u32>,
        rows: Csr<'_, O>,
        sources: &impl Slice<O>,
        count: usize,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Result<()> {
        self.spmv(
            "spmv_csr_indirect",
            Some(input(self, matrix, "the matrix values")?),
            input(self, cols, "the column indices")?,
            rows,
            Some(input(self, sources, "the sources")?),
            count,
            x,
            y,
            Some(mul),
            add,
            Checked::No,
        )
    }

    /// Unary SpMV with indirection (Modern GPU's SpmvCsrIndirectUnary): the rows cover `count`
    /// positions, row `i`'s nonzeros start at `cols[sources[i]]`.
    #[allow(clippy::too_many_arguments)]
    pub fn spmv_csr_indirect_unary<T: Element, O: Offset>(
        &self,
        cols: &impl Slice<u32>,
        rows: Csr<'_, O>,
        sources: &impl Slice<O>,
        count: usize,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        add: &Op<T>,
    ) -> Result<()> {
        self.spmv(
            "spmv_csr_indirect_unary",
            None,
            input(self, cols, "the column indices")?,
            rows,
            Some(input(self, sources, "the sources")?),
            count,
            x,
            y,
            None,
            add,
            Checked::No,
        )
    }

    /// `count`: the positions the rows cover (the nonzeros, unless indirect).
    #[allow(clippy::too_many_arguments)]
    fn spmv<T: Element, O: Offset>(
        &self,
        name: &'static str,
        matrix: Option<View<'_, T>>,
        cols: View<'_, u32>,
        rows: Csr<'_, O>,
        sources: Option<View<'_, O>>,
        count: usize,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        mul: Option<&Op<T>>,
        add: &Op<T>,
        checked: Checked<'_>,
    ) -> Result<()> {
        if let Some(m) = &matrix {
            if m.len() != cols.len() {
                return Err(Error::LengthMismatch {
                    call: name,
                    argument: "matrix values",
                    actual: m.len() as u64,
                    expected: cols.len() as u64,
                    of: "column indices",
                    rule: LengthRule::Equal,
                });
            }
        }
        let segs = Segments {
            offsets: rows.offsets(self)?,
            sources,
            count,
            support_empty: rows.allow_empty,
        };
        let items = ItemSource::Spmv {
            matrix,
            cols,
            x: input(self, x, "the vector")?,
            mul,
        };
        let y = output(self, y, "the output vector")?;
        self.segreduce_run(name, segs, items, y, add, checked)
    }

    /// Checks the rows over `cols.len()` nonzeros and every column index against a vector of
    /// `x_len` once, for [`spmv_apply`](Context::spmv_apply) and
    /// [`spmv_unary_apply`](Context::spmv_unary_apply) with many matrix values and vectors. See
    /// [`SpmvPlan`].
    pub fn spmv_plan<'a, T: Element, O: Offset>(
        &self,
        cols: &'a impl Slice<u32>,
        rows: Csr<'a, O>,
        x_len: usize,
    ) -> Result<SpmvPlan<'a, T, O>> {
        let cols = input(self, cols, "the column indices")?;
        let segments = self.plan("spmv_plan", rows, cols.len(), Some((&cols, x_len)))?;
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
            return Err(Error::LengthMismatch {
                call: "spmv_apply",
                argument: "matrix values",
                actual: matrix.len() as u64,
                expected: plan.cols.len() as u64,
                of: "nonzeros",
                rule: LengthRule::Plan,
            });
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
        name: &'static str,
        plan: &SpmvPlan<'_, T, O>,
        matrix: Option<View<'_, T>>,
        x: &impl Slice<T>,
        y: &mut impl SliceMut<T>,
        mul: Option<&Op<T>>,
        add: &Op<T>,
    ) -> Result<()> {
        let x = input(self, x, "the vector")?;
        if x.len() != plan.x_len {
            return Err(Error::LengthMismatch {
                call: name,
                argument: "the vector",
                actual: x.len() as u64,
                expected: plan.x_len as u64,
                of: "columns",
                rule: LengthRule::Plan,
            });
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
            Checked::Plan(&plan.prepared, &plan.tuning),
        )
    }
}
