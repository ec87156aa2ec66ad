//! The executor's parts: values and their storage ([`value`]), compiled programs
//! ([`kernel`]), the step tree built from a prepared graph ([`build`]) and the machine
//! that runs it ([`run`]), through the loop stack when the graph has chunk nodes
//! ([`looped`]).

pub(crate) mod build;
pub(crate) mod kernel;
pub(crate) mod looped;
pub(crate) mod memory;
pub(crate) mod run;
pub(crate) mod value;
