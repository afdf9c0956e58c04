//! `serve` and the run token: a non-loopback address without a token nor
//! `--open` refused in one line, what `serve` says about who may connect, a
//! driver without the token refused in one line on both sides and counted
//! in the record of a driver that has it, and a driver asking beyond the
//! responder's bounds refused in one line on both sides.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::common::*;

/// A token file (mode 600) in `dir`.
fn token_file(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let file = dir.join("token");
    std::fs::write(&file, "serve-token-test-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    file
}

/// `stackbench serve ARGS…` on loopback, and its listening line.
fn serve(args: &[&str]) -> (Child, String) {
    let mut child = stackbench()
        .args(["serve", "--listen", "127.0.0.1:0", "--threads", "1"])
        .args(args)
        .env_remove("STACKBENCH_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

fn addr_of(line: &str) -> String {
    line.split_whitespace().nth(4).unwrap().to_string()
}

/// The serve's stderr after it is stopped.
fn stop(mut child: Child) -> String {
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err);
    err
}

#[test]
fn serve_on_a_non_loopback_address_wants_a_token_or_open() {
    refused(
        "serve",
        &["--listen", "0.0.0.0:0"],
        "serve --listen 0.0.0.0:0 is reachable from other hosts: give --token-file FILE",
    );
    let mut open = stackbench()
        .args(["serve", "--listen", "0.0.0.0:0", "--open", "--threads", "1"])
        .env_remove("STACKBENCH_TOKEN")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(open.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = open.kill();
    let _ = open.wait();
    assert!(
        line.contains("who may connect: anyone who reaches 0.0.0.0:"),
        "{line}"
    );
    let (local, line) = serve(&[]);
    stop(local);
    assert!(
        line.contains("who may connect: any process of this host"),
        "{line}"
    );
}

#[test]
fn a_driver_without_the_serves_token_is_refused_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let file = token_file(dir.path());
    let (responder, line) = serve(&["--token-file", file.to_str().unwrap()]);
    assert!(
        line.contains(&format!(
            "who may connect: drivers that prove the token of {}",
            file.display()
        )),
        "{line}"
    );
    let addr = addr_of(&line);
    // A driver with a token of its own (the run's random one).
    refused(
        "run",
        &[
            "RR1(64B/64B)",
            "--target",
            &addr,
            "--transactions",
            "10",
            "--no-store",
        ],
        "another token",
    );
    // A driver with the token, and a stranger who connects while it runs.
    let run = stackbench()
        .args(["run", "RR1(64B/64B)", "--target", &addr, "--duration", "2s"])
        .args(["--warmup", "0s", "--json", "--no-store", "--token-file"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_measuring(&run, Duration::from_secs(30));
    let stranger = TcpStream::connect(&addr).unwrap();
    let mut w = stranger.try_clone().unwrap();
    let mut r = BufReader::new(stranger);
    writeln!(w, r#"{{"auth":"start","channel":"control","nonce":"00"}}"#).unwrap();
    let mut answer = String::new();
    r.read_line(&mut answer).unwrap();
    assert!(answer.contains("challenge"), "{answer}");
    writeln!(w, r#"{{"auth":"proof","proof":null}}"#).unwrap();
    answer.clear();
    r.read_line(&mut answer).unwrap();
    assert!(answer.contains("has no token"), "{answer}");
    let out = wait_bounded(run, Duration::from_secs(60));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_of(&out);
    assert_eq!(v["refused_peers"]["control_connections"], 1, "{v}");
    assert!(v["refused_peers"]["agent_connections"].is_null(), "{v}");
    let err = stop(responder);
    let refusals: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("stackbench serve: refused the control connection of 127.0.0.1:"))
        .collect();
    assert_eq!(refusals.len(), 2, "{err}");
    assert!(
        refusals[0].contains("holds another token") && refusals[0].contains("(1 refused so far)"),
        "{err}"
    );
    assert!(
        refusals[1].contains("has no token") && refusals[1].contains("(2 refused so far)"),
        "{err}"
    );
}

#[test]
fn a_driver_asking_beyond_the_responders_bounds_is_refused_before_the_run_starts() {
    let (responder, line) = serve(&["--max-message-bytes", "1000"]);
    let addr = addr_of(&line);
    // The responder's hello names its bounds: the driver refuses a run
    // beyond them in one line, exit 2, before it starts (nothing measured,
    // no test started on the responder).
    let out = stackbench()
        .args([
            "run",
            "RR1(64B/2kB)",
            "--target",
            &addr,
            "--transactions",
            "10",
        ])
        .args(["--no-store", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [format!(
            "stackbench: error: responder {addr} refuses this run: a message of 2048 bytes exceeds \
             this responder's limit of 1000 bytes (serve --max-message-bytes): ask less, or \
             have its operator raise the limit"
        )],
        "{err}"
    );
    let err = stop(responder);
    assert!(!err.contains("refused a test"), "{err}");
    refused(
        "serve",
        &["--max-clients", "0"],
        "--max-clients 0: give at least 1",
    );
}
