//! Checks shared by the suites: regions of buffers, error messages.

use super::same;
use mgpu::{Element, Error};
use std::ops::Range;

/// `got` must be `before` with `range` replaced by `expect`.
pub fn check_region<T: Element>(
    got: &[T],
    before: &[T],
    range: Range<usize>,
    expect: &[T],
    what: &str,
) {
    assert_eq!(got.len(), before.len(), "{what}: buffer length");
    same(&got[range.clone()], expect).unwrap_or_else(|e| panic!("{what}: inside the view: {e}"));
    same(&got[..range.start], &before[..range.start])
        .unwrap_or_else(|e| panic!("{what}: before the view: {e}"));
    same(&got[range.end..], &before[range.end..])
        .unwrap_or_else(|e| panic!("{what}: after the view: {e}"));
}

/// An error of bad input (`Error::is_invalid_input`) whose message names the problem (`needles`).
pub fn expect_invalid(err: Error, needles: &[&str], what: &str) {
    let msg = err.to_string();
    assert!(err.is_invalid_input(), "{what}: {err:?}");
    for needle in needles {
        assert!(
            msg.contains(needle),
            "{what}: message {msg:?} lacks {needle:?}"
        );
    }
}
