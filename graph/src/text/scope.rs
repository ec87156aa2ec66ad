//! The names in scope while graph text is built: a stack of entries, innermost
//! last, with an index from each name to where it stands in the stack, so that
//! looking a name up costs the same however many statements came before it.

use std::collections::HashMap;

/// Something in scope under a name.
pub(super) trait Named {
    /// The name it is in scope under.
    fn name(&self) -> &str;
}

/// The entries in scope, innermost last, indexed by name.
pub(super) struct Scope<E> {
    entries: Vec<E>,
    /// For each name, the positions in `entries` of the entries with that name,
    /// in increasing order.
    positions: HashMap<String, Vec<usize>>,
}

impl<E> Default for Scope<E> {
    fn default() -> Self {
        Scope {
            entries: Vec::new(),
            positions: HashMap::new(),
        }
    }
}

impl<E: Named> Scope<E> {
    /// Adds `entry` as the innermost one.
    pub(super) fn push(&mut self, entry: E) {
        self.positions
            .entry(entry.name().to_owned())
            .or_default()
            .push(self.entries.len());
        self.entries.push(entry);
    }

    /// How many entries are in scope.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Removes the entries at position `len` and after.
    pub(super) fn truncate(&mut self, len: usize) {
        for e in self.entries.drain(len.min(self.entries.len())..).rev() {
            if let Some(at) = self.positions.get_mut(e.name()) {
                at.pop();
                if at.is_empty() {
                    self.positions.remove(e.name());
                }
            }
        }
    }

    /// The innermost entry named `name`.
    pub(super) fn lookup(&self, name: &str) -> Option<&E> {
        let at = *self.positions.get(name)?.last()?;
        self.entries.get(at)
    }
}
