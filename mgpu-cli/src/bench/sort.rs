//! `mgpu bench sort | radix | merge`: the merge sort's keys and pairs against CUB's
//! DeviceMergeSort and DeviceRadixSort, the radix sort's keys and pairs (u32 values) against
//! DeviceRadixSort, with their traffic limit, on the key distributions of `--dist`, merge against
//! DeviceMerge, and a device memcpy.

use super::harness::{self, print_row, random, random_keys, report_first_use, time, Args, Row};
use super::harness::{at_memcpy_bandwidth, radix_traffic, time_with_setup, BenchElement};
use super::harness::{KeyDist, PeerParam};
use crate::output;
use crate::peers::Peer;
use mgpu::{Buffer, Comparator, Context, SortAlgorithm};
use std::time::Instant;

/// The merge sort's usual types: `mgpu bench sort` runs its merge rows on these unless `--types`
/// names others.
const MERGE_TYPES: &[&str] = &["i32", "i64", "f32", "f64"];

/// The types the CUB peer's merge sort and merge take (its radix sort takes u8 and u16 too).
const PEER_MERGE_TYPES: &[&str] = &["i32", "i64", "u32", "u64", "f32", "f64"];

/// A row of the sort bench: its variant, the CUB peers it is compared with (the merge sort's
/// and the radix sort's algorithm of the peer harness, "" for none) and the key distribution.
struct Variant {
    name: &'static str,
    cub_algo: &'static str,
    radix_algo: &'static str,
    dist: KeyDist,
}

/// The rows of `a.primitive` for type `ty`: merge; the merge sort's keys and pairs (sort, on the
/// merge sort's types unless `--types` named them); the radix sort's keys and pairs on every
/// distribution of `--dist` (sort, radix).
fn variants(a: &Args, ty: &str) -> Vec<Variant> {
    let v = |name, cub_algo, radix_algo, dist| Variant {
        name,
        cub_algo,
        radix_algo,
        dist,
    };
    if a.primitive == "merge" {
        return vec![v("merge", "merge", "", KeyDist::Uniform)];
    }
    let mut out = Vec::new();
    if a.primitive == "sort" && (a.types_given || MERGE_TYPES.contains(&ty)) {
        out.push(v("sort-keys", "sort-keys", "radix-keys", KeyDist::Uniform));
        out.push(v(
            "sort-pairs",
            "sort-pairs",
            "radix-pairs",
            KeyDist::Uniform,
        ));
    }
    for &dist in &a.dist {
        out.push(v("radix-keys", "", "radix-keys", dist));
        // The peer's pairs with u32 values, as the row's.
        out.push(v("radix-pairs", "", "radix-pairs-u32", dist));
    }
    out
}

/// The median time of sorting `input`'s keys with `values` by `algorithm`, from `off` on (both
/// restored before each timed run, into `keys` and a buffer like `values`).
fn time_pairs<T: BenchElement, V: mgpu::Element>(
    ctx: &Context,
    a: &Args,
    (keys, input): (&mut Buffer<T>, &Buffer<T>),
    values: &Buffer<V>,
    off: usize,
    algorithm: SortAlgorithm,
) -> Result<f64, String> {
    let mut vals = ctx.zeros::<V>(values.len()).map_err(|e| e.to_string())?;
    let comp = Comparator::<T>::less();
    time_with_setup(
        ctx,
        a.reps,
        &mut (keys, &mut vals),
        |(k, v)| ctx.copy(input, k).and_then(|_| ctx.copy(values, v)),
        |(k, v)| {
            ctx.sort_pairs_with(
                &mut k.slice_mut(off..),
                &mut v.slice_mut(off..),
                &comp,
                algorithm,
            )
        },
    )
}

/// Sort keys and pairs (the unsorted input is restored before each timed run), and merge.
pub(crate) fn bench_sort_type<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    peer: Option<&Peer>,
) -> Result<Vec<Row>, String> {
    let comp = Comparator::<T>::less();
    let err = |e: mgpu::Error| e.to_string();
    let mut variants = variants(a, ty);
    variants.retain(|v| a.measures(&format!("{}{}", v.name, v.dist.suffix())));
    let size = std::mem::size_of::<T>();
    let mut rows = Vec::new();
    for log2 in a.sizes.clone() {
        output::working_on(format!("{} {ty} 2^{log2}", a.primitive));
        let n = 1usize << log2;
        // With --offset, keys and values are views `off..` of buffers of n + off elements.
        let off = a.offset;
        let pristine = ctx.upload(&random_keys::<T>(n + off)).map_err(err)?;
        let mut keys = ctx.zeros::<T>(n + off).map_err(err)?;
        let memcpy_ms = time(ctx, a.reps, || ctx.copy(&pristine, &mut keys))?;
        // The radix rows' input of the distribution at hand (uniform: `pristine`).
        let mut dist_input: Option<(KeyDist, Buffer<T>)> = None;
        for variant in &variants {
            let dist = variant.dist;
            let radix = variant.name.starts_with("radix");
            if radix && dist != KeyDist::Uniform && dist_input.as_ref().map(|d| d.0) != Some(dist) {
                drop(dist_input.take()); // one distribution's keys at a time on the device
                dist_input = Some((dist, dist_keys::<T>(ctx, dist, n + off)?));
            }
            let input = match &dist_input {
                Some((d, buf)) if radix && *d == dist => buf,
                _ => &pristine,
            };
            let (t, before) = (Instant::now(), mgpu::cuda::jit::stats());
            let ms = match variant.name {
                "sort-keys" | "radix-keys" => {
                    let algorithm = if radix {
                        SortAlgorithm::Radix
                    } else {
                        SortAlgorithm::Merge
                    };
                    time_with_setup(
                        ctx,
                        a.reps,
                        &mut keys,
                        |k| ctx.copy(input, k),
                        |k| ctx.sort_with(&mut k.slice_mut(off..), &comp, algorithm),
                    )?
                }
                "sort-pairs" => {
                    let values = ctx.upload(&random::<T>(n + off)).map_err(err)?;
                    time_pairs(
                        ctx,
                        a,
                        (&mut keys, input),
                        &values,
                        off,
                        SortAlgorithm::Merge,
                    )?
                }
                "radix-pairs" => {
                    let values = ctx.upload(&random::<u32>(n + off)).map_err(err)?;
                    time_pairs(
                        ctx,
                        a,
                        (&mut keys, input),
                        &values,
                        off,
                        SortAlgorithm::Radix,
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
            let suffix = dist.suffix();
            if log2 == *a.sizes.start() {
                report_first_use(&format!("{}{suffix}", variant.name), ty, t, before);
            }
            let peer_ms = |algo: &str| {
                // The peer generates its own uniform keys: no peer for other distributions (its
                // time would be of another input), nor for its algorithms without the type.
                let typed = algo.starts_with("radix") || PEER_MERGE_TYPES.contains(&ty);
                if algo.is_empty() || dist != KeyDist::Uniform || !typed {
                    return Ok(None);
                }
                harness::peer_ms(peer, "CUB", algo, ty, n as u64, a.reps, PeerParam::Default)
            };
            let mut peers = vec![("cub", peer_ms(variant.cub_algo)?)];
            if a.primitive != "merge" {
                peers.push(("radix", peer_ms(variant.radix_algo)?));
            }
            let at = if off > 0 {
                format!("@+{off}")
            } else {
                String::new()
            };
            let value = match variant.name {
                "sort-pairs" => size,
                "radix-pairs" => 4,
                _ => 0,
            };
            let limit_ms = radix.then(|| {
                let bytes = radix_traffic(n, size, value);
                at_memcpy_bandwidth(bytes, memcpy_ms, n + off, size)
            });
            let row = Row {
                variant: format!("{}{suffix}{at}", variant.name),
                ty: ty.to_string(),
                log2,
                ms,
                // Read and written once (keys, and values for pairs: the merge rows count the
                // keys only, as they always have).
                bytes: (2 * n * (size + if radix { value } else { 0 })) as f64,
                memcpy_ms,
                peers,
                limit_ms,
            };
            print_row(&row);
            rows.push(row);
        }
        output::tick("");
    }
    Ok(rows)
}

/// `n` keys of `dist` on the device (`Sorted` and `Reversed` sorted there by the merge sort).
fn dist_keys<T: BenchElement>(ctx: &Context, dist: KeyDist, n: usize) -> Result<Buffer<T>, String> {
    let err = |e: mgpu::Error| e.to_string();
    let mut keys = ctx.upload(&dist.keys::<T>(n)).map_err(err)?;
    let order = match dist {
        KeyDist::Sorted => Some(Comparator::<T>::less()),
        KeyDist::Reversed => Some(Comparator::<T>::greater()),
        _ => None,
    };
    if let Some(comp) = order {
        ctx.sort_with(&mut keys, &comp, SortAlgorithm::Merge)
            .map_err(err)?;
    }
    Ok(keys)
}
