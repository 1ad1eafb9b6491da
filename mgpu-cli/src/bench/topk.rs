//! `mgpu bench topk`: the first k keys in the order of `Comparator::less` (the k smallest),
//! sorted, ties in input order, of a whole array (`top_k`) and of every row of a batch of rows of
//! one length (`segmented_top_k`), for k = 1, 8, 64 and 1024, against what a CUB user runs for the
//! same result: DeviceRadixSort of the whole array (the peer's `radix-keys`), and
//! DeviceSegmentedSort of every row (its `segsort-keys`, segments `fixed-L`) followed by a take
//! of k keys a row, which is not timed.
//!
//! The keys are the harness's keys of the sorts, `value_from_bits(rand_bits(1, i))`, as the
//! peer's; the rows are segreduce.rs's `fixed-L` segments, whose checksum the peer prints.
//! Every row is checked against the first k keys of the CPU backend's stable sort of the same
//! input (per row: its segmented sort) before the timing.

use super::harness::{self, first_difference, rand_bits, report_first_use, time, Args};
use super::harness::{BenchElement, PeerParam};
use super::segreduce::{memcpy_ms, segments, SegDist};
use crate::output::{self, Record};
use crate::peers::Peer;
use mgpu::{Buffer, Comparator, Context, Csr};
use std::time::Instant;

/// The harness's stream of the sorts' keys (`kStreamInput` in peers/cub_bench.cu).
const STREAM_KEYS: u64 = 1;

/// The k of every row.
const KS: &[usize] = &[1, 8, 64, 1024];

/// The row lengths of the batched rows.
const ROW_LENGTHS: &[usize] = &[128, 1024, 4096, 32768];

/// The key types the peer harness's segmented sort takes (the others' batched rows have no peer).
const SEGMENTED_PEER_TYPES: &[&str] = &["i32", "f32"];

/// One printed line (and CSV row).
struct Line {
    variant: String,
    ty: String,
    log2: u32,
    k: usize,
    rows: usize,
    ms: f64,
    /// Bytes that must move: the keys read once.
    bytes: f64,
    memcpy_ms: f64,
    /// The peer's sort of the whole array, or of every row.
    sort_ms: Option<f64>,
}

impl Line {
    fn record(&self) -> Record {
        Record {
            primitive: "topk".to_string(),
            variant: self.variant.clone(),
            ty: self.ty.clone(),
            log2: self.log2,
            items: (1u64 << self.log2) as f64,
            ms: self.ms,
            bytes: self.bytes,
            memcpy_ms: self.memcpy_ms,
            peers: vec![("cub".to_string(), self.sort_ms)],
            extra: vec![("k", Some(self.k as f64)), ("rows", Some(self.rows as f64))],
            tuning: "-".to_string(),
        }
    }
}

fn print_header() {
    output::line(format!(
        "{:<18} {:<4} {:<5} {:>5} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10} {:>8}",
        "prim",
        "type",
        "n",
        "k",
        "rows",
        "mgpu_ms",
        "Gitems/s",
        "memcpy_ms",
        "vs_mcpy",
        "sort_ms",
        "vs_sort"
    ));
}

fn print_line(l: &Line) {
    let n = (1u64 << l.log2) as f64;
    let (sort, vs) = match l.sort_ms {
        Some(p) => (format!("{p:>10.4}"), format!("{:>8.3}", p / l.ms)),
        None => (format!("{:>10}", "-"), format!("{:>8}", "-")),
    };
    output::line(format!(
        "{:<18} {:<4} 2^{:<3} {:>5} {:>9} {:>9.4} {:>9.2} {:>9.4} {:>7.3} {sort} {vs}",
        l.variant,
        l.ty,
        l.log2,
        l.k,
        l.rows,
        l.ms,
        n / l.ms / 1e6,
        l.memcpy_ms,
        l.memcpy_ms / l.ms,
    ));
}

fn err(e: mgpu::Error) -> String {
    e.to_string()
}

/// Fails where `got` is not `want`, naming the position.
fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    match first_difference(got, want) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: mgpu's top k differs from the CPU backend's sort at {i}: {:?}, expected {:?}",
            got.get(i),
            want.get(i)
        )),
    }
}

/// The whole array's rows: every k, against the peer's sort of the whole array.
#[allow(clippy::too_many_arguments)]
fn whole<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    log2: u32,
    keys: &Buffer<T>,
    sorted: &[T],
    peer: Option<&Peer>,
    first: &mut bool,
) -> Result<Vec<Line>, String> {
    let n = keys.len();
    let comp = Comparator::<T>::less();
    let bytes = (n * std::mem::size_of::<T>()) as f64;
    let memcpy_ms = memcpy_ms(ctx, bytes, a.reps)?;
    let sort_ms = harness::peer_ms(
        peer,
        "CUB",
        "radix-keys",
        ty,
        n as u64,
        a.reps,
        PeerParam::Default,
    )?;
    let mut lines = Vec::new();
    for &k in KS.iter().filter(|&&k| k <= n) {
        let variant = format!("top_k/k{k}");
        if !a.measures(&variant) {
            continue;
        }
        let what = format!("{variant} {ty} 2^{log2}");
        let mut out = ctx.zeros::<T>(k).map_err(err)?;
        let (t, before) = (Instant::now(), mgpu::cuda::jit::stats());
        ctx.top_k(keys, k, &mut out, &comp).map_err(err)?;
        let got = out.to_vec().map_err(err)?;
        if std::mem::take(first) {
            report_first_use("top_k", ty, t, before);
        }
        check(&what, &got, &sorted[..k])?;
        let ms = time(ctx, a.reps, || ctx.top_k(keys, k, &mut out, &comp))?;
        let line = Line {
            variant,
            ty: ty.to_string(),
            log2,
            k,
            rows: 1,
            ms,
            bytes,
            memcpy_ms,
            sort_ms,
        };
        print_line(&line);
        lines.push(line);
    }
    Ok(lines)
}

/// The batched rows of length `len`: every k up to `len`, against the peer's segmented sort.
#[allow(clippy::too_many_arguments)]
fn batched<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    log2: u32,
    keys: &Buffer<T>,
    host_keys: &[T],
    len: usize,
    peer: Option<&Peer>,
    first: &mut bool,
) -> Result<Vec<Line>, String> {
    let n = keys.len();
    let comp = Comparator::<T>::less();
    let variants: Vec<(usize, String)> = KS
        .iter()
        .filter(|&&k| k <= len)
        .map(|&k| (k, format!("rows{len}/k{k}")))
        .filter(|(_, v)| a.measures(v))
        .collect();
    if variants.is_empty() || len > n {
        return Ok(Vec::new());
    }
    let dist = SegDist::Fixed(len as u64);
    let (host_offsets, geom) = segments(n as u64, dist);
    let rows = host_offsets.len() - 1;
    let offsets = ctx.upload(&host_offsets[..rows]).map_err(err)?;
    // The reference: every row sorted by the CPU backend.
    let cpu = Context::cpu();
    let mut sorted = cpu.upload(host_keys).map_err(err)?;
    let cpu_offsets = cpu.upload(&host_offsets[..rows]).map_err(err)?;
    cpu.segmented_sort(&mut sorted, Csr::new(&cpu_offsets), &comp)
        .map_err(|e| format!("rows{len} {ty}: the CPU backend's reference: {e}"))?;
    let sorted = sorted.to_vec().map_err(err)?;
    let bytes = (n * std::mem::size_of::<T>() + rows * 4) as f64;
    let memcpy_ms = memcpy_ms(ctx, bytes, a.reps)?;
    let spec = dist.spec();
    let hash = geom.hex();
    let peer = peer.filter(|_| SEGMENTED_PEER_TYPES.contains(&ty));
    let sort_ms = harness::peer_ms(
        peer,
        "CUB",
        "segsort-keys",
        ty,
        n as u64,
        a.reps,
        PeerParam::Geometry(&spec, &hash),
    )?;
    let mut lines = Vec::new();
    for (k, variant) in variants {
        let what = format!("{variant} {ty} 2^{log2}");
        let mut out = ctx.zeros::<T>(rows * k).map_err(err)?;
        let (t, before) = (Instant::now(), mgpu::cuda::jit::stats());
        ctx.segmented_top_k(keys, Csr::new(&offsets), k, &mut out, &comp)
            .map_err(err)?;
        let got = out.to_vec().map_err(err)?;
        if std::mem::take(first) {
            report_first_use("segmented_top_k", ty, t, before);
        }
        let want: Vec<T> = (0..rows)
            .flat_map(|r| {
                let start = host_offsets[r] as usize;
                sorted[start..start + k.min(host_offsets[r + 1] as usize - start)].iter()
            })
            .copied()
            .collect();
        // A row shorter than k (the last one) leaves the rest of its k slots as they were.
        let got: Vec<T> = (0..rows)
            .flat_map(|r| {
                let filled = k.min((host_offsets[r + 1] - host_offsets[r]) as usize);
                got[r * k..r * k + filled].iter()
            })
            .copied()
            .collect();
        check(&what, &got, &want)?;
        let ms = time(ctx, a.reps, || {
            ctx.segmented_top_k(keys, Csr::new(&offsets), k, &mut out, &comp)
        })?;
        let line = Line {
            variant,
            ty: ty.to_string(),
            log2,
            k,
            rows,
            ms,
            bytes,
            memcpy_ms,
            sort_ms,
        };
        print_line(&line);
        lines.push(line);
    }
    Ok(lines)
}

/// Every size, whole and batched, of `T`.
fn bench_type<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    peer: Option<&Peer>,
) -> Result<Vec<Line>, String> {
    let mut lines = Vec::new();
    let (mut first_whole, mut first_rows) = (true, true);
    for log2 in a.sizes.clone() {
        output::working_on(format!("topk {ty} 2^{log2}"));
        let n = 1usize << log2;
        let host_keys: Vec<T> = (0..n as u64)
            .map(|i| T::value_from_bits(rand_bits(STREAM_KEYS, i)))
            .collect();
        let keys = ctx.upload(&host_keys).map_err(err)?;
        if KS.iter().any(|k| a.measures(&format!("top_k/k{k}"))) {
            let cpu = Context::cpu();
            let mut sorted = cpu.upload(&host_keys).map_err(err)?;
            cpu.sort(&mut sorted, &Comparator::less())
                .map_err(|e| format!("top_k {ty}: the CPU backend's reference: {e}"))?;
            let sorted = sorted.to_vec().map_err(err)?;
            lines.extend(whole(
                ctx,
                a,
                ty,
                log2,
                &keys,
                &sorted,
                peer,
                &mut first_whole,
            )?);
        }
        for &len in ROW_LENGTHS {
            lines.extend(batched(
                ctx,
                a,
                ty,
                log2,
                &keys,
                &host_keys,
                len,
                peer,
                &mut first_rows,
            )?);
        }
        output::tick("");
    }
    Ok(lines)
}

/// `mgpu bench topk`: every type and size, then the CSV if asked; the records for JSON and
/// charts.
pub(crate) fn run(ctx: &Context, a: &Args, peer: Option<&Peer>) -> Result<Vec<Record>, String> {
    output::line(
        "# the first k keys under Comparator::less (the k smallest), sorted, ties in input order: \
         top_k of the whole array, and segmented_top_k of every row (rows of one length, u32 \
         offsets); bytes: the keys read once (and the offsets)",
    );
    output::line(
        "# sort_ms: CUB DeviceRadixSort of the whole array (radix-keys), or DeviceSegmentedSort \
         of every row (segsort-keys, i32 and f32), on the same keys, the take of k keys a row not \
         timed; vs_sort: sort_ms / mgpu_ms; vs_mcpy: memcpy of the same bytes / mgpu_ms",
    );
    print_header();
    let mut lines = Vec::new();
    for ty in &a.types {
        let r = match ty.as_str() {
            "i32" => bench_type::<i32>(ctx, a, ty, peer),
            "i64" => bench_type::<i64>(ctx, a, ty, peer),
            "u32" => bench_type::<u32>(ctx, a, ty, peer),
            "u64" => bench_type::<u64>(ctx, a, ty, peer),
            "f32" => bench_type::<f32>(ctx, a, ty, peer),
            "f64" => bench_type::<f64>(ctx, a, ty, peer),
            other => Err(format!(
                "bench: unsupported type `{other}` for topk (i32, i64, u32, u64, f32, f64)"
            )),
        }?;
        lines.extend(r);
    }
    if let Some(path) = &a.csv {
        let mut s = String::from("primitive,type,log2n,k,rows,bytes,mgpu_ms,memcpy_ms,sort_ms\n");
        for l in &lines {
            s += &format!(
                "{},{},{},{},{},{},{},{},{}\n",
                l.variant,
                l.ty,
                l.log2,
                l.k,
                l.rows,
                l.bytes,
                l.ms,
                l.memcpy_ms,
                l.sort_ms.map(|v| v.to_string()).unwrap_or_default()
            );
        }
        std::fs::write(path, s).map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(lines.iter().map(Line::record).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_found() {
        assert_eq!(first_difference(&[1, 2, 3], &[1, 2, 3]), None);
        assert_eq!(first_difference(&[1, 5, 3], &[1, 2, 3]), Some(1));
        let e = check("x", &[1, 2], &[1, 3]).unwrap_err();
        assert!(e.contains("at 1"), "{e}");
    }
}
