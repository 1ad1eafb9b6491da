//! `mgpu occupancy`: every kernel family compiled for an architecture, with ptxas's registers,
//! shared memory and spills, and the resulting theoretical occupancy under the current tunings.

use mgpu::cuda::jit::{self, Module, SortValues};
use mgpu::cuda::occupancy::{theoretical, SmLimits};
use mgpu::tuning::{self, Family, Tuning};
use mgpu::{Comparator, Context, Element, Op};

/// The merge-path partition kernel runs with this many threads (cuda/sort.rs).
const PARTITION_THREADS: u32 = 128;

/// A CUDA context on a GPU of the reported architecture, if there is one: it supplies the numbers
/// when NVRTC returns no ptxas report (seen with NVRTC 13.0).
type Device<'a> = Option<&'a Context>;

fn report(
    device: Device,
    arch: u32,
    family: &str,
    ty: &str,
    tuning: &Tuning,
    module: Module,
    source: &str,
) -> Result<(), String> {
    let compiled = jit::compile_uncached(module.name(), source, arch).map_err(|e| e.to_string())?;
    let limits = SmLimits::for_arch(arch);
    let mut reports = compiled.reports;
    let mut from_driver = false;
    if let (true, Some(ctx)) = (reports.is_empty(), device) {
        reports =
            mgpu::cuda::driver_reports(ctx, module, compiled.cubin).map_err(|e| e.to_string())?;
        from_driver = true;
    }
    for r in &reports {
        let nt = if r.name.ends_with("_partition") {
            PARTITION_THREADS
        } else {
            tuning.nt
        };
        let o = theoretical(r, nt, &limits);
        println!(
            "{family:<10} {ty:<4} {:<21} {:>4}x{:<3} {:>4} {:>7} {:>6} {:>9} {:>6.0}%  {}",
            r.name,
            nt,
            tuning.vt,
            r.registers,
            r.shared_bytes,
            r.spill_stores + r.spill_loads + r.stack_frame,
            o.ctas_per_sm,
            o.fraction * 100.0,
            o.limited_by
        );
    }
    if from_driver {
        println!("{family:<10} {ty:<4} (numbers above from the driver: NVRTC returned no ptxas report; local = stack + spills)");
    }
    if reports.is_empty() {
        println!("{family:<10} {ty:<4} (NVRTC returned no ptxas report)");
    }
    Ok(())
}

fn family_rows<T: Element + mgpu::Arithmetic>(
    device: Device,
    arch: u32,
    ty: &str,
) -> Result<(), String> {
    let size = std::mem::size_of::<T>();
    let op = Op::<T>::plus();
    for (name, module, family) in [
        ("reduce", Module::Reduce, Family::Reduce),
        ("scan", Module::Scan, Family::Scan),
    ] {
        let t = tuning::lookup(family, arch, size).map_err(|e| e.to_string())?;
        report(
            device,
            arch,
            name,
            ty,
            &t,
            module,
            &jit::source(module, Some(&op), &jit::Load::plain::<T>(), &t),
        )?;
    }
    let comp = Comparator::<T>::less();
    let t = tuning::lookup(Family::SortKeys, arch, size).map_err(|e| e.to_string())?;
    report(
        device,
        arch,
        "sort_keys",
        ty,
        &t,
        Module::Merge,
        &jit::sort_source::<T, T>(&comp, SortValues::None, &t),
    )?;
    let t = tuning::lookup(Family::SortPairs, arch, 2 * size).map_err(|e| e.to_string())?;
    report(
        device,
        arch,
        "sort_pairs",
        ty,
        &t,
        Module::Merge,
        &jit::sort_source::<T, T>(&comp, SortValues::Pairs, &t),
    )
}

/// `mgpu occupancy`'s command line.
#[derive(clap::Args)]
pub struct OccupancyArgs {
    /// Compile for sm_N, e.g. 90 or sm_90 (default: the GPU's, else 90)
    #[arg(long, value_name = "N", value_parser = parse_arch)]
    arch: Option<u32>,
}

/// `--arch 90` or `--arch sm_90`.
pub(crate) fn parse_arch(v: &str) -> Result<u32, String> {
    v.trim_start_matches("sm_")
        .parse::<u32>()
        .map_err(|_| format!("bad arch `{v}` (e.g. 90)"))
}

pub fn run(args: OccupancyArgs) -> Result<(), String> {
    let arch = args.arch;
    // The present GPU's architecture, else sm_90 (compiling needs NVRTC, not a GPU).
    let gpu = Context::new().ok().filter(|c| c.arch().is_some());
    let arch = arch.unwrap_or_else(|| gpu.as_ref().and_then(|c| c.arch()).unwrap_or(90));
    let device = gpu.as_ref().filter(|c| c.arch() == Some(arch));
    if !jit::nvrtc_available() {
        return Err("occupancy: NVRTC is needed to compile the kernels (pip install nvidia-cuda-nvrtc and put its lib folder on LD_LIBRARY_PATH)".into());
    }
    let l = SmLimits::for_arch(arch);
    println!(
        "# sm_{arch}: {} registers, {} threads, {} CTAs, {} KB shared memory per SM; tunings from the table (MGPU_TUNING applies)",
        l.registers,
        l.threads,
        l.ctas,
        l.shared_bytes / 1024
    );
    println!(
        "{:<10} {:<4} {:<21} {:>8} {:>4} {:>7} {:>6} {:>9} {:>7}  limited by",
        "family", "type", "kernel", "NTxVT", "regs", "smem", "local", "CTAs/SM", "occ"
    );
    family_rows::<i32>(device, arch, "i32")?;
    family_rows::<i64>(device, arch, "i64")?;
    family_rows::<f32>(device, arch, "f32")?;
    family_rows::<f64>(device, arch, "f64")
}
