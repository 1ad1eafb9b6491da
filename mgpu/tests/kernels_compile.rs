//! Every kernel instantiation compiles with NVRTC for sm_90, and ptxas reports no spill and no
//! stack frame (no register array fell into local memory). Needs libnvrtc, not a GPU; without
//! it the test is skipped unless MGPU_REQUIRE_NVRTC=1 (CI sets it).

mod common;
use common::*;
use mgpu::cuda::jit::{self, Load, Module, SegItems, SegReduceSpec, SortValues};
use mgpu::tuning::{self, Family};
use mgpu::{Comparator, Element, Error, Map, Op};

fn nvrtc() -> bool {
    let ok = jit::nvrtc_available();
    if !ok && std::env::var("MGPU_REQUIRE_NVRTC").as_deref() == Ok("1") {
        panic!("MGPU_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded (see `mgpu info`; MGPU_NVRTC names the library)");
    }
    if !ok {
        eprintln!("skipped: libnvrtc not found");
    }
    ok
}

const ARCH: u32 = 90;

/// Seen with NVRTC 13.0 on the GPU machine: some programs come back with no ptxas report in their
/// log. CI's NVRTC (PyPI, newer) reports every kernel: there (MGPU_REQUIRE_NVRTC=1) a missing
/// report is a failure.
fn no_report(c: &jit::Compiled) -> bool {
    let missing = c.reports.is_empty();
    if missing && std::env::var("MGPU_REQUIRE_NVRTC").as_deref() == Ok("1") {
        panic!("NVRTC returned no ptxas report; log:\n{}", c.log);
    }
    missing
}

fn check_type<T: Element>(ops: &[Op<T>]) -> Vec<String> {
    check_load(ops, &Load::plain::<T>(), "plain")
}

/// Reduce and scan (and, for mapped or counting input, transform) modules reading their input as
/// `load` says.
fn check_load<T: Element>(ops: &[Op<T>], load: &Load, what: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for op in ops {
        let mut modules = vec![
            (Module::Reduce, Family::Reduce),
            (Module::Scan, Family::Scan),
            (Module::Reduce, Family::Scan),
        ];
        if !load.is_plain() {
            modules.push((Module::Transform, Family::Reduce));
        }
        for (module, family) in modules {
            // (Reduce, Scan): the upsweep of reduce-then-scan runs the reduce kernel with the scan's
            // tiles.
            let size = std::mem::size_of::<T>();
            let mut tuning = tuning::lookup(family, ARCH, size).unwrap();
            if family == Family::Scan && !load.is_plain() {
                tuning = tuning::for_computed_input(tuning);
            }
            if module == Module::Reduce && family == Family::Scan {
                tuning = tuning::upsweep(tuning, ARCH, size).unwrap();
            }
            let op = (module != Module::Transform).then_some(op);
            let src = jit::source(module, op, load, &tuning);
            let name = op.map_or("-", |o| o.name());
            let c = jit::compile_uncached(module.name(), &src, ARCH).unwrap_or_else(|e| {
                panic!("{} {what} {name} {}: {e}", T::CUDA_TYPE, module.name())
            });
            assert!(!c.cubin.is_empty());
            if no_report(&c) {
                eprintln!(
                    "warning: NVRTC returned no ptxas report for {} {what} {name} {}",
                    T::CUDA_TYPE,
                    module.name()
                );
                continue;
            }
            for k in module.kernels() {
                let r = c.reports.iter().find(|r| r.name == *k).unwrap_or_else(|| {
                    panic!("no ptxas report for {k}: {:?}\nlog:\n{}", c.reports, c.log)
                });
                let line = format!(
                    "{:<18} {:<8} {:<16} {:<5} {:>4}x{:<2} {:<19} regs {:>3} smem {:>6} stack {} spills {}/{}",
                    T::CUDA_TYPE, what, name, op.is_some_and(|o| o.is_commutative()), tuning.nt, tuning.vt, k,
                    r.registers, r.shared_bytes, r.stack_frame, r.spill_stores, r.spill_loads
                );
                assert!(r.clean(), "local memory used: {line}");
                lines.push(line);
            }
        }
    }
    lines
}

fn arith<T: Element + mgpu::Arithmetic>() -> Vec<String> {
    check_type::<T>(&[Op::plus(), Op::plus().commutative(false), Op::maximum()])
}

#[test]
fn every_kernel_compiles_without_spills() {
    if !nvrtc() {
        return;
    }
    let mut lines = Vec::new();
    lines.extend(arith::<i8>());
    lines.extend(arith::<u8>());
    lines.extend(arith::<i16>());
    lines.extend(arith::<u16>());
    lines.extend(arith::<i32>());
    lines.extend(arith::<u32>());
    lines.extend(arith::<i64>());
    lines.extend(arith::<u64>());
    lines.extend(arith::<f32>());
    lines.extend(arith::<f64>());
    lines.extend(check_type(&[affine_op()]));
    lines.extend(check_type(&[tagged_op()]));
    lines.extend(check_type(&[add_mod_prime()]));
    eprintln!("{}", lines.join("\n"));
}

/// Mapped inputs (same type, wider type, a struct's field) and counting inputs.
#[test]
fn mapped_and_counting_kernels_compile_without_spills() {
    if !nvrtc() {
        return;
    }
    let mut lines = Vec::new();
    let square = Load::mapped(&Map::<f32, f32>::square());
    lines.extend(check_load(&[Op::<f32>::plus()], &square, "square"));
    let widen = Map::new("widen", |x: f32| x as f64, "(double)x");
    let non_commutative = Op::<f64>::plus().commutative(false);
    lines.extend(check_load(
        &[non_commutative],
        &Load::mapped(&widen),
        "widen",
    ));
    let byte = Map::new("u8_to_u32", |x: u8| x as u32, "(unsigned)x");
    lines.extend(check_load(
        &[Op::<u32>::plus()],
        &Load::mapped(&byte),
        "widen",
    ));
    let field = Map::new("field_b", |x: Affine| x.b as u64, "(unsigned long long)x.b");
    lines.extend(check_load(
        &[Op::<u64>::plus()],
        &Load::mapped(&field),
        "field",
    ));
    let to_affine = Map::new(
        "to_affine",
        |x: u32| Affine { a: x | 1, b: x },
        "Affine{ x | 1u, x }",
    );
    lines.extend(check_load(
        &[affine_op()],
        &Load::mapped(&to_affine),
        "struct",
    ));
    lines.extend(check_load(
        &[Op::<i32>::plus()],
        &Load::counting::<i32>(),
        "count",
    ));
    let non_commutative = Op::<u8>::plus().commutative(false);
    lines.extend(check_load(
        &[non_commutative],
        &Load::counting::<u8>(),
        "count",
    ));
    lines.extend(check_load(
        &[Op::<f64>::plus()],
        &Load::counting::<f64>(),
        "count",
    ));
    eprintln!("{}", lines.join("\n"));
}

/// Merge and mergesort modules: keys only, pairs and indices, built-in and custom comparators.
fn check_sort<K: Element, V: Element>(comparators: &[Comparator<K>]) -> Vec<String> {
    let mut lines = Vec::new();
    for comp in comparators {
        for values in [SortValues::None, SortValues::Pairs, SortValues::Indices] {
            let (k, v) = (std::mem::size_of::<K>(), std::mem::size_of::<V>());
            let family = if values == SortValues::None {
                Family::SortKeys
            } else {
                Family::SortPairs
            };
            let tuning =
                tuning::lookup(family, ARCH, tuning::tile_element_size(family, k, v)).unwrap();
            let src = jit::sort_source::<K, V>(comp, values, &tuning);
            let c = jit::compile_uncached("merge", &src, ARCH)
                .unwrap_or_else(|e| panic!("{} {} {values:?}: {e}", K::CUDA_TYPE, comp.name()));
            if no_report(&c) {
                eprintln!(
                    "warning: NVRTC returned no ptxas report for {} sort",
                    K::CUDA_TYPE
                );
                continue;
            }
            for name in Module::Merge.kernels() {
                let r = c
                    .reports
                    .iter()
                    .find(|r| r.name == *name)
                    .unwrap_or_else(|| panic!("no ptxas report for {name}:\n{}", c.log));
                let line = format!(
                    "{:<18} {:<10} {:<8} {:>4}x{:<2} {:<21} regs {:>3} smem {:>6} stack {} spills {}/{}",
                    K::CUDA_TYPE, comp.name(), format!("{values:?}"), tuning.nt, tuning.vt, name,
                    r.registers, r.shared_bytes, r.stack_frame, r.spill_stores, r.spill_loads
                );
                let mark = if r.clean() { "" } else { "  <- LOCAL MEMORY" };
                lines.push(format!("{line}{mark}"));
            }
        }
    }
    lines
}

#[test]
fn every_sort_kernel_compiles_without_spills() {
    if !nvrtc() {
        return;
    }
    let mut lines = Vec::new();
    lines.extend(check_sort::<i8, u32>(&[Comparator::less()]));
    lines.extend(check_sort::<u16, u32>(&[Comparator::less()]));
    lines.extend(check_sort::<i32, i32>(&[
        Comparator::less(),
        Comparator::greater(),
    ]));
    lines.extend(check_sort::<u32, u64>(&[Comparator::less()]));
    lines.extend(check_sort::<i64, i64>(&[
        Comparator::less(),
        Comparator::greater(),
    ]));
    lines.extend(check_sort::<u64, u32>(&[Comparator::less()]));
    lines.extend(check_sort::<f32, u32>(&[
        Comparator::less(),
        Comparator::greater(),
    ]));
    lines.extend(check_sort::<f64, f64>(&[Comparator::less()]));
    lines.extend(check_sort::<Affine, u32>(&[affine_key_less()]));
    eprintln!("{}", lines.join("\n"));
    let bad: Vec<_> = lines
        .iter()
        .filter(|l| l.ends_with("LOCAL MEMORY"))
        .collect();
    assert!(bad.is_empty(), "local memory used:\n{bad:#?}");
}

#[test]
fn a_bad_operator_is_a_compile_error_with_the_log() {
    if !nvrtc() {
        return;
    }
    let op = Op::new("broken", 0i32, |a, b| a + b, "a +* b");
    let t = tuning::lookup(Family::Reduce, ARCH, 4).unwrap();
    let err = jit::compile_uncached(
        "reduce",
        &jit::source(Module::Reduce, Some(&op), &Load::plain::<i32>(), &t),
        ARCH,
    )
    .unwrap_err();
    match &err {
        Error::Compile { log, .. } => assert!(log.contains("error"), "{log}"),
        other => panic!("expected a compile error, got {other}"),
    }
    assert!(err.to_string().contains("CUDA expression"), "{err}");
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Mismatch {
    a: u64,
}
impl Element for Mismatch {
    const CUDA_TYPE: &'static str = "Mismatch";
    const CUDA_DECLARATION: &'static str = "struct Mismatch { unsigned a; };";
}

#[test]
fn a_declaration_that_does_not_match_the_rust_type_is_caught() {
    if !nvrtc() {
        return;
    }
    let op = Op::new("first", Mismatch { a: 0 }, |a, _| a, "a");
    let t = tuning::lookup(Family::Reduce, ARCH, 8).unwrap();
    let load = Load::plain::<Mismatch>();
    let err = jit::compile_uncached(
        "reduce",
        &jit::source(Module::Reduce, Some(&op), &load, &t),
        ARCH,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("does not match the Rust type"),
        "{err}"
    );
}

/// The compaction and reduce-by-key modules for keys `K` (and values `V`): every configuration
/// the API launches, in 32- and 64-bit counts.
fn check_compact<K: Element + mgpu::Arithmetic, V: Element>(op: &Op<V>) -> Vec<String> {
    use jit::{CompactSpec, KeyTest, Rejected};
    let pred = mgpu::Predicate::<K>::nonzero();
    let eq = mgpu::Equality::<K>::equal_to();
    let mut lines = Vec::new();
    let same = std::any::TypeId::of::<K>() == std::any::TypeId::of::<V>();
    for wide_count in [false, true] {
        let spec = |unique, keys_out, values, rejected| CompactSpec {
            unique,
            keys_out,
            values,
            rejected,
            wide_count,
            non_trivial_runs: false,
        };
        let non_trivial = CompactSpec {
            non_trivial_runs: true,
            ..spec(true, false, true, Rejected::Dropped)
        };
        let mut jobs: Vec<(CompactSpec, KeyTest<'_, K>, bool)> = vec![
            (
                spec(false, false, true, Rejected::Dropped),
                KeyTest::Predicate(&pred),
                false,
            ),
            (
                spec(true, true, true, Rejected::Dropped),
                KeyTest::Runs(&eq),
                false,
            ),
            (
                spec(true, true, true, Rejected::Dropped),
                KeyTest::Runs(&eq),
                true,
            ),
        ];
        // Offsets and lengths are numbers.
        if V::CUDA_DECLARATION.is_empty() {
            jobs.push((non_trivial, KeyTest::Runs(&eq), false));
        }
        if same {
            jobs.extend([
                (
                    spec(false, true, false, Rejected::Dropped),
                    KeyTest::Predicate(&pred),
                    false,
                ),
                (
                    spec(false, true, false, Rejected::Reversed),
                    KeyTest::Predicate(&pred),
                    false,
                ),
                (
                    spec(false, true, false, Rejected::Separate),
                    KeyTest::Predicate(&pred),
                    false,
                ),
                (
                    spec(true, true, false, Rejected::Dropped),
                    KeyTest::Runs(&eq),
                    false,
                ),
            ]);
        }
        for (spec, test, by_key) in &jobs {
            // Non-trivial runs hold only keys in their tile (compact.rs tunes them by the key).
            let size = std::mem::size_of::<K>()
                + if spec.values && !spec.non_trivial_runs {
                    std::mem::size_of::<V>()
                } else {
                    0
                };
            let family = if *by_key {
                Family::ReduceByKey
            } else {
                Family::Compact
            };
            let mut tuning = tuning::lookup(family, ARCH, size).unwrap();
            tuning.vt = tuning.vt.min(31);
            if spec.non_trivial_runs {
                tuning = mgpu::compact::non_trivial_tuning(tuning);
            }
            let op = by_key.then_some(op);
            let src = jit::compact_source::<K, V>(spec, test, op, &tuning);
            let module = spec.module(*by_key);
            let what = format!("{spec:?}");
            let c = jit::compile_uncached(module.name(), &src, ARCH)
                .unwrap_or_else(|e| panic!("{} {} {what}: {e}", K::CUDA_TYPE, V::CUDA_TYPE));
            if no_report(&c) {
                continue;
            }
            for k in module.kernels() {
                let r = c.reports.iter().find(|r| r.name == *k).unwrap_or_else(|| {
                    panic!("no ptxas report for {k}: {:?}\nlog:\n{}", c.reports, c.log)
                });
                let line = format!(
                    "{:<18} {:<18} {:>4}x{:<2} {:<19} regs {:>3} smem {:>6} stack {} spills {}/{} {what}",
                    K::CUDA_TYPE, V::CUDA_TYPE, tuning.nt, tuning.vt, k,
                    r.registers, r.shared_bytes, r.stack_frame, r.spill_stores, r.spill_loads
                );
                assert!(r.clean(), "local memory used: {line}");
                lines.push(line);
            }
        }
    }
    lines
}

#[test]
fn compaction_kernels_compile_without_spills() {
    if !nvrtc() {
        return;
    }
    let mut lines = Vec::new();
    lines.extend(check_compact::<i32, i32>(&Op::plus()));
    lines.extend(check_compact::<i64, i64>(&Op::plus()));
    lines.extend(check_compact::<u8, u8>(&Op::plus()));
    lines.extend(check_compact::<f32, f32>(&Op::maximum()));
    lines.extend(check_compact::<f64, f64>(&Op::plus()));
    lines.extend(check_compact::<u32, u64>(&Op::plus()));
    lines.extend(check_compact::<i32, Affine>(&affine_op()));
    lines.extend(check_compact::<u16, Tagged>(&tagged_op()));
    eprintln!("{}", lines.join("\n"));
}

/// The segmented-reduction module for values `T` and offsets `O`: values (plain and mapped),
/// SpMV unary and binary (gathers lane-strided or not), direct and indirect, 32-bit and 64-bit
/// counts, marks and codes.
fn check_segreduce<T: Element, O: mgpu::Offset>(op: &Op<T>, mul: Option<&Op<T>>) -> Vec<String> {
    let mut lines = Vec::new();
    let mut kinds = vec![SegItems::Values];
    if mul.is_some() {
        kinds.extend([SegItems::SpmvUnary, SegItems::SpmvBinary]);
    }
    for items in kinds {
        for indirect in [false, true] {
            // (wide_count, empty, codes): codes (a plan's packed heads) are for direct,
            // non-empty segments.
            let mut variants = vec![
                (false, false, false),
                (false, true, false),
                (true, true, false),
            ];
            if !indirect {
                variants.extend([(false, false, true), (true, false, true)]);
            }
            // Direct SpMV gathers either way (lane-strided or each thread its own items).
            let strides = if items != SegItems::Values && !indirect {
                &[false, true][..]
            } else {
                &[false][..]
            };
            let variants = variants
                .into_iter()
                .flat_map(|v| strides.iter().map(move |&s| (v, s)));
            for ((wide_count, empty, codes), strided) in variants {
                let spec = SegReduceSpec {
                    items,
                    indirect,
                    wide_offsets: std::mem::size_of::<O>() == 8,
                    wide_count,
                    empty,
                    codes,
                    strided,
                };
                let tuning =
                    mgpu::segreduce::tuning_for::<T, O>(Some(ARCH), items, indirect).unwrap();
                let tuning = spec.tuning(&tuning);
                let mul = (items == SegItems::SpmvBinary).then_some(mul).flatten();
                let src = jit::segreduce_source::<T>(&spec, &Load::plain::<T>(), op, mul, &tuning);
                let what = format!("{spec:?}");
                let c = jit::compile_uncached(Module::SegReduce.name(), &src, ARCH)
                    .unwrap_or_else(|e| panic!("{} {what}: {e}", T::CUDA_TYPE));
                if no_report(&c) {
                    continue;
                }
                for k in Module::SegReduce.kernels() {
                    // Codes are built with byte marks only (direct, non-empty segments).
                    if *k == "mgpu_segreduce_codes" && (indirect || empty) {
                        continue;
                    }
                    let r = c.reports.iter().find(|r| r.name == *k).unwrap_or_else(|| {
                        panic!("no ptxas report for {k}: {:?}\nlog:\n{}", c.reports, c.log)
                    });
                    let line = format!(
                        "{:<18} {:<18} {:>4}x{:<2} {:<24} regs {:>3} smem {:>6} stack {} spills {}/{} {what}",
                        T::CUDA_TYPE, O::CUDA_TYPE, tuning.nt, tuning.vt, k,
                        r.registers, r.shared_bytes, r.stack_frame, r.spill_stores, r.spill_loads
                    );
                    assert!(r.clean(), "local memory used: {line}");
                    lines.push(line);
                }
            }
        }
    }
    lines
}

#[test]
fn segreduce_kernels_compile_without_spills() {
    if !nvrtc() {
        return;
    }
    let mut lines = Vec::new();
    lines.extend(check_segreduce::<i32, u32>(
        &Op::plus(),
        Some(&Op::multiplies()),
    ));
    lines.extend(check_segreduce::<f32, u32>(
        &Op::plus(),
        Some(&Op::multiplies()),
    ));
    lines.extend(check_segreduce::<f64, u32>(
        &Op::plus(),
        Some(&Op::multiplies()),
    ));
    lines.extend(check_segreduce::<f32, u64>(
        &Op::plus(),
        Some(&Op::multiplies()),
    ));
    lines.extend(check_segreduce::<i64, u64>(&Op::maximum(), None));
    lines.extend(check_segreduce::<u8, u32>(&Op::plus(), None));
    lines.extend(check_segreduce::<Affine, u32>(&affine_op(), None));
    eprintln!("{}", lines.join("\n"));
}

/// The parts of a family that the library loads (`Module::parts`: the small scan apart from the
/// look-back scan, the block sort apart from the merge passes) compile each kernel exactly as the
/// whole family's module does: same registers, shared memory, stack and spills.
#[test]
fn family_parts_compile_like_the_whole_family() {
    if !nvrtc() {
        return;
    }
    let reports = |module: Module, src: &str| {
        let c = jit::compile_uncached(module.name(), src, ARCH).unwrap();
        if no_report(&c) {
            return None;
        }
        let names: Vec<&str> = c.reports.iter().map(|r| r.name.as_str()).collect();
        let mut expect: Vec<&str> = module.kernels().to_vec();
        expect.sort_unstable();
        let mut got = names.clone();
        got.sort_unstable();
        assert_eq!(got, expect, "{module:?} compiled other kernels");
        Some(c.reports)
    };
    let compare = |family: Module, source: &dyn Fn(Module) -> String| {
        let Some(whole) = reports(family, &source(family)) else {
            return;
        };
        for &part in family.parts() {
            let Some(got) = reports(part, &source(part)) else {
                continue;
            };
            for r in got {
                let w = whole.iter().find(|w| w.name == r.name).unwrap();
                assert_eq!(&r, w, "{part:?} compiles {} differently", r.name);
            }
        }
    };
    let t = tuning::lookup(Family::Scan, ARCH, 4).unwrap();
    let plus = Op::<i32>::plus();
    compare(Module::Scan, &|m| {
        jit::source(m, Some(&plus), &Load::plain::<i32>(), &t)
    });
    let less = Comparator::<i32>::less();
    let t = tuning::lookup(Family::SortKeys, ARCH, 4).unwrap();
    compare(Module::Merge, &|m| {
        jit::sort_part_source::<i32, i32>(m, &less, SortValues::None, &t)
    });
    let t = tuning::lookup(Family::SegReduce, ARCH, 4).unwrap();
    let spec = SegReduceSpec {
        items: SegItems::Values,
        indirect: false,
        wide_offsets: false,
        wide_count: false,
        empty: false,
        codes: false,
        strided: false,
    };
    compare(Module::SegReduce, &|m| {
        jit::segreduce_part_source::<i32>(m, &spec, &Load::plain::<i32>(), &plus, None, &t)
    });
}
