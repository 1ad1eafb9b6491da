//! Host side of device-wide scan: the single-pass look-back scan, reduce-then-scan, and the
//! single-CTA path for small inputs.

use super::memory::DeviceMem;
use super::reduce::{split, upsweep};
use super::{jit::Module, launch, ByValue, Gpu};
use crate::error::Result;
use crate::tuning::Tuning;
use crate::{Element, Op, ScanAlgorithm};
use cudarc::driver::{sys::CUdeviceptr, DeviceRepr};
use std::sync::Arc;

/// Inputs of at most this many tiles are scanned by one CTA: one launch, no look-back state.
const SINGLE_CTA_TILES: u64 = 1;

/// The look-back's tile status arrays, passed by value (matches `TileStatus` in lookback.cuh).
#[repr(C)]
#[derive(Clone, Copy)]
struct TileStatusArgs {
    words: u64,
    flags: u64,
    aggregates: u64,
    inclusives: u64,
}

// SAFETY: four device addresses, laid out as the kernel's `TileStatus` struct of four pointers.
unsafe impl DeviceRepr for TileStatusArgs {}

fn align256(x: usize) -> usize {
    x.div_ceil(256) * 256
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn scan<T: Element>(
    gpu: &Arc<Gpu>,
    input: CUdeviceptr,
    output: CUdeviceptr,
    count: u64,
    op: &Op<T>,
    exclusive: bool,
    algorithm: ScanAlgorithm,
    total: CUdeviceptr, // 0: not wanted
    tuning: &Tuning,
) -> Result<()> {
    let identity = ByValue(op.identity());
    let exclusive = exclusive as i32;
    let nv = tuning.nv() as u64;
    let num_tiles = count.div_ceil(nv);
    let module = gpu.module(Module::Scan, op, tuning)?;
    let (tiles_kernel, blocks_per_sm) = module.function("mgpu_scan_tiles");
    let no_carry: u64 = 0;

    if num_tiles <= SINGLE_CTA_TILES {
        return launch(
            gpu,
            tiles_kernel,
            1,
            tuning.nt,
            &[
                &input, &output, &count, &exclusive, &num_tiles, &no_carry, &total, &identity,
            ],
        );
    }

    match algorithm {
        ScanAlgorithm::LookBack => {
            let size = std::mem::size_of::<T>();
            let n = num_tiles as usize;
            // Layout: tile counter | status words (or flags | aggregates | inclusives).
            let counter_bytes = 256;
            let (zeroed, total_bytes, status) = if size <= 4 {
                let words = align256(n * 8);
                (counter_bytes + words, counter_bytes + words, None)
            } else {
                let flags = align256(n * 4);
                let values = align256(n * size);
                (
                    counter_bytes + flags,
                    counter_bytes + flags + 2 * values,
                    Some((flags, values)),
                )
            };
            let scratch = DeviceMem::alloc(gpu, total_bytes)?;
            scratch.memset_zero(0, zeroed)?;
            let base = scratch.ptr;
            let args = match status {
                None => TileStatusArgs {
                    words: base + 256,
                    flags: 0,
                    aggregates: 0,
                    inclusives: 0,
                },
                Some((flags, values)) => TileStatusArgs {
                    words: 0,
                    flags: base + 256,
                    aggregates: base + (256 + flags) as u64,
                    inclusives: base + (256 + flags + values) as u64,
                },
            };
            let (f, _) = module.function("mgpu_scan_lookback");
            launch(
                gpu,
                f,
                num_tiles as u32,
                tuning.nt,
                &[
                    &input, &output, &count, &exclusive, &base, &args, &total, &identity,
                ],
            )
        }
        ScanAlgorithm::ReduceThenScan => {
            let (grid, tiles_per_cta) = split(num_tiles, (gpu.sm_count * blocks_per_sm) as u64);
            let partials = DeviceMem::alloc(gpu, grid as usize * std::mem::size_of::<T>())?;
            upsweep(
                gpu,
                input,
                count,
                op,
                tuning,
                grid,
                tiles_per_cta,
                partials.ptr,
            )?;
            // Spine: an exclusive scan of the partials, in place, by one CTA; it yields the total.
            let spine_count = grid as u64;
            let spine_tiles = spine_count.div_ceil(nv);
            launch(
                gpu,
                tiles_kernel,
                1,
                tuning.nt,
                &[
                    &partials.ptr,
                    &partials.ptr,
                    &spine_count,
                    &1i32,
                    &spine_tiles,
                    &no_carry,
                    &total,
                    &identity,
                ],
            )?;
            // Downsweep: each CTA rescans its range with its carry-in.
            let no_total: u64 = 0;
            launch(
                gpu,
                tiles_kernel,
                grid,
                tuning.nt,
                &[
                    &input,
                    &output,
                    &count,
                    &exclusive,
                    &tiles_per_cta,
                    &partials.ptr,
                    &no_total,
                    &identity,
                ],
            )
        }
    }
}
