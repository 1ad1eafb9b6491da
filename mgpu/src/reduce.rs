//! Reduce: fold a sequence with an associative operator (the seed's `Reduce`).

use crate::context::{check_backend, Backend, Place};
use crate::cuda::{self, memory::DeviceMem};
use crate::error::{invalid, Result};
use crate::tuning::{self, Family, Tuning};
use crate::{cpu, Buffer, Context, Element, Op};

/// Where a total (a reduction, or a scan's total) is delivered.
pub enum Total<'a, T: Element> {
    /// Not wanted.
    None,
    /// Returned to the host (the call waits for the GPU).
    Host,
    /// Written to element 0 of a buffer, without waiting.
    Device(&'a mut Buffer<T>),
    /// Both: written to element 0 of the buffer and returned to the host.
    Both(&'a mut Buffer<T>),
}

impl<T: Element> Total<'_, T> {
    pub(crate) fn device(&self) -> Option<&Buffer<T>> {
        match self {
            Total::Device(b) | Total::Both(b) => Some(b),
            _ => None,
        }
    }
    pub(crate) fn wants_host(&self) -> bool {
        matches!(self, Total::Host | Total::Both(_))
    }
    pub(crate) fn wanted(&self) -> bool {
        !matches!(self, Total::None)
    }

    /// Checks the device destination before anything runs.
    pub(crate) fn validate(&self, ctx: &Context) -> Result<()> {
        if let Some(b) = self.device() {
            check_backend(ctx, b, "the total's buffer")?;
            if b.is_empty() {
                return invalid("the total's buffer is empty: it needs room for one element");
            }
        }
        Ok(())
    }

    /// CPU backend: deliver a computed total.
    pub(crate) fn deliver_host(self, value: T) -> Result<Option<T>> {
        let host = self.wants_host();
        if let Total::Device(b) | Total::Both(b) = self {
            if let crate::context::Storage::Host(v) = &mut b.storage {
                v[0] = value;
            }
        }
        Ok(host.then_some(value))
    }

    /// GPU backend: the device address the kernel should write the total to, and a temporary
    /// holding it when the caller gave no buffer.
    pub(crate) fn device_slot(&self, ctx: &Context) -> Result<(u64, Option<DeviceMem>)> {
        if let Some(b) = self.device() {
            if let Place::Device(m) = b.place() {
                return Ok((m.ptr, None));
            }
        }
        if self.wants_host() {
            let tmp = DeviceMem::alloc(ctx.gpu().unwrap(), std::mem::size_of::<T>())?;
            return Ok((tmp.ptr, Some(tmp)));
        }
        Ok((0, None))
    }

    /// GPU backend: read the total back if the host wants it.
    pub(crate) fn finish_device(&self, slot: &(u64, Option<DeviceMem>)) -> Result<Option<T>> {
        if !self.wants_host() {
            return Ok(None);
        }
        let mem = match (&slot.1, self.device()) {
            (Some(tmp), _) => tmp,
            (None, Some(b)) => match b.place() {
                Place::Device(m) => m,
                Place::Host(_) => unreachable!("validated"),
            },
            (None, None) => unreachable!("a host total always has a slot"),
        };
        let mut v = [T::zeroed()];
        mem.download(0, &mut v)?;
        Ok(Some(v[0]))
    }
}

impl Context {
    /// Reduces `input` with `op` and returns the result to the host (the identity when empty).
    ///
    /// ```
    /// use mgpu::{Context, Op};
    /// let ctx = Context::cpu();
    /// let data = ctx.upload(&[276, 705, 679, 2])?;
    /// assert_eq!(ctx.reduce(&data, &Op::maximum())?, 705);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn reduce<T: Element>(&self, input: &Buffer<T>, op: &Op<T>) -> Result<T> {
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
        input: &Buffer<T>,
        op: &Op<T>,
        out: &mut Buffer<T>,
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
        input: &Buffer<T>,
        op: &Op<T>,
        to: Total<'_, T>,
        tuning: Option<Tuning>,
    ) -> Result<Option<T>> {
        check_backend(self, input, "the input")?;
        to.validate(self)?;
        let tuning = tuning::resolve(
            Family::Reduce,
            self.arch(),
            std::mem::size_of::<T>(),
            tuning,
        )?;
        match &self.backend {
            Backend::Cpu => {
                let Place::Host(data) = input.place() else {
                    unreachable!("validated")
                };
                let value = cpu::reduce(data, op);
                to.deliver_host(value)
            }
            Backend::Cuda(gpu) => {
                if !to.wanted() {
                    return Ok(None);
                }
                let Place::Device(mem) = input.place() else {
                    unreachable!("validated")
                };
                let slot = to.device_slot(self)?;
                cuda::reduce::reduce(gpu, mem.ptr, input.len() as u64, op, slot.0, &tuning)?;
                to.finish_device(&slot)
            }
        }
    }
}
