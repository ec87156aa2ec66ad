//! Clippy on generated code: the prebuilt kernels (`prebuilt/kernels/*.uop`, forward and
//! gradient, f32 and f64, proven, fully checked and standalone) as the modules of a scratch
//! library, with `-D warnings`. Slow and needs clippy, so it runs on request:
//! `cargo test --profile fast-build --test suite generated_clippy:: -- --ignored`.

use std::path::PathBuf;

use uop_build::{Build, Checks, DType, Source};

#[test]
#[ignore = "runs cargo clippy on a scratch crate"]
fn generated_code_is_clippy_clean() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut proven = Build::new();
    let prebuilt = Source::dir(root.join("prebuilt/kernels")).dtypes(&[DType::F32, DType::F64]);
    proven.add(prebuilt.clone()).expect("prebuilt programs");
    let mut full = Build::new().checks(Checks::Full).schedule(false);
    full.add(prebuilt.clone()).expect("prebuilt programs");

    let mut standalone = Build::new().standalone(true);
    standalone.add(prebuilt).expect("prebuilt programs");

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("generated_clippy");
    std::fs::create_dir_all(dir.join("src")).expect("scratch dir");
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"uop_clippy\"\nversion = \"0.0.0\"\nedition = \"2024\"\n\n\
             [dependencies]\nuop-runtime = {{ path = {:?} }}\n\n[workspace]\n",
            root.join("runtime")
        ),
    )
    .expect("manifest");
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub mod proven;\npub mod full;\npub mod standalone;\n",
    )
    .expect("lib");
    proven.write_to(&dir.join("src/proven.rs")).expect("proven");
    full.write_to(&dir.join("src/full.rs")).expect("full");
    standalone
        .write_to(&dir.join("src/standalone.rs"))
        .expect("standalone");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["clippy", "--offline", "--quiet", "--", "-D", "warnings"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("run cargo clippy");
    assert!(
        out.status.success(),
        "clippy finds fault with generated code:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
