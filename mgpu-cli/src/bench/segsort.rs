//! `mgpu bench segsort`: the segmented sort (keys, and pairs with u32 values; stable) against
//! CUB's DeviceSegmentedSort (StableSortKeys, StableSortPairs) and DeviceSegmentedRadixSort
//! (SortKeys, SortPairs), and a device memcpy of the same bytes, on the segment-length
//! distributions of `mgpu bench segreduce`; on one segment also against mgpu's own whole-array
//! sort of the same data.
//!
//! Both sides sort the same data: the segments are segreduce.rs's (its generator, whose checksum
//! the peer harness prints as `geom=` and `harness::peer_ms` compares), the keys the harness's
//! keys of the sorts, `value_from_bits(rand_bits(1, i))` (its `gen<T>(kStreamInput, i)`), and
//! the values each key's input position (its `radix-pairs-u32` values). Every row's result is
//! checked once against the CPU backend's `segmented_sort` of the same input before the timing;
//! mgpu sorts in place, so each timed run starts from the unsorted input, copied back outside
//! the timed region (CUB sorts out of place and leaves its input as it was).

use super::harness::{self, rand_bits, report_first_use, time_with_setup, Args, BenchElement};
use super::harness::{first_difference, label, PeerParam};
use super::segreduce::{memcpy_ms, segments, SegDist};
use crate::output::{self, Record};
use crate::peers::Peer;
use mgpu::cuda::sort::SortValues;
use mgpu::{Buffer, Comparator, Context, Csr};
use std::time::Instant;

/// The harness's stream of the sorts' keys (`kStreamInput` in peers/cub_bench.cu).
const STREAM_KEYS: u64 = 1;

/// The largest log2 size: the peers' offsets are 32-bit signed.
const MAX_LOG2: u32 = 30;

/// DeviceSegmentedRadixSort runs one CTA per segment: 2^26 one-key i32 segments took 7.2 s a call
/// on the H100 (2026-11-25), so a row of 20 runs would take minutes. Past this many segments its
/// column is left empty (`-`).
const RADIX_PEER_MAX_SEGMENTS: usize = 1 << 22;

/// The key types the peer harness's segmented sorts take (the others' rows have no peer).
const PEER_TYPES: &[&str] = &["i32", "f32"];

/// The distributions `mgpu bench segsort` runs: fixed lengths, power-law lengths, one segment,
/// half the segments empty.
const DISTS: &[SegDist] = &[
    SegDist::Fixed(1),
    SegDist::Fixed(2),
    SegDist::Fixed(20),
    SegDist::Fixed(500),
    SegDist::Fixed(5000),
    SegDist::PowerLaw,
    SegDist::One,
    SegDist::Empty(20),
];

/// Keys alone, or keys with u32 values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Keys,
    Pairs,
}

impl Mode {
    /// The row's name, before `/distribution`.
    fn name(self) -> &'static str {
        match self {
            Mode::Keys => "segsort-keys",
            Mode::Pairs => "segsort-pairs",
        }
    }
    /// The peer harness's algorithms: DeviceSegmentedSort's, DeviceSegmentedRadixSort's.
    fn peer_algos(self) -> (&'static str, &'static str) {
        match self {
            Mode::Keys => ("segsort-keys", "segradix-keys"),
            Mode::Pairs => ("segsort-pairs", "segradix-pairs"),
        }
    }
    /// Bytes of a value.
    fn value_size(self) -> usize {
        match self {
            Mode::Keys => 0,
            Mode::Pairs => 4,
        }
    }
}

/// One printed line (and CSV row).
struct Line {
    variant: String,
    ty: String,
    log2: u32,
    segments: usize,
    items: usize,
    ms: f64,
    /// Bytes that must move: keys (and values) read and written once, offsets read once.
    bytes: f64,
    memcpy_ms: f64,
    /// DeviceSegmentedSort's median time.
    cub_ms: Option<f64>,
    /// DeviceSegmentedRadixSort's median time.
    radix_ms: Option<f64>,
    /// One segment: mgpu's whole-array sort of the same data.
    own_ms: Option<f64>,
    tuning: String,
}

fn opt(v: Option<f64>, width: usize, prec: usize) -> String {
    match v {
        Some(v) => format!("{v:>width$.prec$}"),
        None => format!("{:>width$}", "-"),
    }
}

fn print_header() {
    output::line(format!(
        "{:<29} {:<4} {:<5} {:>10} {:>9} {:>8} {:>8} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7} {:>9} \
         {:>7} {:>10}",
        "prim",
        "type",
        "n",
        "segs",
        "mgpu_ms",
        "Gitems/s",
        "GB/s",
        "memcpy_ms",
        "vs_mcpy",
        "cub_ms",
        "vs_cub",
        "radix_ms",
        "vs_radx",
        "own_ms",
        "seg/own",
        "tuning"
    ));
}

fn print_line(l: &Line) {
    let vs = |p: Option<f64>| p.map(|p| p / l.ms);
    output::line(format!(
        "{:<29} {:<4} 2^{:<3} {:>10} {:>9.4} {:>8.2} {:>8.1} {:>9.4} {:>7.3} {} {} {} {} {} {} \
         {:>10}",
        l.variant,
        l.ty,
        l.log2,
        l.segments,
        l.ms,
        l.items as f64 / l.ms / 1e6,
        l.bytes / l.ms / 1e6,
        l.memcpy_ms,
        l.memcpy_ms / l.ms,
        opt(l.cub_ms, 9, 4),
        opt(vs(l.cub_ms), 7, 3),
        opt(l.radix_ms, 9, 4),
        opt(vs(l.radix_ms), 7, 3),
        opt(l.own_ms, 9, 4),
        opt(l.own_ms.map(|o| l.ms / o), 7, 3),
        l.tuning,
    ));
}

impl Line {
    /// The line as a record of the segsort bench: DeviceSegmentedSort as the `cub` peer,
    /// DeviceSegmentedRadixSort as `radix`; segments, the whole-array sort's time and the
    /// segmented one's over it among the extra numbers.
    fn record(&self) -> Record {
        Record {
            primitive: "segsort".to_string(),
            variant: self.variant.clone(),
            ty: self.ty.clone(),
            log2: self.log2,
            items: self.items as f64,
            ms: self.ms,
            bytes: self.bytes,
            memcpy_ms: self.memcpy_ms,
            peers: vec![
                ("cub".to_string(), self.cub_ms),
                ("radix".to_string(), self.radix_ms),
            ],
            extra: vec![
                ("segments", Some(self.segments as f64)),
                ("own_ms", self.own_ms),
                ("seg_vs_own", self.own_ms.map(|o| self.ms / o)),
            ],
            tuning: self.tuning.clone(),
        }
    }
}

fn err(e: mgpu::Error) -> String {
    e.to_string()
}

/// `NTxVTxOCC` of the tuning the segmented sort of `T` (with u32 values for pairs) runs its
/// tiles with on `arch`, or `-`. (Segments of millions of keys run the whole-array sort, with its
/// own tuning.)
fn tuning<T: BenchElement>(arch: u32, mode: Mode) -> String {
    let values = match mode {
        Mode::Keys => SortValues::None,
        Mode::Pairs => SortValues::Pairs,
    };
    mgpu::cuda::segsort::table_tuning::<T, u32>(Some(arch), values)
        .map_or("-".into(), |t| label(&t))
}

/// The offsets, with empty segments allowed where the input has them.
fn csr(offsets: &Buffer<u32>, support_empty: bool) -> Csr<'_, u32> {
    Csr::new(offsets).with_empty(support_empty)
}

/// Fails loudly where `got` (keys, then values) is not `want`, naming the position and its
/// segment.
fn check<T: BenchElement, V: PartialEq + std::fmt::Debug>(
    what: &str,
    got: (&[T], Option<&[V]>),
    want: (&[T], Option<&[V]>),
    offsets: &[u32],
) -> Result<(), String> {
    let segment_of = |i: usize| {
        offsets
            .partition_point(|&o| o as usize <= i)
            .saturating_sub(1)
    };
    if let Some(i) = first_difference(got.0, want.0) {
        let j = segment_of(i);
        return Err(format!(
            "{what}: mgpu's result differs from the CPU backend's at key {i} (segment {j}, {}..{}): \
             {:?}, expected {:?}",
            offsets[j],
            offsets[j + 1],
            got.0.get(i),
            want.0.get(i)
        ));
    }
    if let (Some(g), Some(w)) = (got.1, want.1) {
        if let Some(i) = first_difference(g, w) {
            let j = segment_of(i);
            return Err(format!(
                "{what}: mgpu's result differs from the CPU backend's at value {i} (segment {j}, \
                 {}..{}): {:?}, expected {:?} (equal keys out of input order?)",
                offsets[j],
                offsets[j + 1],
                g.get(i),
                w.get(i)
            ));
        }
    }
    Ok(())
}

/// The CPU backend's segmented sort of `keys` (with `values`): the reference of every row.
fn reference<T: BenchElement>(
    keys: &[T],
    values: Option<&[u32]>,
    offsets: &[u32],
    support_empty: bool,
    comp: &Comparator<T>,
) -> mgpu::Result<(Vec<T>, Option<Vec<u32>>)> {
    let cpu = Context::cpu();
    let mut k = cpu.upload(keys)?;
    let offsets = cpu.upload(offsets)?;
    let segs = csr(&offsets, support_empty);
    match values {
        None => {
            cpu.segmented_sort(&mut k, segs, comp)?;
            Ok((k.to_vec()?, None))
        }
        Some(values) => {
            let mut v = cpu.upload(values)?;
            cpu.segmented_sort_pairs(&mut k, &mut v, segs, comp)?;
            Ok((k.to_vec()?, Some(v.to_vec()?)))
        }
    }
}

/// What a row sorts: the keys, and the values for pairs.
type State<T> = (Buffer<T>, Option<Buffer<u32>>);

/// Every size, distribution and mode (keys, pairs) of `T`: prints and returns its lines.
fn bench_type<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    peer: Option<&Peer>,
) -> Result<Vec<Line>, String> {
    let comp = Comparator::<T>::less();
    let arch = ctx.arch().unwrap_or(90);
    let size = std::mem::size_of::<T>();
    let mut lines = Vec::new();
    for log2 in a.sizes.clone() {
        output::working_on(format!("segsort {ty} 2^{log2}"));
        let n = 1usize << log2;
        // The harness's keys and values (its `fill(keys_in, n, kStreamInput)` and `iota_kernel`).
        let host_keys: Vec<T> = (0..n as u64)
            .map(|i| T::value_from_bits(rand_bits(STREAM_KEYS, i)))
            .collect();
        let host_values: Vec<u32> = (0..n as u32).collect();
        let input_keys = ctx.upload(&host_keys).map_err(err)?;
        let input_values = ctx.upload(&host_values).map_err(err)?;
        // The first row of each mode at the first size reports the first use.
        let mut first = [log2 == *a.sizes.start(); 2];
        for &dist in DISTS {
            let spec = dist.spec();
            let modes: Vec<Mode> = [Mode::Keys, Mode::Pairs]
                .into_iter()
                .filter(|m| a.measures(&format!("{}/{spec}", m.name())))
                .collect();
            if modes.is_empty() {
                continue;
            }
            let (host_offsets, geom) = segments(n as u64, dist);
            let hash = geom.hex();
            let segs = host_offsets.len() - 1;
            let empty = dist.support_empty();
            let offsets = ctx.upload(&host_offsets[..segs]).map_err(err)?;
            // The input back into the buffers being sorted (outside the timing).
            let restore = |s: &mut State<T>| -> mgpu::Result<()> {
                ctx.copy(&input_keys, &mut s.0)?;
                if let Some(v) = &mut s.1 {
                    ctx.copy(&input_values, v)?;
                }
                Ok(())
            };
            let segmented = |s: &mut State<T>| -> mgpu::Result<()> {
                let segments = csr(&offsets, empty);
                match &mut s.1 {
                    Some(v) => ctx.segmented_sort_pairs(&mut s.0, v, segments, &comp),
                    None => ctx.segmented_sort(&mut s.0, segments, &comp),
                }
            };
            // mgpu's whole-array sort of the same data (the one-segment rows).
            let whole = |s: &mut State<T>| -> mgpu::Result<()> {
                match &mut s.1 {
                    Some(v) => ctx.sort_pairs(&mut s.0, v, &comp),
                    None => ctx.sort(&mut s.0, &comp),
                }
            };
            for mode in modes {
                let variant = format!("{}/{spec}", mode.name());
                let what = format!("{variant} {ty} 2^{log2}");
                let pairs = mode == Mode::Pairs;
                let mut state: State<T> = (
                    ctx.zeros::<T>(n).map_err(err)?,
                    pairs
                        .then(|| ctx.zeros::<u32>(n))
                        .transpose()
                        .map_err(err)?,
                );
                // Once, checked against the CPU backend before the timing.
                restore(&mut state).map_err(err)?;
                let (t, before) = (Instant::now(), mgpu::cuda::jit::stats());
                segmented(&mut state).map_err(err)?;
                let got_keys = state.0.to_vec().map_err(err)?;
                if std::mem::take(&mut first[pairs as usize]) {
                    report_first_use(mode.name(), ty, t, before);
                }
                let got_values = state.1.as_ref().map(|v| v.to_vec()).transpose();
                let got_values = got_values.map_err(err)?;
                let values = pairs.then_some(&host_values[..]);
                let (want_keys, want_values) =
                    reference(&host_keys, values, &host_offsets[..segs], empty, &comp)
                        .map_err(|e| format!("{what}: the CPU backend's reference: {e}"))?;
                let want = (&want_keys[..], want_values.as_deref());
                let got = (&got_keys[..], got_values.as_deref());
                check(&what, got, want, &host_offsets)?;
                drop((got_keys, got_values));
                let ms = time_with_setup(ctx, a.reps, &mut state, restore, segmented)?;
                let own_ms = match dist {
                    SegDist::One => {
                        let own_ms = time_with_setup(ctx, a.reps, &mut state, restore, whole)?;
                        let got_keys = state.0.to_vec().map_err(err)?;
                        let got_values = state.1.as_ref().map(|v| v.to_vec()).transpose();
                        let got_values = got_values.map_err(err)?;
                        let got = (&got_keys[..], got_values.as_deref());
                        let whole_what = format!("{what} (the whole-array sort)");
                        check(&whole_what, got, want, &host_offsets)?;
                        Some(own_ms)
                    }
                    _ => None,
                };
                drop(state);
                let bytes = (2 * n * (size + mode.value_size()) + segs * 4) as f64;
                let memcpy_ms = memcpy_ms(ctx, bytes, a.reps)?;
                let (cub_algo, radix_algo) = mode.peer_algos();
                let geometry = PeerParam::Geometry(&spec, &hash);
                let peer = peer.filter(|_| PEER_TYPES.contains(&ty));
                let peer_ms =
                    |algo| harness::peer_ms(peer, "CUB", algo, ty, n as u64, a.reps, geometry);
                let line = Line {
                    variant,
                    ty: ty.to_string(),
                    log2,
                    segments: segs,
                    items: n,
                    ms,
                    bytes,
                    memcpy_ms,
                    cub_ms: peer_ms(cub_algo)?,
                    radix_ms: match segs > RADIX_PEER_MAX_SEGMENTS {
                        true => None,
                        false => peer_ms(radix_algo)?,
                    },
                    own_ms,
                    tuning: tuning::<T>(arch, mode),
                };
                print_line(&line);
                lines.push(line);
            }
        }
        output::tick("");
    }
    Ok(lines)
}

/// `mgpu bench segsort`: every type and size, then the CSV if asked; the records for JSON and
/// charts.
pub(crate) fn run(ctx: &Context, a: &Args, peer: Option<&Peer>) -> Result<Vec<Record>, String> {
    if *a.sizes.end() > MAX_LOG2 {
        return Err(format!(
            "bench segsort: sizes up to 2^{MAX_LOG2} (the peers take 32-bit signed offsets)"
        ));
    }
    output::line(
        "# stable sort within each segment (Comparator::less), u32 offsets; keys, and pairs with \
         u32 values (the input positions); segs = segments; bytes: keys (and values) read and \
         written once, offsets read once",
    );
    output::line(
        "# peers: CUB DeviceSegmentedSort::StableSortKeys | StableSortPairs (cub_ms) and \
         DeviceSegmentedRadixSort::SortKeys | SortPairs (radix_ms), out of place, int offsets \
         (begin = off, end = off + 1), on the same keys and segments; vs_cub, vs_radx: peer ms / \
         mgpu ms; radix_ms is left out (-) past 2^22 segments, where its one CTA per segment takes \
         seconds a call",
    );
    output::line(
        "# vs_mcpy: bandwidth of the bytes that must move / memcpy's (it moves the same bytes); \
         own_ms (one segment): mgpu's whole-array sort | sort_pairs of the same data, seg/own = \
         mgpu_ms / own_ms; each row checked against the CPU backend first; the unsorted input \
         restored before every timed run, outside the timing",
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
                "bench: unsupported type `{other}` for segsort (i32, i64, u32, u64, f32, f64)"
            )),
        }?;
        lines.extend(r);
    }
    if let Some(path) = &a.csv {
        let mut s = String::from(
            "primitive,type,log2n,segments,items,bytes,mgpu_ms,memcpy_ms,cub_ms,radix_ms,own_ms,\
             tuning\n",
        );
        let o = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        for l in &lines {
            s += &format!(
                "{},{},{},{},{},{},{},{},{},{},{},{}\n",
                l.variant,
                l.ty,
                l.log2,
                l.segments,
                l.items,
                l.bytes,
                l.ms,
                l.memcpy_ms,
                o(l.cub_ms),
                o(l.radix_ms),
                o(l.own_ms),
                l.tuning
            );
        }
        std::fs::write(path, s).map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(lines.iter().map(Line::record).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys are the peer harness's `gen<T>(kStreamInput, i)`: its first values, as
    /// peers/cub_bench.cu computes them.
    #[test]
    fn keys_are_the_harness_keys() {
        let first = rand_bits(STREAM_KEYS, 0);
        assert_eq!(i32::value_from_bits(first), first as u32 as i32);
        assert_eq!(
            f32::value_from_bits(first),
            (first >> 40) as f32 / 16_777_216.0
        );
    }

    #[test]
    fn differences_are_found() {
        assert_eq!(first_difference(&[1, 2, 3], &[1, 2, 3]), None);
        assert_eq!(first_difference(&[1, 5, 3], &[1, 2, 3]), Some(1));
        assert_eq!(first_difference(&[1, 2], &[1, 2, 3]), Some(2));
        let offsets = [0u32, 2, 2, 5];
        let err = check::<i32, u32>(
            "x",
            (&[1, 2, 3, 4, 9], None),
            (&[1, 2, 3, 4, 5], None),
            &offsets,
        )
        .unwrap_err();
        assert!(err.contains("key 4 (segment 2, 2..5)"), "{err}");
        let err = check::<i32, u32>(
            "x",
            (&[1, 2, 3], Some(&[0, 2, 1])),
            (&[1, 2, 3], Some(&[0, 1, 2])),
            &[0, 3],
        )
        .unwrap_err();
        assert!(err.contains("value 1 (segment 0, 0..3)"), "{err}");
    }
}
