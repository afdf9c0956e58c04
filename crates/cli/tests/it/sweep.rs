//! Sweeps: `run --sweep` gives one record per point, labelled, with
//! a summary and USL fit; `examples/scaling.toml` runs as a study, short, and
//! its report holds the scalability figure with the fitted curve, checked in
//! headless Chromium when it is installed (`.ci/run` installs it).

use std::path::Path;
use std::process::Command;

use assert_cmd::prelude::*;

use crate::common::{examples, json_ok, stackbench};

#[test]
fn run_sweep_gives_one_labelled_record_per_point() {
    let docs = json_ok(stackbench().args([
        "run",
        "RR(1B/1B)",
        "--sweep",
        "clients=1,3",
        "--transactions",
        "200",
        "--json",
        "--no-store",
    ]));
    let runs = docs.as_array().expect("a sweep prints an array");
    let clients: Vec<u64> = runs
        .iter()
        .map(|r| r["classes"][0]["clients"].as_u64().unwrap())
        .collect();
    assert_eq!(clients, [1, 3]);
    assert!(runs.iter().all(|r| r["classes"][0]["transactions"] == 200));
}

#[test]
fn run_sweep_errors_are_one_line() {
    for (sweep, want) in [
        ("clients=0,1", "--sweep clients=0,1: bad client count '0'"),
        (
            "clientz=1",
            "--sweep clientz=1: unknown sweep dimension 'clientz'",
        ),
        (
            "threads=0",
            "--sweep threads=0: out of range: use 1 to 1024",
        ),
        ("clients", "--sweep clients: give NAME=V1,V2"),
    ] {
        let out = stackbench()
            .args(["run", "RR(1B/1B)", "--no-store", "--sweep", sweep])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sweep}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{sweep}: {err}");
    }
}

fn chromium_dom(html: &Path, profile: &Path) -> Option<String> {
    let bin = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })?;
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn scaling_example_runs_and_reports_the_usl_curve() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    stackbench()
        .arg("study")
        .arg(examples().join("scaling.toml"))
        .args([
            "--duration",
            "300ms",
            "--warmup",
            "0s",
            "--repetitions",
            "1",
        ])
        .args(["--db", db])
        .assert()
        .success();
    let out = dir.path().join("report");
    stackbench()
        .args(["report", "--study", "scaling", "--db", db, "-o"])
        .arg(&out)
        .assert()
        .success();
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Scalability: sweep over clients"), "{md}");
    assert!(
        md.contains("Universal Scalability Law fitted to 7 runs at 7 client counts"),
        "{md}"
    );
    let svg = std::fs::read_to_string(out.join("figures/figure-1.svg")).unwrap();
    assert!(
        svg.contains("USL fit"),
        "the rate panel draws the fitted curve"
    );
    match chromium_dom(&out.join("report.html"), &dir.path().join("profile")) {
        Some(dom) => {
            assert!(
                dom.contains("Scalability: sweep over clients"),
                "page did not load"
            );
            assert!(dom.matches("<svg").count() >= 1, "figure in the DOM");
        }
        None => stackbench_testkit::skip(
            stackbench_testkit::Tier::Chromium,
            "rendering the scaling report",
            "chromium is not installed (.ci/run installs it)",
        ),
    }
}
