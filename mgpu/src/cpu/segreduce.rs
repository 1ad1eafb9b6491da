//! The CPU reference of the segmented reductions: the geometry's checks, in index order (the GPU's
//! validation finds the same first bad index), and each segment folded in order.

use crate::source::HostRead;
use crate::{Element, Op};
use rayon::prelude::*;

/// What is reduced per position, on the host.
pub(crate) enum HostItems<'a, T: Element> {
    /// The values: a slice, or a mapped or generated source.
    Values(&'a HostRead<'a, T>, usize),
    /// SpMV: `x[cols[m]]`, or `mul(matrix[m], x[cols[m]])`.
    Spmv {
        matrix: Option<(&'a [T], &'a Op<T>)>,
        cols: &'a [u32],
        x: &'a [T],
    },
}

/// The first offset that breaks the rules: `offsets[0] == 0`, non-decreasing (increasing when
/// `strict`), at most `count` (less when `strict`).
pub(crate) fn first_bad_offset(offsets: &[u64], count: u64, strict: bool) -> Option<usize> {
    (0..offsets.len()).find(|&i| !offset_ok(offsets, i, count, strict))
}

fn offset_ok(offsets: &[u64], i: usize, count: u64, strict: bool) -> bool {
    let s = offsets[i];
    let ordered = match i {
        0 => s == 0,
        _ if strict => s > offsets[i - 1],
        _ => s >= offsets[i - 1],
    };
    ordered && if strict { s < count } else { s <= count }
}

/// The first segment whose items, `sources[i]` on for its length, do not lie within `data_len`:
/// its index, source and length.
pub(crate) fn first_bad_source<O: crate::element::Offset>(
    offsets: &[u64],
    sources: &[O],
    count: u64,
    data_len: u64,
) -> Option<(usize, u64, u64)> {
    (0..offsets.len()).find_map(|i| {
        let next = offsets.get(i + 1).copied().unwrap_or(count);
        let (s, len) = (sources[i].to_u64(), next - offsets[i]);
        (s > data_len || len > data_len - s).then_some((i, s, len))
    })
}

/// The first column index not below `x_len`.
pub(crate) fn first_bad_column(cols: &[u32], x_len: usize) -> Option<usize> {
    cols.iter().position(|&c| c as usize >= x_len)
}

/// Whether some segment of valid offsets is empty.
pub(crate) fn has_empty(offsets: &[u64], count: u64) -> bool {
    let ends = offsets.iter().skip(1).copied().chain([count]);
    offsets.iter().zip(ends).any(|(&start, end)| start == end)
}

/// Each segment folded in order from its first item, empty ones to the identity. Segment `i`
/// covers `offsets[i]..offsets[i + 1]` (the last up to `count`); its items are read from
/// `sources[i]` on where there are sources, else from its start.
pub(crate) fn reduce<T: Element, O: crate::element::Offset>(
    offsets: &[O],
    sources: Option<&[O]>,
    count: usize,
    items: HostItems<'_, T>,
    out: &mut [T],
    op: &Op<T>,
) {
    let count = count as u64;
    let values: Vec<T>;
    let item: Box<dyn Fn(usize) -> T + Sync + '_> = match items {
        HostItems::Values(HostRead::Slice(s), _) => Box::new(move |m| s[m]),
        HostItems::Values(fill, len) => {
            let mut all = vec![T::zeroed(); len];
            fill.fill(0, &mut all);
            values = all;
            Box::new(|m| values[m])
        }
        HostItems::Spmv {
            matrix: Some((m, mul)),
            cols,
            x,
        } => Box::new(move |k| mul.apply(m[k], x[cols[k] as usize])),
        HostItems::Spmv {
            matrix: None,
            cols,
            x,
        } => Box::new(move |k| x[cols[k] as usize]),
    };
    out.par_iter_mut().enumerate().for_each(|(i, o)| {
        let start = offsets[i].to_u64();
        let end = offsets.get(i + 1).map_or(count, |e| e.to_u64());
        let from = sources.map_or(start, |s| s[i].to_u64()) as usize;
        let len = (end - start) as usize;
        *o = (from..from + len)
            .map(&item)
            .reduce(|a, b| op.apply(a, b))
            .unwrap_or(op.identity());
    });
}
