//! The runtime's own source files, for standalone mode: a generated file that
//! should need nothing but core and std gets them copied in as `mod rt`, from the
//! same files this crate compiles (`include_str!`), so one source serves both.

/// Each module of the crate: its name and its source.
const MODULES: &[(&str, &str)] = &[
    ("aligned", include_str!("aligned.rs")),
    ("arena", include_str!("arena.rs")),
    ("check", include_str!("check.rs")),
    ("cpu", include_str!("cpu.rs")),
    ("error", include_str!("error.rs")),
    ("event", include_str!("event.rs")),
    ("graph", include_str!("graph.rs")),
    ("loop_end", include_str!("loop_end.rs")),
    ("memory", include_str!("memory.rs")),
    ("place", include_str!("place.rs")),
    ("pool", include_str!("pool.rs")),
    ("scalar", include_str!("scalar.rs")),
    ("scratch", include_str!("scratch.rs")),
    ("shared", include_str!("shared.rs")),
    ("transpose", include_str!("transpose.rs")),
    ("vmath", include_str!("vmath.rs")),
];

/// The crate root, whose `mod` lines say which modules are public and whose `use`
/// lines are the crate's API.
const LIB: &str = include_str!("lib.rs");

/// The module that holds the sources themselves: not copied.
const THIS: &str = "source";

/// Modules only code generated at run time calls (the JIT's micro-kernels and
/// math over runs): not
/// copied, generated Rust never names them.
const JIT_ONLY: &[&str] = &["math_runs", "microkernel"];

/// The whole runtime as one module `mod rt { ... }`, to append to a generated
/// file that then uses it as `rt::...`, exactly as it uses the crate when it says
/// `use uop_runtime as rt;`. Each source file becomes an inline module; their unit
/// tests and the crate documentation stay out (their examples use the crate).
pub fn standalone_module() -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "/// uop's run-time library (crate `uop-runtime` {}), copied in by standalone\n\
         /// mode so that this file needs nothing but core and std: the error type, the\n\
         /// checks, the aligned buffer, the worker pool ([`rt::set_threads`]), CPU\n\
         /// detection, the vectorizable math and the loop helpers its kernels call.\n\
         /// Public, so that its user can call `kernels::rt::set_threads`.\n\
         #[allow(dead_code, unused_imports)]\n\
         pub mod rt {{\n",
        env!("CARGO_PKG_VERSION")
    ));
    let mut first = true;
    for line in LIB.lines() {
        if line.starts_with("//!") || line.starts_with("#![") {
            continue;
        }
        let declared = line
            .strip_prefix("pub mod ")
            .map(|m| (true, m))
            .or_else(|| line.strip_prefix("mod ").map(|m| (false, m)));
        match declared.and_then(|(public, m)| Some((public, m.strip_suffix(';')?))) {
            Some((_, THIS)) => {}
            Some((_, name)) if JIT_ONLY.contains(&name) => {}
            Some((public, name)) => {
                let text = MODULES
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or("", |(_, text)| *text);
                if !first {
                    out.push('\n');
                }
                first = false;
                let vis = if public { "pub " } else { "" };
                out.push_str(&format!("    {vis}mod {name} {{\n"));
                indented(&mut out, without_tests(text), "        ");
                out.push_str("    }\n");
            }
            None if line.is_empty() && out.ends_with("{\n") => {}
            None => indented(&mut out, line, "    "),
        }
    }
    out.push_str("}\n");
    out
}

/// `text` up to its unit tests (`#[cfg(test)]` or `#[cfg(all(test, ...))]` at
/// the start of a line, which this crate's files keep last).
fn without_tests(text: &str) -> &str {
    let end = ["\n#[cfg(test)]", "\n#[cfg(all(test"]
        .iter()
        .filter_map(|marker| text.find(marker))
        .min()
        .unwrap_or(text.len());
    text[..end].trim_end()
}

/// Appends the lines of `text`, each non-empty one after `indent`. The runtime
/// has no string literal spanning lines, so this changes no value.
fn indented(out: &mut String, text: &str, indent: &str) {
    for line in text.lines() {
        if !line.is_empty() {
            out.push_str(indent);
        }
        out.push_str(line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_is_copied_once_without_its_tests() {
        let m = standalone_module();
        for (name, _) in MODULES {
            let public = if matches!(*name, "vmath" | "graph" | "place") {
                "pub "
            } else {
                ""
            };
            assert_eq!(
                m.matches(&format!("    {public}mod {name} {{\n")).count(),
                1,
                "{name}"
            );
        }
        assert!(!m.contains("mod source"));
        assert!(!m.contains("#[cfg(test)]"));
        assert!(!m.contains("include_str!"));
        assert!(m.contains("    pub use error::KernelError;"));
        // Doc examples would run as the user's doctests, and use the crate.
        assert!(!m.lines().any(|l| l.trim() == "/// ```"));
        // Braces balance (the module closes where it should).
        assert_eq!(m.matches('{').count(), m.matches('}').count());
    }

    #[test]
    fn lib_declares_exactly_the_copied_modules() {
        let declared: Vec<&str> = LIB
            .lines()
            .filter_map(|l| {
                l.strip_prefix("pub mod ")
                    .or_else(|| l.strip_prefix("mod "))
            })
            .filter_map(|l| l.strip_suffix(';'))
            .filter(|m| *m != THIS && !JIT_ONLY.contains(m))
            .collect();
        let copied: Vec<&str> = MODULES.iter().map(|(n, _)| *n).collect();
        assert_eq!(declared, copied);
    }
}
