//! Every primitive on views: at unaligned offsets (1, 3, 5, 7 elements: not 16-byte aligned), at
//! an aligned offset inside a buffer, and on tails of buffers (`slice(k..)`), for several element
//! types and sizes around the tile edges. Inputs are surrounded by random data (reading past a view
//! changes the result); outputs by poison (writing past a view shows). Out-of-range slices, slices
//! of slices, and views' own methods.

mod common;
use common::*;
use mgpu::tuning::Family;
use mgpu::{
    Buffer, Comparator, Context, Element, Error, Op, ScanAlgorithm, ScanKind, ScanOptions, Total,
    View, ViewMut,
};
use rand::Rng;
use std::ops::Range;

/// Elements after a view that is not a tail.
const PAD: usize = 9;

/// Where a view of `n` elements sits in its buffer: `off` elements in, followed by `PAD` more
/// elements, or by nothing (`tail`: the view is `slice(off..)`).
#[derive(Clone, Copy, Debug)]
struct Place {
    off: usize,
    tail: bool,
}

const fn at(off: usize) -> Place {
    Place { off, tail: false }
}

const fn tail(off: usize) -> Place {
    Place { off, tail: true }
}

impl Place {
    fn buffer_len(self, n: usize) -> usize {
        self.off + n + if self.tail { 0 } else { PAD }
    }
    fn range(self, n: usize) -> Range<usize> {
        self.off..self.off + n
    }
}

fn view<T: Element>(b: &Buffer<T>, p: Place, n: usize) -> View<'_, T> {
    let v = if p.tail {
        b.slice(p.off..)
    } else {
        b.slice(p.off..p.off + n)
    };
    assert_eq!(v.len(), n, "{p:?}");
    v
}

fn view_mut<T: Element>(b: &mut Buffer<T>, p: Place, n: usize) -> ViewMut<'_, T> {
    let v = if p.tail {
        b.slice_mut(p.off..)
    } else {
        b.slice_mut(p.off..p.off + n)
    };
    assert_eq!(v.len(), n, "{p:?}");
    v
}

/// `inside` at `p`, random elements around it.
fn surrounded<T: TestElement>(r: &mut rand::rngs::StdRng, inside: &[T], p: Place) -> Vec<T> {
    let mut v = random_vec::<T>(r, p.buffer_len(inside.len()));
    v[p.range(inside.len())].copy_from_slice(inside);
    v
}

fn poisoned<T: TestElement>(n: usize, p: Place) -> Vec<T> {
    vec![T::poison(); p.buffer_len(n)]
}

/// Input and output places for a size: every unaligned offset, an aligned offset that is not the
/// buffer's start, tails; the multi-level size gets one unaligned tail case.
fn places<T: Element>(n: usize) -> Vec<(Place, Place)> {
    if n >= MULTI_LEVEL {
        return vec![(tail(5), at(3))];
    }
    let aligned = (16 / std::mem::size_of::<T>()).max(1);
    vec![
        (at(1), at(3)),
        (at(3), at(5)),
        (at(5), at(7)),
        (at(7), at(1)),
        (at(aligned), at(aligned)),
        (tail(3), tail(7)),
        (at(0), tail(1)),
    ]
}

fn sizes_for(ctx: &Context, family: Family, elem: usize) -> Vec<usize> {
    edge_sizes(&[tile(ctx, family, elem)])
}

fn reduce_on_views<T: TestElement>(ctx: &Context, r: &mut rand::rngs::StdRng, op: &Op<T>) {
    for n in sizes_for(ctx, Family::Reduce, std::mem::size_of::<T>()) {
        for (ip, op_place) in places::<T>(n) {
            let what = format!("{ctx:?} {} reduce n={n} in {ip:?}", T::CUDA_TYPE);
            let data = random_vec::<T>(r, n);
            let expect = fold(&data, op);
            let host = surrounded(r, &data, ip);
            let buf = ctx.upload(&host).unwrap();
            let v = view(&buf, ip, n);
            same(&[ctx.reduce(&v, op).unwrap()], &[expect])
                .unwrap_or_else(|e| panic!("{what}: to host: {e}"));
            // To device, into a one-element view of a poisoned buffer.
            let before = poisoned::<T>(1, op_place);
            let mut totals = ctx.upload(&before).unwrap();
            ctx.reduce_to_device(&v, op, &mut view_mut(&mut totals, op_place, 1))
                .unwrap();
            check_region(
                &totals.to_vec().unwrap(),
                &before,
                op_place.range(1),
                &[expect],
                &format!("{what}: reduce_to_device into {op_place:?}"),
            );
            // Both, into the middle element of three.
            let mut totals = ctx.upload(&[T::poison(); 3]).unwrap();
            let host_total = {
                let mut middle = totals.slice_mut(1..2);
                ctx.reduce_with(&v, op, Total::Both(&mut middle), None)
                    .unwrap()
            };
            same(&[host_total.unwrap()], &[expect]).unwrap_or_else(|e| panic!("{what}: {e}"));
            same(
                &totals.to_vec().unwrap(),
                &[T::poison(), expect, T::poison()],
            )
            .unwrap_or_else(|e| panic!("{what}: Total::Both into a view: {e}"));
            same(&buf.to_vec().unwrap(), &host).unwrap_or_else(|e| panic!("{what}: input: {e}"));
        }
    }
}

fn scan_on_views<T: TestElement>(ctx: &Context, r: &mut rand::rngs::StdRng, op: &Op<T>) {
    for n in sizes_for(ctx, Family::Scan, std::mem::size_of::<T>()) {
        for (ip, outp) in places::<T>(n) {
            let data = random_vec::<T>(r, n);
            let host = surrounded(r, &data, ip);
            let buf = ctx.upload(&host).unwrap();
            let v = view(&buf, ip, n);
            for kind in [ScanKind::Exclusive, ScanKind::Inclusive] {
                for algorithm in [ScanAlgorithm::LookBack, ScanAlgorithm::ReduceThenScan] {
                    let options = ScanOptions {
                        kind,
                        algorithm,
                        tuning: None,
                    };
                    let what = format!(
                        "{ctx:?} {} scan {kind:?} {algorithm:?} n={n} in {ip:?} out {outp:?}",
                        T::CUDA_TYPE
                    );
                    let (expect, expect_total) = serial_scan(&data, op, kind);
                    // Out of place, view to view, the total into a view too.
                    let before = poisoned::<T>(n, outp);
                    let mut out = ctx.upload(&before).unwrap();
                    let mut totals = ctx.upload(&[T::poison(); 3]).unwrap();
                    let host_total = {
                        let mut middle = totals.slice_mut(1..2);
                        ctx.scan_with(
                            &v,
                            &mut view_mut(&mut out, outp, n),
                            op,
                            options,
                            Total::Both(&mut middle),
                        )
                        .unwrap()
                    };
                    check_region(
                        &out.to_vec().unwrap(),
                        &before,
                        outp.range(n),
                        &expect,
                        &what,
                    );
                    same(&[host_total.unwrap()], &[expect_total])
                        .unwrap_or_else(|e| panic!("{what}: host total: {e}"));
                    same(
                        &totals.to_vec().unwrap(),
                        &[T::poison(), expect_total, T::poison()],
                    )
                    .unwrap_or_else(|e| panic!("{what}: device total: {e}"));
                    same(&buf.to_vec().unwrap(), &host)
                        .unwrap_or_else(|e| panic!("{what}: input changed: {e}"));
                    // In place on the view; the total to a tail view of the totals buffer.
                    let mut inplace = ctx.upload(&host).unwrap();
                    let mut totals = ctx.upload(&[T::poison(); 3]).unwrap();
                    let none = {
                        let mut last = totals.slice_mut(2..);
                        ctx.scan_in_place_with(
                            &mut view_mut(&mut inplace, ip, n),
                            op,
                            options,
                            Total::Device(&mut last),
                        )
                        .unwrap()
                    };
                    assert!(none.is_none(), "{what}: Total::Device returns nothing");
                    check_region(
                        &inplace.to_vec().unwrap(),
                        &host,
                        ip.range(n),
                        &expect,
                        &format!("{what}: in place"),
                    );
                    same(
                        &totals.to_vec().unwrap(),
                        &[T::poison(), T::poison(), expect_total],
                    )
                    .unwrap_or_else(|e| panic!("{what}: in place device total: {e}"));
                }
            }
        }
    }
}

fn sort_on_views<T: TestElement>(ctx: &Context, r: &mut rand::rngs::StdRng, comp: &Comparator<T>) {
    let elem = std::mem::size_of::<T>();
    for n in sizes_for(ctx, Family::SortKeys, elem) {
        for (ip, _) in places::<T>(n) {
            let what = format!("{ctx:?} {} sort n={n} in {ip:?}", T::CUDA_TYPE);
            let keys = random_vec::<T>(r, n);
            let (expect, _) = stable_sorted(&keys, comp);
            let host = surrounded(r, &keys, ip);
            let mut buf = ctx.upload(&host).unwrap();
            ctx.sort(&mut view_mut(&mut buf, ip, n), comp).unwrap();
            check_region(&buf.to_vec().unwrap(), &host, ip.range(n), &expect, &what);
        }
    }
    for n in sizes_for(ctx, Family::SortPairs, elem + 4) {
        for (kp, vp) in places::<T>(n) {
            let what = format!(
                "{ctx:?} {} sort pairs n={n} keys {kp:?} values {vp:?}",
                T::CUDA_TYPE
            );
            let keys = random_vec::<T>(r, n);
            let (expect, order) = stable_sorted(&keys, comp);
            // Pairs: the values are the input positions, so any instability shows.
            let positions: Vec<u32> = (0..n as u32).collect();
            let khost = surrounded(r, &keys, kp);
            let vhost = surrounded(r, &positions, vp);
            let mut kb = ctx.upload(&khost).unwrap();
            let mut vb = ctx.upload(&vhost).unwrap();
            ctx.sort_pairs(
                &mut view_mut(&mut kb, kp, n),
                &mut view_mut(&mut vb, vp, n),
                comp,
            )
            .unwrap();
            check_region(
                &kb.to_vec().unwrap(),
                &khost,
                kp.range(n),
                &expect,
                &format!("{what}: keys"),
            );
            check_region(
                &vb.to_vec().unwrap(),
                &vhost,
                vp.range(n),
                &order,
                &format!("{what}: values"),
            );
            // Indices into a poisoned view.
            let mut kb = ctx.upload(&khost).unwrap();
            let ibefore = poisoned::<u32>(n, vp);
            let mut ib = ctx.upload(&ibefore).unwrap();
            ctx.sort_indices(
                &mut view_mut(&mut kb, kp, n),
                &mut view_mut(&mut ib, vp, n),
                comp,
            )
            .unwrap();
            check_region(
                &kb.to_vec().unwrap(),
                &khost,
                kp.range(n),
                &expect,
                &format!("{what}: indices' keys"),
            );
            check_region(
                &ib.to_vec().unwrap(),
                &ibefore,
                vp.range(n),
                &order,
                &format!("{what}: indices"),
            );
        }
    }
}

fn merge_on_views<T: TestElement>(ctx: &Context, r: &mut rand::rngs::StdRng, comp: &Comparator<T>) {
    let elem = std::mem::size_of::<T>();
    for (family, pairs) in [(Family::SortKeys, false), (Family::SortPairs, true)] {
        let elem = if pairs { elem + 4 } else { elem };
        for na in sizes_for(ctx, family, elem) {
            for (i, (ap, outp)) in places::<T>(na).into_iter().enumerate() {
                // B: a different length each time, at another place.
                let nb = match i % 3 {
                    0 => na / 2 + 3,
                    1 => na,
                    _ => r.random_range(0..=na + 40),
                };
                let bp = Place {
                    off: (ap.off + 2) % 8,
                    tail: !ap.tail,
                };
                let what = format!(
                    "{ctx:?} {} merge{} {na}+{nb} a {ap:?} b {bp:?} out {outp:?}",
                    T::CUDA_TYPE,
                    if pairs { " pairs" } else { "" }
                );
                let a = stable_sorted(&random_vec::<T>(r, na), comp).0;
                let b = stable_sorted(&random_vec::<T>(r, nb), comp).0;
                let (expect, from) = serial_merge(&a, &b, comp);
                let n = na + nb;
                let (ah, bh) = (surrounded(r, &a, ap), surrounded(r, &b, bp));
                let (ab, bb) = (ctx.upload(&ah).unwrap(), ctx.upload(&bh).unwrap());
                let (av, bv) = (view(&ab, ap, na), view(&bb, bp, nb));
                let before = poisoned::<T>(n, outp);
                let mut out = ctx.upload(&before).unwrap();
                if !pairs {
                    ctx.merge(&av, &bv, &mut view_mut(&mut out, outp, n), comp)
                        .unwrap();
                    check_region(
                        &out.to_vec().unwrap(),
                        &before,
                        outp.range(n),
                        &expect,
                        &what,
                    );
                    continue;
                }
                let a_values: Vec<u32> = (0..na as u32).collect();
                let b_values: Vec<u32> = (na as u32..n as u32).collect();
                let (avp, bvp) = (at(ap.off ^ 1), tail(bp.off ^ 4));
                let avh = surrounded(r, &a_values, avp);
                let bvh = surrounded(r, &b_values, bvp);
                let (avb, bvb) = (ctx.upload(&avh).unwrap(), ctx.upload(&bvh).unwrap());
                let ovp = at(outp.off ^ 6);
                let vbefore = poisoned::<u32>(n, ovp);
                let mut ov = ctx.upload(&vbefore).unwrap();
                ctx.merge_pairs(
                    &av,
                    &view(&avb, avp, na),
                    &bv,
                    &view(&bvb, bvp, nb),
                    &mut view_mut(&mut out, outp, n),
                    &mut view_mut(&mut ov, ovp, n),
                    comp,
                )
                .unwrap();
                check_region(
                    &out.to_vec().unwrap(),
                    &before,
                    outp.range(n),
                    &expect,
                    &format!("{what}: keys"),
                );
                check_region(
                    &ov.to_vec().unwrap(),
                    &vbefore,
                    ovp.range(n),
                    &from,
                    &format!("{what}: values"),
                );
            }
        }
    }
}

fn copy_on_views<T: TestElement>(ctx: &Context, r: &mut rand::rngs::StdRng) {
    for n in sizes_for(ctx, Family::Reduce, std::mem::size_of::<T>()) {
        for (ip, outp) in places::<T>(n) {
            let what = format!("{ctx:?} {} copy n={n} {ip:?} -> {outp:?}", T::CUDA_TYPE);
            let data = random_vec::<T>(r, n);
            let host = surrounded(r, &data, ip);
            let buf = ctx.upload(&host).unwrap();
            let v = view(&buf, ip, n);
            let before = poisoned::<T>(n, outp);
            let mut out = ctx.upload(&before).unwrap();
            ctx.copy(&v, &mut view_mut(&mut out, outp, n)).unwrap();
            check_region(&out.to_vec().unwrap(), &before, outp.range(n), &data, &what);
            // Into a longer view: only the first n elements are written.
            let wide = at(outp.off);
            let before = poisoned::<T>(n + 2, wide);
            let mut out = ctx.upload(&before).unwrap();
            ctx.copy(&v, &mut view_mut(&mut out, wide, n + 2)).unwrap();
            check_region(
                &out.to_vec().unwrap(),
                &before,
                wide.range(n),
                &data,
                &format!("{what}: into a longer view"),
            );
            // A view read back directly is the data.
            same(&v.to_vec().unwrap(), &data).unwrap_or_else(|e| panic!("{what}: to_vec: {e}"));
        }
    }
}

fn every_primitive<T: TestElement>(op: &Op<T>, comp: &Comparator<T>) {
    let mut r = rng();
    for ctx in backends() {
        reduce_on_views(&ctx, &mut r, op);
        scan_on_views(&ctx, &mut r, op);
        sort_on_views(&ctx, &mut r, comp);
        merge_on_views(&ctx, &mut r, comp);
        copy_on_views::<T>(&ctx, &mut r);
    }
}

#[test]
fn views_i32() {
    every_primitive::<i32>(&Op::plus(), &Comparator::less());
}

#[test]
fn views_u8() {
    // u8 sums wrap; keys have many duplicates (stability shows).
    every_primitive::<u8>(&Op::plus(), &Comparator::greater());
}

#[test]
fn views_i64() {
    every_primitive::<i64>(&Op::plus(), &Comparator::less());
}

#[test]
fn views_f64() {
    every_primitive::<f64>(&Op::plus(), &Comparator::less());
}

#[test]
fn views_affine_non_commutative() {
    every_primitive::<Affine>(&affine_op(), &affine_key_less());
}

#[test]
fn views_tagged_12_byte_elements() {
    let by_a = Comparator::new(
        "tagged_by_a",
        |x: &Tagged, y: &Tagged| x.a < y.a,
        "a.a < b.a",
    );
    every_primitive::<Tagged>(&tagged_op(), &by_a);
}

/// Another operator over the same views: maximum and minimum reductions and scans of i32.
#[test]
fn views_other_operators() {
    let mut r = rng();
    for ctx in backends() {
        reduce_on_views::<i32>(&ctx, &mut r, &Op::maximum());
        reduce_on_views::<i32>(&ctx, &mut r, &Op::minimum());
        scan_on_views::<u8>(&ctx, &mut r, &Op::maximum());
        reduce_on_views::<i64>(&ctx, &mut r, &Op::plus().commutative(false));
    }
}

fn expect_out_of_range<V>(result: mgpu::Result<V>, parts: &[&str], what: &str) {
    match result {
        Err(e @ Error::RangeOutOfBounds { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("out of range"), "{what}: {msg}");
            for p in parts {
                assert!(msg.contains(p), "{what}: `{p}` not in: {msg}");
            }
        }
        Err(e) => panic!("{what}: wrong error: {e}"),
        Ok(_) => panic!("{what}: out-of-range slice accepted"),
    }
}

#[test]
// Reversed ranges are the point here.
#[allow(clippy::reversed_empty_ranges)]
fn out_of_range_slices_are_errors() {
    for ctx in backends() {
        let data: Vec<i32> = (0..10).collect();
        let mut b = ctx.upload(&data).unwrap();
        let len = b.len();
        expect_out_of_range(b.try_slice(5..3), &["5", "3", "10 elements"], "5..3");
        expect_out_of_range(b.try_slice(0..len + 1), &["11", "10 elements"], "0..11");
        expect_out_of_range(b.try_slice(11..), &["11", "10 elements"], "11..");
        expect_out_of_range(b.try_slice(0..=len), &["10 elements"], "0..=10");
        expect_out_of_range(b.try_slice(..=usize::MAX), &["10 elements"], "..=MAX");
        expect_out_of_range(
            b.try_slice((
                std::ops::Bound::Excluded(usize::MAX),
                std::ops::Bound::Unbounded,
            )),
            &["10 elements"],
            "(MAX, ..)",
        );
        expect_out_of_range(
            b.try_slice_mut(len + 1..),
            &["11", "10 elements"],
            "mut 11..",
        );
        expect_out_of_range(b.try_slice_mut(7..4), &["7", "4"], "mut 7..4");
        // Empty ranges at the ends are fine.
        assert!(b.try_slice(len..).unwrap().is_empty());
        assert!(b.try_slice(0..0).unwrap().is_empty());
        assert!(b.try_slice(4..4).unwrap().is_empty());
        assert!(b.try_slice_mut(len..len).unwrap().is_empty());
        assert_eq!(b.try_slice(..).unwrap().len(), len);
        assert_eq!(b.try_slice(2..=4).unwrap().to_vec().unwrap(), vec![2, 3, 4]);
        // On views: bounds are the view's, not the buffer's.
        let v = b.slice(2..8);
        expect_out_of_range(v.try_slice(0..7), &["7", "6 elements"], "view 0..7");
        expect_out_of_range(v.try_slice(4..2), &["4", "2"], "view 4..2");
        assert_eq!(v.try_slice(6..).unwrap().len(), 0);
        let mut m = b.slice_mut(3..);
        expect_out_of_range(m.try_slice_mut(8..), &["8", "7 elements"], "view mut 8..");
        expect_out_of_range(
            m.try_slice(0..8),
            &["8", "7 elements"],
            "view mut slice 0..8",
        );
        assert_eq!(m.try_slice_mut(7..).unwrap().len(), 0);
        // Nothing was written by any of it.
        assert_eq!(b.to_vec().unwrap(), data, "{ctx:?}");
    }
}

/// `f` must panic, with a message that says the slice is out of range.
fn expect_panic(what: &str, f: impl FnOnce()) {
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .err()
        .unwrap_or_else(|| panic!("{what}: no panic"));
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        msg.contains("out of range"),
        "{what}: panicked with {msg:?}"
    );
}

#[test]
// Reversed ranges are the point here.
#[allow(clippy::reversed_empty_ranges)]
fn out_of_range_slice_panics() {
    for ctx in backends() {
        let mut b = ctx.upload(&[1u64, 2, 3, 4, 5]).unwrap();
        let len = b.len();
        expect_panic("slice(0..len+1)", || {
            b.slice(0..len + 1);
        });
        expect_panic("slice(4..2)", || {
            b.slice(4..2);
        });
        expect_panic("slice_mut(len+1..)", || {
            b.slice_mut(len + 1..);
        });
        expect_panic("view.slice(..=3) of 3", || {
            b.slice(1..4).slice(..=3);
        });
        expect_panic("view_mut.slice_mut(2..5) of 4", || {
            b.slice_mut(1..).slice_mut(2..5);
        });
        assert_eq!(b.to_vec().unwrap(), vec![1, 2, 3, 4, 5]);
    }
}

#[test]
#[should_panic(expected = "out of range")]
fn slice_past_the_end_panics_like_a_rust_slice() {
    let ctx = Context::cpu();
    let b = ctx.upload(&[1, 2, 3]).unwrap();
    let _ = b.slice(0..4);
}

#[test]
fn slices_of_slices() {
    let mut r = rng();
    for ctx in backends() {
        let n = 1000;
        let data = random_vec::<i32>(&mut r, n);
        let mut b = ctx.upload(&data).unwrap();
        // Read-only nesting.
        let v = b.slice(2..);
        let w = v.slice(1..3);
        assert_eq!(w.len(), 2);
        assert_eq!(w.to_vec().unwrap(), data[3..5]);
        // (`View::slice` borrows the view it is called on, so each level is bound.)
        let l1 = b.slice(5..900);
        let l2 = l1.slice(7..);
        let l3 = l2.slice(..100);
        let deep = l3.slice(3..=50);
        // In one expression, as a temporary chain.
        assert_eq!(b.slice(2..).slice(1..3).to_vec().unwrap(), data[3..5]);
        assert_eq!(deep.len(), 48);
        assert_eq!(deep.to_vec().unwrap(), data[15..63]);
        let expect = data[15..63].iter().fold(0i32, |a, &x| a.wrapping_add(x));
        assert_eq!(ctx.reduce(&deep, &Op::plus()).unwrap(), expect, "{ctx:?}");
        // A view is Copy: the same view as both inputs of a merge.
        let sorted = {
            let mut s = data[..100].to_vec();
            s.sort();
            s
        };
        let sb = ctx.upload(&sorted).unwrap();
        let s1 = sb.slice(10..60);
        let sv = s1.slice(5..);
        let mut out = ctx.upload(&[i32::poison(); 92]).unwrap();
        ctx.merge(&sv, &sv, &mut out.slice_mut(1..91), &Comparator::less())
            .unwrap();
        let mut twice: Vec<i32> = sorted[15..60].iter().flat_map(|&x| [x, x]).collect();
        twice.insert(0, i32::poison());
        twice.push(i32::poison());
        assert_eq!(
            out.to_vec().unwrap(),
            twice,
            "{ctx:?} merge of a view with itself"
        );
        // Writable nesting: a scan in place on a view of a view of a view.
        {
            let mut m = b.slice_mut(100..);
            let mut m2 = m.slice_mut(11..500);
            let mut m3 = m2.slice_mut(1..=300);
            assert_eq!(m3.len(), 300);
            // A read-only view of a writable view.
            assert_eq!(m3.slice(5..7).to_vec().unwrap(), data[117..119]);
            ctx.scan_in_place(&mut m3, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
        }
        let mut expect = data.clone();
        let mut acc = 0i32;
        for x in &mut expect[112..412] {
            acc = acc.wrapping_add(*x);
            *x = acc;
        }
        assert_eq!(b.to_vec().unwrap(), expect, "{ctx:?} nested scan in place");
        // copy_from_host through nested views writes only there; a wrong length writes nothing.
        {
            let mut m = b.slice_mut(500..600);
            let mut m2 = m.slice_mut(3..);
            m2.slice_mut(..4).copy_from_host(&[7, 8, 9, 10]).unwrap();
            match m2.slice_mut(..4).copy_from_host(&[1, 2, 3]) {
                Err(e @ Error::LengthMismatch { .. }) => {
                    assert!(e.to_string().contains("3 elements"), "{e}")
                }
                other => panic!("copy_from_host of a wrong length: {other:?}"),
            }
        }
        expect[503..507].copy_from_slice(&[7, 8, 9, 10]);
        assert_eq!(b.to_vec().unwrap(), expect, "{ctx:?} nested copy_from_host");
        // Sort a view of a view; the rest is untouched.
        b.slice_mut(1..)
            .slice_mut(2..=8)
            .slice_mut(1..)
            .copy_from_host(&[5, 1, 4, 1, 5, 9])
            .unwrap();
        ctx.sort(&mut b.slice_mut(4..).slice_mut(..6), &Comparator::less())
            .unwrap();
        expect[4..10].copy_from_slice(&[1, 1, 4, 5, 5, 9]);
        assert_eq!(b.to_vec().unwrap(), expect, "{ctx:?} nested sort");
    }
}

#[test]
fn views_report_their_length_and_contents() {
    for ctx in backends() {
        let mut b = ctx.upload(&[1u8, 2, 3, 4, 5, 6, 7]).unwrap();
        assert!(!b.is_empty());
        let v = b.slice(3..);
        assert_eq!((v.len(), v.is_empty()), (4, false));
        assert_eq!(v.is_device(), ctx.is_gpu());
        assert_eq!(v.to_vec().unwrap(), vec![4, 5, 6, 7]);
        let e = b.slice(7..);
        assert!(e.is_empty());
        assert_eq!(e.to_vec().unwrap(), Vec::<u8>::new());
        // Primitives on empty views: the identity, nothing written.
        assert_eq!(ctx.reduce(&e, &Op::plus()).unwrap(), 0);
        assert_eq!(ctx.reduce(&e, &Op::maximum()).unwrap(), u8::MIN);
        let mut m = b.slice_mut(2..6);
        assert_eq!(m.len(), 4);
        assert_eq!(m.is_device(), ctx.is_gpu());
        m.copy_from_host(&[9, 9, 9, 9]).unwrap();
        assert_eq!(m.to_vec().unwrap(), vec![9, 9, 9, 9]);
        ctx.scan_in_place(&mut b.slice_mut(7..), &Op::plus(), ScanOptions::exclusive())
            .unwrap();
        ctx.sort(&mut b.slice_mut(0..0), &Comparator::less())
            .unwrap();
        assert_eq!(b.to_vec().unwrap(), vec![1, 2, 9, 9, 9, 9, 7]);
        // Debug says what they are.
        assert!(format!("{:?}", b.slice(1..3)).contains("2 elements"));
        assert!(format!("{:?}", b.slice_mut(1..4)).contains("3 elements"));
    }
}

/// Views check lengths like buffers: a scan into an output view shorter than its input view, or
/// sort_pairs of views of different lengths, is an error that writes nothing.
#[test]
fn view_lengths_are_checked() {
    for ctx in backends() {
        let input = ctx.upload(&[1, 2, 3, 4, 5, 6]).unwrap();
        let mut out = ctx.upload(&[0; 6]).unwrap();
        let err = ctx
            .scan(
                &input.slice(1..),
                &mut out.slice_mut(2..),
                &Op::plus(),
                ScanOptions::exclusive(),
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("output holds 4 elements but the input has 5"),
            "{err}"
        );
        let mut keys = ctx.upload(&[3, 2, 1, 0]).unwrap();
        let mut values = ctx.upload(&[0u32, 1, 2, 3]).unwrap();
        let err = ctx
            .sort_pairs(
                &mut keys.slice_mut(1..),
                &mut values.slice_mut(2..),
                &Comparator::less(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("2 values for 3 keys"), "{err}");
        let err = ctx
            .copy(&input.slice(..4), &mut out.slice_mut(3..))
            .unwrap_err();
        assert!(err.is_invalid_input(), "{err}");
        let mut empty_total = ctx.zeros::<i32>(4).unwrap();
        let err = ctx
            .reduce_to_device(&input, &Op::plus(), &mut empty_total.slice_mut(4..))
            .unwrap_err();
        assert!(
            err.to_string().contains("needs room for one element"),
            "{err}"
        );
        assert_eq!(out.to_vec().unwrap(), vec![0; 6], "nothing written");
        assert_eq!(keys.to_vec().unwrap(), vec![3, 2, 1, 0], "nothing written");
        assert_eq!(empty_total.to_vec().unwrap(), vec![0; 4], "nothing written");
    }
}
