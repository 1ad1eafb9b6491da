//! What every bench shares: its inputs from random bits, the timing (CUDA events through the
//! library, warm-up, median), the peer runner, the first-use report, the table's rows and the
//! tuning each row ran with. It uses none of the per-family benches.

use crate::output::{self, Record};
use crate::peers::Peer;
use mgpu::tuning::{self, Family, Tuning};
use mgpu::{Arithmetic, Context, Element};
use std::sync::OnceLock;
use std::time::Instant;

/// A bench's settings: the command line with its defaults applied.
pub(crate) struct Args {
    pub primitive: String,
    pub sizes: std::ops::RangeInclusive<u32>,
    pub types: Vec<String>,
    pub reps: usize,
    pub csv: Option<String>,
    pub peer: bool,
    pub deterministic: bool,
    /// `--transform square`: also the fused transform-reduce / transform-scan of `x * x`, and the
    /// same on the squares materialized first.
    pub transform: bool,
    /// `--offset K`: run on views starting K elements into their buffers (K = 1: not 16-byte
    /// aligned).
    pub offset: usize,
    /// `--chart DIR`: write an SVG chart per primitive and type there.
    pub chart: Option<std::path::PathBuf>,
    /// Whether `--types` named the types (else the primitive's defaults: sort then runs its merge
    /// rows on the merge sort's usual types only).
    pub types_given: bool,
    /// `--dist`: the key distributions of the radix rows (sort, radix).
    pub dist: Vec<KeyDist>,
    /// The rows to measure, by variant name (`select-if/50%`, `segreduce/fixed-20`: what `mgpu
    /// bench suite` picks); None: every row of the primitive.
    pub only: Option<&'static [&'static str]>,
    /// dist: the rank counts (`--ranks`), and where the ranks run (`--placement`).
    pub ranks: Vec<usize>,
    pub placement: Placement,
    /// dist: strong scaling (2^S in all), weak (2^S per rank), or both (`--scaling`).
    pub scaling: Scaling,
}

impl Args {
    /// Whether the row `variant` is measured.
    pub(crate) fn measures(&self, variant: &str) -> bool {
        self.only.is_none_or(|o| o.contains(&variant))
    }

    /// Whether any measured row has `part` between its slashes (`50%`, `run10`): the benches
    /// that generate an input per rate or run length skip those no row needs.
    pub(crate) fn measures_part(&self, part: &str) -> bool {
        self.only
            .is_none_or(|o| o.iter().any(|v| v.split('/').any(|p| p == part)))
    }
}

/// Which scaling `mgpu bench dist` measures (`--scaling`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Scaling {
    /// 2^S items in all, whatever the ranks
    Strong,
    /// 2^S items per rank
    Weak,
    /// Both
    Both,
}

/// Where the ranks run (`--placement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Placement {
    /// Ranks on streams of GPU 0 (in process, no NCCL)
    OneGpu,
    /// One rank per GPU of this host, GPUs 0..N, through NCCL
    Gpus,
    /// This process's rank of a torchrun launch (RANK, WORLD_SIZE, LOCAL_RANK; NCCL)
    Env,
}

/// A distribution of sort keys (`--dist`; the radix rows of `mgpu bench sort | radix`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum KeyDist {
    /// Uniform random keys over the type's range (floats: [0, 1))
    Uniform,
    /// Every key the same
    Equal,
    /// 4 distinct keys, in random order
    Few,
    /// Uniform random keys, sorted ascending
    Sorted,
    /// Uniform random keys, sorted descending
    Reversed,
    /// 20 random low bits in each key's word (the raw bits: floats are denormals); types of
    /// under 32 bits keep their full width
    Bits20,
}

impl KeyDist {
    /// The variant's suffix: none for uniform keys, else `/name`.
    pub(crate) fn suffix(self) -> String {
        match self {
            KeyDist::Uniform => String::new(),
            _ => format!("/{}", self.name()),
        }
    }

    /// The name `--dist` takes.
    pub(crate) fn name(self) -> &'static str {
        match self {
            KeyDist::Uniform => "uniform",
            KeyDist::Equal => "equal",
            KeyDist::Few => "few",
            KeyDist::Sorted => "sorted",
            KeyDist::Reversed => "reversed",
            KeyDist::Bits20 => "bits20",
        }
    }

    /// `n` keys of this distribution, before any sorting: `Sorted` and `Reversed` are uniform
    /// keys that the bench sorts on the device.
    pub(crate) fn keys<T: BenchElement>(self, n: usize) -> Vec<T> {
        match self {
            KeyDist::Uniform | KeyDist::Sorted | KeyDist::Reversed => random_keys(n),
            KeyDist::Equal => vec![T::value_from_bits(0x9e37_79b9_7f4a_7c15); n],
            // k * 0x1111...: distinct in every type's bits (low byte, high bits).
            KeyDist::Few => xorshift(n)
                .map(|x| T::value_from_bits((1 + (x >> 32) % 4) * 0x1111_1111_1111_1111))
                .collect(),
            KeyDist::Bits20 => {
                let mask = if std::mem::size_of::<T>() >= 4 {
                    0xf_ffff
                } else {
                    u64::MAX
                };
                xorshift(n).map(|x| T::from_raw_bits(x & mask)).collect()
            }
        }
    }
}

/// Element types the benches generate from random bits.
pub(crate) trait BenchElement: Element + Arithmetic {
    /// 64 random bits as a value, like the peer harness's `value_from_bits`: integers their low
    /// bits (uniform over the type's range), floats uniform in [0, 1).
    fn value_from_bits(x: u64) -> Self;
    /// A value for reduce and scan: signed integers small (in 0..1000), so that sums stay exact;
    /// other types as `value_from_bits` (unsigned sums wrap around, exactly).
    fn small_from_bits(x: u64) -> Self {
        Self::value_from_bits(x)
    }
    /// `v as T` (small integers, stencil coefficients).
    fn from_f64(v: f64) -> Self;
    /// `self as f64` (checking against sums in f64).
    fn to_f64(self) -> f64;
    /// The value whose bits are the low bits of `x` (a float's raw bits; integers as
    /// `value_from_bits`).
    fn from_raw_bits(x: u64) -> Self {
        Self::value_from_bits(x)
    }
}

macro_rules! bench_elements {
    (signed: $($s:ty),*; unsigned: $($u:ty),*) => {
        $(impl BenchElement for $s {
            fn value_from_bits(x: u64) -> Self {
                x as $s
            }
            fn small_from_bits(x: u64) -> Self {
                (x % 1000) as $s
            }
            fn from_f64(v: f64) -> Self {
                v as $s
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        })*
        $(impl BenchElement for $u {
            fn value_from_bits(x: u64) -> Self {
                x as $u
            }
            fn from_f64(v: f64) -> Self {
                v as $u
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
        })*
    };
}
bench_elements!(signed: i32, i64; unsigned: u8, u16, u32, u64);

impl BenchElement for f32 {
    fn value_from_bits(x: u64) -> Self {
        (x >> 40) as f32 / (1u64 << 24) as f32
    }
    fn from_raw_bits(x: u64) -> Self {
        f32::from_bits(x as u32)
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl BenchElement for f64 {
    fn value_from_bits(x: u64) -> Self {
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
    fn from_raw_bits(x: u64) -> Self {
        f64::from_bits(x)
    }
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
}

/// `n` values for reduce and scan (`small_from_bits` of a xorshift sequence).
pub(crate) fn random<T: BenchElement>(n: usize) -> Vec<T> {
    xorshift(n).map(T::small_from_bits).collect()
}

/// `n` keys for sort and merge, over the whole range of integer types (as the CUB peer's keys
/// are: the key distribution decides how merges split).
pub(crate) fn random_keys<T: BenchElement>(n: usize) -> Vec<T> {
    xorshift(n).map(T::value_from_bits).collect()
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

/// The peer harness's generator (`rand_bits` in peers/cub_bench.cu), for the benches that give
/// the peer the same data: the `i`-th output of splitmix64 on `stream`.
pub(crate) fn rand_bits(stream: u64, i: u64) -> u64 {
    const SEED: u64 = 0x6D677075;
    const GAMMA: u64 = 0x9E3779B97F4A7C15;
    fn mix64(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    let start = mix64(SEED.wrapping_add(stream.wrapping_mul(GAMMA)));
    mix64(start.wrapping_add((i + 1).wrapping_mul(GAMMA)))
}

/// The first position where `got` and `want` differ (or their lengths do).
pub(crate) fn first_difference<T: PartialEq>(got: &[T], want: &[T]) -> Option<usize> {
    if got.len() != want.len() {
        return Some(got.len().min(want.len()));
    }
    got.iter().zip(want).position(|(g, w)| g != w)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Median GPU time of `f` over `reps` runs, after 3 warm-up runs.
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

/// What a peer measurement is asked for beside the algorithm, the type and the size.
#[derive(Clone, Copy)]
pub(crate) enum PeerParam<'a> {
    /// The harness's default.
    Default,
    /// Its numeric parameter: percent selected, mean run length.
    Number(u64),
    /// A word as its parameter, with nothing to check in the result (the selections' `even`).
    Word(&'a str),
    /// A geometry by name (segment distribution, matrix) and mgpu's checksum of it.
    Geometry(&'a str, &'a str),
}

/// The peer's median time for `algo` (`name`: CUB, cuSPARSE), if there is a peer and it ran. A
/// peer that fails is a warning (no peer column); one that generated another geometry is an
/// error, as the comparison would be meaningless.
pub(crate) fn peer_ms(
    peer: Option<&Peer>,
    name: &str,
    algo: &str,
    ty: &str,
    n: u64,
    reps: usize,
    param: PeerParam,
) -> Result<Option<f64>, String> {
    let Some(p) = peer else { return Ok(None) };
    // The argument, and how the warnings name it.
    let (arg, at, failed_at) = match param {
        PeerParam::Default => (None, String::new(), String::new()),
        PeerParam::Number(v) => (Some(v.to_string()), format!(" param={v}"), String::new()),
        PeerParam::Word(w) => (Some(w.to_string()), format!(" param={w}"), String::new()),
        PeerParam::Geometry(spec, _) => (
            Some(spec.to_string()),
            format!(" {spec}"),
            format!(" {spec}"),
        ),
    };
    match p.run(algo, ty, n, reps as u32, arg.as_deref()) {
        Ok(r) => {
            if let PeerParam::Geometry(spec, ours) = param {
                if r.geometry.as_deref() != Some(ours) {
                    return Err(format!(
                        "{name} peer {algo} {ty} n={n} {spec}: its geometry checksum is {} but \
                         mgpu's is {ours}: peers/cub_bench.cu and mgpu-cli/src/bench/segreduce.rs \
                         generate different geometries, so the comparison would be meaningless",
                        r.geometry
                            .as_deref()
                            .unwrap_or("missing (no geom= in its output)")
                    ));
                }
            }
            if r.check != "ok" {
                output::note(format!(
                    "warning: {name} {algo} {ty} n={n}{at}: self-check {}",
                    r.check
                ));
            }
            Ok(Some(r.median_ms))
        }
        Err(e) => {
            output::note(format!(
                "warning: {name} peer {algo}{failed_at} failed: {e}"
            ));
            Ok(None)
        }
    }
}

/// The first call's time, with the modules it compiled or loaded since `before`. NVRTC's results
/// also go to the CUDA driver's compute cache (`~/.nv/ComputeCache`), which outlives the process:
/// a source compiled once on the machine compiles 10x faster the next time, whatever mgpu's cache
/// holds. The line says whether that cache was on (`CUDA_CACHE_DISABLE=1` turns it off: the
/// first call a new user meets).
pub(crate) fn report_first_use(
    what: &str,
    ty: &str,
    t: Instant,
    before: mgpu::cuda::jit::JitStats,
) {
    let after = mgpu::cuda::jit::stats();
    let driver_cache = match std::env::var("CUDA_CACHE_DISABLE").as_deref() {
        Ok("1") => "off",
        _ => "on",
    };
    output::note(format!(
        "{what} {ty}: first call {:.1} ms ({} modules compiled in {} ms, {} from the disk cache; \
         CUDA's compute cache {driver_cache})",
        t.elapsed().as_secs_f64() * 1e3,
        after.compiles - before.compiles,
        after.compile_ms - before.compile_ms,
        after.disk_hits - before.disk_hits
    ));
}

/// A row of the table of every bench but segreduce's and spmv's.
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
    /// The radix rows' traffic limit: the bytes a radix sort must move (`radix_traffic`) at the
    /// memcpy's bandwidth, in ms; the sort table's `vs_lim` column is this over `ms`.
    pub limit_ms: Option<f64>,
}

/// Bytes a radix sort of `n` keys of `key` bytes (with values of `value` bytes, 0 for keys only)
/// must move, over every bit of the key: the upfront histogram reads the keys once, then each
/// 8-bit pass reads and writes keys and values.
pub(crate) fn radix_traffic(n: usize, key: usize, value: usize) -> f64 {
    let passes = key; // 8 bits per pass
    (n * (2 * passes * (key + value) + key)) as f64
}

/// The time `bytes` take at the bandwidth of a memcpy of `n` elements of `size` bytes that took
/// `memcpy_ms` (it reads and writes them: 2 n size bytes).
pub(crate) fn at_memcpy_bandwidth(bytes: f64, memcpy_ms: f64, n: usize, size: usize) -> f64 {
    memcpy_ms * bytes / (2 * n * size) as f64
}

/// The table's header (`radix`: sort's radix-sort peer columns too, and the radix rows' time
/// at the traffic limit over theirs).
pub(crate) fn print_header(radix: bool) {
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
    if radix {
        header += &format!(" {:>9} {:>7} {:>6}", "radix_ms", "vs_radx", "vs_lim");
    }
    header += &format!(" {:>10}", "tuning");
    output::line(header);
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
    // The sort table's rows (those with a radix-sort peer column) end in the limit's column.
    if r.peers.iter().any(|p| p.0 == "radix") {
        peers += &match r.limit_ms {
            Some(l) => format!(" {:>6.3}", l / r.ms),
            None => format!(" {:>6}", "-"),
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
        tuning_label(&r.variant, &r.ty, r.log2),
    ));
}

impl Row {
    /// The row as a record of `primitive`'s bench.
    pub(crate) fn record(&self, primitive: &str) -> Record {
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
            extra: match self.limit_ms {
                Some(l) => vec![("limit_ms", Some(l)), ("vs_limit", Some(l / self.ms))],
                None => Vec::new(),
            },
            tuning: tuning_label(&self.variant, &self.ty, self.log2),
        }
    }
}

/// `--csv FILE`: one line per row (the tuning last; limit_ms: the radix rows' traffic limit).
pub(crate) fn write_csv(path: &str, rows: &[Row]) -> Result<(), String> {
    let mut s =
        String::from("primitive,type,log2n,mgpu_ms,memcpy_ms,cub_ms,radix_ms,limit_ms,tuning\n");
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
            "{},{},{},{},{},{},{},{},{}\n",
            r.variant,
            r.ty,
            r.log2,
            r.ms,
            r.memcpy_ms,
            peer("cub"),
            peer("radix"),
            r.limit_ms.map(|v| v.to_string()).unwrap_or_default(),
            tuning_label(&r.variant, &r.ty, r.log2)
        );
    }
    std::fs::write(path, s).map_err(|e| format!("writing {path}: {e}"))
}

static ARCH: OnceLock<u32> = OnceLock::new();
static SMS: OnceLock<u64> = OnceLock::new();

/// The architecture whose tunings `tuning_label` names (the bench's device; 90 on the CPU) and
/// its SMs (132 on the CPU: an H100's), which a radix sort's passes fit their tiles to.
pub(crate) fn set_device(arch: u32, sms: u64) {
    let _ = ARCH.set(arch);
    let _ = SMS.set(sms);
}

/// Bytes of an element type of `--types`.
pub(crate) fn type_size(ty: &str) -> Option<usize> {
    Some(match ty {
        "u8" => 1,
        "u16" => 2,
        "i32" | "u32" | "f32" => 4,
        "i64" | "u64" | "f64" => 8,
        _ => return None,
    })
}

/// The kernel family of a bench row's variant and the bytes per element of its tile.
fn family_of(variant: &str, ty: &str) -> Option<(Family, usize)> {
    let s = type_size(ty)?;
    let starts = |p: &str| variant.starts_with(p);
    Some(if starts("reduce-by-key") {
        (Family::ReduceByKey, 2 * s)
    } else if starts("reduce") {
        (Family::Reduce, s)
    } else if starts("scan") {
        (Family::Scan, s)
    } else if starts("radix-pairs") {
        (Family::RadixPairs, s + 4) // u32 values
    } else if starts("radix-keys") {
        (Family::RadixKeys, s)
    } else if starts("sort-pairs") {
        (Family::SortPairs, 2 * s)
    } else if starts("sort-keys") {
        (Family::SortKeys, s)
    } else if starts("merge") {
        (Family::Merge, s)
    } else if starts("unique-by-key") {
        (Family::CompactPairs, 2 * s)
    } else if starts("rle") {
        (Family::ReduceByKey, s + 4)
    } else if starts("non-trivial") {
        (Family::NonTrivialRuns, s)
    } else if starts("select") || starts("partition") || starts("unique") {
        (Family::Compact, s)
    } else if starts("segreduce") {
        (Family::SegReduce, s)
    } else if starts("spmv") {
        (Family::Spmv, s)
    } else {
        return None;
    })
}

/// `NTxVTxOCC` of the tuning a bench row of 2^`log2` items ran with (as the library chooses it
/// for the row's family, element size and, for the radix passes, the input's size), or `-`.
pub(crate) fn tuning_label(variant: &str, ty: &str, log2: u32) -> String {
    let arch = ARCH.get().copied().unwrap_or(90);
    if variant.ends_with("/preprocessed") {
        return "-".into(); // two families' kernels
    }
    if variant.starts_with("spmv") {
        // SpMV runs with its own VT and OCC (the segmented-reduction family's tuning rule).
        use mgpu::cuda::segreduce::{table_tuning, SegItems, SegReduceSpec};
        let kind = SegItems::SpmvBinary;
        let table = mgpu::cuda::family::table_for(arch);
        let t = match ty {
            "f64" => table_tuning::<f64, u32>(&table, kind, false, false),
            _ => table_tuning::<f32, u32>(&table, kind, false, false),
        };
        let spec = SegReduceSpec {
            items: kind,
            ..SegReduceSpec::helpers(false)
        };
        return t.map_or("-".into(), |t| label(&spec.tuning(&t)));
    }
    let Some((family, size)) = family_of(variant, ty) else {
        return "-".into();
    };
    if family == Family::NonTrivialRuns {
        let table = mgpu::cuda::family::table_for(arch);
        let t = mgpu::cuda::compact::non_trivial_tuning(&table, size);
        return t.map_or("-".into(), |t| label(&t));
    }
    let n = 1u64 << log2;
    // The merge sort's tuning may depend on its size (tuning::lookup_for); a merge's does not.
    let sort = variant.starts_with("sort-");
    let t = match sort {
        true => tuning::lookup_for(family, arch, size, n),
        false => tuning::lookup(family, arch, size),
    };
    let Ok(mut t) = t else {
        return "-".into();
    };
    if matches!(
        family,
        Family::Compact
            | Family::CompactPairs
            | Family::ReduceByKey
            | Family::SegReduce
            | Family::Spmv
    ) {
        t.vt = t.vt.min(31);
    }
    if family == Family::Scan && variant.starts_with("scan-sq") && !variant.contains("sqmat") {
        t = mgpu::cuda::scan::computed_input_tuning(t);
    }
    if matches!(family, Family::RadixKeys | Family::RadixPairs) && n > t.nv() as u64 {
        t = mgpu::cuda::radix::pass_tuning(&t, SMS.get().copied().unwrap_or(132), n);
    }
    label(&t)
}

/// `NTxVTxOCC` of a segmented reduction of `items` values of `ty` in `segments` segments (the
/// table's tiles for their mean length), or `-`.
pub(crate) fn segreduce_tuning_label(ty: &str, items: usize, segments: usize) -> String {
    use mgpu::cuda::segreduce::{long_segments, table_tuning, SegItems};
    let table = mgpu::cuda::family::table_for(ARCH.get().copied().unwrap_or(90));
    let long = long_segments(items as u64, segments as u64);
    let t = match type_size(ty) {
        Some(8) => table_tuning::<i64, u32>(&table, SegItems::Values, false, long),
        Some(_) => table_tuning::<i32, u32>(&table, SegItems::Values, false, long),
        None => return "-".into(),
    };
    t.map_or("-".into(), |t| label(&t))
}

/// A tuning as `NTxVTxOCC`.
pub(crate) fn label(t: &Tuning) -> String {
    format!("{}x{}x{}", t.nt, t.vt, t.occ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_map_to_their_family() {
        let cases = [
            ("scan", "i32", Some((Family::Scan, 4))),
            ("sort-pairs", "i64", Some((Family::SortPairs, 16))),
            ("reduce-by-key/run2", "i32", Some((Family::ReduceByKey, 8))),
            ("reduce-sq", "f32", Some((Family::Reduce, 4))),
            ("select-if/50%", "i64", Some((Family::Compact, 8))),
            (
                "unique-by-key/run10",
                "i32",
                Some((Family::CompactPairs, 8)),
            ),
            (
                "non-trivial-runs/run2",
                "i64",
                Some((Family::NonTrivialRuns, 8)),
            ),
            ("segreduce/fixed20", "f64", Some((Family::SegReduce, 8))),
            ("radix-keys/equal", "u16", Some((Family::RadixKeys, 2))),
            ("radix-pairs@+1", "i64", Some((Family::RadixPairs, 12))),
            ("what", "i32", None),
        ];
        for (variant, ty, family) in cases {
            assert_eq!(family_of(variant, ty), family, "{variant} {ty}");
        }
    }

    #[test]
    fn the_generators_match_the_harness() {
        // value_from_bits: integers their low bits, floats the top bits over [0, 1).
        assert_eq!(i32::value_from_bits(0xffff_ffff_8000_0001), i32::MIN + 1);
        assert_eq!(u16::value_from_bits(0x1_2345), 0x2345);
        assert_eq!(f64::value_from_bits(u64::MAX >> 1), 0.5 - 2f64.powi(-53));
        assert_eq!(i64::small_from_bits(123_456), 456);
        assert_eq!(u32::small_from_bits(123_456), 123_456);
    }
}
