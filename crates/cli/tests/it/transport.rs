//! Transports through the binary: one-line errors for what cannot
//! work, and a unix run that says which options it could not apply.

use assert_cmd::prelude::*;
use predicates::prelude::*;

use crate::common::*;
use crate::run::assert_usage_errors;

#[test]
fn transport_errors_are_one_line_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--transport", "sctp"],
            "--transport sctp: unknown transport: use tcp, unix, mptcp, tls or smc",
        ),
        (
            &[
                "--transport",
                "tls",
                "--cipher",
                "C02F",
                "--tls-version",
                "1.3",
            ],
            "is a TLS 1.2 suite, not 1.3: with --tls-version 1.3 use 1301",
        ),
        (
            &[
                "--transport",
                "tls",
                "--cipher",
                "1301",
                "--tls-version",
                "1.2",
            ],
            "with --tls-version 1.2 use 3C (AES128-SHA256), 9C",
        ),
        (
            &["--transport", "tls", "--cipher", "C030"],
            "--cipher C030: unknown cipher 'C030': use one of 3C",
        ),
        (
            &["--cipher", "C02F"],
            "apply to transport tls, not tcp: add --transport tls",
        ),
        (
            &["--rekey", "1MB"],
            "rekey and tls_mode apply to transport tls, not tcp",
        ),
        (
            &[
                "--transport",
                "tls",
                "--tls-version",
                "1.2",
                "--rekey",
                "1MB",
            ],
            "rekey with TLS 1.2 would be a renegotiation, a whole handshake",
        ),
        (
            &[
                "--transport",
                "tls",
                "--tls-mode",
                "sidecar",
                "--rekey",
                "1MB",
            ],
            "rekey with tls_mode sidecar: the proxies' key updates are not counted yet",
        ),
        // What the kernel's TLS cannot carry: refused before the kernel probe.
        (
            &["--transport", "tls", "--tls-mode", "ktls", "--cipher", "3C"],
            "cipher 3C with tls_mode ktls: the kernel's TLS carries AES-GCM suites only: use --cipher 9C or C02F",
        ),
        (
            &["--transport", "tls", "--tls-mode", "ktls", "--cipher", "C027"],
            "cipher C027 with tls_mode ktls: the kernel's TLS carries AES-GCM suites only",
        ),
        (
            &[
                "--transport",
                "tls",
                "--tls-mode",
                "ktls",
                "--resume-ratio",
                "0.5",
            ],
            "resume_ratio with tls_mode ktls and TLS 1.3: resumption needs session tickets",
        ),
        (
            &["--transport", "tls", "--tls-mode", "ktls", "--rekey", "1MB"],
            "rekey with tls_mode ktls: the kernel's TLS has no key update",
        ),
        (
            // TEST-NET-1: refused before any packet is sent.
            &["--transport", "unix", "--target", "192.0.2.1:12870"],
            "transport unix needs the responder on this host",
        ),
    ];
    assert_usage_errors(cases);
    // Without CONFIG_TLS (this host): what is missing, why (the module's
    // state on this system), and what enables it.
    if let Err(e) = stackbench_engine::transport::ktls::ktls_available() {
        let why = stackbench_engine::kmod::module_state("tls").explain("tls", "CONFIG_TLS");
        assert!(e.contains(&why), "{e}");
        assert_usage_errors(&[(
            &["--transport", "tls", "--tls-mode", "ktls"],
            &format!(
                "tls_mode ktls: this kernel has no kernel TLS (setsockopt TCP_ULP \"tls\" fails \
                 with ENOENT; {why}): it needs CONFIG_TLS (modprobe tls"
            ),
        )]);
    }
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

/// Every kind over AF_UNIX; options AF_UNIX lacks are not set,
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

/// Every kind over TLS, and the resolved version stored.
#[test]
fn tls_transport_runs_every_kind() {
    let doc = json_ok(stackbench().args([
        "run",
        "RR3(4kB/4kB)",
        "CRR3(64B/8kB)",
        "STR2(1B/2MB)",
        "--transactions",
        "30",
        "--transport",
        "tls",
        "--cipher",
        "ECDHE-RSA-AES128-GCM-SHA256",
        "--json",
        "--no-store",
    ]));
    assert_eq!(doc["settings"]["transport"], "tls");
    assert_eq!(doc["settings"]["cipher"], "C02F");
    assert_eq!(doc["settings"]["tls_version"], "1.2");
    for c in doc["classes"].as_array().unwrap() {
        assert_eq!(c["transactions"], 30, "{}", c["notation"]);
        assert_eq!(c["errors"], 0, "{}", c["notation"]);
        // What was negotiated, not what was asked for.
        assert_eq!(c["tls"]["version"], "1.2", "{c}");
        assert_eq!(c["tls"]["cipher"], "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
        assert_eq!(c["tls"]["cipher_code"], "C02F");
    }
    let crr = &doc["classes"][1]["tls"];
    assert_eq!(crr["full_handshakes"], 30, "{crr}");
}

/// `--io uring` stores uring where it ran; a case it does not
/// cover (CRR) runs on epoll, stores `io` epoll and says why.
#[test]
fn io_uring_is_stored_as_measured() {
    let run = |workload: &str| run_json(workload, 40, &["--io", "uring"]);
    let doc = run("RR2(64B/1kB)");
    let warnings = doc["warnings"].as_array().unwrap();
    let fallback = warnings.iter().find(|w| w["code"] == "io_fallback");
    if let Some(w) = fallback {
        // A kernel or sandbox without io_uring: the message says so, and the
        // uring half of the test goes unexercised (the uring tier).
        assert_eq!(doc["settings"]["io"], "epoll");
        let why = format!("io_uring unavailable here, the run fell back: {w}");
        stackbench_testkit::skip(
            stackbench_testkit::Tier::Uring,
            "io_uring_is_stored_as_measured (its uring half)",
            &why,
        );
    } else {
        assert_eq!(doc["settings"]["io"], "uring");
    }
    assert_eq!(doc["classes"][0]["transactions"], 40);
    // The stored io is what served the connections, on both sides.
    let backend = if fallback.is_some() {
        "epoll"
    } else {
        "io_uring"
    };
    let served = &doc["classes"][0]["served_by"];
    for side in ["driver", "responder"] {
        assert_eq!(served[side][backend], 2, "{side}: {served}");
    }
    assert!(warnings.iter().all(|w| w["code"] != "io_served_elsewhere"));
    let doc = run("CRR2(64B/1kB)");
    assert_eq!(doc["settings"]["io"], "epoll");
    assert_eq!(doc["classes"][0]["transactions"], 40);
    let served = &doc["classes"][0]["served_by"];
    // CRR connects per transaction; none of it on io_uring, none waiting
    // directly (CRR never does).
    for side in ["driver", "responder"] {
        assert_eq!(served[side]["epoll"], 40, "{side}: {served}");
        assert_eq!(served[side]["io_uring"], 0, "{side}: {served}");
        assert_eq!(served[side]["direct"], 0, "{side}: {served}");
    }
    let warnings = doc["warnings"].as_array().unwrap();
    let w = warnings
        .iter()
        .find(|w| w["code"] == "io_fallback")
        .unwrap_or_else(|| panic!("{warnings:?}"));
    assert!(w["message"].as_str().unwrap().contains("CRR"), "{w}");
}

/// The default `io = auto` is settled before the run and stored as the
/// backend used, never as `auto`, and it never warns: a lone connection runs
/// on epoll (direct waiting); several per driver thread on uring where this
/// kernel has it (the engine tests pin the rule down case by case).
#[test]
fn io_auto_stores_the_backend_it_picked() {
    let run = |workload: &str| run_json(workload, 40, &["--threads", "1"]);
    for (workload, allowed) in [
        ("RR1(64B/1kB)", &["epoll"][..]),
        ("RR4(64B/1kB)", &["uring", "epoll"][..]),
    ] {
        let doc = run(workload);
        let io = doc["settings"]["io"].as_str().unwrap();
        assert!(allowed.contains(&io), "{workload}: io {io}");
        let warnings = doc["warnings"].as_array().unwrap();
        assert!(
            warnings.iter().all(|w| w["code"] != "io_fallback"),
            "{workload}: {warnings:?}"
        );
        assert_eq!(doc["classes"][0]["transactions"], 40, "{workload}");
    }
}

/// An RR class's connections handshake before the window opens: no
/// handshake latency was measured in it (null, once all 0.0), and the
/// responder's CPU per handshake, counted over the test's whole life, is
/// null beside the window's 0 handshakes (once 55,752 µs).
#[test]
fn tls_rr_without_window_handshakes_stores_null_figures() {
    let record = json_ok(stackbench().args([
        "run",
        "RR1(1B/1B)",
        "--transport",
        "tls",
        "--duration",
        "1s",
        "--warmup",
        "500ms",
        "--json",
        "--no-store",
    ]));
    let tls = &record["classes"][0]["tls"];
    assert_eq!(tls["full_handshakes"], 0, "{tls}");
    assert!(tls["handshake_latency_us"].is_null(), "{tls}");
    let cpu = &tls["handshake_cpu_us"];
    assert!(
        cpu["server_full"].is_null() && cpu["client_full"].is_null(),
        "{tls}"
    );
}
