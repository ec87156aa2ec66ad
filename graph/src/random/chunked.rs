//! Random chunked graphs whose loop reads graph inputs only: what a chunked
//! gradient needs (`docs/graph-gradients.md`), for the gradient sweeps.

use super::Rng;
use crate::ir::Graph;
use crate::text::parse_graph;

/// A random chunked graph: `x: f32[N, 2]` chunked (1 to 4 rows a chunk), weights
/// `w: f32[2, 2]`, `v: f32[2]` and `s: f32[]` read whole by every chunk, 3 to 6
/// element-wise ops, `matmul`s and, sometimes, a chunk inside the loop (loops in
/// loops); the last value is the output.
pub fn random_chunked_graph(seed: u64) -> Result<Graph, String> {
    let mut rng = Rng::new(seed);
    let mut src =
        String::from("input x: f32[N, 2]\ninput w: f32[2, 2]\ninput v: f32[2]\ninput s: f32[]\n");
    src.push_str(&format!("a0 = chunk(x, size={})\n", 1 + rng.below(4)));
    let mut names = vec!["a0".to_string()];
    for k in 1..4 + rng.below(4) {
        let a = names[rng.below(names.len())].clone();
        let b = names[rng.below(names.len())].clone();
        let rhs = match rng.below(7) {
            0 => format!("tanh({a})"),
            1 => format!("sin({a})"),
            2 => format!("mul({a}, {b})"),
            3 => format!("sub({a}, {b})"),
            4 => format!("matmul({a}, w)"),
            5 => format!("add(mul({a}, v), s)"),
            _ if k > 2 && rng.chance(50) => format!("chunk({a}, size={})", 1 + rng.below(2)),
            _ => format!("mul({a}, 0.25)"),
        };
        if rhs.starts_with("chunk") {
            // What follows reads the inner loop's values.
            names.clear();
        }
        src.push_str(&format!("a{k} = {rhs}\n"));
        names.push(format!("a{k}"));
    }
    let out = names.last().cloned().unwrap_or_default();
    src.push_str(&format!("output {out}\n"));
    parse_graph(&src, crate::default_registry()).map_err(|e| format!("{e}\n{src}"))
}
