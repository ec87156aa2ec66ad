//! Which copy of a kernel's loops this CPU runs: the widest vectors it has, capped
//! by `UOP_CPU` for tests and comparisons.

/// The widest code the kernels run on this CPU: `2` for AVX-512 (with AVX2 and
/// FMA), `1` for AVX2 with FMA, `0` for plain x86-64. The environment variable
/// `UOP_CPU` (`avx512`, `avx2` or `baseline`), read once per process, caps it.
#[cfg(target_arch = "x86_64")]
pub fn cpu_level() -> u8 {
    static LEVEL: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| detected_level().min(level_cap(std::env::var("UOP_CPU").ok().as_deref())))
}

/// `0` off x86-64: the kernels there run their generic loops only (a kernel sizes
/// its per-thread buffers by this level on every architecture).
#[cfg(not(target_arch = "x86_64"))]
pub fn cpu_level() -> u8 {
    0
}

/// What the CPU has, uncapped.
#[cfg(target_arch = "x86_64")]
fn detected_level() -> u8 {
    let avx2 =
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma");
    let avx512 = avx2
        && std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl");
    if avx512 { 2 } else { u8::from(avx2) }
}

/// The cap a `UOP_CPU` value sets: `baseline` 0, `avx2` 1, anything else none.
#[cfg(target_arch = "x86_64")]
fn level_cap(value: Option<&str>) -> u8 {
    match value {
        Some("baseline") => 0,
        Some("avx2") => 1,
        _ => 2,
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[test]
    fn the_cap_only_lowers_the_level() {
        assert_eq!(level_cap(Some("baseline")), 0);
        assert_eq!(level_cap(Some("avx2")), 1);
        assert_eq!(level_cap(Some("avx512")), 2);
        assert_eq!(level_cap(None), 2);
        assert!(cpu_level() <= detected_level());
        assert_eq!(cpu_level(), cpu_level());
    }
}
