//! `--gen-sched`: the driver's workers are scheduled as asked (a think-time
//! population over two agents completes with the value stored and its
//! generator lag merged from both agents' histograms), and a value the
//! kernel or the run refuses is one line before anything starts.

use assert_cmd::prelude::*;

use crate::common::{json_ok, stackbench};

#[test]
fn a_slice_of_their_own_runs_agents_and_is_stored_with_the_merged_lag() {
    let doc = json_ok(stackbench().args([
        "run",
        "RR8(100B/800B)@5ms",
        "--agents",
        "2",
        "--gen-sched",
        "slice:100us",
        "--duration",
        "1s",
        "--warmup",
        "0s",
        "--no-store",
        "--json",
    ]));
    assert_eq!(doc["settings"]["gen_sched"], "slice:100us", "{doc}");
    let p = &doc["classes"][0]["population"];
    let lag = stackbench_metrics::LatencyHistogram::from_base64(
        p["generator_lag_hdr"]
            .as_str()
            .expect("the merged lag histogram"),
    )
    .unwrap();
    assert!(lag.count() > 0);
    assert_eq!(
        p["generator_lag_us"]["p99"].as_f64(),
        lag.summary_us().map(|l| l.p99),
        "the stored p99 is the merged histogram's"
    );
    assert!(p["generator_lag_p99_share_pct"].as_f64().is_some(), "{p}");
}

#[test]
fn a_real_time_spinning_driver_is_refused_in_one_line() {
    stackbench()
        .args([
            "run",
            "RR1(1B/1B)",
            "--gen-sched",
            "fifo:5",
            "--spin",
            "driver",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--gen-sched fifo:5 and --spin driver exclude each other",
        ));
}
