//! segreduce_csr_indirect: random, overlapping sources over every distribution; sources equal to
//! the offsets; windows shared by every segment or ending at the last value.

use super::*;

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
