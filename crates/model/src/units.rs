//! The one grammar per unit kind that command-line flags, study files and plan
//! files share: durations (`10s`, `0.176ms`, `199.666us`, `2m`), byte sizes
//! (`64B`, `4kB`, `1.5MB`), rates (`2/min`, `8275/s`, `1/30s`), link bit rates
//! (`100Mbit`, `2.5Gbit`), percentages (`56.88%` = `56.88`), counts (`8000`,
//! `256K`) and Linux CPU lists (`0-3,8`).
//!
//! Numbers are decimals with an optional exponent (`1.5`, `.5`, `1.5e-1`). A
//! number is kept as typed (digits × 10^exponent) and scaled by its unit with
//! integer arithmetic, so `199.666us` is exactly 199,666 ns and, as seconds,
//! the `f64` nearest 0.000199666 (one rounding). Spaces around the unit are
//! ignored; units are case-sensitive so that `4kb` or `4Mb` (bits?) is an
//! error with the fix, not a guess. Byte multiples are binary (`kB` = 1024 B).
//!
//! Every parser returns one error type, [`UnitError`], whose message names the
//! input, what is wrong, and how to write it instead.

use std::fmt;
use std::time::Duration;

use thiserror::Error;

/// Longest duration accepted, in seconds (about 31.7 years): longer is a typo.
pub const MAX_DURATION_S: u64 = 1_000_000_000;

/// CPUs a CPU list may name (0 to 1023), Linux's `CPU_SETSIZE`.
pub const MAX_CPUS: usize = 1024;

const NS_PER_S: u128 = 1_000_000_000;

/// Time units: (spelling, integer multiplier, power of ten), value in seconds =
/// number × multiplier × 10^power.
const TIME_UNITS: &[(&str, u128, i32)] = &[
    ("ns", 1, -9),
    ("us", 1, -6),
    ("µs", 1, -6),
    ("μs", 1, -6),
    ("ms", 1, -3),
    ("s", 1, 0),
    ("m", 60, 0),
    ("min", 60, 0),
    ("h", 3600, 0),
];

/// Byte units, binary multiples, in bytes.
const SIZE_UNITS: &[(&str, u128)] = &[
    ("B", 1),
    ("kB", 1 << 10),
    ("KB", 1 << 10),
    ("KiB", 1 << 10),
    ("MB", 1 << 20),
    ("MiB", 1 << 20),
    ("GB", 1 << 30),
    ("GiB", 1 << 30),
];

/// The kind of value a text was meant to be; its `Display` names it in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnitKind {
    Duration,
    Size,
    Rate,
    BitRate,
    Percentage,
    Count,
    CpuList,
    Number,
}

impl UnitKind {
    /// How to write a valid value of this kind, with examples.
    pub fn fix(self) -> &'static str {
        match self {
            UnitKind::Duration => {
                "write a number and a unit: ns, us (=µs), ms, s, m (=min) or h, e.g. 10s, 500ms, 199.666us or 2m"
            }
            UnitKind::Size => {
                "write a number and a unit: B, kB (=KB=KiB), MB (=MiB) or GB (=GiB), binary multiples, e.g. 64B, 4kB or 1.5MB"
            }
            UnitKind::Rate => "write COUNT/INTERVAL, e.g. 2/min, 8275/s or 1/30s",
            UnitKind::BitRate => {
                "write a number and a unit: bit, kbit, Mbit or Gbit (per second, decimal: 1Gbit = 1000Mbit), e.g. 100Mbit or 2.5Gbit"
            }
            UnitKind::Percentage => "write e.g. 56.88% or 56.88",
            UnitKind::Count => {
                "write a whole number with an optional K (=1024) or M (=1024K), e.g. 8000 or 256K"
            }
            UnitKind::CpuList => "use CPU numbers 0 to 1023 and ranges, e.g. 0, 1-3 or 0-3,8",
            UnitKind::Number => "write e.g. 4, 0.5 or 1e-4",
        }
    }
}

impl fmt::Display for UnitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnitKind::Duration => "duration",
            UnitKind::Size => "size",
            UnitKind::Rate => "rate",
            UnitKind::BitRate => "bit rate",
            UnitKind::Percentage => "percentage",
            UnitKind::Count => "count",
            UnitKind::CpuList => "CPU list",
            UnitKind::Number => "number",
        })
    }
}

/// What is wrong with a text, without the text (see [`UnitError`]).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Problem {
    #[error("the number is missing")]
    MissingNumber,
    #[error("not a number")]
    NotANumber,
    #[error("not a whole number")]
    NotWhole,
    #[error("the duration has no unit (seconds or milliseconds?)")]
    DurationWithoutUnit,
    #[error("the size has no unit (bytes or kB?)")]
    SizeWithoutUnit,
    #[error("unknown time unit '{0}'")]
    UnknownTimeUnit(String),
    #[error("unknown size unit '{0}'")]
    UnknownSizeUnit(String),
    #[error("the bit rate has no unit (Mbit or Gbit?)")]
    BitRateWithoutUnit,
    #[error("unknown bit rate unit '{0}'")]
    UnknownBitRateUnit(String),
    #[error("unknown suffix '{0}'")]
    UnknownSuffix(String),
    #[error("a {0} cannot be negative")]
    Negative(UnitKind),
    #[error("too large: at most {0}")]
    TooLarge(&'static str),
    #[error("it is {0} bytes, not a whole number")]
    NotWholeBytes(String),
    #[error("there is no '/' between the count and the interval")]
    NoSlash,
    #[error("unknown interval '{0}'")]
    UnknownInterval(String),
    #[error("the interval must be longer than 0")]
    ZeroInterval,
    #[error("the list is empty")]
    EmptyCpuList,
    #[error("'{0}' is not a CPU number or a range")]
    BadCpu(String),
    #[error("range '{0}' runs backwards")]
    ReversedRange(String),
}

/// A text that is not a valid value of its kind: `bad duration '10': the
/// duration has no unit (seconds or milliseconds?); write a number and a unit…`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad {kind} '{text}': {problem}; {}", .kind.fix())]
pub struct UnitError {
    /// What the text was meant to be.
    pub kind: UnitKind,
    /// The input, as given.
    pub text: String,
    /// What is wrong with it.
    pub problem: Problem,
}

impl UnitError {
    fn new(kind: UnitKind, text: &str, problem: Problem) -> Self {
        UnitError {
            kind,
            text: text.to_string(),
            problem,
        }
    }
}

/// A decimal as typed: ±`digits` × 10^`exp10`, so scaling by a unit is exact.
#[derive(Debug, Clone, Copy)]
struct Decimal {
    negative: bool,
    digits: u128,
    exp10: i32,
}

impl Decimal {
    /// Parses `-12.5e-3`; `None` when the text is not such a number.
    fn parse(text: &str) -> Option<Decimal> {
        let (negative, body) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exp) = match body.find(['e', 'E']) {
            Some(i) => (&body[..i], body[i + 1..].parse::<i32>().ok()?),
            None => (body, 0),
        };
        let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int.len() + frac.len() == 0 || !all_digits(int) || !all_digits(frac) {
            return None;
        }
        let joined = format!("{int}{frac}");
        let kept = joined.trim_start_matches('0');
        let significant = kept.trim_end_matches('0');
        let zeros = i32::try_from(kept.len() - significant.len()).ok()?;
        if significant.len() > 36 || !(-10_000..=10_000).contains(&exp) {
            return None;
        }
        let digits = if significant.is_empty() {
            0
        } else {
            significant.parse().ok()?
        };
        let exp10 = exp - i32::try_from(frac.len()).ok()? + zeros;
        Some(Decimal {
            negative,
            digits,
            exp10,
        })
    }

    fn is_negative(&self) -> bool {
        self.negative && self.digits != 0
    }

    /// The value × `mult` × 10^`shift` as the nearest `f64` (one rounding).
    fn to_f64(self, mult: u128, shift: i32) -> Option<f64> {
        let sign = if self.is_negative() { "-" } else { "" };
        let digits = self.digits.checked_mul(mult)?;
        let value: f64 = format!("{sign}{digits}e{}", self.exp10 + shift)
            .parse()
            .ok()?;
        value.is_finite().then_some(value)
    }

    /// |value| × `mult` × 10^`shift` rounded to a whole number (half up), and
    /// whether it was whole already; `None` when it overflows.
    fn to_whole(self, mult: u128, shift: i32) -> Option<(u128, bool)> {
        let n = self.digits.checked_mul(mult)?;
        let power = self.exp10 + shift;
        if n == 0 {
            return Some((0, true));
        }
        if power >= 0 {
            let scale = 10u128.checked_pow(u32::try_from(power).ok()?)?;
            return Some((n.checked_mul(scale)?, true));
        }
        let Some(scale) = 10u128.checked_pow(power.unsigned_abs()) else {
            return Some((0, false)); // far below one unit
        };
        let (q, r) = (n / scale, n % scale);
        Some((q + u128::from(r >= scale.div_ceil(2)), r == 0))
    }
}

/// Splits `12.5e-3 ms` into the number `12.5e-3` and the unit `ms`.
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
    let (number, unit) = text.split_at(end);
    (number, unit.trim())
}

/// A finite number, e.g. `4`, `0.5`, `-2`, `1e-4`.
pub fn parse_number(text: &str) -> Result<f64, UnitError> {
    Decimal::parse(text.trim())
        .and_then(|d| d.to_f64(1, 0))
        .ok_or_else(|| UnitError::new(UnitKind::Number, text, Problem::NotANumber))
}

/// Reads a duration as (number, multiplier, power of ten); checks the unit and sign.
fn duration_parts(text: &str) -> Result<(Decimal, u128, i32), UnitError> {
    let err = |problem| UnitError::new(UnitKind::Duration, text, problem);
    let (number, unit) = split_number(text.trim());
    if number.is_empty() {
        return Err(err(Problem::MissingNumber));
    }
    let decimal = Decimal::parse(number).ok_or_else(|| err(Problem::NotANumber))?;
    if unit.is_empty() {
        return Err(err(Problem::DurationWithoutUnit));
    }
    let &(_, mult, shift) = TIME_UNITS
        .iter()
        .find(|(u, _, _)| *u == unit)
        .ok_or_else(|| err(Problem::UnknownTimeUnit(unit.to_string())))?;
    if decimal.is_negative() {
        return Err(err(Problem::Negative(UnitKind::Duration)));
    }
    Ok((decimal, mult, shift))
}

const DURATION_LIMIT: &str = "1e9 s (about 31 years)";

/// A duration with a unit (`ns`, `us`/`µs`/`μs`, `ms`, `s`, `m`/`min`, `h`),
/// rounded to the nearest nanosecond. Bare numbers, negative values and more
/// than [`MAX_DURATION_S`] are refused.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (decimal, mult, shift) = duration_parts(text)?;
    let max_ns = u128::from(MAX_DURATION_S) * NS_PER_S;
    match decimal.to_whole(mult, shift + 9) {
        Some((ns, _)) if ns <= max_ns => Ok(Duration::new(
            (ns / NS_PER_S) as u64,
            (ns % NS_PER_S) as u32,
        )),
        _ => Err(UnitError::new(
            UnitKind::Duration,
            text,
            Problem::TooLarge(DURATION_LIMIT),
        )),
    }
}

/// A duration as in [`parse_duration`], in seconds as the `f64` nearest the
/// typed value (`199.666us` → 0.000199666), not rounded to nanoseconds.
pub fn parse_duration_s(text: &str) -> Result<f64, UnitError> {
    let (decimal, mult, shift) = duration_parts(text)?;
    match decimal.to_f64(mult, shift) {
        Some(s) if s <= MAX_DURATION_S as f64 => Ok(s),
        _ => Err(UnitError::new(
            UnitKind::Duration,
            text,
            Problem::TooLarge(DURATION_LIMIT),
        )),
    }
}

/// Formats a duration in the largest unit that holds it exactly (`2m`, `1500ms`,
/// `0s`), so that [`parse_duration`] gives it back.
pub fn format_duration(duration: Duration) -> String {
    let ns = duration.as_nanos();
    if ns == 0 {
        return "0s".to_string();
    }
    for (unit, unit_ns) in [
        ("h", 3600 * NS_PER_S),
        ("m", 60 * NS_PER_S),
        ("s", NS_PER_S),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if ns % unit_ns == 0 {
            return format!("{}{unit}", ns / unit_ns);
        }
    }
    format!("{ns}ns")
}

/// Reads a size as (number, multiplier in bytes); checks the unit and sign.
fn size_parts(text: &str) -> Result<(Decimal, u128), UnitError> {
    let err = |problem| UnitError::new(UnitKind::Size, text, problem);
    let (number, unit) = split_number(text.trim());
    if number.is_empty() {
        return Err(err(Problem::MissingNumber));
    }
    let decimal = Decimal::parse(number).ok_or_else(|| err(Problem::NotANumber))?;
    if unit.is_empty() {
        return Err(err(Problem::SizeWithoutUnit));
    }
    let &(_, mult) = SIZE_UNITS
        .iter()
        .find(|(u, _)| *u == unit)
        .ok_or_else(|| err(Problem::UnknownSizeUnit(unit.to_string())))?;
    if decimal.is_negative() {
        return Err(err(Problem::Negative(UnitKind::Size)));
    }
    Ok((decimal, mult))
}

/// A size in bytes (`B`, `kB` = `KB` = `KiB`, `MB` = `MiB`, `GB` = `GiB`,
/// binary multiples). Decimals are allowed when they make whole bytes
/// (`1.5kB` = 1536 B); `4.1kB` (4198.4 B) is refused with the byte count, as a
/// socket buffer or message cannot hold part of a byte. Zero is allowed.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (decimal, mult) = size_parts(text)?;
    let err = |problem| UnitError::new(UnitKind::Size, text, problem);
    let (bytes, whole) = decimal
        .to_whole(mult, 0)
        .ok_or_else(|| err(Problem::TooLarge("2^64-1 bytes")))?;
    if !whole {
        let exact = decimal.to_f64(mult, 0).unwrap_or(f64::NAN);
        return Err(err(Problem::NotWholeBytes(exact.to_string())));
    }
    u64::try_from(bytes).map_err(|_| err(Problem::TooLarge("2^64-1 bytes")))
}

/// A size as in [`parse_size`], in bytes as the nearest `f64`, parts of a byte
/// allowed (`4.1kB` = 4198.4): for averages such as bytes per connection.
pub fn parse_size_f64(text: &str) -> Result<f64, UnitError> {
    let (decimal, mult) = size_parts(text)?;
    decimal
        .to_f64(mult, 0)
        .ok_or_else(|| UnitError::new(UnitKind::Size, text, Problem::TooLarge("about 1e308 bytes")))
}

/// Formats bytes in the largest unit that divides them exactly (`4096` → `4kB`,
/// `1536` → `1536B`), so that [`parse_size`] gives them back.
pub fn format_size(bytes: u64) -> String {
    for (unit, mult) in [("GB", 1u64 << 30), ("MB", 1 << 20), ("kB", 1 << 10)] {
        if bytes >= mult && bytes % mult == 0 {
            return format!("{}{unit}", bytes / mult);
        }
    }
    format!("{bytes}B")
}

/// A count of events per interval, kept as typed so a formula can show
/// "2 tr/user per 60 s" as the input wrote it.
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

/// A rate `COUNT/INTERVAL`: the interval is a time unit (`2/min`, `8275/s`) or
/// a duration (`1/30s`); the count is a number ≥ 0, the interval longer than 0.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let err = |problem| UnitError::new(UnitKind::Rate, text, problem);
    let (count_text, interval_text) = text
        .trim()
        .split_once('/')
        .ok_or_else(|| err(Problem::NoSlash))?;
    let count = match Decimal::parse(count_text.trim()) {
        Some(d) if d.is_negative() => return Err(err(Problem::Negative(UnitKind::Rate))),
        Some(d) => d.to_f64(1, 0).ok_or_else(|| err(Problem::NotANumber))?,
        None => return Err(err(Problem::NotANumber)),
    };
    let interval_text = interval_text.trim();
    let with_number = if interval_text.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        interval_text.to_string()
    } else {
        format!("1{interval_text}")
    };
    let interval_s = parse_duration_s(&with_number)
        .map_err(|_| err(Problem::UnknownInterval(interval_text.to_string())))?;
    if interval_s <= 0.0 {
        return Err(err(Problem::ZeroInterval));
    }
    Ok(Rate { count, interval_s })
}

/// A percentage, with or without `%` (`56.88%` = `56.88`); any finite value,
/// callers check the range they need.
pub fn parse_pct(text: &str) -> Result<f64, UnitError> {
    let t = text.trim();
    let number = t.strip_suffix('%').unwrap_or(t).trim();
    Decimal::parse(number)
        .and_then(|d| d.to_f64(1, 0))
        .ok_or_else(|| UnitError::new(UnitKind::Percentage, text, Problem::NotANumber))
}

/// A whole count with an optional `K` (×1024) or `M` (×1024²) suffix, as the
/// TN3270 capacity studies count users and clients (`256K` = 262,144). Zero is
/// allowed here; callers check the range they need.
pub fn parse_count(text: &str) -> Result<u64, UnitError> {
    let err = |problem| UnitError::new(UnitKind::Count, text, problem);
    let t = text.trim();
    if t.starts_with('-') {
        return Err(err(Problem::Negative(UnitKind::Count)));
    }
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    let mult: u64 = match suffix.trim() {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        s if s.starts_with(['.', 'e', 'E']) => return Err(err(Problem::NotWhole)),
        s => return Err(err(Problem::UnknownSuffix(s.to_string()))),
    };
    if digits.is_empty() {
        return Err(err(Problem::MissingNumber));
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| err(Problem::TooLarge("2^64-1")))
}

/// Formats a count, with `K` when it is a multiple of 1024 (`262144` → `256K`).
pub fn format_count(count: u64) -> String {
    if count >= 1024 && count % 1024 == 0 {
        format!("{}K", count / 1024)
    } else {
        count.to_string()
    }
}

/// A Linux CPU list such as `0-3,8` (`cpuset(7)`): numbers and ranges, each
/// below [`MAX_CPUS`], at least one CPU. Returned sorted, without repeats.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, UnitError> {
    let err = |problem| UnitError::new(UnitKind::CpuList, text, problem);
    let cpu = |part: &str, t: &str| match t.trim().parse::<usize>() {
        Ok(n) if n < MAX_CPUS => Ok(n),
        Ok(_) => Err(err(Problem::TooLarge("CPU 1023"))),
        Err(_) => Err(err(Problem::BadCpu(part.to_string()))),
    };
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (cpu(part, a)?, cpu(part, b)?);
                if a > b {
                    return Err(err(Problem::ReversedRange(part.to_string())));
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(cpu(part, part)?),
        }
    }
    if cpus.is_empty() {
        return Err(err(Problem::EmptyCpuList));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPUs as a Linux CPU list, collapsing runs (`[0,1,2,5]` → `0-2,5`);
/// the input is sorted and de-duplicated first.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        while i + 1 < sorted.len() && sorted[i + 1] == sorted[i] + 1 {
            i += 1;
        }
        parts.push(if sorted[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", sorted[i])
        });
        i += 1;
    }
    parts.join(",")
}

mod bit_rate;
pub use bit_rate::{format_bit_rate, parse_bit_rate};

#[cfg(test)]
mod tests;
