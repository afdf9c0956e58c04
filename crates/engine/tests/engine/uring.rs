//! `io = uring`: exact counts and bytes for RR and STR both ways over tcp and
//! unix, the same result shape as epoll, and the cases that run on epoll say
//! so.

use stackbench_engine::iomode;
use stackbench_engine::RunConfig;
use stackbench_model::{IoMode, ThinkTime, Transport};

use super::{assert_exact, config, responder, run};

fn uring(transport: Transport, workload: &str, transactions: u64) -> RunConfig {
    RunConfig {
        transport,
        io: IoMode::Uring,
        protocol: Default::default(),
        ..config(workload, transactions)
    }
}

/// Skips (with the reason) where this kernel or sandbox has no io_uring.
fn have_uring() -> bool {
    match iomode::uring_available() {
        Ok(()) => true,
        Err(e) => {
            stackbench_testkit::skip(stackbench_testkit::Tier::Uring, "io_uring tests", &e);
            false
        }
    }
}

#[test]
fn rr_and_str_over_uring_count_every_transaction_and_byte() {
    if !have_uring() {
        return;
    }
    let h = responder("127.0.0.1:0");
    for transport in [Transport::Tcp, Transport::Unix] {
        let cfg = uring(transport, "RR10(4kB/4kB)", 1003);
        assert_eq!(iomode::effective(&cfg), (IoMode::Uring, None));
        let out = run(&h, &cfg);
        assert_exact(&out, 1003);
        let server = out.server_stats[0];
        assert_eq!(server.connections, 10, "{transport:?}");
        assert_eq!(server.transactions, 1003, "{transport:?}");
        assert_eq!(server.rx_bytes, 1003 * 4096, "{transport:?}");
        assert_eq!(server.errors, 0, "{transport:?}");
        // Requests and responses bigger than one I/O chunk, both ways.
        for str in ["STR3(1B/2MB)", "STR3(2MB/1B)"] {
            let out = run(&h, &uring(transport, str, 7));
            assert_exact(&out, 7);
            assert_eq!(out.server_stats[0].transactions, 7, "{transport:?} {str}");
        }
    }
}

#[test]
fn uring_results_have_the_shape_of_epoll_results() {
    if !have_uring() {
        return;
    }
    let h = responder("127.0.0.1:0");
    let keys = |io: IoMode| {
        let cfg = RunConfig {
            io,
            ..config("RR2(64B/1kB)+STR1(1B/256kB)", 40)
        };
        let out = run(&h, &cfg);
        assert_exact(&out, 40);
        out.classes
            .iter()
            .map(|c| {
                let v = serde_json::to_value(c).unwrap();
                let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
                k.sort();
                (k, c.per_second_tps.len())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(IoMode::Uring), keys(IoMode::Epoll));
}

#[test]
fn uring_duration_runs_keep_the_window_rules() {
    if !have_uring() {
        return;
    }
    let h = responder("127.0.0.1:0");
    let mut cfg = super::timed("RR4(1B/1B)", 50, 200);
    cfg.io = IoMode::Uring;
    let out = run(&h, &cfg);
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let c = &out.classes[0];
    assert!((c.duration_s - 0.2).abs() < 1e-9, "{}", c.duration_s);
    assert!(c.transactions > 0 && c.errors == 0, "{c:?}");
    // Requests sent in the window count, answered there or not (as epoll).
    assert!(c.tx_bytes >= c.transactions && c.tx_bytes <= c.transactions + 4);
    // The responder saw the warm-up too, and never fewer than were counted.
    assert!(out.server_stats[0].transactions >= c.transactions);
}

#[test]
fn cases_uring_does_not_cover_run_on_epoll_and_say_which() {
    let cases: [(RunConfig, &str); 5] = [
        (uring(Transport::Tls, "RR1(1B/1B)", 1), "transport tls"),
        (uring(Transport::Mptcp, "RR1(1B/1B)", 1), "transport mptcp"),
        (uring(Transport::Tcp, "CRR1(1B/1B)", 1), "CRR"),
        (uring(Transport::Tcp, "RR1(1B/1B)@10ms", 1), "think time"),
        (
            {
                let mut c = uring(Transport::Tcp, "RR1(1B/1B)", 1);
                c.pacing.ramp = stackbench_model::PerSecond::new(100.0);
                c
            },
            "ramp",
        ),
    ];
    for (cfg, case) in cases {
        let (io, why) = iomode::effective(&cfg);
        assert_eq!(io, IoMode::Epoll, "{case}");
        let why = why.expect("a fallback says why");
        assert!(why.contains(case), "{why} should name {case}");
        assert!(why.starts_with("io uring not used"), "{why}");
    }
    let mut think = uring(Transport::Tcp, "RR1(1B/1B)", 1);
    think.pacing.think = Some(ThinkTime::Constant(std::time::Duration::from_millis(1)));
    assert!(iomode::effective(&think).1.unwrap().contains("think time"));
    // Asked-for epoll is never a fallback.
    assert_eq!(
        iomode::effective(&config("CRR1(1B/1B)", 1)),
        (IoMode::Epoll, None)
    );
    // A run that falls back still measures, on epoll.
    let h = responder("127.0.0.1:0");
    assert_exact(&run(&h, &uring(Transport::Tcp, "CRR2(64B/1kB)", 31)), 31);
}

/// `io = auto` picks io_uring only for closed-loop RR whose workers each hold
/// two or more connections (where it measured faster), epoll otherwise, and
/// never warns.
#[test]
fn auto_picks_uring_for_shared_rr_workers_and_epoll_for_the_rest() {
    let auto = |workload: &str, threads: usize| RunConfig {
        io: IoMode::Auto,
        protocol: Default::default(),
        threads,
        ..config(workload, 1)
    };
    let shared_rr = if iomode::uring_available().is_ok() {
        IoMode::Uring
    } else {
        IoMode::Epoll
    };
    let cases = [
        (
            auto("RR10(4kB/4kB)", 1),
            shared_rr,
            "10 connections, 1 thread",
        ),
        (auto("RR4(1B/1B)", 2), shared_rr, "2 connections per thread"),
        (
            auto("RR1(1B/1B)", 1),
            IoMode::Epoll,
            "a lone connection: direct waiting",
        ),
        (
            auto("RR4(1B/1B)", 4),
            IoMode::Epoll,
            "one connection per thread",
        ),
        (
            auto("STR3(1B/20MB)", 1),
            IoMode::Epoll,
            "streams measured worse",
        ),
        (
            auto("RR10(1B/1B)+STR1(1B/1MB)", 1),
            IoMode::Epoll,
            "a stream class",
        ),
        (auto("CRR10(64B/8kB)", 1), IoMode::Epoll, "CRR: not covered"),
        (
            auto("RR10(1B/1B)@10ms", 1),
            IoMode::Epoll,
            "think time: not covered",
        ),
        (
            RunConfig {
                transport: Transport::Tls,
                ..auto("RR10(1B/1B)", 1)
            },
            IoMode::Epoll,
            "TLS: not covered",
        ),
    ];
    for (cfg, want, case) in cases {
        assert_eq!(iomode::effective(&cfg), (want, None), "{case}");
    }
}
