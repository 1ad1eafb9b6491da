//! Shared test helpers: the backends to run on, random data, the user types of the tests, sizes
//! (sizes.rs), checks (check.rs) and serial references.
#![allow(dead_code)]

use mgpu::{Context, Element, Op};
use rand::{Rng, SeedableRng};

mod check;
mod sizes;
#[allow(unused_imports)]
pub use check::*;
#[allow(unused_imports)]
pub use sizes::*;

/// One `#[test]` per `name: type`, each calling `suite::<type>()`.
#[allow(unused_macros)]
macro_rules! per_type {
    ($suite:ident: $($name:ident: $t:ty),* $(,)?) => {$(
        #[test]
        fn $name() {
            $suite::<$t>();
        }
    )*};
}
#[allow(unused_imports)]
pub(crate) use per_type;

/// The CPU backend, and the GPU when present. With MGPU_REQUIRE_GPU=1 a missing GPU fails the test.
pub fn backends() -> Vec<Context> {
    let mut v = vec![Context::cpu()];
    if let Some(g) = gpu() {
        v.push(g);
    }
    v
}

/// The GPU context, or None (a failure when MGPU_REQUIRE_GPU=1).
pub fn gpu() -> Option<Context> {
    match Context::cuda() {
        Ok(c) => Some(c),
        Err(e) => {
            if std::env::var("MGPU_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("MGPU_REQUIRE_GPU=1 but no GPU: {e}");
            }
            None
        }
    }
}

/// The GPU for the MGPU_BIG=1 tests, or None (with a note when MGPU_BIG is not set); `needs`
/// says how much GPU memory the test takes.
pub fn big_gpu(needs: &str) -> Option<Context> {
    if std::env::var("MGPU_BIG").as_deref() != Ok("1") {
        eprintln!("skipped: set MGPU_BIG=1 to run (needs {needs} of GPU memory)");
        return None;
    }
    gpu()
}

/// A fresh seed per call, printed so a failure can be replayed with MGPU_TEST_SEED.
pub fn rng() -> rand::rngs::StdRng {
    let seed = std::env::var("MGPU_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random::<u64>());
    eprintln!("seed {seed}");
    rand::rngs::StdRng::seed_from_u64(seed)
}

/// Element types the generic tests run on: random values that keep sums exact.
pub trait TestElement: Element + PartialEq {
    fn random(r: &mut rand::rngs::StdRng) -> Self;
    /// A value unlikely to be a correct result, to fill outputs before a run.
    fn poison() -> Self;
}

macro_rules! ints {
    ($($t:ty),*) => {$(
        impl TestElement for $t {
            fn random(r: &mut rand::rngs::StdRng) -> Self { r.random() }
            fn poison() -> Self { <$t>::MAX - 3 }
        }
    )*};
}
ints!(i8, u8, i16, u16, i32, u32, i64, u64);

macro_rules! floats {
    ($($t:ty),*) => {$(
        impl TestElement for $t {
            // Small integers: sums of a few million stay below 2^24 and exact in f32, so any association order agrees.
            fn random(r: &mut rand::rngs::StdRng) -> Self { r.random_range(0..4) as $t }
            fn poison() -> Self { <$t>::NAN }
        }
    )*};
}
floats!(f32, f64);

pub fn random_vec<T: TestElement>(r: &mut rand::rngs::StdRng, n: usize) -> Vec<T> {
    (0..n).map(|_| T::random(r)).collect()
}

/// Element-wise equality that treats NaN as equal to NaN (bit patterns of results must agree).
pub fn same<T: Element>(a: &[T], b: &[T]) -> Result<(), String> {
    if a.len() != b.len() {
        return Err(format!("lengths differ: {} vs {}", a.len(), b.len()));
    }
    let ab: &[u8] = bytemuck::cast_slice(a);
    let bb: &[u8] = bytemuck::cast_slice(b);
    if ab == bb {
        return Ok(());
    }
    let size = std::mem::size_of::<T>();
    let i = (0..a.len())
        .find(|&i| ab[i * size..(i + 1) * size] != bb[i * size..(i + 1) * size])
        .unwrap();
    Err(format!("first difference at {i}: {:?} vs {:?}", a[i], b[i]))
}

/// x -> a*x + b over u32 (wrapping): a non-commutative, exactly associative operator on a user type.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Affine {
    pub a: u32,
    pub b: u32,
}
impl Element for Affine {
    const CUDA_TYPE: &'static str = "Affine";
    const CUDA_DECLARATION: &'static str = "struct Affine { unsigned a; unsigned b; };";
}
impl TestElement for Affine {
    fn random(r: &mut rand::rngs::StdRng) -> Self {
        Affine {
            a: r.random(),
            b: r.random(),
        }
    }
    fn poison() -> Self {
        Affine {
            a: 0xdead,
            b: 0xbeef,
        }
    }
}
/// Composition "f, then g".
pub fn compose(f: Affine, g: Affine) -> Affine {
    Affine {
        a: g.a.wrapping_mul(f.a),
        b: g.a.wrapping_mul(f.b).wrapping_add(g.b),
    }
}
pub fn affine_op() -> Op<Affine> {
    Op::new(
        "affine_compose",
        Affine { a: 1, b: 0 },
        compose,
        "compose(a, b)",
    )
    .with_cuda_helpers(
        "__device__ __forceinline__ Affine compose(Affine f, Affine g) {\n\
           return Affine{ g.a * f.a, g.a * f.b + g.b };\n}\n",
    )
}

/// A 12-byte user type (its size does not divide 16: the scalar load path), same algebra plus a
/// xor-combined tag.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Tagged {
    pub a: u32,
    pub b: u32,
    pub tag: u32,
}
impl Element for Tagged {
    const CUDA_TYPE: &'static str = "Tagged";
    const CUDA_DECLARATION: &'static str = "struct Tagged { unsigned a, b, tag; };";
}
impl TestElement for Tagged {
    fn random(r: &mut rand::rngs::StdRng) -> Self {
        Tagged {
            a: r.random(),
            b: r.random(),
            tag: r.random(),
        }
    }
    fn poison() -> Self {
        Tagged { a: 7, b: 7, tag: 7 }
    }
}
pub fn tagged_op() -> Op<Tagged> {
    Op::new(
        "tagged_compose",
        Tagged { a: 1, b: 0, tag: 0 },
        |f: Tagged, g: Tagged| Tagged {
            a: g.a.wrapping_mul(f.a),
            b: g.a.wrapping_mul(f.b).wrapping_add(g.b),
            tag: f.tag ^ g.tag,
        },
        "Tagged{ b.a * a.a, b.a * a.b + b.b, a.tag ^ b.tag }",
    )
}

/// A custom commutative operator: addition modulo a prime (inputs must be below the prime).
pub const PRIME: i64 = 1_000_003;
pub fn add_mod_prime() -> Op<i64> {
    Op::new(
        "add_mod_prime",
        0i64,
        |a: i64, b: i64| (a + b) % PRIME,
        "(a + b) % 1000003LL",
    )
    .commutative(true)
}

/// Orders `Affine` by its `a` field only: equal `a` with different `b` shows whether a sort is stable.
pub fn affine_key_less() -> mgpu::Comparator<Affine> {
    mgpu::Comparator::new("by_a", |x: &Affine, y: &Affine| x.a < y.a, "a.a < b.a")
}

/// The sequential scan of `data` and its total: the reference for every scan.
pub fn serial_scan<T: Element>(data: &[T], op: &Op<T>, kind: mgpu::ScanKind) -> (Vec<T>, T) {
    let mut carry = op.identity();
    let out = data
        .iter()
        .map(|&x| {
            let next = op.apply(carry, x);
            let v = if kind == mgpu::ScanKind::Exclusive {
                carry
            } else {
                next
            };
            carry = next;
            v
        })
        .collect();
    (out, carry)
}

/// The sequential reduction of `data`.
pub fn fold<T: Element>(data: &[T], op: &Op<T>) -> T {
    data.iter().fold(op.identity(), |a, &b| op.apply(a, b))
}

/// The stable sort of `keys` and the input position of each sorted key.
pub fn stable_sorted<K: Element>(keys: &[K], comp: &mgpu::Comparator<K>) -> (Vec<K>, Vec<u32>) {
    let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
    idx.sort_by(|&a, &b| comp.ordering(&keys[a as usize], &keys[b as usize]));
    (idx.iter().map(|&i| keys[i as usize]).collect(), idx)
}

/// The stable merge of sorted `a` and `b` (A's first on ties) and where each key came from
/// (positions in A, then B's offset by `a.len()`).
pub fn serial_merge<K: Element>(
    a: &[K],
    b: &[K],
    comp: &mgpu::Comparator<K>,
) -> (Vec<K>, Vec<u32>) {
    let (mut i, mut j) = (0, 0);
    let (mut out, mut from) = (Vec::new(), Vec::new());
    while i < a.len() || j < b.len() {
        if j >= b.len() || (i < a.len() && !comp.before(&b[j], &a[i])) {
            out.push(a[i]);
            from.push(i as u32);
            i += 1;
        } else {
            out.push(b[j]);
            from.push((a.len() + j) as u32);
            j += 1;
        }
    }
    (out, from)
}

/// Whether the GPU has `bytes` free (with a margin); a note when not.
pub fn has_memory(ctx: &Context, bytes: u64, what: &str) -> bool {
    let free = ctx.device_info().map_or(0, |d| d.memory_free);
    let ok = free >= bytes + (bytes >> 3) + (256 << 20);
    if !ok {
        eprintln!("skipped {what}: needs {bytes} bytes of GPU memory, {free} free");
    }
    ok
}
