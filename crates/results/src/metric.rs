//! The metrics a comparison or report reads from run records, and how to find
//! them in a record's JSON. Reading through `serde_json::Value` keeps the
//! results layer working on records from older and newer versions alike; CPU
//! figures are optional (present once CPU accounting fills `classes[i].cpu`).

use serde::Serialize;
use serde_json::Value;

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

    /// The metric's value in one `classes[i]` object, if present and finite.
    pub fn value(self, class: &Value) -> Option<f64> {
        let v = match self {
            Metric::RateTps => &class["rate_tps"],
            Metric::LatencyP50Us => &class["latency_us"]["p50"],
            Metric::LatencyP99Us => &class["latency_us"]["p99"],
            Metric::CpuClientUsPerTran => &class["cpu"]["client"]["cpu_us_per_tran"],
            Metric::CpuServerUsPerTran => &class["cpu"]["server"]["cpu_us_per_tran"],
        };
        v.as_f64().filter(|x| x.is_finite())
    }
}

/// The name a class is compared under: its notation, prefixed by the mix it
/// ran in when that differs (`RR1(100B/800B)+STR10(1B/20MB): STR10(1B/20MB)`).
pub fn class_key(class: &Value) -> Option<String> {
    let notation = class["notation"].as_str()?;
    match class["workload"].as_str() {
        Some(w) if w != notation => Some(format!("{w}: {notation}")),
        _ => Some(notation.to_string()),
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
    /// Collects the metrics of `records` (run records as JSON).
    pub fn collect<'a>(records: impl IntoIterator<Item = &'a Value>) -> Samples {
        let mut s = Samples::default();
        for record in records {
            s.runs += 1;
            for class in record["classes"].as_array().into_iter().flatten() {
                let Some(key) = class_key(class) else {
                    continue;
                };
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
    use serde_json::json;

    #[test]
    fn reads_metrics_and_optional_cpu() {
        let rec = json!({"classes": [
            {"workload": "RR1(1B/1B)", "notation": "RR1(1B/1B)", "rate_tps": 100.0,
             "latency_us": {"p50": 10.0, "p99": 20.0},
             "cpu": {"client": {"cpu_us_per_tran": 5.0}}},
            {"workload": "RR1(1B/1B)+STR1(1B/1MB)", "notation": "STR1(1B/1MB)", "rate_tps": 3.0,
             "latency_us": {"p50": 1.0, "p99": 2.0}}
        ]});
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
