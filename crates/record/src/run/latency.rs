//! The latency summary every class, agent row and TLS figure carries: a leaf
//! so that `run.rs` and its parts (`agents`, `tls`) share it without
//! importing each other.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Latency of one transaction, from the first byte of the request being handed
/// to the kernel (for CRR: from `connect()`) to the last byte of the response
/// being received, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct LatencyUs {
    /// Mean, µs.
    pub mean: f64,
    /// Smallest, µs.
    pub min: f64,
    /// Median, µs.
    pub p50: f64,
    /// 90th percentile, µs.
    pub p90: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// 99.9th percentile, µs.
    pub p999: f64,
    /// Largest, µs.
    pub max: f64,
    /// Standard deviation, µs.
    pub stdev: f64,
}
