//! Backends: the optimized loop IR turned into something that runs outside the
//! interpreters. `cranelift` compiles it to machine code, in memory (JIT) or as a
//! relocatable object file with a C header.

pub mod cranelift;
