// cta_reduce.cuh: the ordered warp combine, and CTA reductions. Operands keep their order (lane
// i's value is combined before lane i+1's), so they are correct for non-commutative operators too.

// Inclusive scan across the warp: lane i gets lanes 0..=i combined, so the last lane holds the
// warp's reduction. The one warp combine: warp reductions (CTA reduce, the look-back's window)
// read its last lane, the CTA scan every lane; a reduction's shuffles cost as many as this.
template <typename V, typename F>
__device__ __forceinline__ V warp_scan_inclusive(V x, F op) {
  int lane = threadIdx.x & (MGPU_WARP - 1);
#pragma unroll
  for (int offset = 1; offset < MGPU_WARP; offset *= 2) {
    V y = shfl_up(x, offset);
    if (lane >= offset) x = op(y, x);
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
  x = warp_scan_inclusive(x, op);
  if (lane == MGPU_WARP - 1) storage.warp_totals[warp] = x;
  __syncthreads();
  V total = storage.warp_totals[0];
#pragma unroll
  for (int w = 1; w < MGPU_WARPS; ++w) total = op(total, storage.warp_totals[w]);
  __syncthreads();  // storage may be reused by the caller
  return total;
}
