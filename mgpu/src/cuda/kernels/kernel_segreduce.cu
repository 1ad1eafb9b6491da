// kernel_segreduce.cu: segmented reduction over CSR segment descriptors (Modern GPU's
// SegReduceCsr, IndirectReduceCsr and SpmvCsr): a tile kernel and a spine.
//
// Load balance (the seed's first principle): a tile is NV consecutive items of the position space,
// whatever the segments; segment i covers positions [offsets[i], offsets[i + 1]) (the last one up
// to `count`). The partition kernel finds each tile's first segment (the first one starting at or
// after its first position: lower bound), so a tile reads exactly the offsets of the segments
// that start in it.
//
// In the tile (the seed's CSR -> COO flattening): each of the tile's offsets marks its start
// position in shared memory (a head: a bit of the seed's packed thread codes, or with empty
// segments a Mark; see MGPU_WIDE_MARKS). Empty segments start where the next one starts: they
// take the identity then and there (no CSR2 prepass), and a tile with many of them only reads
// more offsets. Each thread then reduces its VT items sequentially in one pass, resetting at
// heads and leaving at each end (the item before a head, or the tile's last) the part of the
// segment ending there; the (runs, value) segmented scan of segscan.cuh carries partial
// reductions across the CTA's threads into each thread's first end.
//
// Across tiles: a tile's results need no earlier tile, except the first result of a tile that
// does not start with a head, the end of a segment begun in an earlier tile. The tile writes
// every other result (staged in shared memory and stored coalesced when no segment of the tile is
// empty, so that its slots are consecutive; else each where it belongs) and leaves its total and
// that first result's tile-local part (its lead) to the spine, which scans the tiles' totals
// through the decoupled look-back of lookback.cuh and completes those results. So no tile waits
// for another: the tile kernel runs one CTA per tile at full occupancy with two barriers and two
// dependent loads (its limits, then its offsets, overlapping the items' copy) before its work
// (a plan's codes: one copy with the items, one barrier), where a look-back in the tile kernel
// made every tile wait on its predecessors (BENCHMARKS.md). Operand order is kept everywhere
// (the lead follows the carry), so the operator need not commute.
//
// Validation (mgpu_segreduce_validate) runs on the same stream before a one-shot reduction, and
// the host learns its findings once, after every launch (the first tile reports them to mapped
// host memory): the tile and spine kernels write nothing when it found a bad index
// (seg_rejected), and read nothing it did not check.
//
// Defines from the host (cuda/segreduce.rs):
//   MGPU_SPMV      0: the items are the values (`Input`, mapped or plain); 1: vec[cols[m]] (unary
//                  SpMV); 2: Mul(matrix[m], vec[cols[m]]) (binary SpMV)
//   MGPU_INDIRECT  segment i's items are at m = sources[i] + (position - offsets[i]), not m =
//                  position
//   MGPU_EMPTY     segments may be empty (else the offsets were checked to increase)
//   MGPU_CODES     the heads come packed from a plan (mgpu_segreduce_codes), not from the offsets:
//                  direct, non-empty segments only
//   MGPU_SPINE_VT  tiles per thread of the spine
//   MGPU_STRIDED   direct SpMV: a warp gathers lane-strided (see the tile), for long rows
//   MGPU_COLS_IN_VALUES  lane-strided SpMV of 4- or 8-byte values: the columns share the
//                  products' shared memory (see SegReduceStorage)
//   MGPU_CHECK_COLS  SpMV one-shot: the tiles check the columns as they gather (gather_x), into
//                  bad[2], instead of a validation pass reading them first
//   T the value type, O the offset type (unsigned or u64), C the scan's count type, Op (and Mul).
// A module compiles the kernels whose MGPU_WANT_<kernel> the host defines (jit.rs): the tiles and
// what carries across them (mgpu_segreduce, mgpu_segreduce_spine, mgpu_segreduce_fixup) apart
// from the helpers (partition, validate, codes, headless), which need no value type.

typedef RunPairOf<C, T> SegPair;
typedef RunPlusOf<C, T, Op> SegPlus;

// No segment starts at this position.
#define MGPU_NO_SEGMENT (~(O)0)

// How a tile knows where segments start. Where they may be empty (or items are indirect), each
// start position is marked in shared memory with the index of the first segment starting there
// (a Mark), which gives the slot of the segment ending before it. The segmented reduction's marks
// are 2 bytes, the index less the tile's first segment (relative), so that its tiles take 6 bytes
// a position for 4-byte values, not 8 (9 CTAs a SM instead of 7); a tile where more segments
// start than they count (tens of thousands of empty ones) marks the positions alone, and its
// ends search the offsets for their slots (first_segment_from). These tiles also set the marks'
// bits in packed words, so that a thread reads its heads in one word, not VT marks. SpMV's tiles,
// a third the size, keep the index whole, and no bits: 2-byte marks cost their gathers a
// register (spills).
// Otherwise the k-th end's slot follows from k, and the heads are bits, the seed's packed thread
// codes: bit i of word j says a segment starts at the tile's position j * VT + i (word NT: at the
// next tile's first position; the input's end has no bit: the tile ends a segment at its last
// item). A plan keeps them (mgpu_segreduce_codes); a one-shot tile sets them from the offsets
// (mark_codes), or where its checks found segments of one length, from that length
// (mark_progression). A thread reads one word and the next.
#define MGPU_WIDE_MARKS (MGPU_EMPTY || MGPU_INDIRECT)
#if MGPU_WIDE_MARKS
#if MGPU_SPMV
typedef O Mark;
#define MGPU_NO_MARK MGPU_NO_SEGMENT
#define MGPU_RELATIVE_MARKS 0
#else
typedef unsigned short Mark;
#define MGPU_NO_MARK ((Mark)0xffff)
#define MGPU_RELATIVE_MARKS 1
#endif
static_assert(MGPU_NV < MGPU_NO_MARK, "a Mark holds a tile's positions too (end_at)");
// The marks of a tile's positions and of the position after it, in whole 16-byte chunks.
constexpr int MGPU_HEADS = MGPU_NV + 16 / (int)sizeof(Mark);
#endif

static_assert(MGPU_VT <= 32, "a thread's heads and ends are 32-bit masks");
static_assert(!MGPU_CODES || !MGPU_WIDE_MARKS, "packed heads are for direct, non-empty segments");

// MGPU_COLS_IN_VALUES (lane-strided SpMV of 4- or 8-byte values): the column indices lie in the
// products' slots, and the matrix values are read from global memory (load_matrix_value). 4-byte
// values: position p's column in its product's slot, which only the lane that gathers through it
// overwrites. 8-byte values: a warp's part of the tile (32 * VT positions, twice as many words)
// keeps its columns in the upper half of its words (col_slot), and its products overwrite them
// only after a warp barrier, once every lane has read its columns.
static_assert(!MGPU_COLS_IN_VALUES ||
                  (MGPU_SPMV && MGPU_STRIDED && !MGPU_INDIRECT &&
                   (sizeof(T) == 4 || sizeof(T) == 8)),
              "columns share the products' slots only for lane-strided 4- or 8-byte SpMV");
#if MGPU_COLS_IN_VALUES
// 32-bit words per value.
constexpr int MGPU_VALUE_WORDS = (int)sizeof(T) / 4;
// The word that holds the column of tile position q: the warp's part of the tile, then the upper
// half of its words when values are 8 bytes (32 * VT is a multiple of 4: 16-byte chunks of
// columns stay whole and aligned).
__device__ __forceinline__ int col_slot(int q) {
  constexpr int PART = 32 * MGPU_VT;
  return q + (MGPU_VALUE_WORDS - 1) * PART * (q / PART + 1);
}
#endif

struct SegReduceStorage {
  // The tile's items (the matrix values for binary SpMV, or lane-strided SpMV's products); once
  // every thread holds its items, the tile's segment results in the order the segments end.
  // Smaller tiles in shared memory leave more of it to the L1 cache, which holds the vector's
  // gathers in flight, and let more CTAs run (BENCHMARKS.md).
#if MGPU_COLS_IN_VALUES
  union {
    __align__(16) T values[MGPU_NV];
    __align__(16) unsigned cols[MGPU_NV * MGPU_VALUE_WORDS];  // at col_slot, then products
  };
#else
  __align__(16) T values[MGPU_NV];
#endif
#if MGPU_SPMV && !MGPU_INDIRECT && !MGPU_COLS_IN_VALUES
  // The tile's column indices, read before the scan; after it, the positions of the staged
  // results by rank.
  union {
    __align__(16) unsigned cols[MGPU_NV];
    unsigned short end_at[MGPU_NV];
  };
#endif
#if MGPU_WIDE_MARKS
  // Per position (and the one after the tile): its mark, or MGPU_NO_MARK (aligned: the marks
  // are cleared 16 bytes a store). Once the tile is reduced, they hold the positions of the
  // staged results by rank.
  __align__(16) Mark heads[MGPU_HEADS];
#if MGPU_RELATIVE_MARKS
  // The same heads as bits, packed as the codes below: a thread reads its word, not VT marks.
  unsigned codes[MGPU_NT + 1];
#endif
#else
  // The packed heads of the tile's threads and the word after them (see MGPU_WIDE_MARKS), from
  // a plan or set from the offsets; the tile's first segment.
  unsigned codes[MGPU_NT + 1];
  O seg_begin;
  O stride;  // a one-shot's segments of one short length (progression_stride), else 0
#endif
#if !MGPU_WIDE_MARKS && (!MGPU_SPMV || MGPU_COLS_IN_VALUES)
  unsigned short end_at[MGPU_NV];  // the positions of the staged results by rank
#endif
#if MGPU_INDIRECT
  // Per position: the last segment that starts there (the non-empty one), or MGPU_NO_SEGMENT.
  __align__(16) O last_heads[MGPU_NV + 16 / (int)sizeof(O)];
  CtaScanStorageOf<O> seg_scan;
#endif
  CtaScanStorageOf<SegPair> scan;
#if MGPU_WIDE_MARKS
  int empties;  // an empty segment starts in the tile
  int narrow;   // the marks hold segments (see Mark)
#endif
};

#if MGPU_COLS_IN_VALUES
// Global -> shared: the tile's `n` columns, each to its col_slot (a whole, aligned tile in
// 16-byte cp.async chunks, complete at the caller's cp_async_wait_all). 4-byte values' columns
// are evicted first from L2, like the matrix values, so that the vector's gathered lines stay
// (H100, f32 at 2^28 nonzeros: random rows 4% faster; BENCHMARKS.md). Not for 8-byte values,
// where the hinted copy stopped the kernel with an illegal instruction (NVRTC 13.0), nor for the
// stencils' thread-per-items tiles, which it made 4-6% slower.
__device__ __forceinline__ void load_cols_to_slots(const unsigned* src, int n, unsigned* slots,
                                                   int tid) {
  if (MGPU_VALUE_WORDS == 1) {
    load_plain_to_shared<unsigned, false, true>(src, n, slots, tid);
    return;
  }
  if (n == MGPU_NV && ((size_t)src & 15) == 0) {
    constexpr int CHUNKS = MGPU_NV / 4;
#pragma unroll
    for (int i = 0; i < (CHUNKS + MGPU_NT - 1) / MGPU_NT; ++i) {
      int c = i * MGPU_NT + tid;
      if (CHUNKS % MGPU_NT == 0 || c < CHUNKS) cp_async<16>(slots + col_slot(4 * c), src + 4 * c);
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int q = i * MGPU_NT + tid;
    if (q < n) slots[col_slot(q)] = src[q];
  }
}

// A matrix value, read once: evicted first from L1 and L2 (ld.global.cs), so that the vector's
// gathered lines stay cached (f64 power-law rows, whose vector is half the L2: 1.46 -> 1.20 GB
// read from DRAM, BENCHMARKS.md). In words as wide as its alignment allows.
__device__ __forceinline__ T load_matrix_value(const T* p) {
  T x;
  if constexpr (sizeof(T) == 8 && alignof(T) >= 8) {
    u64 bits = __ldcs(reinterpret_cast<const u64*>(p));
    memcpy(&x, &bits, sizeof(T));
  } else {
    unsigned bits[MGPU_VALUE_WORDS];
#pragma unroll
    for (int k = 0; k < MGPU_VALUE_WORDS; ++k)
      bits[k] = __ldcs(reinterpret_cast<const unsigned*>(p) + k);
    memcpy(&x, bits, sizeof(T));
  }
  return x;
}
#endif

struct SegMax {
  __device__ __forceinline__ O operator()(O a, O b) const { return a > b ? a : b; }
};

// Sets the NV + 16 bytes' worth of marks of a tile to `none` (all bits set or all clear), 16 bytes
// a store.
template <typename M>
__device__ __forceinline__ void clear_marks(M* marks, M none, int tid) {
  constexpr int CHUNKS = (MGPU_NV * (int)sizeof(M) + 16) / 16;
  unsigned w = none ? ~0u : 0u;
  for (int c = tid; c < CHUNKS; c += MGPU_NT)
    reinterpret_cast<uint4*>(marks)[c] = make_uint4(w, w, w, w);
}

// This CTA's tile of the position space: NV positions from `base`, `n` of them (fewer in the
// last tile).
struct SegTile {
  u64 index, num_tiles, base;
  int n;
  bool last;
};

__device__ __forceinline__ SegTile seg_tile(u64 count) {
  SegTile at;
  at.index = blockIdx.x;
  at.num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  at.base = at.index * MGPU_NV;
  at.n = (int)min((u64)MGPU_NV, count - at.base);
  at.last = at.index + 1 == at.num_tiles;
  return at;
}

// Offsets per thread that a marking loop loads before it uses them, so that their latencies
// overlap (a tile of length-1 segments reads NV offsets; one inside a long segment, none).
constexpr int MGPU_MARK_BATCH = 4;
// The same in 16-byte runs of offsets (mark_codes, where they are so aligned): three hold as
// many registers as two (six cost three CTAs per SM, BENCHMARKS.md).
constexpr int MGPU_MARK_RUNS = 3;

// The first of the segments [lo, hi) that starts at or after `position` (hi where none does), by
// binary search: a tile limit searched by a lane alone (tile_limit), and the segment starting at
// a marked position in a tile whose marks are not narrow (see Mark).
__device__ __forceinline__ u64 first_segment_from(const O* offsets, u64 lo, u64 hi, u64 position) {
  while (lo < hi) {
    const u64 mid = lo + (hi - lo) / 2;
    if ((u64)offsets[mid] < position) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

#if MGPU_WIDE_MARKS
// Marks in `heads` where the segments [seg_begin, seg_end) start in the tile `at`, and position
// at.n (see below); with empty segments, writes their identity and sets *empties; for indirect
// items, the last segment starting at each position in `last_heads`. `narrow`: relative marks
// fit (see Mark), else they are 0. With relative marks, also each mark's bit in `codes` (cleared).
__device__ __forceinline__ void mark_heads(Mark* heads, unsigned* codes, O* last_heads,
                                           int* empties, const O* offsets, const O* limits,
                                           u64 seg_begin, u64 seg_end, u64 num_segments,
                                           u64 count, const SegTile& at, T* dest, T identity,
                                           bool narrow, int tid) {
  u64 base = at.base;
  auto mark = [&](u64 position, u64 k) {
    heads[position] = !MGPU_RELATIVE_MARKS ? (Mark)k : narrow ? (Mark)(k - seg_begin) : 0;
    if (MGPU_RELATIVE_MARKS) {
      const int word = (int)position / MGPU_VT;
      atomicOr(codes + word, 1u << ((int)position - word * MGPU_VT));
    }
  };
  for (u64 k0 = seg_begin + tid; k0 < seg_end; k0 += MGPU_MARK_BATCH * MGPU_NT) {
    O start[MGPU_MARK_BATCH], next[MGPU_MARK_BATCH];
#if MGPU_EMPTY
    O prev[MGPU_MARK_BATCH];
#endif
#pragma unroll
    for (int u = 0; u < MGPU_MARK_BATCH; ++u) {
      u64 k = k0 + u * MGPU_NT;
      if (k < seg_end) {
        start[u] = offsets[k];
        next[u] = k + 1 < num_segments ? offsets[k + 1] : (O)count;
#if MGPU_EMPTY
        prev[u] = k > seg_begin ? offsets[k - 1] : MGPU_NO_SEGMENT;
#endif
      }
    }
#pragma unroll
    for (int u = 0; u < MGPU_MARK_BATCH; ++u) {
      u64 k = k0 + u * MGPU_NT;
      if (k < seg_end) {
#if MGPU_EMPTY
        if (next[u] == start[u]) {
          dest[k] = identity;  // an empty segment
          *empties = 1;
        }
        // The first segment starting here (the sentinel could equal a start: ~0, u32 offsets).
        if (k == seg_begin || prev[u] != start[u])
#endif
          mark(start[u] - base, k);
#if MGPU_INDIRECT
        if (next[u] != start[u]) last_heads[start[u] - base] = (O)k;
#endif
      }
    }
  }
  // Position n: the first segment starting right after the tile, so that the segment ending at
  // the tile's last item is found like any other. At the input's end, a virtual segment
  // `num_segments` when none starts at `count` (else the loop marked the first of those).
  if (tid == MGPU_NT - 1) {
    if (at.last) {
      if ((u64)limits[at.num_tiles] == num_segments) mark(at.n, num_segments);
    } else if (seg_end < num_segments && (u64)offsets[seg_end] == base + at.n) {
      mark(at.n, seg_end);
    }
  }
}
#else
// Sets in `codes` (the tile's NT + 1 words, cleared) the bits of the segments [seg_begin,
// seg_end) that start in the tile `at`, and of position NV: the next tile's first position if
// a segment starts there (the input's end has none). Segments are non-empty and
// direct. (Neighbouring segments share a word: a short segment's bit is set by atomicOr.)
__device__ __forceinline__ void mark_codes(unsigned* codes, const O* offsets, u64 seg_begin,
                                           u64 seg_end, u64 num_segments, const SegTile& at,
                                           int tid) {
  auto set = [&](int position) {
    int word = position / MGPU_VT;
    atomicOr(codes + word, 1u << (position - word * MGPU_VT));
  };
  const int num = (int)(seg_end - seg_begin);  // non-empty: at most the tile's positions
  if (MGPU_SPMV == 0 && num > MGPU_MARK_BATCH * MGPU_NT && ((size_t)offsets & 15) == 0) {
    // More than a trip of the loop below (short segments): runs of 16 aligned bytes of offsets,
    // a load each (length-1 segments: two trips of dependent loads instead of six). Runs partly
    // outside the tile's segments are read whole within the offsets, the array's last by scalar
    // loads. (Not for SpMV, whose smaller tiles of rows rarely take a second trip, and whose
    // lane-strided tiles spilled.)
    constexpr int RUN = 16 / (int)sizeof(O);
    const u64 run0 = seg_begin / RUN;
    const int skip = (int)(seg_begin - run0 * RUN);  // offsets before seg_begin in the first run
    const int runs = (skip + num + RUN - 1) / RUN;
    for (int r = tid; r < runs; r += MGPU_MARK_RUNS * MGPU_NT) {
      O start[MGPU_MARK_RUNS][RUN];
#pragma unroll
      for (int u = 0; u < MGPU_MARK_RUNS; ++u) {
        const u64 g = run0 + r + u * MGPU_NT;
        if (r + u * MGPU_NT >= runs) continue;
        if ((g + 1) * RUN <= num_segments) {
          const uint4 q = reinterpret_cast<const uint4*>(offsets)[g];
          memcpy(start[u], &q, 16);
        } else {
#pragma unroll
          for (int e = 0; e < RUN; ++e)
            if (g * RUN + e < num_segments) start[u][e] = offsets[g * RUN + e];
        }
      }
#pragma unroll
      for (int u = 0; u < MGPU_MARK_RUNS; ++u)
#pragma unroll
        for (int e = 0; e < RUN; ++e) {
          const int j = (r + u * MGPU_NT) * RUN + e - skip;  // the tile's j-th segment
          if (j >= 0 && j < num) set((int)(start[u][e] - at.base));
        }
    }
  } else {
    for (u64 k0 = seg_begin + tid; k0 < seg_end; k0 += MGPU_MARK_BATCH * MGPU_NT) {
      O start[MGPU_MARK_BATCH];
#pragma unroll
      for (int u = 0; u < MGPU_MARK_BATCH; ++u) {
        u64 k = k0 + u * MGPU_NT;
        if (k < seg_end) start[u] = offsets[k];
      }
#pragma unroll
      for (int u = 0; u < MGPU_MARK_BATCH; ++u)
        if (k0 + u * MGPU_NT < seg_end) set((int)(start[u] - at.base));
    }
  }
  if (tid == MGPU_NT - 1) {
    if (!at.last && seg_end < num_segments && (u64)offsets[seg_end] == at.base + MGPU_NV)
      set(MGPU_NV);
  }
}
#endif

// Segments of one length. `stride` is the host's candidate L = ceil(count / num_segments) (0 where
// the one-shot's strict checks did not run into `bad`, positions reach 2^31, or fewer than 32
// segments of L fit a tile). Returns L where every segment but the last is L long and the last no
// longer, else 0. The tile's limits must be those of such segments, so that most tiles of other
// geometries decide without a load; the geometry then is, exactly when the checks' longest segment
// is L and the last starts at (num_segments - 1) * L: increasing starts from 0 with no step over L
// reach that only if every step is L.
__device__ __forceinline__ O progression_stride(unsigned stride, const O* offsets, const u64* bad,
                                                u64 num_segments, u64 seg_begin, u64 seg_end,
                                                const SegTile& at) {
  if (!stride) return 0;
  // seg_begin = ceil(base / stride): the first multiple of stride at or past the tile's base
  // (multiplications: a divide is a subroutine); the same for seg_end past the tile, but in the
  // last tile, whose segments run to the last.
  auto first_at = [&](u64 k, u64 position) {
    return k * stride >= position && (k == 0 || (k - 1) * stride < position);
  };
  if (!first_at(seg_begin, at.base) ||
      (at.last ? seg_end != num_segments : !first_at(seg_end, at.base + MGPU_NV)))
    return 0;
  const bool one =
      ~bad[4] == stride && (u64)offsets[num_segments - 1] == (num_segments - 1) * stride;
  return one ? (O)stride : (O)0;
}

// mark_codes for segments of one length `stride` but the last, no longer (progression_stride):
// the starts are the multiples of `stride` below `count`. A thread sets its own word (cleared,
// one thread's each), the last thread also the word after the tile.
__device__ __forceinline__ void mark_progression(unsigned* codes, O stride, const SegTile& at,
                                                 int tid) {
  const unsigned s = (unsigned)stride;
  const int first = tid * MGPU_VT, items = min(at.n - first, MGPU_VT);
  if (items > 0) {
    const unsigned r = (unsigned)(at.base + first) % s;
    unsigned word = 0;
    for (unsigned i = r ? s - r : 0; i < (unsigned)items; i += s) word |= 1u << i;
    codes[tid] = word;
  }
  if (tid == MGPU_NT - 1 && !at.last && (unsigned)(at.base + MGPU_NV) % s == 0)
    codes[MGPU_NT] = 1;
}

// A one-shot call's validation (mgpu_segreduce_validate, queued before the reduction) found a bad
// offset, source or column: bad[0..2], ~0 where none (null: a plan's geometry, checked when it
// was made). The reduction then writes nothing and reads nothing the checks did not cover, so the
// host reads validation's result back once, after every launch, instead of waiting for it first.
// Where the tiles check the columns themselves (MGPU_CHECK_COLS), bad[2] is theirs: a tile does
// not stop for another's finding, so that the smallest bad index is the one recorded.
__device__ __forceinline__ bool seg_rejected(const u64* bad) {
#if MGPU_CHECK_COLS
  return bad && (bad[0] & bad[1]) != ~0ull;
#else
  return bad && (bad[0] & bad[1] & bad[2]) != ~0ull;
#endif
}

// Whether every tile but the last holds a segment start (MGPU_HEADLESS_WORD, cleared by a tile
// that holds none; only where the tiles had findings to honour): the spine then completes each
// continued tile from its neighbour, as mgpu_segreduce_fixup does for a plan that knows it. The
// word lies 128 bytes past the findings (the record is 256 bytes), in a line of its own: where
// many tiles clear it, their atomics on the findings' line held up every tile's reads of them (a
// 2^28 one-segment one-shot 0.33 -> 0.30 ms, BENCHMARKS.md).
#define MGPU_HEADLESS_WORD 16
__device__ __forceinline__ bool seg_all_heads(const u64* bad) {
  return bad && bad[MGPU_HEADLESS_WORD] == ~0ull;
}

// x[col]. Where MGPU_CHECK_COLS (a one-shot SpMV that did not check its columns first), a column
// at or past vec_len is not read (the item is the identity: the result is discarded) and sets
// `bit` in `bad_bits`, from which the thread's first bad index is found after its gathers.
// (`limit`: vec_len, or 0xffffffff where vec_len is more, when no column can be bad.)
#if MGPU_SPMV
__device__ __forceinline__ T gather_x(const T* vec, unsigned col, unsigned limit, bool any_bad,
                                      unsigned& bad_bits, unsigned bit, T identity) {
#if MGPU_CHECK_COLS
  const bool ok = !any_bad || col < limit;
  bad_bits |= ok ? 0u : bit;
  return ok ? __ldg(vec + col) : identity;
#else
  return __ldg(vec + col);
#endif
}
#endif

// The item at data index m.
__device__ __forceinline__ T load_item(Input values, const T* matrix, const unsigned* cols,
                                       const T* vec, u64 m) {
#if MGPU_SPMV == 0
  return values[m];
#elif MGPU_SPMV == 1
  return __ldg(vec + __ldg(cols + m));
#else
  return Mul()(__ldg(matrix + m), __ldg(vec + __ldg(cols + m)));
#endif
}
static_assert(!(MGPU_CHECK_COLS && (MGPU_INDIRECT || MGPU_SPMV == 0)),
              "the tiles check the columns of direct SpMV only");

// A one-shot's host learns the findings (bad[0..5)) from the first CTA of the kernel after those
// that make them (the tiles after the validation; the copy of a SpMV's checked result after the
// tiles), which copies them to page-locked host memory (`report`, mapped) and then sets
// report[5]: no copy is queued between the kernels.
__device__ __forceinline__ void report_findings(const u64* bad, u64* report) {
  volatile u64* to = report;
  for (int i = 0; i < 5; ++i) to[i] = bad[i];
  __threadfence_system();  // the findings reach the host before the flag
  to[5] = 1;
}

// A thread's heads and ends (see the tile) from packed words: its own, `code`, less the bits past
// the tile's last item (`items`: the thread's items in the tile, VT but in the last tile), and for
// its last item the first bit after it, in `code` or in the next word, `next` (the next tile's
// first position). `input_end`: the tile ends the input, whose end has no bit.
__device__ __forceinline__ void thread_heads(unsigned code, unsigned next, int items,
                                             bool input_end, unsigned& heads, unsigned& ends) {
  heads = items >= MGPU_VT ? code : items > 0 ? code & ((1u << items) - 1) : 0u;
  ends = heads >> 1;
  if (items > 0) {
    const int after = min(items, MGPU_VT);  // the item after the thread's last
    const unsigned at = after < MGPU_VT ? code >> after : next;
    if ((at & 1u) || (input_end && items <= MGPU_VT)) ends |= 1u << (after - 1);
  }
}

#ifdef MGPU_WANT_mgpu_segreduce
// One CTA per tile. For the spine, tile t leaves totals[t] (its (heads, reduction since its last
// head) pair), continued[t] (whether its first item continues a segment that ends in the tile)
// and then leads[t] (the tile's part of that segment).
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_segreduce(Input values, const T* matrix, const unsigned* cols, const T* vec,
                   u64 vec_len, const O* offsets, const O* sources, const O* limits,
                   u64 num_segments, u64 count, const unsigned* codes, u64* bad, T* dest,
                   T identity, SegPair* totals, T* leads, unsigned char* continued,
                   u64* report, unsigned stride, unsigned ahead) {
  __shared__ SegReduceStorage storage;
  int tid = threadIdx.x;
  grid_dependency_wait();  // for the limits and the findings (launched dependent)
  if (report && blockIdx.x == 0 && tid == 0) report_findings(bad, report);
  const SegTile at = seg_tile(count);
  u64 tile = at.index, base = at.base;
  int n = at.n;
  bool last_tile = at.last;
  const SegPair none{0, identity};
#if !MGPU_CODES
  // The segments starting in the tile (the last tile also takes the empty ones at `count`),
  // loaded first: the offsets' loads depend on them.
  u64 seg_begin = limits[tile];
  u64 seg_end = last_tile ? num_segments : (u64)limits[tile + 1];
  const bool rejected = seg_rejected(bad);  // checked after the barrier below
  // A tile inside one segment: a carry may then cross several tiles (seg_all_heads).
  if (bad && tid == 0 && !last_tile && seg_begin == seg_end)
    atomicAnd(bad + MGPU_HEADLESS_WORD, 0ull);
#if MGPU_SPMV
  // A hint to L2 for the tile `ahead` (the resident CTAs) later, about the next on this CTA's
  // slot: its limits and then its row offsets are the chain before its gathers, a DRAM round
  // trip each where L2 does not hold them. (Limits are segment indices whatever the offsets
  // hold: the range stays inside the offsets.)
  if (tid == MGPU_WARP && tile + ahead < at.num_tiles) {
    const u64 later = tile + ahead;
    const u64 b = limits[later], e = limits[later + 1];
    if (e > b) prefetch_l2(offsets + b, (e - b) * sizeof(O));
  }
#endif
#endif
  // The items' copy is waited for only once the heads are marked: the loads overlap.
#if !MGPU_INDIRECT
#if MGPU_SPMV == 0
  load_tile_to_shared_async<false>(values, base, n, values.vector_ok_at(base), identity,
                                   storage.values, tid);
#else
#if MGPU_COLS_IN_VALUES
  load_cols_to_slots(cols + base, n, storage.cols, tid);
#else
  load_plain_to_shared<unsigned, false>(cols + base, n, storage.cols, tid);
#endif
#if MGPU_SPMV == 2 && !MGPU_COLS_IN_VALUES
  load_plain_to_shared<T, false>(matrix + base, n, storage.values, tid);
#endif
#endif
#endif
  int first = tid * MGPU_VT;  // the thread's VT consecutive items (VT odd: conflict-free)
  // Bit i of a thread's masks: a segment starts at its item i (heads) / ends there (ends: one
  // starts at item i + 1, or item i is the tile's last and a segment ends with it). head0: the
  // tile starts a segment; end_last: one ends at its last item. Without empty segments the k-th
  // end's slot is slot0 + k: results are staged, then stored coalesced.
  unsigned heads, ends;
  int head0, end_last;
  bool staged;
#if !MGPU_WIDE_MARKS
#if MGPU_CODES
  // A plan's codes, copied with the items: no offsets, nothing held in registers across the
  // barrier (read into registers here, they spilled at 56).
  const unsigned* tile_codes = codes + tile * MGPU_NT;
  cp_async<4>(storage.codes + tid, tile_codes + tid);
  if (tid == 0) {
    cp_async<4>(storage.codes + MGPU_NT, tile_codes + MGPU_NT);
    cp_async<sizeof(O)>(&storage.seg_begin, limits + tile);
  }
#else
  for (int j = tid; j <= MGPU_NT; j += MGPU_NT) storage.codes[j] = 0;
  if (tid == 0) {
    storage.seg_begin = (O)seg_begin;
    storage.stride =
        progression_stride(stride, offsets, bad, num_segments, seg_begin, seg_end, at);
  }
  __syncthreads();
  // Nothing read so far lies outside the tile (but the last offset, in bounds whatever the
  // offsets hold): stop before the offsets and columns.
  if (rejected) {
    cp_async_wait_all();
    return;
  }
  // Segments of one length: their starts need no offsets.
  if (storage.stride) mark_progression(storage.codes, storage.stride, at, tid);
  else mark_codes(storage.codes, offsets, seg_begin, seg_end, num_segments, at, tid);
#endif
  cp_async_wait_all();
  __syncthreads();
  // The input's end has no bit: the last tile's last item ends a segment.
  thread_heads(storage.codes[tid], storage.codes[tid + 1], n - first, last_tile, heads, ends);
  staged = true;  // head0, end_last and the first segment are read after the scan
#else
  clear_marks(storage.heads, MGPU_NO_MARK, tid);
#if MGPU_RELATIVE_MARKS
  for (int j = tid; j <= MGPU_NT; j += MGPU_NT) storage.codes[j] = 0;
#endif
  const bool narrow = !MGPU_RELATIVE_MARKS || seg_end - seg_begin < MGPU_NO_MARK;
#if MGPU_INDIRECT
  clear_marks(storage.last_heads, MGPU_NO_SEGMENT, tid);
#endif
  if (tid == 0) {
    storage.empties = 0;
    storage.narrow = narrow;
  }
  __syncthreads();
  // Nothing read so far lies outside the tile: stop before the offsets, sources or columns.
  if (rejected) {
    cp_async_wait_all();
    return;
  }

  mark_heads(storage.heads,
#if MGPU_RELATIVE_MARKS
             storage.codes,
#else
             nullptr,
#endif
#if MGPU_INDIRECT
             storage.last_heads,
#else
             nullptr,
#endif
             &storage.empties, offsets, limits, seg_begin, seg_end, num_segments, count, at,
             dest, identity, narrow, tid);
  cp_async_wait_all();
  __syncthreads();

#if MGPU_RELATIVE_MARKS
  // Position n is always marked here (a segment starting there or, at the input's end, one past
  // the last).
  thread_heads(storage.codes[tid], storage.codes[tid + 1], n - first, false, heads, ends);
  head0 = (int)(storage.codes[0] & 1u);
  end_last = (int)((storage.codes[n / MGPU_VT] >> (n % MGPU_VT)) & 1u);
#else
  heads = 0;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i)
    if (first + i < n && storage.heads[first + i] != MGPU_NO_MARK) heads |= 1u << i;
  ends = heads >> 1;
  if (first < n) {
    int after = min(first + MGPU_VT, n);  // the position after the thread's last item
    if (storage.heads[after] != MGPU_NO_MARK) ends |= 1u << (after - 1 - first);
  }
  // Read before the staging below may overwrite the marks.
  head0 = storage.heads[0] != MGPU_NO_MARK;
  end_last = storage.heads[n] != MGPU_NO_MARK;
#endif
  staged = !storage.empties;  // uniform: set before the last barrier
#endif
  // The thread's items: the values' own slots (copied there, or lane-strided SpMV's products put
  // there), or computed into registers: SpMV's products and indirect CSR's gathered items, every
  // load issued before the first is used. Past the tile's last item they are the identity.
  T* mine = storage.values + first;
#if MGPU_INDIRECT || (MGPU_SPMV && !MGPU_STRIDED)
#define MGPU_ITEM(i) v[i]
#else
#define MGPU_ITEM(i) mine[i]
#endif
#if MGPU_INDIRECT
  T v[MGPU_VT];
  // The segment of each item: the last non-empty segment starting at or before it (before the
  // tile: the one before the tile's first segment), found by a max-scan of the threads' last
  // heads. Items of segment s are at sources[s] + (position - offsets[s]).
  O seg_plus_one = 0;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    O h = storage.last_heads[first + i];
    if (first + i < n && h != MGPU_NO_SEGMENT) seg_plus_one = h + 1;
  }
  O seg_total;
  O seg_prefix = cta_scan_exclusive(seg_plus_one, SegMax(), (O)0, seg_total, storage.seg_scan);
  // (Tile 0's first item is a head: no segment before it is read.)
  O seg = seg_prefix ? seg_prefix - 1 : (O)(seg_begin - 1);
  u64 delta = seg != MGPU_NO_SEGMENT ? (u64)sources[seg] - (u64)offsets[seg] : 0;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    v[i] = identity;
    if (first + i < n) {
      O h = storage.last_heads[first + i];
      if (h != MGPU_NO_SEGMENT) {
        seg = h;
        delta = (u64)sources[seg] - (u64)offsets[seg];
      }
      v[i] = load_item(values, matrix, cols, vec, base + first + i + delta);
    }
  }
#elif MGPU_SPMV
  // The thread's i-th gather: its own item i, or lane-strided (MGPU_STRIDED: lane l takes the
  // warp's items l, l + 32, ..., so that one load instruction reads 32 consecutive nonzeros'
  // columns, which share cache lines wherever a row's columns lie close: one L2 request instead
  // of up to 32). Lane-strided products go back to thread order through the warp's own part of
  // the tile, which only the warp reads (a warp barrier).
#if MGPU_STRIDED
  const int gather0 = (tid & ~31) * MGPU_VT + (tid & 31);
  constexpr int STEP = 32;
#else
  const int gather0 = first;
  constexpr int STEP = 1;
#endif
  T v[MGPU_VT];
  unsigned bad_bits = 0;  // MGPU_CHECK_COLS: bit i, the thread's i-th gather's column is bad
  const unsigned limit = (unsigned)min(vec_len, 0xffffffffull);
  const bool any_bad = vec_len <= 0xffffffffull;
#if MGPU_SPMV == 2 && MGPU_COLS_IN_VALUES
  // The matrix values, read lane-strided (coalesced): 4-byte ones with the gathers, 8-byte ones
  // once the gathers are issued (held in registers with them, they spilled).
  T a[MGPU_VT];
#endif
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int p = gather0 + i * STEP;
#if MGPU_COLS_IN_VALUES
    const unsigned col = storage.cols[col_slot(p)];
#else
    const unsigned col = storage.cols[p];
#endif
    v[i] = p < n ? gather_x(vec, col, limit, any_bad, bad_bits, 1u << i, identity) : identity;
#if MGPU_SPMV == 2 && MGPU_COLS_IN_VALUES
    if (MGPU_VALUE_WORDS == 1 && p < n) a[i] = load_matrix_value(matrix + base + p);
#endif
  }
  // Every gather is issued before the first is used: a compiler barrier keeps the loads ahead
  // of the products and the pass below.
  asm volatile("" ::: "memory");
#if MGPU_CHECK_COLS
  if (bad_bits) atomicMin(bad + 2, base + gather0 + (__ffs(bad_bits) - 1) * STEP);
#endif
#if MGPU_COLS_IN_VALUES
  // 8-byte products overwrite other lanes' columns (col_slot).
  if (MGPU_VALUE_WORDS > 1) __syncwarp();
#endif
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int p = gather0 + i * STEP;
#if MGPU_SPMV == 2 && MGPU_COLS_IN_VALUES
    if (MGPU_VALUE_WORDS > 1 && p < n) a[i] = load_matrix_value(matrix + base + p);
    if (p < n) v[i] = Mul()(a[i], v[i]);
#elif MGPU_SPMV == 2
    if (p < n) v[i] = Mul()(storage.values[p], v[i]);
#endif
#if MGPU_STRIDED
    storage.values[p] = v[i];
#endif
  }
#if MGPU_STRIDED
  __syncwarp();
#endif
#endif
  // One pass over the items: the thread's reduction since its last head (from the identity),
  // and at each end the part of the segment ending there, into that end's own slot (neither
  // heads nor ends lie past the tile's last item: no bounds checks).
  T part = identity;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    T item = MGPU_ITEM(i);
    part = ((heads >> i) & 1u) ? item : Op()(part, item);
    if ((ends >> i) & 1u) mine[i] = part;
  }
#undef MGPU_ITEM
  SegPair tile_total;
  SegPair thread_prefix = cta_scan_exclusive(SegPair{(C)__popc(heads), part}, SegPlus(), none,
                                             tile_total, storage.scan);
#if MGPU_WIDE_MARKS
  u64 first_segment = seg_begin;
#else
  head0 = (int)(storage.codes[0] & 1u);
  end_last = last_tile ? 1 : (int)(storage.codes[MGPU_NT] & 1u);
  u64 first_segment = storage.seg_begin;  // (kept in shared memory across the scan: registers)
#endif
  // The k-th end of the tile follows the heads at positions 1..k; when the tile starts inside a
  // segment (no head at 0), its first end is that segment's, completed by the spine.
  int tile_ends = (int)tile_total.runs - head0 + end_last;
  u64 slot0 = first_segment - (head0 ? 0 : 1);
  int k = (int)thread_prefix.runs - head0 + (int)(heads & 1u);
  // Staging: a result goes to its end's own position (its item was read by this thread alone),
  // and the end's position to end_at at its rank k <= position (wide marks: the marks, no longer
  // read once staged). Only the thread's first end can continue a segment from before the
  // thread (no head precedes it here): the threads before carry into it, the operand first.
#if MGPU_WIDE_MARKS
  Mark* end_at = storage.heads;
#else
  unsigned short* end_at = storage.end_at;
#endif
  [[maybe_unused]] bool lead = false;  // the thread's first end is the tile's lead
#if MGPU_WIDE_MARKS
  // (Read back here, not held in a register across the reduction.)
  const bool narrow_marks = !MGPU_RELATIVE_MARKS || storage.narrow;
  // The slot of the segment ending before a marked position, from its mark.
  auto slot_before = [&](Mark m) { return MGPU_RELATIVE_MARKS ? slot0 - head0 + m : (u64)m - 1; };
#endif
  if (ends) {
    // The first end (the tile's lead where k is 0 and the tile starts inside a segment).
    int i = __ffs(ends) - 1;
    T result = mine[i];
    if (!(heads & ((2u << i) - 1))) result = Op()(thread_prefix.value, result);
    if (k == 0 && !head0) {
      leads[tile] = result;
      lead = true;
    } else if (staged) {
      mine[i] = result;
      end_at[k] = first + i;
    } else {
#if MGPU_WIDE_MARKS
      if (narrow_marks) dest[slot_before(storage.heads[first + i + 1])] = result;
      else mine[i] = result;  // stored below
#endif
    }
    ++k;
  }
  // The others are final in their slots: only their positions move (a tile of short segments
  // has a dozen ends a thread).
  for (unsigned e = ends & (ends - 1); e; e &= e - 1, ++k) {
    int p = first + __ffs(e) - 1;
    if (staged) {
      end_at[k] = p;
    } else {
#if MGPU_WIDE_MARKS
      if (narrow_marks) dest[slot_before(storage.heads[p + 1])] = mine[p - first];
#endif
    }
  }
#if MGPU_WIDE_MARKS
  // Not narrow: each end's segment from the offsets, in a loop of its own (the rare search holds
  // no registers in the loop above).
  if (!narrow_marks) {
    const u64 position = (u64)blockIdx.x * MGPU_NV + first + 1;  // after the thread's item 0
    for (unsigned e = lead ? ends & (ends - 1) : ends; e; e &= e - 1) {
      const int i = __ffs(e) - 1;
      // (slot0 + !head0: the tile's first segment.)
      dest[first_segment_from(offsets, slot0 + !head0, num_segments, position + i) - 1] = mine[i];
    }
  }
#endif
  if (tid == 0) {
    totals[tile] = tile_total;
    continued[tile] = !head0 && tile_ends > 0;
  }
  if (staged) {
    __syncthreads();
    for (int j = !head0 + tid; j < tile_ends; j += MGPU_NT)
      dest[slot0 + j] = storage.values[end_at[j]];
  }
}
#endif

#ifdef MGPU_WANT_mgpu_segreduce_spine
struct SpineStorage {
  CtaScanStorageOf<SegPair> scan;
  SegPair prefix;
  i64 tile_id;
};

// The carry across tiles: the exclusive segmented scan of the tiles' totals, MGPU_NT *
// MGPU_SPINE_VT of them per spine tile, through the look-back (lookback_tiles: spine tiles taken
// in ticket order). A tile that continues a segment and ends it gets that segment's result,
// the carry of the tiles before it followed by its lead, into the slot before its first segment.
// (A minimum of 1 CTA per SM: without one, ptxas spilled 4 bytes of the 16-byte pair at 40
// registers, NVRTC 13.5.)
extern "C" __global__ void __launch_bounds__(MGPU_NT, 1)
    mgpu_segreduce_spine(const SegPair* totals, const T* leads, const unsigned char* continued,
                         const O* limits, u64 num_tiles, const u64* bad, T* dest, T identity,
                         u64* tickets, u64 first_ticket, TileStatusOf<SegPair> status) {
  __shared__ SpineStorage storage;
  int tid = threadIdx.x;
  grid_dependency_wait();  // for the tiles' records (launched dependent)
  grid_launch_dependents();  // a few CTAs: a one-shot SpMV's copy comes up behind them
  // Rejected input left the tiles' records unwritten: the spine still takes its tickets (the
  // look-back's count of them), but writes nothing.
  const bool rejected = seg_rejected(bad);
  const SegPair none{0, identity};
  constexpr u64 PER_TILE = (u64)MGPU_NT * MGPU_SPINE_VT;
  u64 num_spine = (num_tiles + PER_TILE - 1) / PER_TILE;
  if (seg_all_heads(bad)) {
    // The segment a tile continues began in the tile before: no scan, no look-back. The tickets
    // are drawn all the same (the host counts num_spine + gridDim.x of them).
    if (tid == 0) atomicAdd(tickets, blockIdx.x == 0 ? num_spine + 1 : 1ull);
    if (rejected) return;
    for (u64 s = blockIdx.x; s < num_spine; s += gridDim.x) {
      // The thread's tiles NT apart, so that a warp's loads are coalesced (each tile is
      // completed on its own here; the scan below needs a thread's tiles consecutive).
      u64 first = s * PER_TILE + (u64)tid;
      // Loaded before any store, as below.
      bool tile_continued[MGPU_SPINE_VT];
      T tile_leads[MGPU_SPINE_VT], carries[MGPU_SPINE_VT];
      O tile_slots[MGPU_SPINE_VT];
#pragma unroll
      for (int i = 0; i < MGPU_SPINE_VT; ++i) {
        u64 t = first + (u64)i * MGPU_NT;
        bool tile = t > 0 && t < num_tiles;  // tile 0 continues nothing
        tile_continued[i] = tile && continued[t];
        if (tile) {
          tile_leads[i] = leads[t];
          tile_slots[i] = limits[t];
          carries[i] = totals[t - 1].value;
        }
      }
#pragma unroll
      for (int i = 0; i < MGPU_SPINE_VT; ++i)
        if (tile_continued[i]) dest[tile_slots[i] - 1] = Op()(carries[i], tile_leads[i]);
    }
    return;
  }
  lookback_tiles(tickets, first_ticket, num_spine, storage.tile_id, status, SegPlus(), none,
                 [&](i64 s, const TileLookbackOf<SegPair, SegPlus>& lookback) {
    u64 first = (u64)s * PER_TILE + (u64)tid * MGPU_SPINE_VT;
    // Every record of the thread's tiles is loaded before the scan, so that the fix-up below
    // waits on no load (reading them in its loop, behind its stores, made the spine a chain of
    // dependent loads: 8.4 us of SpMV's 580 on 47K tiles).
    SegPair tile_totals[MGPU_SPINE_VT];
    T tile_leads[MGPU_SPINE_VT];
    O tile_slots[MGPU_SPINE_VT];
    bool tile_continued[MGPU_SPINE_VT];
#pragma unroll
    for (int i = 0; i < MGPU_SPINE_VT; ++i) {
      u64 t = first + i;
      tile_totals[i] = none;
      tile_continued[i] = false;
      if (t < num_tiles) {
        tile_totals[i] = totals[t];
        tile_continued[i] = continued[t];
        tile_leads[i] = leads[t];
        tile_slots[i] = limits[t];
      }
    }
    SegPair total = none;
#pragma unroll
    for (int i = 0; i < MGPU_SPINE_VT; ++i) total = SegPlus()(total, tile_totals[i]);
    SegPair aggregate;
    SegPair prefix = lookback.cta_scan(total, aggregate, storage.scan, &storage.prefix);
    __syncthreads();
    SegPair x = SegPlus()(storage.prefix, prefix);
#pragma unroll
    for (int i = 0; i < MGPU_SPINE_VT; ++i) {
      if (!rejected && tile_continued[i])
        dest[tile_slots[i] - 1] = Op()(x.value, tile_leads[i]);
      x = SegPlus()(x, tile_totals[i]);
    }
  });
}
#endif

#ifdef MGPU_WANT_mgpu_segreduce_fixup
// The spine of a plan in which every tile but the last holds a segment start (no tile lies inside
// one segment: mgpu_segreduce_headless found none). The segment a tile continues then began in
// the tile before, whose total is that segment's part there: each continued tile is completed
// from its neighbour alone, in one round of loads, without the spine's tickets, scan and
// look-back (7 us of SpMV's 585 on random rows).
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_segreduce_fixup(const SegPair* totals, const T* leads, const unsigned char* continued,
                         const O* limits, u64 num_tiles, T* dest) {
  grid_dependency_wait();  // for the tiles' records (launched dependent)
  u64 t = (u64)blockIdx.x * MGPU_NT + threadIdx.x;
  if (t == 0 || t >= num_tiles) return;  // tile 0 continues nothing
  bool c = continued[t];
  O slot = limits[t];
  T lead = leads[t];
  T carry = totals[t - 1].value;
  if (c) dest[slot - 1] = Op()(carry, lead);
}
#endif

#ifdef MGPU_WANT_mgpu_segreduce_copy_checked
// Copies `bytes` from `from` to `to` unless the findings `bad` name a bad index (bad[0..2]; an
// empty segment, bad[3], is an error only where it also set bad[0]): a one-shot SpMV's result,
// kept aside until its tiles had checked every column. Its first CTA reports the findings (with
// `report`), so the call waits for them, not for the copy. 16-byte words where both ends and the
// length allow, else 4-byte words or bytes; grid-stride.
extern "C" __global__ void mgpu_segreduce_copy_checked(const unsigned char* from,
                                                       unsigned char* to, u64 bytes,
                                                       const u64* bad, u64* report) {
  grid_dependency_wait();  // for the tiles' or the spine's results (launched dependent)
  if (report && blockIdx.x == 0 && threadIdx.x == 0) report_findings(bad, report);
  if ((bad[0] & bad[1] & bad[2]) != ~0ull) return;  // a bad index: write nothing
  u64 stride = (u64)gridDim.x * blockDim.x, i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 align = (u64)from | (u64)to | bytes;
  if (align % 16 == 0) {
    for (; i < bytes / 16; i += stride)
      reinterpret_cast<uint4*>(to)[i] = reinterpret_cast<const uint4*>(from)[i];
  } else if (align % 4 == 0) {
    for (; i < bytes / 4; i += stride)
      reinterpret_cast<unsigned*>(to)[i] = reinterpret_cast<const unsigned*>(from)[i];
  } else {
    for (; i < bytes; i += stride) to[i] = from[i];
  }
}
#endif

#ifdef MGPU_WANT_mgpu_segreduce_headless
// Sets *headless when a tile before the last holds no segment start (limits[t + 1] ==
// limits[t]): a plan without one completes its tiles with mgpu_segreduce_fixup.
extern "C" __global__ void mgpu_segreduce_headless(const O* limits, u64 num_tiles,
                                                   unsigned* headless) {
  u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  bool none = t + 1 < num_tiles && limits[t + 1] == limits[t];
  // One atomic per warp at most (one segment over 2^31 items leaves 730K tiles without a start).
  if (__ballot_sync(~0u, none) && (threadIdx.x & 31) == 0) atomicOr(headless, 1u);
}
#endif

// Tile limits: limits[t] = the first segment starting at or after tile t's first position, for
// t < num_tiles, and limits[num_tiles] = the first segment starting at `count` (the empty ones
// there follow the last non-empty segment). A team of 2^team_log consecutive lanes finds a limit:
// at each step all its lanes but the last read one offset each, which split the range left into
// as many parts as the team has lanes, so the search is log_team of the segments' dependent
// loads, not log2 (a chain of L2 round trips: teams of 16 made the unchecked calls at 2^24 3-5 us
// faster; BENCHMARKS.md). Parts by shifts: a 64-bit division is a long subroutine, and three a
// step made the searches slower than the binary search. The host picks the widest team of at
// least four whose threads fit one wave with the other CTAs (segreduce.rs), else a lane searches
// alone, by the plain binary search (the votes made it slower). `thread`
// is the calling thread's index in the partition's grid; every lane of its warp calls. On
// offsets that fail validation a limit is still a segment index, which the tiles do not use.
__device__ __forceinline__ void tile_limit(const O* offsets, u64 num_segments, u64 count,
                                           u64 num_tiles, O* limits, u64 thread,
                                           unsigned team_log) {
  const unsigned team = 1u << team_log;
  const unsigned parts_log = max(team_log, 1u), probes = (1u << parts_log) - 1;
  const u64 t = thread >> team_log;
  const unsigned rank = (unsigned)thread & (team - 1);
  const unsigned first_lane = (threadIdx.x % MGPU_WARP) & ~(team - 1);
  const u64 position = t < num_tiles ? t * MGPU_NV : count;
  // The limit lies in [lo, hi]; probe r of a step is lo + (span * (r + 1)) / 2^parts_log.
  u64 lo = 0, hi = t <= num_tiles ? num_segments : 0;
  if (team_log == 0) lo = hi = first_segment_from(offsets, lo, hi, position);  // a lane alone
  while (__any_sync(MGPU_FULL_MASK, lo < hi)) {
    const u64 span = hi - lo;
    const bool searching = lo < hi;
    const bool below = searching && rank < probes &&
                       (u64)offsets[lo + ((span * (rank + 1)) >> parts_log)] < position;
    // On increasing offsets the probes below `position` are the team's first k.
    const unsigned votes = __ballot_sync(MGPU_FULL_MASK, below) >> first_lane;
    const unsigned k = __popc(votes & ((2u << (team - 1)) - 1));
    if (searching) {  // past probe k - 1, up to probe k
      const u64 base = lo;
      if (k > 0) lo = base + ((span * k) >> parts_log) + 1;
      if (k < probes) hi = base + ((span * (k + 1)) >> parts_log);
    }
  }
  if (t <= num_tiles && rank == 0) limits[t] = (O)min(lo, num_segments);
}

#ifdef MGPU_WANT_mgpu_segreduce_partition
extern "C" __global__ void mgpu_segreduce_partition(const O* offsets, u64 num_segments,
                                                    u64 count, u64 num_tiles, O* limits,
                                                    unsigned team_log) {
  grid_launch_dependents();  // latency-bound searches: the tiles come up behind them
  tile_limit(offsets, num_segments, count, num_tiles, limits,
             (u64)blockIdx.x * blockDim.x + threadIdx.x, team_log);
}
#endif

#if defined(MGPU_WANT_mgpu_segreduce_codes) && !MGPU_WIDE_MARKS
// A plan's packed heads, read by mgpu_segreduce with MGPU_CODES in place of the offsets: tile t's
// words at codes[t * NT ...], and the extra word codes[num_tiles * NT], the last tile's next
// (clear: the input's end has no bit). Direct, non-empty segments (the helpers part is always
// compiled so); one CTA per tile, setting the words as a one-shot tile does.
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_segreduce_codes(const O* offsets, const O* limits, u64 num_segments, u64 count,
                         unsigned* codes) {
  __shared__ unsigned tile_codes[MGPU_NT + 1];
  int tid = threadIdx.x;
  const SegTile at = seg_tile(count);
  u64 seg_begin = limits[at.index];
  u64 seg_end = at.last ? num_segments : (u64)limits[at.index + 1];
  for (int j = tid; j <= MGPU_NT; j += MGPU_NT) tile_codes[j] = 0;
  __syncthreads();
  mark_codes(tile_codes, offsets, seg_begin, seg_end, num_segments, at, tid);
  __syncthreads();
  codes[at.index * MGPU_NT + tid] = tile_codes[tid];
  if (at.last && tid == 0) codes[at.num_tiles * MGPU_NT] = tile_codes[MGPU_NT];
}
#endif

#ifdef MGPU_WANT_mgpu_segreduce_validate_offsets
// Validation of offsets alone (no sources, no columns), with mgpu_segreduce_validate's findings
// in bad[0], bad[3] and bad[4]. A thread checks VALIDATE_ROUNDS x VALIDATE_VECS runs of
// VALIDATE_RUN consecutive segments, each run one 16-byte load (scalar loads where the offsets are
// not so aligned, and for the last, partial run), a round's loads in flight together: two rounds
// hold half the registers of one, so that the CTAs of a one-shot's launch fit in one wave beside
// its searches. A segment's neighbours come from its own run, the next lane's and
// the previous lane's (shuffles), and the warp's edge lanes load the one beyond. Segments are
// checked in the offsets' own width (the host sends 32-bit offsets past 2^32 - 1 items to
// mgpu_segreduce_validate) with indices within the CTA's tile. Atomics are rare: one per warp at
// most for each finding, and none where a smaller index (or a longer segment) is already recorded.
// A one-shot call's tile limits come from the same launch: its first `partition_ctas` CTAs are
// mgpu_segreduce_partition's, so the limits cost no launch of their own. The others check a tile
// each, then every (gridDim.x - partition_ctas)-th tile after it, counting from the last (the
// host launches at most a wave of them).
#define VALIDATE_ROUNDS 2
#define VALIDATE_VECS 4
#define VALIDATE_RUN (16 / (int)sizeof(O))
#define VALIDATE_ROUND (VALIDATE_VECS * 256 * VALIDATE_RUN)
#define VALIDATE_TILE (VALIDATE_ROUNDS * VALIDATE_ROUND)
template <int S>
struct OffsetWord {
  typedef u64 type;
};
template <>
struct OffsetWord<4> {
  typedef unsigned type;
};
// A tile's checks, the last segment's first so that the last finding set is the smallest index.
// STRICT: increasing offsets below `end`, else non-decreasing up to it. WHOLE: every segment of
// the tile exists and none is the first (no check of either per segment). A segment's length past
// a bad offset may be anything: the host reads the longest only where no offset is bad.
// `round`: where the runs of `x` start in the tile at `base`.
template <bool STRICT, bool WHOLE, typename W>
__device__ __forceinline__ void check_offsets(const W (&x)[VALIDATE_VECS][VALIDATE_RUN],
                                              const O* offsets, u64 base, int round,
                                              u64 num_segments, W end, int& first_bad,
                                              int& first_empty, W& longest) {
  const int tid = threadIdx.x, lane = tid % MGPU_WARP;
#pragma unroll
  for (int u = VALIDATE_VECS - 1; u >= 0; --u) {
    const u64 first = base + round + (u64)(u * 256 + tid) * VALIDATE_RUN;
    W before = __shfl_up_sync(MGPU_FULL_MASK, x[u][VALIDATE_RUN - 1], 1);
    W after = __shfl_down_sync(MGPU_FULL_MASK, x[u][0], 1);
    if (lane == 0) before = first > 0 && first <= num_segments ? (W)offsets[first - 1] : 0;
    if (lane == MGPU_WARP - 1)
      after = first + VALIDATE_RUN < num_segments ? (W)offsets[first + VALIDATE_RUN] : end;
#pragma unroll
    for (int e = VALIDATE_RUN - 1; e >= 0; --e) {
      const W prev = e == 0 ? before : x[u][e - 1], start = x[u][e];
      const W next = e == VALIDATE_RUN - 1 ? after : x[u][e + 1];
      const bool below_end = STRICT ? start < end : start <= end;
      bool ok = below_end && (STRICT ? start > prev : start >= prev);
      if (!WHOLE && first + e == 0) ok = below_end && start == 0;
      const bool live = WHOLE || first + e < num_segments;
      const W len = next - start;  // 0 past the last segment
      const int at = round + (u * 256 + tid) * VALIDATE_RUN + e;
      first_bad = live && !ok ? at : first_bad;
      if (!STRICT) first_empty = live && len == 0 ? at : first_empty;
      longest = max(longest, len);
    }
  }
}

extern "C" __global__ void __launch_bounds__(256)
    mgpu_segreduce_validate_offsets(const O* offsets, u64 num_segments, u64 count, int strict,
                                    u64* bad, unsigned partition_ctas, u64 num_tiles,
                                    O* limits, unsigned team_log) {
  typedef typename OffsetWord<sizeof(O)>::type W;
  const int tid = threadIdx.x, lane = tid % MGPU_WARP;
  grid_launch_dependents();  // a short launch: the tiles come up behind it
  if (blockIdx.x < partition_ctas) {
    tile_limit(offsets, num_segments, count, num_tiles, limits, (u64)blockIdx.x * 256 + tid,
               team_log);
    return;
  }
  const W end = (W)count;
  const bool aligned = ((u64)offsets % 16) == 0;
  // The longest segment recorded so far, read before the offsets so that its round trip overlaps
  // theirs (read after them, it kept every CTA resident a round trip longer).
  u64 recorded = lane == 0 ? ((volatile u64*)bad)[4] : 0;
  const u64 num_checks = (num_segments + VALIDATE_TILE - 1) / VALIDATE_TILE;
  for (u64 tile = blockIdx.x - partition_ctas; tile < num_checks;
       tile += gridDim.x - partition_ctas) {
    // The last offsets first: the first ones, which the first tiles read again, are then the
    // last read, and the last that L2 evicts.
    const u64 base = (num_checks - 1 - tile) * VALIDATE_TILE;
    int first_bad = VALIDATE_TILE, first_empty = VALIDATE_TILE;
    W longest = 0;
    const bool whole = base > 0 && base + VALIDATE_TILE <= num_segments;
    // The last round first, so that the last finding set is the smallest index.
#pragma unroll 1
    for (int round = (VALIDATE_ROUNDS - 1) * VALIDATE_ROUND; round >= 0;
         round -= VALIDATE_ROUND) {
      W x[VALIDATE_VECS][VALIDATE_RUN];
#pragma unroll
      for (int u = 0; u < VALIDATE_VECS; ++u) {
        const u64 first = base + round + (u64)(u * 256 + tid) * VALIDATE_RUN;
        if (aligned && first + VALIDATE_RUN <= num_segments) {
          const uint4 v = *(const uint4*)(offsets + first);
          memcpy(x[u], &v, 16);
        } else {
#pragma unroll
          for (int e = 0; e < VALIDATE_RUN; ++e)  // past the last segment: its end, `count`
            x[u][e] = first + e < num_segments ? (W)offsets[first + e] : end;
        }
      }
#define MGPU_CHECK_OFFSETS(STRICT, WHOLE)                                              \
  check_offsets<STRICT, WHOLE>(x, offsets, base, round, num_segments, end, first_bad, \
                               first_empty, longest)
      if (strict) {
        if (whole) MGPU_CHECK_OFFSETS(true, true);
        else MGPU_CHECK_OFFSETS(true, false);
      } else {
        if (whole) MGPU_CHECK_OFFSETS(false, true);
        else MGPU_CHECK_OFFSETS(false, false);
      }
#undef MGPU_CHECK_OFFSETS
    }
#pragma unroll
    for (int d = MGPU_WARP / 2; d > 0; d /= 2) {
      first_bad = min(first_bad, __shfl_xor_sync(~0u, first_bad, d));
      first_empty = min(first_empty, __shfl_xor_sync(~0u, first_empty, d));
      longest = max(longest, __shfl_xor_sync(~0u, longest, d));
    }
    if (lane == 0) {
      volatile u64* seen = bad;
      if (first_bad < VALIDATE_TILE && base + first_bad < seen[0])
        atomicMin(bad, base + first_bad);
      if (!strict && first_empty < VALIDATE_TILE && base + first_empty < seen[3])
        atomicMin(bad + 3, base + first_empty);
      if (longest > 0 && ~(u64)longest < recorded) {
        atomicMin(bad + 4, ~(u64)longest);
        recorded = ~(u64)longest;
      }
    }
  }
}
#endif

#ifdef MGPU_WANT_mgpu_segreduce_validate
// Validation: the first bad index of each check to bad[0..3] (atomicMin; the host sets them to
// ~0): bad[0] offsets (offsets[0] == 0; non-decreasing, or increasing when `strict`; at most
// `count`, or less when `strict`), bad[1] sources (segment i's items lie in [0, data_len)),
// bad[2] columns (< vec_len); bad[3], the first empty segment (none when `strict` passes); and
// bad[4], ~ the longest segment's length (meaningful when the offsets pass), so that a caller
// can skip the work that no segment needs.
// A warp checks 32 consecutive segments VALIDATE_UNROLL times per step, each lane loading its
// segment's start and borrowing its neighbours' through shuffles (the warp's edge lanes load the
// one beyond): one load per segment, all of a step's loads in flight at once.
// Empty segments are counted by warp: the lowest of a warp's empties is one atomic, and a lane
// that has seen one stops looking (its later segments come after it), so many empty segments are
// no stream of atomics on one address. The columns are a second loop of their own: four to a
// 16-byte load where they are aligned, VALIDATE_UNROLL loads in flight per thread.
#define VALIDATE_UNROLL 8
extern "C" __global__ void mgpu_segreduce_validate(const O* offsets, u64 num_segments, u64 count,
                                                   int strict, const O* sources, u64 data_len,
                                                   const unsigned* cols, u64 num_cols,
                                                   u64 vec_len, u64* bad) {
  u64 stride = (u64)gridDim.x * blockDim.x;
  u64 end = num_segments;
  int lane = threadIdx.x % MGPU_WARP;
  bool seen_empty = strict;  // strict offsets that pass have no empty segment
  u64 longest = 0;
  // The loop's bound is the warp's (its first lane's), so every lane takes part in the shuffles.
  for (u64 warp_first = (u64)blockIdx.x * blockDim.x + threadIdx.x - lane; warp_first < end;
       warp_first += VALIDATE_UNROLL * stride) {
    u64 first = warp_first + lane;
    O start[VALIDATE_UNROLL], edge[VALIDATE_UNROLL];
#pragma unroll
    for (int u = 0; u < VALIDATE_UNROLL; ++u) {
      u64 i = first + u * stride;
      start[u] = i < num_segments ? offsets[i] : (O)0;
      edge[u] = 0;
      if (lane == 0 && i > 0 && i < num_segments) edge[u] = offsets[i - 1];
      if (lane == MGPU_WARP - 1 && i + 1 < num_segments) edge[u] = offsets[i + 1];
    }
#pragma unroll
    for (int u = 0; u < VALIDATE_UNROLL; ++u) {
      u64 i = first + u * stride;
      O up = __shfl_up_sync(~0u, start[u], 1), down = __shfl_down_sync(~0u, start[u], 1);
      if (i < num_segments) {
        u64 b = start[u];
        u64 prev = lane == 0 ? (u64)edge[u] : (u64)up;
        u64 next = i + 1 >= num_segments ? count
                   : lane == MGPU_WARP - 1 ? (u64)edge[u]
                                           : (u64)down;
        bool ok;
        if (i == 0) ok = b == 0;
        else if (strict) ok = b > prev;
        else ok = b >= prev;
        ok = ok && (strict ? b < count : b <= count);
        if (!ok) atomicMin(bad, i);
        u64 len = next > b ? next - b : 0;
        if (ok) longest = max(longest, len);
        if (ok && sources) {
          u64 source = sources[i];
          if (source > data_len || len > data_len - source) atomicMin(bad + 1, i);
        }
        if (ok && !seen_empty) {
          bool empty = len == 0;
          unsigned lanes = __activemask();
          unsigned empties = __ballot_sync(lanes, empty);
          if (empty) {
            seen_empty = true;
            if ((empties & ((1u << lane) - 1)) == 0) atomicMin(bad + 3, i);
          }
        }
      }
    }
  }
  // A column at or past vec_len (none can be past 2^32 - 1).
  const bool narrow = vec_len <= 0xffffffffull;
  const unsigned limit = (unsigned)vec_len;
  u64 thread = (u64)blockIdx.x * blockDim.x + threadIdx.x, vectors = 0;
  if (num_cols && ((u64)cols % 16) == 0) {
    vectors = num_cols / 4;
    const uint4* quads = (const uint4*)cols;
    for (u64 q = thread; q < vectors; q += VALIDATE_UNROLL * stride) {
      uint4 c[VALIDATE_UNROLL];
#pragma unroll
      for (int u = 0; u < VALIDATE_UNROLL; ++u)
        c[u] = q + u * stride < vectors ? quads[q + u * stride] : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int u = 0; u < VALIDATE_UNROLL; ++u) {
        unsigned top = max(max(c[u].x, c[u].y), max(c[u].z, c[u].w));
        if (narrow && top >= limit) {
          u64 at = 4 * (q + u * stride);
          at += c[u].x >= limit ? 0 : c[u].y >= limit ? 1 : c[u].z >= limit ? 2 : 3;
          atomicMin(bad + 2, at);
        }
      }
    }
  }
  for (u64 i = 4 * vectors + thread; i < num_cols; i += stride)
    if (narrow && cols[i] >= limit) atomicMin(bad + 2, i);
#pragma unroll
  for (int d = MGPU_WARP / 2; d > 0; d /= 2) longest = max(longest, __shfl_xor_sync(~0u, longest, d));
  if (lane == 0 && longest > 0) atomicMin(bad + 4, ~longest);
}
#endif
