//! Host side of device-wide scan: the single-pass look-back scan, reduce-then-scan, and the
//! single-CTA path for small inputs.

use super::jit::{Load, Module};
use super::memory::DeviceMem;
use super::reduce::{split, upsweep};
use super::{launch, ByValue, Gpu};
use crate::error::Result;
use crate::tuning::Tuning;
use crate::{Element, Op, ScanAlgorithm};
use cudarc::driver::{sys::CUdeviceptr, DeviceRepr};
use std::sync::Arc;

/// Inputs of at most this many tiles are scanned by one CTA: one launch, no look-back state.
const SINGLE_CTA_TILES: u64 = 1;

/// The look-back's tile status, passed by value (matches `TileStatus` in lookback.cuh).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct TileStatusArgs {
    slots: u64,
    values: u64,
    epoch: u32,
    _pad: u32,
}

// SAFETY: two device addresses and a u32 (padded to 8 bytes), laid out as the kernel's
// `TileStatus` struct.
unsafe impl DeviceRepr for TileStatusArgs {}

/// Bytes of each tile's status slot (`MGPU_STATUS_SLOT` in lookback.cuh). With 8-byte status
/// words side by side, the polls and publishing stores of the tiles in flight met on the same few
/// L2 lines. Measured (H100, 2^28, ms, two rounds; BENCHMARKS.md): slots of 8 bytes i32 0.823 /
/// i64 1.873; 32 bytes 0.756-0.759 / 1.618-1.625; 64 bytes 0.752-0.754 / 1.604-1.606; 128 bytes
/// 0.754-0.760 / 1.637; 256 bytes 0.767 / 1.703.
pub(crate) const STATUS_SLOT: usize = 64;

/// Bytes of a tile's value record (`MGPU_VALUE_RECORD`), its aggregate and inclusive value padded
/// to whole slots: 0 when the value is packed with its tag (up to 12 bytes, lookback.cuh).
pub(crate) fn value_record(elem_size: usize) -> usize {
    if elem_size <= 12 {
        0
    } else {
        (2 * elem_size).div_ceil(STATUS_SLOT) * STATUS_SLOT
    }
}

fn align256(x: usize) -> usize {
    x.div_ceil(256) * 256
}

/// Epochs live in the high 30 bits of a status tag (lookback.cuh).
const MAX_EPOCH: u32 = (1 << 30) - 1;

/// The look-back's device state, kept between scans so that a scan allocates and clears nothing:
/// the kernel tags status slots with the launch's epoch (other epochs read as "nothing yet"), and
/// draws tickets from a counter that is never reset. Layout: ticket counter | a status slot per
/// tile | value records (elements of more than 4 bytes). The GPU holds it behind a mutex, which a
/// scan keeps until its launch is queued: launches on the GPU's one stream then run in the order
/// their epochs and tickets were handed out.
#[derive(Default)]
pub(crate) struct LookbackScratch {
    ptr: CUdeviceptr,
    tile_capacity: usize,
    value_capacity: usize,
    /// The counter's value once every queued scan has run.
    tickets: u64,
    /// The last launch's epoch; 0 is never used, so cleared memory reads as "nothing yet".
    epoch: u32,
}

impl LookbackScratch {
    fn slots(&self) -> CUdeviceptr {
        self.ptr + 256
    }

    fn values(&self) -> CUdeviceptr {
        self.slots() + align256(self.tile_capacity * STATUS_SLOT) as u64
    }

    /// Room for `tiles` status slots and value records of `record` bytes, and a fresh epoch.
    /// Grows (to a new, cleared allocation) when needed.
    fn prepare(&mut self, gpu: &Gpu, tiles: usize, record: usize) -> Result<()> {
        let values = tiles * record;
        if tiles > self.tile_capacity || values > self.value_capacity || self.epoch == MAX_EPOCH {
            let tile_capacity = tiles.max(self.tile_capacity);
            let value_capacity = values.max(self.value_capacity);
            let bytes = 256 + align256(tile_capacity * STATUS_SLOT) + value_capacity;
            let ptr = gpu.alloc(bytes)?;
            if let Err(e) = gpu.memset_zero(ptr, bytes) {
                gpu.free(ptr);
                return Err(e);
            }
            gpu.free(self.ptr);
            *self = LookbackScratch {
                ptr,
                tile_capacity,
                value_capacity,
                tickets: 0,
                epoch: 0,
            };
        }
        self.epoch += 1;
        Ok(())
    }

    /// Frees the allocation (stream-ordered, after the work queued before).
    pub fn release(&mut self, gpu: &Gpu) {
        gpu.free(self.ptr);
        *self = LookbackScratch::default();
    }
}

/// Runs a look-back kernel of `num_tiles` tiles on `grid` persistent CTAs: `launch` queues it,
/// given the ticket counter, the first ticket and the tile status, all sized for values records of
/// `record` bytes (`value_record` of what a tile publishes). The GPU's look-back state stays locked
/// until the launch is queued, so launches on its stream run in the order of their epochs.
pub(crate) fn with_lookback(
    gpu: &Gpu,
    num_tiles: u64,
    grid: u64,
    record: usize,
    launch: impl FnOnce(CUdeviceptr, u64, TileStatusArgs) -> Result<()>,
) -> Result<()> {
    let mut scratch = gpu.lookback.lock().unwrap_or_else(|e| e.into_inner());
    scratch.prepare(gpu, num_tiles as usize, record)?;
    let status = TileStatusArgs {
        slots: scratch.slots(),
        values: scratch.values(),
        epoch: scratch.epoch,
        _pad: 0,
    };
    launch(scratch.ptr, scratch.tickets, status)?;
    // Each CTA draws one ticket per tile it takes and one that ends its loop.
    scratch.tickets += num_tiles + grid;
    Ok(())
}

/// Scans the `count` elements of the input (`input.0`, loaded as `input.1` says) to `output`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan<T: Element>(
    gpu: &Arc<Gpu>,
    (input, load): (u64, &Load),
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
    let no_carry: u64 = 0;

    // Each path compiles (loads) only the kernels it launches.
    if num_tiles <= SINGLE_CTA_TILES {
        let module = gpu.module(Module::ScanTiles, Some(op), load, tuning)?;
        let (tiles_kernel, _) = module.function("mgpu_scan_tiles");
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
            let module = gpu.module(Module::ScanLookback, Some(op), load, tuning)?;
            let (f, resident) = module.function("mgpu_scan_lookback");
            let grid = num_tiles.min((gpu.sm_count * resident) as u64);
            with_lookback(
                gpu,
                num_tiles,
                grid,
                value_record(std::mem::size_of::<T>()),
                |tickets, first_ticket, status| {
                    launch(
                        gpu,
                        f,
                        grid as u32,
                        tuning.nt,
                        &[
                            &input,
                            &output,
                            &count,
                            &head,
                            &exclusive,
                            &tickets,
                            &first_ticket,
                            &status,
                            &total,
                            &identity,
                        ],
                    )
                },
            )
        }
        ScanAlgorithm::ReduceThenScan => {
            let module = gpu.module(Module::ScanTiles, Some(op), load, tuning)?;
            let (tiles_kernel, blocks_per_sm) = module.function("mgpu_scan_tiles");
            let (grid, tiles_per_cta) = split(num_tiles, (gpu.sm_count * blocks_per_sm) as u64);
            let partials = DeviceMem::alloc(gpu, grid as usize * std::mem::size_of::<T>())?;
            let upsweep_tuning =
                crate::tuning::upsweep(*tuning, gpu.arch, std::mem::size_of::<T>())?;
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
            // Spine: an exclusive scan of the partials, in place, by one CTA; it yields the total.
            // The partials are plain `T`s, whatever the input is.
            let plain = if load.is_plain() {
                None
            } else {
                Some(gpu.module(Module::ScanTiles, Some(op), &Load::plain::<T>(), tuning)?)
            };
            let spine_kernel = plain
                .as_ref()
                .map_or(tiles_kernel, |m| m.function("mgpu_scan_tiles").0);
            let spine_count = grid as u64;
            let spine_tiles = spine_count.div_ceil(nv);
            launch(
                gpu,
                spine_kernel,
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

#[cfg(test)]
mod tests {
    use super::MAX_EPOCH;
    use crate::{Context, Op, ScanOptions};

    /// After 2^30 - 1 launches the epochs start over on cleared status words; scans on both sides
    /// of the wrap stay exact. (Needs a GPU; MGPU_REQUIRE_GPU=1 makes a missing one a failure.)
    #[test]
    fn epochs_wrap_around() {
        let ctx = match Context::cuda() {
            Ok(c) => c,
            Err(e) if std::env::var("MGPU_REQUIRE_GPU").as_deref() == Ok("1") => panic!("{e}"),
            Err(_) => return,
        };
        let gpu = ctx.gpu().unwrap().clone();
        let data: Vec<u32> = (0..3_000_000u32)
            .map(|i| i.wrapping_mul(2_654_435_761) >> 22)
            .collect();
        let expect: Vec<u32> = data
            .iter()
            .scan(0u32, |acc, &x| {
                *acc = acc.wrapping_add(x);
                Some(*acc)
            })
            .collect();
        let input = ctx.upload(&data).unwrap();
        let mut epochs = Vec::new();
        for run in 0..6 {
            let mut out = ctx.upload(&vec![7u32; data.len()]).unwrap();
            ctx.scan(&input, &mut out, &Op::plus(), ScanOptions::inclusive())
                .unwrap();
            assert!(out.to_vec().unwrap() == expect, "run {run}");
            let mut scratch = gpu.lookback.lock().unwrap();
            epochs.push(scratch.epoch);
            if run == 0 {
                scratch.epoch = MAX_EPOCH - 2;
            }
        }
        assert_eq!(epochs, [1, MAX_EPOCH - 1, MAX_EPOCH, 1, 2, 3]);
    }
}
