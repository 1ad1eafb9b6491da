// kernel_mergesort.cu: merge and mergesort (the seed's MergesortKeys / Pairs / Indices and Merge).
//   mgpu_blocksort       each CTA sorts one tile of NV keys: odd-even transposition sort of VT keys
//                        per thread in registers, then log2(NT) merge rounds in shared memory.
//   mgpu_merge_partition merge path split of every output tile boundary of a merge pass.
//   mgpu_merge_pass      each CTA merges one output tile of a pass (runs of `width` pairwise).
//   mgpu_merge           merge of two separate sorted sequences, one output tile per CTA.
//   mgpu_merge4_*        four-way merge passes (below); mgpu_merge4_pass_searching finds its own
//                        tiles' splits where one wave holds every tile.
// A module compiles the kernels whose MGPU_WANT_<kernel> the host defines (jit.rs, Module::kernels):
// a sort of one tile needs mgpu_blocksort alone, larger sorts add the merge passes' kernels, a merge
// of two sequences needs mgpu_merge_partition and mgpu_merge.

struct SortStorage {
  __align__(16) K keys[MGPU_SLOTS];
#if MGPU_VALUES
  __align__(16) V values[MGPU_SLOTS];
#endif
};

// Keys without NaN. Under a built-in order of floating-point keys (MGPU_NAN_FREE_ORDER), the
// total order's NaN test costs every comparison a second compare; CompNanFree orders keys without
// NaN the same way with one. The blocksort tests its tile, and marks a sort whose keys hold a NaN
// by writing the host's `token` (new for each sort) to `nan_flag`; the merge passes read the mark.
// WITH_ORDER runs its statement with `comp` a CompNanFree where `nan_free`, else a Comp.
#if MGPU_NAN_FREE_ORDER
#define WITH_ORDER(nan_free, ...) \
  do {                            \
    if (nan_free) {               \
      CompNanFree comp;           \
      __VA_ARGS__;                \
    } else {                      \
      Comp comp;                  \
      __VA_ARGS__;                \
    }                             \
  } while (0)
#else
#define WITH_ORDER(nan_free, ...) \
  do {                            \
    Comp comp;                    \
    __VA_ARGS__;                  \
  } while (0)
#endif

// Whether a merge pass may compare with CompNanFree: no blocksort marked the sort.
__device__ __forceinline__ bool sort_nan_free(const unsigned* nan_flag, unsigned token) {
#if MGPU_NAN_FREE_ORDER
  return nan_flag != nullptr && *nan_flag != token;
#else
  return false;
#endif
}

// Writes a thread's VT results to the shared tile at tid*VT (only the first `count` of the tile).
template <typename Storage, typename Key>
__device__ __forceinline__ void thread_to_shared(Storage& s, const Key (&k)[MGPU_VT],
                                                 const V (&v)[MGPU_VT], int count, int tid) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = tid * MGPU_VT + i;
    if (j < count) {
      s.keys[j] = k[i];
#if MGPU_VALUES
      s.values[j] = v[i];
#endif
    }
  }
}

// Tile of `count` elements: global (strided, coalesced) -> shared.
__device__ __forceinline__ void load_tile(SortStorage& s, const K* keys, const V* values, u64 base,
                                          int count, int tid) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + tid;
    if (j < count) {
      s.keys[j] = keys[base + j];
#if MGPU_VALUES == 1
      s.values[j] = values[base + j];
#elif MGPU_VALUES == 2
      s.values[j] = (V)(base + j);  // indices: the value is the key's input position
#endif
    }
  }
}

// Shared tile -> global at `dest`, the first `count` elements. A full tile at a 16-byte aligned
// address goes as 16-byte vectors (a quarter of the store instructions for 4-byte keys).
template <typename X>
__device__ __forceinline__ void tile_to_global(const X* shared, X* dest, int count, int tid) {
  constexpr bool VEC_OK = (sizeof(X) == 4 || sizeof(X) == 8 || sizeof(X) == 16) &&
                          MGPU_NV * sizeof(X) % 16 == 0;
  if (VEC_OK && count == MGPU_NV && (size_t)dest % 16 == 0) {
    constexpr int CHUNKS = MGPU_NV * sizeof(X) / 16;
#pragma unroll
    for (int i = 0; i < (CHUNKS + MGPU_NT - 1) / MGPU_NT; ++i) {
      int c = i * MGPU_NT + tid;
      if (CHUNKS % MGPU_NT == 0 || c < CHUNKS)
        reinterpret_cast<uint4*>(dest)[c] = reinterpret_cast<const uint4*>(shared)[c];
    }
  } else {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j < count) dest[j] = shared[j];
    }
  }
}

__device__ __forceinline__ void store_tile(const SortStorage& s, K* keys, V* values, u64 base,
                                           int count, int tid) {
  tile_to_global(s.keys, keys + base, count, tid);
#if MGPU_VALUES
  tile_to_global(s.values, values + base, count, tid);
#endif
}

// Sorts a tile of `n` keys (and values) that each thread holds VT consecutive of, in `k` and `v`
// (unsorted; read from `s`, which the caller must not read again before a barrier): an odd-even
// transposition sort of each thread's keys in registers, then log2(NT) merge rounds in shared
// memory. The sorted tile ends in `s` (its first `n` slots). Any key type and order: a sort's
// keys, or the segmented sort's (segment, key).
template <typename Storage, typename Key, typename C>
__device__ __forceinline__ void sort_tile(Storage& s, Key (&k)[MGPU_VT], V (&v)[MGPU_VT], int n,
                                          C comp) {
  int tid = threadIdx.x;
  thread_sort(k, v, max(0, min(MGPU_VT, n - tid * MGPU_VT)), comp);
  __syncthreads();
  thread_to_shared(s, k, v, n, tid);
  __syncthreads();

  // Merge rounds: groups of `coop` threads merge two sorted runs of coop/2 * VT keys.
#pragma unroll 1
  for (int coop = 2; coop <= MGPU_NT; coop *= 2) {
    int first = tid & ~(coop - 1);            // first thread of the group
    int start = first * MGPU_VT;              // first key of the group's A run
    int a_count = max(0, min(coop / 2 * MGPU_VT, n - start));
    int b_count = max(0, min(coop / 2 * MGPU_VT, n - start - a_count));
    int total = a_count + b_count;
    int diag = min((tid - first) * MGPU_VT, total);
    int a = merge_path(s.keys + start, a_count, s.keys + start + a_count, b_count, diag, comp);
    int from[MGPU_VT];
    serial_merge(s.keys, {start + a, start + a_count, start + a_count + diag - a, start + total}, k,
                 from, comp);
#if MGPU_VALUES
    // By source index (outputs past a partial tile's end gather slots past it: never stored).
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) v[i] = s.values[from[i]];
#endif
    __syncthreads();
    // Outputs beyond the group's total are not written (the tail of a partial tile).
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = start + diag + i;
      if (diag + i < total) {
        s.keys[j] = k[i];
#if MGPU_VALUES
        s.values[j] = v[i];
#endif
      }
    }
    __syncthreads();
  }
}

// Sorts the tile of `n` keys at `base` of keys_in (and values) to keys_out (the same place may be
// both: the tile is staged in shared memory), marking `nan_flag` (unless null) where it holds a
// NaN (WITH_ORDER).
__device__ __forceinline__ void block_sort(SortStorage& s, const K* keys_in, const V* values_in,
                                           K* keys_out, V* values_out, u64 base, int n,
                                           unsigned* nan_flag, unsigned token) {
  int tid = threadIdx.x;
  load_tile(s, keys_in, values_in, base, n, tid);
  __syncthreads();
  K k[MGPU_VT];
  V v[MGPU_VT];
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = min(tid * MGPU_VT + i, MGPU_NV - 1);
    k[i] = s.keys[j];
#if MGPU_VALUES
    v[i] = s.values[j];
#endif
  }
#if MGPU_NAN_FREE_ORDER
  bool nan = false;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) nan |= tid * MGPU_VT + i < n && !(k[i] == k[i]);
  nan = __syncthreads_or(nan);
  if (nan && tid == 0 && nan_flag != nullptr) *nan_flag = token;
  WITH_ORDER(!nan, sort_tile(s, k, v, n, comp));
#else
  sort_tile(s, k, v, n, Comp());
#endif
  store_tile(s, keys_out, values_out, base, n, tid);
}

#ifdef MGPU_WANT_mgpu_blocksort
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_blocksort(const K* keys_in, const V* values_in, K* keys_out, V* values_out, u64 count,
                   unsigned* nan_flag, unsigned token) {
  grid_launch_dependents();  // the next kernel of the chain comes up early
  __shared__ SortStorage s;
  u64 base = (u64)blockIdx.x * MGPU_NV;
  block_sort(s, keys_in, values_in, keys_out, values_out, base,
             (int)min((u64)MGPU_NV, count - base), nan_flag, token);
}
#endif

// The runs of a merge pass: output position `gid` lies in the pair of runs starting at
// `pair_start`; A = [a0, a1), B = [a1, b1).
struct RunPair {
  u64 start, a0, a1, b1;
};
__device__ __forceinline__ RunPair run_pair(u64 gid, u64 width, u64 count) {
  RunPair r;
  r.start = gid / (2 * width) * (2 * width);
  r.a0 = r.start;
  r.a1 = min(count, r.start + width);
  r.b1 = min(count, r.a1 + width);
  return r;
}

// partitions[i] = where A stands at output i * step, for i in 0..num_partitions, found by the
// i-th team of `lanes` lanes (SearchTeam). A merge pass (standalone == 0): the absolute index of
// the first A element not yet output, runs of `width` in a_keys; `step` divides NV (a four-way
// pass's splits may be finer than its tiles). A standalone merge of a_keys and b_keys (step NV):
// the count of A elements before output i * NV.
#ifdef MGPU_WANT_mgpu_merge_partition
extern "C" __global__ void mgpu_merge_partition(const K* a_keys, u64 a_total, const K* b_keys,
                                                u64 b_total, int standalone, u64 width, u64 step,
                                                u64 num_partitions, u64* partitions, int lanes) {
  grid_dependency_wait();
  grid_launch_dependents();  // the next kernel comes up early, one kernel ahead at most
  Comp comp;
  SearchTeam team(lanes);
  u64 i = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
  if (i >= num_partitions) return;  // the whole team
  u64 split;
  if (standalone) {
    u64 diag = min(i * step, a_total + b_total);
    split = team_merge_path(team, a_keys, a_total, b_keys, b_total, diag, comp);
  } else {
    u64 count = a_total;
    u64 gid = min(i * step, count);
    RunPair r = run_pair(gid, width, count);
    u64 diag = gid - r.start;
    split = r.a0 + team_merge_path(team, a_keys + r.a0, r.a1 - r.a0, a_keys + r.a1, r.b1 - r.a1,
                                   diag, comp);
  }
  if (team.rank == 0) partitions[i] = split;
}
#endif

// Whether elements of X can be copied with cp.async from every pointer (4, 8 or 16 bytes, aligned).
template <typename X, int R>
__device__ __forceinline__ bool async_copyable(const X* const (&src)[R]) {
  constexpr bool SIZE_OK = sizeof(X) == 4 || sizeof(X) == 8 || sizeof(X) == 16;
  // Naturally aligned types always are: the copy through registers is then not compiled at all
  // (unrolled, it kept VT addresses live and spilled at 40 registers with NVRTC 13.0).
  if constexpr (SIZE_OK && alignof(X) >= sizeof(X)) return true;
  size_t bits = 0;
#pragma unroll
  for (int r = 0; r < R; ++r) bits |= (size_t)src[r];
  return SIZE_OK && bits % sizeof(X) == 0;
}

// shared[j] = src[r][j] for j < ends[R - 1], strided over the CTA, where range r holds
// ends[r - 1] <= j < ends[r] (the caller offsets src[r] by -ends[r - 1]). Selecting the pointer
// (not branching) gives one load per element and 32-bit offsets.
template <typename X, int R>
__device__ __forceinline__ const X* range_source(const X* const (&src)[R], const int (&ends)[R],
                                                 int j) {
  const X* p = src[0];
#pragma unroll
  for (int r = 1; r < R; ++r)
    if (j >= ends[r - 1]) p = src[r];
  return p + j;
}

// With cp.async (only where async_copyable; complete after cp_async_wait).
template <typename X, int R>
__device__ __forceinline__ void ranges_to_shared_async(X* shared, const X* const (&src)[R],
                                                       const int (&ends)[R], int tid) {
  if constexpr (sizeof(X) == 4 || sizeof(X) == 8 || sizeof(X) == 16) {
    // Not unrolled: the copies complete asynchronously, so nothing is gained by issuing them
    // from straight-line code, and unrolled, the 64-bit addresses of all VT copies stayed live
    // (mgpu_merge spilled at VT = 17 with 64 registers).
    // Stops at the end of the ranges: a four-way tile's pairs fill about half a tile each.
#pragma unroll 1
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j >= ends[R - 1]) break;
      cp_async<sizeof(X)>(shared + j, range_source(src, ends, j));
    }
  }
}

// Through registers.
template <typename X, int R>
__device__ __forceinline__ void ranges_to_shared_sync(X* shared, const X* const (&src)[R],
                                                      const int (&ends)[R], int tid) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + tid;
    if (j < ends[R - 1]) shared[j] = *range_source(src, ends, j);
  }
}

// Four ranges (a four-way tile) go as two pairs: one pass over four ranges kept more registers
// live (mgpu_merge4_pass spilled at 64 registers, for u16 keys through registers and for i32 keys
// with cp.async).
template <typename X, int R>
__device__ __forceinline__ void ranges_to_shared(X* shared, const X* const (&src)[R],
                                                 const int (&ends)[R], int tid) {
  if constexpr (R == 4) {
    int half = ends[1];
    const X* first[2] = {src[0], src[1]};
    const X* second[2] = {src[2] + half, src[3] + half};
    const int first_ends[2] = {ends[0], half}, second_ends[2] = {ends[2] - half, ends[3] - half};
    ranges_to_shared(shared, first, first_ends, tid);
    ranges_to_shared(shared + half, second, second_ends, tid);
  } else if (async_copyable(src)) {
    ranges_to_shared_async(shared, src, ends, tid);
  } else {
    ranges_to_shared_sync(shared, src, ends, tid);
  }
}

// A merge tile's ranges to shared memory, keys then values, with cp.async where it can (no
// registers in flight, so the kernels stay small enough for high occupancy). Returns with the keys
// in place for the whole CTA and whether the values are on their way: their copy overlaps the
// keys' merge, and values_to_shared completes it.
template <int R>
__device__ __forceinline__ bool keys_to_shared(SortStorage& s, const K* const (&src_k)[R],
                                               const V* const (&src_v)[R], const int (&ends)[R],
                                               int tid) {
  ranges_to_shared(s.keys, src_k, ends, tid);
  cp_async_commit();
#if MGPU_VALUES
  bool async_v = async_copyable(src_v);
  if (async_v) ranges_to_shared(s.values, src_v, ends, tid);
  cp_async_commit();
  cp_async_wait<1>();  // this thread's keys
#else
  bool async_v = false;
  cp_async_wait_all();
#endif
  __syncthreads();
  return async_v;
}

// The values after the keys' merge: waited for, or copied now where cp.async could not.
template <int R>
__device__ __forceinline__ void values_to_shared(SortStorage& s, const V* const (&src_v)[R],
                                                 const int (&ends)[R], bool async_v, int tid) {
#if MGPU_VALUES
  if (!async_v) ranges_to_shared(s.values, src_v, ends, tid);
  cp_async_wait_all();
  __syncthreads();
#endif
}

// After a merge in shared memory: the values follow their keys (gathered by source index), then
// the merged tile goes back to shared memory in order.
__device__ __forceinline__ void merged_to_shared(SortStorage& s, const K (&k)[MGPU_VT],
                                                 V (&v)[MGPU_VT], const int (&from)[MGPU_VT],
                                                 int total, int tid) {
#if MGPU_VALUES
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) v[i] = s.values[from[i]];
#endif
  __syncthreads();
  thread_to_shared(s, k, v, total, tid);
  __syncthreads();
}

// Merges A = a_keys[a_begin, a_end) and B = b_keys[b_begin, b_end) (at most NV together) into
// out[out_base ..].
template <typename C>
__device__ __forceinline__ void merge_tile(SortStorage& s, const K* a_keys, const V* a_values,
                                           u64 a_begin, u64 a_end, const K* b_keys,
                                           const V* b_values, u64 b_begin, u64 b_end, K* keys_out,
                                           V* values_out, u64 out_base, C comp) {
  int tid = threadIdx.x;
  int a_count = (int)(a_end - a_begin), b_count = (int)(b_end - b_begin);
  int total = a_count + b_count;
  // A and B read as one range: element j comes from A below a_count, else from B.
  const int ends[2] = {a_count, total};
  const K* src_k[2] = {a_keys + a_begin, b_keys + b_begin - a_count};
  const V* src_v[2] = {a_values + a_begin, b_values + b_begin - a_count};
  bool async_v = keys_to_shared(s, src_k, src_v, ends, tid);
  K k[MGPU_VT];
  V v[MGPU_VT];
  int diag = min(tid * MGPU_VT, total);
  int a = merge_path(s.keys, a_count, s.keys + a_count, b_count, diag, comp);
  int from[MGPU_VT];
  serial_merge(s.keys, {a, a_count, a_count + diag - a, total}, k, from, comp);
  values_to_shared(s, src_v, ends, async_v, tid);
  merged_to_shared(s, k, v, from, total, tid);
  store_tile(s, keys_out, values_out, out_base, total, tid);
}

// The output tile of this CTA in a merge of `count` outputs: its index and [begin, end).
struct OutTile {
  u64 index, begin, end;
};
__device__ __forceinline__ OutTile out_tile(u64 count) {
  u64 index = blockIdx.x, begin = index * MGPU_NV;
  return {index, begin, min(begin + MGPU_NV, count)};
}

#ifdef MGPU_WANT_mgpu_merge_pass
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_merge_pass(const K* keys_in, const V* values_in, K* keys_out, V* values_out, u64 count,
                    u64 width, const u64* partitions, const unsigned* nan_flag, unsigned token) {
  __shared__ SortStorage s;
  auto [tile, out_begin, out_end] = out_tile(count);
  RunPair r = run_pair(out_begin, width, count);
  u64 a_begin = partitions[tile];
  u64 b_begin = r.a1 + (out_begin - r.start) - (a_begin - r.a0);
  u64 a_end, b_end;
  if (out_end >= r.b1) {  // the last tile of this pair of runs
    a_end = r.a1;
    b_end = r.b1;
  } else {
    a_end = partitions[tile + 1];
    b_end = r.a1 + (out_end - r.start) - (a_end - r.a0);
  }
  WITH_ORDER(sort_nan_free(nan_flag, token),
             merge_tile(s, keys_in, values_in, a_begin, a_end, keys_in, values_in, b_begin,
                        b_end, keys_out, values_out, out_begin, comp));
}
#endif

#ifdef MGPU_WANT_mgpu_merge
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_merge(const K* a_keys, const V* a_values, u64 a_count, const K* b_keys,
               const V* b_values, u64 b_count, K* keys_out, V* values_out,
               const u64* partitions) {
  grid_dependency_wait();
  grid_launch_dependents();  // the next kernel comes up early, one kernel ahead at most
  __shared__ SortStorage s;
  Comp comp;
  auto [tile, out_begin, out_end] = out_tile(a_count + b_count);
  u64 a_begin = partitions[tile], a_end = partitions[tile + 1];
  u64 b_begin = out_begin - a_begin, b_end = out_end - a_end;
  merge_tile(s, a_keys, a_values, a_begin, a_end, b_keys, b_values, b_begin, b_end, keys_out,
             values_out, out_begin, comp);
}
#endif

// ---- Four-way merge passes: two levels of the merge tree per trip through memory ----
// Runs A, B, C and D of `width` keys merge as merge(merge(A, B), merge(C, D)): stable, because the
// runs are consecutive in input order and every level puts its first input first on ties.

// The four runs of a four-way pass that output position `gid` falls in: [r[i], r[i + 1]).
template <typename I>
struct RunGroup {
  I r[5];
};
template <typename I>
__device__ __forceinline__ RunGroup<I> run_group(I gid, I width, I count) {
  RunGroup<I> g;
  g.r[0] = gid / (4 * width) * (4 * width);
#pragma unroll
  for (int i = 1; i < 5; ++i) g.r[i] = min(count, g.r[i - 1] + width);
  return g;
}

// The key at position `pos` of merge(X, Y), where `s` of the first `pos` outputs came from X
// (pos < nx + ny).
template <typename I>
__device__ __forceinline__ K merged_at(const K* x, I nx, const K* y, I ny, I pos, I s, Comp comp) {
  I j = pos - s;
  if (j >= ny) return x[s];
  if (s >= nx) return y[j];
  K xk = x[s], yk = y[j];
  return comp(yk, xk) ? yk : xk;
}

// The last of the first `pos` outputs of merge(X, Y) (pos > 0), `s` of which came from X: Y's
// candidate is the later one unless it is strictly before X's.
template <typename I>
__device__ __forceinline__ K merged_last(const K* x, const K* y, I pos, I s, Comp comp) {
  I j = pos - s;
  if (s == 0) return y[j - 1];
  if (j == 0) return x[s - 1];
  K xk = x[s - 1], yk = y[j - 1];
  return comp(yk, xk) ? xk : yk;
}

// merge_path_within in merge(A, B) at `x` (answer in [s_begin, s_end]) and in merge(C, D) at `y`
// (in [t_begin, t_end]) side by side: each step's loads for both go out together, so a probe of
// the four-way split waits for the longer search, not for the two one after the other.
template <typename I>
__device__ __forceinline__ void merge_paths_within(const K* a, const K* b, I x, I s_begin, I s_end,
                                                   const K* c, const K* d, I y, I t_begin, I t_end,
                                                   I& s, I& t, Comp comp) {
  while (s_begin < s_end || t_begin < t_end) {
    bool s_on = s_begin < s_end, t_on = t_begin < t_end;
    I s_mid = (s_begin + s_end) / 2, t_mid = (t_begin + t_end) / 2;
    K ak{}, bk{}, ck{}, dk{};
    if (s_on) {
      ak = a[s_mid];
      bk = b[x - 1 - s_mid];
    }
    if (t_on) {
      ck = c[t_mid];
      dk = d[y - 1 - t_mid];
    }
    // Take the first run's element when the second's is not strictly before it (stable).
    if (s_on) {
      if (!comp(bk, ak))
        s_begin = s_mid + 1;
      else
        s_end = s_mid;
    }
    if (t_on) {
      if (!comp(dk, ck))
        t_begin = t_mid + 1;
      else
        t_end = t_mid;
    }
  }
  s = s_begin;
  t = t_begin;
}

// How many of the first `diag` outputs of the pair of runs at `start` (lengths n1, n2) come from
// the first run, read from the two-way splits of the same width, one every `step` outputs (diag
// is a multiple of step).
template <typename I>
__device__ __forceinline__ I pair_split(const u64* pairs, I step, I start, I n1, I n2, I diag) {
  return diag == n1 + n2 ? n1 : (I)(pairs[(start + diag) / step] - start);
}

// SearchTeam::narrow, which also moves the probes' splits (s, t): the last taken's to
// (s_taken, t_taken), the first not taken's to (s_not, t_not).
template <typename I>
__device__ __forceinline__ void bisect_team(const SearchTeam& team, bool taken, unsigned probes,
                                            I mid, I s, I t, I& lo, I& hi, I& s_taken,
                                            I& t_taken, I& s_not, I& t_not) {
  int last, first;
  team.narrow(taken, probes, mid, lo, hi, last, first);
  I s_t = team.from(s, last < 0 ? 0 : last), s_n = team.from(s, first < 0 ? 0 : first);
  I t_t = team.from(t, last < 0 ? 0 : last), t_n = team.from(t, first < 0 ? 0 : first);
  if (last >= 0) {
    s_taken = s_t;
    t_taken = t_t;
  }
  if (first >= 0) {
    s_not = s_n;
    t_not = t_n;
  }
}

// The four-way split at output `gid` (a multiple of NV) of a four-way pass over runs of `width`:
// q[r] = where run r stands, on the team's rank 0. `pairs` holds the two-way splits of the same
// width (mgpu_merge_partition), which split merge(A, B) and merge(C, D) at every multiple of
// `step` (a divisor of NV). The split x between AB = merge(A, B) and CD = merge(C, D) is first
// found among the multiples of step, where AB's and CD's keys come straight from `pairs`, then
// inside that window of step, where each probe finds its AB and CD keys with merge path searches
// bounded by what earlier probes learned. One thread bisecting alone waits for ~13 probes of two
// searches each (60-75 us a pass under ncu at 2^20, 179 boundaries); a step finer than NV
// narrows the window, and with it the inner searches.
template <typename I>
__device__ __forceinline__ void four_way_split(const SearchTeam& team, const K* keys, I count,
                                               I width, I step, const u64* pairs, I gid,
                                               I (&q)[4], Comp comp) {
  RunGroup<I> g = run_group(gid, width, count);
  const K* a = keys + g.r[0];
  const K* b = keys + g.r[1];
  const K* c = keys + g.r[2];
  const K* d = keys + g.r[3];
  I na = g.r[1] - g.r[0], nb = g.r[2] - g.r[1], nc = g.r[3] - g.r[2], nd = g.r[4] - g.r[3];
  I nab = na + nb, ncd = nc + nd;
  I k = gid - g.r[0];
  I lo = k > ncd ? k - ncd : 0, hi = min(k, nab);
  // Merge path over AB and CD: x = the first position in [lo, hi) where AB's key is not taken,
  // i.e. CD[k - 1 - x] is strictly before AB[x]; hi if none.
  // Coarse: grid points x = j * step in [lo, hi).
  I j_first = (lo + step - 1) / step, j_end = hi == 0 ? 0 : (hi - 1) / step + 1;
  j_end = max(j_end, j_first);
  // The splits at the last grid point taken (s_true, t_true) and the first not taken.
  I j_lo = j_first, j_hi = j_end, s_true = 0, t_true = 0, s_false = 0, t_false = 0;
  while (j_lo < j_hi) {
    unsigned probes;
    I j = team.probe(j_lo, j_hi - j_lo, probes), x = j * step;
    I s = 0, t = 0;
    bool taken = false;
    if (team.rank < probes) {
      s = pair_split(pairs, step, g.r[0], na, nb, x);
      t = pair_split(pairs, step, g.r[2], nc, nd, k - x);
      K ab = merged_at(a, na, b, nb, x, s, comp);
      K cd = merged_last(c, d, k - x, t, comp);
      taken = !comp(cd, ab);
    }
    bisect_team(team, taken, probes, j, s, t, j_lo, j_hi, s_true, t_true, s_false, t_false);
  }
  bool has_true = j_lo > j_first, has_false = j_lo < j_end;
  lo = has_true ? (j_lo - 1) * step + 1 : lo;
  hi = has_false ? j_lo * step : hi;
  // Fine, in [lo, hi] (at most step wide). Invariant: for every x in [lo, hi], s(x) (A's share of
  // AB's first x) lies in [s_lo, s_hi] and t(k - x) (C's share of CD's first k - x) in
  // [t_lo, t_hi]. The grid points on either side give the first bounds (s grows with x, t with
  // k - x); where one is missing, the grid point just beyond the window stands in. Each round of
  // probes narrows them.
  I s_lo, s_hi, t_lo, t_hi;
  if (has_true) {
    s_lo = s_true;
    t_hi = t_true;
  } else {
    I ga = lo / step * step;
    s_lo = pair_split(pairs, step, g.r[0], na, nb, ga);
    // k - ga >= k - lo
    t_hi = k - ga >= ncd ? nc : pair_split(pairs, step, g.r[2], nc, nd, k - ga);
  }
  if (has_false) {
    s_hi = s_false;
    t_lo = t_false;
  } else {
    I gc = (k - hi) / step * step;
    t_lo = pair_split(pairs, step, g.r[2], nc, nd, gc);
    s_hi = k - gc >= nab ? na : pair_split(pairs, step, g.r[0], na, nb, k - gc);  // >= hi
  }
  // s(x) and t(y) by merge path searches within the bounds.
  auto splits = [&](I x, I y, I& s, I& t) {
    merge_paths_within(a, b, x, max(s_lo, x > nb ? x - nb : 0), min(s_hi, min(x, na)), c, d, y,
                       max(t_lo, y > nd ? y - nd : 0), min(t_hi, min(y, nc)), s, t, comp);
  };
  I s = 0, t = 0;
  while (lo < hi) {
    unsigned probes;
    I x = team.probe(lo, hi - lo, probes), y = k - 1 - x;
    bool taken = false;
    if (team.rank < probes) {
      splits(x, y, s, t);
      taken = !comp(merged_at(c, nc, d, nd, y, t, comp), merged_at(a, na, b, nb, x, s, comp));
    }
    bisect_team(team, taken, probes, x, s, t, lo, hi, s_lo, t_hi, s_hi, t_lo);
  }
  if (team.rank == 0) {
    splits(lo, k - lo, s, t);
    q[0] = g.r[0] + s;
    q[1] = g.r[1] + (lo - s);
    q[2] = g.r[2] + t;
    q[3] = g.r[3] + (k - lo - t);
  }
}

// quads[4 i + r] = where run r stands at output i * NV (four_way_split), found by the i-th team
// of `lanes` lanes (SearchTeam).
#ifdef MGPU_WANT_mgpu_merge4_partition
extern "C" __global__ void mgpu_merge4_partition(const K* keys, u64 count, u64 width, u64 step,
                                                 const u64* pairs, u64 num_partitions,
                                                 u64* quads, int lanes) {
  grid_dependency_wait();
  grid_launch_dependents();  // the next kernel comes up early, one kernel ahead at most
  SearchTeam team(lanes);
  u64 i = ((u64)blockIdx.x * blockDim.x + threadIdx.x) / lanes;
  if (i >= num_partitions) return;  // the whole team
  u64 q[4];
  four_way_split(team, keys, count, width, step, pairs, min(i * MGPU_NV, count), q, Comp());
  if (team.rank == 0) {
#pragma unroll
    for (int r = 0; r < 4; ++r) quads[4 * i + r] = q[r];
  }
}
#endif

// Merges one output tile of a four-way pass, where the runs stand at `q0` at its start and at
// `q1` at its end (unread for a group's last tile, which ends at the runs' ends): the tile's parts
// of A, B, C and D go to shared memory side by side; the first level merges A with B and C with
// D in one sweep (a thread whose outputs straddle the two merges switches runs mid-way), the
// second merges the two results. Without out_tile (mgpu_merge_pass's opening): through it, 64-bit
// keys at 256x9x3 took 72 registers, not 66 (NVRTC 13.5).
// The merge in `comp`'s order (WITH_ORDER) is a function of its own, so that only it is
// compiled twice: with the loads in both, f32 keys at 256x23x6 spilled (NVRTC 13.0).
template <typename C>
__device__ __forceinline__ void merge4_levels(SortStorage& s, const int (&ends)[4],
                                              const V* const (&src_v)[4], bool async_v,
                                              K* keys_out, V* values_out, u64 out_begin, C comp);

__device__ __forceinline__ void merge4_tile(SortStorage& s, const K* keys_in, const V* values_in,
                                            K* keys_out, V* values_out, u64 count, u64 width,
                                            const u64* q0, const u64* q1, bool nan_free) {
  int tid = threadIdx.x;
  u64 tile = blockIdx.x;
  u64 out_begin = tile * MGPU_NV;
  u64 out_end = min(out_begin + MGPU_NV, count);
  RunGroup<u64> g = run_group(out_begin, width, count);
  bool last = out_end >= g.r[4];  // the group's last tile ends at its runs' ends
  u64 begin[4];
  int ends[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    begin[r] = q0[r];
    u64 end = last ? g.r[r + 1] : q1[r];
    ends[r] = (r ? ends[r - 1] : 0) + (int)(end - begin[r]);
  }
  const K* src_k[4];
  const V* src_v[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    int offset = r ? ends[r - 1] : 0;
    src_k[r] = keys_in + begin[r] - offset;
    src_v[r] = values_in + begin[r] - offset;
  }
  bool async_v = keys_to_shared(s, src_k, src_v, ends, tid);
  WITH_ORDER(nan_free,
             merge4_levels(s, ends, src_v, async_v, keys_out, values_out, out_begin, comp));
}

template <typename C>
__device__ __forceinline__ void merge4_levels(SortStorage& s, const int (&ends)[4],
                                              const V* const (&src_v)[4], bool async_v,
                                              K* keys_out, V* values_out, u64 out_begin, C comp) {
  int tid = threadIdx.x;
  int na = ends[0], nab = ends[1], nabc = ends[2], total = ends[3];
  // First level: outputs [0, nab) merge A and B, outputs [nab, total) merge C and D.
  K k[MGPU_VT];
  V v[MGPU_VT];
  int from[MGPU_VT];
  int diag = min(tid * MGPU_VT, total);
  bool in_ab = diag < nab;
  int base = in_ab ? 0 : nab, mid = in_ab ? na : nabc, end = in_ab ? nab : total;
  int d = diag - base;
  int split = merge_path(s.keys + base, mid - base, s.keys + mid, end - mid, d, comp);
  MergeRuns runs = {base + split, mid, mid + d - split, end};
  if (in_ab && diag + MGPU_VT > nab) {
    // The one thread whose outputs straddle the two merges, in a branch of its own: in the common
    // loop, the run switch cost every step of every thread.
    serial_merge(s.keys, runs, k, from, comp, nab - diag, {nab, nabc, nabc, total});
  } else {
    serial_merge(s.keys, runs, k, from, comp);
  }
  values_to_shared(s, src_v, ends, async_v, tid);
  merged_to_shared(s, k, v, from, total, tid);

  // Second level: merge(A, B) = [0, nab) with merge(C, D) = [nab, total).
  split = merge_path(s.keys, nab, s.keys + nab, total - nab, diag, comp);
  serial_merge(s.keys, {split, nab, nab + diag - split, total}, k, from, comp);
  merged_to_shared(s, k, v, from, total, tid);
  store_tile(s, keys_out, values_out, out_begin, total, tid);
}

#ifdef MGPU_WANT_mgpu_merge4_pass
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_merge4_pass(const K* keys_in, const V* values_in, K* keys_out, V* values_out, u64 count,
                     u64 width, const u64* quads, const unsigned* nan_flag, unsigned token) {
  __shared__ SortStorage s;
  const u64* q0 = quads + 4 * (u64)blockIdx.x;
  merge4_tile(s, keys_in, values_in, keys_out, values_out, count, width, q0, q0 + 4,
              sort_nan_free(nan_flag, token));
}
#endif

// A four-way pass whose CTAs find their own tile's four-way splits (four_way_split, a warp at
// each end) from the two-way splits `pairs`: where tiles are few, one launch in the chain fewer
// than mgpu_merge4_partition, then mgpu_merge4_pass. Each boundary is searched twice, by the
// tiles on either side of it. Only for sorts of fewer than 2^26 keys (the host's rule), so the
// search counts in 32 bits: in 64 it took 80 registers, one CTA of 512 threads per SM. In 32,
// 4-byte keys and values fit 64 (1024 threads per SM); 8-byte ones, and sub-word keys with
// indices, spill there (NVRTC 13.0 and 13.5).
#ifdef MGPU_WANT_mgpu_merge4_pass_searching
#define MGPU_SEARCHING_CTAS \
  (sizeof(K) == 4 && (MGPU_VALUES == 0 || sizeof(V) == 4) && MGPU_NT <= 512 ? 1024 / MGPU_NT : 1)
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_SEARCHING_CTAS)
    mgpu_merge4_pass_searching(const K* keys_in, const V* values_in, K* keys_out,
                               V* values_out, u64 count, u64 width, u64 step,
                               const u64* pairs, const unsigned* nan_flag, unsigned token) {
  __shared__ SortStorage s;
  __shared__ u64 q[2][4];
  int warp = threadIdx.x / MGPU_WARP;
  if (warp < 2) {
    SearchTeam team(MGPU_WARP);
    unsigned found[4];
    unsigned gid = (unsigned)min(((u64)blockIdx.x + warp) * MGPU_NV, count);
    four_way_split<unsigned>(team, keys_in, (unsigned)count, (unsigned)width, (unsigned)step,
                             pairs, gid, found, Comp());
    if (team.rank == 0) {
#pragma unroll
      for (int r = 0; r < 4; ++r) q[warp][r] = found[r];
    }
  }
  __syncthreads();
  merge4_tile(s, keys_in, values_in, keys_out, values_out, count, width, q[0], q[1],
              sort_nan_free(nan_flag, token));
}
#endif
