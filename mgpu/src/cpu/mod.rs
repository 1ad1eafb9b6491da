//! The CPU backend (rayon): the same semantics as the GPU, and the reference for every GPU test.
//! Work is split into contiguous chunks combined in order, so non-commutative operators are safe.

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
    if data.len() < PARALLEL_MIN {
        return scan_serial(data, op, exclusive, op.identity());
    }
    let len = chunk_len(data.len());
    let totals: Vec<T> = data.par_chunks(len).map(|c| fold(c, op)).collect();
    let mut carries = Vec::with_capacity(totals.len());
    let mut carry = op.identity();
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
