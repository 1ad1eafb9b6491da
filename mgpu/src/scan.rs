//! Scan: prefix sums under any associative operator (the seed's `Scan`), exclusive or inclusive,
//! out of place or in place, optionally after a carry-in, with the total to the host and/or
//! device memory.

use crate::buffer::{check_place, length_mismatch, output, View, ViewMut};
use crate::context::Backend;
use crate::cuda;
use crate::cuda::jit::Load;
use crate::cuda::memory::DeviceMem;
use crate::error::LengthRule::AtLeast;
use crate::error::{Error, LengthRule, Result};
use crate::source::{Source, SourceParts};
use crate::tuning::{self, Family, Tuning};
use crate::{cpu, Context, Element, Op, Slice, SliceMut, Total};

/// Exclusive (`out[i] = in[0] op .. op in[i-1]`, `out[0]` the identity) or inclusive
/// (`out[i] = in[0] op .. op in[i]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScanKind {
    /// Each output excludes its own input.
    #[default]
    Exclusive,
    /// Each output includes its own input.
    Inclusive,
}

/// The device-wide scan algorithm (the CPU backend has one, deterministic, algorithm).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ScanAlgorithm {
    /// Single pass with decoupled look-back: about 2n memory traffic, the fastest. Tiles combine
    /// in the order the look-back finds them, so floating-point results can differ in the last
    /// bits from run to run.
    #[default]
    LookBack,
    /// Upsweep / spine / downsweep (reads the input twice: about 3n traffic). The grouping of
    /// operations depends only on the size and the device, so results are run-to-run
    /// deterministic for floating point.
    ReduceThenScan,
}

/// Options of a scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanOptions {
    /// Exclusive or inclusive.
    pub kind: ScanKind,
    /// Look-back (default) or reduce-then-scan.
    pub algorithm: ScanAlgorithm,
    /// Overrides the tuning table.
    pub tuning: Option<Tuning>,
}

impl ScanOptions {
    /// An exclusive look-back scan.
    pub fn exclusive() -> Self {
        ScanOptions::default()
    }
    /// An inclusive look-back scan.
    pub fn inclusive() -> Self {
        ScanOptions {
            kind: ScanKind::Inclusive,
            ..Default::default()
        }
    }
    /// Run-to-run deterministic results (reduce-then-scan).
    pub fn deterministic(mut self) -> Self {
        self.algorithm = ScanAlgorithm::ReduceThenScan;
        self
    }
    /// With a tuning override.
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = Some(tuning);
        self
    }
}

/// A scan's carry-in: the value that goes before the first element, so that a scan continues
/// another one (the previous chunk of a stream, the previous rank's shard). The scan is then that
/// of `[carry_in, input...]` without its first output: an exclusive scan's first output is the
/// carry-in, an inclusive scan's is `carry_in op input[0]`, and the total includes the carry-in.
pub enum CarryIn<'a, T: Element> {
    /// No carry-in: the plain scan.
    None,
    /// A value from the host.
    Host(T),
    /// Element 0 of a buffer or view on the context's backend, read in stream order (no wait):
    /// a total written to the device by an earlier reduce or scan.
    Device(&'a dyn Slice<T>),
}

/// A validated carry-in.
enum CarryFrom<'a, T: Element> {
    Host(T),
    Device(View<'a, T>),
}

impl<'a, T: Element> CarryIn<'a, T> {
    fn validate(self, ctx: &Context) -> Result<Option<CarryFrom<'a, T>>> {
        match self {
            CarryIn::None => Ok(None),
            CarryIn::Host(v) => Ok(Some(CarryFrom::Host(v))),
            CarryIn::Device(s) => {
                let v = s.view();
                check_place(ctx, &v.at, "the carry-in")?;
                if v.is_empty() {
                    return Err(Error::LengthMismatch {
                        call: "scan",
                        argument: "the carry-in",
                        actual: 0,
                        expected: 1,
                        of: "",
                        rule: LengthRule::AtLeast,
                    });
                }
                Ok(Some(CarryFrom::Device(v)))
            }
        }
    }
}

impl Context {
    /// Scans `input` into the first `input.len()` elements of `output`. `input` is a buffer, a
    /// view, a mapped input (`x.map(&f)`: transform-scan, whose input and output types may
    /// differ) or a [`Counting`](crate::Counting) sequence.
    ///
    /// ```
    /// use mgpu::{Context, Map, Op, ScanOptions};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[1, 7, 4, 0, 9])?;
    /// let mut out = ctx.zeros::<i32>(5)?;
    /// ctx.scan(&input, &mut out, &Op::plus(), ScanOptions::exclusive())?;
    /// assert_eq!(out.to_vec()?, vec![0, 1, 8, 12, 12]);
    /// // Running sums of squares, widened to i64 as they are loaded, into a view:
    /// let mut wide = ctx.zeros::<i64>(6)?;
    /// let sq = Map::new("sq64", |x: i32| (x as i64) * (x as i64), "(long long)x * x");
    /// ctx.scan(&input.map(&sq), &mut wide.slice_mut(1..), &Op::plus(), ScanOptions::inclusive())?;
    /// assert_eq!(wide.to_vec()?, vec![0, 1, 50, 66, 66, 147]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn scan<T: Element>(
        &self,
        input: &impl Source<T>,
        output: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
    ) -> Result<()> {
        self.scan_with(input, output, op, options, Total::None)
            .map(|_| ())
    }

    /// Scans `data` in place.
    ///
    /// ```
    /// use mgpu::{Context, Op, ScanOptions};
    /// let ctx = Context::cpu();
    /// let mut data = ctx.upload(&[3, 1, 2])?;
    /// ctx.scan_in_place(&mut data, &Op::maximum(), ScanOptions::inclusive())?;
    /// assert_eq!(data.to_vec()?, vec![3, 3, 3]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn scan_in_place<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
    ) -> Result<()> {
        self.scan_in_place_with(data, op, options, Total::None)
            .map(|_| ())
    }

    /// Scans `input` into `output` and delivers the total (the reduction of the input) where
    /// `total` says; returns it when it goes to the host.
    ///
    /// ```
    /// use mgpu::{Context, Op, ScanOptions, Total};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[2u32, 2, 2])?;
    /// let mut out = ctx.zeros::<u32>(3)?;
    /// let total = ctx.scan_with(&input, &mut out, &Op::plus(), ScanOptions::exclusive(), Total::Host)?;
    /// assert_eq!(total, Some(6));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn scan_with<T: Element>(
        &self,
        input: &impl Source<T>,
        output: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
        total: Total<'_, T>,
    ) -> Result<Option<T>> {
        self.scan_with_carry(input, output, op, options, CarryIn::None, total)
    }

    /// [`scan_with`](Context::scan_with) after a carry-in (see [`CarryIn`]): the scan goes on
    /// from `carry_in` as if it were an element before the input, and the total includes it.
    ///
    /// ```
    /// use mgpu::{CarryIn, Context, Op, ScanOptions, Total};
    /// let ctx = Context::cpu();
    /// let input = ctx.upload(&[1, 2, 3])?;
    /// let mut out = ctx.zeros::<i32>(3)?;
    /// let total = ctx.scan_with_carry(&input, &mut out, &Op::plus(), ScanOptions::exclusive(),
    ///                                 CarryIn::Host(10), Total::Host)?;
    /// assert_eq!((out.to_vec()?, total), (vec![10, 11, 13], Some(16)));
    /// // The carry from device memory, e.g. the total of a previous chunk, without a read-back:
    /// let mut carry = ctx.zeros::<i32>(1)?;
    /// ctx.reduce_to_device(&input, &Op::plus(), &mut carry)?;
    /// ctx.scan_with_carry(&input, &mut out, &Op::plus(), ScanOptions::inclusive(),
    ///                     CarryIn::Device(&carry), Total::None)?;
    /// assert_eq!(out.to_vec()?, vec![7, 9, 12]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn scan_with_carry<T: Element>(
        &self,
        input: &impl Source<T>,
        output: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
        carry_in: CarryIn<'_, T>,
        total: Total<'_, T>,
    ) -> Result<Option<T>> {
        let (input, output) = scan_args(self, input, output)?;
        let carry = carry_in.validate(self)?;
        self.scan_impl(Some(input), output, op, options, carry, total)
    }

    /// [`scan_in_place_with`](Context::scan_in_place_with) after a carry-in (see [`CarryIn`]).
    ///
    /// ```
    /// use mgpu::{CarryIn, Context, Op, ScanOptions, Total};
    /// let ctx = Context::cpu();
    /// let mut data = ctx.upload(&[5, 1, 7])?;
    /// ctx.scan_in_place_with_carry(&mut data, &Op::maximum(), ScanOptions::inclusive(),
    ///                              CarryIn::Host(6), Total::None)?;
    /// assert_eq!(data.to_vec()?, vec![6, 6, 7]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn scan_in_place_with_carry<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
        carry_in: CarryIn<'_, T>,
        total: Total<'_, T>,
    ) -> Result<Option<T>> {
        let data = output(self, data, "the data")?;
        let carry = carry_in.validate(self)?;
        self.scan_impl(None, data, op, options, carry, total)
    }

    /// [`scan_in_place`](Context::scan_in_place) with the total delivered where `total` says.
    pub fn scan_in_place_with<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
        total: Total<'_, T>,
    ) -> Result<Option<T>> {
        self.scan_in_place_with_carry(data, op, options, CarryIn::None, total)
    }

    fn scan_impl<T: Element>(
        &self,
        input: Option<SourceParts<'_, T>>,
        mut output: ViewMut<'_, T>,
        op: &Op<T>,
        options: ScanOptions,
        carry: Option<CarryFrom<'_, T>>,
        total: Total<'_, T>,
    ) -> Result<Option<T>> {
        let total = total.validate(self)?;
        let mut tuning = tuning::resolve(
            Family::Scan,
            self.arch(),
            std::mem::size_of::<T>(),
            options.tuning,
        )?;
        if options.tuning.is_none() && input.as_ref().is_some_and(|s| s.computed()) {
            tuning = crate::cuda::scan::computed_input_tuning(tuning);
        }
        let exclusive = options.kind == ScanKind::Exclusive;
        match &self.backend {
            Backend::Cpu => {
                let carry_in = match &carry {
                    None => op.identity(),
                    Some(CarryFrom::Host(v)) => *v,
                    Some(CarryFrom::Device(v)) => v.at.host().expect("validated")[0],
                };
                let out = output.host_mut().expect("validated");
                let value = match &input {
                    Some(src) => {
                        let out = &mut out[..src.len];
                        cpu::fill(src.host(), out);
                        cpu::scan_in_place_from(out, op, exclusive, carry_in)
                    }
                    None => cpu::scan_in_place_from(out, op, exclusive, carry_in),
                };
                total.deliver_host(value)
            }
            Backend::Cuda(gpu) => {
                let (out_home, out) = output.at.device().expect("validated");
                let plain = Load::plain::<T>();
                let (arg, load, in_home) = match &input {
                    Some(src) => src.device(),
                    None => (out, &plain, None),
                };
                let count = input.as_ref().map_or(output.len(), |s| s.len) as u64;
                let carry_home = match &carry {
                    Some(CarryFrom::Device(v)) => v.at.device().map(|d| d.0),
                    _ => None,
                };
                let homes: Vec<_> = [Some(out_home), in_home, total.home(), carry_home]
                    .into_iter()
                    .flatten()
                    .collect();
                let slot = gpu.ordered(&homes, || {
                    let slot = total.device_slot(gpu)?;
                    // A host carry-in goes to device memory: the kernels read it there.
                    let (carry_ptr, _staged) = match &carry {
                        None => (0, None),
                        Some(CarryFrom::Host(v)) => {
                            let staged = DeviceMem::alloc(gpu, std::mem::size_of::<T>())?;
                            staged.upload(0, std::slice::from_ref(v))?;
                            (staged.ptr, Some(staged))
                        }
                        Some(CarryFrom::Device(v)) => (v.at.device().expect("validated").1, None),
                    };
                    cuda::scan::scan(
                        gpu,
                        (arg, load),
                        out,
                        count,
                        op,
                        exclusive,
                        options.algorithm,
                        slot.0,
                        carry_ptr,
                        &tuning,
                    )?;
                    Ok(slot)
                })?;
                total.finish_device(&slot)
            }
        }
    }
}

/// A scan's input and output, checked: both on the context's backend, the output at least as
/// long as the input.
pub(crate) fn scan_args<'i, 'o, T: Element>(
    ctx: &Context,
    input: &'i impl Source<T>,
    output: &'o mut impl SliceMut<T>,
) -> Result<(SourceParts<'i, T>, ViewMut<'o, T>)> {
    let input = input.parts();
    input.check(ctx, "the input")?;
    let output = crate::buffer::output(ctx, output, "the output")?;
    if output.len() < input.len {
        return Err(length_mismatch(
            AtLeast,
            "scan",
            "the output",
            output.len(),
            input.len,
            "the input",
        ));
    }
    Ok((input, output))
}
