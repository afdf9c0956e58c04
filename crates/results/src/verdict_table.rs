//! The verdict table of a study's observations: one row per variant,
//! workload and metric against the baseline — the ratio B/A, its 90%
//! interval, the verdict and the runs on each side — so seven variants make
//! one table to scan rather than forty near-identical sentences. Sentences
//! are kept for what changed ([`crate::observe::changed_sentences`]).

use crate::compare::Comparison;
use crate::doc::Block;

/// A ratio as `1.501×` (three decimals: a 0.1% change is visible).
pub fn format_ratio(change_pct: f64) -> String {
    format!("{:.3}×", 1.0 + change_pct / 100.0)
}

/// The table over every comparison of a study (each variant against the
/// baseline); `None` when there is nothing to compare.
pub fn verdict_table(comps: &[Comparison]) -> Option<Block> {
    if comps.iter().all(|c| c.rows.is_empty()) {
        return None;
    }
    let header = [
        "Variant vs baseline",
        "Workload",
        "Metric",
        "Ratio B/A",
        "90% interval",
        "Verdict",
        "n (A/B)",
    ]
    .map(String::from)
    .to_vec();
    let rows = comps
        .iter()
        .flat_map(|c| {
            c.rows.iter().map(|r| {
                let interval = match (r.ci_low_pct, r.ci_high_pct) {
                    (Some(lo), Some(hi)) => format!("{} … {}", format_ratio(lo), format_ratio(hi)),
                    _ => "-".into(),
                };
                vec![
                    format!("{} vs {}", c.b_name, c.a_name),
                    r.workload.clone(),
                    r.metric.label().to_string(),
                    r.change_pct.map_or("-".into(), format_ratio),
                    interval,
                    r.verdict_label(),
                    format!("{}/{}", r.n_a, r.n_b),
                ]
            })
        })
        .collect();
    Some(Block::Table { header, rows })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_factors() {
        assert_eq!(format_ratio(50.12), "1.501×");
        assert_eq!(format_ratio(-5.39), "0.946×");
        assert_eq!(format_ratio(0.0), "1.000×");
    }
}
