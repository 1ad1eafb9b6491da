//! Streams: forked contexts used from several threads at once, one context shared by eight
//! threads, buffers made on one stream and used (and dropped) on another, events and joins, look-back
//! scans running concurrently on two streams, and contexts on a caller's CUDA stream. Every result
//! is checked against a serial computation on the host.

mod common;
use common::*;
use mgpu::{Comparator, Context, Error, Op, ScanAlgorithm, ScanKind, ScanOptions, Total, Tuning};
use rand::Rng;

/// Repetitions: more on the GPU, where races can show; few on the CPU (2 cores here).
fn reps(ctx: &Context, gpu: usize, cpu: usize) -> usize {
    if ctx.is_gpu() {
        gpu
    } else {
        cpu
    }
}

/// Scan (both kinds, the total to the device), reduce and sort of `data` on `ctx`, `rounds`
/// times, every result checked. `who` names the caller in failures.
fn workload<T: TestElement>(
    ctx: &Context,
    data: &[T],
    op: &Op<T>,
    comp: &Comparator<T>,
    rounds: usize,
    who: &str,
) {
    let n = data.len();
    let (inclusive, total) = serial_scan(data, op, ScanKind::Inclusive);
    let (exclusive, _) = serial_scan(data, op, ScanKind::Exclusive);
    let (sorted, order) = stable_sorted(data, comp);
    for round in 0..rounds {
        let what = format!("{who} {ctx:?} {} n={n} round {round}", T::CUDA_TYPE);
        let input = ctx.upload(data).unwrap();
        // Queue several things before reading any back.
        let mut inc = ctx.upload(&vec![T::poison(); n + 1]).unwrap();
        let mut exc = ctx.upload(&vec![T::poison(); n]).unwrap();
        let mut tot = ctx.upload(&[T::poison(), T::poison()]).unwrap();
        ctx.scan(&input, &mut inc, op, ScanOptions::inclusive())
            .unwrap();
        ctx.scan_with(
            &input,
            &mut exc,
            op,
            ScanOptions::exclusive(),
            Total::Device(&mut tot.slice_mut(1..)),
        )
        .unwrap();
        let mut keys = ctx.upload(data).unwrap();
        let mut values = ctx.upload(&(0..n as u32).collect::<Vec<_>>()).unwrap();
        ctx.sort_pairs(&mut keys, &mut values, comp).unwrap();
        let reduced = ctx.reduce(&input, op).unwrap();
        same(&[reduced], &[total]).unwrap_or_else(|e| panic!("{what}: reduce: {e}"));
        let inc = inc.to_vec().unwrap();
        same(&inc[..n], &inclusive).unwrap_or_else(|e| panic!("{what}: inclusive: {e}"));
        same(&inc[n..], &[T::poison()]).unwrap_or_else(|e| panic!("{what}: past the end: {e}"));
        same(&exc.to_vec().unwrap(), &exclusive)
            .unwrap_or_else(|e| panic!("{what}: exclusive: {e}"));
        same(&tot.to_vec().unwrap(), &[T::poison(), total])
            .unwrap_or_else(|e| panic!("{what}: device total: {e}"));
        same(&keys.to_vec().unwrap(), &sorted)
            .unwrap_or_else(|e| panic!("{what}: sorted keys: {e}"));
        same(&values.to_vec().unwrap(), &order)
            .unwrap_or_else(|e| panic!("{what}: sorted values: {e}"));
        same(&input.to_vec().unwrap(), data).unwrap_or_else(|e| panic!("{what}: input: {e}"));
    }
}

/// Thread `t` of `threads` works on `contexts[t % len]`, with its own data of a type that depends
/// on `t` (4-byte packed and 8-byte look-back status, a user type, floats).
fn hammer(contexts: &[Context], threads: usize, n: usize, rounds: usize) {
    let mut r = rng();
    let seeds: Vec<u64> = (0..threads).map(|_| r.random()).collect();
    std::thread::scope(|s| {
        for (t, &seed) in seeds.iter().enumerate() {
            let ctx = &contexts[t % contexts.len()];
            s.spawn(move || {
                use rand::SeedableRng;
                let mut r = rand::rngs::StdRng::seed_from_u64(seed);
                let n = n + r.random_range(0..5000);
                let who = format!("thread {t}");
                match t % 4 {
                    0 => workload(
                        ctx,
                        &random_vec::<u32>(&mut r, n),
                        &Op::plus(),
                        &Comparator::less(),
                        rounds,
                        &who,
                    ),
                    1 => workload(
                        ctx,
                        &random_vec::<i64>(&mut r, n),
                        &Op::plus(),
                        &Comparator::greater(),
                        rounds,
                        &who,
                    ),
                    2 => workload(
                        ctx,
                        &random_vec::<Affine>(&mut r, n / 2),
                        &affine_op(),
                        &affine_key_less(),
                        rounds,
                        &who,
                    ),
                    _ => workload(
                        ctx,
                        &random_vec::<f64>(&mut r, n),
                        &Op::plus(),
                        &Comparator::less(),
                        rounds,
                        &who,
                    ),
                }
            });
        }
    });
}

#[test]
fn two_forked_streams_from_two_threads() {
    for ctx in backends() {
        let side = ctx.fork().unwrap();
        if ctx.is_gpu() {
            assert_ne!(
                ctx.cuda_stream().unwrap().cu_stream(),
                side.cuda_stream().unwrap().cu_stream(),
                "fork makes a new stream"
            );
        } else {
            assert!(!side.is_gpu() && side.cuda_stream().is_none());
        }
        let contexts = [ctx.clone(), side];
        hammer(&contexts, 2, 1 << 20, reps(&ctx, 12, 2));
    }
}

#[test]
fn eight_threads_share_one_context() {
    for ctx in backends() {
        let n = if ctx.is_gpu() { 1 << 20 } else { 1 << 16 };
        hammer(std::slice::from_ref(&ctx), 8, n, reps(&ctx, 8, 2));
    }
}

#[test]
fn eight_threads_on_four_streams() {
    for ctx in backends() {
        let contexts: Vec<Context> = std::iter::once(ctx.clone())
            .chain((0..3).map(|_| ctx.fork().unwrap()))
            .collect();
        let n = if ctx.is_gpu() { 1 << 20 } else { 1 << 16 };
        hammer(&contexts, 8, n, reps(&ctx, 6, 1));
    }
}

/// Keeps `ctx`'s stream busy for a while (a sort of a few million keys on the GPU), so that work
/// queued after it on that stream is still pending when the host goes on: races then show.
fn busy(ctx: &Context, keys: &mut mgpu::Buffer<u32>) {
    ctx.sort(keys, &Comparator::greater()).unwrap();
    ctx.sort(keys, &Comparator::less()).unwrap();
}

/// A buffer uploaded on a fork, used by the main context while the main stream is busy, read back
/// through its own stream; dropped (freed on its stream) while the main context's work on it is
/// still pending, its memory reused at once by new work on its stream. Then the other direction.
#[test]
fn a_buffer_of_one_stream_used_on_another() {
    let mut r = rng();
    for ctx in backends() {
        let side = ctx.fork().unwrap();
        let n = if ctx.is_gpu() { 1 << 22 } else { 1 << 16 };
        let data = random_vec::<u32>(&mut r, n);
        let other = random_vec::<u32>(&mut r, n);
        let (expect, total) = serial_scan(&data, &Op::plus(), ScanKind::Inclusive);
        let (twice, _) = serial_scan(&expect, &Op::plus(), ScanKind::Inclusive);
        let busy_n = if ctx.is_gpu() { 1 << 23 } else { 1000 };
        let mut ctx_busy = ctx.upload(&random_vec::<u32>(&mut r, busy_n)).unwrap();
        let mut side_busy = side.upload(&random_vec::<u32>(&mut r, busy_n)).unwrap();
        for round in 0..reps(&ctx, 12, 2) {
            let what = format!("{ctx:?} round {round}");
            // Made on the side stream, scanned on the busy main one.
            let mut out = ctx.upload(&vec![u32::poison(); n + 1]).unwrap();
            let input = side.upload(&data).unwrap();
            busy(&ctx, &mut ctx_busy);
            ctx.scan(&input, &mut out, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            // Freed on the side stream while the scan is still queued on the main one; new
            // allocations on the side stream may reuse that memory, and overwrite it at once.
            drop(input);
            let mut clobber = side.zeros::<u32>(n).unwrap();
            side.sequence(&mut clobber, 12345).unwrap();
            let mut clobber2 = side.upload(&other).unwrap();
            side.scan_in_place(&mut clobber2, &Op::bit_xor(), ScanOptions::exclusive())
                .unwrap();
            let got = out.to_vec().unwrap();
            same(&got[..n], &expect)
                .unwrap_or_else(|e| panic!("{what}: scan of a freed input: {e}"));
            assert_eq!(got[n], u32::poison(), "{what}: past the end");
            drop((clobber, clobber2));

            // A side buffer scanned in place (twice) by the busy main context, read back at once
            // through its own stream.
            let mut b = side.upload(&data).unwrap();
            busy(&ctx, &mut ctx_busy);
            ctx.scan_in_place(&mut b, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            ctx.scan_in_place(&mut b, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            same(&b.to_vec().unwrap(), &twice)
                .unwrap_or_else(|e| panic!("{what}: in place on another stream's buffer: {e}"));
            // Reduced by the busy main context (a view of a side buffer) into a view of another
            // side buffer, read back at once through the side stream.
            let mut b = side.upload(&expect).unwrap();
            let mut tot = side.upload(&[u32::poison(); 2]).unwrap();
            busy(&ctx, &mut ctx_busy);
            ctx.reduce_to_device(&b.slice(n - 1..), &Op::plus(), &mut tot.slice_mut(1..))
                .unwrap();
            same(&tot.to_vec().unwrap(), &[u32::poison(), total])
                .unwrap_or_else(|e| panic!("{what}: device total on the side stream: {e}"));
            // The side stream then changes that buffer: after the main context's reduce read it.
            let mut check = ctx.upload(&[u32::poison()]).unwrap();
            busy(&ctx, &mut ctx_busy);
            ctx.reduce_to_device(&b, &Op::plus(), &mut check).unwrap();
            side.sequence(&mut b, 0).unwrap();
            assert_eq!(
                check.to_vec().unwrap(),
                vec![fold(&expect, &Op::plus())],
                "{what}: read before the write"
            );

            // Written on the busy side stream, read at once by the idle main context, which must
            // wait for that write; and the other way round.
            let mut w = side.upload(&data).unwrap();
            busy(&side, &mut side_busy);
            side.scan_in_place(&mut w, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            let mut copied = ctx.upload(&vec![u32::poison(); n]).unwrap();
            ctx.copy(&w, &mut copied).unwrap();
            same(&copied.to_vec().unwrap(), &expect)
                .unwrap_or_else(|e| panic!("{what}: copy of a side buffer being written: {e}"));
            let mut w = ctx.upload(&data).unwrap();
            busy(&ctx, &mut ctx_busy);
            ctx.scan_in_place(&mut w, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            assert_eq!(
                side.reduce(&w, &Op::bit_xor()).unwrap(),
                fold(&expect, &Op::bit_xor()),
                "{what}: side reduce of a main buffer being written"
            );

            // The other direction: main-stream buffers used on the busy side stream, the input
            // dropped at once and its memory reused on the main stream, the output read back at
            // once through the main stream.
            let input = ctx.upload(&data).unwrap();
            let mut out = ctx.upload(&vec![u32::poison(); n]).unwrap();
            busy(&side, &mut side_busy);
            side.scan(&input, &mut out, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            drop(input);
            let mut reuse = ctx.zeros::<u32>(n).unwrap();
            ctx.sequence(&mut reuse, 777).unwrap();
            same(&out.to_vec().unwrap(), &expect)
                .unwrap_or_else(|e| panic!("{what}: side scan into a main buffer: {e}"));
        }
    }
}

/// A forked context dropped while its buffers live and its work may be pending: the buffers stay
/// usable (they keep their stream).
#[test]
fn buffers_outlive_their_forked_context() {
    let mut r = rng();
    for ctx in backends() {
        let n = (1 << 20) + 77;
        let data = random_vec::<u64>(&mut r, n);
        let (expect, total) = serial_scan(&data, &Op::plus(), ScanKind::Exclusive);
        let mut b = {
            let side = ctx.fork().unwrap();
            let mut b = side.upload(&data).unwrap();
            side.scan_in_place(&mut b, &Op::plus(), ScanOptions::exclusive())
                .unwrap();
            b
        };
        same(&b.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{ctx:?}: {e}"));
        // The main context works on it afterwards.
        ctx.copy(&ctx.upload(&data).unwrap(), &mut b).unwrap();
        let got = ctx
            .scan_in_place_with(&mut b, &Op::plus(), ScanOptions::exclusive(), Total::Host)
            .unwrap();
        assert_eq!(got, Some(total), "{ctx:?}");
        same(&b.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("{ctx:?}: {e}"));
    }
}

/// side.scan_in_place, then ctx.wait_for(side's event), then ctx.reduce of the scanned data:
/// the reduce must see the whole scan. Large data and many rounds, so that a wrong order shows.
/// (Buffers also order their streams by themselves; this checks that events and joins combine with
/// that correctly, without deadlock or lost work.)
#[test]
fn events_order_work_across_streams() {
    let mut r = rng();
    for ctx in backends() {
        let side = ctx.fork().unwrap();
        let n = if ctx.is_gpu() { 1 << 22 } else { 1 << 18 };
        let data = random_vec::<u32>(&mut r, n);
        let (scanned, _) = serial_scan(&data, &Op::plus(), ScanKind::Inclusive);
        let sum_of_scan = fold(&scanned, &Op::plus());
        let max_of_scan = fold(&scanned, &Op::maximum());
        // Work queued before the scans keeps each stream busy, so a missing order would show.
        let busy_n = if ctx.is_gpu() { 1 << 23 } else { 1000 };
        let mut ctx_busy = ctx.upload(&random_vec::<u32>(&mut r, busy_n)).unwrap();
        let mut side_busy = side.upload(&random_vec::<u32>(&mut r, busy_n)).unwrap();
        for round in 0..reps(&ctx, 20, 3) {
            let what = format!("{ctx:?} round {round}");
            // Data of the main context, scanned on the side stream.
            let mut d = ctx.upload(&data).unwrap();
            busy(&side, &mut side_busy);
            side.scan_in_place(&mut d, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            let event = side.record_event().unwrap();
            ctx.wait_for(&event).unwrap();
            assert_eq!(ctx.reduce(&d, &Op::plus()).unwrap(), sum_of_scan, "{what}");
            // The same with join, and data of the side stream, reduced on the device.
            let mut e = side.upload(&data).unwrap();
            busy(&side, &mut side_busy);
            side.scan_in_place(&mut e, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            ctx.join(&side).unwrap();
            let mut out = ctx.upload(&[u32::poison(); 3]).unwrap();
            ctx.reduce_to_device(&e, &Op::maximum(), &mut out.slice_mut(1..2))
                .unwrap();
            assert_eq!(
                out.to_vec().unwrap(),
                vec![u32::poison(), max_of_scan, u32::poison()],
                "{what}: join"
            );
            // The other way round, and an event waited for on the host.
            busy(&ctx, &mut ctx_busy);
            ctx.scan_in_place(&mut e, &Op::plus(), ScanOptions::exclusive())
                .unwrap();
            side.join(&ctx).unwrap();
            let host_event = ctx.record_event().unwrap();
            host_event.synchronize().unwrap();
            let got = side.reduce(&e, &Op::plus()).unwrap();
            let (twice, _) = serial_scan(&scanned, &Op::plus(), ScanKind::Exclusive);
            assert_eq!(got, fold(&twice, &Op::plus()), "{what}: back on the side");
            // An event recorded with nothing queued, waited for twice.
            let idle = side.record_event().unwrap();
            ctx.wait_for(&idle).unwrap();
            ctx.wait_for(&idle).unwrap();
        }
    }
}

/// Look-back scans on two streams at once: each stream has its own status slots and ticket counter,
/// so concurrent multi-tile scans must never see each other's tiles. Both streams queue several
/// scans before reading any back; small tunings make many tiles.
#[test]
fn lookback_scans_concurrently_on_two_streams() {
    let mut r = rng();
    for ctx in backends() {
        let side = ctx.fork().unwrap();
        let n = if ctx.is_gpu() {
            (1 << 22) + 17
        } else {
            (1 << 17) + 17
        };
        let words = random_vec::<u32>(&mut r, n);
        let longs = random_vec::<u64>(&mut r, n / 2 + 3);
        let affines = random_vec::<Affine>(&mut r, n / 4 + 5);
        let seeds: [u64; 2] = [r.random(), r.random()];
        let tunings = [
            None,
            Some(Tuning::new(32, 1, 16)),
            Some(Tuning::new(64, 3, 8)),
            Some(Tuning {
                backoff_ns: 100,
                ..Tuning::new(128, 5, 4)
            }),
        ];
        let inc = serial_scan(&words, &Op::plus(), ScanKind::Inclusive).0;
        let exc64 = serial_scan(&longs, &Op::plus(), ScanKind::Exclusive).0;
        let composed = serial_scan(&affines, &affine_op(), ScanKind::Inclusive).0;
        let rounds = reps(&ctx, 10, 1);
        std::thread::scope(|s| {
            for (who, c) in [("main", &ctx), ("side", &side)] {
                let (words, longs, affines) = (&words, &longs, &affines);
                let (inc, exc64, composed) = (&inc, &exc64, &composed);
                let seed = seeds[(who == "side") as usize];
                s.spawn(move || {
                    use rand::SeedableRng;
                    let mut r = rand::rngs::StdRng::seed_from_u64(seed);
                    let a = c.upload(words).unwrap();
                    let b = c.upload(longs).unwrap();
                    let f = c.upload(affines).unwrap();
                    for round in 0..rounds {
                        let tuning = tunings[r.random_range(0..tunings.len())];
                        let with = |o: ScanOptions| match tuning {
                            Some(t) => o.with_tuning(t),
                            None => o,
                        };
                        let what = format!("{who} {c:?} round {round} {tuning:?}");
                        // Queue all, then read back.
                        let mut outs = Vec::new();
                        for _ in 0..3 {
                            let mut o = c.upload(&vec![u32::poison(); n]).unwrap();
                            c.scan(&a, &mut o, &Op::plus(), with(ScanOptions::inclusive()))
                                .unwrap();
                            outs.push(o);
                        }
                        let mut o64 = c.upload(&vec![u64::poison(); longs.len()]).unwrap();
                        c.scan(&b, &mut o64, &Op::plus(), with(ScanOptions::exclusive()))
                            .unwrap();
                        let mut of = c.upload(&vec![Affine::poison(); affines.len()]).unwrap();
                        c.scan(&f, &mut of, &affine_op(), with(ScanOptions::inclusive()))
                            .unwrap();
                        for (i, o) in outs.iter().enumerate() {
                            same(&o.to_vec().unwrap(), inc)
                                .unwrap_or_else(|e| panic!("{what} u32 scan {i}: {e}"));
                        }
                        same(&o64.to_vec().unwrap(), exc64)
                            .unwrap_or_else(|e| panic!("{what} u64 scan: {e}"));
                        same(&of.to_vec().unwrap(), composed)
                            .unwrap_or_else(|e| panic!("{what} affine scan: {e}"));
                    }
                });
            }
        });
    }
}

/// The same, without host threads: scans queued alternately on two streams from one thread (the
/// streams really overlap, nothing waits in between), sizes growing and shrinking.
#[test]
fn lookback_scans_interleaved_on_two_streams() {
    let mut r = rng();
    for ctx in backends() {
        let side = ctx.fork().unwrap();
        let rounds = reps(&ctx, 12, 2);
        for round in 0..rounds {
            let mut queued = Vec::new();
            for (i, c) in [&ctx, &side, &ctx, &side].into_iter().enumerate() {
                let n = r.random_range(2..2000)
                    * r.random_range(1..if ctx.is_gpu() { 2000 } else { 60 });
                let data = random_vec::<u32>(&mut r, n);
                let input = c.upload(&data).unwrap();
                let mut out = c.upload(&vec![u32::poison(); n]).unwrap();
                let options = if i % 2 == 0 {
                    ScanOptions::exclusive()
                } else {
                    ScanOptions::inclusive().with_tuning(Tuning::new(32, 3, 16))
                };
                c.scan(&input, &mut out, &Op::plus(), options).unwrap();
                queued.push((data, out, options.kind, i));
            }
            for (data, out, kind, i) in queued {
                let expect = serial_scan(&data, &Op::plus(), kind).0;
                same(&out.to_vec().unwrap(), &expect).unwrap_or_else(|e| {
                    panic!("{ctx:?} round {round} scan {i} n={}: {e}", data.len())
                });
            }
        }
    }
}

/// Deterministic (reduce-then-scan) and look-back scans of floats on two streams at once agree
/// with each other and with the host (small integer values: exact in any order).
#[test]
fn both_scan_algorithms_on_two_streams() {
    let mut r = rng();
    for ctx in backends() {
        let side = ctx.fork().unwrap();
        let n = if ctx.is_gpu() {
            (1 << 21) + 9
        } else {
            (1 << 16) + 9
        };
        let data = random_vec::<f32>(&mut r, n);
        let expect = serial_scan(&data, &Op::plus(), ScanKind::Inclusive).0;
        let a = ctx.upload(&data).unwrap();
        for round in 0..reps(&ctx, 8, 1) {
            let mut x = ctx.upload(&vec![f32::poison(); n]).unwrap();
            let mut y = side.upload(&vec![f32::poison(); n]).unwrap();
            ctx.scan(&a, &mut x, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            side.scan(
                &a,
                &mut y,
                &Op::plus(),
                ScanOptions {
                    kind: ScanKind::Inclusive,
                    algorithm: ScanAlgorithm::ReduceThenScan,
                    tuning: None,
                },
            )
            .unwrap();
            same(&x.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("round {round}: {e}"));
            same(&y.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("round {round}: {e}"));
        }
    }
}

/// A context on the stream of a forked context shares that stream: its work and the fork's are
/// ordered with no events; buffers pass between them. GPU only.
#[test]
fn on_cuda_stream_of_a_forked_context() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    let other = ctx.fork().unwrap();
    let stream = other.cuda_stream().unwrap().clone();
    let same_stream = ctx.on_cuda_stream(stream.clone()).unwrap();
    assert!(same_stream.is_gpu());
    assert_eq!(
        same_stream.cuda_stream().unwrap().cu_stream(),
        other.cuda_stream().unwrap().cu_stream()
    );
    let adopted = Context::from_cuda_stream(stream).unwrap();
    assert_eq!(
        adopted.cuda_stream().unwrap().cu_stream(),
        other.cuda_stream().unwrap().cu_stream()
    );
    let n = (1 << 22) + 3;
    let data = random_vec::<u32>(&mut r, n);
    let (expect, total) = serial_scan(&data, &Op::plus(), ScanKind::Inclusive);
    for round in 0..10 {
        // Uploaded by `other`, scanned by the context on its stream, scanned again by `adopted`,
        // reduced by the main context, read back by `other`.
        let mut b = other.upload(&data).unwrap();
        same_stream
            .scan_in_place(&mut b, &Op::plus(), ScanOptions::inclusive())
            .unwrap();
        let mut c = adopted.zeros::<u32>(n).unwrap();
        adopted.copy(&b, &mut c).unwrap();
        assert_eq!(
            ctx.reduce(&c.slice(n - 1..), &Op::maximum()).unwrap(),
            total,
            "round {round}"
        );
        same(&b.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("round {round}: {e}"));
        same(&c.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("round {round}: {e}"));
        // Look-back scans from the two contexts on the one stream, queued back to back.
        let mut x = other.upload(&vec![u32::poison(); n]).unwrap();
        let mut y = same_stream.upload(&vec![u32::poison(); n]).unwrap();
        let input = other.upload(&data).unwrap();
        other
            .scan(&input, &mut x, &Op::plus(), ScanOptions::inclusive())
            .unwrap();
        same_stream
            .scan(&input, &mut y, &Op::plus(), ScanOptions::inclusive())
            .unwrap();
        same(&x.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("round {round} x: {e}"));
        same(&y.to_vec().unwrap(), &expect).unwrap_or_else(|e| panic!("round {round} y: {e}"));
    }
}

/// On the CPU backend: fork gives a working CPU context, events are complete at once, there is no
/// CUDA stream, and on_cuda_stream is an error (tested with a real stream when a GPU is present).
#[test]
fn streams_on_the_cpu_backend() {
    let cpu = Context::cpu();
    let side = cpu.fork().unwrap();
    assert!(!side.is_gpu());
    assert!(cpu.cuda_stream().is_none() && side.cuda_stream().is_none());
    let data: Vec<i32> = (1..=1000).collect();
    let b = side.upload(&data).unwrap();
    assert_eq!(cpu.reduce(&b, &Op::plus()).unwrap(), 500_500);
    let event = side.record_event().unwrap();
    event.synchronize().unwrap();
    cpu.wait_for(&event).unwrap();
    cpu.join(&side).unwrap();
    side.join(&cpu).unwrap();
    cpu.synchronize().unwrap();
    assert!(format!("{event:?}").contains("cpu"));
    if let Some(g) = gpu() {
        let stream = g.cuda_stream().unwrap().clone();
        match cpu.on_cuda_stream(stream) {
            Err(e @ Error::BackendMismatch { .. }) => assert!(e.to_string().contains("CPU"), "{e}"),
            other => panic!("on_cuda_stream on the CPU: {other:?}"),
        }
        // Events of one backend waited for on the other: no effect, no error.
        g.wait_for(&cpu.record_event().unwrap()).unwrap();
        cpu.wait_for(&g.record_event().unwrap()).unwrap();
        // A buffer of the GPU is refused by the CPU's fork, and the other way round.
        let gb = g.upload(&data).unwrap();
        assert!(matches!(
            side.reduce(&gb, &Op::plus()),
            Err(Error::BackendMismatch { .. })
        ));
        assert!(matches!(
            g.fork().unwrap().reduce(&b, &Op::plus()),
            Err(Error::BackendMismatch { .. })
        ));
    }
}
