//! Values, offsets, sources and outputs as views at unaligned offsets, direct, indirect and plans;
//! the data around the views must not be read or written.

use super::*;

/// Values `slice(3..3 + n)` of a buffer with random values around; offsets and sources
/// `slice(1..1 + k)` with offsets around that would break the geometry if read; the output
/// `slice_mut(5..5 + k)` of a poisoned buffer whose poison around it must survive.
fn views_for<T: TestElement, O: TestOffset>(ctx: &Context, r: &mut StdRng, op: &Op<T>) {
    let nvs = seg_tiles::<T, O>(ctx);
    let mut ns = vec![0, 1, 2];
    for &nv in &nvs {
        ns.extend([nv - 1, nv, nv + 1, 2 * nv + 3]);
    }
    ns.push(if ctx.is_gpu() { MULTI_TILE } else { 10_007 });
    for n in ns {
        for dist in [Dist::Uniform(20), Dist::HalfEmpty, Dist::TileEdges] {
            let nv = dist_tile(dist, &nvs);
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
                    ctx.segreduce_csr_indirect(
                        &v,
                        Csr::allow_empty(&o),
                        &s,
                        v.len(),
                        &mut out.slice_mut(5..5 + k),
                        op,
                    )
                } else {
                    ctx.segreduce_csr(&v, Csr::allow_empty(&o), &mut out.slice_mut(5..5 + k), op)
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
            let plan = ctx.segreduce_plan::<T, O>(Csr::allow_empty(&o), n).unwrap();
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

/// Segments of 1 to 3 items (about 1,500 segment starts a tile, whose offsets the tiles read 16
/// bytes at a time where those are so aligned) with the offsets `slice(shift..shift + k)` of a
/// buffer, for every shift of a 16-byte run, the junk around them breaking the geometry if read:
/// the checked one-shot, the unchecked one and a plan, against the reference.
fn short_segments_from_offsets_views<O: TestOffset>(ctx: &Context, r: &mut StdRng) {
    let nv = dist_tile(Dist::Fixed(2), &seg_tiles::<i32, O>(ctx));
    let n = if ctx.is_gpu() {
        7 * nv + 13
    } else {
        3 * nv + 13
    };
    let values: Vec<i32> = random_vec(r, n);
    let vbuf = ctx.upload(&values).unwrap();
    let op = Op::plus();
    for shift in 0..16 / std::mem::size_of::<O>() {
        let lengths = gen_lengths(r, n, Dist::Uniform(2), nv);
        let (offsets, _) = offsets_of(&lengths);
        let k = offsets.len();
        let expect = reference(&offsets, n, None, |m| values[m], &op);
        let mut ohost = vec![n as u64 / 2 + 1; shift];
        ohost.extend(&offsets);
        ohost.extend([1, n as u64 + 1, 0]);
        let obuf = ctx.upload(&to_o::<O>(&ohost)).unwrap();
        let o = obuf.slice(shift..shift + k);
        let what = format!(
            "{ctx:?} short segments, {} offsets at +{shift}",
            O::CUDA_TYPE
        );
        let mut out = poisoned::<i32>(ctx, k);
        ctx.segreduce_csr(&vbuf, Csr::new(&o), &mut out, &op)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&out.to_vec().unwrap(), &expect, &what);
        let mut out = poisoned::<i32>(ctx, k);
        // SAFETY: offsets_of builds increasing offsets from 0 over n values.
        unsafe { ctx.segreduce_csr_unchecked(&vbuf, Csr::new(&o), &mut out, &op) }
            .unwrap_or_else(|e| panic!("{what} unchecked: {e}"));
        check(
            &out.to_vec().unwrap(),
            &expect,
            &format!("{what} unchecked"),
        );
        let plan = ctx.segreduce_plan::<i32, O>(Csr::new(&o), n).unwrap();
        let mut out = poisoned::<i32>(ctx, k);
        ctx.segreduce_apply(&plan, &vbuf, &mut out, &op)
            .unwrap_or_else(|e| panic!("{what} plan: {e}"));
        check(&out.to_vec().unwrap(), &expect, &format!("{what} plan"));
    }
}

#[test]
fn short_segments_with_offsets_at_every_alignment() {
    let mut r = rng();
    for ctx in backends() {
        short_segments_from_offsets_views::<u32>(&ctx, &mut r);
        short_segments_from_offsets_views::<u64>(&ctx, &mut r);
    }
}
