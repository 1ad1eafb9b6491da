//! Where elements live: [`Buffer`] (owned), [`View`] and [`ViewMut`] (borrowed ranges of a buffer,
//! zero-copy), and the traits [`Slice`] / [`SliceMut`] through which every primitive takes any of
//! them.

use crate::context::{Backend, Context};
use crate::cuda::memory::DeviceMem;
use crate::cuda::Gpu;
use crate::error::{invalid, mismatch, Error, LengthRule, Residence, Result};
use crate::Element;
use std::marker::PhantomData;
use std::ops::{Bound, Range, RangeBounds};
use std::sync::Arc;

/// A sequence of elements living on a context's backend: device memory on the GPU, a `Vec` on the
/// CPU. Borrow part of it with [`slice`](Buffer::slice) / [`slice_mut`](Buffer::slice_mut).
pub struct Buffer<T: Element> {
    pub(crate) storage: Storage<T>,
}

pub(crate) enum Storage<T> {
    Host(Vec<T>),
    Device {
        mem: DeviceMem,
        len: usize,
        _t: PhantomData<T>,
    },
}

/// A borrowed, read-only range of a buffer (cudarc's `CudaView`): no copy is made.
///
/// ```
/// let ctx = mgpu::Context::cpu();
/// let data = ctx.upload(&[1, 2, 3, 4, 5])?;
/// let tail = data.slice(2..);
/// assert_eq!(ctx.reduce(&tail, &mgpu::Op::plus())?, 12);
/// assert_eq!(tail.slice(1..2).to_vec()?, vec![4]);
/// # Ok::<(), mgpu::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct View<'a, T: Element> {
    pub(crate) at: At<'a, T>,
}

/// A borrowed, writable range of a buffer (cudarc's `CudaViewMut`): no copy is made.
///
/// ```
/// use mgpu::{Context, Op, ScanOptions};
/// let ctx = Context::cpu();
/// let mut data = ctx.upload(&[1, 1, 1, 1, 1])?;
/// ctx.scan_in_place(&mut data.slice_mut(1..4), &Op::plus(), ScanOptions::inclusive())?;
/// assert_eq!(data.to_vec()?, vec![1, 1, 2, 3, 1]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct ViewMut<'a, T: Element> {
    pub(crate) at: AtMut<'a, T>,
}

/// Where a view's elements are: a host slice (CPU backend) or a device range (GPU backend) on
/// the stream of the buffer's context (its `home`).
pub(crate) enum At<'a, T> {
    Host(&'a [T]),
    Device {
        home: &'a Arc<Gpu>,
        ptr: u64,
        len: usize,
    },
}

/// The writable counterpart of `At`.
pub(crate) enum AtMut<'a, T> {
    Host(&'a mut [T]),
    Device {
        home: &'a Arc<Gpu>,
        ptr: u64,
        len: usize,
    },
}

impl<T> Clone for At<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for At<'_, T> {}

impl<'a, T> At<'a, T> {
    fn len(&self) -> usize {
        match self {
            At::Host(s) => s.len(),
            At::Device { len, .. } => *len,
        }
    }

    /// The sub-range `r` (already checked to lie inside).
    fn sub(self, r: Range<usize>) -> At<'a, T> {
        match self {
            At::Host(s) => At::Host(&s[r]),
            At::Device { home, ptr, .. } => At::Device {
                home,
                ptr: ptr + (r.start * std::mem::size_of::<T>()) as u64,
                len: r.len(),
            },
        }
    }

    /// The host slice, on the CPU backend.
    pub(crate) fn host(&self) -> Option<&'a [T]> {
        match *self {
            At::Host(s) => Some(s),
            At::Device { .. } => None,
        }
    }

    /// The device address and the buffer's home stream, on the GPU backend.
    pub(crate) fn device(&self) -> Option<(&'a Arc<Gpu>, u64)> {
        match *self {
            At::Device { home, ptr, .. } => Some((home, ptr)),
            At::Host(_) => None,
        }
    }
}

impl<'a, T> AtMut<'a, T> {
    fn len(&self) -> usize {
        match self {
            AtMut::Host(s) => s.len(),
            AtMut::Device { len, .. } => *len,
        }
    }

    fn sub(self, r: Range<usize>) -> AtMut<'a, T> {
        match self {
            AtMut::Host(s) => AtMut::Host(&mut s[r]),
            AtMut::Device { home, ptr, .. } => AtMut::Device {
                home,
                ptr: ptr + (r.start * std::mem::size_of::<T>()) as u64,
                len: r.len(),
            },
        }
    }

    /// A shared borrow of it.
    fn shared(&self) -> At<'_, T> {
        match self {
            AtMut::Host(s) => At::Host(s),
            AtMut::Device { home, ptr, len } => At::Device {
                home,
                ptr: *ptr,
                len: *len,
            },
        }
    }

    /// A shorter exclusive borrow of it.
    fn reborrow(&mut self) -> AtMut<'_, T> {
        match self {
            AtMut::Host(s) => AtMut::Host(s),
            AtMut::Device { home, ptr, len } => AtMut::Device {
                home,
                ptr: *ptr,
                len: *len,
            },
        }
    }

    pub(crate) fn device(&self) -> Option<(&'a Arc<Gpu>, u64)> {
        match *self {
            AtMut::Device { home, ptr, .. } => Some((home, ptr)),
            AtMut::Host(_) => None,
        }
    }
}

/// Resolves `range` against `len` like slice indexing does; `None` when out of bounds.
fn resolve(range: &impl RangeBounds<usize>, len: usize) -> Option<Range<usize>> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s.checked_add(1)?,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e.checked_add(1)?,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    (start <= end && end <= len).then_some(start..end)
}

fn out_of_range(range: &impl RangeBounds<usize>, len: usize) -> Error {
    Error::RangeOutOfBounds {
        start: range.start_bound().cloned(),
        end: range.end_bound().cloned(),
        len: len as u64,
    }
}

mod sealed {
    pub trait Sealed {}
}

/// Elements in memory that a primitive can read: a [`Buffer`], a [`View`] or a [`ViewMut`].
/// Every primitive takes its memory inputs as `&impl Slice<T>`.
///
/// ```
/// use mgpu::{Context, Op, Slice};
/// fn total(ctx: &Context, xs: &impl Slice<u32>) -> mgpu::Result<u32> {
///     ctx.reduce(xs, &Op::plus())
/// }
/// let ctx = Context::cpu();
/// let data = ctx.upload(&[1u32, 2, 3])?;
/// assert_eq!(total(&ctx, &data)? + total(&ctx, &data.slice(1..))?, 11);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub trait Slice<T: Element>: sealed::Sealed {
    /// A view of all of it.
    fn view(&self) -> View<'_, T>;
}

/// Elements in memory that a primitive can write: a [`Buffer`] or a [`ViewMut`]. Every primitive
/// takes its outputs as `&mut impl SliceMut<T>`.
///
/// ```
/// use mgpu::{Comparator, Context, SliceMut};
/// fn sort_desc(ctx: &Context, keys: &mut impl SliceMut<i32>) -> mgpu::Result<()> {
///     ctx.sort(keys, &Comparator::greater())
/// }
/// let ctx = Context::cpu();
/// let mut keys = ctx.upload(&[1, 5, 2, 9, 3])?;
/// sort_desc(&ctx, &mut keys.slice_mut(1..4))?;
/// assert_eq!(keys.to_vec()?, vec![1, 9, 5, 2, 3]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub trait SliceMut<T: Element>: Slice<T> {
    /// A writable view of all of it.
    fn view_mut(&mut self) -> ViewMut<'_, T>;
}

impl<T: Element> sealed::Sealed for Buffer<T> {}
impl<T: Element> sealed::Sealed for View<'_, T> {}
impl<T: Element> sealed::Sealed for ViewMut<'_, T> {}

impl<T: Element> Slice<T> for Buffer<T> {
    fn view(&self) -> View<'_, T> {
        let at = match &self.storage {
            Storage::Host(v) => At::Host(v),
            Storage::Device { mem, len, .. } => At::Device {
                home: &mem.gpu,
                ptr: mem.ptr,
                len: *len,
            },
        };
        View { at }
    }
}

impl<T: Element> SliceMut<T> for Buffer<T> {
    fn view_mut(&mut self) -> ViewMut<'_, T> {
        let at = match &mut self.storage {
            Storage::Host(v) => AtMut::Host(v),
            Storage::Device { mem, len, .. } => AtMut::Device {
                home: &mem.gpu,
                ptr: mem.ptr,
                len: *len,
            },
        };
        ViewMut { at }
    }
}

// References to slices are slices: generic code can pass `&mut b` where it holds `b: &mut Buffer`.
impl<S: ?Sized> sealed::Sealed for &S {}
impl<S: ?Sized> sealed::Sealed for &mut S {}
impl<T: Element, S: Slice<T> + ?Sized> Slice<T> for &S {
    fn view(&self) -> View<'_, T> {
        (**self).view()
    }
}
impl<T: Element, S: Slice<T> + ?Sized> Slice<T> for &mut S {
    fn view(&self) -> View<'_, T> {
        (**self).view()
    }
}
impl<T: Element, S: SliceMut<T> + ?Sized> SliceMut<T> for &mut S {
    fn view_mut(&mut self) -> ViewMut<'_, T> {
        (**self).view_mut()
    }
}

impl<T: Element> Slice<T> for View<'_, T> {
    fn view(&self) -> View<'_, T> {
        *self
    }
}

impl<T: Element> Slice<T> for ViewMut<'_, T> {
    fn view(&self) -> View<'_, T> {
        View {
            at: self.at.shared(),
        }
    }
}

impl<T: Element> SliceMut<T> for ViewMut<'_, T> {
    fn view_mut(&mut self) -> ViewMut<'_, T> {
        ViewMut {
            at: self.at.reborrow(),
        }
    }
}

/// Methods every kind of slice shares, written once.
macro_rules! common_methods {
    () => {
        /// Number of elements.
        pub fn len(&self) -> usize {
            self.view().at.len()
        }

        /// True when there is no element.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }

        /// True when the elements live in GPU memory.
        pub fn is_device(&self) -> bool {
            self.view().at.device().is_some()
        }

        /// Copies the elements to the host (waits for the work queued on the buffer's stream).
        pub fn to_vec(&self) -> Result<Vec<T>> {
            let at = self.view().at;
            if let Some(s) = at.host() {
                return Ok(s.to_vec());
            }
            let (home, ptr) = at.device().expect("host or device");
            let mut out = vec![T::zeroed(); at.len()];
            home.download(ptr, &mut out)?;
            Ok(out)
        }

        /// A read-only view of `range` (as `&v[range]`, zero-copy).
        ///
        /// # Panics
        /// When `range` is out of bounds, as slice indexing does: an out-of-range view is a bug in
        /// the caller, not a condition to handle. [`try_slice`](Self::try_slice) returns an error
        /// instead.
        pub fn slice(&self, range: impl RangeBounds<usize>) -> View<'_, T> {
            self.try_slice(range).unwrap_or_else(|e| panic!("{e}"))
        }

        /// A read-only view of `range`, or [`Error::RangeOutOfBounds`] when it is out of bounds
        /// (as `v.get(range)`).
        pub fn try_slice(&self, range: impl RangeBounds<usize>) -> Result<View<'_, T>> {
            let at = self.view().at;
            let r = resolve(&range, at.len()).ok_or_else(|| out_of_range(&range, at.len()))?;
            Ok(View { at: at.sub(r) })
        }
    };
}

/// Methods of the writable kinds of slice.
macro_rules! mut_methods {
    () => {
        /// A writable view of `range` (as `&mut v[range]`, zero-copy).
        ///
        /// # Panics
        /// When `range` is out of bounds, as slice indexing does;
        /// [`try_slice_mut`](Self::try_slice_mut) returns an error instead.
        pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> ViewMut<'_, T> {
            self.try_slice_mut(range).unwrap_or_else(|e| panic!("{e}"))
        }

        /// A writable view of `range`, or [`Error::RangeOutOfBounds`] when it is out of bounds.
        pub fn try_slice_mut(&mut self, range: impl RangeBounds<usize>) -> Result<ViewMut<'_, T>> {
            let at = self.view_mut().at;
            let r = resolve(&range, at.len()).ok_or_else(|| out_of_range(&range, at.len()))?;
            Ok(ViewMut { at: at.sub(r) })
        }

        /// Overwrites the elements with `data`, which must have the same length.
        pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
            let at = self.view_mut().at;
            if data.len() != at.len() {
                return Err(length_mismatch(
                    LengthRule::Equal,
                    "copy_from_host",
                    "elements given",
                    data.len(),
                    at.len(),
                    "destination elements",
                ));
            }
            match at {
                AtMut::Host(s) => {
                    s.copy_from_slice(data);
                    Ok(())
                }
                AtMut::Device { home, ptr, .. } => home.upload(ptr, data),
            }
        }
    };
}

impl<T: Element> Buffer<T> {
    common_methods!();
    mut_methods!();

    /// Hands the device memory to a cudarc slice without copying.
    pub fn into_cuda_slice(self) -> Result<cudarc::driver::CudaSlice<T>>
    where
        T: cudarc::driver::DeviceRepr,
    {
        match self.storage {
            Storage::Host(_) => invalid("into_cuda_slice: the buffer lives on the CPU backend"),
            Storage::Device { mem, len, .. } => Ok(mem.into_cuda_slice(len)),
        }
    }
}

impl<'a, T: Element> View<'a, T> {
    common_methods!();
}

impl<'a, T: Element> ViewMut<'a, T> {
    common_methods!();
    mut_methods!();

    /// The host slice to write (CPU backend).
    pub(crate) fn host_mut(&mut self) -> Option<&mut [T]> {
        match &mut self.at {
            AtMut::Host(s) => Some(s),
            AtMut::Device { .. } => None,
        }
    }
}

/// Making buffers on a context.
impl Context {
    /// A buffer holding a copy of `data`.
    pub fn upload<T: Element>(&self, data: &[T]) -> Result<Buffer<T>> {
        match &self.backend {
            Backend::Cpu => Ok(Buffer {
                storage: Storage::Host(data.to_vec()),
            }),
            Backend::Cuda(g) => {
                let mem = DeviceMem::alloc(g, std::mem::size_of_val(data))?;
                mem.upload(0, data)?;
                Ok(Buffer {
                    storage: Storage::Device {
                        mem,
                        len: data.len(),
                        _t: PhantomData,
                    },
                })
            }
        }
    }

    /// A buffer of `len` zero-bit elements.
    pub fn zeros<T: Element>(&self, len: usize) -> Result<Buffer<T>> {
        match &self.backend {
            Backend::Cpu => Ok(Buffer {
                storage: Storage::Host(vec![T::zeroed(); len]),
            }),
            Backend::Cuda(g) => {
                let bytes = len
                    .checked_mul(std::mem::size_of::<T>())
                    .ok_or(Error::TooLarge {
                        call: "zeros",
                        what: "elements",
                        len: len as u64,
                        limited_by: "a buffer's size in bytes (usize)",
                        limit: (usize::MAX / std::mem::size_of::<T>().max(1)) as u64,
                        hint: "allocate fewer elements",
                    })?;
                let mem = DeviceMem::zeroed(g, bytes)?;
                Ok(Buffer {
                    storage: Storage::Device {
                        mem,
                        len,
                        _t: PhantomData,
                    },
                })
            }
        }
    }

    /// Wraps a cudarc slice as a buffer without copying. The slice must belong to this context's
    /// device.
    pub fn from_cuda_slice<T: Element + cudarc::driver::DeviceRepr>(
        &self,
        slice: cudarc::driver::CudaSlice<T>,
    ) -> Result<Buffer<T>> {
        match &self.backend {
            Backend::Cpu => Err(mismatch("the CudaSlice", Residence::Gpu, Residence::Cpu)),
            Backend::Cuda(g) => {
                if slice.context().cu_ctx() != g.ctx.cu_ctx() {
                    return Err(mismatch(
                        "the CudaSlice",
                        Residence::OtherGpuContext,
                        Residence::Gpu,
                    ));
                }
                let len = slice.len();
                let mem = DeviceMem::from_cuda_slice(g, slice);
                Ok(Buffer {
                    storage: Storage::Device {
                        mem,
                        len,
                        _t: PhantomData,
                    },
                })
            }
        }
    }
}

impl<T: Element> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = if self.is_device() { "device" } else { "host" };
        write!(
            f,
            "Buffer<{}>({} elements on the {place})",
            T::CUDA_TYPE,
            self.len()
        )
    }
}

impl<T: Element> std::fmt::Debug for View<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "View<{}>({} elements)", T::CUDA_TYPE, self.len())
    }
}

impl<T: Element> std::fmt::Debug for ViewMut<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ViewMut<{}>({} elements)", T::CUDA_TYPE, self.len())
    }
}

/// Checks that elements live on the context's backend (and GPU).
pub(crate) fn check_place<T>(ctx: &Context, at: &At<'_, T>, what: &str) -> Result<()> {
    match (&ctx.backend, at.device()) {
        (Backend::Cpu, None) => Ok(()),
        (Backend::Cuda(g), Some((home, _))) => {
            if g.ctx.cu_ctx() == home.ctx.cu_ctx() {
                Ok(())
            } else {
                Err(mismatch(what, Residence::OtherGpuContext, Residence::Gpu))
            }
        }
        (Backend::Cpu, Some(_)) => Err(mismatch(what, Residence::Gpu, Residence::Cpu)),
        (Backend::Cuda(_), None) => Err(mismatch(what, Residence::Cpu, Residence::Gpu)),
    }
}

/// Checks a readable argument's backend and returns its view.
pub(crate) fn input<'a, T: Element>(
    ctx: &Context,
    s: &'a impl Slice<T>,
    what: &str,
) -> Result<View<'a, T>> {
    let v = s.view();
    check_place(ctx, &v.at, what)?;
    Ok(v)
}

/// Checks a writable argument's backend and returns its view.
pub(crate) fn output<'a, T: Element>(
    ctx: &Context,
    s: &'a mut impl SliceMut<T>,
    what: &str,
) -> Result<ViewMut<'a, T>> {
    let v = s.view_mut();
    check_place(ctx, &v.at.shared(), what)?;
    Ok(v)
}

/// The error for an argument of `actual` elements where `rule` asks for `expected` (of `of`).
pub(crate) fn length_mismatch(
    rule: LengthRule,
    call: &'static str,
    argument: &'static str,
    actual: usize,
    expected: usize,
    of: &'static str,
) -> Error {
    Error::LengthMismatch {
        call,
        argument,
        actual: actual as u64,
        expected: expected as u64,
        of,
        rule,
    }
}
