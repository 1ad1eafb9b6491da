//! segreduce_csr_indirect: random, overlapping sources over every distribution; sources equal to
//! the offsets; windows shared by every segment or ending at the last value.

use super::*;

fn indirect_suite<T: TestElement, O: TestOffset>(op: &Op<T>, dists: &[Dist]) {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<T, O>(&ctx, SegItems::Values, true, false);
        for n in test_sizes(&ctx, &mut r, &[nv]) {
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
                    ctx.segreduce_csr_indirect(
                        &vbuf,
                        Csr::new(&obuf).with_empty(support_empty),
                        &sbuf,
                        vbuf.len(),
                        &mut out,
                        op,
                    )
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
                ctx.segreduce_csr_indirect(
                    &vbuf,
                    Csr::allow_empty(&obuf),
                    &obuf,
                    vbuf.len(),
                    &mut out,
                    op,
                )
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
        let n = if ctx.is_gpu() { MULTI_TILE } else { 20_000 };
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
            ctx.segreduce_csr_indirect(
                &vbuf,
                Csr::allow_empty(&obuf),
                &sbuf,
                vbuf.len(),
                &mut out,
                &Op::plus(),
            )
            .unwrap();
            check(
                &out.to_vec().unwrap(),
                &expect,
                &format!("{ctx:?} shared windows"),
            );
        }
    }
}

/// The count of positions is an argument of its own: sliding windows (every segment `w` values
/// from its own start, `count` = segments * w, past the values' length) need no padding, and a
/// count below the values' length covers only the positions it names. Sources that read past the
/// values are an error that names the segment, whatever the count; nothing is written.
#[test]
fn indirect_counts_apart_from_the_values() {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<i64, u32>(&ctx, SegItems::Values, true, false);
        for n in [1, 7, nv - 1, nv + 3, 3 * nv + 5] {
            let values: Vec<i64> = random_vec(&mut r, n);
            let vbuf = ctx.upload(&values).unwrap();
            for w in [1, 2, 5, 33] {
                if w > n {
                    continue;
                }
                let windows = n - w + 1;
                let offsets: Vec<u64> = (0..windows as u64).map(|i| i * w as u64).collect();
                let sources: Vec<u64> = (0..windows as u64).collect();
                let count = windows * w;
                let what = format!("{ctx:?} windows n={n} w={w} count={count}");
                let expect = reference(&offsets, count, Some(&sources), |m| values[m], &Op::plus());
                let (obuf, sbuf) = (
                    ctx.upload(&to_o::<u32>(&offsets)).unwrap(),
                    ctx.upload(&to_o::<u32>(&sources)).unwrap(),
                );
                let mut out = poisoned::<i64>(&ctx, windows);
                ctx.segreduce_csr_indirect(
                    &vbuf,
                    Csr::new(&obuf),
                    &sbuf,
                    count,
                    &mut out,
                    &Op::plus(),
                )
                .unwrap_or_else(|e| panic!("{what}: {e}"));
                check(&out.to_vec().unwrap(), &expect, &what);
            }
            // Fewer positions than values: two segments over the last half of the values.
            let half = n / 2;
            if half >= 2 {
                let offsets = [0u64, (half / 2) as u64];
                let sources = [(n - half) as u64, (n - half + half / 2) as u64];
                let what = format!("{ctx:?} short count n={n} count={half}");
                let expect = reference(&offsets, half, Some(&sources), |m| values[m], &Op::plus());
                let (obuf, sbuf) = (
                    ctx.upload(&to_o::<u32>(&offsets)).unwrap(),
                    ctx.upload(&to_o::<u32>(&sources)).unwrap(),
                );
                let mut out = poisoned::<i64>(&ctx, 2);
                ctx.segreduce_csr_indirect(
                    &vbuf,
                    Csr::new(&obuf),
                    &sbuf,
                    half,
                    &mut out,
                    &Op::plus(),
                )
                .unwrap_or_else(|e| panic!("{what}: {e}"));
                check(&out.to_vec().unwrap(), &expect, &what);
            }
            // The last window one value too far: sources[k] + w = n + 1.
            let w = 2.min(n);
            let windows = n - w + 1;
            let offsets: Vec<u64> = (0..windows as u64).map(|i| i * w as u64).collect();
            let mut sources: Vec<u64> = (0..windows as u64).collect();
            let k = windows - 1;
            sources[k] += 1;
            let (obuf, sbuf) = (
                ctx.upload(&to_o::<u32>(&offsets)).unwrap(),
                ctx.upload(&to_o::<u32>(&sources)).unwrap(),
            );
            let mut out = poisoned::<i64>(&ctx, windows);
            let err = ctx
                .segreduce_csr_indirect(
                    &vbuf,
                    Csr::new(&obuf),
                    &sbuf,
                    windows * w,
                    &mut out,
                    &Op::plus(),
                )
                .unwrap_err();
            let what = format!("{ctx:?} window past the values n={n}");
            match &err {
                mgpu::Error::SourceOutOfRange {
                    call,
                    index,
                    start,
                    length,
                    bound,
                    ..
                } => assert_eq!(
                    (*call, *index, *start, *length, *bound),
                    (
                        "segreduce_csr_indirect",
                        k as u64,
                        sources[k],
                        w as u64,
                        n as u64
                    ),
                    "{what}: {err}"
                ),
                other => panic!("{what}: expected SourceOutOfRange, got {other:?}"),
            }
            assert_eq!(
                out.to_vec().unwrap(),
                vec![i64::poison(); windows],
                "{what}: written on error"
            );
            // Offsets are checked against the count, not the values' length.
            let offsets = [0u64, n as u64];
            let sources = [0u64, 0];
            let (obuf, sbuf) = (
                ctx.upload(&to_o::<u32>(&offsets)).unwrap(),
                ctx.upload(&to_o::<u32>(&sources)).unwrap(),
            );
            let mut out = poisoned::<i64>(&ctx, 2);
            let err = ctx
                .segreduce_csr_indirect(&vbuf, Csr::new(&obuf), &sbuf, n, &mut out, &Op::plus())
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    mgpu::Error::InvalidOffset {
                        index: 1,
                        problem: mgpu::OffsetProblem::EmptyAtEnd,
                        ..
                    }
                ),
                "{ctx:?} n={n}: {err:?}"
            );
            ctx.segreduce_csr_indirect(&vbuf, Csr::new(&obuf), &sbuf, n + 1, &mut out, &Op::plus())
                .unwrap_or_else(|e| panic!("{ctx:?} n={n} count n + 1: {e}"));
            still_usable(&ctx, "indirect counts");
        }
    }
}

/// SpMV with indirection takes its count too: rows that share nonzeros.
#[test]
fn spmv_indirect_rows_share_nonzeros() {
    for ctx in backends() {
        // Rows 0 and 2 are the nonzeros 0..2, row 1 the nonzero 2, row 3 the nonzeros 1..3.
        let (cols, matrix) = (
            ctx.upload(&[0u32, 2, 1]).unwrap(),
            ctx.upload(&[1.0f64, 2.0, 3.0]).unwrap(),
        );
        let (offsets, sources) = (
            ctx.upload(&[0u32, 2, 3, 5]).unwrap(),
            ctx.upload(&[0u32, 2, 0, 1]).unwrap(),
        );
        let x = ctx.upload(&[1.0f64, 10.0, 100.0]).unwrap();
        let mut y = poisoned::<f64>(&ctx, 4);
        let (mul, add) = (Op::multiplies(), Op::plus());
        let rows = Csr::new(&offsets);
        ctx.spmv_csr_indirect(&matrix, &cols, rows, &sources, 7, &x, &mut y, &mul, &add)
            .unwrap();
        assert_eq!(y.to_vec().unwrap(), [201.0, 30.0, 201.0, 230.0], "{ctx:?}");
        ctx.spmv_csr_indirect_unary(&cols, rows, &sources, 7, &x, &mut y, &add)
            .unwrap();
        assert_eq!(y.to_vec().unwrap(), [101.0, 10.0, 101.0, 110.0], "{ctx:?}");
        // Row 3 reading one nonzero past the end.
        let err = ctx
            .spmv_csr_indirect_unary(&cols, rows, &sources, 8, &x, &mut y, &add)
            .unwrap_err();
        assert!(
            matches!(
                err,
                mgpu::Error::SourceOutOfRange {
                    index: 3,
                    length: 3,
                    bound: 3,
                    ..
                }
            ),
            "{ctx:?}: {err:?}"
        );
        assert!(
            err.to_string().contains("the nonzeros (3 elements)"),
            "{err}"
        );
    }
}
