//! The live figures as an OpenMetrics text exposition (what `GET /metrics`
//! of `--metrics-listen` answers), encoded with `prometheus-client`: a
//! collector reads one [`Exposition`] state per scrape, so nothing is
//! registered or updated per transaction. [`FAMILIES`] is the one list of
//! what is exposed (the encoder writes exactly these; the Grafana
//! dashboard's test reads its names from here).
//!
//! Counters restart with each workload run of a sweep or repetition (a
//! counter reset, which `rate()` handles); warnings count over the whole
//! process.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use crate::live::{LiveClass, LiveRun, LiveSide, BUCKET_EDGES_NS};
use crate::LatencyHistogram;

/// `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// What a metric family is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// One exposed metric family: its descriptor, and what it samples from the
/// state at each scrape (one table row: [`FAMILIES`] is the encoder).
#[derive(Clone, Copy)]
pub struct Family {
    /// Name without the unit.
    pub base: &'static str,
    /// OpenMetrics unit, appended to the name (`_seconds`, `_bytes`).
    pub unit: Option<&'static str>,
    pub kind: Kind,
    pub help: &'static str,
    samples: Sampler,
}

impl std::fmt::Debug for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Family")
            .field("name", &self.name())
            .field("kind", &self.kind)
            .finish()
    }
}

/// One family's samples in a scrape, each with its labels, by how they are
/// written.
enum Samples<'a> {
    /// Counters of whole counts.
    Counts(Vec<(Labels, u64)>),
    /// Counters of a continuous quantity (CPU-seconds).
    Amounts(Vec<(Labels, f64)>),
    Gauges(Vec<(Labels, f64)>),
    /// Histograms at [`BUCKET_EDGES_NS`], written in seconds.
    Histograms(Vec<(Labels, &'a LatencyHistogram)>),
}

/// What a family samples from the state.
type Sampler = for<'a> fn(&'a Exposition) -> Samples<'a>;

impl Family {
    /// The family's name as exposed, unit included.
    pub fn name(&self) -> String {
        match self.unit {
            Some(u) => format!("{}_{u}", self.base),
            None => self.base.to_string(),
        }
    }

    /// The sample names of the family (`_total` of a counter; `_bucket`,
    /// `_count` and `_sum` of a histogram), what a query names.
    pub fn sample_names(&self) -> Vec<String> {
        let name = self.name();
        match self.kind {
            Kind::Counter => vec![format!("{name}_total")],
            Kind::Gauge => vec![name],
            Kind::Histogram => ["bucket", "count", "sum"]
                .iter()
                .map(|s| format!("{name}_{s}"))
                .collect(),
        }
    }
}

const fn family(
    base: &'static str,
    unit: Option<&'static str>,
    kind: Kind,
    help: &'static str,
    samples: Sampler,
) -> Family {
    Family {
        base,
        unit,
        kind,
        help,
        samples,
    }
}

const TRANSACTIONS: Family = family(
    "stackbench_transactions",
    None,
    Kind::Counter,
    "Transactions counted in the measurement window, per class.",
    |e| Samples::Counts(e.per_class(|c| c.transactions)),
);
const ERRORS: Family = family("stackbench_errors", None, Kind::Counter, "Errors since the run started (warm-up included), per class and kind (refused, reset, eof, timeout, other, http_status).",
    |e| {
        Samples::Counts(e.per_class_by("kind", |c| {
            let x = c.errors;
            [
                ("refused", x.refused),
                ("reset", x.reset),
                ("eof", x.eof),
                ("timeout", x.timeout),
                ("other", x.other),
                ("http_status", x.http_status),
            ]
            .map(|(kind, n)| (kind.to_string(), n))
            .to_vec()
        }))
    },
);
const HTTP_RESPONSES: Family = family(
    "stackbench_http_responses",
    None,
    Kind::Counter,
    "Responses in the window by HTTP status code (classes whose protocol has one).",
    |e| {
        Samples::Counts(e.per_class_by("code", |c| {
            let mut codes = c.http_status.clone();
            codes.sort_unstable();
            codes
                .into_iter()
                .map(|(code, n)| (code.to_string(), n))
                .collect()
        }))
    },
);
const RATE: Family = family(
    "stackbench_transaction_rate_per_second",
    None,
    Kind::Gauge,
    "Transactions per second over the last second or so, per class.",
    |e| {
        Samples::Gauges(
            (0..e.classes.len())
                .map(|i| (e.class(i), e.rate_per_s.get(i).copied().unwrap_or(0.0)))
                .collect(),
        )
    },
);
const LATENCY: Family = family("stackbench_latency", Some("seconds"), Kind::Histogram, "Transaction latency in the window (open loop: from the intended send time), the run's own HdrHistogram buckets, per class.",
    |e| Samples::Histograms(e.classes().map(|(i, c)| (e.class(i), &c.latency)).collect()),
);
const LAG: Family = family(
    "stackbench_generator_lag",
    Some("seconds"),
    Kind::Histogram,
    "Paced classes: actual minus intended send time of requests in the window.",
    |e| {
        Samples::Histograms(
            e.classes()
                .filter_map(|(i, c)| Some((e.class(i), c.lag.as_ref()?)))
                .collect(),
        )
    },
);
const LATE: Family = family(
    "stackbench_late_requests",
    None,
    Kind::Counter,
    "Paced classes: requests sent later than intended.",
    |e| Samples::Counts(e.paced(|c| c.late)),
);
const DROPPED: Family = family(
    "stackbench_dropped_arrivals",
    None,
    Kind::Counter,
    "Open loop: arrivals dropped because every client was busy.",
    |e| Samples::Counts(e.paced(|c| c.dropped)),
);
const PAYLOAD: Family = family("stackbench_payload", Some("bytes"), Kind::Counter, "Payload bytes in the window, per class and direction (sent, received) as the driver sees them.",
    |e| {
        Samples::Counts(e.per_class_by("direction", |c| {
            vec![("sent".into(), c.tx_bytes), ("received".into(), c.rx_bytes)]
        }))
    },
);
const CPU: Family = family("stackbench_cpu", Some("seconds"), Kind::Counter, "CPU time (user + system) of each side's processes since they started (side client: the driver; server: the responder).",
    |e| Samples::Amounts(e.per_side(|x| x.cpu_s)),
);
const RSS: Family = family(
    "stackbench_memory_rss",
    Some("bytes"),
    Kind::Gauge,
    "Resident set size of each side's processes.",
    |e| Samples::Gauges(e.per_side(|x| Some(x.rss_bytes? as f64))),
);
const CONNECTED: Family = family(
    "stackbench_clients_connected",
    None,
    Kind::Gauge,
    "Clients connected (at least once) so far.",
    |e| Samples::Gauges(vec![(Labels::new(), e.connected as f64)]),
);
const CLIENTS: Family = family(
    "stackbench_clients",
    None,
    Kind::Gauge,
    "Clients the run has.",
    |e| Samples::Gauges(vec![(Labels::new(), e.clients as f64)]),
);
const WINDOW: Family = family(
    "stackbench_window_elapsed",
    Some("seconds"),
    Kind::Gauge,
    "Time into the measurement window (0 while connecting and warming up).",
    |e| Samples::Gauges(vec![(Labels::new(), e.measured.as_secs_f64())]),
);
const WARMUP: Family = family(
    "stackbench_in_warmup",
    None,
    Kind::Gauge,
    "1 while clients connect or warm up, 0 in the window.",
    |e| Samples::Gauges(vec![(Labels::new(), f64::from(u8::from(e.in_warmup)))]),
);
const WARNINGS: Family = family(
    "stackbench_warnings",
    None,
    Kind::Counter,
    "Measurement-quality warnings found so far, by code.",
    |e| {
        Samples::Counts(
            e.warnings
                .iter()
                .map(|(code, n)| (vec![("code", code.clone())], *n))
                .collect(),
        )
    },
);

/// Every family the exposition has, in its order.
pub const FAMILIES: &[Family] = &[
    TRANSACTIONS,
    ERRORS,
    HTTP_RESPONSES,
    RATE,
    LATENCY,
    LAG,
    LATE,
    DROPPED,
    PAYLOAD,
    CPU,
    RSS,
    CONNECTED,
    CLIENTS,
    WINDOW,
    WARMUP,
    WARNINGS,
];

/// A rate is taken over at least this much time.
const RATE_SPAN: Duration = Duration::from_secs(1);

/// What the exposition shows: the latest figures of the run going on.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    /// The classes of the run (canonical notation), in mix order.
    classes: Vec<String>,
    clients: u64,
    connected: u64,
    in_warmup: bool,
    measured: Duration,
    live: LiveRun,
    /// Per class, transactions per second, and where the last rate started.
    rate_per_s: Vec<f64>,
    rate_from: Option<(Duration, Vec<u64>)>,
    warnings: BTreeMap<String, u64>,
}

impl Exposition {
    /// A workload run starts: its classes and client count; its counters
    /// start from zero.
    pub fn started(&mut self, classes: Vec<String>, clients: u64) {
        self.rate_per_s = vec![0.0; classes.len()];
        self.live = LiveRun {
            classes: vec![LiveClass::default(); classes.len()],
            ..LiveRun::default()
        };
        self.classes = classes;
        self.clients = clients;
        self.connected = 0;
        self.in_warmup = true;
        self.measured = Duration::ZERO;
        self.rate_from = None;
    }

    /// The run's progress: time, phase, connections and counts (every
    /// ~100 ms), with the live figures when the watch assembled new ones.
    pub fn progress(
        &mut self,
        (elapsed, measured, in_warmup): (Duration, Option<Duration>, bool),
        connected: u64,
        transactions: &[u64],
        live: Option<&LiveRun>,
    ) {
        self.connected = connected;
        self.in_warmup = in_warmup;
        self.measured = measured.unwrap_or_default();
        if let Some(live) = live {
            self.live.clone_from(live);
        }
        match &self.rate_from {
            Some((at, counts)) if elapsed >= *at + RATE_SPAN => {
                let dt = (elapsed - *at).as_secs_f64();
                self.rate_per_s = transactions
                    .iter()
                    .zip(counts)
                    .map(|(now, then)| now.saturating_sub(*then) as f64 / dt)
                    .collect();
                self.rate_from = Some((elapsed, transactions.to_vec()));
            }
            Some(_) => {}
            None => self.rate_from = Some((elapsed, transactions.to_vec())),
        }
    }

    /// A measurement-quality warning was found.
    pub fn warning(&mut self, code: &str) {
        *self.warnings.entry(code.to_string()).or_default() += 1;
    }

    /// The OpenMetrics text, ending with `# EOF`.
    pub fn encode(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Snapshot(Arc::new(self.clone()))));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry)
            .expect("writing into a String cannot fail");
        out
    }
}

/// One scrape's copy of the state, as `prometheus-client` wants a
/// `'static` collector.
#[derive(Debug)]
struct Snapshot(Arc<Exposition>);

type Labels = Vec<(&'static str, String)>;

impl Collector for Snapshot {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut out = Families(&mut enc);
        for f in FAMILIES {
            match (f.samples)(&self.0) {
                Samples::Counts(v) => out.counters(f, v)?,
                Samples::Amounts(v) => out.counters(f, v)?,
                Samples::Gauges(v) => out.gauges(f, v)?,
                Samples::Histograms(v) => out.histograms(f, v)?,
            }
        }
        Ok(())
    }
}

/// The samplers' views of the state.
impl Exposition {
    /// The labels of class `i`.
    fn class(&self, i: usize) -> Labels {
        vec![("class", self.classes[i].clone())]
    }

    /// The classes with live figures, with their index.
    fn classes(&self) -> impl Iterator<Item = (usize, &LiveClass)> {
        self.live
            .classes
            .iter()
            .enumerate()
            .take(self.classes.len())
    }

    /// One value per class.
    fn per_class(&self, value: fn(&LiveClass) -> u64) -> Vec<(Labels, u64)> {
        self.classes()
            .map(|(i, c)| (self.class(i), value(c)))
            .collect()
    }

    /// Values per class under a second label `key`.
    fn per_class_by(
        &self,
        key: &'static str,
        values: impl Fn(&LiveClass) -> Vec<(String, u64)>,
    ) -> Vec<(Labels, u64)> {
        self.classes()
            .flat_map(|(i, c)| {
                values(c)
                    .into_iter()
                    .map(move |(v, n)| (with(self.class(i), key, &v), n))
            })
            .collect()
    }

    /// One value per paced class (one with a generator lag).
    fn paced(&self, value: fn(&LiveClass) -> u64) -> Vec<(Labels, u64)> {
        self.classes()
            .filter(|(_, c)| c.lag.is_some())
            .map(|(i, c)| (self.class(i), value(c)))
            .collect()
    }

    /// One value per side, left out where unreadable.
    fn per_side(&self, value: fn(&LiveSide) -> Option<f64>) -> Vec<(Labels, f64)> {
        [("client", &self.live.client), ("server", &self.live.server)]
            .into_iter()
            .filter_map(|(s, x)| Some((vec![("side", s.to_string())], value(x)?)))
            .collect()
    }
}

fn with(mut labels: Labels, key: &'static str, value: &str) -> Labels {
    labels.push((key, value.to_string()));
    labels
}

/// Writes each family's descriptor and its samples.
struct Families<'a, 'b>(&'a mut DescriptorEncoder<'b>);

impl Families<'_, '_> {
    fn family<T>(
        &mut self,
        f: &Family,
        samples: impl IntoIterator<Item = (Labels, T)>,
        mut write: impl FnMut(&mut MetricEncoder, T) -> Result<(), std::fmt::Error>,
    ) -> Result<(), std::fmt::Error> {
        let unit = f.unit.map(|u| match u {
            "seconds" => Unit::Seconds,
            "bytes" => Unit::Bytes,
            other => Unit::Other(other.to_string()),
        });
        let kind = match f.kind {
            Kind::Counter => MetricType::Counter,
            Kind::Gauge => MetricType::Gauge,
            Kind::Histogram => MetricType::Histogram,
        };
        let mut family = self
            .0
            .encode_descriptor(f.base, f.help, unit.as_ref(), kind)?;
        for (labels, value) in samples {
            write(&mut family.encode_family(&labels)?, value)?;
        }
        Ok(())
    }

    fn counters<T: prometheus_client::encoding::EncodeCounterValue>(
        &mut self,
        f: &Family,
        samples: impl IntoIterator<Item = (Labels, T)>,
    ) -> Result<(), std::fmt::Error> {
        self.family(f, samples, |m, v| {
            m.encode_counter::<NoLabelSet, T, f64>(&v, None)
        })
    }

    fn gauges(
        &mut self,
        f: &Family,
        samples: impl IntoIterator<Item = (Labels, f64)>,
    ) -> Result<(), std::fmt::Error> {
        self.family(f, samples, |m, v| m.encode_gauge(&v))
    }

    /// A histogram at [`BUCKET_EDGES_NS`], in seconds, and `+Inf`.
    fn histograms<'h>(
        &mut self,
        f: &Family,
        samples: impl IntoIterator<Item = (Labels, &'h LatencyHistogram)>,
    ) -> Result<(), std::fmt::Error> {
        self.family(f, samples, |m, h| {
            let cumulative = h.cumulative_below_ns(&BUCKET_EDGES_NS);
            let mut below = 0;
            let mut buckets: Vec<(f64, u64)> = BUCKET_EDGES_NS
                .iter()
                .zip(cumulative)
                .map(|(&edge, cum)| {
                    let n = cum - below;
                    below = cum;
                    (edge as f64 / 1e9, n)
                })
                .collect();
            buckets.push((f64::INFINITY, h.count() - below));
            m.encode_histogram::<NoLabelSet>(
                h.sum_ns() / 1e9,
                h.count(),
                &buckets,
                None::<&HashMap<usize, Exemplar<NoLabelSet, f64>>>,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposition() -> Exposition {
        let mut e = Exposition::default();
        e.started(vec!["RR2(1B/1B)".into(), "CRR1(1B/1B)".into()], 3);
        let mut live = LiveRun {
            classes: vec![LiveClass::default(), LiveClass::default()],
            ..LiveRun::default()
        };
        for ns in [1_500, 20_000, 20_001, 5_000_000] {
            live.classes[0].latency.record_ns(ns);
        }
        live.classes[0].transactions = 4;
        live.classes[1].lag = Some(LatencyHistogram::new());
        live.classes[1].http_status = vec![(503, 1), (200, 2)];
        live.client.cpu_s = Some(0.25);
        e.progress(
            (Duration::from_secs(1), None, true),
            3,
            &[0, 0],
            Some(&live),
        );
        e.progress(
            (Duration::from_secs(3), Some(Duration::from_secs(1)), false),
            3,
            &[40, 10],
            None,
        );
        e.warning("driver_saturated");
        e
    }

    #[test]
    fn the_exposition_has_every_family_and_ends_with_eof() {
        let text = exposition().encode();
        assert!(text.ends_with("# EOF\n"), "{text}");
        for f in FAMILIES {
            assert!(
                text.contains(&format!("# TYPE {} ", f.name())),
                "{} missing:\n{text}",
                f.name()
            );
        }
        let types = text.lines().filter(|l| l.starts_with("# TYPE ")).count();
        assert_eq!(types, FAMILIES.len(), "{text}");
        assert!(
            text.contains("stackbench_transaction_rate_per_second{class=\"RR2(1B/1B)\"} 20.0"),
            "{text}"
        );
        assert!(
            text.contains("stackbench_http_responses_total{class=\"CRR1(1B/1B)\",code=\"200\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("stackbench_cpu_seconds_total{side=\"client\"} 0.25"),
            "{text}"
        );
        assert!(
            !text.contains("side=\"server\""),
            "unreadable figures are left out: {text}"
        );
        assert!(
            text.contains("stackbench_warnings_total{code=\"driver_saturated\"} 1"),
            "{text}"
        );
    }

    /// Each family's sampler writes what its descriptor says it is.
    #[test]
    fn every_family_samples_its_own_kind() {
        let e = exposition();
        for f in FAMILIES {
            let kind = match (f.samples)(&e) {
                Samples::Counts(_) | Samples::Amounts(_) => Kind::Counter,
                Samples::Gauges(_) => Kind::Gauge,
                Samples::Histograms(_) => Kind::Histogram,
            };
            assert_eq!(kind, f.kind, "{}", f.name());
        }
    }

    #[test]
    fn histogram_buckets_are_the_runs_own_and_cumulative() {
        let text = exposition().encode();
        let buckets: Vec<u64> = text
            .lines()
            .filter(|l| {
                l.starts_with("stackbench_latency_seconds_bucket{") && l.contains("class=\"RR2")
            })
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(buckets.len(), BUCKET_EDGES_NS.len() + 1, "{text}");
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
        assert_eq!(*buckets.last().unwrap(), 4);
        // 1.5 µs lies below 1.536 µs (3·2^9 ns), the second edge.
        assert_eq!(buckets[0], 0);
        assert_eq!(buckets[1], 1);
        assert!(
            text.contains("stackbench_latency_seconds_count{class=\"RR2(1B/1B)\"} 4"),
            "{text}"
        );
    }
}
