//! `mgpu bench suite`: the headline rows of every primitive against its peer (CUB, cuSPARSE) and a
//! device memcpy, summarized as one Markdown table that regenerates with one command. It measures
//! nothing itself: each row comes from its family's bench (`mgpu bench <primitive>`), run with
//! `Args::only` naming the rows, for one type at one size at a time; the benches' own tables go
//! to stderr as they are measured, the summary to stdout (and `--markdown FILE`).
//!
//! The rows (`ENTRIES`), each at 2^24 and 2^28 (the two ends of `--sizes`; `--quick`: 2^24
//! alone), 44 in all:
//!
//! | rows | types | peer |
//! |---|---|---|
//! | reduce, scan | i32, f32 | CUB DeviceReduce::Sum, DeviceScan::ExclusiveSum |
//! | radix-keys, radix-pairs (u32 values) | i32, u64, f32 | CUB DeviceRadixSort |
//! | sort-keys (the merge sort) | i32 | CUB DeviceMergeSort |
//! | merge | i32 | CUB DeviceMerge |
//! | select-if/50%, select-if/even (`bits & 1 == 0`, a one-instruction predicate) | i32 | CUB DeviceSelect::If |
//! | unique/run10, reduce-by-key/run10 (mean run length 10) | i32 | CUB DeviceSelect::Unique, DeviceReduce::ReduceByKey |
//! | segreduce/fixed-20, fixed-500, powerlaw (one-shot) | i32 | CUB DeviceSegmentedReduce::Sum |
//! | spmv/random-32: the one-shot, the unchecked one-shot, the apply after a plan (size: nonzeros) | f32 | cuSPARSE SpMV |
//!
//! Time: about 2-3 minutes on an H100 with the CUB peer and the kernels cached. The GPU's own
//! share is small (23 timed runs of each row, of mgpu and of the peer: about 10 s at 2^28, the
//! sorts most of it); the rest is the host's. 28 bench runs start 42 peer processes (one per
//! row's peer; sort-keys also times CUB's radix sort, segreduce one per geometry), each a CUDA
//! context, its inputs and a spot check: about 1 s. At 2^28 the host generates the inputs (1-4 s
//! a run on a 2-core VM, the u64 radix rows the most), spmv builds and twice checks a matrix of
//! 2^28 nonzeros (about 11 s there), segreduce checks its segments (about 3 s); 2^24 is a
//! sixteenth of that. A cold kernel cache adds about 20 s of NVRTC (`mgpu warmup` compiled every
//! family's default modules in 21 s on one core), a machine without the built peer its nvcc build
//! (minutes). The summary says how long its run took.

use super::harness::{Args, KeyDist, Placement, Scaling};
use crate::output::{self, Record};
use std::path::Path;
use std::time::Instant;

/// Rows of one bench in the summary: the bench (`mgpu bench <primitive>`), its rows (variant
/// names, in the summary's order), their types, and their peer: its name among the bench's
/// peers, and as the summary names it.
struct Entry {
    primitive: &'static str,
    rows: &'static [&'static str],
    types: &'static [&'static str],
    peer: (&'static str, &'static str),
}

/// The summary's rows.
const ENTRIES: &[Entry] = &[
    Entry {
        primitive: "reduce",
        rows: &["reduce"],
        types: &["i32", "f32"],
        peer: ("cub", "CUB DeviceReduce::Sum"),
    },
    Entry {
        primitive: "scan",
        rows: &["scan"],
        types: &["i32", "f32"],
        peer: ("cub", "CUB DeviceScan::ExclusiveSum"),
    },
    Entry {
        primitive: "radix",
        rows: &["radix-keys", "radix-pairs"],
        types: &["i32", "u64", "f32"],
        peer: ("radix", "CUB DeviceRadixSort"),
    },
    Entry {
        primitive: "sort",
        rows: &["sort-keys"],
        types: &["i32"],
        peer: ("cub", "CUB DeviceMergeSort"),
    },
    Entry {
        primitive: "merge",
        rows: &["merge"],
        types: &["i32"],
        peer: ("cub", "CUB DeviceMerge"),
    },
    Entry {
        primitive: "select",
        rows: &["select-if/50%", "select-if/even"],
        types: &["i32"],
        peer: ("cub", "CUB DeviceSelect::If"),
    },
    Entry {
        primitive: "unique",
        rows: &["unique/run10"],
        types: &["i32"],
        peer: ("cub", "CUB DeviceSelect::Unique"),
    },
    Entry {
        primitive: "reduce-by-key",
        rows: &["reduce-by-key/run10"],
        types: &["i32"],
        peer: ("cub", "CUB DeviceReduce::ReduceByKey"),
    },
    Entry {
        primitive: "segreduce",
        rows: &[
            "segreduce/fixed-20",
            "segreduce/fixed-500",
            "segreduce/powerlaw",
        ],
        types: &["i32"],
        peer: ("cub", "CUB DeviceSegmentedReduce::Sum"),
    },
    Entry {
        primitive: "spmv",
        rows: &[
            "spmv/random-32",
            "spmv/random-32/unchecked",
            "spmv/random-32/apply",
        ],
        types: &["f32"],
        peer: ("cusparse", "cuSPARSE SpMV"),
    },
];

/// The sizes (log2) of the suite: the two ends of `--sizes`.
fn sizes(a: &Args) -> Vec<u32> {
    let (lo, hi) = (*a.sizes.start(), *a.sizes.end());
    if lo == hi {
        vec![lo]
    } else {
        vec![lo, hi]
    }
}

/// The bench runs of the suite, in the summary's order: every entry's types and sizes, each run
/// measuring the entry's rows of one type at one size.
fn plan(a: &Args) -> Vec<(&'static Entry, Args)> {
    let mut runs = Vec::new();
    for entry in ENTRIES {
        for ty in entry.types {
            for log2 in sizes(a) {
                let run = Args {
                    primitive: entry.primitive.to_string(),
                    sizes: log2..=log2,
                    types: vec![ty.to_string()],
                    reps: a.reps,
                    csv: None,
                    peer: a.peer,
                    deterministic: false,
                    transform: false,
                    offset: 0,
                    chart: None,
                    types_given: true,
                    dist: vec![KeyDist::Uniform],
                    only: Some(entry.rows),
                    ranks: Vec::new(),
                    placement: Placement::OneGpu,
                    scaling: Scaling::Both,
                };
                runs.push((entry, run));
            }
        }
    }
    runs
}

/// A row of the summary.
#[derive(Debug)]
struct Line {
    row: String,
    log2: u32,
    ty: String,
    ms: f64,
    /// The peer, as the summary names it, and its time where it ran.
    peer: &'static str,
    peer_ms: Option<f64>,
    memcpy_ms: f64,
}

/// The summary's rows from each run's records (a run may give rows that the summary leaves out:
/// segreduce's apply), ordered by entry and row, then type and size; a row that a run did not
/// give is an error.
fn pick(measured: &[(&Entry, &Args, Vec<Record>)]) -> Result<Vec<(Line, Record)>, String> {
    let mut picked = Vec::new();
    for (e, (entry, run, records)) in measured.iter().enumerate() {
        for (k, row) in entry.rows.iter().enumerate() {
            let r = records.iter().find(|r| r.variant == *row).ok_or_else(|| {
                format!(
                    "bench suite: mgpu bench {} --types {} --sizes {} gave no row {row}",
                    run.primitive,
                    run.types.join(","),
                    run.sizes.start()
                )
            })?;
            let peer_ms = r.peers.iter().find(|p| p.0 == entry.peer.0);
            let line = Line {
                row: r.variant.clone(),
                log2: r.log2,
                ty: r.ty.clone(),
                ms: r.ms,
                peer: entry.peer.1,
                peer_ms: peer_ms.and_then(|p| p.1),
                memcpy_ms: r.memcpy_ms,
            };
            let place = ENTRIES.iter().position(|x| x.primitive == entry.primitive);
            picked.push(((place, k, e), line, r.clone()));
        }
    }
    picked.sort_by_key(|p| p.0);
    Ok(picked.into_iter().map(|(_, l, r)| (l, r)).collect())
}

/// The summary: a title, the heading's lines as a list, the table.
fn markdown(heading: &[String], lines: &[Line]) -> String {
    let mut s = String::from("# mgpu bench suite\n\n");
    for h in heading {
        s += &format!("- {h}\n");
    }
    s += "\n| primitive | size | type | mgpu ms | peer | peer ms | vs peer | vs memcpy |\n";
    s += "|:--|--:|:--|--:|:--|--:|--:|--:|\n";
    for l in lines {
        let (peer_ms, vs_peer) = match l.peer_ms {
            Some(p) => (format!("{p:.4}"), format!("{:.3}", p / l.ms)),
            None => ("-".into(), "-".into()),
        };
        s += &format!(
            "| {} | 2^{} | {} | {:.4} | {} | {peer_ms} | {vs_peer} | {:.3} |\n",
            l.row,
            l.log2,
            l.ty,
            l.ms,
            l.peer,
            l.memcpy_ms / l.ms
        );
    }
    s
}

/// `args` as one shell command line: each argument as it is, or single-quoted where a shell
/// would split or expand it.
fn command_line(args: impl IntoIterator<Item = String>) -> String {
    let quoted: Vec<String> = args
        .into_iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
            if plain {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect();
    quoted.join(" ")
}

/// Seconds as `M min S s`.
fn duration(secs: u64) -> String {
    format!("{} min {:02} s", secs / 60, secs % 60)
}

/// Runs the suite: every run of `plan` through `measure` (the bench of `run.primitive`, printing
/// its table as it goes), then the summary, headed by the date, `device`, the command line, the
/// repetitions and `tuning` (the tuning in effect), on stdout (but with `--json`) and into
/// `markdown_file`. Returns the summary's records.
pub(crate) fn run(
    a: &Args,
    device: &str,
    tuning: &str,
    markdown_file: Option<&Path>,
    mut measure: impl FnMut(&Args) -> Result<Vec<Record>, String>,
) -> Result<Vec<Record>, String> {
    let start = Instant::now();
    let runs = plan(a);
    let bar = output::Progress::new(runs.len() as u64, "bench suite");
    let mut measured = Vec::new();
    for (entry, run) in &runs {
        measured.push((*entry, run, measure(run)?));
    }
    drop(bar);
    let (lines, records): (Vec<Line>, Vec<Record>) = pick(&measured)?.into_iter().unzip();
    let elapsed = duration(start.elapsed().as_secs());
    let args = std::env::args_os().map(|s| s.to_string_lossy().into_owned());
    let heading = [
        format!("date: {}", output::now_utc()),
        format!("device: {device}"),
        format!("command: `{}`", command_line(args)),
        format!("median of {} timed runs per row; tuning: {tuning}", a.reps),
        format!("{} rows in {elapsed}", lines.len()),
        "vs peer: peer ms / mgpu ms (> 1: mgpu faster); vs memcpy: memcpy ms / mgpu ms, a device \
         memcpy of the input's elements (reduce, scan, the sorts, merge, compaction) or of the \
         bytes the row must move (segreduce, spmv), as `mgpu bench`'s vs_mcpy"
            .to_string(),
        "size: elements (spmv: nonzeros); radix-pairs: u32 values; select-if/50%: `bits % 100 < \
         50`, /even: `bits & 1 == 0` (one instruction); run10: runs of mean length 10; \
         segreduce and spmv: the one-shot call, /unchecked: the one-shot without the geometry's \
         validation, /apply: after a plan built outside the timing"
            .to_string(),
    ];
    let summary = markdown(&heading, &lines);
    if !output::json() {
        print!("{summary}");
    }
    if let Some(path) = markdown_file {
        std::fs::write(path, &summary).map_err(|e| format!("writing {}: {e}", path.display()))?;
        output::note(format!("summary: {}", path.display()));
    }
    output::note(format!("bench suite: {} rows in {elapsed}", lines.len()));
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mgpu bench suite`'s arguments with their defaults.
    fn defaults() -> Args {
        Args {
            primitive: "suite".into(),
            sizes: 24..=28,
            types: Vec::new(),
            reps: 20,
            csv: None,
            peer: true,
            deterministic: false,
            transform: false,
            offset: 0,
            chart: None,
            types_given: false,
            dist: vec![KeyDist::Uniform],
            only: None,
            ranks: Vec::new(),
            placement: Placement::OneGpu,
            scaling: Scaling::Both,
        }
    }

    /// What a bench run would give: its rows, each 1 ms, its peer 2 ms and memcpy 0.5 ms, and
    /// a row the summary leaves out.
    fn fake(run: &Args) -> Vec<Record> {
        let record = |variant: &str| Record {
            primitive: run.primitive.clone(),
            variant: variant.to_string(),
            ty: run.types[0].clone(),
            log2: *run.sizes.start(),
            items: 0.0,
            ms: 1.0,
            bytes: 0.0,
            memcpy_ms: 0.5,
            peers: vec![("cub".into(), Some(2.0)), ("radix".into(), Some(4.0))],
            extra: Vec::new(),
            tuning: "-".into(),
        };
        let only = run.only.expect("the suite names its rows");
        let mut records: Vec<Record> = only.iter().rev().map(|v| record(v)).collect();
        records.push(record("not-in-the-summary"));
        records
    }

    #[test]
    fn the_suite_has_its_forty_four_rows_in_order() {
        let a = defaults();
        let runs = plan(&a);
        assert_eq!(runs.len(), 28);
        assert!(runs.iter().all(|(_, r)| r.sizes.start() == r.sizes.end()));
        let measured: Vec<_> = runs.iter().map(|(e, r)| (*e, r, fake(r))).collect();
        let lines: Vec<Line> = pick(&measured).unwrap().into_iter().map(|p| p.0).collect();
        assert_eq!(lines.len(), 44);
        let head: Vec<_> = lines[..6]
            .iter()
            .map(|l| format!("{} {} {}", l.row, l.ty, l.log2))
            .collect();
        assert_eq!(
            head,
            [
                "reduce i32 24",
                "reduce i32 28",
                "reduce f32 24",
                "reduce f32 28",
                "scan i32 24",
                "scan i32 28"
            ]
        );
        let radix: Vec<_> = lines
            .iter()
            .filter(|l| l.row.starts_with("radix"))
            .collect();
        assert_eq!(radix.len(), 12);
        assert_eq!(
            (radix[5].row.as_str(), radix[5].ty.as_str()),
            ("radix-keys", "f32")
        );
        assert_eq!(radix[6].row, "radix-pairs");
        // Each row's own peer: the radix sort's for the radix rows.
        assert_eq!(radix[0].peer_ms, Some(4.0));
        assert_eq!(lines[0].peer_ms, Some(2.0));
        let select: Vec<_> = lines
            .iter()
            .filter(|l| l.row.starts_with("select"))
            .map(|l| format!("{} {}", l.row, l.log2))
            .collect();
        assert_eq!(
            select,
            [
                "select-if/50% 24",
                "select-if/50% 28",
                "select-if/even 24",
                "select-if/even 28"
            ]
        );
        let last = &lines[43];
        assert_eq!((last.row.as_str(), last.log2), ("spmv/random-32/apply", 28));
        // spmv's peer is cuSPARSE, which the fake records lack.
        assert_eq!(last.peer_ms, None);
        // --quick: 2^24 alone.
        let quick = Args {
            sizes: 24..=24,
            ..defaults()
        };
        assert_eq!(plan(&quick).len(), 14);
    }

    #[test]
    fn a_missing_row_is_an_error() {
        let a = defaults();
        let runs = plan(&a);
        let (entry, run) = &runs[0];
        let err = pick(&[(*entry, run, Vec::new())]).unwrap_err();
        assert!(err.contains("gave no row reduce"), "{err}");
    }

    #[test]
    fn the_summary_is_a_markdown_table() {
        let line = |row: &str, peer_ms| Line {
            row: row.into(),
            log2: 24,
            ty: "i32".into(),
            ms: 0.5,
            peer: "CUB DeviceScan::ExclusiveSum",
            peer_ms,
            memcpy_ms: 0.25,
        };
        let s = markdown(
            &["device: test".to_string()],
            &[line("scan", Some(0.6)), line("scan", None)],
        );
        assert_eq!(
            s,
            "# mgpu bench suite\n\n- device: test\n\n\
             | primitive | size | type | mgpu ms | peer | peer ms | vs peer | vs memcpy |\n\
             |:--|--:|:--|--:|:--|--:|--:|--:|\n\
             | scan | 2^24 | i32 | 0.5000 | CUB DeviceScan::ExclusiveSum | 0.6000 | 1.200 | 0.500 |\n\
             | scan | 2^24 | i32 | 0.5000 | CUB DeviceScan::ExclusiveSum | - | - | 0.500 |\n"
        );
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let args = [
            "mgpu",
            "bench",
            "suite",
            "--markdown",
            "my suite.md",
            "it's",
        ];
        assert_eq!(
            command_line(args.map(String::from)),
            r"mgpu bench suite --markdown 'my suite.md' 'it'\''s'"
        );
        assert_eq!(duration(133), "2 min 13 s");
    }
}
