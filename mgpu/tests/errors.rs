//! Bad input returns an `Err` that says what is wrong, writes nothing, and leaves the context usable.

mod common;
use common::*;
use mgpu::{Context, Error, Op, ScanOptions, Total, Tuning};

#[test]
fn output_shorter_than_input() {
    for ctx in backends() {
        let input = ctx.upload(&[1, 2, 3, 4]).unwrap();
        let mut out = ctx.upload(&[9, 9, 9]).unwrap();
        let err = ctx
            .scan(&input, &mut out, &Op::plus(), ScanOptions::exclusive())
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("output holds 3 elements but the input has 4"),
            "{err}"
        );
        assert_eq!(out.to_vec().unwrap(), vec![9, 9, 9], "nothing written");
        // Still usable.
        assert_eq!(ctx.reduce(&input, &Op::plus()).unwrap(), 10);
    }
}

#[test]
fn empty_total_buffer() {
    for ctx in backends() {
        let input = ctx.upload(&[1, 2]).unwrap();
        let mut total = ctx.zeros::<i32>(0).unwrap();
        let err = ctx
            .reduce_with(&input, &Op::plus(), Total::Device(&mut total), None)
            .unwrap_err();
        assert!(
            err.to_string().contains("needs room for one element"),
            "{err}"
        );
    }
}

#[test]
fn buffers_of_another_backend() {
    let Some(gpu) = gpu() else { return };
    let cpu = Context::cpu();
    let host_buf = cpu.upload(&[1, 2, 3]).unwrap();
    let err = gpu.reduce(&host_buf, &Op::plus()).unwrap_err();
    assert!(
        err.to_string()
            .contains("lives on the CPU but the context is a GPU"),
        "{err}"
    );
    let dev_buf = gpu.upload(&[1, 2, 3]).unwrap();
    let err = cpu.reduce(&dev_buf, &Op::plus()).unwrap_err();
    assert!(err.to_string().contains("lives on a GPU"), "{err}");
}

#[test]
fn an_operator_that_does_not_compile() {
    let Some(ctx) = gpu() else { return };
    let op = Op::new("broken", 0i32, |a, b| a + b, "a +* b");
    let input = ctx.upload(&[1, 2, 3]).unwrap();
    let err = ctx.reduce(&input, &op).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("failed to compile") && msg.contains("NVRTC log"),
        "{msg}"
    );
    let mut out = ctx.upload(&[7, 7, 7]).unwrap();
    assert!(ctx
        .scan(&input, &mut out, &op, ScanOptions::exclusive())
        .is_err());
    assert_eq!(out.to_vec().unwrap(), vec![7, 7, 7], "nothing written");
    assert_eq!(
        ctx.reduce(&input, &Op::plus()).unwrap(),
        6,
        "context still usable"
    );
}

#[test]
fn bad_tunings_are_rejected() {
    for ctx in backends() {
        let input = ctx.upload(&[1u32; 100]).unwrap();
        let mut out = ctx.zeros::<u32>(100).unwrap();
        for bad in [
            Tuning::new(100, 7, 1),
            Tuning::new(256, 0, 1),
            Tuning::new(1024, 63, 1),
            Tuning::new(256, 7, 9),
        ] {
            let r = ctx.scan(
                &input,
                &mut out,
                &Op::plus(),
                ScanOptions::exclusive().with_tuning(bad),
            );
            let err = r.unwrap_err();
            assert!(err.to_string().contains("tuning"), "{err}");
        }
    }
}

#[test]
fn forcing_an_unknown_backend() {
    // MGPU_BACKEND is read by Context::new; an unknown value is an error, not a silent fallback.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_context_new", "--nocapture"])
        .env("MGPU_BACKEND", "tpu")
        .env("MGPU_ERRORS_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("expected `cpu` or `cuda`"), "{text}");
}

#[test]
fn child_context_new() {
    if std::env::var("MGPU_ERRORS_CHILD").is_ok() {
        println!("{}", Context::new().unwrap_err());
    }
}

/// Bad input comes as variants a program can match: the call, the argument, the index, what is
/// wrong; the message still says it in words.
#[test]
fn bad_input_is_structured() {
    use mgpu::{Csr, LengthRule, OffsetProblem};
    let ctx = Context::cpu();
    let data = ctx.upload(&[1, 2, 3, 4]).unwrap();
    let mut short = ctx.zeros::<i32>(3).unwrap();
    let err = ctx
        .scan(&data, &mut short, &Op::plus(), ScanOptions::exclusive())
        .unwrap_err();
    assert!(err.is_invalid_input(), "{err:?}");
    match err {
        Error::LengthMismatch {
            call: "scan",
            argument: "the output",
            actual: 3,
            expected: 4,
            rule: LengthRule::AtLeast,
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    match data.try_slice(2..9).unwrap_err() {
        Error::RangeOutOfBounds { len: 4, .. } => {}
        other => panic!("{other:?}"),
    }
    let offsets = ctx.upload(&[0u32, 1, 1, 3]).unwrap();
    let mut out = ctx.zeros::<i32>(4).unwrap();
    let err = ctx
        .segreduce_csr(&data, Csr::new(&offsets), &mut out, &Op::plus())
        .unwrap_err();
    let text = err.to_string();
    match err {
        Error::InvalidOffset {
            call: "segreduce_csr",
            index: 2,
            value: 1,
            previous: Some(1),
            count: 4,
            problem: OffsetProblem::EmptySegment,
        } => assert!(text.contains("Csr::allow_empty"), "{text}"),
        other => panic!("{other:?}"),
    }
    ctx.segreduce_csr(&data, Csr::allow_empty(&offsets), &mut out, &Op::plus())
        .unwrap();
    assert_eq!(out.to_vec().unwrap(), [1, 0, 5, 4]);
}
