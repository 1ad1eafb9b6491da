//! The CUDA backend: device, memory, run-time compilation and the host side of each primitive.
//! All `unsafe` of the crate lives under this module, each block with its `SAFETY:` comment.

pub mod compact;
pub mod discover;
pub mod family;
pub mod jit;
pub mod lookback;
pub(crate) mod marshal;
pub(crate) mod memory;
pub mod nccl;
pub mod occupancy;
pub mod radix;
pub mod reduce;
pub mod reduce_by_key;
pub mod registry;
pub mod scan;
pub mod segreduce;
pub mod segsort;
pub(crate) mod select;
pub mod sort;
pub mod transform;

use crate::error::{Error, Result};
use crate::Element;
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaStream, DeviceRepr};
use family::{KernelArgs, KernelFamily, Part};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) fn driver(what: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    move |e| Error::Driver {
        what,
        source: crate::error::DriverError::from_cudarc(e),
    }
}

/// Whether the CUDA driver library can be loaded on this machine.
pub fn driver_available() -> bool {
    // SAFETY: only probes whether libcuda can be opened; cudarc panics on first use otherwise.
    unsafe { sys::is_culib_present() }
}

/// The number of CUDA devices (0 without a driver or a device).
///
/// ```
/// let gpus = mgpu::cuda::device_count();
/// assert!(gpus > 0 || !mgpu::Context::new()?.is_gpu());
/// # Ok::<(), mgpu::Error>(())
/// ```
pub fn device_count() -> usize {
    if !driver_available() {
        return 0;
    }
    CudaContext::device_count().map_or(0, |n| n.max(0) as usize)
}

/// Per-kernel registers, static shared memory and local memory of a compiled module, as the driver
/// reports them after loading it on `ctx`'s GPU (the cubin must be for that GPU's architecture).
/// The fallback for NVRTC builds that return no ptxas report: the driver does not split local
/// memory into stack and spills, so `stack_frame` holds all of it and the spill fields are 0.
pub fn driver_reports(
    ctx: &crate::Context,
    kernels: &[&str],
    cubin: Vec<u8>,
) -> Result<Vec<jit::KernelReport>> {
    use sys::CUfunction_attribute as Attr;
    let gpu = ctx
        .gpu()
        .ok_or_else(|| Error::NoGpu("driver reports need a CUDA context".into()))?;
    let loaded = gpu
        .ctx
        .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
        .map_err(driver("loading a compiled module"))?;
    let mut reports = Vec::new();
    for &name in kernels {
        let f = loaded
            .load_function(name)
            .map_err(driver("loading a kernel"))?;
        let attr = |a| {
            f.get_attribute(a)
                .map(|v| v.max(0) as u32)
                .map_err(driver("querying a kernel attribute"))
        };
        reports.push(jit::KernelReport {
            name: name.to_string(),
            registers: attr(Attr::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            shared_bytes: attr(Attr::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            stack_frame: attr(Attr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            spill_stores: 0,
            spill_loads: 0,
        });
    }
    Ok(reports)
}

/// One stream of one GPU: what a GPU `Context` holds. Forks of a context share the CUDA context,
/// the device's properties and the loaded modules (`modules`), and have streams and look-back
/// state of their own.
pub(crate) struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    /// Compute capability as major * 10 + minor (90 for an H100).
    pub arch: u32,
    pub sm_count: u32,
    /// L2 cache in bytes.
    pub l2_bytes: u64,
    pub name: String,
    modules: Arc<Mutex<ModuleCache>>,
    /// The look-back's status slots and ticket counter, kept between launches on this stream.
    pub(crate) lookback: Mutex<lookback::LookbackScratch>,
    /// What a segmented reduction's tiles leave for its spine, kept between calls on this stream.
    pub(crate) carries: Mutex<memory::StreamScratch>,
    /// A one-shot segmented reduction's tile limits (`segreduce::OneShotLimits`).
    pub(crate) limits: Mutex<memory::StreamScratch>,
    /// Page-locked host memory for the small read-backs that end a call (a validation's
    /// findings), allocated on first use.
    pub(crate) readback: Mutex<memory::Readback>,
    /// The findings records (`memory::FindingsRecord`) of this stream's calls, allocated on
    /// first use.
    pub(crate) findings: Mutex<memory::FindingsRing>,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let lookback = self.lookback.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut scratch = std::mem::take(lookback);
        scratch.release(self);
        let carries = self.carries.get_mut().unwrap_or_else(|e| e.into_inner());
        std::mem::take(carries).release(self);
        let limits = self.limits.get_mut().unwrap_or_else(|e| e.into_inner());
        std::mem::take(limits).release(self);
        let readback = self.readback.get_mut().unwrap_or_else(|e| e.into_inner());
        std::mem::take(readback).release(self);
        let findings = self.findings.get_mut().unwrap_or_else(|e| e.into_inner());
        std::mem::take(findings).release(self);
    }
}

/// The loaded modules of every family: per family (its type), its modules by spec, one slot per
/// part. Looking a module up hashes its spec once and formats nothing (a segmented reduction's
/// apply looks its module up on every call).
#[derive(Default)]
struct ModuleCache(HashMap<TypeId, Box<dyn Any + Send>>);

type FamilyModules<F> = HashMap<<F as KernelFamily>::Spec, Vec<Option<Arc<LoadedModule>>>>;

impl ModuleCache {
    fn family<F: KernelFamily>(&mut self) -> &mut FamilyModules<F> {
        self.0
            .entry(TypeId::of::<F>())
            .or_insert_with(|| Box::new(FamilyModules::<F>::new()))
            .downcast_mut()
            .expect("one map type per family")
    }
}

/// A module loaded on the device, its kernels and their occupancy.
pub(crate) struct LoadedModule {
    _module: Arc<CudaModule>,
    functions: Vec<(&'static str, CudaFunction, u32)>,
}

impl LoadedModule {
    /// The kernel and how many of its CTAs fit on one SM.
    fn function(&self, name: &str) -> (&CudaFunction, u32) {
        let (_, f, blocks) = self
            .functions
            .iter()
            .find(|(n, _, _)| *n == name)
            .unwrap_or_else(|| panic!("the module does not export {name}"));
        (f, *blocks)
    }

    /// How many CTAs of the kernel that takes `A` fit on one SM.
    pub fn resident<A: KernelArgs>(&self) -> u32 {
        self.function(A::KERNEL).1
    }

    /// How many CTAs of `block` threads of the kernel that takes `A` fit on one SM with
    /// `shared_bytes` of dynamic shared memory each (at least one).
    pub fn resident_with<A: KernelArgs>(&self, block: u32, shared_bytes: u32) -> Result<u32> {
        let (f, _) = self.function(A::KERNEL);
        allow_shared(f, shared_bytes)?;
        let blocks = f
            .occupancy_max_active_blocks_per_multiprocessor(block, shared_bytes as usize, None)
            .map_err(driver("querying occupancy"))?;
        Ok(blocks.max(1))
    }
}

/// Allows `f` `shared_bytes` of dynamic shared memory where its static and dynamic shared
/// memory together pass the default 48 KiB.
fn allow_shared(f: &CudaFunction, shared_bytes: u32) -> Result<()> {
    if shared_bytes == 0 {
        return Ok(());
    }
    let fixed = f
        .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        .map_err(driver("reading a kernel's shared memory"))?;
    if shared_bytes + fixed as u32 > 48 * 1024 {
        f.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            shared_bytes as i32,
        )
        .map_err(driver("allowing a kernel more shared memory"))?;
    }
    Ok(())
}

impl Gpu {
    pub fn new(ordinal: usize) -> Result<Gpu> {
        if !driver_available() {
            return Err(Error::NoGpu(
                "the CUDA driver library (libcuda.so) was not found".into(),
            ));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoGpu(format!("{e}")))?;
        if count as usize <= ordinal {
            return Err(Error::NoGpu(format!(
                "device {ordinal} requested, {count} present"
            )));
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::NoGpu(format!("{e}")))?;
        let stream = ctx.new_stream().map_err(driver("creating a stream"))?;
        Gpu::on_stream(stream)
    }

    /// A GPU context that queues its work on `stream` (a caller's cudarc stream), with a module
    /// cache of its own.
    pub fn on_stream(stream: Arc<CudaStream>) -> Result<Gpu> {
        let ctx = stream.context().clone();
        let (major, minor) = ctx
            .compute_capability()
            .map_err(driver("compute capability"))?;
        let sm_count = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(driver("multiprocessor count"))? as u32;
        let l2_bytes = ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .map_err(driver("L2 cache size"))?
            .max(0) as u64;
        let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
        // Keep freed stream-ordered memory in the pool: temporaries then cost no driver round trip.
        // SAFETY: the device handle is the live context's; the attribute takes a u64 by pointer.
        unsafe {
            if let Ok(pool) = cudarc::driver::result::device::get_default_mem_pool(ctx.cu_device())
            {
                let mut threshold = u64::MAX;
                let _ = cudarc::driver::result::mem_pool::set_attribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    &mut threshold as *mut u64 as *mut _,
                );
            }
        }
        Ok(Gpu {
            ctx,
            stream,
            arch: (major * 10 + minor) as u32,
            sm_count,
            l2_bytes,
            name,
            modules: Arc::new(Mutex::new(ModuleCache::default())),
            lookback: Mutex::new(lookback::LookbackScratch::default()),
            carries: Mutex::new(memory::StreamScratch::default()),
            limits: Mutex::default(),
            readback: Mutex::new(memory::Readback::default()),
            findings: Mutex::default(),
        })
    }

    /// The same GPU on `stream` (of the same CUDA context), sharing the loaded modules; the
    /// look-back state is the new stream's own.
    pub fn with_stream(&self, stream: Arc<CudaStream>) -> Gpu {
        Gpu {
            ctx: self.ctx.clone(),
            stream,
            arch: self.arch,
            sm_count: self.sm_count,
            l2_bytes: self.l2_bytes,
            name: self.name.clone(),
            modules: self.modules.clone(),
            lookback: Mutex::new(lookback::LookbackScratch::default()),
            carries: Mutex::new(memory::StreamScratch::default()),
            limits: Mutex::default(),
            readback: Mutex::new(memory::Readback::default()),
            findings: Mutex::default(),
        }
    }

    /// Queues `work` on this stream, ordered after the work queued so far on the streams of
    /// `homes` (the streams whose buffers it uses), and makes those streams wait for it: a
    /// buffer's own stream (where it is read back and freed) never overtakes work of another
    /// stream on it.
    pub fn ordered<R>(&self, homes: &[&Arc<Gpu>], work: impl FnOnce() -> Result<R>) -> Result<R> {
        let mut foreign: Vec<&Arc<CudaStream>> = Vec::new();
        for h in homes {
            let s = &h.stream;
            if s.cu_stream() != self.stream.cu_stream()
                && !foreign.iter().any(|f| f.cu_stream() == s.cu_stream())
            {
                foreign.push(s);
            }
        }
        for s in &foreign {
            self.stream
                .join(s)
                .map_err(driver("ordering after another stream"))?;
        }
        let result = work();
        for s in &foreign {
            s.join(&self.stream)
                .map_err(driver("ordering another stream after this one"))?;
        }
        result
    }

    /// Part `part` of family `F` for `spec` if it is loaded already (no compile, no disk).
    pub fn loaded_module<F: KernelFamily>(
        &self,
        spec: &F::Spec,
        part: &Part,
    ) -> Option<Arc<LoadedModule>> {
        let index = F::PARTS
            .iter()
            .position(|p| p == part)
            .unwrap_or_else(|| panic!("{} is not a part of {}", part.name, F::NAME));
        self.modules
            .lock()
            .unwrap()
            .family::<F>()
            .get(spec)
            .and_then(|v| v[index].clone())
    }

    /// `parts` of family `F` for `spec`, in that order; see [`modules_of`](Gpu::modules_of).
    pub fn modules<F: KernelFamily>(
        &self,
        spec: &F::Spec,
        parts: &[&Part],
    ) -> Result<Vec<Arc<LoadedModule>>> {
        let wanted: Vec<_> = parts.iter().map(|&p| (spec, p)).collect();
        self.modules_of::<F>(&wanted)
    }

    /// The modules of family `F` for these (spec, part) pairs, in that order; where some are not
    /// loaded, they are compiled (or read from the disk cache) at once, a thread each: NVRTC
    /// optimizes a module's kernels one after another, so a call that needs several large parts
    /// waits for the largest alone.
    pub fn modules_of<F: KernelFamily>(
        &self,
        wanted: &[(&F::Spec, &Part)],
    ) -> Result<Vec<Arc<LoadedModule>>> {
        let loaded: Option<Vec<_>> = wanted
            .iter()
            .map(|&(spec, p)| self.loaded_module::<F>(spec, p))
            .collect();
        if let Some(loaded) = loaded {
            return Ok(loaded);
        }
        std::thread::scope(|scope| {
            let rest: Vec<_> = wanted
                .iter()
                .skip(1)
                .map(|&(spec, p)| scope.spawn(move || self.module::<F>(spec, p)))
                .collect();
            let first = wanted.first().map(|&(spec, p)| self.module::<F>(spec, p));
            first
                .into_iter()
                .chain(
                    rest.into_iter()
                        .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))),
                )
                .collect()
        })
    }

    /// Part `part` of family `F` for `spec`: from memory, else from the disk cache, else
    /// compiled.
    pub fn module<F: KernelFamily>(
        &self,
        spec: &F::Spec,
        part: &Part,
    ) -> Result<Arc<LoadedModule>> {
        if let Some(m) = self.loaded_module::<F>(spec, part) {
            return Ok(m);
        }
        let index = F::PARTS
            .iter()
            .position(|p| p == part)
            .expect("checked by loaded_module");
        let tuning = F::tuning(spec);
        let compiled = jit::compile(part.name, &family::source::<F>(spec, Some(part)), self.arch)?;
        let cu_module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(driver("loading a compiled module"))?;
        let mut functions = Vec::new();
        for &name in part.kernels {
            let f = cu_module
                .load_function(name)
                .map_err(driver("loading a kernel"))?;
            if F::gathers(spec, part) {
                self.keep_l1(&f, tuning.occ)?;
            }
            let blocks = f
                .occupancy_max_active_blocks_per_multiprocessor(tuning.nt, 0, None)
                .map_err(driver("querying occupancy"))?
                .max(1);
            functions.push((name, f, blocks));
        }
        let loaded = Arc::new(LoadedModule {
            _module: cu_module,
            functions,
        });
        let mut cache = self.modules.lock().unwrap();
        let slots = cache
            .family::<F>()
            .entry(spec.clone())
            .or_insert_with(|| vec![None; F::PARTS.len()]);
        slots[index] = Some(loaded.clone());
        Ok(loaded)
    }

    /// Launches the kernel of `module` that takes `args` on `grid` CTAs of `block` threads, on
    /// this stream. The argument list is the kernel's own (`KernelArgs`).
    pub fn launch<A: KernelArgs>(
        &self,
        module: &LoadedModule,
        grid: u32,
        block: u32,
        args: &A,
    ) -> Result<()> {
        self.launch_shared(module, grid, block, 0, args)
    }

    /// [`launch`](Gpu::launch) with `shared_bytes` of dynamic shared memory per CTA (the
    /// kernel's `extern __shared__` array), past the default 48 KiB where asked.
    pub fn launch_shared<A: KernelArgs>(
        &self,
        module: &LoadedModule,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        args: &A,
    ) -> Result<()> {
        let (f, _) = module.function(A::KERNEL);
        allow_shared(f, shared_bytes)?;
        self.launch_ex(f, grid, block, shared_bytes, args, false)
    }

    /// [`launch`](Gpu::launch) of a kernel that may start before the kernel queued before it on
    /// the stream ends (programmatic dependent launch, sm_90 on): its CTAs come up once the
    /// earlier kernel's have called `grid_launch_dependents` (intrinsics.cuh), and wait in
    /// `grid_dependency_wait` for its end and memory, which the kernel must call before it
    /// reads or writes anything another kernel touches. That hides the gap between dependent
    /// launches for small, latency-bound kernels (a merge sort's partitions, the kernels after a
    /// segmented reduction's first). Not for a kernel
    /// of less than a full wave of CTAs after a busy one, whose CTAs coming up early likely crowd
    /// the SMs that free first (a four-way merge pass launched so made the sort of 2^21 keys 16%
    /// slower); and a kernel of many waves should not call `grid_launch_dependents`, which
    /// brings the next kernel's CTAs into its tail (the merge sort of 2^28 keys 2.5% slower,
    /// BENCHMARKS.md). Before sm_90, a plain launch.
    pub fn launch_dependent<A: KernelArgs>(
        &self,
        module: &LoadedModule,
        grid: u32,
        block: u32,
        args: &A,
    ) -> Result<()> {
        let (f, _) = module.function(A::KERNEL);
        self.launch_ex(f, grid, block, 0, args, self.arch >= 90)
    }

    /// The crate's one kernel launch: `cuLaunchKernelEx` with the argument list's field
    /// pointers, and the programmatic-dependent-launch attribute where `dependent`.
    fn launch_ex<A: KernelArgs>(
        &self,
        f: &CudaFunction,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        args: &A,
        dependent: bool,
    ) -> Result<()> {
        self.bind()?;
        let mut params = args.params();
        // SAFETY: a zeroed launch attribute is a valid value of the plain C struct; its union
        // member is set before use.
        let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attribute.id =
            sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attribute.value.programmaticStreamSerializationAllowed = 1;
        let config = sys::CUlaunchConfig {
            gridDimX: grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: shared_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attribute,
            numAttrs: dependent as u32,
        };
        // SAFETY: `params` points at each field of `args`, which is the kernel's own argument
        // list (`KernelArgs`'s contract) and outlives the call (the driver copies the values);
        // its pointers are live device allocations of the lengths passed alongside, which the
        // safe API validated. Kernels launched dependent wait for the earlier kernel's memory
        // before touching any (`grid_dependency_wait`).
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                f.cu_function(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(driver("launching a kernel"))
    }

    /// Asks for the shared-memory carveout `occupancy::gather_carveout` gives `ctas` CTAs of `f`
    /// per SM, at most 164 of 228 KiB on sm_90: the rest of each SM's unified L1 / shared
    /// memory stays L1 cache, whatever the variant (a kernel with empty segments has larger
    /// tiles and then runs fewer CTAs). Measured on the H100, 2026-11-24: every gather kernel at
    /// 164 KiB ran f64 SpMV on random rows in 0.68 ms; with the apply's at 164 and the
    /// one-shot's (larger) at 228, 0.87 ms. The hint is a percentage that the driver turns into a
    /// carveout the device has (`occupancy::gather_carveout_percent` says which).
    fn keep_l1(&self, f: &cudarc::driver::CudaFunction, ctas: u32) -> Result<()> {
        use sys::CUdevice_attribute as D;
        use sys::CUfunction_attribute as F;
        let attribute = |a, what| {
            self.ctx
                .attribute(a)
                .map(|v| v as u32)
                .map_err(driver(what))
        };
        let limits = occupancy::SmLimits {
            shared_bytes: attribute(
                D::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                "shared memory per SM",
            )?,
            shared_reserved_per_cta: attribute(
                D::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                "reserved shared memory per block",
            )?,
            ..occupancy::SmLimits::for_arch(self.arch)
        };
        let smem = f
            .get_attribute(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .map_err(driver("a kernel's shared memory"))? as u32;
        let percent = occupancy::gather_carveout_percent(&limits, ctas, smem).min(100);
        f.set_attribute(
            F::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
            percent as i32,
        )
        .map_err(driver("setting a kernel's shared-memory carveout"))
    }

    /// GPU time of the work `work` queues, from events recorded around it.
    pub fn time_ms(&self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self
            .ctx
            .new_event(flags)
            .map_err(driver("creating an event"))?;
        let end = self
            .ctx
            .new_event(flags)
            .map_err(driver("creating an event"))?;
        start
            .record(&self.stream)
            .map_err(driver("recording an event"))?;
        work()?;
        end.record(&self.stream)
            .map_err(driver("recording an event"))?;
        end.synchronize().map_err(driver("waiting for an event"))?;
        Ok(start.elapsed_ms(&end).map_err(driver("reading an event"))? as f64)
    }

    pub fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(driver("synchronizing the stream"))
    }
}

/// An element passed to a kernel by value.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct ByValue<T>(pub T);

// SAFETY: `Element` requires `bytemuck::Pod`: plain bytes with no pointers or padding invariants,
// which is what a kernel parameter of the matching CUDA type (checked by static_assert) expects.
unsafe impl<T: Element> DeviceRepr for ByValue<T> {}

/// What the seed's benchmarks print about a GPU, from the driver's device attributes
/// ([`Context::device_info`](crate::Context::device_info)). An attribute the driver does not
/// report reads as 0.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    /// The CUDA device ordinal.
    pub ordinal: usize,
    /// The device's name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (u32, u32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Peak SM clock in MHz.
    pub sm_clock_mhz: f64,
    /// Peak memory clock in MHz.
    pub memory_clock_mhz: f64,
    /// Global memory bus width in bits.
    pub bus_width_bits: u32,
    /// Device memory in bytes.
    pub memory_total: u64,
    /// Device memory free now, in bytes.
    pub memory_free: u64,
    /// L2 cache in bytes.
    pub l2_bytes: u64,
    /// Whether ECC is enabled.
    pub ecc: bool,
}

impl DeviceInfo {
    /// Peak DRAM bandwidth in GB/s: 2 (double data rate) x memory clock x bus width / 8.
    pub fn peak_bandwidth_gbs(&self) -> f64 {
        2.0 * self.memory_clock_mhz * 1e6 * self.bus_width_bits as f64 / 8.0 / 1e9
    }
}

pub(crate) fn device_info(gpu: &Gpu) -> DeviceInfo {
    use sys::CUdevice_attribute as A;
    let attr = |a| gpu.ctx.attribute(a).map(|v| v.max(0) as u32).unwrap_or(0);
    let (memory_free, memory_total) = gpu.ctx.mem_get_info().unwrap_or((0, 0));
    DeviceInfo {
        ordinal: gpu.ctx.ordinal(),
        name: gpu.name.clone(),
        compute_capability: (gpu.arch / 10, gpu.arch % 10),
        sm_count: gpu.sm_count,
        sm_clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE) as f64 / 1e3,
        memory_clock_mhz: attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE) as f64 / 1e3,
        bus_width_bits: attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        memory_total: memory_total as u64,
        memory_free: memory_free as u64,
        l2_bytes: attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) as u64,
        ecc: attr(A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED) != 0,
    }
}
