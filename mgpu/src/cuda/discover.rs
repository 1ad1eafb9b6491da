//! Finding the CUDA libraries that are loaded at run time, where they usually live, without
//! `LD_LIBRARY_PATH`.
//!
//! cudarc opens NVRTC and the driver by name (`libnvrtc.so`, ..., `libnvrtc.so.13`), so only the
//! loader path is searched. This module looks in the usual places first and opens the file it
//! finds by its full path, once, with `RTLD_NOW | RTLD_GLOBAL`, and keeps it open for the life of
//! the process. When cudarc later opens the library by name, the dynamic loader returns the
//! object already loaded whose `SONAME` (`libnvrtc.so.13`) matches the name, so both use the same
//! library. The search runs once per process, before NVRTC is first used
//! ([`jit::nvrtc_available`](super::jit::nvrtc_available) calls [`nvrtc`]).
//!
//! NVRTC, in this order:
//! 1. `MGPU_NVRTC`: the library file (or the folder holding it). When set, nothing else is tried.
//! 2. `CUDA_HOME`, then `CUDA_PATH`: their `lib64/` and `lib/`.
//! 3. `/usr/local/cuda/lib64`.
//! 4. The active Python environment (`VIRTUAL_ENV`, then `CONDA_PREFIX`): the `nvidia-cuda-nvrtc`
//!    wheel (which PyTorch installs too) in `lib/python3*/site-packages/nvidia/cu13/lib/` or
//!    `.../nvidia/cuda_nvrtc/lib/`, and conda's `lib/`.
//! 5. The loader path (`LD_LIBRARY_PATH`, `ld.so.conf`), by name, as cudarc does.
//!
//! NCCL ([`nccl`]) is looked for the same way (`MGPU_NCCL`, ..., the `nvidia-nccl-cu13` wheel
//! under `nvidia/nccl/lib/`); it is opened by path and its functions are looked up in it
//! directly (cudarc's loader asks for names NCCL's `libnccl.so.2` does not answer to).
//!
//! The driver (`libcuda.so.1`) belongs to the installed kernel module, so the loader path comes
//! first there; WSL's `/usr/lib/wsl/lib` is tried after it.
//!
//! One caveat: cudarc asks for the unversioned `libnvrtc.so` first, so a different NVRTC
//! installed under that name on the loader path would be opened beside the one found here (and
//! used). `mgpu info` shows what was found.
//!
//! ```
//! let nvrtc = mgpu::cuda::discover::nvrtc();
//! match &nvrtc.found {
//!     Some(found) => println!("NVRTC: {found}"),
//!     None => println!("no NVRTC: {nvrtc}"),
//! }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The NVRTC major version the bindings are built for (cudarc's `cuda-13000` feature).
const NVRTC_MAJOR: &str = "13";

/// A library that was found and opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// The file that was opened. For the loader path, the file the loader chose (as
    /// `/proc/self/maps` names it), or the name asked for where that cannot be told.
    pub path: PathBuf,
    /// Which step of the search found it: `MGPU_NVRTC`, `CUDA_HOME`, `CUDA_PATH`,
    /// `/usr/local/cuda`, `VIRTUAL_ENV`, `CONDA_PREFIX`, `/usr/lib/wsl/lib` or `loader path`.
    pub via: &'static str,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (via {})", self.path.display(), self.via)
    }
}

/// The outcome of a library search: what was found, and every place looked at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Search {
    /// The library, when found and opened.
    pub found: Option<Found>,
    /// Each step of the search in order: the place (a variable, a folder) and what happened
    /// there ("unset", "no libnvrtc", the loader's error, "found").
    pub tried: Vec<(String, String)>,
}

impl Search {
    fn note(&mut self, place: impl Into<String>, outcome: impl Into<String>) {
        self.tried.push((place.into(), outcome.into()));
    }
}

impl fmt::Display for Search {
    /// "path (via step)" when found, else the places looked at and what each gave.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(found) = &self.found {
            return write!(f, "{found}");
        }
        write!(f, "not found; looked at ")?;
        for (i, (place, outcome)) in self.tried.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{place} ({outcome})")?;
        }
        Ok(())
    }
}

/// The NVRTC search (run once per process; the library found stays open).
///
/// ```
/// let search = mgpu::cuda::discover::nvrtc();
/// assert_eq!(search.found.is_some(), mgpu::cuda::jit::nvrtc_available());
/// ```
pub fn nvrtc() -> &'static Search {
    static SEARCH: OnceLock<Search> = OnceLock::new();
    SEARCH.get_or_init(|| {
        let search = search_nvrtc();
        match &search.found {
            Some(found) => log::debug!("NVRTC: {found}"),
            None => log::debug!("NVRTC: {search}"),
        }
        search
    })
}

/// The CUDA driver search (run once per process; the library found stays open).
///
/// ```
/// let search = mgpu::cuda::discover::driver();
/// assert_eq!(search.found.is_some(), mgpu::cuda::driver_available());
/// ```
pub fn driver() -> &'static Search {
    static SEARCH: OnceLock<Search> = OnceLock::new();
    SEARCH.get_or_init(|| {
        let names = cudarc::get_lib_name_candidates("cuda");
        let mut search = Search::default();
        if let Some(found) = open_from_loader_path(&names, "libcuda.so", &mut search) {
            search.found = Some(found);
        } else if let Some(path) = find_in(Path::new("/usr/lib/wsl/lib"), &names, &mut search) {
            search.found = open_path(&path, "/usr/lib/wsl/lib", "cuInit", &mut search);
        }
        search
    })
}

/// The CUDA driver's version as (major, minor), e.g. (13, 0); None without a driver.
///
/// ```
/// if let Some((major, minor)) = mgpu::cuda::discover::driver_version() {
///     println!("CUDA driver {major}.{minor}");
/// }
/// ```
pub fn driver_version() -> Option<(u32, u32)> {
    driver().found.as_ref()?;
    if !super::driver_available() {
        return None;
    }
    let mut version = 0;
    // SAFETY: the driver library is present (checked above, so cudarc's loader does not panic);
    // a plain out-parameter, and cuDriverGetVersion needs no cuInit.
    let r = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
    if r != cudarc::driver::sys::CUresult::CUDA_SUCCESS || version <= 0 {
        return None;
    }
    let version = version as u32;
    Some((version / 1000, version % 1000 / 10))
}

/// What a library search looks for.
struct Wanted {
    /// The variable naming the library file or its folder (`MGPU_NVRTC`).
    var: &'static str,
    /// File names to try in a folder, in order.
    names: Vec<String>,
    /// A symbol the library must export.
    symbol: &'static str,
    /// Folders under a Python environment's `site-packages/nvidia/` where its wheel puts it.
    wheel_dirs: &'static [&'static str],
    /// The start of its file name, to tell which file the loader chose.
    file_prefix: &'static str,
}

fn search_nvrtc() -> Search {
    let mut names = cudarc::get_lib_name_candidates("nvrtc");
    // In a folder, the version the bindings are built for first; then cudarc's order.
    names.sort_by_key(|n| !n.ends_with(&format!(".so.{NVRTC_MAJOR}")));
    search(&Wanted {
        var: "MGPU_NVRTC",
        names,
        symbol: "nvrtcVersion",
        wheel_dirs: &["cu13/lib", "cuda_nvrtc/lib"],
        file_prefix: "libnvrtc.so",
    })
}

/// The NCCL search (run once per process; the library found stays open): `MGPU_NCCL` (the file
/// or its folder; alone when set), `CUDA_HOME` and `CUDA_PATH` (`lib64/`, `lib/`),
/// `/usr/local/cuda/lib64`, the `nvidia-nccl-cu13` wheel of the active Python environment
/// (`VIRTUAL_ENV`, then `CONDA_PREFIX`: `lib/python3*/site-packages/nvidia/nccl/lib/`, and
/// conda's `lib/`), then the loader path. Only a group of several GPU ranks needs it.
///
/// ```
/// let nccl = mgpu::cuda::discover::nccl();
/// match &nccl.found {
///     Some(found) => println!("NCCL: {found}"),
///     None => println!("no NCCL: {nccl}"),
/// }
/// ```
pub fn nccl() -> &'static Search {
    static SEARCH: OnceLock<Search> = OnceLock::new();
    SEARCH.get_or_init(|| {
        let search = search(&Wanted {
            var: "MGPU_NCCL",
            // NCCL's SONAME is libnccl.so.2 (its major version, not CUDA's).
            names: vec!["libnccl.so.2".into(), "libnccl.so".into()],
            symbol: "ncclGetVersion",
            wheel_dirs: &["nccl/lib", "cu13/lib"],
            file_prefix: "libnccl.so",
        });
        log::debug!("NCCL: {search}");
        search
    })
}

fn search(wanted: &Wanted) -> Search {
    let names = &wanted.names;
    let mut search = Search::default();
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());

    // 1. An explicit file or folder: honored alone.
    if let Some(explicit) = var(wanted.var) {
        let explicit = PathBuf::from(explicit);
        search.note(
            wanted.var,
            format!("{}, so nothing else is tried", explicit.display()),
        );
        let file = if explicit.is_dir() {
            find_in(&explicit, names, &mut search)
        } else {
            Some(explicit)
        };
        if let Some(file) = file {
            search.found = open_path(&file, wanted.var, wanted.symbol, &mut search);
        }
        return search;
    }
    search.note(wanted.var, "unset");

    // 2-4. The usual folders, in order; an unset variable is noted where it would be.
    let mut steps: Vec<(&'static str, Option<PathBuf>)> = Vec::new();
    for home in ["CUDA_HOME", "CUDA_PATH"] {
        match var(home) {
            Some(root) => {
                let root = PathBuf::from(root);
                steps.push((home, Some(root.join("lib64"))));
                steps.push((home, Some(root.join("lib"))));
            }
            None => steps.push((home, None)),
        }
    }
    steps.push((
        "/usr/local/cuda",
        Some(PathBuf::from("/usr/local/cuda/lib64")),
    ));
    for prefix in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        match var(prefix) {
            Some(root) => {
                let root = PathBuf::from(root);
                for site in python_site_packages(&root) {
                    let nvidia = site.join("nvidia");
                    for dir in wanted.wheel_dirs {
                        steps.push((prefix, Some(nvidia.join(dir))));
                    }
                }
                if prefix == "CONDA_PREFIX" {
                    steps.push((prefix, Some(root.join("lib"))));
                }
            }
            None => steps.push((prefix, None)),
        }
    }
    for (via, folder) in steps {
        let Some(folder) = folder else {
            search.note(via, "unset");
            continue;
        };
        if let Some(file) = find_in(&folder, names, &mut search) {
            if let Some(found) = open_path(&file, via, wanted.symbol, &mut search) {
                search.found = Some(found);
                return search;
            }
        }
    }

    // 5. The loader path, by name.
    search.found = open_from_loader_path(names, wanted.file_prefix, &mut search);
    search
}

/// `lib/python3*/site-packages` of a Python environment, newest name last.
fn python_site_packages(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join("lib")) else {
        return Vec::new();
    };
    let mut sites: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    sites.sort();
    sites
}

/// The first of `names` present in `folder`.
fn find_in(folder: &Path, names: &[String], search: &mut Search) -> Option<PathBuf> {
    let place = folder.display().to_string();
    if !folder.is_dir() {
        search.note(place, "no such folder");
        return None;
    }
    let file = names.iter().map(|n| folder.join(n)).find(|p| p.is_file());
    if file.is_none() {
        search.note(place, "not there");
    }
    file
}

/// Opens `path` for the rest of the process and checks that it exports `symbol`.
fn open_path(path: &Path, via: &'static str, symbol: &str, search: &mut Search) -> Option<Found> {
    let place = path.display().to_string();
    match open_global(path) {
        Ok(lib) => {
            // SAFETY: only looks the symbol up; it is not called.
            let exports = unsafe { lib.get::<unsafe extern "C" fn()>(symbol.as_bytes()) }.is_ok();
            if !exports {
                search.note(place, format!("no {symbol} in it"));
                return None;
            }
            // Kept open for the life of the process: cudarc's later open by name must find
            // this object loaded.
            std::mem::forget(lib);
            search.note(place, "found");
            Some(Found {
                path: path.to_path_buf(),
                via,
            })
        }
        Err(e) => {
            // libloading's message is "dlopen failed"; the loader's own is its source.
            let why = std::error::Error::source(&e).map_or(e.to_string(), |s| s.to_string());
            search.note(place, why);
            None
        }
    }
}

#[cfg(unix)]
fn open_global(path: &Path) -> Result<libloading::Library, libloading::Error> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: opening a CUDA library runs its initializers, which have no preconditions; the
    // same library cudarc would open by name.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }.map(Into::into)
}

#[cfg(not(unix))]
fn open_global(path: &Path) -> Result<libloading::Library, libloading::Error> {
    // SAFETY: as above.
    unsafe { libloading::Library::new(path) }
}

/// Opens the first of `names` the loader finds (as cudarc does) and keeps it open; the file is
/// the mapped library whose name starts with `prefix`.
fn open_from_loader_path(names: &[String], prefix: &str, search: &mut Search) -> Option<Found> {
    for name in names {
        // SAFETY: as in `open_global`.
        if let Ok(lib) = unsafe { libloading::Library::new(name) } {
            std::mem::forget(lib);
            search.note("loader path", format!("found {name}"));
            return Some(Found {
                path: mapped_file(prefix).unwrap_or_else(|| PathBuf::from(name)),
                via: "loader path",
            });
        }
    }
    search.note("loader path", "not there");
    None
}

/// The file of a loaded library whose name starts with `prefix`, from `/proc/self/maps`.
fn mapped_file(prefix: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .map(PathBuf::from)
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
}
