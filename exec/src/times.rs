//! What the loop-IR passes cost over every program an executable compiled
//! (`uop run GRAPH --time-passes`, after the graph passes' table).

use std::fmt::Write as _;
use std::time::Duration;

use uop_codegen::pass::PassTime;

/// The loop-IR passes' wall times summed over the programs compiled: the Kernel
/// nodes' when the executable is made, and the one-call programs of unfused calls
/// compiled during runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassTimes {
    /// How many programs went through the pipeline.
    pub programs: usize,
    /// Each pass that ran, in pipeline order (a pass that runs twice, as `dce` does,
    /// once per run): its name, its total wall time, and how many programs it ran on.
    pub passes: Vec<(&'static str, Duration, usize)>,
}

impl PassTimes {
    /// Adds one program's pass times (in pipeline order).
    pub(crate) fn add(&mut self, times: &[PassTime]) {
        self.programs += 1;
        // The k-th run of a pass lines up with the k-th row of that name.
        let mut seen: Vec<&'static str> = Vec::new();
        for t in times {
            let nth = seen.iter().filter(|n| **n == t.name).count();
            seen.push(t.name);
            let row = self
                .passes
                .iter_mut()
                .filter(|(name, _, _)| *name == t.name)
                .nth(nth);
            match row {
                Some((_, total, runs)) => {
                    *total += t.time;
                    *runs += 1;
                }
                None => self.passes.push((t.name, t.time, 1)),
            }
        }
    }

    /// A table: one row per pass (wall milliseconds over all programs, programs it
    /// ran on), then the total.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<12} {:>10} {:>9}",
            "loop pass", "wall ms", "programs"
        );
        let mut total = Duration::ZERO;
        for (name, time, runs) in &self.passes {
            total += *time;
            let _ = writeln!(
                out,
                "{:<12} {:>10.3} {:>9}",
                name,
                time.as_secs_f64() * 1e3,
                runs
            );
        }
        let _ = writeln!(
            out,
            "{:<12} {:>10.3} {:>9}",
            "total",
            total.as_secs_f64() * 1e3,
            self.programs
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(name: &'static str, ms: u64) -> PassTime {
        PassTime {
            name,
            time: Duration::from_millis(ms),
            blocks: 1,
            stmts: 1,
        }
    }

    #[test]
    fn a_pass_run_twice_keeps_two_rows_and_programs_add_up() {
        let mut t = PassTimes::default();
        t.add(&[time("dce", 1), time("fuse", 2), time("dce", 3)]);
        t.add(&[time("dce", 10), time("fuse", 20), time("dce", 30)]);
        assert_eq!(t.programs, 2);
        assert_eq!(
            t.passes,
            vec![
                ("dce", Duration::from_millis(11), 2),
                ("fuse", Duration::from_millis(22), 2),
                ("dce", Duration::from_millis(33), 2),
            ]
        );
        let table = t.table();
        assert!(table.starts_with("loop pass"), "{table}");
        assert!(
            table.contains("fuse             22.000         2"),
            "{table}"
        );
        assert!(
            table.lines().last().unwrap().starts_with("total"),
            "{table}"
        );
    }
}
