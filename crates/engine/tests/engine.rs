//! Engine tests against an in-process responder on port 0 on loopback: exact
//! counts for every kind, mixes, IPv6, and several drivers at once.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use stackbench_engine::{
    run_workload, ControlClient, Responder, ResponderConfig, ResponderHandle, RunConfig, RunOutcome,
};
use stackbench_model::{CrrClose, SocketOptions, Transport};

fn responder(listen: &str) -> ResponderHandle {
    let config = ResponderConfig {
        listen: listen.parse().unwrap(),
        threads: 2,
        cpus: vec![],
    };
    Responder::bind(config).unwrap().spawn().unwrap()
}

fn config(workload: &str, transactions: u64) -> RunConfig {
    RunConfig {
        workload: workload.parse().unwrap(),
        duration: None,
        warmup: Duration::ZERO,
        transactions: Some(transactions),
        threads: 2,
        client_cpus: vec![],
        socket: SocketOptions::default(),
        spin: false,
        transport: Transport::Tcp,
    }
}

fn run(handle: &ResponderHandle, cfg: &RunConfig) -> RunOutcome {
    let mut control = ControlClient::connect(&handle.addr().to_string()).unwrap();
    let stop = AtomicBool::new(false);
    run_workload(&mut control, cfg, &stop, &mut |_| {}).unwrap()
}

fn assert_exact(out: &RunOutcome, n: u64) {
    assert!(out.complete, "{:?}", out.incomplete_reason);
    for c in &out.classes {
        assert_eq!(c.transactions, n, "{}", c.notation);
        assert_eq!(c.errors, 0, "{}: {:?}", c.notation, c.error_counts);
        assert_eq!(c.tx_bytes, n * c.request_bytes, "{}", c.notation);
        assert_eq!(c.rx_bytes, n * c.response_bytes, "{}", c.notation);
        assert!(c.latency_us.p50 > 0.0 && c.rate_tps > 0.0, "{c:?}");
    }
}

#[test]
fn rr_counts_are_exact() {
    let h = responder("127.0.0.1:0");
    let out = run(&h, &config("RR10(4kB/4kB)", 1003));
    assert_exact(&out, 1003);
    assert_eq!(out.server_stats[0].transactions, 1003);
    assert_eq!(out.server_stats[0].connections, 10);
}

#[test]
fn crr_counts_are_exact_in_every_close_mode() {
    let h = responder("127.0.0.1:0");
    for close in [CrrClose::Server, CrrClose::Client, CrrClose::Abort] {
        let mut cfg = config("CRR4(64B/8kB)", 201);
        cfg.socket.crr_close = close;
        let out = run(&h, &cfg);
        assert_exact(&out, 201);
        assert_eq!(out.server_stats[0].connections, 201, "{close:?}");
    }
}

#[test]
fn stream_get_and_put_move_every_byte() {
    let h = responder("127.0.0.1:0");
    assert_exact(&run(&h, &config("STR3(1B/2MB)", 7)), 7);
    assert_exact(&run(&h, &config("STR3(2MB/1B)", 7)), 7);
}

#[test]
fn mix_keeps_statistics_per_class() {
    let h = responder("127.0.0.1:0");
    let out = run(&h, &config("RR2(100B/800B)+STR2(1B/1MB)+CRR2(64B/1kB)", 50));
    assert_eq!(out.classes.len(), 3);
    assert_exact(&out, 50);
    assert_eq!(out.classes[1].rx_bytes, 50 * 1024 * 1024);
}

#[test]
fn socket_options_are_applied_without_changing_counts() {
    let h = responder("127.0.0.1:0");
    let mut cfg = config("RR3(2kB/300kB)", 60);
    cfg.socket = SocketOptions {
        nodelay: true,
        waitall: true,
        quickack: true,
        sndbuf_bytes: Some(128 * 1024),
        rcvbuf_bytes: Some(128 * 1024),
        crr_close: CrrClose::Server,
    };
    assert_exact(&run(&h, &cfg), 60);
}

#[test]
fn ipv6_loopback_works() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("skipped: no IPv6 loopback on this machine (enable ::1 to run this test)");
        return;
    }
    let h = responder("[::1]:0");
    assert_exact(&run(&h, &config("RR2(1B/1B)+CRR2(1B/1B)", 100)), 100);
}

#[test]
fn two_drivers_share_one_responder() {
    // Seed 000's zERT set-up: two client instances of 15 connections each.
    let h = responder("127.0.0.1:0");
    std::thread::scope(|s| {
        let a = s.spawn(|| run(&h, &config("RR15(200B/1000B)", 3000)));
        let b = s.spawn(|| run(&h, &config("RR15(200B/1000B)", 3000)));
        assert_exact(&a.join().unwrap(), 3000);
        assert_exact(&b.join().unwrap(), 3000);
    });
}

#[test]
fn duration_bounded_run_reports_its_window() {
    let h = responder("127.0.0.1:0");
    let mut cfg = config("RR2(1B/1B)", 0);
    cfg.transactions = None;
    cfg.duration = Some(Duration::from_millis(1500));
    cfg.warmup = Duration::from_millis(200);
    let out = run(&h, &cfg);
    let c = &out.classes[0];
    assert!(out.complete);
    assert!((c.duration_s - 1.5).abs() < 1e-9, "{}", c.duration_s);
    assert!(c.transactions > 0);
    assert_eq!(c.per_second_tps.len(), 1);
}

#[test]
fn responder_loss_ends_the_run_incomplete() {
    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let mut cfg = config("RR2(1B/1B)", 0);
    cfg.transactions = None;
    // Far longer than the test takes: ending at all shows the loss ended it.
    cfg.duration = Some(Duration::from_secs(300));
    let stop = AtomicBool::new(false);
    let started = std::time::Instant::now();
    let mut killer = Some(h);
    let out = run_workload(&mut control, &cfg, &stop, &mut |p| {
        if p.elapsed > Duration::from_millis(300) {
            killer.take(); // drop = shut the responder down
        }
    })
    .unwrap();
    assert!(!out.complete);
    assert!(out.incomplete_reason.unwrap().contains("responder"));
    // A hang check, not a performance claim: the loss ends the run within
    // about a second; 60 s is far below the 300 s it was set to run.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "hang check: the run went on for {:?} after its responder was gone",
        started.elapsed()
    );
}

#[test]
fn responder_returns_its_cpu_and_memory_samples() {
    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    match control.sample() {
        Ok(stackbench_engine::protocol::Reply::Sample { cpu, memory }) => {
            assert!(!cpu.cpus.is_empty());
            assert!(cpu.process.is_some());
            assert!(memory.unwrap().rss_bytes > 0);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_class_that_measured_nothing_makes_the_run_incomplete() {
    let h = responder("127.0.0.1:0");
    // 2 GB cannot cross loopback in 200 ms: no transaction completes.
    let mut cfg = config("RR1(2GB/1B)", 0);
    cfg.transactions = None;
    cfg.duration = Some(Duration::from_millis(200));
    let out = run(&h, &cfg);
    assert!(!out.complete);
    assert_eq!(
        out.incomplete_reason.as_deref(),
        Some(
            "RR1(2GB/1B): no transaction completed in the 200ms window: \
             lengthen --duration or shrink the request"
        )
    );
    let c = &out.classes[0];
    assert_eq!(c.transactions, 0);
    assert!(c.tx_bytes > 0, "what was measured is kept: {c:?}");
}

#[test]
fn a_count_reached_before_the_duration_ends_the_window() {
    let h = responder("127.0.0.1:0");
    let mut cfg = config("RR2(1B/1B)", 300);
    cfg.duration = Some(Duration::from_secs(60));
    let out = run(&h, &cfg);
    assert_exact(&out, 300);
    let c = &out.classes[0];
    // The window is the time the 300 took, not the 60 s duration.
    assert!(
        c.duration_s > 0.0 && c.duration_s < 59.0,
        "{}",
        c.duration_s
    );
    assert!((c.rate_tps * c.duration_s - 300.0).abs() < 1e-6, "{c:?}");
}

#[test]
fn a_duration_that_ends_before_the_count_makes_the_run_incomplete() {
    let h = responder("127.0.0.1:0");
    let mut cfg = config("RR1(1B/1B)", 1_000_000_000);
    cfg.duration = Some(Duration::from_millis(300));
    let out = run(&h, &cfg);
    assert!(!out.complete);
    let why = out.incomplete_reason.unwrap();
    assert!(
        why.starts_with("RR1(1B/1B): --transactions 1000000000 not reached: ")
            && why.ends_with(
                " done when the 300ms --duration ended; lengthen --duration or lower --transactions"
            ),
        "{why}"
    );
    let c = &out.classes[0];
    assert!(c.transactions > 0 && c.transactions < 1_000_000_000);
    assert!((c.duration_s - 0.3).abs() < 1e-9, "{}", c.duration_s);
}

fn over(transport: Transport, workload: &str, transactions: u64) -> RunConfig {
    RunConfig {
        transport,
        ..config(workload, transactions)
    }
}

/// RR, CRR in every close mode, and STR both ways over one transport.
fn every_kind_over(transport: Transport) {
    let h = responder("127.0.0.1:0");
    let out = run(&h, &over(transport, "RR10(4kB/4kB)", 1003));
    assert_exact(&out, 1003);
    assert_eq!(out.server_stats[0].connections, 10);
    for close in [CrrClose::Server, CrrClose::Client, CrrClose::Abort] {
        let mut cfg = over(transport, "CRR4(64B/8kB)", 201);
        cfg.socket.crr_close = close;
        let out = run(&h, &cfg);
        assert_exact(&out, 201);
        assert_eq!(out.server_stats[0].connections, 201, "{close:?}");
    }
    assert_exact(&run(&h, &over(transport, "STR3(1B/2MB)", 7)), 7);
    assert_exact(&run(&h, &over(transport, "STR3(2MB/1B)", 7)), 7);
    // Options the transport lacks are skipped, not failed on.
    let mut cfg = over(transport, "RR3(2kB/300kB)", 60);
    cfg.socket = SocketOptions {
        nodelay: true,
        waitall: true,
        quickack: true,
        sndbuf_bytes: Some(128 * 1024),
        rcvbuf_bytes: Some(128 * 1024),
        crr_close: CrrClose::Server,
    };
    assert_exact(&run(&h, &cfg), 60);
}

#[test]
fn every_kind_runs_over_unix_sockets() {
    every_kind_over(Transport::Unix);
}

#[test]
fn unix_socket_directories_are_removed_when_tests_stop() {
    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = stackbench_engine::protocol::TestSpec {
        kind: stackbench_model::Kind::Rr,
        request_bytes: 1,
        response_bytes: 1,
        socket: SocketOptions::default(),
        spin: false,
    };
    let (id, endpoints) = control.start(spec, Transport::Unix, 1, 1).unwrap();
    // One path per responder worker, in one private directory.
    assert_eq!(endpoints.len(), 2);
    let stackbench_engine::transport::Endpoint::Unix(path) = &endpoints[0] else {
        panic!("{endpoints:?}");
    };
    assert!(path.exists());
    let dir = path.parent().unwrap().to_path_buf();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    control.stop(id).unwrap();
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn every_kind_runs_over_mptcp() {
    let target = "127.0.0.1:1".parse().unwrap();
    if let Err(e) = stackbench_engine::transport::check_usable(Transport::Mptcp, target) {
        eprintln!("skipped: {e}");
        return;
    }
    every_kind_over(Transport::Mptcp);
    // The responder checks every accepted connection with MPTCP_INFO: a
    // fallback to plain TCP would have made the runs above incomplete.
    let h = responder("127.0.0.1:0");
    let out = run(&h, &over(Transport::Mptcp, "RR2(1B/1B)", 100));
    assert_eq!(out.server_stats[0].mptcp_fallbacks, 0);
    assert_eq!(out.server_stats[0].connections, 2);
}

#[test]
fn ipv6_spreads_over_responder_ports() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("skipped: no IPv6 loopback on this machine (enable ::1 to run this test)");
        return;
    }
    let h = responder("[::1]:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = stackbench_engine::protocol::TestSpec {
        kind: stackbench_model::Kind::Rr,
        request_bytes: 1,
        response_bytes: 1,
        socket: SocketOptions::default(),
        spin: false,
    };
    let (id, endpoints) = control.start(spec, Transport::Tcp, 3, 3).unwrap();
    assert_eq!(endpoints.len(), 3, "{endpoints:?}");
    control.stop(id).unwrap();
}
