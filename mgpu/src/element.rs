//! Element types: the bridge between a Rust type and its CUDA C++ spelling.

/// A type that primitives can work on, on the CPU and on the GPU.
///
/// Built in for `i8`..`i64`, `u8`..`u64`, `f32` and `f64`. A user type is a `#[repr(C)]` struct that
/// derives [`bytemuck::Pod`] and gives its CUDA C++ name and declaration; the declaration's size and
/// alignment are checked against the Rust type when a kernel is compiled.
///
/// ```
/// use mgpu::Element;
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// struct Affine { a: f32, b: f32 }
/// impl Element for Affine {
///     const CUDA_TYPE: &'static str = "Affine";
///     const CUDA_DECLARATION: &'static str = "struct Affine { float a; float b; };";
/// }
/// ```
pub trait Element: bytemuck::Pod + Send + Sync + std::fmt::Debug + 'static {
    /// The type's name in CUDA C++ (`"int"`, `"double"`, `"Affine"`).
    const CUDA_TYPE: &'static str;
    /// CUDA C++ source that declares the type (empty for built-in types).
    const CUDA_DECLARATION: &'static str = "";
}

macro_rules! builtin {
    ($($t:ty => $c:literal),* $(,)?) => {$(
        impl Element for $t { const CUDA_TYPE: &'static str = $c; }
    )*};
}
builtin!(
    i8 => "signed char", u8 => "unsigned char", i16 => "short", u16 => "unsigned short",
    i32 => "int", u32 => "unsigned int", i64 => "long long", u64 => "unsigned long long",
    f32 => "float", f64 => "double",
);

/// The type of segment offsets and sources: `u32` or `u64`.
pub trait Offset: crate::Arithmetic + offset_sealed::Sealed {
    #[doc(hidden)]
    fn to_u64(self) -> u64;
}

mod offset_sealed {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

impl Offset for u32 {
    fn to_u64(self) -> u64 {
        self as u64
    }
}

impl Offset for u64 {
    fn to_u64(self) -> u64 {
        self
    }
}
