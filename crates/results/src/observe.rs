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
    }
}

fn latency_phrase(r: &Row) -> Option<String> {
    let change = r.change_pct?.abs();
    match r.verdict {
        Verdict::Better => Some(format!("has {change:.2}% lower p99 latency")),
        Verdict::Worse => Some(format!("has {change:.2}% higher p99 latency")),
        Verdict::Equivalent | Verdict::Inconclusive => None,
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

/// The study's conclusion from rate and CPU verdicts across workloads.
pub fn conclusion(c: &Comparison) -> String {
    let decisive = |r: &&Row| {
        matches!(
            r.metric,
            Metric::RateTps | Metric::CpuClientUsPerTran | Metric::CpuServerUsPerTran
        )
    };
    let rows: Vec<&Row> = c.rows.iter().filter(decisive).collect();
    let with = |v: Verdict| -> Vec<String> {
        rows.iter()
            .filter(|r| r.verdict == v)
            .map(|r| format!("{} ({})", r.workload, r.metric.words()))
            .collect()
    };
    let (worse, better, unsure) = (
        with(Verdict::Worse),
        with(Verdict::Better),
        with(Verdict::Inconclusive),
    );
    let (a, b) = (&c.a_name, &c.b_name);
    if rows.is_empty() {
        format!("No workload was measured under both {a} and {b}.")
    } else if worse.is_empty() && better.is_empty() && unsure.is_empty() {
        format!("Based on the results, {b} performs as equivalent to {a}.")
    } else if !worse.is_empty() {
        format!("{b} performs worse than {a} in {}.", join_and(&worse))
    } else if !better.is_empty() {
        let rest = if unsure.is_empty() {
            " and as equivalent elsewhere".to_string()
        } else {
            format!("; inconclusive in {}", join_and(&unsure))
        };
        format!(
            "{b} performs better than {a} in {}{rest}.",
            join_and(&better)
        )
    } else {
        format!(
            "The runs cannot tell {b} from {a} within the margin in {}: more repetitions would narrow the intervals.",
            join_and(&unsure)
        )
    }
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
