//! Every I/O backend pair runs the same table: the backend matrix
//! (`stackbench_engine::matrix`, rendered as docs/backends.md) — each pair
//! of driver and responder backends × each workload case (RR, CRR in every
//! close mode, STR both ways, think time, open loop) × tcp, unix, mptcp
//! and tls — count-bounded on loopback, with exact counts and bytes on both
//! sides, and on both sides the backend that served the cell, from the
//! connections each side's backends counted (the class's `served_by`): the
//! counts alone would pass if every cell ran on epoll. A cell either runs on its pair or is refused in the one line its
//! row in `iomode` gives (for io_uring, the run's warning) and runs on
//! epoll; both are checked here. The io_uring column and the mptcp rows go
//! through the skip gate where this kernel or sandbox lacks them. Each
//! column is its own test, so the columns run side by side.

use stackbench_engine::iomode;
use stackbench_engine::matrix::{self, Case, Pair, CASES, PAIRS, TRANSPORTS};
use stackbench_engine::RunConfig;
use stackbench_model::settings::{CertType, CipherSuite, SettingValue};
use stackbench_model::{IoMode, Kind, PerSecond, TlsParams, Transport};
use stackbench_testkit::{skip, Tier};

use super::{assert_exact, config, responder_threads, run};

/// Transactions per class and case: not a multiple of the clients, so the
/// split of a count over clients is exercised too.
const N: u64 = 31;

fn cell_config(pair: &Pair, case: &Case, transport: Transport) -> RunConfig {
    let mut cfg = RunConfig {
        transport,
        io: pair.io,
        threads: pair.driver_threads,
        ..config(&case.workload(pair), N)
    };
    cfg.socket.crr_close = case.crr_close;
    cfg.pacing.rate = case.rate_tps.and_then(PerSecond::new);
    if transport == Transport::Tls {
        let suite = CipherSuite::parse("1301").unwrap();
        let params = TlsParams::resolve(None, Some(suite), None, CertType::Rsa2048, None, None);
        cfg.tls = Some(params.unwrap());
    }
    cfg
}

/// Runs the column of the pair named `name` (driver / responder) over every
/// transport usable here; returns the cells run.
fn column(name: &str) -> usize {
    let pair = PAIRS.iter().find(|p| p.name() == name).expect("a pair");
    assert_eq!(
        pair.responder_threads, 1,
        "the responder below has one worker"
    );
    let target = "127.0.0.1:1".parse().unwrap();
    let mptcp = stackbench_engine::transport::row(Transport::Mptcp).check_usable(target);
    if let Err(e) = &mptcp {
        skip(Tier::Mptcp, &format!("the mptcp cells of {name}"), e);
    }
    let h = responder_threads("127.0.0.1:0", 1);
    let mut cells = 0;
    for &transport in TRANSPORTS {
        if transport == Transport::Mptcp && mptcp.is_err() {
            continue;
        }
        for case in CASES {
            let label = format!("{name} · {} · {}", case.name, transport.name());
            let cell = matrix::cell(pair, case, transport);
            let cfg = cell_config(pair, case, transport);
            // The run's own choice agrees with the matrix: io_uring where
            // the cell runs on it, else epoll with the cell's line.
            let want = match (pair.io, &cell.refused) {
                (IoMode::Uring, None) => (IoMode::Uring, None),
                (IoMode::Uring, Some(why)) => (
                    IoMode::Epoll,
                    Some(format!("io uring not used, this run measured epoll: {why}")),
                ),
                _ => (IoMode::Epoll, None),
            };
            assert_eq!(iomode::effective(&cfg), want, "{label}");
            if let Some(why) = &cell.refused {
                assert!(!why.contains('\n'), "{label}: {why}");
            }
            let out = run(&h, &cfg);
            assert_exact(&out, N);
            let server = out.server_stats[0];
            let c = &out.classes[0];
            assert_eq!(server.transactions, N, "{label}");
            assert_eq!(server.errors, 0, "{label}");
            assert_eq!(server.rx_bytes, N * c.request_bytes, "{label}");
            assert_eq!(server.tx_bytes, N * c.response_bytes, "{label}");
            let connections = match case.kind {
                Kind::Crr => N,
                Kind::Rr | Kind::Str => u64::from(pair.clients),
            };
            assert_eq!(server.connections, connections, "{label}");
            // Which backend served, each side, by the counts the run's
            // record carries: the transaction counts alone would pass if
            // everything ran on epoll.
            let served = c.served_by.expect("served_by");
            let responder = served.responder.expect("the responder's counts");
            let (driver_may, responder_may) = matrix::may_wait_directly(case, transport);
            let side = |backend, counts, may| {
                matrix::check_served(backend, counts, may).map_err(|e| format!("{label}: {e}"))
            };
            side(cell.driver, &served.driver, driver_may).unwrap();
            side(cell.responder, &responder, responder_may).unwrap();
            assert_eq!(responder.total(), connections, "{label}");
            assert_eq!(served.driver.total(), connections, "{label}");
            cells += 1;
        }
    }
    let rows = TRANSPORTS.len() - usize::from(mptcp.is_err());
    assert_eq!(cells, rows * CASES.len(), "{name}");
    cells
}

#[test]
fn the_epoll_column_runs_every_cell() {
    column("epoll / epoll");
}

#[test]
fn the_direct_column_runs_every_cell() {
    column("direct / direct");
}

#[test]
fn the_direct_driver_against_an_epoll_responder_runs_every_cell() {
    column("direct / epoll");
}

#[test]
fn the_uring_column_runs_every_cell() {
    if let Err(e) = iomode::uring_available() {
        return skip(Tier::Uring, "the io_uring column of the backend matrix", &e);
    }
    column("io_uring / io_uring");
}

/// Every pair above has its test: a pair added to the matrix without one
/// fails here.
#[test]
fn every_column_has_its_test() {
    let tested = [
        "epoll / epoll",
        "direct / direct",
        "direct / epoll",
        "io_uring / io_uring",
    ];
    let pairs: Vec<String> = PAIRS.iter().map(Pair::name).collect();
    assert_eq!(pairs, tested);
}
