//! The executor's parts: values and their storage ([`value`], [`store`]), compiled
//! programs ([`kernel`]), the step tree built from a prepared graph ([`build`]), the
//! machine that runs it ([`run`]), its streams ([`streams`]), and the loop stack's
//! driver when the graph has chunk nodes ([`looped`]).

pub(crate) mod build;
pub(crate) mod kernel;
pub(crate) mod looped;
pub(crate) mod memory;
pub(crate) mod run;
pub(crate) mod store;
pub(crate) mod streams;
pub(crate) mod value;
