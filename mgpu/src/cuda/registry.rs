//! Every kernel family, for the tools (`mgpu tune`, `occupancy`, `warmup`) and the compile check,
//! which enumerate them from here: a family listed here shows up in all of them.

use super::compact::{Compact, NonTrivialRuns};
use super::family::{Entry, Registered};
use super::radix::Radix;
use super::reduce::Reduce;
use super::reduce_by_key::ReduceByKey;
use super::scan::Scan;
use super::segreduce::SegReduce;
use super::segsort::SegSort;
use super::sort::Merge;
use super::transform::Transform;

/// The families, in the order the tools report them.
pub static FAMILIES: &[&dyn Registered] = &[
    &Entry::<Reduce>::NEW,
    &Entry::<Scan>::NEW,
    &Entry::<Transform>::NEW,
    &Entry::<Merge>::NEW,
    &Entry::<Radix>::NEW,
    &Entry::<Compact>::NEW,
    &Entry::<ReduceByKey>::NEW,
    &Entry::<NonTrivialRuns>::NEW,
    &Entry::<SegReduce>::NEW,
    &Entry::<SegSort>::NEW,
];

/// The family named `name`.
pub fn family(name: &str) -> Option<&'static dyn Registered> {
    FAMILIES.iter().copied().find(|f| f.name() == name)
}
