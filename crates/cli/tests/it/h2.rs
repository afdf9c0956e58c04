//! `--protocol h2` end to end: against the embedded responder (RR and CRR
//! with exact counts, clear text and TLS with ALPN h2 stored), against a
//! real nginx on clear text with prior knowledge (`listen … http2`) and
//! over TLS (`listen … ssl http2`), an HTTP/1.1-only nginx refused before
//! the run, and h2load (nghttp2's client) driving `stackbench serve`'s h2
//! responder. The nginx tier skips where there is no nginx (or h2load),
//! and fails instead when `STACKBENCH_REQUIRE` names it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use stackbench_engine::app::h2::{answer_len, body_for};
use stackbench_testkit::{skip, Tier};

use crate::common::{refused, run_json, stackbench};
use crate::http1::{make_certificates, nginx_binary, start_nginx_in};
use crate::run::Serve;

fn class(record: &Value) -> &Value {
    &record["classes"][0]
}

/// Requests and responses are the notation's sizes in frames; what moves
/// besides them (the preface, SETTINGS, ACKs, WINDOW_UPDATEs) is bounded
/// per connection and per transaction.
#[test]
fn rr_and_crr_over_h2_count_exactly_against_the_responder() {
    for (workload, n, conns) in [("RR4(100B/8kB)", 403, 4), ("CRR3(200B/200B)", 151, 151)] {
        let record = run_json(workload, n, &["--protocol", "h2"]);
        let c = class(&record);
        assert_eq!(c["transactions"], n, "{workload}");
        assert_eq!(c["errors"], 0, "{workload}: {c}");
        assert_eq!(c["http_status"]["codes"]["200"], n, "{workload}: {c}");
        let req = c["request_bytes"].as_u64().unwrap();
        let resp = c["response_bytes"].as_u64().unwrap();
        assert_eq!(
            answer_len(body_for(resp)),
            resp,
            "{workload}: an exact answer"
        );
        let (tx, rx) = (
            c["tx_bytes"].as_u64().unwrap(),
            c["rx_bytes"].as_u64().unwrap(),
        );
        // The client's opening (preface, SETTINGS, WINDOW_UPDATE: 63
        // bytes) per connection, a SETTINGS ACK and a WINDOW_UPDATE (13)
        // ahead of later requests; the server's SETTINGS, WINDOW_UPDATE and
        // ACK (43) per connection.
        assert!(
            tx > n * req && tx <= n * req + conns * 63 + n * 22,
            "{workload}: {tx}"
        );
        assert!(
            rx > n * resp && rx <= n * resp + conns * 43,
            "{workload}: {rx}"
        );
        assert_eq!(record["settings"]["protocol"], "h2");
    }
    let record = run_json(
        "RR2(100B/4kB)",
        50,
        &["--protocol", "h2", "--transport", "tls"],
    );
    let c = class(&record);
    assert_eq!(c["transactions"], 50);
    assert_eq!(c["tls"]["alpn"], "h2", "{c}");
}

#[test]
fn sizes_beyond_the_flow_control_windows_are_refused_in_one_line() {
    refused(
        "run",
        &["RR1(100kB/1kB)", "--protocol", "h2", "--duration", "1s"],
        "protocol h2 carries a request of at most 65,535 bytes",
    );
    refused(
        "run",
        &["STR1(1B/2GB)", "--protocol", "h2", "--duration", "1s"],
        "protocol h2 carries a response of at most 1,073,741,823 bytes",
    );
}

/// nginx's certificate lines for `cert` (.pem and .key) in `dir`.
fn certificate_lines(dir: &Path, cert: &str) -> String {
    format!(
        "ssl_certificate {d}/{cert}.pem; ssl_certificate_key {d}/{cert}.key; \
         ssl_protocols TLSv1.2 TLSv1.3;",
        d = dir.display()
    )
}

/// nginx with a file of each of `bodies` at `/N` and a `/x` of 4000 bytes,
/// listening with `listen` (`http2`, `ssl http2`, `ssl`); for TLS, a
/// certificate of a test CA, whose `ca.pem` path is returned.
fn nginx_with(
    binary: &Path,
    bodies: &[u64],
    listen: &str,
) -> (crate::http1::Nginx, PathBuf, Option<String>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let tls = listen.contains("ssl");
    let lines = if tls {
        make_certificates(&d);
        certificate_lines(&d, "srv")
    } else {
        String::new()
    };
    let locations = format!("{lines} location = /fail {{ return 500; }}");
    let nginx = start_nginx_in(
        dir,
        binary,
        bodies,
        (listen, &locations),
        "master_process off;",
    );
    let ca = tls.then(|| d.join("ca.pem").display().to_string());
    (nginx, d, ca)
}

/// HTTP/2 against nginx: prior knowledge on clear text and ALPN h2 over
/// TLS, the codec's `/N` files served, statuses counted per code (a path
/// that answers 404, one that answers 500), and what moved beyond the
/// bodies is nginx's headers.
#[test]
fn rr_and_crr_over_h2_against_nginx_clear_and_tls() {
    let test = "rr_and_crr_over_h2_against_nginx_clear_and_tls";
    let Some(binary) = nginx_binary() else {
        return skip(Tier::Nginx, test, "no nginx binary on PATH or in /usr/sbin");
    };
    let body = body_for(8192);
    let small = body_for(1024);
    for listen in ["http2", "ssl http2"] {
        let (nginx, _dir, ca) = nginx_with(&binary, &[body, small], listen);
        let scheme = if ca.is_some() { "https" } else { "http" };
        let target = format!("{scheme}://127.0.0.1:{}", nginx.port);
        // An HTTP/2 request cannot ask the server to close: CRR closes
        // from the client's side.
        let mut flags = vec![
            "--protocol",
            "h2",
            "--target",
            &target,
            "--crr-close",
            "client",
        ];
        if let Some(ca) = &ca {
            flags.extend(["--ca", ca.as_str()]);
        }
        refused(
            "run",
            &[
                "CRR1(100B/1kB)",
                "--protocol",
                "h2",
                "--target",
                &target,
                "--duration",
                "1s",
            ],
            "protocol h2 cannot ask the server",
        );
        let record = run_json("RR4(100B/8kB)+CRR2(100B/1kB)", 200, &flags);
        for c in record["classes"].as_array().unwrap() {
            assert_eq!(c["transactions"], 200, "{listen}: {c}");
            assert_eq!(c["errors"], 0, "{listen}: {c}");
            assert_eq!(c["http_status"]["codes"]["200"], 200, "{listen}: {c}");
            if ca.is_some() {
                assert_eq!(c["tls"]["alpn"], "h2", "{c}");
                assert_eq!(c["tls"]["server_verified"], true, "{c}");
            }
        }
        let rr = class(&record);
        // nginx's bodies, and its header blocks beside them.
        assert!(rr["rx_bytes"].as_u64().unwrap() > 200 * body, "{rr}");
        // Statuses: counted per code, the connection goes on.
        for (path, code) in [("/missing", "404"), ("/fail", "500")] {
            let target = format!("{target}{path}");
            let mut flags = vec![
                "--protocol",
                "h2",
                "--target",
                &target,
                "--http-error-share",
                "100%",
            ];
            if let Some(ca) = &ca {
                flags.extend(["--ca", ca.as_str()]);
            }
            let record = run_json("RR2(100B/1kB)", 40, &flags);
            let c = class(&record);
            assert_eq!(c["transactions"], 40, "{c}");
            assert_eq!(c["http_status"]["codes"][code], 40, "{path}: {c}");
            assert_eq!(c["error_counts"]["http_status"], 40, "{path}: {c}");
        }
    }
}

/// h2 against an nginx that serves only HTTP/1.1: on clear text it
/// answers the preface in HTTP/1.1; over TLS ALPN settles http/1.1. Both
/// are refused in one line before the run.
#[test]
fn h2_against_an_http1_only_nginx_is_refused_before_the_run() {
    let test = "h2_against_an_http1_only_nginx_is_refused_before_the_run";
    let Some(binary) = nginx_binary() else {
        return skip(Tier::Nginx, test, "no nginx binary on PATH or in /usr/sbin");
    };
    let (clear, _d1, _) = nginx_with(&binary, &[], "");
    let target = format!("http://127.0.0.1:{}", clear.port);
    refused(
        "run",
        &[
            "RR1(100B/1kB)",
            "--protocol",
            "h2",
            "--target",
            &target,
            "--duration",
            "1s",
        ],
        "not a server of protocol h2: it answered the HTTP/2 preface in HTTP/1.1",
    );
    let (tls, _d2, ca) = nginx_with(&binary, &[], "ssl");
    let target = format!("https://127.0.0.1:{}", tls.port);
    let ca = ca.unwrap();
    refused(
        "run",
        &[
            "RR1(100B/1kB)",
            "--protocol",
            "h2",
            "--target",
            &target,
            "--ca",
            &ca,
            "--duration",
            "1s",
        ],
        "the server selected none of the protocols ALPN offered (h2)",
    );
}

fn h2load_binary() -> Option<PathBuf> {
    ["/usr/bin/h2load", "/usr/local/bin/h2load"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// A line of h2load's summary: `requests: 200 total, 200 started, 200 done,
/// 200 succeeded, …` as (total, succeeded).
fn h2load_requests(out: &str) -> (u64, u64) {
    let line = out
        .lines()
        .find(|l| l.starts_with("requests:"))
        .unwrap_or_else(|| panic!("no requests line: {out}"));
    let num = |what: &str| {
        line.split(',')
            .find(|p| p.trim().ends_with(what))
            .and_then(|p| p.split_whitespace().find_map(|w| w.parse::<u64>().ok()))
            .unwrap_or_else(|| panic!("no '{what}' in {line}"))
    };
    (num("total"), num("succeeded"))
}

/// h2load (nghttp2's client, a reference HTTP/2 implementation) drives
/// `stackbench serve`'s h2 responder with several streams per connection
/// (`-m 10`): every request succeeds, and the responder counts the bytes.
#[test]
fn h2load_drives_the_h2_responder_with_several_streams() {
    let test = "h2load_drives_the_h2_responder_with_several_streams";
    let Some(h2load) = h2load_binary() else {
        return skip(
            Tier::Nginx,
            test,
            "no h2load (apt-get install nghttp2-client)",
        );
    };
    let serve = Serve::start();
    let mut hold = stackbench()
        .args([
            "serve",
            "--hold",
            &serve.addr,
            "RR2(100B/4kB)",
            "--protocol",
            "h2",
        ])
        .args(["--hold-limit", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(hold.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port: u16 = first
        .trim()
        .strip_prefix("port=")
        .expect("a port= line")
        .parse()
        .unwrap();
    let out = Command::new(h2load)
        .args(["-n", "400", "-c", "2", "-m", "10"])
        .arg(format!("http://127.0.0.1:{port}/{}", body_for(4096)))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert_eq!(h2load_requests(&text), (400, 400), "{text}");
    assert!(text.contains("status codes: 400 2xx"), "{text}");
    let _ = hold.kill();
    let _ = hold.wait();
}
