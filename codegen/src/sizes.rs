//! Checked sizes: the one place where a symbolic shape becomes concrete sizes, an
//! element count, the bytes a run needs and the iteration count of a loop nest.
//!
//! Every size is computed with checked arithmetic: a size that is negative or
//! overflows, an element count beyond `i64::MAX` (index arithmetic is `i64`), or a
//! loop nest whose iteration count overflows is an error naming the tensor and the
//! size expression, never a wrapped number. The interpreters, the command line and
//! the JIT all go through [`concrete_shape`], [`element_count`], [`account`] and
//! [`check_iterations`] before they allocate or run anything; a compiled kernel's run
//! is accounted in one place, [`Bound::check_run`](crate::signature::Bound::check_run).

use uop_runtime::{Ledger, MemoryError};

use crate::index::{Bindings, Env, Expr, Interval, Ranges, list};
use crate::loops::{Block, LoopProgram, Stmt};
use crate::uop::BindError;

/// The largest element count or iteration count a program may have: index
/// arithmetic is done in `i64`.
pub const MAX_COUNT: u64 = i64::MAX as u64;

/// The number of elements of a concrete shape; `None` if it exceeds [`MAX_COUNT`]
/// (or a size does).
pub fn element_count(shape: &[usize]) -> Option<usize> {
    uop_runtime::elements(shape)
}

/// The concrete sizes of the symbolic `shape` of the tensor `name` under `env`:
/// an error if a size cannot be evaluated (overflow, division by zero), is
/// negative, or the element count exceeds [`MAX_COUNT`].
pub fn concrete_shape(name: &str, shape: &[Expr], env: &impl Env) -> Result<Vec<usize>, BindError> {
    let size_error = |message: String| BindError::Size {
        node: name.to_string(),
        message,
    };
    let sizes = shape
        .iter()
        .map(|d| {
            let v = d.eval(env).map_err(|e| size_error(e.to_string()))?;
            usize::try_from(v).map_err(|_| size_error(format!("`{d}` is {v}, a negative size")))
        })
        .collect::<Result<Vec<usize>, BindError>>()?;
    if element_count(&sizes).is_none() {
        return Err(size_error(format!(
            "{} is {sizes:?}, more than {MAX_COUNT} elements",
            if shape.len() == 1 {
                format!("`{}`", shape[0])
            } else {
                format!("`{}`", list(shape))
            },
        )));
    }
    Ok(sizes)
}

/// Adds a tensor of `shape` (a checked shape) holding `element_size`-byte values
/// to `ledger`.
pub fn account(
    ledger: &mut Ledger,
    name: &str,
    shape: &[usize],
    element_size: usize,
) -> Result<(), MemoryError> {
    // Checked shapes have at most MAX_COUNT elements; an unchecked one counts as
    // too many, which the ledger refuses.
    let elements = element_count(shape).map_or(u64::MAX, |n| n as u64);
    ledger.add(name, elements, element_size as u64)
}

/// The bytes the interpreters need for tensors of `shapes` (they hold every value
/// as an `f64`), checked against the memory limit before anything is allocated.
pub fn account_interpreter<'a>(
    tensors: impl IntoIterator<Item = (&'a str, &'a [usize])>,
) -> Result<(), MemoryError> {
    let mut ledger = Ledger::new();
    for (name, shape) in tensors {
        account(&mut ledger, name, shape, std::mem::size_of::<f64>())?;
    }
    ledger.check()
}

/// Checks that no block of `program` runs more than [`MAX_COUNT`] iterations under
/// `bindings`: an iteration count that overflows is refused before anything runs
/// rather than wrapping (or running "forever").
///
/// A loop whose range depends on an outer loop's variable is counted by the
/// largest range it can have.
pub fn check_iterations(program: &LoopProgram, bindings: &Bindings) -> Result<(), BindError> {
    for (k, block) in program.blocks.iter().enumerate() {
        check_block(program, k, block, bindings)?;
    }
    Ok(())
}

fn check_block(
    program: &LoopProgram,
    k: usize,
    block: &Block,
    bindings: &Bindings,
) -> Result<(), BindError> {
    let mut ranges = Ranges::default();
    for (n, v) in &bindings.names {
        ranges.names.insert(n.clone(), Interval::point(*v));
    }
    for (n, v) in &bindings.params {
        ranges.params.insert(n.clone(), Interval::point(*v));
    }
    let mut count: u64 = 1;
    let mut extents = Vec::new();
    for l in &block.loops {
        let exact = match (l.start.eval(bindings), l.end.eval(bindings)) {
            (Ok(s), Ok(e)) => Some((s, e)),
            _ => None,
        };
        let (lo, hi) = match exact {
            Some(se) => se,
            None => {
                let (Some(s), Some(e)) = (l.start.interval(&ranges), l.end.interval(&ranges))
                else {
                    // Unbounded: the interpreter evaluates it as it runs.
                    return Ok(());
                };
                (s.lo, e.hi)
            }
        };
        if let Some(r) = Interval::from_half_open(lo, hi) {
            ranges.indices.insert(l.id.0, r);
        }
        let trips = u64::try_from(i128::from(hi) - i128::from(lo)).unwrap_or(0);
        extents.push(format!("{}..{}", l.start, l.end));
        count = match count.checked_mul(trips) {
            Some(c) if c <= MAX_COUNT => c,
            _ if trips == 0 => 0,
            _ => {
                return Err(BindError::Iterations {
                    block: k,
                    tensor: written_tensor(program, block),
                    loops: extents.join(", "),
                });
            }
        };
        if count == 0 {
            return Ok(());
        }
    }
    Ok(())
}

/// Values in the largest panel a JIT kernel of `program` packs under `bindings`
/// (`uop_runtime::microkernel::uop_pack_f32`): over the nests it runs through a
/// micro-kernel ([`plan::contraction_nests`](crate::plan::contraction_nests)),
/// the most reduction steps one column tile has — the product of the reduction
/// loops' trip counts, a range that depends on an outer loop counted by the
/// largest it can have — times the tile's `columns`. The thread's panel grows to
/// that and is kept, so a run accounts it whole. `None` when a count overflows;
/// 0 without such a nest (or where a range is unbounded: the panel then checks
/// its own size against the memory limit before it grows).
pub fn panel_elements(program: &LoopProgram, bindings: &Bindings, columns: u64) -> Option<u64> {
    let mut most: u64 = 0;
    for block in &program.blocks {
        let nests = crate::plan::contraction_nests(program, &block.loops);
        if nests.is_empty() {
            continue;
        }
        let Some(trips) = loop_trips(block, bindings) else {
            continue;
        };
        // `[r, c, k…]` from position `at`: the loops after `c` are the reductions.
        for at in nests {
            let steps = trips[at + 2..]
                .iter()
                .try_fold(1_u64, |n, &t| n.checked_mul(t))?;
            most = most.max(steps.checked_mul(columns)?);
        }
    }
    Some(most)
}

/// The most iterations each loop of `block` runs, outermost first (a range that
/// depends on an outer loop's variable by the largest it can have); `None` when a
/// range is unbounded.
fn loop_trips(block: &Block, bindings: &Bindings) -> Option<Vec<u64>> {
    let mut ranges = Ranges::default();
    for (n, v) in &bindings.names {
        ranges.names.insert(n.clone(), Interval::point(*v));
    }
    for (n, v) in &bindings.params {
        ranges.params.insert(n.clone(), Interval::point(*v));
    }
    let mut trips = Vec::with_capacity(block.loops.len());
    for l in &block.loops {
        let (lo, hi) = match (l.start.eval(bindings), l.end.eval(bindings)) {
            (Ok(s), Ok(e)) => (s, e),
            _ => {
                let s = l.start.interval(&ranges)?;
                let e = l.end.interval(&ranges)?;
                (s.lo, e.hi)
            }
        };
        if let Some(r) = Interval::from_half_open(lo, hi) {
            ranges.indices.insert(l.id.0, r);
        }
        trips.push(u64::try_from(i128::from(hi) - i128::from(lo)).unwrap_or(0));
    }
    Some(trips)
}

/// The name of the tensor a block writes (its first store), for messages.
fn written_tensor(program: &LoopProgram, block: &Block) -> String {
    let stmts = block
        .loops
        .iter()
        .flat_map(|l| &l.stmts)
        .chain(&block.stmts);
    for s in stmts {
        if let Stmt::Store { access, .. } | Stmt::Accumulate { access, .. } = s
            && let Some(t) = program.tensors.get(access.tensor.0)
        {
            return t.name.clone();
        }
    }
    "?".to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::index::parse_expr;
    use crate::uop::{Builder, DType, ReduceOp};

    fn exprs(list: &[&str]) -> Vec<Expr> {
        list.iter().map(|s| parse_expr(s).unwrap()).collect()
    }

    fn names(pairs: &[(&str, i64)]) -> Bindings {
        Bindings {
            names: pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            ..Bindings::default()
        }
    }

    #[test]
    fn a_shape_with_too_many_elements_names_the_tensor_and_the_expression() {
        let b = names(&[("M", 1 << 40)]);
        let e = concrete_shape("y", &exprs(&["M", "M"]), &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the shape of `y`: `[M, M]` is [1099511627776, 1099511627776], more than \
             9223372036854775807 elements"
        );
        assert_eq!(
            concrete_shape("y", &exprs(&["M", "2"]), &b).unwrap(),
            vec![1 << 40, 2]
        );
    }

    #[test]
    fn sizes_that_overflow_or_are_negative_are_errors() {
        let b = names(&[("M", i64::MAX)]);
        let e = concrete_shape("y", &exprs(&["M + 1"]), &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the shape of `y`: integer overflow in `M + 1`"
        );
        let e = concrete_shape("y", &exprs(&["3 - 5"]), &b).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the shape of `y`: `3 - 5` is -2, a negative size"
        );
        // An empty axis makes the count 0 whatever the others are.
        assert_eq!(element_count(&[0, usize::MAX >> 1]), Some(0));
    }

    #[test]
    fn the_interpreters_account_eight_bytes_per_element() {
        let huge = [1usize << 40, 1 << 22];
        let e = account_interpreter([("x", &[4usize][..]), ("t", &huge[..])]).unwrap_err();
        assert!(
            e.to_string()
                .contains("`t` has 4611686018427387904 elements of 8 bytes"),
            "{e}"
        );
        assert!(account_interpreter([("x", &[4usize][..])]).is_ok());
    }

    #[test]
    fn a_loop_nest_whose_iteration_count_overflows_is_refused() {
        // sum over a 2^32 x 2^32 broadcast: no tensor is large, the loops are.
        let mut b = Builder::new(DType::F64);
        let x = b.input("x", DType::F64, &["N"]).unwrap();
        let big = b
            .reindex(x, &["4294967296", "4294967296"], &[], &["0"])
            .unwrap();
        let s = b.reduce(ReduceOp::Sum, &[0, 1], big).unwrap();
        let lowered = crate::loops::lower(&b.combine(&[x], &[s]).unwrap());
        let program = crate::pass::optimize(&lowered, &Default::default()).unwrap();
        let bindings = program.bind(&[&[1]], &HashMap::new()).unwrap();
        let e = check_iterations(&program, &bindings).unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains("more than 9223372036854775807 iterations"),
            "{message}"
        );
        assert!(message.contains("0..4294967296"), "{message}");
        // The same nest over 2^31 x 2^31 is large but countable.
        let mut b = Builder::new(DType::F64);
        let x = b.input("x", DType::F64, &["N"]).unwrap();
        let big = b
            .reindex(x, &["2147483648", "2147483648"], &[], &["0"])
            .unwrap();
        let s = b.reduce(ReduceOp::Sum, &[0, 1], big).unwrap();
        let program = crate::loops::lower(&b.combine(&[x], &[s]).unwrap());
        let bindings = program.bind(&[&[1]], &HashMap::new()).unwrap();
        assert!(check_iterations(&program, &bindings).is_ok());
    }
}
