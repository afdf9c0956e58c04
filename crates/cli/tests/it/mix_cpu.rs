//! CPU of the classes of a mix: on shared worker threads
//! a class's CPU cannot be told from the others', so each class shows the
//! mix's CPU marked `mix` with no per-transaction figure, and the record
//! carries the mix's own; with `--class-workers` each class runs on threads
//! of its own and its figures are its own.

use serde_json::Value;

use crate::common::{output_ok, run_json, stackbench};

const MIX: &str = "RR1(100B/800B)+STR2(1B/1MB)";

fn side<'a>(class: &'a Value, side: &str) -> &'a Value {
    &class["cpu"][side]
}

#[test]
fn mix_on_shared_workers_gives_cpu_per_transaction_for_the_mix_only() {
    let doc = run_json(MIX, 200, &[]);
    let classes = doc["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2);
    for c in classes {
        let n = &c["notation"];
        assert_eq!(c["cpu"]["attribution"], "mix", "{n}: {}", c["cpu"]);
        assert!(c["cpu"]["total_cpu_us_per_tran"].is_null(), "{n}");
        let client = side(c, "client");
        assert!(client["cpu_us_per_tran"].is_null(), "{n}: {client}");
        assert!(client["cpu_us_per_mb"].is_null(), "{n}: {client}");
        assert!(client["process_cpu_us_per_tran"].is_null(), "{n}");
        // What is the mix's stays: its CPU-seconds.
        assert!(client["cpu_seconds"].as_f64().unwrap() > 0.0, "{n}");
        assert!(side(c, "server")["cpu_us_per_tran"].is_null(), "{n}");
    }
    let mixes = doc["mix_cpu"].as_array().expect("mix_cpu in the record");
    assert_eq!(mixes.len(), 1);
    let mix = &mixes[0];
    assert_eq!(mix["workload"], MIX);
    assert_eq!(mix["transactions"], 400);
    assert_eq!(mix["cpu"]["attribution"], "mix");
    let client = &mix["cpu"]["client"];
    let expected = client["cpu_seconds"].as_f64().unwrap() * 1e6 / 400.0;
    let per_tran = client["cpu_us_per_tran"].as_f64().unwrap();
    assert!((per_tran - expected).abs() < 1e-6 * expected, "{client}");
}

/// Every class of a shared mix holds the mix's CPU, so a warning about
/// that CPU is the mix's: said once, under the mix's name, not once per
/// class. A spinning driver is busy by design, which makes the warning
/// (`driver_spinning`) certain.
#[test]
fn a_shared_mix_gives_its_cpu_warnings_once() {
    // 3000 transactions, about 1 s: in a 0.1 s window (300) the threads'
    // start and end are a large share of it, and a spinning driver measured
    // 80–100% busy, so the warning (above 90%) came and went.
    let doc = run_json(MIX, 3000, &["--spin", "driver"]);
    let spinning: Vec<&Value> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["code"] == "driver_spinning")
        .collect();
    assert_eq!(spinning.len(), 1, "{spinning:?}");
    assert_eq!(spinning[0]["class"], MIX);
}

#[test]
fn a_single_class_keeps_its_own_cpu_and_no_mix_entry() {
    let doc = run_json("RR1(100B/800B)", 100, &[]);
    let c = &doc["classes"][0];
    assert_eq!(c["cpu"]["attribution"], "class");
    assert!(side(c, "client")["cpu_us_per_tran"].as_f64().is_some());
    assert!(doc.get("mix_cpu").is_none(), "{}", doc["mix_cpu"]);
}

#[test]
fn the_terminal_table_says_mix_and_gives_the_mix_cpu_per_transaction() {
    let out = output_ok(stackbench().args(["run", MIX, "--transactions", "100", "--no-store"]));
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("CPU of the mix"))
        .unwrap_or_else(|| panic!("no mix CPU line in:\n{text}"));
    assert!(line.contains("µs/tr"), "{line}");
    assert!(!line.contains("  "), "runs of spaces in: {line}");
    assert!(line.contains("share worker threads"), "{line}");
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("(1B/1MB)")).collect();
    assert!(rows.iter().any(|r| r.contains(" mix ")), "{text}");
}

#[test]
fn class_workers_give_each_class_its_own_cpu_per_transaction() {
    let doc = run_json(MIX, 200, &["--class-workers"]);
    assert_eq!(doc["settings"]["class_workers"], true);
    let per_tran: Vec<(f64, f64)> = doc["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = &c["notation"];
            assert_eq!(c["cpu"]["attribution"], "class", "{n}: {}", c["cpu"]);
            for s in ["client", "server"] {
                assert_eq!(side(c, s)["method"], "threads", "{n} {s}");
                assert_eq!(side(c, s)["attribution"], "class", "{n} {s}");
            }
            let of = |s| side(c, s)["cpu_us_per_tran"].as_f64().unwrap();
            (of("client"), of("server"))
        })
        .collect();
    // Each class's own: a 1 MB transfer costs more than a 100 B/800 B exchange.
    assert!(per_tran[1].0 > per_tran[0].0, "{per_tran:?}");
    assert!(per_tran[1].1 > per_tran[0].1, "{per_tran:?}");
    assert_eq!(doc["mix_cpu"][0]["transactions"], 400);
    let out = stackbench()
        .args([
            "run",
            MIX,
            "--transactions",
            "100",
            "--no-store",
            "--class-workers",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("classes on separate workers: each class's cli and srv µs/tr"),
        "{text}"
    );
    assert!(!text.contains("CPU of the mix"), "{text}");
}

#[test]
fn class_workers_split_the_cpus_among_classes_where_there_are_enough() {
    let test = "class_workers_split_the_cpus_among_classes_where_there_are_enough";
    if !stackbench_testkit::can_pin_to_cpus_0_and_1(test) {
        return;
    }
    let cpus = ["--client-cpus", "0,1", "--server-cpus", "0,1"];
    let doc = run_json(MIX, 100, &[&cpus[..], &["--class-workers"]].concat());
    for (i, c) in doc["classes"].as_array().unwrap().iter().enumerate() {
        for s in ["client", "server"] {
            // Each class's workers were pinned to a CPU of their own.
            assert_eq!(
                side(c, s)["cpus"],
                serde_json::json!([i]),
                "{} {s}",
                c["notation"]
            );
            assert_eq!(side(c, s)["method"], "threads");
        }
    }
}
