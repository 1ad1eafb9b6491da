//! Compile checks of CUDA expressions without a GPU: the expression of an operator, comparator,
//! predicate, equality or map is wrapped in a one-thread kernel over its element types and
//! compiled with NVRTC for an architecture, where NVRTC is found (no driver or device needed).
//! A bad expression, helper or element declaration is an [`Error::Compile`](crate::Error) with
//! NVRTC's log, found before any primitive uses it.

use crate::cuda::jit;
use crate::error::Result;
use crate::Element;

/// An expression to compile: what it is (for the kernel's name in errors), the C++ around it.
pub(crate) struct Expression<'a> {
    /// `"operator"`, `"comparator"`, `"predicate"`, `"equality"`, `"map"`.
    pub what: &'a str,
    /// The user's name for it.
    pub name: &'a str,
    pub helpers: &'a str,
    pub expression: &'a str,
    /// Two operands `a`, `b` of type `In`, or one, `x`.
    pub binary: bool,
    /// The result type: `T`, or `bool`.
    pub result: &'a str,
}

/// Compiles `e` for `sm_{arch}` with `In` = `I` (the operands) and `T` = `T` (the result type of a
/// map; the operands' type otherwise, `I` = `T`): their declarations, with the check that they
/// match the Rust types' size and alignment, the helpers, and a kernel that applies the
/// expression once.
pub(crate) fn check<I: Element, T: Element>(e: &Expression<'_>, arch: u32) -> Result<()> {
    let mut p = jit::Prelude::new("check", &["mgpu_check"], &crate::Tuning::new(32, 1, 1));
    p.element("T", &jit::ElementDesc::of::<T>())
        .element("In", &jit::ElementDesc::of::<I>());
    let signature = if e.binary {
        format!("{} operator()(const In& a, const In& b)", e.result)
    } else {
        format!("{} operator()(const In& x)", e.result)
    };
    p.functor(
        "Checked",
        &signature,
        &jit::Expr::new(e.expression, e.helpers),
    );
    let args = if e.binary { "in[0], in[1]" } else { "in[0]" };
    let kernel = format!(
        "extern \"C\" __global__ void mgpu_check(const In* in, {result}* out) {{\n  \
         *out = Checked()({args});\n}}\n",
        result = e.result,
    );
    jit::compile(
        &format!("{} {}", e.what, e.name),
        &p.finish(&[&kernel]),
        arch,
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use crate::{Comparator, Element, Equality, Error, Map, Op, Predicate};

    const ARCH: u32 = 90;

    /// Whether NVRTC is here to check with; without it the tests pass unless
    /// `MGPU_REQUIRE_NVRTC=1` says it must be found.
    fn nvrtc() -> bool {
        let found = crate::cuda::jit::nvrtc_available();
        if !found && std::env::var("MGPU_REQUIRE_NVRTC").is_ok_and(|v| v == "1") {
            panic!("MGPU_REQUIRE_NVRTC=1 but NVRTC was not found");
        }
        found
    }

    fn expect_compile_error(result: crate::Result<()>, what: &str, needle: &str) {
        match result {
            Err(Error::Compile { kernel, log, .. }) => {
                assert!(kernel.contains(what), "{kernel}");
                assert!(
                    log.contains(needle),
                    "{what}: `{needle}` not in the log:\n{log}"
                );
            }
            other => panic!("{what}: expected Error::Compile, got {other:?}"),
        }
    }

    #[repr(C)]
    #[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
    struct Pair {
        a: f32,
        b: f32,
    }
    impl Element for Pair {
        const CUDA_TYPE: &'static str = "Pair";
        const CUDA_DECLARATION: &'static str = "struct Pair { float a; float b; };";
    }

    #[test]
    fn good_expressions_compile() {
        if !nvrtc() {
            return;
        }
        Op::<i64>::plus().check_cuda(ARCH).unwrap();
        Op::<f64>::maximum().check_cuda(ARCH).unwrap();
        let pair_plus = Op::new(
            "pair_plus",
            Pair { a: 0.0, b: 0.0 },
            |x, y| Pair {
                a: x.a + y.a,
                b: x.b + y.b,
            },
            "pair_add(a, b)",
        )
        .with_cuda_helpers(
            "__device__ Pair pair_add(Pair x, Pair y) { Pair r; r.a = x.a + y.a; r.b = x.b + y.b; return r; }",
        );
        pair_plus.check_cuda(ARCH).unwrap();
        Comparator::<f32>::less().check_cuda(ARCH).unwrap();
        Predicate::<u8>::nonzero().check_cuda(ARCH).unwrap();
        Equality::<u16>::equal_to().check_cuda(ARCH).unwrap();
        Map::new("first", |p: Pair| p.a, "x.a")
            .check_cuda(ARCH)
            .unwrap();
    }

    #[test]
    fn bad_expressions_are_compile_errors_with_the_log() {
        if !nvrtc() {
            return;
        }
        let op = Op::<i32>::new("typo", 0, |a, b| a + b, "a +* b");
        expect_compile_error(op.check_cuda(ARCH), "operator typo", "error");
        let cmp = Comparator::<i32>::new("undeclared", |a, b| a < b, "less_than(a, b)");
        expect_compile_error(cmp.check_cuda(ARCH), "comparator undeclared", "less_than");
        let pred = Predicate::<f32>::new("no_y", |x| *x > 0.0, "y > 0");
        expect_compile_error(pred.check_cuda(ARCH), "predicate no_y", "\"y\"");
        let eq = Equality::<Pair>::new("no_member", |p, q| p.a == q.a, "a.c == b.c");
        expect_compile_error(eq.check_cuda(ARCH), "equality no_member", "\"c\"");
        let map = Map::new("to_pair", |x: f32| x as f64, "make_pair(x)");
        expect_compile_error(map.check_cuda(ARCH), "map to_pair", "make_pair");
    }

    #[test]
    fn a_declaration_that_does_not_match_the_rust_type_is_a_compile_error() {
        if !nvrtc() {
            return;
        }
        #[repr(C)]
        #[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
        struct Wide {
            x: f64,
        }
        impl Element for Wide {
            const CUDA_TYPE: &'static str = "Wide";
            const CUDA_DECLARATION: &'static str = "struct Wide { float x; };";
        }
        let first = Op::new("first", Wide { x: 0.0 }, |a, _| a, "a");
        expect_compile_error(
            first.check_cuda(ARCH),
            "operator first",
            "does not match the Rust type",
        );
    }
}
