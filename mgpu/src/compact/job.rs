//! A compaction's arguments as both backends read them: where each is read from and written to,
//! and the length checks made before anything runs.

use crate::buffer::{View, ViewMut};
use crate::cuda::compact::Rejected;
use crate::error::{Error, LengthRule, Result};
use crate::Element;

/// An argument of a compaction: where it is read from, and where it is written to.
pub(crate) enum Place<'a, T: Element> {
    /// Read only.
    In(View<'a, T>),
    /// Written.
    Out(ViewMut<'a, T>),
    /// Read, then overwritten by the output (in place).
    InOut(ViewMut<'a, T>),
}

impl<T: Element> Place<'_, T> {
    pub(crate) fn len(&self) -> usize {
        match self {
            Place::In(v) => v.len(),
            Place::Out(v) | Place::InOut(v) => v.len(),
        }
    }
    /// The input's elements, on the CPU backend (copied when they are about to be overwritten).
    pub(crate) fn host_input(&mut self) -> Vec<T> {
        match self {
            Place::In(v) => v.at.host().expect("checked to be on the CPU").to_vec(),
            Place::Out(_) => unreachable!("not an input"),
            Place::InOut(v) => v.host_mut().expect("checked to be on the CPU").to_vec(),
        }
    }
    pub(crate) fn host_output(&mut self) -> &mut [T] {
        match self {
            Place::In(_) => unreachable!("not an output"),
            Place::Out(v) | Place::InOut(v) => v.host_mut().expect("checked to be on the CPU"),
        }
    }
}

/// One compaction: keys (what selection looks at), optional values carried with them, outputs.
pub(crate) struct Job<'a, K: Element, V: Element> {
    pub name: &'static str,
    pub keys: Place<'a, K>,
    pub values: Option<Place<'a, V>>,
    /// Whether the kept keys are written: to `keys_out`, or over `keys` when that is `None`.
    pub write_keys: bool,
    pub keys_out: Option<Place<'a, K>>,
    /// `None`: the values (if any) are overwritten in place.
    pub values_out: Option<Place<'a, V>>,
    pub keys_rejected: Option<Place<'a, K>>,
    pub values_rejected: Option<Place<'a, V>>,
    pub rejected: Rejected,
    /// What the keys and the values are called in errors: ("keys", "values"), or for
    /// select_flagged ("flags", "items").
    pub words: (&'static str, &'static str),
}

impl<'a, K: Element, V: Element> Job<'a, K, V> {
    /// A job over `keys` that writes the kept keys (over `keys` unless `keys_out` is set) and
    /// drops the rest; the caller's fields say otherwise.
    pub(crate) fn new(name: &'static str, keys: Place<'a, K>) -> Self {
        Job {
            name,
            keys,
            values: None,
            write_keys: true,
            keys_out: None,
            values_out: None,
            keys_rejected: None,
            values_rejected: None,
            rejected: Rejected::Dropped,
            words: ("keys", "values"),
        }
    }
}

pub(crate) fn too_short(name: &'static str, what: &'static str, len: usize, n: usize) -> Error {
    crate::buffer::length_mismatch(LengthRule::AtLeast, name, what, len, n, "the input")
}

impl<K: Element, V: Element> Job<'_, K, V> {
    /// Lengths agree and outputs can hold every item.
    pub(super) fn check(&self) -> Result<usize> {
        let n = self.keys.len();
        if let Some(v) = &self.values {
            if v.len() != n {
                let (keys, values) = self.words;
                return Err(Error::LengthMismatch {
                    call: self.name,
                    argument: values,
                    actual: v.len() as u64,
                    expected: n as u64,
                    of: keys,
                    rule: LengthRule::Equal,
                });
            }
        }
        let outs = [
            ("the output", self.keys_out.as_ref().map(|p| p.len())),
            (
                "the values' output",
                self.values_out.as_ref().map(|p| p.len()),
            ),
            (
                "the rejected items' output",
                self.keys_rejected.as_ref().map(|p| p.len()),
            ),
            (
                "the rejected values' output",
                self.values_rejected.as_ref().map(|p| p.len()),
            ),
        ];
        for (what, len) in outs {
            if let Some(len) = len {
                if len < n {
                    return Err(too_short(self.name, what, len, n));
                }
            }
        }
        Ok(n)
    }
}
