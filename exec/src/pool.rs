//! Lists reused across the steps of runs: a step takes a list of values from its
//! run's [`Pool`], fills it, and gives it back emptied, so that after the first
//! run nothing in the executor's steps allocates (the pool travels with the run's
//! arena from one run to the next).

use crate::value::Value;

/// Spare lists of values, kept with their capacity.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    values: Vec<Vec<Value>>,
    slots: Vec<Vec<Option<Value>>>,
}

impl Pool {
    /// An empty list of values (with the capacity of an earlier one, if any).
    pub(crate) fn values(&mut self) -> Vec<Value> {
        self.values.pop().unwrap_or_default()
    }

    /// Gives `list` back, emptied: its values are dropped now (so that buffers they
    /// shared are no longer shared).
    pub(crate) fn give_values(&mut self, mut list: Vec<Value>) {
        list.clear();
        self.values.push(list);
    }

    /// An empty list of slot values.
    pub(crate) fn slots(&mut self) -> Vec<Option<Value>> {
        self.slots.pop().unwrap_or_default()
    }

    /// Gives `list` back, emptied.
    pub(crate) fn give_slots(&mut self, mut list: Vec<Option<Value>>) {
        list.clear();
        self.slots.push(list);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_given_back_is_empty_and_keeps_its_capacity() {
        let mut pool = Pool::default();
        let mut list = pool.values();
        list.reserve(8);
        let capacity = list.capacity();
        pool.give_values(list);
        let again = pool.values();
        assert!(again.is_empty());
        assert_eq!(again.capacity(), capacity);
    }
}
