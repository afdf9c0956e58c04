//! Per-worker latency histograms (neper `histo.h`, fio `stat.h`): fixed memory,
//! constant-time recording with no allocation, merged once at the end.
//!
//! Values are recorded in nanoseconds with 3 significant digits (error ≤ 0.1% of
//! the value) over 1 ns … 1 hour; that costs about 200 KiB per histogram
//! whatever the run length.

use hdrhistogram::Histogram;

use stackbench_record::LatencyUs;

/// Highest latency the histogram can hold: one hour, in ns. Larger values are
/// clamped (and would show as a max of one hour).
const HIGHEST_NS: u64 = 3_600 * 1_000_000_000;

/// A latency histogram in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    pub fn new() -> LatencyHistogram {
        let hist = Histogram::new_with_bounds(1, HIGHEST_NS, 3).expect("static bounds are valid");
        LatencyHistogram { hist }
    }

    /// Records one latency. Never allocates; values outside the range are clamped.
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    /// Adds another histogram's counts (the merge at the end of a run).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Same bounds on both sides, so `add` cannot fail.
        self.hist.add(&other.hist).expect("histograms share bounds");
    }

    /// The histogram in HdrHistogram's interchange encoding — V2 with
    /// DEFLATE, then base64 (`HISTF…`), what HdrHistogram's own log tools
    /// and wrk2-style reports read. A few hundred bytes for a typical run:
    /// small enough to travel from an agent to its controller or sit in a
    /// record, so distributions are merged by adding counts, never by
    /// averaging percentiles.
    pub fn to_base64(&self) -> String {
        use base64::Engine;
        let mut bytes = Vec::new();
        use hdrhistogram::serialization::Serializer;
        hdrhistogram::serialization::V2DeflateSerializer::new()
            .serialize(&self.hist, &mut bytes)
            .expect("serializing into memory cannot fail");
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// The histogram [`LatencyHistogram::to_base64`] wrote; the error says
    /// what is wrong with `text`.
    pub fn from_base64(text: &str) -> Result<LatencyHistogram, String> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| format!("latency histogram: not base64 ({e})"))?;
        let decoded: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("latency histogram: not an HdrHistogram V2 encoding ({e:?})"))?;
        let mut out = LatencyHistogram::new();
        out.hist
            .add(&decoded)
            .map_err(|e| format!("latency histogram: values outside 1 ns..1 h ({e:?})"))?;
        Ok(out)
    }

    /// Makes this histogram a copy of `other` without allocating (a
    /// worker's live copy, taken every few hundred ms: a reset and an add
    /// over the ~32k counts, tens of µs).
    pub fn copy_from(&mut self, other: &LatencyHistogram) {
        self.hist.reset();
        self.merge(other);
    }

    /// Sum of the recorded values, ns, to the histogram's 3 significant
    /// digits (each value counted at its bucket's middle).
    pub fn sum_ns(&self) -> f64 {
        self.hist.mean() * self.hist.len() as f64
    }

    /// Cumulative counts at the ascending bucket edges `edges_ns`: entry i
    /// counts the values whose histogram bucket lies wholly below
    /// `edges_ns[i]`. With edges on the histogram's own bucket boundaries
    /// ([`crate::live::BUCKET_EDGES_NS`]) that is exactly the values below
    /// the edge; nothing is re-binned from percentiles. One pass over the
    /// recorded buckets.
    pub fn cumulative_below_ns(&self, edges_ns: &[u64]) -> Vec<u64> {
        let mut per_edge = vec![0u64; edges_ns.len()];
        for v in self.hist.iter_recorded() {
            let top = v.value_iterated_to();
            let i = edges_ns.partition_point(|&e| e <= top);
            if let Some(slot) = per_edge.get_mut(i) {
                *slot += v.count_at_value();
            }
        }
        let mut running = 0;
        for slot in &mut per_edge {
            running += *slot;
            *slot = running;
        }
        per_edge
    }

    /// Number of recorded values.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Recorded values from `low_ns` to `high_ns`, both included (to the
    /// histogram's 3 significant digits).
    pub fn count_between_ns(&self, low_ns: u64, high_ns: u64) -> u64 {
        self.hist.count_between(low_ns, high_ns)
    }

    /// The summary stored in results, in microseconds; `None` without a
    /// sample, where every figure would be a made-up 0.
    pub fn summary_us(&self) -> Option<LatencyUs> {
        if self.hist.is_empty() {
            return None;
        }
        let q = |q: f64| self.hist.value_at_quantile(q) as f64 / 1e3;
        Some(LatencyUs {
            mean: self.hist.mean() / 1e3,
            min: self.hist.min() as f64 / 1e3,
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: self.hist.max() as f64 / 1e3,
            stdev: self.hist.stdev() / 1e3,
        })
    }
}

/// How much of the latency tail is the generator's: the generator lag's
/// p99 as a share of the latency p99, percent, capped at 100 (the lag of
/// an open loop is inside its corrected latency; a think-time driver woken
/// late to send is as late to read, so its lag is the scale of the delays
/// its own scheduling adds to the latencies it measures). `None` without
/// either figure or with a zero latency.
pub fn generator_lag_p99_share_pct(
    lag_p99_us: Option<f64>,
    latency_p99_us: Option<f64>,
) -> Option<f64> {
    let (lag, latency) = (lag_p99_us?, latency_p99_us?);
    (latency > 0.0).then(|| (100.0 * lag / latency).clamp(0.0, 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_share_is_capped_and_absent_without_figures() {
        assert_eq!(
            generator_lag_p99_share_pct(Some(50.0), Some(200.0)),
            Some(25.0)
        );
        assert_eq!(
            generator_lag_p99_share_pct(Some(900.0), Some(300.0)),
            Some(100.0)
        );
        assert_eq!(generator_lag_p99_share_pct(None, Some(300.0)), None);
        assert_eq!(generator_lag_p99_share_pct(Some(1.0), None), None);
        assert_eq!(generator_lag_p99_share_pct(Some(1.0), Some(0.0)), None);
    }

    #[test]
    fn summary_of_uniform_values() {
        let mut h = LatencyHistogram::new();
        for us in 1..=1000u64 {
            h.record_ns(us * 1000);
        }
        let s = h.summary_us().unwrap();
        assert!((s.mean - 500.5).abs() < 1.0, "{s:?}");
        assert!((s.p50 - 500.0).abs() <= 1.0, "{s:?}");
        assert!((s.p99 - 990.0).abs() <= 1.0, "{s:?}");
        assert!((s.max - 1000.0).abs() <= 1.0, "{s:?}");
        assert_eq!(h.count(), 1000);
    }

    #[test]
    fn the_interchange_encoding_round_trips_and_merges_exactly() {
        let (mut a, mut b) = (LatencyHistogram::new(), LatencyHistogram::new());
        for us in 1..=1000u64 {
            a.record_ns(us * 1000);
            b.record_ns(us * 7_000);
        }
        let text = a.to_base64();
        assert!(text.starts_with("HISTF"), "{text}");
        assert!(text.len() < 4096, "{} bytes", text.len());
        let back = LatencyHistogram::from_base64(&text).unwrap();
        assert_eq!(back.summary_us(), a.summary_us());
        // Merging decoded halves equals merging the originals: what a
        // controller does with its agents' histograms.
        let mut merged = back;
        merged.merge(&LatencyHistogram::from_base64(&b.to_base64()).unwrap());
        a.merge(&b);
        assert_eq!(merged.summary_us(), a.summary_us());
        assert_eq!(merged.count(), 2000);
        let empty = LatencyHistogram::from_base64(&LatencyHistogram::new().to_base64()).unwrap();
        assert_eq!(empty.count(), 0);
    }

    #[test]
    fn a_damaged_encoding_is_an_error_not_a_panic() {
        assert!(LatencyHistogram::from_base64("not base64!")
            .unwrap_err()
            .contains("base64"));
        assert!(LatencyHistogram::from_base64("SElTVEZBQUFB")
            .unwrap_err()
            .contains("V2"));
    }

    #[test]
    fn merge_adds_counts_and_empty_has_no_summary() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        assert_eq!(a.summary_us(), None);
        a.record_ns(10_000);
        b.record_ns(30_000);
        b.record_ns(u64::MAX);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert!(a.summary_us().unwrap().max >= 3.6e9 * 0.999);
    }
}
