//! Sharded data: one buffer per rank, each on its rank's context, with the global offsets.

use super::{Group, Rank};
use crate::error::{Error, Result};
use crate::{Buffer, Element, Slice};

/// A sequence split over the ranks of a [`Group`]: shard `r` (on rank `r`'s context) holds
/// elements `offsets()[r]..offsets()[r + 1]` of the whole. Shards may be uneven, and empty. A
/// process holds the shards of its own ranks (all of them, or one torchrun-style); every
/// process knows every shard's length.
///
/// ```
/// use mgpu::dist::{Group, Sharded};
/// let group = Group::cpu(3);
/// let sharded = Sharded::scatter_by(&group, &[5, 6, 7, 8], &[1, 0, 3])?;
/// assert_eq!(sharded.offsets(), &[0, 1, 1, 4]);
/// assert_eq!(sharded.shard(2).unwrap().to_vec()?, vec![6, 7, 8]);
/// assert_eq!(sharded.gather(&group)?, vec![5, 6, 7, 8]);
/// # Ok::<(), mgpu::Error>(())
/// ```
#[derive(Debug)]
pub struct Sharded<T: Element> {
    /// (rank, shard) of this process's ranks, in the group's order.
    shards: Vec<(usize, Buffer<T>)>,
    /// `world + 1` global offsets.
    offsets: Vec<u64>,
    lengths: Vec<u64>,
}

impl<T: Element> Sharded<T> {
    /// `data` split as evenly as it goes (the first `len % world` ranks get one more), each
    /// process keeping its ranks' parts (every process passes the same `data`).
    pub fn scatter(group: &Group, data: &[T]) -> Result<Sharded<T>> {
        let world = group.world_size();
        let lengths: Vec<usize> = (0..world)
            .map(|r| data.len() / world + usize::from(r < data.len() % world))
            .collect();
        Sharded::scatter_by(group, data, &lengths)
    }

    /// `data` split into shards of `lengths` (one per rank, adding up to `data.len()`).
    pub fn scatter_by(group: &Group, data: &[T], lengths: &[usize]) -> Result<Sharded<T>> {
        if lengths.len() != group.world_size() || lengths.iter().sum::<usize>() != data.len() {
            return Err(Error::InvalidArgument(format!(
                "scatter: {} shard lengths adding up to {}, for {} ranks and {} elements",
                lengths.len(),
                lengths.iter().sum::<usize>(),
                group.world_size(),
                data.len()
            )));
        }
        let lengths: Vec<u64> = lengths.iter().map(|&n| n as u64).collect();
        let offsets = offsets_of(&lengths);
        let shards = group
            .ranks()
            .iter()
            .map(|rank| {
                let r = rank.rank();
                let part = &data[offsets[r] as usize..offsets[r + 1] as usize];
                Ok((r, rank.context().upload(part)?))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Sharded {
            shards,
            offsets,
            lengths,
        })
    }

    /// Wraps existing buffers, one per rank of this process (in the order of
    /// [`Group::ranks`]), each on its rank's context, without copying. Collective: in a group of
    /// several processes, every process calls it (the shards' lengths are exchanged).
    ///
    /// ```
    /// use mgpu::dist::{Group, Sharded};
    /// let group = Group::cpu(2);
    /// let shards = group.ranks().iter()
    ///     .map(|rank| rank.context().upload(&[rank.rank() as u8; 3]))
    ///     .collect::<mgpu::Result<Vec<_>>>()?;
    /// let sharded = Sharded::from_shards(&group, shards)?;
    /// assert_eq!(sharded.gather(&group)?, vec![0, 0, 0, 1, 1, 1]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn from_shards(group: &Group, shards: Vec<Buffer<T>>) -> Result<Sharded<T>> {
        if shards.len() != group.ranks().len() {
            return Err(Error::InvalidArgument(format!(
                "from_shards: {} buffers for the {} ranks of this process",
                shards.len(),
                group.ranks().len()
            )));
        }
        for (rank, shard) in group.ranks().iter().zip(&shards) {
            crate::buffer::check_place(rank.context(), &shard.view().at, "from_shards: a shard")?;
        }
        let mine: Vec<u64> = shards.iter().map(|s| s.len() as u64).collect();
        let lengths = group.run(|rank| {
            let all = rank
                .communicator()
                .all_gather_checked("from_shards", Ok(vec![mine[rank.local]]))?;
            Ok(all.into_iter().map(|v| v[0]).collect::<Vec<u64>>())
        })?;
        let lengths = lengths.into_iter().next().expect("a rank");
        let ranks = group.ranks().iter().map(Rank::rank);
        Ok(Sharded {
            shards: ranks.zip(shards).collect(),
            offsets: offsets_of(&lengths),
            lengths,
        })
    }

    /// Made by the per-rank algorithms: this process's shards and every shard's length.
    pub(crate) fn from_parts(shards: Vec<(usize, Buffer<T>)>, lengths: Vec<u64>) -> Sharded<T> {
        Sharded {
            shards,
            offsets: offsets_of(&lengths),
            lengths,
        }
    }

    /// All the elements, in order, on the host of every process. Collective.
    pub fn gather(&self, group: &Group) -> Result<Vec<T>> {
        let parts = group.run(|rank| {
            let mine = self.local(rank).to_vec();
            rank.communicator().all_gather_checked("gather", mine)
        })?;
        Ok(parts.into_iter().next().expect("a rank").concat())
    }

    /// The number of elements of all shards.
    pub fn len(&self) -> u64 {
        *self.offsets.last().expect("world + 1 offsets")
    }

    /// True when every shard is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `world + 1` offsets: shard `r` holds elements `offsets[r]..offsets[r + 1]` of the whole.
    pub fn offsets(&self) -> &[u64] {
        &self.offsets
    }

    /// Each shard's length, in rank order.
    pub fn shard_lengths(&self) -> &[u64] {
        &self.lengths
    }

    /// Rank `rank`'s shard, when this process holds it.
    pub fn shard(&self, rank: usize) -> Option<&Buffer<T>> {
        self.shards.iter().find(|(r, _)| *r == rank).map(|(_, b)| b)
    }

    /// This process's shards, as (rank, buffer).
    pub fn shards(&self) -> &[(usize, Buffer<T>)] {
        &self.shards
    }

    pub(crate) fn shards_mut(&mut self) -> &mut [(usize, Buffer<T>)] {
        &mut self.shards
    }

    /// This process's shards, as (rank, buffer), given back.
    pub fn into_shards(self) -> Vec<(usize, Buffer<T>)> {
        self.shards
    }

    /// The shard of `rank`, one of this process's (the group's methods are given the sharded
    /// data of the same group).
    pub(crate) fn local(&self, rank: &Rank) -> &Buffer<T> {
        &self.shards[rank.local].1
    }

    /// Checks that this is sharded over `group`'s ranks.
    pub(crate) fn check(&self, group: &Group, what: &str) -> Result<()> {
        let same = self.lengths.len() == group.world_size()
            && self.shards.len() == group.ranks().len()
            && self
                .shards
                .iter()
                .zip(group.ranks())
                .all(|((r, _), rank)| *r == rank.rank());
        if same {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{what} is sharded over {} ranks (this process holding ranks {:?}), the group has \
                 {} (this process holding ranks {:?})",
                self.lengths.len(),
                self.shards.iter().map(|s| s.0).collect::<Vec<_>>(),
                group.world_size(),
                group.ranks().iter().map(Rank::rank).collect::<Vec<_>>()
            )))
        }
    }
}

fn offsets_of(lengths: &[u64]) -> Vec<u64> {
    let mut offsets = Vec::with_capacity(lengths.len() + 1);
    let mut at = 0;
    offsets.push(0);
    for &n in lengths {
        at += n;
        offsets.push(at);
    }
    offsets
}
