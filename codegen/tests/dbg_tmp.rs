use uop_codegen::{loops, pass, testing::{random_program, GenConfig}};
#[test]
fn dbg() {
    let seed: u64 = std::env::var("SEED").unwrap().parse().unwrap();
    let cfg = if seed >= 1_000_000 { GenConfig { dtype: uop_codegen::uop::DType::F64, ..GenConfig::default() } } else { GenConfig::default() };
    let p = loops::lower(&random_program(seed, &cfg));
    println!("{p}");
    let only: Option<String> = std::env::var("PASS").ok();
    for pa in pass::pipeline() {
        if let Some(o) = &only { if o != pa.name { continue; } }
        println!("== {}\n{}", pa.name, (pa.run)(&p));
    }
}
