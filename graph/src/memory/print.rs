//! The plan as text (`uop print --stage memory`): one line per arena value in
//! execution order, then how each `while` carries its state, then the three numbers
//! of DESIGN.md §17.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::ir::{Graph, Op, Ref};

use super::{ALIGN, Carried, MemoryPlan};

/// The plan as text:
///
/// ```text
/// # memory plan for N=8 (bytes; every buffer at a multiple of 64)
/// value  type        bytes  offset  steps  shares
/// %4     f32[N, N]     256       0  1..2
/// %5     f32[N, N]     256       0  2..3   in place of %4
/// sum of intermediates  512
/// planned arena         256  (best fit, largest first)
/// lower bound           256
/// ```
pub fn print_memory(graph: &Graph, plan: &MemoryPlan) -> String {
    let notes = notes(graph, plan);
    let mut rows: Vec<(usize, Ref)> = plan
        .slots
        .keys()
        .map(|r| (plan.lifetimes.get(r).map_or(0, |l| l.start), *r))
        .collect();
    rows.sort();
    let dims: Vec<String> = plan.dims.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# memory plan{} (bytes; every buffer at a multiple of {ALIGN})",
        if dims.is_empty() {
            String::new()
        } else {
            format!(" for {}", dims.join(", "))
        }
    );
    let mut table = vec![[
        "value".to_string(),
        "type".into(),
        "bytes".into(),
        "offset".into(),
        "steps".into(),
        "shares".into(),
    ]];
    for (_, r) in &rows {
        let slot = plan.slots[r];
        let ty = graph
            .type_of(*r)
            .map_or_else(String::new, ToString::to_string);
        let steps = plan
            .lifetimes
            .get(r)
            .map_or_else(String::new, |l| format!("{}..{}", l.start, l.end));
        table.push([
            r.to_string(),
            ty,
            slot.bytes.to_string(),
            slot.offset.to_string(),
            steps,
            notes.get(r).cloned().unwrap_or_default(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| table.iter().map(|row| row[c].len()).max().unwrap_or(0))
        .collect();
    for row in &table {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c > 0 {
                line.push_str("  ");
            }
            // Numbers right-aligned, text left-aligned.
            if (2..=3).contains(&c) {
                let _ = write!(line, "{cell:>w$}", w = widths[c]);
            } else {
                let _ = write!(line, "{cell:<w$}", w = widths[c]);
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for (w, states) in &plan.carried {
        for (k, c) in states.iter().enumerate() {
            let how = match c {
                Carried::InPlace { slot } => format!("in place at {}", slot.offset),
                Carried::Alternate { slots } => {
                    format!("alternating {} / {}", slots[0].offset, slots[1].offset)
                }
            };
            let _ = writeln!(out, "while {w} state {k}: {how}");
        }
    }
    let _ = writeln!(out, "sum of intermediates  {}", plan.intermediates_bytes);
    let _ = writeln!(
        out,
        "planned arena         {}  ({})",
        plan.arena_bytes, plan.strategy
    );
    let _ = writeln!(out, "lower bound           {}", plan.lower_bound);
    out
}

/// What each value shares its slot with, in words.
fn notes(graph: &Graph, plan: &MemoryPlan) -> HashMap<Ref, String> {
    let mut notes: HashMap<Ref, String> = HashMap::new();
    for (out, input) in &plan.in_place {
        notes.insert(*out, format!("in place of {input}"));
    }
    for (r, out) in &plan.results {
        notes.insert(*r, format!("result into {out}"));
    }
    for (w, states) in &plan.carried {
        let Some(Op::While { cond, body }) = graph.node(*w).map(|n| &n.op) else {
            continue;
        };
        for (k, c) in states.iter().enumerate() {
            notes.insert(Ref::new(cond.input, k), format!("state {k} of {w}"));
            notes.insert(Ref::new(body.input, k), format!("state {k} of {w}"));
            notes.insert(Ref::new(*w, k), format!("state {k} of {w}"));
            if let Some(r) = body.outputs.get(k).and_then(|s| s.as_ref())
                && r.node != body.input
                && let Some(slot) = plan.slots.get(&r)
            {
                let written = match c {
                    Carried::InPlace { slot: s } => s.offset == slot.offset,
                    Carried::Alternate { slots } => slots[1].offset == slot.offset,
                };
                if written && !notes.contains_key(&r) {
                    notes.insert(r, format!("next state {k} of {w}"));
                }
            }
        }
    }
    notes
}
