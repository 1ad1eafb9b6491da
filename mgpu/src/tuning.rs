//! Launch parameters per kernel family and architecture: the seed's LaunchBox, chosen at run time.
//!
//! A [`Tuning`] is NT (threads per CTA), VT (values per thread; a tile is NT x VT), OCC (the minimum
//! CTAs per SM passed to `__launch_bounds__`) and, for the look-back scan, the back-off delay.
//! The table below is data: an architecture with no entry inherits the nearest older one, a tuning
//! file overrides entries, and every primitive takes a per-call override. A few entries hold for
//! small inputs only (the merge sort's bands, [`lookup_for`]); a tuning file's entry holds at
//! every size.
//!
//! # Tuning files
//!
//! The file in effect is the one `MGPU_TUNING` names; when that variable is unset, the default
//! location [`default_file`] (`$XDG_CONFIG_HOME/mgpu/tuning.txt`, else
//! `~/.config/mgpu/tuning.txt`) if it exists; `MGPU_TUNING=none` (or empty) uses the built-in
//! table alone. [`source`] says which applies. The format, version 1 (what `mgpu tune` writes):
//!
//! ```text
//! mgpu-tuning 1
//! # comments run from `#` to the end of the line
//! # family   arch size_class nt vt occ [backoff_ns]
//! scan       90   4          128 39 11
//! sort_keys  90   4          256 23 6
//! ```
//!
//! The first line names the format and its version; files without it are read as version 1, and
//! other versions are rejected. Families: `reduce`, `scan`, `sort_keys`, `sort_pairs`, `merge`,
//! `compact`, `compact_pairs`, `non_trivial_runs`, `reduce_by_key`, `segreduce`,
//! `segreduce_long`, `spmv`, `radix_keys`, `radix_pairs`, `radix_segments`,
//! `radix_segment_pairs`; `arch` is `major * 10 + minor` (90 for sm_90);
//! `size_class` is 2, 4, 8 or 16 bytes per tile element ([`size_class`]). An entry overrides the
//! table for its architecture and newer ones, like the table's own entries.

use crate::error::{invalid, Error, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Launch parameters of one kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tuning {
    /// Threads per CTA (a multiple of 32, at most 1024).
    pub nt: u32,
    /// Values per thread. Odd values keep 4-byte shared-memory accesses free of bank conflicts.
    pub vt: u32,
    /// Minimum resident CTAs per SM requested from the compiler (`__launch_bounds__(nt, occ)`).
    pub occ: u32,
    /// Look-back back-off in nanoseconds between polls of a not-yet-published tile (0: spin).
    pub backoff_ns: u32,
}

impl Tuning {
    /// A tuning without back-off.
    pub const fn new(nt: u32, vt: u32, occ: u32) -> Self {
        Tuning {
            nt,
            vt,
            occ,
            backoff_ns: 0,
        }
    }

    /// Elements per tile.
    pub fn nv(&self) -> usize {
        (self.nt * self.vt) as usize
    }

    /// Checks the tuning against hardware limits for an element of `elem_size` bytes, in a tile
    /// of static shared memory ([`MAX_TILE_BYTES`]).
    pub fn validate(&self, elem_size: usize) -> Result<()> {
        self.validate_tile(elem_size, MAX_TILE_BYTES)
    }

    /// Checks the tuning of `family` against hardware limits for an element of `elem_size`
    /// bytes ([`Family::max_tile_bytes`]).
    pub fn validate_for(&self, family: Family, elem_size: usize) -> Result<()> {
        self.validate_tile(elem_size, family.max_tile_bytes())
    }

    fn validate_tile(&self, elem_size: usize, max_tile_bytes: usize) -> Result<()> {
        if self.nt == 0 || !self.nt.is_multiple_of(32) || self.nt > 1024 {
            return invalid(format!(
                "tuning nt = {} must be a multiple of 32 in 32..=1024",
                self.nt
            ));
        }
        if self.vt == 0 || self.vt > 64 {
            return invalid(format!("tuning vt = {} must be in 1..=64", self.vt));
        }
        if self.occ == 0 || self.occ * self.nt > 2048 {
            return invalid(format!(
                "tuning occ = {} with nt = {} asks for more than 2048 threads per SM",
                self.occ, self.nt
            ));
        }
        let tile_bytes = self.nv() * elem_size;
        if tile_bytes > max_tile_bytes {
            return invalid(format!(
                "tuning {}x{} needs {} bytes of shared memory per tile for {}-byte elements; at most {} (lower vt)",
                self.nt, self.vt, tile_bytes, elem_size, max_tile_bytes
            ));
        }
        Ok(())
    }
}

/// Kernels stage a tile in static shared memory, which is limited to 48 KB per CTA.
pub const MAX_TILE_BYTES: usize = 44 * 1024;

/// The radix sort's tiles are in dynamic shared memory: up to 96 KiB, two CTAs' worth of an
/// sm_90 SM with their static storage (sm_70 allows a CTA 96 KiB in all: its table entries stay
/// small).
pub const MAX_RADIX_TILE_BYTES: usize = 96 * 1024;

/// The kernel families that have their own tunings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Device-wide reduce (also the upsweep of reduce-then-scan).
    Reduce,
    /// Device-wide scan (look-back, and the downsweep of reduce-then-scan).
    Scan,
    /// Mergesort and merge of keys only (size class: the key's size).
    SortKeys,
    /// Mergesort and merge of keys with values or indices (size class: key + value size).
    SortPairs,
    /// The merge of two sorted sequences of keys (size class: the key's size); where it has no
    /// entry, the merge sort's (`SortKeys`). Its tiles hold no blocksort or four-way pass, so
    /// they may be larger.
    Merge,
    /// Single-pass compaction: select, partition, unique, non-trivial runs (size class: key +
    /// value size).
    Compact,
    /// Compaction of keys with values that go with the kept keys alone (select with values,
    /// unique by key; size class: key + value size); where it has no entry, `Compact`'s. Its
    /// tiles read the values only where a key is kept, and run at other shapes than those that
    /// write every item.
    CompactPairs,
    /// Non-trivial runs (the starts and lengths of runs longer than one; size class: the key's
    /// size); where it has no entry, `Compact`'s. Its thread holds three masks beside its keys.
    NonTrivialRuns,
    /// Single-pass reduce-by-key and run-length encode (size class: key + value size, or key +
    /// length size for run-length encode). Its tiles read their items from shared memory
    /// twice instead of holding them in registers, so they run at other occupancies than
    /// `Compact`'s.
    ReduceByKey,
    /// Segmented reduction over CSR segments (size class: the value's size).
    SegReduce,
    /// Segmented reduction over direct CSR segments of at least
    /// [`LONG_SEGMENTS`](crate::cuda::segreduce::LONG_SEGMENTS) positions on average (size
    /// class: the value's size); where it has no entry, `SegReduce`'s. Such tiles read few
    /// offsets, and larger ones keep more bytes in flight.
    SegReduceLong,
    /// CSR sparse matrix * vector (size class: the value's size): the segmented reduction's tiles,
    /// whose items are gathers from the vector.
    Spmv,
    /// Radix sort of keys only (size class: the key's size; NT at least 256, a thread per digit
    /// bin).
    RadixKeys,
    /// Radix sort of keys with values or indices (size class: key + value size).
    RadixPairs,
    /// A segmented sort's segments of up to a tile, keys only, radix-sorted in shared memory one
    /// CTA per segment (size class: the key's size). The tile bounds the segments it takes: its
    /// keys stay in registers across every pass.
    RadixSegments,
    /// The same with values (size class: key + value size).
    RadixSegmentPairs,
}

impl Family {
    /// The family's name in tuning files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Family::Reduce => "reduce",
            Family::Scan => "scan",
            Family::SortKeys => "sort_keys",
            Family::SortPairs => "sort_pairs",
            Family::Merge => "merge",
            Family::Compact => "compact",
            Family::CompactPairs => "compact_pairs",
            Family::NonTrivialRuns => "non_trivial_runs",
            Family::ReduceByKey => "reduce_by_key",
            Family::SegReduce => "segreduce",
            Family::SegReduceLong => "segreduce_long",
            Family::Spmv => "spmv",
            Family::RadixKeys => "radix_keys",
            Family::RadixPairs => "radix_pairs",
            Family::RadixSegments => "radix_segments",
            Family::RadixSegmentPairs => "radix_segment_pairs",
        }
    }
    /// The family whose tunings a family takes where it has none of its own: a variant's
    /// kernels run the general family's where no measurement set them apart.
    pub fn falls_back_to(self) -> Option<Family> {
        match self {
            Family::Merge => Some(Family::SortKeys),
            Family::CompactPairs | Family::NonTrivialRuns => Some(Family::Compact),
            Family::SegReduceLong => Some(Family::SegReduce),
            _ => None,
        }
    }

    /// The most bytes a tile of the family's kernels may stage in shared memory.
    pub fn max_tile_bytes(self) -> usize {
        match self {
            Family::RadixKeys | Family::RadixPairs => MAX_RADIX_TILE_BYTES,
            _ => MAX_TILE_BYTES,
        }
    }

    /// The family named `s` in tuning files ([`Family::name`]'s inverse).
    pub fn from_name(s: &str) -> Option<Family> {
        match s {
            "reduce" => Some(Family::Reduce),
            "scan" => Some(Family::Scan),
            "sort_keys" => Some(Family::SortKeys),
            "sort_pairs" => Some(Family::SortPairs),
            "merge" => Some(Family::Merge),
            "compact" => Some(Family::Compact),
            "compact_pairs" => Some(Family::CompactPairs),
            "non_trivial_runs" => Some(Family::NonTrivialRuns),
            "reduce_by_key" => Some(Family::ReduceByKey),
            "segreduce" => Some(Family::SegReduce),
            "segreduce_long" => Some(Family::SegReduceLong),
            "spmv" => Some(Family::Spmv),
            "radix_keys" => Some(Family::RadixKeys),
            "radix_pairs" => Some(Family::RadixPairs),
            "radix_segments" => Some(Family::RadixSegments),
            "radix_segment_pairs" => Some(Family::RadixSegmentPairs),
            _ => None,
        }
    }
}

/// Element size classes, most specific first: tunings differ mainly by bytes per element. Elements
/// of 1 or 2 bytes have a class of their own where an entry needs it (sub-word keys go through
/// registers and need more of them), else they take the 4-byte class's.
fn size_classes(elem_size: usize) -> &'static [u32] {
    match elem_size {
        0..=2 => &[2, 4],
        3..=4 => &[4],
        5..=8 => &[8],
        _ => &[16],
    }
}

/// The size class of a tile element of `elem_size` bytes (the most specific one): 2, 4, 8 or 16.
pub fn size_class(elem_size: usize) -> u32 {
    size_classes(elem_size)[0]
}

/// The newest entry for `arch` or older in the most specific size class that has one.
fn best_entry<'a>(
    entries: impl Iterator<Item = &'a Entry> + Clone,
    family: Family,
    arch: u32,
    elem_size: usize,
) -> Option<Tuning> {
    size_classes(elem_size).iter().find_map(|&class| {
        entries
            .clone()
            .filter(|x| x.family == family && x.size_class == class && x.arch <= arch)
            .max_by_key(|x| x.arch)
            .map(|x| x.tuning)
    })
}

struct Entry {
    family: Family,
    arch: u32,
    size_class: u32,
    tuning: Tuning,
}

const fn e(family: Family, arch: u32, size_class: u32, nt: u32, vt: u32, occ: u32) -> Entry {
    Entry {
        family,
        arch,
        size_class,
        tuning: Tuning::new(nt, vt, occ),
    }
}

// The table. Each entry says where its numbers came from.
const TABLE: &[Entry] = &[
    // sm_70 baseline (inherited by every newer architecture without its own entry): the seed's
    // register-blocking guidance (NT 128..256, odd VT for scan), not measured on our devices.
    e(Family::Reduce, 70, 4, 256, 16, 4),
    e(Family::Reduce, 70, 8, 256, 8, 4),
    e(Family::Reduce, 70, 16, 256, 4, 4),
    // sm_90 (`mgpu tune reduce`, 2026-11-23, H100 SXM, 2^26, G items/s): i32 256x16x4 675.0,
    //   the best of the sweep; i64 best 512x7x4 362.1, 1.024x 256x8x4's 353.6 (one run): the
    //   sm_70 entries stay in effect there.
    // `mgpu tune reduce` (2026-11-29, H200, 2^28, VTs of whole vectors): i32 512x8x4 1096.1,
    //   1.009x 256x16x4's 1086.3; every cell 965-1096. In turns with CUB at 2^16..2^28 it ran
    //   as fast as 256x16x4 (BENCHMARKS.md): the entry stays.
    e(Family::Scan, 70, 4, 256, 15, 2),
    e(Family::Scan, 70, 8, 256, 9, 2),
    e(Family::Scan, 70, 16, 128, 7, 4),
    // Mergesort: the seed's tunings (keys 128x23 with 4-byte keys on older parts; pairs 256x11).
    e(Family::SortKeys, 70, 4, 128, 23, 2),
    e(Family::SortKeys, 70, 8, 128, 11, 2),
    e(Family::SortKeys, 70, 16, 128, 7, 2),
    e(Family::SortPairs, 70, 4, 256, 11, 1),
    e(Family::SortPairs, 70, 8, 256, 11, 1),
    e(Family::SortPairs, 70, 16, 128, 7, 2),
    // Compaction: a thread holds its VT keys (and values) in registers across the look-back, and
    // a tile's kept-item mask is one 32-bit word (VT <= 31).
    e(Family::Compact, 70, 4, 128, 15, 4),
    e(Family::Compact, 70, 8, 128, 11, 4),
    e(Family::Compact, 70, 16, 128, 7, 4),
    e(Family::ReduceByKey, 70, 4, 128, 15, 4),
    e(Family::ReduceByKey, 70, 8, 128, 11, 4),
    e(Family::ReduceByKey, 70, 16, 128, 7, 4),
    // Segmented reduction: a tile holds its values, a segment index per position and a chunk of
    // offsets in shared memory (4-byte offsets: 12 bytes per item for 4-byte values).
    e(Family::SegReduce, 70, 4, 128, 15, 4),
    e(Family::SegReduce, 70, 8, 128, 11, 4),
    e(Family::SegReduce, 70, 16, 128, 7, 4),
    e(Family::Spmv, 70, 4, 128, 15, 4),
    e(Family::Spmv, 70, 8, 128, 11, 4),
    e(Family::Spmv, 70, 16, 128, 7, 4),
    // Radix sort: a tile of NT x VT keys in shared memory (at most 65535, 16-bit counts), a
    // thread per digit bin (NT >= 256); CUB's sm_90 Onesweep policy is 384 x 20 for 4-byte keys.
    //   Picked without spills at OCC 2 (NVRTC 13.5), not yet swept.
    e(Family::RadixKeys, 70, 2, 384, 12, 2),
    e(Family::RadixKeys, 70, 4, 384, 14, 2),
    e(Family::RadixKeys, 70, 8, 384, 9, 2),
    e(Family::RadixKeys, 70, 16, 256, 7, 2),
    e(Family::RadixPairs, 70, 2, 384, 8, 2),
    e(Family::RadixPairs, 70, 4, 384, 8, 2),
    e(Family::RadixPairs, 70, 8, 384, 8, 2),
    e(Family::RadixPairs, 70, 16, 384, 5, 2),
    e(Family::RadixSegments, 70, 2, 384, 12, 2),
    e(Family::RadixSegments, 70, 4, 384, 14, 2),
    e(Family::RadixSegments, 70, 8, 384, 9, 2),
    e(Family::RadixSegments, 70, 16, 256, 7, 2),
    e(Family::RadixSegmentPairs, 70, 2, 384, 12, 2),
    e(Family::RadixSegmentPairs, 70, 4, 384, 12, 2),
    e(Family::RadixSegmentPairs, 70, 8, 384, 9, 2),
    e(Family::RadixSegmentPairs, 70, 16, 256, 7, 2),
    // sm_90, H100, 2026-11-25, `mgpu tune radix --size 26` (i32 and u64; G keys/s): the best
    // cell whose kernels compile without spills with NVRTC 13.0 and 13.5 for every type of its
    // size class. 4-byte keys: 384x17x3 42.6 is i32's best, but f32 spills from 384x15x3, so
    // 384x14x3 40.8 (256x20x4 41.9). 8-byte keys: u64's best is 256x17x3 14.1, but f64 spills
    // there and at 256x14x4 (13.3), so 384x9x3 12.9. Pairs of 4-byte keys and u32 values:
    // 384x10x2 21.9 (384x8x3 19.9). 1-2 byte keys: u8 spills from 384x16x3.
    // With the tiles in dynamic shared memory (2026-11-26, H100, `mgpu bench radix --no-peer`
    // with MGPU_TUNING, ms at 2^26 | 2^28): 4-byte keys 384x20x2 i32 1.497 | 6.018, f32 1.559 |
    // 6.241 (384x14x3: i32 1.610 | 6.523). 8-byte keys 384x14x2 u64 4.466 | 17.383 (384x12x2
    // 4.601 | 17.915, 256x20x2 4.491 | 17.402, 384x9x3 5.020 | 19.701). Pairs of 4-byte keys and
    // u32 values 512x20x1 i32 2.535 | 9.969, f32 2.502 | 9.813 (384x23x1 i32 2.575 | 10.122;
    // 256x23x2 2.639 | 10.470; 384x14x2 2.698 | 10.764; 384x10x2 3.019 | 12.449); at OCC 2,
    // 384 threads spill from VT 16. 384x20x2 spills 8 bytes for i32 with NVRTC 13.5: 384x19x2;
    // 1-2 byte keys spill at 384x14x3 since the tiles went dynamic: 384x12x3 (not measured).
    // With the ranking's counters addressed directly (2026-11-26), 4-byte keys compile at
    // 384x19x3 without spills (56 registers). 2^28 i32 keys, same run: 384x19x3 5.741 ms,
    // 384x19x2 6.076 (the earlier ranking at 384x19x2: 5.887 in another run).
    // 8-byte keys with the atomic ranking and 4 staged keys (2026-11-27, u64, ms at 2^24 |
    // 2^28, two runs): 384x16x2 1.136 | 16.50; 384x14x2 1.164 | 17.01; 384x18x2 1.122 | 16.22
    // (NVRTC 13.5 spills i64 or f64 there with 4, 6 or 8 staged keys); 256x20x2 1.160 | 16.96.
    e(Family::RadixKeys, 90, 2, 384, 12, 3),
    e(Family::RadixKeys, 90, 4, 384, 19, 3),
    e(Family::RadixKeys, 90, 8, 384, 16, 2),
    e(Family::RadixPairs, 90, 2, 384, 8, 3),
    e(Family::RadixPairs, 90, 4, 384, 8, 3),
    // With the ranking's counters addressed directly (ms at 2^24 | 2^28, i32 and f32 keys with
    // u32 values, one run): 512x24x1 0.652 | 9.233, 0.666 | 9.314 (a tile of 96 KiB);
    // 512x23x1 0.658 | 9.380; 512x22x1 0.661 | 9.426; 512x20x1 0.674 | 9.780, 0.683 | 9.702.
    // 384x24x1 9.772 and 640x16x1 9.893, 768x12x1 10.283, 448x20x1 10.589 at 2^28 (i32).
    // Past 96 KiB (the limit raised for the test, 2026-11-27), slower (ms at 2^24 | 2^28, i32):
    // 512x26x1 0.679 | 9.18, 512x28x1 0.679 | 9.06, against 512x24x1's 0.627 | 8.50.
    e(Family::RadixPairs, 90, 8, 512, 24, 1),
    // Pairs of 8-byte keys and u32 values (u64, i64; ms at 2^24 | 2^28): 512x10x1 1.855 | 28.83
    // (256x14x2 1.879 | 30.21, 384x12x1 1.897 | 29.67, 384x5x3 2.319 | 38.23).
    // With the ranking's counters addressed directly (u64 keys, u32 values, ms at 2^20 | 2^24 |
    // 2^28, one run): 384x16x1 0.188 | 1.745 | 27.23; 512x12x1 0.184 | 1.767 | 27.54; 640x9x1
    // 0.192 | 1.830 | 28.53; 512x10x1 0.186 | 1.866 | 29.13.
    // With the tile's bytes counted at the pair's own size (2026-11-27, u64 keys, u32 values, ms
    // at 2^24 | 2^28, two runs): 512x16x1 1.622 | 24.18 (96 KiB); 384x16x1 1.686 | 25.25;
    // 384x21x1 1.791 | 26.12; 448x18x1 1.789 | 26.30. 16-byte pairs shrink it to 512x12x1.
    e(Family::RadixPairs, 90, 16, 512, 16, 1),
    // Segments: the tile bounds the segments a CTA sorts alone (5376 keys at 384x14, 5120 pairs
    // at 320x16), at 2 CTAs per SM. Spills with NVRTC 13.0 (13.5 spills less): u64 keys from
    // 384x12x2 and at 320x16x2 and 288x18x2, 1-byte pairs at 384x13x2, u32 pairs at 288x18x2.
    // Picked without spills with NVRTC 13.0 and 13.5, not yet swept.
    e(Family::RadixSegments, 90, 2, 384, 14, 2),
    e(Family::RadixSegments, 90, 4, 384, 14, 2),
    e(Family::RadixSegments, 90, 8, 384, 11, 2),
    e(Family::RadixSegments, 90, 16, 384, 7, 2),
    e(Family::RadixSegmentPairs, 90, 2, 384, 12, 2),
    e(Family::RadixSegmentPairs, 90, 4, 384, 14, 2),
    e(Family::RadixSegmentPairs, 90, 8, 320, 16, 2),
    e(Family::RadixSegmentPairs, 90, 16, 384, 7, 2),
    // sm_90, H100 SXM, 2026-11-22, `mgpu bench scan --sizes 20..28 --no-peer` with MGPU_TUNING
    // (median of 10-15; 2^28 i32 in ms, memcpy of the same bytes 0.718 ms):
    //   256x15x2 1.03 | 256x23x1 0.95 | 256x31x1 0.96 | 128x15x4 1.14 | 128x31x4 0.94
    //   128x39x4 0.90 | 128x43x4 0.91 | 128x47x2 0.91 | 160x39x2 0.91 | 512x15x1 1.13
    //   256x7x4 1.31 | 128x39x12 1.39 (spills); look-back back-off 30..400 ns: no gain.
    // 2^28 i64: 256x9x2 2.47 | 256x15x1 2.16 | 128x23x2 2.17 | 128x31x2 2.08 | 128x19x4 2.21.
    // Larger tiles amortize the look-back, which ncu shows as barrier stalls (48% of stalls at
    // 128x31). 8-byte: 128x23, not 128x31: with NVRTC 13.0, 128x31 spills in mgpu_scan_tiles for
    // an i64 modulo operator (255 registers, 24-byte stack); 128x23 is clean on 13.0 and 13.5.
    // Reduce: 256x16x4 reaches 3.0 TB/s (1.0x CUB's DeviceReduce::Sum), kept.
    // Second sweep, after the tile moved to cp.async and stopped living in registers (same command,
    // 2^28 i32, memcpy 0.718 ms): 128x39x4 0.855 | 128x39x10 0.853 | 128x39x11 0.845 |
    //   128x31x13 0.858 | 128x47x9 0.863 | 128x55x8 0.853 | 256x23x5 0.951 | 256x31x4 0.930 |
    //   256x39x3 0.871 | 64x63x12 0.864. i64: 128x23x2 1.868 | 128x23x8 1.878 | 128x31x6 1.861 |
    //   128x19x10 1.936 | 256x15x4 2.129. Occupancy no longer matters (9 to 13 CTAs/SM within
    //   2%); OCC 4 kept, as 10 and 11 spill in the reduce-then-scan kernels for i8.
    // Sixth session: Nsight Compute put the look-back kernel at 837-841 us with 56 registers
    // (9 CTAs/SM, 55% warps active) against 810 us for the same tile at 40 registers and 11
    // CTAs/SM (shared memory's limit) in experiments/propagator_scan.cu. OCC 11 for 4-byte
    // elements (40 registers, clean with NVRTC 13.0 and 13.5), 1- and 2-byte ones keep OCC 4 in a
    // class of their own: `mgpu bench scan --sizes 20..28 --types i32,f32`, i32 at 2^28 0.8658 ->
    // 0.8302-0.8329 ms (0.829x -> 0.864x memcpy; 1.034x -> 1.062-1.065x CUB), f32 0.831-0.842 ms.
    // Seventh session: the look-back kernel became persistent (a CTA per resident slot, looping
    // over tiles), whose loop took 8-byte elements at OCC 2 from 56 to 90-98 registers (5 CTAs/SM
    // instead of 8): i64 at 2^28 1.87 -> 2.02 ms. OCC 9 (shared memory's limit at 128x23) holds
    // them to 56 registers, clean with NVRTC 13.0 and 13.5: 1.88-1.89 ms. Sub-word elements
    // likewise (56 -> 66-114 registers at OCC 4; u8 at 2^28 0.412 -> 0.49 ms): OCC 9 takes them
    // back to 54-56 registers, 0.408-0.413 ms (u16 0.553 -> 0.540-0.545 ms), with the upsweep of
    // reduce-then-scan held to the Reduce family's OCC (`upsweep`), where it does not spill.
    // Eighth session, with a 64-byte status slot per tile (lookback.cuh), `mgpu bench scan --sizes
    // 28 --no-peer`, ms: i32 128x39x11 0.753 | 256x31x6 0.752 | 256x23x8 0.756 | 128x47x9 0.758 |
    //   128x55x8 0.762 | 128x39x10 0.760 | 128x35x12 0.761 | 64x63x14 0.765 | 128x31x13 0.769:
    //   the tile stays. i64 (two rounds): 128x27x8 1.584-1.595 | 128x23x9 1.612-1.614 | 128x31x6
    //   1.602-1.615 | 128x25x8 1.604-1.622 | 256x13x5 1.724-1.734; f64 alike. 8-byte: 128x27x8.
    // `mgpu tune scan` (2026-11-23, H100 SXM, 2^26, G items/s): i32 best 256x39x5 341.1, 1.015x
    //   the entry's 335.9, but at 2^28 it ran 0.813 ms against the entry's 0.753: kept. i64 best
    //   256x15x7 177.6, 1.009x the entry's 176.1 (within run-to-run noise): kept.
    e(Family::Scan, 90, 2, 128, 39, 9),
    e(Family::Scan, 90, 4, 128, 39, 11),
    e(Family::Scan, 90, 8, 128, 27, 8),
    // sm_90, H100 SXM, 2026-11-22, `mgpu bench sort --sizes 26 --no-peer --reps 5` with
    // MGPU_TUNING (ms at 2^26; keys | pairs with values of the key's type):
    //   i32 keys: 128x23x2 6.26 | 128x15x4 5.95 | 256x15x2 5.81 | 256x11x2 5.47 | 128x31x2 7.45
    //             256x23x1 6.14 | 512x11x1 5.51 | 64x31x4 7.85
    //   i32 pairs: 256x11x1 8.77 | 128x11x2 9.01 | 128x15x2 9.03 | 256x7x2 8.28 | 128x23x2 9.98
    //              256x15x1 9.44 | 512x7x1 8.36 | 128x7x4 8.75
    //   i64 keys: 128x11x2 8.84 | 128x15x2 9.22 | 256x11x1 8.62 | 128x23x2 10.77 | 256x7x2 8.84
    //   i64 pairs: 128x7x2 15.78 | 128x11x2 15.29 | 256x7x1 15.14 | 128x15x2 17.07 | 64x15x4 17.94
    // Smaller VT and wider CTAs win: the shared-memory merge (merge path search, serial merge)
    // costs more than the extra pass that smaller tiles bring.
    // Second sweep, after the merge kernels moved to cp.async loads (no registers hold loads in
    // flight, so a high OCC fits without spills: 32 registers at 256x11x8), same command (ms at
    // 2^26):
    //   i32 keys: 256x11x2 4.04 | 256x11x6 3.98 | 256x11x8 3.90 | 256x15x4 3.94
    //   i32 pairs: 256x7x2 7.57 | 256x7x6 7.46 | 256x7x8 7.59 | 256x11x4 6.97 (spills in
    //              mgpu_merge, hence 256x11x3: 7.11 in the BENCHMARKS.md run)
    //   i64 keys: 256x11x1 6.88 | 256x11x5 6.86 | 128x11x4 7.33 | 256x7x4 7.55
    //   i64 pairs: 256x7x1 13.83 | 256x7x5 13.94 | 128x7x4 14.78 | 256x5x4 14.08
    // Third sweep (third session), at 2^28, where the pass count is what matters: a tile of at
    // least 4096 keys saves one of 17 passes (2^28 / 2816 needs 17, 2^28 / 4352 needs 16), and
    // each pass costs about one memcpy of the data (ncu: 0.75 ms per pass, memcpy 0.72 ms).
    // `mgpu bench sort --sizes 28 --types i32,i64 --no-peer`, ms (keys | pairs):
    //   i32: 256x11x8 | 256x11x3 16.67 | 30.77; 256x17x4 | 256x17x2 15.93 | 29.60;
    //        256x15x4 | 256x15x2 17.00 | 31.47; 256x17x6 15.65 (spills for i8 and u16 keys);
    //        512x17x2 (15 passes) 16.42; 512x9x2 pairs 31.79; 512x11x1 pairs 35.44.
    //   i64: 256x11x1 | 256x7x1 29.95 | 60.95; 256x17x1 | 256x9x1 28.15 | 57.74;
    //        256x15x1 | 256x9x2 29.89 | 57.75.
    // These sweeps ran with two-way passes and keys in 0..1000 (see BENCHMARKS.md).
    // Fifth sweep (fifth session, 2026-11-22): four-way passes, full-range keys, and a serial merge
    // without index clamps. ncu showed the four-way pass latency bound at 50% occupancy (DRAM at
    // 58%, issue slots half idle), so occupancy first. Each candidate compiled without spills for
    // every type of its class (kernels_compile); `mgpu bench sort --sizes 28 --no-peer` with
    // MGPU_TUNING, ms at 2^28:
    //   i32 keys: 256x17x4 13.41 | 256x17x6 12.40 | 256x17x8 12.23 | 256x15x8 12.97
    //             512x17x4 11.73 | 512x17x3 12.46 | 512x21x3 11.73 | 256x21x6 11.63
    //             (256x21x7, 256x23x6, 256x19x6 spill for i32 or f32); f32 keys: 256x21x6
    //             13.89 | 512x21x3 14.06 | 512x17x3 14.67.
    //   i32 pairs: 256x17x2 22.27 | 256x21x2 21.56; f32 pairs: 24.75 | 25.60. 256x17x2 kept:
    //             256x21x2 spills (128 registers) for i8 and u16 keys with values.
    //   i64 keys: 256x17x1 23.42 (83 registers: 3 CTAs/SM) | 256x17x2 23.42 | 256x17x3 20.83
    //             (256x17x4 and 256x21x3 spill).
    //   i64 pairs: 256x9x1 41.97 | 256x9x2 41.97 | 256x9x3 38.86 (256x9x4, 256x11x3 spill).
    //   i8 and u16 keys spill at 256x17x6 and above (sub-word keys go through registers), hence
    //   their own class at 256x17x4.
    //   The faster 4-byte candidates (256x21x6, 512x21x3, 512x17x4, 256x17x8) spilled 4-20 bytes
    //   in mgpu_merge4_pass or mgpu_blocksort for i32 or f32 keys with NVRTC 13.0, the GPU
    //   machine's compiler (NVRTC 13.5 compiled 256x21x6 clean), so 256x17x6 was the entry.
    // Sixth sweep (sixth session, 2026-11-22): the spills were in code that never runs for i32 (the
    // register copy for misaligned keys) and in thread_sort's per-swap bound checks; without them,
    // 4-byte keys compile clean with both compilers up to VT 23 at 6 CTAs/SM. Same command, ms:
    //   i32 | f32 keys: 256x17x6 12.18 | 14.88; 256x19x6 11.60 | 14.26; 256x21x6 11.34 | 14.08;
    //                   256x23x6 11.26 | 13.57; 512x21x3 11.33 | 13.95; 128x21x12 13.28 | 15.90
    //                   (256x25x6 spills for i32 with NVRTC 13.5; 512x23x3 is over
    //                   MAX_TILE_BYTES).
    //   i32 | f32 pairs: 256x17x2 19.77 | 22.08; 256x21x2 21.34 | 21.83 (256x23x2 is over
    //                    MAX_TILE_BYTES).
    //   `mgpu bench sort --sizes 28` with 256x23x6: i32 keys 11.20 ms, 1.313x CUB SortKeys.
    // `mgpu tune sort` (2026-11-23, H100 SXM, 2^26, G items/s; 81 s for i32, 101 s for i64):
    //   i32 keys 256x23x6 23.23 (the entry, 1.002x); i32 pairs 256x17x2 14.30 (the entry);
    //   i64 keys 256x17x3 13.73 (the entry, 1.001x); i64 pairs best 128x17x5 7.95, 1.019x the
    //   entry's 7.80 (one run, within noise): every entry kept.
    e(Family::SortKeys, 90, 2, 256, 17, 4),
    e(Family::SortKeys, 90, 4, 256, 23, 6),
    e(Family::SortKeys, 90, 8, 256, 17, 3),
    e(Family::SortPairs, 90, 8, 256, 17, 2),
    e(Family::SortPairs, 90, 16, 256, 9, 3),
    // The merge of two sequences, sm_90, H100, 2026-11-27: `mgpu bench merge --sizes 26..28
    // --types i32` with MGPU_TUNING, ratio to CUB DeviceMerge at 2^26 | 2^27 | 2^28 in one run:
    //   256x23x6 (sort_keys') 0.997 | 0.999 | 0.999; 256x27x6 1.018 | 1.012 | 1.006; 256x31x4
    //   1.000 | 1.002 | 1.007; 256x29x5 0.998 | 0.927 | 1.010; 512x15x3 0.978 | 0.976 | 0.982.
    // Larger tiles leave fewer boundaries to search (the partition took 66-71 us for 256x23x6's
    // 45,592 at 2^28). Sub-word keys keep the sort's class (they go through registers).
    e(Family::Merge, 90, 2, 256, 17, 4),
    e(Family::Merge, 90, 4, 256, 27, 6),
    // Compaction, sm_90, H100 SXM, 2026-11-23: `mgpu bench <select|unique|rle|reduce-by-key>
    // --sizes 27 --types i32 --no-peer` with MGPU_TUNING, ms at 2^27 (memcpy 0.365):
    //   select-if 50% | unique run 500 | rle run 500 | reduce-by-key run 500
    //   128x15x4 0.440 | 0.345 | 0.662 | 0.736;  128x15x8 0.393 | 0.317 | 0.623 | 0.691
    //   128x23x6 0.380 | 0.279 | 0.533 | 0.598;  128x31x4 0.394 | 0.301 | 0.454 | 0.520
    //   256x11x6 0.410 | 0.313 | 0.577 | 0.640;  256x15x4 0.394 | 0.304 | 0.517 | 0.590
    // Keys alone (4 bytes): 128x23x6. Keys with values or lengths (8 bytes): 128x31x4, the
    // largest tile a 32-bit mask of kept items allows. Sub-word keys go through registers and
    // spill at 128x23x6: they keep 128x15x4.
    // Segmented reduction, sm_90, H100 SXM, 2026-11-23: `mgpu bench segreduce --sizes 26
    // --no-peer --reps 10` with MGPU_TUNING, i32, apply ms at 2^26 for fixed lengths 1 | 2 | 500
    // and one segment: 128x15x4 0.547 | 0.485 | 0.376 | 0.358; 128x23x4 0.468 | 0.410 | 0.310 |
    // 0.301; 128x19x5 0.433 | 0.376 | 0.289 | 0.281; 128x29x4 0.438 | 0.362 | 0.282 | 0.273;
    // 256x11x3 0.420 | 0.366 | 0.288 | 0.276; 128x23x5 0.421 | 0.346 | 0.269 | 0.260 (best, but
    // it spills 28 bytes at OCC 5's register cap). 128x27x4 (the "128x29x4" row: VT lowered to
    // fit 12 bytes per item) is clean and within 2-6% of it.
    // `mgpu tune segreduce` (2026-11-23, H100 SXM, after the tile's strided offset loops; G items
    //   per s over every distribution at 2^26): i32 128x23x6 201.9, 1.030x 128x27x4's 196.0
    //   (128x15x9 196.9, 256x11x5 169.4, 64x23x11 186.2); i64 128x15x7 108.2, 1.645x the
    //   inherited 128x11x4's 65.8: with OCC 4, 8-byte tiles ran 4 CTAs per SM. 128x15x7 spills
    //   12 bytes for f64 (72 registers), so the entry is 128x15x6 (80 registers, clean).
    // After the tiles lost their look-back (a spine carries across tiles; 56 registers for i32):
    //   `mgpu tune segreduce` (2026-11-23, H100 SXM, i32, 2^26) 128x23x9 329.9, 1.045x 128x23x6's
    //   315.6 (128x15x13 327.5, 64x23x16 328.3, 128x31x6 312.4).
    // The one-shots at 2^24 (2026-11-29, H200, two rounds in turns): 64x23x16, 128x15x13 and
    //   128x31x8 within the rounds' spread of 128x23x9 on every distribution (BENCHMARKS.md).
    e(Family::SegReduce, 90, 4, 128, 23, 9),
    // Segments of 4 positions or more on average (2026-11-29, H200, `mgpu bench segreduce
    //   --sizes 24..28 --no-peer` with MGPU_TUNING, 128x23x9 against 128x31x8 in turns, one-shot
    //   ms at 2^28): the power law 0.4557 -> 0.4279, fixed-20 0.3094 -> 0.2931, one segment
    //   0.2980 -> 0.2796, uniform-500 0.2739 -> 0.2645, 2-6% at 2^26, within 1-5% at 2^24; the
    //   applies 0-4% faster. Shorter segments, whose tiles mark many offsets, ran slower at
    //   128x31x8 (uniform-2 +2% at 2^28, +4-8% at 2^24..2^26) and keep `SegReduce`'s tiles.
    e(Family::SegReduceLong, 90, 4, 128, 31, 8),
    e(Family::SegReduce, 90, 8, 128, 15, 6),
    // SpMV, sm_90, H100 SXM, 2026-11-23, `mgpu bench spmv --sizes 26 --types f32 --no-peer` with
    //   MGPU_TUNING, apply ms for random rows | power-law | 2-D | 3-D stencil (cuSPARSE in an
    //   earlier run: 0.586 | 0.538 | 0.320 | 0.280): 128x15x5 (what SpMV ran with when it took
    //   the segreduce entry, VT <= 15, OCC <= 5) 0.698 | 0.586 | 0.311 | 0.319; 128x15x7 0.693 |
    //   0.590 | 0.307 | 0.324; 128x11x8 0.616 | 0.557 | 0.328 | 0.310; 128x11x10 0.617 | 0.561 |
    //   0.326 | 0.313; 128x7x12 0.599 | 0.564 | 0.343 | 0.304; 128x7x16 0.608 | 0.571 | 0.349 |
    //   0.303; 256x7x8 0.620 | 0.553 | 0.347 | 0.318; 64x15x12 0.703 | 0.699 | 0.332 | 0.428;
    //   128x23x5 0.693 | 0.689 | 0.448 | 0.488. More gathers in flight per SM (higher OCC) help
    //   the random rows, larger tiles the stencils: 128x11x8 has the lowest total. f64: the
    //   former 128x15x5, not swept.
    // Since the tiles take only the shared memory of OCC CTAs per SM and leave the rest to the
    //   L1 cache that serves the gathers (`Gpu::keep_l1`; 2026-11-24, H100 SXM, 2^26, apply ms
    //   random | power-law | 2-D | 3-D, every gather kernel at one carveout): f32 at 70% (164
    //   KiB, what 128x11x12 asks for) 0.605 | 0.543 | 0.254 | 0.242, at 50% (132 KiB, 128x11x8's)
    //   0.604 | 0.547 | 0.272 | 0.264, the driver's choice 0.637 | 0.536 | 0.247 | 0.248; f64 at
    //   70% (128x15x6) 0.681 | 0.736 | 0.369 | 0.363, the driver's choice 1.240 | 1.265 | 0.401 |
    //   0.445.
    // f64 once 8-byte tiles keep their columns in the products' slots and read the matrix
    //   values evicting first (2026-11-24, H100 SXM, 2^26, apply ms random | power-law | 2-D |
    //   3-D, two runs each): 128x9x10 0.619 | 0.642-0.645 | 0.362 | 0.344-0.346; 128x9x8 0.615-
    //   0.617 | 0.642-0.644 | 0.363-0.368 | 0.345-0.354; 128x7x10 0.619 | 0.645-0.649 | 0.365 |
    //   0.344-0.348; 256x7x5 0.614-0.620 | 0.643-0.645 | 0.371-0.373 | 0.353-0.354; 256x5x7
    //   0.614-0.617 | 0.649-0.651 | 0.374-0.375 | 0.360; 128x11x9 0.616-0.617 | 0.636 | 0.381-0.383
    //   | 0.359; 128x13x7 0.623-0.626 | 0.632-0.633 | 0.412-0.418 | 0.385. Larger tiles lose the
    //   stencils (the matrix values' loads wait behind the gathers); 128x15x6 and 256x7x6 spill.
    //   The former 128x15x6 with the old tiles (two runs): 0.646-0.648 | 0.718-0.720 | 0.359-0.360
    //   | 0.341-0.342.
    // f32 on the H200 (2026-11-29, `mgpu bench spmv --types f32`, in turns with 128x11x12):
    //   128x13x10 (48 registers, 10 CTAs per SM) at 2^24, four rounds, one-shot | unchecked |
    //   apply ms: random rows 0.1427-0.1469 | 0.1381-0.1394 | 0.1306-0.1321 against 0.1429-0.1490
    //   | 0.1365-0.1433 | 0.1311-0.1330; 2-D stencil 0.0820-0.0837 | 0.0688-0.0702 |
    //   0.0590-0.0606 against 0.0868-0.0890 | 0.0703-0.0755 | 0.0616-0.0637; 3-D 0.0731-0.0767 |
    //   0.0663-0.0700 | 0.0572-0.0581 against 0.0771-0.0793 | 0.0676-0.0719 | 0.0595-0.0604; the
    //   power law within the rounds' spread. At 2^28 (one round) the one-shots 0.5-5% faster, the
    //   applies within 0.6%.
    e(Family::Spmv, 90, 4, 128, 13, 10),
    e(Family::Spmv, 90, 8, 128, 9, 10),
    // `mgpu tune select` / `mgpu tune reduce-by-key` (2026-11-23, H100 SXM, i32 at 2^26, G items
    //   per s): keys 256x23x2 358.4, 1.000x the entry's 358.4; keys with values 128x31x4 221.4
    //   (the entry): kept.
    e(Family::Compact, 90, 2, 128, 15, 4),
    e(Family::Compact, 90, 4, 128, 23, 6),
    e(Family::Compact, 90, 8, 128, 31, 4),
    // 8-byte keys with 8-byte values took sm_70's 128x7x4: too few loads in flight per SM.
    //   2026-11-27, H100 SXM, `mgpu bench unique --rows unique-by-key/run1,...,run500 --sizes 26
    //   --types i64` with MGPU_TUNING, ms for runs of mean 1 | 2 | 10 | 500 (CUB 0.815 | 0.637 |
    //   0.449 | 0.396): 128x7x4 0.864 | 0.700 | 0.507 | 0.429; 128x15x4 0.782 | 0.622 | 0.440 |
    //   0.326; 128x15x5 0.772 | 0.596 | 0.414 | 0.295; 128x11x6 0.788 | 0.615 | 0.421 | 0.315;
    //   128x19x4 0.767 | 0.596 | 0.416 | 0.297. 128x15x5: 96 registers at most, no spill.
    e(Family::Compact, 90, 16, 128, 15, 5),
    // 4-byte keys with 4-byte values that go with the kept keys alone, once each thread copies
    //   its kept items' values as its keys decide (2026-11-27, H100 SXM, `mgpu bench unique
    //   --rows unique-by-key/run1,...,run500 --sizes 28 --types i32 --no-peer` with MGPU_TUNING
    //   `compact 90 8 ...`, ms for runs of mean 1 | 2 | 10 | 500): 128x31x4 1.564 | 1.271 | 1.026
    //   | 0.737; 128x23x5 1.594 | 1.265 | 1.018 | 0.760; 128x19x6 1.608 | 1.294 | 1.012 | 0.776;
    //   128x15x8 1.624 | 1.299 | 0.986 | 0.767; 256x15x4 1.560 | 1.234 | 0.931 | 0.714; 256x13x4
    //   1.596 | 1.269 | 0.966 | 0.771; 256x11x4 1.650 | 1.322 | 1.030 | 0.848; 256x15x3 1.635 |
    //   1.316 | 1.032 | 0.827. 256x15x4 spills 4 bytes for unique by key (f32 under NVRTC 13.0,
    //   i32 with 64-bit counts under 13.5): 256x13x4, clean under both. The same class's keys
    //   alone (8-byte keys) keep 128x31x4: partition-if of i64 at 2^27 took 0.907 ms at 256x15x4,
    //   0.815 at 128x31x4.
    e(Family::CompactPairs, 90, 8, 256, 13, 4),
    // Non-trivial runs of 8-byte keys, 2026-11-27, H100 SXM, `mgpu bench rle --rows
    //   non-trivial-runs/run1,...,run500 --sizes 28 --types i64 --no-peer` with MGPU_TUNING, ms
    //   for runs of mean 1 | 2 | 10 | 500 (CUB 0.834 | 1.107 | 0.977 | 0.867): 128x23x4 (Compact's
    //   entry under the kernel's cap) 0.838 | 1.148 | 1.015 | 0.853; 128x11x8 0.951 | 1.196 | 1.081
    //   | 0.961; 128x15x6 0.851 | 1.085 | 0.971 | 0.862; 128x19x5 0.810 | 1.050 | 0.935 | 0.819;
    //   128x19x8 0.806 | 1.070 | 0.942 | 0.819; 128x31x3 0.820 | 1.140 | 0.987 | 0.824; 256x11x4
    //   0.861 | 1.117 | 1.005 | 0.868; 256x15x4 0.820 | 1.082 | 0.968 | 0.845; 256x19x2 0.775 |
    //   1.014 | 0.897 | 0.783; 256x19x4 0.771 | 1.035 | 0.910 | 0.785 (61 registers under NVRTC
    //   13.0, 54 under 13.5, no spill).
    e(Family::NonTrivialRuns, 90, 8, 256, 19, 4),
    // And 4-byte keys (same command, --types i32, CUB 0.590 | 0.847 | 0.752 | 0.625): 128x23x4
    //   0.537 | 0.783 | 0.650 | 0.548; 256x19x4 0.448 | 0.678 | 0.546 | 0.457.
    e(Family::NonTrivialRuns, 90, 4, 256, 19, 4),
    // Sub-word keys keep the compaction's tile (not measured at 256x19x4).
    e(Family::NonTrivialRuns, 90, 2, 128, 15, 4),
    // Reduce-by-key once its tiles read their items from shared memory twice (56 registers at
    //   128x31), sm_90, H100 SXM, 2026-11-23, `mgpu bench reduce-by-key --sizes 28 --types i32
    //   --no-peer` with MGPU_TUNING, ms for runs of mean 1 | 2 | 10 | 500: 128x31x4 (Compact's
    //   entry) 1.580 | 1.300 | 1.023 | 0.910; 128x31x5 1.602 | 1.313 | 1.034 | 0.915; 128x23x6
    //   1.567 | 1.247 | 0.993 | 0.878; 128x23x7 1.580 | 1.243 | 0.989 | 0.873; 128x19x8 1.576 |
    //   1.217 | 0.971 | 0.863; 128x15x10 1.582 | 1.224 | 0.968 | 0.872; 256x15x5 1.534 | 1.195 |
    //   0.933 | 0.834 (the best at every run length).
    e(Family::ReduceByKey, 90, 8, 256, 15, 5),
];

/// A table entry for inputs of at most `max_items` items: where the merge sort's input is a few
/// tiles per SM, its time is a chain of latency-bound launches, and the tile that shortens the
/// chain most is not the one that streams large inputs fastest; further up, a larger tile can save
/// a whole merge pass.
struct Band {
    family: Family,
    arch: u32,
    size_class: u32,
    max_items: u64,
    tuning: Tuning,
}

// The bands, smallest first. sm_90, H100 SXM, 2026-11-27, `mgpu bench sort --rows sort-keys
// --types i32,f32 --sizes 20..24 --no-peer` with MGPU_TUNING, ms at 2^20 | 2^21 | 2^22 | 2^23 |
// 2^24, i32 (f32, before floats compared once without NaN), the four-way passes searching their
// own splits where a wave holds every tile:
//   256x23x6 0.108 (0.121) | 0.136 (0.156) | 0.224 (0.262) | 0.415 (0.483) | 0.765 (0.897)
//   512x17x3 0.093 (0.102) | 0.135 (0.155) | 0.216 (0.253) | 0.411 (0.491) | 0.787 (0.937)
//   512x21x3 0.098 (0.110) | 0.146 (0.169) | 0.203 (0.241) | 0.383 (0.459) | 0.754 (0.902)
//   256x17x6 0.097 (0.107) | 0.142 (0.162) | 0.220 (0.261) | 0.422 (0.494)
// and at 2^26 | 2^28: 256x23x6 2.78 (3.32) | 11.25 (13.58), 512x21x3 2.86 (3.48) | 11.24
// (13.89). 512x17x3 up to 264 of its tiles (one wave of the searching pass on 132 SMs, 2 CTAs
// per SM), the table's 256x23x6 up to 528 (its wave, 4 per SM), then 512x21x3 up to 4096 of its
// tiles (six merge passes; the table's tile takes a seventh past 4096 of its own, 24.1M keys),
// the table above (seven passes either way to 96.5M keys, and the table's pass is the faster).
// sm_90, H200, 2026-11-28, `mgpu bench sort --rows sort-keys --types i32,f32 --sizes 25..27`,
// two rounds, ms i32 (f32), CUB DeviceMergeSort 1.465 | 2.92 | 5.97: 256x23x6 1.516-1.519
// (1.561-1.564) | 2.722-2.724 (2.811-2.813) | 5.330-5.331 (5.505-5.508); 512x21x3 1.357
// (1.448) | 2.803 (2.986) | 5.337 (5.717-5.719): at 2^27 the pass it saves did not pay.
const BANDS: &[Band] = &[
    band(
        Family::SortKeys,
        90,
        4,
        264 * 512 * 17,
        Tuning::new(512, 17, 3),
    ),
    band(
        Family::SortKeys,
        90,
        4,
        528 * 256 * 23,
        Tuning::new(256, 23, 6),
    ),
    band(
        Family::SortKeys,
        90,
        4,
        4096 * 512 * 21,
        Tuning::new(512, 21, 3),
    ),
];

const fn band(family: Family, arch: u32, size_class: u32, max_items: u64, t: Tuning) -> Band {
    Band {
        family,
        arch,
        size_class,
        max_items,
        tuning: t,
    }
}

/// The tunings of `family` that apply to some input sizes only on `arch` (for elements of
/// `elem_size` bytes): what [`lookup_for`] may pick besides [`lookup`]'s entry.
pub fn bands(family: Family, arch: u32, elem_size: usize) -> Vec<Tuning> {
    if file_entries().is_ok_and(|f| best_entry(f.iter(), family, arch, elem_size).is_some()) {
        return Vec::new();
    }
    band_entries(family, arch, elem_size)
        .map(|b| b.tuning)
        .collect()
}

/// The bands of the newest architecture at or below `arch` that has any for the family and
/// `elem_size`'s most specific size class.
fn band_entries(
    family: Family,
    arch: u32,
    elem_size: usize,
) -> impl Iterator<Item = &'static Band> {
    let class = size_class(elem_size);
    let matching = move |b: &&Band| b.family == family && b.size_class == class && b.arch <= arch;
    let newest = BANDS.iter().filter(matching).map(|b| b.arch).max();
    BANDS
        .iter()
        .filter(move |b| matching(b) && Some(b.arch) == newest)
}

/// [`lookup`]'s tuning for an input of `items` items: a tuning file's entry if one matches (it
/// holds at every size), else the table's band for that size where the family has bands, else
/// the table's entry.
///
/// ```
/// use mgpu::tuning::{lookup, lookup_for, Family};
/// // Past its bands, a family's tuning is the table's entry, as `lookup` gives it.
/// let large = lookup_for(Family::SortKeys, 90, 4, 1 << 28)?;
/// assert_eq!(large, lookup(Family::SortKeys, 90, 4)?);
/// // A merge sort of 2^20 4-byte keys on sm_90 may take a tile of its own.
/// let small = lookup_for(Family::SortKeys, 90, 4, 1 << 20)?;
/// println!("2^20 keys: {}x{}x{}", small.nt, small.vt, small.occ);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub fn lookup_for(family: Family, arch: u32, elem_size: usize, items: u64) -> Result<Tuning> {
    let file = file_entries()?;
    if best_entry(file.iter(), family, arch, elem_size).is_none() {
        if let Some(b) = band_entries(family, arch, elem_size).find(|b| items <= b.max_items) {
            b.tuning.validate_for(family, elem_size)?;
            return Ok(b.tuning);
        }
    }
    lookup(family, arch, elem_size)
}

/// The tuning for a family on an architecture (`major * 10 + minor`, e.g. 90) and element size:
/// a `MGPU_TUNING` file entry if one matches, else the table with inheritance from older
/// architectures. Too-large tiles for big elements are shrunk (VT lowered, kept odd where the
/// family's tiles are transposed through shared memory by strides of VT) to fit.
pub fn lookup(family: Family, arch: u32, elem_size: usize) -> Result<Tuning> {
    let file = file_entries()?;
    let from_file = best_entry(file.iter(), family, arch, elem_size);
    let from_table = best_entry(TABLE.iter(), family, arch, elem_size);
    if let Some(general) = family.falls_back_to() {
        if from_file.is_none() && from_table.is_none() {
            return lookup(general, arch, elem_size);
        }
    }
    let from_table = from_table.unwrap_or(Tuning::new(128, 7, 4));
    let mut t = from_file.unwrap_or(from_table);
    let max = family.max_tile_bytes();
    // The radix tiles are striped per warp: any VT is free of bank conflicts, so 16-byte pairs
    // under the 12-byte class's 512x16 keep 512x12 (6144 pairs, 96 KiB), not 512x11.
    let odd = !matches!(family, Family::RadixKeys | Family::RadixPairs);
    while t.vt > 1 && t.nv() * elem_size > max {
        t.vt = match t.vt {
            vt if !odd => vt - 1,
            vt if vt > 2 => (vt - 2) | 1,
            _ => 1,
        };
    }
    while t.nt > 32 && t.nv() * elem_size > max {
        t.nt /= 2;
    }
    t.validate_for(family, elem_size)?;
    Ok(t)
}

/// The table's tunings for `arch` (`None`: the CPU, which takes sm_90's) as a kernel family's
/// tuning rule reads them (`cuda::family::TableTuning`).
pub fn table(arch: Option<u32>) -> impl Fn(Family, usize) -> Result<Tuning> {
    move |family, size| resolve(family, arch, size, None)
}

/// The tuning a call runs with: the caller's override (validated for tiles of `tile_elem_size`
/// bytes per element) or the table's entry for `arch` (sm_90's on the CPU, where there is none).
pub fn resolve(
    family: Family,
    arch: Option<u32>,
    tile_elem_size: usize,
    over: Option<Tuning>,
) -> Result<Tuning> {
    resolve_for(family, arch, tile_elem_size, None, over)
}

/// [`resolve`] for a call on `items` items where that is known: the table's band for that size
/// ([`lookup_for`]) unless the caller overrides.
pub fn resolve_for(
    family: Family,
    arch: Option<u32>,
    tile_elem_size: usize,
    items: Option<u64>,
    over: Option<Tuning>,
) -> Result<Tuning> {
    let arch = arch.unwrap_or(90);
    match (over, items) {
        (Some(t), _) => {
            t.validate_for(family, tile_elem_size)?;
            Ok(t)
        }
        (None, Some(n)) => lookup_for(family, arch, tile_elem_size, n),
        (None, None) => lookup(family, arch, tile_elem_size),
    }
}

/// The tuning-file format version this library reads and `mgpu tune` writes.
pub const FILE_VERSION: u32 = 1;

/// The word that starts a tuning file's first line, followed by the version: `mgpu-tuning 1`.
pub const FILE_MAGIC: &str = "mgpu-tuning";

/// Where the tunings come from: the built-in table alone, or a tuning file over it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TuningSource {
    /// The built-in table (no tuning file: `MGPU_TUNING=none`, or unset with no default file).
    BuiltIn,
    /// The file named by `MGPU_TUNING`.
    Env(PathBuf),
    /// The file at the default location ([`default_file`]), `MGPU_TUNING` being unset.
    Default(PathBuf),
}

impl TuningSource {
    /// The tuning file, if one is in effect.
    pub fn path(&self) -> Option<&Path> {
        match self {
            TuningSource::BuiltIn => None,
            TuningSource::Env(p) | TuningSource::Default(p) => Some(p),
        }
    }
}

impl std::fmt::Display for TuningSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TuningSource::BuiltIn => write!(f, "built-in tables"),
            TuningSource::Env(p) => write!(f, "{} (MGPU_TUNING)", p.display()),
            TuningSource::Default(p) => write!(f, "{} (default location)", p.display()),
        }
    }
}

/// The default tuning file: `$XDG_CONFIG_HOME/mgpu/tuning.txt`, else `~/.config/mgpu/tuning.txt`
/// (`None` without either variable). It is read when it exists and `MGPU_TUNING` is unset.
pub fn default_file() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("XDG_CONFIG_HOME") {
        return Some(PathBuf::from(d).join("mgpu").join("tuning.txt"));
    }
    var("HOME").map(|h| {
        PathBuf::from(h)
            .join(".config")
            .join("mgpu")
            .join("tuning.txt")
    })
}

/// Which tuning file is in effect (without reading it): `MGPU_TUNING`'s (`none` or empty: none),
/// else the default file if it exists, else none. The library reads a file once per process
/// (and looks for the default file once): a file changed while a process runs is seen by the next.
pub fn source() -> TuningSource {
    match std::env::var_os("MGPU_TUNING") {
        Some(v) if v.is_empty() || v == "none" => TuningSource::BuiltIn,
        Some(v) => TuningSource::Env(PathBuf::from(v)),
        None => match default_file() {
            Some(p) if p.is_file() => TuningSource::Default(p),
            _ => TuningSource::BuiltIn,
        },
    }
}

/// The tuning file in effect, read and checked: [`source`] and the number of its entries, or the
/// error every primitive would fail with (an unreadable file, a bad line, an unknown version).
pub fn check() -> Result<(TuningSource, usize)> {
    let source = source();
    let n = file_entries_of(&source)?.len();
    Ok((source, n))
}

/// One line of a tuning file for `family` on `arch`, elements of class `size_class`
/// ([`size_class`]): `family arch size_class nt vt occ [backoff_ns]`.
pub fn format_entry(family: Family, arch: u32, size_class: u32, t: &Tuning) -> String {
    let mut line = format!(
        "{:<10} {arch} {size_class:>2} {:>4} {:>2} {:>2}",
        family.name(),
        t.nt,
        t.vt,
        t.occ
    );
    if t.backoff_ns != 0 {
        line += &format!(" {}", t.backoff_ns);
    }
    line
}

/// The entries of the tuning file in effect, read once per process and file: every primitive
/// call looks its tuning up, and reading the file each time cost tens of microseconds a call
/// (inside the timed region of a benchmark). A file that cannot be read is tried again.
fn file_entries() -> Result<Arc<Vec<Entry>>> {
    static DEFAULT: OnceLock<TuningSource> = OnceLock::new();
    static READ: Mutex<Vec<(TuningSource, Arc<Vec<Entry>>)>> = Mutex::new(Vec::new());
    let source = match std::env::var_os("MGPU_TUNING") {
        Some(_) => source(),
        None => DEFAULT.get_or_init(source).clone(),
    };
    if source == TuningSource::BuiltIn {
        return Ok(Arc::new(Vec::new()));
    }
    let mut read = READ.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, entries)) = read.iter().find(|(s, _)| *s == source) {
        return Ok(entries.clone());
    }
    let entries = Arc::new(file_entries_of(&source)?);
    read.push((source, entries.clone()));
    Ok(entries)
}

fn file_entries_of(source: &TuningSource) -> Result<Vec<Entry>> {
    let Some(path) = source.path() else {
        return Ok(Vec::new());
    };
    let text = std::fs::read_to_string(path).map_err(|e| Error::Io {
        what: format!("reading the tuning file {source}"),
        source: e,
    })?;
    parse_tuning_file(&text).map_err(|e| match e {
        Error::InvalidArgument(m) => {
            Error::InvalidArgument(format!("tuning file {}: {m}", path.display()))
        }
        other => other,
    })
}

/// Parses a tuning file: an optional `mgpu-tuning VERSION` first line (version 1 when absent),
/// then lines of `family arch size_class nt vt occ [backoff_ns]`; `#` starts a comment.
fn parse_tuning_file(text: &str) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f[0] == FILE_MAGIC {
            if !first {
                return invalid(format!(
                    "line {}: `{FILE_MAGIC}` belongs on the first line only",
                    i + 1
                ));
            }
            first = false;
            match f.get(1).map(|v| v.parse::<u32>()) {
                Some(Ok(FILE_VERSION)) if f.len() == 2 => continue,
                Some(Ok(v)) if f.len() == 2 => {
                    return invalid(format!(
                        "format version {v}, but this mgpu reads version {FILE_VERSION} only \
                         (`{FILE_MAGIC} {FILE_VERSION}`); write it again with this version's \
                         `mgpu tune`, or set MGPU_TUNING=none to use the built-in tables"
                    ))
                }
                _ => {
                    return invalid(format!(
                        "line {}: expected `{FILE_MAGIC} {FILE_VERSION}`, got `{line}`",
                        i + 1
                    ))
                }
            }
        }
        first = false;
        let bad = || {
            Error::InvalidArgument(format!(
                "line {}: expected `family arch size_class nt vt occ [backoff_ns]`, got `{line}`",
                i + 1
            ))
        };
        if f.len() < 6 || f.len() > 7 {
            return Err(bad());
        }
        let family = Family::from_name(f[0]).ok_or_else(bad)?;
        let n: Vec<u32> = f[1..]
            .iter()
            .map(|s| s.parse::<u32>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad())?;
        let mut tuning = Tuning::new(n[2], n[3], n[4]);
        tuning.backoff_ns = n.get(5).copied().unwrap_or(0);
        tuning.validate_for(family, n[1] as usize)?;
        out.push(Entry {
            family,
            arch: n[0],
            size_class: n[1],
            tuning,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_architectures_inherit() {
        let scan = |arch| lookup(Family::Scan, arch, 4).unwrap();
        assert_eq!(scan(120), scan(90));
        assert_eq!(scan(86), scan(70));
        assert_ne!(scan(90), scan(70));
        // sm_90 has no reduce entry of its own: it inherits sm_70's.
        assert_eq!(
            lookup(Family::Reduce, 90, 4).unwrap(),
            lookup(Family::Reduce, 70, 4).unwrap()
        );
    }

    #[test]
    fn variants_fall_back_to_their_general_family() {
        if file_entries().is_ok_and(|f| !f.is_empty()) {
            return; // a tuning file may name either family
        }
        // (variant, its own entry on sm_90, the class it has one for, a class it has none for)
        let cases = [
            (Family::Merge, Tuning::new(256, 27, 6), 4, 8),
            (Family::CompactPairs, Tuning::new(256, 13, 4), 8, 16),
            (Family::NonTrivialRuns, Tuning::new(256, 19, 4), 8, 16),
        ];
        for (variant, own, class, other) in cases {
            let general = variant.falls_back_to().unwrap();
            let (v, g) = (
                |arch, elem| lookup(variant, arch, elem).unwrap(),
                |arch, elem| lookup(general, arch, elem).unwrap(),
            );
            assert_eq!(v(90, class), own, "{variant:?}");
            assert_ne!(v(90, class), g(90, class), "{variant:?}");
            assert_eq!(v(90, other), g(90, other), "{variant:?}");
            assert_eq!(v(80, class), g(80, class), "{variant:?}");
            assert_eq!(v(100, class), v(90, class), "{variant:?}");
        }
        assert_eq!(Family::Compact.falls_back_to(), None);
    }

    #[test]
    fn small_sorts_take_their_band() {
        if file_entries().is_ok_and(|f| !f.is_empty()) {
            return; // a tuning file holds at every size
        }
        let keys = |elem, n| lookup_for(Family::SortKeys, 90, elem, n).unwrap();
        let table = lookup(Family::SortKeys, 90, 4).unwrap();
        assert_eq!(keys(4, 1 << 20), Tuning::new(512, 17, 3));
        assert_eq!(keys(4, 1 << 21), Tuning::new(512, 17, 3));
        assert_eq!(keys(4, 5 << 19), table);
        assert_eq!(keys(4, 1 << 22), Tuning::new(512, 21, 3));
        assert_eq!(keys(4, 1 << 24), Tuning::new(512, 21, 3));
        assert_eq!(keys(4, 1 << 25), Tuning::new(512, 21, 3));
        assert_eq!(keys(4, 4096 * 512 * 21), Tuning::new(512, 21, 3));
        assert_eq!(keys(4, 4096 * 512 * 21 + 1), table);
        assert_eq!(keys(4, 1 << 26), table);
        // Other size classes, older parts and other families have no bands.
        assert_eq!(keys(8, 1 << 20), lookup(Family::SortKeys, 90, 8).unwrap());
        assert_eq!(keys(2, 1 << 20), lookup(Family::SortKeys, 90, 2).unwrap());
        let old = lookup_for(Family::SortKeys, 80, 4, 1 << 20).unwrap();
        assert_eq!(old, lookup(Family::SortKeys, 80, 4).unwrap());
        let pairs = lookup_for(Family::SortPairs, 90, 8, 1 << 20).unwrap();
        assert_eq!(pairs, lookup(Family::SortPairs, 90, 8).unwrap());
        assert_eq!(bands(Family::SortKeys, 90, 4).len(), 3);
        assert!(bands(Family::SortPairs, 90, 8).is_empty());
    }

    #[test]
    fn narrow_elements_fall_back_to_the_four_byte_class() {
        // Sub-word sort keys have an sm_90 entry of their own...
        assert_eq!(
            lookup(Family::SortKeys, 90, 2).unwrap(),
            Tuning::new(256, 17, 4)
        );
        assert_ne!(
            lookup(Family::SortKeys, 90, 1).unwrap(),
            lookup(Family::SortKeys, 90, 4).unwrap()
        );
        // ...but not on older parts, nor for reduce: there they take the 4-byte class's.
        assert_eq!(
            lookup(Family::SortKeys, 80, 2).unwrap(),
            lookup(Family::SortKeys, 80, 4).unwrap()
        );
        assert_eq!(
            lookup(Family::Reduce, 90, 1).unwrap(),
            lookup(Family::Reduce, 90, 4).unwrap()
        );
    }

    #[test]
    fn big_elements_get_smaller_tiles() {
        let t = lookup(Family::Scan, 90, 64).unwrap();
        assert!(t.nv() * 64 <= MAX_TILE_BYTES);
        assert_eq!(t.vt % 2, 1);
        // Radix tiles shrink by one key a thread: the most that fits in 96 KiB.
        let pairs = |size| lookup(Family::RadixPairs, 90, size).unwrap();
        assert_eq!(pairs(12), Tuning::new(512, 16, 1));
        assert_eq!(pairs(16), Tuning::new(512, 12, 1));
        assert_eq!(pairs(16).nv() * 16, MAX_RADIX_TILE_BYTES);
    }

    #[test]
    fn tuning_file_parses_and_rejects_garbage() {
        let v = parse_tuning_file("# c\nscan 90 4 128 11 4 100\n").unwrap();
        assert_eq!(
            v[0].tuning,
            Tuning {
                nt: 128,
                vt: 11,
                occ: 4,
                backoff_ns: 100
            }
        );
        assert!(parse_tuning_file("scan 90 4 100 11 4\n").is_err());
        assert!(parse_tuning_file("sort 90 4 128 11 4\n").is_err());
    }

    #[test]
    fn tuning_file_versions() {
        // With the header, without it (read as version 1), with comments before it.
        let v = parse_tuning_file("mgpu-tuning 1\nscan 90 4 128 11 4\n").unwrap();
        assert_eq!(v[0].tuning, Tuning::new(128, 11, 4));
        assert_eq!(v[0].family, Family::Scan);
        let v = parse_tuning_file("# written by hand\nmgpu-tuning 1 # header\n").unwrap();
        assert!(v.is_empty());
        assert_eq!(
            parse_tuning_file("sort_keys 90 4 256 23 6\n")
                .unwrap()
                .len(),
            1
        );
        // Another version is rejected, and says which one this library reads.
        let e = parse_tuning_file("mgpu-tuning 2\nscan 90 4 128 11 4\n")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("version 2") && e.contains("mgpu-tuning 1"),
            "{e}"
        );
        assert!(parse_tuning_file("mgpu-tuning x\n").is_err());
        assert!(parse_tuning_file("mgpu-tuning 1 2\n").is_err());
        // The header comes first.
        assert!(parse_tuning_file("scan 90 4 128 11 4\nmgpu-tuning 1\n").is_err());
    }

    #[test]
    fn entries_round_trip_through_the_file_format() {
        let mut t = Tuning::new(256, 23, 6);
        let line = format_entry(Family::SortKeys, 90, 4, &t);
        let v = parse_tuning_file(&format!("{FILE_MAGIC} {FILE_VERSION}\n{line}\n")).unwrap();
        assert_eq!(
            (v[0].family, v[0].arch, v[0].size_class),
            (Family::SortKeys, 90, 4)
        );
        assert_eq!(v[0].tuning, t);
        t.backoff_ns = 100;
        let v = parse_tuning_file(&format_entry(Family::Scan, 80, 4, &t)).unwrap();
        assert_eq!(v[0].tuning, t);
        for f in [
            Family::Reduce,
            Family::Scan,
            Family::SortKeys,
            Family::SortPairs,
            Family::Merge,
            Family::Compact,
            Family::CompactPairs,
            Family::NonTrivialRuns,
            Family::ReduceByKey,
            Family::SegReduce,
            Family::SegReduceLong,
            Family::Spmv,
            Family::RadixKeys,
            Family::RadixPairs,
            Family::RadixSegments,
            Family::RadixSegmentPairs,
        ] {
            assert_eq!(Family::from_name(f.name()), Some(f));
        }
        assert_eq!(
            (size_class(1), size_class(4), size_class(8), size_class(12)),
            (2, 4, 8, 16)
        );
    }

    #[test]
    fn the_source_display_names_the_file() {
        assert_eq!(TuningSource::BuiltIn.to_string(), "built-in tables");
        assert!(TuningSource::BuiltIn.path().is_none());
        let s = TuningSource::Env(PathBuf::from("/tmp/t.txt"));
        assert_eq!(s.to_string(), "/tmp/t.txt (MGPU_TUNING)");
        assert_eq!(s.path(), Some(Path::new("/tmp/t.txt")));
    }
}
