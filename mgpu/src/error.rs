//! The one error type of the crate.

/// Everything that can go wrong in `mgpu`. Bad input is reported before anything is written, and
/// the [`Context`](crate::Context) stays usable after any error.
#[derive(Debug, thiserror::Error)]
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
    /// The arguments are inconsistent (lengths, backends, tunings).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A CUDA driver call failed.
    #[error("CUDA driver error in {what}: {source}")]
    Driver {
        what: &'static str,
        #[source]
        source: cudarc::driver::DriverError,
    },
    /// A file of the on-disk cache or a tuning file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

/// `Result<T, mgpu::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(Error::InvalidArgument(msg.into()))
}
