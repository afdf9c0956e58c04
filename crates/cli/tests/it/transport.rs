//! Transports through the binary (issue 10): one-line errors for what cannot
//! work, and a unix run that says which options it could not apply.

use assert_cmd::prelude::*;
use predicates::prelude::*;

use crate::common::*;
use crate::run::assert_usage_errors;

#[test]
fn transport_errors_are_one_line_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--transport", "smc"],
            "--transport smc: unknown transport: use tcp, unix or mptcp",
        ),
        (
            // TEST-NET-1: refused before any packet is sent.
            &["--transport", "unix", "--target", "192.0.2.1:12870"],
            "transport unix needs the responder on this host",
        ),
    ];
    assert_usage_errors(cases);
    let long = std::env::temp_dir().join(format!("{}-{}", "d".repeat(90), std::process::id()));
    std::fs::create_dir_all(&long).unwrap();
    for (dir, want) in [
        (long.as_path(), "more than the 107 sun_path allows"),
        (
            std::path::Path::new("/proc/no-such-dir"),
            "cannot create a socket directory",
        ),
    ] {
        stackbench()
            .args(["run", "RR1(1B/1B)", "--transport", "unix", "--no-store"])
            .env("XDG_RUNTIME_DIR", dir)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(want))
            .stderr(predicate::function(|s: &str| {
                s.trim_end().lines().count() == 1
            }));
    }
    let _ = std::fs::remove_dir(&long);
}

/// Issue 10: every kind over AF_UNIX; options AF_UNIX lacks are not set,
/// and the warning and the stored settings say so.
#[test]
fn unix_transport_runs_every_kind_and_says_what_it_skipped() {
    let doc = json_ok(stackbench().args([
        "run",
        "RR3(4kB/4kB)",
        "CRR3(64B/8kB)",
        "STR2(1B/2MB)",
        "--transactions",
        "40",
        "--transport",
        "unix",
        "--nodelay",
        "--json",
        "--no-store",
    ]));
    assert_eq!(doc["settings"]["transport"], "unix");
    assert_eq!(
        doc["settings"]["nodelay"], false,
        "the applied value is stored"
    );
    for c in doc["classes"].as_array().unwrap() {
        assert_eq!(c["transactions"], 40, "{}", c["notation"]);
        assert_eq!(c["errors"], 0, "{}", c["notation"]);
    }
    let warnings = doc["warnings"].as_array().unwrap();
    let w = warnings
        .iter()
        .find(|w| w["code"] == "options_not_applied")
        .unwrap_or_else(|| panic!("{warnings:?}"));
    assert!(
        w["message"]
            .as_str()
            .unwrap()
            .contains("nodelay not set: AF_UNIX has no Nagle algorithm"),
        "{w}"
    );
}
