//! Bad lengths are errors that write nothing (outputs and the count); expressions that do not
//! compile fail with NVRTC's log; the context stays usable.

use super::*;

#[test]
fn bad_lengths_are_errors_and_write_nothing() {
    for ctx in backends() {
        let w = |s: &str| format!("{ctx:?} {s}");
        let pred = i32::predicate();
        let eq = i32::equality();
        let data = [1, 4, 4, 2, 7];
        let input = ctx.upload(&data).unwrap();
        let poison = [i32::MIN; 4];
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();

        // select_if: output too short; the count's buffer is untouched too.
        let mut out = ctx.upload(&poison).unwrap();
        let e = ctx
            .select_if(&input, &mut out, &pred, Count::Both(&mut count))
            .unwrap_err();
        expect_invalid(
            e,
            &[
                "select_if",
                "the output holds 4 elements but the input has 5",
            ],
            &w("select_if"),
        );
        assert_eq!(out.to_vec().unwrap(), poison, "{}", w("select_if: written"));
        assert_eq!(
            count.to_vec().unwrap(),
            [COUNT_POISON],
            "{}",
            w("select_if: count written")
        );
        still_usable(&ctx, &w("select_if"));

        // select_flagged: flags of another length.
        let flags = ctx.upload(&[1u8, 0, 1, 1]).unwrap();
        let mut out = ctx.upload(&[i32::MIN; 5]).unwrap();
        let e = ctx
            .select_flagged(&input, &flags, &mut out, Count::Device(&mut count))
            .unwrap_err();
        expect_invalid(e, &["select_flagged", "same length"], &w("select_flagged"));
        assert_eq!(
            out.to_vec().unwrap(),
            [i32::MIN; 5],
            "{}",
            w("select_flagged: written")
        );
        assert_eq!(count.to_vec().unwrap(), [COUNT_POISON]);
        let mut data_buf = ctx.upload(&data).unwrap();
        let e = ctx
            .select_flagged_in_place(&mut data_buf, &flags, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["select_flagged_in_place", "same length"],
            &w("flagged in place"),
        );
        assert_eq!(
            data_buf.to_vec().unwrap(),
            data,
            "{}",
            w("flagged in place: written")
        );
        still_usable(&ctx, &w("select_flagged"));

        // partition_if, partition_copy(_in_place): outputs too short.
        let mut out = ctx.upload(&poison).unwrap();
        let e = ctx
            .partition_if(&input, &mut out, &pred, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["partition_if", "holds 4 elements but the input has 5"],
            &w("partition_if"),
        );
        assert_eq!(out.to_vec().unwrap(), poison);
        let mut yes = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut no = ctx.upload(&poison).unwrap();
        let e = ctx
            .partition_copy(&input, &mut yes, &mut no, &pred, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["partition_copy", "rejected", "holds 4 elements"],
            &w("partition_copy"),
        );
        assert_eq!(
            yes.to_vec().unwrap(),
            [i32::MIN; 5],
            "{}",
            w("partition_copy: written")
        );
        assert_eq!(no.to_vec().unwrap(), poison);
        let mut data_buf = ctx.upload(&data).unwrap();
        let e = ctx
            .partition_copy_in_place(&mut data_buf, &mut no, &pred, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["partition_copy_in_place", "holds 4 elements"],
            &w("partition_copy_in_place"),
        );
        assert_eq!(
            data_buf.to_vec().unwrap(),
            data,
            "{}",
            w("partition_copy_in_place: data")
        );
        assert_eq!(no.to_vec().unwrap(), poison);
        still_usable(&ctx, &w("partition"));

        // unique, unique_by_key.
        let mut out = ctx.upload(&poison).unwrap();
        let e = ctx.unique(&input, &mut out, &eq, Count::Host).unwrap_err();
        expect_invalid(
            e,
            &["unique", "holds 4 elements but the input has 5"],
            &w("unique"),
        );
        assert_eq!(out.to_vec().unwrap(), poison);
        let short_values = ctx.upload(&[1u32, 2, 3, 4]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut vout = ctx.upload(&[u32::MAX; 5]).unwrap();
        let e = ctx
            .unique_by_key(
                &input,
                &short_values,
                &mut kout,
                &mut vout,
                &eq,
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["unique_by_key", "4 values for 5 keys"],
            &w("unique_by_key"),
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        assert_eq!(vout.to_vec().unwrap(), [u32::MAX; 5]);
        let values = ctx.upload(&[1u32, 2, 3, 4, 5]).unwrap();
        let mut vshort = ctx.upload(&[u32::MAX; 4]).unwrap();
        let e = ctx
            .unique_by_key(&input, &values, &mut kout, &mut vshort, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["unique_by_key", "values' output holds 4"],
            &w("unique_by_key values"),
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        let mut kb = ctx.upload(&data).unwrap();
        let mut vb = ctx.upload(&[1u32, 2, 3, 4]).unwrap();
        let e = ctx
            .unique_by_key_in_place(&mut kb, &mut vb, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["unique_by_key_in_place", "same length"],
            &w("unique_by_key_in_place"),
        );
        assert_eq!(kb.to_vec().unwrap(), data);
        assert_eq!(vb.to_vec().unwrap(), [1, 2, 3, 4]);
        still_usable(&ctx, &w("unique"));

        // run_length_encode: lengths or runs' output too short.
        let mut runs = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut lengths = ctx.upload(&[u32::MAX; 4]).unwrap();
        let e = ctx
            .run_length_encode(&input, &mut runs, &mut lengths, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["run_length_encode", "lengths' output holds 4"],
            &w("rle"),
        );
        assert_eq!(runs.to_vec().unwrap(), [i32::MIN; 5]);
        assert_eq!(lengths.to_vec().unwrap(), [u32::MAX; 4]);
        let mut runs = ctx.upload(&[i32::MIN; 3]).unwrap();
        let mut lengths = ctx.upload(&[u32::MAX; 5]).unwrap();
        let e = ctx
            .run_length_encode(&input, &mut runs, &mut lengths, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["run_length_encode", "holds 3 elements but the input has 5"],
            &w("rle runs"),
        );
        assert_eq!(lengths.to_vec().unwrap(), [u32::MAX; 5]);
        let mut kb = ctx.upload(&data).unwrap();
        let mut lengths = ctx.upload(&[u32::MAX; 2]).unwrap();
        let e = ctx
            .run_length_encode_in_place(&mut kb, &mut lengths, &eq, Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["run_length_encode_in_place", "holds 2 elements"],
            &w("rle in place"),
        );
        assert_eq!(kb.to_vec().unwrap(), data);
        still_usable(&ctx, &w("rle"));

        // reduce_by_key: values of another length, outputs too short.
        let vals = ctx.upload(&[1i64, 2, 3, 4, 5, 6]).unwrap();
        let mut kout = ctx.upload(&[i32::MIN; 5]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();
        let e = ctx
            .reduce_by_key(
                &input,
                &vals,
                &mut kout,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(e, &["reduce_by_key", "6 values for 5 keys"], &w("rbk"));
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6]);
        let vals = ctx.upload(&[1i64, 2, 3, 4, 5]).unwrap();
        let mut kshort = ctx.upload(&[i32::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key(
                &input,
                &vals,
                &mut kshort,
                &mut vout,
                &eq,
                &Op::plus(),
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["reduce_by_key", "keys' output holds 4"],
            &w("rbk keys out"),
        );
        assert_eq!(kshort.to_vec().unwrap(), [i32::MIN; 4]);
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6]);
        let mut vshort = ctx.upload(&[i64::MIN; 4]).unwrap();
        let e = ctx
            .reduce_by_key(
                &input,
                &vals,
                &mut kout,
                &mut vshort,
                &eq,
                &Op::plus(),
                Count::Host,
            )
            .unwrap_err();
        expect_invalid(
            e,
            &["reduce_by_key", "values' output holds 4"],
            &w("rbk values out"),
        );
        assert_eq!(kout.to_vec().unwrap(), [i32::MIN; 5]);
        let mut kb = ctx.upload(&data).unwrap();
        let mut vb = ctx.upload(&[1i64, 2]).unwrap();
        let e = ctx
            .reduce_by_key_in_place(&mut kb, &mut vb, &eq, &Op::plus(), Count::Host)
            .unwrap_err();
        expect_invalid(
            e,
            &["reduce_by_key_in_place", "2 values for 5 keys"],
            &w("rbk in place"),
        );
        assert_eq!(kb.to_vec().unwrap(), data);
        assert_eq!(vb.to_vec().unwrap(), [1, 2]);

        // An empty buffer for the count.
        let mut empty = ctx.zeros::<u64>(0).unwrap();
        let mut out = ctx.upload(&[i32::MIN; 5]).unwrap();
        let e = ctx
            .select_if(&input, &mut out, &pred, Count::Device(&mut empty))
            .unwrap_err();
        expect_invalid(e, &["needs room for one element"], &w("empty count"));
        assert_eq!(out.to_vec().unwrap(), [i32::MIN; 5]);
        still_usable(&ctx, &w("rbk"));
    }
}

/// A CUDA expression that does not compile: `Error::Compile` with NVRTC's log in the message,
/// nothing written, the context still usable. (The CPU backend runs the Rust side only.)
#[test]
fn expressions_that_do_not_compile() {
    let broken_pred = Predicate::new("broken", |x: &i32| x % 2 == 0, "x +* 2");
    let broken_eq = Equality::new("broken", |a: &i32, b: &i32| a == b, "a +* b");
    let broken_op = Op::new("broken", 0i64, |a, b| a + b, "a +* b");
    let data = [3, 3, 4, 6, 6, 6];
    for ctx in backends() {
        let input = ctx.upload(&data).unwrap();
        let values = ctx.upload(&[1i64; 6]).unwrap();
        let mut out = ctx.upload(&[i32::MIN; 6]).unwrap();
        let mut vout = ctx.upload(&[i64::MIN; 6]).unwrap();
        let mut count = ctx.upload(&[COUNT_POISON]).unwrap();
        let results = [
            (
                "select_if",
                ctx.select_if(&input, &mut out, &broken_pred, Count::Both(&mut count)),
            ),
            (
                "unique",
                ctx.unique(&input, &mut out, &broken_eq, Count::Device(&mut count)),
            ),
            (
                "reduce_by_key",
                ctx.reduce_by_key(
                    &input,
                    &values,
                    &mut out,
                    &mut vout,
                    &Equality::equal_to(),
                    &broken_op,
                    Count::Device(&mut count),
                ),
            ),
        ];
        if !ctx.is_gpu() {
            for (name, res) in results {
                res.unwrap_or_else(|e| panic!("{name}: the CPU backend does not compile: {e}"));
            }
            continue;
        }
        for (name, res) in results {
            let err = res.expect_err(name);
            let msg = err.to_string();
            match &err {
                Error::Compile { log, .. } => {
                    assert!(!log.trim().is_empty(), "{name}: empty NVRTC log: {msg}");
                    assert!(
                        msg.contains(log.as_str()),
                        "{name}: the log is not in {msg:?}"
                    );
                    assert!(msg.contains("NVRTC log"), "{name}: {msg}");
                }
                other => panic!("{name}: expected Error::Compile, got {other:?}"),
            }
        }
        assert_eq!(out.to_vec().unwrap(), [i32::MIN; 6], "nothing written");
        assert_eq!(vout.to_vec().unwrap(), [i64::MIN; 6], "nothing written");
        assert_eq!(count.to_vec().unwrap(), [COUNT_POISON], "no count written");
        still_usable(&ctx, "after compile errors");
        // The same primitives with working expressions, on the same context.
        let c = ctx
            .unique(&input, &mut out, &Equality::equal_to(), Count::Host)
            .unwrap();
        assert_eq!(c, Some(3));
        assert_eq!(out.to_vec().unwrap()[..3], [3, 4, 6]);
    }
}
