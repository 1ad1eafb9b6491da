//! NVRTC is found in the active Python environment's `nvidia-cuda-nvrtc` wheel without
//! `LD_LIBRARY_PATH`, and compiles a kernel.
//!
//! What the dynamic loader has opened is per process, so the test runs itself again as a child
//! process with a controlled environment: no `LD_LIBRARY_PATH`, no `MGPU_NVRTC`, `CUDA_HOME`,
//! `CUDA_PATH` or `CONDA_PREFIX`, and `VIRTUAL_ENV` set to the environment that holds the wheel
//! (`$VIRTUAL_ENV`, else the workspace's `.venv`). Skipped when there is no such wheel, unless
//! `MGPU_REQUIRE_NVRTC=1` (CI sets it). One test in this file: nothing else may open NVRTC first.

use mgpu::cuda::{discover, jit};
use mgpu::tuning::{self, Family};
use mgpu::Op;
use std::path::{Path, PathBuf};
use std::process::Command;

const CHILD: &str = "MGPU_DISCOVER_TEST_CHILD";

#[test]
fn nvrtc_is_found_in_the_python_environment_without_ld_library_path() {
    if std::env::var_os(CHILD).is_some() {
        return child();
    }
    let require = std::env::var("MGPU_REQUIRE_NVRTC").as_deref() == Ok("1");
    let venv = std::env::var_os("VIRTUAL_ENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv"));
    if !has_nvrtc_wheel(&venv) {
        assert!(
            !require,
            "MGPU_REQUIRE_NVRTC=1 but {} holds no nvidia-cuda-nvrtc wheel",
            venv.display()
        );
        eprintln!(
            "skipped: no nvidia-cuda-nvrtc wheel in {} (pip install nvidia-cuda-nvrtc there)",
            venv.display()
        );
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "nvrtc_is_found_in_the_python_environment_without_ld_library_path",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .env("VIRTUAL_ENV", &venv)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("MGPU_NVRTC")
        .env_remove("CUDA_HOME")
        .env_remove("CUDA_PATH")
        .env_remove("CONDA_PREFIX")
        .output()
        .expect("run the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "the child process failed:\n{text}");
    assert!(text.contains("1 passed"), "the child ran no test:\n{text}");
}

/// In the child: the search finds NVRTC and a kernel compiles with it.
fn child() {
    let search = discover::nvrtc();
    eprintln!("NVRTC search: {search:?}");
    let found = search
        .found
        .as_ref()
        .unwrap_or_else(|| panic!("NVRTC not found: {search}"));
    // /usr/local/cuda comes before the Python environment in the search.
    if !Path::new("/usr/local/cuda/lib64").is_dir() {
        assert_eq!(found.via, "VIRTUAL_ENV", "{found}");
        let venv = std::env::var_os("VIRTUAL_ENV").unwrap();
        assert!(found.path.starts_with(&venv), "{found} is not in {venv:?}");
    }
    assert!(
        jit::nvrtc_available(),
        "found {found}, but cudarc cannot open NVRTC"
    );
    let (major, minor) = jit::nvrtc_version().expect("NVRTC's version");
    eprintln!("NVRTC {major}.{minor}: {found}");

    let op = Op::<i32>::plus();
    let tuning = tuning::lookup(Family::Reduce, 90, 4).unwrap();
    let spec = mgpu::cuda::reduce::OpSpec::new(Some(&op), &jit::Load::plain::<i32>(), &tuning);
    let source = mgpu::cuda::family::source::<mgpu::cuda::reduce::Reduce>(&spec, None);
    let compiled = jit::compile_uncached("discover_reduce_i32", &source, 90)
        .unwrap_or_else(|e| panic!("compile with {found}: {e}"));
    assert!(!compiled.cubin.is_empty());
    // cudarc opened NVRTC by name and got the library the search had opened, not a second copy.
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let mapped: std::collections::BTreeSet<&str> = maps
        .lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .filter(|p| p.rsplit('/').next().unwrap().starts_with("libnvrtc.so"))
        .collect();
    assert_eq!(
        mapped.len(),
        1,
        "NVRTC mapped from several files: {mapped:?}"
    );
    let path = std::fs::canonicalize(&found.path).unwrap();
    assert!(
        mapped.contains(path.to_str().unwrap()),
        "{mapped:?} is not {found}"
    );
    eprintln!(
        "compiled mgpu_reduce for sm_90: {} bytes of cubin",
        compiled.cubin.len()
    );
}

/// Whether `venv` holds libnvrtc in an `nvidia-cuda-nvrtc` wheel (the layouts the search knows).
fn has_nvrtc_wheel(venv: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(venv.join("lib")) else {
        return false;
    };
    entries.filter_map(|e| e.ok()).any(|e| {
        let nvidia = e.path().join("site-packages").join("nvidia");
        ["cu13", "cuda_nvrtc"].iter().any(|wheel| {
            std::fs::read_dir(nvidia.join(wheel).join("lib")).is_ok_and(|files| {
                files
                    .filter_map(|f| f.ok())
                    .any(|f| f.file_name().to_string_lossy().starts_with("libnvrtc.so"))
            })
        })
    })
}
