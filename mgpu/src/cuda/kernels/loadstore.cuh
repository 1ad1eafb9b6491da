// loadstore.cuh: moving a tile between global memory and shared memory or registers.
// Full tiles move as 16-byte vectors when the element size divides 16 and the pointer is aligned;
// the last (partial) tile moves element by element, padded with the identity.

// Global -> shared, a tile of `count` (<= NV) elements in strided order, padded to NV with `fill`.
// `vec_ok`: the pointer is 16-byte aligned and the element size divides 16.
__device__ __forceinline__ void load_tile_to_shared(const T* src, int count, bool vec_ok, T fill,
                                                    T* shared, int tid) {
  constexpr int VEC = MGPU_VEC;
  if (VEC > 1 && vec_ok && count == MGPU_NV) {
    constexpr int CHUNKS = MGPU_NV / VEC;
    constexpr int PER_THREAD = (CHUNKS + MGPU_NT - 1) / MGPU_NT;
    uint4 r[PER_THREAD];
    // All loads issued before any store to shared: VT/VEC independent 16-byte loads in flight.
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      int c = i * MGPU_NT + tid;
      // Streaming (evict-first): each input byte is read once.
      if (CHUNKS % MGPU_NT == 0 || c < CHUNKS) r[i] = __ldcs(reinterpret_cast<const uint4*>(src) + c);
    }
#pragma unroll
    for (int i = 0; i < PER_THREAD; ++i) {
      int c = i * MGPU_NT + tid;
      if (CHUNKS % MGPU_NT == 0 || c < CHUNKS) reinterpret_cast<uint4*>(shared)[c] = r[i];
    }
  } else {
    // Batches of up to 16 loads in flight before their stores: enough parallelism for unaligned
    // inputs, few enough registers for tunings with a tight register budget.
    constexpr int BATCH = MGPU_VT < 16 ? MGPU_VT : 16;
#pragma unroll
    for (int b = 0; b < MGPU_VT; b += BATCH) {
      T r[BATCH];
#pragma unroll
      for (int i = 0; i < BATCH; ++i) {
        int j = (b + i) * MGPU_NT + tid;
        r[i] = b + i < MGPU_VT && j < count ? src[j] : fill;
      }
#pragma unroll
      for (int i = 0; i < BATCH; ++i)
        if (b + i < MGPU_VT) shared[(b + i) * MGPU_NT + tid] = r[i];
    }
  }
}

// Global -> shared like load_tile_to_shared, but full aligned tiles are copied with cp.async, so
// no register holds the tile in flight. The copy is complete for the calling thread on return; a
// barrier is still needed before other threads read it.
__device__ __forceinline__ void load_tile_to_shared_async(const T* src, int count, bool vec_ok,
                                                          T fill, T* shared, int tid) {
  constexpr int VEC = MGPU_VEC;
  if (VEC > 1 && vec_ok && count == MGPU_NV) {
    constexpr int CHUNKS = MGPU_NV / VEC;
#pragma unroll
    for (int i = 0; i < (CHUNKS + MGPU_NT - 1) / MGPU_NT; ++i) {
      int c = i * MGPU_NT + tid;
      if (CHUNKS % MGPU_NT == 0 || c < CHUNKS)
        cp_async<16>(reinterpret_cast<uint4*>(shared) + c, reinterpret_cast<const uint4*>(src) + c);
    }
    cp_async_wait_all();
  } else {
    load_tile_to_shared(src, count, vec_ok, fill, shared, tid);
  }
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
