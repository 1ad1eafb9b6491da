//! SpMV (spmv_csr(_unary), spmv_csr_indirect(_unary), spmv_plan + spmv_apply / spmv_unary_apply)
//! on random matrices, a 2-D Laplacian, a max-plus semiring, integers, and views at unaligned
//! offsets.

use super::*;

/// A CSR matrix's structure: row offsets and column indices, for a vector of `x_len`.
pub(crate) struct CsrMatrix {
    pub offsets: Vec<u64>,
    pub cols: Vec<u32>,
    pub x_len: usize,
}

impl CsrMatrix {
    /// Rows of `lengths` nonzeros in random columns.
    fn random(r: &mut StdRng, lengths: &[usize]) -> CsrMatrix {
        let (offsets, nnz) = offsets_of(lengths);
        let x_len = r.random_range(1..=lengths.len().max(1) + 10);
        let cols = (0..nnz).map(|_| r.random_range(0..x_len as u32)).collect();
        CsrMatrix {
            offsets,
            cols,
            x_len,
        }
    }

    /// The 2-D 5-point Laplacian on a g x g grid (columns sorted in each row).
    fn laplacian(g: usize) -> (CsrMatrix, Vec<f64>) {
        let mut offsets = Vec::with_capacity(g * g);
        let mut cols = Vec::with_capacity(5 * g * g);
        let mut vals = Vec::with_capacity(5 * g * g);
        for a in 0..g {
            for b in 0..g {
                offsets.push(cols.len() as u64);
                let mut push = |aa: usize, bb: usize, v: f64| {
                    cols.push((aa * g + bb) as u32);
                    vals.push(v);
                };
                if a > 0 {
                    push(a - 1, b, -1.0);
                }
                if b > 0 {
                    push(a, b - 1, -1.0);
                }
                push(a, b, 4.0);
                if b + 1 < g {
                    push(a, b + 1, -1.0);
                }
                if a + 1 < g {
                    push(a + 1, b, -1.0);
                }
            }
        }
        (
            CsrMatrix {
                offsets,
                cols,
                x_len: g * g,
            },
            vals,
        )
    }

    fn nnz(&self) -> usize {
        self.cols.len()
    }

    /// y by the reference: rows folded in order from `sources` (or the offsets).
    pub fn product<T: Element>(
        &self,
        sources: Option<&[u64]>,
        matrix: Option<&[T]>,
        x: &[T],
        mul: &Op<T>,
        add: &Op<T>,
    ) -> Vec<T> {
        reference(
            &self.offsets,
            self.nnz(),
            sources,
            |k| {
                let xv = x[self.cols[k] as usize];
                match matrix {
                    Some(m) => mul.apply(m[k], xv),
                    None => xv,
                }
            },
            add,
        )
    }
}

/// Every SpMV entry point on `csr`: binary and unary, direct and indirect (random sources), and a
/// plan applied to two (matrix, x) pairs, unary, and with a wrong x length.
#[allow(clippy::too_many_arguments)]
fn check_spmv<T: TestElement, O: TestOffset>(
    ctx: &Context,
    r: &mut StdRng,
    csr: &CsrMatrix,
    matrices: [&[T]; 2],
    xs: [&[T]; 2],
    support_empty: bool,
    mul: &Op<T>,
    add: &Op<T>,
    what: &str,
) {
    let what = format!(
        "{ctx:?} spmv {}/{} {what} rows={} nnz={} x_len={} support_empty={support_empty}",
        T::CUDA_TYPE,
        O::CUDA_TYPE,
        csr.offsets.len(),
        csr.nnz(),
        csr.x_len
    );
    let rows = csr.offsets.len();
    let offsets = ctx.upload(&to_o::<O>(&csr.offsets)).unwrap();
    let cols = ctx.upload(&csr.cols).unwrap();
    let m0 = ctx.upload(matrices[0]).unwrap();
    let m1 = ctx.upload(matrices[1]).unwrap();
    let x0 = ctx.upload(xs[0]).unwrap();
    let x1 = ctx.upload(xs[1]).unwrap();

    let expect = csr.product(None, Some(matrices[0]), xs[0], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr(
        &m0,
        &cols,
        Csr::new(&offsets).with_empty(support_empty),
        &x0,
        &mut y,
        mul,
        add,
    )
    .unwrap_or_else(|e| panic!("{what} binary: {e}"));
    check(&y.to_vec().unwrap(), &expect, &format!("{what} binary"));

    let expect = csr.product(None, None, xs[1], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr_unary(
        &cols,
        Csr::new(&offsets).with_empty(support_empty),
        &x1,
        &mut y,
        add,
    )
    .unwrap_or_else(|e| panic!("{what} unary: {e}"));
    check(&y.to_vec().unwrap(), &expect, &format!("{what} unary"));

    let sources = random_sources(r, &csr.offsets, csr.nnz(), csr.nnz());
    let sbuf = ctx.upload(&to_o::<O>(&sources)).unwrap();
    let expect = csr.product(Some(&sources), Some(matrices[1]), xs[0], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr_indirect(
        &m1,
        &cols,
        Csr::new(&offsets).with_empty(support_empty),
        &sbuf,
        cols.len(),
        &x0,
        &mut y,
        mul,
        add,
    )
    .unwrap_or_else(|e| panic!("{what} indirect binary: {e}"));
    check(
        &y.to_vec().unwrap(),
        &expect,
        &format!("{what} indirect binary"),
    );

    let expect = csr.product(Some(&sources), None, xs[0], mul, add);
    let mut y = poisoned::<T>(ctx, rows);
    ctx.spmv_csr_indirect_unary(
        &cols,
        Csr::new(&offsets).with_empty(support_empty),
        &sbuf,
        cols.len(),
        &x0,
        &mut y,
        add,
    )
    .unwrap_or_else(|e| panic!("{what} indirect unary: {e}"));
    check(
        &y.to_vec().unwrap(),
        &expect,
        &format!("{what} indirect unary"),
    );

    // Plans.
    let plan = ctx
        .spmv_plan::<T, O>(
            &cols,
            Csr::new(&offsets).with_empty(support_empty),
            csr.x_len,
        )
        .unwrap_or_else(|e| panic!("{what} plan: {e}"));
    let pairs = [
        (matrices[0], &m0, xs[0], &x0),
        (matrices[1], &m1, xs[1], &x1),
        (matrices[0], &m0, xs[1], &x1),
    ];
    for (j, (m, mb, xh, xb)) in pairs.into_iter().enumerate() {
        let expect = csr.product(None, Some(m), xh, mul, add);
        let mut y = poisoned::<T>(ctx, rows);
        ctx.spmv_apply(&plan, mb, xb, &mut y, mul, add)
            .unwrap_or_else(|e| panic!("{what} spmv_apply {j}: {e}"));
        check(
            &y.to_vec().unwrap(),
            &expect,
            &format!("{what} spmv_apply {j}"),
        );
    }
    for (xh, xb) in [(xs[0], &x0), (xs[1], &x1)] {
        let expect = csr.product(None, None, xh, mul, add);
        let mut y = poisoned::<T>(ctx, rows);
        ctx.spmv_unary_apply(&plan, xb, &mut y, add)
            .unwrap_or_else(|e| panic!("{what} spmv_unary_apply: {e}"));
        check(
            &y.to_vec().unwrap(),
            &expect,
            &format!("{what} spmv_unary_apply"),
        );
    }
    // A vector of the wrong length.
    let mut xl = xs[0].to_vec();
    xl.push(xs[0][0]);
    let xl = ctx.upload(&xl).unwrap();
    let mut y = poisoned::<T>(ctx, rows);
    let e = ctx
        .spmv_apply(&plan, &m0, &xl, &mut y, mul, add)
        .unwrap_err();
    expect_invalid(
        e,
        &[&format!(
            "the vector holds {} elements but the plan's columns were checked against {}",
            csr.x_len + 1,
            csr.x_len
        )],
        &what,
    );
    let e = ctx.spmv_unary_apply(&plan, &xl, &mut y, add).unwrap_err();
    expect_invalid(e, &["spmv_unary_apply", "the vector holds"], &what);
    check(
        &y.to_vec().unwrap(),
        &vec![T::poison(); rows],
        &format!("{what} written on error"),
    );
}

fn spmv_suite<T: TestElement + Arithmetic, O: TestOffset>(gen: impl Fn(&mut StdRng) -> T) {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<T, O>(&ctx, SegItems::SpmvBinary, false, false);
        for nnz in test_sizes(&ctx, &mut r, &[nv]) {
            for dist in [
                Dist::Uniform(8),
                Dist::HalfEmpty,
                Dist::Fixed(1),
                Dist::PowerLaw,
                Dist::EmptyRuns,
            ] {
                let mut lengths = gen_lengths(&mut r, nnz, dist, nv);
                if matches!(dist, Dist::HalfEmpty) {
                    // Mean about 8 nonzeros per non-empty row.
                    lengths = gen_lengths(&mut r, nnz, Dist::Uniform(8), nv)
                        .into_iter()
                        .flat_map(|l| if l % 3 == 0 { vec![0, l] } else { vec![l] })
                        .collect();
                }
                let csr = CsrMatrix::random(&mut r, &lengths);
                let has_empty = lengths.contains(&0);
                let m: Vec<Vec<T>> = (0..2)
                    .map(|_| (0..nnz).map(|_| gen(&mut r)).collect())
                    .collect();
                let x: Vec<Vec<T>> = (0..2)
                    .map(|_| (0..csr.x_len).map(|_| gen(&mut r)).collect())
                    .collect();
                for support_empty in [true, false] {
                    if !support_empty && has_empty {
                        continue;
                    }
                    check_spmv::<T, O>(
                        &ctx,
                        &mut r,
                        &csr,
                        [&m[0], &m[1]],
                        [&x[0], &x[1]],
                        support_empty,
                        &Op::multiplies(),
                        &Op::plus(),
                        &format!("nnz={nnz} {dist:?}"),
                    );
                }
            }
        }
    }
}

#[test]
fn spmv_random_f32() {
    // Products of at most 4: a power-law row of 3M nonzeros still sums exactly in f32.
    spmv_suite::<f32, u32>(|r: &mut StdRng| r.random_range(0..3) as f32);
}

#[test]
fn spmv_random_f64_u64_offsets() {
    spmv_suite::<f64, u64>(|r: &mut StdRng| r.random_range(-4..8) as f64);
}

/// SpMV on views at unaligned offsets: the matrix `slice(3..)`, the columns `slice(1..)` (not
/// 16-byte aligned: the tiles copy them element by element), the vector `slice(2..)`, into the
/// output `slice_mut(5..)` of a poisoned buffer. Rows average 40 nonzeros, so 4-byte values
/// gather lane-strided too.
fn spmv_views_for<T: TestElement + Arithmetic, O: TestOffset>(ctx: &Context, r: &mut StdRng) {
    let nv = seg_tile::<T, O>(ctx, SegItems::SpmvBinary, false, false);
    let (mul, add) = (Op::multiplies(), Op::plus());
    for nnz in [
        1,
        nv - 1,
        nv,
        3 * nv + 5,
        if ctx.is_gpu() { MULTI_TILE } else { 10_007 },
    ] {
        let lengths = gen_lengths(r, nnz, Dist::Uniform(40), nv);
        let csr = CsrMatrix::random(r, &lengths);
        let rows = csr.offsets.len();
        let what = format!(
            "{ctx:?} spmv views {}/{} nnz={nnz} rows={rows}",
            T::CUDA_TYPE,
            O::CUDA_TYPE
        );
        let mhost: Vec<T> = random_vec(r, nnz + 7);
        let mut chost = vec![u32::MAX];
        chost.extend(&csr.cols);
        chost.push(u32::MAX);
        let xhost: Vec<T> = random_vec(r, csr.x_len + 4);
        let (mbuf, cbuf, obuf, xbuf) = (
            ctx.upload(&mhost).unwrap(),
            ctx.upload(&chost).unwrap(),
            ctx.upload(&to_o::<O>(&csr.offsets)).unwrap(),
            ctx.upload(&xhost).unwrap(),
        );
        let (m, c, x) = (
            mbuf.slice(3..3 + nnz),
            cbuf.slice(1..1 + nnz),
            xbuf.slice(2..2 + csr.x_len),
        );
        let expect = csr.product(
            None,
            Some(&mhost[3..3 + nnz]),
            &xhost[2..2 + csr.x_len],
            &mul,
            &add,
        );
        let mut full = vec![T::poison(); 5];
        full.extend(&expect);
        full.extend([T::poison(); 4]);

        let mut y = poisoned::<T>(ctx, rows + 9);
        ctx.spmv_csr(
            &m,
            &c,
            Csr::allow_empty(&obuf),
            &x,
            &mut y.slice_mut(5..5 + rows),
            &mul,
            &add,
        )
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&y.to_vec().unwrap(), &full, &what);

        let plan = ctx
            .spmv_plan::<T, O>(&c, Csr::allow_empty(&obuf), csr.x_len)
            .unwrap_or_else(|e| panic!("{what} plan: {e}"));
        let mut y = poisoned::<T>(ctx, rows + 9);
        ctx.spmv_apply(&plan, &m, &x, &mut y.slice_mut(5..5 + rows), &mul, &add)
            .unwrap_or_else(|e| panic!("{what} apply: {e}"));
        check(&y.to_vec().unwrap(), &full, &format!("{what} apply"));
    }
}

#[test]
fn spmv_views_at_unaligned_offsets() {
    let mut r = rng();
    for ctx in backends() {
        spmv_views_for::<f32, u32>(&ctx, &mut r);
        spmv_views_for::<f64, u32>(&ctx, &mut r);
        spmv_views_for::<i64, u64>(&ctx, &mut r);
    }
}

#[test]
fn spmv_laplacian() {
    let mut r = rng();
    for ctx in backends() {
        let gs: &[usize] = if ctx.is_gpu() {
            &[1, 2, 37, 1024]
        } else {
            &[1, 2, 37, 120]
        };
        for &g in gs {
            let (csr, vals) = CsrMatrix::laplacian(g);
            let x: Vec<Vec<f64>> = (0..2)
                .map(|_| (0..g * g).map(|_| r.random_range(1..16) as f64).collect())
                .collect();
            let vals2: Vec<f64> = vals.iter().map(|v| v * 2.0).collect();
            check_spmv::<f64, u32>(
                &ctx,
                &mut r,
                &csr,
                [&vals, &vals2],
                [&x[0], &x[1]],
                false,
                &Op::multiplies(),
                &Op::plus(),
                &format!("laplacian {g}x{g}"),
            );
            let vals32: Vec<f32> = vals.iter().map(|&v| v as f32).collect();
            let vals32b: Vec<f32> = vals2.iter().map(|&v| v as f32).collect();
            let x32: Vec<Vec<f32>> = x
                .iter()
                .map(|x| x.iter().map(|&v| v as f32).collect())
                .collect();
            check_spmv::<f32, u64>(
                &ctx,
                &mut r,
                &csr,
                [&vals32, &vals32b],
                [&x32[0], &x32[1]],
                true,
                &Op::multiplies(),
                &Op::plus(),
                &format!("laplacian {g}x{g}"),
            );
            // The Laplacian of a constant vector is 0 inside the grid.
            if g >= 3 {
                let ones = ctx.upload(&vec![1.0f64; g * g]).unwrap();
                let offsets = ctx.upload(&to_o::<u32>(&csr.offsets)).unwrap();
                let cols = ctx.upload(&csr.cols).unwrap();
                let m = ctx.upload(&vals).unwrap();
                let mut y = poisoned::<f64>(&ctx, g * g);
                ctx.spmv_csr(
                    &m,
                    &cols,
                    Csr::new(&offsets),
                    &ones,
                    &mut y,
                    &Op::multiplies(),
                    &Op::plus(),
                )
                .unwrap();
                let y = y.to_vec().unwrap();
                assert_eq!(y[g + 1], 0.0, "{ctx:?} laplacian interior");
                assert_eq!(y[0], 2.0, "{ctx:?} laplacian corner");
                assert_eq!(y[1], 1.0, "{ctx:?} laplacian edge");
            }
        }
    }
}

/// A semiring other than (*, +): y[i] = max over row i of (matrix + x); empty rows get -inf.
#[test]
fn spmv_max_plus_and_integers() {
    let mut r = rng();
    for ctx in backends() {
        let nv = seg_tile::<f64, u32>(&ctx, SegItems::SpmvBinary, false, false);
        for nnz in [
            0,
            1,
            nv,
            2 * nv + 1,
            if ctx.is_gpu() { MULTI_TILE } else { 9_999 },
        ] {
            let lengths: Vec<usize> = gen_lengths(&mut r, nnz, Dist::Uniform(8), nv)
                .into_iter()
                .flat_map(|l| if l == 5 { vec![l, 0, 0] } else { vec![l] })
                .collect();
            let csr = CsrMatrix::random(&mut r, &lengths);
            let m: Vec<Vec<f64>> = (0..2)
                .map(|_| (0..nnz).map(|_| r.random_range(-100..100) as f64).collect())
                .collect();
            let x: Vec<Vec<f64>> = (0..2)
                .map(|_| {
                    (0..csr.x_len)
                        .map(|_| r.random_range(-100..100) as f64)
                        .collect()
                })
                .collect();
            check_spmv::<f64, u32>(
                &ctx,
                &mut r,
                &csr,
                [&m[0], &m[1]],
                [&x[0], &x[1]],
                true,
                &Op::plus(),
                &Op::maximum(),
                "max-plus",
            );
            // Integers (wrapping) with u64 offsets.
            let m: Vec<Vec<i32>> = (0..2).map(|_| random_vec(&mut r, nnz)).collect();
            let x: Vec<Vec<i32>> = (0..2).map(|_| random_vec(&mut r, csr.x_len)).collect();
            check_spmv::<i32, u64>(
                &ctx,
                &mut r,
                &csr,
                [&m[0], &m[1]],
                [&x[0], &x[1]],
                true,
                &Op::multiplies(),
                &Op::plus(),
                "i32",
            );
        }
    }
}

/// SpMV on views at unaligned offsets (matrix, cols, offsets, x and y).
#[test]
fn spmv_on_views() {
    let mut r = rng();
    for ctx in backends() {
        let nnz = if ctx.is_gpu() { MULTI_TILE } else { 10_001 };
        let lengths = gen_lengths(&mut r, nnz, Dist::HalfEmpty, 1);
        let csr = CsrMatrix::random(&mut r, &lengths);
        let rows = csr.offsets.len();
        let m: Vec<f32> = (0..nnz + 3).map(|_| r.random_range(0..8) as f32).collect();
        let x: Vec<f32> = (0..csr.x_len + 3)
            .map(|_| r.random_range(0..8) as f32)
            .collect();
        let mut cols = vec![u32::MAX];
        cols.extend(&csr.cols);
        cols.push(u32::MAX);
        let mut offs = vec![7u64];
        offs.extend(&csr.offsets);
        offs.extend([1u64, 0]);
        let (mb, xb, cb, ob) = (
            ctx.upload(&m).unwrap(),
            ctx.upload(&x).unwrap(),
            ctx.upload(&cols).unwrap(),
            ctx.upload(&offs).unwrap(),
        );
        let expect = csr.product(
            None,
            Some(&m[3..]),
            &x[1..1 + csr.x_len],
            &Op::multiplies(),
            &Op::plus(),
        );
        let mut y = poisoned::<f32>(&ctx, rows + 4);
        ctx.spmv_csr(
            &mb.slice(3..),
            &cb.slice(1..1 + nnz),
            Csr::allow_empty(&ob.slice(1..1 + rows)),
            &xb.slice(1..1 + csr.x_len),
            &mut y.slice_mut(3..3 + rows),
            &Op::multiplies(),
            &Op::plus(),
        )
        .unwrap();
        let mut full = vec![f32::poison(); 3];
        full.extend(&expect);
        full.push(f32::poison());
        check(&y.to_vec().unwrap(), &full, &format!("{ctx:?} spmv views"));
    }
}
