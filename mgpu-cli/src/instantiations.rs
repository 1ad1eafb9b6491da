//! Which kernel instantiations (module and source) a primitive's bench runs, for the commands that
//! compile kernels without running them: tune's spill check, occupancy's report and warmup without
//! a GPU.
//!
//! A stand-in: it rebuilds the library's choices (specs, parts, tunings) from `mgpu::cuda::jit`,
//! and the library's family registry will replace it. Keep its surface to [`instantiations`] (and
//! [`csr_spec`] for the bench's tuning label); each purpose keeps the modules it has always had.

use mgpu::cuda::jit::{self, CompactSpec, KeyTest, Load, Module, Rejected};
use mgpu::cuda::jit::{SegItems, SegReduceSpec, SortValues};
use mgpu::tuning::{self, Family, Tuning};
use mgpu::{Arithmetic, Comparator, Element, Equality, Op, Predicate};

/// What a command compiles the instantiations for.
#[derive(Clone, Copy)]
pub(crate) enum Purpose<'a> {
    /// `mgpu tune`'s spill check: the modules of the family that the primitive's bench loads (as
    /// the library loads them, in parts), under a candidate tuning.
    Candidate(Family, &'a Tuning),
    /// `mgpu occupancy`: every kernel of the primitive's modules (whole modules, a plan's apply
    /// tiles too) under the tunings the library would choose on the architecture. The primitive
    /// is one of occupancy's groups: sort as `sort-keys` and `sort-pairs`.
    Report,
    /// `mgpu warmup` without a GPU: the parts the library loads for reduce, scan, sort and merge,
    /// under the tunings in effect on the architecture.
    Warmup,
}

/// One module to compile.
pub(crate) struct Instantiation {
    /// The report's row label: the primitive, or a plan's apply (`segreduce/apply`).
    pub label: String,
    /// The tuning it is compiled for.
    pub tuning: Tuning,
    pub module: Module,
    pub source: String,
    /// The tiles gather through the L1 cache: they run with a smaller carveout
    /// (`occupancy::gather_carveout`).
    pub gathers: bool,
}

/// The instantiations of `primitive` for element type `ty` on sm_`arch` that `purpose` compiles,
/// with the default operators (plus; less for sorting; non-zero and equal-to for compaction).
pub(crate) fn instantiations(
    primitive: &str,
    ty: &str,
    arch: u32,
    purpose: Purpose,
) -> Result<Vec<Instantiation>, String> {
    match ty {
        "i32" => of::<i32>(primitive, arch, purpose),
        "i64" => of::<i64>(primitive, arch, purpose),
        "u32" => of::<u32>(primitive, arch, purpose),
        "u64" => of::<u64>(primitive, arch, purpose),
        "f32" => of::<f32>(primitive, arch, purpose),
        "f64" => of::<f64>(primitive, arch, purpose),
        "u8" => of::<u8>(primitive, arch, purpose),
        "u16" => of::<u16>(primitive, arch, purpose),
        other => Err(format!("unknown type `{other}`")),
    }
}

/// The benches' CSR segmented reduction: 32-bit offsets, direct, segments checked non-empty.
pub(crate) fn csr_spec(items: SegItems) -> SegReduceSpec {
    SegReduceSpec {
        items,
        indirect: false,
        wide_offsets: false,
        wide_count: false,
        empty: false,
        codes: false,
        strided: false,
    }
}

/// The default operators and loads the instantiations are made with.
struct Defaults<T: Element> {
    size: usize,
    plus: Op<T>,
    plain: Load,
    less: Comparator<T>,
}

fn of<T: Element + Arithmetic>(
    primitive: &str,
    arch: u32,
    purpose: Purpose,
) -> Result<Vec<Instantiation>, String> {
    let d = Defaults {
        size: std::mem::size_of::<T>(),
        plus: Op::<T>::plus(),
        plain: Load::plain::<T>(),
        less: Comparator::<T>::less(),
    };
    match purpose {
        Purpose::Candidate(family, t) => Ok(candidate(&d, primitive, family, t)
            .into_iter()
            .map(|(module, source)| Instantiation {
                label: primitive.to_string(),
                tuning: *t,
                module,
                source,
                gathers: false,
            })
            .collect()),
        Purpose::Report => report(&d, primitive, arch),
        Purpose::Warmup => warmup(&d, primitive, arch),
    }
}

/// A compaction module's spec: the keys written out, 32-bit counts.
fn compact_spec(unique: bool, values: bool, rejected: Rejected) -> CompactSpec {
    CompactSpec {
        unique,
        keys_out: true,
        values,
        rejected,
        wide_count: false,
        non_trivial_runs: false,
    }
}

fn err(e: mgpu::Error) -> String {
    e.to_string()
}

/// The modules of `family` that the bench of `primitive` runs for `T`, as sources for `t`.
fn candidate<T: Element + Arithmetic>(
    d: &Defaults<T>,
    primitive: &str,
    family: Family,
    t: &Tuning,
) -> Vec<(Module, String)> {
    match family {
        Family::Reduce => vec![(
            Module::Reduce,
            jit::source(Module::Reduce, Some(&d.plus), &d.plain, t),
        )],
        // The family's parts, as the library loads them (together, every kernel of the family).
        Family::Scan => Module::Scan
            .parts()
            .iter()
            .map(|&m| (m, jit::source(m, Some(&d.plus), &d.plain, t)))
            .collect(),
        Family::SortKeys | Family::SortPairs => {
            let values = if family == Family::SortKeys {
                SortValues::None
            } else {
                SortValues::Pairs
            };
            Module::Merge
                .parts()
                .iter()
                .map(|&m| (m, jit::sort_part_source::<T, T>(m, &d.less, values, t)))
                .collect()
        }
        Family::Compact | Family::ReduceByKey => {
            let pred = Predicate::<T>::nonzero();
            let eq = Equality::<T>::equal_to();
            let (s, test, op) = match primitive {
                "reduce-by-key" | "rle" => (
                    compact_spec(true, true, Rejected::Dropped),
                    KeyTest::Runs(&eq),
                    Some(&d.plus),
                ),
                "unique" => (
                    compact_spec(true, false, Rejected::Dropped),
                    KeyTest::Runs(&eq),
                    None,
                ),
                _ => (
                    compact_spec(false, false, Rejected::Dropped),
                    KeyTest::Predicate(&pred),
                    None,
                ),
            };
            vec![(
                s.module(s.values),
                jit::compact_source::<T, T>(&s, &test, op, t),
            )]
        }
        Family::SegReduce | Family::Spmv => {
            let spmv = primitive == "spmv";
            let spec = csr_spec(if spmv {
                SegItems::SpmvBinary
            } else {
                SegItems::Values
            });
            let mul = Op::<T>::multiplies();
            // The parts as the library loads them: the tiles, and the helpers (compiled with
            // `u32` values and `plus`, cuda/segreduce.rs).
            let helpers = csr_spec(SegItems::Values);
            vec![
                (
                    Module::SegReduceTiles,
                    jit::segreduce_part_source::<T>(
                        Module::SegReduceTiles,
                        &spec,
                        &d.plain,
                        &d.plus,
                        spmv.then_some(&mul),
                        t,
                    ),
                ),
                (
                    Module::SegReduceHelpers,
                    jit::segreduce_part_source::<u32>(
                        Module::SegReduceHelpers,
                        &helpers,
                        &Load::plain::<u32>(),
                        &Op::plus(),
                        None,
                        t,
                    ),
                ),
            ]
        }
    }
}

/// The modules that `primitive` (an occupancy group) runs for `T` with the default operators,
/// under the tunings the library would choose on `arch`.
fn report<T: Element + Arithmetic>(
    d: &Defaults<T>,
    primitive: &str,
    arch: u32,
) -> Result<Vec<Instantiation>, String> {
    let s = d.size;
    let item = |label: &str, tuning, module, source| Instantiation {
        label: label.to_string(),
        tuning,
        module,
        source,
        gathers: false,
    };
    // Compaction: the table's entry for the tile's bytes per item, VT at most 31 (compact.rs).
    let compact_tuning = |family, size: usize| -> Result<Tuning, String> {
        let mut t = tuning::lookup(family, arch, size).map_err(err)?;
        t.vt = t.vt.min(31);
        Ok(t)
    };
    let pred = Predicate::<T>::nonzero();
    let eq = Equality::<T>::equal_to();
    Ok(match primitive {
        "reduce" | "scan" => {
            let (module, family) = if primitive == "reduce" {
                (Module::Reduce, Family::Reduce)
            } else {
                (Module::Scan, Family::Scan)
            };
            let t = tuning::lookup(family, arch, s).map_err(err)?;
            let src = jit::source(module, Some(&d.plus), &d.plain, &t);
            vec![item(primitive, t, module, src)]
        }
        "sort-keys" | "merge" => {
            let t = tuning::lookup(Family::SortKeys, arch, s).map_err(err)?;
            let src = jit::sort_source::<T, T>(&d.less, SortValues::None, &t);
            vec![item(primitive, t, Module::Merge, src)]
        }
        "sort-pairs" => {
            let size = tuning::tile_element_size(Family::SortPairs, s, s);
            let t = tuning::lookup(Family::SortPairs, arch, size).map_err(err)?;
            let src = jit::sort_source::<T, T>(&d.less, SortValues::Pairs, &t);
            vec![item("sort-pairs", t, Module::Merge, src)]
        }
        "select" | "partition" | "unique" => {
            let t = compact_tuning(Family::Compact, s)?;
            let (spec, test) = match primitive {
                "select" => (
                    compact_spec(false, false, Rejected::Dropped),
                    KeyTest::Predicate(&pred),
                ),
                // partition_if: the rejected keys into the output's tail.
                "partition" => (
                    compact_spec(false, false, Rejected::Reversed),
                    KeyTest::Predicate(&pred),
                ),
                _ => (
                    compact_spec(true, false, Rejected::Dropped),
                    KeyTest::Runs(&eq),
                ),
            };
            let src = jit::compact_source::<T, T>(&spec, &test, None, &t);
            vec![item(primitive, t, spec.module(false), src)]
        }
        "rle" => {
            // Run lengths are u32 values (as the bench runs it), summed per run of equal keys.
            let t = compact_tuning(
                Family::ReduceByKey,
                tuning::tile_element_size(Family::ReduceByKey, s, 4),
            )?;
            let spec = compact_spec(true, true, Rejected::Dropped);
            let ones = Op::<u32>::plus();
            let src = jit::compact_source::<T, u32>(&spec, &KeyTest::Runs(&eq), Some(&ones), &t);
            vec![item("rle", t, spec.module(true), src)]
        }
        "reduce-by-key" => {
            let t = compact_tuning(
                Family::ReduceByKey,
                tuning::tile_element_size(Family::ReduceByKey, s, s),
            )?;
            let spec = compact_spec(true, true, Rejected::Dropped);
            let src = jit::compact_source::<T, T>(&spec, &KeyTest::Runs(&eq), Some(&d.plus), &t);
            vec![item("reduce-by-key", t, spec.module(true), src)]
        }
        "segreduce" | "spmv" => {
            // CSR with 32-bit offsets; SpMV with a matrix and a vector (binary).
            let spmv = primitive == "spmv";
            let kind = if spmv {
                SegItems::SpmvBinary
            } else {
                SegItems::Values
            };
            let t = mgpu::segreduce::tuning_for::<T, u32>(Some(arch), kind, false).map_err(err)?;
            let spec = csr_spec(kind);
            let mul = Op::<T>::multiplies();
            let src =
                jit::segreduce_source::<T>(&spec, &d.plain, &d.plus, spmv.then_some(&mul), &t);
            // A plan's apply: its tiles read packed heads (and SpMV's, over rows longer than a
            // thread's items, gather lane-strided).
            let apply = SegReduceSpec {
                codes: true,
                strided: spmv,
                ..spec
            };
            let apply_src = jit::segreduce_part_source::<T>(
                Module::SegReduceTiles,
                &apply,
                &d.plain,
                &d.plus,
                spmv.then_some(&mul),
                &t,
            );
            vec![
                Instantiation {
                    gathers: spec.gathers(),
                    ..item(primitive, t, Module::SegReduce, src)
                },
                Instantiation {
                    gathers: apply.gathers(),
                    ..item(
                        &format!("{primitive}/apply"),
                        t,
                        Module::SegReduceTiles,
                        apply_src,
                    )
                },
            ]
        }
        other => return Err(format!("occupancy: unknown primitive `{other}`")),
    })
}

/// The modules of `primitive` for `T` with the default operator (plus; less for sorting) and the
/// tuning in effect for `arch`.
fn warmup<T: Element + Arithmetic>(
    d: &Defaults<T>,
    primitive: &str,
    arch: u32,
) -> Result<Vec<Instantiation>, String> {
    let s = d.size;
    let mut modules: Vec<(Tuning, Module, String)> = Vec::new();
    match primitive {
        "reduce" => {
            let t = tuning::lookup(Family::Reduce, arch, s).map_err(err)?;
            let src = jit::source(Module::Reduce, Some(&d.plus), &d.plain, &t);
            modules.push((t, Module::Reduce, src));
        }
        "scan" => {
            // Both parts: the small-input kernel and the look-back scan.
            let t = tuning::lookup(Family::Scan, arch, s).map_err(err)?;
            for &m in Module::Scan.parts() {
                modules.push((t, m, jit::source(m, Some(&d.plus), &d.plain, &t)));
            }
        }
        "sort" | "merge" => {
            // What the library loads: a sort the block sort and the merge passes (keys, and
            // pairs), a merge the merge of two sequences (keys).
            let parts: &[Module] = if primitive == "sort" {
                &[Module::Blocksort, Module::MergePasses]
            } else {
                &[Module::MergeSequences]
            };
            let t = tuning::lookup(Family::SortKeys, arch, s).map_err(err)?;
            for &m in parts {
                let keys = jit::sort_part_source::<T, T>(m, &d.less, SortValues::None, &t);
                modules.push((t, m, keys));
            }
            if primitive == "sort" {
                let size = tuning::tile_element_size(Family::SortPairs, s, s);
                let t = tuning::lookup(Family::SortPairs, arch, size).map_err(err)?;
                for &m in parts {
                    let pairs = jit::sort_part_source::<T, T>(m, &d.less, SortValues::Pairs, &t);
                    modules.push((t, m, pairs));
                }
            }
        }
        other => return Err(format!("warmup: {other} needs a GPU to warm up")),
    }
    Ok(modules
        .into_iter()
        .map(|(tuning, module, source)| Instantiation {
            label: primitive.to_string(),
            tuning,
            module,
            source,
            gathers: false,
        })
        .collect())
}
