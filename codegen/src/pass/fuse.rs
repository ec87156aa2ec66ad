//! Loop fusion: merges two blocks into one loop nest when the loops of one match, one
//! to one by range, the loops of the other or an outer part (a *prefix*) of them,
//! reordering loops between pivots where needed.
//!
//! Guarantee: every output is bit-identical to the unfused program's. No float
//! operation is reordered: each tensor element and each carried variable sees the
//! same sequence of stores, accumulations and updates, and every load reads the same
//! value it read before.
//!
//! # Rules
//!
//! - **Loops running once** (`for i in c..c + 1`, literals) are removed from every
//!   block first, as `cleanup` does, so a reduction's kept axis of size 1 does not
//!   stop its consumer from matching.
//!
//! - **Merge left**: block `j` joins an earlier block `i` (at `i`'s place) when
//!   nothing between them conflicts with `j` (writes what `j` reads, or touches what
//!   `j` writes). **Merge right**: otherwise `i` joins `j` (at `j`'s place) when
//!   nothing between them conflicts with `i` — this moves a zero-reset block or an
//!   unrelated producer out of the way. In the merged nest, at every level, `i`'s
//!   carried variables and statements come before `j`'s.
//! - **Matching**: the shallower nest's loops (all of them, possibly none) pair up
//!   with the outermost loops of the deeper nest, with equal ranges (start and end
//!   equal under [`ShapeGroups`]); the deeper nest's other loops stay inside, holding
//!   only its own statements. The pairing follows the conflicting accesses (a
//!   producer's `t[i0, i1, i2]` read as `t[i9, i11, i10]` pairs `i9` with `i0`, `i11`
//!   with `i1`, `i10` with `i2`); loops not pinned that way pair by range, preferring
//!   the same position. Every statement keeps its level, so a consumer of a
//!   reduction's result joins the reduction's nest as statements of the kept loop
//!   (`for m { for n { v = 0; for k {..}; t[m, n] = v; c[m, n] = t[m, n] } }`), and a
//!   consumer with no loops joins the block-level statements.
//! - **Pivots**: a loop holding statements or carried variables is a pivot. Loops
//!   are reordered only within a *segment* — the loops after one pivot up to and
//!   including the next — so every statement and every carried variable keeps the
//!   same set of enclosing loops (statements and carried variables stay at their
//!   depth; only the loop headers move). A segment between a carried variable's loop
//!   and the statements updating or reading it is never reordered (that would change
//!   the order of a reduction), and inside one block two accesses to the same
//!   element must keep their order: within every reordered segment enclosing both,
//!   at most one loop may be left free by the subscripts they share.
//! - **Dependences across the pair**: for every access of `i` and access of `j` to
//!   the same tensor, one of them a write, the subscripts must be identical after the
//!   pairing, every loop enclosing `j`'s access must appear in them as a bare loop
//!   variable, and `i`'s access must sit at least as deep as `j`'s. Then both touch an
//!   element only in the same iteration of the loops enclosing `j`'s access, and
//!   there `i`'s access runs first: a statement runs after the inner loop of its
//!   level, and at one level `i`'s statements precede `j`'s. A shifted, transposed
//!   or reduced read of a tensor the other block writes forbids the fusion, and so
//!   does a read of a value the other block finishes only at a shallower level (a
//!   reduction read inside the reduced loop). The rule does not depend on which nest
//!   is deeper: when `i` is the shallower one its statements run after `j`'s deeper
//!   ones of the same iteration, which the rule allows only for pairs that do not
//!   conflict or where `j`'s access is no deeper than `i`'s.
//!
//! Why this is enough: within each block the order of its own statement instances
//! is unchanged (same enclosing loops, same list order); a pair of instances from
//! different blocks that touch different elements (or different carried variables —
//! those are never shared) commutes; and a conflicting pair is ordered `i` first by
//! the dependence rule above.
//!
//! Blocks are merged greedily until no pair can be merged: first the legal merges of
//! related nests of equal depth (a dependence between them), then of unrelated ones,
//! then prefix merges of related nests — each time the first legal pair with `j`
//! smallest, then `i` nearest. An unrelated pair is never prefix-merged: it would
//! save a loop header, not a temporary.
//!
//! Cost: near-linear, O(n log n) for chains of n nests of equal or different depths
//! and for n independent ones (see `State`, `links` and
//! `docs/decisions.md`).

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};

use crate::index::Expr;
use crate::loops::{Block, Loop, LoopProgram, Stmt, Subscript, TensorId};

use super::cleanup::remove_loops_running_once;
use super::deps::BlockDeps;
use super::shape_groups::ShapeGroups;
use super::walk::{AccessAt, block_accesses, levels, rename_loops, stmt_reads_var};

mod links;

use links::Links;

/// Fuses blocks as long as a legal merge exists (see the module docs).
pub fn fuse(p: &LoopProgram) -> LoopProgram {
    let groups = ShapeGroups::new(p);
    let mut blocks = p.blocks.clone();
    // A size-1 axis is a loop in one nest and a literal subscript in another (a
    // reduction's kept axis and its consumer): without those loops the nests match.
    for b in &mut blocks {
        remove_loops_running_once(b);
    }
    let mut state = State::new(blocks, &groups);
    while let Some((i, j, plan)) = state.find_merge(&groups) {
        state.apply(i, j, plan, &groups);
    }
    LoopProgram {
        blocks: state.into_blocks(),
        ..p.clone()
    }
}

/// A block with what the search asks of it again and again, kept up to date across
/// merges instead of recomputed.
struct Node {
    block: Block,
    /// Unique among all nodes ever made: a merged block is a new node.
    uid: usize,
    deps: BlockDeps,
    accesses: Vec<AccessAt>,
    /// Positions in `accesses` by tensor.
    by_tensor: HashMap<TensorId, Vec<usize>>,
    /// The canonical ranges of the loops, sorted: nests of equal depth fuse only
    /// when these are equal (every loop pairs with one of the same range).
    ranges: Vec<(Expr, Expr)>,
}

impl Node {
    fn new(block: Block, uid: usize, groups: &ShapeGroups) -> Self {
        let accesses = block_accesses(&block);
        let mut node = Node {
            ranges: ranges(&block, groups),
            block,
            uid,
            deps: BlockDeps::default(),
            accesses: Vec::new(),
            by_tensor: HashMap::new(),
        };
        node.add_accesses(accesses);
        node
    }

    fn add_accesses(&mut self, accesses: Vec<AccessAt>) {
        for a in accesses {
            let set = if a.write {
                &mut self.deps.writes
            } else {
                &mut self.deps.reads
            };
            set.insert(a.access.tensor);
            self.by_tensor
                .entry(a.access.tensor)
                .or_default()
                .push(self.accesses.len());
            self.accesses.push(a);
        }
    }

    /// Pairs of accesses (`self`'s, one of `ys`) to the same tensor, one a write.
    fn conflicting<'a>(&'a self, ys: &'a [AccessAt]) -> Vec<(&'a AccessAt, &'a AccessAt)> {
        let mut out = Vec::new();
        for y in ys {
            for &k in self.by_tensor.get(&y.access.tensor).into_iter().flatten() {
                let x = &self.accesses[k];
                if x.write || y.write {
                    out.push((x, y));
                }
            }
        }
        out
    }
}

/// The blocks being fused, in slots that keep their order: a merge fills one slot of
/// the pair and empties the other, so slot numbers never shift.
///
/// Cost: the search finds the same merges in the same order as visiting every pair
/// after every merge would, but visits only pairs that a merge can have changed.
/// Related pairs (tiers 1 and 3) are found through the blocks touching each tensor;
/// after a merge only the blocks related to the merged block, or to a block related
/// to the one that disappeared, are visited again (no other pair's blocks,
/// dependencies or blocks between changed). Unrelated pairs (tier 2) are found among
/// the blocks with the same loop ranges, resuming at the merged pair's earlier slot.
/// Dependencies and accesses are kept per block and extended by the merged-in block
/// only; a tensor only the merged block touches is dropped from its dependencies.
/// Pairs whose blocks failed to fuse are not tried again. A chain of `n` element-wise
/// nests, or `n` independent ones, fuses in O(n log n).
///
/// Whether a block may move past the blocks between a pair is read from [`Links`]
/// (each block's nearest related blocks), not by walking them. The unrelated tier
/// sweeps its `j` once, in order (`resume`); a merge marks in `dirty_unrelated` only
/// the already swept `j` that it can have given a legal partner: the merged block,
/// the blocks after it that it may join or that may join it, and, past the block
/// that disappeared, those that were related to it or that a block related to it
/// may now reach. Chains of `n` matmuls, convolutions or softmaxes (nests of
/// different depths and ranges) fuse in O(n log n) that way, where sweeping the
/// unrelated tier again from the merged pair after every merge was cubic.
struct State {
    nodes: Vec<Option<Node>>,
    alive: BTreeSet<usize>,
    next_uid: usize,
    /// Pairs of nodes (by uid) that [`plan_pair`] rejected.
    failed: HashSet<(usize, usize)>,
    /// Per tensor, the slots of the blocks touching it, and of those writing it.
    touching: HashMap<TensorId, BTreeSet<usize>>,
    writing: HashMap<TensorId, BTreeSet<usize>>,
    /// Slots by the loop ranges of their block (canonical, in order).
    by_ranges: HashMap<Vec<(Expr, Expr)>, BTreeSet<usize>>,
    /// Blocks to visit again as `j` in the related tiers (1 and 3).
    dirty: [BTreeSet<usize>; 2],
    /// The first slot to visit as `j` in the unrelated tier (2): those after it are
    /// yet to be swept.
    resume: usize,
    /// Swept slots (below `resume`) to visit again as `j` in the unrelated tier.
    dirty_unrelated: BTreeSet<usize>,
    /// Each slot's nearest related slots.
    links: Links,
}

impl State {
    fn new(blocks: Vec<Block>, groups: &ShapeGroups) -> Self {
        let n = blocks.len();
        let mut state = State {
            nodes: Vec::with_capacity(n),
            alive: (0..n).collect(),
            next_uid: n,
            failed: HashSet::new(),
            touching: HashMap::new(),
            writing: HashMap::new(),
            by_ranges: HashMap::new(),
            dirty: [(0..n).collect(), (0..n).collect()],
            resume: 0,
            dirty_unrelated: BTreeSet::new(),
            links: Links::new(n),
        };
        for (k, b) in blocks.into_iter().enumerate() {
            let node = Node::new(b, k, groups);
            state.index(k, &node, true);
            state.nodes.push(Some(node));
        }
        for k in 0..n {
            state.link(k);
        }
        state
    }

    /// Records the nearest related slots of the block at `slot`.
    fn link(&mut self, slot: usize) {
        let related = self.related(slot);
        let next = related.range(slot + 1..).next().copied();
        let prev = related.range(..slot).next_back().copied();
        self.links.set(slot, next, prev);
    }

    /// Adds (or removes) `slot` to the indexes of the tensors and ranges of `node`.
    fn index(&mut self, slot: usize, node: &Node, add: bool) {
        let edit = |set: &mut BTreeSet<usize>| {
            if add {
                set.insert(slot);
            } else {
                set.remove(&slot);
            }
        };
        for t in node.deps.reads.iter().chain(&node.deps.writes) {
            edit(self.touching.entry(*t).or_default());
        }
        for t in &node.deps.writes {
            edit(self.writing.entry(*t).or_default());
        }
        edit(self.by_ranges.entry(node.ranges.clone()).or_default());
    }

    fn node(&self, slot: usize) -> &Node {
        self.nodes[slot].as_ref().expect("alive slots hold a node")
    }

    fn into_blocks(self) -> Vec<Block> {
        self.nodes.into_iter().flatten().map(|n| n.block).collect()
    }

    /// The slots of the blocks related to the block at `slot` (one of them writes
    /// what the other touches), other than itself.
    fn related(&self, slot: usize) -> BTreeSet<usize> {
        let deps = &self.node(slot).deps;
        let mut out = BTreeSet::new();
        for t in &deps.writes {
            out.extend(self.touching.get(t).into_iter().flatten());
        }
        for t in &deps.reads {
            out.extend(self.writing.get(t).into_iter().flatten());
        }
        out.remove(&slot);
        out
    }

    /// The first legal merge `(i, j, plan)`: tried by [`Tier`], and within a tier
    /// with `j` smallest, then `i` nearest.
    fn find_merge(&mut self, groups: &ShapeGroups) -> Option<(usize, usize, Plan)> {
        while let Some(&j) = self.dirty[0].first() {
            if let Some(found) = self.merge_into(j, Tier::RelatedEqual, groups) {
                return Some(found);
            }
            self.dirty[0].remove(&j);
        }
        loop {
            // Swept slots marked again come first: all of them are below `resume`.
            let again = self.dirty_unrelated.first().copied();
            let Some(j) = again.or_else(|| self.alive.range(self.resume..).next().copied()) else {
                break;
            };
            if let Some(found) = self.merge_into(j, Tier::UnrelatedEqual, groups) {
                return Some(found);
            }
            if again.is_some() {
                self.dirty_unrelated.remove(&j);
            } else {
                self.resume = j + 1;
            }
        }
        while let Some(&j) = self.dirty[1].first() {
            if let Some(found) = self.merge_into(j, Tier::RelatedPrefix, groups) {
                return Some(found);
            }
            self.dirty[1].remove(&j);
        }
        None
    }

    /// The nearest legal partner `i < j` of block `j` in `tier`.
    fn merge_into(
        &mut self,
        j: usize,
        tier: Tier,
        groups: &ShapeGroups,
    ) -> Option<(usize, usize, Plan)> {
        if !self.alive.contains(&j) {
            return None;
        }
        // Left merges need no block between conflicting with `j`: only the nearest
        // related block and the blocks after it qualify.
        let nearest = self.links.prev(j);
        let candidates: Vec<usize> = match tier {
            Tier::RelatedEqual | Tier::RelatedPrefix => {
                self.related(j).range(..j).rev().copied().collect()
            }
            // The blocks of the same ranges after the nearest related one (unrelated
            // to `j` since it is the nearest), then those before it that nothing up
            // to `j` conflicts with: the only ones a left or right merge can take.
            Tier::UnrelatedEqual => {
                let ranges = &self.node(j).ranges;
                let same = &self.by_ranges[ranges];
                let after = nearest.map_or(0, |k| k + 1);
                let mut out: Vec<usize> = same.range(after..j).rev().copied().collect();
                if let Some(k) = nearest {
                    out.extend(
                        self.links
                            .unrelated_past(k, j)
                            .into_iter()
                            .filter(|&i| same.contains(&i)),
                    );
                }
                out
            }
        };
        for i in candidates {
            let (ni, nj) = (self.node(i), self.node(j));
            let equal = ni.block.loops.len() == nj.block.loops.len();
            let wanted = match tier {
                Tier::RelatedEqual | Tier::UnrelatedEqual => equal && ni.ranges == nj.ranges,
                Tier::RelatedPrefix => !equal,
            };
            if !wanted || self.failed.contains(&(ni.uid, nj.uid)) {
                continue;
            }
            let left = nearest.is_none_or(|k| i >= k);
            // No block between conflicts with `i`: its first related one is not before `j`.
            let right = left || self.links.next(i) >= j;
            if !right {
                continue;
            }
            match plan_pair(ni, nj, groups) {
                Some(plan) => return Some((i, j, Plan { left, ..plan })),
                None => {
                    let key = (ni.uid, nj.uid);
                    self.failed.insert(key);
                }
            }
        }
        None
    }

    /// Merges `j` into `i` (at `i`'s slot when `plan.left`, else at `j`'s), and
    /// marks what the merge may have made fusable.
    fn apply(&mut self, i: usize, j: usize, plan: Plan, groups: &ShapeGroups) {
        let (at, gone) = if plan.left { (i, j) } else { (j, i) };
        // Pairs the disappearing block sat between may now be legal.
        let mut again: BTreeSet<usize> = BTreeSet::new();
        let related_gone = self.related(gone);
        for &k in &related_gone {
            if k != at {
                again.extend(self.related(k));
            }
        }
        let a = self.nodes[i].take().expect("alive");
        let b = self.nodes[j].take().expect("alive");
        self.index(i, &a, false);
        self.index(j, &b, false);
        self.alive.remove(&gone);
        let mut merged = apply_plan(a, b, &plan, self.next_uid, groups);
        self.next_uid += 1;
        // A tensor no other block touches cannot relate the merged block to any.
        let private: Vec<TensorId> = merged
            .deps
            .reads
            .iter()
            .chain(&merged.deps.writes)
            .copied()
            .filter(|t| self.touching.get(t).is_none_or(BTreeSet::is_empty))
            .collect();
        for t in private {
            merged.deps.reads.remove(&t);
            merged.deps.writes.remove(&t);
        }
        self.index(at, &merged, true);
        self.nodes[at] = Some(merged);
        again.insert(at);
        let related_at = self.related(at);
        again.extend(related_at.iter().copied());
        again.remove(&gone);
        for d in &mut self.dirty {
            d.remove(&gone);
            d.extend(again.iter().copied());
        }
        // Links: the merged block's, and those of the blocks related to either half.
        self.links.clear(gone);
        for k in related_gone.iter().chain(&related_at).chain([&at]) {
            if *k != gone && self.alive.contains(k) {
                self.link(*k);
            }
        }
        self.mark_unrelated(at, gone, &related_gone);
    }

    /// Marks the swept slots that the merge into `at` (with `gone` removed) can have
    /// given a legal partner in the unrelated tier: a pair `(i', j')` is legal after
    /// the merge but not before only if it involves the merged block, or `gone` sat
    /// between them and was the block that `i'` could not move past or the nearest
    /// block related to `j'`. The merged block only gained dependencies (its own
    /// tensors touched by no other block aside), which forbids, never allows.
    fn mark_unrelated(&mut self, at: usize, gone: usize, related_gone: &BTreeSet<usize>) {
        self.dirty_unrelated.remove(&gone);
        let swept = self.resume;
        let mut marks: Vec<usize> = Vec::new();
        if at < swept {
            marks.push(at);
            let same = &self.by_ranges[&self.node(at).ranges];
            // `j'` that `at` can move down to, and `j'` that can join `at` at its place.
            let reach = self.links.next(at).min(swept);
            marks.extend(same.range(at + 1..reach.max(at + 1)));
            marks.extend(
                self.links
                    .unrelated_since(at + 1..swept, at)
                    .into_iter()
                    .filter(|s| same.contains(s)),
            );
        }
        for &k in related_gone {
            if k == gone || !self.alive.contains(&k) {
                continue;
            }
            if k > gone && k < swept {
                // `gone` may have been `k`'s nearest related block.
                marks.push(k);
            } else if k < gone {
                // `k` may now move down past where `gone` was.
                let same = &self.by_ranges[&self.node(k).ranges];
                let reach = self.links.next(k).min(swept);
                marks.extend(same.range(gone + 1..reach.max(gone + 1)));
            }
        }
        self.dirty_unrelated.extend(marks);
    }
}

/// The sorted canonical `(start, end)` of `block`'s loops.
fn ranges(block: &Block, groups: &ShapeGroups) -> Vec<(Expr, Expr)> {
    let mut out: Vec<(Expr, Expr)> = block
        .loops
        .iter()
        .map(|l| (groups.canonical(&l.start), groups.canonical(&l.end)))
        .collect();
    out.sort();
    out
}

/// How two blocks fuse: loop orders and the renaming of the later block's loops.
struct Plan {
    order_a: Vec<usize>,
    order_b: Vec<usize>,
    rename: HashMap<usize, usize>,
    /// The fused block takes the earlier block's place (else the later one's).
    left: bool,
}

/// `a` and `b` as one node: `a`'s accesses are kept (its statements do not change),
/// `b`'s renamed ones are appended behind `a`'s statements of the same level.
fn apply_plan(a: Node, b: Node, plan: &Plan, uid: usize, groups: &ShapeGroups) -> Node {
    let counts: Vec<usize> = levels(&a.block).iter().map(|(_, s)| s.len()).collect();
    let mut b2 = permute(b.block, &plan.order_b);
    rename_loops(&mut b2, &|id| plan.rename.get(&id).copied());
    let mut b_accesses = block_accesses(&b2);
    for x in &mut b_accesses {
        x.stmt += counts.get(x.level).copied().unwrap_or(0);
    }
    let Node {
        block,
        deps,
        accesses,
        by_tensor,
        ..
    } = a;
    let block = merge(permute(block, &plan.order_a), b2);
    let mut node = Node {
        ranges: ranges(&block, groups),
        block,
        uid,
        deps,
        accesses,
        by_tensor,
    };
    node.add_accesses(b_accesses);
    node
}

/// The kinds of merges, in the order they are tried. Greedy merging cannot undo a
/// merge, so the merges that pay most go first: a producer joining its consumer (two
/// blocks *related* by a dependence — one writes what the other touches) is what
/// lets a temporary be substituted away; merging unrelated nests of equal depth only
/// saves loop headers, and taken first it can leave a producer and its consumer in
/// different nests. A prefix merge changes the levels later merges must respect
/// (the shallower nest's statements now follow the deeper one's inner loops), so it
/// comes last, and only between related blocks: an unrelated shallow nest joining a
/// deeper one would gain nothing and could take away a better partner.
#[derive(Clone, Copy)]
enum Tier {
    /// Same depth, with a dependence between the two blocks.
    RelatedEqual,
    /// Same depth, no dependence.
    UnrelatedEqual,
    /// Different depths, with a dependence.
    RelatedPrefix,
}

/// The segment of each loop position: a pivot closes its segment.
fn segments(block: &Block) -> Vec<usize> {
    let mut seg = 0;
    block
        .loops
        .iter()
        .map(|l| {
            let s = seg;
            if !l.stmts.is_empty() || !l.carried.is_empty() {
                seg += 1;
            }
            s
        })
        .collect()
}

fn same_range(a: &Loop, b: &Loop, groups: &ShapeGroups) -> bool {
    groups.same(&a.start, &b.start) && groups.same(&a.end, &b.end)
}

/// How `a` (earlier) and `b` (later) fuse into one block, if that is legal
/// (`left` is set by the caller).
fn plan_pair(a: &Node, b: &Node, groups: &ShapeGroups) -> Option<Plan> {
    let pairing = pair_loops(a, b, groups)?;
    let (seg_a, seg_b) = (segments(&a.block), segments(&b.block));
    // Try keeping `a`'s relative loop order within each reordered stretch, then `b`'s.
    for by_b in [false, true] {
        let Some((order_a, order_b)) = place(&pairing, &seg_a, &seg_b, by_b) else {
            continue;
        };
        let is_identity = |order: &[usize]| order.iter().enumerate().all(|(d, &from)| d == from);
        if (!is_identity(&order_a) && !reorder_ok(&a.block, &order_a))
            || (!is_identity(&order_b) && !reorder_ok(&b.block, &order_b))
        {
            continue;
        }
        let rename: HashMap<usize, usize> = pairing
            .iter()
            .map(|&(pa, pb)| (b.block.loops[pb].id.0, a.block.loops[pa].id.0))
            .collect();
        // Only `b`'s subscripts change (renamed loops); `a`'s statements stay.
        let mut b2 = permute(b.block.clone(), &order_b);
        rename_loops(&mut b2, &|id| rename.get(&id).copied());
        let merged_ids: Vec<usize> = (0..a.block.loops.len().max(b2.loops.len()))
            .filter_map(|d| {
                order_a
                    .get(d)
                    .map(|&from| a.block.loops[from].id.0)
                    .or_else(|| b2.loops.get(d).map(|l| l.id.0))
            })
            .collect();
        if cross_ok(a, &block_accesses(&b2), &merged_ids) {
            return Some(Plan {
                order_a,
                order_b,
                rename,
                left: true,
            });
        }
    }
    None
}

/// Pairs `(position in a, position in b)` of loops with equal ranges, one for each
/// loop of the shallower nest, pinned by the conflicting accesses first.
fn pair_loops(na_: &Node, nb_: &Node, groups: &ShapeGroups) -> Option<Vec<(usize, usize)>> {
    let (a, b) = (&na_.block, &nb_.block);
    let (na, nb) = (a.loops.len(), b.loops.len());
    let pos_a: HashMap<usize, usize> = a
        .loops
        .iter()
        .enumerate()
        .map(|(d, l)| (l.id.0, d))
        .collect();
    let pos_b: HashMap<usize, usize> = b
        .loops
        .iter()
        .enumerate()
        .map(|(d, l)| (l.id.0, d))
        .collect();
    let mut of_b: Vec<Option<usize>> = vec![None; nb];
    let mut used_a = vec![false; na];
    for (x, y) in na_.conflicting(&nb_.accesses) {
        if x.access.index.len() != y.access.index.len() {
            continue;
        }
        for (sx, sy) in x.access.index.iter().zip(&y.access.index) {
            let (Subscript::Expr(Expr::Index(ia)), Subscript::Expr(Expr::Index(ib))) = (sx, sy)
            else {
                continue;
            };
            let (Some(&pa), Some(&pb)) = (pos_a.get(ia), pos_b.get(ib)) else {
                continue;
            };
            match of_b[pb] {
                Some(q) if q == pa => {}
                // Contradicting evidence: some pair of accesses cannot become identical.
                Some(_) => return None,
                None if used_a[pa] => return None,
                None => {
                    if !same_range(&a.loops[pa], &b.loops[pb], groups) {
                        return None;
                    }
                    of_b[pb] = Some(pa);
                    used_a[pa] = true;
                }
            }
        }
    }
    // Every loop of the shallower nest needs a partner; prefer the same position,
    // then one within the shared outer part, then any.
    let shared = na.min(nb);
    if nb <= na {
        let unpaired: Vec<usize> = (0..nb).filter(|&pb| of_b[pb].is_none()).collect();
        for pb in unpaired {
            let fits = |pa: usize| !used_a[pa] && same_range(&a.loops[pa], &b.loops[pb], groups);
            let pa = std::iter::once(pb)
                .chain(0..shared)
                .chain(0..na)
                .find(|&pa| fits(pa))?;
            of_b[pb] = Some(pa);
            used_a[pa] = true;
        }
    } else {
        let unpaired: Vec<usize> = (0..na).filter(|&pa| !used_a[pa]).collect();
        for pa in unpaired {
            let fits =
                |pb: usize| of_b[pb].is_none() && same_range(&a.loops[pa], &b.loops[pb], groups);
            let pb = std::iter::once(pa)
                .chain(0..shared)
                .chain(0..nb)
                .find(|&pb| fits(pb))?;
            of_b[pb] = Some(pa);
            used_a[pa] = true;
        }
    }
    let pairs: Vec<(usize, usize)> = of_b
        .iter()
        .enumerate()
        .filter_map(|(pb, pa)| pa.map(|pa| (pa, pb)))
        .collect();
    (pairs.len() == shared).then_some(pairs)
}

/// Positions for the pairs such that each loop stays within its segment in both
/// blocks: `(order_a, order_b)` with `order_x[d]` the old position of the loop now at
/// `d`. The pairs take the outer positions, shared by both nests; within a stretch
/// they keep `a`'s relative order (or `b`'s if `by_b`). The deeper nest's unpaired
/// loops fill its remaining positions, each within its segment, in their order.
fn place(
    pairing: &[(usize, usize)],
    seg_a: &[usize],
    seg_b: &[usize],
    by_b: bool,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let shared = seg_a.len().min(seg_b.len());
    if pairing.len() != shared {
        return None;
    }
    let mut pairs = pairing.to_vec();
    if by_b {
        pairs.sort_by_key(|&(pa, pb)| (pb, pa));
    } else {
        pairs.sort();
    }
    let mut queues: HashMap<(usize, usize), VecDeque<(usize, usize)>> = HashMap::new();
    for (pa, pb) in pairs {
        queues
            .entry((seg_a[pa], seg_b[pb]))
            .or_default()
            .push_back((pa, pb));
    }
    let mut order_a = Vec::with_capacity(seg_a.len());
    let mut order_b = Vec::with_capacity(seg_b.len());
    for d in 0..shared {
        let (pa, pb) = queues.get_mut(&(seg_a[d], seg_b[d]))?.pop_front()?;
        order_a.push(pa);
        order_b.push(pb);
    }
    // The deeper nest's own loops, by segment, in their original order.
    let (seg_deep, order_deep, paired): (&[usize], &mut Vec<usize>, Vec<usize>) =
        if seg_a.len() >= seg_b.len() {
            (
                seg_a,
                &mut order_a,
                pairing.iter().map(|&(pa, _)| pa).collect(),
            )
        } else {
            (
                seg_b,
                &mut order_b,
                pairing.iter().map(|&(_, pb)| pb).collect(),
            )
        };
    let mut rest: HashMap<usize, VecDeque<usize>> = HashMap::new();
    for p in (0..seg_deep.len()).filter(|p| !paired.contains(p)) {
        rest.entry(seg_deep[p]).or_default().push_back(p);
    }
    for &seg in &seg_deep[shared..] {
        order_deep.push(rest.get_mut(&seg)?.pop_front()?);
    }
    Some((order_a, order_b))
}

/// `block` with the loop headers (id and range) reordered: the loop at old position
/// `order[d]` moves to `d`. Carried variables and statements stay at their depth.
fn permute(mut block: Block, order: &[usize]) -> Block {
    let headers: Vec<_> = order
        .iter()
        .map(|&from| {
            let src = &block.loops[from];
            (src.id, src.start.clone(), src.end.clone())
        })
        .collect();
    for (l, (id, start, end)) in block.loops.iter_mut().zip(headers) {
        l.id = id;
        l.start = start;
        l.end = end;
    }
    block
}

/// Whether reordering `block`'s loops by `order` (within segments) keeps its meaning.
fn reorder_ok(block: &Block, order: &[usize]) -> bool {
    let seg = segments(block);
    if order
        .iter()
        .enumerate()
        .any(|(d, &from)| seg[d] != seg[from])
    {
        return false;
    }
    let moved: HashSet<usize> = order
        .iter()
        .enumerate()
        .filter(|&(d, &from)| d != from)
        .map(|(d, _)| seg[d])
        .collect();
    if moved.is_empty() {
        return true;
    }
    // A range over another loop's variable (a triangle) cannot move past that loop;
    // lowering never makes one, so such a block is simply not reordered.
    let mentions_loop = |e: &Expr| e.any(&mut |x| matches!(x, Expr::Index(_)));
    if block
        .loops
        .iter()
        .any(|l| mentions_loop(&l.start) || mentions_loop(&l.end))
    {
        return false;
    }
    // A reduction's update order: no reordered loop between a carried variable's
    // loop and the deepest statement using it.
    let lists = levels(block);
    let declared = block.carried.iter().map(|c| (0, c.var)).chain(
        block
            .loops
            .iter()
            .enumerate()
            .flat_map(|(d, l)| l.carried.iter().map(move |c| (d + 1, c.var))),
    );
    for (level, var) in declared {
        let deepest = lists
            .iter()
            .filter(|(_, stmts)| {
                stmts.iter().any(|s| {
                    matches!(s, Stmt::Update { var: v, .. } if *v == var) || stmt_reads_var(s, var)
                })
            })
            .map(|(l, _)| *l)
            .max()
            .unwrap_or(level);
        if (level..deepest).any(|p| moved.contains(&seg[p])) {
            return false;
        }
    }
    // Accesses to one element keep their order: within each reordered segment
    // enclosing both, at most one loop is not pinned by a shared bare subscript.
    let accesses = block_accesses(block);
    for (k, x) in accesses.iter().enumerate() {
        for y in &accesses[k..] {
            if x.access.tensor != y.access.tensor || !(x.write || y.write) {
                continue;
            }
            let m = x.level.min(y.level);
            let pinned = pinned_loops(x, y);
            for &s in &moved {
                let positions: Vec<usize> = (0..seg.len()).filter(|&p| seg[p] == s).collect();
                if positions.iter().any(|&p| p >= m) {
                    continue;
                }
                let free = positions
                    .iter()
                    .filter(|&&p| !pinned.contains(&block.loops[p].id.0))
                    .count();
                if free > 1 {
                    return false;
                }
            }
        }
    }
    true
}

/// Loops whose variable is the subscript of the same axis in both accesses: two
/// instances touching the same element agree on them.
fn pinned_loops(x: &AccessAt, y: &AccessAt) -> HashSet<usize> {
    x.access
        .index
        .iter()
        .zip(&y.access.index)
        .filter_map(|(sx, sy)| match (sx, sy) {
            (Subscript::Expr(Expr::Index(i)), Subscript::Expr(Expr::Index(j))) if i == j => {
                Some(*i)
            }
            _ => None,
        })
        .collect()
}

/// The cross-dependence rule between block `a` and the accesses of the reordered,
/// renamed block `b` after it, merged into a nest with the loops `merged_ids`.
fn cross_ok(a: &Node, acc_b: &[AccessAt], merged_ids: &[usize]) -> bool {
    for (x, y) in a.conflicting(acc_b) {
        if x.level < y.level || !identical(&x.access.index, &y.access.index) {
            return false;
        }
        // `y.level <= x.level`, and `x` sits inside `a`'s loops, so every loop
        // enclosing `y` is one of the merged nest's.
        let pinned = pinned_loops(x, y);
        if merged_ids[..y.level].iter().any(|id| !pinned.contains(id)) {
            return false;
        }
    }
    true
}

fn identical(x: &[Subscript], y: &[Subscript]) -> bool {
    x.len() == y.len()
        && x.iter().zip(y).all(|(sx, sy)| match (sx, sy) {
            (Subscript::Expr(ex), Subscript::Expr(ey)) => ex.simplify() == ey.simplify(),
            _ => false,
        })
}

/// One nest: the shared outer loops with `a`'s headers, the deeper nest's own loops
/// inside them; at each depth `a`'s carried variables and statements come before
/// `b`'s.
fn merge(a: Block, b: Block) -> Block {
    // `a`'s lists stay where they are (no copy of a large block), `b`'s follow them.
    let mut out = a;
    for l in b.loops.iter().skip(out.loops.len()) {
        out.loops.push(Loop {
            id: l.id,
            start: l.start.clone(),
            end: l.end.clone(),
            carried: Vec::new(),
            stmts: Vec::new(),
            schedule: l.schedule,
        });
    }
    for (l, from) in out.loops.iter_mut().zip(b.loops) {
        l.carried.extend(from.carried);
        l.stmts.extend(from.stmts);
    }
    out.carried.extend(b.carried);
    out.stmts.extend(b.stmts);
    out
}
