//! # mgpu: GPU parallel primitives for Rust
//!
//! The Modern GPU algorithms and the single-pass decoupled look-back scan, for any element type and
//! any associative operator, on an NVIDIA GPU (CUDA kernels compiled at run time with NVRTC,
//! specialized and cached) or on the CPU (rayon) through the same API.
//!
//! ```
//! use mgpu::{Context, Op, ScanOptions};
//! let ctx = Context::new()?; // the GPU when there is one, else the CPU
//! let data = ctx.upload(&[8, 1, 9, 8, 1])?;
//! assert_eq!(ctx.reduce(&data, &Op::plus())?, 27);
//! let mut out = ctx.zeros::<i32>(data.len())?;
//! ctx.scan(&data, &mut out, &Op::plus(), ScanOptions::exclusive())?;
//! assert_eq!(out.to_vec()?, vec![0, 8, 9, 18, 26]);
//! # Ok::<(), mgpu::Error>(())
//! ```
//!
//! Layout: [`Context`] (a backend, and on the GPU a stream), [`Buffer`] and its views [`View`] /
//! [`ViewMut`] (where data lives, taken by every primitive through [`Slice`] / [`SliceMut`]),
//! [`Source`] (what reduce, scan and copy read: memory, a [`Map`]ped input, a [`Counting`]
//! sequence), [`Element`] and [`Op`] (what is computed), [`tuning`] (launch parameters per
//! architecture), the primitives as methods of `Context`, the CPU backend in `cpu` and the CUDA
//! backend in [`cuda`].

pub mod buffer;
mod check;
pub mod compact;
pub mod context;
pub mod cpu;
pub mod cuda;
pub mod dist;
pub mod element;
pub mod error;
pub mod op;
pub mod radix;
pub mod reduce;
pub mod reduce_by_key;
pub mod scan;
pub mod segreduce;
pub mod segsort;
pub mod sort;
pub mod source;
pub mod topk;
pub mod transform;
pub mod tuning;

pub use buffer::{Buffer, Slice, SliceMut, View, ViewMut};
pub use bytemuck;
pub use compact::Count;
pub use context::{Context, Event};
pub use element::{Element, Offset};
pub use error::{DriverError, Error, LengthRule, OffsetProblem, Residence, Result};
pub use op::{Arithmetic, Bitwise, Comparator, Equality, Op, Predicate};
pub use radix::{RadixKey, SortAlgorithm};
pub use reduce::Total;
pub use reduce_by_key::{ReduceByKeyAlgorithm, ReduceByKeyPlan};
pub use scan::{CarryIn, ScanAlgorithm, ScanKind, ScanOptions};
pub use segreduce::{Csr, SegPlan, SpmvPlan};
pub use segsort::SegSortPlan;
pub use source::{Counting, Map, Mapped, Source};
pub use tuning::Tuning;
