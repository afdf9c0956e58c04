//! Temporary unit grammar used by the settings table until `units` lands
//! (merged from the unit-grammar branch): durations, counts and CPU lists.

use std::time::Duration;

/// A duration with a unit (see [`crate::duration::parse_duration`]); negative refused.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.trim().starts_with('-') {
        return Err(format!(
            "bad duration '{text}': a duration cannot be negative: use e.g. 10s or 500ms"
        ));
    }
    crate::duration::parse_duration(text)
}

/// Canonical spelling of a duration: the largest unit that writes it exactly.
pub fn format_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".to_string();
    }
    for (unit, per) in [
        ("h", 3_600_000_000_000u128),
        ("m", 60_000_000_000),
        ("s", 1_000_000_000),
        ("ms", 1_000_000),
        ("us", 1_000),
    ] {
        if ns % per == 0 {
            return format!("{}{unit}", ns / per);
        }
    }
    format!("{}s", d.as_secs_f64())
}

/// A whole count with an optional K (×1024) or M (×1024²) suffix.
pub fn parse_count(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, mult) = match (t.strip_suffix('K'), t.strip_suffix('M')) {
        (Some(d), _) => (d, 1024u64),
        (_, Some(d)) => (d, 1024 * 1024),
        _ => (t, 1),
    };
    let bad = || format!("'{text}' is not a whole number: write e.g. 8, 1000 or 256K (K = 1024)");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(bad)
}

/// A Linux CPU list, sorted and de-duplicated.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    let bad = || format!("bad CPU list '{text}': use numbers and ranges such as 0, 1-3 or 0,2");
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (
                    a.trim().parse().map_err(|_| bad())?,
                    b.trim().parse().map_err(|_| bad())?,
                );
                if a > b || b >= 1024 {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() || cpus.iter().any(|&c| c >= 1024) {
        return Err(bad());
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// `[0,1,2,5]` → `0-2,5`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        out.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    out.join(",")
}
