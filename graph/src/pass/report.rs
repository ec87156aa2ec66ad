//! What [`prepare`](super::prepare) reports: per pass, whether it ran, its wall time,
//! the graph's size before and after, and the rewrites it did; the graphs printed
//! after the chosen passes.

use std::fmt::Write as _;
use std::time::Duration;

/// Whether a pass ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// It ran.
    Ran,
    /// The graph had no node of its classes.
    Skipped,
    /// `--disable-pass` switched it off.
    Disabled,
}

impl Status {
    /// The word in the timing table.
    pub fn word(self) -> &'static str {
        match self {
            Status::Ran => "ran",
            Status::Skipped => "skipped",
            Status::Disabled => "disabled",
        }
    }
}

/// What one pass did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassReport {
    /// The pass.
    pub name: &'static str,
    /// Whether it ran.
    pub status: Status,
    /// Wall time (zero unless `time_passes`).
    pub wall: Duration,
    /// Nodes before it.
    pub nodes_before: usize,
    /// Nodes after it.
    pub nodes_after: usize,
    /// Kernel nodes before it.
    pub kernels_before: usize,
    /// Kernel nodes after it.
    pub kernels_after: usize,
    /// True when it changed the graph (did a rewrite).
    pub changed: bool,
    /// Rewrites it applied.
    pub rewrites: usize,
}

impl PassReport {
    /// True when the graph had nothing for it.
    pub fn skipped(&self) -> bool {
        self.status == Status::Skipped
    }
}

/// What [`prepare`](super::prepare) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Every pass of the pipeline, in order (disabled ones too).
    pub passes: Vec<PassReport>,
    /// The graph text after each pass `print_after` chose, in order.
    pub printed: Vec<(&'static str, String)>,
    /// Rewrites in total.
    pub rewrites: usize,
}

impl Report {
    /// The report of pass `name`.
    pub fn pass(&self, name: &str) -> Option<&PassReport> {
        self.passes.iter().find(|p| p.name == name)
    }

    /// The `--time-passes` table: pass, status, wall time, nodes and kernels
    /// before → after, changed, rewrites; a total line.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<10} {:<9} {:>10} {:>13} {:>11} {:>8} {:>9}",
            "pass", "status", "wall ms", "nodes", "kernels", "changed", "rewrites"
        );
        let mut total = Duration::ZERO;
        for p in &self.passes {
            total += p.wall;
            let _ = writeln!(
                out,
                "{:<10} {:<9} {:>10.3} {:>13} {:>11} {:>8} {:>9}",
                p.name,
                p.status.word(),
                p.wall.as_secs_f64() * 1e3,
                format!("{} -> {}", p.nodes_before, p.nodes_after),
                format!("{} -> {}", p.kernels_before, p.kernels_after),
                if p.changed { "yes" } else { "no" },
                p.rewrites
            );
        }
        let _ = writeln!(
            out,
            "{:<10} {:<9} {:>10.3} {:>13} {:>11} {:>8} {:>9}",
            "total",
            "",
            total.as_secs_f64() * 1e3,
            "",
            "",
            "",
            self.rewrites
        );
        out
    }
}
