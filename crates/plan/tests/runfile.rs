//! The stored-run fixtures: they are real `RunRecord`s (the contract of
//! `stackbench-metrics`), one written before CPU and memory accounting and one
//! with the `cpu` and `memory` objects the planner reads.

use stackbench_plan::runfile;
use stackbench_plan::storage::Side;
use stackbench_record::{record_from_json, RunRecord};

const WITHOUT: &str = include_str!("fixtures/result-without-cpu.json");
const WITH: &str = include_str!("fixtures/result-with-cpu.json");

#[test]
fn fixtures_are_run_records() {
    for text in [WITHOUT, WITH] {
        let raw: serde_json::Value = serde_json::from_str(text).unwrap();
        assert_eq!(raw["schema_version"], 1);
        // They read through the migrations to the current layout.
        let record: RunRecord = record_from_json(raw).unwrap();
        assert_eq!(record.schema_version, stackbench_record::SCHEMA_VERSION);
    }
}

#[test]
fn figures_of_the_server_side() {
    let class = runfile::read("with.json", WITH, Side::Server, Some("0")).unwrap();
    assert_eq!(class.notation, "RR8K(100B/800B)");
    assert_eq!(class.clients, 8192.0);
    let cpu = class.cpu().unwrap();
    assert_eq!((cpu.cpu_us_per_tran, cpu.util_pct), (176.0, Some(36.3)));
    let mem = class.memory().unwrap();
    assert_eq!(mem.kernel_sock_bytes_per_conn, Some(2004.0));
    // A schema-1 record: its kernel figure is the host's sockstat change.
    assert!(!mem.kernel_sock_own);
    assert!(class.population_warnings(&mem)[0].contains("sockstat"));
    let crr = runfile::read("with.json", WITH, Side::Server, Some("CRR1(64B/8kB)")).unwrap();
    assert!(crr
        .memory()
        .unwrap_err()
        .to_string()
        .contains("no memory figures"));
}

#[test]
fn old_record_says_why_cpu_is_missing() {
    let class = runfile::read("old.json", WITHOUT, Side::Server, None).unwrap();
    let e = class.cpu().unwrap_err().to_string();
    assert_eq!(
        e,
        "old.json: has no CPU figures for the server side: it was recorded (by stackbench 0.1.0) \
         before CPU accounting; rerun the measurement with a stackbench that records CPU, or give --cpu-per-tran"
    );
}
