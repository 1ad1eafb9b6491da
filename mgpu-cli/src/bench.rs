//! `mgpu bench`: throughput of a primitive against a device memcpy of the same size and against
//! CUB, all measured in the same run (CUDA events, warm-up, median).

use crate::peers::Peer;
use mgpu::{Arithmetic, Buffer, Context, Element, Op, ScanOptions};
use std::time::Instant;

struct Args {
    primitive: String,
    sizes: std::ops::RangeInclusive<u32>,
    types: Vec<String>,
    reps: usize,
    csv: Option<String>,
    peer: bool,
    deterministic: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut it = args.iter();
    let primitive = it
        .next()
        .ok_or("bench: which primitive? reduce or scan")?
        .clone();
    if !["reduce", "scan"].contains(&primitive.as_str()) {
        return Err(format!(
            "bench: unknown primitive `{primitive}` (reduce, scan)"
        ));
    }
    let mut a = Args {
        primitive,
        sizes: 16..=28,
        types: ["i32", "i64", "f32", "f64"].map(String::from).to_vec(),
        reps: 20,
        csv: None,
        peer: true,
        deterministic: false,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("bench: {flag} needs a value"));
        match flag.as_str() {
            "--sizes" => {
                let v = value()?;
                let (lo, hi) = v.split_once("..").unwrap_or((v, v));
                let p = |s: &str| {
                    s.parse::<u32>()
                        .map_err(|_| format!("bench: bad --sizes `{v}` (e.g. 16..28)"))
                };
                a.sizes = p(lo)?..=p(hi)?;
                if *a.sizes.end() > 32 {
                    return Err("bench: sizes are log2 of the element count, at most 32".into());
                }
            }
            "--types" => a.types = value()?.split(',').map(String::from).collect(),
            "--reps" => {
                a.reps = value()?
                    .parse()
                    .map_err(|_| "bench: --reps needs a number")?;
                a.reps = a.reps.max(10);
            }
            "--csv" => a.csv = Some(value()?.clone()),
            "--no-peer" => a.peer = false,
            "--deterministic" => a.deterministic = true,
            other => return Err(format!("bench: unknown flag `{other}`")),
        }
    }
    Ok(a)
}

/// Elements the bench fills with cheap pseudo-random values (never zeros).
trait BenchElement: Element + Arithmetic {
    fn from_bits(x: u64) -> Self;
}
impl BenchElement for i32 {
    fn from_bits(x: u64) -> Self {
        (x % 1000) as i32
    }
}
impl BenchElement for i64 {
    fn from_bits(x: u64) -> Self {
        (x % 1000) as i64
    }
}
impl BenchElement for u32 {
    fn from_bits(x: u64) -> Self {
        x as u32
    }
}
impl BenchElement for u64 {
    fn from_bits(x: u64) -> Self {
        x
    }
}
impl BenchElement for f32 {
    fn from_bits(x: u64) -> Self {
        (x >> 40) as f32 / (1u64 << 24) as f32
    }
}
impl BenchElement for f64 {
    fn from_bits(x: u64) -> Self {
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random<T: BenchElement>(n: usize) -> Vec<T> {
    let mut s = 0x9e3779b97f4a7c15u64;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            T::from_bits(s)
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

struct Row {
    ty: String,
    log2: u32,
    ms: f64,
    memcpy_ms: f64,
    peer_ms: Option<f64>,
}

fn time<F: FnMut() -> mgpu::Result<()>>(
    ctx: &Context,
    reps: usize,
    mut f: F,
) -> Result<f64, String> {
    for _ in 0..3 {
        f().map_err(|e| e.to_string())?;
    }
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        times.push(ctx.time_ms(&mut f).map_err(|e| e.to_string())?);
    }
    Ok(median(times))
}

fn bench_type<T: BenchElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    peer: Option<&Peer>,
) -> Result<Vec<Row>, String> {
    let op = Op::<T>::plus();
    let options = if a.deterministic {
        ScanOptions::exclusive().deterministic()
    } else {
        ScanOptions::exclusive()
    };
    let run = |input: &Buffer<T>, out: &mut Buffer<T>| -> mgpu::Result<()> {
        if a.primitive == "reduce" {
            ctx.reduce_to_device(input, &op, out)
        } else {
            ctx.scan(input, out, &op, options)
        }
    };
    // First use: compile (or load from the disk cache) and run once.
    let before = mgpu::cuda::jit::stats();
    let small = ctx
        .upload(&random::<T>(1 << 20))
        .map_err(|e| e.to_string())?;
    let mut small_out = ctx.zeros::<T>(1 << 20).map_err(|e| e.to_string())?;
    let t = Instant::now();
    run(&small, &mut small_out)
        .and_then(|_| ctx.synchronize())
        .map_err(|e| e.to_string())?;
    let after = mgpu::cuda::jit::stats();
    eprintln!(
        "{} {ty}: first call {:.1} ms ({} kernels compiled in {} ms, {} from the disk cache)",
        a.primitive,
        t.elapsed().as_secs_f64() * 1e3,
        after.compiles - before.compiles,
        after.compile_ms - before.compile_ms,
        after.disk_hits - before.disk_hits
    );
    let mut rows = Vec::new();
    for log2 in a.sizes.clone() {
        let n = 1usize << log2;
        let input = ctx.upload(&random::<T>(n)).map_err(|e| e.to_string())?;
        let mut out = ctx.zeros::<T>(n).map_err(|e| e.to_string())?;
        let ms = time(ctx, a.reps, || run(&input, &mut out))?;
        let memcpy_ms = time(ctx, a.reps, || ctx.copy(&input, &mut out))?;
        let peer_ms = match peer {
            Some(p) => {
                let algo = if a.primitive == "reduce" {
                    "reduce"
                } else {
                    "scan"
                };
                match p.run(algo, ty, n as u64, a.reps as u32) {
                    Ok(r) => {
                        if r.check != "ok" {
                            eprintln!("warning: CUB {algo} {ty} 2^{log2}: self-check {}", r.check);
                        }
                        Some(r.median_ms)
                    }
                    Err(e) => {
                        eprintln!("warning: CUB peer failed: {e}");
                        None
                    }
                }
            }
            None => None,
        };
        let row = Row {
            ty: ty.to_string(),
            log2,
            ms,
            memcpy_ms,
            peer_ms,
        };
        print_row(a, &row, std::mem::size_of::<T>());
        rows.push(row);
    }
    Ok(rows)
}

fn print_row(a: &Args, r: &Row, size: usize) {
    let n = (1u64 << r.log2) as f64;
    let traffic = if a.primitive == "reduce" { 1.0 } else { 2.0 };
    let peer = match r.peer_ms {
        Some(p) => format!("{p:>9.4} {:>7.3}", p / r.ms),
        None => format!("{:>9} {:>7}", "-", "-"),
    };
    println!(
        "{:<6} {:<4} 2^{:<3} {:>9.4} {:>9.1} {:>8.1} {:>9.4} {:>7.3} {peer}",
        a.primitive,
        r.ty,
        r.log2,
        r.ms,
        n / r.ms / 1e6,
        traffic * n * size as f64 / r.ms / 1e6,
        r.memcpy_ms,
        r.memcpy_ms / r.ms,
    );
}

pub fn run(args: &[String]) -> Result<(), String> {
    let a = parse(args)?;
    let ctx = Context::new().map_err(|e| e.to_string())?;
    if !ctx.is_gpu() {
        eprintln!("warning: no GPU; timing the CPU backend (wall clock), no peer");
    }
    let peer = if a.peer && ctx.is_gpu() {
        match Peer::build() {
            Ok(Some(p)) => Some(p),
            Ok(None) => {
                eprintln!("note: nvcc not found; no CUB comparison");
                None
            }
            Err(e) => {
                eprintln!("warning: building the CUB peer failed; no CUB comparison:\n{e}");
                None
            }
        }
    } else {
        None
    };
    let algo = if a.primitive == "scan" && a.deterministic {
        " (reduce-then-scan)"
    } else {
        ""
    };
    println!(
        "# mgpu bench {}{algo} on {}, median of {} runs (CUDA events), ratios > 1: mgpu faster",
        a.primitive,
        ctx.description(),
        a.reps
    );
    println!(
        "{:<6} {:<4} {:<5} {:>9} {:>9} {:>8} {:>9} {:>7} {:>9} {:>7}",
        "prim",
        "type",
        "n",
        "mgpu_ms",
        "Gitems/s",
        "GB/s",
        "memcpy_ms",
        "vs_mcpy",
        "cub_ms",
        "vs_cub"
    );
    let mut rows = Vec::new();
    for ty in &a.types {
        let r = match ty.as_str() {
            "i32" => bench_type::<i32>(&ctx, &a, ty, peer.as_ref()),
            "i64" => bench_type::<i64>(&ctx, &a, ty, peer.as_ref()),
            "u32" => bench_type::<u32>(&ctx, &a, ty, peer.as_ref()),
            "u64" => bench_type::<u64>(&ctx, &a, ty, peer.as_ref()),
            "f32" => bench_type::<f32>(&ctx, &a, ty, peer.as_ref()),
            "f64" => bench_type::<f64>(&ctx, &a, ty, peer.as_ref()),
            other => Err(format!(
                "bench: unsupported type `{other}` (i32, i64, u32, u64, f32, f64)"
            )),
        }?;
        rows.extend(r);
    }
    if let Some(path) = &a.csv {
        let mut s = String::from("primitive,type,log2n,mgpu_ms,memcpy_ms,cub_ms\n");
        for r in &rows {
            let p = r.peer_ms.map(|p| p.to_string()).unwrap_or_default();
            s += &format!(
                "{},{},{},{},{},{}\n",
                a.primitive, r.ty, r.log2, r.ms, r.memcpy_ms, p
            );
        }
        std::fs::write(path, s).map_err(|e| format!("writing {path}: {e}"))?;
    }
    Ok(())
}
