// kernel_compact.cu: single-pass stream compaction (select, partition, unique) and reduce-by-key,
// fused into the decoupled look-back of lookback.cuh (Merrill & Garland, section 5.2): a tile
// publishes the number of items it keeps (a (runs, value) pair for reduce-by-key), its look-back
// finds where its output starts, and it writes its kept items there: about 2n memory traffic.
//
// In place: a tile writes only after its look-back has seen every predecessor publish, and a tile
// publishes only after it has read its inputs; its outputs lie before the end of its own inputs. So
// no tile overwrites an input that is yet to be read, and the output may be the input. (The one
// exception is the partition whose rejected items fill the output from the back: those land on
// later tiles' inputs, so that form has no in-place launch; compact.rs's partition_in_place is a
// stable partition staged through a temporary.)
//
// The module's element type `T` is the key: what selection looks at (the items themselves, or
// flags for select_flagged). Defines from the host (cuda/compact.rs):
//   MGPU_UNIQUE      0: keep the keys for which Pred holds; 1: keep the first key of each run of
//                    keys equal under Eq (the first key of the input is always kept)
//   MGPU_KEYS_OUT    write the kept keys
//   MGPU_VALUES      a value array (type V) travels with the keys
//   MGPU_REJECTED    0: dropped; 1: into the output's tail, last rejected first (partition_if);
//                    2: in input order into their own outputs (partition_copy)
//   MGPU_REDUCE_BY_KEY, MGPU_NON_TRIVIAL_RUNS: the module is mgpu_reduce_by_key or
//                    mgpu_non_trivial_runs instead of mgpu_compact
//   MGPU_PREFETCH_LATER_TILE  hint L2 about a later tile's keys (prefetch_later_tile)
//   C                the count type: unsigned (4 bytes, packed look-back status) or u64

#if !MGPU_VALUES
typedef T V;
#endif

// Values that travel with kept keys only (no rejected output) may be read only where a key is
// kept: each thread copies its kept items' values as soon as its keys decided, while the tile
// scans and looks back. Runs of 500 skip nearly every DRAM sector of the values. Where most keys
// are kept, few sectors are skipped and the later load costs more than it saves: a CTA loads
// all of a tile's values with its keys after a tile that kept more than a quarter of its items.
#define MGPU_SPARSE_VALUES (MGPU_VALUES && !MGPU_REJECTED)

struct CountPlus {
  __device__ __forceinline__ C operator()(C a, C b) const { return a + b; }
};

struct CompactStorage {
  // The keys tile as loaded; once every thread holds its keys, the kept keys in output order.
  __align__(16) T keys[MGPU_NV];
#if MGPU_SPARSE_VALUES
  // Once the keys are stored, the kept values are staged over them.
  unsigned char wider_values[sizeof(V) > sizeof(T) ? MGPU_NV * (sizeof(V) - sizeof(T)) : 1];
#endif
#if MGPU_VALUES
  __align__(16) V values[MGPU_NV];
#endif
#if MGPU_SPARSE_VALUES
  int values_eager;  // the next tile loads all its values with its keys
#endif
  CtaScanStorageOf<C> scan;
  C tile_prefix;
  i64 tile_id;
};

// Writes the tile's staged items: the first `kept` of `staged` to `out + prefix`, the rest (the
// rejected, in input order) where MGPU_REJECTED puts them. `rejected_before`: the rejected items of
// all earlier tiles.
template <typename X>
__device__ __forceinline__ void store_staged(const X* staged, int n, int kept, X* out,
                                             X* rejected_out, u64 prefix, u64 rejected_before,
                                             u64 count, int tid) {
  int end = MGPU_REJECTED ? n : kept;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + tid;
    if (j < end) {
      X x = staged[j];
      if (j < kept) {
        out[prefix + j] = x;
      } else if (MGPU_REJECTED == 1) {
        out[count - 1 - (rejected_before + (j - kept))] = x;
      } else {
        rejected_out[rejected_before + (j - kept)] = x;
      }
    }
  }
}

// A hint to L2, by one thread as a tile starts, for the tile half a round of the grid later:
// tickets go out in order, so that is about the tile another CTA draws soon. Its loads then find
// L2, where a few CTAs of 128 threads per SM hold too few loads in flight to cover DRAM's latency.
// (Keys alone: with values, and a round ahead, it crowded L2 and slowed high keep rates.)
__device__ __forceinline__ void prefetch_later_tile(const Input& keys, i64 tile, u64 count) {
#if MGPU_PREFETCH_LATER_TILE && !MGPU_COUNTING
  if (threadIdx.x != 0) return;
  u64 base = ((u64)tile + gridDim.x / 2) * MGPU_NV;
  if (base >= count) return;
  prefetch_l2(keys.ptr + base, min((u64)MGPU_NV, count - base) * sizeof(In));
#endif
}

#if MGPU_SPARSE_VALUES
// The values of the thread's kept items (bit i of `bits`: item first + i) to their places in
// shared memory, with cp.async where V allows (complete after cp_async_wait_all); the others are
// not read. A loop over the kept items, not unrolled over VT: the thread's keys are live here.
__device__ __forceinline__ void kept_values_to_shared(const V* src, int first, unsigned bits,
                                                      V* shared) {
  constexpr bool ASYNC =
      (sizeof(V) == 4 || sizeof(V) == 8 || sizeof(V) == 16) && alignof(V) >= sizeof(V);
  while (bits) {
    int j = first + __ffs(bits) - 1;
    bits &= bits - 1;
    if constexpr (ASYNC)
      cp_async<sizeof(V)>(shared + j, src + j);
    else
      shared[j] = src[j];
  }
}
#endif

#if !MGPU_REDUCE_BY_KEY && !MGPU_NON_TRIVIAL_RUNS
// One tile of mgpu_compact. A tile with sparse values (MGPU_SPARSE_VALUES) copies the kept ones
// once its keys decided, an eager one loads them all with its keys: each case is compiled on its
// own (one body with both cases ran both slower).
template <bool EAGER, typename Lookback>
__device__ __forceinline__ void compact_tile(CompactStorage& storage, const Input& keys,
                                             const V* values, T* keys_out, V* values_out,
                                             T* keys_rejected, V* values_rejected, u64 count,
                                             u64* count_out, bool values_in_place, i64 tile,
                                             const Lookback& lookback) {
  (void)values_in_place;
  int tid = threadIdx.x;
  u64 base = (u64)tile * MGPU_NV;
  int n = (int)min((u64)MGPU_NV, count - base);
  prefetch_later_tile(keys, tile, count);
  load_tile_to_shared_async<false>(keys, base, n, keys.vector_ok_at(base), T(), storage.keys,
                                   tid);
#if MGPU_SPARSE_VALUES
  if (EAGER) load_plain_to_shared<V, false>(values + base, n, storage.values, tid);
#elif MGPU_VALUES
  load_plain_to_shared<V, false>(values + base, n, storage.values, tid);
#endif
  cp_async_wait_all();
#if MGPU_UNIQUE
  // The key before the tile decides whether the tile's first key starts a run. In place it may
  // already be overwritten, but only by itself: output slot base - 1 takes the key at base - 1
  // exactly when every key before it was kept.
  T before = tid == 0 && base > 0 ? keys[base - 1] : T();
#endif
  __syncthreads();

  // Each thread's VT consecutive keys (VT odd: no bank conflicts) and whether each is kept.
  T k[MGPU_VT];
  V v[MGPU_VT];
  unsigned kept_bits = 0;
  int first = tid * MGPU_VT;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    k[i] = storage.keys[first + i];
#if MGPU_SPARSE_VALUES
    if (EAGER) v[i] = storage.values[first + i];
#elif MGPU_VALUES
    v[i] = storage.values[first + i];
#else
    v[i] = k[i];
#endif
#if MGPU_UNIQUE
    bool keep;
    if (i > 0) keep = !Eq()(k[i - 1], k[i]);
    else if (tid > 0) keep = !Eq()(storage.keys[first - 1], k[0]);
    else keep = base == 0 || !Eq()(before, k[0]);
#else
    bool keep = Pred()(k[i]);
#endif
    if (keep && first + i < n) kept_bits |= 1u << i;
  }
#if MGPU_SPARSE_VALUES
  if (!EAGER) kept_values_to_shared(values + base, first, kept_bits, storage.values);
#endif
  int thread_kept = __popc(kept_bits);
  C tile_kept;
  C thread_prefix =
      cta_scan_exclusive((C)thread_kept, CountPlus(), (C)0, tile_kept, storage.scan);
#if MGPU_SPARSE_VALUES
  if (!EAGER && values_in_place) {
    cp_async_wait_all();
    __syncthreads();
  }
  if (tid == 0) storage.values_eager = (int)tile_kept > n / 4;
#endif
  if (tid < MGPU_WARP) {
    C prefix = lookback(tile_kept);
    if (tid == 0) {
      storage.tile_prefix = prefix;
      if (base + n == count) *count_out = (u64)(prefix + tile_kept);
    }
  }
  // Every thread read its keys before the scan's barrier: the tile can take the staged output,
  // kept items first, then (when wanted) the rejected ones, each group in input order.
  int kept_before = (int)thread_prefix;
  int rejected_before = first - kept_before;
  int kept = (int)tile_kept;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    bool keep = (kept_bits >> i) & 1u;
    int slot = keep ? kept_before++ : kept + rejected_before++;
    if (keep || (MGPU_REJECTED && first + i < n)) {
      if (MGPU_KEYS_OUT) storage.keys[slot] = k[i];
#if MGPU_SPARSE_VALUES
      if (EAGER) storage.values[slot] = v[i];
#elif MGPU_VALUES
      storage.values[slot] = v[i];
#endif
    }
  }
#if MGPU_SPARSE_VALUES
  cp_async_wait_all();
#endif
  __syncthreads();
  u64 prefix = (u64)storage.tile_prefix;
  u64 rejected_prior = base - prefix;
  if (MGPU_KEYS_OUT)
    store_staged(storage.keys, n, kept, keys_out, keys_rejected, prefix, rejected_prior, count,
                 tid);
#if MGPU_SPARSE_VALUES
  // A sparse tile's kept values, in order, over the stored keys: one shared copy each, where
  // registers would hold them across the look-back (and they arrive during the scan).
  V* staged_values = storage.values;
  if (!EAGER) {
    staged_values = reinterpret_cast<V*>(storage.keys);
    __syncthreads();
    kept_before = (int)thread_prefix;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if ((kept_bits >> i) & 1u) staged_values[kept_before++] = storage.values[first + i];
    __syncthreads();
  }
  store_staged(staged_values, n, kept, values_out, values_rejected, prefix, rejected_prior,
               count, tid);
#elif MGPU_VALUES
  store_staged(storage.values, n, kept, values_out, values_rejected, prefix, rejected_prior,
               count, tid);
#endif
}

extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_compact(Input keys, const V* values, T* keys_out, V* values_out, T* keys_rejected,
                 V* values_rejected, u64 count, u64* count_out, u64* tickets, u64 first_ticket,
                 TileStatusOf<C> status) {
  __shared__ CompactStorage storage;
  int tid = threadIdx.x;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  // In place, a tile must hold all its inputs before it publishes (kernel comment above).
  bool values_in_place = MGPU_SPARSE_VALUES && (size_t)values_out < (size_t)(values + count) &&
                         (size_t)values < (size_t)(values_out + count);
#if MGPU_SPARSE_VALUES
  if (tid == 0) storage.values_eager = 1;
#endif
  lookback_tiles(tickets, first_ticket, num_tiles, storage.tile_id, status, CountPlus(), (C)0,
                 [&](i64 tile, const TileLookbackOf<C, CountPlus>& lookback) {
#if MGPU_SPARSE_VALUES
    if (!storage.values_eager) {
      compact_tile<false>(storage, keys, values, keys_out, values_out, keys_rejected,
                          values_rejected, count, count_out, values_in_place, tile, lookback);
      return;
    }
#endif
    compact_tile<true>(storage, keys, values, keys_out, values_out, keys_rejected,
                       values_rejected, count, count_out, values_in_place, tile, lookback);
  });
  if (count == 0 && blockIdx.x == 0 && tid == 0) *count_out = 0;
}
#endif

#if MGPU_REDUCE_BY_KEY && !MGPU_NON_TRIVIAL_RUNS
// Reduce-by-key: runs of keys equal under Eq, the values of each run reduced by Op in order (the
// operator need not commute). Tiles publish a (runs, value) pair of segscan.cuh: the number of
// runs that start in the tile and the reduction of the values since the last start. A run's key
// is written where it starts; its reduction where the next run starts (or by the tile holding the
// last item), into the output slot of the run before.
//
// As in the segmented reduction, a thread reads its keys and values from shared memory twice
// (before and after the scan) instead of holding them in registers. The results stay where
// they are: a run's key is the loaded key at its start, and the value slot of a start takes the
// tile's part of the run before it. Only the tile's first start needs the look-back's carry, so
// the staging overlaps the look-back.
typedef RunPairOf<C, V> RunPair;
typedef RunPlusOf<C, V, Op> RunPlus;
static_assert(MGPU_NV <= 65536, "run start positions are 16-bit");

struct RunStorage {
  // The tile as loaded; at each run start, the value slot then holds the tile's part of the
  // reduction of the run before.
  __align__(16) T keys[MGPU_NV];
  __align__(16) V values[MGPU_NV];
  unsigned short start_at[MGPU_NV];  // the positions of the tile's run starts, by rank
  CtaScanStorageOf<RunPair> scan;
  RunPair tile_prefix;
  i64 tile_id;
};

extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_reduce_by_key(Input keys, const V* values, int use_constant, V constant, T* keys_out,
                       V* values_out, u64 count, u64* count_out, u64* tickets, u64 first_ticket,
                       TileStatusOf<RunPair> status, V identity) {
  __shared__ RunStorage storage;
  int tid = threadIdx.x;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  const RunPair none{0, identity};
  lookback_tiles(tickets, first_ticket, num_tiles, storage.tile_id, status, RunPlus(), none,
                 [&](i64 tile, const TileLookbackOf<RunPair, RunPlus>& lookback) {
    u64 base = (u64)tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    prefetch_later_tile(keys, tile, count);
    load_tile_to_shared_async(keys, base, n, keys.vector_ok_at(base), T(), storage.keys, tid);
    if (!use_constant) load_plain_to_shared(values + base, n, storage.values, tid);
    // See mgpu_compact: in place, slot base - 1 can only hold the key at base - 1.
    T before = tid == 0 && base > 0 ? keys[base - 1] : T();
    __syncthreads();

    // Each thread's VT consecutive items (VT odd: conflict-free): run starts and total.
    int first = tid * MGPU_VT;
    const T* my_keys = storage.keys + first;
    V* my_values = storage.values + first;
    unsigned head_bits = 0;
    RunPair thread_total = none;
    T prev = tid > 0 ? my_keys[-1] : before;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      T key = my_keys[i];
      bool head = (i == 0 && tid == 0 && base == 0) || !Eq()(prev, key);
      prev = key;
      if (first + i < n) {
        if (head) head_bits |= 1u << i;
        thread_total = RunPlus()(thread_total,
                                 RunPair{(C)head, use_constant ? constant : my_values[i]});
      }
    }
    RunPair tile_total;
    RunPair thread_prefix = lookback.cta_scan(thread_total, tile_total, storage.scan,
                                              &storage.tile_prefix);
    // Stage each run start: its position by rank, and in its value slot (this thread's own, read
    // first) the tile's part of the run before it.
    RunPair x = thread_prefix;
    int rank = (int)thread_prefix.runs;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      if (first + i < n) {
        V v = use_constant ? constant : my_values[i];
        bool head = (head_bits >> i) & 1u;
        if (head) {
          my_values[i] = x.value;
          storage.start_at[rank++] = (unsigned short)(first + i);
        }
        x = RunPlus()(x, RunPair{(C)head, v});
      }
    }
    __syncthreads();
    RunPair prefix = storage.tile_prefix;
    if (base + n == count && first < n && n <= first + MGPU_VT) {
      // This thread holds the last item: its run ends here.
      RunPair last = RunPlus()(prefix, x);
      values_out[last.runs - 1] = last.value;
      *count_out = (u64)last.runs;
    }
    int starts = (int)tile_total.runs;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j < starts) {
        int p = storage.start_at[j];
        u64 run = (u64)prefix.runs + j;
        if (MGPU_KEYS_OUT) keys_out[run] = storage.keys[p];
        if (run > 0) {
          // The tile's first start ends the run carried in from earlier tiles.
          V v = storage.values[p];
          values_out[run - 1] = j == 0 ? Op()(prefix.value, v) : v;
        }
      }
    }
  });
}
#endif

#if MGPU_NON_TRIVIAL_RUNS
// Non-trivial runs (CUB's NonTrivialRuns): the offset and length of every run of keys equal under
// Eq that is longer than one. A run is non-trivial when its start is followed by an equal key, so
// whether a start counts is known there, and its output slot k is the number of such starts
// before it. Offsets and lengths are of type V. Tiles publish (such starts, position of the last
// start of any run); positions grow, so the second part combines by max. Positions are counted
// in C like the starts (C is 64-bit for inputs of 2^32 items or more), so with 32-bit counts the
// pair is 8 bytes and packed with its status tag. The offset is written at the start; the length where the
// run ends (the next key starts a run, or the input ends), from the last start's position.
struct StartPair {
  C runs;
  C start;
};

struct StartPlus {
  __device__ __forceinline__ StartPair operator()(const StartPair& a, const StartPair& b) const {
    return StartPair{a.runs + b.runs, max(a.start, b.start)};
  }
};

// The tile's keys as loaded; once every thread has read them, the tile's outputs staged for
// coalesced stores: the offsets of the runs counted in the tile and the lengths of the counted
// runs that end in it (each needs two of the tile's items but the first and last, so neither
// exceeds NV / 2 + 1).
union NonTrivialStaging {
  __align__(16) T keys[MGPU_NV];
  struct {
    V offsets[MGPU_NV / 2 + 1];
    V lengths[MGPU_NV / 2 + 1];
  } out;
};

struct NonTrivialStorage {
  NonTrivialStaging tile;
  CtaScanStorageOf<StartPair> scan;
  StartPair tile_prefix;
  int open_at_start;  // the tile's first item continues a run (counted: it spans two items)
  int open_at_end;    // the tile's last item does not end its run
  i64 tile_id;
};

extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_non_trivial_runs(Input keys, V* offsets_out, V* lengths_out, u64 count,
                          u64* count_out, u64* tickets, u64 first_ticket,
                          TileStatusOf<StartPair> status) {
  __shared__ NonTrivialStorage storage;
  int tid = threadIdx.x;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  const StartPair none{0, 0};
  lookback_tiles(tickets, first_ticket, num_tiles, storage.tile_id, status, StartPlus(), none,
                 [&](i64 tile, const TileLookbackOf<StartPair, StartPlus>& lookback) {
    u64 base = (u64)tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    prefetch_later_tile(keys, tile, count);
    load_tile_to_shared_async(keys, base, n, keys.vector_ok_at(base), T(), storage.tile.keys, tid);
    // The keys on both sides of the tile decide whether its first key starts a run and whether
    // its last key ends one.
    T before = tid == 0 && base > 0 ? keys[base - 1] : T();
    int first = tid * MGPU_VT;
    bool owns_last = first < n && n <= first + MGPU_VT;
    T after = owns_last && base + n < count ? keys[base + n] : T();
    __syncthreads();

    // The thread's keys in registers, each compared once with the key before it: bit i of
    // `same_prev` when item i continues the run of item i - 1. The item after the tile's last
    // takes the key after the tile, so that the last item's comparison is with it. (Two
    // comparisons and 64-bit positions per item made this kernel instruction-bound: 92
    // instructions an item against the selection's 29, 0.6-0.85x CUB.)
    T k[MGPU_VT];
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) k[i] = storage.tile.keys[first + i];
    T prev = tid > 0 ? storage.tile.keys[first - 1] : before;
    T next = first + MGPU_VT < n ? storage.tile.keys[first + MGPU_VT] : after;
    if (owns_last) {
#pragma unroll
      for (int i = 0; i < MGPU_VT; ++i)
        if (first + i == n) k[i] = after;
    }
    unsigned same_prev = 0;
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if (Eq()(i == 0 ? prev : k[i - 1], k[i])) same_prev |= 1u << i;
    unsigned same_next = same_prev >> 1 | (unsigned)Eq()(k[MGPU_VT - 1], next) << (MGPU_VT - 1);
    unsigned valid = first >= n ? 0u
                     : n - first >= MGPU_VT ? (unsigned)((1ull << MGPU_VT) - 1)
                                            : (1u << (n - first)) - 1;
    // starts: bit i when item i starts a run; ends: when it is a run's last item; counted: when
    // it starts a run longer than one.
    unsigned starts = ~same_prev & valid, ends = ~same_next & valid;
    if (base + first == 0) starts |= valid & 1u;
    int last_i = n - 1 - first;  // the tile's last item, in the thread that owns it
    if (owns_last && base + n == count) ends |= 1u << last_i;
    unsigned counted = starts & ~ends;
    if (tid == 0 && n > 0) storage.open_at_start = !(starts & 1u);
    if (owns_last) storage.open_at_end = !((ends >> last_i) & 1u);
    StartPair thread_total{(C)__popc(counted),
                           starts ? (C)(base + first + 31 - __clz(starts)) : (C)0};
    // The scan's barriers follow every thread's reads of the keys: the staging may reuse them.
    StartPair tile_total;
    StartPair thread_prefix = lookback.cta_scan(thread_total, tile_total, storage.scan,
                                                &storage.tile_prefix);
    __syncthreads();
    StartPair prefix = storage.tile_prefix;
    // Offsets and lengths staged by their place among the tile's: offsets from the tile's first
    // counted run, lengths from the run that is open at the tile's start, if any.
    int rank = (int)thread_prefix.runs;
    for (unsigned m = counted; m; m &= m - 1)
      storage.tile.out.offsets[rank++] = (V)(base + first + __ffs(m) - 1);
    C start_before = max(prefix.start, thread_prefix.start);
    for (unsigned m = ends & ~starts; m; m &= m - 1) {
      int i = __ffs(m) - 1;
      unsigned through = (2u << i) - 1;  // items 0..=i
      unsigned started = starts & through;
      u64 start = started ? base + first + 31 - __clz(started) : (u64)start_before;
      int at = (int)thread_prefix.runs + __popc(counted & through) - 1 + storage.open_at_start;
      storage.tile.out.lengths[at] = (V)(base + first + i + 1 - start);
    }
    if (owns_last && base + n == count)
      *count_out = (u64)(prefix.runs + thread_prefix.runs + (C)__popc(counted));
    __syncthreads();
    C first_length = prefix.runs - (C)storage.open_at_start;
    int num_offsets = (int)tile_total.runs;
    int num_lengths = num_offsets + storage.open_at_start - storage.open_at_end;
#pragma unroll
    for (int i = 0; i < (MGPU_NV / 2 + MGPU_NT) / MGPU_NT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j < num_offsets) offsets_out[(u64)prefix.runs + j] = storage.tile.out.offsets[j];
      if (j < num_lengths) lengths_out[(u64)first_length + j] = storage.tile.out.lengths[j];
    }
  });
}
#endif
