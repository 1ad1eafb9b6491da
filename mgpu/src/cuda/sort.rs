//! Host side of merge and mergesort: blocksort, then merge passes ping-ponging between the
//! caller's buffer and one temporary, arranged so that the result lands in the caller's buffer.

use super::jit::{Module, SortValues};
use super::memory::DeviceMem;
use super::{launch, Gpu};
use crate::error::Result;
use crate::tuning::Tuning;
use crate::{Comparator, Element};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

const PARTITION_THREADS: u32 = 128;

#[allow(clippy::too_many_arguments)]
fn partitions(
    gpu: &Arc<Gpu>,
    f: &cudarc::driver::CudaFunction,
    a: CUdeviceptr,
    a_count: u64,
    b: CUdeviceptr,
    b_count: u64,
    standalone: bool,
    width: u64,
    out: &DeviceMem,
    count: u64,
) -> Result<()> {
    let grid = count.div_ceil(PARTITION_THREADS as u64) as u32;
    let standalone = standalone as i32;
    launch(
        gpu,
        f,
        grid,
        PARTITION_THREADS,
        &[
            &a,
            &a_count,
            &b,
            &b_count,
            &standalone,
            &width,
            &count,
            &out.ptr,
        ],
    )
}

/// Sorts `count` keys at `keys` (with values at `values` unless `SortValues::None`) in place.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sort<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    keys: CUdeviceptr,
    values: CUdeviceptr,
    count: u64,
    comparator: &Comparator<K>,
    mode: SortValues,
    tuning: &Tuning,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let nv = tuning.nv() as u64;
    let num_tiles = count.div_ceil(nv);
    // Merge levels: runs of one tile double in length until they cover the input. Levels go two
    // at a time in four-way passes; an odd level out is a two-way pass, done first.
    let levels = u64::BITS - (num_tiles - 1).leading_zeros(); // ceil(log2(num_tiles))
    let two_way = levels % 2;
    let passes = two_way + levels / 2;
    let blocksort_module = gpu.sort_module::<K, V>(Module::Blocksort, comparator, mode, tuning)?;
    let (blocksort, _) = blocksort_module.function("mgpu_blocksort");
    if passes == 0 {
        // One tile: sorted in place (the kernel stages it in shared memory), and only the block
        // sort is compiled.
        return launch(
            gpu,
            blocksort,
            1,
            tuning.nt,
            &[&keys, &values, &keys, &values, &count],
        );
    }
    let module = gpu.sort_module::<K, V>(Module::MergePasses, comparator, mode, tuning)?;
    let has_values = mode != SortValues::None;
    let temp_keys = DeviceMem::alloc(gpu, count as usize * std::mem::size_of::<K>())?;
    let temp_values = if has_values {
        Some(DeviceMem::alloc(
            gpu,
            count as usize * std::mem::size_of::<V>(),
        )?)
    } else {
        None
    };
    let temp_v = temp_values.as_ref().map_or(0, |m| m.ptr);
    // With an odd number of passes the blocksort writes to the temporary, so that the last pass
    // writes the caller's buffer.
    let (mut src, mut dst) = ((keys, values), (temp_keys.ptr, temp_v));
    if passes.is_multiple_of(2) {
        std::mem::swap(&mut src, &mut dst);
    }
    launch(
        gpu,
        blocksort,
        num_tiles as u32,
        tuning.nt,
        &[&keys, &values, &dst.0, &dst.1, &count],
    )?;
    let pairs = DeviceMem::alloc(gpu, (num_tiles as usize + 1) * 8)?;
    let quads = if levels >= 2 {
        Some(DeviceMem::alloc(gpu, (num_tiles as usize + 1) * 32)?)
    } else {
        None
    };
    let (partition, _) = module.function("mgpu_merge_partition");
    let (merge_pass, _) = module.function("mgpu_merge_pass");
    let (partition4, _) = module.function("mgpu_merge4_partition");
    let (merge4_pass, _) = module.function("mgpu_merge4_pass");
    let mut width = nv;
    let mut current = dst;
    let mut other = src;
    for pass in 0..passes {
        // Both kinds of pass start from the two-way split of every tile boundary.
        partitions(
            gpu,
            partition,
            current.0,
            count,
            0,
            0,
            false,
            width,
            &pairs,
            num_tiles + 1,
        )?;
        let four_way = pass >= two_way;
        let (f, splits) = if four_way {
            let quads = quads.as_ref().expect("allocated for two levels or more");
            let grid = (num_tiles + 1).div_ceil(PARTITION_THREADS as u64) as u32;
            let num_partitions = num_tiles + 1;
            launch(
                gpu,
                partition4,
                grid,
                PARTITION_THREADS,
                &[
                    &current.0,
                    &count,
                    &width,
                    &pairs.ptr,
                    &num_partitions,
                    &quads.ptr,
                ],
            )?;
            (merge4_pass, quads.ptr)
        } else {
            (merge_pass, pairs.ptr)
        };
        launch(
            gpu,
            f,
            num_tiles as u32,
            tuning.nt,
            &[
                &current.0, &current.1, &other.0, &other.1, &count, &width, &splits,
            ],
        )?;
        std::mem::swap(&mut current, &mut other);
        width *= if four_way { 4 } else { 2 };
    }
    debug_assert_eq!(current.0, keys);
    Ok(())
}

/// Merges sorted `a` and `b` (keys, and values when `values` is Pairs) into `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    a: (CUdeviceptr, CUdeviceptr, u64),
    b: (CUdeviceptr, CUdeviceptr, u64),
    out: (CUdeviceptr, CUdeviceptr),
    comparator: &Comparator<K>,
    mode: SortValues,
    tuning: &Tuning,
) -> Result<()> {
    let total = a.2 + b.2;
    if total == 0 {
        return Ok(());
    }
    let module = gpu.sort_module::<K, V>(Module::MergeSequences, comparator, mode, tuning)?;
    let num_tiles = total.div_ceil(tuning.nv() as u64);
    let splits = DeviceMem::alloc(gpu, (num_tiles as usize + 1) * 8)?;
    let (partition, _) = module.function("mgpu_merge_partition");
    partitions(
        gpu,
        partition,
        a.0,
        a.2,
        b.0,
        b.2,
        true,
        0,
        &splits,
        num_tiles + 1,
    )?;
    let (f, _) = module.function("mgpu_merge");
    launch(
        gpu,
        f,
        num_tiles as u32,
        tuning.nt,
        &[
            &a.0,
            &a.1,
            &a.2,
            &b.0,
            &b.1,
            &b.2,
            &out.0,
            &out.1,
            &splits.ptr,
        ],
    )
}
