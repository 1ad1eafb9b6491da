//! The segmented sort family (`kernel_segsort.cu`, on the merge family's tiles and merges):
//! short segments packed whole into tiles sorted by (segment, key), long ones cut into tiles
//! from their start and merged within the segment. Segments of millions of keys come back to the
//! caller, which sorts each with the whole-array sort.

use super::family::{part, Instance, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Expr, Prelude};
use super::memory::DeviceMem;
use super::sort::SortValues;
use super::Gpu;
use crate::error::Result;
use crate::tuning::{self, Family, Tuning};
use crate::{Arithmetic, Comparator, Element, Offset};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// Segments of at least this many keys are sorted one by one by the whole-array sort, whose
/// four-way merge passes and radix sort beat the two-way passes of the long path there.
pub const HUGE_SEGMENT: u64 = 1 << 20;

/// A segmented sort module: keys, values, offsets, comparator and tuning.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SegSortSpec {
    /// The key type.
    pub keys: ElementDesc,
    /// The value type (unused with `SortValues::None`).
    pub values: ElementDesc,
    /// The offsets' type.
    pub offsets: ElementDesc,
    /// Keys only, or pairs.
    pub mode: SortValues,
    /// The strict weak order's expression over `a` and `b`.
    pub comparator: Expr,
    /// The tuning.
    pub tuning: Tuning,
}

impl SegSortSpec {
    /// Keys `K` with values `V` in segments of offsets `O`, ordered by `comparator`.
    pub fn new<K: Element, V: Element, O: Offset>(
        comparator: &Comparator<K>,
        mode: SortValues,
        tuning: &Tuning,
    ) -> SegSortSpec {
        SegSortSpec {
            keys: ElementDesc::of::<K>(),
            values: ElementDesc::of::<V>(),
            offsets: ElementDesc::of::<O>(),
            mode,
            comparator: Expr::new(comparator.cuda_expression(), comparator.cuda_helpers()),
            tuning: *tuning,
        }
    }
}

/// The segmented sort family, in two parts: the packed tiles of short segments (and the
/// classification of the others), and the long segments' tiles and merge passes.
pub struct SegSort;

impl KernelFamily for SegSort {
    type Spec = SegSortSpec;
    const NAME: &'static str = "segsort";
    const FILES: &'static [&'static str] = &[
        headers::INTRINSICS,
        headers::CTA_REDUCE,
        headers::CTA_SCAN,
        headers::CTA_MERGE,
        include_str!("kernels/kernel_mergesort.cu"),
        include_str!("kernels/kernel_segsort.cu"),
    ];
    const PARTS: &'static [Part] = &[
        Part {
            name: "packed",
            kernels: &[
                "mgpu_segsort_tiles",
                "mgpu_segsort_short",
                "mgpu_segsort_classify",
            ],
        },
        Part {
            name: "long",
            kernels: &[
                "mgpu_segsort_blocks",
                "mgpu_segsort_partition",
                "mgpu_segsort_merge",
            ],
        },
    ];
    fn prelude(spec: &SegSortSpec, p: &mut Prelude) {
        p.define("MGPU_VALUES", spec.mode as u32)
            .element("K", &spec.keys)
            .element("V", &spec.values)
            .element("O", &spec.offsets)
            .functor(
                "Comp",
                "bool operator()(const K& a, const K& b)",
                &spec.comparator,
            );
    }
    fn tuning(spec: &SegSortSpec) -> Tuning {
        spec.tuning
    }
    const TUNING: &'static [Family] = &[Family::SortKeys, Family::SortPairs];
    fn instances(_arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        crate::for_each_arithmetic!(segsort_instances(table, &mut out));
        // Wide offsets, once.
        let (family, size) = tuning_family(SortValues::None, 4, 0);
        let spec = SegSortSpec::new::<i32, i32, u64>(
            &Comparator::less(),
            SortValues::None,
            &table(family, size)?,
        );
        let desc = ElementDesc::of::<i32>();
        out.push(Instance::of::<SegSort>(
            &spec,
            family,
            desc,
            "less None u64",
        ));
        Ok(out)
    }
}

/// The tuning family of a segmented sort and the size of its packed tile's elements: the key,
/// its segment number (4 bytes) and the value.
pub fn tuning_family(mode: SortValues, key_size: usize, value_size: usize) -> (Family, usize) {
    match mode {
        SortValues::None => (Family::SortKeys, key_size + 4),
        _ => (Family::SortPairs, key_size + 4 + value_size),
    }
}

/// The table's tuning for keys `K` (and values `V` with `SortValues::Pairs`) on `arch`.
pub fn table_tuning<K: Element, V: Element>(arch: Option<u32>, mode: SortValues) -> Result<Tuning> {
    let value_size = if mode == SortValues::None {
        0
    } else {
        std::mem::size_of::<V>()
    };
    let (family, size) = tuning_family(mode, std::mem::size_of::<K>(), value_size);
    tuning::resolve(family, arch, size, None)
}

/// Keys `K` under `less`: keys only and with `u32` values, `u32` offsets.
fn segsort_instances<K: Arithmetic>(table: TableTuning<'_>, out: &mut Vec<Instance>) -> Result<()> {
    let k = std::mem::size_of::<K>();
    for mode in [SortValues::None, SortValues::Pairs] {
        let (family, size) = tuning_family(mode, k, 4);
        let spec =
            SegSortSpec::new::<K, u32, u32>(&Comparator::less(), mode, &table(family, size)?);
        let label = format!("less {mode:?}");
        out.push(
            Instance::of::<SegSort>(&spec, family, ElementDesc::of::<K>(), label)
                .primary(mode == SortValues::None),
        );
    }
    Ok(())
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_tiles(const O* offsets, u64 num_segments, u64 count, u64 num_tiles,
    // PackedTile* tiles), PackedTile being two u64.
    TilesArgs = "mgpu_segsort_tiles" {
        offsets: CUdeviceptr, num_segments: u64, count: u64, num_tiles: u64, tiles: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_short(K* keys, V* values, const O* offsets, u64 num_segments,
    // const PackedTile* tiles).
    ShortArgs = "mgpu_segsort_short" {
        keys: CUdeviceptr, values: CUdeviceptr, offsets: CUdeviceptr, num_segments: u64,
        tiles: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_classify(const O* offsets, u64 num_segments, u64 count, u64 huge_min,
    // unsigned* summary, LongTile* long_tiles, u64* huge), LongTile being a u64 and two u32.
    ClassifyArgs = "mgpu_segsort_classify" {
        offsets: CUdeviceptr, num_segments: u64, count: u64, huge_min: u64, summary: CUdeviceptr,
        long_tiles: CUdeviceptr, huge: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_blocks(K* keys, V* values, K* temp_keys, V* temp_values,
    // const O* offsets, u64 num_segments, u64 count, const LongTile* long_tiles).
    BlocksArgs = "mgpu_segsort_blocks" {
        keys: CUdeviceptr, values: CUdeviceptr, temp_keys: CUdeviceptr, temp_values: CUdeviceptr,
        offsets: CUdeviceptr, num_segments: u64, count: u64, long_tiles: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_partition(const K* keys, const K* temp_keys, const O* offsets,
    // u64 num_segments, u64 count, const LongTile* long_tiles, u64 num_long, int pass,
    // u64* splits).
    PartitionArgs = "mgpu_segsort_partition" {
        keys: CUdeviceptr, temp_keys: CUdeviceptr, offsets: CUdeviceptr, num_segments: u64,
        count: u64, long_tiles: CUdeviceptr, num_long: u64, pass: i32, splits: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_merge(K* keys, V* values, K* temp_keys, V* temp_values,
    // const O* offsets, u64 num_segments, u64 count, const LongTile* long_tiles, int pass,
    // const u64* splits).
    MergeArgs = "mgpu_segsort_merge" {
        keys: CUdeviceptr, values: CUdeviceptr, temp_keys: CUdeviceptr, temp_values: CUdeviceptr,
        offsets: CUdeviceptr, num_segments: u64, count: u64, long_tiles: CUdeviceptr, pass: i32,
        splits: CUdeviceptr,
    }
}

/// Validated CSR offsets on the device: `num_segments` of them over `count` positions.
pub(crate) struct Geometry {
    pub offsets: CUdeviceptr,
    pub num_segments: u64,
    pub count: u64,
}

const SMALL_BLOCK: u32 = 128;

/// Sorts the segments of `keys` (and `values`) in place, all but the huge ones, which it returns
/// as position ranges for the caller to sort. One wait for the GPU (the classification's summary).
pub(crate) fn sort<K: Element, V: Element, O: Offset>(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    keys: CUdeviceptr,
    values: CUdeviceptr,
    comparator: &Comparator<K>,
    mode: SortValues,
    tuning: &Tuning,
) -> Result<Vec<(u64, u64)>> {
    let Geometry {
        offsets,
        num_segments,
        count,
    } = *geometry;
    if count == 0 {
        return Ok(Vec::new());
    }
    let spec = SegSortSpec::new::<K, V, O>(comparator, mode, tuning);
    let packed = gpu.module::<SegSort>(&spec, part::<SegSort>("packed"))?;
    let nv = tuning.nv() as u64;
    let (short_max, step) = (nv / 4, nv - nv / 4);

    // Short segments: packed tiles, sorted in place.
    let num_tiles = count.div_ceil(step);
    let tiles = DeviceMem::alloc(gpu, (num_tiles as usize + 1) * 16)?;
    let args = TilesArgs {
        offsets,
        num_segments,
        count,
        num_tiles,
        tiles: tiles.ptr,
    };
    let grid = (num_tiles + 1).div_ceil(SMALL_BLOCK as u64) as u32;
    gpu.launch(&packed, grid, SMALL_BLOCK, &args)?;
    let args = ShortArgs {
        keys,
        values,
        offsets,
        num_segments,
        tiles: tiles.ptr,
    };
    gpu.launch(&packed, num_tiles as u32, tuning.nt, &args)?;

    // The others: long segments' tiles, huge segments.
    let summary = DeviceMem::alloc(gpu, 16)?;
    gpu.memset_zero(summary.ptr, 16)?;
    let long_capacity = count / (short_max + 1) + 1;
    let long_tiles = DeviceMem::alloc(gpu, long_capacity as usize * 16)?;
    let huge = DeviceMem::alloc(gpu, (count / HUGE_SEGMENT + 1) as usize * 16)?;
    let args = ClassifyArgs {
        offsets,
        num_segments,
        count,
        huge_min: HUGE_SEGMENT,
        summary: summary.ptr,
        long_tiles: long_tiles.ptr,
        huge: huge.ptr,
    };
    let grid = num_segments
        .div_ceil(256)
        .min(gpu.sm_count as u64 * 8)
        .max(1) as u32;
    gpu.launch(&packed, grid, 256, &args)?;
    let mut found = [0u32; 4];
    gpu.download(summary.ptr, &mut found)?;
    let [num_long, max_passes, num_huge, _] = found;

    if num_long > 0 {
        sort_long::<K, V>(
            gpu,
            &spec,
            geometry,
            keys,
            values,
            &long_tiles,
            num_long,
            max_passes,
        )?;
    }
    let mut ranges = vec![0u64; 2 * num_huge as usize];
    if num_huge > 0 {
        gpu.download(huge.ptr, &mut ranges)?;
    }
    let mut ranges: Vec<(u64, u64)> = ranges.chunks(2).map(|r| (r[0], r[1])).collect();
    ranges.sort_unstable();
    Ok(ranges)
}

/// The long segments' tiles, then their merge passes.
#[allow(clippy::too_many_arguments)]
fn sort_long<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    spec: &SegSortSpec,
    geometry: &Geometry,
    keys: CUdeviceptr,
    values: CUdeviceptr,
    long_tiles: &DeviceMem,
    num_long: u32,
    max_passes: u32,
) -> Result<()> {
    let module = gpu.module::<SegSort>(spec, part::<SegSort>("long"))?;
    let count = geometry.count as usize;
    let temp_keys = DeviceMem::alloc(gpu, count * std::mem::size_of::<K>())?;
    let temp_values = match spec.mode {
        SortValues::None => None,
        _ => Some(DeviceMem::alloc(gpu, count * std::mem::size_of::<V>())?),
    };
    let temp_v = temp_values.as_ref().map_or(0, |m| m.ptr);
    let args = BlocksArgs {
        keys,
        values,
        temp_keys: temp_keys.ptr,
        temp_values: temp_v,
        offsets: geometry.offsets,
        num_segments: geometry.num_segments,
        count: geometry.count,
        long_tiles: long_tiles.ptr,
    };
    gpu.launch(&module, num_long, spec.tuning.nt, &args)?;
    let splits = DeviceMem::alloc(gpu, num_long as usize * 8)?;
    for pass in 0..max_passes as i32 {
        let args = PartitionArgs {
            keys,
            temp_keys: temp_keys.ptr,
            offsets: geometry.offsets,
            num_segments: geometry.num_segments,
            count: geometry.count,
            long_tiles: long_tiles.ptr,
            num_long: num_long as u64,
            pass,
            splits: splits.ptr,
        };
        let grid = num_long.div_ceil(SMALL_BLOCK);
        gpu.launch(&module, grid, SMALL_BLOCK, &args)?;
        let args = MergeArgs {
            keys,
            values,
            temp_keys: temp_keys.ptr,
            temp_values: temp_v,
            offsets: geometry.offsets,
            num_segments: geometry.num_segments,
            count: geometry.count,
            long_tiles: long_tiles.ptr,
            pass,
            splits: splits.ptr,
        };
        gpu.launch(&module, num_long, spec.tuning.nt, &args)?;
    }
    Ok(())
}
