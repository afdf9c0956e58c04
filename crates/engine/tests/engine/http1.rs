//! `protocol http1` against the embedded responder: RR, CRR (every close
//! mode) and STR count exactly and move the bytes the codec says; a lone
//! connection (direct waiting on both sides) too; `io uring` runs it on
//! epoll with the one-line reason; a plain server's statuses are counted
//! per code, its chunked answers decoded, and its non-2xx answers make
//! the run incomplete only above `http_error_share`; a malformed response
//! ends the run incomplete with the fault, not a panic.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;

use stackbench_engine::app::http1::Client;
use stackbench_engine::app::{ClassShape, Codec};
use stackbench_engine::{iomode, run_workload, ControlClient, RunConfig, RunOutcome};
use stackbench_model::settings::{CertType, CipherSuite, SettingValue};
use stackbench_model::{AppProtocol, CrrClose, IoMode, TlsParams, Transport};

use super::{config, responder, run};

fn http(workload: &str, transactions: u64) -> RunConfig {
    RunConfig {
        protocol: AppProtocol::Http1,
        ..config(workload, transactions)
    }
}

/// Exact counts, and the bytes of `n` of the codec's requests and of the
/// responder's answers.
fn assert_http_exact(cfg: &RunConfig, out: &RunOutcome, n: u64) {
    assert!(out.complete, "{:?}", out.incomplete_reason);
    for (c, spec) in out.classes.iter().zip(&cfg.workload.classes) {
        let codec = Client::of(&ClassShape {
            h2: Default::default(),
            kind: spec.kind,
            request_bytes: spec.request_bytes,
            response_bytes: spec.response_bytes,
            crr_close: cfg.socket.crr_close,
            target: None,
            tn3270: Default::default(),
            amqp: Default::default(),
        });
        assert_eq!(c.transactions, n, "{}", c.notation);
        assert_eq!(c.errors, 0, "{}: {:?}", c.notation, c.error_counts);
        assert_eq!(c.tx_bytes, n * codec.request_bytes(), "{}", c.notation);
        assert_eq!(c.rx_bytes, n * codec.answer_bytes(), "{}", c.notation);
        let codes = &c.http_status.as_ref().expect("statuses counted").codes;
        assert_eq!(codes, &[(200, n)].into(), "{}", c.notation);
    }
    let server = &out.server_stats[0];
    assert_eq!(server.transactions, n);
    assert_eq!(server.errors, 0);
}

#[test]
fn rr_keeps_its_connections_and_counts_exactly() {
    let h = responder("127.0.0.1:0");
    let cfg = http("RR10(100B/8kB)", 1003);
    let out = run(&h, &cfg);
    assert_http_exact(&cfg, &out, 1003);
    // Sizes are whole messages: the notation's, on the wire.
    let c = &out.classes[0];
    assert_eq!(c.tx_bytes, 1003 * c.request_bytes);
    assert_eq!(c.rx_bytes, 1003 * c.response_bytes);
    assert_eq!(out.server_stats[0].connections, 10);
}

#[test]
fn crr_opens_a_connection_per_transaction_in_every_close_mode() {
    let h = responder("127.0.0.1:0");
    for close in [CrrClose::Server, CrrClose::Client, CrrClose::Abort] {
        let mut cfg = http("CRR4(100B/8kB)", 201);
        cfg.socket.crr_close = close;
        let out = run(&h, &cfg);
        assert_http_exact(&cfg, &out, 201);
        assert_eq!(out.server_stats[0].connections, 201, "{close:?}");
    }
}

#[test]
fn streams_are_a_get_of_a_large_body_or_a_post_of_one() {
    let h = responder("127.0.0.1:0");
    for workload in ["STR2(1B/2MB)", "STR2(2MB/1B)"] {
        let cfg = http(workload, 7);
        assert_http_exact(&cfg, &run(&h, &cfg), 7);
    }
}

/// The protocol is independent of the transport: every kind over tcp,
/// unix and inline TLS (the transports that need nothing from the host).
#[test]
fn every_kind_runs_over_every_transport() {
    let h = responder("127.0.0.1:0");
    for transport in [Transport::Tcp, Transport::Unix, Transport::Tls] {
        for workload in ["RR3(200B/3kB)", "CRR2(100B/8kB)", "STR2(100B/1MB)"] {
            let mut cfg = RunConfig {
                transport,
                ..http(workload, 31)
            };
            if transport == Transport::Tls {
                let suite = CipherSuite::parse("1301").unwrap();
                let params =
                    TlsParams::resolve(None, Some(suite), None, CertType::Rsa2048, None, None);
                cfg.tls = Some(params.unwrap());
            }
            let out = run(&h, &cfg);
            assert_http_exact(&cfg, &out, 31);
        }
    }
}

#[test]
fn a_lone_connection_is_driven_and_served_directly() {
    let h = super::responder_threads("127.0.0.1:0", 1);
    let mut cfg = http("RR1(300B/20kB)", 500);
    cfg.threads = 1;
    assert_http_exact(&cfg, &run(&h, &cfg), 500);
}

#[test]
fn io_uring_refuses_http1_and_the_run_measures_epoll() {
    let mut cfg = http("RR8(100B/1kB)", 100);
    cfg.io = IoMode::Uring;
    let (io, why) = iomode::effective(&cfg);
    assert_eq!(io, IoMode::Epoll);
    if iomode::uring_available().is_ok() {
        let why = why.expect("a reason");
        assert!(
            why.contains("protocol http1 is not covered by the io_uring backend"),
            "{why}"
        );
    }
    // auto, which would take io_uring for this raw workload, takes epoll.
    cfg.io = IoMode::Auto;
    assert_eq!(iomode::auto_choice(&cfg), IoMode::Epoll);
    let h = responder("127.0.0.1:0");
    cfg.io = IoMode::Uring;
    assert_http_exact(&cfg, &run(&h, &cfg), 100);
}

/// A plain server on loopback that answers every request head with `answer`.
fn plain_server(answer: &'static [u8]) -> String {
    scripted_server(vec![answer])
}

/// A plain server on loopback that answers request n (counted over all its
/// connections, each kept alive) with `answers[n % answers.len()]`.
fn scripted_server(answers: Vec<&'static [u8]>) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let answers: Arc<[&'static [u8]]> = answers.into();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (served, answers) = (Arc::clone(&served), Arc::clone(&answers));
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&buf[..n]);
                    if head.windows(4).any(|w| w == b"\r\n\r\n") {
                        head.clear();
                        let n = served.fetch_add(1, Ordering::Relaxed);
                        if conn.write_all(answers[n % answers.len()]).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

fn run_plain(target: &str, cfg: &RunConfig) -> RunOutcome {
    let mut control = ControlClient::connect(target).unwrap();
    assert!(control.is_plain());
    let stop = AtomicBool::new(false);
    run_workload(&mut control, cfg, &stop, &mut |_| {}).unwrap()
}

#[test]
fn a_plain_server_is_driven_without_a_control_connection() {
    let target = plain_server(b"HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5\r\n\r\nhello");
    let out = run_plain(&target, &http("RR3(100B/100B)", 30));
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let c = &out.classes[0];
    assert_eq!(c.transactions, 30);
    // The server's own answer, not the notation's size: what moved.
    assert_eq!(c.rx_bytes, 30 * 54);
    // No responder: no counters from it.
    assert_eq!(out.server_stats[0].transactions, 0);
}

#[test]
fn a_bad_response_ends_the_run_incomplete_with_the_fault() {
    let cases: [(&'static [u8], &str); 2] = [
        (
            b"HTPP/1.1 200 OK\r\n\r\n",
            "malformed HTTP response to GET /",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            "Transfer-Encoding gzip",
        ),
    ];
    for (answer, needle) in cases {
        let target = plain_server(answer);
        let out = run_plain(&target, &http("RR2(100B/100B)", 10));
        assert!(!out.complete);
        let reason = out.incomplete_reason.unwrap();
        assert!(
            reason.contains("that protocol http1 refuses (the first: "),
            "{reason}"
        );
        assert!(reason.contains(needle), "{reason}");
        assert!(!reason.contains('\n'), "{reason}");
        assert!(out.classes[0].errors >= 1);
    }
}

/// The answers of a [`scripted_server`], by request number (over all its
/// connections) modulo 3: a Content-Length 200, a chunked 200 (with an
/// extension and a trailer), a 404 with a body.
const SCRIPT: [&[u8]; 3] = [
    b"HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n4\r\ndefg\r\n0\r\nX-T: 1\r\n\r\n",
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
];

/// Every third answer a 404, every third chunked: each code counted
/// exactly, the 404s as errors that leave the connections open, the bytes
/// those that moved; the run is complete under the bound and incomplete,
/// naming the codes, above it.
#[test]
fn statuses_are_counted_per_code_and_bound_the_run() {
    let moved: u64 = SCRIPT.iter().map(|a| 10 * a.len() as u64).sum();
    let mut cfg = http("RR3(100B/100B)", 30);
    cfg.http_error_share_pct = 34.0;
    let out = run_plain(&scripted_server(SCRIPT.to_vec()), &cfg);
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let c = &out.classes[0];
    assert_eq!(c.transactions, 30);
    let status = c.http_status.as_ref().expect("statuses counted");
    assert_eq!(status.codes, [(200, 20), (404, 10)].into());
    assert_eq!((c.error_counts.http_status, c.errors), (10, 10));
    // The server's own sizes, not the notation's: what moved.
    assert_eq!(c.rx_bytes, moved);
    // Keep-alive through the 404s: one connection per client.
    let served = c.served_by.as_ref().unwrap();
    assert_eq!(served.driver.epoll + served.driver.io_uring, 3);

    // A third of the answers 404 is above the default bound (1%).
    let mut cfg = http("RR3(100B/100B)", 30);
    cfg.http_error_share_pct = 1.0;
    let out = run_plain(&scripted_server(SCRIPT.to_vec()), &cfg);
    assert!(!out.complete);
    let reason = out.incomplete_reason.unwrap();
    assert!(
        reason.contains("10 of 30 responses were not 2xx (33.3%: 404 ×10)"),
        "{reason}"
    );
    assert!(reason.contains("http_error_share 1%"), "{reason}");
    assert!(!reason.contains('\n'), "{reason}");
    // What was measured is kept.
    let c = &out.classes[0];
    assert_eq!(c.transactions, 30);
    assert_eq!(c.http_status.as_ref().unwrap().codes.get(&404), Some(&10));
}

#[test]
fn a_plain_server_needs_protocol_http1() {
    let target = plain_server(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    let mut control = ControlClient::connect(&target).unwrap();
    let stop = AtomicBool::new(false);
    let Err(e) = run_workload(&mut control, &config("RR1(1B/1B)", 1), &stop, &mut |_| {}) else {
        panic!("raw payloads to a plain server were not refused");
    };
    assert!(e.to_string().contains("run it with protocol http1"), "{e}");
}

/// What the embedded responder does with one client's bytes: the answer it
/// wrote until it closed, and its counters for the test.
fn responder_answer(sent: &[u8]) -> (Vec<u8>, stackbench_engine::control::ServerTestStats) {
    use stackbench_engine::control::TestSpec;
    use stackbench_engine::transport::Endpoint;
    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = TestSpec {
        kind: stackbench_model::Kind::Rr,
        request_bytes: 100,
        response_bytes: 100,
        socket: Default::default(),
        spin: false,
        io: IoMode::Epoll,
        protocol: AppProtocol::Http1,
        tn3270: Default::default(),
    };
    let (id, endpoints) = control.start(spec, Transport::Tcp, 1, 1).unwrap();
    let Endpoint::Inet(addr) = endpoints[0] else {
        panic!("{endpoints:?}");
    };
    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    // A hang check, not a timing claim.
    conn.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    conn.write_all(sent).unwrap();
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    (answer, control.stop(id).unwrap())
}

#[test]
fn the_responder_closes_on_a_bad_request_and_counts_an_error() {
    // A pipelined second request is refused, not taken for a body.
    let two = b"GET /5 HTTP/1.1\r\nHost: h\r\n\r\nGET /5 HTTP/1.1\r\nHost: h\r\n\r\n";
    let (answer, stats) = responder_answer(two);
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    assert_eq!((stats.transactions, stats.errors), (0, 1));
    let (answer, stats) = responder_answer(b"HELLO\r\n\r\n");
    assert!(answer.is_empty());
    assert_eq!((stats.transactions, stats.errors), (0, 1));
    // A good request asking to close is answered, then closed.
    let (answer, stats) =
        responder_answer(b"GET /5 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert_eq!(
        answer,
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n\0\0\0\0\0"
    );
    assert_eq!((stats.transactions, stats.errors), (1, 0));
}
