//! Gradient programs of hundreds of random programs (every micro op, params,
//! expression shapes, several outputs): each builds, prints as `.uop` text that
//! parses back to it, and gives the same values in the reference interpreter and
//! in the loop IR. (Values are checked against finite differences in `grad_fd.rs`;
//! random programs have kinks and ties where differences mean nothing.)

use uop_codegen::grad::{GradSpec, gradient};
use uop_codegen::interp;
use uop_codegen::loops;
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::{GenConfig, random_case, random_program};
use uop_codegen::text::check_round_trip;

#[test]
fn gradients_of_random_programs_build_round_trip_and_lower_faithfully() {
    let cfg = GenConfig::default();
    let mut checked = 0;
    for seed in 0..300 {
        let forward = random_program(seed, &cfg);
        let wrt: Vec<_> = forward
            .inputs
            .iter()
            .copied()
            .filter(|i| forward.node(*i).dtype.is_float())
            .collect();
        let mut seeds: Vec<_> = Vec::new();
        for o in &forward.outputs {
            if forward.node(*o).dtype.is_float() && !seeds.contains(o) {
                seeds.push(*o);
            }
        }
        let spec = GradSpec {
            seeds: seeds.clone(),
            wrt,
            supplied: if seed % 2 == 0 { seeds.clone() } else { vec![] },
        };
        let grad = gradient(&forward, &spec).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        check_round_trip(&grad.program).unwrap_or_else(|e| panic!("seed {seed}: {e}"));

        let case = random_case(&forward, seed).expect("a case");
        let outputs = interp::run(&forward, &case.inputs, &case.params).expect("forward runs");
        let seed_values: Vec<Tensor> = seeds
            .iter()
            .map(|s| {
                let k = forward
                    .outputs
                    .iter()
                    .position(|o| o == s)
                    .expect("an output");
                Tensor::random(forward.dtype, outputs[k].shape.clone(), seed + 7)
            })
            .collect();
        let args = grad
            .arguments(&forward, &case.inputs, &seed_values, &case.params)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let by_uops = interp::run(&grad.program, &args, &case.params)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let by_loops = interp::run_loops(&loops::lower(&grad.program), &args, &case.params)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for (a, b) in by_uops.iter().zip(&by_loops) {
            assert_eq!(a.max_abs_diff(b), Some(0.0), "seed {seed}");
        }
        for (g, w) in by_uops.iter().zip(&spec.wrt) {
            let k = forward
                .inputs
                .iter()
                .position(|i| i == w)
                .expect("an input");
            assert_eq!(g.shape, case.inputs[k].shape, "seed {seed}: gradient shape");
        }
        checked += 1;
    }
    assert_eq!(checked, 300);
}
