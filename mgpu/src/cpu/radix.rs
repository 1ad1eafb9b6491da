//! The radix sort's CPU reference: a stable sort by each key's number (rayon's parallel merge
//! sort), the order the GPU's digit passes give.

use crate::Element;
use rayon::prelude::*;

/// Stable sort of `keys` by the number `bits` makes of each (the radix sort's order).
pub fn sort_by_bits<K: Element>(keys: &mut [K], bits: impl Fn(&K) -> u64 + Sync) {
    keys.par_sort_by_key(|k| bits(k));
}

/// Stable sort of `keys` by `bits` with `values` moved alongside.
pub fn sort_pairs_by_bits<K: Element, V: Element>(
    keys: &mut [K],
    values: &mut [V],
    bits: impl Fn(&K) -> u64 + Sync,
) {
    let mut pairs: Vec<(u64, K, V)> = keys
        .iter()
        .zip(values.iter())
        .map(|(k, v)| (bits(k), *k, *v))
        .collect();
    pairs.par_sort_by_key(|p| p.0);
    for (i, (_, k, v)) in pairs.into_iter().enumerate() {
        keys[i] = k;
        values[i] = v;
    }
}
