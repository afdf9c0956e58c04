//! Observations in words, generated from a comparison's verdicts: the study
//! conclusion in the z/OS performance reports' form ("SMC-Dv2 performs as
//! equivalent to SMC-Dv1") and one sentence per verdict that found a change
//! ("RR2(64B/64B): nodelay has a 50.12% higher transaction rate than nagle
//! (ratio 1.501×, 90% CI 1.482× … 1.521×): BETTER"). The rest is in the verdict
//! table ([`crate::verdict_table`]).

use crate::compare::{Comparison, Row, Verdict};
use crate::metric::Metric;
use crate::verdict_table::format_ratio;

/// Joins phrases as "x, y and z".
pub fn join_and(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// One sentence per metric and verdict that says something changed (BETTER
/// or WORSE), naming the workloads: "nodelay has a higher transaction rate
/// than nagle in RR2(64B/64B) (ratio 1.501×, 90% CI 1.482× … 1.521×):
/// BETTER", or over several workloads the range of their ratios. EQUIVALENT
/// and INCONCLUSIVE rows are left to the verdict table.
pub fn changed_sentences(c: &Comparison) -> Vec<String> {
    let workloads = c.rows.iter().map(|r| r.workload.as_str());
    let total = workloads.fold(Vec::new(), |mut v: Vec<&str>, w| {
        if !v.contains(&w) {
            v.push(w);
        }
        v
    });
    let mut out = Vec::new();
    for m in Metric::ALL {
        for verdict in [Verdict::Worse, Verdict::Better] {
            let hit: Vec<&Row> = c
                .rows
                .iter()
                .filter(|r| r.metric == m && r.verdict == verdict && r.change_pct.is_some())
                .collect();
            let Some(first) = hit.first() else {
                continue;
            };
            let up = first.change_pct.unwrap_or(0.0) >= 0.0;
            let more = if up { "higher" } else { "lower" };
            let ratios: Vec<f64> = hit.iter().filter_map(|r| r.change_pct).collect();
            let (lo, hi) = ratios
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
                    (lo.min(*x), hi.max(*x))
                });
            let (which, ratio) = if let [one] = hit.as_slice() {
                let ci = match (one.ci_low_pct, one.ci_high_pct) {
                    (Some(l), Some(h)) => {
                        format!(", 90% CI {} … {}", format_ratio(l), format_ratio(h))
                    }
                    _ => String::new(),
                };
                (
                    one.workload.clone(),
                    format!("ratio {}{ci}", format_ratio(lo)),
                )
            } else {
                let which = if hit.len() == total.len() {
                    format!("all {} workloads", hit.len())
                } else {
                    join_and(&hit.iter().map(|r| r.workload.clone()).collect::<Vec<_>>())
                };
                (
                    which,
                    format!("ratios {} … {}", format_ratio(lo), format_ratio(hi)),
                )
            };
            out.push(format!(
                "{} has {more} {} than {} in {which} ({ratio}): {}.",
                c.b_name,
                m.words(),
                c.a_name,
                verdict.name()
            ));
        }
    }
    out
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
