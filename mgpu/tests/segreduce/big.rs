//! Closed-form patterns at small sizes everywhere, and (GPU, MGPU_BIG=1) more than 2^32 values
//! with u64 offsets; u32 offsets starting at u32::MAX.

use super::*;

/// sum of (i % 251) for i < m.
fn pattern_prefix(m: u64) -> u64 {
    (m / 251) * (250 * 251 / 2) + (m % 251) * (m % 251).saturating_sub(1) / 2
}

/// sum of i for a <= i < b, mod 2^64.
fn counting_sum(a: u64, b: u64) -> u64 {
    let (a, b) = (a as u128, b as u128);
    if b <= a {
        return 0;
    }
    ((a + b - 1) * (b - a) / 2) as u64
}

/// Segment boundaries over `n` positions: `k` random ones, around 2^31 and 2^32 where they lie
/// inside, some repeated (empty segments), the last one at `n` (an empty last segment).
fn big_offsets(r: &mut StdRng, n: u64, k: usize) -> Vec<u64> {
    let mut o = vec![0u64];
    for _ in 0..k {
        o.push(r.random_range(0..n));
    }
    for c in [1u64 << 31, 1 << 32] {
        if c + 1 < n {
            o.extend([c - 1, c, c + 1]);
        }
    }
    o.push(n);
    o.sort();
    let dups: Vec<u64> = o.iter().step_by(17).copied().collect();
    o.extend(dups);
    o.sort();
    o
}

/// `values[i] = i % 251` (u8) over `n` positions, in `buf`; reduced by u64 offsets as u8
/// (wrapping), widened to u64 by a map, and by a plan over a counting u64 source; all checked
/// against closed forms.
fn big_pattern(ctx: &Context, r: &mut StdRng, n: usize, k: usize) {
    let what = format!("{ctx:?} n={n}");
    let chunk: usize = 251 << 20;
    let pattern: Vec<u8> = (0..chunk.min(n.div_ceil(251) * 251))
        .map(|i| (i % 251) as u8)
        .collect();
    let mut buf = ctx.zeros::<u8>(n).unwrap();
    let mut at = 0;
    while at < n {
        let len = pattern.len().min(n - at);
        buf.slice_mut(at..at + len)
            .copy_from_host(&pattern[..len])
            .unwrap();
        at += len;
    }
    drop(pattern);
    let offsets = big_offsets(r, n as u64, k);
    let segs = offsets.len();
    let ends: Vec<(u64, u64)> = (0..segs)
        .map(|i| (offsets[i], offsets.get(i + 1).copied().unwrap_or(n as u64)))
        .collect();
    let ob = ctx.upload(&offsets).unwrap();

    let mut out = poisoned::<u8>(ctx, segs);
    ctx.segreduce_csr(&buf, Csr::allow_empty(&ob), &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} u8: {e}"));
    let expect: Vec<u8> = ends
        .iter()
        .map(|&(a, b)| (pattern_prefix(b) - pattern_prefix(a)) as u8)
        .collect();
    check(&out.to_vec().unwrap(), &expect, &format!("{what} u8"));

    let widen = Map::new("widen_u8", |x: u8| x as u64, "(unsigned long long)x");
    let expect: Vec<u64> = ends
        .iter()
        .map(|&(a, b)| pattern_prefix(b) - pattern_prefix(a))
        .collect();
    let mut out = poisoned::<u64>(ctx, segs);
    ctx.segreduce_csr(
        &buf.map(&widen),
        Csr::allow_empty(&ob),
        &mut out,
        &Op::plus(),
    )
    .unwrap_or_else(|e| panic!("{what} widened: {e}"));
    check(&out.to_vec().unwrap(), &expect, &format!("{what} widened"));

    let plan = ctx
        .segreduce_plan::<u64, u64>(Csr::allow_empty(&ob), n)
        .unwrap();
    let mut out = poisoned::<u64>(ctx, segs);
    ctx.segreduce_apply(&plan, &buf.map(&widen), &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} widened plan: {e}"));
    check(
        &out.to_vec().unwrap(),
        &expect,
        &format!("{what} widened plan"),
    );

    let expect: Vec<u64> = ends.iter().map(|&(a, b)| counting_sum(a, b)).collect();
    let mut out = poisoned::<u64>(ctx, segs);
    ctx.segreduce_apply(&plan, &Counting::new(0u64, n), &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} counting plan: {e}"));
    check(
        &out.to_vec().unwrap(),
        &expect,
        &format!("{what} counting plan"),
    );

    // One segment over everything but the first item, which is its own: without support_empty.
    let o2 = ctx.upload(&[0u64, 1]).unwrap();
    let mut out = poisoned::<u64>(ctx, 2);
    ctx.segreduce_csr(&buf.map(&widen), Csr::new(&o2), &mut out, &Op::plus())
        .unwrap_or_else(|e| panic!("{what} one segment: {e}"));
    check(
        &out.to_vec().unwrap(),
        &[0, pattern_prefix(n as u64)],
        &format!("{what} one segment"),
    );
    // Indirect (the segments must cover all n positions): the last 1000 values (past 2^32 on
    // the big run), a window from the middle, a random one, an empty one, and the rest read from
    // near the start.
    let lens = [1000u64, 251 * 3, 1, 0, n as u64 - 1754];
    let io: Vec<u64> = offsets_of(&lens.map(|l| l as usize)).0;
    let src: Vec<u64> = lens
        .iter()
        .enumerate()
        .map(|(i, &l)| match i {
            0 => n as u64 - l,
            1 => n as u64 / 2 - 400,
            _ => r.random_range(0..=n as u64 - l),
        })
        .collect();
    let expect: Vec<u64> = (0..lens.len())
        .map(|i| pattern_prefix(src[i] + lens[i]) - pattern_prefix(src[i]))
        .collect();
    let iob = ctx.upload(&io).unwrap();
    let sb = ctx.upload(&src).unwrap();
    let mut out = poisoned::<u64>(ctx, lens.len());
    ctx.segreduce_csr_indirect(
        &buf.map(&widen),
        Csr::allow_empty(&iob),
        &sb,
        buf.len(),
        &mut out,
        &Op::plus(),
    )
    .unwrap_or_else(|e| panic!("{what} indirect: {e}"));
    check(&out.to_vec().unwrap(), &expect, &format!("{what} indirect"));
}

#[test]
fn closed_form_patterns_at_small_sizes() {
    assert_eq!(pattern_prefix(0), 0);
    assert_eq!(pattern_prefix(1), 0);
    assert_eq!(pattern_prefix(3), 3);
    assert_eq!(pattern_prefix(252), 250 * 251 / 2);
    assert_eq!(
        pattern_prefix(1000),
        (0..1000u64).map(|i| i % 251).sum::<u64>()
    );
    assert_eq!(counting_sum(3, 6), 12);
    let mut r = rng();
    for ctx in backends() {
        for n in [2000, 300_007] {
            big_pattern(&ctx, &mut r, n, 300);
        }
    }
}

#[test]
fn past_2_pow_32_values_on_gpu() {
    let Some(ctx) = big_gpu("about 5 GB") else {
        return;
    };
    let mut r = rng();
    big_pattern(&ctx, &mut r, (1 << 32) + 1000, 300);
}

/// u32 offsets whose largest start is `u32::MAX` (over `u32::MAX` positions and past 2^32;
/// a counting source, so no memory), some segments empty: such a start is a real segment, not
/// "no segment".
#[test]
fn u32_offsets_starting_at_u32_max() {
    let Some(ctx) = gpu() else { return };
    let m = u32::MAX as u64;
    for (n, offsets) in [
        (m, vec![0u64, 1 << 31, m, m]),
        (m, vec![0, m - 1, m]),
        (m, vec![0, 5, 5, m - 3000, m, m, m]),
        (m + 1, vec![0, m]),
        (m + 5000, vec![0, 7, m - 1, m]),
        (m + 5000, vec![0, m, m]),
    ] {
        let what = format!("{n} positions, offsets {offsets:?}");
        let ob = ctx.upload(&to_o::<u32>(&offsets)).unwrap();
        let expect: Vec<u64> = (0..offsets.len())
            .map(|i| counting_sum(offsets[i], offsets.get(i + 1).copied().unwrap_or(n)))
            .collect();
        let mut out = poisoned::<u64>(&ctx, offsets.len());
        let values = Counting::new(0u64, n as usize);
        ctx.segreduce_csr(&values, Csr::allow_empty(&ob), &mut out, &Op::plus())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        check(&out.to_vec().unwrap(), &expect, &what);
    }
}
