//! `stackbench compare` through the binary: run ids, the JSON of
//! `results show N --json` and of `run --json` as inputs, and incomplete
//! runs left out, on a temporary database of fabricated runs.

use std::path::Path;

use assert_cmd::prelude::*;
use predicates::prelude::*;
use stackbench_record::RunRecord;
use stackbench_results::fixtures::{environment, jitter, record, with_cpu};
use stackbench_results::store::{Labels, Store};

use crate::common::stackbench;

fn rr(i: usize, seed: u64) -> RunRecord {
    let r = 1000.0 * (1.0 + 0.004 * jitter(seed, i));
    with_cpu(
        &record("RR1(1B/1B)", r, 50.0, 90.0, 1.7e9 + i as f64),
        5.0,
        4.0,
    )
}

/// Seeds runs 1–3 (variant A, kernel 6.1.0), runs 4–6 (variant B, TLS,
/// kernel 6.6.0), and run 7 (variant A, interrupted with no transaction).
fn seed(db: &Path) {
    let mut store = Store::open(Some(db)).unwrap();
    let labels = |v: &str| -> Labels { [("variant".to_string(), v.to_string())].into() };
    for i in 0..3 {
        store
            .save(&rr(i, 1), &labels("A"), &environment("6.1.0"))
            .unwrap();
    }
    for i in 0..3 {
        let mut r = rr(i, 2);
        r.settings.set("transport", "tls").unwrap();
        store.save(&r, &labels("B"), &environment("6.6.0")).unwrap();
    }
    let mut stopped = record("RR1(1B/1B)", 0.0, 0.0, 0.0, 1.8e9);
    stopped.complete = false;
    stopped.incomplete_reason = Some("interrupted (SIGTERM)".into());
    stopped.classes[0].transactions = 0;
    store
        .save(&stopped, &labels("A"), &environment("6.1.0"))
        .unwrap();
}

fn compare(db: &Path, a: &str, b: &str) -> assert_cmd::assert::Assert {
    stackbench()
        .args(["compare", a, b, "--db"])
        .arg(db)
        .assert()
}

#[test]
fn compare_takes_run_ids() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    seed(&db);
    compare(&db, "1,2,3", "4-6").success().stdout(
        predicate::str::contains("A = 1,2,3 (3 runs), B = 4-6 (3 runs)")
            .and(predicate::str::contains("transport: A tcp | B tls"))
            .and(predicate::str::contains(
                "kernel_release: A 6.1.0 | B 6.6.0",
            )),
    );
    compare(&db, "2", "6")
        .success()
        .stdout(predicate::str::contains("needs at least 2 runs per side"));
    compare(&db, "1", "99")
        .code(2)
        .stderr(predicate::str::contains("no stored run with id 99"));
    // A range is bounded: a typo must not list eleven digits of ids.
    compare(&db, "1-99999999999", "4")
        .code(2)
        .stderr(predicate::str::contains(
            "a range spans fewer than 100000 ids",
        ));
}

#[test]
fn compare_leaves_out_incomplete_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    seed(&db);
    compare(&db, "variant=A", "variant=B").success().stdout(
        predicate::str::contains("A = variant=A (3 complete runs; 1 incomplete left out)")
            .and(predicate::str::contains(
                "left out 1 incomplete run (run 7 of variant=A: interrupted (SIGTERM))",
            ))
            .and(predicate::str::contains("n=4").not()),
    );
    compare(&db, "7", "4-6")
        .code(2)
        .stderr(predicate::str::contains(
            "7: none of its 1 runs is complete",
        ));
}

#[test]
fn compare_reads_results_show_json_and_run_json() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    seed(&db);
    // `results show N --json` for runs 1 and 2, one document after another.
    let mut shown = String::new();
    for id in ["1", "2"] {
        let out = stackbench()
            .args(["results", "show", id, "--json", "--db"])
            .arg(&db)
            .output()
            .unwrap();
        assert!(out.status.success());
        shown.push_str(&String::from_utf8(out.stdout).unwrap());
    }
    let a = dir.path().join("shown.json");
    std::fs::write(&a, shown).unwrap();
    // `run --json` of two workloads prints two pretty records in a row.
    let b = dir.path().join("run.json");
    let pretty: Vec<String> = (0..2)
        .map(|i| serde_json::to_string_pretty(&rr(i, 3)).unwrap() + "\n")
        .collect();
    std::fs::write(&b, pretty.concat()).unwrap();
    stackbench()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("RR1(1B/1B)")
                .and(predicate::str::contains("(2 runs)"))
                // The stored runs' kernel is known, the plain records' is not.
                .and(predicate::str::contains(
                    "kernel_release: A 6.1.0 | B unknown",
                )),
        );
}
