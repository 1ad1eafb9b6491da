// kernel_radix.cu: the LSD radix sort of Onesweep (Adinets & Merrill, 2022), 8-bit digits.
//   mgpu_radix_histogram  reads the keys once and counts every pass's digits, per portion;
//   mgpu_radix_offsets    turns the counts into each (portion, pass, digit)'s first output position;
//   mgpu_radix_pass       one pass: a tile ranks its keys by digit, finds where each digit bin
//                         starts with one look-back per bin (lookback.cuh), and scatters;
//   mgpu_radix_tile       an input of one tile: every pass in shared memory, one launch;
//   mgpu_radix_segments   the same for a list of segments of at most a tile, a CTA each.
// Keys are ordered by MGPU_ORDER_BITS(x), an unsigned number of type U (the host's radix key);
// the keys' own bits are what moves. A pass takes bits [shift, shift + 8) of that number, XORed
// with `flip` (all ones for a descending order; cut to U).

#define RADIX_BITS 8
#define RADIX_BINS 256
#define RADIX_MAX_PASSES 8
static_assert(MGPU_NT >= RADIX_BINS, "a thread per digit bin");

__device__ __forceinline__ unsigned digit_of(const K& key, int shift, unsigned mask, u64 flip) {
  U bits = (U)(MGPU_ORDER_BITS(key)) ^ (U)flip;
  return (unsigned)(bits >> shift) & mask;
}

// The digit of a key past the input's end: the last bin, so that such keys, which come after
// every key of the input in the tile's order, rank after them all and take the sorted tile's last
// places (a pass counts them in bin RADIX_BINS - 1 and takes them off its count there).
#define RADIX_PAD_DIGIT (RADIX_BINS - 1)

// The lanes whose `label` agrees with this lane's in bit `bit`: one ballot, its complement where
// this lane's bit is clear (predicated, no select).
__device__ __forceinline__ unsigned lanes_agreeing(unsigned label, unsigned bit) {
  unsigned lanes;
  asm("{\n .reg .pred p;\n and.b32 %0, %1, %2;\n setp.ne.u32 p, %0, 0;\n"
      " vote.sync.ballot.b32 %0, p, 0xffffffff;\n @!p not.b32 %0, %0;\n}"
      : "=r"(lanes)
      : "r"(label), "r"(1u << bit));
  return lanes;
}

// Shared-memory words by their 32-bit address (__cvta_generic_to_shared). Volatile: the ranking
// orders them with __syncwarp, which the compiler must not move them across.
__device__ __forceinline__ void shared_add(unsigned at, unsigned x) {
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(at), "r"(x) : "memory");
}
__device__ __forceinline__ unsigned shared_fetch_add(unsigned at, unsigned x) {
  unsigned old;
  asm volatile("atom.shared.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(at), "r"(x) : "memory");
  return old;
}
__device__ __forceinline__ unsigned shared_load(unsigned at) {
  unsigned x;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x) : "r"(at) : "memory");
  return x;
}
__device__ __forceinline__ void shared_store(unsigned at, unsigned x) {
  asm volatile("st.shared.u32 [%0], %1;" ::"r"(at), "r"(x) : "memory");
}

__device__ __forceinline__ unsigned lanemask_lt() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

// `*p = x` (global memory) where `store`: predicated, not branched around, so that the loads
// feeding every item's store can all be in flight at once (items of 1, 2, 4 or 8 bytes).
template <typename X>
__device__ __forceinline__ void store_global_if(bool store, X* p, X x) {
  u64 at = __cvta_generic_to_global(p);
  if constexpr (sizeof(X) != 1 && sizeof(X) != 2 && sizeof(X) != 4 && sizeof(X) != 8) {
    // A user's value of another size: an ordinary branch.
    if (store) *p = x;
  } else if constexpr (sizeof(X) == 8) {
    u64 bits;
    memcpy(&bits, &x, 8);
    asm volatile("{\n .reg .pred q;\n setp.ne.u32 q, %0, 0;\n @q st.global.b64 [%1], %2;\n}"
                 :
                 : "r"((unsigned)store), "l"(at), "l"(bits));
  } else {
    unsigned bits = 0;
    memcpy(&bits, &x, sizeof(X));
    if constexpr (sizeof(X) == 4)
      asm volatile("{\n .reg .pred q;\n setp.ne.u32 q, %0, 0;\n @q st.global.b32 [%1], %2;\n}"
                   :
                   : "r"((unsigned)store), "l"(at), "r"(bits));
    else if constexpr (sizeof(X) == 2)
      asm volatile("{\n .reg .pred q;\n setp.ne.u32 q, %0, 0;\n @q st.global.b16 [%1], %2;\n}"
                   :
                   : "r"((unsigned)store), "l"(at), "h"((unsigned short)bits));
    else
      asm volatile("{\n .reg .pred q;\n setp.ne.u32 q, %0, 0;\n @q st.global.b8 [%1], %2;\n}"
                   :
                   : "r"((unsigned)store), "l"(at), "h"((unsigned short)bits));
  }
}

struct Plus32 {
  __device__ __forceinline__ unsigned operator()(unsigned a, unsigned b) const { return a + b; }
};
struct Plus64 {
  __device__ __forceinline__ u64 operator()(u64 a, u64 b) const { return a + b; }
};

// What ranking a tile needs besides the tile. `offsets[w][d]`: warp w's count of digit d, then
// the place in the tile sorted by digit of warp w's next key of digit d.
struct RankStorage {
  unsigned offsets[MGPU_WARPS][RADIX_BINS];
  unsigned bin_start[RADIX_BINS];
  CtaScanStorageOf<unsigned> scan;
};

// Ranks the tile: `item[i]`, the digit of the thread's key i (striped: key i of lane l of warp w is
// the tile's w * 32 * VT + i * 32 + l; RADIX_PAD_DIGIT past the input's end), becomes the key's
// place in the tile sorted by digit, stably. Every key has a place, padding included: those past
// the end take the places from the input's count on. Returns, in thread b < RADIX_BINS, the tile's
// count of digit b without the `pads` padding keys, which `publish(count)` receives (in thread b)
// as soon as it is known, before the ranking: the pass publishes it for later tiles' look-backs.
// In three steps, as in Onesweep: every warp counts its keys' digits (shared-memory atomics, one
// per key); thread b turns warp w's count of digit b into the place of warp w's first key of
// digit b; every warp ranks its keys in turn (key i of every lane, then key i + 1): the lanes of
// one digit find each other by one ballot per digit bit, each takes the digit's place plus the
// number of them below it, and the highest moves the place past them all. (A match table in
// shared memory instead of the ballots, each lane ORing its bit into its digit's word, took fewer
// instructions but was 8% slower on the H100: a chain of shared-memory round trips per key.)
//
// ATOMIC: the highest lane of a digit adds their number to the digit's counter and shuffles the
// old value to the others; else every lane loads the counter and the highest stores it back,
// moved past them (a load by the highest alone and a shuffle put one more round trip on the
// chain from key to key). The atomic halves the ranking's shared-memory accesses (a sort of
// 2^28 i32 keys on the H100: 5.51 -> 5.33 ms at 3 CTAs per SM), but where fewer CTAs leave its
// return's latency exposed it lost: pairs' sorts (one CTA per SM) 2-3.7%, segments of 5,000
// keys 4.7%.
template <bool ATOMIC, typename Publish>
__device__ __forceinline__ unsigned rank_tile(unsigned (&item)[MGPU_VT], int pads,
                                              RankStorage& s, Publish&& publish) {
  int tid = threadIdx.x, warp = tid / MGPU_WARP, lane = tid & (MGPU_WARP - 1);
  unsigned* offsets = s.offsets[warp];
  for (int b = lane; b < RADIX_BINS; b += MGPU_WARP) offsets[b] = 0;
  // From here `item[i]` is the shared-memory address of the warp's counter of the key's digit,
  // which also tells the digits of one warp apart (its counters are 256 words from one base): the
  // ballots read it. Kept as digits, the compiler held the digits, the counters' addresses and the
  // keys at once (80 registers at 384x19; now 56 at 384x19x3 without spills).
  unsigned at_base = (unsigned)__cvta_generic_to_shared(offsets);
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) item[i] = at_base + 4 * item[i];
  __syncwarp();
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) shared_add(item[i], 1u);
  __syncthreads();
  // Thread b: warp w's count of digit b becomes the count of digit b in the warps before w, and
  // then (once the bins before b are counted) the place of warp w's first key of digit b. In two
  // sweeps over shared memory: the counts kept in registers across the scan spilled at OCC 3.
  unsigned count = 0;
  if (tid < RADIX_BINS) {
#pragma unroll
    for (int w = 0; w < MGPU_WARPS; ++w) {
      unsigned c = s.offsets[w][tid];
      s.offsets[w][tid] = count;
      count += c;
    }
    if (tid == RADIX_PAD_DIGIT) count -= pads;
    publish(count);
  }
  // Padding only moves the total, which nothing reads: bin starts count the bins before.
  unsigned total;
  unsigned start = cta_scan_exclusive(count, Plus32(), 0u, total, s.scan);
  if (tid < RADIX_BINS) {
    s.bin_start[tid] = start;
#pragma unroll
    for (int w = 0; w < MGPU_WARPS; ++w) s.offsets[w][tid] += start;
  }
  __syncthreads();
  unsigned below_me = lanemask_lt();
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    unsigned a = item[i];
    // Without the atomic, the place of the warp's next key of this digit, read by every lane of
    // that digit (no shuffle from one of them) before the lanes that share it are known.
    unsigned at = ATOMIC ? 0u : shared_load(a);
    // The lanes of the same digit, from one ballot per digit bit: match.any itself measured
    // compute-bound (a pass of 2^24 keys took 336 us, 6x a memcpy of its bytes).
    unsigned label = a >> 2;  // its byte 0 tells the digits apart: one R2P feeds the ballots
    unsigned peers = lanes_agreeing(label, 0);
#pragma unroll
    for (int bit = 1; bit < RADIX_BITS; ++bit) peers &= lanes_agreeing(label, bit);
    if constexpr (ATOMIC) {
      // The warp's atomics on one word take effect in program order.
      int leader = 31 - __clz(peers);
      unsigned first = 0;
      if (lane == leader) first = shared_fetch_add(a, __popc(peers));
      item[i] = __shfl_sync(MGPU_FULL_MASK, first, leader) + __popc(peers & below_me);
    } else {
      item[i] = at + __popc(peers & below_me);
      // Every lane of the digit has read the place: one load instruction for the warp, before
      // this store in program order. The next key's read is ordered after this write.
      if (peers >> lane == 1) shared_store(a, item[i] + 1);
      __syncwarp();
    }
  }
  return count;
}

// The tile's keys (or values), striped per warp: key i of lane l of warp w is the tile's
// w * 32 * VT + i * 32 + l.
__device__ __forceinline__ int striped(int i) {
  return (threadIdx.x / MGPU_WARP) * MGPU_WARP * MGPU_VT + i * MGPU_WARP + (threadIdx.x & 31);
}

// Keys and values, through shared memory side by side (the pass's dynamic shared memory, as the
// host sizes it: the keys' bytes rounded up to 16, then the values'): a pass scatters both in one
// loop, with no digit per item kept in registers for the values.
#define TILE_KEY_BYTES ((MGPU_NV * sizeof(K) + 15) / 16 * 16)
// Pairs of 4-byte keys and values are placed and read back as one 8-byte word each (the key in
// its low half), in the same bytes: a pair's scattered store to shared memory is one 64-bit
// store, whose two half-warps meet fewer bank conflicts than two 32-bit stores (sorts of 2^24
// pairs 0.5-1.3% faster on the H100).
#define RADIX_PACK_PAIRS (MGPU_VALUES != 0 && sizeof(K) == 4 && sizeof(V) == 4)
struct TileItems {
  K* keys;
  V* values;
  u64* pairs;  // RADIX_PACK_PAIRS: the tile's pairs, over keys and values
  __device__ __forceinline__ explicit TileItems(char* shared)
      : keys(reinterpret_cast<K*>(shared)),
        values(reinterpret_cast<V*>(shared + TILE_KEY_BYTES)),
        pairs(reinterpret_cast<u64*>(shared)) {}
};

// A key and value of 4 bytes each as one word, and back.
__device__ __forceinline__ u64 pack_pair(const K& k, const V& v) {
  unsigned lo = 0, hi = 0;
  memcpy(&lo, &k, sizeof(K) < 4 ? sizeof(K) : 4);
  memcpy(&hi, &v, sizeof(V) < 4 ? sizeof(V) : 4);
  return (u64)hi << 32 | lo;
}
__device__ __forceinline__ void unpack_pair(u64 w, K& k, V& v) {
  unsigned lo = (unsigned)w, hi = (unsigned)(w >> 32);
  memcpy(&k, &lo, sizeof(K) < 4 ? sizeof(K) : 4);
  memcpy(&v, &hi, sizeof(V) < 4 ? sizeof(V) : 4);
}

// The ranked items (keys or values) to their places in the tile sorted by digit, in shared memory;
// those past the input's end (not loaded) to the places after the input's, which nothing reads.
template <typename X>
__device__ __forceinline__ void place_ranked(X* tile, const X (&x)[MGPU_VT],
                                             const unsigned (&place)[MGPU_VT]) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) tile[place[i]] = x[i];
}

// The `n` items of a tile striped, every load issued before any is used: a full tile's without a
// bound check, the last tile's predicated.
template <typename X>
__device__ __forceinline__ void load_striped(const X* in, int n, X (&x)[MGPU_VT]) {
  if (n == MGPU_NV) {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) x[i] = in[striped(i)];
  } else {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if (striped(i) < n) x[i] = in[striped(i)];
  }
}

// The values of a tile at `base` (n items): read, or generated (indices: the input position).
__device__ __forceinline__ void load_values(const V* values_in, u64 base, u64 index_base, int n,
                                            V (&v)[MGPU_VT]) {
  if (MGPU_VALUES == 2 && !values_in) {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      unsigned index = (unsigned)(index_base + base + striped(i));
      memcpy(&v[i], &index, sizeof(unsigned) < sizeof(V) ? sizeof(unsigned) : sizeof(V));
    }
  } else {
    // Predicated loads, whether the tile is full or not: the two paths of load_striped joined
    // through local memory here (spills at 384x16 for pairs of 4-byte keys and values).
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if (striped(i) < n) v[i] = values_in[base + striped(i)];
  }
}

#ifdef MGPU_WANT_mgpu_radix_histogram
// The passes a key's number can have: one per byte of U.
#define RADIX_KEY_PASSES ((int)sizeof(U))
// Copies of the counters, in dynamic shared memory: lane l counts into copy l % RADIX_PARTS, so
// that lanes of equal digits (equal or skewed keys) do not all queue on one word. Counter (pass,
// digit, part) is word (pass * RADIX_BINS + digit) * RADIX_PARTS + part: the lanes of one copy
// meet in a bank only where their digits agree in their low bits. 64 KiB at most: 16 copies of a
// 32-bit number's 4 passes (lanes l and l + 16 share a bank on about half the atomics), 8 of a
// 64-bit number's 8. With 4 copies an atomic took about 3.2 wavefronts on uniform keys, which
// bounded the kernel; 16-bit counters in a copy per lane took none, but twice the instructions.
#ifndef RADIX_PARTS
#define RADIX_PARTS (64 / RADIX_KEY_PASSES)
#endif
// log2 of a digit's bytes of counters, 4 * RADIX_PARTS.
#define RADIX_PART_SHIFT \
  (RADIX_PARTS == 1 ? 2 : RADIX_PARTS == 2 ? 3 : RADIX_PARTS == 4 ? 4 : RADIX_PARTS == 8 ? 5 : 6)
static_assert(4 * RADIX_PARTS == 1 << RADIX_PART_SHIFT, "RADIX_PARTS: 1, 2, 4, 8 or 16");

// Where pass k's digit of a key's number is (bits [begin_bit + 8k, begin_bit + 8k + 8) of it,
// those from `end_bit` on cleared): its counter of this lane's copy is at byte
// ((number >> shift[k]) & mask[k]) | part_bytes of the pass's counters (the digit's bits moved
// to bit RADIX_PART_SHIFT, the lane's copy below them). A 32-bit number is shifted as the high
// half of a 64-bit one, so that every pass's shift is to the right: one funnel shift and one
// LOP3 a digit. A 64-bit number's pass 0 is shifted right by begin_bit, then left (one
// instruction more: begin_bit may be below RADIX_PART_SHIFT).
struct DigitPlaces {
  int shift[RADIX_KEY_PASSES];
  unsigned mask[RADIX_KEY_PASSES];
  unsigned part_bytes;
};

__device__ __forceinline__ DigitPlaces digit_places(int begin_bit, int end_bit) {
  DigitPlaces d;
#pragma unroll
  for (int k = 0; k < RADIX_KEY_PASSES; ++k) {
    int from = begin_bit + k * RADIX_BITS, bits = max(0, min(RADIX_BITS, end_bit - from));
    d.shift[k] = RADIX_KEY_PASSES == 4 ? 32 + from - RADIX_PART_SHIFT
                 : k == 0              ? begin_bit
                                       : from - RADIX_PART_SHIFT;
    d.mask[k] = ((1u << bits) - 1) << RADIX_PART_SHIFT;
  }
  d.part_bytes = (threadIdx.x % RADIX_PARTS) * 4;
  return d;
}

// Pass k's counter of this lane for a key's number (k a constant once unrolled).
__device__ __forceinline__ unsigned digit_bytes(U number, int k, const DigitPlaces& d) {
  unsigned moved;
  if (RADIX_KEY_PASSES == 4)
    moved = (unsigned)((((u64)number) << 32) >> d.shift[k]);
  else if (k == 0)
    moved = (unsigned)((u64)number >> d.shift[0]) << RADIX_PART_SHIFT;
  else
    moved = (unsigned)((u64)number >> d.shift[k]);
  return (moved & d.mask[k]) | d.part_bytes;
}

// Counts the digits of a chunk's keys: of every pass of PASSES where FULL (a full chunk of
// `passes` == PASSES), else of the passes below `passes` (<= PASSES) of the keys below `n`.
// A full chunk's atomics are not branched around (a check of `passes` made a branch of every
// atomic).
template <int PASSES, bool FULL>
__device__ __forceinline__ void count_chunk(const K (&key)[MGPU_VT], int n, int passes, U flip,
                                            const DigitPlaces& d, unsigned* counts) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    if (FULL || striped(i) < n) {
      U number = (U)(MGPU_ORDER_BITS(key[i])) ^ flip;
#pragma unroll
      for (int k = 0; k < PASSES; ++k) {
        if (FULL || k < passes) {
          unsigned at = digit_bytes(number, k, d);
          unsigned* pass_counts = counts + k * RADIX_BINS * RADIX_PARTS;
          atomicAdd((unsigned*)((char*)pass_counts + at), 1u);
        }
      }
    }
  }
}

// Adds a CTA's counters of `passes` passes to hist[p][pass][digit] (hist: the portion's), and
// zeroes them. Begins and ends with a barrier. Thread i reads its copies from copy i on: the
// lanes of a load spread over the banks.
__device__ __forceinline__ void flush_counts(unsigned* counts, int passes, unsigned* hist) {
  __syncthreads();
  for (int i = threadIdx.x; i < passes * RADIX_BINS; i += MGPU_NT) {
    unsigned c = 0;
#pragma unroll
    for (int k = 0; k < RADIX_PARTS; ++k) {
      int part = (k + i) % RADIX_PARTS;
      c += counts[i * RADIX_PARTS + part];
      counts[i * RADIX_PARTS + part] = 0;
    }
    if (c) atomicAdd(&hist[i], c);
  }
  __syncthreads();
}

// Counts every pass's digits of the chunks of NV keys blockIdx.x, blockIdx.x + gridDim.x, ...
// into hist[p][pass][digit], p the chunk's portion (`portion`, a multiple of NV). A grid of what is
// resident takes every chunk of every portion in one wave (a grid per portion left SMs idle
// where the last portion is small). With `keys_copy` it also copies the keys (and values) there:
// a sort of an odd number of passes then starts from the copy and ends in the caller's buffer.
// Dynamic shared memory: the counters of `passes` passes, RADIX_BINS * RADIX_PARTS words each.
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_radix_histogram(const K* keys, const V* values, u64 count, u64 portion, int passes,
                         int begin_bit, int end_bit, u64 flip, unsigned* hist, K* keys_copy,
                         V* values_copy) {
  extern __shared__ __align__(16) unsigned counts[];
  int tid = threadIdx.x;
  for (int i = tid; i < passes * RADIX_BINS * RADIX_PARTS / 4; i += MGPU_NT)
    reinterpret_cast<uint4*>(counts)[i] = make_uint4(0, 0, 0, 0);
  __syncthreads();
  DigitPlaces d = digit_places(begin_bit, end_bit);
  // Keys narrower than U (1- and 2-byte keys) mostly have as many passes as bytes: their full
  // chunks count that many passes, not RADIX_KEY_PASSES mostly skipped.
  constexpr int KEY_PASSES = (int)sizeof(K) < RADIX_KEY_PASSES ? (int)sizeof(K) : RADIX_KEY_PASSES;
  u64 p = (u64)blockIdx.x * MGPU_NV / portion;
  for (u64 chunk = (u64)blockIdx.x * MGPU_NV; chunk < count; chunk += (u64)gridDim.x * MGPU_NV) {
    if (chunk / portion != p) {
      flush_counts(counts, passes, hist + p * passes * RADIX_BINS);
      p = chunk / portion;
    }
    // The chunk's keys loaded first (striped like a pass's tile), then copied, then counted.
    int n = (int)min((u64)MGPU_NV, count - chunk);
    K key[MGPU_VT];
    load_striped(keys + chunk, n, key);
    if (keys_copy) {
#pragma unroll
      for (int i = 0; i < MGPU_VT; ++i)
        if (striped(i) < n) keys_copy[chunk + striped(i)] = key[i];
      if (MGPU_VALUES == 1) {
        V v[MGPU_VT];
        load_striped(values + chunk, n, v);
#pragma unroll
        for (int i = 0; i < MGPU_VT; ++i)
          if (striped(i) < n) values_copy[chunk + striped(i)] = v[i];
      }
    }
    if (n == MGPU_NV && passes == RADIX_KEY_PASSES)
      count_chunk<RADIX_KEY_PASSES, true>(key, n, passes, (U)flip, d, counts);
    else if (KEY_PASSES < RADIX_KEY_PASSES && n == MGPU_NV && passes == KEY_PASSES)
      count_chunk<KEY_PASSES, true>(key, n, passes, (U)flip, d, counts);
    else
      count_chunk<RADIX_KEY_PASSES, false>(key, n, passes, (U)flip, d, counts);
  }
  flush_counts(counts, passes, hist + p * passes * RADIX_BINS);
}
#endif

#ifdef MGPU_WANT_mgpu_radix_offsets
// Block `pass`: bases[pass][d] = the output position of the first key of digit d in that pass,
// from the counts of every portion (hist[p][pass][d]). Later portions' bases are written by the
// pass before them (mgpu_radix_pass): a pass's portion p holds other keys than the input's.
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_radix_offsets(const unsigned* hist, u64* bases, int portions, int passes) {
  __shared__ CtaScanStorageOf<u64> scan;
  int tid = threadIdx.x, pass = blockIdx.x;
  u64 total = 0;
  if (tid < RADIX_BINS)
    for (int p = 0; p < portions; ++p) total += hist[((u64)p * passes + pass) * RADIX_BINS + tid];
  u64 all;
  u64 start = cta_scan_exclusive(total, Plus64(), 0ull, all, scan);
  if (tid < RADIX_BINS) bases[(u64)pass * RADIX_BINS + tid] = start;
}
#endif

#ifdef MGPU_WANT_mgpu_radix_pass
// The tile's keys (and values), placed in shared memory by digit, to their digits' places in the
// output (`key_out[d]`: where digit d's keys go, less the tile's keys of digits below d). FULL:
// every position holds a key, stored without a bound check (an index compare a key fewer).
template <bool FULL>
__device__ __forceinline__ void scatter_tile(const TileItems& items, K* const* key_out,
                                             K* keys_out, V* values_out, int n, int shift,
                                             unsigned mask, u64 flip) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    unsigned j = i * MGPU_NT + threadIdx.x;
    K k;
    V v;
    if (RADIX_PACK_PAIRS)
      unpack_pair(items.pairs[j], k, v);
    else
      k = items.keys[j];
    K* to = key_out[digit_of(k, shift, mask, flip)] + j;
    bool store = FULL || j < (unsigned)n;
    store_global_if(store, to, k);
    if (MGPU_VALUES) {
      if (!RADIX_PACK_PAIRS) v = items.values[j];
      store_global_if(store, values_out + (to - keys_out), v);
    }
  }
}

typedef TileStatusOf<unsigned, RADIX_BINS * 8> BinStatus;

// A pass ranks by atomics where several CTAs share an SM (rank_tile).
#define RADIX_PASS_RANK_ATOMIC (MGPU_OCC > 1)

// Keys a thread of a full tile keeps in shared memory while the tile is ranked. Where the keys,
// their counters' addresses and the ranking's state do not all fit in the registers of the
// occupancy, ptxas spilled a few keys to local memory, or recomputed every address from its key
// (7 instructions a key). Keys alone: 4 of 4-byte keys at 3 CTAs per SM (56 registers), 4 of
// 8-byte keys (at 384x16x2 with 2, NVRTC 13.5 spilled i64's and f64's orders), with which no
// instantiation spills under NVRTC 13.0 or 13.5.
#ifndef RADIX_STAGED
#define RADIX_STAGED \
  (MGPU_VALUES != 0 ? 0 : sizeof(K) == 4 && MGPU_OCC >= 3 ? 4 : sizeof(K) == 8 ? 4 : 0)
#endif
// A full tile's first RADIX_STAGED keys of each thread, kept while the tile is ranked.
template <int N>
struct StagedKeys {
  K at[N][MGPU_NT];
  __device__ __forceinline__ void store(const K (&key)[MGPU_VT]) {
#pragma unroll
    for (int i = 0; i < N; ++i) at[i][threadIdx.x] = key[i];
  }
  __device__ __forceinline__ void load(K (&key)[MGPU_VT]) const {
#pragma unroll
    for (int i = 0; i < N; ++i) key[i] = at[i][threadIdx.x];
  }
};
template <>
struct StagedKeys<0> {
  __device__ __forceinline__ void store(const K (&)[MGPU_VT]) {}
  __device__ __forceinline__ void load(K (&)[MGPU_VT]) const {}
};

#define RADIX_BASES_SHARED (MGPU_OCC == 1)

// Whole 16-byte units, as the radix module's dynamic shared memory (mgpu_radix_count) aligns a
// kernel's static shared memory: a part compiles as the whole family does. The tile's items are
// in dynamic shared memory (TileItems): pairs' tiles as large as CUB's pass 48 KiB.
struct __align__(16) PassStorage {
  RankStorage rank;
  // Per digit, where the tile's sorted position 0 would go (so that position j of digit d goes to
  // key_out[d] + j): one 64-bit shared read and one wide multiply-add per item. A value goes to
  // the same place of the values: one pointer per item in registers, not two.
  K* key_out[RADIX_BINS];
  // At one CTA per SM, the portion's `bases`, read once per CTA: read after each tile's look-back
  // (whose loads order them), they were one more load on every tile's way to its scatter that no
  // other CTA hid (2^24..2^26 pairs 0.4-0.9% faster; keys at 3 CTAs per SM up to 1% slower).
  u64 bases[RADIX_BASES_SHARED ? RADIX_BINS : 1];
  i64 tile_id;
  StagedKeys<RADIX_STAGED> staged;
};

// One tile of a pass (see mgpu_radix_pass). FULL: the tile holds MGPU_NV keys, so that no load,
// count, place or store is checked. Full tiles are nearly all of them: with those checks (and
// the padding's digit) the compiler ran out of registers at 3 CTAs per SM and recomputed each
// key's counter address from the key in the ranking (7 instructions a key).
template <bool FULL>
__device__ __forceinline__ void pass_tile(const K* keys_in, const V* values_in, K* keys_out,
                                          V* values_out, u64 index_base, const u64* bases,
                                          u64* next_bases, int shift, unsigned mask, u64 flip,
                                          const BinStatus& status, PassStorage& s,
                                          const TileItems& items, i64 tile, u64 num_tiles,
                                          int n) {
  if (FULL) n = MGPU_NV;  // a constant for every check below
  int tid = threadIdx.x;
  u64 base = (u64)tile * MGPU_NV;
  // The values are read after the ranking: their bytes head for L2 now, so that those loads
  // wait for L2 rather than DRAM (one CTA per SM leaves their latency exposed).
  if (MGPU_VALUES && values_in && tid == 0) prefetch_l2(values_in + base, (u64)n * sizeof(V));
  K key[MGPU_VT];
  unsigned item[MGPU_VT];  // a key's digit, then its place in the tile sorted by digit
  // A partial tile's keys past n are zero, not left unset (they are placed, never stored); their
  // digit is RADIX_PAD_DIGIT.
  if (!FULL) memset(key, 0, sizeof(key));
  load_striped(keys_in + base, n, key);
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i)
    item[i] = FULL || striped(i) < n ? digit_of(key[i], shift, mask, flip) : RADIX_PAD_DIGIT;
  // While the tile is ranked, a full tile keeps RADIX_STAGED keys a thread in shared memory, the
  // partial one (once a launch) all of them, in the tile's buffer until they are placed.
  if (FULL) {
    s.staged.store(key);
  } else {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) items.keys[striped(i)] = key[i];
  }
  unsigned count = rank_tile<RADIX_PASS_RANK_ATOMIC>(item, MGPU_NV - n, s.rank, [&](unsigned c) {
    thread_publish(status.word_of(tid), tile, c);
  });
  if (FULL) {
    s.staged.load(key);
  } else {
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) key[i] = items.keys[striped(i)];
    __syncthreads();  // every key read back before any is placed
  }
  // Values are read once the keys are ranked: the keys, the places and the values are in
  // registers at once only where they are placed together (RADIX_PACK_PAIRS).
  if (RADIX_PACK_PAIRS) {
    V value[MGPU_VT];
    load_values(values_in, base, index_base, n, value);
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) items.pairs[item[i]] = pack_pair(key[i], value[i]);
  } else {
    place_ranked(items.keys, key, item);
    if (MGPU_VALUES) {
      V value[MGPU_VT];
      load_values(values_in, base, index_base, n, value);
      place_ranked(items.values, value, item);
    }
  }
  // The look-back waits last: by now the tiles before have most likely published their P.
  if (tid < RADIX_BINS) {
    unsigned before = thread_lookback(status.word_of(tid), tile, count, Plus32(), 0u);
    u64 start = RADIX_BASES_SHARED ? s.bases[tid] : bases[tid];
    // At least the tile's keys of digits below d come before digit d: not below the output.
    u64 out = start + before - s.rank.bin_start[tid];
    s.key_out[tid] = keys_out + out;
    // The portion's last tile knows its count of every digit: the next portion starts there.
    if (next_bases && (u64)tile == num_tiles - 1) next_bases[tid] = start + before + count;
  }
  __syncthreads();
  // A full tile stores every position; the last one's from n on hold no key (garbage, inside
  // the tile): read, not stored.
  scatter_tile<FULL>(items, s.key_out, keys_out, values_out, n, shift, mask, flip);
}

// One pass over the `count` keys of a portion (its first key is the input's `index_base`):
// persistent CTAs take tiles in ticket order. `bases[d]`: where the portion's first key of digit
// d goes; its last tile writes the next portion's (`next_bases`, unless it is the last). Each
// tile publishes its count of every digit, thread d looks back over digit d's counts of the tiles
// before (thread_publish, thread_lookback), and the tile scatters its keys, sorted by digit in
// shared memory, to bases[d] + that prefix + their place among the tile's keys of digit d.
// `values_in` null with MGPU_VALUES 2: indices generated.
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_radix_pass(const K* keys_in, const V* values_in, K* keys_out, V* values_out, u64 count,
                    u64 index_base, const u64* bases, u64* next_bases, int shift, int bits,
                    u64 flip, u64* tickets, u64 first_ticket, BinStatus status) {
  __shared__ PassStorage s;
  extern __shared__ __align__(16) char items_shared[];
  TileItems items(items_shared);
  unsigned mask = (1u << bits) - 1;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV, full_tiles = count / MGPU_NV;
  if (RADIX_BASES_SHARED && threadIdx.x < RADIX_BINS)
    s.bases[threadIdx.x] = bases[threadIdx.x];  // read by thread d alone
  ticketed_tiles(tickets, first_ticket, full_tiles, s.tile_id, [&](i64 tile) {
    pass_tile<true>(keys_in, values_in, keys_out, values_out, index_base, bases, next_bases,
                    shift, mask, flip, status, s, items, tile, num_tiles, MGPU_NV);
  });
  // A partial last tile goes to the CTA that drew its ticket, after the loop, so that the
  // registers of its checks are not held across the full tiles' (that spilled). That CTA then
  // draws the ticket that would have ended its loop: the host counts one per tile and per CTA.
  if ((u64)s.tile_id == full_tiles && full_tiles < num_tiles) {
    pass_tile<false>(keys_in, values_in, keys_out, values_out, index_base, bases, next_bases,
                     shift, mask, flip, status, s, items, (i64)full_tiles, num_tiles,
                     (int)(count - full_tiles * MGPU_NV));
    if (threadIdx.x == 0) atomicAdd(tickets, 1ull);
  }
}
#endif

#if defined(MGPU_WANT_mgpu_radix_tile) || defined(MGPU_WANT_mgpu_radix_segments)
// The bytes of a tile's items in shared memory: the keys and then the values are reordered through
// one buffer (a pass places the values once the keys are back in registers).
#define TILE_ITEM_BYTES (MGPU_NV * (sizeof(K) > sizeof(V) ? sizeof(K) : sizeof(V)))

// Sorts `count` <= NV keys (and values) with the whole CTA: every pass ranks the tile in
// registers and reorders it through shared memory. In place is fine: everything is read before
// anything is written. Ends with a barrier: the storage is free again.
__device__ __forceinline__ void sort_tile(char* items, RankStorage& rank, const K* keys_in,
                                          const V* values_in, K* keys_out, V* values_out,
                                          int count, int passes, int begin_bit, int end_bit,
                                          u64 flip) {
  K* tile_keys = reinterpret_cast<K*>(items);
  V* tile_values = reinterpret_cast<V*>(items);
  K key[MGPU_VT];
  V value[MGPU_VT];
  // One tile, loaded once: a full tile's separate load path would only cost registers here.
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i)
    if (striped(i) < count) key[i] = keys_in[striped(i)];
  if (MGPU_VALUES) load_values(values_in, 0, 0, count, value);
  for (int pass = 0; pass < passes; ++pass) {
    int shift = begin_bit + pass * RADIX_BITS;
    unsigned mask = (1u << min(RADIX_BITS, end_bit - shift)) - 1;
    unsigned item[MGPU_VT];
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      item[i] = striped(i) < count ? digit_of(key[i], shift, mask, flip) : RADIX_PAD_DIGIT;
    rank_tile<false>(item, MGPU_NV - count, rank, [](unsigned) {});
    place_ranked(tile_keys, key, item);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if (striped(i) < count) key[i] = tile_keys[striped(i)];
    if (MGPU_VALUES) {
      __syncthreads();
      place_ranked(tile_values, value, item);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < MGPU_VT; ++i)
        if (striped(i) < count) value[i] = tile_values[striped(i)];
    }
    __syncthreads();  // the next pass's ranking reuses the storage
  }
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    int j = striped(i);
    if (j < count) {
      keys_out[j] = key[i];
      if (MGPU_VALUES) values_out[j] = value[i];
    }
  }
}
#endif

#ifdef MGPU_WANT_mgpu_radix_tile
// Sorts an input of `count` <= NV keys (and values) with one CTA. The items take TILE_ITEM_BYTES
// of dynamic shared memory, as the pass's.
extern "C" __global__ void __launch_bounds__(MGPU_NT, 1)
    mgpu_radix_tile(const K* keys_in, const V* values_in, K* keys_out, V* values_out, int count,
                    int passes, int begin_bit, int end_bit, u64 flip) {
  extern __shared__ __align__(16) char items[];
  __shared__ RankStorage rank;
  sort_tile(items, rank, keys_in, values_in, keys_out, values_out, count, passes, begin_bit,
            end_bit, flip);
}
#endif

#ifdef MGPU_WANT_mgpu_radix_segments
// Sorts the segments [ranges[2r], ranges[2r + 1]) of at most NV keys (and values) in place, one
// CTA per segment: a segmented sort's segments too long to pack into its tiles and short enough
// for one tile here, sorted in shared memory with no merge. The items take TILE_ITEM_BYTES of
// dynamic shared memory (past the 48 KiB of static storage for 8-byte items).
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_radix_segments(K* keys, V* values, const u64* ranges, u64 num_ranges, int passes,
                        int begin_bit, int end_bit, u64 flip) {
  extern __shared__ __align__(16) char items[];
  __shared__ RankStorage rank;
  for (u64 r = blockIdx.x; r < num_ranges; r += gridDim.x) {
    u64 begin = ranges[2 * r], end = ranges[2 * r + 1];
    sort_tile(items, rank, keys + begin, values + begin, keys + begin, values + begin,
              (int)(end - begin), passes, begin_bit, end_bit, flip);
  }
}
#endif

#if defined(MGPU_WANT_mgpu_radix_count) || defined(MGPU_WANT_mgpu_radix_starts) || \
    defined(MGPU_WANT_mgpu_radix_fill)
// A counting sort, for keys of 1 and 2 bytes whose number is their bits XORed with a constant
// `xor_mask` (the built-in integer orders, either direction, over the whole key): every key of
// bin b is then one same key, so the sort counts the bins (mgpu_radix_count), turns the counts
// into each bin's first output position (mgpu_radix_starts), and writes each bin's key that many
// times (mgpu_radix_fill). It reads the keys once and writes them once, where the passes read
// them 3 times and write them twice (2-byte keys). Compiled for every key type (as 1-byte keys
// where K is wider) and launched for those alone.
template <int B>
struct CountRaw {
  typedef unsigned char T;
};
template <>
struct CountRaw<2> {
  typedef unsigned short T;
};
#define COUNT_BYTES ((int)sizeof(K) == 2 ? 2 : 1)
typedef CountRaw<COUNT_BYTES>::T CountKey;
#define COUNT_BINS (1 << (8 * COUNT_BYTES))
// Keys per 16-byte load or store.
#define COUNT_PER_VEC (16 / COUNT_BYTES)
// 2-byte keys: a chunk's bins are split between two CTAs of 128 KiB of counters each (dynamic
// shared memory; both read the chunk at about the same time, the second mostly from L2). 1-byte
// keys: one CTA, with a copy of every counter per lane (32 KiB), so that equal keys do not queue
// on one word and no two lanes share a bank.
#define COUNT_SPLIT (COUNT_BYTES == 2 ? 2 : 1)
#define COUNT_SPLIT_BINS (COUNT_BINS / COUNT_SPLIT)
#define COUNT_COPIES (COUNT_BYTES == 1 ? 32 : 1)
#define COUNT_UNROLL 8
// The vectors a fill CTA's thread writes, and the bins of a fill CTA's range it stages in shared
// memory (more: it searches the global starts).
#define FILL_VECS 16
#define FILL_SPAN 2048

// The largest bin b of [lo, hi] whose start `at(b)` is at most p, given at(lo) <= p: the bin of
// output position p (empty bins before it share its start).
template <typename At>
__device__ __forceinline__ unsigned bin_of(At at, unsigned lo, unsigned hi, u64 p) {
  while (lo < hi) {
    unsigned mid = (lo + hi + 1) / 2;
    if (at(mid) <= p)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}
#endif

#ifdef MGPU_WANT_mgpu_radix_count
// Block (chunk c, part h): counts the bins of part h (of COUNT_SPLIT) of the keys of chunk c, the
// whole 16-byte vectors [c * chunk_vecs, (c + 1) * chunk_vecs) after the first `head` keys (which
// are before the first 16-byte boundary), into hist. Chunk 0 also counts the keys outside whole
// vectors. Dynamic shared memory: COUNT_SPLIT_BINS * COUNT_COPIES counters.
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_radix_count(const CountKey* keys, u64 count, u64 head, u64 chunk_vecs,
                     unsigned xor_mask, unsigned long long* hist) {
  extern __shared__ unsigned counters[];
  int tid = threadIdx.x;
  unsigned part = blockIdx.x % COUNT_SPLIT;
  u64 chunk = blockIdx.x / COUNT_SPLIT;
  for (int i = tid; i < COUNT_SPLIT_BINS * COUNT_COPIES; i += MGPU_NT) counters[i] = 0;
  __syncthreads();
  unsigned copy = COUNT_COPIES == 1 ? 0 : (unsigned)tid % COUNT_COPIES;
  auto add = [&](unsigned bin, unsigned n) {
    if (bin / COUNT_SPLIT_BINS == part)
      atomicAdd(&counters[(bin % COUNT_SPLIT_BINS) * COUNT_COPIES + copy], n);
  };
  u64 vecs = (count - head) / COUNT_PER_VEC;
  if (chunk == 0) {
    for (u64 i = tid; i < head; i += MGPU_NT) add(keys[i] ^ xor_mask, 1);
    for (u64 i = head + vecs * COUNT_PER_VEC + tid; i < count; i += MGPU_NT)
      add(keys[i] ^ xor_mask, 1);
  }
  const uint4* body = reinterpret_cast<const uint4*>(keys + head);
  u64 first = chunk * chunk_vecs, end = min(first + chunk_vecs, vecs);
  for (u64 v = first + tid; v < end; v += (u64)MGPU_NT * COUNT_UNROLL) {
    uint4 w[COUNT_UNROLL];
#pragma unroll
    for (int u = 0; u < COUNT_UNROLL; ++u)
      if (v + (u64)u * MGPU_NT < end) w[u] = body[v + (u64)u * MGPU_NT];
#pragma unroll
    for (int u = 0; u < COUNT_UNROLL; ++u) {
      if (v + (u64)u * MGPU_NT >= end) break;
      unsigned word[4] = {w[u].x, w[u].y, w[u].z, w[u].w};
      if (COUNT_BYTES == 1) {
#pragma unroll
        for (int k = 0; k < 16; ++k) add(((word[k / 4] >> (8 * (k % 4))) & 0xffu) ^ xor_mask, 1);
      } else {
        // Runs of one key within the vector are added once (sorted or skewed keys).
        unsigned run_bin = (word[0] & 0xffffu) ^ xor_mask, run = 1;
#pragma unroll
        for (int k = 1; k < 8; ++k) {
          unsigned bin = ((word[k / 2] >> (16 * (k % 2))) & 0xffffu) ^ xor_mask;
          if (bin == run_bin) {
            ++run;
          } else {
            add(run_bin, run);
            run_bin = bin;
            run = 1;
          }
        }
        add(run_bin, run);
      }
    }
  }
  __syncthreads();
  for (int b = tid; b < COUNT_SPLIT_BINS; b += MGPU_NT) {
    unsigned sum = 0;
    // Lane l starts at copy l: the lanes read distinct banks.
#pragma unroll
    for (int k = 0; k < COUNT_COPIES; ++k)
      sum += counters[b * COUNT_COPIES + (k + b) % COUNT_COPIES];
    if (sum) atomicAdd(&hist[part * COUNT_SPLIT_BINS + b], (unsigned long long)sum);
  }
}
#endif

#ifdef MGPU_WANT_mgpu_radix_starts
// One CTA: starts[b] = the first output position of bin b (the counts of the bins before it),
// starts[COUNT_BINS] = every key's.
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_radix_starts(const unsigned long long* hist, u64* starts) {
  __shared__ CtaScanStorageOf<u64> scan;
  constexpr int PER = (COUNT_BINS + MGPU_NT - 1) / MGPU_NT;
  int first = threadIdx.x * PER;
  u64 sum = 0;
#pragma unroll 16
  for (int k = 0; k < PER; ++k)
    if (first + k < COUNT_BINS) sum += hist[first + k];
  u64 total;
  u64 at = cta_scan_exclusive(sum, Plus64(), 0ull, total, scan);
  for (int k = 0; k < PER && first + k < COUNT_BINS; ++k) {
    starts[first + k] = at;
    at += hist[first + k];
  }
  if (threadIdx.x == 0) starts[COUNT_BINS] = total;
}
#endif

#ifdef MGPU_WANT_mgpu_radix_fill
// Writes every output position p its bin's key (bin ^ xor_mask): block b the 16-byte vectors
// [b * NT * FILL_VECS, (b + 1) * NT * FILL_VECS) after the first `head` positions, striped over
// its threads; block 0 also the positions outside whole vectors. A block stages the starts of
// the bins its range spans in shared memory where they are few.
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_radix_fill(CountKey* out, u64 count, u64 head, const u64* starts, unsigned xor_mask) {
  __shared__ u64 span[FILL_SPAN + 1];
  __shared__ unsigned span_lo, span_hi;
  int tid = threadIdx.x;
  auto global = [&](unsigned b) { return starts[b]; };
  u64 vecs = (count - head) / COUNT_PER_VEC;
  u64 v0 = (u64)blockIdx.x * MGPU_NT * FILL_VECS, v1 = min(v0 + (u64)MGPU_NT * FILL_VECS, vecs);
  if (blockIdx.x == 0) {
    auto key_at = [&](u64 p) {
      return (CountKey)((bin_of(global, 0, COUNT_BINS - 1, p) ^ xor_mask) & (COUNT_BINS - 1));
    };
    for (u64 p = tid; p < head; p += MGPU_NT) out[p] = key_at(p);
    for (u64 p = head + vecs * COUNT_PER_VEC + tid; p < count; p += MGPU_NT) out[p] = key_at(p);
  }
  if (v0 >= v1) return;
  // The bins of the range's first and last positions, searched by two warps at once.
  if (tid == 0) span_lo = bin_of(global, 0, COUNT_BINS - 1, head + v0 * COUNT_PER_VEC);
  if (tid == MGPU_WARP)
    span_hi = bin_of(global, 0, COUNT_BINS - 1, head + v1 * COUNT_PER_VEC - 1);
  __syncthreads();
  unsigned lo = span_lo, bins = span_hi - lo + 1;
  bool staged = bins <= FILL_SPAN;
  if (staged)
    for (unsigned i = tid; i <= bins; i += MGPU_NT) span[i] = starts[lo + i];
  __syncthreads();
  auto local = [&](unsigned b) { return span[b - lo]; };
  uint4* body = reinterpret_cast<uint4*>(out + head);
#pragma unroll 1
  for (int u = 0; u < FILL_VECS; ++u) {
    u64 v = v0 + (u64)u * MGPU_NT + tid;
    if (v >= v1) break;
    u64 p = head + v * COUNT_PER_VEC;
    unsigned b = staged ? bin_of(local, lo, lo + bins - 1, p) : bin_of(global, lo, COUNT_BINS - 1, p);
    u64 next = staged ? local(b + 1) : global(b + 1);
    unsigned word[4] = {0, 0, 0, 0};
#pragma unroll
    for (int k = 0; k < COUNT_PER_VEC; ++k) {
      if (p + k >= next) {
        b = staged ? bin_of(local, b + 1, lo + bins - 1, p + k)
                   : bin_of(global, b + 1, COUNT_BINS - 1, p + k);
        next = staged ? local(b + 1) : global(b + 1);
      }
      word[k * COUNT_BYTES / 4] |= ((b ^ xor_mask) & (COUNT_BINS - 1)) << (8 * COUNT_BYTES * k % 32);
    }
    body[v] = make_uint4(word[0], word[1], word[2], word[3]);
  }
}
#endif
