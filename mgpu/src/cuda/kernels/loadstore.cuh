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
    T r[MGPU_VT];
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      r[i] = j < count ? src[j] : fill;
    }
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) shared[i * MGPU_NT + tid] = r[i];
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

// Shared (strided tile) -> registers in thread order: thread tid gets elements tid*VT .. tid*VT+VT-1.
// VT odd keeps 4-byte elements free of bank conflicts.
__device__ __forceinline__ void shared_to_thread_order(const T* shared, int tid, T (&x)[MGPU_VT]) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) x[i] = shared[tid * MGPU_VT + i];
}

__device__ __forceinline__ void thread_order_to_shared(const T (&x)[MGPU_VT], int tid, T* shared) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) shared[tid * MGPU_VT + i] = x[i];
}
