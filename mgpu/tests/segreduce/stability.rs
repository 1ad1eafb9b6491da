//! Run-to-run stability: the same large input reduced 10 times, directly, indirectly, by a plan
//! and in SpMV.

use super::spmv::CsrMatrix;
use super::*;

/// Runs `f` 10 times; every run must give `expect`'s bits (a race shows as a result that
/// changes, or a wrong one).
fn repeat_exact<T: Element>(what: &str, expect: &[T], mut f: impl FnMut() -> Vec<T>) {
    for i in 0..10 {
        check(&f(), expect, &format!("{what}: run {i}"));
    }
}

/// The same large input reduced 10 times: with exactly associative data (small-integer floats,
/// wrapping integers, Affine) every run must give the reference's bits, directly, indirectly,
/// through a plan and in SpMV. Floats with fractions are only checked to be close to the f64 sums
/// each run: the look-back combines tiles in the order it finds them, so a segment spanning
/// several tiles may be associated differently from run to run (as ScanAlgorithm::LookBack
/// documents for the scan); how many runs differ is printed.
#[test]
fn run_to_run_stability() {
    let mut r = rng();
    for ctx in backends() {
        let n = if ctx.is_gpu() { 3 << 20 } else { 50_000 };
        for dist in [Dist::PowerLaw, Dist::HalfEmpty, Dist::Uniform(5000)] {
            let what = format!("{ctx:?} stability {dist:?}");
            let lengths = gen_lengths(&mut r, n, dist, 1);
            let (offsets, _) = offsets_of(&lengths);
            let k = offsets.len();
            let o = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
            let mut out = ctx.zeros::<f32>(k).unwrap();

            let v: Vec<f32> = random_vec(&mut r, n);
            let vb = ctx.upload(&v).unwrap();
            let expect = reference(&offsets, n, None, |m| v[m], &Op::plus());
            repeat_exact(&format!("{what} f32"), &expect, || {
                ctx.segreduce_csr(&vb, Csr::allow_empty(&o), &mut out, &Op::plus())
                    .unwrap();
                out.to_vec().unwrap()
            });
            let plan = ctx
                .segreduce_plan::<f32, u32>(Csr::allow_empty(&o), n)
                .unwrap();
            repeat_exact(&format!("{what} f32 plan"), &expect, || {
                ctx.segreduce_apply(&plan, &vb, &mut out, &Op::plus())
                    .unwrap();
                out.to_vec().unwrap()
            });
            let sources = random_sources(&mut r, &offsets, n, n);
            let sb = ctx.upload(&to_o::<u32>(&sources)).unwrap();
            let expect = reference(&offsets, n, Some(&sources), |m| v[m], &Op::plus());
            repeat_exact(&format!("{what} f32 indirect"), &expect, || {
                ctx.segreduce_csr_indirect(
                    &vb,
                    Csr::allow_empty(&o),
                    &sb,
                    vb.len(),
                    &mut out,
                    &Op::plus(),
                )
                .unwrap();
                out.to_vec().unwrap()
            });
            let x: Vec<f32> = (0..1000).map(|_| r.random_range(0..2) as f32).collect();
            let xb = ctx.upload(&x).unwrap();
            let cols: Vec<u32> = (0..n).map(|_| r.random_range(0..1000)).collect();
            let cb = ctx.upload(&cols).unwrap();
            let csr = CsrMatrix {
                offsets: offsets.clone(),
                cols,
                x_len: 1000,
            };
            let (mul, add) = (Op::multiplies(), Op::plus());
            let expect = csr.product(None, Some(&v), &x, &mul, &add);
            repeat_exact(&format!("{what} spmv"), &expect, || {
                ctx.spmv_csr(&vb, &cb, Csr::allow_empty(&o), &xb, &mut out, &mul, &add)
                    .unwrap();
                out.to_vec().unwrap()
            });

            let a: Vec<Affine> = random_vec(&mut r, n);
            let ab = ctx.upload(&a).unwrap();
            let expect = reference(&offsets, n, None, |m| a[m], &affine_op());
            let mut aout = ctx.zeros::<Affine>(k).unwrap();
            repeat_exact(&format!("{what} affine"), &expect, || {
                ctx.segreduce_csr(&ab, Csr::allow_empty(&o), &mut aout, &affine_op())
                    .unwrap();
                aout.to_vec().unwrap()
            });
            let w: Vec<i64> = random_vec(&mut r, n);
            let wb = ctx.upload(&w).unwrap();
            let expect = reference(&offsets, n, None, |m| w[m], &Op::plus());
            let mut wout = ctx.zeros::<i64>(k).unwrap();
            repeat_exact(&format!("{what} i64"), &expect, || {
                ctx.segreduce_csr(&wb, Csr::allow_empty(&o), &mut wout, &Op::plus())
                    .unwrap();
                wout.to_vec().unwrap()
            });

            // Fractions: close to the f64 sums every run.
            let f: Vec<f32> = (0..n).map(|_| r.random_range(0.0f32..1.0)).collect();
            let fb = ctx.upload(&f).unwrap();
            let exact = reference(&offsets, n, None, |m| f[m] as f64, &Op::plus());
            let mut runs: Vec<Vec<f32>> = Vec::new();
            for i in 0..10 {
                ctx.segreduce_csr(&fb, Csr::allow_empty(&o), &mut out, &Op::plus())
                    .unwrap();
                let got = out.to_vec().unwrap();
                for (s, (&g, &e)) in got.iter().zip(&exact).enumerate() {
                    assert!(
                        (g as f64 - e).abs() <= 1e-3 * e.abs() + 1e-3,
                        "{what} fractions run {i}: segment {s}: {g} vs {e}"
                    );
                }
                runs.push(got);
            }
            let differing = runs.iter().filter(|g| same(g, &runs[0]).is_err()).count();
            let segs = (0..k)
                .filter(|&s| runs.iter().any(|g| g[s].to_bits() != runs[0][s].to_bits()))
                .count();
            eprintln!(
                "{what}: f32 with fractions: {differing} of 10 runs differ from the first, in \
                 {segs} of {k} segments (last bits)"
            );
        }
    }
}
