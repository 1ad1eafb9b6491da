//! The CPU backend (rayon): the same semantics as the GPU, and the reference for every GPU test.
//! Work is split into contiguous chunks combined in order, so non-commutative operators are safe.

pub(crate) mod compact;
pub(crate) mod radix;
pub(crate) mod segreduce;

use crate::source::HostRead;
use crate::{Element, Op};
use rayon::prelude::*;

/// Below this many elements a single thread is faster than splitting.
const PARALLEL_MIN: usize = 1 << 15;

fn chunk_len(n: usize) -> usize {
    n.div_ceil(rayon::current_num_threads() * 4)
        .max(PARALLEL_MIN / 2)
}

fn fold<T: Element>(data: &[T], op: &Op<T>) -> T {
    data.iter().fold(op.identity(), |acc, &x| op.apply(acc, x))
}

/// Reduction of `data` (identity when empty).
pub fn reduce<T: Element>(data: &[T], op: &Op<T>) -> T {
    if data.len() < PARALLEL_MIN {
        return fold(data, op);
    }
    data.par_chunks(chunk_len(data.len()))
        .map(|c| fold(c, op))
        .reduce(|| op.identity(), |a, b| op.apply(a, b))
}

/// Reduction of the first `n` elements of a source (a slice, or one mapped or generated in chunks
/// as it is read).
pub(crate) fn reduce_source<T: Element>(src: &HostRead<T>, n: usize, op: &Op<T>) -> T {
    let fill = match src {
        HostRead::Slice(s) => return reduce(&s[..n], op),
        HostRead::Fill(_) => src,
    };
    // Elements are made a block at a time, on the stack.
    const BLOCK: usize = 1024;
    let fold_range = |start: usize, end: usize| {
        let mut block = [T::zeroed(); BLOCK];
        let mut acc = op.identity();
        for s in (start..end).step_by(BLOCK) {
            let m = BLOCK.min(end - s);
            fill.fill(s, &mut block[..m]);
            acc = block[..m].iter().fold(acc, |a, &x| op.apply(a, x));
        }
        acc
    };
    if n < PARALLEL_MIN {
        return fold_range(0, n);
    }
    let len = chunk_len(n);
    (0..n.div_ceil(len))
        .into_par_iter()
        .map(|c| fold_range(c * len, ((c + 1) * len).min(n)))
        .reduce(|| op.identity(), |a, b| op.apply(a, b))
}

/// Writes a source's first `out.len()` elements to `out`.
pub(crate) fn fill<T: Element>(src: &HostRead<T>, out: &mut [T]) {
    if out.len() < PARALLEL_MIN {
        return src.fill(0, out);
    }
    let len = chunk_len(out.len());
    out.par_chunks_mut(len)
        .enumerate()
        .for_each(|(i, c)| src.fill(i * len, c));
}

/// Scans `data` in place, with `carry` as the prefix of its first element; returns the total.
fn scan_serial<T: Element>(data: &mut [T], op: &Op<T>, exclusive: bool, mut carry: T) -> T {
    for x in data.iter_mut() {
        let next = op.apply(carry, *x);
        *x = if exclusive { carry } else { next };
        carry = next;
    }
    carry
}

/// Scans `data` in place; returns the total.
pub fn scan_in_place<T: Element>(data: &mut [T], op: &Op<T>, exclusive: bool) -> T {
    scan_in_place_from(data, op, exclusive, op.identity())
}

/// [`scan_in_place`] after `carry_in`, the value before the first element; the total includes it.
pub fn scan_in_place_from<T: Element>(
    data: &mut [T],
    op: &Op<T>,
    exclusive: bool,
    carry_in: T,
) -> T {
    if data.len() < PARALLEL_MIN {
        return scan_serial(data, op, exclusive, carry_in);
    }
    let len = chunk_len(data.len());
    let totals: Vec<T> = data.par_chunks(len).map(|c| fold(c, op)).collect();
    let mut carries = Vec::with_capacity(totals.len());
    let mut carry = carry_in;
    for t in totals {
        carries.push(carry);
        carry = op.apply(carry, t);
    }
    data.par_chunks_mut(len)
        .zip(carries)
        .for_each(|(c, carry)| {
            scan_serial(c, op, exclusive, carry);
        });
    carry
}

/// Scans `input` into `output[..input.len()]`; returns the total.
pub fn scan<T: Element>(input: &[T], output: &mut [T], op: &Op<T>, exclusive: bool) -> T {
    let out = &mut output[..input.len()];
    out.copy_from_slice(input);
    scan_in_place(out, op, exclusive)
}

/// Stable sort of every segment of `keys` (validated CSR `offsets`, the last segment up to the
/// end), with `values` moved alongside; segments in parallel.
pub fn segmented_sort<K: Element, V: Element, O: crate::Offset>(
    offsets: &[O],
    keys: &mut [K],
    values: Option<&mut [V]>,
    comparator: &crate::Comparator<K>,
) {
    let n = keys.len();
    let ranges: Vec<(usize, usize)> = (0..offsets.len())
        .map(|i| {
            let end = offsets.get(i + 1).map_or(n, |o| o.to_u64() as usize);
            (offsets[i].to_u64() as usize, end)
        })
        .collect();
    let key_parts = split_at_ranges(keys, &ranges);
    match values {
        None => key_parts
            .into_par_iter()
            .for_each(|k| k.sort_by(|a, b| comparator.ordering(a, b))),
        Some(values) => key_parts
            .into_par_iter()
            .zip(split_at_ranges(values, &ranges))
            .for_each(|(k, v)| {
                let mut pairs: Vec<(K, V)> = k.iter().copied().zip(v.iter().copied()).collect();
                pairs.sort_by(|a, b| comparator.ordering(&a.0, &b.0));
                for (i, (x, y)) in pairs.into_iter().enumerate() {
                    k[i] = x;
                    v[i] = y;
                }
            }),
    }
}

/// `data` cut into the consecutive `ranges` that cover it.
fn split_at_ranges<'a, T>(mut data: &'a mut [T], ranges: &[(usize, usize)]) -> Vec<&'a mut [T]> {
    let mut parts = Vec::with_capacity(ranges.len());
    let mut at = 0;
    for &(begin, end) in ranges {
        debug_assert_eq!(begin, at);
        let (part, rest) = std::mem::take(&mut data).split_at_mut(end - begin);
        parts.push(part);
        data = rest;
        at = end;
    }
    parts
}

/// Stable sort of `keys` (rayon's parallel merge sort).
pub fn sort<K: Element>(keys: &mut [K], comparator: &crate::Comparator<K>) {
    keys.par_sort_by(|a, b| comparator.ordering(a, b));
}

/// Stable sort of `keys` with `values` moved alongside.
pub fn sort_pairs<K: Element, V: Element>(
    keys: &mut [K],
    values: &mut [V],
    comparator: &crate::Comparator<K>,
) {
    let mut pairs: Vec<(K, V)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.par_sort_by(|a, b| comparator.ordering(&a.0, &b.0));
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        keys[i] = k;
        values[i] = v;
    }
}

/// Stable merge of sorted `a` and `b` (with their values, if any) into `out` (and `out_values`).
pub fn merge<K: Element, V: Element>(
    a: (&[K], Option<&[V]>),
    b: (&[K], Option<&[V]>),
    out: &mut [K],
    mut out_values: Option<&mut [V]>,
    comparator: &crate::Comparator<K>,
) {
    let (mut i, mut j) = (0, 0);
    for o in 0..a.0.len() + b.0.len() {
        // Ties take from `a`: stable.
        let take_a = j >= b.0.len() || (i < a.0.len() && !comparator.before(&b.0[j], &a.0[i]));
        if take_a {
            out[o] = a.0[i];
            if let (Some(ov), Some(av)) = (out_values.as_deref_mut(), a.1) {
                ov[o] = av[i];
            }
            i += 1;
        } else {
            out[o] = b.0[j];
            if let (Some(ov), Some(bv)) = (out_values.as_deref_mut(), b.1) {
                ov[o] = bv[j];
            }
            j += 1;
        }
    }
}
