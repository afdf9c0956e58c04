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

/// `--tn3270e on` against a responder that refuses TN3270E, and an LU the
/// responder does not define: an incomplete run (exit 3) whose line names
/// what the server said, with the record's sessions counted by reason; the
/// default against the same responder falls back to plain TN3270.
#[test]
fn a_refused_logon_is_an_incomplete_run_with_its_sessions_counted() {
    use crate::common::{json_of, stackbench};
    let run = |flags: &[&str]| {
        stackbench()
            .args(["run", "CRR2(100B/800B)", "--transactions", "6", "--json"])
            .args(["--no-store", "--protocol", "tn3270"])
            .args(flags)
            .output()
            .unwrap()
    };
    let cases: [(&[&str], &str, &str); 2] = [
        (
            &["--tn3270e", "on", "--responder-tn3270e", "refuse"],
            "never agreed TN3270E, and tn3270e is on",
            "tn3270e_refused",
        ),
        (
            &["--tn3270-lu", "NOSUCHLU"],
            "DEVICE-TYPE REJECT REASON INV-NAME (3)",
            "rejected_inv_name",
        ),
    ];
    for (flags, needle, reason) in cases {
        let out = run(flags);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{flags:?}: {stderr}");
        let record = json_of(&out);
        let why = record["incomplete_reason"].as_str().unwrap();
        assert!(why.contains(needle), "{why}");
        assert!(!why.contains('\n'), "{why}");
        let sessions = &record["classes"][0]["sessions"];
        assert!(sessions["attempted"].as_u64().unwrap() >= 1, "{sessions}");
        assert!(
            sessions["failed"][reason].as_u64().unwrap() >= 1,
            "{sessions}"
        );
        assert_eq!(sessions["negotiated"].as_object().unwrap().len(), 0);
    }
    let out = run(&["--responder-tn3270e", "refuse"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record = json_of(&out);
    assert_eq!(record["classes"][0]["sessions"]["negotiated"]["tn3270"], 6);
}
