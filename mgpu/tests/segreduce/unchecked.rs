//! segreduce_csr_unchecked and spmv_csr_unchecked on valid geometries: the checked calls'
//! results (strict and with empty segments allowed), and the errors they still return.

use super::*;

#[test]
fn segreduce_unchecked_matches_the_reference() {
    let mut r = rng();
    for ctx in backends() {
        let nv = 128 * 23;
        let big = if ctx.is_gpu() { MULTI_TILE } else { 20_011 };
        for n in [1, 2, nv - 1, nv + 1, 3 * nv + 7, big] {
            for dist in [
                Dist::Fixed(1),
                Dist::Fixed(2),
                Dist::PowerLaw,
                Dist::TileEdges,
                Dist::One,
                Dist::HalfEmpty,
            ] {
                let lengths = gen_lengths(&mut r, n, dist, nv);
                let (offsets, _) = offsets_of(&lengths);
                let strict = lengths.iter().all(|&l| l > 0);
                let obuf = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
                let values: Vec<i32> = random_vec(&mut r, n);
                let vbuf = ctx.upload(&values).unwrap();
                for op in [Op::plus(), Op::maximum()] {
                    let what = format!("{ctx:?} n={n} {dist:?} {}", op.name());
                    let expect = reference(&offsets, n, None, |m| values[m], &op);
                    for csr in [Csr::allow_empty(&obuf), Csr::new(&obuf)] {
                        if !strict && !csr.allows_empty() {
                            continue;
                        }
                        let mut out = poisoned::<i32>(&ctx, offsets.len());
                        // SAFETY: offsets_of builds valid offsets over n values, with empty
                        // segments only where `csr` allows them.
                        unsafe { ctx.segreduce_csr_unchecked(&vbuf, csr, &mut out, &op) }
                            .unwrap_or_else(|e| panic!("{what}: {e}"));
                        check(&out.to_vec().unwrap(), &expect, &what);
                    }
                }
            }
        }
        // Lengths are still checked: an output of another length writes nothing.
        let obuf = ctx.upload(&[0u32, 2]).unwrap();
        let vbuf = ctx.upload(&[1, 2, 3]).unwrap();
        let mut out = ctx.upload(&[7, 7, 7]).unwrap();
        // SAFETY: valid offsets over 3 values.
        let err =
            unsafe { ctx.segreduce_csr_unchecked(&vbuf, Csr::new(&obuf), &mut out, &Op::plus()) }
                .unwrap_err();
        assert!(err.to_string().contains("output"), "{err}");
        assert_eq!(out.to_vec().unwrap(), [7, 7, 7]);
    }
}

#[test]
fn spmv_unchecked_matches_the_checked_call() {
    let mut r = rng();
    for ctx in backends() {
        let nnz = if ctx.is_gpu() { MULTI_TILE } else { 20_011 };
        for dist in [Dist::Fixed(1), Dist::PowerLaw, Dist::HalfEmpty, Dist::One] {
            let lengths = gen_lengths(&mut r, nnz, dist, 128 * 11);
            let (offsets, _) = offsets_of(&lengths);
            let x_len = 1000;
            let cols: Vec<u32> = (0..nnz).map(|_| r.random_range(0..x_len as u32)).collect();
            // Small integers: sums are exact in any order.
            let matrix: Vec<f64> = (0..nnz).map(|_| r.random_range(-8..8) as f64).collect();
            let x: Vec<f64> = (0..x_len).map(|_| r.random_range(-8..8) as f64).collect();
            let (obuf, cbuf) = (
                ctx.upload(&to_o::<u32>(&offsets)).unwrap(),
                ctx.upload(&cols).unwrap(),
            );
            let (mbuf, xbuf) = (ctx.upload(&matrix).unwrap(), ctx.upload(&x).unwrap());
            let rows = Csr::allow_empty(&obuf);
            let (mul, add) = (Op::multiplies(), Op::plus());
            let mut expect = poisoned::<f64>(&ctx, offsets.len());
            ctx.spmv_csr(&mbuf, &cbuf, rows, &xbuf, &mut expect, &mul, &add)
                .unwrap();
            let mut y = poisoned::<f64>(&ctx, offsets.len());
            // SAFETY: the checked call above accepted these rows and columns.
            unsafe { ctx.spmv_csr_unchecked(&mbuf, &cbuf, rows, &xbuf, &mut y, &mul, &add) }
                .unwrap();
            check(
                &y.to_vec().unwrap(),
                &expect.to_vec().unwrap(),
                &format!("{ctx:?} {dist:?}"),
            );
        }
    }
}
