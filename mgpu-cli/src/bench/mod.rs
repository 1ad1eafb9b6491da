//! `mgpu bench`: throughput of a primitive against a device memcpy of the same size and against
//! CUB, all measured in the same run (CUDA events, warm-up, median). Tables on stdout (with the
//! tuning in effect on every row), `--json` / `--csv` for programs, `--chart` for SVG charts, a
//! progress bar on stderr.
//!
//! This file parses the command line and dispatches; `harness` holds what every bench shares
//! (timing, inputs, the peer runner, rows); `reduce_scan`, `sort`, `compact`, `segreduce`,
//! `segsort` and `topk` measure their families and use only the harness (`segsort` and `topk` also
//! segreduce's segment generator). `suite` (`mgpu bench suite`) picks the headline rows of every
//! family, has them measured through this file's dispatch, and writes them as one Markdown table.

mod compact;
mod dist;
pub(crate) mod harness;
mod reduce_scan;
mod segreduce;
mod segsort;
mod sort;
mod suite;
mod topk;

use crate::output::{self, Record};
use crate::peers::Peer;
use crate::primitives::TYPES;
use crate::primitives::{
    bench_types, COMPACTION, DIST, PRIMITIVES, SEGMENTED, SEGSORT, SUITE, TOPK,
};
use harness::{Args, KeyDist, Placement, Row, Scaling};
use mgpu::Context;

/// `mgpu bench`'s help beyond the one-line summary.
pub const LONG_ABOUT: &str = "\
GPU benchmark against a device memcpy and CUB (when nvcc is present: DeviceReduce, DeviceScan,
DeviceMergeSort and DeviceRadixSort, DeviceMerge).

sort runs the merge sort (sort-keys, sort-pairs; SortAlgorithm::Merge; i32, i64, f32, f64 unless
--types names others) against CUB's DeviceMergeSort (cub_ms) and DeviceRadixSort (radix_ms), and
the radix sort (radix-keys, radix-pairs with u32 values; SortAlgorithm::Radix; u8, u16, i32, u32,
f32, i64, u64, f64) against DeviceRadixSort; radix runs the radix rows alone. The radix rows'
vs_lim (JSON: vs_limit, limit_ms) is the time their traffic takes at the memcpy's bandwidth over
theirs: the keys read once for the histogram, then read and written once per 8-bit pass, with the
values (9n x 4 bytes for 32-bit keys). --dist runs the radix rows on other keys: equal (all one
key), few (4 distinct keys), sorted, reversed, bits20 (key & 0xFFFFF in each word; sub-word types
at full width), named radix-keys/DIST; CUB generates its own uniform keys, so those rows have no
peer.

The compaction family (select, partition, unique, rle, reduce-by-key; i32, i64) runs selection
rates 0..100% (predicate `bits % 100 < rate`) and the one-instruction predicate `(x & 1) == 0`
(rows named even), and mean run lengths 1..500, in and out of place, against CUB's DeviceSelect
(If, Flagged, Unique, UniqueByKey), DevicePartition, DeviceRunLengthEncode and
DeviceReduce::ReduceByKey.

segreduce (CSR segmented sum; i32 by default, also i64, f32, f64) runs segment lengths fixed 1, 2,
20, 500, 5000, uniform with mean 2 and 500, power-law, one segment and 50% empty, against CUB's
DeviceSegmentedReduce::Sum. spmv (y = A * x; f32 and f64; --sizes: log2 of the nonzeros) runs
random rows (mean 32 nonzeros), power-law rows, and the 2-D 5-point and 3-D 7-point Poisson
stencils, against cuSPARSE's SpMV (CSR_ALG1). Both report the one-shot call (validation and
partition included) and the apply after a plan, and a memcpy of the same bytes; sizes up to 2^30.

segsort (the segmented sort, stable, Comparator::less, u32 offsets; keys, and pairs with u32
values; i32 and f32 unless --types names others of i32, i64, u32, u64, f32, f64; 2^26 items
unless --sizes) runs the segment lengths of segreduce but uniform (fixed 1, 2, 20, 500, 5000,
power-law, one segment, 50% empty) against CUB's DeviceSegmentedSort::StableSortKeys and
StableSortPairs (cub_ms, vs_cub) and DeviceSegmentedRadixSort::SortKeys and SortPairs (radix_ms,
vs_radx; up to 2^22 segments, past which it takes seconds a call) on the same keys and segments,
and a memcpy of the same bytes; the one-segment rows also time mgpu's own whole-array sort and
sort_pairs of the same data (own_ms; seg/own = mgpu_ms / own_ms). Each row is checked against the CPU backend's segmented sort before the timing, and every
timed run sorts the unsorted input, restored outside the timing.

topk (f32 unless --types names others of i32, i64, u32, u64, f32, f64; 2^27 and 2^28 items
unless --sizes) runs top_k of the whole array and segmented_top_k of rows of 128, 1024, 4096 and
32768 keys, for k = 1, 8, 64, 1024 (the k smallest, sorted), against CUB's DeviceRadixSort of the
whole array and DeviceSegmentedSort::StableSortKeys of every row (i32 and f32) on the same keys,
whose take of k keys a row is not timed; each row checked against the CPU backend's sort first.

dist (mgpu::dist; i32 by default; 2^28 items unless --sizes) runs the distributed sort (keys, and
pairs with u32 values), scan and reduce against the single-context call on rank 0's device, for
each rank count of --ranks (default 1,2): strong scaling (2^S items in all) and weak (2^S per
rank; --scaling strong or weak for one alone). --placement one-gpu (default: ranks on streams of
GPU 0), gpus (GPUs 0..N through NCCL) or env (this process's rank of a torchrun launch). Wall-clock times from a barrier to the slowest
rank's end; the sort's phases (local sort, splitters, exchange, merge; the slowest rank's), the
bytes sent, and the communicator's all-to-all of the same bytes alone (the ceiling, GB/s).

suite runs the headline rows of every primitive, each at 2^24 and 2^28 (the two ends of --sizes;
--quick: 2^24 alone), against its peer, and prints them as one Markdown table on stdout (the
benches' tables go to stderr; --markdown FILE also writes it there), headed by the date (UTC), the
device and the command line: mgpu ms, the peer and its ms, vs peer (peer ms / mgpu ms, > 1: mgpu
faster) and vs memcpy (as vs_mcpy). Its 44 rows: reduce and scan on i32, f32; radix-keys and
radix-pairs on i32, u64, f32; sort-keys (merge sort) i32; merge i32; select-if/50% and even i32;
unique/run10 and reduce-by-key/run10 i32; segreduce fixed-20, fixed-500, powerlaw i32 (one-shot);
spmv random-32 f32 (one-shot, unchecked one-shot and apply). About 2-3 minutes on an H100 with the CUB peer and the
kernels cached, most of it on the host (generating and checking the 2^28 inputs, 42 peer
processes); a cold kernel cache adds about 20 s of NVRTC, and a machine without the built peer its
nvcc build (minutes). It does not take --types, --csv, --transform, --offset, --deterministic or
--dist.

Every row names the tuning it ran with (NTxVTxOCC), and the header the tuning file in effect
(MGPU_TUNING, else the default location ~/.config/mgpu/tuning.txt, else the built-in tables; see
`mgpu tune`). --json prints the rows as a JSON array on stdout instead of the tables; --csv FILE
writes them as CSV; --chart DIR draws throughput against size as SVG. A progress bar is drawn on
stderr when it is a terminal.";

/// `mgpu bench`'s command line.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The primitive to measure; `suite`: the headline rows of every primitive; `dist`: sort,
    /// scan and reduce across ranks; `topk`: top-k, whole and per row
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(
        PRIMITIVES.iter().copied().chain([SUITE, DIST, TOPK])
    ))]
    primitive: String,
    /// Sizes, log2 of the element count: A..B or one A (at most 32) [default: 16..28; 24 with
    /// --quick; segsort: 26; topk: 27..28; suite: its two ends, default 24..28]
    #[arg(long, value_name = "A..B", value_parser = parse_sizes)]
    sizes: Option<std::ops::RangeInclusive<u32>>,
    /// Element types, comma-separated (default i32,i64,f32,f64; u8,u16,i32,u32,f32,i64,u64,f64
    /// for sort and radix, whose merge rows take i32,i64,f32,f64 of them; i32,i64 for the
    /// compaction family; i32 for segreduce; i32,f32 for segsort; f32,f64 for spmv); also u32,
    /// u64, and u8, u16 for
    /// reduce, scan, sort and radix (no CUB peer for those two but its radix sort)
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
    /// suite: also write the summary (Markdown) to FILE
    #[arg(long, value_name = "FILE")]
    markdown: Option<std::path::PathBuf>,
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
    /// Key distributions of the radix rows (sort, radix), comma-separated: uniform, equal, few (4
    /// distinct keys), sorted, reversed, bits20 (key & 0xFFFFF; full width under 32 bits); rows
    /// of other than uniform keys are named radix-keys/DIST and have no CUB peer [default:
    /// uniform]
    #[arg(
        long,
        value_name = "DISTS",
        value_delimiter = ',',
        value_enum,
        hide_possible_values = true
    )]
    dist: Vec<KeyDist>,
    /// Only these rows, comma-separated, named as in the table's first column (segsort-keys/fixed-1),
    /// as `bench suite` picks its rows [default: every row]
    #[arg(long, value_name = "ROWS", value_delimiter = ',')]
    rows: Vec<String>,
    /// dist: the rank counts, comma-separated [default: 1,2]
    #[arg(long, value_name = "N,..", value_delimiter = ',')]
    ranks: Vec<usize>,
    /// dist: where the ranks run
    #[arg(long, value_enum, default_value = "one-gpu")]
    placement: Placement,
    /// dist: strong scaling (2^S items in all), weak (2^S per rank), or both
    #[arg(long, value_enum, default_value = "both")]
    scaling: Scaling,
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
        let types_given = !b.types.is_empty();
        let types = if types_given {
            b.types
        } else {
            let (_, defaults) = bench_types(&b.primitive);
            defaults.iter().map(|t| t.to_string()).collect()
        };
        let (default_sizes, default_reps) = match (b.quick, b.primitive.as_str()) {
            (true, _) => (24..=24, 10),
            (false, DIST) => (28..=28, 10),
            (false, SUITE) => (24..=28, 20),
            (false, SEGSORT) => (26..=26, 20),
            (false, TOPK) => (27..=28, 20),
            (false, _) => (16..=28, 20),
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
            types_given,
            dist: if b.dist.is_empty() {
                vec![KeyDist::Uniform]
            } else {
                b.dist
            },
            // Leaked once: the rows live as long as the command.
            only: (!b.rows.is_empty()).then(|| {
                let rows: Vec<&'static str> = b.rows.into_iter().map(|r| &*r.leak()).collect();
                &*rows.leak()
            }),
            ranks: if b.ranks.is_empty() {
                vec![1, 2]
            } else {
                b.ranks
            },
            placement: b.placement,
            scaling: b.scaling,
        }
    }
}

/// The first of the options that `mgpu bench suite` does not take (it runs fixed rows) that
/// `b` gives.
fn not_for_the_suite(b: &BenchArgs) -> Option<&'static str> {
    let given = [
        ("--types", !b.types.is_empty()),
        ("--csv", b.csv.is_some()),
        ("--transform", b.transform.is_some()),
        ("--offset", b.offset > 0),
        ("--deterministic", b.deterministic),
    ];
    given.into_iter().find(|g| g.1).map(|g| g.0)
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    let json = args.json;
    output::set_json(json);
    if !args.dist.is_empty() && !matches!(args.primitive.as_str(), "sort" | "radix") {
        return Err(format!(
            "bench: --dist is for the radix rows of sort and radix, not {}",
            args.primitive
        ));
    }
    let dist_flags = !args.ranks.is_empty()
        || args.placement != Placement::OneGpu
        || args.scaling != Scaling::Both;
    if dist_flags && args.primitive != DIST {
        return Err("bench: --ranks, --placement and --scaling are for dist".into());
    }
    if args.ranks.contains(&0) {
        return Err("bench dist: a group needs at least one rank".into());
    }
    let suite = args.primitive == SUITE;
    if let Some(flag) = not_for_the_suite(&args).filter(|_| suite) {
        return Err(format!(
            "bench suite: {flag} is not for the suite (it runs fixed rows; see `mgpu bench \
             --help`)"
        ));
    }
    if args.markdown.is_some() && !suite {
        return Err("bench: --markdown is for `mgpu bench suite`".into());
    }
    // The suite's stdout holds its summary alone.
    output::set_tables_on_stderr(suite);
    let markdown = args.markdown.clone();
    let a = Args::from(args);
    // A tuning file that cannot be used fails here, with its name, rather than in the first call.
    let (source, _) = mgpu::tuning::check().map_err(|e| e.to_string())?;
    let ctx = Context::new().map_err(|e| e.to_string())?;
    harness::set_device(
        ctx.arch().unwrap_or(90),
        ctx.device_info().map_or(132, |d| d.sm_count as u64),
    );
    if !ctx.is_gpu() {
        output::note("warning: no GPU; timing the CPU backend (wall clock), no peer");
    }
    let peer = if a.peer && ctx.is_gpu() && a.primitive != DIST {
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
    let clock = if a.primitive == DIST {
        "wall clock"
    } else {
        "CUDA events"
    };
    output::line(format!(
        "# mgpu bench {}{algo} on {}, median of {} runs ({clock}), ratios > 1: mgpu faster",
        a.primitive,
        ctx.description(),
        a.reps
    ));
    output::line(format!(
        "# tuning: {source}; each row's NTxVTxOCC in the last column"
    ));
    let records = if suite {
        let bench = |run: &Args| measure(&ctx, run, peer.as_ref());
        let (device, tuning) = (ctx.description(), source.to_string());
        suite::run(&a, &device, &tuning, markdown.as_deref(), bench)?
    } else {
        let steps = (a.types.len() * a.sizes.clone().count()) as u64;
        let _bar = output::Progress::new(steps, &format!("bench {}", a.primitive));
        let records = measure(&ctx, &a, peer.as_ref())?;
        if a.only.is_some() && records.is_empty() {
            return Err(format!(
                "bench {}: --rows named no row of it (name them as in the table's first column, \
                 for example segsort-keys/fixed-1)",
                a.primitive
            ));
        }
        records
    };
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

/// The bench of `a.primitive` (its family's), its table printed as it goes and its CSV written
/// where asked: the records of its rows.
fn measure(ctx: &Context, a: &Args, peer: Option<&Peer>) -> Result<Vec<Record>, String> {
    if a.primitive == DIST {
        return dist::run(ctx, a, &a.ranks, a.placement);
    }
    if SEGMENTED.contains(&a.primitive.as_str()) {
        return segreduce::run(ctx, a, peer);
    }
    if a.primitive == SEGSORT {
        return segsort::run(ctx, a, peer);
    }
    if a.primitive == TOPK {
        return topk::run(ctx, a, peer);
    }
    harness::print_header(a.primitive == "sort" || a.primitive == "radix");
    let rows = if COMPACTION.contains(&a.primitive.as_str()) {
        compact::rows(ctx, a, peer)?
    } else {
        rows(ctx, a, peer)?
    };
    if let Some(path) = &a.csv {
        harness::write_csv(path, &rows)?;
    }
    Ok(rows.iter().map(|r| r.record(&a.primitive)).collect())
}

/// The rows of reduce, scan, sort, radix and merge: every type (each bench runs every size).
fn rows(ctx: &Context, a: &Args, peer: Option<&Peer>) -> Result<Vec<Row>, String> {
    use reduce_scan::bench_type;
    use sort::bench_sort_type;
    let sorting = matches!(a.primitive.as_str(), "sort" | "radix" | "merge");
    let mut rows = Vec::new();
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
            // The CUB peer sorts u8 and u16 keys by radix only (bench/sort.rs asks it no more).
            ("u8", true) => bench_sort_type::<u8>(ctx, a, ty, p),
            ("u16", true) => bench_sort_type::<u16>(ctx, a, ty, p),
            (other, _) => Err(format!(
                "bench: unsupported type `{other}` (i32, i64, u32, u64, f32, f64; u8 and u16 \
                 for reduce, scan, sort and radix)"
            )),
        }?;
        rows.extend(r);
    }
    Ok(rows)
}
