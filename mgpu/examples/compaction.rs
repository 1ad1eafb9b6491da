//! Stream compaction: keep what a predicate accepts (`select_if`), collapse runs (`unique`,
//! `run_length_encode`), and sum per key (`reduce_by_key`), each in one pass over the input.
//!
//! The data is a day of sensor readings: (sensor id, temperature in tenths of a degree), grouped
//! by sensor as a log sorted by sensor would be.
//!
//! Run: `cargo run --release -p mgpu --example compaction` (`MGPU_BACKEND=cpu` forces the CPU).

use mgpu::{Context, Count, Equality, Op, Predicate};

fn main() -> mgpu::Result<()> {
    let ctx = Context::new()?; // the GPU when there is one, else the CPU
    println!("backend: {}", ctx.description());

    // Sensor s reports 10 + s % 7 times; temperatures wander between -5.0 and 39.9 degrees.
    let mut sensors = Vec::new();
    let mut temps = Vec::new();
    for s in 0..1000u32 {
        for r in 0..10 + s % 7 {
            sensors.push(s);
            temps.push(((s * 37 + r * 101) % 450) as i32 - 50);
        }
    }
    let n = sensors.len();
    let sensor_ids = ctx.upload(&sensors)?;
    let readings = ctx.upload(&temps)?;

    // 1. select_if: the readings above 35.0 degrees, in input order. The predicate is a Rust
    //    closure for the CPU and a CUDA expression over `x` for the GPU. `Count::Host` returns
    //    the number kept (`Count::Device` would leave it in GPU memory instead).
    let hot = Predicate::new("hot", |t: &i32| *t > 350, "x > 350");
    let mut kept = ctx.zeros::<i32>(n)?;
    let n_hot = ctx
        .select_if(&readings, &mut kept, &hot, Count::Host)?
        .expect("Count::Host returns the count") as usize;
    let kept = kept.slice(..n_hot).to_vec()?;
    let expect: Vec<i32> = temps.iter().copied().filter(|&t| t > 350).collect();
    assert_eq!(kept, expect);
    println!("{n} readings, {n_hot} above 35.0 degrees");

    // 2. unique: the first item of each run of equal items, here the distinct sensor ids.
    let mut distinct = ctx.zeros::<u32>(n)?;
    let n_sensors = ctx
        .unique(
            &sensor_ids,
            &mut distinct,
            &Equality::equal_to(),
            Count::Host,
        )?
        .unwrap() as usize;
    assert_eq!(n_sensors, 1000);
    assert_eq!(
        distinct.slice(..n_sensors).to_vec()?,
        (0..1000).collect::<Vec<u32>>()
    );

    // 3. run_length_encode: each run's item and its length (counted in u32): readings per sensor.
    let mut run_ids = ctx.zeros::<u32>(n)?;
    let mut run_lengths = ctx.zeros::<u32>(n)?;
    let runs = ctx
        .run_length_encode(
            &sensor_ids,
            &mut run_ids,
            &mut run_lengths,
            &Equality::equal_to(),
            Count::Host,
        )?
        .unwrap() as usize;
    assert_eq!(runs, n_sensors);
    let run_ids = run_ids.slice(..runs).to_vec()?;
    let run_lengths = run_lengths.slice(..runs).to_vec()?;
    for (&s, &len) in run_ids.iter().zip(&run_lengths) {
        assert_eq!(len, 10 + s % 7);
    }

    // 4. reduce_by_key: per sensor (a run of equal keys), the sum of its readings; with the
    //    lengths above that gives each sensor's mean. Any associative operator works here.
    let mut keys_out = ctx.zeros::<u32>(n)?;
    let mut sums = ctx.zeros::<i32>(n)?;
    let groups = ctx
        .reduce_by_key(
            &sensor_ids,
            &readings,
            &mut keys_out,
            &mut sums,
            &Equality::equal_to(),
            &Op::plus(),
            Count::Host,
        )?
        .unwrap() as usize;
    assert_eq!(groups, n_sensors);
    let keys_out = keys_out.slice(..groups).to_vec()?;
    let sums = sums.slice(..groups).to_vec()?;
    assert_eq!(keys_out, run_ids);
    // The per-sensor maximum, with the same call and another operator.
    let mut maxima = ctx.zeros::<i32>(n)?;
    let mut keys_again = ctx.zeros::<u32>(n)?;
    ctx.reduce_by_key(
        &sensor_ids,
        &readings,
        &mut keys_again,
        &mut maxima,
        &Equality::equal_to(),
        &Op::maximum(),
        Count::Host,
    )?;
    let maxima = maxima.slice(..groups).to_vec()?;

    // Check against a sequential pass.
    let mut start = 0;
    for g in 0..groups {
        let len = run_lengths[g] as usize;
        let group = &temps[start..start + len];
        assert!(sensors[start..start + len]
            .iter()
            .all(|&s| s == keys_out[g]));
        assert_eq!(sums[g], group.iter().sum::<i32>());
        assert_eq!(maxima[g], *group.iter().max().unwrap());
        start += len;
    }
    assert_eq!(start, n);

    for g in [0, 1, 999] {
        println!(
            "  sensor {:3}: {:2} readings, mean {:5.1}, max {:5.1}",
            keys_out[g],
            run_lengths[g],
            sums[g] as f64 / run_lengths[g] as f64 / 10.0,
            maxima[g] as f64 / 10.0
        );
    }
    println!("ok");
    Ok(())
}
