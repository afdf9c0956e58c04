//! The CPU of a run measured by several agents, per side: host views taken
//! once per host, process figures once per process, both summed.
//!
//! Why once per host: a side's CPU-set figures (`proc_stat_*`) are what the
//! host's `/proc/stat` says about a set of CPUs, whoever ran on them. Agents
//! on one host share that set and their windows coincide (they open at the
//! controller's one start time), so each agent's view holds every agent's
//! work on the host: summing them would count it once per agent. Of the
//! views of one host the one with the longest window is taken (it covers
//! the others'). Thread figures (`threads`, `class_workers`) and process
//! figures are a process's (or a test's) own, and are summed over distinct
//! processes instead.

use stackbench_metrics::combine::once_per;
use stackbench_metrics::cpu::{cpu_us_per_mb, cpu_us_per_tran, Work};
use stackbench_record::{CpuAttribution, CpuBreakdown, CpuFigures, CpuMethod, ProcessCpu, SideCpu};

/// What one side figure of one agent is a view of.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    /// Every process on this host sees the same CPU set: keep one view.
    Host(String),
    /// This agent's (or its responder test's) own: keep every one.
    Own(usize),
}

/// One agent's figures of one side, with what they are views of.
#[derive(Debug, Clone)]
pub struct SideInput<'a> {
    /// Whose CPU set the CPU-set figures describe: the host the side ran
    /// on (replaced by [`Key::Own`] for thread figures, see [`view_key`]).
    pub host: String,
    /// The agent's position among the parts (keys its own figures).
    pub part: usize,
    /// The process the process figures describe: the agent (`host:pid`)
    /// or its responder (the target it drove).
    pub process: String,
    /// The figures.
    pub side: &'a SideCpu,
}

/// Host views are kept once per host; thread figures are the agent's own.
fn view_key(input: &SideInput) -> Key {
    match input.side.method {
        CpuMethod::Threads => Key::Own(input.part),
        CpuMethod::ProcStatCpuset | CpuMethod::ProcStatAllCpus => Key::Host(input.host.clone()),
    }
}

/// Of each group (by `key`, in first-seen order), the member with the
/// longest window (it covers the others').
fn longest_per<'a, K: std::hash::Hash + Eq>(
    inputs: &[SideInput<'a>],
    key: impl Fn(&SideInput<'a>) -> K,
) -> Vec<&'a SideCpu> {
    once_per(
        inputs,
        |i| key(i),
        |new, kept| new.side.window_s > kept.side.window_s,
    )
    .into_iter()
    .map(|i| i.side)
    .collect()
}

/// One side over every agent; `None` without input. `work` is the merged
/// work (all agents' transactions and payload) the per-transaction
/// figures divide by.
pub fn merge_side(inputs: &[SideInput], work: Work) -> Option<SideCpu> {
    let first = inputs.first()?.side;
    let views = longest_per(inputs, view_key);
    let capacity_s: f64 = views
        .iter()
        .map(|v| v.window_s * v.cpus.len().max(1) as f64)
        .sum();
    let cpu_seconds: f64 = views.iter().map(|v| v.cpu_seconds).sum();
    let tick_busy_s: f64 = views.iter().map(|v| v.tick_busy_s).sum();
    // Ticks counted = coverage × capacity per view, so the summed coverage
    // and netperf's busy/all-ticks share stay what one view would give.
    let ticked_s: Option<f64> = views
        .iter()
        .map(|v| {
            v.tick_coverage
                .map(|c| c * v.window_s * v.cpus.len().max(1) as f64)
        })
        .sum();
    let every = |f: fn(&SideCpu) -> bool| inputs.iter().all(|i| f(i.side));
    let process = merge_process(inputs);
    Some(SideCpu {
        // Several hosts: each host's ids in turn, so the count is the CPUs
        // measured (an id may then repeat, once per host).
        cpus: views.iter().flat_map(|v| v.cpus.iter().copied()).collect(),
        method: first.method,
        window_s: views.iter().map(|v| v.window_s).fold(0.0, f64::max),
        cpu_seconds,
        util_pct: share_pct(cpu_seconds, capacity_s),
        // Present where every agent's was: a mix's shared figures have
        // none (`CpuFigures::mix_share`), and keep none.
        cpu_us_per_tran: every(|s| s.cpu_us_per_tran.is_some())
            .then(|| cpu_us_per_tran(cpu_seconds, work.transactions))
            .flatten(),
        cpu_us_per_mb: every(|s| s.cpu_us_per_mb.is_some())
            .then(|| cpu_us_per_mb(cpu_seconds, work.payload_bytes))
            .flatten(),
        breakdown: views.iter().fold(CpuBreakdown::default(), |sum, v| {
            add_breakdown(&sum, &v.breakdown)
        }),
        tick_busy_s,
        tick_util_pct: match ticked_s {
            Some(t) => share_pct(tick_busy_s, t),
            None => weighted(
                views
                    .iter()
                    .map(|v| (v.tick_util_pct, v.window_s * v.cpus.len().max(1) as f64)),
            ),
        },
        tick_coverage: ticked_s
            .filter(|_| capacity_s > 0.0)
            .map(|t| t / capacity_s),
        process_cpu_us_per_tran: process
            .filter(|_| every(|s| s.process_cpu_us_per_tran.is_some()))
            .and_then(|p| cpu_us_per_tran(p.cpu_seconds, work.transactions)),
        process,
        // One agent's side holding the whole mix's CPU makes the sum the mix's.
        attribution: if inputs
            .iter()
            .any(|i| i.side.attribution == CpuAttribution::Mix)
        {
            CpuAttribution::Mix
        } else {
            CpuAttribution::Class
        },
        // Only a plain server's side has storage figures, and a run over
        // agents does not sample one (`session::plain_server`).
        disk: None,
    })
}

/// The process figures summed over distinct processes (each once: a
/// responder driven by several agents reported its own CPU to each);
/// `None` when any process has none, as a sum missing one is no one's.
fn merge_process(inputs: &[SideInput]) -> Option<ProcessCpu> {
    let kept = longest_per(inputs, |i| i.process.clone());
    let all: Option<Vec<ProcessCpu>> = kept.iter().map(|s| s.process).collect();
    let all = all?;
    Some(ProcessCpu {
        method: all.first()?.method,
        user_s: all.iter().map(|p| p.user_s).sum(),
        system_s: all.iter().map(|p| p.system_s).sum(),
        cpu_seconds: all.iter().map(|p| p.cpu_seconds).sum(),
    })
}

/// Both sides over every agent, combined as one process's are
/// ([`CpuFigures::combine`]). `shared` is the sides' common view where they
/// share CPUs; when only some agents' sides did (an agent on the
/// responder's host beside others elsewhere), neither the shared view nor
/// client + server is both sides' total, so the totals are left out.
pub fn merge_cpu(
    client: &[SideInput],
    server: &[SideInput],
    shared: &[SideInput],
    agents: usize,
    work: Work,
) -> (CpuFigures, Option<String>) {
    let mixed = !shared.is_empty() && shared.len() < agents;
    let shared = (!mixed).then(|| merge_side(shared, work)).flatten();
    let mut figures =
        CpuFigures::combine(merge_side(client, work), merge_side(server, work), shared);
    if !mixed {
        return (figures, None);
    }
    figures.separable = false;
    figures.total_cpu_seconds = None;
    figures.total_cpu_us_per_tran = None;
    let note = "the driver and responder shared CPUs on some agents' hosts and not on others': \
                no both-sides CPU total is given"
        .to_string();
    (figures, Some(note))
}

fn share_pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        (100.0 * part / whole).clamp(0.0, 100.0)
    } else {
        0.0
    }
}

/// The mean of `(value, weight)` pairs by weight (0 without weight).
fn weighted(pairs: impl Iterator<Item = (f64, f64)>) -> f64 {
    let (sum, weight) = pairs.fold((0.0, 0.0), |(s, w), (v, x)| (s + v * x, w + x));
    if weight > 0.0 {
        sum / weight
    } else {
        0.0
    }
}

fn add_breakdown(a: &CpuBreakdown, b: &CpuBreakdown) -> CpuBreakdown {
    CpuBreakdown {
        user: a.user + b.user,
        nice: a.nice + b.nice,
        system: a.system + b.system,
        irq: a.irq + b.irq,
        softirq: a.softirq + b.softirq,
        steal: a.steal + b.steal,
        iowait: a.iowait + b.iowait,
        idle: a.idle + b.idle,
    }
}
