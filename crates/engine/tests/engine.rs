//! Engine tests against an in-process responder on port 0 on loopback: exact
//! counts for every kind, mixes, IPv6, and several drivers at once; user
//! populations (think time, open loop, ramp) checked by their arithmetic
//! (Little's law, offered against achieved rate), never by speed.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use stackbench_engine::{
    run_workload, ControlClient, PacingConfig, Responder, ResponderConfig, ResponderHandle,
    RunConfig, RunOutcome,
};
use stackbench_model::settings::GenSched;
use stackbench_model::{Arrivals, CrrClose, IoMode, PerSecond, SocketOptions, Spin, Transport};
use stackbench_record::{ClassResult, PacingMode};

fn responder(listen: &str) -> ResponderHandle {
    responder_threads(listen, 2)
}

fn responder_threads(listen: &str, threads: usize) -> ResponderHandle {
    let config = ResponderConfig {
        listen: listen.parse().unwrap(),
        threads,
        cpus: vec![],
        token: None,
        limits: Default::default(),
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
        class_workers: false,
        client_cpus: vec![],
        socket: SocketOptions::default(),
        spin: Spin::None,
        gen_sched: GenSched::Default,
        pacing: PacingConfig {
            seed: 7,
            ..PacingConfig::default()
        },
        transport: Transport::Tcp,
        tls: None,
        priority: None,
        io: IoMode::Epoll,
        protocol: Default::default(),
        amqp: Default::default(),
        h2: Default::default(),
        http_error_share_pct: 1.0,
        tn3270: Default::default(),
        path: Default::default(),
        segment: Default::default(),
        live_metrics: false,
    }
}

/// A duration-bounded run of `workload`.
fn timed(workload: &str, warmup_ms: u64, duration_ms: u64) -> RunConfig {
    let mut cfg = config(workload, 0);
    cfg.transactions = None;
    cfg.warmup = Duration::from_millis(warmup_ms);
    cfg.duration = Some(Duration::from_millis(duration_ms));
    cfg
}

/// X(R+Z)/N − 1 of a paced class: Little's law says 0.
fn little_off(c: &ClassResult) -> f64 {
    let p = c.population.as_ref().expect("population figures");
    let busy_us = p
        .latency_uncorrected_us
        .or(c.latency_us)
        .expect("a latency")
        .mean;
    c.rate_tps * (busy_us / 1e6 + p.wait_mean_s.unwrap()) / f64::from(c.clients) - 1.0
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
        assert!(c.latency_us.unwrap().p50 > 0.0 && c.rate_tps > 0.0, "{c:?}");
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
        busy_poll_us: Some(50),
        priority: None,
        cork: false,
    };
    assert_exact(&run(&h, &cfg), 60);
}

/// Busy-polling changes when a side looks for events, never what it counts:
/// every side choice keeps RR and CRR counts exact (the responder learns its
/// part from the start message).
#[test]
fn every_spin_choice_keeps_counts_exact() {
    let h = responder("127.0.0.1:0");
    for spin in [Spin::Driver, Spin::Responder, Spin::Both] {
        let mut cfg = config("RR2(1B/1B)+CRR2(64B/1kB)", 300);
        cfg.spin = spin;
        let out = run(&h, &cfg);
        assert_exact(&out, 300);
        assert_eq!(out.server_stats[0].transactions, 300, "{spin:?}");
    }
}

#[test]
fn ipv6_loopback_works() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        let why = "no IPv6 loopback on this machine (enable ::1 to run this test)";
        return stackbench_testkit::skip(
            stackbench_testkit::Tier::Ipv6,
            "ipv6_loopback_works",
            why,
        );
    }
    let h = responder("[::1]:0");
    assert_exact(&run(&h, &config("RR2(1B/1B)+CRR2(1B/1B)", 100)), 100);
}

#[test]
fn two_drivers_share_one_responder() {
    // As z/OS's zERT enforcement measurements: two client instances of 15
    // connections each.
    let h = responder("127.0.0.1:0");
    std::thread::scope(|s| {
        let a = s.spawn(|| run(&h, &config("RR15(200B/1000B)", 3000)));
        let b = s.spawn(|| run(&h, &config("RR15(200B/1000B)", 3000)));
        assert_exact(&a.join().unwrap(), 3000);
        assert_exact(&b.join().unwrap(), 3000);
    });
}

#[test]
fn a_directly_served_connection_does_not_hold_up_new_ones() {
    // One responder worker: driver A's single RR1 connection has it to
    // itself, so both sides serve it with blocking calls (direct waiting).
    // Driver B's connections arrive meanwhile and must be accepted and
    // served while A still runs, with exact counts on both.
    let h = responder_threads("127.0.0.1:0", 1);
    let a_done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            let mut cfg = timed("RR1(1B/1B)", 0, 3000);
            cfg.threads = 1;
            let out = run(&h, &cfg);
            a_done.store(true, std::sync::atomic::Ordering::SeqCst);
            out
        });
        std::thread::sleep(Duration::from_millis(500));
        let b = run(&h, &config("RR4(100B/1000B)+STR1(1B/2MB)", 200));
        assert!(
            !a_done.load(std::sync::atomic::Ordering::SeqCst),
            "B was served only after A's 3 s run ended"
        );
        assert_exact(&b, 200);
        let a = a.join().unwrap();
        assert!(a.complete, "{:?}", a.incomplete_reason);
        assert!(a.classes[0].transactions > 0 && a.classes[0].errors == 0);
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
        Ok(stackbench_engine::control::Reply::Sample { cpu, memory, .. }) => {
            assert!(!cpu.cpus.is_empty());
            assert!(cpu.process.is_some());
            assert!(memory.unwrap().rss_bytes > 0);
        }
        other => panic!("{other:?}"),
    }
}

/// A user population used to report 0 B of kernel memory per user (it read
/// host-wide sockstat deltas, 0 pages before and during the run); now the
/// run's own sockets are counted instead, on both sides.
#[test]
fn kernel_socket_memory_per_connection_is_measured_on_both_sides() {
    let h = responder("127.0.0.1:0");
    for workload in ["RR64(100B/800B)@1s", "RR64(100B/800B)"] {
        let out = run(&h, &timed(workload, 200, 1000));
        assert!(out.complete, "{workload}: {:?}", out.incomplete_reason);
        let memory = out.classes[0].memory.clone().expect("memory figures");
        for (name, side) in [("client", memory.client), ("server", memory.server)] {
            let side = side.unwrap_or_else(|| panic!("{workload}: no {name} memory"));
            assert_eq!(side.kernel_sock_method.as_deref(), Some("sock_diag"));
            // Every connection is open when the window starts.
            assert_eq!(
                side.kernel_sock_sockets,
                Some(64),
                "{workload} {name}: {side:?}"
            );
            let per_conn = side.kernel_sock_bytes_per_conn.unwrap_or(0.0);
            assert!(
                (256.0..=1_048_576.0).contains(&per_conn),
                "{workload} {name}: {per_conn} B per connection: {side:?}"
            );
        }
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

#[test]
fn think_time_makes_the_rate_n_over_r_plus_z() {
    // 50 users × 20 ms think: about 2,500 tr/s, whatever the machine's speed.
    let h = responder("127.0.0.1:0");
    let out = run(&h, &timed("RR50(100B/800B)@20ms", 300, 2000));
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let c = &out.classes[0];
    let p = c.population.as_ref().unwrap();
    assert_eq!(p.pacing, PacingMode::Think);
    assert_eq!(p.pacing_text.as_deref(), Some("20ms"));
    assert_eq!(p.connected, 50);
    assert_eq!(c.errors, 0);
    let wait = p.wait_mean_s.unwrap();
    // A constant think time is waited at least in full; the driver adds little.
    assert!((0.020..0.030).contains(&wait), "measured think {wait}");
    assert!(
        little_off(c).abs() < 0.05,
        "Little's law off by {}",
        little_off(c)
    );
    assert!(p.generator_lag_us.is_some());
}

#[test]
fn mixed_populations_keep_their_own_pacing() {
    let h = responder("127.0.0.1:0");
    let mut cfg = timed("RR20(100B/800B)@exp:10ms+RR2(1kB/1kB)", 200, 1000);
    // The setting applies to classes without their own pacing.
    cfg.pacing.think = Some(stackbench_model::ThinkTime::Constant(
        Duration::from_millis(5),
    ));
    let out = run(&h, &cfg);
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let (a, b) = (&out.classes[0], &out.classes[1]);
    let pa = a.population.as_ref().unwrap();
    let pb = b.population.as_ref().unwrap();
    assert_eq!(pa.pacing_text.as_deref(), Some("exp:10ms"));
    assert_eq!(pb.pacing_text.as_deref(), Some("5ms"));
    assert!(pa.wait_mean_s.unwrap() > pb.wait_mean_s.unwrap());
    assert!(a.transactions > 0 && b.transactions > 0);
    // Closed loop without a ramp: no population figures.
    let closed = run(&h, &timed("RR2(1B/1B)", 0, 300));
    assert!(closed.classes[0].population.is_none());
}

#[test]
fn think_time_counts_stay_exact() {
    let h = responder("127.0.0.1:0");
    let out = run(
        &h,
        &config("RR5(1B/1B)@1ms+CRR3(1B/1B)@uniform:0s..2ms", 40),
    );
    assert_exact(&out, 40);
}

#[test]
fn open_loop_achieves_a_modest_offered_rate() {
    let h = responder("127.0.0.1:0");
    for arrivals in [Arrivals::Constant, Arrivals::Poisson] {
        let mut cfg = timed("RR4(100B/100B)", 300, 1500);
        cfg.pacing.rate = PerSecond::new(2000.0);
        cfg.pacing.arrivals = arrivals;
        let out = run(&h, &cfg);
        assert!(out.complete, "{:?}", out.incomplete_reason);
        let c = &out.classes[0];
        let p = c.population.as_ref().unwrap();
        assert_eq!(p.pacing, PacingMode::Open);
        assert_eq!(p.offered_rate_tps, Some(2000.0));
        assert_eq!(p.arrivals.as_deref(), Some(arrivals.name()));
        let achieved = c.rate_tps / 2000.0;
        // Poisson counts over 1.5 s vary by about ±2%.
        assert!((0.9..1.1).contains(&achieved), "{arrivals:?}: {achieved}");
        let uncorrected = p.latency_uncorrected_us.unwrap();
        // From the intended send, never less than from the actual one.
        assert!(c.latency_us.unwrap().mean >= uncorrected.mean, "{c:?}");
        assert!(
            little_off(c).abs() < 0.05,
            "Little off by {}",
            little_off(c)
        );
    }
}

#[test]
fn a_ramp_opens_connections_before_the_window() {
    let h = responder("127.0.0.1:0");
    let mut cfg = timed("RR20(1B/1B)", 0, 300);
    cfg.pacing.ramp = PerSecond::new(100.0);
    let out = run(&h, &cfg);
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let p = out.classes[0].population.as_ref().unwrap();
    assert_eq!(p.pacing, PacingMode::Closed);
    assert_eq!(p.connected, 20);
    // The 20th connection opens 190 ms in: arithmetic of the ramp, not speed.
    assert!(p.connect_s >= 0.19, "{}", p.connect_s);
    assert!((out.classes[0].duration_s - 0.3).abs() < 1e-9);
}

/// Transports (tcp, unix, mptcp), connection spreading and descriptor limits.
#[path = "engine/transport.rs"]
mod transport;

#[path = "engine/tls.rs"]
mod tls;

#[path = "engine/tls_rekey.rs"]
mod tls_rekey;
/// The io_uring backend (`io = uring`) and its fallbacks.
#[path = "engine/uring.rs"]
mod uring;

/// CPU per class in a mix: shared workers (`mix`) or its own (`class_workers`).
#[path = "engine/class_cpu.rs"]
mod class_cpu;

/// Every I/O backend runs the same table: each kind × each transport it claims.
#[path = "engine/backends.rs"]
mod backends;

/// Protocol http1: exact counts against the embedded responder on every
/// kind, the io_uring refusal, and a plain server's faults.
#[path = "engine/http1.rs"]
mod http1;

/// Protocol tn3270: logons and records counted exactly against the
/// embedded responder, RR and CRR, and the io_uring refusal.
#[path = "engine/tn3270.rs"]
mod tn3270;

/// The tn3270 codec's logon against a real TN3270 server (the hercules tier).
#[path = "engine/hercules.rs"]
mod hercules;

/// The tn3270 responder against a real TN3270 terminal (s3270; the hercules
/// tier).
#[path = "engine/s3270.rs"]
mod s3270;

// The run token on the control channel, and the responder's bounds.
/// A real broker's processes found by its listening socket and sampled as
/// a plain server's side (the broker tier).
#[path = "engine/broker.rs"]
mod broker;
#[path = "engine/token.rs"]
mod token;
