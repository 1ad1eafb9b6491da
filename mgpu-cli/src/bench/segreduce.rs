//! `mgpu bench segreduce | spmv`: CSR segmented reduction and CSR sparse matrix * vector against a
//! device memcpy of the same bytes and the peers (CUB's DeviceSegmentedReduce::Sum, cuSPARSE's
//! SpMV), each as a one-shot call (which validates the geometry, with its one small read-back,
//! and partitions it) and as an apply after a plan built outside the timing.
//!
//! The geometry (segment starts, or rows and columns) is generated on the host from the peer
//! harness's `rand_bits` with integer arithmetic only, the same way as peers/cub_bench.cu does; the
//! harness prints a checksum of what it generated (`geom=`, FNV-1a over 64-bit words) and a
//! mismatch with this side's is an error, so both always measure the same geometry. Values are the
//! harness's too: `rand_bits(2, i) & 0xff` for segreduce; for SpMV the matrix values
//! `value_from_bits(rand_bits(9, k))` (the stencils: 4 or 6 on the diagonal, -1 off it) and the
//! vector `value_from_bits(rand_bits(10, j))`, 64 bits mapped to [0, 1) as the harness does.

use super::harness::PeerParam;
use super::harness::{self, rand_bits, report_first_use, time, tuning_label, Args, BenchElement};
use crate::output::{self, Record};
use crate::peers::Peer;
use mgpu::{Buffer, Context, Op};
use std::time::Instant;

/// The harness's streams (peers/cub_bench.cu): reduce-by-key's values, segment and row lengths,
/// columns, matrix values, the vector.
const STREAM_VALUES: u64 = 2;
const STREAM_LENGTHS: u64 = 7;
const STREAM_COLS: u64 = 8;
const STREAM_MATRIX: u64 = 9;
const STREAM_X: u64 = 10;

/// The largest log2 size: offsets and column indices are 32-bit signed on the peers' side.
const MAX_LOG2: u32 = 30;

/// The geometry checksum the harness prints as `geom=`: FNV-1a over 64-bit words.
pub(crate) struct GeomHash(u64);

impl GeomHash {
    fn new() -> Self {
        GeomHash(0xcbf2_9ce4_8422_2325)
    }
    fn add(&mut self, w: u64) {
        self.0 ^= w;
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }
    pub(crate) fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// A segment-length distribution; `spec()` is the harness's name for it (bench/segsort.rs runs
/// them too).
#[derive(Clone, Copy, Debug)]
pub(crate) enum SegDist {
    /// Every segment `L` long (the last one what is left).
    Fixed(u64),
    /// Lengths uniform in 1..=2M-1 (mean M).
    Uniform(u64),
    /// P(length > L) ~ 1/L: k = trailing zeros of r (at most 24), length uniform in 1..=2^k
    /// (mean about 7, a few segments of millions).
    PowerLaw,
    /// One segment of every value.
    One,
    /// Half the segments empty, the others uniform in 1..=2M-1 (`support_empty`).
    Empty(u64),
}

/// The distributions `mgpu bench segreduce` runs.
const SEG_DISTS: &[SegDist] = &[
    SegDist::Fixed(1),
    SegDist::Fixed(2),
    SegDist::Uniform(2),
    SegDist::Fixed(20),
    SegDist::Fixed(500),
    SegDist::Fixed(5000),
    SegDist::Uniform(500),
    SegDist::PowerLaw,
    SegDist::One,
    SegDist::Empty(20),
];

impl SegDist {
    pub(crate) fn spec(self) -> String {
        match self {
            SegDist::Fixed(l) => format!("fixed-{l}"),
            SegDist::Uniform(m) => format!("uniform-{m}"),
            SegDist::PowerLaw => "powerlaw".into(),
            SegDist::One => "one".into(),
            SegDist::Empty(m) => format!("empty-{m}"),
        }
    }

    pub(crate) fn support_empty(self) -> bool {
        matches!(self, SegDist::Empty(_))
    }

    /// The length of segment `i` of `n` values (before clamping at the end).
    fn length(self, i: u64, n: u64) -> u64 {
        let r = || rand_bits(STREAM_LENGTHS, i);
        match self {
            SegDist::Fixed(l) => l,
            SegDist::Uniform(m) => 1 + r() % (2 * m - 1),
            SegDist::PowerLaw => {
                let r = r();
                let k = (r | (1u64 << 24)).trailing_zeros();
                1 + ((r >> 32) & ((1u64 << k) - 1))
            }
            SegDist::One => n,
            SegDist::Empty(m) => {
                let r = r();
                if r & 1 == 1 {
                    0
                } else {
                    1 + (r >> 1) % (2 * m - 1)
                }
            }
        }
    }
}

/// Segment starts over `n` values, then `n` (num_segments + 1 entries), and their checksum.
pub(crate) fn segments(n: u64, dist: SegDist) -> (Vec<u32>, GeomHash) {
    let mut offsets = Vec::new();
    let (mut pos, mut i) = (0u64, 0u64);
    while pos < n {
        offsets.push(pos as u32);
        let len = dist.length(i, n);
        i += 1;
        pos = if len >= n - pos { n } else { pos + len };
    }
    offsets.push(n as u32);
    let mut h = GeomHash::new();
    h.add(offsets.len() as u64 - 1);
    h.add(n);
    for &o in &offsets {
        h.add(o as u64);
    }
    (offsets, h)
}

/// A sparse matrix kind; `spec()` is the harness's name for it.
#[derive(Clone, Copy, Debug)]
enum MatKind {
    /// target / M rows of uniform 0..=2M nonzeros (mean M, some rows empty), columns random.
    Random(u64),
    /// Row lengths with P(length > L) ~ 1/L from 4 up (k = 2 + trailing zeros of r, at most 22;
    /// length uniform in 1..=2^k, mean about 21), columns random, nnz = target.
    PowerLaw,
    /// The 2-D 5-point Poisson stencil on a k x k grid (5k^2 <= target).
    Stencil2d,
    /// The 3-D 7-point Poisson stencil on a k x k x k grid (7k^3 <= target).
    Stencil3d,
}

/// The matrices `mgpu bench spmv` runs.
const MATRICES: &[MatKind] = &[
    MatKind::Random(32),
    MatKind::PowerLaw,
    MatKind::Stencil2d,
    MatKind::Stencil3d,
];

impl MatKind {
    fn spec(self) -> String {
        match self {
            MatKind::Random(m) => format!("random-{m}"),
            MatKind::PowerLaw => "powerlaw".into(),
            MatKind::Stencil2d => "stencil2d".into(),
            MatKind::Stencil3d => "stencil3d".into(),
        }
    }
}

/// A square CSR matrix's geometry: row starts then nnz (rows + 1 entries), column indices.
struct Csr {
    rows: usize,
    ncols: usize,
    offsets: Vec<u32>,
    cols: Vec<u32>,
    /// The stencils' diagonal value (their other nonzeros are -1); None: random values.
    diag: Option<f64>,
}

impl Csr {
    fn nnz(&self) -> usize {
        self.cols.len()
    }
    fn hash(&self) -> GeomHash {
        let mut h = GeomHash::new();
        h.add(self.rows as u64);
        h.add(self.ncols as u64);
        h.add(self.nnz() as u64);
        for &o in &self.offsets {
            h.add(o as u64);
        }
        for &c in &self.cols {
            h.add(c as u64);
        }
        h
    }
}

/// Random sorted columns for rows of the given starts: the j-th of a row of L is
/// (j * ncols + rand_bits(8, start + j) % ncols) / L.
fn stratified_cols(offsets: &[u32], ncols: u64) -> Vec<u32> {
    let nnz = *offsets.last().unwrap() as usize;
    let mut cols = Vec::with_capacity(nnz);
    for w in offsets.windows(2) {
        let (start, len) = (w[0] as u64, (w[1] - w[0]) as u64);
        for j in 0..len {
            let u = rand_bits(STREAM_COLS, start + j) % ncols;
            cols.push(((j * ncols + u) / len) as u32);
        }
    }
    cols
}

/// The matrix of `kind` with about `target` nonzeros.
fn matrix(target: u64, kind: MatKind) -> Csr {
    match kind {
        MatKind::Random(m) => {
            let rows = (target / m).max(1);
            let mut offsets = Vec::with_capacity(rows as usize + 1);
            let mut nnz = 0u64;
            for i in 0..rows {
                offsets.push(nnz as u32);
                nnz += rand_bits(STREAM_LENGTHS, i) % (2 * m + 1);
            }
            offsets.push(nnz as u32);
            let cols = stratified_cols(&offsets, rows);
            Csr {
                rows: rows as usize,
                ncols: rows as usize,
                offsets,
                cols,
                diag: None,
            }
        }
        MatKind::PowerLaw => {
            let mut offsets = Vec::new();
            let (mut nnz, mut i) = (0u64, 0u64);
            while nnz < target {
                offsets.push(nnz as u32);
                let r = rand_bits(STREAM_LENGTHS, i);
                i += 1;
                let k = (r | (1u64 << 20)).trailing_zeros() + 2;
                let len = 1 + ((r >> 32) & ((1u64 << k) - 1));
                nnz = (nnz + len).min(target);
            }
            offsets.push(nnz as u32);
            let rows = offsets.len() - 1;
            let cols = stratified_cols(&offsets, rows as u64);
            Csr {
                rows,
                ncols: rows,
                offsets,
                cols,
                diag: None,
            }
        }
        MatKind::Stencil2d => stencil(target, 2),
        MatKind::Stencil3d => stencil(target, 3),
    }
}

/// The (2 dims + 1)-point Poisson stencil on a k^dims grid, (2 dims + 1) k^dims <= target (k at
/// least 2): rows in grid order, each row's columns sorted (the lower neighbours, the point, the
/// upper ones), 2 dims on the diagonal.
fn stencil(target: u64, dims: u32) -> Csr {
    let points = 2 * dims as u64 + 1;
    let mut k = 1u64;
    while points * (k + 1).pow(dims) <= target {
        k += 1;
    }
    let k = k.max(2);
    let rows = k.pow(dims);
    // The steps between neighbours along each axis, the slowest first.
    let strides: Vec<u64> = (0..dims).map(|i| k.pow(dims - 1 - i)).collect();
    let mut offsets = Vec::with_capacity(rows as usize + 1);
    let mut cols = Vec::with_capacity((points * rows) as usize);
    for r in 0..rows {
        offsets.push(cols.len() as u32);
        let at = |s: &u64| r / s % k;
        let lower = strides.iter().filter(|s| at(s) > 0).map(|s| r - s);
        let upper = strides
            .iter()
            .rev()
            .filter(|s| at(s) + 1 < k)
            .map(|s| r + s);
        let row = lower.chain([r]).chain(upper);
        cols.extend(row.map(|c| c as u32));
    }
    offsets.push(cols.len() as u32);
    Csr {
        rows: rows as usize,
        ncols: rows as usize,
        offsets,
        cols,
        diag: Some(2.0 * dims as f64),
    }
}

/// Value types of the segreduce bench.
trait SegValue: BenchElement {
    /// Whether `got` is the sum of small values `want`: wrapping for integers, within a relative
    /// tolerance for floats.
    fn is_sum(got: Self, want: u64) -> bool;
}

impl SegValue for i32 {
    fn is_sum(got: Self, want: u64) -> bool {
        got == want as i32
    }
}

impl SegValue for i64 {
    fn is_sum(got: Self, want: u64) -> bool {
        got == want as i64
    }
}

impl SegValue for f32 {
    fn is_sum(got: Self, want: u64) -> bool {
        (got as f64 - want as f64).abs() <= 1e-4 * (want as f64).max(1.0)
    }
}

impl SegValue for f64 {
    fn is_sum(got: Self, want: u64) -> bool {
        (got - want as f64).abs() <= 1e-10 * (want as f64).max(1.0)
    }
}

/// Value types of the SpMV bench.
trait SpmvValue: BenchElement {
    /// Relative tolerance of a row's result, against the sum of its terms' magnitudes.
    const TOL: f64;
}

impl SpmvValue for f32 {
    const TOL: f64 = 1e-4;
}

impl SpmvValue for f64 {
    const TOL: f64 = 1e-10;
}

/// One printed line (and CSV row).
struct Line {
    variant: String,
    ty: String,
    log2: u32,
    /// Segments, or rows.
    segments: usize,
    /// Values, or nonzeros.
    items: usize,
    ms: f64,
    /// Bytes that must move.
    bytes: f64,
    memcpy_ms: f64,
    /// The peer's median time.
    peer_ms: Option<f64>,
    /// One-shot minus apply: what validation (with its read-back) and partitioning cost.
    extra_ms: Option<f64>,
    /// The plan's build time (outside the apply timing).
    plan_ms: Option<f64>,
}

fn opt(v: Option<f64>, width: usize, prec: usize) -> String {
    match v {
        Some(v) => format!("{v:>width$.prec$}"),
        None => format!("{:>width$}", "-"),
    }
}

fn print_header(count: &str, peer: &str) {
    output::line(format!(
        "{:<28} {:<4} {:<5} {:>10} {:>9} {:>8} {:>8} {:>9} {:>7} {:>9} {:>7} {:>9} {:>9} {:>10}",
        "prim",
        "type",
        "n",
        count,
        "mgpu_ms",
        "Gitems/s",
        "GB/s",
        "memcpy_ms",
        "vs_mcpy",
        format!("{peer}_ms"),
        format!("vs_{peer}"),
        "extra_ms",
        "plan_ms",
        "tuning"
    ));
}

fn print_line(l: &Line) {
    let peer_ratio = l.peer_ms.map(|p| p / l.ms);
    output::line(format!(
        "{:<28} {:<4} 2^{:<3} {:>10} {:>9.4} {:>8.2} {:>8.1} {:>9.4} {:>7.3} {} {} {} {} {:>10}",
        l.variant,
        l.ty,
        l.log2,
        l.segments,
        l.ms,
        l.items as f64 / l.ms / 1e6,
        l.bytes / l.ms / 1e6,
        l.memcpy_ms,
        l.memcpy_ms / l.ms,
        opt(l.peer_ms, 9, 4),
        opt(peer_ratio, 7, 3),
        opt(l.extra_ms, 9, 4),
        opt(l.plan_ms, 9, 4),
        l.tuning(),
    ));
}

impl Line {
    /// The line as a record of `primitive`'s bench (segments or rows, and the one-shot's extra
    /// time and the plan's build time among its extra numbers).
    fn record(&self, primitive: &str, peer: &str) -> Record {
        Record {
            primitive: primitive.to_string(),
            variant: self.variant.clone(),
            ty: self.ty.clone(),
            log2: self.log2,
            items: self.items as f64,
            ms: self.ms,
            bytes: self.bytes,
            memcpy_ms: self.memcpy_ms,
            peers: vec![(peer.to_string(), self.peer_ms)],
            extra: vec![
                ("segments", Some(self.segments as f64)),
                ("extra_ms", self.extra_ms),
                ("plan_ms", self.plan_ms),
            ],
            tuning: self.tuning(),
        }
    }

    /// The row's `NTxVTxOCC`: a segmented reduction's by its segments' mean length.
    fn tuning(&self) -> String {
        match self.variant.starts_with("segreduce") {
            true => harness::segreduce_tuning_label(&self.ty, self.items, self.segments),
            false => tuning_label(&self.variant, &self.ty, self.log2),
        }
    }
}

/// The offsets, with empty segments allowed where the input has them.
fn csr(offsets: &Buffer<u32>, support_empty: bool) -> mgpu::Csr<'_, u32> {
    mgpu::Csr::new(offsets).with_empty(support_empty)
}

fn err(e: mgpu::Error) -> String {
    e.to_string()
}

/// The median time of a device memcpy that reads and writes `bytes` in all (half each way), so
/// its time ratio to a primitive moving `bytes` is the ratio of their bandwidths.
pub(crate) fn memcpy_ms(ctx: &Context, bytes: f64, reps: usize) -> Result<f64, String> {
    let words = ((bytes / 8.0) as usize).max(1);
    let src = ctx.zeros::<u32>(words).map_err(err)?;
    let mut dst = ctx.zeros::<u32>(words).map_err(err)?;
    time(ctx, reps, || ctx.copy(&src, &mut dst))
}

/// Every segment of `got` against the sum of its `bytes`.
fn check_segreduce<T: SegValue>(
    what: &str,
    got: &[T],
    offsets: &[u32],
    bytes: &[u8],
) -> Result<(), String> {
    for (j, w) in offsets.windows(2).enumerate() {
        let want: u64 = bytes[w[0] as usize..w[1] as usize]
            .iter()
            .map(|&b| b as u64)
            .sum();
        if !T::is_sum(got[j], want) {
            return Err(format!(
                "{what}: segment {j} ({}..{}) is {:?}, expected {want}",
                w[0], w[1], got[j]
            ));
        }
    }
    Ok(())
}

/// One type and size: what its measurements share.
#[derive(Clone, Copy)]
struct Run<'a> {
    ctx: &'a Context,
    /// The rows measured, and the repetitions.
    a: &'a Args,
    ty: &'a str,
    log2: u32,
    peer: Option<&'a Peer>,
    /// The first size (its first geometry reports the first use).
    first: bool,
}

impl Run<'_> {
    /// Whether a line of `primitive`'s geometry `spec` is measured (its one-shot, its unchecked
    /// one-shot and its apply are measured together).
    fn measures(&self, primitive: &str, spec: &str) -> bool {
        let oneshot = format!("{primitive}/{spec}");
        ["", "/unchecked", "/apply"]
            .iter()
            .any(|v| self.a.measures(&format!("{oneshot}{v}")))
    }
}

/// What the two lines of one geometry (segment distribution or matrix) share.
struct Geometry {
    primitive: &'static str,
    /// The harness's name of the geometry, and mgpu's checksum of it.
    spec: String,
    hash: String,
    /// Segments, or rows.
    segments: usize,
    /// Values, or nonzeros.
    items: usize,
    /// Bytes that must move.
    bytes: f64,
    /// The peer's name (CUB, cuSPARSE) and the size it is given.
    peer: &'static str,
    peer_n: u64,
}

/// One geometry: a memcpy of its bytes, the one-shot call (its first use reported where `first`),
/// the unchecked one-shot, the plan's build and the apply after it (their results checked), then
/// the peer. Prints and returns the one-shot's line, the unchecked one's and the apply's.
#[allow(clippy::too_many_arguments)]
fn oneshot_and_apply<T: BenchElement, P>(
    r: Run,
    first: bool,
    g: Geometry,
    mut oneshot: impl FnMut(&mut Buffer<T>) -> mgpu::Result<()>,
    mut unchecked: impl FnMut(&mut Buffer<T>) -> mgpu::Result<()>,
    plan: impl Fn() -> mgpu::Result<P>,
    mut apply: impl FnMut(&P, &mut Buffer<T>) -> mgpu::Result<()>,
    check: impl Fn(&str, &[T]) -> Result<(), String>,
) -> Result<Vec<Line>, String> {
    let (ctx, reps, p) = (r.ctx, r.a.reps, g.primitive);
    let mut out = ctx.zeros::<T>(g.segments).map_err(err)?;
    let memcpy_ms = memcpy_ms(ctx, g.bytes, reps)?;

    let (t, before) = (Instant::now(), mgpu::cuda::jit::stats());
    let oneshot = time(ctx, reps, || oneshot(&mut out))?;
    if first {
        report_first_use(p, r.ty, t, before);
    }
    check(&format!("{p}_csr"), &out.to_vec().map_err(err)?)?;
    out = ctx.zeros::<T>(g.segments).map_err(err)?;
    let unchecked = time(ctx, reps, || unchecked(&mut out))?;
    check(&format!("{p}_csr_unchecked"), &out.to_vec().map_err(err)?)?;
    let plan_ms = time(ctx, reps, || plan().map(drop))?;
    let plan = plan().map_err(err)?;
    out = ctx.zeros::<T>(g.segments).map_err(err)?;
    let apply = time(ctx, reps, || apply(&plan, &mut out))?;
    check(&format!("{p}_apply"), &out.to_vec().map_err(err)?)?;
    drop(plan);
    let geometry = PeerParam::Geometry(&g.spec, &g.hash);
    let peer_ms = harness::peer_ms(r.peer, g.peer, p, r.ty, g.peer_n, reps, geometry)?;
    let line = |variant: String, ms, extra_ms, plan_ms| Line {
        variant,
        ty: r.ty.to_string(),
        log2: r.log2,
        segments: g.segments,
        items: g.items,
        ms,
        bytes: g.bytes,
        memcpy_ms,
        peer_ms,
        extra_ms,
        plan_ms,
    };
    let lines = vec![
        line(
            format!("{p}/{}", g.spec),
            oneshot,
            Some(oneshot - apply),
            None,
        ),
        line(format!("{p}/{}/unchecked", g.spec), unchecked, None, None),
        line(format!("{p}/{}/apply", g.spec), apply, None, Some(plan_ms)),
    ];
    lines.iter().for_each(print_line);
    Ok(lines)
}

/// segreduce on every distribution at 2^log2 values of `T`.
fn bench_segreduce<T: SegValue>(r: Run) -> Result<Vec<Line>, String> {
    let (ctx, log2) = (r.ctx, r.log2);
    let n = 1usize << log2;
    let size = std::mem::size_of::<T>();
    let bytes: Vec<u8> = (0..n as u64)
        .map(|i| (rand_bits(STREAM_VALUES, i) & 0xff) as u8)
        .collect();
    let values = {
        // The harness's `rbk_value`: `static_cast<T>` of the byte.
        let host: Vec<T> = bytes.iter().map(|&b| T::from_f64(b as f64)).collect();
        ctx.upload(&host).map_err(err)?
    };
    let op = Op::<T>::plus();
    let (mut lines, mut first) = (Vec::new(), r.first);
    for &dist in SEG_DISTS {
        if !r.measures("segreduce", &dist.spec()) {
            continue;
        }
        let (host_offsets, geom) = segments(n as u64, dist);
        let segs = host_offsets.len() - 1;
        let support_empty = dist.support_empty();
        let offsets = ctx.upload(&host_offsets[..segs]).map_err(err)?;
        let g = Geometry {
            primitive: "segreduce",
            spec: dist.spec(),
            hash: geom.hex(),
            segments: segs,
            items: n,
            bytes: (n * size + segs * 4 + segs * size) as f64,
            peer: "CUB",
            peer_n: n as u64,
        };
        lines.extend(oneshot_and_apply(
            r,
            std::mem::take(&mut first),
            g,
            |out| ctx.segreduce_csr(&values, csr(&offsets, support_empty), out, &op),
            // SAFETY: the generated offsets are valid over the values (the checked one-shot
            // accepted them first).
            |out| unsafe {
                ctx.segreduce_csr_unchecked(&values, csr(&offsets, support_empty), out, &op)
            },
            || ctx.segreduce_plan::<T, u32>(csr(&offsets, support_empty), n),
            |plan, out| ctx.segreduce_apply(plan, &values, out, &op),
            |what, got| check_segreduce(what, got, &host_offsets, &bytes),
        )?);
    }
    Ok(lines)
}

/// Every row of `y` against the product computed in f64.
fn check_spmv<T: SpmvValue>(
    what: &str,
    y: &[T],
    m: &Csr,
    values: &[T],
    x: &[T],
) -> Result<(), String> {
    for (i, w) in m.offsets.windows(2).enumerate() {
        let (mut want, mut scale) = (0.0f64, 0.0f64);
        for k in w[0] as usize..w[1] as usize {
            let term = values[k].to_f64() * x[m.cols[k] as usize].to_f64();
            want += term;
            scale += term.abs();
        }
        let got = y[i].to_f64();
        // Written so that a NaN fails.
        let close = (got - want).abs() <= T::TOL * scale.max(1e-30);
        if !close {
            return Err(format!(
                "{what}: row {i} ({} nonzeros) is {got}, expected {want}",
                w[1] - w[0]
            ));
        }
    }
    Ok(())
}

/// spmv on every matrix with about 2^log2 nonzeros of `T`.
fn bench_spmv<T: SpmvValue>(r: Run) -> Result<Vec<Line>, String> {
    let (ctx, log2) = (r.ctx, r.log2);
    let target = 1u64 << log2;
    let size = std::mem::size_of::<T>();
    let (mul, add) = (Op::<T>::multiplies(), Op::<T>::plus());
    let (mut lines, mut first) = (Vec::new(), r.first);
    for &kind in MATRICES {
        if !r.measures("spmv", &kind.spec()) {
            continue;
        }
        let m = matrix(target, kind);
        let (rows, nnz) = (m.rows, m.nnz());
        let host_values: Vec<T> = match m.diag {
            None => (0..nnz as u64)
                .map(|k| T::value_from_bits(rand_bits(STREAM_MATRIX, k)))
                .collect(),
            Some(diag) => {
                let mut v = Vec::with_capacity(nnz);
                for (i, w) in m.offsets.windows(2).enumerate() {
                    for k in w[0] as usize..w[1] as usize {
                        let on = m.cols[k] as usize == i;
                        v.push(T::from_f64(if on { diag } else { -1.0 }));
                    }
                }
                v
            }
        };
        let host_x: Vec<T> = (0..m.ncols as u64)
            .map(|j| T::value_from_bits(rand_bits(STREAM_X, j)))
            .collect();
        let support_empty = m.offsets.windows(2).any(|w| w[0] == w[1]);
        let offsets = ctx.upload(&m.offsets[..rows]).map_err(err)?;
        let cols = ctx.upload(&m.cols).map_err(err)?;
        let values = ctx.upload(&host_values).map_err(err)?;
        let x = ctx.upload(&host_x).map_err(err)?;
        let g = Geometry {
            primitive: "spmv",
            spec: kind.spec(),
            hash: m.hash().hex(),
            segments: rows,
            items: nnz,
            bytes: (nnz * (size + 4) + rows * 4 + rows * size + m.ncols * size) as f64,
            peer: "cuSPARSE",
            peer_n: target,
        };
        lines.extend(oneshot_and_apply(
            r,
            std::mem::take(&mut first),
            g,
            |y| {
                ctx.spmv_csr(
                    &values,
                    &cols,
                    csr(&offsets, support_empty),
                    &x,
                    y,
                    &mul,
                    &add,
                )
            },
            // SAFETY: the generated rows and columns are valid for `x` (the checked one-shot
            // accepted them first).
            |y| unsafe {
                ctx.spmv_csr_unchecked(
                    &values,
                    &cols,
                    csr(&offsets, support_empty),
                    &x,
                    y,
                    &mul,
                    &add,
                )
            },
            || ctx.spmv_plan::<T, u32>(&cols, csr(&offsets, support_empty), m.ncols),
            |plan, y| ctx.spmv_apply(plan, &values, &x, y, &mul, &add),
            |what, y| check_spmv(what, y, &m, &host_values, &host_x),
        )?);
    }
    Ok(lines)
}

/// `mgpu bench segreduce` or `mgpu bench spmv`: every type and size, then the CSV if asked; the
/// records for JSON and charts.
pub(crate) fn run(ctx: &Context, a: &Args, peer: Option<&Peer>) -> Result<Vec<Record>, String> {
    let (primitive, types, sizes) = (a.primitive.as_str(), &a.types, &a.sizes);
    if *sizes.end() > MAX_LOG2 {
        return Err(format!(
            "bench {primitive}: sizes up to 2^{MAX_LOG2} (the peers take 32-bit signed offsets \
             and column indices)"
        ));
    }
    let spmv = primitive == "spmv";
    if spmv {
        output::line(
            "# y = A * x (multiplies, plus), --sizes: log2 of the nonzeros; rows = matrix rows; \
             bytes: values, columns, row offsets, y and x",
        );
        output::line("# peer: cuSPARSE cusparseSpMV, CSR, CUSPARSE_SPMV_CSR_ALG1, 32-bit indices");
    } else {
        output::line(
            "# sum per segment, u32 offsets; segs = segments; bytes: values, offsets, results",
        );
        output::line(
            "# peer: CUB DeviceSegmentedReduce::Sum (begin offsets, end offsets = begin + 1)",
        );
    }
    output::line(
        "# vs_mcpy: bandwidth of the bytes that must move / memcpy's (it moves the same bytes); \
         extra_ms: one-shot minus apply (validation with its read-back, partition); plan_ms: \
         building the plan (outside the apply timing)",
    );
    let peer_name = if spmv { "csp" } else { "cub" };
    print_header(if spmv { "rows" } else { "segs" }, peer_name);
    let mut lines = Vec::new();
    for ty in types {
        for log2 in sizes.clone() {
            output::working_on(format!("{primitive} {ty} 2^{log2}"));
            let r = Run {
                ctx,
                a,
                ty,
                log2,
                peer,
                first: log2 == *sizes.start(),
            };
            let r = match (spmv, ty.as_str()) {
                (false, "i32") => bench_segreduce::<i32>(r),
                (false, "i64") => bench_segreduce::<i64>(r),
                (false, "f32") => bench_segreduce::<f32>(r),
                (false, "f64") => bench_segreduce::<f64>(r),
                (true, "f32") => bench_spmv::<f32>(r),
                (true, "f64") => bench_spmv::<f64>(r),
                (false, other) => Err(format!(
                    "bench: unsupported type `{other}` for segreduce (i32, i64, f32, f64)"
                )),
                (true, other) => Err(format!(
                    "bench: unsupported type `{other}` for spmv (f32, f64)"
                )),
            }?;
            lines.extend(r);
            output::tick("");
        }
    }
    if let Some(path) = &a.csv {
        let peer_col = if spmv { "cusparse" } else { "cub" };
        let mut s = format!(
            "primitive,type,log2n,segments,items,bytes,mgpu_ms,memcpy_ms,{peer_col}_ms,extra_ms,\
             plan_ms\n"
        );
        let o = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
        for l in &lines {
            s += &format!(
                "{},{},{},{},{},{},{},{},{},{},{}\n",
                l.variant,
                l.ty,
                l.log2,
                l.segments,
                l.items,
                l.bytes,
                l.ms,
                l.memcpy_ms,
                o(l.peer_ms),
                o(l.extra_ms),
                o(l.plan_ms)
            );
        }
        std::fs::write(path, s).map_err(|e| format!("writing {path}: {e}"))?;
    }
    let peer_col = if spmv { "cusparse" } else { "cub" };
    Ok(lines
        .iter()
        .map(|l| l.record(primitive, peer_col))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_values_in_order() {
        for &dist in SEG_DISTS {
            for n in [1u64, 7, 1000, 100_003] {
                let (o, _) = segments(n, dist);
                assert_eq!(o[0], 0, "{dist:?} n={n}");
                assert_eq!(*o.last().unwrap() as u64, n);
                for w in o.windows(2) {
                    assert!(w[0] <= w[1], "{dist:?} n={n}");
                    if !dist.support_empty() {
                        assert!(w[0] < w[1], "{dist:?} n={n}: an empty segment");
                    }
                }
            }
        }
        assert_eq!(segments(10, SegDist::Fixed(3)).0, [0, 3, 6, 9, 10]);
        assert_eq!(segments(10, SegDist::One).0, [0, 10]);
    }

    #[test]
    fn distributions_have_their_means() {
        let n = 1u64 << 22;
        let mean = |d| n as f64 / (segments(n, d).0.len() - 1) as f64;
        assert!((mean(SegDist::Uniform(500)) - 500.0).abs() < 25.0);
        assert!((mean(SegDist::Uniform(2)) - 2.0).abs() < 0.01);
        let e = mean(SegDist::Empty(20));
        assert!((e - 10.0).abs() < 0.5, "{e}");
        let p = mean(SegDist::PowerLaw);
        assert!((4.0..12.0).contains(&p), "{p}");
    }

    #[test]
    fn matrices_are_square_csr_with_sorted_columns_in_range() {
        for &kind in MATRICES {
            for target in [64u64, 1 << 12, 1 << 16] {
                let m = matrix(target, kind);
                assert_eq!(m.offsets.len(), m.rows + 1);
                assert_eq!(*m.offsets.last().unwrap() as usize, m.nnz());
                assert_eq!(m.rows, m.ncols);
                for w in m.offsets.windows(2) {
                    let row = &m.cols[w[0] as usize..w[1] as usize];
                    assert!(row.iter().all(|&c| (c as usize) < m.ncols), "{kind:?}");
                    assert!(row.windows(2).all(|p| p[0] <= p[1]), "{kind:?}");
                }
                let nnz = m.nnz() as f64;
                assert!(
                    target < 1 << 12 || nnz > target as f64 * 0.6 && nnz <= target as f64 * 1.2,
                    "{kind:?} {target}: {nnz}"
                );
            }
        }
        let s = matrix(5 * 16, MatKind::Stencil2d);
        assert_eq!((s.rows, s.nnz()), (16, 5 * 16 - 4 * 4));
        let s = matrix(7 * 27, MatKind::Stencil3d);
        assert_eq!((s.rows, s.nnz()), (27, 7 * 27 - 6 * 9));
    }

    /// Checksums that peers/cub_bench.cu's generator produced for the same geometries (its
    /// geometry section compiled with g++, as peers/README.md shows): the two generators agree.
    #[test]
    fn geometry_checksums_match_the_harness() {
        let seg = |n, d| segments(n, d).1.hex();
        assert_eq!(seg(100_003, SegDist::Fixed(1)), "401a972ea997c2c7");
        assert_eq!(seg(100_003, SegDist::Uniform(500)), "374174fe23e74fb8");
        assert_eq!(seg(1 << 20, SegDist::PowerLaw), "4ffc16a7e75d1847");
        assert_eq!(seg(1 << 20, SegDist::Empty(20)), "2510b5df75805d2c");
        let mat = |n, k| matrix(n, k).hash().hex();
        assert_eq!(mat(4096, MatKind::Random(32)), "8b10add49fb8358e");
        assert_eq!(mat(4096, MatKind::PowerLaw), "ac29e35d0fc119f3");
        assert_eq!(mat(1 << 20, MatKind::Stencil2d), "813cfe0fe3dfe327");
        assert_eq!(mat(1 << 20, MatKind::Stencil3d), "d51f3f2109141017");
    }
}
