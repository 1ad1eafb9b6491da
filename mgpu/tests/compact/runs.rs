//! Runs: unique, unique_by_key, run_length_encode, non_trivial_runs and reduce_by_key, in place
//! and out of place, for every element type and run pattern; NaN and signed zeros; values and
//! lengths of several types; user struct keys and values.

use super::*;

fn check_runs<T: Case>(ctx: &Context, r: &mut StdRng, keys: &[T], case: usize, what: &str) {
    let n = keys.len();
    let p = T::sentinel();
    let eq = T::equality();
    let mode = |i: usize| MODES[(case + i) % MODES.len()];
    let heads = run_heads(keys, T::same_run);
    let (unique_keys, _) = split(keys, &heads);
    let runs = unique_keys.len();
    let input = ctx.upload(keys).unwrap();

    // unique.
    let what_p = format!("{what} unique");
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(0), &what_p, |c| {
        ctx.unique(&input, &mut out, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_written(&out.to_vec().unwrap(), &unique_keys, p, &what_p);

    let what_p = format!("{what} unique_in_place");
    let mut buf = ctx.upload(keys).unwrap();
    let c = counted(ctx, mode(1), &what_p, |c| {
        ctx.unique_in_place(&mut buf, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &unique_keys, &what_p);

    // unique_by_key: the values are the positions, so which item of a run was kept shows.
    let positions: Vec<u32> = (0..n as u32).collect();
    let (head_positions, _) = split(&positions, &heads);
    let pos_buf = ctx.upload(&positions).unwrap();
    let what_p = format!("{what} unique_by_key");
    let mut kout = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut vout = ctx.upload(&vec![u32::MAX; n + 2]).unwrap();
    let c = counted(ctx, mode(2), &what_p, |c| {
        ctx.unique_by_key(&input, &pos_buf, &mut kout, &mut vout, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_written(
        &kout.to_vec().unwrap(),
        &unique_keys,
        p,
        &format!("{what_p}: keys"),
    );
    check_written(
        &vout.to_vec().unwrap(),
        &head_positions,
        u32::MAX,
        &format!("{what_p}: values"),
    );

    let what_p = format!("{what} unique_by_key_in_place");
    let mut kbuf = ctx.upload(keys).unwrap();
    let mut vbuf = ctx.upload(&positions).unwrap();
    let c = counted(ctx, mode(3), &what_p, |c| {
        ctx.unique_by_key_in_place(&mut kbuf, &mut vbuf, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_prefix(
        &kbuf.to_vec().unwrap(),
        &unique_keys,
        &format!("{what_p}: keys"),
    );
    check_prefix(
        &vbuf.to_vec().unwrap(),
        &head_positions,
        &format!("{what_p}: values"),
    );

    // run_length_encode, lengths in u32.
    let lengths_ref: Vec<u32> = head_lengths(&heads);
    let what_p = format!("{what} run_length_encode");
    let mut uout = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut lout = ctx.upload(&vec![u32::MAX; n + 3]).unwrap();
    let c = counted(ctx, mode(4), &what_p, |c| {
        ctx.run_length_encode(&input, &mut uout, &mut lout, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_written(
        &uout.to_vec().unwrap(),
        &unique_keys,
        p,
        &format!("{what_p}: runs"),
    );
    check_written(
        &lout.to_vec().unwrap(),
        &lengths_ref,
        u32::MAX,
        &format!("{what_p}: lengths"),
    );

    let what_p = format!("{what} run_length_encode_in_place");
    let mut buf = ctx.upload(keys).unwrap();
    let mut lout = ctx.upload(&vec![u32::MAX; n + 1]).unwrap();
    let c = counted(ctx, mode(5), &what_p, |c| {
        ctx.run_length_encode_in_place(&mut buf, &mut lout, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_prefix(
        &buf.to_vec().unwrap(),
        &unique_keys,
        &format!("{what_p}: runs"),
    );
    check_written(
        &lout.to_vec().unwrap(),
        &lengths_ref,
        u32::MAX,
        &format!("{what_p}: lengths"),
    );

    // non_trivial_runs: offset and length of every run longer than one, in u32 and u64.
    let mut nt_offsets: Vec<u64> = Vec::new();
    let mut nt_lengths: Vec<u64> = Vec::new();
    let mut start = 0usize;
    for i in 0..n {
        if i + 1 == n || heads[i + 1] {
            if i > start {
                nt_offsets.push(start as u64);
                nt_lengths.push((i + 1 - start) as u64);
            }
            start = i + 1;
        }
    }
    let what_p = format!("{what} non_trivial_runs");
    let mut oout = ctx.upload(&vec![u32::MAX; n / 2 + 2]).unwrap();
    let mut lout = ctx.upload(&vec![u32::MAX; n / 2 + 1]).unwrap();
    let c = counted(ctx, mode(8), &what_p, |c| {
        ctx.non_trivial_runs(&input, &mut oout, &mut lout, &eq, c)
    });
    check_count(c, nt_offsets.len(), &what_p);
    let narrow = |v: &[u64]| v.iter().map(|&x| x as u32).collect::<Vec<u32>>();
    check_written(
        &oout.to_vec().unwrap(),
        &narrow(&nt_offsets),
        u32::MAX,
        &format!("{what_p}: offsets"),
    );
    check_written(
        &lout.to_vec().unwrap(),
        &narrow(&nt_lengths),
        u32::MAX,
        &format!("{what_p}: lengths"),
    );
    let mut oout = ctx.upload(&vec![u64::MAX; n / 2 + 1]).unwrap();
    let mut lout = ctx.upload(&vec![u64::MAX; n / 2 + 3]).unwrap();
    let c = ctx
        .non_trivial_runs(&input, &mut oout, &mut lout, &eq, Count::Host)
        .unwrap();
    check_count(c, nt_offsets.len(), &what_p);
    check_written(&oout.to_vec().unwrap(), &nt_offsets, u64::MAX, &what_p);
    check_written(&lout.to_vec().unwrap(), &nt_lengths, u64::MAX, &what_p);

    // reduce_by_key with the non-commutative affine composition: the in-order fold per run.
    let values = random_vec::<Affine>(r, n);
    let (rk, rv) = reduce_runs(keys, &values, T::same_run, compose);
    assert_eq!(rk, unique_keys);
    let vals = ctx.upload(&values).unwrap();
    let what_p = format!("{what} reduce_by_key");
    let mut kout = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut vout = ctx.upload(&vec![Affine::poison(); n + 2]).unwrap();
    let c = counted(ctx, mode(6), &what_p, |c| {
        ctx.reduce_by_key(&input, &vals, &mut kout, &mut vout, &eq, &affine_op(), c)
    });
    check_count(c, runs, &what_p);
    check_written(&kout.to_vec().unwrap(), &rk, p, &format!("{what_p}: keys"));
    check_written(
        &vout.to_vec().unwrap(),
        &rv,
        Affine::poison(),
        &format!("{what_p}: values"),
    );

    let what_p = format!("{what} reduce_by_key_in_place");
    let mut kbuf = ctx.upload(keys).unwrap();
    let mut vbuf = ctx.upload(&values).unwrap();
    let c = counted(ctx, mode(7), &what_p, |c| {
        ctx.reduce_by_key_in_place(&mut kbuf, &mut vbuf, &eq, &affine_op(), c)
    });
    check_count(c, runs, &what_p);
    check_prefix(&kbuf.to_vec().unwrap(), &rk, &format!("{what_p}: keys"));
    check_prefix(&vbuf.to_vec().unwrap(), &rv, &format!("{what_p}: values"));

    same(&input.to_vec().unwrap(), keys).unwrap_or_else(|e| panic!("{what}: input: {e}"));
    same(&vals.to_vec().unwrap(), &values).unwrap_or_else(|e| panic!("{what}: values: {e}"));
}

fn runs_suite<T: Case>() {
    let mut r = rng();
    let size = std::mem::size_of::<T>();
    for ctx in backends() {
        let item_bytes = [size, size + 4, size + 8];
        let tiles: Vec<usize> = item_bytes
            .iter()
            .flat_map(|&b| [compact_tile(&ctx, b), run_tile(&ctx, b)])
            .collect();
        let mut case = 0;
        for n in test_sizes(&ctx, &mut r, &item_bytes) {
            for pat in RUN_PATTERNS {
                let keys = run_keys::<T>(&mut r, n, pat, &tiles);
                let runs = run_heads(&keys, T::same_run).iter().filter(|&&h| h).count();
                match pat {
                    Runs::One => assert_eq!(runs, n.min(1), "the generator's pattern"),
                    Runs::Mean(1) => assert_eq!(runs, n, "the generator's pattern"),
                    _ => {}
                }
                let what = format!("{ctx:?} {} n={n} {pat:?}", T::CUDA_TYPE);
                check_runs(&ctx, &mut r, &keys, case, &what);
                case += 1;
            }
        }
    }
}

per_type!(runs_suite:
    runs_i32_custom_equality: i32,
    runs_u8: u8,
    runs_i64: i64,
    runs_u64: u64,
    runs_f32_signed_zeros: f32,
    runs_f64_custom_equality: f64,
    runs_user_struct: Tagged,
);

/// `Equality::equal_to()` on floats: each NaN is a run of its own, -0.0 and 0.0 are one run (its
/// first item is the one kept, bit for bit).
#[test]
fn nan_and_signed_zero_runs() {
    let nan = f32::NAN;
    let keys = [
        nan, nan, 1.0, -0.0, 0.0, 0.0, -0.0, nan, 2.0, 2.0, 0.0, -0.0,
    ];
    let expect_keys = [nan, nan, 1.0, -0.0, nan, 2.0, 0.0];
    let expect_lengths = [1u32, 1, 1, 4, 1, 2, 2];
    let values: Vec<i32> = (1..=12).collect();
    let expect_sums = [1, 2, 3, 4 + 5 + 6 + 7, 8, 9 + 10, 11 + 12];
    let eq = Equality::<f32>::equal_to();
    let mut r = rng();
    for ctx in backends() {
        let input = ctx.upload(&keys).unwrap();
        let mut out = ctx.upload(&[f32::sentinel(); 12]).unwrap();
        let c = ctx.unique(&input, &mut out, &eq, Count::Host).unwrap();
        assert_eq!(c, Some(7), "{ctx:?}");
        check_written(
            &out.to_vec().unwrap(),
            &expect_keys,
            f32::sentinel(),
            "unique",
        );
        let mut lengths = ctx.upload(&[u32::MAX; 12]).unwrap();
        let mut out = ctx.upload(&[f32::sentinel(); 12]).unwrap();
        let c = ctx
            .run_length_encode(&input, &mut out, &mut lengths, &eq, Count::Host)
            .unwrap();
        assert_eq!(c, Some(7), "{ctx:?}");
        check_written(&lengths.to_vec().unwrap(), &expect_lengths, u32::MAX, "rle");
        let vals = ctx.upload(&values).unwrap();
        let mut k = ctx.upload(&[f32::sentinel(); 12]).unwrap();
        let mut v = ctx.upload(&[i32::MAX; 12]).unwrap();
        let c = ctx
            .reduce_by_key(&input, &vals, &mut k, &mut v, &eq, &Op::plus(), Count::Host)
            .unwrap();
        assert_eq!(c, Some(7), "{ctx:?}");
        check_written(
            &k.to_vec().unwrap(),
            &expect_keys,
            f32::sentinel(),
            "rbk keys",
        );
        check_written(&v.to_vec().unwrap(), &expect_sums, i32::MAX, "rbk values");

        // Random keys from {NaN, -0.0, 0.0, 1.0} in runs across tiles, f32 and f64.
        let (tile, runs) = (compact_tile(&ctx, 8), run_tile(&ctx, 8));
        for n in [
            tile - 1,
            tile + 1,
            3 * tile + 7,
            runs - 1,
            2 * runs + 1,
            if ctx.is_gpu() { MULTI_TILE } else { 20_000 },
        ] {
            let keys: Vec<f32> = (0..n)
                .map(|_| [f32::NAN, -0.0, 0.0, 1.0][r.random_range(0..4)])
                .collect();
            let values = random_vec::<i32>(&mut r, n);
            let heads = run_heads(&keys, |a, b| a == b);
            let (uk, _) = split(&keys, &heads);
            let (_, sums) = reduce_runs(&keys, &values, |a, b| a == b, i32::wrapping_add);
            let what = format!("{ctx:?} f32 NaN/zeros n={n}");
            let input = ctx.upload(&keys).unwrap();
            let mut out = ctx.upload(&vec![f32::sentinel(); n]).unwrap();
            let c = ctx.unique(&input, &mut out, &eq, Count::Host).unwrap();
            check_count(c, uk.len(), &what);
            check_written(&out.to_vec().unwrap(), &uk, f32::sentinel(), &what);
            let mut kbuf = ctx.upload(&keys).unwrap();
            let mut vbuf = ctx.upload(&values).unwrap();
            let c = ctx
                .reduce_by_key_in_place(&mut kbuf, &mut vbuf, &eq, &Op::plus(), Count::Host)
                .unwrap();
            check_count(c, uk.len(), &what);
            check_prefix(&kbuf.to_vec().unwrap(), &uk, &format!("{what} rbk keys"));
            check_prefix(&vbuf.to_vec().unwrap(), &sums, &format!("{what} rbk sums"));

            let keys64: Vec<f64> = keys.iter().map(|&x| x as f64).collect();
            let (uk64, _) = split(&keys64, &heads);
            let input = ctx.upload(&keys64).unwrap();
            let mut out = ctx.upload(&vec![f64::sentinel(); n]).unwrap();
            let mut lengths = ctx.upload(&vec![u64::MAX; n]).unwrap();
            let c = ctx
                .run_length_encode(
                    &input,
                    &mut out,
                    &mut lengths,
                    &Equality::equal_to(),
                    Count::Host,
                )
                .unwrap();
            check_count(c, uk64.len(), &what);
            check_written(&out.to_vec().unwrap(), &uk64, f64::sentinel(), &what);
            let expect_lengths: Vec<u64> = head_lengths(&heads);
            check_written(&lengths.to_vec().unwrap(), &expect_lengths, u64::MAX, &what);
        }
    }
}

/// Reduce-by-key with values of every type and several operators (built-in and user,
/// commutative or not); run-length encoding with lengths of several types.
#[test]
fn reduce_by_key_value_types() {
    fn one<V: TestElement>(ctx: &Context, keys: &[i32], values: &[V], op: &Op<V>, what: &str) {
        let n = keys.len();
        let eq = i32::equality();
        let what = format!("{what} {} {}", V::CUDA_TYPE, op.name());
        let (rk, rv) = reduce_runs(keys, values, i32::same_run, |a, b| op.apply(a, b));
        let kin = ctx.upload(keys).unwrap();
        let vin = ctx.upload(values).unwrap();
        let mut kout = ctx.upload(&vec![i32::MIN; n + 1]).unwrap();
        let mut vout = ctx.upload(&vec![V::poison(); n + 1]).unwrap();
        let c = ctx
            .reduce_by_key(&kin, &vin, &mut kout, &mut vout, &eq, op, Count::Host)
            .unwrap();
        check_count(c, rk.len(), &what);
        check_written(&kout.to_vec().unwrap(), &rk, i32::MIN, &what);
        check_written(&vout.to_vec().unwrap(), &rv, V::poison(), &what);
        let mut kbuf = ctx.upload(keys).unwrap();
        let mut vbuf = ctx.upload(values).unwrap();
        let c = counted(ctx, Mode::Device, &what, |c| {
            ctx.reduce_by_key_in_place(&mut kbuf, &mut vbuf, &eq, op, c)
        });
        check_count(c, rk.len(), &format!("{what} in place"));
        check_prefix(&kbuf.to_vec().unwrap(), &rk, &format!("{what} in place"));
        check_prefix(&vbuf.to_vec().unwrap(), &rv, &format!("{what} in place"));
    }
    fn lengths<L: TestElement + Arithmetic>(ctx: &Context, keys: &[i32], what: &str) {
        let n = keys.len();
        let heads = run_heads(keys, i32::same_run);
        let (uk, _) = split(keys, &heads);
        let expect: Vec<L> = head_lengths(&heads);
        let what = format!("{what} rle lengths {}", L::CUDA_TYPE);
        let mut buf = ctx.upload(keys).unwrap();
        let mut lout = ctx.upload(&vec![L::poison(); n + 2]).unwrap();
        let c = ctx
            .run_length_encode_in_place(&mut buf, &mut lout, &i32::equality(), Count::Host)
            .unwrap();
        check_count(c, uk.len(), &what);
        check_prefix(&buf.to_vec().unwrap(), &uk, &what);
        check_written(&lout.to_vec().unwrap(), &expect, L::poison(), &what);
    }
    let mut r = rng();
    for ctx in backends() {
        let tiles = [run_tile(&ctx, 5), run_tile(&ctx, 12), run_tile(&ctx, 16)];
        let mut ns = vec![1, 2];
        for t in tiles {
            ns.extend([t - 1, t, t + 1, 2 * t + 1]);
        }
        ns.push(if ctx.is_gpu() { MULTI_TILE } else { 25_013 });
        for n in ns {
            for pat in [Runs::Mean(3), Runs::Mean(200), Runs::TileEdges] {
                let keys = run_keys::<i32>(&mut r, n, pat, &tiles);
                let what = format!("{ctx:?} n={n} {pat:?}");
                let (k, w) = (&keys, &what);
                one(&ctx, k, &random_vec::<i32>(&mut r, n), &Op::plus(), w);
                one(&ctx, k, &random_vec::<u8>(&mut r, n), &Op::maximum(), w);
                one(&ctx, k, &random_vec::<i64>(&mut r, n), &Op::minimum(), w);
                one(&ctx, k, &random_vec::<f32>(&mut r, n), &Op::plus(), w);
                one(&ctx, k, &random_vec::<f64>(&mut r, n), &Op::plus(), w);
                one(&ctx, k, &random_vec::<u64>(&mut r, n), &Op::bit_xor(), w);
                one(&ctx, k, &random_vec::<Tagged>(&mut r, n), &tagged_op(), w);
                let small: Vec<i64> = (0..n).map(|_| r.random_range(0..PRIME)).collect();
                one(&ctx, &keys, &small, &add_mod_prime(), &what);
                lengths::<u64>(&ctx, &keys, &what);
                lengths::<i32>(&ctx, &keys, &what);
                lengths::<f32>(&ctx, &keys, &what);
            }
        }
    }
}

/// User struct keys and user struct values: Tagged keys grouped by `a`, Affine values composed
/// in order.
#[test]
fn reduce_by_key_user_keys_and_values() {
    let mut r = rng();
    for ctx in backends() {
        let tiles = [run_tile(&ctx, 20)];
        for n in [
            1,
            tiles[0] - 1,
            tiles[0] + 1,
            5 * tiles[0],
            if ctx.is_gpu() { MULTI_TILE } else { 9000 },
        ] {
            for pat in [Runs::One, Runs::Mean(1), Runs::Mean(7), Runs::TileEdges] {
                let keys = run_keys::<Tagged>(&mut r, n, pat, &tiles);
                let values = random_vec::<Affine>(&mut r, n);
                let (rk, rv) = reduce_runs(&keys, &values, Tagged::same_run, compose);
                let what = format!("{ctx:?} Tagged/Affine n={n} {pat:?}");
                let mut kbuf = ctx.upload(&keys).unwrap();
                let mut vbuf = ctx.upload(&values).unwrap();
                let c = ctx
                    .reduce_by_key_in_place(
                        &mut kbuf,
                        &mut vbuf,
                        &Tagged::equality(),
                        &affine_op(),
                        Count::Host,
                    )
                    .unwrap();
                check_count(c, rk.len(), &what);
                check_prefix(&kbuf.to_vec().unwrap(), &rk, &what);
                check_prefix(&vbuf.to_vec().unwrap(), &rv, &what);
            }
        }
    }
}
