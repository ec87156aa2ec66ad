//! Concrete sizes and data for a program: the size search behind [`random_case`](super::random_case).

use std::collections::HashMap;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng, rngs::StdRng};

use super::{CANONICAL_SEED, Case, CaseError, GenConfig, SIZE_ATTEMPTS};
use crate::index::Expr;
use crate::tensor::Tensor;
use crate::uop::{DType, NodeId, Program, ReduceOp};

/// Concrete input shapes and param values.
#[derive(Clone, Debug)]
pub(super) struct Sizes {
    pub(super) shapes: Vec<Vec<usize>>,
    pub(super) params: HashMap<String, i64>,
}

pub(super) fn canonical_sizes(program: &Program, cfg: &GenConfig) -> Result<Sizes, CaseError> {
    search_sizes(program, cfg, &mut StdRng::seed_from_u64(CANONICAL_SEED))
}

/// A concrete size for a named dim, at least `min_dim`: with the default minimum 0, 1
/// often (broadcast-like edge) and 0 rarely (empty tensors); above it, the minimum
/// often and anything up to `max_dim` otherwise.
pub(super) fn random_dim(rng: &mut StdRng, min_dim: usize, max_dim: usize) -> i64 {
    let (lo, hi) = (min_dim as i64, max_dim.max(min_dim) as i64);
    let r: f64 = rng.random();
    if lo == 0 {
        if r < 0.03 {
            0
        } else if r < 0.25 {
            1
        } else {
            rng.random_range(1..=hi.max(1))
        }
    } else if r < 0.2 {
        lo
    } else {
        rng.random_range(lo..=hi)
    }
}

pub(super) fn random_param(rng: &mut StdRng) -> i64 {
    if rng.random_bool(0.1) {
        0
    } else {
        rng.random_range(1..=3)
    }
}

/// Union-find root of a named dim.
pub(super) fn root(parent: &HashMap<String, String>, name: &str) -> String {
    let mut n = name.to_string();
    while let Some(p) = parent.get(&n) {
        if *p == n {
            break;
        }
        n = p.clone();
    }
    n
}

/// Rejection sampling of sizes: dims tied by `Name == Name` / `Name == literal`
/// assertions are drawn once; everything else is checked by [`Program::bind`] and
/// [`Program::shapes`] themselves.
pub(super) fn search_sizes(
    program: &Program,
    cfg: &GenConfig,
    rng: &mut StdRng,
) -> Result<Sizes, CaseError> {
    let fail = |detail: String| CaseError {
        max_dim: cfg.max_dim,
        max_elements: cfg.max_elements,
        detail,
    };
    let mut names: Vec<String> = Vec::new();
    for id in &program.inputs {
        for d in &program.node(*id).shape {
            if let Expr::Name(n) = d
                && !names.contains(n)
            {
                names.push(n.clone());
            }
        }
    }
    let mut parent: HashMap<String, String> =
        names.iter().map(|n| (n.clone(), n.clone())).collect();
    let mut fixed: HashMap<String, i64> = HashMap::new();
    for (l, r) in &program.assertions {
        match (l, r) {
            (Expr::Name(a), Expr::Name(b)) => {
                let (ra, rb) = (root(&parent, a), root(&parent, b));
                if ra != rb {
                    if let Some(v) = fixed.remove(&ra) {
                        fixed.insert(rb.clone(), v);
                    }
                    parent.insert(ra, rb);
                }
            }
            (Expr::Name(a), Expr::Int(v)) | (Expr::Int(v), Expr::Name(a)) => {
                fixed.insert(root(&parent, a), *v);
            }
            (Expr::Int(a), Expr::Int(b)) if a != b => {
                return Err(fail(format!(": the assertion {a} == {b} never holds")));
            }
            _ => {}
        }
    }
    for (name, &v) in &cfg.dims {
        let r = root(&parent, name);
        match fixed.get(&r) {
            Some(&w) if w != v => {
                return Err(fail(format!(
                    ": {name} is given as {v} but an assertion makes it {w}"
                )));
            }
            _ => {
                fixed.insert(r, v);
            }
        }
    }
    for _ in 0..SIZE_ATTEMPTS {
        let params: HashMap<String, i64> = program
            .params
            .iter()
            .map(|p| {
                (
                    p.clone(),
                    cfg.params
                        .get(p)
                        .copied()
                        .unwrap_or_else(|| random_param(rng)),
                )
            })
            .collect();
        let mut values: HashMap<String, i64> = HashMap::new();
        for n in &names {
            let r = root(&parent, n);
            let v = match fixed.get(&r) {
                Some(v) => *v,
                None => match values.get(&r) {
                    Some(v) => *v,
                    None => random_dim(rng, cfg.min_dim, cfg.max_dim),
                },
            };
            values.insert(r, v);
            values.insert(n.clone(), v);
        }
        let Some(shapes) = input_shapes(program, &values) else {
            continue;
        };
        let refs: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let Ok(bindings) = program.bind(&refs, &params) else {
            continue;
        };
        let Ok(all) = program.shapes(&bindings) else {
            continue;
        };
        if reduces_an_empty_axis_to_a_position(program, &all) {
            // An error on every backend (argmax of nothing), not a case to compare.
            continue;
        }
        let small = all.iter().all(|s| {
            s.iter()
                .try_fold(1usize, |acc, &d| acc.checked_mul(d))
                .is_some_and(|n| n <= cfg.max_elements)
        });
        if small {
            return Ok(Sizes { shapes, params });
        }
    }
    Err(fail(String::new()))
}

/// True when an `argmax` / `argmin` of `program` reduces an axis that is empty
/// under the node shapes `all`.
pub(super) fn reduces_an_empty_axis_to_a_position(program: &Program, all: &[Vec<usize>]) -> bool {
    program.nodes.iter().any(|n| match &n.op {
        crate::uop::Uop::Reduce {
            op: ReduceOp::Argmax | ReduceOp::Argmin,
            axes,
            x,
        } => axes.iter().any(|&a| all[x.0][a] == 0),
        _ => false,
    })
}

pub(super) fn input_shapes(
    program: &Program,
    values: &HashMap<String, i64>,
) -> Option<Vec<Vec<usize>>> {
    program
        .inputs
        .iter()
        .map(|id| {
            program
                .node(*id)
                .shape
                .iter()
                .map(|d| match d {
                    Expr::Int(v) => usize::try_from(*v).ok(),
                    Expr::Name(n) => values.get(n).and_then(|v| usize::try_from(*v).ok()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Random data for the chosen sizes.
pub(super) fn fill_case(program: &Program, sizes: &Sizes, rng: &mut StdRng) -> Case {
    // Shapes were checked by the search, so binding cannot fail here; if it somehow
    // did, index tensors just get the generic range.
    let refs: Vec<&[usize]> = sizes.shapes.iter().map(Vec::as_slice).collect();
    let all_shapes = program
        .bind(&refs, &sizes.params)
        .ok()
        .and_then(|b| program.shapes(&b).ok());
    let inputs = program
        .inputs
        .iter()
        .zip(&sizes.shapes)
        .map(|(id, shape)| {
            let dtype = program.node(*id).dtype;
            let n: usize = shape.iter().product();
            let data = if dtype == DType::I32 {
                let extent = gathered_extent(program, *id, all_shapes.as_deref());
                (0..n).map(|_| random_index(rng, extent)).collect()
            } else {
                (0..n).map(|_| dtype.round(random_value(rng))).collect()
            };
            Tensor {
                dtype,
                shape: shape.clone(),
                data,
            }
        })
        .collect();
    Case {
        inputs,
        params: sizes.params.clone(),
    }
}

/// Moderate values; a fifth are small exact numbers so ties (argmax) and equalities
/// (eq, where) actually happen.
pub(super) fn random_value(rng: &mut StdRng) -> f64 {
    if rng.random_bool(0.2) {
        *[-1.0, 0.0, 0.5, 1.0, 2.0].choose(rng).unwrap_or(&0.0)
    } else {
        rng.random_range(-2.0..2.0)
    }
}

/// The size of the axis an i32 input gathers along (the smallest, if several selects use it).
pub(super) fn gathered_extent(
    program: &Program,
    index: NodeId,
    shapes: Option<&[Vec<usize>]>,
) -> i64 {
    let shapes = match shapes {
        Some(s) => s,
        None => return 4,
    };
    program
        .nodes
        .iter()
        .filter_map(|n| match &n.op {
            crate::uop::Uop::Select { axis, x, index: i } if *i == index => {
                Some(shapes[x.0][*axis] as i64)
            }
            _ => None,
        })
        .min()
        .unwrap_or(4)
}

/// Mostly in `[0, extent)`, sometimes just outside on either side.
pub(super) fn random_index(rng: &mut StdRng, extent: i64) -> f64 {
    if extent > 0 && rng.random_bool(0.8) {
        rng.random_range(0..extent) as f64
    } else {
        *[-1, extent, extent + 1].choose(rng).unwrap_or(&-1) as f64
    }
}
