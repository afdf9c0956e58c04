//! The observed eligible traffic as stackbench workloads: long-lived
//! connections (at least the lifetime threshold) as one RR class with the
//! estimated message sizes, short-lived ones as one CRR class with their
//! mean bytes per connection, each weighted by the transactions observed.
//!
//! Sizes are the client's view (request = what the client sent): the end
//! whose local port is a listener here is the server's, and its directions
//! are swapped. An RR connection's transactions are estimated as the
//! client's payload over the request size; a CRR connection is one
//! transaction (a short connection that carried several reads as one
//! larger transaction).

use std::collections::HashSet;
use std::time::Duration;

use stackbench_model::{ClassSpec, Kind, Workload};
use stackbench_record::applicability::Thresholds;

use crate::classify::{Classified, PathKind};
use crate::sizes::SizeTally;
use crate::track::Conn;

/// The most connections an RR class opens: the projection measures the
/// cost per transaction, which stops changing long before a large
/// observed population is reached.
const MAX_RR_CLIENTS: u32 = 64;
/// The most CRR connection slots.
const MAX_CRR_CLIENTS: u32 = 16;

/// One class of the projected mix and the observed traffic it stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct MixClass {
    pub spec: ClassSpec,
    pub connections: u64,
    pub observed_transactions: u64,
    pub observed_tps: f64,
}

impl MixClass {
    /// The class as a one-class workload.
    pub fn workload(&self) -> Workload {
        Workload {
            classes: vec![self.spec],
        }
    }
}

/// What a connection sent and received, seen from its client.
struct ClientView {
    sent: u64,
    received: u64,
    sent_sizes: SizeTally,
    received_sizes: SizeTally,
}

fn client_view(c: &Conn, listeners: &HashSet<u16>) -> ClientView {
    let w = c.window();
    if listeners.contains(&c.local.port()) {
        ClientView {
            sent: w.bytes_received,
            received: w.bytes_out,
            sent_sizes: c.received,
            received_sizes: c.sent,
        }
    } else {
        ClientView {
            sent: w.bytes_out,
            received: w.bytes_received,
            sent_sizes: c.sent,
            received_sizes: c.received,
        }
    }
}

/// The projected classes of the eligible connections (RR first), empty
/// when none carried a request.
pub fn mix(
    classified: &[Classified],
    listeners: &HashSet<u16>,
    thresholds: &Thresholds,
    window: Duration,
) -> Vec<MixClass> {
    let min_life = Duration::from_secs_f64(thresholds.min_lifetime_s);
    let eligible = classified
        .iter()
        .filter(|c| matches!(c.path, PathKind::SameHost | PathKind::SameSubnet))
        .map(|c| (c.conn, client_view(c.conn, listeners)))
        .filter(|(_, v)| v.sent > 0);
    let (mut long, mut short) = (Vec::new(), Vec::new());
    for (conn, view) in eligible {
        if conn.lifetime() >= min_life {
            long.push((conn, view));
        } else {
            short.push((conn, view));
        }
    }
    let secs = window.as_secs_f64().max(1e-9);
    let mut out = Vec::new();
    if !long.is_empty() {
        let (mut sent, mut received) = (SizeTally::default(), SizeTally::default());
        let mut payload = 0;
        for (_, v) in &long {
            sent.merge(&v.sent_sizes);
            received.merge(&v.received_sizes);
            payload += v.sent;
        }
        let request = sent.mean_message_bytes().unwrap_or(1.0).round().max(1.0);
        let response = received
            .mean_message_bytes()
            .unwrap_or(1.0)
            .round()
            .max(1.0);
        let transactions = (payload as f64 / request).round() as u64;
        out.push(MixClass {
            spec: class(
                Kind::Rr,
                long.len() as u64,
                MAX_RR_CLIENTS,
                request,
                response,
            ),
            connections: long.len() as u64,
            observed_transactions: transactions,
            observed_tps: transactions as f64 / secs,
        });
    }
    if !short.is_empty() {
        let n = short.len() as f64;
        let request = (short.iter().map(|(_, v)| v.sent).sum::<u64>() as f64 / n).round();
        let response = (short.iter().map(|(_, v)| v.received).sum::<u64>() as f64 / n).round();
        // Connections open at once, on average: the slots that carry the
        // observed rate at the observed lifetimes (at least one).
        let busy: f64 = short.iter().map(|(c, _)| c.lifetime().as_secs_f64()).sum();
        let slots = (busy / secs).ceil() as u64;
        out.push(MixClass {
            spec: class(
                Kind::Crr,
                slots,
                MAX_CRR_CLIENTS,
                request.max(1.0),
                response.max(1.0),
            ),
            connections: short.len() as u64,
            observed_transactions: short.len() as u64,
            observed_tps: n / secs,
        });
    }
    out
}

fn class(kind: Kind, clients: u64, most: u32, request: f64, response: f64) -> ClassSpec {
    ClassSpec {
        kind,
        clients: clients.clamp(1, u64::from(most)) as u32,
        request_bytes: request as u64,
        response_bytes: response as u64,
        pacing: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{classify, HostFacts, Selection};
    use crate::sample::Counters;

    fn conn(local: &str, remote: &str, lifetime_ms: u64, out: u64, received: u64) -> Conn {
        let mut sent = SizeTally::default();
        let mut recv = SizeTally::default();
        Conn {
            cookie: 0,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            first_seen: Duration::ZERO,
            last_seen: Duration::from_millis(lifetime_ms),
            open_at_start: false,
            closed: true,
            baseline: Counters::default(),
            last: Counters {
                bytes_out: out,
                bytes_received: received,
                ..Counters::default()
            },
            snd_mss: 65483,
            rcv_mss: 65483,
            sent: {
                sent.add(out, out.div_ceil(4096).max(1), 65483);
                sent
            },
            received: {
                recv.add(received, received.div_ceil(4096).max(1), 65483);
                recv
            },
            ktls: None,
        }
    }

    #[test]
    fn long_connections_become_rr_and_short_ones_crr_seen_from_the_client() {
        let thresholds = Thresholds {
            min_lifetime_s: 1.0,
            min_bytes: 16384,
        };
        let conns = vec![
            // The RR flow: 4 kB each way, 1000 transactions, client end here.
            conn(
                "127.0.0.1:40000",
                "127.0.0.1:7701",
                10_000,
                4096 * 1000,
                4096 * 1000,
            ),
            // 300 short connections seen from the server end (port 7702 listens):
            // 64 B requests received, 8000 B responses sent.
            conn("10.77.1.1:7702", "10.77.1.2:50000", 2, 8000, 64),
        ];
        let mut conns = conns;
        for i in 1..300 {
            let mut c = conns[1].clone();
            c.remote.set_port(50000 + i);
            conns.push(c);
        }
        let facts = HostFacts {
            addresses: vec![stackbench_lab::IpNet::parse("10.77.1.1/24").unwrap()],
            ipsec_pairs: vec![],
            sas: vec![],
        };
        let listeners = HashSet::from([7701, 7702]);
        let sel = Selection {
            subnets: vec![],
            port: None,
            thresholds: thresholds.clone(),
        };
        let c = classify(&conns, &listeners, &facts, &sel);
        let m = mix(&c, &listeners, &thresholds, Duration::from_secs(10));
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].workload().to_string(), "RR1(4kB/4kB)");
        assert_eq!(m[0].observed_transactions, 1000);
        assert!((m[0].observed_tps - 100.0).abs() < 1e-9);
        assert_eq!(m[1].spec.kind, Kind::Crr);
        assert_eq!(
            (m[1].spec.request_bytes, m[1].spec.response_bytes),
            (64, 8000)
        );
        assert_eq!(m[1].observed_transactions, 300);
        // 300 × 2 ms busy over 10 s: one slot.
        assert_eq!(m[1].spec.clients, 1);
    }
}
