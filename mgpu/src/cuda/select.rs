//! Top-k by radix select (`kernel_select.cu`, a part of the radix family): for keys a radix key
//! orders (the built-in orders of arithmetic keys), one CTA per segment finds the k-th key digit
//! by digit in shared memory and keeps the first k, so the keys are read once and never sorted
//! whole. A whole array is cut into chunks, each keeping its first k in input order, round after
//! round, until one chunk is left, which is sorted.

use super::family::part;
use super::jit::Expr;
use super::memory::DeviceMem;
use super::radix::{tuning_family, Radix, RadixSpec};
use super::sort::SortValues;
use super::Gpu;
use crate::error::Result;
use crate::radix::RadixKey;
use crate::{tuning, Element};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// The most keys a CTA keeps and sorts: past it, the sort of every segment costs less than a
/// bitonic sort in one CTA.
const MOST_KEPT: u64 = 4096;

crate::kernel_args! {
    // SAFETY: mgpu_radix_select(const K* keys, const unsigned* positions, const void* offsets,
    // int wide_offsets, u64 chunk, u64 num_segments, u64 count, unsigned k, int local,
    // int begin_bit, int bits, u64 flip, int sorted, K* out_keys, unsigned* out_positions).
    SelectArgs = "mgpu_radix_select" {
        keys: CUdeviceptr, positions: CUdeviceptr, offsets: CUdeviceptr, wide_offsets: i32,
        chunk: u64, num_segments: u64, count: u64, k: u32, local: i32, begin_bit: i32, bits: i32,
        flip: u64, sorted: i32, out_keys: CUdeviceptr, out_positions: CUdeviceptr,
    }
}

/// The segments a launch selects from: CSR offsets, or chunks of a whole array.
enum Segments {
    Csr {
        offsets: CUdeviceptr,
        wide: bool,
        num_segments: u64,
    },
    Chunks(u64),
}

/// What every launch of one selection shares: the module, the key's digits, the shared memory.
struct Selector<'a, K: Element> {
    gpu: &'a Arc<Gpu>,
    module: Arc<super::LoadedModule>,
    key: &'a RadixKey<K>,
    /// Bytes of a number in shared memory (the radix key's `U`).
    number: u64,
}

impl<'a, K: Element> Selector<'a, K> {
    fn new(gpu: &'a Arc<Gpu>, arch: Option<u32>, key: &'a RadixKey<K>) -> Result<Self> {
        let (wide, order): (bool, Expr) = key.spec_parts();
        let (family, size) = tuning_family(SortValues::None, std::mem::size_of::<K>(), 0);
        let t = tuning::resolve(family, arch, size, None)?;
        let spec = RadixSpec::new::<K, K>(wide, order, SortValues::None, &t);
        let module = gpu.module::<Radix>(&spec, part::<Radix>("radix_select"))?;
        Ok(Selector {
            gpu,
            module,
            key,
            number: if wide { 8 } else { 4 },
        })
    }

    /// Selects the first `k` of every segment of `count` keys: to `out_keys[segment * k ..]`,
    /// positions (when `out_positions` is not 0) from `positions` (when not 0), else the index
    /// in the segment (`local`) or in the input.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &self,
        segments: &Segments,
        longest: u64,
        (keys, positions, count): (CUdeviceptr, CUdeviceptr, u64),
        k: u64,
        local: bool,
        sorted: bool,
        (out_keys, out_positions): (CUdeviceptr, CUdeviceptr),
    ) -> Result<()> {
        let (offsets, wide, chunk, num_segments) = match *segments {
            Segments::Csr {
                offsets,
                wide,
                num_segments,
            } => (offsets, wide, 0, num_segments),
            Segments::Chunks(chunk) => (0, false, chunk, count.div_ceil(chunk)),
        };
        let range = self.key.bits();
        let args = SelectArgs {
            keys,
            positions,
            offsets,
            wide_offsets: wide as i32,
            chunk,
            num_segments,
            count,
            k: k as u32,
            local: local as i32,
            begin_bit: range.start as i32,
            bits: (range.end - range.start) as i32,
            flip: if self.key.is_descending() {
                u64::MAX
            } else {
                0
            },
            sorted: sorted as i32,
            out_keys,
            out_positions,
        };
        let threads = (longest.next_power_of_two() / 16).clamp(128, 512) as u32;
        let grid = num_segments.min(i32::MAX as u64) as u32;
        let shared = stage_bytes(self.number, longest, k, sorted) as u32;
        self.gpu
            .launch_shared(&self.module, grid, threads, shared, &args)
    }
}

/// The dynamic shared memory of segments of up to `longest` keys keeping `k`, whose numbers take
/// `number` bytes each: the numbers, then the kept keys' indices (padded to a power of two for
/// the sort).
fn stage_bytes(number: u64, longest: u64, k: u64, sorted: bool) -> u64 {
    let kept = k.min(longest);
    let width = if sorted {
        kept.next_power_of_two()
    } else {
        kept
    };
    longest.max(width).next_multiple_of(4) * number + width * 4
}

/// The shared memory a CTA may take on `gpu`.
fn shared_limit(gpu: &Gpu) -> u64 {
    use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN as OPTIN;
    // The kernel's own counters take under 2 KiB.
    (gpu.ctx.attribute(OPTIN).unwrap_or(48 * 1024) as u64).saturating_sub(2048)
}

/// The keys of a whole array's chunk: 32 KiB of numbers.
fn chunk_keys(number: u64) -> u64 {
    32 * 1024 / number
}

/// Whether [`segmented_top_k`] takes segments of up to `longest` keys keeping `k`.
pub(crate) fn segments_fit<K: Element>(gpu: &Gpu, key: &RadixKey<K>, longest: u64, k: u64) -> bool {
    let number = if key.spec_parts().0 { 8 } else { 4 };
    k.min(longest) <= MOST_KEPT && stage_bytes(number, longest, k, true) <= shared_limit(gpu)
}

/// Whether [`top_k`] takes `k` of `n` keys: rounds that keep a quarter of a chunk at most.
pub(crate) fn array_fits<K: Element>(key: &RadixKey<K>, n: u64, k: u64) -> bool {
    let number = if key.spec_parts().0 { 8 } else { 4 };
    let chunk = chunk_keys(number);
    k <= MOST_KEPT && (n <= chunk || k <= chunk / 4)
}

/// The first `min(k, length)` keys of every CSR segment (`segments_fit`), sorted, ties in input
/// order, to `out_keys[segment * k ..]`, with their indices in the segment to `out_positions`
/// unless it is 0.
#[allow(clippy::too_many_arguments)]
pub(crate) fn segmented_top_k<K: Element>(
    gpu: &Arc<Gpu>,
    arch: Option<u32>,
    key: &RadixKey<K>,
    (offsets, wide, num_segments, longest): (CUdeviceptr, bool, u64, u64),
    keys: CUdeviceptr,
    count: u64,
    k: u64,
    out_keys: CUdeviceptr,
    out_positions: CUdeviceptr,
) -> Result<()> {
    let selector = Selector::new(gpu, arch, key)?;
    let segments = Segments::Csr {
        offsets,
        wide,
        num_segments,
    };
    selector.launch(
        &segments,
        longest,
        (keys, 0, count),
        k,
        true,
        true,
        (out_keys, out_positions),
    )
}

/// The first `k` (1 <= k <= n, `array_fits`) of `n` keys, sorted, ties in input order: keys to
/// `out_keys`, input positions to `out_positions` unless it is 0. Each round keeps the first k
/// of every chunk in input order (so that equal keys stay in input order across chunks), until
/// the last round selects from one chunk and sorts.
#[allow(clippy::too_many_arguments)]
pub(crate) fn top_k<K: Element>(
    gpu: &Arc<Gpu>,
    arch: Option<u32>,
    key: &RadixKey<K>,
    keys: CUdeviceptr,
    n: u64,
    k: u64,
    out_keys: CUdeviceptr,
    out_positions: CUdeviceptr,
) -> Result<()> {
    let selector = Selector::new(gpu, arch, key)?;
    let chunk = chunk_keys(selector.number);
    let ks = std::mem::size_of::<K>();
    let with_positions = out_positions != 0;
    let mut held: Option<(DeviceMem, Option<DeviceMem>)> = None;
    let (mut cur_keys, mut cur_positions, mut count) = (keys, 0, n);
    while count > chunk {
        let chunks = count.div_ceil(chunk);
        let kept = (chunks - 1) * k + k.min(count - (chunks - 1) * chunk);
        let next_keys = DeviceMem::alloc(gpu, kept as usize * ks)?;
        let next_positions = match with_positions {
            true => Some(DeviceMem::alloc(gpu, kept as usize * 4)?),
            false => None,
        };
        let next_p = next_positions.as_ref().map_or(0, |m| m.ptr);
        selector.launch(
            &Segments::Chunks(chunk),
            chunk,
            (cur_keys, cur_positions, count),
            k,
            false,
            false,
            (next_keys.ptr, next_p),
        )?;
        (cur_keys, cur_positions, count) = (next_keys.ptr, next_p, kept);
        held = Some((next_keys, next_positions));
    }
    selector.launch(
        &Segments::Chunks(count),
        count,
        (cur_keys, cur_positions, count),
        k,
        false,
        true,
        (out_keys, out_positions),
    )?;
    drop(held);
    Ok(())
}
