//! The radix sort family (Onesweep): an upfront histogram of every pass's digits, their offsets,
//! then one look-back pass per 8-bit digit, ping-ponging between the caller's buffer and one
//! temporary so that the result lands in the caller's buffer. An input of one tile sorts in one
//! launch.

use super::family::{part, Instance, KernelFamily, Part, TableTuning};
use super::jit::{headers, ElementDesc, Expr, Prelude};
use super::lookback::{self, Published};
use super::memory::DeviceMem;
use super::sort::SortValues;
use super::Gpu;
use crate::error::Result;
use crate::tuning::{self, Family, Tuning};
use crate::{Arithmetic, Element};
use cudarc::driver::sys::CUdeviceptr;
use std::mem::size_of;
use std::ops::Range;
use std::sync::Arc;

/// Bits per digit, and the digit bins a pass counts (`RADIX_BITS`, `RADIX_BINS`).
const RADIX_BITS: u32 = 8;
const RADIX_BINS: usize = 256;

/// Keys per portion at most: a pass's look-back counts within one portion in 32 bits (CUB cuts
/// its inputs the same way), and its status takes 2 KiB per tile. 2^29, so that inputs of up to
/// 2^28 keys (whatever the tile) are one launch per pass, not one and a tail of a few keys.
const PORTION: u64 = 1 << 29;

/// A radix sort module: keys, values, the key's order expression and the tuning.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RadixSpec {
    /// The key type.
    pub keys: ElementDesc,
    /// The value type (unused with `SortValues::None`; `u32` for indices).
    pub values: ElementDesc,
    /// What travels with the keys (`MGPU_VALUES`).
    pub mode: SortValues,
    /// The key's number is 64-bit (`U`), else 32-bit.
    pub wide: bool,
    /// The number a key is ordered by, an expression over `x`.
    pub order: Expr,
    /// The tuning.
    pub tuning: Tuning,
    /// The module sorts a segmented sort's segments (`mgpu_radix_segments` alone, tuned by
    /// `RadixSegments` or `RadixSegmentPairs`), not whole inputs.
    pub segments: bool,
}

impl RadixSpec {
    /// Keys `K` with values `V`, ordered by `order` (an unsigned number over `x`, 64-bit where
    /// `wide`).
    pub fn new<K: Element, V: Element>(
        wide: bool,
        order: Expr,
        mode: SortValues,
        t: &Tuning,
    ) -> Self {
        RadixSpec {
            keys: ElementDesc::of::<K>(),
            values: ElementDesc::of::<V>(),
            mode,
            wide,
            order,
            tuning: *t,
            segments: false,
        }
    }

    /// The module of a segmented sort's segments: keys `K` with values `V` (`Pairs`) or none,
    /// ordered by `order` (as in [`RadixSpec::new`]), with the `RadixSegments`
    /// (`RadixSegmentPairs`) tuning for `arch`.
    pub fn segments<K: Element, V: Element>(
        wide: bool,
        order: Expr,
        mode: SortValues,
        arch: Option<u32>,
    ) -> Result<Self> {
        let (family, size) = segments_tuning_family(mode, size_of::<K>(), size_of::<V>());
        let t = tuning::resolve(family, arch, size, None)?;
        Ok(RadixSpec {
            segments: true,
            ..RadixSpec::new::<K, V>(wide, order, mode, &t)
        })
    }
}

/// The bits a sort orders by, and its direction.
pub struct Order {
    /// `begin..end` of the key's number.
    pub bits: Range<u32>,
    /// Descending: the number's bits inverted.
    pub descending: bool,
}

/// The radix sort family, loaded in parts: a sort of one tile, and the passes of larger sorts.
pub struct Radix;

impl KernelFamily for Radix {
    type Spec = RadixSpec;
    const NAME: &'static str = "radix";
    const FILES: &'static [&'static str] = &[
        headers::LOOKBACK,
        headers::RADIX_ORDER,
        include_str!("kernels/kernel_radix.cu"),
        include_str!("kernels/kernel_select.cu"),
    ];
    const PARTS: &'static [Part] = &[
        Part {
            name: "radix_tile",
            kernels: &["mgpu_radix_tile"],
        },
        Part {
            name: "radix_histogram",
            kernels: &["mgpu_radix_histogram", "mgpu_radix_offsets"],
        },
        Part {
            name: "radix_pass",
            kernels: &["mgpu_radix_pass"],
        },
        Part {
            name: "radix_count",
            kernels: &["mgpu_radix_count", "mgpu_radix_starts", "mgpu_radix_fill"],
        },
        Part {
            name: "radix_select",
            kernels: &["mgpu_radix_select"],
        },
        Part {
            name: "radix_segments",
            kernels: &["mgpu_radix_segments"],
        },
    ];
    fn prelude(spec: &RadixSpec, p: &mut Prelude) {
        let u = if spec.wide {
            "unsigned long long"
        } else {
            "unsigned int"
        };
        lookback::prelude(p, 4);
        p.define("MGPU_VALUES", spec.mode as u32)
            .element("K", &spec.keys)
            .element("V", &spec.values)
            .raw(&format!("typedef {u} U;"))
            .raw(&spec.order.helpers)
            .define("MGPU_ORDER_BITS(x)", format!("({})", spec.order.expression));
    }
    fn tuning(spec: &RadixSpec) -> Tuning {
        spec.tuning
    }
    fn compiles(spec: &RadixSpec, kernel: &str) -> bool {
        (kernel == "mgpu_radix_segments") == spec.segments
    }
    const TUNING: &'static [Family] = &[
        Family::RadixKeys,
        Family::RadixPairs,
        Family::RadixSegments,
        Family::RadixSegmentPairs,
    ];
    fn instances(_arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        let mut out = Vec::new();
        crate::for_each_arithmetic!(radix_instances(table, &mut out));
        Ok(out)
    }
}

/// The tuning family of a radix sort and the size of its tile's elements.
pub fn tuning_family(mode: SortValues, key_size: usize, value_size: usize) -> (Family, usize) {
    match mode {
        SortValues::None => (Family::RadixKeys, key_size),
        _ => (Family::RadixPairs, key_size + value_size),
    }
}

/// The tuning family of a segmented sort's radix-sorted segments and the size of its tile's
/// elements.
pub fn segments_tuning_family(
    mode: SortValues,
    key_size: usize,
    value_size: usize,
) -> (Family, usize) {
    match mode {
        SortValues::None => (Family::RadixSegments, key_size),
        _ => (Family::RadixSegmentPairs, key_size + value_size),
    }
}

/// Keys `K` ascending: keys only, pairs of `K`s, and indices; a segmented sort's segments, keys
/// only and pairs of `K`s.
fn radix_instances<K: Arithmetic>(table: TableTuning<'_>, out: &mut Vec<Instance>) -> Result<()> {
    let k = std::mem::size_of::<K>();
    // RadixKey::ascending's number: the built-in order of an arithmetic key.
    let (wide, order) = (k > 4, Expr::new("radix_order(x)", ""));
    for mode in [SortValues::None, SortValues::Pairs, SortValues::Indices] {
        let spec = if mode == SortValues::Indices {
            let (family, size) = tuning_family(mode, k, 4);
            RadixSpec::new::<K, u32>(wide, order.clone(), mode, &table(family, size)?)
        } else {
            let (family, size) = tuning_family(mode, k, k);
            RadixSpec::new::<K, K>(wide, order.clone(), mode, &table(family, size)?)
        };
        let (family, _) = tuning_family(mode, k, 0);
        out.push(
            Instance::of::<Radix>(&spec, family, ElementDesc::of::<K>(), format!("{mode:?}"))
                .primary(mode != SortValues::Indices),
        );
    }
    for mode in [SortValues::None, SortValues::Pairs] {
        let (family, size) = segments_tuning_family(mode, k, k);
        let spec = RadixSpec {
            segments: true,
            ..RadixSpec::new::<K, K>(wide, order.clone(), mode, &table(family, size)?)
        };
        let label = format!("{mode:?} segments");
        out.push(Instance::of::<Radix>(
            &spec,
            family,
            ElementDesc::of::<K>(),
            label,
        ));
    }
    Ok(())
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_tile(const K* keys_in, const V* values_in, K* keys_out, V* values_out,
    // int count, int passes, int begin_bit, int end_bit, u64 flip).
    TileArgs = "mgpu_radix_tile" {
        keys_in: CUdeviceptr, values_in: CUdeviceptr, keys_out: CUdeviceptr,
        values_out: CUdeviceptr, count: i32, passes: i32, begin_bit: i32, end_bit: i32,
        flip: u64,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_segments(K* keys, V* values, const u64* ranges, u64 num_ranges,
    // int passes, int begin_bit, int end_bit, u64 flip).
    SegmentsArgs = "mgpu_radix_segments" {
        keys: CUdeviceptr, values: CUdeviceptr, ranges: CUdeviceptr, num_ranges: u64,
        passes: i32, begin_bit: i32, end_bit: i32, flip: u64,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_histogram(const K* keys, const V* values, u64 count, u64 portion,
    // int passes, int begin_bit, int end_bit, u64 flip, unsigned* hist, K* keys_copy,
    // V* values_copy).
    HistogramArgs = "mgpu_radix_histogram" {
        keys: CUdeviceptr, values: CUdeviceptr, count: u64, portion: u64, passes: i32,
        begin_bit: i32, end_bit: i32, flip: u64, hist: CUdeviceptr, keys_copy: CUdeviceptr,
        values_copy: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_offsets(const unsigned* hist, u64* bases, int portions, int passes).
    OffsetsArgs = "mgpu_radix_offsets" {
        hist: CUdeviceptr, bases: CUdeviceptr, portions: i32, passes: i32,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_pass(const K* keys_in, const V* values_in, K* keys_out,
    // V* values_out, u64 count, u64 index_base, const u64* bases, u64* next_bases, int shift,
    // int bits, u64 flip, u64* tickets, u64 first_ticket, BinStatus status).
    PassArgs = "mgpu_radix_pass" {
        keys_in: CUdeviceptr, values_in: CUdeviceptr, keys_out: CUdeviceptr,
        values_out: CUdeviceptr, count: u64, index_base: u64, bases: CUdeviceptr,
        next_bases: CUdeviceptr, shift: i32, bits: i32, flip: u64, tickets: CUdeviceptr,
        first_ticket: u64,
        status: lookback::TileStatusArgs,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_count(const CountKey* keys, u64 count, u64 head, u64 chunk_vecs,
    // unsigned xor_mask, unsigned long long* hist).
    CountArgs = "mgpu_radix_count" {
        keys: CUdeviceptr, count: u64, head: u64, chunk_vecs: u64, xor_mask: u32,
        hist: CUdeviceptr,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_starts(const unsigned long long* hist, u64* starts).
    StartsArgs = "mgpu_radix_starts" { hist: CUdeviceptr, starts: CUdeviceptr }
}

crate::kernel_args! {
    // SAFETY: mgpu_radix_fill(CountKey* out, u64 count, u64 head, const u64* starts,
    // unsigned xor_mask).
    FillArgs = "mgpu_radix_fill" {
        out: CUdeviceptr, count: u64, head: u64, starts: CUdeviceptr, xor_mask: u32,
    }
}

/// The dynamic shared memory of `mgpu_radix_tile` and `mgpu_radix_segments` (`TILE_ITEM_BYTES`):
/// a tile of keys, then of values, through one buffer.
fn tile_item_bytes(spec: &RadixSpec) -> u32 {
    (spec.tuning.nv() * spec.keys.size.max(spec.values.size)) as u32
}

/// The dynamic shared memory of `mgpu_radix_pass` (`TileItems`): a tile's keys, rounded up to 16
/// bytes, then its values.
fn pass_item_bytes(spec: &RadixSpec) -> u32 {
    let nv = spec.tuning.nv();
    let values = match spec.mode {
        SortValues::None => 0,
        _ => nv * spec.values.size,
    };
    ((nv * spec.keys.size).div_ceil(16) * 16 + values) as u32
}

/// The dynamic shared memory of `mgpu_radix_histogram`: `passes` passes of counters, each in
/// `RADIX_PARTS` copies (64 / the number's bytes: 16 of a 32-bit number's, 8 of a 64-bit one's).
fn histogram_bytes(spec: &RadixSpec, passes: u32) -> u32 {
    let number_bytes = if spec.wide { 8 } else { 4 };
    passes * RADIX_BINS as u32 * (64 / number_bytes) * 4
}

/// For keys alone of a built-in integer type of 1 or 2 bytes in a built-in order over the whole
/// key: the XOR of the key's bits that gives its number, for the counting sort (every key of one
/// number is then one same key).
fn counting_mask(spec: &RadixSpec, order: &Order) -> Option<u32> {
    let (bytes, signed) = match spec.keys.cuda_type {
        "unsigned char" => (1, false),
        "signed char" => (1, true),
        "unsigned short" => (2, false),
        "short" => (2, true),
        _ => return None,
    };
    let width = 8 * bytes;
    let whole = order.bits.start == 0 && order.bits.end == width;
    if spec.mode != SortValues::None || spec.order.expression != "radix_order(x)" || !whole {
        return None;
    }
    let all = (1u32 << width) - 1;
    let sign = if signed { 1 << (width - 1) } else { 0 };
    Some(sign ^ if order.descending { all } else { 0 })
}

/// The shared memory of a CTA of `mgpu_radix_count` for keys of `key_size` bytes: 2-byte keys
/// split a chunk's bins between two CTAs of 128 KiB of counters; 1-byte keys keep a copy of each
/// counter per lane (32 KiB). Also the CTAs per chunk and per SM.
fn counting_layout(key_size: u64) -> (u32, u64, u64) {
    let bins = 1u64 << (8 * key_size);
    let (split, copies, per_sm) = if key_size == 2 { (2, 1, 1) } else { (1, 32, 4) };
    ((bins / split * copies * 4) as u32, split, per_sm)
}

/// Whether the counting sort takes `count` keys of `key_size` bytes on `gpu`: where it measured
/// faster than the passes on the H100 (2026-11-25; below these sizes its fixed costs, every CTA
/// adding its counters to the histogram and the fill searching the starts of sparse bins,
/// outweigh one or two passes), and where a CTA can have its shared memory (2-byte keys: not on
/// GPUs of under 128 KiB per CTA, such as sm_70, sm_86 and sm_89).
fn counting_fits(gpu: &Gpu, key_size: u64, count: u64) -> bool {
    let min_keys = if key_size == 1 { 1 << 23 } else { 1 << 25 };
    let optin = gpu
        .ctx
        .attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        .unwrap_or(0);
    count >= min_keys && optin as u64 >= counting_layout(key_size).0 as u64
}

/// The counting sort of `count` keys at `keys` in place ([`counting_mask`]): count the keys of
/// every number, turn the counts into each number's first position, write each number's key
/// that many times. Temporary memory: the counts and the positions.
fn counting_sort(
    gpu: &Arc<Gpu>,
    spec: &RadixSpec,
    keys: CUdeviceptr,
    count: u64,
    xor_mask: u32,
) -> Result<()> {
    let module = gpu.module::<Radix>(spec, part::<Radix>("radix_count"))?;
    let t = &spec.tuning;
    let key_size = spec.keys.size as u64;
    let bins = 1usize << (8 * key_size);
    let (shared, split, per_sm) = counting_layout(key_size);
    let head = ((16 - keys % 16) % 16 / key_size).min(count);
    let vecs = (count - head) / (16 / key_size);
    // A wave of CTAs (fewer on small inputs measured slower), with chunks of at most 2^31 keys
    // (a CTA's counters are 32-bit).
    let chunks = (gpu.sm_count as u64 * per_sm)
        .max(vecs.div_ceil((1 << 31) / (16 / key_size)))
        .min(vecs.max(1));
    let hist = DeviceMem::zeroed(gpu, bins * 8)?;
    let starts = DeviceMem::alloc(gpu, (bins + 1) * 8)?;
    let counting = CountArgs {
        keys,
        count,
        head,
        chunk_vecs: vecs.div_ceil(chunks),
        xor_mask,
        hist: hist.ptr,
    };
    gpu.launch_shared(&module, (chunks * split) as u32, t.nt, shared, &counting)?;
    let positions = StartsArgs {
        hist: hist.ptr,
        starts: starts.ptr,
    };
    gpu.launch(&module, 1, t.nt, &positions)?;
    let fill = FillArgs {
        out: keys,
        count,
        head,
        starts: starts.ptr,
        xor_mask,
    };
    // As mgpu_radix_fill's FILL_VECS.
    let per_cta = t.nt as u64 * 16;
    gpu.launch(&module, vecs.div_ceil(per_cta).max(1) as u32, t.nt, &fill)
}

/// A tile's work that does not shrink with it (the ranking's setup, the look-back, the bins'
/// scan), in keys per thread: 2^28 4-byte pairs took 6% longer at 512x20x1 than at 512x24x1.
const TILE_OVERHEAD_VT: u64 = 10;

/// The tuning of the passes over `count` keys (more than a tile). At one CTA per SM, an input of
/// a wave or two of tiles leaves SMs idle while the last wave runs: there a tile of 2/3 the keys
/// is taken where its waves, each `vt + TILE_OVERHEAD_VT` long, end sooner (4-byte pairs at
/// 512x16x1 instead of 512x24x1: 4-9% less time at 2^20, 10% at 2^21, the same at 2^22). A
/// smaller tile at the same threads and occupancy needs no more registers than the table's.
///
/// ```
/// use mgpu::cuda::radix::pass_tuning;
/// use mgpu::tuning::Tuning;
/// // 2^20 pairs of 4-byte keys on 132 SMs: one wave of 128 tiles of 8192, not 86 of 12288.
/// assert_eq!(pass_tuning(&Tuning::new(512, 24, 1), 132, 1 << 20).vt, 16);
/// ```
pub fn pass_tuning(t: &Tuning, sm_count: u64, count: u64) -> Tuning {
    if t.occ != 1 {
        return *t;
    }
    let time = |vt: u32| {
        let tiles = count.div_ceil(t.nt as u64 * vt as u64);
        tiles.div_ceil(sm_count.max(1)) * (vt as u64 + TILE_OVERHEAD_VT)
    };
    let smaller = Tuning {
        vt: (t.vt * 2 / 3).max(1),
        ..*t
    };
    if time(smaller.vt) < time(t.vt) {
        smaller
    } else {
        *t
    }
}

/// Sorts `count` keys at `keys` (with values at `values` unless `SortValues::None`) in place.
pub(crate) fn sort(
    gpu: &Arc<Gpu>,
    spec: &RadixSpec,
    keys: CUdeviceptr,
    values: CUdeviceptr,
    count: u64,
    order: &Order,
) -> Result<()> {
    let (begin, end) = match order.bits {
        Range { start, end } if start < end => (start, end),
        _ => (0, 0),
    };
    let indices = spec.mode == SortValues::Indices;
    // An empty bit range leaves the keys as they are; indices still need a pass (of 0 bits).
    let passes = (end - begin).div_ceil(RADIX_BITS).max(indices as u32);
    if count == 0 || passes == 0 {
        return Ok(());
    }
    let t = &spec.tuning;
    let nv = t.nv() as u64;
    let flip = if order.descending { u64::MAX } else { 0 };
    let (key_size, value_size) = (spec.keys.size, spec.values.size);
    let has_values = spec.mode != SortValues::None;
    if count <= nv {
        let module = gpu.module::<Radix>(spec, part::<Radix>("radix_tile"))?;
        let args = TileArgs {
            keys_in: keys,
            values_in: if indices { 0 } else { values },
            keys_out: keys,
            values_out: values,
            count: count as i32,
            passes: passes as i32,
            begin_bit: begin as i32,
            end_bit: end as i32,
            flip,
        };
        return gpu.launch_shared(&module, 1, t.nt, tile_item_bytes(spec), &args);
    }
    if let Some(xor_mask) = counting_mask(spec, order) {
        if counting_fits(gpu, spec.keys.size as u64, count) {
            return counting_sort(gpu, spec, keys, count, xor_mask);
        }
    }
    let fitted = RadixSpec {
        tuning: pass_tuning(t, gpu.sm_count as u64, count),
        ..spec.clone()
    };
    let (spec, t) = (&fitted, &fitted.tuning);
    let nv = t.nv() as u64;
    let [counting, module]: [_; 2] = gpu
        .modules::<Radix>(
            spec,
            &[
                part::<Radix>("radix_histogram"),
                part::<Radix>("radix_pass"),
            ],
        )?
        .try_into()
        .unwrap_or_else(|_| unreachable!("two parts asked"));
    let portion = PORTION / nv * nv;
    let portions = count.div_ceil(portion);
    let temp_keys = DeviceMem::alloc(gpu, count as usize * key_size)?;
    let temp_values = if has_values {
        Some(DeviceMem::alloc(gpu, count as usize * value_size)?)
    } else {
        None
    };
    let temp_v = temp_values.as_ref().map_or(0, |m| m.ptr);
    // Counts [portion][pass][digit]; bases [portion][pass][digit], portion 0's from the counts,
    // each later one's from the pass over the portion before it.
    let cells = portions as usize * passes as usize * RADIX_BINS;
    let counts = DeviceMem::zeroed(gpu, cells * 4)?;
    let bases = DeviceMem::alloc(gpu, cells * 8)?;
    // An odd number of passes starts from a copy that the histogram makes, so that the last
    // pass writes the caller's buffer. Indices are generated by the first pass, not copied.
    let copy = passes % 2 == 1;
    // One wave of what is resident, over every portion's chunks.
    let chunks = count.div_ceil(nv);
    let histogram_shared = histogram_bytes(spec, passes);
    let resident = counting.resident_with::<HistogramArgs>(t.nt, histogram_shared)?;
    let histogram_grid = (gpu.sm_count as u64 * resident as u64).min(chunks);
    let histogram = HistogramArgs {
        keys,
        values,
        count,
        portion,
        passes: passes as i32,
        begin_bit: begin as i32,
        end_bit: end as i32,
        flip,
        hist: counts.ptr,
        keys_copy: if copy { temp_keys.ptr } else { 0 },
        values_copy: if copy && !indices { temp_v } else { 0 },
    };
    gpu.launch_shared(
        &counting,
        histogram_grid as u32,
        t.nt,
        histogram_shared,
        &histogram,
    )?;
    let offsets = OffsetsArgs {
        hist: counts.ptr,
        bases: bases.ptr,
        portions: portions as i32,
        passes: passes as i32,
    };
    gpu.launch(&counting, passes, t.nt, &offsets)?;
    let (mut src, mut dst) = ((keys, values), (temp_keys.ptr, temp_v));
    if copy {
        std::mem::swap(&mut src, &mut dst);
    }
    for pass in 0..passes {
        let shift = begin + pass * RADIX_BITS;
        let bits = RADIX_BITS.min(end - shift);
        for p in 0..portions {
            let first = p * portion;
            let n = portion.min(count - first);
            let cell = |p: u64| (p as usize * passes as usize + pass as usize) * RADIX_BINS;
            let values_in = if indices && pass == 0 {
                0
            } else {
                src.1 + first * value_size as u64
            };
            lookback::launch_shared(
                gpu,
                &module,
                n.div_ceil(nv),
                t.nt,
                pass_item_bytes(spec),
                Published::Words(RADIX_BINS),
                |tickets, first_ticket, status| PassArgs {
                    keys_in: src.0 + first * key_size as u64,
                    values_in,
                    keys_out: dst.0,
                    values_out: dst.1,
                    count: n,
                    index_base: first,
                    bases: bases.ptr + cell(p) as u64 * 8,
                    next_bases: if p + 1 < portions {
                        bases.ptr + cell(p + 1) as u64 * 8
                    } else {
                        0
                    },
                    shift: shift as i32,
                    bits: bits as i32,
                    flip,
                    tickets,
                    first_ticket,
                    status,
                },
            )?;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    debug_assert_eq!(src.0, keys);
    Ok(())
}

/// Sorts, in place, each of the `num_ranges` segments whose (begin, end) positions are the u64
/// pairs at `ranges`, one CTA per segment; each holds at most `spec`'s tile (a `segments`
/// module), so that every pass stays in shared memory. `values` with `SortValues::Pairs`.
pub(crate) fn sort_segments(
    gpu: &Arc<Gpu>,
    spec: &RadixSpec,
    order: &Order,
    (keys, values): (CUdeviceptr, CUdeviceptr),
    ranges: CUdeviceptr,
    num_ranges: u64,
) -> Result<()> {
    debug_assert!(spec.segments && spec.mode != SortValues::Indices);
    let module = gpu.module::<Radix>(spec, part::<Radix>("radix_segments"))?;
    let bits = &order.bits;
    let args = SegmentsArgs {
        keys,
        values,
        ranges,
        num_ranges,
        passes: (bits.end - bits.start).div_ceil(RADIX_BITS) as i32,
        begin_bit: bits.start as i32,
        end_bit: bits.end as i32,
        flip: if order.descending { u64::MAX } else { 0 },
    };
    let grid = num_ranges.min(i32::MAX as u64) as u32;
    gpu.launch_shared(&module, grid, spec.tuning.nt, tile_item_bytes(spec), &args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_tuning_takes_smaller_tiles_only_where_waves_end_sooner() {
        const SMS: u64 = 132;
        let pairs = Tuning::new(512, 24, 1);
        let vt = |t: &Tuning, log2: u32| pass_tuning(t, SMS, 1 << log2).vt;
        // 86 and 171 tiles of 12288 keys: one and two waves of 8192 instead.
        assert_eq!(vt(&pairs, 20), 16);
        assert_eq!(vt(&pairs, 21), 16);
        // 3 waves of the table's tiles against 4 of the smaller ones, and more.
        for log2 in [22, 24, 28, 32] {
            assert_eq!(vt(&pairs, log2), 24, "2^{log2}");
        }
        // 8-byte keys' pairs: 128 tiles of 8192 are one wave; 5120-key tiles would take two.
        let wide = Tuning::new(512, 16, 1);
        assert_eq!(vt(&wide, 20), 16);
        assert_eq!(vt(&wide, 21), 16);
        // Several CTAs per SM share its time: left as the table has it.
        let keys = Tuning::new(384, 19, 3);
        assert_eq!(pass_tuning(&keys, SMS, 1 << 20), keys);
    }
}
