//! Sorting within segments: every segment of CSR offsets sorted on its own, stably, under any
//! strict weak order (CUB's DeviceSegmentedSort, moderngpu's segmented sort).
//!
//! On the GPU the work is balanced by positions and segments are sorted by their length:
//! - short segments (up to a quarter of a tile) are packed whole into tiles that one CTA sorts
//!   in shared memory, by (segment, key);
//! - longer ones are cut into tiles from their own start, each tile is sorted, and merge passes
//!   run within each segment until its runs cover it (a segment of `m` tiles takes
//!   `ceil(log2 m)` passes, whatever its neighbours need);
//! - segments of millions of keys are sorted one by one, by the whole-array sort (the radix sort
//!   for arithmetic keys under the built-in comparators).
//!
//! Finding which segments are which reads the offsets once and waits for the GPU once, after the
//! offsets' validation.

use crate::buffer::{length_mismatch, output, ViewMut};
use crate::context::Backend;
use crate::cuda::segreduce::SegItems;
use crate::cuda::sort::SortValues;
use crate::error::LengthRule::Equal;
use crate::error::Result;
use crate::radix::SortAlgorithm;
use crate::segreduce::args::{host, Bounds, Segments};
use crate::segreduce::{seg_tuning, validate, Csr};
use crate::{cpu, Comparator, Context, Element, Offset, SliceMut};

impl Context {
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
        self.segsort_run(name, keys, Some(values), segments, comparator)
    }

    /// Validates the offsets, then sorts.
    fn segsort_run<K: Element, V: Element, O: Offset>(
        &self,
        name: &'static str,
        mut keys: ViewMut<'_, K>,
        mut values: Option<ViewMut<'_, V>>,
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
        if segs.offsets.is_empty() && count > 0 {
            return Err(validate::no_segments(name, count));
        }
        let check_tuning = seg_tuning::<u32, O>(self, SegItems::Values, false)?;
        let bounds = Bounds {
            data_len: count,
            cols: None,
            x_len: 0,
        };
        let (_, longest) = self.check_segments_longest(name, &segs, bounds, &check_tuning)?;
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
                let huge = gpu.ordered(&homes, || {
                    crate::cuda::segsort::sort::<K, V, O>(
                        gpu, &geometry, k, v, comparator, mode, &t,
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
