// kernel_select.cu: the first k keys of a segment by radix select, one CTA per segment.
//   mgpu_radix_select  stages a segment's numbers (MGPU_ORDER_BITS, as the radix sort orders
//                      them) in shared memory, finds the k-th smallest number T digit by digit
//                      (a shared histogram of 8-bit digits per pass), keeps every key below T and
//                      the first keys equal to T in input order, and writes them: sorted (bitonic
//                      over (number, index)) or in input order, for a later round to select among.
// A segment is either a CSR segment or a chunk of a whole array. The keys are read once from
// global memory; every key written is the caller's own (payloads and signs kept).

#if defined(MGPU_WANT_mgpu_radix_select)
#define SELECT_MAX_WARPS 16
// Keys a thread ranks per round of the selection (registers: the number and two ballots each).
#define SELECT_V (sizeof(U) == 8 ? 2 : 4)
// Kept keys that one warp sorts alone (no CTA barriers).
#define SELECT_WARP_SORT 256

struct __align__(16) SelectShared {
  unsigned hist[RADIX_BINS];
  // Per-warp counts of a round's keys below and equal to T, double-buffered by round parity.
  unsigned below[2][SELECT_MAX_WARPS];
  unsigned equal[2][SELECT_MAX_WARPS];
  unsigned digit;
  unsigned remaining;
  unsigned in_digit;
};

// lanemask_lt: kernel_radix.cu, before this file in the radix family's source.
__device__ __forceinline__ u64 segment_offset(const void* offsets, int wide, u64 i) {
  return wide ? ((const u64*)offsets)[i] : (u64)((const unsigned*)offsets)[i];
}

// Adds the lanes' keys of digit `digit` (where `counted`) to `hist`: one atomic per distinct
// digit of the warp, so that keys sharing their top digits (most keys, in the first pass) do not
// serialize on one counter. Called by every lane of the warp.
__device__ __forceinline__ void count_digit(unsigned* hist, unsigned digit, bool counted) {
  const unsigned lanes = __ballot_sync(MGPU_FULL_MASK, counted);
  if (counted) {
    const unsigned peers = __match_any_sync(lanes, digit);
    if ((peers & lanemask_lt()) == 0) atomicAdd(&hist[digit], __popc(peers));
  }
}

// (number, index) pairs at `nums`, `index` (a power of two of them): a bitonic sort by `lanes`
// threads from `lane`, which `sync` brings together after each step.
template <typename Sync>
__device__ __forceinline__ void bitonic(U* nums, unsigned* index, int width, int lane, int lanes,
                                        Sync sync) {
  for (int size = 2; size <= width; size <<= 1) {
    for (int stride = size / 2; stride > 0; stride /= 2) {
      for (int j = lane; j < width / 2; j += lanes) {
        const int a = 2 * j - (j & (stride - 1)), b = a + stride;
        const U xa = nums[a], xb = nums[b];
        const unsigned ia = index[a], ib = index[b];
        const bool after = xa > xb || (xa == xb && ia > ib);
        if (after == ((a & size) == 0)) {
          nums[a] = xb;
          nums[b] = xa;
          index[a] = ib;
          index[b] = ia;
        }
      }
      sync();
    }
  }
}

// Segment `segment`'s keys (its numbers in `nums[0..len)`), the first `k` selected to
// `out_keys[segment * k ..]` and their positions (the input's `positions` at them, else the
// index in the segment where `local`, else in the whole input) to `out_positions`. Up to 512
// threads, 3 CTAs an SM: 40 registers, no spills (at 1024 threads ptxas spilled at 32).
extern "C" __global__ void __launch_bounds__(512, 3)
    mgpu_radix_select(const K* __restrict__ keys, const unsigned* __restrict__ positions,
                      const void* offsets, int wide_offsets, u64 chunk, u64 num_segments,
                      u64 count, unsigned k, int local, int begin_bit, int bits, u64 flip,
                      int sorted, K* __restrict__ out_keys, unsigned* __restrict__ out_positions) {
  extern __shared__ __align__(16) unsigned char select_smem[];
  __shared__ SelectShared s;
  const int tid = threadIdx.x, nt = blockDim.x, warp = tid / MGPU_WARP, lane = tid % MGPU_WARP;
  const int warps = nt / MGPU_WARP;
  const U mask = bits >= (int)(8 * sizeof(U)) ? ~(U)0 : (((U)1 << bits) - 1);
  const int passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
  const int top_shift = (passes - 1) * RADIX_BITS;
  const U highest = ~(U)0;

  for (u64 segment = blockIdx.x; segment < num_segments; segment += gridDim.x) {
    u64 start, end;
    if (offsets) {
      start = segment_offset(offsets, wide_offsets, segment);
      end = segment + 1 < num_segments ? segment_offset(offsets, wide_offsets, segment + 1) : count;
    } else {
      start = segment * chunk;
      end = min(start + chunk, count);
    }
    const int len = (int)(end - start);
    const int kk = min((int)k, len);
    if (kk == 0) continue;
    // The numbers, then (after the selection) the kept numbers in their output order.
    U* nums = (U*)select_smem;
    // The kept keys' indices in the segment, parallel to nums; room for the sort's padding.
    const int width = sorted && kk > 1 ? 1 << (32 - __clz(kk - 1)) : kk;
    unsigned* index = (unsigned*)(nums + ((max(len, width) + 3) & ~3));
    const K* segment_keys = keys + start;
    const bool all = kk == len;

    // Stage the numbers, counting the top digits on the way.
    for (int b = tid; b < RADIX_BINS; b += nt) s.hist[b] = 0;
    __syncthreads();
    for (int first = 0; first < len; first += 4 * nt) {
      K key[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (first + j * nt + tid < len) key[j] = segment_keys[first + j * nt + tid];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int i = first + j * nt + tid;
        const U x = (((U)(MGPU_ORDER_BITS(key[j])) ^ (U)flip) >> begin_bit) & mask;
        if (i < len) nums[i] = x;
        if (!all) count_digit(s.hist, (unsigned)(x >> top_shift) & (RADIX_BINS - 1), i < len);
      }
    }
    __syncthreads();

    // T's digits known so far (`known` of them, as `prefix`); `remaining`: how many of the keys
    // whose known digits are T's are kept (the first ones in input order). All keys whose known
    // digits are below T's are kept.
    U prefix = 0, known = 0;
    unsigned remaining = kk;
    if (!all) {
      for (int pass = passes - 1; pass >= 0; --pass) {
        const int shift = pass * RADIX_BITS;
        if (pass != passes - 1) {
          for (int b = tid; b < RADIX_BINS; b += nt) s.hist[b] = 0;
          __syncthreads();
          for (int first = 0; first < len; first += nt) {
            const int i = first + tid;
            const U x = i < len ? nums[i] : highest;
            count_digit(s.hist, (unsigned)(x >> shift) & (RADIX_BINS - 1),
                        i < len && (x & known) == prefix);
          }
          __syncthreads();
        }
        if (warp == 0) {
          constexpr int PER_LANE = RADIX_BINS / MGPU_WARP;
          unsigned c[PER_LANE], sum = 0;
#pragma unroll
          for (int j = 0; j < PER_LANE; ++j) sum += c[j] = s.hist[lane * PER_LANE + j];
          unsigned inclusive = sum;
#pragma unroll
          for (int o = 1; o < MGPU_WARP; o <<= 1) {
            const unsigned t = __shfl_up_sync(MGPU_FULL_MASK, inclusive, o);
            if (lane >= o) inclusive += t;
          }
          unsigned before = inclusive - sum;
#pragma unroll
          for (int j = 0; j < PER_LANE; ++j) {
            if (before < remaining && remaining <= before + c[j]) {
              s.digit = lane * PER_LANE + j;
              s.remaining = remaining - before;
              s.in_digit = c[j];
            }
            before += c[j];
          }
        }
        __syncthreads();
        prefix |= (U)s.digit << shift;
        known |= (U)(RADIX_BINS - 1) << shift;
        remaining = s.remaining;
        // Every key of T's digits so far is kept: no lower digit decides.
        if (s.in_digit == remaining) break;
      }
    }

    if (all) {
      for (int i = tid; i < len; i += nt) index[i] = i;
    } else {
      // Keep, in input order, the keys below T's known digits and the first `remaining` equal
      // to them. A warp ranks SELECT_V runs of 32 consecutive keys; a round, nt * SELECT_V keys.
      // A kept key's place is at most its index, and later rounds read higher indices only:
      // nums is compacted in place.
      unsigned below_base = 0, equal_base = 0;
      for (int first = 0, round = 0; first < len; first += nt * SELECT_V, ++round) {
        const int buffer = round & 1, warp_first = first + warp * MGPU_WARP * SELECT_V;
        U x[SELECT_V];
        unsigned lts[SELECT_V], eqs[SELECT_V], warp_below = 0, warp_equal = 0;
#pragma unroll
        for (int j = 0; j < SELECT_V; ++j) {
          const int i = warp_first + j * MGPU_WARP + lane;
          x[j] = i < len ? nums[i] : highest;
          const U y = x[j] & known;
          lts[j] = __ballot_sync(MGPU_FULL_MASK, i < len && y < prefix);
          eqs[j] = __ballot_sync(MGPU_FULL_MASK, i < len && y == prefix);
          warp_below += __popc(lts[j]);
          warp_equal += __popc(eqs[j]);
        }
        if (lane == 0) {
          s.below[buffer][warp] = warp_below;
          s.equal[buffer][warp] = warp_equal;
        }
        __syncthreads();
        // The warps' counts, scanned across a warp's lanes.
        unsigned b = lane < warps ? s.below[buffer][lane] : 0;
        unsigned e = lane < warps ? s.equal[buffer][lane] : 0;
#pragma unroll
        for (int o = 1; o < MGPU_WARP; o <<= 1) {
          const unsigned tb = __shfl_up_sync(MGPU_FULL_MASK, b, o);
          const unsigned te = __shfl_up_sync(MGPU_FULL_MASK, e, o);
          if (lane >= o) {
            b += tb;
            e += te;
          }
        }
        unsigned below = below_base + __shfl_sync(MGPU_FULL_MASK, b, warp) - warp_below;
        unsigned equal = equal_base + __shfl_sync(MGPU_FULL_MASK, e, warp) - warp_equal;
        below_base += __shfl_sync(MGPU_FULL_MASK, b, MGPU_WARP - 1);
        equal_base += __shfl_sync(MGPU_FULL_MASK, e, MGPU_WARP - 1);
#pragma unroll
        for (int j = 0; j < SELECT_V; ++j) {
          const unsigned lb = below + __popc(lts[j] & lanemask_lt());
          const unsigned le = equal + __popc(eqs[j] & lanemask_lt());
          const bool lt = (lts[j] >> lane) & 1, eq = (eqs[j] >> lane) & 1;
          if (lt || (eq && le < remaining)) {
            const unsigned place = lb + min(le, remaining);
            nums[place] = x[j];
            index[place] = warp_first + j * MGPU_WARP + lane;
          }
          below += __popc(lts[j]);
          equal += __popc(eqs[j]);
        }
        if (below_base + min(equal_base, remaining) >= (unsigned)kk) break;
      }
    }
    __syncthreads();

    if (sorted && width > 1) {
      for (int j = kk + tid; j < width; j += nt) {
        nums[j] = highest;
        index[j] = ~0u;
      }
      __syncthreads();
      // Distinct (number, index) pairs: the order is the stable one.
      if (width <= SELECT_WARP_SORT) {
        if (warp == 0) bitonic(nums, index, width, lane, MGPU_WARP, [] { __syncwarp(); });
        __syncthreads();
      } else {
        bitonic(nums, index, width, tid, nt, [] { __syncthreads(); });
      }
    }

    for (int j = tid; j < kk; j += nt) {
      const unsigned i = index[j];
      const u64 slot = segment * k + j;
      out_keys[slot] = segment_keys[i];
      if (out_positions)
        out_positions[slot] = positions ? positions[start + i] : local ? i : (unsigned)(start + i);
    }
    __syncthreads();
  }
}
#endif
