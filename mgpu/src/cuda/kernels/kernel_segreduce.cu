// kernel_segreduce.cu: segmented reduction over CSR segment descriptors (Modern GPU's
// SegReduceCsr, IndirectReduceCsr and SpmvCsr), single pass on the look-back of lookback.cuh.
//
// Load balance (the seed's first principle): a tile is NV consecutive items of the position space,
// whatever the segments; segment i covers positions [offsets[i], offsets[i + 1]) (the last one up
// to `count`). The partition kernel finds each tile's first segment (the first one starting at or
// after its first position: lower bound), so a tile reads exactly the offsets of the segments
// that start in it.
//
// In the tile (the seed's CSR -> COO flattening): the tile's offsets are loaded cooperatively and
// each marks its start position in shared memory with the index of the first segment starting
// there (a head). Empty segments start where the next one starts: they take the identity then and
// there, so empty segments need no CSR2 prepass, and a tile with many of them only reads more
// offsets. Each thread then reduces its VT items sequentially, resetting at heads; a segment ends
// at the item before a head (its output slot: the head's first segment - 1) or at the last item.
//
// Across threads and tiles the partial reductions are carried by the (runs, value) segmented scan
// of segscan.cuh: the CTA scan gives each thread its carry-in, and the tile's aggregate goes
// through the decoupled look-back (instead of the seed's carry-out array, spine scan and fix-up
// kernel: one launch, and the carry-in is known before anything is written). Operand order is kept,
// so the operator need not commute. Segment results are staged in shared memory (in the order the
// segments end) and stored cooperatively.
//
// Defines from the host (cuda/segreduce.rs):
//   MGPU_SPMV      0: the items are the values (`Input`, mapped or plain); 1: vec[cols[m]] (unary
//                  SpMV); 2: Mul(matrix[m], vec[cols[m]]) (binary SpMV)
//   MGPU_INDIRECT  segment i's items are at m = sources[i] + (position - offsets[i]), not m =
//                  position
//   T the value type, O the offset type (unsigned or u64), C the scan's count type, Op (and Mul).
// A module compiles the kernels whose MGPU_WANT_<kernel> the host defines (jit.rs): the tiles
// (mgpu_segreduce) apart from the helpers (partition, validate), which need no value type.

typedef RunPairOf<C, T> SegPair;
typedef RunPlusOf<C, T, Op> SegPlus;

// No segment starts at this position.
#define MGPU_NO_SEGMENT (~(O)0)

struct SegReduceStorage {
  // The tile's items in strided order (the matrix values for binary SpMV); once every thread holds
  // its items, the segment results in the order the segments end.
  __align__(16) T values[MGPU_NV];
#if MGPU_SPMV && !MGPU_INDIRECT
  __align__(16) unsigned cols[MGPU_NV];
#endif
  // Per position: the first segment that starts there, or MGPU_NO_SEGMENT (aligned: the marks
  // are cleared 16 bytes a store).
  __align__(16) O heads[MGPU_NV];
#if MGPU_INDIRECT
  // Per position: the last segment that starts there (the non-empty one), or MGPU_NO_SEGMENT.
  __align__(16) O last_heads[MGPU_NV];
  CtaScanStorageOf<O> seg_scan;
#endif
  // A chunk of the tile's offsets, with the offsets before and after it; then the output slots
  // of the staged results.
  O offsets[MGPU_NV + 2];
  CtaScanStorageOf<SegPair> scan;
  SegPair tile_prefix;
  O last_slot;   // the slot of the segment ending at the tile's last item, if one does
  int end_last;  // a segment ends at the tile's last item
  i64 tile_id;
  u64 seg_begin, seg_end;  // the segments starting in tile `tile_id`
};

struct SegMax {
  __device__ __forceinline__ O operator()(O a, O b) const { return a > b ? a : b; }
};

// Sets every mark of a tile to MGPU_NO_SEGMENT (all bits set).
__device__ __forceinline__ void clear_marks(O* marks, int tid) {
  constexpr int CHUNKS = MGPU_NV * (int)sizeof(O) / 16;
  for (int c = tid; c < CHUNKS; c += MGPU_NT)
    reinterpret_cast<uint4*>(marks)[c] = make_uint4(~0u, ~0u, ~0u, ~0u);
}

// The item at data index m.
__device__ __forceinline__ T load_item(Input values, const T* matrix, const unsigned* cols,
                                       const T* vec, u64 m) {
#if MGPU_SPMV == 0
  return values[m];
#elif MGPU_SPMV == 1
  return __ldg(vec + __ldg(cols + m));
#else
  return Mul()(__ldg(matrix + m), __ldg(vec + __ldg(cols + m)));
#endif
}

#ifdef MGPU_WANT_mgpu_segreduce
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_segreduce(Input values, const T* matrix, const unsigned* cols, const T* vec,
                   const O* offsets, const O* sources, const O* limits, u64 num_segments,
                   u64 count, T* dest, T identity, u64* tickets, u64 first_ticket,
                   TileStatusOf<SegPair> status) {
  __shared__ SegReduceStorage storage;
  int tid = threadIdx.x;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  const SegPair none{0, identity};
  // A tile's segment range is read ahead: while warp 0 runs a tile's look-back, a thread of the
  // last warp (idle until then) draws the CTA's next ticket and loads that tile's limits, so a
  // tile starts with its offsets' addresses known (one memory latency before its items, not
  // two). Drawing ahead cannot deadlock: the tile a CTA holds waits for no later tile.
  const int PREFETCH = MGPU_NT - MGPU_WARP;
  if (tid == 0) {
    i64 first = (i64)(atomicAdd(tickets, 1ull) - first_ticket);
    storage.tile_id = first;
    if ((u64)first < num_tiles) {
      storage.seg_begin = limits[first];
      storage.seg_end = (u64)first + 1 == num_tiles ? num_segments : (u64)limits[first + 1];
    }
  }
  __syncthreads();
  for (i64 tile = storage.tile_id; (u64)tile < num_tiles; tile = storage.tile_id) {
    u64 base = (u64)tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    bool last_tile = (u64)tile + 1 == num_tiles;
    // The segments starting in the tile (the last tile also takes the empty ones at `count`).
    u64 seg_begin = storage.seg_begin;
    u64 seg_end = storage.seg_end;
#if !MGPU_INDIRECT
#if MGPU_SPMV == 0
    load_tile_to_shared_async(values, base, n, values.vector_ok_at(base), identity,
                              storage.values, tid);
#else
    load_plain_to_shared(cols + base, n, storage.cols, tid);
#if MGPU_SPMV == 2
    load_plain_to_shared(matrix + base, n, storage.values, tid);
#endif
#endif
#endif
    // Clear the marks, 16 bytes a store (NV is a multiple of 32, so NV * sizeof(O) of 16).
    clear_marks(storage.heads, tid);
#if MGPU_INDIRECT
    clear_marks(storage.last_heads, tid);
#endif
    if (tid == 0) {
      // Whether a segment ends at the tile's last item, and which: at the input's end, the last
      // non-empty segment (the last tile's limit is the first segment starting at `count`);
      // else the one before a segment starting right after the tile.
      if (last_tile) {
        storage.end_last = 1;
        storage.last_slot = limits[num_tiles] - 1;
      } else {
        storage.end_last = seg_end < num_segments && (u64)offsets[seg_end] == base + n;
        storage.last_slot = (O)(seg_end - 1);
      }
    }

    // Mark the heads, a chunk of at most NV offsets at a time (more only with empty segments).
    // At least one round: its barriers also order the clearing and the tile loads before use.
    u64 chunk = seg_begin;
    do {
      int m = (int)min((u64)MGPU_NV, seg_end - chunk);
      // Loops, not unrolled: a tile inside a long segment has no offsets to read or mark.
      for (int k = tid; k < m; k += MGPU_NT) storage.offsets[k + 1] = offsets[chunk + k];
      if (tid == 0) storage.offsets[0] = chunk > 0 ? offsets[chunk - 1] : MGPU_NO_SEGMENT;
      if (tid == MGPU_NT - 1)
        storage.offsets[m + 1] = chunk + m < num_segments ? offsets[chunk + m] : (O)count;
      __syncthreads();
      for (int k = tid; k < m; k += MGPU_NT) {
        O start = storage.offsets[k + 1];
        O j = (O)(chunk + k);
        bool first_here = j == 0 || storage.offsets[k] != start;
        if (first_here && (u64)start < base + n) storage.heads[start - base] = j;
        if (storage.offsets[k + 2] == start) {
          dest[j] = identity;  // an empty segment
        }
#if MGPU_INDIRECT
        else {
          storage.last_heads[start - base] = j;
        }
#endif
      }
      __syncthreads();
      chunk += MGPU_NV;
    } while (chunk < seg_end);

    // Each thread's VT consecutive items (VT odd: conflict-free), heads and segment ends.
    int first = tid * MGPU_VT;
    T v[MGPU_VT];
    // Bit i: a segment starts at item i (heads) / ends there (ends: one starts at item i + 1, or
    // item i is the tile's last and a segment ends with it).
    unsigned heads = 0;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if (first + i < n && storage.heads[first + i] != MGPU_NO_SEGMENT) heads |= 1u << i;
    unsigned ends = heads >> 1;
    {
      int p = first + MGPU_VT - 1;  // the thread's last item
      if (p + 1 < n) ends |= (unsigned)(storage.heads[p + 1] != MGPU_NO_SEGMENT) << (MGPU_VT - 1);
      else if (first < n && storage.end_last)
        ends |= 1u << (n - 1 - first);  // the tile's last item is this thread's
    }
#if MGPU_INDIRECT
    // The segment of each item: the last non-empty segment starting at or before it (before the
    // tile: the one before the tile's first segment), found by a max-scan of the threads' last
    // heads. Items of segment s are at sources[s] + (position - offsets[s]).
    O seg_plus_one = 0;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      O h = storage.last_heads[first + i];
      if (first + i < n && h != MGPU_NO_SEGMENT) seg_plus_one = h + 1;
    }
    O seg_total;
    O seg_prefix = cta_scan_exclusive(seg_plus_one, SegMax(), (O)0, seg_total, storage.seg_scan);
    // (Tile 0's first item is a head: no segment before it is read.)
    O seg = seg_prefix ? seg_prefix - 1 : (O)(seg_begin - 1);
    u64 delta = seg != MGPU_NO_SEGMENT ? (u64)sources[seg] - (u64)offsets[seg] : 0;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      v[i] = identity;
      if (first + i < n) {
        O h = storage.last_heads[first + i];
        if (h != MGPU_NO_SEGMENT) {
          seg = h;
          delta = (u64)sources[seg] - (u64)offsets[seg];
        }
        v[i] = load_item(values, matrix, cols, vec, base + first + i + delta);
      }
    }
#else
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
#if MGPU_SPMV == 0
      v[i] = storage.values[first + i];
#else
      v[i] = identity;
      if (first + i < n) {
        T x = __ldg(vec + storage.cols[first + i]);
#if MGPU_SPMV == 1
        v[i] = x;
#else
        v[i] = Mul()(storage.values[first + i], x);
#endif
      }
#endif
    }
#endif
    SegPair thread_total = none;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if (first + i < n) thread_total = SegPlus()(thread_total, SegPair{(C)((heads >> i) & 1u), v[i]});
    SegPair tile_total;
    SegPair thread_prefix = cta_scan_exclusive(thread_total, SegPlus(), none, tile_total,
                                               storage.scan);
    i64 next = 0;
    u64 next_begin = 0, next_end = 0;
    if (tid == PREFETCH) {
      next = (i64)(atomicAdd(tickets, 1ull) - first_ticket);
      if ((u64)next < num_tiles) {
        next_begin = limits[next];
        next_end = (u64)next + 1 == num_tiles ? num_segments : (u64)limits[next + 1];
      }
    }
    if (tid < MGPU_WARP) {
      SegPair prefix = warp_lookback(status, tile, tile_total, SegPlus(), none);
      if (tid == 0) storage.tile_prefix = prefix;
    }
    // Before the barrier every thread has read its items: the staging may overwrite them (the
    // marks stay). The segment ending at item i is the one before the first segment starting at
    // item i + 1; the k-th end of the tile follows the heads at positions 1..k.
    int tile_head0 = storage.heads[0] != MGPU_NO_SEGMENT;
    __syncthreads();
    SegPair x = SegPlus()(storage.tile_prefix, thread_prefix);
    int k = (int)thread_prefix.runs - tile_head0 + (int)(heads & 1u);
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int p = first + i;
      if (p < n) x = SegPlus()(x, SegPair{(C)((heads >> i) & 1u), v[i]});
      if ((ends >> i) & 1u) {
        storage.values[k] = x.value;
        storage.offsets[k] = p + 1 < n ? storage.heads[p + 1] - 1 : storage.last_slot;
        ++k;
      }
    }
    __syncthreads();
    int tile_ends = (int)tile_total.runs - tile_head0 + storage.end_last;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j < tile_ends) dest[storage.offsets[j]] = storage.values[j];
    }
    if (tid == PREFETCH) {
      storage.tile_id = next;
      storage.seg_begin = next_begin;
      storage.seg_end = next_end;
    }
    __syncthreads();  // the tile's storage is free and the next ticket visible
  }
}

#endif

#ifdef MGPU_WANT_mgpu_segreduce_partition
// Tile limits: limits[t] = the first segment starting at or after tile t's first position, for
// t < num_tiles, and limits[num_tiles] = the first segment starting at `count` (the empty ones
// there follow the last non-empty segment). One thread per limit, a binary search each.
extern "C" __global__ void mgpu_segreduce_partition(const O* offsets, u64 num_segments,
                                                    u64 count, u64 num_tiles, O* limits) {
  u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (t > num_tiles) return;
  u64 position = t < num_tiles ? t * MGPU_NV : count;
  u64 lo = 0, hi = num_segments;
  while (lo < hi) {
    u64 mid = (lo + hi) / 2;
    if ((u64)offsets[mid] < position) lo = mid + 1;
    else hi = mid;
  }
  limits[t] = (O)lo;
}

#endif

#ifdef MGPU_WANT_mgpu_segreduce_validate
// Validation: the first bad index of each check to bad[0..3] (atomicMin; the host sets them to
// ~0): bad[0] offsets (offsets[0] == 0; non-decreasing, or increasing when `strict`; at most
// `count`, or less when `strict`), bad[1] sources (segment i's items lie in [0, data_len)),
// bad[2] columns (< vec_len).
extern "C" __global__ void mgpu_segreduce_validate(const O* offsets, u64 num_segments, u64 count,
                                                   int strict, const O* sources, u64 data_len,
                                                   const unsigned* cols, u64 num_cols,
                                                   u64 vec_len, u64* bad) {
  u64 stride = (u64)gridDim.x * blockDim.x;
  u64 end = max(num_segments, num_cols);
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride) {
    if (i < num_segments) {
      u64 start = offsets[i];
      bool ok;
      if (i == 0) ok = start == 0;
      else if (strict) ok = start > (u64)offsets[i - 1];
      else ok = start >= (u64)offsets[i - 1];
      ok = ok && (strict ? start < count : start <= count);
      if (!ok) atomicMin(bad, i);
      if (sources && ok) {
        u64 next = i + 1 < num_segments ? (u64)offsets[i + 1] : count;
        u64 len = next > start ? next - start : 0;
        u64 source = sources[i];
        if (source > data_len || len > data_len - source) atomicMin(bad + 1, i);
      }
    }
    if (i < num_cols && cols[i] >= vec_len) atomicMin(bad + 2, i);
  }
}
#endif
