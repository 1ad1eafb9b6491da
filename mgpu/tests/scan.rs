//! Scan on every backend against a serial scan: every element type, several operators, exclusive
//! and inclusive, in place and out of place, both GPU algorithms, totals to host and device.

mod common;
use common::*;
use mgpu::tuning::Family;
use mgpu::{Context, Element, Op, ScanAlgorithm, ScanKind, ScanOptions, Total, Tuning};

fn check_one<T: TestElement>(ctx: &Context, op: &Op<T>, data: &[T], options: ScanOptions) {
    let n = data.len();
    let (expect, expect_total) = serial_scan(data, op, options.kind);
    let what = |e: String| format!("{ctx:?} {} {options:?} n={n}: {e}", op.name());
    // Out of place, into a poisoned output 3 longer than the input (the tail must survive).
    let input = ctx.upload(data).unwrap();
    let mut out = ctx.upload(&vec![T::poison(); n + 3]).unwrap();
    let mut total = ctx.upload(&[T::poison()]).unwrap();
    let host = ctx
        .scan_with(&input, &mut out, op, options, Total::Both(&mut total))
        .unwrap();
    let out = out.to_vec().unwrap();
    same(&out[..n], &expect).unwrap_or_else(|e| panic!("{}", what(e)));
    same(&out[n..], &[T::poison(); 3]).unwrap_or_else(|e| panic!("{}", what(format!("tail: {e}"))));
    same(&[host.unwrap()], &[expect_total])
        .unwrap_or_else(|e| panic!("{}", what(format!("host total: {e}"))));
    same(&total.to_vec().unwrap(), &[expect_total])
        .unwrap_or_else(|e| panic!("{}", what(format!("device total: {e}"))));
    // The input is untouched.
    same(&input.to_vec().unwrap(), data).unwrap();
    // In place, total to the host only.
    let mut inplace = ctx.upload(data).unwrap();
    let host = ctx
        .scan_in_place_with(&mut inplace, op, options, Total::Host)
        .unwrap();
    same(&inplace.to_vec().unwrap(), &expect)
        .unwrap_or_else(|e| panic!("{}", what(format!("in place: {e}"))));
    same(&[host.unwrap()], &[expect_total]).unwrap();
}

fn check<T: TestElement>(
    op: &Op<T>,
    gen: impl Fn(&mut rand::rngs::StdRng) -> T,
    all_variants: bool,
) {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile(&ctx, Family::Scan, std::mem::size_of::<T>());
        for n in sizes(nv) {
            let data: Vec<T> = (0..n).map(|_| gen(&mut r)).collect();
            for kind in [ScanKind::Exclusive, ScanKind::Inclusive] {
                let algorithms: &[ScanAlgorithm] = if all_variants {
                    &[ScanAlgorithm::LookBack, ScanAlgorithm::ReduceThenScan]
                } else {
                    &[ScanAlgorithm::LookBack]
                };
                for &algorithm in algorithms {
                    check_one(
                        &ctx,
                        op,
                        &data,
                        ScanOptions {
                            kind,
                            algorithm,
                            tuning: None,
                        },
                    );
                }
            }
        }
    }
}

fn all_arith<T: TestElement + mgpu::Arithmetic>() {
    check(&Op::<T>::plus(), T::random, true);
    check(&Op::<T>::maximum(), T::random, false);
    check(&Op::<T>::minimum(), T::random, false);
}

fn all_bits<T: TestElement + mgpu::Bitwise>() {
    all_arith::<T>();
    check(&Op::<T>::multiplies(), T::random, false);
    check(&Op::<T>::bit_xor(), T::random, false);
    check(&Op::<T>::bit_or(), T::random, false);
}

per_type!(all_bits:
    scan_i8: i8, scan_u8: u8, scan_i16: i16, scan_u16: u16,
    scan_i32: i32, scan_u32: u32, scan_i64: i64, scan_u64: u64,
);
per_type!(all_arith: scan_f32: f32, scan_f64: f64);

#[test]
fn scan_custom_commutative() {
    use rand::Rng;
    check(&add_mod_prime(), |r| r.random_range(0..PRIME), true);
}

#[test]
fn scan_non_commutative_user_types() {
    check(&affine_op(), Affine::random, true);
    check(&tagged_op(), Tagged::random, true);
}

/// Tiny tiles make hundreds of thousands of look-back steps; results must be exact on every run,
/// for the packed (4-byte) and the flag + value (8-byte) tile status, with and without back-off.
#[test]
fn lookback_stress() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    for tuning in [
        Tuning::new(32, 1, 16),
        Tuning {
            backoff_ns: 200,
            ..Tuning::new(32, 3, 16)
        },
        Tuning::new(64, 1, 8),
    ] {
        let opts = ScanOptions::inclusive().with_tuning(tuning);
        let data = random_vec::<u32>(&mut r, (1 << 22) + 17);
        let ints = serial_scan(&data, &Op::plus(), ScanKind::Inclusive).0;
        let affines = random_vec::<Affine>(&mut r, (1 << 21) + 5);
        let composed = serial_scan(&affines, &affine_op(), ScanKind::Inclusive).0;
        let input = ctx.upload(&data).unwrap();
        let affine_input = ctx.upload(&affines).unwrap();
        for run in 0..5 {
            let mut out = ctx.upload(&vec![u32::poison(); data.len()]).unwrap();
            ctx.scan(&input, &mut out, &Op::plus(), opts).unwrap();
            same(&out.to_vec().unwrap(), &ints)
                .unwrap_or_else(|e| panic!("{tuning:?} run {run}: {e}"));
            let mut out = ctx.upload(&vec![Affine::poison(); affines.len()]).unwrap();
            ctx.scan(&affine_input, &mut out, &affine_op(), opts)
                .unwrap();
            same(&out.to_vec().unwrap(), &composed)
                .unwrap_or_else(|e| panic!("{tuning:?} affine run {run}: {e}"));
        }
    }
}

/// The look-back's status slots and ticket counter live on between scans (each launch has its own
/// epoch): scans of shrinking and growing sizes and of 1-, 4- and 8-byte elements (packed and
/// flag + value status, built-in and user types), one after another on one context, must never
/// read another launch's status.
#[test]
fn lookback_state_carries_over_between_scans() {
    use rand::Rng;
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    fn one<T: TestElement>(ctx: &Context, op: &Op<T>, data: &[T], round: usize) {
        let input = ctx.upload(data).unwrap();
        let mut out = ctx.upload(&vec![T::poison(); data.len()]).unwrap();
        let total = ctx
            .scan_with(&input, &mut out, op, ScanOptions::exclusive(), Total::Host)
            .unwrap()
            .unwrap();
        let (expect, expect_total) = serial_scan(data, op, ScanKind::Exclusive);
        same(&out.to_vec().unwrap(), &expect)
            .unwrap_or_else(|e| panic!("round {round} n={}: {e}", data.len()));
        same(&[total], &[expect_total]).unwrap();
    }
    for round in 0..40 {
        // From a few tiles to a few thousand, in random order: later scans reuse status slots that
        // earlier, larger scans left behind.
        let n = r.random_range(2..4000) * r.random_range(1..600);
        match round % 4 {
            0 => one(&ctx, &Op::plus(), &random_vec::<u32>(&mut r, n), round),
            1 => one(&ctx, &Op::plus(), &random_vec::<u64>(&mut r, n), round),
            2 => one(&ctx, &Op::maximum(), &random_vec::<u8>(&mut r, n), round),
            _ => one(
                &ctx,
                &affine_op(),
                &random_vec::<Affine>(&mut r, n / 4 + 2),
                round,
            ),
        }
    }
}

/// Scans queued from several host threads on clones of one context share its look-back state.
#[test]
fn concurrent_scans_on_one_context() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let inputs: Vec<Vec<u32>> = (0..4)
        .map(|i| random_vec(&mut r, (1 << 20) + 1000 * i))
        .collect();
    std::thread::scope(|s| {
        for data in &inputs {
            let ctx = ctx.clone();
            s.spawn(move || {
                let expect = serial_scan(data, &Op::plus(), ScanKind::Inclusive).0;
                let input = ctx.upload(data).unwrap();
                for run in 0..10 {
                    let mut out = ctx.upload(&vec![u32::poison(); data.len()]).unwrap();
                    ctx.scan(&input, &mut out, &Op::plus(), ScanOptions::inclusive())
                        .unwrap();
                    same(&out.to_vec().unwrap(), &expect)
                        .unwrap_or_else(|e| panic!("run {run} n={}: {e}", data.len()));
                }
            });
        }
    });
}

/// Reduce-then-scan groups operations by size and device only: bitwise equal floats across runs.
#[test]
fn deterministic_scan_is_run_to_run_identical() {
    use rand::Rng;
    let mut r = rng();
    for ctx in backends() {
        let data: Vec<f32> = (0..(1 << 22) + 3)
            .map(|_| r.random::<f32>() - 0.5)
            .collect();
        let input = ctx.upload(&data).unwrap();
        let mut first: Option<Vec<f32>> = None;
        for _ in 0..3 {
            let mut out = ctx.zeros::<f32>(data.len()).unwrap();
            ctx.scan(
                &input,
                &mut out,
                &Op::plus(),
                ScanOptions::inclusive().deterministic(),
            )
            .unwrap();
            let out = out.to_vec().unwrap();
            if let Some(f) = &first {
                same(&out, f).unwrap();
            }
            first = Some(out);
        }
        // And close to a double-precision reference.
        let reference: f64 = data.iter().map(|&x| x as f64).sum();
        let last = *first.unwrap().last().unwrap() as f64;
        assert!(
            (last - reference).abs() < 1e-3 * data.len() as f64 * 1e-4 + 1e-2,
            "{last} vs {reference}"
        );
    }
}

/// More than 2^31 elements.
#[test]
fn scan_past_2_pow_31_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let n = (1usize << 31) + 3000;
    let data: Vec<u8> = (0..n).map(|i| (i % 253) as u8).collect();
    let mut buf = ctx.upload(&data).unwrap();
    let total = ctx
        .scan_in_place_with(&mut buf, &Op::plus(), ScanOptions::exclusive(), Total::Host)
        .unwrap()
        .unwrap();
    let out = buf.to_vec().unwrap();
    let mut carry = 0u8;
    for (i, (&x, &y)) in data.iter().zip(&out).enumerate() {
        assert_eq!(y, carry, "element {i}");
        carry = carry.wrapping_add(x);
    }
    assert_eq!(total, carry);
}

/// The scan of `[carry, data...]` without its first output: the reference of a carry-in scan.
fn serial_scan_after<T: Element>(carry: T, data: &[T], op: &Op<T>, kind: ScanKind) -> (Vec<T>, T) {
    let mut with = vec![carry];
    with.extend_from_slice(data);
    let (inclusive, total) = serial_scan(&with, op, ScanKind::Inclusive);
    let out = match kind {
        ScanKind::Inclusive => inclusive[1..].to_vec(),
        ScanKind::Exclusive => inclusive[..data.len()].to_vec(),
    };
    (out, total)
}

/// A carry-in from the host and from device memory, out of place and in place, both algorithms,
/// a non-commutative operator, empty to several tiles.
#[test]
fn carry_in_continues_the_scan() {
    let mut r = rng();
    for ctx in backends() {
        let nv = tile(&ctx, Family::Scan, 8);
        let op = affine_op();
        for n in [0, 1, 7, nv - 1, nv + 1, 5 * nv + 3, 100_003] {
            let data = random_vec::<Affine>(&mut r, n);
            let carry = Affine::random(&mut r);
            for options in [
                ScanOptions::exclusive(),
                ScanOptions::inclusive(),
                ScanOptions::exclusive().deterministic(),
                ScanOptions::inclusive().deterministic(),
            ] {
                let (expect, expect_total) = serial_scan_after(carry, &data, &op, options.kind);
                let what = format!("{ctx:?} {options:?} n={n}");
                let input = ctx.upload(&data).unwrap();
                let mut out = ctx.upload(&vec![Affine::poison(); n + 2]).unwrap();
                let total = ctx
                    .scan_with_carry(
                        &input,
                        &mut out,
                        &op,
                        options,
                        mgpu::CarryIn::Host(carry),
                        Total::Host,
                    )
                    .unwrap();
                let got = out.to_vec().unwrap();
                same(&got[..n], &expect).unwrap_or_else(|e| panic!("{what}: {e}"));
                same(&got[n..], &[Affine::poison(); 2])
                    .unwrap_or_else(|e| panic!("{what} tail: {e}"));
                assert_eq!(total, Some(expect_total), "{what} total");
                let carry_buf = ctx.upload(&[carry, Affine::poison()]).unwrap();
                let mut inplace = ctx.upload(&data).unwrap();
                let mut device_total = ctx.zeros::<Affine>(1).unwrap();
                ctx.scan_in_place_with_carry(
                    &mut inplace,
                    &op,
                    options,
                    mgpu::CarryIn::Device(&carry_buf),
                    Total::Device(&mut device_total),
                )
                .unwrap();
                same(&inplace.to_vec().unwrap(), &expect)
                    .unwrap_or_else(|e| panic!("{what} in place: {e}"));
                same(&device_total.to_vec().unwrap(), &[expect_total]).unwrap();
            }
        }
        // An empty device carry-in is bad input, and nothing is written.
        let input = ctx.upload(&[Affine::poison()]).unwrap();
        let mut out = ctx.upload(&[Affine::poison()]).unwrap();
        let empty = ctx.zeros::<Affine>(0).unwrap();
        let err = ctx
            .scan_with_carry(
                &input,
                &mut out,
                &op,
                ScanOptions::inclusive(),
                mgpu::CarryIn::Device(&empty),
                Total::None,
            )
            .unwrap_err();
        assert!(err.is_invalid_input(), "{err}");
    }
}
