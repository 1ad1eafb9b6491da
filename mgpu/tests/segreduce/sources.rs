//! Mapped (`x.map(&f)`, type-changing too) and counting sources, direct and indirect.

use super::*;

#[test]
fn mapped_and_counting_sources() {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<i32, u32>(&ctx, SegItems::Values, false);
        for n in test_sizes(&ctx, &mut r, nv) {
            for dist in [
                Dist::Uniform(500),
                Dist::PowerLaw,
                Dist::HalfEmpty,
                Dist::One,
            ] {
                let what = format!("{ctx:?} n={n} {dist:?}");
                let lengths = gen_lengths(&mut r, n, dist, nv);
                let (offsets, _) = offsets_of(&lengths);
                let o32 = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
                let o64 = ctx.upload(&to_o::<u64>(&offsets)).unwrap();
                let k = offsets.len();

                // i32 squared (wrapping), fused.
                let v: Vec<i32> = (0..n).map(|_| r.random_range(-50_000..50_000)).collect();
                let vbuf = ctx.upload(&v).unwrap();
                let sq = Map::<i32, i32>::square();
                let expect = reference(&offsets, n, None, |m| v[m].wrapping_mul(v[m]), &Op::plus());
                let mut out = poisoned::<i32>(&ctx, k);
                ctx.segreduce_csr(&vbuf.map(&sq), &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} square: {e}"));
                check(&out.to_vec().unwrap(), &expect, &format!("{what} square"));

                // f64 squared.
                let v: Vec<f64> = random_vec(&mut r, n);
                let vbuf = ctx.upload(&v).unwrap();
                let sq = Map::<f64, f64>::square();
                let expect = reference(&offsets, n, None, |m| v[m] * v[m], &Op::plus());
                let mut out = poisoned::<f64>(&ctx, k);
                ctx.segreduce_csr(&vbuf.map(&sq), &o64, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} f64 square: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} f64 square"),
                );

                // u8 widened to u64 (a map that changes the type).
                let v: Vec<u8> = random_vec(&mut r, n);
                let vbuf = ctx.upload(&v).unwrap();
                let widen = Map::new("widen_u8", |x: u8| x as u64, "(unsigned long long)x");
                let expect = reference(&offsets, n, None, |m| v[m] as u64, &Op::plus());
                let mut out = poisoned::<u64>(&ctx, k);
                ctx.segreduce_csr(&vbuf.map(&widen), &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} widen: {e}"));
                check(&out.to_vec().unwrap(), &expect, &format!("{what} widen"));

                // Mapped indirect.
                let sources = random_sources(&mut r, &offsets, n, n);
                let sbuf = ctx.upload(&to_o::<u32>(&sources)).unwrap();
                let expect = reference(&offsets, n, Some(&sources), |m| v[m] as u64, &Op::plus());
                let mut out = poisoned::<u64>(&ctx, k);
                ctx.segreduce_csr_indirect(
                    &vbuf.map(&widen),
                    &o32,
                    &sbuf,
                    true,
                    &mut out,
                    &Op::plus(),
                )
                .unwrap_or_else(|e| panic!("{what} widen indirect: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} widen indirect"),
                );

                // Counting sources.
                let c = Counting::new(u32::MAX - 1000, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::plus());
                let mut out = poisoned::<u32>(&ctx, k);
                ctx.segreduce_csr(&c, &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} counting u32: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting u32"),
                );

                let c = Counting::new(-7i64, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::maximum());
                let mut out = poisoned::<i64>(&ctx, k);
                ctx.segreduce_csr(&c, &o64, true, &mut out, &Op::maximum())
                    .unwrap_or_else(|e| panic!("{what} counting i64: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting i64"),
                );

                let c = Counting::new(1.0f64, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::plus());
                let mut out = poisoned::<f64>(&ctx, k);
                ctx.segreduce_csr(&c, &o32, true, &mut out, &Op::plus())
                    .unwrap_or_else(|e| panic!("{what} counting f64: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting f64"),
                );

                let c = Counting::new(0.5f32, n);
                let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::minimum());
                let mut out = poisoned::<f32>(&ctx, k);
                ctx.segreduce_csr(&c, &o64, true, &mut out, &Op::minimum())
                    .unwrap_or_else(|e| panic!("{what} counting f32: {e}"));
                check(
                    &out.to_vec().unwrap(),
                    &expect,
                    &format!("{what} counting f32"),
                );
            }
        }
    }
}
