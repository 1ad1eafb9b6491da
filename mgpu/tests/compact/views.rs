//! select_if, partition_if, unique and reduce_by_key on views at unaligned offsets, in place and
//! out of place.

use super::*;

/// select_if, unique, partition_if and reduce_by_key on views: inputs `slice(3..)` and
/// `slice(5..)` of buffers with random data before them, outputs `slice_mut(1..)` of poisoned
/// buffers; in place on `slice_mut(1..1 + n)` with data around it that must survive.
fn views_for<T: Case>(ctx: &Context, r: &mut StdRng) {
    let size = std::mem::size_of::<T>();
    let pred = T::predicate();
    let eq = T::equality();
    let p = T::sentinel();
    let tiles = [
        compact_tile(ctx, size),
        compact_tile(ctx, size + 8),
        run_tile(ctx, size + 8),
    ];
    let mut ns = vec![0, 1, 2];
    for t in tiles {
        ns.extend([t - 1, t, t + 1, 2 * t + 3]);
    }
    ns.push(if ctx.is_gpu() { MULTI_TILE } else { 10_007 });
    for n in ns {
        let what = format!("{ctx:?} {} views n={n}", T::CUDA_TYPE);
        // Selection.
        let keep = selection(r, n, Sel::Rate(0.6));
        let data: Vec<T> = keep.iter().map(|&k| T::make(r, k)).collect();
        let (kept, rejected) = split(&data, &keep);
        let mut host = random_vec::<T>(r, 3);
        host.extend(&data);
        let buf = ctx.upload(&host).unwrap();
        let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
        let c = ctx
            .select_if(&buf.slice(3..), &mut out.slice_mut(1..), &pred, Count::Host)
            .unwrap();
        check_count(c, kept.len(), &format!("{what} select_if"));
        let got = out.to_vec().unwrap();
        same(&got[..1], &[p]).unwrap_or_else(|e| panic!("{what} select_if: before: {e}"));
        check_written(&got[1..], &kept, p, &format!("{what} select_if"));

        let mut expect = kept.clone();
        expect.extend(rejected.iter().rev());
        let mut out = ctx.upload(&vec![p; n + 8]).unwrap();
        let c = ctx
            .partition_if(
                &buf.slice(3..),
                &mut out.slice_mut(5..5 + n),
                &pred,
                Count::Host,
            )
            .unwrap();
        check_count(c, kept.len(), &format!("{what} partition_if"));
        let got = out.to_vec().unwrap();
        same(&got[..5], &[p; 5]).unwrap_or_else(|e| panic!("{what} partition_if: before: {e}"));
        check_written(&got[5..], &expect, p, &format!("{what} partition_if"));

        // In place on an inner view.
        let mut around = random_vec::<T>(r, 1);
        around.extend(&data);
        around.extend(random_vec::<T>(r, 2));
        let mut inplace = ctx.upload(&around).unwrap();
        let c = ctx
            .select_if_in_place(&mut inplace.slice_mut(1..1 + n), &pred, Count::Host)
            .unwrap();
        check_count(c, kept.len(), &format!("{what} select_if_in_place"));
        let got = inplace.to_vec().unwrap();
        same(&got[..1], &around[..1]).unwrap_or_else(|e| panic!("{what}: before the view: {e}"));
        same(&got[1 + n..], &around[1 + n..])
            .unwrap_or_else(|e| panic!("{what}: after the view: {e}"));
        check_prefix(&got[1..], &kept, &format!("{what} select_if_in_place"));

        // Runs.
        let keys = run_keys::<T>(r, n, Runs::Mean(5), &tiles);
        let values = random_vec::<Affine>(r, n);
        let (rk, rv) = reduce_runs(&keys, &values, T::same_run, compose);
        let mut kh = random_vec::<T>(r, 3);
        kh.extend(&keys);
        let mut vh = random_vec::<Affine>(r, 5);
        vh.extend(&values);
        let (kin, vin) = (ctx.upload(&kh).unwrap(), ctx.upload(&vh).unwrap());
        let mut kout = ctx.upload(&vec![p; n + 2]).unwrap();
        let mut vout = ctx.upload(&vec![Affine::poison(); n + 7]).unwrap();
        let c = ctx
            .reduce_by_key(
                &kin.slice(3..),
                &vin.slice(5..),
                &mut kout.slice_mut(1..),
                &mut vout.slice_mut(7..),
                &eq,
                &affine_op(),
                Count::Host,
            )
            .unwrap();
        check_count(c, rk.len(), &format!("{what} reduce_by_key"));
        let (kg, vg) = (kout.to_vec().unwrap(), vout.to_vec().unwrap());
        same(&kg[..1], &[p]).unwrap_or_else(|e| panic!("{what} rbk keys: before: {e}"));
        check_written(&kg[1..], &rk, p, &format!("{what} reduce_by_key keys"));
        same(&vg[..7], &[Affine::poison(); 7])
            .unwrap_or_else(|e| panic!("{what} rbk values: before: {e}"));
        check_written(
            &vg[7..],
            &rv,
            Affine::poison(),
            &format!("{what} reduce_by_key values"),
        );

        let mut out = ctx.upload(&vec![p; n + 1]).unwrap();
        let c = ctx
            .unique(&kin.slice(3..), &mut out.slice_mut(1..), &eq, Count::Host)
            .unwrap();
        check_count(c, rk.len(), &format!("{what} unique"));
        let got = out.to_vec().unwrap();
        same(&got[..1], &[p]).unwrap_or_else(|e| panic!("{what} unique: before: {e}"));
        check_written(&got[1..], &rk, p, &format!("{what} unique"));

        // Reduce-by-key in place on inner views at different offsets.
        let mut kb = ctx.upload(&kh).unwrap();
        let mut vb = ctx.upload(&vh).unwrap();
        let c = ctx
            .reduce_by_key_in_place(
                &mut kb.slice_mut(3..),
                &mut vb.slice_mut(5..),
                &eq,
                &affine_op(),
                Count::Host,
            )
            .unwrap();
        check_count(c, rk.len(), &format!("{what} reduce_by_key_in_place"));
        let (kg, vg) = (kb.to_vec().unwrap(), vb.to_vec().unwrap());
        same(&kg[..3], &kh[..3]).unwrap_or_else(|e| panic!("{what}: before the keys: {e}"));
        same(&vg[..5], &vh[..5]).unwrap_or_else(|e| panic!("{what}: before the values: {e}"));
        check_prefix(
            &kg[3..],
            &rk,
            &format!("{what} reduce_by_key_in_place keys"),
        );
        check_prefix(
            &vg[5..],
            &rv,
            &format!("{what} reduce_by_key_in_place values"),
        );
    }
}

#[test]
fn compaction_on_views() {
    let mut r = rng();
    for ctx in backends() {
        views_for::<i32>(&ctx, &mut r);
        views_for::<u8>(&ctx, &mut r);
        views_for::<f64>(&ctx, &mut r);
        views_for::<Tagged>(&ctx, &mut r);
    }
}
