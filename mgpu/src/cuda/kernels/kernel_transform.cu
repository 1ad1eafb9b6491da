// kernel_transform.cu: writes an input that exists only as a recipe (mapped, or counting) to memory:
// Thrust's transform and sequence. CTA c moves a contiguous range of tiles through shared memory, so
// that both the loads and the stores are whole 16-byte vectors where the pointers allow.

struct TransformStorage {
  __align__(16) T tile[MGPU_NV];
};

extern "C" __global__ void __launch_bounds__(MGPU_NT, MGPU_OCC)
    mgpu_transform(Input in, T* out, u64 count, u64 tiles_per_cta) {
  __shared__ TransformStorage storage;
  int tid = threadIdx.x;
  u64 num_tiles = (count + MGPU_NV - 1) / MGPU_NV;
  u64 tile_begin = (u64)blockIdx.x * tiles_per_cta;
  u64 tile_end = min(tile_begin + tiles_per_cta, num_tiles);
  bool vec_in = in.vector_ok();
  bool vec_out = MGPU_VEC > 1 && ((size_t)out & 15) == 0;
  for (u64 tile = tile_begin; tile < tile_end; ++tile) {
    u64 base = tile * MGPU_NV;
    int n = (int)min((u64)MGPU_NV, count - base);
    load_tile_to_shared(in, base, n, vec_in, T{}, storage.tile, tid);
    __syncthreads();
    store_tile_from_shared(storage.tile, n, vec_out, out + base, tid);
    __syncthreads();  // the tile is reused
  }
}
