//! Stream compaction on every backend against serial references written here: select_if,
//! select_flagged, partition_if, partition_copy, partition_in_place, unique, unique_by_key,
//! run_length_encode and reduce_by_key, in place and out of place, for built-in and user element
//! types. One module a section; this file holds what they share: sizes around the compaction
//! tile, selection and run patterns, count destinations (host, device, both or nowhere), output
//! checks (nothing may be written past the count) and the serial references.

#[path = "../common/mod.rs"]
mod common;

mod big;
mod case;
mod errors;
mod in_place;
mod reduce_by_key;
mod runs;
mod select;
mod views;

use case::*;
use common::*;
use mgpu::tuning::Family;
use mgpu::{
    Arithmetic, Context, Count, Element, Equality, Error, Op, Predicate, ReduceByKeyAlgorithm,
};
use rand::rngs::StdRng;
use rand::Rng;

/// The compaction tile for items of `bytes` (keys + values): the table's, VT capped at 31 as the
/// library caps it.
fn compact_tile(ctx: &Context, bytes: usize) -> usize {
    family_tile(ctx, Family::Compact, bytes)
}

/// The reduce-by-key and run-length-encode tile for items of `bytes` (keys + values or lengths).
fn run_tile(ctx: &Context, bytes: usize) -> usize {
    family_tile(ctx, Family::ReduceByKey, bytes)
}

fn family_tile(ctx: &Context, family: Family, bytes: usize) -> usize {
    let mut t = mgpu::tuning::lookup(family, ctx.arch().unwrap_or(90), bytes).unwrap();
    t.vt = t.vt.min(31);
    t.nv()
}

/// 0, 1, 2; k*tile - 1, k*tile, k*tile + 1 for k = 1..=3 for the tiles (compaction's and
/// reduce-by-key's) of every item size in `item_bytes`; a few random sizes; multi-tile sizes on
/// the GPU (moderate ones on the CPU).
fn test_sizes(ctx: &Context, r: &mut StdRng, item_bytes: &[usize]) -> Vec<usize> {
    let tiles: Vec<usize> = item_bytes
        .iter()
        .flat_map(|&b| [compact_tile(ctx, b), run_tile(ctx, b)])
        .collect();
    let (gpu, cpu) = (1 << 16..3 << 20, 20_000..40_000);
    tile_sizes(ctx, r, &[0, 1, 2], &tiles, gpu, cpu)
}

/// Which items a selection keeps.
#[derive(Clone, Copy, Debug)]
enum Sel {
    All,
    Nothing,
    Alternating,
    Rate(f64),
    /// Long stretches (up to a few tiles) kept, then rejected.
    Blocks,
}

const SELECTIONS: [Sel; 8] = [
    Sel::All,
    Sel::Nothing,
    Sel::Alternating,
    Sel::Rate(0.02),
    Sel::Rate(0.5),
    Sel::Rate(0.9),
    Sel::Rate(0.995),
    Sel::Blocks,
];

fn selection(r: &mut StdRng, n: usize, sel: Sel) -> Vec<bool> {
    match sel {
        Sel::All => vec![true; n],
        Sel::Nothing => vec![false; n],
        Sel::Alternating => (0..n).map(|i| i % 2 == 1).collect(),
        Sel::Rate(p) => (0..n).map(|_| r.random_bool(p)).collect(),
        Sel::Blocks => {
            let mut v = Vec::with_capacity(n);
            let mut keep = r.random_bool(0.5);
            while v.len() < n {
                let len = r.random_range(1..5000).min(n - v.len());
                v.extend(std::iter::repeat_n(keep, len));
                keep = !keep;
            }
            v
        }
    }
}

/// How long the runs of equal keys are.
#[derive(Clone, Copy, Debug)]
enum Runs {
    /// One run: every key equal.
    One,
    /// Random lengths, uniform in 1..=2m-1 (mean m; m = 1: all distinct).
    Mean(usize),
    /// Lengths around the tiles (1, tile - 1, tile, tile + 1, 2 tile + 1): runs across tile edges.
    TileEdges,
}

const RUN_PATTERNS: [Runs; 6] = [
    Runs::One,
    Runs::Mean(1),
    Runs::Mean(2),
    Runs::Mean(10),
    Runs::Mean(500),
    Runs::TileEdges,
];

fn run_lengths(r: &mut StdRng, n: usize, pat: Runs, tiles: &[usize]) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut left = n;
    while left > 0 {
        let len = match pat {
            Runs::One => left,
            Runs::Mean(m) => r.random_range(1..=2 * m - 1),
            Runs::TileEdges => {
                let nv = tiles[r.random_range(0..tiles.len())];
                [1, nv - 1, nv, nv + 1, 2 * nv + 1][r.random_range(0..5)]
            }
        }
        .min(left);
        lengths.push(len);
        left -= len;
    }
    lengths
}

/// Where a count goes.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Host,
    Device,
    Both,
    Nowhere,
}

const MODES: [Mode; 4] = [Mode::Host, Mode::Device, Mode::Both, Mode::Nowhere];
const COUNT_POISON: u64 = 0xdead_beef_dead_beef;

/// Runs `call` with the count delivered as `mode` says, into the middle of a poisoned
/// three-element buffer for `Device` and `Both`. Returns the count where it can be seen (host
/// and device must agree for `Both`), None for `Count::None`.
fn counted(
    ctx: &Context,
    mode: Mode,
    what: &str,
    call: impl FnOnce(Count<'_>) -> mgpu::Result<Option<u64>>,
) -> Option<u64> {
    match mode {
        Mode::Host => {
            let c = call(Count::Host).unwrap_or_else(|e| panic!("{what} ({mode:?}): {e}"));
            assert!(c.is_some(), "{what}: Count::Host returned nothing");
            c
        }
        Mode::Nowhere => {
            let c = call(Count::None).unwrap_or_else(|e| panic!("{what} ({mode:?}): {e}"));
            assert!(c.is_none(), "{what}: Count::None returned {c:?}");
            None
        }
        Mode::Device | Mode::Both => {
            let mut buf = ctx.upload(&[COUNT_POISON; 3]).unwrap();
            let host = {
                let mut slot = buf.slice_mut(1..2);
                let count = match mode {
                    Mode::Device => Count::Device(&mut slot),
                    _ => Count::Both(&mut slot),
                };
                call(count).unwrap_or_else(|e| panic!("{what} ({mode:?}): {e}"))
            };
            let dev = buf.to_vec().unwrap();
            assert_eq!(
                (dev[0], dev[2]),
                (COUNT_POISON, COUNT_POISON),
                "{what} ({mode:?}): written around the count's slot"
            );
            match mode {
                Mode::Device => assert!(host.is_none(), "{what}: Count::Device returned {host:?}"),
                _ => assert_eq!(
                    host,
                    Some(dev[1]),
                    "{what}: Count::Both: host and device differ"
                ),
            }
            Some(dev[1])
        }
    }
}

fn check_count(got: Option<u64>, expect: usize, what: &str) {
    if let Some(c) = got {
        assert_eq!(c, expect as u64, "{what}: count");
    }
}

/// `got` (a whole output buffer) must start with `expect`, and hold `poison` after it.
fn check_written<T: Element>(got: &[T], expect: &[T], poison: T, what: &str) {
    assert!(got.len() >= expect.len(), "{what}: output too short");
    same(&got[..expect.len()], expect).unwrap_or_else(|e| panic!("{what}: {e}"));
    let tail = vec![poison; got.len() - expect.len()];
    same(&got[expect.len()..], &tail).unwrap_or_else(|e| {
        panic!(
            "{what}: written past the count ({}; offsets from there): {e}",
            expect.len()
        )
    });
}

/// The first `expect.len()` items of `got` (an in-place result: the rest is unspecified).
fn check_prefix<T: Element>(got: &[T], expect: &[T], what: &str) {
    assert!(got.len() >= expect.len(), "{what}: too short");
    same(&got[..expect.len()], expect).unwrap_or_else(|e| panic!("{what}: {e}"));
}

// Serial references.

/// The kept items and the rejected ones, each in input order.
fn split<T: Copy>(items: &[T], keep: &[bool]) -> (Vec<T>, Vec<T>) {
    let (mut kept, mut rejected) = (Vec::new(), Vec::new());
    for (x, &k) in items.iter().zip(keep) {
        if k {
            kept.push(*x);
        } else {
            rejected.push(*x);
        }
    }
    (kept, rejected)
}

/// Whether each item starts a run under `same_run` (item 0 always does).
fn run_heads<T>(keys: &[T], same_run: impl Fn(&T, &T) -> bool) -> Vec<bool> {
    let mut heads = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        heads.push(i == 0 || !same_run(&keys[i - 1], &keys[i]));
    }
    heads
}

/// The length of each run, from its heads (`run_heads`).
fn head_lengths<L: Arithmetic>(heads: &[bool]) -> Vec<L> {
    let mut lengths: Vec<L> = Vec::new();
    for &h in heads {
        if h {
            lengths.push(L::ONE);
        } else {
            let last = lengths.last_mut().unwrap();
            *last = L::add(*last, L::ONE);
        }
    }
    lengths
}

/// Reduce-by-key, serially: each run's first key and the in-order fold of its values.
fn reduce_runs<K: Copy, V: Copy>(
    keys: &[K],
    values: &[V],
    same_run: impl Fn(&K, &K) -> bool,
    op: impl Fn(V, V) -> V,
) -> (Vec<K>, Vec<V>) {
    let (mut ks, mut vs): (Vec<K>, Vec<V>) = (Vec::new(), Vec::new());
    for i in 0..keys.len() {
        if i == 0 || !same_run(&keys[i - 1], &keys[i]) {
            ks.push(keys[i]);
            vs.push(values[i]);
        } else {
            let last = vs.last_mut().unwrap();
            *last = op(*last, values[i]);
        }
    }
    (ks, vs)
}

fn still_usable(ctx: &Context, what: &str) {
    let input = ctx.upload(&[1, 2, 3, 4, 5, 6, 7]).unwrap();
    let mut out = ctx.upload(&[0i32; 7]).unwrap();
    let c = ctx
        .select_if(&input, &mut out, &i32::predicate(), Count::Host)
        .unwrap_or_else(|e| panic!("{what}: context unusable after the error: {e}"));
    assert_eq!(c, Some(3), "{what}");
    assert_eq!(out.to_vec().unwrap()[..3], [1, 4, 7], "{what}");
}
