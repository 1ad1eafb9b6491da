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
// Floats: `x + 0` gives -0.0 the bits of 0.0 (an IEEE sum, which NVRTC neither folds away nor
// flushes: subnormals keep their bits), every NaN becomes one positive NaN, then the sign flip.
// Selects, not branches: a branch here split every key's load from the next. (Masks and integer
// compares took two instructions more a key, twice a pass.)
__device__ __forceinline__ unsigned radix_order(float x) {
  float y = x + 0.0f;
  unsigned b = y != y ? 0x7fffffffu : __float_as_uint(y);
  return b ^ ((unsigned)((int)b >> 31) | 0x80000000u);
}
__device__ __forceinline__ u64 radix_order(double x) {
  double y = x + 0.0;
  u64 b = y != y ? 0x7fffffffffffffffull : (u64)__double_as_longlong(y);
  return b ^ ((u64)((i64)b >> 63) | (1ull << 63));
}
