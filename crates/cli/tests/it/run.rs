//! CLI tests of `run` and `serve`: error messages and exit codes, the JSON and
//! CSV shapes, a separate `serve` process, and a responder killed mid-run.
//! Traffic goes to loopback only; every run is bounded by count or time.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use assert_cmd::prelude::*;
use predicates::prelude::*;

use crate::common::{
    json_of, json_ok, output_ok, refused, stackbench, wait_bounded, wait_until_measuring,
};

/// A `stackbench serve` process on a free loopback port; killed on drop.
pub struct Serve {
    pub child: Child,
    pub addr: String,
}

impl Serve {
    pub fn start() -> Serve {
        let mut child = stackbench()
            .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .split_whitespace()
            .nth(4)
            .expect("address in the listening line")
            .to_string();
        Serve { child, addr }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Each (flags, expected message) pair added to `run RR1(1B/1B)` must fail
/// with status 2 and that message on stderr.
pub(crate) fn assert_usage_errors(cases: &[(&[&str], &str)]) {
    for (flags, want) in cases {
        stackbench()
            .args(["run", "RR1(1B/1B)"])
            .args(*flags)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(*want));
    }
}

/// How long a cut-short run may take to end. A hang check, not a
/// performance claim: these runs stop within about a second of the signal or
/// the responder's loss, and are set to run for `CUT_RUN_DURATION`, far longer.
const HANG_CHECK: Duration = Duration::from_secs(60);

/// The `--duration` of runs that a test cuts short.
const CUT_RUN_DURATION: &str = "300s";

/// Waits for a run that was cut short: it must end (within `HANG_CHECK`),
/// exit 3, and say why (`reason` in `incomplete_reason`).
pub(crate) fn assert_incomplete(driver: Child, reason: &str) -> serde_json::Value {
    let out = wait_bounded(driver, HANG_CHECK);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out);
    assert_eq!(doc["complete"], false);
    let why = doc["incomplete_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains(reason),
        "incomplete_reason {why:?} should mention {reason:?}"
    );
    doc
}

#[test]
fn bad_notation_is_one_line_exit_2() {
    stackbench()
        .args(["run", "RR10(4kb/4kB)"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown size unit 'kb' in 'RR10(4kb/4kB)'",
        ))
        .stderr(predicate::function(|s: &str| {
            s.trim_end().lines().count() == 1
        }));
}

#[test]
fn bad_flags_name_the_flag_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--duration", "10"], "--duration 10: bad duration '10'"),
        (
            &["--sndbuf", "1x"],
            "--sndbuf 1x: bad size '1x': unknown size unit 'x'",
        ),
        (&["--client-cpus", "a"], "--client-cpus a: bad CPU list 'a'"),
        (&["--transactions", "0"], "--transactions 0"),
        (&["--threads", "0"], "--threads 0"),
        // The TLS parameters are parsed once, when the run is resolved: a
        // bad combination is refused there, before anything starts.
        (
            &[
                "--transport",
                "tls",
                "--tls-version",
                "1.2",
                "--cipher",
                "1301",
            ],
            "cipher 1301 (TLS_AES_128_GCM_SHA256) is a TLS 1.3 suite, not 1.2",
        ),
        (
            &["--transport", "tls", "--cert", "/nonexistent/cert.pem"],
            "--cert and --key go together",
        ),
        (
            &["--target", "127.0.0.1:1"],
            "cannot reach the responder at 127.0.0.1:1",
        ),
    ];
    assert_usage_errors(cases);
}

/// Each (flags, expected message) pair added to `run RR1(1B/1B)` must be
/// refused before anything starts: exit 2 and stderr one line (no "driver on
/// CPUs …, responder …" line before it) holding that message.
pub(crate) fn assert_refused_before_start(cases: &[(&[&str], &str)]) {
    for (flags, want) in cases {
        let args: Vec<&str> = ["RR1(1B/1B)", "--duration", "1s"]
            .into_iter()
            .chain(flags.iter().copied())
            .collect();
        refused("run", &args, want);
    }
}

/// A self-signed P-256 certificate, its key, and a key of another certificate.
const TEST_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBijCCATGgAwIBAgIUM0wQswjzDyZQL6yFGYKZDZeUiR4wCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPc3RhY2tiZW5jaC10ZXN0MCAXDTI2MTEyODA3MjgyM1oYDzIx
MjYxMTA0MDcyODIzWjAaMRgwFgYDVQQDDA9zdGFja2JlbmNoLXRlc3QwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAARUJOFgVmhrr7S4ya7zMR6zrjLnCzkKwwGEjMWi
aka0McizNFFbtJPGflBk9tUfnIEDG2UM/CFidbBlTS92oBY4o1MwUTAdBgNVHQ4E
FgQU0MO/oQWvFNW6f6yz3FinFCepEwEwHwYDVR0jBBgwFoAU0MO/oQWvFNW6f6yz
3FinFCepEwEwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiBd9+R+
IUinljYIENdcGCRRVgZsRky7WDa8jTIHPPYlPgIgODp3BInYxjcFAxzJpiPCnCan
fHGrNWxqT4WPZJhLDPA=
-----END CERTIFICATE-----
";
const TEST_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg9hEqkytU3jBk9v7R
oIfWscgeg4dwS4YjYS16y6pQjRGhRANCAARUJOFgVmhrr7S4ya7zMR6zrjLnCzkK
wwGEjMWiaka0McizNFFbtJPGflBk9tUfnIEDG2UM/CFidbBlTS92oBY4
-----END PRIVATE KEY-----
";
const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQguNEpZ8dgZzei3naA
1Pij0mppQ3sXfpTevBVGgqDiRH+hRANCAAQJbl9P1a2cL8tBtQrK1t7HvymtywRG
4E6bABKQQ+mHRoNZP1D9KpXAoYxoDuGHyB+1slMABMRC1zSGWHDFuNc4
-----END PRIVATE KEY-----
";

/// `--cert`/`--key` files are read when the run is resolved: a missing
/// file, one that is not PEM, or a key of another certificate is one line
/// naming the flag, exit 2, before the responder starts (it used to start,
/// and the run ended exit 3 with OpenSSL's error stack). A matching pair runs.
#[test]
fn bad_tls_files_are_refused_before_the_responder_starts() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let (cert, key, other) = (
        file("cert.pem", TEST_CERT),
        file("key.pem", TEST_KEY),
        file("other.pem", OTHER_KEY),
    );
    let not_pem = file("hostname", "somehost\n");
    let tls = |c: &str, k: &str| ["--transport", "tls", "--cert", c, "--key", k].map(String::from);
    let cases = [
        (
            tls("/nonexistent.pem", &key),
            "--cert /nonexistent.pem: cannot read it",
        ),
        (
            tls(&cert, "/nonexistent.pem"),
            "--key /nonexistent.pem: cannot read it",
        ),
        (tls(&not_pem, &key), "not a PEM certificate"),
        (tls(&cert, &not_pem), "not a PEM private key"),
        (tls(&cert, &other), "is not the key of --cert"),
    ];
    for (flags, want) in &cases {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        assert_refused_before_start(&[(&flags, want)]);
    }
    stackbench()
        .args(["run", "RR1(1B/1B)", "--transactions", "10", "--json"])
        .args(tls(&cert, &key))
        .assert()
        .success();
}

/// A CPU list naming a CPU this process may not run on is refused when the
/// run is resolved, the same for both sides, and for every point of a sweep
/// before the first runs (`--server-cpus` used to start the responder, which
/// failed naming its own `--cpus`, and a second line said it did not start).
#[test]
fn cpu_lists_outside_this_machine_are_refused_before_anything_starts() {
    assert_refused_before_start(&[
        (
            &["--server-cpus", "999"],
            "--server-cpus 999: CPU 999 is not online or not allowed to this process",
        ),
        (
            &["--client-cpus", "998,999"],
            "--client-cpus 998-999: CPUs 998-999 are not online or not allowed to this process",
        ),
        (
            &["--sweep", "server_cpus=0;999"],
            "--sweep server_cpus=999: --server-cpus 999: CPU 999 is not online",
        ),
    ]);
}

/// Inputs that mean nothing here are refused before anything starts:
/// `--agent-listen` on a run with no agents (silently ignored before), and
/// labels the store sets itself (`run --label study=X` joined study X's
/// `compare` and `report`; `study --label` already refused them).
#[test]
fn inputs_meaningless_for_this_run_are_refused() {
    assert_refused_before_start(&[
        (
            &["--agent-listen", "127.0.0.1:17701"],
            "--agent-listen applies only to a run split over agents",
        ),
        (
            &["--label", "study=X", "--label", "variant=Y"],
            "--label: label 'study' is reserved",
        ),
        (
            &["--label", "sweep.clients=4"],
            "--label: label 'sweep.clients' is reserved",
        ),
    ]);
}

/// A target's scheme must be one a protocol speaks, and only an HTTP or
/// FTP target has a path: `gopher://` read "failed to lookup address information"
/// and `tn3270://HOST:PORT/4096` "invalid port value".
#[test]
fn a_target_with_another_scheme_or_a_path_says_what_a_target_is() {
    assert_refused_before_start(&[
        (
            &["--target", "gopher://127.0.0.1:1"],
            "target: gopher://127.0.0.1:1: no protocol speaks scheme gopher://: use HOST:PORT \
             (stackbench serve), http://HOST:PORT (protocol http1), https://HOST:PORT \
             (protocol http1), tn3270://HOST:PORT (protocol tn3270), amqp://HOST:PORT \
             (protocol amqp), ftp://HOST:PORT (protocol ftp)",
        ),
        (
            &[
                "--target",
                "tn3270://127.0.0.1:1/4096",
                "--protocol",
                "tn3270",
            ],
            "a target takes no path (/4096): give tn3270://127.0.0.1:1;",
        ),
        (
            &["--target", "127.0.0.1:1/x"],
            "a target takes no path (/x): give 127.0.0.1:1;",
        ),
    ]);
}

/// `--server-pid` names processes of a plain server on this host: a pid
/// that does not exist, one with stackbench's own responder, or with
/// agents is refused before anything starts (nonsense values are in the
/// every-setting list, `setting_flags::BAD`).
#[test]
fn a_server_pid_that_cannot_be_measured_is_refused_before_anything_starts() {
    let target = ["--protocol", "http1", "--target", "http://127.0.0.1:1"];
    assert_refused_before_start(&[
        (
            &[&target[..], &["--server-pid", "4194000"]].concat(),
            "--server-pid 4194000: no process 4194000 on this host",
        ),
        (
            &["--server-pid", "1"],
            "--server-pid 1: applies to a plain-server target",
        ),
        (
            &[&target[..], &["--server-pid", "1", "--agents", "2"]].concat(),
            "server_pid and agents exclude each other",
        ),
        (
            &["--server-pid", "nginx"],
            "--server-pid nginx: 'nginx' is not a process id",
        ),
    ]);
}

/// A study resolves every step before the first runs, as a sweep does: a
/// CPU this machine lacks in its second variant used to be found only after
/// the first variant had run.
#[test]
fn a_study_step_that_cannot_run_is_refused_before_the_first_step() {
    let dir = tempfile::tempdir().unwrap();
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        "name = \"t\"\ndescription = \"d\"\nworkloads = [\"RR1(1B/1B)\"]\ntransactions = 30\n\
         [[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nserver_cpus = \"999\"\n",
    )
    .unwrap();
    let out = stackbench()
        .args(["study", study.to_str().unwrap(), "--no-store"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("variant b") && err.contains("--server-cpus 999: CPU 999 is not online"),
        "{err}"
    );
}

/// clap's own errors: one line naming the input and the fix, exit 2.
#[test]
fn clap_errors_are_one_line_naming_the_input_and_the_fix() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--durration", "1s"],
            "unknown flag '--durration' for 'stackbench run': did you mean '--duration'?",
        ),
        (
            &["run", "--threads", "-2"],
            "--threads -2: bad count '-2': a count cannot be negative",
        ),
        (
            &["run", "--json", "--csv"],
            "'--json' and '--csv' exclude each other",
        ),
        (
            &["run", "--crr-close", "x"],
            "--crr-close x: unknown close mode: use server, client or abort",
        ),
        (&["compare", "a"], "missing <B> for 'stackbench compare'"),
        (&[], "missing subcommand for 'stackbench': use one of run,"),
        (&["plan"], "missing subcommand for 'stackbench plan'"),
        (
            &["runn"],
            "unknown subcommand 'runn' for 'stackbench': did you mean 'run'?",
        ),
        (
            &["serve", "--threads", "-1"],
            "invalid value '-1' for '--threads'",
        ),
    ];
    for (args, want) in cases {
        stackbench()
            .args(*args)
            .assert()
            .code(2)
            .stderr(predicate::str::starts_with("stackbench: error: "))
            .stderr(predicate::str::contains(*want))
            .stderr(predicate::function(|s: &str| s.lines().count() == 1));
    }
    stackbench()
        .arg("--version")
        .assert()
        .success()
        .stdout(predicate::str::starts_with("stackbench "));
}

/// Negative values reach the flag's parser instead of being read as flags.
#[test]
fn negative_duration_is_one_line_saying_so() {
    stackbench()
        .args(["run", "RR1(1B/1B)", "--duration", "-1s"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("a duration cannot be negative"))
        .stderr(predicate::function(|s: &str| s.lines().count() == 1));
}

#[test]
fn json_document_has_the_documented_fields() {
    let doc = json_ok(stackbench().args([
        "run",
        "RR2(1B/1B)",
        "CRR2(64B/8kB)",
        "--transactions",
        "300",
        "--json",
    ]));
    for key in [
        "schema_version",
        "stackbench_version",
        "complete",
        "incomplete_reason",
        "settings",
        "classes",
    ] {
        assert!(doc.get(key).is_some(), "missing {key}");
    }
    assert_eq!(doc["complete"], true);
    assert_eq!(doc["responder"], "spawned");
    let classes = doc["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 2);
    for c in classes {
        for key in [
            "notation",
            "kind",
            "clients",
            "request_bytes",
            "response_bytes",
            "transactions",
            "duration_s",
            "rate_tps",
            "latency_us",
            "tx_bytes_per_s",
            "rx_bytes_per_s",
            "errors",
        ] {
            assert!(c.get(key).is_some(), "missing classes[].{key}");
        }
        for key in ["mean", "p50", "p90", "p99", "p999", "max"] {
            assert!(
                c["latency_us"][key].as_f64().unwrap() > 0.0,
                "latency_us.{key}"
            );
        }
        assert_eq!(c["transactions"], 300);
    }
    assert_eq!(classes[1]["kind"], "CRR");
    assert_eq!(classes[1]["response_bytes"], 8192);
}

#[test]
fn the_table_fits_columns_and_wide_prints_every_column() {
    let run = |columns: &str, flags: &[&str]| {
        let out = output_ok(
            stackbench()
                .args(["run", "RR1(1B/1B)", "--transactions", "50", "--no-store"])
                .args(flags)
                .env("COLUMNS", columns),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let narrow = run("80", &[]);
    for line in narrow.lines() {
        assert!(
            line.chars().count() <= 80,
            "wider than 80: {line}\n{narrow}"
        );
    }
    assert!(narrow.contains("--wide shows them"), "{narrow}");
    let wide = run("80", &["--wide"]);
    assert!(
        wide.contains("p99.9 µs") && wide.contains("srv util%"),
        "{wide}"
    );
    assert!(!wide.contains("--wide shows them"), "{wide}");
    stackbench()
        .args(["run", "RR1(1B/1B)", "--wide", "--json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--wide"));
}

#[test]
fn csv_has_a_header_and_a_row_per_class() {
    let out = stackbench()
        .args([
            "run",
            "RR1(1B/1B)+RR1(2B/2B)",
            "--transactions",
            "50",
            "--csv",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<_> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].starts_with("workload,notation,kind,clients"));
    assert!(
        lines[2].contains(",RR1(2B/2B),RR,1,2,2,50,"),
        "{}",
        lines[2]
    );
}

#[test]
fn every_kind_runs_against_a_separate_serve_process() {
    let serve = Serve::start();
    let doc = json_ok(
        stackbench()
            .args([
                "run",
                "RR3(4kB/4kB)",
                "CRR3(64B/8kB)",
                "STR2(1B/2MB)",
                "STR2(2MB/1B)",
            ])
            .args(["--transactions", "40", "--json", "--target", &serve.addr]),
    );
    assert_eq!(doc["responder"], "remote");
    for c in doc["classes"].as_array().unwrap() {
        assert_eq!(c["transactions"], 40, "{}", c["notation"]);
        assert_eq!(c["errors"], 0, "{}", c["notation"]);
        // The remote responder measured its own side and sent it back (netperf -C).
        // (These windows are tens of ms, below /proc's 10 ms tick resolution
        // per figure, so only presence is checked; json_carries_cpu_... checks
        // non-zero values on a 1 s window.)
        let server = &c["cpu"]["server"];
        assert!(
            server["window_s"].as_f64().unwrap() > 0.0,
            "{}: {server}",
            c["notation"]
        );
        assert!(server["cpu_us_per_tran"].is_f64(), "{server}");
        assert!(server["process_cpu_us_per_tran"].is_f64(), "{server}");
        assert!(c["memory"]["server"]["rss_bytes"].as_u64().unwrap() > 0);
    }
}

/// Starts `run WORKLOAD` for `CUT_RUN_DURATION` with `extra` flags, JSON on
/// a pipe, and returns once it is measuring (past the idle baseline).
pub(crate) fn start_cut_run(workload: &str, extra: &[&str]) -> Child {
    let driver = stackbench()
        .args(["run", workload, "--duration", CUT_RUN_DURATION])
        .args(["--warmup", "0s", "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_measuring(&driver, Duration::from_secs(20));
    driver
}

/// Sends `signal` to a measuring run: it must end with exit 3 and keep what
/// it measured, its reason naming `reason`.
fn interrupt(signal: libc::c_int, reason: &str) {
    let driver = start_cut_run("RR2(1B/1B)", &["--no-store"]);
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(driver.id() as i32, signal) };
    assert_partial(assert_incomplete(driver, reason));
}

#[test]
fn ctrl_c_ends_the_run_early_with_what_was_measured() {
    // SIGINT, as a terminal's Ctrl-C sends it.
    interrupt(libc::SIGINT, "interrupted");
}

/// SIGTERM (a service manager, `timeout`, `kill`) keeps what was measured
/// exactly as Ctrl-C does: exit 3, JSON with `"complete": false`.
#[test]
fn sigterm_ends_the_run_early_with_what_was_measured() {
    interrupt(libc::SIGTERM, "SIGTERM");
}

/// The interrupted run's class kept its figures, over a window cut short.
fn assert_partial(doc: serde_json::Value) {
    let c = &doc["classes"][0];
    assert!(
        c["transactions"].as_u64().unwrap() > 0,
        "partial results are kept: {c}"
    );
    assert!(
        c["duration_s"].as_f64().unwrap() < HANG_CHECK.as_secs_f64(),
        "the window ends at the interrupt: {c}"
    );
}

#[test]
fn killed_responder_ends_the_run_with_status_3() {
    let mut serve = Serve::start();
    // Past the idle baseline and into the window, then the responder dies.
    let driver = start_cut_run("RR2(1B/1B)", &["--target", &serve.addr]);
    serve.child.kill().unwrap();
    let doc = assert_incomplete(driver, "responder");
    assert!(
        doc["classes"][0]["transactions"].as_u64().unwrap() > 0,
        "partial results are kept"
    );
}

#[test]
fn help_shows_examples() {
    stackbench()
        .args(["run", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"));
    stackbench()
        .args(["serve", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Examples:"));
}

#[test]
fn json_carries_cpu_and_memory_per_side_and_warnings() {
    let out = output_ok(stackbench().args([
        "run",
        "RR4(4kB/4kB)",
        "--duration",
        "1s",
        "--warmup",
        "200ms",
        "--json",
    ]));
    let doc = json_of(&out);
    let c = &doc["classes"][0];
    for side in ["client", "server"] {
        let cpu = &c["cpu"][side];
        for key in [
            "cpus",
            "method",
            "cpu_seconds",
            "util_pct",
            "cpu_us_per_tran",
            "breakdown",
            "process_cpu_us_per_tran",
        ] {
            assert!(cpu.get(key).is_some(), "cpu.{side}.{key} missing: {cpu}");
        }
        for key in ["user", "system", "irq", "softirq", "steal"] {
            assert!(
                cpu["breakdown"].get(key).is_some(),
                "cpu.{side}.breakdown.{key}"
            );
        }
        assert!(
            cpu["cpu_seconds"].as_f64().unwrap() > 0.0,
            "a busy run costs CPU on the {side}"
        );
        assert!(
            cpu["process_cpu_us_per_tran"].as_f64().unwrap() > 0.0,
            "{side}"
        );
        let mem = &c["memory"][side];
        for key in [
            "rss_bytes",
            "rss_bytes_per_conn",
            "kernel_sock_bytes",
            "kernel_sock_bytes_per_conn",
        ] {
            assert!(mem.get(key).is_some(), "memory.{side}.{key} missing: {mem}");
        }
        assert!(mem["rss_bytes"].as_u64().unwrap() > 0);
    }
    // A 1 s window is too short by the tool's own standard: it says so.
    let warnings = doc["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w["code"] == "run_too_short"),
        "{warnings:?}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning [run_too_short]"));
}

#[test]
fn repeat_keeps_every_repetition_and_a_confidence_interval() {
    let class = &json_ok(stackbench().args([
        "run",
        "RR2(1B/1B)",
        "--transactions",
        "400",
        "--repeat",
        "3",
        "--json",
    ]))["classes"][0];
    let rep = &class["repetitions"];
    assert_eq!(rep["runs"].as_array().unwrap().len(), 3, "{rep}");
    let rate = &rep["rate_tps"];
    assert_eq!(rate["n"], 3);
    assert!(rate["stdev"].as_f64().is_some());
    let ci = &rate["confidence"];
    assert!(ci["low"].as_f64().unwrap() <= rate["mean"].as_f64().unwrap());
    assert!(ci["high"].as_f64().unwrap() >= rate["mean"].as_f64().unwrap());
    // The headline rate is the mean over the repetitions, not the last one.
    let mean = rate["mean"].as_f64().unwrap();
    let headline = class["rate_tps"].as_f64().unwrap();
    assert!(
        (headline - mean).abs() <= 1e-9 * mean,
        "{headline} vs {mean}"
    );
    assert!(
        rep["client_cpu_us_per_tran"]["mean"].as_f64().is_some(),
        "{rep}"
    );
}

#[test]
fn unreachable_confidence_stops_at_max_and_warns() {
    // A 0.001% width at 99% cannot be met in 2 runs: the tool must say so.
    let doc = json_ok(
        stackbench()
            .args([
                "run",
                "RR1(1B/1B)",
                "--transactions",
                "200",
                "--confidence",
                "99,0.001",
                "--iterations",
                "2,2",
            ])
            .args(["--json"]),
    );
    let rep = &doc["classes"][0]["repetitions"];
    assert_eq!(rep["runs"].as_array().unwrap().len(), 2);
    assert_eq!(rep["reached"], false);
    assert!(doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["code"] == "confidence_not_reached"));
}

#[test]
fn bad_repetition_flags_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["--repeat", "0"], "--repeat 0"),
        (&["--confidence", "99"], "--confidence 99: give two numbers"),
        (
            &["--confidence", "99,5", "--iterations", "5,2"],
            "--iterations",
        ),
        (&["--iterations", "3,30"], "iterations needs confidence"),
        (
            &["--repeat", "2", "--confidence", "99,5"],
            "exclude each other",
        ),
    ];
    assert_usage_errors(cases);
}

#[test]
fn bad_priorities_are_refused_with_the_reason() {
    assert_usage_errors(&[
        (
            &["--priority", "6,0"],
            "priority 6,0 gives 2 levels but RR1(1B/1B) has 1 class: give one level",
        ),
        (&["--priority", "9"], "--priority 9: bad level '9'"),
    ]);
}

/// `--transport smc` runs where this kernel has AF_SMC (falling back to TCP
/// on loopback) and is refused naming CONFIG_SMC where it has not: either
/// way something is asserted (the engine's smc test is the tier-gated one).
#[test]
fn smc_runs_where_the_kernel_has_it_or_is_refused_with_the_reason() {
    // SAFETY: socket(2) with constant arguments; the descriptor is closed at once.
    let fd = unsafe { libc::socket(43, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return assert_usage_errors(&[(&["--transport", "smc"], "CONFIG_SMC")]);
    }
    // SAFETY: closes the descriptor just opened.
    unsafe { libc::close(fd) };
    let doc = crate::common::run_json("RR1(1B/1B)", 20, &["--transport", "smc"]);
    assert_eq!(doc["settings"]["transport"], "smc", "{doc}");
    assert_eq!(doc["classes"][0]["transactions"], 20, "{doc}");
}

#[test]
fn run_is_stored_with_labels_and_study_runs_against_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let db = db.to_str().unwrap();
    stackbench()
        .args([
            "run",
            "RR1(1B/1B)",
            "--transactions",
            "50",
            "--label",
            "kernel=test",
            "--db",
            db,
        ])
        .assert()
        .success()
        .stderr(predicate::str::contains("stored as run 1"));
    stackbench()
        .args(["results", "list", "--db", db])
        .assert()
        .success()
        .stdout(predicate::str::contains("kernel=test"));
    let study = dir.path().join("s.toml");
    std::fs::write(
        &study,
        "name = \"t\"\ndescription = \"d\"\nworkloads = [\"RR1(1B/1B)\"]\ntransactions = 30\nrepetitions = 2\n\
         [[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\nnodelay = true\n",
    )
    .unwrap();
    let out = stackbench()
        .args(["study", study.to_str().unwrap(), "--db", db])
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("4 runs of study 't' stored"), "{stderr}");
    // The summary table on stdout, one row per step; progress on stderr.
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("RR1(1B/1B)"))
        .collect();
    assert_eq!(rows.len(), 4, "{stdout}");
    assert!(
        stdout.contains("variant") && stdout.contains("tr/s"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("[1/4]") && stderr.contains("[1/4]"),
        "{stdout}"
    );
    let out = stackbench()
        .args(["results", "export", "--db", db, "--format", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("\"nodelay\": true").count(), 2, "{text}");
}

/// The record carries the class's whole latency distribution, so runs
/// measured apart merge exactly: it decodes to as many values as the class
/// has transactions, and its percentiles are the record's.
#[test]
fn the_record_carries_its_latency_distribution() {
    let doc = crate::common::run_json("RR1(1B/1B)", 300, &[]);
    let class = &doc["classes"][0];
    let text = class["latency_hdr"].as_str().expect("latency_hdr");
    let hist = stackbench_metrics::latency::LatencyHistogram::from_base64(text).unwrap();
    assert_eq!(hist.count(), class["transactions"].as_u64().unwrap());
    let summary = hist.summary_us().unwrap();
    for (name, value) in [
        ("p50", summary.p50),
        ("p99", summary.p99),
        ("max", summary.max),
    ] {
        assert_eq!(class["latency_us"][name].as_f64().unwrap(), value, "{name}");
    }
}
