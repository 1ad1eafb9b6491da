//! Every validation error: the message names the first bad index (also among many, far apart),
//! nothing is written, the context still works.

use super::*;

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
            ctx.segreduce_csr(
                &vbuf,
                Csr::new(&o).with_empty(support_empty),
                &mut out,
                &Op::plus(),
            )
        } else {
            let o = ctx.upload(&to_o::<u32>(offsets)).unwrap();
            ctx.segreduce_csr(
                &vbuf,
                Csr::new(&o).with_empty(support_empty),
                &mut out,
                &Op::plus(),
            )
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
        let plan = ctx.segreduce_plan::<i32, u64>(Csr::new(&o).with_empty(support_empty), 10);
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
            Err(&["offsets[2] = 2 equals offsets[1]", "Csr::allow_empty"]),
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
                .segreduce_csr(&values, Csr::new(&offsets), &mut out, &Op::plus())
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
            .segreduce_csr(&values, Csr::allow_empty(&empty), &mut out, &Op::plus())
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
            .segreduce_csr_indirect(
                &values,
                Csr::allow_empty(&empty),
                &empty,
                values.len(),
                &mut out,
                &Op::plus(),
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["no segments (empty offsets) for 10 positions"],
            "empty offsets",
        );
        // ... which is fine without values.
        let none = ctx.upload::<i32>(&[]).unwrap();
        ctx.segreduce_csr(&none, Csr::new(&empty), &mut out, &Op::plus())
            .unwrap();

        // Indirect: sources past the end, wrong number of sources, bad offsets.
        let sources_case = |offsets: &[u32], sources: &[u32], ok: Result<&[i32], &str>| {
            let what = format!("{ctx:?} offsets {offsets:?} sources {sources:?}");
            let o = ctx.upload(offsets).unwrap();
            let s = ctx.upload(sources).unwrap();
            let mut out = poisoned::<i32>(&ctx, offsets.len());
            let res = ctx.segreduce_csr_indirect(
                &values,
                Csr::allow_empty(&o),
                &s,
                values.len(),
                &mut out,
                &Op::plus(),
            );
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
            .segreduce_csr_indirect(
                &values,
                Csr::new(&o),
                &s,
                values.len(),
                &mut out,
                &Op::plus(),
            )
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
            .spmv_csr(&m4, &bad_cols, Csr::new(&offs), &x, &mut y, &mul, &add)
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
            .spmv_csr_unary(&bad_cols, Csr::new(&offs), &x, &mut y, &add)
            .unwrap_err();
        expect_invalid(e, &["spmv_csr_unary", "cols[2] = 5"], "spmv unary cols");
        spmv_poison(&y, "spmv unary cols");
        let e = ctx
            .spmv_csr(&m3, &good_cols, Csr::new(&offs), &x, &mut y, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["3 matrix values for 4 column indices"],
            "spmv matrix len",
        );
        spmv_poison(&y, "spmv matrix len");
        let srcs = ctx.upload(&[0u32, 3]).unwrap();
        let e = ctx
            .spmv_csr_indirect(
                &m4,
                &good_cols,
                Csr::new(&offs),
                &srcs,
                good_cols.len(),
                &x,
                &mut y,
                &mul,
                &add,
            )
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
            .spmv_csr_indirect_unary(
                &bad_cols,
                Csr::new(&offs),
                &offs,
                bad_cols.len(),
                &x,
                &mut y,
                &add,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["spmv_csr_indirect_unary", "cols[2] = 5"],
            "spmv indirect cols",
        );
        spmv_poison(&y, "spmv indirect cols");
        let bad_offs = ctx.upload(&[0u32, 4]).unwrap();
        let e = ctx
            .spmv_csr(&m4, &good_cols, Csr::new(&bad_offs), &x, &mut y, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["offsets[1] = 4 is the end of the input (4 positions)"],
            "spmv offs",
        );
        spmv_poison(&y, "spmv offs");
        let mut y3 = poisoned::<f32>(&ctx, 3);
        let e = ctx
            .spmv_csr(&m4, &good_cols, Csr::new(&offs), &x, &mut y3, &mul, &add)
            .unwrap_err();
        expect_invalid(
            e,
            &["the output holds 3 elements for 2 segments"],
            "spmv y len",
        );
        check(&y3.to_vec().unwrap(), &[f32::poison(); 3], "spmv y len");
        // Plans check columns; the apply checks lengths.
        let e = ctx
            .spmv_plan::<f32, u32>(&bad_cols, Csr::new(&offs), 5)
            .unwrap_err();
        expect_invalid(e, &["spmv_plan", "cols[2] = 5"], "spmv plan cols");
        let e = ctx
            .spmv_plan::<f32, u32>(&good_cols, Csr::new(&bad_offs), 5)
            .unwrap_err();
        expect_invalid(e, &["spmv_plan", "offsets[1] = 4"], "spmv plan offs");
        let plan = ctx
            .spmv_plan::<f32, u32>(&good_cols, Csr::new(&offs), 5)
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
                .segreduce_csr(
                    &values,
                    Csr::new(&o).with_empty(support_empty),
                    &mut out,
                    &Op::plus(),
                )
                .unwrap_err();
            expect_invalid(e, &[needle], &what);
            check(&out.to_vec().unwrap(), &vec![u8::poison(); k], &what);
            let o = ctx.upload(offsets).unwrap();
            let e = ctx
                .segreduce_csr(
                    &values,
                    Csr::new(&o).with_empty(support_empty),
                    &mut out,
                    &Op::plus(),
                )
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
            .segreduce_csr_indirect(
                &values,
                Csr::new(&o),
                &sb,
                values.len(),
                &mut out,
                &Op::plus(),
            )
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
            .spmv_csr_unary(&cb, Csr::new(&o), &x, &mut y, &Op::plus())
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
            .spmv_csr_unary(&cb, Csr::new(&ob), &x, &mut y, &Op::plus())
            .unwrap_err();
        expect_invalid(e, &["offsets[123456]"], "offsets before cols");
        still_usable(&ctx, "many");
    }
}

/// The one-shot sum of u8 `values` over `offsets[shift..]` (a view), in u64 (`wide`) or u32
/// offsets, empty segments allowed or not: the call's result and the output, poisoned before.
fn sum_u8(
    ctx: &Context,
    values: &impl Source<u8>,
    offsets: &[u64],
    shift: usize,
    wide: bool,
    allow_empty: bool,
) -> (mgpu::Result<()>, Vec<u8>) {
    let mut out = poisoned::<u8>(ctx, offsets.len() - shift);
    let r = if wide {
        let buf = ctx.upload(offsets).unwrap();
        let view = buf.slice(shift..);
        let csr = Csr::new(&view).with_empty(allow_empty);
        ctx.segreduce_csr(values, csr, &mut out, &Op::plus())
    } else {
        let buf = ctx.upload(&to_o::<u32>(offsets)).unwrap();
        let view = buf.slice(shift..);
        let csr = Csr::new(&view).with_empty(allow_empty);
        ctx.segreduce_csr(values, csr, &mut out, &Op::plus())
    };
    (r, out.to_vec().unwrap())
}

/// A decreasing offset at every edge of the GPU's validation (a 16-byte run, a warp, a tile of
/// 4096 or 8192 segments), in `u32` and `u64`, from an aligned buffer and from a view one offset
/// into it (scalar loads); and the first empty segment at the same places.
#[test]
fn bad_offsets_at_validation_edges() {
    for ctx in backends() {
        let k = 9000usize;
        let count = 3 * k as u64;
        let values = ctx.upload(&vec![1u8; count as usize]).unwrap();
        for p in [
            2, 3, 4, 5, 127, 128, 129, 2047, 2048, 2049, 4095, 4096, 4097, 8191, 8192, 8193, 8999,
        ] {
            for shift in [0usize, 1] {
                // Offsets from `shift` on; the view's segment p - 1 ends before it starts.
                let mut offsets: Vec<u64> = (0..(k + shift) as u64).map(|i| 3 * i).collect();
                let base = offsets[shift];
                for o in offsets.iter_mut() {
                    *o = o.saturating_sub(base);
                }
                let mut bad = offsets.clone();
                bad[shift + p - 1] = bad[shift + p] + 1;
                let mut empty = offsets.clone();
                empty[shift + p] = empty[shift + p - 1];
                let needle = format!("offsets[{p}] = {} is less than", bad[shift + p]);
                let empty_needle = format!("offsets[{p}] = {} equals", empty[shift + p]);
                for wide in [false, true] {
                    let what = format!("{ctx:?} p={p} shift={shift} wide={wide}");
                    let run = |o: &[u64], allow: bool| sum_u8(&ctx, &values, o, shift, wide, allow);
                    let (r, got) = run(&bad, true);
                    expect_invalid(r.unwrap_err(), &[&needle], &what);
                    check(&got, &vec![u8::poison(); k], &what);
                    let (r, _) = run(&empty, false);
                    expect_invalid(r.unwrap_err(), &[&empty_needle], &what);
                    let (r, got) = run(&empty, true);
                    r.unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(got[p - 1], 0, "{what}: the empty segment's sum");
                }
            }
        }
    }
}

/// Two bad offsets (or empty segments) in one tile of the GPU's validation, the second in a later
/// round of its loads than the first, or in the same one: the first is named.
#[test]
fn first_of_two_bad_offsets_in_one_tile() {
    for ctx in backends() {
        let k = 9000usize;
        let count = 3 * k as u64;
        let values = ctx.upload(&vec![1u8; count as usize]).unwrap();
        let good: Vec<u64> = (0..k as u64).map(|i| 3 * i).collect();
        for (p, q) in [
            (5, 3000),
            (100, 4200),
            (2047, 2049),
            (3000, 5000),
            (4200, 8000),
        ] {
            let mut bad = good.clone();
            bad[q] = bad[q - 1] - 1;
            bad[p] = bad[p - 1] - 1;
            let mut empty = good.clone();
            empty[q] = empty[q - 1];
            empty[p] = empty[p - 1];
            for wide in [false, true] {
                let what = format!("{ctx:?} p={p} q={q} wide={wide}");
                let run = |o: &[u64], allow: bool| sum_u8(&ctx, &values, o, 0, wide, allow);
                let (r, got) = run(&bad, true);
                expect_invalid(r.unwrap_err(), &[&format!("offsets[{p}] = ")], &what);
                check(&got, &vec![u8::poison(); k], &what);
                let (r, got) = run(&empty, false);
                let needle = format!("offsets[{p}] = {} equals", empty[p]);
                expect_invalid(r.unwrap_err(), &[&needle], &what);
                check(&got, &vec![u8::poison(); k], &what);
            }
        }
        still_usable(&ctx, "two in one tile");
    }
}

/// The first bad column wherever it lies (the GPU's one-shot checks columns in its tiles, as they
/// gather): short rows (each thread gathers its own items) and long rows (lane-strided), unary and
/// binary, strict and empty-allowing offsets, f32 and f64; nothing written, and the same call with
/// the columns mended gives the reference.
#[test]
fn first_bad_column_anywhere() {
    let mut r = rng();
    for ctx in backends() {
        for row_len in [3usize, 200] {
            let rows = 300_000 / row_len;
            let nnz = rows * row_len;
            let x_len = 777usize;
            let offsets: Vec<u32> = (0..rows as u32).map(|i| i * row_len as u32).collect();
            let ob = ctx.upload(&offsets).unwrap();
            let good: Vec<u32> = (0..nnz).map(|_| r.random_range(0..x_len as u32)).collect();
            for trial in 0..4 {
                let mut cols = good.clone();
                let bad: Vec<usize> = (0..1 + trial % 3).map(|_| r.random_range(0..nnz)).collect();
                for &b in &bad {
                    cols[b] = x_len as u32 + r.random_range(0..3);
                }
                let first = *bad.iter().min().unwrap();
                let needle = format!("cols[{first}] = {}", cols[first]);
                let cb = ctx.upload(&cols).unwrap();
                let what = format!("{ctx:?} rows of {row_len}, trial {trial}");
                let x = ctx.upload(&vec![0.5f64; x_len]).unwrap();
                let m = ctx.upload(&vec![2.0f64; nnz]).unwrap();
                let mut y = poisoned::<f64>(&ctx, rows);
                for allow in [false, true] {
                    let csr = Csr::new(&ob).with_empty(allow);
                    let e = ctx
                        .spmv_csr(&m, &cb, csr, &x, &mut y, &Op::multiplies(), &Op::plus())
                        .unwrap_err();
                    expect_invalid(e, &["spmv_csr", &needle], &what);
                    let x32 = ctx.upload(&vec![0.5f32; x_len]).unwrap();
                    let mut y32 = poisoned::<f32>(&ctx, rows);
                    let e = ctx
                        .spmv_csr_unary(&cb, csr, &x32, &mut y32, &Op::plus())
                        .unwrap_err();
                    expect_invalid(e, &["spmv_csr_unary", &needle], &what);
                    check(&y32.to_vec().unwrap(), &vec![f32::poison(); rows], &what);
                }
                check(&y.to_vec().unwrap(), &vec![f64::poison(); rows], &what);
                let cb = ctx.upload(&good).unwrap();
                ctx.spmv_csr(
                    &m,
                    &cb,
                    Csr::new(&ob),
                    &x,
                    &mut y,
                    &Op::multiplies(),
                    &Op::plus(),
                )
                .unwrap();
                check(&y.to_vec().unwrap(), &vec![row_len as f64; rows], &what);
                still_usable(&ctx, &what);
            }
        }
    }
}

/// About a thousand tiles of the GPU's validation, several waves of its CTAs: the first bad
/// offset, the first empty segment and the longest segment wherever they lie (a whole tile's
/// checks or a partial one's), with later findings in other tiles.
#[test]
fn findings_across_many_tiles() {
    let mut r = rng();
    for ctx in backends() {
        // 2^23 + 12345 one-key segments: about 1000 tiles of 8192 offsets, past one wave.
        let k = (1usize << 23) + 12345;
        let ones: Vec<u32> = (0..k as u32).collect();
        let values = ctx.upload(&vec![1u8; k]).unwrap();
        for round in 0..3 {
            let what = format!("{ctx:?} round {round}");
            let mut places: Vec<usize> = (0..3).map(|_| r.random_range(8..k - 1)).collect();
            places.sort_unstable();
            // A longest segment of 2 + round keys, ending at one of the places.
            let mut offsets = ones.clone();
            let long = places[1];
            for o in offsets[long - 1 - round..long].iter_mut() {
                *o = (long - 2 - round) as u32;
            }
            let buf = ctx.upload(&offsets).unwrap();
            let plan = ctx
                .segmented_sort_plan(Csr::allow_empty(&buf), k)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                plan.longest(),
                2 + round as u64,
                "{what}: the longest segment"
            );

            // Decreasing at every place: the first one is reported.
            let mut bad = ones.clone();
            for &p in places.iter().rev() {
                bad[p] = bad[p - 1] - 1;
            }
            let buf = ctx.upload(&bad).unwrap();
            let e = ctx
                .segmented_sort_plan(Csr::allow_empty(&buf), k)
                .unwrap_err();
            let needle = format!("offsets[{}] = {} is less than", places[0], bad[places[0]]);
            expect_invalid(e, &[&needle], &what);
            // The same from a one-shot reduction, whose checks share their launch with the
            // tile limits' searches and loop over the tiles past the first wave.
            let mut out = poisoned::<u8>(&ctx, k);
            let e = ctx
                .segreduce_csr(&values, Csr::allow_empty(&buf), &mut out, &Op::plus())
                .unwrap_err();
            expect_invalid(e, &[&needle], &what);
            check(&out.to_vec().unwrap(), &vec![u8::poison(); k], &what);

            // Empty at every place: the first one is reported where empty segments are refused.
            let mut empty = ones.clone();
            for &p in &places {
                empty[p] = empty[p - 1];
            }
            let buf = ctx.upload(&empty).unwrap();
            let e = ctx.segmented_sort_plan(Csr::new(&buf), k).unwrap_err();
            let needle = format!("offsets[{}] = {} equals", places[0], empty[places[0]]);
            expect_invalid(e, &[&needle], &what);
            let mut out = poisoned::<u8>(&ctx, k);
            let e = ctx
                .segreduce_csr(&values, Csr::new(&buf), &mut out, &Op::plus())
                .unwrap_err();
            expect_invalid(e, &[&needle], &what);
            check(&out.to_vec().unwrap(), &vec![u8::poison(); k], &what);
            // Allowed, each segment sums to its length.
            ctx.segreduce_csr(&values, Csr::allow_empty(&buf), &mut out, &Op::plus())
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let expect: Vec<u8> = (0..k)
                .map(|i| (empty.get(i + 1).map_or(k as u32, |&e| e) - empty[i]) as u8)
                .collect();
            check(&out.to_vec().unwrap(), &expect, &what);
            still_usable(&ctx, &what);
        }
    }
}
