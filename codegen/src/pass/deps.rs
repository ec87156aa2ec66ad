//! Dependencies: which tensors each block reads and writes, and which blocks touch
//! each tensor (an analysis used by dead-code elimination and fusion).
//!
//! Guarantee: the sets are complete — every load (including loads inside
//! data-dependent subscripts) is a read, every store or accumulate target a write —
//! so two blocks that do not [`conflict`](BlockDeps::conflicts) can run in either
//! order with the same results.
//!
//! Cost: O(E + A log T) to build; `conflicts` is linear in the two blocks' tensor sets.

use std::collections::BTreeSet;
use std::fmt;

use crate::loops::{Block, LoopProgram, TensorId};

use super::walk::block_accesses;

/// The tensors one block reads and writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockDeps {
    /// Tensors loaded anywhere in the block.
    pub reads: BTreeSet<TensorId>,
    /// Tensors stored or accumulated into anywhere in the block.
    pub writes: BTreeSet<TensorId>,
}

impl BlockDeps {
    /// The reads and writes of `block`.
    pub fn of(block: &Block) -> Self {
        let mut d = BlockDeps::default();
        for a in block_accesses(block) {
            if a.write {
                d.writes.insert(a.access.tensor);
            } else {
                d.reads.insert(a.access.tensor);
            }
        }
        d
    }

    /// True when running the two blocks in the other order could change a result:
    /// one writes a tensor the other reads or writes.
    pub fn conflicts(&self, other: &BlockDeps) -> bool {
        !self.writes.is_disjoint(&other.writes)
            || !self.writes.is_disjoint(&other.reads)
            || !self.reads.is_disjoint(&other.writes)
    }
}

/// The dependencies of a whole program, by block and by tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deps {
    /// Per block, in program order.
    pub blocks: Vec<BlockDeps>,
    /// Per tensor (by id), the blocks reading it.
    pub readers: Vec<BTreeSet<usize>>,
    /// Per tensor (by id), the blocks writing it.
    pub writers: Vec<BTreeSet<usize>>,
    /// Tensor names, for printing.
    names: Vec<String>,
}

impl Deps {
    /// The dependencies of `p`.
    ///
    /// ```
    /// use uop_codegen::{loops, pass::Deps, uop::{Builder, DType, UnaryOp}};
    /// let mut b = Builder::new(DType::F32);
    /// let x = b.input("x", DType::F32, &["N"])?;
    /// let y = b.unary(UnaryOp::Exp, x)?;
    /// let z = b.unary(UnaryOp::Neg, y)?;
    /// let p = loops::lower(&b.combine(&[x], &[z])?);
    /// let deps = Deps::new(&p);
    /// assert_eq!(deps.to_string(), "block 0: reads x; writes t1\nblock 1: reads t1; writes t2\n");
    /// # Ok::<(), uop_codegen::uop::UopError>(())
    /// ```
    pub fn new(p: &LoopProgram) -> Self {
        let blocks: Vec<BlockDeps> = p.blocks.iter().map(BlockDeps::of).collect();
        let mut readers = vec![BTreeSet::new(); p.tensors.len()];
        let mut writers = vec![BTreeSet::new(); p.tensors.len()];
        for (k, d) in blocks.iter().enumerate() {
            for t in &d.reads {
                if let Some(r) = readers.get_mut(t.0) {
                    r.insert(k);
                }
            }
            for t in &d.writes {
                if let Some(w) = writers.get_mut(t.0) {
                    w.insert(k);
                }
            }
        }
        Deps {
            blocks,
            readers,
            writers,
            names: p.tensors.iter().map(|t| t.name.clone()).collect(),
        }
    }

    fn name(&self, t: TensorId) -> String {
        self.names
            .get(t.0)
            .cloned()
            .unwrap_or_else(|| format!("%{}", t.0))
    }

    fn names_of(&self, set: &BTreeSet<TensorId>) -> String {
        if set.is_empty() {
            return "-".into();
        }
        set.iter()
            .map(|&t| self.name(t))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// One line per block: `block 3: reads a, b; writes c`.
impl fmt::Display for Deps {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, d) in self.blocks.iter().enumerate() {
            writeln!(
                f,
                "block {k}: reads {}; writes {}",
                self.names_of(&d.reads),
                self.names_of(&d.writes)
            )?;
        }
        Ok(())
    }
}
