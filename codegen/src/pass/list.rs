//! The machinery every pass pipeline shares (the loop-IR optimizer here, the graph
//! layer's prepare passes in `uop-graph`): an ordered list of named passes, the
//! names it accepts in `--disable-pass` / `--print-after`, and which passes a set of
//! disabled names leaves.
//!
//! What a pass *is* (its signature, what it reports) differs between pipelines, so the
//! list is generic over the pass type; only its name matters here.

use super::PassError;

/// A pass a [`PassList`] can hold: anything with a name.
pub trait Named {
    /// The name used by `--disable-pass`, `--print-after` and in traces.
    fn name(&self) -> &'static str;
}

/// A pipeline's passes in the order they run (a pass may appear twice).
#[derive(Debug)]
pub struct PassList<P: 'static> {
    passes: &'static [P],
}

impl<P> Clone for PassList<P> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<P> Copy for PassList<P> {}

impl<P: Named> PassList<P> {
    /// The list of `passes`, in order.
    pub const fn new(passes: &'static [P]) -> Self {
        PassList { passes }
    }

    /// Every pass, in order.
    pub fn passes(&self) -> &'static [P] {
        self.passes
    }

    /// The names, each once, in order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        for p in self.passes {
            if !names.contains(&p.name()) {
                names.push(p.name());
            }
        }
        names
    }

    /// Checks that every name in `names` is a pass of the list; the error lists the
    /// valid names.
    pub fn check_names<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), PassError> {
        let valid = self.names();
        for name in names {
            if !valid.contains(&name) {
                return Err(PassError::UnknownPass {
                    name: name.to_string(),
                    valid: valid.join(", "),
                });
            }
        }
        Ok(())
    }

    /// True when `name` is among `disabled`.
    pub fn is_disabled(name: &str, disabled: &[String]) -> bool {
        disabled.iter().any(|d| d == name)
    }

    /// The passes not named in `disabled`, in order.
    pub fn enabled<'d>(&self, disabled: &'d [String]) -> impl Iterator<Item = &'static P> + 'd {
        self.passes
            .iter()
            .filter(move |p| !Self::is_disabled(p.name(), disabled))
    }
}
