// cub_bench: the NVIDIA CUB peer harness for `mgpu bench`.
//
// Build:  nvcc -O3 -std=c++17 -arch=sm_90 -o cub_bench cub_bench.cu -lcusparse
//         (or add -DCUB_BENCH_NO_CUSPARSE and drop -lcusparse: no spmv)
// Usage:  cub_bench <algo> <type> <n> [reps] [param]
//
// Prints exactly one line on stdout:
//   peer=cub algo=<algo> type=<type> n=<n> [param=<p>] median_ms=<float> min_ms=<float>
//   check=<ok|FAIL|skip>
// (param= only for the algorithms that take one). Diagnostics go to stderr.
//
// Exit status: 0 measured (check may still say FAIL), 1 bad command line,
// 2 CUDA error, 3 algorithm not available in this CUB.
//
// Input data are generated on the device from a counter-based hash
// (splitmix64 of the index, fixed seed), so the host can regenerate any
// element to verify results without copying the input back.
//
// param, for the stream-compaction algorithms (ignored by the others):
//   select-if select-flagged partition-if select-if-inplace: pct, the percentage
//     of items selected (0..100, default 50). x is selected iff
//     bits(x) % 100 < pct, bits(x) being the integer's value as its unsigned
//     type or a float's raw bits. Or the word even: x is selected iff
//     (bits(x) & 1) == 0, a one-instruction predicate (about half the items;
//     integer types only, exit 3 for floats).
//   unique unique-by-key rle nontrivial-runs reduce-by-key: L, the mean run
//     length (>= 1, default 500). A run starts at i > 0 iff rand_bits(3, i) % L
//     == 0; the key at i is the number of run starts in 1..=i, converted to the
//     key type. reduce-by-key sums the values v_i = rand_bits(2, i) & 0xff;
//     unique-by-key keeps the first of them in each run.
//   segreduce: the segment-length distribution, a word (default fixed-500):
//     fixed-L uniform-M powerlaw one empty-M; it sums the same values v_i.
//   spmv: the matrix, a word (default random-32): random-M powerlaw stencil2d
//     stencil3d, with about n nonzeros. segreduce and spmv add geom=<16 hex
//     digits> to the result line: a checksum of the generated geometry (see
//     "Segmented reduction and SpMV" below).
//   segsort-keys segsort-pairs segradix-keys segradix-pairs: the segment-length
//     distribution, as for segreduce (default fixed-500); they sort the keys of
//     the sorts within each segment (pairs: u32 values, each key's input
//     position) and add geom= as segreduce does.

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_partition.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cub/device/device_select.cuh>
#include <cub/version.cuh>
#if __has_include(<cub/device/device_merge.cuh>)
#  include <cub/device/device_merge.cuh>
#  define CUB_BENCH_HAVE_MERGE 1
#else
#  define CUB_BENCH_HAVE_MERGE 0
#endif
// The in-place overload DeviceSelect::If(temp, bytes, d_data, d_num_selected,
// num_items, op) first appears in CUB 2.2 (CUDA 12.3); no header marks it.
#if CUB_VERSION >= 200200
#  define CUB_BENCH_HAVE_SELECT_INPLACE 1
#else
#  define CUB_BENCH_HAVE_SELECT_INPLACE 0
#endif

// cuSPARSE for the spmv peer; built without it (-DCUB_BENCH_NO_CUSPARSE) where
// it is missing, when spmv exits 3.
#ifndef CUB_BENCH_NO_CUSPARSE
#  include <cusparse.h>
#endif

#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

// ---------------------------------------------------------------------------
// Error handling

#define CK(call)                                                                         \
  do {                                                                                   \
    cudaError_t ck_err_ = (call);                                                        \
    if (ck_err_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "cub_bench: CUDA error %s (%s) at %s:%d in %s\n",            \
                   cudaGetErrorName(ck_err_), cudaGetErrorString(ck_err_), __FILE__,     \
                   __LINE__, #call);                                                     \
      std::exit(2);                                                                      \
    }                                                                                    \
  } while (0)

static void usage_and_exit() {
  std::fprintf(stderr,
               "usage: cub_bench <algo> <type> <n> [reps] [param]\n"
               "  algo:  reduce transform-reduce scan scan-inclusive memcpy sort-keys sort-pairs "
               "radix-keys radix-pairs radix-pairs-u32 merge\n"
               "         select-if select-flagged partition-if select-if-inplace\n"
               "         unique unique-by-key rle nontrivial-runs reduce-by-key segreduce spmv\n"
               "         segsort-keys segsort-pairs segradix-keys segradix-pairs\n"
               "  type:  i32 i64 u32 u64 f32 f64 (radix-*: also u8 u16)\n"
               "  n:     element count (>= 1; >= 2 for merge)\n"
               "  reps:  timed repetitions (default 20)\n"
               "  param: select-*, partition-if: percent selected, 0..100 (default 50), or even\n"
               "         (bits & 1 == 0; integer types);\n"
               "         unique, unique-by-key, rle, nontrivial-runs, reduce-by-key: mean run "
               "length,\n"
               "         >= 1 (default 500);\n"
               "         segreduce, segsort-*, segradix-*: fixed-L uniform-M powerlaw one empty-M\n"
               "         (default fixed-500);\n"
               "         spmv: random-M powerlaw stencil2d stencil3d (default random-32);\n"
               "         ignored by the others\n");
  std::exit(1);
}

// ---------------------------------------------------------------------------
// Deterministic data: splitmix64 over the element index.

static constexpr uint64_t kSeed = 0x6D677075u;  // fixed seed
static constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;

enum : uint64_t { kStreamInput = 1, kStreamSecond = 2, kStreamRuns = 3 };

__host__ __device__ inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// i-th output of a splitmix64 generator whose state starts at a seed derived
// from (kSeed, stream).
__host__ __device__ inline uint64_t rand_bits(uint64_t stream, uint64_t i) {
  uint64_t start = mix64(kSeed + stream * kGamma);
  return mix64(start + (i + 1) * kGamma);
}

// Maps 64 random bits to a value: floats uniform in [0,1), integers uniform
// over their full range.
template <class T>
__host__ __device__ inline T value_from_bits(uint64_t h) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(h));
  }
}

template <class T>
__host__ __device__ inline T gen(uint64_t stream, uint64_t i) {
  return value_from_bits<T>(rand_bits(stream, i));
}

// The value paired with a key in the *-pairs benchmarks: a cheap bijection of
// the key, so the host can verify that values travelled with their keys.
template <class T>
__host__ __device__ inline T pair_tag(T k) {
  if constexpr (std::is_floating_point_v<T>) {
    return T(1) - k;  // exact for the [0,1) grid the generator produces
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(k) ^ static_cast<U>(0x5A5A5A5A5A5A5A5Aull));
  }
}

// The transform of the transform-reduce benchmark: x*x in the element type.
// Integers square in the unsigned type of the same width, so the product
// wraps instead of overflowing a signed type (UB). Floats square in T; the
// device may fuse the square into the sum (FMA), which the tolerance covers.
template <class T>
struct Square {
  __host__ __device__ T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) {
      return x * x;
    } else {
      using U = std::make_unsigned_t<T>;
      const U u = static_cast<U>(x);
      return static_cast<T>(static_cast<U>(u * u));
    }
  }
};

// The bits the selection predicate looks at: an integer's value as its
// unsigned type (so negative values do not sign-extend), a float's raw bits.
template <class T>
__host__ __device__ inline uint64_t select_bits(T x) {
  if constexpr (std::is_same_v<T, float>) {
#ifdef __CUDA_ARCH__
    return static_cast<uint64_t>(__float_as_uint(x));
#else
    uint32_t u = 0;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
  } else if constexpr (std::is_same_v<T, double>) {
#ifdef __CUDA_ARCH__
    return static_cast<uint64_t>(__double_as_longlong(x));
#else
    uint64_t u = 0;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
  } else {
    using U = std::make_unsigned_t<T>;
    return static_cast<uint64_t>(static_cast<U>(x));
  }
}

// The predicate of the selection benchmarks: keeps about pct percent of the
// input, whose bits are close enough to uniform that their remainder mod 100
// is too.
template <class T>
struct SelectPct {
  uint64_t pct;
  __host__ __device__ bool operator()(const T& x) const { return select_bits(x) % 100 < pct; }
};

// The one-instruction predicate of the selection benchmarks (param even):
// keeps the items whose bits are even, about half of them. A type of its own,
// so that CUB's predicate is one AND and one compare, with no branch on the
// param. Integer types only: the raw bits of the generator's floats (a
// [0, 1) grid) are even for about three quarters of them.
template <class T>
struct SelectEven {
  __host__ __device__ bool operator()(const T& x) const { return (select_bits(x) & 1) == 0; }
};

// Roughly how many of n items a predicate keeps (the host reference's
// reservation).
template <class T>
static size_t expected_selected(int64_t n, const SelectPct<T>& pred) {
  return static_cast<size_t>(static_cast<double>(n) * static_cast<double>(pred.pct) / 100.0);
}
template <class T>
static size_t expected_selected(int64_t n, const SelectEven<T>&) {
  return static_cast<size_t>(n / 2);
}

// The value reduced per run in reduce-by-key: 8 random bits, so a run's sum
// neither overflows a 32-bit integer nor loses precision in f32 unless the
// run is tens of thousands of items long.
template <class T>
__host__ __device__ inline T rbk_value(uint64_t i) {
  return static_cast<T>(rand_bits(kStreamSecond, i) & 0xff);
}

template <class T>
inline uint64_t bits_of(T v) {
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}

template <class T>
__global__ void fill_kernel(T* out, int64_t n, uint64_t stream, uint64_t index_offset) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = gen<T>(stream, static_cast<uint64_t>(i) + index_offset);
  }
}

template <class T>
__global__ void tag_kernel(const T* keys, T* vals, int64_t n) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    vals[i] = pair_tag(keys[i]);
  }
}

// The values of radix-pairs-u32: each key's input position.
__global__ void iota_kernel(uint32_t* out, int64_t n) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<uint32_t>(i);
  }
}

template <class T, class Pred>
__global__ void select_flags_kernel(const T* in, char* flags, int64_t n, Pred pred) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    flags[i] = pred(in[i]) ? 1 : 0;
  }
}

// 1 where a run starts (index 0 excluded): the summands of the key scan.
__global__ void run_start_kernel(int64_t* out, int64_t n, uint64_t mean_len) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = (i > 0 && rand_bits(kStreamRuns, static_cast<uint64_t>(i)) % mean_len == 0) ? 1 : 0;
  }
}

template <class T>
__global__ void convert_kernel(const int64_t* in, T* out, int64_t n) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = static_cast<T>(in[i]);
  }
}

template <class T>
__global__ void rbk_values_kernel(T* out, int64_t n) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = rbk_value<T>(static_cast<uint64_t>(i));
  }
}

static unsigned grid_for(int64_t n) {
  int64_t blocks = (n + 255) / 256;
  if (blocks < 1) blocks = 1;
  if (blocks > 65536) blocks = 65536;
  return static_cast<unsigned>(blocks);
}

template <class T>
static void fill(T* d, int64_t n, uint64_t stream, cudaStream_t s, uint64_t index_offset = 0) {
  fill_kernel<T><<<grid_for(n), 256, 0, s>>>(d, n, stream, index_offset);
  CK(cudaGetLastError());
}

// ---------------------------------------------------------------------------
// Device buffers

template <class T>
struct DevBuf {
  T* p = nullptr;
  explicit DevBuf(size_t count) {
    CK(cudaMalloc(reinterpret_cast<void**>(&p), std::max<size_t>(count, 1) * sizeof(T)));
  }
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

struct TempStorage {
  void* p = nullptr;
  size_t bytes = 0;
  void allocate(size_t b) {
    bytes = b;
    CK(cudaMalloc(&p, std::max<size_t>(b, 1)));
  }
  ~TempStorage() {
    if (p) cudaFree(p);
  }
};

template <class T>
static std::vector<T> to_host(const T* d, size_t count, size_t offset = 0) {
  std::vector<T> h(count);
  if (count) CK(cudaMemcpy(h.data(), d + offset, count * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

// ---------------------------------------------------------------------------
// Timing: 3 warm-up runs, then `reps` runs each bracketed by its own pair of
// events on the benchmark stream. `setup` runs before each run, outside the
// timed region (it restores inputs for in-place sorts).

struct Timing {
  double median_ms = 0, min_ms = 0;
};

template <class Setup, class Body>
static Timing time_runs(cudaStream_t s, int reps, Setup setup, Body body) {
  for (int w = 0; w < 3; ++w) {
    setup();
    CK(body());
  }
  CK(cudaStreamSynchronize(s));
  CK(cudaGetLastError());

  cudaEvent_t start, stop;
  CK(cudaEventCreate(&start));
  CK(cudaEventCreate(&stop));
  std::vector<double> ms;
  ms.reserve(reps);
  for (int r = 0; r < reps; ++r) {
    setup();
    CK(cudaEventRecord(start, s));
    CK(body());
    CK(cudaEventRecord(stop, s));
    CK(cudaEventSynchronize(stop));
    float t = 0;
    CK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(static_cast<double>(t));
  }
  CK(cudaGetLastError());
  CK(cudaEventDestroy(start));
  CK(cudaEventDestroy(stop));

  std::sort(ms.begin(), ms.end());
  Timing t;
  size_t m = ms.size();
  t.median_ms = (m % 2) ? ms[m / 2] : 0.5 * (ms[m / 2 - 1] + ms[m / 2]);
  t.min_ms = ms.front();
  return t;
}

// ---------------------------------------------------------------------------
// Host-side verification helpers

// Accumulator for sums: wrapping unsigned arithmetic of the same width for
// integers (matching two's-complement overflow on the device), double for
// floating point.
template <class T, bool IsFloat = std::is_floating_point_v<T>>
struct HostAcc {
  using type = std::make_unsigned_t<T>;
};
template <class T>
struct HostAcc<T, true> {
  using type = double;
};
template <class T>
using acc_t = typename HostAcc<T>::type;

template <class T>
static acc_t<T> acc_of(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(v);
  } else {
    return static_cast<acc_t<T>>(v);
  }
}

// Compare a device result to the host reference. Integers must match exactly;
// floats within a relative tolerance scaled by `scale` (the magnitude of the
// quantity the error accumulates in).
template <class T>
static bool close_enough(T got, acc_t<T> want, double rel_tol, double scale) {
  if constexpr (std::is_floating_point_v<T>) {
    double g = static_cast<double>(got);
    if (!std::isfinite(g)) return false;
    double tol = rel_tol * std::max({std::fabs(want), std::fabs(scale), 1.0});
    return std::fabs(g - want) <= tol;
  } else {
    return static_cast<acc_t<T>>(got) == want;
  }
}

template <class T>
static acc_t<T> host_total(uint64_t stream, int64_t n) {
  acc_t<T> s = 0;
  for (int64_t i = 0; i < n; ++i) s += acc_of(gen<T>(stream, static_cast<uint64_t>(i)));
  return s;
}

// Sum of x*x over the input: each square in T (as the device computes it),
// accumulated like host_total.
template <class T>
static acc_t<T> host_total_squares(uint64_t stream, int64_t n) {
  const auto sq = Square<T>{};
  acc_t<T> s = 0;
  for (int64_t i = 0; i < n; ++i) s += acc_of(sq(gen<T>(stream, static_cast<uint64_t>(i))));
  return s;
}

// Tolerances for float sums (relative to the total). Loose enough for the
// tile-by-tile accumulation order of a decoupled look-back scan in f32, tight
// enough to catch garbage or missing tiles.
template <class T>
static double reduce_tol() {
  return std::is_same_v<T, float> ? 1e-4 : 1e-10;
}
template <class T>
static double scan_tol() {
  return std::is_same_v<T, float> ? 1e-2 : 1e-8;
}

// Order-independent multiset fingerprint of a set of values.
template <class T>
static uint64_t fingerprint_add(uint64_t acc, T v) {
  return acc + mix64(bits_of(v) ^ 0xA0761D6478BD642Full);
}

template <class T>
static bool is_sorted_host(const std::vector<T>& v) {
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[i - 1]) {
      std::fprintf(stderr, "cub_bench: output not sorted at index %zu\n", i);
      return false;
    }
  return true;
}

// Full check of a sorted result (keys, optional values) against the generated
// input: sorted, same multiset of keys, each value equal to its key's tag.
template <class T>
static bool check_sorted_output(const T* d_keys, const T* d_vals, int64_t n) {
  std::vector<T> keys = to_host(d_keys, static_cast<size_t>(n));
  if (!is_sorted_host(keys)) return false;
  uint64_t want = 0, got = 0;
  for (int64_t i = 0; i < n; ++i) {
    want = fingerprint_add(want, gen<T>(kStreamInput, static_cast<uint64_t>(i)));
    got = fingerprint_add(got, keys[static_cast<size_t>(i)]);
  }
  if (want != got) {
    std::fprintf(stderr, "cub_bench: sorted keys are not a permutation of the input\n");
    return false;
  }
  if (d_vals) {
    std::vector<T> vals = to_host(d_vals, static_cast<size_t>(n));
    for (size_t i = 0; i < vals.size(); ++i)
      if (bits_of(vals[i]) != bits_of(pair_tag(keys[i]))) {
        std::fprintf(stderr, "cub_bench: value at index %zu does not belong to its key\n", i);
        return false;
      }
  }
  return true;
}

// ---------------------------------------------------------------------------
// Benchmarks. NumT is the num_items type handed to CUB: int while n fits
// (CUB's usual 32-bit offset path), int64_t beyond.

struct Outcome {
  Timing t;
  const char* check = "skip";
  std::string extra;  // more fields for the result line, each with a leading space
};

template <class T, class NumT>
static Outcome bench_reduce(int64_t n, int reps, cudaStream_t s) {
  DevBuf<T> in(n), out(1);
  fill(in.p, n, kStreamInput, s);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceReduce::Sum(nullptr, bytes, in.p, out.p, static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(
    s, reps, [] {},
    [&] { return cub::DeviceReduce::Sum(tmp.p, tmp.bytes, in.p, out.p, static_cast<NumT>(n), s); });
  CK(cudaStreamSynchronize(s));
  T got = to_host(out.p, 1)[0];
  acc_t<T> want = host_total<T>(kStreamInput, n);
  bool ok = close_enough(got, want, reduce_tol<T>(), static_cast<double>(want));
  if (!ok)
    std::fprintf(stderr, "cub_bench: reduce mismatch: got %.17g want %.17g\n", static_cast<double>(got),
                 static_cast<double>(want));
  o.check = ok ? "ok" : "FAIL";
  return o;
}

// Fused transform-reduce: the squares are never written to memory, so this
// moves the same bytes as reduce.
template <class T, class NumT>
static Outcome bench_transform_reduce(int64_t n, int reps, cudaStream_t s) {
  DevBuf<T> in(n), out(1);
  fill(in.p, n, kStreamInput, s);
  const auto plus = cuda::std::plus<>{};
  const auto sq = Square<T>{};
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceReduce::TransformReduce(nullptr, bytes, in.p, out.p, static_cast<NumT>(n), plus, sq, T{},
                                        s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceReduce::TransformReduce(tmp.p, tmp.bytes, in.p, out.p, static_cast<NumT>(n), plus,
                                              sq, T{}, s);
  });
  CK(cudaStreamSynchronize(s));
  T got = to_host(out.p, 1)[0];
  acc_t<T> want = host_total_squares<T>(kStreamInput, n);
  bool ok = close_enough(got, want, reduce_tol<T>(), static_cast<double>(want));
  if (!ok)
    std::fprintf(stderr, "cub_bench: transform-reduce mismatch: got %.17g want %.17g\n",
                 static_cast<double>(got), static_cast<double>(want));
  o.check = ok ? "ok" : "FAIL";
  return o;
}

template <class T, class NumT>
static Outcome bench_scan(int64_t n, int reps, cudaStream_t s, bool inclusive) {
  DevBuf<T> in(n), out(n);
  fill(in.p, n, kStreamInput, s);
  TempStorage tmp;
  size_t bytes = 0;
  if (inclusive)
    CK(cub::DeviceScan::InclusiveSum(nullptr, bytes, in.p, out.p, static_cast<NumT>(n), s));
  else
    CK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, in.p, out.p, static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return inclusive
             ? cub::DeviceScan::InclusiveSum(tmp.p, tmp.bytes, in.p, out.p, static_cast<NumT>(n), s)
             : cub::DeviceScan::ExclusiveSum(tmp.p, tmp.bytes, in.p, out.p, static_cast<NumT>(n), s);
  });
  CK(cudaStreamSynchronize(s));

  // Head: out[0..16) against a host prefix.
  const int64_t k = std::min<int64_t>(16, n);
  std::vector<T> head = to_host(out.p, static_cast<size_t>(k));
  std::vector<T> tail = to_host(out.p, static_cast<size_t>(k), static_cast<size_t>(n - k));
  acc_t<T> total = host_total<T>(kStreamInput, n);
  const double tol = scan_tol<T>();
  bool ok = true;
  acc_t<T> run = 0;
  for (int64_t i = 0; i < k; ++i) {
    acc_t<T> x = acc_of(gen<T>(kStreamInput, static_cast<uint64_t>(i)));
    acc_t<T> want = inclusive ? static_cast<acc_t<T>>(run + x) : run;
    run = static_cast<acc_t<T>>(run + x);
    if (!close_enough(head[static_cast<size_t>(i)], want, 1e-5, static_cast<double>(want))) {
      std::fprintf(stderr, "cub_bench: scan mismatch at %lld: got %.17g want %.17g\n",
                   static_cast<long long>(i), static_cast<double>(head[static_cast<size_t>(i)]),
                   static_cast<double>(want));
      ok = false;
    }
  }
  // Tail: out[n-k..n) against total minus the suffix; for the exclusive scan
  // this checks the total through out[n-1] + in[n-1].
  acc_t<T> suffix = 0;  // sum of in[i+1..n)
  for (int64_t i = n - 1; i >= n - k; --i) {
    acc_t<T> x = acc_of(gen<T>(kStreamInput, static_cast<uint64_t>(i)));
    acc_t<T> incl = static_cast<acc_t<T>>(total - suffix);  // sum of in[0..=i]
    acc_t<T> want = inclusive ? incl : static_cast<acc_t<T>>(incl - x);
    suffix = static_cast<acc_t<T>>(suffix + x);
    T got = tail[static_cast<size_t>(i - (n - k))];
    if (!close_enough(got, want, tol, static_cast<double>(total))) {
      std::fprintf(stderr, "cub_bench: scan mismatch at %lld: got %.17g want %.17g\n",
                   static_cast<long long>(i), static_cast<double>(got), static_cast<double>(want));
      ok = false;
    }
  }
  o.check = ok ? "ok" : "FAIL";
  return o;
}

template <class T>
static Outcome bench_memcpy(int64_t n, int reps, cudaStream_t s) {
  DevBuf<T> in(n), out(n);
  fill(in.p, n, kStreamInput, s);
  const size_t bytes = static_cast<size_t>(n) * sizeof(T);
  Outcome o;
  o.t = time_runs(s, reps, [] {},
                  [&] { return cudaMemcpyAsync(out.p, in.p, bytes, cudaMemcpyDeviceToDevice, s); });
  CK(cudaStreamSynchronize(s));
  // Spot check: first, last and strided elements.
  bool ok = true;
  const int64_t k = std::min<int64_t>(1024, n);
  std::vector<T> head = to_host(out.p, static_cast<size_t>(k));
  std::vector<T> tail = to_host(out.p, static_cast<size_t>(k), static_cast<size_t>(n - k));
  for (int64_t i = 0; i < k && ok; ++i) {
    ok = bits_of(head[i]) == bits_of(gen<T>(kStreamInput, static_cast<uint64_t>(i))) &&
         bits_of(tail[i]) == bits_of(gen<T>(kStreamInput, static_cast<uint64_t>(n - k + i)));
  }
  const int64_t step = std::max<int64_t>(1, n / 1024);
  for (int64_t i = 0; i < n && ok; i += step) {
    T v = to_host(out.p, 1, static_cast<size_t>(i))[0];
    ok = bits_of(v) == bits_of(gen<T>(kStreamInput, static_cast<uint64_t>(i)));
  }
  if (!ok) std::fprintf(stderr, "cub_bench: memcpy output differs from input\n");
  o.check = ok ? "ok" : "FAIL";
  return o;
}

// cub::DeviceMergeSort sorts in place: the input is restored from a pristine
// copy before every run, outside the timed region.
template <class T, class NumT>
static Outcome bench_merge_sort(int64_t n, int reps, cudaStream_t s, bool pairs) {
  const size_t bytes_n = static_cast<size_t>(n) * sizeof(T);
  DevBuf<T> pristine(n), keys(n);
  fill(pristine.p, n, kStreamInput, s);
  DevBuf<T> vals_pristine(pairs ? n : 0), vals(pairs ? n : 0);
  if (pairs) {
    tag_kernel<T><<<grid_for(n), 256, 0, s>>>(pristine.p, vals_pristine.p, n);
    CK(cudaGetLastError());
  }
  const auto less = cuda::std::less<T>{};
  TempStorage tmp;
  size_t bytes = 0;
  if (pairs)
    CK(cub::DeviceMergeSort::SortPairs(nullptr, bytes, keys.p, vals.p, static_cast<NumT>(n), less, s));
  else
    CK(cub::DeviceMergeSort::SortKeys(nullptr, bytes, keys.p, static_cast<NumT>(n), less, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(
    s, reps,
    [&] {
      CK(cudaMemcpyAsync(keys.p, pristine.p, bytes_n, cudaMemcpyDeviceToDevice, s));
      if (pairs) CK(cudaMemcpyAsync(vals.p, vals_pristine.p, bytes_n, cudaMemcpyDeviceToDevice, s));
    },
    [&] {
      return pairs ? cub::DeviceMergeSort::SortPairs(tmp.p, tmp.bytes, keys.p, vals.p,
                                                     static_cast<NumT>(n), less, s)
                   : cub::DeviceMergeSort::SortKeys(tmp.p, tmp.bytes, keys.p, static_cast<NumT>(n),
                                                    less, s);
    });
  CK(cudaStreamSynchronize(s));
  o.check = check_sorted_output(keys.p, pairs ? vals.p : nullptr, n) ? "ok" : "FAIL";
  return o;
}

// cub::DeviceRadixSort (keys_in -> keys_out form) leaves its input untouched,
// so no restore is needed between runs.
template <class T, class NumT>
static Outcome bench_radix_sort(int64_t n, int reps, cudaStream_t s, bool pairs) {
  DevBuf<T> keys_in(n), keys_out(n);
  fill(keys_in.p, n, kStreamInput, s);
  DevBuf<T> vals_in(pairs ? n : 0), vals_out(pairs ? n : 0);
  if (pairs) {
    tag_kernel<T><<<grid_for(n), 256, 0, s>>>(keys_in.p, vals_in.p, n);
    CK(cudaGetLastError());
  }
  constexpr int end_bit = static_cast<int>(sizeof(T) * 8);
  TempStorage tmp;
  size_t bytes = 0;
  if (pairs)
    CK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in.p, keys_out.p, vals_in.p, vals_out.p,
                                       static_cast<NumT>(n), 0, end_bit, s));
  else
    CK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys_in.p, keys_out.p, static_cast<NumT>(n), 0,
                                      end_bit, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return pairs ? cub::DeviceRadixSort::SortPairs(tmp.p, tmp.bytes, keys_in.p, keys_out.p, vals_in.p,
                                                   vals_out.p, static_cast<NumT>(n), 0, end_bit, s)
                 : cub::DeviceRadixSort::SortKeys(tmp.p, tmp.bytes, keys_in.p, keys_out.p,
                                                  static_cast<NumT>(n), 0, end_bit, s);
  });
  CK(cudaStreamSynchronize(s));
  o.check = check_sorted_output(keys_out.p, pairs ? vals_out.p : nullptr, n) ? "ok" : "FAIL";
  return o;
}

// Keys of T with uint32_t values, each value the input position of its key
// (as mgpu bench's radix-pairs rows sort: u32 values whatever the key).
template <class T, class NumT>
static Outcome bench_radix_sort_u32(int64_t n, int reps, cudaStream_t s) {
  DevBuf<T> keys_in(n), keys_out(n);
  fill(keys_in.p, n, kStreamInput, s);
  DevBuf<uint32_t> vals_in(n), vals_out(n);
  iota_kernel<<<grid_for(n), 256, 0, s>>>(vals_in.p, n);
  CK(cudaGetLastError());
  constexpr int end_bit = static_cast<int>(sizeof(T) * 8);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in.p, keys_out.p, vals_in.p, vals_out.p,
                                     static_cast<NumT>(n), 0, end_bit, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceRadixSort::SortPairs(tmp.p, tmp.bytes, keys_in.p, keys_out.p, vals_in.p,
                                           vals_out.p, static_cast<NumT>(n), 0, end_bit, s);
  });
  CK(cudaStreamSynchronize(s));
  bool ok = check_sorted_output<T>(keys_out.p, nullptr, n);
  if (ok) {
    std::vector<T> keys = to_host(keys_out.p, static_cast<size_t>(n));
    std::vector<uint32_t> vals = to_host(vals_out.p, static_cast<size_t>(n));
    for (size_t i = 0; i < vals.size(); ++i)
      if (bits_of(keys[i]) != bits_of(gen<T>(kStreamInput, static_cast<uint64_t>(vals[i])))) {
        std::fprintf(stderr, "cub_bench: value at index %zu does not belong to its key\n", i);
        ok = false;
        break;
      }
  }
  o.check = ok ? "ok" : "FAIL";
  return o;
}

#if CUB_BENCH_HAVE_MERGE
// Merge of two sorted halves: in[0..n1) and in[n1..n), n1 = n/2. The halves
// are the generated input, each sorted once before timing.
template <class T>
static Outcome bench_merge(int64_t n, int reps, cudaStream_t s) {
  const int64_t n1 = n / 2, n2 = n - n1;
  DevBuf<T> in(n), out(n);
  {
    DevBuf<T> raw(n);
    fill(raw.p, n, kStreamInput, s);
    constexpr int end_bit = static_cast<int>(sizeof(T) * 8);
    size_t b1 = 0, b2 = 0;
    CK(cub::DeviceRadixSort::SortKeys(nullptr, b1, raw.p, in.p, n1, 0, end_bit, s));
    CK(cub::DeviceRadixSort::SortKeys(nullptr, b2, raw.p + n1, in.p + n1, n2, 0, end_bit, s));
    TempStorage sort_tmp;
    sort_tmp.allocate(std::max(b1, b2));
    CK(cub::DeviceRadixSort::SortKeys(sort_tmp.p, b1, raw.p, in.p, n1, 0, end_bit, s));
    CK(cub::DeviceRadixSort::SortKeys(sort_tmp.p, b2, raw.p + n1, in.p + n1, n2, 0, end_bit, s));
    CK(cudaStreamSynchronize(s));
  }
  const auto less = cuda::std::less<T>{};
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceMerge::MergeKeys(nullptr, bytes, in.p, n1, in.p + n1, n2, out.p, less, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceMerge::MergeKeys(tmp.p, tmp.bytes, in.p, n1, in.p + n1, n2, out.p, less, s);
  });
  CK(cudaStreamSynchronize(s));
  o.check = check_sorted_output<T>(out.p, nullptr, n) ? "ok" : "FAIL";
  return o;
}
#endif

// ---------------------------------------------------------------------------
// Stream compaction: selection, partition and runs. The number of items
// selected (or of runs) is an output on the device; it is read back only for
// the check, after timing.

// Host reference of the selection benchmarks: the items the predicate keeps,
// in input order, and (when asked) the items it rejects, in input order.
template <class T, class Pred>
static std::vector<T> host_selected(int64_t n, const Pred& pred, std::vector<T>* rejected = nullptr) {
  const size_t expect = expected_selected(n, pred);
  std::vector<T> kept;
  kept.reserve(expect + 16);
  if (rejected) rejected->reserve(static_cast<size_t>(n) - std::min<size_t>(expect, n) + 16);
  for (int64_t i = 0; i < n; ++i) {
    T x = gen<T>(kStreamInput, static_cast<uint64_t>(i));
    if (pred(x)) kept.push_back(x);
    else if (rejected) rejected->push_back(x);
  }
  return kept;
}

// Index of the first element where got and want differ bitwise, or -1.
template <class T>
static int64_t first_mismatch(const T* got, const T* want, size_t count) {
  for (size_t i = 0; i < count; ++i)
    if (bits_of(got[i]) != bits_of(want[i])) return static_cast<int64_t>(i);
  return -1;
}

// The device counter (items selected, runs found) against the reference.
template <class NumT>
static bool check_count(const NumT* d_num, size_t want, const char* what) {
  const NumT got = to_host(d_num, 1)[0];
  if (got < 0 || static_cast<uint64_t>(got) != static_cast<uint64_t>(want)) {
    std::fprintf(stderr, "cub_bench: %s: got %lld want %llu\n", what, static_cast<long long>(got),
                 static_cast<unsigned long long>(want));
    return false;
  }
  return true;
}

// Full check of a selection: the count, then every selected item in order.
template <class T, class NumT, class Pred>
static bool check_selected(const T* d_out, const NumT* d_num, int64_t n, const Pred& pred) {
  const std::vector<T> want = host_selected<T>(n, pred);
  if (!check_count(d_num, want.size(), "number selected")) return false;
  const std::vector<T> got = to_host(d_out, want.size());
  const int64_t bad = first_mismatch(got.data(), want.data(), want.size());
  if (bad >= 0) {
    std::fprintf(stderr, "cub_bench: selected item %lld differs from the reference\n",
                 static_cast<long long>(bad));
    return false;
  }
  return true;
}

template <class T, class NumT, class Pred>
static Outcome bench_select_if(int64_t n, int reps, Pred pred, cudaStream_t s) {
  DevBuf<T> in(n), out(n);
  DevBuf<NumT> num(1);
  fill(in.p, n, kStreamInput, s);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceSelect::If(nullptr, bytes, in.p, out.p, num.p, static_cast<NumT>(n), pred, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceSelect::If(tmp.p, tmp.bytes, in.p, out.p, num.p, static_cast<NumT>(n), pred, s);
  });
  CK(cudaStreamSynchronize(s));
  o.check = check_selected(out.p, num.p, n, pred) ? "ok" : "FAIL";
  return o;
}

// The flags are the same predicate evaluated once before timing, so this
// differs from select-if by reading a byte per item instead of evaluating.
template <class T, class NumT, class Pred>
static Outcome bench_select_flagged(int64_t n, int reps, Pred pred, cudaStream_t s) {
  DevBuf<T> in(n), out(n);
  DevBuf<char> flags(n);
  DevBuf<NumT> num(1);
  fill(in.p, n, kStreamInput, s);
  select_flags_kernel<T, Pred><<<grid_for(n), 256, 0, s>>>(in.p, flags.p, n, pred);
  CK(cudaGetLastError());
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceSelect::Flagged(nullptr, bytes, in.p, flags.p, out.p, num.p, static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceSelect::Flagged(tmp.p, tmp.bytes, in.p, flags.p, out.p, num.p,
                                      static_cast<NumT>(n), s);
  });
  CK(cudaStreamSynchronize(s));
  o.check = check_selected(out.p, num.p, n, pred) ? "ok" : "FAIL";
  return o;
}

// DevicePartition::If writes all n items to one output: the selected ones
// first in input order, then the rejected ones in reverse input order.
template <class T, class NumT, class Pred>
static Outcome bench_partition_if(int64_t n, int reps, Pred pred, cudaStream_t s) {
  DevBuf<T> in(n), out(n);
  DevBuf<NumT> num(1);
  fill(in.p, n, kStreamInput, s);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DevicePartition::If(nullptr, bytes, in.p, out.p, num.p, static_cast<NumT>(n), pred, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DevicePartition::If(tmp.p, tmp.bytes, in.p, out.p, num.p, static_cast<NumT>(n), pred, s);
  });
  CK(cudaStreamSynchronize(s));

  std::vector<T> rejected;
  const std::vector<T> kept = host_selected<T>(n, pred, &rejected);
  bool ok = check_count(num.p, kept.size(), "number selected");
  if (ok) {
    const std::vector<T> got = to_host(out.p, static_cast<size_t>(n));
    int64_t bad = first_mismatch(got.data(), kept.data(), kept.size());
    if (bad >= 0) {
      std::fprintf(stderr, "cub_bench: selected item %lld differs from the reference\n",
                   static_cast<long long>(bad));
      ok = false;
    }
    std::reverse(rejected.begin(), rejected.end());
    bad = first_mismatch(got.data() + kept.size(), rejected.data(), rejected.size());
    if (ok && bad >= 0) {
      std::fprintf(stderr, "cub_bench: rejected item at %lld differs from the reference\n",
                   static_cast<long long>(static_cast<int64_t>(kept.size()) + bad));
      ok = false;
    }
  }
  o.check = ok ? "ok" : "FAIL";
  return o;
}

#if CUB_BENCH_HAVE_SELECT_INPLACE
// In-place selection compacts its input: the input is restored from a
// pristine copy before every run, outside the timed region.
template <class T, class NumT, class Pred>
static Outcome bench_select_if_inplace(int64_t n, int reps, Pred pred, cudaStream_t s) {
  const size_t bytes_n = static_cast<size_t>(n) * sizeof(T);
  DevBuf<T> pristine(n), data(n);
  DevBuf<NumT> num(1);
  fill(pristine.p, n, kStreamInput, s);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceSelect::If(nullptr, bytes, data.p, num.p, static_cast<NumT>(n), pred, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(
    s, reps, [&] { CK(cudaMemcpyAsync(data.p, pristine.p, bytes_n, cudaMemcpyDeviceToDevice, s)); },
    [&] {
      return cub::DeviceSelect::If(tmp.p, tmp.bytes, data.p, num.p, static_cast<NumT>(n), pred, s);
    });
  CK(cudaStreamSynchronize(s));
  o.check = check_selected(data.p, num.p, n, pred) ? "ok" : "FAIL";
  return o;
}
#endif

// Keys of the run benchmarks, generated on the device before timing: run
// starts by hash, numbered by an inclusive scan. The scan counts in int64_t
// so that a float key type only rounds the final number; past 2^24 runs
// adjacent f32 keys can round to the same value and merge, which is why the
// checks work from the keys actually generated, read back from the device.
template <class T, class NumT>
static void make_run_keys(T* keys, int64_t n, uint64_t mean_len, cudaStream_t s) {
  DevBuf<int64_t> count(n);
  run_start_kernel<<<grid_for(n), 256, 0, s>>>(count.p, n, mean_len);
  CK(cudaGetLastError());
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceScan::InclusiveSum(nullptr, bytes, count.p, count.p, static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  CK(cub::DeviceScan::InclusiveSum(tmp.p, tmp.bytes, count.p, count.p, static_cast<NumT>(n), s));
  convert_kernel<T><<<grid_for(n), 256, 0, s>>>(count.p, keys, n);
  CK(cudaGetLastError());
  CK(cudaStreamSynchronize(s));  // before `count` and `tmp` are freed
}

// DeviceRunLengthEncode took `int num_items` until CUB 3.x (3.0 still does),
// so it would silently truncate a larger count. Whether this CUB's Encode and
// NonTrivialRuns take a NumT count is read off their signatures: a function
// pointer with a NumT count binds only where the count is a template
// parameter or NumT itself. Only a signature that binds with int and not with
// NumT counts as int-only, so a signature this probe cannot read (a future
// CUB) is trusted rather than refused.
template <class T, class NumT>
using EncodeFn = cudaError_t (*)(void*, size_t&, T*, T*, NumT*, NumT*, NumT, cudaStream_t);
template <class T, class NumT>
using NonTrivialRunsFn = cudaError_t (*)(void*, size_t&, T*, NumT*, NumT*, NumT*, NumT, cudaStream_t);

template <class T, class NumT, class = void>
struct EncodeTakes : std::false_type {};
template <class T, class NumT>
struct EncodeTakes<
  T, NumT, std::void_t<decltype(static_cast<EncodeFn<T, NumT>>(&cub::DeviceRunLengthEncode::Encode))>>
    : std::true_type {};

template <class T, class NumT, class = void>
struct NonTrivialRunsTakes : std::false_type {};
template <class T, class NumT>
struct NonTrivialRunsTakes<
  T, NumT,
  std::void_t<decltype(static_cast<NonTrivialRunsFn<T, NumT>>(
    &cub::DeviceRunLengthEncode::NonTrivialRuns))>>
    : std::true_type {};

// DeviceSelect::UniqueByKey took `int num_items` before its count became a
// template parameter (NumItemsT); read off the same way. In a CCCL whose last
// parameter is an environment rather than a cudaStream_t the probe binds with
// neither count, and the count is trusted.
template <class T, class NumT>
using UniqueByKeyFn = cudaError_t (*)(void*, size_t&, T*, T*, T*, T*, NumT*, NumT, cudaStream_t);

template <class T, class NumT, class = void>
struct UniqueByKeyTakes : std::false_type {};
template <class T, class NumT>
struct UniqueByKeyTakes<
  T, NumT,
  std::void_t<decltype(static_cast<UniqueByKeyFn<T, NumT>>(&cub::DeviceSelect::UniqueByKey))>>
    : std::true_type {};

[[noreturn]] static void unsupported_count(const char* algo) {
  std::fprintf(stderr, "cub_bench: this CUB's %s takes an int item count; n > INT_MAX is unsupported\n",
               algo);
  std::printf("unsupported\n");
  std::exit(3);
}

// Runs of equal keys (by ==, as CUB compares them) in the keys read back.
struct HostRuns {
  std::vector<int64_t> start, len;
};

template <class T>
static HostRuns host_runs(const std::vector<T>& keys) {
  HostRuns r;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i == 0 || !(keys[i] == keys[i - 1])) {
      r.start.push_back(static_cast<int64_t>(i));
      r.len.push_back(1);
    } else {
      ++r.len.back();
    }
  }
  return r;
}

// The first key of each run, as written by unique / rle / reduce-by-key.
template <class T>
static bool check_run_keys(const T* d_unique, const std::vector<T>& keys, const HostRuns& runs) {
  const std::vector<T> got = to_host(d_unique, runs.start.size());
  for (size_t r = 0; r < got.size(); ++r)
    if (bits_of(got[r]) != bits_of(keys[static_cast<size_t>(runs.start[r])])) {
      std::fprintf(stderr, "cub_bench: key of run %zu differs from the reference\n", r);
      return false;
    }
  return true;
}

// A per-run integer output (lengths, offsets) against the reference.
template <class NumT>
static bool check_run_numbers(const NumT* d, const std::vector<int64_t>& want, const char* what) {
  const std::vector<NumT> got = to_host(d, want.size());
  for (size_t r = 0; r < got.size(); ++r)
    if (static_cast<int64_t>(got[r]) != want[r]) {
      std::fprintf(stderr, "cub_bench: %s of run %zu: got %lld want %lld\n", what, r,
                   static_cast<long long>(got[r]), static_cast<long long>(want[r]));
      return false;
    }
  return true;
}

template <class T, class NumT>
static Outcome bench_unique(int64_t n, int reps, uint64_t mean_len, cudaStream_t s) {
  DevBuf<T> keys(n), out(n);
  DevBuf<NumT> num(1);
  make_run_keys<T, NumT>(keys.p, n, mean_len, s);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceSelect::Unique(nullptr, bytes, keys.p, out.p, num.p, static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceSelect::Unique(tmp.p, tmp.bytes, keys.p, out.p, num.p, static_cast<NumT>(n), s);
  });
  CK(cudaStreamSynchronize(s));
  const std::vector<T> keys_h = to_host(keys.p, static_cast<size_t>(n));
  const HostRuns runs = host_runs(keys_h);
  const bool ok = check_count(num.p, runs.start.size(), "number of runs") &&
                  check_run_keys(out.p, keys_h, runs);
  o.check = ok ? "ok" : "FAIL";
  return o;
}

// The first key of each run with its value: the keys of unique, the values
// of reduce-by-key (rbk_value), both of type T.
template <class T, class NumT>
static Outcome bench_unique_by_key(int64_t n, int reps, uint64_t mean_len, cudaStream_t s) {
  if constexpr (UniqueByKeyTakes<T, int>::value && !UniqueByKeyTakes<T, NumT>::value)
    unsupported_count("DeviceSelect::UniqueByKey");
  DevBuf<T> keys(n), values(n), keys_out(n), values_out(n);
  DevBuf<NumT> num(1);
  make_run_keys<T, NumT>(keys.p, n, mean_len, s);
  rbk_values_kernel<T><<<grid_for(n), 256, 0, s>>>(values.p, n);
  CK(cudaGetLastError());
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceSelect::UniqueByKey(nullptr, bytes, keys.p, values.p, keys_out.p, values_out.p, num.p,
                                    static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceSelect::UniqueByKey(tmp.p, tmp.bytes, keys.p, values.p, keys_out.p, values_out.p,
                                          num.p, static_cast<NumT>(n), s);
  });
  CK(cudaStreamSynchronize(s));
  const std::vector<T> keys_h = to_host(keys.p, static_cast<size_t>(n));
  const HostRuns runs = host_runs(keys_h);
  bool ok = check_count(num.p, runs.start.size(), "number of runs") &&
            check_run_keys(keys_out.p, keys_h, runs);
  if (ok) {
    // Each run's value: the value at its first position, as generated.
    const std::vector<T> values_h = to_host(values.p, static_cast<size_t>(n));
    const std::vector<T> got = to_host(values_out.p, runs.start.size());
    for (size_t r = 0; r < got.size() && ok; ++r)
      if (bits_of(got[r]) != bits_of(values_h[static_cast<size_t>(runs.start[r])])) {
        std::fprintf(stderr, "cub_bench: value of run %zu is not its first item's\n", r);
        ok = false;
      }
  }
  o.check = ok ? "ok" : "FAIL";
  return o;
}

// Run lengths come out in NumT, the type of the item count.
template <class T, class NumT>
static Outcome bench_rle(int64_t n, int reps, uint64_t mean_len, cudaStream_t s) {
  if constexpr (EncodeTakes<T, int>::value && !EncodeTakes<T, NumT>::value)
    unsupported_count("DeviceRunLengthEncode::Encode");
  DevBuf<T> keys(n), unique(n);
  DevBuf<NumT> lengths(n), num(1);
  make_run_keys<T, NumT>(keys.p, n, mean_len, s);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceRunLengthEncode::Encode(nullptr, bytes, keys.p, unique.p, lengths.p, num.p,
                                        static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceRunLengthEncode::Encode(tmp.p, tmp.bytes, keys.p, unique.p, lengths.p, num.p,
                                              static_cast<NumT>(n), s);
  });
  CK(cudaStreamSynchronize(s));
  const std::vector<T> keys_h = to_host(keys.p, static_cast<size_t>(n));
  const HostRuns runs = host_runs(keys_h);
  const bool ok = check_count(num.p, runs.start.size(), "number of runs") &&
                  check_run_keys(unique.p, keys_h, runs) &&
                  check_run_numbers(lengths.p, runs.len, "length");
  o.check = ok ? "ok" : "FAIL";
  return o;
}

// Offset and length of each run longer than one item.
template <class T, class NumT>
static Outcome bench_nontrivial_runs(int64_t n, int reps, uint64_t mean_len, cudaStream_t s) {
  if constexpr (NonTrivialRunsTakes<T, int>::value && !NonTrivialRunsTakes<T, NumT>::value)
    unsupported_count("DeviceRunLengthEncode::NonTrivialRuns");
  DevBuf<T> keys(n);
  DevBuf<NumT> offsets(n / 2 + 1), lengths(n / 2 + 1), num(1);  // at most n/2 such runs
  make_run_keys<T, NumT>(keys.p, n, mean_len, s);
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceRunLengthEncode::NonTrivialRuns(nullptr, bytes, keys.p, offsets.p, lengths.p, num.p,
                                                static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceRunLengthEncode::NonTrivialRuns(tmp.p, tmp.bytes, keys.p, offsets.p, lengths.p,
                                                      num.p, static_cast<NumT>(n), s);
  });
  CK(cudaStreamSynchronize(s));
  HostRuns runs = host_runs(to_host(keys.p, static_cast<size_t>(n)));
  HostRuns long_runs;
  for (size_t r = 0; r < runs.len.size(); ++r)
    if (runs.len[r] > 1) {
      long_runs.start.push_back(runs.start[r]);
      long_runs.len.push_back(runs.len[r]);
    }
  const bool ok = check_count(num.p, long_runs.start.size(), "number of non-trivial runs") &&
                  check_run_numbers(offsets.p, long_runs.start, "offset") &&
                  check_run_numbers(lengths.p, long_runs.len, "length");
  o.check = ok ? "ok" : "FAIL";
  return o;
}

// Sum of the values of each run of equal keys.
template <class T, class NumT>
static Outcome bench_reduce_by_key(int64_t n, int reps, uint64_t mean_len, cudaStream_t s) {
  DevBuf<T> keys(n), unique(n), values(n), sums(n);
  DevBuf<NumT> num(1);
  make_run_keys<T, NumT>(keys.p, n, mean_len, s);
  rbk_values_kernel<T><<<grid_for(n), 256, 0, s>>>(values.p, n);
  CK(cudaGetLastError());
  const auto plus = cuda::std::plus<>{};
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceReduce::ReduceByKey(nullptr, bytes, keys.p, unique.p, values.p, sums.p, num.p, plus,
                                    static_cast<NumT>(n), s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceReduce::ReduceByKey(tmp.p, tmp.bytes, keys.p, unique.p, values.p, sums.p, num.p,
                                          plus, static_cast<NumT>(n), s);
  });
  CK(cudaStreamSynchronize(s));
  const std::vector<T> keys_h = to_host(keys.p, static_cast<size_t>(n));
  const HostRuns runs = host_runs(keys_h);
  bool ok = check_count(num.p, runs.start.size(), "number of runs") &&
            check_run_keys(unique.p, keys_h, runs);
  if (ok) {
    const std::vector<T> got = to_host(sums.p, runs.start.size());
    for (size_t r = 0; r < got.size() && ok; ++r) {
      acc_t<T> want = 0;
      for (int64_t i = runs.start[r]; i < runs.start[r] + runs.len[r]; ++i)
        want = static_cast<acc_t<T>>(want + acc_of(rbk_value<T>(static_cast<uint64_t>(i))));
      if (!close_enough(got[r], want, reduce_tol<T>(), static_cast<double>(want))) {
        std::fprintf(stderr, "cub_bench: sum of run %zu: got %.17g want %.17g\n", r,
                     static_cast<double>(got[r]), static_cast<double>(want));
        ok = false;
      }
    }
  }
  o.check = ok ? "ok" : "FAIL";
  return o;
}

// ---------------------------------------------------------------------------
// Segmented reduction and SpMV: the geometry (segment starts; rows and
// columns) is generated on the host with integer arithmetic only, from
// rand_bits; mgpu-cli/src/bench/segreduce.rs generates the same. The result
// line's geom= is a checksum of it (FNV-1a over 64-bit words) that `mgpu bench`
// compares with its own, so both sides always measure the same geometry.
// Offsets and column indices are int32_t (CUB's usual offsets, cuSPARSE's
// CUSPARSE_INDEX_32I), so n stays below 2^31.

// cub_bench geometry begin (host-only C++; peers/README.md checks it with g++)
enum : uint64_t { kStreamLengths = 7, kStreamCols = 8, kStreamMatrix = 9, kStreamX = 10 };

struct GeomHash {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(uint64_t w) {
    h ^= w;
    h *= 0x100000001b3ull;
  }
  std::string hex() const {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
  }
};

// Parses "<word>-<number>" (number >= 1) or "<word>".
static bool parse_spec_word(const std::string& s, const char* word, uint64_t& arg) {
  const std::string w = word;
  if (s.size() <= w.size() + 1 || s.compare(0, w.size(), w) != 0 || s[w.size()] != '-') return false;
  const std::string num = s.substr(w.size() + 1);
  if (num.empty() || num.size() > 12) return false;
  uint64_t v = 0;
  for (char c : num) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v == 0) return false;
  arg = v;
  return true;
}

// Segment-length distributions (the param of segreduce):
//   fixed-L    every segment L long (the last one what is left)
//   uniform-M  lengths uniform in 1..2M-1 (mean M)
//   powerlaw   P(length > L) ~ 1/L: k = trailing zeros of r (at most 24),
//              length uniform in 1..2^k (mean about 7, a few of millions)
//   one        one segment
//   empty-M    half the segments empty, the others uniform in 1..2M-1
// r = rand_bits(kStreamLengths, i) for segment i.
struct SegSpec {
  enum Kind { Fixed, Uniform, PowerLaw, One, Empty } kind = Fixed;
  uint64_t arg = 0;
};

static bool parse_seg_spec(const std::string& s, SegSpec& d) {
  if (s == "powerlaw") {
    d.kind = SegSpec::PowerLaw;
    return true;
  }
  if (s == "one") {
    d.kind = SegSpec::One;
    return true;
  }
  if (parse_spec_word(s, "fixed", d.arg)) {
    d.kind = SegSpec::Fixed;
    return true;
  }
  if (parse_spec_word(s, "uniform", d.arg)) {
    d.kind = SegSpec::Uniform;
    return true;
  }
  if (parse_spec_word(s, "empty", d.arg)) {
    d.kind = SegSpec::Empty;
    return true;
  }
  return false;
}

static uint64_t seg_length(const SegSpec& d, uint64_t i, uint64_t n) {
  switch (d.kind) {
    case SegSpec::Fixed: return d.arg;
    case SegSpec::Uniform: return 1 + rand_bits(kStreamLengths, i) % (2 * d.arg - 1);
    case SegSpec::PowerLaw: {
      const uint64_t r = rand_bits(kStreamLengths, i);
      const int k = __builtin_ctzll(r | (1ull << 24));
      return 1 + ((r >> 32) & ((1ull << k) - 1));
    }
    case SegSpec::One: return n;
    case SegSpec::Empty: {
      const uint64_t r = rand_bits(kStreamLengths, i);
      return (r & 1) ? 0 : 1 + (r >> 1) % (2 * d.arg - 1);
    }
  }
  return n;
}

// Segment starts over n values, then n: num_segments + 1 entries.
static std::vector<int32_t> make_segments(int64_t n, const SegSpec& d, GeomHash& g) {
  std::vector<int32_t> off;
  const uint64_t un = static_cast<uint64_t>(n);
  uint64_t pos = 0, i = 0;
  while (pos < un) {
    off.push_back(static_cast<int32_t>(pos));
    const uint64_t len = seg_length(d, i++, un);
    pos = len >= un - pos ? un : pos + len;
  }
  off.push_back(static_cast<int32_t>(un));
  g.add(off.size() - 1);
  g.add(un);
  for (int32_t o : off) g.add(static_cast<uint64_t>(static_cast<uint32_t>(o)));
  return off;
}

// Matrices (the param of spmv), square, about `target` nonzeros:
//   random-M   target/M rows of rand_bits(kStreamLengths, i) % (2M+1) nonzeros
//   powerlaw   rows of 1 + ((r >> 32) & (2^k - 1)) nonzeros, k = 2 + trailing
//              zeros of r (at most 22), until target (the last row clamped)
//   stencil2d  the 5-point Poisson stencil on a k x k grid, 5k^2 <= target
//   stencil3d  the 7-point Poisson stencil on a k x k x k grid, 7k^3 <= target
// Columns of random and powerlaw rows are sorted and random: the j-th of a row
// of L starting at nonzero s is (j * ncols + rand_bits(kStreamCols, s + j) %
// ncols) / L. Values: value_from_bits(rand_bits(kStreamMatrix, k)) for
// nonzero k; the stencils 4 (2-D) or 6 (3-D) on the diagonal, -1 elsewhere.
struct MatSpec {
  enum Kind { Random, PowerLaw, Stencil2d, Stencil3d } kind = Random;
  uint64_t arg = 0;
};

static bool parse_mat_spec(const std::string& s, MatSpec& m) {
  if (s == "powerlaw") {
    m.kind = MatSpec::PowerLaw;
    return true;
  }
  if (s == "stencil2d") {
    m.kind = MatSpec::Stencil2d;
    return true;
  }
  if (s == "stencil3d") {
    m.kind = MatSpec::Stencil3d;
    return true;
  }
  if (parse_spec_word(s, "random", m.arg)) {
    m.kind = MatSpec::Random;
    return true;
  }
  return false;
}

struct HostCsr {
  int64_t rows = 0, ncols = 0;
  std::vector<int32_t> offsets;  // rows + 1
  std::vector<int32_t> cols;
  double diag = 0;  // the stencils' diagonal value; 0: random values
};

static void stratified_cols(HostCsr& m) {
  const uint64_t nc = static_cast<uint64_t>(m.ncols);
  m.cols.clear();
  m.cols.reserve(static_cast<size_t>(m.offsets.back()));
  for (int64_t i = 0; i < m.rows; ++i) {
    const uint64_t start = static_cast<uint64_t>(m.offsets[i]);
    const uint64_t len = static_cast<uint64_t>(m.offsets[i + 1]) - start;
    for (uint64_t j = 0; j < len; ++j) {
      const uint64_t u = rand_bits(kStreamCols, start + j) % nc;
      m.cols.push_back(static_cast<int32_t>((j * nc + u) / len));
    }
  }
}

[[maybe_unused]] static HostCsr make_matrix(int64_t target_s, const MatSpec& spec, GeomHash& g) {
  const uint64_t target = static_cast<uint64_t>(target_s);
  HostCsr m;
  switch (spec.kind) {
    case MatSpec::Random: {
      const uint64_t rows = std::max<uint64_t>(target / spec.arg, 1);
      m.offsets.reserve(rows + 1);
      uint64_t nnz = 0;
      for (uint64_t i = 0; i < rows; ++i) {
        m.offsets.push_back(static_cast<int32_t>(nnz));
        nnz += rand_bits(kStreamLengths, i) % (2 * spec.arg + 1);
      }
      m.offsets.push_back(static_cast<int32_t>(nnz));
      m.rows = m.ncols = static_cast<int64_t>(rows);
      stratified_cols(m);
      break;
    }
    case MatSpec::PowerLaw: {
      uint64_t nnz = 0, i = 0;
      while (nnz < target) {
        m.offsets.push_back(static_cast<int32_t>(nnz));
        const uint64_t r = rand_bits(kStreamLengths, i++);
        const int k = __builtin_ctzll(r | (1ull << 20)) + 2;
        const uint64_t len = 1 + ((r >> 32) & ((1ull << k) - 1));
        nnz = std::min(nnz + len, target);
      }
      m.offsets.push_back(static_cast<int32_t>(nnz));
      m.rows = m.ncols = static_cast<int64_t>(m.offsets.size()) - 1;
      stratified_cols(m);
      break;
    }
    case MatSpec::Stencil2d: {
      uint64_t k = 1;
      while (5 * (k + 1) * (k + 1) <= target) ++k;
      k = std::max<uint64_t>(k, 2);
      m.rows = m.ncols = static_cast<int64_t>(k * k);
      m.diag = 4;
      m.offsets.reserve(k * k + 1);
      m.cols.reserve(5 * k * k);
      for (uint64_t a = 0; a < k; ++a)
        for (uint64_t b = 0; b < k; ++b) {
          const uint64_t r = a * k + b;
          m.offsets.push_back(static_cast<int32_t>(m.cols.size()));
          if (a > 0) m.cols.push_back(static_cast<int32_t>(r - k));
          if (b > 0) m.cols.push_back(static_cast<int32_t>(r - 1));
          m.cols.push_back(static_cast<int32_t>(r));
          if (b + 1 < k) m.cols.push_back(static_cast<int32_t>(r + 1));
          if (a + 1 < k) m.cols.push_back(static_cast<int32_t>(r + k));
        }
      m.offsets.push_back(static_cast<int32_t>(m.cols.size()));
      break;
    }
    case MatSpec::Stencil3d: {
      uint64_t k = 1;
      while (7 * (k + 1) * (k + 1) * (k + 1) <= target) ++k;
      k = std::max<uint64_t>(k, 2);
      m.rows = m.ncols = static_cast<int64_t>(k * k * k);
      m.diag = 6;
      m.offsets.reserve(k * k * k + 1);
      m.cols.reserve(7 * k * k * k);
      for (uint64_t a = 0; a < k; ++a)
        for (uint64_t b = 0; b < k; ++b)
          for (uint64_t c = 0; c < k; ++c) {
            const uint64_t r = (a * k + b) * k + c;
            m.offsets.push_back(static_cast<int32_t>(m.cols.size()));
            if (a > 0) m.cols.push_back(static_cast<int32_t>(r - k * k));
            if (b > 0) m.cols.push_back(static_cast<int32_t>(r - k));
            if (c > 0) m.cols.push_back(static_cast<int32_t>(r - 1));
            m.cols.push_back(static_cast<int32_t>(r));
            if (c + 1 < k) m.cols.push_back(static_cast<int32_t>(r + 1));
            if (b + 1 < k) m.cols.push_back(static_cast<int32_t>(r + k));
            if (a + 1 < k) m.cols.push_back(static_cast<int32_t>(r + k * k));
          }
      m.offsets.push_back(static_cast<int32_t>(m.cols.size()));
      break;
    }
  }
  g.add(static_cast<uint64_t>(m.rows));
  g.add(static_cast<uint64_t>(m.ncols));
  g.add(m.cols.size());
  for (int32_t o : m.offsets) g.add(static_cast<uint64_t>(static_cast<uint32_t>(o)));
  for (int32_t c : m.cols) g.add(static_cast<uint64_t>(static_cast<uint32_t>(c)));
  return m;
}

// The matrix values and the vector.
template <class T>
static std::vector<T> matrix_values(const HostCsr& m) {
  std::vector<T> v(m.cols.size());
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t k = m.offsets[i]; k < m.offsets[i + 1]; ++k)
      v[static_cast<size_t>(k)] =
        m.diag == 0 ? value_from_bits<T>(rand_bits(kStreamMatrix, static_cast<uint64_t>(k)))
                    : static_cast<T>(m.cols[static_cast<size_t>(k)] == i ? m.diag : -1.0);
  return v;
}

template <class T>
static std::vector<T> spmv_vector(int64_t ncols) {
  std::vector<T> x(static_cast<size_t>(ncols));
  for (int64_t j = 0; j < ncols; ++j) x[static_cast<size_t>(j)] = value_from_bits<T>(rand_bits(kStreamX, static_cast<uint64_t>(j)));
  return x;
}
// cub_bench geometry end

// Sum of each segment of the values v_i = rand_bits(2, i) & 0xff (those of
// reduce-by-key), segments from `spec`; CUB reads begin offsets off[0..segs)
// and end offsets off[1..segs].
template <class T>
static Outcome bench_segreduce(int64_t n, int reps, const std::string& spec_s, cudaStream_t s) {
  SegSpec spec;
  if (!parse_seg_spec(spec_s, spec)) {
    std::fprintf(stderr, "cub_bench: bad segment distribution '%s'\n", spec_s.c_str());
    std::exit(1);
  }
  if (n > INT_MAX) {
    std::fprintf(stderr, "cub_bench: segreduce takes int offsets; n > INT_MAX is unsupported\n");
    std::printf("unsupported\n");
    std::exit(3);
  }
  GeomHash g;
  const std::vector<int32_t> off = make_segments(n, spec, g);
  const int64_t segs = static_cast<int64_t>(off.size()) - 1;
  DevBuf<T> in(static_cast<size_t>(n)), out(static_cast<size_t>(segs));
  DevBuf<int32_t> d_off(off.size());
  CK(cudaMemcpyAsync(d_off.p, off.data(), off.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s));
  rbk_values_kernel<T><<<grid_for(n), 256, 0, s>>>(in.p, n);
  CK(cudaGetLastError());
  const int num_segments = static_cast<int>(segs);
  const int32_t* begin = d_off.p;
  const int32_t* end = d_off.p + 1;
  TempStorage tmp;
  size_t bytes = 0;
  CK(cub::DeviceSegmentedReduce::Sum(nullptr, bytes, in.p, out.p, num_segments, begin, end, s));
  tmp.allocate(bytes);
  Outcome o;
  o.t = time_runs(s, reps, [] {}, [&] {
    return cub::DeviceSegmentedReduce::Sum(tmp.p, tmp.bytes, in.p, out.p, num_segments, begin, end, s);
  });
  CK(cudaStreamSynchronize(s));
  const std::vector<T> got = to_host(out.p, static_cast<size_t>(segs));
  bool ok = true;
  for (int64_t j = 0; j < segs && ok; ++j) {
    acc_t<T> want = 0;
    for (int64_t i = off[static_cast<size_t>(j)]; i < off[static_cast<size_t>(j) + 1]; ++i)
      want = static_cast<acc_t<T>>(want + acc_of(rbk_value<T>(static_cast<uint64_t>(i))));
    if (!close_enough(got[static_cast<size_t>(j)], want, reduce_tol<T>(), static_cast<double>(want))) {
      std::fprintf(stderr, "cub_bench: sum of segment %lld: got %.17g want %.17g\n",
                   static_cast<long long>(j), static_cast<double>(got[static_cast<size_t>(j)]),
                   static_cast<double>(want));
      ok = false;
    }
  }
  o.check = ok ? "ok" : "FAIL";
  o.extra = " geom=" + g.hex();
  return o;
}

// Every segment of a segmented sort's output against the input: keys in
// order; with values (input positions), each value a position of its own
// segment, seen once, whose input key is the key beside it, and equal keys in
// input order (stable); keys alone: each segment holds the multiset of its
// input keys (fingerprints).
template <class T>
static bool check_segsorted(const std::vector<int32_t>& off, const T* d_keys, const uint32_t* d_vals) {
  const size_t n = static_cast<size_t>(off.back());
  const std::vector<T> keys = to_host(d_keys, n);
  std::vector<uint32_t> vals;
  std::vector<char> seen;
  if (d_vals) {
    vals = to_host(d_vals, n);
    seen.assign(n, 0);
  }
  for (size_t j = 0; j + 1 < off.size(); ++j) {
    const size_t b = static_cast<size_t>(off[j]), e = static_cast<size_t>(off[j + 1]);
    uint64_t want = 0, got = 0;
    for (size_t i = b; i < e; ++i) {
      const T k = keys[i];
      if (i > b && k < keys[i - 1]) {
        std::fprintf(stderr, "cub_bench: segment %zu (%zu..%zu) not sorted at index %zu\n", j, b, e, i);
        return false;
      }
      if (d_vals) {
        const size_t v = vals[i];
        if (v < b || v >= e || seen[v]) {
          std::fprintf(stderr, "cub_bench: segment %zu (%zu..%zu): value %zu at index %zu is not a new position of it\n",
                       j, b, e, v, i);
          return false;
        }
        seen[v] = 1;
        if (bits_of(k) != bits_of(gen<T>(kStreamInput, static_cast<uint64_t>(v)))) {
          std::fprintf(stderr, "cub_bench: value at index %zu does not belong to its key\n", i);
          return false;
        }
        if (i > b && !(keys[i - 1] < k) && vals[i - 1] > vals[i]) {
          std::fprintf(stderr, "cub_bench: segment %zu: equal keys out of input order at index %zu\n", j, i);
          return false;
        }
      } else {
        want = fingerprint_add(want, gen<T>(kStreamInput, static_cast<uint64_t>(i)));
        got = fingerprint_add(got, k);
      }
    }
    if (want != got) {
      std::fprintf(stderr, "cub_bench: segment %zu (%zu..%zu): keys are not a permutation of its input\n", j, b,
                   e);
      return false;
    }
  }
  return true;
}

// Segmented sorts: the keys of the sorts (gen<T>(kStreamInput, i)) sorted
// within each segment of `spec` (segreduce's geometry), out of place (the input
// is left as it was, so no restore between runs), by DeviceSegmentedSort's
// StableSortKeys / StableSortPairs or DeviceSegmentedRadixSort's SortKeys /
// SortPairs (all bits); pairs carry u32 values, each key's input position (as
// radix-pairs-u32). CUB reads begin offsets off[0..segs) and end offsets
// off[1..segs], int32_t. i32 and f32 keys only (exit 3 for the others): each
// type instantiates DeviceSegmentedSort's many kernels, which would lengthen
// the harness's build for rows `mgpu bench segsort` does not compare.
template <class T>
static Outcome bench_segsort(int64_t n, int reps, const std::string& spec_s, cudaStream_t s, bool radix,
                             bool pairs) {
  if constexpr (!std::is_same_v<T, int32_t> && !std::is_same_v<T, float>) {
    (void)n, (void)reps, (void)spec_s, (void)s, (void)radix, (void)pairs;
    std::fprintf(stderr, "cub_bench: the segmented sorts take i32 or f32 keys\n");
    std::printf("unsupported\n");
    std::exit(3);
  } else {
    SegSpec spec;
    if (!parse_seg_spec(spec_s, spec)) {
      std::fprintf(stderr, "cub_bench: bad segment distribution '%s'\n", spec_s.c_str());
      std::exit(1);
    }
    if (n > INT_MAX) {
      std::fprintf(stderr, "cub_bench: segmented sorts take int offsets; n > INT_MAX is unsupported\n");
      std::printf("unsupported\n");
      std::exit(3);
    }
    GeomHash g;
    const std::vector<int32_t> off = make_segments(n, spec, g);
    const int64_t segs = static_cast<int64_t>(off.size()) - 1;
    DevBuf<T> keys_in(static_cast<size_t>(n)), keys_out(static_cast<size_t>(n));
    DevBuf<uint32_t> vals_in(pairs ? static_cast<size_t>(n) : 0), vals_out(pairs ? static_cast<size_t>(n) : 0);
    DevBuf<int32_t> d_off(off.size());
    CK(cudaMemcpyAsync(d_off.p, off.data(), off.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s));
    fill(keys_in.p, n, kStreamInput, s);
    if (pairs) {
      iota_kernel<<<grid_for(n), 256, 0, s>>>(vals_in.p, n);
      CK(cudaGetLastError());
    }
    const int num_items = static_cast<int>(n);
    const int num_segments = static_cast<int>(segs);
    const int32_t* begin = d_off.p;
    const int32_t* end = d_off.p + 1;
    constexpr int end_bit = static_cast<int>(sizeof(T) * 8);
    const auto sort = [&](void* temp, size_t& bytes) -> cudaError_t {
      if (radix) {
        if (pairs)
          return cub::DeviceSegmentedRadixSort::SortPairs(temp, bytes, keys_in.p, keys_out.p, vals_in.p,
                                                          vals_out.p, num_items, num_segments, begin, end, 0,
                                                          end_bit, s);
        return cub::DeviceSegmentedRadixSort::SortKeys(temp, bytes, keys_in.p, keys_out.p, num_items,
                                                       num_segments, begin, end, 0, end_bit, s);
      }
      if (pairs)
        return cub::DeviceSegmentedSort::StableSortPairs(temp, bytes, keys_in.p, keys_out.p, vals_in.p,
                                                         vals_out.p, num_items, num_segments, begin, end, s);
      return cub::DeviceSegmentedSort::StableSortKeys(temp, bytes, keys_in.p, keys_out.p, num_items,
                                                      num_segments, begin, end, s);
    };
    TempStorage tmp;
    size_t bytes = 0;
    CK(sort(nullptr, bytes));
    tmp.allocate(bytes);
    Outcome o;
    o.t = time_runs(s, reps, [] {}, [&] {
      size_t b = tmp.bytes;
      return sort(tmp.p, b);
    });
    CK(cudaStreamSynchronize(s));
    o.check = check_segsorted<T>(off, keys_out.p, pairs ? vals_out.p : nullptr) ? "ok" : "FAIL";
    o.extra = " geom=" + g.hex();
    return o;
  }
}

#ifndef CUB_BENCH_NO_CUSPARSE
#define CKS(call)                                                                        \
  do {                                                                                   \
    cusparseStatus_t cks_st_ = (call);                                                   \
    if (cks_st_ != CUSPARSE_STATUS_SUCCESS) {                                            \
      std::fprintf(stderr, "cub_bench: cuSPARSE error %d (%s) at %s:%d in %s\n",         \
                   static_cast<int>(cks_st_), cusparseGetErrorString(cks_st_), __FILE__, \
                   __LINE__, #call);                                                     \
      std::exit(2);                                                                      \
    }                                                                                    \
  } while (0)
#endif

// y = A * x with cuSPARSE (CSR, CUSPARSE_SPMV_CSR_ALG1, 32-bit indices), the
// matrix from `spec` with about n nonzeros; the work buffer is allocated
// outside the timing. f32 and f64 only.
template <class T>
static Outcome bench_spmv(int64_t n, int reps, const std::string& spec_s, cudaStream_t s) {
#ifdef CUB_BENCH_NO_CUSPARSE
  (void)n, (void)reps, (void)spec_s, (void)s;
  std::fprintf(stderr, "cub_bench: built without cuSPARSE\n");
  std::printf("unsupported\n");
  std::exit(3);
#else
  if constexpr (!std::is_floating_point_v<T>) {
    (void)n, (void)reps, (void)spec_s, (void)s;
    std::fprintf(stderr, "cub_bench: spmv takes f32 or f64\n");
    std::printf("unsupported\n");
    std::exit(3);
  } else {
    MatSpec spec;
    if (!parse_mat_spec(spec_s, spec)) {
      std::fprintf(stderr, "cub_bench: bad matrix '%s'\n", spec_s.c_str());
      std::exit(1);
    }
    if (n > INT_MAX) {
      std::fprintf(stderr, "cub_bench: spmv takes 32-bit indices; n > INT_MAX is unsupported\n");
      std::printf("unsupported\n");
      std::exit(3);
    }
    GeomHash g;
    const HostCsr m = make_matrix(n, spec, g);
    const size_t nnz = m.cols.size();
    const std::vector<T> vals = matrix_values<T>(m);
    const std::vector<T> x = spmv_vector<T>(m.ncols);
    DevBuf<int32_t> d_off(m.offsets.size()), d_cols(nnz);
    DevBuf<T> d_vals(nnz), d_x(static_cast<size_t>(m.ncols)), d_y(static_cast<size_t>(m.rows));
    CK(cudaMemcpyAsync(d_off.p, m.offsets.data(), m.offsets.size() * sizeof(int32_t),
                       cudaMemcpyHostToDevice, s));
    if (nnz) {
      CK(cudaMemcpyAsync(d_cols.p, m.cols.data(), nnz * sizeof(int32_t), cudaMemcpyHostToDevice, s));
      CK(cudaMemcpyAsync(d_vals.p, vals.data(), nnz * sizeof(T), cudaMemcpyHostToDevice, s));
    }
    CK(cudaMemcpyAsync(d_x.p, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));

    const cudaDataType dtype = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
    cusparseHandle_t handle = nullptr;
    CKS(cusparseCreate(&handle));
    CKS(cusparseSetStream(handle, s));
    cusparseSpMatDescr_t mat = nullptr;
    CKS(cusparseCreateCsr(&mat, m.rows, m.ncols, static_cast<int64_t>(nnz), d_off.p, d_cols.p,
                          d_vals.p, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                          dtype));
    cusparseDnVecDescr_t vec_x = nullptr, vec_y = nullptr;
    CKS(cusparseCreateDnVec(&vec_x, m.ncols, d_x.p, dtype));
    CKS(cusparseCreateDnVec(&vec_y, m.rows, d_y.p, dtype));
    const T alpha = 1, beta = 0;
    const cusparseSpMVAlg_t alg = CUSPARSE_SPMV_CSR_ALG1;
    size_t bytes = 0;
    CKS(cusparseSpMV_bufferSize(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vec_x, &beta,
                                vec_y, dtype, alg, &bytes));
    TempStorage work;
    work.allocate(bytes);
    Outcome o;
    o.t = time_runs(s, reps, [] {}, [&] {
      CKS(cusparseSpMV(handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, vec_x, &beta, vec_y,
                       dtype, alg, work.p));
      return cudaGetLastError();
    });
    CK(cudaStreamSynchronize(s));
    const std::vector<T> y = to_host(d_y.p, static_cast<size_t>(m.rows));
    CKS(cusparseDestroyDnVec(vec_x));
    CKS(cusparseDestroyDnVec(vec_y));
    CKS(cusparseDestroySpMat(mat));
    CKS(cusparseDestroy(handle));

    // Each row against the product in double, within a tolerance relative to
    // the sum of its terms' magnitudes.
    const double tol = std::is_same_v<T, float> ? 1e-4 : 1e-10;
    bool ok = true;
    for (int64_t i = 0; i < m.rows && ok; ++i) {
      double want = 0, scale = 0;
      for (int64_t k = m.offsets[static_cast<size_t>(i)]; k < m.offsets[static_cast<size_t>(i) + 1]; ++k) {
        const double term = static_cast<double>(vals[static_cast<size_t>(k)]) *
                            static_cast<double>(x[static_cast<size_t>(m.cols[static_cast<size_t>(k)])]);
        want += term;
        scale += std::fabs(term);
      }
      const double got = static_cast<double>(y[static_cast<size_t>(i)]);
      if (!(std::fabs(got - want) <= tol * std::max(scale, 1e-30))) {
        std::fprintf(stderr, "cub_bench: spmv row %lld: got %.17g want %.17g\n", static_cast<long long>(i),
                     got, want);
        ok = false;
      }
    }
    o.check = ok ? "ok" : "FAIL";
    o.extra = " geom=" + g.hex();
    return o;
  }
#endif
}

// ---------------------------------------------------------------------------
// Dispatch

enum class Algo {
  Reduce,
  TransformReduce,
  Scan,
  ScanInclusive,
  Memcpy,
  SortKeys,
  SortPairs,
  RadixKeys,
  RadixPairs,
  RadixPairsU32,
  Merge,
  SelectIf,
  SelectFlagged,
  PartitionIf,
  SelectIfInplace,
  Unique,
  UniqueByKey,
  Rle,
  NontrivialRuns,
  ReduceByKey,
  SegReduce,
  Spmv,
  SegSortKeys,
  SegSortPairs,
  SegRadixKeys,
  SegRadixPairs
};

// What the optional param means for an algorithm.
enum class Param { None, Percent, RunLength, Spec };

static Param param_of(Algo a) {
  switch (a) {
    case Algo::SelectIf:
    case Algo::SelectFlagged:
    case Algo::PartitionIf:
    case Algo::SelectIfInplace: return Param::Percent;
    case Algo::Unique:
    case Algo::UniqueByKey:
    case Algo::Rle:
    case Algo::NontrivialRuns:
    case Algo::ReduceByKey: return Param::RunLength;
    case Algo::SegReduce:
    case Algo::Spmv:
    case Algo::SegSortKeys:
    case Algo::SegSortPairs:
    case Algo::SegRadixKeys:
    case Algo::SegRadixPairs: return Param::Spec;
    default: return Param::None;
  }
}

// The selection benchmark `bench` (called with the predicate) with the
// predicate of the param: SelectPct, or SelectEven (`even`) for integer types.
template <class T, class Bench>
static Outcome with_predicate(bool even, uint64_t pct, Bench bench) {
  if (!even) return bench(SelectPct<T>{pct});
  if constexpr (std::is_integral_v<T>) {
    return bench(SelectEven<T>{});
  } else {
    std::fprintf(stderr, "cub_bench: param even takes an integer type\n");
    std::printf("unsupported\n");
    std::exit(3);
  }
}

// `even`: the selection algorithms' param was the word even (param unused).
template <class T, class NumT>
static Outcome run_algo(Algo a, int64_t n, int reps, uint64_t param, bool even, const std::string& spec,
                        cudaStream_t s) {
  switch (a) {
    case Algo::Reduce: return bench_reduce<T, NumT>(n, reps, s);
    case Algo::TransformReduce: return bench_transform_reduce<T, NumT>(n, reps, s);
    case Algo::Scan: return bench_scan<T, NumT>(n, reps, s, false);
    case Algo::ScanInclusive: return bench_scan<T, NumT>(n, reps, s, true);
    case Algo::Memcpy: return bench_memcpy<T>(n, reps, s);
    case Algo::SortKeys: return bench_merge_sort<T, NumT>(n, reps, s, false);
    case Algo::SortPairs: return bench_merge_sort<T, NumT>(n, reps, s, true);
    case Algo::RadixKeys: return bench_radix_sort<T, NumT>(n, reps, s, false);
    case Algo::RadixPairs: return bench_radix_sort<T, NumT>(n, reps, s, true);
    case Algo::RadixPairsU32: return bench_radix_sort_u32<T, NumT>(n, reps, s);
    case Algo::Merge:
#if CUB_BENCH_HAVE_MERGE
      return bench_merge<T>(n, reps, s);
#else
      break;
#endif
    case Algo::SelectIf:
      return with_predicate<T>(even, param,
                               [&](auto pred) { return bench_select_if<T, NumT>(n, reps, pred, s); });
    case Algo::SelectFlagged:
      return with_predicate<T>(
        even, param, [&](auto pred) { return bench_select_flagged<T, NumT>(n, reps, pred, s); });
    case Algo::PartitionIf:
      return with_predicate<T>(
        even, param, [&](auto pred) { return bench_partition_if<T, NumT>(n, reps, pred, s); });
    case Algo::SelectIfInplace:
#if CUB_BENCH_HAVE_SELECT_INPLACE
      return with_predicate<T>(
        even, param, [&](auto pred) { return bench_select_if_inplace<T, NumT>(n, reps, pred, s); });
#else
      break;
#endif
    case Algo::Unique: return bench_unique<T, NumT>(n, reps, param, s);
    case Algo::UniqueByKey: return bench_unique_by_key<T, NumT>(n, reps, param, s);
    case Algo::Rle: return bench_rle<T, NumT>(n, reps, param, s);
    case Algo::NontrivialRuns: return bench_nontrivial_runs<T, NumT>(n, reps, param, s);
    case Algo::ReduceByKey: return bench_reduce_by_key<T, NumT>(n, reps, param, s);
    case Algo::SegReduce: return bench_segreduce<T>(n, reps, spec, s);
    case Algo::Spmv: return bench_spmv<T>(n, reps, spec, s);
    case Algo::SegSortKeys: return bench_segsort<T>(n, reps, spec, s, false, false);
    case Algo::SegSortPairs: return bench_segsort<T>(n, reps, spec, s, false, true);
    case Algo::SegRadixKeys: return bench_segsort<T>(n, reps, spec, s, true, false);
    case Algo::SegRadixPairs: return bench_segsort<T>(n, reps, spec, s, true, true);
  }
  std::printf("unsupported\n");
  std::exit(3);
}

template <class T>
static Outcome run_typed(Algo a, int64_t n, int reps, uint64_t param, bool even, const std::string& spec,
                         cudaStream_t s) {
  if (n <= INT_MAX) return run_algo<T, int>(a, n, reps, param, even, spec, s);
  return run_algo<T, int64_t>(a, n, reps, param, even, spec, s);
}

// u8 and u16 keys: the radix sorts only (exit 3 for the other algorithms).
template <class T, class NumT>
static Outcome run_radix(Algo a, int64_t n, int reps, cudaStream_t s) {
  switch (a) {
    case Algo::RadixKeys: return bench_radix_sort<T, NumT>(n, reps, s, false);
    case Algo::RadixPairs: return bench_radix_sort<T, NumT>(n, reps, s, true);
    case Algo::RadixPairsU32: return bench_radix_sort_u32<T, NumT>(n, reps, s);
    default: break;
  }
  std::printf("unsupported\n");
  std::exit(3);
}

template <class T>
static Outcome run_radix_typed(Algo a, int64_t n, int reps, cudaStream_t s) {
  if (n <= INT_MAX) return run_radix<T, int>(a, n, reps, s);
  return run_radix<T, int64_t>(a, n, reps, s);
}

static bool parse_u64(const char* s, uint64_t& out) {
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || s[0] == '-') return false;
  out = v;
  return true;
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) usage_and_exit();
  const std::string algo_s = argv[1], type_s = argv[2];

  Algo algo;
  if (algo_s == "reduce") algo = Algo::Reduce;
  else if (algo_s == "transform-reduce") algo = Algo::TransformReduce;
  else if (algo_s == "scan") algo = Algo::Scan;
  else if (algo_s == "scan-inclusive") algo = Algo::ScanInclusive;
  else if (algo_s == "memcpy") algo = Algo::Memcpy;
  else if (algo_s == "sort-keys") algo = Algo::SortKeys;
  else if (algo_s == "sort-pairs") algo = Algo::SortPairs;
  else if (algo_s == "radix-keys") algo = Algo::RadixKeys;
  else if (algo_s == "radix-pairs") algo = Algo::RadixPairs;
  else if (algo_s == "radix-pairs-u32") algo = Algo::RadixPairsU32;
  else if (algo_s == "merge") algo = Algo::Merge;
  else if (algo_s == "select-if") algo = Algo::SelectIf;
  else if (algo_s == "select-flagged") algo = Algo::SelectFlagged;
  else if (algo_s == "partition-if") algo = Algo::PartitionIf;
  else if (algo_s == "select-if-inplace") algo = Algo::SelectIfInplace;
  else if (algo_s == "unique") algo = Algo::Unique;
  else if (algo_s == "unique-by-key") algo = Algo::UniqueByKey;
  else if (algo_s == "rle") algo = Algo::Rle;
  else if (algo_s == "nontrivial-runs") algo = Algo::NontrivialRuns;
  else if (algo_s == "reduce-by-key") algo = Algo::ReduceByKey;
  else if (algo_s == "segreduce") algo = Algo::SegReduce;
  else if (algo_s == "spmv") algo = Algo::Spmv;
  else if (algo_s == "segsort-keys") algo = Algo::SegSortKeys;
  else if (algo_s == "segsort-pairs") algo = Algo::SegSortPairs;
  else if (algo_s == "segradix-keys") algo = Algo::SegRadixKeys;
  else if (algo_s == "segradix-pairs") algo = Algo::SegRadixPairs;
  else {
    std::fprintf(stderr, "cub_bench: unknown algo '%s'\n", algo_s.c_str());
    usage_and_exit();
  }

  uint64_t n_u = 0, reps_u = 20;
  if (!parse_u64(argv[3], n_u) || n_u == 0 || n_u > static_cast<uint64_t>(INT64_MAX) / 16) {
    std::fprintf(stderr, "cub_bench: bad element count '%s'\n", argv[3]);
    usage_and_exit();
  }
  if (argc >= 5 && (!parse_u64(argv[4], reps_u) || reps_u == 0 || reps_u > 100000)) {
    std::fprintf(stderr, "cub_bench: bad repetition count '%s'\n", argv[4]);
    usage_and_exit();
  }
  const Param param_kind = param_of(algo);
  uint64_t param = param_kind == Param::Percent ? 50 : param_kind == Param::RunLength ? 500 : 0;
  // The selection algorithms' other predicate: the word even instead of a percentage.
  bool even = false;
  // The Spec algorithms take a segment distribution, but spmv a matrix.
  std::string spec = algo == Algo::Spmv ? "random-32" : param_kind == Param::Spec ? "fixed-500" : "";
  if (param_kind == Param::Spec) {
    if (argc == 6) spec = argv[5];
    SegSpec seg_spec;
    MatSpec mat_spec;
    if (algo == Algo::Spmv ? !parse_mat_spec(spec, mat_spec) : !parse_seg_spec(spec, seg_spec)) {
      std::fprintf(stderr, "cub_bench: bad param '%s' for %s\n", spec.c_str(), algo_s.c_str());
      usage_and_exit();
    }
  } else if (argc == 6 && param_kind == Param::Percent && std::strcmp(argv[5], "even") == 0) {
    even = true;
  } else if (argc == 6 && (!parse_u64(argv[5], param) ||
                           (param_kind == Param::Percent && param > 100) ||
                           (param_kind == Param::RunLength && param == 0))) {
    std::fprintf(stderr, "cub_bench: bad param '%s' for %s\n", argv[5], algo_s.c_str());
    usage_and_exit();
  }
  const int64_t n = static_cast<int64_t>(n_u);
  const int reps = static_cast<int>(reps_u);
  if (algo == Algo::Merge && n < 2) {
    std::fprintf(stderr, "cub_bench: merge needs n >= 2\n");
    usage_and_exit();
  }
#if !CUB_BENCH_HAVE_MERGE
  if (algo == Algo::Merge) {
    std::printf("unsupported\n");
    return 3;
  }
#endif
#if !CUB_BENCH_HAVE_SELECT_INPLACE
  if (algo == Algo::SelectIfInplace) {
    std::printf("unsupported\n");
    return 3;
  }
#endif

  CK(cudaSetDevice(0));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  Outcome o;
  if (type_s == "i32") o = run_typed<int32_t>(algo, n, reps, param, even, spec, s);
  else if (type_s == "i64") o = run_typed<int64_t>(algo, n, reps, param, even, spec, s);
  else if (type_s == "u32") o = run_typed<uint32_t>(algo, n, reps, param, even, spec, s);
  else if (type_s == "u64") o = run_typed<uint64_t>(algo, n, reps, param, even, spec, s);
  else if (type_s == "f32") o = run_typed<float>(algo, n, reps, param, even, spec, s);
  else if (type_s == "f64") o = run_typed<double>(algo, n, reps, param, even, spec, s);
  else if (type_s == "u8") o = run_radix_typed<uint8_t>(algo, n, reps, s);
  else if (type_s == "u16") o = run_radix_typed<uint16_t>(algo, n, reps, s);
  else {
    std::fprintf(stderr, "cub_bench: unknown type '%s'\n", type_s.c_str());
    usage_and_exit();
  }

  CK(cudaStreamDestroy(s));
  // param= only where it means something, so the other lines stay as they were.
  std::string param_field;
  if (param_kind == Param::Spec) param_field = " param=" + spec;
  else if (even) param_field = " param=even";
  else if (param_kind != Param::None) param_field = " param=" + std::to_string(param);
  std::printf("peer=cub algo=%s type=%s n=%lld%s median_ms=%.6f min_ms=%.6f check=%s%s\n", algo_s.c_str(),
              type_s.c_str(), static_cast<long long>(n), param_field.c_str(), o.t.median_ms, o.t.min_ms,
              o.check, o.extra.c_str());
  std::fflush(stdout);
  return 0;
}
