//! The `mgpu` command: demos, benchmarks and device information.

mod bench;
mod chart;
mod demo;
mod info;
mod instantiations;
mod occupancy;
mod output;
mod peers;
mod primitives;
mod tune;
mod warmup;

use clap::builder::PossibleValuesParser;
use clap::{CommandFactory, Parser, Subcommand};
use mgpu::Context;
use std::process::ExitCode;

/// Demos, benchmarks and device information for the mgpu primitives.
#[derive(Parser)]
#[command(
    name = "mgpu",
    version,
    after_help = "environment: MGPU_BACKEND=cpu|cuda forces the backend; MGPU_CACHE_DIR sets the \
                  kernel cache; MGPU_TUNING names a tuning file (none: the built-in tables; unset: \
                  ~/.config/mgpu/tuning.txt if it exists, or $XDG_CONFIG_HOME/mgpu/tuning.txt)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the seed demonstrations (all when no name): scan, max-reduce, sort-keys, sort-pairs,
    /// segreduce-csr, reduce-by-key, spmv
    Demo {
        /// Demonstrations to run, in order (all when none is named)
        #[arg(value_name = "NAME", value_parser = PossibleValuesParser::new(demo::DEMOS.iter().map(|d| d.0)))]
        names: Vec<String>,
    },
    /// GPU benchmark of a primitive (or `suite`: every primitive's headline rows, as Markdown)
    /// against a device memcpy and CUB (when nvcc is present)
    #[command(long_about = bench::LONG_ABOUT)]
    Bench(bench::BenchArgs),
    /// Every kernel of the default tunings compiled for sm_N (no GPU needed): registers, shared
    /// memory, stack and spills, theoretical occupancy, its limiter and what would raise it;
    /// checked against the driver on a GPU of that architecture
    Occupancy(occupancy::OccupancyArgs),
    /// Sweep a primitive's launch parameters (NT x VT x OCC) on this GPU, print the landscape
    /// and write the best to the tuning file
    Tune(tune::TuneArgs),
    /// Fill the kernel cache ahead of time for the named primitives and types
    Warmup(warmup::WarmupArgs),
    /// The backend, the device, and the JIT cache
    Info,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Demo { names }) => run_demo(&names),
        Some(Command::Bench(args)) => bench::run(args),
        Some(Command::Info) => info::run(),
        Some(Command::Occupancy(args)) => occupancy::run(args),
        Some(Command::Tune(args)) => tune::run(args),
        Some(Command::Warmup(args)) => warmup::run(args),
        None => {
            // As before: `mgpu` alone prints the usage and succeeds.
            let _ = Cli::command().print_help();
            Ok(())
        }
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
    // The demos run on threads of one context, so that on a cold kernel cache their modules
    // compile concurrently (the first use costs the slowest demo's compiles, not their sum);
    // their outputs are printed in order.
    let start = std::time::Instant::now();
    let outputs: Vec<Result<String, String>> = std::thread::scope(|s| {
        let ctx = &ctx;
        let runs: Vec<_> = chosen
            .iter()
            .map(|&(_, f)| s.spawn(move || f(ctx).map_err(|e| e.to_string())))
            .collect();
        runs.into_iter()
            .map(|r| r.join().unwrap_or_else(|_| Err("a demo panicked".into())))
            .collect()
    });
    let wall = start.elapsed();
    for out in outputs {
        print!("{}", out?);
    }
    let s = mgpu::cuda::jit::stats();
    eprintln!(
        "kernels compiled: {} ({} ms of compiling, concurrently; the demos took {} ms), loaded from the disk cache: {}",
        s.compiles,
        s.compile_ms,
        wall.as_millis(),
        s.disk_hits
    );
    Ok(())
}
