//! Mergesort and merge on every backend against the standard library's stable sort and a serial
//! merge: every element type, ascending, descending and custom comparators, struct keys, stability
//! with many equal keys, special inputs (sorted, reversed, all equal, few distinct, NaN), sizes at
//! tile edges and with odd and even numbers of merge passes.

mod common;
use common::*;
use mgpu::tuning::Family;
use mgpu::{Comparator, Context, SortAlgorithm};
use rand::Rng;

/// Sizes around the sort tile of `family`, with tile counts that give odd and even pass counts
/// (on the GPU also a size of five four-way passes, whose splits are searched in windows of runs
/// of up to 2^20 keys).
fn sort_sizes(ctx: &Context, family: Family, elem: usize) -> Vec<usize> {
    let nv = tile(ctx, family, elem);
    let mut v = vec![
        0,
        1,
        2,
        3,
        17,
        nv - 1,
        nv,
        nv + 1,
        2 * nv,
        3 * nv - 1,
        5 * nv + 7,
        9 * nv,
    ];
    v.extend([(1 << 16) + 3, (1 << 20) + 5]);
    if ctx.is_gpu() {
        v.push((1 << 22) + 3);
    }
    v.sort();
    v.dedup();
    v
}

enum Pattern {
    Random,
    Sorted,
    Reversed,
    AllEqual,
    FewDistinct,
}

fn data<K: TestElement>(
    r: &mut rand::rngs::StdRng,
    n: usize,
    p: &Pattern,
    comp: &Comparator<K>,
) -> Vec<K> {
    let mut v: Vec<K> = match p {
        Pattern::AllEqual => vec![K::random(r); n],
        Pattern::FewDistinct => {
            let pool: Vec<K> = (0..4).map(|_| K::random(r)).collect();
            (0..n).map(|_| pool[r.random_range(0..4)]).collect()
        }
        _ => random_vec(r, n),
    };
    match p {
        Pattern::Sorted => v = stable_sorted(&v, comp).0,
        Pattern::Reversed => {
            v = stable_sorted(&v, comp).0;
            v.reverse();
        }
        _ => {}
    }
    v
}

fn check_sort<K: TestElement>(comp: &Comparator<K>, sizes_cap: usize) {
    let mut r = rng();
    for ctx in backends() {
        let pairs_elem = std::mem::size_of::<K>() + 4;
        for n in sort_sizes(&ctx, Family::SortKeys, std::mem::size_of::<K>())
            .into_iter()
            .chain(sort_sizes(&ctx, Family::SortPairs, pairs_elem))
            .filter(|&n| n <= sizes_cap)
        {
            for p in [
                Pattern::Random,
                Pattern::Sorted,
                Pattern::Reversed,
                Pattern::AllEqual,
                Pattern::FewDistinct,
            ] {
                let keys = data::<K>(&mut r, n, &p, comp);
                let (expect, order) = stable_sorted(&keys, comp);
                let what = format!("{ctx:?} {} {} n={n}", K::CUDA_TYPE, comp.name());
                // Keys only (the built-in orders of arithmetic keys would take the radix sort,
                // tested in radix.rs).
                let mut k = ctx.upload(&keys).unwrap();
                ctx.sort_with(&mut k, comp, SortAlgorithm::Merge).unwrap();
                same(&k.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{what} keys: {e}"));
                // Pairs: values are input positions, so any instability shows.
                let mut k = ctx.upload(&keys).unwrap();
                let positions: Vec<u32> = (0..n as u32).collect();
                let mut v = ctx.upload(&positions).unwrap();
                ctx.sort_pairs_with(&mut k, &mut v, comp, SortAlgorithm::Merge)
                    .unwrap();
                same(&k.to_vec().unwrap(), &expect)
                    .unwrap_or_else(|e| panic!("{what} pair keys: {e}"));
                same(&v.to_vec().unwrap(), &order)
                    .unwrap_or_else(|e| panic!("{what} pair values: {e}"));
                // Indices, into a poisoned buffer.
                let mut k = ctx.upload(&keys).unwrap();
                let mut idx = ctx.upload(&vec![u32::MAX; n]).unwrap();
                ctx.sort_indices_with(&mut k, &mut idx, comp, SortAlgorithm::Merge)
                    .unwrap();
                same(&idx.to_vec().unwrap(), &order)
                    .unwrap_or_else(|e| panic!("{what} indices: {e}"));
            }
        }
    }
}

fn both_orders<K: TestElement + mgpu::Arithmetic>() {
    check_sort::<K>(&Comparator::less(), usize::MAX);
    check_sort::<K>(&Comparator::greater(), 1 << 17);
}

per_type!(both_orders:
    sort_i8: i8, sort_u8: u8, sort_i16: i16, sort_u16: u16, sort_i32: i32,
    sort_u32: u32, sort_i64: i64, sort_u64: u64, sort_f32: f32, sort_f64: f64,
);

/// Struct keys ordered by one field: equal fields, different payloads; the payload order shows
/// stability even for keys-only sorts.
#[test]
fn sort_struct_keys_by_a_custom_comparator() {
    let mut r = rng();
    let comp = affine_key_less();
    for ctx in backends() {
        for n in [0usize, 1, 1000, 4097, 100_003, 1 << 20] {
            let keys: Vec<Affine> = (0..n)
                .map(|i| Affine {
                    a: r.random_range(0..50),
                    b: i as u32,
                })
                .collect();
            let (expect, _) = stable_sorted(&keys, &comp);
            let mut k = ctx.upload(&keys).unwrap();
            ctx.sort(&mut k, &comp).unwrap();
            assert_eq!(k.to_vec().unwrap(), expect, "{ctx:?} n={n}");
        }
    }
}

/// Merge sorts of 4-byte keys in the band of the larger tile that saves a merge pass
/// (tuning.rs's `BANDS`: 512x21x3 up to 4096 of its tiles, where its six passes are all four-way):
/// at 2^25, at the band's last size and one past it, where the table's tile takes over.
#[test]
fn merge_sort_keys_across_the_pass_band() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let last = 4096 * 512 * 21;
    for n in [(1usize << 25) + 7, last, last + 1] {
        // Ties: a key in 2^20 values.
        let keys: Vec<i32> = (0..n)
            .map(|_| r.random_range(-(1 << 19)..1 << 19))
            .collect();
        for comp in [Comparator::<i32>::less(), Comparator::greater()] {
            let (expect, _) = stable_sorted(&keys, &comp);
            let mut k = ctx.upload(&keys).unwrap();
            ctx.sort_with(&mut k, &comp, SortAlgorithm::Merge).unwrap();
            let what = format!("i32, n {n}, {}", comp.name());
            same(&k.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
    let n = (1usize << 25) + 7;
    let keys: Vec<f32> = (0..n).map(|_| r.random_range(-1e6f32..1e6)).collect();
    let comp = Comparator::<f32>::less();
    let (expect, _) = stable_sorted(&keys, &comp);
    let mut k = ctx.upload(&keys).unwrap();
    ctx.sort_with(&mut k, &comp, SortAlgorithm::Merge).unwrap();
    same(&k.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("f32, n {n}: {e}"));
}

/// The merge sort of floats compares with one compare where no key is NaN, and with the total
/// order where one is: sorts with no NaN, with one NaN in one tile of many, and with NaNs in
/// every tile, each with signed zeros whose input order must survive, keys and pairs.
fn merge_sort_floats_with_and_without_nan<K: TestElement + mgpu::Arithmetic>(
    to_key: impl Fn(f64) -> K,
) {
    let mut r = rng();
    let ctx = match gpu() {
        Some(g) => g,
        None => Context::cpu(),
    };
    for n in [5000usize, (1 << 20) + 3, 3 << 20] {
        for nans in [0usize, 1, n / 100] {
            let mut keys: Vec<K> = (0..n)
                .map(|_| match r.random_range(0..8) {
                    0 => to_key(0.0),
                    1 => to_key(-0.0),
                    _ => to_key((r.random_range(0..2000) as f64) - 1000.0),
                })
                .collect();
            for _ in 0..nans {
                let sign = if r.random::<bool>() { 1.0 } else { -1.0 };
                keys[r.random_range(0..n)] = to_key(sign * f64::NAN);
            }
            for comp in [Comparator::less(), Comparator::greater()] {
                let what = format!("n {n}, {nans} NaNs, {}", comp.name());
                let (expect, order) = stable_sorted(&keys, &comp);
                let mut k = ctx.upload(&keys).unwrap();
                ctx.sort_with(&mut k, &comp, SortAlgorithm::Merge).unwrap();
                same(&k.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{what}: {e}"));
                let mut k = ctx.upload(&keys).unwrap();
                let mut v = ctx.upload(&(0..n as u32).collect::<Vec<_>>()).unwrap();
                ctx.sort_pairs_with(&mut k, &mut v, &comp, SortAlgorithm::Merge)
                    .unwrap();
                same(&k.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{what}: {e}"));
                same(&v.to_vec().unwrap(), &order).unwrap_or_else(|e| panic!("{what}: {e}"));
            }
        }
    }
}

#[test]
fn merge_sort_f32_with_and_without_nan() {
    merge_sort_floats_with_and_without_nan(|x| x as f32);
}

#[test]
fn merge_sort_f64_with_and_without_nan() {
    merge_sort_floats_with_and_without_nan(|x| x);
}

/// NaN, infinities and signed zeros: the built-ins are a total order (NaNs last with less).
#[test]
fn float_keys_with_nan_sort_to_a_total_order() {
    let mut r = rng();
    let specials = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.5,
    ];
    for ctx in backends() {
        let n = 50_000;
        let keys: Vec<f32> = (0..n)
            .map(|_| {
                if r.random_range(0..4) == 0 {
                    specials[r.random_range(0..specials.len())]
                } else {
                    r.random::<f32>() * 100.0 - 50.0
                }
            })
            .collect();
        for comp in [Comparator::less(), Comparator::greater()] {
            let (expect, order) = stable_sorted(&keys, &comp);
            let mut k = ctx.upload(&keys).unwrap();
            let mut v = ctx.upload(&(0..n as u32).collect::<Vec<_>>()).unwrap();
            ctx.sort_pairs(&mut k, &mut v, &comp).unwrap();
            same(&k.to_vec().unwrap(), &expect)
                .unwrap_or_else(|e| panic!("{ctx:?} {}: {e}", comp.name()));
            same(&v.to_vec().unwrap(), &order).unwrap();
        }
        let (sorted, _) = stable_sorted(&keys, &Comparator::less());
        let first_nan = sorted.iter().position(|x| x.is_nan()).unwrap();
        assert!(sorted[first_nan..].iter().all(|x| x.is_nan()), "NaNs last");
    }
}

#[test]
fn merge_keys_and_pairs() {
    let mut r = rng();
    for ctx in backends() {
        for (na, nb) in [
            (0usize, 0usize),
            (0, 5),
            (5, 0),
            (1, 1),
            (3000, 1),
            (2943, 2945),
            (100_000, 3),
            (1 << 20, (1 << 19) + 7),
            (77_777, 123_457),
        ] {
            for comp in [Comparator::<i32>::less(), Comparator::greater()] {
                let mut a: Vec<i32> = (0..na).map(|_| r.random_range(0..1000)).collect();
                let mut b: Vec<i32> = (0..nb).map(|_| r.random_range(0..1000)).collect();
                a = stable_sorted(&a, &comp).0;
                b = stable_sorted(&b, &comp).0;
                let (expect, from) = serial_merge(&a, &b, &comp);
                let what = format!("{ctx:?} {} {na}+{nb}", comp.name());
                let (ab, bb) = (ctx.upload(&a).unwrap(), ctx.upload(&b).unwrap());
                let mut out = ctx.upload(&vec![-7i32; na + nb + 2]).unwrap();
                ctx.merge(&ab, &bb, &mut out, &comp).unwrap();
                let got = out.to_vec().unwrap();
                assert_eq!(&got[..na + nb], &expect[..], "{what}");
                assert_eq!(&got[na + nb..], &[-7, -7], "{what}: past the end");
                // Pairs: values say where each key came from (A's on ties first).
                let av: Vec<u32> = (0..na as u32).collect();
                let bv: Vec<u32> = (na as u32..(na + nb) as u32).collect();
                let (avb, bvb) = (ctx.upload(&av).unwrap(), ctx.upload(&bv).unwrap());
                let mut ok = ctx.zeros::<i32>(na + nb).unwrap();
                let mut ov = ctx.zeros::<u32>(na + nb).unwrap();
                ctx.merge_pairs(&ab, &avb, &bb, &bvb, &mut ok, &mut ov, &comp)
                    .unwrap();
                assert_eq!(ok.to_vec().unwrap(), expect, "{what} pair keys");
                assert_eq!(ov.to_vec().unwrap(), from, "{what} pair values");
            }
        }
    }
}

/// Merges of 2^25 keys: past 4,096 tile boundaries each is searched by one thread alone (the
/// searches above have teams of lanes), over ranges that start past A's first key once the
/// diagonal is longer than B.
#[test]
fn merge_with_many_tile_boundaries() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let (na, nb) = ((1usize << 24) + 3, (1usize << 24) - 5);
    let random: Vec<i32> = (0..na + nb).map(|_| r.random_range(0..1000)).collect();
    let low: Vec<i32> = (0..na as i32).collect();
    let high: Vec<i32> = (0..nb as i32).map(|x| x + na as i32).collect();
    let cases: [(&str, Vec<i32>, Vec<i32>); 3] = [
        (
            "random with ties",
            random[..na].to_vec(),
            random[na..].to_vec(),
        ),
        ("A before B", low.clone(), high.clone()),
        ("B before A", high, low),
    ];
    for (what, a, b) in cases {
        for comp in [Comparator::<i32>::less(), Comparator::greater()] {
            let (a, b) = (stable_sorted(&a, &comp).0, stable_sorted(&b, &comp).0);
            let expect = serial_merge(&a, &b, &comp).0;
            let (ab, bb) = (ctx.upload(&a).unwrap(), ctx.upload(&b).unwrap());
            let mut out = ctx.upload(&vec![-7i32; a.len() + b.len() + 2]).unwrap();
            ctx.merge(&ab, &bb, &mut out, &comp).unwrap();
            let got = out.to_vec().unwrap();
            let what = format!("{what}, {} {}+{}", comp.name(), a.len(), b.len());
            same(&got[..expect.len()], &expect).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(&got[expect.len()..], &[-7, -7], "{what}: past the end");
        }
    }
}

#[test]
fn sort_rejects_mismatched_lengths() {
    for ctx in backends() {
        let mut k = ctx.upload(&[3, 2, 1]).unwrap();
        let mut v = ctx.upload(&[1u32, 2]).unwrap();
        let err = ctx
            .sort_pairs(&mut k, &mut v, &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("2 values for 3 keys"), "{err}");
        assert_eq!(k.to_vec().unwrap(), vec![3, 2, 1], "nothing written");
        let (a, b) = (ctx.upload(&[1, 2]).unwrap(), ctx.upload(&[3]).unwrap());
        let mut out = ctx.zeros::<i32>(2).unwrap();
        let err = ctx
            .merge(&a, &b, &mut out, &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("output holds 2 elements"), "{err}");
    }
}

#[test]
fn a_comparator_that_does_not_compile_returns_the_nvrtc_log() {
    let Some(ctx) = gpu() else { return };
    let comp = Comparator::new("broken", |a: &i32, b: &i32| a < b, "a <<< b");
    let mut k = ctx.upload(&[3, 1, 2]).unwrap();
    let err = ctx.sort(&mut k, &comp).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("failed to compile") && msg.contains("NVRTC log"),
        "{msg}"
    );
    assert_eq!(k.to_vec().unwrap(), vec![3, 1, 2]);
}

/// More than 2^31 keys: sorted, and the same multiset.
#[test]
fn sort_past_2_pow_31_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let n = (1usize << 31) + 999;
    let keys: Vec<u8> = (0..n)
        .map(|i| ((i as u64).wrapping_mul(2654435761) >> 7) as u8)
        .collect();
    let mut histogram = [0u64; 256];
    for &k in &keys {
        histogram[k as usize] += 1;
    }
    let mut buf = ctx.upload(&keys).unwrap();
    drop(keys);
    ctx.sort(&mut buf, &Comparator::less()).unwrap();
    let out = buf.to_vec().unwrap();
    assert_eq!(out.len(), n);
    let mut pos = 0usize;
    for (value, &count) in histogram.iter().enumerate() {
        let end = pos + count as usize;
        assert!(
            out[pos..end].iter().all(|&x| x as usize == value),
            "value {value}"
        );
        pos = end;
    }
}
