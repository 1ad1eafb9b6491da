//! Sort, scan, reduce and filter data sharded over several ranks (`mgpu::dist`), checked
//! against the single-context primitives on the whole.
//!
//! The same program runs three ways:
//! - one process per GPU, started by torchrun (the NCCL unique id goes through a rendezvous
//!   file; `MGPU_RENDEZVOUS` names it when the ranks span hosts):
//!   `cargo build --release -p mgpu --example dist`, then
//!   `torchrun --no-python --nproc-per-node 2 target/release/examples/dist`;
//! - one process driving every GPU of the host through NCCL, when it has several:
//!   `cargo run --release -p mgpu --example dist`;
//! - otherwise two ranks on streams of the one GPU, or on the CPU (`MGPU_BACKEND=cpu`).
//!
//! `MGPU_EXAMPLE_LOG2` sets the total size (log2 of the items; 22 by default).

use mgpu::dist::{Group, Sharded};
use mgpu::{Comparator, Context, Op, Predicate, ScanOptions};
use std::time::Instant;

fn group() -> mgpu::Result<Group> {
    if std::env::var("WORLD_SIZE").is_ok() {
        return Group::from_env(); // torchrun: this process is one rank
    }
    let ctx = Context::new()?;
    let gpus = mgpu::cuda::device_count();
    if ctx.is_gpu() && gpus > 1 && mgpu::cuda::nccl::available() {
        return Group::gpus(&(0..gpus).collect::<Vec<_>>());
    }
    Group::on_one_device(&ctx, 2)
}

fn main() -> mgpu::Result<()> {
    let group = group()?;
    let me = group.ranks()[0].rank();
    let say = |s: String| {
        if me == 0 {
            println!("{s}");
        }
    };
    say(format!(
        "{} ranks; this process drives {} of them, on {}",
        group.world_size(),
        group.ranks().len(),
        group.ranks()[0].context().description()
    ));

    // Every process makes the same data and keeps its ranks' shards of it.
    let log2: u32 = std::env::var("MGPU_EXAMPLE_LOG2")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(22);
    let n = 1usize << log2;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<u32> = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as u32
        })
        .collect();
    let keys = Sharded::scatter(&group, &data)?;

    // Reduce and scan: what one context gives on the concatenation, combined in rank order.
    let sum = group.reduce(&keys, &Op::<u32>::plus())?;
    let mut prefix = Sharded::scatter(&group, &vec![0u32; n])?;
    group.scan(&keys, &mut prefix, &Op::plus(), ScanOptions::exclusive())?;

    // A distributed filter: each rank keeps what passes, the offsets from a scan of the counts.
    let small = Predicate::new("below_2^20", |v: &u32| *v < 1 << 20, "x < (1u << 20)");
    let kept = group.select_if(&keys, &small)?;

    // Sort: local sorts, splitters from a sample, one all-to-all exchange, a merge.
    let start = Instant::now();
    let sorted = group.sort(keys, &Comparator::less())?;
    let sort_ms = start.elapsed().as_secs_f64() * 1e3;
    say(format!(
        "sorted 2^{log2} u32 keys in {sort_ms:.2} ms (first call: compiling included); shards \
         {:?}",
        sorted.shard_lengths()
    ));

    // Check against one context on the whole (every process checks; rank 0 reports).
    let whole = Context::new()?;
    let input = whole.upload(&data)?;
    assert_eq!(sum, whole.reduce(&input, &Op::plus())?);
    let mut expect = whole.zeros::<u32>(n)?;
    whole.scan(&input, &mut expect, &Op::plus(), ScanOptions::exclusive())?;
    assert_eq!(prefix.gather(&group)?, expect.to_vec()?);
    let expect_kept: Vec<u32> = data.iter().copied().filter(|v| *v < 1 << 20).collect();
    assert_eq!(kept.gather(&group)?, expect_kept);
    let mut expect_sorted = data.clone();
    expect_sorted.sort();
    assert_eq!(sorted.gather(&group)?, expect_sorted);
    say(format!(
        "sum {sum}, {} kept below 2^20, sort and scan equal to one context's: ok",
        kept.len()
    ));
    Ok(())
}
