//! Reduce on every backend against a serial fold: every element type, several operators,
//! sizes at tile edges and multi-level sizes, results to host and device.

mod common;
use common::*;
use mgpu::tuning::Family;
use mgpu::{Context, Op, Total, Tuning};

fn check<T: TestElement>(op: &Op<T>, gen: impl Fn(&mut rand::rngs::StdRng) -> T) {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile(&ctx, Family::Reduce, std::mem::size_of::<T>());
        for n in sizes(nv) {
            let data: Vec<T> = (0..n).map(|_| gen(&mut r)).collect();
            let expect = fold(&data, op);
            let input = ctx.upload(&data).unwrap();
            let got = ctx.reduce(&input, op).unwrap();
            same(&[got], &[expect]).unwrap_or_else(|e| panic!("{ctx:?} {} n={n}: {e}", op.name()));
            // To device and host at once; the element after the result must stay untouched.
            let mut out = ctx.upload(&[T::poison(), T::poison()]).unwrap();
            let host = ctx
                .reduce_with(&input, op, Total::Both(&mut out), None)
                .unwrap();
            same(&[host.unwrap()], &[expect]).unwrap();
            let out = out.to_vec().unwrap();
            same(&out, &[expect, T::poison()])
                .unwrap_or_else(|e| panic!("{ctx:?} {} n={n} device total: {e}", op.name()));
        }
    }
}

fn all_arith<T: TestElement + mgpu::Arithmetic>() {
    check(&Op::<T>::plus(), T::random);
    check(&Op::<T>::maximum(), T::random);
    check(&Op::<T>::minimum(), T::random);
    // The same operator declared non-commutative takes the order-preserving path.
    check(&Op::<T>::plus().commutative(false), T::random);
}

fn all_bits<T: TestElement + mgpu::Bitwise>() {
    all_arith::<T>();
    check(&Op::<T>::multiplies(), T::random);
    check(&Op::<T>::bit_and(), T::random);
    check(&Op::<T>::bit_or(), T::random);
    check(&Op::<T>::bit_xor(), T::random);
}

per_type!(all_bits:
    reduce_i8: i8, reduce_u8: u8, reduce_i16: i16, reduce_u16: u16,
    reduce_i32: i32, reduce_u32: u32, reduce_i64: i64, reduce_u64: u64,
);
per_type!(all_arith: reduce_f32: f32, reduce_f64: f64);

#[test]
fn reduce_custom_commutative() {
    use rand::Rng;
    check(&add_mod_prime(), |r| r.random_range(0..PRIME));
}

#[test]
fn reduce_non_commutative_user_types() {
    check(&affine_op(), Affine::random);
    check(&tagged_op(), Tagged::random);
}

/// A tiny tuning makes thousands of CTAs, whose partials the last one reduces in order.
#[test]
fn reduce_many_partials_with_tuning_override() {
    let mut r = rng();
    for ctx in backends() {
        for tuning in [
            Tuning::new(32, 1, 8),
            Tuning::new(64, 3, 4),
            Tuning::new(512, 5, 1),
        ] {
            for n in [1usize, 95, 96, 97, 1 << 18, 1_000_001] {
                let data = random_vec::<u32>(&mut r, n);
                let expect = data.iter().fold(0u32, |a, &b| a.wrapping_add(b));
                let input = ctx.upload(&data).unwrap();
                let got = ctx
                    .reduce_with(&input, &Op::plus(), Total::Host, Some(tuning))
                    .unwrap();
                assert_eq!(got, Some(expect), "{ctx:?} {tuning:?} n={n}");
                let ops = affine_op();
                let data = random_vec::<Affine>(&mut r, n);
                let expect = fold(&data, &ops);
                let input = ctx.upload(&data).unwrap();
                let got = ctx
                    .reduce_with(&input, &ops, Total::Host, Some(tuning))
                    .unwrap();
                assert_eq!(got, Some(expect), "{ctx:?} {tuning:?} n={n} affine");
            }
        }
    }
}

/// Inputs over 1.5 times L2 (the H100's is 50 MB, the H200's 60) are cut into several ranges per
/// resident CTA: sums, maxima and an order-sensitive operator over 2^24 + 4321 elements of 8
/// bytes, at the built-in tuning, whose last CTA folds every range's partial in order; sums and
/// minima of 4-byte elements too, and from unaligned starts (no 16-byte loads).
#[test]
fn reduce_larger_than_l2() {
    let mut r = rng();
    for ctx in backends() {
        let n = (1usize << 24) + 4321;
        let data = random_vec::<u64>(&mut r, n);
        let expect = data.iter().fold(0u64, |a, &b| a.wrapping_add(b));
        let input = ctx.upload(&data).unwrap();
        assert_eq!(ctx.reduce(&input, &Op::plus()).unwrap(), expect, "{ctx:?}");
        let unaligned = data[1..].iter().fold(0u64, |a, &b| a.wrapping_add(b));
        let got = ctx.reduce(&input.slice(1..), &Op::plus()).unwrap();
        assert_eq!(got, unaligned, "{ctx:?} unaligned");
        let got = ctx.reduce(&input, &Op::maximum()).unwrap();
        assert_eq!(Some(got), data.iter().copied().max(), "{ctx:?} max");
        let words = random_vec::<i32>(&mut r, 2 * n + 3);
        let sum = words.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        let input = ctx.upload(&words).unwrap();
        let got = ctx.reduce(&input, &Op::plus()).unwrap();
        assert_eq!(got, sum, "{ctx:?} i32");
        let min = words[3..].iter().copied().min();
        let got = ctx.reduce(&input.slice(3..), &Op::minimum()).unwrap();
        assert_eq!(Some(got), min, "{ctx:?} i32 unaligned");
        let ops = affine_op();
        let data = random_vec::<Affine>(&mut r, n);
        let expect = fold(&data, &ops);
        let input = ctx.upload(&data).unwrap();
        assert_eq!(ctx.reduce(&input, &ops).unwrap(), expect, "{ctx:?} affine");
    }
}

/// More than 2^31 elements: 64-bit offsets everywhere.
#[test]
fn reduce_past_2_pow_31_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let n = (1usize << 31) + 1000;
    let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    let expect = data.iter().fold(0u64, |a, &b| a + b as u64);
    let input = ctx.upload(&data).unwrap();
    drop(data);
    assert_eq!(ctx.reduce(&input, &Op::plus()).unwrap(), expect as u8);
    // A wider accumulator would need a transform; u8 max checks every element is visited too.
    assert_eq!(ctx.reduce(&input, &Op::maximum()).unwrap(), 250);
    let _ = Context::cpu();
}

/// Reduces back to back on one stream with grids of every size and look-back scans between them:
/// the last CTA waits for this launch's partials only (status slots tagged with its epoch), never
/// for a stale one of a larger grid before it. Each result is checked, and repeated.
#[test]
fn reduces_back_to_back_with_scans_between() {
    use rand::Rng;
    let mut r = rng();
    for ctx in backends() {
        let big = random_vec::<u32>(&mut r, 3 << 20);
        let input = ctx.upload(&big).unwrap();
        let mut scanned = ctx.zeros::<u32>(big.len()).unwrap();
        for round in 0..24 {
            let n = match round % 3 {
                0 => big.len() - r.random_range(0..1000),
                1 => r.random_range(1..100_000),
                _ => r.random_range(100_000..big.len()),
            };
            let expect = big[..n].iter().fold(0u32, |a, &b| a.wrapping_add(b));
            for _ in 0..2 {
                let got = ctx.reduce(&input.slice(..n), &Op::plus()).unwrap();
                assert_eq!(got, expect, "{ctx:?} round {round} n={n}");
            }
            if round % 4 == 1 {
                ctx.scan(
                    &input,
                    &mut scanned,
                    &Op::plus(),
                    mgpu::ScanOptions::inclusive(),
                )
                .unwrap();
            }
        }
        let total = big.iter().fold(0u32, |a, &b| a.wrapping_add(b));
        assert_eq!(
            scanned.to_vec().unwrap().last(),
            Some(&total),
            "{ctx:?} scan"
        );
    }
}
