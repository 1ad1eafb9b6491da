//! The transform family (`mgpu_transform`): copy from a mapped or counting source over
//! contiguous ranges of tiles, one CTA per resident slot.

use super::family::{Instance, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Load, Prelude};
use super::reduce::{split, OpSpec};
use super::Gpu;
use crate::error::Result;
use crate::tuning::{Family, Tuning};
use crate::{Arithmetic, Element};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// The transform family (its spec has no operator).
pub struct Transform;

impl KernelFamily for Transform {
    type Spec = OpSpec;
    const NAME: &'static str = "transform";
    const FILES: &'static [&'static str] = &[
        headers::INTRINSICS,
        headers::LOADSTORE,
        include_str!("kernels/kernel_transform.cu"),
    ];
    const PARTS: &'static [Part] = &[Part {
        name: "transform",
        kernels: &["mgpu_transform"],
    }];
    fn prelude(spec: &OpSpec, p: &mut Prelude) {
        spec.prelude(p);
    }
    fn tuning(spec: &OpSpec) -> Tuning {
        spec.tuning
    }
    const TUNING: &'static [Family] = &[Family::Reduce];
    fn instances(_arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        crate::for_each_arithmetic!(transform_instances(table, &mut out));
        Ok(out)
    }
}

/// A counting sequence of `T`s written to memory (mapped inputs are the compile check's).
fn transform_instances<T: Arithmetic>(
    table: TableTuning<'_>,
    out: &mut Vec<Instance>,
) -> Result<()> {
    let t = table(Family::Reduce, std::mem::size_of::<T>())?;
    let spec = OpSpec::new::<T>(None, &Load::counting::<T>(), &t);
    out.push(
        Instance::of::<Transform>(&spec, Family::Reduce, ElementDesc::of::<T>(), "counting")
            .primary(true),
    );
    Ok(())
}

crate::kernel_args! {
    // SAFETY: mgpu_transform(Input in, T* out, u64 count, u64 tiles_per_cta).
    TransformArgs = "mgpu_transform" {
        input: u64, out: CUdeviceptr, count: u64, tiles_per_cta: u64,
    }
}

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
    let spec = OpSpec::new::<T>(None, load, tuning);
    let module = gpu.module::<Transform>(&spec, &Transform::PARTS[0])?;
    let num_tiles = count.div_ceil(tuning.nv() as u64);
    let resident = module.resident::<TransformArgs>();
    let (grid, tiles_per_cta) = split(num_tiles, (gpu.sm_count * resident) as u64);
    let args = TransformArgs {
        input,
        out,
        count,
        tiles_per_cta,
    };
    gpu.launch(&module, grid, tuning.nt, &args)
}
