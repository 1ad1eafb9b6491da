//! reduce_by_key_with: the single-pass and preprocessed algorithms agree with the serial reference;
//! the preprocessed one's errors, views and compile errors.

use super::*;

const RBK_ALGORITHMS: [ReduceByKeyAlgorithm; 2] = [
    ReduceByKeyAlgorithm::SinglePass,
    ReduceByKeyAlgorithm::Preprocessed,
];

/// One `reduce_by_key_with` call against the serial reference: poisoned outputs (nothing past
/// the count), the count delivered as `mode` says, the inputs unchanged.
#[allow(clippy::too_many_arguments)]
fn check_rbk_algorithm<V: TestElement>(
    ctx: &Context,
    keys: &[i32],
    values: &[V],
    op: &Op<V>,
    reference: impl Fn(V, V) -> V,
    algorithm: ReduceByKeyAlgorithm,
    mode: Mode,
    what: &str,
) {
    let n = keys.len();
    let what = format!(
        "{what} {algorithm:?} {} {} {mode:?}",
        V::CUDA_TYPE,
        op.name()
    );
    let (rk, rv) = reduce_runs(keys, values, i32::same_run, reference);
    let kin = ctx.upload(keys).unwrap();
    let vin = ctx.upload(values).unwrap();
    let mut kout = ctx.upload(&vec![i32::MIN; n + 3]).unwrap();
    let mut vout = ctx.upload(&vec![V::poison(); n + 2]).unwrap();
    let c = counted(ctx, mode, &what, |c| {
        ctx.reduce_by_key_with(
            &kin,
            &vin,
            &mut kout,
            &mut vout,
            &i32::equality(),
            op,
            c,
            algorithm,
        )
    });
    check_count(c, rk.len(), &what);
    check_written(
        &kout.to_vec().unwrap(),
        &rk,
        i32::MIN,
        &format!("{what}: keys"),
    );
    check_written(
        &vout.to_vec().unwrap(),
        &rv,
        V::poison(),
        &format!("{what}: values"),
    );
    same(&kin.to_vec().unwrap(), keys).unwrap_or_else(|e| panic!("{what}: keys input: {e}"));
    same(&vin.to_vec().unwrap(), values).unwrap_or_else(|e| panic!("{what}: values input: {e}"));
}

/// Both algorithms give the serial result: i32 keys (the custom equality `a / 10 == b / 10`)
/// with i64 sums, f32 sums and the non-commutative affine composition; sizes 0, 1, 2, around
/// the compaction and segmented-reduction tiles, and past 100 000; one run, runs of mean length
/// 1 (all distinct), 2, 10, 500 and runs across tile edges; every count destination.
#[test]
fn reduce_by_key_algorithms_agree() {
    let mut r = rng();
    for ctx in backends() {
        let mut tiles = vec![run_tile(&ctx, 8), run_tile(&ctx, 12)];
        tiles.extend(seg_tiles::<i64, u32>(&ctx));
        tiles.extend(seg_tiles::<f32, u32>(&ctx));
        let mut sizes = vec![0, 1, 2];
        for &t in &tiles {
            sizes.extend([t - 1, t, t + 1, 2 * t + 1]);
        }
        sizes.push(100_003);
        sizes.push(r.random_range(100_000..160_000));
        if ctx.is_gpu() {
            sizes.push(MULTI_TILE);
        }
        sizes.sort();
        sizes.dedup();
        let mut case = 0;
        for &n in &sizes {
            for pat in RUN_PATTERNS {
                let keys = run_keys::<i32>(&mut r, n, pat, &tiles);
                let wide = random_vec::<i64>(&mut r, n);
                let floats = random_vec::<f32>(&mut r, n);
                let affine = random_vec::<Affine>(&mut r, n);
                let what = format!("{ctx:?} n={n} {pat:?}");
                for algorithm in RBK_ALGORITHMS {
                    let mode = |i: usize| MODES[(case + i) % MODES.len()];
                    let plus = |a: i64, b: i64| a.wrapping_add(b);
                    check_rbk_algorithm(
                        &ctx,
                        &keys,
                        &wide,
                        &Op::plus(),
                        plus,
                        algorithm,
                        mode(0),
                        &what,
                    );
                    check_rbk_algorithm(
                        &ctx,
                        &keys,
                        &floats,
                        &Op::plus(),
                        |a, b| a + b,
                        algorithm,
                        mode(1),
                        &what,
                    );
                    check_rbk_algorithm(
                        &ctx,
                        &keys,
                        &affine,
                        &affine_op(),
                        compose,
                        algorithm,
                        mode(2),
                        &what,
                    );
                    case += 1;
                }
            }
        }
    }
}

/// The preprocessed algorithm checks what the single pass checks, with the same messages, before
/// anything is written (outputs and the count's buffer untouched).
#[test]
fn reduce_by_key_preprocessed_errors_write_nothing() {
    let preprocessed = ReduceByKeyAlgorithm::Preprocessed;
    for ctx in backends() {
        let w = |s: &str| format!("{ctx:?} preprocessed {s}");
        let eq = i32::equality();
        let input = ctx.upload(&[1, 4, 4, 2, 7]).unwrap();
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();

        for algorithm in RBK_ALGORITHMS {
            let what = w(&format!("{algorithm:?} values of another length"));
            for len in [4, 6] {
                let vals = ctx.upload(&vec![1i64; len]).unwrap();
                let e = ctx
                    .reduce_by_key_with(
                        &input,
                        &vals,
                        &mut kout,
                        &mut vout,
                        &eq,
                        &Op::plus(),
                        Count::Both(&mut count),
                        algorithm,
                    )
                    .unwrap_err();
                let needle = format!("{len} values for 5 keys");
                expect_invalid(e, &["reduce_by_key", &needle], &what);
            }
        }
        let vals = ctx.upload(&[1i64, 2, 3, 4, 5]).unwrap();
        let mut kshort = ctx.upload(&[i32::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key_with(
                &input,
                &vals,
                &mut kshort,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Device(&mut count),
                preprocessed,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "reduce_by_key",
                "the keys' output holds 4 elements but the input has 5",
            ],
            &w("keys' output"),
        );
        assert_eq!(kshort.to_vec().unwrap(), [i32::MIN; 4], "{}", w("written"));
        let mut vshort = ctx.upload(&[i64::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key_with(
                &input,
                &vals,
                &mut kout,
                &mut vshort,
                &eq,
                &Op::plus(),
                Count::Host,
                preprocessed,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "reduce_by_key",
                "the values' output holds 4 elements but the input has 5",
            ],
            &w("values' output"),
        );
        assert_eq!(vshort.to_vec().unwrap(), [i64::MIN; 4], "{}", w("written"));
        let mut empty = ctx.zeros::<u64>(0).unwrap();
        let e = ctx
            .reduce_by_key_with(
                &input,
                &vals,
                &mut kout,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Device(&mut empty),
                preprocessed,
            )
            .unwrap_err();
        expect_invalid(e, &["needs room for one element"], &w("empty count"));
        // Arguments of another backend.
        let other = if ctx.is_gpu() {
            Context::cpu()
        } else {
            match gpu() {
                Some(g) => g,
                None => Context::cpu(),
            }
        };
        if other.is_gpu() != ctx.is_gpu() {
            let foreign = other.upload(&[1i64, 2, 3, 4, 5]).unwrap();
            let e = ctx
                .reduce_by_key_with(
                    &input,
                    &foreign,
                    &mut kout,
                    &mut vout,
                    &eq,
                    &Op::plus(),
                    Count::Host,
                    preprocessed,
                )
                .unwrap_err();
            expect_invalid(e, &["the values"], &w("values of another backend"));
        }
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5], "{}", w("written"));
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6], "{}", w("written"));
        assert_eq!(
            count.to_vec().unwrap(),
            [COUNT_POISON],
            "{}",
            w("count written")
        );
        still_usable(&ctx, &w("after the errors"));
    }
}

/// The preprocessed algorithm on views at unaligned offsets, with the count in the middle of a
/// buffer: the runs land in the views only.
#[test]
fn reduce_by_key_preprocessed_on_views() {
    let mut r = rng();
    for ctx in backends() {
        let mut tiles = vec![compact_tile(&ctx, 12)];
        tiles.extend(seg_tiles::<i64, u32>(&ctx));
        let mut sizes = vec![5, tiles[0] + 3];
        sizes.extend(tiles[1..].iter().map(|t| 3 * t + 1));
        for n in sizes {
            let keys = run_keys::<i32>(&mut r, n + 3, Runs::Mean(4), &tiles);
            let values = random_vec::<i64>(&mut r, n + 1);
            let (rk, rv) = reduce_runs(&keys[3..], &values[1..], i32::same_run, i64::wrapping_add);
            let what = format!("{ctx:?} views n={n}");
            let kin = ctx.upload(&keys).unwrap();
            let vin = ctx.upload(&values).unwrap();
            let mut kout = ctx.upload(&vec![i32::MIN; n + 2]).unwrap();
            let mut vout = ctx.upload(&vec![i64::MIN; n + 5]).unwrap();
            let c = counted(&ctx, Mode::Both, &what, |c| {
                ctx.reduce_by_key_with(
                    &kin.slice(3..),
                    &vin.slice(1..),
                    &mut kout.slice_mut(1..n + 1),
                    &mut vout.slice_mut(3..),
                    &i32::equality(),
                    &Op::plus(),
                    c,
                    ReduceByKeyAlgorithm::Preprocessed,
                )
            });
            check_count(c, rk.len(), &what);
            let k = kout.to_vec().unwrap();
            assert_eq!(k[0], i32::MIN, "{what}: written before the keys' view");
            check_written(&k[1..], &rk, i32::MIN, &format!("{what}: keys"));
            let v = vout.to_vec().unwrap();
            assert_eq!(
                v[..3],
                [i64::MIN; 3],
                "{what}: written before the values' view"
            );
            check_written(&v[3..], &rv, i64::MIN, &format!("{what}: values"));
        }
    }
}

/// On the GPU, an equality that does not compile fails before anything is written; an operator
/// that does not compile fails after the keys' output was written (documented), the values'
/// output and the count untouched. (The CPU backend runs the Rust side only.)
#[test]
fn reduce_by_key_preprocessed_compile_errors() {
    let broken_eq = Equality::new("broken", |a: &i32, b: &i32| a == b, "a +* b");
    let broken_op = Op::new("broken_rbk", 0i64, |a, b| a + b, "a +* b");
    for ctx in backends() {
        let input = ctx.upload(&[3, 3, 4, 6, 6, 6]).unwrap();
        let values = ctx.upload(&[1i64; 6]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 6]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
        let eq_result = ctx.reduce_by_key_with(
            &input,
            &values,
            &mut kout,
            &mut vout,
            &broken_eq,
            &Op::plus(),
            Count::Device(&mut count),
            ReduceByKeyAlgorithm::Preprocessed,
        );
        if !ctx.is_gpu() {
            assert_eq!(eq_result.unwrap(), None, "the CPU backend does not compile");
            continue;
        }
        assert!(
            matches!(eq_result, Err(Error::Compile { .. })),
            "broken equality: {eq_result:?}"
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 6], "broken equality");
        let op_result = ctx.reduce_by_key_with(
            &input,
            &values,
            &mut kout,
            &mut vout,
            &Equality::equal_to(),
            &broken_op,
            Count::Device(&mut count),
            ReduceByKeyAlgorithm::Preprocessed,
        );
        assert!(
            matches!(op_result, Err(Error::Compile { .. })),
            "broken operator: {op_result:?}"
        );
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6], "broken operator");
        assert_eq!(count.to_vec().unwrap(), [COUNT_POISON], "no count written");
        still_usable(&ctx, "after compile errors");
    }
}
