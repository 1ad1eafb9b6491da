// segscan.cuh: the (runs, value) pair of a segmented scan, shared by reduce-by-key
// (kernel_compact.cu) and the segmented reductions (kernel_segreduce.cu). `runs` counts the
// segment starts (heads) in a span of items; `value` is the reduction of the span's items since
// its last head (all of them when it has none). Combining two adjacent spans,
//   (a, b) -> (a.runs + b.runs, b.runs ? b.value : a.value op b.value),
// is associative whatever `op` is, and keeps operand order, so the CTA scan and the look-back
// carry a segment's partial reduction across threads and tiles for non-commutative operators too.
template <typename C, typename V>
struct RunPairOf {
  C runs;
  V value;
};

template <typename C, typename V, typename F>
struct RunPlusOf {
  __device__ __forceinline__ RunPairOf<C, V> operator()(const RunPairOf<C, V>& a,
                                                        const RunPairOf<C, V>& b) const {
    return RunPairOf<C, V>{a.runs + b.runs, b.runs ? b.value : F()(a.value, b.value)};
  }
};
