//! Run-time compilation, generic over kernel families: the prelude builder (tuning, element
//! types, the input's load, functors), NVRTC compile to a cubin, ptxas's report, the disk cache.
//! What a family adds to its modules lives beside its host code (`cuda::family`).

use crate::error::{Error, Result};
use crate::tuning::Tuning;
use crate::Element;
use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};
use std::ffi::CString;
use std::fmt::Display;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// The device headers kernel files build on, by layer (`kernels/`), and the stacks of them that
/// several families include.
pub mod headers {
    macro_rules! header {
        (intrinsics) => {
            include_str!("kernels/intrinsics.cuh")
        };
        (loadstore) => {
            include_str!("kernels/loadstore.cuh")
        };
        (cta_reduce) => {
            include_str!("kernels/cta_reduce.cuh")
        };
        (cta_scan) => {
            include_str!("kernels/cta_scan.cuh")
        };
        (lookback) => {
            include_str!("kernels/lookback.cuh")
        };
        (segscan) => {
            include_str!("kernels/segscan.cuh")
        };
        (cta_merge) => {
            include_str!("kernels/cta_merge.cuh")
        };
        (radix_order) => {
            include_str!("kernels/radix_order.cuh")
        };
    }
    /// Word-wise shuffles, relaxed / acquire / release accesses, L2 loads, cp.async.
    pub const INTRINSICS: &str = header!(intrinsics);
    /// `Input` and tile <-> shared memory movement.
    pub const LOADSTORE: &str = header!(loadstore);
    /// The ordered warp scan, and CTA reduce.
    pub const CTA_REDUCE: &str = header!(cta_reduce);
    /// Merge path search, serial merge, odd-even transposition sort.
    pub const CTA_MERGE: &str = header!(cta_merge);
    /// `radix_order`: the order-preserving numbers of the built-in key types.
    pub const RADIX_ORDER: &str = header!(radix_order);
    /// The CTA scan (after [`CTA_REDUCE`]).
    pub const CTA_SCAN: &str = header!(cta_scan);
    /// What a look-back kernel builds on: intrinsics, load / store, CTA reduce and scan, the
    /// look-back (tile status and the ticketed tile loop).
    pub const LOOKBACK_TILES: &str = concat!(
        header!(intrinsics),
        header!(loadstore),
        header!(cta_reduce),
        header!(cta_scan),
        header!(lookback)
    );
    /// The look-back without `Input`, for kernels that read plain arrays (the radix sort).
    pub const LOOKBACK: &str = concat!(
        header!(intrinsics),
        header!(cta_reduce),
        header!(cta_scan),
        header!(lookback)
    );
    /// [`LOOKBACK_TILES`] and the (runs, value) pair of a segmented scan: compaction,
    /// reduce-by-key and the segmented reduction.
    pub const RUNS_TILES: &str = concat!(
        header!(intrinsics),
        header!(loadstore),
        header!(cta_reduce),
        header!(cta_scan),
        header!(lookback),
        header!(segscan)
    );
}

/// A module's source under construction: the generated prelude (tuning, kernels wanted, types,
/// functors) that the kernel files are compiled after.
pub struct Prelude {
    source: String,
    declared: Vec<&'static str>,
}

impl Prelude {
    /// A prelude for module `name` that compiles `kernels` (`MGPU_WANT_<kernel>`) with `tuning`
    /// (`MGPU_NT`, `MGPU_VT`, `MGPU_OCC`, `MGPU_BACKOFF`).
    pub fn new(name: &str, kernels: &[&str], tuning: &Tuning) -> Prelude {
        let mut p = Prelude {
            source: String::with_capacity(32 * 1024),
            declared: Vec::new(),
        };
        p.source
            .push_str(&format!("// mgpu {name} kernels, generated\n"));
        for k in kernels {
            p.define(&format!("MGPU_WANT_{k}"), 1);
        }
        p.define("MGPU_NT", tuning.nt)
            .define("MGPU_VT", tuning.vt)
            .define("MGPU_OCC", tuning.occ)
            .define("MGPU_BACKOFF", tuning.backoff_ns);
        p
    }

    /// `#define name value`.
    pub fn define(&mut self, name: &str, value: impl Display) -> &mut Prelude {
        self.source.push_str(&format!("#define {name} {value}\n"));
        self
    }

    /// Source text as it is.
    pub fn raw(&mut self, text: &str) -> &mut Prelude {
        self.source.push_str(text);
        self.source.push('\n');
        self
    }

    /// An element type's declaration (once per module) and `typedef` under `alias`, with a check
    /// that the CUDA declaration matches the Rust type's size and alignment.
    pub fn element(&mut self, alias: &str, element: &ElementDesc) -> &mut Prelude {
        self.declare(element.declaration);
        self.source.push_str(&typedef(
            element.cuda_type,
            alias,
            element.size,
            element.align,
        ));
        self
    }

    fn declare(&mut self, declaration: &'static str) {
        if !declaration.is_empty() && !self.declared.contains(&declaration) {
            self.declared.push(declaration);
            self.source.push_str(declaration);
            self.source.push('\n');
        }
    }

    /// Helper definitions of an expression, unless another functor brought the same already.
    fn helpers(&mut self, helpers: &str) {
        if !helpers.is_empty() && !self.source.contains(helpers) {
            self.source.push_str(helpers);
        }
    }

    /// `struct name` whose `operator()` (`signature`: return type and parameters, e.g. `"bool
    /// operator()(const T& x)"`) returns the expression.
    pub fn functor(&mut self, name: &str, signature: &str, expr: &Expr) -> &mut Prelude {
        self.helpers(&expr.helpers);
        self.source.push_str(&format!(
            "\nstruct {name} {{\n  __device__ __forceinline__ {signature} const {{\n    return ({});\n  }}\n}};\n",
            expr.expression
        ));
        self
    }

    /// The binary operator `name` (`Op`, `Mul`) over the type `alias`. The expression is written
    /// over `T`: for another alias (reduce-by-key's values `V`) `T` names that type inside it.
    pub fn op(&mut self, name: &str, alias: &str, op: &Expr) -> &mut Prelude {
        if alias == "T" {
            return self.functor(name, "T operator()(const T& a, const T& b)", op);
        }
        self.helpers(&op.helpers);
        self.source.push_str(&format!(
            "\nstruct {name} {{\n#define T {alias}\n  __device__ __forceinline__ {alias} operator()(const {alias}& a, const {alias}& b) const {{\n    \
             return ({});\n  }}\n#undef T\n}};\n",
            op.expression
        ));
        self
    }

    /// The input `In`, `MapIn` (and `Count`) of a kernel that reads its `T`s as `load` says
    /// (after `T`'s typedef).
    pub fn load(&mut self, load: &Load) -> &mut Prelude {
        self.define("MGPU_LOAD_PLAIN", load.is_plain() as u32)
            .define("MGPU_COUNTING", load.counting.is_some() as u32);
        let input = &load.input;
        self.declare(input.declaration);
        self.source
            .push_str(&typedef(input.cuda_type, "In", input.size, input.align));
        let identity = Expr::new("x", "");
        self.functor(
            "MapIn",
            "T operator()(const In& x)",
            load.map.as_ref().unwrap_or(&identity),
        );
        if let Some(e) = &load.counting {
            self.functor(
                "Count",
                "T operator()(T start, unsigned long long i)",
                &Expr::new(e, ""),
            );
        }
        self
    }

    /// The whole source: the prelude, then `files` in order.
    pub fn finish(mut self, files: &[&str]) -> String {
        for f in files {
            self.source.push_str(f);
            self.source.push('\n');
        }
        self.source
    }
}

fn typedef(ty: &str, alias: &str, size: usize, align: usize) -> String {
    format!(
        "typedef {ty} {alias};\nstatic_assert(sizeof({alias}) == {size} && alignof({alias}) == {align}, \
         \"the CUDA declaration of {ty} does not match the Rust type's size {size} / alignment {align}\");\n",
    )
}

/// Whether two texts of a module's cache key are equal, empty ones by their length alone: an
/// empty `str` points at a dangling address, and glibc's AVX-512 `memcmp` took 135 ns to compare
/// zero bytes there (H200 host, Xeon, glibc 2.39; 3 ns for a short text). Every call looks its
/// modules up, and their keys hold several empty declarations and helpers.
fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}

/// An element type as a module sees it: its CUDA name and declaration, size and alignment.
// The equality is the derived one, by `same_text`: the derived hash agrees with it.
#[allow(clippy::derived_hash_with_manual_eq)]
#[derive(Clone, Copy, Debug, Eq, Hash)]
pub struct ElementDesc {
    /// The CUDA C++ name (`Element::CUDA_TYPE`).
    pub cuda_type: &'static str,
    /// The CUDA C++ declaration (`Element::CUDA_DECLARATION`).
    pub declaration: &'static str,
    /// Size in bytes.
    pub size: usize,
    /// Alignment in bytes.
    pub align: usize,
}

impl PartialEq for ElementDesc {
    fn eq(&self, other: &Self) -> bool {
        same_text(self.cuda_type, other.cuda_type)
            && same_text(self.declaration, other.declaration)
            && self.size == other.size
            && self.align == other.align
    }
}

impl ElementDesc {
    /// The description of `T`.
    pub fn of<T: Element>() -> ElementDesc {
        ElementDesc {
            cuda_type: T::CUDA_TYPE,
            declaration: T::CUDA_DECLARATION,
            size: std::mem::size_of::<T>(),
            align: std::mem::align_of::<T>(),
        }
    }
}

/// A CUDA expression (an operator's, comparator's, predicate's, map's) and the helper definitions
/// it needs: what a module's functor is made of, and part of its cache key.
#[allow(clippy::derived_hash_with_manual_eq)] // the equality is the derived one, by `same_text`
#[derive(Clone, Debug, Eq, Hash)]
pub struct Expr {
    /// The expression.
    pub expression: String,
    /// Definitions it uses (devices functions, constants).
    pub helpers: String,
}

impl PartialEq for Expr {
    fn eq(&self, other: &Self) -> bool {
        same_text(&self.expression, &other.expression) && same_text(&self.helpers, &other.helpers)
    }
}

impl Expr {
    /// An expression and its helpers.
    pub fn new(expression: &str, helpers: &str) -> Expr {
        Expr {
            expression: expression.to_string(),
            helpers: helpers.to_string(),
        }
    }

    /// An operator's expression.
    pub fn of_op<T: Element>(op: &crate::Op<T>) -> Expr {
        Expr::new(op.cuda_expression(), op.cuda_helpers())
    }
}

/// How a reduce, scan or transform kernel reads its input and turns it into `T`s: `In`s in
/// memory, mapped as they are loaded (plain: `In` is `T`, unmapped), or a counting sequence
/// generated from its start value. Part of a module's cache key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Load {
    /// `In`, the element type in memory.
    input: ElementDesc,
    /// The map's CUDA expression over `x`.
    map: Option<Expr>,
    /// The counting sequence's CUDA expression over `start` and `i` (never empty).
    counting: Option<String>,
}

impl Load {
    /// `T`s in memory, read as they are.
    pub fn plain<T: Element>() -> Load {
        Load::plain_desc(&ElementDesc::of::<T>())
    }

    /// Elements of `element` in memory, read as they are.
    pub fn plain_desc(element: &ElementDesc) -> Load {
        Load {
            input: *element,
            map: None,
            counting: None,
        }
    }

    /// `I`s in memory, each mapped by `map` as it is loaded.
    pub fn mapped<I: Element, O: Element>(map: &crate::Map<I, O>) -> Load {
        Load {
            map: Some(Expr::new(map.cuda_expression(), map.cuda_helpers())),
            ..Load::plain::<I>()
        }
    }

    /// `start + i`, as [`Arithmetic::count_from`](crate::Arithmetic) computes it.
    pub fn counting<T: crate::Arithmetic>() -> Load {
        let expr = match T::CUDA_WRAP_TYPE {
            "" => "start + (T)i".to_string(),
            w => format!("(T)(({w})start + ({w})i)"),
        };
        Load {
            counting: Some(expr),
            ..Load::plain::<T>()
        }
    }

    /// True for `T`s read as they are.
    pub fn is_plain(&self) -> bool {
        self.map.is_none() && self.counting.is_none()
    }
}

/// What ptxas reported for one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelReport {
    /// The kernel's name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory in bytes.
    pub shared_bytes: u32,
    /// Stack frame in bytes (non-zero: some array lives in local memory).
    pub stack_frame: u32,
    /// Bytes of spill stores.
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
}

impl KernelReport {
    /// True when nothing went to local memory.
    pub fn clean(&self) -> bool {
        self.stack_frame == 0 && self.spill_stores == 0 && self.spill_loads == 0
    }
}

/// A compiled module: the cubin and what ptxas said about each kernel.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The cubin for the exact architecture.
    pub cubin: Vec<u8>,
    /// ptxas's per-kernel report (empty when the cubin came from the disk cache).
    pub reports: Vec<KernelReport>,
    /// NVRTC's program log (empty when the cubin came from the disk cache).
    pub log: String,
}

static COMPILES: AtomicU64 = AtomicU64::new(0);
static COMPILE_NANOS: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);

/// Counters of the JIT in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    /// NVRTC compilations run.
    pub compiles: u64,
    /// Total time spent in them, in milliseconds.
    pub compile_ms: u64,
    /// Modules found in the on-disk cache instead.
    pub disk_hits: u64,
}

/// The JIT counters of this process.
pub fn stats() -> JitStats {
    JitStats {
        compiles: COMPILES.load(Ordering::Relaxed),
        compile_ms: COMPILE_NANOS.load(Ordering::Relaxed) / 1_000_000,
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
    }
}

/// Whether NVRTC can be loaded (without it nothing can be compiled). The first call searches the
/// usual places ([`discover::nvrtc`](super::discover::nvrtc)) and opens what it finds, so that
/// cudarc then uses it.
pub fn nvrtc_available() -> bool {
    // SAFETY: only probes whether the shared library can be opened; cudarc panics on first use
    // otherwise, so this must come first.
    super::discover::nvrtc().found.is_some() && unsafe { nvrtc_sys::is_culib_present() }
}

/// NVRTC's version as (major, minor); [`Error::NoNvrtc`] when it cannot be loaded.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    static V: OnceLock<std::result::Result<(i32, i32), String>> = OnceLock::new();
    V.get_or_init(|| {
        if !nvrtc_available() {
            return Err(format!("libnvrtc {}", super::discover::nvrtc()));
        }
        let (mut major, mut minor) = (0, 0);
        // SAFETY: plain out-parameters; the library is present (checked above).
        let r = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
        if r != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
            return Err(format!("nvrtcVersion failed: {r:?}"));
        }
        Ok((major, minor))
    })
    .clone()
    .map_err(Error::NoNvrtc)
}

fn options(arch: u32) -> Vec<String> {
    vec![
        format!("--gpu-architecture=sm_{arch}"),
        "-std=c++17".into(),
        "--ptxas-options=-v".into(),
        // ptxas compiles a module's kernels on parallel threads (0: up to one per CPU): a part's
        // ptxas time becomes its largest kernel's, not their sum (issue 32; NVRTC 13.0, 2 cores:
        // radix passes f32 ptxas 498 -> 284 ms, segreduce_helpers 381 -> 277 ms). Same SASS and
        // ptxas reports with NVRTC 13.0.88 and 13.5 for every part measured. NVVM's own
        // `--split-compile` is left out: it changed the code (mgpu_merge4_pass f32 spilled).
        "--ptxas-options=--split-compile=0".into(),
    ]
}

/// 128-bit FNV-1a: a stable hash for cache keys (no dependency, stable across Rust versions).
pub(crate) fn stable_hash(parts: &[&[u8]]) -> u128 {
    let mut h: u128 = 0x6c62272e07bb014262b821756295c58d;
    for p in parts {
        for &b in p.iter().chain(&[0xff]) {
            h ^= b as u128;
            h = h.wrapping_mul(0x0000000001000000000000000000013B);
        }
    }
    h
}

/// The cache key of a module: its full source, the options, the architecture and NVRTC's version.
pub fn cache_key(source: &str, arch: u32) -> Result<u128> {
    let (ma, mi) = nvrtc_version()?;
    let opts = options(arch).join(" ");
    Ok(stable_hash(&[
        source.as_bytes(),
        opts.as_bytes(),
        format!("{arch} {ma}.{mi}").as_bytes(),
    ]))
}

/// The on-disk cache folder: `MGPU_CACHE_DIR`, else `$XDG_CACHE_HOME/mgpu`, else `~/.cache/mgpu`.
pub fn cache_dir() -> Option<PathBuf> {
    // An empty variable counts as unset.
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(d) = var("MGPU_CACHE_DIR") {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(d).join("mgpu"));
    }
    var("HOME").map(|h| PathBuf::from(h).join(".cache").join("mgpu"))
}

/// Compiles `source` for `sm_{arch}` (or takes the cubin from the disk cache).
/// `name` is used in error messages only.
pub fn compile(name: &str, source: &str, arch: u32) -> Result<Compiled> {
    let key = cache_key(source, arch)?;
    let path = cache_dir().map(|d| d.join(format!("{key:032x}.sm{arch}.cubin")));
    if let Some(p) = &path {
        if let Ok(cubin) = std::fs::read(p) {
            DISK_HITS.fetch_add(1, Ordering::Relaxed);
            return Ok(Compiled {
                cubin,
                reports: Vec::new(),
                log: String::new(),
            });
        }
    }
    let compiled = compile_program(name, source, arch)?;
    if let Some(p) = &path {
        // A cache that cannot be written is not an error: the next process compiles again.
        let _ = write_atomically(p, &compiled.cubin);
    }
    Ok(compiled)
}

fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().expect("cache files live in a folder");
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// Compiles without looking at the disk cache, and returns ptxas's report.
pub fn compile_uncached(name: &str, source: &str, arch: u32) -> Result<Compiled> {
    // One report-wanting compile at a time: NVRTC 13.0 was once seen losing ptxas's report when
    // programs compiled concurrently (not reproduced since with NVRTC 13.0.88 or 13.5).
    static NVRTC_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _serial = NVRTC_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    compile_program(name, source, arch)
}

/// Compiles with NVRTC. Separate programs compile concurrently: the library's own compiles
/// (`compile`) need no report, so threads that first use different modules do not wait for each
/// other (`mgpu demo` runs its demos so).
fn compile_program(name: &str, source: &str, arch: u32) -> Result<Compiled> {
    nvrtc_version()?;
    let start = Instant::now();
    let c_src = CString::new(source)
        .map_err(|_| Error::InvalidArgument("kernel source contains a NUL byte".into()))?;
    let c_name = CString::new(format!("{name}.cu")).unwrap();
    let prog = nvrtc::create_program(&c_src, Some(&c_name))
        .map_err(|e| Error::NoNvrtc(format!("nvrtcCreateProgram: {e:?}")))?;
    let opts = options(arch);
    // SAFETY: `prog` is a live program created above and destroyed exactly once below; the
    // buffers passed to NVRTC are sized by the matching size queries.
    let result = unsafe {
        let compiled = nvrtc::compile_program(prog, &opts);
        let log = nvrtc::get_program_log(prog)
            .map(|l| {
                let bytes: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            })
            .unwrap_or_default();
        let out = match compiled {
            Err(_) => Err(Error::Compile {
                kernel: name.to_string(),
                arch: format!("sm_{arch}"),
                log,
            }),
            Ok(()) => {
                let mut size = 0usize;
                let r = nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size);
                let mut cubin = vec![0u8; size];
                let r2 = if r == nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
                    nvrtc_sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut _)
                } else {
                    r
                };
                if r2 != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
                    Err(Error::NoNvrtc(format!("nvrtcGetCUBIN: {r2:?}")))
                } else {
                    Ok(Compiled {
                        cubin,
                        reports: parse_ptxas_log(&log),
                        log,
                    })
                }
            }
        };
        let _ = nvrtc::destroy_program(prog);
        out
    };
    COMPILES.fetch_add(1, Ordering::Relaxed);
    COMPILE_NANOS.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
    result
}

/// Parses ptxas's `-v` output: per function, registers, shared memory, stack and spills.
pub fn parse_ptxas_log(log: &str) -> Vec<KernelReport> {
    let mut out: Vec<KernelReport> = Vec::new();
    let number_before = |line: &str, what: &str| -> Option<u32> {
        let i = line.find(what)?;
        line[..i].split_whitespace().last()?.parse().ok()
    };
    for line in log.lines() {
        if let Some(i) = line.find("Function properties for ") {
            out.push(KernelReport {
                name: line[i + 24..].trim().to_string(),
                ..Default::default()
            });
        } else if let Some(i) = line.find("Compiling entry function '") {
            let rest = &line[i + 26..];
            let name = rest.split('\'').next().unwrap_or("").to_string();
            if out.last().map(|r| r.name != name).unwrap_or(true) {
                out.push(KernelReport {
                    name,
                    ..Default::default()
                });
            }
        } else if let Some(r) = out.last_mut() {
            if line.contains("stack frame") {
                r.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
                r.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
                r.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used ") && line.contains("registers") {
                r.registers = number_before(line, "registers").unwrap_or(0);
                r.shared_bytes = number_before(line, "bytes smem").unwrap_or(0);
            }
        }
    }
    // ptxas may print both headers for one kernel; keep one report per name.
    out.dedup_by(|b, a| {
        if a.name == b.name {
            a.registers = a.registers.max(b.registers);
            a.shared_bytes = a.shared_bytes.max(b.shared_bytes);
            a.stack_frame = a.stack_frame.max(b.stack_frame);
            a.spill_stores = a.spill_stores.max(b.spill_stores);
            a.spill_loads = a.spill_loads.max(b.spill_loads);
            true
        } else {
            false
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn module_keys_compare_as_their_texts() {
        for (a, b) in [
            ("", ""),
            ("", "x"),
            ("int", "int"),
            ("int", "unt"),
            ("ab", "abc"),
        ] {
            assert_eq!(same_text(a, b), a == b, "{a:?} {b:?}");
        }
        let plus = Expr::new("a + b", "");
        let with_helper = Expr::new("a + b", "#define X 1");
        assert_eq!(plus, Expr::new("a + b", ""));
        assert_ne!(plus, with_helper);
        assert_ne!(plus, Expr::new("a - b", ""));
        let loads = [
            Load::plain::<i32>(),
            Load::plain::<u32>(),
            Load::plain::<f32>(),
            Load::counting::<i32>(),
            Load::counting::<u32>(),
            Load::mapped(&crate::Map::<i32, i32>::square()),
        ];
        for (i, a) in loads.iter().enumerate() {
            for (j, b) in loads.iter().enumerate() {
                assert_eq!(a == b, i == j, "{a:?} against {b:?}");
            }
        }
        assert_eq!(
            loads.iter().cloned().collect::<HashSet<_>>().len(),
            loads.len()
        );
        assert_eq!(ElementDesc::of::<i32>(), ElementDesc::of::<i32>());
        assert_ne!(ElementDesc::of::<i32>(), ElementDesc::of::<u32>());
    }
}
