//! Durations on the command line and in study files: `10s`, `500ms`, `2m`,
//! `1.5s`, `1h`. A bare number is refused (seconds or milliseconds?) with the fix.

use std::time::Duration;

/// Parses a duration with a unit: `us`, `ms`, `s`, `m`, `h`; decimals allowed.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err(format!(
            "bad duration '{text}': a duration cannot be negative; give e.g. 10s, 500ms or 2m"
        ));
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let bad = || {
        format!("bad duration '{text}': use a number and a unit (us, ms, s, m, h), e.g. 10s, 500ms or 2m")
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "us" | "µs" => value / 1e6,
        "ms" => value / 1e3,
        "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(bad()),
    };
    if !seconds.is_finite() || seconds > 1e9 {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
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
