//! `mgpu info`: the backend, the device (what the seed's benchmarks print about it), the CUDA
//! libraries found and where, the kernel cache and the tuning in effect.

use mgpu::cuda::{discover, jit};
use mgpu::Context;
use std::path::Path;

pub fn run() -> Result<(), String> {
    let ctx = Context::new().map_err(|e| e.to_string())?;
    println!("backend: {}", ctx.description());
    match ctx.device_info() {
        Some(d) => {
            println!(
                "device {}: {}   SM clock {:.0} MHz",
                d.ordinal, d.name, d.sm_clock_mhz
            );
            let (major, minor) = d.compute_capability;
            println!("  {} SMs, compute capability sm_{major}{minor}", d.sm_count);
            println!(
                "  memory: {} total, {} free",
                bytes(d.memory_total),
                bytes(d.memory_free)
            );
            println!(
                "  memory clock: {:.0} MHz x {} bits   ({:.1} GB/s peak)",
                d.memory_clock_mhz,
                d.bus_width_bits,
                d.peak_bandwidth_gbs()
            );
            println!("  L2 cache: {}", bytes(d.l2_bytes));
            println!("  ECC {}", if d.ecc { "enabled" } else { "disabled" });
        }
        None => {
            let why = match ctx.fallback_reason() {
                Some(reason) => reason.to_string(),
                None => "the CPU backend was asked for (MGPU_BACKEND=cpu)".to_string(),
            };
            println!("GPU: none used: {why}");
            println!(
                "CPU backend: every primitive runs on rayon's thread pool (RAYON_NUM_THREADS \
                 sets its size)"
            );
        }
    }
    let driver = discover::driver();
    match (discover::driver_version(), &driver.found) {
        (Some((major, minor)), Some(found)) => println!("CUDA driver {major}.{minor}: {found}"),
        (None, Some(found)) => println!("CUDA driver (version unknown): {found}"),
        (_, None) => println!("CUDA driver: {driver}"),
    }
    let nvrtc = discover::nvrtc();
    match (&nvrtc.found, jit::nvrtc_version()) {
        (Some(found), Ok((major, minor))) => println!("NVRTC {major}.{minor}: {found}"),
        (Some(found), Err(e)) => println!("NVRTC (unusable: {e}): {found}"),
        (None, _) => println!("NVRTC: {nvrtc}"),
    }
    // Only groups of several GPU ranks (mgpu::dist) need NCCL.
    let nccl = discover::nccl();
    match (&nccl.found, mgpu::cuda::nccl::version()) {
        (Some(found), Ok((major, minor, patch))) => {
            println!("NCCL {major}.{minor}.{patch}: {found}")
        }
        (Some(found), Err(e)) => println!("NCCL (unusable: {e}): {found}"),
        (None, _) => println!("NCCL (for multi-GPU groups): {nccl}"),
    }
    match jit::cache_dir() {
        Some(dir) if !dir.is_dir() => println!("kernel cache: {} (not created yet)", dir.display()),
        Some(dir) => {
            let (files, size) = folder_usage(&dir);
            println!(
                "kernel cache: {} ({files} files, {})",
                dir.display(),
                bytes(size)
            );
        }
        None => println!("kernel cache: none (no MGPU_CACHE_DIR, XDG_CACHE_HOME or HOME)"),
    }
    match mgpu::tuning::check() {
        Ok((mgpu::tuning::TuningSource::BuiltIn, _)) => {
            let default =
                mgpu::tuning::default_file().map_or("none".into(), |p| p.display().to_string());
            println!("tuning: built-in tables (no tuning file; default location: {default})")
        }
        Ok((source, n)) => println!(
            "tuning: {source}, format version {}, {n} entries over the built-in tables",
            mgpu::tuning::FILE_VERSION
        ),
        Err(e) => println!(
            "tuning: {}: every primitive will fail: {e}",
            mgpu::tuning::source()
        ),
    }
    Ok(())
}

/// Files directly in `dir` and their total size.
fn folder_usage(dir: &Path) -> (u64, u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    entries
        .filter_map(|e| e.ok()?.metadata().ok())
        .filter(|m| m.is_file())
        .fold((0, 0), |(n, size), m| (n + 1, size + m.len()))
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut value = n as f64;
    let mut unit = "B";
    for u in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    format!("{value:.1} {unit}")
}
