//! Sorting records by a struct key: a user `#[repr(C)]` type, sorted with `sort` and `sort_pairs`
//! under a custom `Comparator` (a Rust function for the CPU, a CUDA expression for the GPU).
//!
//! Run: `cargo run --release -p mgpu --example sort_records` (`MGPU_BACKEND=cpu` forces the CPU).

use mgpu::{Comparator, Context, Element};

/// An order line: which customer, how much, and when. `#[repr(C)]` and `Pod` make it plain bytes
/// that the GPU can read as the CUDA struct declared below.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
struct Order {
    customer: u32,
    cents: u32,
    day: u32,
}

impl Element for Order {
    const CUDA_TYPE: &'static str = "Order";
    // Same fields, same order, same sizes: checked against the Rust type when a kernel compiles.
    const CUDA_DECLARATION: &'static str = "struct Order { unsigned customer, cents, day; };";
}

fn main() -> mgpu::Result<()> {
    let ctx = Context::new()?; // the GPU when there is one, else the CPU
    println!("backend: {}", ctx.description());

    // A small pseudo-random order book (a linear congruential generator keeps it reproducible).
    let mut seed = 12345u32;
    let mut next = move || {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        seed >> 8
    };
    let orders: Vec<Order> = (0..10_000)
        .map(|_| Order {
            customer: next() % 50,
            cents: next() % 100_000,
            day: next() % 365,
        })
        .collect();

    // 1. `sort` by (customer ascending, then cents descending). The CPU gets the Rust closure, the
    //    GPU the CUDA expression over `a` and `b`; both must define the same strict weak order.
    let by_customer_then_biggest = Comparator::new(
        "customer_then_biggest",
        |a: &Order, b: &Order| (a.customer, b.cents) < (b.customer, a.cents),
        "a.customer < b.customer || (a.customer == b.customer && a.cents > b.cents)",
    );
    let mut sorted = ctx.upload(&orders)?;
    ctx.sort(&mut sorted, &by_customer_then_biggest)?;
    let sorted = sorted.to_vec()?;

    // The sort is stable, so it must agree exactly with the standard library's stable sort.
    let mut expect = orders.clone();
    expect.sort_by(|a, b| by_customer_then_biggest.ordering(a, b));
    assert_eq!(sorted, expect);
    println!("customer 0's three biggest orders:");
    for o in sorted.iter().take(3) {
        println!(
            "  customer {:2}  {:6.2}  day {:3}",
            o.customer,
            o.cents as f64 / 100.0,
            o.day
        );
    }

    // 2. `sort_pairs` (Thrust's sort_by_key): sort the records by day and carry each record's
    //    original position along as its value, to find where every order came from.
    let by_day = Comparator::new(
        "by_day",
        |a: &Order, b: &Order| a.day < b.day,
        "a.day < b.day",
    );
    let mut keys = ctx.upload(&orders)?;
    let positions: Vec<u32> = (0..orders.len() as u32).collect();
    let mut values = ctx.upload(&positions)?;
    ctx.sort_pairs(&mut keys, &mut values, &by_day)?;
    let (keys, values) = (keys.to_vec()?, values.to_vec()?);

    // Days ascend; each value points back to its record; equal days keep their input order.
    assert!(keys.windows(2).all(|w| w[0].day <= w[1].day));
    for (k, &v) in keys.iter().zip(&values) {
        assert_eq!(*k, orders[v as usize]);
    }
    assert!(keys
        .windows(2)
        .zip(values.windows(2))
        .all(|(k, v)| k[0].day != k[1].day || v[0] < v[1]));
    println!(
        "first order of the year: {:?} (input position {})",
        keys[0], values[0]
    );
    println!(
        "last order of the year:  {:?} (input position {})",
        keys[keys.len() - 1],
        values[values.len() - 1]
    );
    println!("ok");
    Ok(())
}
