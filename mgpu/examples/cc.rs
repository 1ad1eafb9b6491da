use mgpu::cuda::jit::*;
use mgpu::*;
fn main() {
    let t = tuning::lookup(tuning::Family::Scan, 90, 4).unwrap();
    for m in [Module::Reduce, Module::Scan] {
        let s = source::<i32>(m, &Op::plus(), &t);
        match compile_uncached(m.name(), &s, 90) { Ok(c) => println!("{:?}", c.reports), Err(e) => println!("{e}") }
        let s = source::<f64>(m, &Op::<f64>::plus().commutative(false), &t);
        match compile_uncached(m.name(), &s, 90) { Ok(c) => println!("{:?}", c.reports), Err(e) => println!("{e}") }
    }
}
