//! Property tests of index expressions: the printer and parser agree, the
//! simplifier keeps values and is canonical and idempotent, the interval analysis
//! is sound, and the parser survives any input with a usable error.

use std::collections::HashMap;

use proptest::prelude::*;
use proptest::sample::select;
use uop_codegen::index::{
    Bindings, DimRef, EvalError, Expr, IndexOp, Interval, Ranges, equal_sizes, is_plain_name,
    parse_expr,
};

/// Named dimensions the generated expressions use; some look close to reserved forms.
const NAMES: &[&str] = &[
    "M", "N", "H", "W", "i", "d", "dA", "iA0", "_x", "min_", "maxi",
];
/// `$params` the generated expressions use; after `$` even reserved words are names.
const PARAMS: &[&str] = &["kh", "kw", "s", "i0", "min", "dA0"];
/// Loop indices `i0 .. i{INDICES - 1}`.
const INDICES: usize = 4;
/// Shape sources `A ..` and axes per source of the generated `dA0` references.
const SOURCES: usize = 3;
const AXES: usize = 4;

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -12i64..=12,
        1 => select(vec![i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1, 1 << 32, -(1 << 31)]),
        1 => any::<i64>(),
    ]
}

fn dim_ref(sources: usize, axes: usize) -> impl Strategy<Value = DimRef> {
    (0..sources, 0..axes).prop_map(|(source, axis)| DimRef { source, axis })
}

/// Leaves over the fixed variable pools, so that every variable can be bound.
fn leaf() -> impl Strategy<Value = Expr> {
    prop_oneof![
        4 => int().prop_map(Expr::Int),
        3 => (0..INDICES).prop_map(Expr::Index),
        1 => (dim_ref(SOURCES, AXES), proptest::option::of(dim_ref(SOURCES, AXES)))
            .prop_map(|(d, eq)| Expr::Dim(d, eq)),
        1 => select(PARAMS).prop_map(Expr::param),
        2 => select(NAMES).prop_map(Expr::name),
    ]
}

/// Leaves over every spelling the grammar allows: any plain identifier, any
/// shape source `A`..`Z`, large indices and axes.
fn wide_leaf() -> impl Strategy<Value = Expr> {
    let ident = "[A-Za-z_][A-Za-z0-9_]{0,6}";
    prop_oneof![
        leaf(),
        any::<usize>().prop_map(Expr::Index),
        (dim_ref(26, 1000), proptest::option::of(dim_ref(26, 1000)))
            .prop_map(|(d, eq)| Expr::Dim(d, eq)),
        ident.prop_map(Expr::param),
        ident
            .prop_filter("a plain name", |s| is_plain_name(s))
            .prop_map(Expr::name),
    ]
}

fn op() -> impl Strategy<Value = IndexOp> {
    select(vec![
        IndexOp::Add,
        IndexOp::Sub,
        IndexOp::Mul,
        IndexOp::Div,
        IndexOp::Mod,
        IndexOp::Min,
        IndexOp::Max,
    ])
}

fn tree(leaf: impl Strategy<Value = Expr> + 'static) -> impl Strategy<Value = Expr> {
    leaf.prop_recursive(6, 48, 2, |inner| {
        prop_oneof![
            1 => inner.clone().prop_map(|e| Expr::Neg(Box::new(e))),
            5 => (op(), inner.clone(), inner).prop_map(|(op, a, b)| Expr::bin(op, a, b)),
        ]
    })
}

fn expr() -> impl Strategy<Value = Expr> {
    tree(leaf())
}

/// Mostly small values, so that evaluation usually succeeds, and now and then a huge one.
fn value() -> impl Strategy<Value = i64> {
    prop_oneof![9 => -20i64..=20, 1 => any::<i64>()]
}

/// Values for every variable the generated expressions can mention.
fn bindings() -> impl Strategy<Value = Bindings> {
    let names = proptest::collection::vec(value(), NAMES.len());
    let params = proptest::collection::vec(value(), PARAMS.len());
    let dims = proptest::collection::vec(proptest::collection::vec(value(), AXES), SOURCES);
    let indices = proptest::collection::vec(value(), INDICES);
    (indices, names, params, dims).prop_map(|(indices, names, params, dims)| Bindings {
        indices,
        names: NAMES.iter().map(|n| n.to_string()).zip(names).collect(),
        params: PARAMS.iter().map(|p| p.to_string()).zip(params).collect(),
        dims,
    })
}

/// A value and, most of the time, a range holding it (else the range is unknown).
fn ranged_value() -> impl Strategy<Value = (Option<Interval>, i64)> {
    let end = prop_oneof![6 => -30i64..=30, 1 => any::<i64>()];
    let known = proptest::bool::weighted(0.9);
    (end.clone(), end, any::<u64>(), known).prop_map(|(a, b, pick, known)| {
        let (lo, hi) = (a.min(b), a.max(b));
        let width = (hi as i128 - lo as i128 + 1) as u128;
        let v = lo as i128 + (pick as u128 % width) as i128;
        (known.then_some(Interval { lo, hi }), v as i64)
    })
}

/// Ranges for the variables (a few left unknown) and bindings inside them.
fn ranges_and_bindings() -> impl Strategy<Value = (Ranges, Bindings)> {
    let vars = INDICES + NAMES.len() + PARAMS.len() + SOURCES * AXES;
    proptest::collection::vec(ranged_value(), vars).prop_map(|picks| {
        let mut picks = picks.into_iter();
        let (mut ranges, mut env) = (Ranges::default(), Bindings::default());
        let mut next = || picks.next().unwrap_or((None, 0));
        for n in 0..INDICES {
            let (r, v) = next();
            if let Some(r) = r {
                ranges.indices.insert(n, r);
            }
            env.indices.push(v);
        }
        for name in NAMES {
            let (r, v) = next();
            if let Some(r) = r {
                ranges.names.insert(name.to_string(), r);
            }
            env.names.insert(name.to_string(), v);
        }
        for param in PARAMS {
            let (r, v) = next();
            if let Some(r) = r {
                ranges.params.insert(param.to_string(), r);
            }
            env.params.insert(param.to_string(), v);
        }
        for source in 0..SOURCES {
            let mut axes = Vec::new();
            for axis in 0..AXES {
                let (r, v) = next();
                if let Some(r) = r {
                    ranges.dims.insert(DimRef { source, axis }, r);
                }
                axes.push(v);
            }
            env.dims.push(axes);
        }
        (ranges, env)
    })
}

proptest! {
    // About a fifth of random expressions are undefined under random bindings
    // (division by zero, overflow) and are rejected; a test that rejected nearly
    // everything would still fail on the reject limit.
    #![proptest_config(ProptestConfig {
        cases: 512,
        max_global_rejects: 20_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn printing_then_parsing_gives_back_the_same_tree(e in tree(wide_leaf())) {
        let text = e.to_string();
        prop_assert_eq!(parse_expr(&text), Ok(e), "printed as {}", text);
    }

    #[test]
    fn simplified_forms_also_round_trip(e in expr()) {
        let s = e.simplify();
        let text = s.to_string();
        prop_assert_eq!(parse_expr(&text), Ok(s), "printed as {}", text);
    }

    /// The simplified form is exact in mathematical integers: where the original
    /// evaluates, the simplified form gives the same value, or at worst overflows
    /// in an intermediate result (its terms are added in a different order). It
    /// never divides by zero or needs a variable the original did not.
    #[test]
    fn simplifying_keeps_the_value(e in expr(), env in bindings()) {
        let Ok(expected) = e.eval(&env) else {
            // Undefined here (division by zero, overflow): the simplified form may be anything.
            return Err(TestCaseError::reject("the original is undefined"));
        };
        let s = e.simplify();
        match s.eval(&env) {
            Ok(got) => prop_assert_eq!(got, expected, "{} simplified to {}", e, s),
            Err(err) => prop_assert!(
                matches!(err, EvalError::Overflow(_)),
                "{} = {} but its simplified form {} fails with {}", e, expected, s, err
            ),
        }
    }

    #[test]
    fn simplifying_twice_changes_nothing(e in expr()) {
        let once = e.simplify();
        prop_assert_eq!(once.simplify(), once.clone(), "{} simplified to {}", e, once);
    }

    #[test]
    fn any_expression_minus_itself_is_zero(e in expr()) {
        prop_assert!(equal_sizes(&e, &e));
        prop_assert_eq!((e.clone() - e).simplify(), Expr::Int(0));
    }

    #[test]
    fn the_interval_holds_every_value((ranges, env) in ranges_and_bindings(), e in expr()) {
        let Ok(v) = e.eval(&env) else {
            return Err(TestCaseError::reject("the expression is undefined here"));
        };
        // Where there is an interval (something is known), it must hold the value.
        if let Some(range) = e.interval(&ranges) {
            prop_assert!(range.contains(v), "{} = {} is outside {:?}", e, v, range);
        }
        let s = e.simplify();
        if let (Ok(v), Some(range)) = (s.eval(&env), s.interval(&ranges)) {
            prop_assert!(range.contains(v), "{} = {} is outside {:?}", s, v, range);
        }
    }
}

/// A linear combination written in two different ways must simplify to one tree.
mod canonical_form {
    use super::*;

    /// The "variables" of the combinations: leaves and a few opaque parts.
    fn atoms() -> Vec<Expr> {
        [
            "i0",
            "i1",
            "i2",
            "M",
            "N",
            "dA0",
            "dB1[=dA0]",
            "$kh",
            "i0 / 3",
            "min(M, N)",
            "i1 * i2",
        ]
        .iter()
        .map(|s| parse_expr(s).unwrap_or_else(|e| panic!("{s}: {e}")))
        .collect()
    }

    /// `coefficient * atom`, written in one of several equivalent ways.
    fn write_term(c: i64, atom: Expr, style: u8) -> Expr {
        match style % 4 {
            0 => Expr::Int(c) * atom,
            1 => atom * Expr::Int(c),
            2 => -(Expr::Int(-c) * atom),
            _ => (0..c.unsigned_abs()).fold(Expr::Int(0), |acc, _| {
                if c < 0 {
                    acc - atom.clone()
                } else {
                    acc + atom.clone()
                }
            }),
        }
    }

    fn write_sum(terms: &[(i64, usize, u8)], constant: i64) -> Expr {
        let atoms = atoms();
        terms
            .iter()
            .fold(Expr::Int(constant), |acc, &(c, a, style)| {
                acc + write_term(c, atoms[a].clone(), style)
            })
    }

    fn terms() -> impl Strategy<Value = Vec<(i64, usize, u8)>> {
        proptest::collection::vec((-4i64..=4, 0..atoms().len(), any::<u8>()), 0..8)
    }

    proptest! {
        #[test]
        fn reordered_and_rewritten_sums_simplify_alike(
            terms in terms(),
            constant in -10i64..=10,
            order in any::<u64>(),
            styles in proptest::collection::vec(any::<u8>(), 8),
        ) {
            let a = write_sum(&terms, constant);
            // Same terms, rotated and restyled; the constant split in two.
            let mut shuffled = terms.clone();
            if !shuffled.is_empty() {
                let k = (order % shuffled.len() as u64) as usize;
                shuffled.rotate_left(k);
                shuffled.reverse();
            }
            for (t, s) in shuffled.iter_mut().zip(&styles) {
                t.2 = *s;
            }
            let b = write_sum(&shuffled, constant - 3) + Expr::Int(3);
            prop_assert_eq!(a.simplify(), b.simplify(), "{} vs {}", a, b);
            prop_assert!(equal_sizes(&a, &b));
        }
    }
}

/// The parser meets arbitrary text: it never panics, and every error points
/// inside the input and is shown with a caret under it.
mod parser_robustness {
    use super::*;

    const TOKENS: &[&str] = &[
        "i0",
        "i12",
        "dA0",
        "dB3",
        "[=",
        "dA1",
        "]",
        "$",
        "kh",
        "M",
        "min",
        "max",
        "(",
        ")",
        ",",
        "+",
        "-",
        "*",
        "/",
        "%",
        "7",
        "-3",
        "0",
        "99999999999999999999",
        " ",
        " ",
        "\n",
        "\t",
        "_",
        "é",
        "[",
        "=",
    ];

    fn check(src: &str) -> Result<(), TestCaseError> {
        match parse_expr(src) {
            Ok(e) => {
                // Whatever parses prints to text that parses back to the same tree.
                let text = e.to_string();
                prop_assert_eq!(parse_expr(&text), Ok(e), "{:?} printed as {:?}", src, text);
            }
            Err(d) => {
                prop_assert!(d.offset <= src.len(), "{:?}: offset {}", src, d.offset);
                prop_assert!(
                    src.is_char_boundary(d.offset),
                    "{:?}: offset {}",
                    src,
                    d.offset
                );
                prop_assert!(!d.expected.is_empty(), "{:?}: no message", src);
                let shown = d.to_string();
                let caret = shown.lines().last().unwrap_or_default();
                prop_assert!(
                    caret.trim_start_matches([' ', '\t', '|']).starts_with('^'),
                    "{:?} shows no caret line:\n{}",
                    src,
                    shown
                );
                prop_assert!(shown.starts_with(&d.headline()), "{:?}:\n{}", src, shown);
            }
        }
        Ok(())
    }

    /// Grammar tokens glued together, then corrupted by a few edits.
    fn token_soup() -> impl Strategy<Value = String> {
        let tokens = proptest::collection::vec(select(TOKENS), 0..16);
        let edits = proptest::collection::vec((any::<usize>(), any::<char>(), 0u8..3), 0..3);
        (tokens, edits).prop_map(|(tokens, edits)| {
            let mut chars: Vec<char> = tokens.concat().chars().collect();
            for (at, c, kind) in edits {
                let at = at % (chars.len() + 1);
                match kind {
                    0 => chars.insert(at, c),
                    1 if at < chars.len() => {
                        chars.remove(at);
                    }
                    _ if at < chars.len() => chars[at] = c,
                    _ => chars.push(c),
                }
            }
            chars.into_iter().collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_ascii(src in "[ -~\t\n]{0,40}") {
            check(&src)?;
        }

        #[test]
        fn arbitrary_unicode(src in "\\PC{0,24}") {
            check(&src)?;
        }

        #[test]
        fn corrupted_token_sequences(src in token_soup()) {
            check(&src)?;
        }

        #[test]
        fn printed_expressions_with_one_character_changed(
            e in expr(),
            at in any::<usize>(),
            c in select(vec!['(', ')', '-', '+', '*', ' ', ',', '$', '[', ']', 'x', '9']),
        ) {
            let mut chars: Vec<char> = e.to_string().chars().collect();
            let at = at % chars.len().max(1);
            if at < chars.len() {
                chars[at] = c;
            }
            check(&chars.into_iter().collect::<String>())?;
        }
    }

    /// Before the nesting limit, 2000 parentheses overflowed the stack and aborted the process.
    #[test]
    fn deep_nesting_is_parsed_or_rejected_without_crashing() {
        for depth in [10, 200, 100_000] {
            let parens = format!("{}i0{}", "(".repeat(depth), ")".repeat(depth));
            let negations = format!("{}i0", "-".repeat(depth));
            let chain = vec!["i0"; depth].join(" * ");
            for src in [parens, negations, chain] {
                match parse_expr(&src) {
                    Ok(e) => assert_eq!(e.simplify().indices(), vec![0], "depth {depth}"),
                    Err(err) => {
                        assert!(depth > 256, "depth {depth} rejected: {err}");
                        assert!(
                            err.expected.contains("nested") || err.expected.contains("terms"),
                            "{err}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn known_bad_inputs_have_positioned_errors() {
        let cases: HashMap<&str, usize> = HashMap::from([
            ("", 0),
            ("i0 +", 4),
            ("min(i0 i1)", 7),
            ("dA0[=dB1", 8),
            ("$", 1),
            ("é", 0),
            ("i0 é", 3),
        ]);
        for (src, offset) in cases {
            let err = parse_expr(src).expect_err(src);
            assert_eq!(err.offset, offset, "{src:?}: {err}");
            check(src).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}
