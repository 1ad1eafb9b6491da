//! The reduce family (`mgpu_reduce`): passes over contiguous ranges of tiles until one CTA
//! remains. Also the spec that reduce, scan and transform modules share: one element type, an
//! operator and how the input is loaded.

use super::family::{Instance, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Expr, Load, Prelude};
use super::lookback::{self, TileStatusArgs};
use super::{ByValue, Gpu};
use crate::error::Result;
use crate::tuning::{Family, Tuning};
use crate::{Arithmetic, Element, Op};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// A module over elements `T`, read as `load` says and combined by an operator (none for
/// transform): the spec of the reduce, scan and transform families.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpSpec {
    /// The element type.
    pub element: ElementDesc,
    /// The operator's expression, and whether it is commutative.
    pub op: Option<(Expr, bool)>,
    /// How the input is read.
    pub load: Load,
    /// The tuning.
    pub tuning: Tuning,
}

impl OpSpec {
    /// `T`s combined by `op`, read as `load` says.
    pub fn new<T: Element>(op: Option<&Op<T>>, load: &Load, tuning: &Tuning) -> OpSpec {
        OpSpec {
            element: ElementDesc::of::<T>(),
            op: op.map(|o| (Expr::of_op(o), o.is_commutative())),
            load: load.clone(),
            tuning: *tuning,
        }
    }

    /// The prelude's `MGPU_COMMUTATIVE`, `T`, the input and `Op`.
    pub fn prelude(&self, p: &mut Prelude) {
        p.define(
            "MGPU_COMMUTATIVE",
            self.op.as_ref().is_some_and(|(_, c)| *c) as u32,
        )
        .element("T", &self.element)
        .load(&self.load);
        if let Some((op, _)) = &self.op {
            p.op("Op", "T", op);
        }
    }
}

/// The reduce family.
pub struct Reduce;

impl KernelFamily for Reduce {
    type Spec = OpSpec;
    const NAME: &'static str = "reduce";
    const FILES: &'static [&'static str] = &[
        headers::LOOKBACK_TILES,
        include_str!("kernels/kernel_reduce.cu"),
    ];
    const PARTS: &'static [Part] = &[Part {
        name: "reduce",
        kernels: &["mgpu_reduce"],
    }];
    fn prelude(spec: &OpSpec, p: &mut Prelude) {
        lookback::prelude(p, spec.element.size);
        spec.prelude(p);
    }
    fn tuning(spec: &OpSpec) -> Tuning {
        spec.tuning
    }
    const TUNING: &'static [Family] = &[Family::Reduce, Family::Scan];
    fn instances(_arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        crate::for_each_arithmetic!(reduce_instances(table, &mut out));
        Ok(out)
    }
}

/// The operators every arithmetic type's reduce and scan modules are checked with: the default
/// (`plus`, the primary), an order-keeping one, another.
pub(crate) fn checked_ops<T: Arithmetic>() -> [Op<T>; 3] {
    [Op::plus(), Op::plus().commutative(false), Op::maximum()]
}

/// Reduce over `T`s: each operator at the reduce tuning, and reduce-then-scan's upsweep (the
/// reduce kernel on the scan's tiles, `upsweep_tuning`).
fn reduce_instances<T: Arithmetic>(table: TableTuning<'_>, out: &mut Vec<Instance>) -> Result<()> {
    let size = std::mem::size_of::<T>();
    let plain = Load::plain::<T>();
    for (i, op) in checked_ops::<T>().iter().enumerate() {
        let label = format!("{} commutative={}", op.name(), op.is_commutative());
        let t = table(Family::Reduce, size)?;
        let spec = OpSpec::new(Some(op), &plain, &t);
        out.push(
            Instance::of::<Reduce>(&spec, Family::Reduce, ElementDesc::of::<T>(), &label)
                .primary(i == 0),
        );
        let up = upsweep_tuning(table(Family::Scan, size)?, &t);
        let spec = OpSpec::new(Some(op), &plain, &up);
        out.push(Instance::of::<Reduce>(
            &spec,
            Family::Scan,
            ElementDesc::of::<T>(),
            format!("{label} upsweep"),
        ));
    }
    Ok(())
}

/// The tuning of reduce-then-scan's upsweep: the scan's tiles (the downsweep rescans the same
/// ranges of tiles) at no more than the reduce tuning's occupancy. The upsweep is the reduce
/// kernel, which holds a thread's values in registers, so the higher OCC that the persistent
/// look-back scan runs at would make it spill (1-byte elements at 128x39 spill from OCC 6 on).
pub fn upsweep_tuning(scan: Tuning, reduce: &Tuning) -> Tuning {
    Tuning {
        occ: scan.occ.min(reduce.occ),
        ..scan
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_reduce(Input in, u64 count, u64 tiles_per_cta, T* out, T identity,
    // TileStatusOf<T> status, int streaming).
    ReduceArgs<T> = "mgpu_reduce" {
        input: u64, count: u64, tiles_per_cta: u64, out: CUdeviceptr, identity: ByValue<T>,
        status: TileStatusArgs, streaming: i32,
    }
}

/// The work split of one pass: `grid` CTAs, each over `tiles_per_cta` consecutive tiles.
pub(crate) fn split(num_tiles: u64, max_ctas: u64) -> (u32, u64) {
    let grid = num_tiles.clamp(1, max_ctas.max(1));
    let tiles_per_cta = num_tiles.div_ceil(grid).max(1);
    (
        num_tiles.div_ceil(tiles_per_cta).max(1) as u32,
        tiles_per_cta,
    )
}

/// Whether the kernel reads `count` elements of `T` with evict-first loads: only inputs over
/// 1.5 times L2, which would not stay there anyway. One just past L2, read with ordinary loads by
/// one wave, leaves most of itself in L2 for the next kernel that reads it (H200, 2^24 i32 and f32
/// at 1.07 times L2, three rounds: 0.9-1.3 us faster a call; 2^25 at 2.1 times: no gain).
fn streaming<T>(gpu: &Gpu, count: u64) -> i32 {
    let bytes = count.saturating_mul(std::mem::size_of::<T>() as u64);
    (bytes > gpu.l2_bytes + gpu.l2_bytes / 2) as i32
}

/// Reduces the `count` elements of the input `input` (loaded as `load` says) into the element at
/// `out` (device memory), in one launch: a grid of at most four CTAs per resident slot, whose
/// last CTA reduces the others' partials (published in the stream's look-back status).
pub(crate) fn reduce<T: Element>(
    gpu: &Arc<Gpu>,
    input: u64,
    load: &Load,
    count: u64,
    op: &Op<T>,
    out: CUdeviceptr,
    tuning: &Tuning,
) -> Result<()> {
    let module = gpu.module::<Reduce>(&OpSpec::new(Some(op), load, tuning), &Reduce::PARTS[0])?;
    let resident = module.resident::<ReduceArgs<T>>();
    let num_tiles = count.div_ceil(tuning.nv() as u64);
    let streaming = streaming::<T>(gpu, count);
    // A streamed input is cut into four ranges per resident CTA, so that CTAs that drew
    // more bandwidth take more ranges instead of idling at the end (H100, means of three runs:
    // 0.4-0.8% off at 2^28, 1-6% at 2^24); a smaller one into one range each (four ranges made
    // 2^23 15-25% slower).
    let ranges = if streaming != 0 { 4 } else { 1 };
    let (grid, tiles_per_cta) = split(num_tiles, (gpu.sm_count * resident * ranges) as u64);
    let args = |status| ReduceArgs {
        input,
        count,
        tiles_per_cta,
        out,
        identity: ByValue(op.identity()),
        status,
        streaming,
    };
    if grid == 1 {
        return gpu.launch(&module, 1, tuning.nt, &args(lookback::NO_STATUS));
    }
    let bytes = std::mem::size_of::<T>();
    lookback::with_status(gpu, grid as u64, bytes, |status| {
        gpu.launch(&module, grid, tuning.nt, &args(status))
    })
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
    let module = gpu.module::<Reduce>(&OpSpec::new(Some(op), load, tuning), &Reduce::PARTS[0])?;
    let args = ReduceArgs {
        input,
        count,
        tiles_per_cta,
        out: partials,
        identity: ByValue(op.identity()),
        status: lookback::NO_STATUS,
        streaming: streaming::<T>(gpu, count),
    };
    gpu.launch(&module, grid, tuning.nt, &args)
}
