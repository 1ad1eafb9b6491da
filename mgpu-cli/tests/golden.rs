//! Golden tests: `mgpu demo` prints the seed's demonstration outputs exactly, on every backend.

use std::process::Command;

mod common;
use common::mgpu_bin;

fn demo(name: &str, backend: &str) -> Result<String, String> {
    let out = Command::new(mgpu_bin())
        .args(["demo", name])
        .env("MGPU_BACKEND", backend)
        .output()
        .expect("run mgpu");
    if out.status.success() {
        Ok(String::from_utf8(out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn backends() -> Vec<&'static str> {
    match mgpu::Context::cuda() {
        Ok(_) => vec!["cpu", "cuda"],
        Err(e) if std::env::var("MGPU_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("MGPU_REQUIRE_GPU=1 but no GPU: {e}")
        }
        Err(_) => vec!["cpu"],
    }
}

#[test]
fn demo_scan_matches_the_seed() {
    for b in backends() {
        assert_eq!(
            demo("scan", b).unwrap(),
            include_str!("golden/scan.txt"),
            "backend {b}"
        );
    }
}

#[test]
fn demo_max_reduce_matches_the_seed() {
    for b in backends() {
        assert_eq!(
            demo("max-reduce", b).unwrap(),
            include_str!("golden/max-reduce.txt"),
            "backend {b}"
        );
    }
}

/// The seed prints these demos' outputs in part (its sort-pairs excerpt has no header and says
/// "Input:"); the golden files follow the demo program's printf calls, with every number the seed's.
#[test]
fn demo_sort_keys_matches_the_seed() {
    for b in backends() {
        assert_eq!(
            demo("sort-keys", b).unwrap(),
            include_str!("golden/sort-keys.txt"),
            "backend {b}"
        );
    }
}

#[test]
fn demo_sort_pairs_matches_the_seed() {
    for b in backends() {
        assert_eq!(
            demo("sort-pairs", b).unwrap(),
            include_str!("golden/sort-pairs.txt"),
            "backend {b}"
        );
    }
}

/// The seed's segmented reduction demos (segment starts 0 9 19 25 71 87 97; keys in runs), cut
/// from its printed output.
#[test]
fn demo_segreduce_csr_matches_the_seed() {
    for b in backends() {
        assert_eq!(
            demo("segreduce-csr", b).unwrap(),
            include_str!("golden/segreduce-csr.txt"),
            "backend {b}"
        );
    }
}

#[test]
fn demo_reduce_by_key_matches_the_seed() {
    for b in backends() {
        assert_eq!(
            demo("reduce-by-key", b).unwrap(),
            include_str!("golden/reduce-by-key.txt"),
            "backend {b}"
        );
    }
}

/// The SpMV demo (no seed output to match): y = A * x of its 6 x 6 matrix with an empty row.
#[test]
fn demo_spmv_prints_the_product() {
    for b in backends() {
        let out = demo("spmv", b).unwrap();
        assert!(
            out.contains("y = A * x:\n    0:   -3.00  13.50  14.00   0.00   7.00  21.00\n"),
            "backend {b}:\n{out}"
        );
    }
}

#[test]
fn forcing_cuda_without_a_gpu_is_a_clear_error() {
    if mgpu::Context::cuda().is_ok() {
        return;
    }
    let err = demo("scan", "cuda").unwrap_err();
    assert!(err.contains("no CUDA GPU available"), "{err}");
}

#[test]
fn unknown_demo_names_the_demos() {
    let err = demo("segreduce", "cpu").unwrap_err();
    assert!(
        err.contains("scan, max-reduce, sort-keys, sort-pairs"),
        "{err}"
    );
}

/// `mgpu occupancy` compiles every family and reports each kernel (needs NVRTC, not a GPU).
#[test]
fn occupancy_report_covers_every_kernel() {
    if !mgpu::cuda::jit::nvrtc_available() {
        eprintln!("skipped: libnvrtc not found");
        return;
    }
    let out = Command::new(mgpu_bin())
        .args(["occupancy", "--arch", "90"])
        .output()
        .expect("run mgpu");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for kernel in [
        "mgpu_reduce",
        "mgpu_scan_lookback",
        "mgpu_scan_tiles",
        "mgpu_blocksort",
        "mgpu_merge_pass",
    ] {
        assert!(text.contains(kernel), "{kernel} missing:\n{text}");
    }
    assert!(
        text.contains("registers") && text.contains("CTAs/SM"),
        "{text}"
    );
}
