//! The names in scope while graph text is built: a stack of entries, innermost
//! last, with an index from each name to where it stands in the stack, so that
//! looking a name up costs the same however many statements came before it.

use std::collections::HashMap;

use super::build::Entry;

/// Something in scope under a name.
pub(super) trait Named {
    /// The name it is in scope under.
    fn name(&self) -> &str;
}

impl Named for Entry {
    fn name(&self) -> &str {
        &self.name
    }
}

/// The entries in scope, innermost last, indexed by name.
pub(super) struct Scope<E = Entry> {
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
    /// How many entries are in scope.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entries, outermost first.
    pub(super) fn iter(&self) -> std::slice::Iter<'_, E> {
        self.entries.iter()
    }

    /// Adds `entry` as the innermost one.
    pub(super) fn push(&mut self, entry: E) {
        self.positions
            .entry(entry.name().to_owned())
            .or_default()
            .push(self.entries.len());
        self.entries.push(entry);
    }

    /// The innermost entry named `name`.
    pub(super) fn lookup(&self, name: &str) -> Option<&E> {
        let at = *self.positions.get(name)?.last()?;
        self.entries.get(at)
    }

    /// The outermost entry named `name` among those at position `start` or after.
    pub(super) fn first_from(&self, start: usize, name: &str) -> Option<&E> {
        let at = self.positions.get(name)?;
        let k = at.partition_point(|&p| p < start);
        self.entries.get(*at.get(k)?)
    }

    /// Removes the entries at position `len` and after, innermost first, and
    /// returns them (outermost first).
    pub(super) fn split_off(&mut self, len: usize) -> Vec<E> {
        let tail = self.entries.split_off(len.min(self.entries.len()));
        for e in tail.iter().rev() {
            if let Some(at) = self.positions.get_mut(e.name()) {
                at.pop();
                if at.is_empty() {
                    self.positions.remove(e.name());
                }
            }
        }
        tail
    }

    /// Removes the entries at position `len` and after.
    pub(super) fn truncate(&mut self, len: usize) {
        self.split_off(len);
    }

    /// Adds `entries` as the innermost ones, in order.
    pub(super) fn extend(&mut self, entries: Vec<E>) {
        for e in entries {
            self.push(e);
        }
    }
}
