// Experiment (not part of the library): can a scan keep its waiting tiles in L2 instead of shared
// memory? A look-back tile holds its 20 KB in shared memory for the whole look-back wait (~12 us of
// a ~20 us tile lifetime), and shared memory is what bounds the tiles in flight. A tile could instead
// be read once to publish its aggregate, dropped, and read again once its prefix is known: the
// second read must then hit in L2, or the scan moves 1.5x the bytes of a copy.
// Here CTA t reads tile t (and sums it: the aggregate), then reads tile t - D again and writes it
// out, so every tile is re-read D tiles (D x 20 KB of input, as much output) after its first read.
// D of one wave of resident CTAs (132 SMs x 11) is ~29 MB: about what the look-back wait spans.
// Cache policies: first read evict_last (kept), second read evict_first, stores streaming.
// The time against memcpy says whether the re-reads hit.
//   nvcc -O3 -arch=sm_90 -std=c++17 l2_reread.cu -o l2_reread && ./l2_reread
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
typedef unsigned long long u64;

// A 16-byte load with an L2 eviction policy (HINTS), else a streaming load.
template <bool HINTS>
__device__ __forceinline__ int4 load(const int4* p, u64 policy) {
  int4 v;
  if (HINTS)
    asm volatile("ld.global.L1::no_allocate.L2::cache_hint.v4.s32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
  else
    v = __ldcs(p);
  return v;
}

// NT threads, C int4 chunks per thread: a tile of NT * C * 4 ints.
template <int NT, int C, bool HINTS>
__global__ void __launch_bounds__(NT) reread(const int4* in, int4* out, long long tiles, long long lag,
                                             int* sums) {
  u64 keep = 0, drop = 0;
  if (HINTS) {
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(keep));
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(drop));
  }
  long long t = blockIdx.x;
  int4 v[C];
  if (t < tiles) {  // first read: the aggregate
    const int4* src = in + t * NT * C;
    int s = 0;
#pragma unroll
    for (int i = 0; i < C; ++i) v[i] = load<HINTS>(src + i * NT + threadIdx.x, keep);
#pragma unroll
    for (int i = 0; i < C; ++i) s += v[i].x + v[i].y + v[i].z + v[i].w;
    for (int o = 16; o; o /= 2) s += __shfl_xor_sync(~0u, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(sums + t, s);
  }
  long long u = t - lag;  // second read, `lag` tiles back (CTAs past the end re-read the last ones)
  if (u >= 0) {
    const int4* again = in + u * NT * C;
    int4* dst = out + u * NT * C;
#pragma unroll
    for (int i = 0; i < C; ++i) v[i] = load<HINTS>(again + i * NT + threadIdx.x, drop);
#pragma unroll
    for (int i = 0; i < C; ++i) __stcs(dst + i * NT + threadIdx.x, v[i]);
  }
}

template <typename F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> v;
  for (int i = 0; i < 20; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); v.push_back(ms); }
  std::sort(v.begin(), v.end()); return v[10];
}

template <int NT, int C, bool HINTS>
void run(const int* in, int* out, int* sums, size_t n, long long lag, float mc) {
  long long tiles = n / (NT * C * 4);
  long long grid = tiles + lag;  // CTAs past the end only re-read
  cudaMemset(out, 0xff, n * 4);
  float ms = timeit([&] {
    reread<NT, C, HINTS><<<grid, NT>>>((const int4*)in, (int4*)out, tiles, lag, sums);
  });
  std::vector<int> h(n);
  cudaMemcpy(h.data(), out, n * 4, cudaMemcpyDeviceToHost);
  size_t bad = 0;
  for (size_t i = 0; i < (size_t)tiles * NT * C * 4; ++i) bad += h[i] != (int)(i & 0xffff);
  printf("lag %6lld tiles (%5.1f MB) hints=%d %dx%d: %.4f ms (%.3fx memcpy) bad=%zu %s\n", lag,
         lag * NT * C * 16 / 1e6, (int)HINTS, NT, C * 4, ms, mc / ms, bad, cudaGetErrorString(cudaGetLastError()));
}

int main() {
  size_t n = 1ull << 28;
  int *in, *out, *sums;
  cudaMalloc(&in, n * 4); cudaMalloc(&out, n * 4); cudaMalloc(&sums, n / 64);
  std::vector<int> h(n);
  for (size_t i = 0; i < n; ++i) h[i] = (int)(i & 0xffff);
  cudaMemcpy(in, h.data(), n * 4, cudaMemcpyHostToDevice);
  float mc = timeit([&] { cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); });
  printf("memcpy %.4f ms\n", mc);
  for (int round = 0; round < 2; ++round) {
    for (long long lag : {0ll, 256ll, 730ll, 1460ll, 2920ll, 5840ll}) {
      run<128, 10, true>(in, out, sums, n, lag, mc);
      run<128, 10, false>(in, out, sums, n, lag, mc);
    }
  }
}
