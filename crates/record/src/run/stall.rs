//! The delayed-ACK stall band of one class: how many of its transactions
//! took 35–250 ms longer than the path explains. The band is counted in
//! `stackbench_metrics::warnings::stall`, which also says why these edges.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A class's transactions in the delayed-ACK band (stored per class, so
/// the warning can be checked from the record).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct StallBand {
    /// The path floor the band is counted above, µs.
    pub floor_us: f64,
    /// The band's edges, µs (floor + 35 ms, floor + 250 ms).
    pub low_us: f64,
    /// The band's upper edge, µs (floor + 250 ms).
    pub high_us: f64,
    /// Transactions of the window whose latency fell in the band.
    pub transactions: u64,
    /// Transactions of the window whose latency was recorded.
    pub of_transactions: u64,
    /// `transactions` as a share of `of_transactions`, percent.
    pub share_pct: f64,
}

impl StallBand {
    /// Adds another run's band (repetitions of one class: same floor).
    pub fn add(&self, other: &StallBand) -> StallBand {
        let (n, of) = (
            self.transactions + other.transactions,
            self.of_transactions + other.of_transactions,
        );
        StallBand {
            transactions: n,
            of_transactions: of,
            share_pct: if of > 0 {
                100.0 * n as f64 / of as f64
            } else {
                0.0
            },
            ..*self
        }
    }
}
