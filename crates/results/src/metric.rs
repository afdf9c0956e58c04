//! The metrics a comparison or report reads from run records, and where each
//! sits in a record's classes. Records arrive already migrated to the current
//! schema (`record_from_json`); CPU figures are optional (present when CPU
//! accounting filled `classes[i].cpu`).

use serde::Serialize;
use stackbench_metrics::{ClassResult, RunRecord};

/// One compared figure of a workload class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Transactions per second.
    RateTps,
    /// Median latency in µs.
    LatencyP50Us,
    /// 99th-percentile latency in µs.
    LatencyP99Us,
    /// Driver CPU time per transaction in µs.
    CpuClientUsPerTran,
    /// Responder CPU time per transaction in µs.
    CpuServerUsPerTran,
}

/// Which margin applies to a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarginKind {
    Rate,
    Latency,
    Cpu,
}

impl Metric {
    pub const ALL: [Metric; 5] = [
        Metric::RateTps,
        Metric::LatencyP50Us,
        Metric::LatencyP99Us,
        Metric::CpuClientUsPerTran,
        Metric::CpuServerUsPerTran,
    ];

    /// Short name for tables.
    pub fn label(self) -> &'static str {
        match self {
            Metric::RateTps => "tr/s",
            Metric::LatencyP50Us => "p50 µs",
            Metric::LatencyP99Us => "p99 µs",
            Metric::CpuClientUsPerTran => "client CPU µs/tr",
            Metric::CpuServerUsPerTran => "server CPU µs/tr",
        }
    }

    /// Words for sentences.
    pub fn words(self) -> &'static str {
        match self {
            Metric::RateTps => "transaction rate",
            Metric::LatencyP50Us => "median latency",
            Metric::LatencyP99Us => "p99 latency",
            Metric::CpuClientUsPerTran => "client CPU per transaction",
            Metric::CpuServerUsPerTran => "server CPU per transaction",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Metric::RateTps
    }

    pub fn margin_kind(self) -> MarginKind {
        match self {
            Metric::RateTps => MarginKind::Rate,
            Metric::LatencyP50Us | Metric::LatencyP99Us => MarginKind::Latency,
            Metric::CpuClientUsPerTran | Metric::CpuServerUsPerTran => MarginKind::Cpu,
        }
    }

    /// The metric's value in one class, if present and finite.
    pub fn value(self, class: &ClassResult) -> Option<f64> {
        let cpu = class.cpu.as_ref();
        let v = match self {
            Metric::RateTps => Some(class.rate_tps),
            Metric::LatencyP50Us => class.latency_us.map(|l| l.p50),
            Metric::LatencyP99Us => class.latency_us.map(|l| l.p99),
            Metric::CpuClientUsPerTran => cpu?.client.as_ref()?.cpu_us_per_tran,
            Metric::CpuServerUsPerTran => cpu?.server.as_ref()?.cpu_us_per_tran,
        };
        v.filter(|x| x.is_finite())
    }
}

/// The name a class is compared under: its notation, prefixed by the mix it
/// ran in when that differs (`RR1(100B/800B)+STR10(1B/20MB): STR10(1B/20MB)`).
pub fn class_key(class: &ClassResult) -> String {
    if class.workload != class.notation {
        format!("{}: {}", class.workload, class.notation)
    } else {
        class.notation.clone()
    }
}

/// Every value of every metric of every class over a set of records.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Samples {
    /// Class keys in the order first seen.
    pub keys: Vec<String>,
    /// `(key, metric)` → one value per record that had it.
    pub values: std::collections::BTreeMap<(String, Metric), Vec<f64>>,
    /// Records read.
    pub runs: usize,
}

impl Samples {
    /// Collects the metrics of `records`.
    pub fn collect<'a>(records: impl IntoIterator<Item = &'a RunRecord>) -> Samples {
        let mut s = Samples::default();
        for record in records {
            s.runs += 1;
            for class in &record.classes {
                let key = class_key(class);
                if !s.keys.contains(&key) {
                    s.keys.push(key.clone());
                }
                for m in Metric::ALL {
                    if let Some(v) = m.value(class) {
                        s.values.entry((key.clone(), m)).or_default().push(v);
                    }
                }
            }
        }
        s
    }

    /// The values of one metric of one class (empty when absent).
    pub fn get(&self, key: &str, metric: Metric) -> &[f64] {
        self.values
            .get(&(key.to_string(), metric))
            .map_or(&[], Vec::as_slice)
    }
}

/// Arithmetic mean and sample standard deviation (0 for one value).
pub fn mean_sd(values: &[f64]) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return Some((mean, 0.0));
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var.sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures;
    use stackbench_metrics::{CpuFigures, SideCpu};

    #[test]
    fn reads_metrics_and_optional_cpu() {
        let mut rec = fixtures::record("RR1(1B/1B)", 100.0, 10.0, 20.0, 0.0);
        rec.classes[0].cpu = Some(CpuFigures {
            client: Some(SideCpu {
                cpu_us_per_tran: Some(5.0),
                ..SideCpu::default()
            }),
            ..CpuFigures::default()
        });
        let mix = fixtures::record("RR1(1B/1B)+STR1(1B/1MB)", 3.0, 1.0, 2.0, 0.0);
        rec.classes.push(mix.classes[1].clone());
        let s = Samples::collect([&rec, &rec]);
        assert_eq!(s.runs, 2);
        assert_eq!(
            s.keys,
            vec!["RR1(1B/1B)", "RR1(1B/1B)+STR1(1B/1MB): STR1(1B/1MB)"]
        );
        assert_eq!(s.get("RR1(1B/1B)", Metric::RateTps), &[100.0, 100.0]);
        assert_eq!(s.get("RR1(1B/1B)", Metric::CpuClientUsPerTran), &[5.0, 5.0]);
        assert!(s.get("RR1(1B/1B)", Metric::CpuServerUsPerTran).is_empty());
    }

    #[test]
    fn mean_and_sd() {
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[4.0]), Some((4.0, 0.0)));
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(m, 5.0);
        assert!((sd - 2.138_089_935).abs() < 1e-6);
    }
}
