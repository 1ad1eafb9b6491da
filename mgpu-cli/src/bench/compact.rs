//! `mgpu bench select | partition | unique | rle | reduce-by-key`: the single-pass compaction
//! family against a device memcpy and CUB (DeviceSelect, DevicePartition, DeviceRunLengthEncode,
//! DeviceReduce::ReduceByKey), in and out of place, on the same data distributions as the peer
//! harness (peers/cub_bench.cu): items from splitmix64, selected when `bits % 100 < rate`, or by
//! the one-instruction test `bits & 1 == 0` (`even`); runs that end after each item with
//! probability 1 / mean length. reduce-by-key also times its preprocessed algorithm as a one-shot
//! call (`/preprocessed`, no peer).

use super::harness::{self, print_row, rand_bits, time, time_with_setup, Args, BenchElement};
use super::harness::{PeerParam, Row};
use crate::output;
use crate::peers::Peer;
use mgpu::{Buffer, Context, Count, Equality, Op, Predicate, ReduceByKeyAlgorithm};

/// The selection rates (percent) of select and partition.
const RATES: [u64; 5] = [0, 10, 50, 90, 100];

/// What the select and partition rows select: `rate`% of the items (`bits % 100 < rate`: a
/// 64-bit remainder, several instructions), or the even ones (`even`: `bits & 1 == 0`, one
/// instruction), about half of them as at `50%`, so that those two rows differ mostly in the
/// predicate's cost.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Selection {
    Rate(u64),
    Even,
}

impl Selection {
    /// The rates, then `even`.
    fn all() -> impl Iterator<Item = Selection> {
        RATES
            .into_iter()
            .map(Selection::Rate)
            .chain([Selection::Even])
    }

    /// The part of the row names after the slash (`50%`, `even`).
    fn part(self) -> String {
        match self {
            Selection::Rate(rate) => format!("{rate}%"),
            Selection::Even => "even".into(),
        }
    }

    /// Whether an item with these bits is selected.
    fn keeps(self, bits: u64) -> bool {
        match self {
            Selection::Rate(rate) => bits % 100 < rate,
            Selection::Even => bits & 1 == 0,
        }
    }

    /// The peer's parameter: the rate, or the word `even`.
    fn peer_param(self) -> PeerParam<'static> {
        match self {
            Selection::Rate(rate) => PeerParam::Number(rate),
            Selection::Even => PeerParam::Word("even"),
        }
    }
}

/// The mean run lengths of unique, rle and reduce-by-key.
const MEANS: [u64; 4] = [1, 2, 10, 500];

/// Integer element types of the compaction bench: the predicate reads their bits.
pub(crate) trait CompactElement: BenchElement {
    /// `x`'s bits as an unsigned number of the same width.
    fn bits(self) -> u64;
    /// `(unsigned type)x` in CUDA C++.
    const CUDA_UNSIGNED: &'static str;
}
impl CompactElement for i32 {
    fn bits(self) -> u64 {
        self as u32 as u64
    }
    const CUDA_UNSIGNED: &'static str = "unsigned";
}
impl CompactElement for i64 {
    fn bits(self) -> u64 {
        self as u64
    }
    const CUDA_UNSIGNED: &'static str = "unsigned long long";
}

/// Items of the selection benches and the predicate of `sel`.
fn selection<T: CompactElement>(n: usize, sel: Selection) -> (Vec<T>, Predicate<T>) {
    let items = (0..n as u64)
        .map(|i| T::value_from_bits(rand_bits(1, i)))
        .collect();
    let pred = match sel {
        Selection::Rate(rate) => Predicate::new(
            format!("rate{rate}"),
            move |x: &T| x.bits() % 100 < rate,
            format!(
                "(unsigned long long)({})x % 100ull < {rate}ull",
                T::CUDA_UNSIGNED
            ),
        ),
        Selection::Even => Predicate::new(
            "even",
            |x: &T| x.bits() & 1 == 0,
            format!("(({})x & 1u) == 0u", T::CUDA_UNSIGNED),
        ),
    };
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
            T::value_from_bits(run)
        })
        .collect();
    let values = (0..n as u64)
        .map(|i| T::value_from_bits(rand_bits(2, i) & 0xff))
        .collect();
    (keys, values)
}

/// The rows of every type and size.
pub(crate) fn rows(ctx: &Context, a: &Args, peer: Option<&Peer>) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for ty in &a.types {
        for log2 in a.sizes.clone() {
            let prim = a.primitive.as_str();
            output::working_on(format!("{prim} {ty} 2^{log2}"));
            let r = match ty.as_str() {
                "i32" => bench::<i32>(ctx, a, ty, log2, peer),
                "i64" => bench::<i64>(ctx, a, ty, log2, peer),
                other => Err(format!(
                    "bench: unsupported type `{other}` for {prim} (i32, i64)"
                )),
            }?;
            rows.extend(r);
            output::tick("");
        }
    }
    Ok(rows)
}

/// One measured call: its row's name, the peer's algorithm (if any), the bytes that must move,
/// the count it must leave, and the library functions timed (as a failed check names them): out
/// of place, and in place where that form is measured too.
struct Variant {
    name: String,
    peer: Option<&'static str>,
    bytes: usize,
    want: usize,
    calls: (&'static str, Option<&'static str>),
}

/// What the rows of one type and size share, and the rows.
struct Table<'a> {
    ctx: &'a Context,
    /// The rows measured, and the repetitions.
    a: &'a Args,
    ty: &'a str,
    log2: u32,
    peer: Option<&'a Peer>,
    memcpy_ms: f64,
    rows: Vec<Row>,
}

impl Table<'_> {
    /// Times those of `v`'s calls whose rows are measured (`restore` puts the input back into
    /// `state` before each in-place run), checks the count each leaves (the one `run` returns, else
    /// the counter's) and adds the rows. `param` is the peer's parameter: the rate or `even`, or
    /// the mean run length.
    #[allow(clippy::too_many_arguments)]
    fn measure<S>(
        &mut self,
        v: Variant,
        param: PeerParam,
        state: &mut S,
        counter: &mut Buffer<u64>,
        mut restore: impl FnMut(&mut S) -> mgpu::Result<()>,
        mut run: impl FnMut(&str, &mut S, Count) -> mgpu::Result<Option<u64>>,
    ) -> Result<(), String> {
        let (out_of_place, in_place) = v.calls;
        let calls = [(out_of_place, v.name.clone(), false)]
            .into_iter()
            .chain(in_place.map(|c| (c, format!("{}/in-place", v.name), true)))
            .filter(|(_, row, _)| self.a.measures(row));
        for (call, row, restoring) in calls {
            let mut got = None;
            let ms = time_with_setup(
                self.ctx,
                self.a.reps,
                state,
                |s| if restoring { restore(s) } else { Ok(()) },
                |s| run(call, s, Count::Device(counter)).map(|k| got = k),
            )?;
            let got = match got {
                Some(k) => k,
                None => counter.to_vec().map_err(err)?[0],
            };
            if got as usize != v.want {
                return Err(format!("{call}: count {got}, expected {}", v.want));
            }
            let n = 1u64 << self.log2;
            let cub = match v.peer.filter(|_| !restoring) {
                Some(algo) => {
                    harness::peer_ms(self.peer, "CUB", algo, self.ty, n, self.a.reps, param)?
                }
                None => None,
            };
            let row = Row {
                variant: row,
                ty: self.ty.to_string(),
                log2: self.log2,
                ms,
                bytes: v.bytes as f64,
                memcpy_ms: self.memcpy_ms,
                peers: vec![("cub", cub)],
                limit_ms: None,
            };
            print_row(&row);
            self.rows.push(row);
        }
        Ok(())
    }
}

fn err(e: mgpu::Error) -> String {
    e.to_string()
}

/// Every variant of `a.primitive` that `a` measures, for element type `T` at `2^log2` items.
fn bench<T: CompactElement>(
    ctx: &Context,
    a: &Args,
    ty: &str,
    log2: u32,
    peer: Option<&Peer>,
) -> Result<Vec<Row>, String> {
    let (primitive, reps) = (a.primitive.as_str(), a.reps);
    let n = 1usize << log2;
    let size = std::mem::size_of::<T>();
    let mut out = ctx.zeros::<T>(n).map_err(err)?;
    let mut out2 = ctx.zeros::<T>(n).map_err(err)?;
    let mut data = ctx.zeros::<T>(n).map_err(err)?;
    let mut counter = ctx.zeros::<u64>(1).map_err(err)?;
    let memcpy_ms = {
        let src = ctx.zeros::<T>(n).map_err(err)?;
        time(ctx, reps, || ctx.copy(&src, &mut out))?
    };
    let mut table = Table {
        ctx,
        a,
        ty,
        log2,
        peer,
        memcpy_ms,
        rows: Vec::new(),
    };
    let variant = |name, peer, bytes, want, calls| Variant {
        name,
        peer,
        bytes,
        want,
        calls,
    };
    if primitive == "select" || primitive == "partition" {
        for sel in Selection::all() {
            let part = sel.part();
            if !a.measures_part(&part) {
                continue;
            }
            let (items, pred) = selection::<T>(n, sel);
            let kept = items.iter().filter(|x| sel.keeps(x.bits())).count();
            let input = ctx.upload(&items).map_err(err)?;
            let moved = (n + kept) * size;
            let mut flags = None;
            let variants = if primitive == "select" {
                let mut v = vec![variant(
                    format!("select-if/{part}"),
                    Some("select-if"),
                    moved,
                    kept,
                    ("select_if", Some("select_if_in_place")),
                )];
                // select-flagged reads flags, not the predicate: one selection is enough.
                if sel == Selection::Rate(50) {
                    let f: Vec<u8> = items.iter().map(|x| sel.keeps(x.bits()) as u8).collect();
                    flags = Some(ctx.upload(&f).map_err(err)?);
                    v.push(variant(
                        format!("select-flagged/{part}"),
                        Some("select-flagged"),
                        moved + n,
                        kept,
                        ("select_flagged", Some("select_flagged_in_place")),
                    ));
                }
                v
            } else {
                // The stable in-place partition is staged through a temporary by design (see
                // `partition_in_place`): timed so that its cost is on record.
                let moved = 2 * n * size;
                vec![
                    variant(
                        format!("partition-if/{part}"),
                        Some("partition-if"),
                        moved,
                        kept,
                        ("partition_if", Some("partition_in_place")),
                    ),
                    variant(
                        format!("partition-copy/{part}"),
                        None,
                        moved,
                        kept,
                        ("partition_copy", Some("partition_copy_in_place")),
                    ),
                ]
            };
            for v in variants {
                table.measure(
                    v,
                    sel.peer_param(),
                    &mut data,
                    &mut counter,
                    |d| ctx.copy(&input, d),
                    |call, d, c| {
                        let flags = || flags.as_ref().expect("select-flagged has flags");
                        match call {
                            "select_if" => ctx.select_if(&input, &mut out, &pred, c),
                            "select_if_in_place" => ctx.select_if_in_place(d, &pred, c),
                            "select_flagged" => ctx.select_flagged(&input, flags(), &mut out, c),
                            "select_flagged_in_place" => ctx.select_flagged_in_place(d, flags(), c),
                            "partition_if" => ctx.partition_if(&input, &mut out, &pred, c),
                            "partition_in_place" => ctx.partition_in_place(d, &pred).map(Some),
                            "partition_copy" => {
                                ctx.partition_copy(&input, &mut out, &mut out2, &pred, c)
                            }
                            _ => ctx.partition_copy_in_place(d, &mut out2, &pred, c),
                        }
                    },
                )?;
            }
        }
        return Ok(table.rows);
    }
    // unique, rle, reduce-by-key
    let eq = Equality::<T>::equal_to();
    let mut lengths = ctx.zeros::<u32>(n).map_err(err)?;
    let op = Op::<T>::plus();
    for mean in MEANS {
        if !a.measures_part(&format!("run{mean}")) {
            continue;
        }
        let (keys, values) = runs::<T>(n, mean);
        let expect = 1 + (1..n).filter(|&i| keys[i] != keys[i - 1]).count();
        let input = ctx.upload(&keys).map_err(err)?;
        let vals = ctx.upload(&values).map_err(err)?;
        let mut vals_work = ctx.zeros::<T>(n).map_err(err)?;
        let pairs = 2 * n * size + 2 * expect * size;
        // `unique` also runs `unique_by_key` (values of the keys' type, reduce-by-key's), against
        // CUB's DeviceSelect::UniqueByKey on the same keys and values.
        let mut variants = match primitive {
            "unique" => vec![
                variant(
                    format!("unique/run{mean}"),
                    Some("unique"),
                    (n + expect) * size,
                    expect,
                    ("unique", Some("unique_in_place")),
                ),
                variant(
                    format!("unique-by-key/run{mean}"),
                    Some("unique-by-key"),
                    2 * (n + expect) * size,
                    expect,
                    ("unique_by_key", Some("unique_by_key_in_place")),
                ),
            ],
            "rle" => vec![variant(
                format!("rle/run{mean}"),
                Some("rle"),
                n * size + expect * (size + 4),
                expect,
                ("run_length_encode", Some("run_length_encode_in_place")),
            )],
            _ => vec![variant(
                format!("reduce-by-key/run{mean}"),
                Some("reduce-by-key"),
                pairs,
                expect,
                ("reduce_by_key", Some("reduce_by_key_in_place")),
            )],
        };
        if primitive == "reduce-by-key" {
            // The preprocessed algorithm as a one-shot call (plan and apply each time), against
            // the same bytes as the single pass, so the two rows compare.
            variants.push(variant(
                format!("reduce-by-key/run{mean}/preprocessed"),
                None,
                pairs,
                expect,
                ("reduce_by_key preprocessed", None),
            ));
        }
        let mut offsets = None;
        if primitive == "rle" {
            let nontrivial = (0..n)
                .filter(|&i| {
                    (i == 0 || keys[i] != keys[i - 1]) && i + 1 < n && keys[i + 1] == keys[i]
                })
                .count();
            offsets = Some(ctx.zeros::<u32>(n).map_err(err)?);
            variants.push(variant(
                format!("non-trivial-runs/run{mean}"),
                Some("nontrivial-runs"),
                n * size + nontrivial * 8,
                nontrivial,
                ("non_trivial_runs", None),
            ));
        }
        for v in variants {
            table.measure(
                v,
                PeerParam::Number(mean),
                &mut (&mut data, &mut vals_work),
                &mut counter,
                |(d, w)| ctx.copy(&input, *d).and_then(|_| ctx.copy(&vals, *w)),
                |call, (d, w), c| match call {
                    "unique" => ctx.unique(&input, &mut out, &eq, c),
                    "unique_in_place" => ctx.unique_in_place(*d, &eq, c),
                    "unique_by_key" => {
                        ctx.unique_by_key(&input, &vals, &mut out, &mut out2, &eq, c)
                    }
                    "unique_by_key_in_place" => ctx.unique_by_key_in_place(*d, *w, &eq, c),
                    "run_length_encode" => {
                        ctx.run_length_encode(&input, &mut out, &mut lengths, &eq, c)
                    }
                    "run_length_encode_in_place" => {
                        ctx.run_length_encode_in_place(*d, &mut lengths, &eq, c)
                    }
                    "reduce_by_key" => {
                        ctx.reduce_by_key(&input, &vals, &mut out, &mut out2, &eq, &op, c)
                    }
                    "reduce_by_key_in_place" => ctx.reduce_by_key_in_place(*d, *w, &eq, &op, c),
                    "reduce_by_key preprocessed" => ctx.reduce_by_key_with(
                        &input,
                        &vals,
                        &mut out,
                        &mut out2,
                        &eq,
                        &op,
                        c,
                        ReduceByKeyAlgorithm::Preprocessed,
                    ),
                    _ => {
                        let offsets = offsets.as_mut().expect("rle has offsets");
                        ctx.non_trivial_runs(&input, offsets, &mut lengths, &eq, c)
                    }
                },
            )?;
        }
    }
    Ok(table.rows)
}
