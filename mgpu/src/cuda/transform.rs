//! Host side of copy from a mapped or counting source: `mgpu_transform` over contiguous ranges of
//! tiles, one CTA per resident slot.

use super::jit::{Load, Module};
use super::reduce::split;
use super::{launch, Gpu};
use crate::error::Result;
use crate::tuning::Tuning;
use crate::Element;
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// Writes the `count` elements of the input `input` (loaded as `load` says) to `out`.
pub(crate) fn transform<T: Element>(
    gpu: &Arc<Gpu>,
    input: u64,
    load: &Load,
    out: CUdeviceptr,
    count: u64,
    tuning: &Tuning,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let module = gpu.module::<T>(Module::Transform, None, load, tuning)?;
    let (f, blocks_per_sm) = module.function("mgpu_transform");
    let num_tiles = count.div_ceil(tuning.nv() as u64);
    let (grid, tiles_per_cta) = split(num_tiles, (gpu.sm_count * blocks_per_sm) as u64);
    launch(
        gpu,
        f,
        grid,
        tuning.nt,
        &[&input, &out, &count, &tiles_per_cta],
    )
}
