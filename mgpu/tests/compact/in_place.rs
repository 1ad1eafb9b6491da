//! In place, repeated on the GPU: a race between tiles shows as a result that changes.

use super::*;

#[test]
fn in_place_stress_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    const REPS: usize = 20;
    let pred = i32::predicate();
    let eq = i32::equality();
    let t4 = compact_tile(&ctx, 4);
    let t5 = compact_tile(&ctx, 5);
    let t12 = compact_tile(&ctx, 12);
    let r8 = run_tile(&ctx, 8);
    let mut ns = vec![
        r8 - 1,
        r8 + 1,
        2,
        t4 - 1,
        t4,
        t4 + 1,
        2 * t4 + 1,
        t5 - 1,
        t5 + 1,
        t12 - 1,
        t12 + 1,
    ];
    ns.extend([2 * t12, 50 * t4 + 3, MULTI_TILE]);
    ns.sort();
    ns.dedup();
    let tiles = [t4, t5, t12, r8];
    /// Runs `f` on fresh copies `REPS` times: every result equal to `expect`.
    fn repeat<T: Element>(what: &str, expect: &[T], mut f: impl FnMut() -> Vec<T>) {
        for rep in 0..REPS {
            let got = f();
            same(&got, expect).unwrap_or_else(|e| panic!("{what}: repetition {rep}: {e}"));
        }
    }
    for &n in &ns {
        // Selection patterns: all, none, alternating, all but one in 1000, long blocks.
        for sel in [
            Sel::All,
            Sel::Nothing,
            Sel::Alternating,
            Sel::Rate(0.999),
            Sel::Blocks,
        ] {
            let keep = selection(&mut r, n, sel);
            let data: Vec<i32> = keep.iter().map(|&k| i32::make(&mut r, k)).collect();
            let (kept, rejected) = split(&data, &keep);
            let k = kept.len();
            let flags: Vec<u8> = keep.iter().map(|&k| k as u8).collect();
            let flag_buf = ctx.upload(&flags).unwrap();
            let what = format!("{ctx:?} stress n={n} {sel:?}");
            let with_count = |mut v: Vec<i32>, c: Option<u64>| {
                v.truncate(k);
                v.push(c.unwrap() as i32);
                v
            };
            let mut expect = kept.clone();
            expect.push(k as i32);
            repeat(&format!("{what} select_if_in_place"), &expect, || {
                let mut b = ctx.upload(&data).unwrap();
                let c = ctx.select_if_in_place(&mut b, &pred, Count::Host).unwrap();
                with_count(b.to_vec().unwrap(), c)
            });
            repeat(&format!("{what} select_flagged_in_place"), &expect, || {
                let mut b = ctx.upload(&data).unwrap();
                let c = ctx
                    .select_flagged_in_place(&mut b, &flag_buf, Count::Host)
                    .unwrap();
                with_count(b.to_vec().unwrap(), c)
            });
            let mut expect2 = expect.clone();
            expect2.extend(&rejected);
            repeat(&format!("{what} partition_copy_in_place"), &expect2, || {
                let mut b = ctx.upload(&data).unwrap();
                let mut no = ctx.zeros::<i32>(n).unwrap();
                let c = ctx
                    .partition_copy_in_place(&mut b, &mut no, &pred, Count::Host)
                    .unwrap();
                let mut v = with_count(b.to_vec().unwrap(), c);
                v.extend(&no.to_vec().unwrap()[..n - k]);
                v
            });
            let mut stable = kept.clone();
            stable.extend(&rejected);
            repeat(&format!("{what} partition_in_place"), &stable, || {
                let mut b = ctx.upload(&data).unwrap();
                assert_eq!(ctx.partition_in_place(&mut b, &pred).unwrap(), k as u64);
                b.to_vec().unwrap()
            });
        }
        // Run patterns: one run, all distinct, long runs, runs across tiles.
        for pat in [Runs::One, Runs::Mean(1), Runs::Mean(500), Runs::TileEdges] {
            let keys = run_keys::<i32>(&mut r, n, pat, &tiles);
            let heads = run_heads(&keys, i32::same_run);
            let (uk, _) = split(&keys, &heads);
            let m = uk.len();
            let positions: Vec<u32> = (0..n as u32).collect();
            let (hp, _) = split(&positions, &heads);
            let values = random_vec::<Affine>(&mut r, n);
            let (_, rv) = reduce_runs(&keys, &values, i32::same_run, compose);
            let what = format!("{ctx:?} stress n={n} {pat:?}");
            let mut expect = uk.clone();
            expect.push(m as i32);
            repeat(&format!("{what} unique_in_place"), &expect, || {
                let mut b = ctx.upload(&keys).unwrap();
                let c = ctx.unique_in_place(&mut b, &eq, Count::Host).unwrap();
                let mut v = b.to_vec().unwrap();
                v.truncate(m);
                v.push(c.unwrap() as i32);
                v
            });
            let mut expect_pairs: Vec<(i32, u32)> =
                uk.iter().copied().zip(hp.iter().copied()).collect();
            expect_pairs.push((m as i32, 0));
            let expect_pairs: Vec<u64> = expect_pairs
                .iter()
                .map(|&(k, v)| ((k as u32 as u64) << 32) | v as u64)
                .collect();
            repeat(
                &format!("{what} unique_by_key_in_place"),
                &expect_pairs,
                || {
                    let mut kb = ctx.upload(&keys).unwrap();
                    let mut vb = ctx.upload(&positions).unwrap();
                    let c = ctx
                        .unique_by_key_in_place(&mut kb, &mut vb, &eq, Count::Host)
                        .unwrap();
                    let (kv, vv) = (kb.to_vec().unwrap(), vb.to_vec().unwrap());
                    let mut out: Vec<u64> = (0..m)
                        .map(|i| ((kv[i] as u32 as u64) << 32) | vv[i] as u64)
                        .collect();
                    out.push((c.unwrap() as u32 as u64) << 32);
                    out
                },
            );
            let lengths: Vec<u32> = head_lengths(&heads);
            let mut expect_rle: Vec<u64> = uk
                .iter()
                .zip(&lengths)
                .map(|(&k, &l)| ((k as u32 as u64) << 32) | l as u64)
                .collect();
            expect_rle.push(m as u64);
            repeat(
                &format!("{what} run_length_encode_in_place"),
                &expect_rle,
                || {
                    let mut b = ctx.upload(&keys).unwrap();
                    let mut l = ctx.zeros::<u32>(n).unwrap();
                    let c = ctx
                        .run_length_encode_in_place(&mut b, &mut l, &eq, Count::Host)
                        .unwrap();
                    let (kv, lv) = (b.to_vec().unwrap(), l.to_vec().unwrap());
                    let mut out: Vec<u64> = (0..m)
                        .map(|i| ((kv[i] as u32 as u64) << 32) | lv[i] as u64)
                        .collect();
                    out.push(c.unwrap());
                    out
                },
            );
            let mut expect_rbk: Vec<Affine> = uk
                .iter()
                .map(|&k| Affine { a: k as u32, b: 0 })
                .chain(rv.iter().copied())
                .collect();
            expect_rbk.push(Affine { a: m as u32, b: 0 });
            repeat(
                &format!("{what} reduce_by_key_in_place"),
                &expect_rbk,
                || {
                    let mut kb = ctx.upload(&keys).unwrap();
                    let mut vb = ctx.upload(&values).unwrap();
                    let c = ctx
                        .reduce_by_key_in_place(&mut kb, &mut vb, &eq, &affine_op(), Count::Host)
                        .unwrap();
                    let (kv, vv) = (kb.to_vec().unwrap(), vb.to_vec().unwrap());
                    let mut out: Vec<Affine> = kv[..m]
                        .iter()
                        .map(|&k| Affine { a: k as u32, b: 0 })
                        .collect();
                    out.extend(&vv[..m]);
                    out.push(Affine {
                        a: c.unwrap() as u32,
                        b: 0,
                    });
                    out
                },
            );
        }
    }
}
