//! Reduce-by-key: for each run of consecutive keys equal under an [`Equality`], its first key and
//! the reduction of its values, in order. Two algorithms behind one API
//! ([`Context::reduce_by_key_with`], [`ReduceByKeyAlgorithm`]): one pass fused into the
//! decoupled look-back (the compaction kernel that run-length encoding also uses), or the run
//! starts found first and the values reduced as a CSR segmented reduction over them, which a
//! [`ReduceByKeyPlan`] keeps for many value arrays.

use crate::buffer::{output, View, ViewMut};
use crate::compact::core::check_runs;
use crate::compact::job::Place;
use crate::compact::Count;
use crate::context::Context;
use crate::cuda::segreduce::{long_segments, SegItems};
use crate::error::{Error, Result};
use crate::segreduce::args::{Prepared, Segments};
use crate::segreduce::{seg_tuning, Planned};
use crate::source::Source;
use crate::tuning::Tuning;
use crate::{Element, Equality, Offset, Op, Slice, SliceMut};
use std::marker::PhantomData;

/// How [`Context::reduce_by_key_with`] finds the runs of equal keys and reduces their values.
/// Both give the same runs, keys and count; the fastest depends on the device and the data:
/// `mgpu bench reduce-by-key` times both (the `/preprocessed` rows).
///
/// ```
/// use mgpu::ReduceByKeyAlgorithm;
/// assert_eq!(ReduceByKeyAlgorithm::default(), ReduceByKeyAlgorithm::SinglePass);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReduceByKeyAlgorithm {
    /// One pass fused into the decoupled look-back (CUB's `DeviceReduce::ReduceByKey`): reads
    /// the keys and the values once and writes each run's key and reduction, without
    /// temporaries. A run's values are folded from its first value. With a device count, the
    /// call does not wait for the GPU.
    #[default]
    SinglePass,
    /// The run starts first (`unique_by_key` over the positions), then the values reduced as a
    /// CSR segmented reduction over those starts: the path of
    /// [`reduce_by_key_plan`](Context::reduce_by_key_plan) +
    /// [`reduce_by_key_apply`](Context::reduce_by_key_apply), which pays off when the same keys
    /// reduce many value arrays. As a one-shot call it moves more bytes (positions and starts
    /// are written and read again, besides the keys and the values), holds two temporaries of
    /// one offset per key (`u32`, or `u64` past 2^32 - 1 keys), and waits for the GPU (the
    /// plan reads the number of runs back) whatever the [`Count`]. A run's values are folded
    /// from the operator's identity (the same result where the identity is exact; see
    /// [`segreduce`](crate::segreduce) for float -0.0). On the GPU an operator whose CUDA
    /// expression does not compile fails after the keys' output was written.
    Preprocessed,
}

impl Context {
    /// Reduce-by-key in one pass (CUB's `DeviceReduce::ReduceByKey`): for each run of
    /// consecutive keys equal under `equal`, its first key to `keys_out` and the reduction of
    /// its values by `op` to `values_out`; returns the number of runs. The values of a run are
    /// combined in order, so `op` need not be commutative. The
    /// [`SinglePass`](ReduceByKeyAlgorithm::SinglePass) form of
    /// [`reduce_by_key_with`](Context::reduce_by_key_with).
    ///
    /// ```
    /// use mgpu::{Context, Count, Equality, Op};
    /// let ctx = Context::cpu();
    /// let keys = ctx.upload(&[1, 1, 4, 4, 4, 1])?;
    /// let values = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    /// let (mut k, mut v) = (ctx.zeros::<i32>(6)?, ctx.zeros::<f32>(6)?);
    /// let runs = ctx.reduce_by_key(&keys, &values, &mut k, &mut v, &Equality::equal_to(), &Op::plus(), Count::Host)?;
    /// assert_eq!(runs, Some(3));
    /// assert_eq!((k.slice(..3).to_vec()?, v.slice(..3).to_vec()?), (vec![1, 4, 1], vec![3.0, 12.0, 6.0]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_by_key<K: Element, V: Element>(
        &self,
        keys: &impl Slice<K>,
        values: &impl Slice<V>,
        keys_out: &mut impl SliceMut<K>,
        values_out: &mut impl SliceMut<V>,
        equal: &Equality<K>,
        op: &Op<V>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        self.reduce_by_key_with(
            keys,
            values,
            keys_out,
            values_out,
            equal,
            op,
            count,
            ReduceByKeyAlgorithm::default(),
        )
    }

    /// [`reduce_by_key`](Context::reduce_by_key) by the algorithm `algorithm` picks: one pass
    /// (the default), or the run starts first and then a segmented reduction over them. Both
    /// write the same runs and count, check the same things and give the same errors before
    /// anything is written; see [`ReduceByKeyAlgorithm`] for what each costs.
    ///
    /// ```
    /// use mgpu::{Context, Count, Equality, Op, ReduceByKeyAlgorithm};
    /// let ctx = Context::cpu();
    /// let keys = ctx.upload(&[3, 3, 3, 8, 3, 3])?;
    /// let values = ctx.upload(&[1i64, 2, 3, 4, 5, 6])?;
    /// let (mut k, mut v) = (ctx.zeros::<i32>(6)?, ctx.zeros::<i64>(6)?);
    /// let mut count = ctx.zeros::<u64>(1)?;
    /// for algorithm in [ReduceByKeyAlgorithm::SinglePass, ReduceByKeyAlgorithm::Preprocessed] {
    ///     let runs = ctx.reduce_by_key_with(&keys, &values, &mut k, &mut v, &Equality::equal_to(),
    ///         &Op::plus(), Count::Both(&mut count), algorithm)?;
    ///     assert_eq!((runs, count.to_vec()?), (Some(3), vec![3]));
    ///     assert_eq!((k.slice(..3).to_vec()?, v.slice(..3).to_vec()?), (vec![3, 8, 3], vec![6, 4, 11]));
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    // reduce_by_key's public parameters again, plus the algorithm: the signatures repeat.
    #[allow(clippy::too_many_arguments)]
    pub fn reduce_by_key_with<K: Element, V: Element>(
        &self,
        keys: &impl Slice<K>,
        values: &impl Slice<V>,
        keys_out: &mut impl SliceMut<K>,
        values_out: &mut impl SliceMut<V>,
        equal: &Equality<K>,
        op: &Op<V>,
        count: Count<'_>,
        algorithm: ReduceByKeyAlgorithm,
    ) -> Result<Option<u64>> {
        let name = "reduce_by_key";
        let keys = crate::buffer::input(self, keys, "the keys")?;
        let keys_out = output(self, keys_out, "the keys' output")?;
        let values = crate::buffer::input(self, values, "the values")?;
        let values_out = output(self, values_out, "the values' output")?;
        match algorithm {
            ReduceByKeyAlgorithm::SinglePass => self.runs(
                name,
                Place::In(keys),
                Some(Place::Out(keys_out)),
                Place::In(values),
                Some(Place::Out(values_out)),
                None,
                equal,
                op,
                count,
            ),
            ReduceByKeyAlgorithm::Preprocessed => {
                let n = keys.len();
                check_runs(
                    name,
                    n,
                    Some(values.len()),
                    Some(keys_out.len()),
                    values_out.len(),
                )?;
                let count = count.validate(self)?;
                let (mut keys_out, mut values_out) = (keys_out, values_out);
                let planned = if n <= u32::MAX as usize {
                    Self::reduce_by_key_planned::<K, V, u32>
                } else {
                    Self::reduce_by_key_planned::<K, V, u64>
                };
                let runs = planned(
                    self,
                    &keys,
                    &values,
                    &mut keys_out,
                    &mut values_out,
                    equal,
                    op,
                )?;
                count.deliver(self, runs as u64)
            }
        }
    }

    /// The preprocessed reduce-by-key, arguments checked: a plan with offsets `O`, applied once
    /// into the front of `values_out`. Returns the number of runs.
    fn reduce_by_key_planned<K: Element, V: Element, O: Offset>(
        &self,
        keys: &View<'_, K>,
        values: &View<'_, V>,
        keys_out: &mut ViewMut<'_, K>,
        values_out: &mut ViewMut<'_, V>,
        equal: &Equality<K>,
        op: &Op<V>,
    ) -> Result<usize> {
        let plan = self.reduce_by_key_plan::<K, V, O>(keys, equal, keys_out)?;
        let runs = plan.num_runs();
        self.reduce_by_key_apply(&plan, values, &mut values_out.slice_mut(..runs), op)?;
        Ok(runs)
    }

    /// [`reduce_by_key`](Context::reduce_by_key) in place: the runs' keys and reductions
    /// overwrite the front of `keys` and `values`.
    pub fn reduce_by_key_in_place<K: Element, V: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        equal: &Equality<K>,
        op: &Op<V>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        self.runs(
            "reduce_by_key_in_place",
            Place::InOut(output(self, keys, "the keys")?),
            None,
            Place::InOut(output(self, values, "the values")?),
            None,
            None,
            equal,
            op,
            count,
        )
    }
}

/// The runs of a key array found once, for reducing many value arrays by those keys with
/// [`Context::reduce_by_key_apply`]: Modern GPU's ReduceByKeyPreprocess. It holds the start of
/// every run (offsets of type `O`: `u64` for more than 2^32 - 1 keys) and reduces like
/// [`segreduce_apply`](Context::segreduce_apply), reading the values and the run starts only.
///
/// ```
/// use mgpu::{Context, Count, Equality, Op};
/// let ctx = Context::cpu();
/// let keys = ctx.upload(&[7, 7, 2, 2, 2, 7])?;
/// let mut first_keys = ctx.zeros::<i32>(6)?;
/// let plan = ctx.reduce_by_key_plan::<i32, i64, u32>(&keys, &Equality::equal_to(), &mut first_keys)?;
/// assert_eq!(plan.num_runs(), 3);
/// let values = ctx.upload(&[1i64, 2, 3, 4, 5, 6])?;
/// let mut sums = ctx.zeros::<i64>(3)?;
/// ctx.reduce_by_key_apply(&plan, &values, &mut sums, &Op::plus())?;
/// assert_eq!(sums.to_vec()?, vec![3, 12, 6]);
/// assert_eq!(&first_keys.to_vec()?[..3], &[7, 2, 7]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct ReduceByKeyPlan<T: Element, O: Offset> {
    /// Run starts (the first `runs` elements).
    starts: crate::Buffer<O>,
    runs: usize,
    count: usize,
    prepared: Prepared,
    tuning: Tuning,
    _values: PhantomData<T>,
}

impl<T: Element, O: Offset> ReduceByKeyPlan<T, O> {
    /// The number of runs (the length of an apply's output).
    pub fn num_runs(&self) -> usize {
        self.runs
    }
    /// The number of keys (the length of an apply's values).
    pub fn count(&self) -> usize {
        self.count
    }
}

impl<T: Element, O: Offset> std::fmt::Debug for ReduceByKeyPlan<T, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ReduceByKeyPlan<{}, {}>({} runs of {} keys)",
            T::CUDA_TYPE,
            O::CUDA_TYPE,
            self.runs,
            self.count
        )
    }
}

impl Context {
    /// Finds the runs of keys equal under `equal` once, writing the first key of each run to
    /// `keys_out` (room for every key), for [`reduce_by_key_apply`](Context::reduce_by_key_apply)
    /// on many value arrays of `T`. See [`ReduceByKeyPlan`].
    pub fn reduce_by_key_plan<K: Element, T: Element, O: Offset>(
        &self,
        keys: &impl Slice<K>,
        equal: &crate::Equality<K>,
        keys_out: &mut impl SliceMut<K>,
    ) -> Result<ReduceByKeyPlan<T, O>> {
        let n = keys.view().len();
        if n as u64 > O::HIGHEST.to_u64() {
            return Err(Error::TooLarge {
                call: "reduce_by_key_plan",
                what: "keys",
                len: n as u64,
                limited_by: if std::mem::size_of::<O>() == 4 {
                    "u32 offsets"
                } else {
                    "u64 offsets"
                },
                limit: O::HIGHEST.to_u64(),
                hint: "use u64 offsets",
            });
        }
        // The run starts: the positions of the keys unique_by_key keeps.
        let mut positions = self.zeros::<O>(n)?;
        self.sequence(&mut positions, O::ZERO)?;
        let mut starts = self.zeros::<O>(n)?;
        let runs = self
            .unique_by_key(
                keys,
                &positions,
                keys_out,
                &mut starts,
                equal,
                crate::Count::Host,
            )?
            .expect("a host count") as usize;
        drop(positions);
        let long = long_segments(n as u64, runs as u64);
        let tuning = seg_tuning::<T, O>(self, SegItems::Values, false, long)?;
        let segs = Segments {
            offsets: starts.slice(..runs),
            sources: None,
            count: n,
            support_empty: false,
        };
        let prepared = self.prepare(&segs, &tuning)?;
        Ok(ReduceByKeyPlan {
            starts,
            runs,
            count: n,
            prepared,
            tuning,
            _values: PhantomData,
        })
    }

    /// Reduces `values` (one per key of the plan) by the plan's runs with `op`, in order: one
    /// result per run to `out` (`out.len() == plan.num_runs()`): Modern GPU's ReduceByKeyApply.
    pub fn reduce_by_key_apply<T: Element, O: Offset>(
        &self,
        plan: &ReduceByKeyPlan<T, O>,
        values: &impl Source<T>,
        out: &mut impl SliceMut<T>,
        op: &Op<T>,
    ) -> Result<()> {
        let starts = plan.starts.slice(..plan.runs);
        let check_plan = || crate::buffer::check_place(self, &starts.at, "the plan");
        let planned = Planned {
            segs: Segments {
                offsets: starts,
                sources: None,
                count: plan.count,
                support_empty: false,
            },
            of: "keys",
            prepared: &plan.prepared,
            tuning: &plan.tuning,
        };
        self.apply_plan("reduce_by_key_apply", planned, check_plan, values, out, op)
    }
}
