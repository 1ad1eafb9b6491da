// cta_reduce.cuh: warp and CTA reductions. Both keep the operands in order (lane i's value is
// combined before lane i+1's), so they are correct for non-commutative operators too.

// Ordered reduction of one value per lane; the result is valid in lane 0. Any value type and
// operator (the look-back reduces what tiles publish with it).
template <typename V, typename F>
__device__ __forceinline__ V warp_reduce(V x, F op) {
  int lane = threadIdx.x & (MGPU_WARP - 1);
#pragma unroll
  for (int offset = 1; offset < MGPU_WARP; offset *= 2) {
    V y = shfl_down(x, offset);
    if (lane + offset < MGPU_WARP) x = op(x, y);
  }
  return x;
}

template <typename V>
struct CtaReduceStorageOf {
  V warp_totals[MGPU_WARPS];
};

// Ordered reduction of one value per thread; the result is returned to every thread.
template <typename V, typename F>
__device__ __forceinline__ V cta_reduce(V x, F op, CtaReduceStorageOf<V>& storage) {
  int tid = threadIdx.x, lane = tid & (MGPU_WARP - 1), warp = tid / MGPU_WARP;
  x = warp_reduce(x, op);
  if (lane == 0) storage.warp_totals[warp] = x;
  __syncthreads();
  V total = storage.warp_totals[0];
#pragma unroll
  for (int w = 1; w < MGPU_WARPS; ++w) total = op(total, storage.warp_totals[w]);
  __syncthreads();  // storage may be reused by the caller
  return total;
}
