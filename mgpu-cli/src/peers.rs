//! Peer benchmarks: reference implementations measured in the same run as
//! mgpu, so `mgpu bench` can report how it compares.
//!
//! The peers are NVIDIA CUB and, for SpMV, cuSPARSE. Their harness
//! (`peers/cub_bench.cu`) is embedded in the binary, built on first use with
//! `nvcc` (linked with `-lcusparse`) and cached on disk keyed by a hash of the
//! source and the build flags. Where cuSPARSE cannot be built or linked, the
//! harness is built without it (its `spmv` then says unsupported).

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the harness source lives: embedded in the binary.
pub const CUB_BENCH_SOURCE: &str = include_str!("../../peers/cub_bench.cu");

/// Flags passed to nvcc (before `-o <exe> <src>`). Part of the cache key.
const NVCC_FLAGS: &[&str] = &["-O3", "-std=c++17", "-arch=sm_90"];

/// The build with cuSPARSE: extra flags (none) and libraries (after the source).
const WITH_CUSPARSE: (&[&str], &[&str]) = (&[], &["-lcusparse"]);
/// The fallback without it.
const WITHOUT_CUSPARSE: (&[&str], &[&str]) = (&["-DCUB_BENCH_NO_CUSPARSE"], &[]);

/// Exit status with which the harness says an algorithm is not available.
const EXIT_UNSUPPORTED: i32 = 3;

/// A built CUB peer harness, ready to run.
#[derive(Debug, Clone)]
pub struct Peer {
    exe: PathBuf,
}

/// One parsed measurement from the harness.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerResult {
    pub median_ms: f64,
    pub min_ms: f64,
    /// `ok`, `FAIL` or `skip`, as the harness printed it.
    pub check: String,
    /// The checksum of the generated geometry (`geom=`, segreduce and spmv).
    pub geometry: Option<String>,
}

impl Peer {
    /// Builds the harness with nvcc if nvcc is on PATH (or at
    /// /usr/local/cuda/bin/nvcc). Caches the binary keyed by a hash of the
    /// source in `$MGPU_CACHE_DIR` or `$XDG_CACHE_HOME/mgpu` or
    /// `~/.cache/mgpu` (subfolder peers/). Returns Ok(None) if no nvcc is
    /// found; Err(String) with nvcc's output if the build fails. Prints a
    /// progress line to stderr when it compiles.
    pub fn build() -> Result<Option<Peer>, String> {
        let nvcc = match find_nvcc() {
            Some(p) => p,
            None => return Ok(None),
        };
        let dir = mgpu::cuda::jit::cache_dir()
            .ok_or_else(|| "cannot find a cache directory: set MGPU_CACHE_DIR or HOME".to_string())?
            .join("peers");
        // With cuSPARSE; a failure is remembered (`.failed`, with nvcc's output) so later runs go
        // straight to the build without it.
        match build_variant(&nvcc, &dir, WITH_CUSPARSE) {
            Ok(exe) => Ok(Some(Peer { exe })),
            Err(e) => {
                eprintln!(
                    "warning: the peer with cuSPARSE did not build; building it without (no SpMV \
                     peer):\n{e}"
                );
                build_variant(&nvcc, &dir, WITHOUT_CUSPARSE).map(|exe| Some(Peer { exe }))
            }
        }
    }

    /// Uses an already-built harness binary.
    #[allow(dead_code)]
    pub fn from_exe(exe: impl Into<PathBuf>) -> Peer {
        Peer { exe: exe.into() }
    }

    /// Path of the harness binary.
    #[allow(dead_code)]
    pub fn exe(&self) -> &Path {
        &self.exe
    }

    /// Runs one measurement; `param` is the harness's optional fifth argument: percent selected
    /// (or `even`, the predicate `(x & 1) == 0`) for select-*/partition-if, mean run length for
    /// unique/unique-by-key/rle/nontrivial-runs/reduce-by-key,
    /// the segment distribution of `segreduce` (`fixed-L`, `uniform-M`, `powerlaw`, `one`,
    /// `empty-M`) or the matrix of `spmv` (`random-M`, `powerlaw`, `stencil2d`, `stencil3d`),
    /// whose results carry the geometry's checksum; None: its default. Returns the parsed line.
    pub fn run(
        &self,
        algo: &str,
        ty: &str,
        n: u64,
        reps: u32,
        param: Option<&str>,
    ) -> Result<PeerResult, String> {
        let output = Command::new(&self.exe)
            .args(harness_args(algo, ty, n, reps, param))
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.exe.display()))?;
        // Names the measurement in errors; the param only where one was given.
        let what = match param {
            Some(p) => format!("{algo} {ty} n={n} param={p}"),
            None => format!("{algo} {ty} n={n}"),
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            if output.status.code() == Some(EXIT_UNSUPPORTED) {
                return Err(format!("cub: {algo} is unsupported by this CUB"));
            }
            let said: Vec<&str> = [stdout.trim(), stderr.trim()]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
            return Err(format!(
                "cub peer {what} failed ({}): {}",
                output.status,
                said.join("\n")
            ));
        }
        parse_output(&stdout).map_err(|e| {
            format!(
                "cub peer {what}: {e}\nstdout: {}\nstderr: {}",
                stdout.trim(),
                stderr.trim()
            )
        })
    }
}

/// Builds (or finds in the cache) the harness with `flags` before the source and `libs` after
/// it; returns the executable. A failed build leaves `<name>.failed` with nvcc's output, which
/// later calls return as the error without building again.
fn build_variant(
    nvcc: &Path,
    dir: &Path,
    (flags, libs): (&[&str], &[&str]),
) -> Result<PathBuf, String> {
    let all: Vec<&str> = NVCC_FLAGS
        .iter()
        .chain(flags)
        .chain(libs)
        .copied()
        .collect();
    let key = format!("{:016x}", source_key(CUB_BENCH_SOURCE, &all));
    let exe = dir.join(format!("cub_bench-{key}"));
    if is_file(&exe) {
        return Ok(exe);
    }
    let failed = dir.join(format!("cub_bench-{key}.failed"));
    if let Ok(log) = fs::read_to_string(&failed) {
        return Err(format!(
            "{log}\n(remembered from an earlier build; delete {} to try again)",
            failed.display()
        ));
    }

    fs::create_dir_all(dir)
        .map_err(|e| format!("cannot create cache directory {}: {e}", dir.display()))?;
    let src = dir.join(format!("cub_bench-{key}.cu"));
    fs::write(&src, CUB_BENCH_SOURCE)
        .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    // Build to a private name, then rename into place, so a killed or
    // concurrent build never leaves a half-written binary under the final name.
    let tmp_exe = dir.join(format!("cub_bench-{key}.tmp{}", std::process::id()));

    eprintln!("building the CUB peer with nvcc (a few minutes)...");
    let output = Command::new(nvcc)
        .args(NVCC_FLAGS)
        .args(flags)
        .arg("-o")
        .arg(&tmp_exe)
        .arg(&src)
        .args(libs)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
    if !output.status.success() {
        let _ = fs::remove_file(&tmp_exe);
        let mut msg = format!(
            "{} {} failed ({}) building the CUB peer:\n",
            nvcc.display(),
            all.join(" "),
            output.status
        );
        msg.push_str(&String::from_utf8_lossy(&output.stdout));
        msg.push_str(&String::from_utf8_lossy(&output.stderr));
        let _ = fs::write(&failed, &msg);
        return Err(msg);
    }
    fs::rename(&tmp_exe, &exe).map_err(|e| {
        let _ = fs::remove_file(&tmp_exe);
        format!("cannot move the built peer to {}: {e}", exe.display())
    })?;
    Ok(exe)
}

/// The harness's command line after the program name:
/// `<algo> <type> <n> <reps> [param]`.
fn harness_args(algo: &str, ty: &str, n: u64, reps: u32, param: Option<&str>) -> Vec<String> {
    let mut args = vec![
        algo.to_string(),
        ty.to_string(),
        n.to_string(),
        reps.to_string(),
    ];
    args.extend(param.map(str::to_string));
    args
}

/// Parses the harness output: finds the `peer=...` line and reads its
/// `key=value` tokens. Tokens may come in any order; unknown keys are ignored.
pub fn parse_output(stdout: &str) -> Result<PeerResult, String> {
    let line = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.split_whitespace().any(|t| t.starts_with("peer=")))
        .ok_or_else(|| "no result line (peer=...) in the output".to_string())?;
    let fields: HashMap<&str, &str> = line
        .split_whitespace()
        .filter_map(|tok| tok.split_once('='))
        .collect();
    let num = |key: &str| -> Result<f64, String> {
        let v = fields
            .get(key)
            .ok_or_else(|| format!("missing {key}= in {line:?}"))?;
        let x: f64 = v
            .parse()
            .map_err(|_| format!("bad {key}={v} in {line:?}"))?;
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(format!("bad {key}={v} in {line:?}"))
        }
    };
    Ok(PeerResult {
        median_ms: num("median_ms")?,
        min_ms: num("min_ms")?,
        check: fields
            .get("check")
            .map(|s| s.to_string())
            .unwrap_or_else(|| "skip".to_string()),
        geometry: fields.get("geom").map(|s| s.to_string()),
    })
}

/// FNV-1a, 64 bit: a stable hash (unlike std's, which may change between releases).
fn fnv1a64(mut h: u64, bytes: &[u8]) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(PRIME);
    }
    h
}

/// Cache key of the harness: its source and the nvcc flags.
fn source_key(source: &str, flags: &[&str]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    let mut h = fnv1a64(OFFSET, source.as_bytes());
    for f in flags {
        h = fnv1a64(h, &[0]);
        h = fnv1a64(h, f.as_bytes());
    }
    h
}

fn non_empty_env(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

fn is_file(p: &Path) -> bool {
    fs::metadata(p).map(|m| m.is_file()).unwrap_or(false)
}

/// nvcc on PATH, else the usual CUDA install locations.
fn find_nvcc() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let cand = dir.join("nvcc");
            if is_file(&cand) {
                return Some(cand);
            }
        }
    }
    let mut fallbacks: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(d) = non_empty_env(var) {
            fallbacks.push(PathBuf::from(d).join("bin").join("nvcc"));
        }
    }
    fallbacks.push(PathBuf::from("/usr/local/cuda/bin/nvcc"));
    fallbacks.into_iter().find(|p| is_file(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_result_line() {
        let out =
            "peer=cub algo=reduce type=i32 n=1048576 median_ms=0.012345 min_ms=0.011000 check=ok\n";
        let r = parse_output(out).unwrap();
        assert_eq!(r.median_ms, 0.012345);
        assert_eq!(r.min_ms, 0.011);
        assert_eq!(r.check, "ok");
    }

    #[test]
    fn tolerates_noise_order_and_exponents() {
        let out = "some warning\n  check=FAIL min_ms=1e-3 peer=cub median_ms=2.5E-3 extra=1  \n\n";
        let r = parse_output(out).unwrap();
        assert_eq!(r.median_ms, 0.0025);
        assert_eq!(r.min_ms, 0.001);
        assert_eq!(r.check, "FAIL");
    }

    #[test]
    fn rejects_bad_output() {
        assert!(parse_output("").is_err());
        assert!(parse_output("unsupported\n").is_err());
        assert!(parse_output("peer=cub median_ms=1.0 check=ok").is_err()); // no min_ms
        assert!(parse_output("peer=cub median_ms=abc min_ms=1 check=ok").is_err());
        assert!(parse_output("peer=cub median_ms=nan min_ms=1 check=ok").is_err());
    }

    #[test]
    fn param_is_the_fifth_argument_when_given() {
        assert_eq!(
            harness_args("reduce", "i32", 1024, 20, None),
            ["reduce", "i32", "1024", "20"]
        );
        assert_eq!(
            harness_args("select-if", "f64", 1 << 28, 10, Some("0")),
            ["select-if", "f64", "268435456", "10", "0"]
        );
        assert_eq!(
            harness_args("segreduce", "i32", 1 << 20, 20, Some("uniform-500")),
            ["segreduce", "i32", "1048576", "20", "uniform-500"]
        );
    }

    #[test]
    fn result_line_with_param_parses() {
        let out =
            "peer=cub algo=rle type=i64 n=1000 param=2 median_ms=0.02 min_ms=0.019 check=ok\n";
        let r = parse_output(out).unwrap();
        assert_eq!(r.median_ms, 0.02);
        assert_eq!(r.check, "ok");
    }

    #[test]
    fn geometry_checksum_is_read() {
        let out = "peer=cub algo=segreduce type=i32 n=1000 param=fixed-2 median_ms=0.02 \
                   min_ms=0.019 check=ok geom=0123456789abcdef\n";
        let r = parse_output(out).unwrap();
        assert_eq!(r.geometry.as_deref(), Some("0123456789abcdef"));
        assert_eq!(
            parse_output("peer=cub median_ms=1 min_ms=0.5")
                .unwrap()
                .geometry,
            None
        );
    }

    #[test]
    fn missing_check_is_skip() {
        let r = parse_output("peer=cub median_ms=1 min_ms=0.5").unwrap();
        assert_eq!(r.check, "skip");
    }

    #[test]
    fn hash_is_stable_and_sensitive() {
        // FNV-1a 64 reference values.
        assert_eq!(fnv1a64(0xcbf2_9ce4_8422_2325, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(0xcbf2_9ce4_8422_2325, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_ne!(source_key("x", &["-O3"]), source_key("x", &["-O2"]));
        assert_ne!(source_key("x", &["-O3"]), source_key("y", &["-O3"]));
    }
}
