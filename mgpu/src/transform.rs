//! Copy and sequence: writing any [`Source`] to memory (Thrust's `copy`, `transform` and
//! `sequence`).

use crate::buffer::{length_mismatch, output};
use crate::context::Backend;
use crate::cuda;
use crate::error::LengthRule::AtLeast;
use crate::error::Result;
use crate::source::Source;
use crate::tuning::{self, Family};
use crate::{cpu, Arithmetic, Context, Counting, Element, SliceMut};

impl Context {
    /// Writes `src` to the first `src.len()` elements of `dst`: a device-to-device copy when `src`
    /// is a buffer or view; one pass that maps (Thrust's `transform`) or generates (`sequence`)
    /// otherwise.
    ///
    /// ```
    /// use mgpu::{Context, Map};
    /// let ctx = Context::cpu();
    /// let x = ctx.upload(&[1.5f32, -2.0])?;
    /// let mut y = ctx.zeros::<f64>(3)?;
    /// let widen = Map::new("widen", |x: f32| x as f64 * 2.0, "(double)x * 2.0");
    /// ctx.copy(&x.map(&widen), &mut y.slice_mut(1..))?;
    /// assert_eq!(y.to_vec()?, vec![0.0, 3.0, -4.0]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn copy<T: Element>(&self, src: &impl Source<T>, dst: &mut impl SliceMut<T>) -> Result<()> {
        let src = src.parts();
        src.check(self, "the source")?;
        let mut dst = output(self, dst, "the destination")?;
        if dst.len() < src.len {
            return Err(length_mismatch(
                AtLeast,
                "copy",
                "the destination",
                dst.len(),
                src.len,
                "the source",
            ));
        }
        match &self.backend {
            Backend::Cpu => {
                let out = dst.host_mut().expect("validated");
                cpu::fill(src.host(), &mut out[..src.len]);
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let (home, out) = dst.at.device().expect("validated");
                let (arg, load, src_home) = src.device();
                let homes: Vec<_> = [Some(home), src_home].into_iter().flatten().collect();
                gpu.ordered(&homes, || match src.plain_device() {
                    Some(ptr) => gpu.copy(ptr, out, src.len * std::mem::size_of::<T>()),
                    None => {
                        let t = tuning::resolve(
                            Family::Reduce,
                            self.arch(),
                            std::mem::size_of::<T>(),
                            None,
                        )?;
                        cuda::transform::transform::<T>(gpu, arg, load, out, src.len as u64, &t)
                    }
                })
            }
        }
    }

    /// Fills `dst` with `start, start + 1, ...` (Thrust's `sequence`; integers wrap around).
    ///
    /// ```
    /// let ctx = mgpu::Context::cpu();
    /// let mut idx = ctx.zeros::<u32>(4)?;
    /// ctx.sequence(&mut idx, 10)?;
    /// assert_eq!(idx.to_vec()?, vec![10, 11, 12, 13]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sequence<T: Arithmetic>(&self, dst: &mut impl SliceMut<T>, start: T) -> Result<()> {
        let len = dst.view().len();
        self.copy(&Counting::new(start, len), dst)
    }
}
