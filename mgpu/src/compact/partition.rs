//! Partition: the items a predicate accepts first, the others after them (reversed, as CUB's
//! `DevicePartition::If`) or into an output of their own, in input order.

use super::core::output_of;
use super::job::{Job, Place};
use super::Count;
use crate::context::Context;
use crate::cuda::compact::{KeyTest, Rejected};
use crate::error::Result;
use crate::{Element, Predicate, Slice, SliceMut};

impl Context {
    /// Partitions `input` into `output` in one pass: the items `pred` accepts first, in input
    /// order, then the rejected ones in *reverse* input order (as CUB's `DevicePartition::If`);
    /// returns the number accepted.
    ///
    /// ```
    /// use mgpu::{Context, Count, Predicate};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[1, 2, 3, 4, 5, 6])?;
    /// let mut out = ctx.zeros::<i32>(6)?;
    /// let odd = Predicate::new("odd", |x: &i32| x % 2 != 0, "x % 2 != 0");
    /// assert_eq!(ctx.partition_if(&input, &mut out, &odd, Count::Host)?, Some(3));
    /// assert_eq!(out.to_vec()?, vec![1, 3, 5, 6, 4, 2]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn partition_if<T: Element>(
        &self,
        input: &impl Slice<T>,
        output: &mut impl SliceMut<T>,
        pred: &Predicate<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let out = Place::Out(output_of(self, output, "the output")?);
        let input = Place::In(crate::buffer::input(self, input, "the input")?);
        let rejected = (Rejected::Reversed, None);
        self.partition("partition_if", input, Some(out), rejected, pred, count)
    }

    /// Stable partition in one pass (`thrust::partition_copy`): the items `pred` accepts to the
    /// front of `selected`, the others to the front of `rejected`, both in input order; returns
    /// the number accepted.
    ///
    /// ```
    /// use mgpu::{Context, Count, Predicate};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[1, 2, 3, 4, 5])?;
    /// let (mut yes, mut no) = (ctx.zeros::<i32>(5)?, ctx.zeros::<i32>(5)?);
    /// let odd = Predicate::new("odd", |x: &i32| x % 2 != 0, "x % 2 != 0");
    /// assert_eq!(ctx.partition_copy(&input, &mut yes, &mut no, &odd, Count::Host)?, Some(3));
    /// assert_eq!((yes.slice(..3).to_vec()?, no.slice(..2).to_vec()?), (vec![1, 3, 5], vec![2, 4]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn partition_copy<T: Element>(
        &self,
        input: &impl Slice<T>,
        selected: &mut impl SliceMut<T>,
        rejected: &mut impl SliceMut<T>,
        pred: &Predicate<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let out = Place::Out(output_of(self, selected, "the selected output")?);
        let rejected = Place::Out(output_of(self, rejected, "the rejected output")?);
        let input = Place::In(crate::buffer::input(self, input, "the input")?);
        let rejected = (Rejected::Separate, Some(rejected));
        self.partition("partition_copy", input, Some(out), rejected, pred, count)
    }

    /// [`partition_copy`](Context::partition_copy) with the selected items compacted in place at
    /// the front of `data` (one pass); the rejected go to `rejected`, in order.
    pub fn partition_copy_in_place<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        rejected: &mut impl SliceMut<T>,
        pred: &Predicate<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let rejected = Place::Out(output_of(self, rejected, "the rejected output")?);
        let data = Place::InOut(output_of(self, data, "the data")?);
        let rejected = (Rejected::Separate, Some(rejected));
        self.partition("partition_copy_in_place", data, None, rejected, pred, count)
    }

    /// The compaction the partitions share: the items of `keys` that `pred` accepts to
    /// `selected` (else over `keys`), the others as `rejected` says.
    fn partition<T: Element>(
        &self,
        name: &'static str,
        keys: Place<'_, T>,
        selected: Option<Place<'_, T>>,
        (rejected, keys_rejected): (Rejected, Option<Place<'_, T>>),
        pred: &Predicate<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            keys_out: selected,
            keys_rejected,
            rejected,
            ..Job::<T, T>::new(name, keys)
        };
        self.compact(job, KeyTest::Predicate(pred), count)
    }

    /// Stable partition of `data` in place (`thrust::stable_partition`): the items `pred`
    /// accepts first, then the others, each group in input order; returns the number accepted.
    ///
    /// One pass cannot write the rejected items behind the selected ones in place (their
    /// places are only known at the end, and lie over inputs not yet read), so they are staged:
    /// a [`partition_copy_in_place`](Context::partition_copy_in_place) into a temporary, then a
    /// copy back. That moves the rejected items twice more than the out-of-place
    /// [`partition_if`](Context::partition_if), and waits for the GPU.
    ///
    /// ```
    /// use mgpu::{Context, Predicate};
    /// let ctx = Context::cpu();
    /// let mut data = ctx.upload(&[1, 2, 3, 4, 5, 6])?;
    /// let odd = Predicate::new("odd", |x: &i32| x % 2 != 0, "x % 2 != 0");
    /// assert_eq!(ctx.partition_in_place(&mut data, &odd)?, 3);
    /// assert_eq!(data.to_vec()?, vec![1, 3, 5, 2, 4, 6]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn partition_in_place<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        pred: &Predicate<T>,
    ) -> Result<u64> {
        let mut data = output_of(self, data, "the data")?;
        let mut staged = self.zeros::<T>(data.len())?;
        let kept = self
            .partition_copy_in_place(&mut data, &mut staged, pred, Count::Host)?
            .expect("the count goes to the host");
        let n = data.len();
        self.copy(
            &staged.slice(..n - kept as usize),
            &mut data.slice_mut(kept as usize..),
        )?;
        Ok(kept)
    }
}
