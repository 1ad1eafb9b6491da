// kernel_mergesort.cu: merge and mergesort (the seed's MergesortKeys / Pairs / Indices and Merge).
//   mgpu_blocksort       each CTA sorts one tile of NV keys: odd-even transposition sort of VT keys
//                        per thread in registers, then log2(NT) merge rounds in shared memory.
//   mgpu_merge_partition merge path split of every output tile boundary of a merge pass.
//   mgpu_merge_pass      each CTA merges one output tile of a pass (runs of `width` pairwise).
//   mgpu_merge           merge of two separate sorted sequences, one output tile per CTA.

struct SortStorage {
  __align__(16) K keys[MGPU_NV + 1];
#if MGPU_VALUES
  __align__(16) V values[MGPU_NV + 1];
#endif
};

// Writes a thread's VT results to the shared tile at tid*VT (only the first `count` of the tile).
__device__ __forceinline__ void thread_to_shared(SortStorage& s, const K (&k)[MGPU_VT],
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

__device__ __forceinline__ void store_tile(const SortStorage& s, K* keys, V* values, u64 base,
                                           int count, int tid) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = i * MGPU_NT + tid;
    if (j < count) {
      keys[base + j] = s.keys[j];
#if MGPU_VALUES
      values[base + j] = s.values[j];
#endif
    }
  }
}

extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_blocksort(const K* keys_in, const V* values_in, K* keys_out, V* values_out, u64 count) {
  __shared__ SortStorage s;
  Comp comp;
  int tid = threadIdx.x;
  u64 base = (u64)blockIdx.x * MGPU_NV;
  int n = (int)min((u64)MGPU_NV, count - base);
  load_tile(s, keys_in, values_in, base, n, tid);
  __syncthreads();

  // Each thread sorts its VT consecutive keys in registers.
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
    serial_merge(s.keys, start + a, start + a_count, start + a_count + diag - a, start + total, k,
                 from, comp);
#if MGPU_VALUES
    // Clamped: the indices of outputs past a partial tile's end may run past the storage.
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) v[i] = s.values[min(from[i], MGPU_NV)];
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
  store_tile(s, keys_out, values_out, base, n, tid);
}

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

// partitions[i] = where A stands at output i * NV, for i in 0..=num_tiles. A merge pass (standalone
// == 0): the absolute index of the first A element not yet output, runs of `width` in a_keys.
// A standalone merge of a_keys and b_keys: the count of A elements before output i * NV.
extern "C" __global__ void mgpu_merge_partition(const K* a_keys, u64 a_total, const K* b_keys,
                                                u64 b_total, int standalone, u64 width,
                                                u64 num_partitions, u64* partitions) {
  Comp comp;
  u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= num_partitions) return;
  if (standalone) {
    u64 diag = min(i * MGPU_NV, a_total + b_total);
    partitions[i] = merge_path<u64>(a_keys, a_total, b_keys, b_total, diag, comp);
  } else {
    u64 count = a_total;
    u64 gid = min(i * MGPU_NV, count);
    RunPair r = run_pair(gid, width, count);
    u64 diag = gid - r.start;
    partitions[i] = r.a0 + merge_path<u64>(a_keys + r.a0, r.a1 - r.a0, a_keys + r.a1, r.b1 - r.a1,
                                           diag, comp);
  }
}

// Whether elements of X can be copied with cp.async from both pointers (4, 8 or 16 bytes, aligned).
template <typename X>
__device__ __forceinline__ bool async_copyable(const X* a, const X* b) {
  constexpr bool SIZE_OK = sizeof(X) == 4 || sizeof(X) == 8 || sizeof(X) == 16;
  return SIZE_OK && (((size_t)a | (size_t)b) % sizeof(X)) == 0;
}

// shared[j] = (j < a_count ? a : b)[j] for j < total, strided over the CTA (b is offset by
// -a_count by the caller). With cp.async where async_copyable (complete after cp_async_wait), else
// through registers.
template <typename X>
__device__ __forceinline__ void range_to_shared(X* shared, const X* a, const X* b, int a_count,
                                                int total, int tid) {
  if (async_copyable(a, b)) {
    if constexpr (sizeof(X) == 4 || sizeof(X) == 8 || sizeof(X) == 16) {
      // Not unrolled: the copies complete asynchronously, so nothing is gained by issuing them
      // from straight-line code, and unrolled, the 64-bit addresses of all VT copies stayed live
      // (mgpu_merge spilled at VT = 17 with 64 registers).
#pragma unroll 1
      for (int i = 0; i < MGPU_VT; ++i) {
        int j = i * MGPU_NT + tid;
        if (j < total) cp_async<sizeof(X)>(shared + j, (j < a_count ? a : b) + j);
      }
    }
  } else {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j < total) shared[j] = (j < a_count ? a : b)[j];
    }
  }
}

// Merges A = a_keys[a_begin, a_end) and B = b_keys[b_begin, b_end) (at most NV together) into
// out[out_base ..].
__device__ __forceinline__ void merge_tile(SortStorage& s, const K* a_keys, const V* a_values,
                                           u64 a_begin, u64 a_end, const K* b_keys,
                                           const V* b_values, u64 b_begin, u64 b_end, K* keys_out,
                                           V* values_out, u64 out_base, Comp comp) {
  int tid = threadIdx.x;
  int a_count = (int)(a_end - a_begin), b_count = (int)(b_end - b_begin);
  int total = a_count + b_count;
  // A and B read as one range: element j comes from A below a_count, else from B. Selecting the
  // pointer (not branching) gives one load per element and 32-bit offsets.
  const K* a_k = a_keys + a_begin;
  const K* b_k = b_keys + b_begin - a_count;
#if MGPU_VALUES
  const V* a_v = a_values + a_begin;
  const V* b_v = b_values + b_begin - a_count;
#endif
  // Keys then values go straight to shared memory with cp.async (no registers in flight, so the
  // kernel stays small enough for high occupancy); the values' copy overlaps the keys' merge.
  range_to_shared(s.keys, a_k, b_k, a_count, total, tid);
  cp_async_commit();
#if MGPU_VALUES
  bool async_v = async_copyable(a_v, b_v);
  if (async_v) range_to_shared(s.values, a_v, b_v, a_count, total, tid);
  cp_async_commit();
  cp_async_wait<1>();  // this thread's keys
#else
  cp_async_wait_all();
#endif
  __syncthreads();
  K k[MGPU_VT];
  V v[MGPU_VT];
  int diag = min(tid * MGPU_VT, total);
  int a = merge_path(s.keys, a_count, s.keys + a_count, b_count, diag, comp);
  int from[MGPU_VT];
  serial_merge(s.keys, a, a_count, a_count + diag - a, total, k, from, comp);
#if MGPU_VALUES
  if (!async_v) range_to_shared(s.values, a_v, b_v, a_count, total, tid);
  cp_async_wait_all();
  __syncthreads();
  // Clamped: the indices of outputs past a partial tile's end may run past the storage.
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) v[i] = s.values[min(from[i], MGPU_NV)];
#endif
  __syncthreads();
  thread_to_shared(s, k, v, total, tid);
  __syncthreads();
  store_tile(s, keys_out, values_out, out_base, total, tid);
}

extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_merge_pass(const K* keys_in, const V* values_in, K* keys_out, V* values_out, u64 count,
                    u64 width, const u64* partitions) {
  __shared__ SortStorage s;
  Comp comp;
  u64 tile = blockIdx.x;
  u64 out_begin = tile * MGPU_NV;
  u64 out_end = min(out_begin + MGPU_NV, count);
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
  merge_tile(s, keys_in, values_in, a_begin, a_end, keys_in, values_in, b_begin, b_end, keys_out,
             values_out, out_begin, comp);
}

extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_merge(const K* a_keys, const V* a_values, u64 a_count, const K* b_keys,
               const V* b_values, u64 b_count, K* keys_out, V* values_out,
               const u64* partitions) {
  __shared__ SortStorage s;
  Comp comp;
  u64 tile = blockIdx.x;
  u64 out_begin = tile * MGPU_NV;
  u64 out_end = min(out_begin + MGPU_NV, a_count + b_count);
  u64 a_begin = partitions[tile], a_end = partitions[tile + 1];
  u64 b_begin = out_begin - a_begin, b_end = out_end - a_end;
  merge_tile(s, a_keys, a_values, a_begin, a_end, b_keys, b_values, b_begin, b_end, keys_out,
             values_out, out_begin, comp);
}
