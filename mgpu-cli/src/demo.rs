//! `mgpu demo`: the seed's demonstrations, on the seed's printed inputs, in the seed's format.

use mgpu::{Comparator, Context, Count, Csr, Equality, Op, ScanOptions, Total};

/// The input of the seed's scan demo (100 integers in 0..=9).
pub const SCAN_INPUT: [i32; 100] = [
    8, 1, 9, 8, 1, 9, 9, 2, 6, 3, 0, 5, 2, 1, 5, 9, 9, 9, 9, 9, 1, 7, 9, 9, 9, 1, 4, 7, 8, 2, 1, 0,
    4, 1, 9, 6, 7, 8, 9, 5, 6, 7, 0, 3, 8, 2, 9, 6, 6, 3, 7, 7, 7, 4, 3, 4, 6, 1, 1, 3, 7, 7, 0, 3,
    2, 8, 0, 1, 0, 9, 8, 8, 6, 1, 3, 7, 9, 4, 0, 6, 4, 1, 3, 2, 7, 0, 7, 0, 1, 4, 4, 4, 4, 4, 6, 7,
    7, 9, 7, 8,
];

/// The input of the seed's max-reduce demo (100 integers in 0..=999).
pub const MAX_INPUT: [i32; 100] = [
    276, 705, 679, 2, 655, 710, 162, 643, 118, 456, 498, 773, 959, 573, 340, 876, 585, 808, 223,
    17, 751, 821, 255, 820, 505, 940, 699, 412, 890, 423, 959, 580, 547, 158, 138, 761, 149, 230,
    257, 809, 840, 988, 254, 332, 814, 299, 243, 13, 929, 217, 349, 907, 196, 848, 251, 955, 616,
    778, 473, 987, 351, 67, 830, 793, 585, 594, 549, 732, 917, 695, 285, 679, 757, 392, 753, 561,
    380, 208, 567, 527, 75, 404, 53, 352, 530, 592, 779, 356, 934, 964, 129, 154, 568, 394, 469,
    387, 11, 726, 337, 388,
];

/// The input of the seed's sort-keys demo (100 integers in 0..=99).
pub const SORT_KEYS_INPUT: [i32; 100] = [
    5, 95, 68, 53, 4, 87, 7, 93, 52, 66, 9, 28, 81, 6, 81, 23, 72, 70, 14, 19, 65, 42, 51, 93, 97,
    14, 64, 64, 80, 47, 45, 43, 43, 24, 82, 50, 8, 90, 13, 7, 17, 71, 39, 61, 83, 18, 80, 39, 6,
    27, 39, 85, 52, 90, 41, 61, 65, 18, 62, 51, 29, 82, 43, 35, 1, 81, 98, 29, 16, 17, 10, 49, 37,
    19, 19, 86, 48, 20, 33, 61, 95, 87, 92, 39, 5, 94, 73, 16, 26, 97, 42, 56, 54, 59, 94, 13, 41,
    56, 98, 55,
];

/// The keys of the seed's sort-pairs demo (values are 0..100).
pub const SORT_PAIRS_INPUT: [i32; 100] = [
    30, 31, 70, 12, 66, 73, 53, 24, 69, 82, 66, 18, 17, 31, 12, 88, 99, 67, 17, 73, 3, 6, 56, 13,
    88, 8, 66, 0, 19, 45, 36, 63, 46, 52, 98, 49, 15, 33, 85, 25, 64, 23, 37, 17, 19, 59, 42, 72,
    48, 87, 12, 70, 58, 23, 22, 47, 38, 1, 58, 74, 25, 65, 29, 7, 61, 47, 26, 99, 82, 53, 98, 89,
    73, 77, 34, 20, 58, 90, 10, 37, 90, 84, 87, 32, 81, 32, 26, 65, 59, 58, 2, 4, 42, 76, 31, 49,
    16, 48, 17, 42,
];

/// The segment starts (CSR) of the seed's segmented reduce-CSR demo.
pub const SEGREDUCE_STARTS: [u32; 7] = [0, 9, 19, 25, 71, 87, 97];

/// The values of the seed's segmented reduce-CSR demo (100 integers in 1..=5).
pub const SEGREDUCE_VALUES: [i32; 100] = [
    1, 5, 5, 1, 2, 5, 1, 1, 4, 4, 5, 3, 4, 4, 4, 2, 2, 4, 2, 5, 5, 1, 5, 1, 4, 5, 1, 4, 2, 2, 2, 3,
    3, 1, 4, 2, 4, 2, 1, 2, 5, 1, 2, 2, 3, 1, 2, 5, 4, 1, 2, 5, 4, 2, 4, 1, 3, 2, 4, 4, 4, 4, 4, 3,
    4, 4, 1, 5, 1, 1, 3, 2, 3, 1, 4, 1, 1, 4, 4, 4, 3, 5, 5, 3, 2, 1, 5, 5, 4, 5, 4, 2, 2, 3, 5, 5,
    1, 4, 1, 5,
];

/// The keys of the seed's reduce-by-key demo (runs of equal keys).
pub const RBK_KEYS: [i32; 100] = [
    0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
    2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6,
    6, 6, 6, 6, 6, 7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8,
    8, 8, 8, 8,
];

/// The values of the seed's reduce-by-key demo (100 integers in 1..=5).
pub const RBK_VALUES: [i32; 100] = [
    2, 4, 2, 4, 1, 5, 3, 2, 4, 4, 2, 5, 2, 2, 5, 3, 3, 5, 3, 3, 2, 2, 1, 4, 4, 2, 1, 4, 1, 3, 1, 3,
    2, 4, 2, 5, 1, 2, 1, 5, 4, 4, 1, 5, 4, 1, 5, 2, 3, 4, 1, 2, 4, 2, 5, 4, 3, 4, 5, 3, 3, 4, 2, 1,
    1, 2, 3, 3, 2, 2, 2, 4, 1, 5, 5, 2, 2, 4, 3, 1, 3, 5, 4, 1, 2, 3, 2, 2, 5, 5, 1, 3, 3, 3, 4, 5,
    5, 2, 4, 3,
];

/// The seed's PrintArray layout: ten values a row, each row led by the index of its first value.
pub fn format_array<T: std::fmt::Display>(data: &[T]) -> String {
    let mut s = String::new();
    for (row, chunk) in data.chunks(10).enumerate() {
        s += &format!("{:5}: ", row * 10);
        for x in chunk {
            s += &format!(" {x:4}");
        }
        s.push('\n');
    }
    s
}

/// REDUCTION AND SCAN DEMONSTRATION.
pub fn scan(ctx: &Context) -> mgpu::Result<String> {
    let mut out = String::from("\n\nREDUCTION AND SCAN DEMONSTRATION:\n\n");
    let mut data = ctx.upload(&SCAN_INPUT)?;
    out += "Input array:\n";
    out += &format_array(&data.to_vec()?);
    let total = ctx.reduce(&data, &Op::plus())?;
    out += &format!("Reduction total: {total}\n\n");
    let total = ctx
        .scan_in_place_with(
            &mut data,
            &Op::plus(),
            ScanOptions::exclusive(),
            Total::Host,
        )?
        .expect("host total requested");
    out += "Exclusive scan:\n";
    out += &format_array(&data.to_vec()?);
    out += &format!("Scan total: {total}\n");
    Ok(out)
}

/// MAX-REDUCE DEMONSTRATION.
pub fn max_reduce(ctx: &Context) -> mgpu::Result<String> {
    let mut out = String::from("\n\nMAX-REDUCE DEMONSTRATION:\n\n");
    let data = ctx.upload(&MAX_INPUT)?;
    out += "Input array:\n";
    out += &format_array(&data.to_vec()?);
    let mut scan = ctx.zeros::<i32>(data.len())?;
    ctx.scan(&data, &mut scan, &Op::maximum(), ScanOptions::inclusive())?;
    out += "\nInclusive max scan:\n";
    out += &format_array(&scan.to_vec()?);
    let reduce = ctx.reduce(&data, &Op::maximum())?;
    // The seed's printed output has no blank line here (its source prints one).
    out += &format!("Max reduction: {reduce}.\n");
    Ok(out)
}

/// SORT KEYS DEMONSTRATION.
pub fn sort_keys(ctx: &Context) -> mgpu::Result<String> {
    let mut out = String::from("\n\nSORT KEYS DEMONSTRATION:\n\n");
    let mut data = ctx.upload(&SORT_KEYS_INPUT)?;
    out += "Input:\n";
    out += &format_array(&data.to_vec()?);
    ctx.sort(&mut data, &Comparator::less())?;
    out += "\nSorted output:\n";
    out += &format_array(&data.to_vec()?);
    Ok(out)
}

/// SORT PAIRS DEMONSTRATION (values: the keys' input positions).
pub fn sort_pairs(ctx: &Context) -> mgpu::Result<String> {
    let mut out = String::from("\n\nSORT PAIRS DEMONSTRATION:\n\n");
    let mut keys = ctx.upload(&SORT_PAIRS_INPUT)?;
    let mut values = ctx.upload(&(0..100).collect::<Vec<i32>>())?;
    out += "Input keys:\n";
    out += &format_array(&keys.to_vec()?);
    ctx.sort_pairs(&mut keys, &mut values, &Comparator::less())?;
    out += "\nSorted keys:\n";
    out += &format_array(&keys.to_vec()?);
    out += "\nSorted values:\n";
    out += &format_array(&values.to_vec()?);
    Ok(out)
}

/// SEGMENTED REDUCE-CSR DEMONSTRATION (the seed prints no colon after this header).
pub fn segreduce_csr(ctx: &Context) -> mgpu::Result<String> {
    let mut out = String::from("\n\nSEGMENTED REDUCE-CSR DEMONSTRATION\n\n");
    let starts = ctx.upload(&SEGREDUCE_STARTS)?;
    let values = ctx.upload(&SEGREDUCE_VALUES)?;
    out += "Segment starts (CSR):\n";
    out += &format_array(&starts.to_vec()?);
    out += "\nValues:\n";
    out += &format_array(&values.to_vec()?);
    let mut results = ctx.zeros::<i32>(starts.len())?;
    ctx.segreduce_csr(&values, Csr::new(&starts), &mut results, &Op::plus())?;
    out += "\nReduced values:\n";
    out += &format_array(&results.to_vec()?);
    Ok(out)
}

/// REDUCE BY KEY DEMONSTRATION (the seed prints no colon after this header).
pub fn reduce_by_key(ctx: &Context) -> mgpu::Result<String> {
    let mut out = String::from("\n\nREDUCE BY KEY DEMONSTRATION\n\n");
    let keys = ctx.upload(&RBK_KEYS)?;
    let values = ctx.upload(&RBK_VALUES)?;
    out += "Keys:\n";
    out += &format_array(&keys.to_vec()?);
    out += "\nValues:\n";
    out += &format_array(&values.to_vec()?);
    let mut keys_out = ctx.zeros::<i32>(keys.len())?;
    let mut values_out = ctx.zeros::<i32>(keys.len())?;
    let runs = ctx
        .reduce_by_key(
            &keys,
            &values,
            &mut keys_out,
            &mut values_out,
            &Equality::equal_to(),
            &Op::plus(),
            Count::Host,
        )?
        .expect("host count requested") as usize;
    out += "\nReduced keys:\n";
    out += &format_array(&keys_out.to_vec()?[..runs]);
    out += "\nReduced values:\n";
    out += &format_array(&values_out.to_vec()?[..runs]);
    Ok(out)
}

/// The matrix of the SpMV demo, 6 x 6 with an empty row (row 3), in CSR: each row's first
/// nonzero, the nonzeros' columns and values.
const SPMV_ROWS: [u32; 6] = [0, 2, 5, 7, 7, 10];
const SPMV_COLS: [u32; 12] = [0, 4, 1, 2, 5, 0, 3, 1, 4, 5, 2, 5];
const SPMV_VALUES: [f32; 12] = [
    2.0, -1.0, 3.0, 0.5, 1.0, -2.0, 4.0, 1.5, 2.0, -1.0, 1.0, 3.0,
];
const SPMV_X: [f32; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];

/// SPMV DEMONSTRATION: y = A * x for a small CSR matrix (f32), with the matrix also printed
/// densely.
pub fn spmv(ctx: &Context) -> mgpu::Result<String> {
    let mut out = String::from("\n\nSPMV DEMONSTRATION\n\n");
    let rows = ctx.upload(&SPMV_ROWS)?;
    let cols = ctx.upload(&SPMV_COLS)?;
    let values = ctx.upload(&SPMV_VALUES)?;
    let x = ctx.upload(&SPMV_X)?;
    let n = SPMV_ROWS.len();
    out += &format!(
        "Matrix ({n} x {n}, {} nonzeros, row 3 empty), CSR row starts:\n",
        SPMV_COLS.len()
    );
    out += &format_array(&rows.to_vec()?);
    out += "\nColumn indices:\n";
    out += &format_array(&cols.to_vec()?);
    out += "\nValues:\n";
    out += &format_floats(&values.to_vec()?);
    out += "\nDense:\n";
    for (r, &start) in SPMV_ROWS.iter().enumerate() {
        let end = SPMV_ROWS
            .get(r + 1)
            .map_or(SPMV_COLS.len(), |&e| e as usize);
        let mut dense = vec![0.0f32; n];
        for k in start as usize..end {
            dense[SPMV_COLS[k] as usize] += SPMV_VALUES[k];
        }
        out += &format!("{r:5}: ");
        for v in dense {
            out += &format!(" {v:6.2}");
        }
        out.push('\n');
    }
    out += "\nx:\n";
    out += &format_floats(&x.to_vec()?);
    let mut y = ctx.zeros::<f32>(n)?;
    ctx.spmv_csr(
        &values,
        &cols,
        Csr::allow_empty(&rows),
        &x,
        &mut y,
        &Op::multiplies(),
        &Op::plus(),
    )?;
    out += "\ny = A * x:\n";
    out += &format_floats(&y.to_vec()?);
    Ok(out)
}

/// PrintArray's layout for floats: ten a row, two decimals.
fn format_floats(data: &[f32]) -> String {
    let mut s = String::new();
    for (row, chunk) in data.chunks(10).enumerate() {
        s += &format!("{:5}: ", row * 10);
        for x in chunk {
            s += &format!(" {x:6.2}");
        }
        s.push('\n');
    }
    s
}

/// A demo: runs on a context and returns what it prints.
pub type Demo = fn(&Context) -> mgpu::Result<String>;

/// Every demo by name.
pub const DEMOS: &[(&str, Demo)] = &[
    ("scan", scan),
    ("max-reduce", max_reduce),
    ("sort-keys", sort_keys),
    ("sort-pairs", sort_pairs),
    ("segreduce-csr", segreduce_csr),
    ("reduce-by-key", reduce_by_key),
    ("spmv", spmv),
];
