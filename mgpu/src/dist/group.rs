//! A group of ranks: one context and one communicator per rank, in this process.

use super::comm::{default_timeout, Communicator, Hub};
use crate::cuda::nccl;
use crate::error::{Error, Result};
use crate::Context;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One rank of a [`Group`]: its context (where its shard lives and its work runs) and its
/// communicator. The distributed algorithms are its methods ([`reduce`](Rank::reduce),
/// [`scan`](Rank::scan), [`select_if`](Rank::select_if), [`sort`](Rank::sort), ...), written once
/// per rank against the communicator, whatever carries it.
#[derive(Debug)]
pub struct Rank {
    ctx: Context,
    comm: Communicator,
    /// Its place among this process's ranks (the group's `ranks()`).
    pub(crate) local: usize,
    /// Whether every rank of the group works on this rank's GPU (streams of one GPU): then the
    /// bytes they move together, not one rank's wait, set the time.
    pub(crate) one_device: bool,
}

impl Rank {
    /// This rank, from 0.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The number of ranks of the group (of every process).
    pub fn world_size(&self) -> usize {
        self.comm.world_size()
    }

    /// The context its shards live on and its work runs on.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// Its communicator, for collective calls of one's own.
    pub fn communicator(&self) -> &Communicator {
        &self.comm
    }
}

/// The ranks of a distributed computation that this process drives: all of them (ranks that are
/// CPU contexts, streams of one GPU, or the GPUs of this host through NCCL), or one
/// (torchrun-style, one process per GPU, [`from_env`](Group::from_env)).
///
/// [`run`](Group::run) runs a closure on each of this process's ranks, each on its own thread,
/// which is how the per-rank algorithms of [`Rank`] are called; the methods of `Group` over
/// [`Sharded`](super::Sharded) data do that for you.
///
/// ```
/// use mgpu::{dist::{Group, Sharded}, Op};
/// let group = Group::cpu(3); // three ranks on the CPU backend
/// let data: Vec<i64> = (1..=10).collect();
/// let sharded = Sharded::scatter(&group, &data)?;
/// assert_eq!(sharded.shard_lengths(), &[4, 3, 3]);
/// assert_eq!(group.reduce(&sharded, &Op::plus())?, 55);
/// # Ok::<(), mgpu::Error>(())
/// ```
#[derive(Debug)]
pub struct Group {
    world: usize,
    ranks: Vec<Rank>,
    hub: Option<Arc<Hub>>,
}

impl Group {
    /// Ranks that are the given contexts of this process, rank `i` on `contexts[i]`, talking
    /// through memory: CPU contexts, or streams of one GPU ([`Context::fork`]); contexts of
    /// different GPUs work too, their data then moving through the host ([`gpus`](Group::gpus)
    /// uses NCCL instead). Needs no NCCL.
    ///
    /// ```
    /// let gpu_or_cpu = mgpu::Context::new()?;
    /// let group = mgpu::dist::Group::in_process(vec![gpu_or_cpu.fork()?, gpu_or_cpu.fork()?])?;
    /// assert_eq!(group.world_size(), 2);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn in_process(contexts: Vec<Context>) -> Result<Group> {
        if contexts.is_empty() {
            return Err(Error::InvalidArgument(
                "a group needs at least one rank".into(),
            ));
        }
        // GPU ranks' threads only wait for their streams: they may spin for the next step
        // where there are cores to spare (CPU ranks need the cores for their work).
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spin = contexts.iter().all(Context::is_gpu) && contexts.len() < cores;
        let hub = Hub::new(contexts.len(), spin);
        let timeout = default_timeout();
        let device = |c: &Context| c.device_info().map(|d| d.ordinal);
        // Streams of one GPU (CPU ranks run the general algorithms, which CI tests that way).
        let one_device = device(&contexts[0]).is_some()
            && contexts.iter().all(|c| device(c) == device(&contexts[0]));
        let ranks = contexts
            .into_iter()
            .enumerate()
            .map(|(r, ctx)| Rank {
                ctx,
                comm: Communicator::in_process(r, hub.clone(), timeout),
                local: r,
                one_device,
            })
            .collect::<Vec<_>>();
        Ok(Group {
            world: ranks.len(),
            ranks,
            hub: Some(hub),
        })
    }

    /// `ranks` ranks on the CPU backend (at least one).
    ///
    /// ```
    /// assert_eq!(mgpu::dist::Group::cpu(8).world_size(), 8);
    /// ```
    pub fn cpu(ranks: usize) -> Group {
        Group::in_process(vec![Context::cpu(); ranks.max(1)]).expect("at least one rank")
    }

    /// `ranks` ranks on streams of `ctx`'s GPU (forks of it), or on the CPU when `ctx` is: the
    /// distributed algorithms with no real exchange, which is what they cost themselves.
    ///
    /// ```
    /// let ctx = mgpu::Context::new()?;
    /// let group = mgpu::dist::Group::on_one_device(&ctx, 2)?;
    /// assert_eq!(group.ranks()[1].context().is_gpu(), ctx.is_gpu());
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn on_one_device(ctx: &Context, ranks: usize) -> Result<Group> {
        let contexts = (0..ranks.max(1))
            .map(|_| ctx.fork())
            .collect::<Result<Vec<_>>>()?;
        Group::in_process(contexts)
    }

    /// One rank per GPU of `ordinals` (each once), driven by this process: through NCCL
    /// (`ncclCommInitAll`) for several GPUs ([`Error::NoNccl`] without it), in process for one.
    pub fn gpus(ordinals: &[usize]) -> Result<Group> {
        let contexts = ordinals
            .iter()
            .map(|&o| Context::cuda_device(o))
            .collect::<Result<Vec<_>>>()?;
        if contexts.len() == 1 {
            return Group::in_process(contexts);
        }
        Group::nccl(contexts)
    }

    /// Ranks on the GPUs of `contexts` (one each, distinct GPUs) through NCCL, even for one rank
    /// (to test NCCL on one GPU). NCCL must be found ([`Error::NoNccl`]).
    pub fn nccl(contexts: Vec<Context>) -> Result<Group> {
        if contexts.is_empty() {
            return Err(Error::InvalidArgument(
                "a group needs at least one rank".into(),
            ));
        }
        let gpus = contexts
            .iter()
            .map(|c| {
                c.gpu().cloned().ok_or_else(|| {
                    Error::InvalidArgument(
                        "an NCCL group's ranks are GPU contexts; use Group::in_process for CPU ranks"
                            .into(),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let comms = nccl::Comm::init_all(&gpus)?;
        let world = contexts.len();
        let timeout = default_timeout();
        let ranks = contexts
            .into_iter()
            .zip(comms)
            .enumerate()
            .map(|(r, (ctx, comm))| Rank {
                ctx,
                comm: Communicator::nccl(r, world, comm, timeout),
                local: r,
                one_device: world == 1,
            })
            .collect();
        Ok(Group {
            world,
            ranks,
            hub: None,
        })
    }

    /// This process's rank of a group of processes started torchrun-style, one per GPU:
    /// `RANK`, `WORLD_SIZE` and `LOCAL_RANK` (the GPU; `RANK` when unset) from the environment.
    /// Rank 0 makes the NCCL id and writes it to the rendezvous file, the others wait for it (at
    /// most the timeout, `MGPU_DIST_TIMEOUT`, 120 s by default): `MGPU_RENDEZVOUS`, a file on a
    /// filesystem every host shares; on one host it defaults to a file in the temporary folder
    /// named after the run (`TORCHELASTIC_RUN_ID`, else `MASTER_ADDR` and `MASTER_PORT`). A
    /// world of one needs no NCCL.
    ///
    /// ```no_run
    /// // torchrun --nproc-per-node 2 ./my_program
    /// let group = mgpu::dist::Group::from_env()?;
    /// println!("rank {} of {}", group.ranks()[0].rank(), group.world_size());
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn from_env() -> Result<Group> {
        let setup = |message: String| Error::Nccl {
            what: "starting a group from the environment",
            message,
        };
        let number = |name: &str| -> Result<Option<usize>> {
            match std::env::var(name) {
                Err(_) => Ok(None),
                Ok(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| setup(format!("{name}={v} is not a number"))),
            }
        };
        let (Some(rank), Some(world)) = (number("RANK")?, number("WORLD_SIZE")?) else {
            return Err(setup(
                "RANK and WORLD_SIZE are not set: start the program with torchrun (or set them), \
                 or make the group with Group::gpus, Group::on_one_device or Group::cpu"
                    .into(),
            ));
        };
        if world == 0 || rank >= world {
            return Err(setup(format!(
                "RANK={rank} is not below WORLD_SIZE={world}"
            )));
        }
        let device = number("LOCAL_RANK")?.unwrap_or(rank);
        let ctx = Context::cuda_device(device)?;
        if world == 1 {
            return Group::in_process(vec![ctx]);
        }
        let timeout = default_timeout();
        let path = rendezvous_path();
        let id = rendezvous(rank, world, &path, timeout)?;
        let gpu = ctx.gpu().expect("a GPU context").clone();
        let comm = nccl::Comm::init_rank(&gpu, rank, world, id)?;
        if rank == 0 {
            // Every rank has joined: the id is spent.
            let _ = std::fs::remove_file(&path);
        }
        Ok(Group {
            world,
            ranks: vec![Rank {
                ctx,
                comm: Communicator::nccl(rank, world, comm, timeout),
                local: 0,
                one_device: world == 1,
            }],
            hub: None,
        })
    }

    /// The same group whose collective calls wait at most `timeout` for the other ranks.
    ///
    /// ```
    /// use std::time::Duration;
    /// let group = mgpu::dist::Group::cpu(2).with_timeout(Duration::from_secs(5));
    /// assert_eq!(group.ranks()[0].communicator().timeout(), Duration::from_secs(5));
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Group {
        for r in &mut self.ranks {
            r.comm.timeout = timeout;
        }
        self
    }

    /// The number of ranks, of every process.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// The ranks this process drives: all of them, or its own one (torchrun-style).
    pub fn ranks(&self) -> &[Rank] {
        &self.ranks
    }

    /// Runs `work` on each rank of this process, each on a thread of its own (inline for one),
    /// and returns their results in the order of [`ranks`](Group::ranks). When a rank fails,
    /// the error returned is the first rank's that failed of its own accord (not one that
    /// failed because another did). A rank that returns an error or panics makes the others'
    /// collective calls fail at once rather than wait for it (a panic is caught and returned as
    /// [`Error::RankFailed`]).
    ///
    /// ```
    /// let group = mgpu::dist::Group::cpu(4);
    /// let ranks = group.run(|rank| Ok(rank.rank() * 10))?;
    /// assert_eq!(ranks, vec![0, 10, 20, 30]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn run<R: Send>(&self, work: impl Fn(&Rank) -> Result<R> + Sync) -> Result<Vec<R>> {
        if let Some(hub) = &self.hub {
            hub.reset();
        }
        let results: Vec<Result<R>> = if self.ranks.len() == 1 {
            vec![work(&self.ranks[0])]
        } else {
            std::thread::scope(|s| {
                let threads: Vec<_> = self
                    .ranks
                    .iter()
                    .map(|rank| {
                        let work = &work;
                        s.spawn(move || self.run_rank(rank, work))
                    })
                    .collect();
                threads
                    .into_iter()
                    .map(|t| t.join().expect("a rank's panic is caught"))
                    .collect()
            })
        };
        // The error to return: a rank's own, not one it got because another rank failed.
        let own = |q: usize, e: &Error| match e {
            Error::RankFailed { rank, .. } => *rank == self.ranks[q].rank(),
            Error::Timeout { .. } => false,
            _ => true,
        };
        let first = results
            .iter()
            .enumerate()
            .position(|(q, r)| r.as_ref().is_err_and(|e| own(q, e)))
            .or_else(|| results.iter().position(|r| r.is_err()));
        if let Some(i) = first {
            return Err(results
                .into_iter()
                .nth(i)
                .expect("found")
                .err()
                .expect("an error"));
        }
        Ok(results.into_iter().map(|r| r.expect("no error")).collect())
    }

    /// One rank's work on its thread. An error or a panic is told to the other ranks of this
    /// process, so that their collective calls fail at once instead of waiting for this one.
    fn run_rank<R>(&self, rank: &Rank, work: &(impl Fn(&Rank) -> Result<R> + Sync)) -> Result<R> {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(rank)))
            .unwrap_or_else(|panic| {
                Err(Error::RankFailed {
                    call: "run",
                    rank: rank.rank(),
                    world: self.world,
                    message: format!("panicked: {}", panic_message(&*panic)),
                })
            });
        if let (Err(e), Some(hub)) = (&result, &self.hub) {
            hub.abort(rank.rank(), e.to_string());
        }
        result
    }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into())
}

/// The run's name, so that a file of an earlier run is not taken for this one's.
fn run_id() -> String {
    let var = |n: &str| std::env::var(n).ok().filter(|v| !v.is_empty());
    var("TORCHELASTIC_RUN_ID")
        .or_else(|| Some(format!("{}-{}", var("MASTER_ADDR")?, var("MASTER_PORT")?)))
        .unwrap_or_else(|| "default".into())
}

fn rendezvous_path() -> PathBuf {
    match std::env::var_os("MGPU_RENDEZVOUS").filter(|v| !v.is_empty()) {
        Some(p) => PathBuf::from(p),
        None => {
            let safe: String = run_id()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            std::env::temp_dir().join(format!("mgpu-nccl-{safe}.id"))
        }
    }
}

/// Rank 0 writes the NCCL id (atomically: a temporary file renamed); the others read it once it
/// is there for this run and world, waiting at most `timeout`.
fn rendezvous(rank: usize, world: usize, path: &Path, timeout: Duration) -> Result<[u8; 128]> {
    let io = |what: String| move |source| Error::Io { what, source };
    let header = format!("mgpu-nccl-id run={} world={world}", run_id());
    if rank == 0 {
        let id = nccl::unique_id()?;
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, format!("{header}\n{hex}\n"))
            .map_err(io(format!("writing the rendezvous file {}", tmp.display())))?;
        std::fs::rename(&tmp, path).map_err(io(format!(
            "renaming the rendezvous file to {}",
            path.display()
        )))?;
        return Ok(id);
    }
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            let mut lines = text.lines();
            if lines.next() == Some(header.as_str()) {
                if let Some(id) = lines.next().and_then(parse_id) {
                    return Ok(id);
                }
            }
        }
        if start.elapsed() > timeout {
            return Err(Error::Nccl {
                what: "the rendezvous",
                message: format!(
                    "rank {rank} waited {timeout:?} for rank 0 to write the NCCL id to {} \
                     (for `{header}`): did rank 0 start, and is MGPU_RENDEZVOUS a file on a \
                     filesystem every host shares?",
                    path.display()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn parse_id(hex: &str) -> Option<[u8; 128]> {
    let hex = hex.trim();
    if hex.len() != 256 {
        return None;
    }
    let mut id = [0u8; 128];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(id)
}
