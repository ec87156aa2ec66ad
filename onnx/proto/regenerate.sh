#!/bin/sh
# Regenerates src/proto/onnx.rs from proto/onnx.proto (onnx 1.23.2, proto2) with
# prost-build 0.14 and protox 0.10 (a pure-Rust .proto compiler: no protoc), in a
# throwaway crate outside the workspace, so that neither the build nor CI needs them.
#
# usage: sh onnx/proto/regenerate.sh        (from anywhere; needs cargo and crates.io)
#
# To move to a newer onnx: copy its onnx/onnx.proto here (pip install onnx==X into a
# venv; the file is in the package directory), run this script and review the diff.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
cat > "$work/Cargo.toml" <<'TOML'
[package]
name = "onnx-proto-gen"
version = "0.0.0"
edition = "2024"
publish = false

[workspace]

[dependencies]
prost-build = "0.14"
protox = "0.10"
TOML
cat > "$work/src/main.rs" <<'RS'
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let fds = protox::compile(["onnx.proto"], [&args[1]]).expect("onnx.proto compiles");
    prost_build::Config::new()
        .out_dir(&args[2])
        .compile_fds(fds)
        .expect("prost-build writes onnx.rs");
}
RS
(cd "$work" && cargo run --quiet --release -- "$here" "$work")
cp "$work/onnx.rs" "$here/../src/proto/onnx.rs"
# Formatted as the rest of the code (the module is `include!`d, so `cargo fmt` does
# not reach it by itself).
rustfmt --edition 2024 "$here/../src/proto/onnx.rs"
echo "wrote $here/../src/proto/onnx.rs"
