//! Byte sizes and client counts in the workload notation, over the one size
//! and count grammar of [`crate::units`] with the notation's error messages.
//!
//! The notation writes sizes as `1B`, `64B`, `4kB`, `8kB`, `20MB`; every multiple
//! is binary (`kB` = `KB` = `KiB` = 1024 B, `MB` = `MiB` = 1024² B, `GB` = `GiB` =
//! 1024³ B), the project's one rule for sizes everywhere; decimals that make whole bytes
//! (`1.5kB`) are accepted. Client counts take a `K` (×1024) or `M` suffix
//! (`256K` = 262,144). Units are case-sensitive so that a typo such as `4kb` or
//! `4Mb` (megabit?) is an error with the fix, not a guess.

use crate::error::NotationError;
use crate::units::{self, Problem};

/// One KiB, the notation's `kB`.
pub const KIB: u64 = 1024;
/// One MiB, the notation's `MB`.
pub const MIB: u64 = 1024 * KIB;
/// One GiB, the notation's `GB`.
pub const GIB: u64 = 1024 * MIB;

/// Parses a size such as `4kB` into bytes (at least 1). `whole` is the full
/// notation string, used only to make the error message point at the input.
pub fn parse_size(text: &str, whole: &str) -> Result<u64, NotationError> {
    let part = text.to_string();
    let whole = whole.to_string();
    match units::parse_size(text) {
        Ok(0) => Err(NotationError::ZeroSize { part, whole }),
        Ok(bytes) => Ok(bytes),
        Err(e) => Err(match e.problem {
            Problem::UnknownSizeUnit(unit) => NotationError::UnknownUnit { unit, whole },
            Problem::TooLarge(_) => NotationError::TooLarge { part, whole },
            Problem::NotWholeBytes(bytes) => NotationError::NotWholeBytes { part, whole, bytes },
            _ => NotationError::BadSize { part, whole },
        }),
    }
}

/// Formats bytes in the largest unit that divides them exactly (`4096` → `4kB`),
/// so that the printed form parses back to the same value.
pub fn format_size(bytes: u64) -> String {
    units::format_size(bytes)
}

/// Parses a client count: digits with an optional `K` (×1024) or `M` suffix,
/// 1 to [`crate::MAX_CLIENTS`].
pub fn parse_count(text: &str, whole: &str) -> Result<u32, NotationError> {
    match units::parse_count(text) {
        Ok(n) if (1..=u64::from(crate::MAX_CLIENTS)).contains(&n) => Ok(n as u32),
        _ => Err(NotationError::BadCount {
            part: text.to_string(),
            whole: whole.to_string(),
        }),
    }
}

/// Formats a client count, using `K` when it is an exact multiple of 1024.
pub fn format_count(clients: u32) -> String {
    units::format_count(u64::from(clients))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_binary_multiples() {
        assert_eq!(parse_size("1B", "").unwrap(), 1);
        assert_eq!(parse_size("4kB", "").unwrap(), 4096);
        assert_eq!(parse_size("4KB", "").unwrap(), 4096);
        assert_eq!(parse_size("4KiB", "").unwrap(), 4096);
        assert_eq!(parse_size("20MB", "").unwrap(), 20 * 1024 * 1024);
        assert_eq!(parse_size("2MiB", "").unwrap(), 2 * 1024 * 1024);
        assert_eq!(parse_size("1GB", "").unwrap(), 1 << 30);
        assert_eq!(parse_size("1GiB", "").unwrap(), 1 << 30);
    }

    #[test]
    fn bad_units_name_the_unit() {
        let e = parse_size("4kb", "RR10(4kb/4kB)").unwrap_err().to_string();
        assert!(e.contains("'kb'"), "{e}");
        assert!(e.contains("RR10(4kb/4kB)"), "{e}");
        assert!(parse_size("kB", "x").is_err());
        assert!(parse_size("0B", "x").is_err());
        assert!(parse_size("99999999999GB", "x").is_err());
        assert_eq!(parse_size("1.5kB", "x").unwrap(), 1536);
        let e = parse_size("4.1kB", "RR1(4.1kB/1B)")
            .unwrap_err()
            .to_string();
        assert!(e.contains("4198.4"), "{e}");
    }

    #[test]
    fn format_picks_exact_unit() {
        assert_eq!(format_size(1), "1B");
        assert_eq!(format_size(4096), "4kB");
        assert_eq!(format_size(4097), "4097B");
        assert_eq!(format_size(20 * MIB), "20MB");
        assert_eq!(format_size(3 * GIB), "3GB");
        assert_eq!(format_size(1536), "1536B");
    }

    #[test]
    fn counts_take_k_suffix() {
        assert_eq!(parse_count("256K", "").unwrap(), 262_144);
        assert_eq!(parse_count("10", "").unwrap(), 10);
        assert!(parse_count("0", "").is_err());
        assert!(parse_count("K", "").is_err());
        assert!(parse_count("1k", "").is_err());
        assert_eq!(format_count(262_144), "256K");
        assert_eq!(format_count(1000), "1000");
    }
}
