//! Bad models never panic the importer: every committed node-test model with bytes
//! flipped, inserted or cut (deterministic, many variants each) either imports and
//! runs or is an error.

#[allow(dead_code)]
mod node_harness;

use std::path::Path;

use node_harness::case_names;

use prost::Message;
use uop_onnx::proto::{GraphProto, ModelProto};
use uop_onnx::{ImportOptions, decode_model, import};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    for _ in 0..1 + rng.below(3) {
        let at = rng.below(b.len());
        match rng.below(4) {
            0 => b[at] ^= 1 << rng.below(8),
            1 => b[at] = rng.next() as u8,
            2 => b.insert(at, rng.next() as u8),
            _ => b.truncate(at.max(1)),
        }
    }
    b
}

#[test]
fn mutated_models_are_errors_or_models_never_panics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/onnx/node");
    let names = case_names(&dir);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut imported, mut errors) = (0, 0);
    let mut panics = Vec::new();
    for name in &names {
        let bytes = std::fs::read(dir.join(name).join("model.onnx")).expect("reads");
        for k in 0..40 {
            let m = mutate(&bytes, &mut rng);
            let r = std::panic::catch_unwind(|| import(&m, &ImportOptions::default()).map(|_| ()));
            match r {
                Ok(Ok(())) => imported += 1,
                Ok(Err(e)) => {
                    assert!(!e.to_string().is_empty());
                    errors += 1;
                }
                Err(_) => panics.push(format!("{name}: mutation {k}")),
            }
        }
    }
    println!("{imported} mutated models imported, {errors} errors");
    assert!(
        panics.is_empty(),
        "the importer panics on:\n{}",
        panics.join("\n")
    );
    assert!(errors > 0 && imported > 0);
}

/// Values an attribute is set to: edges, negatives and extremes.
const NASTY: &[i64] = &[-1, 0, 1, 2, 3, -7, 1 << 31, 1 << 40, i64::MIN, i64::MAX];

/// Sets one integer attribute (or one element of an ints attribute) of a node of
/// `g` (subgraphs included) to a value of [`NASTY`]; false when there is none.
fn nasty_attribute(g: &mut GraphProto, rng: &mut Rng) -> bool {
    let mut slots = Vec::new();
    for (ni, n) in g.node.iter().enumerate() {
        for (ai, a) in n.attribute.iter().enumerate() {
            if a.i.is_some() {
                slots.push((ni, ai, None));
            }
            for k in 0..a.ints.len() {
                slots.push((ni, ai, Some(k)));
            }
        }
    }
    if slots.is_empty() {
        return false;
    }
    let (ni, ai, k) = slots[rng.below(slots.len())];
    let v = NASTY[rng.below(NASTY.len())];
    let a = &mut g.node[ni].attribute[ai];
    match k {
        None => a.i = Some(v),
        Some(k) => a.ints[k] = v,
    }
    true
}

#[test]
fn nasty_attribute_values_are_errors_or_models_never_panics() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/onnx/node");
    let names = case_names(&dir);
    let mut rng = Rng(0x51a7_e5ee_d000_0001);
    let mut panics = Vec::new();
    let mut tried = 0;
    for name in &names {
        let bytes = std::fs::read(dir.join(name).join("model.onnx")).expect("reads");
        let model: ModelProto = decode_model(&bytes).expect("a committed model decodes");
        for k in 0..20 {
            let mut m = model.clone();
            let Some(g) = m.graph.as_mut() else { break };
            if !nasty_attribute(g, &mut rng) {
                break;
            }
            tried += 1;
            let b = m.encode_to_vec();
            let r = std::panic::catch_unwind(|| import(&b, &ImportOptions::default()).map(|_| ()));
            if r.is_err() {
                panics.push(format!("{name}: variant {k}"));
            }
        }
    }
    println!("{tried} models with a nasty attribute imported or rejected");
    assert!(
        panics.is_empty(),
        "the importer panics on:\n{}",
        panics.join("\n")
    );
    assert!(tried > 1000);
}
