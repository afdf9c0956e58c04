//! CPU and memory samples of one side, taken at the instants that bound the
//! measurement window, and the figures derived from a pair of them.
//!
//! Each side samples its own host: the driver reads its `/proc`, the responder
//! reads its own and returns it over the control connection, so a remote
//! `stackbench serve` reports its side too (netperf's `-C`).

use stackbench_metrics::cpu::{self, CpuSample, ProcessSource, Work};
use stackbench_metrics::memory::{self, MemorySample};
use stackbench_metrics::threads::{threads_side_cpu, ThreadTimes};
use stackbench_record::{CpuFigures, MemoryFigures, SideCpu};

use crate::control::TestThreads;
use crate::sockdiag::Side;
use crate::transport::Endpoint;

/// This side's CPU counters (every CPU, plus this process and the TLS
/// proxies it runs for `tls_mode sidecar`, see [`crate::sidecar::side_pids`]).
pub fn local_cpu() -> Result<CpuSample, cpu::CpuError> {
    CpuSample::take(&ProcessSource::Pids(crate::sidecar::side_pids()))
}

/// This side's memory (with its TLS proxies), the kernel memory of its
/// sockets of the run whose responder listens at `endpoints` (none: no run
/// yet), and the host's socket memory; `None` if /proc is unreadable. A
/// sock_diag failure leaves only `own_sockets` empty.
pub fn local_memory(endpoints: &[Endpoint], side: Side) -> Option<MemorySample> {
    let mut sample = MemorySample::take(&crate::sidecar::side_pids()).ok()?;
    sample.own_sockets = crate::sockdiag::own_sockets(endpoints, side).ok().flatten();
    Some(sample)
}

/// Samples of both sides at one instant.
#[derive(Debug, Clone, Default)]
pub struct SidePair {
    pub client: Option<CpuSample>,
    pub server: Option<CpuSample>,
    /// `class_workers`: per class, its driver worker threads' CPU time
    /// (`None`: unreadable); empty otherwise.
    pub client_threads: Vec<Option<ThreadTimes>>,
    /// `class_workers`: the CPU time of each test's own responder workers.
    pub server_threads: Vec<TestThreads>,
    /// Against a broker: the responder application's processes.
    pub application: Option<CpuSample>,
}

/// Where the sides ran, for turning samples into figures.
#[derive(Debug, Clone)]
pub struct Placement {
    pub client_cpus: Vec<usize>,
    /// Empty: the responder is not pinned (all its host's CPUs).
    pub server_cpus: Vec<usize>,
    /// Both sides on one host (loopback target), so their CPU sets can overlap.
    pub same_host: bool,
}

impl Placement {
    /// Whether the per-side CPU-set views include each other's work.
    pub fn shares_cpus(&self) -> bool {
        self.same_host
            && (self.client_cpus.is_empty()
                || self.server_cpus.is_empty()
                || cpu::cpu_sets_overlap(&self.client_cpus, &self.server_cpus))
    }
}

/// The CPU figures of a window from its start and end samples. A side whose
/// samples are missing (a responder that could not sample) is `None`.
pub fn cpu_figures(start: &SidePair, end: &SidePair, place: &Placement, work: Work) -> CpuFigures {
    let side = |a: &Option<CpuSample>, b: &Option<CpuSample>, cpus: &[usize]| -> Option<SideCpu> {
        cpu::side_cpu(a.as_ref()?, b.as_ref()?, cpus, work).ok()
    };
    let client = side(&start.client, &end.client, &place.client_cpus);
    let server = side(&start.server, &end.server, &place.server_cpus);
    let shared = if place.shares_cpus() {
        let union = if place.client_cpus.is_empty() || place.server_cpus.is_empty() {
            Vec::new()
        } else {
            cpu::cpu_set_union(&place.client_cpus, &place.server_cpus)
        };
        side(&start.client, &end.client, &union)
    } else {
        None
    };
    CpuFigures {
        application: side(&start.application, &end.application, &[]),
        ..CpuFigures::combine(client, server, shared)
    }
}

/// One class of a mix run with `class_workers`: each side from the class's
/// own worker threads where both samples have them, otherwise that side of
/// the mix's figures (`mix`, no per-transaction figure). `class` indexes the
/// driver's thread samples, `test_id` the responder's.
pub fn class_cpu_figures(
    (start, end): (&SidePair, &SidePair),
    place: &Placement,
    mix: &CpuFigures,
    (class, test_id): (usize, u64),
    work: Work,
) -> CpuFigures {
    let mix = mix.mix_share();
    let client = threads_of(
        start.client_threads.get(class).copied().flatten(),
        end.client_threads.get(class).copied().flatten(),
    )
    .zip(window(&start.client, &end.client, &place.client_cpus))
    .map(|((a, b), (cpus, window_s))| threads_side_cpu(&a, &b, &cpus, window_s, work))
    .or(mix.client);
    let server_of = |pair: &SidePair| {
        pair.server_threads
            .iter()
            .find(|t| t.test_id == test_id)
            .map(|t| t.times)
    };
    let server = threads_of(server_of(start), server_of(end))
        .zip(window(&start.server, &end.server, &place.server_cpus))
        .map(|((a, b), (cpus, window_s))| threads_side_cpu(&a, &b, &cpus, window_s, work))
        .or(mix.server);
    // Thread run time is each side's own: the sides are separable even
    // where their CPU sets are not.
    CpuFigures::combine(client, server, None)
}

fn threads_of(
    a: Option<ThreadTimes>,
    b: Option<ThreadTimes>,
) -> Option<(ThreadTimes, ThreadTimes)> {
    a.zip(b)
}

/// A side's CPUs (its pinned set, else every CPU its samples have) and the
/// window between its samples, in seconds.
fn window(
    start: &Option<CpuSample>,
    end: &Option<CpuSample>,
    pinned: &[usize],
) -> Option<(Vec<usize>, f64)> {
    let (a, b) = (start.as_ref()?, end.as_ref()?);
    let cpus = if pinned.is_empty() {
        b.cpus.keys().copied().collect()
    } else {
        pinned.to_vec()
    };
    Some((
        cpus,
        b.monotonic_ns.saturating_sub(a.monotonic_ns) as f64 / 1e9,
    ))
}

/// Memory of (client, server) at one instant.
pub type MemoryPair = (Option<MemorySample>, Option<MemorySample>);

/// Memory figures at the steady state for `connections` connections, against
/// the samples taken before they were opened.
pub fn memory_figures(
    steady: &MemoryPair,
    baseline: &MemoryPair,
    connections: u64,
) -> MemoryFigures {
    let side = |now: &Option<MemorySample>, base: &Option<MemorySample>| {
        now.as_ref()
            .map(|m| memory::side_memory(m, base.as_ref(), connections))
    };
    MemoryFigures {
        client: side(&steady.0, &baseline.0),
        server: side(&steady.1, &baseline.1),
    }
}
