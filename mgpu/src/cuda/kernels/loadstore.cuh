// loadstore.cuh: moving a tile between global memory and shared memory or registers.
// Full tiles move as 16-byte vectors when the element size divides 16 and the pointer is aligned;
// the last (partial) tile moves element by element, padded with the identity.

// Input elements per 16-byte vector, or 1 where their size does not divide 16.
#define MGPU_VEC_IN ((16 % sizeof(In) == 0) ? (16 / (int)sizeof(In)) : 1)

// A primitive's input, 8 bytes passed by value: `In`s in memory, turned into `T`s by `MapIn` as they
// are read (the identity when MGPU_LOAD_PLAIN), or a counting sequence generated from the bits of
// its start value (MGPU_COUNTING). No intermediate buffer either way.
struct Input {
#if MGPU_COUNTING
  u64 start_bits;
  __device__ __forceinline__ T operator[](u64 i) const {
    T start;
    memcpy(&start, &start_bits, sizeof(T));
    return Count()(start, i);
  }
  __device__ __forceinline__ bool vector_ok() const { return false; }
  __device__ __forceinline__ bool vector_ok_at(u64) const { return false; }
#else
  const In* ptr;
  __device__ __forceinline__ T operator[](u64 i) const { return MapIn()(ptr[i]); }
  // Whole 16-byte vectors of `In` can be read from an aligned pointer (views may not be).
  __device__ __forceinline__ bool vector_ok() const { return vector_ok_at(0); }
  // The same for the tile starting `base` elements in.
  __device__ __forceinline__ bool vector_ok_at(u64 base) const {
    return MGPU_VEC_IN > 1 && ((size_t)(ptr + base) & 15) == 0;
  }
#endif
};

// Stores 16 bytes of `In`s, loaded as chunk `c` of a tile, to the tile in shared memory as `T`s.
__device__ __forceinline__ void store_chunk_mapped(const uint4& r, int c, T* shared) {
#if MGPU_LOAD_PLAIN
  reinterpret_cast<uint4*>(shared)[c] = r;
#else
  constexpr int VEC = MGPU_VEC_IN;
  In x[VEC];
  memcpy(x, &r, 16);
  if constexpr (sizeof(T) == sizeof(In)) {
    // Same size: the mapped chunk is still one 16-byte store.
    T y[VEC];
#pragma unroll
    for (int j = 0; j < VEC; ++j) y[j] = MapIn()(x[j]);
    memcpy(reinterpret_cast<uint4*>(shared) + c, y, 16);
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j) shared[c * VEC + j] = MapIn()(x[j]);
  }
#endif
}

// Global -> shared, the tile of `count` (<= NV) elements at `base` in strided order, padded to NV
// with `fill`. `vec_ok`: the input's `vector_ok()`.
__device__ __forceinline__ void load_tile_to_shared(Input in, u64 base, int count, bool vec_ok,
                                                    T fill, T* shared, int tid) {
#if !MGPU_COUNTING
  constexpr int VEC = MGPU_VEC_IN;
  if (VEC > 1 && vec_ok && count == MGPU_NV) {
    const In* src = in.ptr + base;
    constexpr int CHUNKS = MGPU_NV / VEC;
    constexpr int PER_THREAD = (CHUNKS + MGPU_NT - 1) / MGPU_NT;
    // Batches of up to 4 independent 16-byte loads in flight before their stores to shared: all of
    // a thread's loads for the reduce tunings, and few enough registers for a scan's.
    constexpr int MAX_BATCH = 4;
    constexpr int BATCH = PER_THREAD < MAX_BATCH ? PER_THREAD : MAX_BATCH;
#pragma unroll
    for (int b = 0; b < PER_THREAD; b += BATCH) {
      uint4 r[BATCH];
#pragma unroll
      for (int i = 0; i < BATCH; ++i) {
        int c = (b + i) * MGPU_NT + tid;
        // Streaming (evict-first): each input byte is read once.
        if (b + i < PER_THREAD && (CHUNKS % MGPU_NT == 0 || c < CHUNKS))
          r[i] = __ldcs(reinterpret_cast<const uint4*>(src) + c);
      }
#pragma unroll
      for (int i = 0; i < BATCH; ++i) {
        int c = (b + i) * MGPU_NT + tid;
        if (b + i < PER_THREAD && (CHUNKS % MGPU_NT == 0 || c < CHUNKS))
          store_chunk_mapped(r[i], c, shared);
      }
    }
    return;
  }
#endif
  {
    // Batches of up to 16 loads in flight before their stores: enough parallelism for unaligned
    // inputs, few enough registers for tunings with a tight register budget. Batched like the
    // vector path, kept apart: its loads, guards and fill differ in every line.
    constexpr int BATCH = MGPU_VT < 16 ? MGPU_VT : 16;
#pragma unroll
    for (int b = 0; b < MGPU_VT; b += BATCH) {
      T r[BATCH];
#pragma unroll
      for (int i = 0; i < BATCH; ++i) {
        int j = (b + i) * MGPU_NT + tid;
        r[i] = b + i < MGPU_VT && j < count ? in[base + j] : fill;
      }
#pragma unroll
      for (int i = 0; i < BATCH; ++i)
        if (b + i < MGPU_VT) shared[(b + i) * MGPU_NT + tid] = r[i];
    }
  }
}

// A full tile of NV elements at a 16-byte aligned `src` to shared memory in 16-byte cp.async copies;
// with WAIT, complete for the calling thread on return.
template <typename X, bool WAIT, bool EVICT_FIRST = false>
__device__ __forceinline__ void full_tile_to_shared_async(const X* src, X* shared, int tid) {
  constexpr int CHUNKS = MGPU_NV * (int)sizeof(X) / 16;
  // One policy for the tile's copies (created at each, it spilled an SpMV tile under NVRTC 13.0).
  const u64 policy = EVICT_FIRST ? l2_evict_first_policy() : 0;
#pragma unroll
  for (int i = 0; i < (CHUNKS + MGPU_NT - 1) / MGPU_NT; ++i) {
    int c = i * MGPU_NT + tid;
    if (CHUNKS % MGPU_NT == 0 || c < CHUNKS) {
      uint4* to = reinterpret_cast<uint4*>(shared) + c;
      const uint4* from = reinterpret_cast<const uint4*>(src) + c;
      if (EVICT_FIRST) cp_async_16_evict_first(to, from, policy);
      else cp_async<16>(to, from);
    }
  }
  if (WAIT) cp_async_wait_all();
}

// Global -> shared like load_tile_to_shared, but full aligned tiles of plain input are copied with
// cp.async, so no register holds the tile in flight. The copy is complete for the calling thread on
// return (with WAIT = false, once it calls cp_async_wait_all: other loads can be issued while the
// copy is in flight); a barrier is still needed before other threads read it.
template <bool WAIT = true>
__device__ __forceinline__ void load_tile_to_shared_async(Input in, u64 base, int count,
                                                          bool vec_ok, T fill, T* shared, int tid) {
#if MGPU_LOAD_PLAIN
  constexpr int VEC = MGPU_VEC;
  if (VEC > 1 && vec_ok && count == MGPU_NV) {
    full_tile_to_shared_async<T, WAIT>(in.ptr + base, shared, tid);
    return;
  }
#endif
  load_tile_to_shared(in, base, count, vec_ok, fill, shared, tid);
}

// Shared -> global, the first `count` elements of the tile.
__device__ __forceinline__ void store_tile_from_shared(const T* shared, int count, bool vec_ok,
                                                       T* dest, int tid) {
  constexpr int VEC = MGPU_VEC;
  if (VEC > 1 && vec_ok && count == MGPU_NV) {
    constexpr int CHUNKS = MGPU_NV / VEC;
#pragma unroll
    for (int i = 0; i < (CHUNKS + MGPU_NT - 1) / MGPU_NT; ++i) {
      int c = i * MGPU_NT + tid;
      if (CHUNKS % MGPU_NT == 0 || c < CHUNKS)
        __stcs(reinterpret_cast<uint4*>(dest) + c, reinterpret_cast<const uint4*>(shared)[c]);
    }
  } else {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j < count) dest[j] = shared[j];
    }
  }
}

// Global -> shared for a plain array of any type: the tile of `n` elements at `src` in strided
// order (a compaction's values, a sparse matrix's values and columns). WAIT as for
// load_tile_to_shared_async.
template <typename X, bool WAIT = true, bool EVICT_FIRST = false>
__device__ __forceinline__ void load_plain_to_shared(const X* src, int n, X* shared, int tid) {
  constexpr int VEC = (16 % sizeof(X) == 0) ? 16 / (int)sizeof(X) : 1;
  if (VEC > 1 && n == MGPU_NV && ((size_t)src & 15) == 0) {
    full_tile_to_shared_async<X, WAIT, EVICT_FIRST>(src, shared, tid);
    return;
  }
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + tid;
    if (j < n) shared[j] = src[j];
  }
}
