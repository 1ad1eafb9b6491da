// lookback.cuh: the decoupled look-back protocol of Merrill & Garland (NVR-2016-002).
// Each tile publishes its aggregate (status A) as soon as it knows it, then its inclusive prefix
// (status P) once the look-back has found its exclusive prefix. Status X means "nothing yet".
//
// A tile's status is a tag: the launch's epoch << 2 | status. A tag of another epoch reads as X, so
// the status is never cleared between launches: each launch takes a new epoch.
//
// Every tile's status has a slot of its own, MGPU_STATUS_SLOT bytes (whole L2 sectors, set by the
// host): with 8-byte words side by side, the polls of the ~1,400 tiles in flight and their
// publishing stores met on the same few lines, and the look-back waited on them (64-byte slots:
// 0.875x -> 0.954x memcpy for a 2^28 i32 scan, BENCHMARKS.md). For elements of up to 4 bytes a
// slot's first 8 bytes hold one 64-bit word, tag << 32 | value bits: one relaxed store publishes
// both and no fence is needed. Elements of 5 to 12 bytes are packed the same way into the slot's
// first 16 bytes, written and read by one 128-bit relaxed access (sm_90's single-copy atomic
// .b128): value bytes 0..4 in bytes 0..4, the tag in bytes 4..8, value bytes 4..12 in bytes 8..16.
// Larger elements keep the tag alone in the same place (bytes
// 4..8), written with release semantics after the value, and their aggregate and inclusive values
// in a record of MGPU_VALUE_RECORD bytes per tile in a separate array, so that a reader that saw A
// never reads a half-overwritten value. Bytes 4..8 of a slot only ever hold tags, whatever the
// element size of the scan that wrote them: stale bits never read as a tag.
//
// What a tile publishes is a template parameter `V` with its operator: the scan's element, or a
// compaction's count of selected items (kernel_compact.cu), or a (count, value) pair. The host
// sizes the value records for the `V` of the module (MGPU_VALUE_RECORD) and the static_assert in
// TileStatusOf checks the kernel agrees.

#define MGPU_STATUS_X 0u
#define MGPU_STATUS_A 1u
#define MGPU_STATUS_P 2u

// `SLOT`: bytes from one tile's status to the next. MGPU_STATUS_SLOT for a tile that publishes one
// value; a tile that publishes several packed values (a radix sort's count per digit bin) keeps
// them side by side in one slot of 8 bytes each, and `word_of(k)` is value k's status.
template <typename V, int SLOT = MGPU_STATUS_SLOT>
struct TileStatusOf {
  static constexpr bool PACKED = sizeof(V) <= 4;
  static constexpr bool PACKED_WIDE = !PACKED && sizeof(V) <= 12;
  static_assert(MGPU_STATUS_SLOT % 32 == 0 && alignof(V) <= MGPU_STATUS_SLOT,
                "a status slot is whole 32-byte sectors and aligns the published type");
  static_assert(SLOT == MGPU_STATUS_SLOT || (PACKED && SLOT % 8 == 0),
                "several values per tile: packed words side by side");
  static_assert(PACKED || PACKED_WIDE || (MGPU_VALUE_RECORD >= 2 * sizeof(V) &&
                           MGPU_VALUE_RECORD % MGPU_STATUS_SLOT == 0),
                "a value record holds the aggregate and the inclusive value in whole slots");

  char* slots;     // MGPU_STATUS_SLOT bytes per tile
  char* values;    // unpacked: MGPU_VALUE_RECORD bytes per tile
  unsigned epoch;  // 1 .. 2^30 - 1

  __device__ __forceinline__ unsigned status_of(unsigned tag) const {
    return tag >> 2 == epoch ? tag & 3u : MGPU_STATUS_X;
  }
  __device__ __forceinline__ u64* word(i64 tile) const {
    return reinterpret_cast<u64*>(slots + tile * SLOT);
  }
  __device__ __forceinline__ unsigned* tag(i64 tile) const {
    return reinterpret_cast<unsigned*>(slots + tile * SLOT) + 1;
  }
  // The status of value k of a tile that publishes SLOT / 8 packed values.
  __device__ __forceinline__ TileStatusOf word_of(int k) const {
    return TileStatusOf{slots + k * 8, values, epoch};
  }
  // The aggregate (status A) or inclusive prefix (status P) of a tile.
  __device__ __forceinline__ V* value(i64 tile, unsigned status) const {
    return reinterpret_cast<V*>(values + tile * MGPU_VALUE_RECORD) + (status == MGPU_STATUS_P);
  }

  __device__ __forceinline__ void publish(i64 tile, unsigned status, V value_) const {
    if constexpr (PACKED) {
      unsigned bits = 0;
      memcpy(&bits, &value_, sizeof(V));
      store_relaxed_u64(word(tile), ((u64)(epoch << 2 | status) << 32) | bits);
    } else if constexpr (PACKED_WIDE) {
      unsigned b[3] = {0, 0, 0};
      memcpy(b, &value_, sizeof(V));
      store_relaxed_b128(word(tile), ((u64)(epoch << 2 | status) << 32) | b[0],
                         ((u64)b[2] << 32) | b[1]);
    } else {
      *value(tile, status) = value_;
      store_release_u32(tag(tile), epoch << 2 | status);
    }
  }

  __device__ __forceinline__ void load(i64 tile, unsigned& status, V& value_) const {
    if constexpr (PACKED) {
      u64 w = load_relaxed_u64(word(tile));
      status = status_of((unsigned)(w >> 32));
      unsigned bits = (unsigned)w;
      memcpy(&value_, &bits, sizeof(V));
    } else if constexpr (PACKED_WIDE) {
      u64 lo, hi;
      load_relaxed_b128(word(tile), lo, hi);
      status = status_of((unsigned)(lo >> 32));
      unsigned b[3] = {(unsigned)lo, (unsigned)hi, (unsigned)(hi >> 32)};
      memcpy(&value_, b, sizeof(V));
    } else {
      status = status_of(load_acquire_u32(tag(tile)));
      if (status != MGPU_STATUS_X) value_ = load_l2(value(tile, status));
    }
  }

  // Reloads a tile's status (first `load`ed, so that several loads can be in flight) until the
  // tile has published.
  __device__ __forceinline__ void settle(i64 tile, unsigned& status, V& value_) const {
    while (status == MGPU_STATUS_X) {
#if MGPU_BACKOFF > 0
      __nanosleep(MGPU_BACKOFF);
#endif
      load(tile, status, value_);
    }
  }
};

// Run by one whole warp after the tile's aggregate is known. Publishes A (or P for tile 0), walks back
// over windows of 32 predecessors until one window holds a P, and publishes this tile's P.
// Returns the tile's exclusive prefix (valid in every lane). `op` must be associative; operands
// keep their order.
template <typename V, typename F>
__device__ __forceinline__ V warp_lookback(const TileStatusOf<V>& ts, i64 tile, V aggregate, F op,
                                           V identity) {
  int lane = threadIdx.x & (MGPU_WARP - 1);
  if (tile == 0) {
    if (lane == 0) ts.publish(0, MGPU_STATUS_P, aggregate);
    return identity;
  }
  if (lane == 0) ts.publish(tile, MGPU_STATUS_A, aggregate);

  V prefix = identity;
  bool have = false;
  for (i64 end = tile;; end -= MGPU_WARP) {
    i64 pred = end - MGPU_WARP + lane;  // lane 31 looks at the nearest predecessor
    unsigned status = MGPU_STATUS_P;
    V value = identity;  // tiles before 0 act as an inclusive prefix of nothing
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
    V x = lane >= first ? value : identity;
    x = shfl_idx(warp_scan_inclusive(x, op), MGPU_WARP - 1);
    prefix = have ? op(x, prefix) : x;
    have = true;
    if (p_mask) break;
  }
  if (lane == 0) ts.publish(tile, MGPU_STATUS_P, op(prefix, aggregate));
  return prefix;
}

// The look-back of one thread, for a tile that publishes several values, each looked back over by
// its own thread (a radix sort's digit bins, thread d for bin d), in two halves so that the tile
// can work between them while its predecessors finish: thread_publish publishes the aggregate (A,
// or P for tile 0); thread_lookback then walks back until a P, publishes P, and returns the
// exclusive prefix. It reads the nearest predecessor first, which mostly has its P by then; past
// it, a window of MGPU_LOOKBACK_WINDOW predecessors at once: walked one at a time, every step
// waited a load's latency, and a pass of 2^24 keys spent 340 us there (6x a memcpy of its bytes).
// Wider windows read more status than they use: each predecessor is 2 KiB of a radix sort's
// status. Sort of 2^28 i32 keys, H100 (2026-11-26): windows of 8 6.07 ms, of 4 5.94, the nearest
// first and then windows of 4 5.92.
#ifndef MGPU_LOOKBACK_WINDOW
#define MGPU_LOOKBACK_WINDOW 4
#endif
template <typename V, int SLOT>
__device__ __forceinline__ void thread_publish(const TileStatusOf<V, SLOT>& ts, i64 tile,
                                               V aggregate) {
  ts.publish(tile, tile == 0 ? MGPU_STATUS_P : MGPU_STATUS_A, aggregate);
}
template <typename V, int SLOT, typename F>
__device__ __forceinline__ V thread_lookback(const TileStatusOf<V, SLOT>& ts, i64 tile,
                                             V aggregate, F op, V identity) {
  if (tile == 0) return identity;
  V prefix = identity;
  {
    unsigned status;
    ts.load(tile - 1, status, prefix);
    ts.settle(tile - 1, status, prefix);
    if (status == MGPU_STATUS_P) {
      ts.publish(tile, MGPU_STATUS_P, op(prefix, aggregate));
      return prefix;
    }
  }
  for (i64 end = tile - 1;; end -= MGPU_LOOKBACK_WINDOW) {
    unsigned status[MGPU_LOOKBACK_WINDOW];
    V value[MGPU_LOOKBACK_WINDOW];
#pragma unroll
    for (int k = 0; k < MGPU_LOOKBACK_WINDOW; ++k) {
      status[k] = MGPU_STATUS_P;  // tiles before 0 act as an inclusive prefix of nothing
      value[k] = identity;
      if (end - 1 - k >= 0) ts.load(end - 1 - k, status[k], value[k]);
    }
    bool found = false;
#pragma unroll
    for (int k = 0; k < MGPU_LOOKBACK_WINDOW; ++k) {
      if (found) break;
      ts.settle(end - 1 - k, status[k], value[k]);
      prefix = op(value[k], prefix);
      found = status[k] == MGPU_STATUS_P;
    }
    if (found) break;
  }
  ts.publish(tile, MGPU_STATUS_P, op(prefix, aggregate));
  return prefix;
}

// The loop of the look-back kernels. A CTA per resident slot (not per tile) loops over tiles, which
// saves a CTA launch per tile (experiments/ticket_scan.cu: 0.871x -> 0.878x memcpy at 2^28 i32).
// Tiles are numbered in the order of tickets, drawn only once the CTA has issued the stores of its
// previous tile and is ready to load (a tile claimed early stalls the look-back of every later
// tile: slower, same experiment), so every predecessor of a tile is running or done and the
// look-back always makes progress. The counter is never reset: tickets start at `first_ticket`,
// and every CTA draws once more than the tiles it takes.
//
// `ticket` is a shared-memory slot of the caller's storage (its layout stays the kernel's).
// `tile(t)` runs tile t with the whole CTA and returns once it has issued its stores; the barrier
// after the next draw frees the storage. `tile(t)` publishes t's P (for each value it publishes):
// later tiles' look-backs wait for it.
template <typename Tile>
__device__ __forceinline__ void ticketed_tiles(u64* tickets, u64 first_ticket, u64 num_tiles,
                                               i64& ticket, Tile&& tile) {
  if (threadIdx.x == 0) ticket = (i64)(atomicAdd(tickets, 1ull) - first_ticket);
  __syncthreads();
  for (i64 t = ticket; (u64)t < num_tiles; t = ticket) {
    tile(t);
    if (threadIdx.x == 0) ticket = (i64)(atomicAdd(tickets, 1ull) - first_ticket);
    __syncthreads();  // the tile's storage is free and the next ticket visible
  }
}

// Tile t's look-back, handed to its body: `lookback(aggregate)`, called by one whole warp once the
// aggregate is known, publishes A (P for tile 0), looks back, publishes P and returns the tile's
// exclusive prefix in every lane. The other warps need not wait: they go on (staging the tile's
// outputs) until a barrier after which the tile reads the prefix that the warp left in shared
// memory.
template <typename V, typename Op>
struct TileLookbackOf {
  const TileStatusOf<V>& status;
  i64 tile;
  Op op;
  V identity;

  __device__ __forceinline__ V operator()(V aggregate) const {
    return warp_lookback(status, tile, aggregate, op, identity);
  }

  // The CTA's exclusive scan of one value per thread, whose total is the tile's aggregate, then
  // the look-back by warp 0, which leaves the tile's exclusive prefix in `*tile_prefix` (shared
  // memory, read after the caller's next barrier). Returns the thread's prefix within the tile.
  __device__ __forceinline__ V cta_scan(V x, V& aggregate, CtaScanStorageOf<V>& storage,
                                        V* tile_prefix) const {
    int tid = threadIdx.x;
    V thread_prefix = cta_scan_exclusive(x, op, identity, aggregate, storage);
    if (tid < MGPU_WARP) {
      V prefix = (*this)(aggregate);
      if (tid == 0) *tile_prefix = prefix;
    }
    return thread_prefix;
  }
};

// The ticketed loop of a kernel whose tiles publish one `V` each (an element, a count, a pair):
// `tile(t, lookback)` per tile, `lookback` a TileLookbackOf<V, Op> for tile t.
//
// A tile that publishes several values (the radix sort's count per digit bin) runs
// `ticketed_tiles` itself, with a TileStatusOf whose SLOT holds them all, and looks back over
// each (`thread_lookback` on `word_of(k)`): the tags and the publish / load protocol are the same.
template <typename V, typename Op, typename Tile>
__device__ __forceinline__ void lookback_tiles(u64* tickets, u64 first_ticket, u64 num_tiles,
                                               i64& ticket, const TileStatusOf<V>& status, Op op,
                                               V identity, Tile&& tile) {
  ticketed_tiles(tickets, first_ticket, num_tiles, ticket,
                 [&](i64 t) { tile(t, TileLookbackOf<V, Op>{status, t, op, identity}); });
}
