//! `mgpu bench select | partition | unique | rle | reduce-by-key`: the single-pass compaction
//! family against a device memcpy and CUB (DeviceSelect, DevicePartition, DeviceRunLengthEncode,
//! DeviceReduce::ReduceByKey), in and out of place, on the same data distributions as the peer
//! harness (peers/cub_bench.cu): items from splitmix64, selected when `bits % 100 < rate`; runs
//! that end after each item with probability 1 / mean length. reduce-by-key also times its
//! preprocessed algorithm as a one-shot call (`/preprocessed`, no peer).

use crate::bench::{print_row, time, time_with_setup, Row};
use crate::peers::Peer;
use mgpu::{
    Arithmetic, Buffer, Context, Count, Element, Equality, Op, Predicate, ReduceByKeyAlgorithm,
};

/// The peer harness's generator (`rand_bits` in peers/cub_bench.cu), shared by the benches that
/// give the peer the same data.
pub(crate) fn rand_bits(stream: u64, i: u64) -> u64 {
    const SEED: u64 = 0x6D677075;
    const GAMMA: u64 = 0x9E3779B97F4A7C15;
    fn mix64(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    let start = mix64(SEED.wrapping_add(stream.wrapping_mul(GAMMA)));
    mix64(start.wrapping_add((i + 1).wrapping_mul(GAMMA)))
}

/// Integer element types of the compaction bench.
pub(crate) trait CompactElement: Element + Arithmetic {
    /// The low bits of `x` (the harness's `gen<T>`).
    fn from_bits(x: u64) -> Self;
    /// `x`'s bits as an unsigned number of the same width.
    fn bits(self) -> u64;
    /// `(unsigned type)x` in CUDA C++.
    const CUDA_UNSIGNED: &'static str;
}
impl CompactElement for i32 {
    fn from_bits(x: u64) -> Self {
        x as i32
    }
    fn bits(self) -> u64 {
        self as u32 as u64
    }
    const CUDA_UNSIGNED: &'static str = "unsigned";
}
impl CompactElement for i64 {
    fn from_bits(x: u64) -> Self {
        x as i64
    }
    fn bits(self) -> u64 {
        self as u64
    }
    const CUDA_UNSIGNED: &'static str = "unsigned long long";
}

/// Items of the selection benches and the predicate that selects `rate`% of them.
fn selection<T: CompactElement>(n: usize, rate: u64) -> (Vec<T>, Predicate<T>) {
    let items = (0..n as u64)
        .map(|i| T::from_bits(rand_bits(1, i)))
        .collect();
    let pred = Predicate::new(
        format!("rate{rate}"),
        move |x: &T| x.bits() % 100 < rate,
        format!(
            "(unsigned long long)({})x % 100ull < {rate}ull",
            T::CUDA_UNSIGNED
        ),
    );
    (items, pred)
}

/// Keys in runs of mean length `mean` (the run count so far), and small values.
fn runs<T: CompactElement>(n: usize, mean: u64) -> (Vec<T>, Vec<T>) {
    let mut run = 0u64;
    let keys = (0..n as u64)
        .map(|i| {
            if i > 0 && rand_bits(3, i).is_multiple_of(mean) {
                run += 1;
            }
            T::from_bits(run)
        })
        .collect();
    let values = (0..n as u64)
        .map(|i| T::from_bits(rand_bits(2, i) & 0xff))
        .collect();
    (keys, values)
}

/// The peer's time for `algo` with its parameter, if there is a peer and it ran.
fn peer_ms(
    peer: Option<&Peer>,
    algo: &str,
    ty: &str,
    n: u64,
    reps: usize,
    param: u64,
) -> Option<f64> {
    let p = peer?;
    match p.run_with(algo, ty, n, reps as u32, Some(param)) {
        Ok(r) => {
            if r.check != "ok" {
                crate::output::note(format!(
                    "warning: CUB {algo} {ty} n={n} param={param}: self-check {}",
                    r.check
                ));
            }
            Some(r.median_ms)
        }
        Err(e) => {
            crate::output::note(format!("warning: CUB peer {algo} failed: {e}"));
            None
        }
    }
}

/// One measured variant: its name, the peer's algorithm (if any) and the bytes that must move.
struct Variant {
    name: String,
    peer: Option<&'static str>,
    bytes: f64,
}

fn err(e: mgpu::Error) -> String {
    e.to_string()
}

/// Every variant of `primitive` for element type `T` at `2^log2` items.
#[allow(clippy::too_many_arguments)]
pub(crate) fn bench<T: CompactElement>(
    ctx: &Context,
    primitive: &str,
    ty: &str,
    log2: u32,
    reps: usize,
    peer: Option<&Peer>,
) -> Result<Vec<Row>, String> {
    let n = 1usize << log2;
    let size = std::mem::size_of::<T>();
    let mut rows = Vec::new();
    let mut out = ctx.zeros::<T>(n).map_err(err)?;
    let mut out2 = ctx.zeros::<T>(n).map_err(err)?;
    let mut data = ctx.zeros::<T>(n).map_err(err)?;
    let mut counter = ctx.zeros::<u64>(1).map_err(err)?;
    let memcpy_ms = {
        let src = ctx.zeros::<T>(n).map_err(err)?;
        time(ctx, reps, || ctx.copy(&src, &mut out))?
    };
    let push = |v: Variant, ms: f64, param: u64, rows: &mut Vec<Row>| {
        let cub = v
            .peer
            .and_then(|algo| peer_ms(peer, algo, ty, n as u64, reps, param));
        let row = Row {
            variant: v.name,
            ty: ty.to_string(),
            log2,
            ms,
            bytes: v.bytes,
            memcpy_ms,
            peers: vec![("cub", cub)],
        };
        print_row(&row);
        rows.push(row);
    };
    // The expected count, to check each variant's result.
    let check = |what: &str, got: u64, want: usize| -> Result<(), String> {
        if got as usize != want {
            return Err(format!("{what}: count {got}, expected {want}"));
        }
        Ok(())
    };
    let count_of =
        |counter: &Buffer<u64>| -> Result<u64, String> { Ok(counter.to_vec().map_err(err)?[0]) };
    match primitive {
        "select" | "partition" => {
            for rate in [0u64, 10, 50, 90, 100] {
                let (items, pred) = selection::<T>(n, rate);
                let kept = items.iter().filter(|x| x.bits() % 100 < rate).count();
                let input = ctx.upload(&items).map_err(err)?;
                let moved = (n + kept) as f64 * size as f64;
                if primitive == "select" {
                    let ms = time(ctx, reps, || {
                        ctx.select_if(&input, &mut out, &pred, Count::Device(&mut counter))
                            .map(|_| ())
                    })?;
                    check("select_if", count_of(&counter)?, kept)?;
                    let v = Variant {
                        name: format!("select-if/{rate}%"),
                        peer: Some("select-if"),
                        bytes: moved,
                    };
                    push(v, ms, rate, &mut rows);
                    let ms = time_with_setup(
                        ctx,
                        reps,
                        &mut data,
                        |d| ctx.copy(&input, d),
                        |d| {
                            ctx.select_if_in_place(d, &pred, Count::Device(&mut counter))
                                .map(|_| ())
                        },
                    )?;
                    check("select_if_in_place", count_of(&counter)?, kept)?;
                    let v = Variant {
                        name: format!("select-if/{rate}%/in-place"),
                        peer: None,
                        bytes: moved,
                    };
                    push(v, ms, rate, &mut rows);
                    if rate == 50 {
                        let flags: Vec<u8> = items
                            .iter()
                            .map(|x| (x.bits() % 100 < rate) as u8)
                            .collect();
                        let flags = ctx.upload(&flags).map_err(err)?;
                        let ms = time(ctx, reps, || {
                            ctx.select_flagged(
                                &input,
                                &flags,
                                &mut out,
                                Count::Device(&mut counter),
                            )
                            .map(|_| ())
                        })?;
                        check("select_flagged", count_of(&counter)?, kept)?;
                        let v = Variant {
                            name: format!("select-flagged/{rate}%"),
                            peer: Some("select-flagged"),
                            bytes: moved + n as f64,
                        };
                        push(v, ms, rate, &mut rows);
                        let ms = time_with_setup(
                            ctx,
                            reps,
                            &mut data,
                            |d| ctx.copy(&input, d),
                            |d| {
                                ctx.select_flagged_in_place(d, &flags, Count::Device(&mut counter))
                                    .map(|_| ())
                            },
                        )?;
                        check("select_flagged_in_place", count_of(&counter)?, kept)?;
                        let v = Variant {
                            name: format!("select-flagged/{rate}%/in-place"),
                            peer: None,
                            bytes: moved + n as f64,
                        };
                        push(v, ms, rate, &mut rows);
                    }
                } else {
                    let moved = 2.0 * (n * size) as f64;
                    let ms = time(ctx, reps, || {
                        ctx.partition_if(&input, &mut out, &pred, Count::Device(&mut counter))
                            .map(|_| ())
                    })?;
                    check("partition_if", count_of(&counter)?, kept)?;
                    let v = Variant {
                        name: format!("partition-if/{rate}%"),
                        peer: Some("partition-if"),
                        bytes: moved,
                    };
                    push(v, ms, rate, &mut rows);
                    // The stable in-place partition, staged through a temporary by design
                    // (see `partition_in_place`): timed so that its cost is on record.
                    let mut got = 0;
                    let ms = time_with_setup(
                        ctx,
                        reps,
                        &mut data,
                        |d| ctx.copy(&input, d),
                        |d| ctx.partition_in_place(d, &pred).map(|k| got = k),
                    )?;
                    check("partition_in_place", got, kept)?;
                    let v = Variant {
                        name: format!("partition-if/{rate}%/in-place"),
                        peer: None,
                        bytes: moved,
                    };
                    push(v, ms, rate, &mut rows);
                    let ms = time(ctx, reps, || {
                        ctx.partition_copy(
                            &input,
                            &mut out,
                            &mut out2,
                            &pred,
                            Count::Device(&mut counter),
                        )
                        .map(|_| ())
                    })?;
                    check("partition_copy", count_of(&counter)?, kept)?;
                    let v = Variant {
                        name: format!("partition-copy/{rate}%"),
                        peer: None,
                        bytes: moved,
                    };
                    push(v, ms, rate, &mut rows);
                    let ms = time_with_setup(
                        ctx,
                        reps,
                        &mut data,
                        |d| ctx.copy(&input, d),
                        |d| {
                            ctx.partition_copy_in_place(
                                d,
                                &mut out2,
                                &pred,
                                Count::Device(&mut counter),
                            )
                            .map(|_| ())
                        },
                    )?;
                    check("partition_copy_in_place", count_of(&counter)?, kept)?;
                    let v = Variant {
                        name: format!("partition-copy/{rate}%/in-place"),
                        peer: None,
                        bytes: moved,
                    };
                    push(v, ms, rate, &mut rows);
                }
            }
        }
        "unique" | "rle" | "reduce-by-key" => {
            let eq = Equality::<T>::equal_to();
            let means: &[u64] = &[1, 2, 10, 500];
            let mut lengths = ctx.zeros::<u32>(n).map_err(err)?;
            let op = Op::<T>::plus();
            for &mean in means {
                let (keys, values) = runs::<T>(n, mean);
                let expect = 1 + (1..n).filter(|&i| keys[i] != keys[i - 1]).count();
                let input = ctx.upload(&keys).map_err(err)?;
                let vals = ctx.upload(&values).map_err(err)?;
                let mut vals_work = ctx.zeros::<T>(n).map_err(err)?;
                // Each variant with its peer: `unique` also runs `unique_by_key` (values of the
                // keys' type), which the peer harness has no counterpart for.
                let variants: &[(&str, Option<&str>)] = match primitive {
                    "unique" => &[("unique", Some("unique")), ("unique-by-key", None)],
                    "rle" => &[("rle", Some("rle"))],
                    _ => &[("reduce-by-key", Some("reduce-by-key"))],
                };
                for &(name, algo) in variants {
                    let moved = match name {
                        "unique" => (n + expect) * size,
                        "unique-by-key" => 2 * (n + expect) * size,
                        "rle" => n * size + expect * (size + 4),
                        _ => 2 * n * size + 2 * expect * size,
                    } as f64;
                    let ms = time(ctx, reps, || {
                        let c = Count::Device(&mut counter);
                        match name {
                            "unique" => ctx.unique(&input, &mut out, &eq, c),
                            "unique-by-key" => {
                                ctx.unique_by_key(&input, &vals, &mut out, &mut out2, &eq, c)
                            }
                            "rle" => ctx.run_length_encode(&input, &mut out, &mut lengths, &eq, c),
                            _ => ctx.reduce_by_key(&input, &vals, &mut out, &mut out2, &eq, &op, c),
                        }
                        .map(|_| ())
                    })?;
                    check(name, count_of(&counter)?, expect)?;
                    let v = Variant {
                        name: format!("{name}/run{mean}"),
                        peer: algo,
                        bytes: moved,
                    };
                    push(v, ms, mean, &mut rows);
                    let ms = time_with_setup(
                        ctx,
                        reps,
                        &mut (&mut data, &mut vals_work),
                        |(d, v)| ctx.copy(&input, *d).and_then(|_| ctx.copy(&vals, *v)),
                        |(d, v)| {
                            let c = Count::Device(&mut counter);
                            match name {
                                "unique" => ctx.unique_in_place(*d, &eq, c),
                                "unique-by-key" => ctx.unique_by_key_in_place(*d, *v, &eq, c),
                                "rle" => ctx.run_length_encode_in_place(*d, &mut lengths, &eq, c),
                                _ => ctx.reduce_by_key_in_place(*d, *v, &eq, &op, c),
                            }
                            .map(|_| ())
                        },
                    )?;
                    check(name, count_of(&counter)?, expect)?;
                    let v = Variant {
                        name: format!("{name}/run{mean}/in-place"),
                        peer: None,
                        bytes: moved,
                    };
                    push(v, ms, mean, &mut rows);
                }
                if primitive == "reduce-by-key" {
                    // The preprocessed algorithm as a one-shot call (plan and apply each time),
                    // against the same bytes as the single pass, so the two rows compare.
                    let ms = time(ctx, reps, || {
                        ctx.reduce_by_key_with(
                            &input,
                            &vals,
                            &mut out,
                            &mut out2,
                            &eq,
                            &op,
                            Count::Device(&mut counter),
                            ReduceByKeyAlgorithm::Preprocessed,
                        )
                        .map(|_| ())
                    })?;
                    check("reduce_by_key preprocessed", count_of(&counter)?, expect)?;
                    let v = Variant {
                        name: format!("reduce-by-key/run{mean}/preprocessed"),
                        peer: None,
                        bytes: (2 * n * size + 2 * expect * size) as f64,
                    };
                    push(v, ms, mean, &mut rows);
                }
                if primitive == "rle" {
                    let nontrivial = (0..n)
                        .filter(|&i| {
                            (i == 0 || keys[i] != keys[i - 1])
                                && i + 1 < n
                                && keys[i + 1] == keys[i]
                        })
                        .count();
                    let mut offsets = ctx.zeros::<u32>(n).map_err(err)?;
                    let ms = time(ctx, reps, || {
                        let c = Count::Device(&mut counter);
                        ctx.non_trivial_runs(&input, &mut offsets, &mut lengths, &eq, c)
                            .map(|_| ())
                    })?;
                    check("non_trivial_runs", count_of(&counter)?, nontrivial)?;
                    let v = Variant {
                        name: format!("non-trivial-runs/run{mean}"),
                        peer: Some("nontrivial-runs"),
                        bytes: (n * size + nontrivial * 8) as f64,
                    };
                    push(v, ms, mean, &mut rows);
                }
            }
        }
        other => return Err(format!("bench: unknown compaction primitive `{other}`")),
    }
    Ok(rows)
}
