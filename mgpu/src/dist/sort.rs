//! Sort across ranks (sample sort): a local stable sort, splitters from a weighted sample, each
//! sorted run split by the splitters, one all-to-all exchange, then a merge of the runs
//! received. Elements are ordered by (key, rank, position): stable, and equal keys spread over
//! the ranks like any others.

use super::comm::{copy_between, uninit};
use super::{Group, Rank, Sharded};
use crate::buffer::check_place;
use crate::error::{Error, Result};
use crate::{Buffer, Comparator, Context, Element, Slice, SortAlgorithm};
use std::mem::size_of;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Samples per rank for each rank of the group: more gives more even shards (a shard is off its
/// even size by about `1 / OVERSAMPLE` of it) for a larger gather of samples.
const OVERSAMPLE: usize = 64;

/// Samples per rank at least: the finer the sample, the less of the run is read to place a
/// splitter in it (one sample's stride).
const MIN_SAMPLES: usize = 1024;

/// Where one rank's time went in a distributed sort ([`Rank::sort_timed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SortTimes {
    /// The local sort, and the gather of every rank's length.
    pub local: Duration,
    /// The sample, its gather, and the splitters' places in the local run.
    pub splitters: Duration,
    /// The all-to-all exchange of the counts, keys and values.
    pub exchange: Duration,
    /// The merge of the runs received.
    pub merge: Duration,
    /// The bytes (keys and values) this rank sent to the other ranks.
    pub sent_bytes: u64,
}

/// Wall-clock laps, each ending with the context synchronized; idle when not asked for.
struct Clock<'a> {
    ctx: &'a Context,
    last: Option<Instant>,
}

impl<'a> Clock<'a> {
    fn start(ctx: &'a Context, on: bool) -> Result<Clock<'a>> {
        if on {
            ctx.synchronize()?;
        }
        Ok(Clock {
            ctx,
            last: on.then(Instant::now),
        })
    }

    /// The time since the last lap (zero when idle).
    fn lap(&mut self) -> Result<Duration> {
        let Some(last) = self.last else {
            return Ok(Duration::ZERO);
        };
        self.ctx.synchronize()?;
        let now = Instant::now();
        self.last = Some(now);
        Ok(now - last)
    }
}

/// A splitter: the element `(key, rank, position in that rank's sorted run)`.
#[derive(Clone, Copy, Debug)]
struct Splitter<K> {
    key: K,
    rank: usize,
    position: u64,
}

impl Rank {
    /// Sorts the keys of every rank as one sequence, stably (equal keys keep their order of
    /// (rank, position)), under any comparator: this rank gets back its part of the sorted
    /// whole, of nearly even size whatever the input's shards (uneven, empty, all-equal keys).
    /// The local sort is `algorithm`'s ([`SortAlgorithm::Radix`] where it applies). Collective.
    ///
    /// ```
    /// use mgpu::{dist::Group, Comparator, SortAlgorithm};
    /// let group = Group::cpu(2);
    /// let parts = group.run(|rank| {
    ///     let keys = rank.context().upload(&[[9, 2, 7], [4, 4, 1]][rank.rank()])?;
    ///     rank.sort(keys, &Comparator::less(), SortAlgorithm::Auto)?.to_vec()
    /// })?;
    /// assert_eq!(parts.concat(), vec![1, 2, 4, 4, 7, 9]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort<K: Element>(
        &self,
        keys: Buffer<K>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<Buffer<K>> {
        Ok(self
            .sort_impl::<K, K>(keys, None, comparator, algorithm, None)?
            .0)
    }

    /// [`sort`](Rank::sort) of keys with values that move with them.
    ///
    /// ```
    /// use mgpu::{dist::Group, Comparator, SortAlgorithm};
    /// let group = Group::cpu(2);
    /// let parts = group.run(|rank| {
    ///     let ctx = rank.context();
    ///     let keys = ctx.upload(&[[3, 1], [3, 0]][rank.rank()])?;
    ///     let values = ctx.upload(&[[10u8, 11], [12, 13]][rank.rank()])?;
    ///     let (k, v) = rank.sort_pairs(keys, values, &Comparator::less(), SortAlgorithm::Auto)?;
    ///     Ok((k.to_vec()?, v.to_vec()?))
    /// })?;
    /// let values: Vec<u8> = parts.iter().flat_map(|p| p.1.clone()).collect();
    /// assert_eq!(values, vec![13, 11, 10, 12]); // the two 3s in (rank, position) order
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort_pairs<K: Element, V: Element>(
        &self,
        keys: Buffer<K>,
        values: Buffer<V>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<(Buffer<K>, Buffer<V>)> {
        let (k, v) = self.sort_impl(keys, Some(values), comparator, algorithm, None)?;
        Ok((k, v.expect("values given")))
    }

    /// [`sort_pairs`](Rank::sort_pairs) (or [`sort`](Rank::sort), with `values` `None`) that
    /// also says where this rank's time went. Each phase ends with the rank's stream
    /// synchronized, which the untimed sort does not do everywhere: the phases add up to a
    /// little more than its time.
    ///
    /// ```
    /// use mgpu::{dist::Group, Comparator, SortAlgorithm};
    /// let group = Group::cpu(2);
    /// let times = group.run(|rank| {
    ///     let keys = rank.context().upload(&[[9, 2, 7], [4, 4, 1]][rank.rank()])?;
    ///     let (sorted, _, times) =
    ///         rank.sort_timed::<i32, u32>(keys, None, &Comparator::less(), SortAlgorithm::Auto)?;
    ///     assert_eq!(sorted.len(), 3);
    ///     Ok(times)
    /// })?;
    /// assert_eq!(times[0].sent_bytes + times[1].sent_bytes, 4 * 4); // 2 keys each way
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort_timed<K: Element, V: Element>(
        &self,
        keys: Buffer<K>,
        values: Option<Buffer<V>>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<(Buffer<K>, Option<Buffer<V>>, SortTimes)> {
        let mut times = SortTimes::default();
        let (k, v) = self.sort_impl(keys, values, comparator, algorithm, Some(&mut times))?;
        Ok((k, v, times))
    }

    fn sort_impl<K: Element, V: Element>(
        &self,
        mut keys: Buffer<K>,
        mut values: Option<Buffer<V>>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
        mut times: Option<&mut SortTimes>,
    ) -> Result<(Buffer<K>, Option<Buffer<V>>)> {
        let ctx = self.context();
        let comm = self.communicator();
        let mut clock = Clock::start(ctx, times.is_some())?;
        let world = self.world_size();
        let n = keys.len();
        // 1. Check, then sort locally (both fail every rank through the gather of lengths).
        let sorted = check_place(ctx, &keys.view().at, "sort: the keys")
            .and_then(|_| match &values {
                Some(v) if v.len() != n => Err(Error::InvalidArgument(format!(
                    "sort_pairs: {} values for {n} keys",
                    v.len()
                ))),
                Some(v) => check_place(ctx, &v.view().at, "sort_pairs: the values"),
                None => Ok(()),
            })
            .and_then(|_| match &mut values {
                Some(v) => ctx.sort_pairs_with(&mut keys, v, comparator, algorithm),
                None => ctx.sort_with(&mut keys, comparator, algorithm),
            });
        let lengths: Vec<u64> = comm
            .all_gather_checked("sort", sorted.map(|_| vec![n as u64]))?
            .into_iter()
            .map(|l| l[0])
            .collect();
        if let Some(t) = times.as_deref_mut() {
            t.local = clock.lap()?;
        }
        if world == 1 {
            return Ok((keys, values));
        }
        // 2. A regular sample of the sorted run (one strided read), gathered by every rank.
        let sample = Sample::new(n, (OVERSAMPLE * world).max(MIN_SAMPLES));
        let mine = read_strided(&keys, sample.first, sample.stride, sample.count);
        let gathered = comm.all_gather_checked("sort", mine)?;
        let mine = &gathered[self.rank()];
        // 3. Splitters: the samples in (key, rank, position) order, each standing for the
        //    elements of its stride; splitter j is the first sample whose estimated place in
        //    the whole reaches j / world of it.
        let mut candidates: Vec<(Splitter<K>, f64)> = Vec::new();
        for (q, keys_q) in gathered.iter().enumerate() {
            let at = Sample::new(lengths[q] as usize, (OVERSAMPLE * world).max(MIN_SAMPLES));
            for (i, &key) in keys_q.iter().enumerate() {
                let position = (at.first + i * at.stride) as u64;
                candidates.push((
                    Splitter {
                        key,
                        rank: q,
                        position,
                    },
                    at.weight(i) as f64,
                ));
            }
        }
        candidates.sort_by(|a, b| {
            comparator
                .ordering(&a.0.key, &b.0.key)
                .then(a.0.rank.cmp(&b.0.rank))
                .then(a.0.position.cmp(&b.0.position))
        });
        let total: u64 = lengths.iter().sum();
        let mut splitters: Vec<Option<Splitter<K>>> = Vec::with_capacity(world - 1);
        let mut before = 0.0;
        let mut c = 0;
        for j in 1..world {
            let target = (j as u64 * total) as f64 / world as f64;
            while c < candidates.len() && before + candidates[c].1 / 2.0 < target {
                before += candidates[c].1;
                c += 1;
            }
            splitters.push(candidates.get(c).map(|s| s.0));
        }
        // 4. Each splitter's place in this rank's run: its elements before it in
        //    (key, rank, position) order.
        let me = self.rank();
        let mut bounds = Vec::with_capacity(world);
        let mut last = 0;
        for s in &splitters {
            let bound = match s {
                None => n,
                Some(s) if s.rank == me => s.position as usize,
                // Equal keys of lower ranks come first: past all of this rank's equal keys.
                Some(s) if s.rank < me => {
                    sample.partition_point(&keys, mine, |x| comparator.before(x, &s.key))?
                }
                Some(s) => {
                    sample.partition_point(&keys, mine, |x| !comparator.before(&s.key, x))?
                }
            };
            last = bound.clamp(last, n);
            bounds.push(last);
        }
        bounds.push(n);
        let counts: Vec<usize> = bounds
            .iter()
            .scan(0, |start, &end| {
                let c = end - *start;
                *start = end;
                Some(c)
            })
            .collect();
        if let Some(t) = times.as_deref_mut() {
            t.splitters = clock.lap()?;
        }
        // 5. One exchange: the counts, then the keys (and the values).
        let sent =
            (n - counts[me]) * (size_of::<K>() + values.as_ref().map_or(0, |_| size_of::<V>()));
        let (received, from) = comm.all_to_all_v(ctx, keys, &counts)?;
        let received_values = match values {
            Some(v) => Some(comm.all_to_all_v(ctx, v, &counts)?.0),
            None => None,
        };
        if let Some(t) = times.as_deref_mut() {
            t.exchange = clock.lap()?;
            t.sent_bytes = sent as u64;
        }
        // 6. Merge the runs received, in rank order (ties keep the lower rank's first).
        let merged = merge_runs(self, received, received_values, &from, comparator)?;
        if let Some(t) = times {
            t.merge = clock.lap()?;
        }
        Ok(merged)
    }
}

/// Samples of a sorted run of `n`: `count` keys, key `i` at `first + i * stride`, each
/// standing for the `stride` keys from `i * stride` (the last for the rest of the run).
struct Sample {
    n: usize,
    first: usize,
    stride: usize,
    count: usize,
}

impl Sample {
    /// About `wanted` samples of a run of `n` (all of its keys when it is shorter).
    fn new(n: usize, wanted: usize) -> Sample {
        if n == 0 {
            return Sample {
                n,
                first: 0,
                stride: 1,
                count: 0,
            };
        }
        let stride = n.div_ceil(wanted);
        let count = n.div_ceil(stride);
        // The middle of each stride, as far as the last sample stays in the run.
        let first = (stride / 2).min(n - 1 - (count - 1) * stride);
        Sample {
            n,
            first,
            stride,
            count,
        }
    }

    /// How many keys sample `i` stands for.
    fn weight(&self, i: usize) -> usize {
        ((i + 1) * self.stride).min(self.n) - i * self.stride
    }

    /// The first index of the sorted run `keys` where `below` is false, knowing `samples` (its
    /// keys at the sample positions): the samples narrow it to one stride, which is read once.
    fn partition_point<K: Element>(
        &self,
        keys: &Buffer<K>,
        samples: &[K],
        below: impl Fn(&K) -> bool,
    ) -> Result<usize> {
        let i = samples.partition_point(&below);
        let lo = if i == 0 {
            0
        } else {
            self.first + (i - 1) * self.stride + 1
        };
        let hi = if i == samples.len() {
            self.n
        } else {
            self.first + i * self.stride
        };
        let between = keys.slice(lo..hi).to_vec()?;
        Ok(lo + between.partition_point(below))
    }
}

/// Keys `first + i * stride` for `i < count` of `keys`, on the host: one strided copy.
fn read_strided<K: Element>(
    keys: &Buffer<K>,
    first: usize,
    stride: usize,
    count: usize,
) -> Result<Vec<K>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let view = keys.slice(first..first + (count - 1) * stride + 1);
    if let Some(host) = view.at.host() {
        return Ok(host.iter().step_by(stride).copied().collect());
    }
    let (home, ptr) = view.at.device().expect("host or device");
    let mut out = vec![K::zeroed(); count];
    home.download_strided(ptr, stride * std::mem::size_of::<K>(), &mut out)?;
    Ok(out)
}

/// Merges adjacent runs (lengths `runs`, in rank order) pairwise until one is left, ping-ponging
/// between the received buffers and temporaries.
fn merge_runs<K: Element, V: Element>(
    rank: &Rank,
    keys: Buffer<K>,
    values: Option<Buffer<V>>,
    runs: &[usize],
    comparator: &Comparator<K>,
) -> Result<(Buffer<K>, Option<Buffer<V>>)> {
    let ctx = rank.context();
    let mut bounds: Vec<usize> = std::iter::once(0)
        .chain(runs.iter().scan(0, |at, &n| {
            *at += n;
            Some(*at)
        }))
        .collect();
    bounds.dedup(); // empty runs need no merge
    let (mut keys, mut values) = (keys, values);
    while bounds.len() > 2 {
        let n = keys.len();
        let mut out_keys = uninit::<K>(ctx, n)?;
        let mut out_values = match &values {
            Some(_) => Some(uninit::<V>(ctx, n)?),
            None => None,
        };
        let mut next = vec![0];
        for pair in bounds.windows(2).collect::<Vec<_>>().chunks(2) {
            let (a, b) = (pair[0][0]..pair[0][1], pair.get(1).map(|p| p[0]..p[1]));
            let end = b.as_ref().map_or(a.end, |b| b.end);
            let whole = a.start..end;
            match (b, &values, &mut out_values) {
                (None, _, _) => {
                    copy_between(
                        ctx,
                        &keys.slice(a.clone()),
                        &mut out_keys.slice_mut(a.clone()),
                    )?;
                    if let (Some(v), Some(o)) = (&values, &mut out_values) {
                        copy_between(ctx, &v.slice(a.clone()), &mut o.slice_mut(a))?;
                    }
                }
                (Some(b), None, _) => ctx.merge(
                    &keys.slice(a),
                    &keys.slice(b),
                    &mut out_keys.slice_mut(whole),
                    comparator,
                )?,
                (Some(b), Some(v), Some(o)) => ctx.merge_pairs(
                    &keys.slice(a.clone()),
                    &v.slice(a),
                    &keys.slice(b.clone()),
                    &v.slice(b),
                    &mut out_keys.slice_mut(whole.clone()),
                    &mut o.slice_mut(whole),
                    comparator,
                )?,
                (Some(_), Some(_), None) => unreachable!("values and their output go together"),
            }
            next.push(end);
        }
        bounds = next;
        keys = out_keys;
        values = out_values;
    }
    Ok((keys, values))
}

impl Group {
    /// Sorts sharded keys ([`Rank::sort`] on every rank, [`SortAlgorithm::Auto`]); the result's
    /// shards are nearly even ([`Sharded::shard_lengths`] says how even).
    ///
    /// ```
    /// use mgpu::{dist::{Group, Sharded}, Comparator};
    /// let group = Group::cpu(3);
    /// let keys = Sharded::scatter_by(&group, &[5, 3, 9, 1, 3, 8, 2, 3], &[8, 0, 0])?;
    /// let sorted = group.sort(keys, &Comparator::less())?;
    /// assert_eq!(sorted.gather(&group)?, vec![1, 2, 3, 3, 3, 5, 8, 9]);
    /// assert!(sorted.shard_lengths().iter().all(|&n| n >= 2 && n <= 4));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort<K: Element>(
        &self,
        keys: Sharded<K>,
        comparator: &Comparator<K>,
    ) -> Result<Sharded<K>> {
        self.sort_with(keys, comparator, SortAlgorithm::Auto)
    }

    /// [`sort`](Group::sort) with the local sort's algorithm.
    pub fn sort_with<K: Element>(
        &self,
        keys: Sharded<K>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<Sharded<K>> {
        keys.check(self, "sort: the keys")?;
        let shards: Vec<Mutex<Option<Buffer<K>>>> = keys
            .into_shards()
            .into_iter()
            .map(|(_, b)| Mutex::new(Some(b)))
            .collect();
        let sorted = self.run(|rank| {
            let mine = take(&shards[rank.local]);
            let out = rank.sort(mine, comparator, algorithm)?;
            let lengths = all_lengths(rank, out.len())?;
            Ok(((rank.rank(), out), lengths))
        })?;
        let lengths = sorted[0].1.clone();
        Ok(Sharded::from_parts(
            sorted.into_iter().map(|s| s.0).collect(),
            lengths,
        ))
    }

    /// Sorts sharded keys and values alike (the same shard lengths) by the keys.
    ///
    /// ```
    /// use mgpu::{dist::{Group, Sharded}, Comparator, SortAlgorithm};
    /// let group = Group::cpu(2);
    /// let keys = Sharded::scatter(&group, &[2, 1, 2, 0])?;
    /// let values = Sharded::scatter(&group, &['a' as u8, b'b', b'c', b'd'])?;
    /// let (k, v) = group.sort_pairs(keys, values, &Comparator::less(), SortAlgorithm::Auto)?;
    /// assert_eq!(k.gather(&group)?, vec![0, 1, 2, 2]);
    /// assert_eq!(v.gather(&group)?, b"dbac".to_vec());
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn sort_pairs<K: Element, V: Element>(
        &self,
        keys: Sharded<K>,
        values: Sharded<V>,
        comparator: &Comparator<K>,
        algorithm: SortAlgorithm,
    ) -> Result<(Sharded<K>, Sharded<V>)> {
        keys.check(self, "sort_pairs: the keys")?;
        values.check(self, "sort_pairs: the values")?;
        if keys.shard_lengths() != values.shard_lengths() {
            return Err(Error::InvalidArgument(format!(
                "sort_pairs: the keys' shards hold {:?}, the values' {:?}",
                keys.shard_lengths(),
                values.shard_lengths()
            )));
        }
        let ks: Vec<_> = keys
            .into_shards()
            .into_iter()
            .map(|(_, b)| Mutex::new(Some(b)))
            .collect();
        let vs: Vec<_> = values
            .into_shards()
            .into_iter()
            .map(|(_, b)| Mutex::new(Some(b)))
            .collect();
        let sorted = self.run(|rank| {
            let (k, v) = rank.sort_pairs(
                take(&ks[rank.local]),
                take(&vs[rank.local]),
                comparator,
                algorithm,
            )?;
            let lengths = all_lengths(rank, k.len())?;
            Ok(((rank.rank(), k), (rank.rank(), v), lengths))
        })?;
        let lengths = sorted[0].2.clone();
        let (mut k, mut v) = (Vec::new(), Vec::new());
        for (ki, vi, _) in sorted {
            k.push(ki);
            v.push(vi);
        }
        Ok((
            Sharded::from_parts(k, lengths.clone()),
            Sharded::from_parts(v, lengths),
        ))
    }
}

fn take<T>(slot: &Mutex<Option<T>>) -> T {
    slot.lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .expect("each rank takes its own shard once")
}

/// Every rank's length, on every rank.
fn all_lengths(rank: &Rank, mine: usize) -> Result<Vec<u64>> {
    Ok(rank
        .communicator()
        .all_gather_checked("lengths", Ok(vec![mine as u64]))?
        .into_iter()
        .map(|l| l[0])
        .collect())
}
