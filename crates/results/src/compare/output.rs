//! Renderers of a [`Comparison`]: the human table, Markdown and JSON, plus the
//! "on average" sentences of z/OS performance summaries. Pure functions from
//! the comparison to text.

use comfy_table::{presets, Cell, CellAlignment, Table};

use super::{Comparison, MakeUp, Row, Verdict};
use crate::metric::Metric;

/// A figure with precision that suits its size: `123,457`, `1,234.5`, `12.35`.
pub fn format_value(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let decimals = if v.abs() >= 10_000.0 {
        0
    } else if v.abs() >= 100.0 {
        1
    } else {
        2
    };
    let text = format!("{:.*}", decimals, v.abs());
    let (int, frac) = text
        .split_once('.')
        .map_or((text.as_str(), ""), |(i, f)| (i, f));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if v < 0.0 { "-" } else { "" };
    if frac.is_empty() {
        format!("{sign}{grouped}")
    } else {
        format!("{sign}{grouped}.{frac}")
    }
}

/// A count, rounded, with thousands grouped: `130,338`.
pub fn format_count(v: f64) -> String {
    let text = format_value(v.round());
    match text.split_once('.') {
        Some((int, _)) => int.to_string(),
        None => text,
    }
}

/// A signed percentage: `+1.23%`, `-0.40%`.
pub fn format_pct(p: f64) -> String {
    let p = if p.abs() < 0.005 { 0.0 } else { p };
    format!("{p:+.2}%")
}

fn mean_cell(mean: Option<f64>, n: usize) -> String {
    match mean {
        Some(m) => format!("{} (n={n})", format_value(m)),
        None => format!("- (n={n})"),
    }
}

fn ci_cell(r: &Row) -> String {
    if r.verdict == Verdict::TooCoarse {
        // A zero-width "interval" is no interval: do not print one.
        return "none (no spread)".to_string();
    }
    match (r.ci_low_pct, r.ci_high_pct) {
        (Some(lo), Some(hi)) => format!("{} … {}", format_pct(lo), format_pct(hi)),
        _ => "-".to_string(),
    }
}

const HEADER: [&str; 8] = [
    "Workload", "Metric", "A", "B", "B vs A", "90% CI", "Margin", "Verdict",
];

fn cells(r: &Row) -> [String; 8] {
    [
        if r.whole_mix {
            format!("{} (whole mix)", r.workload)
        } else {
            r.workload.clone()
        },
        r.metric.label().to_string(),
        mean_cell(r.mean_a, r.n_a),
        mean_cell(r.mean_b, r.n_b),
        r.change_pct.map_or("-".to_string(), format_pct),
        ci_cell(r),
        format!("±{}%", r.margin_pct),
        match &r.note {
            Some(n) => format!("{} ({n})", r.verdict_label()),
            None => r.verdict_label(),
        },
    ]
}

/// "On average, B increases throughput by 1.23% …" — the summary line of a
/// z/OS release-to-release comparison.
pub fn summary_sentences(c: &Comparison) -> Vec<String> {
    let s = &c.summary;
    let mut out = Vec::new();
    let n = s.workloads;
    let noun = if n == 1 { "workload" } else { "workloads" };
    if let Some(t) = s.throughput_change_pct {
        let verb = if t >= 0.0 { "increases" } else { "decreases" };
        out.push(format!(
            "On average, {} {verb} throughput by {:.2}% relative to {} for these {n} {noun} (geometric mean).",
            c.b_name,
            t.abs(),
            c.a_name
        ));
    }
    for (side, v, n) in [
        ("client", s.cpu_client_change_pct, s.cpu_client_workloads),
        ("server", s.cpu_server_change_pct, s.cpu_server_workloads),
    ] {
        let noun = if n == 1 { "workload" } else { "workloads" };
        if let Some(v) = v {
            let verb = if v <= 0.0 { "reduces" } else { "increases" };
            out.push(format!(
                "On average, {} {verb} {side} CPU cost per transaction by {:.2}% for these {n} {noun}.",
                c.b_name,
                v.abs()
            ));
        }
    }
    out.extend(make_up_sentences(c));
    if !s.left_out.is_empty() {
        let (k, names) = (s.left_out.len(), s.left_out.join(", "));
        let noun = if k == 1 { "workload" } else { "workloads" };
        out.push(format!(
            "Left out of the throughput average: {k} {noun} without a verdict ({names}): \
             fewer than 2 runs on a side, a zero figure, or too coarse to judge; run more \
             repetitions."
        ));
    }
    out
}

/// For each mix whose make-up changed ([`super::MakeUp`]): that its CPU per
/// transaction is in no average, with the counts that changed and what its
/// CPU-seconds did — the figure that can be compared.
fn make_up_sentences(c: &Comparison) -> Vec<String> {
    c.summary
        .cpu_left_out
        .iter()
        .map(|m| {
            let seconds: Vec<String> = [
                ("client", m.cpu_client_seconds_change_pct),
                ("server", m.cpu_server_seconds_change_pct),
            ]
            .into_iter()
            .filter_map(|(side, v)| {
                let v = v?;
                Some(match v {
                    v if v.abs() < 0.005 => format!("its {side} CPU-seconds held"),
                    v if v > 0.0 => format!("its {side} CPU-seconds rose {v:.2}%"),
                    v => format!("its {side} CPU-seconds fell {:.2}%", -v),
                })
            })
            .collect();
            let seconds = if seconds.is_empty() {
                String::new()
            } else {
                format!("; in {} against {}, {}", c.b_name, c.a_name, seconds.join(" and "))
            };
            format!(
                "CPU cost per transaction of {}: not attributable and in no average — its classes' transactions per run changed ({}), so dividing the mix's CPU by them would measure the change of make-up{seconds}.",
                m.mix,
                counts_text(m)
            )
        })
        .collect()
}

/// Each class's transactions per run, A → B:
/// `RR1(100B/800B) 1,000 → 130,338 (×130.3)`.
pub fn counts_text(m: &MakeUp) -> String {
    m.classes
        .iter()
        .map(|c| {
            let (a, b) = (c.transactions_per_run_a, c.transactions_per_run_b);
            let times = if a > 0.0 {
                format!(" (×{})", format_value(b / a))
            } else {
                String::new()
            };
            format!(
                "{} {} → {}{times}",
                c.class,
                format_count(a),
                format_count(b)
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn legend(c: &Comparison) -> String {
    let side = |name: &str, n: usize| {
        let left = c.left_out.iter().filter(|l| l.side == name).count();
        match left {
            0 => format!("{name} ({n} runs)"),
            _ => format!("{name} ({n} complete runs; {left} incomplete left out)"),
        }
    };
    format!(
        "A = {}, B = {}. Means are geometric; B vs A is the ratio of B to A minus 1 with its {}% confidence interval (Welch's t on log values).",
        side(&c.a_name, c.runs_a),
        side(&c.b_name, c.runs_b),
        c.confidence_pct
    )
}

/// What differs between the runs compared, for above the verdicts: one line
/// per setting, kernel or path with A's and B's values.
pub fn difference_lines(c: &Comparison) -> Vec<String> {
    if c.differences.is_empty() {
        return vec!["A and B ran with the same settings, transport, path and kernel.".into()];
    }
    let mut out = vec!["Differences (settings, transport, path, kernel):".to_string()];
    for d in &c.differences {
        let mut line = format!("{}: A {} | B {}", d.key, d.a.join(" / "), d.b.join(" / "));
        let mixed = d.mixed_sides("A", "B");
        if !mixed.is_empty() {
            line.push_str(&format!(
                " (the runs inside {} differ among themselves)",
                mixed.join(" and ")
            ));
        }
        out.push(line);
    }
    out
}

/// Lines refusing per-class CPU verdicts of mixes, for under the table.
fn refusal_lines(c: &Comparison) -> Vec<String> {
    c.cpu_not_attributable
        .iter()
        .map(|r| format!("{}: {}", r.workload, r.reason))
        .collect()
}

/// The human table printed by `stackbench compare`.
pub fn render_table(c: &Comparison) -> String {
    let mut table = Table::new();
    table.load_style(presets::UTF8_FULL_CONDENSED);
    table.set_header(HEADER);
    for r in &c.rows {
        let row: Vec<Cell> = cells(r)
            .into_iter()
            .enumerate()
            .map(|(i, text)| {
                let cell = Cell::new(text);
                if (2..=6).contains(&i) {
                    cell.set_alignment(CellAlignment::Right)
                } else {
                    cell
                }
            })
            .collect();
        table.add_row(row);
    }
    let mut out = format!("{}\n", legend(c));
    for (i, line) in difference_lines(c).iter().enumerate() {
        let indent = if i > 0 { "  " } else { "" };
        out.push_str(&format!("{indent}{line}\n"));
    }
    out.push_str(&format!("{table}\n"));
    let lines = refusal_lines(c);
    for line in lines.iter().chain(&summary_sentences(c)).chain(&c.notes) {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Escapes `|` so a cell cannot break a Markdown table.
pub fn md_cell(text: &str) -> String {
    text.replace('|', "\\|")
}

/// The comparison as a Markdown section (table, summary, notes).
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = format!("{}\n\n", legend(c));
    let diffs = difference_lines(c);
    if let [head, rest @ ..] = diffs.as_slice() {
        out.push_str(&format!("{head}\n\n"));
        for line in rest {
            out.push_str(&format!("- {}\n", md_cell(line)));
        }
        if !rest.is_empty() {
            out.push('\n');
        }
    }
    out.push_str(&format!("| {} |\n", HEADER.join(" | ")));
    out.push_str("|---|---|---:|---:|---:|---:|---:|---|\n");
    for r in &c.rows {
        let cells: Vec<String> = cells(r).iter().map(|t| md_cell(t)).collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out.push('\n');
    for line in refusal_lines(c) {
        out.push_str(&format!("- {line}\n"));
    }
    for line in summary_sentences(c) {
        out.push_str(&format!("- {line}\n"));
    }
    for line in &c.notes {
        out.push_str(&format!("- Note: {line}\n"));
    }
    out
}

/// The comparison as pretty JSON.
pub fn render_json(c: &Comparison) -> String {
    serde_json::to_string_pretty(c).expect("a Comparison always serializes")
}

/// Metric order for sentences: what readers look for first.
pub const SENTENCE_METRICS: [Metric; 4] = [
    Metric::RateTps,
    Metric::LatencyP99Us,
    Metric::CpuClientUsPerTran,
    Metric::CpuServerUsPerTran,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_percentages() {
        assert_eq!(format_value(123_456.7), "123,457");
        assert_eq!(format_value(1234.56), "1,234.6");
        assert_eq!(format_value(12.345), "12.35");
        assert_eq!(format_value(-1234.0), "-1,234.0");
        assert_eq!(format_pct(1.234), "+1.23%");
        assert_eq!(format_pct(-0.4), "-0.40%");
        assert_eq!(format_pct(-0.001), "+0.00%");
    }
}
