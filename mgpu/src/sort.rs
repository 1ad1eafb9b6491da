//! Mergesort and merge (the seed's MergesortKeys / MergesortPairs / MergesortIndices and Merge):
//! stable, under any strict weak order.

use crate::buffer::{input, length_mismatch, output, View, ViewMut};
use crate::context::Backend;
use crate::cuda::{self, sort::SortValues, Gpu};
use crate::error::LengthRule::{AtLeast, Equal};
use crate::error::Result;
use crate::radix::{self, check_indices, SortAlgorithm};
use crate::tuning::{self, Tuning};
use crate::{cpu, Comparator, Context, Element, Slice, SliceMut};
use std::sync::Arc;

fn sort_tuning(
    ctx: &Context,
    mode: SortValues,
    (key, value): (usize, usize),
    items: Option<usize>,
    over: Option<Tuning>,
) -> Result<Tuning> {
    let (family, size) = cuda::sort::tuning_family(mode, key, value);
    tuning::resolve_for(family, ctx.arch(), size, items.map(|n| n as u64), over)
}

/// A view's stream and device address (GPU backend, validated).
fn dev<'a, T: Element>(v: &View<'a, T>) -> (&'a Arc<Gpu>, u64) {
    v.at.device().expect("validated: a device view")
}

fn dev_mut<'a, T: Element>(v: &ViewMut<'a, T>) -> (&'a Arc<Gpu>, u64) {
    v.at.device().expect("validated: a device view")
}

impl Context {
    /// Sorts `keys` in place, stably: equivalent keys keep their input order.
    ///
    /// ```
    /// use mgpu::{Comparator, Context};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[5, 95, 68, 53, 4])?;
    /// ctx.sort(&mut keys, &Comparator::less())?;
    /// assert_eq!(keys.to_vec()?, vec![4, 5, 53, 68, 95]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort<K: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        self.sort_with(keys, comparator, SortAlgorithm::Auto)
    }

    /// [`sort`](Context::sort) by the algorithm `algorithm` picks: the merge sort, or the radix
    /// sort (arithmetic keys under the built-in `less` or `greater`); [`SortAlgorithm::Auto`] is
    /// what `sort` runs. Both give the same result, bit for bit.
    ///
    /// ```
    /// use mgpu::{Comparator, Context, SortAlgorithm};
    /// let ctx = Context::cpu();
    /// for algorithm in [SortAlgorithm::Merge, SortAlgorithm::Radix] {
    ///     let mut keys = ctx.upload(&[2.0f64, f64::NAN, -1.0])?;
    ///     ctx.sort_with(&mut keys, &Comparator::greater(), algorithm)?;
    ///     assert_eq!(keys.to_vec()?[1..], [2.0, -1.0]);
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort_with<K: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<()> {
        match radix::choose("sort", comparator, algorithm)? {
            Some(key) => {
                let mut keys = output(self, keys, "the keys")?;
                self.radix_run::<K, K>(&mut keys, None, &key, SortValues::None)
            }
            None => self.sort_with_tuning(keys, comparator, None),
        }
    }

    /// The merge sort of [`sort`](Context::sort), with a tuning override.
    pub fn sort_with_tuning<K: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        comparator: &Comparator<K>,
        tuning: Option<Tuning>,
    ) -> Result<()> {
        let mut keys = output(self, keys, "the keys")?;
        let (k, n) = (std::mem::size_of::<K>(), Some(keys.len()));
        let t = sort_tuning(self, SortValues::None, (k, 0), n, tuning)?;
        match &self.backend {
            Backend::Cpu => {
                cpu::sort(keys.host_mut().expect("validated"), comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let n = keys.len() as u64;
                let (home, k) = dev_mut(&keys);
                gpu.ordered(&[home], || {
                    cuda::sort::sort::<K, K>(gpu, k, 0, n, comparator, SortValues::None, &t)
                })
            }
        }
    }

    /// Sorts `keys` in place and moves `values` with them (Thrust's `sort_by_key`), stably.
    ///
    /// ```
    /// use mgpu::{Comparator, Context};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[3, 1, 3, 0])?;
    /// let mut values = ctx.upload(&[10u8, 11, 12, 13])?;
    /// ctx.sort_pairs(&mut keys, &mut values, &Comparator::less())?;
    /// assert_eq!(keys.to_vec()?, vec![0, 1, 3, 3]);
    /// assert_eq!(values.to_vec()?, vec![13, 11, 10, 12]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort_pairs<K: Element, V: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        self.sort_pairs_with(keys, values, comparator, SortAlgorithm::Auto)
    }

    /// [`sort_pairs`](Context::sort_pairs) by the algorithm `algorithm` picks (see
    /// [`sort_with`](Context::sort_with)).
    pub fn sort_pairs_with<K: Element, V: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<()> {
        match radix::choose("sort_pairs", comparator, algorithm)? {
            Some(key) => self.radix_sort_pairs(keys, values, &key),
            None => self.sort_pairs_with_tuning(keys, values, comparator, None),
        }
    }

    /// The merge sort of [`sort_pairs`](Context::sort_pairs), with a tuning override.
    pub fn sort_pairs_with_tuning<K: Element, V: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        comparator: &Comparator<K>,
        tuning: Option<Tuning>,
    ) -> Result<()> {
        let mut keys = output(self, keys, "the keys")?;
        let mut values = output(self, values, "the values")?;
        if keys.len() != values.len() {
            return Err(length_mismatch(
                Equal,
                "sort_pairs",
                "values",
                values.len(),
                keys.len(),
                "keys",
            ));
        }
        let sizes = (std::mem::size_of::<K>(), std::mem::size_of::<V>());
        let t = sort_tuning(self, SortValues::Pairs, sizes, Some(keys.len()), tuning)?;
        match &self.backend {
            Backend::Cpu => {
                let k = keys.host_mut().expect("validated");
                cpu::sort_pairs(k, values.host_mut().expect("validated"), comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let n = keys.len() as u64;
                let ((kh, k), (vh, v)) = (dev_mut(&keys), dev_mut(&values));
                gpu.ordered(&[kh, vh], || {
                    cuda::sort::sort::<K, V>(gpu, k, v, n, comparator, SortValues::Pairs, &t)
                })
            }
        }
    }

    /// Sorts `keys` in place and writes to `indices` the input position of each sorted key
    /// (the seed's MergesortIndices). At most 2^32 keys.
    ///
    /// ```
    /// use mgpu::{Comparator, Context};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[2.5f32, -1.0, 2.5])?;
    /// let mut indices = ctx.zeros::<u32>(3)?;
    /// ctx.sort_indices(&mut keys, &mut indices, &Comparator::less())?;
    /// assert_eq!(indices.to_vec()?, vec![1, 0, 2]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort_indices<K: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        indices: &mut impl SliceMut<u32>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        self.sort_indices_with(keys, indices, comparator, SortAlgorithm::Auto)
    }

    /// [`sort_indices`](Context::sort_indices) by the algorithm `algorithm` picks (see
    /// [`sort_with`](Context::sort_with)).
    pub fn sort_indices_with<K: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        indices: &mut impl SliceMut<u32>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<()> {
        if let Some(key) = radix::choose("sort_indices", comparator, algorithm)? {
            return self.radix_sort_indices(keys, indices, &key);
        }
        let mut keys = output(self, keys, "the keys")?;
        let mut indices = output(self, indices, "the indices")?;
        check_indices("sort_indices", keys.len(), indices.len())?;
        let (k, n) = (std::mem::size_of::<K>(), Some(keys.len()));
        let t = sort_tuning(self, SortValues::Indices, (k, 4), n, None)?;
        match &self.backend {
            Backend::Cpu => {
                let v = indices.host_mut().expect("validated");
                for (i, x) in v.iter_mut().enumerate() {
                    *x = i as u32;
                }
                cpu::sort_pairs(keys.host_mut().expect("validated"), v, comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let n = keys.len() as u64;
                let ((kh, k), (vh, v)) = (dev_mut(&keys), dev_mut(&indices));
                gpu.ordered(&[kh, vh], || {
                    cuda::sort::sort::<K, u32>(gpu, k, v, n, comparator, SortValues::Indices, &t)
                })
            }
        }
    }

    /// Merges sorted `a` and `b` into the first `a.len() + b.len()` elements of `out`, stably
    /// (on ties, `a`'s elements come first).
    ///
    /// ```
    /// use mgpu::{Comparator, Context};
    /// let ctx = Context::cpu();
    /// let a = ctx.upload(&[1, 3, 5])?;
    /// let b = ctx.upload(&[2, 3, 4])?;
    /// let mut out = ctx.zeros::<i32>(6)?;
    /// ctx.merge(&a, &b, &mut out, &Comparator::less())?;
    /// assert_eq!(out.to_vec()?, vec![1, 2, 3, 3, 4, 5]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn merge<K: Element>(
        &self,
        a: &impl Slice<K>,
        b: &impl Slice<K>,
        out: &mut impl SliceMut<K>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let a = input(self, a, "A")?;
        let b = input(self, b, "B")?;
        let mut out = output(self, out, "the output")?;
        if out.len() < a.len() + b.len() {
            return Err(length_mismatch(
                AtLeast,
                "merge",
                "the output",
                out.len(),
                a.len() + b.len(),
                "A and B together",
            ));
        }
        let t = tuning::resolve_for(
            tuning::Family::Merge,
            self.arch(),
            std::mem::size_of::<K>(),
            None,
            None,
        )?;
        match &self.backend {
            Backend::Cpu => {
                let (x, y) = (
                    a.at.host().expect("validated"),
                    b.at.host().expect("validated"),
                );
                let o = out.host_mut().expect("validated");
                cpu::merge::<K, K>((x, None), (y, None), o, None, comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let ((ah, ap), (bh, bp), (oh, op)) = (dev(&a), dev(&b), dev_mut(&out));
                gpu.ordered(&[ah, bh, oh], || {
                    cuda::sort::merge::<K, K>(
                        gpu,
                        (ap, 0, a.len() as u64),
                        (bp, 0, b.len() as u64),
                        (op, 0),
                        comparator,
                        SortValues::None,
                        &t,
                    )
                })
            }
        }
    }

    /// Merges sorted pairs: keys `a_keys` (values `a_values`) and `b_keys` (`b_values`) into
    /// `out_keys` / `out_values`, stably.
    #[allow(clippy::too_many_arguments)]
    pub fn merge_pairs<K: Element, V: Element>(
        &self,
        a_keys: &impl Slice<K>,
        a_values: &impl Slice<V>,
        b_keys: &impl Slice<K>,
        b_values: &impl Slice<V>,
        out_keys: &mut impl SliceMut<K>,
        out_values: &mut impl SliceMut<V>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let a_keys = input(self, a_keys, "A's keys")?;
        let a_values = input(self, a_values, "A's values")?;
        let b_keys = input(self, b_keys, "B's keys")?;
        let b_values = input(self, b_values, "B's values")?;
        let mut out_keys = output(self, out_keys, "the output keys")?;
        let mut out_values = output(self, out_values, "the output values")?;
        for (argument, of, len, other) in [
            ("values of A", "keys of A", a_keys.len(), a_values.len()),
            ("values of B", "keys of B", b_keys.len(), b_values.len()),
        ] {
            if len != other {
                return Err(length_mismatch(
                    Equal,
                    "merge_pairs",
                    argument,
                    other,
                    len,
                    of,
                ));
            }
        }
        let total = a_keys.len() + b_keys.len();
        for (argument, len) in [
            ("the output keys", out_keys.len()),
            ("the output values", out_values.len()),
        ] {
            if len < total {
                return Err(length_mismatch(
                    AtLeast,
                    "merge_pairs",
                    argument,
                    len,
                    total,
                    "A and B together",
                ));
            }
        }
        let sizes = (std::mem::size_of::<K>(), std::mem::size_of::<V>());
        let t = sort_tuning(self, SortValues::Pairs, sizes, None, None)?;
        match &self.backend {
            Backend::Cpu => {
                let (ak, bk) = (a_keys.at.host(), b_keys.at.host());
                let (av, bv) = (a_values.at.host(), b_values.at.host());
                let (ak, bk) = (ak.expect("validated"), bk.expect("validated"));
                let (av, bv) = (av.expect("validated"), bv.expect("validated"));
                let ok = out_keys.host_mut().expect("validated");
                let ov = out_values.host_mut().expect("validated");
                cpu::merge((ak, Some(av)), (bk, Some(bv)), ok, Some(ov), comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let ((akh, ak), (avh, av)) = (dev(&a_keys), dev(&a_values));
                let ((bkh, bk), (bvh, bv)) = (dev(&b_keys), dev(&b_values));
                let ((okh, ok), (ovh, ov)) = (dev_mut(&out_keys), dev_mut(&out_values));
                gpu.ordered(&[akh, avh, bkh, bvh, okh, ovh], || {
                    cuda::sort::merge::<K, V>(
                        gpu,
                        (ak, av, a_keys.len() as u64),
                        (bk, bv, b_keys.len() as u64),
                        (ok, ov),
                        comparator,
                        SortValues::Pairs,
                        &t,
                    )
                })
            }
        }
    }
}
