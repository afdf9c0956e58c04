//! The terminal summary of a sweep (`stackbench run --sweep`): per workload
//! class a table of the swept value against rate, latency and CPU per
//! transaction (mean ± 95% half-interval over repetitions), and for a client
//! sweep the Universal Scalability Law fit's sentences. A pure function from
//! labelled records to text, like the other exporters.

use std::fmt::Write as _;

use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use stackbench_record::RunRecord;

use super::usl::{fit_usl, usl_sentences};
use super::{group, Series, Stat};
use crate::store::Labels;

fn stat(s: &Stat, digits: usize) -> String {
    match s.half {
        Some(h) => format!("{:.digits$} ± {h:.digits$}", s.mean),
        None => format!("{:.digits$}", s.mean),
    }
}

fn opt(s: &Option<Stat>) -> String {
    s.as_ref().map_or_else(|| "-".to_string(), |s| stat(s, 2))
}

fn series_table(dimension: &str, series: &[Series]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        dimension,
        "series",
        "n",
        "tr/s",
        "p50 µs",
        "p99 µs",
        "cli µs/tr",
        "srv µs/tr",
    ]);
    for s in series {
        for p in &s.points {
            let row = vec![
                Cell::new(&p.x_text),
                Cell::new(&s.label),
                Cell::new(p.runs),
                Cell::new(stat(&p.rate_tps, 1)),
                Cell::new(stat(&p.latency_p50_us, 1)),
                Cell::new(stat(&p.latency_p99_us, 1)),
                Cell::new(opt(&p.cpu_client_us_per_tran)),
                Cell::new(opt(&p.cpu_server_us_per_tran)),
            ];
            t.add_row(row.into_iter().enumerate().map(|(i, c)| {
                if i >= 2 {
                    c.set_alignment(CellAlignment::Right)
                } else {
                    c
                }
            }));
        }
    }
    t
}

/// The summary text; empty when the runs carry no sweep labels.
pub fn sweep_text(runs: &[(&Labels, &RunRecord)]) -> String {
    let Some(sweep) = group(runs) else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sweep over {} (mean ± 95% half-interval over the n runs at each point, every repetition counted; no ± where n = 1):",
        sweep.dimensions.join(" × ")
    );
    if sweep.incomplete_runs > 0 {
        let _ = writeln!(
            out,
            "{} incomplete runs left out of every point and fit (they stopped early)",
            sweep.incomplete_runs
        );
    }
    for w in &sweep.workloads {
        for class in &w.classes {
            let _ = writeln!(out, "{}", class.class);
            let _ = writeln!(out, "{}", series_table(&sweep.x.dimension, &class.series));
            let repeat_means = class
                .series
                .iter()
                .flat_map(|s| &s.points)
                .any(|p| p.latency_from_repeat_means());
            if repeat_means {
                let _ = writeln!(
                    out,
                    "  p50 and p99 of a --repeat point are the mean over its repetitions (the record keeps no percentiles per repetition), so they carry no ±"
                );
            }
            if sweep.x.dimension == "clients" {
                for s in &class.series {
                    let who = format!("{}, {}", class.class, s.label);
                    for line in usl_sentences(&who, &fit_usl(s)) {
                        let _ = writeln!(out, "  {line}");
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;

    /// The labels a client sweep stores with its point at `n` clients.
    fn point_labels(n: u32, workload: &str, extra: &[(&str, String)]) -> Labels {
        [
            ("sweep", "clients".to_string()),
            ("sweep.clients", n.to_string()),
            ("workload", workload.to_string()),
        ]
        .into_iter()
        .chain(extra.iter().cloned())
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    #[test]
    fn a_client_sweep_prints_a_table_and_the_fit() {
        let mut runs = Vec::new();
        for (i, n) in [1u32, 2, 4, 8, 16, 32].iter().enumerate() {
            for rep in 0..2 {
                let x = f64::from(*n);
                let rate = 1000.0 * x / (1.0 + 0.05 * (x - 1.0) + 0.002 * x * (x - 1.0));
                let rate = rate * (1.0 + 0.005 * fixtures::jitter(3, i * 2 + rep));
                let mut r = fixtures::record(&format!("RR{n}(1B/1B)"), rate, 50.0, 90.0, 1.0);
                r.classes[0].clients = *n;
                let extra = [
                    ("variant", "default".to_string()),
                    ("repetition", (rep + 1).to_string()),
                ];
                let labels = point_labels(*n, "RR1(1B/1B)", &extra);
                runs.push((labels, r));
            }
        }
        let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
        let text = sweep_text(&refs);
        assert!(text.starts_with("sweep over clients"), "{text}");
        assert!(text.contains("│ 32 "), "{text}");
        assert!(text.contains("Universal Scalability Law"), "{text}");
        assert!(sweep_text(&[]).is_empty());
    }

    /// An incomplete run (interrupted, 0 transactions) used to be averaged
    /// into its point; now it is left out, and the count said.
    #[test]
    fn incomplete_runs_stay_out_of_the_points() {
        let mut runs = Vec::new();
        for (n, rate, complete) in [(1u32, 1000.0, true), (1, 10.0, false), (2, 1900.0, true)] {
            let mut r = fixtures::record(&format!("RR{n}(1B/1B)"), rate, 50.0, 90.0, 1.0);
            r.complete = complete;
            let labels = point_labels(n, "RR(1B/1B)", &[]);
            runs.push((labels, r));
        }
        let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
        let sweep = group(&refs).unwrap();
        assert_eq!(sweep.incomplete_runs, 1);
        let first = &sweep.workloads[0].classes[0].series[0].points[0];
        assert_eq!(first.rate_tps.values, [1000.0]);
        let text = sweep_text(&refs);
        assert!(text.contains("1 incomplete runs left out"), "{text}");
    }

    /// `run 'RR(1B/1B)' --sweep clients=1,2,4,8 --repeat 2` used to show
    /// runs = 1 and no ± under a header promising a 95% half-interval: each
    /// point is one record holding its two repetitions, and those are the n.
    #[test]
    fn repeat_records_count_every_repetition() {
        use stackbench_record::{RepetitionValues, Repetitions};
        let mut runs = Vec::new();
        for n in [1u32, 2, 4, 8] {
            let rates = [1000.0 * f64::from(n), 1100.0 * f64::from(n)];
            let mut r = fixtures::record(
                &format!("RR{n}(1B/1B)"),
                1050.0 * f64::from(n),
                50.0,
                90.0,
                1.0,
            );
            r.classes[0].clients = n;
            r.classes[0].repetitions = Some(Repetitions {
                runs: rates
                    .iter()
                    .map(|&rate_tps| RepetitionValues {
                        rate_tps,
                        client_cpu_us_per_tran: Some(10.0 + rate_tps / 1e4),
                        server_cpu_us_per_tran: None,
                    })
                    .collect(),
                ..Repetitions::default()
            });
            let labels = point_labels(n, "RR(1B/1B)", &[("variant", "run".to_string())]);
            runs.push((labels, r));
        }
        let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
        let sweep = group(&refs).unwrap();
        let point = &sweep.workloads[0].classes[0].series[0].points[0];
        assert_eq!(point.runs, 2);
        assert_eq!(point.rate_tps.values, [1000.0, 1100.0]);
        assert!(point.rate_tps.half.is_some());
        assert!(point
            .cpu_client_us_per_tran
            .as_ref()
            .unwrap()
            .half
            .is_some());
        let text = sweep_text(&refs);
        assert!(text.contains("┆ run    ┆ 2 ┆  1050.0 ± 635.3 ┆"), "{text}");
        assert!(text.contains("no percentiles per repetition"), "{text}");
    }
}
