//! Radix sort on every backend against the merge sort and sequential stable sorts, bit for bit:
//! every arithmetic type under less and greater (keys, pairs, indices; `SortAlgorithm::Auto`,
//! `Merge` and `Radix`, and `radix_sort` with a `RadixKey`), key distributions, float specials
//! (NaN payloads and signs, signed zeros, infinities, subnormals), bit ranges with ascending and
//! descending orders, a user key of 48 bits, other value types, sizes around the radix tiles, a
//! portion edge and more than 2^31 keys (GPU), views, errors, and repeated GPU runs.

mod common;
use common::*;
use mgpu::tuning::Family;
use mgpu::{
    Arithmetic, Buffer, Comparator, Context, Element, Error, RadixKey, SortAlgorithm, ViewMut,
};
use rand::rngs::StdRng;
use rand::Rng;
use std::cmp::Ordering;
use std::ops::Range;

const ALGORITHMS: [SortAlgorithm; 3] = [
    SortAlgorithm::Auto,
    SortAlgorithm::Merge,
    SortAlgorithm::Radix,
];

/// A size of several tiles past 2^20 (GPU everywhere; on the CPU one pattern, one order).
const BIG: usize = (1 << 20) + 5;

/// Arithmetic keys made from random bits (floats: any bit pattern, so NaNs of many payloads too).
trait Key: TestElement + Arithmetic {
    fn from_bits(bits: u64) -> Self;
}

macro_rules! int_keys {
    ($($t:ty),*) => {$(
        impl Key for $t {
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
        }
    )*};
}
int_keys!(u8, i8, u16, i16, u32, i32, u64, i64);

impl Key for f32 {
    fn from_bits(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

impl Key for f64 {
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

/// The input positions 0..n: as values they show any instability.
fn positions(n: usize) -> Vec<u32> {
    (0..n as u32).collect()
}

/// The stable sort of `keys` by `cmp` and the input position of each sorted key.
fn sorted_by<K: Element>(keys: &[K], cmp: impl Fn(&K, &K) -> Ordering) -> (Vec<K>, Vec<u32>) {
    let mut idx = positions(keys.len());
    idx.sort_by(|&a, &b| cmp(&keys[a as usize], &keys[b as usize]));
    (idx.iter().map(|&i| keys[i as usize]).collect(), idx)
}

/// The stable sort of `keys` by the number `bits` makes of each.
fn sorted_by_bits<K: Element>(keys: &[K], bits: impl Fn(&K) -> u64) -> (Vec<K>, Vec<u32>) {
    sorted_by(keys, |a, b| bits(a).cmp(&bits(b)))
}

/// The tile of the radix sort of keys of `key_size` bytes, and of pairs with 4-byte values.
fn radix_tiles(ctx: &Context, key_size: usize) -> (usize, usize) {
    (
        tile(ctx, Family::RadixKeys, key_size),
        tile(ctx, Family::RadixPairs, key_size + 4),
    )
}

fn dedup(mut v: Vec<usize>) -> Vec<usize> {
    v.sort();
    v.dedup();
    v
}

/// `radix_sort`, `radix_sort_pairs` (values: input positions) and `radix_sort_indices` (into a
/// poisoned buffer) of `keys` by `key` must give `expect` (the sorted keys and their input
/// positions), bit for bit.
fn check_radix<K: Element>(
    ctx: &Context,
    keys: &[K],
    key: &RadixKey<K>,
    expect: &(Vec<K>, Vec<u32>),
    what: &str,
) {
    let (sorted, order) = expect;
    let mut k = ctx.upload(keys).unwrap();
    ctx.radix_sort(&mut k, key).unwrap();
    same(&k.to_vec().unwrap(), sorted).unwrap_or_else(|e| panic!("{what} radix_sort: {e}"));

    let mut k = ctx.upload(keys).unwrap();
    let mut v = ctx.upload(&positions(keys.len())).unwrap();
    ctx.radix_sort_pairs(&mut k, &mut v, key).unwrap();
    same(&k.to_vec().unwrap(), sorted)
        .unwrap_or_else(|e| panic!("{what} radix_sort_pairs keys: {e}"));
    same(&v.to_vec().unwrap(), order)
        .unwrap_or_else(|e| panic!("{what} radix_sort_pairs values: {e}"));

    let mut k = ctx.upload(keys).unwrap();
    let mut idx = ctx.upload(&vec![u32::MAX; keys.len()]).unwrap();
    ctx.radix_sort_indices(&mut k, &mut idx, key).unwrap();
    same(&k.to_vec().unwrap(), sorted)
        .unwrap_or_else(|e| panic!("{what} radix_sort_indices keys: {e}"));
    same(&idx.to_vec().unwrap(), order)
        .unwrap_or_else(|e| panic!("{what} radix_sort_indices: {e}"));
}

/// Arithmetic `keys` under `less` (or `greater`): `sort_with`, `sort_pairs_with` and
/// `sort_indices_with` by `algorithms` and `radix_sort*` by `RadixKey::ascending` (or
/// `descending`) all give the sequential stable sort, bit for bit.
fn check_arithmetic<K: Key>(
    ctx: &Context,
    keys: &[K],
    descending: bool,
    algorithms: &[SortAlgorithm],
    what: &str,
) {
    let (comp, key) = if descending {
        (Comparator::greater(), RadixKey::descending())
    } else {
        (Comparator::less(), RadixKey::ascending())
    };
    let n = keys.len();
    let what = format!("{what} {} n={n}", comp.name());
    let (sorted, order) = stable_sorted(keys, &comp);
    for &algorithm in algorithms {
        let what = format!("{what} {algorithm:?}");
        let mut k = ctx.upload(keys).unwrap();
        ctx.sort_with(&mut k, &comp, algorithm).unwrap();
        same(&k.to_vec().unwrap(), &sorted).unwrap_or_else(|e| panic!("{what} keys: {e}"));

        let mut k = ctx.upload(keys).unwrap();
        let mut v = ctx.upload(&positions(n)).unwrap();
        ctx.sort_pairs_with(&mut k, &mut v, &comp, algorithm)
            .unwrap();
        same(&k.to_vec().unwrap(), &sorted).unwrap_or_else(|e| panic!("{what} pair keys: {e}"));
        same(&v.to_vec().unwrap(), &order).unwrap_or_else(|e| panic!("{what} pair values: {e}"));

        let mut k = ctx.upload(keys).unwrap();
        let mut idx = ctx.upload(&vec![u32::MAX; n]).unwrap();
        ctx.sort_indices_with(&mut k, &mut idx, &comp, algorithm)
            .unwrap();
        same(&k.to_vec().unwrap(), &sorted).unwrap_or_else(|e| panic!("{what} indices keys: {e}"));
        same(&idx.to_vec().unwrap(), &order).unwrap_or_else(|e| panic!("{what} indices: {e}"));
    }
    check_radix(
        ctx,
        keys,
        &key,
        &(sorted, order),
        &format!("{what} {key:?}"),
    );
}

#[derive(Clone, Copy, Debug)]
enum Pattern {
    /// Uniform random bits (floats: NaNs, infinities and subnormals among them).
    Uniform,
    AllEqual,
    /// Four distinct keys.
    FewDistinct,
    /// Ascending under `less`.
    Sorted,
    /// Descending under `less`.
    Reversed,
    /// 20 random low bits (in wider words; floats: positive subnormals and zeros).
    Bits20,
}

const PATTERNS: [Pattern; 6] = [
    Pattern::Uniform,
    Pattern::AllEqual,
    Pattern::FewDistinct,
    Pattern::Sorted,
    Pattern::Reversed,
    Pattern::Bits20,
];

fn pattern<K: Key>(r: &mut StdRng, n: usize, p: Pattern) -> Vec<K> {
    let uniform = |r: &mut StdRng| K::from_bits(r.random());
    match p {
        Pattern::Uniform => (0..n).map(|_| uniform(r)).collect(),
        Pattern::AllEqual => vec![uniform(r); n],
        Pattern::FewDistinct => {
            let pool: Vec<K> = (0..4).map(|_| uniform(r)).collect();
            (0..n).map(|_| pool[r.random_range(0..4)]).collect()
        }
        Pattern::Sorted | Pattern::Reversed => {
            let v: Vec<K> = (0..n).map(|_| uniform(r)).collect();
            let mut v = stable_sorted(&v, &Comparator::less()).0;
            if let Pattern::Reversed = p {
                v.reverse();
            }
            v
        }
        Pattern::Bits20 => (0..n)
            .map(|_| K::from_bits(r.random::<u64>() & 0xf_ffff))
            .collect(),
    }
}

/// Sizes around the radix tiles of keys and of pairs (with 4-byte values) of `key_size` bytes:
/// empty, tiny, one tile and one tile +- 1, a few tiles, several tiles with a partial last one.
fn radix_sizes(ctx: &Context, r: &mut StdRng, key_size: usize) -> Vec<usize> {
    let (nk, np) = radix_tiles(ctx, key_size);
    let mut v = vec![0, 1, 2, 3, 31, 1000, nk - 1, nk, nk + 1, np - 1, np, np + 1];
    v.push(r.random_range(2..3 * nk));
    if ctx.is_gpu() {
        v.extend([2 * np, 3 * nk + 17, 9 * np + 5, (1 << 16) + 3]);
    } else {
        v.push(2 * nk + 17);
    }
    dedup(v)
}

/// Every distribution at every size, under less and greater, by every algorithm.
fn arithmetic<K: Key>() {
    let mut r = rng();
    for ctx in backends() {
        for n in radix_sizes(&ctx, &mut r, std::mem::size_of::<K>()) {
            for p in PATTERNS {
                let keys = pattern::<K>(&mut r, n, p);
                for descending in [false, true] {
                    let what = format!("{ctx:?} {} {p:?}", K::CUDA_TYPE);
                    check_arithmetic(&ctx, &keys, descending, &ALGORITHMS, &what);
                }
            }
        }
        if ctx.is_gpu() {
            for p in [Pattern::Uniform, Pattern::FewDistinct, Pattern::Bits20] {
                let keys = pattern::<K>(&mut r, BIG, p);
                for descending in [false, true] {
                    let what = format!("{ctx:?} {} {p:?}", K::CUDA_TYPE);
                    check_arithmetic(&ctx, &keys, descending, &ALGORITHMS, &what);
                }
            }
        } else {
            // Fast enough on two cores: the radix path (Auto) and the merge sort.
            let keys = pattern::<K>(&mut r, BIG, Pattern::Uniform);
            let what = format!("{ctx:?} {} Uniform", K::CUDA_TYPE);
            check_arithmetic(&ctx, &keys, false, &[SortAlgorithm::Auto], &what);
        }
    }
}

per_type!(arithmetic:
    radix_u8: u8, radix_i8: i8, radix_u16: u16, radix_i16: i16, radix_u32: u32,
    radix_i32: i32, radix_u64: u64, radix_i64: i64, radix_f32: f32, radix_f64: f64,
);

/// Floats with NaNs of several payloads and both signs, signed zeros, infinities and subnormals.
trait Float: Key {
    fn specials() -> Vec<Self>;
    fn small(i: i32) -> Self;
}

impl Float for f32 {
    fn specials() -> Vec<f32> {
        let bits: [u32; 19] = [
            0x7fc0_0000, // NaN
            0x7fc0_0001, // NaN, another payload
            0x7f80_0001, // signalling NaN
            0x7fff_ffff, // NaN, every payload bit
            0xffc0_0000, // -NaN
            0xff80_0123, // -NaN, signalling
            0xffff_ffff, // -NaN, every payload bit
            0x0000_0000, // 0.0
            0x8000_0000, // -0.0
            0x7f80_0000, // inf
            0xff80_0000, // -inf
            0x0000_0001, // the smallest subnormal
            0x007f_ffff, // the largest subnormal
            0x8000_0001, // negative subnormals
            0x807f_ffff,
            0x0080_0000, // MIN_POSITIVE
            0x8080_0000,
            0x7f7f_ffff, // MAX
            0xff7f_ffff, // MIN
        ];
        bits.iter().map(|&b| f32::from_bits(b)).collect()
    }
    fn small(i: i32) -> f32 {
        i as f32
    }
}

impl Float for f64 {
    fn specials() -> Vec<f64> {
        let bits: [u64; 19] = [
            0x7ff8_0000_0000_0000,
            0x7ff8_0000_0000_0001,
            0x7ff0_0000_0000_0001,
            0x7fff_ffff_ffff_ffff,
            0xfff8_0000_0000_0000,
            0xfff0_0000_0000_0123,
            0xffff_ffff_ffff_ffff,
            0x0000_0000_0000_0000,
            0x8000_0000_0000_0000,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            0x0000_0000_0000_0001,
            0x000f_ffff_ffff_ffff,
            0x8000_0000_0000_0001,
            0x800f_ffff_ffff_ffff,
            0x0010_0000_0000_0000,
            0x8010_0000_0000_0000,
            0x7fef_ffff_ffff_ffff,
            0xffef_ffff_ffff_ffff,
        ];
        bits.iter().map(|&b| f64::from_bits(b)).collect()
    }
    fn small(i: i32) -> f64 {
        i as f64
    }
}

/// Specials mixed with random bit patterns and small integers (many ties): the radix sort's
/// result is the merge sort's, bit for bit (NaN payloads and signed zeros in input order).
fn float_specials<F: Float>() {
    let mut r = rng();
    let specials = F::specials();
    for ctx in backends() {
        let (nk, np) = radix_tiles(&ctx, std::mem::size_of::<F>());
        let mut sizes = vec![1, 2, 40, 1000, np + 1, nk + 1, 3 * nk + 5];
        if ctx.is_gpu() {
            sizes.push(BIG);
        }
        for n in dedup(sizes) {
            let keys: Vec<F> = (0..n)
                .map(|_| match r.random_range(0..3) {
                    0 => specials[r.random_range(0..specials.len())],
                    1 => F::from_bits(r.random()),
                    _ => F::small(r.random_range(-3..4)),
                })
                .collect();
            for descending in [false, true] {
                let what = format!("{ctx:?} {} specials", F::CUDA_TYPE);
                check_arithmetic(&ctx, &keys, descending, &ALGORITHMS, &what);
            }
        }
    }
}

per_type!(float_specials: float_specials_f32: f32, float_specials_f64: f64);

/// A hand-written example: the order of every kind of special, NaNs and zeros in input order.
#[test]
fn float_specials_in_a_known_order() {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let (nan1, nan2, neg_nan) = (
        f32::from_bits(0x7fc0_0001),
        f32::from_bits(0x7f80_0042),
        f32::from_bits(0xffc0_0007),
    );
    let (sub, neg_sub) = (f32::from_bits(1), f32::from_bits(0x8000_0001));
    let inf = f32::INFINITY;
    let input = [
        nan1, 0.0, -0.0, neg_nan, 2.5, nan2, -0.0, inf, -inf, sub, 0.0, neg_sub, -2.5,
    ];
    let ascending = [
        -inf, -2.5, neg_sub, 0.0, -0.0, -0.0, 0.0, sub, 2.5, inf, nan1, neg_nan, nan2,
    ];
    let descending = [
        nan1, neg_nan, nan2, inf, 2.5, sub, 0.0, -0.0, -0.0, 0.0, neg_sub, -2.5, -inf,
    ];
    for ctx in backends() {
        for (comp, key, expect) in [
            (Comparator::less(), RadixKey::ascending(), &ascending),
            (Comparator::greater(), RadixKey::descending(), &descending),
        ] {
            for algorithm in ALGORITHMS {
                let mut k = ctx.upload(&input).unwrap();
                ctx.sort_with(&mut k, &comp, algorithm).unwrap();
                let what = format!("{ctx:?} {} {algorithm:?}", comp.name());
                assert_eq!(bits(&k.to_vec().unwrap()), bits(expect), "{what}");
            }
            let mut k = ctx.upload(&input).unwrap();
            ctx.radix_sort(&mut k, &key).unwrap();
            assert_eq!(bits(&k.to_vec().unwrap()), bits(expect), "{ctx:?} {key:?}");
        }
    }
}

/// The number a sort by `range` of `order_bits` orders by (inverted for a descending order),
/// computed here independently of `RadixKey::ordered_bits`.
fn range_bits(order_bits: u64, range: &Range<u32>, descending: bool) -> u64 {
    let len = range.end - range.start;
    let mask = if len == 0 { 0 } else { u64::MAX >> (64 - len) };
    let v = if range.start >= 64 {
        0
    } else {
        (order_bits >> range.start) & mask
    };
    if descending {
        !v & mask
    } else {
        v
    }
}

/// Random keys sorted by each bit range of their order-preserving number (`order_bits`, written
/// out here), ascending and descending, each descending order made two ways.
fn bit_ranges<K: Key>(ranges: &[Range<u32>], order_bits: impl Fn(K) -> u64) {
    let mut r = rng();
    for ctx in backends() {
        let (nk, np) = radix_tiles(&ctx, std::mem::size_of::<K>());
        let mut sizes = vec![0, 1, 1000, np, nk + 1, 3 * np + 7];
        if ctx.is_gpu() {
            sizes.extend([np + 1, nk, (1 << 20) + 7]);
        }
        for n in dedup(sizes) {
            let keys: Vec<K> = (0..n).map(|_| K::from_bits(r.random())).collect();
            for range in ranges {
                let b = || range.clone();
                for (how, key, descending) in [
                    (
                        "ascending",
                        RadixKey::<K>::ascending().bit_range(b()),
                        false,
                    ),
                    ("descending", RadixKey::descending().bit_range(b()), true),
                    (
                        "ascending reversed",
                        RadixKey::ascending().bit_range(b()).reversed(),
                        true,
                    ),
                    (
                        "descending reversed",
                        RadixKey::descending().reversed().bit_range(b()),
                        false,
                    ),
                ] {
                    let what = format!("{ctx:?} {} {how} bits {range:?} n={n}", K::CUDA_TYPE);
                    assert_eq!(key.bits(), *range, "{what}");
                    assert_eq!(key.is_descending(), descending, "{what}");
                    let number = |k: &K| range_bits(order_bits(*k), range, descending);
                    for k in keys.iter().take(100) {
                        assert_eq!(key.ordered_bits(k), number(k), "{what}: key {k:?}");
                    }
                    let expect = sorted_by_bits(&keys, number);
                    if range.is_empty() {
                        assert_eq!(
                            expect.1,
                            positions(n),
                            "{what}: an empty range sorts nothing"
                        );
                    }
                    check_radix(&ctx, &keys, &key, &expect, &what);
                }
            }
        }
    }
}

#[test]
fn bit_ranges_u32() {
    bit_ranges::<u32>(
        &[0..20, 4..12, 0..0, 31..32, 0..32, 12..32, 5..5, 32..32],
        |k| k as u64,
    );
}

#[test]
fn bit_ranges_u64() {
    bit_ranges::<u64>(&[0..64, 17..53, 60..64, 0..1, 32..64, 0..33, 64..64], |k| k);
}

#[test]
fn bit_ranges_small_and_signed() {
    bit_ranges::<u8>(&[0..8, 3..6, 7..8, 0..0], |k| k as u64);
    bit_ranges::<i16>(&[0..16, 9..16, 0..9, 15..16], |k| {
        (k as u16 ^ 0x8000) as u64
    });
    bit_ranges::<i32>(&[0..32, 28..32, 0..16], |k| (k as u32 ^ 0x8000_0000) as u64);
    bit_ranges::<i64>(&[0..64, 40..64, 0..24], |k| k as u64 ^ (1 << 63));
}

/// The order-preserving number of an f32 (as `Comparator::less` orders: -0.0 = 0.0, NaNs last).
fn f32_order(x: f32) -> u64 {
    if x.is_nan() {
        return u32::MAX as u64;
    }
    let b = if x == 0.0 { 0 } else { x.to_bits() };
    (if b >> 31 == 1 { !b } else { b | 0x8000_0000 }) as u64
}

#[test]
fn bit_ranges_float() {
    bit_ranges::<f32>(&[0..32, 23..32, 16..32, 0..23], f32_order);
}

/// A user key: `hi` and `lo` make a 48-bit number; `tag` does not count.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct Rec {
    hi: u32,
    lo: u16,
    tag: u16,
}

impl Element for Rec {
    const CUDA_TYPE: &'static str = "Rec";
    const CUDA_DECLARATION: &'static str =
        "struct Rec { unsigned int hi; unsigned short lo; unsigned short tag; };";
}

fn by_hi_lo() -> RadixKey<Rec> {
    RadixKey::new(
        "hi_lo",
        48,
        |x: &Rec| (x.hi as u64) << 16 | x.lo as u64,
        "((unsigned long long)x.hi << 16) | x.lo",
    )
}

/// Records with many equal (hi, lo), and hi values that fill every byte of the 48-bit number.
fn records(r: &mut StdRng, n: usize) -> Vec<Rec> {
    let his = [0, 1, 0x8000_0000, u32::MAX, 0x0001_0000, 0xffff];
    (0..n)
        .map(|i| Rec {
            hi: if r.random_bool(0.5) {
                his[r.random_range(0..his.len())]
            } else {
                r.random()
            },
            lo: if r.random_bool(0.5) {
                r.random_range(0..3)
            } else {
                r.random()
            },
            tag: i as u16,
        })
        .collect()
}

/// The user key, its bit ranges and descending orders, against stable sorts by comparators
/// written out here.
#[test]
fn decomposed_user_key() {
    let mut r = rng();
    let hi_lo = |x: &Rec| (x.hi, x.lo);
    type Cmp = fn(&Rec, &Rec) -> Ordering;
    let cases: [(RadixKey<Rec>, Cmp); 6] = [
        (by_hi_lo(), |a, b| (a.hi, a.lo).cmp(&(b.hi, b.lo))),
        (by_hi_lo().reversed(), |a, b| {
            (b.hi, b.lo).cmp(&(a.hi, a.lo))
        }),
        (by_hi_lo().bit_range(16..48), |a, b| a.hi.cmp(&b.hi)),
        (by_hi_lo().bit_range(8..40).reversed(), |a, b| {
            let mid = |x: &Rec| ((x.hi as u64) << 16 | x.lo as u64) >> 8 & 0xffff_ffff;
            mid(b).cmp(&mid(a))
        }),
        (
            RadixKey::new("lo", 16, |x: &Rec| x.lo as u64, "x.lo"),
            |a, b| a.lo.cmp(&b.lo),
        ),
        (
            RadixKey::new("lo", 16, |x: &Rec| x.lo as u64, "x.lo")
                .bit_range(0..2)
                .reversed(),
            |a, b| (b.lo & 3).cmp(&(a.lo & 3)),
        ),
    ];
    for ctx in backends() {
        let (nk, np) = radix_tiles(&ctx, std::mem::size_of::<Rec>());
        let mut sizes = vec![0, 1, 2, 1000, nk + 1, np + 1, 4 * np + 3];
        if ctx.is_gpu() {
            sizes.extend([nk, np, (1 << 20) + 3]);
        }
        for n in dedup(sizes) {
            let keys = records(&mut r, n);
            for (key, cmp) in &cases {
                let what = format!("{ctx:?} {key:?} n={n}");
                let expect = sorted_by(&keys, cmp);
                check_radix(&ctx, &keys, key, &expect, &what);
            }
            // The (hi, lo) order itself, checked without the comparator too.
            let (sorted, _) = sorted_by(&keys, cases[0].1);
            assert!(sorted.windows(2).all(|w| hi_lo(&w[0]) <= hi_lo(&w[1])));
        }
    }
}

/// Values other than u32: 1, 8, 12 and 8-byte struct values travel with their keys.
#[test]
fn pairs_with_other_value_types() {
    let mut r = rng();
    for ctx in backends() {
        let (nk, np) = radix_tiles(&ctx, 4);
        let mut sizes = vec![0, 1, 1000, nk + 1, np + 1, 3 * np + 5];
        if ctx.is_gpu() {
            sizes.push((1 << 20) + 1);
        }
        for n in dedup(sizes) {
            let keys: Vec<u32> = (0..n).map(|_| r.random_range(0..1000)).collect();
            let small: Vec<i16> = (0..n).map(|_| r.random_range(-50..50)).collect();
            for descending in [false, true] {
                let key = |k| {
                    if descending {
                        RadixKey::<u32>::descending().bit_range(k)
                    } else {
                        RadixKey::ascending().bit_range(k)
                    }
                };
                let what = format!("{ctx:?} n={n} descending={descending}");
                let full = key(0..32);
                let expect = sorted_by_bits(&keys, |k| full.ordered_bits(k));
                let pairs = |v: &dyn Fn(u32) -> u64| {
                    let values: Vec<u64> = (0..n as u32).map(v).collect();
                    let order: Vec<u64> = expect.1.iter().map(|&i| v(i)).collect();
                    (values, order)
                };
                // u64 values.
                let (values, order) = pairs(&|i| (i as u64) << 33 | i as u64);
                check_pairs(&ctx, &keys, &values, &full, &expect.0, &order, &what);
                // u8 values (and a bit range: stability among the many ties).
                let bits = key(2..8);
                let expect8 = sorted_by_bits(&keys, |k| bits.ordered_bits(k));
                let values: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
                let order: Vec<u8> = expect8.1.iter().map(|&i| values[i as usize]).collect();
                check_pairs(&ctx, &keys, &values, &bits, &expect8.0, &order, &what);
                // 8-byte struct values.
                let values: Vec<Affine> = (0..n as u32).map(|i| Affine { a: i, b: !i }).collect();
                let order: Vec<Affine> = expect.1.iter().map(|&i| values[i as usize]).collect();
                check_pairs(&ctx, &keys, &values, &full, &expect.0, &order, &what);
                // 12-byte struct values under i16 keys (another tile size).
                let skey = if descending {
                    RadixKey::<i16>::descending()
                } else {
                    RadixKey::ascending()
                };
                let sexpect = sorted_by_bits(&small, |k| skey.ordered_bits(k));
                let values: Vec<Tagged> = (0..n as u32)
                    .map(|i| Tagged {
                        a: i,
                        b: i * 3,
                        tag: !i,
                    })
                    .collect();
                let order: Vec<Tagged> = sexpect.1.iter().map(|&i| values[i as usize]).collect();
                check_pairs(&ctx, &small, &values, &skey, &sexpect.0, &order, &what);
            }
        }
    }
}

fn check_pairs<K: Element, V: Element>(
    ctx: &Context,
    keys: &[K],
    values: &[V],
    key: &RadixKey<K>,
    sorted: &[K],
    order: &[V],
    what: &str,
) {
    let mut k = ctx.upload(keys).unwrap();
    let mut v = ctx.upload(values).unwrap();
    ctx.radix_sort_pairs(&mut k, &mut v, key).unwrap();
    let what = format!("{what} {key:?} values {}", V::CUDA_TYPE);
    same(&k.to_vec().unwrap(), sorted).unwrap_or_else(|e| panic!("{what} keys: {e}"));
    same(&v.to_vec().unwrap(), order).unwrap_or_else(|e| panic!("{what} values: {e}"));
}

/// `n` elements of `b` from `off`: `slice_mut(off..off + n)`, or `slice_mut(off..)` for a tail.
fn view_of<K: Element>(b: &mut Buffer<K>, off: usize, n: usize, tail: bool) -> ViewMut<'_, K> {
    let v = if tail {
        b.slice_mut(off..)
    } else {
        b.slice_mut(off..off + n)
    };
    assert_eq!(v.len(), n);
    v
}

/// A sort on a view sorts the view and nothing else, with keys, values and indices at different
/// (unaligned) offsets and tails of buffers.
fn views<K: Key>() {
    let mut r = rng();
    for ctx in backends() {
        let (nk, np) = radix_tiles(&ctx, std::mem::size_of::<K>());
        let mut sizes = vec![0, 1, 1000, nk + 1, np + 1, 3 * np + 5];
        if ctx.is_gpu() {
            sizes.push((1 << 20) + 3);
        }
        for n in dedup(sizes) {
            for (off, voff, tail) in [(1usize, 3usize, false), (3, 0, true), (16, 5, false)] {
                let pad = if tail { 0 } else { 9 };
                let range = off..off + n;
                let vrange = voff..voff + n;
                let before: Vec<K> = (0..off + n + pad)
                    .map(|_| K::from_bits(r.random()))
                    .collect();
                let inside = &before[range.clone()];
                let what = format!("{ctx:?} {} n={n} at {off} tail={tail}", K::CUDA_TYPE);
                // sort (Auto: the radix sort).
                let less = Comparator::less();
                let mut b = ctx.upload(&before).unwrap();
                ctx.sort(&mut view_of(&mut b, off, n, tail), &less).unwrap();
                let expect = stable_sorted(inside, &less);
                check_region(
                    &b.to_vec().unwrap(),
                    &before,
                    range.clone(),
                    &expect.0,
                    &what,
                );
                // radix_sort, descending, a bit range.
                let bits = 8 * std::mem::size_of::<K>() as u32;
                let key = RadixKey::<K>::descending().bit_range(bits / 4..bits - 1);
                let expect = sorted_by_bits(inside, |k| key.ordered_bits(k));
                let mut b = ctx.upload(&before).unwrap();
                ctx.radix_sort(&mut view_of(&mut b, off, n, tail), &key)
                    .unwrap();
                let what = format!("{what} {key:?}");
                check_region(
                    &b.to_vec().unwrap(),
                    &before,
                    range.clone(),
                    &expect.0,
                    &what,
                );
                // Pairs: values in another view of their own buffer.
                let vbefore: Vec<u32> = (0..voff + n + 7).map(|_| r.random()).collect();
                let vorder: Vec<u32> = expect
                    .1
                    .iter()
                    .map(|&i| vbefore[voff + i as usize])
                    .collect();
                let mut b = ctx.upload(&before).unwrap();
                let mut vb = ctx.upload(&vbefore).unwrap();
                ctx.radix_sort_pairs(
                    &mut view_of(&mut b, off, n, tail),
                    &mut vb.slice_mut(vrange.clone()),
                    &key,
                )
                .unwrap();
                let got = b.to_vec().unwrap();
                check_region(&got, &before, range.clone(), &expect.0, &what);
                let got = vb.to_vec().unwrap();
                check_region(&got, &vbefore, vrange.clone(), &vorder, &what);
                // Indices into a view of a poisoned buffer.
                let poison = vec![u32::MAX; voff + n + 7];
                let mut b = ctx.upload(&before).unwrap();
                let mut ib = ctx.upload(&poison).unwrap();
                ctx.radix_sort_indices(
                    &mut view_of(&mut b, off, n, tail),
                    &mut ib.slice_mut(vrange.clone()),
                    &key,
                )
                .unwrap();
                let got = b.to_vec().unwrap();
                check_region(&got, &before, range.clone(), &expect.0, &what);
                let got = ib.to_vec().unwrap();
                check_region(&got, &poison, vrange.clone(), &expect.1, &what);
            }
        }
    }
}

per_type!(views: views_u8: u8, views_i16: i16, views_u32: u32, views_f64: f64);

/// Pairs of 16 bytes (8-byte keys and values) run a tile of their own (the 12-byte class's, shrunk
/// to fit), and of 2/3 of it where the input is a wave or two of tiles: sizes around both.
#[test]
fn pairs_of_wide_keys_and_values() {
    let mut r = rng();
    for ctx in backends() {
        let np = tile(&ctx, Family::RadixPairs, 16);
        let fitted = np * 2 / 3;
        let mut sizes = vec![0, 1, 1000, np - 1, np, np + 1, 2 * fitted + 3, 5 * np + 9];
        if ctx.is_gpu() {
            sizes.extend([(1 << 20) + 3, (1 << 21) + 1]);
        }
        for n in dedup(sizes) {
            let what = format!("{ctx:?} n={n}");
            // Few distinct keys: stability shows in the values.
            let keys: Vec<u64> = (0..n).map(|_| (r.random::<u64>() % 5000) << 20).collect();
            let values: Vec<u64> = (0..n).map(|_| r.random()).collect();
            for key in [RadixKey::<u64>::ascending(), RadixKey::descending()] {
                let expect = sorted_by_bits(&keys, |k| key.ordered_bits(k));
                let order: Vec<u64> = expect.1.iter().map(|&i| values[i as usize]).collect();
                check_pairs(&ctx, &keys, &values, &key, &expect.0, &order, &what);
            }
            let keys: Vec<f64> = (0..n).map(|_| r.random_range(-1e3..1e3)).collect();
            let values: Vec<i64> = (0..n).map(|i| -(i as i64)).collect();
            let key = RadixKey::<f64>::ascending();
            let expect = sorted_by_bits(&keys, |k| key.ordered_bits(k));
            let order: Vec<i64> = expect.1.iter().map(|&i| values[i as usize]).collect();
            check_pairs(&ctx, &keys, &values, &key, &expect.0, &order, &what);
        }
    }
}

/// Bad bit ranges and widths, the radix sort with a comparator it cannot take, and mismatched
/// lengths: errors of bad input that write nothing; the context works afterwards.
#[test]
fn radix_sort_rejects_bad_arguments_and_writes_nothing() {
    for ctx in backends() {
        let input = [5u32, 3, 9, 1];
        let (values, poison) = ([10u32, 11, 12, 13], [u32::MAX; 4]);
        let mut k = ctx.upload(&input).unwrap();
        let mut v = ctx.upload(&values).unwrap();
        let mut idx = ctx.upload(&poison).unwrap();
        let untouched = |k: &Buffer<u32>, v: &Buffer<u32>, idx: &Buffer<u32>, what: &str| {
            assert_eq!(k.to_vec().unwrap(), input, "{what}: keys written");
            assert_eq!(v.to_vec().unwrap(), values, "{what}: values written");
            assert_eq!(idx.to_vec().unwrap(), poison, "{what}: indices written");
        };
        let bad_keys = [
            (RadixKey::<u32>::ascending().bit_range(0..33), "0..33"),
            (RadixKey::descending().bit_range(30..33), "30..33"),
            (RadixKey::ascending().bit_range(33..33), "33..33"),
            (
                RadixKey::ascending().bit_range(Range { start: 12, end: 4 }),
                "12..4",
            ),
            (RadixKey::new("zero", 0, |x: &u32| *x as u64, "x"), "0 bits"),
            (
                RadixKey::new("wide", 65, |x: &u32| *x as u64, "x"),
                "65 bits",
            ),
        ];
        for (key, needle) in &bad_keys {
            let what = format!("{ctx:?} {key:?}");
            let err = ctx.radix_sort(&mut k, key).unwrap_err();
            expect_invalid(err, &["radix_sort", *needle], &what);
            let err = ctx.radix_sort_pairs(&mut k, &mut v, key).unwrap_err();
            expect_invalid(err, &["radix_sort_pairs", *needle], &what);
            let err = ctx.radix_sort_indices(&mut k, &mut idx, key).unwrap_err();
            expect_invalid(err, &["radix_sort_indices", *needle], &what);
            untouched(&k, &v, &idx, &what);
        }
        let mut k8 = ctx.upload(&[3u8, 1, 2]).unwrap();
        let err = ctx
            .radix_sort(&mut k8, &RadixKey::ascending().bit_range(0..9))
            .unwrap_err();
        expect_invalid(err, &["0..9"], "u8 0..9");
        let mut k64 = ctx.upload(&[3u64, 1, 2]).unwrap();
        let err = ctx
            .radix_sort(&mut k64, &RadixKey::descending().bit_range(1..65))
            .unwrap_err();
        expect_invalid(err, &["1..65"], "u64 1..65");
        let err = ctx.radix_sort(&mut k8, &RadixKey::ascending().bit_range(4..9));
        assert!(
            matches!(
                err,
                Err(mgpu::Error::InvalidBitRange {
                    width: 8,
                    begin: 4,
                    end: 9,
                    ..
                })
            ),
            "{err:?}"
        );
        assert_eq!(k8.to_vec().unwrap(), vec![3, 1, 2]);
        assert_eq!(k64.to_vec().unwrap(), vec![3, 1, 2]);

        // SortAlgorithm::Radix with a comparator that is not the built-in less or greater.
        let custom = Comparator::new(
            "by_low_byte",
            |a: &u32, b: &u32| (a & 0xff) < (b & 0xff),
            "(a & 0xff) < (b & 0xff)",
        );
        let radix = SortAlgorithm::Radix;
        let needles = ["SortAlgorithm::Radix", "by_low_byte"];
        let what = format!("{ctx:?} Radix with a custom comparator");
        let err = ctx.sort_with(&mut k, &custom, radix).unwrap_err();
        assert!(
            matches!(
                err,
                mgpu::Error::NotRadixSortable {
                    key_type: "unsigned int",
                    ..
                }
            ),
            "{err:?}"
        );
        expect_invalid(err, &needles, &what);
        let err = ctx.sort_pairs_with(&mut k, &mut v, &custom, radix);
        expect_invalid(err.unwrap_err(), &needles, &what);
        let err = ctx.sort_indices_with(&mut k, &mut idx, &custom, radix);
        expect_invalid(err.unwrap_err(), &needles, &what);
        untouched(&k, &v, &idx, &what);
        // Struct keys under their own comparator.
        let mut s = ctx
            .upload(&[Affine { a: 2, b: 0 }, Affine { a: 1, b: 1 }])
            .unwrap();
        let err = ctx.sort_with(&mut s, &affine_key_less(), radix);
        expect_invalid(err.unwrap_err(), &["SortAlgorithm::Radix"], &what);
        // Auto takes the merge sort for them.
        ctx.sort_with(&mut s, &affine_key_less(), SortAlgorithm::Auto)
            .unwrap();
        assert_eq!(s.to_vec().unwrap()[0], Affine { a: 1, b: 1 });
        let mut kc = ctx.upload(&[0x102u32, 0x201, 0x3ff, 0x100]).unwrap();
        ctx.sort_with(&mut kc, &custom, SortAlgorithm::Auto)
            .unwrap();
        assert_eq!(kc.to_vec().unwrap(), vec![0x100, 0x201, 0x102, 0x3ff]);

        // Mismatched lengths.
        let asc = RadixKey::<u32>::ascending();
        let short = [7u32, 8];
        let mut sv = ctx.upload(&short).unwrap();
        let err = ctx.radix_sort_pairs(&mut k, &mut sv, &asc).unwrap_err();
        assert!(
            matches!(
                err,
                Error::LengthMismatch {
                    call: "radix_sort_pairs",
                    actual: 2,
                    expected: 4,
                    ..
                }
            ),
            "{err:?}"
        );
        expect_invalid(err, &["2 values for 4 keys"], "radix_sort_pairs lengths");
        let err = ctx.radix_sort_indices(&mut k, &mut sv, &asc).unwrap_err();
        expect_invalid(err, &["indices"], "radix_sort_indices lengths");
        let err = ctx.sort_pairs_with(&mut k, &mut sv, &Comparator::less(), radix);
        expect_invalid(
            err.unwrap_err(),
            &["values"],
            "sort_pairs_with Radix lengths",
        );
        let err = ctx.sort_indices_with(&mut k, &mut sv, &Comparator::less(), radix);
        expect_invalid(
            err.unwrap_err(),
            &["indices"],
            "sort_indices_with Radix lengths",
        );
        assert_eq!(sv.to_vec().unwrap(), short, "short values written");
        untouched(&k, &v, &idx, &format!("{ctx:?} lengths"));

        // Still usable.
        ctx.radix_sort_pairs(&mut k, &mut v, &asc).unwrap();
        assert_eq!(k.to_vec().unwrap(), vec![1, 3, 5, 9]);
        assert_eq!(v.to_vec().unwrap(), vec![13, 11, 10, 12]);
        ctx.radix_sort_indices(&mut k, &mut idx, &RadixKey::descending())
            .unwrap();
        assert_eq!(k.to_vec().unwrap(), vec![9, 5, 3, 1]);
        assert_eq!(idx.to_vec().unwrap(), vec![3, 2, 1, 0]);
    }
    // Buffers of the other backend.
    if let Some(g) = gpu() {
        let cpu = Context::cpu();
        let mut on_cpu = cpu.upload(&[2u32, 1]).unwrap();
        let err = g
            .radix_sort(&mut on_cpu, &RadixKey::ascending())
            .unwrap_err();
        assert!(err.is_invalid_input(), "{err:?}");
        let mut on_gpu = g.upload(&[2u32, 1]).unwrap();
        let err = cpu
            .sort_with(&mut on_gpu, &Comparator::less(), SortAlgorithm::Radix)
            .unwrap_err();
        assert!(err.is_invalid_input(), "{err:?}");
        assert_eq!(on_cpu.to_vec().unwrap(), vec![2, 1]);
        assert_eq!(on_gpu.to_vec().unwrap(), vec![2, 1]);
    }
}

/// What `RadixKey` says of itself, and the numbers it orders arithmetic keys by.
#[test]
fn radix_key_accessors_and_ordered_bits() {
    let a = RadixKey::<u32>::ascending();
    assert_eq!((a.bits(), a.is_descending()), (0..32, false));
    let d = RadixKey::<u32>::descending().bit_range(4..12);
    assert_eq!((d.bits(), d.is_descending()), (4..12, true));
    assert!(!d.clone().reversed().is_descending());
    assert_eq!(a.clone().bit_range(4..12).ordered_bits(&0x1234_5678), 0x67);
    assert_eq!(d.ordered_bits(&0x1234_5678), 0x98);
    assert_eq!(RadixKey::<u64>::ascending().bits(), 0..64);
    assert_eq!(RadixKey::<i8>::ascending().bits(), 0..8);
    assert_eq!(by_hi_lo().bits(), 0..48);
    assert_eq!(by_hi_lo().name(), "hi_lo");
    let rec = Rec {
        hi: 0xdead_beef,
        lo: 0x1234,
        tag: 9,
    };
    assert_eq!(by_hi_lo().ordered_bits(&rec), 0xdead_beef_1234);
    assert_eq!(by_hi_lo().reversed().ordered_bits(&rec), 0x2152_4110_edcb);
    // Signed: the sign flipped.
    let i = RadixKey::<i32>::ascending();
    assert_eq!(i.ordered_bits(&-1), 0x7fff_ffff);
    assert_eq!(i.ordered_bits(&0), 0x8000_0000);
    assert_eq!(RadixKey::<i8>::ascending().ordered_bits(&i8::MIN), 0);
    assert_eq!(
        RadixKey::<i64>::descending().ordered_bits(&i64::MIN),
        u64::MAX
    );
    // Floats: -0.0 = 0.0; every NaN above +inf under ascending, below -inf under descending.
    let f = RadixKey::<f32>::ascending();
    assert_eq!(f.ordered_bits(&-0.0), f.ordered_bits(&0.0));
    assert!(f.ordered_bits(&f32::NAN) > f.ordered_bits(&f32::INFINITY));
    assert_eq!(f.ordered_bits(&-f32::NAN), f.ordered_bits(&f32::NAN));
    assert!(f.ordered_bits(&f32::NEG_INFINITY) < f.ordered_bits(&f32::MIN));
    assert!(f.ordered_bits(&-f32::from_bits(1)) < f.ordered_bits(&-0.0));
    assert!(f.ordered_bits(&f32::from_bits(1)) > f.ordered_bits(&0.0));
    let fd = RadixKey::<f64>::descending();
    assert!(fd.ordered_bits(&f64::NAN) < fd.ordered_bits(&f64::INFINITY));
    assert_eq!(fd.ordered_bits(&-0.0), fd.ordered_bits(&0.0));
}

/// Keys per portion of the GPU's radix sort for a tile of `nv`: 2^29 / NV tiles of NV keys.
fn portion(nv: usize) -> usize {
    (1 << 29) / nv * nv
}

/// Inputs just past one portion: the passes run over two portions, and each portion's bins start
/// where the earlier portions' end. u16 keys with u32 values and with indices (the second
/// portion's generated indices start past the first's), by one and by two 8-bit passes, each
/// case checked (and reported) on its own.
#[test]
fn radix_sort_past_one_portion_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let np = tile(&ctx, Family::RadixPairs, 6);
    let n = portion(np) + np + 3;
    if !has_memory(&ctx, n as u64 * 12, "u16 pairs past one portion") {
        return;
    }
    let keys: Vec<u16> = (0..n).map(|_| r.random()).collect();
    let mut failures = Vec::new();
    for (bits, descending) in [(0..16, false), (8..16, false), (0..8, true), (0..16, true)] {
        let mut key = RadixKey::<u16>::ascending().bit_range(bits.clone());
        if descending {
            key = key.reversed();
        }
        // The stable order by counting: expected[i] = the input position of the i-th sorted key.
        let number = |k: u16| key.ordered_bits(&k) as usize;
        assert_eq!(
            number(0xabcd),
            range_bits(0xabcd, &bits, descending) as usize
        );
        let mut starts = vec![0usize; 1 << 16];
        for &k in &keys {
            starts[number(k)] += 1;
        }
        let mut run = 0;
        for s in starts.iter_mut() {
            (*s, run) = (run, run + *s);
        }
        let mut expected = vec![0u32; n];
        for (i, &k) in keys.iter().enumerate() {
            expected[starts[number(k)]] = i as u32;
            starts[number(k)] += 1;
        }
        drop(starts);
        let sorted: Vec<u16> = expected.iter().map(|&i| keys[i as usize]).collect();
        let mut check = |got: &[u16], order: Option<&[u32]>, what: &str| {
            if let Err(e) = same(got, &sorted) {
                failures.push(format!("{what} {key:?} n={n}: keys: {e}"));
            } else if let Some(Err(e)) = order.map(|o| same(o, &expected)) {
                failures.push(format!("{what} {key:?} n={n}: values: {e}"));
            }
        };
        let mut k = ctx.upload(&keys).unwrap();
        ctx.radix_sort(&mut k, &key).unwrap();
        check(&k.to_vec().unwrap(), None, "radix_sort");
        let mut k = ctx.upload(&keys).unwrap();
        let mut v = ctx.upload(&positions(n)).unwrap();
        ctx.radix_sort_pairs(&mut k, &mut v, &key).unwrap();
        check(&k.to_vec().unwrap(), Some(&v.to_vec().unwrap()), "pairs");
        drop(v);
        let mut k = ctx.upload(&keys).unwrap();
        let mut idx = ctx.upload(&vec![u32::MAX; n]).unwrap();
        ctx.radix_sort_indices(&mut k, &mut idx, &key).unwrap();
        check(
            &k.to_vec().unwrap(),
            Some(&idx.to_vec().unwrap()),
            "indices",
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// u8 keys only, one key past a portion, descending (one pass).
#[test]
fn radix_sort_u8_past_one_portion_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let nk = tile(&ctx, Family::RadixKeys, 1);
    let n = portion(nk) + 1;
    if !has_memory(&ctx, 2 * n as u64, "u8 keys past one portion") {
        return;
    }
    let keys: Vec<u8> = (0..n).map(|_| r.random()).collect();
    let mut k = ctx.upload(&keys).unwrap();
    ctx.radix_sort(&mut k, &RadixKey::descending()).unwrap();
    check_sorted_u8_descending(&keys, &k.to_vec().unwrap(), "u8 past one portion");
}

/// `got` is `input` sorted descending: the same count of every value, in runs from 255 down.
fn check_sorted_u8_descending(input: &[u8], got: &[u8], what: &str) {
    assert_eq!(got.len(), input.len(), "{what}");
    let mut before = [0u64; 256];
    for &x in input {
        before[x as usize] += 1;
    }
    let mut after = [0u64; 256];
    let mut unsorted = None;
    for (i, w) in got.windows(2).enumerate() {
        if w[0] < w[1] && unsorted.is_none() {
            unsorted = Some(i);
        }
    }
    for &x in got {
        after[x as usize] += 1;
    }
    if let Some(i) = unsorted {
        panic!("{what}: {} before {} at {i}", got[i], got[i + 1]);
    }
    assert_eq!(before, after, "{what}: not a permutation");
}

/// More than 2^31 keys (several portions): sorted, and the same multiset.
#[test]
fn radix_sort_past_2_pow_31_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let n = (1usize << 31) + 1000;
    if !has_memory(&ctx, 2 * n as u64, "u8 keys past 2^31") {
        return;
    }
    let keys: Vec<u8> = (0..n)
        .map(|i| ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
        .collect();
    let mut k = ctx.upload(&keys).unwrap();
    ctx.radix_sort(&mut k, &RadixKey::descending()).unwrap();
    check_sorted_u8_descending(&keys, &k.to_vec().unwrap(), "u8 past 2^31");
}

/// The same sort twice on the GPU gives the same bits (a race in the look-back or the scatter
/// shows as a difference), and the sequential result.
#[test]
fn radix_sort_is_deterministic_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let n = (1 << 22) + 17;
    let pool: Vec<u32> = (0..5).map(|_| r.random()).collect();
    let few: Vec<u32> = (0..n).map(|_| pool[r.random_range(0..5)]).collect();
    let wide: Vec<u64> = (0..n).map(|_| r.random()).collect();
    let floats: Vec<f32> = (0..n).map(|_| f32::from_bits(r.random())).collect();
    repeat(&ctx, &few, &RadixKey::ascending(), "few u32");
    repeat(
        &ctx,
        &few,
        &RadixKey::descending().bit_range(3..29),
        "few u32 3..29",
    );
    repeat(&ctx, &wide, &RadixKey::ascending(), "u64");
    repeat(&ctx, &floats, &RadixKey::descending(), "f32");
}

fn repeat<K: Element>(ctx: &Context, keys: &[K], key: &RadixKey<K>, what: &str) {
    let expect = sorted_by_bits(keys, |k| key.ordered_bits(k));
    for round in 0..3 {
        let what = format!("{what} round {round}");
        check_radix(ctx, keys, key, &expect, &what);
    }
}

/// Keys alone of 1 and 2 bytes, big enough for the counting sort: every distribution, both
/// orders, `sort` and `radix_sort`, in views at unaligned offsets (keys before the first 16-byte
/// boundary and after the last) and whole buffers; the rest of the buffer untouched.
fn counting<K: Key + Ord>() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let n = if std::mem::size_of::<K>() == 1 {
        (1 << 23) + 5
    } else {
        (1 << 25) + 3
    };
    if !has_memory(
        &ctx,
        2 * n as u64 * std::mem::size_of::<K>() as u64,
        "counting sort",
    ) {
        return;
    }
    for (p, off, pad) in [
        (Pattern::Uniform, 3, 7),
        (Pattern::AllEqual, 0, 0),
        (Pattern::FewDistinct, 1, 0),
        (Pattern::Reversed, 5, 16),
        (Pattern::Bits20, 16, 3),
    ] {
        let keys = pattern::<K>(&mut r, n, p);
        let mut before: Vec<K> = (0..off).map(|_| K::from_bits(r.random())).collect();
        before.extend(&keys);
        before.extend((0..pad).map(|_| K::from_bits(r.random())));
        let range = off..off + n;
        let mut ascending = keys.clone();
        ascending.sort();
        let mut descending = ascending.clone();
        descending.reverse();
        for (desc, expect) in [(false, &ascending), (true, &descending)] {
            let what = format!("{} {p:?} at {off} descending={desc}", K::CUDA_TYPE);
            let mut b = ctx.upload(&before).unwrap();
            let mut view = b.slice_mut(range.clone());
            if desc {
                ctx.radix_sort(&mut view, &RadixKey::descending()).unwrap();
            } else {
                ctx.sort(&mut view, &Comparator::less()).unwrap();
            }
            check_region(&b.to_vec().unwrap(), &before, range.clone(), expect, &what);
        }
    }
}

per_type!(counting: counting_u8: u8, counting_i8: i8, counting_u16: u16, counting_i16: i16);
