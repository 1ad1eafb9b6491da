//! The context: which backend runs the primitives, and the buffers that live on it.

use crate::cuda::memory::DeviceMem;
use crate::cuda::Gpu;
use crate::error::{invalid, Error, Result};
use crate::Element;
use std::marker::PhantomData;
use std::sync::Arc;

/// Where primitives run: an NVIDIA GPU (through CUDA) or the CPU (through rayon).
///
/// All GPU work of a context is queued in order on one stream; only calls that return a value to
/// the host wait for it.
///
/// ```
/// let ctx = mgpu::Context::cpu();
/// let data = ctx.upload(&[3, 1, 4, 1, 5])?;
/// assert_eq!(ctx.reduce(&data, &mgpu::Op::plus())?, 14);
/// # Ok::<(), mgpu::Error>(())
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) backend: Backend,
}

#[derive(Clone)]
pub(crate) enum Backend {
    Cpu,
    Cuda(Arc<Gpu>),
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Context({})", self.description())
    }
}

impl Context {
    /// The GPU (device 0) when a CUDA driver and device are present, else the CPU.
    /// `MGPU_BACKEND=cpu` or `MGPU_BACKEND=cuda` forces the choice; `cuda` without a GPU is an error.
    pub fn new() -> Result<Context> {
        match std::env::var("MGPU_BACKEND").as_deref() {
            Ok("cpu") => Ok(Context::cpu()),
            Ok("cuda") => Context::cuda(),
            Ok("") | Err(_) => Ok(Context::cuda().unwrap_or_else(|_| Context::cpu())),
            Ok(other) => invalid(format!("MGPU_BACKEND={other}: expected `cpu` or `cuda`")),
        }
    }

    /// The CPU backend.
    pub fn cpu() -> Context {
        Context {
            backend: Backend::Cpu,
        }
    }

    /// CUDA device 0; [`Error::NoGpu`] when there is none.
    pub fn cuda() -> Result<Context> {
        Context::cuda_device(0)
    }

    /// CUDA device `ordinal`.
    pub fn cuda_device(ordinal: usize) -> Result<Context> {
        Ok(Context {
            backend: Backend::Cuda(Arc::new(Gpu::new(ordinal)?)),
        })
    }

    /// True on the GPU backend.
    pub fn is_gpu(&self) -> bool {
        matches!(self.backend, Backend::Cuda(_))
    }

    /// "cpu", or the GPU's name and architecture.
    pub fn description(&self) -> String {
        match &self.backend {
            Backend::Cpu => format!("cpu ({} threads)", rayon::current_num_threads()),
            Backend::Cuda(g) => format!("{} (sm_{}, {} SMs)", g.name, g.arch, g.sm_count),
        }
    }

    /// The GPU's architecture as `major * 10 + minor` (None on the CPU).
    pub fn arch(&self) -> Option<u32> {
        match &self.backend {
            Backend::Cpu => None,
            Backend::Cuda(g) => Some(g.arch),
        }
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<()> {
        match &self.backend {
            Backend::Cpu => Ok(()),
            Backend::Cuda(g) => g.synchronize(),
        }
    }

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
                let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
                    Error::InvalidArgument(format!("a buffer of {len} elements overflows usize"))
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
            Backend::Cpu => invalid("a CudaSlice cannot be used with the CPU backend"),
            Backend::Cuda(g) => {
                if slice.context().cu_ctx() != g.ctx.cu_ctx() {
                    return invalid(
                        "the CudaSlice belongs to another CUDA context than this Context",
                    );
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

    /// Copies `src` into the first `src.len()` elements of `dst` (a device-to-device memcpy on
    /// the GPU).
    pub fn copy<T: Element>(&self, src: &Buffer<T>, dst: &mut Buffer<T>) -> Result<()> {
        check_backend(self, src, "the source")?;
        check_backend(self, dst, "the destination")?;
        if dst.len() < src.len() {
            return invalid(format!(
                "copy: destination holds {} elements, source {}",
                dst.len(),
                src.len()
            ));
        }
        match (&src.storage, &mut dst.storage) {
            (Storage::Host(s), Storage::Host(d)) => {
                d[..s.len()].copy_from_slice(s);
                Ok(())
            }
            (Storage::Device { mem: s, .. }, Storage::Device { mem: d, .. }) => {
                crate::cuda::memory::copy(s, d, std::mem::size_of::<T>() * src.len())
            }
            _ => unreachable!("validated"),
        }
    }

    /// Runs `work` and returns the time it took in milliseconds: measured with CUDA events around
    /// the work it queues on the GPU (launch overhead on the host not included, so queue enough
    /// work), or with the wall clock on the CPU.
    pub fn time_ms(&self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        match &self.backend {
            Backend::Cpu => {
                let t = std::time::Instant::now();
                work()?;
                Ok(t.elapsed().as_secs_f64() * 1e3)
            }
            Backend::Cuda(g) => g.time_ms(work),
        }
    }

    pub(crate) fn gpu(&self) -> Option<&Arc<Gpu>> {
        match &self.backend {
            Backend::Cpu => None,
            Backend::Cuda(g) => Some(g),
        }
    }
}

/// A sequence of elements living on a context's backend: device memory on the GPU, a `Vec` on the
/// CPU.
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

impl<T: Element> Buffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Host(v) => v.len(),
            Storage::Device { len, .. } => *len,
        }
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when the buffer lives in GPU memory.
    pub fn is_device(&self) -> bool {
        matches!(self.storage, Storage::Device { .. })
    }

    /// Copies the buffer to the host (waits for queued work).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        match &self.storage {
            Storage::Host(v) => Ok(v.clone()),
            Storage::Device { mem, len, .. } => {
                let mut out = vec![T::zeroed(); *len];
                mem.download(0, &mut out)?;
                Ok(out)
            }
        }
    }

    /// Overwrites the buffer with `data`, which must have the buffer's length.
    pub fn copy_from_host(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return invalid(format!(
                "copy_from_host: {} elements given for a buffer of {}",
                data.len(),
                self.len()
            ));
        }
        match &mut self.storage {
            Storage::Host(v) => {
                v.copy_from_slice(data);
                Ok(())
            }
            Storage::Device { mem, .. } => mem.upload(0, data),
        }
    }

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

    /// The host slice (CPU backend) or the device address (GPU backend).
    pub(crate) fn place(&self) -> Place<'_, T> {
        match &self.storage {
            Storage::Host(v) => Place::Host(v),
            Storage::Device { mem, .. } => Place::Device(mem),
        }
    }
}

pub(crate) enum Place<'a, T> {
    Host(&'a [T]),
    Device(&'a DeviceMem),
}

/// Checks that a buffer lives on the context's backend (and device).
pub(crate) fn check_backend<T: Element>(ctx: &Context, b: &Buffer<T>, what: &str) -> Result<()> {
    match (&ctx.backend, &b.storage) {
        (Backend::Cpu, Storage::Host(_)) => Ok(()),
        (Backend::Cuda(g), Storage::Device { mem, .. }) => {
            if Arc::ptr_eq(g, &mem.gpu) || g.ctx.cu_ctx() == mem.gpu.ctx.cu_ctx() {
                Ok(())
            } else {
                invalid(format!("{what} belongs to another GPU context"))
            }
        }
        (Backend::Cpu, _) => invalid(format!("{what} lives on a GPU but the context is the CPU")),
        (Backend::Cuda(_), _) => {
            invalid(format!("{what} lives on the CPU but the context is a GPU"))
        }
    }
}
