//! The command line: help, typos and bad values behave as in cargo (usage errors exit with 2).

use std::process::{Command, Output};

mod common;
use common::mgpu_bin;

fn mgpu(args: &[&str]) -> Output {
    Command::new(mgpu_bin())
        .args(args)
        .env("MGPU_BACKEND", "cpu")
        // No default tuning file of the machine's user.
        .env("XDG_CONFIG_HOME", "/nonexistent/mgpu-cli-test")
        .env_remove("MGPU_TUNING")
        .output()
        .expect("run mgpu")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_lists_the_commands() {
    let o = mgpu(&["--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for command in ["demo", "bench", "occupancy", "info"] {
        assert!(out.contains(command), "no `{command}` in:\n{out}");
    }
}

#[test]
fn bench_help_lists_the_flags_and_primitives() {
    let o = mgpu(&["bench", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for flag in [
        "--sizes",
        "--types",
        "--reps",
        "--csv",
        "--no-peer",
        "--deterministic",
        "--transform",
        "--offset",
    ] {
        assert!(out.contains(flag), "no `{flag}` in:\n{out}");
    }
    for primitive in [
        "reduce",
        "scan",
        "sort",
        "merge",
        "select",
        "reduce-by-key",
        "suite",
    ] {
        assert!(out.contains(primitive), "no `{primitive}` in:\n{out}");
    }
}

#[test]
fn a_mistyped_command_suggests_the_right_one() {
    let o = mgpu(&["bnech"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("'bench'"), "no suggestion in:\n{err}");
}

#[test]
fn a_mistyped_primitive_suggests_the_right_one() {
    let o = mgpu(&["bench", "scna"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("'scan'"), "no suggestion in:\n{err}");
}

#[test]
fn bad_values_are_usage_errors() {
    for args in [
        &["bench", "scan", "--sizes", "x"][..],
        &["bench", "scan", "--sizes", "16..40"],
        &["bench", "scan", "--reps", "many"],
        &["bench", "reduce", "--transform", "cube"],
        &["bench", "scan", "--bogus"],
        &["occupancy", "--arch", "x"],
        &["demo", "nope"],
    ] {
        let o = mgpu(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("Usage") || stderr(&o).contains("--help"));
    }
}

#[test]
fn info_describes_the_cpu_backend() {
    let o = mgpu(&["info"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for what in [
        "backend: cpu",
        "MGPU_BACKEND=cpu",
        "rayon",
        "NVRTC",
        "CUDA driver",
        "kernel cache",
        "tuning: built-in tables",
    ] {
        assert!(out.contains(what), "no `{what}` in:\n{out}");
    }
}

/// `mgpu` with extra environment variables.
fn mgpu_env(args: &[&str], vars: &[(&str, &std::ffi::OsStr)]) -> Output {
    let mut c = Command::new(mgpu_bin());
    c.args(args)
        .env("MGPU_BACKEND", "cpu")
        .env("XDG_CONFIG_HOME", "/nonexistent/mgpu-cli-test")
        .env_remove("MGPU_TUNING");
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().expect("run mgpu")
}

/// A fresh folder for one test.
fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mgpu-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn help_lists_tune_and_warmup() {
    let out = stdout(&mgpu(&["--help"]));
    for command in ["tune", "warmup"] {
        assert!(out.contains(command), "no `{command}` in:\n{out}");
    }
}

#[test]
fn tune_help_lists_its_options() {
    let o = mgpu(&["tune", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for what in [
        "--type",
        "--size",
        "--reps",
        "--output",
        "--dry-run",
        "scan",
        "sort",
    ] {
        assert!(out.contains(what), "no `{what}` in:\n{out}");
    }
    assert_eq!(mgpu(&["tune", "scna"]).status.code(), Some(2));
    assert_eq!(
        mgpu(&["tune", "scan", "--type", "i9"]).status.code(),
        Some(2)
    );
}

#[test]
fn warmup_help_lists_its_options() {
    let o = mgpu(&["warmup", "--help"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for what in ["--types", "--arch", "--jobs", "PRIMITIVE"] {
        assert!(out.contains(what), "no `{what}` in:\n{out}");
    }
    assert!(!out.contains("--worker"), "internal flag shown:\n{out}");
    assert_eq!(mgpu(&["warmup", "nope"]).status.code(), Some(2));
}

#[test]
fn bench_help_lists_the_machine_outputs() {
    let out = stdout(&mgpu(&["bench", "--help"]));
    for flag in ["--quick", "--json", "--csv", "--chart", "--markdown"] {
        assert!(out.contains(flag), "no `{flag}` in:\n{out}");
    }
}

#[test]
fn bench_quick_json_is_a_json_array_of_rows() {
    let o = mgpu(&["bench", "scan", "--quick", "--json", "--types", "i32"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", stdout(&o)));
    let rows = rows.as_array().expect("an array");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let r = &rows[0];
    assert_eq!(r["variant"], "scan");
    assert_eq!(r["type"], "i32");
    assert_eq!(r["log2n"], 24);
    assert!(r["mgpu_ms"].as_f64().unwrap() > 0.0);
    assert!(r["memcpy_ms"].as_f64().is_some());
    assert_eq!(r["tuning_source"], "built-in tables");
    assert!(r["tuning"].as_str().unwrap().contains('x'), "{r}");
    // No table, no progress bar (stderr is not a terminal).
    assert!(!stdout(&o).contains("mgpu_ms "), "{}", stdout(&o));
    assert!(!stderr(&o).contains('['), "{}", stderr(&o));
}

#[test]
fn bench_writes_csv_and_svg_charts() {
    let dir = scratch("chart");
    let csv = dir.join("rows.csv");
    let o = mgpu(&[
        "bench",
        "reduce",
        "--sizes",
        "10..11",
        "--reps",
        "10",
        "--types",
        "i32,f64",
        "--csv",
        csv.to_str().unwrap(),
        "--chart",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("# tuning: built-in tables"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("reduce ") && l.ends_with("256x16x4")),
        "{out}"
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    assert!(text.starts_with("primitive,type,log2n,"), "{text}");
    assert_eq!(text.lines().count(), 5, "{text}");
    for ty in ["i32", "f64"] {
        let svg = std::fs::read_to_string(dir.join(format!("reduce-{ty}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("mgpu reduce") && svg.contains("memcpy"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `bench sort`: the merge rows on the merge sort's types (any named by --types), the radix rows
/// on every type and distribution, with their traffic limit.
#[test]
fn bench_sort_runs_merge_and_radix_rows() {
    let variants = |args: &[&str]| -> Vec<(String, String, serde_json::Value)> {
        let o = mgpu(args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let s = |k: &str| r[k].as_str().unwrap().to_string();
                (s("type"), s("variant"), r.clone())
            })
            .collect()
    };
    let rows = variants(&["bench", "sort", "--sizes", "10", "--reps", "10", "--json"]);
    let of = |ty: &str| -> Vec<String> {
        rows.iter()
            .filter(|r| r.0 == ty)
            .map(|r| r.1.clone())
            .collect()
    };
    assert_eq!(of("u8"), ["radix-keys", "radix-pairs"]);
    assert_eq!(
        of("f64"),
        ["sort-keys", "sort-pairs", "radix-keys", "radix-pairs"]
    );
    let types: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    for ty in ["u8", "u16", "i32", "u32", "f32", "i64", "u64", "f64"] {
        assert!(types.contains(&ty), "no {ty} in {types:?}");
    }
    for (_, variant, r) in &rows {
        let radix = variant.starts_with("radix");
        assert_eq!(r["vs_limit"].as_f64().is_some(), radix, "{r}");
        assert_eq!(r["limit_ms"].as_f64().is_some(), radix, "{r}");
    }
    let rows = variants(&[
        "bench",
        "sort",
        "--sizes",
        "10",
        "--reps",
        "10",
        "--json",
        "--types",
        "u16",
        "--dist",
        "equal,bits20",
    ]);
    let names: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "sort-keys",
            "sort-pairs",
            "radix-keys/equal",
            "radix-pairs/equal",
            "radix-keys/bits20",
            "radix-pairs/bits20"
        ]
    );
    let rows = variants(&[
        "bench",
        "radix",
        "--sizes",
        "10",
        "--reps",
        "10",
        "--json",
        "--types",
        "i64",
        "--dist",
        "few,sorted,reversed,uniform",
    ]);
    let names: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(names.len(), 8, "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("radix-")), "{names:?}");
    // --dist is the radix rows' alone.
    let o = mgpu(&["bench", "scan", "--sizes", "10", "--dist", "equal"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stderr(&o).contains("--dist"), "{}", stderr(&o));
}

/// `bench suite`: the headline rows as one Markdown table on stdout (the benches' tables on
/// stderr), the same in the --markdown file; options it does not take are errors.
#[test]
fn bench_suite_writes_one_markdown_table() {
    let dir = scratch("suite");
    let file = dir.join("suite.md");
    let args = [
        "bench",
        "suite",
        "--sizes",
        "10..11",
        "--reps",
        "10",
        "--markdown",
    ];
    let o = mgpu(&[&args[..], &[file.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), out);
    assert!(out.starts_with("# mgpu bench suite\n"), "{out}");
    assert!(out.contains("- device: cpu"), "{out}");
    assert!(
        out.contains("bench suite --sizes 10..11 --reps 10 --markdown"),
        "{out}"
    );
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| primitive"))
        .collect();
    assert_eq!(rows.len(), 44, "{out}");
    assert!(rows[0].starts_with("| reduce | 2^10 | i32 | "), "{out}");
    assert!(
        rows[43].starts_with("| spmv/random-32/apply | 2^11 | f32 | "),
        "{out}"
    );
    assert!(!out.contains("mgpu_ms"), "{out}");
    assert!(stderr(&o).contains("mgpu_ms"), "{}", stderr(&o));
    for wrong in [
        &["bench", "suite", "--types", "i32"][..],
        &["bench", "scan", "--markdown", "x.md"],
    ] {
        let o = mgpu(wrong);
        assert_eq!(o.status.code(), Some(1), "{wrong:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(wrong[2]), "{}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tune segsort` says which tunings the segmented sort runs, and sweeps nothing (its tiles share
/// the merge sort's entries, which a sweep would write over).
#[test]
fn tune_segsort_points_to_the_merge_sort() {
    let o = mgpu(&["tune", "segsort", "--cpu", "--size", "10", "--dry-run"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("tune `sort`"), "{}", stderr(&o));
    assert!(!stdout(&o).contains("NT="), "{}", stdout(&o));
}

/// `tune radix` sweeps NT >= 256 only (a thread per digit bin).
#[test]
fn tune_radix_sweeps_the_radix_families() {
    let o = mgpu(&["tune", "radix", "--cpu", "--size", "10", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("# radix_keys (radix)") && out.contains("# radix_pairs (radix)"),
        "{out}"
    );
    assert!(
        out.contains("NT=256") && out.contains("NT=384") && !out.contains("NT=128"),
        "{out}"
    );
    assert!(out.contains("dry run"), "{out}");
}

/// `tune reduce` sweeps VTs that are multiples of four, the only ones whose tiles the commutative
/// reduce reads in 16-byte vectors (odd VTs timed its scalar loop alone).
#[test]
fn tune_reduce_sweeps_vector_tiles() {
    let o = mgpu(&["tune", "reduce", "--cpu", "--size", "10", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let vts: Vec<u32> = stdout(&o)
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("VT"))
        .skip(1)
        .map_while(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert_eq!(vts, [8, 12, 16, 24, 32], "{}", stdout(&o));
}

#[test]
fn bench_names_the_tuning_file_in_effect() {
    let dir = scratch("tuning");
    std::fs::create_dir_all(dir.join("mgpu")).unwrap();
    std::fs::write(
        dir.join("mgpu/tuning.txt"),
        "mgpu-tuning 1\nscan 90 4 128 15 4\n",
    )
    .unwrap();
    // The default location ($XDG_CONFIG_HOME/mgpu/tuning.txt), MGPU_TUNING being unset.
    let args = [
        "bench", "scan", "--sizes", "10", "--reps", "10", "--types", "i32", "--json",
    ];
    let o = mgpu_env(&args, &[("XDG_CONFIG_HOME", dir.as_os_str())]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["tuning"], "128x15x4");
    let source = rows[0]["tuning_source"].as_str().unwrap();
    assert!(
        source.contains("tuning.txt") && source.contains("default"),
        "{source}"
    );
    // MGPU_TUNING=none: the built-in tables.
    let none = std::ffi::OsStr::new("none");
    let o = mgpu_env(
        &args,
        &[("XDG_CONFIG_HOME", dir.as_os_str()), ("MGPU_TUNING", none)],
    );
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["tuning_source"], "built-in tables");
    assert_ne!(rows[0]["tuning"], "128x15x4");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tuning_file_of_another_version_is_a_clear_error() {
    let dir = scratch("version");
    let file = dir.join("tuning.txt");
    std::fs::write(&file, "mgpu-tuning 7\nscan 90 4 128 15 4\n").unwrap();
    let o = mgpu_env(
        &["bench", "scan", "--quick", "--types", "i32"],
        &[("MGPU_TUNING", file.as_os_str())],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("tuning.txt") && err.contains("version 7") && err.contains("mgpu-tuning 1"),
        "{err}"
    );
    let o = mgpu_env(&["info"], &[("MGPU_TUNING", file.as_os_str())]);
    assert!(stdout(&o).contains("version 7"), "{}", stdout(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sweep's plumbing (candidates, child benches, landscape, file) on the CPU backend; its
/// numbers say nothing.
#[test]
fn tune_writes_a_versioned_tuning_file() {
    let dir = scratch("tune");
    let file = dir.join("out.txt");
    std::fs::write(&file, "# kept\nreduce 90 4 256 15 4\n").unwrap();
    let o = mgpu(&[
        "tune",
        "scan",
        "--cpu",
        "--size",
        "10",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("NT=64") && out.contains("NT=512") && out.contains('*'),
        "{out}"
    );
    assert!(out.contains("built-in 128x39x11"), "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("mgpu-tuning 1"), "{text}");
    assert!(text.contains("# kept\nreduce 90 4 256 15 4\n"), "{text}");
    assert!(text.contains("# mgpu tune scan "), "{text}");
    let entry = text.lines().last().unwrap();
    assert!(
        entry.starts_with("scan ") && entry.contains(" 90 "),
        "{text}"
    );
    // The file is used: `mgpu bench` names it.
    let o = mgpu_env(
        &[
            "bench", "scan", "--sizes", "10", "--reps", "10", "--types", "i32",
        ],
        &[("MGPU_TUNING", file.as_os_str())],
    );
    assert!(
        stdout(&o).contains("out.txt (MGPU_TUNING)"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn warmup_compiles_or_says_what_it_needs() {
    let dir = scratch("warmup");
    let o = mgpu_env(
        &["warmup", "scan", "--types", "i32", "--arch", "90"],
        &[("MGPU_CACHE_DIR", dir.as_os_str())],
    );
    if o.status.success() {
        // NVRTC present: the module is in the cache.
        let files = std::fs::read_dir(&dir).unwrap().count();
        assert!(files >= 1, "{}", stderr(&o));
    } else {
        assert!(stderr(&o).contains("NVRTC"), "{}", stderr(&o));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
