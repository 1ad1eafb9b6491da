//! The merge family: merge and mergesort. A sort is a blocksort, then merge passes ping-ponging
//! between the caller's buffer and one temporary, arranged so that the result lands in the
//! caller's buffer.

use super::family::{part, Instance, KernelArgs, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Expr, Prelude};
use super::memory::DeviceMem;
use super::{Gpu, LoadedModule};
use crate::error::Result;
use crate::tuning::{self, Family, Tuning};
use crate::{Arithmetic, Comparator, Element};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// What a sort module carries besides its keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortValues {
    /// Keys only.
    None,
    /// A value per key, moved with it.
    Pairs,
    /// The value of each key is its input position (generated, not read).
    Indices,
}

/// A merge / mergesort module: keys, values, comparator and tuning.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MergeSpec {
    /// The key type.
    pub keys: ElementDesc,
    /// The value type (unused with `SortValues::None`).
    pub values: ElementDesc,
    /// What travels with the keys (`MGPU_VALUES`).
    pub mode: SortValues,
    /// The strict weak order's expression over `a` and `b`.
    pub comparator: Expr,
    /// The plain comparison that orders keys without NaN as `comparator` does, where it is one
    /// compare fewer (the built-in orders of floating-point keys).
    pub nan_free: Option<&'static str>,
    /// The tuning.
    pub tuning: Tuning,
    /// A merge of two sequences alone (`mgpu_merge` and its partition), whose tile may be one
    /// the merge sort's kernels cannot take (`Family::Merge`).
    pub sequences: bool,
}

impl MergeSpec {
    /// Keys `K` with values `V`, ordered by `comparator`.
    pub fn new<K: Element, V: Element>(
        comparator: &Comparator<K>,
        mode: SortValues,
        tuning: &Tuning,
    ) -> MergeSpec {
        MergeSpec {
            keys: ElementDesc::of::<K>(),
            values: ElementDesc::of::<V>(),
            mode,
            comparator: Expr::new(comparator.cuda_expression(), comparator.cuda_helpers()),
            nan_free: comparator.nan_free_expression(),
            tuning: *tuning,
            sequences: false,
        }
    }

    /// The spec of a merge of two sequences (`Context::merge`, `Context::merge_pairs`).
    pub fn sequences<K: Element, V: Element>(
        comparator: &Comparator<K>,
        mode: SortValues,
        tuning: &Tuning,
    ) -> MergeSpec {
        MergeSpec {
            sequences: true,
            ..MergeSpec::new::<K, V>(comparator, mode, tuning)
        }
    }
}

/// The merge family, loaded in parts: the blocksort (a sort of one tile, and every sort's first
/// step), the merge passes of larger sorts, and the merge of two sequences.
pub struct Merge;

impl KernelFamily for Merge {
    type Spec = MergeSpec;
    const NAME: &'static str = "merge";
    const FILES: &'static [&'static str] = &[
        headers::INTRINSICS,
        headers::CTA_MERGE,
        include_str!("kernels/kernel_mergesort.cu"),
    ];
    const PARTS: &'static [Part] = &[
        Part {
            name: "blocksort",
            kernels: &["mgpu_blocksort"],
        },
        // The passes of the merge sort: two-way (an odd level out) and four-way, parts of their
        // own so that they compile at once, each with the two-way split that starts a pass.
        Part {
            name: "merge_two_way",
            kernels: &["mgpu_merge_partition", "mgpu_merge_pass"],
        },
        Part {
            name: "merge_four_way",
            kernels: &[
                "mgpu_merge_partition",
                "mgpu_merge4_partition",
                "mgpu_merge4_pass",
                "mgpu_merge4_pass_searching",
            ],
        },
        Part {
            name: "merge_sequences",
            kernels: &["mgpu_merge_partition", "mgpu_merge"],
        },
    ];
    fn prelude(spec: &MergeSpec, p: &mut Prelude) {
        p.define("MGPU_VALUES", spec.mode as u32)
            .element("K", &spec.keys)
            .element("V", &spec.values)
            .functor(
                "Comp",
                "bool operator()(const K& a, const K& b)",
                &spec.comparator,
            );
        if let Some(plain) = spec.nan_free {
            p.define("MGPU_NAN_FREE_ORDER", 1).functor(
                "CompNanFree",
                "bool operator()(const K& a, const K& b)",
                &Expr::new(plain, ""),
            );
        }
    }
    fn tuning(spec: &MergeSpec) -> Tuning {
        spec.tuning
    }
    fn compiles(spec: &MergeSpec, kernel: &str) -> bool {
        !spec.sequences || matches!(kernel, "mgpu_merge_partition" | "mgpu_merge")
    }
    const TUNING: &'static [Family] = &[Family::SortKeys, Family::SortPairs, Family::Merge];
    fn instances(arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        crate::for_each_arithmetic!(merge_instances(arch, table, &mut out));
        Ok(out)
    }
}

/// The tuning family of a sort and the size of its tile's elements.
pub fn tuning_family(mode: SortValues, key_size: usize, value_size: usize) -> (Family, usize) {
    match mode {
        SortValues::None => (Family::SortKeys, key_size),
        _ => (Family::SortPairs, key_size + value_size),
    }
}

/// Keys `K` under `less` and `greater`: keys only, pairs of `K`s, and indices; and keys only
/// under the tunings the table keeps for some sizes of sort ([`tuning::bands`]).
fn merge_instances<K: Arithmetic>(
    arch: u32,
    table: TableTuning<'_>,
    out: &mut Vec<Instance>,
) -> Result<()> {
    let k = std::mem::size_of::<K>();
    for (c, comparator) in [Comparator::<K>::less(), Comparator::greater()]
        .iter()
        .enumerate()
    {
        for mode in [SortValues::None, SortValues::Pairs, SortValues::Indices] {
            let spec = if mode == SortValues::Indices {
                let (family, size) = tuning_family(mode, k, 4);
                MergeSpec::new::<K, u32>(comparator, mode, &table(family, size)?)
            } else {
                let (family, size) = tuning_family(mode, k, k);
                MergeSpec::new::<K, K>(comparator, mode, &table(family, size)?)
            };
            let (family, _) = tuning_family(mode, k, 0);
            let label = format!("{} {mode:?}", comparator.name());
            let primary = c == 0 && mode != SortValues::Indices;
            out.push(
                Instance::of::<Merge>(&spec, family, ElementDesc::of::<K>(), label)
                    .primary(primary),
            );
        }
        let keys = table(Family::SortKeys, k)?;
        // The merge of two sequences of keys, in its own family's tile.
        let merge = table(Family::Merge, k)?;
        let spec = MergeSpec::sequences::<K, K>(comparator, SortValues::None, &merge);
        let label = format!("{} None sequences", comparator.name());
        let desc = ElementDesc::of::<K>();
        out.push(Instance::of::<Merge>(&spec, Family::Merge, desc, label).primary(c == 0));
        for t in tuning::bands(Family::SortKeys, arch, k) {
            if t != keys {
                let spec = MergeSpec::new::<K, K>(comparator, SortValues::None, &t);
                let label = format!("{} None {}x{}x{}", comparator.name(), t.nt, t.vt, t.occ);
                let desc = ElementDesc::of::<K>();
                out.push(Instance::of::<Merge>(&spec, Family::SortKeys, desc, label));
            }
        }
    }
    Ok(())
}

crate::kernel_args! {
    // SAFETY: mgpu_blocksort(const K* keys_in, const V* values_in, K* keys_out, V* values_out,
    // u64 count, u32* nan_flag, u32 token).
    BlocksortArgs = "mgpu_blocksort" {
        keys_in: CUdeviceptr, values_in: CUdeviceptr, keys_out: CUdeviceptr,
        values_out: CUdeviceptr, count: u64, nan_flag: CUdeviceptr, token: u32,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_merge_partition(const K* a_keys, u64 a_total, const K* b_keys, u64 b_total,
    // int standalone, u64 width, u64 step, u64 num_partitions, u64* partitions, int lanes).
    MergePartitionArgs = "mgpu_merge_partition" {
        a_keys: CUdeviceptr, a_total: u64, b_keys: CUdeviceptr, b_total: u64, standalone: i32,
        width: u64, step: u64, num_partitions: u64, partitions: CUdeviceptr, lanes: i32,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_merge_pass(const K* keys_in, const V* values_in, K* keys_out, V* values_out,
    // u64 count, u64 width, const u64* partitions, const u32* nan_flag, u32 token).
    MergePassArgs = "mgpu_merge_pass" {
        keys_in: CUdeviceptr, values_in: CUdeviceptr, keys_out: CUdeviceptr,
        values_out: CUdeviceptr, count: u64, width: u64, partitions: CUdeviceptr,
        nan_flag: CUdeviceptr, token: u32,
    }
}

/// The four-way pass's arguments: the two-way pass's, with the four-way splits as `partitions`.
struct Merge4PassArgs(MergePassArgs);

// SAFETY: mgpu_merge4_pass(const K* keys_in, const V* values_in, K* keys_out, V* values_out,
// u64 count, u64 width, const u64* quads, const u32* nan_flag, u32 token): mgpu_merge_pass's
// parameter list.
unsafe impl KernelArgs for Merge4PassArgs {
    const KERNEL: &'static str = "mgpu_merge4_pass";
    fn params(&self) -> Vec<*mut std::ffi::c_void> {
        self.0.params()
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_merge4_partition(const K* keys, u64 count, u64 width, u64 step,
    // const u64* pairs, u64 num_partitions, u64* quads, int lanes).
    Merge4PartitionArgs = "mgpu_merge4_partition" {
        keys: CUdeviceptr, count: u64, width: u64, step: u64, pairs: CUdeviceptr,
        num_partitions: u64, quads: CUdeviceptr, lanes: i32,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_merge4_pass_searching(const K* keys_in, const V* values_in, K* keys_out,
    // V* values_out, u64 count, u64 width, u64 step, const u64* pairs, const u32* nan_flag,
    // u32 token).
    Merge4SearchingArgs = "mgpu_merge4_pass_searching" {
        keys_in: CUdeviceptr, values_in: CUdeviceptr, keys_out: CUdeviceptr,
        values_out: CUdeviceptr, count: u64, width: u64, step: u64, pairs: CUdeviceptr,
        nan_flag: CUdeviceptr, token: u32,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_merge(const K* a_keys, const V* a_values, u64 a_count, const K* b_keys,
    // const V* b_values, u64 b_count, K* keys_out, V* values_out, const u64* partitions).
    MergeArgs = "mgpu_merge" {
        a_keys: CUdeviceptr, a_values: CUdeviceptr, a_count: u64, b_keys: CUdeviceptr,
        b_values: CUdeviceptr, b_count: u64, keys_out: CUdeviceptr, values_out: CUdeviceptr,
        partitions: CUdeviceptr,
    }
}

const PARTITION_THREADS: u32 = 128;

/// The lanes that search each of `num_partitions` tile boundaries together (cta_merge.cuh's
/// SearchTeam). Few boundaries are a launch of a few dependent loads' latency each: whole warps
/// cut a search's latency most. Many keep the memory busy already, and the teams' extra loads
/// then cost more than they save (H100, `mgpu bench sort` and `merge` with every team size:
/// merge sort of 2^24 i32 keys 1.018 ms alone, 0.803 with teams of 8, 0.823 of 32; 2^26 2.88 ms
/// alone, 2.93 with teams of 8). Teams of 2 were slower than one lane at every size, teams of 4
/// slower than teams of 8 wherever teams paid.
fn search_lanes(num_partitions: u64) -> i32 {
    match num_partitions {
        0..=1024 => 32,
        1025..=4096 => 8,
        _ => 1,
    }
}

/// The grid of a partition kernel whose teams of `lanes` search `num_partitions` boundaries.
fn partition_grid(num_partitions: u64, lanes: i32) -> u32 {
    let grid = num_partitions.div_ceil(PARTITION_THREADS as u64 / lanes as u64);
    u32::try_from(grid).expect("fewer than 2^32 tile boundaries")
}

/// A mark new to each sort: a blocksort that finds a NaN writes it where the merge passes look
/// (kernel_mergesort.cu, WITH_ORDER). Memory that holds it by chance only sends the passes to
/// the total order.
fn next_sort_token() -> u32 {
    static TOKEN: AtomicU32 = AtomicU32::new(1);
    TOKEN.fetch_add(1, Ordering::Relaxed)
}

/// How many two-way splits a four-way pass takes per tile of `nv`: the largest power of two
/// dividing `nv` (at most 16) that keeps them under 4096 for `num_tiles` tiles. Where tiles are
/// few, the four-way search then starts from a window of nv / G outputs, not nv: a round of
/// probes fewer and narrower inner searches, for a two-way split search that costs about the
/// same (a launch of latency while the splits stay few).
fn splits_per_tile(num_tiles: u64, nv: u64) -> u64 {
    let mut g = 1;
    while g < 16 && nv.is_multiple_of(2 * g) && num_tiles * 2 * g < 4096 {
        g *= 2;
    }
    g
}

/// The merge path splits of `args.num_partitions` boundaries: a launch of a few dependent loads'
/// latency, which starts while the kernel before it ends (`launch_dependent`).
fn partitions(gpu: &Gpu, module: &LoadedModule, args: &MergePartitionArgs) -> Result<()> {
    let grid = partition_grid(args.num_partitions, args.lanes);
    gpu.launch_dependent(module, grid, PARTITION_THREADS, args)
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
    let spec = MergeSpec::new::<K, V>(comparator, mode, tuning);
    if passes == 0 {
        let blocksort = gpu.module::<Merge>(&spec, part::<Merge>("blocksort"))?;
        // One tile: sorted in place (the kernel stages it in shared memory), and only the block
        // sort is compiled.
        let args = BlocksortArgs {
            keys_in: keys,
            values_in: values,
            keys_out: keys,
            values_out: values,
            count,
            nan_flag: 0,
            token: 0,
        };
        return gpu.launch(&blocksort, 1, tuning.nt, &args);
    }
    // The parts this sort launches, at once on a cold cache: each is hundreds of milliseconds of
    // NVRTC.
    let four_way_levels = levels >= 2;
    let wanted: Vec<&Part> = [
        Some("blocksort"),
        (two_way == 1).then_some("merge_two_way"),
        four_way_levels.then_some("merge_four_way"),
    ]
    .into_iter()
    .flatten()
    .map(part::<Merge>)
    .collect();
    let mut loaded = gpu.modules::<Merge>(&spec, &wanted)?.into_iter();
    let mut next = || loaded.next().expect("a module per part asked");
    let blocksort = next();
    let two_way_module = (two_way == 1).then(&mut next);
    let four_way_module = four_way_levels.then(&mut next);
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
    let fine = splits_per_tile(num_tiles, nv);
    let pair_bytes = (num_tiles * fine) as usize * 8 + 8;
    // The NaN mark (kernel_mergesort.cu, WITH_ORDER) follows the splits.
    let pairs = DeviceMem::alloc(gpu, pair_bytes + 4)?;
    let nan_flag = pairs.ptr + pair_bytes as u64;
    let token = next_sort_token();
    let args = BlocksortArgs {
        keys_in: keys,
        values_in: values,
        keys_out: dst.0,
        values_out: dst.1,
        count,
        nan_flag,
        token,
    };
    gpu.launch(&blocksort, num_tiles as u32, tuning.nt, &args)?;
    // Four-way passes whose tiles all fit one wave search their own splits: a launch fewer per
    // pass (H100, 2^20 keys: 7-8% faster). Past a wave, the searches' latency comes back in each
    // wave, and the two-kernel pass is faster (2^22 i32 keys with 256x23x6, 713 tiles: 12%).
    // Its searches count in 32 bits (kernel_mergesort.cu): under 2^26 keys.
    let searching = count < 1 << 26
        && four_way_module.as_ref().is_some_and(|m| {
            num_tiles <= gpu.sm_count as u64 * m.resident::<Merge4SearchingArgs>() as u64
        });
    let quads = if levels >= 2 && !searching {
        Some(DeviceMem::alloc(gpu, (num_tiles as usize + 1) * 32)?)
    } else {
        None
    };
    let mut width = nv;
    let mut current = dst;
    let mut other = src;
    for pass in 0..passes {
        // Both kinds of pass start from two-way splits: of every tile boundary for a two-way
        // pass, on the finer grid for a four-way pass's search.
        let four_way = pass >= two_way;
        let splits = if four_way {
            num_tiles * fine
        } else {
            num_tiles
        };
        let split = MergePartitionArgs {
            a_keys: current.0,
            a_total: count,
            b_keys: 0,
            b_total: 0,
            standalone: 0,
            width,
            step: if four_way { nv / fine } else { nv },
            num_partitions: splits + 1,
            partitions: pairs.ptr,
            lanes: search_lanes(splits + 1),
        };
        let module = match four_way {
            true => four_way_module.as_ref(),
            false => two_way_module.as_ref(),
        }
        .expect("loaded for the passes this sort makes");
        partitions(gpu, module, &split)?;
        if four_way && searching {
            let args = Merge4SearchingArgs {
                keys_in: current.0,
                values_in: current.1,
                keys_out: other.0,
                values_out: other.1,
                count,
                width,
                step: nv / fine,
                pairs: pairs.ptr,
                nan_flag,
                token,
            };
            gpu.launch(module, num_tiles as u32, tuning.nt, &args)?;
            std::mem::swap(&mut current, &mut other);
            width *= 4;
            continue;
        }
        if four_way {
            let quads = quads.as_ref().expect("allocated for two levels or more");
            let split4 = Merge4PartitionArgs {
                keys: current.0,
                count,
                width,
                step: nv / fine,
                pairs: pairs.ptr,
                num_partitions: num_tiles + 1,
                quads: quads.ptr,
                lanes: search_lanes(num_tiles + 1),
            };
            let grid = partition_grid(num_tiles + 1, split4.lanes);
            gpu.launch_dependent(module, grid, PARTITION_THREADS, &split4)?;
        }
        let merge = MergePassArgs {
            keys_in: current.0,
            values_in: current.1,
            keys_out: other.0,
            values_out: other.1,
            count,
            width,
            partitions: match &quads {
                Some(quads) if four_way => quads.ptr,
                _ => pairs.ptr,
            },
            nan_flag,
            token,
        };
        if four_way {
            gpu.launch(module, num_tiles as u32, tuning.nt, &Merge4PassArgs(merge))?;
        } else {
            gpu.launch(module, num_tiles as u32, tuning.nt, &merge)?;
        }
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
    let spec = MergeSpec::sequences::<K, V>(comparator, mode, tuning);
    let module = gpu.module::<Merge>(&spec, part::<Merge>("merge_sequences"))?;
    let num_tiles = total.div_ceil(tuning.nv() as u64);
    let splits = DeviceMem::alloc(gpu, (num_tiles as usize + 1) * 8)?;
    let split = MergePartitionArgs {
        a_keys: a.0,
        a_total: a.2,
        b_keys: b.0,
        b_total: b.2,
        standalone: 1,
        width: 0,
        step: tuning.nv() as u64,
        num_partitions: num_tiles + 1,
        partitions: splits.ptr,
        lanes: search_lanes(num_tiles + 1),
    };
    partitions(gpu, &module, &split)?;
    let args = MergeArgs {
        a_keys: a.0,
        a_values: a.1,
        a_count: a.2,
        b_keys: b.0,
        b_values: b.1,
        b_count: b.2,
        keys_out: out.0,
        values_out: out.1,
        partitions: splits.ptr,
    };
    // Up early, behind a partition that holds few SMs: 2-5% faster at 2^20..2^24 (H100).
    gpu.launch_dependent(&module, num_tiles as u32, tuning.nt, &args)
}
