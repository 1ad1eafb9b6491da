//! Fused transforms and generated inputs: reduce, scan (look-back and reduce-then-scan) and copy of
//! mapped inputs (`x.map(&f)`) that change the element type, `Map::square()`, and `Counting`
//! sequences (wrapping integers, floats), on whole buffers and on unaligned views, into poisoned
//! views; `ctx.sequence`; a map whose CUDA expression does not compile.

mod common;
use common::*;
use mgpu::tuning::Family;
use mgpu::{Arithmetic, Context, Counting, Element, Error, Map, Op, ScanOptions, Source, Total};
use rand::rngs::StdRng;
use rand::Rng;

/// Sizes around the reduce and scan tiles of `O` (the type the primitives compute in).
fn sizes_for<O: Element>(ctx: &Context) -> Vec<usize> {
    let size = std::mem::size_of::<O>();
    edge_sizes(&[
        tile(ctx, Family::Reduce, size),
        tile(ctx, Family::Scan, size),
    ])
}

/// Every reader of a source on `ctx`: reduce (host, and into a view of poison), scans of both
/// kinds with both algorithms into a view at `out_off` (poison around it, the total to the host),
/// and copy into a longer view. `expect` is the source's elements as the host computes them.
fn check_source<O: TestElement>(
    ctx: &Context,
    src: &impl Source<O>,
    expect: &[O],
    op: &Op<O>,
    out_off: usize,
    what: &str,
) {
    let n = expect.len();
    let what = format!("{ctx:?} {what} {} n={n}", op.name());
    assert_eq!(src.source_len(), n, "{what}: source_len");
    let total = fold(expect, op);
    same(&[ctx.reduce(src, op).unwrap()], &[total])
        .unwrap_or_else(|e| panic!("{what}: reduce: {e}"));
    let mut t = ctx.upload(&[O::poison(); 3]).unwrap();
    ctx.reduce_to_device(src, op, &mut t.slice_mut(1..2))
        .unwrap();
    same(&t.to_vec().unwrap(), &[O::poison(), total, O::poison()])
        .unwrap_or_else(|e| panic!("{what}: reduce_to_device into a view: {e}"));
    for options in [
        ScanOptions::exclusive(),
        ScanOptions::inclusive(),
        ScanOptions::inclusive().deterministic(),
        ScanOptions::exclusive().deterministic(),
    ] {
        let (scanned, _) = serial_scan(expect, op, options.kind);
        let before = vec![O::poison(); out_off + n + 3];
        let mut out = ctx.upload(&before).unwrap();
        let host = ctx
            .scan_with(
                src,
                &mut out.slice_mut(out_off..out_off + n),
                op,
                options,
                Total::Host,
            )
            .unwrap();
        check_region(
            &out.to_vec().unwrap(),
            &before,
            out_off..out_off + n,
            &scanned,
            &format!("{what}: scan {:?} {:?}", options.kind, options.algorithm),
        );
        same(&[host.unwrap()], &[total])
            .unwrap_or_else(|e| panic!("{what}: scan {options:?} total: {e}"));
    }
    // Copy (Thrust's transform / sequence) into a view longer than the source.
    let before = vec![O::poison(); out_off + n + 3];
    let mut out = ctx.upload(&before).unwrap();
    ctx.copy(src, &mut out.slice_mut(out_off..)).unwrap();
    check_region(
        &out.to_vec().unwrap(),
        &before,
        out_off..out_off + n,
        expect,
        &format!("{what}: copy"),
    );
}

/// A mapped input on whole buffers, on views at unaligned offsets with random elements around
/// them, and on tails, for sizes around the tile edges, with each of `ops`.
fn check_map<I: Element, O: TestElement>(
    map: &Map<I, O>,
    ops: &[Op<O>],
    gen: impl Fn(&mut StdRng) -> I,
) {
    let mut r = rng();
    for ctx in backends() {
        for n in sizes_for::<O>(&ctx) {
            let data: Vec<I> = (0..n).map(|_| gen(&mut r)).collect();
            let mapped: Vec<O> = data.iter().map(|&x| map.apply(x)).collect();
            let name = format!("{} {}->{}", map.name(), I::CUDA_TYPE, O::CUDA_TYPE);
            let whole = ctx.upload(&data).unwrap();
            let offsets: &[usize] = if n >= MULTI_LEVEL {
                &[3]
            } else {
                &[1, 3, 5, 7]
            };
            for (k, op) in ops.iter().enumerate() {
                check_source(&ctx, &whole.map(map), &mapped, op, k % 2, &name);
                for (i, &off) in offsets.iter().enumerate() {
                    // A view with 5 random elements after it, and a tail.
                    let mut host: Vec<I> = (0..off + n + 5).map(|_| gen(&mut r)).collect();
                    host[off..off + n].copy_from_slice(&data);
                    let buf = ctx.upload(&host).unwrap();
                    let v = buf.slice(off..off + n);
                    let out_off = offsets[(i + 1) % offsets.len()];
                    let what = format!("{name} view at {off}");
                    check_source(&ctx, &v.map(map), &mapped, op, out_off, &what);
                    let tail = ctx.upload(&host[..off + n]).unwrap();
                    let t = tail.slice(off..);
                    let what = format!("{name} tail at {off}");
                    check_source(&ctx, &t.map(map), &mapped, op, off, &what);
                    // The input is only read.
                    same(&buf.to_vec().unwrap(), &host)
                        .unwrap_or_else(|e| panic!("{what}: input changed: {e}"));
                }
            }
        }
    }
}

#[test]
fn widen_f32_to_f64() {
    // Integers up to 2^24 in magnitude: exact in f32, their sums exact in f64 in any order, but not
    // in f32 (accumulating in the input type shows).
    let widen = Map::new("widen", |x: f32| x as f64, "(double)x");
    check_map(
        &widen,
        &[Op::plus(), Op::maximum(), Op::minimum()],
        |r: &mut StdRng| r.random_range(-(1 << 24)..=(1 << 24)) as f32,
    );
}

#[test]
fn widen_u8_to_u32() {
    // Sums of up to 2^20 bytes fit u32, not u8.
    let widen = Map::new("u8_to_u32", |x: u8| x as u32, "(unsigned)x");
    check_map(&widen, &[Op::plus(), Op::bit_xor()], |r: &mut StdRng| {
        r.random::<u8>()
    });
}

#[test]
fn struct_field_to_u64() {
    // One field of an 8-byte struct, summed in 64 bits (more than 2^32 in total).
    let field = Map::new(
        "affine_b",
        |x: Affine| x.b as u64,
        "(unsigned long long)x.b",
    );
    check_map(&field, &[Op::plus(), Op::maximum()], Affine::random);
}

#[test]
fn u32_to_affine_non_commutative() {
    // 4-byte input, 8-byte user type with a non-commutative operator: order matters everywhere.
    let to_affine = Map::new(
        "to_affine",
        |x: u32| Affine { a: x | 1, b: x },
        "Affine{ x | 1u, x }",
    );
    check_map(&to_affine, &[affine_op()], |r: &mut StdRng| {
        r.random::<u32>()
    });
}

#[test]
fn i32_to_i64_with_a_cuda_helper() {
    let map = Map::new(
        "clamped_cube",
        |x: i32| {
            let c = x.clamp(-1000, 1000) as i64;
            c * c * c
        },
        "clamped_cube(x)",
    )
    .with_cuda_helpers(
        "__device__ __forceinline__ long long clamped_cube(int x) {\n\
           long long c = x < -1000 ? -1000 : (x > 1000 ? 1000 : x);\n\
           return c * c * c;\n}\n",
    );
    assert_eq!(map.apply(5), 125);
    assert_eq!(map.apply(-5000), -1_000_000_000);
    assert_eq!(map.cuda_expression(), "clamped_cube(x)");
    assert!(map.cuda_helpers().contains("clamped_cube"));
    check_map(&map, &[Op::plus(), Op::minimum()], |r: &mut StdRng| {
        r.random_range(-1500..1500)
    });
}

#[test]
fn square_i32_wraps() {
    check_map(
        &Map::<i32, i32>::square(),
        &[Op::plus()],
        |r: &mut StdRng| r.random(),
    );
    assert_eq!(Map::<i32, i32>::square().apply(65536), 0, "2^32 wraps to 0");
    assert_eq!(
        Map::<i32, i32>::square().apply(-46341),
        (46341i32).wrapping_mul(46341)
    );
}

#[test]
fn square_u8_wraps() {
    check_map(&Map::<u8, u8>::square(), &[Op::plus()], |r: &mut StdRng| {
        r.random()
    });
}

#[test]
fn square_64_bit_integers() {
    check_map(
        &Map::<i64, i64>::square(),
        &[Op::plus()],
        |r: &mut StdRng| r.random(),
    );
    check_map(
        &Map::<u64, u64>::square(),
        &[Op::plus()],
        |r: &mut StdRng| r.random(),
    );
}

#[test]
fn square_floats() {
    // Small integers: every partial sum of squares is exact.
    check_map(&Map::<f32, f32>::square(), &[Op::plus()], f32::random);
    check_map(
        &Map::<f64, f64>::square(),
        &[Op::plus(), Op::maximum()],
        |r: &mut StdRng| r.random_range(-3000..3000) as f64,
    );
}

/// The same data reduced through a map and through its materialized copy agree, and the
/// deterministic scan of a mapped input is identical run to run (floats with fractions).
#[test]
fn mapped_input_matches_its_materialized_copy() {
    let mut r = rng();
    let widen = Map::new("widen_half", |x: f32| x as f64 * 0.5, "(double)x * 0.5");
    for ctx in backends() {
        let n = (1 << 20) + 11;
        let data: Vec<f32> = (0..n).map(|_| r.random::<f32>() - 0.5).collect();
        let x = ctx.upload(&data).unwrap();
        let mut y = ctx.upload(&vec![f64::poison(); n + 1]).unwrap();
        ctx.copy(&x.map(&widen), &mut y.slice_mut(1..)).unwrap();
        let yv = y.to_vec().unwrap();
        let expect: Vec<f64> = data.iter().map(|&v| v as f64 * 0.5).collect();
        same(&yv[1..], &expect).unwrap_or_else(|e| panic!("{ctx:?} copy: {e}"));
        let v = x.slice(1..);
        let mut first: Option<Vec<f64>> = None;
        for _ in 0..3 {
            let mut a = ctx.upload(&vec![f64::poison(); n - 1]).unwrap();
            ctx.scan(
                &v.map(&widen),
                &mut a,
                &Op::plus(),
                ScanOptions::inclusive().deterministic(),
            )
            .unwrap();
            let a = a.to_vec().unwrap();
            if let Some(f) = &first {
                same(&a, f).unwrap_or_else(|e| panic!("{ctx:?} not deterministic: {e}"));
            }
            first = Some(a);
        }
        // Close to the host's sum (association differs).
        let last = *first.unwrap().last().unwrap();
        let reference: f64 = expect[1..].iter().sum();
        assert!(
            (last - reference).abs() < 1e-6,
            "{ctx:?}: {last} vs {reference}"
        );
        let got = ctx.reduce(&v.map(&widen), &Op::plus()).unwrap();
        assert!(
            (got - reference).abs() < 1e-6,
            "{ctx:?}: {got} vs {reference}"
        );
    }
}

/// Counting sequences of `T` from `start`, with sizes around the tile edges: reduce, scans and copy
/// against the host's `start + i`; then `sequence` into a whole buffer and into views.
fn check_counting<T: TestElement + Arithmetic>(
    start: T,
    ops: &[Op<T>],
    nth: impl Fn(usize) -> T,
    max_len: usize,
) {
    for ctx in backends() {
        let sizes: Vec<usize> = sizes_for::<T>(&ctx)
            .into_iter()
            .filter(|&n| n <= max_len)
            .collect();
        for &n in &sizes {
            let expect: Vec<T> = (0..n).map(&nth).collect();
            let what = format!("Counting<{}>({start:?})", T::CUDA_TYPE);
            let c = Counting::new(start, n);
            for i in [0, 1, n / 2, n.saturating_sub(1)] {
                if i < n {
                    same(&[c.nth(i)], &[expect[i]]).unwrap_or_else(|e| panic!("{what} nth: {e}"));
                }
            }
            for (k, op) in ops.iter().enumerate() {
                check_source(&ctx, &c, &expect, op, [0, 1, 3, 5, 7][k % 5], &what);
            }
        }
        for n in sizes.into_iter().chain([MULTI_LEVEL]).filter(|&n| n > 0) {
            let expect: Vec<T> = (0..n).map(&nth).collect();
            let what = format!("{ctx:?} sequence<{}>({start:?}) n={n}", T::CUDA_TYPE);
            let mut whole = ctx.upload(&vec![T::poison(); n]).unwrap();
            ctx.sequence(&mut whole, start).unwrap();
            same(&whole.to_vec().unwrap(), &expect)
                .unwrap_or_else(|e| panic!("{what}: whole: {e}"));
            for off in [1usize, 3, 5, 7] {
                let before = vec![T::poison(); off + n + 4];
                let mut b = ctx.upload(&before).unwrap();
                ctx.sequence(&mut b.slice_mut(off..off + n), start).unwrap();
                check_region(
                    &b.to_vec().unwrap(),
                    &before,
                    off..off + n,
                    &expect,
                    &format!("{what}: view at {off}"),
                );
            }
            if n >= MULTI_LEVEL {
                continue;
            }
            // A tail view.
            let before = vec![T::poison(); 2 + n];
            let mut b = ctx.upload(&before).unwrap();
            ctx.sequence(&mut b.slice_mut(2..), start).unwrap();
            check_region(
                &b.to_vec().unwrap(),
                &before,
                2..2 + n,
                &expect,
                &format!("{what}: tail"),
            );
        }
    }
}

#[test]
fn counting_i32_negative_start() {
    let start = -100_000i32;
    check_counting(
        start,
        &[Op::plus(), Op::maximum(), Op::minimum()],
        |i| start.wrapping_add(i as i32),
        usize::MAX,
    );
}

#[test]
fn counting_i32_wraps_past_max() {
    let start = i32::MAX - 100;
    check_counting(
        start,
        &[Op::plus(), Op::maximum(), Op::minimum(), Op::bit_xor()],
        |i| start.wrapping_add(i as i32),
        usize::MAX,
    );
    // The wrap itself, spelled out.
    let ctx = Context::cpu();
    let mut b = ctx.zeros::<i32>(4).unwrap();
    ctx.sequence(&mut b, i32::MAX - 1).unwrap();
    assert_eq!(
        b.to_vec().unwrap(),
        vec![i32::MAX - 1, i32::MAX, i32::MIN, i32::MIN + 1]
    );
}

#[test]
fn counting_u64_wraps() {
    let start = u64::MAX - 1000;
    check_counting(
        start,
        &[Op::plus(), Op::minimum()],
        |i| start.wrapping_add(i as u64),
        usize::MAX,
    );
    let start = 1u64 << 40;
    check_counting(start, &[Op::plus()], |i| start + i as u64, usize::MAX);
}

#[test]
fn counting_u8_wraps() {
    let start = 250u8;
    check_counting(
        start,
        &[Op::plus(), Op::maximum(), Op::bit_or()],
        |i| start.wrapping_add(i as u8),
        usize::MAX,
    );
    assert_eq!(Counting::new(250u8, 10).nth(7), 1);
}

#[test]
fn counting_f32() {
    // Half-integers: sums of up to ~3000 of them are exact in f32 in any order.
    let start = -2.5f32;
    check_counting(start, &[Op::plus()], |i| start + i as f32, 3000);
    // Maximum and minimum are exact at any size.
    check_counting(
        start,
        &[Op::maximum(), Op::minimum()],
        |i| start + i as f32,
        usize::MAX,
    );
}

#[test]
fn counting_f64() {
    let start = 0.5f64;
    check_counting(
        start,
        &[Op::plus(), Op::maximum()],
        |i| start + i as f64,
        usize::MAX,
    );
    let start = -1e6f64;
    check_counting(start, &[Op::plus()], |i| start + i as f64, usize::MAX);
}

/// Thrust's transform: a mapped view copied into a view of another type; nothing else written.
#[test]
fn copy_of_a_mapped_source_into_a_view() {
    let mut r = rng();
    let widen = Map::new("widen_x2", |x: f32| x as f64 * 2.0, "(double)x * 2.0");
    let to_affine = Map::new(
        "to_affine",
        |x: u32| Affine { a: x | 1, b: x },
        "Affine{ x | 1u, x }",
    );
    for ctx in backends() {
        // The doc example.
        let x = ctx.upload(&[1.5f32, -2.0]).unwrap();
        let mut y = ctx.zeros::<f64>(3).unwrap();
        ctx.copy(&x.map(&widen), &mut y.slice_mut(1..)).unwrap();
        assert_eq!(y.to_vec().unwrap(), vec![0.0, 3.0, -4.0], "{ctx:?}");
        for n in [1usize, 100, 4099, (1 << 20) + 5] {
            let data = random_vec::<u32>(&mut r, n + 4);
            let src = ctx.upload(&data).unwrap();
            let v = src.slice(3..3 + n);
            let expect: Vec<Affine> = data[3..3 + n].iter().map(|&x| to_affine.apply(x)).collect();
            let before = vec![Affine::poison(); n + 6];
            let mut out = ctx.upload(&before).unwrap();
            ctx.copy(&v.map(&to_affine), &mut out.slice_mut(1..n + 1))
                .unwrap();
            check_region(
                &out.to_vec().unwrap(),
                &before,
                1..n + 1,
                &expect,
                "to_affine",
            );
            // A destination too short: an error, nothing written.
            let err = ctx
                .copy(&v.map(&to_affine), &mut out.slice_mut(2..n + 1))
                .unwrap_err();
            assert!(matches!(err, Error::LengthMismatch { .. }), "{err}");
            check_region(
                &out.to_vec().unwrap(),
                &before,
                1..n + 1,
                &expect,
                "after an error",
            );
        }
    }
}

/// A map whose CUDA expression does not compile: on the GPU every primitive returns
/// `Error::Compile` and writes nothing, and the context stays usable; on the CPU the Rust function
/// simply runs.
#[test]
fn a_map_that_does_not_compile() {
    let bad = Map::new("bad", |x: i32| x, "x +* 2");
    for ctx in backends() {
        let data = ctx.upload(&[1, 2, 3, 4]).unwrap();
        if !ctx.is_gpu() {
            assert_eq!(ctx.reduce(&data.map(&bad), &Op::plus()).unwrap(), 10);
            let mut out = ctx.zeros::<i32>(4).unwrap();
            ctx.scan(
                &data.map(&bad),
                &mut out,
                &Op::plus(),
                ScanOptions::inclusive(),
            )
            .unwrap();
            assert_eq!(out.to_vec().unwrap(), vec![1, 3, 6, 10]);
            continue;
        }
        let is_compile = |e: &Error| matches!(e, Error::Compile { .. });
        let err = ctx.reduce(&data.map(&bad), &Op::plus()).unwrap_err();
        assert!(is_compile(&err), "reduce: {err}");
        assert!(err.to_string().contains("NVRTC log"), "{err}");
        let mut out = ctx.upload(&[7; 6]).unwrap();
        for options in [
            ScanOptions::exclusive(),
            ScanOptions::inclusive().deterministic(),
        ] {
            let err = ctx
                .scan(&data.map(&bad), &mut out, &Op::plus(), options)
                .unwrap_err();
            assert!(is_compile(&err), "scan {options:?}: {err}");
        }
        let err = ctx.copy(&data.map(&bad), &mut out).unwrap_err();
        assert!(is_compile(&err), "copy: {err}");
        let mut total = ctx.upload(&[7]).unwrap();
        let err = ctx
            .reduce_to_device(&data.slice(1..).map(&bad), &Op::plus(), &mut total)
            .unwrap_err();
        assert!(is_compile(&err), "reduce_to_device: {err}");
        assert_eq!(out.to_vec().unwrap(), vec![7; 6], "nothing written");
        assert_eq!(total.to_vec().unwrap(), vec![7], "nothing written");
        // Still usable, with maps too.
        assert_eq!(ctx.reduce(&data, &Op::plus()).unwrap(), 10);
        assert_eq!(
            ctx.reduce(&data.map(&Map::square()), &Op::plus()).unwrap(),
            30
        );
        ctx.scan(&data, &mut out, &Op::plus(), ScanOptions::exclusive())
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![0, 1, 3, 6, 7, 7]);
    }
}
