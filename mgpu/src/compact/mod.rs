//! Stream compaction, single pass (Merrill & Garland, section 5.2): select, partition, unique,
//! run-length encoding and reduce-by-key, fused into the look-back scan: one read of the input
//! and one write of the output. Each has an in-place form whose output overwrites its input.
//!
//! Outputs must have room for every input item (the worst case). The number of items written
//! (selected items, runs) goes where the [`Count`] argument says: returned to the host (the call
//! waits for the GPU), written to device memory (it does not), both, or nowhere.
//!
//! The front-ends (`select`, `partition`, `unique`, `runs`) describe a job for the shared
//! machinery (`job`: the arguments; `core`: the dispatch); reduce-by-key has a module of its own ([`crate::reduce_by_key`]).

pub(crate) mod core;
pub(crate) mod job;
mod partition;
mod runs;
mod select;
mod unique;

pub use crate::reduce_by_key::ReduceByKeyAlgorithm;

use crate::Total;

/// Where the number of items a compaction wrote goes: [`Total`] for a `u64` count.
/// `Count::Host` returns it; `Count::Device(&mut buf)` writes it to `buf[0]` without waiting.
pub type Count<'a> = Total<'a, u64>;
