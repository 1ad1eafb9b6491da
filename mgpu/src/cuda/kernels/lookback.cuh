// lookback.cuh: the decoupled look-back protocol of Merrill & Garland (NVR-2016-002).
// Each tile publishes its aggregate (status A) as soon as it knows it, then its inclusive prefix
// (status P) once the look-back has found its exclusive prefix. Status X means "nothing yet".
//
// A tile's status is a tag: the launch's epoch << 2 | status. A tag of another epoch reads as X, so
// the status arrays are never cleared between launches: each launch takes a new epoch. Elements of
// up to 4 bytes share one 64-bit word with their tag (tag << 32 | value bits), so one relaxed
// 64-bit store publishes both and no fence is needed. Larger elements write a 32-bit tag with
// release semantics after the value, and keep separate aggregate / inclusive arrays so that a
// reader that saw A never reads a half-overwritten value. The two kinds of status live in
// separate arrays: a stale word's value bits never read as a tag.

#define MGPU_STATUS_X 0u
#define MGPU_STATUS_A 1u
#define MGPU_STATUS_P 2u
#define MGPU_PACKED_STATUS (sizeof(T) <= 4)

struct TileStatus {
  u64* words;      // packed: tag << 32 | value bits
  unsigned* tags;  // unpacked
  T* aggregates;   // unpacked
  T* inclusives;   // unpacked
  unsigned epoch;  // 1 .. 2^30 - 1

  __device__ __forceinline__ unsigned status_of(unsigned tag) const {
    return tag >> 2 == epoch ? tag & 3u : MGPU_STATUS_X;
  }

  __device__ __forceinline__ void publish(i64 tile, unsigned status, T value) const {
    if constexpr (MGPU_PACKED_STATUS) {
      unsigned bits = 0;
      memcpy(&bits, &value, sizeof(T));
      store_relaxed_u64(words + tile, ((u64)(epoch << 2 | status) << 32) | bits);
    } else {
      (status == MGPU_STATUS_P ? inclusives : aggregates)[tile] = value;
      store_release_u32(tags + tile, epoch << 2 | status);
    }
  }

  __device__ __forceinline__ void load(i64 tile, unsigned& status, T& value) const {
    if constexpr (MGPU_PACKED_STATUS) {
      u64 w = load_relaxed_u64(words + tile);
      status = status_of((unsigned)(w >> 32));
      unsigned bits = (unsigned)w;
      memcpy(&value, &bits, sizeof(T));
    } else {
      status = status_of(load_acquire_u32(tags + tile));
      if (status != MGPU_STATUS_X)
        value = load_l2(status == MGPU_STATUS_P ? inclusives + tile : aggregates + tile);
    }
  }
};

// Run by one whole warp after the tile's aggregate is known. Publishes A (or P for tile 0), walks back
// over windows of 32 predecessors until one window holds a P, and publishes this tile's P.
// Returns the tile's exclusive prefix (valid in every lane).
__device__ __forceinline__ T warp_lookback(const TileStatus& ts, i64 tile, T aggregate, Op op,
                                           T identity) {
  int lane = threadIdx.x & (MGPU_WARP - 1);
  if (tile == 0) {
    if (lane == 0) ts.publish(0, MGPU_STATUS_P, aggregate);
    return identity;
  }
  if (lane == 0) ts.publish(tile, MGPU_STATUS_A, aggregate);

  T prefix = identity;
  bool have = false;
  for (i64 end = tile;; end -= MGPU_WARP) {
    i64 pred = end - MGPU_WARP + lane;  // lane 31 looks at the nearest predecessor
    unsigned status = MGPU_STATUS_P;
    T value = identity;  // tiles before 0 act as an inclusive prefix of nothing
    while (true) {
      if (pred >= 0) ts.load(pred, status, value);
      if (!__any_sync(MGPU_FULL_MASK, status == MGPU_STATUS_X)) break;
#if MGPU_BACKOFF > 0
      __nanosleep(MGPU_BACKOFF);
#endif
    }
    unsigned p_mask = __ballot_sync(MGPU_FULL_MASK, status == MGPU_STATUS_P);
    // Only the nearest P and the aggregates after it count.
    int first = p_mask ? 31 - __clz(p_mask) : 0;
    T x = lane >= first ? value : identity;
    x = shfl_idx(warp_reduce(x, op), 0);
    prefix = have ? op(x, prefix) : x;
    have = true;
    if (p_mask) break;
  }
  if (lane == 0) ts.publish(tile, MGPU_STATUS_P, op(prefix, aggregate));
  return prefix;
}
