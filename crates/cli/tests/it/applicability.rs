//! `stackbench applicability`: bad input is one line and exit 2 before
//! anything is watched; as root, a lab with known traffic (a long-lived RR
//! flow and many short CRR connections, one `stackbench run` across the
//! lab) gives the shares that run's record implies, and an IPsec link's
//! traffic is excluded (where the kernel has ESP).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use stackbench_testkit::{can_make_namespaces, skip, Tier};

use crate::common::{examples, json_of, stackbench};
use crate::lab::lab;

/// Expects exit 2 and one line holding `needle`, quickly (nothing watched).
fn refused(args: &[&str], needle: &str) {
    let started = Instant::now();
    crate::common::refused("applicability", args, needle);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{args:?}: a refusal must not wait for the 10 s window"
    );
}

#[test]
fn bad_input_is_one_line_and_nothing_is_watched() {
    refused(
        &["--subnet", "10.77.1.1"],
        "--subnet 10.77.1.1: no prefix length",
    );
    refused(&["--subnet", "10.77.1.0/33"], "bad prefix length '33'");
    refused(&["--window", "0s"], "--window 0s: must be longer than 0");
    refused(
        &["--interval", "0ms"],
        "--interval 0ms: must be longer than 0",
    );
    refused(
        &["--window", "1s", "--interval", "2s"],
        "longer than --window",
    );
    // A lab whose namespaces do not exist: not up.
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path(), "tappnu", false);
    let f = file.to_str().unwrap();
    refused(
        &["--lab", f, "--host", "client"],
        "--host client: lab host is not up",
    );
    refused(&["--lab", f, "--host", "nobody"], "no such host in");
    refused(
        &["--census", "--disallow", "C0FFEE"],
        "--disallow C0FFEE: not a cipher suite",
    );
    refused(
        &["--disallow", "C02F"],
        "--disallow: names suites for the crypto census: add --census",
    );
}

/// The two-host example lab under a name of the test's own (so another
/// test's `lab down` never pulls it away), optionally with ESP on the link.
fn lab_file(dir: &Path, name: &str, ipsec: bool) -> PathBuf {
    let mut text = std::fs::read_to_string(examples().join("lab-two-hosts.toml"))
        .unwrap()
        .replace("name = \"pair\"", &format!("name = \"{name}\""))
        .replace("rate = \"100Mbit\"", "rate = \"1Gbit\"");
    if ipsec {
        text.push_str("ipsec = \"aes-gcm-128\"\n");
    }
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    file
}

/// A started `stackbench applicability ARGS --json`, returned once it has
/// said it is watching (once its first dump is taken).
struct Watcher {
    child: std::process::Child,
    stderr: BufReader<std::process::ChildStderr>,
}

impl Watcher {
    fn start(args: &[&str]) -> Watcher {
        let mut child = stackbench()
            .arg("applicability")
            .args(args)
            .arg("--json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        // Said once the first dump is taken.
        assert!(line.contains("watching"), "{line}");
        Watcher { child, stderr }
    }

    /// Its JSON document and the rest of its stderr, once it ended.
    fn finish(mut self) -> (Value, String) {
        let mut err = String::new();
        self.stderr.read_to_string(&mut err).unwrap();
        let mut out = Vec::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{err}");
        let v = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out)));
        (v, err)
    }
}

/// Watches host `client` of `file` while `workload` runs from client to
/// server; returns the observation and the run's record.
fn watch_a_run(file: &Path, workload: &str) -> (Value, Value) {
    let up = lab("up", file).output().unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let watcher = Watcher::start(&[
        "--lab",
        file.to_str().unwrap(),
        "--host",
        "client",
        "--window",
        "10s",
        "--no-project",
    ]);
    let run = stackbench()
        .args(["run", "--lab"])
        .arg(file)
        .args(["--from", "client", "--to", "server", workload])
        .args(["--duration", "3s", "--warmup", "0s", "--json", "--no-store"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    (watcher.finish().0, json_of(&run))
}

fn within(what: &str, got: f64, want: f64, tolerance: f64) {
    assert!(
        (got - want).abs() <= tolerance,
        "{what}: observed {got}, the run's record implies {want} (±{tolerance})"
    );
}

#[test]
fn a_lab_with_known_traffic_gives_the_known_shares() {
    if !can_make_namespaces("a_lab_with_known_traffic_gives_the_known_shares") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path(), "tappl", false);
    let _ = lab("down", &file).output();
    let (observed, record) = watch_a_run(&file, "RR1(4kB/4kB)+CRR2(64B/8kB)");
    let _ = lab("down", &file).output();

    let classes = record["classes"].as_array().unwrap();
    let class = |kind: &str| classes.iter().find(|c| c["kind"] == kind).unwrap();
    let (rr, crr) = (class("RR"), class("CRR"));
    let payload =
        |c: &Value| (c["tx_bytes"].as_u64().unwrap() + c["rx_bytes"].as_u64().unwrap()) as f64;
    let crr_connections = crr["transactions"].as_u64().unwrap() as f64;
    // However loaded the machine, the run makes some dozens at least.
    assert!(
        crr_connections >= 20.0,
        "too few CRR transactions: {record}"
    );

    // Everything the client host did was to the server, on the link's subnet.
    let rows = observed["subnets"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{observed}");
    let row = &rows[0];
    assert_eq!(row["subnet"], "10.77.1.0/24");
    let connections = row["connections"].as_u64().unwrap() as f64;
    assert_eq!(row["eligible"], row["connections"]);
    assert_eq!(row["same_subnet"], row["connections"]);
    assert_eq!(row["excluded_ipsec"], 0);
    // Every CRR connection (most shorter than one 100 ms interval, counted
    // by their close events), the RR connection and the control connection.
    // (A CRR connection cut by the run's end is seen but not in the record.)
    let slack = (0.02 * crr_connections).max(2.0);
    within("connections", connections, crr_connections + 2.0, slack);
    // Well-suited: the RR flow (and the control connection if it moved
    // 16 kB), none of the short ones.
    let well = row["well_suited"].as_u64().unwrap();
    assert!((1..=2).contains(&well), "{row}");
    within(
        "well-suited % of connections",
        row["well_suited_pct"].as_f64().unwrap(),
        100.0 / (crr_connections + 2.0),
        2.0,
    );
    // The share of payload over well-suited connections is the RR flow's.
    let want = 100.0 * payload(rr) / (payload(rr) + payload(crr));
    let got = row["well_suited_bytes_pct"].as_f64().unwrap();
    within("well-suited % of bytes", got, want, 2.0);
    // Its payload, as the kernel counted it, is the run's.
    let all = payload(rr) + payload(crr);
    within("bytes", row["bytes"].as_f64().unwrap(), all, 0.02 * all);
    assert!(observed["close_events_subscribed"].as_bool().unwrap());
}

#[test]
fn ipsec_protected_traffic_is_excluded() {
    if !can_make_namespaces("ipsec_protected_traffic_is_excluded") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path(), "tapsec", true);
    let _ = lab("down", &file).output();
    let up = lab("up", &file).output().unwrap();
    if !up.status.success() {
        // No ESP in this kernel (no esp4 module): nothing was built.
        let why = format!(
            "this kernel cannot carry the lab's ESP link: {}",
            String::from_utf8_lossy(&up.stderr).trim()
        );
        return skip(Tier::Esp, "ipsec_protected_traffic_is_excluded", &why);
    }
    let (observed, _) = watch_a_run(&file, "RR1(1kB/1kB)");
    let _ = lab("down", &file).output();
    let total = &observed["total"];
    assert!(total["connections"].as_u64().unwrap() >= 2, "{observed}");
    assert_eq!(total["excluded_ipsec"], total["connections"], "{observed}");
    assert_eq!(total["eligible"], 0);
    assert_eq!(total["well_suited"], 0);
}

/// The observation is stored in the environment of both projection runs.
#[test]
fn the_projection_runs_are_stored_with_the_observation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Own traffic on loopback: one long connection with 64 kB each way and
    // twenty short ones, inside the window.
    let port = addr.port().to_string();
    let watcher = Watcher::start(&[
        "--window",
        "4s",
        "--port",
        &port,
        "--project-for",
        "500ms",
        // Its 16 transactions take 1.3 s: well inside the window even
        // when a loaded machine delays a dump.
        "--min-lifetime",
        "500ms",
        "--db",
        db.to_str().unwrap(),
    ]);
    // Own traffic on loopback: one long connection with 16 transactions of
    // 4 kB each way, and twenty short ones of 64 B / 1000 B.
    let (mut c, mut s) = (
        std::net::TcpStream::connect(addr).unwrap(),
        listener.accept().unwrap().0,
    );
    for _ in 0..16 {
        c.write_all(&[1; 4096]).unwrap();
        let mut b = [0; 4096];
        s.read_exact(&mut b).unwrap();
        s.write_all(&b).unwrap();
        c.read_exact(&mut b).unwrap();
        std::thread::sleep(Duration::from_millis(80));
    }
    for _ in 0..20 {
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        c.write_all(&[1; 64]).unwrap();
        let mut b = [0; 64];
        s.read_exact(&mut b).unwrap();
        s.write_all(&[2; 1000]).unwrap();
        let mut r = [0; 1000];
        c.read_exact(&mut r).unwrap();
    }
    let (observed, err) = watcher.finish();
    drop((c, s));
    let total = &observed["total"];
    assert_eq!(total["connections"], 21, "{observed}");
    assert_eq!(total["same_host"], 21);
    assert_eq!(total["well_suited"], 1, "{observed}");
    let classes = observed["projection"]["classes"].as_array().unwrap();
    assert_eq!(classes[0]["workload"], "RR1(4kB/4kB)", "{observed}");
    assert_eq!(classes[0]["observed_transactions"], 16);
    assert_eq!(classes[1]["workload"], "CRR1(64B/1000B)");
    assert_eq!(classes[1]["observed_transactions"], 20);
    for transport in ["tcp", "unix"] {
        let id = err
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!(
                    "stackbench: stored the {transport} projection as run "
                ))
            })
            .unwrap_or_else(|| panic!("{transport} run not stored: {err}"));
        let shown = crate::common::json_ok(
            stackbench()
                .args(["results", "show", id.trim(), "--json", "--db"])
                .arg(&db),
        );
        assert_eq!(shown["record"]["settings"]["transport"], transport);
        assert_eq!(shown["env"]["applicability"]["total"]["connections"], 21);
    }
}

/// `stackbench run ARGS` across the lab from client to server, its record.
fn run_across(file: &Path, args: &[&str]) -> Value {
    let run = stackbench()
        .args(["run", "--lab"])
        .arg(file)
        .args(["--from", "client", "--to", "server"])
        .args(args)
        .args(["--warmup", "0s", "--json", "--no-store"])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    json_of(&run)
}

/// The crypto census reads each TLS run's handshakes off the lab link and
/// reports the version, suite and group the run was configured with, one
/// row per data port; the control connections read as clear.
#[test]
fn the_census_reports_the_configured_tls_version_suite_and_group() {
    if !can_make_namespaces("the_census_reports_the_configured_tls_version_suite_and_group") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = lab_file(dir.path(), "tcens", false);
    let _ = lab("down", &file).output();
    let up = lab("up", &file).output().unwrap();
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let f = file.to_str().unwrap();
    let watcher = Watcher::start(&[
        "--lab",
        f,
        "--host",
        "client",
        "--window",
        "10s",
        "--no-project",
        "--census",
        "--disallow",
        "ECDHE-RSA-AES128-GCM-SHA256",
    ]);
    let crr = run_across(
        &file,
        &[
            "CRR2(64B/1kB)",
            "--transport",
            "tls",
            "--cipher",
            "C02F",
            "--groups",
            "P-256",
            "--duration",
            "2s",
        ],
    );
    run_across(
        &file,
        &[
            "RR1(1kB/1kB)",
            "--transport",
            "tls",
            "--tls-version",
            "1.3",
            "--cipher",
            "1302",
            "--groups",
            "X25519",
            "--duration",
            "1s",
        ],
    );
    let (observed, _) = watcher.finish();
    let _ = lab("down", &file).output();

    let census = &observed["census"];
    assert_eq!(census["capture_refused"], Value::Null, "{census}");
    let rows = census["rows"].as_array().unwrap();
    let tls: Vec<&Value> = rows.iter().filter(|r| r["protection"] == "tls").collect();
    let mut chosen: Vec<(String, String, String)> = tls
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("-").to_string();
            (s("tls_version"), s("tls_cipher_code"), s("tls_group"))
        })
        .collect();
    chosen.sort();
    assert_eq!(
        chosen,
        [
            ("1.2".into(), "C02F".into(), "P-256".into()),
            ("1.3".into(), "1302".into(), "X25519".into())
        ],
        "{census}"
    );
    let v12 = tls.iter().find(|r| r["tls_version"] == "1.2").unwrap();
    assert_eq!(v12["tls_cipher"], "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
    assert_eq!(v12["offered_suites"], serde_json::json!(["C02F"]), "{v12}");
    // Every CRR connection had its handshake read. Each of the 2 clients
    // may add a connection at either edge of the counted window (one open
    // when it began, one cut when it ended) that is no counted transaction.
    let transactions = crr["classes"][0]["transactions"].as_u64().unwrap();
    let connections = v12["connections"].as_u64().unwrap();
    assert!(
        (transactions..=transactions + 2 * 2).contains(&connections),
        "{connections} TLS 1.2 connections for {transactions} CRR transactions: {census}"
    );
    // The disallowed suite's port is named for a reset, with only its
    // own connections on it (each stackbench run has data ports of its own).
    assert_eq!(census["disallowed_suites"], serde_json::json!(["C02F"]));
    let port = v12["server_port"].as_u64().unwrap();
    assert_eq!(
        census["resets"],
        serde_json::json!([{
            "server_port": port,
            "disallowed_connections": connections,
            "other_connections": 0,
            "setting": format!("host_policy_reset_port={port}"),
        }]),
        "{census}"
    );
    // Everything else is the clear control channel: nothing unknown.
    for r in rows.iter().filter(|r| r["protection"] != "tls") {
        assert_eq!(r["protection"], "clear", "{census}");
    }
    assert!(rows.iter().any(|r| r["protection"] == "clear"), "{census}");
}
