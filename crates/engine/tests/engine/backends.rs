//! Every I/O backend runs the same table: each workload kind × each
//! transport its row in `iomode` claims (of tcp, unix and tls, which need
//! nothing from the host), count-bounded, with exact counts and bytes. A
//! case a backend claims must run on it: `effective` may not send it to
//! epoll.

use stackbench_engine::iomode::{self, Claims, EPOLL, URING};
use stackbench_engine::RunConfig;
use stackbench_model::settings::{CertType, CipherSuite, SettingValue};
use stackbench_model::{CrrClose, IoMode, Kind, TlsParams, Transport};

use super::{assert_exact, config, responder, run};

/// Runs the table on the backend `io`, whose row is `claims`; returns the
/// cases run, for the caller to check the table was not empty.
fn table(claims: &Claims, io: IoMode) -> Vec<String> {
    let h = responder("127.0.0.1:0");
    let mut cases = Vec::new();
    let claimed = |t: &Transport| (claims.covers)(*t);
    for transport in [Transport::Tcp, Transport::Unix, Transport::Tls]
        .into_iter()
        .filter(claimed)
    {
        for &kind in claims.kinds {
            let workloads: &[&str] = match kind {
                Kind::Rr => &["RR3(2kB/3kB)"],
                Kind::Crr => &["CRR2(64B/8kB)"],
                Kind::Str => &["STR2(1B/1MB)", "STR2(1MB/1B)"],
            };
            for workload in workloads {
                let mut cfg = RunConfig {
                    transport,
                    io,
                    ..config(workload, 31)
                };
                if transport == Transport::Tls {
                    let suite = CipherSuite::parse("1301").unwrap();
                    let params =
                        TlsParams::resolve(None, Some(suite), None, CertType::Rsa2048, None, None);
                    cfg.tls = Some(params.unwrap());
                }
                if kind == Kind::Crr {
                    cfg.socket.crr_close = CrrClose::Client;
                }
                let case = format!("{} {workload} over {}", claims.name, transport.name());
                assert_eq!(iomode::effective(&cfg), (io, None), "{case}");
                assert_exact(&run(&h, &cfg), 31);
                cases.push(case);
            }
        }
    }
    cases
}

#[test]
fn epoll_runs_every_kind_over_every_transport() {
    let cases = table(&EPOLL, IoMode::Epoll);
    // 3 transports × (RR, CRR, STR both ways).
    assert_eq!(cases.len(), 12, "{cases:?}");
}

#[test]
fn uring_runs_every_kind_over_every_transport_it_claims() {
    if let Err(e) = iomode::uring_available() {
        stackbench_testkit::skip(stackbench_testkit::Tier::Uring, "io_uring table", &e);
        return;
    }
    let cases = table(&URING, IoMode::Uring);
    // tcp and unix × (RR, STR both ways).
    assert_eq!(cases.len(), 6, "{cases:?}");
}
