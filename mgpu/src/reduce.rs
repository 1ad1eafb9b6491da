//! Reduce: fold a sequence with an associative operator (the seed's `Reduce`), over a buffer, a
//! view, a mapped input (transform-reduce) or a counting sequence.

use crate::buffer::{check_place, ViewMut};
use crate::context::{Backend, Context};
use crate::cuda::{self, memory::DeviceMem, Gpu};
use crate::error::{Error, LengthRule, Result};
use crate::source::Source;
use crate::tuning::{self, Family, Tuning};
use crate::{cpu, Element, Op, Slice, SliceMut};
use std::sync::Arc;

/// Where a total (a reduction, or a scan's total) is delivered.
pub enum Total<'a, T: Element> {
    /// Not wanted.
    None,
    /// Returned to the host (the call waits for the GPU).
    Host,
    /// Written to element 0 of a buffer or view, without waiting.
    Device(&'a mut dyn SliceMut<T>),
    /// Both: written to element 0 of the buffer or view and returned to the host.
    Both(&'a mut dyn SliceMut<T>),
}

/// A validated total destination.
pub(crate) struct TotalTo<'a, T: Element> {
    device: Option<ViewMut<'a, T>>,
    host: bool,
}

impl<'a, T: Element> Total<'a, T> {
    /// Checks the device destination before anything runs.
    pub(crate) fn validate(self, ctx: &Context) -> Result<TotalTo<'a, T>> {
        let host = matches!(self, Total::Host | Total::Both(_));
        let device = match self {
            Total::Device(b) | Total::Both(b) => Some(b.view_mut()),
            _ => None,
        };
        if let Some(d) = &device {
            check_place(ctx, &d.view().at, "the total's buffer")?;
            if d.is_empty() {
                return Err(Error::LengthMismatch {
                    call: "",
                    argument: "the total's buffer",
                    actual: 0,
                    expected: 1,
                    of: "",
                    rule: LengthRule::AtLeast,
                });
            }
        }
        Ok(TotalTo { device, host })
    }
}

impl<T: Element> TotalTo<'_, T> {
    pub(crate) fn wanted(&self) -> bool {
        self.host || self.device.is_some()
    }

    /// The stream the device destination lives on, if any.
    pub(crate) fn home(&self) -> Option<&Arc<Gpu>> {
        self.device
            .as_ref()
            .and_then(|d| d.at.device())
            .map(|d| d.0)
    }

    /// CPU backend: deliver a computed total.
    pub(crate) fn deliver_host(mut self, value: T) -> Result<Option<T>> {
        if let Some(out) = self.device.as_mut().and_then(|d| d.host_mut()) {
            out[0] = value;
        }
        Ok(self.host.then_some(value))
    }

    /// Delivers a total already known on the host, on either backend: written to the device
    /// destination (on the GPU, in order with the context's stream) and returned if wanted.
    pub(crate) fn deliver(self, ctx: &Context, value: T) -> Result<Option<T>> {
        match &ctx.backend {
            Backend::Cpu => self.deliver_host(value),
            Backend::Cuda(gpu) => {
                if let Some((home, ptr)) = self.device.as_ref().and_then(|d| d.at.device()) {
                    gpu.ordered(&[home], || gpu.upload(ptr, &[value]))?;
                }
                Ok(self.host.then_some(value))
            }
        }
    }

    /// GPU backend: the device address the kernel should write the total to (0: none), and a
    /// temporary holding it when the caller gave no buffer.
    pub(crate) fn device_slot(&self, gpu: &Arc<Gpu>) -> Result<(u64, Option<DeviceMem>)> {
        if let Some((_, ptr)) = self.device.as_ref().and_then(|d| d.at.device()) {
            return Ok((ptr, None));
        }
        if self.host {
            let tmp = DeviceMem::alloc(gpu, std::mem::size_of::<T>())?;
            return Ok((tmp.ptr, Some(tmp)));
        }
        Ok((0, None))
    }

    /// GPU backend: read the total back if the host wants it.
    pub(crate) fn finish_device(&self, slot: &(u64, Option<DeviceMem>)) -> Result<Option<T>> {
        if !self.host {
            return Ok(None);
        }
        let mut v = [T::zeroed()];
        match (&slot.1, self.home()) {
            (Some(tmp), _) => tmp.download(0, &mut v)?,
            (None, Some(home)) => home.download(slot.0, &mut v)?,
            (None, None) => unreachable!("a host total always has a slot"),
        }
        Ok(Some(v[0]))
    }
}

impl Context {
    /// Reduces `input` with `op` and returns the result to the host (the identity when empty).
    /// `input` is a buffer, a view, a mapped input (`x.map(&f)`: transform-reduce) or a
    /// [`Counting`](crate::Counting) sequence.
    ///
    /// ```
    /// use mgpu::{Context, Map, Op};
    /// let ctx = Context::cpu();
    /// let data = ctx.upload(&[276, 705, 679, 2])?;
    /// assert_eq!(ctx.reduce(&data, &Op::maximum())?, 705);
    /// assert_eq!(ctx.reduce(&data.slice(2..), &Op::plus())?, 681);
    /// assert_eq!(ctx.reduce(&data.map(&Map::square()), &Op::plus())?, 1_034_246);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn reduce<T: Element>(&self, input: &impl Source<T>, op: &Op<T>) -> Result<T> {
        Ok(self
            .reduce_with(input, op, Total::Host, None)?
            .expect("host total requested"))
    }

    /// Reduces `input` into element 0 of `out`, without waiting for the GPU.
    ///
    /// ```
    /// use mgpu::{Context, Op};
    /// let ctx = Context::cpu();
    /// let data = ctx.upload(&[1u64, 2, 3])?;
    /// let mut out = ctx.zeros::<u64>(1)?;
    /// ctx.reduce_to_device(&data, &Op::multiplies(), &mut out)?;
    /// assert_eq!(out.to_vec()?, vec![6]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn reduce_to_device<T: Element>(
        &self,
        input: &impl Source<T>,
        op: &Op<T>,
        out: &mut impl SliceMut<T>,
    ) -> Result<()> {
        self.reduce_with(input, op, Total::Device(out), None)
            .map(|_| ())
    }

    /// The general form: the result goes where `to` says; `tuning` overrides the table.
    /// Returns the result when `to` asks for it on the host.
    ///
    /// ```
    /// use mgpu::{Context, Op, Total};
    /// let ctx = Context::cpu();
    /// let data = ctx.upload(&[5i32, -2, 9])?;
    /// let mut out = ctx.zeros::<i32>(1)?;
    /// let host = ctx.reduce_with(&data, &Op::minimum(), Total::Both(&mut out), None)?;
    /// assert_eq!(host, Some(-2));
    /// assert_eq!(out.to_vec()?, vec![-2]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn reduce_with<T: Element>(
        &self,
        input: &impl Source<T>,
        op: &Op<T>,
        to: Total<'_, T>,
        tuning: Option<Tuning>,
    ) -> Result<Option<T>> {
        let input = input.parts();
        input.check(self, "the input")?;
        let to = to.validate(self)?;
        let tuning = tuning::resolve(
            Family::Reduce,
            self.arch(),
            std::mem::size_of::<T>(),
            tuning,
        )?;
        match &self.backend {
            Backend::Cpu => to.deliver_host(cpu::reduce_source(input.host(), input.len, op)),
            Backend::Cuda(gpu) => {
                if !to.wanted() {
                    return Ok(None);
                }
                let (arg, load, home) = input.device();
                let homes: Vec<_> = [home, to.home()].into_iter().flatten().collect();
                let slot = gpu.ordered(&homes, || {
                    let slot = to.device_slot(gpu)?;
                    cuda::reduce::reduce(gpu, arg, load, input.len as u64, op, slot.0, &tuning)?;
                    Ok(slot)
                })?;
                to.finish_device(&slot)
            }
        }
    }
}
