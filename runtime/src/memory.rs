//! Memory accounted before it is taken: the process-wide memory limit, a
//! [`Ledger`] that adds up the bytes of every buffer a run will hold and refuses
//! the run when they exceed the limit, and [`try_filled`], the allocation that
//! reports failure as an error instead of aborting the process.
//!
//! The limit is what [`set_memory_limit`] last set (the `uop` command line's
//! `--max-memory`), or else the memory the machine has available when it is first
//! asked (`MemAvailable` of `/proc/meminfo` on Linux); where the machine does not
//! say, there is no limit but the allocator's own (every allocation still goes
//! through `try_reserve`). Every caller that allocates buffers for a run whose
//! sizes come from its user (the interpreters, the command line, a JIT kernel's
//! caller) first adds each buffer to a ledger, checks it once, and then allocates
//! with [`try_filled`].
//!
//! ```
//! let mut ledger = uop_runtime::Ledger::with_limit(1000);
//! ledger.add("x", 100, 4).unwrap(); // 400 bytes
//! ledger.add("y", 100, 4).unwrap(); // 800 bytes
//! ledger.check().unwrap();
//! ledger.add("t", 100, 4).unwrap(); // 1200 bytes: too many
//! let e = ledger.check().unwrap_err();
//! assert!(e.to_string().contains("needs 1.2 kB"), "{e}");
//! let v: Vec<f32> = uop_runtime::try_filled("x", 100, 0.0).unwrap();
//! assert_eq!(v.len(), 100);
//! ```

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// Not set: the limit is the machine's.
const UNSET: u64 = 0;

/// The limit set by [`set_memory_limit`], or [`UNSET`].
static LIMIT: AtomicU64 = AtomicU64::new(UNSET);

/// Why buffers could not be had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryError {
    /// The byte count of a buffer does not fit in 64 bits (or the address space).
    TooLarge {
        /// The buffer.
        what: String,
        /// Its element count.
        elements: u64,
        /// Bytes per element.
        element_size: u64,
    },
    /// The buffers of a run need more than the limit.
    OverLimit {
        /// Bytes needed in all.
        needed: u64,
        /// The limit.
        limit: u64,
        /// The largest buffer and its bytes.
        largest: (String, u64),
        /// How many buffers.
        buffers: usize,
    },
    /// The allocator refused (`try_reserve` failed).
    AllocationFailed {
        /// The buffer.
        what: String,
        /// Bytes asked for.
        bytes: u64,
    },
}

impl core::fmt::Display for MemoryError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MemoryError::TooLarge {
                what,
                elements,
                element_size,
            } => write!(
                f,
                "`{what}` has {elements} elements of {element_size} bytes: more bytes than \
                 fit in memory"
            ),
            MemoryError::OverLimit {
                needed,
                limit,
                largest,
                buffers,
            } => write!(
                f,
                "this needs {} for {buffers} buffer{} (the largest, `{}`, {}), more than the \
                 memory limit of {} (set it with --max-memory)",
                human_bytes(*needed),
                if *buffers == 1 { "" } else { "s" },
                largest.0,
                human_bytes(largest.1),
                human_bytes(*limit)
            ),
            MemoryError::AllocationFailed { what, bytes } => write!(
                f,
                "cannot allocate {} for `{what}`: the system has no more memory to give",
                human_bytes(*bytes)
            ),
        }
    }
}

impl std::error::Error for MemoryError {}

/// Bytes in decimal units with three significant digits (`1.2 kB`, `80.0 GB`).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["kB", "MB", "GB", "TB", "PB", "EB"];
    if bytes < 1000 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// Sets the process-wide memory limit in bytes (`None`: back to the machine's).
pub fn set_memory_limit(bytes: Option<u64>) {
    LIMIT.store(bytes.map_or(UNSET, |b| b.max(1)), Ordering::Relaxed);
}

/// The process-wide memory limit in bytes: the one set, else the machine's
/// available memory, else `u64::MAX`.
pub fn memory_limit() -> u64 {
    match LIMIT.load(Ordering::Relaxed) {
        UNSET => machine_memory().unwrap_or(u64::MAX),
        set => set,
    }
}

/// The memory the machine had available when first asked (Linux: `MemAvailable`
/// of `/proc/meminfo`), `None` where it does not say.
pub fn machine_memory() -> Option<u64> {
    static MACHINE: OnceLock<Option<u64>> = OnceLock::new();
    *MACHINE.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        meminfo_available(&text)
    })
}

/// `MemAvailable` (else `MemTotal`) of a `/proc/meminfo` text, in bytes.
fn meminfo_available(text: &str) -> Option<u64> {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.trim().strip_suffix("kB"))
            .and_then(|kb| kb.trim().parse::<u64>().ok())
            .and_then(|kb| kb.checked_mul(1024))
    };
    field("MemAvailable:").or_else(|| field("MemTotal:"))
}

/// Bytes of `elements` elements of `element_size` bytes, `None` if that overflows
/// `u64` or the address space.
pub fn byte_count(elements: u64, element_size: u64) -> Option<u64> {
    let bytes = elements.checked_mul(element_size)?;
    usize::try_from(bytes).ok()?;
    Some(bytes)
}

/// The buffers one run will hold, added up before any is allocated.
#[derive(Clone, Debug)]
pub struct Ledger {
    limit: u64,
    total: u64,
    buffers: usize,
    largest: (String, u64),
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::new()
    }
}

impl Ledger {
    /// An empty ledger checked against [`memory_limit`].
    pub fn new() -> Self {
        Ledger::with_limit(memory_limit())
    }

    /// An empty ledger checked against `limit` bytes.
    pub fn with_limit(limit: u64) -> Self {
        Ledger {
            limit,
            total: 0,
            buffers: 0,
            largest: (String::new(), 0),
        }
    }

    /// Adds a buffer of `elements` elements of `element_size` bytes.
    ///
    /// # Errors
    ///
    /// [`MemoryError::TooLarge`] when its bytes overflow, [`MemoryError::OverLimit`]
    /// when the total overflows.
    pub fn add(&mut self, what: &str, elements: u64, element_size: u64) -> Result<(), MemoryError> {
        let bytes = byte_count(elements, element_size).ok_or_else(|| MemoryError::TooLarge {
            what: what.to_string(),
            elements,
            element_size,
        })?;
        self.buffers += 1;
        if bytes > self.largest.1 || self.buffers == 1 {
            self.largest = (what.to_string(), bytes);
        }
        self.total = self.total.saturating_add(bytes);
        Ok(())
    }

    /// Bytes added so far (saturating at `u64::MAX`).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Checks the total against the limit.
    ///
    /// # Errors
    ///
    /// [`MemoryError::OverLimit`] when the buffers need more than the limit.
    pub fn check(&self) -> Result<(), MemoryError> {
        if self.total <= self.limit {
            Ok(())
        } else {
            Err(MemoryError::OverLimit {
                needed: self.total,
                limit: self.limit,
                largest: self.largest.clone(),
                buffers: self.buffers,
            })
        }
    }
}

/// A vector of `len` copies of `value`, allocated with `try_reserve_exact`: an
/// allocation failure is an error naming `what`, never an abort.
///
/// # Errors
///
/// [`MemoryError::TooLarge`] when the bytes overflow, [`MemoryError::AllocationFailed`]
/// when the allocator refuses.
pub fn try_filled<T: Clone>(what: &str, len: usize, value: T) -> Result<Vec<T>, MemoryError> {
    let size = std::mem::size_of::<T>() as u64;
    let bytes = byte_count(len as u64, size).ok_or_else(|| MemoryError::TooLarge {
        what: what.to_string(),
        elements: len as u64,
        element_size: size,
    })?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| MemoryError::AllocationFailed {
            what: what.to_string(),
            bytes,
        })?;
    v.resize(len, value);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_refuses_more_than_its_limit_naming_the_largest_buffer() {
        let mut l = Ledger::with_limit(10_000);
        l.add("a", 1000, 4).unwrap();
        l.add("b", 1000, 8).unwrap();
        assert_eq!(l.total(), 12_000);
        assert_eq!(
            l.check().unwrap_err().to_string(),
            "this needs 12.0 kB for 2 buffers (the largest, `b`, 8.0 kB), more than the \
             memory limit of 10.0 kB (set it with --max-memory)"
        );
        assert!(Ledger::with_limit(12_000).check().is_ok());
    }

    #[test]
    fn byte_counts_that_overflow_are_errors() {
        let mut l = Ledger::with_limit(u64::MAX);
        let e = l.add("huge", 1 << 62, 8).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`huge` has 4611686018427387904 elements of 8 bytes: more bytes than fit in memory"
        );
        assert_eq!(byte_count(3, 4), Some(12));
        assert!(try_filled::<f64>("x", usize::MAX / 2, 0.0).is_err());
    }

    #[test]
    fn an_allocation_the_system_refuses_is_an_error() {
        // 2^61 bytes pass the overflow checks but no allocator gives them.
        let e = try_filled::<u8>("big", 1 << 61, 0).unwrap_err();
        assert!(matches!(e, MemoryError::AllocationFailed { .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("cannot allocate 2.3 EB for `big`"),
            "{e}"
        );
    }

    #[test]
    fn meminfo_gives_available_memory_in_bytes() {
        let text = "MemTotal:       16000000 kB\nMemFree: 1 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(meminfo_available(text), Some(8_000_000 * 1024));
        assert_eq!(meminfo_available("MemTotal: 4 kB\n"), Some(4096));
        assert_eq!(meminfo_available("nothing"), None);
    }

    #[test]
    fn bytes_read_in_decimal_units() {
        assert_eq!(human_bytes(999), "999 bytes");
        assert_eq!(human_bytes(80_000_000_000), "80.0 GB");
        assert_eq!(human_bytes(u64::MAX), "18.4 EB");
    }
}
