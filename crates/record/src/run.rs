//! The run record: a versioned contract (hyperfine's `BenchmarkResult`, fio's
//! terse version). `stackbench run --json` prints one [`RunRecord`]; the store,
//! compare and report read it back. Every field name or doc comment carries
//! its unit; docs/record.md is generated from these doc comments
//! (`stackbench __docs record`).
//!
//! Compatibility rule: adding a field is not a schema change (readers ignore
//! unknown fields and default missing optional ones); renaming or changing the
//! meaning of one bumps [`SCHEMA_VERSION`] and appends a step to
//! [`MIGRATIONS`]. Readers decode with [`record_from_json`], which refuses
//! newer records and migrates older ones.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
pub use stackbench_model::settings::RunSettings;
use stackbench_model::{Kind, StreamDirection};

mod agents;
mod http;
mod ktls;
mod latency;
mod schema;
mod served;
mod sessions;
mod stall;
mod steps;
mod tls;

pub use agents::{AgentClassRow, AgentRecord, AgentsSummary};
pub use http::HttpStatus;
pub use ktls::{KtlsCounters, KtlsFigures};
pub use latency::LatencyUs;
pub use schema::{record_from_json, schema_version_of, Migration, RecordError, MIGRATIONS};
pub use served::{BackendConnections, ServedBy};
pub use sessions::Sessions;
pub use stall::StallBand;
pub use steps::ScriptStep;
pub use tls::{HandshakeCpuUs, TlsFigures};

/// Version of the record layout below.
pub const SCHEMA_VERSION: u32 = 3;

/// Connections refused for want of the run token, by the port they tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RefusedPeers {
    /// Control connections the run's responders refused between the last
    /// sample before this run and its last one (each responder counted once,
    /// whichever agents drove it); `None` for a plain server, which counts
    /// none.
    pub control_connections: Option<u64>,
    /// Connections to the controller's agent port refused while the agents
    /// started (one start per responder session: every record of the session
    /// repeats it); `None` for a run without agents.
    pub agent_connections: Option<u64>,
}

/// One `stackbench run`: the effective settings and one entry per workload class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunRecord {
    /// Version of the record layout (`SCHEMA_VERSION`); readers migrate older ones and refuse newer.
    pub schema_version: u32,
    /// The stackbench that wrote the record (its package version).
    pub stackbench_version: String,
    /// False when the run ended early (Ctrl-C, responder lost, I/O failure);
    /// the classes then hold what was measured up to that point.
    pub complete: bool,
    /// Why the run is incomplete; `None` when `complete` is true.
    pub incomplete_reason: Option<String>,
    /// Wall-clock start of the run, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// Every run setting, resolved (the settings table of
    /// `stackbench_model::settings`; JSON names carry units). Each key is
    /// described in docs/settings.md.
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub settings: RunSettings,
    /// `"spawned"` (a `stackbench serve` child process on loopback) or
    /// `"remote"` (a running `stackbench serve` named by `target`).
    #[serde(default)]
    pub responder: String,
    /// One entry per class, in the order given (mixes keep their class order).
    pub classes: Vec<ClassResult>,
    /// Measurement-quality warnings, each with what to change (also printed on
    /// stderr). Empty when none applied; absent in records older than it.
    #[serde(default)]
    pub warnings: Vec<WarningRecord>,
    /// One entry per mix: the whole mix's CPU over all its classes'
    /// transactions. Where the classes shared worker threads, each class
    /// holds the mix's `cpu_seconds` with `attribution: mix` and no
    /// per-transaction figures, and this is the only per-transaction figure;
    /// with `class_workers` the classes hold their own beside it. Empty for
    /// single-class workloads; absent in records older than it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mix_cpu: Vec<MixCpu>,
    /// The agents a run spread over several driver processes was measured
    /// by (`agents` setting): the classes above are their figures merged
    /// (counts summed, latency histograms added), and here is each agent's
    /// own. Absent for a run driven by one process, and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<AgentsSummary>,
    /// Connections refused for want of the run token (the token every
    /// control and agent connection proves before it is read): strangers,
    /// peers with another token, or beyond a responder's session limit.
    /// Absent in records older than the token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused_peers: Option<RefusedPeers>,
    /// The lab a `--lab` run crossed, carried to the stored environment
    /// (`environment.lab`), not part of the record's own JSON.
    #[serde(skip)]
    pub lab: Option<crate::lab::LabEnvironment>,
    /// The environment measured where the run ran when that is not this
    /// process's machine (a guest VM booted with the `kernel` setting): the
    /// store keeps it instead of one captured here. Not part of the JSON.
    #[serde(skip)]
    pub environment: Option<serde_json::Value>,
    /// Against a plain server (`target` with a protocol's scheme, e.g.
    /// nginx): the processes measured as the server side, or why none were.
    /// Absent for stackbench's own responder and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_process: Option<ServerProcess>,
    /// Against a broker: the responder application's processes, sampled as a
    /// third side (`classes[].cpu.application`): the processes of this host
    /// connected to the broker's port other than the driver (found by their
    /// sockets, as `server_process` by its listener). Absent otherwise and
    /// in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder_application: Option<ServerProcess>,
}

/// The processes of a plain server measured as the run's server side: found
/// by the target's listening socket (sock_diag → socket inode → the
/// processes holding it, with their descendants) or given (`server_pid`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ServerProcess {
    /// How the processes were found: `listening_socket`, `server_pid`, or
    /// `not_found` (then `pids` is empty and `note` says why).
    pub found_by: ServerFoundBy,
    /// The listening socket they were found by (`ADDRESS:PORT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener: Option<String>,
    /// Every process summed as the server side when the run started (the
    /// listener's holders and their descendants: nginx's master and workers,
    /// a broker's VM and its helpers).
    #[serde(default)]
    pub pids: Vec<u32>,
    /// The executable of the first of them (`/proc/PID/exe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// Its command line (`/proc/PID/cmdline`, arguments joined by spaces).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
    /// CPUs the processes may run on (their affinity, united); empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// What was not measured and why (no process found: a remote server, or
    /// one in a namespace this process cannot see).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a plain server's processes were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerFoundBy {
    /// The target's listening socket on this host (sock_diag).
    #[default]
    ListeningSocket,
    /// The `server_pid` setting.
    ServerPid,
    /// Their connections to a broker's port (a responder application).
    BrokerConnections,
    /// Not found: the server side is absent.
    NotFound,
}

/// Errors of single connections, by cause. They are counted, not fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
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
    /// Responses in the window whose status was not 2xx (protocol http1):
    /// answered, counted as transactions, and the connection went on; the
    /// codes are in the class's `http_status`. Absent in older records.
    #[serde(default)]
    pub http_status: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.refused + self.reset + self.eof + self.timeout + self.other + self.http_status
    }

    pub fn add(&mut self, other: &ErrorCounts) {
        self.refused += other.refused;
        self.reset += other.reset;
        self.eof += other.eof;
        self.timeout += other.timeout;
        self.other += other.other;
        self.http_status += other.http_status;
    }
}

/// Measured figures for one workload class within its window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClassResult {
    /// The whole workload this class ran in (the mix, or the class itself).
    pub workload: String,
    /// This class in canonical notation, e.g. `RR10(4kB/4kB)`.
    pub notation: String,
    /// The transaction shape: `RR`, `CRR` or `STR`.
    #[schemars(with = "String")]
    pub kind: Kind,
    /// For STR classes, `GET` or `PUT`.
    #[schemars(with = "Option<String>")]
    pub stream_direction: Option<StreamDirection>,
    /// Concurrent clients of the class, one connection each (CRR: one at a time).
    pub clients: u32,
    /// Request size, bytes.
    pub request_bytes: u64,
    /// Response size, bytes.
    pub response_bytes: u64,
    /// Transactions completed inside the measurement window.
    pub transactions: u64,
    /// Length of the measurement window in seconds.
    pub duration_s: f64,
    /// `transactions / duration_s`.
    pub rate_tps: f64,
    /// `None` (null) when the window had no transaction: no latency was
    /// measured, and zeros would read as a very fast one.
    pub latency_us: Option<LatencyUs>,
    /// The whole latency distribution behind `latency_us`, in nanoseconds,
    /// as HdrHistogram's interchange encoding (V2 with DEFLATE, base64,
    /// `HISTF…`; 3 significant digits, 1 ns … 1 h): runs measured apart — by
    /// agents, or to pool — merge by adding these counts, never by averaging
    /// percentiles. `None` without a transaction, and for a mean over
    /// repetitions (each repetition's distribution is its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
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
    /// Errors of single connections by cause.
    pub error_counts: ErrorCounts,
    /// Transactions-per-second of each whole second of the window, for
    /// steadiness checks and plots.
    pub per_second_tps: Vec<f64>,
    /// CPU per side in the window; `None` when not measured.
    #[serde(default)]
    pub cpu: Option<CpuFigures>,
    /// Memory per side at the steady state; `None` when not measured.
    #[serde(default)]
    pub memory: Option<MemoryFigures>,
    /// Per-repetition values and their summary (`--repeat`, `--confidence`);
    /// `None` for a single run. The other fields then hold the mean over the
    /// repetitions (so `rate_tps` is `repetitions.rate_tps.mean`, not exactly
    /// `transactions / duration_s`): counts rounded, latency the mean of the
    /// per-run mean, percentiles and stdev with `min`/`max` the extremes of
    /// all runs, errors summed, CPU and memory figures averaged.
    #[serde(default)]
    pub repetitions: Option<Repetitions>,
    /// Pacing of a user population (think time or open loop) and what it
    /// achieved, and how long connecting took; `None` for a closed-loop class
    /// of a run without a connection ramp, and in records older than it.
    #[serde(default)]
    pub population: Option<PopulationFigures>,
    /// Transport `tls`: what was negotiated (never just what was asked for)
    /// and the handshakes of the window; absent for clear text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsFigures>,
    /// Transactions that took 35–250 ms longer than the path explains (the
    /// delayed-ACK stall band, see `warnings::stall`); `None` where the path
    /// cannot tell (a floor of 35 ms or more, loss) and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_band: Option<StallBand>,
    /// Which I/O backend served the class's connections, driver and
    /// responder side: check the stored effective `io` setting against it
    /// (`io_served_elsewhere` warns when they disagree); absent in older
    /// records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_by: Option<ServedBy>,
    /// Protocol http1: the responses of the window by status code, as the
    /// server sent them (a non-2xx is also an `http_status` error); absent
    /// for other protocols and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<HttpStatus>,
    /// Protocol tn3270: how the class's connections set up their sessions
    /// (logons attempted, negotiated by mode, functions and device types
    /// agreed, failed by reason), over the whole run; absent for other
    /// protocols and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Sessions>,
    /// Protocol tn3270 with a script (`tn3270_script`): each step's
    /// transactions, latency and timed-out waits, in script order; absent
    /// without a script and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<ScriptStep>>,
}

/// How a class's clients pace their requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PacingMode {
    /// The next request as soon as the response is in.
    #[default]
    Closed,
    /// A think time between a response and the next request.
    Think,
    /// Requests at scheduled times (an offered rate), whatever the responses do.
    Open,
}

/// Actual − intended send time of requests sent in the window, µs (an
/// intended time is the end of a think time, or an open-loop schedule slot).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct LagUs {
    /// Median lag, µs.
    pub p50: f64,
    /// 99th percentile lag, µs.
    pub p99: f64,
    /// Largest lag, µs.
    pub max: f64,
}

impl LagUs {
    /// The lag's figures of a latency summary of its histogram.
    pub fn of(l: LatencyUs) -> LagUs {
        LagUs {
            p50: l.p50,
            p99: l.p99,
            max: l.max,
        }
    }
}

/// A user population's pacing and what it achieved (one class).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct PopulationFigures {
    /// How the class's clients paced their requests.
    pub pacing: PacingMode,
    /// The pacing as written: a think time (`exp:30s`) or a rate (`50000/s`);
    /// `None` for the closed loop.
    pub pacing_text: Option<String>,
    /// Configured mean think time, seconds (think-time classes).
    pub think_mean_s: Option<f64>,
    /// Mean time a client waited between a response and its next request,
    /// measured in the window, seconds: the think time, or for the open loop
    /// the wait for the next intended send. `None` when none ended in the window.
    pub wait_mean_s: Option<f64>,
    /// Offered rate of the class, transactions per second (open loop).
    pub offered_rate_tps: Option<f64>,
    /// `constant` or `poisson` (open loop).
    pub arrivals: Option<String>,
    /// Latency from the actual send of the request, µs (open loop). The class's
    /// `latency_us` is then measured from the intended send time (coordinated
    /// omission corrected, as wrk2 does).
    pub latency_uncorrected_us: Option<LatencyUs>,
    /// Requests sent in the window more than 1 ms after their intended time.
    pub late: u64,
    /// Intended sends skipped (never sent) in the window because their
    /// connection had fallen more than 1 s behind its schedule (open loop).
    pub dropped: u64,
    /// Actual − intended send time; `None` when nothing was sent on a schedule.
    pub generator_lag_us: Option<LagUs>,
    /// The whole distribution behind `generator_lag_us`, in nanoseconds, in
    /// `latency_hdr`'s encoding (HdrHistogram V2, DEFLATE, base64): parts
    /// measured apart (agents) merge by adding these counts. `None` when
    /// nothing was sent on a schedule, for a mean over repetitions, and in
    /// older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_lag_hdr: Option<String>,
    /// How much of the latency tail is the generator's: the lag's p99 as a
    /// share of the class's latency p99, percent (capped at 100). A woken
    /// driver that is late to send is as late to read a response, so a lag
    /// p99 near the latency p99 says the tail is the generator's scheduling,
    /// not the responder's (`generator_tail` warns from 50%). `None` without
    /// lag or latency, and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_lag_p99_share_pct: Option<f64>,
    /// Clients connected when the measurement window opened.
    pub connected: u32,
    /// From the start of the workload until the class's last client connected, seconds.
    pub connect_s: f64,
}

/// One measurement-quality warning: a stable code and a message that says what
/// to change. Codes are listed in the `warnings` module.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct WarningRecord {
    /// Stable snake_case identifier, e.g. `driver_saturated`.
    pub code: String,
    /// What was seen and what to change, one line.
    pub message: String,
    /// The class it concerns (canonical notation), `None` for the whole run.
    #[serde(default)]
    pub class: Option<String>,
}

/// How a side's CPU-set figures were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CpuMethod {
    /// Per-CPU `/proc/stat` deltas over the CPUs the side is pinned to.
    #[default]
    ProcStatCpuset,
    /// Per-CPU `/proc/stat` deltas over every online CPU (the side is not
    /// pinned), so everything else running on the host is included.
    ProcStatAllCpus,
    /// Run time of the class's own worker threads (`class_workers`), from
    /// `/proc/<pid>/task/<tid>/schedstat`: the class's alone, but without
    /// softirq work done in interrupt context (see `metrics::threads`).
    Threads,
}

/// How a side's process figures were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessCpuMethod {
    /// utime + stime of the side's processes from `/proc/<pid>/stat` (ticks).
    #[default]
    PidStat,
    /// `user_usec` + `system_usec` of the side's cgroup v2 `cpu.stat`.
    Cgroup,
}

/// CPU-seconds by state inside the window, summed over the side's CPUs.
/// `cpu_seconds` = user + nice + system + irq + softirq + steal.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct CpuBreakdown {
    /// User mode at normal priority (guest time included, as the kernel counts it).
    pub user: f64,
    /// User mode at a positive nice value.
    pub nice: f64,
    /// Kernel mode outside interrupt context.
    pub system: f64,
    /// Hard interrupt handlers.
    pub irq: f64,
    /// Softirq context: most of the network stack's receive work.
    pub softirq: f64,
    /// Time a hypervisor ran something else while this (virtual) CPU wanted to run.
    pub steal: f64,
    /// Idle with I/O outstanding; counted as idle.
    pub iowait: f64,
    /// Idle, clock-measured on NOHZ kernels.
    pub idle: f64,
}

/// A side's own processes (the RMF workload-activity analogue).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ProcessCpu {
    /// How the process figures were obtained.
    pub method: ProcessCpuMethod,
    /// User-mode CPU-seconds of the side's processes in the window.
    pub user_s: f64,
    /// Kernel-mode CPU-seconds charged to the side's processes (softirq work
    /// done on their behalf in interrupt context is not in here).
    pub system_s: f64,
    /// `user_s + system_s`.
    pub cpu_seconds: f64,
}

/// One side's CPU in the measurement window.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SideCpu {
    /// CPU ids measured: the side's pinned set, or every online CPU.
    pub cpus: Vec<usize>,
    /// How the CPU-set figures were obtained.
    pub method: CpuMethod,
    /// Length of the window between the two samples, in seconds.
    pub window_s: f64,
    /// Busy CPU-seconds on `cpus` in the window: window × CPUs − idle − iowait
    /// (idle is clock-measured on NOHZ kernels; see `tick_coverage`).
    pub cpu_seconds: f64,
    /// Busy share of `cpus`, 0–100 whatever their number (RMF "LPAR busy"):
    /// `cpu_seconds / (window_s × CPUs)`.
    pub util_pct: f64,
    /// `cpu_seconds` × 10⁶ / transactions; `None` when no transaction completed.
    pub cpu_us_per_tran: Option<f64>,
    /// CPU µs per MiB of payload moved (streams); `None` when no payload.
    pub cpu_us_per_mb: Option<f64>,
    /// `cpu_seconds` by CPU state.
    pub breakdown: CpuBreakdown,
    /// Busy CPU-seconds as the scheduler tick sampled them (user + nice +
    /// system + irq + softirq + steal ticks); what tick-based tools count.
    #[serde(default)]
    pub tick_busy_s: f64,
    /// netperf's procstat utilisation: busy ticks / all ticks × 100.
    #[serde(default)]
    pub tick_util_pct: f64,
    /// All ticks counted / (window × CPUs): below ~0.95 the tick missed short
    /// busy slices and tick-based figures (`tick_*`, netperf -c) read low.
    #[serde(default)]
    pub tick_coverage: Option<f64>,
    /// The side's processes; `None` when not sampled.
    pub process: Option<ProcessCpu>,
    /// `process.cpu_seconds` × 10⁶ / transactions.
    pub process_cpu_us_per_tran: Option<f64>,
    /// Whose work this side's figures hold: `class` (this class's alone) or
    /// `mix` (the whole mix's; the per-transaction and per-MiB figures are
    /// then `None`). The sides can differ: a class on worker threads of its
    /// own in the driver may be served by a responder that shares its
    /// workers. Records written before the field existed read as `class`.
    #[serde(default)]
    pub attribution: CpuAttribution,
    /// Bytes the side's processes had the block layer read and write in the
    /// window (`/proc/PID/io`), for a server found on this host (a broker's
    /// persistent messages); absent for the driver and the embedded responder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<DiskIo>,
}

/// Storage I/O of a side's processes in the window, from `read_bytes` and
/// `write_bytes` of `/proc/PID/io` (what reached the block layer: page-cache
/// writes count when they are written back, or at once with `fsync`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct DiskIo {
    /// Bytes read from storage in the window.
    pub read_bytes: u64,
    /// Bytes written to storage in the window.
    pub write_bytes: u64,
    /// `write_bytes` / transactions; `None` when no transaction completed.
    pub write_bytes_per_tran: Option<f64>,
}

/// CPU of both sides for one class.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct CpuFigures {
    /// The driver's side.
    pub client: Option<SideCpu>,
    /// The responder's side, measured by the responder itself; `None` when it
    /// did not report.
    pub server: Option<SideCpu>,
    /// False when the sides share CPUs (one CPU, or overlapping sets): the
    /// per-side CPU-set figures then include the other side's work, and only
    /// `shared` and the totals are meaningful (process figures still split).
    pub separable: bool,
    /// The union of both sides' CPUs, present when they are not separable.
    pub shared: Option<SideCpu>,
    /// A third side against a broker: the responder application's processes
    /// (the clients of the broker other than the driver: `stackbench serve
    /// --broker`, or the user's own consumer; `record.responder_application`
    /// names them), process CPU only. Not in `total_cpu_*`. Absent otherwise
    /// and in older records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<SideCpu>,
    /// Both sides together in CPU-seconds (client + server, or `shared`).
    pub total_cpu_seconds: Option<f64>,
    /// Both sides together per transaction, µs.
    pub total_cpu_us_per_tran: Option<f64>,
    /// Whose work these CPU figures hold: `class` only when every side here
    /// is the class's alone; `mix` when any side is the whole mix's (each
    /// side says which in its own `attribution`; `total_cpu_us_per_tran` is
    /// then `None`). See [`CpuAttribution`]. Records written before the
    /// field existed read as `class`.
    #[serde(default)]
    pub attribution: CpuAttribution,
}

impl CpuFigures {
    /// Combines the sides. Pass `shared` (the CPU-set view over
    /// `cpu_set_union` of both sides) when the sides share CPUs
    /// (`cpu_sets_overlap` on one host, in `stackbench_metrics::cpu`); the totals then come from it, since
    /// the per-side CPU-set figures are not separable. Otherwise the totals are
    /// client + server, present only when both sides reported.
    pub fn combine(
        client: Option<SideCpu>,
        server: Option<SideCpu>,
        shared: Option<SideCpu>,
    ) -> CpuFigures {
        // A side that is the whole mix's makes the class's figures the mix's.
        let attribution = [&client, &server, &shared]
            .into_iter()
            .flatten()
            .map(|s| s.attribution)
            .find(|a| *a == CpuAttribution::Mix)
            .unwrap_or(CpuAttribution::Class);
        let (total_cpu_seconds, total_cpu_us_per_tran) = match (&shared, &client, &server) {
            (Some(s), _, _) => (Some(s.cpu_seconds), s.cpu_us_per_tran),
            (None, Some(c), Some(s)) => (
                Some(c.cpu_seconds + s.cpu_seconds),
                c.cpu_us_per_tran.zip(s.cpu_us_per_tran).map(|(a, b)| a + b),
            ),
            _ => (None, None),
        };
        // One side the class's, the other the mix's: their sum is neither's.
        let sides_differ =
            matches!((&client, &server), (Some(c), Some(s)) if c.attribution != s.attribution);
        let total_cpu_seconds = total_cpu_seconds.filter(|_| !sides_differ);
        CpuFigures {
            separable: shared.is_none(),
            client,
            server,
            shared,
            application: None,
            total_cpu_seconds,
            total_cpu_us_per_tran,
            attribution,
        }
    }

    /// What one class of a mix on shared worker threads shows: the mix's
    /// CPU-seconds and utilisation, marked `mix`, without the per-transaction
    /// and per-MiB figures, which would charge the whole mix's CPU to this
    /// class's transactions (see [`CpuAttribution`]).
    pub fn mix_share(&self) -> CpuFigures {
        let side = |s: &Option<SideCpu>| {
            s.clone().map(|s| SideCpu {
                cpu_us_per_tran: None,
                cpu_us_per_mb: None,
                process_cpu_us_per_tran: None,
                attribution: CpuAttribution::Mix,
                ..s
            })
        };
        CpuFigures {
            client: side(&self.client),
            server: side(&self.server),
            shared: side(&self.shared),
            total_cpu_us_per_tran: None,
            attribution: CpuAttribution::Mix,
            ..self.clone()
        }
    }
}

/// Whose CPU a class's figures measure.
///
/// CPU is measured per CPU set (and per process), not per connection: in a
/// mix whose classes share worker threads, the CPU of one class cannot be
/// told from the others'. Dividing the mix's CPU by one class's transactions
/// gave figures that were wrong by the other classes' share (a stream class
/// "97% cheaper" per transaction than the RR class beside it). So a class's
/// figures are `Class` only when the class ran alone or on worker threads of
/// its own; otherwise they are `Mix`: `cpu_seconds` and `util_pct` are the
/// whole mix's, and the per-transaction and per-MB figures are `None` —
/// the mix's own per-transaction CPU is over all its classes' transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CpuAttribution {
    /// The figures are this class's alone.
    #[default]
    Class,
    /// The figures are the whole mix's; per-transaction figures are absent.
    Mix,
}

/// The CPU of a whole mix, all its classes together.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MixCpu {
    /// The mix in canonical notation, as its classes' `workload`.
    pub workload: String,
    /// Transactions of all its classes inside the window.
    pub transactions: u64,
    /// Both sides' CPU of the mix: `cpu_seconds` in CPU-seconds,
    /// `cpu_us_per_tran` = `cpu_seconds` × 10⁶ / `transactions` (µs per
    /// transaction of any class), `cpu_us_per_mb` over the payload of all
    /// classes (µs per MiB); `attribution` is `mix`.
    pub cpu: CpuFigures,
}

/// Memory of one side at the steady state (sampled inside the window).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SideMemory {
    /// Resident set size of the side's processes at the steady state, bytes.
    pub rss_bytes: u64,
    /// RSS before the run's connections were opened (the fixed part).
    #[serde(default)]
    pub rss_baseline_bytes: Option<u64>,
    /// `(rss_bytes − rss_baseline_bytes) / connections`; `None` with no
    /// connection, or when RSS fell below the baseline (see `notes`).
    pub rss_bytes_per_conn: Option<f64>,
    /// Kernel memory of the run's own sockets on this side, bytes: the
    /// `kernel_sock_fields` of their `SK_MEMINFO` summed, plus
    /// `kernel_sock_object_bytes_per_socket` × `kernel_sock_sockets`.
    /// `None` when the sockets could not be read (see `notes`).
    #[serde(default)]
    pub kernel_sock_bytes: Option<u64>,
    /// `kernel_sock_bytes / connections`.
    #[serde(default)]
    pub kernel_sock_bytes_per_conn: Option<f64>,
    /// Sockets summed in `kernel_sock_bytes` (the side's data connections
    /// open at the sample; a sidecar TLS proxy's sockets too).
    #[serde(default)]
    pub kernel_sock_sockets: Option<u64>,
    /// How the sockets were read: `sock_diag`.
    #[serde(default)]
    pub kernel_sock_method: Option<String>,
    /// The `SK_MEMINFO` fields summed as memory held (`rmem_alloc`,
    /// `wmem_queued`, …; see `kernel_sock_meminfo`).
    #[serde(default)]
    pub kernel_sock_fields: Vec<String>,
    /// Every `SK_MEMINFO` field summed over the sockets, for checking.
    #[serde(default)]
    pub kernel_sock_meminfo: Option<SkMemInfo>,
    /// Kernel objects one socket holds whatever its queues hold (the
    /// protocol's sock, inode, file, dentry; `/sys/kernel/slab` sizes), bytes.
    #[serde(default)]
    pub kernel_sock_object_bytes_per_socket: Option<u64>,
    /// The host's TCP socket memory (sockstat `mem` pages × page size),
    /// IPv4 and IPv6, every socket of the host or network namespace: when
    /// both sides share a host, both show the same figure. Secondary.
    pub host_sock_mem_bytes: u64,
    /// `host_sock_mem_bytes` before the run's connections were opened.
    #[serde(default)]
    pub host_sock_mem_baseline_bytes: Option<u64>,
    /// `(host_sock_mem_bytes − host_sock_mem_baseline_bytes) / connections`;
    /// `None` when it fell below the baseline: the host's other sockets
    /// changed (see `notes`).
    pub host_sock_mem_bytes_per_conn: Option<f64>,
    /// Open connections of the class at the sample.
    pub connections: u64,
    /// TCP sockets in use on the host, IPv4 + IPv6 (sockstat `inuse`).
    pub tcp_inuse: u64,
    /// Orphaned TCP sockets on the host.
    pub tcp_orphan: u64,
    /// TCP connections in TIME_WAIT on the host.
    pub tcp_tw: u64,
    /// Why a figure above is missing or limited, one sentence each.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Sums of the kernel's per-socket memory counters (sock_diag
/// `INET_DIAG_SKMEMINFO` / `UNIX_DIAG_MEMINFO`, the `SK_MEMINFO_*` array)
/// over a set of sockets. Limits (`rcvbuf`, `sndbuf`) are summed too, as
/// what the sockets may grow to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct SkMemInfo {
    /// Receive queue (`SK_MEMINFO_RMEM_ALLOC`), bytes.
    pub rmem_alloc_bytes: u64,
    /// Receive buffer limit (`SK_MEMINFO_RCVBUF`), bytes.
    pub rcvbuf_bytes: u64,
    /// Transmit memory in flight below the socket (`SK_MEMINFO_WMEM_ALLOC`), bytes.
    pub wmem_alloc_bytes: u64,
    /// Send buffer limit (`SK_MEMINFO_SNDBUF`), bytes.
    pub sndbuf_bytes: u64,
    /// Reserved, not yet used (`SK_MEMINFO_FWD_ALLOC`), bytes.
    pub fwd_alloc_bytes: u64,
    /// Write queue (`SK_MEMINFO_WMEM_QUEUED`), bytes.
    pub wmem_queued_bytes: u64,
    /// Option memory (`SK_MEMINFO_OPTMEM`), bytes.
    pub optmem_bytes: u64,
    /// Backlog queue (`SK_MEMINFO_BACKLOG`), bytes.
    pub backlog_bytes: u64,
    /// Packets dropped (`SK_MEMINFO_DROPS`), a count.
    pub drops: u64,
}

impl SkMemInfo {
    /// Adds one socket's counters.
    pub fn add(&mut self, o: &SkMemInfo) {
        self.rmem_alloc_bytes += o.rmem_alloc_bytes;
        self.rcvbuf_bytes += o.rcvbuf_bytes;
        self.wmem_alloc_bytes += o.wmem_alloc_bytes;
        self.sndbuf_bytes += o.sndbuf_bytes;
        self.fwd_alloc_bytes += o.fwd_alloc_bytes;
        self.wmem_queued_bytes += o.wmem_queued_bytes;
        self.optmem_bytes += o.optmem_bytes;
        self.backlog_bytes += o.backlog_bytes;
        self.drops += o.drops;
    }
}

/// Memory of both sides for one class.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MemoryFigures {
    /// The driver's side; `None` when not measured.
    pub client: Option<SideMemory>,
    /// The responder's side, measured by the responder; `None` when it did not report.
    pub server: Option<SideMemory>,
}

/// A confidence interval of a mean.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ConfidenceInterval {
    /// Two-sided confidence level, percent (e.g. 99).
    pub level_pct: f64,
    /// Lower end, in the measure's unit.
    pub low: f64,
    /// Upper end, in the measure's unit.
    pub high: f64,
    /// Full width (`high - low`) as a percentage of the mean (netperf's
    /// criterion compares this with the requested width); `None` when the
    /// mean is 0.
    pub width_pct_of_mean: Option<f64>,
}

/// Mean, spread and confidence of one measure over repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MeasureSummary {
    /// Repetitions that had a value for the measure.
    pub n: u32,
    /// Mean over the repetitions, in the measure's unit.
    pub mean: f64,
    /// Sample standard deviation (n − 1); `None` for one value.
    pub stdev: Option<f64>,
    /// Student-t interval; `None` for one value.
    pub confidence: Option<ConfidenceInterval>,
}

/// The values one repetition produced.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct RepetitionValues {
    /// The repetition's rate, transactions per second.
    pub rate_tps: f64,
    /// The driver's CPU per transaction, µs.
    pub client_cpu_us_per_tran: Option<f64>,
    /// The responder's CPU per transaction, µs.
    pub server_cpu_us_per_tran: Option<f64>,
}

/// Repetitions of one class (netperf `-i max,min -I level,width`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Repetitions {
    /// Each repetition's values, in run order.
    pub runs: Vec<RepetitionValues>,
    /// Requested full interval width, % of the mean (`--confidence L,W`);
    /// `None` for a fixed `--repeat N`.
    pub target_width_pct: Option<f64>,
    /// Whether every measure's interval met `target_width_pct`; `None` without a target.
    pub reached: Option<bool>,
    /// Rate over the repetitions, transactions per second.
    pub rate_tps: MeasureSummary,
    /// The driver's CPU per transaction over the repetitions, µs.
    pub client_cpu_us_per_tran: Option<MeasureSummary>,
    /// The responder's CPU per transaction over the repetitions, µs.
    pub server_cpu_us_per_tran: Option<MeasureSummary>,
}

impl ClassResult {
    /// A plausible RR1(1B/1B) class — 100,000 transactions in 10 s — with
    /// none of the optional figures: the starting point of tests and
    /// examples in every crate that reads records (`..ClassResult::sample()`).
    pub fn sample() -> ClassResult {
        ClassResult {
            workload: "RR1(1B/1B)".into(),
            notation: "RR1(1B/1B)".into(),
            kind: Kind::Rr,
            stream_direction: None,
            clients: 1,
            request_bytes: 1,
            response_bytes: 1,
            transactions: 100_000,
            duration_s: 10.0,
            rate_tps: 10_000.0,
            latency_us: Some(LatencyUs::default()),
            latency_hdr: None,
            tx_bytes: 100_000,
            rx_bytes: 100_000,
            tx_bytes_per_s: 10_000.0,
            rx_bytes_per_s: 10_000.0,
            errors: 0,
            error_counts: ErrorCounts::default(),
            per_second_tps: vec![10_000.0; 10],
            cpu: None,
            memory: None,
            repetitions: None,
            population: None,
            tls: None,
            stall_band: None,
            served_by: None,
            http_status: None,
            sessions: None,
            steps: None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A plausible class with none of the optional figures.
    pub(crate) fn sample_class() -> ClassResult {
        ClassResult::sample()
    }

    #[test]
    fn records_without_the_new_fields_still_parse() {
        let mut json = serde_json::to_value(sample_class()).unwrap();
        let obj = json.as_object_mut().unwrap();
        for key in ["cpu", "memory", "repetitions", "population"] {
            obj.remove(key);
        }
        let back: ClassResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, sample_class());
    }

    #[test]
    fn run_records_without_warnings_still_parse() {
        let run = RunRecord {
            schema_version: SCHEMA_VERSION,
            stackbench_version: "0.1.0".into(),
            complete: true,
            incomplete_reason: None,
            started_unix_s: 1.0,
            settings: RunSettings {
                duration: Some(stackbench_model::settings::Secs(
                    std::time::Duration::from_secs(10),
                )),
                target: Some(stackbench_model::settings::Text("127.0.0.1:12865".into())),
                client_cpus: Some(stackbench_model::settings::CpuList(vec![0])),
                ..RunSettings::default()
            },
            responder: "spawned".into(),
            classes: vec![sample_class()],
            warnings: vec![],
            mix_cpu: Vec::new(),
            agents: None,
            refused_peers: None,
            lab: None,
            environment: None,
            server_process: None,
            responder_application: None,
        };
        let mut json = serde_json::to_value(&run).unwrap();
        json.as_object_mut().unwrap().remove("warnings");
        let back: RunRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, run);
    }

    #[test]
    fn cpu_and_memory_use_the_issue_keys() {
        let mut class = sample_class();
        class.cpu = Some(CpuFigures {
            client: Some(SideCpu::default()),
            ..CpuFigures::default()
        });
        class.memory = Some(MemoryFigures {
            server: Some(SideMemory::default()),
            ..MemoryFigures::default()
        });
        let json = serde_json::to_value(&class).unwrap();
        let client = &json["cpu"]["client"];
        for key in [
            "cpus",
            "method",
            "cpu_seconds",
            "util_pct",
            "cpu_us_per_tran",
            "process_cpu_us_per_tran",
        ] {
            assert!(client.get(key).is_some(), "cpu.client.{key} missing");
        }
        for key in ["user", "system", "irq", "softirq", "steal"] {
            assert!(client["breakdown"].get(key).is_some(), "breakdown.{key}");
        }
        assert_eq!(client["method"], "proc_stat_cpuset");
        let server = &json["memory"]["server"];
        for key in [
            "rss_bytes",
            "rss_bytes_per_conn",
            "kernel_sock_bytes",
            "kernel_sock_bytes_per_conn",
            "kernel_sock_sockets",
            "kernel_sock_method",
            "host_sock_mem_bytes",
            "host_sock_mem_bytes_per_conn",
        ] {
            assert!(server.get(key).is_some(), "memory.server.{key} missing");
        }
        let back: ClassResult = serde_json::from_value(json).unwrap();
        assert_eq!(back, class);
    }

    /// Records from before `--rekey` and the CPU per handshake still read.
    #[test]
    fn tls_figures_without_rekeys_or_handshake_cpu_read() {
        let old = r#"{"version":"1.3","cipher":"TLS_AES_128_GCM_SHA256","cipher_code":"1301",
            "full_handshakes":4,"resumed_handshakes":0,
            "handshake_latency_us":{"mean":1.0,"stdev":0.0,"min":1.0,"p50":1.0,"p90":1.0,
            "p99":1.0,"p999":1.0,"max":1.0}}"#;
        let t: TlsFigures = serde_json::from_str(old).unwrap();
        assert_eq!((t.rekeys, t.server_rekeys), (0, 0));
        assert_eq!(t.handshake_cpu_us, None);
    }
}
