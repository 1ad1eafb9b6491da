//! A segmented reduction's arguments as both backends read them: the geometry as given, what is
//! reduced per position, the bounds that sources and columns are checked against and the errors
//! that name a bad index, and what a plan keeps on the GPU.

use crate::buffer::View;
use crate::cpu::segreduce::HostItems;
use crate::cuda::memory::DeviceMem;
use crate::cuda::segreduce::SegItems;
use crate::error::{Error, OffsetProblem};
use crate::source::SourceParts;
use crate::{Element, Offset, Op};

/// What is reduced per position.
pub(crate) enum ItemSource<'a, T: Element> {
    /// The values (direct or indirect).
    Values(SourceParts<'a, T>),
    /// SpMV: `x[cols[m]]`, or `mul(matrix[m], x[cols[m]])`.
    Spmv {
        matrix: Option<View<'a, T>>,
        cols: View<'a, u32>,
        x: View<'a, T>,
        mul: Option<&'a Op<T>>,
    },
}

impl<'a, T: Element> ItemSource<'a, T> {
    pub(crate) fn kind(&self) -> SegItems {
        match self {
            ItemSource::Values(_) => SegItems::Values,
            ItemSource::Spmv { matrix: None, .. } => SegItems::SpmvUnary,
            ItemSource::Spmv { .. } => SegItems::SpmvBinary,
        }
    }
    /// The length of what positions (or sources) index: the values, or the columns.
    pub(crate) fn data_len(&self) -> usize {
        match self {
            ItemSource::Values(v) => v.len,
            ItemSource::Spmv { cols, .. } => cols.len(),
        }
    }
    /// SpMV's column indices and the vector's length.
    pub(crate) fn columns(&self) -> (Option<View<'a, u32>>, usize) {
        match self {
            ItemSource::Spmv { cols, x, .. } => (Some(*cols), x.len()),
            ItemSource::Values(_) => (None, 0),
        }
    }
    /// The items on the CPU backend.
    pub(super) fn host(&self) -> HostItems<'_, T> {
        match self {
            ItemSource::Values(v) => HostItems::Values(v.host(), v.len),
            ItemSource::Spmv {
                matrix,
                cols,
                x,
                mul,
            } => HostItems::Spmv {
                matrix: matrix.as_ref().zip(*mul).map(|(m, mul)| (host(m), mul)),
                cols: host(cols),
                x: host(x),
            },
        }
    }
}

/// A CSR geometry as given: offsets, optional sources, and the number of positions.
pub(crate) struct Segments<'a, O: Offset> {
    pub offsets: View<'a, O>,
    pub sources: Option<View<'a, O>>,
    pub count: usize,
    /// Segments may be empty: validation allows them, and once it has passed, some segment is.
    pub support_empty: bool,
}

pub(crate) fn host<'a, X: Element>(v: &View<'a, X>) -> &'a [X] {
    v.at.host().expect("checked to be on the CPU")
}

/// What is wrong with `offsets[i]`, given it and the offset before it.
pub(crate) fn offset_error(
    name: &'static str,
    i: usize,
    previous: Option<u64>,
    value: u64,
    count: u64,
    strict: bool,
) -> Error {
    let problem = match previous {
        None if value != 0 => OffsetProblem::FirstNotZero,
        Some(p) if value < p => OffsetProblem::Decreasing,
        Some(p) if strict && value == p => OffsetProblem::EmptySegment,
        _ if value > count => OffsetProblem::PastEnd,
        _ => OffsetProblem::EmptyAtEnd,
    };
    Error::InvalidOffset {
        call: name,
        index: i as u64,
        value,
        previous,
        count,
        problem,
    }
}

/// Segment `i` reads past the end of its data: the values, or SpMV's nonzeros.
pub(crate) fn source_error(
    name: &'static str,
    i: usize,
    source: u64,
    length: u64,
    data_len: usize,
    spmv: bool,
) -> Error {
    Error::SourceOutOfRange {
        call: name,
        index: i as u64,
        start: source,
        length,
        data: if spmv { "nonzeros" } else { "values" },
        bound: data_len as u64,
    }
}

pub(crate) fn column_error(name: &'static str, i: usize, col: u32, x_len: usize) -> Error {
    Error::IndexOutOfRange {
        call: name,
        argument: "cols",
        index: i as u64,
        value: col as u64,
        what: "the vector",
        bound: x_len as u64,
    }
}

/// What a validation checks besides the offsets: `data_len`, what sources index (the values, or
/// the nonzeros); `cols`, column indices to check against a vector of `x_len`.
#[derive(Clone, Copy)]
pub(crate) struct Bounds<'a> {
    pub data_len: usize,
    pub cols: Option<&'a View<'a, u32>>,
    pub x_len: usize,
}

/// What a plan keeps on the GPU (nothing on the CPU or without positions): the tile limits and,
/// where no segment is empty, the packed heads (the seed's thread codes), which an apply copies
/// with its items instead of reading the offsets and setting the heads from them; and whether a
/// segment starts in every tile but the last, when an apply completes the segments that cross
/// tiles from each tile's neighbour instead of a spine's scan.
#[derive(Default)]
pub(crate) struct Prepared {
    pub limits: Option<DeviceMem>,
    pub codes: Option<DeviceMem>,
    pub heads_everywhere: bool,
}
