// kernel_reduce.cu: device-wide reduce in one launch. CTA c reduces a contiguous range of tiles
// (contiguous, so that non-commutative operators see their operands in order) into one partial;
// the grid's last CTA waits for the others' partials and reduces them in CTA order. A second
// launch over the partials cost a launch and an allocation per call: most of the time of a reduce
// of under 2^22 items. The input may be mapped or counting (`Input`, loadstore.cuh): the map is
// applied in registers, as each value is loaded.

struct ReduceStorage {
  union {
    __align__(16) T tile[MGPU_NV];
    CtaReduceStorageOf<T> reduce;
  };
};

// The CTA's total goes to `out[blockIdx.x]` when `status` has no slots (one CTA, or
// reduce-then-scan's upsweep, which wants every partial). Else each CTA but the last publishes
// it in its status slot, tagged with the launch's epoch (lookback.cuh: one relaxed store for up to
// 12 bytes), and the last CTA folds them, waiting for each tag, with its own total last, and
// writes the result to `out[0]`: after the last range, one store and one poll, where a fence and
// a ticket before reading the partials were three round trips. Nothing waits on the last CTA, so
// it may spin whatever the grid. `streaming`: the input is well past L2
// (reduce.rs), read with evict-first loads; smaller inputs are read with ordinary loads, which
// leave them in L2 for the next kernel (a reduce of 2^23 i32 read with evict-first loads ran at
// 0.61x CUB).
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_reduce(Input in, u64 count, u64 tiles_per_cta, T* out, T identity,
                TileStatusOf<T> status, int streaming) {
  __shared__ ReduceStorage storage;
  Op op;
  int tid = threadIdx.x;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  u64 tile_begin = (u64)blockIdx.x * tiles_per_cta;
  u64 tile_end = min(tile_begin + tiles_per_cta, num_tiles);
  // Whole 16-byte vectors per thread per tile, and an aligned pointer.
  constexpr bool VEC_TILES = MGPU_VEC_IN > 1 && MGPU_VT % MGPU_VEC_IN == 0;
  bool vec_ok = VEC_TILES && in.vector_ok();

  T acc = identity;
#if MGPU_COMMUTATIVE
  // Any order will do: stream 16-byte vectors straight into registers, no shared memory.
  u64 tile = tile_begin;
#if !MGPU_COUNTING
  if (vec_ok) {
    constexpr int PER_THREAD = VEC_TILES ? MGPU_VT / MGPU_VEC_IN : 1;
    u64 full_end = min(tile_end, count / MGPU_NV);
    MapIn map;
    for (; tile < full_end; ++tile) {
      const uint4* src = reinterpret_cast<const uint4*>(in.ptr + tile * MGPU_NV);
      uint4 r[PER_THREAD];
      if (streaming) {
#pragma unroll
        for (int i = 0; i < PER_THREAD; ++i) r[i] = __ldcs(src + i * MGPU_NT + tid);
      } else {
#pragma unroll
        for (int i = 0; i < PER_THREAD; ++i) r[i] = src[i * MGPU_NT + tid];
      }
#pragma unroll
      for (int i = 0; i < PER_THREAD; ++i) {
        In v[MGPU_VEC_IN];
        memcpy(v, &r[i], 16);
#pragma unroll
        for (int j = 0; j < MGPU_VEC_IN; ++j) acc = op(acc, map(v[j]));
      }
    }
  }
#endif
  for (; tile < tile_end; ++tile) {
    u64 base = tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    T r[MGPU_VT];
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      r[i] = j < n ? in[base + j] : identity;
    }
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) acc = op(acc, r[i]);
  }
  T total = cta_reduce(acc, op, storage.reduce);
#else
  // Keep the order: transpose each tile through shared memory, reduce it, fold tile totals in order.
  T total = identity;
  for (u64 tile = tile_begin; tile < tile_end; ++tile) {
    u64 base = tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    load_tile_to_shared(in, base, n, vec_ok, identity, storage.tile, tid);
    __syncthreads();
    // Read in thread order straight from shared memory: no VT-register array to spill under a
    // tight register budget (this kernel also runs with scan's tunings, as its upsweep).
    const T* mine = storage.tile + tid * MGPU_VT;
    acc = mine[0];
#pragma unroll
    for (int i = 1; i < MGPU_VT; ++i) acc = op(acc, mine[i]);
    __syncthreads();
    total = op(total, cta_reduce(acc, op, storage.reduce));
  }
#endif
  if (!status.slots) {
    if (tid == 0) out[blockIdx.x] = total;
    return;
  }
  const unsigned last = gridDim.x - 1;
  if (blockIdx.x != last) {
    if (tid == 0) status.publish(blockIdx.x, MGPU_STATUS_A, total);
    return;
  }
  // Thread t folds a contiguous run of partials, so that the CTA order is kept; a batch's loads
  // are all in flight before the first is waited on.
  constexpr int BATCH = sizeof(T) <= 8 ? 8 : 2;
  unsigned per = (gridDim.x + MGPU_NT - 1) / MGPU_NT;
  unsigned begin = min(tid * per, gridDim.x), end = min(begin + per, gridDim.x);
  T folded = identity;
  for (unsigned c0 = begin; c0 < end; c0 += BATCH) {
    T v[BATCH];
    unsigned s[BATCH];
#pragma unroll
    for (int k = 0; k < BATCH; ++k) {
      const unsigned c = c0 + k;
      s[k] = MGPU_STATUS_A;
      v[k] = total;  // the last CTA's own
      if (c < end && c != last) status.load(c, s[k], v[k]);
    }
#pragma unroll
    for (int k = 0; k < BATCH; ++k) {
      const unsigned c = c0 + k;
      if (c >= end) break;
      status.settle(c, s[k], v[k]);
      folded = op(folded, v[k]);
    }
  }
  total = cta_reduce(folded, op, storage.reduce);
  if (tid == 0) out[0] = total;
}
