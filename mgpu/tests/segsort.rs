//! segmented_sort and segmented_sort_pairs on every backend against a serial reference written
//! here (each segment stably sorted by the comparator): distributions of segment lengths around
//! the GPU's packed-tile, radix-tile, long-tile and huge-segment limits, empty segments, every
//! arithmetic key type, custom comparators and user types, views, and bad offsets.

mod common;

use common::*;
use mgpu::cuda::radix::segments_tuning_family;
use mgpu::cuda::sort::SortValues;
use mgpu::tuning;
use mgpu::{Comparator, Context, Csr, Element, Offset};
use rand::rngs::StdRng;
use rand::Rng;

/// The GPU's packed-tile size for keys `K` (sm_90's table on the CPU).
fn tile<K: Element>(ctx: &Context, pairs: bool) -> usize {
    let mode = if pairs {
        SortValues::Pairs
    } else {
        SortValues::None
    };
    mgpu::cuda::segsort::table_tuning::<K, u32>(ctx.arch(), mode)
        .unwrap()
        .nv()
}

/// The most keys the GPU's radix sort takes in one segment's tile, keys alone and pairs with u32
/// values (sm_90's table on the CPU).
fn radix_tiles<K: Element>(ctx: &Context) -> [usize; 2] {
    [(SortValues::None, 0), (SortValues::Pairs, 4)].map(|(mode, value_size)| {
        let key_size = std::mem::size_of::<K>();
        let (family, size) = segments_tuning_family(mode, key_size, value_size);
        tuning::resolve(family, ctx.arch(), size, None)
            .unwrap()
            .nv()
    })
}

#[derive(Clone, Copy, Debug)]
enum Dist {
    Fixed(usize),
    /// Lengths around a quarter tile (the packed tiles' limit), a tile, and a few tiles.
    AroundTile,
    /// Uniform in 1..=2m-1.
    Uniform(usize),
    /// P(len > L) ~ L^-0.7.
    PowerLaw,
    One,
    /// Half the segments empty, the others 1..=20.
    HalfEmpty,
    /// Thousands of empty segments, then one covering everything, then more empty ones.
    EmptyAround,
    /// Lengths of 20 to 300 tiles: many merge passes in the long path.
    ManyTiles,
    /// Lengths around the radix sort's segment tiles (keys, pairs): the most keys one CTA sorts
    /// alone, and the long path just past it.
    AroundRadix([usize; 2]),
}

const DISTS: [Dist; 17] = [
    Dist::Fixed(1),
    Dist::Fixed(2),
    // The tiles of segments of at most 64 keys place each key by its rank: mixed lengths, the
    // edge, and mixed lengths across it.
    Dist::Uniform(4),
    Dist::Fixed(64),
    Dist::Fixed(65),
    Dist::Uniform(40),
    Dist::Uniform(60),
    Dist::Fixed(20),
    Dist::Fixed(500),
    Dist::Fixed(5000),
    Dist::AroundTile,
    Dist::Uniform(300),
    Dist::PowerLaw,
    Dist::One,
    Dist::HalfEmpty,
    Dist::EmptyAround,
    Dist::ManyTiles,
];

/// Segment lengths summing to `n`.
fn lengths(r: &mut StdRng, n: usize, dist: Dist, nv: usize) -> Vec<usize> {
    let mut v = Vec::new();
    if let Dist::EmptyAround = dist {
        v.extend(std::iter::repeat_n(0, r.random_range(1000..3000)));
        v.push(n);
        v.extend(std::iter::repeat_n(0, r.random_range(1000..3000)));
        return v;
    }
    let mut left = n;
    while left > 0 {
        let len = match dist {
            Dist::Fixed(l) => l,
            Dist::AroundTile => {
                let base = [nv / 4, nv, 3 * nv][r.random_range(0..3)] as isize;
                (base + r.random_range(-2i64..=2) as isize).max(1) as usize
            }
            Dist::Uniform(m) => r.random_range(1..=2 * m - 1),
            Dist::PowerLaw => {
                let u: f64 = r.random_range(0.0..1.0);
                ((1.0 - u).powf(-1.4) as usize).max(1)
            }
            Dist::One => left,
            Dist::HalfEmpty => {
                if r.random_bool(0.5) {
                    0
                } else {
                    r.random_range(1..=20)
                }
            }
            Dist::ManyTiles => r.random_range(20 * nv..300 * nv),
            Dist::AroundRadix(tiles) => {
                (tiles[r.random_range(0..2)] as i64 + r.random_range(-2i64..=2)).max(1) as usize
            }
            Dist::EmptyAround => unreachable!(),
        }
        .min(left);
        v.push(len);
        left -= len;
    }
    v
}

fn offsets_of<O: Offset + TryFrom<u64>>(lengths: &[usize]) -> Vec<O> {
    let mut at = 0u64;
    lengths
        .iter()
        .map(|&l| {
            let s = at;
            at += l as u64;
            O::try_from(s).ok().expect("offset fits")
        })
        .collect()
}

/// Each segment stably sorted; `values` (the input positions) follow.
fn reference<K: Element>(
    keys: &[K],
    lengths: &[usize],
    comp: &Comparator<K>,
) -> (Vec<K>, Vec<u32>) {
    let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
    let mut at = 0;
    for &l in lengths {
        idx[at..at + l].sort_by(|&a, &b| comp.ordering(&keys[a as usize], &keys[b as usize]));
        at += l;
    }
    (idx.iter().map(|&i| keys[i as usize]).collect(), idx)
}

/// Random keys with many ties (a few bits of entropy) or full-range ones.
fn keys_for<K: TestElement>(r: &mut StdRng, n: usize, few: bool) -> Vec<K> {
    let base = random_vec::<K>(r, 16.max(n.min(64)));
    if few {
        (0..n)
            .map(|_| base[r.random_range(0..8.min(base.len()))])
            .collect()
    } else {
        random_vec(r, n)
    }
}

/// Sorts keys alone and pairs (values = input positions) of one geometry; checks both.
fn run<K: TestElement, O: Offset + TryFrom<u64>>(
    ctx: &Context,
    keys: &[K],
    lengths: &[usize],
    comp: &Comparator<K>,
    what: &str,
) {
    let offsets = ctx.upload(&offsets_of::<O>(lengths)).unwrap();
    let csr = Csr::allow_empty(&offsets);
    let (expect_keys, expect_values) = reference(keys, lengths, comp);

    let mut k = ctx.upload(keys).unwrap();
    ctx.segmented_sort(&mut k, csr, comp)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    same(&k.to_vec().unwrap(), &expect_keys).unwrap_or_else(|e| panic!("{what} keys: {e}"));

    let mut k = ctx.upload(keys).unwrap();
    let positions: Vec<u32> = (0..keys.len() as u32).collect();
    let mut v = ctx.upload(&positions).unwrap();
    ctx.segmented_sort_pairs(&mut k, &mut v, csr, comp)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    same(&k.to_vec().unwrap(), &expect_keys).unwrap_or_else(|e| panic!("{what} pair keys: {e}"));
    same(&v.to_vec().unwrap(), &expect_values)
        .unwrap_or_else(|e| panic!("{what} pair values: {e}"));
}

/// Every distribution at a few sizes: small, a few tiles, and (GPU) millions, which reaches the
/// huge segments' whole-array sort.
fn distributions<K: TestElement + mgpu::Arithmetic>() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile::<K>(&ctx, false);
        let big = if ctx.is_gpu() { 2_500_000 } else { 40_000 };
        for dist in DISTS
            .into_iter()
            .chain([Dist::AroundRadix(radix_tiles::<K>(&ctx))])
        {
            for n in [0, 1, 3, nv / 4 + 1, 5 * nv + 7, big] {
                let few = r.random_bool(0.5);
                let keys = keys_for::<K>(&mut r, n, few);
                let lengths = lengths(&mut r, n, dist, nv);
                let what = format!("{} {dist:?} n={n} few={few}", K::CUDA_TYPE);
                for comp in [Comparator::less(), Comparator::greater()] {
                    run::<K, u32>(&ctx, &keys, &lengths, &comp, &what);
                }
            }
        }
    }
}

per_type!(distributions:
    dist_i8: i8, dist_u8: u8, dist_i16: i16, dist_u16: u16, dist_i32: i32, dist_u32: u32,
    dist_i64: i64, dist_u64: u64, dist_f32: f32, dist_f64: f64,
);

#[test]
fn wide_offsets() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile::<i32>(&ctx, false);
        for dist in [Dist::Fixed(3), Dist::AroundTile, Dist::PowerLaw] {
            let n = 7 * nv + 3;
            let keys = keys_for::<i32>(&mut r, n, true);
            let lengths = lengths(&mut r, n, dist, nv);
            run::<i32, u64>(
                &ctx,
                &keys,
                &lengths,
                &Comparator::less(),
                &format!("{dist:?}"),
            );
        }
    }
}

/// Floats with NaNs and signed zeros: the comparator's order, ties (every NaN, -0 and 0) stable.
#[test]
fn float_specials() {
    let mut r = rng();
    let specials = [
        f32::NAN,
        -f32::NAN,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1.5,
    ];
    for ctx in backends() {
        let nv = tile::<f32>(&ctx, false);
        let n = 9 * nv + 11;
        let keys: Vec<f32> = (0..n)
            .map(|_| specials[r.random_range(0..specials.len())])
            .collect();
        let around_radix = Dist::AroundRadix(radix_tiles::<f32>(&ctx));
        for dist in [Dist::Fixed(7), Dist::AroundTile, around_radix, Dist::One] {
            let lengths = lengths(&mut r, n, dist, nv);
            for comp in [Comparator::less(), Comparator::greater()] {
                run::<f32, u32>(&ctx, &keys, &lengths, &comp, &format!("{dist:?}"));
            }
        }
    }
}

/// A user type under a custom comparator that looks at one field: stability shows.
#[test]
fn custom_comparator() {
    let mut r = rng();
    let comp = affine_key_less();
    for ctx in backends() {
        let nv = tile::<Affine>(&ctx, false);
        let n = 6 * nv + 5;
        let keys: Vec<Affine> = (0..n)
            .map(|_| Affine {
                a: r.random_range(0..5),
                b: r.random(),
            })
            .collect();
        for dist in [
            Dist::Fixed(20),
            Dist::AroundTile,
            Dist::ManyTiles,
            Dist::HalfEmpty,
        ] {
            let lengths = lengths(&mut r, n, dist, nv);
            run::<Affine, u32>(&ctx, &keys, &lengths, &comp, &format!("{dist:?}"));
        }
        // A custom comparator over a built-in type: by the low 4 bits only.
        let low = Comparator::new(
            "low4",
            |a: &u32, b: &u32| a & 15 < b & 15,
            "(a & 15u) < (b & 15u)",
        );
        let keys: Vec<u32> = random_vec(&mut r, n);
        let lengths = lengths(&mut r, n, Dist::Uniform(300), nv);
        run::<u32, u32>(&ctx, &keys, &lengths, &low, "low4");
    }
}

/// The same call twice on fresh data gives the same bits (a race would show as a difference).
#[test]
fn repeatable() {
    let mut r = rng();
    if let Some(ctx) = gpu() {
        let nv = tile::<u64>(&ctx, false);
        let n = 400 * nv;
        let keys = keys_for::<u64>(&mut r, n, true);
        let lengths = lengths(&mut r, n, Dist::PowerLaw, nv);
        let offsets = ctx.upload(&offsets_of::<u32>(&lengths)).unwrap();
        let mut first = None;
        for _ in 0..3 {
            let mut k = ctx.upload(&keys).unwrap();
            let mut v = ctx.upload(&(0..n as u32).collect::<Vec<_>>()).unwrap();
            let csr = Csr::new(&offsets);
            ctx.segmented_sort_pairs(&mut k, &mut v, csr, &Comparator::less())
                .unwrap();
            let got = (k.to_vec().unwrap(), v.to_vec().unwrap());
            match &first {
                None => first = Some(got),
                Some(f) => assert!(*f == got, "results differ between runs"),
            }
        }
    }
}

/// A view of a larger buffer: only the view changes.
#[test]
fn views() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile::<i32>(&ctx, true);
        let n = 4 * nv + 9;
        let all = keys_for::<i32>(&mut r, n + 10, false);
        let lengths = lengths(&mut r, n, Dist::AroundTile, nv);
        let offsets = ctx.upload(&offsets_of::<u32>(&lengths)).unwrap();
        let mut buf = ctx.upload(&all).unwrap();
        let mut values = ctx.upload(&vec![7u16; n + 10]).unwrap();
        {
            let mut view = buf.slice_mut(3..3 + n);
            let mut vview = values.slice_mut(5..5 + n);
            ctx.segmented_sort_pairs(
                &mut view,
                &mut vview,
                Csr::new(&offsets),
                &Comparator::less(),
            )
            .unwrap();
        }
        let (sorted, _) = reference(&all[3..3 + n], &lengths, &Comparator::less());
        let got = buf.to_vec().unwrap();
        assert_eq!(got[..3], all[..3]);
        assert_eq!(got[3 + n..], all[3 + n..]);
        same(&got[3..3 + n], &sorted).unwrap();
        let v = values.to_vec().unwrap();
        assert!(
            v.iter().all(|&x| x == 7),
            "the values all equal: unchanged in any order"
        );
    }
}

/// Bad offsets: an error that names the first bad one, nothing written, the context usable.
#[test]
fn bad_offsets() {
    for ctx in backends() {
        let keys = [5, 3, 9, 1, 7, 2];
        let cases: [(&[u32], &[&str]); 4] = [
            (&[1, 3], &["offsets[0]"]),
            (&[0, 4, 2], &["offsets[2]"]),
            (&[0, 2, 9], &["offsets[2]"]),
            (&[], &["offsets"]),
        ];
        for (offsets, needles) in cases {
            let o = ctx.upload(offsets).unwrap();
            let mut k = ctx.upload(&keys).unwrap();
            let err = ctx
                .segmented_sort(&mut k, Csr::allow_empty(&o), &Comparator::less())
                .unwrap_err();
            expect_invalid(err, needles, "segmented_sort");
            assert_eq!(k.to_vec().unwrap(), keys, "nothing written");
        }
        // Empty segments where they are not allowed.
        let o = ctx.upload(&[0u32, 2, 2]).unwrap();
        let mut k = ctx.upload(&keys).unwrap();
        let err = ctx
            .segmented_sort(&mut k, Csr::new(&o), &Comparator::less())
            .unwrap_err();
        expect_invalid(err, &["offsets[2]"], "segmented_sort strict");
        // Values of another length.
        let o = ctx.upload(&[0u32, 2]).unwrap();
        let mut v = ctx.upload(&[0u8; 5]).unwrap();
        let err = ctx
            .segmented_sort_pairs(&mut k, &mut v, Csr::new(&o), &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("values"), "{err}");
        // Still usable.
        ctx.segmented_sort(&mut k, Csr::new(&o), &Comparator::less())
            .unwrap();
        assert_eq!(k.to_vec().unwrap(), [3, 5, 1, 2, 7, 9]);
    }
}

/// A plan: one geometry checked once, then many key arrays and pairs sorted by it, each as the
/// one-shot call sorts them; a plan's errors.
#[test]
fn plan_sorts_many_arrays() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile::<i32>(&ctx, false);
        let n = if ctx.is_gpu() { 300_000 } else { 20_000 };
        for dist in [
            Dist::Fixed(1),
            Dist::Fixed(2),
            Dist::Fixed(20),
            Dist::Uniform(60),
            Dist::Fixed(500),
            Dist::HalfEmpty,
            Dist::ManyTiles,
        ] {
            let lengths = lengths(&mut r, n, dist, nv);
            let offsets = ctx.upload(&offsets_of::<u32>(&lengths)).unwrap();
            let plan = ctx
                .segmented_sort_plan(Csr::allow_empty(&offsets), n)
                .unwrap();
            assert_eq!(plan.num_segments(), lengths.len());
            assert_eq!(plan.count(), n);
            assert_eq!(
                plan.longest(),
                lengths.iter().copied().max().unwrap_or(0) as u64
            );
            for round in 0..3 {
                let what = format!("plan {dist:?} round {round}");
                let keys = keys_for::<i32>(&mut r, n, round == 1);
                let comp = [Comparator::less(), Comparator::greater()][round % 2].clone();
                let (expect_keys, expect_values) = reference(&keys, &lengths, &comp);
                let mut k = ctx.upload(&keys).unwrap();
                ctx.segmented_sort_planned(&plan, &mut k, &comp).unwrap();
                same(&k.to_vec().unwrap(), &expect_keys)
                    .unwrap_or_else(|e| panic!("{what} keys: {e}"));
                let mut k = ctx.upload(&keys).unwrap();
                let mut v = ctx.upload(&(0..n as u32).collect::<Vec<_>>()).unwrap();
                ctx.segmented_sort_pairs_planned(&plan, &mut k, &mut v, &comp)
                    .unwrap();
                same(&k.to_vec().unwrap(), &expect_keys)
                    .unwrap_or_else(|e| panic!("{what} pair keys: {e}"));
                same(&v.to_vec().unwrap(), &expect_values)
                    .unwrap_or_else(|e| panic!("{what} pair values: {e}"));
            }
        }
        // Keys of another length than the plan's: an error, nothing written.
        let offsets = ctx.upload(&[0u32, 2]).unwrap();
        let plan = ctx.segmented_sort_plan(Csr::new(&offsets), 4).unwrap();
        let mut k = ctx.upload(&[4, 3, 2, 1, 0]).unwrap();
        let err = ctx
            .segmented_sort_planned(&plan, &mut k, &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("keys"), "{err}");
        assert_eq!(k.to_vec().unwrap(), [4, 3, 2, 1, 0], "nothing written");
        let mut k = ctx.upload(&[4, 3, 2, 1]).unwrap();
        let mut v = ctx.upload(&[0u32; 3]).unwrap();
        let err = ctx
            .segmented_sort_pairs_planned(&plan, &mut k, &mut v, &Comparator::less())
            .unwrap_err();
        assert!(err.to_string().contains("values"), "{err}");
        ctx.segmented_sort_planned(&plan, &mut k, &Comparator::less())
            .unwrap();
        assert_eq!(k.to_vec().unwrap(), [3, 4, 1, 2]);
        // Bad offsets: the plan is refused, naming the first bad one.
        let offsets = ctx.upload(&[0u32, 3, 2]).unwrap();
        let err = ctx.segmented_sort_plan(Csr::new(&offsets), 4).unwrap_err();
        expect_invalid(err, &["offsets[2]"], "segmented_sort_plan");
    }
}

/// Past 2^31 keys (MGPU_BIG=1): u64 offsets, segments of every class (the last ones, of a
/// long tile, and of the radix sort's tile, wholly past 2^31).
#[test]
fn past_2_31() {
    let Some(ctx) = big_gpu("about 20 GB") else {
        return;
    };
    let mut r = rng();
    let n = (1usize << 31) + 4099;
    let nv = tile::<u8>(&ctx, false);
    let keys: Vec<u8> = random_vec(&mut r, n);
    let radix = radix_tiles::<u8>(&ctx)[0];
    let mut lens = lengths(
        &mut r,
        n - (3 << 20) - 5 * nv - radix,
        Dist::Uniform(200),
        nv,
    );
    lens.extend([3 << 20, 5 * nv, radix]);
    let offsets = ctx.upload(&offsets_of::<u64>(&lens)).unwrap();
    let mut k = ctx.upload(&keys).unwrap();
    ctx.segmented_sort(&mut k, Csr::new(&offsets), &Comparator::less())
        .unwrap();
    let (expect, _) = reference(&keys, &lens, &Comparator::less());
    same(&k.to_vec().unwrap(), &expect).unwrap();
}
