// intrinsics.cuh: the lowest layer. Word-wise shuffles for any element type, raw copies, and the
// memory-model accesses (relaxed / acquire / release, L2-coherent loads) the look-back needs.
// Device code includes no toolkit headers: NVRTC compiles it with nothing but this text.

typedef unsigned long long u64;
typedef long long i64;

#define MGPU_FULL_MASK 0xffffffffu
#define MGPU_WARP 32
#define MGPU_NV (MGPU_NT * MGPU_VT)
#define MGPU_WARPS (MGPU_NT / MGPU_WARP)

// Elements per 16-byte vector, or 1 where the element size does not divide 16.
#define MGPU_VEC ((16 % sizeof(T) == 0) ? (16 / (int)sizeof(T)) : 1)

template <typename U>
__device__ __forceinline__ U bit_cast_to(const void* p) {
  U u;
  memcpy(&u, p, sizeof(U));
  return u;
}

// Shuffles move 32-bit words, so any trivially copyable element (a user struct too) goes word by word.
enum ShflKind { SHFL_DOWN, SHFL_UP, SHFL_IDX };
template <ShflKind KIND, typename X>
__device__ __forceinline__ X shfl_words(X x, int arg) {
  constexpr int W = (sizeof(X) + 3) / 4;
  unsigned w[W];
  memcpy(w, &x, sizeof(X));
#pragma unroll
  for (int i = 0; i < W; ++i) {
    if constexpr (KIND == SHFL_DOWN) w[i] = __shfl_down_sync(MGPU_FULL_MASK, w[i], arg);
    else if constexpr (KIND == SHFL_UP) w[i] = __shfl_up_sync(MGPU_FULL_MASK, w[i], arg);
    else w[i] = __shfl_sync(MGPU_FULL_MASK, w[i], arg);
  }
  memcpy(&x, w, sizeof(X));
  return x;
}
template <typename X>
__device__ __forceinline__ X shfl_down(X x, int offset) { return shfl_words<SHFL_DOWN>(x, offset); }
template <typename X>
__device__ __forceinline__ X shfl_up(X x, int offset) { return shfl_words<SHFL_UP>(x, offset); }
template <typename X>
__device__ __forceinline__ X shfl_idx(X x, int lane) { return shfl_words<SHFL_IDX>(x, lane); }

// ---- Memory-model accesses for inter-CTA communication (look-back) ----
__device__ __forceinline__ void store_relaxed_u64(u64* p, u64 v) {
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ u64 load_relaxed_u64(const u64* p) {
  u64 v;
  asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
// 16 bytes (16-byte aligned) in one single-copy-atomic access (PTX .b128, sm_70+, PTX ISA 8.3):
// `lo` is bytes 0..8, `hi` bytes 8..16.
__device__ __forceinline__ void store_relaxed_b128(u64* p, u64 lo, u64 hi) {
  asm volatile(
      "{\n .reg .b128 t;\n mov.b128 t, {%1, %2};\n st.relaxed.gpu.global.b128 [%0], t;\n}"
      ::"l"(p), "l"(lo), "l"(hi) : "memory");
}
__device__ __forceinline__ void load_relaxed_b128(const u64* p, u64& lo, u64& hi) {
  asm volatile(
      "{\n .reg .b128 t;\n ld.relaxed.gpu.global.b128 t, [%2];\n mov.b128 {%0, %1}, t;\n}"
      : "=l"(lo), "=l"(hi) : "l"(p) : "memory");
}
// The tag of a value too wide to pack (published beside it) through the compiler's builtins, which
// address generically; the packed words above, read in the look-back's spin, keep `.global`.
__device__ __forceinline__ void store_release_u32(unsigned* p, unsigned v) {
  __nv_atomic_store_n(p, v, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
}
__device__ __forceinline__ unsigned load_acquire_u32(unsigned* p) {
  return __nv_atomic_load_n(p, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE);
}

// An element read through L2 (bypassing a possibly stale L1 line), a word at a time.
template <typename X>
__device__ __forceinline__ X load_l2(const X* p) {
  constexpr int W = sizeof(X) / 4;
  X x;
  if constexpr (sizeof(X) % 4 == 0) {
    unsigned w[W];
#pragma unroll
    for (int i = 0; i < W; ++i) w[i] = __ldcg(reinterpret_cast<const unsigned*>(p) + i);
    memcpy(&x, w, sizeof(X));
  } else {
    unsigned char b[sizeof(X)];
#pragma unroll
    for (int i = 0; i < (int)sizeof(X); ++i)
      b[i] = (unsigned char)__ldcg(reinterpret_cast<const signed char*>(p) + i);
    memcpy(&x, b, sizeof(X));
  }
  return x;
}

// ---- Asynchronous global -> shared copies (sm_80+): no registers hold the data in flight ----
// One element of 4, 8 or 16 bytes (both addresses aligned to its size).
template <int BYTES>
__device__ __forceinline__ void cp_async(void* shared, const void* global) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  unsigned s = (unsigned)__cvta_generic_to_shared(shared);
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(global) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(s), "l"(global), "n"(BYTES)
                 : "memory");
}
// An L2 cache policy under which lines go first (data read once, so that lines read again, such as
// an SpMV's vector, stay), for cp_async_16_evict_first.
__device__ __forceinline__ u64 l2_evict_first_policy() {
  u64 policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
// A 16-byte cp.async under an L2 cache `policy` (l2_evict_first_policy).
__device__ __forceinline__ void cp_async_16_evict_first(void* shared, const void* global,
                                                        u64 policy) {
  unsigned s = (unsigned)__cvta_generic_to_shared(shared);
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(s),
               "l"(global), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
// Waits until at most N of this thread's committed groups are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}

// A hint that `bytes` from `p` will be read soon: one bulk prefetch into L2 (sm_90) of the
// whole 16-byte units inside the range, nothing outside it.
__device__ __forceinline__ void prefetch_l2(const void* p, u64 bytes) {
#if __CUDA_ARCH__ >= 900
  u64 at = __cvta_generic_to_global(p);
  u64 begin = (at + 15) & ~15ull, end = (at + bytes) & ~15ull;
  if (end > begin)
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(begin),
                 "r"((unsigned)(end - begin))
                 : "memory");
#endif
}

// Programmatic dependent launch (sm_90 on; Gpu::launch_dependent). A kernel launched so may start
// while the kernel before it on the stream still runs: it waits here for that kernel's end and
// memory before it reads or writes anything another kernel touches. A plain launch returns at once.
__device__ __forceinline__ void grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// Lets the kernel queued next (if launched with Gpu::launch_dependent) bring its CTAs up now,
// rather than when this kernel's last CTA ends.
__device__ __forceinline__ void grid_launch_dependents() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
