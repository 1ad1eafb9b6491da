// Experiment (not part of the library): what the scan's tile structure costs without the scan.
// A copy of 2^28 i32 through shared memory (cp.async in, streaming stores out), then with atomic tile
// ids, then with each tile waiting for its predecessor to have loaded before it stores (the least a
// look-back scan must wait), and a plain register copy; all against cudaMemcpy of the same bytes.
//   nvcc -O3 -arch=sm_90 -std=c++17 tile_copy.cu -o tile_copy && ./tile_copy
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
typedef unsigned long long u64;
__device__ __forceinline__ void cp16(void* s, const void* g) {
  unsigned a = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(g) : "memory");
}
// mode 0: blockIdx tile; 1: atomic tile id; 2: atomic + wait on predecessor flag (chain)
template <int NT, int VT, int MODE>
__global__ void __launch_bounds__(NT) copy_smem(const int* in, int* out, u64* ctr, unsigned* flags) {
  __shared__ __align__(16) int tile[NT * VT];
  __shared__ long long ts;
  long long t;
  if (MODE == 0) t = blockIdx.x;
  else { if (threadIdx.x == 0) ts = atomicAdd(ctr, 1ull); __syncthreads(); t = ts; }
  const int4* src = (const int4*)(in + t * NT * VT);
  int4* dst = (int4*)(out + t * NT * VT);
  constexpr int CH = NT * VT / 4;
  #pragma unroll
  for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) cp16((int4*)tile + c, src + c); }
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  if (MODE == 2 && threadIdx.x == 0) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(flags + t), "r"(1u) : "memory");
    if (t > 0) { unsigned f; do { asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(f) : "l"(flags + t - 1) : "memory"); } while (!f); }
  }
  if (MODE == 2) __syncthreads();
  #pragma unroll
  for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) __stcs(dst + c, ((int4*)tile)[c]); }
}
template <int NT, int VT>
__global__ void __launch_bounds__(NT) copy_regs(const int* in, int* out) {
  constexpr int CH = NT * VT / 4, PT = (CH + NT - 1) / NT;
  const int4* src = (const int4*)(in + (u64)blockIdx.x * NT * VT);
  int4* dst = (int4*)(out + (u64)blockIdx.x * NT * VT);
  int4 r[PT];
  #pragma unroll
  for (int i = 0; i < PT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) r[i] = __ldcs(src + c); }
  #pragma unroll
  for (int i = 0; i < PT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) __stcs(dst + c, r[i]); }
}
template <typename F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> v;
  for (int i = 0; i < 20; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); v.push_back(ms); }
  std::sort(v.begin(), v.end()); return v[10];
}
template <int NT, int VT> void run(const char* name, int* in, int* out, u64* ctr, unsigned* flags, size_t n, float mc) {
  size_t tiles = n / (NT * VT);
  auto z = [&] { cudaMemsetAsync(ctr, 0, 8); cudaMemsetAsync(flags, 0, tiles * 4); };
  float t0 = timeit([&] { copy_smem<NT, VT, 0><<<tiles, NT>>>(in, out, ctr, flags); });
  float t1 = timeit([&] { z(); copy_smem<NT, VT, 1><<<tiles, NT>>>(in, out, ctr, flags); });
  float t2 = timeit([&] { z(); copy_smem<NT, VT, 2><<<tiles, NT>>>(in, out, ctr, flags); });
  float t3 = timeit([&] { copy_regs<NT, VT><<<tiles, NT>>>(in, out); });
  float tz = timeit([&] { z(); });
  printf("%s %dx%d: smem %.4f (%.3f)  +atomic %.4f (%.3f)  +chain %.4f (%.3f)  regs %.4f (%.3f)  memsets %.4f  %s\n", name, NT, VT,
         t0, mc / t0, t1, mc / t1, t2, mc / t2, t3, mc / t3, tz, cudaGetErrorString(cudaGetLastError()));
}
int main() {
  size_t n = 1ull << 28;
  int *in, *out; u64* ctr; unsigned* flags;
  cudaMalloc(&in, n * 4 + 65536); cudaMalloc(&out, n * 4 + 65536); cudaMalloc(&ctr, 8); cudaMalloc(&flags, n / 64);
  cudaMemset(in, 1, n * 4);
  float mc = timeit([&] { cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); });
  printf("memcpy %.4f ms\n", mc);
  run<128, 40>("i32", in, out, ctr, flags, n, mc);
  run<128, 32>("i32", in, out, ctr, flags, n, mc);
  run<128, 16>("i32", in, out, ctr, flags, n, mc);
  run<256, 16>("i32", in, out, ctr, flags, n, mc);
  run<256, 32>("i32", in, out, ctr, flags, n, mc);
  run<512, 8>("i32", in, out, ctr, flags, n, mc);
  run<128, 64>("i32", in, out, ctr, flags, n, mc);
}
