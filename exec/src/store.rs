//! The value of every slot of one run, shared by the run's streams: a stream writes
//! the slots of the nodes it runs and reads the slots of nodes that the schedule
//! orders before them (the lock of each slot only makes the sharing safe; the
//! schedule's waits make it deterministic).

use std::sync::Mutex;

use crate::value::Value;

/// The slots of one run.
#[derive(Debug, Default)]
pub(crate) struct Store {
    slots: Vec<Mutex<Option<Value>>>,
}

impl Store {
    /// `n` empty slots.
    pub(crate) fn new(n: usize) -> Store {
        Store {
            slots: (0..n).map(|_| Mutex::new(None)).collect(),
        }
    }

    fn slot(&self, s: usize) -> Option<std::sync::MutexGuard<'_, Option<Value>>> {
        self.slots
            .get(s)
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The value of slot `s` (a view or a shared buffer: cheap to clone).
    pub(crate) fn get(&self, s: usize) -> Option<Value> {
        self.slot(s).and_then(|v| v.clone())
    }

    /// Sets slot `s` (a slot number outside the store is ignored: the steps' slot
    /// numbers come from the same graph).
    pub(crate) fn set(&self, s: usize, v: Option<Value>) {
        if let Some(mut slot) = self.slot(s) {
            *slot = v;
        }
    }

    /// Takes the value out of slot `s`.
    pub(crate) fn take(&self, s: usize) -> Option<Value> {
        self.slot(s).and_then(|mut v| v.take())
    }

    /// Every slot, for a run that owns the store.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut Option<Value>> {
        self.slots
            .iter_mut()
            .map(|m| m.get_mut().unwrap_or_else(|e| e.into_inner()))
    }
}
