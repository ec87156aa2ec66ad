//! Property: printing any program and parsing the text back gives the same program,
//! for random programs of every uop (from the oracle's program generator).

use uop_codegen::testing::{GenConfig, random_program};
use uop_codegen::text::check_round_trip;
use uop_codegen::uop::DType;

#[test]
fn random_programs_round_trip_through_text() {
    let configs = [
        GenConfig::default(),
        GenConfig {
            dtype: DType::F64,
            allow_params: false,
            ..GenConfig::default()
        },
        GenConfig {
            max_nodes: 24,
            max_rank: 4,
            ..GenConfig::default()
        },
    ];
    for (k, cfg) in configs.iter().enumerate() {
        for seed in 0..300 {
            let program = random_program(seed, cfg);
            if let Err(e) = check_round_trip(&program) {
                panic!("config {k}, seed {seed}: {e}");
            }
        }
    }
}
