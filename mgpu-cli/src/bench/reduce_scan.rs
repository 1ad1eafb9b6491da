//! `mgpu bench reduce | scan`: against a device memcpy and CUB's DeviceReduce / DeviceScan, with
//! `--transform square` (fused into the load, and materialized first) and `--offset`.

use super::harness::PeerParam;
use super::harness::{self, print_row, random, report_first_use, time, Args, BenchElement, Row};
use crate::output;
use crate::peers::Peer;
use mgpu::{Buffer, Context, Map, Op, ScanOptions};
use std::time::Instant;

/// Reduce and scan.
pub(crate) fn bench_type<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    peer: Option<&Peer>,
) -> Result<Vec<Row>, String> {
    let op = Op::<T>::plus();
    let options = if a.deterministic {
        ScanOptions::exclusive().deterministic()
    } else {
        ScanOptions::exclusive()
    };
    let square = Map::<T, T>::square();
    // `fused`: the primitive on the squares, mapped as they are loaded.
    let run = |input: &Buffer<T>, out: &mut Buffer<T>, fused: bool| -> mgpu::Result<()> {
        let (off, n) = (a.offset, input.len() - a.offset);
        let (input, mut out) = (input.slice(off..), out.slice_mut(off..off + n));
        match (a.primitive == "reduce", fused) {
            (true, false) => ctx.reduce_to_device(&input, &op, &mut out),
            (true, true) => ctx.reduce_to_device(&input.map(&square), &op, &mut out),
            (false, false) => ctx.scan(&input, &mut out, &op, options),
            (false, true) => ctx.scan(&input.map(&square), &mut out, &op, options),
        }
    };
    // First use: compile (or load from the disk cache) and run once.
    let before = mgpu::cuda::jit::stats();
    let small = ctx
        .upload(&random::<T>((1 << 20) + a.offset))
        .map_err(|e| e.to_string())?;
    let mut small_out = ctx.zeros::<T>(small.len()).map_err(|e| e.to_string())?;
    let t = Instant::now();
    run(&small, &mut small_out, a.transform)
        .and_then(|_| run(&small, &mut small_out, false))
        .and_then(|_| ctx.synchronize())
        .map_err(|e| e.to_string())?;
    report_first_use(&a.primitive, ty, t, before);
    let at = if a.offset > 0 {
        format!("@+{}", a.offset)
    } else {
        String::new()
    };
    let mut rows = Vec::new();
    for log2 in a.sizes.clone() {
        output::working_on(format!("{} {ty} 2^{log2}", a.primitive));
        let n = 1usize << log2;
        let input = ctx
            .upload(&random::<T>(n + a.offset))
            .map_err(|e| e.to_string())?;
        let mut out = ctx.zeros::<T>(n + a.offset).map_err(|e| e.to_string())?;
        let memcpy_ms = time(ctx, a.reps, || ctx.copy(&input, &mut out))?;
        let mut variants = vec![(format!("{}{at}", a.primitive), false, false)];
        if a.transform {
            variants.push((format!("{}-sq{at}", a.primitive), true, false));
            variants.push((format!("{}-sqmat{at}", a.primitive), false, true));
        }
        variants.retain(|v| a.measures(&v.0));
        for (variant, fused, materialize) in variants {
            let mut squares = if materialize {
                Some(ctx.zeros::<T>(n + a.offset).map_err(|e| e.to_string())?)
            } else {
                None
            };
            let ms = time(ctx, a.reps, || match squares.as_mut() {
                // Materialize x * x, then run the plain primitive on it.
                Some(sq) => ctx
                    .copy(&input.map(&square), sq)
                    .and_then(|_| run(sq, &mut out, false)),
                None => run(&input, &mut out, fused),
            })?;
            // The peer harness names these algorithms as the bench does (CUB has no
            // transform-scan entry point; its reduce has TransformReduce).
            let cub_algo = match (a.primitive.as_str(), fused || materialize) {
                (p, false) => Some(p),
                ("reduce", true) => Some("transform-reduce"),
                _ => None,
            };
            let cub = match cub_algo {
                Some(c) => {
                    harness::peer_ms(peer, "CUB", c, ty, n as u64, a.reps, PeerParam::Default)?
                }
                None => None,
            };
            let row = Row {
                bytes: traffic(&variant, n, std::mem::size_of::<T>()),
                variant,
                ty: ty.to_string(),
                log2,
                ms,
                memcpy_ms,
                peers: vec![("cub", cub)],
                limit_ms: None,
            };
            print_row(&row);
            rows.push(row);
        }
        output::tick("");
    }
    Ok(rows)
}

/// Bytes that must move for `n` elements of `size` bytes: reduce reads them; scan reads and
/// writes them.
fn traffic(variant: &str, n: usize, size: usize) -> f64 {
    let passes = if variant.starts_with("reduce") { 1 } else { 2 };
    (passes * n * size) as f64
}
