//! Shape groups: which symbolic sizes of a loop program are known to be equal, so
//! that loops over "the same" range are recognized as such (an analysis used by
//! fusion and bound-check elimination).
//!
//! Guarantee: [`ShapeGroups::same`] is true only for sizes equal under every binding
//! the program accepts — identical after simplification, or equal by the program's
//! `[=]` assertions ([`LoopProgram::assertions`], checked when a program is bound).
//! Named dims shared between inputs are already the same `Name` in the IR.
//!
//! Sizes are kept in a union-find. Equalities between leaves (`CW == C`) are applied
//! inside compound sizes too (`CW - 1` and `C - 1` are equal): a size's canonical form
//! replaces each named dim or `$param` by its group's representative, simplifies, and
//! then takes the representative of the result's own group.
//!
//! Cost: O(sizes · simplify) to build; `find` has no path compression, O(group size).

use std::collections::HashMap;
use std::fmt;

use crate::index::Expr;
use crate::loops::LoopProgram;

/// Groups of sizes known equal (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct ShapeGroups {
    /// Every size seen, by union-find slot.
    exprs: Vec<Expr>,
    slot: HashMap<Expr, usize>,
    parent: Vec<usize>,
}

impl ShapeGroups {
    /// The groups of `p`: its assertions, applied to its tensor shapes and loop ranges.
    ///
    /// ```
    /// use uop_codegen::{index::parse_expr, loops, pass::ShapeGroups, uop::{Builder, BinaryOp, DType}};
    /// let mut b = Builder::new(DType::F32);
    /// let x = b.input("x", DType::F32, &["N"])?;
    /// let y = b.input("y", DType::F32, &["M"])?;
    /// let yy = b.reindex(y, &["dA0[=dB0]"], &[x, y], &["i0"])?;
    /// let s = b.binary(BinaryOp::Add, x, yy)?;
    /// let p = loops::lower(&b.combine(&[x, y], &[s])?);
    /// let groups = ShapeGroups::new(&p);
    /// assert!(groups.same(&parse_expr("N - 1")?, &parse_expr("M - 1")?));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(p: &LoopProgram) -> Self {
        let mut g = ShapeGroups::default();
        for t in &p.tensors {
            for e in &t.shape {
                g.add(&e.simplify());
            }
        }
        for b in &p.blocks {
            for l in &b.loops {
                g.add(&l.start.simplify());
                g.add(&l.end.simplify());
            }
        }
        // Leaf equalities first, so compound assertions are recorded in canonical form.
        let (leafy, compound): (Vec<_>, Vec<_>) = p
            .assertions
            .iter()
            .map(|(a, b)| (a.simplify(), b.simplify()))
            .partition(|(a, b)| is_leaf(a) && is_leaf(b));
        for (a, b) in leafy {
            g.union(&a, &b);
        }
        for (a, b) in compound {
            let (a, b) = (g.substitute_leaves(&a), g.substitute_leaves(&b));
            g.union(&a, &b);
        }
        g
    }

    /// The representative of `e`'s group: equal for sizes known equal.
    pub fn canonical(&self, e: &Expr) -> Expr {
        let e = self.substitute_leaves(&e.simplify());
        match self.slot.get(&e) {
            Some(&s) => self.exprs[self.find(s)].clone(),
            None => e,
        }
    }

    /// True when `a` and `b` are equal under every binding the program accepts.
    pub fn same(&self, a: &Expr, b: &Expr) -> bool {
        self.canonical(a) == self.canonical(b)
    }

    fn substitute_leaves(&self, e: &Expr) -> Expr {
        e.map_leaves(&mut |leaf| {
            let s = *self.slot.get(leaf)?;
            Some(self.exprs[self.find(s)].clone())
        })
        .simplify()
    }

    fn add(&mut self, e: &Expr) -> usize {
        if let Some(&s) = self.slot.get(e) {
            return s;
        }
        let s = self.exprs.len();
        self.exprs.push(e.clone());
        self.slot.insert(e.clone(), s);
        self.parent.push(s);
        s
    }

    fn find(&self, mut s: usize) -> usize {
        while self.parent[s] != s {
            s = self.parent[s];
        }
        s
    }

    /// Joins two groups; the smaller expression (literals and leaves sort first) leads.
    fn union(&mut self, a: &Expr, b: &Expr) {
        let (sa, sb) = (self.add(a), self.add(b));
        let (ra, rb) = (self.find(sa), self.find(sb));
        if ra == rb {
            return;
        }
        if self.exprs[ra] <= self.exprs[rb] {
            self.parent[rb] = ra;
        } else {
            self.parent[ra] = rb;
        }
    }

    /// The groups with more than one member, each sorted, representative first.
    pub fn groups(&self) -> Vec<Vec<Expr>> {
        let mut by_root: HashMap<usize, Vec<Expr>> = HashMap::new();
        for s in 0..self.exprs.len() {
            by_root
                .entry(self.find(s))
                .or_default()
                .push(self.exprs[s].clone());
        }
        let mut groups: Vec<Vec<Expr>> = by_root
            .into_iter()
            .filter(|(_, members)| members.len() > 1)
            .map(|(root, mut members)| {
                members.sort();
                let rep = self.exprs[root].clone();
                members.retain(|m| *m != rep);
                members.insert(0, rep);
                members
            })
            .collect();
        groups.sort();
        groups
    }
}

fn is_leaf(e: &Expr) -> bool {
    matches!(e, Expr::Int(_) | Expr::Name(_) | Expr::Param(_))
}

/// One line per group of equal sizes, `C == CW`; `(all sizes distinct)` if none.
impl fmt::Display for ShapeGroups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups = self.groups();
        if groups.is_empty() {
            return writeln!(f, "(all sizes distinct)");
        }
        for g in groups {
            let names: Vec<String> = g.iter().map(|e| e.to_string()).collect();
            writeln!(f, "{}", names.join(" == "))?;
        }
        Ok(())
    }
}
