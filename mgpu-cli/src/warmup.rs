//! `mgpu warmup [primitive...] [--types ...]`: fills the kernel cache ahead of time, so that a
//! program's first call of each primitive loads its kernels instead of compiling them.
//!
//! With a GPU, each (primitive, type) is warmed by a child process that runs the primitive's
//! bench on a small input (`mgpu bench P --sizes 12 --types T --no-peer`): exactly the modules
//! the library loads for it, with the default operators and the tuning in effect, land in the
//! disk cache. Without a GPU (or with `--arch` of another architecture), the modules that every
//! registered kernel family loads for a default call (the library's registry: default operators,
//! the tuning in effect) are compiled for `--arch` straight into the disk cache, whatever
//! primitives are named. Children run in parallel (`--jobs`): NVRTC
//! compiles one program at a time per process (the library serializes its compiles), so the
//! parallelism is across processes.

use crate::instantiations::{families, family_names, primary};
use crate::output::{self, Progress};
use crate::primitives::{bench_types, PRIMITIVES, TYPES};
use mgpu::cuda::jit;
use mgpu::Context;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Instant;

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
    /// Compile for sm_N without running anything (no GPU needed; every kernel family's default
    /// modules) [default: the GPU's]
    #[arg(long, value_name = "N", value_parser = crate::occupancy::parse_arch)]
    arch: Option<u32>,
    /// Compiles in parallel (processes) [default: the CPU count, at most 8]
    #[arg(long, short, value_name = "N")]
    jobs: Option<usize>,
    /// Internal: compile one kernel family's default modules in this process
    #[arg(long, hide = true, value_name = "FAMILY")]
    worker: Option<String>,
}

pub fn run(a: WarmupArgs) -> Result<(), String> {
    let primitives: Vec<String> = if a.primitives.is_empty() {
        PRIMITIVES.iter().map(|p| p.to_string()).collect()
    } else {
        a.primitives.clone()
    };
    if let Some(family) = &a.worker {
        let arch = a.arch.ok_or("warmup --worker needs --arch")?;
        for f in families(Some(family))? {
            for ty in &a.types {
                // The parts the library loads for a default call, through the disk cache.
                for i in primary(f, ty, arch)? {
                    for (part, source) in &i.parts {
                        jit::compile(part.name, source, arch).map_err(|e| e.to_string())?;
                    }
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
    if gpu.is_none() {
        // Every family, for the types named (else the benches' usual ones).
        let types: Vec<&str> = if a.types.is_empty() {
            vec!["i32", "i64", "f32", "f64"]
        } else {
            a.types.iter().map(String::as_str).collect()
        };
        for f in family_names() {
            jobs.extend(types.iter().map(|t| (f.to_string(), t.to_string())));
        }
    }
    for p in primitives.iter().filter(|_| gpu.is_some()) {
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
    let what = if gpu.is_some() { "primitive" } else { "family" };
    eprintln!(
        "warmup: {} {what}/type pairs, {how}, into {cache}",
        jobs.len()
    );
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
                        cmd.args(["warmup", "--worker", &p, "--types", &ty])
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
