//! Selection and partition: select_if, select_flagged, partition_if, partition_copy,
//! partition_in_place, in place and out of place, for every element type and selection pattern;
//! flags of other types.

use super::*;

fn check_selection<T: Case>(
    ctx: &Context,
    r: &mut StdRng,
    data: &[T],
    pred: &Predicate<T>,
    case: usize,
    what: &str,
) {
    let n = data.len();
    let p = T::sentinel();
    let keep: Vec<bool> = data.iter().map(T::keep).collect();
    let (kept, rejected) = split(data, &keep);
    let k = kept.len();
    let mode = |i: usize| MODES[(case + i) % MODES.len()];
    let input = ctx.upload(data).unwrap();

    // select_if.
    let what_p = format!("{what} select_if");
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(0), &what_p, |c| {
        ctx.select_if(&input, &mut out, pred, c)
    });
    check_count(c, k, &what_p);
    check_written(&out.to_vec().unwrap(), &kept, p, &what_p);

    let what_p = format!("{what} select_if_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let c = counted(ctx, mode(1), &what_p, |c| {
        ctx.select_if_in_place(&mut buf, pred, c)
    });
    check_count(c, k, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &kept, &what_p);

    // select_flagged: u8 flags, any non-zero value selects.
    let flags: Vec<u8> = keep
        .iter()
        .map(|&k| if k { r.random_range(1..=255) } else { 0 })
        .collect();
    let flag_buf = ctx.upload(&flags).unwrap();
    let what_p = format!("{what} select_flagged");
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(2), &what_p, |c| {
        ctx.select_flagged(&input, &flag_buf, &mut out, c)
    });
    check_count(c, k, &what_p);
    check_written(&out.to_vec().unwrap(), &kept, p, &what_p);

    let what_p = format!("{what} select_flagged_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let c = counted(ctx, mode(3), &what_p, |c| {
        ctx.select_flagged_in_place(&mut buf, &flag_buf, c)
    });
    check_count(c, k, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &kept, &what_p);

    // partition_if: the selected in order, then the rejected in reverse order; all n written.
    let what_p = format!("{what} partition_if");
    let mut expect = kept.clone();
    expect.extend(rejected.iter().rev());
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(4), &what_p, |c| {
        ctx.partition_if(&input, &mut out, pred, c)
    });
    check_count(c, k, &what_p);
    check_written(&out.to_vec().unwrap(), &expect, p, &what_p);

    // partition_copy: both groups in order, each written exactly.
    let what_p = format!("{what} partition_copy");
    let mut yes = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut no = ctx.upload(&vec![p; n + 2]).unwrap();
    let c = counted(ctx, mode(5), &what_p, |c| {
        ctx.partition_copy(&input, &mut yes, &mut no, pred, c)
    });
    check_count(c, k, &what_p);
    check_written(
        &yes.to_vec().unwrap(),
        &kept,
        p,
        &format!("{what_p}: selected"),
    );
    check_written(
        &no.to_vec().unwrap(),
        &rejected,
        p,
        &format!("{what_p}: rejected"),
    );

    let what_p = format!("{what} partition_copy_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let mut no = ctx.upload(&vec![p; n + 1]).unwrap();
    let c = counted(ctx, mode(6), &what_p, |c| {
        ctx.partition_copy_in_place(&mut buf, &mut no, pred, c)
    });
    check_count(c, k, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &kept, &what_p);
    check_written(
        &no.to_vec().unwrap(),
        &rejected,
        p,
        &format!("{what_p}: rejected"),
    );

    // partition_in_place: stable, the whole buffer.
    let what_p = format!("{what} partition_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let c = ctx
        .partition_in_place(&mut buf, pred)
        .unwrap_or_else(|e| panic!("{what_p}: {e}"));
    assert_eq!(c, k as u64, "{what_p}: count");
    let mut stable = kept.clone();
    stable.extend(&rejected);
    same(&buf.to_vec().unwrap(), &stable).unwrap_or_else(|e| panic!("{what_p}: {e}"));

    // The inputs of the out-of-place forms are untouched.
    same(&input.to_vec().unwrap(), data).unwrap_or_else(|e| panic!("{what}: input: {e}"));
    same(&flag_buf.to_vec().unwrap(), &flags).unwrap_or_else(|e| panic!("{what}: flags: {e}"));
}

fn selection_suite<T: Case>() {
    let mut r = rng();
    let pred = T::predicate();
    let size = std::mem::size_of::<T>();
    for ctx in backends() {
        let mut case = 0;
        for n in test_sizes(&ctx, &mut r, &[size, size + 1]) {
            for sel in SELECTIONS {
                let keep = selection(&mut r, n, sel);
                let data: Vec<T> = keep.iter().map(|&k| T::make(&mut r, k)).collect();
                assert!(data.iter().map(T::keep).eq(keep), "the generator's pattern");
                let what = format!("{ctx:?} {} n={n} {sel:?}", T::CUDA_TYPE);
                check_selection(&ctx, &mut r, &data, &pred, case, &what);
                case += 1;
            }
        }
    }
}

per_type!(selection_suite:
    select_and_partition_i32: i32,
    select_and_partition_u8: u8,
    select_and_partition_i64: i64,
    select_and_partition_u64: u64,
    select_and_partition_f32: f32,
    select_and_partition_f64: f64,
    select_and_partition_user_struct: Tagged,
);

/// Flags of other types: any non-zero value selects; for floats -0.0 does not and NaN does.
#[test]
fn select_flagged_flag_types() {
    fn one<F: Arithmetic + TestElement, T: Case>(
        ctx: &Context,
        r: &mut StdRng,
        n: usize,
        flag: impl Fn(&mut StdRng, bool) -> F,
    ) {
        let what = format!(
            "{ctx:?} select_flagged {} by {} n={n}",
            T::CUDA_TYPE,
            F::CUDA_TYPE
        );
        let data = random_vec::<T>(r, n);
        let keep: Vec<bool> = (0..n).map(|_| r.random_bool(0.4)).collect();
        let flags: Vec<F> = keep.iter().map(|&k| flag(r, k)).collect();
        let (kept, _) = split(&data, &keep);
        let input = ctx.upload(&data).unwrap();
        let flag_buf = ctx.upload(&flags).unwrap();
        let mut out = ctx.upload(&vec![T::sentinel(); n + 5]).unwrap();
        let c = ctx
            .select_flagged(&input, &flag_buf, &mut out, Count::Host)
            .unwrap();
        check_count(c, kept.len(), &what);
        check_written(&out.to_vec().unwrap(), &kept, T::sentinel(), &what);
        let mut buf = ctx.upload(&data).unwrap();
        let c = counted(ctx, Mode::Both, &what, |c| {
            ctx.select_flagged_in_place(&mut buf, &flag_buf, c)
        });
        check_count(c, kept.len(), &format!("{what} in place"));
        check_prefix(&buf.to_vec().unwrap(), &kept, &format!("{what} in place"));
    }
    let mut r = rng();
    for ctx in backends() {
        let tile = compact_tile(&ctx, 12);
        for n in [
            0,
            1,
            tile - 1,
            tile + 1,
            3 * tile,
            if ctx.is_gpu() { MULTI_TILE } else { 30_011 },
        ] {
            one::<i32, f64>(&ctx, &mut r, n, |r, k| {
                if k {
                    r.random_range(i32::MIN..0) | 1
                } else {
                    0
                }
            });
            one::<f32, Tagged>(&ctx, &mut r, n, |r, k| {
                if !k {
                    [0.0, -0.0][r.random_range(0..2)]
                } else {
                    [f32::NAN, 1e-30, -2.0, f32::INFINITY][r.random_range(0..4)]
                }
            });
            one::<u64, u8>(&ctx, &mut r, n, |r, k| {
                if k {
                    1 << r.random_range(0..64)
                } else {
                    0
                }
            });
            one::<f64, i64>(&ctx, &mut r, n, |r, k| {
                if k {
                    f64::MIN_POSITIVE * r.random_range(1.0..2.0)
                } else {
                    -0.0
                }
            });
        }
    }
}
