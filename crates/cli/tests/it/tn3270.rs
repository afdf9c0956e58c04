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

/// `--tn3270-script`: a script that does not parse is refused before
/// anything starts with its file, line and column and the fix, as are a
/// script for CRR, an unreadable file and a script without protocol
/// tn3270; the example script drives the demo application to completion
/// with a line per step.
#[test]
fn scripts_are_checked_before_the_run_and_drive_the_demo_application() {
    use crate::common::refused;
    let dir = std::env::temp_dir().join(format!("stackbench-script-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.script");
    std::fs::write(&bad, "step a\n  type \"X\" at 30,1\n  key ENTER\n").unwrap();
    let bad = bad.to_str().unwrap();
    let args = |file: &str, workload: &'static str, protocol: &'static str| {
        vec![
            workload.to_string(),
            "--protocol".into(),
            protocol.into(),
            "--tn3270-script".into(),
            file.to_string(),
        ]
    };
    let run = |a: Vec<String>, needle: &str| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        refused("run", &a, needle);
    };
    run(
        args(bad, "RR1(100B/800B)", "tn3270"),
        &format!("{bad}:2:15: 30,1 is off the screen"),
    );
    let demo = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/tn3270/demo.script"
    );
    run(
        args(demo, "CRR1(100B/800B)", "tn3270"),
        "tn3270_script drives RR classes",
    );
    run(
        args("/nonexistent.script", "RR1(100B/800B)", "tn3270"),
        "cannot read it",
    );
    run(
        args(demo, "RR1(100B/800B)", "raw"),
        "applies to protocol tn3270",
    );
    let out = crate::common::stackbench()
        .args(["run", "RR2(100B/800B)", "--protocol", "tn3270"])
        .args(["--responder-tn3270-app", "demo", "--tn3270-script", demo])
        .args(["--transactions", "80", "--no-store"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "logon (ENTER): 20 tr",
        "inquiry (ENTER): 20 tr",
        "back (PF3): 20 tr",
        "logoff (PF3): 20 tr",
    ] {
        assert!(stdout.contains(&format!("step {step}")), "{step}: {stdout}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
