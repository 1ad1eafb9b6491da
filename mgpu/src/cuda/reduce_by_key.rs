//! The reduce-by-key family (`mgpu_reduce_by_key`, also run-length encoding): one launch of the
//! look-back whose tiles publish a (runs, value) pair (kernel_compact.cu).

use super::compact::{self, compaction_family, wide, CompactArrays, CompactModule, CompactSpec};
use super::compact::{KeyTest, Rejected};
use super::family::{Instance, TableTuning};
use super::jit::ElementDesc;
use super::lookback::TileStatusArgs;
use super::{ByValue, Gpu};
use crate::error::Result;
use crate::tuning::{Family, Tuning};
use crate::{Arithmetic, Element, Equality, Op};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

compaction_family!(
    /// The reduce-by-key family (also run-length encoding).
    ReduceByKey = "reduce_by_key", "mgpu_reduce_by_key", [Family::ReduceByKey], instances_of
);

/// The table's reduce-by-key tuning for keys of `key_size` and values of `value_size` bytes.
pub fn tuning(table: TableTuning<'_>, key_size: usize, value_size: usize) -> Result<Tuning> {
    compact::tuning(table, Family::ReduceByKey, key_size, value_size)
}

/// Reduce-by-key of `K` keys and values under `plus` (with and without keys out: run-length
/// encoding's counts), in 32- and 64-bit counts.
fn instances_of<K: Arithmetic>(table: TableTuning<'_>, out: &mut Vec<Instance>) -> Result<()> {
    let eq = Equality::<K>::equal_to();
    let k = std::mem::size_of::<K>();
    let t = tuning(table, k, k)?;
    for (count, keys_out) in [(1, true), (1, false), (u64::MAX, true)] {
        let v = variant(keys_out, count);
        let spec = CompactModule::new::<K, K>(v, &KeyTest::Runs(&eq), Some(&Op::plus()), &t);
        let label = format!("plus {v:?}");
        out.push(
            Instance::of::<ReduceByKey>(&spec, Family::ReduceByKey, ElementDesc::of::<K>(), label)
                .primary(count == 1 && keys_out),
        );
    }
    Ok(())
}

crate::kernel_args! {
    // SAFETY: mgpu_reduce_by_key(Input keys, const V* values, int use_constant, V constant,
    // T* keys_out, V* values_out, u64 count, u64* count_out, u64* tickets, u64 first_ticket,
    // TileStatusOf<RunPair> status, V identity).
    ReduceByKeyArgs<V> = "mgpu_reduce_by_key" {
        keys: CUdeviceptr, values: CUdeviceptr, use_constant: i32, constant: ByValue<V>,
        keys_out: CUdeviceptr, values_out: CUdeviceptr, count: u64, count_out: CUdeviceptr,
        tickets: CUdeviceptr, first_ticket: u64, status: TileStatusArgs, identity: ByValue<V>,
    }
}

/// The variant of the reduce-by-key kernel for `count` keys.
pub fn variant(keys_out: bool, count: u64) -> CompactSpec {
    CompactSpec {
        unique: true,
        keys_out,
        values: true,
        rejected: Rejected::Dropped,
        wide_count: wide(count),
        non_trivial_runs: false,
    }
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
    let spec = CompactModule::new::<K, V>(
        variant(arrays.keys_out != 0, count),
        &KeyTest::Runs(equal),
        Some(op),
        tuning,
    );
    compact::launch::<ReduceByKey, _>(gpu, &spec, count, |tickets, first_ticket, status| {
        ReduceByKeyArgs {
            keys: arrays.keys,
            values: arrays.values,
            use_constant: constant.is_some() as i32,
            constant: ByValue(constant.unwrap_or(op.identity())),
            keys_out: arrays.keys_out,
            values_out: arrays.values_out,
            count,
            count_out: arrays.count_out,
            tickets,
            first_ticket,
            status,
            identity: ByValue(op.identity()),
        }
    })
}
