//! The command line: help, typos and bad values behave as in cargo (usage errors exit with 2).

use std::process::{Command, Output};

fn mgpu(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mgpu"))
        .args(args)
        .env("MGPU_BACKEND", "cpu")
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
    for primitive in ["reduce", "scan", "sort", "merge", "select", "reduce-by-key"] {
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
