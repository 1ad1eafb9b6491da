// What packing a one-shot's segment heads into bit words (a plan's layout: bit p % VT of word
// p / VT) costs the offsets' checks, at 2^24 positions, for segment lengths of the bench's power
// law, uniform 1..3, fixed 1 and fixed 20: the checks alone; with an atomicOr per word a lane's
// run of four starts touches, or per start, into words cleared before (and a memset of them);
// with plain stores by the first lane holding a start in each word, which gathers the next lanes'
// bits by a scan keyed by word (atomicOr for a warp's first and last words). Then the checks alone
// in other shapes (rounds of loads, a wave of CTAs or a CTA per chunk) against a plain read of the
// offsets. Every packing is checked against the host's words. Times: CUDA events, median of 50.
//
//   nvcc -O3 -arch=sm_90 -o heads_atomics heads_atomics.cu && ./heads_atomics
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <vector>

#define CHECK(x)                                                                   \
  do {                                                                             \
    cudaError_t e = (x);                                                           \
    if (e != cudaSuccess) {                                                        \
      printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));             \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

constexpr int VT = 23, NT = 128, NV = NT * VT;
constexpr int RUN = 4, BLOCK = 256;

// PACK 0: the checks alone; 1: and an atomicOr per distinct word of a lane's run; 2: an atomicOr
// per start; 3: plain stores by each word's first lane (a scan keyed by word over the warp).
// ROUNDS x VECS: the 16-byte loads of a thread, VECS in flight at once.
template <int PACK, int ROUNDS = 2, int VECS = 4>
__global__ void __launch_bounds__(BLOCK) checks(const unsigned* offsets, uint64_t num_segments,
                                                unsigned count, unsigned long long* bad,
                                                unsigned* codes, unsigned char* firsts) {
  constexpr int ROUND = VECS * BLOCK * RUN, TILE = ROUNDS * ROUND;
  const int tid = threadIdx.x, lane = tid % 32;
  const uint64_t num_checks = (num_segments + TILE - 1) / TILE;
  for (uint64_t tile = blockIdx.x; tile < num_checks; tile += gridDim.x) {
    const uint64_t base = tile * TILE;
    int first_bad = TILE;
    for (int round = (ROUNDS - 1) * ROUND; round >= 0; round -= ROUND) {
      unsigned x[VECS][RUN];
#pragma unroll
      for (int u = 0; u < VECS; ++u) {
        const uint64_t first = base + round + (uint64_t)(u * BLOCK + tid) * RUN;
        if (first + RUN <= num_segments) {
          uint4 v = *(const uint4*)(offsets + first);
          x[u][0] = v.x, x[u][1] = v.y, x[u][2] = v.z, x[u][3] = v.w;
        } else {
#pragma unroll
          for (int e = 0; e < RUN; ++e) x[u][e] = first + e < num_segments ? offsets[first + e] : count;
        }
      }
#pragma unroll
      for (int u = VECS - 1; u >= 0; --u) {
        const uint64_t first = base + round + (uint64_t)(u * BLOCK + tid) * RUN;
        unsigned before = __shfl_up_sync(~0u, x[u][RUN - 1], 1);
        if (lane == 0) before = first > 0 && first <= num_segments ? offsets[first - 1] : 0;
#pragma unroll
        for (int e = RUN - 1; e >= 0; --e) {
          const unsigned prev = e == 0 ? before : x[u][e - 1], start = x[u][e];
          bool ok = start < count && (first + e == 0 ? start == 0 : start > prev);
          bool live = first + e < num_segments;
          first_bad = live && !ok ? round + (u * BLOCK + tid) * RUN + e : first_bad;
        }
        if (PACK == 1) {
          unsigned word = ~0u, bits = 0;
#pragma unroll
          for (int e = 0; e < RUN; ++e) {
            const unsigned s = x[u][e];
            if (first + e >= num_segments || s >= count) continue;
            const unsigned w = s / VT;
            if (w != word) {
              if (bits) atomicOr(codes + word, bits);
              word = w, bits = 0;
            }
            bits |= 1u << (s - w * VT);
            if (s % NV == 0) firsts[s / NV] = 1;
          }
          if (bits) atomicOr(codes + word, bits);
        }
        if (PACK == 3) {
          // A warp's vector u holds 128 consecutive segments (4 a lane): the words of their
          // starts are set by plain stores of their one writer (the first lane holding a start in
          // the word gathers the following lanes' bits by a scan keyed by word), but for the
          // slab's first and last words, which the slabs before and after may share: atomicOr.
          unsigned w[RUN], b[RUN];
#pragma unroll
          for (int e = 0; e < RUN; ++e) {
            const unsigned s = x[u][e];
            const bool live = first + e < num_segments && s < count;
            w[e] = live ? s / VT : ~0u;
            b[e] = live ? 1u << (s - w[e] * VT) : 0u;
            if (live && s % NV == 0) firsts[s / NV] = 1;
          }
          const unsigned f = w[0];
          unsigned l = w[0];
#pragma unroll
          for (int e = 1; e < RUN; ++e) l = w[e] != ~0u ? w[e] : l;
          unsigned head = 0;
#pragma unroll
          for (int e = 0; e < RUN; ++e) head |= w[e] == f ? b[e] : 0u;
          unsigned run = head;  // OR over the lanes from here on whose first word is f
#pragma unroll
          for (int d = 1; d < 32; d <<= 1) {
            const unsigned o = __shfl_down_sync(~0u, run, d), of = __shfl_down_sync(~0u, f, d);
            if (lane + d < 32 && of == f) run |= o;
          }
          const unsigned prev_l = __shfl_up_sync(~0u, l, 1);
          const unsigned next_f = __shfl_down_sync(~0u, f, 1), next_run = __shfl_down_sync(~0u, run, 1);
          const unsigned slab_first = __shfl_sync(~0u, f, 0), slab_last = __shfl_sync(~0u, l, 31);
          auto put = [&](unsigned word, unsigned bits) {
            if (word == slab_first || word == slab_last) atomicOr(codes + word, bits);
            else codes[word] = bits;
          };
          if (f != ~0u && (lane == 0 || f != prev_l)) put(f, run);
          // Words after f: the lane's own bits, the last with the next lanes' in it.
          unsigned word = f, bits = 0;
#pragma unroll
          for (int e = 1; e < RUN; ++e) {
            if (w[e] == ~0u || w[e] == f) continue;
            if (w[e] != word && word != f) put(word, bits), bits = 0;
            word = w[e];
            bits |= b[e];
          }
          if (word != f) put(word, bits | (lane < 31 && next_f == word ? next_run : 0u));
        }
        if (PACK == 2) {
#pragma unroll
          for (int e = 0; e < RUN; ++e) {
            const unsigned s = x[u][e];
            if (first + e >= num_segments || s >= count) continue;
            atomicOr(codes + s / VT, 1u << (s % VT));
            if (s % NV == 0) firsts[s / NV] = 1;
          }
        }
      }
    }
    for (int d = 16; d > 0; d /= 2) first_bad = min(first_bad, __shfl_xor_sync(~0u, first_bad, d));
    if (lane == 0 && first_bad < TILE) atomicMin(bad, base + first_bad);
  }
}

// The floor: the offsets read once (16-byte loads, four in flight a thread), nothing checked.
__global__ void __launch_bounds__(BLOCK) read_all(const uint4* v, uint64_t n, unsigned* sink) {
  unsigned acc = 0;
  const uint64_t stride = (uint64_t)gridDim.x * BLOCK;
  for (uint64_t i = (uint64_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += 4 * stride) {
    uint4 r[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) r[k] = i + k * stride < n ? v[i + k * stride] : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < 4; ++k) acc ^= r[k].x ^ r[k].y ^ r[k].z ^ r[k].w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

static uint64_t rng(uint64_t& s) {
  s += 0x9e3779b97f4a7c15ull;
  uint64_t z = s;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int main() {
  const unsigned count = 1u << 24;
  const char* names[] = {"powerlaw", "uniform-2", "fixed-1", "fixed-20"};
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int dist = 0; dist < 4; ++dist) {
    std::vector<unsigned> offs;
    uint64_t seed = 12345 + dist;
    for (uint64_t p = 0; p < count;) {
      offs.push_back((unsigned)p);
      uint64_t r = rng(seed), len;
      if (dist == 0) {
        int k = std::min(24, __builtin_ctzll(r | (1ull << 63)));
        len = 1 + rng(seed) % (1ull << k);
      } else if (dist == 1) {
        len = 1 + r % 3;
      } else if (dist == 2) {
        len = 1;
      } else {
        len = 20;
      }
      p += len;
    }
    const uint64_t nseg = offs.size();
    unsigned *d_off, *codes;
    unsigned char* firsts;
    unsigned long long* bad;
    const size_t words = count / VT + 2;
    CHECK(cudaMalloc(&d_off, nseg * 4));
    CHECK(cudaMalloc(&codes, words * 4));
    CHECK(cudaMalloc(&firsts, count / NV + 2));
    CHECK(cudaMalloc(&bad, 8));
    CHECK(cudaMemcpy(d_off, offs.data(), nseg * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(bad, 0xff, 8));
    // A wave of CTAs, as the library launches.
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, checks<1>, BLOCK, 0));
    const uint64_t num_checks = (nseg + 8192 - 1) / 8192;
    const int grid = (int)std::min<uint64_t>(num_checks, (uint64_t)per_sm * sms);
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    auto time = [&](auto launch) {
      std::vector<float> t;
      for (int rep = 0; rep < 60; ++rep) {
        CHECK(cudaEventRecord(a));
        launch();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        if (rep >= 10) t.push_back(ms * 1000);
      }
      std::sort(t.begin(), t.end());
      return t[t.size() / 2];
    };
    float t0 = time([&] { checks<0><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts); });
    float tm = time([&] { CHECK(cudaMemsetAsync(codes, 0, words * 4)); });
    float t1 = time([&] { checks<1><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts); });
    float t1m = time([&] {
      CHECK(cudaMemsetAsync(codes, 0, words * 4));
      checks<1><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts);
    });
    float t2 = time([&] { checks<2><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts); });
    auto shape = [&](auto kernel, int tile, bool wave) {
      int per = 0;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kernel, BLOCK, 0));
      const uint64_t n = (nseg + tile - 1) / tile;
      const int g = (int)(wave ? std::min<uint64_t>(n, (uint64_t)per * sms) : n);
      return time([&] { kernel<<<g, BLOCK>>>(d_off, nseg, count, bad, codes, firsts); });
    };
    int per_read = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_read, read_all, BLOCK, 0));
    float rd = time([&] { read_all<<<per_read * sms, BLOCK>>>((const uint4*)d_off, nseg / 4, codes); });
    printf("%-10s read alone (a wave of %d CTAs, %.1f MB): %6.2f us\n", names[dist], per_read * sms, nseg * 4 / 1e6, rd);
    float s24w = shape(checks<0, 2, 4>, 2 * 4 * BLOCK * RUN, true);
    float s24a = shape(checks<0, 2, 4>, 2 * 4 * BLOCK * RUN, false);
    float s18w = shape(checks<0, 1, 8>, 1 * 8 * BLOCK * RUN, true);
    float s18a = shape(checks<0, 1, 8>, 1 * 8 * BLOCK * RUN, false);
    float s14a = shape(checks<0, 1, 4>, 1 * 4 * BLOCK * RUN, false);
    float s12a = shape(checks<0, 1, 2>, 1 * 2 * BLOCK * RUN, false);
    printf("%-10s shapes (rounds x vecs, one wave / every chunk a CTA): 2x4 %6.2f / %6.2f | 1x8 %6.2f / %6.2f | 1x4 all %6.2f | 1x2 all %6.2f\n",
           names[dist], s24w, s24a, s18w, s18a, s14a, s12a);
    float t3 = time([&] { checks<3><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts); });
    // Correctness of the packed words (against the host's).
    std::vector<unsigned> want(words, 0), got(words);
    for (unsigned s : offs) want[s / VT] |= 1u << (s % VT);
    bool ok[4] = {true, true, true, true};
    for (int pack = 1; pack <= 3; ++pack) {
      CHECK(cudaMemset(codes, 0, words * 4));
      if (pack == 1) checks<1><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts);
      else if (pack == 2) checks<2><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts);
      else checks<3><<<grid, BLOCK>>>(d_off, nseg, count, bad, codes, firsts);
      CHECK(cudaMemcpy(got.data(), codes, words * 4, cudaMemcpyDeviceToHost));
      ok[pack] = got == want;
    }
    unsigned long long found;
    CHECK(cudaMemcpy(&found, bad, 8, cudaMemcpyDeviceToHost));
    printf("%-10s segments %9llu grid %5d | checks %6.2f us | memset %5.2f | checks+atomics %6.2f "
           "(%s) | memset+checks+atomics %6.2f | per-start %6.2f (%s) | warp-scan %6.2f (%s) | bad %llx\n",
           names[dist], (unsigned long long)nseg, grid, t0, tm, t1, ok[1] ? "ok" : "WRONG", t1m,
           t2, ok[2] ? "ok" : "WRONG", t3, ok[3] ? "ok" : "WRONG", found);
    CHECK(cudaFree(d_off));
    CHECK(cudaFree(codes));
    CHECK(cudaFree(firsts));
    CHECK(cudaFree(bad));
  }
  return 0;
}
