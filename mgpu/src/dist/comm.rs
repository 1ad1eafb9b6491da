//! The communicator of a rank: the collective calls the distributed algorithms are written
//! against, over NCCL or between the ranks of one process.

use crate::buffer::{check_place, Storage};
use crate::cuda::memory::DeviceMem;
use crate::cuda::nccl;
use crate::error::{Error, Result};
use crate::{Buffer, Context, Element, Slice, SliceMut};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a collective call waits for the other ranks when no timeout is given:
/// `MGPU_DIST_TIMEOUT` seconds, else 120 s.
pub(crate) fn default_timeout() -> Duration {
    std::env::var("MGPU_DIST_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(Duration::from_secs(120), Duration::from_secs_f64)
}

/// One rank's end of a group's communication: rank `rank()` of `world_size()`. Its calls are
/// collective: every rank of the group makes the same calls in the same order, and a call
/// returns once every rank has made it. A rank that fails (bad input, a failing backend) still
/// makes the call with its error ([`all_gather_checked`](Communicator::all_gather_checked)): every
/// rank then returns an error, none waits forever. A rank that never comes (it returned early,
/// panicked or hangs) makes the others fail after the group's timeout.
///
/// Two kinds: between the ranks of one process (CPU contexts, or several streams of one GPU:
/// data moves by device copies, or through the host between GPUs), and NCCL (a rank per GPU, in
/// one process or one process per GPU).
///
/// ```
/// use mgpu::dist::Group;
/// let group = Group::cpu(3);
/// let gathered = group.run(|rank| {
///     rank.communicator().all_gather_checked("example", Ok(vec![rank.rank() as u32 * 10]))
/// })?;
/// assert_eq!(gathered[2], vec![vec![0], vec![10], vec![20]]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct Communicator {
    rank: usize,
    world: usize,
    pub(crate) timeout: Duration,
    link: Link,
}

enum Link {
    InProcess(Arc<Hub>),
    Nccl(nccl::Comm),
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_nccl() { "nccl" } else { "in-process" };
        write!(
            f,
            "Communicator({kind}, rank {} of {})",
            self.rank, self.world
        )
    }
}

impl Communicator {
    pub(crate) fn in_process(rank: usize, hub: Arc<Hub>, timeout: Duration) -> Communicator {
        Communicator {
            rank,
            world: hub.world,
            timeout,
            link: Link::InProcess(hub),
        }
    }

    pub(crate) fn nccl(rank: usize, world: usize, comm: nccl::Comm, timeout: Duration) -> Self {
        Communicator {
            rank,
            world,
            timeout,
            link: Link::Nccl(comm),
        }
    }

    /// This rank, from 0.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks of the group.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// How long a collective call waits for the other ranks.
    pub fn timeout(&self) -> std::time::Duration {
        self.timeout
    }

    /// Whether it goes through NCCL (else between the ranks of this process).
    pub fn is_nccl(&self) -> bool {
        matches!(self.link, Link::Nccl(_))
    }

    pub(crate) fn nccl_comm(&self) -> Option<&nccl::Comm> {
        match &self.link {
            Link::Nccl(c) => Some(c),
            Link::InProcess(_) => None,
        }
    }

    /// Returns when every rank has called it.
    pub fn barrier(&self) -> Result<()> {
        self.all_gather_checked::<u8>("barrier", Ok(Vec::new()))
            .map(|_| ())
    }

    /// Every rank's `mine` (any number of elements each), in rank order, on every rank; or, when
    /// a rank brings an error, an error on every rank: its own on that rank,
    /// [`Error::RankFailed`] naming it on the others. The way a rank says "my input is bad"
    /// without leaving the others waiting.
    ///
    /// ```
    /// use mgpu::{dist::Group, Error};
    /// let group = Group::cpu(2);
    /// group.run(|rank| {
    ///     let mine = if rank.rank() == 1 {
    ///         Err(Error::InvalidArgument("rank 1's input is bad".into()))
    ///     } else {
    ///         Ok(vec![1u8])
    ///     };
    ///     match rank.communicator().all_gather_checked("example", mine) {
    ///         Err(Error::RankFailed { rank: 1, .. }) if rank.rank() == 0 => Ok(()),
    ///         Err(Error::InvalidArgument(_)) if rank.rank() == 1 => Ok(()),
    ///         other => panic!("{other:?}"),
    ///     }
    /// })?;
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn all_gather_checked<T: Element>(
        &self,
        call: &'static str,
        mine: Result<Vec<T>>,
    ) -> Result<Vec<Vec<T>>> {
        match &self.link {
            Link::InProcess(hub) => {
                let post: Post =
                    Arc::new(mine.as_ref().map(|v| v.clone()).map_err(|e| e.to_string()));
                let posts = hub.round(self.rank, call, post, self.timeout)?;
                let mut all = Vec::with_capacity(self.world);
                let mut failed = None;
                for (r, p) in posts.iter().enumerate() {
                    let p = p
                        .downcast_ref::<std::result::Result<Vec<T>, String>>()
                        .expect("every rank makes the same call");
                    match p {
                        Ok(v) => all.push(v.clone()),
                        Err(m) => {
                            failed.get_or_insert((r, m.clone()));
                        }
                    }
                }
                self.settle(call, mine, failed)?;
                Ok(all)
            }
            Link::Nccl(comm) => self.nccl_gather(comm, call, mine),
        }
    }

    /// The outcome of a checked gather: the local error first, then the first failed rank's.
    fn settle<T>(
        &self,
        call: &'static str,
        mine: Result<T>,
        failed: Option<(usize, String)>,
    ) -> Result<T> {
        let mine = mine?;
        match failed {
            Some((rank, message)) => Err(Error::RankFailed {
                call,
                rank,
                world: self.world,
                message,
            }),
            None => Ok(mine),
        }
    }

    /// Ranks sharing one GPU, one after another in rank order (ranks of one process): each
    /// rank's `work` gets what the rank before it returned, and is queued after the work that
    /// rank queued (its stream waits; the host waits only until that work is queued). Takes
    /// `world - 1` rounds; each rank returns what its own `work` returned. The ranks after one
    /// that failed do not run `work` and return [`Error::RankFailed`].
    pub(crate) fn in_turn<P: Any + Send + Sync>(
        &self,
        ctx: &Context,
        call: &'static str,
        work: impl FnOnce(Option<&P>) -> Result<P>,
    ) -> Result<Arc<P>> {
        type Turn<P> = std::result::Result<(Context, Arc<P>), String>;
        let Link::InProcess(hub) = &self.link else {
            return Err(Error::InvalidArgument(format!(
                "{call}: taking turns is for the ranks of one process"
            )));
        };
        let mut work = Some(work);
        let mut before: Option<Post> = None;
        let mut mine = None;
        for turn in 0..self.world {
            if turn == self.rank {
                let work = work.take().expect("one turn per rank");
                mine = Some(match before.as_ref().map(|p| p.downcast_ref::<Turn<P>>()) {
                    None => work(None).map(Arc::new),
                    Some(Some(Ok((their_ctx, theirs)))) => ctx
                        .join(their_ctx)
                        .and_then(|_| work(Some(theirs)))
                        .map(Arc::new),
                    Some(Some(Err(message))) => Err(Error::RankFailed {
                        call,
                        rank: turn - 1,
                        world: self.world,
                        message: message.clone(),
                    }),
                    Some(None) => unreachable!("every rank makes the same call"),
                });
            }
            if turn + 1 == self.world {
                break;
            }
            let post: Post = match (&mine, turn == self.rank) {
                (Some(Ok(p)), true) => Arc::new(Turn::<P>::Ok((ctx.clone(), p.clone()))),
                (Some(Err(e)), true) => Arc::new(Turn::<P>::Err(e.to_string())),
                _ => Arc::new(()),
            };
            let posts = hub.round(self.rank, call, post, self.timeout)?;
            if turn + 1 == self.rank {
                before = Some(posts[turn].clone());
            }
        }
        mine.expect("every rank has a turn")
    }

    /// NCCL: a fixed header per rank (status, length, message), then the values padded to the
    /// longest rank's, both through device memory of the rank's GPU.
    fn nccl_gather<T: Element>(
        &self,
        comm: &nccl::Comm,
        call: &'static str,
        mine: Result<Vec<T>>,
    ) -> Result<Vec<Vec<T>>> {
        const HEADER: usize = 256;
        let mut header = [0u8; HEADER];
        match &mine {
            Ok(v) => header[8..16].copy_from_slice(&(v.len() as u64).to_le_bytes()),
            Err(e) => {
                header[0] = 1;
                let m = e.to_string();
                let n = m.len().min(HEADER - 16);
                header[16..16 + n].copy_from_slice(&m.as_bytes()[..n]);
            }
        }
        let headers = self.nccl_gather_bytes(comm, call, &header)?;
        let mut failed = None;
        let mut lens = Vec::with_capacity(self.world);
        for (r, h) in headers.chunks(HEADER).enumerate() {
            if h[0] != 0 {
                let text = &h[16..];
                let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                failed.get_or_insert((r, String::from_utf8_lossy(&text[..end]).into_owned()));
            }
            lens.push(u64::from_le_bytes(h[8..16].try_into().expect("8 bytes")) as usize);
        }
        let mine = self.settle(call, mine, failed)?;
        let longest = lens.iter().copied().max().unwrap_or(0);
        if longest == 0 {
            return Ok(vec![Vec::new(); self.world]);
        }
        let size = std::mem::size_of::<T>();
        let mut padded = vec![0u8; longest * size];
        padded[..mine.len() * size].copy_from_slice(bytemuck::cast_slice(&mine));
        let bytes = self.nccl_gather_bytes(comm, call, &padded)?;
        Ok(bytes
            .chunks(longest * size)
            .zip(&lens)
            .map(|(chunk, &n)| {
                chunk[..n * size]
                    .chunks_exact(size)
                    .map(bytemuck::pod_read_unaligned)
                    .collect()
            })
            .collect())
    }

    /// All-gathers the same number of bytes from every rank, through the GPU.
    fn nccl_gather_bytes(
        &self,
        comm: &nccl::Comm,
        call: &'static str,
        mine: &[u8],
    ) -> Result<Vec<u8>> {
        let gpu = &comm.gpu;
        let send = DeviceMem::alloc(gpu, mine.len())?;
        send.upload(0, mine)?;
        let recv = DeviceMem::alloc(gpu, mine.len() * self.world)?;
        comm.all_gather(send.ptr, recv.ptr, mine.len())?;
        comm.wait(call, self.rank, self.timeout)?;
        let mut out = vec![0u8; mine.len() * self.world];
        recv.download(0, &mut out)?;
        Ok(out)
    }

    /// All-to-all with counts: `counts[p]` elements of `send`, in order, go to rank `p`; returns
    /// what every rank sent this one, concatenated in rank order, with the count from each rank.
    /// The counts travel first (a checked gather: bad counts on one rank fail every rank), then
    /// the data (NCCL: one grouped round of sends and receives; in one process: copies from the
    /// senders' buffers, device to device on one GPU).
    ///
    /// ```
    /// use mgpu::dist::Group;
    /// let group = Group::cpu(2);
    /// let got = group.run(|rank| {
    ///     let ctx = rank.context();
    ///     let r = rank.rank() as u32;
    ///     let send = ctx.upload(&[r * 10, r * 10 + 1, r * 10 + 2])?;
    ///     let counts = if r == 0 { [1, 2] } else { [2, 1] }; // to rank 0, to rank 1
    ///     let (recv, from) = rank.communicator().all_to_all_v(ctx, send, &counts)?;
    ///     Ok((recv.to_vec()?, from))
    /// })?;
    /// assert_eq!(got[0], (vec![0, 10, 11], vec![1, 2]));
    /// assert_eq!(got[1], (vec![1, 2, 12], vec![2, 1]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn all_to_all_v<T: Element>(
        &self,
        ctx: &Context,
        send: Buffer<T>,
        counts: &[usize],
    ) -> Result<(Buffer<T>, Vec<usize>)> {
        let call = "all_to_all_v";
        let valid = if counts.len() != self.world {
            Err(Error::InvalidArgument(format!(
                "{call}: {} counts for {} ranks",
                counts.len(),
                self.world
            )))
        } else if counts.iter().sum::<usize>() != send.len() {
            Err(Error::InvalidArgument(format!(
                "{call}: the counts add up to {}, the buffer to send holds {}",
                counts.iter().sum::<usize>(),
                send.len()
            )))
        } else {
            check_place(ctx, &send.view().at, "all_to_all_v: the buffer to send")
        };
        let matrix = self.all_gather_checked(
            call,
            valid.map(|_| counts.iter().map(|&c| c as u64).collect()),
        )?;
        let from: Vec<usize> = matrix.iter().map(|row| row[self.rank] as usize).collect();
        // Where rank p's part for this rank starts in p's buffer.
        let starts: Vec<usize> = matrix
            .iter()
            .map(|row| row[..self.rank].iter().sum::<u64>() as usize)
            .collect();
        let mut recv = uninit(ctx, from.iter().sum())?;
        match &self.link {
            Link::InProcess(hub) => {
                let send = Arc::new(send);
                let posts = hub.round(self.rank, call, send.clone(), self.timeout)?;
                let mut copied = Ok(());
                let mut at = 0;
                for (p, post) in posts.iter().enumerate() {
                    let src = post
                        .downcast_ref::<Buffer<T>>()
                        .expect("every rank makes the same call");
                    let n = from[p];
                    copied = copied.and_then(|_| {
                        copy_between(
                            ctx,
                            &src.slice(starts[p]..starts[p] + n),
                            &mut recv.slice_mut(at..at + n),
                        )
                    });
                    at += n;
                }
                drop(posts);
                // A copy that failed on one rank fails them all.
                self.all_gather_checked::<u8>(call, copied.map(|_| Vec::new()))?;
            }
            Link::Nccl(comm) => {
                let size = std::mem::size_of::<T>();
                let (send_home, send_ptr) = send.view().at.device().expect("validated: on the GPU");
                let (recv_home, recv_ptr) = recv.view().at.device().expect("on the GPU");
                let mut sends = Vec::new();
                let mut at = 0;
                for (p, &n) in counts.iter().enumerate() {
                    sends.push((send_ptr + (at * size) as u64, n * size, p));
                    at += n;
                }
                let mut receives = Vec::new();
                let mut at = 0;
                for (p, &n) in from.iter().enumerate() {
                    receives.push((recv_ptr + (at * size) as u64, n * size, p));
                    at += n;
                }
                comm.gpu
                    .ordered(&[send_home, recv_home], || comm.exchange(&sends, &receives))?;
                comm.wait(call, self.rank, self.timeout)?;
            }
        }
        Ok((recv, from))
    }
}

/// A buffer of `len` elements whose contents are about to be overwritten (not zeroed on the
/// GPU).
pub(crate) fn uninit<T: Element>(ctx: &Context, len: usize) -> Result<Buffer<T>> {
    match ctx.gpu() {
        None => ctx.zeros(len),
        Some(gpu) => {
            let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
                Error::InvalidArgument(format!("{len} elements overflow a usize"))
            })?;
            Ok(Buffer {
                storage: Storage::Device {
                    mem: DeviceMem::alloc(gpu, bytes)?,
                    len,
                    _t: PhantomData,
                },
            })
        }
    }
}

/// Copies `src` into `dst` (same length) on `ctx`: a device copy where both are on `ctx`'s GPU
/// (ordered with their streams), else through the host (between GPUs).
pub(crate) fn copy_between<T: Element>(
    ctx: &Context,
    src: &impl Slice<T>,
    dst: &mut impl SliceMut<T>,
) -> Result<()> {
    if src.view().is_empty() {
        return Ok(());
    }
    if check_place(ctx, &src.view().at, "").is_ok() {
        ctx.copy(src, dst)
    } else {
        dst.view_mut().copy_from_host(&src.view().to_vec()?)
    }
}

/// What a rank brings to a round of the in-process hub.
type Post = Arc<dyn Any + Send + Sync>;

/// The meeting point of the ranks of one process: rounds of posts, each round a two-phase
/// barrier (all arrive and post, then all read) so that a post is not replaced before every
/// rank has read it.
pub(crate) struct Hub {
    world: usize,
    state: Mutex<HubState>,
    changed: Condvar,
    /// Counts the changes of `state` (bumped under its lock with each notify), so that a waiting
    /// rank can spin on it before it sleeps.
    generation: AtomicU64,
    /// How long a waiting rank spins before it sleeps ([`SPIN`], or zero).
    spin: Duration,
}

/// How long a waiting rank spins before it sleeps on the condition variable: a rank that
/// sleeps wakes tens of microseconds after the call it waits for completes, which is the cost
/// of a whole collective step on ranks that share a GPU. Long enough to cover a rank that waits
/// for another's kernel on the same GPU (half a millisecond at 2^27 items).
const SPIN: Duration = Duration::from_millis(2);

#[derive(Default)]
struct HubState {
    posts: Vec<Option<Post>>,
    arrived: usize,
    /// Every rank arrived; ranks are reading the posts.
    reading: bool,
    left: usize,
    /// Set once a rank failed outside a collective call or a round timed out: (the rank, why).
    aborted: Option<(usize, String)>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hub({} ranks)", self.world)
    }
}

impl Hub {
    /// The hub of `world` ranks; `spin`: whether a waiting rank spins a little before it sleeps.
    pub(crate) fn new(world: usize, spin: bool) -> Arc<Hub> {
        Arc::new(Hub {
            world,
            state: Mutex::new(HubState {
                posts: vec![None; world],
                ..Default::default()
            }),
            changed: Condvar::new(),
            generation: AtomicU64::new(0),
            spin: if spin { SPIN } else { Duration::ZERO },
        })
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Clears a past failure before the ranks start again (no rank is inside a round).
    pub(crate) fn reset(&self) {
        let mut s = self.lock();
        *s = HubState {
            posts: vec![None; self.world],
            ..Default::default()
        };
    }

    /// Makes every waiting and later round fail: rank `rank` will not come, for `why`.
    pub(crate) fn abort(&self, rank: usize, why: String) {
        let mut s = self.lock();
        s.aborted.get_or_insert((rank, why));
        self.notify();
    }

    fn failure(&self, call: &'static str, s: &HubState) -> Option<Error> {
        s.aborted.as_ref().map(|(rank, message)| Error::RankFailed {
            call,
            rank: *rank,
            world: self.world,
            message: message.clone(),
        })
    }

    /// Posts `post` as rank `rank`'s and returns every rank's, in rank order.
    fn round(
        &self,
        rank: usize,
        call: &'static str,
        post: Post,
        timeout: Duration,
    ) -> Result<Vec<Post>> {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        // The previous round's readers must be gone before its posts are replaced.
        while s.reading && s.aborted.is_none() {
            s = self.wait(s, deadline, timeout, rank, call)?;
        }
        if let Some(e) = self.failure(call, &s) {
            return Err(e);
        }
        s.posts[rank] = Some(post);
        s.arrived += 1;
        if s.arrived == self.world {
            s.reading = true;
            self.notify();
        }
        while !s.reading && s.aborted.is_none() {
            s = self.wait(s, deadline, timeout, rank, call)?;
        }
        if let Some(e) = self.failure(call, &s) {
            return Err(e);
        }
        let posts: Vec<Post> = s
            .posts
            .iter()
            .map(|p| p.clone().expect("every rank posted"))
            .collect();
        s.left += 1;
        if s.left == self.world {
            s.posts.iter_mut().for_each(|p| *p = None);
            s.arrived = 0;
            s.left = 0;
            s.reading = false;
            self.notify();
        }
        Ok(posts)
    }

    /// Wakes the waiting ranks (the state's lock is held).
    fn notify(&self) {
        self.generation.fetch_add(1, Ordering::Release);
        self.changed.notify_all();
    }

    fn wait<'a>(
        &'a self,
        s: MutexGuard<'a, HubState>,
        deadline: Instant,
        timeout: Duration,
        rank: usize,
        call: &'static str,
    ) -> Result<MutexGuard<'a, HubState>> {
        let now = Instant::now();
        if now >= deadline {
            let mut s = s;
            let missing: Vec<usize> = (0..self.world).filter(|&r| s.posts[r].is_none()).collect();
            let why = format!("{call} timed out waiting for ranks {missing:?}");
            s.aborted.get_or_insert((rank, why));
            self.notify();
            return Err(Error::Timeout {
                call,
                rank,
                waited: timeout,
                missing: format!("ranks {missing:?}"),
            });
        }
        // Spin a little first: the state is changed (and the generation bumped) under the lock,
        // so a generation seen unchanged under it again means no notify was missed.
        let s = if self.spin.is_zero() {
            s
        } else {
            let seen = self.generation.load(Ordering::Acquire);
            drop(s);
            let spin_end = now + self.spin.min(deadline - now);
            while self.generation.load(Ordering::Acquire) == seen && Instant::now() < spin_end {
                std::hint::spin_loop();
            }
            let s = self.lock();
            if self.generation.load(Ordering::Acquire) != seen {
                return Ok(s);
            }
            s
        };
        let (s, _) = self
            .changed
            .wait_timeout(s, deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|e| e.into_inner());
        Ok(s)
    }
}
