//! `mgpu bench dist`: the distributed sort (keys, and pairs with u32 values), scan and reduce of
//! `mgpu::dist`, against the single-context primitive on the whole input, for each rank count of
//! `--ranks`: strong scaling (2^S items in all) and weak scaling (2^S per rank).
//!
//! Ranks are streams of GPU 0 (`--placement one-gpu`: what the algorithm itself costs, with no
//! real exchange to hide it), the GPUs of this host through NCCL (`gpus`), or this process's one
//! rank of a torchrun launch (`env`). Times are wall clock from a barrier to the last rank's end
//! (every rank synchronized), median of the repetitions; the single-context call is timed the
//! same way on rank 0's device. The sort's time is split into its phases
//! ([`mgpu::dist::SortTimes`], the slowest rank's), and its exchange set against the
//! communicator's all-to-all of the same bytes alone, measured in the same run (the ceiling);
//! scan and reduce against one collective round of a single value (their floor).

use super::harness::{random, random_keys, Args, BenchElement, Placement, Scaling};
use crate::output::{self, Record};
use mgpu::dist::{Group, Rank, SortTimes};
use mgpu::{Buffer, Comparator, Context, Op, ScanOptions, SortAlgorithm};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A rank's buffers, handed from the untimed preparation to the timed call.
type Slot<T> = Mutex<Option<T>>;

/// A rank's keys and values to sort.
type SortInput<T> = (Buffer<T>, Option<Buffer<u32>>);

/// The measured operations, in the order they run.
const OPS: &[&str] = &["sort-keys", "sort-pairs", "scan", "reduce"];

/// The group of `ranks` ranks of `placement` (torchrun's world size for `env`).
fn group(ctx: &Context, placement: Placement, ranks: usize) -> mgpu::Result<Group> {
    match placement {
        Placement::OneGpu => Group::on_one_device(ctx, ranks),
        Placement::Gpus => Group::gpus(&(0..ranks).collect::<Vec<_>>()),
        Placement::Env => Group::from_env(),
    }
}

/// Runs every type, size, rank count and scaling; prints the table and returns the records.
pub(crate) fn run(
    ctx: &Context,
    a: &Args,
    ranks: &[usize],
    placement: Placement,
) -> Result<Vec<Record>, String> {
    let err = |e: mgpu::Error| e.to_string();
    let groups: Vec<Group> = match placement {
        Placement::Env => vec![group(ctx, placement, 0).map_err(err)?],
        _ => ranks
            .iter()
            .map(|&r| group(ctx, placement, r))
            .collect::<mgpu::Result<_>>()
            .map_err(err)?,
    };
    output::line(format!(
        "# ranks: {placement:?}; ratio: the single-context call's time over the distributed one \
         (> 1: faster); phases of the sort: the slowest rank's; a2a: the communicator's \
         all-to-all of the same bytes alone; exch of scan and reduce: one collective round"
    ));
    output::line(format!(
        "{:<11} {:>4} {:>5} {:>6} {:>5} {:>10} {:>10} {:>6} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "op", "type", "ranks", "scale", "log2", "dist ms", "single ms", "ratio", "Gitems/s",
        "local", "split", "exch", "merge", "sent MB", "a2a GB/s"
    ));
    let mut records = Vec::new();
    for ty in &a.types {
        let r = match ty.as_str() {
            "i32" => bench_type::<i32>(a, ty, &groups),
            "i64" => bench_type::<i64>(a, ty, &groups),
            "u32" => bench_type::<u32>(a, ty, &groups),
            "u64" => bench_type::<u64>(a, ty, &groups),
            "f32" => bench_type::<f32>(a, ty, &groups),
            "f64" => bench_type::<f64>(a, ty, &groups),
            other => Err(format!(
                "bench dist: unsupported type `{other}` (i32, i64, u32, u64, f32, f64)"
            )),
        }?;
        records.extend(r);
    }
    Ok(records)
}

/// One measurement's times: the distributed call, the single-context one, and the split.
struct Measured {
    ms: f64,
    single_ms: f64,
    phases: Option<SortTimes>,
    sent_bytes: u64,
    ceiling_gbps: Option<f64>,
    /// One collective round of a single value (scan and reduce make one or two).
    round_ms: Option<f64>,
}

fn bench_type<T: BenchElement>(
    a: &Args,
    ty: &str,
    groups: &[Group],
) -> Result<Vec<Record>, String> {
    let mut records = Vec::new();
    for log2 in a.sizes.clone() {
        for group in groups {
            let world = group.world_size();
            // One rank: weak is strong.
            let scalings: &[&str] = match (a.scaling, world) {
                (Scaling::Weak, 1) | (Scaling::Strong, _) | (Scaling::Both, 1) => &["strong"],
                (Scaling::Weak, _) => &["weak"],
                (Scaling::Both, _) => &["strong", "weak"],
            };
            for &scaling in scalings {
                let n = if scaling == "weak" {
                    world << log2
                } else {
                    1usize << log2
                };
                for &op in OPS {
                    output::working_on(format!("dist {op} {ty} 2^{log2} {world} ranks {scaling}"));
                    let m = measure::<T>(a, group, op, n).map_err(|e| e.to_string())?;
                    records.push(report(op, ty, world, scaling, n, &m));
                }
            }
            output::tick("");
        }
    }
    Ok(records)
}

/// Prints the row and makes its record.
fn report(op: &str, ty: &str, world: usize, scaling: &str, n: usize, m: &Measured) -> Record {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let phase = |f: fn(&SortTimes) -> Duration| m.phases.as_ref().map(|p| ms(f(p)));
    let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
    let log2 = n.ilog2();
    output::line(format!(
        "{:<11} {:>4} {:>5} {:>6} {:>5} {:>10.4} {:>10.4} {:>6.3} {:>9.2} {:>8} {:>8} {:>8} {:>8} {:>9.1} {:>9}",
        op,
        ty,
        world,
        scaling,
        log2,
        m.ms,
        m.single_ms,
        m.single_ms / m.ms,
        n as f64 / m.ms / 1e6,
        cell(phase(|p| p.local)),
        cell(phase(|p| p.splitters)),
        cell(phase(|p| p.exchange).or(m.round_ms)),
        cell(phase(|p| p.merge)),
        m.sent_bytes as f64 / 1e6,
        m.ceiling_gbps.map_or("-".into(), |g| format!("{g:.1}")),
    ));
    Record {
        primitive: crate::primitives::DIST.into(),
        variant: format!("{op}/{world}r/{scaling}"),
        ty: ty.into(),
        log2,
        items: n as f64,
        ms: m.ms,
        bytes: 0.0,
        memcpy_ms: f64::NAN,
        peers: vec![("single".into(), Some(m.single_ms))],
        extra: vec![
            ("ranks", Some(world as f64)),
            ("local_ms", phase(|p| p.local)),
            ("splitters_ms", phase(|p| p.splitters)),
            ("exchange_ms", phase(|p| p.exchange)),
            ("merge_ms", phase(|p| p.merge)),
            ("sent_bytes", Some(m.sent_bytes as f64)),
            ("all_to_all_gbps", m.ceiling_gbps),
            ("round_ms", m.round_ms),
        ],
        tuning: String::new(),
    }
}

/// Median of `reps` runs (after one warm-up) of `work` on every rank of the group, each timed
/// from a barrier to the rank's end, the slowest rank's time counting; `work` returns what it
/// reports besides.
fn timed<R: Send>(
    group: &Group,
    reps: usize,
    prepare: impl Fn(&Rank) -> mgpu::Result<()> + Sync,
    work: impl Fn(&Rank) -> mgpu::Result<R> + Sync,
) -> mgpu::Result<(f64, Vec<R>)> {
    let mut times = Vec::new();
    let mut last = Vec::new();
    for rep in 0..=reps {
        let results = group.run(|rank| {
            prepare(rank)?;
            rank.context().synchronize()?;
            rank.communicator().barrier()?;
            let start = Instant::now();
            let out = work(rank)?;
            rank.context().synchronize()?;
            let secs = start.elapsed().as_secs_f64();
            let all = rank
                .communicator()
                .all_gather_checked("bench", Ok(vec![secs]))?;
            Ok((all.iter().map(|s| s[0]).fold(0.0, f64::max), out))
        })?;
        if rep > 0 {
            times.push(results[0].0 * 1e3);
        }
        last = results.into_iter().map(|r| r.1).collect();
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], last))
}

/// The single-context call on rank 0's context, timed as [`timed`] does; both closures get
/// the buffers `state`.
fn timed_single<S>(
    ctx: &Context,
    reps: usize,
    state: &mut S,
    mut prepare: impl FnMut(&mut S) -> mgpu::Result<()>,
    mut work: impl FnMut(&mut S) -> mgpu::Result<()>,
) -> mgpu::Result<f64> {
    let mut times = Vec::new();
    for rep in 0..=reps {
        prepare(state)?;
        ctx.synchronize()?;
        let start = Instant::now();
        work(state)?;
        ctx.synchronize()?;
        if rep > 0 {
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// One operation on `n` items in all, evenly sharded.
fn measure<T: BenchElement>(a: &Args, group: &Group, op: &str, n: usize) -> mgpu::Result<Measured> {
    use mgpu::dist::Sharded;
    let sorting = op.starts_with("sort");
    let pairs = op == "sort-pairs";
    let data: Vec<T> = if sorting { random_keys(n) } else { random(n) };
    let master = Sharded::scatter(group, &data)?;
    let positions: Vec<u32> = (0..n as u32).collect();
    let values = if pairs {
        Some(Sharded::scatter(group, &positions)?)
    } else {
        None
    };
    let reps = a.reps;
    let less = Comparator::<T>::less();
    let plus = Op::<T>::plus();
    let world = group.world_size();
    let fresh = |rank: &Rank| -> mgpu::Result<Buffer<T>> {
        let shard = master.shard(rank.rank()).expect("this process's rank");
        let mut b = rank.context().zeros::<T>(shard.len())?;
        rank.context().copy(shard, &mut b)?;
        Ok(b)
    };
    let fresh_values = |rank: &Rank| -> mgpu::Result<Option<Buffer<u32>>> {
        let Some(v) = &values else { return Ok(None) };
        let shard = v.shard(rank.rank()).expect("this process's rank");
        let mut b = rank.context().zeros::<u32>(shard.len())?;
        rank.context().copy(shard, &mut b)?;
        Ok(Some(b))
    };
    // Rank 0's context (this process's first rank's, under torchrun).
    let home = group.ranks()[0].context();
    let whole = home.upload(&data)?;
    let mut work = (
        home.zeros::<T>(n)?,
        home.zeros::<u32>(if pairs { n } else { 0 })?,
        home.zeros::<T>(if op == "scan" { n } else { 0 })?,
    );
    let whole_values = home.upload(if pairs { &positions[..] } else { &[] })?;
    let copy_in = |w: &mut (Buffer<T>, Buffer<u32>, Buffer<T>)| {
        home.copy(&whole, &mut w.0)?;
        home.copy(&whole_values, &mut w.1)
    };
    let single_ms = match op {
        "sort-keys" => timed_single(home, reps, &mut work, copy_in, |w| {
            home.sort(&mut w.0, &less)
        })?,
        "sort-pairs" => timed_single(home, reps, &mut work, copy_in, |w| {
            home.sort_pairs(&mut w.0, &mut w.1, &less)
        })?,
        "scan" => timed_single(
            home,
            reps,
            &mut work,
            |_| Ok(()),
            |w| home.scan(&whole, &mut w.2, &plus, ScanOptions::exclusive()),
        )?,
        _ => timed_single(
            home,
            reps,
            &mut work,
            |_| Ok(()),
            |_| home.reduce(&whole, &plus).map(|_| ()),
        )?,
    };
    drop((whole, work, whole_values));
    let mut m = Measured {
        ms: 0.0,
        single_ms,
        phases: None,
        sent_bytes: 0,
        ceiling_gbps: None,
        round_ms: None,
    };
    if sorting {
        let slots: Vec<Slot<SortInput<T>>> = (0..world).map(|_| Slot::new(None)).collect();
        let prepare = |rank: &Rank| {
            let inputs = (fresh(rank)?, fresh_values(rank)?);
            *slots[rank.rank()].lock().unwrap() = Some(inputs);
            Ok(())
        };
        let take = |rank: &Rank| slots[rank.rank()].lock().unwrap().take().expect("prepared");
        let (ms, _) = timed(group, reps, prepare, |rank| {
            let (k, v) = take(rank);
            match v {
                Some(v) => rank
                    .sort_pairs(k, v, &less, SortAlgorithm::Auto)
                    .map(|_| ()),
                None => rank.sort(k, &less, SortAlgorithm::Auto).map(|_| ()),
            }
        })?;
        m.ms = ms;
        let (_, phases) = timed(group, reps.min(5), prepare, |rank| {
            let (k, v) = take(rank);
            let (_, _, t) = rank.sort_timed(k, v, &less, SortAlgorithm::Auto)?;
            let all = rank.communicator().all_gather_checked(
                "bench",
                Ok(vec![
                    t.local.as_secs_f64(),
                    t.splitters.as_secs_f64(),
                    t.exchange.as_secs_f64(),
                    t.merge.as_secs_f64(),
                    t.sent_bytes as f64,
                ]),
            )?;
            Ok(all)
        })?;
        // The slowest rank's phases; the bytes of all of them.
        let all = &phases[0];
        let max = |i: usize| Duration::from_secs_f64(all.iter().map(|p| p[i]).fold(0.0, f64::max));
        m.sent_bytes = all.iter().map(|p| p[4] as u64).sum();
        m.phases = Some(SortTimes {
            local: max(0),
            splitters: max(1),
            exchange: max(2),
            merge: max(3),
            sent_bytes: m.sent_bytes,
        });
        m.ceiling_gbps = ceiling::<T>(group, reps, n, pairs)?;
    } else if op == "scan" {
        let outs: Vec<Slot<Buffer<T>>> = (0..world).map(|_| Slot::new(None)).collect();
        for rank in group.ranks() {
            let len = master.shard(rank.rank()).expect("own rank").len();
            *outs[rank.rank()].lock().unwrap() = Some(rank.context().zeros::<T>(len)?);
        }
        let (ms, _) = timed(
            group,
            reps,
            |_| Ok(()),
            |rank| {
                let mut out = outs[rank.rank()].lock().unwrap();
                let input = master.shard(rank.rank()).expect("own rank");
                let out = out.as_mut().expect("made above");
                rank.scan(input, out, &plus, ScanOptions::exclusive())
                    .map(|_| ())
            },
        )?;
        m.ms = ms;
        m.round_ms = round(group, reps)?;
    } else {
        let (ms, _) = timed(
            group,
            reps,
            |_| Ok(()),
            |rank| {
                let input = master.shard(rank.rank()).expect("own rank");
                rank.reduce(input, &plus).map(|_| ())
            },
        )?;
        m.ms = ms;
        m.round_ms = round(group, reps)?;
    }
    Ok(m)
}

/// One collective round (an all-gather of one value), milliseconds; `None` for one rank.
fn round(group: &Group, reps: usize) -> mgpu::Result<Option<f64>> {
    if group.world_size() == 1 {
        return Ok(None);
    }
    let (ms, _) = timed(
        group,
        reps,
        |_| Ok(()),
        |rank| {
            rank.communicator()
                .all_gather_checked("round", Ok(vec![1u64]))
                .map(|_| ())
        },
    )?;
    Ok(Some(ms))
}

/// The communicator's all-to-all of the sort's bytes alone (each rank's shard split evenly over
/// the ranks), in GB/s of the bytes that leave their rank; `None` for one rank.
fn ceiling<T: BenchElement>(
    group: &Group,
    reps: usize,
    n: usize,
    pairs: bool,
) -> mgpu::Result<Option<f64>> {
    let world = group.world_size();
    if world == 1 {
        return Ok(None);
    }
    // Keys and values move as one buffer of bytes here.
    let elem = std::mem::size_of::<T>() + if pairs { 4 } else { 0 };
    let per_rank = n / world * elem;
    let counts: Vec<usize> = (0..world)
        .map(|q| per_rank / world + usize::from(q < per_rank % world))
        .collect();
    let slots: Vec<Slot<Buffer<u8>>> = (0..world).map(|_| Slot::new(None)).collect();
    let (ms, _) = timed(
        group,
        reps,
        |rank| {
            *slots[rank.rank()].lock().unwrap() = Some(rank.context().zeros::<u8>(per_rank)?);
            Ok(())
        },
        |rank| {
            let send = slots[rank.rank()].lock().unwrap().take().expect("prepared");
            rank.communicator()
                .all_to_all_v(rank.context(), send, &counts)
                .map(|_| ())
        },
    )?;
    // Every rank keeps its own part (counts[rank]) and sends the rest.
    let leaving = (world * per_rank - counts.iter().sum::<usize>()) as f64;
    Ok(Some(leaving / (ms * 1e-3) / 1e9))
}
