//! Radix sort (Onesweep: Adinets & Merrill, 2022): stable LSD sort of keys by their bits, one
//! pass per 8-bit digit, each digit's bin offsets found by the decoupled look-back.
//!
//! [`SortAlgorithm::Radix`] runs it from [`sort_with`](Context::sort_with) and its siblings for
//! arithmetic keys under the built-in [`less`](Comparator::less) and
//! [`greater`](Comparator::greater), with the merge sort's exact result; [`RadixKey`] and
//! [`radix_sort`](Context::radix_sort) add bit ranges, descending orders and keys that are not
//! plain numbers.

use crate::buffer::{length_mismatch, output, ViewMut};
use crate::context::Backend;
use crate::cuda::radix::{self as gpu_radix, RadixSpec};
use crate::cuda::sort::SortValues;
use crate::error::LengthRule::Equal;
use crate::error::{Error, Result};
use crate::op::BuiltinOrder;
use crate::tuning::{self, Tuning};
use crate::{cpu, Arithmetic, Comparator, Context, Element, SliceMut};
use std::any::TypeId;
use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// Which algorithm [`sort_with`](Context::sort_with) and its siblings run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortAlgorithm {
    /// The faster algorithm that applies: the radix sort for arithmetic keys under the built-in
    /// `less` or `greater` (faster from 2^16 keys up on the H100: BENCHMARKS.md), the merge sort
    /// for every other comparator. Every algorithm gives the same result.
    #[default]
    Auto,
    /// The merge sort: any key type, any comparator.
    Merge,
    /// The radix sort: arithmetic keys under the built-in `less` or `greater` only (an
    /// [`Error::NotRadixSortable`] otherwise; use a [`RadixKey`] for other keys).
    Radix,
}

/// What a radix sort orders keys by: an unsigned number of up to 64 bits made from each key, in
/// ascending or descending order, optionally only some of its bits.
///
/// For arithmetic keys, [`ascending`](RadixKey::ascending) and
/// [`descending`](RadixKey::descending) order exactly as [`Comparator::less`] and
/// [`Comparator::greater`] do (NaNs after every number under ascending, `-0.0` equal to `0.0`);
/// the keys' bits are never changed. For other keys, [`new`](RadixKey::new) declares the number (CUB's
/// "decomposer"): a Rust function and a CUDA C++ expression over `x` that must agree, and whose
/// unsigned order is the order wanted.
///
/// ```
/// use mgpu::{Context, RadixKey};
/// #[repr(C)]
/// #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// struct Rec { hi: u32, lo: u16, tag: u16 }
/// impl mgpu::Element for Rec {
///     const CUDA_TYPE: &'static str = "Rec";
///     const CUDA_DECLARATION: &'static str =
///         "struct Rec { unsigned int hi; unsigned short lo; unsigned short tag; };";
/// }
/// // By (hi, lo): 48 bits; `tag` does not count, so equal (hi, lo) keep their input order.
/// let by_hi_lo = RadixKey::new("hi_lo", 48, |r: &Rec| (r.hi as u64) << 16 | r.lo as u64,
///     "((unsigned long long)x.hi << 16) | x.lo");
/// let ctx = Context::cpu();
/// let rec = |hi, lo, tag| Rec { hi, lo, tag };
/// let mut keys = ctx.upload(&[rec(2, 1, 0), rec(1, 9, 1), rec(2, 0, 2), rec(1, 9, 3)])?;
/// ctx.radix_sort(&mut keys, &by_hi_lo)?;
/// let tags: Vec<u16> = keys.to_vec()?.iter().map(|r| r.tag).collect();
/// assert_eq!(tags, vec![1, 3, 2, 0]);
/// # Ok::<(), mgpu::Error>(())
/// ```
pub struct RadixKey<K> {
    name: Cow<'static, str>,
    cpu: Arc<dyn Fn(&K) -> u64 + Send + Sync>,
    expression: Cow<'static, str>,
    helpers: Cow<'static, str>,
    width: u32,
    bits: Range<u32>,
    descending: bool,
}

impl<K> Clone for RadixKey<K> {
    fn clone(&self) -> Self {
        RadixKey {
            name: self.name.clone(),
            cpu: Arc::clone(&self.cpu),
            expression: self.expression.clone(),
            helpers: self.helpers.clone(),
            width: self.width,
            bits: self.bits.clone(),
            descending: self.descending,
        }
    }
}

impl<K> std::fmt::Debug for RadixKey<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RadixKey")
            .field("name", &self.name)
            .field("cuda", &self.expression)
            .field("bits", &self.bits)
            .field("descending", &self.descending)
            .finish()
    }
}

impl<K: Arithmetic> RadixKey<K> {
    /// Ascending, as [`Comparator::less`] orders (floats: NaNs last).
    ///
    /// ```
    /// use mgpu::{Context, RadixKey};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[3.5f32, f32::NAN, -0.0, -2.0, 0.0])?;
    /// ctx.radix_sort(&mut keys, &RadixKey::ascending())?;
    /// let bits: Vec<u32> = keys.to_vec()?.iter().map(|x| x.to_bits()).collect();
    /// assert_eq!(bits[..4], [(-2.0f32).to_bits(), (-0.0f32).to_bits(), 0, 3.5f32.to_bits()]);
    /// assert!(f32::from_bits(bits[4]).is_nan());
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn ascending() -> Self {
        let width = 8 * std::mem::size_of::<K>() as u32;
        RadixKey {
            name: Cow::Borrowed("ascending"),
            cpu: Arc::new(|k: &K| k.order_bits()),
            expression: Cow::Borrowed("radix_order(x)"),
            helpers: Cow::Borrowed(""),
            width,
            bits: 0..width,
            descending: false,
        }
    }

    /// Descending, as [`Comparator::greater`] orders (floats: NaNs first).
    pub fn descending() -> Self {
        Self::ascending().reversed()
    }
}

impl<K: Element> RadixKey<K> {
    /// A key of `width` bits (1 to 64) made by `cpu` on the CPU and by `cuda_expression` (over
    /// `x`, a `const K&`, of an unsigned integer type) on the GPU; only its low `width` bits
    /// count.
    pub fn new(
        name: impl Into<Cow<'static, str>>,
        width: u32,
        cpu: impl Fn(&K) -> u64 + Send + Sync + 'static,
        cuda_expression: impl Into<Cow<'static, str>>,
    ) -> Self {
        RadixKey {
            name: name.into(),
            cpu: Arc::new(cpu),
            expression: cuda_expression.into(),
            helpers: Cow::Borrowed(""),
            width,
            bits: 0..width.min(64),
            descending: false,
        }
    }

    /// CUDA C++ device functions the expression calls.
    pub fn with_cuda_helpers(mut self, source: impl Into<Cow<'static, str>>) -> Self {
        self.helpers = source.into();
        self
    }

    /// Orders by bits `range` of the key's number only (`begin..end`, bit 0 the lowest), as
    /// CUB's `begin_bit` / `end_bit`: keys equal in those bits keep their input order. For
    /// arithmetic keys the number is the order-preserving one (signs flipped, floats made
    /// ordered), not the raw bits; for unsigned keys they are the same.
    ///
    /// ```
    /// use mgpu::{Context, RadixKey};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[0x1_0003u32, 0x2_0001, 0x0_0002])?;
    /// ctx.radix_sort(&mut keys, &RadixKey::ascending().bit_range(0..16))?;
    /// assert_eq!(keys.to_vec()?, vec![0x2_0001, 0x0_0002, 0x1_0003]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn bit_range(mut self, range: Range<u32>) -> Self {
        self.bits = range;
        self
    }

    /// The opposite order (equal keys still keep their input order).
    pub fn reversed(mut self) -> Self {
        self.descending = !self.descending;
        self
    }

    /// The key's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The bits ordered by.
    pub fn bits(&self) -> Range<u32> {
        self.bits.clone()
    }

    /// Whether the order is descending.
    pub fn is_descending(&self) -> bool {
        self.descending
    }

    /// The number a key is ordered by, as the sort compares it: its bits in the range, shifted
    /// down, inverted for a descending order.
    pub fn ordered_bits(&self, key: &K) -> u64 {
        let len = self.bits.end - self.bits.start;
        let mask = if len >= 64 {
            u64::MAX
        } else {
            (1u64 << len) - 1
        };
        let v = (self.cpu)(key).checked_shr(self.bits.start).unwrap_or(0) & mask;
        if self.descending {
            !v & mask
        } else {
            v
        }
    }

    fn check(&self, call: &'static str) -> Result<()> {
        let Range { start, end } = self.bits;
        if self.width == 0 || self.width > 64 || start > end || end > self.width {
            return Err(Error::InvalidBitRange {
                call,
                key: self.name.to_string(),
                width: self.width,
                begin: start,
                end,
            });
        }
        Ok(())
    }

    pub(crate) fn spec_parts(&self) -> (bool, crate::cuda::jit::Expr) {
        (
            self.width > 32,
            crate::cuda::jit::Expr::new(&self.expression, &self.helpers),
        )
    }
}

/// The radix key of a built-in order on a built-in arithmetic type, if `K` is one.
pub(crate) fn builtin_key<K: Element>(comparator: &Comparator<K>) -> Option<RadixKey<K>> {
    let order = comparator.builtin_order()?;
    let key = arithmetic_key::<K>()?;
    Some(match order {
        BuiltinOrder::Less => key,
        BuiltinOrder::Greater => key.reversed(),
    })
}

/// `RadixKey::<K>::ascending()` for a `K` that is a built-in arithmetic type.
fn arithmetic_key<K: Element>() -> Option<RadixKey<K>> {
    fn cast<K: Element, A: Arithmetic>() -> Option<RadixKey<K>> {
        if TypeId::of::<K>() != TypeId::of::<A>() {
            return None;
        }
        let a = RadixKey::<A>::ascending();
        Some(RadixKey {
            name: a.name,
            cpu: Arc::new(|k: &K| bytemuck::cast::<K, A>(*k).order_bits()),
            expression: a.expression,
            helpers: a.helpers,
            width: a.width,
            bits: a.bits,
            descending: false,
        })
    }
    cast::<K, i8>()
        .or_else(cast::<K, u8>)
        .or_else(cast::<K, i16>)
        .or_else(cast::<K, u16>)
        .or_else(cast::<K, i32>)
        .or_else(cast::<K, u32>)
        .or_else(cast::<K, i64>)
        .or_else(cast::<K, u64>)
        .or_else(cast::<K, f32>)
        .or_else(cast::<K, f64>)
}

/// The radix key `algorithm` asks for with `comparator`: `None` for the merge sort.
pub(crate) fn choose<K: Element>(
    call: &'static str,
    comparator: &Comparator<K>,
    algorithm: SortAlgorithm,
) -> Result<Option<RadixKey<K>>> {
    match algorithm {
        SortAlgorithm::Merge => Ok(None),
        SortAlgorithm::Auto => Ok(builtin_key(comparator)),
        SortAlgorithm::Radix => {
            builtin_key(comparator)
                .map(Some)
                .ok_or_else(|| Error::NotRadixSortable {
                    call,
                    key_type: K::CUDA_TYPE,
                    comparator: comparator.name().to_string(),
                })
        }
    }
}

/// `indices` must be as long as the keys, of which there are at most 2^32.
pub(crate) fn check_indices(call: &'static str, keys: usize, indices: usize) -> Result<()> {
    if keys != indices {
        return Err(length_mismatch(
            Equal, call, "indices", indices, keys, "keys",
        ));
    }
    if keys as u64 > u32::MAX as u64 + 1 {
        return Err(Error::TooLarge {
            call,
            what: "keys",
            len: keys as u64,
            limited_by: "32-bit indices",
            limit: u32::MAX as u64 + 1,
            hint: "use sort_pairs with u64 values",
        });
    }
    Ok(())
}

fn radix_tuning(ctx: &Context, mode: SortValues, key: usize, value: usize) -> Result<Tuning> {
    let (family, size) = gpu_radix::tuning_family(mode, key, value);
    tuning::resolve(family, ctx.arch(), size, None)
}

impl Context {
    /// Sorts `keys` in place by `key`, stably: a radix sort (on the GPU, Onesweep; from 2^23
    /// 1-byte or 2^25 2-byte integer keys in a built-in order over the whole key, a counting
    /// sort, which reads and writes the keys once).
    ///
    /// ```
    /// use mgpu::{Context, RadixKey};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[5i16, -95, 68, 53, -4])?;
    /// ctx.radix_sort(&mut keys, &RadixKey::descending())?;
    /// assert_eq!(keys.to_vec()?, vec![68, 53, 5, -4, -95]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn radix_sort<K: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        key: &RadixKey<K>,
    ) -> Result<()> {
        key.check("radix_sort")?;
        let mut keys = output(self, keys, "the keys")?;
        self.radix_run::<K, K>(&mut keys, None, key, SortValues::None)
    }

    /// Sorts `keys` in place by `key` and moves `values` with them, stably.
    ///
    /// ```
    /// use mgpu::{Context, RadixKey};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[3u64, 1, 3, 0])?;
    /// let mut values = ctx.upload(&[10u8, 11, 12, 13])?;
    /// ctx.radix_sort_pairs(&mut keys, &mut values, &RadixKey::ascending())?;
    /// assert_eq!((keys.to_vec()?, values.to_vec()?), (vec![0, 1, 3, 3], vec![13, 11, 10, 12]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn radix_sort_pairs<K: Element, V: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        values: &mut impl SliceMut<V>,
        key: &RadixKey<K>,
    ) -> Result<()> {
        key.check("radix_sort_pairs")?;
        let mut keys = output(self, keys, "the keys")?;
        let mut values = output(self, values, "the values")?;
        if keys.len() != values.len() {
            return Err(length_mismatch(
                Equal,
                "radix_sort_pairs",
                "values",
                values.len(),
                keys.len(),
                "keys",
            ));
        }
        self.radix_run(&mut keys, Some(&mut values), key, SortValues::Pairs)
    }

    /// Sorts `keys` in place by `key` and writes to `indices` the input position of each sorted
    /// key (argsort). At most 2^32 keys.
    ///
    /// ```
    /// use mgpu::{Context, RadixKey};
    /// let ctx = Context::cpu();
    /// let mut keys = ctx.upload(&[2.5f32, -1.0, 2.5])?;
    /// let mut indices = ctx.zeros::<u32>(3)?;
    /// ctx.radix_sort_indices(&mut keys, &mut indices, &RadixKey::ascending())?;
    /// assert_eq!(indices.to_vec()?, vec![1, 0, 2]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn radix_sort_indices<K: Element>(
        &self,
        keys: &mut impl SliceMut<K>,
        indices: &mut impl SliceMut<u32>,
        key: &RadixKey<K>,
    ) -> Result<()> {
        key.check("radix_sort_indices")?;
        let mut keys = output(self, keys, "the keys")?;
        let mut indices = output(self, indices, "the indices")?;
        check_indices("radix_sort_indices", keys.len(), indices.len())?;
        self.radix_run(&mut keys, Some(&mut indices), key, SortValues::Indices)
    }

    /// The radix sort of validated arguments.
    pub(crate) fn radix_run<K: Element, V: Element>(
        &self,
        keys: &mut ViewMut<'_, K>,
        values: Option<&mut ViewMut<'_, V>>,
        key: &RadixKey<K>,
        mode: SortValues,
    ) -> Result<()> {
        let value_size = match mode {
            SortValues::None => 0,
            SortValues::Pairs => std::mem::size_of::<V>(),
            SortValues::Indices => 4,
        };
        let t = radix_tuning(self, mode, std::mem::size_of::<K>(), value_size)?;
        match &self.backend {
            Backend::Cpu => {
                let k = keys.host_mut().expect("validated");
                match values {
                    None => cpu::radix::sort_by_bits(k, |x| key.ordered_bits(x)),
                    Some(v) => {
                        let v = v.host_mut().expect("validated");
                        if mode == SortValues::Indices {
                            for (i, x) in v.iter_mut().enumerate() {
                                *x = bytemuck::cast::<u32, V>(i as u32);
                            }
                        }
                        cpu::radix::sort_pairs_by_bits(k, v, |x| key.ordered_bits(x));
                    }
                }
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let n = keys.len() as u64;
                let (kh, k) = keys.at.device().expect("validated: a device view");
                let mut homes = vec![kh];
                let v = match &values {
                    Some(v) => {
                        let (vh, v) = v.at.device().expect("validated: a device view");
                        homes.push(vh);
                        v
                    }
                    None => 0,
                };
                let (wide, order) = key.spec_parts();
                let spec = RadixSpec::new::<K, V>(wide, order, mode, &t);
                let order = gpu_radix::Order {
                    bits: key.bits.clone(),
                    descending: key.descending,
                };
                gpu.ordered(&homes, || gpu_radix::sort(gpu, &spec, k, v, n, &order))
            }
        }
    }
}
