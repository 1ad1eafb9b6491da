//! `mgpu bench sort | merge`: sort keys and pairs against CUB's DeviceMergeSort and
//! DeviceRadixSort, merge against DeviceMerge, and a device memcpy.

use super::harness::{self, print_row, random, random_keys, report_first_use, time, Args, Row};
use super::harness::{time_with_setup, BenchElement, PeerParam};
use crate::output;
use crate::peers::Peer;
use mgpu::{Comparator, Context};
use std::time::Instant;

/// Sort keys and pairs (the unsorted input is restored before each timed run), and merge.
pub(crate) fn bench_sort_type<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    peer: Option<&Peer>,
) -> Result<Vec<Row>, String> {
    let comp = Comparator::<T>::less();
    let err = |e: mgpu::Error| e.to_string();
    let variants: &[(&str, &str, &str)] = if a.primitive == "merge" {
        &[("merge", "merge", "")]
    } else {
        &[
            ("sort-keys", "sort-keys", "radix-keys"),
            ("sort-pairs", "sort-pairs", "radix-pairs"),
        ]
    };
    let mut rows = Vec::new();
    for log2 in a.sizes.clone() {
        output::working_on(format!("{} {ty} 2^{log2}", a.primitive));
        let n = 1usize << log2;
        // With --offset, keys and values are views `off..` of buffers of n + off elements.
        let off = a.offset;
        let pristine = ctx.upload(&random_keys::<T>(n + off)).map_err(err)?;
        let mut keys = ctx.zeros::<T>(n + off).map_err(err)?;
        let memcpy_ms = time(ctx, a.reps, || ctx.copy(&pristine, &mut keys))?;
        for &(variant, cub_algo, radix_algo) in variants {
            let (t, before) = (Instant::now(), mgpu::cuda::jit::stats());
            let ms = match variant {
                "sort-keys" => time_with_setup(
                    ctx,
                    a.reps,
                    &mut keys,
                    |k| ctx.copy(&pristine, k),
                    |k| ctx.sort(&mut k.slice_mut(off..), &comp),
                )?,
                "sort-pairs" => {
                    let values = ctx.upload(&random::<T>(n + off)).map_err(err)?;
                    let mut vals = ctx.zeros::<T>(n + off).map_err(err)?;
                    time_with_setup(
                        ctx,
                        a.reps,
                        &mut (&mut keys, &mut vals),
                        |(k, v)| ctx.copy(&pristine, k).and_then(|_| ctx.copy(&values, v)),
                        |(k, v)| {
                            ctx.sort_pairs(&mut k.slice_mut(off..), &mut v.slice_mut(off..), &comp)
                        },
                    )?
                }
                _ => {
                    // Two sorted halves of n/2 keys each.
                    let mut half_a = ctx.upload(&random_keys::<T>(n / 2)).map_err(err)?;
                    let mut half_b = ctx.upload(&random_keys::<T>(n - n / 2)).map_err(err)?;
                    ctx.sort(&mut half_a, &comp).map_err(err)?;
                    ctx.sort(&mut half_b, &comp).map_err(err)?;
                    time(ctx, a.reps, || {
                        ctx.merge(&half_a, &half_b, &mut keys, &comp)
                    })?
                }
            };
            if log2 == *a.sizes.start() {
                report_first_use(variant, ty, t, before);
            }
            let peer_ms = |algo| {
                harness::peer_ms(peer, "CUB", algo, ty, n as u64, a.reps, PeerParam::Default)
            };
            let mut peers = vec![("cub", peer_ms(cub_algo)?)];
            if !radix_algo.is_empty() {
                peers.push(("radix", peer_ms(radix_algo)?));
            }
            let at = if off > 0 {
                format!("@+{off}")
            } else {
                String::new()
            };
            let row = Row {
                variant: format!("{variant}{at}"),
                ty: ty.to_string(),
                log2,
                ms,
                // Read and written once per pass.
                bytes: (2 * n * std::mem::size_of::<T>()) as f64,
                memcpy_ms,
                peers,
            };
            print_row(&row);
            rows.push(row);
        }
        output::tick("");
    }
    Ok(rows)
}
