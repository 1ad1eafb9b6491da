// kernel_scan.cu: device-wide scan. Two kernels share one tile routine (scan_tile):
//   mgpu_scan_lookback  single pass, decoupled look-back: resident CTAs loop, taking tiles in the
//                       order of tickets drawn from an atomic counter;
//   mgpu_scan_tiles     CTA c scans a contiguous range of tiles in order with a running carry. With one
//                       CTA it is the small-input path and the spine of reduce-then-scan; with many,
//                       given the spine's carry-ins, it is that algorithm's downsweep.
// Both take an optional carry-in (`carry_in`, null for none): the value before the first element,
// so that a scan continues another (a previous chunk, a previous rank's shard).
// A module compiles the kernels whose MGPU_WANT_<kernel> the host defines (jit.rs, Module::kernels):
// the small-input path needs mgpu_scan_tiles alone, the look-back scan mgpu_scan_lookback alone.

typedef TileStatusOf<T> TileStatus;
typedef CtaScanStorageOf<T> CtaScanStorage;

// The tile and the scan's storage are separate (not a union): one barrier fewer per tile.
struct ScanStorage {
  __align__(16) T tile[MGPU_NV];
  CtaScanStorage scan;
  T tile_prefix;
  T tile_total;
  i64 tile_id;
};

// Scans the tile at `base` (n <= NV elements) of the input (plain, mapped or counting: loadstore.cuh). `carry_in(aggregate)` is called by warp 0 only, with the
// tile's aggregate, and returns the tile's exclusive prefix. Returns the tile's inclusive total
// (prefix op aggregate), valid in every thread. The caller syncs before `storage` is reused.
template <typename CarryIn>
__device__ __forceinline__ T scan_tile(Input in, T* out, u64 base, int n, bool exclusive,
                                       bool vec_in, bool vec_out, T identity, Op op,
                                       ScanStorage& storage, CarryIn carry_in) {
  int tid = threadIdx.x;
  load_tile_to_shared_async(in, base, n, vec_in, identity, storage.tile, tid);
  __syncthreads();
  // The tile stays in shared memory and each thread reads its VT values twice (before and after
  // the look-back) instead of holding them in registers across it: a smaller kernel, measured
  // 0.81x -> 0.83x memcpy for i32 and 0.67x -> 0.76x for i64 (BENCHMARKS.md). VT odd: no bank
  // conflicts.
  T* mine = storage.tile + tid * MGPU_VT;
  T thread_total = mine[0];
#pragma unroll
  for (int i = 1; i < MGPU_VT; ++i) thread_total = op(thread_total, mine[i]);

  T aggregate;
  T thread_prefix = cta_scan_exclusive(thread_total, op, identity, aggregate, storage.scan);
  if (tid < MGPU_WARP) {
    T prefix = carry_in(aggregate);
    if (tid == 0) {
      storage.tile_prefix = prefix;
      storage.tile_total = op(prefix, aggregate);
    }
  }
  __syncthreads();
  T run = op(storage.tile_prefix, thread_prefix);
  T tile_total = storage.tile_total;
  // Only this thread touches its VT slots between the two barriers: scanned in place.
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    T next = op(run, mine[i]);
    mine[i] = exclusive ? run : next;
    run = next;
  }
  __syncthreads();
  store_tile_from_shared(storage.tile, n, vec_out, out + base, tid);
  return tile_total;
}

__device__ __forceinline__ bool vector_ok(const void* p) {
  return MGPU_VEC > 1 && ((size_t)p & 15) == 0;
}

// Persistent CTAs taking tiles in ticket order (lookback_tiles, lookback.cuh).
// Tiles start `head` elements before the data (tile t covers [t NV - head, (t + 1) NV - head),
// clipped to [0, count)): the host picks `head` so that every tile but the first begins on a
// 128-byte line of the output, where a view that does not start on one would otherwise have every
// tile straddle lines (i32 at a 16-byte offset: 11% slower).
#ifdef MGPU_WANT_mgpu_scan_lookback
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_scan_lookback(Input in, T* out, u64 count, u64 head, int exclusive, u64* tickets,
                       u64 first_ticket, TileStatus status, T* total_out, T identity,
                       const T* carry_in) {
  __shared__ ScanStorage storage;
  Op op;
  u64 num_tiles = (count + head + MGPU_NV - 1) / MGPU_NV;
  lookback_tiles(tickets, first_ticket, num_tiles, storage.tile_id, status, op, identity,
                 [&](i64 tile, const TileLookbackOf<T, Op>& lookback) {
    u64 first = (u64)tile * MGPU_NV;
    u64 base = tile == 0 ? 0 : first - head;
    int n = (int)(min(first + MGPU_NV - head, count) - base);
    // The carry-in goes before each tile's prefix; the published prefixes leave it out, so
    // the look-back itself is unchanged.
    auto prefix = [&](T aggregate) {
      T p = lookback(aggregate);
      return carry_in ? op(*carry_in, p) : p;
    };
    T total = scan_tile(in, out, base, n, exclusive != 0, in.vector_ok_at(base),
                        vector_ok(out + base), identity, op, storage, prefix);
    if (total_out && base + n == count && threadIdx.x == 0) *total_out = total;
  });
}
#endif

#ifdef MGPU_WANT_mgpu_scan_tiles
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_scan_tiles(Input in, T* out, u64 count, int exclusive, u64 tiles_per_cta,
                    const T* carry_in, T* total_out, T identity) {
  __shared__ ScanStorage storage;
  Op op;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  u64 tile_begin = (u64)blockIdx.x * tiles_per_cta;
  u64 tile_end = min(tile_begin + tiles_per_cta, num_tiles);
  T carry = carry_in ? carry_in[blockIdx.x] : identity;
  bool vec_in = in.vector_ok(), vec_out = vector_ok(out);
  for (u64 tile = tile_begin; tile < tile_end; ++tile) {
    u64 base = tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    carry = scan_tile(in, out, base, n, exclusive != 0, vec_in, vec_out, identity, op, storage,
                      [&](T) { return carry; });
    __syncthreads();  // storage is reused by the next tile
    if (total_out && threadIdx.x == 0 && base + n == count) *total_out = carry;
  }
  // No tile: the total is the carry-in (the identity without one).
  if (total_out && count == 0 && blockIdx.x == 0 && threadIdx.x == 0) *total_out = carry;
}
#endif
