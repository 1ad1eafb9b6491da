//! Segmented reduction and CSR SpMV on every backend against a serial reference written here:
//! segreduce_csr, segreduce_csr_indirect, segreduce_plan + segreduce_apply, spmv_csr(_unary),
//! spmv_csr_indirect(_unary), spmv_plan + spmv_apply / spmv_unary_apply. One module a section;
//! this file holds what they share: offsets, sizes, segment-length distributions, the reference.
//!
//! Outputs are poisoned (TestElement::poison) before every run, and compared whole.

#[path = "../common/mod.rs"]
mod common;

mod big;
mod csr;
mod errors;
mod indirect;
mod plans;
mod sources;
mod spmv;
mod stability;
mod unchecked;
mod views;

use common::*;
use mgpu::cuda::segreduce::SegItems;
use mgpu::{Arithmetic, Context, Counting, Csr, Element, Map, Offset, Op, Source};
use rand::rngs::StdRng;
use rand::Rng;

// ---------------------------------------------------------------------------------------------
// Offsets, tiles, sizes, the serial reference.

/// The offset types, with a conversion from the u64 offsets the tests compute.
trait TestOffset: Offset + TestElement {
    fn from_u64(x: u64) -> Self;
}
impl TestOffset for u32 {
    fn from_u64(x: u64) -> Self {
        u32::try_from(x).expect("offset fits in u32")
    }
}
impl TestOffset for u64 {
    fn from_u64(x: u64) -> Self {
        x
    }
}

fn to_o<O: TestOffset>(v: &[u64]) -> Vec<O> {
    v.iter().map(|&x| O::from_u64(x)).collect()
}

/// 0, 1, 2, 31, 100; k*nv - 1, k*nv, k*nv + 1 for k = 1..=3 and each tile `nvs`; two random
/// sizes of a few tiles; MULTI_TILE and a random size of 2M to 3M on the GPU, a moderate random
/// size on the CPU.
fn test_sizes(ctx: &Context, r: &mut StdRng, nvs: &[usize]) -> Vec<usize> {
    let (gpu, cpu) = (2 << 20..3 << 20, 25_000..35_000);
    tile_sizes(ctx, r, &[0, 1, 2, 31, 100], nvs, gpu, cpu)
}

/// The tile that segments of `dist` take of `nvs` (from `seg_tiles`): the first for segments
/// short on average, the last for long ones.
fn dist_tile(dist: Dist, nvs: &[usize]) -> usize {
    match dist {
        Dist::Fixed(l) if (l as u64) < mgpu::cuda::segreduce::LONG_SEGMENTS => nvs[0],
        Dist::ShortAndLong => nvs[0],
        _ => *nvs.last().unwrap(),
    }
}

/// Segment start offsets of segments of `lengths`, and the number of positions.
fn offsets_of(lengths: &[usize]) -> (Vec<u64>, usize) {
    let mut at = 0u64;
    let offsets = lengths
        .iter()
        .map(|&l| {
            let s = at;
            at += l as u64;
            s
        })
        .collect();
    (offsets, at as usize)
}

/// Segment `i`: positions `offsets[i]..offsets[i + 1]` (the last up to `count`); its items
/// `item(m)` for m from `sources[i]` (indirect) or `offsets[i]` on; folded in order from the first
/// item, an empty segment to the identity.
fn reference<T: Element>(
    offsets: &[u64],
    count: usize,
    sources: Option<&[u64]>,
    item: impl Fn(usize) -> T,
    op: &Op<T>,
) -> Vec<T> {
    (0..offsets.len())
        .map(|i| {
            let start = offsets[i];
            let end = offsets.get(i + 1).copied().unwrap_or(count as u64);
            assert!(start <= end, "reference: bad test geometry");
            let from = sources.map_or(start, |s| s[i]);
            (from..from + (end - start))
                .map(|m| item(m as usize))
                .reduce(|a, b| op.apply(a, b))
                .unwrap_or(op.identity())
        })
        .collect()
}

/// Bit-for-bit equality, except that floating-point zeros compare equal: a float `plus` with
/// identity 0.0 is not exact for -0.0 (0.0 + -0.0 = 0.0), and the GPU folds a thread's items from
/// the identity where the reference folds a segment from its first item.
fn check<T: Element>(got: &[T], expect: &[T], what: &str) {
    let zeros_equal = |a: &[T]| -> Vec<T> {
        let mut a = a.to_vec();
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut a);
        match T::CUDA_TYPE {
            "float" => bytes.chunks_mut(4).for_each(|c| {
                if c == (-0.0f32).to_le_bytes() {
                    c.copy_from_slice(&0.0f32.to_le_bytes());
                }
            }),
            "double" => bytes.chunks_mut(8).for_each(|c| {
                if c == (-0.0f64).to_le_bytes() {
                    c.copy_from_slice(&0.0f64.to_le_bytes());
                }
            }),
            _ => {}
        }
        a
    };
    same(&zeros_equal(got), &zeros_equal(expect)).unwrap_or_else(|e| panic!("{what}: {e}"));
}

fn poisoned<T: TestElement>(ctx: &Context, n: usize) -> mgpu::Buffer<T> {
    ctx.upload(&vec![T::poison(); n]).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Segment-length distributions.

#[derive(Clone, Copy, Debug)]
enum Dist {
    Fixed(usize),
    /// Length nv + d: boundaries drifting across the tile edges (d = 0: exactly at them).
    TileFixed(isize),
    /// Uniform in 1..=2m-1 (mean m).
    Uniform(usize),
    /// Zipf-like: P(len > L) ~ L^-0.7; a few huge segments.
    PowerLaw,
    /// One segment covering everything.
    One,
    /// Half the segments empty, the others 1..=20; some empty ones at the end.
    HalfEmpty,
    /// Runs of thousands of empty segments at the front, the back and inside; others 1..=100.
    EmptyRuns,
    /// Floods of 65,535 or more empty segments (more segments starting in one tile than its
    /// 2-byte marks count) at the front, the middle and the back; others 1..=100.
    EmptyFloods,
    /// Thousands of empty segments, then one covering everything (all offsets 0).
    LeadingEmpty,
    /// One segment covering everything, then thousands of empty ones (all offsets but the first
    /// equal to the count).
    TrailingEmpty,
    /// A boundary at every tile edge, some at edge +- 1, a few random ones.
    TileEdges,
    /// Lengths of 3 to 20 tiles.
    ManyTiles,
    /// Lengths 1..=3, and now and then one of 2 to 5 tiles: short on average (a one-shot's
    /// tiles read their offsets in 16-byte runs), with tiles inside one segment.
    ShortAndLong,
}

const DISTS: [Dist; 18] = [
    Dist::Fixed(1),
    Dist::Fixed(2),
    Dist::Fixed(20),
    Dist::Fixed(500),
    Dist::Fixed(5000),
    Dist::TileFixed(-1),
    Dist::TileFixed(0),
    Dist::TileFixed(1),
    Dist::Uniform(500),
    Dist::PowerLaw,
    Dist::One,
    Dist::HalfEmpty,
    Dist::EmptyRuns,
    Dist::EmptyFloods,
    Dist::LeadingEmpty,
    Dist::TrailingEmpty,
    Dist::TileEdges,
    Dist::ShortAndLong,
];

/// Fewer distributions, for the suites that are not about geometry.
const SOME_DISTS: [Dist; 7] = [
    Dist::Fixed(1),
    Dist::Uniform(500),
    Dist::PowerLaw,
    Dist::One,
    Dist::HalfEmpty,
    Dist::EmptyRuns,
    Dist::TileEdges,
];

/// Segment lengths summing to `n`.
fn gen_lengths(r: &mut StdRng, n: usize, dist: Dist, nv: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut left = n;
    let zeros = |v: &mut Vec<usize>, k: usize| v.extend(std::iter::repeat_n(0, k));
    match dist {
        Dist::LeadingEmpty => {
            zeros(&mut v, r.random_range(1000..5000));
            v.push(n);
            return v;
        }
        Dist::TrailingEmpty => {
            v.push(n);
            zeros(&mut v, r.random_range(1000..5000));
            return v;
        }
        Dist::TileEdges => {
            if n == 0 {
                return v;
            }
            let mut b = vec![0usize];
            let mut k = 1;
            while k * nv < n {
                b.push(k * nv);
                if r.random_bool(0.3) {
                    b.push(k * nv - 1);
                }
                if k * nv + 1 < n && r.random_bool(0.3) {
                    b.push(k * nv + 1);
                }
                k += 1;
            }
            for _ in 0..n / nv + 2 {
                b.push(r.random_range(0..n));
            }
            b.sort();
            b.dedup();
            for w in b.windows(2) {
                v.push(w[1] - w[0]);
            }
            v.push(n - b.last().unwrap());
            return v;
        }
        Dist::EmptyRuns => zeros(&mut v, r.random_range(1000..5000)),
        Dist::EmptyFloods => {
            let flood =
                |v: &mut Vec<usize>, r: &mut StdRng| zeros(v, r.random_range(65_535..80_000));
            flood(&mut v, r);
            let mut middle = true;
            while left > 0 {
                if middle && left <= n / 2 {
                    flood(&mut v, r);
                    middle = false;
                }
                let len = r.random_range(1..=100).min(left);
                v.push(len);
                left -= len;
            }
            flood(&mut v, r);
            return v;
        }
        _ => {}
    }
    while left > 0 {
        let len = match dist {
            Dist::Fixed(l) => l,
            Dist::TileFixed(d) => (nv as isize + d) as usize,
            Dist::Uniform(m) => r.random_range(1..=2 * m - 1),
            Dist::PowerLaw => {
                let u: f64 = r.random_range(0.0..1.0);
                ((1.0 - u).powf(-1.4) as usize).max(1)
            }
            Dist::One => left,
            Dist::HalfEmpty => {
                if r.random_bool(0.5) {
                    0
                } else {
                    r.random_range(1..=20)
                }
            }
            Dist::EmptyRuns => {
                if r.random_bool(0.02) {
                    zeros(&mut v, r.random_range(1000..5000));
                    continue;
                }
                r.random_range(1..=100)
            }
            Dist::ManyTiles => r.random_range(3 * nv..20 * nv),
            Dist::ShortAndLong if r.random_bool(0.0002) => r.random_range(2 * nv..5 * nv),
            Dist::ShortAndLong => r.random_range(1..=3),
            Dist::LeadingEmpty | Dist::TrailingEmpty | Dist::TileEdges | Dist::EmptyFloods => {
                unreachable!()
            }
        }
        .min(left);
        v.push(len);
        left -= len;
    }
    match dist {
        Dist::HalfEmpty => zeros(&mut v, r.random_range(0..4)),
        Dist::EmptyRuns => zeros(&mut v, r.random_range(1000..5000)),
        _ => {}
    }
    v
}

/// Random sources: segment `i` of length `len` reads `sources[i]..sources[i] + len` of
/// `data_len` items; overlapping; some reading to the very end, some from 0, some in place.
fn random_sources(r: &mut StdRng, offsets: &[u64], count: usize, data_len: usize) -> Vec<u64> {
    (0..offsets.len())
        .map(|i| {
            let start = offsets[i];
            let end = offsets.get(i + 1).copied().unwrap_or(count as u64);
            let len = end - start;
            let max = data_len as u64 - len;
            match r.random_range(0..8) {
                0 => max,
                1 => 0,
                2 if start <= max => start,
                _ => r.random_range(0..=max),
            }
        })
        .collect()
}

/// The context still reduces correctly.
fn still_usable(ctx: &Context, what: &str) {
    let values = ctx.upload(&[1, 2, 3, 4, 5, 6]).unwrap();
    let offsets = ctx.upload(&[0u32, 1, 1, 4]).unwrap();
    let mut out = poisoned::<i32>(ctx, 4);
    ctx.segreduce_csr(&values, Csr::allow_empty(&offsets), &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what}: context unusable after the error: {e}"));
    assert_eq!(out.to_vec().unwrap(), [1, 0, 9, 11], "{what}");
}
