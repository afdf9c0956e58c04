//! Unit tests of sweep grouping, x parsing and intervals.

use super::*;
use crate::fixtures::record;

fn texts(values: &[&str]) -> Vec<String> {
    values.iter().map(|v| v.to_string()).collect()
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn x_values_parse_by_kind() {
    let kind = |dim: &str, v: &[&str]| XKind::of(dim, &texts(v));
    assert_eq!(kind("clients", &["1", "2", "64", "1K"]), XKind::Count);
    assert_eq!(kind("request", &["64B", "4kB"]), XKind::Bytes);
    assert_eq!(kind("server_cpus", &["1", "0-1"]), XKind::Processors);
    assert_eq!(kind("nodelay", &["true", "false"]), XKind::Category);
    assert_eq!(kind("duration", &["500ms", "2s"]), XKind::Seconds);
    assert_eq!(kind("ratio", &["0.5", "1.5"]), XKind::Number);
    assert_eq!(kind("clients", &["1", "many"]), XKind::Category);
    assert_eq!(XKind::Processors.parse("0-3,8"), Some(5.0));
    assert_eq!(XKind::Bytes.parse("4kB"), Some(4096.0));
    assert_eq!(XKind::Seconds.parse("500ms"), Some(0.5));
}

#[test]
fn axes_order_scale_and_label() {
    let sizes = Axis::of("request", &texts(&["4kB", "64B", "1kB"]));
    let order: Vec<&str> = sizes.values.iter().map(|v| v.text.as_str()).collect();
    assert_eq!(order, ["64B", "1kB", "4kB"], "numeric axes sort by value");
    assert!(sizes.log2(), "64B … 4kB: powers of two over 64×");
    assert_eq!(sizes.description(), "request [bytes]");
    assert_eq!(sizes.format(4096.0), "4kB");
    let cpus = Axis::of("server_cpus", &texts(&["0-1", "1"]));
    assert_eq!(cpus.position("0-1"), Some(2.0));
    assert!(!cpus.log2(), "1 … 2 spans less than 8×");
    assert_eq!(cpus.description(), "server_cpus [processors]");
    let cats = Axis::of("nodelay", &texts(&["true", "false"]));
    assert_eq!(
        cats.position("false"),
        Some(1.0),
        "categories keep study order"
    );
    assert_eq!(cats.format(0.0), "true");
    assert!(!cats.log2());
    let clients = Axis::of("clients", &texts(&["1", "2", "4", "8", "16", "32", "64"]));
    assert!(clients.log2());
    assert_eq!(clients.summary(), "clients = 1, 2, 4, 8, 16, 32, 64");
    assert_eq!(clients.format(2048.0), "2K");
    assert!(!Axis::of("clients", &texts(&["3", "6", "48"])).log2());
}

#[test]
fn intervals_are_student_t() {
    let s = Stat::of(vec![1.0, 2.0, 3.0]).unwrap();
    assert_eq!(s.mean, 2.0);
    // t(0.975, 2) = 4.302653, s = 1, √3.
    let half = s.half.unwrap();
    assert!((half - 4.302_653 / 3f64.sqrt()).abs() < 1e-5, "{half}");
    assert!((s.low() - (2.0 - half)).abs() < 1e-12);
    let one = Stat::of(vec![5.0, f64::NAN]).unwrap();
    assert_eq!((one.mean, one.half, one.high()), (5.0, None, 5.0));
    assert_eq!(Stat::of(vec![]), None);
}

/// A run of `workload_run` labelled as point (clients, cpus) of `variant`.
fn crossed(variant: &str, clients: u32, cpus: &str, rate: f64) -> (Labels, RunRecord) {
    let l = labels(&[
        ("study", "s"),
        ("variant", variant),
        ("workload", "RR1(1B/1B)+STR1(1B/1MB)"),
        ("sweep", "clients,server_cpus"),
        ("sweep.clients", &clients.to_string()),
        ("sweep.server_cpus", cpus),
    ]);
    let w = format!("RR{clients}(1B/1B)+STR{clients}(1B/1MB)");
    (l, record(&w, rate, 10.0, 20.0, 0.0))
}

#[test]
fn groups_crossed_dimensions_per_class_and_variant() {
    let mut runs = Vec::new();
    for rep in 0..2 {
        for variant in ["base", "tuned"] {
            for clients in [1, 4, 2] {
                for cpus in ["1", "0-1"] {
                    let rate = 100.0 * f64::from(clients) + rep as f64;
                    runs.push(crossed(variant, clients, cpus, rate));
                }
            }
        }
    }
    runs.push((
        labels(&[("study", "s")]),
        record("RR1(1B/1B)", 1.0, 1.0, 1.0, 0.0),
    ));
    let mut other = crossed("base", 8, "1", 1.0);
    other.0.insert("sweep".into(), "clients".into());
    runs.push(other);
    let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
    let sweep = group(&refs).unwrap();
    assert_eq!(sweep.dimensions, ["clients", "server_cpus"]);
    assert_eq!(sweep.ignored_runs, 1, "the run of another sweep");
    let xs: Vec<f64> = sweep.x.values.iter().map(|v| v.x).collect();
    assert_eq!(xs, [1.0, 2.0, 4.0]);
    assert_eq!(sweep.second.as_ref().unwrap().kind, XKind::Processors);
    assert_eq!(sweep.variants, ["base", "tuned"]);
    assert_eq!(sweep.workloads.len(), 1);
    let w = &sweep.workloads[0];
    assert!(w.is_mix());
    let classes: Vec<&str> = w.classes.iter().map(|c| c.class.as_str()).collect();
    assert_eq!(
        classes,
        ["RR1(1B/1B)", "STR1(1B/1MB)"],
        "named as the base writes them"
    );
    let labels: Vec<&str> = w.classes[1]
        .series
        .iter()
        .map(|s| s.label.as_str())
        .collect();
    assert_eq!(
        labels,
        [
            "base, server_cpus = 1",
            "base, server_cpus = 0-1",
            "tuned, server_cpus = 1",
            "tuned, server_cpus = 0-1"
        ]
    );
    let p = &w.classes[0].series[3].points[2];
    assert_eq!((p.x_text.as_str(), p.runs), ("4", 2));
    assert_eq!(p.rate_tps.values, [400.0, 401.0]);
    assert_eq!(p.rate_tps.mean, 400.5);
    assert!(p.cpu_client_us_per_tran.is_none());
}

#[test]
fn no_sweep_labels_no_sweep() {
    let runs = [(
        labels(&[("study", "s")]),
        record("RR1(1B/1B)", 1.0, 1.0, 1.0, 0.0),
    )];
    let refs: Vec<(&Labels, &RunRecord)> = runs.iter().map(|(l, r)| (l, r)).collect();
    assert_eq!(group(&refs), None);
}
