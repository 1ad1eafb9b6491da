//! Unique: the first item of each run of consecutive items equal under an [`Equality`], alone or
//! with a value per key.

use super::core::output_of;
use super::job::{Job, Place};
use super::Count;
use crate::context::Context;
use crate::cuda::compact::KeyTest;
use crate::error::Result;
use crate::{Element, Equality, Slice, SliceMut};

impl Context {
    /// Copies the first item of each run of consecutive items equal under `equal` to the front
    /// of `output` (CUB's `DeviceSelect::Unique`, `std::unique_copy`); returns the number of runs.
    ///
    /// ```
    /// use mgpu::{Context, Count, Equality};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[1, 1, 2, 2, 2, 1, 3, 3])?;
    /// let mut out = ctx.zeros::<i32>(8)?;
    /// assert_eq!(ctx.unique(&input, &mut out, &Equality::equal_to(), Count::Host)?, Some(4));
    /// assert_eq!(out.slice(..4).to_vec()?, vec![1, 2, 1, 3]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn unique<T: Element>(
        &self,
        input: &impl Slice<T>,
        output: &mut impl SliceMut<T>,
        equal: &Equality<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            keys_out: Some(Place::Out(output_of(self, output, "the output")?)),
            ..Job::<T, T>::new(
                "unique",
                Place::In(crate::buffer::input(self, input, "the input")?),
            )
        };
        self.compact(job, KeyTest::Runs(equal), count)
    }

    /// [`unique`](Context::unique) in place (`std::unique`).
    pub fn unique_in_place<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        equal: &Equality<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            ..Job::<T, T>::new(
                "unique_in_place",
                Place::InOut(output_of(self, data, "the data")?),
            )
        };
        self.compact(job, KeyTest::Runs(equal), count)
    }

    /// [`unique`](Context::unique) over `keys`, with each kept key's value (`thrust::unique_by_key_copy`).
    ///
    /// ```
    /// use mgpu::{Context, Count, Equality};
    /// let ctx = Context::cpu();
    /// let keys = ctx.upload(&[7u32, 7, 9, 9, 7])?;
    /// let values = ctx.upload(&[0.5f64, 1.5, 2.5, 3.5, 4.5])?;
    /// let (mut k, mut v) = (ctx.zeros::<u32>(5)?, ctx.zeros::<f64>(5)?);
    /// ctx.unique_by_key(&keys, &values, &mut k, &mut v, &Equality::equal_to(), Count::Host)?;
    /// assert_eq!((k.slice(..3).to_vec()?, v.slice(..3).to_vec()?), (vec![7, 9, 7], vec![0.5, 2.5, 4.5]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    // Its public parameters are reduce_by_key's but the operator: the signatures repeat.
    pub fn unique_by_key<K: Element, V: Element>(
        &self,
        keys: &impl Slice<K>,
        values: &impl Slice<V>,
        keys_out: &mut impl SliceMut<K>,
        values_out: &mut impl SliceMut<V>,
        equal: &Equality<K>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            values: Some(Place::In(crate::buffer::input(self, values, "the values")?)),
            keys_out: Some(Place::Out(output_of(self, keys_out, "the keys' output")?)),
            values_out: Some(Place::Out(output_of(
                self,
                values_out,
                "the values' output",
            )?)),
            ..Job::<K, V>::new(
                "unique_by_key",
                Place::In(crate::buffer::input(self, keys, "the keys")?),
            )
        };
        self.compact(job, KeyTest::Runs(equal), count)
    }

    /// [`unique_by_key`](Context::unique_by_key) in place (`thrust::unique_by_key`).
    pub fn unique_by_key_in_place<K: Element, V: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        equal: &Equality<K>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            values: Some(Place::InOut(output_of(self, values, "the values")?)),
            ..Job::<K, V>::new(
                "unique_by_key_in_place",
                Place::InOut(output_of(self, keys, "the keys")?),
            )
        };
        self.compact(job, KeyTest::Runs(equal), count)
    }
}
