//! What one workload's run is told: [`RunConfig`], resolved from the
//! settings by the runner. The I/O backend choice (`iomode`) reads it
//! through [`RunCase`], which it implements here, so that `iomode`, below
//! the driver, imports nothing of it.

use std::time::Duration;

use stackbench_metrics::warnings::PathFloor;
use stackbench_model::segment::Segment;
use stackbench_model::settings::{ClassPriorities, GenSched, Spin, Tn3270Options};
use stackbench_model::{
    AmqpParams, AppProtocol, H2Params, IoMode, Kind, Pacing, SocketOptions, TlsParams, Transport,
    Workload,
};

use super::pace::{Pace, PacingConfig};
use crate::iomode::RunCase;

/// How long after the ramp's planned end the window waits for clients that
/// have not connected: 10 s covers three SYN retransmissions (1, 3, 7 s) of a
/// connection whose SYN met a full accept queue. After it, the window opens
/// anyway and the Little's-law check reports the missing clients.
pub const CONNECT_GRACE_NS: u64 = 10_000_000_000;

/// A run bounded by `--transactions` alone has no window end of its own: once
/// the measurement window is open, it ends incomplete when no transaction of
/// any class completed for this long (a server that accepts and never
/// answers would otherwise keep it waiting forever). Its INCOMPLETE line
/// says what the clients were waiting for ([`super::seen`]). 10 s, as the
/// connect grace: longer than any transaction of a working server on the
/// paths stackbench drives, short enough not to look hung. A paced class adds
/// ten of its mean gaps between a client's requests
/// ([`RunConfig::idle_bound_ns`]), so think time is not taken for silence.
pub const IDLE_BOUND_NS: u64 = 10_000_000_000;

/// One workload's run settings (already resolved). Not serializable: what
/// crosses a process boundary is a wire's own type (the agent wire's
/// `RunOrder` in the runner), versioned apart from this struct.
#[derive(Debug, Clone)]

pub struct RunConfig {
    pub workload: Workload,
    /// Measurement window; `None` when bounded by `transactions` only.
    pub duration: Option<Duration>,
    pub warmup: Duration,
    /// Exact transactions per class; with `duration` too, the run is
    /// incomplete when the duration ends before them.
    pub transactions: Option<u64>,
    /// Worker threads (at most one per client is used).
    pub threads: usize,
    /// A mix: each class on driver and responder worker threads of its own
    /// (`threads / classes` each on the driver, the responder's threads /
    /// classes on its side, at least one), so that each class's CPU is
    /// measured from its own threads ([`CpuMethod::Threads`]).
    ///
    /// [`CpuMethod::Threads`]: stackbench_record::CpuMethod
    pub class_workers: bool,
    /// CPUs the driver is pinned to (empty: not pinned), for the CPU-set view.
    pub client_cpus: Vec<usize>,
    pub socket: SocketOptions,
    /// Which sides busy-poll: the driver's workers, and the responder's
    /// (told in each test's start message).
    pub spin: Spin,
    /// How each driver worker thread schedules itself as it starts
    /// ([`crate::sched::apply`]).
    pub gen_sched: GenSched,
    /// Think time, open-loop rate, arrivals, ramp and seed.
    pub pacing: PacingConfig,
    /// What carries the data connections.
    pub transport: Transport,
    /// Transport `tls`: what both sides use (`None` for the others).
    pub tls: Option<TlsParams>,
    /// One priority level per class, in mix order (`None`: sockets untouched).
    pub priority: Option<ClassPriorities>,
    /// The I/O backend asked for; [`crate::iomode::effective`] decides the
    /// one both sides use.
    pub io: IoMode,
    /// The application protocol of every class's data connections.
    pub protocol: AppProtocol,
    /// Protocol amqp: what its clients do (the `amqp_*` settings).
    pub amqp: AmqpParams,
    /// Protocol h2: what its clients announce (the `h2_*` settings).
    pub h2: H2Params,
    /// Largest share of a class's responses, percent, whose status may be
    /// other than 2xx before the run is incomplete (the `http_error_share`
    /// setting; protocols whose responses carry a status).
    pub http_error_share_pct: f64,
    /// Protocol tn3270: TN3270E or not, the terminal model and LU, and what
    /// the responder does with TN3270E (told in each test's start message).
    pub tn3270: Tn3270Options,
    /// What the path adds by design (a lab link's delay and rate; zero on
    /// loopback), above which the delayed-ACK stall band is counted.
    pub path: PathFloor,
    /// The share of every class this process runs: the whole run, or agent
    /// i of N's segment (its clients keep their global indexes, so their
    /// ramp places, think-time phases and quotas are the one-process run's).
    pub segment: Segment,
    /// Live figures for `--metrics-listen`: workers keep a copy of their
    /// accumulators and the watch adds them up, with both sides' CPU and
    /// memory, about once a second ([`crate::Progress::live`]).
    pub live_metrics: bool,
}

impl RunCase for RunConfig {
    fn io(&self) -> IoMode {
        self.io
    }

    fn transport(&self) -> Transport {
        self.transport
    }

    fn protocol(&self) -> AppProtocol {
        self.protocol
    }

    fn classes(&self) -> Vec<(Kind, bool)> {
        let (think, rate) = (self.pacing.think, self.pacing.rate);
        let classes = self.workload.classes.iter();
        classes
            .map(|c| (c.kind, Pacing::effective(c.pacing, think, rate).is_some()))
            .collect()
    }

    fn ramp(&self) -> bool {
        self.pacing.ramp.is_some()
    }

    fn total_clients_here(&self) -> u64 {
        RunConfig::total_clients_here(self)
    }

    fn threads(&self) -> usize {
        self.threads
    }
}

impl RunConfig {
    /// The ramp's length (`None`: every client at once), ns.
    pub fn ramp_ns(&self) -> u64 {
        let gap_ns = self.pacing.ramp.map_or(0.0, |r| 1e9 / r.per_s());
        (self.workload.total_clients() as f64 * gap_ns) as u64
    }

    /// The longest the window waits for every client to connect: the
    /// ramp, then [`CONNECT_GRACE_NS`]; it opens anyway after it.
    pub fn connect_wait(&self) -> Duration {
        Duration::from_nanos(self.ramp_ns() + CONNECT_GRACE_NS)
    }

    /// Bounded by `--transactions` alone: how long the measurement window
    /// may go without a completed transaction before the run ends
    /// incomplete — [`IDLE_BOUND_NS`] plus ten of the longest mean gap a
    /// class's pacing puts between one client's requests (think time, or the
    /// open-loop gap per connection). `None` with a `--duration`.
    pub fn idle_bound_ns(&self) -> Option<u64> {
        if self.duration.is_some() {
            return None;
        }
        let gap_ns = self
            .workload
            .classes
            .iter()
            .map(|c| match Pace::of(c, &self.pacing) {
                Pace::Closed => 0.0,
                Pace::Think(t) => t.mean().as_nanos() as f64,
                Pace::Open { gap_ns, .. } => gap_ns,
            })
            .fold(0.0, f64::max);
        Some(IDLE_BOUND_NS + (10.0 * gap_ns) as u64)
    }

    /// Clients of class `class` this process runs.
    pub fn clients_here(&self, class: usize) -> u32 {
        let c = self.workload.classes[class].clients;
        self.segment.share(u64::from(c)) as u32
    }

    /// Clients of every class this process runs.
    pub fn total_clients_here(&self) -> u64 {
        (0..self.workload.classes.len())
            .map(|i| u64::from(self.clients_here(i)))
            .sum()
    }

    /// `--transactions` of class `class` this process runs: its clients'
    /// quotas (`None`: not bounded by a count).
    pub fn transactions_here(&self, class: usize) -> Option<u64> {
        let clients = u64::from(self.workload.classes[class].clients);
        self.transactions
            .map(|n| self.segment.quota_share(n, clients))
    }
}
