//! `--spin`: a side that busy-polls completes exact counts, and the CPU it
//! burns is reported, never hidden — the stored settings say which side spun,
//! its utilisation shows the spin, and a spinning driver is not reported as
//! saturated. Loopback only, bounded by a transaction count.

use assert_cmd::prelude::*;

use crate::common::{json_ok, stackbench};

/// Transactions of the spinning run: a fraction of a second on loopback.
const TRANSACTIONS: u64 = 20_000;

#[test]
fn a_spinning_rr_run_counts_exactly_and_reports_its_cpu() {
    let doc = json_ok(stackbench().args([
        "run",
        "RR1(1B/1B)",
        "--spin",
        "both",
        "--transactions",
        &TRANSACTIONS.to_string(),
        "--no-store",
        "--json",
    ]));
    assert_eq!(doc["complete"], true, "{doc}");
    assert_eq!(doc["settings"]["spin"], "both");
    let c = &doc["classes"][0];
    assert_eq!(c["transactions"].as_u64(), Some(TRANSACTIONS));
    assert_eq!(c["errors"].as_u64(), Some(0));
    // A spinning side keeps its CPU busy whatever the load: well above half
    // (the bound is loose on purpose; the CPU-set view counts everything the
    // side's CPUs ran, so other load on a shared machine only raises it).
    for side in ["client", "server"] {
        let util = c["cpu"][side]["util_pct"].as_f64().unwrap_or_default();
        assert!(util > 50.0, "{side} spun but shows {util}% busy");
    }
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().all(|w| w["code"] != "driver_saturated"),
        "a spinning driver is busy by design: {warnings:?}"
    );
}

#[test]
fn a_bad_spin_names_the_sides() {
    stackbench()
        .args(["run", "RR1(1B/1B)", "--spin", "client"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--spin client: unknown spin: use none, driver, responder or both",
        ));
}
