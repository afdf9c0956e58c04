//! Turns one class's merged accumulators into the stored [`ClassResult`]
//! (with its population figures when paced or ramped), and says when a run
//! that was not cut short still fell short: a class with no transaction in its
//! window, or a `--transactions` count the `--duration` ended before.
//!
//! The workers of one process are parts of one run, merged before this
//! (`accum::ClassAccum::merge`) while their histograms and wait counts still
//! exist; the record built here is then combined with other processes'
//! (agents) or other repetitions' by the one combine of class results,
//! `stackbench_metrics::combine`, whose table gives each field's rule.

use std::time::Duration;

use stackbench_metrics::combine::rate;
use stackbench_metrics::{generator_lag_p99_share_pct, LatencyHistogram};
use stackbench_model::{ClassSpec, Pacing};
use stackbench_record::ClassResult;
use stackbench_record::{
    BackendConnections, HandshakeCpuUs, KtlsCounters, KtlsFigures, LagUs, PacingMode,
    PopulationFigures, ServedBy, TlsFigures,
};

use super::accum::ClassAccum;
use super::pace::{Pace, PacingConfig};
use super::seen::Words;
use super::RunConfig;
use crate::app::{self, grouped};
use crate::control::ServerTestStats;

/// At or above this message size, a class with no transaction probably needs
/// more time than the window per transaction.
const LARGE_MESSAGE_BYTES: u64 = 1 << 20;

/// Builds the record of one class measured over `window_ns`.
pub fn class_result(
    workload: &str,
    spec: &ClassSpec,
    acc: &ClassAccum,
    window_ns: u64,
) -> ClassResult {
    let duration_s = window_ns as f64 / 1e9;
    // As parts of one run are combined: the workers' summed counts over the
    // class's window.
    let per_s = |x: u64| rate(x, duration_s);
    let whole_seconds = (window_ns / 1_000_000_000) as usize;
    let errors = acc.errors;
    ClassResult {
        workload: workload.to_string(),
        notation: spec.to_string(),
        kind: spec.kind,
        stream_direction: spec.stream_direction(),
        clients: spec.clients,
        request_bytes: spec.request_bytes,
        response_bytes: spec.response_bytes,
        transactions: acc.transactions,
        duration_s,
        rate_tps: per_s(acc.transactions),
        latency_us: acc.hist.summary_us(),
        latency_hdr: (acc.hist.count() > 0).then(|| acc.hist.to_base64()),
        tx_bytes: acc.tx_bytes,
        rx_bytes: acc.rx_bytes,
        tx_bytes_per_s: per_s(acc.tx_bytes),
        rx_bytes_per_s: per_s(acc.rx_bytes),
        errors: errors.total(),
        error_counts: errors,
        per_second_tps: acc
            .per_second
            .iter()
            .take(whole_seconds)
            .map(|&n| n as f64)
            .collect(),
        cpu: None,
        memory: None,
        repetitions: None,
        population: None,
        tls: acc.tls.as_ref().map(|t| TlsFigures {
            version: t.version.to_string(),
            cipher: t.cipher_name.to_string(),
            cipher_code: format!("{:X}", t.cipher_code),
            full_handshakes: t.full,
            resumed_handshakes: t.resumed,
            handshake_latency_us: t.hist.summary_us(),
            rekeys: acc.rekeys,
            server_rekeys: 0,
            handshake_cpu_us: Some(HandshakeCpuUs {
                client_full: HandshakeCpuUs::per_handshake(t.full_cpu_ns, t.full),
                client_resumed: HandshakeCpuUs::per_handshake(t.resumed_cpu_ns, t.resumed),
                ..HandshakeCpuUs::default()
            }),
            ktls: None,
            alpn: t.alpn.map(str::to_string),
            // A foreign server's verification is the caller's to say.
            server_verified: None,
        }),
        // Counted against the path's floor by the caller.
        stall_band: None,
        // The responder's side is added by the caller (`served_by`).
        served_by: Some(ServedBy {
            driver: BackendConnections {
                io_uring: acc.uring_connections,
                epoll: acc.epoll_connections,
                direct: acc.direct_connections,
            },
            responder: None,
        }),
        http_status: acc.status.record(),
        sessions: acc.sessions.record(&crate::app::tn3270::FUNCTIONS),
        steps: (!acc.steps.is_empty()).then(|| acc.steps.iter().map(|s| s.record()).collect()),
    }
}

/// The responder's side of which backend served a class's connections,
/// from its test's counters; `None` when it counted none of the
/// connections it served (a responder older than the counters).
pub fn responder_served(s: &ServerTestStats) -> Option<BackendConnections> {
    let counted = s.uring_connections + s.epoll_connections;
    (counted > 0 || s.connections == 0).then_some(BackendConnections {
        io_uring: s.uring_connections,
        epoll: s.epoll_connections,
        direct: s.direct_connections,
    })
}

/// Adds the responder's side of a `tls` class: its key updates and CPU
/// per handshake (over the test's whole life).
pub fn add_server_tls(tls: &mut TlsFigures, s: &ServerTestStats) {
    tls.server_rekeys = s.tls_rekeys;
    let cpu = tls
        .handshake_cpu_us
        .get_or_insert_with(HandshakeCpuUs::default);
    // The responder's counts cover the test's whole life: without a
    // handshake of the kind in the window, its mean would describe only
    // handshakes outside it (see `HandshakeCpuUs`).
    let in_window = |n: u64, total_ns: u64, count: u64| {
        HandshakeCpuUs::per_handshake(total_ns, count).filter(|_| n > 0)
    };
    cpu.server_full = in_window(
        tls.full_handshakes,
        s.tls_full_cpu_ns,
        s.tls_full_handshakes,
    );
    cpu.server_resumed = in_window(
        tls.resumed_handshakes,
        s.tls_resumed_cpu_ns,
        s.tls_resumed_handshakes,
    );
}

/// `tls_mode ktls`: the class's switched connections on each side and the
/// kernel counters' deltas (`client`: the driver's namespace over the run).
pub fn add_ktls(
    tls: &mut TlsFigures,
    acc: &ClassAccum,
    s: Option<&ServerTestStats>,
    client: Option<KtlsCounters>,
) {
    tls.ktls = Some(KtlsFigures {
        connections: acc.tls.as_ref().map_or(0, |t| t.ktls),
        server_connections: s.map_or(0, |s| s.tls_ktls_connections),
        client,
        server: s.and_then(|s| s.ktls),
    });
}

/// The population figures of a paced class, or of any class of a ramped
/// run; `None` for a closed-loop class connected all at once.
pub fn population(
    spec: &ClassSpec,
    pace: &Pace,
    cfg: &PacingConfig,
    acc: &ClassAccum,
) -> Option<PopulationFigures> {
    if !pace.is_paced() && cfg.ramp.is_none() {
        return None;
    }
    let pacing = Pacing::effective(spec.pacing, cfg.think, cfg.rate);
    let lag = acc.lag.as_ref().and_then(LatencyHistogram::summary_us);
    Some(PopulationFigures {
        pacing: match pace {
            Pace::Closed => PacingMode::Closed,
            Pace::Think(_) => PacingMode::Think,
            Pace::Open { .. } => PacingMode::Open,
        },
        pacing_text: pacing.map(|p| p.to_string()),
        think_mean_s: match pacing {
            Some(Pacing::Think(t)) => Some(t.mean().as_secs_f64()),
            _ => None,
        },
        wait_mean_s: (acc.waits > 0).then(|| acc.wait_ns as f64 / acc.waits as f64 / 1e9),
        offered_rate_tps: match pacing {
            Some(Pacing::Rate(r)) => Some(r.per_s()),
            _ => None,
        },
        arrivals: pace.is_open().then(|| cfg.arrivals.name().to_string()),
        latency_uncorrected_us: acc
            .uncorrected
            .as_ref()
            .and_then(LatencyHistogram::summary_us),
        late: acc.late,
        dropped: acc.dropped,
        generator_lag_us: lag.map(LagUs::of),
        generator_lag_hdr: acc
            .lag
            .as_ref()
            .filter(|h| h.count() > 0)
            .map(LatencyHistogram::to_base64),
        generator_lag_p99_share_pct: generator_lag_p99_share_pct(
            lag.map(|l| l.p99),
            acc.hist.summary_us().map(|l| l.p99),
        ),
        connected: u32::try_from(acc.connected_at_window).unwrap_or(u32::MAX),
        connect_s: acc.last_connected_ns as f64 / 1e9,
    })
}

/// Why a run that ran to its end is still incomplete, one clause per class
/// that fell short (joined by "; "): a class with no transaction, a count
/// not reached, or a client ended by a message its protocol refuses. Each
/// says what was seen ([`super::seen::Seen::explain`]: connections refused, closed or
/// reset and where, faults, a server that never answered, most frequent
/// first), and only when nothing went wrong that the window was too short;
/// `None` when every class measured something and met its count.
/// `idle_stop_ns`: a run bounded by transactions alone that was ended after
/// that long with nothing moving (no transaction, no byte) ([`super::IDLE_BOUND_NS`]).
pub fn shortfall(
    cfg: &RunConfig,
    merged: &[ClassAccum],
    idle_stop_ns: Option<u64>,
) -> Option<String> {
    let window = cfg
        .duration
        .map_or_else(|| "measurement".to_string(), duration_text);
    let idle = idle_stop_ns.map(|ns| duration_text(Duration::from_nanos(ns)));
    let words = Words::of(&app::row(cfg.protocol));
    let clauses: Vec<String> = cfg
        .workload
        .classes
        .iter()
        .zip(merged)
        .enumerate()
        .filter_map(|(index, (spec, acc))| {
            let too_short = nothing_fix(spec, &Pace::of(spec, &cfg.pacing));
            let seen = acc.seen.explain(&words, &too_short);
            if acc.transactions == 0 {
                let what = match &idle {
                    Some(idle) => format!(
                        "no transaction completed and nothing moved for {idle} (the \
                         --transactions run's idle bound), so the run was ended"
                    ),
                    None => format!("no transaction completed in the {window} window"),
                };
                return Some(format!("{spec}: {what}: {}", seen.unwrap_or(too_short)));
            }
            let done = grouped(acc.transactions);
            if let Some(n) = cfg
                .transactions_here(index)
                .filter(|&n| acc.transactions < n)
            {
                let short = match &idle {
                    Some(idle) => format!(
                        "{spec}: --transactions {n} not reached: {done} done, then nothing \
                         moved for {idle} (the --transactions run's idle bound), so the run \
                         was ended"
                    ),
                    None => format!(
                        "{spec}: --transactions {n} not reached: {done} done when the \
                         {window} --duration ended"
                    ),
                };
                return Some(match (seen, &idle) {
                    (Some(seen), _) => format!("{short}, as {seen}"),
                    (None, Some(_)) => format!(
                        "{short}; check that the server answers every request, or give a \
                         --duration"
                    ),
                    (None, None) => {
                        format!("{short}; lengthen --duration or lower --transactions")
                    }
                });
            }
            // A fault ends its client: never a complete run.
            acc.fault.as_ref()?;
            Some(format!(
                "{spec}: {done} transactions completed, but {}",
                seen.unwrap_or_default()
            ))
        })
        .collect();
    (!clauses.is_empty()).then(|| clauses.join("; "))
}

/// Why a run is incomplete by its answers (`Codec::STATUS`): each class
/// whose non-2xx responses of the window are a larger share than the
/// `http_error_share` setting allows, with the codes seen and their counts
/// (joined by "; "); `None` within the bound. Below it they are errors
/// counted and shown, and the run stands.
pub fn status_share(cfg: &RunConfig, merged: &[ClassAccum]) -> Option<String> {
    let bound_pct = cfg.http_error_share_pct;
    let clauses: Vec<String> = cfg
        .workload
        .classes
        .iter()
        .zip(merged)
        .filter_map(|(spec, acc)| {
            let status = acc.status.record()?;
            let share_pct = 100.0 * status.non_2xx_share();
            (share_pct > bound_pct).then(|| {
                format!(
                    "{spec}: {} of {} responses were not 2xx ({share_pct:.1}%: {}), above \
                     http_error_share {bound_pct}%: make the server answer the paths the \
                     requests name (GET /N, or the target URL's path), or raise \
                     --http-error-share",
                    grouped(status.non_2xx()),
                    grouped(status.total()),
                    status.non_2xx_text()
                )
            })
        })
        .collect();
    (!clauses.is_empty()).then(|| clauses.join("; "))
}

/// What to change when a class completed no transaction in its window.
fn nothing_fix(spec: &ClassSpec, pace: &Pace) -> String {
    let mut fix = "lengthen --duration".to_string();
    match pace {
        Pace::Think(t) => {
            fix += &format!(" past its think time ({t}) or shorten the think time");
        }
        Pace::Open { .. } => fix += " or raise its rate",
        Pace::Closed => {}
    }
    if spec.request_bytes.max(spec.response_bytes) >= LARGE_MESSAGE_BYTES {
        let side = if spec.request_bytes >= spec.response_bytes {
            "request"
        } else {
            "response"
        };
        fix += &format!(" or shrink the {side}");
    }
    fix
}

/// `1s`, `500ms`, `1.25s`: as a user would write it.
fn duration_text(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d.as_nanos() % 1_000_000 == 0 && d.as_secs() == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(workload: &str, duration_ms: u64, transactions: Option<u64>) -> RunConfig {
        RunConfig {
            workload: workload.parse().unwrap(),
            duration: Some(Duration::from_millis(duration_ms)),
            warmup: Duration::ZERO,
            transactions,
            threads: 1,
            class_workers: false,
            client_cpus: vec![],
            socket: Default::default(),
            spin: stackbench_model::Spin::None,
            gen_sched: Default::default(),
            transport: Default::default(),
            tls: None,
            priority: None,
            io: Default::default(),
            protocol: Default::default(),
            amqp: Default::default(),
            h2: Default::default(),
            http_error_share_pct: 1.0,
            pacing: PacingConfig::default(),
            path: Default::default(),
            segment: Default::default(),
            tn3270: Default::default(),
            live_metrics: false,
        }
    }

    fn done(transactions: u64) -> ClassAccum {
        ClassAccum {
            transactions,
            ..ClassAccum::default()
        }
    }

    #[test]
    fn nothing_measured_says_what_to_change() {
        let why = shortfall(&cfg("RR1(2GB/1B)", 1000, None), &[done(0)], None).unwrap();
        assert_eq!(
            why,
            "RR1(2GB/1B): no transaction completed in the 1s window: \
             lengthen --duration or shrink the request"
        );
        let why = shortfall(&cfg("RR4K(1B/1B)@exp:30s", 500, None), &[done(0)], None).unwrap();
        assert!(why.contains("500ms window"), "{why}");
        assert!(
            why.ends_with(
                "lengthen --duration past its think time (exp:30s) or shorten the think time"
            ),
            "{why}"
        );
        assert_eq!(
            shortfall(&cfg("RR1(1B/1B)", 1000, None), &[done(1)], None),
            None
        );
    }

    #[test]
    fn count_not_reached_names_both_bounds() {
        let c = cfg("RR1(1B/1B)+RR1(2B/2B)", 1000, Some(1_000_000));
        let why = shortfall(&c, &[done(53_211), done(1_000_000)], None).unwrap();
        assert_eq!(
            why,
            "RR1(1B/1B): --transactions 1000000 not reached: 53,211 done when the 1s \
             --duration ended; lengthen --duration or lower --transactions"
        );
        assert_eq!(
            shortfall(&c, &[done(1_000_000), done(1_000_000)], None),
            None
        );
    }

    /// An RR class handshakes before its window opens: the responder's
    /// whole-life count (here one full handshake, which carried OpenSSL's
    /// set-up) gave "server 55752" µs per handshake beside "0 full".
    #[test]
    fn responder_handshake_cpu_only_beside_window_handshakes() {
        let stats = ServerTestStats {
            tls_full_handshakes: 1,
            tls_full_cpu_ns: 55_752_000,
            tls_resumed_handshakes: 2,
            tls_resumed_cpu_ns: 400_000,
            ..ServerTestStats::default()
        };
        let mut none_in_window = TlsFigures::default();
        add_server_tls(&mut none_in_window, &stats);
        let cpu = none_in_window.handshake_cpu_us.unwrap();
        assert_eq!((cpu.server_full, cpu.server_resumed), (None, None));
        let mut some = TlsFigures {
            full_handshakes: 3,
            ..TlsFigures::default()
        };
        add_server_tls(&mut some, &stats);
        let cpu = some.handshake_cpu_us.unwrap();
        assert_eq!(cpu.server_full, Some(55_752.0));
        assert_eq!(cpu.server_resumed, None);
    }

    /// A responder older than the counters reports zeros beside the
    /// connections it served: not known, rather than "none on any backend".
    #[test]
    fn a_responder_that_did_not_count_is_unknown() {
        let old = ServerTestStats {
            connections: 2,
            ..ServerTestStats::default()
        };
        assert_eq!(responder_served(&old), None);
        let counted = ServerTestStats {
            uring_connections: 2,
            ..old
        };
        let served = responder_served(&counted).unwrap();
        assert_eq!((served.io_uring, served.epoll, served.direct), (2, 0, 0));
        assert!(responder_served(&ServerTestStats::default()).is_some());
    }

    #[test]
    fn numbers_and_durations_read_as_written() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
        assert_eq!(duration_text(Duration::from_secs(10)), "10s");
        assert_eq!(duration_text(Duration::from_millis(250)), "250ms");
        assert_eq!(duration_text(Duration::from_millis(1250)), "1.25s");
    }

    /// A --duration run has no idle bound; a --transactions run has 10 s,
    /// plus ten mean pacing gaps of its slowest class; its shortfall says
    /// the run was ended by the bound, never "lengthen --duration".
    #[test]
    fn a_transactions_run_is_bounded_by_idleness() {
        assert_eq!(cfg("RR1(1B/1B)", 1000, Some(5)).idle_bound_ns(), None);
        let mut c = cfg("RR1(1B/1B)", 1000, Some(5));
        c.duration = None;
        assert_eq!(c.idle_bound_ns(), Some(10_000_000_000));
        let mut paced = cfg("RR1(1B/1B)@exp:30s", 1000, Some(5));
        paced.duration = None;
        assert_eq!(paced.idle_bound_ns(), Some(310_000_000_000));
        let why = shortfall(&c, &[done(3)], c.idle_bound_ns()).unwrap();
        assert!(
            why.contains("--transactions 5 not reached: 3 done, then nothing moved for 10s"),
            "{why}"
        );
        assert!(!why.contains("lengthen"), "{why}");
    }
}
