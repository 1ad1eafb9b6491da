//! The CUDA backend: device, memory, run-time compilation and the host side of each primitive.
//! All `unsafe` of the crate lives under this module, each block with its `SAFETY:` comment.

pub(crate) mod compact;
pub mod discover;
pub mod jit;
pub(crate) mod marshal;
pub(crate) mod memory;
pub mod occupancy;
pub(crate) mod reduce;
pub(crate) mod scan;
pub(crate) mod segreduce;
pub(crate) mod sort;
pub(crate) mod transform;

use crate::error::{Error, Result};
use crate::tuning::Tuning;
use crate::{Element, Op};
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaStream, DeviceRepr};
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

/// Per-kernel registers, static shared memory and local memory of a compiled module, as the driver
/// reports them after loading it on `ctx`'s GPU (the cubin must be for that GPU's architecture).
/// The fallback for NVRTC builds that return no ptxas report: the driver does not split local
/// memory into stack and spills, so `stack_frame` holds all of it and the spill fields are 0.
pub fn driver_reports(
    ctx: &crate::Context,
    module: jit::Module,
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
    for &name in module.kernels() {
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
    pub name: String,
    modules: Arc<Mutex<HashMap<String, Arc<LoadedModule>>>>,
    /// The segmented-reduction modules by their fields, looked up on every call (a plan's apply
    /// among them), where formatting `modules`' string key took 2.4 us before the launch.
    seg_modules: Arc<Mutex<HashMap<SegModuleKey, Arc<LoadedModule>>>>,
    /// The look-back scan's status words and ticket counter, kept between scans on this stream.
    pub(crate) lookback: Mutex<scan::LookbackScratch>,
    /// What a segmented reduction's tiles leave for its spine, kept between calls on this stream.
    pub(crate) carries: Mutex<memory::StreamScratch>,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let lookback = self.lookback.get_mut().unwrap_or_else(|e| e.into_inner());
        let mut scratch = std::mem::take(lookback);
        scratch.release(self);
        let carries = self.carries.get_mut().unwrap_or_else(|e| e.into_inner());
        std::mem::take(carries).release(self);
    }
}

/// What tells segmented-reduction modules apart (`Gpu::segreduce_module`).
#[derive(Clone, PartialEq, Eq, Hash)]
struct SegModuleKey {
    module: jit::Module,
    cuda_type: &'static str,
    declaration: &'static str,
    spec: jit::SegReduceSpec,
    load: jit::Load,
    /// The operator's and the multiply's CUDA expressions and helpers.
    ops: [Option<(String, String)>; 2],
    tuning: Tuning,
}

/// A module loaded on the device, its kernels and their occupancy.
pub(crate) struct LoadedModule {
    _module: Arc<CudaModule>,
    functions: Vec<(&'static str, CudaFunction, u32)>,
}

impl LoadedModule {
    /// The kernel and how many of its CTAs fit on one SM.
    pub fn function(&self, name: &str) -> (&CudaFunction, u32) {
        let (_, f, blocks) = self
            .functions
            .iter()
            .find(|(n, _, _)| *n == name)
            .expect("kernel names are fixed per module");
        (f, *blocks)
    }
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
            name,
            modules: Arc::new(Mutex::new(HashMap::new())),
            seg_modules: Arc::new(Mutex::new(HashMap::new())),
            lookback: Mutex::new(scan::LookbackScratch::default()),
            carries: Mutex::new(memory::StreamScratch::default()),
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
            name: self.name.clone(),
            modules: self.modules.clone(),
            seg_modules: self.seg_modules.clone(),
            lookback: Mutex::new(scan::LookbackScratch::default()),
            carries: Mutex::new(memory::StreamScratch::default()),
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

    /// The module of `family` specialized for `T`, `op`, the input's `load` and `tuning`: from
    /// memory, else from the disk cache, else compiled.
    pub fn module<T: Element>(
        &self,
        module: jit::Module,
        op: Option<&Op<T>>,
        load: &jit::Load,
        tuning: &Tuning,
    ) -> Result<Arc<LoadedModule>> {
        let key = format!(
            "{:?}|{}|{}|{:?}|{:?}|{:?}",
            module,
            T::CUDA_TYPE,
            T::CUDA_DECLARATION,
            op.map(|o| (o.cuda_expression(), o.cuda_helpers(), o.is_commutative())),
            load,
            tuning
        );
        self.load(key, module, tuning, || {
            jit::source(module, op, load, tuning)
        })
    }

    /// A merge / mergesort module (`Blocksort`, `MergePasses` or `MergeSequences`) for keys `K`
    /// and values `V`.
    pub fn sort_module<K: Element, V: Element>(
        &self,
        module: jit::Module,
        comparator: &crate::Comparator<K>,
        values: jit::SortValues,
        tuning: &Tuning,
    ) -> Result<Arc<LoadedModule>> {
        let key = format!(
            "{:?}|{}|{}|{}|{}|{}|{}|{:?}|{:?}",
            module,
            K::CUDA_TYPE,
            K::CUDA_DECLARATION,
            V::CUDA_TYPE,
            V::CUDA_DECLARATION,
            comparator.cuda_expression(),
            comparator.cuda_helpers(),
            values,
            tuning
        );
        self.load(key, module, tuning, || {
            jit::sort_part_source::<K, V>(module, comparator, values, tuning)
        })
    }

    /// The compaction module (reduce-by-key when `op` is given) for keys `K` and values `V`.
    pub fn compact_module<K: Element, V: Element>(
        &self,
        spec: &jit::CompactSpec,
        test: &jit::KeyTest<'_, K>,
        op: Option<&Op<V>>,
        tuning: &Tuning,
    ) -> Result<Arc<LoadedModule>> {
        let key = format!(
            "compact|{}|{}|{}|{}|{:?}|{}|{:?}|{:?}",
            K::CUDA_TYPE,
            K::CUDA_DECLARATION,
            V::CUDA_TYPE,
            V::CUDA_DECLARATION,
            spec,
            test.key(),
            op.map(|o| (o.cuda_expression(), o.cuda_helpers())),
            tuning
        );
        let module = spec.module(op.is_some());
        self.load(key, module, tuning, || {
            jit::compact_source::<K, V>(spec, test, op, tuning)
        })
    }

    /// The segmented-reduction module (`SegReduceTiles` or `SegReduceHelpers`) for values `T`
    /// (SpMV: products by `mul`).
    pub fn segreduce_module<T: Element>(
        &self,
        module: jit::Module,
        spec: &jit::SegReduceSpec,
        load: &jit::Load,
        op: &Op<T>,
        mul: Option<&Op<T>>,
        tuning: &Tuning,
    ) -> Result<Arc<LoadedModule>> {
        let strings = |o: &Op<T>| {
            (
                o.cuda_expression().to_string(),
                o.cuda_helpers().to_string(),
            )
        };
        let key = SegModuleKey {
            module,
            cuda_type: T::CUDA_TYPE,
            declaration: T::CUDA_DECLARATION,
            spec: *spec,
            load: load.clone(),
            ops: [Some(strings(op)), mul.map(strings)],
            tuning: *tuning,
        };
        if let Some(m) = self.seg_modules.lock().unwrap().get(&key) {
            return Ok(m.clone());
        }
        let name = format!(
            "segreduce|{:?}|{}|{}|{:?}|{:?}|{:?}|{:?}",
            module,
            T::CUDA_TYPE,
            T::CUDA_DECLARATION,
            spec,
            load,
            key.ops,
            tuning
        );
        let gathers = module == jit::Module::SegReduceTiles && spec.gathers();
        let loaded = self.load_with(name, module, tuning, gathers, || {
            jit::segreduce_part_source::<T>(module, spec, load, op, mul, tuning)
        })?;
        self.seg_modules.lock().unwrap().insert(key, loaded.clone());
        Ok(loaded)
    }

    /// A module from memory, else from the disk cache, else compiled from `source()`.
    fn load(
        &self,
        key: String,
        module: jit::Module,
        tuning: &Tuning,
        source: impl FnOnce() -> String,
    ) -> Result<Arc<LoadedModule>> {
        self.load_with(key, module, tuning, false, source)
    }

    /// [`Gpu::load`]; with `gathers`, the module's tiles gather through the L1 cache (SpMV's
    /// vector, indirect CSR's values), and its kernels take only the shared memory of
    /// `tuning.occ` CTAs per SM: the rest stays L1. (Left to the driver, such a kernel got all of
    /// it; the L1 left held too few gathers in flight, and f64 SpMV on random rows ran at half
    /// speed: BENCHMARKS.md.)
    fn load_with(
        &self,
        key: String,
        module: jit::Module,
        tuning: &Tuning,
        gathers: bool,
        source: impl FnOnce() -> String,
    ) -> Result<Arc<LoadedModule>> {
        if let Some(m) = self.modules.lock().unwrap().get(&key) {
            return Ok(m.clone());
        }
        let compiled = jit::compile(module.name(), &source(), self.arch)?;
        let cu_module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin))
            .map_err(driver("loading a compiled module"))?;
        let mut functions = Vec::new();
        for &name in module.kernels() {
            let f = cu_module
                .load_function(name)
                .map_err(driver("loading a kernel"))?;
            if gathers {
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
        self.modules.lock().unwrap().insert(key, loaded.clone());
        Ok(loaded)
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

/// Kernel launch on the GPU's stream. Arguments are pushed in order.
pub(crate) fn launch(
    gpu: &Gpu,
    f: &CudaFunction,
    grid: u32,
    block: u32,
    args: &[&dyn PushArg],
) -> Result<()> {
    let mut builder = gpu.stream.launch_builder(f);
    for a in args {
        a.push(&mut builder);
    }
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: every kernel of this crate is launched with arguments matching its signature in
    // kernels/*.cu (the callers below are written against them); all pointers are live device
    // allocations of the lengths passed alongside, which the safe API validated.
    unsafe { builder.launch(cfg) }.map_err(driver("launching a kernel"))?;
    Ok(())
}

/// A kernel argument (object-safe wrapper over cudarc's builder).
pub(crate) trait PushArg {
    fn push<'a>(&'a self, b: &mut cudarc::driver::LaunchArgs<'a>);
}

impl<T: DeviceRepr> PushArg for T {
    fn push<'a>(&'a self, b: &mut cudarc::driver::LaunchArgs<'a>) {
        use cudarc::driver::PushKernelArg;
        b.arg(self);
    }
}

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
