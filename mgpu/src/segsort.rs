//! Sorting within segments: every segment of CSR offsets sorted on its own, stably, under any
//! strict weak order (CUB's DeviceSegmentedSort, moderngpu's segmented sort).
//!
//! On the GPU the work is balanced by positions and segments are sorted by their length:
//! - short segments (up to a quarter of a tile) are packed whole into tiles that one CTA sorts
//!   in shared memory, by (segment, key), or, where they hold at most 64 keys, by placing each
//!   key at its rank in its segment;
//! - longer ones, for arithmetic keys under the built-in comparators, are radix-sorted one CTA
//!   per segment in shared memory where they fit its tile (about 5000 keys);
//! - the others are cut into tiles from their own start, each tile is sorted, and merge passes
//!   run within each segment until its runs cover it (a segment of `m` tiles takes
//!   `ceil(log2 m)` passes, whatever its neighbours need);
//! - segments of millions of keys are sorted one by one, by the whole-array sort (the radix sort
//!   for arithmetic keys under the built-in comparators).
//!
//! The offsets' validation also finds the longest segment, which picks the work: none for
//! segments of at most one key, the packed tiles alone for short ones. Finding the longer
//! segments reads the offsets once more and waits for the GPU a second time.

use crate::buffer::{check_place, length_mismatch, output, View, ViewMut};
use crate::context::Backend;
use crate::cuda::segreduce::SegItems;
use crate::cuda::segsort::RadixTiles;
use crate::cuda::sort::SortValues;
use crate::error::LengthRule::{self, Equal};
use crate::error::Result;
use crate::radix::SortAlgorithm;
use crate::segreduce::args::{host, Bounds, Segments};
use crate::segreduce::{seg_tuning, validate, Csr};
use crate::{cpu, Comparator, Context, Element, Offset, SliceMut};

/// A segment geometry checked once, for sorting many key arrays (alone or with values) of its
/// length with [`Context::segmented_sort_planned`] and
/// [`Context::segmented_sort_pairs_planned`]. It borrows the offsets, which cannot change while it
/// lives. It keeps what the checks found: the geometry is valid, and the longest segment's length,
/// which picks the GPU's path (none at all for segments of at most one key, the rank kernel alone
/// for segments of at most 64). The packed tiles depend on the key and value types' tiling, and are
/// found on each sort. Making it waits for the GPU once; a sort with it skips the offsets' pass.
///
/// ```
/// use mgpu::{Comparator, Context, Csr};
/// let ctx = Context::cpu();
/// let offsets = ctx.upload(&[0u32, 2, 5])?;
/// let plan = ctx.segmented_sort_plan(Csr::new(&offsets), 6)?;
/// let mut keys = ctx.upload(&[2, 1, 5, 3, 4, 0])?;
/// ctx.segmented_sort_planned(&plan, &mut keys, &Comparator::less())?;
/// assert_eq!(keys.to_vec()?, vec![1, 2, 3, 4, 5, 0]);
/// let mut keys = ctx.upload(&[-1.0f32, 0.5, 7.0, 9.0, 8.0, 1.0])?;
/// ctx.segmented_sort_planned(&plan, &mut keys, &Comparator::greater())?;
/// assert_eq!(keys.to_vec()?, vec![0.5, -1.0, 9.0, 8.0, 7.0, 1.0]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct SegSortPlan<'a, O: Offset> {
    offsets: View<'a, O>,
    count: usize,
    support_empty: bool,
    longest: u64,
}

/// Values as many as the keys.
fn same_length<K: Element, V: Element>(
    name: &'static str,
    keys: &ViewMut<'_, K>,
    values: &ViewMut<'_, V>,
) -> Result<()> {
    if keys.len() != values.len() {
        return Err(length_mismatch(
            Equal,
            name,
            "values",
            values.len(),
            keys.len(),
            "keys",
        ));
    }
    Ok(())
}

impl<O: Offset> SegSortPlan<'_, O> {
    /// The number of segments.
    pub fn num_segments(&self) -> usize {
        self.offsets.len()
    }
    /// The number of positions (keys) the geometry covers.
    pub fn count(&self) -> usize {
        self.count
    }
    /// The longest segment's length.
    pub fn longest(&self) -> u64 {
        self.longest
    }
}

impl<O: Offset> std::fmt::Debug for SegSortPlan<'_, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SegSortPlan<{}>({} segments over {} positions, the longest {})",
            O::CUDA_TYPE,
            self.num_segments(),
            self.count,
            self.longest
        )
    }
}

impl Context {
    /// Checks the geometry of `segments` over `count` keys once, for sorting many key arrays
    /// with it (see [`SegSortPlan`]). The offsets' errors are those of
    /// [`segmented_sort`](Context::segmented_sort).
    pub fn segmented_sort_plan<'a, O: Offset>(
        &self,
        segments: Csr<'a, O>,
        count: usize,
    ) -> Result<SegSortPlan<'a, O>> {
        let segs = Segments {
            offsets: segments.offsets(self)?,
            sources: None,
            count,
            support_empty: segments.allow_empty,
        };
        let longest = self.segsort_check("segmented_sort_plan", &segs)?;
        Ok(SegSortPlan {
            offsets: segs.offsets,
            count,
            support_empty: segs.support_empty,
            longest,
        })
    }

    /// [`segmented_sort`](Context::segmented_sort) by the segments of `plan`, whose count
    /// `keys.len()` must be, skipping the checks the plan did.
    pub fn segmented_sort_planned<K: Element, O: Offset>(
        &self,
        plan: &SegSortPlan<'_, O>,
        keys: &mut impl SliceMut<K>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let name = "segmented_sort_planned";
        let keys = output(self, keys, "the keys")?;
        let segs = self.planned_segments(name, plan, keys.len())?;
        self.segsort_checked::<K, K, O>(keys, None, &segs, plan.longest, comparator)
    }

    /// [`segmented_sort_pairs`](Context::segmented_sort_pairs) by the segments of `plan`, whose
    /// count `keys.len()` and `values.len()` must be, skipping the checks the plan did.
    pub fn segmented_sort_pairs_planned<K: Element, V: Element, O: Offset>(
        &self,
        plan: &SegSortPlan<'_, O>,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let name = "segmented_sort_pairs_planned";
        let keys = output(self, keys, "the keys")?;
        let values = output(self, values, "the values")?;
        same_length(name, &keys, &values)?;
        let segs = self.planned_segments(name, plan, keys.len())?;
        self.segsort_checked(keys, Some(values), &segs, plan.longest, comparator)
    }

    /// The plan's segments for `len` keys on this context.
    fn planned_segments<'a, O: Offset>(
        &self,
        name: &'static str,
        plan: &SegSortPlan<'a, O>,
        len: usize,
    ) -> Result<Segments<'a, O>> {
        if len != plan.count {
            return Err(length_mismatch(
                LengthRule::Plan,
                name,
                "keys",
                len,
                plan.count,
                "positions",
            ));
        }
        check_place(self, &plan.offsets.at, "the plan")?;
        Ok(Segments {
            offsets: plan.offsets,
            sources: None,
            count: plan.count,
            support_empty: plan.support_empty,
        })
    }

    /// Sorts every segment of `keys` in place, stably: segment `i` covers
    /// `offsets[i]..offsets[i + 1]` (the last one up to `keys.len()`), and equivalent keys keep
    /// their order. Segments may be empty with [`Csr::allow_empty`]; the offsets are checked
    /// before anything is written, as for [`segreduce_csr`](Context::segreduce_csr).
    ///
    /// ```
    /// use mgpu::{Comparator, Context, Csr};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[3, 1, 2, 9, 7, 8, 5])?;
    /// let offsets = ctx.upload(&[0u32, 3, 3, 6])?;
    /// ctx.segmented_sort(&mut keys, Csr::allow_empty(&offsets), &Comparator::less())?;
    /// assert_eq!(keys.to_vec()?, vec![1, 2, 3, 7, 8, 9, 5]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segmented_sort<K: Element, O: Offset>(
        &self,
        keys: &mut impl SliceMut<K>,
        segments: Csr<'_, O>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let keys = output(self, keys, "the keys")?;
        self.segsort_run::<K, K, O>("segmented_sort", keys, None, segments, comparator)
    }

    /// Sorts every segment of `keys` in place and moves `values` with them, stably (see
    /// [`segmented_sort`](Context::segmented_sort)).
    ///
    /// ```
    /// use mgpu::{Comparator, Context, Csr};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[2.0f32, 1.0, 2.0, 0.5])?;
    /// let mut values = ctx.upload(&[0u32, 1, 2, 3])?;
    /// let offsets = ctx.upload(&[0u64, 3])?;
    /// ctx.segmented_sort_pairs(&mut keys, &mut values, Csr::new(&offsets), &Comparator::greater())?;
    /// assert_eq!(keys.to_vec()?, vec![2.0, 2.0, 1.0, 0.5]);
    /// assert_eq!(values.to_vec()?, vec![0, 2, 1, 3]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segmented_sort_pairs<K: Element, V: Element, O: Offset>(
        &self,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        segments: Csr<'_, O>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let name = "segmented_sort_pairs";
        let keys = output(self, keys, "the keys")?;
        let values = output(self, values, "the values")?;
        same_length(name, &keys, &values)?;
        self.segsort_run(name, keys, Some(values), segments, comparator)
    }

    /// Validates the offsets, then sorts.
    fn segsort_run<K: Element, V: Element, O: Offset>(
        &self,
        name: &'static str,
        keys: ViewMut<'_, K>,
        values: Option<ViewMut<'_, V>>,
        csr: Csr<'_, O>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let count = keys.len();
        let segs = Segments {
            offsets: csr.offsets(self)?,
            sources: None,
            count,
            support_empty: csr.allow_empty,
        };
        let longest = self.segsort_check(name, &segs)?;
        self.segsort_checked(keys, values, &segs, longest, comparator)
    }

    /// The offsets' checks: the error for the first bad one, else the longest segment's length.
    fn segsort_check<O: Offset>(&self, name: &'static str, segs: &Segments<'_, O>) -> Result<u64> {
        let count = segs.count;
        if segs.offsets.is_empty() && count > 0 {
            return Err(validate::no_segments(name, count));
        }
        let check_tuning = seg_tuning::<u32, O>(self, SegItems::Values, false, false)?;
        let bounds = Bounds {
            data_len: count,
            cols: None,
            x_len: 0,
        };
        let (_, longest) = self.check_segments_longest(name, segs, bounds, &check_tuning)?;
        Ok(longest)
    }

    /// Sorts after the checks, which found no segment longer than `longest`.
    fn segsort_checked<K: Element, V: Element, O: Offset>(
        &self,
        mut keys: ViewMut<'_, K>,
        mut values: Option<ViewMut<'_, V>>,
        segs: &Segments<'_, O>,
        longest: u64,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let count = keys.len();
        if longest <= 1 {
            return Ok(()); // every segment is sorted already
        }
        match &self.backend {
            Backend::Cpu => {
                let offsets = host(&segs.offsets);
                let keys = keys.host_mut().expect("validated");
                let values = values.as_mut().map(|v| v.host_mut().expect("validated"));
                cpu::segmented_sort(offsets, keys, values, comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let mode = if values.is_some() {
                    SortValues::Pairs
                } else {
                    SortValues::None
                };
                let t = crate::cuda::segsort::table_tuning::<K, V>(self.arch(), mode)?;
                let (oh, offsets) = segs.offsets.at.device().expect("validated: on the device");
                let (kh, k) = keys.at.device().expect("validated: a device view");
                let mut homes = vec![oh, kh];
                let v = match &values {
                    Some(v) => {
                        let (vh, v) = v.at.device().expect("validated: a device view");
                        homes.push(vh);
                        v
                    }
                    None => 0,
                };
                let geometry = crate::cuda::segsort::Geometry {
                    offsets,
                    num_segments: segs.offsets.len() as u64,
                    count: count as u64,
                    longest,
                };
                // Segments of up to a tile of the radix sort's, for keys it orders: one CTA each.
                let radix = RadixTiles::of::<K, V>(comparator, mode, self.arch())?;
                let huge = gpu.ordered(&homes, || {
                    crate::cuda::segsort::sort::<K, V, O>(
                        gpu,
                        &geometry,
                        k,
                        v,
                        comparator,
                        mode,
                        &t,
                        radix.as_ref(),
                    )
                })?;
                // Segments of millions of keys: each by the whole-array sort.
                for h in huge {
                    let range = h.begin as usize..h.end as usize;
                    let mut keys = keys.slice_mut(range.clone());
                    match values.as_mut() {
                        Some(values) => {
                            let mut values = values.slice_mut(range);
                            self.sort_pairs_with(
                                &mut keys,
                                &mut values,
                                comparator,
                                SortAlgorithm::Auto,
                            )?
                        }
                        None => self.sort_with(&mut keys, comparator, SortAlgorithm::Auto)?,
                    }
                }
                Ok(())
            }
        }
    }
}
