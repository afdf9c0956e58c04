//! Observations in words, generated from a comparison's verdicts: the study
//! conclusion in the seeds' form ("SMC-Dv2 performs as equivalent to SMC-Dv1")
//! and one sentence per workload with the change and its interval ("B is
//! equivalent to A in transaction rate (-0.40%, 90% CI -1.10% … +0.30%) and uses
//! 3.20% less server CPU per transaction").

use crate::compare::{Comparison, Row, Verdict};
use crate::compare_output::format_pct;
use crate::metric::Metric;

fn interval(r: &Row) -> String {
    match (r.change_pct, r.ci_low_pct, r.ci_high_pct) {
        (Some(c), Some(lo), Some(hi)) => {
            format!(
                "{}, 90% CI {} … {}",
                format_pct(c),
                format_pct(lo),
                format_pct(hi)
            )
        }
        _ => r.note.clone().unwrap_or_else(|| "no estimate".into()),
    }
}

fn rate_phrase(r: &Row, a: &str) -> String {
    let i = interval(r);
    match r.verdict {
        _ if r.change_pct.is_none() => {
            format!("cannot be compared with {a} in transaction rate ({i})")
        }
        Verdict::Equivalent => format!("is equivalent to {a} in transaction rate ({i})"),
        Verdict::Better => format!("has a higher transaction rate than {a} ({i})"),
        Verdict::Worse => format!("has a lower transaction rate than {a} ({i})"),
        Verdict::Inconclusive => {
            format!("differs from {a} in transaction rate by an inconclusive amount ({i})")
        }
        Verdict::Emulated => {
            format!("differs from {a} in transaction rate by {i} under emulation (no verdict)")
        }
        Verdict::TooCoarse => format!(
            "cannot be judged against {a} in transaction rate ({})",
            r.note.as_deref().unwrap_or("too coarse")
        ),
    }
}

fn cpu_phrase(r: &Row, side: &str) -> String {
    let change = r.change_pct.unwrap_or(0.0).abs();
    match r.verdict {
        _ if r.change_pct.is_none() => format!("{side} CPU per transaction cannot be compared"),
        Verdict::Better => format!("uses {change:.2}% less {side} CPU per transaction"),
        Verdict::Worse => format!("uses {change:.2}% more {side} CPU per transaction"),
        Verdict::Equivalent => format!(
            "uses the same {side} CPU per transaction within ±{}% ({})",
            r.margin_pct,
            format_pct(r.change_pct.unwrap_or(0.0))
        ),
        Verdict::Inconclusive => format!(
            "its {side} CPU per transaction changes by an inconclusive amount ({})",
            interval(r)
        ),
        Verdict::Emulated => format!(
            "its {side} CPU per transaction changes by {} under emulation (no verdict)",
            interval(r)
        ),
        Verdict::TooCoarse => format!(
            "its {side} CPU per transaction cannot be judged ({})",
            r.note.as_deref().unwrap_or("too coarse")
        ),
    }
}

fn latency_phrase(r: &Row) -> Option<String> {
    let change = r.change_pct?.abs();
    match r.verdict {
        Verdict::Better => Some(format!("has {change:.2}% lower p99 latency")),
        Verdict::Worse => Some(format!("has {change:.2}% higher p99 latency")),
        Verdict::Equivalent | Verdict::Inconclusive | Verdict::Emulated | Verdict::TooCoarse => {
            None
        }
    }
}

/// Joins phrases as "x, y and z".
pub fn join_and(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// One sentence per workload of the comparison, in workload order.
pub fn workload_sentences(c: &Comparison) -> Vec<String> {
    let mut keys: Vec<&str> = Vec::new();
    for r in &c.rows {
        if !keys.contains(&r.workload.as_str()) {
            keys.push(&r.workload);
        }
    }
    keys.into_iter()
        .map(|key| {
            let mut parts = Vec::new();
            if let Some(r) = c.row(key, Metric::RateTps) {
                parts.push(rate_phrase(r, &c.a_name));
            }
            for (m, side) in [
                (Metric::CpuClientUsPerTran, "client"),
                (Metric::CpuServerUsPerTran, "server"),
            ] {
                if let Some(r) = c.row(key, m) {
                    parts.push(cpu_phrase(r, side));
                }
            }
            if let Some(p) = c.row(key, Metric::LatencyP99Us).and_then(latency_phrase) {
                parts.push(p);
            }
            format!("{key}: {} {}.", c.b_name, join_and(&parts))
        })
        .collect()
}

/// The study's conclusion from rate and CPU verdicts across workloads, grouped
/// by metric: "Based on the results, B performs as equivalent to A" when every
/// verdict is EQUIVALENT, else which metrics are better, worse, equivalent or
/// inconclusive, and in how many workloads.
pub fn conclusion(c: &Comparison) -> String {
    let (a, b) = (&c.a_name, &c.b_name);
    let metrics = [
        Metric::RateTps,
        Metric::CpuClientUsPerTran,
        Metric::CpuServerUsPerTran,
    ];
    let rows: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| metrics.contains(&r.metric))
        .collect();
    if rows.is_empty() {
        return format!("No workload was measured under both {a} and {b}.");
    }
    if let Some(reason) = &c.no_verdict_reason {
        return format!("No performance verdict for {b} against {a}: {reason}.");
    }
    if rows.iter().all(|r| r.verdict == Verdict::Equivalent) {
        return format!("Based on the results, {b} performs as equivalent to {a}.");
    }
    let mut clauses = Vec::new();
    for (verdict, word) in [
        (Verdict::Worse, "worse"),
        (Verdict::Better, "better"),
        (Verdict::Equivalent, "equivalent"),
        (Verdict::Inconclusive, "inconclusive"),
        (Verdict::TooCoarse, "too coarse to judge"),
    ] {
        let mut parts = Vec::new();
        for m in metrics {
            let all: Vec<&&Row> = rows.iter().filter(|r| r.metric == m).collect();
            let hit: Vec<&str> = all
                .iter()
                .filter(|r| r.verdict == verdict)
                .map(|r| r.workload.as_str())
                .collect();
            if hit.is_empty() {
                continue;
            }
            let which = if hit.len() == all.len() {
                format!("all {} workloads", all.len())
            } else {
                hit.join(", ")
            };
            parts.push(format!("{} ({which})", m.words()));
        }
        if !parts.is_empty() {
            clauses.push(format!("{word} in {}", join_and(&parts)));
        }
    }
    let tail = if rows.iter().any(|r| r.verdict == Verdict::Inconclusive) {
        "; more repetitions would narrow the inconclusive intervals"
    } else {
        ""
    };
    format!("Compared with {a}, {b} is {}{tail}.", clauses.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_read_naturally() {
        let s = |v: &[&str]| join_and(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert_eq!(s(&[]), "");
        assert_eq!(s(&["a"]), "a");
        assert_eq!(s(&["a", "b", "c"]), "a, b and c");
    }
}
