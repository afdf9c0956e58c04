//! `--protocol amqp` end to end against the embedded broker-and-responder:
//! request-reply (RR and CRR, non-persistent and persistent) and put-get
//! with exact counts, the settings stored with the record, and the bytes
//! moved the bodies plus the frames docs/transports.md accounts for.

use serde_json::Value;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use stackbench_testkit::broker::Broker;

use crate::common::{refused, run_json, stackbench};

/// Bytes moved per transaction above the body, each way, for a class of
/// `n` transactions: `(tx, rx)`.
fn overhead(class: &Value, n: u64, request: u64, response: u64) -> (u64, u64) {
    let tx = class["tx_bytes"].as_u64().unwrap();
    let rx = class["rx_bytes"].as_u64().unwrap();
    assert!(tx >= n * request && rx >= n * response, "{class}");
    ((tx - n * request) / n, (rx - n * response) / n)
}

#[test]
fn amqp_transactions_count_exactly_against_the_embedded_broker() {
    // RR: setup before the window, so only the transfers (and a flow every
    // 50 requests) count: docs/transports.md's 77 + name / 69 bytes, less
    // where ids below 256 encode shorter.
    let n = 300;
    let record = run_json("RR3(1kB/2kB)", n, &["--protocol", "amqp"]);
    let c = &record["classes"][0];
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(n), Some(0)),
        "{c}"
    );
    let (tx, rx) = overhead(c, n, 1024, 2048);
    assert!(
        (60..120).contains(&tx) && (45..=69).contains(&rx),
        "{tx} {rx}"
    );
    let s = &record["settings"];
    assert_eq!(s["protocol"], "amqp");
    assert_eq!(s["amqp_pattern"], "request-reply");
    assert_eq!(s["amqp_persistent"], false);

    // CRR, persistent: every connection's setup is in its transaction.
    let n = 40;
    let flags = [
        "--protocol",
        "amqp",
        "--amqp-persistent",
        "--amqp-credit",
        "3",
    ];
    let record = run_json("CRR2(100B/300B)", n, &flags);
    let c = &record["classes"][0];
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(n), Some(0)),
        "{c}"
    );
    let (tx, rx) = overhead(c, n, 100, 300);
    assert!(tx > 300 && rx > 300, "setup counted: {tx} {rx}");
    assert_eq!(record["settings"]["amqp_persistent"], true);
    assert_eq!(record["settings"]["amqp_credit"], 3);

    // Put-get: the message comes back, so z is y.
    let n = 100;
    let flags = [
        "--protocol",
        "amqp",
        "--amqp-pattern",
        "put-get",
        "--amqp-body",
        "text",
    ];
    let record = run_json("RR2(500B/7B)", n, &flags);
    let c = &record["classes"][0];
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(n), Some(0)),
        "{c}"
    );
    let (_, rx) = overhead(c, n, 500, 500);
    assert!(rx < 120, "the 500-byte message back: {rx}");
    assert_eq!(record["settings"]["amqp_body"], "text");
}

#[test]
fn compressed_bodies_move_fewer_bytes_against_the_embedded_broker() {
    // 32 kB of text each way, zlib level 1 and 9: the bytes moved are the
    // compressed bodies (a few hundred bytes), the notation's sizes stay.
    let n = 50;
    for (compress, body, small) in [
        ("zlib-fast", "text", true),
        ("zlib-high", "text", true),
        ("zlib-fast", "random", false),
    ] {
        let flags = [
            "--protocol",
            "amqp",
            "--amqp-compress",
            compress,
            "--amqp-body",
            body,
        ];
        let record = run_json("RR2(32kB/32kB)", n, &flags);
        let c = &record["classes"][0];
        assert_eq!(
            (c["transactions"].as_u64(), c["errors"].as_u64()),
            (Some(n), Some(0)),
            "{compress} {body}: {c}"
        );
        let per_tr = |k: &str| c[k].as_u64().unwrap() / n;
        let (tx, rx) = (per_tr("tx_bytes"), per_tr("rx_bytes"));
        if small {
            assert!(tx < 2000 && rx < 2000, "{compress} {body}: {tx} {rx}");
        } else {
            let size = 32 * 1024;
            assert!(
                (size..size + 600).contains(&tx) && (size..size + 600).contains(&rx),
                "{compress} {body}: {tx} {rx}"
            );
        }
        assert_eq!(record["settings"]["amqp_compress"], compress);
    }
}

#[test]
fn bad_amqp_settings_are_refused_in_one_line() {
    let queue = ["RR1(1kB/1kB)", "--protocol", "amqp", "--amqp-queue", "a b"];
    refused("run", &queue, "' ' in a queue name");
    let pattern = [
        "RR1(1kB/1kB)",
        "--protocol",
        "amqp",
        "--amqp-pattern",
        "rpc",
    ];
    refused("run", &pattern, "use request-reply, put-get");
    let broker = ["RR1(1kB/1kB)", "--target", "amqp://127.0.0.1:9"];
    refused(
        "run",
        &broker,
        "an amqp:// target is a plain AMQP 1.0 server",
    );
    let broker = [
        "RR1(1kB/1kB)",
        "--target",
        "amqp://127.0.0.1:9",
        "--protocol",
        "amqp",
        "--amqp-queues",
        "per-client",
    ];
    refused("run", &broker, "no responder gets from each client's own");
    let nobody = [
        "RR1(1kB/1kB)",
        "--target",
        "amqp://127.0.0.1:9",
        "--protocol",
        "amqp",
    ];
    refused(
        "run",
        &nobody,
        "nothing accepts a connection at 127.0.0.1:9",
    );
    let amqp = ["RR1(1kB/1kB)", "--protocol", "amqp", "--target"];
    refused(
        "run",
        &[&amqp[..], &["amqp://me:pw@127.0.0.1:9"]].concat(),
        "a password in the target shows in ps",
    );
    refused(
        "run",
        &[
            "RR1(1kB/1kB)",
            "--protocol",
            "http1",
            "--target",
            "http://me@127.0.0.1:9",
        ],
        "a user in the target is a SASL login",
    );
    refused(
        "run",
        &[
            &amqp[..],
            &[
                "amqp://127.0.0.1:9",
                "--amqp-password-file",
                "/etc/hostname",
            ],
        ]
        .concat(),
        "the password is for the target's user",
    );
    refused(
        "run",
        &[
            &amqp[..],
            &[
                "amqp://me@127.0.0.1:9",
                "--amqp-password-file",
                "/nonexistent/pw",
            ],
        ]
        .concat(),
        "amqp_password_file /nonexistent/pw",
    );
}

/// Against a real broker (the `broker` tier: Debian's RabbitMQ with its
/// AMQP 1.0 plugin, started by the test on loopback with its own data
/// directory and stopped at the end): put-get (non-persistent RR and
/// persistent CRR, every message back), then request-reply through
/// `stackbench serve --protocol amqp --broker` as the responder
/// application, non-persistent and persistent, with the three sides in the
/// record (driver, responder application, broker), and a run whose
/// responder has gone ending incomplete with the cause named.
#[test]
fn amqp_runs_against_a_broker_put_get_and_request_reply() {
    let test = "amqp_runs_against_a_broker_put_get_and_request_reply";
    let broker = match Broker::start() {
        Ok(b) => b,
        Err(skip) => return skip.skip(test),
    };
    let target = broker.url();
    put_get_through(&target);
    sasl_plain_through(broker.port());
    request_reply_through(&target, broker.pids());
}

/// SASL PLAIN with the password from a file (RabbitMQ's `guest` may log in
/// from loopback); a wrong password is refused in one line before the run.
fn sasl_plain_through(port: u16) {
    let dir = std::env::temp_dir().join(format!("stackbench-amqp-pw-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (good, bad) = (dir.join("good"), dir.join("bad"));
    std::fs::write(&good, "guest\n").unwrap();
    std::fs::write(&bad, "not-the-password\n").unwrap();
    let target = format!("amqp://guest@127.0.0.1:{port}");
    let flags = |file: &std::path::Path| {
        [
            "--protocol",
            "amqp",
            "--amqp-pattern",
            "put-get",
            "--target",
            &target,
            "--amqp-password-file",
            file.to_str().unwrap(),
        ]
        .map(str::to_string)
    };
    let good_flags = flags(&good);
    let args: Vec<&str> = good_flags.iter().map(String::as_str).collect();
    let record = run_json("RR1(100B/100B)", 50, &args);
    assert_eq!(record["classes"][0]["transactions"].as_u64(), Some(50));
    assert_eq!(record["settings"]["target"], target.as_str());
    let bad_flags = flags(&bad);
    let args: Vec<&str> = bad_flags.iter().map(String::as_str).collect();
    refused(
        "run",
        &[&["RR1(100B/100B)"], &args[..]].concat(),
        "refused the SASL login",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn put_get_through(target: &str) {
    let put_get = [
        "--protocol",
        "amqp",
        "--amqp-pattern",
        "put-get",
        "--amqp-queues",
        "per-client",
        "--amqp-queue",
        "/queue/it-pg",
        "--target",
        target,
    ];
    let record = run_json("RR2(1kB/1kB)", 200, &put_get);
    let c = &record["classes"][0];
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(200), Some(0)),
        "{c}"
    );
    let persistent = [
        &put_get[..],
        &["--amqp-persistent", "--crr-close", "client"],
    ]
    .concat();
    let record = run_json("CRR2(100B/100B)", 20, &persistent);
    let c = &record["classes"][0];
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(20), Some(0)),
        "{c}"
    );
    refused(
        "run",
        &[&["CRR1(1B/1B)"], &put_get[..]].concat(),
        "does not close a connection after a reply",
    );
}

fn request_reply_through(target: &str, broker_pids: Vec<u32>) {
    let queue = ["--amqp-queue", "/queue/it-rr"];
    let mut responder = stackbench()
        .args([
            "serve",
            "--protocol",
            "amqp",
            "--broker",
            target,
            "--threads",
            "2",
        ])
        .args(queue)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(responder.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("responding: 2 connections"), "{first}");
    let flags = [&["--protocol", "amqp", "--target", target], &queue[..]].concat();
    let record = run_json("RR3(1kB/2kB)", 2000, &flags);
    let c = &record["classes"][0];
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(2000), Some(0)),
        "{c}"
    );
    // Three sides: the driver, the responder application, the broker.
    let application = &record["responder_application"];
    assert_eq!(
        application["found_by"], "broker_connections",
        "{application}"
    );
    assert_eq!(application["pids"], serde_json::json!([responder.id()]));
    let server = &record["server_process"];
    let found: Vec<u64> = server["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert!(
        found.iter().all(|p| broker_pids.contains(&(*p as u32))),
        "{server}"
    );
    // Process CPU in clock ticks (10 ms): the driver's share of a short
    // window may round to none; the broker and the responder do work.
    let process = |side: &str| c["cpu"][side]["process_cpu_us_per_tran"].as_f64();
    assert!(process("client").is_some(), "{}", c["cpu"]);
    for side in ["server", "application"] {
        assert!(
            process(side).is_some_and(|us| us > 0.0),
            "{side}: {}",
            c["cpu"]
        );
    }

    // Persistent: durable messages, each put accepted; the broker's
    // storage bytes per transaction are in the record.
    let persistent = [&flags[..], &["--amqp-persistent"]].concat();
    let record = run_json("RR2(1kB/1kB)", 100, &persistent);
    let c = &record["classes"][0];
    assert_eq!(
        (c["transactions"].as_u64(), c["errors"].as_u64()),
        (Some(100), Some(0)),
        "{c}"
    );
    assert!(
        c["cpu"]["server"]["disk"]["write_bytes_per_tran"].is_number(),
        "{}",
        c["cpu"]
    );

    // Stopped, the responder says what it answered.
    // SAFETY: kill(2) on the child this test started.
    unsafe { libc::kill(responder.id() as libc::pid_t, libc::SIGTERM) };
    let status = responder.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let counts = lines.map(Result::unwrap).collect::<Vec<_>>().join(" ");
    let requests: u64 = counts
        .split_once("requests=")
        .and_then(|(_, r)| r.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{counts}"));
    assert!(requests >= 2100, "{counts}");

    // No responder: a bounded wait, an incomplete run that says why.
    let out = stackbench()
        .args(["run", "RR1(1kB/1kB)", "--duration", "2s", "--warmup", "0s"])
        .args(["--no-store"])
        .args(&flags)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains("no response answered a request"), "{said}");
    // The record says why the third side is absent.
    assert!(
        said.contains("responder application not measured"),
        "{said}"
    );
}

#[test]
fn bad_responder_application_input_is_refused_in_one_line() {
    let serve = |args: &[&str], needle: &str| {
        let mut all = vec!["--protocol", "amqp"];
        all.extend_from_slice(args);
        refused("serve", &all, needle);
    };
    serve(
        &["--broker", "http://127.0.0.1:9"],
        "give amqp://[USER@]HOST:PORT",
    );
    serve(
        &["--broker", "amqp://me:secret@127.0.0.1:9"],
        "a password in the URL shows in ps",
    );
    serve(
        &["--broker", "amqp://127.0.0.1"],
        "give HOST:PORT after amqp://",
    );
    serve(
        &["--broker", "amqp://127.0.0.1:9"],
        "broker 127.0.0.1:9: cannot connect",
    );
    serve(
        &["--broker", "amqp://127.0.0.1:9", "--amqp-queue", "a b"],
        "--amqp-queue 'a b'",
    );
    refused(
        "serve",
        &["--broker", "amqp://127.0.0.1:9"],
        "add --protocol amqp",
    );
    refused(
        "serve",
        &["--protocol", "amqp"],
        "serve's protocol is for --hold or --broker",
    );
}
