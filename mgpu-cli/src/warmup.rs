//! `mgpu warmup [primitive...] [--types ...]`: fills the kernel cache ahead of time, so that a
//! program's first call of each primitive loads its kernels instead of compiling them.
//!
//! With a GPU, each (primitive, type) is warmed by a child process that runs the primitive's
//! bench on a small input (`mgpu bench P --sizes 12 --types T --no-peer`): exactly the modules
//! the library loads for it, with the default operators and the tuning in effect, land in the
//! disk cache. Without a GPU (or with `--arch` of another architecture), the modules of reduce,
//! scan, sort and merge with the default operators are compiled for `--arch` straight into the
//! disk cache; the compaction and segmented-reduction modules depend on each call's
//! configuration and are warmed only on a GPU. Children run in parallel (`--jobs`): NVRTC
//! compiles one program at a time per process (the library serializes its compiles), so the
//! parallelism is across processes.

use crate::instantiations::{instantiations, Purpose};
use crate::output::{self, Progress};
use crate::primitives::{bench_types, PRIMITIVES, TYPES};
use mgpu::cuda::jit;
use mgpu::Context;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

/// Primitives whose modules can be compiled without a GPU (their sources depend only on the
/// type, the default operator and the tuning).
const WITHOUT_GPU: &[&str] = &["reduce", "scan", "sort", "merge"];

/// `mgpu warmup`'s command line.
#[derive(clap::Args)]
pub struct WarmupArgs {
    /// Primitives to warm up (all when none is named)
    #[arg(value_name = "PRIMITIVE",
          value_parser = clap::builder::PossibleValuesParser::new(PRIMITIVES))]
    primitives: Vec<String>,
    /// Element types, comma-separated [default: each primitive's bench types: i32,i64,f32,f64;
    /// i32,i64 for compaction; i32 for segreduce; f32,f64 for spmv]
    #[arg(long, value_name = "TYPES", value_delimiter = ',',
          value_parser = clap::builder::PossibleValuesParser::new(TYPES))]
    types: Vec<String>,
    /// Compile for sm_N without running anything (no GPU needed; reduce, scan, sort and merge)
    /// [default: the GPU's]
    #[arg(long, value_name = "N", value_parser = crate::occupancy::parse_arch)]
    arch: Option<u32>,
    /// Compiles in parallel (processes) [default: the CPU count, at most 8]
    #[arg(long, short, value_name = "N")]
    jobs: Option<usize>,
    /// Internal: compile one primitive's modules in this process
    #[arg(long, hide = true)]
    worker: bool,
}

pub fn run(a: WarmupArgs) -> Result<(), String> {
    let primitives: Vec<String> = if a.primitives.is_empty() {
        PRIMITIVES.iter().map(|p| p.to_string()).collect()
    } else {
        a.primitives.clone()
    };
    if a.worker {
        let arch = a.arch.ok_or("warmup --worker needs --arch")?;
        for p in &primitives {
            for ty in &a.types {
                // The modules of the default operators and the tuning in effect, through the
                // disk cache.
                for i in instantiations(p, ty, arch, Purpose::Warmup)? {
                    jit::compile(i.module.name(), &i.source, arch).map_err(|e| e.to_string())?;
                }
            }
        }
        return Ok(());
    }
    let ctx = Context::new().map_err(|e| e.to_string())?;
    let gpu = ctx.arch().filter(|&g| a.arch.is_none_or(|x| x == g));
    let arch = a.arch.or(ctx.arch()).unwrap_or(90);
    if gpu.is_none() && !jit::nvrtc_available() {
        return Err(format!(
            "warmup: nothing can be compiled without NVRTC ({}); install it (pip install \
             nvidia-cuda-nvrtc) or name it with MGPU_NVRTC",
            mgpu::cuda::discover::nvrtc()
        ));
    }
    let mut jobs: Vec<(String, String)> = Vec::new();
    let mut skipped = Vec::new();
    for p in &primitives {
        let (supported, defaults) = bench_types(p);
        let types: Vec<&str> = if a.types.is_empty() {
            defaults.to_vec()
        } else {
            a.types
                .iter()
                .map(String::as_str)
                .filter(|t| supported.contains(t))
                .collect()
        };
        if gpu.is_none() && !WITHOUT_GPU.contains(&p.as_str()) {
            skipped.push(p.clone());
            continue;
        }
        jobs.extend(types.into_iter().map(|t| (p.clone(), t.to_string())));
    }
    let how = match gpu {
        Some(g) => format!(
            "running each on a small input on sm_{g} ({})",
            ctx.description()
        ),
        None => format!("compiling for sm_{arch} (no GPU of that architecture used)"),
    };
    let cache = jit::cache_dir().map_or("no disk cache".into(), |d| d.display().to_string());
    eprintln!(
        "warmup: {} primitive/type pairs, {how}, into {cache}",
        jobs.len()
    );
    if !skipped.is_empty() {
        eprintln!(
            "warmup: skipped (their modules depend on each call's configuration; warm them on a \
             GPU): {}",
            skipped.join(", ")
        );
    }
    let parallel = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(8)
    });
    let exe = std::env::current_exe().map_err(|e| format!("finding the mgpu executable: {e}"))?;
    let start = Instant::now();
    let queue = Mutex::new(jobs.clone());
    let failures = Mutex::new(Vec::new());
    {
        let bar = Progress::new(jobs.len() as u64, "warmup");
        std::thread::scope(|s| {
            for _ in 0..parallel.max(1) {
                s.spawn(|| loop {
                    let Some((p, ty)) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    bar.set_message(format!("{p} {ty}"));
                    let mut cmd = Command::new(&exe);
                    if gpu.is_some() {
                        cmd.args(["bench", &p, "--sizes", "12", "--reps", "10", "--no-peer"])
                            .args(["--json", "--types", &ty]);
                    } else {
                        cmd.args(["warmup", &p, "--worker", "--types", &ty])
                            .args(["--arch", &arch.to_string()]);
                    }
                    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output();
                    let failed = match out {
                        Ok(o) if o.status.success() => None,
                        Ok(o) => Some(
                            String::from_utf8_lossy(&o.stderr)
                                .lines()
                                .rev()
                                .find(|l| !l.trim().is_empty())
                                .unwrap_or("failed")
                                .to_string(),
                        ),
                        Err(e) => Some(e.to_string()),
                    };
                    if let Some(e) = failed {
                        output::note(format!("warmup {p} {ty}: {e}"));
                        failures.lock().unwrap().push(format!("{p} {ty}"));
                    }
                    bar.inc();
                });
            }
        });
    }
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "warmup: {} of {} done in {:.1} s",
        jobs.len() - failures.len(),
        jobs.len(),
        start.elapsed().as_secs_f64()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("warmup failed for: {}", failures.join(", ")))
    }
}
