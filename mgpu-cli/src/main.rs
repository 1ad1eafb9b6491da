//! The `mgpu` command: demos, benchmarks and device information.

mod bench;
mod bench_compact;
mod demo;
mod occupancy;
mod peers;

use mgpu::Context;
use std::process::ExitCode;

const USAGE: &str = "\
usage: mgpu <command> [args]

commands:
  demo [NAME...]        run the seed demonstrations (all when no name): scan, max-reduce,
                        sort-keys, sort-pairs
  bench <reduce|scan|sort|merge|select|partition|unique|rle|reduce-by-key> [--sizes A..B] [--types i32,i64,f32,f64] [--reps N]
        [--csv FILE] [--no-peer] [--deterministic] [--transform square] [--offset K]
                        GPU benchmark against a device memcpy and CUB (when nvcc is present:
                        DeviceReduce, DeviceScan, DeviceMergeSort and DeviceRadixSort, DeviceMerge);
                        sizes are powers of two (default 16..28); types also u32, u64,
                        and u8, u16 for reduce and scan (no CUB peer for those two);
                        --transform square adds x * x fused into the load (-sq, vs CUB's
                        TransformReduce) and materialized first (-sqmat); --offset K runs on
                        views K elements into their buffers (@+K); the compaction family
                        (i32, i64) runs selection rates 0..100% and mean run lengths 1..500,
                        in and out of place, against CUB's DeviceSelect, DevicePartition,
                        DeviceRunLengthEncode and DeviceReduce::ReduceByKey
  occupancy [--arch N]  every kernel compiled for sm_N (default: the GPU's, else 90): registers,
                        shared memory, local memory, and theoretical occupancy with its limiter
  info                  the backend, the device, and the JIT cache

environment: MGPU_BACKEND=cpu|cuda forces the backend; MGPU_CACHE_DIR sets the kernel cache;
MGPU_TUNING names a tuning file.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("demo") => run_demo(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("info") => info(),
        Some("occupancy") => occupancy::run(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mgpu: {e}");
            ExitCode::FAILURE
        }
    }
}

fn context() -> Result<Context, String> {
    Context::new().map_err(|e| e.to_string())
}

fn run_demo(names: &[String]) -> Result<(), String> {
    let ctx = context()?;
    eprintln!("backend: {}", ctx.description());
    let chosen: Vec<_> = if names.is_empty() {
        demo::DEMOS.to_vec()
    } else {
        names
            .iter()
            .map(|n| {
                demo::DEMOS
                    .iter()
                    .find(|(name, _)| name == n)
                    .copied()
                    .ok_or_else(|| {
                        let all: Vec<_> = demo::DEMOS.iter().map(|d| d.0).collect();
                        format!("unknown demo `{n}`; demos: {}", all.join(", "))
                    })
            })
            .collect::<Result<_, _>>()?
    };
    for (_, f) in chosen {
        print!("{}", f(&ctx).map_err(|e| e.to_string())?);
    }
    let s = mgpu::cuda::jit::stats();
    eprintln!(
        "kernels compiled: {} ({} ms), loaded from the disk cache: {}",
        s.compiles, s.compile_ms, s.disk_hits
    );
    Ok(())
}

fn info() -> Result<(), String> {
    let ctx = context()?;
    println!("backend: {}", ctx.description());
    println!("CUDA driver present: {}", mgpu::cuda::driver_available());
    println!("NVRTC present: {}", mgpu::cuda::jit::nvrtc_available());
    println!("kernel cache: {:?}", mgpu::cuda::jit::cache_dir());
    Ok(())
}
