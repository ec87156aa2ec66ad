//! `--max-memory`: the memory a command may use, as a size with an optional unit.
//!
//! Without the option the limit is the memory the machine has available when the
//! command starts (see [`uop_runtime::memory_limit`]); with it, the given size.
//! Either way every input, output and temporary is accounted before it is
//! allocated, and work that needs more is refused with a message saying how much.

use super::{CliError, fail};

/// Parses a byte size: an integer, optionally followed by a unit `K`, `M`, `G` or
/// `T` (powers of 1024; `KiB`, `KB`, `k` and so on mean the same) or `B`.
pub(crate) fn parse_bytes(flag: &str, text: &str) -> Result<u64, CliError> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let bad = || {
        CliError(format!(
            "{flag} {text}: expected a size such as 4G, 512M or 1000000 (bytes; K, M, G, T \
             are powers of 1024)"
        ))
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let unit = unit.trim().to_ascii_uppercase();
    let shift = match unit.trim_end_matches('B').trim_end_matches('I') {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(bad()),
    };
    let bytes = n.checked_mul(1 << shift).ok_or_else(bad)?;
    if bytes == 0 {
        return fail(format!(
            "{flag} {text}: the limit must be more than 0 bytes"
        ));
    }
    Ok(bytes)
}

/// Sets the process-wide memory limit from `--max-memory`, if given.
pub(crate) fn apply(max_memory: Option<&str>) -> Result<(), CliError> {
    if let Some(text) = max_memory {
        uop_runtime::set_memory_limit(Some(parse_bytes("--max-memory", text)?));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_units() {
        assert_eq!(parse_bytes("--max-memory", "1000").unwrap(), 1000);
        assert_eq!(parse_bytes("--max-memory", "4G").unwrap(), 4 << 30);
        assert_eq!(parse_bytes("--max-memory", "512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("--max-memory", "2kb").unwrap(), 2048);
        assert!(parse_bytes("--max-memory", "0").is_err());
        assert!(parse_bytes("--max-memory", "4X").is_err());
        assert!(parse_bytes("--max-memory", "-1").is_err());
        assert!(parse_bytes("--max-memory", "99999999999T").is_err());
    }
}
