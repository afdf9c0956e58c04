//! The bench scripts' Python halves (`bench/peers_report.py`,
//! `bench/cpu_report.py`) are run by hand, so nothing else would notice when
//! the record they read changes shape: their self-tests run here, and a real
//! run's JSON goes through the peers parser (which reads it as the flat
//! table of this binary's `results export --flat`), which must find every figure the
//! side-by-side table compares (rate, latencies, each side's CPU and the host
//! CPU row netperf is compared with). Skipped with a message without python3.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::stackbench;

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

/// `python3 ARGS…` from the bench directory, or `None` (with a message) when
/// there is no python3.
fn python(args: &[&str]) -> Option<std::process::Output> {
    match Command::new("python3")
        .args(args)
        .current_dir(bench_dir())
        // The scripts read records through `results export --flat`.
        .env("STACKBENCH", env!("CARGO_BIN_EXE_stackbench"))
        .output()
    {
        Ok(out) => Some(out),
        Err(e) => {
            let why = format!("python3 is not runnable ({e}); install python3");
            stackbench_testkit::skip(stackbench_testkit::Tier::Python, "the bench/ parsers", &why);
            None
        }
    }
}

#[test]
fn the_bench_reports_pass_their_self_tests() {
    for script in ["peers_report.py", "cpu_report.py"] {
        let Some(out) = python(&[script, "self-test"]) else {
            return;
        };
        assert!(
            out.status.success(),
            "{script} self-test: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_peers_parser_reads_every_compared_figure_from_a_real_run() {
    let run = stackbench()
        .args([
            "run",
            "RR2(1B/1B)",
            "--transactions",
            "2000",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    std::fs::write(&json, &run.stdout).unwrap();
    let Some(out) = python(&[
        "peers_report.py",
        "parse",
        "stackbench",
        json.to_str().unwrap(),
    ]) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for key in [
        "rate_tps",
        "lat_p50_us",
        "lat_p99_us",
        "cli_cpu_us_per_tr",
        "srv_cpu_us_per_tr",
        "cli_proc_cpu_us_per_tr",
        "srv_proc_cpu_us_per_tr",
        "host_cpu_us_per_tr",
    ] {
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} missing from the parsed figures:\n{text}"));
        let v: f64 = value.parse().unwrap();
        assert!(v > 0.0, "{key}={v}");
    }
}
