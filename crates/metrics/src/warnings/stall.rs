//! The delayed-ACK stall check: transactions that took 35–250 ms longer than
//! their path explains.
//!
//! Why this band. Linux delays an ACK it owes for at least TCP_DELACK_MIN
//! (40 ms) and at most TCP_DELACK_MAX (200 ms). When Nagle holds a message's
//! last small segment until the previous one is ACKed, and the receiver
//! delays that ACK, the message waits for the delayed-ACK timer: on a
//! sub-millisecond path the transaction takes 40–44 ms instead of 0.1 ms
//! (measured: `RR4(300kB/1B)` p90 44 ms; TLS `RR1(20kB/100B)` every
//! transaction 44 ms). The band starts a little below 40 ms (35 ms) to take
//! timer slack, and ends above 200 ms plus a scheduling margin (250 ms).
//!
//! The band is counted above the path's own floor ([`PathFloor`]): a lab
//! link's configured round trip (netem delay and jitter) and the time its
//! rate needs to carry the transaction's bytes. Where the floor itself is at
//! least 35 ms, a stall cannot be told from the path and nothing is judged;
//! links with loss are not judged either (a retransmission timeout, 200 ms
//! and up, lands in the same band).

use super::Warning;
use crate::LatencyHistogram;
use stackbench_record::{ClassResult, StallBand};

/// The band's low edge above the floor, ns.
pub const STALL_LOW_NS: u64 = 35_000_000;
/// The band's high edge above the floor, ns.
pub const STALL_HIGH_NS: u64 = 250_000_000;
/// Share of a class's transactions in the band from which the stall is
/// reported: one in a hundred is far beyond what a sub-millisecond path
/// shows from scheduling noise alone, and already moves the mean by ≥ 0.4 ms.
pub const STALL_SHARE_PCT: f64 = 1.0;
/// Largest transaction (both ways) that cannot take 35 ms on a path whose
/// floor is below the band: one write's worth (128 KiB) crosses loopback
/// or a LAN in well under a millisecond. Larger transfers, shared by many
/// streams, can legitimately take that long, so for them only a bimodal
/// distribution (p50 below the band) is taken for a stall.
pub const SMALL_TRANSACTION_BYTES: u64 = 128 * 1024;

/// What the network path between driver and responder adds by design.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct PathFloor {
    /// Configured round trip (netem delay + jitter, both ways, every hop).
    pub rtt_ns: u64,
    /// Shaped rate of the path, bit/s; `None`: unshaped (loopback, veth).
    pub rate_bps: Option<u64>,
    /// The path drops packets on purpose (netem loss).
    pub lossy: bool,
    /// The CPU is emulated (a TCG guest): every timing is the emulator's,
    /// tens of milliseconds for what takes microseconds, so the band would
    /// count the emulation, not Nagle.
    pub emulated: bool,
}

impl PathFloor {
    /// The least time a transaction of `bytes` (both ways) takes on the path, ns.
    pub fn floor_ns(&self, bytes: u64) -> u64 {
        let carry = self.rate_bps.filter(|r| *r > 0).map_or(0, |r| {
            (bytes as u128 * 8 * 1_000_000_000 / u128::from(r)) as u64
        });
        self.rtt_ns.saturating_add(carry)
    }
}

/// Counts `hist`'s transactions in the band above `floor_ns`; `None`
/// when the path cannot tell a stall (floor ≥ 35 ms, loss, an emulated CPU)
/// or no transaction was recorded.
pub fn stall_band(hist: &LatencyHistogram, floor_ns: u64, path: &PathFloor) -> Option<StallBand> {
    let total = hist.count();
    if total == 0 || path.lossy || path.emulated || floor_ns >= STALL_LOW_NS {
        return None;
    }
    let (low, high) = (floor_ns + STALL_LOW_NS, floor_ns + STALL_HIGH_NS);
    let n = hist.count_between_ns(low, high);
    Some(StallBand {
        floor_us: floor_ns as f64 / 1e3,
        low_us: low as f64 / 1e3,
        high_us: high as f64 / 1e3,
        transactions: n,
        of_transactions: total,
        share_pct: 100.0 * n as f64 / total as f64,
    })
}

/// `delayed_ack_stall` when at least [`STALL_SHARE_PCT`] of the class's
/// transactions fell in its band and the class's own figures cannot explain
/// it: either most transactions were fast (p50 below the band: the band is a
/// second mode), or the transaction is small enough that nothing but a wait
/// makes it take 35 ms ([`SMALL_TRANSACTION_BYTES`]; the case where every
/// transaction stalls). Open-loop classes are not judged: their latency runs
/// from the intended send, so a schedule the stack cannot keep fills the
/// band by design. The band itself is only counted where Nagle can hold
/// data (a TCP-family transport without nodelay; see the driver).
pub fn check_delayed_ack_stall(class: &ClassResult) -> Option<Warning> {
    check_stall_with(class, None)
}

/// Loopback's MSS: a socket buffer below it holds less than one full
/// segment, and the kernel's sends wait for ACKs (delayed ones too).
pub const LOOPBACK_MSS_BYTES: u32 = 64 * 1024;

/// [`check_delayed_ack_stall`] where the settings point to a cause:
/// `small_buffer` (a `--sndbuf`/`--rcvbuf` below [`LOOPBACK_MSS_BYTES`])
/// explains a band whatever the class's p50 and size (`STR1(1B/100kB)
/// --sndbuf 16kB`: every transaction 44 ms; `RR1(100kB/100kB) --sndbuf
/// 32kB`: p50 88 ms, two stalls each), and is named instead of Nagle.
pub fn check_stall_with(
    class: &ClassResult,
    small_buffer: Option<(&'static str, u32)>,
) -> Option<Warning> {
    let band = class.stall_band?;
    let open = class
        .population
        .as_ref()
        .is_some_and(|p| p.pacing == stackbench_record::PacingMode::Open);
    let p50_us = class.latency_us.map_or(0.0, |l| l.p50);
    let small = class.request_bytes + class.response_bytes <= SMALL_TRANSACTION_BYTES;
    let unexplained = p50_us < band.low_us || small || small_buffer.is_some();
    let stalled = band.transactions > 0 && band.share_pct >= STALL_SHARE_PCT;
    if open {
        return None;
    }
    if stalled && unexplained {
        return Some(Warning::DelayedAckStall {
            share_pct: band.share_pct,
            transactions: band.transactions,
            low_ms: band.low_us / 1e3,
            high_ms: Some(band.high_us / 1e3),
            p50_us,
            small_buffer,
        });
    }
    // A buffer below the MSS stalls once per buffer's worth: a transfer
    // many buffers long waits for many delayed ACKs and lands beyond the
    // band (`STR1(2MB/1B) --sndbuf 20kB`: its one transaction took 924 ms
    // where loopback needs a millisecond). The fewer transactions such a
    // stall leaves, the more the warning is needed: any share at or above
    // 1% past the band's low edge is one, read from the percentiles.
    let share_pct = small_buffer.and(beyond_low_edge(class, band.low_us))?;
    let transactions = ((share_pct / 100.0) * band.of_transactions as f64).round() as u64;
    Some(Warning::DelayedAckStall {
        share_pct,
        transactions: transactions.max(1),
        low_ms: band.low_us / 1e3,
        high_ms: None,
        p50_us,
        small_buffer,
    })
}

/// The least share of `class`'s transactions (%) that took at least
/// `low_us`, from its latency percentiles (min: all of them, p50: half, …,
/// p99: 1%); `None` below 1%.
fn beyond_low_edge(class: &ClassResult, low_us: f64) -> Option<f64> {
    let l = class.latency_us?;
    [(100.0, l.min), (50.0, l.p50), (10.0, l.p90), (1.0, l.p99)]
        .into_iter()
        .find(|(_, v)| *v >= low_us)
        .map(|(share, _)| share)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values_ms: &[(f64, u64)]) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for &(ms, n) in values_ms {
            for _ in 0..n {
                h.record_ns((ms * 1e6) as u64);
            }
        }
        h
    }

    #[test]
    fn a_loopback_stall_is_counted_and_warned() {
        // 90% at 0.2 ms, 10% at 44 ms: RR4(300kB/1B) before the cork.
        let h = hist(&[(0.2, 900), (44.0, 100)]);
        let band = stall_band(&h, 0, &PathFloor::default()).unwrap();
        assert_eq!(band.transactions, 100);
        assert!((band.share_pct - 10.0).abs() < 1e-9);
        let mut class = crate::warnings::tests::sample_class();
        class.stall_band = Some(band);
        let w = check_delayed_ack_stall(&class).unwrap();
        assert_eq!(w.code(), "delayed_ack_stall");
        assert!(w.to_string().contains("--nodelay"), "{w}");
    }

    /// RR1(100kB/100kB) --sndbuf 32kB: 24 transactions at p50 88 ms (two
    /// stalls each), large enough that the band alone is not judged a
    /// stall; the small buffer explains it, and is named.
    #[test]
    fn a_small_buffer_explains_a_band_at_the_median() {
        let h = hist(&[(88.0, 20), (90.0, 4)]);
        let mut class = crate::warnings::tests::sample_class();
        class.latency_us = h.summary_us();
        class.stall_band = stall_band(&h, 0, &PathFloor::default());
        (class.request_bytes, class.response_bytes) = (100 << 10, 100 << 10);
        assert!(check_delayed_ack_stall(&class).is_none());
        let w = check_stall_with(&class, Some(("--sndbuf", 32 << 10))).unwrap();
        let text = w.to_string();
        assert!(
            text.contains("the likely cause is --sndbuf 32768 B"),
            "{text}"
        );
        assert!(!text.contains("set --nodelay"), "{text}");
    }

    /// STR1(2MB/1B) --sndbuf 20kB: one transaction of 924 ms, many stalls
    /// long, beyond the band; it leaves one transaction, and is warned,
    /// naming the buffer. Without a small buffer a long transfer is not
    /// taken for a stall.
    #[test]
    fn a_small_buffer_stall_beyond_the_band_is_warned_however_few_transactions() {
        let h = hist(&[(924.0, 1)]);
        let mut class = crate::warnings::tests::sample_class();
        class.latency_us = h.summary_us();
        class.transactions = 1;
        class.stall_band = stall_band(&h, 0, &PathFloor::default());
        (class.request_bytes, class.response_bytes) = (2 << 20, 1);
        assert_eq!(class.stall_band.unwrap().transactions, 0);
        assert!(check_delayed_ack_stall(&class).is_none());
        let w = check_stall_with(&class, Some(("--sndbuf", 20 << 10))).unwrap();
        let text = w.to_string();
        assert!(text.contains("100.0% of transactions (1)"), "{text}");
        assert!(text.contains("took 35 ms or more"), "{text}");
        assert!(
            text.contains("the likely cause is --sndbuf 20480 B"),
            "{text}"
        );
        // A transfer that took under the band's low edge is no stall.
        let quick = hist(&[(2.0, 1)]);
        class.latency_us = quick.summary_us();
        class.stall_band = stall_band(&quick, 0, &PathFloor::default());
        assert!(check_stall_with(&class, Some(("--sndbuf", 20 << 10))).is_none());
    }

    #[test]
    fn every_transaction_stalled_is_a_stall_too() {
        // TLS RR1(20kB/100B) without nodelay: every transaction 44 ms, so
        // the run's own p50 cannot be the floor; the path's is.
        let h = hist(&[(43.8, 50), (44.3, 50)]);
        let band = stall_band(&h, 0, &PathFloor::default()).unwrap();
        assert_eq!(band.share_pct, 100.0);
    }

    #[test]
    fn the_path_floor_moves_the_band_and_can_rule_it_out() {
        // A 10 ms one-way delay: every transaction takes ~20 ms; nothing stalled.
        let path = PathFloor {
            rtt_ns: 20_000_000,
            ..PathFloor::default()
        };
        let h = hist(&[(20.3, 1000)]);
        let band = stall_band(&h, path.floor_ns(100), &path).unwrap();
        assert_eq!(band.transactions, 0);
        assert_eq!(band.low_us, 55_000.0);
        // A stall on that path lands at 20 + 40 ms.
        let h = hist(&[(20.3, 900), (60.5, 100)]);
        let band = stall_band(&h, path.floor_ns(100), &path).unwrap();
        assert_eq!(band.transactions, 100);
        // 20 MB at 100 Mbit/s takes 1.7 s: the floor is past the band's start.
        let slow = PathFloor {
            rate_bps: Some(100_000_000),
            ..PathFloor::default()
        };
        assert!(stall_band(&h, slow.floor_ns(20 << 20), &slow).is_none());
        let lossy = PathFloor {
            lossy: true,
            ..PathFloor::default()
        };
        assert!(stall_band(&h, 0, &lossy).is_none());
        let emulated = PathFloor {
            emulated: true,
            ..PathFloor::default()
        };
        assert!(stall_band(&h, 0, &emulated).is_none());
    }

    /// STR10(1B/20MB) on two CPUs: every transfer 40-80 ms because ten
    /// streams share the CPU, not because anything waits: p50 is in the band
    /// and the transfer is large, so it is not a stall. The same latencies
    /// for a 20 kB exchange are one.
    #[test]
    fn long_transfers_that_share_the_path_are_not_a_stall() {
        let h = hist(&[(45.0, 500), (70.0, 500)]);
        let mut class = crate::warnings::tests::sample_class();
        class.latency_us = h.summary_us();
        class.stall_band = stall_band(&h, 0, &PathFloor::default());
        (class.request_bytes, class.response_bytes) = (1, 20 << 20);
        assert!(check_delayed_ack_stall(&class).is_none());
        (class.request_bytes, class.response_bytes) = (20 << 10, 100);
        assert!(check_delayed_ack_stall(&class).is_some());
        // A large transfer whose band is a second mode is still a stall.
        let h = hist(&[(5.0, 900), (45.0, 100)]);
        class.latency_us = h.summary_us();
        class.stall_band = stall_band(&h, 0, &PathFloor::default());
        (class.request_bytes, class.response_bytes) = (1, 20 << 20);
        assert!(check_delayed_ack_stall(&class).is_some());
    }

    #[test]
    fn scheduling_noise_below_the_share_is_not_a_stall() {
        let h = hist(&[(0.2, 999), (40.0, 5)]);
        let mut class = crate::warnings::tests::sample_class();
        class.stall_band = stall_band(&h, 0, &PathFloor::default());
        assert!(check_delayed_ack_stall(&class).is_none());
    }

    #[test]
    fn repetitions_add_up() {
        let a = StallBand {
            transactions: 10,
            of_transactions: 100,
            share_pct: 10.0,
            ..StallBand::default()
        };
        let b = StallBand {
            of_transactions: 300,
            ..StallBand::default()
        };
        assert_eq!(a.add(&a).share_pct, 10.0);
        let ab = a.add(&b);
        assert_eq!((ab.transactions, ab.of_transactions), (10, 400));
        assert_eq!(ab.share_pct, 2.5);
    }
}
