//! `mgpu demo`: the seed's demonstrations, on the seed's printed inputs, in the seed's format.

use mgpu::{Comparator, Context, Op, ScanOptions, Total};

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

/// The seed's PrintArray layout: ten values a row, each row led by the index of its first value.
pub fn format_array(data: &[i32]) -> String {
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

/// A demo: runs on a context and returns what it prints.
pub type Demo = fn(&Context) -> mgpu::Result<String>;

/// Every demo by name.
pub const DEMOS: &[(&str, Demo)] = &[
    ("scan", scan),
    ("max-reduce", max_reduce),
    ("sort-keys", sort_keys),
    ("sort-pairs", sort_pairs),
];
