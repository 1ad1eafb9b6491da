//! The on-disk kernel cache: a second process compiles nothing.

use std::process::Command;

/// Runs in a child process (MGPU_JIT_CHILD=1): uses the kernels, prints the JIT counters.
#[test]
fn child_uses_kernels() {
    if std::env::var("MGPU_JIT_CHILD").is_err() {
        return;
    }
    use mgpu::{Context, Op, ScanOptions};
    let ctx = Context::new().unwrap();
    if ctx.is_gpu() {
        let data = ctx.upload(&[1i32, 2, 3]).unwrap();
        assert_eq!(ctx.reduce(&data, &Op::plus()).unwrap(), 6);
        let mut out = ctx.zeros::<i32>(3).unwrap();
        ctx.scan(&data, &mut out, &Op::plus(), ScanOptions::exclusive())
            .unwrap();
        assert_eq!(out.to_vec().unwrap(), vec![0, 1, 3]);
    } else {
        // No GPU: go through the same compile-or-load path for sm_90.
        use mgpu::cuda::family::source;
        use mgpu::cuda::jit::{compile, Load};
        use mgpu::cuda::{reduce::OpSpec, reduce::Reduce, scan::Scan};
        let t = mgpu::tuning::lookup(mgpu::tuning::Family::Scan, 90, 4).unwrap();
        let spec = OpSpec::new(Some(&Op::<i32>::plus()), &Load::plain::<i32>(), &t);
        compile("reduce", &source::<Reduce>(&spec, None), 90).unwrap();
        compile("scan", &source::<Scan>(&spec, None), 90).unwrap();
    }
    let s = mgpu::cuda::jit::stats();
    println!("JIT compiles={} disk_hits={}", s.compiles, s.disk_hits);
}

fn run_child(cache: &std::path::Path) -> (u64, u64) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_uses_kernels",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MGPU_JIT_CHILD", "1")
        .env("MGPU_CACHE_DIR", cache)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = text
        .lines()
        .find(|l| l.contains("JIT compiles="))
        .unwrap_or_else(|| panic!("no counters: {text}"));
    let num = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap()
            .parse()
            .unwrap()
    };
    (num("compiles="), num("disk_hits="))
}

#[test]
fn a_second_process_compiles_nothing() {
    if !mgpu::cuda::jit::nvrtc_available() {
        if std::env::var("MGPU_REQUIRE_NVRTC").as_deref() == Ok("1") {
            panic!("MGPU_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded");
        }
        eprintln!("skipped: libnvrtc not found");
        return;
    }
    let dir = std::env::temp_dir().join(format!("mgpu-jit-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (compiles, _) = run_child(&dir);
    assert!(
        compiles >= 2,
        "first process should compile, got {compiles}"
    );
    let (compiles, hits) = run_child(&dir);
    assert_eq!(compiles, 0, "second process compiled {compiles} kernels");
    assert!(
        hits >= 2,
        "second process should load from disk, got {hits}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
