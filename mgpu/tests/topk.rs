//! top_k, top_k_indices, top_k_pairs, segmented_top_k and segmented_top_k_indices on every
//! backend against a serial reference (the first k of the stable sort): k at 0, 1, the GPU's
//! switch from tile rounds to a whole sort, and n; ties, float specials, a user type, segments
//! shorter than k, empty and huge ones, every key width with `u32` and `u64` offsets, past 2^31
//! keys, and bad arguments.

mod common;

use common::*;
use mgpu::cuda::sort::SortValues;
use mgpu::{Comparator, Context, Csr, Element};
use rand::rngs::StdRng;
use rand::Rng;

/// The tile of the GPU's top-k rounds for keys `K` (sm_90's table on the CPU).
fn tile<K: Element>(ctx: &Context) -> usize {
    let (family, size) = mgpu::cuda::sort::tuning_family(SortValues::Indices, K::SIZE, 4);
    mgpu::tuning::resolve(family, ctx.arch(), size, None)
        .unwrap()
        .nv()
}

trait Size {
    const SIZE: usize;
}
impl<T: Element> Size for T {
    const SIZE: usize = std::mem::size_of::<T>();
}

fn reference<K: Element>(keys: &[K], k: usize, comp: &Comparator<K>) -> (Vec<K>, Vec<u32>) {
    let (sorted, idx) = stable_sorted(keys, comp);
    (sorted[..k].to_vec(), idx[..k].to_vec())
}

fn keys_with_ties<K: TestElement>(r: &mut StdRng, n: usize) -> Vec<K> {
    if r.random_bool(0.5) {
        let base = random_vec::<K>(r, 12);
        (0..n).map(|_| base[r.random_range(0..12)]).collect()
    } else {
        random_vec(r, n)
    }
}

fn check_top_k<K: TestElement>(
    ctx: &Context,
    keys: &[K],
    k: usize,
    comp: &Comparator<K>,
    what: &str,
) {
    let (expect, expect_idx) = reference(keys, k, comp);
    let input = ctx.upload(keys).unwrap();
    let mut out = ctx.upload(&vec![K::poison(); k + 3]).unwrap();
    let mut idx = ctx.upload(&vec![u32::MAX; k + 3]).unwrap();
    ctx.top_k_indices(&input, k, &mut out, &mut idx, comp)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (got, got_idx) = (out.to_vec().unwrap(), idx.to_vec().unwrap());
    same(&got[..k], &expect).unwrap_or_else(|e| panic!("{what} keys: {e}"));
    assert_eq!(got_idx[..k], expect_idx[..], "{what} indices");
    same(&got[k..], &[K::poison(); 3]).unwrap_or_else(|e| panic!("{what} past k: {e}"));
    assert_eq!(got_idx[k..], [u32::MAX; 3], "{what} indices past k");
    let mut out = ctx.upload(&vec![K::poison(); k]).unwrap();
    ctx.top_k(&input, k, &mut out, comp).unwrap();
    same(&out.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{what} top_k: {e}"));
}

fn whole<K: TestElement + mgpu::Arithmetic>() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile::<K>(&ctx);
        let big = if ctx.is_gpu() { 3_000_000 } else { 50_000 };
        for n in [1, 2, 100, nv, nv + 1, 5 * nv + 3, big] {
            let keys = keys_with_ties::<K>(&mut r, n);
            for k in [0, 1, 2, 64, nv / 4, nv / 4 + 1, 1024, n / 2, n] {
                if k > n {
                    continue;
                }
                for comp in [Comparator::less(), Comparator::greater()] {
                    let what = format!("{} n={n} k={k} {}", K::CUDA_TYPE, comp.name());
                    check_top_k(&ctx, &keys, k, &comp, &what);
                }
            }
        }
    }
}

per_type!(whole: whole_i32: i32, whole_u8: u8, whole_u64: u64, whole_f32: f32, whole_f64: f64);

#[test]
fn float_specials_and_user_types() {
    let mut r = rng();
    let specials = [
        f32::NAN,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.5,
        -2.0,
    ];
    for ctx in backends() {
        let nv = tile::<f32>(&ctx);
        let n = 20 * nv + 7;
        let keys: Vec<f32> = (0..n).map(|_| specials[r.random_range(0..7)]).collect();
        for k in [1, 7, 100] {
            check_top_k(&ctx, &keys, k, &Comparator::less(), "specials less");
            check_top_k(&ctx, &keys, k, &Comparator::greater(), "specials greater");
        }
        let keys: Vec<Affine> = (0..n)
            .map(|_| Affine {
                a: r.random_range(0..50),
                b: r.random(),
            })
            .collect();
        for k in [1, 33, nv] {
            check_top_k(&ctx, &keys, k, &affine_key_less(), "affine");
        }
    }
}

#[test]
fn pairs() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile::<i64>(&ctx);
        for n in [1, 9 * nv + 1] {
            let keys = keys_with_ties::<i64>(&mut r, n);
            let values: Vec<u16> = (0..n).map(|i| (i * 7) as u16).collect();
            for k in [1, 50.min(n), n] {
                let (expect, idx) = reference(&keys, k, &Comparator::greater());
                let (kb, vb) = (ctx.upload(&keys).unwrap(), ctx.upload(&values).unwrap());
                let mut ok = ctx.upload(&vec![0i64; k]).unwrap();
                let mut ov = ctx.upload(&vec![0u16; k]).unwrap();
                ctx.top_k_pairs(&kb, &vb, k, &mut ok, &mut ov, &Comparator::greater())
                    .unwrap();
                assert_eq!(ok.to_vec().unwrap(), expect, "n={n} k={k}");
                let want: Vec<u16> = idx.iter().map(|&i| values[i as usize]).collect();
                assert_eq!(ov.to_vec().unwrap(), want, "n={n} k={k}");
            }
        }
    }
}

/// Segment lengths: rows, mixed with short, empty and (GPU) huge ones.
fn segment_lengths(r: &mut StdRng, ctx: &Context, case: usize, nv: usize) -> Vec<usize> {
    match case {
        0 => vec![4096; 40],
        1 => (0..300).map(|_| r.random_range(0..3 * nv)).collect(),
        2 => (0..500)
            .map(|_| [0, 1, 5, 63, 64, 65][r.random_range(0..6)])
            .collect(),
        _ => {
            let huge = if ctx.is_gpu() { 1 << 21 } else { 20_000 };
            vec![3, huge, 0, 70, huge / 3]
        }
    }
}

#[test]
fn segmented() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile::<f32>(&ctx);
        for case in 0..4 {
            let lengths = segment_lengths(&mut r, &ctx, case, nv);
            let n: usize = lengths.iter().sum();
            let keys = keys_with_ties::<f32>(&mut r, n);
            let mut offsets = Vec::new();
            let mut at = 0u32;
            for &l in &lengths {
                offsets.push(at);
                at += l as u32;
            }
            let ob = ctx.upload(&offsets).unwrap();
            let kb = ctx.upload(&keys).unwrap();
            for k in [1, 64, 3000] {
                let slots = k * lengths.len();
                let mut out = ctx.upload(&vec![f32::NAN; slots]).unwrap();
                let mut idx = ctx.upload(&vec![u32::MAX; slots]).unwrap();
                let comp = Comparator::greater();
                ctx.segmented_top_k_indices(
                    &kb,
                    Csr::allow_empty(&ob),
                    k,
                    &mut out,
                    &mut idx,
                    &comp,
                )
                .unwrap();
                let (got, got_idx) = (out.to_vec().unwrap(), idx.to_vec().unwrap());
                let mut start = 0;
                for (s, &l) in lengths.iter().enumerate() {
                    let m = k.min(l);
                    let (expect, expect_idx) = reference(&keys[start..start + l], m, &comp);
                    let what = format!("case {case} k={k} segment {s} of {l}");
                    same(&got[s * k..s * k + m], &expect).unwrap_or_else(|e| panic!("{what}: {e}"));
                    assert_eq!(got_idx[s * k..s * k + m], expect_idx[..], "{what}");
                    assert!(
                        got[s * k + m..(s + 1) * k].iter().all(|x| x.is_nan()),
                        "{what}: slots past the segment"
                    );
                    assert!(
                        got_idx[s * k + m..(s + 1) * k]
                            .iter()
                            .all(|&x| x == u32::MAX),
                        "{what}"
                    );
                    start += l;
                }
                let mut keys_only = ctx.upload(&vec![f32::NAN; slots]).unwrap();
                ctx.segmented_top_k(&kb, Csr::allow_empty(&ob), k, &mut keys_only, &comp)
                    .unwrap();
                same(&keys_only.to_vec().unwrap(), &got).unwrap();
            }
        }
    }
}

#[test]
fn bad_arguments() {
    for ctx in backends() {
        let keys = ctx.upload(&[3, 1, 2]).unwrap();
        let mut out = ctx.upload(&[9; 4]).unwrap();
        let err = ctx
            .top_k(&keys, 4, &mut out, &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("k = 4 exceeds"), "{err}");
        let mut short = ctx.upload(&[9; 1]).unwrap();
        let err = ctx
            .top_k(&keys, 2, &mut short, &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("the output"), "{err}");
        assert_eq!(short.to_vec().unwrap(), [9]);
        ctx.top_k(&keys, 0, &mut short, &Comparator::less())
            .unwrap();
        assert_eq!(short.to_vec().unwrap(), [9]);
        let offsets = ctx.upload(&[0u32, 5]).unwrap();
        let err = ctx
            .segmented_top_k(&keys, Csr::new(&offsets), 2, &mut out, &Comparator::less())
            .unwrap_err();
        expect_invalid(err, &["offsets[1]"], "segmented_top_k");
        assert_eq!(out.to_vec().unwrap(), [9; 4], "nothing written");
        let offsets = ctx.upload(&[0u32, 1]).unwrap();
        let err = ctx
            .segmented_top_k(&keys, Csr::new(&offsets), 3, &mut out, &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("the output"), "{err}");
        ctx.segmented_top_k(&keys, Csr::new(&offsets), 2, &mut out, &Comparator::less())
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), [3, 9, 1, 2]);
    }
}

/// The offsets of segments of `lengths`, as `u32` or `u64`.
fn offsets_of(lengths: &[usize]) -> Vec<u64> {
    let mut at = 0u64;
    lengths
        .iter()
        .map(|&l| {
            let s = at;
            at += l as u64;
            s
        })
        .collect()
}

/// Runs segmented_top_k_indices and segmented_top_k over `lengths` and checks every segment's
/// slots against the reference (slots past a short segment untouched).
fn check_segments<K: TestElement>(
    ctx: &Context,
    keys: &[K],
    lengths: &[usize],
    wide: bool,
    k: usize,
    comp: &Comparator<K>,
    what: &str,
) {
    let offsets = offsets_of(lengths);
    let kb = ctx.upload(keys).unwrap();
    let slots = k * lengths.len();
    let mut out = ctx.upload(&vec![K::poison(); slots]).unwrap();
    let mut idx = ctx.upload(&vec![u32::MAX; slots]).unwrap();
    let mut keys_only = ctx.upload(&vec![K::poison(); slots]).unwrap();
    if wide {
        let ob = ctx.upload(&offsets).unwrap();
        let csr = Csr::allow_empty(&ob);
        ctx.segmented_top_k_indices(&kb, csr, k, &mut out, &mut idx, comp)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        ctx.segmented_top_k(&kb, csr, k, &mut keys_only, comp)
            .unwrap();
    } else {
        let narrow: Vec<u32> = offsets.iter().map(|&o| o as u32).collect();
        let ob = ctx.upload(&narrow).unwrap();
        let csr = Csr::allow_empty(&ob);
        ctx.segmented_top_k_indices(&kb, csr, k, &mut out, &mut idx, comp)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        ctx.segmented_top_k(&kb, csr, k, &mut keys_only, comp)
            .unwrap();
    }
    let (got, got_idx) = (out.to_vec().unwrap(), idx.to_vec().unwrap());
    let mut expect = vec![K::poison(); slots];
    let mut expect_idx = vec![u32::MAX; slots];
    let mut start = 0;
    for (s, &l) in lengths.iter().enumerate() {
        let m = k.min(l);
        let (e, ei) = reference(&keys[start..start + l], m, comp);
        expect[s * k..s * k + m].copy_from_slice(&e);
        expect_idx[s * k..s * k + m].copy_from_slice(&ei);
        start += l;
    }
    same(&got, &expect).unwrap_or_else(|e| panic!("{what} keys: {e}"));
    if got_idx != expect_idx {
        let at = got_idx.iter().zip(&expect_idx).position(|(a, b)| a != b);
        panic!(
            "{what} indices differ at slot {at:?} (segment {:?})",
            at.map(|a| a / k)
        );
    }
    same(&keys_only.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// Rows and mixed CSR segments of every key width, `u32` and `u64` offsets: lengths around the
/// GPU's shared-memory stage (rows of 128..32768, one past 2^15 and one too long for 8-byte keys
/// to stage), k from 1 past the most the selection keeps.
fn segmented_types<K: TestElement + mgpu::Arithmetic>() {
    let mut r = rng();
    for ctx in backends() {
        let mixed: Vec<usize> = (0..200)
            .map(|_| [0, 1, 2, 7, 64, 500, 3000][r.random_range(0..7)])
            .chain([8191, 8193, 33_000])
            .collect();
        let cases = [vec![128; 300], vec![4096; 20], vec![32768; 3], mixed];
        for (case, lengths) in cases.iter().enumerate() {
            let n: usize = lengths.iter().sum();
            let keys = keys_with_ties::<K>(&mut r, n);
            for k in [1, 8, 64, 1024, 4097] {
                for comp in [Comparator::less(), Comparator::greater()] {
                    let wide = r.random_bool(0.5);
                    let what = format!(
                        "{} case {case} k={k} {} wide={wide}",
                        K::CUDA_TYPE,
                        comp.name()
                    );
                    check_segments(&ctx, &keys, lengths, wide, k, &comp, &what);
                }
            }
        }
    }
}

per_type!(segmented_types: segmented_i32: i32, segmented_u8: u8, segmented_i64: i64,
    segmented_f64: f64);

#[test]
fn segmented_float_specials() {
    let mut r = rng();
    let specials = [
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7fc0_1234),
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::from_bits(1),
        1.5,
        -2.0,
    ];
    for ctx in backends() {
        let lengths: Vec<usize> = (0..60).map(|i| [0, 1, 100, 4096][i % 4]).collect();
        let n = lengths.iter().sum();
        let keys: Vec<f32> = (0..n)
            .map(|_| specials[r.random_range(0..specials.len())])
            .collect();
        for k in [1, 7, 100, 4096] {
            for comp in [Comparator::less(), Comparator::greater()] {
                let what = format!("specials k={k} {}", comp.name());
                check_segments(&ctx, &keys, &lengths, false, k, &comp, &what);
            }
        }
        check_top_k(&ctx, &keys, 70, &Comparator::greater(), "specials whole");
    }
}

/// Past 2^31 keys (MGPU_BIG=1): the smallest keys planted on both sides of 2^31, ties among
/// them, positions past 2^31 kept in input order.
#[test]
fn top_k_past_2_31() {
    let Some(ctx) = big_gpu("about 3 GB") else {
        return;
    };
    let mut r = rng();
    let n = (1usize << 31) + 5000;
    let mut keys: Vec<u8> = (0..n).map(|_| r.random_range(20..=255)).collect();
    let mut planted: Vec<u32> = (0..300)
        .map(|i| {
            let around = if i % 2 == 0 { 1usize << 31 } else { n / 3 };
            (around + r.random_range(0..4000) - 2000) as u32
        })
        .collect();
    planted.sort_unstable();
    planted.dedup();
    for &p in &planted {
        keys[p as usize] = r.random_range(0..8);
    }
    let mut expect: Vec<(u8, u32)> = planted.iter().map(|&p| (keys[p as usize], p)).collect();
    expect.sort_unstable();
    let input = ctx.upload(&keys).unwrap();
    for k in [1, 64, 200] {
        let mut out = ctx.upload(&vec![255u8; k]).unwrap();
        let mut idx = ctx.upload(&vec![u32::MAX; k]).unwrap();
        ctx.top_k_indices(&input, k, &mut out, &mut idx, &Comparator::less())
            .unwrap();
        let want: Vec<u8> = expect[..k].iter().map(|e| e.0).collect();
        let want_idx: Vec<u32> = expect[..k].iter().map(|e| e.1).collect();
        assert_eq!(out.to_vec().unwrap(), want, "k={k}");
        assert_eq!(idx.to_vec().unwrap(), want_idx, "k={k}");
    }
}
