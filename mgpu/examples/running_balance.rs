//! A running account balance with a custom, non-commutative scan operator, and its final value
//! with `reduce` and a `Total`.
//!
//! Each transaction is an affine map of the balance, `balance -> rate * balance + amount` (a
//! deposit or withdrawal has rate 1; monthly interest has rate 1.01 and amount 0). Composing two of
//! them is again one of them, so the running composition is a scan, and the balance after every
//! transaction falls out of it. Composition is associative but not commutative: interest and then
//! a deposit is not a deposit and then interest, and the library keeps operand order.
//!
//! Run: `cargo run --release -p mgpu --example running_balance` (`MGPU_BACKEND=cpu` forces the CPU).

use mgpu::{Context, Element, Op, ScanOptions, Total};

/// `balance -> rate * balance + amount`, in cents (f64 keeps cents exact at these magnitudes up
/// to rounding from the rate; the checks below allow for that).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct Step {
    rate: f64,
    amount: f64,
}

impl Element for Step {
    const CUDA_TYPE: &'static str = "Step";
    const CUDA_DECLARATION: &'static str = "struct Step { double rate; double amount; };";
}

/// "f, then g": `g(f(x)) = g.rate * (f.rate * x + f.amount) + g.amount`.
fn then(f: Step, g: Step) -> Step {
    Step {
        rate: g.rate * f.rate,
        amount: g.rate * f.amount + g.amount,
    }
}

fn main() -> mgpu::Result<()> {
    let ctx = Context::new()?; // the GPU when there is one, else the CPU
    println!("backend: {}", ctx.description());

    // The operator: identity (rate 1, amount 0), the Rust function for the CPU, and the same
    // function as a CUDA expression over `a` and `b` (here through a helper device function).
    let compose = Op::new(
        "then",
        Step {
            rate: 1.0,
            amount: 0.0,
        },
        then,
        "then(a, b)",
    )
    .with_cuda_helpers(
        "__device__ __forceinline__ Step then(Step f, Step g) {\n\
               return Step{ g.rate * f.rate, g.rate * f.amount + g.amount };\n}\n",
    );
    // Not declared `.commutative(true)`: order-preserving code paths are used.

    // Two years of activity: a salary, some spending, and 1% interest at each month's end.
    let mut steps = Vec::new();
    for month in 0..24 {
        steps.push(Step {
            rate: 1.0,
            amount: 300_000.0,
        }); // salary
        for day in 0..20 {
            let spend = ((month * 31 + day * 7) % 97 + 5) as f64 * 100.0;
            steps.push(Step {
                rate: 1.0,
                amount: -spend,
            });
        }
        steps.push(Step {
            rate: 1.01,
            amount: 0.0,
        }); // interest
    }
    let opening = 100_000.0; // the opening balance, in cents

    // Inclusive scan: element i is the composition of transactions 0..=i. The total (the
    // composition of all of them) comes back to the host as well.
    let input = ctx.upload(&steps)?;
    let mut prefix = ctx.zeros::<Step>(steps.len())?;
    let total = ctx
        .scan_with(
            &input,
            &mut prefix,
            &compose,
            ScanOptions::inclusive(),
            Total::Host,
        )?
        .expect("Total::Host returns the total");
    let balances: Vec<f64> = prefix
        .to_vec()?
        .iter()
        .map(|p| p.rate * opening + p.amount)
        .collect();

    // Check against a sequential loop over the transactions.
    let mut balance: f64 = opening;
    for (s, &b) in steps.iter().zip(&balances) {
        balance = s.rate * balance + s.amount;
        assert!(
            (b - balance).abs() < 1e-6 * balance.abs().max(1.0),
            "{b} vs {balance}"
        );
    }
    // `reduce` with the same operator gives the composition of all transactions, like the scan's
    // total. `reduce_with` and a `Total` say where it goes: here both to element 0 of a device
    // buffer (without waiting, for later kernels) and back to the host.
    let mut on_device = ctx.zeros::<Step>(1)?;
    let all = ctx
        .reduce_with(&input, &compose, Total::Both(&mut on_device), None)?
        .expect("Total::Both returns the result");
    assert_eq!(on_device.to_vec()?, vec![all]);
    for t in [total, all] {
        let closing = t.rate * opening + t.amount;
        assert!((closing - balance).abs() < 1e-6 * balance.abs());
    }
    // Order matters: reversing the transactions gives another composition.
    let reversed = steps
        .iter()
        .rev()
        .fold(compose.identity(), |acc, &s| then(acc, s));
    assert!((reversed.amount - all.amount).abs() > 1.0);

    println!("transactions: {}", steps.len());
    for month in [0usize, 11, 23] {
        let i = (month + 1) * 22 - 1; // the interest step ending the month
        println!(
            "  after month {:2}: {:10.2}",
            month + 1,
            balances[i] / 100.0
        );
    }
    println!(
        "closing balance: {:.2} (overall: x -> {:.4} x + {:.2})",
        balance / 100.0,
        all.rate,
        all.amount / 100.0
    );

    // A second reduce with a built-in operator: the lowest balance reached.
    let low = ctx.reduce(&ctx.upload(&balances)?, &Op::minimum())?;
    assert_eq!(low, balances.iter().cloned().fold(f64::INFINITY, f64::min));
    println!("lowest balance: {:.2}", low / 100.0);
    println!("ok");
    Ok(())
}
