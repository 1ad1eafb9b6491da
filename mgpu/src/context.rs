//! The context: which backend runs the primitives (the buffers that live on it are made in
//! `buffer.rs`).

use crate::cuda::{driver, Gpu};
use crate::error::{invalid, mismatch, Error, Residence, Result};
use cudarc::driver::{CudaEvent, CudaStream};
use std::sync::Arc;

/// Where primitives run: an NVIDIA GPU (through CUDA) or the CPU (through rayon).
///
/// All GPU work of a context is queued in order on its stream; only calls that return a value to
/// the host wait for it. [`fork`](Context::fork) gives a context on another stream of the same
/// GPU, and [`on_cuda_stream`](Context::on_cuda_stream) one on a caller's cudarc stream. A context
/// is `Send + Sync` and may be used from many threads at once.
///
/// State per stream: the look-back scan's status slots and ticket counter. Shared by all the
/// streams of a GPU: the loaded kernels (and the on-disk kernel cache, shared by every process),
/// the tuning table, and the device's memory pool. A buffer belongs to the stream of the context
/// that made it (it is freed and read back there); a primitive on another stream that uses it
/// waits for that stream's work queued so far, and that stream then waits for the primitive, so
/// sharing buffers between streams is always safe (and orders the streams where it happens).
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
    /// Why [`Context::new`] chose the CPU although it looked for a GPU.
    fallback: Option<Arc<str>>,
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
    /// The GPU (device 0) when it can be used, that is when a CUDA driver, a device and NVRTC
    /// (to compile the kernels) are all found; else the CPU, and
    /// [`fallback_reason`](Context::fallback_reason) says why (also logged once per process
    /// through the `log` crate). `MGPU_BACKEND=cpu` or `MGPU_BACKEND=cuda` forces the choice;
    /// `cuda` without a usable GPU is an error.
    ///
    /// ```
    /// let ctx = mgpu::Context::new()?;
    /// println!("running on {}", ctx.description());
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn new() -> Result<Context> {
        match std::env::var("MGPU_BACKEND").as_deref() {
            Ok("cpu") => Ok(Context::cpu()),
            Ok("cuda") => Context::cuda(),
            Ok("") | Err(_) => Ok(Context::cuda().unwrap_or_else(Context::fallback)),
            Ok(other) => invalid(format!("MGPU_BACKEND={other}: expected `cpu` or `cuda`")),
        }
    }

    /// The CPU backend, chosen by [`new`](Context::new) because the GPU could not be used.
    fn fallback(why: Error) -> Context {
        let reason = why.to_string();
        static LOGGED: std::sync::Once = std::sync::Once::new();
        LOGGED.call_once(|| {
            // No driver at all is the ordinary CPU-only machine; anything else is a GPU that
            // was there but could not be used.
            if crate::cuda::driver_available() {
                log::warn!("mgpu: using the CPU backend: {reason}");
            } else {
                log::info!("mgpu: using the CPU backend: {reason}");
            }
        });
        Context {
            backend: Backend::Cpu,
            fallback: Some(reason.into()),
        }
    }

    /// Why [`Context::new`] chose the CPU although it looked for a GPU (no driver, no device, no
    /// NVRTC, ...); None for a GPU context and for a CPU backend asked for by
    /// [`Context::cpu`] or `MGPU_BACKEND=cpu`. Forks keep it.
    ///
    /// ```
    /// let ctx = mgpu::Context::new()?;
    /// if let Some(why) = ctx.fallback_reason() {
    ///     eprintln!("on the CPU: {why}");
    /// }
    /// assert!(mgpu::Context::cpu().fallback_reason().is_none());
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The CPU backend.
    ///
    /// ```
    /// let ctx = mgpu::Context::cpu();
    /// assert!(!ctx.is_gpu());
    /// ```
    pub fn cpu() -> Context {
        Context {
            backend: Backend::Cpu,
            fallback: None,
        }
    }

    /// CUDA device 0; [`Error::NoGpu`] when there is none (no driver, no device, or a context
    /// that cannot be created), [`Error::NoNvrtc`] when there is one but NVRTC cannot be found
    /// to compile its kernels.
    ///
    /// ```
    /// match mgpu::Context::cuda() {
    ///     Ok(gpu) => println!("{}", gpu.description()),
    ///     Err(e) => println!("no GPU: {e}"),
    /// }
    /// ```
    pub fn cuda() -> Result<Context> {
        Context::cuda_device(0)
    }

    /// CUDA device `ordinal`; errors as [`cuda`](Context::cuda).
    pub fn cuda_device(ordinal: usize) -> Result<Context> {
        // Opens the driver where the search finds it (the loader path, or WSL's folder).
        let _ = crate::cuda::discover::driver();
        let gpu = Gpu::new(ordinal)?;
        if !crate::cuda::jit::nvrtc_available() {
            return Err(Error::NoNvrtc(format!(
                "{} is present, but libnvrtc was {}",
                gpu.name,
                crate::cuda::discover::nvrtc()
            )));
        }
        Ok(Context {
            backend: Backend::Cuda(Arc::new(gpu)),
            fallback: None,
        })
    }

    /// A context on a new stream of the same GPU, sharing the loaded kernels; work on the two
    /// streams may run concurrently. The new stream starts after the work queued so far on this
    /// one. On the CPU, another handle to the CPU backend.
    ///
    /// ```
    /// use mgpu::{Context, Op};
    /// let ctx = Context::new()?;
    /// let other = ctx.fork()?;
    /// let a = ctx.upload(&[1, 2, 3])?;
    /// let b = other.upload(&[4, 5, 6])?;
    /// let (x, y) = std::thread::scope(|s| {
    ///     let x = s.spawn(|| ctx.reduce(&a, &Op::plus()));
    ///     let y = s.spawn(|| other.reduce(&b, &Op::plus()));
    ///     (x.join().unwrap(), y.join().unwrap())
    /// });
    /// assert_eq!((x?, y?), (6, 15));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn fork(&self) -> Result<Context> {
        match &self.backend {
            Backend::Cpu => Ok(self.clone()),
            Backend::Cuda(g) => {
                let stream = g.stream.fork().map_err(driver("creating a stream"))?;
                Ok(Context {
                    backend: Backend::Cuda(Arc::new(g.with_stream(stream))),
                    fallback: None,
                })
            }
        }
    }

    /// A context that queues its work on `stream`, a caller's cudarc stream (candle's, burn's, or
    /// the stream of a `CudaSlice`), so that mgpu's work is ordered with the caller's without any
    /// extra synchronization. It shares this context's loaded kernels; the stream must belong to
    /// the same CUDA context.
    ///
    /// ```
    /// let ctx = mgpu::Context::new()?;
    /// if let Some(theirs) = ctx.fork()?.cuda_stream() {
    ///     // e.g. candle's stream, or `cuda_slice.stream()`
    ///     let on_theirs = ctx.on_cuda_stream(theirs.clone())?;
    ///     let x = on_theirs.upload(&[1, 2, 3])?;
    ///     assert_eq!(on_theirs.reduce(&x, &mgpu::Op::plus())?, 6);
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn on_cuda_stream(&self, stream: Arc<CudaStream>) -> Result<Context> {
        match &self.backend {
            Backend::Cpu => Err(mismatch(
                "on_cuda_stream: the stream",
                Residence::Gpu,
                Residence::Cpu,
            )),
            Backend::Cuda(g) => {
                if stream.context().cu_ctx() != g.ctx.cu_ctx() {
                    return Err(mismatch(
                        "on_cuda_stream: the stream",
                        Residence::OtherGpuContext,
                        Residence::Gpu,
                    ));
                }
                Ok(Context {
                    backend: Backend::Cuda(Arc::new(g.with_stream(stream))),
                    fallback: None,
                })
            }
        }
    }

    /// A GPU context on a caller's cudarc stream, with a kernel cache of its own (prefer
    /// [`on_cuda_stream`](Context::on_cuda_stream) of an existing context, which shares it).
    pub fn from_cuda_stream(stream: Arc<CudaStream>) -> Result<Context> {
        Ok(Context {
            backend: Backend::Cuda(Arc::new(Gpu::on_stream(stream)?)),
            fallback: None,
        })
    }

    /// The cudarc stream this context queues its work on (None on the CPU).
    pub fn cuda_stream(&self) -> Option<&Arc<CudaStream>> {
        self.gpu().map(|g| &g.stream)
    }

    /// Records the work queued so far on this context's stream, for another stream to
    /// [`wait_for`](Context::wait_for). On the CPU, work is done when it returns: the event is
    /// complete at once.
    pub fn record_event(&self) -> Result<Event> {
        match &self.backend {
            Backend::Cpu => Ok(Event { cuda: None }),
            Backend::Cuda(g) => Ok(Event {
                cuda: Some(
                    g.stream
                        .record_event(None)
                        .map_err(driver("recording an event"))?,
                ),
            }),
        }
    }

    /// Makes the work queued on this context from now on wait for `event`, without blocking the
    /// host.
    ///
    /// ```
    /// use mgpu::{Context, Op, ScanOptions};
    /// let ctx = Context::new()?;
    /// let side = ctx.fork()?;
    /// let mut data = side.upload(&[1, 2, 3])?;
    /// side.scan_in_place(&mut data, &Op::plus(), ScanOptions::inclusive())?;
    /// ctx.wait_for(&side.record_event()?)?;   // ctx's next work sees the scan's result
    /// assert_eq!(ctx.reduce(&data, &Op::maximum())?, 6);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn wait_for(&self, event: &Event) -> Result<()> {
        match (&self.backend, &event.cuda) {
            (Backend::Cuda(g), Some(e)) => {
                if e.context().cu_ctx() != g.ctx.cu_ctx() {
                    return Err(mismatch(
                        "wait_for: the event",
                        Residence::OtherGpuContext,
                        Residence::Gpu,
                    ));
                }
                g.stream.wait(e).map_err(driver("waiting for an event"))
            }
            _ => Ok(()),
        }
    }

    /// Makes the work queued on this context from now on wait for the work queued so far on
    /// `other` (`wait_for(&other.record_event()?)`).
    ///
    /// ```
    /// let ctx = mgpu::Context::new()?;
    /// let side = ctx.fork()?;
    /// let mut idx = side.zeros::<u32>(1000)?;
    /// side.sequence(&mut idx, 1)?;
    /// ctx.join(&side)?; // ctx's next work starts after the sequence
    /// assert_eq!(ctx.reduce(&idx, &mgpu::Op::plus())?, 500_500);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn join(&self, other: &Context) -> Result<()> {
        self.wait_for(&other.record_event()?)
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

    /// The GPU's name, compute capability, SMs, clocks, memory, bus width, L2 and ECC, from the
    /// driver (None on the CPU).
    ///
    /// ```
    /// let ctx = mgpu::Context::new()?;
    /// match ctx.device_info() {
    ///     Some(d) => println!("{}: {:.0} GB/s peak", d.name, d.peak_bandwidth_gbs()),
    ///     None => println!("CPU backend"),
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn device_info(&self) -> Option<crate::cuda::DeviceInfo> {
        self.gpu().map(|g| crate::cuda::device_info(g))
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

/// A point in a stream's work, from [`Context::record_event`], for another stream to wait for.
pub struct Event {
    cuda: Option<CudaEvent>,
}

impl Event {
    /// Blocks the host until the recorded work is done.
    pub fn synchronize(&self) -> Result<()> {
        match &self.cuda {
            Some(e) => e.synchronize().map_err(driver("waiting for an event")),
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on = if self.cuda.is_some() { "gpu" } else { "cpu" };
        write!(f, "Event({on})")
    }
}
