//! The names in scope while graph text is built: a stack of entries, innermost
//! last, with an index from each name to where it stands in the stack, so that
//! looking a name up costs the same however many statements came before it.
//!
//! A function's body is built where the function is used, but it sees only the
//! names defined before the function. Rather than taking the later entries off the
//! stack and putting them back after the body (a copy of the whole tail at each
//! use), the stack keeps them in place and records the range a body may not see:
//! [`Scope::hide`] hides the entries from a position to the current end until the
//! matching [`Scope::unhide`]. Entries stay where they are, so positions (and the
//! index) never move.

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
    /// The ranges `start..end` of `entries` hidden from the innermost bodies, one
    /// per body being built, outermost first.
    hidden: Vec<(usize, usize)>,
}

impl<E> Default for Scope<E> {
    fn default() -> Self {
        Scope {
            entries: Vec::new(),
            positions: HashMap::new(),
            hidden: Vec::new(),
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

    /// How many entries are on the stack (hidden ones included): the position the
    /// next entry takes.
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

    /// Hides the entries from position `from` to the current end, until
    /// [`Scope::unhide`]; entries pushed later are seen.
    pub(super) fn hide(&mut self, from: usize) {
        let end = self.entries.len();
        self.hidden.push((from.min(end), end));
    }

    /// Shows again the entries the last [`Scope::hide`] hid.
    pub(super) fn unhide(&mut self) {
        self.hidden.pop();
    }

    /// True when the entry at `at` is not hidden.
    fn visible(&self, at: usize) -> bool {
        !self.hidden.iter().any(|&(s, e)| s <= at && at < e)
    }

    /// The innermost visible entry named `name`.
    pub(super) fn lookup(&self, name: &str) -> Option<&E> {
        self.lookup_from(name, 0)
    }

    /// The innermost visible entry named `name` at position `from` or after.
    ///
    /// A name stands at most once in each open scope, so the positions walked are
    /// as many as the scopes open, however long the text.
    pub(super) fn lookup_from(&self, name: &str, from: usize) -> Option<&E> {
        let at = self
            .positions
            .get(name)?
            .iter()
            .rev()
            .take_while(|&&p| p >= from)
            .find(|&&p| self.visible(p))?;
        self.entries.get(*at)
    }

    /// The visible entries, outermost first (for suggestions in messages).
    pub(super) fn visible_entries(&self) -> impl Iterator<Item = &E> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(p, _)| self.visible(*p))
            .map(|(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Named for (&'static str, u32) {
        fn name(&self) -> &str {
            self.0
        }
    }

    #[test]
    fn a_hidden_range_is_skipped_until_it_is_shown_again() {
        let mut s = Scope::default();
        s.push(("x", 1));
        s.push(("y", 2));
        s.push(("x", 3));
        assert_eq!(s.lookup("x"), Some(&("x", 3)));
        s.hide(2);
        assert_eq!(s.lookup("x"), Some(&("x", 1)), "the later x is hidden");
        s.push(("x", 4));
        assert_eq!(
            s.lookup("x"),
            Some(&("x", 4)),
            "entries after the range are seen"
        );
        assert_eq!(s.lookup_from("x", 3), Some(&("x", 4)));
        assert_eq!(s.lookup_from("y", 3), None);
        let seen: Vec<u32> = s.visible_entries().map(|e| e.1).collect();
        assert_eq!(seen, [1, 2, 4]);
        s.truncate(3);
        s.unhide();
        assert_eq!(s.lookup("x"), Some(&("x", 3)));
        assert_eq!(s.lookup("z"), None);
    }
}
