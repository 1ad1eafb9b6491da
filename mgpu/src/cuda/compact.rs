//! The compaction family (`mgpu_compact`: select, partition, unique) and the non-trivial runs
//! family (`mgpu_non_trivial_runs`): each one launch of the look-back (kernel_compact.cu, shared
//! with reduce-by-key).

use super::family::{Instance, KernelArgs, KernelFamily, TableTuning};
use super::jit::{headers, ElementDesc, Expr, Prelude};
use super::lookback::{self, TileStatusArgs};
use super::Gpu;
use crate::error::Result;
use crate::tuning::{Family, Tuning};
use crate::{Arithmetic, Element, Equality, Predicate};
use cudarc::driver::sys::CUdeviceptr;
use std::sync::Arc;

/// The device files of the compaction kernels (and reduce-by-key's).
pub(crate) const FILES: &[&str] = &[
    headers::RUNS_TILES,
    include_str!("kernels/kernel_compact.cu"),
];

/// What a compaction kernel does with its keys (kernel_compact.cu).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rejected {
    /// Dropped (select, unique).
    Dropped,
    /// Into the output's tail, last rejected first (partition_if).
    Reversed,
    /// In input order into their own output (partition_copy).
    Separate,
}

/// The variant of a compaction kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompactSpec {
    /// Keep the first key of each run of equal keys (else: the keys the predicate accepts).
    pub unique: bool,
    /// Write the kept keys.
    pub keys_out: bool,
    /// A value array travels with the keys (or, for reduce-by-key, is reduced per run).
    pub values: bool,
    /// Where rejected items go.
    pub rejected: Rejected,
    /// Counts of 64 bits (inputs of 2^32 items or more); else 32 bits, which the look-back
    /// publishes packed with its status.
    pub wide_count: bool,
    /// The non-trivial runs kernel (values: the offsets' and lengths' type).
    pub non_trivial_runs: bool,
}

impl CompactSpec {
    /// Bytes of a count.
    pub fn count_size(&self) -> usize {
        if self.wide_count {
            8
        } else {
            4
        }
    }
}

/// How a compaction tells kept keys from the rest.
pub enum KeyTest<'a, K> {
    /// Keep the keys the predicate accepts.
    Predicate(&'a crate::Predicate<K>),
    /// Keep the first key of each run of keys equal under this relation.
    Runs(&'a crate::Equality<K>),
}

/// A key test as a module sees it: `Pred` or `Eq`, and its expression.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TestExpr {
    /// `struct Pred`: `bool operator()(const T& x)`.
    Predicate(Expr),
    /// `struct Eq`: `bool operator()(const T& a, const T& b)`.
    Runs(Expr),
}

impl<K: Element> KeyTest<'_, K> {
    /// The test's expression.
    pub fn expr(&self) -> TestExpr {
        match self {
            KeyTest::Predicate(p) => {
                TestExpr::Predicate(Expr::new(p.cuda_expression(), p.cuda_helpers()))
            }
            KeyTest::Runs(e) => TestExpr::Runs(Expr::new(e.cuda_expression(), e.cuda_helpers())),
        }
    }
}

/// A compaction-kernel module: the variant, keys, values, key test, the reduction (reduce-by-key)
/// and the tuning.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompactModule {
    /// The variant.
    pub variant: CompactSpec,
    /// The key type.
    pub keys: ElementDesc,
    /// The value type.
    pub values: ElementDesc,
    /// The key test.
    pub test: TestExpr,
    /// Reduce-by-key's operator over the values.
    pub op: Option<Expr>,
    /// The tuning.
    pub tuning: Tuning,
}

impl CompactModule {
    /// The module of `variant` for keys `K`, values `V` and `test`.
    pub fn new<K: Element, V: Element>(
        variant: CompactSpec,
        test: &KeyTest<'_, K>,
        op: Option<&crate::Op<V>>,
        tuning: &Tuning,
    ) -> CompactModule {
        CompactModule {
            variant,
            keys: ElementDesc::of::<K>(),
            values: ElementDesc::of::<V>(),
            test: test.expr(),
            op: op.map(Expr::of_op),
            tuning: *tuning,
        }
    }

    /// What a tile publishes: its count, or a (count, value) pair (reduce-by-key) or a (count,
    /// position) pair (non-trivial runs).
    pub fn published(&self) -> usize {
        let count = self.variant.count_size();
        match &self.op {
            Some(_) => lookback::pair_size(count, self.values.size, self.values.align),
            None if self.variant.non_trivial_runs => 2 * count,
            None => count,
        }
    }

    /// The prelude of every kernel of kernel_compact.cu.
    pub(crate) fn prelude(&self, p: &mut Prelude) {
        let v = &self.variant;
        lookback::prelude(p, self.published());
        p.define("MGPU_UNIQUE", v.unique as u32)
            .define("MGPU_KEYS_OUT", v.keys_out as u32)
            .define("MGPU_VALUES", v.values as u32)
            .define("MGPU_REJECTED", v.rejected as u32)
            .define("MGPU_REDUCE_BY_KEY", self.op.is_some() as u32)
            .define("MGPU_NON_TRIVIAL_RUNS", v.non_trivial_runs as u32)
            // Keys alone hint L2 about a later tile (kernel_compact.cu's prefetch_later_tile).
            .define(
                "MGPU_PREFETCH_LATER_TILE",
                (!v.values && self.op.is_none()) as u32,
            )
            .element("T", &self.keys)
            .load(&super::jit::Load::plain_desc(&self.keys));
        if v.values {
            p.element("V", &self.values);
        }
        p.raw(if v.wide_count {
            "typedef unsigned long long C;"
        } else {
            "typedef unsigned C;"
        });
        match &self.test {
            TestExpr::Predicate(e) => p.functor("Pred", "bool operator()(const T& x)", e),
            TestExpr::Runs(e) => p.functor("Eq", "bool operator()(const T& a, const T& b)", e),
        };
        if let Some(op) = &self.op {
            p.op("Op", "V", op);
        }
    }
}

/// A family of one kernel of kernel_compact.cu, whose spec is a [`CompactModule`].
macro_rules! compaction_family {
    ($(#[$meta:meta])* $family:ident = $name:literal, $kernel:literal, [$($tuning:expr),+], $instances:ident) => {
        $(#[$meta])*
        pub struct $family;

        impl $crate::cuda::family::KernelFamily for $family {
            type Spec = $crate::cuda::compact::CompactModule;
            const NAME: &'static str = $name;
            const FILES: &'static [&'static str] = $crate::cuda::compact::FILES;
            const PARTS: &'static [$crate::cuda::family::Part] = &[$crate::cuda::family::Part {
                name: $name,
                kernels: &[$kernel],
            }];
            fn prelude(spec: &Self::Spec, p: &mut $crate::cuda::jit::Prelude) {
                spec.prelude(p);
            }
            fn tuning(spec: &Self::Spec) -> $crate::tuning::Tuning {
                spec.tuning
            }
            const TUNING: &'static [$crate::tuning::Family] = &[$($tuning),+];
            fn instances(
                _arch: u32,
                table: $crate::cuda::family::TableTuning<'_>,
            ) -> $crate::error::Result<Vec<$crate::cuda::family::Instance>> {
                let mut out = Vec::new();
                $crate::for_each_arithmetic!($instances(table, &mut out));
                Ok(out)
            }
        }
    };
}
pub(crate) use compaction_family;

compaction_family!(
    /// The compaction family: select, partition, unique.
    Compact = "compact", "mgpu_compact", [Family::Compact, Family::CompactPairs], compact_instances
);

compaction_family!(
    /// The non-trivial runs family: (offset, length) of each run longer than one.
    NonTrivialRuns = "non_trivial_runs", "mgpu_non_trivial_runs", [Family::NonTrivialRuns], non_trivial_instances
);

/// The compaction tuning for keys of `key_size` and values of `value_size` bytes (0: none): the
/// table's for the tile's item size, VT at most 31 (a thread's kept items are one 32-bit mask).
/// Sub-word keys with values take the 4-byte class's tiles but convert each key and value in
/// registers: at its OCC 6 the 16-bit unique-by-key kernel spilled, so they run at OCC <= 4.
/// Reduce-by-key's (its own table family) likewise.
pub fn tuning(
    table: TableTuning<'_>,
    family: Family,
    key_size: usize,
    value_size: usize,
) -> Result<Tuning> {
    let mut t = table(family, key_size + value_size)?;
    t.vt = t.vt.min(31);
    if key_size < 4 && value_size > 0 {
        t.occ = t.occ.min(4);
    }
    Ok(t)
}

/// The tuning family of a compaction: values that go with the kept keys alone (no rejected
/// output) are read where a key is kept, in tiles of `Family::CompactPairs`.
pub fn family_of(values: bool, rejected: Rejected) -> Family {
    match (values, rejected) {
        (true, Rejected::Dropped) => Family::CompactPairs,
        _ => Family::Compact,
    }
}

/// The non-trivial runs kernel holds a thread's keys and three masks across its loop: its table
/// entry for its keys (`Compact`'s where it has none), at most VT 23 at OCC 4 (at 128x31x4 it
/// spilled for f32 and i64 keys).
pub fn non_trivial_tuning(table: TableTuning<'_>, key_size: usize) -> Result<Tuning> {
    let mut t = table(Family::NonTrivialRuns, key_size)?;
    t.vt = t.vt.min(23);
    t.occ = t.occ.min(4);
    Ok(t)
}

/// The variants the compaction entry points launch for keys `K`: select (with values), select,
/// partition (both forms), unique (keys, and by key), in 32- and 64-bit counts.
fn compact_instances<K: Arithmetic>(table: TableTuning<'_>, out: &mut Vec<Instance>) -> Result<()> {
    let pred = Predicate::<K>::nonzero();
    let eq = Equality::<K>::equal_to();
    let k = std::mem::size_of::<K>();
    for wide_count in [false, true] {
        // (unique, keys_out, values, rejected): select (keys, and values by keys), partition
        // (both forms), unique (keys, and by key).
        let jobs = [
            (false, true, false, Rejected::Dropped),
            (false, false, true, Rejected::Dropped),
            (false, true, false, Rejected::Reversed),
            (false, true, false, Rejected::Separate),
            (true, true, false, Rejected::Dropped),
            (true, true, true, Rejected::Dropped),
        ];
        for (i, &(unique, keys_out, values, rejected)) in jobs.iter().enumerate() {
            let v = CompactSpec {
                unique,
                keys_out,
                values,
                rejected,
                wide_count,
                non_trivial_runs: false,
            };
            let test = if unique {
                KeyTest::Runs(&eq)
            } else {
                KeyTest::Predicate(&pred)
            };
            let family = family_of(v.values, v.rejected);
            let t = tuning(table, family, k, if v.values { k } else { 0 })?;
            let spec = CompactModule::new::<K, K>(v, &test, None, &t);
            let primary = !wide_count && (i == 0 || i == 4);
            out.push(
                Instance::of::<Compact>(&spec, family, ElementDesc::of::<K>(), format!("{v:?}"))
                    .primary(primary),
            );
        }
    }
    Ok(())
}

/// Non-trivial runs of keys `K` with `u32` offsets and lengths, in 32- and 64-bit counts.
fn non_trivial_instances<K: Arithmetic>(
    table: TableTuning<'_>,
    out: &mut Vec<Instance>,
) -> Result<()> {
    let eq = Equality::<K>::equal_to();
    for wide_count in [false, true] {
        let v = CompactSpec {
            unique: true,
            keys_out: false,
            values: true,
            rejected: Rejected::Dropped,
            wide_count,
            non_trivial_runs: true,
        };
        let t = non_trivial_tuning(table, std::mem::size_of::<K>())?;
        let spec = CompactModule::new::<K, u32>(v, &KeyTest::Runs(&eq), None, &t);
        out.push(
            Instance::of::<NonTrivialRuns>(
                &spec,
                Family::NonTrivialRuns,
                ElementDesc::of::<K>(),
                format!("{v:?}"),
            )
            .primary(!wide_count),
        );
    }
    Ok(())
}

crate::kernel_args! {
    // SAFETY: mgpu_compact(Input keys, const V* values, T* keys_out, V* values_out,
    // T* keys_rejected, V* values_rejected, u64 count, u64* count_out, u64* tickets,
    // u64 first_ticket, TileStatusOf<C> status).
    CompactArgs = "mgpu_compact" {
        keys: CUdeviceptr, values: CUdeviceptr, keys_out: CUdeviceptr, values_out: CUdeviceptr,
        keys_rejected: CUdeviceptr, values_rejected: CUdeviceptr, count: u64,
        count_out: CUdeviceptr, tickets: CUdeviceptr, first_ticket: u64, status: TileStatusArgs,
    }
}

crate::kernel_args! {
    // SAFETY: mgpu_non_trivial_runs(Input keys, V* offsets_out, V* lengths_out, u64 count,
    // u64* count_out, u64* tickets, u64 first_ticket, TileStatusOf<StartPair> status).
    NonTrivialRunsArgs = "mgpu_non_trivial_runs" {
        keys: CUdeviceptr, offsets_out: CUdeviceptr, lengths_out: CUdeviceptr, count: u64,
        count_out: CUdeviceptr, tickets: CUdeviceptr, first_ticket: u64, status: TileStatusArgs,
    }
}

/// Device addresses of a compaction's arrays (0: absent).
#[derive(Clone, Copy, Default)]
pub(crate) struct CompactArrays {
    pub keys: CUdeviceptr,
    pub values: CUdeviceptr,
    pub keys_out: CUdeviceptr,
    pub values_out: CUdeviceptr,
    pub keys_rejected: CUdeviceptr,
    pub values_rejected: CUdeviceptr,
    /// Where the kernel writes the number of kept items (runs), as a u64.
    pub count_out: CUdeviceptr,
}

/// Queues the kernel of family `F` for `spec` over `count` items (at least one): one look-back
/// launch, its arguments made by `args`.
pub(crate) fn launch<F: KernelFamily<Spec = CompactModule>, A: KernelArgs>(
    gpu: &Gpu,
    spec: &CompactModule,
    count: u64,
    args: impl FnOnce(CUdeviceptr, u64, TileStatusArgs) -> A,
) -> Result<()> {
    let module = gpu.module::<F>(spec, &F::PARTS[0])?;
    let num_tiles = count.div_ceil(spec.tuning.nv() as u64);
    lookback::launch(
        gpu,
        &module,
        num_tiles,
        spec.tuning.nt,
        spec.published(),
        args,
    )
}

/// Whether `count` items need 64-bit counts.
pub(crate) fn wide(count: u64) -> bool {
    count > u32::MAX as u64
}

/// Runs the compaction `spec` over `count` keys (and values).
pub(crate) fn compact<K: Element, V: Element>(
    gpu: &Arc<Gpu>,
    mut spec: CompactSpec,
    test: &KeyTest<'_, K>,
    arrays: CompactArrays,
    count: u64,
    tuning: &Tuning,
) -> Result<()> {
    if count == 0 {
        return gpu.memset_zero(arrays.count_out, 8);
    }
    spec.wide_count = wide(count);
    let module_spec = CompactModule::new::<K, V>(spec, test, None, tuning);
    launch::<Compact, _>(gpu, &module_spec, count, |tickets, first_ticket, status| {
        CompactArgs {
            keys: arrays.keys,
            values: arrays.values,
            keys_out: arrays.keys_out,
            values_out: arrays.values_out,
            keys_rejected: arrays.keys_rejected,
            values_rejected: arrays.values_rejected,
            count,
            count_out: arrays.count_out,
            tickets,
            first_ticket,
            status,
        }
    })
}

/// The non-trivial runs of `count` keys: offsets and lengths (of type `L`) of the runs longer
/// than one, and their number to `count_out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn non_trivial_runs<K: Element, L: Element>(
    gpu: &Arc<Gpu>,
    equal: &crate::Equality<K>,
    keys: CUdeviceptr,
    offsets: CUdeviceptr,
    lengths: CUdeviceptr,
    count_out: CUdeviceptr,
    count: u64,
    tuning: &Tuning,
) -> Result<()> {
    if count == 0 {
        return gpu.memset_zero(count_out, 8);
    }
    let spec = CompactSpec {
        unique: true,
        keys_out: false,
        values: true,
        rejected: Rejected::Dropped,
        wide_count: wide(count),
        non_trivial_runs: true,
    };
    let module_spec = CompactModule::new::<K, L>(spec, &KeyTest::Runs(equal), None, tuning);
    launch::<NonTrivialRuns, _>(gpu, &module_spec, count, |tickets, first_ticket, status| {
        NonTrivialRunsArgs {
            keys,
            offsets_out: offsets,
            lengths_out: lengths,
            count,
            count_out,
            tickets,
            first_ticket,
            status,
        }
    })
}
