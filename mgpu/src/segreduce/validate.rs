//! Validation of a segment geometry (offsets, sources, columns) before anything is written: on
//! the CPU in index order, on the GPU one kernel (`cuda::marshal::validate`) that finds the same
//! first bad index.

use super::args::{column_error, host, offset_error, source_error, Bounds, Segments};
use super::Offset;
use crate::context::{Backend, Context};
use crate::cpu::segreduce as reference;
use crate::error::{Error, OffsetProblem, Result};
use crate::tuning::Tuning;

/// The kernel names segments in the offsets' type, ~0 meaning none.
pub(crate) fn check_offset_type<O: Offset>(
    name: &'static str,
    segs: &Segments<'_, O>,
) -> Result<()> {
    if std::mem::size_of::<O>() == 4 && segs.offsets.len() as u64 >= u32::MAX as u64 {
        return Err(Error::TooLarge {
            call: name,
            what: "segments",
            len: segs.offsets.len() as u64,
            limited_by: "u32 offsets",
            limit: u32::MAX as u64 - 1,
            hint: "use u64 offsets",
        });
    }
    Ok(())
}

/// No offsets for `count > 0` positions.
pub(crate) fn no_segments(name: &'static str, count: usize) -> Error {
    Error::InvalidOffset {
        call: name,
        index: 0,
        value: 0,
        previous: None,
        count: count as u64,
        problem: OffsetProblem::Missing,
    }
}

impl Context {
    /// Validates a geometry (and sources, columns); returns the error for the first bad index,
    /// else whether some segment is empty. `data_len`: what sources index (the values, or the
    /// nonzeros); `cols`: column indices to check against a vector of `x_len`.
    pub(crate) fn check_segments<O: Offset>(
        &self,
        name: &'static str,
        segs: &Segments<'_, O>,
        bounds: Bounds<'_>,
        tuning: &Tuning,
    ) -> Result<bool> {
        Ok(self.check_segments_longest(name, segs, bounds, tuning)?.0)
    }

    /// [`check_segments`](Context::check_segments), also returning the longest segment's length
    /// (found in the same pass).
    pub(crate) fn check_segments_longest<O: Offset>(
        &self,
        name: &'static str,
        segs: &Segments<'_, O>,
        bounds: Bounds<'_>,
        tuning: &Tuning,
    ) -> Result<(bool, u64)> {
        let Bounds {
            data_len,
            cols,
            x_len,
        } = bounds;
        let strict = !segs.support_empty;
        let count = segs.count as u64;
        check_offset_type(name, segs)?;
        match &self.backend {
            Backend::Cpu => {
                let offsets: Vec<u64> = host(&segs.offsets).iter().map(|o| o.to_u64()).collect();
                if let Some(i) = reference::first_bad_offset(&offsets, count, strict) {
                    let prev = (i > 0).then(|| offsets[i - 1]);
                    return Err(offset_error(name, i, prev, offsets[i], count, strict));
                }
                if let Some(sources) = &segs.sources {
                    let bad = reference::first_bad_source(
                        &offsets,
                        host(sources),
                        count,
                        data_len as u64,
                    );
                    if let Some((i, s, len)) = bad {
                        return Err(source_error(name, i, s, len, data_len, cols.is_some()));
                    }
                }
                if let Some(cols) = cols {
                    if let Some(i) = reference::first_bad_column(host(cols), x_len) {
                        return Err(column_error(name, i, host(cols)[i], x_len));
                    }
                }
                // Strict offsets that pass have no empty segment.
                let has_empty = !strict && reference::has_empty(&offsets, count);
                let ends = offsets.iter().skip(1).copied().chain([count]);
                let longest = offsets.iter().zip(ends).map(|(s, e)| e - s).max();
                Ok((has_empty, longest.unwrap_or(0)))
            }
            Backend::Cuda(gpu) => crate::cuda::marshal::validate(gpu, name, segs, bounds, tuning),
        }
    }
}
