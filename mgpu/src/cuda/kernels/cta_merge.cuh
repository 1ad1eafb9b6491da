// cta_merge.cuh: merge path search, serial merge in registers, and the odd-even transposition sort
// of a thread's VT keys. Stable throughout: on ties, A's element (the earlier one) goes first.
// Templates over the key type and its order (a sort's K and Comp, or a composite key); needs V
// (value) and MGPU_VALUES (0 keys, 1 pairs, 2 indices).

// Shared-memory slots of a merge tile: NV elements, and VT more that a serial merge may read past
// the end of its runs (see serial_merge), so that no index needs clamping.
#define MGPU_SLOTS (MGPU_NV + MGPU_VT)

// The two runs a thread merges: keys[a_begin, a_end) and keys[b_begin, b_end).
struct MergeRuns {
  int a_begin, a_end, b_begin, b_end;
};

// merge_path where the answer is known to lie in [begin, end] (a subrange of the full one:
// begin >= diag - b_count, end <= min(diag, a_count)).
template <typename Index, typename Key, typename C>
__device__ __forceinline__ Index merge_path_within(const Key* a, const Key* b, Index diag,
                                                   Index begin, Index end, C comp) {
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
template <typename Index, typename Key, typename C>
__device__ __forceinline__ Index merge_path(const Key* a, Index a_count, const Key* b,
                                            Index b_count, Index diag, C comp) {
  Index begin = diag > b_count ? diag - b_count : 0;
  Index end = diag < a_count ? diag : a_count;
  return merge_path_within(a, b, diag, begin, end, comp);
}

// A team of `lanes` consecutive lanes of a warp (a power of two, 1..32) searching together: each
// round its lanes probe up to `lanes` points of a range at once and the range shrinks
// (lanes + 1)-fold, so a search waits for log(lanes + 1) of the range loads, not log2 (one
// thread's search of a boundary between runs of 2^20 keys waits for 20), at the cost of more
// loads. The host sizes the teams: few boundaries, whose searches' latency is the whole launch,
// take whole warps; many, which keep the memory busy anyway, take a thread each.
struct SearchTeam {
  unsigned lanes, rank, mask;  // rank: this lane's place in the team

  __device__ __forceinline__ explicit SearchTeam(unsigned lanes_) : lanes(lanes_) {
    unsigned lane = threadIdx.x & (MGPU_WARP - 1);
    rank = lane & (lanes - 1);
    mask = (lanes == MGPU_WARP ? MGPU_FULL_MASK : (1u << lanes) - 1) << (lane - rank);
  }
  // This lane's probe of [lo, lo + span) (span > 0): the middle of its slice of `lanes` equal
  // slices (a team of one bisects), or, where the range is narrower than the team, every point.
  // I: u64, or u32 where every span is under 2^26 (the product below stays in 32 bits).
  template <typename I>
  __device__ __forceinline__ I probe(I lo, I span, unsigned& probes) const {
    probes = span < lanes ? (unsigned)span : lanes;
    if (span < lanes) return lo + rank;
    return lo + (span * (2 * rank + 1) >> (__ffs(lanes)));  // / (2 * lanes)
  }
  // How many of the team's lanes hold `p` (true for a prefix of them: the order is monotone).
  // A team of one skips the vote and the shuffles: with them (and a division a probe), a team
  // of one took twice a plain bisection's time (merge of 2^20 keys, H100).
  __device__ __forceinline__ int count(bool p) const {
    return lanes == 1 ? p : __popc(__ballot_sync(mask, p) & mask);
  }
  // `x` of the team's lane `r`.
  template <typename X>
  __device__ __forceinline__ X from(X x, int r) const {
    return lanes == 1 ? x : __shfl_sync(mask, x, r, lanes);
  }
  // A round of probes at `mid` (`probes` of the lanes) moves a search over [lo, hi): `taken`
  // holds for a prefix of the lanes, lo moves past the last probe taken and hi to the first not
  // taken. `last` and `first` are those lanes' ranks, -1 where there is none.
  template <typename I>
  __device__ __forceinline__ void narrow(bool taken, unsigned probes, I mid, I& lo, I& hi,
                                         int& last, int& first) const {
    int n = count(taken);
    last = n > 0 ? n - 1 : -1;
    first = (unsigned)n < probes ? n : -1;
    I mid_taken = from(mid, last < 0 ? 0 : last), mid_not = from(mid, first < 0 ? 0 : first);
    if (last >= 0) lo = mid_taken + 1;
    if (first >= 0) hi = mid_not;
  }
};

// merge_path_within for one thread searching runs in global memory, by binary lifting from 0:
// the answer is built from the high bit down, so the A key a step reads sits at an odd multiple
// of the step (less one) whatever the diagonal. Neighbouring boundaries then read the same A keys
// in every step longer than their distance, from L2 or in one request, and only B's keys go to
// DRAM: with tens of thousands of boundaries the partition is bound by those scattered reads.
template <typename Key, typename C>
__device__ __forceinline__ u64 lifted_merge_path_within(const Key* a, const Key* b, u64 diag,
                                                        u64 begin, u64 end, C comp) {
  u64 at = 0;  // every A element before max(at, begin) comes before output `diag`
  for (u64 step = end ? u64(1) << (63 - __clzll(end)) : 0; step; step >>= 1) {
    u64 next = at + step;
    // next <= begin: known (before the range); else A[next - 1] against B[diag - next].
    if (next <= end && (next <= begin || !comp(b[diag - next], a[next - 1]))) at = next;
  }
  return at;
}

// merge_path_within by a team, for runs in global memory. Every lane of the team returns the
// answer; all of them must call it with the same arguments.
template <typename Key, typename C>
__device__ __forceinline__ u64 team_merge_path_within(const SearchTeam& team, const Key* a,
                                                      const Key* b, u64 diag, u64 begin, u64 end,
                                                      C comp) {
  if (team.lanes == 1) return lifted_merge_path_within(a, b, diag, begin, end, comp);
  while (begin < end) {
    unsigned probes;
    u64 mid = team.probe(begin, end - begin, probes);
    int last, first;
    team.narrow(team.rank < probes && !comp(b[diag - 1 - mid], a[mid]), probes, mid, begin, end,
                last, first);
  }
  return begin;
}

// merge_path by a team (see team_merge_path_within).
template <typename Key, typename C>
__device__ __forceinline__ u64 team_merge_path(const SearchTeam& team, const Key* a, u64 a_count,
                                               const Key* b, u64 b_count, u64 diag, C comp) {
  u64 begin = diag > b_count ? diag - b_count : 0;
  u64 end = diag < a_count ? diag : a_count;
  return team_merge_path_within(team, a, b, diag, begin, end, comp);
}

// Merges VT outputs of the runs `r` (in shared memory) into registers; `from[i]` is the
// shared-memory index each output came from. Every step does exactly one shared load, at the index
// the comparison chose, so a warp never splits over which run advances (two predicated loads per
// step cost twice the shared-memory issue). The load may read past the end of a run: one past B's
// end at most (B advances only while it has keys), and up to VT past A's end (A advances once both
// runs are spent, for outputs beyond a partial tile's end). Runs end at NV at most, so the reads
// stay within MGPU_SLOTS without clamping the index (a clamp lengthened every step's dependency
// chain, which is what bounds the merge passes).
// Two merges side by side (the first level of a four-way merge): from output `next_at` on, the
// thread merges the runs `next` from their starts.
template <typename Key, typename C>
__device__ __forceinline__ void serial_merge(const Key* keys, MergeRuns r, Key (&out)[MGPU_VT],
                                             int (&from)[MGPU_VT], C comp,
                                             int next_at = MGPU_VT, MergeRuns next = {}) {
  Key a_key = keys[r.a_begin];
  Key b_key = keys[r.b_begin];
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    if (i == next_at) {
      r = next;
      a_key = keys[r.a_begin];
      b_key = keys[r.b_begin];
    }
    bool take_a = r.b_begin >= r.b_end || (r.a_begin < r.a_end && !comp(b_key, a_key));
    out[i] = take_a ? a_key : b_key;
    from[i] = take_a ? r.a_begin : r.b_begin;
    if (take_a)
      ++r.a_begin;
    else
      ++r.b_begin;
    Key next_key = keys[take_a ? r.a_begin : r.b_begin];
    if (take_a)
      a_key = next_key;
    else
      b_key = next_key;
  }
}

// Odd-even transposition sort of the first `valid` of a thread's VT keys (and values), fully
// unrolled: every register index is a compile-time constant. Slots past `valid` (a partial tile's
// last thread) first take copies of the largest valid key: they sort after every valid key (the
// sort is stable and they come last), so the network itself needs no per-swap bound check (that
// check kept a predicate per swap live and made the f32 blocksort spill at VT = 21).
template <typename Key, typename C>
__device__ __forceinline__ void thread_sort(Key (&k)[MGPU_VT], V (&v)[MGPU_VT], int valid, C comp) {
  if (valid < MGPU_VT) {
    Key largest = k[0];
#pragma unroll
    for (int i = 1; i < MGPU_VT; ++i)
      if (i < valid && comp(largest, k[i])) largest = k[i];
#pragma unroll
    for (int i = 1; i < MGPU_VT; ++i)
      if (i >= valid) k[i] = largest;
  }
#pragma unroll
  for (int pass = 0; pass < MGPU_VT; ++pass) {
#pragma unroll
    for (int i = pass & 1; i + 1 < MGPU_VT; i += 2) {
      if (comp(k[i + 1], k[i])) {
        Key tk = k[i];
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
