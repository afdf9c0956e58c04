//! The metrics a comparison or report reads from run records, and where each
//! sits in a record's classes. Records arrive already migrated to the current
//! schema (`record_from_json`); CPU figures are optional (present when CPU
//! accounting filled `classes[i].cpu`).
//!
//! A mix whose classes shared worker threads has no per-class CPU (its
//! classes' `cpu.attribution` is `mix`): its CPU is read for the mix as a
//! whole instead, keyed by the mix's notation — CPU-seconds in the window and
//! CPU per transaction over every class's transactions.

use serde::Serialize;
use std::collections::BTreeSet;

use stackbench_record::CpuAttribution;
use stackbench_record::{ClassResult, CpuFigures, RunRecord, SideCpu};

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
    /// 99th percentile of the generator's lag (actual − intended send) in
    /// µs: paced classes only (think time, open loop).
    GeneratorLagP99Us,
    /// Driver CPU time per transaction in µs.
    CpuClientUsPerTran,
    /// Responder CPU time per transaction in µs.
    CpuServerUsPerTran,
    /// Driver CPU-seconds in the window: a whole mix's only (see [`Samples`]).
    CpuClientSeconds,
    /// Responder CPU-seconds in the window: a whole mix's only.
    CpuServerSeconds,
    /// A plain server's own processes' CPU per transaction in µs (found on
    /// this host: `record.server_process`); absent for stackbench's responder.
    CpuServerProcessUsPerTran,
    /// Bytes a plain server's processes wrote to storage per transaction (a
    /// broker's persistent messages); absent for stackbench's responder.
    ServerDiskWriteBytesPerTran,
}

/// Which margin applies to a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarginKind {
    Rate,
    Latency,
    Cpu,
}

impl Metric {
    pub const ALL: [Metric; 8] = [
        Metric::RateTps,
        Metric::LatencyP50Us,
        Metric::LatencyP99Us,
        Metric::GeneratorLagP99Us,
        Metric::CpuClientUsPerTran,
        Metric::CpuServerUsPerTran,
        Metric::CpuServerProcessUsPerTran,
        Metric::ServerDiskWriteBytesPerTran,
    ];

    /// Short name for tables.
    pub fn label(self) -> &'static str {
        match self {
            Metric::RateTps => "tr/s",
            Metric::LatencyP50Us => "p50 µs",
            Metric::LatencyP99Us => "p99 µs",
            Metric::GeneratorLagP99Us => "lag p99 µs",
            Metric::CpuClientUsPerTran => "client CPU µs/tr",
            Metric::CpuServerUsPerTran => "server CPU µs/tr",
            Metric::CpuClientSeconds => "client CPU s",
            Metric::CpuServerSeconds => "server CPU s",
            Metric::CpuServerProcessUsPerTran => "server process CPU µs/tr",
            Metric::ServerDiskWriteBytesPerTran => "server disk write B/tr",
        }
    }

    /// Words for sentences.
    pub fn words(self) -> &'static str {
        match self {
            Metric::RateTps => "transaction rate",
            Metric::LatencyP50Us => "median latency",
            Metric::LatencyP99Us => "p99 latency",
            Metric::GeneratorLagP99Us => "p99 generator lag",
            Metric::CpuClientUsPerTran => "client CPU per transaction",
            Metric::CpuServerUsPerTran => "server CPU per transaction",
            Metric::CpuClientSeconds => "client CPU-seconds",
            Metric::CpuServerSeconds => "server CPU-seconds",
            Metric::CpuServerProcessUsPerTran => "server processes' CPU per transaction",
            Metric::ServerDiskWriteBytesPerTran => "server storage bytes written per transaction",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == Metric::RateTps
    }

    pub fn margin_kind(self) -> MarginKind {
        match self {
            Metric::RateTps => MarginKind::Rate,
            Metric::LatencyP50Us | Metric::LatencyP99Us | Metric::GeneratorLagP99Us => {
                MarginKind::Latency
            }
            Metric::CpuClientUsPerTran
            | Metric::CpuServerUsPerTran
            | Metric::CpuClientSeconds
            | Metric::CpuServerSeconds
            | Metric::CpuServerProcessUsPerTran => MarginKind::Cpu,
            // A cost per transaction, judged with the CPU margin.
            Metric::ServerDiskWriteBytesPerTran => MarginKind::Cpu,
        }
    }

    /// The metric's value in one class, if present and finite. A side whose
    /// CPU is the whole mix's has no CPU value of its own (the other side may:
    /// `--class-workers` against a responder that could not give each class
    /// its own threads).
    pub fn value(self, class: &ClassResult) -> Option<f64> {
        let own = |s: &Option<SideCpu>| {
            s.as_ref()
                .filter(|s| s.attribution == CpuAttribution::Class)
                .and_then(|s| s.cpu_us_per_tran)
        };
        let cpu = class.cpu.as_ref();
        let v = match self {
            Metric::RateTps => Some(class.rate_tps),
            Metric::LatencyP50Us => class.latency_us.map(|l| l.p50),
            Metric::LatencyP99Us => class.latency_us.map(|l| l.p99),
            Metric::GeneratorLagP99Us => class
                .population
                .as_ref()
                .and_then(|p| p.generator_lag_us)
                .map(|l| l.p99),
            Metric::CpuClientUsPerTran => own(&cpu?.client),
            Metric::CpuServerUsPerTran => own(&cpu?.server),
            Metric::CpuClientSeconds | Metric::CpuServerSeconds => None,
            Metric::CpuServerProcessUsPerTran => {
                plain_server(cpu?).and_then(|s| s.process_cpu_us_per_tran)
            }
            Metric::ServerDiskWriteBytesPerTran => {
                plain_server(cpu?).and_then(|s| s.disk?.write_bytes_per_tran)
            }
        };
        v.filter(|x| x.is_finite())
    }
}

/// The server side of a class when it is a plain server's processes
/// sampled on this host (only those carry storage bytes, `disk`), and the
/// class's own. stackbench's responder has process figures too, but its
/// CPU-set figure is the one compared; a plain server's CPU-set figure is
/// its whole host's unless it was pinned, so its processes' is compared
/// beside it.
fn plain_server(cpu: &CpuFigures) -> Option<&SideCpu> {
    cpu.server
        .as_ref()
        .filter(|s| s.disk.is_some() && s.attribution == CpuAttribution::Class)
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
    /// Class keys whose CPU some record gave for the whole mix
    /// (`cpu.attribution` = `mix`): no per-class CPU verdict for these.
    pub shared_cpu: BTreeSet<String>,
    /// Notations of the mixes read (workloads of more than one class), in
    /// the order first seen; their whole-mix CPU is in `values` under the
    /// mix's notation.
    pub mixes: Vec<String>,
    /// Class key → transactions in the window, summed over the records:
    /// a mix's make-up (each class's share of its transactions), without
    /// which its whole-mix CPU per transaction cannot be compared.
    pub transactions: std::collections::BTreeMap<String, u64>,
}

/// The metrics read for a mix as a whole.
pub const MIX_METRICS: [Metric; 4] = [
    Metric::CpuClientSeconds,
    Metric::CpuClientUsPerTran,
    Metric::CpuServerSeconds,
    Metric::CpuServerUsPerTran,
];

/// One side's CPU-seconds for a whole mix: the figure any class holds when
/// the classes shared that side's CPU (each holds the whole mix's), else the
/// sum of the classes' own. `None` when a class lacks the side's figure.
fn mix_cpu_seconds(
    classes: &[&ClassResult],
    side: fn(&CpuFigures) -> Option<&SideCpu>,
) -> Option<f64> {
    let mut own = 0.0;
    for class in classes {
        let s = side(class.cpu.as_ref()?)?;
        if s.attribution == CpuAttribution::Mix {
            return Some(s.cpu_seconds);
        }
        own += s.cpu_seconds;
    }
    Some(own)
}

/// A mix's value of one of [`MIX_METRICS`], from its classes.
fn mix_value(classes: &[&ClassResult], m: Metric) -> Option<f64> {
    fn client(c: &CpuFigures) -> Option<&SideCpu> {
        c.client.as_ref()
    }
    fn server(c: &CpuFigures) -> Option<&SideCpu> {
        c.server.as_ref()
    }
    let seconds = match m {
        Metric::CpuClientSeconds | Metric::CpuClientUsPerTran => mix_cpu_seconds(classes, client),
        _ => mix_cpu_seconds(classes, server),
    }?;
    let transactions: u64 = classes.iter().map(|c| c.transactions).sum();
    let v = match m {
        Metric::CpuClientSeconds | Metric::CpuServerSeconds => seconds,
        _ if transactions == 0 => return None,
        _ => seconds * 1e6 / transactions as f64,
    };
    v.is_finite().then_some(v)
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
                *s.transactions.entry(key.clone()).or_default() += class.transactions;
                if class
                    .cpu
                    .as_ref()
                    .is_some_and(|c| c.attribution == CpuAttribution::Mix)
                {
                    s.shared_cpu.insert(key.clone());
                }
                for m in Metric::ALL {
                    if let Some(v) = m.value(class) {
                        s.values.entry((key.clone(), m)).or_default().push(v);
                    }
                }
            }
            for mix in crate::store::workloads_of(record) {
                let classes: Vec<&ClassResult> = record
                    .classes
                    .iter()
                    .filter(|c| c.workload == mix)
                    .collect();
                if classes.len() < 2 {
                    continue;
                }
                if !s.mixes.contains(&mix) {
                    s.mixes.push(mix.clone());
                }
                for m in MIX_METRICS {
                    if let Some(v) = mix_value(&classes, m) {
                        s.values.entry((mix.clone(), m)).or_default().push(v);
                    }
                }
            }
        }
        s
    }

    /// Each class of `mix` with its transactions per record, in key order
    /// (empty when the mix was not read).
    pub fn mix_transactions_per_run(&self, mix: &str) -> Vec<(String, f64)> {
        let prefix = format!("{mix}: ");
        self.transactions
            .iter()
            .filter_map(|(k, n)| {
                let class = k.strip_prefix(&prefix)?;
                Some((class.to_string(), *n as f64 / self.runs.max(1) as f64))
            })
            .collect()
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
    use stackbench_record::{CpuFigures, SideCpu};

    /// A paced class's lag p99 is compared beside its latency; a closed
    /// loop has none (and no row).
    #[test]
    fn reads_the_generator_lag_of_a_paced_class_only() {
        let mut rec = fixtures::record("RR1(1B/1B)", 100.0, 10.0, 20.0, 0.0);
        assert_eq!(Metric::GeneratorLagP99Us.value(&rec.classes[0]), None);
        rec.classes[0].population = Some(stackbench_record::PopulationFigures {
            generator_lag_us: Some(stackbench_record::LagUs {
                p50: 3.0,
                p99: 40.0,
                max: 90.0,
            }),
            ..Default::default()
        });
        assert_eq!(Metric::GeneratorLagP99Us.value(&rec.classes[0]), Some(40.0));
        assert_eq!(Metric::GeneratorLagP99Us.margin_kind(), MarginKind::Latency);
        assert!(!Metric::GeneratorLagP99Us.higher_is_better());
    }

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

    /// `--class-workers` against a responder that could not give each class
    /// its own threads: the client side is the class's own, the server side
    /// the whole mix's. Each side is read by its own attribution: the class
    /// keeps its client figure, and the mix's server CPU-seconds are taken
    /// once, not summed over classes that each hold all of it.
    #[test]
    fn each_side_is_read_by_its_own_attribution() {
        let side = |attribution, seconds, per_tran| SideCpu {
            attribution,
            cpu_seconds: seconds,
            cpu_us_per_tran: per_tran,
            ..SideCpu::default()
        };
        let mut rec = fixtures::record("RR1(1B/1B)+STR1(1B/1MB)", 3.0, 1.0, 2.0, 0.0);
        for (class, own) in rec.classes.iter_mut().zip([1.0, 3.0]) {
            class.cpu = Some(CpuFigures {
                client: Some(side(CpuAttribution::Class, own, Some(own * 10.0))),
                server: Some(side(CpuAttribution::Mix, 2.0, None)),
                attribution: CpuAttribution::Mix,
                ..CpuFigures::default()
            });
        }
        let c = &rec.classes[0];
        assert_eq!(Metric::CpuClientUsPerTran.value(c), Some(10.0));
        assert_eq!(Metric::CpuServerUsPerTran.value(c), None);
        let classes: Vec<&ClassResult> = rec.classes.iter().collect();
        assert_eq!(mix_value(&classes, Metric::CpuServerSeconds), Some(2.0));
        assert_eq!(mix_value(&classes, Metric::CpuClientSeconds), Some(4.0));
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
