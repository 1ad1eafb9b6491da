//! Stream compaction, single pass (Merrill & Garland, section 5.2): select, partition, unique,
//! run-length encoding and reduce-by-key, fused into the look-back scan: one read of the input
//! and one write of the output. Each has an in-place form whose output overwrites its input.
//!
//! Outputs must have room for every input item (the worst case). The number of items written
//! (selected items, runs) goes where the [`Count`] argument says: returned to the host (the call
//! waits for the GPU), written to device memory (it does not), both, or nowhere.

use crate::buffer::{output, View, ViewMut};
use crate::context::{Backend, Context};
use crate::cuda::compact::CompactArrays;
use crate::cuda::compact::{CompactSpec, KeyTest, Rejected};
use crate::error::{invalid, Result};
use crate::segreduce::Offset;
use crate::tuning::{self, Family};
use crate::{Arithmetic, Element, Equality, Op, Predicate, Slice, SliceMut, Total};
use std::sync::Arc;

/// Where the number of items a compaction wrote goes: [`Total`] for a `u64` count.
/// `Count::Host` returns it; `Count::Device(&mut buf)` writes it to `buf[0]` without waiting.
pub type Count<'a> = Total<'a, u64>;

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

/// An argument of a compaction: where it is read from, and where it is written to.
enum Place<'a, T: Element> {
    /// Read only.
    In(View<'a, T>),
    /// Written.
    Out(ViewMut<'a, T>),
    /// Read, then overwritten by the output (in place).
    InOut(ViewMut<'a, T>),
}

impl<T: Element> Place<'_, T> {
    fn len(&self) -> usize {
        match self {
            Place::In(v) => v.len(),
            Place::Out(v) | Place::InOut(v) => v.len(),
        }
    }
    fn device(&self) -> (u64, &Arc<crate::cuda::Gpu>) {
        let (home, ptr) = match self {
            Place::In(v) => v.at.device(),
            Place::Out(v) | Place::InOut(v) => v.at.device(),
        }
        .expect("checked to be on the GPU");
        (ptr, home)
    }
    /// The input's elements, on the CPU backend (copied when they are about to be overwritten).
    fn host_input(&mut self) -> Vec<T> {
        match self {
            Place::In(v) => v.at.host().expect("checked to be on the CPU").to_vec(),
            Place::Out(_) => unreachable!("not an input"),
            Place::InOut(v) => v.host_mut().expect("checked to be on the CPU").to_vec(),
        }
    }
    fn host_output(&mut self) -> &mut [T] {
        match self {
            Place::In(_) => unreachable!("not an output"),
            Place::Out(v) | Place::InOut(v) => v.host_mut().expect("checked to be on the CPU"),
        }
    }
}

/// One compaction: keys (what selection looks at), optional values carried with them, outputs.
struct Job<'a, K: Element, V: Element> {
    name: &'static str,
    keys: Place<'a, K>,
    values: Option<Place<'a, V>>,
    /// Whether the kept keys are written: to `keys_out`, or over `keys` when that is `None`.
    write_keys: bool,
    keys_out: Option<Place<'a, K>>,
    /// `None`: the values (if any) are overwritten in place.
    values_out: Option<Place<'a, V>>,
    keys_rejected: Option<Place<'a, K>>,
    values_rejected: Option<Place<'a, V>>,
    rejected: Rejected,
    /// What the keys and the values are called in errors: ("keys", "values"), or for
    /// select_flagged ("flags", "items").
    words: (&'static str, &'static str),
}

impl<'a, K: Element, V: Element> Job<'a, K, V> {
    /// A job over `keys` that writes the kept keys (over `keys` unless `keys_out` is set) and
    /// drops the rest; the caller's fields say otherwise.
    fn new(name: &'static str, keys: Place<'a, K>) -> Self {
        Job {
            name,
            keys,
            values: None,
            write_keys: true,
            keys_out: None,
            values_out: None,
            keys_rejected: None,
            values_rejected: None,
            rejected: Rejected::Dropped,
            words: ("keys", "values"),
        }
    }
}

fn too_short(name: &str, what: &str, len: usize, n: usize) -> crate::Error {
    crate::Error::InvalidArgument(format!(
        "{name}: {what} holds {len} elements but the input has {n}; it needs room for every \
         input item (the count tells how many were written)"
    ))
}

impl<K: Element, V: Element> Job<'_, K, V> {
    /// Lengths agree and outputs can hold every item.
    fn check(&self) -> Result<usize> {
        let n = self.keys.len();
        if let Some(v) = &self.values {
            if v.len() != n {
                let (keys, values) = self.words;
                return invalid(format!(
                    "{}: {} {values} for {n} {keys}; they must have the same length",
                    self.name,
                    v.len(),
                ));
            }
        }
        let outs = [
            ("the output", self.keys_out.as_ref().map(|p| p.len())),
            (
                "the values' output",
                self.values_out.as_ref().map(|p| p.len()),
            ),
            (
                "the rejected items' output",
                self.keys_rejected.as_ref().map(|p| p.len()),
            ),
            (
                "the rejected values' output",
                self.values_rejected.as_ref().map(|p| p.len()),
            ),
        ];
        for (what, len) in outs {
            if let Some(len) = len {
                if len < n {
                    return Err(too_short(self.name, what, len, n));
                }
            }
        }
        Ok(n)
    }
}

/// The CPU reference: which items are kept.
fn keep_flags<K: Element>(keys: &[K], test: &KeyTest<'_, K>) -> Vec<bool> {
    match test {
        KeyTest::Predicate(p) => keys.iter().map(|k| p.test(k)).collect(),
        KeyTest::Runs(e) => (0..keys.len())
            .map(|i| i == 0 || !e.equal(&keys[i - 1], &keys[i]))
            .collect(),
    }
}

/// Writes `items` split by `keep` (kept first, in order) to `out`, and the rejected to
/// `rejected` in order or to `out`'s tail last first. Returns the number kept.
fn split_host<X: Copy>(
    items: &[X],
    keep: &[bool],
    out: Option<&mut [X]>,
    rejected_out: Option<&mut [X]>,
    rejected: Rejected,
) -> usize {
    let kept = keep.iter().filter(|&&k| k).count();
    let n = items.len();
    let (mut k, mut r) = (0, 0);
    let mut out = out;
    let mut rejected_out = rejected_out;
    for (x, &keep) in items.iter().zip(keep) {
        if keep {
            if let Some(o) = out.as_deref_mut() {
                o[k] = *x;
            }
            k += 1;
        } else {
            match rejected {
                Rejected::Dropped => {}
                Rejected::Reversed => {
                    if let Some(o) = out.as_deref_mut() {
                        o[n - 1 - r] = *x;
                    }
                }
                Rejected::Separate => {
                    if let Some(o) = rejected_out.as_deref_mut() {
                        o[r] = *x;
                    }
                }
            }
            r += 1;
        }
    }
    kept
}

impl Context {
    fn compact<K: Element, V: Element>(
        &self,
        mut job: Job<'_, K, V>,
        test: KeyTest<'_, K>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let n = job.check()?;
        let count = count.validate(self)?;
        let tuning = compact_tuning::<K, V>(self, job.values.is_some())?;
        match &self.backend {
            Backend::Cpu => {
                let keys = job.keys.host_input();
                let keep = keep_flags(&keys, &test);
                let values = job.values.as_mut().map(|v| v.host_input());
                let keys_out = match (&mut job.keys_out, job.write_keys) {
                    (_, false) => None,
                    (Some(p), true) => Some(p.host_output()),
                    (None, true) => Some(job.keys.host_output()),
                };
                let rejected = job.keys_rejected.as_mut().map(|p| p.host_output());
                let kept = split_host(&keys, &keep, keys_out, rejected, job.rejected);
                if let Some(values) = values {
                    let values_out = match &mut job.values_out {
                        Some(p) => Some(p.host_output()),
                        None => job.values.as_mut().map(|p| p.host_output()),
                    };
                    let rejected = job.values_rejected.as_mut().map(|p| p.host_output());
                    split_host(&values, &keep, values_out, rejected, job.rejected);
                }
                count.deliver_host(kept as u64)
            }
            Backend::Cuda(gpu) => {
                let places = [
                    Some(job.keys.device()),
                    job.values.as_ref().map(|p| p.device()),
                    job.keys_out.as_ref().map(|p| p.device()),
                    job.values_out.as_ref().map(|p| p.device()),
                    job.keys_rejected.as_ref().map(|p| p.device()),
                    job.values_rejected.as_ref().map(|p| p.device()),
                ];
                let ptr = |i: usize| places[i].map_or(0, |p| p.0);
                let arrays = CompactArrays {
                    keys: ptr(0),
                    values: ptr(1),
                    // In place: over the input.
                    keys_out: if !job.write_keys {
                        0
                    } else if job.keys_out.is_some() {
                        ptr(2)
                    } else {
                        ptr(0)
                    },
                    values_out: if job.values_out.is_some() {
                        ptr(3)
                    } else {
                        ptr(1)
                    },
                    keys_rejected: ptr(4),
                    values_rejected: ptr(5),
                    count_out: 0,
                };
                let spec = CompactSpec {
                    unique: matches!(test, KeyTest::Runs(_)),
                    keys_out: job.write_keys,
                    values: job.values.is_some(),
                    rejected: job.rejected,
                    wide_count: false,
                    non_trivial_runs: false,
                };
                let homes: Vec<_> = places
                    .iter()
                    .flatten()
                    .map(|p| p.1)
                    .chain(count.home())
                    .collect();
                let slot = gpu.ordered(&homes, || {
                    let slot = count_slot(&count, gpu)?;
                    let arrays = CompactArrays {
                        count_out: slot.0,
                        ..arrays
                    };
                    crate::cuda::compact::compact::<K, V>(
                        gpu, spec, &test, arrays, n as u64, &tuning,
                    )?;
                    Ok(slot)
                })?;
                count.finish_device(&slot)
            }
        }
    }
}

/// The device slot the kernel writes its count to: the caller's, else a temporary (the kernel
/// always writes one).
fn count_slot(
    count: &crate::reduce::TotalTo<'_, u64>,
    gpu: &Arc<crate::cuda::Gpu>,
) -> Result<(u64, Option<crate::cuda::memory::DeviceMem>)> {
    match count.device_slot(gpu)? {
        (0, None) => {
            let tmp = crate::cuda::memory::DeviceMem::alloc(gpu, 8)?;
            Ok((tmp.ptr, Some(tmp)))
        }
        slot => Ok(slot),
    }
}

/// The table's compaction tuning for keys `K` (and values `V`), VT capped at 31 (a thread's kept
/// items are one 32-bit mask).
fn compact_tuning<K: Element, V: Element>(
    ctx: &Context,
    with_values: bool,
) -> Result<crate::Tuning> {
    let size = std::mem::size_of::<K>()
        + if with_values {
            std::mem::size_of::<V>()
        } else {
            0
        };
    let mut t = tuning::resolve(Family::Compact, ctx.arch(), size, None)?;
    if t.vt > 31 {
        t.vt = 31;
    }
    Ok(t)
}

/// The reduce-by-key CPU reference: run starts under `equal`, each run's values folded in order.
/// Returns the number of runs.
fn reduce_by_key_host<K: Element, V: Element>(
    keys: &[K],
    values: &dyn Fn(usize) -> V,
    equal: &Equality<K>,
    op: &Op<V>,
    mut keys_out: Option<&mut [K]>,
    values_out: &mut [V],
) -> usize {
    let mut runs = 0;
    for i in 0..keys.len() {
        if i == 0 || !equal.equal(&keys[i - 1], &keys[i]) {
            if let Some(o) = keys_out.as_deref_mut() {
                o[runs] = keys[i];
            }
            values_out[runs] = values(i);
            runs += 1;
        } else {
            values_out[runs - 1] = op.apply(values_out[runs - 1], values(i));
        }
    }
    runs
}

/// The length checks of reduce-by-key and run-length encoding, before anything runs: `values`
/// (`None`: a constant per key, run-length encoding) as many as the `n` keys, the outputs
/// (`keys_out` unless in place, and the values' or lengths' output) room for every key.
fn check_runs(
    name: &str,
    n: usize,
    values: Option<usize>,
    keys_out: Option<usize>,
    out_len: usize,
) -> Result<()> {
    let encoding = values.is_none();
    if let Some(len) = values.filter(|&len| len != n) {
        return invalid(format!(
            "{name}: {len} values for {n} keys; they must have the same length"
        ));
    }
    if let Some(len) = keys_out.filter(|&len| len < n) {
        let what = if encoding {
            "the runs' output"
        } else {
            "the keys' output"
        };
        return Err(too_short(name, what, len, n));
    }
    if out_len < n {
        let what = if encoding {
            "the lengths' output"
        } else {
            "the values' output"
        };
        return Err(too_short(name, what, out_len, n));
    }
    Ok(())
}

impl Context {
    /// Reduce-by-key and run-length encoding. `values` are read (`In`), read and overwritten
    /// (`InOut`, in place), or, with a `constant` value per key, only written (`Out`, the
    /// lengths); `values_out` is where the reductions go when not over `values`.
    #[allow(clippy::too_many_arguments)]
    fn runs<K: Element, V: Element>(
        &self,
        name: &'static str,
        mut keys: Place<'_, K>,
        keys_out: Option<Place<'_, K>>,
        mut values: Place<'_, V>,
        values_out: Option<Place<'_, V>>,
        constant: Option<V>,
        equal: &Equality<K>,
        op: &Op<V>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let n = keys.len();
        let out_len = values_out.as_ref().map_or(values.len(), |o| o.len());
        check_runs(
            name,
            n,
            constant.is_none().then(|| values.len()),
            keys_out.as_ref().map(|o| o.len()),
            out_len,
        )?;
        let count = count.validate(self)?;
        let size = std::mem::size_of::<K>() + std::mem::size_of::<V>();
        let mut tuning = tuning::resolve(Family::ReduceByKey, self.arch(), size, None)?;
        tuning.vt = tuning.vt.min(31);
        let keys_in_place = matches!(keys, Place::InOut(_));
        match &self.backend {
            Backend::Cpu => {
                let in_keys = keys.host_input();
                let in_values = match constant {
                    None => Some(values.host_input()),
                    Some(_) => None,
                };
                let value = |i: usize| match (&in_values, constant) {
                    (Some(v), _) => v[i],
                    (None, c) => c.expect("values or a constant"),
                };
                let mut keys_out = keys_out;
                let out_keys = match &mut keys_out {
                    Some(p) => Some(p.host_output()),
                    None if keys_in_place => Some(keys.host_output()),
                    None => None,
                };
                let mut values_out = values_out;
                let out_values = match &mut values_out {
                    Some(p) => p.host_output(),
                    None => values.host_output(),
                };
                let runs = reduce_by_key_host(&in_keys, &value, equal, op, out_keys, out_values);
                count.deliver_host(runs as u64)
            }
            Backend::Cuda(gpu) => {
                let (kp, kh) = keys.device();
                let (vp, vh) = values.device();
                let kout = keys_out.as_ref().map(|p| p.device());
                let vout = values_out.as_ref().map(|p| p.device());
                let arrays = CompactArrays {
                    keys: kp,
                    values: if constant.is_some() { 0 } else { vp },
                    keys_out: match kout {
                        Some(p) => p.0,
                        None if keys_in_place => kp,
                        None => 0,
                    },
                    values_out: vout.map_or(vp, |p| p.0),
                    ..Default::default()
                };
                let homes: Vec<_> = [Some(kh), Some(vh), kout.map(|p| p.1), vout.map(|p| p.1)]
                    .into_iter()
                    .flatten()
                    .chain(count.home())
                    .collect();
                let slot = gpu.ordered(&homes, || {
                    let slot = count_slot(&count, gpu)?;
                    let arrays = CompactArrays {
                        count_out: slot.0,
                        ..arrays
                    };
                    crate::cuda::reduce_by_key::reduce_by_key(
                        gpu, equal, op, arrays, constant, n as u64, &tuning,
                    )?;
                    Ok(slot)
                })?;
                count.finish_device(&slot)
            }
        }
    }
}

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
        let job = Job {
            keys_out: Some(Place::Out(output_of(self, output, "the output")?)),
            rejected: Rejected::Reversed,
            ..Job::<T, T>::new(
                "partition_if",
                Place::In(crate::buffer::input(self, input, "the input")?),
            )
        };
        self.compact(job, KeyTest::Predicate(pred), count)
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
        let job = Job {
            keys_out: Some(Place::Out(output_of(
                self,
                selected,
                "the selected output",
            )?)),
            keys_rejected: Some(Place::Out(output_of(
                self,
                rejected,
                "the rejected output",
            )?)),
            rejected: Rejected::Separate,
            ..Job::<T, T>::new(
                "partition_copy",
                Place::In(crate::buffer::input(self, input, "the input")?),
            )
        };
        self.compact(job, KeyTest::Predicate(pred), count)
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
        let job = Job {
            keys_rejected: Some(Place::Out(output_of(
                self,
                rejected,
                "the rejected output",
            )?)),
            rejected: Rejected::Separate,
            ..Job::<T, T>::new(
                "partition_copy_in_place",
                Place::InOut(output_of(self, data, "the data")?),
            )
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
        self.runs(
            "run_length_encode",
            Place::In(crate::buffer::input(self, input, "the input")?),
            Some(Place::Out(output_of(self, unique_out, "the runs' output")?)),
            Place::Out(output_of(self, lengths, "the lengths' output")?),
            None,
            Some(L::ONE),
            equal,
            &Op::plus(),
            count,
        )
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
        self.runs(
            "run_length_encode_in_place",
            Place::InOut(output_of(self, data, "the data")?),
            None,
            Place::Out(output_of(self, lengths, "the lengths' output")?),
            None,
            Some(L::ONE),
            equal,
            &Op::plus(),
            count,
        )
    }

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
        let keys_out = output_of(self, keys_out, "the keys' output")?;
        let values = crate::buffer::input(self, values, "the values")?;
        let values_out = output_of(self, values_out, "the values' output")?;
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
                let runs = if n <= u32::MAX as usize {
                    self.reduce_by_key_planned::<K, V, u32>(
                        &keys,
                        &values,
                        &mut keys_out,
                        &mut values_out,
                        equal,
                        op,
                    )?
                } else {
                    self.reduce_by_key_planned::<K, V, u64>(
                        &keys,
                        &values,
                        &mut keys_out,
                        &mut values_out,
                        equal,
                        op,
                    )?
                };
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
            Place::InOut(output_of(self, keys, "the keys")?),
            None,
            Place::InOut(output_of(self, values, "the values")?),
            None,
            None,
            equal,
            op,
            count,
        )
    }
}

impl Context {
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
                return invalid(format!(
                    "{name}: {what} holds {len} elements but {n} items can have {room} runs \
                     longer than one; it needs room for them"
                ));
            }
        }
        let count = count.validate(self)?;
        let tuning = non_trivial_tuning(tuning::resolve(
            Family::Compact,
            self.arch(),
            std::mem::size_of::<T>(),
            None,
        )?);
        match &self.backend {
            Backend::Cpu => {
                let keys = input.at.host().expect("checked to be on the CPU");
                let (offsets, lengths) = (
                    offsets.host_mut().expect("on the CPU"),
                    lengths.host_mut().expect("on the CPU"),
                );
                let mut runs = 0;
                let mut start = 0;
                for i in 0..n {
                    let last = i + 1 == n || !equal.equal(&keys[i], &keys[i + 1]);
                    if last {
                        if i > start {
                            offsets[runs] = L::count_from(L::ZERO, start as u64);
                            lengths[runs] = L::count_from(L::ZERO, (i + 1 - start) as u64);
                            runs += 1;
                        }
                        start = i + 1;
                    }
                }
                count.deliver_host(runs as u64)
            }
            Backend::Cuda(gpu) => {
                let (ih, ip) = input.at.device().expect("on the GPU");
                let (oh, op) = offsets.at.device().expect("on the GPU");
                let (lh, lp) = lengths.at.device().expect("on the GPU");
                let homes: Vec<_> = [ih, oh, lh].into_iter().chain(count.home()).collect();
                let slot = gpu.ordered(&homes, || {
                    let slot = count_slot(&count, gpu)?;
                    crate::cuda::compact::non_trivial_runs::<T, L>(
                        gpu, equal, ip, op, lp, slot.0, n as u64, &tuning,
                    )?;
                    Ok(slot)
                })?;
                count.finish_device(&slot)
            }
        }
    }
}

/// The non-trivial runs kernel holds a thread's keys and three masks across its loop: the
/// table's entry for its keys, at most 128x23 at OCC 4 (at 128x31x4 it spilled for f32 and i64
/// keys).
pub fn non_trivial_tuning(mut t: crate::Tuning) -> crate::Tuning {
    t.vt = t.vt.min(23);
    t.occ = t.occ.min(4);
    t
}

fn output_of<'a, T: Element>(
    ctx: &Context,
    s: &'a mut impl SliceMut<T>,
    what: &str,
) -> Result<ViewMut<'a, T>> {
    output(ctx, s, what)
}
