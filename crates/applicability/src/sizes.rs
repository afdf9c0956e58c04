//! Application message sizes, estimated from `tcp_info` counters. The
//! kernel counts payload bytes and data segments, not `send()` calls, so a
//! size is estimated per sampling interval as payload per data segment:
//!
//! - at most half an MSS per segment: each segment held one message (a
//!   message of more than one MSS spans segments averaging more than half
//!   an MSS), so the mean is the mean message size of the interval;
//! - more than half an MSS: the segments may be messages of that size or
//!   pieces of larger ones; the bucket `up_to_bytes = None` keeps them,
//!   counted by segments (an upper bound of the messages).
//!
//! Messages the stack coalesced (Nagle, autocorking, a busy sender) read as
//! one larger message; a request/response exchange, one message in flight
//! at a time, is measured as sent. On loopback (MSS ≈ 64 KiB) every size up
//! to 32 KiB is exact, on Ethernet (MSS 1448) up to 724 B.

use stackbench_record::applicability::SizeBucket;

/// Upper bounds of the exact buckets, bytes.
pub const BOUNDS: [u64; 6] = [64, 256, 1024, 4096, 16384, 65536];

/// Messages and bytes per bucket; index `BOUNDS.len()` is the
/// segment-sized bucket whose sizes are not known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SizeTally {
    messages: [u64; BOUNDS.len() + 1],
    bytes: [u64; BOUNDS.len() + 1],
}

impl SizeTally {
    /// One interval of one direction: `bytes` of payload in `segments`
    /// data segments of at most `mss` bytes (0: unknown).
    pub fn add(&mut self, bytes: u64, segments: u64, mss: u32) {
        if segments == 0 || bytes == 0 {
            return;
        }
        let mean = bytes / segments;
        let fits = mss == 0 || mean * 2 <= u64::from(mss);
        let i = if fits {
            BOUNDS
                .iter()
                .position(|b| mean <= *b)
                .unwrap_or(BOUNDS.len())
        } else {
            BOUNDS.len()
        };
        self.messages[i] += segments;
        self.bytes[i] += bytes;
    }

    /// Adds another tally.
    pub fn merge(&mut self, other: &SizeTally) {
        for i in 0..self.messages.len() {
            self.messages[i] += other.messages[i];
            self.bytes[i] += other.bytes[i];
        }
    }

    /// The mean message size, bytes: over the exact buckets when any
    /// message was measured, else payload per segment over all (a lower
    /// bound for messages larger than one segment). `None` with no data.
    pub fn mean_message_bytes(&self) -> Option<f64> {
        let exact = BOUNDS.len();
        let (m, b) = (
            self.messages[..exact].iter().sum::<u64>(),
            self.bytes[..exact].iter().sum::<u64>(),
        );
        if m > 0 {
            return Some(b as f64 / m as f64);
        }
        let (m, b) = (self.messages[exact], self.bytes[exact]);
        (m > 0).then(|| b as f64 / m as f64)
    }

    /// The stored buckets, empty ones left out.
    pub fn buckets(&self) -> Vec<SizeBucket> {
        (0..self.messages.len())
            .filter(|&i| self.messages[i] > 0)
            .map(|i| SizeBucket {
                up_to_bytes: BOUNDS.get(i).copied(),
                messages: self.messages[i],
                bytes: self.bytes[i],
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_response_intervals_give_the_message_sizes() {
        let mut t = SizeTally::default();
        // 4 kB requests on loopback (MSS 65483): 250 per interval.
        t.add(250 * 4096, 250, 65483);
        // 64 B requests on Ethernet: exact too.
        t.add(10 * 64, 10, 1448);
        let b = t.buckets();
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].up_to_bytes, b[0].messages, b[0].bytes),
            (Some(64), 10, 640)
        );
        assert_eq!(
            (b[1].up_to_bytes, b[1].messages, b[1].bytes),
            (Some(4096), 250, 250 * 4096)
        );
        let mean = t.mean_message_bytes().unwrap();
        assert!((mean - (250.0 * 4096.0 + 640.0) / 260.0).abs() < 1e-9);
    }

    #[test]
    fn segments_of_more_than_half_an_mss_are_not_given_a_size() {
        let mut t = SizeTally::default();
        // 4 kB messages on Ethernet: 1448 + 1448 + 1200 per message.
        t.add(100 * 4096, 300, 1448);
        let b = t.buckets();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].up_to_bytes, None);
        assert_eq!(b[0].messages, 300);
        // Only the per-segment lower bound is left.
        assert!((t.mean_message_bytes().unwrap() - 100.0 * 4096.0 / 300.0).abs() < 1e-9);
        // An interval without data adds nothing.
        t.add(0, 0, 1448);
        t.add(500, 0, 1448);
        assert_eq!(t.buckets()[0].messages, 300);
    }

    #[test]
    fn merging_adds_bucket_by_bucket() {
        let mut a = SizeTally::default();
        a.add(100, 1, 65483);
        let mut b = SizeTally::default();
        b.add(300, 3, 65483);
        b.add(70_000, 1, 0);
        a.merge(&b);
        let got = a.buckets();
        assert_eq!(
            (got[0].up_to_bytes, got[0].messages, got[0].bytes),
            (Some(256), 4, 400)
        );
        assert_eq!((got[1].up_to_bytes, got[1].messages), (None, 1));
    }
}
