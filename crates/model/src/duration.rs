//! Durations on the command line: `10s`, `500ms`, `2m`, `1.5s`, `1h`. A thin
//! wrapper over the one duration grammar in [`crate::units`], kept so callers
//! that want a `String` error keep compiling.

use std::time::Duration;

/// Parses a duration with a unit (`ns`, `us`, `ms`, `s`, `m`, `h`; decimals
/// allowed); a bare number is refused (seconds or milliseconds?) with the fix.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    crate::units::parse_duration(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("0s").unwrap(), Duration::ZERO);
        for bad in ["10", "s", "10 parsecs", "-1s", "1e99h"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
        }
        assert!(parse_duration("-1s")
            .unwrap_err()
            .contains("cannot be negative"));
    }
}
