//! `mgpu bench`: throughput of a primitive against a device memcpy of the same size and against
//! CUB, all measured in the same run (CUDA events, warm-up, median). Tables on stdout (with the
//! tuning in effect on every row), `--json` / `--csv` for programs, `--chart` for SVG charts, a
//! progress bar on stderr.

use crate::output::{self, Record};
use crate::peers::Peer;
use mgpu::{Arithmetic, Buffer, Comparator, Context, Element, Map, Op, ScanOptions};
use std::time::Instant;

struct Args {
    primitive: String,
    sizes: std::ops::RangeInclusive<u32>,
    types: Vec<String>,
    reps: usize,
    csv: Option<String>,
    peer: bool,
    deterministic: bool,
    /// `--transform square`: also the fused transform-reduce / transform-scan of `x * x`, and the
    /// same on the squares materialized first.
    transform: bool,
    /// `--offset K`: run on views starting K elements into their buffers (K = 1: not 16-byte
    /// aligned).
    offset: usize,
    /// `--chart DIR`: write an SVG chart per primitive and type there.
    chart: Option<std::path::PathBuf>,
}

/// The primitives `mgpu bench` measures.
pub(crate) const PRIMITIVES: &[&str] = &[
    "reduce",
    "scan",
    "sort",
    "merge",
    "select",
    "partition",
    "unique",
    "rle",
    "reduce-by-key",
    "segreduce",
    "spmv",
];
/// Those of the compaction family (bench_compact.rs).
const COMPACTION: &[&str] = &["select", "partition", "unique", "rle", "reduce-by-key"];
/// CSR segmented reduction and SpMV (bench_segreduce.rs).
const SEGMENTED: &[&str] = &["segreduce", "spmv"];

/// `mgpu bench`'s help beyond the one-line summary.
pub const LONG_ABOUT: &str = "\
GPU benchmark against a device memcpy and CUB (when nvcc is present: DeviceReduce, DeviceScan,
DeviceMergeSort and DeviceRadixSort, DeviceMerge).

The compaction family (select, partition, unique, rle, reduce-by-key; i32, i64) runs selection
rates 0..100% and mean run lengths 1..500, in and out of place, against CUB's DeviceSelect,
DevicePartition, DeviceRunLengthEncode and DeviceReduce::ReduceByKey.

segreduce (CSR segmented sum; i32 by default, also i64, f32, f64) runs segment lengths fixed 1, 2,
20, 500, 5000, uniform with mean 500, power-law, one segment and 50% empty, against CUB's
DeviceSegmentedReduce::Sum. spmv (y = A * x; f32 and f64; --sizes: log2 of the nonzeros) runs
random rows (mean 32 nonzeros), power-law rows, and the 2-D 5-point and 3-D 7-point Poisson
stencils, against cuSPARSE's SpMV (CSR_ALG1). Both report the one-shot call (validation and
partition included) and the apply after a plan, and a memcpy of the same bytes; sizes up to 2^30.

Every row names the tuning it ran with (NTxVTxOCC), and the header the tuning file in effect
(MGPU_TUNING, else the default location ~/.config/mgpu/tuning.txt, else the built-in tables; see
`mgpu tune`). --json prints the rows as a JSON array on stdout instead of the tables; --csv FILE
writes them as CSV; --chart DIR draws throughput against size as SVG. A progress bar is drawn on
stderr when it is a terminal.";

/// Every element type `--types` accepts (which of them a primitive supports is checked when it
/// runs).
const TYPES: &[&str] = &["i32", "i64", "u32", "u64", "f32", "f64", "u8", "u16"];

/// `mgpu bench`'s command line.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The primitive to measure
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(PRIMITIVES))]
    primitive: String,
    /// Sizes, log2 of the element count: A..B or one A (at most 32) [default: 16..28; 24 with
    /// --quick]
    #[arg(long, value_name = "A..B", value_parser = parse_sizes)]
    sizes: Option<std::ops::RangeInclusive<u32>>,
    /// Element types, comma-separated (default i32,i64,f32,f64; i32,i64 for the compaction
    /// family; i32 for segreduce; f32,f64 for spmv); also u32, u64, and u8, u16 for reduce and
    /// scan (no CUB peer for those two)
    #[arg(
        long,
        value_name = "TYPES",
        value_delimiter = ',',
        value_parser = clap::builder::PossibleValuesParser::new(TYPES),
        hide_possible_values = true
    )]
    types: Vec<String>,
    /// Timed runs per measurement, of which the median is reported (at least 10) [default: 20;
    /// 10 with --quick]
    #[arg(long, value_name = "N")]
    reps: Option<usize>,
    /// A short run: one moderate size (2^24) and 10 runs per measurement, unless --sizes or
    /// --reps say otherwise
    #[arg(long)]
    quick: bool,
    /// Also write the results to FILE as CSV
    #[arg(long, value_name = "FILE")]
    csv: Option<String>,
    /// Print the results as a JSON array on stdout instead of the tables
    #[arg(long)]
    json: bool,
    /// Write an SVG chart per primitive and type (throughput vs. size: mgpu, the peers, memcpy)
    /// into DIR
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "bench-charts")]
    chart: Option<std::path::PathBuf>,
    /// Skip the CUB comparison (do not build the peer)
    #[arg(long)]
    no_peer: bool,
    /// Deterministic (reduce-then-scan) scan
    #[arg(long)]
    deterministic: bool,
    /// `square` adds x * x fused into the load (-sq, vs CUB's TransformReduce) and materialized
    /// first (-sqmat)
    #[arg(long, value_name = "FN")]
    transform: Option<Transform>,
    /// Run on views K elements into their buffers (@+K; K = 1: not 16-byte aligned)
    #[arg(long, value_name = "K", default_value_t = 0)]
    offset: usize,
}

/// `--transform`'s functions.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Transform {
    /// x * x
    Square,
}

/// `--sizes A..B` (or `A`): log2 sizes, at most 32.
fn parse_sizes(v: &str) -> Result<std::ops::RangeInclusive<u32>, String> {
    let (lo, hi) = v.split_once("..").unwrap_or((v, v));
    let p = |s: &str| {
        s.parse::<u32>()
            .map_err(|_| format!("bad sizes `{v}` (e.g. 16..28)"))
    };
    let sizes = p(lo)?..=p(hi)?;
    if *sizes.end() > 32 {
        return Err("sizes are log2 of the element count, at most 32".into());
    }
    Ok(sizes)
}

impl From<BenchArgs> for Args {
    fn from(b: BenchArgs) -> Args {
        let compaction = COMPACTION.contains(&b.primitive.as_str());
        let types = if !b.types.is_empty() {
            b.types
        } else if compaction {
            vec!["i32".into(), "i64".into()]
        } else if b.primitive == "segreduce" {
            vec!["i32".into()]
        } else if b.primitive == "spmv" {
            vec!["f32".into(), "f64".into()]
        } else {
            ["i32", "i64", "f32", "f64"].map(String::from).to_vec()
        };
        let (default_sizes, default_reps) = if b.quick {
            (24..=24, 10)
        } else {
            (16..=28, 20)
        };
        Args {
            primitive: b.primitive,
            sizes: b.sizes.unwrap_or(default_sizes),
            types,
            reps: b.reps.unwrap_or(default_reps).max(10),
            csv: b.csv,
            peer: !b.no_peer,
            deterministic: b.deterministic,
            transform: matches!(b.transform, Some(Transform::Square)),
            offset: b.offset,
            chart: b.chart,
        }
    }
}

/// Elements the bench fills with cheap pseudo-random values (never zeros).
trait BenchElement: Element + Arithmetic {
    /// A value for reduce and scan: integers small (in 0..1000), so that sums stay exact.
    fn from_bits(x: u64) -> Self;
    /// A key for sort and merge: uniform over the type's whole range for integers (as the CUB
    /// peer's keys are: the key distribution decides how merges split), like from_bits for
    /// floats.
    fn key_from_bits(x: u64) -> Self {
        Self::from_bits(x)
    }
}
impl BenchElement for i32 {
    fn from_bits(x: u64) -> Self {
        (x % 1000) as i32
    }
    fn key_from_bits(x: u64) -> Self {
        x as i32
    }
}
impl BenchElement for i64 {
    fn from_bits(x: u64) -> Self {
        (x % 1000) as i64
    }
    fn key_from_bits(x: u64) -> Self {
        x as i64
    }
}
/// Unsigned integers: the low bits of `x` (sums wrap around, exactly).
macro_rules! unsigned_bench_elements {
    ($($t:ty),*) => {$(
        impl BenchElement for $t {
            fn from_bits(x: u64) -> Self {
                x as $t
            }
        }
    )*};
}
unsigned_bench_elements!(u8, u16, u32, u64);
impl BenchElement for f32 {
    fn from_bits(x: u64) -> Self {
        (x >> 40) as f32 / (1u64 << 24) as f32
    }
}
impl BenchElement for f64 {
    fn from_bits(x: u64) -> Self {
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random<T: BenchElement>(n: usize) -> Vec<T> {
    xorshift(n).map(T::from_bits).collect()
}

fn random_keys<T: BenchElement>(n: usize) -> Vec<T> {
    xorshift(n).map(T::key_from_bits).collect()
}

fn xorshift(n: usize) -> impl Iterator<Item = u64> {
    let mut s = 0x9e3779b97f4a7c15u64;
    (0..n).map(move |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

pub(crate) struct Row {
    pub variant: String,
    pub ty: String,
    pub log2: u32,
    pub ms: f64,
    /// Bytes that must move (read once, written once).
    pub bytes: f64,
    pub memcpy_ms: f64,
    /// (peer name, median ms), in the peers' column order.
    pub peers: Vec<(&'static str, Option<f64>)>,
}

pub(crate) fn time<F: FnMut() -> mgpu::Result<()>>(
    ctx: &Context,
    reps: usize,
    mut f: F,
) -> Result<f64, String> {
    time_with_setup(ctx, reps, &mut (), |_| Ok(()), |_| f())
}

/// Median GPU time of `work`; `setup` runs before each repetition, outside the timed region.
/// Both get the mutable `state` (the buffers being sorted).
pub(crate) fn time_with_setup<S, A, F>(
    ctx: &Context,
    reps: usize,
    state: &mut S,
    mut setup: A,
    mut work: F,
) -> Result<f64, String>
where
    A: FnMut(&mut S) -> mgpu::Result<()>,
    F: FnMut(&mut S) -> mgpu::Result<()>,
{
    for _ in 0..3 {
        setup(state)
            .and_then(|_| work(state))
            .map_err(|e| e.to_string())?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        setup(state).map_err(|e| e.to_string())?;
        times.push(ctx.time_ms(|| work(state)).map_err(|e| e.to_string())?);
    }
    Ok(median(times))
}

fn peer_ms(peer: Option<&Peer>, algo: &str, ty: &str, n: u64, reps: usize) -> Option<f64> {
    let p = peer?;
    match p.run(algo, ty, n, reps as u32) {
        Ok(r) => {
            if r.check != "ok" {
                output::note(format!(
                    "warning: CUB {algo} {ty} n={n}: self-check {}",
                    r.check
                ));
            }
            Some(r.median_ms)
        }
        Err(e) => {
            output::note(format!("warning: CUB peer {algo} failed: {e}"));
            None
        }
    }
}

pub(crate) fn report_first_use(
    what: &str,
    ty: &str,
    t: Instant,
    before: mgpu::cuda::jit::JitStats,
) {
    let after = mgpu::cuda::jit::stats();
    output::note(format!(
        "{what} {ty}: first call {:.1} ms ({} kernels compiled in {} ms, {} from the disk cache)",
        t.elapsed().as_secs_f64() * 1e3,
        after.compiles - before.compiles,
        after.compile_ms - before.compile_ms,
        after.disk_hits - before.disk_hits
    ));
}

/// Reduce and scan.
fn bench_type<T: BenchElement>(
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
            let cub = cub_algo.and_then(|c| peer_ms(peer, c, ty, n as u64, a.reps));
            let row = Row {
                bytes: traffic(&variant, n, std::mem::size_of::<T>()),
                variant,
                ty: ty.to_string(),
                log2,
                ms,
                memcpy_ms,
                peers: vec![("cub", cub)],
            };
            print_row(&row);
            rows.push(row);
        }
        output::tick("");
    }
    Ok(rows)
}

/// Sort keys and pairs (the unsorted input is restored before each timed run), and merge.
fn bench_sort_type<T: BenchElement>(
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
            let mut peers = vec![("cub", peer_ms(peer, cub_algo, ty, n as u64, a.reps))];
            if !radix_algo.is_empty() {
                peers.push(("radix", peer_ms(peer, radix_algo, ty, n as u64, a.reps)));
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
                bytes: traffic(variant, n, std::mem::size_of::<T>()),
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

/// Bytes that must move for `n` elements of `size` bytes: reduce reads them; scan, sort (per
/// pass) and merge read and write them.
fn traffic(variant: &str, n: usize, size: usize) -> f64 {
    let passes = if variant.starts_with("reduce") { 1 } else { 2 };
    (passes * n * size) as f64
}

/// A row of the table, with the tuning it ran with as the last column.
pub(crate) fn print_row(r: &Row) {
    let n = (1u64 << r.log2) as f64;
    let mut peers = String::new();
    for (_, ms) in &r.peers {
        peers += &match ms {
            Some(p) => format!(" {p:>9.4} {:>7.3}", p / r.ms),
            None => format!(" {:>9} {:>7}", "-", "-"),
        };
    }
    output::line(format!(
        "{:<29} {:<4} 2^{:<3} {:>9.4} {:>9.2} {:>8.1} {:>9.4} {:>7.3}{peers} {:>10}",
        r.variant,
        r.ty,
        r.log2,
        r.ms,
        n / r.ms / 1e6,
        r.bytes / r.ms / 1e6,
        r.memcpy_ms,
        r.memcpy_ms / r.ms,
        crate::tune::tuning_label(&r.variant, &r.ty),
    ));
}

impl Row {
    /// The row as a record of `primitive`'s bench.
    fn record(&self, primitive: &str) -> Record {
        Record {
            primitive: primitive.to_string(),
            variant: self.variant.clone(),
            ty: self.ty.clone(),
            log2: self.log2,
            items: (1u64 << self.log2) as f64,
            ms: self.ms,
            bytes: self.bytes,
            memcpy_ms: self.memcpy_ms,
            peers: self
                .peers
                .iter()
                .map(|(name, ms)| (name.to_string(), *ms))
                .collect(),
            extra: Vec::new(),
            tuning: crate::tune::tuning_label(&self.variant, &self.ty),
        }
    }
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    let json = args.json;
    output::set_json(json);
    let a = Args::from(args);
    // A tuning file that cannot be used fails here, with its name, rather than in the first call.
    let (source, _) = mgpu::tuning::check().map_err(|e| e.to_string())?;
    let ctx = Context::new().map_err(|e| e.to_string())?;
    crate::tune::set_arch(ctx.arch().unwrap_or(90));
    if !ctx.is_gpu() {
        output::note("warning: no GPU; timing the CPU backend (wall clock), no peer");
    }
    let peer = if a.peer && ctx.is_gpu() {
        match Peer::build() {
            Ok(Some(p)) => Some(p),
            Ok(None) => {
                output::note("note: nvcc not found; no CUB comparison");
                None
            }
            Err(e) => {
                output::note(format!(
                    "warning: building the CUB peer failed; no CUB comparison:\n{e}"
                ));
                None
            }
        }
    } else {
        None
    };
    let algo = if a.primitive == "scan" && a.deterministic {
        " (reduce-then-scan)"
    } else {
        ""
    };
    output::line(format!(
        "# mgpu bench {}{algo} on {}, median of {} runs (CUDA events), ratios > 1: mgpu faster",
        a.primitive,
        ctx.description(),
        a.reps
    ));
    output::line(format!(
        "# tuning: {source}; each row's NTxVTxOCC in the last column"
    ));
    let steps = (a.types.len() * a.sizes.clone().count()) as u64;
    let _bar = output::Progress::new(steps, &format!("bench {}", a.primitive));
    let records = if SEGMENTED.contains(&a.primitive.as_str()) {
        crate::bench_segreduce::run(
            &ctx,
            &a.primitive,
            &a.types,
            a.sizes.clone(),
            a.reps,
            a.csv.as_deref(),
            peer.as_ref(),
        )?
    } else {
        let rows = bench_rows(&ctx, &a, peer.as_ref())?;
        if let Some(path) = &a.csv {
            write_csv(path, &rows)?;
        }
        rows.iter().map(|r| r.record(&a.primitive)).collect()
    };
    drop(_bar);
    if json {
        output::print_json(&records, &source.to_string());
    }
    if let Some(dir) = &a.chart {
        for path in crate::chart::write(dir, &records)? {
            output::note(format!("chart: {}", path.display()));
        }
    }
    Ok(())
}

/// The table's rows for every primitive but segreduce and spmv.
fn bench_rows(ctx: &Context, a: &Args, peer: Option<&Peer>) -> Result<Vec<Row>, String> {
    let mut header = format!(
        "{:<29} {:<4} {:<5} {:>9} {:>9} {:>8} {:>9} {:>7} {:>9} {:>7}",
        "prim",
        "type",
        "n",
        "mgpu_ms",
        "Gitems/s",
        "GB/s",
        "memcpy_ms",
        "vs_mcpy",
        "cub_ms",
        "vs_cub"
    );
    if a.primitive == "sort" {
        header += &format!(" {:>9} {:>7}", "radix_ms", "vs_radx");
    }
    header += &format!(" {:>10}", "tuning");
    output::line(header);
    let sorting = a.primitive == "sort" || a.primitive == "merge";
    let mut rows = Vec::new();
    if COMPACTION.contains(&a.primitive.as_str()) {
        for ty in &a.types {
            for log2 in a.sizes.clone() {
                let prim = a.primitive.as_str();
                output::working_on(format!("{prim} {ty} 2^{log2}"));
                let r = match ty.as_str() {
                    "i32" => crate::bench_compact::bench::<i32>(ctx, prim, ty, log2, a.reps, peer),
                    "i64" => crate::bench_compact::bench::<i64>(ctx, prim, ty, log2, a.reps, peer),
                    other => Err(format!(
                        "bench: unsupported type `{other}` for {prim} (i32, i64)"
                    )),
                }?;
                rows.extend(r);
                output::tick("");
            }
        }
        return Ok(rows);
    }
    for ty in &a.types {
        let p = peer;
        let r = match (ty.as_str(), sorting) {
            ("i32", false) => bench_type::<i32>(ctx, a, ty, p),
            ("i64", false) => bench_type::<i64>(ctx, a, ty, p),
            ("u32", false) => bench_type::<u32>(ctx, a, ty, p),
            ("u64", false) => bench_type::<u64>(ctx, a, ty, p),
            ("f32", false) => bench_type::<f32>(ctx, a, ty, p),
            ("f64", false) => bench_type::<f64>(ctx, a, ty, p),
            // No CUB peer for sub-word types: the harness is built for the four types above.
            ("u8", false) => bench_type::<u8>(ctx, a, ty, None),
            ("u16", false) => bench_type::<u16>(ctx, a, ty, None),
            ("i32", true) => bench_sort_type::<i32>(ctx, a, ty, p),
            ("i64", true) => bench_sort_type::<i64>(ctx, a, ty, p),
            ("u32", true) => bench_sort_type::<u32>(ctx, a, ty, p),
            ("u64", true) => bench_sort_type::<u64>(ctx, a, ty, p),
            ("f32", true) => bench_sort_type::<f32>(ctx, a, ty, p),
            ("f64", true) => bench_sort_type::<f64>(ctx, a, ty, p),
            (other, _) => Err(format!(
                "bench: unsupported type `{other}` (i32, i64, u32, u64, f32, f64; u8 and u16 \
                 for reduce and scan)"
            )),
        }?;
        rows.extend(r);
    }
    Ok(rows)
}

/// `--csv FILE`: one line per row (the tuning last).
fn write_csv(path: &str, rows: &[Row]) -> Result<(), String> {
    let mut s = String::from("primitive,type,log2n,mgpu_ms,memcpy_ms,cub_ms,radix_ms,tuning\n");
    for r in rows {
        let peer = |name: &str| -> String {
            r.peers
                .iter()
                .find(|p| p.0 == name)
                .and_then(|p| p.1)
                .map(|v| v.to_string())
                .unwrap_or_default()
        };
        s += &format!(
            "{},{},{},{},{},{},{},{}\n",
            r.variant,
            r.ty,
            r.log2,
            r.ms,
            r.memcpy_ms,
            peer("cub"),
            peer("radix"),
            crate::tune::tuning_label(&r.variant, &r.ty)
        );
    }
    std::fs::write(path, s).map_err(|e| format!("writing {path}: {e}"))
}
