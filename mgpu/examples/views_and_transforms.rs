//! Views and fused transforms: run primitives on parts of a buffer without copying, fold a
//! per-element map into a reduce's load (transform-reduce), and read counting sequences that
//! need no memory at all.
//!
//! The numbers: statistics of a signal's halves, and the sum of squares from 1 to n.
//!
//! Run: `cargo run --release -p mgpu --example views_and_transforms` (`MGPU_BACKEND=cpu` forces
//! the CPU).

use mgpu::{Comparator, Context, Counting, Map, Op, ScanOptions};

fn main() -> mgpu::Result<()> {
    let ctx = Context::new()?; // the GPU when there is one, else the CPU
    println!("backend: {}", ctx.description());

    // A signal: small integers as f32, so every sum below (even of squares) stays under 2^24
    // and is exact whatever the order of additions.
    let n = 1 << 14;
    let host: Vec<f32> = (0..n).map(|i| ((i * 7919) % 41) as f32 - 20.0).collect();
    let mut signal = ctx.upload(&host)?;
    let half = n / 2;

    // Views: `slice` is a read-only range of a buffer, zero-copy; every primitive takes it like a
    // whole buffer. Out of range panics like `&v[a..b]` (`try_slice` returns an error instead).
    let first = ctx.reduce(&signal.slice(..half), &Op::plus())?;
    let second = ctx.reduce(&signal.slice(half..), &Op::plus())?;
    assert_eq!(first, host[..half].iter().sum::<f32>());
    assert_eq!(second, host[half..].iter().sum::<f32>());
    assert_eq!(first + second, ctx.reduce(&signal, &Op::plus())?);
    println!("sums of the halves: {first} + {second}");

    // A fused map: `x.map(&m)` applies `m` to each element as it is loaded, so the sum of
    // squares (or here of absolute values) is one pass with no temporary buffer. `Map::new`
    // takes a Rust function and the same function as a CUDA expression over `x`.
    let abs = Map::new("abs", |x: f32| x.abs(), "fabsf(x)");
    let energy = ctx.reduce(&signal.slice(half..).map(&abs), &Op::plus())?;
    assert_eq!(energy, host[half..].iter().map(|x| x.abs()).sum::<f32>());
    let sum_sq = ctx.reduce(&signal.map(&Map::square()), &Op::plus())?;
    assert_eq!(sum_sq, host.iter().map(|x| x * x).sum::<f32>());
    println!("sum of |x| over the second half: {energy}, sum of x^2: {sum_sq}");

    // Input and output types may differ: the largest value, widened to f64 on the way in.
    let widen = Map::new("widen", |x: f32| x as f64, "(double)x");
    let peak = ctx.reduce(&signal.map(&widen), &Op::maximum())?;
    assert_eq!(peak, 20.0);

    // `slice_mut`: a writable range. Sort only the first half, descending; the second half is
    // untouched.
    ctx.sort(&mut signal.slice_mut(..half), &Comparator::greater())?;
    let after = signal.to_vec()?;
    let mut expect = host[..half].to_vec();
    expect.sort_by(|a, b| b.total_cmp(a));
    assert_eq!(&after[..half], &expect[..]);
    assert_eq!(&after[half..], &host[half..]);
    println!(
        "first half sorted descending: {:?} ... {:?}",
        &after[..3],
        &after[half - 3..half]
    );

    // A scan from a view into a view: running maximum of the second half, written to the first
    // half of another buffer.
    let mut running = ctx.zeros::<f32>(n)?;
    ctx.scan(
        &signal.slice(half..),
        &mut running.slice_mut(..half),
        &Op::maximum(),
        ScanOptions::inclusive(),
    )?;
    let running = running.to_vec()?;
    let mut m = f32::NEG_INFINITY;
    for (i, &x) in host[half..].iter().enumerate() {
        m = m.max(x);
        assert_eq!(running[i], m);
    }
    assert!(running[half..].iter().all(|&x| x == 0.0));

    // Counting: the sequence start, start + 1, ... read by a primitive without a buffer
    // (Thrust's counting_iterator).
    let count = 1000u64;
    let gauss = ctx.reduce(&Counting::new(1u64, count as usize), &Op::plus())?;
    assert_eq!(gauss, count * (count + 1) / 2);
    // `copy` materializes it (Thrust's sequence); a fused map over the result then gives the sum
    // of squares 1^2 + ... + n^2 in one more pass.
    let mut ks = ctx.zeros::<u64>(count as usize)?;
    ctx.copy(&Counting::new(1u64, count as usize), &mut ks)?;
    let sum_k2 = ctx.reduce(&ks.map(&Map::square()), &Op::plus())?;
    assert_eq!(sum_k2, count * (count + 1) * (2 * count + 1) / 6);
    println!("1 + ... + {count} = {gauss}; 1^2 + ... + {count}^2 = {sum_k2}");
    println!("ok");
    Ok(())
}
