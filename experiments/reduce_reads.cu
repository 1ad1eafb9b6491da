// Experiment (not part of the library): how should a one-launch sum read an input larger than L2
// on this GPU, against CUB's DeviceReduce::Sum in the same process? The library's kernel
// (kernel_reduce.cu) gives each CTA a contiguous range of tiles, four ranges per resident CTA,
// reads 16-byte vectors with evict-first loads, and lets the last CTA to draw a ticket fold the
// partials. Here the same structure is timed with other loads (non-coherent, plain, an L2 256-byte
// prefetch), other range counts, two tiles' loads in flight, and other shapes and occupancies.
// Every variant's sum is checked against the host's. Times are per call with events, like
// `mgpu bench`; the variants run in turns, so drift between calls touches all of them alike.
//   nvcc -O3 -arch=sm_90 -std=c++17 reduce_reads.cu -o /tmp/rr && /tmp/rr
#include <cub/cub.cuh>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>
typedef unsigned long long u64;

#define CHECK(x)                                                             \
  do {                                                                       \
    cudaError_t e = (x);                                                     \
    if (e != cudaSuccess) {                                                  \
      printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e)); \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

enum Load { CS, NC, PLAIN, NC_256B };

template <Load L>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  if (L == CS) return __ldcs(p);
  if (L == NC) return __ldg(p);
  if (L == PLAIN) return *p;
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// NT threads, VT ints a thread a tile (VT / 4 vectors); PIPE: the next tile's vectors are loaded
// before this tile's are added. The input is a whole number of tiles.
template <int NT, int VT, int OCC, Load L, bool PIPE>
__global__ void __launch_bounds__(NT, OCC)
    sum(const int* in, u64 num_tiles, u64 tiles_per_cta, int* partials, u64* tickets, u64 first,
        int* out) {
  constexpr int V = VT / 4;
  __shared__ int warp_sums[NT / 32];
  __shared__ int last;
  int tid = threadIdx.x;
  u64 t = (u64)blockIdx.x * tiles_per_cta;
  u64 end = min(t + tiles_per_cta, num_tiles);
  int acc = 0;
  const uint4* src = reinterpret_cast<const uint4*>(in);
  if (PIPE) {
    uint4 cur[V];
    if (t < end) {
#pragma unroll
      for (int i = 0; i < V; ++i) cur[i] = load16<L>(src + t * NT * V + i * NT + tid);
    }
    for (; t < end; ++t) {
      uint4 next[V];
      if (t + 1 < end) {
#pragma unroll
        for (int i = 0; i < V; ++i) next[i] = load16<L>(src + (t + 1) * NT * V + i * NT + tid);
      }
#pragma unroll
      for (int i = 0; i < V; ++i) acc += (int)(cur[i].x + cur[i].y + cur[i].z + cur[i].w);
#pragma unroll
      for (int i = 0; i < V; ++i) cur[i] = next[i];
    }
  } else {
    for (; t < end; ++t) {
      uint4 r[V];
#pragma unroll
      for (int i = 0; i < V; ++i) r[i] = load16<L>(src + t * NT * V + i * NT + tid);
#pragma unroll
      for (int i = 0; i < V; ++i) acc += (int)(r[i].x + r[i].y + r[i].z + r[i].w);
    }
  }
  for (int o = 16; o; o /= 2) acc += __shfl_xor_sync(~0u, acc, o);
  if ((tid & 31) == 0) warp_sums[tid / 32] = acc;
  __syncthreads();
  if (tid == 0) {
    int s = 0;
    for (int w = 0; w < NT / 32; ++w) s += warp_sums[w];
    partials[blockIdx.x] = s;
    __threadfence();
    last = atomicAdd(tickets, 1ull) - first == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  int f = 0;
  for (unsigned c = tid; c < gridDim.x; c += NT) f += __ldcg(partials + c);
  for (int o = 16; o; o /= 2) f += __shfl_xor_sync(~0u, f, o);
  __syncthreads();
  if ((tid & 31) == 0) warp_sums[tid / 32] = f;
  __syncthreads();
  if (tid == 0) {
    int s = 0;
    for (int w = 0; w < NT / 32; ++w) s += warp_sums[w];
    *out = s;
  }
}

struct Variant {
  std::string name;
  std::function<void(const int*, u64, int*)> run;
  std::vector<float> ms;
};

int* g_partials;
u64* g_tickets;
u64 g_drawn;  // tickets drawn so far, as the library's per-stream state keeps it

template <int NT, int VT, int OCC, Load L, bool PIPE>
Variant variant(const char* name, int ranges, int sms) {
  auto k = sum<NT, VT, OCC, L, PIPE>;
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, NT, 0));
  cudaFuncAttributes a;
  CHECK(cudaFuncGetAttributes(&a, k));
  char label[160];
  snprintf(label, sizeof label, "%s (%dx%dx%d, %d regs, %d/SM, %d ranges)", name, NT, VT, OCC,
           a.numRegs, per_sm, ranges);
  u64 slots = (u64)per_sm * sms * ranges;
  return Variant{label,
                 [=](const int* in, u64 n, int* out) {
                   u64 tiles = n / (NT * VT);
                   u64 per = (tiles + slots - 1) / slots;
                   u64 grid = (tiles + per - 1) / per;
                   k<<<(unsigned)grid, NT>>>(in, tiles, per, g_partials, g_tickets, g_drawn, out);
                   g_drawn += grid;
                 },
                 {}};
}

int main() {
  cudaDeviceProp p;
  CHECK(cudaGetDeviceProperties(&p, 0));
  printf("%s, %d SMs, L2 %d MB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
  int sms = p.multiProcessorCount;
  const u64 max_n = 1ull << 28;
  std::vector<int> h(max_n);
  srand(12345);
  for (auto& x : h) x = rand() - RAND_MAX / 2;
  int *in, *out;
  CHECK(cudaMalloc(&in, max_n * 4));
  CHECK(cudaMalloc(&out, 4));
  CHECK(cudaMalloc(&g_partials, 1 << 22));
  CHECK(cudaMalloc(&g_tickets, 8));
  CHECK(cudaMemset(g_tickets, 0, 8));
  CHECK(cudaMemcpy(in, h.data(), max_n * 4, cudaMemcpyHostToDevice));
  size_t temp_bytes = 0;
  CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, in, out, (int)max_n));
  void* temp;
  CHECK(cudaMalloc(&temp, temp_bytes));

  std::vector<Variant> vs;
  vs.push_back(Variant{"CUB DeviceReduce::Sum",
                       [&](const int* i, u64 n, int* o) {
                         size_t b = temp_bytes;
                         cub::DeviceReduce::Sum(temp, b, i, o, (int)n);
                       },
                       {}});
  vs.push_back(variant<256, 16, 4, CS, false>("library: evict-first", 4, sms));
  vs.push_back(variant<256, 16, 4, NC, false>("non-coherent", 4, sms));
  vs.push_back(variant<256, 16, 4, PLAIN, false>("plain", 4, sms));
  vs.push_back(variant<256, 16, 4, NC_256B, false>("nc + L2::256B", 4, sms));
  vs.push_back(variant<256, 16, 4, CS, false>("evict-first", 1, sms));
  vs.push_back(variant<256, 16, 4, CS, false>("evict-first", 16, sms));
  vs.push_back(variant<256, 16, 4, CS, true>("evict-first, two tiles in flight", 4, sms));
  vs.push_back(variant<256, 16, 4, NC, true>("nc, two tiles in flight", 4, sms));
  vs.push_back(variant<256, 32, 4, CS, false>("evict-first", 4, sms));
  vs.push_back(variant<256, 16, 8, CS, false>("evict-first", 4, sms));
  vs.push_back(variant<256, 16, 8, NC, false>("non-coherent", 5, sms));
  vs.push_back(variant<512, 8, 4, CS, false>("evict-first", 4, sms));

  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int lg : {24, 25, 26, 28}) {
    u64 n = 1ull << lg;
    int want = 0;
    for (u64 i = 0; i < n; ++i) want = (int)((unsigned)want + (unsigned)h[i]);
    for (auto& v : vs) {
      v.ms.clear();
      CHECK(cudaMemset(out, 0xAB, 4));
      v.run(in, n, out);
      CHECK(cudaGetLastError());
      int got;
      CHECK(cudaMemcpy(&got, out, 4, cudaMemcpyDeviceToHost));
      if (got != want) {
        printf("WRONG: %s at 2^%d: %d, want %d\n", v.name.c_str(), lg, got, want);
        return 1;
      }
      for (int w = 0; w < 3; ++w) v.run(in, n, out);
    }
    for (int rep = 0; rep < 60; ++rep)
      for (auto& v : vs) {
        CHECK(cudaEventRecord(e0));
        v.run(in, n, out);
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        v.ms.push_back(ms);
      }
    CHECK(cudaGetLastError());
    float cub_ms = 0;
    printf("\n2^%d i32, median of 60 (ms, GB/s, vs CUB):\n", lg);
    for (auto& v : vs) {
      std::sort(v.ms.begin(), v.ms.end());
      float m = v.ms[v.ms.size() / 2];
      if (cub_ms == 0) cub_ms = m;
      printf("  %-62s %.4f  %6.0f  %.3f\n", v.name.c_str(), m, n * 4 / m / 1e6, cub_ms / m);
    }
  }
  return 0;
}
