//! Scan: prefix sums under any associative operator (the seed's `Scan`), exclusive or inclusive,
//! out of place or in place, with the total to the host and/or device memory.

use crate::buffer::{length_mismatch, output, ViewMut};
use crate::context::Backend;
use crate::cuda;
use crate::cuda::jit::Load;
use crate::error::LengthRule::AtLeast;
use crate::error::Result;
use crate::source::{Source, SourceParts};
use crate::tuning::{self, Family, Tuning};
use crate::{cpu, Context, Element, Op, SliceMut, Total};

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
        let input = input.parts();
        input.check(self, "the input")?;
        let output = crate::buffer::output(self, output, "the output")?;
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
        self.scan_impl(Some(input), output, op, options, total)
    }

    /// [`scan_in_place`](Context::scan_in_place) with the total delivered where `total` says.
    pub fn scan_in_place_with<T: Element>(
        &self,
        data: &mut impl SliceMut<T>,
        op: &Op<T>,
        options: ScanOptions,
        total: Total<'_, T>,
    ) -> Result<Option<T>> {
        let data = output(self, data, "the data")?;
        self.scan_impl(None, data, op, options, total)
    }

    fn scan_impl<T: Element>(
        &self,
        input: Option<SourceParts<'_, T>>,
        mut output: ViewMut<'_, T>,
        op: &Op<T>,
        options: ScanOptions,
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
                let out = output.host_mut().expect("validated");
                let value = match &input {
                    Some(src) => {
                        let out = &mut out[..src.len];
                        cpu::fill(src.host(), out);
                        cpu::scan_in_place(out, op, exclusive)
                    }
                    None => cpu::scan_in_place(out, op, exclusive),
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
                let homes: Vec<_> = [Some(out_home), in_home, total.home()]
                    .into_iter()
                    .flatten()
                    .collect();
                let slot = gpu.ordered(&homes, || {
                    let slot = total.device_slot(gpu)?;
                    cuda::scan::scan(
                        gpu,
                        (arg, load),
                        out,
                        count,
                        op,
                        exclusive,
                        options.algorithm,
                        slot.0,
                        &tuning,
                    )?;
                    Ok(slot)
                })?;
                total.finish_device(&slot)
            }
        }
    }
}
