//! The one error type of the crate.
//!
//! Bad input is reported by variants a program can match: which call, which argument, which
//! index, what is wrong ([`Error::LengthMismatch`], [`Error::InvalidOffset`],
//! [`Error::SourceOutOfRange`], [`Error::IndexOutOfRange`], [`Error::RangeOutOfBounds`],
//! [`Error::BackendMismatch`], [`Error::TooLarge`], [`Error::PlanMismatch`],
//! [`Error::InvalidBitRange`], [`Error::NotRadixSortable`]). Their messages say
//! what to do.
//!
//! ```
//! use mgpu::{Context, Error, LengthRule};
//! let ctx = Context::cpu();
//! let (input, mut out) = (ctx.upload(&[1, 2, 3])?, ctx.zeros::<i32>(2)?);
//! match ctx.copy(&input, &mut out) {
//!     Err(Error::LengthMismatch { argument, actual: 2, expected: 3, rule: LengthRule::AtLeast, .. }) => {
//!         assert_eq!(argument, "the destination")
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), mgpu::Error>(())
//! ```

use std::fmt;

/// Everything that can go wrong in `mgpu`. Bad input is reported before anything is written, and
/// the [`Context`](crate::Context) stays usable after any error. More variants may come: match
/// with a wildcard arm.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No usable CUDA GPU: no driver library, no device, or the device could not be opened.
    #[error(
        "no CUDA GPU available: {0} (use the CPU backend: Context::cpu() or MGPU_BACKEND=cpu)"
    )]
    NoGpu(String),
    /// NVRTC is missing or failed outside of compiling the source.
    #[error("NVRTC is not available: {0} (`pip install nvidia-cuda-nvrtc` in the active virtualenv or conda environment, or install the CUDA toolkit under CUDA_HOME, CUDA_PATH or /usr/local/cuda; or set MGPU_NVRTC to the libnvrtc file)")]
    NoNvrtc(String),
    /// A kernel did not compile; `log` is NVRTC's program log.
    #[error("kernel `{kernel}` failed to compile for {arch}; check the CUDA expressions of the operator, map or comparator and the element types' CUDA declarations.\nNVRTC log:\n{log}")]
    Compile {
        kernel: String,
        arch: String,
        log: String,
    },
    /// An argument's length does not agree with another argument's, or with a plan's.
    #[error("{}", length_message(call, argument, *actual, *expected, of, *rule))]
    LengthMismatch {
        /// The entry point (`"segreduce_csr"`), empty where the argument alone is at fault.
        call: &'static str,
        /// The argument whose length is wrong (`"the output"`, `"values"`).
        argument: &'static str,
        /// Its length.
        actual: u64,
        /// The length it is checked against.
        expected: u64,
        /// What `expected` counts (`"segments"`, `"keys"`, `"the input"`).
        of: &'static str,
        rule: LengthRule,
    },
    /// A CSR offset breaks the rules (`offsets[0] == 0`, non-decreasing, at most the number of
    /// positions; increasing and below it unless empty segments are allowed).
    #[error("{}", offset_message(call, *index, *value, *previous, *count, *problem))]
    InvalidOffset {
        call: &'static str,
        /// The first bad index of the offsets.
        index: u64,
        /// `offsets[index]`.
        value: u64,
        /// `offsets[index - 1]` (none for the first).
        previous: Option<u64>,
        /// The number of positions the segments cover.
        count: u64,
        problem: OffsetProblem,
    },
    /// Indirect CSR: segment `index` reads past the end of its data (`source + length > bound`).
    #[error(
        "{call}: sources[{index}] = {start} with segment {index}'s length {length} reads past \
         the end of the {data} ({bound} elements)"
    )]
    SourceOutOfRange {
        call: &'static str,
        index: u64,
        /// `sources[index]`: where the segment's items start.
        start: u64,
        length: u64,
        /// What the sources index (`"values"`, `"nonzeros"`).
        data: &'static str,
        bound: u64,
    },
    /// An index argument holds a value outside what it indexes (SpMV's column indices).
    #[error("{call}: {argument}[{index}] = {value} is not less than {what}'s length {bound}")]
    IndexOutOfRange {
        call: &'static str,
        /// The index array (`"cols"`).
        argument: &'static str,
        index: u64,
        value: u64,
        /// What it indexes (`"the vector"`).
        what: &'static str,
        bound: u64,
    },
    /// A range of a buffer or view (`try_slice`) is out of bounds.
    #[error("slice {start:?}..{end:?} is out of range for {len} elements")]
    RangeOutOfBounds {
        start: std::ops::Bound<usize>,
        end: std::ops::Bound<usize>,
        /// The length of what was sliced.
        len: u64,
    },
    /// An argument lives on another backend (or another GPU context) than the context.
    #[error("{}", backend_message(argument, *found, *expected))]
    BackendMismatch {
        /// The argument (`"the values"`, `"the event"`), with its call where one is named.
        argument: String,
        /// Where the argument lives.
        found: Residence,
        /// Where the context runs.
        expected: Residence,
    },
    /// More elements than a type chosen by the caller can count or index.
    #[error("{call}: {what} ({len}) do not fit {limited_by}; at most {limit}: {hint}")]
    TooLarge {
        call: &'static str,
        /// What is counted (`"keys"`, `"segments"`).
        what: &'static str,
        len: u64,
        /// The type or index width that limits it (`"u32 offsets"`).
        limited_by: &'static str,
        limit: u64,
        /// What to do (`"use u64 offsets"`).
        hint: &'static str,
    },
    /// A plan is applied by a call it was not made for.
    #[error("{call}: the plan was made for {made_for}; make it with {make_with}")]
    PlanMismatch {
        call: &'static str,
        made_for: &'static str,
        make_with: &'static str,
    },
    /// A radix key's bit range is not within its width (1 to 64 bits).
    #[error(
        "{call}: the radix key {key:?} is {width} bits wide and orders by bits {begin}..{end}; \
         the width must be 1 to 64 and the range begin <= end <= width"
    )]
    InvalidBitRange {
        call: &'static str,
        /// The radix key's name.
        key: String,
        width: u32,
        begin: u32,
        end: u32,
    },
    /// `SortAlgorithm::Radix` asked of keys or a comparator it cannot sort by.
    #[error(
        "{call}: SortAlgorithm::Radix sorts arithmetic keys (i8..u64, f32, f64) under \
         Comparator::less or Comparator::greater, not {key_type} under {comparator:?}; use \
         radix_sort with a RadixKey for other keys, or SortAlgorithm::Merge"
    )]
    NotRadixSortable {
        call: &'static str,
        /// The key type's CUDA name.
        key_type: &'static str,
        /// The comparator's name.
        comparator: String,
    },
    /// An argument or setting that fits none of the variants above (an invalid tuning or tuning
    /// file, an environment variable's value); the message says what is wrong.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A CUDA driver call failed.
    #[error("CUDA driver error in {what}: {source}")]
    Driver {
        what: &'static str,
        #[source]
        source: DriverError,
    },
    /// Another rank of a group failed in a collective call (bad input there, or a failure of
    /// its backend): every rank's call returns an error, this one on the ranks that did not fail
    /// (the failing rank returns its own), and nothing was written.
    #[error("{call}: rank {rank} of {world} failed: {message}")]
    RankFailed {
        call: &'static str,
        /// The first rank that failed.
        rank: usize,
        /// The number of ranks of the group.
        world: usize,
        /// Its error.
        message: String,
    },
    /// A collective call waited longer than the group's timeout for the other ranks.
    #[error(
        "{call}: rank {rank} waited {waited:?} for {missing} to reach the call (a rank returned \
         early, panicked, hangs or is gone); the group is aborted: make a new one (the timeout \
         is Group::with_timeout, or MGPU_DIST_TIMEOUT in seconds)"
    )]
    Timeout {
        call: &'static str,
        /// The rank that waited.
        rank: usize,
        waited: std::time::Duration,
        /// Who did not come (`"ranks [2, 5]"`, `"the GPU work of the other ranks"`).
        missing: String,
    },
    /// A group of several GPU ranks needs NCCL, and it was not found.
    #[error(
        "NCCL is not available: {0} (`pip install nvidia-nccl-cu13` in the active virtualenv or \
         conda environment, or install NCCL under CUDA_HOME or on the loader path; or set \
         MGPU_NCCL to the libnccl.so.2 file); a group of one rank, or of ranks on one GPU or \
         on the CPU, needs none"
    )]
    NoNccl(String),
    /// An NCCL call failed, or a group could not be formed (its environment, its rendezvous
    /// file); the message says which and why.
    #[error("NCCL / group setup: {what}: {message}")]
    Nccl { what: &'static str, message: String },
    /// A file of the on-disk cache or a tuning file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Whether the caller's input was at fault (a length, offset, index, range, backend, size or
    /// plan that does not fit, or another invalid argument), as opposed to the machine (no GPU or
    /// NVRTC, a driver or file error) or a CUDA expression that does not compile. Nothing was
    /// written, and the same call with corrected arguments can succeed.
    ///
    /// ```
    /// use mgpu::Context;
    /// let ctx = Context::cpu();
    /// let data = ctx.upload(&[1, 2, 3])?;
    /// assert!(data.try_slice(2..5).unwrap_err().is_invalid_input());
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Error::LengthMismatch { .. }
                | Error::InvalidOffset { .. }
                | Error::SourceOutOfRange { .. }
                | Error::IndexOutOfRange { .. }
                | Error::RangeOutOfBounds { .. }
                | Error::BackendMismatch { .. }
                | Error::TooLarge { .. }
                | Error::PlanMismatch { .. }
                | Error::InvalidBitRange { .. }
                | Error::NotRadixSortable { .. }
                | Error::InvalidArgument(_)
        )
    }
}

/// How a [`LengthMismatch`](Error::LengthMismatch)'s argument must relate to `expected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LengthRule {
    /// One element per element of the other argument: the same length.
    Equal,
    /// Room for at least `expected` elements (an output sized for the worst case).
    AtLeast,
    /// One element per segment (an output of a segmented reduction or SpMV).
    OnePerSegment,
    /// The length the plan was made for.
    Plan,
}

/// What is wrong with an [`InvalidOffset`](Error::InvalidOffset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OffsetProblem {
    /// The first offset is not 0.
    FirstNotZero,
    /// Less than the offset before it.
    Decreasing,
    /// Equal to the offset before it: an empty segment, where they are not allowed.
    EmptySegment,
    /// Past the number of positions.
    PastEnd,
    /// Equal to the number of positions: an empty last segment, where they are not allowed.
    EmptyAtEnd,
    /// No offsets at all for a positive number of positions (the first, 0, is missing).
    Missing,
}

/// Where an argument lives, or a context runs, in a [`BackendMismatch`](Error::BackendMismatch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Residence {
    /// The CPU backend.
    Cpu,
    /// A GPU (the context's own CUDA context, where the other side is another one).
    Gpu,
    /// A GPU of another CUDA context than the context's.
    OtherGpuContext,
}

/// A failed CUDA driver call: the driver's result code, its name and description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    code: u32,
    name: String,
    description: String,
}

impl DriverError {
    /// The `CUresult` code (`2`: out of memory).
    pub fn code(&self) -> u32 {
        self.code
    }
    /// The code's name (`"CUDA_ERROR_OUT_OF_MEMORY"`).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The driver's description (`"out of memory"`).
    pub fn description(&self) -> &str {
        &self.description
    }
    pub(crate) fn from_cudarc(e: cudarc::driver::DriverError) -> Self {
        let text = |r: std::result::Result<&std::ffi::CStr, _>| {
            r.map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        DriverError {
            code: e.0 as u32,
            name: text(e.error_name()),
            description: text(e.error_string()),
        }
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.name.is_empty(), self.description.is_empty()) {
            (false, false) => write!(f, "{} ({})", self.name, self.description),
            (false, true) => f.write_str(&self.name),
            _ => write!(f, "CUresult {}", self.code),
        }
    }
}

impl std::error::Error for DriverError {}

fn length_message(
    call: &str,
    argument: &str,
    actual: u64,
    expected: u64,
    of: &str,
    rule: LengthRule,
) -> String {
    let call = if call.is_empty() {
        String::new()
    } else {
        format!("{call}: ")
    };
    match rule {
        // "the output holds 3 elements but the input has 4"; "3 values for 4 keys".
        LengthRule::Equal if argument.starts_with("the ") => format!(
            "{call}{argument} holds {actual} elements but {of} has {expected}; they must have the \
             same length"
        ),
        LengthRule::Equal => {
            format!("{call}{actual} {argument} for {expected} {of}; they must have the same length")
        }
        LengthRule::AtLeast if of.is_empty() => format!(
            "{call}{argument} holds {actual} elements: it needs room for {}",
            if expected == 1 {
                "one element".to_string()
            } else {
                format!("{expected} elements")
            }
        ),
        LengthRule::AtLeast => format!(
            "{call}{argument} holds {actual} elements but {of} has {expected}; it needs room for \
             every item"
        ),
        LengthRule::OnePerSegment => format!(
            "{call}{argument} holds {actual} elements for {expected} {of}; it needs one per segment"
        ),
        LengthRule::Plan if argument.starts_with("the ") => format!(
            "{call}{argument} holds {actual} elements but the plan's {of} were checked against \
             {expected}; they must be the same"
        ),
        LengthRule::Plan => format!(
            "{call}{actual} {argument} for a plan of {expected} {of}; they must be the same"
        ),
    }
}

fn offset_message(
    call: &str,
    i: u64,
    s: u64,
    previous: Option<u64>,
    count: u64,
    problem: OffsetProblem,
) -> String {
    let empty_hint = "; give the offsets as Csr::allow_empty to allow empty segments";
    let p = previous.unwrap_or(0);
    let what = match problem {
        OffsetProblem::Missing => format!(
            "no segments (empty offsets) for {count} positions; offsets must hold at least the \
             first segment's start, 0"
        ),
        OffsetProblem::FirstNotZero => {
            format!("offsets[0] = {s}, but the first segment must start at 0")
        }
        OffsetProblem::Decreasing => format!(
            "offsets[{i}] = {s} is less than offsets[{}] = {p}: offsets must be non-decreasing",
            i - 1
        ),
        OffsetProblem::EmptySegment => format!(
            "offsets[{i}] = {s} equals offsets[{}]: segment {} is empty{empty_hint}",
            i - 1,
            i - 1
        ),
        OffsetProblem::PastEnd => {
            format!("offsets[{i}] = {s} is past the end of the input ({count} positions)")
        }
        OffsetProblem::EmptyAtEnd => format!(
            "offsets[{i}] = {s} is the end of the input ({count} positions): segment {i} is \
             empty{empty_hint}"
        ),
    };
    format!("{call}: {what}")
}

fn backend_message(argument: &str, found: Residence, expected: Residence) -> String {
    match (found, expected) {
        (Residence::OtherGpuContext, _) | (_, Residence::OtherGpuContext) => {
            format!("{argument} belongs to another GPU context")
        }
        (Residence::Gpu, _) => format!("{argument} lives on a GPU but the context is the CPU"),
        _ => format!("{argument} lives on the CPU but the context is a GPU"),
    }
}

/// `Result<T, mgpu::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn mismatch(argument: &str, found: Residence, expected: Residence) -> Error {
    Error::BackendMismatch {
        argument: argument.to_string(),
        found,
        expected,
    }
}

pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::InvalidArgument(msg.into()))
}
