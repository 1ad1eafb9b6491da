//! The CPU reference of compaction: which items a key test keeps, the split of items by those
//! flags, reduce-by-key (and run-length encoding) and the non-trivial runs, each a sequential
//! loop in input order.

use crate::cuda::compact::{KeyTest, Rejected};
use crate::{Arithmetic, Element, Equality, Op};

/// Which items are kept.
pub(crate) fn keep_flags<K: Element>(keys: &[K], test: &KeyTest<'_, K>) -> Vec<bool> {
    match test {
        KeyTest::Predicate(p) => keys.iter().map(|k| p.test(k)).collect(),
        KeyTest::Runs(e) => (0..keys.len())
            .map(|i| i == 0 || !e.equal(&keys[i - 1], &keys[i]))
            .collect(),
    }
}

/// Writes `items` split by `keep` (kept first, in order) to `out`, and the rejected to
/// `rejected` in order or to `out`'s tail last first. Returns the number kept.
pub(crate) fn split_host<X: Copy>(
    items: &[X],
    keep: &[bool],
    mut out: Option<&mut [X]>,
    mut rejected_out: Option<&mut [X]>,
    rejected: Rejected,
) -> usize {
    let kept = keep.iter().filter(|&&k| k).count();
    let n = items.len();
    let (mut k, mut r) = (0, 0);
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

/// Reduce-by-key: run starts under `equal`, each run's values folded in order. Returns the
/// number of runs.
pub(crate) fn reduce_by_key_host<K: Element, V: Element>(
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

/// The runs of two or more keys equal under `equal`: their offsets and lengths, in order.
/// Returns their number.
pub(crate) fn non_trivial_runs_host<T: Element, L: Arithmetic>(
    keys: &[T],
    equal: &Equality<T>,
    offsets: &mut [L],
    lengths: &mut [L],
) -> usize {
    let n = keys.len();
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
    runs
}
