//! Segmented reduction and CSR SpMV on every backend against a serial reference written here:
//! segreduce_csr, segreduce_csr_indirect, segreduce_plan + segreduce_apply, spmv_csr(_unary),
//! spmv_csr_indirect(_unary), spmv_plan + spmv_apply / spmv_unary_apply.
//!
//! The seed's golden demo; segment-length distributions (fixed 1, 2, 20, 500, 5000 and the tile
//! +-1, uniform, power law, one segment, half empty, runs of thousands of empty segments at the
//! front, the back and inside, boundaries at every tile edge, segments spanning many tiles) at
//! sizes around the tile (k*nv - 1, k*nv, k*nv + 1) and multi-tile sizes (large ones on the GPU);
//! count = 0 with and without segments; element types i32, u8 (wrapping), i64, u64, f32, f64
//! (small integers: exact sums), the user structs Affine (non-commutative: order is checked) and
//! Tagged, maximum / minimum and custom operators; u32 and u64 offsets; indirect CSR; mapped and
//! counting sources; views at unaligned offsets; plans; SpMV on random matrices and a 2-D
//! Laplacian (binary, unary, indirect, plans, a max-plus semiring); every validation error (the
//! message names the first bad index, nothing is written, the context still works); run-to-run
//! stability; and (MGPU_BIG=1, GPU) more than 2^32 values with u64 offsets.
//!
//! Outputs are poisoned (TestElement::poison) before every run, and compared whole.

mod common;
use common::*;
use mgpu::cuda::segreduce::SegItems;
use mgpu::{Arithmetic, Context, Counting, Element, Error, Map, Offset, Op};
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

/// The segmented-reduction tile (positions per tile) the library uses for `T`s with offsets `O`
/// (sm_90's table on the CPU).
fn seg_tile<T: Element, O: Offset>(ctx: &Context, kind: SegItems, indirect: bool) -> usize {
    mgpu::segreduce::tuning_for::<T, O>(Some(ctx.arch().unwrap_or(90)), kind, indirect)
        .unwrap()
        .nv()
}

/// A multi-tile size, GPU only.
const BIG: usize = (1 << 20) + 12345;

/// 0, 1, 2, 31, 100; k*nv - 1, k*nv, k*nv + 1 for k = 1..=3; two random sizes of a few tiles;
/// BIG and a random size up to 3M on the GPU, a moderate random size on the CPU.
fn test_sizes(ctx: &Context, r: &mut StdRng, nv: usize) -> Vec<usize> {
    let mut v = vec![0, 1, 2, 31, 100];
    for k in 1..=3 {
        v.extend([k * nv - 1, k * nv, k * nv + 1]);
    }
    v.push(r.random_range(3..4 * nv));
    v.push(r.random_range(4 * nv..12 * nv));
    if ctx.is_gpu() {
        v.push(BIG);
        v.push(r.random_range(2 << 20..3 << 20));
    } else {
        v.push(r.random_range(25_000..35_000));
    }
    v.sort();
    v.dedup();
    v
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
    /// Thousands of empty segments, then one covering everything (all offsets 0).
    LeadingEmpty,
    /// One segment covering everything, then thousands of empty ones (all offsets but the first
    /// equal to the count).
    TrailingEmpty,
    /// A boundary at every tile edge, some at edge +- 1, a few random ones.
    TileEdges,
    /// Lengths of 3 to 20 tiles.
    ManyTiles,
}

const DISTS: [Dist; 16] = [
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
    Dist::LeadingEmpty,
    Dist::TrailingEmpty,
    Dist::TileEdges,
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
            Dist::LeadingEmpty | Dist::TrailingEmpty | Dist::TileEdges => unreachable!(),
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

// ---------------------------------------------------------------------------------------------
// The golden demo of the seed.

const DEMO_STARTS: [u64; 7] = [0, 9, 19, 25, 71, 87, 97];
const DEMO_VALUES: [i32; 100] = [
    1, 5, 5, 1, 2, 5, 1, 1, 4, 4, //
    5, 3, 4, 4, 4, 2, 2, 4, 2, 5, //
    5, 1, 5, 1, 4, 5, 1, 4, 2, 2, //
    2, 3, 3, 1, 4, 2, 4, 2, 1, 2, //
    5, 1, 2, 2, 3, 1, 2, 5, 4, 1, //
    2, 5, 4, 2, 4, 1, 3, 2, 4, 4, //
    4, 4, 4, 3, 4, 4, 1, 5, 1, 1, //
    3, 2, 3, 1, 4, 1, 1, 4, 4, 4, //
    3, 5, 5, 3, 2, 1, 5, 5, 4, 5, //
    4, 2, 2, 3, 5, 5, 1, 4, 1, 5, //
];
const DEMO_SUMS: [i32; 7] = [25, 34, 21, 129, 48, 36, 10];

fn golden_for<O: TestOffset>(ctx: &Context) {
    let what = format!("{ctx:?} {} golden demo", O::CUDA_TYPE);
    assert_eq!(
        reference(&DEMO_STARTS, 100, None, |m| DEMO_VALUES[m], &Op::plus()),
        DEMO_SUMS,
        "the reference disagrees with the seed"
    );
    let values = ctx.upload(&DEMO_VALUES).unwrap();
    let offsets = ctx.upload(&to_o::<O>(&DEMO_STARTS)).unwrap();
    for support_empty in [false, true] {
        let mut out = poisoned::<i32>(ctx, 7);
        ctx.segreduce_csr(&values, &offsets, support_empty, &mut out, &Op::plus())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(out.to_vec().unwrap(), DEMO_SUMS, "{what} ({support_empty})");
    }
    // Indirect with sources = the offsets is the direct reduction.
    let mut out = poisoned::<i32>(ctx, 7);
    ctx.segreduce_csr_indirect(&values, &offsets, &offsets, false, &mut out, &Op::plus())
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), DEMO_SUMS, "{what} indirect");
    // A plan.
    let plan = ctx.segreduce_plan::<i32, O>(&offsets, 100, false).unwrap();
    assert_eq!((plan.num_segments(), plan.count()), (7, 100), "{what}");
    let mut out = poisoned::<i32>(ctx, 7);
    ctx.segreduce_apply(&plan, &values, &mut out, &Op::plus())
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), DEMO_SUMS, "{what} plan");
    // Unary SpMV with the values as the vector and cols = 0..100 is the same reduction.
    let cols: Vec<u32> = (0..100).collect();
    let cols = ctx.upload(&cols).unwrap();
    let mut y = poisoned::<i32>(ctx, 7);
    ctx.spmv_csr_unary(&cols, &offsets, &values, &mut y, false, &Op::plus())
        .unwrap();
    assert_eq!(y.to_vec().unwrap(), DEMO_SUMS, "{what} spmv");
}

#[test]
fn golden_demo() {
    for ctx in backends() {
        golden_for::<u32>(&ctx);
        golden_for::<u64>(&ctx);
    }
}

// ---------------------------------------------------------------------------------------------
// Distributions by element type and operator.

/// Every distribution at every test size: segreduce_csr against the reference, with and without
/// support_empty (when there is no empty segment).
fn distributions<T: TestElement, O: TestOffset>(
    op: &Op<T>,
    gen: impl Fn(&mut StdRng) -> T,
    dists: &[Dist],
) {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<T, O>(&ctx, SegItems::Values, false);
        for n in test_sizes(&ctx, &mut r, nv) {
            let values: Vec<T> = (0..n).map(|_| gen(&mut r)).collect();
            let vbuf = ctx.upload(&values).unwrap();
            for &dist in dists {
                let what = format!(
                    "{ctx:?} {}/{} {} n={n} nv={nv} {dist:?}",
                    T::CUDA_TYPE,
                    O::CUDA_TYPE,
                    op.name()
                );
                let lengths = gen_lengths(&mut r, n, dist, nv);
                let (offsets, count) = offsets_of(&lengths);
                assert_eq!(count, n);
                let has_empty = lengths.contains(&0);
                let expect = reference(&offsets, n, None, |m| values[m], op);
                let obuf = ctx.upload(&to_o::<O>(&offsets)).unwrap();
                for support_empty in [true, false] {
                    if !support_empty && has_empty {
                        continue;
                    }
                    let mut out = poisoned::<T>(&ctx, offsets.len());
                    ctx.segreduce_csr(&vbuf, &obuf, support_empty, &mut out, op)
                        .unwrap_or_else(|e| panic!("{what} ({support_empty}): {e}"));
                    check(
                        &out.to_vec().unwrap(),
                        &expect,
                        &format!("{what} support_empty={support_empty}"),
                    );
                }
            }
        }
    }
}

#[test]
fn distributions_i32_plus() {
    distributions::<i32, u32>(&Op::plus(), i32::random, &DISTS);
}

#[test]
fn distributions_i32_plus_u64_offsets() {
    distributions::<i32, u64>(&Op::plus(), i32::random, &DISTS);
}

#[test]
fn distributions_u8_wrapping_plus() {
    distributions::<u8, u32>(&Op::plus(), u8::random, &DISTS);
}

#[test]
fn distributions_i64_and_u64_plus() {
    distributions::<i64, u64>(&Op::plus(), i64::random, &DISTS);
    distributions::<u64, u32>(&Op::plus(), u64::random, &SOME_DISTS);
}

#[test]
fn distributions_f32_plus() {
    distributions::<f32, u32>(&Op::plus(), f32::random, &DISTS);
}

#[test]
fn distributions_f64_plus_u64_offsets() {
    distributions::<f64, u64>(&Op::plus(), f64::random, &DISTS);
}

#[test]
fn distributions_user_struct_keeps_order() {
    distributions::<Affine, u32>(&affine_op(), Affine::random, &DISTS);
    distributions::<Affine, u64>(&affine_op(), Affine::random, &SOME_DISTS);
}

#[test]
fn distributions_maximum_minimum() {
    distributions::<i32, u32>(&Op::maximum(), i32::random, &SOME_DISTS);
    distributions::<i64, u64>(&Op::minimum(), i64::random, &SOME_DISTS);
    distributions::<f32, u64>(
        &Op::maximum(),
        |r: &mut StdRng| r.random_range(-1000..1000) as f32,
        &SOME_DISTS,
    );
    distributions::<f64, u32>(
        &Op::minimum(),
        |r: &mut StdRng| r.random_range(-1000..1000) as f64,
        &SOME_DISTS,
    );
}

/// The first value that is not -1 (identity -1): associative, not commutative.
fn first_set() -> Op<i32> {
    Op::new(
        "first_set",
        -1i32,
        |a: i32, b: i32| if a != -1 { a } else { b },
        "(a != -1) ? a : b",
    )
}

#[test]
fn distributions_custom_operators() {
    distributions::<i64, u32>(
        &add_mod_prime(),
        |r: &mut StdRng| r.random_range(0..PRIME),
        &SOME_DISTS,
    );
    // Mostly -1, so which value comes first matters.
    distributions::<i32, u64>(
        &first_set(),
        |r: &mut StdRng| {
            if r.random_bool(0.9) {
                -1
            } else {
                r.random_range(0..1000)
            }
        },
        &SOME_DISTS,
    );
    // A 12-byte user type (the scalar load path), non-commutative.
    distributions::<Tagged, u32>(&tagged_op(), Tagged::random, &SOME_DISTS);
}

#[test]
fn distributions_many_tiles() {
    // Segments of 3 to 20 tiles, at sizes of several tens of tiles.
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<i32, u32>(&ctx, SegItems::Values, false);
        let sizes = if ctx.is_gpu() {
            vec![60 * nv + 7, 3 << 20]
        } else {
            vec![40 * nv + 7]
        };
        for n in sizes {
            let values: Vec<i32> = random_vec(&mut r, n);
            let vbuf = ctx.upload(&values).unwrap();
            for support_empty in [false, true] {
                let lengths = gen_lengths(&mut r, n, Dist::ManyTiles, nv);
                let (offsets, _) = offsets_of(&lengths);
                let expect = reference(&offsets, n, None, |m| values[m], &Op::plus());
                let obuf = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
                let mut out = poisoned::<i32>(&ctx, offsets.len());
                ctx.segreduce_csr(&vbuf, &obuf, support_empty, &mut out, &Op::plus())
                    .unwrap();
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{ctx:?} many tiles n={n}"),
                );
                let avals: Vec<Affine> = random_vec(&mut r, n);
                let abuf = ctx.upload(&avals).unwrap();
                let expect = reference(&offsets, n, None, |m| avals[m], &affine_op());
                let mut out = poisoned::<Affine>(&ctx, offsets.len());
                ctx.segreduce_csr(&abuf, &obuf, support_empty, &mut out, &affine_op())
                    .unwrap();
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{ctx:?} many tiles affine n={n}"),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// No positions.

/// count = 0: no segment, or any number of segments (all empty: the identity each), direct,
/// indirect, plans and SpMV; count = 0 without support_empty and with segments is an error.
#[test]
fn zero_count_and_all_empty() {
    fn one<T: TestElement>(ctx: &Context, op: &Op<T>, k: usize) {
        let what = format!("{ctx:?} {} {} count=0 k={k}", T::CUDA_TYPE, op.name());
        let values = ctx.upload::<T>(&[]).unwrap();
        let offsets = ctx.upload(&vec![0u32; k]).unwrap();
        let wide = ctx.upload(&vec![0u64; k]).unwrap();
        let expect = vec![op.identity(); k];
        let mut out = poisoned::<T>(ctx, k);
        ctx.segreduce_csr(&values, &offsets, true, &mut out, op)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&out.to_vec().unwrap(), &expect, &what);
        let mut out = poisoned::<T>(ctx, k);
        ctx.segreduce_csr(&values, &wide, true, &mut out, op)
            .unwrap_or_else(|e| panic!("{what} u64: {e}"));
        check(&out.to_vec().unwrap(), &expect, &format!("{what} u64"));
        let mut out = poisoned::<T>(ctx, k);
        ctx.segreduce_csr_indirect(&values, &offsets, &offsets, true, &mut out, op)
            .unwrap_or_else(|e| panic!("{what} indirect: {e}"));
        check(&out.to_vec().unwrap(), &expect, &format!("{what} indirect"));
        let plan = ctx.segreduce_plan::<T, u64>(&wide, 0, true).unwrap();
        let mut out = poisoned::<T>(ctx, k);
        ctx.segreduce_apply(&plan, &values, &mut out, op)
            .unwrap_or_else(|e| panic!("{what} plan: {e}"));
        check(&out.to_vec().unwrap(), &expect, &format!("{what} plan"));
        if k > 0 {
            // Without support_empty: offsets[0] = 0 is the end of the (empty) input.
            let mut out = poisoned::<T>(ctx, k);
            let e = ctx
                .segreduce_csr(&values, &offsets, false, &mut out, op)
                .unwrap_err();
            expect_invalid(e, &["offsets[0] = 0 is the end of the input"], &what);
            check(
                &out.to_vec().unwrap(),
                &vec![T::poison(); k],
                &format!("{what} written on error"),
            );
        }
    }
    for ctx in backends() {
        let mut ks = vec![0, 1, 2, 3000];
        if ctx.is_gpu() {
            ks.push(1 << 20);
        }
        for k in ks {
            one::<i32>(&ctx, &Op::plus(), k);
            one::<f32>(&ctx, &Op::maximum(), k);
            one::<u8>(&ctx, &Op::minimum(), k);
            one::<Affine>(&ctx, &affine_op(), k);
            // SpMV of a matrix without nonzeros.
            let what = format!("{ctx:?} spmv without nonzeros, {k} rows");
            let cols = ctx.upload::<u32>(&[]).unwrap();
            let matrix = ctx.upload::<f64>(&[]).unwrap();
            let offsets = ctx.upload(&vec![0u32; k]).unwrap();
            let x = ctx.upload(&[1.0f64, 2.0]).unwrap();
            let mut y = poisoned::<f64>(&ctx, k);
            ctx.spmv_csr(
                &matrix,
                &cols,
                &offsets,
                &x,
                &mut y,
                true,
                &Op::multiplies(),
                &Op::plus(),
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&y.to_vec().unwrap(), &vec![0.0; k], &what);
            let mut y = poisoned::<f64>(&ctx, k);
            ctx.spmv_csr_unary(&cols, &offsets, &x, &mut y, true, &Op::maximum())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&y.to_vec().unwrap(), &vec![f64::NEG_INFINITY; k], &what);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Indirect CSR.

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

fn indirect_suite<T: TestElement, O: TestOffset>(op: &Op<T>, dists: &[Dist]) {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<T, O>(&ctx, SegItems::Values, true);
        for n in test_sizes(&ctx, &mut r, nv) {
            let values: Vec<T> = random_vec(&mut r, n);
            let vbuf = ctx.upload(&values).unwrap();
            for &dist in dists {
                let what = format!(
                    "{ctx:?} indirect {}/{} {} n={n} nv={nv} {dist:?}",
                    T::CUDA_TYPE,
                    O::CUDA_TYPE,
                    op.name()
                );
                let lengths = gen_lengths(&mut r, n, dist, nv);
                let (offsets, _) = offsets_of(&lengths);
                let has_empty = lengths.contains(&0);
                let obuf = ctx.upload(&to_o::<O>(&offsets)).unwrap();
                let sources = random_sources(&mut r, &offsets, n, n);
                let sbuf = ctx.upload(&to_o::<O>(&sources)).unwrap();
                let expect = reference(&offsets, n, Some(&sources), |m| values[m], op);
                for support_empty in [true, false] {
                    if !support_empty && has_empty {
                        continue;
                    }
                    let mut out = poisoned::<T>(&ctx, offsets.len());
                    ctx.segreduce_csr_indirect(&vbuf, &obuf, &sbuf, support_empty, &mut out, op)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    check(
                        &out.to_vec().unwrap(),
                        &expect,
                        &format!("{what} support_empty={support_empty}"),
                    );
                }
                // Sources = offsets: the direct reduction.
                let expect = reference(&offsets, n, None, |m| values[m], op);
                let mut out = poisoned::<T>(&ctx, offsets.len());
                ctx.segreduce_csr_indirect(&vbuf, &obuf, &obuf, true, &mut out, op)
                    .unwrap_or_else(|e| panic!("{what} in place: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} sources = offsets"),
                );
            }
        }
    }
}

#[test]
fn indirect_i32_plus() {
    indirect_suite::<i32, u32>(&Op::plus(), &DISTS);
}

#[test]
fn indirect_user_struct_u64_offsets() {
    indirect_suite::<Affine, u64>(&affine_op(), &SOME_DISTS);
}

#[test]
fn indirect_f64_and_u8() {
    indirect_suite::<f64, u32>(&Op::plus(), &SOME_DISTS);
    indirect_suite::<u8, u64>(&Op::plus(), &SOME_DISTS);
}

/// Every segment reads the same window (all sources equal), and windows ending at the last
/// value, with empties whose source is the length of the values.
#[test]
fn indirect_shared_windows() {
    let mut r = rng();
    for ctx in backends() {
        let n = if ctx.is_gpu() { BIG } else { 20_000 };
        let values: Vec<i64> = random_vec(&mut r, n);
        let vbuf = ctx.upload(&values).unwrap();
        let lengths = gen_lengths(&mut r, n, Dist::HalfEmpty, 1);
        let (offsets, _) = offsets_of(&lengths);
        let obuf = ctx.upload(&to_o::<u64>(&offsets)).unwrap();
        let max_len = *lengths.iter().max().unwrap() as u64;
        for sources in [
            vec![0u64; offsets.len()],
            vec![n as u64 - max_len; offsets.len()],
            (0..offsets.len())
                .map(|i| n as u64 - lengths[i] as u64)
                .collect(),
        ] {
            let expect = reference(&offsets, n, Some(&sources), |m| values[m], &Op::plus());
            let sbuf = ctx.upload(&sources).unwrap();
            let mut out = poisoned::<i64>(&ctx, offsets.len());
            ctx.segreduce_csr_indirect(&vbuf, &obuf, &sbuf, true, &mut out, &Op::plus())
                .unwrap();
            check(
                &out.to_vec().unwrap(),
                &expect,
                &format!("{ctx:?} shared windows"),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Mapped and counting sources.

#[test]
fn mapped_and_counting_sources() {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<i32, u32>(&ctx, SegItems::Values, false);
        for n in test_sizes(&ctx, &mut r, nv) {
            for dist in [
                Dist::Uniform(500),
                Dist::PowerLaw,
                Dist::HalfEmpty,
                Dist::One,
            ] {
                let what = format!("{ctx:?} n={n} {dist:?}");
                let lengths = gen_lengths(&mut r, n, dist, nv);
                let (offsets, _) = offsets_of(&lengths);
                let o32 = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
                let o64 = ctx.upload(&to_o::<u64>(&offsets)).unwrap();
                let k = offsets.len();

                // i32 squared (wrapping), fused.
                let v: Vec<i32> = (0..n).map(|_| r.random_range(-50_000..50_000)).collect();
                let vbuf = ctx.upload(&v).unwrap();
                let sq = Map::<i32, i32>::square();
                let expect = reference(&offsets, n, None, |m| v[m].wrapping_mul(v[m]), &Op::plus());
                let mut out = poisoned::<i32>(&ctx, k);
                ctx.segreduce_csr(&vbuf.map(&sq), &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} square: {e}"));
                check(&out.to_vec().unwrap(), &expect, &format!("{what} square"));

                // f64 squared.
                let v: Vec<f64> = random_vec(&mut r, n);
                let vbuf = ctx.upload(&v).unwrap();
                let sq = Map::<f64, f64>::square();
                let expect = reference(&offsets, n, None, |m| v[m] * v[m], &Op::plus());
                let mut out = poisoned::<f64>(&ctx, k);
                ctx.segreduce_csr(&vbuf.map(&sq), &o64, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} f64 square: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} f64 square"),
                );

                // u8 widened to u64 (a map that changes the type).
                let v: Vec<u8> = random_vec(&mut r, n);
                let vbuf = ctx.upload(&v).unwrap();
                let widen = Map::new("widen_u8", |x: u8| x as u64, "(unsigned long long)x");
                let expect = reference(&offsets, n, None, |m| v[m] as u64, &Op::plus());
                let mut out = poisoned::<u64>(&ctx, k);
                ctx.segreduce_csr(&vbuf.map(&widen), &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} widen: {e}"));
                check(&out.to_vec().unwrap(), &expect, &format!("{what} widen"));

                // Mapped indirect.
                let sources = random_sources(&mut r, &offsets, n, n);
                let sbuf = ctx.upload(&to_o::<u32>(&sources)).unwrap();
                let expect = reference(&offsets, n, Some(&sources), |m| v[m] as u64, &Op::plus());
                let mut out = poisoned::<u64>(&ctx, k);
                ctx.segreduce_csr_indirect(
                    &vbuf.map(&widen),
                    &o32,
                    &sbuf,
                    true,
                    &mut out,
                    &Op::plus(),
                )
                .unwrap_or_else(|e| panic!("{what} widen indirect: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} widen indirect"),
                );

                // Counting sources.
                let c = Counting::new(u32::MAX - 1000, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::plus());
                let mut out = poisoned::<u32>(&ctx, k);
                ctx.segreduce_csr(&c, &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} counting u32: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting u32"),
                );

                let c = Counting::new(-7i64, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::maximum());
                let mut out = poisoned::<i64>(&ctx, k);
                ctx.segreduce_csr(&c, &o64, true, &mut out, &Op::maximum())
                    .unwrap_or_else(|e| panic!("{what} counting i64: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting i64"),
                );

                let c = Counting::new(1.0f64, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::plus());
                let mut out = poisoned::<f64>(&ctx, k);
                ctx.segreduce_csr(&c, &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} counting f64: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting f64"),
                );

                let c = Counting::new(0.5f32, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::minimum());
                let mut out = poisoned::<f32>(&ctx, k);
                ctx.segreduce_csr(&c, &o64, true, &mut out, &Op::minimum())
                    .unwrap_or_else(|e| panic!("{what} counting f32: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting f32"),
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Views at unaligned offsets.

/// Values `slice(3..3 + n)` of a buffer with random values around; offsets and sources
/// `slice(1..1 + k)` with offsets around that would break the geometry if read; the output
/// `slice_mut(5..5 + k)` of a poisoned buffer whose poison around it must survive.
fn views_for<T: TestElement, O: TestOffset>(ctx: &Context, r: &mut StdRng, op: &Op<T>) {
    let nv = seg_tile::<T, O>(ctx, SegItems::Values, false);
    let mut ns = vec![0, 1, 2, nv - 1, nv, nv + 1, 2 * nv + 3];
    ns.push(if ctx.is_gpu() { BIG } else { 10_007 });
    for n in ns {
        for dist in [Dist::Uniform(20), Dist::HalfEmpty, Dist::TileEdges] {
            let what = format!(
                "{ctx:?} views {}/{} n={n} {dist:?}",
                T::CUDA_TYPE,
                O::CUDA_TYPE
            );
            let lengths = gen_lengths(r, n, dist, nv);
            let (offsets, _) = offsets_of(&lengths);
            let k = offsets.len();
            let vhost: Vec<T> = random_vec(r, n + 7);
            let values = &vhost[3..3 + n];
            let vbuf = ctx.upload(&vhost).unwrap();
            let junk = [n as u64 / 2 + 1, 1];
            let mut ohost = vec![junk[0]];
            ohost.extend(&offsets);
            ohost.extend(junk);
            let obuf = ctx.upload(&to_o::<O>(&ohost)).unwrap();
            let sources = random_sources(r, &offsets, n, n);
            let mut shost = vec![n as u64];
            shost.extend(&sources);
            shost.extend([n as u64, n as u64]);
            let sbuf = ctx.upload(&to_o::<O>(&shost)).unwrap();
            let full_expect = |expect: &[T]| {
                let mut v = vec![T::poison(); 5];
                v.extend(expect);
                v.extend([T::poison(); 4]);
                v
            };
            for indirect in [false, true] {
                let expect = reference(
                    &offsets,
                    n,
                    indirect.then_some(&sources[..]),
                    |m| values[m],
                    op,
                );
                let mut out = poisoned::<T>(ctx, k + 9);
                let (v, o, s) = (
                    vbuf.slice(3..3 + n),
                    obuf.slice(1..1 + k),
                    sbuf.slice(1..1 + k),
                );
                let res = if indirect {
                    ctx.segreduce_csr_indirect(&v, &o, &s, true, &mut out.slice_mut(5..5 + k), op)
                } else {
                    ctx.segreduce_csr(&v, &o, true, &mut out.slice_mut(5..5 + k), op)
                };
                res.unwrap_or_else(|e| panic!("{what} indirect={indirect}: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &full_expect(&expect),
                    &format!("{what} indirect={indirect}"),
                );
            }
            // A plan over the view of the offsets, applied to the view of the values.
            let o = obuf.slice(1..1 + k);
            let plan = ctx.segreduce_plan::<T, O>(&o, n, true).unwrap();
            let expect = reference(&offsets, n, None, |m| values[m], op);
            let mut out = poisoned::<T>(ctx, k + 9);
            ctx.segreduce_apply(
                &plan,
                &vbuf.slice(3..3 + n),
                &mut out.slice_mut(5..5 + k),
                op,
            )
            .unwrap_or_else(|e| panic!("{what} plan: {e}"));
            check(
                &out.to_vec().unwrap(),
                &full_expect(&expect),
                &format!("{what} plan"),
            );
        }
    }
}

#[test]
fn views_at_unaligned_offsets() {
    let mut r = rng();
    for ctx in backends() {
        views_for::<i32, u32>(&ctx, &mut r, &Op::plus());
        views_for::<u8, u64>(&ctx, &mut r, &Op::plus());
        views_for::<Affine, u32>(&ctx, &mut r, &affine_op());
        views_for::<f64, u64>(&ctx, &mut r, &Op::maximum());
    }
}

// ---------------------------------------------------------------------------------------------
// Plans.

/// Plans made with support_empty over geometries with empty segments (the apply marks heads from
/// the offsets) and without (the apply reads the plan's packed heads): tile edges, last tiles
/// that end on a thread's boundary or inside a thread's items, segments of length 1 and 2.
fn plans_for<T: TestElement, O: TestOffset>(ctx: &Context, r: &mut StdRng, ops: [&Op<T>; 2]) {
    let tuning = mgpu::segreduce::tuning_for::<T, O>(
        Some(ctx.arch().unwrap_or(90)),
        SegItems::Values,
        false,
    )
    .unwrap();
    let (nv, vt) = (tuning.nv(), tuning.vt as usize);
    let mut ns = vec![0, 1, 2, nv - 1, nv, nv + 1, 2 * nv, 3 * nv + 1];
    ns.extend([nv + 5 * vt, nv + 5 * vt + 1, nv + 5 * vt - 1]);
    ns.push(if ctx.is_gpu() { BIG } else { 20_011 });
    for n in ns {
        for dist in [
            Dist::HalfEmpty,
            Dist::PowerLaw,
            Dist::EmptyRuns,
            Dist::LeadingEmpty,
            Dist::TrailingEmpty,
            Dist::Fixed(1),
            Dist::Fixed(2),
            Dist::TileEdges,
            Dist::TileFixed(0),
            Dist::One,
        ] {
            let what = format!(
                "{ctx:?} plan {}/{} n={n} {dist:?}",
                T::CUDA_TYPE,
                O::CUDA_TYPE
            );
            let lengths = gen_lengths(r, n, dist, nv);
            let (offsets, _) = offsets_of(&lengths);
            let k = offsets.len();
            let obuf = ctx.upload(&to_o::<O>(&offsets)).unwrap();
            let plan = ctx
                .segreduce_plan::<T, O>(&obuf, n, true)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!((plan.num_segments(), plan.count()), (k, n), "{what}");
            let arrays: Vec<Vec<T>> = (0..3).map(|_| random_vec(r, n)).collect();
            for (j, values) in arrays.iter().enumerate() {
                let vbuf = ctx.upload(values).unwrap();
                for op in ops {
                    let expect = reference(&offsets, n, None, |m| values[m], op);
                    let mut out = poisoned::<T>(ctx, k);
                    ctx.segreduce_apply(&plan, &vbuf, &mut out, op)
                        .unwrap_or_else(|e| panic!("{what} array {j} {}: {e}", op.name()));
                    check(
                        &out.to_vec().unwrap(),
                        &expect,
                        &format!("{what} array {j} {}", op.name()),
                    );
                }
            }
            // Wrong lengths: errors, nothing written.
            let short = ctx.upload(&arrays[0][..n.saturating_sub(1)]).unwrap();
            let mut long = arrays[0].clone();
            long.push(arrays[0].first().copied().unwrap_or(T::poison()));
            let long = ctx.upload(&long).unwrap();
            for (bad, len) in [(&short, n.saturating_sub(1)), (&long, n + 1)] {
                if len == n {
                    continue;
                }
                let mut out = poisoned::<T>(ctx, k);
                let e = ctx
                    .segreduce_apply(&plan, bad, &mut out, ops[0])
                    .unwrap_err();
                expect_invalid(
                    e,
                    &[
                        "segreduce_apply",
                        &format!("{len} values for a plan of {n} positions"),
                    ],
                    &what,
                );
                check(
                    &out.to_vec().unwrap(),
                    &vec![T::poison(); k],
                    &format!("{what} written on error"),
                );
            }
            let vbuf = ctx.upload(&arrays[0]).unwrap();
            let mut out = poisoned::<T>(ctx, k + 1);
            let e = ctx
                .segreduce_apply(&plan, &vbuf, &mut out, ops[0])
                .unwrap_err();
            expect_invalid(
                e,
                &[&format!(
                    "the output holds {} elements for {k} segments",
                    k + 1
                )],
                &what,
            );
            check(
                &out.to_vec().unwrap(),
                &vec![T::poison(); k + 1],
                &format!("{what} written on error"),
            );
            still_usable(ctx, &what);
        }
    }
}

#[test]
fn plans() {
    let mut r = rng();
    for ctx in backends() {
        plans_for::<i32, u32>(&ctx, &mut r, [&Op::plus(), &Op::maximum()]);
        plans_for::<i32, u64>(&ctx, &mut r, [&Op::minimum(), &Op::plus()]);
        plans_for::<Affine, u32>(&ctx, &mut r, [&affine_op(), &affine_op()]);
        plans_for::<f32, u64>(&ctx, &mut r, [&Op::plus(), &Op::maximum()]);
    }
}

/// A plan applied to mapped and counting values; plans without support_empty; a plan checks
/// its geometry when made.
#[test]
fn plans_with_sources_and_checks() {
    let mut r = rng();
    for ctx in backends() {
        let n = if ctx.is_gpu() { BIG } else { 12_345 };
        let lengths = gen_lengths(&mut r, n, Dist::Uniform(30), 1);
        let (offsets, _) = offsets_of(&lengths);
        let k = offsets.len();
        let obuf = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
        let plan = ctx.segreduce_plan::<i64, u32>(&obuf, n, false).unwrap();
        let v: Vec<i64> = (0..n).map(|_| r.random_range(-3000..3000)).collect();
        let vbuf = ctx.upload(&v).unwrap();
        let sq = Map::<i64, i64>::square();
        let expect = reference(&offsets, n, None, |m| v[m] * v[m], &Op::plus());
        let mut out = poisoned::<i64>(&ctx, k);
        ctx.segreduce_apply(&plan, &vbuf.map(&sq), &mut out, &Op::plus())
            .unwrap();
        check(
            &out.to_vec().unwrap(),
            &expect,
            &format!("{ctx:?} plan mapped"),
        );
        let c = Counting::new(-100i64, n);
        let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::plus());
        let mut out = poisoned::<i64>(&ctx, k);
        ctx.segreduce_apply(&plan, &c, &mut out, &Op::plus())
            .unwrap();
        check(
            &out.to_vec().unwrap(),
            &expect,
            &format!("{ctx:?} plan counting"),
        );

        // Making a plan checks the geometry.
        let bad = ctx.upload(&[0u32, 4, 4, 9]).unwrap();
        let e = ctx.segreduce_plan::<i32, u32>(&bad, 10, false).unwrap_err();
        expect_invalid(
            e,
            &["segreduce_plan", "offsets[2] = 4 equals offsets[1]"],
            "plan",
        );
        let e = ctx.segreduce_plan::<i32, u32>(&bad, 8, true).unwrap_err();
        expect_invalid(e, &["offsets[3] = 9 is past the end"], "plan");
        let empty = ctx.upload::<u64>(&[]).unwrap();
        let e = ctx.segreduce_plan::<i32, u64>(&empty, 5, true).unwrap_err();
        expect_invalid(e, &["no segments (empty offsets) for 5 positions"], "plan");
        let plan = ctx.segreduce_plan::<i32, u64>(&empty, 0, true).unwrap();
        let mut out = ctx.upload::<i32>(&[]).unwrap();
        ctx.segreduce_apply(
            &plan,
            &ctx.upload::<i32>(&[]).unwrap(),
            &mut out,
            &Op::plus(),
        )
        .unwrap();
        still_usable(&ctx, "plans");
    }
    // A plan belongs to the backend it was made on.
    if let Some(gpu) = gpu() {
        let cpu = Context::cpu();
        let coffsets = cpu.upload(&[0u32, 2, 5]).unwrap();
        let cplan = cpu.segreduce_plan::<i32, u32>(&coffsets, 6, false).unwrap();
        let gvalues = gpu.upload(&[1, 2, 3, 4, 5, 6]).unwrap();
        let mut gout = poisoned::<i32>(&gpu, 3);
        assert!(gpu
            .segreduce_apply(&cplan, &gvalues, &mut gout, &Op::plus())
            .is_err());
        check(
            &gout.to_vec().unwrap(),
            &[i32::poison(); 3],
            "cpu plan on gpu",
        );
        let goffsets = gpu.upload(&[0u32, 2, 5]).unwrap();
        let gplan = gpu.segreduce_plan::<i32, u32>(&goffsets, 6, false).unwrap();
        let cvalues = cpu.upload(&[1, 2, 3, 4, 5, 6]).unwrap();
        let mut cout = poisoned::<i32>(&cpu, 3);
        assert!(cpu
            .segreduce_apply(&gplan, &cvalues, &mut cout, &Op::plus())
            .is_err());
        check(
            &cout.to_vec().unwrap(),
            &[i32::poison(); 3],
            "gpu plan on cpu",
        );
        gpu.segreduce_apply(&gplan, &gvalues, &mut gout, &Op::plus())
            .unwrap();
        assert_eq!(gout.to_vec().unwrap(), [3, 12, 6]);
        still_usable(&gpu, "plans across backends");
    }
}

// ---------------------------------------------------------------------------------------------
// SpMV.

/// A CSR matrix's structure: row offsets and column indices, for a vector of `x_len`.
struct Csr {
    offsets: Vec<u64>,
    cols: Vec<u32>,
    x_len: usize,
}

impl Csr {
    /// Rows of `lengths` nonzeros in random columns.
    fn random(r: &mut StdRng, lengths: &[usize]) -> Csr {
        let (offsets, nnz) = offsets_of(lengths);
        let x_len = r.random_range(1..=lengths.len().max(1) + 10);
        let cols = (0..nnz).map(|_| r.random_range(0..x_len as u32)).collect();
        Csr {
            offsets,
            cols,
            x_len,
        }
    }

    /// The 2-D 5-point Laplacian on a g x g grid (columns sorted in each row).
    fn laplacian(g: usize) -> (Csr, Vec<f64>) {
        let mut offsets = Vec::with_capacity(g * g);
        let mut cols = Vec::with_capacity(5 * g * g);
        let mut vals = Vec::with_capacity(5 * g * g);
        for a in 0..g {
            for b in 0..g {
                offsets.push(cols.len() as u64);
                let mut push = |aa: usize, bb: usize, v: f64| {
                    cols.push((aa * g + bb) as u32);
                    vals.push(v);
                };
                if a > 0 {
                    push(a - 1, b, -1.0);
                }
                if b > 0 {
                    push(a, b - 1, -1.0);
                }
                push(a, b, 4.0);
                if b + 1 < g {
                    push(a, b + 1, -1.0);
                }
                if a + 1 < g {
                    push(a + 1, b, -1.0);
                }
            }
        }
        (
            Csr {
                offsets,
                cols,
                x_len: g * g,
            },
            vals,
        )
    }

    fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// y by the reference: rows folded in order from `sources` (or the offsets).
    fn product<T: Element>(
        &self,
        sources: Option<&[u64]>,
        matrix: Option<&[T]>,
        x: &[T],
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Vec<T> {
        reference(
            &self.offsets,
            self.nnz(),
            sources,
            |k| {
                let xv = x[self.cols[k] as usize];
                match matrix {
                    Some(m) => mul.apply(m[k], xv),
                    None => xv,
                }
            },
            add,
        )
    }
}

/// Every SpMV entry point on `csr`: binary and unary, direct and indirect (random sources), and a
/// plan applied to two (matrix, x) pairs, unary, and with a wrong x length.
#[allow(clippy::too_many_arguments)]
fn check_spmv<T: TestElement, O: TestOffset>(
    ctx: &Context,
    r: &mut StdRng,
    csr: &Csr,
    matrices: [&[T]; 2],
    xs: [&[T]; 2],
    support_empty: bool,
    mul: &Op<T>,
    add: &Op<T>,
    what: &str,
) {
    let what = format!(
        "{ctx:?} spmv {}/{} {what} rows={} nnz={} x_len={} support_empty={support_empty}",
        T::CUDA_TYPE,
        O::CUDA_TYPE,
        csr.offsets.len(),
        csr.nnz(),
        csr.x_len
    );
    let rows = csr.offsets.len();
    let offsets = ctx.upload(&to_o::<O>(&csr.offsets)).unwrap();
    let cols = ctx.upload(&csr.cols).unwrap();
    let m0 = ctx.upload(matrices[0]).unwrap();
    let m1 = ctx.upload(matrices[1]).unwrap();
    let x0 = ctx.upload(xs[0]).unwrap();
    let x1 = ctx.upload(xs[1]).unwrap();

    let expect = csr.product(None, Some(matrices[0]), xs[0], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr(&m0, &cols, &offsets, &x0, &mut y, support_empty, mul, add)
        .unwrap_or_else(|e| panic!("{what} binary: {e}"));
    check(&y.to_vec().unwrap(), &expect, &format!("{what} binary"));

    let expect = csr.product(None, None, xs[1], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr_unary(&cols, &offsets, &x1, &mut y, support_empty, add)
        .unwrap_or_else(|e| panic!("{what} unary: {e}"));
    check(&y.to_vec().unwrap(), &expect, &format!("{what} unary"));

    let sources = random_sources(r, &csr.offsets, csr.nnz(), csr.nnz());
    let sbuf = ctx.upload(&to_o::<O>(&sources)).unwrap();
    let expect = csr.product(Some(&sources), Some(matrices[1]), xs[0], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr_indirect(
        &m1,
        &cols,
        &offsets,
        &sbuf,
        &x0,
        &mut y,
        support_empty,
        mul,
        add,
    )
    .unwrap_or_else(|e| panic!("{what} indirect binary: {e}"));
    check(
        &y.to_vec().unwrap(),
        &expect,
        &format!("{what} indirect binary"),
    );

    let expect = csr.product(Some(&sources), None, xs[0], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr_indirect_unary(&cols, &offsets, &sbuf, &x0, &mut y, support_empty, add)
        .unwrap_or_else(|e| panic!("{what} indirect unary: {e}"));
    check(
        &y.to_vec().unwrap(),
        &expect,
        &format!("{what} indirect unary"),
    );

    // Plans.
    let plan = ctx
        .spmv_plan::<T, O>(&cols, &offsets, csr.x_len, support_empty)
        .unwrap_or_else(|e| panic!("{what} plan: {e}"));
    let pairs = [
        (matrices[0], &m0, xs[0], &x0),
        (matrices[1], &m1, xs[1], &x1),
        (matrices[0], &m0, xs[1], &x1),
    ];
    for (j, (m, mb, xh, xb)) in pairs.into_iter().enumerate() {
        let expect = csr.product(None, Some(m), xh, mul, add);
        let mut y = poisoned::<T>(ctx, rows);
        ctx.spmv_apply(&plan, mb, xb, &mut y, mul, add)
            .unwrap_or_else(|e| panic!("{what} spmv_apply {j}: {e}"));
        check(
            &y.to_vec().unwrap(),
            &expect,
            &format!("{what} spmv_apply {j}"),
        );
    }
    for (xh, xb) in [(xs[0], &x0), (xs[1], &x1)] {
        let expect = csr.product(None, None, xh, mul, add);
        let mut y = poisoned::<T>(ctx, rows);
        ctx.spmv_unary_apply(&plan, xb, &mut y, add)
            .unwrap_or_else(|e| panic!("{what} spmv_unary_apply: {e}"));
        check(
            &y.to_vec().unwrap(),
            &expect,
            &format!("{what} spmv_unary_apply"),
        );
    }
    // A vector of the wrong length.
    let mut xl = xs[0].to_vec();
    xl.push(xs[0][0]);
    let xl = ctx.upload(&xl).unwrap();
    let mut y = poisoned::<T>(ctx, rows);
    let e = ctx
        .spmv_apply(&plan, &m0, &xl, &mut y, mul, add)
        .unwrap_err();
    expect_invalid(
        e,
        &[&format!(
            "the vector holds {} elements but the plan's columns were checked against {}",
            csr.x_len + 1,
            csr.x_len
        )],
        &what,
    );
    let e = ctx.spmv_unary_apply(&plan, &xl, &mut y, add).unwrap_err();
    expect_invalid(e, &["spmv_unary_apply", "the vector holds"], &what);
    check(
        &y.to_vec().unwrap(),
        &vec![T::poison(); rows],
        &format!("{what} written on error"),
    );
}

fn spmv_suite<T: TestElement + Arithmetic, O: TestOffset>(gen: impl Fn(&mut StdRng) -> T) {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<T, O>(&ctx, SegItems::SpmvBinary, false);
        for nnz in test_sizes(&ctx, &mut r, nv) {
            for dist in [
                Dist::Uniform(8),
                Dist::HalfEmpty,
                Dist::Fixed(1),
                Dist::PowerLaw,
                Dist::EmptyRuns,
            ] {
                let mut lengths = gen_lengths(&mut r, nnz, dist, nv);
                if matches!(dist, Dist::HalfEmpty) {
                    // Mean about 8 nonzeros per non-empty row.
                    lengths = gen_lengths(&mut r, nnz, Dist::Uniform(8), nv)
                        .into_iter()
                        .flat_map(|l| if l % 3 == 0 { vec![0, l] } else { vec![l] })
                        .collect();
                }
                let csr = Csr::random(&mut r, &lengths);
                let has_empty = lengths.contains(&0);
                let m: Vec<Vec<T>> = (0..2)
                    .map(|_| (0..nnz).map(|_| gen(&mut r)).collect())
                    .collect();
                let x: Vec<Vec<T>> = (0..2)
                    .map(|_| (0..csr.x_len).map(|_| gen(&mut r)).collect())
                    .collect();
                for support_empty in [true, false] {
                    if !support_empty && has_empty {
                        continue;
                    }
                    check_spmv::<T, O>(
                        &ctx,
                        &mut r,
                        &csr,
                        [&m[0], &m[1]],
                        [&x[0], &x[1]],
                        support_empty,
                        &Op::multiplies(),
                        &Op::plus(),
                        &format!("nnz={nnz} {dist:?}"),
                    );
                }
            }
        }
    }
}

#[test]
fn spmv_random_f32() {
    // Products of at most 4: a power-law row of 3M nonzeros still sums exactly in f32.
    spmv_suite::<f32, u32>(|r: &mut StdRng| r.random_range(0..3) as f32);
}

#[test]
fn spmv_random_f64_u64_offsets() {
    spmv_suite::<f64, u64>(|r: &mut StdRng| r.random_range(-4..8) as f64);
}

/// SpMV on views at unaligned offsets: the matrix `slice(3..)`, the columns `slice(1..)` (not
/// 16-byte aligned: the tiles copy them element by element), the vector `slice(2..)`, into the
/// output `slice_mut(5..)` of a poisoned buffer. Rows average 40 nonzeros, so 4-byte values
/// gather lane-strided too.
fn spmv_views_for<T: TestElement + Arithmetic, O: TestOffset>(ctx: &Context, r: &mut StdRng) {
    let nv = seg_tile::<T, O>(ctx, SegItems::SpmvBinary, false);
    let (mul, add) = (Op::multiplies(), Op::plus());
    for nnz in [
        1,
        nv - 1,
        nv,
        3 * nv + 5,
        if ctx.is_gpu() { BIG } else { 10_007 },
    ] {
        let lengths = gen_lengths(r, nnz, Dist::Uniform(40), nv);
        let csr = Csr::random(r, &lengths);
        let rows = csr.offsets.len();
        let what = format!(
            "{ctx:?} spmv views {}/{} nnz={nnz} rows={rows}",
            T::CUDA_TYPE,
            O::CUDA_TYPE
        );
        let mhost: Vec<T> = random_vec(r, nnz + 7);
        let mut chost = vec![u32::MAX];
        chost.extend(&csr.cols);
        chost.push(u32::MAX);
        let xhost: Vec<T> = random_vec(r, csr.x_len + 4);
        let (mbuf, cbuf, obuf, xbuf) = (
            ctx.upload(&mhost).unwrap(),
            ctx.upload(&chost).unwrap(),
            ctx.upload(&to_o::<O>(&csr.offsets)).unwrap(),
            ctx.upload(&xhost).unwrap(),
        );
        let (m, c, x) = (
            mbuf.slice(3..3 + nnz),
            cbuf.slice(1..1 + nnz),
            xbuf.slice(2..2 + csr.x_len),
        );
        let expect = csr.product(
            None,
            Some(&mhost[3..3 + nnz]),
            &xhost[2..2 + csr.x_len],
            &mul,
            &add,
        );
        let mut full = vec![T::poison(); 5];
        full.extend(&expect);
        full.extend([T::poison(); 4]);

        let mut y = poisoned::<T>(ctx, rows + 9);
        ctx.spmv_csr(
            &m,
            &c,
            &obuf,
            &x,
            &mut y.slice_mut(5..5 + rows),
            true,
            &mul,
            &add,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&y.to_vec().unwrap(), &full, &what);

        let plan = ctx
            .spmv_plan::<T, O>(&c, &obuf, csr.x_len, true)
            .unwrap_or_else(|e| panic!("{what} plan: {e}"));
        let mut y = poisoned::<T>(ctx, rows + 9);
        ctx.spmv_apply(&plan, &m, &x, &mut y.slice_mut(5..5 + rows), &mul, &add)
            .unwrap_or_else(|e| panic!("{what} apply: {e}"));
        check(&y.to_vec().unwrap(), &full, &format!("{what} apply"));
    }
}

#[test]
fn spmv_views_at_unaligned_offsets() {
    let mut r = rng();
    for ctx in backends() {
        spmv_views_for::<f32, u32>(&ctx, &mut r);
        spmv_views_for::<f64, u32>(&ctx, &mut r);
        spmv_views_for::<i64, u64>(&ctx, &mut r);
    }
}

#[test]
fn spmv_laplacian() {
    let mut r = rng();
    for ctx in backends() {
        let gs: &[usize] = if ctx.is_gpu() {
            &[1, 2, 37, 1024]
        } else {
            &[1, 2, 37, 120]
        };
        for &g in gs {
            let (csr, vals) = Csr::laplacian(g);
            let x: Vec<Vec<f64>> = (0..2)
                .map(|_| (0..g * g).map(|_| r.random_range(1..16) as f64).collect())
                .collect();
            let vals2: Vec<f64> = vals.iter().map(|v| v * 2.0).collect();
            check_spmv::<f64, u32>(
                &ctx,
                &mut r,
                &csr,
                [&vals, &vals2],
                [&x[0], &x[1]],
                false,
                &Op::multiplies(),
                &Op::plus(),
                &format!("laplacian {g}x{g}"),
            );
            let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
            let vals32b: Vec<f32> = vals2.iter().map(|&v| v as f32).collect();
            let x32: Vec<Vec<f32>> = x
                .iter()
                .map(|x| x.iter().map(|&v| v as f32).collect())
                .collect();
            check_spmv::<f32, u64>(
                &ctx,
                &mut r,
                &csr,
                [&vals32, &vals32b],
                [&x32[0], &x32[1]],
                true,
                &Op::multiplies(),
                &Op::plus(),
                &format!("laplacian {g}x{g}"),
            );
            // The Laplacian of a constant vector is 0 inside the grid.
            if g >= 3 {
                let ones = ctx.upload(&vec![1.0f64; g * g]).unwrap();
                let offsets = ctx.upload(&to_o::<u32>(&csr.offsets)).unwrap();
                let cols = ctx.upload(&csr.cols).unwrap();
                let m = ctx.upload(&vals).unwrap();
                let mut y = poisoned::<f64>(&ctx, g * g);
                ctx.spmv_csr(
                    &m,
                    &cols,
                    &offsets,
                    &ones,
                    &mut y,
                    false,
                    &Op::multiplies(),
                    &Op::plus(),
                )
                .unwrap();
                let y = y.to_vec().unwrap();
                assert_eq!(y[g + 1], 0.0, "{ctx:?} laplacian interior");
                assert_eq!(y[0], 2.0, "{ctx:?} laplacian corner");
                assert_eq!(y[1], 1.0, "{ctx:?} laplacian edge");
            }
        }
    }
}

/// A semiring other than (*, +): y[i] = max over row i of (matrix + x); empty rows get -inf.
#[test]
fn spmv_max_plus_and_integers() {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<f64, u32>(&ctx, SegItems::SpmvBinary, false);
        for nnz in [0, 1, nv, 2 * nv + 1, if ctx.is_gpu() { BIG } else { 9_999 }] {
            let lengths: Vec<usize> = gen_lengths(&mut r, nnz, Dist::Uniform(8), nv)
                .into_iter()
                .flat_map(|l| if l == 5 { vec![l, 0, 0] } else { vec![l] })
                .collect();
            let csr = Csr::random(&mut r, &lengths);
            let m: Vec<Vec<f64>> = (0..2)
                .map(|_| (0..nnz).map(|_| r.random_range(-100..100) as f64).collect())
                .collect();
            let x: Vec<Vec<f64>> = (0..2)
                .map(|_| {
                    (0..csr.x_len)
                        .map(|_| r.random_range(-100..100) as f64)
                        .collect()
                })
                .collect();
            check_spmv::<f64, u32>(
                &ctx,
                &mut r,
                &csr,
                [&m[0], &m[1]],
                [&x[0], &x[1]],
                true,
                &Op::plus(),
                &Op::maximum(),
                "max-plus",
            );
            // Integers (wrapping) with u64 offsets.
            let m: Vec<Vec<i32>> = (0..2).map(|_| random_vec(&mut r, nnz)).collect();
            let x: Vec<Vec<i32>> = (0..2).map(|_| random_vec(&mut r, csr.x_len)).collect();
            check_spmv::<i32, u64>(
                &ctx,
                &mut r,
                &csr,
                [&m[0], &m[1]],
                [&x[0], &x[1]],
                true,
                &Op::multiplies(),
                &Op::plus(),
                "i32",
            );
        }
    }
}

/// SpMV on views at unaligned offsets (matrix, cols, offsets, x and y).
#[test]
fn spmv_on_views() {
    let mut r = rng();
    for ctx in backends() {
        let nnz = if ctx.is_gpu() { BIG } else { 10_001 };
        let lengths = gen_lengths(&mut r, nnz, Dist::HalfEmpty, 1);
        let csr = Csr::random(&mut r, &lengths);
        let rows = csr.offsets.len();
        let m: Vec<f32> = (0..nnz + 3).map(|_| r.random_range(0..8) as f32).collect();
        let x: Vec<f32> = (0..csr.x_len + 3)
            .map(|_| r.random_range(0..8) as f32)
            .collect();
        let mut cols = vec![u32::MAX];
        cols.extend(&csr.cols);
        cols.push(u32::MAX);
        let mut offs = vec![7u64];
        offs.extend(&csr.offsets);
        offs.extend([1u64, 0]);
        let (mb, xb, cb, ob) = (
            ctx.upload(&m).unwrap(),
            ctx.upload(&x).unwrap(),
            ctx.upload(&cols).unwrap(),
            ctx.upload(&offs).unwrap(),
        );
        let expect = csr.product(
            None,
            Some(&m[3..]),
            &x[1..1 + csr.x_len],
            &Op::multiplies(),
            &Op::plus(),
        );
        let mut y = poisoned::<f32>(&ctx, rows + 4);
        ctx.spmv_csr(
            &mb.slice(3..),
            &cb.slice(1..1 + nnz),
            &ob.slice(1..1 + rows),
            &xb.slice(1..1 + csr.x_len),
            &mut y.slice_mut(3..3 + rows),
            true,
            &Op::multiplies(),
            &Op::plus(),
        )
        .unwrap();
        let mut full = vec![f32::poison(); 3];
        full.extend(&expect);
        full.push(f32::poison());
        check(&y.to_vec().unwrap(), &full, &format!("{ctx:?} spmv views"));
    }
}

// ---------------------------------------------------------------------------------------------
// Errors.

/// An `Error::InvalidArgument` whose message names the problem (`needles`).
fn expect_invalid(err: Error, needles: &[&str], what: &str) {
    let msg = err.to_string();
    assert!(matches!(err, Error::InvalidArgument(_)), "{what}: {err:?}");
    for needle in needles {
        assert!(
            msg.contains(needle),
            "{what}: message {msg:?} lacks {needle:?}"
        );
    }
}

/// The context still reduces correctly.
fn still_usable(ctx: &Context, what: &str) {
    let values = ctx.upload(&[1, 2, 3, 4, 5, 6]).unwrap();
    let offsets = ctx.upload(&[0u32, 1, 1, 4]).unwrap();
    let mut out = poisoned::<i32>(ctx, 4);
    ctx.segreduce_csr(&values, &offsets, true, &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what}: context unusable after the error: {e}"));
    assert_eq!(out.to_vec().unwrap(), [1, 0, 9, 11], "{what}");
}

/// segreduce_csr on values 1..=10 with `offsets` (u32 and u64): an error naming `needles`,
/// nothing written; or the result `ok`.
fn csr_case(ctx: &Context, offsets: &[u64], support_empty: bool, expect: Result<&[i32], &[&str]>) {
    let values: Vec<i32> = (1..=10).collect();
    let vbuf = ctx.upload(&values).unwrap();
    let what = format!("{ctx:?} offsets {offsets:?} support_empty={support_empty}");
    for wide in [false, true] {
        let k = offsets.len();
        let mut out = poisoned::<i32>(ctx, k);
        let res = if wide {
            let o = ctx.upload(offsets).unwrap();
            ctx.segreduce_csr(&vbuf, &o, support_empty, &mut out, &Op::plus())
        } else {
            let o = ctx.upload(&to_o::<u32>(offsets)).unwrap();
            ctx.segreduce_csr(&vbuf, &o, support_empty, &mut out, &Op::plus())
        };
        match expect {
            Ok(sums) => {
                res.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(out.to_vec().unwrap(), sums, "{what}");
            }
            Err(needles) => {
                let e = res.expect_err(&what);
                let mut n = vec!["segreduce_csr: "];
                n.extend(needles);
                expect_invalid(e, &n, &what);
                check(
                    &out.to_vec().unwrap(),
                    &vec![i32::poison(); k],
                    &format!("{what}: written on error"),
                );
            }
        }
        // The same geometry through a plan.
        let o = ctx.upload(offsets).unwrap();
        let plan = ctx.segreduce_plan::<i32, u64>(&o, 10, support_empty);
        match expect {
            Ok(sums) => {
                let plan = plan.unwrap_or_else(|e| panic!("{what} plan: {e}"));
                let mut out = poisoned::<i32>(ctx, k);
                ctx.segreduce_apply(&plan, &vbuf, &mut out, &Op::plus())
                    .unwrap();
                assert_eq!(out.to_vec().unwrap(), sums, "{what} plan");
            }
            Err(needles) => {
                let mut n = vec!["segreduce_plan: "];
                n.extend(needles);
                expect_invalid(plan.unwrap_err(), &n, &format!("{what} plan"));
            }
        }
        still_usable(ctx, &what);
    }
}

#[test]
fn validation_errors_name_the_first_bad_index() {
    for ctx in backends() {
        csr_case(
            &ctx,
            &[1, 3, 5],
            true,
            Err(&["offsets[0] = 1, but the first segment must start at 0"]),
        );
        csr_case(
            &ctx,
            &[0, 5, 3, 7],
            true,
            Err(&["offsets[2] = 3 is less than offsets[1] = 5"]),
        );
        csr_case(
            &ctx,
            &[0, 5, 3, 7],
            false,
            Err(&["offsets[2] = 3 is less than offsets[1] = 5"]),
        );
        csr_case(
            &ctx,
            &[0, 2, 2, 5],
            false,
            Err(&["offsets[2] = 2 equals offsets[1]", "support_empty"]),
        );
        csr_case(&ctx, &[0, 2, 2, 5], true, Ok(&[3, 0, 12, 40]));
        csr_case(
            &ctx,
            &[0, 3, 11],
            true,
            Err(&["offsets[2] = 11 is past the end of the input (10 positions)"]),
        );
        csr_case(
            &ctx,
            &[0, 3, 11],
            false,
            Err(&["offsets[2] = 11 is past the end"]),
        );
        csr_case(
            &ctx,
            &[0, 3, 10],
            false,
            Err(&["offsets[2] = 10 is the end of the input (10 positions)"]),
        );
        csr_case(&ctx, &[0, 3, 10], true, Ok(&[6, 49, 0]));
        csr_case(
            &ctx,
            &[0, 3, 10, 10],
            false,
            Err(&["offsets[2] = 10 is the end of the input"]),
        );
        csr_case(&ctx, &[0, 3, 10, 10], true, Ok(&[6, 49, 0, 0]));
        // The first of several bad indices.
        csr_case(
            &ctx,
            &[0, 4, 4, 3, 20],
            false,
            Err(&["offsets[2] = 4 equals offsets[1]"]),
        );
        csr_case(&ctx, &[2, 1, 1, 30], true, Err(&["offsets[0] = 2"]));
        csr_case(&ctx, &[0], true, Ok(&[55]));
        csr_case(&ctx, &[0], false, Ok(&[55]));
        csr_case(&ctx, &[0, 0, 0], true, Ok(&[0, 0, 55]));

        let values = ctx.upload(&(1..=10).collect::<Vec<i32>>()).unwrap();
        let offsets = ctx.upload(&[0u32, 3, 6]).unwrap();
        // The output's length.
        for k in [2, 4] {
            let mut out = poisoned::<i32>(&ctx, k);
            let e = ctx
                .segreduce_csr(&values, &offsets, false, &mut out, &Op::plus())
                .unwrap_err();
            expect_invalid(
                e,
                &[&format!("the output holds {k} elements for 3 segments")],
                "out len",
            );
            check(&out.to_vec().unwrap(), &vec![i32::poison(); k], "out len");
        }
        // No offsets for values.
        let empty = ctx.upload::<u32>(&[]).unwrap();
        let mut out = ctx.upload::<i32>(&[]).unwrap();
        let e = ctx
            .segreduce_csr(&values, &empty, true, &mut out, &Op::plus())
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "segreduce_csr",
                "no segments (empty offsets) for 10 positions",
            ],
            "empty offsets",
        );
        let e = ctx
            .segreduce_csr_indirect(&values, &empty, &empty, true, &mut out, &Op::plus())
            .unwrap_err();
        expect_invalid(
            e,
            &["no segments (empty offsets) for 10 positions"],
            "empty offsets",
        );
        // ... which is fine without values.
        let none = ctx.upload::<i32>(&[]).unwrap();
        ctx.segreduce_csr(&none, &empty, false, &mut out, &Op::plus())
            .unwrap();

        // Indirect: sources past the end, wrong number of sources, bad offsets.
        let sources_case = |offsets: &[u32], sources: &[u32], ok: Result<&[i32], &str>| {
            let what = format!("{ctx:?} offsets {offsets:?} sources {sources:?}");
            let o = ctx.upload(offsets).unwrap();
            let s = ctx.upload(sources).unwrap();
            let mut out = poisoned::<i32>(&ctx, offsets.len());
            let res = ctx.segreduce_csr_indirect(&values, &o, &s, true, &mut out, &Op::plus());
            match ok {
                Ok(sums) => {
                    res.unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(out.to_vec().unwrap(), sums, "{what}");
                }
                Err(needle) => {
                    expect_invalid(res.unwrap_err(), &["segreduce_csr_indirect", needle], &what);
                    check(
                        &out.to_vec().unwrap(),
                        &vec![i32::poison(); offsets.len()],
                        &format!("{what}: written on error"),
                    );
                    still_usable(&ctx, &what);
                }
            }
        };
        sources_case(
            &[0, 3, 6],
            &[0, 8, 2],
            Err("sources[1] = 8 with segment 1's length 3 reads past the end of the values (10 elements)"),
        );
        sources_case(&[0, 3, 6], &[0, 7, 6], Ok(&[6, 27, 34]));
        sources_case(
            &[0, 3, 6],
            &[0, 7, 7],
            Err("sources[2] = 7 with segment 2's length 4"),
        );
        sources_case(&[0, 3, 6], &[11, 70, 7], Err("sources[0] = 11"));
        // An empty segment may start at the end, not past it.
        sources_case(&[0, 3, 3], &[0, 10, 3], Ok(&[6, 0, 49]));
        sources_case(&[0, 3, 3, 10], &[0, 0, 11, 0], Err("sources[2] = 11"));
        sources_case(&[0, 3], &[0, 0, 0], Err("3 sources for 2 segments"));
        sources_case(
            &[0, 3, 2],
            &[0, 0, 11],
            Err("offsets[2] = 2 is less than offsets[1] = 3"),
        );
        let o = ctx.upload(&[0u32, 2, 2]).unwrap();
        let s = ctx.upload(&[0u32, 0, 0]).unwrap();
        let mut out = poisoned::<i32>(&ctx, 3);
        let e = ctx
            .segreduce_csr_indirect(&values, &o, &s, false, &mut out, &Op::plus())
            .unwrap_err();
        expect_invalid(e, &["offsets[2] = 2 equals offsets[1]"], "indirect strict");
        check(
            &out.to_vec().unwrap(),
            &[i32::poison(); 3],
            "indirect strict",
        );

        // SpMV: columns, matrix length, offsets, sources.
        let x = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let offs = ctx.upload(&[0u32, 2]).unwrap();
        let bad_cols = ctx.upload(&[0u32, 1, 5, 2]).unwrap();
        let good_cols = ctx.upload(&[0u32, 1, 4, 2]).unwrap();
        let m4 = ctx.upload(&[1.0f32, 1.0, 1.0, 1.0]).unwrap();
        let m3 = ctx.upload(&[1.0f32, 1.0, 1.0]).unwrap();
        let (mul, add) = (Op::multiplies(), Op::plus());
        let mut y = poisoned::<f32>(&ctx, 2);
        let spmv_poison = |y: &mgpu::Buffer<f32>, what: &str| {
            check(&y.to_vec().unwrap(), &[f32::poison(); 2], what);
            still_usable(&ctx, what);
        };
        let e = ctx
            .spmv_csr(&m4, &bad_cols, &offs, &x, &mut y, false, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "spmv_csr",
                "cols[2] = 5 is not less than the vector's length 5",
            ],
            "spmv cols",
        );
        spmv_poison(&y, "spmv cols");
        let e = ctx
            .spmv_csr_unary(&bad_cols, &offs, &x, &mut y, false, &add)
            .unwrap_err();
        expect_invalid(e, &["spmv_csr_unary", "cols[2] = 5"], "spmv unary cols");
        spmv_poison(&y, "spmv unary cols");
        let e = ctx
            .spmv_csr(&m3, &good_cols, &offs, &x, &mut y, false, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["3 matrix values for 4 column indices"],
            "spmv matrix len",
        );
        spmv_poison(&y, "spmv matrix len");
        let srcs = ctx.upload(&[0u32, 3]).unwrap();
        let e = ctx
            .spmv_csr_indirect(&m4, &good_cols, &offs, &srcs, &x, &mut y, false, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "spmv_csr_indirect",
                "sources[1] = 3 with segment 1's length 2",
            ],
            "spmv sources",
        );
        spmv_poison(&y, "spmv sources");
        let e = ctx
            .spmv_csr_indirect_unary(&bad_cols, &offs, &offs, &x, &mut y, false, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["spmv_csr_indirect_unary", "cols[2] = 5"],
            "spmv indirect cols",
        );
        spmv_poison(&y, "spmv indirect cols");
        let bad_offs = ctx.upload(&[0u32, 4]).unwrap();
        let e = ctx
            .spmv_csr(&m4, &good_cols, &bad_offs, &x, &mut y, false, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["offsets[1] = 4 is the end of the input (4 positions)"],
            "spmv offs",
        );
        spmv_poison(&y, "spmv offs");
        let mut y3 = poisoned::<f32>(&ctx, 3);
        let e = ctx
            .spmv_csr(&m4, &good_cols, &offs, &x, &mut y3, false, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["the output holds 3 elements for 2 segments"],
            "spmv y len",
        );
        check(&y3.to_vec().unwrap(), &[f32::poison(); 3], "spmv y len");
        // Plans check columns; the apply checks lengths.
        let e = ctx
            .spmv_plan::<f32, u32>(&bad_cols, &offs, 5, false)
            .unwrap_err();
        expect_invalid(e, &["spmv_plan", "cols[2] = 5"], "spmv plan cols");
        let e = ctx
            .spmv_plan::<f32, u32>(&good_cols, &bad_offs, 5, false)
            .unwrap_err();
        expect_invalid(e, &["spmv_plan", "offsets[1] = 4"], "spmv plan offs");
        let plan = ctx
            .spmv_plan::<f32, u32>(&good_cols, &offs, 5, false)
            .unwrap();
        let e = ctx
            .spmv_apply(&plan, &m3, &x, &mut y, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["spmv_apply: 3 matrix values for a plan of 4 nonzeros"],
            "spmv apply matrix",
        );
        spmv_poison(&y, "spmv apply matrix");
        let x4 = ctx.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
        let e = ctx
            .spmv_apply(&plan, &m4, &x4, &mut y, &mul, &add)
            .unwrap_err();
        expect_invalid(e, &["the vector holds 4 elements"], "spmv apply x");
        spmv_poison(&y, "spmv apply x");
        ctx.spmv_apply(&plan, &m4, &x, &mut y, &mul, &add).unwrap();
        assert_eq!(y.to_vec().unwrap(), [3.0, 8.0]);
    }
}

/// The first bad index among many, far apart (on the GPU: found by different blocks).
#[test]
fn first_bad_index_among_many() {
    for ctx in backends() {
        let k = 300_000usize;
        let count = 5 * k as u64;
        let good: Vec<u64> = (0..k as u64).map(|i| 5 * i).collect();
        let values = ctx.upload(&vec![1u8; count as usize]).unwrap();
        let run = |offsets: &[u64], support_empty: bool, needle: &str| {
            let what = format!("{ctx:?} many offsets: {needle}");
            let o = ctx.upload(&to_o::<u32>(offsets)).unwrap();
            let mut out = poisoned::<u8>(&ctx, k);
            let e = ctx
                .segreduce_csr(&values, &o, support_empty, &mut out, &Op::plus())
                .unwrap_err();
            expect_invalid(e, &[needle], &what);
            check(&out.to_vec().unwrap(), &vec![u8::poison(); k], &what);
            let o = ctx.upload(offsets).unwrap();
            let e = ctx
                .segreduce_csr(&values, &o, support_empty, &mut out, &Op::plus())
                .unwrap_err();
            expect_invalid(e, &[needle], &what);
            check(&out.to_vec().unwrap(), &vec![u8::poison(); k], &what);
        };
        let mut o = good.clone();
        o[150_001] = o[150_000] - 1;
        o[180_000] = 2 * count;
        o[299_999] = o[299_998];
        run(
            &o,
            false,
            "offsets[150001] = 749999 is less than offsets[150000] = 750000",
        );
        run(&o, true, "offsets[150001] = 749999 is less than");
        let mut o = good.clone();
        o[250_000] = o[249_999];
        o[260_000] = o[259_999] - 3;
        run(
            &o,
            false,
            "offsets[250000] = 1249995 equals offsets[249999]",
        );
        run(
            &o,
            true,
            "offsets[260000] = 1299992 is less than offsets[259999] = 1299995",
        );
        let mut o = good.clone();
        o[0] = 1;
        o[1] = 0;
        o[200_000] = 0;
        run(&o, true, "offsets[0] = 1");
        let mut o = good.clone();
        o[k - 1] = count;
        run(
            &o,
            false,
            &format!("offsets[{}] = {count} is the end", k - 1),
        );
        let mut o = good.clone();
        o[k - 1] = count + 1;
        o[k - 2] = count;
        run(
            &o,
            true,
            &format!("offsets[{}] = {} is past the end", k - 1, count + 1),
        );

        // Sources: the first bad one.
        let o = ctx.upload(&to_o::<u32>(&good)).unwrap();
        let mut s: Vec<u32> = (0..k as u32)
            .map(|i| (i * 7) % (count as u32 - 4))
            .collect();
        s[77_777] = count as u32 - 4;
        s[99_999] = count as u32;
        s[k - 1] = count as u32;
        let sb = ctx.upload(&s).unwrap();
        let mut out = poisoned::<u8>(&ctx, k);
        let e = ctx
            .segreduce_csr_indirect(&values, &o, &sb, false, &mut out, &Op::plus())
            .unwrap_err();
        expect_invalid(
            e,
            &[&format!(
                "sources[77777] = {} with segment 77777's length 5 reads past the end of the values ({count} elements)",
                count - 4
            )],
            "many sources",
        );
        check(
            &out.to_vec().unwrap(),
            &vec![u8::poison(); k],
            "many sources",
        );

        // Columns: the first bad one.
        let nnz = count as usize;
        let x = ctx.upload(&vec![1.0f32; 1000]).unwrap();
        let mut cols: Vec<u32> = (0..nnz as u32).map(|i| i % 1000).collect();
        cols[1_000_001] = 1000;
        cols[1_400_000] = u32::MAX;
        cols[nnz - 1] = 5000;
        let cb = ctx.upload(&cols).unwrap();
        let mut y = poisoned::<f32>(&ctx, k);
        let e = ctx
            .spmv_csr_unary(&cb, &o, &x, &mut y, false, &Op::plus())
            .unwrap_err();
        expect_invalid(
            e,
            &["cols[1000001] = 1000 is not less than the vector's length 1000"],
            "many cols",
        );
        check(&y.to_vec().unwrap(), &vec![f32::poison(); k], "many cols");
        // Offsets are checked before columns.
        let mut bad = good.clone();
        bad[123_456] = bad[123_455];
        let ob = ctx.upload(&to_o::<u32>(&bad)).unwrap();
        let e = ctx
            .spmv_csr_unary(&cb, &ob, &x, &mut y, false, &Op::plus())
            .unwrap_err();
        expect_invalid(e, &["offsets[123456]"], "offsets before cols");
        still_usable(&ctx, "many");
    }
}

// ---------------------------------------------------------------------------------------------
// Run-to-run stability.

/// Runs `f` 10 times; every run must give `expect`'s bits (a race shows as a result that
/// changes, or a wrong one).
fn repeat_exact<T: Element>(what: &str, expect: &[T], mut f: impl FnMut() -> Vec<T>) {
    for i in 0..10 {
        check(&f(), expect, &format!("{what}: run {i}"));
    }
}

/// The same large input reduced 10 times: with exactly associative data (small-integer floats,
/// wrapping integers, Affine) every run must give the reference's bits, directly, indirectly,
/// through a plan and in SpMV. Floats with fractions are only checked to be close to the f64 sums
/// each run: the look-back combines tiles in the order it finds them, so a segment spanning
/// several tiles may be associated differently from run to run (as ScanAlgorithm::LookBack
/// documents for the scan); how many runs differ is printed.
#[test]
fn run_to_run_stability() {
    let mut r = rng();
    for ctx in backends() {
        let n = if ctx.is_gpu() { 3 << 20 } else { 50_000 };
        for dist in [Dist::PowerLaw, Dist::HalfEmpty, Dist::Uniform(5000)] {
            let what = format!("{ctx:?} stability {dist:?}");
            let lengths = gen_lengths(&mut r, n, dist, 1);
            let (offsets, _) = offsets_of(&lengths);
            let k = offsets.len();
            let o = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
            let mut out = ctx.zeros::<f32>(k).unwrap();

            let v: Vec<f32> = random_vec(&mut r, n);
            let vb = ctx.upload(&v).unwrap();
            let expect = reference(&offsets, n, None, |m| v[m], &Op::plus());
            repeat_exact(&format!("{what} f32"), &expect, || {
                ctx.segreduce_csr(&vb, &o, true, &mut out, &Op::plus())
                    .unwrap();
                out.to_vec().unwrap()
            });
            let plan = ctx.segreduce_plan::<f32, u32>(&o, n, true).unwrap();
            repeat_exact(&format!("{what} f32 plan"), &expect, || {
                ctx.segreduce_apply(&plan, &vb, &mut out, &Op::plus())
                    .unwrap();
                out.to_vec().unwrap()
            });
            let sources = random_sources(&mut r, &offsets, n, n);
            let sb = ctx.upload(&to_o::<u32>(&sources)).unwrap();
            let expect = reference(&offsets, n, Some(&sources), |m| v[m], &Op::plus());
            repeat_exact(&format!("{what} f32 indirect"), &expect, || {
                ctx.segreduce_csr_indirect(&vb, &o, &sb, true, &mut out, &Op::plus())
                    .unwrap();
                out.to_vec().unwrap()
            });
            let x: Vec<f32> = (0..1000).map(|_| r.random_range(0..2) as f32).collect();
            let xb = ctx.upload(&x).unwrap();
            let cols: Vec<u32> = (0..n).map(|_| r.random_range(0..1000)).collect();
            let cb = ctx.upload(&cols).unwrap();
            let csr = Csr {
                offsets: offsets.clone(),
                cols,
                x_len: 1000,
            };
            let (mul, add) = (Op::multiplies(), Op::plus());
            let expect = csr.product(None, Some(&v), &x, &mul, &add);
            repeat_exact(&format!("{what} spmv"), &expect, || {
                ctx.spmv_csr(&vb, &cb, &o, &xb, &mut out, true, &mul, &add)
                    .unwrap();
                out.to_vec().unwrap()
            });

            let a: Vec<Affine> = random_vec(&mut r, n);
            let ab = ctx.upload(&a).unwrap();
            let expect = reference(&offsets, n, None, |m| a[m], &affine_op());
            let mut aout = ctx.zeros::<Affine>(k).unwrap();
            repeat_exact(&format!("{what} affine"), &expect, || {
                ctx.segreduce_csr(&ab, &o, true, &mut aout, &affine_op())
                    .unwrap();
                aout.to_vec().unwrap()
            });
            let w: Vec<i64> = random_vec(&mut r, n);
            let wb = ctx.upload(&w).unwrap();
            let expect = reference(&offsets, n, None, |m| w[m], &Op::plus());
            let mut wout = ctx.zeros::<i64>(k).unwrap();
            repeat_exact(&format!("{what} i64"), &expect, || {
                ctx.segreduce_csr(&wb, &o, true, &mut wout, &Op::plus())
                    .unwrap();
                wout.to_vec().unwrap()
            });

            // Fractions: close to the f64 sums every run.
            let f: Vec<f32> = (0..n).map(|_| r.random_range(0.0f32..1.0)).collect();
            let fb = ctx.upload(&f).unwrap();
            let exact = reference(&offsets, n, None, |m| f[m] as f64, &Op::plus());
            let mut runs: Vec<Vec<f32>> = Vec::new();
            for i in 0..10 {
                ctx.segreduce_csr(&fb, &o, true, &mut out, &Op::plus())
                    .unwrap();
                let got = out.to_vec().unwrap();
                for (s, (&g, &e)) in got.iter().zip(&exact).enumerate() {
                    assert!(
                        (g as f64 - e).abs() <= 1e-3 * e.abs() + 1e-3,
                        "{what} fractions run {i}: segment {s}: {g} vs {e}"
                    );
                }
                runs.push(got);
            }
            let differing = runs.iter().filter(|g| same(g, &runs[0]).is_err()).count();
            let segs = (0..k)
                .filter(|&s| runs.iter().any(|g| g[s].to_bits() != runs[0][s].to_bits()))
                .count();
            eprintln!(
                "{what}: f32 with fractions: {differing} of 10 runs differ from the first, in \
                 {segs} of {k} segments (last bits)"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// More than 2^32 values (GPU, MGPU_BIG=1), and the same checks at a small size everywhere.

/// sum of (i % 251) for i < m.
fn pattern_prefix(m: u64) -> u64 {
    (m / 251) * (250 * 251 / 2) + (m % 251) * (m % 251).saturating_sub(1) / 2
}

/// sum of i for a <= i < b, mod 2^64.
fn counting_sum(a: u64, b: u64) -> u64 {
    let (a, b) = (a as u128, b as u128);
    if b <= a {
        return 0;
    }
    ((a + b - 1) * (b - a) / 2) as u64
}

/// Segment boundaries over `n` positions: `k` random ones, around 2^31 and 2^32 where they lie
/// inside, some repeated (empty segments), the last one at `n` (an empty last segment).
fn big_offsets(r: &mut StdRng, n: u64, k: usize) -> Vec<u64> {
    let mut o = vec![0u64];
    for _ in 0..k {
        o.push(r.random_range(0..n));
    }
    for c in [1u64 << 31, 1 << 32] {
        if c + 1 < n {
            o.extend([c - 1, c, c + 1]);
        }
    }
    o.push(n);
    o.sort();
    let dups: Vec<u64> = o.iter().step_by(17).copied().collect();
    o.extend(dups);
    o.sort();
    o
}

/// `values[i] = i % 251` (u8) over `n` positions, in `buf`; reduced by u64 offsets as u8
/// (wrapping), widened to u64 by a map, and by a plan over a counting u64 source; all checked
/// against closed forms.
fn big_pattern(ctx: &Context, r: &mut StdRng, n: usize, k: usize) {
    let what = format!("{ctx:?} n={n}");
    let chunk: usize = 251 << 20;
    let pattern: Vec<u8> = (0..chunk.min(n.div_ceil(251) * 251))
        .map(|i| (i % 251) as u8)
        .collect();
    let mut buf = ctx.zeros::<u8>(n).unwrap();
    let mut at = 0;
    while at < n {
        let len = pattern.len().min(n - at);
        buf.slice_mut(at..at + len)
            .copy_from_host(&pattern[..len])
            .unwrap();
        at += len;
    }
    drop(pattern);
    let offsets = big_offsets(r, n as u64, k);
    let segs = offsets.len();
    let ends: Vec<(u64, u64)> = (0..segs)
        .map(|i| (offsets[i], offsets.get(i + 1).copied().unwrap_or(n as u64)))
        .collect();
    let ob = ctx.upload(&offsets).unwrap();

    let mut out = poisoned::<u8>(ctx, segs);
    ctx.segreduce_csr(&buf, &ob, true, &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} u8: {e}"));
    let expect: Vec<u8> = ends
        .iter()
        .map(|&(a, b)| (pattern_prefix(b) - pattern_prefix(a)) as u8)
        .collect();
    check(&out.to_vec().unwrap(), &expect, &format!("{what} u8"));

    let widen = Map::new("widen_u8", |x: u8| x as u64, "(unsigned long long)x");
    let expect: Vec<u64> = ends
        .iter()
        .map(|&(a, b)| pattern_prefix(b) - pattern_prefix(a))
        .collect();
    let mut out = poisoned::<u64>(ctx, segs);
    ctx.segreduce_csr(&buf.map(&widen), &ob, true, &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} widened: {e}"));
    check(&out.to_vec().unwrap(), &expect, &format!("{what} widened"));

    let plan = ctx.segreduce_plan::<u64, u64>(&ob, n, true).unwrap();
    let mut out = poisoned::<u64>(ctx, segs);
    ctx.segreduce_apply(&plan, &buf.map(&widen), &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} widened plan: {e}"));
    check(
        &out.to_vec().unwrap(),
        &expect,
        &format!("{what} widened plan"),
    );

    let expect: Vec<u64> = ends.iter().map(|&(a, b)| counting_sum(a, b)).collect();
    let mut out = poisoned::<u64>(ctx, segs);
    ctx.segreduce_apply(&plan, &Counting::new(0u64, n), &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} counting plan: {e}"));
    check(
        &out.to_vec().unwrap(),
        &expect,
        &format!("{what} counting plan"),
    );

    // One segment over everything but the first item, which is its own: without support_empty.
    let o2 = ctx.upload(&[0u64, 1]).unwrap();
    let mut out = poisoned::<u64>(ctx, 2);
    ctx.segreduce_csr(&buf.map(&widen), &o2, false, &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} one segment: {e}"));
    check(
        &out.to_vec().unwrap(),
        &[0, pattern_prefix(n as u64)],
        &format!("{what} one segment"),
    );
    // Indirect (the segments must cover all n positions): the last 1000 values (past 2^32 on
    // the big run), a window from the middle, a random one, an empty one, and the rest read from
    // near the start.
    let lens = [1000u64, 251 * 3, 1, 0, n as u64 - 1754];
    let io: Vec<u64> = offsets_of(&lens.map(|l| l as usize)).0;
    let src: Vec<u64> = lens
        .iter()
        .enumerate()
        .map(|(i, &l)| match i {
            0 => n as u64 - l,
            1 => n as u64 / 2 - 400,
            _ => r.random_range(0..=n as u64 - l),
        })
        .collect();
    let expect: Vec<u64> = (0..lens.len())
        .map(|i| pattern_prefix(src[i] + lens[i]) - pattern_prefix(src[i]))
        .collect();
    let iob = ctx.upload(&io).unwrap();
    let sb = ctx.upload(&src).unwrap();
    let mut out = poisoned::<u64>(ctx, lens.len());
    ctx.segreduce_csr_indirect(&buf.map(&widen), &iob, &sb, true, &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} indirect: {e}"));
    check(&out.to_vec().unwrap(), &expect, &format!("{what} indirect"));
}

#[test]
fn closed_form_patterns_at_small_sizes() {
    assert_eq!(pattern_prefix(0), 0);
    assert_eq!(pattern_prefix(1), 0);
    assert_eq!(pattern_prefix(3), 3);
    assert_eq!(pattern_prefix(252), 250 * 251 / 2);
    assert_eq!(
        pattern_prefix(1000),
        (0..1000u64).map(|i| i % 251).sum::<u64>()
    );
    assert_eq!(counting_sum(3, 6), 12);
    let mut r = rng();
    for ctx in backends() {
        for n in [2000, 300_007] {
            big_pattern(&ctx, &mut r, n, 300);
        }
    }
}

#[test]
fn past_2_pow_32_values_on_gpu() {
    if std::env::var("MGPU_BIG").as_deref() != Ok("1") {
        eprintln!("skipped: set MGPU_BIG=1 to run (needs about 5 GB of GPU memory)");
        return;
    }
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    big_pattern(&ctx, &mut r, (1 << 32) + 1000, 300);
}

/// u32 offsets whose largest start is `u32::MAX` (over `u32::MAX` positions and past 2^32;
/// a counting source, so no memory), some segments empty: such a start is a real segment, not
/// "no segment".
#[test]
fn u32_offsets_starting_at_u32_max() {
    let Some(ctx) = gpu() else { return };
    let m = u32::MAX as u64;
    for (n, offsets) in [
        (m, vec![0u64, 1 << 31, m, m]),
        (m, vec![0, m - 1, m]),
        (m, vec![0, 5, 5, m - 3000, m, m, m]),
        (m + 1, vec![0, m]),
        (m + 5000, vec![0, 7, m - 1, m]),
        (m + 5000, vec![0, m, m]),
    ] {
        let what = format!("{n} positions, offsets {offsets:?}");
        let ob = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
        let expect: Vec<u64> = (0..offsets.len())
            .map(|i| counting_sum(offsets[i], offsets.get(i + 1).copied().unwrap_or(n)))
            .collect();
        let mut out = poisoned::<u64>(&ctx, offsets.len());
        let values = Counting::new(0u64, n as usize);
        ctx.segreduce_csr(&values, &ob, true, &mut out, &Op::plus())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&out.to_vec().unwrap(), &expect, &what);
    }
}
