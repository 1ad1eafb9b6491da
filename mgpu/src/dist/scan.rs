//! Scan across ranks: the shards' totals are exchanged, then each rank scans its shard after
//! the carry-in of the ranks before it.

use super::comm::uninit;
use super::{Group, Rank, Sharded};
use crate::buffer::check_place;
use crate::error::Result;
use crate::{Buffer, CarryIn, Element, Op, ScanOptions, Slice, SliceMut, Source, Total};
use std::cell::RefCell;
use std::sync::Mutex;

impl Rank {
    /// Scans the whole sequence (every rank's `input`, in rank order) into each rank's
    /// `output` (at least as long as its input), with any operator: rank `r`'s outputs are
    /// those of the single-context scan of the concatenation at its positions. Returns the total
    /// of the whole, on every rank. Collective; on bad input on any rank, every rank returns an
    /// error and no output is written.
    ///
    /// Each rank reduces its shard, the totals are gathered, and each scans its shard after the
    /// fold of the totals before it ([`CarryIn`]): the input is read twice. Where the ranks
    /// share one device, and the bytes they move together set the time, they scan one after
    /// another instead, each after the total of the ones before it, read on the device: the
    /// input is read once, as by one context's scan.
    ///
    /// ```
    /// use mgpu::{dist::Group, Op, ScanOptions};
    /// let group = Group::cpu(2);
    /// let outs = group.run(|rank| {
    ///     let (input, mut out) = (rank.context().upload(&[1, 2, 3])?, rank.context().zeros(3)?);
    ///     let total = rank.scan(&input, &mut out, &Op::plus(), ScanOptions::exclusive())?;
    ///     Ok((out.to_vec()?, total))
    /// })?;
    /// assert_eq!(outs, vec![(vec![0, 1, 3], 12), (vec![6, 7, 9], 12)]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    // Context::scan's public parameters: the signatures repeat.
    pub fn scan<T: Element>(
        &self,
        input: &impl Source<T>,
        output: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
    ) -> Result<T> {
        let ctx = self.context();
        let checked = crate::scan::scan_args(ctx, input, output).map(|_| ());
        let output = RefCell::new(output);
        self.scan_parts(
            op,
            checked,
            || ctx.reduce(input, op),
            |carry, total| {
                let mut output = output.borrow_mut();
                ctx.scan_with_carry(input, &mut **output, op, options, carry, total)
            },
        )
    }

    /// [`scan`](Rank::scan) in place.
    pub fn scan_in_place<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
    ) -> Result<T> {
        let ctx = self.context();
        let checked = check_place(ctx, &data.view().at, "scan: the data");
        let data = RefCell::new(data);
        self.scan_parts(
            op,
            checked,
            || ctx.reduce(&data.borrow().view(), op),
            |carry, total| {
                let mut data = data.borrow_mut();
                ctx.scan_in_place_with_carry(&mut **data, op, options, carry, total)
            },
        )
    }

    /// The collective steps of a scan, given this rank's checks, its reduce, and its scan
    /// (with a carry-in, and whether to return the total): every rank's checks are gathered
    /// before anything is written, then the totals, then the ranks scan after the fold of the
    /// totals before them. Returns the fold of all of them.
    fn scan_parts<T: Element>(
        &self,
        op: &Op<T>,
        checked: Result<()>,
        reduce: impl FnOnce() -> Result<T>,
        scan: impl Fn(CarryIn<'_, T>, Total<'_, T>) -> Result<Option<T>>,
    ) -> Result<T> {
        let total = |t: Option<T>| t.expect("asked for the total");
        if self.world_size() == 1 {
            checked?;
            return Ok(total(scan(CarryIn::None, Total::Host)?));
        }
        if !self.one_device {
            let (carry, total) = self.carry(op, checked.and_then(|_| reduce()))?;
            scan(CarryIn::Host(carry), Total::None)?;
            return Ok(total);
        }
        // Ranks sharing one GPU, where the bytes moved in all set the time, take turns on it:
        // each scans after the rank before, with that rank's total (which includes its own
        // carry-in) as its carry-in, read on the device in stream order. The input is read once,
        // as by one context's scan, and the host waits once, for the last rank's total.
        let comm = self.communicator();
        let ctx = self.context();
        let last = self.world_size() - 1;
        // Every rank's checks pass before rank 0 writes.
        comm.all_gather_checked::<u8>("scan", checked.map(|_| Vec::new()))?;
        let mine = comm.in_turn(ctx, "scan", |before: Option<&Buffer<T>>| {
            let carry = before.map_or(CarryIn::None, |b| CarryIn::Device(b));
            let mut total = uninit(ctx, 1)?;
            scan(carry, Total::Device(&mut total))?;
            Ok(total)
        });
        let whole = match mine {
            Ok(total) if self.rank() == last => total.to_vec(),
            other => other.map(|_| Vec::new()),
        };
        Ok(comm.all_gather_checked("scan", whole)?[last][0])
    }

    /// The fold of the totals of the ranks before this one, and of all of them.
    fn carry<T: Element>(&self, op: &Op<T>, local: Result<T>) -> Result<(T, T)> {
        let totals = self
            .communicator()
            .all_gather_checked("scan", local.map(|t| vec![t]))?;
        let fold = |ts: &[Vec<T>]| ts.iter().fold(op.identity(), |a, t| op.apply(a, t[0]));
        Ok((fold(&totals[..self.rank()]), fold(&totals)))
    }
}

impl Group {
    /// Scans `input` into `output` (sharded alike, each output shard at least as long as its
    /// input shard); returns the total ([`Rank::scan`] on every rank).
    ///
    /// ```
    /// use mgpu::{dist::{Group, Sharded}, Op, ScanOptions};
    /// let group = Group::cpu(3);
    /// let input = Sharded::scatter(&group, &[1u64, 2, 3, 4, 5])?;
    /// let mut out = Sharded::scatter(&group, &[0u64; 5])?;
    /// let total = group.scan(&input, &mut out, &Op::plus(), ScanOptions::inclusive())?;
    /// assert_eq!((out.gather(&group)?, total), (vec![1, 3, 6, 10, 15], 15));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn scan<T: Element>(
        &self,
        input: &Sharded<T>,
        output: &mut Sharded<T>,
        op: &Op<T>,
        options: ScanOptions,
    ) -> Result<T> {
        input.check(self, "scan: the input")?;
        output.check(self, "scan: the output")?;
        let outputs = output.locals_mut();
        let totals = self.run(|rank| {
            let mut out = outputs[rank.local]
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            rank.scan(input.local(rank), &mut **out, op, options)
        })?;
        Ok(totals[0])
    }

    /// Scans `data` in place; returns the total.
    pub fn scan_in_place<T: Element>(
        &self,
        data: &mut Sharded<T>,
        op: &Op<T>,
        options: ScanOptions,
    ) -> Result<T> {
        data.check(self, "scan: the data")?;
        let shards = data.locals_mut();
        let totals = self.run(|rank| {
            let mut shard = shards[rank.local].lock().unwrap_or_else(|e| e.into_inner());
            rank.scan_in_place(&mut **shard, op, options)
        })?;
        Ok(totals[0])
    }
}

impl<T: Element> Sharded<T> {
    /// This process's shards, each behind a lock, for the per-rank threads to write.
    pub(crate) fn locals_mut(&mut self) -> Vec<Mutex<&mut crate::Buffer<T>>> {
        self.shards_mut()
            .iter_mut()
            .map(|(_, b)| Mutex::new(b))
            .collect()
    }
}
