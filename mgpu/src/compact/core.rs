//! The machinery every compaction shares: a job's tuning and its dispatch to the CPU reference or the GPU's single-pass
//! kernels; and the runs kernel (reduce-by-key, which run-length encoding is with a constant 1
//! per key).

use super::job::{too_short, Job, Place};
use super::Count;
use crate::buffer::{output, ViewMut};
use crate::context::{Backend, Context};
use crate::cpu::compact as reference;
use crate::cuda::compact::{KeyTest, Rejected};
use crate::error::{Error, LengthRule, Result};
use crate::tuning;
use crate::{Element, Equality, Op, SliceMut};

impl Context {
    pub(crate) fn compact<K: Element, V: Element>(
        &self,
        mut job: Job<'_, K, V>,
        test: KeyTest<'_, K>,
        count: Count<'_>,
    ) -> Result<Option<u64>> {
        let n = job.check()?;
        let count = count.validate(self)?;
        let tuning = compact_tuning::<K, V>(self, job.values.is_some(), job.rejected)?;
        match &self.backend {
            Backend::Cpu => {
                let keys = job.keys.host_input();
                let keep = reference::keep_flags(&keys, &test);
                let values = job.values.as_mut().map(|v| v.host_input());
                let keys_out = match (&mut job.keys_out, job.write_keys) {
                    (_, false) => None,
                    (Some(p), true) => Some(p.host_output()),
                    (None, true) => Some(job.keys.host_output()),
                };
                let rejected = job.keys_rejected.as_mut().map(|p| p.host_output());
                let kept = reference::split_host(&keys, &keep, keys_out, rejected, job.rejected);
                if let Some(values) = values {
                    let values_out = match &mut job.values_out {
                        Some(p) => Some(p.host_output()),
                        None => job.values.as_mut().map(|p| p.host_output()),
                    };
                    let rejected = job.values_rejected.as_mut().map(|p| p.host_output());
                    reference::split_host(&values, &keep, values_out, rejected, job.rejected);
                }
                count.deliver_host(kept as u64)
            }
            Backend::Cuda(gpu) => {
                crate::cuda::marshal::compact(gpu, &job, &test, &count, n, &tuning)
            }
        }
    }
}

/// The table's compaction tuning for keys `K` (and values `V`), VT capped at 31 (a thread's kept
/// items are one 32-bit mask).
fn compact_tuning<K: Element, V: Element>(
    ctx: &Context,
    with_values: bool,
    rejected: Rejected,
) -> Result<crate::Tuning> {
    let values = if with_values {
        std::mem::size_of::<V>()
    } else {
        0
    };
    let table = tuning::table(ctx.arch());
    let family = crate::cuda::compact::family_of(with_values, rejected);
    crate::cuda::compact::tuning(&table, family, std::mem::size_of::<K>(), values)
}

/// The length checks of reduce-by-key and run-length encoding, before anything runs: `values`
/// (`None`: a constant per key, run-length encoding) as many as the `n` keys, the outputs
/// (`keys_out` unless in place, and the values' or lengths' output) room for every key.
pub(crate) fn check_runs(
    name: &'static str,
    n: usize,
    values: Option<usize>,
    keys_out: Option<usize>,
    out_len: usize,
) -> Result<()> {
    let encoding = values.is_none();
    if let Some(len) = values.filter(|&len| len != n) {
        return Err(Error::LengthMismatch {
            call: name,
            argument: "values",
            actual: len as u64,
            expected: n as u64,
            of: "keys",
            rule: LengthRule::Equal,
        });
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
    pub(crate) fn runs<K: Element, V: Element>(
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
        let tuning = crate::cuda::reduce_by_key::tuning(
            &tuning::table(self.arch()),
            std::mem::size_of::<K>(),
            std::mem::size_of::<V>(),
        )?;
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
                let runs = reference::reduce_by_key_host(
                    &in_keys, &value, equal, op, out_keys, out_values,
                );
                count.deliver_host(runs as u64)
            }
            Backend::Cuda(gpu) => crate::cuda::marshal::runs(
                gpu,
                &keys,
                keys_out.as_ref(),
                &values,
                values_out.as_ref(),
                constant,
                equal,
                op,
                &count,
                n,
                &tuning,
            ),
        }
    }
}

pub(crate) fn output_of<'a, T: Element>(
    ctx: &Context,
    s: &'a mut impl SliceMut<T>,
    what: &str,
) -> Result<ViewMut<'a, T>> {
    output(ctx, s, what)
}
