// cta_scan.cuh: warp and CTA scans of one value per thread (ordered: non-commutative safe).

// Inclusive scan across the warp.
__device__ __forceinline__ T warp_scan_inclusive(T x, Op op) {
  int lane = threadIdx.x & (MGPU_WARP - 1);
#pragma unroll
  for (int offset = 1; offset < MGPU_WARP; offset *= 2) {
    T y = shfl_up(x, offset);
    if (lane >= offset) x = op(y, x);
  }
  return x;
}

struct CtaScanStorage {
  T warp_totals[MGPU_WARPS];
};

// Exclusive scan of one value per thread. Returns the exclusive prefix; `total` gets the CTA total.
// The caller must pass a barrier before `storage` is written again.
__device__ __forceinline__ T cta_scan_exclusive(T x, Op op, T identity, T& total,
                                                CtaScanStorage& storage) {
  int tid = threadIdx.x, lane = tid & (MGPU_WARP - 1), warp = tid / MGPU_WARP;
  T inclusive = warp_scan_inclusive(x, op);
  if (lane == MGPU_WARP - 1) storage.warp_totals[warp] = inclusive;
  __syncthreads();
  // Every thread folds the (few) warp totals before its own warp: no second barrier round trip.
  T warp_prefix = identity;
  T all = identity;
#pragma unroll
  for (int w = 0; w < MGPU_WARPS; ++w) {
    T t = storage.warp_totals[w];
    if (w < warp) warp_prefix = op(warp_prefix, t);
    all = op(all, t);
  }
  total = all;
  T lane_exclusive = shfl_up(inclusive, 1);
  if (lane == 0) lane_exclusive = identity;
  return op(warp_prefix, lane_exclusive);
}
