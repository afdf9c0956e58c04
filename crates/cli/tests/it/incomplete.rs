//! Incomplete runs explained by what was seen (issue 39 §2): a run that
//! measured nothing, or too little, against a server that answers wrongly
//! or not at all ends with exit 3, keeps what was measured, and its
//! INCOMPLETE line says what the clients met — connections refused, closed
//! or reset before any byte of a response or mid-response, a message the
//! protocol refuses, a server that never began its negotiation — never
//! "lengthen --duration". The servers are threads of this test process on
//! loopback ports, each misbehaving one way.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use stackbench_testkit::server::serve_loopback;

use crate::common::{json_of, stackbench, wait_bounded};
use crate::run::Serve;

/// How a test server treats each connection.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Closes it at once, unread.
    CloseAtOnce,
    /// Reads the request, sends a head promising 4,000 body bytes and 100
    /// of them, and closes.
    Partial,
    /// Reads and never answers.
    Silent,
    /// Answers every read with a small HTTP response.
    Http,
    /// Sends a TN3270 first screen (the terminal is logged on), then reads
    /// and never answers: a TN3270 server with no application behind it.
    LogonOnly,
}

/// A server of `mode` on a free loopback port, for the rest of the test
/// process; after `accepts` connections (if given) it stops listening.
fn server(mode: Mode, accepts: Option<usize>) -> u16 {
    serve_loopback(accepts, move |_, mut conn| serve_one(&mut conn, mode))
}

/// [`server`] for an http:// target: the run's first two connections (the
/// target's check, which sends nothing, and the probe's GET, which must be
/// answered as HTTP for the run to start) are served as [`Mode::Http`],
/// every later one as `mode`.
fn server_after_probe(mode: Mode) -> u16 {
    serve_loopback(None, move |i, mut conn| {
        let mode = if i < 2 { Mode::Http } else { mode };
        serve_one(&mut conn, mode)
    })
}

/// [`server_after_probe`] whose later connections are passed to and from
/// `127.0.0.1:to`, byte for byte.
fn proxy_after_probe(to: u16) -> u16 {
    serve_loopback(None, move |i, mut conn| {
        if i < 2 {
            return serve_one(&mut conn, Mode::Http);
        }
        let Ok(back) = TcpStream::connect(("127.0.0.1", to)) else {
            return;
        };
        let pipe = |mut from: TcpStream, mut to: TcpStream| {
            thread::spawn(move || {
                let _ = std::io::copy(&mut from, &mut to);
                let _ = to.shutdown(std::net::Shutdown::Write);
            });
        };
        pipe(conn.try_clone().unwrap(), back.try_clone().unwrap());
        pipe(back, conn);
    })
}

fn serve_one(conn: &mut TcpStream, mode: Mode) {
    let mut buf = vec![0u8; 64 * 1024];
    match mode {
        Mode::CloseAtOnce => {}
        Mode::Partial => {
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n");
            let _ = conn.write_all(&[b'x'; 100]);
        }
        Mode::Silent => while matches!(conn.read(&mut buf), Ok(n) if n > 0) {},
        Mode::LogonOnly => {
            // Erase/Write, a WCC, IAC EOR: a screen.
            let _ = conn.write_all(&[0xF5, 0xC3, 0xFF, 0xEF]);
            while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
        }
        Mode::Http => {
            while matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
                if conn.write_all(answer).is_err() {
                    break;
                }
            }
        }
    }
}

/// Whether `line` reads as `pattern`, where each `#` in the pattern stands
/// for one count (digits, with grouping commas and a decimal point): the
/// counts depend on the machine's speed, the words must not.
fn reads_as(line: &str, pattern: &str) -> bool {
    let mut rest = line;
    let mut parts = pattern.split('#').peekable();
    while let Some(part) = parts.next() {
        let Some(after) = rest.strip_prefix(part) else {
            return false;
        };
        rest = after;
        if parts.peek().is_some() {
            let n = rest
                .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == '.'))
                .unwrap_or(rest.len());
            if n == 0 {
                return false;
            }
            rest = &rest[n..];
        }
    }
    rest.is_empty()
}

/// `stackbench run ARGS --warmup 0s --no-store --json`, which must exit 3
/// with a record (what was measured is kept) whose reason reads as
/// `pattern`; returns the record.
fn incomplete(args: &[&str], pattern: &str) -> Value {
    incomplete_as(args, &[pattern])
}

/// [`incomplete`], the reason reading as one of `patterns`.
fn incomplete_as(args: &[&str], patterns: &[&str]) -> Value {
    let out = stackbench()
        .arg("run")
        .args(args)
        .args(["--warmup", "0s", "--no-store", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
    let record = json_of(&out);
    assert_eq!(record["complete"], false, "{args:?}");
    let reason = record["incomplete_reason"].as_str().unwrap();
    assert!(
        patterns.iter().any(|p| reads_as(reason, p)),
        "{args:?}:\n got {reason}\nwant {patterns:#?}"
    );
    assert!(!reason.contains("lengthen --duration"), "{reason}");
    record
}

fn class(record: &Value) -> &Value {
    &record["classes"][0]
}

#[test]
fn the_pattern_matcher_matches_counts_only() {
    assert!(reads_as(
        "closed 1,234 connections in 2.0 s",
        "closed # connections in # s"
    ));
    assert!(!reads_as("closed many connections", "closed # connections"));
    assert!(!reads_as("closed 3 connections!", "closed # connections"));
}

/// The first case: http1 pointed at a `stackbench serve` control
/// port. The probe before the run reads its refusal where a status line
/// belongs and says so (exit 2), before anything is measured.
#[test]
fn http1_against_a_control_port_is_refused_by_the_probe() {
    let serve = Serve::start();
    let target = format!("http://{}", serve.addr);
    crate::common::refused(
        "run",
        &[
            "RR2(100B/4000B)",
            "--protocol",
            "http1",
            "--target",
            &target,
            "--duration",
            "1s",
            "--no-store",
        ],
        &format!(
            "target {target}: not an HTTP server: its answer to GET / begins \
             \"{{\\\"type\\\":\\\"error\\\""
        ),
    );
}

/// A server that sends 100 of the 4,000 body bytes it promised and closes.
#[test]
fn a_body_cut_short_names_what_arrived() {
    let target = format!("http://127.0.0.1:{}", server(Mode::Partial, None));
    let record = incomplete(
        &[
            "RR2(100B/4000B)",
            "--protocol",
            "http1",
            "--target",
            &target,
            "--duration",
            "1s",
        ],
        "RR2(100B/4000B): no transaction completed in the 1s window: the server closed # \
         connections mid-response (the first after the head and 100 of 4,000 body bytes)",
    );
    let c = class(&record);
    // Every cut connection was seen (no client left waiting on a FIN that
    // came with the last bytes), and the bytes that moved are kept.
    assert!(c["error_counts"]["eof"].as_u64().unwrap() >= 10, "{c}");
    assert!(c["rx_bytes"].as_u64().unwrap() > 0, "{c}");
}

/// A TCP listener that closes every connection at once, unread.
#[test]
fn a_listener_that_closes_at_once_is_named() {
    let target = format!("http://127.0.0.1:{}", server_after_probe(Mode::CloseAtOnce));
    // Whether the client sees the close or a reset depends on timing.
    let ended = |verb: &str, conns: &str| {
        format!(
            "RR1(100B/100B): no transaction completed in the 1s window: the server {verb} \
             {conns} after the request, before any byte of a response: check that the \
             target is a server of protocol http1"
        )
    };
    let patterns = [
        ended("closed", "# connections"),
        ended("reset", "# connections"),
        ended("closed or reset", "# connections (# reset)"),
    ];
    let patterns: Vec<&str> = patterns.iter().map(String::as_str).collect();
    let record = incomplete_as(
        &[
            "RR1(100B/100B)",
            "--protocol",
            "http1",
            "--target",
            &target,
            "--duration",
            "1s",
        ],
        &patterns,
    );
    let errors = &class(&record)["error_counts"];
    let ended = errors["eof"].as_u64().unwrap() + errors["reset"].as_u64().unwrap();
    assert!(ended > 0, "{errors}");
}

/// The raw responder answering an http1 client: zeros where a status line
/// belongs, a message the protocol refuses.
#[test]
fn a_raw_responder_answering_http1_is_a_fault_with_its_line() {
    let serve = Serve::start();
    let mut hold = stackbench()
        .args(["serve", "--hold", &serve.addr, "RR1(100B/4000B)"])
        .args(["--hold-limit", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(hold.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .trim()
        .strip_prefix("port=")
        .expect("a port= line")
        .to_string();
    // The probe before the run is answered as HTTP; the run's clients
    // reach the raw responder.
    let port: u16 = port.parse().unwrap();
    let target = format!("http://127.0.0.1:{}", proxy_after_probe(port));
    let record = incomplete(
        &[
            "RR1(100B/4000B)",
            "--protocol",
            "http1",
            "--target",
            &target,
            "--duration",
            "1s",
        ],
        "RR1(100B/4000B): no transaction completed in the 1s window: 1 client ended on a \
         message that protocol http1 refuses (the first: malformed HTTP response to GET \
         /# (invalid HTTP version): it begins \"\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\
         \\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\
         \\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\\0\"): check that the target \
         is a server of protocol http1",
    );
    assert_eq!(class(&record)["error_counts"]["other"], 1);
    let _ = hold.kill();
    let _ = hold.wait();
}

/// A server that reads requests and never answers.
#[test]
fn a_silent_server_is_said_to_accept_and_not_answer() {
    let target = format!("http://127.0.0.1:{}", server_after_probe(Mode::Silent));
    incomplete(
        &[
            "RR2(100B/100B)",
            "--protocol",
            "http1",
            "--target",
            &target,
            "--duration",
            "2s",
        ],
        "RR2(100B/100B): no transaction completed in the 2s window: 2 clients sent a \
         request and received no byte of a response in # s: the server accepts the \
         connections but does not answer; check that the target is a server of protocol \
         http1",
    );
}

/// A run bounded by `--transactions` alone against a server that reads
/// requests and never answers has no window end of its own: it ends
/// incomplete once no transaction completed for the idle bound (10 s,
/// `IDLE_BOUND_NS`), says what the clients were waiting for, and leaves no
/// process behind. Before the bound it waited forever (issue 39).
#[test]
fn a_transactions_run_against_a_silent_server_ends_after_the_idle_bound() {
    let target = format!("http://127.0.0.1:{}", server_after_probe(Mode::Silent));
    let args = [
        "run",
        "RR2(100B/100B)",
        "--protocol",
        "http1",
        "--target",
        &target,
        "--transactions",
        "10",
        "--warmup",
        "0s",
        "--no-store",
        "--json",
    ];
    let started = Instant::now();
    let child = stackbench()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The bound, the probe's few seconds at most, and slack for a loaded host.
    let out = wait_bounded(child, Duration::from_secs(40));
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        took >= Duration::from_secs(10),
        "ended before the bound: {took:?}"
    );
    let record = json_of(&out);
    assert_eq!(record["complete"], false);
    let reason = record["incomplete_reason"].as_str().unwrap();
    let want = "RR2(100B/100B): no transaction completed and nothing moved for 10s (the \
                --transactions run's idle bound), so the run was ended: 2 clients sent a request and received no byte of a \
                response in # s: the server accepts the connections but does not answer; check \
                that the target is a server of protocol http1";
    assert!(reads_as(reason, want), "\n got {reason}\nwant {want}");
    assert_eq!(class(&record)["transactions"], 0);
}

/// A tn3270 run against an HTTP server: the server waits for a request,
/// the terminal for the server's negotiation. Once the 10 s the window
/// waits for clients to connect have passed, the run says so.
#[test]
fn tn3270_against_an_http_server_says_the_negotiation_never_began() {
    let target = format!("tn3270://127.0.0.1:{}", server(Mode::Http, None));
    incomplete(
        &[
            "RR2(100B/800B)",
            "--protocol",
            "tn3270",
            "--target",
            &target,
            "--duration",
            "1s",
        ],
        "RR2(100B/800B): no transaction completed in the 1s window: 2 clients waited # s \
         for the server to begin the Telnet negotiation, and it never did: check that the \
         target is a server of protocol tn3270",
    );
}

/// A TN3270 server that logs terminals on (its first screen arrives) and
/// answers no transaction, as hercules does without an operating system.
#[test]
fn a_tn3270_server_that_logs_on_and_never_answers_says_so() {
    let target = format!("tn3270://127.0.0.1:{}", server(Mode::LogonOnly, None));
    incomplete(
        &[
            "RR2(100B/800B)",
            "--protocol",
            "tn3270",
            "--target",
            &target,
            "--duration",
            "2s",
        ],
        "RR2(100B/800B): no transaction completed in the 2s window: 2 clients completed the \
         Telnet negotiation, sent a request and received no byte of a screen in # s: the \
         Telnet negotiation succeeded but no screen answered a request; check that an \
         application answers behind the server",
    );
}

/// A sweep whose server stops listening after its first point: that point
/// is kept complete, the next says its connects were refused.
#[test]
fn a_port_nobody_listens_on_mid_sweep_is_said_refused() {
    // Accepts: the target's check, its probe and point 1's one data
    // connection (the points share the check and the probe).
    let target = format!("http://127.0.0.1:{}", server(Mode::Http, Some(3)));
    let out = stackbench()
        .args([
            "run",
            "RR(100B/100B)",
            "--protocol",
            "http1",
            "--target",
            &target,
        ])
        .args([
            "--sweep",
            "clients=1,2",
            "--transactions",
            "50",
            "--duration",
            "1s",
        ])
        .args(["--warmup", "0s", "--no-store", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let docs = json_of(&out);
    let points = docs.as_array().expect("one record per point");
    assert_eq!(points.len(), 2, "{docs}");
    assert_eq!(points[0]["complete"], true);
    assert_eq!(class(&points[0])["transactions"], 50);
    let reason = points[1]["incomplete_reason"].as_str().unwrap();
    assert!(
        reads_as(
            reason,
            "RR2(100B/100B): no transaction completed in the 1s window: # connects were \
             refused (nothing listens there): check --target, and that the server is running"
        ),
        "{reason}"
    );
}

/// `run --target HOST:PORT` pointed at a server that is not `stackbench
/// serve` says so, with the targets that drive such a server, in one line
/// (exit 2): not "control connection failed".
#[test]
fn a_target_that_is_not_stackbench_serve_is_named_with_the_fix() {
    use crate::common::refused;
    let http = format!("127.0.0.1:{}", server(Mode::Http, None));
    refused(
        "run",
        &["RR2(100B/100B)", "--target", &http, "--no-store"],
        &format!(
            "{http} is not `stackbench serve`: it answered the control hello with \
             \"HTTP/1.1 200 OK\"; a plain HTTP server is --target http://{http} with \
             --protocol http1, a TN3270 server tn3270://{http} with --protocol tn3270"
        ),
    );
    let closes = format!("127.0.0.1:{}", server(Mode::CloseAtOnce, None));
    refused(
        "run",
        &["RR2(100B/100B)", "--target", &closes, "--no-store"],
        &format!("{closes} is not `stackbench serve`: "),
    );
}

/// `stackbench agent --controller` pointed at something that is not a
/// controller exits 2 saying so (it exited 0, silently), in the token
/// handshake that now opens the connection.
#[test]
fn an_agent_pointed_at_no_controller_says_so() {
    // The agent holds the run's token, as one a run starts would.
    let agent_refused = |controller: &str, needle: &str| {
        let out = stackbench()
            .args(["agent", "--controller", controller, "--segment", "0/1"])
            .env("STACKBENCH_TOKEN", "00112233445566778899aabbccddeeff")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{controller}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
        assert!(err.contains(needle), "{controller}: want '{needle}': {err}");
    };
    let http = format!("127.0.0.1:{}", server(Mode::Http, None));
    agent_refused(
        &http,
        &format!(
            "--controller {http} is not a stackbench controller (it sent a message this \
             stackbench does not understand (\"HTTP/1.1 200 OK\"))"
        ),
    );
    let closes = format!("127.0.0.1:{}", server(Mode::CloseAtOnce, None));
    agent_refused(
        &closes,
        &format!("--controller {closes} is not a stackbench controller ("),
    );
    // A responder's control port refuses the agents channel.
    let serve = Serve::start();
    agent_refused(
        &serve.addr,
        "give the --agent-listen address of the `run` or `study` started with --agents",
    );
}
