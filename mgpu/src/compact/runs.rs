//! Runs: run-length encoding (each run's first item and length, on the runs kernel of
//! reduce-by-key) and the non-trivial runs (the offset and length of each run of two or more).

use super::core::output_of;
use super::job::Place;
use super::Count;
use crate::buffer::length_mismatch;
use crate::context::{Backend, Context};
use crate::error::{LengthRule::AtLeast, Result};
use crate::tuning;
use crate::{Arithmetic, Element, Equality, Op, Slice, SliceMut};

impl Context {
    /// Run-length encoding (CUB's `DeviceRunLengthEncode::Encode`): the first item of each run
    /// of consecutive items equal under `equal` to `unique_out`, the run's length to `lengths`;
    /// returns the number of runs. Lengths are counted in `L` (it must hold the longest run).
    ///
    /// ```
    /// use mgpu::{Context, Count, Equality};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[5, 5, 5, 2, 5, 5])?;
    /// let (mut runs, mut lengths) = (ctx.zeros::<i32>(6)?, ctx.zeros::<u32>(6)?);
    /// assert_eq!(ctx.run_length_encode(&input, &mut runs, &mut lengths, &Equality::equal_to(), Count::Host)?, Some(3));
    /// assert_eq!((runs.slice(..3).to_vec()?, lengths.slice(..3).to_vec()?), (vec![5, 2, 5], vec![3, 1, 2]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn run_length_encode<T: Element, L: Arithmetic>(
        &self,
        input: &impl Slice<T>,
        unique_out: &mut impl SliceMut<T>,
        lengths: &mut impl SliceMut<L>,
        equal: &Equality<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let input = Place::In(crate::buffer::input(self, input, "the input")?);
        let runs = Some(Place::Out(output_of(self, unique_out, "the runs' output")?));
        let lengths = Place::Out(output_of(self, lengths, "the lengths' output")?);
        self.run_lengths("run_length_encode", input, runs, lengths, equal, count)
    }

    /// [`run_length_encode`](Context::run_length_encode) with the runs' items written over
    /// `data`.
    pub fn run_length_encode_in_place<T: Element, L: Arithmetic>(
        &self,
        data: &mut impl SliceMut<T>,
        lengths: &mut impl SliceMut<L>,
        equal: &Equality<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let data = Place::InOut(output_of(self, data, "the data")?);
        let lengths = Place::Out(output_of(self, lengths, "the lengths' output")?);
        self.run_lengths(
            "run_length_encode_in_place",
            data,
            None,
            lengths,
            equal,
            count,
        )
    }

    /// The runs kernel with each run's length as its value: both run-length encodings.
    fn run_lengths<T: Element, L: Arithmetic>(
        &self,
        name: &'static str,
        keys: Place<'_, T>,
        keys_out: Option<Place<'_, T>>,
        lengths: Place<'_, L>,
        equal: &Equality<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let one = Some(L::ONE);
        self.runs(
            name,
            keys,
            keys_out,
            lengths,
            None,
            one,
            equal,
            &Op::plus(),
            count,
        )
    }

    /// The runs of `input` longer than one item (CUB's `DeviceRunLengthEncode::NonTrivialRuns`):
    /// for each run of consecutive items equal under `equal` with at least two items, its
    /// offset in `input` to `offsets` and its length to `lengths`, in order; returns their
    /// number. `L` must hold the input's length.
    ///
    /// ```
    /// use mgpu::{Context, Count, Equality};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[4, 4, 1, 7, 7, 7, 2])?;
    /// let (mut offsets, mut lengths) = (ctx.zeros::<u32>(7)?, ctx.zeros::<u32>(7)?);
    /// let n = ctx.non_trivial_runs(&input, &mut offsets, &mut lengths, &Equality::equal_to(), Count::Host)?;
    /// assert_eq!(n, Some(2));
    /// assert_eq!((offsets.slice(..2).to_vec()?, lengths.slice(..2).to_vec()?), (vec![0, 3], vec![2, 3]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn non_trivial_runs<T: Element, L: Arithmetic>(
        &self,
        input: &impl Slice<T>,
        offsets: &mut impl SliceMut<L>,
        lengths: &mut impl SliceMut<L>,
        equal: &Equality<T>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let name = "non_trivial_runs";
        let input = crate::buffer::input(self, input, "the input")?;
        let mut offsets = output_of(self, offsets, "the offsets' output")?;
        let mut lengths = output_of(self, lengths, "the lengths' output")?;
        let n = input.len();
        // A run of two or more items per two items, at most.
        let room = n / 2;
        for (what, len) in [
            ("the offsets' output", offsets.len()),
            ("the lengths' output", lengths.len()),
        ] {
            if len < room {
                let of = "the worst case (a run of two items per two items)";
                return Err(length_mismatch(AtLeast, name, what, len, room, of));
            }
        }
        let count = count.validate(self)?;
        let tuning = crate::cuda::compact::non_trivial_tuning(
            &tuning::table(self.arch()),
            std::mem::size_of::<T>(),
        )?;
        match &self.backend {
            Backend::Cpu => {
                let keys = input.at.host().expect("checked to be on the CPU");
                let runs = crate::cpu::compact::non_trivial_runs_host(
                    keys,
                    equal,
                    offsets.host_mut().expect("on the CPU"),
                    lengths.host_mut().expect("on the CPU"),
                );
                count.deliver_host(runs as u64)
            }
            Backend::Cuda(gpu) => crate::cuda::marshal::non_trivial_runs(
                gpu, &input, &offsets, &lengths, equal, &count, n, &tuning,
            ),
        }
    }
}
