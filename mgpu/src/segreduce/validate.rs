//! Validation of a segment geometry (offsets, sources, columns) before anything is written: on
//! the CPU in index order, on the GPU one kernel (`cuda::marshal::validate`) that finds the same
//! first bad index; and the errors that name it.

use super::{host, Offset, Segments};
use crate::buffer::View;
use crate::context::{Backend, Context};
use crate::cpu::segreduce as reference;
use crate::error::{invalid, Result};
use crate::tuning::Tuning;

/// The kernel names segments in the offsets' type, ~0 meaning none.
pub(crate) fn check_offset_type<O: Offset>(name: &str, segs: &Segments<'_, O>) -> Result<()> {
    if std::mem::size_of::<O>() == 4 && segs.offsets.len() as u64 >= u32::MAX as u64 {
        return invalid(format!(
            "{name}: {} segments with u32 offsets; at most 2^32 - 2 are supported: use u64 \
             offsets",
            segs.offsets.len()
        ));
    }
    Ok(())
}

/// What is wrong with `offsets[i]`, given it and the offset before it.
pub(crate) fn offset_error(
    name: &str,
    i: usize,
    prev: Option<u64>,
    s: u64,
    count: u64,
    strict: bool,
) -> crate::Error {
    let empty_hint = "; pass support_empty = true to allow empty segments";
    let what = match prev {
        None if s != 0 => format!("offsets[0] = {s}, but the first segment must start at 0"),
        Some(p) if s < p => format!(
            "offsets[{i}] = {s} is less than offsets[{}] = {p}: offsets must be non-decreasing",
            i - 1
        ),
        Some(p) if strict && s == p => format!(
            "offsets[{i}] = {s} equals offsets[{}]: segment {} is empty{empty_hint}",
            i - 1,
            i - 1
        ),
        _ if s > count => {
            format!("offsets[{i}] = {s} is past the end of the input ({count} positions)")
        }
        _ => format!(
            "offsets[{i}] = {s} is the end of the input ({count} positions): segment {i} is \
             empty{empty_hint}"
        ),
    };
    crate::Error::InvalidArgument(format!("{name}: {what}"))
}

pub(crate) fn source_error(
    name: &str,
    i: usize,
    source: u64,
    len: u64,
    data_len: usize,
) -> crate::Error {
    crate::Error::InvalidArgument(format!(
        "{name}: sources[{i}] = {source} with segment {i}'s length {len} reads past the end of \
         the values ({data_len} elements)"
    ))
}

pub(crate) fn column_error(name: &str, i: usize, col: u32, x_len: usize) -> crate::Error {
    crate::Error::InvalidArgument(format!(
        "{name}: cols[{i}] = {col} is not less than the vector's length {x_len}"
    ))
}

impl Context {
    /// Validates a geometry (and sources, columns); returns the error for the first bad index,
    /// else whether some segment is empty. `data_len`: what sources index (the values, or the
    /// nonzeros); `cols`: column indices to check against a vector of `x_len`.
    pub(crate) fn check_segments<O: Offset>(
        &self,
        name: &str,
        segs: &Segments<'_, O>,
        data_len: usize,
        cols: Option<&View<'_, u32>>,
        x_len: usize,
        tuning: &Tuning,
    ) -> Result<bool> {
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
                        return Err(source_error(name, i, s, len, data_len));
                    }
                }
                if let Some(cols) = cols {
                    if let Some(i) = reference::first_bad_column(host(cols), x_len) {
                        return Err(column_error(name, i, host(cols)[i], x_len));
                    }
                }
                // Strict offsets that pass have no empty segment.
                Ok(!strict && reference::has_empty(&offsets, count))
            }
            Backend::Cuda(gpu) => {
                crate::cuda::marshal::validate(gpu, name, segs, data_len, cols, x_len, tuning)
            }
        }
    }
}
