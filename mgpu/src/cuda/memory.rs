//! Device memory: stream-ordered allocations owned by buffers and temporaries.

use super::{driver, Gpu};
use crate::error::Result;
use crate::Element;
use cudarc::driver::{result, sys, CudaSlice, DeviceRepr};
use std::sync::Arc;

/// An allocation on the GPU's stream, freed (stream-ordered) on drop.
pub(crate) struct DeviceMem {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
    pub gpu: Arc<Gpu>,
}

impl Gpu {
    /// Makes this GPU's context the thread's current one: the driver's stream calls below fail
    /// (CUDA_ERROR_INVALID_VALUE) on a stream of another context than the current, which is
    /// whatever context the thread used last (another GPU's, in a process that drives several).
    pub(super) fn bind(&self) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(driver("binding the context"))
    }

    /// `bytes` (> 0) of uninitialized stream-ordered memory, only to be used on this GPU's stream.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr> {
        self.bind()?;
        // SAFETY: the stream is live; the memory is only used on this stream (all work of a
        // Context is queued on its one stream).
        unsafe { result::malloc_async(self.stream.cu_stream(), bytes) }
            .map_err(driver("allocating device memory (out of memory?)"))
    }

    /// Frees memory from `alloc` after the work queued before on the stream (0: nothing to do).
    pub(crate) fn free(&self, ptr: sys::CUdeviceptr) {
        if ptr != 0 && self.bind().is_ok() {
            // SAFETY: the pointer came from malloc_async (or a leaked cudarc slice) in this context
            // and its owner frees it once, after all work queued before on the stream.
            let _ = unsafe { result::free_async(ptr, self.stream.cu_stream()) };
        }
    }

    /// Zeroes `bytes` at `ptr`, which must lie inside one live allocation of this context.
    pub(crate) fn memset_zero(&self, ptr: sys::CUdeviceptr, bytes: usize) -> Result<()> {
        self.memset(ptr, 0, bytes)
    }

    /// Sets `bytes` at `ptr` (inside one live allocation of this context) to `byte`, on the
    /// stream.
    pub(crate) fn memset(&self, ptr: sys::CUdeviceptr, byte: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the callers pass a range inside a live allocation (checked by DeviceMem, or the
        // look-back scratch's own allocation of at least `bytes`).
        unsafe { result::memset_d8_async(ptr, byte, bytes, self.stream.cu_stream()) }
            .map_err(driver("memset"))
    }
}

/// Device memory kept on one stream between calls, each of which takes it whole: work on the
/// stream runs in order, so a call's kernels use it only once the previous call's are done. It
/// grows to a new allocation (the old one freed stream-ordered) when a call needs more. (A
/// segmented reduction's per-tile carries: allocating them took 0.5-0.9 us of the host's time
/// before the launch, which a timed call waits for.)
#[derive(Default)]
pub(crate) struct StreamScratch {
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

impl StreamScratch {
    /// At least `bytes` (> 0) of uninitialized memory, for work queued on `gpu`'s stream.
    pub fn reserve(&mut self, gpu: &Gpu, bytes: usize) -> Result<sys::CUdeviceptr> {
        if bytes > self.bytes {
            let ptr = gpu.alloc(bytes)?;
            gpu.free(self.ptr);
            *self = StreamScratch { ptr, bytes };
        }
        Ok(self.ptr)
    }

    /// Frees the allocation (stream-ordered, after the work queued before).
    pub fn release(&mut self, gpu: &Gpu) {
        gpu.free(self.ptr);
        *self = StreamScratch::default();
    }
}

impl DeviceMem {
    /// Uninitialized memory; callers write it before any read (temporaries) or zero it.
    pub fn alloc(gpu: &Arc<Gpu>, bytes: usize) -> Result<DeviceMem> {
        let ptr = if bytes == 0 { 0 } else { gpu.alloc(bytes)? };
        Ok(DeviceMem {
            ptr,
            bytes,
            gpu: gpu.clone(),
        })
    }

    pub fn zeroed(gpu: &Arc<Gpu>, bytes: usize) -> Result<DeviceMem> {
        let m = Self::alloc(gpu, bytes)?;
        m.memset_zero(0, bytes)?;
        Ok(m)
    }

    pub fn memset_zero(&self, offset: usize, bytes: usize) -> Result<()> {
        assert!(offset + bytes <= self.bytes);
        self.gpu.memset_zero(self.ptr + offset as u64, bytes)
    }

    /// Takes ownership of a cudarc slice's allocation (zero-copy).
    pub fn from_cuda_slice<T: DeviceRepr>(gpu: &Arc<Gpu>, slice: CudaSlice<T>) -> DeviceMem {
        let bytes = slice.num_bytes();
        // Work queued on the slice's stream must finish before ours uses the memory.
        let _ = gpu.stream.join(slice.stream());
        let ptr = slice.leak();
        DeviceMem {
            ptr,
            bytes,
            gpu: gpu.clone(),
        }
    }

    /// Gives the allocation to a cudarc slice of `len` elements (zero-copy).
    pub fn into_cuda_slice<T: DeviceRepr>(self, len: usize) -> CudaSlice<T> {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: `ptr` is a live allocation of at least `len * size_of::<T>()` bytes made in this
        // context, and `me` is never dropped, so the slice becomes its only owner.
        unsafe { me.gpu.stream.upgrade_device_ptr::<T>(me.ptr, len) }
    }

    pub fn upload<T: Element>(&self, offset_elems: usize, data: &[T]) -> Result<()> {
        assert!((offset_elems + data.len()) * std::mem::size_of::<T>() <= self.bytes);
        self.gpu.upload(
            self.ptr + (offset_elems * std::mem::size_of::<T>()) as u64,
            data,
        )
    }

    /// Copies `out.len()` elements starting at `offset_elems` to the host (synchronizes).
    pub fn download<T: Element>(&self, offset_elems: usize, out: &mut [T]) -> Result<()> {
        assert!((offset_elems + out.len()) * std::mem::size_of::<T>() <= self.bytes);
        self.gpu.download(
            self.ptr + (offset_elems * std::mem::size_of::<T>()) as u64,
            out,
        )
    }
}

impl Gpu {
    /// Copies `data` to `dst`, which must start `data.len()` elements inside one live allocation
    /// (the callers check it: a buffer's view, or a `DeviceMem` range).
    pub(crate) fn upload<T: Element>(&self, dst: sys::CUdeviceptr, data: &[T]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: the destination range is inside a live allocation (the callers' bounds checks);
        // a pageable source is staged by the driver before the call returns, so `data` need not
        // outlive it.
        unsafe { result::memcpy_htod_async(dst, data, self.stream.cu_stream()) }
            .map_err(driver("copying host to device"))
    }

    /// Copies `out.len()` elements at `src` (inside one live allocation) to the host, after the
    /// work queued on this stream (synchronizes). Up to `Readback::BYTES` go through page-locked
    /// memory, which the copy engine writes directly (a pageable destination is staged by the
    /// driver: microseconds more on the call's path).
    pub(crate) fn download<T: Element>(&self, src: sys::CUdeviceptr, out: &mut [T]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        self.bind()?;
        let bytes = std::mem::size_of_val(out);
        // (Not while a queued read-back of this thread holds the buffer: pageable then.)
        let mut readback = (bytes <= Readback::BYTES)
            .then(|| self.readback_buffer())
            .flatten();
        if let Some(readback) = &mut readback {
            if let Some(host) = readback.host() {
                // SAFETY: `host` is Readback::BYTES of page-locked memory that this lock guards;
                // the source range is inside a live allocation (the callers' bounds checks); the
                // stream is synchronized before `host` is read, and `out` holds `bytes` bytes
                // of plain elements.
                unsafe {
                    sys::cuMemcpyDtoHAsync_v2(host.cast(), src, bytes, self.stream.cu_stream())
                        .result()
                        .map_err(driver("copying device to host"))?;
                    self.synchronize()?;
                    std::ptr::copy_nonoverlapping(host, out.as_mut_ptr().cast::<u8>(), bytes);
                }
                return Ok(());
            }
        }
        // SAFETY: the source range is inside a live allocation (the callers' bounds checks); the
        // stream is synchronized before `out` is read or released.
        unsafe { result::memcpy_dtoh_async(out, src, self.stream.cu_stream()) }
            .map_err(driver("copying device to host"))?;
        self.synchronize()
    }

    /// Copies `out.len()` elements to the host, element `i` from `src + i * stride` bytes, after
    /// the work queued on this stream (synchronizes): gathered on the device by one 2-D copy,
    /// then one download (a 2-D copy straight to the host moves each element on its own, about
    /// a microsecond apiece). Every element read lies inside one live allocation (the callers'
    /// checks).
    pub(crate) fn download_strided<T: Element>(
        self: &Arc<Gpu>,
        src: sys::CUdeviceptr,
        stride: usize,
        out: &mut [T],
    ) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if out.len() <= 1 || stride == size {
            return self.download(src, out);
        }
        let packed = DeviceMem::alloc(self, std::mem::size_of_val(out))?;
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: src,
            srcArray: std::ptr::null_mut(),
            srcPitch: stride,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: packed.ptr,
            dstArray: std::ptr::null_mut(),
            dstPitch: size,
            WidthInBytes: size,
            Height: out.len(),
        };
        self.bind()?;
        // SAFETY: rows `src + i * stride .. + size` lie inside a live allocation (the callers'
        // bounds checks), and `packed` holds `Height` rows of `size` bytes; both stay alive
        // until the download below has synchronized the stream.
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, self.stream.cu_stream()).result() }
            .map_err(driver("gathering device memory (strided)"))?;
        packed.download(0, out)
    }

    /// Device-to-device copy of `bytes` from `src` to `dst` on this stream; both ranges lie inside
    /// live allocations (checked by the callers).
    pub(crate) fn copy(
        &self,
        src: sys::CUdeviceptr,
        dst: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.bind()?;
        // SAFETY: both ranges lie inside live allocations of this context (the callers' checks).
        unsafe { result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream()) }
            .map_err(driver("copying device to device"))
    }
}

/// Bytes of a validation's findings record (kernel_segreduce.cu's `bad`): the first bad index of
/// each of four checks and the longest segment's length complemented (words 0-4), and whether the
/// tiles found one lying inside a segment (word 16, a cache line apart: the tiles clear it with
/// atomics while reading the findings); every byte 0xff where nothing was found.
pub(crate) const FINDINGS_BYTES: usize = 256;

/// Records in a stream's ring of findings records ([`FindingsRing`]).
const RING_RECORDS: usize = 64;

/// A stream's findings records, in one allocation, each used by one call and cleared all at once
/// when the ring comes round: a call queues no clear of its own (a memset of its record behind
/// its work took 1-2 us of the GPU's time in each one-shot call).
#[derive(Default)]
pub(crate) struct FindingsRing {
    base: sys::CUdeviceptr,
    /// The next record to hand out; `RING_RECORDS`: the ring must be cleared first.
    next: usize,
    /// Records handed out and not yet dropped: the ring is cleared only when none is, so that
    /// no call's record is cleared between its kernels.
    held: usize,
}

impl FindingsRing {
    pub(crate) fn release(&mut self, gpu: &Gpu) {
        gpu.free(std::mem::take(&mut self.base));
    }
}

/// A findings record on the device, every byte 0xff: the next of the stream's ring, or a fresh
/// one where the ring must be cleared while another call holds one of its records.
pub(crate) struct FindingsRecord {
    pub ptr: sys::CUdeviceptr,
    /// Whether the strict offsets' checks ran into it (its longest length is then the
    /// geometry's, from which the tiles may find segments of one length).
    pub strict_checks: bool,
    gpu: Arc<Gpu>,
    in_ring: bool,
}

impl FindingsRecord {
    pub fn take(gpu: &Arc<Gpu>) -> Result<FindingsRecord> {
        let mut ring = gpu.findings.lock().unwrap_or_else(|e| e.into_inner());
        if ring.base == 0 {
            ring.base = gpu.alloc(RING_RECORDS * FINDINGS_BYTES)?;
            ring.next = RING_RECORDS;
        }
        if ring.next == RING_RECORDS && ring.held == 0 {
            // Behind every call that used the ring: none holds a record now, so each queued
            // all of its work before this clear.
            gpu.memset(ring.base, 0xff, RING_RECORDS * FINDINGS_BYTES)?;
            ring.next = 0;
        }
        if ring.next < RING_RECORDS {
            let ptr = ring.base + (ring.next * FINDINGS_BYTES) as u64;
            ring.next += 1;
            ring.held += 1;
            return Ok(FindingsRecord {
                ptr,
                strict_checks: false,
                gpu: gpu.clone(),
                in_ring: true,
            });
        }
        drop(ring);
        let record = FindingsRecord {
            ptr: gpu.alloc(FINDINGS_BYTES)?,
            strict_checks: false,
            gpu: gpu.clone(),
            in_ring: false,
        };
        gpu.memset(record.ptr, 0xff, FINDINGS_BYTES)?;
        Ok(record)
    }
}

impl Drop for FindingsRecord {
    fn drop(&mut self) {
        if self.in_ring {
            let mut ring = self.gpu.findings.lock().unwrap_or_else(|e| e.into_inner());
            ring.held -= 1;
        } else {
            self.gpu.free(self.ptr);
        }
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        self.gpu.free(self.ptr);
    }
}

impl Gpu {
    /// The read-back buffer, unless another read-back holds it (a queued one of this thread:
    /// waiting for it would never end).
    fn readback_buffer(&self) -> Option<std::sync::MutexGuard<'_, Readback>> {
        match self.readback.try_lock() {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Queues the copy of `bytes` (at most `Readback::BYTES`) at `src` (inside one live
    /// allocation) to page-locked memory after the work queued so far, for the host to take
    /// later ([`QueuedDownload::wait`]) while the GPU runs what is queued after it: a one-shot
    /// call waits for its validation's findings, not for its whole work. `None` where the
    /// buffer or its event cannot be had (then [`download`](Gpu::download) later).
    pub(crate) fn queue_download(
        &self,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<Option<QueuedDownload<'_>>> {
        assert!(bytes <= Readback::BYTES);
        let Some(mut readback) = self.readback_buffer() else {
            return Ok(None);
        };
        self.bind()?;
        let (Some(host), Some(event)) = (readback.host(), readback.event()) else {
            return Ok(None);
        };
        // SAFETY: `host` is Readback::BYTES of page-locked memory that the guard (kept in the
        // result) reserves until the copy was waited for; the source range is inside a live
        // allocation (the caller's); the event belongs to this context.
        unsafe {
            sys::cuMemcpyDtoHAsync_v2(host.cast(), src, bytes, self.stream.cu_stream())
                .result()
                .map_err(driver("copying device to host"))?;
            sys::cuEventRecord(event, self.stream.cu_stream())
                .result()
                .map_err(driver("recording an event"))?;
        }
        Ok(Some(QueuedDownload {
            readback,
            host,
            event,
            bytes,
        }))
    }

    /// The stream's read-back buffer as the page-locked words a kernel reports `N` words to,
    /// then a flag (word `N`) that the host waits for ([`MappedReport::wait`]): a one-shot's
    /// first tile reports its validation's findings so, with no copy queued between them.
    /// `None` where the buffer is taken or cannot be mapped (then
    /// [`queue_download`](Gpu::queue_download)).
    pub(crate) fn mapped_report<const N: usize>(&self) -> Result<Option<MappedReport<'_, N>>> {
        const { assert!((N + 1) * 8 <= Readback::BYTES) };
        let Some(mut readback) = self.readback_buffer() else {
            return Ok(None);
        };
        self.bind()?;
        let (Some(host), Some(device)) = (readback.host(), readback.device()) else {
            return Ok(None);
        };
        let host = host.cast::<u64>();
        // SAFETY: `host` is Readback::BYTES of page-locked memory, 8-byte aligned, that the guard
        // reserves; no kernel writes it until one is launched with `device`.
        unsafe { std::ptr::write_volatile(host.add(N), 0) };
        Ok(Some(MappedReport {
            _readback: readback,
            host,
            device,
            gpu: self,
            waited: false,
        }))
    }
}

/// Words that a kernel writes to page-locked host memory ([`Gpu::mapped_report`]).
pub(crate) struct MappedReport<'g, const N: usize> {
    /// Holds the buffer until the report arrived (or the stream is idle).
    _readback: std::sync::MutexGuard<'g, Readback>,
    host: *mut u64,
    /// The address the kernel writes to.
    pub device: sys::CUdeviceptr,
    gpu: &'g Gpu,
    waited: bool,
}

impl<const N: usize> MappedReport<'_, N> {
    /// Waits until the kernel set the flag, and returns the words before it; `None` where the
    /// stream went idle without them (the kernel was not launched with this report). A failed
    /// stream is its error.
    pub(crate) fn wait(mut self) -> Result<Option<[u64; N]>> {
        self.waited = true;
        let flag = self.host.wrapping_add(N);
        let arrived = || {
            // SAFETY: word N of the buffer this report holds; the kernel writes it once.
            unsafe { std::ptr::read_volatile(flag) != 0 }
        };
        let mut spins = 0u64;
        while !arrived() {
            spins += 1;
            if spins.is_multiple_of(256) {
                // SAFETY: a query of this Gpu's live stream.
                let idle = unsafe { sys::cuStreamQuery(self.gpu.stream.cu_stream()) };
                match idle {
                    sys::CUresult::CUDA_ERROR_NOT_READY => {}
                    sys::CUresult::CUDA_SUCCESS if arrived() => break,
                    sys::CUresult::CUDA_SUCCESS => return Ok(None),
                    failed => failed
                        .result()
                        .map_err(driver("waiting for a kernel's report"))?,
                }
                if spins > 1 << 16 {
                    std::thread::yield_now();
                }
            }
            std::hint::spin_loop();
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let mut out = [0u64; N];
        for (i, word) in out.iter_mut().enumerate() {
            // SAFETY: words before the flag, written before it (the kernel's system fence).
            *word = unsafe { std::ptr::read_volatile(self.host.add(i)) };
        }
        Ok(Some(out))
    }
}

impl<const N: usize> Drop for MappedReport<'_, N> {
    fn drop(&mut self) {
        // Unwaited (an error after the launch): the kernel may still write the buffer, which
        // the next read-back may then hold.
        if !self.waited {
            let _ = self.gpu.synchronize();
        }
    }
}

/// A read-back queued by [`Gpu::queue_download`].
pub(crate) struct QueuedDownload<'g> {
    /// Holds the buffer until the copy into it was waited for.
    readback: std::sync::MutexGuard<'g, Readback>,
    host: *mut u8,
    event: sys::CUevent,
    bytes: usize,
}

impl QueuedDownload<'_> {
    /// Waits for the copy (not for the work queued after it) and returns its bytes as `out`.
    pub(crate) fn wait<T: Element>(self, out: &mut [T]) -> Result<()> {
        assert_eq!(std::mem::size_of_val(out), self.bytes);
        // SAFETY: the event was recorded after the copy into `host` on the buffer's stream; once
        // it completed, `host` holds `bytes` bytes, which `out` (plain elements) has room for.
        unsafe {
            sys::cuEventSynchronize(self.event)
                .result()
                .map_err(driver("waiting for a read-back"))?;
            std::ptr::copy_nonoverlapping(self.host, out.as_mut_ptr().cast::<u8>(), self.bytes);
        }
        drop(self.readback);
        Ok(())
    }
}

/// A GPU stream's page-locked read-back buffer ([`Gpu::download`] of small results), and the
/// event that marks a queued copy into it.
#[derive(Default)]
pub(crate) struct Readback {
    host: Option<std::ptr::NonNull<u8>>,
    /// The buffer's address on the device (`None`: not mapped).
    device: Option<sys::CUdeviceptr>,
    event: Option<sys::CUevent>,
    failed: bool,
}

// SAFETY: the buffer is plain page-locked host memory, used only under its Gpu's mutex.
unsafe impl Send for Readback {}

impl Readback {
    /// The bytes a read-back through it can take.
    pub const BYTES: usize = 64;

    /// The buffer, allocated on first use; `None` where page-locked memory cannot be had (the
    /// caller copies to pageable memory instead).
    fn host(&mut self) -> Option<*mut u8> {
        if self.host.is_none() && !self.failed {
            // SAFETY: a page-locked allocation in the bound context, mapped into the device's
            // address space, freed by `release`.
            match unsafe { result::malloc_host(Self::BYTES, sys::CU_MEMHOSTALLOC_DEVICEMAP) } {
                Ok(p) => self.host = std::ptr::NonNull::new(p.cast::<u8>()),
                Err(_) => self.failed = true,
            }
            if let Some(host) = self.host {
                let mut device = 0;
                // SAFETY: `host` is a mapped page-locked allocation of the bound context.
                let mapped = unsafe {
                    sys::cuMemHostGetDevicePointer_v2(&mut device, host.as_ptr().cast(), 0)
                };
                self.device = (mapped == sys::CUresult::CUDA_SUCCESS).then_some(device);
            }
        }
        self.host.map(|p| p.as_ptr())
    }

    /// The buffer's device address, where it is mapped (after [`host`](Readback::host)).
    fn device(&self) -> Option<sys::CUdeviceptr> {
        self.device
    }

    /// The event of queued copies, created on first use in the bound context; `None` where it
    /// cannot be.
    fn event(&mut self) -> Option<sys::CUevent> {
        if self.event.is_none() {
            let flags = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
            let mut event = std::ptr::null_mut();
            // SAFETY: creates a plain event in the bound context, destroyed by `release`.
            if unsafe { sys::cuEventCreate(&mut event, flags) }
                .result()
                .is_ok()
            {
                self.event = Some(event);
            }
        }
        self.event
    }

    /// Frees the buffer and the event (the Gpu's stream is idle or gone: nothing copies into
    /// it).
    pub(crate) fn release(self, gpu: &Gpu) {
        if gpu.bind().is_err() {
            return;
        }
        if let Some(p) = self.host {
            // SAFETY: allocated by malloc_host in this context, freed once.
            let _ = unsafe { result::free_host(p.as_ptr().cast()) };
        }
        if let Some(event) = self.event {
            // SAFETY: created by cuEventCreate in this context, destroyed once.
            let _ = unsafe { sys::cuEventDestroy_v2(event) };
        }
    }
}
