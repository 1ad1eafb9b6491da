//! The distributed layer against the single-context primitives on the concatenated data: groups
//! of 1, 2, 3 and 8 CPU ranks, and several ranks on one GPU (when there is one); even, uneven,
//! empty and one-rank-holds-everything shards; all-equal, sorted and reverse-sorted keys;
//! non-commutative operators; a failing rank fails every rank, and a missing one times out.

mod common;
use common::*;
use mgpu::dist::{Group, Sharded};
use mgpu::{Comparator, Context, Error, Op, Predicate, ScanOptions, SortAlgorithm};
use rand::rngs::StdRng;
use rand::Rng;
use std::time::{Duration, Instant};

/// Shard lengths adding up to `n`: even, random (with empty shards), all on one rank.
fn layouts(r: &mut StdRng, world: usize, n: usize) -> Vec<Vec<usize>> {
    let even: Vec<usize> = (0..world)
        .map(|q| n / world + usize::from(q < n % world))
        .collect();
    let mut cuts: Vec<usize> = (0..world - 1).map(|_| r.random_range(0..=n)).collect();
    cuts.sort();
    let mut random = Vec::new();
    let mut at = 0;
    for c in cuts.into_iter().chain([n]) {
        random.push(c - at);
        at = c;
    }
    let mut one = vec![0; world];
    one[r.random_range(0..world)] = n;
    vec![even, random, one]
}

fn sizes_for(world: usize) -> Vec<usize> {
    vec![0, 1, world + 1, 1000, 20_011]
}

fn check_reduce_scan_select(group: &Group, r: &mut StdRng) {
    let world = group.world_size();
    let op = affine_op(); // not commutative
    let odd = Predicate::new("odd_b", |x: &Affine| x.b % 2 == 1, "x.b % 2 == 1");
    for n in sizes_for(world) {
        let data = random_vec::<Affine>(r, n);
        for lengths in layouts(r, world, n) {
            let what = format!("world {world} n {n} shards {lengths:?}");
            let sharded = Sharded::scatter_by(group, &data, &lengths).unwrap();
            assert_eq!(sharded.gather(group).unwrap(), data, "{what}");
            // Reduce, in rank order.
            assert_eq!(
                group.reduce(&sharded, &op).unwrap(),
                fold(&data, &op),
                "{what}"
            );
            // Reduce to one rank.
            let root = world - 1;
            let at_root = group
                .run(|rank| rank.reduce_to(sharded.shard(rank.rank()).unwrap(), &op, root))
                .unwrap();
            for (q, v) in at_root.iter().enumerate() {
                assert_eq!(
                    *v,
                    (q == root).then(|| fold(&data, &op)),
                    "{what} reduce_to"
                );
            }
            // Scan, both kinds, out of place and in place.
            for options in [ScanOptions::exclusive(), ScanOptions::inclusive()] {
                let (expect, total) = serial_scan(&data, &op, options.kind);
                let mut out =
                    Sharded::scatter_by(group, &vec![Affine::poison(); n], &lengths).unwrap();
                assert_eq!(
                    group.scan(&sharded, &mut out, &op, options).unwrap(),
                    total,
                    "{what}"
                );
                same(&out.gather(group).unwrap(), &expect)
                    .unwrap_or_else(|e| panic!("{what} {options:?}: {e}"));
                let mut inplace = Sharded::scatter_by(group, &data, &lengths).unwrap();
                group.scan_in_place(&mut inplace, &op, options).unwrap();
                same(&inplace.gather(group).unwrap(), &expect)
                    .unwrap_or_else(|e| panic!("{what} in place: {e}"));
            }
            // Select: the kept items, in order, where their ranks had them.
            let kept = group.select_if(&sharded, &odd).unwrap();
            let expect: Vec<Affine> = data.iter().copied().filter(|x| x.b % 2 == 1).collect();
            same(&kept.gather(group).unwrap(), &expect)
                .unwrap_or_else(|e| panic!("{what} select: {e}"));
            for q in 0..world {
                let part = &data[sharded.offsets()[q] as usize..sharded.offsets()[q + 1] as usize];
                let here = part.iter().filter(|x| x.b % 2 == 1).count() as u64;
                assert_eq!(kept.shard_lengths()[q], here, "{what} select shard {q}");
            }
        }
    }
}

/// Keys of several distributions (random, few distinct, all equal, sorted, reverse-sorted).
fn key_sets(r: &mut StdRng, n: usize) -> Vec<(&'static str, Vec<i32>)> {
    let random: Vec<i32> = (0..n).map(|_| r.random()).collect();
    let few: Vec<i32> = (0..n).map(|_| r.random_range(0..4)).collect();
    let mut sorted = random.clone();
    sorted.sort();
    let reverse: Vec<i32> = sorted.iter().rev().copied().collect();
    vec![
        ("random", random),
        ("few distinct", few),
        ("all equal", vec![7; n]),
        ("sorted", sorted),
        ("reverse", reverse),
    ]
}

/// The result's shards are about even: none past the even size by more than the sample's
/// resolution.
fn check_balance(lengths: &[u64], n: usize, what: &str) {
    let world = lengths.len();
    let even = n.div_ceil(world) as f64;
    let slack = (n as f64 / world as f64) * 0.2 + 8.0;
    for &l in lengths {
        assert!(
            (l as f64) <= even + slack,
            "{what}: shard of {l}, even is {even}: {lengths:?}"
        );
    }
}

fn check_sort(group: &Group, r: &mut StdRng) {
    let world = group.world_size();
    for n in sizes_for(world) {
        for (name, keys) in key_sets(r, n) {
            for lengths in layouts(r, world, n) {
                let what = format!("world {world} n {n} {name} shards {lengths:?}");
                // Pairs whose values are the global positions: checks stability exactly.
                let positions: Vec<u32> = (0..n as u32).collect();
                let k = Sharded::scatter_by(group, &keys, &lengths).unwrap();
                let v = Sharded::scatter_by(group, &positions, &lengths).unwrap();
                let less = Comparator::less();
                let (sk, sv) = group.sort_pairs(k, v, &less, SortAlgorithm::Auto).unwrap();
                let (expect_keys, expect_from) = stable_sorted(&keys, &less);
                assert_eq!(sk.gather(group).unwrap(), expect_keys, "{what}");
                assert_eq!(sv.gather(group).unwrap(), expect_from, "{what}");
                assert_eq!(sk.shard_lengths(), sv.shard_lengths());
                check_balance(sk.shard_lengths(), n, &what);
                // Keys alone, descending, by the radix sort locally.
                let k = Sharded::scatter_by(group, &keys, &lengths).unwrap();
                let greater = Comparator::greater();
                let sorted = group.sort_with(k, &greater, SortAlgorithm::Radix).unwrap();
                assert_eq!(
                    sorted.gather(group).unwrap(),
                    stable_sorted(&keys, &greater).0,
                    "{what} radix"
                );
            }
        }
    }
    // A user type under a custom comparator, its other field telling equal keys apart.
    let data: Vec<Affine> = (0..3000)
        .map(|i| Affine {
            a: r.random_range(0..50),
            b: i,
        })
        .collect();
    let keys = Sharded::scatter(group, &data).unwrap();
    let sorted = group.sort(keys, &affine_key_less()).unwrap();
    assert_eq!(
        sorted.gather(group).unwrap(),
        stable_sorted(&data, &affine_key_less()).0
    );
}

#[test]
fn reduce_scan_select_on_cpu_ranks() {
    let mut r = rng();
    for world in [1, 2, 3, 8] {
        check_reduce_scan_select(&Group::cpu(world), &mut r);
    }
}

#[test]
fn sort_on_cpu_ranks() {
    let mut r = rng();
    for world in [1, 2, 3, 8] {
        check_sort(&Group::cpu(world), &mut r);
    }
}

/// Several ranks on streams of one GPU.
#[test]
fn ranks_on_one_gpu() {
    let Some(gpu) = gpu() else { return };
    let mut r = rng();
    for world in [1, 2, 3] {
        let group = Group::on_one_device(&gpu, world).unwrap();
        check_reduce_scan_select(&group, &mut r);
        check_sort(&group, &mut r);
    }
}

/// More than 2^31 items in total over two uneven ranks on one GPU: reduce, scan and sort give
/// the single-context results (64-bit offsets and counts through the exchange).
#[test]
fn past_2_pow_31_on_one_gpu() {
    let Some(gpu) = gpu() else { return };
    let n = (1usize << 31) + 1000;
    // The data, the scan's output, and the sort's keys, ping-pong, exchange and merge buffers.
    if !has_memory(&gpu, 6 * n as u64, "dist past 2^31") {
        return;
    }
    let data: Vec<u8> = (0..n)
        .map(|i| ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
        .collect();
    let group = Group::on_one_device(&gpu, 2).unwrap();
    let lengths = [n / 3 * 2, n - n / 3 * 2];
    let sharded = Sharded::scatter_by(&group, &data, &lengths).unwrap();
    let mut counts = [0u64; 256];
    for &x in &data {
        counts[x as usize] += 1;
    }
    let sum = counts
        .iter()
        .enumerate()
        .fold(0u8, |a, (x, &c)| a.wrapping_add((x as u64 * c) as u8));
    assert_eq!(group.reduce(&sharded, &Op::plus()).unwrap(), sum);

    let mut scanned = Sharded::scatter_by(&group, &data, &lengths).unwrap();
    let total = group
        .scan_in_place(&mut scanned, &Op::plus(), ScanOptions::inclusive())
        .unwrap();
    assert_eq!(total, sum);
    let scanned = scanned.gather(&group).unwrap();
    let mut running = 0u8;
    for (i, (&x, &y)) in data.iter().zip(&scanned).enumerate() {
        running = running.wrapping_add(x);
        assert_eq!(y, running, "inclusive scan at {i}");
    }
    drop(scanned);

    let sorted = group.sort(sharded, &Comparator::less()).unwrap();
    check_balance(sorted.shard_lengths(), n, "sort past 2^31");
    let sorted = sorted.gather(&group).unwrap();
    let mut at = 0;
    for (x, &c) in counts.iter().enumerate() {
        let run = &sorted[at..at + c as usize];
        assert!(
            run.iter().all(|&y| y as usize == x),
            "the run of {x}s at {at}"
        );
        at += c as usize;
    }
}

/// NCCL with one rank on the GPU (where NCCL is found; required with MGPU_REQUIRE_NCCL=1).
#[test]
fn nccl_one_rank() {
    let Some(gpu) = gpu() else { return };
    if !mgpu::cuda::nccl::available() {
        let why = mgpu::cuda::discover::nccl().to_string();
        assert!(
            std::env::var("MGPU_REQUIRE_NCCL").as_deref() != Ok("1"),
            "no NCCL: {why}"
        );
        eprintln!("skipped: no NCCL ({why})");
        return;
    }
    let group = Group::nccl(vec![gpu]).unwrap();
    assert!(group.ranks()[0].communicator().is_nccl());
    let mut r = rng();
    check_reduce_scan_select(&group, &mut r);
    check_sort(&group, &mut r);
    // The all-reduce path: a built-in integer sum.
    let data: Vec<i64> = (0..5000).map(|_| r.random_range(-1000..1000)).collect();
    let sharded = Sharded::scatter(&group, &data).unwrap();
    assert_eq!(
        group.reduce(&sharded, &Op::plus()).unwrap(),
        data.iter().sum::<i64>()
    );
}

/// Every GPU of the host, one rank each through NCCL (`Group::gpus`), where there are several
/// (required with MGPU_REQUIRE_MULTI_GPU=1), and each GPU's ranks on its own streams alongside:
/// the same results as one context.
#[test]
fn every_gpu_through_nccl() {
    let gpus = mgpu::cuda::device_count();
    let required = std::env::var("MGPU_REQUIRE_MULTI_GPU").as_deref() == Ok("1");
    if gpus < 2 || !mgpu::cuda::nccl::available() {
        assert!(
            !required,
            "MGPU_REQUIRE_MULTI_GPU=1: {gpus} GPUs, NCCL {}",
            mgpu::cuda::discover::nccl()
        );
        eprintln!(
            "skipped: {gpus} GPUs (NCCL found: {})",
            mgpu::cuda::nccl::available()
        );
        return;
    }
    let mut r = rng();
    for world in 2..=gpus {
        let group = Group::gpus(&(0..world).collect::<Vec<_>>()).unwrap();
        assert!(group.ranks().iter().all(|q| q.communicator().is_nccl()));
        check_reduce_scan_select(&group, &mut r);
        check_sort(&group, &mut r);
    }
}

/// Buffers of two GPUs used from one thread, one after the other: each call works on its own
/// GPU's context whichever the thread used last (a torchrun rank's process that also opens
/// GPU 0, as the example does, failed its downloads with CUDA_ERROR_INVALID_VALUE).
#[test]
fn buffers_of_two_gpus_on_one_thread() {
    if mgpu::cuda::device_count() < 2 {
        let required = std::env::var("MGPU_REQUIRE_MULTI_GPU").as_deref() == Ok("1");
        assert!(!required, "MGPU_REQUIRE_MULTI_GPU=1: fewer than 2 GPUs");
        eprintln!("skipped: fewer than 2 GPUs");
        return;
    }
    let (a, b) = (
        Context::cuda_device(1).unwrap(),
        Context::cuda_device(0).unwrap(),
    );
    let data: Vec<u32> = (0..1000).map(|i| i * 7 % 113).collect();
    let mut on_a = a.upload(&data).unwrap();
    let mut on_b = b.upload(&data).unwrap();
    for _ in 0..2 {
        a.sort(&mut on_a, &Comparator::less()).unwrap();
        b.sort(&mut on_b, &Comparator::less()).unwrap();
        let mut copy = a.zeros::<u32>(data.len()).unwrap();
        a.copy(&on_a, &mut copy).unwrap();
        let (from_a, from_b) = (copy.to_vec().unwrap(), on_b.to_vec().unwrap());
        let mut want = data.clone();
        want.sort();
        assert_eq!((from_a, from_b), (want.clone(), want));
    }
}

/// Bad input on one rank: every rank's call returns an error (the bad rank its own, the others
/// RankFailed naming it), nothing hangs, and the group works afterwards.
#[test]
fn a_failing_rank_fails_every_rank() {
    for ctx in backends() {
        let group = Group::on_one_device(&ctx, 3).unwrap();
        let outcomes = group
            .run(|rank| {
                let c = rank.context();
                let input = c.upload(&[1, 2, 3, 4])?;
                // Rank 1's output is too short.
                let mut out = c.zeros::<i32>(if rank.rank() == 1 { 2 } else { 4 })?;
                let outcome = rank.scan(&input, &mut out, &Op::plus(), ScanOptions::inclusive());
                Ok((outcome, out.to_vec()?))
            })
            .unwrap();
        for (q, (outcome, out)) in outcomes.iter().enumerate() {
            assert!(out.iter().all(|&x| x == 0), "rank {q} wrote {out:?}");
            match outcome {
                Err(e @ Error::LengthMismatch { .. }) if q == 1 => assert!(e.is_invalid_input()),
                Err(Error::RankFailed {
                    rank: 1,
                    world: 3,
                    message,
                    ..
                }) if q != 1 => {
                    assert!(message.contains("output"), "{message}")
                }
                other => panic!("{ctx:?} rank {q}: {other:?}"),
            }
        }
        // All-to-all counts that do not add up on rank 2.
        let outcomes = group
            .run(|rank| {
                let c = rank.context();
                let send = c.upload(&[1u8, 2, 3])?;
                let counts = if rank.rank() == 2 {
                    [1, 1, 2]
                } else {
                    [1, 1, 1]
                };
                Ok(rank
                    .communicator()
                    .all_to_all_v(c, send, &counts)
                    .map(|_| ()))
            })
            .unwrap();
        assert!(
            matches!(outcomes[2], Err(Error::InvalidArgument(_))),
            "{:?}",
            outcomes[2]
        );
        assert!(
            matches!(outcomes[0], Err(Error::RankFailed { rank: 2, .. })),
            "{:?}",
            outcomes[0]
        );
        // A reduce whose input lives on the other backend on rank 1 (ranks sharing a GPU
        // reduce in turn: the rank after it must not wait for it).
        let elsewhere = if ctx.is_gpu() {
            Context::cpu()
        } else {
            ctx.clone()
        };
        let outcomes = group
            .run(|rank| {
                let c = if rank.rank() == 1 {
                    &elsewhere
                } else {
                    rank.context()
                };
                let input = c.upload(&[1i64, 2, 3])?;
                Ok(rank.reduce(&input, &Op::plus()))
            })
            .unwrap();
        if ctx.is_gpu() {
            assert!(
                matches!(outcomes[1], Err(Error::BackendMismatch { .. })),
                "{:?}",
                outcomes[1]
            );
            for q in [0, 2] {
                assert!(
                    matches!(outcomes[q], Err(Error::RankFailed { rank: 1, .. })),
                    "rank {q}: {:?}",
                    outcomes[q]
                );
            }
        } else {
            assert!(outcomes.iter().all(|o| matches!(o, Ok(18))), "{outcomes:?}");
        }
        // The sort of pairs whose values do not match the keys on rank 0.
        let keys = Sharded::scatter(&group, &[3, 1, 2, 5, 4, 0]).unwrap();
        let outcomes = group
            .run(|rank| {
                let c = rank.context();
                let keys = c.upload(&keys.shard(rank.rank()).unwrap().to_vec()?)?;
                let values = c.zeros::<u32>(keys.len() + usize::from(rank.rank() == 0))?;
                Ok(rank
                    .sort_pairs(keys, values, &Comparator::less(), SortAlgorithm::Auto)
                    .map(|_| ()))
            })
            .unwrap();
        assert!(outcomes.iter().all(|o| o.is_err()), "{outcomes:?}");
        // Still usable.
        assert_eq!(group.reduce(&keys, &Op::plus()).unwrap(), 15);
        let sorted = group.sort(keys, &Comparator::less()).unwrap();
        assert_eq!(sorted.gather(&group).unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }
}

/// A rank that returns early makes the others fail at once; one that is late past the timeout
/// makes them fail with a timeout. Neither hangs.
#[test]
fn a_missing_rank_does_not_hang() {
    let group = Group::cpu(3).with_timeout(Duration::from_millis(300));
    let start = Instant::now();
    let err = group
        .run(|rank| {
            if rank.rank() == 2 {
                return Err(Error::InvalidArgument("rank 2 gives up".into()));
            }
            rank.communicator().barrier()
        })
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
    let outcomes = group
        .run(|rank| {
            if rank.rank() == 0 {
                std::thread::sleep(Duration::from_millis(900));
            }
            Ok(rank.communicator().barrier())
        })
        .unwrap();
    assert!(
        outcomes
            .iter()
            .any(|o| matches!(o, Err(Error::Timeout { .. }))),
        "{outcomes:?}"
    );
    assert!(outcomes.iter().all(|o| o.is_err()), "{outcomes:?}");
    // A panicking rank fails the run, and the others' calls.
    let err = group
        .run(|rank| {
            if rank.rank() == 1 {
                panic!("rank 1 panics on purpose");
            }
            rank.communicator().barrier()
        })
        .unwrap_err();
    assert!(err.to_string().contains("panics on purpose"), "{err}");
    // And the group works again.
    group.run(|rank| rank.communicator().barrier()).unwrap();
}

/// Wrapping existing buffers, and what a Sharded checks.
#[test]
fn sharded_wraps_buffers_and_checks_its_group() {
    let group = Group::cpu(3);
    let shards = group
        .ranks()
        .iter()
        .map(|rank| {
            rank.context()
                .upload(&vec![rank.rank() as u16; rank.rank()])
        })
        .collect::<mgpu::Result<Vec<_>>>()
        .unwrap();
    let sharded = Sharded::from_shards(&group, shards).unwrap();
    assert_eq!(sharded.offsets(), &[0, 0, 1, 3]);
    assert_eq!(sharded.gather(&group).unwrap(), vec![1, 2, 2]);
    let other = Group::cpu(2);
    assert!(other
        .reduce(&sharded, &Op::plus())
        .unwrap_err()
        .is_invalid_input());
    assert!(Sharded::scatter_by(&group, &[1, 2], &[1, 1])
        .unwrap_err()
        .is_invalid_input());
    let wrong = vec![Context::cpu().upload(&[1u16]).unwrap()];
    assert!(Sharded::from_shards(&group, wrong).is_err());
}

/// Without RANK / WORLD_SIZE, the torchrun form says how to start.
#[test]
fn from_env_without_torchrun_says_what_to_do() {
    if std::env::var_os("RANK").is_some() || std::env::var_os("WORLD_SIZE").is_some() {
        return;
    }
    let err = Group::from_env().unwrap_err().to_string();
    assert!(err.contains("torchrun"), "{err}");
}
