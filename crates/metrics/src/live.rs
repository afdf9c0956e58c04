//! A run's live figures: what `--metrics-listen` serves while a run goes
//! on. The engine's watch assembles a [`LiveRun`] about once a second from
//! copies its workers make of their own accumulators (never a lock or a
//! hook per transaction: each worker copies at most every
//! [`LIVE_COPY_INTERVAL_NS`] and skips a turn when the watch is reading),
//! agents send theirs to the controller with their progress, and the
//! controller adds them up ([`LiveRun::add_part`]). Counts here are since the
//! run started: transactions and latencies of the measurement window (as
//! the record's), errors of the whole run (warm-up included, as the
//! record's), CPU and memory of each side's processes.

use serde::{Deserialize, Serialize};
use stackbench_record::ErrorCounts;

use crate::LatencyHistogram;

/// How often a worker refreshes its live copy, ns.
pub const LIVE_COPY_INTERVAL_NS: u64 = 250_000_000;

/// The histogram buckets' upper edges, ns: 2^k and 1.5·2^k from 2^10 ns
/// (1.024 µs) to 2^42 ns (73 min, above the histogram's 1 h ceiling). Every
/// edge is a bucket boundary of [`LatencyHistogram`] (3 significant digits:
/// 2048 sub-buckets per power of two, so 2^k and 3·2^(k-1) start one), so
/// the cumulative counts at them are exact, not re-binned; they are the
/// histogram's own buckets grouped two per power of two, which keeps a
/// scrape to 66 buckets per class.
pub const BUCKET_EDGES_NS: [u64; 65] = bucket_edges();

const fn bucket_edges() -> [u64; 65] {
    let mut edges = [0u64; 65];
    let mut k = 10;
    let mut i = 0;
    while k <= 41 {
        edges[i] = 1 << k;
        edges[i + 1] = 3 << (k - 1);
        i += 2;
        k += 1;
    }
    edges[64] = 1 << 42;
    edges
}

/// One class's figures so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveClass {
    /// Counted transactions (the measurement window's).
    pub transactions: u64,
    /// Errors since the run started, by kind.
    pub errors: ErrorCounts,
    /// Responses of the window by status code (protocols whose responses
    /// carry one; empty otherwise).
    pub http_status: Vec<(u16, u64)>,
    /// Payload bytes sent and received in the window.
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    /// Latency of the counted transactions, ns (open loop: from the
    /// intended send time), the worker's own histogram.
    #[serde(with = "hist_text")]
    pub latency: LatencyHistogram,
    /// Paced classes: the generator's lag (actual − intended send), ns.
    #[serde(with = "opt_hist_text")]
    pub lag: Option<LatencyHistogram>,
    /// Paced classes: requests sent late, and arrivals dropped.
    pub late: u64,
    pub dropped: u64,
}

impl LiveClass {
    /// Adds another part of the same class (another worker or agent).
    pub fn add(&mut self, o: &LiveClass) {
        self.transactions += o.transactions;
        self.errors.add(&o.errors);
        for &(code, n) in &o.http_status {
            match self.http_status.iter_mut().find(|(c, _)| *c == code) {
                Some((_, count)) => *count += n,
                None => self.http_status.push((code, n)),
            }
        }
        self.tx_bytes += o.tx_bytes;
        self.rx_bytes += o.rx_bytes;
        self.latency.merge(&o.latency);
        match (self.lag.as_mut(), &o.lag) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.lag = Some(b.clone()),
            _ => {}
        }
        self.late += o.late;
        self.dropped += o.dropped;
    }
}

/// One side's processes now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveSide {
    /// CPU time (user + system) of the side's processes since they
    /// started, s; `None` when unreadable.
    pub cpu_s: Option<f64>,
    /// Resident set size of the side's processes, bytes.
    pub rss_bytes: Option<u64>,
}

impl LiveSide {
    fn add(&mut self, o: &LiveSide) {
        self.cpu_s = sum(self.cpu_s, o.cpu_s);
        self.rss_bytes = sum(self.rss_bytes, o.rss_bytes);
    }
}

fn sum<T: std::ops::Add<Output = T>>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// A run's live figures at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveRun {
    /// Per class, in the mix's order.
    pub classes: Vec<LiveClass>,
    /// Clients connected (at least once) so far.
    pub connected: u64,
    /// The driver's processes, and the responder's.
    pub client: LiveSide,
    pub server: LiveSide,
}

impl LiveRun {
    /// Adds an agent's part: classes, connections and the driver side
    /// summed; the responder side only when `own_responder` (agents that
    /// drive one responder report it each, and it is counted once).
    pub fn add_part(&mut self, part: &LiveRun, own_responder: bool) {
        if self.classes.len() < part.classes.len() {
            self.classes
                .resize_with(part.classes.len(), LiveClass::default);
        }
        for (a, b) in self.classes.iter_mut().zip(&part.classes) {
            a.add(b);
        }
        self.connected += part.connected;
        self.client.add(&part.client);
        if own_responder {
            self.server.add(&part.server);
        }
    }
}

/// A histogram as its interchange text (`HISTF…`), as the agent wire
/// carries the final histograms.
mod hist_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::LatencyHistogram;

    pub fn serialize<S: Serializer>(h: &LatencyHistogram, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&h.to_base64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LatencyHistogram, D::Error> {
        let text = String::deserialize(d)?;
        LatencyHistogram::from_base64(&text).map_err(serde::de::Error::custom)
    }
}

mod opt_hist_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::LatencyHistogram;

    pub fn serialize<S: Serializer>(h: &Option<LatencyHistogram>, s: S) -> Result<S::Ok, S::Error> {
        match h {
            Some(h) => s.serialize_some(&h.to_base64()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<LatencyHistogram>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|t| LatencyHistogram::from_base64(&t).map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_edges_ascend_and_are_histogram_boundaries() {
        assert!(BUCKET_EDGES_NS.windows(2).all(|w| w[0] < w[1]));
        let mut h = LatencyHistogram::new();
        // A value just below and one at each edge: the cumulative count at
        // an edge takes exactly the values below it.
        // (Values above the 1 h ceiling are clamped: the top edges stay empty.)
        let below_ceiling = BUCKET_EDGES_NS.partition_point(|&e| e < 3_600_000_000_000);
        for &e in &BUCKET_EDGES_NS[..below_ceiling] {
            h.record_ns(e - 1);
            h.record_ns(e);
        }
        let cum = h.cumulative_below_ns(&BUCKET_EDGES_NS);
        for (i, c) in cum.iter().enumerate().take(below_ceiling) {
            assert_eq!(*c, 2 * i as u64 + 1, "edge {}", BUCKET_EDGES_NS[i]);
        }
    }

    #[test]
    fn parts_add_up_and_one_responder_counts_once() {
        let mut class = LiveClass {
            transactions: 3,
            http_status: vec![(200, 3)],
            ..LiveClass::default()
        };
        for ns in [1_000, 2_000, 3_000] {
            class.latency.record_ns(ns);
        }
        let part = LiveRun {
            classes: vec![class],
            connected: 2,
            client: LiveSide {
                cpu_s: Some(1.5),
                rss_bytes: Some(100),
            },
            server: LiveSide {
                cpu_s: Some(4.0),
                rss_bytes: Some(1000),
            },
        };
        let mut all = LiveRun::default();
        all.add_part(&part, true);
        all.add_part(&part, false);
        assert_eq!(all.classes[0].transactions, 6);
        assert_eq!(all.classes[0].latency.count(), 6);
        assert_eq!(all.classes[0].http_status, vec![(200, 6)]);
        assert_eq!(all.connected, 4);
        assert_eq!(all.client.cpu_s, Some(3.0));
        assert_eq!(all.server.cpu_s, Some(4.0));
        let text = serde_json::to_string(&part).unwrap();
        assert_eq!(serde_json::from_str::<LiveRun>(&text).unwrap(), part);
    }
}
