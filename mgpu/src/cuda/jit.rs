//! Run-time compilation: kernel sources specialized by element type, operator, tuning and
//! architecture, compiled to a cubin with NVRTC, cached in memory (by the caller) and on disk.

use crate::error::{Error, Result};
use crate::tuning::Tuning;
use crate::{Comparator, Element, Op};
use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

const INTRINSICS: &str = include_str!("kernels/intrinsics.cuh");
const LOADSTORE: &str = include_str!("kernels/loadstore.cuh");
const CTA_REDUCE: &str = include_str!("kernels/cta_reduce.cuh");
const CTA_SCAN: &str = include_str!("kernels/cta_scan.cuh");
const LOOKBACK: &str = include_str!("kernels/lookback.cuh");
const KERNEL_REDUCE: &str = include_str!("kernels/kernel_reduce.cu");
const KERNEL_SCAN: &str = include_str!("kernels/kernel_scan.cu");
const KERNEL_TRANSFORM: &str = include_str!("kernels/kernel_transform.cu");
const CTA_MERGE: &str = include_str!("kernels/cta_merge.cuh");
const KERNEL_MERGESORT: &str = include_str!("kernels/kernel_mergesort.cu");
const KERNEL_COMPACT: &str = include_str!("kernels/kernel_compact.cu");
const SEGSCAN: &str = include_str!("kernels/segscan.cuh");
const KERNEL_SEGREDUCE: &str = include_str!("kernels/kernel_segreduce.cu");

/// A kernel family's module: which source files it is made of and which kernels it exports.
/// The source defines `MGPU_WANT_<kernel>` for each exported kernel, and only those are compiled:
/// a family's part (`ScanTiles`, `Blocksort`, ...) compiles a subset of its kernels, from the same
/// source and with the same code, so that a call compiles only what it launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Module {
    /// `mgpu_reduce`.
    Reduce,
    /// `mgpu_scan_lookback`, `mgpu_scan_tiles`: the whole family (what the tools compile and
    /// report on; the library loads its parts).
    Scan,
    /// `mgpu_scan_tiles`: the small-input scan, and the spine and downsweep of reduce-then-scan.
    ScanTiles,
    /// `mgpu_scan_lookback`: the single-pass look-back scan.
    ScanLookback,
    /// `mgpu_blocksort`, `mgpu_merge_partition`, `mgpu_merge_pass`, `mgpu_merge4_partition`,
    /// `mgpu_merge4_pass`, `mgpu_merge`: the whole family (what the tools compile and report on;
    /// the library loads its parts).
    Merge,
    /// `mgpu_blocksort`: a sort of one tile, and the first step of every sort.
    Blocksort,
    /// `mgpu_merge_partition`, `mgpu_merge_pass`, `mgpu_merge4_partition`, `mgpu_merge4_pass`: the
    /// merge passes of a sort of more than one tile.
    MergePasses,
    /// `mgpu_merge_partition`, `mgpu_merge`: the merge of two sorted sequences.
    MergeSequences,
    /// `mgpu_transform`.
    Transform,
    /// `mgpu_compact`: select, partition, unique.
    Compact,
    /// `mgpu_reduce_by_key` (also run-length encoding).
    ReduceByKey,
    /// `mgpu_non_trivial_runs`.
    NonTrivialRuns,
    /// `mgpu_segreduce`, `mgpu_segreduce_partition`, `mgpu_segreduce_validate`: segmented
    /// reduction over CSR segments (and SpMV); the whole family (what the tools compile and
    /// report on; the library loads its parts).
    SegReduce,
    /// `mgpu_segreduce`, `mgpu_segreduce_spine`, `mgpu_segreduce_fixup`: the tiles of a
    /// segmented reduction or SpMV and the carry across them.
    SegReduceTiles,
    /// `mgpu_segreduce_partition`, `mgpu_segreduce_validate`, `mgpu_segreduce_codes`,
    /// `mgpu_segreduce_headless`: the tile limits, the geometry's checks and a plan's packed
    /// heads, which depend on the offsets' width and the tile size only.
    SegReduceHelpers,
}

impl Module {
    /// The whole family a module is part of (itself for a whole family).
    pub fn family(self) -> Module {
        match self {
            Module::ScanTiles | Module::ScanLookback => Module::Scan,
            Module::Blocksort | Module::MergePasses | Module::MergeSequences => Module::Merge,
            Module::SegReduceTiles | Module::SegReduceHelpers => Module::SegReduce,
            m => m,
        }
    }

    /// The modules the library loads for a whole family (each a part of it, together compiling
    /// every kernel of the family); a module that is not split is its own part.
    pub fn parts(self) -> &'static [Module] {
        match self {
            Module::Scan => &[Module::ScanTiles, Module::ScanLookback],
            Module::Merge => &[
                Module::Blocksort,
                Module::MergePasses,
                Module::MergeSequences,
            ],
            Module::Reduce => &[Module::Reduce],
            Module::Transform => &[Module::Transform],
            Module::Compact => &[Module::Compact],
            Module::ReduceByKey => &[Module::ReduceByKey],
            Module::NonTrivialRuns => &[Module::NonTrivialRuns],
            Module::SegReduce => &[Module::SegReduceTiles, Module::SegReduceHelpers],
            Module::SegReduceTiles => &[Module::SegReduceTiles],
            Module::SegReduceHelpers => &[Module::SegReduceHelpers],
            Module::ScanTiles => &[Module::ScanTiles],
            Module::ScanLookback => &[Module::ScanLookback],
            Module::Blocksort => &[Module::Blocksort],
            Module::MergePasses => &[Module::MergePasses],
            Module::MergeSequences => &[Module::MergeSequences],
        }
    }

    fn sources(self) -> &'static [&'static str] {
        match self.family() {
            Module::Reduce => &[INTRINSICS, LOADSTORE, CTA_REDUCE, KERNEL_REDUCE],
            Module::Scan => &[
                INTRINSICS,
                LOADSTORE,
                CTA_REDUCE,
                CTA_SCAN,
                LOOKBACK,
                KERNEL_SCAN,
            ],
            Module::Merge => &[INTRINSICS, CTA_MERGE, KERNEL_MERGESORT],
            Module::Transform => &[INTRINSICS, LOADSTORE, KERNEL_TRANSFORM],
            Module::Compact | Module::ReduceByKey | Module::NonTrivialRuns => &[
                INTRINSICS,
                LOADSTORE,
                CTA_REDUCE,
                CTA_SCAN,
                LOOKBACK,
                SEGSCAN,
                KERNEL_COMPACT,
            ],
            Module::SegReduce => &[
                INTRINSICS,
                LOADSTORE,
                CTA_REDUCE,
                CTA_SCAN,
                LOOKBACK,
                SEGSCAN,
                KERNEL_SEGREDUCE,
            ],
            part => unreachable!("{part:?} is a family"),
        }
    }
    /// The kernels the module exports.
    pub fn kernels(self) -> &'static [&'static str] {
        match self {
            Module::Reduce => &["mgpu_reduce"],
            Module::Scan => &["mgpu_scan_lookback", "mgpu_scan_tiles"],
            Module::ScanTiles => &["mgpu_scan_tiles"],
            Module::ScanLookback => &["mgpu_scan_lookback"],
            Module::Merge => &[
                "mgpu_blocksort",
                "mgpu_merge_partition",
                "mgpu_merge_pass",
                "mgpu_merge4_partition",
                "mgpu_merge4_pass",
                "mgpu_merge",
            ],
            Module::Blocksort => &["mgpu_blocksort"],
            Module::MergePasses => &[
                "mgpu_merge_partition",
                "mgpu_merge_pass",
                "mgpu_merge4_partition",
                "mgpu_merge4_pass",
            ],
            Module::MergeSequences => &["mgpu_merge_partition", "mgpu_merge"],
            Module::Transform => &["mgpu_transform"],
            Module::Compact => &["mgpu_compact"],
            Module::ReduceByKey => &["mgpu_reduce_by_key"],
            Module::NonTrivialRuns => &["mgpu_non_trivial_runs"],
            Module::SegReduce => &[
                "mgpu_segreduce",
                "mgpu_segreduce_spine",
                "mgpu_segreduce_fixup",
                "mgpu_segreduce_partition",
                "mgpu_segreduce_validate",
                "mgpu_segreduce_codes",
                "mgpu_segreduce_headless",
            ],
            Module::SegReduceTiles => &[
                "mgpu_segreduce",
                "mgpu_segreduce_spine",
                "mgpu_segreduce_fixup",
            ],
            Module::SegReduceHelpers => &[
                "mgpu_segreduce_partition",
                "mgpu_segreduce_validate",
                "mgpu_segreduce_codes",
                "mgpu_segreduce_headless",
            ],
        }
    }
    /// The module's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Module::Reduce => "reduce",
            Module::Scan => "scan",
            Module::ScanTiles => "scan_tiles",
            Module::ScanLookback => "scan_lookback",
            Module::Merge => "merge",
            Module::Blocksort => "blocksort",
            Module::MergePasses => "merge_passes",
            Module::MergeSequences => "merge_sequences",
            Module::Transform => "transform",
            Module::Compact => "compact",
            Module::ReduceByKey => "reduce_by_key",
            Module::NonTrivialRuns => "non_trivial_runs",
            Module::SegReduce => "segreduce",
            Module::SegReduceTiles => "segreduce_tiles",
            Module::SegReduceHelpers => "segreduce_helpers",
        }
    }
}

/// The head of every module's source: its name, the kernels it compiles and the tuning.
fn tuning_defines(module: Module, tuning: &Tuning) -> String {
    let mut s = format!("// mgpu {} kernels, generated\n", module.name());
    for k in module.kernels() {
        s.push_str(&format!("#define MGPU_WANT_{k} 1\n"));
    }
    s.push_str(&format!(
        "#define MGPU_NT {}\n#define MGPU_VT {}\n#define MGPU_OCC {}\n#define MGPU_BACKOFF {}\n",
        tuning.nt, tuning.vt, tuning.occ, tuning.backoff_ns,
    ));
    s
}

/// `typedef` of an element type under `alias`, with a check that the CUDA declaration matches.
fn element_typedef<T: Element>(alias: &str) -> String {
    typedef(
        T::CUDA_TYPE,
        alias,
        std::mem::size_of::<T>(),
        std::mem::align_of::<T>(),
    )
}

fn typedef(ty: &str, alias: &str, size: usize, align: usize) -> String {
    format!(
        "typedef {ty} {alias};\nstatic_assert(sizeof({alias}) == {size} && alignof({alias}) == {align}, \
         \"the CUDA declaration of {ty} does not match the Rust type's size {size} / alignment {align}\");\n",
    )
}

/// How a reduce, scan or transform kernel reads its input and turns it into `T`s: `In`s in
/// memory, mapped as they are loaded (plain: `In` is `T`, unmapped), or a counting sequence
/// generated from its start value. Part of a module's cache key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Load {
    in_type: &'static str,
    in_declaration: &'static str,
    in_size: usize,
    in_align: usize,
    /// The map's CUDA expression over `x` and its helpers.
    map: Option<(String, String)>,
    /// The counting sequence's CUDA expression over `start` and `i`.
    counting: Option<String>,
}

impl Load {
    /// `T`s in memory, read as they are.
    pub fn plain<T: Element>() -> Load {
        Load {
            in_type: T::CUDA_TYPE,
            in_declaration: T::CUDA_DECLARATION,
            in_size: std::mem::size_of::<T>(),
            in_align: std::mem::align_of::<T>(),
            map: None,
            counting: None,
        }
    }

    /// `I`s in memory, each mapped by `map` as it is loaded.
    pub fn mapped<I: Element, O: Element>(map: &crate::Map<I, O>) -> Load {
        Load {
            map: Some((
                map.cuda_expression().to_string(),
                map.cuda_helpers().to_string(),
            )),
            ..Load::plain::<I>()
        }
    }

    /// `start + i`, as [`Arithmetic::count_from`](crate::Arithmetic) computes it.
    pub fn counting<T: crate::Arithmetic>() -> Load {
        let expr = match T::CUDA_WRAP_TYPE {
            "" => "start + (T)i".to_string(),
            w => format!("(T)(({w})start + ({w})i)"),
        };
        Load {
            counting: Some(expr),
            ..Load::plain::<T>()
        }
    }

    /// True for `T`s read as they are.
    pub fn is_plain(&self) -> bool {
        self.map.is_none() && self.counting.is_none()
    }

    /// The source that declares `In`, `MapIn` and (counting) `Count`, after `T`'s typedef.
    fn source<T: Element>(&self) -> String {
        let mut s = format!(
            "#define MGPU_LOAD_PLAIN {}\n#define MGPU_COUNTING {}\n",
            self.is_plain() as u32,
            self.counting.is_some() as u32
        );
        if self.in_type != T::CUDA_TYPE {
            s.push_str(self.in_declaration);
            s.push('\n');
        }
        s.push_str(&typedef(self.in_type, "In", self.in_size, self.in_align));
        let (expr, helpers) = match &self.map {
            Some((e, h)) => (e.as_str(), h.as_str()),
            None => ("x", ""),
        };
        s.push_str(helpers);
        s.push_str(&format!(
            "\nstruct MapIn {{\n  __device__ __forceinline__ T operator()(const In& x) const {{\n    \
             return ({expr});\n  }}\n}};\n"
        ));
        if let Some(e) = &self.counting {
            s.push_str(&format!(
                "struct Count {{\n  __device__ __forceinline__ T operator()(T start, unsigned long long i) const {{\n    \
                 return ({e});\n  }}\n}};\n"
            ));
        }
        s
    }
}

/// The full CUDA C++ source of a module, specialized for `T`, `op` (none for `Transform`), the
/// input's `load` and `tuning`.
pub fn source<T: Element>(
    module: Module,
    op: Option<&Op<T>>,
    load: &Load,
    tuning: &Tuning,
) -> String {
    let mut s = String::with_capacity(32 * 1024);
    s.push_str(&tuning_defines(module, tuning));
    if module.family() == Module::Scan {
        // The look-back status layout, which the host allocates (cuda/scan.rs).
        s.push_str(&format!(
            "#define MGPU_STATUS_SLOT {}\n#define MGPU_VALUE_RECORD {}\n",
            crate::cuda::scan::STATUS_SLOT,
            crate::cuda::scan::value_record(std::mem::size_of::<T>())
        ));
    }
    s.push_str(&format!(
        "#define MGPU_COMMUTATIVE {}\n",
        op.is_some_and(|o| o.is_commutative()) as u32
    ));
    s.push_str(T::CUDA_DECLARATION);
    s.push('\n');
    s.push_str(&element_typedef::<T>("T"));
    s.push_str(&load.source::<T>());
    if let Some(op) = op {
        s.push_str(op.cuda_helpers());
        s.push_str(&format!(
            "\nstruct Op {{\n  __device__ __forceinline__ T operator()(const T& a, const T& b) const {{\n    \
             return ({});\n  }}\n}};\n",
            op.cuda_expression()
        ));
    }
    for part in module.sources() {
        s.push_str(part);
        s.push('\n');
    }
    s
}

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

/// The whole merge / mergesort module's source (`Module::Merge`, every kernel of the family) for
/// keys `K`, values `V`, comparator and tuning.
pub fn sort_source<K: Element, V: Element>(
    comparator: &Comparator<K>,
    values: SortValues,
    tuning: &Tuning,
) -> String {
    sort_part_source::<K, V>(Module::Merge, comparator, values, tuning)
}

/// The source of `module`, the merge family or one of its parts (`Blocksort`, `MergePasses`,
/// `MergeSequences`), for keys `K`, values `V`, comparator and tuning.
pub fn sort_part_source<K: Element, V: Element>(
    module: Module,
    comparator: &Comparator<K>,
    values: SortValues,
    tuning: &Tuning,
) -> String {
    assert_eq!(
        module.family(),
        Module::Merge,
        "{module:?} is not a sort module"
    );
    let mut s = String::with_capacity(32 * 1024);
    s.push_str(&tuning_defines(module, tuning));
    s.push_str(&format!("#define MGPU_VALUES {}\n", values as u32));
    s.push_str(K::CUDA_DECLARATION);
    s.push('\n');
    if std::any::TypeId::of::<K>() != std::any::TypeId::of::<V>() {
        s.push_str(V::CUDA_DECLARATION);
        s.push('\n');
    }
    s.push_str(&element_typedef::<K>("K"));
    s.push_str(&element_typedef::<V>("V"));
    s.push_str(comparator.cuda_helpers());
    s.push_str(&format!(
        "\nstruct Comp {{\n  __device__ __forceinline__ bool operator()(const K& a, const K& b) const {{\n    \
         return ({});\n  }}\n}};\n",
        comparator.cuda_expression()
    ));
    for part in module.sources() {
        s.push_str(part);
        s.push('\n');
    }
    s
}

/// What a compaction kernel does with its keys (kernel_compact.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rejected {
    /// Dropped (select, unique).
    Dropped,
    /// Into the output's tail, last rejected first (partition_if).
    Reversed,
    /// In input order into their own output (partition_copy).
    Separate,
}

/// The configuration of a compaction module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompactSpec {
    /// Keep the first key of each run of equal keys (else: the keys the predicate accepts).
    pub unique: bool,
    /// Write the kept keys.
    pub keys_out: bool,
    /// A value array travels with the keys (or, for reduce-by-key, is reduced per run).
    pub values: bool,
    /// Where rejected items go.
    pub rejected: Rejected,
    /// Counts of 64 bits (inputs of 2^32 items or more); else 32 bits, which the look-back
    /// publishes packed with its status.
    pub wide_count: bool,
    /// The non-trivial runs kernel (values: the offsets' and lengths' type).
    pub non_trivial_runs: bool,
}

impl CompactSpec {
    /// The module that runs it (reduce-by-key when there is an operator).
    pub fn module(&self, reduce: bool) -> Module {
        match (reduce, self.non_trivial_runs) {
            (true, _) => Module::ReduceByKey,
            (false, true) => Module::NonTrivialRuns,
            (false, false) => Module::Compact,
        }
    }
}

/// How a compaction tells kept keys from the rest.
pub enum KeyTest<'a, K> {
    /// Keep the keys the predicate accepts.
    Predicate(&'a crate::Predicate<K>),
    /// Keep the first key of each run of keys equal under this relation.
    Runs(&'a crate::Equality<K>),
}

impl<K: Element> KeyTest<'_, K> {
    /// What the test contributes to a module's cache key.
    pub fn key(&self) -> String {
        match self {
            KeyTest::Predicate(p) => format!("pred|{}|{}", p.cuda_expression(), p.cuda_helpers()),
            KeyTest::Runs(e) => format!("eq|{}|{}", e.cuda_expression(), e.cuda_helpers()),
        }
    }
}

/// The compaction module's source (`Module::Compact`, or `Module::ReduceByKey` when `op` is given)
/// for keys `K`, values `V`, the key test and tuning.
pub fn compact_source<K: Element, V: Element>(
    spec: &CompactSpec,
    test: &KeyTest<'_, K>,
    op: Option<&Op<V>>,
    tuning: &Tuning,
) -> String {
    let module = spec.module(op.is_some());
    let count_size = if spec.wide_count { 8 } else { 4 };
    // What a tile publishes: its count, or a (count, value) pair (reduce-by-key) or a (count,
    // position) pair (non-trivial runs).
    let published = match op {
        None if spec.non_trivial_runs => 2 * count_size,
        None => count_size,
        Some(_) => crate::cuda::compact::pair_size(
            count_size,
            std::mem::size_of::<V>(),
            std::mem::align_of::<V>(),
        ),
    };
    let mut s = String::with_capacity(32 * 1024);
    s.push_str(&tuning_defines(module, tuning));
    s.push_str(&format!(
        "#define MGPU_STATUS_SLOT {}\n#define MGPU_VALUE_RECORD {}\n#define MGPU_UNIQUE {}\n\
         #define MGPU_KEYS_OUT {}\n#define MGPU_VALUES {}\n#define MGPU_REJECTED {}\n\
         #define MGPU_REDUCE_BY_KEY {}\n#define MGPU_NON_TRIVIAL_RUNS {}\n",
        crate::cuda::scan::STATUS_SLOT,
        crate::cuda::scan::value_record(published),
        spec.unique as u32,
        spec.keys_out as u32,
        spec.values as u32,
        spec.rejected as u32,
        op.is_some() as u32,
        spec.non_trivial_runs as u32,
    ));
    s.push_str(K::CUDA_DECLARATION);
    s.push('\n');
    s.push_str(&element_typedef::<K>("T"));
    s.push_str(&Load::plain::<K>().source::<K>());
    if spec.values {
        if std::any::TypeId::of::<K>() != std::any::TypeId::of::<V>() {
            s.push_str(V::CUDA_DECLARATION);
            s.push('\n');
        }
        s.push_str(&element_typedef::<V>("V"));
    }
    s.push_str(if spec.wide_count {
        "typedef unsigned long long C;\n"
    } else {
        "typedef unsigned C;\n"
    });
    match test {
        KeyTest::Predicate(p) => {
            s.push_str(p.cuda_helpers());
            s.push_str(&format!(
                "\nstruct Pred {{\n  __device__ __forceinline__ bool operator()(const T& x) const {{\n    \
                 return ({});\n  }}\n}};\n",
                p.cuda_expression()
            ));
        }
        KeyTest::Runs(e) => {
            s.push_str(e.cuda_helpers());
            s.push_str(&format!(
                "\nstruct Eq {{\n  __device__ __forceinline__ bool operator()(const T& a, const T& b) const {{\n    \
                 return ({});\n  }}\n}};\n",
                e.cuda_expression()
            ));
        }
    }
    if let Some(op) = op {
        // The reduction runs on values: its expression sees `T` as the value type.
        s.push_str(op.cuda_helpers());
        s.push_str(&format!(
            "\nstruct Op {{\n#define T V\n  __device__ __forceinline__ V operator()(const V& a, const V& b) const {{\n    \
             return ({});\n  }}\n#undef T\n}};\n",
            op.cuda_expression()
        ));
    }
    for part in module.sources() {
        s.push_str(part);
        s.push('\n');
    }
    s
}

/// Where a segmented reduction's items come from (kernel_segreduce.cu's `MGPU_SPMV`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegItems {
    /// The values themselves (plain, mapped or counting).
    Values = 0,
    /// `vec[cols[m]]`: unary SpMV.
    SpmvUnary = 1,
    /// `mul(matrix[m], vec[cols[m]])`: binary SpMV.
    SpmvBinary = 2,
}

/// The configuration of a segmented-reduction module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegReduceSpec {
    /// What is reduced.
    pub items: SegItems,
    /// Segment i's items start at `sources[i]` (indirect CSR).
    pub indirect: bool,
    /// 64-bit offsets (else 32-bit).
    pub wide_offsets: bool,
    /// 64-bit counts in the look-back pair (inputs of 2^32 items or more).
    pub wide_count: bool,
    /// Segments may be empty (else the offsets were checked to increase).
    pub empty: bool,
    /// The heads come packed from a plan (`mgpu_segreduce_codes`) instead of from the offsets:
    /// direct, non-empty segments only.
    pub codes: bool,
    /// Direct SpMV: a warp gathers lane-strided (each load instruction reads 32 consecutive
    /// nonzeros' columns) and puts the products back in thread order through shared memory; else
    /// each thread gathers its own consecutive items.
    pub strided: bool,
}

impl SegReduceSpec {
    /// Lane-strided SpMV of 4- or 8-byte values keeps the tile's column indices in the slots of
    /// its products (overwritten once the warp has read them), leaving shared memory to more
    /// CTAs and the L1 cache.
    pub fn cols_in_values(&self, value_size: usize) -> bool {
        self.items != SegItems::Values
            && self.strided
            && !self.indirect
            && (value_size == 4 || value_size == 8)
    }

    /// The tiles gather their items (SpMV's vector, indirect CSR's values) rather than stream
    /// them: the L1 cache serves them (`Gpu::keep_l1`).
    pub fn gathers(&self) -> bool {
        self.items != SegItems::Values || self.indirect
    }

    /// The tuning this variant runs with, given the table's: the table's OCC is measured with
    /// 32-bit offsets and counts, direct (the `segreduce` entry on values, the `spmv` entry on
    /// SpMV). The variants that keep more live state spill at the table's OCC: indirect CSR
    /// (sources) keeps OCC <= 5, 64-bit offsets or counts OCC <= 4 (kernels_compile checks every
    /// variant).
    pub fn tuning(&self, table: &Tuning) -> Tuning {
        let narrow = !self.wide_offsets && !self.wide_count;
        let mut t = *table;
        if !narrow {
            t.occ = t.occ.min(4);
        } else if self.indirect {
            t.occ = t.occ.min(5);
        }
        t
    }
}

/// The whole segmented-reduction module's source (`Module::SegReduce`, every kernel of the
/// family) for values `T` read as `load` says, reduced by `op` (SpMV binary: products by `mul`).
pub fn segreduce_source<T: Element>(
    spec: &SegReduceSpec,
    load: &Load,
    op: &Op<T>,
    mul: Option<&Op<T>>,
    tuning: &Tuning,
) -> String {
    segreduce_part_source(Module::SegReduce, spec, load, op, mul, tuning)
}

/// The source of `module`, the segmented-reduction family or one of its parts
/// (`SegReduceTiles`, `SegReduceHelpers`); the arguments as for `segreduce_source`.
pub fn segreduce_part_source<T: Element>(
    module: Module,
    spec: &SegReduceSpec,
    load: &Load,
    op: &Op<T>,
    mul: Option<&Op<T>>,
    tuning: &Tuning,
) -> String {
    assert_eq!(
        module.family(),
        Module::SegReduce,
        "{module:?} is not a segmented-reduction module"
    );
    let count_size = if spec.wide_count { 8 } else { 4 };
    let pair = crate::cuda::compact::pair_size(
        count_size,
        std::mem::size_of::<T>(),
        std::mem::align_of::<T>(),
    );
    let mut s = String::with_capacity(32 * 1024);
    s.push_str(&tuning_defines(module, tuning));
    s.push_str(&format!(
        "#define MGPU_STATUS_SLOT {}\n#define MGPU_VALUE_RECORD {}\n#define MGPU_SPMV {}\n\
         #define MGPU_INDIRECT {}\n#define MGPU_EMPTY {}\n#define MGPU_CODES {}\n\
         #define MGPU_SPINE_VT {}\n#define MGPU_STRIDED {}\n#define MGPU_COLS_IN_VALUES {}\n",
        crate::cuda::scan::STATUS_SLOT,
        crate::cuda::scan::value_record(pair),
        spec.items as u32,
        spec.indirect as u32,
        spec.empty as u32,
        spec.codes as u32,
        crate::cuda::segreduce::SPINE_VT,
        spec.strided as u32,
        spec.cols_in_values(std::mem::size_of::<T>()) as u32,
    ));
    s.push_str(T::CUDA_DECLARATION);
    s.push('\n');
    s.push_str(&element_typedef::<T>("T"));
    s.push_str(&load.source::<T>());
    s.push_str(if spec.wide_offsets {
        "typedef unsigned long long O;\n"
    } else {
        "typedef unsigned O;\n"
    });
    s.push_str(if spec.wide_count {
        "typedef unsigned long long C;\n"
    } else {
        "typedef unsigned C;\n"
    });
    for (name, f) in [("Op", Some(op)), ("Mul", mul)] {
        if let Some(f) = f {
            // Helpers shared by both operators are declared once.
            if name == "Op" || f.cuda_helpers() != op.cuda_helpers() {
                s.push_str(f.cuda_helpers());
            }
            s.push_str(&format!(
                "\nstruct {name} {{\n  __device__ __forceinline__ T operator()(const T& a, const T& b) const {{\n    \
                 return ({});\n  }}\n}};\n",
                f.cuda_expression()
            ));
        }
    }
    for part in Module::SegReduce.sources() {
        s.push_str(part);
        s.push('\n');
    }
    s
}

/// What ptxas reported for one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelReport {
    /// The kernel's name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory in bytes.
    pub shared_bytes: u32,
    /// Stack frame in bytes (non-zero: some array lives in local memory).
    pub stack_frame: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
}

impl KernelReport {
    /// True when nothing went to local memory.
    pub fn clean(&self) -> bool {
        self.stack_frame == 0 && self.spill_stores == 0 && self.spill_loads == 0
    }
}

/// A compiled module: the cubin and what ptxas said about each kernel.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The cubin for the exact architecture.
    pub cubin: Vec<u8>,
    /// ptxas's per-kernel report (empty when the cubin came from the disk cache).
    pub reports: Vec<KernelReport>,
    /// NVRTC's program log (empty when the cubin came from the disk cache).
    pub log: String,
}

static COMPILES: AtomicU64 = AtomicU64::new(0);
static COMPILE_NANOS: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);

/// Counters of the JIT in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    /// NVRTC compilations run.
    pub compiles: u64,
    /// Total time spent in them, in milliseconds.
    pub compile_ms: u64,
    /// Modules found in the on-disk cache instead.
    pub disk_hits: u64,
}

/// The JIT counters of this process.
pub fn stats() -> JitStats {
    JitStats {
        compiles: COMPILES.load(Ordering::Relaxed),
        compile_ms: COMPILE_NANOS.load(Ordering::Relaxed) / 1_000_000,
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
    }
}

/// Whether NVRTC can be loaded (without it nothing can be compiled). The first call searches the
/// usual places ([`discover::nvrtc`](super::discover::nvrtc)) and opens what it finds, so that
/// cudarc then uses it.
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes whether the shared library can be opened; cudarc panics on first use
    // otherwise, so this must come first.
    super::discover::nvrtc().found.is_some() && unsafe { nvrtc_sys::is_culib_present() }
}

/// NVRTC's version as (major, minor); [`Error::NoNvrtc`] when it cannot be loaded.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    static V: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    V.get_or_init(|| {
        if !nvrtc_available() {
            return Err(format!("libnvrtc {}", super::discover::nvrtc()));
        }
        let (mut major, mut minor) = (0, 0);
        // SAFETY: plain out-parameters; the library is present (checked above).
        let r = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
        if r != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(format!("nvrtcVersion failed: {r:?}"));
        }
        Ok((major, minor))
    })
    .clone()
    .map_err(Error::NoNvrtc)
}

fn options(arch: u32) -> Vec<String> {
    vec![
        format!("--gpu-architecture=sm_{arch}"),
        "-std=c++17".into(),
        "--ptxas-options=-v".into(),
    ]
}

/// 128-bit FNV-1a: a stable hash for cache keys (no dependency, stable across Rust versions).
pub(crate) fn stable_hash(parts: &[&[u8]]) -> u128 {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for p in parts {
        for &b in p.iter().chain(&[0xff]) {
            h ^= b as u128;
            h = h.wrapping_mul(0x0000000001000000000000000000013B);
        }
    }
    h
}

/// The cache key of a module: its full source, the options, the architecture and NVRTC's version.
pub fn cache_key(source: &str, arch: u32) -> Result<u128> {
    let (ma, mi) = nvrtc_version()?;
    let opts = options(arch).join(" ");
    Ok(stable_hash(&[
        source.as_bytes(),
        opts.as_bytes(),
        format!("{arch} {ma}.{mi}").as_bytes(),
    ]))
}

/// The on-disk cache folder: `MGPU_CACHE_DIR`, else `$XDG_CACHE_HOME/mgpu`, else `~/.cache/mgpu`.
pub fn cache_dir() -> Option<PathBuf> {
    // An empty variable counts as unset.
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("MGPU_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("mgpu"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache").join("mgpu"))
}

/// Compiles `source` for `sm_{arch}` (or takes the cubin from the disk cache).
/// `name` is used in error messages only.
pub fn compile(name: &str, source: &str, arch: u32) -> Result<Compiled> {
    let key = cache_key(source, arch)?;
    let path = cache_dir().map(|d| d.join(format!("{key:032x}.sm{arch}.cubin")));
    if let Some(p) = &path {
        if let Ok(cubin) = std::fs::read(p) {
            DISK_HITS.fetch_add(1, Ordering::Relaxed);
            return Ok(Compiled {
                cubin,
                reports: Vec::new(),
                log: String::new(),
            });
        }
    }
    let compiled = compile_program(name, source, arch)?;
    if let Some(p) = &path {
        // A cache that cannot be written is not an error: the next process compiles again.
        let _ = write_atomically(p, &compiled.cubin);
    }
    Ok(compiled)
}

fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("cache files live in a folder");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Compiles without looking at the disk cache, and returns ptxas's report.
pub fn compile_uncached(name: &str, source: &str, arch: u32) -> Result<Compiled> {
    // One report-wanting compile at a time: NVRTC 13.0 was once seen losing ptxas's report when
    // programs compiled concurrently (not reproduced since with NVRTC 13.0.88 or 13.5).
    static NVRTC_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = NVRTC_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    compile_program(name, source, arch)
}

/// Compiles with NVRTC. Separate programs compile concurrently: the library's own compiles
/// (`compile`) need no report, so threads that first use different modules do not wait for each
/// other (`mgpu demo` runs its demos so).
fn compile_program(name: &str, source: &str, arch: u32) -> Result<Compiled> {
    nvrtc_version()?;
    let start = Instant::now();
    let c_src = CString::new(source)
        .map_err(|_| Error::InvalidArgument("kernel source contains a NUL byte".into()))?;
    let c_name = CString::new(format!("{name}.cu")).unwrap();
    let prog = nvrtc::create_program(&c_src, Some(&c_name))
        .map_err(|e| Error::NoNvrtc(format!("nvrtcCreateProgram: {e:?}")))?;
    let opts = options(arch);
    // SAFETY: `prog` is a live program created above and destroyed exactly once below; the
    // buffers passed to NVRTC are sized by the matching size queries.
    let result = unsafe {
        let compiled = nvrtc::compile_program(prog, &opts);
        let log = nvrtc::get_program_log(prog)
            .map(|l| {
                let bytes: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .unwrap_or_default();
        let out = match compiled {
            Err(_) => Err(Error::Compile {
                kernel: name.to_string(),
                arch: format!("sm_{arch}"),
                log,
            }),
            Ok(()) => {
                let mut size = 0usize;
                let r = nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size);
                let mut cubin = vec![0u8; size];
                let r2 = if r == nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
                    nvrtc_sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut _)
                } else {
                    r
                };
                if r2 != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
                    Err(Error::NoNvrtc(format!("nvrtcGetCUBIN: {r2:?}")))
                } else {
                    Ok(Compiled {
                        cubin,
                        reports: parse_ptxas_log(&log),
                        log,
                    })
                }
            }
        };
        let _ = nvrtc::destroy_program(prog);
        out
    };
    COMPILES.fetch_add(1, Ordering::Relaxed);
    COMPILE_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    result
}

/// Parses ptxas's `-v` output: per function, registers, shared memory, stack and spills.
pub fn parse_ptxas_log(log: &str) -> Vec<KernelReport> {
    let mut out: Vec<KernelReport> = Vec::new();
    let number_before = |line: &str, what: &str| -> Option<u32> {
        let i = line.find(what)?;
        line[..i].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(i) = line.find("Function properties for ") {
            out.push(KernelReport {
                name: line[i + 24..].trim().to_string(),
                ..Default::default()
            });
        } else if let Some(i) = line.find("Compiling entry function '") {
            let rest = &line[i + 26..];
            let name = rest.split('\'').next().unwrap_or("").to_string();
            if out.last().map(|r| r.name != name).unwrap_or(true) {
                out.push(KernelReport {
                    name,
                    ..Default::default()
                });
            }
        } else if let Some(r) = out.last_mut() {
            if line.contains("stack frame") {
                r.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
                r.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                r.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used ") && line.contains("registers") {
                r.registers = number_before(line, "registers").unwrap_or(0);
                r.shared_bytes = number_before(line, "bytes smem").unwrap_or(0);
            }
        }
    }
    // ptxas may print both headers for one kernel; keep one report per name.
    out.dedup_by(|b, a| {
        if a.name == b.name {
            a.registers = a.registers.max(b.registers);
            a.shared_bytes = a.shared_bytes.max(b.shared_bytes);
            a.stack_frame = a.stack_frame.max(b.stack_frame);
            a.spill_stores = a.spill_stores.max(b.spill_stores);
            a.spill_loads = a.spill_loads.max(b.spill_loads);
            true
        } else {
            false
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family's parts together export exactly its kernels, each part a subset, and a part's
    /// source asks for its own kernels only.
    #[test]
    fn parts_cover_their_family() {
        for family in [Module::Scan, Module::Merge] {
            let mut names: Vec<&str> = Vec::new();
            for &part in family.parts() {
                assert_eq!(part.family(), family);
                assert_ne!(part.name(), family.name());
                for k in part.kernels() {
                    assert!(family.kernels().contains(k), "{part:?} {k}");
                    if !names.contains(k) {
                        names.push(k);
                    }
                }
            }
            assert_eq!(names.len(), family.kernels().len(), "{family:?}");
        }
        let t = Tuning::new(128, 7, 4);
        let less = Comparator::<i32>::less();
        let src = sort_part_source::<i32, i32>(Module::Blocksort, &less, SortValues::None, &t);
        assert!(src.contains("#define MGPU_WANT_mgpu_blocksort 1"));
        assert!(!src.contains("#define MGPU_WANT_mgpu_merge"));
        let src = source(
            Module::ScanTiles,
            Some(&Op::<i32>::plus()),
            &Load::plain::<i32>(),
            &t,
        );
        assert!(src.contains("#define MGPU_WANT_mgpu_scan_tiles 1"));
        assert!(!src.contains("#define MGPU_WANT_mgpu_scan_lookback"));
        assert!(src.contains("#define MGPU_STATUS_SLOT"));
    }
}
