// cta_merge.cuh: merge path search, serial merge in registers, and the odd-even transposition sort
// of a thread's VT keys. Stable throughout: on ties, A's element (the earlier one) goes first.
// Needs K (key), V (value), Comp (strict weak order) and MGPU_VALUES (0 keys, 1 pairs, 2 indices).

// merge_path where the answer is known to lie in [begin, end] (a subrange of the full one:
// begin >= diag - b_count, end <= min(diag, a_count)).
template <typename Index>
__device__ __forceinline__ Index merge_path_within(const K* a, const K* b, Index diag, Index begin,
                                                   Index end, Comp comp) {
  while (begin < end) {
    Index mid = (begin + end) / 2;
    // Take A's element when B's is not strictly before it (ties go to A: stable).
    if (!comp(b[diag - 1 - mid], a[mid]))
      begin = mid + 1;
    else
      end = mid;
  }
  return begin;
}

// How many elements of A come before output position `diag` of merge(A, B). A and B may be in
// shared or global memory.
template <typename Index>
__device__ __forceinline__ Index merge_path(const K* a, Index a_count, const K* b, Index b_count,
                                            Index diag, Comp comp) {
  Index begin = diag > b_count ? diag - b_count : 0;
  Index end = diag < a_count ? diag : a_count;
  return merge_path_within(a, b, diag, begin, end, comp);
}

// Merges VT outputs from keys[a_begin, a_end) and keys[b_begin, b_end) (shared memory) into
// registers; `from[i]` is the shared-memory index each output came from. Every step does exactly
// one shared load, at the index the comparison chose, so a warp never splits over which run
// advances (two predicated loads per step cost twice the shared-memory issue). The load may read
// one past the end of a run (past both, for outputs beyond a partial tile's end), so `keys` must
// be readable up to index NV: the storage has NV + 1 slots.
// Two merges side by side (the first level of a four-way merge): from output `next_at` on, the
// thread merges the runs keys[next_begin, next_mid) and keys[next_mid, next_end) from their starts.
__device__ __forceinline__ void serial_merge(const K* keys, int a_begin, int a_end, int b_begin,
                                             int b_end, K (&out)[MGPU_VT], int (&from)[MGPU_VT],
                                             Comp comp, int next_at = MGPU_VT, int next_begin = 0,
                                             int next_mid = 0, int next_end = 0) {
  K a_key = keys[min(a_begin, MGPU_NV)];
  K b_key = keys[min(b_begin, MGPU_NV)];
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    if (i == next_at) {
      a_begin = next_begin;
      a_end = next_mid;
      b_begin = next_mid;
      b_end = next_end;
      a_key = keys[min(a_begin, MGPU_NV)];
      b_key = keys[min(b_begin, MGPU_NV)];
    }
    bool take_a = b_begin >= b_end || (a_begin < a_end && !comp(b_key, a_key));
    out[i] = take_a ? a_key : b_key;
    from[i] = take_a ? a_begin : b_begin;
    if (take_a)
      ++a_begin;
    else
      ++b_begin;
    K next = keys[min(take_a ? a_begin : b_begin, MGPU_NV)];
    if (take_a)
      a_key = next;
    else
      b_key = next;
  }
}

// Odd-even transposition sort of the first `valid` of a thread's VT keys (and values), fully
// unrolled: every register index is a compile-time constant.
__device__ __forceinline__ void thread_sort(K (&k)[MGPU_VT], V (&v)[MGPU_VT], int valid,
                                            Comp comp) {
#pragma unroll
  for (int pass = 0; pass < MGPU_VT; ++pass) {
#pragma unroll
    for (int i = pass & 1; i + 1 < MGPU_VT; i += 2) {
      if (i + 1 < valid && comp(k[i + 1], k[i])) {
        K tk = k[i];
        k[i] = k[i + 1];
        k[i + 1] = tk;
#if MGPU_VALUES
        V tv = v[i];
        v[i] = v[i + 1];
        v[i + 1] = tv;
#endif
      }
    }
  }
}
