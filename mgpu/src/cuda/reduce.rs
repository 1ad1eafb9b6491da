//! Host side of device-wide reduce: passes of `mgpu_reduce` until one CTA remains.

use super::jit::{Load, Module};
use super::memory::DeviceMem;
use super::{launch, ByValue, Gpu};
use crate::error::Result;
use crate::tuning::Tuning;
use crate::{Element, Op};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// The work split of one pass: `grid` CTAs, each over `tiles_per_cta` consecutive tiles.
pub(crate) fn split(num_tiles: u64, max_ctas: u64) -> (u32, u64) {
    let grid = num_tiles.clamp(1, max_ctas.max(1));
    let tiles_per_cta = num_tiles.div_ceil(grid).max(1);
    (
        num_tiles.div_ceil(tiles_per_cta).max(1) as u32,
        tiles_per_cta,
    )
}

/// Reduces the `count` elements of the input `input` (loaded as `load` says) into the element at
/// `out` (device memory).
pub(crate) fn reduce<T: Element>(
    gpu: &Arc<Gpu>,
    input: u64,
    load: &Load,
    count: u64,
    op: &Op<T>,
    out: CUdeviceptr,
    tuning: &Tuning,
) -> Result<()> {
    let module = gpu.module(Module::Reduce, Some(op), load, tuning)?;
    let (mut f, blocks_per_sm) = module.function("mgpu_reduce");
    // The first pass reads the input; later ones read partials, plain `T`s.
    let plain = if load.is_plain() {
        None
    } else {
        Some(gpu.module(Module::Reduce, Some(op), &Load::plain::<T>(), tuning)?)
    };
    let nt = tuning.nt;
    let nv = tuning.nv() as u64;
    let (mut src, mut n) = (input, count);
    // Each level's partials live until the launch that reads them is queued (frees are stream-ordered).
    let mut levels: Vec<DeviceMem> = Vec::new();
    loop {
        let (grid, tiles_per_cta) = split(n.div_ceil(nv), (gpu.sm_count * blocks_per_sm) as u64);
        if grid == 1 {
            return launch(
                gpu,
                f,
                1,
                nt,
                &[&src, &n, &tiles_per_cta, &out, &ByValue(op.identity())],
            );
        }
        let next = DeviceMem::alloc(gpu, grid as usize * std::mem::size_of::<T>())?;
        launch(
            gpu,
            f,
            grid,
            nt,
            &[&src, &n, &tiles_per_cta, &next.ptr, &ByValue(op.identity())],
        )?;
        src = next.ptr;
        n = grid as u64;
        levels.push(next);
        if let Some(m) = &plain {
            f = m.function("mgpu_reduce").0;
        }
    }
}

/// Upsweep for reduce-then-scan: one partial per CTA over ranges of `tiles_per_cta` tiles of the
/// given tuning (the downsweep uses the same ranges).
#[allow(clippy::too_many_arguments)]
pub(crate) fn upsweep<T: Element>(
    gpu: &Arc<Gpu>,
    input: u64,
    load: &Load,
    count: u64,
    op: &Op<T>,
    tuning: &Tuning,
    grid: u32,
    tiles_per_cta: u64,
    partials: CUdeviceptr,
) -> Result<()> {
    let module = gpu.module(Module::Reduce, Some(op), load, tuning)?;
    let (f, _) = module.function("mgpu_reduce");
    launch(
        gpu,
        f,
        grid,
        tuning.nt,
        &[
            &input,
            &count,
            &tiles_per_cta,
            &partials,
            &ByValue(op.identity()),
        ],
    )
}
