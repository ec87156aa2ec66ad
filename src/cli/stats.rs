//! `uop stats`: what the optimizer did to a program, in numbers: blocks, loops,
//! allocated temporaries and their bytes, before and after the pass pipeline.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use uop_codegen::index::Expr;
use uop_codegen::loops::{self, LoopProgram, TensorKind};
use uop_codegen::pass::{self, PassTime, Stats};
use uop_codegen::uop::Program;

use super::source::{Source, load, load_graph};
use super::stats_graph::graph_stats;
use super::{CliError, fail, int_assignments, pass_options};

/// Arguments of `uop stats`.
#[derive(Args, Debug)]
pub struct StatsArgs {
    /// The program (`.uop` text). For a graph: its node counts before and after the
    /// prepare passes, and its kernels per graph and per sub-function body.
    program: PathBuf,
    /// The size of a named dimension, as NAME=INT (needed for byte counts).
    #[arg(long = "dim", value_name = "NAME=INT")]
    dims: Vec<String>,
    /// The value of a $param, as NAME=INT (needed for byte counts that depend on it).
    #[arg(long = "param", value_name = "NAME=INT")]
    params: Vec<String>,
    /// Read the file as a graph (a program is a graph of calls): node counts before
    /// and after the prepare passes, and kernels per graph and per sub-function body
    /// (the default for files with `fn`, `while`, `case`, ...).
    #[arg(long)]
    graph: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Skip this optimizer pass (repeatable).
    #[arg(long = "disable-pass", value_name = "NAME")]
    disable_pass: Vec<String>,
    /// Also print how long parsing, lowering and each pass took (wall time, milliseconds),
    /// with the blocks and statements each pass left.
    #[arg(long)]
    time: bool,
}

/// Runs `uop stats`.
pub fn stats(args: &StatsArgs) -> Result<(), CliError> {
    if args.graph {
        return graph(args, &load_graph(&args.program)?);
    }
    let start = Instant::now();
    let program = match load(&args.program)? {
        Source::Program(p) => p,
        Source::Graph(g) => return graph(args, &g),
        Source::Onnx(m) => return graph(args, &m.imported.graph),
    };
    let pass_opts = pass_options(&args.disable_pass)?;
    let parse_time = start.elapsed();
    let dims = checked_dims(&program, &int_assignments("--dim", &args.dims)?)?;
    let params = checked_params(&program, &int_assignments("--param", &args.params)?)?;
    let start = Instant::now();
    let lowered = loops::lower(&program);
    let lower_time = start.elapsed();
    let (optimized, times) =
        pass::optimize_timed(&lowered, &pass_opts).map_err(|e| CliError(e.to_string()))?;
    let before = pass::stats(&lowered, &dims, &params);
    let after = pass::stats(&optimized, &dims, &params);
    if unknown_sizes(&lowered, &dims, &params).is_empty() {
        // Every size is given: a byte count that is unknown is one that overflows or
        // is negative, an error rather than a `?`.
        for (p, s) in [(&lowered, &before), (&optimized, &after)] {
            if s.temp_bytes.is_none() {
                return fail(size_problem(p, &dims, &params));
            }
        }
    }
    if args.json {
        println!("{}", json(&before, &after));
    } else {
        print!("{}", table(&before, &after));
        let missing = unknown_sizes(&lowered, &dims, &params);
        if !missing.is_empty() && (before.temp_bytes.is_none() || after.temp_bytes.is_none()) {
            let flags: Vec<String> = missing.iter().map(|m| format!("{m}=SIZE")).collect();
            println!("(temp bytes need {})", flags.join(" "));
        }
    }
    if args.time {
        print!("{}", time_table(parse_time, lower_time, &times));
    }
    Ok(())
}

/// Why the temporaries of `p` have no byte count though every size is given: the
/// first temporary whose shape is negative or overflows, or a total that overflows.
fn size_problem(
    p: &LoopProgram,
    dims: &HashMap<String, i64>,
    params: &HashMap<String, i64>,
) -> String {
    let bindings = uop_codegen::index::Bindings {
        names: dims.clone(),
        params: params.clone(),
        ..Default::default()
    };
    for t in p.tensors.iter().filter(|t| t.kind == TensorKind::Temp) {
        if let Err(e) = uop_codegen::sizes::concrete_shape(&t.name, &t.shape, &bindings) {
            return e.to_string();
        }
    }
    "the temporaries need more than 18446744073709551615 bytes in all".to_string()
}

/// `uop stats` on a graph: nodes before and after prepare, kernels per graph and per
/// sub-function body (`--disable-pass` names graph passes).
fn graph(args: &StatsArgs, g: &uop_graph::Graph) -> Result<(), CliError> {
    for (given, flag) in [
        (!args.dims.is_empty(), "--dim"),
        (!args.params.is_empty(), "--param"),
        (args.json, "--json"),
        (args.time, "--time"),
    ] {
        if given {
            return fail(format!(
                "{flag}: `uop stats` on a graph counts nodes and kernels only (`uop print --stage prepared --time-passes` times the passes)"
            ));
        }
    }
    print!("{}", graph_stats(g, &args.disable_pass)?);
    Ok(())
}

/// Milliseconds with two decimals.
fn millis(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e3)
}

/// One row per stage and pass: wall time, then the blocks and statements it left.
fn time_table(parse: Duration, lower: Duration, passes: &[PassTime]) -> String {
    let total: Duration = parse + lower + passes.iter().map(|p| p.time).sum::<Duration>();
    let mut rows = vec![
        [
            "stage".to_string(),
            "ms".into(),
            "blocks".into(),
            "stmts".into(),
        ],
        ["parse".into(), millis(parse), String::new(), String::new()],
        ["lower".into(), millis(lower), String::new(), String::new()],
    ];
    for p in passes {
        rows.push([
            format!("pass {}", p.name),
            millis(p.time),
            p.blocks.to_string(),
            p.stmts.to_string(),
        ]);
    }
    rows.push(["total".into(), millis(total), String::new(), String::new()]);
    let width = |c: usize| rows.iter().map(|r| r[c].len()).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    let mut out = String::new();
    for [name, ms, blocks, stmts] in &rows {
        let line = format!("{name:<w0$}  {ms:>w1$}  {blocks:>w2$}  {stmts:>w3$}");
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// `--dim` values, each naming a dimension of the program's inputs.
fn checked_dims(
    program: &Program,
    given: &[(String, i64)],
) -> Result<HashMap<String, i64>, CliError> {
    let declared: BTreeSet<&str> = program
        .inputs
        .iter()
        .flat_map(|i| &program.node(*i).shape)
        .filter_map(|d| match d {
            Expr::Name(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    for (name, v) in given {
        if !declared.contains(name.as_str()) {
            let all: Vec<&str> = declared.iter().copied().collect();
            return fail(format!(
                "--dim {name}: the program has no dimension `{name}` (it has: {})",
                if all.is_empty() {
                    "none".into()
                } else {
                    all.join(", ")
                }
            ));
        }
        if *v < 0 {
            return fail(format!("--dim {name}={v}: a size cannot be negative"));
        }
    }
    Ok(given.iter().cloned().collect())
}

/// `--param` values, each naming a declared `$param`.
fn checked_params(
    program: &Program,
    given: &[(String, i64)],
) -> Result<HashMap<String, i64>, CliError> {
    for (name, _) in given {
        if !program.params.contains(name) {
            let all: Vec<String> = program.params.iter().map(|p| format!("${p}")).collect();
            return fail(format!(
                "--param {name}: the program declares no parameter `${name}` (it has: {})",
                if all.is_empty() {
                    "none".into()
                } else {
                    all.join(", ")
                }
            ));
        }
    }
    Ok(given.iter().cloned().collect())
}

/// The `--dim NAME` / `--param NAME` flags still missing for the temporaries' sizes.
fn unknown_sizes(
    p: &LoopProgram,
    dims: &HashMap<String, i64>,
    params: &HashMap<String, i64>,
) -> BTreeSet<String> {
    let mut missing = BTreeSet::new();
    for t in p.tensors.iter().filter(|t| t.kind == TensorKind::Temp) {
        for d in &t.shape {
            d.visit(&mut |e| match e {
                Expr::Name(n) if !dims.contains_key(n) => {
                    missing.insert(format!("--dim {n}"));
                }
                Expr::Param(n) if !params.contains_key(n) => {
                    missing.insert(format!("--param {n}"));
                }
                _ => {}
            });
        }
    }
    missing
}

/// One flat JSON object; bytes are `null` when a size is unknown.
fn json(before: &Stats, after: &Stats) -> String {
    let bytes = |b: Option<u64>| b.map_or_else(|| "null".to_string(), |v| v.to_string());
    let fields = [
        ("blocks_before", before.blocks.to_string()),
        ("blocks_after", after.blocks.to_string()),
        ("loops_before", before.loops.to_string()),
        ("loops_after", after.loops.to_string()),
        ("temporaries_before", before.temporaries.to_string()),
        ("temporaries_after", after.temporaries.to_string()),
        ("temp_bytes_before", bytes(before.temp_bytes)),
        ("temp_bytes_after", bytes(after.temp_bytes)),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("\"{k}\": {v}"))
        .collect();
    format!("{{{}}}", body.join(", "))
}

/// A small right-aligned table; unknown byte counts show as `?`.
fn table(before: &Stats, after: &Stats) -> String {
    let bytes = |b: Option<u64>| b.map_or_else(|| "?".to_string(), |v| v.to_string());
    let rows = [
        ("", "before".to_string(), "after".to_string()),
        (
            "blocks",
            before.blocks.to_string(),
            after.blocks.to_string(),
        ),
        ("loops", before.loops.to_string(), after.loops.to_string()),
        (
            "temporaries",
            before.temporaries.to_string(),
            after.temporaries.to_string(),
        ),
        (
            "temp bytes",
            bytes(before.temp_bytes),
            bytes(after.temp_bytes),
        ),
    ];
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (name, b, a) in rows {
        let _ = writeln!(out, "{name:<w0$}  {b:>w1$}  {a:>w2$}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(bytes: Option<u64>) -> Stats {
        Stats {
            blocks: 5,
            loops: 12,
            temporaries: 3,
            temp_bytes: bytes,
        }
    }

    #[test]
    fn json_is_one_flat_object_with_null_for_unknown_bytes() {
        assert_eq!(
            json(&sample(Some(96)), &sample(None)),
            "{\"blocks_before\": 5, \"blocks_after\": 5, \"loops_before\": 12, \
             \"loops_after\": 12, \"temporaries_before\": 3, \"temporaries_after\": 3, \
             \"temp_bytes_before\": 96, \"temp_bytes_after\": null}"
        );
    }

    #[test]
    fn the_table_aligns_numbers_right() {
        assert_eq!(
            table(&sample(Some(1024)), &sample(None)),
            "             before  after\n\
             blocks            5      5\n\
             loops            12     12\n\
             temporaries       3      3\n\
             temp bytes     1024      ?\n"
        );
    }
}
