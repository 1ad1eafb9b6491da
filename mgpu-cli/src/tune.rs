//! `mgpu tune <primitive>`: sweeps the launch parameters of the primitive's kernel family (NT in
//! {64, 128, 256, 512}, odd VT (the reduce's: multiples of four), OCC; the radix sort's NT in
//! {256, 384, 512}) on the present device, prints the landscape (throughput per NT x VT, the
//! best marked, as in the seed's mergesort tuning table), and writes the winners to a tuning file
//! (`mgpu::tuning`'s versioned format) that the library then reads. `sort` tunes the merge
//! sort's and the radix sort's families (keys and pairs of each), `radix` the radix sort's alone.
//!
//! Candidates are pruned before anything runs: a tile over its family's
//! `Family::max_tile_bytes` fails `Tuning::validate_for` (a radix sort's tile also holds at most
//! 65535 keys); every kernel of the family is compiled for the device's architecture and
//! a candidate whose ptxas report shows spills or a stack frame, or that cannot be resident, is
//! dropped (per cell NT x VT, the highest OCC that compiles clean is the one timed). Each survivor
//! runs in a child process, `mgpu bench <primitive> --sizes N --types T --no-peer --json`, with
//! `MGPU_TUNING` naming a temporary tuning file of that candidate: the library reads the file when
//! a primitive is called, and a fresh process has no module compiled with another tuning.

use crate::bench::harness::{label, type_size};
use crate::instantiations::candidate;
use crate::output::{self, Progress};
use crate::primitives::{bench_types, PRIMITIVES, SEGSORT, TYPES};
use mgpu::cuda::family::Part;
use mgpu::cuda::jit;
use mgpu::cuda::occupancy::{theoretical, SmLimits};
use mgpu::tuning::{self, Family, Tuning};
use mgpu::Context;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `mgpu tune`'s command line.
#[derive(clap::Args)]
pub struct TuneArgs {
    /// The primitive whose kernel family is tuned (sort tunes keys and pairs together, of the
    /// merge sort and of the radix sort; radix the radix sort's alone)
    #[arg(value_parser = clap::builder::PossibleValuesParser::new(PRIMITIVES))]
    primitive: String,
    /// Element type [default: i32; f32 for spmv]
    #[arg(long = "type", value_name = "T",
          value_parser = clap::builder::PossibleValuesParser::new(TYPES))]
    ty: Option<String>,
    /// Input size, log2 of the element count (nonzeros for spmv)
    #[arg(long, value_name = "LOG2", default_value_t = 26,
          value_parser = clap::value_parser!(u32).range(10..=30))]
    size: u32,
    /// Timed runs per candidate, of which the median counts (at least 10)
    #[arg(long, value_name = "N", default_value_t = 10)]
    reps: usize,
    /// The tuning file to write the winners into (other entries are kept) [default: MGPU_TUNING's
    /// file, else the default location, ~/.config/mgpu/tuning.txt]
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print the landscape and the winners, write no file
    #[arg(long)]
    dry_run: bool,
    /// Run the sweep on the CPU backend (checks the plumbing: its times say nothing about a GPU)
    #[arg(long, hide = true)]
    cpu: bool,
}

/// One family being tuned by a primitive's bench, and which of its rows measure it.
struct Target {
    family: Family,
    /// Bytes per tile element (what `validate` and the size class are about).
    elem: usize,
    /// The bench rows that count.
    rows: Rows,
    /// VT values swept (odd, but for the radix sort's).
    vts: &'static [u32],
    /// NT values swept.
    nts: &'static [u32],
    /// The most items a tile may hold (NT x VT).
    max_items: u32,
}

/// Which rows of a primitive's bench measure a target.
#[derive(Clone, Copy, Debug)]
enum Rows {
    /// Every row.
    All,
    /// The row of this variant (not its other inputs: `radix-keys`, not `radix-keys/equal`).
    Exact(&'static str),
    /// The rows of this variant's parameters (`unique`: `unique/run10`, not `unique-by-key/...`).
    Under(&'static str),
    /// The segmented reduction's rows whose segments are long on average, or not
    /// (`mgpu::cuda::segreduce::long_segments`).
    Segments { long: bool },
}

impl Target {
    fn counts(&self, variant: &str) -> bool {
        match self.rows {
            Rows::All => true,
            Rows::Exact(v) => v == variant,
            Rows::Under(v) => variant.strip_prefix(v).is_some_and(|p| p.starts_with('/')),
            Rows::Segments { .. } => variant.starts_with("segreduce/"),
        }
    }

    /// Whether a measured row counts (`counts`, and for `Rows::Segments` its mean length).
    fn counts_row(&self, r: &Measured) -> bool {
        let long =
            |segments: f64| mgpu::cuda::segreduce::long_segments(r.items as u64, segments as u64);
        self.counts(&r.variant)
            && match self.rows {
                Rows::Segments { long: want } => r.segments.is_some_and(|s| long(s) == want),
                _ => true,
            }
    }
}

const NTS: &[u32] = &[64, 128, 256, 512];

/// The radix sort's NTs: a thread per digit bin (NT >= 256).
const RADIX_NTS: &[u32] = &[256, 384, 512];

/// The radix sort's tile: at most 65535 keys (16-bit counts).
const RADIX_MAX_ITEMS: u32 = 65535;

fn targets(primitive: &str, s: usize) -> Vec<Target> {
    let t = |family, elem, rows, vts| Target {
        family,
        elem,
        rows,
        vts,
        nts: NTS,
        max_items: u32::MAX,
    };
    // The radix rows of `mgpu bench sort | radix` (pairs: u32 values).
    let radix = || {
        let r = |family, elem, rows, vts| Target {
            nts: RADIX_NTS,
            max_items: RADIX_MAX_ITEMS,
            ..t(family, elem, rows, vts)
        };
        [
            r(
                Family::RadixKeys,
                s,
                Rows::Exact("radix-keys"),
                &[9, 12, 14, 17, 20, 24],
            ),
            r(
                Family::RadixPairs,
                s + 4,
                Rows::Exact("radix-pairs"),
                &[9, 12, 15, 18, 20, 23],
            ),
        ]
    };
    const COMPACT_VT: &[u32] = &[7, 11, 15, 23, 31];
    match primitive {
        // Multiples of four: the commutative reduce loads whole 16-byte vectors a thread only
        // where VT is a multiple of the vector's elements (`mgpu_reduce`'s VEC_TILES), which
        // these are for 4- and 8-byte elements.
        "reduce" => vec![t(
            Family::Reduce,
            s,
            Rows::Exact("reduce"),
            &[8, 12, 16, 24, 32],
        )],
        "scan" => vec![t(
            Family::Scan,
            s,
            Rows::Exact("scan"),
            &[15, 23, 31, 39, 47],
        )],
        "sort" => {
            let mut v = vec![
                t(
                    Family::SortKeys,
                    s,
                    Rows::Exact("sort-keys"),
                    &[11, 15, 17, 21, 23],
                ),
                t(
                    Family::SortPairs,
                    2 * s,
                    Rows::Exact("sort-pairs"),
                    &[7, 9, 11, 15, 17],
                ),
            ];
            v.extend(radix());
            v
        }
        "radix" => radix().into(),
        "merge" => vec![t(
            Family::Merge,
            s,
            Rows::Exact("merge"),
            &[15, 19, 23, 27, 31],
        )],
        // The non-trivial runs kernel takes VT up to 23 (`cuda::compact::non_trivial_tuning`).
        "rle" => vec![
            t(Family::ReduceByKey, s + 4, Rows::Under("rle"), COMPACT_VT),
            t(
                Family::NonTrivialRuns,
                s,
                Rows::Under("non-trivial-runs"),
                &[7, 11, 15, 19, 23],
            ),
        ],
        "reduce-by-key" => vec![t(Family::ReduceByKey, 2 * s, Rows::All, COMPACT_VT)],
        "segreduce" => vec![
            t(
                Family::SegReduce,
                s,
                Rows::Segments { long: false },
                COMPACT_VT,
            ),
            t(
                Family::SegReduceLong,
                s,
                Rows::Segments { long: true },
                COMPACT_VT,
            ),
        ],
        "spmv" => vec![t(Family::Spmv, s, Rows::All, COMPACT_VT)],
        "unique" => vec![
            t(Family::Compact, s, Rows::Under("unique"), COMPACT_VT),
            t(
                Family::CompactPairs,
                2 * s,
                Rows::Under("unique-by-key"),
                COMPACT_VT,
            ),
        ],
        _ => vec![t(Family::Compact, s, Rows::All, COMPACT_VT)],
    }
}

/// Bytes per item that a segmented-reduction tile holds beside the value (a 4-byte segment index,
/// and a column index for SpMV): the library lowers VT until they fit (`cuda::segreduce::table_tuning`),
/// so the sweep keeps only tiles that fit as they are.
fn tile_bytes_per_item(primitive: &str, target: &Target) -> usize {
    match primitive {
        "segreduce" => target.elem + 4,
        "spmv" => target.elem + 8,
        _ => target.elem,
    }
}

/// OCC values to try for a cell, highest first: from what the SM's threads and shared memory
/// allow down to a quarter of it.
fn occ_levels(nt: u32, tile_bytes: usize, limits: &SmLimits) -> Vec<u32> {
    let by_threads = (limits.threads / nt).min(2048 / nt);
    let per_cta = tile_bytes as u32 + limits.shared_reserved_per_cta + 1024;
    let by_shared = (limits.shared_bytes / per_cta).max(1);
    let top = by_threads.min(by_shared).min(limits.ctas).max(1);
    let mut levels = vec![
        top,
        (top * 3).div_ceil(4),
        top.div_ceil(2),
        top.div_ceil(4),
        1,
    ];
    levels.dedup();
    levels
}

/// A cell's outcome for one target.
#[derive(Clone, Debug)]
enum Cell {
    /// Over the family's `max_tile_bytes`.
    TooBig,
    /// No OCC compiled clean (spills, stack, or not resident).
    Spills,
    /// The compiler rejected it (say, over the static shared memory a block may have).
    Fails,
    /// To be timed with this tuning.
    Candidate(Tuning),
}

/// What the compile check needs: the device (for driver reports where NVRTC returns none).
struct Checker<'a> {
    arch: u32,
    limits: SmLimits,
    device: Option<&'a Context>,
    enabled: bool,
}

impl Checker<'_> {
    /// Whether every kernel of `part` compiled from `source` is free of local memory and can be
    /// resident. Compiled through the disk cache (the sweep's own, see `run`), so that the timed
    /// child finds the module there.
    fn clean(&self, part: &Part, source: &str, nt: u32) -> Result<bool, String> {
        let compiled = jit::compile(part.name, source, self.arch).map_err(|e| e.to_string())?;
        let mut reports = compiled.reports;
        if reports.is_empty() {
            if let Some(ctx) = self.device {
                reports = mgpu::cuda::driver_reports(ctx, part.kernels, compiled.cubin)
                    .map_err(|e| e.to_string())?;
            }
        }
        Ok(reports.iter().all(|r| {
            let threads = if r.name.ends_with("_partition") {
                128
            } else {
                nt
            };
            r.clean() && theoretical(r, threads, &self.limits).ctas_per_sm > 0
        }))
    }

    /// Whether every module the library loads for the instantiations of `target` under `t`
    /// (the registry's, see `instantiations::candidate`) compiles clean.
    /// `Err` of the outer result: the check itself failed; of the inner: a module of the
    /// candidate does not compile (a radix sort's tile and bins over the static shared memory,
    /// say), which rules the cell out, why said.
    fn candidate_clean(
        &self,
        target: Family,
        t: &Tuning,
        ty: &str,
    ) -> Result<Result<bool, String>, String> {
        for inst in candidate(target, t, ty, self.arch)? {
            for (part, source) in &inst.parts {
                match self.clean(part, source, t.nt) {
                    Ok(true) => {}
                    Ok(false) => return Ok(Ok(false)),
                    Err(e) => {
                        // The compiler's first error line, else its shared memory.
                        let why = e
                            .lines()
                            .find(|l| l.contains("error"))
                            .or_else(|| e.lines().find(|l| l.contains("bytes smem")))
                            .map_or("", str::trim);
                        return Ok(Err(format!(
                            "{} {}: {} does not compile, skipped ({why})",
                            target.name(),
                            label(t),
                            part.name
                        )));
                    }
                }
            }
        }
        Ok(Ok(true))
    }
}

/// A bench row from the child's JSON: variant, items, median ms, tuning label.
struct Measured {
    variant: String,
    items: f64,
    /// The segmented reduction's segments (SpMV's rows).
    segments: Option<f64>,
    ms: f64,
    tuning: String,
}

/// Runs the bench in a child process with `tuning_file` (`none`: the built-in tables).
fn measure(
    a: &TuneArgs,
    ty: &str,
    tuning_file: &std::ffi::OsStr,
    cache: &Path,
) -> Result<Vec<Measured>, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding the mgpu executable: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", &a.primitive, "--no-peer", "--json"])
        .args(["--sizes", &a.size.to_string(), "--types", ty])
        .args(["--reps", &a.reps.max(10).to_string()])
        .env("MGPU_TUNING", tuning_file)
        .env("MGPU_CACHE_DIR", cache);
    if a.cpu {
        cmd.env("MGPU_BACKEND", "cpu");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("running mgpu bench: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        return Err(format!("mgpu bench failed: {last}"));
    }
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("reading mgpu bench's JSON: {e}"))?;
    let rows = rows.as_array().ok_or("mgpu bench's JSON is not an array")?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some(Measured {
                variant: r.get("variant")?.as_str()?.to_string(),
                items: r.get("items")?.as_f64()?,
                segments: r.get("segments").and_then(|s| s.as_f64()),
                ms: r.get("mgpu_ms")?.as_f64()?,
                tuning: r.get("tuning")?.as_str()?.to_string(),
            })
        })
        .collect())
}

/// G items/s over the rows that count for `target` (total items / total time).
fn score(target: &Target, rows: &[Measured]) -> Option<f64> {
    let (items, ms) = rows
        .iter()
        .filter(|r| target.counts_row(r))
        .fold((0.0, 0.0), |(i, m), r| (i + r.items, m + r.ms));
    (ms > 0.0).then(|| items / ms / 1e6)
}

pub fn run(a: TuneArgs) -> Result<(), String> {
    if a.primitive == SEGSORT {
        // Its tiles take the merge sort's entries (sort_keys and sort_pairs, by the size of a key,
        // its segment number and its value): a sweep here would write over another sort's.
        return Err(
            "tune: the segmented sort runs the merge sort's tunings (sort_keys, sort_pairs) of \
             its key's size plus 4 bytes; tune `sort` for them"
                .into(),
        );
    }
    let ty =
        a.ty.clone()
            .unwrap_or_else(|| if a.primitive == "spmv" { "f32" } else { "i32" }.into());
    let s = type_size(&ty).ok_or_else(|| format!("tune: unknown type `{ty}`"))?;
    let (supported, _) = bench_types(&a.primitive);
    if !supported.contains(&ty.as_str()) {
        return Err(format!(
            "tune: {} benches {} (not {ty})",
            a.primitive,
            supported.join(", ")
        ));
    }
    // Where the winners go; an unusable existing file stops here, before the sweep.
    let out_path = match (&a.output, tuning::source()) {
        (Some(p), _) => Some(p.clone()),
        (None, tuning::TuningSource::Env(p)) => Some(p),
        (None, _) => tuning::default_file(),
    };
    let existing = match &out_path {
        Some(p) if p.is_file() && !a.dry_run => {
            Some(std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()))?)
        }
        _ => None,
    };
    let ctx = if a.cpu {
        Context::cpu()
    } else {
        Context::cuda().map_err(|e| {
            format!("tune: needs a GPU to measure on ({e}); `mgpu occupancy` works without one")
        })?
    };
    let arch = ctx.arch().unwrap_or(90);
    let device = ctx
        .device_info()
        .map(|d| d.name.clone())
        .unwrap_or_else(|| ctx.description());
    // The sweep's own kernel cache: the compile check fills it, the timed children read it, and
    // the user's cache keeps only what is used later.
    let scratch = std::env::temp_dir().join(format!("mgpu-tune-{}", std::process::id()));
    let cache = scratch.join("cache");
    std::fs::create_dir_all(&cache).map_err(|e| format!("creating {}: {e}", cache.display()))?;
    let result = sweep(&a, &ty, s, arch, &device, &ctx, &scratch, &cache);
    let _ = std::fs::remove_dir_all(&scratch);
    let winners = result?;
    if a.dry_run {
        println!("dry run: no tuning file written");
        return Ok(());
    }
    let Some(path) = out_path else {
        return Err("tune: nowhere to write (no HOME or XDG_CONFIG_HOME); pass --output".into());
    };
    let text = merge_file(existing.as_deref(), &winners, arch);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("wrote {} entries to {}", winners.len(), path.display());
    let in_effect = tuning::source();
    if in_effect.path() != Some(path.as_path()) {
        println!(
            "(not the tuning file in effect, {in_effect}: set MGPU_TUNING={} to use it)",
            path.display()
        );
    }
    Ok(())
}

/// A winner: the family's entry and the comment that records the sweep.
struct Winner {
    family: Family,
    size_class: u32,
    tuning: Tuning,
    comment: String,
}

#[allow(clippy::too_many_arguments)]
fn sweep(
    a: &TuneArgs,
    ty: &str,
    s: usize,
    arch: u32,
    device: &str,
    ctx: &Context,
    scratch: &Path,
    cache: &Path,
) -> Result<Vec<Winner>, String> {
    let targets = targets(&a.primitive, s);
    let check = Checker {
        arch,
        limits: SmLimits::for_arch(arch),
        device: ctx.arch().is_some().then_some(ctx),
        enabled: jit::nvrtc_available(),
    };
    if !check.enabled {
        output::note("note: no NVRTC: candidates are not compile-checked for spills");
    }
    // The compile check writes through the sweep's cache (jit::compile reads MGPU_CACHE_DIR).
    // SAFETY of the environment change: no other thread of this process runs yet.
    std::env::set_var("MGPU_CACHE_DIR", cache);
    // 1. Cells and their OCC: the highest that compiles clean.
    let mut grids: Vec<Vec<((u32, u32), Cell)>> = Vec::new();
    let cells: usize = targets.iter().map(|t| t.vts.len() * t.nts.len()).sum();
    {
        let bar = Progress::new(cells as u64, "compile check");
        for target in &targets {
            let per_item = tile_bytes_per_item(&a.primitive, target);
            let mut grid = Vec::new();
            for &nt in target.nts {
                for &vt in target.vts {
                    bar.set_message(format!("{} {nt}x{vt}", target.family.name()));
                    let tile = (nt * vt) as usize * per_item;
                    let too_big = tile > target.family.max_tile_bytes();
                    let cell = if too_big || nt * vt > target.max_items {
                        Cell::TooBig
                    } else {
                        let mut found = Cell::Spills;
                        for occ in occ_levels(nt, tile, &check.limits) {
                            let t = Tuning::new(nt, vt, occ);
                            if t.validate_for(target.family, per_item).is_err() {
                                continue;
                            }
                            let ok = if check.enabled {
                                check.candidate_clean(target.family, &t, ty)?
                            } else {
                                Ok(true)
                            };
                            match ok {
                                Ok(true) => {
                                    found = Cell::Candidate(t);
                                    break;
                                }
                                Ok(false) => {}
                                // A lower OCC would not change it.
                                Err(why) => {
                                    output::note(why);
                                    found = Cell::Fails;
                                    break;
                                }
                            }
                        }
                        found
                    };
                    grid.push(((nt, vt), cell));
                    bar.inc();
                }
            }
            grids.push(grid);
        }
    }
    // 2. The built-in tables, then each candidate (one child per candidate index, every target's
    //    candidate of that index in the same file).
    let lists: Vec<Vec<Tuning>> = grids
        .iter()
        .map(|g| {
            g.iter()
                .filter_map(|(_, c)| match c {
                    Cell::Candidate(t) => Some(*t),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let runs = lists.iter().map(Vec::len).max().unwrap_or(0);
    let file = scratch.join("candidate.txt");
    let mut results: Vec<Vec<(Tuning, Result<f64, String>)>> = vec![Vec::new(); targets.len()];
    let baseline;
    {
        let bar = Progress::new(runs as u64 + 1, &format!("tune {}", a.primitive));
        bar.set_message("built-in tables");
        baseline = measure(a, ty, "none".as_ref(), cache)?;
        bar.inc();
        for i in 0..runs {
            let mut text = format!("{} {}\n", tuning::FILE_MAGIC, tuning::FILE_VERSION);
            let mut names = Vec::new();
            for (target, list) in targets.iter().zip(&lists) {
                if let Some(t) = list.get(i) {
                    let class = tuning::size_class(target.elem);
                    text += &tuning::format_entry(target.family, arch, class, t);
                    text.push('\n');
                    names.push(label(t));
                }
            }
            bar.set_message(names.join(" + "));
            std::fs::write(&file, text).map_err(|e| format!("writing {}: {e}", file.display()))?;
            let rows = measure(a, ty, file.as_os_str(), cache);
            for (k, (target, list)) in targets.iter().zip(&lists).enumerate() {
                if let Some(t) = list.get(i) {
                    let r = match &rows {
                        Ok(rows) => score(target, rows).ok_or("no rows".to_string()),
                        Err(e) => Err(e.clone()),
                    };
                    if let Err(e) = &r {
                        output::note(format!("{} {}: {e}", target.family.name(), label(t)));
                    }
                    results[k].push((*t, r));
                }
            }
            bar.inc();
        }
    }
    // 3. The landscape and the winners.
    let date = output::today();
    let mut winners = Vec::new();
    for (k, target) in targets.iter().enumerate() {
        let base = score(target, &baseline);
        let base_label = baseline
            .iter()
            .find(|r| target.counts_row(r))
            .map_or("-".to_string(), |r| r.tuning.clone());
        let best = results[k]
            .iter()
            .filter_map(|(t, r)| r.as_ref().ok().map(|v| (*t, *v)))
            .max_by(|x, y| x.1.total_cmp(&y.1));
        println!();
        let items = if target.max_items < u32::MAX {
            format!(" or {} items", target.max_items)
        } else {
            String::new()
        };
        println!(
            "# {} ({}), {ty} at 2^{}, sm_{arch} {device}: G items/s of `mgpu bench {}` per NT x VT \
             (/OCC: the highest that compiles clean), * best; - over {} KB{items} of tile; spill: \
             no clean OCC; error: does not compile",
            target.family.name(),
            a.primitive,
            a.size,
            a.primitive,
            target.family.max_tile_bytes() / 1024
        );
        print_landscape(
            &grids[k],
            &results[k],
            best.map(|b| b.0),
            target.vts,
            target.nts,
        );
        let base_text = base.map_or("-".into(), |b| format!("{b:.3}"));
        println!("built-in {base_label}: {base_text} G items/s");
        let Some((mut t, mut v)) = best else {
            println!(
                "no candidate ran: nothing to write for {}",
                target.family.name()
            );
            continue;
        };
        let gain = base.map(|b| v / b);
        if let (Some(b), Some(parsed)) = (base, parse_label(&base_label)) {
            if b >= v {
                // The built-in tuning won: record it, so that the file says the sweep was done.
                println!("the built-in {base_label} beat every candidate");
                (t, v) = (parsed, b);
            }
        }
        let gain_text = gain.map_or("-".into(), |g| format!("{:.3}x", g.max(1.0)));
        println!(
            "best {}: {v:.3} G items/s, {gain_text} the built-in tables",
            label(&t)
        );
        winners.push(Winner {
            family: target.family,
            size_class: tuning::size_class(target.elem),
            tuning: t,
            comment: format!(
                "# mgpu tune {} {date}, {device} (sm_{arch}), {ty} at 2^{}: {} {v:.3} G items/s, \
                 {gain_text} the built-in {base_label} ({base_text})",
                a.primitive,
                a.size,
                label(&t)
            ),
        });
    }
    Ok(winners)
}

fn parse_label(l: &str) -> Option<Tuning> {
    let n: Vec<u32> = l
        .split('x')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    (n.len() == 3).then(|| Tuning::new(n[0], n[1], n[2]))
}

/// The table: a row per VT, a column per NT, like the seed's mergesort tuning table.
fn print_landscape(
    grid: &[((u32, u32), Cell)],
    results: &[(Tuning, Result<f64, String>)],
    best: Option<Tuning>,
    vts: &[u32],
    nts: &[u32],
) {
    let mut header = format!("{:>4}", "VT");
    for nt in nts {
        header += &format!(" {:>16}", format!("NT={nt}"));
    }
    println!("{header}");
    for &vt in vts {
        let mut row = format!("{vt:>4}");
        for &nt in nts {
            let cell = grid.iter().find(|(k, _)| *k == (nt, vt)).map(|(_, c)| c);
            let text = match cell {
                Some(Cell::TooBig) | None => "-".to_string(),
                Some(Cell::Spills) => "spill".to_string(),
                Some(Cell::Fails) => "error".to_string(),
                Some(Cell::Candidate(t)) => match results.iter().find(|(r, _)| r == t) {
                    Some((_, Ok(v))) => {
                        let mark = if best == Some(*t) { "*" } else { " " };
                        format!("{v:.3}/{}{mark}", t.occ)
                    }
                    Some((_, Err(_))) => "failed".into(),
                    None => "?".into(),
                },
            };
            row += &format!(" {text:>16}");
        }
        println!("{row}");
    }
}

/// The tuning file with `winners` in place of entries of the same family, architecture and size
/// class (and the `# mgpu tune` comment above each replaced entry); other lines are kept.
fn merge_file(existing: Option<&str>, winners: &[Winner], arch: u32) -> String {
    let header = format!("{} {}", tuning::FILE_MAGIC, tuning::FILE_VERSION);
    let replaced = |line: &str| {
        let f: Vec<&str> = line
            .split('#')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        f.len() >= 3
            && winners.iter().any(|w| {
                Some(w.family) == Family::from_name(f[0])
                    && f[1] == arch.to_string()
                    && f[2] == w.size_class.to_string()
            })
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut has_header = false;
    for line in existing.unwrap_or("").lines() {
        if line.trim_start().starts_with(tuning::FILE_MAGIC) {
            has_header = true;
        }
        if replaced(line) {
            if kept.last().is_some_and(|l| l.starts_with("# mgpu tune ")) {
                kept.pop();
            }
            continue;
        }
        kept.push(line);
    }
    let mut text = String::new();
    if !has_header {
        text += &header;
        text += "\n# family   arch class  nt vt occ [backoff_ns]; written by `mgpu tune`\n";
    }
    for line in kept {
        text += line;
        text.push('\n');
    }
    for w in winners {
        text += &w.comment;
        text.push('\n');
        text += &tuning::format_entry(w.family, arch, w.size_class, &w.tuning);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radix_targets_sweep_only_tiles_the_radix_sort_takes() {
        let sort = targets("sort", 4);
        let names: Vec<_> = sort.iter().map(|t| t.family).collect();
        assert_eq!(
            names,
            [
                Family::SortKeys,
                Family::SortPairs,
                Family::RadixKeys,
                Family::RadixPairs
            ]
        );
        let radix = targets("radix", 8);
        assert_eq!(radix.len(), 2);
        assert_eq!((radix[0].elem, radix[1].elem), (8, 12)); // pairs: u32 values
        assert!(radix[0].counts("radix-keys") && !radix[0].counts("radix-keys/equal"));
        for t in &radix {
            assert!(t.nts.iter().all(|&nt| nt >= 256 && nt % 32 == 0));
            assert_eq!(t.max_items, 65535);
        }
    }

    #[test]
    fn compaction_variants_are_tuned_by_their_own_rows() {
        let unique = targets("unique", 4);
        let by = |family| unique.iter().find(|t| t.family == family).unwrap();
        let (keys, pairs) = (by(Family::Compact), by(Family::CompactPairs));
        assert_eq!((keys.elem, pairs.elem), (4, 8));
        assert!(keys.counts("unique/run10") && keys.counts("unique/run10/in-place"));
        assert!(!keys.counts("unique-by-key/run10") && pairs.counts("unique-by-key/run10"));
        assert!(!pairs.counts("unique/run10"));
        let rle = targets("rle", 8);
        assert_eq!(rle[1].family, Family::NonTrivialRuns);
        assert!(rle[1].counts("non-trivial-runs/run2") && !rle[1].counts("rle/run2"));
        assert!(rle[0].counts("rle/run2") && !rle[0].counts("non-trivial-runs/run2"));
        assert!(rle[1].vts.iter().all(|&vt| vt <= 23));
    }

    #[test]
    fn segment_lengths_are_tuned_by_their_own_rows() {
        let seg = targets("segreduce", 4);
        let row = |items: f64, segments: f64| Measured {
            variant: "segreduce/x/apply".into(),
            items,
            segments: Some(segments),
            ms: 1.0,
            tuning: String::new(),
        };
        let (short, long) = (&seg[0], &seg[1]);
        assert_eq!(
            (short.family, long.family),
            (Family::SegReduce, Family::SegReduceLong)
        );
        assert!(short.counts_row(&row(1000.0, 500.0)) && !long.counts_row(&row(1000.0, 500.0)));
        assert!(long.counts_row(&row(1000.0, 250.0)) && !short.counts_row(&row(1000.0, 250.0)));
        let spmv = Measured {
            variant: "spmv/random-32".into(),
            ..row(1000.0, 250.0)
        };
        assert!(!long.counts_row(&spmv));
    }

    #[test]
    fn occ_levels_descend_from_the_sm_limits() {
        let l = SmLimits::for_arch(90);
        let levels = occ_levels(128, 128 * 39 * 4, &l);
        assert!(levels.windows(2).all(|w| w[0] > w[1]), "{levels:?}");
        assert_eq!(*levels.last().unwrap(), 1);
        assert!(levels[0] * 128 <= 2048);
        assert_eq!(occ_levels(512, 1024, &l)[0], 4);
    }

    #[test]
    fn the_file_keeps_other_entries_and_replaces_the_tuned_ones() {
        let old = "mgpu-tuning 1\n# mine\nscan 90 4 128 39 11\n# mgpu tune sort old\nsort_keys 90  4 256 17 4\nsort_keys 80 4 256 17 4\n";
        let w = Winner {
            family: Family::SortKeys,
            size_class: 4,
            tuning: Tuning::new(256, 23, 6),
            comment: "# mgpu tune sort new".into(),
        };
        let text = merge_file(Some(old), &[w], 90);
        assert_eq!(
            text,
            "mgpu-tuning 1\n# mine\nscan 90 4 128 39 11\nsort_keys 80 4 256 17 4\n\
             # mgpu tune sort new\nsort_keys  90  4  256 23  6\n"
        );
        let fresh = merge_file(None, &[], 90);
        assert!(fresh.starts_with("mgpu-tuning 1\n"));
        assert_eq!(parse_label("128x39x11"), Some(Tuning::new(128, 39, 11)));
    }
}
