//! Measurement-quality warnings (hyperfine's `Warnings`): a typed enum whose
//! messages say what to change, and pure `check_*` functions that decide from
//! measured figures whether each one applies. The engine prints them on stderr
//! and stores them in the record's `warnings[]` via [`Warning::to_record`].
//!
//! Thresholds are named constants below, each with its reason.

use std::fmt;

use crate::stats::cv_pct;
use stackbench_record::{SideCpu, WarningRecord};

mod class;
mod ktls;
mod population;
mod served;
mod stall;

pub use class::class_warnings;
pub use ktls::{check_ktls, check_tls_unverified};
pub use served::check_io_served;
pub use stall::{
    check_delayed_ack_stall, check_stall_with, stall_band, PathFloor, LOOPBACK_MSS_BYTES,
    STALL_SHARE_PCT,
};

pub use population::{check_driver_behind, check_generator_tail, check_little_law};

/// Driver CPUs busier than this mean the driver, not the stack, limits the
/// rate: requests wait for a driver thread, so latency and rate describe the
/// load generator (netperf's and wrk's long-standing advice).
pub const DRIVER_SATURATED_PCT: f64 = 90.0;
/// Steal above 1% of a side's CPU time: below that it is within the tick
/// sampling noise of `/proc/stat`; above it the hypervisor is visibly taking
/// CPU, and CPU figures include time the guest never ran.
pub const STEAL_PCT: f64 = 1.0;
/// An idle baseline busier than 5% on the measured CPUs: an idle Linux CPU
/// shows well under 1% (timers, RCU); 5% means another workload whose CPU
/// would be charged to stackbench's transactions.
pub const BACKGROUND_BUSY_PCT: f64 = 5.0;
/// Length of the idle baseline taken before a run, seconds: 100 ticks per
/// CPU at USER_HZ 100, enough to resolve 5% (5 ticks) from zero.
pub const BASELINE_WINDOW_S: f64 = 1.0;
/// Coefficient of variation of per-second rates above 10%: a steady loopback
/// or LAN run stays within a few percent; beyond 10% the mean hides phases
/// (warm-up not over, throttling, other load), and comparisons of 5% effects
/// between runs are not meaningful.
pub const RATE_CV_PCT: f64 = 10.0;
/// Fewest per-second rates for a steadiness judgement: with 2 the CV says
/// nothing about a trend.
pub const RATE_CV_MIN_SECONDS: usize = 3;
/// Shortest useful window, seconds. `/proc/stat` is tick-sampled (10 ms per
/// CPU): at 50% busy the sampling error of a 5 s window is about ±2 points of
/// utilisation (binomial √(p(1−p)/500)), and per-second steadiness needs
/// several seconds to judge.
pub const MIN_WINDOW_S: f64 = 5.0;
/// Fewest transactions: below 1000 a p99.9 has no sample behind it, and the
/// ±1 transaction at each window edge is above 0.1% of the count.
pub const MIN_TRANSACTIONS: u64 = 1000;
/// Little's law N = X(R+Z) off by more than 2%: for a population in steady
/// state it holds exactly up to window-edge effects, which are well below 1%
/// once the window spans many think cycles and hundreds of clients; 2% means
/// the population was not what was configured (not all connected, errors
/// cutting cycles) or the driver lagged its schedule.
pub const LITTLE_LAW_PCT: f64 = 2.0;
/// Generator lag p99 above 1 ms: with the timer wheel's timerfd wake-ups a
/// driver with spare CPU sends within tens of µs of the intended time; 1 ms
/// late at p99 means requests queued behind busy connections or a busy
/// driver, so the offered load was not the load applied.
pub const GENERATOR_LAG_P99_US: f64 = 1000.0;
/// The generator's lag p99 at half the latency p99 or more: a driver woken
/// late to send is as late to read the response, so a lag of the tail's
/// own size means the tail is (at least that share) the generator's
/// scheduling, not the stack's or the responder's.
pub const GENERATOR_TAIL_SHARE_PCT: f64 = 50.0;
/// Lag p99 below 200 µs is not named as the tail's cause: a wake-up on a
/// busy CPU costs tens of µs, and a loopback p99 of that size is no tail.
pub const GENERATOR_TAIL_MIN_LAG_US: f64 = 200.0;

/// Which side a figure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Client => "driver (client)",
            Side::Server => "responder (server)",
        })
    }
}

/// A measurement-quality problem and the data that shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// The driver's CPUs (or its threads) were more than 90% busy.
    DriverSaturated {
        busy_pct: f64,
        /// How busy the driver's CPUs were in the idle baseline, when that
        /// was background load and the CPU-set view (which counts it) is
        /// what crossed the bound: the busy figure is not the driver's alone.
        background_pct: Option<f64>,
    },
    /// As [`Warning::DriverSaturated`], but the driver busy-polled (`spin`):
    /// its CPUs are busy by design, so the figure does not show saturation.
    DriverSpinning { busy_pct: f64 },
    /// Driver and responder share CPUs on one host; empty list = unpinned.
    SharedCpus {
        client_cpus: Vec<usize>,
        server_cpus: Vec<usize>,
    },
    /// Steal time above [`STEAL_PCT`] on a side's CPUs.
    StealPresent { side: Side, steal_pct: f64 },
    /// The measured CPUs were busy before the run started.
    BackgroundLoad { busy_pct: f64, cpus: Vec<usize> },
    /// Per-second rates varied more than [`RATE_CV_PCT`].
    RateUnsteady { cv_pct: f64 },
    /// Window shorter than [`MIN_WINDOW_S`] or fewer than [`MIN_TRANSACTIONS`].
    RunTooShort { window_s: f64, transactions: u64 },
    /// cpufreq governors other than `performance`: (CPU, governor).
    GovernorNotPerformance { governors: Vec<(usize, String)> },
    /// A population's N differs from X(R+Z) by more than [`LITTLE_LAW_PCT`].
    LittleLawOff {
        clients: u32,
        /// X(R+Z): clients the measured rate, response and wait times account for.
        implied_clients: f64,
        connected: u32,
        errors: u64,
        lag_p99_us: Option<f64>,
    },
    /// Requests went out late (lag p99 above [`GENERATOR_LAG_P99_US`]) or
    /// intended sends were dropped.
    DriverBehind {
        lag_p99_us: f64,
        late: u64,
        dropped: u64,
    },
    /// The generator lag's p99 is [`GENERATOR_TAIL_SHARE_PCT`] or more of
    /// the latency p99 (and above [`GENERATOR_TAIL_MIN_LAG_US`]).
    GeneratorTail {
        lag_p99_us: f64,
        latency_p99_us: f64,
        share_pct: f64,
    },
    /// Repetitions ended at the maximum with intervals still too wide:
    /// (measure, achieved full width % of the mean).
    ConfidenceNotReached {
        level_pct: f64,
        target_width_pct: f64,
        repetitions: u32,
        measures: Vec<(&'static str, Option<f64>)>,
    },
    /// Socket options the run's transport cannot honour and what was done
    /// instead (one clause each, e.g. "nodelay not set: AF_UNIX has no Nagle
    /// algorithm").
    OptionsNotApplied {
        transport: String,
        notes: Vec<String>,
    },
    /// A lab interface on the run's path read back differently after the
    /// window than before it (`before → after`, one per interface).
    LabChanged { changes: Vec<String> },
    /// A lab link had IPsec but the ESP counters of these interfaces' SAs
    /// did not rise during the window (`namespace/name (out +N, in +N)`).
    IpsecIdle { interfaces: Vec<String> },
    /// The run's responders were virtual hosts (macvlans), but these
    /// interfaces' packet counters did not rise both ways during the
    /// window (`namespace/interface (rx +N, tx +N)`).
    VirtualHostIdle { interfaces: Vec<String> },
    /// `io uring` was asked for but the run measured epoll: `reason` names
    /// the case (a transport, pacing, CRR, or a kernel without io_uring).
    IoFallback { reason: String },
    /// The stored effective `io` (`io`: its name) does not account for
    /// connections the class's backends counted: one clause per side
    /// ([`check_io_served`]).
    IoServedElsewhere {
        io: &'static str,
        sides: Vec<String>,
    },
    /// `tls_mode ktls`, yet the kernel did not visibly carry the records:
    /// one clause per failed check ([`check_ktls`]).
    KtlsNotCarried { why: Vec<String> },
    /// An https:// target's certificate was not verified (`--insecure`):
    /// the figures are of a server no one checked ([`check_tls_unverified`]).
    TlsUnverified { server: String },
    /// At least [`STALL_SHARE_PCT`] of a class's transactions took 35–250 ms
    /// longer than the path explains ([`check_delayed_ack_stall`]).
    DelayedAckStall {
        share_pct: f64,
        transactions: u64,
        /// The band, ms (the path's floor included); no high edge when the
        /// transactions were counted past it (several stalls each: a small
        /// buffer and a long transfer).
        low_ms: f64,
        high_ms: Option<f64>,
        p50_us: f64,
        /// The cause the settings point to: a socket buffer set below
        /// loopback's 64 kB MSS (`--sndbuf`/`--rcvbuf`, its flag and
        /// bytes), where the kernel's segments wait for the delayed ACK
        /// whatever Nagle does; `None`: Nagle.
        small_buffer: Option<(&'static str, u32)>,
    },
    /// A run over agents placed more agent (or responder) processes than
    /// their side has CPUs, and its latency has a tail far above its median:
    /// the processes wait for one another's turn on the CPU.
    AgentsShareCpus {
        agents: u32,
        client_cpus: usize,
        responders: u32,
        server_cpus: usize,
        p50_us: f64,
        p99_us: f64,
    },
    /// Agents of another build than the controller's (same agent wire
    /// protocol, so they ran): `controller` is its build, `agents` one
    /// clause per agent (`agent 1/2 on h2 (pid 7) is stackbench 0.1.0,
    /// commit …`).
    AgentBuildsDiffer {
        controller: String,
        agents: Vec<String>,
    },
}

impl Warning {
    /// Stable snake_case identifier stored in the record.
    pub fn code(&self) -> &'static str {
        match self {
            Warning::DriverSaturated { .. } => "driver_saturated",
            Warning::DriverSpinning { .. } => "driver_spinning",
            Warning::SharedCpus { .. } => "shared_cpus",
            Warning::StealPresent { .. } => "steal_present",
            Warning::BackgroundLoad { .. } => "background_load",
            Warning::RateUnsteady { .. } => "rate_unsteady",
            Warning::RunTooShort { .. } => "run_too_short",
            Warning::GovernorNotPerformance { .. } => "governor_not_performance",
            Warning::ConfidenceNotReached { .. } => "confidence_not_reached",
            Warning::OptionsNotApplied { .. } => "options_not_applied",
            Warning::IoFallback { .. } => "io_fallback",
            Warning::IoServedElsewhere { .. } => "io_served_elsewhere",
            Warning::LittleLawOff { .. } => "little_law_off",
            Warning::DriverBehind { .. } => "driver_behind",
            Warning::GeneratorTail { .. } => "generator_tail",
            Warning::LabChanged { .. } => "lab_changed",
            Warning::KtlsNotCarried { .. } => "ktls_not_carried",
            Warning::TlsUnverified { .. } => "tls_unverified",
            Warning::IpsecIdle { .. } => "ipsec_idle",
            Warning::VirtualHostIdle { .. } => "virtual_host_idle",
            Warning::DelayedAckStall { .. } => "delayed_ack_stall",
            Warning::AgentsShareCpus { .. } => "agents_share_cpus",
            Warning::AgentBuildsDiffer { .. } => "agent_builds_differ",
        }
    }

    /// The record entry; `class` is the class's notation, `None` for the run.
    pub fn to_record(&self, class: Option<&str>) -> WarningRecord {
        WarningRecord {
            code: self.code().to_string(),
            message: self.to_string(),
            class: class.map(str::to_string),
        }
    }
}

fn cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        return "all (not pinned)".to_string();
    }
    let ids: Vec<String> = cpus.iter().map(usize::to_string).collect();
    ids.join(",")
}

fn governor_list(governors: &[(usize, String)]) -> String {
    let list: Vec<String> = governors
        .iter()
        .map(|(cpu, g)| format!("cpu{cpu}={g}"))
        .collect();
    list.join(", ")
}

fn width_list(measures: &[(&'static str, Option<f64>)]) -> String {
    let list: Vec<String> = measures
        .iter()
        .map(|(m, w)| match w {
            Some(w) => format!("{m} {w:.1}%"),
            None => format!("{m} undefined"),
        })
        .collect();
    list.join(", ")
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::DriverSaturated {
                busy_pct,
                background_pct: None,
            } => write!(
                f,
                "the driver was {busy_pct:.0}% busy (> {DRIVER_SATURATED_PCT:.0}%): the run \
                 measures the load generator, not the stack; give the driver more threads or \
                 CPUs, or lower the offered load"
            ),
            Warning::DriverSaturated {
                busy_pct,
                background_pct: Some(background_pct),
            } => write!(
                f,
                "the driver's CPUs were {busy_pct:.0}% busy (> {DRIVER_SATURATED_PCT:.0}%), \
                 but they were already {background_pct:.0}% busy with other work in the idle \
                 baseline (background_load): the figure includes that work, so the other work, \
                 not only the load generator, filled them; stop it or pin the driver to idle \
                 CPUs (--client-cpus) and run again"
            ),
            Warning::DriverSpinning { busy_pct } => write!(
                f,
                "the driver was {busy_pct:.0}% busy because it busy-polls (spin): a spinning \
                 driver keeps its CPUs busy whatever the load, so this does not show saturation \
                 and its CPU µs/tr include the polling; to judge saturation or driver cost, run \
                 once without spinning the driver"
            ),
            Warning::SharedCpus {
                client_cpus,
                server_cpus,
            } => write!(
                f,
                "driver CPUs [{}] and responder CPUs [{}] overlap: per-side CPU cannot be \
                 separated, only the total is reported; pin the two sides to disjoint CPU sets",
                cpu_list(client_cpus),
                cpu_list(server_cpus)
            ),
            Warning::StealPresent { side, steal_pct } => write!(
                f,
                "{side} CPUs lost {steal_pct:.1}% of their time to steal (a virtual machine): \
                 CPU figures include hypervisor noise; measure on bare metal or dedicated vCPUs"
            ),
            Warning::BackgroundLoad { busy_pct, cpus } => write!(
                f,
                "CPUs [{}] were {busy_pct:.1}% busy in the idle baseline before the run: other \
                 work will be charged to the transactions; stop it or pin the run to idle CPUs",
                cpu_list(cpus)
            ),
            Warning::RateUnsteady { cv_pct } => write!(
                f,
                "the per-second rate varied by {cv_pct:.1}% (coefficient of variation > \
                 {RATE_CV_PCT:.0}%): the mean hides phases; lengthen the warm-up and the window, \
                 and look for other load or throttling"
            ),
            Warning::RunTooShort {
                window_s,
                transactions,
            } => write!(
                f,
                "the window was {window_s:.2} s with {transactions} transactions (want at least \
                 {MIN_WINDOW_S:.0} s and {MIN_TRANSACTIONS}): CPU and percentile figures are \
                 coarse; run longer"
            ),
            Warning::GovernorNotPerformance { governors } => write!(
                f,
                "CPU frequency governor is not 'performance' ({}): clock changes move CPU \
                 per transaction between runs; set the governor to performance",
                governor_list(governors)
            ),
            Warning::ConfidenceNotReached {
                level_pct,
                target_width_pct,
                repetitions,
                measures,
            } => write!(
                f,
                "desired confidence was not achieved after {repetitions} repetitions: \
                 {level_pct}% interval widths {} exceed {target_width_pct}% of the mean; \
                 allow more iterations, run longer, or quieten the machine",
                width_list(measures)
            ),
            Warning::KtlsNotCarried { why } => write!(
                f,
                "tls_mode ktls: {}: the figures may not be kernel TLS's; check the kernel's \
                 CONFIG_TLS and the run's errors, and run again",
                why.join("; ")
            ),
            Warning::TlsUnverified { server } => write!(
                f,
                "--insecure: {server}'s certificate was not verified, so these figures may be \
                 of another server than the one named; give --ca with the CA that signed it"
            ),
            Warning::IoFallback { reason } => {
                write!(f, "{reason}; the stored settings say io epoll")
            }
            Warning::IoServedElsewhere { io, sides } => write!(
                f,
                "the stored settings say io {io}, but {}: the figures are not all {io}'s; \
                 a side without io_uring serves on epoll (its stderr says why), so run where \
                 both sides have it, or ask for io epoll",
                sides.join(" and ")
            ),
            Warning::DelayedAckStall {
                share_pct,
                transactions,
                low_ms,
                high_ms,
                p50_us,
                small_buffer: Some((flag, bytes)),
            } => write!(
                f,
                "delayed-ACK stall: {share_pct:.1}% of transactions ({transactions}) took \
                 {}, which the path does not explain (p50 {p50_us:.0} \
                 µs): the likely cause is {flag} {bytes} B, below loopback's 64 kB MSS: a \
                 segment waits for the peer's delayed ACK (40 ms) to free the buffer, with \
                 or without --nodelay; raise {flag} to at least 64kB or leave it to the \
                 kernel; the rate and latency figures include the stalls",
                match high_ms {
                    Some(high) => format!("{low_ms:.0}-{high:.0} ms"),
                    None => format!("{low_ms:.0} ms or more (a stall per buffer's worth)"),
                }
            ),
            Warning::DelayedAckStall {
                share_pct,
                transactions,
                low_ms,
                high_ms,
                p50_us,
                small_buffer: None,
            } => write!(
                f,
                "delayed-ACK stall: {share_pct:.1}% of transactions ({transactions}) took \
                 {low_ms:.0}-{:.0} ms, which the path does not explain (p50 {p50_us:.0} \
                 µs): the likely cause is Nagle holding a message's last segment until the \
                 peer's delayed ACK (40 ms); set --nodelay (TCP_NODELAY), or look for \
                 messages written in small pieces (on CPUs busy with other work, scheduling \
                 delays land here too); the rate and latency figures include the stalls",
                high_ms.unwrap_or(*low_ms)
            ),
            Warning::AgentsShareCpus {
                agents,
                client_cpus,
                responders,
                server_cpus,
                p50_us,
                p99_us,
            } => write!(
                f,
                "{agents} agents share {client_cpus} driver CPU(s) and {responders} responder \
                 processes share {server_cpus} server CPU(s): a transaction waits while the \
                 other processes run, so the latency tail is scheduling delay (p99 {:.1} ms \
                 against p50 {p50_us:.0} µs), not the stack's (--nodelay does not change it); \
                 the rate and CPU figures stand; for the tail, give the agents more CPUs or \
                 hosts (a lab, Slurm)",
                p99_us / 1e3
            ),
            Warning::AgentBuildsDiffer { controller, agents } => write!(
                f,
                "agents of another build than the controller ({controller}): {}; they speak \
                 the same agent wire protocol, so the run went ahead, but a change in how the \
                 builds measure would show in their figures: run the same build everywhere",
                agents.join("; ")
            ),
            Warning::OptionsNotApplied { transport, notes } => write!(
                f,
                "transport {transport}: {}; the stored settings show what was applied",
                notes.join("; ")
            ),
            Warning::LabChanged { changes } => write!(
                f,
                "the lab link changed during the window ({}): something else reconfigured it; \
                 keep other `lab up` runs and tools off the lab while measuring and run again",
                changes.join("; ")
            ),
            Warning::VirtualHostIdle { interfaces } => write!(
                f,
                "the responder was a virtual host, but its macvlan did not both receive and send \
                 during the window ({}): the traffic entered or left by the link end's \
                 own MAC, so the run did not measure the virtual MAC; check `stackbench lab show` \
                 and the host's `ip rule` and run again",
                interfaces.join("; ")
            ),
            Warning::IpsecIdle { interfaces } => write!(
                f,
                "the lab link has IPsec but the ESP counters did not rise during the window ({}): \
                 the traffic did not pass through the SAs, so the run measured clear text; check \
                 `stackbench lab show` for the SAs and policies and run again",
                interfaces.join("; ")
            ),
            Warning::LittleLawOff {
                clients,
                implied_clients,
                connected,
                errors,
                lag_p99_us,
            } => {
                let off_pct = 100.0 * (implied_clients / f64::from(*clients) - 1.0);
                write!(
                    f,
                    "Little's law is off by {off_pct:+.1}% (more than {LITTLE_LAW_PCT:.0}%): \
                     N = {clients} {} but X(R+Z) = {}; ",
                    if *clients == 1 { "client" } else { "clients" },
                    four_figures(*implied_clients)
                )?;
                if off_pct < 0.0 {
                    write!(
                        f,
                        "fewer clients cycled than configured ({connected} connected, {errors} \
                         errors, generator lag p99 {} µs): connect them all (--ramp, a longer \
                         --warmup), fix the errors, or give the driver more CPU",
                        lag_p99_us.map_or("-".to_string(), |l| format!("{l:.0}"))
                    )
                } else {
                    f.write_str(
                        "more transactions than the clients can make at this response and think \
                         time: the window is short against R+Z; lengthen --duration and --warmup",
                    )
                }
            }
            Warning::DriverBehind {
                lag_p99_us,
                late,
                dropped,
            } => write!(
                f,
                "requests went out behind schedule: generator lag p99 {lag_p99_us:.0} µs (bound \
                 {GENERATOR_LAG_P99_US:.0} µs), {late} late, {dropped} dropped: the connections \
                 were still busy (the stack is saturated at this rate) or the driver lacked CPU; \
                 lower the rate, add connections, or give the driver more threads"
            ),
            Warning::GeneratorTail {
                lag_p99_us,
                latency_p99_us,
                share_pct,
            } => write!(
                f,
                "the latency tail is the generator's: its lag p99 {lag_p99_us:.0} µs is \
                 {share_pct:.0}% of the latency p99 {latency_p99_us:.0} µs, so that much of the \
                 tail is the driver waking late, not the stack or the responder; give the \
                 driver CPUs of its own (fewer agents per CPU, --client-cpus) or a scheduling \
                 setting that runs it at once (--gen-sched)"
            ),
        }
    }
}

/// `x` with at least four significant figures (all of its integer digits):
/// the Little's-law warning fires at a 2% gap, which four figures always
/// show, where `{:.0}` printed 0.95 clients as "1" beside N = 1.
fn four_figures(x: f64) -> String {
    let magnitude = if x == 0.0 || !x.is_finite() {
        0
    } else {
        x.abs().log10().floor() as i32
    };
    let decimals = usize::try_from(3 - magnitude).unwrap_or(0);
    format!("{x:.decimals$}")
}

/// Driver saturation from the CPU-set view and, when the process view and the
/// driver's thread count are known, from busy time per driver thread (which
/// catches one saturated thread on a large unpinned machine).
///
/// `background_pct` is the idle baseline's busy share of the driver's CPUs
/// when it showed background load ([`check_background_load`]): the CPU-set
/// view counts that other work, so when it alone crossed the bound the
/// warning says the figure is not the driver's. The per-thread view counts
/// only the driver's own CPU time and blames the driver whatever the baseline.
pub fn check_driver_saturated(
    client: &SideCpu,
    driver_threads: Option<u32>,
    background_pct: Option<f64>,
) -> Option<Warning> {
    let per_thread = match (client.process, driver_threads) {
        (Some(p), Some(threads)) if threads > 0 && client.window_s > 0.0 => {
            100.0 * p.cpu_seconds / (client.window_s * f64::from(threads))
        }
        _ => 0.0,
    };
    let busy_pct = client.util_pct.max(per_thread);
    let own = per_thread > DRIVER_SATURATED_PCT;
    (busy_pct > DRIVER_SATURATED_PCT).then_some(Warning::DriverSaturated {
        busy_pct,
        background_pct: background_pct.filter(|&b| !own && b > BACKGROUND_BUSY_PCT),
    })
}

/// Shared CPUs between sides on one host (sides on different hosts never share).
pub fn check_shared_cpus(
    client_cpus: &[usize],
    server_cpus: &[usize],
    same_host: bool,
) -> Option<Warning> {
    (same_host && crate::cpu::cpu_sets_overlap(client_cpus, server_cpus)).then(|| {
        Warning::SharedCpus {
            client_cpus: client_cpus.to_vec(),
            server_cpus: server_cpus.to_vec(),
        }
    })
}

/// Steal as a share of all the side's CPU time in the window.
pub fn check_steal(side: Side, cpu: &SideCpu) -> Option<Warning> {
    let b = &cpu.breakdown;
    let all_s = cpu.cpu_seconds + b.idle + b.iowait;
    if all_s <= 0.0 {
        return None;
    }
    let steal_pct = 100.0 * b.steal / all_s;
    (steal_pct > STEAL_PCT).then_some(Warning::StealPresent { side, steal_pct })
}

/// Background load from an idle baseline (a [`SideCpu`] over the measured
/// CPUs, [`BASELINE_WINDOW_S`] long, taken before the run).
pub fn check_background_load(baseline: &SideCpu) -> Option<Warning> {
    (baseline.util_pct > BACKGROUND_BUSY_PCT).then(|| Warning::BackgroundLoad {
        busy_pct: baseline.util_pct,
        cpus: baseline.cpus.clone(),
    })
}

/// Steadiness of the per-second rates.
pub fn check_rate_steadiness(per_second_tps: &[f64]) -> Option<Warning> {
    if per_second_tps.len() < RATE_CV_MIN_SECONDS {
        return None;
    }
    let cv = cv_pct(per_second_tps)?;
    (cv > RATE_CV_PCT).then_some(Warning::RateUnsteady { cv_pct: cv })
}

/// Window length and transaction count.
pub fn check_run_length(window_s: f64, transactions: u64) -> Option<Warning> {
    (window_s < MIN_WINDOW_S || transactions < MIN_TRANSACTIONS).then_some(Warning::RunTooShort {
        window_s,
        transactions,
    })
}

/// Governors of the measured CPUs as read (`None`: no cpufreq, e.g. a VM,
/// which is not warned about).
pub fn check_governors(governors: &[(usize, Option<String>)]) -> Option<Warning> {
    let bad: Vec<(usize, String)> = governors
        .iter()
        .filter_map(|(cpu, g)| g.as_ref().map(|g| (*cpu, g.clone())))
        .filter(|(_, g)| g != "performance")
        .collect();
    (!bad.is_empty()).then_some(Warning::GovernorNotPerformance { governors: bad })
}

/// Unmet `--confidence` target after the last repetition.
pub fn check_confidence(rep: &stackbench_record::Repetitions) -> Option<Warning> {
    let target = rep.target_width_pct?;
    if rep.reached != Some(false) {
        return None;
    }
    let named = [
        ("rate", Some(&rep.rate_tps)),
        ("client CPU/tr", rep.client_cpu_us_per_tran.as_ref()),
        ("server CPU/tr", rep.server_cpu_us_per_tran.as_ref()),
    ];
    let mut level_pct = 0.0;
    let mut measures = Vec::new();
    for (name, summary) in named {
        let Some(summary) = summary.filter(|s| s.n > 0) else {
            continue;
        };
        let width = summary.confidence.and_then(|c| {
            level_pct = c.level_pct;
            c.width_pct_of_mean
        });
        if width.is_none_or(|w| w > target) {
            measures.push((name, width));
        }
    }
    Some(Warning::ConfidenceNotReached {
        level_pct,
        target_width_pct: target,
        repetitions: u32::try_from(rep.runs.len()).unwrap_or(u32::MAX),
        measures,
    })
}

#[cfg(test)]
pub(crate) mod tests;
