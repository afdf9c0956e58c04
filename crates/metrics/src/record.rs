//! The result record: a versioned contract (hyperfine's `BenchmarkResult`, fio's
//! terse version). `stackbench run --json` prints one [`RunRecord`]; the store,
//! compare and report read it back. Every field name carries its unit; the
//! README's "JSON fields" section documents each one.
//!
//! Compatibility rule: adding a field is not a schema change (readers ignore
//! unknown fields and default missing optional ones); renaming or changing the
//! meaning of one bumps [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};
use stackbench_model::{Kind, SocketOptions, StreamDirection};

/// Version of the record layout below.
pub const SCHEMA_VERSION: u32 = 1;

/// One `stackbench run`: the effective settings and one entry per workload class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub schema_version: u32,
    pub stackbench_version: String,
    /// False when the run ended early (Ctrl-C, responder lost, I/O failure);
    /// the classes then hold what was measured up to that point.
    pub complete: bool,
    /// Why the run is incomplete; `None` when `complete` is true.
    pub incomplete_reason: Option<String>,
    /// Wall-clock start of the run, seconds since the Unix epoch.
    pub started_unix_s: f64,
    pub settings: RunSettings,
    /// One entry per class, in the order given (mixes keep their class order).
    pub classes: Vec<ClassResult>,
}

/// The settings in force for a run, after defaults were applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Length of each measurement window in seconds (0 when bounded only by
    /// `transactions`).
    pub duration_s: f64,
    /// Warm-up before each window, in seconds; transactions in it are not counted.
    pub warmup_s: f64,
    /// Exact transactions per class, when the run is count-bounded.
    pub transactions: Option<u64>,
    /// Driver worker threads (each an event loop over many connections).
    pub client_threads: u32,
    /// Responder worker threads, when stackbench started the responder itself.
    pub server_threads: Option<u32>,
    /// CPUs the driver was pinned to (empty: not pinned).
    pub client_cpus: Vec<usize>,
    /// CPUs the responder was pinned to (empty: not pinned or unknown, e.g. a
    /// remote `stackbench serve`).
    pub server_cpus: Vec<usize>,
    /// Responder control address, `HOST:PORT`.
    pub target: String,
    /// `"spawned"` (a `stackbench serve` child process on loopback) or `"remote"`.
    pub responder: String,
    /// Receivers busy-poll instead of sleeping in epoll (`--spin`).
    pub spin: bool,
    pub socket: SocketOptions,
}

/// Latency of one transaction, from the first byte of the request being handed
/// to the kernel (for CRR: from `connect()`) to the last byte of the response
/// being received, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyUs {
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub stdev: f64,
}

/// Errors of single connections, by cause. They are counted, not fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// Connection refused (nothing listening, or backlog overflow).
    pub refused: u64,
    /// Connection reset or broken pipe.
    pub reset: u64,
    /// The peer closed the connection in the middle of a transaction.
    pub eof: u64,
    /// Connect timed out.
    pub timeout: u64,
    /// Any other I/O error.
    pub other: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.refused + self.reset + self.eof + self.timeout + self.other
    }

    pub fn add(&mut self, other: &ErrorCounts) {
        self.refused += other.refused;
        self.reset += other.reset;
        self.eof += other.eof;
        self.timeout += other.timeout;
        self.other += other.other;
    }
}

/// Measured figures for one workload class within its window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassResult {
    /// The whole workload this class ran in (the mix, or the class itself).
    pub workload: String,
    /// This class in canonical notation, e.g. `RR10(4kB/4kB)`.
    pub notation: String,
    pub kind: Kind,
    /// For STR classes, GET or PUT.
    pub stream_direction: Option<StreamDirection>,
    pub clients: u32,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Transactions completed inside the measurement window.
    pub transactions: u64,
    /// Length of the measurement window in seconds.
    pub duration_s: f64,
    /// `transactions / duration_s`.
    pub rate_tps: f64,
    pub latency_us: LatencyUs,
    /// Payload bytes the driver sent inside the window.
    pub tx_bytes: u64,
    /// Payload bytes the driver received inside the window.
    pub rx_bytes: u64,
    /// `tx_bytes / duration_s` (client → server).
    pub tx_bytes_per_s: f64,
    /// `rx_bytes / duration_s` (server → client).
    pub rx_bytes_per_s: f64,
    /// Total errors of single connections (sum of `error_counts`).
    pub errors: u64,
    pub error_counts: ErrorCounts,
    /// Transactions-per-second of each whole second of the window, for
    /// steadiness checks and plots.
    pub per_second_tps: Vec<f64>,
}
