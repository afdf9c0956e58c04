//! CPU of the classes of a mix (issue 21, point 3): on shared worker threads
//! a class's CPU cannot be told from the others', so each class shows the
//! mix's CPU marked `mix` with no per-transaction figure, and the record
//! carries the mix's own; with `--class-workers` each class runs on threads
//! of its own and its figures are its own.

use serde_json::Value;

use crate::common::{run_json, stackbench};

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
    let out = stackbench()
        .args(["run", MIX, "--transactions", "100", "--no-store"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("CPU of the mix"))
        .unwrap_or_else(|| panic!("no mix CPU line in:\n{text}"));
    assert!(line.contains("µs/tr"), "{line}");
    assert!(text.contains("share worker threads"), "{text}");
}
