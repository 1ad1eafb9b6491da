//! `mgpu occupancy [primitive] [--arch sm_XY] [--type T]`: every kernel of the default tunings
//! compiled for an architecture, with ptxas's registers, shared memory per CTA, stack and spills,
//! the resident CTAs per SM and theoretical occupancy under the tuning the library would use, the
//! limit that binds (of the seed's five: threads, CTAs, shared memory, register file; the fifth,
//! registers per thread, shows as spills) and what would take one more CTA per SM.
//!
//! No GPU is needed: the numbers come from ptxas's report (NVRTC's log). On a GPU of the reported
//! architecture each module is also loaded and the driver's attributes are compared with ptxas's.

use crate::instantiations::{families, family_names, primary};
use mgpu::cuda::family::Instance;
use mgpu::cuda::jit::{self, KernelReport};
use mgpu::cuda::occupancy::{gather_carveout, theoretical, Occupancy, SmLimits};
use mgpu::tuning::{self, Tuning};
use mgpu::Context;

/// The merge-path partition kernels run with this many threads (cuda/sort.rs).
const MERGE_PARTITION_THREADS: u32 = 128;

/// The segmented reduction's partition and validation kernels run with this many threads
/// (cuda/segreduce.rs).
const SEGREDUCE_HELPER_THREADS: u32 = 256;

const TYPES: &[&str] = &["i32", "i64", "u32", "u64", "f32", "f64"];
const DEFAULT_TYPES: &[&str] = &["i32", "i64", "f32", "f64"];

/// `mgpu occupancy`'s command line.
#[derive(clap::Args)]
pub struct OccupancyArgs {
    /// The kernel family whose kernels are reported (the library's registry) [default: every
    /// family]
    #[arg(value_name = "FAMILY",
          value_parser = clap::builder::PossibleValuesParser::new(family_names()))]
    family: Option<String>,
    /// Compile for sm_N, e.g. 90 or sm_90 [default: the GPU's, else 90]
    #[arg(long, value_name = "N", value_parser = parse_arch)]
    arch: Option<u32>,
    /// Element types, comma-separated [default: i32,i64,f32,f64]
    #[arg(long = "type", value_name = "T", value_delimiter = ',',
          value_parser = clap::builder::PossibleValuesParser::new(TYPES))]
    types: Vec<String>,
}

/// `--arch 90` or `--arch sm_90`.
pub(crate) fn parse_arch(v: &str) -> Result<u32, String> {
    v.trim_start_matches("sm_")
        .parse::<u32>()
        .map_err(|_| format!("bad arch `{v}` (e.g. 90)"))
}

/// The threads a kernel is launched with, and whether it is a tile kernel (NT x VT under
/// `__launch_bounds__(NT, OCC)`) rather than a helper of fixed size.
fn launch_threads(kernel: &str, t: &Tuning) -> (u32, bool) {
    match kernel {
        "mgpu_merge_partition" | "mgpu_merge4_partition" => (MERGE_PARTITION_THREADS, false),
        "mgpu_segreduce_partition" | "mgpu_segreduce_validate" | "mgpu_segreduce_headless" => {
            (SEGREDUCE_HELPER_THREADS, false)
        }
        // One thread per tile, NT to a CTA.
        "mgpu_segreduce_fixup" => (t.nt, false),
        _ => (t.nt, true),
    }
}

/// What would fit one more CTA per SM, in a few words.
fn next_step(r: &KernelReport, nt: u32, limits: &SmLimits, o: &Occupancy) -> String {
    let want = o.ctas_per_sm + 1;
    let then = |relaxed: &KernelReport, what: String| {
        let n = theoretical(relaxed, nt, limits);
        if n.ctas_per_sm > o.ctas_per_sm {
            format!("{what}: {} CTAs", n.ctas_per_sm)
        } else {
            format!("{what}: still {}", n.limited_by)
        }
    };
    match o.limited_by {
        "registers" => {
            let warps = nt.div_ceil(32);
            let per_warp =
                limits.registers / (want * warps) / limits.register_unit * limits.register_unit;
            let regs = (per_warp / 32).min(255);
            if regs == 0 {
                return "-".into();
            }
            let relaxed = KernelReport {
                registers: regs,
                ..r.clone()
            };
            then(&relaxed, format!("<={regs} regs"))
        }
        "shared memory" => {
            let bytes = (limits.shared_bytes / want).saturating_sub(limits.shared_reserved_per_cta);
            let relaxed = KernelReport {
                shared_bytes: bytes,
                ..r.clone()
            };
            then(&relaxed, format!("<={:.1} KB smem", bytes as f64 / 1024.0))
        }
        "threads" if o.fraction >= 1.0 => "none: 100%".into(),
        "threads" => format!("NT dividing {}", limits.threads),
        _ => format!("NT >= {}", limits.threads / limits.ctas),
    }
}

/// The general advice for a binding limit (after the seed's occupancy chapter).
fn advice(limit: &str, limits: &SmLimits) -> String {
    match limit {
        "registers" => "registers: ptxas gave each thread more registers than another CTA leaves \
             room for. A higher OCC (the tuning's third number, __launch_bounds__'s minimum CTAs \
             per SM) makes ptxas fit the count shown, spilling what does not fit (keep stack and \
             spill at 0); a lower VT keeps fewer values live per thread; a lower OCC cannot help \
             (it lets ptxas use more). Helper kernels (shown with their thread count alone) have \
             no OCC: fewer live values is the only way."
            .into(),
        "shared memory" => "shared memory: the CTA's static shared memory (its tile of NT x VT \
             elements, plus scratch) leaves no room for another CTA: a smaller tile (lower VT, or \
             NT) raises occupancy; the carveout is already the largest."
            .into(),
        "threads" => format!(
            "threads: the SM's {} thread slots are taken (100% unless NT does not divide {}): \
             occupancy cannot rise; latency is hidden by the VT values each thread works on.",
            limits.threads, limits.threads
        ),
        _ => format!(
            "CTA slots: the SM's {} CTA slots run out before its threads: larger CTAs (NT >= {}) \
             raise occupancy.",
            limits.ctas,
            limits.threads / limits.ctas
        ),
    }
}

/// The report's state: the driver comparison and which limits were seen.
#[derive(Default)]
struct Tally {
    /// Kernels whose ptxas report was compared with the driver's.
    compared: usize,
    /// Of those, the register counts that disagree: "label type kernel (ptxas N, driver M)".
    register_mismatches: Vec<String>,
    /// The stack / local-memory sizes that disagree.
    local_mismatches: Vec<String>,
    /// Kernels shown with the driver's numbers (NVRTC returned no ptxas report).
    from_driver: usize,
    /// Kernels with neither report.
    unreported: usize,
    limits_seen: Vec<&'static str>,
}

fn report(
    device: Option<&Context>,
    arch: u32,
    ty: &str,
    item: &Instance,
    tally: &mut Tally,
) -> Result<(), String> {
    let compiled =
        jit::compile_uncached(item.family, &item.source, arch).map_err(|e| e.to_string())?;
    let limits = SmLimits::for_arch(arch);
    let driver = match device {
        Some(ctx) => Some(
            mgpu::cuda::driver_reports(ctx, &item.kernels, compiled.cubin)
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let ptxas = compiled.reports;
    let from_driver = ptxas.is_empty() && driver.is_some();
    let shown: &[KernelReport] = if from_driver {
        driver.as_deref().unwrap_or_default()
    } else {
        &ptxas
    };
    if shown.is_empty() {
        println!(
            "{:<15} {ty:<4} ({}: NVRTC returned no ptxas report)",
            item.family, item.label
        );
        tally.unreported += item.kernels.len();
        return Ok(());
    }
    let t = &item.tuning;
    let order = |r: &&KernelReport| {
        let kernels = &item.kernels;
        kernels
            .iter()
            .position(|&k| k == r.name)
            .unwrap_or(kernels.len())
    };
    let mut shown: Vec<&KernelReport> = shown.iter().collect();
    shown.sort_by_key(order);
    for r in shown {
        let (nt, tile) = launch_threads(&r.name, t);
        let launch = if tile {
            format!("{}x{}x{}", nt, t.vt, t.occ)
        } else {
            format!("{nt}")
        };
        let drv = driver
            .as_ref()
            .and_then(|d| d.iter().find(|k| k.name == r.name));
        let drv_regs = drv.map_or("-".to_string(), |d| d.registers.to_string());
        // The tile and spine of a gathering module run with the carveout the library asks for.
        let tiles_module = matches!(
            r.name.as_str(),
            "mgpu_segreduce" | "mgpu_segreduce_spine" | "mgpu_segreduce_fixup"
        );
        let limits = if item.gathers && tiles_module {
            SmLimits {
                shared_bytes: gather_carveout(&limits, t.occ, r.shared_bytes),
                ..limits
            }
        } else {
            limits
        };
        let o = theoretical(r, nt, &limits);
        // The driver reports local memory per thread (the stack frame), not spill traffic.
        let spill = if from_driver {
            "-".to_string()
        } else {
            (r.spill_stores + r.spill_loads).to_string()
        };
        println!(
            "{:<15} {ty:<4} {:<24} {launch:>10} {:>4} {drv_regs:>4} {:>6} {:>5} {spill:>5} {:>7} \
             {:>4.0}%  {:<13}  {}",
            item.family,
            r.name,
            r.registers,
            r.shared_bytes,
            r.stack_frame,
            o.ctas_per_sm,
            o.fraction * 100.0,
            o.limited_by,
            next_step(r, nt, &limits, &o),
        );
        if !tally.limits_seen.contains(&o.limited_by) {
            tally.limits_seen.push(o.limited_by);
        }
        if from_driver {
            tally.from_driver += 1;
        } else if let Some(d) = drv {
            tally.compared += 1;
            let what = format!("{} {ty} {} ({})", item.family, r.name, item.label);
            if d.registers != r.registers {
                tally.register_mismatches.push(format!(
                    "{what} (ptxas {}, driver {})",
                    r.registers, d.registers
                ));
            }
            if d.stack_frame != r.stack_frame {
                tally.local_mismatches.push(format!(
                    "{what} (ptxas {} B stack, driver {} B local)",
                    r.stack_frame, d.stack_frame
                ));
            }
        }
    }
    Ok(())
}

pub fn run(args: OccupancyArgs) -> Result<(), String> {
    // The present GPU's architecture, else sm_90 (compiling needs NVRTC, not a GPU).
    let gpu = Context::new().ok().filter(|c| c.arch().is_some());
    let gpu_arch = gpu.as_ref().and_then(|c| c.arch());
    let arch = args.arch.or(gpu_arch).unwrap_or(90);
    let device = gpu.as_ref().filter(|c| c.arch() == Some(arch));
    if !jit::nvrtc_available() {
        return Err(format!(
            "occupancy: NVRTC is needed to compile the kernels, and it was {}. Install it: `pip \
             install nvidia-cuda-nvrtc` in the active virtualenv or conda environment, or the \
             CUDA toolkit (under CUDA_HOME, CUDA_PATH or /usr/local/cuda); or set MGPU_NVRTC to \
             the libnvrtc file",
            mgpu::cuda::discover::nvrtc()
        ));
    }
    let families = families(args.family.as_deref())?;
    let types: Vec<&str> = if args.types.is_empty() {
        DEFAULT_TYPES.to_vec()
    } else {
        args.types.iter().map(String::as_str).collect()
    };
    let l = SmLimits::for_arch(arch);
    println!(
        "# sm_{arch}: {} registers, {} threads, {} CTAs, {} KB shared memory per SM; tunings: {} \
         (the library's choice for each family)",
        l.registers,
        l.threads,
        l.ctas,
        l.shared_bytes / 1024,
        tuning::source()
    );
    println!(
        "{:<15} {:<4} {:<24} {:>10} {:>4} {:>4} {:>6} {:>5} {:>5} {:>7} {:>5}  {:<13}  for one more CTA/SM",
        "family", "type", "kernel", "NTxVTxOCC", "regs", "drv", "smem", "stack", "spill", "CTAs/SM",
        "occ", "limited by"
    );
    let mut tally = Tally::default();
    for (i, family) in families.iter().enumerate() {
        if i > 0 {
            println!();
        }
        for ty in &types {
            for item in primary(*family, ty, arch)? {
                println!("# {} {ty}: {}", item.family, item.label);
                report(device, arch, ty, &item, &mut tally)?;
            }
        }
    }
    println!();
    let nvrtc = jit::nvrtc_version().map_or("NVRTC".to_string(), |(a, b)| format!("NVRTC {a}.{b}"));
    match device {
        Some(ctx) => {
            let on = format!("sm_{arch}, {}", ctx.description());
            if tally.compared > 0 {
                let agree = tally.compared - tally.register_mismatches.len();
                println!(
                    "# registers: {agree} of {} kernels agree with the driver ({on})",
                    tally.compared
                );
                for m in &tally.register_mismatches {
                    println!("#   disagrees: {m}");
                }
                let agree = tally.compared - tally.local_mismatches.len();
                println!(
                    "# stack/local bytes: {agree} of {} kernels agree with the driver",
                    tally.compared
                );
                for m in &tally.local_mismatches {
                    println!("#   disagrees: {m}");
                }
            }
            if tally.from_driver > 0 {
                println!(
                    "# {} kernels: {nvrtc} returned no ptxas report; the driver's numbers are shown \
                     (stack = its local memory per thread), nothing to compare",
                    tally.from_driver
                );
            }
        }
        None => {
            let gpu_note = match gpu_arch {
                Some(g) => format!("the GPU here is sm_{g}"),
                None => "no GPU here".to_string(),
            };
            println!(
                "# numbers from ptxas's report ({nvrtc}); not compared with the driver ({gpu_note}; \
                 on an sm_{arch} GPU the drv column shows the driver's registers)"
            );
        }
    }
    if tally.unreported > 0 {
        println!(
            "# {} kernels: {nvrtc} returned no ptxas report and there is no sm_{arch} GPU to ask",
            tally.unreported
        );
    }
    println!(
        "# smem: static shared memory per CTA; stack: local memory per thread; spill: bytes of \
         spill stores + loads. Occupancy is a means, not the goal: with enough ILP a kernel runs \
         well below 100% (`mgpu tune` measures)"
    );
    println!("# what would raise occupancy, by the limit that binds:");
    for limit in &tally.limits_seen {
        println!("#   {}", advice(limit, &l));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_more_cta_by_registers() {
        let l = SmLimits::for_arch(90);
        // 128 threads at 64 registers: 8 CTAs; 9 need at most 56 registers (7 x 256 per warp).
        let r = KernelReport {
            registers: 64,
            shared_bytes: 4096,
            ..Default::default()
        };
        let o = theoretical(&r, 128, &l);
        assert_eq!((o.ctas_per_sm, o.limited_by), (8, "registers"));
        assert_eq!(next_step(&r, 128, &l, &o), "<=56 regs: 9 CTAs");
    }

    #[test]
    fn one_more_cta_by_shared_memory() {
        let l = SmLimits::for_arch(90);
        let r = KernelReport {
            registers: 32,
            shared_bytes: 40_000,
            ..Default::default()
        };
        let o = theoretical(&r, 128, &l);
        assert_eq!((o.ctas_per_sm, o.limited_by), (5, "shared memory"));
        // 6 CTAs: (228 KB / 6) - 1 KB reserved each.
        assert_eq!(next_step(&r, 128, &l, &o), "<=37.0 KB smem: 6 CTAs");
    }

    #[test]
    fn every_family_has_modules_for_its_types() {
        for family in families(None).unwrap() {
            let found = TYPES
                .iter()
                .map(|ty| primary(family, ty, 90).unwrap().len())
                .sum::<usize>();
            assert!(found > 0, "{}", family.name());
        }
    }
}
