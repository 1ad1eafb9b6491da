//! segreduce_csr: the seed's golden demo; every segment-length distribution at sizes around the
//! tile and multi-tile sizes, for i32, u8 (wrapping), i64, u64, f32, f64, Affine (order checked)
//! and Tagged, with maximum / minimum and custom operators and u32 / u64 offsets; segments of many
//! tiles; count = 0 with and without segments (direct, indirect, plans, SpMV).

use super::*;

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
        ctx.segreduce_csr(
            &values,
            Csr::new(&offsets).with_empty(support_empty),
            &mut out,
            &Op::plus(),
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(out.to_vec().unwrap(), DEMO_SUMS, "{what} ({support_empty})");
    }
    // Indirect with sources = the offsets is the direct reduction.
    let mut out = poisoned::<i32>(ctx, 7);
    ctx.segreduce_csr_indirect(
        &values,
        Csr::new(&offsets),
        &offsets,
        values.len(),
        &mut out,
        &Op::plus(),
    )
    .unwrap();
    assert_eq!(out.to_vec().unwrap(), DEMO_SUMS, "{what} indirect");
    // A plan.
    let plan = ctx
        .segreduce_plan::<i32, O>(Csr::new(&offsets), 100)
        .unwrap();
    assert_eq!((plan.num_segments(), plan.count()), (7, 100), "{what}");
    let mut out = poisoned::<i32>(ctx, 7);
    ctx.segreduce_apply(&plan, &values, &mut out, &Op::plus())
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), DEMO_SUMS, "{what} plan");
    // Unary SpMV with the values as the vector and cols = 0..100 is the same reduction.
    let cols: Vec<u32> = (0..100).collect();
    let cols = ctx.upload(&cols).unwrap();
    let mut y = poisoned::<i32>(ctx, 7);
    ctx.spmv_csr_unary(&cols, Csr::new(&offsets), &values, &mut y, &Op::plus())
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
        let nvs = seg_tiles::<T, O>(&ctx);
        for n in test_sizes(&ctx, &mut r, &nvs) {
            let values: Vec<T> = (0..n).map(|_| gen(&mut r)).collect();
            let vbuf = ctx.upload(&values).unwrap();
            for &dist in dists {
                let nv = dist_tile(dist, &nvs);
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
                    ctx.segreduce_csr(
                        &vbuf,
                        Csr::new(&obuf).with_empty(support_empty),
                        &mut out,
                        op,
                    )
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
        let nv = dist_tile(Dist::ManyTiles, &seg_tiles::<i32, u32>(&ctx));
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
                ctx.segreduce_csr(
                    &vbuf,
                    Csr::new(&obuf).with_empty(support_empty),
                    &mut out,
                    &Op::plus(),
                )
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
                ctx.segreduce_csr(
                    &abuf,
                    Csr::new(&obuf).with_empty(support_empty),
                    &mut out,
                    &affine_op(),
                )
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

/// The carry across thousands of tiles, a thousand to each of the spine's CTAs on the
/// look-back: sizes of 2,048, 4,096 and 8,192 tiles and one more, segments that cross tiles (short
/// and long, one, half empty), for records of four sizes (4-, 8- and 12-byte values, and 8-byte
/// ones with 8-byte alignment), a commutative operator and two that are not.
#[test]
fn carries_across_thousands_of_tiles() {
    carries_at_tile_counts::<i32>(&Op::plus(), i32::random);
    carries_at_tile_counts::<i64>(&add_mod_prime(), |r: &mut StdRng| r.random_range(0..PRIME));
    carries_at_tile_counts::<Affine>(&affine_op(), Affine::random);
    carries_at_tile_counts::<Tagged>(&tagged_op(), Tagged::random);
}

fn carries_at_tile_counts<T: TestElement>(op: &Op<T>, gen: impl Fn(&mut StdRng) -> T) {
    let mut r = rng();
    for ctx in backends() {
        if !ctx.is_gpu() {
            continue; // the CPU backend has no tiles
        }
        let nvs = seg_tiles::<T, u32>(&ctx);
        for (tiles, dist) in [2048, 4096, 8192]
            .into_iter()
            .flat_map(|t| [Dist::ShortAndLong, Dist::One, Dist::HalfEmpty].map(|d| (t, d)))
        {
            let nv = dist_tile(dist, &nvs);
            for n in [tiles * nv, tiles * nv + 1] {
                let values: Vec<T> = (0..n).map(|_| gen(&mut r)).collect();
                let vbuf = ctx.upload(&values).unwrap();
                let what = format!("{} {} n={n} nv={nv} {dist:?}", T::CUDA_TYPE, op.name());
                let lengths = gen_lengths(&mut r, n, dist, nv);
                let (offsets, _) = offsets_of(&lengths);
                let expect = reference(&offsets, n, None, |m| values[m], op);
                let obuf = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
                let csr = Csr::new(&obuf).with_empty(lengths.contains(&0));
                let mut out = poisoned::<T>(&ctx, offsets.len());
                ctx.segreduce_csr(&vbuf, csr, &mut out, op)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                check(&out.to_vec().unwrap(), &expect, &what);
            }
        }
    }
}

/// One-shots over segments that must not be empty, short on average: runs of 128 segments of 1,
/// 2, 8 or 9 positions, and now and then one of several tiles. Then a bad offset, decreasing or
/// past the count, at a random place: named, nothing written, and the next call on the stream
/// is right.
#[test]
fn one_shot_short_segments_then_a_bad_offset() {
    let mut r = rng();
    for ctx in backends() {
        let nvs = seg_tiles::<i32, u32>(&ctx);
        let mut sizes = vec![1, 2, 127, 129, 1025];
        for &nv in &nvs {
            sizes.extend([nv - 1, nv, nv + 1, 7 * nv + 3]);
        }
        let nv = *nvs.last().unwrap(); // (mean lengths of 5: long segments' tiles)
        if ctx.is_gpu() {
            sizes.extend([(1 << 22) + 5, (1 << 24) + 3]);
        }
        for n in sizes {
            let values: Vec<i32> = random_vec(&mut r, n);
            let vbuf = ctx.upload(&values).unwrap();
            let mut lengths = Vec::new();
            let mut left = n;
            while left > 0 {
                let len = match r.random_range(0..40) {
                    0 => r.random_range(nv..3 * nv),
                    k => [1, 2, 8, 9][k % 4],
                };
                for _ in 0..128 {
                    let len = len.min(left);
                    if len > 0 {
                        lengths.push(len);
                        left -= len;
                    }
                }
            }
            let (offsets, _) = offsets_of(&lengths);
            let what = format!("{ctx:?} n={n} segments={}", offsets.len());
            let expect = reference(&offsets, n, None, |m| values[m], &Op::plus());
            let obuf = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
            let mut out = poisoned::<i32>(&ctx, offsets.len());
            ctx.segreduce_csr(&vbuf, Csr::new(&obuf), &mut out, &Op::plus())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&out.to_vec().unwrap(), &expect, &what);
            if offsets.len() < 2 {
                continue;
            }
            let place = r.random_range(1..offsets.len());
            let mut bad = offsets.clone();
            let needle = if bad[place - 1] > 0 && r.random_bool(0.5) {
                bad[place] = bad[place - 1].saturating_sub(1 + r.random_range(0..3));
                format!("offsets[{place}] = {} is less than", bad[place])
            } else {
                bad[place] = n as u64 + r.random_range(0..3);
                format!("offsets[{place}] = {}", bad[place])
            };
            expect_rejected::<u32>(&ctx, &vbuf, &bad, &needle, &what);
            let mut out = poisoned::<i32>(&ctx, offsets.len());
            ctx.segreduce_csr(&vbuf, Csr::new(&obuf), &mut out, &Op::plus())
                .unwrap_or_else(|e| panic!("{what}, after the bad offsets: {e}"));
            check(&out.to_vec().unwrap(), &expect, &what);
        }
    }
}

/// A one-shot sum over `bad` offsets: the error names `needle`, and the output keeps its poison.
fn expect_rejected<O: TestOffset>(
    ctx: &Context,
    values: &mgpu::Buffer<i32>,
    bad: &[u64],
    needle: &str,
    what: &str,
) {
    let offsets = ctx.upload(&to_o::<O>(bad)).unwrap();
    let mut out = poisoned::<i32>(ctx, bad.len());
    let e = ctx
        .segreduce_csr(values, Csr::new(&offsets), &mut out, &Op::plus())
        .unwrap_err();
    expect_invalid(e, &[needle], what);
    check(
        &out.to_vec().unwrap(),
        &vec![i32::poison(); bad.len()],
        what,
    );
}

/// Segments of one length (the last one shorter), whose one-shot takes its starts from the
/// checks' finding, not the offsets; and near misses that must not: one segment a position
/// longer or shorter anywhere (the first, the last but one, inside), the last one longer than
/// the others, a bad offset (named, nothing written). u32 and u64 offsets, sizes around the
/// tile; each checked against the reference, the checked calls and the unchecked ones.
#[test]
fn one_shot_fixed_lengths_and_near_misses() {
    fixed_lengths_and_near_misses::<u32>();
    fixed_lengths_and_near_misses::<u64>();
}

fn fixed_lengths_and_near_misses<O: TestOffset>() {
    let mut r = rng();
    for ctx in backends() {
        let nvs = seg_tiles::<i32, O>(&ctx);
        let mut sizes = vec![1, 2, 3];
        let mut strides = vec![1, 2, 3, 23, 64, 100];
        for &nv in &nvs {
            sizes.extend([nv - 1, nv, nv + 1, 7 * nv + 3]);
            strides.extend([nv - 1, nv, nv + 1, 3 * nv + 5]);
        }
        if ctx.is_gpu() {
            sizes.extend([(1 << 20) + 7, (1 << 24) + 3]);
        }
        for n in sizes {
            let values: Vec<i32> = random_vec(&mut r, n);
            let vbuf = ctx.upload(&values).unwrap();
            for &stride in &strides {
                if stride > n || (n > 1 << 22 && stride > 3) {
                    continue;
                }
                let fixed: Vec<usize> = (0..n.div_ceil(stride))
                    .map(|i| stride.min(n - i * stride))
                    .collect();
                let mut cases = vec![("fixed", fixed.clone())];
                let k = fixed.len();
                if k >= 2 {
                    // One segment a position longer or shorter, the last one making up for it.
                    let place = [0, k - 2, r.random_range(0..k - 1)][r.random_range(0..3)];
                    let mut off = fixed.clone();
                    if off[place] > 1 && r.random_bool(0.5) {
                        off[place] -= 1;
                        off[k - 1] += 1;
                    } else if off[k - 1] > 1 {
                        off[place] += 1;
                        off[k - 1] -= 1;
                    }
                    cases.push(("one off", off));
                    // The last segment longer than the others.
                    let mut long_last = fixed[..k - 1].to_vec();
                    long_last[k - 2] += fixed[k - 1];
                    if k >= 3 {
                        cases.push(("long last", long_last));
                    }
                }
                for (case, lengths) in cases {
                    let (offsets, count) = offsets_of(&lengths);
                    assert_eq!(count, n);
                    let what = format!("{ctx:?} {} n={n} stride={stride} {case}", O::CUDA_TYPE);
                    let expect = reference(&offsets, n, None, |m| values[m], &Op::plus());
                    let obuf = ctx.upload(&to_o::<O>(&offsets)).unwrap();
                    let mut out = poisoned::<i32>(&ctx, offsets.len());
                    ctx.segreduce_csr(&vbuf, Csr::new(&obuf), &mut out, &Op::plus())
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    check(&out.to_vec().unwrap(), &expect, &what);
                    let mut out = poisoned::<i32>(&ctx, offsets.len());
                    // SAFETY: the offsets increase from 0 and stay below the values' length.
                    unsafe {
                        ctx.segreduce_csr_unchecked(&vbuf, Csr::new(&obuf), &mut out, &Op::plus())
                    }
                    .unwrap_or_else(|e| panic!("{what}, unchecked: {e}"));
                    check(
                        &out.to_vec().unwrap(),
                        &expect,
                        &format!("{what}, unchecked"),
                    );
                    if case != "fixed" || offsets.len() < 2 {
                        continue;
                    }
                    // A repeated offset (an empty segment) or one past the count, anywhere.
                    let place = r.random_range(1..offsets.len());
                    let mut bad = offsets.clone();
                    let needle = if r.random_bool(0.5) {
                        bad[place] = bad[place - 1];
                        format!("offsets[{place}] = {} equals", bad[place])
                    } else {
                        bad[place] = n as u64 + 1;
                        format!("offsets[{place}] = {}", bad[place])
                    };
                    expect_rejected::<O>(&ctx, &vbuf, &bad, &needle, &what);
                }
            }
        }
    }
}

/// One stream's one-shots in turn: geometries where every tile holds a segment start (the spine
/// completes continued tiles from their neighbours) and where some tile lies inside one segment
/// (the look-back), with rejected calls between them, checked and unchecked, on a non-commutative
/// operator: each call's findings start clean, whatever the call before found.
#[test]
fn one_shots_in_turn_start_from_clean_findings() {
    let mut r = rng();
    for ctx in backends() {
        let nv = dist_tile(Dist::ManyTiles, &seg_tiles::<Affine, u32>(&ctx));
        let n = if ctx.is_gpu() {
            40 * nv + 11
        } else {
            5 * nv + 11
        };
        let values: Vec<Affine> = random_vec(&mut r, n);
        let vbuf = ctx.upload(&values).unwrap();
        // Every tile holds a start (segments of up to half a tile), then long segments (3 to 20
        // tiles: some tiles hold none), then short ones again.
        let short = Dist::Uniform(nv / 4);
        let dists = [short, Dist::ManyTiles, short, Dist::PowerLaw, short];
        // On the GPU, 150 calls: the stream's ring of 64 findings records comes round twice.
        let repeats = if ctx.is_gpu() { 10 } else { 1 };
        for (round, dist) in std::iter::repeat_n(dists, repeats).flatten().enumerate() {
            let lengths = gen_lengths(&mut r, n, dist, nv);
            let (offsets, _) = offsets_of(&lengths);
            let expect = reference(&offsets, n, None, |m| values[m], &affine_op());
            let obuf = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
            let what = format!("{ctx:?} round {round} {dist:?}");
            let mut out = poisoned::<Affine>(&ctx, offsets.len());
            ctx.segreduce_csr(&vbuf, Csr::allow_empty(&obuf), &mut out, &affine_op())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&out.to_vec().unwrap(), &expect, &what);
            let mut out = poisoned::<Affine>(&ctx, offsets.len());
            // SAFETY: offsets_of builds valid offsets over n values; empty segments are allowed.
            unsafe {
                ctx.segreduce_csr_unchecked(&vbuf, Csr::allow_empty(&obuf), &mut out, &affine_op())
            }
            .unwrap_or_else(|e| panic!("{what} unchecked: {e}"));
            check(
                &out.to_vec().unwrap(),
                &expect,
                &format!("{what} unchecked"),
            );
            // A decreasing offset in the middle: rejected, nothing written.
            let mut bad = to_o::<u32>(&offsets);
            let at = bad.len() / 2;
            if at > 0 && bad[at - 1] > 0 {
                bad[at] = bad[at - 1] - 1;
                let bbuf = ctx.upload(&bad).unwrap();
                let mut out = poisoned::<Affine>(&ctx, offsets.len());
                let e = ctx
                    .segreduce_csr(&vbuf, Csr::allow_empty(&bbuf), &mut out, &affine_op())
                    .unwrap_err();
                expect_invalid(e, &[&format!("offsets[{at}]")], &what);
                check(
                    &out.to_vec().unwrap(),
                    &vec![Affine::poison(); offsets.len()],
                    &format!("{what}: written on error"),
                );
            }
        }
    }
}

/// Threads taking turns on one stream, each with its own geometries, good and bad, one-shot and
/// unchecked: a call's findings record is its own even where the stream's ring of them comes
/// round while other calls hold theirs.
#[test]
fn one_shots_from_threads_on_one_stream() {
    let mut r = rng();
    for ctx in backends() {
        let nv = dist_tile(Dist::ManyTiles, &seg_tiles::<i64, u32>(&ctx));
        let calls = if ctx.is_gpu() { 60 } else { 3 };
        let seeds: Vec<u64> = (0..4).map(|_| r.random()).collect();
        std::thread::scope(|s| {
            for (t, &seed) in seeds.iter().enumerate() {
                let ctx = &ctx;
                s.spawn(move || {
                    use rand::SeedableRng;
                    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
                    for call in 0..calls {
                        let n = r.random_range(1..6 * nv);
                        let values: Vec<i64> = random_vec(&mut r, n);
                        let dist = [Dist::Uniform(nv / 4), Dist::ManyTiles][call % 2];
                        let lengths = gen_lengths(&mut r, n, dist, nv);
                        let (offsets, _) = offsets_of(&lengths);
                        let what = format!("{ctx:?} thread {t} call {call} n={n} {dist:?}");
                        let expect = reference(&offsets, n, None, |m| values[m], &Op::plus());
                        let vbuf = ctx.upload(&values).unwrap();
                        let mut o32 = to_o::<u32>(&offsets);
                        if call % 3 == 2 {
                            // Not starting at 0, or past the values: rejected, nothing written.
                            let at = r.random_range(0..o32.len());
                            o32[at] = if at == 0 { 1 } else { n as u32 + 1 };
                            let obuf = ctx.upload(&o32).unwrap();
                            let mut out = poisoned::<i64>(ctx, o32.len());
                            let e = ctx
                                .segreduce_csr(
                                    &vbuf,
                                    Csr::allow_empty(&obuf),
                                    &mut out,
                                    &Op::plus(),
                                )
                                .unwrap_err();
                            expect_invalid(e, &[&format!("offsets[{at}]")], &what);
                            check(
                                &out.to_vec().unwrap(),
                                &vec![i64::poison(); o32.len()],
                                &format!("{what}: written on error"),
                            );
                            continue;
                        }
                        let obuf = ctx.upload(&o32).unwrap();
                        let mut out = poisoned::<i64>(ctx, offsets.len());
                        if call % 3 == 1 {
                            // SAFETY: offsets_of builds valid offsets over n values.
                            unsafe {
                                ctx.segreduce_csr_unchecked(
                                    &vbuf,
                                    Csr::allow_empty(&obuf),
                                    &mut out,
                                    &Op::plus(),
                                )
                            }
                            .unwrap_or_else(|e| panic!("{what} unchecked: {e}"));
                        } else {
                            ctx.segreduce_csr(
                                &vbuf,
                                Csr::allow_empty(&obuf),
                                &mut out,
                                &Op::plus(),
                            )
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                        }
                        check(&out.to_vec().unwrap(), &expect, &what);
                    }
                });
            }
        });
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
        ctx.segreduce_csr(&values, Csr::allow_empty(&offsets), &mut out, op)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&out.to_vec().unwrap(), &expect, &what);
        let mut out = poisoned::<T>(ctx, k);
        ctx.segreduce_csr(&values, Csr::allow_empty(&wide), &mut out, op)
            .unwrap_or_else(|e| panic!("{what} u64: {e}"));
        check(&out.to_vec().unwrap(), &expect, &format!("{what} u64"));
        let mut out = poisoned::<T>(ctx, k);
        ctx.segreduce_csr_indirect(
            &values,
            Csr::allow_empty(&offsets),
            &offsets,
            values.len(),
            &mut out,
            op,
        )
        .unwrap_or_else(|e| panic!("{what} indirect: {e}"));
        check(&out.to_vec().unwrap(), &expect, &format!("{what} indirect"));
        let plan = ctx
            .segreduce_plan::<T, u64>(Csr::allow_empty(&wide), 0)
            .unwrap();
        let mut out = poisoned::<T>(ctx, k);
        ctx.segreduce_apply(&plan, &values, &mut out, op)
            .unwrap_or_else(|e| panic!("{what} plan: {e}"));
        check(&out.to_vec().unwrap(), &expect, &format!("{what} plan"));
        if k > 0 {
            // Without support_empty: offsets[0] = 0 is the end of the (empty) input.
            let mut out = poisoned::<T>(ctx, k);
            let e = ctx
                .segreduce_csr(&values, Csr::new(&offsets), &mut out, op)
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
                Csr::allow_empty(&offsets),
                &x,
                &mut y,
                &Op::multiplies(),
                &Op::plus(),
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&y.to_vec().unwrap(), &vec![0.0; k], &what);
            let mut y = poisoned::<f64>(&ctx, k);
            ctx.spmv_csr_unary(
                &cols,
                Csr::allow_empty(&offsets),
                &x,
                &mut y,
                &Op::maximum(),
            )
            .unwrap_or_else(|e| panic!("{what}: {e}"));
            check(&y.to_vec().unwrap(), &vec![f64::NEG_INFINITY; k], &what);
        }
    }
}
