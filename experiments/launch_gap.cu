// Experiment (not part of the library): what a per-call event timing (`mgpu bench`'s, and the CUB
// peer's) counts besides the kernel. A read of 2^24 ints is timed with events around one launch,
// with and without 5 us of host work between the start event and the launch, on the default and
// a created stream, launched through the runtime and the driver; and 100 launches back to back,
// whose time per call is the kernel's. The launch's own host time hardly shows; host work before
// the launch shows in full.
//   nvcc -O3 -arch=sm_90 -std=c++17 launch_gap.cu -lcuda -o launch_gap && ./launch_gap
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cuda.h>
#include <cuda_runtime.h>
typedef unsigned long long u64;

// Each CTA reads `per` tiles of 4096 ints with evict-first loads (the library's reduce reads so).
__global__ void __launch_bounds__(256, 4) sum(const uint4* in, u64 tiles, u64 per, int* partial) {
  u64 t = (u64)blockIdx.x * per, end = min(t + per, tiles);
  int acc = 0;
  for (; t < end; ++t) {
    uint4 r[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) r[i] = __ldcs(in + t * 1024 + i * 256 + threadIdx.x);
#pragma unroll
    for (int i = 0; i < 4; ++i) acc += r[i].x + r[i].y + r[i].z + r[i].w;
  }
  if (acc == 0x12345678) partial[blockIdx.x] = acc;  // keeps the loads
}

static void spin_us(double us) {
  auto t = std::chrono::steady_clock::now();
  while (std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() < us) {
  }
}

int main() {
  u64 n = 1ull << 24;
  uint4* in;
  int* p;
  cudaMalloc(&in, n * 4);
  cudaMemset(in, 1, n * 4);
  cudaMalloc(&p, 1 << 20);
  u64 tiles = n / 4096, grid = 132 * 4 * 4, per = (tiles + grid - 1) / grid;
  grid = (tiles + per - 1) / per;
  cudaStream_t created;
  cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  CUfunction f;
  cudaGetFuncBySymbol(&f, (const void*)sum);
  for (int mode = 0; mode < 8; ++mode) {
    cudaStream_t s = (mode & 1) ? created : 0;
    double gap = (mode & 2) ? 5.0 : 0.0;
    bool driver = mode & 4;
    std::vector<float> ms;
    std::vector<double> host;
    for (int r = 0; r < 63; ++r) {
      cudaEventRecord(a, s);
      auto t = std::chrono::steady_clock::now();
      spin_us(gap);
      if (driver) {
        void* args[] = {&in, &tiles, &per, &p};
        cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, s, args, nullptr);
      } else {
        sum<<<grid, 256, 0, s>>>(in, tiles, per, p);
      }
      host.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
      cudaEventRecord(b, s);
      cudaEventSynchronize(b);
      float x;
      cudaEventElapsedTime(&x, a, b);
      if (r >= 3) ms.push_back(x);
    }
    std::sort(ms.begin(), ms.end());
    std::sort(host.begin(), host.end());
    printf("%-7s stream, %-7s launch, host work before it %.0f us: events median %.4f ms; host (work + "
           "launch) median %.2f us\n",
           (mode & 1) ? "created" : "default", driver ? "driver" : "runtime", gap, ms[ms.size() / 2],
           host[host.size() / 2]);
  }
  for (int rep = 0; rep < 3; ++rep) {
    cudaEventRecord(a, created);
    for (int r = 0; r < 100; ++r) sum<<<grid, 256, 0, created>>>(in, tiles, per, p);
    cudaEventRecord(b, created);
    cudaEventSynchronize(b);
    float x;
    cudaEventElapsedTime(&x, a, b);
    printf("100 launches back to back: %.4f ms a call\n", x / 100);
  }
  cudaError_t e = cudaGetLastError();
  printf("last error: %s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
