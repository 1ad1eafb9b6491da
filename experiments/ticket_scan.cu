// Experiment (not part of the library): what the per-launch and per-tile overheads around the
// look-back cost. i32 exclusive sum of 2^28 ones, packed 64-bit status, tile in shared memory
// loaded with cp.async, as in mgpu_scan_lookback. Variants:
//   ZERO   the status words and the tile counter are zeroed before each launch (two memsets), as
//          the library does today;
//   EPOCH  nothing is zeroed: each launch tags its status words with its own epoch (a word of an
//          older epoch reads as "nothing yet") and draws tickets from a counter that is never reset
//          (the host passes the counter's value before the launch);
//   PERSIST  one CTA per resident slot, looping over tiles: the next ticket is drawn (atomicAdd
//          issued, result not waited for) as soon as the look-back ends, so its latency is hidden
//          behind the scan and the store; a fresh CTA per tile pays it before its first load.
//   LATE   as PERSIST, but the ticket is drawn after the stores (latency exposed, launch saved).
// Every output is checked (exclusive sum of ones = index). BENCHMARKS.md has the numbers.
//   nvcc -O3 -arch=sm_90 -std=c++17 ticket_scan.cu -o ticket_scan && ./ticket_scan
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

enum { ONE_PER_TILE = 0, PERSIST = 1, LATE = 2 };

// Status word: (epoch << 2 | status) << 32 | value; status 1 = A, 2 = P; other epochs = X.
template <int NT, int VT, int MODE>
__global__ void __launch_bounds__(NT) scan(const int* in, int* out, u64* ctr, u64 ticket_base, u64* status,
                                           unsigned epoch, long long tiles) {
  __shared__ __align__(16) int tile[NT * VT];
  __shared__ long long ts;
  __shared__ int wt[NT / 32];
  __shared__ int prefix_s;
  const u64 A = (u64)(epoch << 2 | 1) << 32, P = (u64)(epoch << 2 | 2) << 32;
  constexpr int CH = NT * VT / 4;
  int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  if (threadIdx.x == 0) ts = (long long)(atomicAdd(ctr, 1ull) - ticket_base);
  __syncthreads();
  long long t = ts;
  while (t < tiles) {
    const int4* src = (const int4*)(in + t * NT * VT);
    int4* dst = (int4*)(out + t * NT * VT);
#pragma unroll
    for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) cp16((int4*)tile + c, src + c); }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    int* mine = tile + threadIdx.x * VT;
    int s = 0;
#pragma unroll
    for (int i = 0; i < VT; ++i) s += mine[i];
    int x = s;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) { int y = __shfl_up_sync(~0u, x, o); if (lane >= o) x += y; }
    if (lane == 31) wt[warp] = x;
    __syncthreads();
    int wp = 0, agg = 0;
#pragma unroll
    for (int w = 0; w < NT / 32; ++w) { if (w < warp) wp += wt[w]; agg += wt[w]; }
    int excl = wp + x - s;
    u64 next = 0;
    if (warp == 0) {
      int prefix = 0;
      if (t == 0) { if (lane == 0) st_relaxed(status, P | (unsigned)agg); }
      else {
        if (lane == 0) st_relaxed(status + t, A | (unsigned)agg);
        for (long long end = t;; end -= 32) {
          long long pred = end - 32 + lane;
          u64 w;
          while (true) {
            w = pred >= 0 ? ld_relaxed(status + pred) : P;
            if (!__any_sync(~0u, (unsigned)(w >> 34) != epoch)) break;
          }
          unsigned pm = __ballot_sync(~0u, ((w >> 32) & 3) == 2);
          int first = pm ? 31 - __clz(pm) : 0;
          int v = lane >= first ? (int)(unsigned)w : 0;
#pragma unroll
          for (int o = 16; o; o /= 2) v += __shfl_xor_sync(~0u, v, o);
          prefix += v;
          if (pm) break;
        }
        if (lane == 0) st_relaxed(status + t, P | (unsigned)(prefix + agg));
      }
      if (lane == 0) {
        prefix_s = prefix;
        if (MODE == PERSIST) next = atomicAdd(ctr, 1ull);  // not waited for until after the stores
      }
    }
    __syncthreads();
    int run = prefix_s + excl;
#pragma unroll
    for (int i = 0; i < VT; ++i) { int v = mine[i]; mine[i] = run; run += v; }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < (CH + NT - 1) / NT; ++i) { int c = i * NT + threadIdx.x; if (c < CH) __stcs(dst + c, ((int4*)tile)[c]); }
    if (MODE == ONE_PER_TILE) return;
    if (threadIdx.x == 0) {
      if (MODE == LATE) next = atomicAdd(ctr, 1ull);
      ts = (long long)(next - ticket_base);
    }
    __syncthreads();  // the tile's shared memory is free and the next ticket visible
    t = ts;
  }
}

template <typename F> float timeit(F f) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> v;
  for (int i = 0; i < 20; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); v.push_back(ms); }
  std::sort(v.begin(), v.end()); return v[10];
}

struct State { u64 tickets = 0; unsigned epoch = 0; };

template <int NT, int VT, int MODE>
void run(bool zero, int* in, int* out, u64* ctr, u64* status, size_t n, float mc, State& st) {
  long long tiles = n / (NT * VT);
  int per_sm = 0, sms = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, scan<NT, VT, MODE>, NT, 0);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  long long grid = MODE == ONE_PER_TILE ? tiles : std::min<long long>(tiles, (long long)per_sm * sms);
  auto launch = [&] {
    if (zero) { cudaMemsetAsync(ctr, 0, 8); cudaMemsetAsync(status, 0, tiles * 8); st.tickets = 0; st.epoch = 0; }
    ++st.epoch;
    // Every CTA draws one ticket more than the tiles it scans (the one that ends its loop).
    scan<NT, VT, MODE><<<grid, NT>>>(in, out, ctr, st.tickets, status, st.epoch, tiles);
    st.tickets += MODE == ONE_PER_TILE ? tiles : tiles + grid;
  };
  cudaMemset(out, 0xff, n * 4);
  float ms = timeit(launch);
  std::vector<int> h(n);
  cudaMemcpy(h.data(), out, n * 4, cudaMemcpyDeviceToHost);
  size_t bad = 0; for (size_t i = 0; i < (size_t)tiles * NT * VT; ++i) bad += h[i] != (int)i;
  const char* names[] = {"one-per-tile", "persist", "late"};
  printf("%-12s %-5s %dx%d (%d/SM): %.4f ms (%.3fx memcpy) bad=%zu %s\n", names[MODE], zero ? "zero" : "epoch", NT, VT,
         per_sm, ms, mc / ms, bad, cudaGetErrorString(cudaGetLastError()));
}
int main() {
  size_t n = 1ull << 28;
  int *in, *out; u64 *ctr, *status;
  cudaMalloc(&in, n * 4); cudaMalloc(&out, n * 4); cudaMalloc(&ctr, 8); cudaMalloc(&status, n / 16);
  cudaMemset(ctr, 0, 8); cudaMemset(status, 0, n / 16);
  std::vector<int> ones(n, 1); cudaMemcpy(in, ones.data(), n * 4, cudaMemcpyHostToDevice);
  float mc = timeit([&] { cudaMemcpyAsync(out, in, n * 4, cudaMemcpyDeviceToDevice); });
  printf("memcpy %.4f ms\n", mc);
  State st;
  for (int round = 0; round < 2; ++round) {
    run<128, 39, ONE_PER_TILE>(true, in, out, ctr, status, n, mc, st);
    run<128, 39, ONE_PER_TILE>(false, in, out, ctr, status, n, mc, st);
    run<128, 39, PERSIST>(false, in, out, ctr, status, n, mc, st);
    run<128, 39, LATE>(false, in, out, ctr, status, n, mc, st);
    run<128, 31, PERSIST>(false, in, out, ctr, status, n, mc, st);
    run<128, 47, PERSIST>(false, in, out, ctr, status, n, mc, st);
    run<256, 23, PERSIST>(false, in, out, ctr, status, n, mc, st);
  }
}
