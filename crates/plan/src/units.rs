//! Parsing of the planner's inputs: durations (`0.176ms`, `199.666us`, `30s`),
//! rates (`2/min`, `8275/s`, `1/30s`), percentages (`56.88%`), populations
//! (`8000`, `256K`), byte sizes (`4.1kB`, `1.07GB`) and plain numbers.
//!
//! Every parser takes the flag name (which is also the plan-file key) so its
//! error names the input and the fix. Decimal inputs are scaled by editing the
//! decimal exponent before the one conversion to `f64`, so `199.666us` becomes
//! exactly the double nearest 0.000199666 and prints back as typed.
//! Byte multiples are binary (`kB` = 1024 B), as in the workload notation.

use crate::error::PlanError;

/// A count of events per interval, kept as typed so a formula can show
/// "2 tr/user per 60 s" as the seed writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Events in one interval (the `2` of `2/min`).
    pub count: f64,
    /// Length of the interval in seconds (the `60` of `2/min`).
    pub interval_s: f64,
}

impl Rate {
    /// Events per second.
    pub fn per_s(&self) -> f64 {
        self.count / self.interval_s
    }
}

/// Time units with their power-of-ten exponent relative to one second.
const DECIMAL_TIME_UNITS: &[(&str, i32)] = &[
    ("s", 0),
    ("ms", -3),
    ("us", -6),
    ("µs", -6),
    ("μs", -6),
    ("ns", -9),
];

/// Time units that are not powers of ten, in seconds.
const OTHER_TIME_UNITS: &[(&str, f64)] = &[("min", 60.0), ("h", 3600.0)];

/// Byte units, binary multiples.
const BYTE_UNITS: &[(&str, f64)] = &[
    ("B", 1.0),
    ("kB", 1024.0),
    ("KB", 1024.0),
    ("KiB", 1024.0),
    ("MB", 1_048_576.0),
    ("MiB", 1_048_576.0),
    ("GB", 1_073_741_824.0),
    ("GiB", 1_073_741_824.0),
];

/// Splits `12.5e-3ms` into the number text `12.5e-3` and the unit `ms`.
fn split_number(text: &str) -> (&str, &str) {
    let bytes = text.as_bytes();
    let mut end = 0;
    while end < bytes.len() {
        let c = bytes[end];
        let exponent = (c == b'e' || c == b'E')
            && end > 0
            && bytes
                .get(end + 1)
                .is_some_and(|n| n.is_ascii_digit() || *n == b'-' || *n == b'+');
        let sign = (c == b'-' || c == b'+')
            && (end == 0 || bytes[end - 1] == b'e' || bytes[end - 1] == b'E');
        if c.is_ascii_digit() || c == b'.' || exponent || sign {
            end += 1;
        } else {
            break;
        }
    }
    text.split_at(end)
}

/// Parses a decimal number and multiplies it by 10^`shift` exactly (one
/// rounding), returning `None` when the text is not a number.
fn decimal_scaled(number: &str, shift: i32) -> Option<f64> {
    let (mantissa, exponent) = match number.find(['e', 'E']) {
        Some(i) => (&number[..i], number[i + 1..].parse::<i32>().ok()?),
        None => (number, 0),
    };
    mantissa.parse::<f64>().ok()?;
    let value: f64 = format!("{mantissa}e{}", exponent.checked_add(shift)?)
        .parse()
        .ok()?;
    value.is_finite().then_some(value)
}

/// A finite number, e.g. `4`, `0.5`, `1e-4`.
pub fn parse_number(flag: &str, text: &str) -> Result<f64, PlanError> {
    decimal_scaled(text.trim(), 0)
        .ok_or_else(|| PlanError::bad(flag, text, "not a number", "write e.g. 4 or 0.5"))
}

/// A number greater than zero.
pub fn parse_positive(flag: &str, text: &str) -> Result<f64, PlanError> {
    let value = parse_number(flag, text)?;
    if value > 0.0 {
        Ok(value)
    } else {
        Err(PlanError::bad(
            flag,
            text,
            "must be greater than 0",
            "give a positive number",
        ))
    }
}

/// A whole count of at least 1 with an optional `K` (×1024) or `M` (×1024²)
/// suffix, as the seeds count users (`256K` = 262,144).
pub fn parse_count(flag: &str, text: &str) -> Result<u64, PlanError> {
    let t = text.trim();
    let (digits, mult) = if let Some(d) = t.strip_suffix('K') {
        (d, 1024u64)
    } else if let Some(d) = t.strip_suffix('M') {
        (d, 1024 * 1024)
    } else {
        (t, 1)
    };
    let bad = || {
        PlanError::bad(
            flag,
            text,
            "not a whole count of at least 1",
            "write e.g. 8000 or 256K (K = 1024)",
        )
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    match n.checked_mul(mult) {
        Some(v) if v >= 1 => Ok(v),
        _ => Err(bad()),
    }
}

/// A comma-separated list of counts, e.g. `8K,16K,32K`.
pub fn parse_count_list(flag: &str, text: &str) -> Result<Vec<u64>, PlanError> {
    text.split(',')
        .map(|part| parse_count(flag, part))
        .collect()
}

/// A duration with a unit (`s`, `ms`, `us`, `ns`, `min`, `h`), in seconds, ≥ 0.
/// A bare number is refused: `0.176` could be seconds or milliseconds.
pub fn parse_duration_s(flag: &str, text: &str) -> Result<f64, PlanError> {
    let (number, unit) = split_number(text.trim());
    let fix = "write a number with a unit: s, ms, us, ns, min or h (e.g. 0.176ms, 199.666us, 30s)";
    if number.is_empty() {
        return Err(PlanError::bad(flag, text, "not a duration", fix));
    }
    if unit.is_empty() {
        return Err(PlanError::bad(flag, text, "the duration has no unit", fix));
    }
    let value = if let Some((_, shift)) = DECIMAL_TIME_UNITS.iter().find(|(u, _)| *u == unit) {
        decimal_scaled(number, *shift)
    } else if let Some((_, secs)) = OTHER_TIME_UNITS.iter().find(|(u, _)| *u == unit) {
        decimal_scaled(number, 0).map(|v| v * secs)
    } else {
        return Err(PlanError::bad(
            flag,
            text,
            format!("unknown time unit '{unit}'"),
            fix,
        ));
    };
    match value {
        Some(v) if v >= 0.0 => Ok(v),
        Some(_) => Err(PlanError::bad(
            flag,
            text,
            "a duration cannot be negative",
            fix,
        )),
        None => Err(PlanError::bad(flag, text, "not a duration", fix)),
    }
}

/// A duration that must be greater than zero.
pub fn parse_positive_duration_s(flag: &str, text: &str) -> Result<f64, PlanError> {
    let value = parse_duration_s(flag, text)?;
    if value > 0.0 {
        Ok(value)
    } else {
        Err(PlanError::bad(
            flag,
            text,
            "must be greater than 0",
            "give a positive duration, e.g. 0.176ms",
        ))
    }
}

/// A rate `COUNT/INTERVAL`, where the interval is a unit (`2/min`, `8275/s`) or
/// a duration (`1/30s`).
pub fn parse_rate(flag: &str, text: &str) -> Result<Rate, PlanError> {
    let fix = "write COUNT/INTERVAL, e.g. 2/min, 8275/s or 1/30s";
    let Some((count_text, interval_text)) = text.trim().split_once('/') else {
        return Err(PlanError::bad(flag, text, "not a rate", fix));
    };
    let count = decimal_scaled(count_text.trim(), 0)
        .filter(|c| *c >= 0.0)
        .ok_or_else(|| PlanError::bad(flag, text, "the count is not a number ≥ 0", fix))?;
    let interval_text = interval_text.trim();
    let starts_with_digit = interval_text.starts_with(|c: char| c.is_ascii_digit() || c == '.');
    let with_number = if starts_with_digit {
        interval_text.to_string()
    } else {
        format!("1{interval_text}")
    };
    let interval_s = parse_duration_s(flag, &with_number).map_err(|_| {
        PlanError::bad(
            flag,
            text,
            format!("unknown interval '{interval_text}'"),
            fix,
        )
    })?;
    if interval_s <= 0.0 {
        return Err(PlanError::bad(
            flag,
            text,
            "the interval must be longer than 0",
            fix,
        ));
    }
    Ok(Rate { count, interval_s })
}

/// A percentage, with or without `%` (`56.88%` and `56.88` are the same).
pub fn parse_pct(flag: &str, text: &str) -> Result<f64, PlanError> {
    let t = text.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    decimal_scaled(number, 0)
        .ok_or_else(|| PlanError::bad(flag, text, "not a percentage", "write e.g. 56.88% or 56.88"))
}

/// A percentage in (0, 100].
pub fn parse_util_pct(flag: &str, text: &str) -> Result<f64, PlanError> {
    let value = parse_pct(flag, text)?;
    if value > 0.0 && value <= 100.0 {
        Ok(value)
    } else {
        Err(PlanError::bad(
            flag,
            text,
            "must be above 0% and at most 100%",
            "write e.g. 80%",
        ))
    }
}

/// A byte size with a binary unit (`B`, `kB`, `MB`, `GB`; decimals allowed), ≥ 0.
pub fn parse_bytes(flag: &str, text: &str) -> Result<f64, PlanError> {
    let (number, unit) = split_number(text.trim());
    let fix =
        "write a number with a unit: B, kB, MB or GB (binary multiples), e.g. 4.1kB or 1.07GB";
    let Some((_, mult)) = BYTE_UNITS.iter().find(|(u, _)| *u == unit) else {
        let problem = if unit.is_empty() {
            "the size has no unit".to_string()
        } else {
            format!("unknown size unit '{unit}'")
        };
        return Err(PlanError::bad(flag, text, problem, fix));
    };
    match decimal_scaled(number, 0) {
        Some(v) if v >= 0.0 => Ok(v * mult),
        _ => Err(PlanError::bad(flag, text, "not a size ≥ 0", fix)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_scale_exactly() {
        assert_eq!(parse_duration_s("d", "199.666us").unwrap(), 0.000199666);
        assert_eq!(parse_duration_s("d", "0.176ms").unwrap(), 0.000176);
        assert_eq!(parse_duration_s("d", "0.000199666s").unwrap(), 0.000199666);
        assert_eq!(parse_duration_s("d", "1.5e-1ms").unwrap(), 0.00015);
        assert_eq!(parse_duration_s("d", "30s").unwrap(), 30.0);
        assert_eq!(parse_duration_s("d", "2min").unwrap(), 120.0);
        assert_eq!(parse_duration_s("d", "176µs").unwrap(), 0.000176);
        assert_eq!(parse_duration_s("d", "0s").unwrap(), 0.0);
    }

    #[test]
    fn durations_need_a_known_unit() {
        let e = parse_duration_s("cpu-per-tran", "0.176")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--cpu-per-tran '0.176': the duration has no unit"),
            "{e}"
        );
        let e = parse_duration_s("think", "3sec").unwrap_err().to_string();
        assert!(e.contains("unknown time unit 'sec'"), "{e}");
        assert!(parse_duration_s("d", "ms").is_err());
        assert!(parse_duration_s("d", "-1s").is_err());
        assert!(parse_positive_duration_s("d", "0ms").is_err());
    }

    #[test]
    fn rates_keep_count_and_interval() {
        let r = parse_rate("per-user", "2/min").unwrap();
        assert_eq!((r.count, r.interval_s), (2.0, 60.0));
        assert_eq!(parse_rate("rate", "8275/s").unwrap().per_s(), 8275.0);
        assert_eq!(parse_rate("rate", "1/30s").unwrap().interval_s, 30.0);
        assert_eq!(parse_rate("rate", "120/h").unwrap().per_s(), 120.0 / 3600.0);
        assert!(parse_rate("rate", "8275").is_err());
        assert!(parse_rate("rate", "8275/sec")
            .unwrap_err()
            .to_string()
            .contains("'sec'"));
        assert!(parse_rate("rate", "1/0s").is_err());
    }

    #[test]
    fn counts_take_binary_suffixes() {
        assert_eq!(parse_count("users", "8000").unwrap(), 8000);
        assert_eq!(parse_count("users", "256K").unwrap(), 262_144);
        assert_eq!(parse_count("users", "1M").unwrap(), 1_048_576);
        assert!(parse_count("users", "0").is_err());
        assert!(parse_count("users", "8k").is_err());
        assert!(parse_count("users", "1.5K").is_err());
        assert_eq!(
            parse_count_list("users", "8K,16K").unwrap(),
            vec![8192, 16384]
        );
    }

    #[test]
    fn percentages_and_sizes() {
        assert_eq!(parse_pct("cp-busy", "56.88%").unwrap(), 56.88);
        assert_eq!(parse_pct("cp-busy", "56.88").unwrap(), 56.88);
        assert!(parse_util_pct("target-util", "0%").is_err());
        assert!(parse_util_pct("target-util", "120%").is_err());
        assert_eq!(parse_bytes("b", "4kB").unwrap(), 4096.0);
        assert_eq!(parse_bytes("b", "501MB").unwrap(), 501.0 * 1_048_576.0);
        assert_eq!(parse_bytes("b", "0B").unwrap(), 0.0);
        assert!(parse_bytes("b", "4kb")
            .unwrap_err()
            .to_string()
            .contains("'kb'"));
        assert!(parse_bytes("b", "4096").is_err());
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("n", "1e-4").unwrap(), 1e-4);
        assert!(parse_number("n", "x").is_err());
        assert!(parse_positive("n", "0").is_err());
        assert!(parse_number("n", "inf").is_err());
    }
}
