// kernel_select.cu: the first k keys of a segment by radix select, one CTA per segment.
//   mgpu_radix_select  stages a segment's numbers (MGPU_ORDER_BITS, as the radix sort orders
//                      them) in shared memory, finds the k-th smallest number T digit by digit
//                      (a shared histogram of 8-bit digits per pass), keeps every key below T and
//                      the first keys equal to T in input order, and writes them: sorted (bitonic
//                      over (number, index)) or in input order, for a later round to select among.
// A segment is either a CSR segment or a chunk of a whole array. The keys are read once from
// global memory; every key written is the caller's own (payloads and signs kept).

#if defined(MGPU_WANT_mgpu_radix_select)
#define SELECT_MAX_WARPS 32

struct __align__(16) SelectShared {
  unsigned hist[RADIX_BINS];
  // Per-warp counts of a round's keys below and equal to T, double-buffered by round parity.
  unsigned below[2][SELECT_MAX_WARPS];
  unsigned equal[2][SELECT_MAX_WARPS];
  unsigned digit;
  unsigned remaining;
};

__device__ __forceinline__ unsigned lanemask_lt() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

__device__ __forceinline__ u64 segment_offset(const void* offsets, int wide, u64 i) {
  return wide ? ((const u64*)offsets)[i] : (u64)((const unsigned*)offsets)[i];
}

// Segment `segment`'s keys (its numbers in `nums[0..len)`), the first `k` selected to
// `out_keys[segment * k ..]` and their positions (the input's `positions` at them, else the
// index in the segment where `local`, else in the whole input) to `out_positions`.
extern "C" __global__ void __launch_bounds__(1024)
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

#pragma unroll 4
    for (int i = tid; i < len; i += nt)
      nums[i] = (((U)(MGPU_ORDER_BITS(segment_keys[i])) ^ (U)flip) >> begin_bit) & mask;
    __syncthreads();

    if (kk == len) {
      for (int i = tid; i < len; i += nt) index[i] = i;
    } else {
      // T, the kk-th smallest number, one digit per pass from the top; `remaining` ends as how
      // many keys equal to T are kept.
      U prefix = 0, known = 0;
      unsigned remaining = kk;
      for (int pass = passes - 1; pass >= 0; --pass) {
        const int shift = pass * RADIX_BITS;
        for (int b = tid; b < RADIX_BINS; b += nt) s.hist[b] = 0;
        __syncthreads();
        for (int i = tid; i < len; i += nt) {
          U x = nums[i];
          if ((x & known) == prefix) atomicAdd(&s.hist[(unsigned)(x >> shift) & (RADIX_BINS - 1)], 1u);
        }
        __syncthreads();
        if (warp == 0) {
          constexpr int PER_LANE = RADIX_BINS / MGPU_WARP;
          unsigned c[PER_LANE], sum = 0;
#pragma unroll
          for (int j = 0; j < PER_LANE; ++j) sum += c[j] = s.hist[lane * PER_LANE + j];
          unsigned inclusive = sum;
#pragma unroll
          for (int o = 1; o < MGPU_WARP; o <<= 1) {
            unsigned t = __shfl_up_sync(MGPU_FULL_MASK, inclusive, o);
            if (lane >= o) inclusive += t;
          }
          unsigned before = inclusive - sum;
#pragma unroll
          for (int j = 0; j < PER_LANE; ++j) {
            if (before < remaining && remaining <= before + c[j]) {
              s.digit = lane * PER_LANE + j;
              s.remaining = remaining - before;
            }
            before += c[j];
          }
        }
        __syncthreads();
        prefix |= (U)s.digit << shift;
        known |= (U)(RADIX_BINS - 1) << shift;
        remaining = s.remaining;
      }

      // Keep, in input order, every key below T and the first `remaining` equal to T. A kept
      // key's place is at most its index, and later rounds read higher indices only: nums is
      // compacted in place.
      unsigned below_base = 0, equal_base = 0;
      for (int first = 0, round = 0; first < len; first += nt, ++round) {
        const int i = first + tid, buffer = round & 1;
        const U x = i < len ? nums[i] : highest;
        const bool lt = i < len && x < prefix, eq = i < len && x == prefix;
        const unsigned lts = __ballot_sync(MGPU_FULL_MASK, lt);
        const unsigned eqs = __ballot_sync(MGPU_FULL_MASK, eq);
        if (lane == 0) {
          s.below[buffer][warp] = __popc(lts);
          s.equal[buffer][warp] = __popc(eqs);
        }
        __syncthreads();
        unsigned below = below_base + __popc(lts & lanemask_lt());
        unsigned equal = equal_base + __popc(eqs & lanemask_lt());
        for (int w = 0; w < warps; ++w) {
          const unsigned b = s.below[buffer][w], e = s.equal[buffer][w];
          below_base += b;
          equal_base += e;
          below += w < warp ? b : 0;
          equal += w < warp ? e : 0;
        }
        if (lt || (eq && equal < remaining)) {
          const unsigned place = below + min(equal, remaining);
          nums[place] = x;
          index[place] = i;
        }
        if (below_base + min(equal_base, remaining) >= (unsigned)kk) break;
      }
    }
    __syncthreads();

    if (sorted) {
      for (int j = kk + tid; j < width; j += nt) {
        nums[j] = highest;
        index[j] = ~0u;
      }
      __syncthreads();
      // Bitonic sort of (number, index): distinct pairs, so the order is the stable one.
      for (int size = 2; size <= width; size <<= 1) {
        for (int stride = size / 2; stride > 0; stride /= 2) {
          for (int j = tid; j < width / 2; j += nt) {
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
          __syncthreads();
        }
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
