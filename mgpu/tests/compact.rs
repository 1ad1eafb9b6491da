//! Stream compaction on every backend against serial references written here: select_if,
//! select_flagged, partition_if, partition_copy, partition_in_place, unique, unique_by_key,
//! run_length_encode and reduce_by_key, in place and out of place, for built-in and user element
//! types, custom predicates and equalities (Rust function + CUDA expression), selection patterns
//! (all, none, alternating, random rates, long blocks) and run patterns (one run, all distinct,
//! random lengths of mean 2, 10, 500, runs across tile edges), at sizes around the compaction
//! tile. Outputs are poisoned: nothing may be written past the count. The count goes to the host,
//! the device, both or nowhere. In-place repetition on the GPU (a race shows as a result that
//! changes), errors, views at unaligned offsets, and (MGPU_BIG=1) more than 2^32 items.

mod common;
use common::*;
use mgpu::cuda::segreduce::SegItems;
use mgpu::tuning::Family;
use mgpu::{
    Arithmetic, Context, Count, Element, Equality, Error, Op, Predicate, ReduceByKeyAlgorithm,
};
use rand::rngs::StdRng;
use rand::Rng;

// ---------------------------------------------------------------------------------------------
// Sizes, patterns, counts.

/// The compaction tile for items of `bytes` (keys + values): the table's, VT capped at 31 as the
/// library caps it.
fn compact_tile(ctx: &Context, bytes: usize) -> usize {
    family_tile(ctx, Family::Compact, bytes)
}

/// The reduce-by-key and run-length-encode tile for items of `bytes` (keys + values or lengths).
fn run_tile(ctx: &Context, bytes: usize) -> usize {
    family_tile(ctx, Family::ReduceByKey, bytes)
}

fn family_tile(ctx: &Context, family: Family, bytes: usize) -> usize {
    let mut t = mgpu::tuning::lookup(family, ctx.arch().unwrap_or(90), bytes).unwrap();
    t.vt = t.vt.min(31);
    t.nv()
}

/// A multi-tile size, GPU only.
const BIG: usize = (1 << 20) + 12345;

/// 0, 1, 2; k*tile - 1, k*tile, k*tile + 1 for k = 1..=3 for the tiles (compaction's and
/// reduce-by-key's) of every item size in `item_bytes`; a few random sizes; multi-tile sizes on the GPU (moderate ones on the CPU).
fn test_sizes(ctx: &Context, r: &mut StdRng, item_bytes: &[usize]) -> Vec<usize> {
    let mut v = vec![0, 1, 2];
    let mut max_nv = 0;
    for nv in item_bytes
        .iter()
        .flat_map(|&b| [compact_tile(ctx, b), run_tile(ctx, b)])
    {
        max_nv = max_nv.max(nv);
        for k in 1..=3 {
            v.extend([k * nv - 1, k * nv, k * nv + 1]);
        }
    }
    v.push(r.random_range(3..4 * max_nv));
    v.push(r.random_range(4 * max_nv..12 * max_nv));
    if ctx.is_gpu() {
        v.push(BIG);
        v.push(r.random_range(1 << 16..3 << 20));
    } else {
        v.push(r.random_range(20_000..40_000));
    }
    v.sort();
    v.dedup();
    v
}

/// Which items a selection keeps.
#[derive(Clone, Copy, Debug)]
enum Sel {
    All,
    Nothing,
    Alternating,
    Rate(f64),
    /// Long stretches (up to a few tiles) kept, then rejected.
    Blocks,
}

const SELECTIONS: [Sel; 8] = [
    Sel::All,
    Sel::Nothing,
    Sel::Alternating,
    Sel::Rate(0.02),
    Sel::Rate(0.5),
    Sel::Rate(0.9),
    Sel::Rate(0.995),
    Sel::Blocks,
];

fn selection(r: &mut StdRng, n: usize, sel: Sel) -> Vec<bool> {
    match sel {
        Sel::All => vec![true; n],
        Sel::Nothing => vec![false; n],
        Sel::Alternating => (0..n).map(|i| i % 2 == 1).collect(),
        Sel::Rate(p) => (0..n).map(|_| r.random_bool(p)).collect(),
        Sel::Blocks => {
            let mut v = Vec::with_capacity(n);
            let mut keep = r.random_bool(0.5);
            while v.len() < n {
                let len = r.random_range(1..5000).min(n - v.len());
                v.extend(std::iter::repeat_n(keep, len));
                keep = !keep;
            }
            v
        }
    }
}

/// How long the runs of equal keys are.
#[derive(Clone, Copy, Debug)]
enum Runs {
    /// One run: every key equal.
    One,
    /// Random lengths, uniform in 1..=2m-1 (mean m; m = 1: all distinct).
    Mean(usize),
    /// Lengths around the tiles (1, tile - 1, tile, tile + 1, 2 tile + 1): runs across tile edges.
    TileEdges,
}

const RUN_PATTERNS: [Runs; 6] = [
    Runs::One,
    Runs::Mean(1),
    Runs::Mean(2),
    Runs::Mean(10),
    Runs::Mean(500),
    Runs::TileEdges,
];

fn run_lengths(r: &mut StdRng, n: usize, pat: Runs, tiles: &[usize]) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut left = n;
    while left > 0 {
        let len = match pat {
            Runs::One => left,
            Runs::Mean(m) => r.random_range(1..=2 * m - 1),
            Runs::TileEdges => {
                let nv = tiles[r.random_range(0..tiles.len())];
                [1, nv - 1, nv, nv + 1, 2 * nv + 1][r.random_range(0..5)]
            }
        }
        .min(left);
        lengths.push(len);
        left -= len;
    }
    lengths
}

/// Where a count goes.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Host,
    Device,
    Both,
    Nowhere,
}

const MODES: [Mode; 4] = [Mode::Host, Mode::Device, Mode::Both, Mode::Nowhere];
const COUNT_POISON: u64 = 0xdead_beef_dead_beef;

/// Runs `call` with the count delivered as `mode` says, into the middle of a poisoned
/// three-element buffer for `Device` and `Both`. Returns the count where it can be seen (host
/// and device must agree for `Both`), None for `Count::None`.
fn counted(
    ctx: &Context,
    mode: Mode,
    what: &str,
    call: impl FnOnce(Count<'_>) -> mgpu::Result<Option<u64>>,
) -> Option<u64> {
    match mode {
        Mode::Host => {
            let c = call(Count::Host).unwrap_or_else(|e| panic!("{what} ({mode:?}): {e}"));
            assert!(c.is_some(), "{what}: Count::Host returned nothing");
            c
        }
        Mode::Nowhere => {
            let c = call(Count::None).unwrap_or_else(|e| panic!("{what} ({mode:?}): {e}"));
            assert!(c.is_none(), "{what}: Count::None returned {c:?}");
            None
        }
        Mode::Device | Mode::Both => {
            let mut buf = ctx.upload(&[COUNT_POISON; 3]).unwrap();
            let host = {
                let mut slot = buf.slice_mut(1..2);
                let count = match mode {
                    Mode::Device => Count::Device(&mut slot),
                    _ => Count::Both(&mut slot),
                };
                call(count).unwrap_or_else(|e| panic!("{what} ({mode:?}): {e}"))
            };
            let dev = buf.to_vec().unwrap();
            assert_eq!(
                (dev[0], dev[2]),
                (COUNT_POISON, COUNT_POISON),
                "{what} ({mode:?}): written around the count's slot"
            );
            match mode {
                Mode::Device => assert!(host.is_none(), "{what}: Count::Device returned {host:?}"),
                _ => assert_eq!(
                    host,
                    Some(dev[1]),
                    "{what}: Count::Both: host and device differ"
                ),
            }
            Some(dev[1])
        }
    }
}

fn check_count(got: Option<u64>, expect: usize, what: &str) {
    if let Some(c) = got {
        assert_eq!(c, expect as u64, "{what}: count");
    }
}

/// `got` (a whole output buffer) must start with `expect`, and hold `poison` after it.
fn check_written<T: Element>(got: &[T], expect: &[T], poison: T, what: &str) {
    assert!(got.len() >= expect.len(), "{what}: output too short");
    same(&got[..expect.len()], expect).unwrap_or_else(|e| panic!("{what}: {e}"));
    let tail = vec![poison; got.len() - expect.len()];
    same(&got[expect.len()..], &tail).unwrap_or_else(|e| {
        panic!(
            "{what}: written past the count ({}; offsets from there): {e}",
            expect.len()
        )
    });
}

/// The first `expect.len()` items of `got` (an in-place result: the rest is unspecified).
fn check_prefix<T: Element>(got: &[T], expect: &[T], what: &str) {
    assert!(got.len() >= expect.len(), "{what}: too short");
    same(&got[..expect.len()], expect).unwrap_or_else(|e| panic!("{what}: {e}"));
}

// ---------------------------------------------------------------------------------------------
// Serial references.

/// The kept items and the rejected ones, each in input order.
fn split<T: Copy>(items: &[T], keep: &[bool]) -> (Vec<T>, Vec<T>) {
    let (mut kept, mut rejected) = (Vec::new(), Vec::new());
    for (x, &k) in items.iter().zip(keep) {
        if k {
            kept.push(*x);
        } else {
            rejected.push(*x);
        }
    }
    (kept, rejected)
}

/// Whether each item starts a run under `same_run` (item 0 always does).
fn run_heads<T>(keys: &[T], same_run: impl Fn(&T, &T) -> bool) -> Vec<bool> {
    let mut heads = Vec::with_capacity(keys.len());
    for i in 0..keys.len() {
        heads.push(i == 0 || !same_run(&keys[i - 1], &keys[i]));
    }
    heads
}

/// Reduce-by-key, serially: each run's first key and the in-order fold of its values.
fn reduce_runs<K: Copy, V: Copy>(
    keys: &[K],
    values: &[V],
    same_run: impl Fn(&K, &K) -> bool,
    op: impl Fn(V, V) -> V,
) -> (Vec<K>, Vec<V>) {
    let (mut ks, mut vs): (Vec<K>, Vec<V>) = (Vec::new(), Vec::new());
    for i in 0..keys.len() {
        if i == 0 || !same_run(&keys[i - 1], &keys[i]) {
            ks.push(keys[i]);
            vs.push(values[i]);
        } else {
            let last = vs.last_mut().unwrap();
            *last = op(*last, values[i]);
        }
    }
    (ks, vs)
}

/// Affine composition "f, then g", written again here for the reference.
fn compose(f: Affine, g: Affine) -> Affine {
    Affine {
        a: g.a.wrapping_mul(f.a),
        b: g.a.wrapping_mul(f.b).wrapping_add(g.b),
    }
}

// ---------------------------------------------------------------------------------------------
// Element types: a predicate and an equality per type, and generators that control the patterns.

trait Case: TestElement {
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

fn run_keys<T: Case>(r: &mut StdRng, n: usize, pat: Runs, tiles: &[usize]) -> Vec<T> {
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

// ---------------------------------------------------------------------------------------------
// Selection: select_if, select_flagged, partition_if, partition_copy, partition_in_place.

fn check_selection<T: Case>(
    ctx: &Context,
    r: &mut StdRng,
    data: &[T],
    pred: &Predicate<T>,
    case: usize,
    what: &str,
) {
    let n = data.len();
    let p = T::sentinel();
    let keep: Vec<bool> = data.iter().map(T::keep).collect();
    let (kept, rejected) = split(data, &keep);
    let k = kept.len();
    let mode = |i: usize| MODES[(case + i) % MODES.len()];
    let input = ctx.upload(data).unwrap();

    // select_if.
    let what_p = format!("{what} select_if");
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(0), &what_p, |c| {
        ctx.select_if(&input, &mut out, pred, c)
    });
    check_count(c, k, &what_p);
    check_written(&out.to_vec().unwrap(), &kept, p, &what_p);

    let what_p = format!("{what} select_if_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let c = counted(ctx, mode(1), &what_p, |c| {
        ctx.select_if_in_place(&mut buf, pred, c)
    });
    check_count(c, k, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &kept, &what_p);

    // select_flagged: u8 flags, any non-zero value selects.
    let flags: Vec<u8> = keep
        .iter()
        .map(|&k| if k { r.random_range(1..=255) } else { 0 })
        .collect();
    let flag_buf = ctx.upload(&flags).unwrap();
    let what_p = format!("{what} select_flagged");
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(2), &what_p, |c| {
        ctx.select_flagged(&input, &flag_buf, &mut out, c)
    });
    check_count(c, k, &what_p);
    check_written(&out.to_vec().unwrap(), &kept, p, &what_p);

    let what_p = format!("{what} select_flagged_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let c = counted(ctx, mode(3), &what_p, |c| {
        ctx.select_flagged_in_place(&mut buf, &flag_buf, c)
    });
    check_count(c, k, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &kept, &what_p);

    // partition_if: the selected in order, then the rejected in reverse order; all n written.
    let what_p = format!("{what} partition_if");
    let mut expect = kept.clone();
    expect.extend(rejected.iter().rev());
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(4), &what_p, |c| {
        ctx.partition_if(&input, &mut out, pred, c)
    });
    check_count(c, k, &what_p);
    check_written(&out.to_vec().unwrap(), &expect, p, &what_p);

    // partition_copy: both groups in order, each written exactly.
    let what_p = format!("{what} partition_copy");
    let mut yes = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut no = ctx.upload(&vec![p; n + 2]).unwrap();
    let c = counted(ctx, mode(5), &what_p, |c| {
        ctx.partition_copy(&input, &mut yes, &mut no, pred, c)
    });
    check_count(c, k, &what_p);
    check_written(
        &yes.to_vec().unwrap(),
        &kept,
        p,
        &format!("{what_p}: selected"),
    );
    check_written(
        &no.to_vec().unwrap(),
        &rejected,
        p,
        &format!("{what_p}: rejected"),
    );

    let what_p = format!("{what} partition_copy_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let mut no = ctx.upload(&vec![p; n + 1]).unwrap();
    let c = counted(ctx, mode(6), &what_p, |c| {
        ctx.partition_copy_in_place(&mut buf, &mut no, pred, c)
    });
    check_count(c, k, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &kept, &what_p);
    check_written(
        &no.to_vec().unwrap(),
        &rejected,
        p,
        &format!("{what_p}: rejected"),
    );

    // partition_in_place: stable, the whole buffer.
    let what_p = format!("{what} partition_in_place");
    let mut buf = ctx.upload(data).unwrap();
    let c = ctx
        .partition_in_place(&mut buf, pred)
        .unwrap_or_else(|e| panic!("{what_p}: {e}"));
    assert_eq!(c, k as u64, "{what_p}: count");
    let mut stable = kept.clone();
    stable.extend(&rejected);
    same(&buf.to_vec().unwrap(), &stable).unwrap_or_else(|e| panic!("{what_p}: {e}"));

    // The inputs of the out-of-place forms are untouched.
    same(&input.to_vec().unwrap(), data).unwrap_or_else(|e| panic!("{what}: input: {e}"));
    same(&flag_buf.to_vec().unwrap(), &flags).unwrap_or_else(|e| panic!("{what}: flags: {e}"));
}

fn selection_suite<T: Case>() {
    let mut r = rng();
    let pred = T::predicate();
    let size = std::mem::size_of::<T>();
    for ctx in backends() {
        let mut case = 0;
        for n in test_sizes(&ctx, &mut r, &[size, size + 1]) {
            for sel in SELECTIONS {
                let keep = selection(&mut r, n, sel);
                let data: Vec<T> = keep.iter().map(|&k| T::make(&mut r, k)).collect();
                assert!(data.iter().map(T::keep).eq(keep), "the generator's pattern");
                let what = format!("{ctx:?} {} n={n} {sel:?}", T::CUDA_TYPE);
                check_selection(&ctx, &mut r, &data, &pred, case, &what);
                case += 1;
            }
        }
    }
}

#[test]
fn select_and_partition_i32() {
    selection_suite::<i32>();
}
#[test]
fn select_and_partition_u8() {
    selection_suite::<u8>();
}
#[test]
fn select_and_partition_i64() {
    selection_suite::<i64>();
}
#[test]
fn select_and_partition_u64() {
    selection_suite::<u64>();
}
#[test]
fn select_and_partition_f32() {
    selection_suite::<f32>();
}
#[test]
fn select_and_partition_f64() {
    selection_suite::<f64>();
}
#[test]
fn select_and_partition_user_struct() {
    selection_suite::<Tagged>();
}

/// Flags of other types: any non-zero value selects; for floats -0.0 does not and NaN does.
#[test]
fn select_flagged_flag_types() {
    fn one<F: Arithmetic + TestElement, T: Case>(
        ctx: &Context,
        r: &mut StdRng,
        n: usize,
        flag: impl Fn(&mut StdRng, bool) -> F,
    ) {
        let what = format!(
            "{ctx:?} select_flagged {} by {} n={n}",
            T::CUDA_TYPE,
            F::CUDA_TYPE
        );
        let data = random_vec::<T>(r, n);
        let keep: Vec<bool> = (0..n).map(|_| r.random_bool(0.4)).collect();
        let flags: Vec<F> = keep.iter().map(|&k| flag(r, k)).collect();
        let (kept, _) = split(&data, &keep);
        let input = ctx.upload(&data).unwrap();
        let flag_buf = ctx.upload(&flags).unwrap();
        let mut out = ctx.upload(&vec![T::sentinel(); n + 5]).unwrap();
        let c = ctx
            .select_flagged(&input, &flag_buf, &mut out, Count::Host)
            .unwrap();
        check_count(c, kept.len(), &what);
        check_written(&out.to_vec().unwrap(), &kept, T::sentinel(), &what);
        let mut buf = ctx.upload(&data).unwrap();
        let c = counted(ctx, Mode::Both, &what, |c| {
            ctx.select_flagged_in_place(&mut buf, &flag_buf, c)
        });
        check_count(c, kept.len(), &format!("{what} in place"));
        check_prefix(&buf.to_vec().unwrap(), &kept, &format!("{what} in place"));
    }
    let mut r = rng();
    for ctx in backends() {
        let tile = compact_tile(&ctx, 12);
        for n in [
            0,
            1,
            tile - 1,
            tile + 1,
            3 * tile,
            if ctx.is_gpu() { BIG } else { 30_011 },
        ] {
            one::<i32, f64>(&ctx, &mut r, n, |r, k| {
                if k {
                    r.random_range(i32::MIN..0) | 1
                } else {
                    0
                }
            });
            one::<f32, Tagged>(&ctx, &mut r, n, |r, k| {
                if !k {
                    [0.0, -0.0][r.random_range(0..2)]
                } else {
                    [f32::NAN, 1e-30, -2.0, f32::INFINITY][r.random_range(0..4)]
                }
            });
            one::<u64, u8>(&ctx, &mut r, n, |r, k| {
                if k {
                    1 << r.random_range(0..64)
                } else {
                    0
                }
            });
            one::<f64, i64>(&ctx, &mut r, n, |r, k| {
                if k {
                    f64::MIN_POSITIVE * r.random_range(1.0..2.0)
                } else {
                    -0.0
                }
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Runs: unique, unique_by_key, run_length_encode, reduce_by_key.

fn check_runs<T: Case>(ctx: &Context, r: &mut StdRng, keys: &[T], case: usize, what: &str) {
    let n = keys.len();
    let p = T::sentinel();
    let eq = T::equality();
    let mode = |i: usize| MODES[(case + i) % MODES.len()];
    let heads = run_heads(keys, T::same_run);
    let (unique_keys, _) = split(keys, &heads);
    let runs = unique_keys.len();
    let input = ctx.upload(keys).unwrap();

    // unique.
    let what_p = format!("{what} unique");
    let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
    let c = counted(ctx, mode(0), &what_p, |c| {
        ctx.unique(&input, &mut out, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_written(&out.to_vec().unwrap(), &unique_keys, p, &what_p);

    let what_p = format!("{what} unique_in_place");
    let mut buf = ctx.upload(keys).unwrap();
    let c = counted(ctx, mode(1), &what_p, |c| {
        ctx.unique_in_place(&mut buf, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_prefix(&buf.to_vec().unwrap(), &unique_keys, &what_p);

    // unique_by_key: the values are the positions, so which item of a run was kept shows.
    let positions: Vec<u32> = (0..n as u32).collect();
    let (head_positions, _) = split(&positions, &heads);
    let pos_buf = ctx.upload(&positions).unwrap();
    let what_p = format!("{what} unique_by_key");
    let mut kout = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut vout = ctx.upload(&vec![u32::MAX; n + 2]).unwrap();
    let c = counted(ctx, mode(2), &what_p, |c| {
        ctx.unique_by_key(&input, &pos_buf, &mut kout, &mut vout, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_written(
        &kout.to_vec().unwrap(),
        &unique_keys,
        p,
        &format!("{what_p}: keys"),
    );
    check_written(
        &vout.to_vec().unwrap(),
        &head_positions,
        u32::MAX,
        &format!("{what_p}: values"),
    );

    let what_p = format!("{what} unique_by_key_in_place");
    let mut kbuf = ctx.upload(keys).unwrap();
    let mut vbuf = ctx.upload(&positions).unwrap();
    let c = counted(ctx, mode(3), &what_p, |c| {
        ctx.unique_by_key_in_place(&mut kbuf, &mut vbuf, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_prefix(
        &kbuf.to_vec().unwrap(),
        &unique_keys,
        &format!("{what_p}: keys"),
    );
    check_prefix(
        &vbuf.to_vec().unwrap(),
        &head_positions,
        &format!("{what_p}: values"),
    );

    // run_length_encode, lengths in u32.
    let mut lengths_ref: Vec<u32> = Vec::with_capacity(runs);
    for &h in &heads {
        if h {
            lengths_ref.push(1);
        } else {
            *lengths_ref.last_mut().unwrap() += 1;
        }
    }
    let what_p = format!("{what} run_length_encode");
    let mut uout = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut lout = ctx.upload(&vec![u32::MAX; n + 3]).unwrap();
    let c = counted(ctx, mode(4), &what_p, |c| {
        ctx.run_length_encode(&input, &mut uout, &mut lout, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_written(
        &uout.to_vec().unwrap(),
        &unique_keys,
        p,
        &format!("{what_p}: runs"),
    );
    check_written(
        &lout.to_vec().unwrap(),
        &lengths_ref,
        u32::MAX,
        &format!("{what_p}: lengths"),
    );

    let what_p = format!("{what} run_length_encode_in_place");
    let mut buf = ctx.upload(keys).unwrap();
    let mut lout = ctx.upload(&vec![u32::MAX; n + 1]).unwrap();
    let c = counted(ctx, mode(5), &what_p, |c| {
        ctx.run_length_encode_in_place(&mut buf, &mut lout, &eq, c)
    });
    check_count(c, runs, &what_p);
    check_prefix(
        &buf.to_vec().unwrap(),
        &unique_keys,
        &format!("{what_p}: runs"),
    );
    check_written(
        &lout.to_vec().unwrap(),
        &lengths_ref,
        u32::MAX,
        &format!("{what_p}: lengths"),
    );

    // non_trivial_runs: offset and length of every run longer than one, in u32 and u64.
    let mut nt_offsets: Vec<u64> = Vec::new();
    let mut nt_lengths: Vec<u64> = Vec::new();
    let mut start = 0usize;
    for i in 0..n {
        if i + 1 == n || heads[i + 1] {
            if i > start {
                nt_offsets.push(start as u64);
                nt_lengths.push((i + 1 - start) as u64);
            }
            start = i + 1;
        }
    }
    let what_p = format!("{what} non_trivial_runs");
    let mut oout = ctx.upload(&vec![u32::MAX; n / 2 + 2]).unwrap();
    let mut lout = ctx.upload(&vec![u32::MAX; n / 2 + 1]).unwrap();
    let c = counted(ctx, mode(8), &what_p, |c| {
        ctx.non_trivial_runs(&input, &mut oout, &mut lout, &eq, c)
    });
    check_count(c, nt_offsets.len(), &what_p);
    let narrow = |v: &[u64]| v.iter().map(|&x| x as u32).collect::<Vec<u32>>();
    check_written(
        &oout.to_vec().unwrap(),
        &narrow(&nt_offsets),
        u32::MAX,
        &format!("{what_p}: offsets"),
    );
    check_written(
        &lout.to_vec().unwrap(),
        &narrow(&nt_lengths),
        u32::MAX,
        &format!("{what_p}: lengths"),
    );
    let mut oout = ctx.upload(&vec![u64::MAX; n / 2 + 1]).unwrap();
    let mut lout = ctx.upload(&vec![u64::MAX; n / 2 + 3]).unwrap();
    let c = ctx
        .non_trivial_runs(&input, &mut oout, &mut lout, &eq, Count::Host)
        .unwrap();
    check_count(c, nt_offsets.len(), &what_p);
    check_written(&oout.to_vec().unwrap(), &nt_offsets, u64::MAX, &what_p);
    check_written(&lout.to_vec().unwrap(), &nt_lengths, u64::MAX, &what_p);

    // reduce_by_key with the non-commutative affine composition: the in-order fold per run.
    let values = random_vec::<Affine>(r, n);
    let (rk, rv) = reduce_runs(keys, &values, T::same_run, compose);
    assert_eq!(rk, unique_keys);
    let vals = ctx.upload(&values).unwrap();
    let what_p = format!("{what} reduce_by_key");
    let mut kout = ctx.upload(&vec![p; n + 3]).unwrap();
    let mut vout = ctx.upload(&vec![Affine::poison(); n + 2]).unwrap();
    let c = counted(ctx, mode(6), &what_p, |c| {
        ctx.reduce_by_key(&input, &vals, &mut kout, &mut vout, &eq, &affine_op(), c)
    });
    check_count(c, runs, &what_p);
    check_written(&kout.to_vec().unwrap(), &rk, p, &format!("{what_p}: keys"));
    check_written(
        &vout.to_vec().unwrap(),
        &rv,
        Affine::poison(),
        &format!("{what_p}: values"),
    );

    let what_p = format!("{what} reduce_by_key_in_place");
    let mut kbuf = ctx.upload(keys).unwrap();
    let mut vbuf = ctx.upload(&values).unwrap();
    let c = counted(ctx, mode(7), &what_p, |c| {
        ctx.reduce_by_key_in_place(&mut kbuf, &mut vbuf, &eq, &affine_op(), c)
    });
    check_count(c, runs, &what_p);
    check_prefix(&kbuf.to_vec().unwrap(), &rk, &format!("{what_p}: keys"));
    check_prefix(&vbuf.to_vec().unwrap(), &rv, &format!("{what_p}: values"));

    same(&input.to_vec().unwrap(), keys).unwrap_or_else(|e| panic!("{what}: input: {e}"));
    same(&vals.to_vec().unwrap(), &values).unwrap_or_else(|e| panic!("{what}: values: {e}"));
}

fn runs_suite<T: Case>() {
    let mut r = rng();
    let size = std::mem::size_of::<T>();
    for ctx in backends() {
        let item_bytes = [size, size + 4, size + 8];
        let tiles: Vec<usize> = item_bytes
            .iter()
            .flat_map(|&b| [compact_tile(&ctx, b), run_tile(&ctx, b)])
            .collect();
        let mut case = 0;
        for n in test_sizes(&ctx, &mut r, &item_bytes) {
            for pat in RUN_PATTERNS {
                let keys = run_keys::<T>(&mut r, n, pat, &tiles);
                let runs = run_heads(&keys, T::same_run).iter().filter(|&&h| h).count();
                match pat {
                    Runs::One => assert_eq!(runs, n.min(1), "the generator's pattern"),
                    Runs::Mean(1) => assert_eq!(runs, n, "the generator's pattern"),
                    _ => {}
                }
                let what = format!("{ctx:?} {} n={n} {pat:?}", T::CUDA_TYPE);
                check_runs(&ctx, &mut r, &keys, case, &what);
                case += 1;
            }
        }
    }
}

#[test]
fn runs_i32_custom_equality() {
    runs_suite::<i32>();
}
#[test]
fn runs_u8() {
    runs_suite::<u8>();
}
#[test]
fn runs_i64() {
    runs_suite::<i64>();
}
#[test]
fn runs_u64() {
    runs_suite::<u64>();
}
#[test]
fn runs_f32_signed_zeros() {
    runs_suite::<f32>();
}
#[test]
fn runs_f64_custom_equality() {
    runs_suite::<f64>();
}
#[test]
fn runs_user_struct() {
    runs_suite::<Tagged>();
}

/// `Equality::equal_to()` on floats: each NaN is a run of its own, -0.0 and 0.0 are one run (its
/// first item is the one kept, bit for bit).
#[test]
fn nan_and_signed_zero_runs() {
    let nan = f32::NAN;
    let keys = [
        nan, nan, 1.0, -0.0, 0.0, 0.0, -0.0, nan, 2.0, 2.0, 0.0, -0.0,
    ];
    let expect_keys = [nan, nan, 1.0, -0.0, nan, 2.0, 0.0];
    let expect_lengths = [1u32, 1, 1, 4, 1, 2, 2];
    let values: Vec<i32> = (1..=12).collect();
    let expect_sums = [1, 2, 3, 4 + 5 + 6 + 7, 8, 9 + 10, 11 + 12];
    let eq = Equality::<f32>::equal_to();
    let mut r = rng();
    for ctx in backends() {
        let input = ctx.upload(&keys).unwrap();
        let mut out = ctx.upload(&[f32::sentinel(); 12]).unwrap();
        let c = ctx.unique(&input, &mut out, &eq, Count::Host).unwrap();
        assert_eq!(c, Some(7), "{ctx:?}");
        check_written(
            &out.to_vec().unwrap(),
            &expect_keys,
            f32::sentinel(),
            "unique",
        );
        let mut lengths = ctx.upload(&[u32::MAX; 12]).unwrap();
        let mut out = ctx.upload(&[f32::sentinel(); 12]).unwrap();
        let c = ctx
            .run_length_encode(&input, &mut out, &mut lengths, &eq, Count::Host)
            .unwrap();
        assert_eq!(c, Some(7), "{ctx:?}");
        check_written(&lengths.to_vec().unwrap(), &expect_lengths, u32::MAX, "rle");
        let vals = ctx.upload(&values).unwrap();
        let mut k = ctx.upload(&[f32::sentinel(); 12]).unwrap();
        let mut v = ctx.upload(&[i32::MAX; 12]).unwrap();
        let c = ctx
            .reduce_by_key(&input, &vals, &mut k, &mut v, &eq, &Op::plus(), Count::Host)
            .unwrap();
        assert_eq!(c, Some(7), "{ctx:?}");
        check_written(
            &k.to_vec().unwrap(),
            &expect_keys,
            f32::sentinel(),
            "rbk keys",
        );
        check_written(&v.to_vec().unwrap(), &expect_sums, i32::MAX, "rbk values");

        // Random keys from {NaN, -0.0, 0.0, 1.0} in runs across tiles, f32 and f64.
        let (tile, runs) = (compact_tile(&ctx, 8), run_tile(&ctx, 8));
        for n in [
            tile - 1,
            tile + 1,
            3 * tile + 7,
            runs - 1,
            2 * runs + 1,
            if ctx.is_gpu() { BIG } else { 20_000 },
        ] {
            let keys: Vec<f32> = (0..n)
                .map(|_| [f32::NAN, -0.0, 0.0, 1.0][r.random_range(0..4)])
                .collect();
            let values = random_vec::<i32>(&mut r, n);
            let heads = run_heads(&keys, |a, b| a == b);
            let (uk, _) = split(&keys, &heads);
            let (_, sums) = reduce_runs(&keys, &values, |a, b| a == b, i32::wrapping_add);
            let what = format!("{ctx:?} f32 NaN/zeros n={n}");
            let input = ctx.upload(&keys).unwrap();
            let mut out = ctx.upload(&vec![f32::sentinel(); n]).unwrap();
            let c = ctx.unique(&input, &mut out, &eq, Count::Host).unwrap();
            check_count(c, uk.len(), &what);
            check_written(&out.to_vec().unwrap(), &uk, f32::sentinel(), &what);
            let mut kbuf = ctx.upload(&keys).unwrap();
            let mut vbuf = ctx.upload(&values).unwrap();
            let c = ctx
                .reduce_by_key_in_place(&mut kbuf, &mut vbuf, &eq, &Op::plus(), Count::Host)
                .unwrap();
            check_count(c, uk.len(), &what);
            check_prefix(&kbuf.to_vec().unwrap(), &uk, &format!("{what} rbk keys"));
            check_prefix(&vbuf.to_vec().unwrap(), &sums, &format!("{what} rbk sums"));

            let keys64: Vec<f64> = keys.iter().map(|&x| x as f64).collect();
            let (uk64, _) = split(&keys64, &heads);
            let input = ctx.upload(&keys64).unwrap();
            let mut out = ctx.upload(&vec![f64::sentinel(); n]).unwrap();
            let mut lengths = ctx.upload(&vec![u64::MAX; n]).unwrap();
            let c = ctx
                .run_length_encode(
                    &input,
                    &mut out,
                    &mut lengths,
                    &Equality::equal_to(),
                    Count::Host,
                )
                .unwrap();
            check_count(c, uk64.len(), &what);
            check_written(&out.to_vec().unwrap(), &uk64, f64::sentinel(), &what);
            let mut expect_lengths = Vec::new();
            for &h in &heads {
                if h {
                    expect_lengths.push(1u64);
                } else {
                    *expect_lengths.last_mut().unwrap() += 1;
                }
            }
            check_written(&lengths.to_vec().unwrap(), &expect_lengths, u64::MAX, &what);
        }
    }
}

/// Reduce-by-key with values of every type and several operators (built-in and user,
/// commutative or not); run-length encoding with lengths of several types.
#[test]
fn reduce_by_key_value_types() {
    fn one<V: TestElement>(ctx: &Context, keys: &[i32], values: &[V], op: &Op<V>, what: &str) {
        let n = keys.len();
        let eq = i32::equality();
        let what = format!("{what} {} {}", V::CUDA_TYPE, op.name());
        let (rk, rv) = reduce_runs(keys, values, i32::same_run, |a, b| op.apply(a, b));
        let kin = ctx.upload(keys).unwrap();
        let vin = ctx.upload(values).unwrap();
        let mut kout = ctx.upload(&vec![i32::MIN; n + 1]).unwrap();
        let mut vout = ctx.upload(&vec![V::poison(); n + 1]).unwrap();
        let c = ctx
            .reduce_by_key(&kin, &vin, &mut kout, &mut vout, &eq, op, Count::Host)
            .unwrap();
        check_count(c, rk.len(), &what);
        check_written(&kout.to_vec().unwrap(), &rk, i32::MIN, &what);
        check_written(&vout.to_vec().unwrap(), &rv, V::poison(), &what);
        let mut kbuf = ctx.upload(keys).unwrap();
        let mut vbuf = ctx.upload(values).unwrap();
        let c = counted(ctx, Mode::Device, &what, |c| {
            ctx.reduce_by_key_in_place(&mut kbuf, &mut vbuf, &eq, op, c)
        });
        check_count(c, rk.len(), &format!("{what} in place"));
        check_prefix(&kbuf.to_vec().unwrap(), &rk, &format!("{what} in place"));
        check_prefix(&vbuf.to_vec().unwrap(), &rv, &format!("{what} in place"));
    }
    fn lengths<L: TestElement + Arithmetic>(ctx: &Context, keys: &[i32], what: &str) {
        let n = keys.len();
        let heads = run_heads(keys, i32::same_run);
        let (uk, _) = split(keys, &heads);
        let mut expect: Vec<L> = Vec::new();
        for &h in &heads {
            if h {
                expect.push(L::ONE);
            } else {
                let last = expect.last_mut().unwrap();
                *last = L::add(*last, L::ONE);
            }
        }
        let what = format!("{what} rle lengths {}", L::CUDA_TYPE);
        let mut buf = ctx.upload(keys).unwrap();
        let mut lout = ctx.upload(&vec![L::poison(); n + 2]).unwrap();
        let c = ctx
            .run_length_encode_in_place(&mut buf, &mut lout, &i32::equality(), Count::Host)
            .unwrap();
        check_count(c, uk.len(), &what);
        check_prefix(&buf.to_vec().unwrap(), &uk, &what);
        check_written(&lout.to_vec().unwrap(), &expect, L::poison(), &what);
    }
    let mut r = rng();
    for ctx in backends() {
        let tiles = [run_tile(&ctx, 5), run_tile(&ctx, 12), run_tile(&ctx, 16)];
        let mut ns = vec![1, 2];
        for t in tiles {
            ns.extend([t - 1, t, t + 1, 2 * t + 1]);
        }
        ns.push(if ctx.is_gpu() { BIG } else { 25_013 });
        for n in ns {
            for pat in [Runs::Mean(3), Runs::Mean(200), Runs::TileEdges] {
                let keys = run_keys::<i32>(&mut r, n, pat, &tiles);
                let what = format!("{ctx:?} n={n} {pat:?}");
                one(
                    &ctx,
                    &keys,
                    &random_vec::<i32>(&mut r, n),
                    &Op::plus(),
                    &what,
                );
                one(
                    &ctx,
                    &keys,
                    &random_vec::<u8>(&mut r, n),
                    &Op::maximum(),
                    &what,
                );
                one(
                    &ctx,
                    &keys,
                    &random_vec::<i64>(&mut r, n),
                    &Op::minimum(),
                    &what,
                );
                one(
                    &ctx,
                    &keys,
                    &random_vec::<f32>(&mut r, n),
                    &Op::plus(),
                    &what,
                );
                one(
                    &ctx,
                    &keys,
                    &random_vec::<f64>(&mut r, n),
                    &Op::plus(),
                    &what,
                );
                one(
                    &ctx,
                    &keys,
                    &random_vec::<u64>(&mut r, n),
                    &Op::bit_xor(),
                    &what,
                );
                one(
                    &ctx,
                    &keys,
                    &random_vec::<Tagged>(&mut r, n),
                    &tagged_op(),
                    &what,
                );
                let small: Vec<i64> = (0..n).map(|_| r.random_range(0..PRIME)).collect();
                one(&ctx, &keys, &small, &add_mod_prime(), &what);
                lengths::<u64>(&ctx, &keys, &what);
                lengths::<i32>(&ctx, &keys, &what);
                lengths::<f32>(&ctx, &keys, &what);
            }
        }
    }
}

/// User struct keys and user struct values: Tagged keys grouped by `a`, Affine values composed
/// in order.
#[test]
fn reduce_by_key_user_keys_and_values() {
    let mut r = rng();
    for ctx in backends() {
        let tiles = [run_tile(&ctx, 20)];
        for n in [
            1,
            tiles[0] - 1,
            tiles[0] + 1,
            5 * tiles[0],
            if ctx.is_gpu() { BIG } else { 9000 },
        ] {
            for pat in [Runs::One, Runs::Mean(1), Runs::Mean(7), Runs::TileEdges] {
                let keys = run_keys::<Tagged>(&mut r, n, pat, &tiles);
                let values = random_vec::<Affine>(&mut r, n);
                let (rk, rv) = reduce_runs(&keys, &values, Tagged::same_run, compose);
                let what = format!("{ctx:?} Tagged/Affine n={n} {pat:?}");
                let mut kbuf = ctx.upload(&keys).unwrap();
                let mut vbuf = ctx.upload(&values).unwrap();
                let c = ctx
                    .reduce_by_key_in_place(
                        &mut kbuf,
                        &mut vbuf,
                        &Tagged::equality(),
                        &affine_op(),
                        Count::Host,
                    )
                    .unwrap();
                check_count(c, rk.len(), &what);
                check_prefix(&kbuf.to_vec().unwrap(), &rk, &what);
                check_prefix(&vbuf.to_vec().unwrap(), &rv, &what);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reduce-by-key's algorithms: single pass and preprocessed (run starts, then a segmented
// reduction) behind `reduce_by_key_with`.

const RBK_ALGORITHMS: [ReduceByKeyAlgorithm; 2] = [
    ReduceByKeyAlgorithm::SinglePass,
    ReduceByKeyAlgorithm::Preprocessed,
];

/// One `reduce_by_key_with` call against the serial reference: poisoned outputs (nothing past
/// the count), the count delivered as `mode` says, the inputs unchanged.
#[allow(clippy::too_many_arguments)]
fn check_rbk_algorithm<V: TestElement>(
    ctx: &Context,
    keys: &[i32],
    values: &[V],
    op: &Op<V>,
    reference: impl Fn(V, V) -> V,
    algorithm: ReduceByKeyAlgorithm,
    mode: Mode,
    what: &str,
) {
    let n = keys.len();
    let what = format!(
        "{what} {algorithm:?} {} {} {mode:?}",
        V::CUDA_TYPE,
        op.name()
    );
    let (rk, rv) = reduce_runs(keys, values, i32::same_run, reference);
    let kin = ctx.upload(keys).unwrap();
    let vin = ctx.upload(values).unwrap();
    let mut kout = ctx.upload(&vec![i32::MIN; n + 3]).unwrap();
    let mut vout = ctx.upload(&vec![V::poison(); n + 2]).unwrap();
    let c = counted(ctx, mode, &what, |c| {
        ctx.reduce_by_key_with(
            &kin,
            &vin,
            &mut kout,
            &mut vout,
            &i32::equality(),
            op,
            c,
            algorithm,
        )
    });
    check_count(c, rk.len(), &what);
    check_written(
        &kout.to_vec().unwrap(),
        &rk,
        i32::MIN,
        &format!("{what}: keys"),
    );
    check_written(
        &vout.to_vec().unwrap(),
        &rv,
        V::poison(),
        &format!("{what}: values"),
    );
    same(&kin.to_vec().unwrap(), keys).unwrap_or_else(|e| panic!("{what}: keys input: {e}"));
    same(&vin.to_vec().unwrap(), values).unwrap_or_else(|e| panic!("{what}: values input: {e}"));
}

/// Both algorithms give the serial result: i32 keys (the custom equality `a / 10 == b / 10`)
/// with i64 sums, f32 sums and the non-commutative affine composition; sizes 0, 1, 2, around
/// the compaction and segmented-reduction tiles, and past 100 000; one run, runs of mean length
/// 1 (all distinct), 2, 10, 500 and runs across tile edges; every count destination.
#[test]
fn reduce_by_key_algorithms_agree() {
    let mut r = rng();
    for ctx in backends() {
        let tiles = [
            run_tile(&ctx, 8),
            run_tile(&ctx, 12),
            seg_tile::<i64>(&ctx),
            seg_tile::<f32>(&ctx),
        ];
        let mut sizes = vec![0, 1, 2];
        for t in tiles {
            sizes.extend([t - 1, t, t + 1, 2 * t + 1]);
        }
        sizes.push(100_003);
        sizes.push(r.random_range(100_000..160_000));
        if ctx.is_gpu() {
            sizes.push(BIG);
        }
        sizes.sort();
        sizes.dedup();
        let mut case = 0;
        for &n in &sizes {
            for pat in [
                Runs::One,
                Runs::Mean(1),
                Runs::Mean(2),
                Runs::Mean(10),
                Runs::Mean(500),
                Runs::TileEdges,
            ] {
                let keys = run_keys::<i32>(&mut r, n, pat, &tiles);
                let wide = random_vec::<i64>(&mut r, n);
                let floats = random_vec::<f32>(&mut r, n);
                let affine = random_vec::<Affine>(&mut r, n);
                let what = format!("{ctx:?} n={n} {pat:?}");
                for algorithm in RBK_ALGORITHMS {
                    let mode = |i: usize| MODES[(case + i) % MODES.len()];
                    let plus = |a: i64, b: i64| a.wrapping_add(b);
                    check_rbk_algorithm(
                        &ctx,
                        &keys,
                        &wide,
                        &Op::plus(),
                        plus,
                        algorithm,
                        mode(0),
                        &what,
                    );
                    check_rbk_algorithm(
                        &ctx,
                        &keys,
                        &floats,
                        &Op::plus(),
                        |a, b| a + b,
                        algorithm,
                        mode(1),
                        &what,
                    );
                    check_rbk_algorithm(
                        &ctx,
                        &keys,
                        &affine,
                        &affine_op(),
                        compose,
                        algorithm,
                        mode(2),
                        &what,
                    );
                    case += 1;
                }
            }
        }
    }
}

/// The segmented-reduction tile of `T` values with `u32` offsets (sm_90's on the CPU).
fn seg_tile<T: Element>(ctx: &Context) -> usize {
    mgpu::segreduce::tuning_for::<T, u32>(Some(ctx.arch().unwrap_or(90)), SegItems::Values, false)
        .unwrap()
        .nv()
}

/// The preprocessed algorithm checks what the single pass checks, with the same messages, before
/// anything is written (outputs and the count's buffer untouched).
#[test]
fn reduce_by_key_preprocessed_errors_write_nothing() {
    let preprocessed = ReduceByKeyAlgorithm::Preprocessed;
    for ctx in backends() {
        let w = |s: &str| format!("{ctx:?} preprocessed {s}");
        let eq = i32::equality();
        let input = ctx.upload(&[1, 4, 4, 2, 7]).unwrap();
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();

        for algorithm in RBK_ALGORITHMS {
            let what = w(&format!("{algorithm:?} values of another length"));
            for len in [4, 6] {
                let vals = ctx.upload(&vec![1i64; len]).unwrap();
                let e = ctx
                    .reduce_by_key_with(
                        &input,
                        &vals,
                        &mut kout,
                        &mut vout,
                        &eq,
                        &Op::plus(),
                        Count::Both(&mut count),
                        algorithm,
                    )
                    .unwrap_err();
                let needle = format!("{len} values for 5 keys");
                expect_invalid(e, &["reduce_by_key", &needle], &what);
            }
        }
        let vals = ctx.upload(&[1i64, 2, 3, 4, 5]).unwrap();
        let mut kshort = ctx.upload(&[i32::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key_with(
                &input,
                &vals,
                &mut kshort,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Device(&mut count),
                preprocessed,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "reduce_by_key",
                "the keys' output holds 4 elements but the input has 5",
            ],
            &w("keys' output"),
        );
        assert_eq!(kshort.to_vec().unwrap(), [i32::MIN; 4], "{}", w("written"));
        let mut vshort = ctx.upload(&[i64::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key_with(
                &input,
                &vals,
                &mut kout,
                &mut vshort,
                &eq,
                &Op::plus(),
                Count::Host,
                preprocessed,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "reduce_by_key",
                "the values' output holds 4 elements but the input has 5",
            ],
            &w("values' output"),
        );
        assert_eq!(vshort.to_vec().unwrap(), [i64::MIN; 4], "{}", w("written"));
        let mut empty = ctx.zeros::<u64>(0).unwrap();
        let e = ctx
            .reduce_by_key_with(
                &input,
                &vals,
                &mut kout,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Device(&mut empty),
                preprocessed,
            )
            .unwrap_err();
        expect_invalid(e, &["needs room for one element"], &w("empty count"));
        // Arguments of another backend.
        let other = if ctx.is_gpu() {
            Context::cpu()
        } else {
            match gpu() {
                Some(g) => g,
                None => Context::cpu(),
            }
        };
        if other.is_gpu() != ctx.is_gpu() {
            let foreign = other.upload(&[1i64, 2, 3, 4, 5]).unwrap();
            let e = ctx
                .reduce_by_key_with(
                    &input,
                    &foreign,
                    &mut kout,
                    &mut vout,
                    &eq,
                    &Op::plus(),
                    Count::Host,
                    preprocessed,
                )
                .unwrap_err();
            expect_invalid(e, &["the values"], &w("values of another backend"));
        }
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5], "{}", w("written"));
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6], "{}", w("written"));
        assert_eq!(
            count.to_vec().unwrap(),
            [COUNT_POISON],
            "{}",
            w("count written")
        );
        still_usable(&ctx, &w("after the errors"));
    }
}

/// The preprocessed algorithm on views at unaligned offsets, with the count in the middle of a
/// buffer: the runs land in the views only.
#[test]
fn reduce_by_key_preprocessed_on_views() {
    let mut r = rng();
    for ctx in backends() {
        let tiles = [compact_tile(&ctx, 12), seg_tile::<i64>(&ctx)];
        for n in [5, tiles[0] + 3, 3 * tiles[1] + 1] {
            let keys = run_keys::<i32>(&mut r, n + 3, Runs::Mean(4), &tiles);
            let values = random_vec::<i64>(&mut r, n + 1);
            let (rk, rv) = reduce_runs(&keys[3..], &values[1..], i32::same_run, i64::wrapping_add);
            let what = format!("{ctx:?} views n={n}");
            let kin = ctx.upload(&keys).unwrap();
            let vin = ctx.upload(&values).unwrap();
            let mut kout = ctx.upload(&vec![i32::MIN; n + 2]).unwrap();
            let mut vout = ctx.upload(&vec![i64::MIN; n + 5]).unwrap();
            let c = counted(&ctx, Mode::Both, &what, |c| {
                ctx.reduce_by_key_with(
                    &kin.slice(3..),
                    &vin.slice(1..),
                    &mut kout.slice_mut(1..n + 1),
                    &mut vout.slice_mut(3..),
                    &i32::equality(),
                    &Op::plus(),
                    c,
                    ReduceByKeyAlgorithm::Preprocessed,
                )
            });
            check_count(c, rk.len(), &what);
            let k = kout.to_vec().unwrap();
            assert_eq!(k[0], i32::MIN, "{what}: written before the keys' view");
            check_written(&k[1..], &rk, i32::MIN, &format!("{what}: keys"));
            let v = vout.to_vec().unwrap();
            assert_eq!(
                v[..3],
                [i64::MIN; 3],
                "{what}: written before the values' view"
            );
            check_written(&v[3..], &rv, i64::MIN, &format!("{what}: values"));
        }
    }
}

/// On the GPU, an equality that does not compile fails before anything is written; an operator
/// that does not compile fails after the keys' output was written (documented), the values'
/// output and the count untouched. (The CPU backend runs the Rust side only.)
#[test]
fn reduce_by_key_preprocessed_compile_errors() {
    let broken_eq = Equality::new("broken", |a: &i32, b: &i32| a == b, "a +* b");
    let broken_op = Op::new("broken_rbk", 0i64, |a, b| a + b, "a +* b");
    for ctx in backends() {
        let input = ctx.upload(&[3, 3, 4, 6, 6, 6]).unwrap();
        let values = ctx.upload(&[1i64; 6]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 6]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
        let eq_result = ctx.reduce_by_key_with(
            &input,
            &values,
            &mut kout,
            &mut vout,
            &broken_eq,
            &Op::plus(),
            Count::Device(&mut count),
            ReduceByKeyAlgorithm::Preprocessed,
        );
        if !ctx.is_gpu() {
            assert_eq!(eq_result.unwrap(), None, "the CPU backend does not compile");
            continue;
        }
        assert!(
            matches!(eq_result, Err(Error::Compile { .. })),
            "broken equality: {eq_result:?}"
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 6], "broken equality");
        let op_result = ctx.reduce_by_key_with(
            &input,
            &values,
            &mut kout,
            &mut vout,
            &Equality::equal_to(),
            &broken_op,
            Count::Device(&mut count),
            ReduceByKeyAlgorithm::Preprocessed,
        );
        assert!(
            matches!(op_result, Err(Error::Compile { .. })),
            "broken operator: {op_result:?}"
        );
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6], "broken operator");
        assert_eq!(count.to_vec().unwrap(), [COUNT_POISON], "no count written");
        still_usable(&ctx, "after compile errors");
    }
}

// ---------------------------------------------------------------------------------------------
// In place, repeated on the GPU: a race between tiles shows as a result that changes.

#[test]
fn in_place_stress_on_gpu() {
    let Some(ctx) = gpu() else { return };
    let mut r = rng();
    const REPS: usize = 20;
    let pred = i32::predicate();
    let eq = i32::equality();
    let t4 = compact_tile(&ctx, 4);
    let t5 = compact_tile(&ctx, 5);
    let t12 = compact_tile(&ctx, 12);
    let r8 = run_tile(&ctx, 8);
    let mut ns = vec![
        r8 - 1,
        r8 + 1,
        2,
        t4 - 1,
        t4,
        t4 + 1,
        2 * t4 + 1,
        t5 - 1,
        t5 + 1,
        t12 - 1,
        t12 + 1,
    ];
    ns.extend([2 * t12, 50 * t4 + 3, BIG]);
    ns.sort();
    ns.dedup();
    let tiles = [t4, t5, t12, r8];
    /// Runs `f` on fresh copies `REPS` times: every result equal to `expect`.
    fn repeat<T: Element>(what: &str, expect: &[T], mut f: impl FnMut() -> Vec<T>) {
        for rep in 0..REPS {
            let got = f();
            same(&got, expect).unwrap_or_else(|e| panic!("{what}: repetition {rep}: {e}"));
        }
    }
    for &n in &ns {
        // Selection patterns: all, none, alternating, all but one in 1000, long blocks.
        for sel in [
            Sel::All,
            Sel::Nothing,
            Sel::Alternating,
            Sel::Rate(0.999),
            Sel::Blocks,
        ] {
            let keep = selection(&mut r, n, sel);
            let data: Vec<i32> = keep.iter().map(|&k| i32::make(&mut r, k)).collect();
            let (kept, rejected) = split(&data, &keep);
            let k = kept.len();
            let flags: Vec<u8> = keep.iter().map(|&k| k as u8).collect();
            let flag_buf = ctx.upload(&flags).unwrap();
            let what = format!("{ctx:?} stress n={n} {sel:?}");
            let with_count = |mut v: Vec<i32>, c: Option<u64>| {
                v.truncate(k);
                v.push(c.unwrap() as i32);
                v
            };
            let mut expect = kept.clone();
            expect.push(k as i32);
            repeat(&format!("{what} select_if_in_place"), &expect, || {
                let mut b = ctx.upload(&data).unwrap();
                let c = ctx.select_if_in_place(&mut b, &pred, Count::Host).unwrap();
                with_count(b.to_vec().unwrap(), c)
            });
            repeat(&format!("{what} select_flagged_in_place"), &expect, || {
                let mut b = ctx.upload(&data).unwrap();
                let c = ctx
                    .select_flagged_in_place(&mut b, &flag_buf, Count::Host)
                    .unwrap();
                with_count(b.to_vec().unwrap(), c)
            });
            let mut expect2 = expect.clone();
            expect2.extend(&rejected);
            repeat(&format!("{what} partition_copy_in_place"), &expect2, || {
                let mut b = ctx.upload(&data).unwrap();
                let mut no = ctx.zeros::<i32>(n).unwrap();
                let c = ctx
                    .partition_copy_in_place(&mut b, &mut no, &pred, Count::Host)
                    .unwrap();
                let mut v = with_count(b.to_vec().unwrap(), c);
                v.extend(&no.to_vec().unwrap()[..n - k]);
                v
            });
            let mut stable = kept.clone();
            stable.extend(&rejected);
            repeat(&format!("{what} partition_in_place"), &stable, || {
                let mut b = ctx.upload(&data).unwrap();
                assert_eq!(ctx.partition_in_place(&mut b, &pred).unwrap(), k as u64);
                b.to_vec().unwrap()
            });
        }
        // Run patterns: one run, all distinct, long runs, runs across tiles.
        for pat in [Runs::One, Runs::Mean(1), Runs::Mean(500), Runs::TileEdges] {
            let keys = run_keys::<i32>(&mut r, n, pat, &tiles);
            let heads = run_heads(&keys, i32::same_run);
            let (uk, _) = split(&keys, &heads);
            let m = uk.len();
            let positions: Vec<u32> = (0..n as u32).collect();
            let (hp, _) = split(&positions, &heads);
            let values = random_vec::<Affine>(&mut r, n);
            let (_, rv) = reduce_runs(&keys, &values, i32::same_run, compose);
            let what = format!("{ctx:?} stress n={n} {pat:?}");
            let mut expect = uk.clone();
            expect.push(m as i32);
            repeat(&format!("{what} unique_in_place"), &expect, || {
                let mut b = ctx.upload(&keys).unwrap();
                let c = ctx.unique_in_place(&mut b, &eq, Count::Host).unwrap();
                let mut v = b.to_vec().unwrap();
                v.truncate(m);
                v.push(c.unwrap() as i32);
                v
            });
            let mut expect_pairs: Vec<(i32, u32)> =
                uk.iter().copied().zip(hp.iter().copied()).collect();
            expect_pairs.push((m as i32, 0));
            let expect_pairs: Vec<u64> = expect_pairs
                .iter()
                .map(|&(k, v)| ((k as u32 as u64) << 32) | v as u64)
                .collect();
            repeat(
                &format!("{what} unique_by_key_in_place"),
                &expect_pairs,
                || {
                    let mut kb = ctx.upload(&keys).unwrap();
                    let mut vb = ctx.upload(&positions).unwrap();
                    let c = ctx
                        .unique_by_key_in_place(&mut kb, &mut vb, &eq, Count::Host)
                        .unwrap();
                    let (kv, vv) = (kb.to_vec().unwrap(), vb.to_vec().unwrap());
                    let mut out: Vec<u64> = (0..m)
                        .map(|i| ((kv[i] as u32 as u64) << 32) | vv[i] as u64)
                        .collect();
                    out.push((c.unwrap() as u32 as u64) << 32);
                    out
                },
            );
            let mut lengths: Vec<u32> = Vec::new();
            for &h in &heads {
                if h {
                    lengths.push(1);
                } else {
                    *lengths.last_mut().unwrap() += 1;
                }
            }
            let mut expect_rle: Vec<u64> = uk
                .iter()
                .zip(&lengths)
                .map(|(&k, &l)| ((k as u32 as u64) << 32) | l as u64)
                .collect();
            expect_rle.push(m as u64);
            repeat(
                &format!("{what} run_length_encode_in_place"),
                &expect_rle,
                || {
                    let mut b = ctx.upload(&keys).unwrap();
                    let mut l = ctx.zeros::<u32>(n).unwrap();
                    let c = ctx
                        .run_length_encode_in_place(&mut b, &mut l, &eq, Count::Host)
                        .unwrap();
                    let (kv, lv) = (b.to_vec().unwrap(), l.to_vec().unwrap());
                    let mut out: Vec<u64> = (0..m)
                        .map(|i| ((kv[i] as u32 as u64) << 32) | lv[i] as u64)
                        .collect();
                    out.push(c.unwrap());
                    out
                },
            );
            let mut expect_rbk: Vec<Affine> = uk
                .iter()
                .map(|&k| Affine { a: k as u32, b: 0 })
                .chain(rv.iter().copied())
                .collect();
            expect_rbk.push(Affine { a: m as u32, b: 0 });
            repeat(
                &format!("{what} reduce_by_key_in_place"),
                &expect_rbk,
                || {
                    let mut kb = ctx.upload(&keys).unwrap();
                    let mut vb = ctx.upload(&values).unwrap();
                    let c = ctx
                        .reduce_by_key_in_place(&mut kb, &mut vb, &eq, &affine_op(), Count::Host)
                        .unwrap();
                    let (kv, vv) = (kb.to_vec().unwrap(), vb.to_vec().unwrap());
                    let mut out: Vec<Affine> = kv[..m]
                        .iter()
                        .map(|&k| Affine { a: k as u32, b: 0 })
                        .collect();
                    out.extend(&vv[..m]);
                    out.push(Affine {
                        a: c.unwrap() as u32,
                        b: 0,
                    });
                    out
                },
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Views at unaligned offsets.

/// select_if, unique, partition_if and reduce_by_key on views: inputs `slice(3..)` and
/// `slice(5..)` of buffers with random data before them, outputs `slice_mut(1..)` of poisoned
/// buffers; in place on `slice_mut(1..1 + n)` with data around it that must survive.
fn views_for<T: Case>(ctx: &Context, r: &mut StdRng) {
    let size = std::mem::size_of::<T>();
    let pred = T::predicate();
    let eq = T::equality();
    let p = T::sentinel();
    let tiles = [
        compact_tile(ctx, size),
        compact_tile(ctx, size + 8),
        run_tile(ctx, size + 8),
    ];
    let mut ns = vec![0, 1, 2];
    for t in tiles {
        ns.extend([t - 1, t, t + 1, 2 * t + 3]);
    }
    ns.push(if ctx.is_gpu() { BIG } else { 10_007 });
    for n in ns {
        let what = format!("{ctx:?} {} views n={n}", T::CUDA_TYPE);
        // Selection.
        let keep = selection(r, n, Sel::Rate(0.6));
        let data: Vec<T> = keep.iter().map(|&k| T::make(r, k)).collect();
        let (kept, rejected) = split(&data, &keep);
        let mut host = random_vec::<T>(r, 3);
        host.extend(&data);
        let buf = ctx.upload(&host).unwrap();
        let mut out = ctx.upload(&vec![p; n + 3]).unwrap();
        let c = ctx
            .select_if(&buf.slice(3..), &mut out.slice_mut(1..), &pred, Count::Host)
            .unwrap();
        check_count(c, kept.len(), &format!("{what} select_if"));
        let got = out.to_vec().unwrap();
        same(&got[..1], &[p]).unwrap_or_else(|e| panic!("{what} select_if: before: {e}"));
        check_written(&got[1..], &kept, p, &format!("{what} select_if"));

        let mut expect = kept.clone();
        expect.extend(rejected.iter().rev());
        let mut out = ctx.upload(&vec![p; n + 8]).unwrap();
        let c = ctx
            .partition_if(
                &buf.slice(3..),
                &mut out.slice_mut(5..5 + n),
                &pred,
                Count::Host,
            )
            .unwrap();
        check_count(c, kept.len(), &format!("{what} partition_if"));
        let got = out.to_vec().unwrap();
        same(&got[..5], &[p; 5]).unwrap_or_else(|e| panic!("{what} partition_if: before: {e}"));
        check_written(&got[5..], &expect, p, &format!("{what} partition_if"));

        // In place on an inner view.
        let mut around = random_vec::<T>(r, 1);
        around.extend(&data);
        around.extend(random_vec::<T>(r, 2));
        let mut inplace = ctx.upload(&around).unwrap();
        let c = ctx
            .select_if_in_place(&mut inplace.slice_mut(1..1 + n), &pred, Count::Host)
            .unwrap();
        check_count(c, kept.len(), &format!("{what} select_if_in_place"));
        let got = inplace.to_vec().unwrap();
        same(&got[..1], &around[..1]).unwrap_or_else(|e| panic!("{what}: before the view: {e}"));
        same(&got[1 + n..], &around[1 + n..])
            .unwrap_or_else(|e| panic!("{what}: after the view: {e}"));
        check_prefix(&got[1..], &kept, &format!("{what} select_if_in_place"));

        // Runs.
        let keys = run_keys::<T>(r, n, Runs::Mean(5), &tiles);
        let values = random_vec::<Affine>(r, n);
        let (rk, rv) = reduce_runs(&keys, &values, T::same_run, compose);
        let mut kh = random_vec::<T>(r, 3);
        kh.extend(&keys);
        let mut vh = random_vec::<Affine>(r, 5);
        vh.extend(&values);
        let (kin, vin) = (ctx.upload(&kh).unwrap(), ctx.upload(&vh).unwrap());
        let mut kout = ctx.upload(&vec![p; n + 2]).unwrap();
        let mut vout = ctx.upload(&vec![Affine::poison(); n + 7]).unwrap();
        let c = ctx
            .reduce_by_key(
                &kin.slice(3..),
                &vin.slice(5..),
                &mut kout.slice_mut(1..),
                &mut vout.slice_mut(7..),
                &eq,
                &affine_op(),
                Count::Host,
            )
            .unwrap();
        check_count(c, rk.len(), &format!("{what} reduce_by_key"));
        let (kg, vg) = (kout.to_vec().unwrap(), vout.to_vec().unwrap());
        same(&kg[..1], &[p]).unwrap_or_else(|e| panic!("{what} rbk keys: before: {e}"));
        check_written(&kg[1..], &rk, p, &format!("{what} reduce_by_key keys"));
        same(&vg[..7], &[Affine::poison(); 7])
            .unwrap_or_else(|e| panic!("{what} rbk values: before: {e}"));
        check_written(
            &vg[7..],
            &rv,
            Affine::poison(),
            &format!("{what} reduce_by_key values"),
        );

        let mut out = ctx.upload(&vec![p; n + 1]).unwrap();
        let c = ctx
            .unique(&kin.slice(3..), &mut out.slice_mut(1..), &eq, Count::Host)
            .unwrap();
        check_count(c, rk.len(), &format!("{what} unique"));
        let got = out.to_vec().unwrap();
        same(&got[..1], &[p]).unwrap_or_else(|e| panic!("{what} unique: before: {e}"));
        check_written(&got[1..], &rk, p, &format!("{what} unique"));

        // Reduce-by-key in place on inner views at different offsets.
        let mut kb = ctx.upload(&kh).unwrap();
        let mut vb = ctx.upload(&vh).unwrap();
        let c = ctx
            .reduce_by_key_in_place(
                &mut kb.slice_mut(3..),
                &mut vb.slice_mut(5..),
                &eq,
                &affine_op(),
                Count::Host,
            )
            .unwrap();
        check_count(c, rk.len(), &format!("{what} reduce_by_key_in_place"));
        let (kg, vg) = (kb.to_vec().unwrap(), vb.to_vec().unwrap());
        same(&kg[..3], &kh[..3]).unwrap_or_else(|e| panic!("{what}: before the keys: {e}"));
        same(&vg[..5], &vh[..5]).unwrap_or_else(|e| panic!("{what}: before the values: {e}"));
        check_prefix(
            &kg[3..],
            &rk,
            &format!("{what} reduce_by_key_in_place keys"),
        );
        check_prefix(
            &vg[5..],
            &rv,
            &format!("{what} reduce_by_key_in_place values"),
        );
    }
}

#[test]
fn compaction_on_views() {
    let mut r = rng();
    for ctx in backends() {
        views_for::<i32>(&ctx, &mut r);
        views_for::<u8>(&ctx, &mut r);
        views_for::<f64>(&ctx, &mut r);
        views_for::<Tagged>(&ctx, &mut r);
    }
}

// ---------------------------------------------------------------------------------------------
// Errors.

/// An `Error::InvalidArgument` whose message names the problem (`needles`).
fn expect_invalid(err: Error, needles: &[&str], what: &str) {
    let msg = err.to_string();
    assert!(matches!(err, Error::InvalidArgument(_)), "{what}: {err:?}");
    for needle in needles {
        assert!(
            msg.contains(needle),
            "{what}: message {msg:?} lacks {needle:?}"
        );
    }
}

fn still_usable(ctx: &Context, what: &str) {
    let input = ctx.upload(&[1, 2, 3, 4, 5, 6, 7]).unwrap();
    let mut out = ctx.upload(&[0i32; 7]).unwrap();
    let c = ctx
        .select_if(&input, &mut out, &i32::predicate(), Count::Host)
        .unwrap_or_else(|e| panic!("{what}: context unusable after the error: {e}"));
    assert_eq!(c, Some(3), "{what}");
    assert_eq!(out.to_vec().unwrap()[..3], [1, 4, 7], "{what}");
}

#[test]
fn bad_lengths_are_errors_and_write_nothing() {
    for ctx in backends() {
        let w = |s: &str| format!("{ctx:?} {s}");
        let pred = i32::predicate();
        let eq = i32::equality();
        let data = [1, 4, 4, 2, 7];
        let input = ctx.upload(&data).unwrap();
        let poison = [i32::MIN; 4];
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();

        // select_if: output too short; the count's buffer is untouched too.
        let mut out = ctx.upload(&poison).unwrap();
        let e = ctx
            .select_if(&input, &mut out, &pred, Count::Both(&mut count))
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "select_if",
                "the output holds 4 elements but the input has 5",
            ],
            &w("select_if"),
        );
        assert_eq!(out.to_vec().unwrap(), poison, "{}", w("select_if: written"));
        assert_eq!(
            count.to_vec().unwrap(),
            [COUNT_POISON],
            "{}",
            w("select_if: count written")
        );
        still_usable(&ctx, &w("select_if"));

        // select_flagged: flags of another length.
        let flags = ctx.upload(&[1u8, 0, 1, 1]).unwrap();
        let mut out = ctx.upload(&[i32::MIN; 5]).unwrap();
        let e = ctx
            .select_flagged(&input, &flags, &mut out, Count::Device(&mut count))
            .unwrap_err();
        expect_invalid(e, &["select_flagged", "same length"], &w("select_flagged"));
        assert_eq!(
            out.to_vec().unwrap(),
            [i32::MIN; 5],
            "{}",
            w("select_flagged: written")
        );
        assert_eq!(count.to_vec().unwrap(), [COUNT_POISON]);
        let mut data_buf = ctx.upload(&data).unwrap();
        let e = ctx
            .select_flagged_in_place(&mut data_buf, &flags, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["select_flagged_in_place", "same length"],
            &w("flagged in place"),
        );
        assert_eq!(
            data_buf.to_vec().unwrap(),
            data,
            "{}",
            w("flagged in place: written")
        );
        still_usable(&ctx, &w("select_flagged"));

        // partition_if, partition_copy(_in_place): outputs too short.
        let mut out = ctx.upload(&poison).unwrap();
        let e = ctx
            .partition_if(&input, &mut out, &pred, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["partition_if", "holds 4 elements but the input has 5"],
            &w("partition_if"),
        );
        assert_eq!(out.to_vec().unwrap(), poison);
        let mut yes = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut no = ctx.upload(&poison).unwrap();
        let e = ctx
            .partition_copy(&input, &mut yes, &mut no, &pred, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["partition_copy", "rejected", "holds 4 elements"],
            &w("partition_copy"),
        );
        assert_eq!(
            yes.to_vec().unwrap(),
            [i32::MIN; 5],
            "{}",
            w("partition_copy: written")
        );
        assert_eq!(no.to_vec().unwrap(), poison);
        let mut data_buf = ctx.upload(&data).unwrap();
        let e = ctx
            .partition_copy_in_place(&mut data_buf, &mut no, &pred, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["partition_copy_in_place", "holds 4 elements"],
            &w("partition_copy_in_place"),
        );
        assert_eq!(
            data_buf.to_vec().unwrap(),
            data,
            "{}",
            w("partition_copy_in_place: data")
        );
        assert_eq!(no.to_vec().unwrap(), poison);
        still_usable(&ctx, &w("partition"));

        // unique, unique_by_key.
        let mut out = ctx.upload(&poison).unwrap();
        let e = ctx.unique(&input, &mut out, &eq, Count::Host).unwrap_err();
        expect_invalid(
            e,
            &["unique", "holds 4 elements but the input has 5"],
            &w("unique"),
        );
        assert_eq!(out.to_vec().unwrap(), poison);
        let short_values = ctx.upload(&[1u32, 2, 3, 4]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut vout = ctx.upload(&[u32::MAX; 5]).unwrap();
        let e = ctx
            .unique_by_key(
                &input,
                &short_values,
                &mut kout,
                &mut vout,
                &eq,
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["unique_by_key", "4 values for 5 keys"],
            &w("unique_by_key"),
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        assert_eq!(vout.to_vec().unwrap(), [u32::MAX; 5]);
        let values = ctx.upload(&[1u32, 2, 3, 4, 5]).unwrap();
        let mut vshort = ctx.upload(&[u32::MAX; 4]).unwrap();
        let e = ctx
            .unique_by_key(&input, &values, &mut kout, &mut vshort, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["unique_by_key", "values' output holds 4"],
            &w("unique_by_key values"),
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        let mut kb = ctx.upload(&data).unwrap();
        let mut vb = ctx.upload(&[1u32, 2, 3, 4]).unwrap();
        let e = ctx
            .unique_by_key_in_place(&mut kb, &mut vb, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["unique_by_key_in_place", "same length"],
            &w("unique_by_key_in_place"),
        );
        assert_eq!(kb.to_vec().unwrap(), data);
        assert_eq!(vb.to_vec().unwrap(), [1, 2, 3, 4]);
        still_usable(&ctx, &w("unique"));

        // run_length_encode: lengths or runs' output too short.
        let mut runs = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut lengths = ctx.upload(&[u32::MAX; 4]).unwrap();
        let e = ctx
            .run_length_encode(&input, &mut runs, &mut lengths, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["run_length_encode", "lengths' output holds 4"],
            &w("rle"),
        );
        assert_eq!(runs.to_vec().unwrap(), [i32::MIN; 5]);
        assert_eq!(lengths.to_vec().unwrap(), [u32::MAX; 4]);
        let mut runs = ctx.upload(&[i32::MIN; 3]).unwrap();
        let mut lengths = ctx.upload(&[u32::MAX; 5]).unwrap();
        let e = ctx
            .run_length_encode(&input, &mut runs, &mut lengths, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["run_length_encode", "holds 3 elements but the input has 5"],
            &w("rle runs"),
        );
        assert_eq!(lengths.to_vec().unwrap(), [u32::MAX; 5]);
        let mut kb = ctx.upload(&data).unwrap();
        let mut lengths = ctx.upload(&[u32::MAX; 2]).unwrap();
        let e = ctx
            .run_length_encode_in_place(&mut kb, &mut lengths, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["run_length_encode_in_place", "holds 2 elements"],
            &w("rle in place"),
        );
        assert_eq!(kb.to_vec().unwrap(), data);
        still_usable(&ctx, &w("rle"));

        // reduce_by_key: values of another length, outputs too short.
        let vals = ctx.upload(&[1i64, 2, 3, 4, 5, 6]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();
        let e = ctx
            .reduce_by_key(
                &input,
                &vals,
                &mut kout,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(e, &["reduce_by_key", "6 values for 5 keys"], &w("rbk"));
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6]);
        let vals = ctx.upload(&[1i64, 2, 3, 4, 5]).unwrap();
        let mut kshort = ctx.upload(&[i32::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key(
                &input,
                &vals,
                &mut kshort,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["reduce_by_key", "keys' output holds 4"],
            &w("rbk keys out"),
        );
        assert_eq!(kshort.to_vec().unwrap(), [i32::MIN; 4]);
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6]);
        let mut vshort = ctx.upload(&[i64::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key(
                &input,
                &vals,
                &mut kout,
                &mut vshort,
                &eq,
                &Op::plus(),
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["reduce_by_key", "values' output holds 4"],
            &w("rbk values out"),
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        let mut kb = ctx.upload(&data).unwrap();
        let mut vb = ctx.upload(&[1i64, 2]).unwrap();
        let e = ctx
            .reduce_by_key_in_place(&mut kb, &mut vb, &eq, &Op::plus(), Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["reduce_by_key_in_place", "2 values for 5 keys"],
            &w("rbk in place"),
        );
        assert_eq!(kb.to_vec().unwrap(), data);
        assert_eq!(vb.to_vec().unwrap(), [1, 2]);

        // An empty buffer for the count.
        let mut empty = ctx.zeros::<u64>(0).unwrap();
        let mut out = ctx.upload(&[i32::MIN; 5]).unwrap();
        let e = ctx
            .select_if(&input, &mut out, &pred, Count::Device(&mut empty))
            .unwrap_err();
        expect_invalid(e, &["needs room for one element"], &w("empty count"));
        assert_eq!(out.to_vec().unwrap(), [i32::MIN; 5]);
        still_usable(&ctx, &w("rbk"));
    }
}

/// A CUDA expression that does not compile: `Error::Compile` with NVRTC's log in the message,
/// nothing written, the context still usable. (The CPU backend runs the Rust side only.)
#[test]
fn expressions_that_do_not_compile() {
    let broken_pred = Predicate::new("broken", |x: &i32| x % 2 == 0, "x +* 2");
    let broken_eq = Equality::new("broken", |a: &i32, b: &i32| a == b, "a +* b");
    let broken_op = Op::new("broken", 0i64, |a, b| a + b, "a +* b");
    let data = [3, 3, 4, 6, 6, 6];
    for ctx in backends() {
        let input = ctx.upload(&data).unwrap();
        let values = ctx.upload(&[1i64; 6]).unwrap();
        let mut out = ctx.upload(&[i32::MIN; 6]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
        let results = [
            (
                "select_if",
                ctx.select_if(&input, &mut out, &broken_pred, Count::Both(&mut count)),
            ),
            (
                "unique",
                ctx.unique(&input, &mut out, &broken_eq, Count::Device(&mut count)),
            ),
            (
                "reduce_by_key",
                ctx.reduce_by_key(
                    &input,
                    &values,
                    &mut out,
                    &mut vout,
                    &Equality::equal_to(),
                    &broken_op,
                    Count::Device(&mut count),
                ),
            ),
        ];
        if !ctx.is_gpu() {
            for (name, res) in results {
                res.unwrap_or_else(|e| panic!("{name}: the CPU backend does not compile: {e}"));
            }
            continue;
        }
        for (name, res) in results {
            let err = res.expect_err(name);
            let msg = err.to_string();
            match &err {
                Error::Compile { log, .. } => {
                    assert!(!log.trim().is_empty(), "{name}: empty NVRTC log: {msg}");
                    assert!(
                        msg.contains(log.as_str()),
                        "{name}: the log is not in {msg:?}"
                    );
                    assert!(msg.contains("NVRTC log"), "{name}: {msg}");
                }
                other => panic!("{name}: expected Error::Compile, got {other:?}"),
            }
        }
        assert_eq!(out.to_vec().unwrap(), [i32::MIN; 6], "nothing written");
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6], "nothing written");
        assert_eq!(count.to_vec().unwrap(), [COUNT_POISON], "no count written");
        still_usable(&ctx, "after compile errors");
        // The same primitives with working expressions, on the same context.
        let c = ctx
            .unique(&input, &mut out, &Equality::equal_to(), Count::Host)
            .unwrap();
        assert_eq!(c, Some(3));
        assert_eq!(out.to_vec().unwrap()[..3], [3, 4, 6]);
    }
}

// ---------------------------------------------------------------------------------------------
// More than 2^32 items (GPU, MGPU_BIG=1): 64-bit counts.

/// x_i = i % 251 as u8 over 2^32 + 2^25 items. "x != 250" keeps more than 2^32 of them (output
/// positions past 2^32); then "x % 7 == 0" in place. Expected outputs in closed form, checked on
/// windows (start, around 2^31 and 2^32, the end, past the count).
#[test]
fn select_past_2_pow_32_items_on_gpu() {
    if std::env::var("MGPU_BIG").as_deref() != Ok("1") {
        eprintln!("skipped: set MGPU_BIG=1 to run (needs about 9 GB of GPU memory)");
        return;
    }
    let Some(ctx) = gpu() else { return };
    let n: usize = (1 << 32) + (1 << 25);
    // Filled in chunks of a multiple of 251 items: every chunk is the same pattern.
    let chunk: usize = 251 << 20;
    let pattern: Vec<u8> = (0..chunk).map(|i| (i % 251) as u8).collect();
    let mut input = ctx.zeros::<u8>(n).unwrap();
    let mut out = ctx.zeros::<u8>(n).unwrap();
    let poison = vec![255u8; chunk];
    let mut at = 0;
    while at < n {
        let len = chunk.min(n - at);
        input
            .slice_mut(at..at + len)
            .copy_from_host(&pattern[..len])
            .unwrap();
        out.slice_mut(at..at + len)
            .copy_from_host(&poison[..len])
            .unwrap();
        at += len;
    }
    drop((pattern, poison));
    let (q, rem) = (n / 251, n % 251);

    let check_windows = |buf: &mgpu::Buffer<u8>,
                         count: usize,
                         value: &dyn Fn(usize) -> u8,
                         what: &str,
                         tail: bool| {
        let mut starts = vec![
            0,
            (1 << 31) - 5000,
            (1 << 32) - 5000,
            count.saturating_sub(10_000),
        ];
        if tail {
            starts.push(count);
        } else {
            starts.retain(|&s| s < count);
        }
        for s in starts {
            let e = (s + 10_000).min(n);
            let got = buf.slice(s..e).to_vec().unwrap();
            for (j, &g) in got.iter().enumerate() {
                let i = s + j;
                let want = if i < count { value(i) } else { 255 };
                if !tail && i >= count {
                    break;
                }
                assert_eq!(g, want, "{what}: item {i} (count {count})");
            }
        }
    };

    let pred = Predicate::new("not_250", |x: &u8| *x != 250, "x != 250");
    let expect = q * 250 + rem.min(250);
    assert!(expect > 1 << 32);
    let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
    let c = ctx
        .select_if(&input, &mut out, &pred, Count::Both(&mut count))
        .unwrap();
    assert_eq!(c, Some(expect as u64), "select_if count");
    assert_eq!(
        count.to_vec().unwrap(),
        [expect as u64],
        "select_if device count"
    );
    check_windows(&out, expect, &|k| (k % 250) as u8, "select_if", true);
    drop(out);

    let pred = Predicate::new("mul7", |x: &u8| x.is_multiple_of(7), "x % 7 == 0");
    let expect = q * 36 + rem.div_ceil(7);
    let c = ctx
        .select_if_in_place(&mut input, &pred, Count::Host)
        .unwrap();
    assert_eq!(c, Some(expect as u64), "select_if_in_place count");
    check_windows(
        &input,
        expect,
        &|k| ((k % 36) * 7) as u8,
        "select_if_in_place",
        false,
    );
}
