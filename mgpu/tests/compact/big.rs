//! More than 2^32 items (GPU, MGPU_BIG=1): 64-bit counts.

use super::*;

/// x_i = i % 251 as u8 over 2^32 + 2^25 items. "x != 250" keeps more than 2^32 of them (output
/// positions past 2^32); then "x % 7 == 0" in place. Expected outputs in closed form, checked on
/// windows (start, around 2^31 and 2^32, the end, past the count).
#[test]
fn select_past_2_pow_32_items_on_gpu() {
    let Some(ctx) = big_gpu("about 9 GB") else {
        return;
    };
    let n: usize = (1 << 32) + (1 << 25);
    // Filled in chunks of a multiple of 251 items: every chunk is the same pattern.
    let chunk: usize = 251 << 20;
    let pattern: Vec<u8> = (0..chunk).map(|i| (i % 251) as u8).collect();
    let mut input = ctx.zeros::<u8>(n).unwrap();
    let mut out = ctx.zeros::<u8>(n).unwrap();
    let poison = vec![255u8; chunk];
    let mut at = 0;
    while at < n {
        let len = chunk.min(n - at);
        input
            .slice_mut(at..at + len)
            .copy_from_host(&pattern[..len])
            .unwrap();
        out.slice_mut(at..at + len)
            .copy_from_host(&poison[..len])
            .unwrap();
        at += len;
    }
    drop((pattern, poison));
    let (q, rem) = (n / 251, n % 251);

    let check_windows = |buf: &mgpu::Buffer<u8>,
                         count: usize,
                         value: &dyn Fn(usize) -> u8,
                         what: &str,
                         tail: bool| {
        let mut starts = vec![
            0,
            (1 << 31) - 5000,
            (1 << 32) - 5000,
            count.saturating_sub(10_000),
        ];
        if tail {
            starts.push(count);
        } else {
            starts.retain(|&s| s < count);
        }
        for s in starts {
            let e = (s + 10_000).min(n);
            let got = buf.slice(s..e).to_vec().unwrap();
            for (j, &g) in got.iter().enumerate() {
                let i = s + j;
                let want = if i < count { value(i) } else { 255 };
                if !tail && i >= count {
                    break;
                }
                assert_eq!(g, want, "{what}: item {i} (count {count})");
            }
        }
    };

    let pred = Predicate::new("not_250", |x: &u8| *x != 250, "x != 250");
    let expect = q * 250 + rem.min(250);
    assert!(expect > 1 << 32);
    let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
    let c = ctx
        .select_if(&input, &mut out, &pred, Count::Both(&mut count))
        .unwrap();
    assert_eq!(c, Some(expect as u64), "select_if count");
    assert_eq!(
        count.to_vec().unwrap(),
        [expect as u64],
        "select_if device count"
    );
    check_windows(&out, expect, &|k| (k % 250) as u8, "select_if", true);
    drop(out);

    let pred = Predicate::new("mul7", |x: &u8| x.is_multiple_of(7), "x % 7 == 0");
    let expect = q * 36 + rem.div_ceil(7);
    let c = ctx
        .select_if_in_place(&mut input, &pred, Count::Host)
        .unwrap();
    assert_eq!(c, Some(expect as u64), "select_if_in_place count");
    check_windows(
        &input,
        expect,
        &|k| ((k % 36) * 7) as u8,
        "select_if_in_place",
        false,
    );
}
