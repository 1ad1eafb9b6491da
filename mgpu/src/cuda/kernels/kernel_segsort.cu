// kernel_segsort.cu: sorting within the segments of CSR offsets (O), on kernel_mergesort.cu's
// tiles and merges. Segments of at most SEG_SHORT keys are packed whole into tiles of at most NV
// keys and sorted there by (segment, key); longer ones are cut into tiles from their own start,
// sorted, and merged within the segment, one pass per level, until one run covers the segment.
//   mgpu_segsort_tiles     the packed tiles' limits, and whether each holds a short segment
//   mgpu_segsort_short     one packed tile per CTA, sorted in place
//   mgpu_segsort_rank      the same where no segment is longer than SEG_RANK
//   mgpu_segsort_classify  the long segments' tiles (a table), the huge segments and those the
//                          radix sort takes in one tile (lists)
//   mgpu_segsort_blocks    one tile of a long segment per CTA, sorted
//   mgpu_segsort_partition merge path split of each long tile's start in a pass
//   mgpu_segsort_merge     one output tile of a long segment's merge pass per CTA
//   mgpu_topk_*            top-k: the first keys of sorted chunks or segments, values gathered

// A packed tile starts at a multiple of SEG_STEP, moved back to the start of the segment there
// when that segment is short: so it holds at most SEG_STEP + SEG_SHORT = NV keys, and a short
// segment is never cut.
#define SEG_SHORT (MGPU_NV / 4)
#define SEG_STEP (MGPU_NV - SEG_SHORT)
// The flag in PackedTile::segment of a tile that holds a non-empty short segment.
#define SEG_ACTIVE (1ull << 63)

// The segment that holds position `pos` (< count): the last one that starts at or before it.
__device__ __forceinline__ u64 segment_of(const O* offsets, u64 num_segments, u64 pos) {
  u64 lo = 1, hi = num_segments;  // offsets[0] == 0 <= pos
  while (lo < hi) {
    u64 mid = (lo + hi) / 2;
    if ((u64)offsets[mid] <= pos)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo - 1;
}

__device__ __forceinline__ u64 segment_end(const O* offsets, u64 num_segments, u64 count, u64 s) {
  return s + 1 < num_segments ? (u64)offsets[s + 1] : count;
}

// Where packed tile k starts (k * SEG_STEP, or the start of the short segment there).
__device__ __forceinline__ u64 packed_start(const O* offsets, u64 num_segments, u64 count, u64 k,
                                            u64& segment) {
  u64 pos = k * SEG_STEP;
  if (pos >= count) {
    segment = num_segments;
    return count;
  }
  segment = segment_of(offsets, num_segments, pos);
  u64 start = offsets[segment];
  return segment_end(offsets, num_segments, count, segment) - start <= SEG_SHORT ? start : pos;
}

struct PackedTile {
  u64 begin;    // the tile's first position
  u64 segment;  // the segment that holds it, | SEG_ACTIVE where the tile has work
};

#ifdef MGPU_WANT_mgpu_segsort_tiles
extern "C" __global__ void mgpu_segsort_tiles(const O* offsets, u64 num_segments, u64 count,
                                              u64 num_tiles, PackedTile* tiles) {
  u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (k > num_tiles) return;
  u64 segment, next_segment;
  u64 begin = packed_start(offsets, num_segments, count, k, segment);
  u64 end = packed_start(offsets, num_segments, count, k + 1, next_segment);
  // Work: a short segment of two keys or more. Long segments' keys are sorted by the long path,
  // so a tile of only long pieces is skipped. The search stops after a few segments (a tile with
  // that many is worth sorting anyway).
  bool active = false;
  u64 s = segment;
  for (int i = 0; i < 8 && !active && s < num_segments && (u64)offsets[s] < end; ++i, ++s) {
    u64 len = segment_end(offsets, num_segments, count, s) - (u64)offsets[s];
    active = len >= 2 && len <= SEG_SHORT;
  }
  if (s < num_segments && (u64)offsets[s] < end && !active) active = true;
  tiles[k] = {begin, segment | (active ? SEG_ACTIVE : 0)};
}
#endif

// A key and its segment within the tile: ordered by segment, then by the key. The segment
// number of a 1- or 2-byte key takes 2 bytes (a tile holds fewer than 2^16 keys), so that the
// pair fits one word: wider, the short kernel spilled at 80 registers.
template <int KEY_BYTES>
struct SegNumberOf {
  typedef unsigned type;
};
template <>
struct SegNumberOf<1> {
  typedef unsigned short type;
};
template <>
struct SegNumberOf<2> {
  typedef unsigned short type;
};
static_assert(sizeof(K) > 2 || MGPU_NV < 65536, "2-byte segment numbers");
struct SegKey {
  typename SegNumberOf<sizeof(K)>::type segment;
  K key;
};
struct SegComp {
  Comp comp;
  __device__ __forceinline__ bool operator()(const SegKey& a, const SegKey& b) {
    return a.segment != b.segment ? a.segment < b.segment : comp(a.key, b.key);
  }
};

struct HeadCount {
  __device__ __forceinline__ int operator()(int a, int b) const { return a + b; }
};

struct SegStorage {
  union {
    __align__(16) K raw[MGPU_SLOTS];  // the keys as loaded
    __align__(16) SegKey keys[MGPU_SLOTS];
  };
#if MGPU_VALUES
  __align__(16) V values[MGPU_SLOTS];
#endif
  unsigned head_bits[MGPU_NV / 32 + 1];  // bit j set where a segment starts at tile position j
  CtaScanStorageOf<int> scan;
};

// Tiles whose segments all hold at most SEG_RANK keys skip the tile sort: each key goes straight
// to its rank within its segment, at most SEG_RANK compares, against the tile sort's log2(NV)
// rounds with a barrier each. (Set by the host, which picks the kernel.)
#define SEG_RANK MGPU_SEG_RANK

__device__ __forceinline__ int head_at(const unsigned* bits, int j) {
  return (bits[j >> 5] >> (j & 31)) & 1;
}

// The start of the segment that holds tile position j (position 0 starts one), or a position
// more than SEG_RANK before j where that segment is longer.
__device__ __forceinline__ int segment_start(const unsigned* bits, int j) {
  int w = j >> 5;
  unsigned m = bits[w] & (0xffffffffu >> (31 - (j & 31)));
  while (!m) {
    if (j - w * 32 > SEG_RANK) return j - SEG_RANK - 1;
    m = bits[--w];
  }
  return w * 32 + 31 - __clz(m);
}

// The end of the segment that holds tile position j (the next start, or n), or a position more
// than SEG_RANK after j where that segment is longer. No bit at or past n is set.
__device__ __forceinline__ int segment_stop(const unsigned* bits, int j, int n) {
  int p = j + 1;
  int w = p >> 5, last = (n - 1) >> 5;
  unsigned m = bits[w] & (0xffffffffu << (p & 31));
  while (!m && w < last) {
    if (w * 32 - j > SEG_RANK) return j + SEG_RANK + 1;
    m = bits[++w];
  }
  return m ? min(n, w * 32 + __ffs(m) - 1) : n;
}

// A packed tile's keys (and values) to shared memory, and its segments' starts to the head bits;
// `n`, the tile's size, set. Each segment's offsets are read with its end, so a thread's loads are
// independent of each other (no load waits on the one before it) and the segment's length is
// known. Returns whether some short segment of the tile holds more than SEG_RANK keys (long
// segments' pieces are sorted by the long path, whatever happens to them here). Ends with a
// barrier.
template <typename Storage>
__device__ __forceinline__ bool load_packed(Storage& s, const K* keys, const V* values,
                                            const O* offsets, u64 num_segments, u64 count,
                                            PackedTile tile, PackedTile next, int& n) {
  int tid = threadIdx.x;
  u64 base = tile.begin;
  n = (int)(next.begin - base);
  u64 first = tile.segment & ~SEG_ACTIVE;
  // The segment that holds the next tile's first position, which may end in this tile.
  u64 last = min(next.segment & ~SEG_ACTIVE, num_segments - 1);
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + tid;
    if (j < n) {
      s.raw[j] = keys[base + j];
#if MGPU_VALUES
      s.values[j] = values[base + j];
#endif
    }
  }
  for (int w = tid; w < MGPU_NV / 32 + 1; w += MGPU_NT) s.head_bits[w] = w == 0;
  __syncthreads();
  bool too_long = false;
#pragma unroll 4
  for (u64 i = first + tid; i <= last; i += MGPU_NT) {
    u64 b = offsets[i], e = segment_end(offsets, num_segments, count, i);
    if (b > base && b < base + n && e > b) {
      int j = (int)(b - base);
      atomicOr(&s.head_bits[j >> 5], 1u << (j & 31));
    }
    too_long |= e - b > SEG_RANK && e - b <= SEG_SHORT;
  }
  return __syncthreads_or(too_long);
}

// Segments of at most SEG_RANK keys: each key's rank within its segment counts the keys before
// it in the order, ties in input order (`below(j, t)`: key t comes before key j); a key already
// in its place is not written (a tile of one-key segments writes nothing). The loop over a
// thread's keys stays rolled: its trip counts vary.
template <typename Storage, typename Below>
__device__ __forceinline__ void rank_packed(const Storage& s, K* keys, V* values, u64 base, int n,
                                            Below below) {
#pragma unroll 1
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + threadIdx.x;
    if (j >= n) continue;
    int start = segment_start(s.head_bits, j), end = segment_stop(s.head_bits, j, n);
    if (end - start > SEG_RANK) continue;  // a long segment's piece
    // One loop over the whole segment, so that lanes of one segment share the trip count (two
    // loops, before and after j, ran both at the longest lane's count); four compares a trip.
    int rank = start, t = start;
    for (; t + 4 <= end; t += 4)
      rank += below(j, t) + below(j, t + 1) + below(j, t + 2) + below(j, t + 3);
    for (; t < end; ++t) rank += below(j, t);
    if (rank != j) {
      keys[base + rank] = s.raw[j];
#if MGPU_VALUES
      values[base + rank] = s.values[j];
#endif
    }
  }
}

// `below` under the comparator: the keys before j come first unless after key j, those after j
// only if before it.
template <typename Storage>
__device__ __forceinline__ void rank_packed(const Storage& s, K* keys, V* values, u64 base,
                                            int n) {
  Comp comp;
  rank_packed(s, keys, values, base, n, [&](int j, int t) {
    const K key = s.raw[j], x = s.raw[t];
    return (int)(t < j ? !comp(key, x) : comp(x, key));
  });
}

// Geometries whose segments all hold at most SEG_RANK keys: every tile ranks. Without the tile
// sort's storage and registers, twice the CTAs fit on an SM to hide the loads' latency.
#ifdef MGPU_WANT_mgpu_segsort_rank
struct RankStorage {
  __align__(16) K raw[MGPU_NV];
#if MGPU_VALUES
  __align__(16) V values[MGPU_NV];
#endif
#ifdef MGPU_RANK_ORDER
  unsigned numbers[MGPU_NV];  // MGPU_RANK_ORDER of each key
#endif
  unsigned head_bits[MGPU_NV / 32 + 1];
};
extern "C" __global__ void __launch_bounds__(MGPU_NT, 2 * MGPU_OCC)
    mgpu_segsort_rank(K* keys, V* values, const O* offsets, u64 num_segments, u64 count,
                      const PackedTile* tiles) {
  __shared__ RankStorage s;
  PackedTile tile = tiles[blockIdx.x];
  if (!(tile.segment & SEG_ACTIVE)) return;
  int n;
  load_packed(s, keys, values, offsets, num_segments, count, tile, tiles[blockIdx.x + 1], n);
#ifdef MGPU_RANK_ORDER
  // A built-in order of keys of at most 4 bytes (the host defines MGPU_RANK_ORDER(x), the
  // order's number of x, only then): key t comes before key j where (number, position) of t is
  // below that of j, one 64-bit compare with no comparator call and no choice by position.
  static_assert(sizeof(K) <= 4, "a key's number and its position in 64 bits");
  for (int j = threadIdx.x; j < n; j += MGPU_NT)
    s.numbers[j] = (unsigned)(MGPU_RANK_ORDER(s.raw[j]));
  __syncthreads();
  rank_packed(s, keys, values, tile.begin, n, [&](int j, int t) {
    const u64 key = (u64)s.numbers[j] << 32 | (unsigned)j;
    return (int)(((u64)s.numbers[t] << 32 | (unsigned)t) < key);
  });
#else
  rank_packed(s, keys, values, tile.begin, n);
#endif
}
#endif

#ifdef MGPU_WANT_mgpu_segsort_short
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_segsort_short(K* keys, V* values, const O* offsets, u64 num_segments, u64 count,
                       const PackedTile* tiles) {
  __shared__ SegStorage s;
  int tid = threadIdx.x;
  PackedTile tile = tiles[blockIdx.x];
  if (!(tile.segment & SEG_ACTIVE)) return;
  u64 base = tile.begin;
  int n;
  if (!load_packed(s, keys, values, offsets, num_segments, count, tile, tiles[blockIdx.x + 1],
                   n)) {
    rank_packed(s, keys, values, base, n);
    return;
  }

  // Each thread's VT consecutive keys, numbered by segment: heads before the thread's keys (a
  // CTA scan of the per-thread counts), then along them.
  int at = tid * MGPU_VT;
  int heads = 0;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) heads += at + i < n && at + i > 0 ? head_at(s.head_bits, at + i) : 0;
  int total;
  int segment = cta_scan_exclusive(heads, HeadCount(), 0, total, s.scan);
  SegKey k[MGPU_VT];
  V v[MGPU_VT];
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = min(at + i, MGPU_NV - 1);
    segment += j < n && j > 0 ? head_at(s.head_bits, j) : 0;
    k[i].segment = segment;
    k[i].key = s.raw[j];
#if MGPU_VALUES
    v[i] = s.values[j];
#endif
  }
  sort_tile(s, k, v, n, SegComp());

#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + tid;
    if (j < n) {
      keys[base + j] = s.keys[j].key;
#if MGPU_VALUES
      values[base + j] = s.values[j];
#endif
    }
  }
}
#endif

// ---- Long segments: cut into tiles of NV from their start, each merged within the segment ----

// One tile of a long segment: its segment, its index there and the segment's number of tiles.
struct LongTile {
  u64 segment;
  unsigned piece, pieces;
};

// The merge passes a segment of `pieces` tiles takes: ceil(log2(pieces)).
__device__ __forceinline__ int passes_of(unsigned pieces) { return pieces <= 1 ? 0 : 32 - __clz(pieces - 1); }

// summary[0]: the long tiles, summary[1]: the most passes of a segment, summary[2]: the huge
// segments, listed as (segment, begin, end) in `huge`, summary[3]: the segments of at most
// `tile_max` keys (0: none) sorted in one tile by the radix sort, listed as (begin, end) in
// `tiled`. The tables' order follows the atomics: each segment's tiles are consecutive, which is
// all the passes need.
#ifdef MGPU_WANT_mgpu_segsort_classify
extern "C" __global__ void mgpu_segsort_classify(const O* offsets, u64 num_segments, u64 count,
                                                 u64 huge_min, u64 tile_max, unsigned* summary,
                                                 LongTile* long_tiles, u64* huge, u64* tiled) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < num_segments;
       i += (u64)gridDim.x * blockDim.x) {
    u64 start = offsets[i], end = segment_end(offsets, num_segments, count, i), len = end - start;
    if (len <= SEG_SHORT) continue;
    if (len <= tile_max) {
      unsigned at = atomicAdd(&summary[3], 1u);
      tiled[2 * at] = start;
      tiled[2 * at + 1] = end;
      continue;
    }
    if (len >= huge_min) {
      unsigned at = atomicAdd(&summary[2], 1u);
      huge[3 * at] = i;
      huge[3 * at + 1] = start;
      huge[3 * at + 2] = end;
      continue;
    }
    unsigned pieces = (unsigned)((len + MGPU_NV - 1) / MGPU_NV);
    unsigned at = atomicAdd(&summary[0], pieces);
    atomicMax(&summary[1], (unsigned)passes_of(pieces));
    for (unsigned p = 0; p < pieces; ++p) long_tiles[at + p] = {i, p, pieces};
  }
}
#endif

// A long tile's place: its segment's range, and the buffers a pass reads and writes. A segment
// of P passes has its tiles sorted into the temporary when P is odd, so that pass P - 1 writes
// the caller's buffer.
struct LongPlace {
  u64 start, len;
  int passes;
};
__device__ __forceinline__ LongPlace long_place(const O* offsets, u64 num_segments, u64 count,
                                                LongTile t) {
  u64 start = offsets[t.segment];
  return {start, segment_end(offsets, num_segments, count, t.segment) - start,
          passes_of(t.pieces)};
}

#ifdef MGPU_WANT_mgpu_segsort_blocks
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_segsort_blocks(K* keys, V* values, K* temp_keys, V* temp_values, const O* offsets,
                        u64 num_segments, u64 count, const LongTile* long_tiles) {
  __shared__ SortStorage s;
  LongTile t = long_tiles[blockIdx.x];
  LongPlace p = long_place(offsets, num_segments, count, t);
  u64 base = p.start + (u64)t.piece * MGPU_NV;
  int n = (int)min((u64)MGPU_NV, p.start + p.len - base);
  bool to_temp = p.passes & 1;
  block_sort(s, keys, values, to_temp ? temp_keys : keys, to_temp ? temp_values : values, base, n,
             nullptr, 0);
}
#endif

// The runs of pass `pass` that a long tile's outputs come from, within its segment.
__device__ __forceinline__ RunPair long_runs(LongTile t, u64 len, int pass) {
  return run_pair((u64)t.piece * MGPU_NV, (u64)MGPU_NV << pass, len);
}

#ifdef MGPU_WANT_mgpu_segsort_partition
extern "C" __global__ void mgpu_segsort_partition(const K* keys, const K* temp_keys,
                                                  const O* offsets, u64 num_segments, u64 count,
                                                  const LongTile* long_tiles, u64 num_long,
                                                  int pass, u64* splits) {
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= num_long) return;
  LongTile t = long_tiles[i];
  LongPlace p = long_place(offsets, num_segments, count, t);
  if (p.passes <= pass) return;
  const K* src = ((p.passes - pass) & 1 ? temp_keys : keys) + p.start;
  RunPair r = long_runs(t, p.len, pass);
  u64 diag = (u64)t.piece * MGPU_NV - r.start;
  splits[i] = r.a0 + merge_path<u64>(src + r.a0, r.a1 - r.a0, src + r.a1, r.b1 - r.a1, diag,
                                     Comp());
}
#endif

#ifdef MGPU_WANT_mgpu_segsort_merge
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_segsort_merge(K* keys, V* values, K* temp_keys, V* temp_values, const O* offsets,
                       u64 num_segments, u64 count, const LongTile* long_tiles, int pass,
                       const u64* splits) {
  __shared__ SortStorage s;
  LongTile t = long_tiles[blockIdx.x];
  LongPlace p = long_place(offsets, num_segments, count, t);
  if (p.passes <= pass) return;
  bool from_temp = (p.passes - pass) & 1;
  const K* src_k = (from_temp ? temp_keys : keys) + p.start;
  const V* src_v = (from_temp ? temp_values : values) + p.start;
  K* dst_k = (from_temp ? keys : temp_keys) + p.start;
  V* dst_v = (from_temp ? values : temp_values) + p.start;
  RunPair r = long_runs(t, p.len, pass);
  u64 out_begin = (u64)t.piece * MGPU_NV, out_end = min(out_begin + MGPU_NV, p.len);
  u64 a_begin = splits[blockIdx.x];
  u64 b_begin = r.a1 + (out_begin - r.start) - (a_begin - r.a0);
  u64 a_end = r.a1, b_end = r.b1;
  if (out_end < r.b1) {  // not the last tile of its pair of runs: the next tile's split
    a_end = splits[blockIdx.x + 1];
    b_end = r.a1 + (out_end - r.start) - (a_end - r.a0);
  }
  merge_tile(s, src_k, src_v, a_begin, a_end, src_k, src_v, b_begin, b_end, dst_k, dst_v,
             out_begin, Comp());
}
#endif

// ---- Top-k: what each chunk or segment keeps of its sorted keys ----

// The first min(k, chunk's length) keys and positions of every chunk of `chunk` sorted keys,
// packed chunk after chunk (output o is chunk o / k's key o % k).
#ifdef MGPU_WANT_mgpu_topk_take
extern "C" __global__ void mgpu_topk_take(const K* keys, const unsigned* positions, u64 count,
                                          u64 chunk, u64 k, u64 out_count, K* out_keys,
                                          unsigned* out_positions) {
  for (u64 o = (u64)blockIdx.x * blockDim.x + threadIdx.x; o < out_count;
       o += (u64)gridDim.x * blockDim.x) {
    u64 src = o / k * chunk + o % k;
    out_keys[o] = keys[src];
    out_positions[o] = positions[src];
  }
}
#endif

// The first min(k, length) sorted keys of every segment to out_keys[segment * k ...], with their
// positions in the segment; slots past a shorter segment's length are left alone.
#ifdef MGPU_WANT_mgpu_topk_take_segments
extern "C" __global__ void mgpu_topk_take_segments(const K* keys, const unsigned* positions,
                                                   const O* offsets, u64 num_segments, u64 count,
                                                   u64 k, K* out_keys, unsigned* out_positions) {
  u64 total = num_segments * k;
  for (u64 o = (u64)blockIdx.x * blockDim.x + threadIdx.x; o < total;
       o += (u64)gridDim.x * blockDim.x) {
    u64 s = o / k, r = o % k;
    u64 start = offsets[s];
    if (r < segment_end(offsets, num_segments, count, s) - start) {
      out_keys[o] = keys[start + r];
      if (out_positions) out_positions[o] = positions[start + r] - (unsigned)start;
    }
  }
}
#endif

// positions[i] = i.
#ifdef MGPU_WANT_mgpu_topk_iota
extern "C" __global__ void mgpu_topk_iota(unsigned* positions, u64 n) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    positions[i] = (unsigned)i;
}
#endif

// out[i] = values[positions[i]].
#ifdef MGPU_WANT_mgpu_topk_gather
extern "C" __global__ void mgpu_topk_gather(const V* values, const unsigned* positions, u64 n,
                                            V* out) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    out[i] = values[positions[i]];
}
#endif
