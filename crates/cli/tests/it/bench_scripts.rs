//! The bench scripts' Python halves (`bench/peers_report.py`,
//! `bench/cpu_report.py`, `bench/http_report.py`) are run by hand, so nothing
//! else would notice when the record they read changes shape: their
//! self-tests run here, and a real run's JSON goes through the peers parser
//! (which reads it as the flat table of this binary's `results export
//! --flat`), which must find every figure the side-by-side table compares
//! (rate, latencies, each side's CPU and the host CPU row netperf is
//! compared with). Skipped with a message without python3. What
//! bench/http.sh asks of the binary itself is tested here too: `serve
//! --hold` holds an HTTP/1.1 test open on a real `stackbench serve` for a
//! client of its own.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::stackbench;

fn bench_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench")
}

/// `python3 ARGS…` from the bench directory, or `None` (with a message) when
/// there is no python3.
fn python(args: &[&str]) -> Option<std::process::Output> {
    match Command::new("python3")
        .args(args)
        .current_dir(bench_dir())
        // The scripts read records through `results export --flat`.
        .env("STACKBENCH", env!("CARGO_BIN_EXE_stackbench"))
        .output()
    {
        Ok(out) => Some(out),
        Err(e) => {
            let why = format!("python3 is not runnable ({e}); install python3");
            stackbench_testkit::skip(stackbench_testkit::Tier::Python, "the bench/ parsers", &why);
            None
        }
    }
}

#[test]
fn the_bench_reports_pass_their_self_tests() {
    for script in ["peers_report.py", "cpu_report.py", "http_report.py"] {
        let Some(out) = python(&[script, "self-test"]) else {
            return;
        };
        assert!(
            out.status.success(),
            "{script} self-test: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_peers_parser_reads_every_compared_figure_from_a_real_run() {
    let run = stackbench()
        .args([
            "run",
            "RR2(1B/1B)",
            "--transactions",
            "2000",
            "--no-store",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    std::fs::write(&json, &run.stdout).unwrap();
    let Some(out) = python(&[
        "peers_report.py",
        "parse",
        "stackbench",
        json.to_str().unwrap(),
    ]) else {
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for key in [
        "rate_tps",
        "lat_p50_us",
        "lat_p99_us",
        "cli_cpu_us_per_tr",
        "srv_cpu_us_per_tr",
        "cli_proc_cpu_us_per_tr",
        "srv_proc_cpu_us_per_tr",
        "host_cpu_us_per_tr",
    ] {
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("{key} missing from the parsed figures:\n{text}"));
        let v: f64 = value.parse().unwrap();
        assert!(v > 0.0, "{key}={v}");
    }
}

/// A child process killed when dropped, so a failed assertion leaves no
/// responder or hold running.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// bench/http.sh drives `stackbench serve` with wrk through `stackbench
/// serve --hold`: it must open a test whose listener answers `GET /N` with
/// N bytes over keep-alive, and report the responder's count of the answers
/// when told to stop (SIGTERM).
#[test]
fn serve_hold_opens_an_http1_test_any_client_can_drive() {
    let mut serve = Killed(
        stackbench()
            .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(serve.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let control = line
        .strip_prefix(stackbench_runner::spawn::LISTENING_PREFIX)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no listening line from serve: {line:?}"))
        .to_string();
    let mut hold = Killed(
        stackbench()
            .args(["serve", "--hold", &control, "RR1(45B/4137B)"])
            .args(["--protocol", "http1", "--nodelay", "--hold-limit", "60"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut out = BufReader::new(hold.0.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let port: u16 = first
        .trim()
        .strip_prefix("port=")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            // No port line: the hold has ended; its one-line reason.
            let mut why = String::new();
            let _ = std::io::Read::read_to_string(&mut hold.0.stderr.take().unwrap(), &mut why);
            panic!("no port= line from serve --hold: {first:?}; stderr: {why}")
        });
    // Two GETs on one connection, as wrk sends them (no query, its Host).
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let head = "HTTP/1.1 200 OK\r\nContent-Length: 4096\r\n\r\n";
    for _ in 0..2 {
        conn.write_all(b"GET /4096 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
            .unwrap();
        let mut answer = vec![0u8; head.len() + 4096];
        conn.read_exact(&mut answer).unwrap();
        assert_eq!(&answer[..head.len()], head.as_bytes());
    }
    drop(conn);
    unsafe { libc::kill(hold.0.id() as i32, libc::SIGTERM) };
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    let status = hold.0.wait().unwrap();
    drop(serve);
    assert!(status.success(), "serve --hold: {status} {rest}");
    assert!(
        rest.lines().any(|l| l == "srv_transactions=2"),
        "the responder's count: {rest}"
    );
}

/// `serve --hold` refuses what it cannot hold in one line, before it
/// reaches for the responder: a mix (one test is held) and an unknown
/// protocol.
#[test]
fn serve_hold_refuses_a_mix_and_an_unknown_protocol_in_one_line() {
    let cases: [(&[&str], &str); 2] = [
        (&["RR1(1B/1B)+RR2(1B/1B)"], "give one class"),
        (
            &["RR1(1B/1B)", "--protocol", "gopher"],
            "--protocol 'gopher'",
        ),
    ];
    for (args, expected) in cases {
        let out = stackbench()
            .args(["serve", "--hold", "127.0.0.1:1"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}
