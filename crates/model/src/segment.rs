//! Execution segments: how one run's work is divided among N driver
//! processes (agents) so that together they do exactly what one process
//! would. Agent `i` of `n` owns the fraction [i/n, (i+1)/n) of every class:
//! the clients whose global indexes fall in it, their share of the class's
//! open-loop rate, and its share of a transaction limit. The idea and the
//! name are k6's (lib/execution_segment.go, where each instance computes its
//! own share from its segment alone, with no scheduler); the arithmetic here
//! is integer, with floors of `total × i / n` so that the shares telescope to
//! the total exactly — no client or transaction is lost or doubled to
//! rounding, whatever `n`.
//!
//! Clients keep their global indexes, so a client's random stream (think
//! times, open-loop phase, seeded by its index) is the same whichever agent
//! runs it: the union of the agents' schedules is the one-process schedule.

use std::ops::Range;

/// Agent `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Segment {
    index: u32,
    count: u32,
}

impl Segment {
    /// The whole run: one agent.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// Agent `index` of `count`; the error names the fix.
    pub fn new(index: u32, count: u32) -> Result<Segment, String> {
        if count == 0 {
            return Err("an agent count of 0: give at least 1 agent".into());
        }
        if index >= count {
            return Err(format!(
                "agent {index} of {count}: agents are numbered 0 to {}",
                count - 1
            ));
        }
        Ok(Segment { index, count })
    }

    /// Every segment of a run split among `count` agents, in order.
    pub fn all(count: u32) -> impl Iterator<Item = Segment> {
        (0..count.max(1)).map(move |index| Segment {
            index,
            count: count.max(1),
        })
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    pub fn count(&self) -> u32 {
        self.count
    }

    /// `floor(total × k / n)` without overflow.
    fn cut(&self, total: u64, k: u32) -> u64 {
        (u128::from(total) * u128::from(k) / u128::from(self.count)) as u64
    }

    /// The global indexes of this segment's share of `total` items (clients
    /// of a class, connections of a population): contiguous, disjoint from
    /// every other segment's, and together exactly `0..total`.
    pub fn range(&self, total: u64) -> Range<u64> {
        self.cut(total, self.index)..self.cut(total, self.index + 1)
    }

    /// How many of `total` items are this segment's (the length of
    /// [`Segment::range`]); the shares of all segments add up to `total`.
    pub fn share(&self, total: u64) -> u64 {
        let r = self.range(total);
        r.end - r.start
    }

    /// This segment's part of `transactions` spread over `clients` the way
    /// one process spreads them (client `i` gets `transactions / clients`,
    /// plus one for the first `transactions % clients`): the sum of the
    /// quotas of the clients in [`Segment::range`], so the parts of all
    /// segments add up to `transactions` exactly.
    pub fn quota_share(&self, transactions: u64, clients: u64) -> u64 {
        if clients == 0 {
            return 0;
        }
        let r = self.range(clients);
        let (each, extra) = (transactions / clients, transactions % clients);
        let with_extra = r.end.min(extra).saturating_sub(r.start);
        (r.end - r.start) * each + with_extra
    }

    /// This segment's part of a class's open-loop rate (events per second):
    /// the rate in proportion to the clients it runs, since a class's rate is
    /// spread evenly over its connections.
    pub fn rate_share(&self, per_s: f64, clients: u64) -> f64 {
        if clients == 0 {
            return 0.0;
        }
        per_s * self.share(clients) as f64 / clients as f64
    }
}

impl Default for Segment {
    /// The whole run.
    fn default() -> Segment {
        Segment::WHOLE
    }
}

impl std::fmt::Display for Segment {
    /// `2/4` is agent 2 of 4 (numbered from 0).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_exactly_and_ranges_tile_the_total() {
        for n in 1..=17u32 {
            for total in [0u64, 1, 2, 3, 7, 10, 100, 1001, 262_144, u64::MAX / 3] {
                let mut next = 0;
                let mut sum = 0u64;
                for s in Segment::all(n) {
                    let r = s.range(total);
                    assert_eq!(r.start, next, "{s} of {total}: contiguous");
                    next = r.end;
                    sum += s.share(total);
                    // No segment gets more than one item above another.
                    let even = total / u64::from(n);
                    assert!(s.share(total) == even || s.share(total) == even + 1);
                }
                assert_eq!(next, total);
                assert_eq!(sum, total, "{n} agents, {total} items");
            }
        }
    }

    #[test]
    fn seed_three_users_on_four_agents() {
        // 256K think-time users over four driver processes, as the TN3270
        // capacity study's four TPNS driver hosts did.
        let shares: Vec<u64> = Segment::all(4).map(|s| s.share(262_144)).collect();
        assert_eq!(shares, vec![65_536; 4]);
        let ranges: Vec<_> = Segment::all(3).map(|s| s.range(10)).collect();
        assert_eq!(ranges, vec![0..3, 3..6, 6..10]);
    }

    #[test]
    fn rates_follow_the_clients() {
        let total: f64 = Segment::all(3).map(|s| s.rate_share(1000.0, 10)).sum();
        assert!((total - 1000.0).abs() < 1e-9);
        let first = Segment::new(0, 3).unwrap();
        assert!((first.rate_share(1000.0, 10) - 300.0).abs() < 1e-9);
        // More agents than clients: some run none of the class.
        let idle = Segment::new(0, 4).unwrap();
        assert_eq!(idle.share(2), 0);
        assert_eq!(idle.rate_share(50.0, 2), 0.0);
        assert_eq!(Segment::WHOLE.rate_share(50.0, 2), 50.0);
    }

    #[test]
    fn transaction_quotas_add_up_as_one_process_splits_them() {
        for n in 1..=9u32 {
            for (transactions, clients) in [(100_000, 7), (10, 3), (2, 5), (0, 4), (7, 0)] {
                let total: u64 = Segment::all(n)
                    .map(|s| s.quota_share(transactions, clients))
                    .sum();
                assert_eq!(total, if clients == 0 { 0 } else { transactions });
            }
        }
        // 10 over 3 clients is 4, 3, 3: agent 0 of 3 runs client 0 alone.
        assert_eq!(Segment::new(0, 3).unwrap().quota_share(10, 3), 4);
        assert_eq!(Segment::new(2, 3).unwrap().quota_share(10, 3), 3);
    }

    #[test]
    fn bad_segments_name_the_fix() {
        assert!(Segment::new(0, 0).unwrap_err().contains("at least 1"));
        assert!(Segment::new(4, 4).unwrap_err().contains("0 to 3"));
        assert_eq!(Segment::new(2, 4).unwrap().to_string(), "2/4");
    }
}
