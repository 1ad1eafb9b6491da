//! Kernel families as data. A family (scan, merge, compaction, ...) describes, in one place
//! beside its host code: its kernel files, its parts and their kernels, what it adds to the
//! prelude, its spec (everything a module's source depends on: the key of its modules), and its
//! kernels' argument lists (typed launches). The module cache (`Gpu::module`), the tools and the
//! compile check work from these descriptions; `jit` stays generic.

use super::jit::{ElementDesc, Prelude};
use crate::error::Result;
use crate::tuning::{self, Tuning};
use std::fmt::Debug;
use std::hash::Hash;

/// Kernels that one module compiles: a part of a family (what the library loads, so that a call
/// compiles only what it launches), or a whole family (what the tools report on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Part {
    /// The module's name in reports and cache file names.
    pub name: &'static str,
    /// The kernels it exports (`MGPU_WANT_<kernel>`; the kernel files compile only those).
    pub kernels: &'static [&'static str],
}

/// A kernel family: see the module's documentation.
pub trait KernelFamily: 'static {
    /// Everything a module's source depends on besides the part (types, expressions, variant
    /// switches, tuning): the key of its modules in memory.
    type Spec: Clone + Eq + Hash + Debug + Send + Sync + 'static;
    /// The family's name (the whole family's module name).
    const NAME: &'static str;
    /// The device files a module is made of, in order (shared headers first).
    const FILES: &'static [&'static str];
    /// The parts the library loads; together they export every kernel of the family.
    const PARTS: &'static [Part];
    /// What the family adds to the prelude after the tuning and the kernels wanted.
    fn prelude(spec: &Self::Spec, prelude: &mut Prelude);
    /// The tuning a module compiles with (`__launch_bounds__`, tile sizes).
    fn tuning(spec: &Self::Spec) -> Tuning;
    /// Whether the module's kernels gather through the L1 cache: they then take only the shared
    /// memory of their tuning's OCC CTAs per SM (`Gpu::keep_l1`).
    fn gathers(_spec: &Self::Spec, _part: &Part) -> bool {
        false
    }
    /// Whether a module of `spec` compiles `kernel` (a variant may leave one of the family's
    /// kernels out); the compile check skips those it does not.
    fn compiles(_spec: &Self::Spec, _kernel: &str) -> bool {
        true
    }
    /// The tuning-table families its modules take their tuning from.
    const TUNING: &'static [tuning::Family];
    /// The instantiations that the tools and the compile check build for `arch` (built-in
    /// element types and operators, every variant the library launches), with the table's
    /// tunings from `table`.
    fn instances(arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>>;
}

/// Where an instantiation's tuning comes from, given its tuning family and tile element size:
/// the table for an architecture ([`table_for`]), or a tool's candidate.
pub type TableTuning<'a> = &'a dyn Fn(tuning::Family, usize) -> Result<Tuning>;

/// The table's (and tuning file's) tunings for `arch`.
pub fn table_for(arch: u32) -> impl Fn(tuning::Family, usize) -> Result<Tuning> {
    move |family, size| tuning::lookup(family, arch, size)
}

/// Calls `$f::<T>($args)` for every built-in arithmetic element type.
#[macro_export]
#[doc(hidden)]
macro_rules! for_each_arithmetic {
    ($f:ident ( $($arg:expr),* )) => {{
        $f::<i8>($($arg),*)?;
        $f::<u8>($($arg),*)?;
        $f::<i16>($($arg),*)?;
        $f::<u16>($($arg),*)?;
        $f::<i32>($($arg),*)?;
        $f::<u32>($($arg),*)?;
        $f::<i64>($($arg),*)?;
        $f::<u64>($($arg),*)?;
        $f::<f32>($($arg),*)?;
        $f::<f64>($($arg),*)?;
    }};
}

/// Every kernel of family `F`, in the order of its parts, each once.
pub fn kernels<F: KernelFamily>() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = Vec::new();
    for part in F::PARTS {
        for k in part.kernels {
            if !all.contains(k) {
                all.push(k);
            }
        }
    }
    all
}

/// The source of `part` of family `F` (the whole family: `None`, every kernel that a module of
/// `spec` compiles) for `spec`.
pub fn source<F: KernelFamily>(spec: &F::Spec, part: Option<&Part>) -> String {
    let (name, kernels) = match part {
        Some(p) => (p.name, p.kernels.to_vec()),
        None => {
            let mut all = kernels::<F>();
            all.retain(|k| F::compiles(spec, k));
            (F::NAME, all)
        }
    };
    let mut prelude = Prelude::new(name, &kernels, &F::tuning(spec));
    F::prelude(spec, &mut prelude);
    prelude.finish(F::FILES)
}

/// The part of `F` named `name`.
pub fn part<F: KernelFamily>(name: &str) -> &'static Part {
    F::PARTS
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{} has no part {name}", F::NAME))
}

/// One module the tools and the compile check build: a family's instantiation for one spec,
/// whole (`kernels`, `source`) and as the parts the library loads.
#[derive(Clone, Debug)]
pub struct Instance {
    /// The family's name.
    pub family: &'static str,
    /// The tuning family it takes its tuning from.
    pub tuning_family: tuning::Family,
    /// The element type that names it (a reduction's values, a sort's keys).
    pub element: ElementDesc,
    /// What the instantiation is (operators, variant), for reports.
    pub label: String,
    /// The tuning it compiles with.
    pub tuning: Tuning,
    /// The kernels of the family that this instantiation compiles.
    pub kernels: Vec<&'static str>,
    /// The whole family's source (the kernels it compiles).
    pub source: String,
    /// The parts the library loads, those with a kernel it compiles: (part, source).
    pub parts: Vec<(Part, String)>,
    /// Its kernels gather through the L1 cache (their shared-memory carveout is limited).
    pub gathers: bool,
    /// The variant a primitive's default call runs (built-in operator, plain input): what `mgpu
    /// tune` checks each candidate tuning with.
    pub primary: bool,
}

impl Instance {
    /// The instantiation of `F` for `spec`, named by `element`, tuned from `tuning_family`.
    pub fn of<F: KernelFamily>(
        spec: &F::Spec,
        tuning_family: tuning::Family,
        element: ElementDesc,
        label: impl Into<String>,
    ) -> Instance {
        Instance {
            family: F::NAME,
            tuning_family,
            element,
            label: label.into(),
            tuning: F::tuning(spec),
            kernels: kernels::<F>()
                .into_iter()
                .filter(|k| F::compiles(spec, k))
                .collect(),
            source: source::<F>(spec, None),
            parts: F::PARTS
                .iter()
                .filter(|p| p.kernels.iter().any(|k| F::compiles(spec, k)))
                .map(|p| (*p, source::<F>(spec, Some(p))))
                .collect(),
            gathers: F::PARTS.iter().any(|p| F::gathers(spec, p)),
            primary: false,
        }
    }

    /// The instance, marked primary or not.
    pub fn primary(self, primary: bool) -> Instance {
        Instance { primary, ..self }
    }
}

/// A kernel's argument list.
///
/// # Safety
/// The implementor's fields, in order, have the types and layout of the parameters of the kernel
/// `KERNEL` in its `.cu` file; written once per kernel with [`kernel_args!`](crate::kernel_args),
/// beside its family.
pub unsafe trait KernelArgs {
    /// The kernel's name.
    const KERNEL: &'static str;
    /// The kernel's parameter list for the driver's `cuLaunchKernelEx`: a pointer to each field.
    fn params(&self) -> Vec<*mut std::ffi::c_void>;
}

/// Declares a kernel's argument list: a struct whose fields are the kernel's parameters in
/// order, and its [`KernelArgs`] implementation. The invocation carries the `// SAFETY:` comment
/// that names the `.cu` signature it matches.
#[macro_export]
#[doc(hidden)]
macro_rules! kernel_args {
    ($(#[$meta:meta])* $name:ident $(<$g:ident>)? = $kernel:literal { $($field:ident: $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        pub(crate) struct $name $(<$g: $crate::Element>)? { $(pub $field: $ty),* }
        // SAFETY: the caller of the macro names the kernel whose parameters the fields match.
        unsafe impl $(<$g: $crate::Element>)? $crate::cuda::family::KernelArgs for $name $(<$g>)? {
            const KERNEL: &'static str = $kernel;
            fn params(&self) -> Vec<*mut ::std::ffi::c_void> {
                // Each field's type is one the driver copies as a kernel parameter.
                fn param<T: cudarc::driver::DeviceRepr>(field: &T) -> *mut ::std::ffi::c_void {
                    field as *const T as *mut ::std::ffi::c_void
                }
                vec![$( param(&self.$field) ),*]
            }
        }
    };
}

/// A family as the tools see it (object-safe): [`registry`](super::registry::FAMILIES) lists
/// one for each family.
pub trait Registered: Sync {
    /// The family's name.
    fn name(&self) -> &'static str;
    /// Its parts.
    fn parts(&self) -> &'static [Part];
    /// Every kernel.
    fn kernels(&self) -> Vec<&'static str>;
    /// The tuning-table families it takes tunings from.
    fn tuning_families(&self) -> &'static [tuning::Family];
    /// Its instantiations for `arch` with tunings from `table`.
    fn instances(&self, arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>>;
}

/// The registry's entry of family `F`.
pub struct Entry<F>(std::marker::PhantomData<fn() -> F>);

impl<F> Entry<F> {
    /// The entry.
    pub const NEW: Entry<F> = Entry(std::marker::PhantomData);
}

impl<F: KernelFamily> Registered for Entry<F> {
    fn name(&self) -> &'static str {
        F::NAME
    }
    fn parts(&self) -> &'static [Part] {
        F::PARTS
    }
    fn kernels(&self) -> Vec<&'static str> {
        kernels::<F>()
    }
    fn tuning_families(&self) -> &'static [tuning::Family] {
        F::TUNING
    }
    fn instances(&self, arch: u32, table: TableTuning<'_>) -> Result<Vec<Instance>> {
        F::instances(arch, table)
    }
}
