//! Mapped (`x.map(&f)`, type-changing too) and counting sources, direct and indirect.

use super::*;

/// segreduce_csr of `values` by `offsets` (`host`: the same, on the host) into a poisoned
/// output, against the reference over `item`.
fn direct<T: TestElement, O: TestOffset>(
    ctx: &Context,
    (values, item): (&impl Source<T>, impl Fn(usize) -> T),
    (offsets, host): (&mgpu::Buffer<O>, &[u64]),
    op: &Op<T>,
    what: &str,
) {
    let expect = reference(host, values.source_len(), None, item, op);
    let mut out = poisoned::<T>(ctx, host.len());
    ctx.segreduce_csr(values, Csr::allow_empty(offsets), &mut out, op)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    check(&out.to_vec().unwrap(), &expect, what);
}

#[test]
fn mapped_and_counting_sources() {
    let mut r = rng();
    for ctx in backends() {
        let nvs = seg_tiles::<i32, u32>(&ctx);
        for n in test_sizes(&ctx, &mut r, &nvs) {
            for dist in [
                Dist::Uniform(500),
                Dist::PowerLaw,
                Dist::HalfEmpty,
                Dist::One,
            ] {
                let what = format!("{ctx:?} n={n} {dist:?}");
                let nv = dist_tile(dist, &nvs);
                let lengths = gen_lengths(&mut r, n, dist, nv);
                let (offsets, _) = offsets_of(&lengths);
                let o32 = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
                let o64 = ctx.upload(&to_o::<u64>(&offsets)).unwrap();
                let k = offsets.len();
                let (by32, by64) = ((&o32, &offsets[..]), (&o64, &offsets[..]));

                // i32 squared (wrapping), fused.
                let v: Vec<i32> = (0..n).map(|_| r.random_range(-50_000..50_000)).collect();
                let vbuf = ctx.upload(&v).unwrap();
                let sq = Map::<i32, i32>::square();
                let item = |m: usize| v[m].wrapping_mul(v[m]);
                let w = format!("{what} square");
                direct(&ctx, (&vbuf.map(&sq), item), by32, &Op::plus(), &w);

                // f64 squared.
                let v: Vec<f64> = random_vec(&mut r, n);
                let vbuf = ctx.upload(&v).unwrap();
                let sq = Map::<f64, f64>::square();
                let item = |m: usize| v[m] * v[m];
                let w = format!("{what} f64 square");
                direct(&ctx, (&vbuf.map(&sq), item), by64, &Op::plus(), &w);

                // u8 widened to u64 (a map that changes the type).
                let v: Vec<u8> = random_vec(&mut r, n);
                let vbuf = ctx.upload(&v).unwrap();
                let widen = Map::new("widen_u8", |x: u8| x as u64, "(unsigned long long)x");
                let item = |m: usize| v[m] as u64;
                let w = format!("{what} widen");
                direct(&ctx, (&vbuf.map(&widen), item), by32, &Op::plus(), &w);

                // Mapped indirect.
                let sources = random_sources(&mut r, &offsets, n, n);
                let sbuf = ctx.upload(&to_o::<u32>(&sources)).unwrap();
                let expect = reference(&offsets, n, Some(&sources), |m| v[m] as u64, &Op::plus());
                let mut out = poisoned::<u64>(&ctx, k);
                ctx.segreduce_csr_indirect(
                    &vbuf.map(&widen),
                    Csr::allow_empty(&o32),
                    &sbuf,
                    vbuf.len(),
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
                let w = format!("{what} counting u32");
                direct(&ctx, (&c, |m| c.nth(m)), by32, &Op::plus(), &w);

                let c = Counting::new(-7i64, n);
                let w = format!("{what} counting i64");
                direct(&ctx, (&c, |m| c.nth(m)), by64, &Op::maximum(), &w);

                let c = Counting::new(1.0f64, n);
                let w = format!("{what} counting f64");
                direct(&ctx, (&c, |m| c.nth(m)), by32, &Op::plus(), &w);

                let c = Counting::new(0.5f32, n);
                let w = format!("{what} counting f32");
                direct(&ctx, (&c, |m| c.nth(m)), by64, &Op::minimum(), &w);
            }
        }
    }
}
