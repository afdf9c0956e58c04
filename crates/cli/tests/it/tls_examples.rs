//! The TLS example studies run, short, and their report names
//! every variant and the cipher suite each actually negotiated.

use assert_cmd::prelude::*;

use crate::common::{examples, stackbench};

/// Runs `file` as a study with a tiny window after `warmup` plus `extra`
/// flags, renders the report and returns its Markdown.
fn study_report(file: &str, study: &str, warmup: &str, extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    stackbench()
        .arg("study")
        .arg(examples().join(file))
        .args([
            "--duration",
            "300ms",
            "--warmup",
            warmup,
            "--repetitions",
            "1",
        ])
        .args(extra)
        .args(["--db", db])
        .assert()
        .success();
    let out = dir.path().join("report");
    stackbench()
        .args(["report", "--study", study, "--db", db, "-o"])
        .arg(&out)
        .assert()
        .success();
    std::fs::read_to_string(out.join("report.md")).unwrap()
}

#[test]
fn tls_handshakes_example_reports_each_negotiated_cipher() {
    let md = study_report("tls-handshakes.toml", "tls-handshakes", "0s", &[]);
    for (variant, negotiated) in [
        (
            "c02f-long",
            "TLS 1.2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (C02F)",
        ),
        (
            "c027-long",
            "TLS 1.2 TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256 (C027)",
        ),
        ("9c-long", "TLS 1.2 TLS_RSA_WITH_AES_128_GCM_SHA256 (9C)"),
        ("3c-long", "TLS 1.2 TLS_RSA_WITH_AES_128_CBC_SHA256 (3C)"),
        (
            "c02f-short",
            "TLS 1.2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (C02F)",
        ),
        ("1301-long", "TLS 1.3 TLS_AES_128_GCM_SHA256 (1301)"),
        ("1302-long", "TLS 1.3 TLS_AES_256_GCM_SHA384 (1302)"),
        ("1301-short", "TLS 1.3 TLS_AES_128_GCM_SHA256 (1301)"),
    ] {
        assert!(
            md.contains(&format!("{variant}: {negotiated}")),
            "{variant} should have negotiated {negotiated}:\n{md}"
        );
        assert!(md.contains(&format!("Variant {variant}")), "{md}");
    }
    assert!(md.contains("TLS CPU µs per handshake"), "{md}");
}

#[test]
fn tls_population_example_compares_clear_inline_and_a_tls_proxy() {
    // A short think time so that 300 ms windows see transactions, after a
    // warm-up long enough for 1000 full handshakes in a debug build.
    let md = study_report(
        "tls-population.toml",
        "tls-population",
        "5s",
        &["--think", "exp:20ms"],
    );
    assert!(md.contains("Variant clear (baseline)"), "{md}");
    assert!(md.contains("Variant tls-inline"), "{md}");
    assert!(md.contains("clear: clear text"), "{md}");
    assert!(
        md.contains("tls-inline: TLS 1.2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (C02F)"),
        "{md}"
    );
    assert!(md.contains("Variant tls-sidecar"), "{md}");
    // Storage per (secure) connection, as TN3270 capacity planning tabulates
    // it, per variant and side.
    assert!(md.contains("RSS per connection"), "{md}");
    assert!(
        md.contains("tls-sidecar: TLS 1.2 TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 (C02F)"),
        "{md}"
    );
}
