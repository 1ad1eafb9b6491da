// cta_scan.cuh: CTA scans of one value per thread (ordered: non-commutative safe), for
// any value type and operator: the scan's elements, a compaction's counts, (count, value) pairs.

// Builds on cta_reduce.cuh's warp_scan_inclusive.

template <typename V>
struct CtaScanStorageOf {
  V warp_totals[MGPU_WARPS];
};

// Exclusive scan of one value per thread. Returns the exclusive prefix; `total` gets the CTA total.
// The caller must pass a barrier before `storage` is written again.
template <typename V, typename F>
__device__ __forceinline__ V cta_scan_exclusive(V x, F op, V identity, V& total,
                                                CtaScanStorageOf<V>& storage) {
  int tid = threadIdx.x, lane = tid & (MGPU_WARP - 1), warp = tid / MGPU_WARP;
  V inclusive = warp_scan_inclusive(x, op);
  if (lane == MGPU_WARP - 1) storage.warp_totals[warp] = inclusive;
  __syncthreads();
  // Every thread folds the (few) warp totals before its own warp: no second barrier round trip.
  V warp_prefix = identity;
  V all = identity;
#pragma unroll
  for (int w = 0; w < MGPU_WARPS; ++w) {
    V t = storage.warp_totals[w];
    if (w < warp) warp_prefix = op(warp_prefix, t);
    all = op(all, t);
  }
  total = all;
  V lane_exclusive = shfl_up(inclusive, 1);
  if (lane == 0) lane_exclusive = identity;
  return op(warp_prefix, lane_exclusive);
}
