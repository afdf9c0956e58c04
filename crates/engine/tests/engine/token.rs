//! The run token on the control channel and the bounds a responder sets on
//! what a driver may ask: the right token served, a wrong one and none
//! refused in one line and counted, an older driver's hello refused naming
//! both versions, and every bound refused in one line naming its flag.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use stackbench_engine::control::{self, Reply, TestSpec};
use stackbench_engine::responder::ResponderLimits;
use stackbench_engine::token::Token;
use stackbench_engine::{ControlClient, EngineError, Responder, ResponderConfig, ResponderHandle};
use stackbench_model::{IoMode, Kind, SocketOptions, Transport};

fn responder(token: Option<Token>, limits: ResponderLimits) -> ResponderHandle {
    let config = ResponderConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        threads: 1,
        cpus: vec![],
        token,
        limits,
    };
    Responder::bind(config).unwrap().spawn().unwrap()
}

fn refusal(r: Result<ControlClient, EngineError>) -> String {
    match r {
        Ok(_) => panic!("the responder served a driver it should refuse"),
        Err(e) => e.to_string(),
    }
}

fn spec(response_bytes: u64) -> TestSpec {
    TestSpec {
        kind: Kind::Rr,
        request_bytes: 64,
        response_bytes,
        socket: SocketOptions::default(),
        spin: false,
        io: IoMode::Epoll,
        protocol: Default::default(),
        tn3270: Default::default(),
    }
}

/// The responder's refused count, as a driver with the token reads it.
fn refused_count(addr: &str, token: &Token) -> u64 {
    let mut c = ControlClient::connect_with(addr, Some(token)).unwrap();
    match c.sample().unwrap() {
        Reply::Sample { refused_peers, .. } => refused_peers,
        other => panic!("{other:?}"),
    }
}

#[test]
fn control_connections_without_the_token_are_refused_and_counted() {
    let token = Token::generate();
    let h = responder(Some(token.clone()), ResponderLimits::default());
    let addr = h.addr().to_string();
    let mut ok = ControlClient::connect_with(&addr, Some(&token)).unwrap();
    assert_eq!(ok.refused_peers(), Some(0));

    let none = refusal(ControlClient::connect(&addr));
    assert!(none.contains("has no token"), "{none}");
    let other = refusal(ControlClient::connect_with(&addr, Some(&Token::generate())));
    assert!(other.contains("another token"), "{other}");
    for why in [&none, &other] {
        assert!(!why.contains('\n') && why.contains("--token-file"), "{why}");
    }

    // An older driver opens with its hello: refused naming both versions,
    // in the reply it reads.
    let mut old = TcpStream::connect(h.addr()).unwrap();
    writeln!(
        old,
        r#"{{"type":"hello","version":5,"software":"stackbench 0.0.9"}}"#
    )
    .unwrap();
    let mut line = String::new();
    BufReader::new(&old).read_line(&mut line).unwrap();
    let reply: Reply = serde_json::from_str(&line).unwrap();
    let Reply::Error { message } = reply else {
        panic!("{line}");
    };
    assert!(
        message.contains("protocol version 5")
            && message.contains(&format!("speaks {}", control::PROTOCOL_VERSION)),
        "{message}"
    );

    // The admitted driver is still served, and reads the count. A refusal
    // is counted when the responder's handshake thread ends, which may be
    // after the refused driver has returned (the driver that refused the
    // responder's proof does not wait for it): read until all three are in.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        ok.sample().unwrap();
        if ok.refused_peers() == Some(3) || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(ok.refused_peers(), Some(3));
    assert_eq!(refused_count(&addr, &token), 3);
}

#[test]
fn an_open_responder_serves_drivers_with_and_without_a_token() {
    let h = responder(None, ResponderLimits::default());
    let addr = h.addr().to_string();
    ControlClient::connect(&addr).unwrap();
    ControlClient::connect_with(&addr, Some(&Token::generate())).unwrap();
}

#[test]
fn what_a_driver_asks_beyond_the_bounds_is_refused_naming_the_flag() {
    let limits = ResponderLimits {
        sessions: 2,
        tests_per_session: 1,
        clients_per_test: 4,
        message_bytes: 1024,
        session: Duration::from_secs(3600),
    };
    let h = responder(None, limits);
    let addr = h.addr().to_string();
    let mut c = ControlClient::connect(&addr).unwrap();
    let refused = |r: Result<(u64, Vec<_>), EngineError>| match r {
        Ok(_) => panic!("a test beyond the bounds started"),
        Err(e) => e.to_string(),
    };
    let e = refused(c.start(spec(2048), Transport::Tcp, 1, 1));
    assert!(
        e.contains("2048 bytes") && e.contains("--max-message-bytes"),
        "{e}"
    );
    let e = refused(c.start(spec(64), Transport::Tcp, 5, 1));
    assert!(
        e.contains("5 connections") && e.contains("--max-clients"),
        "{e}"
    );
    let (id, _) = c.start(spec(1024), Transport::Tcp, 4, 1).unwrap();
    let e = refused(c.start(spec(64), Transport::Tcp, 1, 1));
    assert!(e.contains("--max-tests"), "{e}");
    c.stop(id).unwrap();
    c.start(spec(64), Transport::Tcp, 1, 1).unwrap();
    // Two sessions at once, not three.
    let _second = ControlClient::connect(&addr).unwrap();
    let e = refusal(ControlClient::connect(&addr));
    assert!(e.contains("--max-sessions") && !e.contains('\n'), "{e}");
}

#[test]
fn a_control_connection_is_ended_at_the_session_limit() {
    let limits = ResponderLimits {
        session: Duration::from_secs(1),
        ..ResponderLimits::default()
    };
    let h = responder(None, limits);
    let mut c = ControlClient::connect(&h.addr().to_string()).unwrap();
    c.start(spec(64), Transport::Tcp, 1, 1).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let e = c.sample().unwrap_err().to_string();
    assert!(e.contains("--max-session") && e.contains("1 s"), "{e}");
}
