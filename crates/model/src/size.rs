//! Byte sizes and client counts in the seeds' notation.
//!
//! The seeds write sizes as `1B`, `64B`, `4kB`, `8kB`, `20MB`; every multiple is
//! binary (`kB` = `KB` = `KiB` = 1024 B, `MB` = `MiB` = 1024² B, `GB` = `GiB` =
//! 1024³ B), as `../shared/domain.md` fixes it. Client counts take a `K` suffix
//! (`256K` = 262,144). Parsing is strict and case-sensitive on units so that a
//! typo such as `4kb` or `4Mb` (megabit?) is an error with the fix, not a guess.

use crate::error::NotationError;

/// One KiB, the seeds' `kB`.
pub const KIB: u64 = 1024;
/// One MiB, the seeds' `MB`.
pub const MIB: u64 = 1024 * KIB;
/// One GiB, the seeds' `GB`.
pub const GIB: u64 = 1024 * MIB;

/// Units accepted after a size number, with their multiplier in bytes.
const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("kB", KIB),
    ("KB", KIB),
    ("KiB", KIB),
    ("MB", MIB),
    ("MiB", MIB),
    ("GB", GIB),
    ("GiB", GIB),
];

/// Parses a size such as `4kB` into bytes. `whole` is the full notation string,
/// used only to make the error message point at the input.
pub fn parse_size(text: &str, whole: &str) -> Result<u64, NotationError> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits_end);
    if number.is_empty() {
        return Err(NotationError::BadSize {
            part: text.to_string(),
            whole: whole.to_string(),
        });
    }
    let multiplier = SIZE_UNITS
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, m)| *m)
        .ok_or_else(|| NotationError::UnknownUnit {
            unit: unit.to_string(),
            whole: whole.to_string(),
        })?;
    let value: u64 = number.parse().map_err(|_| NotationError::TooLarge {
        part: text.to_string(),
        whole: whole.to_string(),
    })?;
    let bytes = value
        .checked_mul(multiplier)
        .ok_or_else(|| NotationError::TooLarge {
            part: text.to_string(),
            whole: whole.to_string(),
        })?;
    if bytes == 0 {
        return Err(NotationError::ZeroSize {
            part: text.to_string(),
            whole: whole.to_string(),
        });
    }
    Ok(bytes)
}

/// Formats bytes in the largest unit that divides them exactly (`4096` → `4kB`),
/// so that the printed form parses back to the same value.
pub fn format_size(bytes: u64) -> String {
    for (unit, mult) in [("GB", GIB), ("MB", MIB), ("kB", KIB)] {
        if bytes >= mult && bytes % mult == 0 {
            return format!("{}{unit}", bytes / mult);
        }
    }
    format!("{bytes}B")
}

/// Parses a client count: digits with an optional `K` (×1024) suffix.
pub fn parse_count(text: &str, whole: &str) -> Result<u32, NotationError> {
    let bad = || NotationError::BadCount {
        part: text.to_string(),
        whole: whole.to_string(),
    };
    let (number, mult) = match text.strip_suffix('K') {
        Some(n) => (n, 1024u64),
        None => (text, 1u64),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = number.parse().map_err(|_| bad())?;
    let clients = n.checked_mul(mult).ok_or_else(bad)?;
    if clients == 0 || clients > u64::from(crate::MAX_CLIENTS) {
        return Err(bad());
    }
    Ok(clients as u32)
}

/// Formats a client count, using `K` when it is an exact multiple of 1024.
pub fn format_count(clients: u32) -> String {
    if clients >= 1024 && clients % 1024 == 0 {
        format!("{}K", clients / 1024)
    } else {
        clients.to_string()
    }
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
