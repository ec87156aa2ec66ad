//! The crates as a user gets them: every publishable library crate of the workspace
//! packages (`cargo package --no-verify --offline`, all together so that their path
//! dependencies resolve to each other) with the project README and both licence
//! files, and `uop` without its default features builds none of the command line's
//! dependencies. A crate added to the workspace is covered by the first test as soon
//! as it is a member with a library and without `publish = false`.

use std::path::Path;
use std::process::Command;

/// The repository root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(args)
        .current_dir(root())
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The workspace members with a library target that may be published, from
/// `cargo metadata`.
fn publishable_libraries() -> Vec<String> {
    let text = cargo(&[
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ]);
    let metadata = json::parse(&text).expect("cargo metadata is JSON");
    let packages = metadata
        .get("packages")
        .and_then(json::Value::array)
        .expect("packages");
    let mut out = Vec::new();
    for p in packages {
        let name = p.get("name").and_then(json::Value::str).expect("a name");
        // `publish = false` is an empty registry list; null means anywhere.
        let publish = p.get("publish").expect("publish");
        if publish.array().is_some_and(<[json::Value]>::is_empty) {
            continue;
        }
        let targets = p
            .get("targets")
            .and_then(json::Value::array)
            .expect("targets");
        let library = targets.iter().any(|t| {
            t.get("kind")
                .and_then(json::Value::array)
                .is_some_and(|kinds| kinds.iter().any(|k| k.str() == Some("lib")))
        });
        if library {
            out.push(name.to_string());
        }
    }
    out.sort();
    out
}

#[test]
fn every_publishable_library_packages_with_the_readme_and_both_licences() {
    let crates = publishable_libraries();
    for expected in [
        "uop",
        "uop-codegen",
        "uop-cranelift",
        "uop-graph",
        "uop-ops",
        "uop-runtime",
    ] {
        assert!(
            crates.iter().any(|c| c == expected),
            "{expected} missing from {crates:?}"
        );
    }
    for name in &crates {
        let files = cargo(&[
            "package",
            "--list",
            "--offline",
            "--allow-dirty",
            "-p",
            name,
        ]);
        for wanted in ["README.md", "LICENSE-MIT", "LICENSE-APACHE"] {
            assert!(
                files.lines().any(|f| f == wanted),
                "the package of {name} lacks {wanted} (each crate folder links the root's \
                 licence files: `ln -s ../LICENSE-MIT ../LICENSE-APACHE CRATE/`)"
            );
        }
    }
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("package-check");
    let mut args = vec![
        "package",
        "--no-verify",
        "--offline",
        "--allow-dirty",
        "--target-dir",
        target.to_str().expect("a UTF-8 path"),
    ];
    for name in &crates {
        args.extend(["-p", name]);
    }
    // Fails when a path dependency has no version, or a field crates.io needs is wrong.
    cargo(&args);
}

#[test]
fn the_library_without_default_features_builds_no_command_line_dependency() {
    let tree = cargo(&[
        "tree",
        "-p",
        "uop",
        "--no-default-features",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--offline",
    ]);
    for unwanted in ["clap", "indicatif", "npyz", "uop-onnx", "prost"] {
        assert!(
            !tree.lines().any(|l| l.starts_with(&format!("{unwanted} "))),
            "{unwanted} is in the library's tree:\n{tree}"
        );
    }
    assert!(
        tree.lines().any(|l| l.starts_with("uop-cranelift ")),
        "{tree}"
    );
    let full = cargo(&[
        "tree",
        "-p",
        "uop",
        "-e",
        "normal",
        "--prefix",
        "none",
        "--offline",
    ]);
    assert!(
        full.lines().any(|l| l.starts_with("clap ")),
        "the default has the command line"
    );
    assert!(
        full.lines().any(|l| l.starts_with("uop-onnx ")),
        "the default command line reads ONNX models"
    );
}

/// Just enough JSON for `cargo metadata`: objects, arrays, strings, numbers, literals.
mod json {
    /// A JSON value.
    #[derive(Debug)]
    pub enum Value {
        /// A number, `true`, `false` or `null` (not needed here).
        Other,
        Str(String),
        Array(Vec<Value>),
        Object(Vec<(String, Value)>),
    }

    impl Value {
        pub fn get(&self, key: &str) -> Option<&Value> {
            match self {
                Value::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
                _ => None,
            }
        }

        pub fn array(&self) -> Option<&[Value]> {
            match self {
                Value::Array(items) => Some(items),
                _ => None,
            }
        }

        pub fn str(&self) -> Option<&str> {
            match self {
                Value::Str(s) => Some(s),
                _ => None,
            }
        }
    }

    pub fn parse(text: &str) -> Result<Value, String> {
        let chars: Vec<char> = text.chars().collect();
        let mut pos = 0;
        let value = value(&chars, &mut pos)?;
        skip_space(&chars, &mut pos);
        if pos == chars.len() {
            Ok(value)
        } else {
            Err(format!("trailing text at {pos}"))
        }
    }

    fn skip_space(c: &[char], pos: &mut usize) {
        while *pos < c.len() && c[*pos].is_whitespace() {
            *pos += 1;
        }
    }

    fn value(c: &[char], pos: &mut usize) -> Result<Value, String> {
        skip_space(c, pos);
        match c.get(*pos) {
            Some('{') => {
                *pos += 1;
                let mut fields = Vec::new();
                loop {
                    skip_space(c, pos);
                    if c.get(*pos) == Some(&'}') {
                        *pos += 1;
                        return Ok(Value::Object(fields));
                    }
                    let Value::Str(key) = value(c, pos)? else {
                        return Err(format!("a key at {pos}"));
                    };
                    skip_space(c, pos);
                    if c.get(*pos) != Some(&':') {
                        return Err(format!("`:` at {pos}"));
                    }
                    *pos += 1;
                    fields.push((key, value(c, pos)?));
                    skip_space(c, pos);
                    if c.get(*pos) == Some(&',') {
                        *pos += 1;
                    }
                }
            }
            Some('[') => {
                *pos += 1;
                let mut items = Vec::new();
                loop {
                    skip_space(c, pos);
                    if c.get(*pos) == Some(&']') {
                        *pos += 1;
                        return Ok(Value::Array(items));
                    }
                    items.push(value(c, pos)?);
                    skip_space(c, pos);
                    if c.get(*pos) == Some(&',') {
                        *pos += 1;
                    }
                }
            }
            Some('"') => {
                *pos += 1;
                let mut s = String::new();
                while let Some(&ch) = c.get(*pos) {
                    *pos += 1;
                    match ch {
                        '"' => return Ok(Value::Str(s)),
                        '\\' => {
                            let escaped = c.get(*pos).copied().ok_or("an escape")?;
                            *pos += 1;
                            match escaped {
                                'n' => s.push('\n'),
                                't' => s.push('\t'),
                                'r' => s.push('\r'),
                                'u' => {
                                    let hex: String =
                                        c.get(*pos..*pos + 4).ok_or("\\u")?.iter().collect();
                                    *pos += 4;
                                    let code =
                                        u32::from_str_radix(&hex, 16).map_err(|e| e.to_string())?;
                                    s.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                                }
                                other => s.push(other),
                            }
                        }
                        other => s.push(other),
                    }
                }
                Err("an unterminated string".into())
            }
            Some(_) => {
                let start = *pos;
                while *pos < c.len()
                    && !matches!(c[*pos], ',' | ']' | '}')
                    && !c[*pos].is_whitespace()
                {
                    *pos += 1;
                }
                if *pos == start {
                    return Err(format!("a value at {start}"));
                }
                Ok(Value::Other)
            }
            None => Err("unexpected end".into()),
        }
    }
}
