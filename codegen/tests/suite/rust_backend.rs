//! The Rust backend's output, as a reviewer and a user see it: snapshots of the
//! generated source for a few ops (`tests/snapshots/rust/*.rs`; regenerate with
//! `UPDATE_SNAPSHOTS=1` and review the diff), and the API's errors.
//! Whether generated code computes the right thing is `rust_backend_oracle.rs`.

use std::path::PathBuf;

use uop_codegen::backend::rust::{Checks, EmitError, RustModule, RustOptions, emit};
use uop_codegen::target::Target;
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::Program;

const SOFTMAX: &str = "\
input x: f32[B, N]
m = reduce_max(x, [1])
e = exp(sub(x, reindex(m, [B, N], [i0, 0])))
s = reduce_sum(e, [1])
y = div(e, reindex(s, [B, N], [i0, 0]))
output y
";

/// gelu's tanh form on `x * a + b`: element-wise, one long `exp` chain per element.
const GELU: &str = "\
input x: f32[N]
u = add(mul(x, 0.8), 0.1)
y = mul(u, sigmoid(mul(mul(u, add(mul(mul(u, u), 0.044715), 1.0)), 1.5957692)))
output y
";

/// NCHW, 3x3, zero padding 1: the padded reads stay checked.
pub(crate) const CONV2D: &str = "\
input x: f32[N, C, H, W]
input k: f32[O, C, 3, 3]
xx = reindex(x, [N, O, H, W, C, 3, 3], [i0, i4, i2 + i5 - 1, i3 + i6 - 1])
kk = reindex(k, [N, O, H, W, C, 3, 3], [i1, i4, i5, i6])
s = reduce_sum(mul(xx, kk), [4, 5, 6])
y = reindex(s, [N, O, H, W], [i0, i1, i2, i3, 0, 0, 0])
output y
";

/// `matmul(a, b)` spelled out: the register tile packs `b`'s panel.
pub(crate) const MATMUL: &str = "\
input a: f32[M, K]
input b: f32[K, N]
ab = mul(reindex(a, [M, N, K], [i0, i2]), reindex(b, [M, N, K], [i2, i1]))
c = reduce_sum(ab, [2])
output c
";

const LAYERNORM: &str = "\
input x: f64[B, N]
input gamma: f64[N]
input beta: f64[N]
mean = reduce_mean(x, [1])
d = sub(x, reindex(mean, [B, N], [i0, 0]))
var = reduce_mean(mul(d, d), [1])
inv = reindex(rsqrt(add(var, 1e-5)), [B, N], [i0, 0])
y = add(mul(mul(d, inv), reindex(gamma, [B, N], [i1])), reindex(beta, [B, N], [i1]))
output y
";

/// A window size given at run time, an assertion between inputs, a scatter.
const POOL_PARAMS: &str = "\
param k
input x: f32[N]
input w: f32[M]
assert N == M
win = reindex(x, [N / $k, $k], [i0 * $k + i1], fill=-inf)
p = reduce_max(win, [1])
h = reindex_reduce(w, [4], [i0 % 4])
output p, h
";

/// A full sum and column sums: one folds fixed pieces of rows on the threads, the
/// other shares out its columns while every thread walks the rows.
pub(crate) const SUMS: &str = "\
input x: f32[M, N]
total = reduce_sum(x, [0, 1])
columns = reduce_sum(x, [0])
output total, columns
";

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).expect("test program parses")
}

fn check_snapshot(file: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/rust")
        .join(file);
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{} differs from the generated source (rerun with UPDATE_SNAPSHOTS=1 and review):\n{actual}",
        path.display()
    );
}

#[test]
fn softmax_snapshot() {
    let src = emit("softmax", &parse(SOFTMAX), &RustOptions::default()).expect("emits");
    check_snapshot("softmax.rs", &src);
}

#[test]
fn gelu_snapshot_fuses_multiply_adds_and_computes_chunks_before_storing() {
    let src = emit("gelu", &parse(GELU), &RustOptions::default()).expect("emits");
    // `x * 0.8 + 0.1` is one multiply-add (fused on FMA targets), the math takes the
    // same choice, and each chunk of `LANES` values is computed, then stored.
    assert!(src.contains("mul_add_f32(FMA, *x.get_unchecked(i0 as usize), 0.8, 0.1)"));
    assert!(src.contains("vmath::sigmoid_f32(\n"));
    assert!(src.contains("let mut values = [0.0_f32; LANES];"));
    check_snapshot("gelu.rs", &src);
}

/// The kernel `name` of program `src` emitted with every pass, and with `pass` off.
fn with_and_without(name: &str, src: &str, pass: &str) -> (String, String) {
    let program = parse(src);
    let on = emit(name, &program, &RustOptions::default()).expect("emits");
    let mut off = RustOptions::default();
    off.compile = off.compile.disable_pass(pass);
    (on, emit(name, &program, &off).expect("emits"))
}

#[test]
fn disabling_the_chunk_pass_stores_gelu_value_by_value() {
    let (chunked, plain) = with_and_without("gelu", GELU, "chunk");
    // The chunks of `LANES` values computed before the stores are gone.
    for chunk in ["let mut values = [0.0_f32; LANES];", "step_by(LANES)"] {
        assert!(chunked.contains(chunk));
        assert!(!plain.contains(chunk), "{plain}");
    }
    assert!(plain.contains("vmath::sigmoid_f32("), "{plain}");
}

#[test]
fn disabling_the_line_pass_runs_the_column_sums_in_one_run() {
    let (split, plain) = with_and_without("sums", SUMS, "line");
    // The columns' loop ran in two runs split at a cache line of `columns`; now
    // it is one loop over this thread's columns.
    assert!(split.contains("for i2 in i2_first..i2_hi {"), "{split}");
    assert!(!plain.contains("i2_first"), "{plain}");
    assert!(plain.contains("for i2 in i2_lo..i2_hi {"), "{plain}");
    // The threads' share still starts at a line (`SHARE_STEP`, not this mark).
    assert!(plain.contains("range_in_steps(0, n, 64, rt::line_phase(columns.as_ptr(), 0))"));
}

#[test]
fn disabling_the_align_pass_keeps_a_full_sums_chunks_in_place() {
    let sum = "input x: f32[N]\ntotal = reduce_sum(x, [0])\noutput total\n";
    let (aligned, plain) = with_and_without("total", sum, "align");
    // Each piece's whole chunks started at a line of `x`, the partial results
    // rotated back; now they start at the piece's start.
    for realigned in ["rt::line_phase(x.as_ptr()", "rt::rotated_right("] {
        assert!(aligned.contains(realigned), "{aligned}");
        assert!(!plain.contains(realigned), "{plain}");
    }
    assert!(
        plain.contains("for i0_chunk in (i0_start..i0_main).step_by(LANES) {"),
        "{plain}"
    );
}

#[test]
fn disabling_the_line_pass_starts_gelus_chunks_where_its_range_starts() {
    let (aligned, plain) = with_and_without("gelu", GELU, "line");
    assert!(aligned.contains("rt::line_phase(y.as_ptr()"), "{aligned}");
    assert!(!plain.contains("line_phase"), "{plain}");
    assert!(plain.contains("let i0_first = i0_start;"), "{plain}");
}

#[test]
fn conv2d_snapshot_reads_a_padded_copy_filled_without_checks() {
    let src = emit("conv2d", &parse(CONV2D), &RustOptions::default()).expect("emits");
    // The `pad` pass fills `x_pad` with zeros, then copies `x` into its interior; the
    // reduction reads it. Nothing reads with a check.
    assert_eq!(src.matches("offset([").count(), 0, "no checked read");
    assert!(
        src.contains("*x_pad\n"),
        "the reduction reads the padded copy"
    );
    check_snapshot("conv2d.rs", &src);
}

#[test]
fn matmul_snapshot_packs_the_panel_every_row_tile_reads() {
    let src = emit("matmul", &parse(MATMUL), &RustOptions::default()).expect("emits");
    // One panel per thread, lent by the scratch unzeroed (every cell is packed
    // before it is read) and passed to the loops.
    assert_eq!(
        src.matches(".part_unzeroed::<f32>(3, part.index(), i1_panel_len);")
            .count(),
        1,
        "{src}"
    );
    assert!(src.contains("i1_panel: &mut [f32]"));
    // Sized by the copy this CPU runs, by its own reduction block and tile
    // columns: `KC` reduction iterations of every column tile's `NR` cells.
    let flat: String = src.chars().filter(|c| !c.is_whitespace()).collect();
    for t in Target::X86_64 {
        let len = format!(
            "(k.clamp(0,{})asusize).saturating_mul(n.saturating_add({}_i64).max(0)asusize)",
            t.tile_depth,
            t.tile_cols - 1,
        );
        assert!(flat.contains(&len), "{}: {len}", t.name);
    }
    assert!(
        flat.contains("leti1_panel_len=matchrt::cpu_level(){"),
        "{src}"
    );
    // Every thread's panel is reserved before the threads start, with the error
    // returned, for the same number of parts the threads then run.
    let at = |s: &str| flat.find(s).unwrap_or_else(|| panic!("{s}\n{src}"));
    let parts = at("letparts=rt::parts_for(&[&[m,n,k]]);");
    let reserve = at(r#"scratch.reserve_parts::<f32>(3,parts,i1_panel_len,"matmul","i1_panel")?;"#);
    let run = at("rt::run_parts(parts,|part|{");
    let lend = at(".part_unzeroed::<f32>(3,part.index(),i1_panel_len);");
    assert!(parts < reserve && reserve < run && run < lend, "{src}");
    assert!(!src.contains("in_parts"), "{src}");
    assert!(
        !src.contains("Vec<f32> = vec!"),
        "no buffer allocated inside the loops"
    );
    check_snapshot("matmul.rs", &src);
}

#[test]
fn matmul_packs_its_rows_per_row_block_where_the_target_does_and_pack_rows_off_reads_them_in_place()
{
    let (packed, plain) = with_and_without("matmul", MATMUL, "pack-rows");
    // A row panel per thread, sized by each copy's row block and reduction block
    // where the copy packs rows (AVX2), empty where it reads them in place.
    let flat: String = packed.chars().filter(|c| !c.is_whitespace()).collect();
    for (n, t) in Target::X86_64.iter().enumerate() {
        let len = format!(
            "(k.clamp(0,{})asusize).saturating_mul(m.saturating_add({}_i64).clamp(0,{}_i64)asusize)",
            t.tile_depth,
            t.tile_rows - 1,
            t.tile_row_block,
        );
        let arm = format!("{n}=>{{{len}}}");
        assert_eq!(
            flat.contains(&arm),
            t.pack_rows,
            "{}: {arm}\n{packed}",
            t.name
        );
    }
    // The baseline reads rows in place, as does every level without an arm.
    assert!(!Target::X86_64[0].pack_rows);
    assert!(flat.contains("_=>0_usize,};"), "{packed}");
    assert!(Target::X86_64.iter().any(|t| t.pack_rows));
    // The block's rows are copied once, then every column tile reads them.
    assert!(flat.contains("ifPR{letmuti0_at=0_i64;"), "{packed}");
    assert!(
        flat.contains("ifPR{*i0_row_packed.get_unchecked((i0_at+rowasi64)asusize)}else{*a.get_unchecked((i0*k+i2)asusize)}"),
        "{packed}"
    );
    // Without the pass: the column panel only, `a` read in place.
    assert!(
        !plain.contains("row_panel") && !plain.contains("const PR") && !plain.contains("if PR"),
        "{plain}"
    );
    assert!(plain.contains("i1_panel"), "{plain}");
}

#[test]
fn sums_snapshot_runs_both_reductions_on_the_thread_team() {
    let src = emit("sums", &parse(SUMS), &RustOptions::default()).expect("emits");
    assert!(
        src.contains("let i0_pieces = (m + i0_piece_len - 1) / i0_piece_len;"),
        "whole rows per piece, a count fixed by the sizes"
    );
    assert!(
        src.contains(".range_in_steps(0, n, 64, rt::line_phase(columns.as_ptr(), 0))"),
        "each thread its own columns, cut where a cache line starts"
    );
    check_snapshot("sums.rs", &src);
}

#[test]
fn layernorm_snapshot_with_full_checks_has_no_unsafe() {
    let options = RustOptions::default().checks(Checks::Full).schedule(false);
    assert_eq!(options, RustOptions::safe());
    let src = emit("layernorm", &parse(LAYERNORM), &options).expect("emits");
    assert!(!src.contains("unsafe"));
    assert!(!src.contains("get_unchecked"));
    check_snapshot("layernorm_full_checks.rs", &src);
}

#[test]
fn params_assertions_and_scatters_snapshot() {
    let src = emit("pool_params", &parse(POOL_PARAMS), &RustOptions::default()).expect("emits");
    assert!(src.contains("fn pool_params_sizes(n: i64, k: i64) -> Option<[i64; 1]>"));
    assert!(src.contains("KernelError::Assertion"));
    check_snapshot("pool_params.rs", &src);
}

/// A pure copy across: the blocked nest becomes calls of `transpose_block_f32`,
/// which moves vector tiles through registers.
#[test]
fn transpose_snapshot_copies_blocks_with_the_helper() {
    let src = "input x: f32[R, C]\ny = reindex(x, [C, R], [i1, i0])\noutput y\n";
    let src = emit("transpose", &parse(src), &RustOptions::default()).expect("emits");
    assert!(src.contains("transpose_block_f32("), "{src}");
    check_snapshot("transpose.rs", &src);
}

#[test]
fn every_unsafe_block_is_documented_on_its_function() {
    let src = emit("softmax", &parse(SOFTMAX), &RustOptions::default()).expect("emits");
    assert!(src.contains("unsafe {"));
    assert!(src.contains("/// `unsafe` blocks hold the loops whose accesses skip bounds checks"));
}

#[test]
fn kernel_names_must_be_snake_case_identifiers() {
    let p = parse(SOFTMAX);
    let mut m = RustModule::new(RustOptions::default());
    for bad in ["Softmax", "fn", "9lives", "soft-max", ""] {
        assert!(
            matches!(m.add(bad, &p), Err(EmitError::InvalidName(_))),
            "{bad}"
        );
    }
    m.add("softmax", &p).expect("a good name");
    assert!(matches!(
        m.add("softmax_shapes", &p),
        Err(EmitError::NameClash { .. })
    ));
    assert!(matches!(
        m.add("softmax", &p),
        Err(EmitError::NameClash { .. })
    ));
    // The runtime's names are `rt::...`: only `rt` itself is taken.
    for free in ["offset", "threads", "set_threads"] {
        m.add(free, &p).expect("a runtime function's name is free");
    }
    assert!(matches!(m.add("rt", &p), Err(EmitError::NameClash { .. })));
}

#[test]
fn full_checks_with_a_schedule_are_refused_rather_than_unscheduled() {
    let options = RustOptions::default().checks(Checks::Full);
    let err = emit("layernorm", &parse(LAYERNORM), &options).unwrap_err();
    assert!(
        err.to_string()
            .contains("turn scheduling off with full checks"),
        "{err}"
    );
}

#[test]
fn proven_checks_without_a_schedule_keep_unchecked_loads_but_no_threads() {
    let options = RustOptions::default().schedule(false);
    let src = emit("softmax", &parse(SOFTMAX), &options).expect("emits");
    assert!(src.contains("get_unchecked"), "{src}");
    assert!(
        !src.contains("rt::in_parts") && !src.contains("softmax_avx2"),
        "{src}"
    );
}
