// radix_order.cuh: the order-preserving numbers of the built-in key types, by which the radix
// sort orders them (radix keys `ascending`) and the segmented sort ranks them: integers with the
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
