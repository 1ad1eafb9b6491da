//! The element types of the suites: a predicate and an equality per type (Rust function + CUDA
//! expression), and generators that control the selection and run patterns.

use super::*;

pub trait Case: TestElement {
    /// The predicate's CUDA expression over `x`, and its Rust side.
    const PRED: &'static str;
    fn keep(x: &Self) -> bool;
    /// The equality's CUDA expression over `a` and `b`, and its Rust side.
    const EQ: &'static str;
    fn same_run(a: &Self, b: &Self) -> bool;
    /// A value that `keep` accepts (or rejects).
    fn make(r: &mut StdRng, keep: bool) -> Self {
        loop {
            let x = Self::random(r);
            if Self::keep(&x) == keep {
                return x;
            }
        }
    }
    /// The first key of a run after one holding `prev` (not in its run).
    fn head(r: &mut StdRng, prev: Option<&Self>) -> Self {
        loop {
            let x = Self::random(r);
            if prev.is_none_or(|p| !Self::same_run(p, &x)) {
                return x;
            }
        }
    }
    /// Another key of `head`'s run.
    fn member(_r: &mut StdRng, head: &Self) -> Self {
        *head
    }
    /// The output poison (not a value `make` or `head` produce, bit for bit).
    fn sentinel() -> Self {
        Self::poison()
    }
    fn predicate() -> Predicate<Self> {
        Predicate::new("case_pred", Self::keep, Self::PRED)
    }
    fn equality() -> Equality<Self> {
        Equality::new("case_eq", Self::same_run, Self::EQ)
    }
}

impl Case for i32 {
    const PRED: &'static str = "x % 3 == 1";
    fn keep(x: &i32) -> bool {
        x % 3 == 1
    }
    const EQ: &'static str = "a / 10 == b / 10";
    fn same_run(a: &i32, b: &i32) -> bool {
        a / 10 == b / 10
    }
    fn head(r: &mut StdRng, prev: Option<&i32>) -> i32 {
        loop {
            let d = r.random_range(0..100_000_000);
            if prev.is_none_or(|p| p / 10 != d) {
                return d * 10 + r.random_range(0..10);
            }
        }
    }
    fn member(r: &mut StdRng, head: &i32) -> i32 {
        head / 10 * 10 + r.random_range(0..10)
    }
}

impl Case for u8 {
    const PRED: &'static str = "x % 5 < 2";
    fn keep(x: &u8) -> bool {
        x % 5 < 2
    }
    const EQ: &'static str = "a == b";
    fn same_run(a: &u8, b: &u8) -> bool {
        a == b
    }
    fn equality() -> Equality<u8> {
        Equality::equal_to()
    }
}

impl Case for i64 {
    const PRED: &'static str = "(x & 255) < 100";
    fn keep(x: &i64) -> bool {
        (x & 255) < 100
    }
    const EQ: &'static str = "a == b";
    fn same_run(a: &i64, b: &i64) -> bool {
        a == b
    }
    fn equality() -> Equality<i64> {
        Equality::equal_to()
    }
}

impl Case for u64 {
    const PRED: &'static str = "((x >> 7) & 1) != 0";
    fn keep(x: &u64) -> bool {
        (x >> 7) & 1 != 0
    }
    const EQ: &'static str = "a == b";
    fn same_run(a: &u64, b: &u64) -> bool {
        a == b
    }
    fn equality() -> Equality<u64> {
        Equality::equal_to()
    }
}

impl Case for f32 {
    const PRED: &'static str = "x < 0.5f";
    fn keep(x: &f32) -> bool {
        *x < 0.5
    }
    const EQ: &'static str = "a == b";
    fn same_run(a: &f32, b: &f32) -> bool {
        a == b
    }
    fn equality() -> Equality<f32> {
        Equality::equal_to()
    }
    fn make(r: &mut StdRng, keep: bool) -> f32 {
        if keep {
            r.random_range(-4.0..0.5)
        } else if r.random_bool(0.1) {
            f32::NAN
        } else {
            r.random_range(0.5..4.0)
        }
    }
    fn head(r: &mut StdRng, prev: Option<&f32>) -> f32 {
        loop {
            // Few values (zeros of both signs among them), so runs meet their like often.
            let x = [0.0, -0.0, 1.0, 2.5, -3.0][r.random_range(0..5)];
            if prev.is_none_or(|p| *p != x) {
                return x;
            }
        }
    }
    fn member(r: &mut StdRng, head: &f32) -> f32 {
        if *head == 0.0 && r.random_bool(0.5) {
            -*head
        } else {
            *head
        }
    }
    fn sentinel() -> f32 {
        f32::from_bits(0x7fc0_dead)
    }
}

impl Case for f64 {
    const PRED: &'static str = "x >= 2.0";
    fn keep(x: &f64) -> bool {
        *x >= 2.0
    }
    const EQ: &'static str = "floor(a) == floor(b)";
    fn same_run(a: &f64, b: &f64) -> bool {
        a.floor() == b.floor()
    }
    fn make(r: &mut StdRng, keep: bool) -> f64 {
        if keep {
            r.random_range(2.0..1e6)
        } else if r.random_bool(0.1) {
            f64::NAN
        } else {
            r.random_range(-1e6..2.0)
        }
    }
    fn head(r: &mut StdRng, prev: Option<&f64>) -> f64 {
        loop {
            let d = r.random_range(-1_000_000..1_000_000) as f64;
            if prev.is_none_or(|p| p.floor() != d) {
                return d + r.random_range(0..1024) as f64 / 1024.0;
            }
        }
    }
    fn member(r: &mut StdRng, head: &f64) -> f64 {
        head.floor() + r.random_range(0..1024) as f64 / 1024.0
    }
    fn sentinel() -> f64 {
        f64::from_bits(0x7ff8_0000_dead_beef)
    }
}

impl Case for Tagged {
    const PRED: &'static str = "x.tag % 3 == 1";
    fn keep(x: &Tagged) -> bool {
        x.tag % 3 == 1
    }
    const EQ: &'static str = "a.a == b.a";
    fn same_run(a: &Tagged, b: &Tagged) -> bool {
        a.a == b.a
    }
    fn member(r: &mut StdRng, head: &Tagged) -> Tagged {
        Tagged {
            a: head.a,
            b: r.random(),
            tag: r.random(),
        }
    }
}

pub fn run_keys<T: Case>(r: &mut StdRng, n: usize, pat: Runs, tiles: &[usize]) -> Vec<T> {
    let mut keys = Vec::with_capacity(n);
    for len in run_lengths(r, n, pat, tiles) {
        let head = T::head(r, keys.last());
        keys.push(head);
        for _ in 1..len {
            keys.push(T::member(r, &head));
        }
    }
    keys
}
