// Experiment (not part of the library): two attacks on the look-back wait of a single-pass scan.
// i32 exclusive sum of 2^28 ones, packed 64-bit status, one CTA per tile with atomic tile ids, the
// tile copied to shared memory with cp.async, as in mgpu_scan_lookback (the baseline). Variants:
//   PROP  the CTA that draws ticket 0 does no tile: its warps turn published aggregates into
//         inclusive prefixes (status P) in tile order, each warp owning every (NT / 32)-th window
//         of 32 * K tiles, so several windows' polls are in flight at once and only the carry
//         between windows is serial (in shared memory). Tiles keep their own look-back: the
//         propagator only makes P appear sooner. Asks whether the wait (11.8 us of a 19.6 us tile
//         lifetime, BENCHMARKS.md) is the chain of round trips between tiles.
//   TMA   the tile is loaded and stored with one bulk (TMA) copy each, so the status polls do not
//         queue behind per-thread cp.async requests in the SM's load path. Asks whether the
//         polls' latency under load is what the wait is made of.
// Every output is checked (exclusive sum of ones = index; `bad` counts the tail past the last
// whole tile, which these kernels leave alone). BENCHMARKS.md has the numbers.
//   nvcc -O3 -arch=sm_90 -std=c++17 propagator_scan.cu -o propagator_scan && ./propagator_scan
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
// Bulk (TMA) copies: one thread moves the whole tile; polls then do not queue behind per-thread
// cp.async requests in the SM's load path.
__device__ __forceinline__ void bulk_load(void* s, const void* g, unsigned bytes, u64* bar) {
  unsigned a = (unsigned)__cvta_generic_to_shared(s), b = (unsigned)__cvta_generic_to_shared(bar);
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(a), "l"(g), "r"(bytes), "r"(b) : "memory");
}
__device__ __forceinline__ void bulk_store(void* g, const void* s, unsigned bytes) {
  unsigned a = (unsigned)__cvta_generic_to_shared(s);
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(g), "r"(a), "r"(bytes) : "memory");
}
__device__ __forceinline__ u64 gtime() { u64 t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }

// The propagator: NT / 32 warps; warp w handles windows w, w + WARPS, ... of 32 * K tiles (lane l
// holds tiles [32 K j + K l, + K)).
template <int NT, int K>
__device__ void propagate(u64* status, long long tiles) {
  constexpr int WARPS = NT / 32;
  __shared__ volatile int carry_s;
  __shared__ volatile long long next_s;  // the window whose carry-in carry_s holds
  int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) { carry_s = 0; next_s = 0; }
  __syncthreads();
  long long windows = (tiles + 32 * K - 1) / (32 * K);
  for (long long j = warp; j < windows; j += WARPS) {
    long long t0 = j * 32 * K + (long long)K * lane;
    u64 w[K];
    while (true) {
      bool anyx = false;
#pragma unroll
      for (int i = 0; i < K; ++i) {
        long long t = t0 + i;
        w[i] = t < tiles ? ld_relaxed(status + t) : (1ull << 32);
        anyx |= (w[i] >> 32) == 0;
      }
      if (!__any_sync(~0u, anyx)) break;
    }
    // Per lane: inclusive within its K tiles, restarting at a P (whose value is already inclusive).
    int incl[K];
    bool lane_p = false;
    int acc = 0;
#pragma unroll
    for (int i = 0; i < K; ++i) {
      int v = (int)(unsigned)w[i];
      if ((w[i] >> 32) == 2) { acc = v; lane_p = true; } else acc += v;
      incl[i] = acc;
    }
    // Warp scan of (acc, lane_p) with restart at P: lanes after a P add nothing from before it.
    int x = acc;
    bool f = lane_p;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
      int y = __shfl_up_sync(~0u, x, o);
      bool g = __shfl_up_sync(~0u, f, o);
      if (lane >= o && !f) { x += y; f = g; }
    }
    // Exclusive prefix from earlier lanes of this window (with restart), then the carry-in.
    int before = __shfl_up_sync(~0u, x, 1);
    bool before_p = __shfl_up_sync(~0u, f, 1);
    if (lane == 0) { before = 0; before_p = false; }
    while (next_s != j) {}
    int carry = carry_s;
    int lane_in = before_p ? before : carry + before;
    // Publish P for every tile that was A.
    bool seen_p = false;
#pragma unroll
    for (int i = 0; i < K; ++i) {
      long long t = t0 + i;
      seen_p |= (w[i] >> 32) == 2;
      int value = seen_p ? incl[i] : lane_in + incl[i];
      if (t < tiles && (w[i] >> 32) == 1) st_relaxed(status + t, (2ull << 32) | (unsigned)value);
      if (i == K - 1) incl[i] = value;
    }
    int last = __shfl_sync(~0u, incl[K - 1], 31);
    __syncwarp();
    if (lane == 0) { carry_s = last; __threadfence_block(); next_s = j + 1; }
  }
}

template <int NT, int VT, bool PROP, int K, bool TRACE, bool TMA = false>
__global__ void __launch_bounds__(NT) scan(const int* in, int* out, u64* ctr, u64* status, long long tiles, u64* trace) {
  __shared__ __align__(16) int tile[NT * VT];
  __shared__ long long ts;
  __shared__ int wt[NT / 32];
  __shared__ int prefix_s;
  if (threadIdx.x == 0) ts = (long long)atomicAdd(ctr, 1ull) - (PROP ? 1 : 0);
  __syncthreads();
  long long t = ts;
  if (PROP && t < 0) { propagate<NT, K>(status, tiles); return; }
  u64 t0 = TRACE ? gtime() : 0, t2 = 0;
  const int4* src = (const int4*)(in + t * NT * VT);
  int4* dst = (int4*)(out + t * NT * VT);
  constexpr int CH = NT * VT / 4;
  if (TMA) {
    __shared__ __align__(8) u64 bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    if (threadIdx.x == 0) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(NT * VT * 4) : "memory");
      bulk_load(tile, src, NT * VT * 4, &bar);
    }
    __syncthreads();
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], 0; @!p bra W; }" ::"r"(b) : "memory");
  } else {
#pragma unroll
  for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) cp16((int4*)tile + c, src + c); }
  asm volatile("cp.async.wait_all;" ::: "memory");
  __syncthreads();
  }
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
  if (warp == 0) {
    int prefix = 0;
    if (t == 0) { if (lane == 0) st_relaxed(status, (2ull << 32) | (unsigned)agg); }
    else {
      if (lane == 0) st_relaxed(status + t, (1ull << 32) | (unsigned)agg);
      if (TRACE) t2 = gtime();
      for (long long end = t;; end -= 32) {
        long long pred = end - 32 + lane;
        u64 w;
        while (true) {
          w = pred >= 0 ? ld_relaxed(status + pred) : (2ull << 32);
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
    }
    if (lane == 0) prefix_s = prefix;
  }
  __syncthreads();
  if (TRACE && threadIdx.x == 0) { trace[2 * t] = t0; trace[2 * t + 1] = gtime() - t2; }
  int run = prefix_s + excl;
#pragma unroll
  for (int i = 0; i < VT; ++i) { int v = mine[i]; mine[i] = run; run += v; }
  if (TMA) {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      bulk_store(dst, tile, NT * VT * 4);
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    return;
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) __stcs(dst + c, ((int4*)tile)[c]); }
}

template <typename F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> v;
  for (int i = 0; i < 20; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); v.push_back(ms); }
  std::sort(v.begin(), v.end()); return v[10];
}
template <int NT, int VT, bool PROP, int K = 1, bool TMA = false>
void run(int* in, int* out, u64* ctr, u64* status, u64* trace, size_t n, float mc) {
  long long tiles = n / (NT * VT);
  auto z = [&] { cudaMemsetAsync(ctr, 0, 8); cudaMemsetAsync(status, 0, tiles * 8); };
  cudaMemset(out, 0xff, n * 4);
  float ms = timeit([&] { z(); scan<NT, VT, PROP, K, false, TMA><<<tiles + PROP, NT>>>(in, out, ctr, status, tiles, trace); });
  std::vector<int> h(n);
  cudaMemcpy(h.data(), out, n * 4, cudaMemcpyDeviceToHost);
  size_t bad = 0; for (size_t i = 0; i < n; ++i) bad += h[i] != (int)i;
  z();
  scan<NT, VT, PROP, K, true, TMA><<<tiles + PROP, NT>>>(in, out, ctr, status, tiles, trace);
  std::vector<u64> tr(2 * tiles);
  cudaMemcpy(tr.data(), trace, tiles * 16, cudaMemcpyDeviceToHost);
  std::vector<double> wait;
  for (long long i = 1; i < tiles; ++i) wait.push_back(tr[2 * i + 1] / 1000.0);
  std::sort(wait.begin(), wait.end());
  double sum = 0; for (double x : wait) sum += x;
  printf("%-11s TMA=%d K=%d %dx%d: %.4f ms (%.3fx memcpy) look-back mean %.2f us p50 %.2f p90 %.2f bad=%zu %s\n",
         PROP ? "propagator" : "baseline", (int)TMA, K, NT, VT, ms, mc / ms, sum / wait.size(), wait[wait.size() / 2],
         wait[wait.size() * 9 / 10], bad, cudaGetErrorString(cudaGetLastError()));
}
int main() {
  size_t n = 1ull << 28;
  int *in, *out; u64 *ctr, *status, *trace;
  cudaMalloc(&in, n * 4); cudaMalloc(&out, n * 4); cudaMalloc(&ctr, 8); cudaMalloc(&status, n / 16); cudaMalloc(&trace, n / 4);
  std::vector<int> ones(n, 1); cudaMemcpy(in, ones.data(), n * 4, cudaMemcpyHostToDevice);
  float mc = timeit([&] { cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); });
  printf("memcpy %.4f ms\n", mc);
  for (int round = 0; round < 2; ++round) {
    run<128, 39, false>(in, out, ctr, status, trace, n, mc);               // baseline
    run<128, 39, true, 1>(in, out, ctr, status, trace, n, mc);             // propagator
    run<128, 39, true, 4>(in, out, ctr, status, trace, n, mc);
    run<256, 23, false>(in, out, ctr, status, trace, n, mc);
    run<256, 23, true, 4>(in, out, ctr, status, trace, n, mc);
    run<128, 39, false, 1, true>(in, out, ctr, status, trace, n, mc);      // TMA
    run<128, 39, true, 4, true>(in, out, ctr, status, trace, n, mc);       // both
    run<256, 23, false, 1, true>(in, out, ctr, status, trace, n, mc);
    run<128, 47, false, 1, true>(in, out, ctr, status, trace, n, mc);
  }
}
