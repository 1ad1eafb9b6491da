//! segreduce_plan + segreduce_apply: plans with and without support_empty over many geometries,
//! applied to several arrays and operators, to mapped and counting values; wrong lengths and bad
//! geometries are errors; a plan belongs to its backend.

use super::*;

/// Plans made with support_empty over geometries with empty segments (the apply marks heads from
/// the offsets) and without (the apply reads the plan's packed heads): tile edges, last tiles
/// that end on a thread's boundary or inside a thread's items, segments of length 1 and 2.
fn plans_for<T: TestElement, O: TestOffset>(ctx: &Context, r: &mut StdRng, ops: [&Op<T>; 2]) {
    let table = mgpu::tuning::table(Some(ctx.arch().unwrap_or(90)));
    let mut ns = vec![0, 1, 2];
    let mut nvs = Vec::new();
    for long in [false, true] {
        let tuning =
            mgpu::cuda::segreduce::table_tuning::<T, O>(&table, SegItems::Values, false, long)
                .unwrap();
        let (nv, vt) = (tuning.nv(), tuning.vt as usize);
        ns.extend([nv - 1, nv, nv + 1, 2 * nv, 3 * nv + 1]);
        ns.extend([nv + 5 * vt, nv + 5 * vt + 1, nv + 5 * vt - 1]);
        nvs.push(nv);
    }
    ns.sort();
    ns.dedup();
    ns.push(if ctx.is_gpu() { MULTI_TILE } else { 20_011 });
    for n in ns {
        for dist in [
            Dist::HalfEmpty,
            Dist::PowerLaw,
            Dist::EmptyRuns,
            Dist::EmptyFloods,
            Dist::LeadingEmpty,
            Dist::TrailingEmpty,
            Dist::Fixed(1),
            Dist::Fixed(2),
            Dist::TileEdges,
            Dist::TileFixed(0),
            Dist::One,
        ] {
            let what = format!(
                "{ctx:?} plan {}/{} n={n} {dist:?}",
                T::CUDA_TYPE,
                O::CUDA_TYPE
            );
            let lengths = gen_lengths(r, n, dist, dist_tile(dist, &nvs));
            let (offsets, _) = offsets_of(&lengths);
            let k = offsets.len();
            let obuf = ctx.upload(&to_o::<O>(&offsets)).unwrap();
            let plan = ctx
                .segreduce_plan::<T, O>(Csr::allow_empty(&obuf), n)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!((plan.num_segments(), plan.count()), (k, n), "{what}");
            let arrays: Vec<Vec<T>> = (0..3).map(|_| random_vec(r, n)).collect();
            for (j, values) in arrays.iter().enumerate() {
                let vbuf = ctx.upload(values).unwrap();
                for op in ops {
                    let expect = reference(&offsets, n, None, |m| values[m], op);
                    let mut out = poisoned::<T>(ctx, k);
                    ctx.segreduce_apply(&plan, &vbuf, &mut out, op)
                        .unwrap_or_else(|e| panic!("{what} array {j} {}: {e}", op.name()));
                    check(
                        &out.to_vec().unwrap(),
                        &expect,
                        &format!("{what} array {j} {}", op.name()),
                    );
                }
            }
            // Wrong lengths: errors, nothing written.
            let short = ctx.upload(&arrays[0][..n.saturating_sub(1)]).unwrap();
            let mut long = arrays[0].clone();
            long.push(arrays[0].first().copied().unwrap_or(T::poison()));
            let long = ctx.upload(&long).unwrap();
            for (bad, len) in [(&short, n.saturating_sub(1)), (&long, n + 1)] {
                if len == n {
                    continue;
                }
                let mut out = poisoned::<T>(ctx, k);
                let e = ctx
                    .segreduce_apply(&plan, bad, &mut out, ops[0])
                    .unwrap_err();
                expect_invalid(
                    e,
                    &[
                        "segreduce_apply",
                        &format!("{len} values for a plan of {n} positions"),
                    ],
                    &what,
                );
                check(
                    &out.to_vec().unwrap(),
                    &vec![T::poison(); k],
                    &format!("{what} written on error"),
                );
            }
            let vbuf = ctx.upload(&arrays[0]).unwrap();
            let mut out = poisoned::<T>(ctx, k + 1);
            let e = ctx
                .segreduce_apply(&plan, &vbuf, &mut out, ops[0])
                .unwrap_err();
            expect_invalid(
                e,
                &[&format!(
                    "the output holds {} elements for {k} segments",
                    k + 1
                )],
                &what,
            );
            check(
                &out.to_vec().unwrap(),
                &vec![T::poison(); k + 1],
                &format!("{what} written on error"),
            );
            still_usable(ctx, &what);
        }
    }
}

#[test]
fn plans() {
    let mut r = rng();
    for ctx in backends() {
        plans_for::<i32, u32>(&ctx, &mut r, [&Op::plus(), &Op::maximum()]);
        plans_for::<i32, u64>(&ctx, &mut r, [&Op::minimum(), &Op::plus()]);
        plans_for::<Affine, u32>(&ctx, &mut r, [&affine_op(), &affine_op()]);
        plans_for::<f32, u64>(&ctx, &mut r, [&Op::plus(), &Op::maximum()]);
    }
}

/// A plan applied to mapped and counting values; plans without support_empty; a plan checks
/// its geometry when made.
#[test]
fn plans_with_sources_and_checks() {
    let mut r = rng();
    for ctx in backends() {
        let n = if ctx.is_gpu() { MULTI_TILE } else { 12_345 };
        let lengths = gen_lengths(&mut r, n, Dist::Uniform(30), 1);
        let (offsets, _) = offsets_of(&lengths);
        let k = offsets.len();
        let obuf = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
        let plan = ctx.segreduce_plan::<i64, u32>(Csr::new(&obuf), n).unwrap();
        let v: Vec<i64> = (0..n).map(|_| r.random_range(-3000..3000)).collect();
        let vbuf = ctx.upload(&v).unwrap();
        let sq = Map::<i64, i64>::square();
        let expect = reference(&offsets, n, None, |m| v[m] * v[m], &Op::plus());
        let mut out = poisoned::<i64>(&ctx, k);
        ctx.segreduce_apply(&plan, &vbuf.map(&sq), &mut out, &Op::plus())
            .unwrap();
        check(
            &out.to_vec().unwrap(),
            &expect,
            &format!("{ctx:?} plan mapped"),
        );
        let c = Counting::new(-100i64, n);
        let expect = reference(&offsets, n, None, |m| c.nth(m), &Op::plus());
        let mut out = poisoned::<i64>(&ctx, k);
        ctx.segreduce_apply(&plan, &c, &mut out, &Op::plus())
            .unwrap();
        check(
            &out.to_vec().unwrap(),
            &expect,
            &format!("{ctx:?} plan counting"),
        );

        // Making a plan checks the geometry.
        let bad = ctx.upload(&[0u32, 4, 4, 9]).unwrap();
        let e = ctx
            .segreduce_plan::<i32, u32>(Csr::new(&bad), 10)
            .unwrap_err();
        expect_invalid(
            e,
            &["segreduce_plan", "offsets[2] = 4 equals offsets[1]"],
            "plan",
        );
        let e = ctx
            .segreduce_plan::<i32, u32>(Csr::allow_empty(&bad), 8)
            .unwrap_err();
        expect_invalid(e, &["offsets[3] = 9 is past the end"], "plan");
        let empty = ctx.upload::<u64>(&[]).unwrap();
        let e = ctx
            .segreduce_plan::<i32, u64>(Csr::allow_empty(&empty), 5)
            .unwrap_err();
        expect_invalid(e, &["no segments (empty offsets) for 5 positions"], "plan");
        let plan = ctx
            .segreduce_plan::<i32, u64>(Csr::allow_empty(&empty), 0)
            .unwrap();
        let mut out = ctx.upload::<i32>(&[]).unwrap();
        ctx.segreduce_apply(
            &plan,
            &ctx.upload::<i32>(&[]).unwrap(),
            &mut out,
            &Op::plus(),
        )
        .unwrap();
        still_usable(&ctx, "plans");
    }
    // A plan belongs to the backend it was made on.
    if let Some(gpu) = gpu() {
        let cpu = Context::cpu();
        let coffsets = cpu.upload(&[0u32, 2, 5]).unwrap();
        let cplan = cpu
            .segreduce_plan::<i32, u32>(Csr::new(&coffsets), 6)
            .unwrap();
        let gvalues = gpu.upload(&[1, 2, 3, 4, 5, 6]).unwrap();
        let mut gout = poisoned::<i32>(&gpu, 3);
        assert!(gpu
            .segreduce_apply(&cplan, &gvalues, &mut gout, &Op::plus())
            .is_err());
        check(
            &gout.to_vec().unwrap(),
            &[i32::poison(); 3],
            "cpu plan on gpu",
        );
        let goffsets = gpu.upload(&[0u32, 2, 5]).unwrap();
        let gplan = gpu
            .segreduce_plan::<i32, u32>(Csr::new(&goffsets), 6)
            .unwrap();
        let cvalues = cpu.upload(&[1, 2, 3, 4, 5, 6]).unwrap();
        let mut cout = poisoned::<i32>(&cpu, 3);
        assert!(cpu
            .segreduce_apply(&gplan, &cvalues, &mut cout, &Op::plus())
            .is_err());
        check(
            &cout.to_vec().unwrap(),
            &[i32::poison(); 3],
            "gpu plan on cpu",
        );
        gpu.segreduce_apply(&gplan, &gvalues, &mut gout, &Op::plus())
            .unwrap();
        assert_eq!(gout.to_vec().unwrap(), [3, 12, 6]);
        still_usable(&gpu, "plans across backends");
    }
}
