//! Top-k: the first `k` keys of an array, or of every segment, in the comparator's order (the k
//! smallest under `less`, the k largest under `greater`), sorted, and deterministic: equivalent
//! keys keep their input order, so the result is the first `k` of the stable sort.
//!
//! On the GPU, arithmetic keys in a built-in order are selected by radix (`cuda::select`): one
//! CTA per segment, or per chunk of a whole array round after round, finds the k-th key digit by
//! digit in shared memory and keeps the first `k`; the keys are read once and nothing is sorted
//! but the `k` kept. Other comparators: a small `k` (up to a quarter of a tile) sorts every tile
//! of the keys and keeps its first `k`, round after round; a larger `k` sorts a copy; per
//! segment, the segmented sort of a copy, then the first `k` of each segment.

use crate::buffer::{input, length_mismatch, output, View, ViewMut};
use crate::context::Backend;
use crate::cuda::segreduce::SegItems;
use crate::cuda::segsort::{self as gpu_topk, Geometry};
use crate::cuda::select;
use crate::cuda::sort::SortValues;
use crate::error::LengthRule::{AtLeast, Equal};
use crate::error::{invalid, Error, Result};
use crate::radix::{builtin_key, RadixKey};
use crate::segreduce::args::{host, Bounds, Segments};
use crate::segreduce::{seg_tuning, validate, Csr};
use crate::{Comparator, Context, Element, Offset, Slice, SliceMut};

/// Positions are `u32`: at most 2^32 keys.
fn check_positions(call: &'static str, n: usize) -> Result<()> {
    if n as u64 > u32::MAX as u64 + 1 {
        return Err(Error::TooLarge {
            call,
            what: "keys",
            len: n as u64,
            limited_by: "u32 positions",
            limit: u32::MAX as u64 + 1,
            hint: "take the top k of parts of at most 2^32 keys and merge them",
        });
    }
    Ok(())
}

/// `k` at most `n`; an output of at least `k`.
fn check_k(call: &'static str, n: usize, k: usize, out: usize, what: &'static str) -> Result<()> {
    if k > n {
        return invalid(format!(
            "{call}: k = {k} exceeds the number of keys ({n}); k may be 0 to {n}"
        ));
    }
    if out < k {
        return Err(length_mismatch(AtLeast, call, what, out, k, "k"));
    }
    Ok(())
}

/// The stable order of `keys`' positions, first `k` kept.
fn host_top_k<K: Element>(keys: &[K], k: usize, comparator: &Comparator<K>) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..keys.len() as u32).collect();
    idx.sort_by(|&a, &b| comparator.ordering(&keys[a as usize], &keys[b as usize]));
    idx.truncate(k);
    idx
}

impl Context {
    /// The first `k` keys of `keys` in the comparator's order (the k smallest under `less`),
    /// sorted, to `out[..k]`; equivalent keys keep their input order. `k` may be 0 to
    /// `keys.len()`; at most 2^32 keys.
    ///
    /// ```
    /// use mgpu::{Comparator, Context};
    /// let ctx = Context::cpu();
    /// let keys = ctx.upload(&[0.5f32, 3.0, -1.0, 3.0, 2.0])?;
    /// let mut top = ctx.zeros::<f32>(3)?;
    /// ctx.top_k(&keys, 3, &mut top, &Comparator::greater())?;
    /// assert_eq!(top.to_vec()?, vec![3.0, 3.0, 2.0]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn top_k<K: Element>(
        &self,
        keys: &impl Slice<K>,
        k: usize,
        out: &mut impl SliceMut<K>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let keys = input(self, keys, "the keys")?;
        let mut out = output(self, out, "the output")?;
        check_k("top_k", keys.len(), k, out.len(), "the output")?;
        check_positions("top_k", keys.len())?;
        self.top_k_run(&keys, k, &mut out, None, comparator)
    }

    /// [`top_k`](Context::top_k), with the input position of each key to `indices[..k]`.
    ///
    /// ```
    /// use mgpu::{Comparator, Context};
    /// let ctx = Context::cpu();
    /// let logits = ctx.upload(&[0.1f32, 2.5, -1.0, 2.5, 0.7])?;
    /// let (mut top, mut tokens) = (ctx.zeros::<f32>(2)?, ctx.zeros::<u32>(2)?);
    /// ctx.top_k_indices(&logits, 2, &mut top, &mut tokens, &Comparator::greater())?;
    /// assert_eq!(tokens.to_vec()?, vec![1, 3]); // ties in input order
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn top_k_indices<K: Element>(
        &self,
        keys: &impl Slice<K>,
        k: usize,
        out: &mut impl SliceMut<K>,
        indices: &mut impl SliceMut<u32>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let keys = input(self, keys, "the keys")?;
        let mut out = output(self, out, "the output")?;
        let mut indices = output(self, indices, "the indices")?;
        check_k("top_k_indices", keys.len(), k, out.len(), "the output")?;
        check_k("top_k_indices", keys.len(), k, indices.len(), "the indices")?;
        check_positions("top_k_indices", keys.len())?;
        self.top_k_run(&keys, k, &mut out, Some(&mut indices), comparator)
    }

    /// [`top_k`](Context::top_k) of keys with values: the values of the first `k` keys to
    /// `out_values[..k]`.
    ///
    /// ```
    /// use mgpu::{Comparator, Context};
    /// let ctx = Context::cpu();
    /// let scores = ctx.upload(&[7, 9, 1, 9])?;
    /// let names = ctx.upload(&[b'a', b'b', b'c', b'd'])?;
    /// let (mut top, mut who) = (ctx.zeros::<i32>(2)?, ctx.zeros::<u8>(2)?);
    /// ctx.top_k_pairs(&scores, &names, 2, &mut top, &mut who, &Comparator::greater())?;
    /// assert_eq!(who.to_vec()?, vec![b'b', b'd']);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn top_k_pairs<K: Element, V: Element>(
        &self,
        keys: &impl Slice<K>,
        values: &impl Slice<V>,
        k: usize,
        out_keys: &mut impl SliceMut<K>,
        out_values: &mut impl SliceMut<V>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let call = "top_k_pairs";
        let keys = input(self, keys, "the keys")?;
        let values = input(self, values, "the values")?;
        let mut out_keys = output(self, out_keys, "the output keys")?;
        let mut out_values = output(self, out_values, "the output values")?;
        if values.len() != keys.len() {
            return Err(length_mismatch(
                Equal,
                call,
                "values",
                values.len(),
                keys.len(),
                "keys",
            ));
        }
        check_k(call, keys.len(), k, out_keys.len(), "the output keys")?;
        check_k(call, keys.len(), k, out_values.len(), "the output values")?;
        check_positions(call, keys.len())?;
        match &self.backend {
            Backend::Cpu => {
                let v = host(&values);
                let idx = host_top_k(host(&keys), k, comparator);
                let out = &mut out_values.host_mut().expect("validated")[..k];
                for (o, &i) in out.iter_mut().zip(&idx) {
                    *o = v[i as usize];
                }
                let out = &mut out_keys.host_mut().expect("validated")[..k];
                for (o, &i) in out.iter_mut().zip(&idx) {
                    *o = host(&keys)[i as usize];
                }
                Ok(())
            }
            Backend::Cuda(gpu) => {
                if k == 0 {
                    return Ok(());
                }
                let mut positions = self.zeros::<u32>(k)?;
                let mut pos_view = positions.view_mut();
                self.top_k_run(&keys, k, &mut out_keys, Some(&mut pos_view), comparator)?;
                let (vh, v) = values.at.device().expect("validated: a device view");
                let (oh, o) = out_values.at.device().expect("validated: a device view");
                let (ph, p) = pos_view.at.device().expect("a device buffer");
                let tuning =
                    crate::cuda::segsort::table_tuning::<u32, V>(self.arch(), SortValues::Pairs)?;
                gpu.ordered(&[vh, oh, ph], || {
                    gpu_topk::gather::<V>(gpu, v, p, k as u64, o, &tuning)
                })
            }
        }
    }

    /// The validated top-k: keys to `out`, positions to `indices` when given.
    fn top_k_run<K: Element>(
        &self,
        keys: &View<'_, K>,
        k: usize,
        out: &mut ViewMut<'_, K>,
        indices: Option<&mut ViewMut<'_, u32>>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        if k == 0 {
            return Ok(());
        }
        match &self.backend {
            Backend::Cpu => {
                let keys = host(keys);
                let idx = host_top_k(keys, k, comparator);
                let o = &mut out.host_mut().expect("validated")[..k];
                for (o, &i) in o.iter_mut().zip(&idx) {
                    *o = keys[i as usize];
                }
                if let Some(indices) = indices {
                    indices.host_mut().expect("validated")[..k].copy_from_slice(&idx);
                }
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let (kh, kp) = keys.at.device().expect("validated: a device view");
                let (oh, op) = out.at.device().expect("validated: a device view");
                let mut homes = vec![kh, oh];
                let ip = match &indices {
                    Some(i) => {
                        let (ih, ip) = i.at.device().expect("validated: a device view");
                        homes.push(ih);
                        ip
                    }
                    None => 0,
                };
                let (n, k) = (keys.len() as u64, k as u64);
                let arch = self.arch();
                match builtin_key(comparator).filter(|key| select::array_fits(key, n, k)) {
                    Some(key) => {
                        gpu.ordered(&homes, || select::top_k(gpu, arch, &key, kp, n, k, op, ip))
                    }
                    None => gpu.ordered(&homes, || {
                        gpu_topk::top_k(gpu, arch, kp, n, k, comparator, op, ip)
                    }),
                }
            }
        }
    }

    /// The first `k` keys of every segment in the comparator's order, sorted, ties in input
    /// order: segment `i`'s to `out[i * k ..]`; a segment of fewer than `k` keys fills as many
    /// slots and leaves the rest of its `k` as they were. `out` holds at least
    /// `k * segments.num_segments()` keys; at most 2^32 keys. The offsets are checked as for
    /// [`segmented_sort`](Context::segmented_sort).
    ///
    /// ```
    /// use mgpu::{Comparator, Context, Csr};
    /// let ctx = Context::cpu();
    /// let keys = ctx.upload(&[4, 8, 1, 6, 3, 9, 5])?;
    /// let offsets = ctx.upload(&[0u32, 4, 5])?; // lengths 4, 1, 2
    /// let mut top = ctx.upload(&[-1; 6])?;
    /// ctx.segmented_top_k(&keys, Csr::new(&offsets), 2, &mut top, &Comparator::greater())?;
    /// assert_eq!(top.to_vec()?, vec![8, 6, 3, -1, 9, 5]);
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segmented_top_k<K: Element, O: Offset>(
        &self,
        keys: &impl Slice<K>,
        segments: Csr<'_, O>,
        k: usize,
        out: &mut impl SliceMut<K>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let keys = input(self, keys, "the keys")?;
        let out = output(self, out, "the output")?;
        self.segmented_top_k_run("segmented_top_k", keys, segments, k, out, None, comparator)
    }

    /// [`segmented_top_k`](Context::segmented_top_k), with each key's position in its segment
    /// to `indices` (in the same slots as the keys): the tokens of a batch of rows of logits.
    ///
    /// ```
    /// use mgpu::{Comparator, Context, Csr};
    /// let ctx = Context::cpu();
    /// let logits = ctx.upload(&[0.1f32, 0.9, 0.5, 0.7, 0.2, 0.3])?; // two rows of 3
    /// let rows = ctx.upload(&[0u32, 3])?;
    /// let (mut top, mut tokens) = (ctx.zeros::<f32>(2)?, ctx.zeros::<u32>(2)?);
    /// ctx.segmented_top_k_indices(&logits, Csr::new(&rows), 1, &mut top, &mut tokens,
    ///     &Comparator::greater())?;
    /// assert_eq!((top.to_vec()?, tokens.to_vec()?), (vec![0.9, 0.7], vec![1, 0]));
    /// # Ok::<(), mgpu::Error>(())
    /// ```
    pub fn segmented_top_k_indices<K: Element, O: Offset>(
        &self,
        keys: &impl Slice<K>,
        segments: Csr<'_, O>,
        k: usize,
        out: &mut impl SliceMut<K>,
        indices: &mut impl SliceMut<u32>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let call = "segmented_top_k_indices";
        let keys = input(self, keys, "the keys")?;
        let out = output(self, out, "the output")?;
        let indices = output(self, indices, "the indices")?;
        self.segmented_top_k_run(call, keys, segments, k, out, Some(indices), comparator)
    }

    #[allow(clippy::too_many_arguments)]
    fn segmented_top_k_run<K: Element, O: Offset>(
        &self,
        call: &'static str,
        keys: View<'_, K>,
        csr: Csr<'_, O>,
        k: usize,
        mut out: ViewMut<'_, K>,
        mut indices: Option<ViewMut<'_, u32>>,
        comparator: &Comparator<K>,
    ) -> Result<()> {
        let count = keys.len();
        let segs = Segments {
            offsets: csr.offsets(self)?,
            sources: None,
            count,
            support_empty: csr.allow_empty,
        };
        let slots = segs.offsets.len() as u64 * k as u64;
        if (out.len() as u64) < slots {
            return Err(Error::LengthMismatch {
                call,
                argument: "the output",
                actual: out.len() as u64,
                expected: slots,
                of: "k slots per segment",
                rule: AtLeast,
            });
        }
        if let Some(i) = &indices {
            if (i.len() as u64) < slots {
                return Err(Error::LengthMismatch {
                    call,
                    argument: "the indices",
                    actual: i.len() as u64,
                    expected: slots,
                    of: "k slots per segment",
                    rule: AtLeast,
                });
            }
        }
        if segs.offsets.is_empty() && count > 0 {
            return Err(validate::no_segments(call, count));
        }
        check_positions(call, count)?;
        let check_tuning = seg_tuning::<u32, O>(self, SegItems::Values, false, false)?;
        let bounds = Bounds {
            data_len: count,
            cols: None,
            x_len: 0,
        };
        let (_, longest) = self.check_segments_longest(call, &segs, bounds, &check_tuning)?;
        if count == 0 || k == 0 {
            return Ok(());
        }
        match &self.backend {
            Backend::Cpu => {
                let offsets = host(&segs.offsets);
                let keys = host(&keys);
                let out = out.host_mut().expect("validated");
                let mut indices = indices.as_mut().map(|i| i.host_mut().expect("validated"));
                for s in 0..offsets.len() {
                    let start = offsets[s].to_u64() as usize;
                    let end = offsets.get(s + 1).map_or(count, |o| o.to_u64() as usize);
                    let idx = host_top_k(&keys[start..end], k, comparator);
                    for (j, &i) in idx.iter().enumerate() {
                        out[s * k + j] = keys[start + i as usize];
                        if let Some(ind) = indices.as_mut() {
                            ind[s * k + j] = i;
                        }
                    }
                }
                Ok(())
            }
            Backend::Cuda(gpu) => {
                let (oh, offsets) = segs.offsets.at.device().expect("validated: on the device");
                let (kh, kp) = keys.at.device().expect("validated: a device view");
                let (outh, op) = out.at.device().expect("validated: a device view");
                let mut homes = vec![oh, kh, outh];
                let ip = match &indices {
                    Some(i) => {
                        let (ih, ip) = i.at.device().expect("validated: a device view");
                        homes.push(ih);
                        ip
                    }
                    None => 0,
                };
                let num_segments = segs.offsets.len() as u64;
                let fits = |key: &RadixKey<K>| select::segments_fit(gpu, key, longest, k as u64);
                if let Some(key) = builtin_key(comparator).filter(fits) {
                    let wide = std::mem::size_of::<O>() == 8;
                    let geometry = (offsets, wide, num_segments, longest);
                    return gpu.ordered(&homes, || {
                        select::segmented_top_k(
                            gpu,
                            self.arch(),
                            &key,
                            geometry,
                            kp,
                            count as u64,
                            k as u64,
                            op,
                            ip,
                        )
                    });
                }
                let t = gpu_topk::table_tuning::<K, u32>(self.arch(), SortValues::Pairs)?;
                let geometry = Geometry {
                    offsets,
                    num_segments,
                    count: count as u64,
                    longest,
                };
                gpu.ordered(&homes, || {
                    gpu_topk::segmented_top_k::<K, O>(
                        gpu,
                        self.arch(),
                        &geometry,
                        kp,
                        k as u64,
                        comparator,
                        &t,
                        op,
                        ip,
                    )
                })
            }
        }
    }
}
