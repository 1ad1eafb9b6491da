//! Mergesort and merge (the seed's MergesortKeys / MergesortPairs / MergesortIndices and Merge):
//! stable, under any strict weak order.

use crate::context::{check_backend, Backend, Place, Storage};
use crate::cuda::{self, jit::SortValues};
use crate::error::{invalid, Result};
use crate::tuning::{self, Family, Tuning};
use crate::{cpu, Buffer, Comparator, Context, Element};

fn sort_tuning(
    ctx: &Context,
    family: Family,
    key: usize,
    value: usize,
    over: Option<Tuning>,
) -> Result<Tuning> {
    tuning::resolve(
        family,
        ctx.arch(),
        tuning::tile_element_size(family, key, value),
        over,
    )
}

fn device_ptr<T: Element>(b: &Buffer<T>) -> u64 {
    match b.place() {
        Place::Device(m) => m.ptr,
        Place::Host(_) => unreachable!("validated"),
    }
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
    pub fn sort<K: Element>(&self, keys: &mut Buffer<K>, comparator: &Comparator<K>) -> Result<()> {
        self.sort_with_tuning(keys, comparator, None)
    }

    /// [`sort`](Context::sort) with a tuning override.
    pub fn sort_with_tuning<K: Element>(
        &self,
        keys: &mut Buffer<K>,
        comparator: &Comparator<K>,
        tuning: Option<Tuning>,
    ) -> Result<()> {
        check_backend(self, keys, "the keys")?;
        let t = sort_tuning(self, Family::SortKeys, std::mem::size_of::<K>(), 0, tuning)?;
        match &self.backend {
            Backend::Cpu => {
                let Storage::Host(k) = &mut keys.storage else {
                    unreachable!("validated")
                };
                cpu::sort(k, comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let n = keys.len() as u64;
                cuda::sort::sort::<K, K>(
                    gpu,
                    device_ptr(keys),
                    0,
                    n,
                    comparator,
                    SortValues::None,
                    &t,
                )
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
        keys: &mut Buffer<K>,
        values: &mut Buffer<V>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        self.sort_pairs_with_tuning(keys, values, comparator, None)
    }

    /// [`sort_pairs`](Context::sort_pairs) with a tuning override.
    pub fn sort_pairs_with_tuning<K: Element, V: Element>(
        &self,
        keys: &mut Buffer<K>,
        values: &mut Buffer<V>,
        comparator: &Comparator<K>,
        tuning: Option<Tuning>,
    ) -> Result<()> {
        check_backend(self, keys, "the keys")?;
        check_backend(self, values, "the values")?;
        if keys.len() != values.len() {
            return invalid(format!(
                "sort_pairs: {} keys but {} values (they must be equal)",
                keys.len(),
                values.len()
            ));
        }
        let t = sort_tuning(
            self,
            Family::SortPairs,
            std::mem::size_of::<K>(),
            std::mem::size_of::<V>(),
            tuning,
        )?;
        match &self.backend {
            Backend::Cpu => {
                let Storage::Host(k) = &mut keys.storage else {
                    unreachable!("validated")
                };
                let Storage::Host(v) = &mut values.storage else {
                    unreachable!("validated")
                };
                cpu::sort_pairs(k, v, comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let n = keys.len() as u64;
                let (k, v) = (device_ptr(keys), device_ptr(values));
                cuda::sort::sort::<K, V>(gpu, k, v, n, comparator, SortValues::Pairs, &t)
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
        keys: &mut Buffer<K>,
        indices: &mut Buffer<u32>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        check_backend(self, keys, "the keys")?;
        check_backend(self, indices, "the indices")?;
        if keys.len() != indices.len() {
            return invalid(format!(
                "sort_indices: {} keys but {} indices (they must be equal)",
                keys.len(),
                indices.len()
            ));
        }
        if keys.len() as u64 > u32::MAX as u64 + 1 {
            return invalid(format!(
                "sort_indices: {} keys do not fit 32-bit indices; use sort_pairs with u64 values",
                keys.len()
            ));
        }
        let t = sort_tuning(self, Family::SortPairs, std::mem::size_of::<K>(), 4, None)?;
        match &self.backend {
            Backend::Cpu => {
                let Storage::Host(k) = &mut keys.storage else {
                    unreachable!("validated")
                };
                let Storage::Host(v) = &mut indices.storage else {
                    unreachable!("validated")
                };
                for (i, x) in v.iter_mut().enumerate() {
                    *x = i as u32;
                }
                cpu::sort_pairs(k, v, comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let n = keys.len() as u64;
                let (k, v) = (device_ptr(keys), device_ptr(indices));
                cuda::sort::sort::<K, u32>(gpu, k, v, n, comparator, SortValues::Indices, &t)
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
        a: &Buffer<K>,
        b: &Buffer<K>,
        out: &mut Buffer<K>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        check_backend(self, a, "A")?;
        check_backend(self, b, "B")?;
        check_backend(self, out, "the output")?;
        if out.len() < a.len() + b.len() {
            return invalid(format!(
                "merge: the output holds {} elements, A and B have {}",
                out.len(),
                a.len() + b.len()
            ));
        }
        let t = sort_tuning(self, Family::SortKeys, std::mem::size_of::<K>(), 0, None)?;
        match &self.backend {
            Backend::Cpu => {
                let (Place::Host(x), Place::Host(y)) = (a.place(), b.place()) else {
                    unreachable!("validated")
                };
                let Storage::Host(o) = &mut out.storage else {
                    unreachable!("validated")
                };
                cpu::merge::<K, K>((x, None), (y, None), o, None, comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => cuda::sort::merge::<K, K>(
                gpu,
                (device_ptr(a), 0, a.len() as u64),
                (device_ptr(b), 0, b.len() as u64),
                (device_ptr(out), 0),
                comparator,
                SortValues::None,
                &t,
            ),
        }
    }

    /// Merges sorted pairs: keys `a_keys` (values `a_values`) and `b_keys` (`b_values`) into
    /// `out_keys` / `out_values`, stably.
    #[allow(clippy::too_many_arguments)]
    pub fn merge_pairs<K: Element, V: Element>(
        &self,
        a_keys: &Buffer<K>,
        a_values: &Buffer<V>,
        b_keys: &Buffer<K>,
        b_values: &Buffer<V>,
        out_keys: &mut Buffer<K>,
        out_values: &mut Buffer<V>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        for (what, len, other) in [
            ("A", a_keys.len(), a_values.len()),
            ("B", b_keys.len(), b_values.len()),
        ] {
            if len != other {
                return invalid(format!(
                    "merge_pairs: {what} has {len} keys but {other} values"
                ));
            }
        }
        check_backend(self, a_keys, "A's keys")?;
        check_backend(self, a_values, "A's values")?;
        check_backend(self, b_keys, "B's keys")?;
        check_backend(self, b_values, "B's values")?;
        check_backend(self, out_keys, "the output keys")?;
        check_backend(self, out_values, "the output values")?;
        let total = a_keys.len() + b_keys.len();
        if out_keys.len() < total || out_values.len() < total {
            return invalid(format!(
                "merge_pairs: the outputs hold {} keys and {} values, A and B have {total}",
                out_keys.len(),
                out_values.len()
            ));
        }
        let t = sort_tuning(
            self,
            Family::SortPairs,
            std::mem::size_of::<K>(),
            std::mem::size_of::<V>(),
            None,
        )?;
        match &self.backend {
            Backend::Cpu => {
                let (Place::Host(ak), Place::Host(av), Place::Host(bk), Place::Host(bv)) = (
                    a_keys.place(),
                    a_values.place(),
                    b_keys.place(),
                    b_values.place(),
                ) else {
                    unreachable!("validated")
                };
                let Storage::Host(ok) = &mut out_keys.storage else {
                    unreachable!("validated")
                };
                let Storage::Host(ov) = &mut out_values.storage else {
                    unreachable!("validated")
                };
                cpu::merge((ak, Some(av)), (bk, Some(bv)), ok, Some(ov), comparator);
                Ok(())
            }
            Backend::Cuda(gpu) => cuda::sort::merge::<K, V>(
                gpu,
                (
                    device_ptr(a_keys),
                    device_ptr(a_values),
                    a_keys.len() as u64,
                ),
                (
                    device_ptr(b_keys),
                    device_ptr(b_values),
                    b_keys.len() as u64,
                ),
                (device_ptr(out_keys), device_ptr(out_values)),
                comparator,
                SortValues::Pairs,
                &t,
            ),
        }
    }
}
