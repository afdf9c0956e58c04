//! The projected gain: the observed mix ([`crate::mix`]) run here over TCP
//! and over AF_UNIX (the memory-to-memory path a same-host connection could
//! take, as SMC-D takes within one machine), one workload per class so each
//! class's CPU per transaction is its own, and the difference weighted by
//! the observed transactions. Two runs through the runner, stored like any
//! other by the caller.

use std::time::Duration;

use stackbench_model::settings::RunSettings;
use stackbench_record::applicability::{ProjectedClass, Projection};
use stackbench_record::RunRecord;
use stackbench_runner::{resolve, RunError, Runner};

use crate::mix::MixClass;

/// The transports compared, in run order.
pub const TRANSPORTS: [&str; 2] = ["tcp", "unix"];

/// Runs the mix over each transport for `window` (after a 1 s warm-up) and
/// returns the two records (in [`TRANSPORTS`] order) and the projection.
pub fn project(
    runner: &mut Runner,
    classes: &[MixClass],
    window: Duration,
) -> Result<(Vec<RunRecord>, Projection), RunError> {
    let mut records = Vec::new();
    for transport in TRANSPORTS {
        let mut s = RunSettings::default();
        let set = |s: &mut RunSettings, name: &str, value: &str| {
            s.set(name, value)
                .map_err(|e| RunError::Input(format!("{name}: {}", e.message)))
        };
        set(&mut s, "transport", transport)?;
        set(&mut s, "duration", &format!("{}ms", window.as_millis()))?;
        set(&mut s, "warmup", "1s")?;
        let workloads = classes.iter().map(MixClass::workload).collect();
        let plan = resolve(s, workloads, false, false)?;
        records.push(runner.execute(&plan)?);
    }
    let projection = projection(classes, &records[0], &records[1], window);
    Ok((records, projection))
}

/// Both sides' CPU per transaction of the `i`th class of a record.
fn cpu_us_per_tran(r: &RunRecord, i: usize) -> Option<f64> {
    r.classes.get(i)?.cpu.as_ref()?.total_cpu_us_per_tran
}

/// The classes with their measured costs and the weighted savings.
pub fn projection(
    classes: &[MixClass],
    tcp: &RunRecord,
    unix: &RunRecord,
    window: Duration,
) -> Projection {
    let mut out = Projection {
        run_window_s: window.as_secs_f64(),
        ..Projection::default()
    };
    let (mut weighted, mut transactions, mut per_s) = (0.0, 0u64, 0.0);
    let mut complete = true;
    for (i, c) in classes.iter().enumerate() {
        let (t, u) = (cpu_us_per_tran(tcp, i), cpu_us_per_tran(unix, i));
        let saved = t.zip(u).map(|(t, u)| t - u);
        match saved {
            Some(s) => {
                weighted += s * c.observed_transactions as f64;
                transactions += c.observed_transactions;
                per_s += s * c.observed_tps;
            }
            None => complete = false,
        }
        out.classes.push(ProjectedClass {
            workload: c.workload().to_string(),
            connections: c.connections,
            observed_transactions: c.observed_transactions,
            observed_tps: c.observed_tps,
            tcp_cpu_us_per_tran: t,
            unix_cpu_us_per_tran: u,
            saved_cpu_us_per_tran: saved,
        });
    }
    if complete && transactions > 0 {
        out.saved_cpu_us_per_tran = Some(weighted / transactions as f64);
        out.saved_cpu_us_per_s = Some(per_s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_model::{ClassSpec, Kind};
    use stackbench_record::CpuFigures;

    /// A record with one class per cost, each with that total CPU µs per transaction.
    fn record(costs: &[f64]) -> RunRecord {
        let notation = vec!["RR1(64B/64B)"; costs.len()].join("+");
        let mut r = stackbench_results::fixtures::record(&notation, 100.0, 10.0, 20.0, 0.0);
        for (class, &c) in r.classes.iter_mut().zip(costs) {
            class.cpu = Some(CpuFigures {
                total_cpu_us_per_tran: Some(c),
                ..CpuFigures::default()
            });
        }
        r
    }

    fn class(kind: Kind, transactions: u64, tps: f64) -> MixClass {
        MixClass {
            spec: ClassSpec {
                kind,
                clients: 1,
                request_bytes: 64,
                response_bytes: 64,
                pacing: None,
            },
            connections: 1,
            observed_transactions: transactions,
            observed_tps: tps,
        }
    }

    #[test]
    fn savings_are_weighted_by_the_observed_transactions() {
        let classes = [class(Kind::Rr, 900, 90.0), class(Kind::Crr, 100, 10.0)];
        let p = projection(
            &classes,
            &record(&[20.0, 100.0]),
            &record(&[5.0, 40.0]),
            Duration::from_secs(3),
        );
        assert_eq!(p.classes[0].saved_cpu_us_per_tran, Some(15.0));
        assert_eq!(p.classes[1].saved_cpu_us_per_tran, Some(60.0));
        // (900 × 15 + 100 × 60) / 1000
        assert!((p.saved_cpu_us_per_tran.unwrap() - 19.5).abs() < 1e-9);
        // 90 × 15 + 10 × 60 µs per second
        assert!((p.saved_cpu_us_per_s.unwrap() - 1950.0).abs() < 1e-9);
        // A class without a CPU figure leaves the totals unknown.
        let p = projection(
            &classes,
            &record(&[20.0]),
            &record(&[5.0, 40.0]),
            Duration::from_secs(3),
        );
        assert_eq!(p.saved_cpu_us_per_tran, None);
    }
}
