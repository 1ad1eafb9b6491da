//! NCCL, for the ranks of a [`Group`](crate::dist::Group) on several GPUs: the library found by
//! [`discover::nccl`](super::discover::nccl), its few functions the distributed layer calls, and
//! a communicator whose host waits are bounded by a timeout.
//!
//! The functions are looked up in the file the search opened rather than through cudarc's NCCL
//! loader: cudarc asks the loader for `libnccl.so` and CUDA-versioned names, which the wheel's
//! `libnccl.so.2` does not answer to, and it panics where it finds none. The types (id, data
//! types, operators, results) are cudarc's bindings'.

use super::{driver, Gpu};
use crate::error::{Error, Result};
use cudarc::nccl::sys::{ncclComm_t, ncclDataType_t, ncclRedOp_t, ncclResult_t, ncclUniqueId};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// How long [`Comm::wait`] polls before it sleeps: longer than the collective steps of the
/// distributed algorithms at the sizes a GPU holds (a local sort of 2^30 keys, an exchange of
/// gigabytes), so that their end is seen within microseconds.
const SPIN: Duration = Duration::from_millis(200);

type Stream = *mut c_void;

/// ncclSend and ncclRecv: the buffer (read or written), its size, type, the peer, the
/// communicator and the stream.
type Transfer<P> =
    unsafe extern "C" fn(P, usize, ncclDataType_t, c_int, ncclComm_t, Stream) -> ncclResult_t;

/// The NCCL functions the distributed layer uses.
struct Api {
    get_version: unsafe extern "C" fn(*mut c_int) -> ncclResult_t,
    get_unique_id: unsafe extern "C" fn(*mut ncclUniqueId) -> ncclResult_t,
    comm_init_rank:
        unsafe extern "C" fn(*mut ncclComm_t, c_int, ncclUniqueId, c_int) -> ncclResult_t,
    comm_init_all: unsafe extern "C" fn(*mut ncclComm_t, c_int, *const c_int) -> ncclResult_t,
    comm_abort: unsafe extern "C" fn(ncclComm_t) -> ncclResult_t,
    comm_get_async_error: unsafe extern "C" fn(ncclComm_t, *mut ncclResult_t) -> ncclResult_t,
    get_error_string: unsafe extern "C" fn(ncclResult_t) -> *const c_char,
    all_gather: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclComm_t,
        Stream,
    ) -> ncclResult_t,
    all_reduce: unsafe extern "C" fn(
        *const c_void,
        *mut c_void,
        usize,
        ncclDataType_t,
        ncclRedOp_t,
        ncclComm_t,
        Stream,
    ) -> ncclResult_t,
    send: Transfer<*const c_void>,
    recv: Transfer<*mut c_void>,
    group_start: unsafe extern "C" fn() -> ncclResult_t,
    group_end: unsafe extern "C" fn() -> ncclResult_t,
}

/// The loaded library, or why there is none.
fn api() -> Result<&'static Api> {
    static API: OnceLock<std::result::Result<Api, String>> = OnceLock::new();
    API.get_or_init(load)
        .as_ref()
        .map_err(|why| Error::NoNccl(why.clone()))
}

fn load() -> std::result::Result<Api, String> {
    let search = super::discover::nccl();
    let found = search.found.as_ref().ok_or_else(|| search.to_string())?;
    // SAFETY: the file was opened already by the search (its initializers have run); opening it
    // again only takes a reference, kept for the life of the process below.
    let lib = unsafe { libloading::Library::new(&found.path) }
        .map_err(|e| format!("{}: {e}", found.path.display()))?;
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    macro_rules! get {
        ($name:literal) => {
            // SAFETY: the symbol is NCCL's function of that name, whose C signature (nccl.h, as
            // cudarc's bindings declare it) is the field's type.
            *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{}: no {}: {e}", found.path.display(), $name))?
        };
    }
    // The fields and the symbols they hold, a table (rustfmt leaves a macro's braces alone).
    macro_rules! api {
        ($($field:ident = $name:literal),* $(,)?) => { Api { $($field: get!($name)),* } };
    }
    Ok(api! {
        get_version = "ncclGetVersion", get_unique_id = "ncclGetUniqueId",
        comm_init_rank = "ncclCommInitRank", comm_init_all = "ncclCommInitAll",
        comm_abort = "ncclCommAbort", comm_get_async_error = "ncclCommGetAsyncError",
        get_error_string = "ncclGetErrorString", all_gather = "ncclAllGather",
        all_reduce = "ncclAllReduce", send = "ncclSend", recv = "ncclRecv",
        group_start = "ncclGroupStart", group_end = "ncclGroupEnd",
    })
}

fn check(api: &Api, what: &'static str, r: ncclResult_t) -> Result<()> {
    if r == ncclResult_t::ncclSuccess {
        return Ok(());
    }
    // SAFETY: ncclGetErrorString returns a static NUL-terminated string for any result code.
    let message = unsafe { CStr::from_ptr((api.get_error_string)(r)) }
        .to_string_lossy()
        .into_owned();
    Err(Error::Nccl { what, message })
}

/// Whether NCCL can be loaded (a multi-GPU group needs it).
pub fn available() -> bool {
    api().is_ok()
}

/// NCCL's version as (major, minor, patch).
pub fn version() -> Result<(u32, u32, u32)> {
    let api = api()?;
    let mut v: c_int = 0;
    // SAFETY: a plain out-parameter.
    check(api, "ncclGetVersion", unsafe { (api.get_version)(&mut v) })?;
    let v = v as u32;
    Ok(if v >= 10000 {
        (v / 10000, v / 100 % 100, v % 100)
    } else {
        (v / 1000, v / 100 % 10, v % 100)
    })
}

/// A new NCCL unique id (rank 0 makes it; the others get it through the rendezvous).
pub(crate) fn unique_id() -> Result<[u8; 128]> {
    let api = api()?;
    let mut id = ncclUniqueId { internal: [0; 128] };
    // SAFETY: a plain out-parameter of the id's C layout.
    check(api, "ncclGetUniqueId", unsafe {
        (api.get_unique_id)(&mut id)
    })?;
    Ok(id.internal.map(|c| c as u8))
}

/// The NCCL data type moving `T`'s bytes, or computing on `T` (the built-in numbers NCCL has).
pub(crate) fn data_type<T: 'static>() -> Option<ncclDataType_t> {
    use ncclDataType_t::*;
    use std::any::TypeId;
    let t = TypeId::of::<T>();
    [
        (TypeId::of::<i8>(), ncclInt8),
        (TypeId::of::<u8>(), ncclUint8),
        (TypeId::of::<i32>(), ncclInt32),
        (TypeId::of::<u32>(), ncclUint32),
        (TypeId::of::<i64>(), ncclInt64),
        (TypeId::of::<u64>(), ncclUint64),
        (TypeId::of::<f32>(), ncclFloat32),
        (TypeId::of::<f64>(), ncclFloat64),
    ]
    .into_iter()
    .find(|(id, _)| *id == t)
    .map(|(_, d)| d)
}

/// A built-in reduction NCCL can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduction {
    Sum,
    Max,
    Min,
}

/// An NCCL communicator: one rank, on one GPU stream.
pub(crate) struct Comm {
    comm: ncclComm_t,
    pub(crate) gpu: Arc<Gpu>,
    /// Set once the communicator was aborted (after a timeout or an asynchronous error): every
    /// later call fails with this message.
    aborted: std::sync::Mutex<Option<String>>,
}

// SAFETY: an NCCL communicator may be used from any thread; the distributed layer calls it from
// one thread at a time (its rank's), and abort is NCCL's documented way to stop it from another.
unsafe impl Send for Comm {}
// SAFETY: as above; `&Comm` only enqueues work through NCCL, which is thread-safe per
// communicator as long as calls are not interleaved, which the rank's single caller ensures.
unsafe impl Sync for Comm {}

impl Comm {
    /// One communicator per GPU of this process (`ncclCommInitAll`): rank `i` on `gpus[i]`, each
    /// GPU once.
    pub(crate) fn init_all(gpus: &[Arc<Gpu>]) -> Result<Vec<Comm>> {
        let api = api()?;
        let ordinals: Vec<c_int> = gpus.iter().map(|g| g.ctx.ordinal() as c_int).collect();
        let mut comms: Vec<ncclComm_t> = vec![std::ptr::null_mut(); gpus.len()];
        // SAFETY: `comms` has room for one communicator per device of `ordinals`.
        check(api, "ncclCommInitAll", unsafe {
            (api.comm_init_all)(comms.as_mut_ptr(), gpus.len() as c_int, ordinals.as_ptr())
        })?;
        Ok(comms
            .into_iter()
            .zip(gpus)
            .map(|(comm, gpu)| Comm {
                comm,
                gpu: gpu.clone(),
                aborted: Default::default(),
            })
            .collect())
    }

    /// Rank `rank` of `world` (`ncclCommInitRank`), every rank calling with the same `id`.
    pub(crate) fn init_rank(
        gpu: &Arc<Gpu>,
        rank: usize,
        world: usize,
        id: [u8; 128],
    ) -> Result<Comm> {
        let api = api()?;
        gpu.ctx
            .bind_to_thread()
            .map_err(driver("binding the GPU to the thread"))?;
        let id = ncclUniqueId {
            internal: id.map(|b| b as c_char),
        };
        let mut comm: ncclComm_t = std::ptr::null_mut();
        // SAFETY: a plain out-parameter; the GPU's context is current, as NCCL requires.
        check(api, "ncclCommInitRank", unsafe {
            (api.comm_init_rank)(&mut comm, world as c_int, id, rank as c_int)
        })?;
        Ok(Comm {
            comm,
            gpu: gpu.clone(),
            aborted: Default::default(),
        })
    }

    fn stream(&self) -> Stream {
        self.gpu.stream.cu_stream() as Stream
    }

    fn usable(&self) -> Result<&'static Api> {
        if let Some(why) = &*self.aborted.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(Error::Nccl {
                what: "the communicator",
                message: format!("it was aborted earlier ({why}); make a new group"),
            });
        }
        self.gpu
            .ctx
            .bind_to_thread()
            .map_err(driver("binding the GPU to the thread"))?;
        api()
    }

    /// Queues an all-gather of `bytes` bytes per rank from `send` into `recv` (`world * bytes`).
    pub(crate) fn all_gather(&self, send: u64, recv: u64, bytes: usize) -> Result<()> {
        let api = self.usable()?;
        // SAFETY: `send` holds `bytes` bytes and `recv` `world * bytes`, device memory of this
        // communicator's GPU, ordered on its stream by the caller.
        check(api, "ncclAllGather", unsafe {
            (api.all_gather)(
                send as *const c_void,
                recv as *mut c_void,
                bytes,
                ncclDataType_t::ncclUint8,
                self.comm,
                self.stream(),
            )
        })
    }

    /// Queues an all-reduce of `count` elements of `data_type` in place at `data`.
    pub(crate) fn all_reduce(
        &self,
        data: u64,
        count: usize,
        data_type: ncclDataType_t,
        reduction: Reduction,
    ) -> Result<()> {
        let api = self.usable()?;
        let op = match reduction {
            Reduction::Sum => ncclRedOp_t::ncclSum,
            Reduction::Max => ncclRedOp_t::ncclMax,
            Reduction::Min => ncclRedOp_t::ncclMin,
        };
        // SAFETY: `data` holds `count` elements of `data_type` on this GPU, ordered on its
        // stream by the caller; in place is allowed by NCCL.
        check(api, "ncclAllReduce", unsafe {
            (api.all_reduce)(
                data as *const c_void,
                data as *mut c_void,
                count,
                data_type,
                op,
                self.comm,
                self.stream(),
            )
        })
    }

    /// Queues one grouped round of point-to-point transfers: `sends` (address, bytes, peer) and
    /// `receives` (address, bytes, peer). Empty transfers are left out.
    pub(crate) fn exchange(
        &self,
        sends: &[(u64, usize, usize)],
        receives: &[(u64, usize, usize)],
    ) -> Result<()> {
        let api = self.usable()?;
        // SAFETY: no arguments.
        check(api, "ncclGroupStart", unsafe { (api.group_start)() })?;
        let mut result = Ok(());
        let sends = sends.iter().map(|s| (s, true));
        let transfers = sends.chain(receives.iter().map(|r| (r, false)));
        for (&(ptr, bytes, peer), send) in transfers.filter(|(t, _)| t.1 > 0) {
            let (peer, stream) = (peer as c_int, self.stream());
            let ty = ncclDataType_t::ncclUint8;
            result = result.and_then(|_| {
                // SAFETY: a send's `ptr` holds `bytes` bytes on this GPU, a receive's has room for
                // them, ordered on its stream by the caller.
                let r = unsafe {
                    if send {
                        (api.send)(ptr as *const c_void, bytes, ty, peer, self.comm, stream)
                    } else {
                        (api.recv)(ptr as *mut c_void, bytes, ty, peer, self.comm, stream)
                    }
                };
                check(api, if send { "ncclSend" } else { "ncclRecv" }, r)
            });
        }
        // SAFETY: closes the group opened above, whatever happened inside it.
        let end = check(api, "ncclGroupEnd", unsafe { (api.group_end)() });
        result.and(end)
    }

    /// Waits for the work queued so far on the stream, at most `timeout`; past it, or on an
    /// asynchronous NCCL error, aborts the communicator (so that no rank hangs) and fails.
    /// Polls without sleeping for the first [`SPIN`], then sleeps between polls: sleeps that
    /// doubled from 20 us saw the end of a 12.6 ms local sort at about 15 ms (2 H100s).
    pub(crate) fn wait(&self, call: &'static str, rank: usize, timeout: Duration) -> Result<()> {
        let api = self.usable()?;
        let event = self
            .gpu
            .stream
            .record_event(None)
            .map_err(driver("recording an event"))?;
        let start = Instant::now();
        let mut pause = Duration::from_micros(50);
        loop {
            if event
                .try_is_complete()
                .map_err(driver("querying an event"))?
            {
                return Ok(());
            }
            let mut state = ncclResult_t::ncclSuccess;
            // SAFETY: a plain out-parameter; the communicator is live.
            check(api, "ncclCommGetAsyncError", unsafe {
                (api.comm_get_async_error)(self.comm, &mut state)
            })?;
            if state != ncclResult_t::ncclSuccess && state != ncclResult_t::ncclInProgress {
                let err = check(api, "an NCCL operation", state).unwrap_err();
                self.abort(&err.to_string());
                return Err(err);
            }
            if start.elapsed() > timeout {
                self.abort(&format!("{call} timed out"));
                return Err(Error::Timeout {
                    call,
                    rank,
                    waited: start.elapsed(),
                    missing: "the other ranks' part of the NCCL operation".into(),
                });
            }
            if start.elapsed() < SPIN {
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(1));
            }
        }
    }

    fn abort(&self, why: &str) {
        let mut aborted = self.aborted.lock().unwrap_or_else(|e| e.into_inner());
        if aborted.is_none() {
            if let Ok(api) = api() {
                // SAFETY: the communicator is live; abort stops its pending operations.
                unsafe { (api.comm_abort)(self.comm) };
            }
            *aborted = Some(why.to_string());
        }
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        let aborted = self.aborted.get_mut().unwrap_or_else(|e| e.into_inner());
        if aborted.is_none() {
            if let Ok(api) = api() {
                // SAFETY: the communicator is live and used by no one else any more. Abort
                // rather than destroy: destroy waits for the other ranks, which may be gone.
                unsafe { (api.comm_abort)(self.comm) };
            }
        }
    }
}
