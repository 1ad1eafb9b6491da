//! The segmented-reduction family (kernel_segreduce.cu; SpMV is a segmented reduction of
//! products): validation of the segment descriptors (one small read-back), the tile partition,
//! the tiles, and the spine that carries partial reductions across tiles on the look-back.

use super::family::{part, Instance, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Expr, Load, Prelude};
use super::lookback::{self, TileStatusArgs};
use super::memory::{DeviceMem, FindingsRecord, MappedReport, QueuedDownload, StreamScratch};
use super::{ByValue, Gpu, LoadedModule};
use crate::error::Result;
use crate::tuning::{Family, Tuning, MAX_TILE_BYTES};
use crate::{Arithmetic, Element, Op};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::{Arc, MutexGuard};

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

/// The variant of a segmented-reduction module.
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
    /// SpMV one-shot: the tiles check the columns as they gather (into the validation's
    /// findings), to a temporary that is copied out once every check passed.
    pub check_cols: bool,
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
    /// (sources) keeps OCC <= 5, 64-bit offsets or counts OCC <= 4, the one-shot's column checks
    /// OCC <= 8, and <= 7 for a binary SpMV that gathers per thread over empty rows (64
    /// registers and a 4-byte spill at 8 in f32's 128x13 tiles; kernels_compile checks every
    /// variant).
    pub fn tuning(&self, table: &Tuning) -> Tuning {
        let narrow = !self.wide_offsets && !self.wide_count;
        let mut t = *table;
        if !narrow {
            t.occ = t.occ.min(4);
        } else if self.indirect {
            t.occ = t.occ.min(5);
        }
        if self.check_cols {
            let per_thread_empty =
                self.items == SegItems::SpmvBinary && self.empty && !self.strided;
            t.occ = t.occ.min(if per_thread_empty { 7 } else { 8 });
        }
        t
    }

    /// The variant of the helper kernels for offsets of this width: they read no value.
    pub fn helpers(wide_offsets: bool) -> SegReduceSpec {
        SegReduceSpec {
            items: SegItems::Values,
            indirect: false,
            wide_offsets,
            wide_count: false,
            empty: false,
            codes: false,
            strided: false,
            check_cols: false,
        }
    }
}

/// A segmented-reduction module: the variant, the values (read as `load` says), the operator
/// (SpMV binary: and the products' `mul`) and the tuning, which the variant has adjusted.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SegModule {
    /// The variant.
    pub variant: SegReduceSpec,
    /// The value type.
    pub element: ElementDesc,
    /// How the values are read.
    pub load: Load,
    /// The reduction.
    pub op: Expr,
    /// SpMV binary's products.
    pub mul: Option<Expr>,
    /// The tuning.
    pub tuning: Tuning,
}

impl SegModule {
    /// The module of `variant` for values `T` reduced by `op` (products by `mul`), with the
    /// variant's tuning for the table's `tuning`.
    pub fn new<T: Element>(
        variant: SegReduceSpec,
        load: &Load,
        op: &Op<T>,
        mul: Option<&Op<T>>,
        tuning: &Tuning,
    ) -> SegModule {
        SegModule {
            variant,
            element: ElementDesc::of::<T>(),
            load: load.clone(),
            op: Expr::of_op(op),
            mul: mul.map(Expr::of_op),
            tuning: variant.tuning(tuning),
        }
    }

    /// The helper kernels' module (partition, validation, codes): they do not depend on the
    /// value type or operator, and are compiled with `T = unsigned` and `plus`, once per offset
    /// width and tuning.
    pub fn helpers(wide_offsets: bool, tuning: &Tuning) -> SegModule {
        SegModule {
            tuning: *tuning,
            ..SegModule::new::<u32>(
                SegReduceSpec::helpers(wide_offsets),
                &Load::plain::<u32>(),
                &Op::plus(),
                None,
                tuning,
            )
        }
    }
}

/// Tiles per thread of the spine (kernel_segreduce.cu's MGPU_SPINE_VT): a spine tile takes the
/// totals of `nt * SPINE_VT` reduction tiles.
pub const SPINE_VT: u32 = 8;

/// The segmented-reduction family, loaded in two parts: the tiles and the carry across them, and
/// the helpers that depend on the offsets' width and the tile size only.
pub struct SegReduce;

impl KernelFamily for SegReduce {
    type Spec = SegModule;
    const NAME: &'static str = "segreduce";
    const FILES: &'static [&'static str] = &[
        headers::RUNS_TILES,
        include_str!("kernels/kernel_segreduce.cu"),
    ];
    const PARTS: &'static [Part] = &[
        Part {
            name: "segreduce_tiles",
            kernels: &[
                "mgpu_segreduce",
                "mgpu_segreduce_spine",
                "mgpu_segreduce_fixup",
            ],
        },
        Part {
            name: "segreduce_helpers",
            kernels: &[
                "mgpu_segreduce_partition",
                "mgpu_segreduce_validate",
                "mgpu_segreduce_validate_offsets",
                "mgpu_segreduce_codes",
                "mgpu_segreduce_headless",
                "mgpu_segreduce_copy_checked",
            ],
        },
    ];
    fn prelude(spec: &SegModule, p: &mut Prelude) {
        let v = &spec.variant;
        let count_size = if v.wide_count { 8 } else { 4 };
        lookback::prelude(
            p,
            lookback::pair_size(count_size, spec.element.size, spec.element.align),
        );
        p.define("MGPU_SPMV", v.items as u32)
            .define("MGPU_INDIRECT", v.indirect as u32)
            .define("MGPU_EMPTY", v.empty as u32)
            .define("MGPU_CODES", v.codes as u32)
            .define("MGPU_SPINE_VT", SPINE_VT)
            .define("MGPU_STRIDED", v.strided as u32)
            .define("MGPU_CHECK_COLS", v.check_cols as u32)
            .define(
                "MGPU_COLS_IN_VALUES",
                v.cols_in_values(spec.element.size) as u32,
            )
            .element("T", &spec.element)
            .load(&spec.load)
            .raw(if v.wide_offsets {
                "typedef unsigned long long O;"
            } else {
                "typedef unsigned O;"
            })
            .raw(if v.wide_count {
                "typedef unsigned long long C;"
            } else {
                "typedef unsigned C;"
            })
            .op("Op", "T", &spec.op);
        if let Some(mul) = &spec.mul {
            p.op("Mul", "T", mul);
        }
    }
    fn tuning(spec: &SegModule) -> Tuning {
        spec.tuning
    }
    fn gathers(spec: &SegModule, part: &Part) -> bool {
        part.name == "segreduce_tiles" && spec.variant.gathers()
    }
    fn compiles(spec: &SegModule, kernel: &str) -> bool {
        // A plan's codes are for direct geometries without empty segments.
        kernel != "mgpu_segreduce_codes" || !(spec.variant.indirect || spec.variant.empty)
    }
    const TUNING: &'static [Family] = &[Family::SegReduce, Family::SegReduceLong, Family::Spmv];
    fn instances(_arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        instances_of::<i32, u32>(table, &Op::plus(), true, &mut out)?;
        instances_of::<f32, u32>(table, &Op::plus(), true, &mut out)?;
        instances_of::<f64, u32>(table, &Op::plus(), true, &mut out)?;
        instances_of::<f32, u64>(table, &Op::plus(), true, &mut out)?;
        instances_of::<i64, u64>(table, &Op::maximum(), false, &mut out)?;
        instances_of::<u8, u32>(table, &Op::plus(), false, &mut out)?;
        Ok(out)
    }
}

/// Segments of at least this many positions on average take the `SegReduceLong` family's tiles
/// (direct values only).
pub const LONG_SEGMENTS: u64 = 4;

/// Whether `num_segments` segments over `count` positions average [`LONG_SEGMENTS`] or more.
pub fn long_segments(count: u64, num_segments: u64) -> bool {
    count >= num_segments.saturating_mul(LONG_SEGMENTS)
}

/// The tuning family of a segmented reduction's tiles ([`table_tuning`]'s rule).
fn tuning_family(items: SegItems, indirect: bool, long: bool) -> Family {
    match items {
        SegItems::Values if long && !indirect => Family::SegReduceLong,
        SegItems::Values => Family::SegReduce,
        _ => Family::Spmv,
    }
}

/// The table's tuning of a segmented reduction of `T`s with offsets `O`: SpMV has a family of
/// its own (its items are gathers, which want other tiles), and so have direct values in `long`
/// segments ([`long_segments`]); VT at most 31 (a thread's heads are one 32-bit mask); the
/// tile's shared memory (values and a segment index per position, plus columns for SpMV and
/// sources for indirect CSR) within the static limit. The variant then adjusts it
/// ([`SegReduceSpec::tuning`]).
pub fn table_tuning<T: Element, O: Element>(
    table: TableTuning<'_>,
    items: SegItems,
    indirect: bool,
    long: bool,
) -> Result<Tuning> {
    let mut t = table(
        tuning_family(items, indirect, long),
        std::mem::size_of::<T>(),
    )?;
    let o = std::mem::size_of::<O>();
    let per_item = std::mem::size_of::<T>()
        + o
        + if items != SegItems::Values && !indirect {
            4
        } else {
            0
        }
        + if indirect { o } else { 0 };
    t.vt = t.vt.min(31);
    while t.vt > 1 && t.nv() * per_item > MAX_TILE_BYTES {
        t.vt -= if t.vt > 2 { 2 } else { 1 };
    }
    Ok(t)
}

/// Every variant the entry points launch for values `T` and offsets `O`: values, and with `mul`
/// SpMV unary and binary (lane-strided or not; products by `multiplies`); direct and indirect; 32- and 64-bit counts;
/// marks and a plan's codes.
fn instances_of<T: Arithmetic, O: Element>(
    table: TableTuning<'_>,
    op: &Op<T>,
    spmv: bool,
    out: &mut Vec<Instance>,
) -> Result<()> {
    let times = Op::<T>::multiplies();
    let mut kinds = vec![SegItems::Values];
    if spmv {
        kinds.extend([SegItems::SpmvUnary, SegItems::SpmvBinary]);
    }
    for items in kinds {
        for indirect in [false, true] {
            // (wide_count, empty, codes): codes are for direct, non-empty segments.
            let mut variants = vec![
                (false, false, false),
                (false, true, false),
                (true, true, false),
            ];
            if !indirect {
                variants.extend([(false, false, true), (true, false, true)]);
            }
            let strides: &[bool] = if items != SegItems::Values && !indirect {
                &[false, true]
            } else {
                &[false]
            };
            // The one-shot's column checks: direct SpMV, without a plan's codes.
            let checks: &[bool] = if items != SegItems::Values && !indirect {
                &[false, true]
            } else {
                &[false]
            };
            let variants = variants.into_iter().flat_map(|(w, e, c)| {
                checks
                    .iter()
                    .filter(move |&&check| !(check && c))
                    .map(move |&check| (w, e, c, check))
            });
            // Direct values also run the long segments' tiles, where those differ.
            let short = table_tuning::<T, O>(table, items, indirect, false)?;
            let long = table_tuning::<T, O>(table, items, indirect, true)?;
            let lengths: &[bool] = if long != short {
                &[false, true]
            } else {
                &[false]
            };
            let variants = variants.flat_map(|v| lengths.iter().map(move |&l| (v, l)));
            for ((wide_count, empty, codes, check_cols), long) in variants {
                for &strided in strides {
                    let variant = SegReduceSpec {
                        items,
                        indirect,
                        wide_offsets: std::mem::size_of::<O>() == 8,
                        wide_count,
                        empty,
                        codes,
                        strided,
                        check_cols,
                    };
                    let t = table_tuning::<T, O>(table, items, indirect, long)?;
                    let mul = (items == SegItems::SpmvBinary).then_some(&times);
                    let spec = SegModule::new(variant, &Load::plain::<T>(), op, mul, &t);
                    let family = tuning_family(items, indirect, long);
                    let primary = !long
                        && !indirect
                        && !wide_count
                        && !empty
                        && !codes
                        && !check_cols
                        && (items == SegItems::Values
                            || (items == SegItems::SpmvBinary && strided));
                    let label = format!("{} {} {variant:?}", op.name(), O::CUDA_TYPE);
                    out.push(
                        Instance::of::<SegReduce>(&spec, family, ElementDesc::of::<T>(), label)
                            .primary(primary),
                    );
                }
            }
        }
    }
    Ok(())
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce(Input values, const T* matrix, const unsigned* cols, const T* vec,
    // u64 vec_len, const O* offsets, const O* sources, const O* limits, u64 num_segments,
    // u64 count, const unsigned* codes, u64* bad, T* dest, T identity, SegPair* totals,
    // T* leads, unsigned char* continued, u64* report, unsigned stride, unsigned ahead).
    TilesArgs<T> = "mgpu_segreduce" {
        input: u64, matrix: CUdeviceptr, cols: CUdeviceptr, vec: CUdeviceptr, vec_len: u64,
        offsets: CUdeviceptr, sources: CUdeviceptr, limits: CUdeviceptr, num_segments: u64,
        count: u64, codes: CUdeviceptr, bad: CUdeviceptr, dest: CUdeviceptr,
        identity: ByValue<T>, totals: CUdeviceptr, leads: CUdeviceptr, continued: CUdeviceptr,
        report: CUdeviceptr, stride: u32, ahead: u32,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_spine(const SegPair* totals, const T* leads,
    // const unsigned char* continued, const O* limits, u64 num_tiles, const u64* bad, T* dest,
    // T identity, u64* tickets, u64 first_ticket, TileStatusOf<SegPair> status).
    SpineArgs<T> = "mgpu_segreduce_spine" {
        totals: CUdeviceptr, leads: CUdeviceptr, continued: CUdeviceptr, limits: CUdeviceptr,
        num_tiles: u64, bad: CUdeviceptr, dest: CUdeviceptr, identity: ByValue<T>,
        tickets: CUdeviceptr, first_ticket: u64, status: TileStatusArgs,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_fixup(const SegPair* totals, const T* leads,
    // const unsigned char* continued, const O* limits, u64 num_tiles, T* dest).
    FixupArgs = "mgpu_segreduce_fixup" {
        totals: CUdeviceptr, leads: CUdeviceptr, continued: CUdeviceptr, limits: CUdeviceptr,
        num_tiles: u64, dest: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_validate_offsets(const O* offsets, u64 num_segments, u64 count,
    // int strict, u64* bad, unsigned partition_ctas, u64 num_tiles, O* limits,
    // unsigned team_log).
    ValidateOffsetsArgs = "mgpu_segreduce_validate_offsets" {
        offsets: CUdeviceptr, num_segments: u64, count: u64, strict: i32, bad: CUdeviceptr,
        partition_ctas: u32, num_tiles: u64, limits: CUdeviceptr, team_log: u32,
    }
}

/// Segments per tile of `mgpu_segreduce_validate_offsets` (its VALIDATE_TILE): two rounds of four
/// 16-byte loads per thread.
fn validate_tile(wide_offsets: bool) -> u64 {
    8 * 256 * if wide_offsets { 2 } else { 4 }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_validate(const O* offsets, u64 num_segments, u64 count, int strict,
    // const O* sources, u64 data_len, const unsigned* cols, u64 num_cols, u64 vec_len, u64* bad).
    ValidateArgs = "mgpu_segreduce_validate" {
        offsets: CUdeviceptr, num_segments: u64, count: u64, strict: i32, sources: CUdeviceptr,
        data_len: u64, cols: CUdeviceptr, num_cols: u64, vec_len: u64, bad: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_partition(const O* offsets, u64 num_segments, u64 count,
    // u64 num_tiles, O* limits, unsigned team_log).
    PartitionArgs = "mgpu_segreduce_partition" {
        offsets: CUdeviceptr, num_segments: u64, count: u64, num_tiles: u64, limits: CUdeviceptr,
        team_log: u32,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_codes(const O* offsets, const O* limits, u64 num_segments,
    // u64 count, unsigned* codes).
    CodesArgs = "mgpu_segreduce_codes" {
        offsets: CUdeviceptr, limits: CUdeviceptr, num_segments: u64, count: u64,
        codes: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_copy_checked(const unsigned char* from, unsigned char* to,
    // u64 bytes, const u64* bad, u64* report).
    CopyCheckedArgs = "mgpu_segreduce_copy_checked" {
        from: CUdeviceptr, to: CUdeviceptr, bytes: u64, bad: CUdeviceptr, report: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_segreduce_headless(const O* limits, u64 num_tiles, unsigned* headless).
    HeadlessArgs = "mgpu_segreduce_headless" {
        limits: CUdeviceptr, num_tiles: u64, headless: CUdeviceptr,
    }
}

/// A CSR geometry on the device: segment start offsets (of 4 or 8 bytes) over `count` positions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub offsets: CUdeviceptr,
    pub num_segments: u64,
    pub count: u64,
    pub wide_offsets: bool,
    /// Indirect CSR: where each segment's items start (same type as the offsets); 0 if direct.
    pub sources: CUdeviceptr,
    /// Segments may be empty (else validation found the offsets increasing).
    pub empty: bool,
}

impl Geometry {
    /// The tiles of `tuning.nv()` positions that cover the items.
    fn num_tiles(&self, tuning: &Tuning) -> u64 {
        self.count.div_ceil(tuning.nv() as u64)
    }
}

/// What a reduction reads besides the geometry: the values (`input`, loaded as `load` says), or
/// for SpMV the matrix values, the column indices and the vector.
#[derive(Clone, Copy)]
pub(crate) struct Items<'a> {
    pub kind: SegItems,
    pub input: u64,
    pub load: &'a Load,
    pub matrix: CUdeviceptr,
    pub cols: CUdeviceptr,
    pub vec: CUdeviceptr,
    /// The length of `vec`, for the tiles' own column checks (`check_cols`).
    pub vec_len: u64,
    /// The tiles check the columns as they gather (a one-shot SpMV).
    pub check_cols: bool,
}

/// What validation checks besides the offsets (0 / none where absent).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Checks {
    /// Segments must be non-empty (offsets increasing, the last one below `count`).
    pub strict: bool,
    /// The length of the data `sources` index into.
    pub data_len: u64,
    pub cols: CUdeviceptr,
    pub num_cols: u64,
    pub vec_len: u64,
}

/// The first bad index found by each check (`None`: the check passed): offsets, sources,
/// columns; then the first empty segment (`None`: every segment has a position).
pub(crate) type Bad = [Option<u64>; 4];

/// What validation found: the first bad index of each check, and the longest segment's length
/// (meaningful when no offset is bad).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Findings {
    pub bad: Bad,
    pub longest: u64,
}

/// The tiles' variant. Direct SpMV gathers lane-strided where rows are longer on average than a
/// thread's VT items: a warp's load instruction then reads consecutive nonzeros of one row, whose
/// sorted columns share cache lines where the row is locally dense (power-law rows). With 4-byte
/// values, shorter rows (stencils) keep each thread on its own items: there an instruction's
/// lanes already read neighbouring rows' columns within a few lines, and the products skip the
/// round trip through shared memory. With 8-byte values (twice the bytes, VT 15 against 11) those
/// lanes spread over more lines, and lane-strided gathers measured within 1% or faster on every
/// matrix (BENCHMARKS.md: 3-D stencil 0.434 -> 0.363 ms).
fn spec(
    geometry: &Geometry,
    items: &Items<'_>,
    codes: bool,
    value_size: usize,
    tuning: &Tuning,
) -> SegReduceSpec {
    let kind = items.kind;
    let indirect = geometry.sources != 0;
    let long_rows = geometry.count >= geometry.num_segments.saturating_mul(tuning.vt as u64);
    let strided = kind != SegItems::Values && !indirect && (long_rows || value_size >= 8);
    SegReduceSpec {
        items: kind,
        indirect,
        wide_offsets: geometry.wide_offsets,
        wide_count: geometry.count > u32::MAX as u64,
        empty: geometry.empty,
        codes,
        strided,
        check_cols: items.check_cols,
    }
}

/// The tiles' module spec of a reduction (see [`reduce`]).
fn tiles_spec<T: Element>(
    geometry: &Geometry,
    items: &Items<'_>,
    codes: bool,
    op: &Op<T>,
    mul: Option<&Op<T>>,
    tuning: &Tuning,
) -> SegModule {
    let spec = spec(geometry, items, codes, std::mem::size_of::<T>(), tuning);
    SegModule::new(spec, items.load, op, mul, tuning)
}

/// A one-shot's two modules, the helpers (validation, partition) and the tiles, compiled at once
/// on a cold cache: each is hundreds of milliseconds of NVRTC, and the call needs both. Returns
/// the helpers.
pub(crate) fn load_one_shot_modules<T: Element>(
    gpu: &Gpu,
    geometry: &Geometry,
    items: &Items<'_>,
    op: &Op<T>,
    mul: Option<&Op<T>>,
    tuning: &Tuning,
) -> Result<Arc<LoadedModule>> {
    let helpers = SegModule::helpers(geometry.wide_offsets, tuning);
    let (helpers_part, tiles_part) = (
        part::<SegReduce>("segreduce_helpers"),
        part::<SegReduce>("segreduce_tiles"),
    );
    if let Some(loaded) = gpu.loaded_module::<SegReduce>(&helpers, helpers_part) {
        return Ok(loaded);
    }
    let tiles = tiles_spec(geometry, items, false, op, mul, tuning);
    let mut loaded =
        gpu.modules_of::<SegReduce>(&[(&helpers, helpers_part), (&tiles, tiles_part)])?;
    Ok(loaded.swap_remove(0))
}

/// The helper kernels' module for the geometry's offsets.
fn helper_module(gpu: &Gpu, geometry: &Geometry, tuning: &Tuning) -> Result<Arc<LoadedModule>> {
    let spec = SegModule::helpers(geometry.wide_offsets, tuning);
    gpu.module::<SegReduce>(&spec, part::<SegReduce>("segreduce_helpers"))
}

/// A cleared record of validation's findings: no bad index yet, no segment longer than 0.
pub(crate) fn findings(gpu: &Arc<Gpu>) -> Result<FindingsRecord> {
    FindingsRecord::take(gpu)
}

/// Queues the checks of the geometry (and sources, columns) on the GPU; their findings stay on
/// the device (`None`: nothing to check) for [`reduce`] to honour and [`read_validation`] to
/// return, so that a one-shot call waits for the GPU once, after its last launch.
pub(crate) fn launch_validation(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    checks: &Checks,
    tuning: &Tuning,
) -> Result<Option<FindingsRecord>> {
    let module = helper_module(gpu, geometry, tuning)?;
    Ok(validate_and_partition(gpu, &module, geometry, checks, tuning, false)?.0)
}

/// [`launch_validation`], and with `partition` the tile limits for `tuning` ([`partition`]'s)
/// too: where the offsets are checked without sources, in the same launch, whose first CTAs
/// search the limits while the others check the offsets (a one-shot call's limits then cost no
/// launch of their own). `module`: the helpers' ([`load_one_shot_modules`]).
pub(crate) fn validate_and_partition<'g>(
    gpu: &'g Arc<Gpu>,
    module: &LoadedModule,
    geometry: &Geometry,
    checks: &Checks,
    tuning: &Tuning,
    partition: bool,
) -> Result<(Option<FindingsRecord>, Option<OneShotLimits<'g>>)> {
    let work = geometry.num_segments.max(checks.num_cols);
    let partition_alone = |gpu| match partition {
        true => one_shot_partition(gpu, geometry, tuning),
        false => Ok(None),
    };
    if work == 0 {
        return Ok((None, partition_alone(gpu)?));
    }
    let mut bad = findings(gpu)?;
    let block = 256u32;
    // The offsets-only kernel works in the offsets' width: 32-bit offsets over at most 2^32 - 1
    // items.
    let in_width = geometry.wide_offsets || geometry.count <= u32::MAX as u64;
    // Offsets without sources: the offsets-only kernel, then the columns (if any) alone.
    let offsets_alone = geometry.sources == 0 && in_width;
    let mut limits = None;
    if offsets_alone && geometry.num_segments > 0 {
        let (mut partition_ctas, mut num_tiles, mut team_log) = (0, 0, 0);
        if partition && geometry.count > 0 {
            let held = OneShotLimits::take(gpu, geometry, tuning)?;
            num_tiles = held.num_tiles;
            team_log = search_team_log(gpu, num_tiles);
            let threads = (num_tiles + 1) << team_log;
            partition_ctas =
                u32::try_from(threads.div_ceil(block as u64)).expect("fewer than 2^40 tiles");
            limits = Some(held);
        }
        let args = ValidateOffsetsArgs {
            offsets: geometry.offsets,
            num_segments: geometry.num_segments,
            count: geometry.count,
            strict: checks.strict as i32,
            bad: bad.ptr,
            partition_ctas,
            num_tiles,
            limits: limits.as_ref().map_or(0, |l| l.ptr),
            team_log,
        };
        // At most a wave of checking CTAs, which loop over the tiles: where the searches take
        // part of that wave, the rest of the checks start on the SMs they leave.
        let tiles = geometry
            .num_segments
            .div_ceil(validate_tile(geometry.wide_offsets));
        let per_sm = (module.resident::<ValidateOffsetsArgs>() * tuning.nt / block).max(1);
        let grid = tiles.min(gpu.sm_count as u64 * per_sm as u64) as u32;
        gpu.launch(module, grid + partition_ctas, block, &args)?;
        bad.strict_checks = checks.strict;
    }
    if limits.is_none() {
        limits = partition_alone(gpu)?;
    }
    if offsets_alone && checks.num_cols == 0 {
        return Ok((Some(bad), limits));
    }
    let segments = if offsets_alone {
        0
    } else {
        geometry.num_segments
    };
    let work = segments.max(checks.num_cols);
    // One wave of grid-stride loops, so no second wave's tail (the module's occupancy is for CTAs
    // of its tuning's threads).
    let per_sm = (module.resident::<ValidateArgs>() * tuning.nt / block).max(1);
    let wave = gpu.sm_count as u64 * per_sm as u64;
    let grid = work.div_ceil(block as u64).min(wave) as u32;
    let args = ValidateArgs {
        offsets: geometry.offsets,
        num_segments: segments,
        count: geometry.count,
        strict: checks.strict as i32,
        sources: geometry.sources,
        data_len: checks.data_len,
        cols: checks.cols,
        num_cols: checks.num_cols,
        vec_len: checks.vec_len,
        bad: bad.ptr,
    };
    gpu.launch(module, grid, block, &args)?;
    Ok((Some(bad), limits))
}

/// The findings of [`launch_validation`]: the one small read-back (it waits for the stream).
pub(crate) fn read_validation(gpu: &Gpu, bad: Option<&FindingsRecord>) -> Result<Findings> {
    let Some(bad) = bad else {
        return Ok(Findings {
            bad: [None; 4],
            longest: 0,
        });
    };
    let mut out = [0u64; 5];
    gpu.download(bad.ptr, &mut out)?;
    Ok(Findings::from_record(out))
}

/// The five words of a one-shot's findings, reported to the host by the first CTA of the kernel
/// after those that make them ([`reduce`], [`copy_checked`], [`Gpu::mapped_report`]).
pub(crate) type Report<'g> = MappedReport<'g, 5>;

/// A one-shot's findings on their way to the host, which waits for them ([`Findings::wait`]),
/// not for the work queued after them.
pub(crate) enum PendingFindings<'g> {
    /// Reported by a kernel; the record itself (kept until then) is read where the report did
    /// not come.
    Reported(Report<'g>, CUdeviceptr),
    /// A copy queued after the kernels that fill them.
    Copied(QueuedDownload<'g>),
}

/// A report for a one-shot's findings, where the stream's read-back buffer is free and
/// mapped.
pub(crate) fn findings_report(gpu: &Gpu) -> Result<Option<Report<'_>>> {
    gpu.mapped_report()
}

/// Queues the read-back of the findings `bad` (from [`launch_validation`], or [`findings`]
/// filled by the tiles) after the work queued so far. `None` where no buffer is free (then
/// [`read_validation`]).
pub(crate) fn queue_findings<'g>(
    gpu: &'g Gpu,
    bad: &FindingsRecord,
) -> Result<Option<PendingFindings<'g>>> {
    Ok(gpu
        .queue_download(bad.ptr, 40)?
        .map(PendingFindings::Copied))
}

impl Findings {
    /// The record `launch_validation` fills: four first bad indices (u64::MAX: none), then the
    /// longest segment's length, complemented (the kernels take the atomicMin of it).
    fn from_record(out: [u64; 5]) -> Findings {
        let [b0, b1, b2, b3, longest] = out;
        Findings {
            bad: [b0, b1, b2, b3].map(|i| (i != u64::MAX).then_some(i)),
            longest: !longest,
        }
    }

    /// The findings on their way ([`queue_findings`], or a report) once they arrive. `gpu`: the
    /// stream they come from.
    pub(crate) fn wait(gpu: &Gpu, pending: PendingFindings<'_>) -> Result<Findings> {
        let mut out = [0u64; 5];
        match pending {
            PendingFindings::Copied(queued) => queued.wait(&mut out)?,
            PendingFindings::Reported(report, record) => match report.wait()? {
                Some(words) => out = words,
                None => gpu.download(record, &mut out)?,
            },
        }
        Ok(Findings::from_record(out))
    }
}

/// Copies `bytes` from `from` to `to` on the stream unless the findings `bad` name a bad index
/// (a one-shot SpMV's result, once its tiles checked the columns). With `report`, the copy's
/// first CTA reports the findings there.
pub(crate) fn copy_checked(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    tuning: &Tuning,
    (from, to, bytes): (CUdeviceptr, CUdeviceptr, u64),
    bad: &FindingsRecord,
    report: Option<&Report<'_>>,
) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let module = helper_module(gpu, geometry, tuning)?;
    let block = 256u32;
    let grid = bytes
        .div_ceil(16 * block as u64)
        .min(gpu.sm_count as u64 * 8) as u32;
    let args = CopyCheckedArgs {
        from,
        to,
        bytes,
        bad: bad.ptr,
        report: report.map_or(0, |r| r.device),
    };
    gpu.launch_dependent(&module, grid, block, &args)
}

/// The tile limits of the geometry for tiles of `tuning.nv()` positions (num_tiles + 1 offsets
/// of the geometry's type), in memory of their own (a plan's), or `None` when there are no
/// positions.
pub(crate) fn partition(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    tuning: &Tuning,
) -> Result<Option<DeviceMem>> {
    if geometry.count == 0 {
        return Ok(None);
    }
    let num_tiles = geometry.num_tiles(tuning);
    let limits = DeviceMem::alloc(gpu, limits_bytes(geometry, num_tiles))?;
    launch_partition(gpu, geometry, tuning, num_tiles, limits.ptr)?;
    Ok(Some(limits))
}

/// [`partition`] for a one-shot call: the limits in the stream's scratch ([`OneShotLimits`]).
pub(crate) fn one_shot_partition<'g>(
    gpu: &'g Arc<Gpu>,
    geometry: &Geometry,
    tuning: &Tuning,
) -> Result<Option<OneShotLimits<'g>>> {
    if geometry.count == 0 {
        return Ok(None);
    }
    let limits = OneShotLimits::take(gpu, geometry, tuning)?;
    launch_partition(gpu, geometry, tuning, limits.num_tiles, limits.ptr)?;
    Ok(Some(limits))
}

/// Queues the searches of the `num_tiles + 1` tile limits into `limits`.
fn launch_partition(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    tuning: &Tuning,
    num_tiles: u64,
    limits: CUdeviceptr,
) -> Result<()> {
    let module = helper_module(gpu, geometry, tuning)?;
    let block = 256u32;
    let team_log = search_team_log(gpu, num_tiles);
    let grid = ((num_tiles + 1) << team_log).div_ceil(block as u64);
    let grid = u32::try_from(grid).expect("fewer than 2^40 tiles");
    let args = PartitionArgs {
        offsets: geometry.offsets,
        num_segments: geometry.num_segments,
        count: geometry.count,
        num_tiles,
        limits,
        team_log,
    };
    gpu.launch(&module, grid, block, &args)
}

/// A one-shot call's tile limits, in the stream's scratch for them (`Gpu::limits`), held until
/// the call's last kernel is queued: the next call on the stream then writes them after this
/// one's kernels read them. (Memory of their own took an allocation before the call's first
/// launch, which a timed call waits for.)
pub(crate) struct OneShotLimits<'g> {
    pub ptr: CUdeviceptr,
    num_tiles: u64,
    _held: MutexGuard<'g, StreamScratch>,
}

impl<'g> OneShotLimits<'g> {
    fn take(gpu: &'g Gpu, geometry: &Geometry, tuning: &Tuning) -> Result<OneShotLimits<'g>> {
        let num_tiles = geometry.num_tiles(tuning);
        let mut held = gpu.limits.lock().unwrap_or_else(|e| e.into_inner());
        let ptr = held.reserve(gpu, limits_bytes(geometry, num_tiles))?;
        Ok(OneShotLimits {
            ptr,
            num_tiles,
            _held: held,
        })
    }
}

/// log2 of the lanes that search each tile limit together (kernel_segreduce.cu's `tile_limit`):
/// the widest team, up to a warp, whose threads take at most half of what the SMs hold at once,
/// so that the searches run in one wave beside the offsets' checks. 2^24 items in tiles of 2,944
/// take teams of 16 (five steps through 2^20 offsets, not 20); 2^28, single lanes. Never two: a
/// team's last lane does not probe, so a pair searches as one lane does.
fn search_team_log(gpu: &Gpu, num_tiles: u64) -> u32 {
    let room = gpu.sm_count as u64 * 1024;
    (2..=5u32)
        .rev()
        .find(|&log| (num_tiles + 1) << log <= room)
        .unwrap_or(0)
}

/// The bytes of `num_tiles + 1` offsets of the geometry's width.
fn limits_bytes(geometry: &Geometry, num_tiles: u64) -> usize {
    let width = if geometry.wide_offsets { 8 } else { 4 };
    (num_tiles as usize + 1) * width
}

/// A plan's packed heads for the tiles of `limits` (from [`partition`] with the same tuning):
/// one 32-bit word per thread of each tile and one after them, bit i set where a segment starts
/// at the thread's item i (kernel_segreduce.cu's `mgpu_segreduce_codes`). For direct geometries
/// without empty segments; `None` when there are no positions.
pub(crate) fn codes(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    limits: Option<&DeviceMem>,
    tuning: &Tuning,
) -> Result<Option<DeviceMem>> {
    let Some(limits) = limits else {
        return Ok(None);
    };
    debug_assert!(!geometry.empty && geometry.sources == 0);
    let module = helper_module(gpu, geometry, tuning)?;
    let num_tiles = geometry.num_tiles(tuning);
    let codes = DeviceMem::alloc(gpu, (num_tiles * tuning.nt as u64 + 1) as usize * 4)?;
    let args = CodesArgs {
        offsets: geometry.offsets,
        limits: limits.ptr,
        num_segments: geometry.num_segments,
        count: geometry.count,
        codes: codes.ptr,
    };
    let grid = u32::try_from(num_tiles).expect("fewer than 2^32 tiles");
    gpu.launch(&module, grid, tuning.nt, &args)?;
    Ok(Some(codes))
}

/// Whether a segment starts in every tile of `limits` (from [`partition`]) but the last: then a
/// segment that crosses tiles starts in the tile before the one it ends in, and [`reduce`]
/// completes it from that neighbour (`mgpu_segreduce_fixup`) instead of a spine's scan. Waits for
/// the stream (a 4-byte read-back); false without positions.
pub(crate) fn heads_everywhere(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    limits: Option<&DeviceMem>,
    tuning: &Tuning,
) -> Result<bool> {
    let Some(limits) = limits else {
        return Ok(false);
    };
    let module = helper_module(gpu, geometry, tuning)?;
    let num_tiles = geometry.num_tiles(tuning);
    let headless = DeviceMem::zeroed(gpu, 4)?;
    let block = 256u32;
    let args = HeadlessArgs {
        limits: limits.ptr,
        num_tiles,
        headless: headless.ptr,
    };
    let grid = u32::try_from(num_tiles.div_ceil(block as u64)).expect("fewer than 2^32 tiles");
    gpu.launch(&module, grid, block, &args)?;
    let mut found = [0u32];
    gpu.download(headless.ptr, &mut found)?;
    Ok(found[0] == 0)
}

/// The segmented reduction of a geometry with its tile `limits` (from [`partition`] or
/// [`one_shot_partition`] with the same tuning) and, from a plan, its packed heads (from [`codes`]) and whether a segment starts
/// in every tile but the last (from [`heads_everywhere`]): one result per segment to `dest`, the
/// identity for empty segments. The geometry was validated, or its validation is
/// queued before (`bad`, from [`launch_validation`]): where that finds a bad index, the kernels
/// write nothing. With `report`, the first tile reports those findings to the host (they are
/// final before the tiles start).
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce<T: Element>(
    gpu: &Arc<Gpu>,
    geometry: &Geometry,
    limits: Option<CUdeviceptr>,
    codes: Option<&DeviceMem>,
    heads_everywhere: bool,
    bad: Option<&FindingsRecord>,
    report: Option<&Report<'_>>,
    items: Items<'_>,
    dest: CUdeviceptr,
    op: &Op<T>,
    mul: Option<&Op<T>>,
    tuning: &Tuning,
) -> Result<()> {
    let Some(limits) = limits else {
        // No positions: every segment is empty (a strict geometry, then, has none; and the
        // fill waits for validation's verdict on its indices: empty segments are no error here).
        let rejected = |f: Findings| f.bad[..3].iter().any(|b| b.is_some());
        if geometry.num_segments == 0 || rejected(read_validation(gpu, bad)?) {
            return Ok(());
        }
        return fill(gpu, dest, geometry.num_segments, op.identity());
    };
    let checked = bad.is_some_and(|b| b.strict_checks);
    let bad = bad.map_or(0, |b| b.ptr);
    debug_assert!(
        bad != 0 || !items.check_cols,
        "column checks report to the findings"
    );
    let module_spec = tiles_spec(geometry, &items, codes.is_some(), op, mul, tuning);
    let spec = module_spec.variant;
    let tuning = &module_spec.tuning;
    let codes = codes.map_or(0, |c| c.ptr);
    let module = gpu.module::<SegReduce>(&module_spec, part::<SegReduce>("segreduce_tiles"))?;
    let num_tiles = geometry.num_tiles(tuning);
    // Where the checks ran, the length that segments of one length would have (the tiles see
    // whether they do: kernel_segreduce.cu's progression_stride), if at least 32 fit a tile (the
    // offsets of longer ones weigh little) and positions lie below 2^31 (32-bit arithmetic).
    let stride = geometry.count.div_ceil(geometry.num_segments.max(1));
    let stride = match checked && geometry.count < 1 << 31 && stride * 32 <= tuning.nv() as u64 {
        true => stride as u32,
        false => 0,
    };
    let count_size = if spec.wide_count { 8 } else { 4 };
    let pair = lookback::pair_size(
        count_size,
        std::mem::size_of::<T>(),
        std::mem::align_of::<T>(),
    );
    // What each tile leaves for the spine: its total (a pair), its lead (a T) and whether it
    // continues a segment it ends (a byte), as three arrays in one allocation.
    let align = |x: u64| x.div_ceil(256) * 256;
    let leads_at = align(num_tiles * pair as u64);
    let continued_at = leads_at + align(num_tiles * std::mem::size_of::<T>() as u64);
    // (Held until both kernels are queued: the next call on the stream then runs after them.)
    let mut carries = gpu.carries.lock().unwrap_or_else(|e| e.into_inner());
    let base = carries.reserve(gpu, (continued_at + num_tiles) as usize)?;
    let (totals, leads, continued) = (base, base + leads_at, base + continued_at);
    let tiles = TilesArgs {
        input: items.input,
        matrix: items.matrix,
        cols: items.cols,
        vec: items.vec,
        vec_len: items.vec_len,
        offsets: geometry.offsets,
        sources: geometry.sources,
        limits,
        num_segments: geometry.num_segments,
        count: geometry.count,
        codes,
        bad,
        dest,
        identity: ByValue(op.identity()),
        totals,
        leads,
        continued,
        report: report.map_or(0, |r| r.device),
        stride,
        // The tiles resident at once: a tile hints L2 about the one that many later.
        ahead: gpu.sm_count * module.resident::<TilesArgs<T>>(),
    };
    let grid = u32::try_from(num_tiles).expect("fewer than 2^32 tiles");
    gpu.launch_dependent(&module, grid, tuning.nt, &tiles)?;
    if num_tiles == 1 {
        return Ok(()); // a single tile continues no segment
    }
    if heads_everywhere {
        debug_assert!(bad == 0, "a plan's geometry was checked when it was made");
        let fixup = FixupArgs {
            totals,
            leads,
            continued,
            limits,
            num_tiles,
            dest,
        };
        let grid = num_tiles.div_ceil(tuning.nt as u64);
        let grid = u32::try_from(grid).expect("fewer than 2^32 tiles");
        return gpu.launch_dependent(&module, grid, tuning.nt, &fixup);
    }
    let num_spine = num_tiles.div_ceil(tuning.nt as u64 * SPINE_VT as u64);
    lookback::launch_dependent(
        gpu,
        &module,
        num_spine,
        tuning.nt,
        pair,
        |tickets, first_ticket, status| SpineArgs {
            totals,
            leads,
            continued,
            limits,
            num_tiles,
            bad,
            dest,
            identity: ByValue(op.identity()),
            tickets,
            first_ticket,
            status,
        },
    )
}

/// `len` copies of `value` at `dest` (the empty segments of an input without positions: a rare
/// case, served by an upload).
fn fill<T: Element>(gpu: &Arc<Gpu>, dest: CUdeviceptr, len: u64, value: T) -> Result<()> {
    const CHUNK: u64 = 1 << 20;
    let chunk = vec![value; len.min(CHUNK) as usize];
    let mut done = 0;
    while done < len {
        let n = (len - done).min(CHUNK) as usize;
        gpu.upload(dest + done * std::mem::size_of::<T>() as u64, &chunk[..n])?;
        done += n as u64;
    }
    Ok(())
}
