//! The library's kernel families (`mgpu::cuda::registry`) as the commands that compile kernels
//! without running them see them: tune's spill check, occupancy's report and warmup without a
//! GPU. A family registered in the library shows up in all three.

use mgpu::cuda::family::{table_for, Instance, Registered};
use mgpu::cuda::registry::FAMILIES;
use mgpu::tuning::{self, Family, Tuning};
use mgpu::Element;

/// The CUDA type of an element type of the command line.
pub(crate) fn cuda_type(ty: &str) -> Result<&'static str, String> {
    Ok(match ty {
        "i8" => i8::CUDA_TYPE,
        "u8" => u8::CUDA_TYPE,
        "i16" => i16::CUDA_TYPE,
        "u16" => u16::CUDA_TYPE,
        "i32" => i32::CUDA_TYPE,
        "u32" => u32::CUDA_TYPE,
        "i64" => i64::CUDA_TYPE,
        "u64" => u64::CUDA_TYPE,
        "f32" => f32::CUDA_TYPE,
        "f64" => f64::CUDA_TYPE,
        other => return Err(format!("unknown type `{other}`")),
    })
}

/// The registered families, or the one named `name`.
pub(crate) fn families(name: Option<&str>) -> Result<Vec<&'static dyn Registered>, String> {
    let all = FAMILIES.iter().copied();
    match name {
        None => Ok(all.collect()),
        Some(n) => {
            let found: Vec<_> = all.filter(|f| f.name() == n).collect();
            if found.is_empty() {
                return Err(format!("unknown kernel family `{n}`"));
            }
            Ok(found)
        }
    }
}

/// The names of the registered families.
pub(crate) fn family_names() -> Vec<&'static str> {
    FAMILIES.iter().map(|f| f.name()).collect()
}

/// The primary instantiations (default operators, the variants a default call runs) of `family`
/// for element type `ty` on `arch`, under the tunings in effect there.
pub(crate) fn primary(
    family: &dyn Registered,
    ty: &str,
    arch: u32,
) -> Result<Vec<Instance>, String> {
    let ty = cuda_type(ty)?;
    Ok(family
        .instances(arch, &table_for(arch))
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|i| i.primary && i.element.cuda_type == ty)
        .collect())
}

/// What `mgpu tune` checks a candidate tuning of `target` with: the primary instantiations for
/// `ty` of every family that takes its tunings from `target`, under `candidate`.
pub(crate) fn candidate(
    target: Family,
    candidate: &Tuning,
    ty: &str,
    arch: u32,
) -> Result<Vec<Instance>, String> {
    let ty = cuda_type(ty)?;
    let table = |family: Family, size: usize| {
        if family == target {
            Ok(*candidate)
        } else {
            tuning::lookup(family, arch, size)
        }
    };
    let mut out = Vec::new();
    for f in FAMILIES
        .iter()
        .filter(|f| f.tuning_families().contains(&target))
    {
        let instances = f.instances(arch, &table).map_err(|e| e.to_string())?;
        out.extend(
            instances
                .into_iter()
                .filter(|i| i.primary && i.tuning_family == target && i.element.cuda_type == ty),
        );
    }
    Ok(out)
}
