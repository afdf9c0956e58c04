//! `--protocol tn3270` from the command line: the example study runs both
//! its variants to completion, and what contradicts the protocol is
//! refused in one line.

/// examples/tn3270.toml runs as written (counts, not durations): raw and
/// tn3270, RR and CRR, all complete.
#[test]
fn the_tn3270_example_study_runs() {
    let completed = crate::common::example_study_completes("tn3270.toml", &["tn3270", "raw"]);
    assert_eq!(completed, [2, 2]);
}

#[test]
fn contradictions_with_tn3270_are_refused_in_one_line() {
    use crate::common::refused;
    let waitall = ["RR1(100B/800B)", "--protocol", "tn3270", "--waitall"];
    refused("run", &waitall, "drop waitall");
    let lu_off = [
        "RR1(100B/800B)",
        "--protocol",
        "tn3270",
        "--tn3270e",
        "off",
        "--tn3270-lu",
        "SBLU0001",
    ];
    refused("run", &lu_off, "tn3270e is off: drop tn3270_lu");
    let lu_raw = ["RR1(100B/800B)", "--tn3270-lu", "SBLU0001"];
    refused("run", &lu_raw, "protocol raw has no LU");
    let bad_lu = [
        "RR1(100B/800B)",
        "--protocol",
        "tn3270",
        "--tn3270-lu",
        "LU-1",
    ];
    refused("run", &bad_lu, "'LU-1' is not an LU name");
    let target = ["RR1(100B/800B)", "--target", "tn3270://127.0.0.1:9"];
    refused(
        "run",
        &target,
        "a tn3270:// target is a plain TN3270 server",
    );
}
