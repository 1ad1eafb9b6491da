// Experiment (not part of the library): does a cluster-level look-back make the single-pass scan
// faster? A thread-block cluster of C CTAs scans C consecutive tiles; the CTAs share their tile
// aggregates through distributed shared memory (DSMEM), and only the cluster's rank 0 takes part in
// the decoupled look-back, over one status word per cluster. The look-back chain then has C times
// fewer links, each covering C tiles. C = 1 is the library's kernel (no cluster instructions).
// i32 exclusive sum, packed 64-bit status, atomic cluster ids, cp.async tile in shared memory. Every
// output element is checked against a CPU scan.
//   nvcc -O3 -arch=sm_90 -std=c++17 cluster_scan.cu -o cluster_scan && ./cluster_scan
#include <algorithm>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
typedef unsigned long long u64;
__device__ __forceinline__ void cp16(void* s, const void* g) {
  unsigned a = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(g) : "memory");
}
__device__ __forceinline__ void st_relaxed(u64* p, u64 v) { asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory"); }
__device__ __forceinline__ u64 ld_relaxed(const u64* p) { u64 v; asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }
__device__ __forceinline__ unsigned cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_sync() { cluster_arrive(); cluster_wait(); }
// The shared::cluster address of `p` (a __shared__ variable) in the CTA of rank `rank`.
__device__ __forceinline__ unsigned dsmem(const void* p, unsigned rank) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p), r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ int ld_dsmem(unsigned a) { int v; asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(a) : "memory"); return v; }
__device__ __forceinline__ long long ld_dsmem64(unsigned a) { long long v; asm volatile("ld.shared::cluster.u64 %0, [%1];" : "=l"(v) : "r"(a) : "memory"); return v; }
__device__ __forceinline__ void st_dsmem(unsigned a, int v) { asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory"); }

// Warp-wide decoupled look-back for entry `t` with aggregate `agg` (the library's warp_lookback for
// a packed i32 status). Returns the exclusive prefix in every lane.
__device__ __forceinline__ int lookback(u64* status, long long t, int agg) {
  int lane = threadIdx.x & 31;
  if (t == 0) { if (lane == 0) st_relaxed(status, (2ull << 32) | (unsigned)agg); return 0; }
  if (lane == 0) st_relaxed(status + t, (1ull << 32) | (unsigned)agg);
  int prefix = 0;
  for (long long end = t;; end -= 32) {
    long long p = end - 32 + lane;
    u64 w;
    while (true) {
      w = p >= 0 ? ld_relaxed(status + p) : (2ull << 32);
      if (!__any_sync(~0u, (w >> 32) == 0)) break;
    }
    unsigned pm = __ballot_sync(~0u, (w >> 32) == 2);
    int first = pm ? 31 - __clz(pm) : 0;
    int v = lane >= first ? (int)(unsigned)w : 0;
#pragma unroll
    for (int o = 16; o; o /= 2) v += __shfl_xor_sync(~0u, v, o);
    prefix += v;
    if (pm) break;
  }
  if (lane == 0) st_relaxed(status + t, (2ull << 32) | (unsigned)(prefix + agg));
  return prefix;
}

template <int NT, int VT, int C>
__global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(NT) cscan(const int* in, int* out, u64* ctr, u64* status) {
  __shared__ __align__(16) int tile[NT * VT];
  __shared__ long long s_id;     // rank 0's: the cluster's id
  __shared__ int s_agg[C];       // rank 0's: the aggregates of the cluster's tiles
  __shared__ int s_prefix;       // rank 0's: the cluster's exclusive prefix
  __shared__ int s_mine;         // this tile's exclusive prefix
  __shared__ int wt[NT / 32];
  unsigned rank = C > 1 ? cluster_rank() : 0;
  if (rank == 0 && threadIdx.x == 0) s_id = atomicAdd(ctr, 1ull);
  if constexpr (C > 1) cluster_sync(); else __syncthreads();
  long long cid = C > 1 ? ld_dsmem64(dsmem(&s_id, 0)) : s_id;
  long long t = cid * C + rank;
  const int4* src = (const int4*)(in + t * NT * VT);
  int4* dst = (int4*)(out + t * NT * VT);
  constexpr int CH = NT * VT / 4;
#pragma unroll
  for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) cp16((int4*)tile + c, src + c); }
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  int* mine = tile + threadIdx.x * VT;
  int s = 0;
#pragma unroll
  for (int i = 0; i < VT; ++i) s += mine[i];
  int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  int x = s;
#pragma unroll
  for (int o = 1; o < 32; o *= 2) { int y = __shfl_up_sync(~0u, x, o); if (lane >= o) x += y; }
  if (lane == 31) wt[warp] = x;
  __syncthreads();
  int wp = 0, agg = 0;
#pragma unroll
  for (int w = 0; w < NT / 32; ++w) { if (w < warp) wp += wt[w]; agg += wt[w]; }
  int excl = wp + x - s;
  if constexpr (C > 1) {
    if (threadIdx.x == 0) st_dsmem(dsmem(&s_agg[rank], 0), agg);
    cluster_sync();
    if (rank == 0 && warp == 0) {
      int a = lane < C ? s_agg[lane] : 0;
#pragma unroll
      for (int o = 16; o; o /= 2) a += __shfl_xor_sync(~0u, a, o);
      int prefix = lookback(status, cid, a);
      if (lane == 0) s_prefix = prefix;
    }
    cluster_sync();
    if (threadIdx.x == 0) {
      int p = ld_dsmem(dsmem(&s_prefix, 0));
      for (unsigned r = 0; r < rank; ++r) p += ld_dsmem(dsmem(&s_agg[r], 0));
      s_mine = p;
    }
    cluster_arrive();  // this CTA is done reading rank 0's shared memory
    __syncthreads();
  } else {
    if (warp == 0) {
      int prefix = lookback(status, t, agg);
      if (lane == 0) s_mine = prefix;
    }
    __syncthreads();
  }
  int run = s_mine + excl;
#pragma unroll
  for (int i = 0; i < VT; ++i) { int v = mine[i]; mine[i] = run; run += v; }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) __stcs(dst + c, ((int4*)tile)[c]); }
  if constexpr (C > 1) cluster_wait();  // rank 0 stays until every CTA has read its shared memory
}

template <typename F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> v;
  for (int i = 0; i < 21; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); v.push_back(ms); }
  std::sort(v.begin(), v.end()); return v[10];
}

std::vector<int> h_in, h_ref;
template <int NT, int VT, int C> void run(const int* in, int* out, u64* ctr, u64* status) {
  size_t tiles = h_in.size() / (NT * VT) / C * C, n = tiles * NT * VT;
  float mc = timeit([&] { cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); });
  cudaMemset(out, 0xff, n * 4);
  float ms = timeit([&] { cudaMemsetAsync(ctr, 0, 8); cudaMemsetAsync(status, 0, tiles / C * 8); cscan<NT, VT, C><<<tiles, NT>>>(in, out, ctr, status); });
  cudaError_t err = cudaGetLastError();
  std::vector<int> h(n);
  cudaMemcpy(h.data(), out, n * 4, cudaMemcpyDeviceToHost);
  size_t bad = 0; for (size_t i = 0; i < n; ++i) bad += h[i] != h_ref[i];
  int clusters = 0;
  cudaLaunchConfig_t cfg = {}; cfg.gridDim = dim3(tiles); cfg.blockDim = dim3(NT);
  cudaLaunchAttribute attr; attr.id = cudaLaunchAttributeClusterDimension; attr.val.clusterDim.x = C; attr.val.clusterDim.y = 1; attr.val.clusterDim.z = 1;
  cfg.attrs = &attr; cfg.numAttrs = 1;
  cudaOccupancyMaxActiveClusters(&clusters, cscan<NT, VT, C>, &cfg);
  printf("%3dx%-2d C=%-2d %.4f ms  memcpy %.4f ms  %.3fx memcpy  %d clusters resident (%.1f CTAs/SM)  bad=%zu %s\n", NT, VT, C, ms, mc, mc / ms, clusters,
         clusters * C / 132.0, bad, cudaGetErrorString(err));
}

int main() {
  size_t n = 1ull << 28;
  h_in.resize(n); h_ref.resize(n);
  int acc = 0;
  for (size_t i = 0; i < n; ++i) { h_in[i] = (int)((i * 2654435761ull) >> 13) & 15; h_ref[i] = acc; acc += h_in[i]; }
  int *in, *out; u64 *ctr, *status;
  cudaMalloc(&in, n * 4); cudaMalloc(&out, n * 4); cudaMalloc(&ctr, 8); cudaMalloc(&status, n / 16);
  cudaMemcpy(in, h_in.data(), n * 4, cudaMemcpyHostToDevice);
  for (int rep = 0; rep < 2; ++rep) {
    run<128, 39, 1>(in, out, ctr, status);
    run<128, 39, 2>(in, out, ctr, status);
    run<128, 39, 4>(in, out, ctr, status);
    run<128, 39, 8>(in, out, ctr, status);
    run<128, 23, 4>(in, out, ctr, status);
    run<128, 23, 8>(in, out, ctr, status);
    run<256, 15, 4>(in, out, ctr, status);
    run<256, 15, 8>(in, out, ctr, status);
    run<256, 23, 4>(in, out, ctr, status);
  }
}
