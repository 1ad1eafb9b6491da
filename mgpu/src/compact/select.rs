//! Selection: the items a predicate accepts (`select_if`), or whose flag is non-zero
//! (`select_flagged`), to the front of the output in order.

use super::core::output_of;
use super::job::{Job, Place};
use super::Count;
use crate::context::Context;
use crate::cuda::compact::KeyTest;
use crate::error::Result;
use crate::{Arithmetic, Element, Predicate, Slice, SliceMut};

impl Context {
    /// Copies the items of `input` that `pred` accepts to the front of `output`, in order
    /// (CUB's `DeviceSelect::If`, `std::copy_if`); returns their number where `count` says.
    ///
    /// ```
    /// use mgpu::{Context, Count, Predicate};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[3, 8, 5, 6, 1, 4])?;
    /// let mut out = ctx.zeros::<i32>(6)?;
    /// let even = Predicate::new("even", |x: &i32| x % 2 == 0, "x % 2 == 0");
    /// let n = ctx.select_if(&input, &mut out, &even, Count::Host)?.unwrap();
    /// assert_eq!(out.slice(..n as usize).to_vec()?, vec![8, 6, 4]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    // partition_if's public parameters: the signatures repeat.
    pub fn select_if<T: Element>(
        &self,
        input: &impl Slice<T>,
        output: &mut impl SliceMut<T>,
        pred: &Predicate<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            keys_out: Some(Place::Out(output_of(self, output, "the output")?)),
            ..Job::<T, T>::new(
                "select_if",
                Place::In(crate::buffer::input(self, input, "the input")?),
            )
        };
        self.compact(job, KeyTest::Predicate(pred), count)
    }

    /// [`select_if`](Context::select_if) in place: the selected items move to the front of
    /// `data`, in order; the rest of `data` is left unspecified.
    ///
    /// ```
    /// use mgpu::{Context, Count, Predicate};
    /// let ctx = Context::cpu();
    /// let mut data = ctx.upload(&[3, 8, 5, 6, 1, 4])?;
    /// let big = Predicate::new("big", |x: &i32| *x > 4, "x > 4");
    /// assert_eq!(ctx.select_if_in_place(&mut data, &big, Count::Host)?, Some(3));
    /// assert_eq!(data.slice(..3).to_vec()?, vec![8, 5, 6]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn select_if_in_place<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        pred: &Predicate<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            ..Job::<T, T>::new(
                "select_if_in_place",
                Place::InOut(output_of(self, data, "the data")?),
            )
        };
        self.compact(job, KeyTest::Predicate(pred), count)
    }

    /// Copies the items of `input` whose flag is non-zero to the front of `output`, in order
    /// (CUB's `DeviceSelect::Flagged`).
    ///
    /// ```
    /// use mgpu::{Context, Count};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[1.5f32, 2.5, 3.5])?;
    /// let flags = ctx.upload(&[1u8, 0, 1])?;
    /// let mut out = ctx.zeros::<f32>(3)?;
    /// assert_eq!(ctx.select_flagged(&input, &flags, &mut out, Count::Host)?, Some(2));
    /// assert_eq!(out.slice(..2).to_vec()?, vec![1.5, 3.5]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn select_flagged<T: Element, F: Arithmetic>(
        &self,
        input: &impl Slice<T>,
        flags: &impl Slice<F>,
        output: &mut impl SliceMut<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            values: Some(Place::In(crate::buffer::input(self, input, "the input")?)),
            write_keys: false,
            values_out: Some(Place::Out(output_of(self, output, "the output")?)),
            words: ("flags", "items"),
            ..Job::<F, T>::new(
                "select_flagged",
                Place::In(crate::buffer::input(self, flags, "the flags")?),
            )
        };
        self.compact(job, KeyTest::Predicate(&Predicate::nonzero()), count)
    }

    /// [`select_flagged`](Context::select_flagged) in place.
    pub fn select_flagged_in_place<T: Element, F: Arithmetic>(
        &self,
        data: &mut impl SliceMut<T>,
        flags: &impl Slice<F>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let job = Job {
            values: Some(Place::InOut(output_of(self, data, "the data")?)),
            write_keys: false,
            words: ("flags", "items"),
            ..Job::<F, T>::new(
                "select_flagged_in_place",
                Place::In(crate::buffer::input(self, flags, "the flags")?),
            )
        };
        self.compact(job, KeyTest::Predicate(&Predicate::nonzero()), count)
    }
}
