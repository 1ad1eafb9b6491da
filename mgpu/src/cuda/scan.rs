//! The scan family: the single-pass look-back scan (`mgpu_scan_lookback`), and
//! `mgpu_scan_tiles` for small inputs and for reduce-then-scan's spine and downsweep.

use super::family::{part, Instance, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Load, Prelude};
use super::lookback::{self, TileStatusArgs};
use super::memory::DeviceMem;
use super::reduce::{checked_ops, split, upsweep, upsweep_tuning, OpSpec};
use super::{ByValue, Gpu};
use crate::error::Result;
use crate::tuning::{Family, Tuning};
use crate::{Arithmetic, Element, Op, ScanAlgorithm};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// The scan family, loaded in two parts: the small-input / reduce-then-scan tiles and the
/// look-back scan.
pub struct Scan;

impl KernelFamily for Scan {
    type Spec = OpSpec;
    const NAME: &'static str = "scan";
    const FILES: &'static [&'static str] = &[
        headers::LOOKBACK_TILES,
        include_str!("kernels/kernel_scan.cu"),
    ];
    const PARTS: &'static [Part] = &[
        Part {
            name: "scan_tiles",
            kernels: &["mgpu_scan_tiles"],
        },
        Part {
            name: "scan_lookback",
            kernels: &["mgpu_scan_lookback"],
        },
    ];
    fn prelude(spec: &OpSpec, p: &mut Prelude) {
        lookback::prelude(p, spec.element.size);
        spec.prelude(p);
    }
    fn tuning(spec: &OpSpec) -> Tuning {
        spec.tuning
    }
    const TUNING: &'static [Family] = &[Family::Scan];
    fn instances(_arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        crate::for_each_arithmetic!(scan_instances(table, &mut out));
        Ok(out)
    }
}

/// Scans of `T`s with each checked operator, and of a counting sequence.
fn scan_instances<T: Arithmetic>(table: TableTuning<'_>, out: &mut Vec<Instance>) -> Result<()> {
    let t = table(Family::Scan, std::mem::size_of::<T>())?;
    let element = ElementDesc::of::<T>();
    for (i, op) in checked_ops::<T>().iter().enumerate() {
        let label = format!("{} commutative={}", op.name(), op.is_commutative());
        let spec = OpSpec::new(Some(op), &Load::plain::<T>(), &t);
        out.push(Instance::of::<Scan>(&spec, Family::Scan, element, label).primary(i == 0));
    }
    let counting = OpSpec::new(
        Some(&Op::<T>::plus()),
        &Load::counting::<T>(),
        &computed_input_tuning(t),
    );
    out.push(Instance::of::<Scan>(
        &counting,
        Family::Scan,
        element,
        "plus counting",
    ));
    Ok(())
}

/// The scan tuning for a mapped or counting input: its loads go through registers (cp.async
/// copies bytes, it cannot map them), which the table's high-occupancy scan tunings have too few
/// of (at OCC 11 the mapped kernels spilled).
pub fn computed_input_tuning(mut t: Tuning) -> Tuning {
    t.occ = t.occ.min(4);
    t
}

crate::kernel_args! {
    // SAFETY: mgpu_scan_lookback(Input in, T* out, u64 count, u64 head, int exclusive,
    // u64* tickets, u64 first_ticket, TileStatus status, T* total_out, T identity,
    // const T* carry_in).
    ScanLookbackArgs<T> = "mgpu_scan_lookback" {
        input: u64, output: CUdeviceptr, count: u64, head: u64, exclusive: i32,
        tickets: CUdeviceptr, first_ticket: u64, status: TileStatusArgs, total: CUdeviceptr,
        identity: ByValue<T>, carry_in: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_scan_tiles(Input in, T* out, u64 count, int exclusive, u64 tiles_per_cta,
    // const T* carry_in, T* total_out, T identity).
    ScanTilesArgs<T> = "mgpu_scan_tiles" {
        input: u64, output: CUdeviceptr, count: u64, exclusive: i32, tiles_per_cta: u64,
        carry_in: CUdeviceptr, total: CUdeviceptr, identity: ByValue<T>,
    }
}

/// Inputs of at most this many tiles are scanned by one CTA: one launch, no look-back state.
const SINGLE_CTA_TILES: u64 = 1;

/// Scans the `count` elements of the input (`input.0`, loaded as `input.1` says) to `output`,
/// after the value at `carry_in` (0: none; the total then includes it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan<T: Element>(
    gpu: &Arc<Gpu>,
    (input, load): (u64, &Load),
    output: CUdeviceptr,
    count: u64,
    op: &Op<T>,
    exclusive: bool,
    algorithm: ScanAlgorithm,
    total: CUdeviceptr,    // 0: not wanted
    carry_in: CUdeviceptr, // 0: none
    tuning: &Tuning,
) -> Result<()> {
    let exclusive = exclusive as i32;
    let nv = tuning.nv() as u64;
    let num_tiles = count.div_ceil(nv);
    let spec = OpSpec::new(Some(op), load, tuning);
    let tiles_part = part::<Scan>("scan_tiles");

    // Each path compiles (loads) only the kernels it launches.
    if num_tiles <= SINGLE_CTA_TILES {
        let module = gpu.module::<Scan>(&spec, tiles_part)?;
        let args = ScanTilesArgs {
            input,
            output,
            count,
            exclusive,
            tiles_per_cta: num_tiles,
            carry_in,
            total,
            identity: ByValue(op.identity()),
        };
        return gpu.launch(&module, 1, tuning.nt, &args);
    }

    match algorithm {
        ScanAlgorithm::LookBack => {
            // Tiles begin `head` elements before the output, so that all but the first start on
            // a 128-byte line (kernel_scan.cu): out + (NV - head) * size lies on one when NV *
            // size does, as with every sm_90 scan tuning.
            let size = std::mem::size_of::<T>() as u64;
            let head = if 128 % size == 0 && output.is_multiple_of(size) {
                output % 128 / size
            } else {
                0
            };
            let num_tiles = (count + head).div_ceil(nv);
            let module = gpu.module::<Scan>(&spec, part::<Scan>("scan_lookback"))?;
            lookback::launch(
                gpu,
                &module,
                num_tiles,
                tuning.nt,
                std::mem::size_of::<T>(),
                |tickets, first_ticket, status| ScanLookbackArgs {
                    input,
                    output,
                    count,
                    head,
                    exclusive,
                    tickets,
                    first_ticket,
                    status,
                    total,
                    identity: ByValue(op.identity()),
                    carry_in,
                },
            )
        }
        ScanAlgorithm::ReduceThenScan => {
            let module = gpu.module::<Scan>(&spec, tiles_part)?;
            let resident = module.resident::<ScanTilesArgs<T>>();
            let (grid, tiles_per_cta) = split(num_tiles, (gpu.sm_count * resident) as u64);
            let partials = DeviceMem::alloc(gpu, grid as usize * std::mem::size_of::<T>())?;
            let reduce = crate::tuning::lookup(Family::Reduce, gpu.arch, std::mem::size_of::<T>())?;
            let upsweep_tuning = upsweep_tuning(*tuning, &reduce);
            upsweep(
                gpu,
                input,
                load,
                count,
                op,
                &upsweep_tuning,
                grid,
                tiles_per_cta,
                partials.ptr,
            )?;
            // Spine: an exclusive scan of the partials after the carry-in, in place, by one CTA;
            // it yields the total.
            // The partials are plain `T`s, whatever the input is.
            let spine_module = if load.is_plain() {
                module.clone()
            } else {
                let plain = OpSpec::new(Some(op), &Load::plain::<T>(), tuning);
                gpu.module::<Scan>(&plain, tiles_part)?
            };
            let spine_count = grid as u64;
            let spine = ScanTilesArgs {
                input: partials.ptr,
                output: partials.ptr,
                count: spine_count,
                exclusive: 1,
                tiles_per_cta: spine_count.div_ceil(nv),
                carry_in,
                total,
                identity: ByValue(op.identity()),
            };
            gpu.launch(&spine_module, 1, tuning.nt, &spine)?;
            // Downsweep: each CTA rescans its range with its carry-in.
            let downsweep = ScanTilesArgs {
                input,
                output,
                count,
                exclusive,
                tiles_per_cta,
                carry_in: partials.ptr,
                total: 0,
                identity: ByValue(op.identity()),
            };
            gpu.launch(&module, grid, tuning.nt, &downsweep)
        }
    }
}
