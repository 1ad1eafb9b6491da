//! Operators: an associative binary function with its identity, given once for each backend.

use crate::Element;
use std::borrow::Cow;
use std::sync::Arc;

/// A name, a CPU function and a CUDA expression with its helpers: what [`Op`], [`Comparator`],
/// [`Predicate`], [`Equality`] and [`Map`](crate::Map) each carry.
pub(crate) struct CudaFn<F: ?Sized> {
    pub(crate) name: Cow<'static, str>,
    pub(crate) cpu: Arc<F>,
    pub(crate) expression: Cow<'static, str>,
    pub(crate) helpers: Cow<'static, str>,
    /// Set by `Comparator::less` / `greater` only: the order a radix sort can take over.
    pub(crate) builtin_order: Option<BuiltinOrder>,
}

/// A built-in comparator's direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BuiltinOrder {
    Less,
    Greater,
}

// By hand: a derive would ask `F: Clone`, which no `dyn Fn` is.
impl<F: ?Sized> Clone for CudaFn<F> {
    fn clone(&self) -> Self {
        CudaFn {
            name: self.name.clone(),
            cpu: Arc::clone(&self.cpu),
            expression: self.expression.clone(),
            helpers: self.helpers.clone(),
            builtin_order: self.builtin_order,
        }
    }
}

impl<F: ?Sized> CudaFn<F> {
    pub(crate) fn new(
        name: impl Into<Cow<'static, str>>,
        cpu: Arc<F>,
        expression: impl Into<Cow<'static, str>>,
    ) -> Self {
        CudaFn {
            name: name.into(),
            cpu,
            expression: expression.into(),
            helpers: Cow::Borrowed(""),
            builtin_order: None,
        }
    }

    /// NVRTC-compiles the expression: `check_cuda` of each type.
    pub(crate) fn check<I: Element, O: Element>(
        &self,
        what: &str,
        binary: bool,
        result: &str,
        arch: u32,
    ) -> crate::Result<()> {
        crate::check::check::<I, O>(
            &crate::check::Expression {
                what,
                name: &self.name,
                helpers: &self.helpers,
                expression: &self.expression,
                binary,
                result,
            },
            arch,
        )
    }
}

/// Writes a type around a [`CudaFn`], with the public API the expression-carrying types share.
/// `@api` alone gives `with_cuda_helpers`, `name`, `cuda_expression`, `cuda_helpers` and
/// `check_cuda`; the full form adds the struct, `Debug`, `new` and the CPU call.
macro_rules! cuda_fn_api {
    (
        $(#[$doc:meta])*
        pub struct $name:ident<$($g:ident),+>;
        $(#[$new_doc:meta])*
        fn new;
        $(#[$call_doc:meta])*
        fn $call:ident($($arg:ident: $arg_ty:ty),+) -> $ret:ty;
        $($api:tt)*
    ) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name<$($g),+> {
            f: $crate::op::CudaFn<dyn Fn($($arg_ty),+) -> $ret + Send + Sync>,
        }

        impl<$($g),+> std::fmt::Debug for $name<$($g),+> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("name", &self.f.name)
                    .field("cuda", &self.f.expression)
                    .finish()
            }
        }

        impl<$($g: $crate::Element),+> $name<$($g),+> {
            $(#[$new_doc])*
            pub fn new(
                name: impl Into<std::borrow::Cow<'static, str>>,
                cpu: impl Fn($($arg_ty),+) -> $ret + Send + Sync + 'static,
                cuda_expression: impl Into<std::borrow::Cow<'static, str>>,
            ) -> Self {
                let cpu = std::sync::Arc::new(cpu);
                $name { f: $crate::op::CudaFn::new(name, cpu, cuda_expression) }
            }

            $(#[$call_doc])*
            #[inline]
            pub fn $call(&self, $($arg: $arg_ty),+) -> $ret {
                (self.f.cpu)($($arg),+)
            }
        }

        $crate::op::cuda_fn_api!(@api $name<$($g),+> $($api)*);
    };
    (
        @api $name:ident<$($g:ident),+>
        $what:literal over $over:literal;
        $(#[$with_doc:meta])*
        fn with_cuda_helpers;
        $(#[$helpers_doc:meta])*
        fn cuda_helpers;
        $(#[$check_doc:meta])*
        fn check_cuda::<$ci:ty, $co:ty>(binary: $binary:literal, result: $result:literal);
    ) => {
        impl<$($g: $crate::Element),+> $name<$($g),+> {
            $(#[$with_doc])*
            pub fn with_cuda_helpers(
                mut self,
                source: impl Into<std::borrow::Cow<'static, str>>,
            ) -> Self {
                self.f.helpers = source.into();
                self
            }

            #[doc = concat!("The ", $what, "'s name.")]
            pub fn name(&self) -> &str {
                &self.f.name
            }

            #[doc = concat!("The CUDA C++ expression over ", $over, ".")]
            pub fn cuda_expression(&self) -> &str {
                &self.f.expression
            }

            $(#[$helpers_doc])*
            pub fn cuda_helpers(&self) -> &str {
                &self.f.helpers
            }

            $(#[$check_doc])*
            pub fn check_cuda(&self, arch: u32) -> $crate::Result<()> {
                self.f.check::<$ci, $co>($what, $binary, $result, arch)
            }
        }
    };
}
pub(crate) use cuda_fn_api;

/// An associative binary operator with an identity, runnable on the CPU (a Rust function) and on the
/// GPU (a CUDA C++ expression over the operands `a` and `b`).
///
/// Operators are treated as non-commutative unless declared [`commutative`](Op::commutative):
/// order-preserving code paths are then used, which are slightly slower for reduce.
///
/// ```
/// use mgpu::Op;
/// // Built-ins:
/// let sum = Op::<i32>::plus();
/// assert_eq!(sum.apply(2, 3), 5);
/// // A custom commutative operator:
/// let max_abs = Op::new("max_abs", 0i32, |a: i32, b: i32| a.abs().max(b.abs()),
///                       "max(abs(a), abs(b))").commutative(true);
/// assert_eq!(max_abs.apply(-7, 3), 7);
/// ```
#[derive(Clone)]
pub struct Op<T> {
    f: CudaFn<dyn Fn(T, T) -> T + Send + Sync>,
    identity: T,
    commutative: bool,
}

impl<T: std::fmt::Debug> std::fmt::Debug for Op<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Op")
            .field("name", &self.f.name)
            .field("identity", &self.identity)
            .field("cuda", &self.f.expression)
            .field("commutative", &self.commutative)
            .finish()
    }
}

impl<T: Element> Op<T> {
    /// A custom operator. `cpu` and `cuda_expression` must compute the same function; `identity`
    /// must satisfy `op(identity, x) == op(x, identity) == x`.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        identity: T,
        cpu: impl Fn(T, T) -> T + Send + Sync + 'static,
        cuda_expression: impl Into<Cow<'static, str>>,
    ) -> Self {
        Op {
            f: CudaFn::new(name, Arc::new(cpu), cuda_expression),
            identity,
            commutative: false,
        }
    }

    /// Declares whether `op(a, b) == op(b, a)`; commutative operators may take faster paths.
    pub fn commutative(mut self, commutative: bool) -> Self {
        self.commutative = commutative;
        self
    }

    /// Applies the operator on the CPU.
    #[inline]
    pub fn apply(&self, a: T, b: T) -> T {
        (self.f.cpu)(a, b)
    }

    /// The identity element.
    pub fn identity(&self) -> T {
        self.identity
    }

    /// Whether the operator was declared commutative.
    pub fn is_commutative(&self) -> bool {
        self.commutative
    }
}

cuda_fn_api! {
    @api Op<T> "operator" over "`a` and `b`";
    /// CUDA C++ device functions the expression calls (placed before it in the kernel source).
    fn with_cuda_helpers;
    /// CUDA C++ helper source for the expression.
    fn cuda_helpers;
    /// Compiles the CUDA expression (with its helpers) for `sm_{arch}` with NVRTC, without a
    /// GPU (NVRTC alone suffices): a bad expression is [`Error::Compile`](crate::Error::Compile)
    /// with NVRTC's log, caught before a primitive uses it; [`Error::NoNvrtc`](crate::Error::NoNvrtc)
    /// where NVRTC is not found.
    ///
    /// ```
    /// use mgpu::{Error, Op};
    /// let typo = Op::<f32>::new("typo", 0.0, |a, b| a + b, "a +* b");
    /// match typo.check_cuda(90) {
    ///     Err(Error::Compile { log, .. }) => assert!(log.contains("error")),
    ///     Err(Error::NoNvrtc(_)) => {} // no NVRTC here: nothing to check with
    ///     other => panic!("{other:?}"),
    /// }
    /// if mgpu::cuda::jit::nvrtc_available() {
    ///     Op::<f32>::plus().check_cuda(90)?;
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    fn check_cuda::<T, T>(binary: true, result: "T");
}

/// Built-in arithmetic element types (the ten primitive numbers).
pub trait Arithmetic: Element + PartialOrd {
    #[doc(hidden)]
    const ZERO: Self;
    #[doc(hidden)]
    const ONE: Self;
    /// Smallest value (`-inf` for floats): the identity of `maximum`.
    const LOWEST: Self;
    /// Largest value (`+inf` for floats): the identity of `minimum`.
    const HIGHEST: Self;
    #[doc(hidden)]
    fn add(a: Self, b: Self) -> Self;
    #[doc(hidden)]
    fn mul(a: Self, b: Self) -> Self;
    /// The CUDA type in which integer `+` and `*` wrap without undefined behaviour.
    #[doc(hidden)]
    const CUDA_WRAP_TYPE: &'static str;
    /// `start + i`: wrapping for integers; for floats, `i` converted to the type (rounded to
    /// nearest), then added. The CUDA side is `Load::counting`'s expression.
    #[doc(hidden)]
    fn count_from(start: Self, i: u64) -> Self;
    /// The key's bits made unsigned and order-preserving for a radix sort (`radix_order` in
    /// kernel_radix.cu): the sign flipped for integers; for floats, every NaN one key above
    /// `+inf` and `-0.0` the key of `0.0`, as the built-in comparators order them.
    #[doc(hidden)]
    fn order_bits(self) -> u64;
}

/// Built-in integer element types, for the bitwise operators.
pub trait Bitwise: Arithmetic {
    #[doc(hidden)]
    const ALL_ONES: Self;
    #[doc(hidden)]
    fn and(a: Self, b: Self) -> Self;
    #[doc(hidden)]
    fn or(a: Self, b: Self) -> Self;
    #[doc(hidden)]
    fn xor(a: Self, b: Self) -> Self;
}

macro_rules! int_arith {
    ($($t:ty => $wrap:literal),*) => {$(
        impl Arithmetic for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;
            fn add(a: Self, b: Self) -> Self { a.wrapping_add(b) }
            fn mul(a: Self, b: Self) -> Self { a.wrapping_mul(b) }
            const CUDA_WRAP_TYPE: &'static str = $wrap;
            fn count_from(start: Self, i: u64) -> Self { start.wrapping_add(i as Self) }
            fn order_bits(self) -> u64 {
                const BITS: u32 = <$t>::BITS;
                let sign = if <$t>::MIN == 0 { 0 } else { 1u64 << (BITS - 1) };
                (self as u64 & (u64::MAX >> (64 - BITS))) ^ sign
            }
        }
        impl Bitwise for $t {
            const ALL_ONES: Self = !0;
            fn and(a: Self, b: Self) -> Self { a & b }
            fn or(a: Self, b: Self) -> Self { a | b }
            fn xor(a: Self, b: Self) -> Self { a ^ b }
        }
    )*};
}
int_arith!(i8 => "unsigned int", u8 => "unsigned int", i16 => "unsigned int",
           u16 => "unsigned int", i32 => "unsigned int", u32 => "unsigned int",
           i64 => "unsigned long long", u64 => "unsigned long long");

macro_rules! float_arith {
    ($($t:ty),*) => {$(
        impl Arithmetic for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = <$t>::NEG_INFINITY;
            const HIGHEST: Self = <$t>::INFINITY;
            fn add(a: Self, b: Self) -> Self { a + b }
            fn mul(a: Self, b: Self) -> Self { a * b }
            const CUDA_WRAP_TYPE: &'static str = "";
            fn count_from(start: Self, i: u64) -> Self { start + i as Self }
            fn order_bits(self) -> u64 {
                const SIGN: u64 = 1 << (8 * std::mem::size_of::<$t>() - 1);
                let bits = self.to_bits() as u64;
                if self.is_nan() {
                    SIGN | (SIGN - 1)
                } else if self == 0.0 || bits & SIGN == 0 {
                    (bits & !SIGN) | SIGN
                } else {
                    !bits & (SIGN | (SIGN - 1))
                }
            }
        }
    )*};
}
float_arith!(f32, f64);

/// `a OP b` in CUDA, computed in the unsigned wrap type for integers (signed overflow is UB in C++).
fn wrapping_expr<T: Arithmetic>(op: &str) -> String {
    match T::CUDA_WRAP_TYPE {
        "" => format!("a {op} b"),
        w => format!("(T)(({w})a {op} ({w})b)"),
    }
}

impl<T: Arithmetic> Op<T> {
    /// `a + b` (wrapping for integers), identity 0.
    pub fn plus() -> Self {
        Op::new("plus", T::ZERO, T::add, wrapping_expr::<T>("+")).commutative(true)
    }
    /// `a * b` (wrapping for integers), identity 1.
    pub fn multiplies() -> Self {
        Op::new("multiplies", T::ONE, T::mul, wrapping_expr::<T>("*")).commutative(true)
    }
    /// The larger of `a` and `b` (`a` when unordered, as with NaN), identity the lowest value.
    pub fn maximum() -> Self {
        Op::new(
            "maximum",
            T::LOWEST,
            |a, b| if a < b { b } else { a },
            "(a < b) ? b : a",
        )
        .commutative(true)
    }
    /// The smaller of `a` and `b` (`a` when unordered, as with NaN), identity the highest value.
    pub fn minimum() -> Self {
        Op::new(
            "minimum",
            T::HIGHEST,
            |a, b| if b < a { b } else { a },
            "(b < a) ? b : a",
        )
        .commutative(true)
    }
}

impl<T: Bitwise> Op<T> {
    /// `a & b`, identity all ones.
    pub fn bit_and() -> Self {
        Op::new("bit_and", T::ALL_ONES, T::and, "(T)(a & b)").commutative(true)
    }
    /// `a | b`, identity 0.
    pub fn bit_or() -> Self {
        Op::new("bit_or", T::ZERO, T::or, "(T)(a | b)").commutative(true)
    }
    /// `a ^ b`, identity 0.
    pub fn bit_xor() -> Self {
        Op::new("bit_xor", T::ZERO, T::xor, "(T)(a ^ b)").commutative(true)
    }
}
cuda_fn_api! {
    /// A strict weak order: `before(a, b)` is true when `a` must come before `b`. Given as a Rust
    /// function (CPU) and a CUDA C++ boolean expression over `a` and `b` (GPU).
    ///
    /// The built-ins order floating-point keys totally: NaN compares equal to NaN, and all NaNs come
    /// after every number with [`less`](Comparator::less) (before every number with
    /// [`greater`](Comparator::greater)); `-0.0` and `0.0` are equivalent (their input order is kept).
    ///
    /// ```
    /// use mgpu::Comparator;
    /// let by_abs = Comparator::new("abs_less", |a: &i32, b: &i32| a.abs() < b.abs(), "abs(a) < abs(b)");
    /// assert!(by_abs.before(&1, &-2));
    /// assert!(Comparator::<f32>::less().before(&1.0, &f32::NAN));
    /// ```
    pub struct Comparator<T>;
    /// A custom comparator; `cpu` and `cuda_expression` must define the same strict weak order.
    fn new;
    /// True when `a` must come before `b`.
    fn before(a: &T, b: &T) -> bool;
    "comparator" over "`a` and `b`";
    /// CUDA C++ device functions the expression calls.
    fn with_cuda_helpers;
    /// CUDA C++ helper source.
    fn cuda_helpers;
    /// Compiles the CUDA expression (with its helpers) for `sm_{arch}` with NVRTC, without a
    /// GPU (NVRTC alone suffices): a bad expression is [`Error::Compile`](crate::Error::Compile)
    /// with NVRTC's log, caught before a primitive uses it; [`Error::NoNvrtc`](crate::Error::NoNvrtc)
    /// where NVRTC is not found.
    ///
    /// ```
    /// use mgpu::Comparator;
    /// let by_abs = Comparator::new("by_abs", |a: &i32, b: &i32| a.abs() < b.abs(), "abs(a) < abs(b)");
    /// if mgpu::cuda::jit::nvrtc_available() {
    ///     by_abs.check_cuda(90)?;
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    fn check_cuda::<T, T>(binary: true, result: "bool");
}

impl<T: Element> Comparator<T> {
    /// The built-in order a comparator is (`less` or `greater`), if it is one.
    pub(crate) fn builtin_order(&self) -> Option<BuiltinOrder> {
        self.f.builtin_order
    }

    /// For the built-in orders of floating-point keys, the plain comparison that orders keys
    /// without NaN as they do (`a < b`, or `b < a` for `greater`): one compare where the total
    /// order takes two, for the merge sort's tiles that hold no NaN.
    pub(crate) fn nan_free_expression(&self) -> Option<&'static str> {
        match (self.f.builtin_order?, T::CUDA_TYPE) {
            (BuiltinOrder::Less, "float" | "double") => Some("a < b"),
            (BuiltinOrder::Greater, "float" | "double") => Some("b < a"),
            _ => None,
        }
    }

    /// The comparator as a total `Ordering` (equivalent keys are `Equal`).
    pub fn ordering(&self, a: &T, b: &T) -> std::cmp::Ordering {
        if self.before(a, b) {
            std::cmp::Ordering::Less
        } else if self.before(b, a) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }
}

/// Total-order helpers for the built-in comparators (NaN last for `less`).
fn nan_aware_less<T: Arithmetic>(a: &T, b: &T) -> bool {
    #[allow(clippy::eq_op)]
    let (a_nan, b_nan) = (a != a, b != b);
    if b_nan {
        !a_nan
    } else {
        a < b
    }
}

impl<T: Arithmetic> Comparator<T> {
    /// Ascending order (floats: NaNs last).
    pub fn less() -> Self {
        let cuda = if T::CUDA_WRAP_TYPE.is_empty() {
            // "a < b, or b is NaN", for an `a` that is not NaN: the NaN-last order without a
            // select; the f32 sort got 6% faster than with `(b != b) ? (a == a) : (a < b)`
            // (BENCHMARKS.md).
            "!(b <= a) && (a == a)"
        } else {
            "a < b"
        };
        let mut c = Comparator::new("less", nan_aware_less::<T>, cuda);
        c.f.builtin_order = Some(BuiltinOrder::Less);
        c
    }
    /// Descending order (floats: NaNs first).
    pub fn greater() -> Self {
        let cuda = if T::CUDA_WRAP_TYPE.is_empty() {
            "!(a <= b) && (b == b)"
        } else {
            "b < a"
        };
        let mut c = Comparator::new("greater", |a: &T, b: &T| nan_aware_less(b, a), cuda);
        c.f.builtin_order = Some(BuiltinOrder::Greater);
        c
    }
}

cuda_fn_api! {
    /// A yes/no test of one element, for the compaction primitives
    /// ([`select_if`](crate::Context::select_if), [`partition_if`](crate::Context::partition_if)):
    /// a Rust function (CPU) and a CUDA C++ boolean expression over `x` (GPU), which must agree.
    ///
    /// ```
    /// use mgpu::Predicate;
    /// let even = Predicate::new("even", |x: &i32| x % 2 == 0, "x % 2 == 0");
    /// assert!(even.test(&4) && !even.test(&7));
    /// ```
    pub struct Predicate<T>;
    /// A custom predicate; `cpu` and `cuda_expression` must compute the same test.
    fn new;
    /// Applies the predicate on the CPU.
    fn test(x: &T) -> bool;
    "predicate" over "`x`";
    /// CUDA C++ device functions the expression calls.
    fn with_cuda_helpers;
    /// CUDA C++ helper source.
    fn cuda_helpers;
    /// Compiles the CUDA expression (with its helpers) for `sm_{arch}` with NVRTC, without a
    /// GPU (NVRTC alone suffices): a bad expression is [`Error::Compile`](crate::Error::Compile)
    /// with NVRTC's log, caught before a primitive uses it; [`Error::NoNvrtc`](crate::Error::NoNvrtc)
    /// where NVRTC is not found.
    ///
    /// ```
    /// use mgpu::Predicate;
    /// let even = Predicate::new("even", |x: &i32| x % 2 == 0, "x % 2 == 0");
    /// let wrong = Predicate::new("wrong", |x: &i32| *x > 0, "y > 0"); // no `y` in scope
    /// if mgpu::cuda::jit::nvrtc_available() {
    ///     even.check_cuda(90)?;
    ///     assert!(matches!(wrong.check_cuda(90), Err(mgpu::Error::Compile { .. })));
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    fn check_cuda::<T, T>(binary: false, result: "bool");
}

impl<T: Arithmetic> Predicate<T> {
    /// True for every value but zero (the flags of
    /// [`select_flagged`](crate::Context::select_flagged)).
    pub fn nonzero() -> Self {
        Predicate::new("nonzero", |x: &T| *x != T::ZERO, "x != (T)0")
    }
}

cuda_fn_api! {
    /// An equivalence relation that groups adjacent elements into runs, for
    /// [`unique`](crate::Context::unique), [`run_length_encode`](crate::Context::run_length_encode)
    /// and [`reduce_by_key`](crate::Context::reduce_by_key): a Rust function (CPU) and a CUDA C++
    /// boolean expression over `a` and `b` (GPU), which must agree.
    ///
    /// ```
    /// use mgpu::Equality;
    /// let same_decade = Equality::new("decade", |a: &u32, b: &u32| a / 10 == b / 10, "a / 10 == b / 10");
    /// assert!(same_decade.equal(&31, &39));
    /// assert!(!Equality::<f32>::equal_to().equal(&f32::NAN, &f32::NAN));
    /// ```
    pub struct Equality<T>;
    /// A custom equality; `cpu` and `cuda_expression` must define the same equivalence.
    fn new;
    /// True when `a` and `b` belong to the same run.
    fn equal(a: &T, b: &T) -> bool;
    "equality" over "`a` and `b`";
    /// CUDA C++ device functions the expression calls.
    fn with_cuda_helpers;
    /// CUDA C++ helper source.
    fn cuda_helpers;
    /// Compiles the CUDA expression (with its helpers) for `sm_{arch}` with NVRTC, without a
    /// GPU (NVRTC alone suffices): a bad expression is [`Error::Compile`](crate::Error::Compile)
    /// with NVRTC's log, caught before a primitive uses it; [`Error::NoNvrtc`](crate::Error::NoNvrtc)
    /// where NVRTC is not found.
    ///
    /// ```
    /// use mgpu::Equality;
    /// let same_tens = Equality::new("same_tens", |a: &u32, b: &u32| a / 10 == b / 10, "a / 10 == b / 10");
    /// if mgpu::cuda::jit::nvrtc_available() {
    ///     same_tens.check_cuda(90)?;
    /// }
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    fn check_cuda::<T, T>(binary: true, result: "bool");
}

impl<T: Arithmetic> Equality<T> {
    /// `a == b` (floats: NaN equals nothing, so each NaN is a run of its own; `-0.0 == 0.0`).
    pub fn equal_to() -> Self {
        Equality::new("equal_to", |a: &T, b: &T| a == b, "a == b")
    }
}
