//! The primitives the commands know (bench measures them; tune, occupancy and warmup take the same
//! names) and the element types of each one's bench: one list for every command.

/// The primitives `mgpu bench` measures.
pub(crate) const PRIMITIVES: &[&str] = &[
    "reduce",
    "scan",
    "sort",
    "radix",
    "merge",
    "select",
    "partition",
    "unique",
    "rle",
    "reduce-by-key",
    "segreduce",
    "spmv",
    "segsort",
];

/// `mgpu bench suite`: the headline rows of every primitive (bench/suite.rs); a bench, not a
/// primitive (tune, occupancy and warmup do not take it).
pub(crate) const SUITE: &str = "suite";

/// `mgpu bench dist`: `mgpu::dist`'s sort, scan and reduce across ranks (bench/dist.rs); a bench
/// of primitives already listed, not a kernel family.
pub(crate) const DIST: &str = "dist";

/// `mgpu bench topk`: top-k, whole and per row (bench/topk.rs); a bench of the segmented sort's
/// family (its `mgpu_topk_*` kernels), not a family of its own.
pub(crate) const TOPK: &str = "topk";

/// Those of the compaction family (bench/compact.rs).
pub(crate) const COMPACTION: &[&str] = &["select", "partition", "unique", "rle", "reduce-by-key"];

/// CSR segmented reduction and SpMV (bench/segreduce.rs).
pub(crate) const SEGMENTED: &[&str] = &["segreduce", "spmv"];

/// The segmented sort (bench/segsort.rs).
pub(crate) const SEGSORT: &str = "segsort";

/// Every element type a bench can run (which of them a primitive supports: [`bench_types`]).
pub(crate) const TYPES: &[&str] = &["i32", "i64", "u32", "u64", "f32", "f64", "u8", "u16"];

/// The element types of the radix sort's rows (`sort` and `radix`) when none is named.
pub(crate) const RADIX_TYPES: &[&str] = &["u8", "u16", "i32", "u32", "f32", "i64", "u64", "f64"];

/// The element types `primitive`'s bench supports, and those it runs when none is named (sort:
/// its radix rows' types; its merge rows run on i32, i64, f32 and f64 of them).
pub(crate) fn bench_types(primitive: &str) -> (&'static [&'static str], &'static [&'static str]) {
    const WIDE: &[&str] = &["i32", "i64", "f32", "f64"];
    if COMPACTION.contains(&primitive) {
        return (&["i32", "i64"], &["i32", "i64"]);
    }
    match primitive {
        "segreduce" => (WIDE, &["i32"]),
        "spmv" => (&["f32", "f64"], &["f32", "f64"]),
        SEGSORT => (&["i32", "i64", "u32", "u64", "f32", "f64"], &["i32", "f32"]),
        TOPK => (&["i32", "i64", "u32", "u64", "f32", "f64"], &["f32"]),
        DIST => (&["i32", "i64", "u32", "u64", "f32", "f64"], &["i32"]),
        "sort" | "radix" => (TYPES, RADIX_TYPES),
        "merge" => (&["i32", "i64", "u32", "u64", "f32", "f64"], WIDE),
        _ => (TYPES, WIDE),
    }
}
