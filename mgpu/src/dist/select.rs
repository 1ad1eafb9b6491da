//! Select across ranks: each rank compacts its shard, and the kept items' global offsets come
//! from a scan of the counts.

use super::{comm::uninit, Group, Rank, Sharded};
use crate::buffer::{check_place, length_mismatch};
use crate::error::{LengthRule, Result};
use crate::{Count, Element, Predicate, Slice, SliceMut};

/// Where a rank's kept items go in the whole selection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Selection {
    /// The items this rank kept (at the front of its output).
    pub count: u64,
    /// Their place in the whole selection: the items kept by the ranks before this one.
    pub offset: u64,
    /// The items kept by all ranks.
    pub total: u64,
}

impl Rank {
    /// Keeps the items of `input` that pass `pred`, in order, at the front of `output` (at
    /// least as long as `input`), and says where they go in the selection of every rank's
    /// input. Collective: bad arguments on any rank fail every rank before anything is written.
    ///
    /// ```
    /// use mgpu::{dist::Group, Predicate};
    /// let group = Group::cpu(2);
    /// let odd = Predicate::new("odd", |x: &u32| x % 2 == 1, "x % 2 == 1");
    /// let picks = group.run(|rank| {
    ///     let ctx = rank.context();
    ///     let input = ctx.upload(&[1, 2, 3, 5, 7][rank.rank() * 2..])?;
    ///     let mut out = ctx.zeros::<u32>(input.len())?;
    ///     rank.select_if(&input, &mut out, &odd)
    /// })?;
    /// assert_eq!((picks[0].count, picks[0].offset, picks[0].total), (4, 0, 7));
    /// assert_eq!((picks[1].count, picks[1].offset), (3, 4));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn select_if<T: Element>(
        &self,
        input: &impl Slice<T>,
        output: &mut impl SliceMut<T>,
        pred: &Predicate<T>,
    ) -> Result<Selection> {
        let ctx = self.context();
        let comm = self.communicator();
        let (inp, out) = (input.view(), output.view());
        let valid = check_place(ctx, &inp.at, "select_if: the input")
            .and_then(|_| check_place(ctx, &out.at, "select_if: the output"))
            .and_then(|_| {
                if out.len() < inp.len() {
                    Err(length_mismatch(
                        LengthRule::AtLeast,
                        "select_if",
                        "the output",
                        out.len(),
                        inp.len(),
                        "the input",
                    ))
                } else {
                    Ok(Vec::<u8>::new())
                }
            });
        comm.all_gather_checked("select_if", valid)?;
        let count = ctx
            .select_if(input, output, pred, Count::Host)
            .map(|c| vec![c.expect("a host count")]);
        let counts: Vec<u64> = comm
            .all_gather_checked("select_if", count)?
            .into_iter()
            .map(|c| c[0])
            .collect();
        Ok(Selection {
            count: counts[self.rank()],
            offset: counts[..self.rank()].iter().sum(),
            total: counts.iter().sum(),
        })
    }
}

impl Group {
    /// The items of `input` that pass `pred`, in order, sharded where they were: shard `r`
    /// holds what rank `r` kept ([`Rank::select_if`] on every rank).
    ///
    /// ```
    /// use mgpu::{dist::{Group, Sharded}, Predicate};
    /// let group = Group::cpu(3);
    /// let input = Sharded::scatter(&group, &[4, 9, 1, 7, 3, 8, 2])?;
    /// let big = Predicate::new("big", |x: &i32| *x > 3, "x > 3");
    /// let kept = group.select_if(&input, &big)?;
    /// assert_eq!(kept.gather(&group)?, vec![4, 9, 7, 8]);
    /// assert_eq!(kept.shard_lengths(), &[2, 1, 1]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn select_if<T: Element>(
        &self,
        input: &Sharded<T>,
        pred: &Predicate<T>,
    ) -> Result<Sharded<T>> {
        input.check(self, "select_if: the input")?;
        let kept = self.run(|rank| {
            let ctx = rank.context();
            let shard = input.local(rank);
            let mut out = uninit::<T>(ctx, shard.len())?;
            let picked = rank.select_if(shard, &mut out, pred)?;
            let mut exact = uninit::<T>(ctx, picked.count as usize)?;
            ctx.copy(&out.slice(..picked.count as usize), &mut exact)?;
            let lengths = rank
                .communicator()
                .all_gather_checked("select_if", Ok(vec![picked.count]))?;
            Ok((
                (rank.rank(), exact),
                lengths.into_iter().map(|l| l[0]).collect::<Vec<_>>(),
            ))
        })?;
        let lengths = kept[0].1.clone();
        Ok(Sharded::from_parts(
            kept.into_iter().map(|k| k.0).collect(),
            lengths,
        ))
    }
}
