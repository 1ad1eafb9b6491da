//! Reduce across ranks: any operator, combined in rank order; NCCL's all-reduce where it
//! computes the same thing.

use super::comm::uninit;
use super::{Group, Rank, Sharded};
use crate::cuda::memory::DeviceMem;
use crate::cuda::nccl::{self, Reduction};
use crate::error::{Error, Result};
use crate::{Buffer, Element, Op, Source};
use std::any::TypeId;

impl Rank {
    /// The reduction of every rank's `input`, in rank order (`op` need not be commutative), on
    /// every rank: what the single-context [`reduce`](crate::Context::reduce) gives on the
    /// concatenation. Collective. The shards' results are gathered and folded in rank order;
    /// over NCCL, `plus`, `maximum` and `minimum` of built-in integers go through NCCL's
    /// all-reduce instead (the same result: integer sums wrap in any order).
    ///
    /// ```
    /// use mgpu::{dist::Group, Op};
    /// let group = Group::cpu(2);
    /// let sums = group.run(|rank| {
    ///     let mine = rank.context().upload(&[rank.rank() as u32 + 1; 4])?;
    ///     rank.reduce(&mine, &Op::plus())
    /// })?;
    /// assert_eq!(sums, vec![12, 12]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn reduce<T: Element>(&self, input: &impl Source<T>, op: &Op<T>) -> Result<T> {
        let comm = self.communicator();
        let ctx = self.context();
        if self.one_device && self.world_size() > 1 {
            return self.reduce_in_turn(input, op);
        }
        let local = ctx.reduce(input, op);
        if let (Some(nccl_comm), Some((data_type, reduction))) =
            (comm.nccl_comm(), nccl_reduction(op))
        {
            // Every rank's input checked out before any value moves.
            let (status, value) = match local {
                Ok(v) => (Ok(Vec::new()), v),
                Err(e) => (Err(e), op.identity()),
            };
            comm.all_gather_checked::<u8>("reduce", status)?;
            let gpu = &nccl_comm.gpu;
            let slot = DeviceMem::alloc(gpu, std::mem::size_of::<T>())?;
            slot.upload(0, &[value])?;
            nccl_comm.all_reduce(slot.ptr, 1, data_type, reduction)?;
            nccl_comm.wait("reduce", self.rank(), comm.timeout())?;
            let mut out = [value];
            slot.download(0, &mut out)?;
            return Ok(out[0]);
        }
        let all = comm.all_gather_checked("reduce", local.map(|v| vec![v]))?;
        Ok(all.iter().fold(op.identity(), |a, v| op.apply(a, v[0])))
    }

    /// [`reduce`](Rank::reduce) on ranks sharing one GPU: they reduce one after another (each
    /// stream waits for the one before; run together, their kernels share the SMs in waves that
    /// end unevenly), each into its place of a list of the totals so far that it passes on, and
    /// the host waits once, for the last rank's list.
    fn reduce_in_turn<T: Element>(&self, input: &impl Source<T>, op: &Op<T>) -> Result<T> {
        let (comm, ctx, me) = (self.communicator(), self.context(), self.rank());
        let last = self.world_size() - 1;
        let totals = comm.in_turn(ctx, "reduce", |before: Option<&Buffer<T>>| {
            let mut totals = uninit(ctx, me + 1)?;
            if let Some(before) = before {
                ctx.copy(before, &mut totals.slice_mut(..me))?;
            }
            ctx.reduce_to_device(input, op, &mut totals.slice_mut(me..))?;
            Ok(totals)
        });
        let whole = match totals {
            Ok(t) if me == last => t
                .to_vec()
                .map(|t| vec![t.into_iter().fold(op.identity(), |a, v| op.apply(a, v))]),
            other => other.map(|_| Vec::new()),
        };
        Ok(comm.all_gather_checked("reduce", whole)?[last][0])
    }

    /// [`reduce`](Rank::reduce) with the result on rank `root` only (`None` on the others).
    ///
    /// ```
    /// use mgpu::{dist::Group, Op};
    /// let group = Group::cpu(3);
    /// let at_root = group.run(|rank| {
    ///     let mine = rank.context().upload(&[rank.rank() as i32])?;
    ///     rank.reduce_to(&mine, &Op::maximum(), 1)
    /// })?;
    /// assert_eq!(at_root, vec![None, Some(2), None]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn reduce_to<T: Element>(
        &self,
        input: &impl Source<T>,
        op: &Op<T>,
        root: usize,
    ) -> Result<Option<T>> {
        if root >= self.world_size() {
            // The same on every rank: all return it, none waits.
            return Err(Error::InvalidArgument(format!(
                "reduce_to: root {root} is not a rank of a group of {}",
                self.world_size()
            )));
        }
        let value = self.reduce(input, op)?;
        Ok((self.rank() == root).then_some(value))
    }
}

impl Group {
    /// The reduction of all of `data`, in order ([`Rank::reduce`] on every rank).
    ///
    /// ```
    /// use mgpu::{dist::{Group, Sharded}, Op};
    /// let group = Group::cpu(4);
    /// let data = Sharded::scatter(&group, &[3.0f64, 1.0, 4.0, 1.0, 5.0])?;
    /// assert_eq!(group.reduce(&data, &Op::maximum())?, 5.0);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn reduce<T: Element>(&self, data: &Sharded<T>, op: &Op<T>) -> Result<T> {
        data.check(self, "reduce: the data")?;
        let all = self.run(|rank| rank.reduce(data.local(rank), op))?;
        Ok(all[0])
    }
}

/// NCCL's reduction of `op`, where `op` is the library's own `plus`, `maximum` or `minimum` of an
/// integer type NCCL has (floating point keeps the rank-order fold: NCCL's order of sums and its
/// NaN rules differ).
fn nccl_reduction<T: Element>(
    op: &Op<T>,
) -> Option<(cudarc::nccl::sys::ncclDataType_t, Reduction)> {
    macro_rules! builtin {
        ($($t:ty),*) => {$(
            if TypeId::of::<T>() == TypeId::of::<$t>() {
                let same = |b: Op<$t>| {
                    b.name() == op.name()
                        && b.cuda_expression() == op.cuda_expression()
                        && bytemuck::bytes_of(&b.identity()) == bytemuck::bytes_of(&op.identity())
                };
                let reduction = if same(Op::<$t>::plus()) {
                    Reduction::Sum
                } else if same(Op::<$t>::maximum()) {
                    Reduction::Max
                } else if same(Op::<$t>::minimum()) {
                    Reduction::Min
                } else {
                    return None;
                };
                return Some((nccl::data_type::<T>()?, reduction));
            }
        )*};
    }
    builtin!(i8, u8, i32, u32, i64, u64);
    None
}
