//! The public entry points' arguments made ready for the GPU: device addresses, the streams the
//! arguments live on (which `Gpu::ordered` orders the work after), the device descriptions of
//! segment geometries and compaction arrays, and the launches they feed (cuda/segreduce.rs,
//! cuda/compact.rs). The entry points validate first and call these on the GPU backend only.

use super::compact::CompactArrays;
use super::compact::{CompactSpec, KeyTest};
use super::jit::Load;
use super::memory::DeviceMem;
use super::segreduce::SegItems;
use super::segreduce::{self as device, Checks, Geometry, Items};
use super::Gpu;
use crate::buffer::{View, ViewMut};
use crate::compact::job::{Job, Place};
use crate::error::Result;
use crate::reduce::TotalTo;
use crate::segreduce::args::{
    column_error, offset_error, source_error, Bounds, ItemSource, Prepared, Segments,
};
use crate::tuning::Tuning;
use crate::Offset;
use crate::{Arithmetic, Element, Equality, Op};
use std::sync::Arc;

// Segmented reduction.

pub(crate) fn device_ptr<X: Element>(v: &View<'_, X>) -> u64 {
    v.at.device().expect("checked to be on the GPU").1
}

/// The geometry's device description.
pub(crate) fn geometry<O: Offset>(segs: &Segments<'_, O>) -> Geometry {
    let ptr = |v: &View<'_, O>| v.at.device().map_or(0, |d| d.1);
    Geometry {
        offsets: ptr(&segs.offsets),
        num_segments: segs.offsets.len() as u64,
        count: segs.count as u64,
        wide_offsets: std::mem::size_of::<O>() == 8,
        sources: segs.sources.as_ref().map_or(0, ptr),
        empty: segs.support_empty,
    }
}

/// What the GPU's validation checks besides the offsets (see `Context::check_segments`).
fn gpu_checks<O: Offset>(segs: &Segments<'_, O>, bounds: Bounds<'_>) -> Checks {
    Checks {
        strict: !segs.support_empty,
        data_len: bounds.data_len as u64,
        cols: bounds.cols.map_or(0, device_ptr),
        num_cols: bounds.cols.map_or(0, |c| c.len() as u64),
        vec_len: bounds.x_len as u64,
    }
}

/// The GPU's validation of a geometry (and sources, columns): one kernel and one read-back; the
/// error for the first bad index, else whether some segment is empty and the longest's length.
pub(crate) fn validate<O: Offset>(
    gpu: &Arc<Gpu>,
    name: &'static str,
    segs: &Segments<'_, O>,
    bounds: Bounds<'_>,
    tuning: &Tuning,
) -> Result<(bool, u64)> {
    let checks = gpu_checks(segs, bounds);
    let mut homes = homes_of(segs);
    homes.extend(bounds.cols.and_then(|c| c.at.device()).map(|d| d.0));
    let found = gpu.ordered(&homes, || {
        let bad = device::launch_validation(gpu, &geometry(segs), &checks, tuning)?;
        device::read_validation(gpu, bad.as_ref())
    })?;
    let has_empty = validation_result(gpu, name, segs, found.bad, bounds)?;
    Ok((has_empty, found.longest))
}

/// The GPU validation's findings as `check_segments` returns them: the error for the first bad
/// index (reading the values at fault back), else whether some segment is empty.
fn validation_result<O: Offset>(
    gpu: &Gpu,
    name: &'static str,
    segs: &Segments<'_, O>,
    bad: device::Bad,
    bounds: Bounds<'_>,
) -> Result<bool> {
    let (data_len, cols, x_len) = (bounds.data_len, bounds.cols, bounds.x_len);
    let (strict, count) = (!segs.support_empty, segs.count as u64);
    let read = |v: &View<'_, O>, i: usize| -> Result<u64> {
        let mut x = [O::ZERO];
        gpu.download(
            device_ptr(v) + (i * std::mem::size_of::<O>()) as u64,
            &mut x,
        )?;
        Ok(x[0].to_u64())
    };
    if let Some(i) = bad[0] {
        let i = i as usize;
        let prev = if i > 0 {
            Some(read(&segs.offsets, i - 1)?)
        } else {
            None
        };
        return Err(offset_error(
            name,
            i,
            prev,
            read(&segs.offsets, i)?,
            count,
            strict,
        ));
    }
    if let (Some(i), Some(sources)) = (bad[1], &segs.sources) {
        let i = i as usize;
        let start = read(&segs.offsets, i)?;
        let next = if i + 1 < segs.offsets.len() {
            read(&segs.offsets, i + 1)?
        } else {
            count
        };
        return Err(source_error(
            name,
            i,
            read(sources, i)?,
            next - start,
            data_len,
            cols.is_some(),
        ));
    }
    if let (Some(i), Some(cols)) = (bad[2], cols) {
        let i = i as usize;
        let mut c = [0u32];
        gpu.download(device_ptr(cols) + 4 * i as u64, &mut c)?;
        return Err(column_error(name, i, c[0], x_len));
    }
    Ok(bad[3].is_some())
}

/// A segmented reduction on the GPU, arguments checked: validation queued first when `deferred`
/// (its findings read back at the end), the partition unless a plan brings it, the tiles and
/// what carries across them; the arguments' streams ordered around it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn segreduce<T: Element, O: Offset>(
    gpu: &Arc<Gpu>,
    name: &'static str,
    segs: &Segments<'_, O>,
    items: &ItemSource<'_, T>,
    out: &ViewMut<'_, T>,
    op: &Op<T>,
    plan: Option<(&Prepared, &Tuning)>,
    deferred: bool,
    check_cols: bool,
    tuning: &Tuning,
) -> Result<()> {
    let tuning = *tuning;
    let (cols, x_len) = items.columns();
    let data_len = items.data_len();
    let bounds = Bounds {
        data_len,
        cols: cols.as_ref(),
        x_len,
    };
    let geometry = geometry(segs);
    let plain = Load::plain::<T>();
    let (kind, (input, load), matrix, col_ptr, vec, mul) = match items {
        ItemSource::Values(v) => {
            let (arg, load, _) = v.device();
            (SegItems::Values, (arg, load), 0, 0, 0, None)
        }
        ItemSource::Spmv {
            matrix,
            cols,
            x,
            mul,
        } => (
            items.kind(),
            (0, &plain),
            matrix.as_ref().map_or(0, device_ptr),
            device_ptr(cols),
            device_ptr(x),
            *mul,
        ),
    };
    let dest = out.at.device().expect("checked to be on the GPU").1;
    let mut homes = homes_of(segs);
    homes.extend(items_homes(items));
    if let Some((home, _)) = out.at.device() {
        homes.push(home);
    }
    if let Some((
        Prepared {
            limits: Some(limits),
            ..
        },
        _,
    )) = plan
    {
        homes.push(&limits.gpu);
    }
    // A one-shot SpMV's tiles check the columns as they gather, into a temporary copied out once
    // every check passed: the columns are read once. (Allocated once the first kernel is queued:
    // the GPU waits for no allocation.)
    let size = std::mem::size_of::<T>();
    let mut temp = None;
    let items = Items {
        kind,
        input,
        load,
        matrix,
        cols: col_ptr,
        vec,
        vec_len: x_len as u64,
        check_cols,
    };
    let helpers = match plan {
        None => Some(device::load_one_shot_modules(
            gpu, &geometry, &items, op, mul, &tuning,
        )?),
        Some(_) => None,
    };
    // A one-shot's host waits for the findings as soon as they are final, while the GPU goes
    // on with the work queued after them: reported by the first CTA of the next kernel (or where
    // that cannot be, read back by a copy queued before it): the tiles after the validation, or
    // where the tiles check the columns, the copy of the result from its temporary to the
    // output, which writes nothing where the findings name a bad index.
    let early = (deferred || check_cols) && geometry.count > 0;
    let (bad, queued) = gpu.ordered(&homes, || {
        // A deferred validation (never with a plan) finds the tile limits in the same launch.
        let (bad, mut owned) = if deferred {
            let offsets_only = Bounds {
                cols: if check_cols { None } else { bounds.cols },
                ..bounds
            };
            let checks = gpu_checks(segs, offsets_only);
            let helpers = helpers.as_ref().expect("a one-shot's");
            device::validate_and_partition(gpu, helpers, &geometry, &checks, &tuning, true)?
        } else if check_cols || (plan.is_none() && geometry.count > 0) {
            // An unchecked one-shot's record has nothing to report but whether every tile holds
            // a segment start (then its spine takes no look-back); without positions there are
            // no tiles, and a record would only cost the fill a read-back.
            (Some(device::findings(gpu)?), None)
        } else {
            (None, None)
        };
        if check_cols {
            temp = Some(DeviceMem::alloc(gpu, segs.offsets.len() * size)?);
        }
        let mut queued = None;
        let mut report = None;
        if let (Some(found), true) = (&bad, early && !check_cols) {
            report = device::findings_report(gpu)?;
            if report.is_none() {
                queued = device::queue_findings(gpu, found)?;
            }
        }
        let (limits, codes, heads_everywhere) = match plan {
            Some((prepared, _)) => (
                prepared.limits.as_ref().map(|l| l.ptr),
                prepared.codes.as_ref(),
                prepared.heads_everywhere,
            ),
            None => {
                if !deferred {
                    owned = device::one_shot_partition(gpu, &geometry, &tuning)?;
                }
                (owned.as_ref().map(|l| l.ptr), None, false)
            }
        };
        device::reduce(
            gpu,
            &geometry,
            limits,
            codes,
            heads_everywhere,
            bad.as_ref(),
            report.as_ref(),
            items,
            temp.as_ref().map_or(dest, |t| t.ptr),
            op,
            mul,
            &tuning,
        )?;
        if let (Some(report), Some(found)) = (report, &bad) {
            queued = Some(device::PendingFindings::Reported(report, found.ptr));
        }
        if let (Some(temp), Some(found), true) = (&temp, &bad, early) {
            let report = device::findings_report(gpu)?;
            if report.is_none() {
                queued = device::queue_findings(gpu, found)?;
            }
            let bytes = (segs.offsets.len() * size) as u64;
            let copy = (temp.ptr, dest, bytes);
            device::copy_checked(gpu, &geometry, &tuning, copy, found, report.as_ref())?;
            if let Some(report) = report {
                queued = Some(device::PendingFindings::Reported(report, found.ptr));
            }
        }
        Ok((bad, queued))
    })?;
    if deferred || check_cols {
        let found = match queued {
            Some(pending) => device::Findings::wait(gpu, pending)?,
            None => device::read_validation(gpu, bad.as_ref())?,
        };
        drop(bad); // back to the stream's ring, cleared only behind the work queued so far
        validation_result(gpu, name, segs, found.bad, bounds)?;
        if let (Some(temp), false) = (temp.filter(|t| t.ptr != 0), early) {
            let bytes = segs.offsets.len() * size;
            gpu.ordered(&homes, || gpu.copy(temp.ptr, dest, bytes))?;
        }
    }
    Ok(())
}

/// A plan's GPU part for a validated direct geometry: the tile partition for `tuning`, where no
/// segment is empty the packed heads, and whether every tile but the last holds a segment start
/// (a small read-back).
pub(crate) fn prepare<O: Offset>(
    gpu: &Arc<Gpu>,
    segs: &Segments<'_, O>,
    tuning: &Tuning,
) -> Result<Prepared> {
    let geometry = geometry(segs);
    let homes: Vec<_> = segs.offsets.at.device().map(|d| d.0).into_iter().collect();
    gpu.ordered(&homes, || {
        let limits = device::partition(gpu, &geometry, tuning)?;
        let codes = if segs.support_empty {
            None
        } else {
            device::codes(gpu, &geometry, limits.as_ref(), tuning)?
        };
        let heads_everywhere = device::heads_everywhere(gpu, &geometry, limits.as_ref(), tuning)?;
        Ok(Prepared {
            limits,
            codes,
            heads_everywhere,
        })
    })
}

/// The streams a geometry lives on.
fn homes_of<'a, O: Offset>(segs: &Segments<'a, O>) -> Vec<&'a Arc<Gpu>> {
    let mut homes: Vec<&Arc<Gpu>> = Vec::new();
    homes.extend(segs.offsets.at.device().map(|d| d.0));
    homes.extend(
        segs.sources
            .as_ref()
            .and_then(|s| s.at.device())
            .map(|d| d.0),
    );
    homes
}

/// The streams a reduction's items live on.
fn items_homes<'a, T: Element>(items: &ItemSource<'a, T>) -> Vec<&'a Arc<Gpu>> {
    let mut homes: Vec<&Arc<Gpu>> = Vec::new();
    match items {
        ItemSource::Values(v) => {
            if let crate::source::SourceKind::Device { home, .. } = &v.kind {
                homes.push(home);
            }
        }
        ItemSource::Spmv {
            matrix, cols, x, ..
        } => {
            homes.extend(matrix.as_ref().and_then(|m| m.at.device()).map(|d| d.0));
            homes.extend(cols.at.device().map(|d| d.0));
            homes.extend(x.at.device().map(|d| d.0));
        }
    }
    homes
}

// Compaction.

/// A compaction argument's device address and home stream.
fn place<'p, T: Element>(p: &'p Place<'_, T>) -> (u64, &'p Arc<Gpu>) {
    let (home, ptr) = match p {
        Place::In(v) => v.at.device(),
        Place::Out(v) | Place::InOut(v) => v.at.device(),
    }
    .expect("checked to be on the GPU");
    (ptr, home)
}

/// A compaction job on the GPU, arguments checked: its arrays' addresses (in place: the outputs
/// over the inputs), the count's slot, and the launch, ordered after the arguments' streams.
pub(crate) fn compact<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    job: &Job<'_, K, V>,
    test: &KeyTest<'_, K>,
    count: &TotalTo<'_, u64>,
    n: usize,
    tuning: &Tuning,
) -> Result<Option<u64>> {
    let places = [
        Some(place(&job.keys)),
        job.values.as_ref().map(place),
        job.keys_out.as_ref().map(place),
        job.values_out.as_ref().map(place),
        job.keys_rejected.as_ref().map(place),
        job.values_rejected.as_ref().map(place),
    ];
    let ptr = |i: usize| places[i].map_or(0, |p| p.0);
    let arrays = CompactArrays {
        keys: ptr(0),
        values: ptr(1),
        // In place: over the input.
        keys_out: if !job.write_keys {
            0
        } else if job.keys_out.is_some() {
            ptr(2)
        } else {
            ptr(0)
        },
        values_out: if job.values_out.is_some() {
            ptr(3)
        } else {
            ptr(1)
        },
        keys_rejected: ptr(4),
        values_rejected: ptr(5),
        count_out: 0,
    };
    let spec = CompactSpec {
        unique: matches!(test, KeyTest::Runs(_)),
        keys_out: job.write_keys,
        values: job.values.is_some(),
        rejected: job.rejected,
        wide_count: false,
        non_trivial_runs: false,
    };
    let homes = places.iter().flatten().map(|p| p.1);
    counted(gpu, homes, count, |count_out| {
        let arrays = CompactArrays {
            count_out,
            ..arrays
        };
        super::compact::compact::<K, V>(gpu, spec, test, arrays, n as u64, tuning)
    })
}

/// The runs kernel (reduce-by-key; run-length encoding with a `constant` value per key) on the
/// GPU, arguments checked. A missing `keys_out` writes the keys over `keys` when they are read
/// and written (in place), else not at all; a missing `values_out` writes over `values`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn runs<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    keys: &Place<'_, K>,
    keys_out: Option<&Place<'_, K>>,
    values: &Place<'_, V>,
    values_out: Option<&Place<'_, V>>,
    constant: Option<V>,
    equal: &Equality<K>,
    op: &Op<V>,
    count: &TotalTo<'_, u64>,
    n: usize,
    tuning: &Tuning,
) -> Result<Option<u64>> {
    let keys_in_place = matches!(keys, Place::InOut(_));
    let (kp, kh) = place(keys);
    let (vp, vh) = place(values);
    let kout = keys_out.as_ref().map(|p| place(p));
    let vout = values_out.as_ref().map(|p| place(p));
    let arrays = CompactArrays {
        keys: kp,
        values: if constant.is_some() { 0 } else { vp },
        keys_out: match kout {
            Some(p) => p.0,
            None if keys_in_place => kp,
            None => 0,
        },
        values_out: vout.map_or(vp, |p| p.0),
        ..Default::default()
    };
    let homes = [Some(kh), Some(vh), kout.map(|p| p.1), vout.map(|p| p.1)];
    counted(gpu, homes.into_iter().flatten(), count, |count_out| {
        let arrays = CompactArrays {
            count_out,
            ..arrays
        };
        super::reduce_by_key::reduce_by_key(gpu, equal, op, arrays, constant, n as u64, tuning)
    })
}

/// The non-trivial runs kernel on the GPU, arguments checked.
#[allow(clippy::too_many_arguments)]
pub(crate) fn non_trivial_runs<T: Element, L: Arithmetic>(
    gpu: &Arc<Gpu>,
    input: &View<'_, T>,
    offsets: &ViewMut<'_, L>,
    lengths: &ViewMut<'_, L>,
    equal: &Equality<T>,
    count: &TotalTo<'_, u64>,
    n: usize,
    tuning: &Tuning,
) -> Result<Option<u64>> {
    let (ih, ip) = input.at.device().expect("on the GPU");
    let (oh, op) = offsets.at.device().expect("on the GPU");
    let (lh, lp) = lengths.at.device().expect("on the GPU");
    counted(gpu, [ih, oh, lh], count, |count_out| {
        super::compact::non_trivial_runs::<T, L>(
            gpu, equal, ip, op, lp, count_out, n as u64, tuning,
        )
    })
}

/// Runs `launch`, given the device address the kernel writes its count to, ordered after
/// `homes` (and the count's own); then delivers the count where `count` says.
fn counted<'a>(
    gpu: &Arc<Gpu>,
    homes: impl IntoIterator<Item = &'a Arc<Gpu>>,
    count: &'a TotalTo<'_, u64>,
    launch: impl FnOnce(u64) -> Result<()>,
) -> Result<Option<u64>> {
    let homes: Vec<_> = homes.into_iter().chain(count.home()).collect();
    let slot = gpu.ordered(&homes, || {
        let slot = count_slot(count, gpu)?;
        launch(slot.0)?;
        Ok(slot)
    })?;
    count.finish_device(&slot)
}

/// The device slot the kernel writes its count to: the caller's, else a temporary (the kernel
/// always writes one).
fn count_slot(count: &TotalTo<'_, u64>, gpu: &Arc<Gpu>) -> Result<(u64, Option<DeviceMem>)> {
    match count.device_slot(gpu)? {
        (0, None) => {
            let tmp = DeviceMem::alloc(gpu, 8)?;
            Ok((tmp.ptr, Some(tmp)))
        }
        slot => Ok(slot),
    }
}
