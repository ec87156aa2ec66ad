//! The expansion budget (issue 40, item 3): functions used again and again stop at
//! a limit with an error naming the count and the chain of functions, at once.

use std::time::{Duration, Instant};

use uop_graph::default_registry;
use uop_graph::text::{MAX_DEPTH, MAX_NODES, parse_graph};

/// `levels` functions, each using the one below twice (`inline` or through `call`):
/// using the top one asks for 2^levels copies of the bottom one.
fn doubling(levels: usize, call: bool) -> String {
    let mut src = format!("input x: f32[4]\nfn f{levels}(v) {{ return mul(v, 2) }}\n");
    for k in (0..levels).rev() {
        let next = k + 1;
        if call {
            src.push_str(&format!(
                "fn f{k}(v) {{ a = call(f{next}, v); return call(f{next}, a) }}\n"
            ));
        } else {
            src.push_str(&format!(
                "fn f{k}(v) {{ a = f{next}(v); return f{next}(a) }}\n"
            ));
        }
    }
    src.push_str("y = f0(x)\noutput y\n");
    src
}

#[test]
fn thirty_levels_of_doubling_are_refused_within_a_second() {
    for call in [false, true] {
        let src = doubling(30, call);
        assert_eq!(src.lines().count(), 34);
        let start = Instant::now();
        let e = parse_graph(&src, default_registry()).expect_err("over the budget");
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        let m = e.message();
        assert!(
            m.contains(&format!("more than the {MAX_NODES} a graph may have")),
            "{m}"
        );
        // 2^31 - 1 function bodies' nodes (two per body: its input and its `mul` or
        // two uses), so the count is in the billions.
        let count: u64 = m
            .split_whitespace()
            .find_map(|w| w.parse().ok())
            .expect("a count");
        assert!(count > 1 << 30, "{m}");
        assert!(
            m.contains("the costliest chain: `f0` uses `f1` uses `f2`"),
            "{m}"
        );
        assert!(m.contains("uses `f30`"), "{m}");
        // At the statement that uses `f0`.
        assert_eq!(e.line_col().0, 33, "{m}");
    }
}

#[test]
fn a_graph_within_the_budget_builds() {
    let g = parse_graph(&doubling(8, false), default_registry()).expect("256 copies");
    let muls = g
        .nodes()
        .iter()
        .filter(|n| matches!(&n.op, uop_graph::Op::Call(c) if c.op == "mul"))
        .count();
    assert_eq!(muls, 256);
}

#[test]
fn a_chain_of_functions_deeper_than_the_limit_is_refused() {
    let n = MAX_DEPTH + 10;
    let mut src = "input x: f32[4]\nfn f0(v) { return exp(v) }\n".to_string();
    for k in 1..n {
        src.push_str(&format!("fn f{k}(v) {{ return f{}(v) }}\n", k - 1));
    }
    src.push_str(&format!("y = f{}(x)\noutput y\n", n - 1));
    let e = parse_graph(&src, default_registry()).expect_err("too deep");
    let m = e.message();
    assert!(
        m.starts_with(&format!(
            "functions use one another {} levels deep, more than the {MAX_DEPTH}",
            MAX_DEPTH + 1
        )),
        "{m}"
    );
    assert!(m.contains("the deepest chain: `f256` uses `f255`"), "{m}");
    // At the definition of the first function over the limit.
    assert_eq!(e.line_col().0, 2 + MAX_DEPTH, "{m}");
}
