//! The segmented sort family (`kernel_segsort.cu`, on the merge family's tiles and merges):
//! short segments packed whole into tiles sorted by (segment, key), long ones cut into tiles
//! from their start and merged within the segment. Segments of millions of keys come back to the
//! caller, which sorts each with the whole-array sort.

use super::family::{part, Instance, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Expr, Prelude};
use super::memory::DeviceMem;
use super::radix::{self, Order, RadixSpec};
use super::sort::{self as merge, Merge, MergeSpec, SortValues};
use super::Gpu;
use crate::error::Result;
use crate::tuning::{self, Family, Tuning};
use crate::{Arithmetic, Comparator, Element, Offset};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// Segments of at least this many keys are sorted one by one by the whole-array sort, whose
/// four-way merge passes and radix sort beat the two-way passes of the long path there.
pub const HUGE_SEGMENT: u64 = 1 << 20;

/// Segments of at most this many keys are sorted by placing each key at its rank (at most this
/// many compares); a geometry of them only runs the packed tiles' rank kernel.
pub const SEG_RANK: u64 = 64;

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
    /// For a built-in order of keys of at most 4 bytes: the order's number of a key `x` (a
    /// `radix_order` expression), which the rank kernel compares in place of the comparator.
    pub rank_order: Option<&'static str>,
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
            rank_order: rank_order(comparator),
            tuning: *tuning,
        }
    }
}

/// The number the rank kernel orders keys `K` by under `comparator`, where the radix sort's
/// number of a built-in order fits 32 bits: a key's number and position make one 64-bit word.
fn rank_order<K: Element>(comparator: &Comparator<K>) -> Option<&'static str> {
    let key = crate::radix::builtin_key(comparator)?;
    if std::mem::size_of::<K>() > 4 {
        return None;
    }
    Some(if key.is_descending() {
        "~radix_order(x)"
    } else {
        "radix_order(x)"
    })
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
        headers::RADIX_ORDER,
        include_str!("kernels/kernel_mergesort.cu"),
        include_str!("kernels/kernel_segsort.cu"),
    ];
    const PARTS: &'static [Part] = &[
        Part {
            name: "packed",
            kernels: &[
                "mgpu_segsort_tiles",
                "mgpu_segsort_short",
                "mgpu_segsort_rank",
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
        Part {
            name: "topk",
            kernels: &[
                "mgpu_topk_take",
                "mgpu_topk_take_segments",
                "mgpu_topk_gather",
                "mgpu_topk_iota",
            ],
        },
    ];
    fn prelude(spec: &SegSortSpec, p: &mut Prelude) {
        p.define("MGPU_VALUES", spec.mode as u32)
            .define("MGPU_SEG_RANK", SEG_RANK as u32)
            .element("K", &spec.keys)
            .element("V", &spec.values)
            .element("O", &spec.offsets)
            .functor(
                "Comp",
                "bool operator()(const K& a, const K& b)",
                &spec.comparator,
            );
        if let Some(order) = spec.rank_order {
            p.define("MGPU_RANK_ORDER(x)", format!("({order})"));
        }
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
        // A user's comparator: the rank kernel calls it (built-in orders compare numbers).
        let by_abs = Comparator::new(
            "by_abs",
            |a: &i32, b: &i32| a.abs() < b.abs(),
            "abs(a) < abs(b)",
        );
        let (family, size) = tuning_family(SortValues::None, 4, 0);
        let spec =
            SegSortSpec::new::<i32, i32, u32>(&by_abs, SortValues::None, &table(family, size)?);
        out.push(Instance::of::<SegSort>(&spec, family, desc, "by_abs None"));
        Ok(out)
    }
}

/// The tuning family of a segmented sort and the size of its packed tile's elements: the key,
/// its segment number and the value. (Keys of 1 or 2 bytes take a 2-byte segment number, but are
/// tuned as if it took 4: the 3- and 4-byte class's tiles spill in the segmented kernels.)
pub fn tuning_family(mode: SortValues, key_size: usize, value_size: usize) -> (Family, usize) {
    let composite = key_size + 4;
    match mode {
        SortValues::None => (Family::SortKeys, composite),
        _ => (Family::SortPairs, composite + value_size),
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
    // u64 count, const PackedTile* tiles).
    ShortArgs = "mgpu_segsort_short" {
        keys: CUdeviceptr, values: CUdeviceptr, offsets: CUdeviceptr, num_segments: u64,
        count: u64, tiles: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_rank(K* keys, V* values, const O* offsets, u64 num_segments,
    // u64 count, const PackedTile* tiles).
    RankArgs = "mgpu_segsort_rank" {
        keys: CUdeviceptr, values: CUdeviceptr, offsets: CUdeviceptr, num_segments: u64,
        count: u64, tiles: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segsort_classify(const O* offsets, u64 num_segments, u64 count, u64 huge_min,
    // u64 tile_max, unsigned* summary, LongTile* long_tiles, u64* huge, u64* tiled), LongTile
    // being a u64 and two u32.
    ClassifyArgs = "mgpu_segsort_classify" {
        offsets: CUdeviceptr, num_segments: u64, count: u64, huge_min: u64, tile_max: u64,
        summary: CUdeviceptr, long_tiles: CUdeviceptr, huge: CUdeviceptr, tiled: CUdeviceptr,
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

crate::kernel_args! {
    // SAFETY: mgpu_topk_take(const K* keys, const unsigned* positions, u64 count, u64 chunk,
    // u64 k, u64 out_count, K* out_keys, unsigned* out_positions).
    TakeArgs = "mgpu_topk_take" {
        keys: CUdeviceptr, positions: CUdeviceptr, count: u64, chunk: u64, k: u64, out_count: u64,
        out_keys: CUdeviceptr, out_positions: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_topk_take_segments(const K* keys, const unsigned* positions, const O* offsets,
    // u64 num_segments, u64 count, u64 k, K* out_keys, unsigned* out_positions).
    TakeSegmentsArgs = "mgpu_topk_take_segments" {
        keys: CUdeviceptr, positions: CUdeviceptr, offsets: CUdeviceptr, num_segments: u64,
        count: u64, k: u64, out_keys: CUdeviceptr, out_positions: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_topk_iota(unsigned* positions, u64 n).
    IotaArgs = "mgpu_topk_iota" { positions: CUdeviceptr, n: u64 }
}

crate::kernel_args! {
    // SAFETY: mgpu_topk_gather(const V* values, const unsigned* positions, u64 n, V* out).
    GatherArgs = "mgpu_topk_gather" {
        values: CUdeviceptr, positions: CUdeviceptr, n: u64, out: CUdeviceptr,
    }
}

/// Validated CSR offsets on the device: `num_segments` of them over `count` positions.
pub(crate) struct Geometry {
    pub offsets: CUdeviceptr,
    pub num_segments: u64,
    pub count: u64,
    /// The longest segment's length.
    pub longest: u64,
}

/// A segment left to the caller: its index and positions.
pub(crate) struct HugeSegment {
    pub index: u64,
    pub begin: u64,
    pub end: u64,
}

const SMALL_BLOCK: u32 = 128;

/// The radix sort of the segments longer than a packed tile takes and at most its own tile, for
/// keys that a radix key orders: each is sorted in one CTA with no merge.
pub(crate) struct RadixTiles {
    /// A `segments` module's spec.
    pub spec: RadixSpec,
    /// The comparator's bits and direction.
    pub order: Order,
}

impl RadixTiles {
    /// For keys `K` (with values `V` where `mode` is `Pairs`) under `comparator`, if a radix key
    /// orders them (built-in orders of arithmetic keys).
    pub fn of<K: Element, V: Element>(
        comparator: &Comparator<K>,
        mode: SortValues,
        arch: Option<u32>,
    ) -> Result<Option<Self>> {
        let Some(key) = crate::radix::builtin_key(comparator) else {
            return Ok(None);
        };
        let (wide, order) = key.spec_parts();
        let spec = RadixSpec::segments::<K, V>(wide, order, mode, arch)?;
        let order = Order {
            bits: key.bits(),
            descending: key.is_descending(),
        };
        Ok(Some(RadixTiles { spec, order }))
    }
}

/// Sorts the segments of `keys` (and `values`) in place, all but the huge ones, which it returns
/// as position ranges for the caller to sort. One wait for the GPU (the classification's summary)
/// where some segment is longer than a packed tile takes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sort<K: Element, V: Element, O: Offset>(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    keys: CUdeviceptr,
    values: CUdeviceptr,
    comparator: &Comparator<K>,
    mode: SortValues,
    tuning: &Tuning,
    radix: Option<&RadixTiles>,
) -> Result<Vec<HugeSegment>> {
    let Geometry {
        offsets,
        num_segments,
        count,
        longest,
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
    if longest <= SEG_RANK {
        let args = RankArgs {
            keys,
            values,
            offsets,
            num_segments,
            count,
            tiles: tiles.ptr,
        };
        gpu.launch(&packed, num_tiles as u32, tuning.nt, &args)?;
        return Ok(Vec::new());
    }
    let args = ShortArgs {
        keys,
        values,
        offsets,
        num_segments,
        count,
        tiles: tiles.ptr,
    };
    gpu.launch(&packed, num_tiles as u32, tuning.nt, &args)?;

    // The others: long segments' tiles, huge segments.
    if longest <= short_max {
        return Ok(Vec::new());
    }
    let summary = DeviceMem::alloc(gpu, 16)?;
    gpu.memset_zero(summary.ptr, 16)?;
    let long_capacity = count / (short_max + 1) + 1;
    let long_tiles = DeviceMem::alloc(gpu, long_capacity as usize * 16)?;
    let huge = DeviceMem::alloc(gpu, (count / HUGE_SEGMENT + 1) as usize * 24)?;
    // With no radix key, no segment is listed for the radix sort (nothing is allocated).
    let tile_max = radix.map_or(0, |r| r.spec.tuning.nv() as u64);
    let tiled = DeviceMem::alloc(
        gpu,
        if tile_max > 0 {
            long_capacity as usize * 16
        } else {
            0
        },
    )?;
    let args = ClassifyArgs {
        offsets,
        num_segments,
        count,
        huge_min: HUGE_SEGMENT,
        tile_max,
        summary: summary.ptr,
        long_tiles: long_tiles.ptr,
        huge: huge.ptr,
        tiled: tiled.ptr,
    };
    let grid = num_segments
        .div_ceil(256)
        .min(gpu.sm_count as u64 * 8)
        .max(1) as u32;
    gpu.launch(&packed, grid, 256, &args)?;
    let mut found = [0u32; 4];
    gpu.download(summary.ptr, &mut found)?;
    let [num_long, max_passes, num_huge, num_tiled] = found;

    if let (Some(r), true) = (radix, num_tiled > 0) {
        radix::sort_segments(
            gpu,
            &r.spec,
            &r.order,
            (keys, values),
            tiled.ptr,
            num_tiled as u64,
        )?;
    }

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
    let mut list = vec![0u64; 3 * num_huge as usize];
    if num_huge > 0 {
        gpu.download(huge.ptr, &mut list)?;
    }
    let mut huge: Vec<HugeSegment> = list
        .chunks(3)
        .map(|h| HugeSegment {
            index: h[0],
            begin: h[1],
            end: h[2],
        })
        .collect();
    huge.sort_unstable_by_key(|h| h.index);
    Ok(huge)
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

/// A grid for a grid-stride loop over `work` items.
fn stride_grid(gpu: &Gpu, work: u64) -> u32 {
    work.div_ceil(256).clamp(1, gpu.sm_count as u64 * 16) as u32
}

/// The first `k` (1 <= k <= n) of `n` keys at `keys` in the comparator's order, ties in input
/// order: keys to `out_keys`, input positions (`n` <= 2^32) to `out_positions`. Small k: each
/// tile of the keys (and their positions) is sorted and keeps its first k, round after round,
/// until one tile is left; the keys are read once and nothing is sorted whole. Large k: the
/// whole sort of a copy.
#[allow(clippy::too_many_arguments)]
pub(crate) fn top_k<K: Element>(
    gpu: &Arc<Gpu>,
    arch: Option<u32>,
    keys: CUdeviceptr,
    n: u64,
    k: u64,
    comparator: &Comparator<K>,
    out_keys: CUdeviceptr,
    out_positions: CUdeviceptr,
) -> Result<()> {
    let ks = std::mem::size_of::<K>();
    let (family, size) = merge::tuning_family(SortValues::Indices, ks, 4);
    let t = tuning::resolve(family, arch, size, None)?;
    let nv = t.nv() as u64;
    let mut cur_keys = DeviceMem::alloc(gpu, n as usize * ks)?;
    let mut cur_pos = DeviceMem::alloc(gpu, n as usize * 4)?;
    if k > nv / 4 || n <= nv {
        gpu.copy(keys, cur_keys.ptr, n as usize * ks)?;
        merge::sort::<K, u32>(
            gpu,
            cur_keys.ptr,
            cur_pos.ptr,
            n,
            comparator,
            SortValues::Indices,
            &t,
        )?;
    } else {
        // Round one sorts the caller's keys tile by tile, positions generated.
        let spec = MergeSpec::new::<K, u32>(comparator, SortValues::Indices, &t);
        let blocksort = gpu.module::<Merge>(&spec, part::<Merge>("blocksort"))?;
        let args = merge::BlocksortArgs {
            keys_in: keys,
            values_in: 0,
            keys_out: cur_keys.ptr,
            values_out: cur_pos.ptr,
            count: n,
            nan_flag: 0,
            token: 0,
        };
        gpu.launch(&blocksort, n.div_ceil(nv) as u32, t.nt, &args)?;
        let spec = SegSortSpec::new::<K, u32, u32>(comparator, SortValues::Pairs, &t);
        let take = gpu.module::<SegSort>(&spec, part::<SegSort>("topk"))?;
        let spec = MergeSpec::new::<K, u32>(comparator, SortValues::Pairs, &t);
        let blocksort = gpu.module::<Merge>(&spec, part::<Merge>("blocksort"))?;
        let mut count = n;
        loop {
            let tiles = count.div_ceil(nv);
            let out_count = (tiles - 1) * k + k.min(count - (tiles - 1) * nv);
            let next_keys = DeviceMem::alloc(gpu, out_count as usize * ks)?;
            let next_pos = DeviceMem::alloc(gpu, out_count as usize * 4)?;
            let args = TakeArgs {
                keys: cur_keys.ptr,
                positions: cur_pos.ptr,
                count,
                chunk: nv,
                k,
                out_count,
                out_keys: next_keys.ptr,
                out_positions: next_pos.ptr,
            };
            gpu.launch(&take, stride_grid(gpu, out_count), 256, &args)?;
            (cur_keys, cur_pos, count) = (next_keys, next_pos, out_count);
            let args = merge::BlocksortArgs {
                keys_in: cur_keys.ptr,
                values_in: cur_pos.ptr,
                keys_out: cur_keys.ptr,
                values_out: cur_pos.ptr,
                count,
                nan_flag: 0,
                token: 0,
            };
            gpu.launch(&blocksort, count.div_ceil(nv) as u32, t.nt, &args)?;
            if count <= nv {
                break;
            }
        }
    }
    gpu.copy(cur_keys.ptr, out_keys, k as usize * ks)?;
    if out_positions != 0 {
        gpu.copy(cur_pos.ptr, out_positions, k as usize * 4)?;
    }
    Ok(())
}

/// `out[i] = values[positions[i]]` for `n` positions.
pub(crate) fn gather<V: Element>(
    gpu: &Arc<Gpu>,
    values: CUdeviceptr,
    positions: CUdeviceptr,
    n: u64,
    out: CUdeviceptr,
    tuning: &Tuning,
) -> Result<()> {
    let spec = SegSortSpec::new::<u32, V, u32>(&Comparator::less(), SortValues::Pairs, tuning);
    let module = gpu.module::<SegSort>(&spec, part::<SegSort>("topk"))?;
    let args = GatherArgs {
        values,
        positions,
        n,
        out,
    };
    gpu.launch(&module, stride_grid(gpu, n), 256, &args)
}

/// The first min(k, length) keys of every segment, in order, to `out_keys[segment * k ..]`
/// with their positions in the segment (unless `out_positions` is 0): a segmented sort of a copy
/// of the keys and their positions, then a take; a huge segment by [`top_k`] on its own.
#[allow(clippy::too_many_arguments)]
pub(crate) fn segmented_top_k<K: Element, O: Offset>(
    gpu: &Arc<Gpu>,
    arch: Option<u32>,
    geometry: &Geometry,
    keys: CUdeviceptr,
    k: u64,
    comparator: &Comparator<K>,
    tuning: &Tuning,
    out_keys: CUdeviceptr,
    out_positions: CUdeviceptr,
) -> Result<()> {
    let n = geometry.count;
    if n == 0 || k == 0 {
        return Ok(());
    }
    let ks = std::mem::size_of::<K>();
    let work_keys = DeviceMem::alloc(gpu, n as usize * ks)?;
    let work_pos = DeviceMem::alloc(gpu, n as usize * 4)?;
    gpu.copy(keys, work_keys.ptr, n as usize * ks)?;
    let spec = SegSortSpec::new::<K, u32, O>(comparator, SortValues::Pairs, tuning);
    let module = gpu.module::<SegSort>(&spec, part::<SegSort>("topk"))?;
    let args = IotaArgs {
        positions: work_pos.ptr,
        n,
    };
    gpu.launch(&module, stride_grid(gpu, n), 256, &args)?;
    let radix = RadixTiles::of::<K, u32>(comparator, SortValues::Pairs, arch)?;
    let huge = sort::<K, u32, O>(
        gpu,
        geometry,
        work_keys.ptr,
        work_pos.ptr,
        comparator,
        SortValues::Pairs,
        tuning,
        radix.as_ref(),
    )?;
    let args = TakeSegmentsArgs {
        keys: work_keys.ptr,
        positions: work_pos.ptr,
        offsets: geometry.offsets,
        num_segments: geometry.num_segments,
        count: n,
        k,
        out_keys,
        out_positions,
    };
    gpu.launch(
        &module,
        stride_grid(gpu, geometry.num_segments * k),
        256,
        &args,
    )?;
    for h in huge {
        let slot = h.index * k;
        top_k(
            gpu,
            arch,
            keys + h.begin * ks as u64,
            h.end - h.begin,
            k.min(h.end - h.begin),
            comparator,
            out_keys + slot * ks as u64,
            if out_positions == 0 {
                0
            } else {
                out_positions + slot * 4
            },
        )?;
    }
    Ok(())
}
