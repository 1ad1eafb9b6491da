//! Host side of the single-pass compaction kernels (kernel_compact.cu): select, partition, unique,
//! and reduce-by-key, each one launch of the look-back machinery the scan uses.

use super::jit::{CompactSpec, KeyTest, Module};
use super::scan::{value_record, with_lookback};
use super::{launch, ByValue, Gpu};
use crate::error::Result;
use crate::tuning::Tuning;
use crate::{Element, Op};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// Bytes of the (count, value) pair a reduce-by-key tile publishes (`RunPair` in
/// kernel_compact.cu): the count, then the value at its alignment, padded to the larger alignment.
pub(crate) fn pair_size(count_size: usize, value_size: usize, value_align: usize) -> usize {
    let align = count_size.max(value_align);
    let value_at = count_size.div_ceil(value_align) * value_align;
    (value_at + value_size).div_ceil(align) * align
}

/// Device addresses of a compaction's arrays (0: absent).
#[derive(Clone, Copy, Default)]
pub(crate) struct CompactArrays {
    pub keys: CUdeviceptr,
    pub values: CUdeviceptr,
    pub keys_out: CUdeviceptr,
    pub values_out: CUdeviceptr,
    pub keys_rejected: CUdeviceptr,
    pub values_rejected: CUdeviceptr,
    /// Where the kernel writes the number of kept items (runs), as a u64.
    pub count_out: CUdeviceptr,
}

/// Whether `count` items need 64-bit counts.
fn wide(count: u64) -> bool {
    count > u32::MAX as u64
}

/// Runs the compaction `spec` over `count` keys (and values).
pub(crate) fn compact<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    mut spec: CompactSpec,
    test: &KeyTest<'_, K>,
    arrays: CompactArrays,
    count: u64,
    tuning: &Tuning,
) -> Result<()> {
    if count == 0 {
        return gpu.memset_zero(arrays.count_out, 8);
    }
    spec.wide_count = wide(count);
    let module = gpu.compact_module::<K, V>(&spec, test, None, tuning)?;
    let (f, resident) = module.function(Module::Compact.kernels()[0]);
    let num_tiles = count.div_ceil(tuning.nv() as u64);
    let grid = num_tiles.min((gpu.sm_count * resident) as u64);
    let count_size = if spec.wide_count { 8 } else { 4 };
    with_lookback(
        gpu,
        num_tiles,
        grid,
        value_record(count_size),
        |tickets, first_ticket, status| {
            launch(
                gpu,
                f,
                grid as u32,
                tuning.nt,
                &[
                    &arrays.keys,
                    &arrays.values,
                    &arrays.keys_out,
                    &arrays.values_out,
                    &arrays.keys_rejected,
                    &arrays.values_rejected,
                    &count,
                    &arrays.count_out,
                    &tickets,
                    &first_ticket,
                    &status,
                ],
            )
        },
    )
}

/// Reduce-by-key over `count` keys and values: the first key of each run to `keys_out`, the
/// reduction of its values to `values_out`, the number of runs to `count_out`. Values of
/// `Constant` kind are not read: each is `constant` (run-length encoding counts ones).
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_by_key<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    equal: &crate::Equality<K>,
    op: &Op<V>,
    arrays: CompactArrays,
    constant: Option<V>,
    count: u64,
    tuning: &Tuning,
) -> Result<()> {
    if count == 0 {
        return gpu.memset_zero(arrays.count_out, 8);
    }
    let spec = CompactSpec {
        unique: true,
        keys_out: arrays.keys_out != 0,
        values: true,
        rejected: super::jit::Rejected::Dropped,
        wide_count: wide(count),
        non_trivial_runs: false,
    };
    let module = gpu.compact_module::<K, V>(&spec, &KeyTest::Runs(equal), Some(op), tuning)?;
    let (f, resident) = module.function(Module::ReduceByKey.kernels()[0]);
    let num_tiles = count.div_ceil(tuning.nv() as u64);
    let grid = num_tiles.min((gpu.sm_count * resident) as u64);
    let count_size = if spec.wide_count { 8 } else { 4 };
    let pair = pair_size(
        count_size,
        std::mem::size_of::<V>(),
        std::mem::align_of::<V>(),
    );
    let identity = ByValue(op.identity());
    let use_constant = constant.is_some() as i32;
    let constant = ByValue(constant.unwrap_or(op.identity()));
    with_lookback(
        gpu,
        num_tiles,
        grid,
        value_record(pair),
        |tickets, first_ticket, status| {
            launch(
                gpu,
                f,
                grid as u32,
                tuning.nt,
                &[
                    &arrays.keys,
                    &arrays.values,
                    &use_constant,
                    &constant,
                    &arrays.keys_out,
                    &arrays.values_out,
                    &count,
                    &arrays.count_out,
                    &tickets,
                    &first_ticket,
                    &status,
                    &identity,
                ],
            )
        },
    )
}

/// The non-trivial runs of `count` keys: offsets and lengths (of type `L`) of the runs longer
/// than one, and their number to `count_out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn non_trivial_runs<K: Element, L: Element>(
    gpu: &Arc<Gpu>,
    equal: &crate::Equality<K>,
    keys: CUdeviceptr,
    offsets: CUdeviceptr,
    lengths: CUdeviceptr,
    count_out: CUdeviceptr,
    count: u64,
    tuning: &Tuning,
) -> Result<()> {
    if count == 0 {
        return gpu.memset_zero(count_out, 8);
    }
    let spec = CompactSpec {
        unique: true,
        keys_out: false,
        values: true,
        rejected: super::jit::Rejected::Dropped,
        wide_count: wide(count),
        non_trivial_runs: true,
    };
    let module = gpu.compact_module::<K, L>(&spec, &KeyTest::Runs(equal), None, tuning)?;
    let (f, resident) = module.function(Module::NonTrivialRuns.kernels()[0]);
    let num_tiles = count.div_ceil(tuning.nv() as u64);
    let grid = num_tiles.min((gpu.sm_count * resident) as u64);
    let count_size = if spec.wide_count { 8 } else { 4 };
    with_lookback(
        gpu,
        num_tiles,
        grid,
        value_record(2 * count_size),
        |tickets, first_ticket, status| {
            launch(
                gpu,
                f,
                grid as u32,
                tuning.nt,
                &[
                    &keys,
                    &offsets,
                    &lengths,
                    &count,
                    &count_out,
                    &tickets,
                    &first_ticket,
                    &status,
                ],
            )
        },
    )
}
