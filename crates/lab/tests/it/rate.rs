//! The link rate holds: one TCP stream (a STR flow) from client to server
//! across a 100 Mbit/s link carries the rate within 5%.
//! Bounded: the sender stops after 2.5 s and every read times out.
//!
//! tbf counts whole frames, so the expected payload rate is the link rate
//! × MSS / frame: 1448 payload bytes (MTU 1500 − 20 IPv4 − 20 TCP − 12 TCP
//! timestamps) per 1514-byte frame (+ 14 Ethernet). The first 0.5 s are left
//! out: the full token bucket lets one burst through at the start.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use stackbench_lab::{netns, up};
use stackbench_testkit::can_make_namespaces;

use crate::common::{two_hosts, LabGuard};

const RATE_BPS: f64 = 100e6;
const SEND_FOR: Duration = Duration::from_millis(2500);
const SKIP: Duration = Duration::from_millis(500);

/// Receives until the sender closes; returns (bytes after `SKIP`, seconds they took).
fn receive(listener: TcpListener) -> (u64, f64) {
    let (mut conn, _) = listener.accept().unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let (mut first, mut counted_from, mut last) = (None, None, Instant::now());
    let mut counted = 0u64;
    loop {
        let n = conn.read(&mut buf).expect("read within 5 s");
        if n == 0 {
            break;
        }
        let now = Instant::now();
        let start = *first.get_or_insert(now);
        if now.duration_since(start) >= SKIP {
            counted_from.get_or_insert(now);
            counted += n as u64;
            last = now;
        }
    }
    let from = counted_from.expect("data after the first 0.5 s");
    (counted, last.duration_since(from).as_secs_f64())
}

#[test]
fn a_stream_across_a_100mbit_link_holds_the_rate_within_5_percent() {
    if !can_make_namespaces("a_stream_holds_the_rate") {
        return;
    }
    let guard = LabGuard::new(&two_hosts("trate", "rate = \"100Mbit\""));
    up(&guard.0).unwrap();
    let (server_ns, client_ns) = (
        netns::open("sb-trate-server").unwrap(),
        netns::open("sb-trate-client").unwrap(),
    );
    let (server_ns, client_ns) = (&server_ns, &client_ns);
    let addr: SocketAddr = "10.77.1.2:7002".parse().unwrap();
    let (counted, secs) = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let receiver = s.spawn(move || {
            netns::enter(server_ns.as_fd()).unwrap();
            let listener = TcpListener::bind(addr).unwrap();
            tx.send(()).unwrap();
            receive(listener)
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("receiver listening");
        s.spawn(|| {
            netns::enter(client_ns.as_fd()).unwrap();
            let mut c = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
            c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
            let chunk = vec![0x5au8; 64 * 1024];
            let start = Instant::now();
            while start.elapsed() < SEND_FOR {
                c.write_all(&chunk).unwrap();
            }
        });
        receiver.join().unwrap()
    });
    let expected = RATE_BPS / 8.0 * 1448.0 / 1514.0;
    let measured = counted as f64 / secs;
    let ratio = measured / expected;
    eprintln!("100Mbit link: {measured:.0} B/s payload over {secs:.2} s, expected {expected:.0} ({ratio:.3}×)");
    assert!(
        (0.95..=1.05).contains(&ratio),
        "payload rate {measured:.0} B/s is {ratio:.3}× the expected {expected:.0}"
    );
}
