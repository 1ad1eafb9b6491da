//! Beyond one context: data sharded over the ranks of a group, and reduce, scan, select and sort
//! across them.
//!
//! - [`Group`]: the ranks this process drives, each a [`Rank`] (a [`Context`](crate::Context)
//!   and a [`Communicator`]): CPU ranks ([`Group::cpu`]), streams of one GPU
//!   ([`Group::on_one_device`]), the GPUs of this host through NCCL ([`Group::gpus`]), or one
//!   process per GPU started by torchrun ([`Group::from_env`]).
//! - [`Communicator`]: the collective calls the algorithms are written against (a checked
//!   all-gather, all-to-all with counts, barrier), between the ranks of one process or through
//!   NCCL. Every rank makes the same calls; a rank with bad input still makes them, with its
//!   error, so that every rank returns an error and none waits; a rank that never comes fails
//!   the others after a timeout.
//! - [`Sharded`]: one buffer per rank with the global offsets.
//! - The algorithms, written once per rank ([`Rank::reduce`], [`Rank::scan`],
//!   [`Rank::select_if`], [`Rank::sort`], [`Rank::sort_pairs`]) and over sharded data
//!   ([`Group::reduce`], [`Group::scan`], [`Group::select_if`], [`Group::sort`],
//!   [`Group::sort_pairs`]): each gives what the single-context primitive gives on the
//!   concatenation of the shards.
//!
//! ```
//! use mgpu::{dist::{Group, Sharded}, Comparator, Op, ScanOptions};
//! let group = Group::cpu(4);
//! let data = Sharded::scatter(&group, &[5u32, 1, 4, 2, 8, 7, 3])?;
//! assert_eq!(group.reduce(&data, &Op::plus())?, 30);
//! let sorted = group.sort(data, &Comparator::less())?;
//! assert_eq!(sorted.gather(&group)?, vec![1, 2, 3, 4, 5, 7, 8]);
//! # Ok::<(), mgpu::Error>(())
//! ```

mod comm;
mod group;
mod reduce;
mod scan;
mod select;
mod sharded;
mod sort;

pub use comm::Communicator;
pub use group::{Group, Rank};
pub use select::Selection;
pub use sharded::Sharded;
pub use sort::SortTimes;
