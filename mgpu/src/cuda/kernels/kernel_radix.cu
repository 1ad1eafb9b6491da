// kernel_radix.cu: the LSD radix sort of Onesweep (Adinets & Merrill, 2022), 8-bit digits.
//   mgpu_radix_histogram  reads the keys once and counts every pass's digits, per portion;
//   mgpu_radix_offsets    turns the counts into each (portion, pass, digit)'s first output position;
//   mgpu_radix_pass       one pass: a tile ranks its keys by digit, finds where each digit bin
//                         starts with one look-back per bin (lookback.cuh), and scatters;
//   mgpu_radix_tile       an input of one tile: every pass in shared memory, one launch.
// Keys are ordered by MGPU_ORDER_BITS(x), an unsigned number of type U (the host's radix key);
// the keys' own bits are what moves. A pass takes bits [shift, shift + 8) of that number, XORed
// with `flip` (all ones for a descending order; cut to U).

#define RADIX_BITS 8
#define RADIX_BINS 256
#define RADIX_MAX_PASSES 8
static_assert(MGPU_NT >= RADIX_BINS, "a thread per digit bin");
static_assert(MGPU_NV <= 65535, "a warp's bin counts are 16-bit");

// Order-preserving numbers of the built-in key types (radix keys `ascending`): integers with the
// sign flipped; floats in the built-in comparators' order, every NaN one number above +inf and
// -0.0 the number of 0.0, so that the sort is stable where the comparators say "equal".
__device__ __forceinline__ unsigned radix_order(unsigned char x) { return x; }
__device__ __forceinline__ unsigned radix_order(signed char x) { return (unsigned char)x ^ 0x80u; }
__device__ __forceinline__ unsigned radix_order(unsigned short x) { return x; }
__device__ __forceinline__ unsigned radix_order(short x) { return (unsigned short)x ^ 0x8000u; }
__device__ __forceinline__ unsigned radix_order(unsigned x) { return x; }
__device__ __forceinline__ unsigned radix_order(int x) { return (unsigned)x ^ 0x80000000u; }
__device__ __forceinline__ u64 radix_order(u64 x) { return x; }
__device__ __forceinline__ u64 radix_order(i64 x) { return (u64)x ^ (1ull << 63); }
// Selects, not branches: a branch here split every key's load from the next.
__device__ __forceinline__ unsigned radix_order(float x) {
  unsigned b = __float_as_uint(x), magnitude = b & 0x7fffffffu;
  unsigned ordered = b ^ ((unsigned)((int)b >> 31) | 0x80000000u);
  ordered = magnitude == 0 ? 0x80000000u : ordered;
  return magnitude > 0x7f800000u ? 0xffffffffu : ordered;
}
__device__ __forceinline__ u64 radix_order(double x) {
  u64 b = (u64)__double_as_longlong(x), magnitude = b & ~(1ull << 63);
  u64 ordered = b ^ ((u64)((i64)b >> 63) | (1ull << 63));
  ordered = magnitude == 0 ? 1ull << 63 : ordered;
  return magnitude > 0x7ff0000000000000ull ? ~0ull : ordered;
}

__device__ __forceinline__ unsigned digit_of(const K& key, int shift, unsigned mask, u64 flip) {
  U bits = (U)(MGPU_ORDER_BITS(key)) ^ (U)flip;
  return (unsigned)(bits >> shift) & mask;
}

// The digit of a key past the input's end: one of its own in every lane (so it matches no other
// key) and not a bin.
__device__ __forceinline__ unsigned no_digit() { return RADIX_BINS + (threadIdx.x & 31); }

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

// A warp's ranking of its keys by digit. Key i of lane l is the warp's key i * 32 + l (the
// tile's order), so processing i in turn and lanes in lane order ranks in input order: stable.
// After it, `counts` (the warp's) holds how many of its keys have each digit, and `item[i]`,
// which held key i's digit, holds the digit and above it (bits 16..) how many of the warp's keys
// before key i have that digit: one register per key, not two. Lanes with one digit find each
// other by ballots; the lowest adds their number to the digit's count and hands the count before
// to the others. Every lane takes part in every shuffle: a shuffle under a partial mask made the
// compiler check convergence with match.any, the instruction the ballots replace.
__device__ __forceinline__ void warp_rank(unsigned (&item)[MGPU_VT], unsigned short* counts) {
  int lane = threadIdx.x & 31;
  for (int b = lane; b < RADIX_BINS; b += MGPU_WARP) counts[b] = 0;
  __syncwarp();
  unsigned lower = (1u << lane) - 1;
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    unsigned d = item[i];
    bool valid = d < RADIX_BINS;
    // The lanes whose digit is d, from one ballot per digit bit: match.any itself measured
    // compute-bound (a pass of 2^24 keys took 336 us, 6x a memcpy of its bytes).
    unsigned peers = __ballot_sync(MGPU_FULL_MASK, valid);
#pragma unroll
    for (int bit = 0; bit < RADIX_BITS; ++bit) peers &= lanes_agreeing(d, bit);
    if (!valid) peers = 1u << lane;
    int leader = __ffs(peers) - 1;
    unsigned before = 0;
    if (valid && lane == leader) {
      before = counts[d];
      counts[d] = (unsigned short)(before + __popc(peers));
    }
    unsigned rank = __shfl_sync(MGPU_FULL_MASK, before, leader) + __popc(peers & lower);
    item[i] = d | rank << 16;
    __syncwarp();
  }
}

// Thread b (< RADIX_BINS), once every warp has ranked: the warps' counts of digit b become
// offsets (the keys of digit b in earlier warps); returns the tile's count of digit b.
__device__ __forceinline__ unsigned warp_offsets(unsigned short (*counts)[RADIX_BINS], int b) {
  unsigned run = 0;
#pragma unroll
  for (int w = 0; w < MGPU_WARPS; ++w) {
    unsigned c = counts[w][b];
    counts[w][b] = (unsigned short)run;
    run += c;
  }
  return run;
}

struct Plus32 {
  __device__ __forceinline__ unsigned operator()(unsigned a, unsigned b) const { return a + b; }
};
struct Plus64 {
  __device__ __forceinline__ u64 operator()(u64 a, u64 b) const { return a + b; }
};

// What ranking a tile needs besides the tile.
struct RankStorage {
  unsigned short counts[MGPU_WARPS][RADIX_BINS];
  unsigned bin_start[RADIX_BINS];
  CtaScanStorageOf<unsigned> scan;
};

// A key past the input's end has no place in the sorted tile.
#define RADIX_NO_PLACE 0xffffffffu

// Ranks the tile (every warp its keys, striped as in warp_rank) and returns, in thread b <
// RADIX_BINS, the tile's count of digit b; `item[i]`, key i's digit, becomes its place in the
// tile sorted by digit (RADIX_NO_PLACE past the end). `publish(count)` runs in thread b as soon
// as its count is known: the pass publishes it for later tiles' look-backs. Ends on a barrier.
template <typename Publish>
__device__ __forceinline__ unsigned rank_tile(unsigned (&item)[MGPU_VT], RankStorage& s,
                                              Publish&& publish) {
  int tid = threadIdx.x, warp = tid / MGPU_WARP;
  warp_rank(item, s.counts[warp]);
  __syncthreads();
  unsigned count = tid < RADIX_BINS ? warp_offsets(s.counts, tid) : 0;
  if (tid < RADIX_BINS) publish(count);
  unsigned total;
  unsigned start = cta_scan_exclusive(count, Plus32(), 0u, total, s.scan);
  if (tid < RADIX_BINS) s.bin_start[tid] = start;
  __syncthreads();
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i) {
    unsigned d = item[i] & 0xffff, rank = item[i] >> 16;
    item[i] = d < RADIX_BINS ? rank + s.bin_start[d] + s.counts[warp][d] : RADIX_NO_PLACE;
  }
  return count;
}

// The tile's keys (or values), striped per warp: key i of lane l of warp w is the tile's
// w * 32 * VT + i * 32 + l.
__device__ __forceinline__ int striped(int i) {
  return (threadIdx.x / MGPU_WARP) * MGPU_WARP * MGPU_VT + i * MGPU_WARP + (threadIdx.x & 31);
}

// Keys, then values, through shared memory in one buffer.
union TileItems {
  K keys[MGPU_NV];
  V values[MGPU_VALUES ? MGPU_NV : 1];
};

// The ranked items (keys or values) to their places in the tile sorted by digit, in shared memory.
template <typename X>
__device__ __forceinline__ void place_ranked(X* tile, const X (&x)[MGPU_VT],
                                             const unsigned (&place)[MGPU_VT]) {
#pragma unroll
  for (int i = 0; i < MGPU_VT; ++i)
    if (place[i] != RADIX_NO_PLACE) tile[place[i]] = x[i];
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
    load_striped(values_in + base, n, v);
  }
}

#ifdef MGPU_WANT_mgpu_radix_histogram
// Block (portion p, c of `per_portion`) counts every pass's digits of the chunks of NV keys
// c, c + per_portion, ... of portion p into hist[p][pass][digit]. With `keys_copy` it also
// copies the keys (and values) there: a sort of an odd number of passes then starts from the
// copy and ends in the caller's buffer.
extern "C" __global__ void __launch_bounds__(MGPU_NT)
    mgpu_radix_histogram(const K* keys, const V* values, u64 count, u64 portion,
                         unsigned per_portion, int passes, int begin_bit, int end_bit, u64 flip,
                         unsigned* hist, K* keys_copy, V* values_copy) {
  __shared__ unsigned counts[RADIX_MAX_PASSES][RADIX_BINS];
  int tid = threadIdx.x;
  for (int i = tid; i < RADIX_MAX_PASSES * RADIX_BINS; i += MGPU_NT) (&counts[0][0])[i] = 0;
  __syncthreads();
  u64 p = blockIdx.x / per_portion;
  u64 first = p * portion, end = min(first + portion, count);
  for (u64 chunk = first + (u64)(blockIdx.x % per_portion) * MGPU_NV; chunk < end;
       chunk += (u64)per_portion * MGPU_NV) {
    // The chunk's keys loaded first (striped like a pass's tile), then counted.
    int n = (int)min((u64)MGPU_NV, end - chunk);
    K key[MGPU_VT];
    load_striped(keys + chunk, n, key);
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = striped(i);
      if (j < n) {
        if (keys_copy) {
          keys_copy[chunk + j] = key[i];
          if (MGPU_VALUES == 1) values_copy[chunk + j] = values[chunk + j];
        }
        U bits = (U)(MGPU_ORDER_BITS(key[i])) ^ (U)flip;
        for (int pass = 0; pass < passes; ++pass) {
          int shift = begin_bit + pass * RADIX_BITS;
          unsigned mask = (1u << min(RADIX_BITS, end_bit - shift)) - 1;
          atomicAdd(&counts[pass][(unsigned)(bits >> shift) & mask], 1u);
        }
      }
    }
  }
  __syncthreads();
  unsigned* out = hist + p * passes * RADIX_BINS;
  for (int i = tid; i < passes * RADIX_BINS; i += MGPU_NT) {
    unsigned c = (&counts[0][0])[i];
    if (c) atomicAdd(&out[i], c);
  }
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
typedef TileStatusOf<unsigned, RADIX_BINS * 8> BinStatus;

struct PassStorage {
  TileItems items;
  RankStorage rank;
  u64 bin_out[RADIX_BINS];  // output position of the tile's sorted position 0, per digit
  i64 tile_id;
};

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
  int tid = threadIdx.x;
  unsigned mask = (1u << bits) - 1;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  ticketed_tiles(tickets, first_ticket, num_tiles, s.tile_id, [&](i64 tile) {
    u64 base = (u64)tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    K key[MGPU_VT];
    unsigned item[MGPU_VT];  // a key's digit, then its place in the tile sorted by digit
    load_striped(keys_in + base, n, key);
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      item[i] = striped(i) < n ? digit_of(key[i], shift, mask, flip) : no_digit();
    unsigned count = rank_tile(item, s.rank, [&](unsigned c) {
      thread_publish(status.word_of(tid), tile, c);
    });
    // Values are read once the keys are ranked: fewer registers live across the ranking.
    V value[MGPU_VT];
    if (MGPU_VALUES) load_values(values_in, base, index_base, n, value);
    place_ranked(s.items.keys, key, item);
    // The look-back waits last: by now the tiles before have most likely published their P.
    if (tid < RADIX_BINS) {
      unsigned before = thread_lookback(status.word_of(tid), tile, count, Plus32(), 0u);
      u64 base = bases[tid];
      s.bin_out[tid] = base + before - s.rank.bin_start[tid];
      // The portion's last tile knows its count of every digit: the next portion starts there.
      if (next_bases && (u64)tile == num_tiles - 1)
        next_bases[tid] = base + before + count;
    }
    __syncthreads();
    unsigned char out_digit[MGPU_VT];
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i) {
      int j = i * MGPU_NT + tid;
      if (j < n) {
        K k = s.items.keys[j];
        unsigned d = digit_of(k, shift, mask, flip);
        out_digit[i] = (unsigned char)d;
        keys_out[s.bin_out[d] + j] = k;
      }
    }
    if (MGPU_VALUES) {
      __syncthreads();
      place_ranked(s.items.values, value, item);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < MGPU_VT; ++i) {
        int j = i * MGPU_NT + tid;
        if (j < n) values_out[s.bin_out[out_digit[i]] + j] = s.items.values[j];
      }
    }
  });
}
#endif

#ifdef MGPU_WANT_mgpu_radix_tile
struct TileStorage {
  TileItems items;
  RankStorage rank;
};

// Sorts `count` <= NV keys (and values) with one CTA: every pass ranks the tile in registers and
// reorders it through shared memory. In place is fine: everything is read before anything is
// written.
extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_radix_tile(const K* keys_in, const V* values_in, K* keys_out, V* values_out, int count,
                    int passes, int begin_bit, int end_bit, u64 flip) {
  __shared__ TileStorage s;
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
      item[i] = striped(i) < count ? digit_of(key[i], shift, mask, flip) : no_digit();
    rank_tile(item, s.rank, [](unsigned) {});
    place_ranked(s.items.keys, key, item);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < MGPU_VT; ++i)
      if (striped(i) < count) key[i] = s.items.keys[striped(i)];
    if (MGPU_VALUES) {
      __syncthreads();
      place_ranked(s.items.values, value, item);
      __syncthreads();
#pragma unroll
      for (int i = 0; i < MGPU_VT; ++i)
        if (striped(i) < count) value[i] = s.items.values[striped(i)];
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
