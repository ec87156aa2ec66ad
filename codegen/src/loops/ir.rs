//! The loop IR (DESIGN.md §5): tensors, blocks of perfectly nested loops,
//! loop-carried variables, statements and value expressions. No other control flow.

use crate::index::Expr;
use crate::uop::{Accum, BinaryOp, DType, UnaryOp};

/// A tensor of a loop program, by position in [`LoopProgram::tensors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub usize);

/// A loop-carried variable, unique within a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub usize);

/// A loop, unique within its block (lowering numbers loops uniquely in the program;
/// a pass adding a block may reuse ids, as `order` does); `Expr::Index(n)` is the
/// variable of loop `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LoopId(pub usize);

/// The role of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TensorKind {
    /// Supplied by the caller, read only.
    Input,
    /// Produced for the caller.
    Output,
    /// Allocated by the kernel for intermediate values.
    Temp,
}

/// A tensor declaration: name, symbolic shape, element type and role.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorDecl {
    /// Name (the uop node's name).
    pub name: String,
    /// Symbolic shape, over named dims and `$params`.
    pub shape: Vec<Expr>,
    /// Element type.
    pub dtype: DType,
    /// Role.
    pub kind: TensorKind,
    /// Schedule annotation (set by the `rows` pass): a temporary used only inside
    /// one group of [joined](Schedule::joined) blocks, each of whose accesses has
    /// the bare variable of its block's outermost loop as the subscript on this
    /// axis, and every row of which is stored before it is read. A backend that
    /// runs the group row by row may keep just one row of it (per thread); one that
    /// ignores the annotation allocates it whole, with the same results. Verified:
    /// a temporary, the axis exists, only blocks of one joined group touch it, each
    /// access with the bare outermost loop variable on this axis.
    pub row_local: Option<usize>,
}

/// One subscript of a tensor access.
#[derive(Clone, Debug, PartialEq)]
pub enum Subscript {
    /// An index expression over loop variables, dims and params.
    Expr(Expr),
    /// A data-dependent position: the value, floored to an integer (from `select`).
    Value(Box<Value>),
}

/// A tensor element access `t[s0, s1, ...]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    /// The tensor.
    pub tensor: TensorId,
    /// One subscript per axis.
    pub index: Vec<Subscript>,
    /// Whether the access still needs a bounds check: an out-of-range load reads the
    /// fill value and an out-of-range store is skipped. False only where it is proven
    /// in range.
    pub checked: bool,
}

/// A scalar value computed in a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A tensor element; out of range (when checked) reads `fill`.
    Load {
        /// What is read.
        access: Access,
        /// The value of an out-of-range read.
        fill: f64,
    },
    /// The current value of a carried variable.
    Var(VarId),
    /// A literal.
    Const(f64),
    /// A `$param`, as a float.
    Param(String),
    /// An index expression's value, as a float (iota, argmax positions, mean counts).
    Index(Expr),
    /// `op(x)`.
    Unary(UnaryOp, Box<Value>),
    /// `op(a, b)`.
    Binary(BinaryOp, Box<Value>, Box<Value>),
    /// `c != 0 ? a : b`.
    Where(Box<Value>, Box<Value>, Box<Value>),
}

/// A statement; statements of a loop run in order after its inner loop.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `t[idx] = value`.
    Store {
        /// Target element.
        access: Access,
        /// Stored value.
        value: Value,
    },
    /// `t[idx] op= value`.
    Accumulate {
        /// Target element.
        access: Access,
        /// Combining operator.
        op: Accum,
        /// Combined value.
        value: Value,
    },
    /// `var op= value` on a carried variable.
    Update {
        /// The variable.
        var: VarId,
        /// Combining operator (the variable's own).
        op: Accum,
        /// Combined value.
        value: Value,
    },
}

/// A variable carried by a loop: reset to the identity of `op` at the start of every
/// iteration of the loop that declares it, updated by statements nested inside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Carried {
    /// The variable.
    pub var: VarId,
    /// Its reduction (gives the identity).
    pub op: Accum,
}

/// How a backend may run a loop: annotations set by the schedule passes (DESIGN.md
/// §6, step 7). An annotation never changes which values a program computes, only,
/// where it says so, the association of float reductions; the interpreters and any
/// backend may ignore every annotation and still run the program correctly.
///
/// Each field states what its mark guarantees. The structural part of each
/// guarantee (where the mark may sit, the shape of the nest under it) is checked by
/// [`verify`](super::verify) after every pass in the tests; the dependence part
/// (disjoint writes of `parallel`, shared loads of `tile`) is the pass's proof,
/// checked by the differential tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    /// The loop's iterations write disjoint elements: its range may be shared out
    /// among threads. On a block's outermost loop, each thread runs its share of
    /// the iterations. On an inner loop (the loops outside it carry a dependence, as
    /// a column sum's rows do), each thread runs every iteration of the loops
    /// outside and its share of this one, whose range does not depend on them: every
    /// element is then updated by one thread, in the original order. At most one
    /// loop of a block is marked (verified), and an inner marked loop's range does
    /// not depend on the loops outside it (verified).
    pub parallel: bool,
    /// Set on the outermost loop of a block that reduces into its own carried
    /// variables (a full sum): the loop may run in pieces of a fixed number of
    /// iterations, chosen by the backend and never by the thread count, each
    /// piece folding into fresh copies of the variables (from their identity), the
    /// pieces' results then combined in piece order before the block's statements.
    /// Reassociates `+` and `*` like [`split`](Schedule::split); the pieces may run
    /// on different threads and the result is the same on any number of them.
    /// Verified: only on the outermost loop, the block has carried variables and its
    /// loops hold nothing but updates.
    pub pieces: bool,
    /// This innermost loop's updates of carried variables may keep several
    /// independent partial results (one per vector lane and accumulator), combined
    /// in order after the loop: reassociates `+` and `*` (not `max`/`min`, which are
    /// exact in any order). Verified: only on the innermost loop.
    pub split: bool,
    /// This loop and the loop just outside it run as a register tile: a block of
    /// outer-loop rows by this loop's columns whose carried variables are kept in
    /// registers while the reduction loops inside run (see [`Tile`]). Set by the
    /// `tile` pass (the row loop it chose moved just outside) or the `channels` pass
    /// (a convolution's output channels as the columns, its weights read from a
    /// copy with that axis last). Verified: the loop has a parent, carried
    /// variables of its own, and reduction loops inside that carry nothing and only
    /// update those variables.
    pub tile: Option<Tile>,
    /// This loop and the loop just outside it run in square blocks that fit the
    /// cache (an element-wise nest that reads across the rows it writes along, as a
    /// transpose does; set by the `transpose` pass, which proves that the nest
    /// writes distinct elements it never reads, so any order of its iterations
    /// gives the same results). Verified: the innermost loop of a nest that carries
    /// nothing and has statements only in this loop, with a parent loop whose
    /// variable its range does not use.
    pub blocked: bool,
    /// This innermost loop and the loop just outside it may run several rows at a
    /// time, jammed: for each element of this loop, the rows' values combined into
    /// it in row order, the element loaded and stored once per group of rows (a
    /// column sum). Set by the `jam` pass. Verified in full (the guarantee is
    /// structural): the innermost loop, whose range does not use its parent's
    /// variable, carries nothing and holds one statement, an accumulation into an
    /// element that does not move with the parent, of a value that does not read
    /// the accumulated tensor; the parent carries nothing and holds no statements.
    /// Combining several rows' values into each element in turn is then the same
    /// sequence of operations on it as the nest's. A backend realizes it where it
    /// runs the two loops as a pair (not where the parent is run by a joined group).
    pub jammed: bool,
    /// This innermost loop may run in chunks: a chunk of iterations' values
    /// computed first, then stored (so their dependency chains overlap; an
    /// element-wise loop of math functions such as `exp`, `tanh`). Set by the
    /// `chunk` pass, which also judges the math heavy enough to pay. Verified (the
    /// structural half, [`chunkable`](super::analysis::chunkable)): the innermost
    /// loop, carrying nothing, whose one statement is an unchecked plain store of a
    /// value that does not read the stored tensor; each value is then the same
    /// whenever it is computed within the chunk.
    pub chunked: bool,
    /// This innermost loop may run in two runs split where the element it stores
    /// starts a cache line (`[line split]`): the iterations before that element,
    /// then the rest, in order, so that the second run's vector stores never
    /// straddle two lines; a [`chunked`](Schedule::chunked) loop starts its chunks
    /// there. Set by the `line` pass. Verified (the whole guarantee, structural):
    /// the innermost loop, with an unchecked store of unit stride along it
    /// ([`line_store`](super::analysis::line_store), the first such store, is the
    /// one aligned), and neither [`split`](Schedule::split) nor
    /// [`blocked`](Schedule::blocked) (which run the loop another way). The
    /// iterations run in the same order, so nothing computed changes.
    pub line_split: bool,
    /// The argument of [`split`](Schedule::split), `[split(aligned x[i0])]`: a
    /// backend that runs this split loop over a range (a piece of a long
    /// reduction) may start its whole chunks where this load's element starts a
    /// cache line, rotating the partial results back into place, so that no vector
    /// load of it straddles two lines. The load is named by its position among the
    /// loads of the loop's statements, in the order
    /// [`loads`](super::analysis::loads) lists them. Set by the `align` pass.
    /// Verified: on a `[split]` loop, naming an unchecked load of unit stride along
    /// it ([`alignable`](super::analysis::alignable)). Each lane adds the same
    /// elements in the same order, so the results are those of the split loop.
    pub aligned: Option<usize>,
    /// The argument of `[parallel]` on an inner loop, `[parallel(lines y[i0, i1])]`:
    /// the write, by its position among the writes of the loop's body (see
    /// [`LoadSet`] for the order), whose cache lines the threads' shares start at.
    /// Threads then share the loop out at multiples of the target's
    /// [`share_step`](crate::target::Target::share_step) iterations counted from
    /// the first line boundary of that write, so they rarely write one cache line
    /// in every iteration of the loops outside. Set by the `share` pass. Verified
    /// ([`line_write`](super::analysis::line_write)): on an inner `[parallel]`
    /// loop, the named write is unit-stride along it, at an offset free of the
    /// other loops, and every write of the block is to its tensor, which is not a
    /// temporary kept [one row at a time](TensorDecl::row_local). Without it an
    /// inner parallel loop is shared out in equal parts.
    pub lines: Option<u8>,
    /// This block's outermost loop is joined to the outermost loop of the block
    /// before it (same range, same `parallel`): a backend may run the two as one
    /// loop, iteration `i` of the earlier block's body followed by iteration `i` of
    /// this one's. Set by the `rows` pass only where each iteration of either
    /// touches just its own row of what the other writes. Verified: only on the
    /// outermost loop, after a block whose outermost loop has the same range (sizes
    /// equal by name or assertion) and the same `parallel`.
    pub joined: bool,
}

/// A register tile on a loop `C` whose parent `R` and inner reduction loops `K…`
/// form `for r in R { for c in C { v = id; for k in K… { v op= f(r, c, k) }; stmts(v) } }`.
/// The backend picks the tile's rows and columns for its target (vector width,
/// register count) and runs the rest of the range untiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tile {
    /// The outermost reduction loop may also be cut into blocks that fit the cache,
    /// each block's partial sums added into the output (reassociates `+`; legal
    /// only where every statement after the reduction is `out[..] = v`; verified).
    pub block_reduction: bool,
    /// The argument of `[tile]`, `[tile(packed w[i2, i1])]`: the loads of the
    /// reduction that a backend may copy, per tile of columns, into a contiguous
    /// panel that every tile of rows then reads in order (matmul's `b[k, j]`). Set
    /// by the `pack` pass. Verified ([`packable`](super::analysis::packable)): each
    /// named load is an operand of an update of the innermost reduction loop, of a
    /// float tensor the block does not write, that moves with the columns and not
    /// with the rows, and is not a sliding window
    /// ([`sliding`](super::analysis::sliding)); the reduction loops' ranges do not
    /// use the row or column loop. Every row tile then reads the same values, so
    /// reading them from the panel changes no result.
    pub packed: LoadSet,
    /// The second argument, `[rows(packed a[i0, i1])]` after `tile`: the loads of
    /// the reduction that a backend may copy, per block of rows, into a contiguous
    /// row panel that every tile of columns then reads in order (matmul's
    /// `a[i, k]`). Set by the `pack-rows` pass. Verified
    /// ([`row_packable`](super::analysis::row_packable)): as
    /// [`packed`](Tile::packed) with rows and columns swapped, each named load moves
    /// with the rows and not with the columns and is not a sliding window along the
    /// rows. Every column tile then reads the same values.
    pub rows: LoadSet,
}

/// A set of the loads (or writes) of a loop's body, by position: the `k`-th load of
/// the statements of the loop and the loops inside it, outermost loop first, in the
/// order [`stmt_accesses`](super::analysis::stmt_accesses) visits them
/// ([`body_accesses`](super::analysis::body_accesses)). `Copy`, so a [`Schedule`]
/// stays `Copy`; positions from 64 on cannot be named (a mark simply leaves them out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LoadSet(u64);

impl LoadSet {
    /// The positions a set can hold: `0..CAPACITY`.
    pub const CAPACITY: usize = 64;

    /// Adds position `k`; false (and nothing added) when `k` is past [`LoadSet::CAPACITY`].
    pub fn insert(&mut self, k: usize) -> bool {
        if k >= Self::CAPACITY {
            return false;
        }
        self.0 |= 1 << k;
        true
    }

    /// Whether position `k` is in the set.
    pub fn contains(&self, k: usize) -> bool {
        k < Self::CAPACITY && self.0 & (1 << k) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The positions, ascending.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..Self::CAPACITY).filter(|&k| self.contains(k))
    }
}

/// One loop of a nest: `for i{id} in start..end { reset carried; inner loop; stmts }`.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    /// Identity of the loop (and of its index variable).
    pub id: LoopId,
    /// First value, inclusive.
    pub start: Expr,
    /// Bound, exclusive.
    pub end: Expr,
    /// Variables reset at every iteration of this loop.
    pub carried: Vec<Carried>,
    /// Statements run after the inner loop, every iteration.
    pub stmts: Vec<Stmt>,
    /// How backends may run it (the default: plainly, in order).
    pub schedule: Schedule,
}

/// A perfect loop nest. The block itself acts as a loop that runs once: its carried
/// variables are reset, the nest runs, then its statements run (this is where a
/// rank-0 result is written).
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Loops, outermost first.
    pub loops: Vec<Loop>,
    /// Variables reset once, before the nest.
    pub carried: Vec<Carried>,
    /// Statements run once, after the nest.
    pub stmts: Vec<Stmt>,
}

/// A loop program: what every pass transforms and every backend emits.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopProgram {
    /// Float type of the program.
    pub dtype: DType,
    /// Declared `$params`.
    pub params: Vec<String>,
    /// All tensors.
    pub tensors: Vec<TensorDecl>,
    /// Program inputs in call order.
    pub inputs: Vec<TensorId>,
    /// Program outputs in call order.
    pub outputs: Vec<TensorId>,
    /// Blocks, run in order.
    pub blocks: Vec<Block>,
    /// Size equalities checked at entry.
    pub assertions: Vec<(Expr, Expr)>,
}
