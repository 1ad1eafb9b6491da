//! The decoupled look-back's host side (lookback.cuh is its device side): the status layout, the
//! per-stream state (status slots, ticket counter, epochs) and the one launch helper that every
//! look-back kernel (scan, compaction, reduce-by-key, non-trivial runs, the segmented
//! reduction's spine) goes through.

use super::family::KernelArgs;
use super::jit::Prelude;
use super::{Gpu, LoadedModule};
use crate::error::Result;
use cudarc::driver::{sys::CUdeviceptr, DeviceRepr};

/// The look-back's tile status, passed by value (matches `TileStatus` in lookback.cuh).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct TileStatusArgs {
    slots: u64,
    values: u64,
    epoch: u32,
    _pad: u32,
}

// SAFETY: two device addresses and a u32 (padded to 8 bytes), laid out as the kernel's
// `TileStatus` struct.
unsafe impl DeviceRepr for TileStatusArgs {}

/// Bytes of each tile's status slot (`MGPU_STATUS_SLOT` in lookback.cuh): with status words side
/// by side, the polls and stores of the tiles in flight met on a few L2 lines (64 measured best
/// of 8..256, BENCHMARKS.md).
pub const STATUS_SLOT: usize = 64;

/// Bytes of a tile's value record (`MGPU_VALUE_RECORD`), its aggregate and inclusive value padded
/// to whole slots: 0 when the value is packed with its tag (up to 12 bytes, lookback.cuh).
pub fn value_record(elem_size: usize) -> usize {
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
    slot_capacity: usize,
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
        self.slots() + align256(self.slot_capacity * STATUS_SLOT) as u64
    }

    /// The tile status of the launch being prepared (its slots, records and epoch).
    fn status(&self) -> TileStatusArgs {
        TileStatusArgs {
            slots: self.slots(),
            values: self.values(),
            epoch: self.epoch,
            _pad: 0,
        }
    }

    /// Room for `slots` status slots and `values` bytes of value records, and a fresh epoch.
    /// Grows (to a new, cleared allocation) when needed.
    fn prepare(&mut self, gpu: &Gpu, slots: usize, values: usize) -> Result<()> {
        if slots > self.slot_capacity || values > self.value_capacity || self.epoch == MAX_EPOCH {
            let slot_capacity = slots.max(self.slot_capacity);
            let value_capacity = values.max(self.value_capacity);
            let bytes = 256 + align256(slot_capacity * STATUS_SLOT) + value_capacity;
            let ptr = gpu.alloc(bytes)?;
            if let Err(e) = gpu.memset_zero(ptr, bytes) {
                gpu.free(ptr);
                return Err(e);
            }
            gpu.free(self.ptr);
            *self = LookbackScratch {
                ptr,
                slot_capacity,
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

/// Runs a look-back kernel of `num_tiles` tiles on `grid` persistent CTAs, whose tiles take
/// `slots` status slots and `record` bytes of value records each: `launch` queues it, given the
/// ticket counter, the first ticket and the tile status. The stream's look-back state stays
/// locked until the launch is queued, so launches on the stream run in the order of their epochs.
fn with_lookback(
    gpu: &Gpu,
    num_tiles: u64,
    grid: u64,
    (slots, record): (usize, usize),
    launch: impl FnOnce(CUdeviceptr, u64, TileStatusArgs) -> Result<()>,
) -> Result<()> {
    let mut scratch = gpu.lookback.lock().unwrap_or_else(|e| e.into_inner());
    scratch.prepare(gpu, num_tiles as usize * slots, num_tiles as usize * record)?;
    let status = scratch.status();
    launch(scratch.ptr, scratch.tickets, status)?;
    // Each CTA draws one ticket per tile it takes and one that ends its loop.
    scratch.tickets += num_tiles + grid;
    Ok(())
}

/// Runs a kernel of `grid` CTAs that each publish one value of `bytes` bytes in a status slot of
/// their own, tagged with the launch's epoch, so that one CTA can wait for every other's (a
/// one-launch reduce): `launch` queues it, given the tile status. No tickets are drawn.
pub(crate) fn with_status(
    gpu: &Gpu,
    grid: u64,
    bytes: usize,
    launch: impl FnOnce(TileStatusArgs) -> Result<()>,
) -> Result<()> {
    let (slots, record) = Published::Value(bytes).layout();
    let mut scratch = gpu.lookback.lock().unwrap_or_else(|e| e.into_inner());
    scratch.prepare(gpu, grid as usize * slots, grid as usize * record)?;
    launch(scratch.status())
}

/// No tile status: for a kernel compiled with one that does not use it.
pub(crate) const NO_STATUS: TileStatusArgs = TileStatusArgs {
    slots: 0,
    values: 0,
    epoch: 0,
    _pad: 0,
};

/// What each tile of a look-back kernel publishes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Published {
    /// One value of this many bytes (`TileStatusOf<V>`).
    Value(usize),
    /// This many values of up to 4 bytes, packed with their tags in 8-byte words side by side
    /// (`TileStatusOf<V, 8 * words>`: a radix sort's count per digit bin).
    Words(usize),
}

impl Published {
    /// Status slots and value-record bytes per tile.
    fn layout(self) -> (usize, usize) {
        match self {
            Published::Value(bytes) => (1, value_record(bytes)),
            Published::Words(words) => ((8 * words).div_ceil(STATUS_SLOT), 0),
        }
    }
}

/// Launches a look-back kernel of `module` over `num_tiles` tiles on a persistent grid (one CTA
/// per resident slot, at most one per tile) of `block` threads, whose tiles publish `published`:
/// `args` makes its argument list from the ticket counter, the first ticket and the tile status.
pub(crate) fn launch<A: KernelArgs>(
    gpu: &Gpu,
    module: &LoadedModule,
    num_tiles: u64,
    block: u32,
    published: impl Into<Published>,
    args: impl FnOnce(CUdeviceptr, u64, TileStatusArgs) -> A,
) -> Result<()> {
    launch_shared(gpu, module, num_tiles, block, 0, published, args)
}

/// [`launch`] for a kernel that also takes `shared_bytes` of dynamic shared memory per CTA: the
/// grid is what is resident with it.
pub(crate) fn launch_shared<A: KernelArgs>(
    gpu: &Gpu,
    module: &LoadedModule,
    num_tiles: u64,
    block: u32,
    shared_bytes: u32,
    published: impl Into<Published>,
    args: impl FnOnce(CUdeviceptr, u64, TileStatusArgs) -> A,
) -> Result<()> {
    let resident = match shared_bytes {
        0 => module.resident::<A>(),
        _ => module.resident_with::<A>(block, shared_bytes)?,
    };
    let grid = num_tiles.min((gpu.sm_count * resident) as u64);
    let layout = published.into().layout();
    with_lookback(gpu, num_tiles, grid, layout, |tickets, first, status| {
        gpu.launch_shared(
            module,
            grid as u32,
            block,
            shared_bytes,
            &args(tickets, first, status),
        )
    })
}

/// [`launch`] of a kernel that waits for the kernel before it on the stream
/// (`grid_dependency_wait` before it touches memory): launched with [`Gpu::launch_dependent`],
/// its CTAs come up while that kernel ends (a segmented reduction's spine behind its tiles).
pub(crate) fn launch_dependent<A: KernelArgs>(
    gpu: &Gpu,
    module: &LoadedModule,
    num_tiles: u64,
    block: u32,
    published: impl Into<Published>,
    args: impl FnOnce(CUdeviceptr, u64, TileStatusArgs) -> A,
) -> Result<()> {
    let grid = num_tiles.min((gpu.sm_count * module.resident::<A>()) as u64);
    let layout = published.into().layout();
    with_lookback(gpu, num_tiles, grid, layout, |tickets, first, status| {
        gpu.launch_dependent(module, grid as u32, block, &args(tickets, first, status))
    })
}

impl From<usize> for Published {
    fn from(bytes: usize) -> Published {
        Published::Value(bytes)
    }
}

/// Bytes of the (count, value) pair that a tile of a segmented scan publishes (`RunPair` in
/// segscan.cuh: reduce-by-key, the segmented reduction's spine): the count, then the value at its
/// alignment, padded to the larger alignment.
pub fn pair_size(count_size: usize, value_size: usize, value_align: usize) -> usize {
    let align = count_size.max(value_align);
    let value_at = count_size.div_ceil(value_align) * value_align;
    (value_at + value_size).div_ceil(align) * align
}

/// The status layout a look-back kernel is compiled for, where tiles publish `published` bytes:
/// `MGPU_STATUS_SLOT` and `MGPU_VALUE_RECORD`.
pub fn prelude(prelude: &mut Prelude, published: usize) {
    prelude
        .define("MGPU_STATUS_SLOT", STATUS_SLOT)
        .define("MGPU_VALUE_RECORD", value_record(published));
}

#[cfg(test)]
mod tests {
    use super::MAX_EPOCH;
    use crate::{Context, Op, ScanOptions};

    /// After 2^30 - 1 launches the epochs start over on cleared status words; scans and reduces on
    /// both sides of the wrap stay exact. (Needs a GPU; MGPU_REQUIRE_GPU=1 makes a missing one a
    /// failure.)
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
            // The reduce's partials travel in the same status slots, under the same epochs.
            let sum = ctx.reduce(&input, &Op::plus()).unwrap();
            assert_eq!(sum, *expect.last().unwrap(), "run {run}: reduce");
            let mut scratch = gpu.lookback.lock().unwrap();
            epochs.push(scratch.epoch);
            if run == 0 {
                scratch.epoch = MAX_EPOCH - 1;
            }
        }
        // Run 1's scan takes the last epoch, and its reduce the first of a cleared allocation.
        assert_eq!(epochs, [2, 1, 3, 5, 7, 9]);
    }
}
