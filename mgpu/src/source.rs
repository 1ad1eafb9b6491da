//! What reduce, scan and copy read: elements in memory ([`Slice`]), elements mapped as they are
//! loaded ([`Mapped`], Thrust's transform_iterator), or a counting sequence ([`Counting`], Thrust's
//! counting_iterator). None of them materializes anything.

use crate::buffer::{At, Buffer, Slice, View, ViewMut};
use crate::context::{Backend, Context};
use crate::cuda::jit::Load;
use crate::cuda::Gpu;
use crate::error::{mismatch, Residence, Result};
use crate::op::{cuda_fn_api, Arithmetic};
use crate::Element;
use std::sync::Arc;

cuda_fn_api! {
    /// A per-element function from `I` to `O`, given once for each backend: a Rust function (CPU) and
    /// a CUDA C++ expression over `x` of type `I` (GPU). Applied as each input element is loaded, so a
    /// mapped reduce or scan moves no more memory than the plain one.
    ///
    /// ```
    /// use mgpu::{Context, Map, Op};
    /// let ctx = Context::cpu();
    /// let x = ctx.upload(&[1.5f32, -2.0, 3.0])?;
    /// // sum(x * x), accumulated in f64: one pass, no intermediate buffer.
    /// let square = Map::new("square_f64", |x: f32| (x as f64) * (x as f64), "(double)x * (double)x");
    /// assert_eq!(ctx.reduce(&x.map(&square), &Op::plus())?, 15.25);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub struct Map<I, O>;
    /// A custom map. `cpu` and `cuda_expression` (over `x`, of `I`'s CUDA type, yielding `O`'s)
    /// must compute the same function.
    fn new;
    /// Applies the map on the CPU.
    fn apply(x: I) -> O;
    "map" over "`x`";
    /// CUDA C++ device functions the expression calls (placed before it in the kernel source).
    fn with_cuda_helpers;
    /// CUDA C++ helper source for the expression.
    fn cuda_helpers;
    /// Compiles the CUDA expression (with its helpers) from `I` to `O` for `sm_{arch}` with
    /// NVRTC, without a GPU (NVRTC alone suffices): a bad expression is
    /// [`Error::Compile`](crate::Error::Compile) with NVRTC's log, caught before a primitive uses
    /// it; [`Error::NoNvrtc`](crate::Error::NoNvrtc) where NVRTC is not found.
    ///
    /// ```
    /// use mgpu::Map;
    /// let widen = Map::new("widen", |x: f32| x as f64, "(double)x");
    /// let typo = Map::new("typo", |x: f32| x as f64, "(double)x)");
    /// if mgpu::cuda::jit::nvrtc_available() {
    ///     widen.check_cuda(90)?;
    ///     assert!(matches!(typo.check_cuda(90), Err(mgpu::Error::Compile { .. })));
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    fn check_cuda::<I, O>(binary: false, result: "T");
}

impl<T: Arithmetic> Map<T, T> {
    /// `x * x` (wrapping for integers).
    ///
    /// ```
    /// use mgpu::{Context, Map, Op};
    /// let ctx = Context::cpu();
    /// let x = ctx.upload(&[1, 2, 3])?;
    /// assert_eq!(ctx.reduce(&x.map(&Map::square()), &Op::plus())?, 14);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn square() -> Self {
        let cuda = match T::CUDA_WRAP_TYPE {
            "" => "x * x".to_string(),
            w => format!("(T)(({w})x * ({w})x)"),
        };
        Map::new("square", |x: T| T::mul(x, x), cuda)
    }
}

/// `input` read through `map`: what `map` of a buffer or view returns. Reduce and scan apply the map as they
/// load each element (Thrust's `transform_reduce` / `transform_inclusive_scan`, CUB's
/// TransformInputIterator); [`Context::copy`](crate::Context::copy) materializes it.
pub struct Mapped<'a, I: Element, O: Element> {
    pub(crate) input: View<'a, I>,
    pub(crate) map: &'a Map<I, O>,
}

/// `start, start + 1, ...` (`len` elements), generated where it is read: Thrust's
/// counting_iterator. Integers wrap around; floats add the index converted to the type.
///
/// ```
/// use mgpu::{Context, Counting, Op};
/// let ctx = Context::cpu();
/// assert_eq!(ctx.reduce(&Counting::new(1u64, 100), &Op::plus())?, 5050);
/// # Ok::<(), mgpu::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Counting<T: Arithmetic> {
    start: T,
    len: usize,
}

impl<T: Arithmetic> Counting<T> {
    /// `len` elements from `start`.
    pub fn new(start: T, len: usize) -> Self {
        Counting { start, len }
    }

    /// Element `i` (`start + i`) as the GPU computes it.
    pub fn nth(&self, i: usize) -> T {
        T::count_from(self.start, i as u64)
    }
}

/// Writes a source's elements `start..start + out.len()` to `out`.
type FillFn<'a, T> = dyn Fn(usize, &mut [T]) + Send + Sync + 'a;

/// How the CPU reads a source: straight from a slice, or by filling a chunk.
pub(crate) enum HostRead<'a, T> {
    Slice(&'a [T]),
    Fill(Box<FillFn<'a, T>>),
}

impl<T: Element> HostRead<'_, T> {
    /// Writes elements `start..start + out.len()` to `out`.
    pub(crate) fn fill(&self, start: usize, out: &mut [T]) {
        match self {
            HostRead::Slice(s) => out.copy_from_slice(&s[start..start + out.len()]),
            HostRead::Fill(f) => f(start, out),
        }
    }
}

/// A source's parts, for the backends. Hidden: only this crate builds and reads them.
#[doc(hidden)]
pub struct SourceParts<'a, T> {
    pub(crate) len: usize,
    pub(crate) kind: SourceKind<'a, T>,
}

pub(crate) enum SourceKind<'a, T> {
    /// On the CPU backend.
    Host(HostRead<'a, T>),
    /// On a GPU: the kernel argument (a pointer) and how kernels load it; `plain` when it is
    /// `T`s in memory, read as they are.
    Device {
        home: &'a Arc<Gpu>,
        ptr: u64,
        load: Load,
        plain: bool,
    },
    /// Generated on either backend; `arg` is the kernel argument (the start value's bits).
    Generated {
        host: HostRead<'a, T>,
        arg: u64,
        load: Load,
    },
}

/// What reduce, scan and copy read: a [`Slice`] (buffer or view), a [`Mapped`] slice or a
/// [`Counting`] sequence. Every input of those primitives is `&impl Source<T>`.
pub trait Source<T: Element>: source_sealed::Sealed<T> {
    /// Number of elements.
    fn source_len(&self) -> usize;
    #[doc(hidden)]
    fn parts(&self) -> SourceParts<'_, T>;
}

mod source_sealed {
    pub trait Sealed<T> {}
}

impl<T: Element, S: Slice<T>> source_sealed::Sealed<T> for S {}
impl<T: Element, S: Slice<T>> Source<T> for S {
    fn source_len(&self) -> usize {
        self.view().len()
    }
    fn parts(&self) -> SourceParts<'_, T> {
        let v = self.view();
        let kind = match v.at.device() {
            Some((home, ptr)) => SourceKind::Device {
                home,
                ptr,
                load: Load::plain::<T>(),
                plain: true,
            },
            None => SourceKind::Host(HostRead::Slice(v.at.host().expect("host or device"))),
        };
        SourceParts { len: v.len(), kind }
    }
}

impl<I: Element, O: Element> source_sealed::Sealed<O> for Mapped<'_, I, O> {}
impl<I: Element, O: Element> Source<O> for Mapped<'_, I, O> {
    fn source_len(&self) -> usize {
        self.input.len()
    }
    fn parts(&self) -> SourceParts<'_, O> {
        let at: At<'_, I> = self.input.at;
        let kind = match at.device() {
            Some((home, ptr)) => SourceKind::Device {
                home,
                ptr,
                load: Load::mapped(self.map),
                plain: false,
            },
            None => {
                let input = at.host().expect("host or device");
                let map = self.map;
                SourceKind::Host(HostRead::Fill(Box::new(move |start, out: &mut [O]| {
                    for (o, &x) in out.iter_mut().zip(&input[start..]) {
                        *o = map.apply(x);
                    }
                })))
            }
        };
        SourceParts {
            len: self.input.len(),
            kind,
        }
    }
}

impl<T: Arithmetic> source_sealed::Sealed<T> for Counting<T> {}
impl<T: Arithmetic> Source<T> for Counting<T> {
    fn source_len(&self) -> usize {
        self.len
    }
    fn parts(&self) -> SourceParts<'_, T> {
        let me = *self;
        let mut bits = [0u8; 8];
        bits[..std::mem::size_of::<T>()].copy_from_slice(bytemuck::bytes_of(&self.start));
        SourceParts {
            len: self.len,
            kind: SourceKind::Generated {
                host: HostRead::Fill(Box::new(move |start, out: &mut [T]| {
                    for (i, o) in out.iter_mut().enumerate() {
                        *o = me.nth(start + i);
                    }
                })),
                arg: u64::from_le_bytes(bits),
                load: Load::counting::<T>(),
            },
        }
    }
}

impl<'a, T: Element> SourceParts<'a, T> {
    /// Checks that the source can be read on the context's backend.
    pub(crate) fn check(&self, ctx: &Context, what: &str) -> Result<()> {
        match (&ctx.backend, &self.kind) {
            (_, SourceKind::Generated { .. }) | (Backend::Cpu, SourceKind::Host(_)) => Ok(()),
            (Backend::Cuda(g), SourceKind::Device { home, .. }) => {
                if g.ctx.cu_ctx() == home.ctx.cu_ctx() {
                    Ok(())
                } else {
                    Err(mismatch(what, Residence::OtherGpuContext, Residence::Gpu))
                }
            }
            (Backend::Cpu, _) => Err(mismatch(what, Residence::Gpu, Residence::Cpu)),
            (Backend::Cuda(_), _) => Err(mismatch(what, Residence::Cpu, Residence::Gpu)),
        }
    }

    /// CPU backend: how to read it.
    pub(crate) fn host(&self) -> &HostRead<'a, T> {
        match &self.kind {
            SourceKind::Host(h) | SourceKind::Generated { host: h, .. } => h,
            SourceKind::Device { .. } => unreachable!("validated: a device source on the CPU"),
        }
    }

    /// GPU backend: the kernel argument, how kernels load it, and the stream it lives on (none
    /// when generated).
    pub(crate) fn device(&self) -> (u64, &Load, Option<&'a Arc<Gpu>>) {
        match &self.kind {
            SourceKind::Device {
                home, ptr, load, ..
            } => (*ptr, load, Some(*home)),
            SourceKind::Generated { arg, load, .. } => (*arg, load, None),
            SourceKind::Host(_) => unreachable!("validated: a host source on the GPU"),
        }
    }

    /// True when elements are mapped or generated as they are loaded.
    pub(crate) fn computed(&self) -> bool {
        !matches!(
            self.kind,
            SourceKind::Host(HostRead::Slice(_)) | SourceKind::Device { plain: true, .. }
        )
    }

    /// GPU backend: the address of `T`s in memory read as they are, if that is what it is.
    pub(crate) fn plain_device(&self) -> Option<u64> {
        match &self.kind {
            SourceKind::Device {
                ptr, plain: true, ..
            } => Some(*ptr),
            _ => None,
        }
    }
}

/// `map` on every kind of slice, written once.
macro_rules! map_method {
    () => {
        /// The elements read through `map` as they are loaded, by reduce, scan or copy (no
        /// intermediate buffer).
        ///
        /// ```
        /// use mgpu::{Context, Map, Op};
        /// let ctx = Context::cpu();
        /// let x = ctx.upload(&[3i64, -4])?;
        /// assert_eq!(ctx.reduce(&x.map(&Map::square()), &Op::plus())?, 25);
        /// # Ok::<(), mgpu::Error>(())
        /// ```
        pub fn map<'s, O: Element>(&'s self, map: &'s Map<T, O>) -> Mapped<'s, T, O> {
            Mapped {
                input: self.view(),
                map,
            }
        }
    };
}

impl<T: Element> Buffer<T> {
    map_method!();
}

impl<T: Element> View<'_, T> {
    map_method!();
}

impl<T: Element> ViewMut<'_, T> {
    map_method!();
}
