//! Measurement-quality checks around a run: the idle baseline taken before
//! the first workload (background load on the measured CPUs), shared CPU sets,
//! frequency governors, and the per-class checks of the metrics layer. Each
//! warning is stored in the record's `warnings[]` and shown to the run's
//! [`Observer`](crate::observe::Observer) as it is found.

use std::time::Duration;

use stackbench_engine::iomode;
use stackbench_engine::sampling::local_cpu;
use stackbench_engine::transport;
use stackbench_engine::RunConfig;
use stackbench_metrics::cpu::{cpu_set_union, side_cpu, CpuSample, ProcessSource, Work};
use stackbench_metrics::procfs::read_governor;
use stackbench_metrics::warnings::{self, Warning};
use stackbench_model::settings::{RunSettings, Spin};
use stackbench_model::{IoMode, SocketOptions};
use stackbench_record::ClassResult;

/// Length of the idle baseline.
pub const BASELINE: Duration = Duration::from_secs(1);

/// The run-level checks and what the class checks need from them.
pub struct RunChecks {
    pub warnings: Vec<Warning>,
    /// The idle baseline's busy % of the driver's CPUs, for
    /// `driver_saturated` to say its figure includes that other work.
    pub driver_background_pct: Option<f64>,
}

/// Measures how busy `cpus` (empty: all) are for one second before the run,
/// and from the same two samples the driver's CPUs (`client_cpus`, empty: all)
/// alone. The CPU time of `server_pids` (a plain server measured as the
/// server side: a broker's VM is busy when idle) in that second is not
/// background: it is taken off the busy time of `cpus`, on which it ran.
pub fn background_load(
    cpus: &[usize],
    client_cpus: &[usize],
    server_pids: &[u32],
) -> (Option<Warning>, Option<f64>) {
    let server = || {
        (!server_pids.is_empty())
            .then(|| CpuSample::take(&ProcessSource::Pids(server_pids.to_vec())).ok())
            .flatten()
    };
    let (Ok(start), server_start) = (local_cpu(), server()) else {
        return (None, None);
    };
    std::thread::sleep(BASELINE);
    let (Ok(end), server_end) = (local_cpu(), server()) else {
        return (None, None);
    };
    let server_s = server_start
        .zip(server_end)
        .and_then(|(a, b)| side_cpu(&a, &b, &[], Work::default()).ok()?.process)
        .map_or(0.0, |p| p.cpu_seconds);
    let idle = |set: &[usize]| {
        let work = Work {
            transactions: 0,
            payload_bytes: 0,
        };
        side_cpu(&start, &end, set, work).ok()
    };
    let idle_of_others = |set: &[usize]| {
        let mut b = idle(set)?;
        let capacity_s = b.window_s * b.cpus.len() as f64;
        if server_s > 0.0 && capacity_s > 0.0 {
            b.cpu_seconds = (b.cpu_seconds - server_s).max(0.0);
            b.util_pct = 100.0 * b.cpu_seconds / capacity_s;
        }
        Some(b)
    };
    let warning = idle_of_others(cpus).and_then(|b| warnings::check_background_load(&b));
    let driver = idle(client_cpus)
        .filter(|b| warnings::check_background_load(b).is_some())
        .map(|b| b.util_pct);
    (warning, driver)
}

/// Checks that hold for the whole run: placement, governors, background load
/// (`server_pids`: a plain server's processes, whose work is not background).
pub fn run_warnings(
    client_cpus: &[usize],
    server_cpus: &[usize],
    same_host: bool,
    server_pids: &[u32],
) -> RunChecks {
    let mut out = Vec::new();
    out.extend(warnings::check_shared_cpus(
        client_cpus,
        server_cpus,
        same_host,
    ));
    let measured = if same_host {
        cpu_set_union(client_cpus, server_cpus)
    } else {
        client_cpus.to_vec()
    };
    let cpus: Vec<usize> = if measured.is_empty() {
        stackbench_engine::affinity::current_cpus().unwrap_or_default()
    } else {
        measured.clone()
    };
    let governors: Vec<_> = cpus.iter().map(|&c| (c, read_governor(c))).collect();
    out.extend(warnings::check_governors(&governors));
    let (background, driver_background_pct) = background_load(&measured, client_cpus, server_pids);
    out.extend(background);
    RunChecks {
        warnings: out,
        driver_background_pct,
    }
}

/// Reduces the socket settings to what the run's transport applies (both
/// sides do the same) and says what was left out, so the stored settings are
/// the effective ones and nothing is silently pretended. `nodelay` is
/// stored as applied: a tls run's default (on) is written out.
pub fn transport_options(settings: &mut RunSettings) -> Option<Warning> {
    let row = transport::row(settings.transport);
    let (eff, notes) = row.effective_options(&settings.socket_options());
    settings.nodelay = Some(eff.nodelay);
    if notes.is_empty() {
        return None;
    }
    settings.set_socket_options(&eff);
    Some(Warning::OptionsNotApplied {
        transport: settings.transport.name().to_string(),
        notes,
    })
}

/// The backend the run's workloads run with: when `io uring` cannot be used
/// for one of them (a case it does not cover, or no io_uring here), the whole
/// run measures epoll, the stored setting says so, and the warning names the
/// case.
///
/// `auto` becomes one backend for the whole record: uring only when it is
/// the choice for every workload (`iomode::auto_choice`), with no warning.
pub fn io_fallback(settings: &mut RunSettings, configs: &[RunConfig]) -> Option<Warning> {
    if settings.io == IoMode::Auto {
        let uring = !configs.is_empty()
            && configs
                .iter()
                .all(|c| iomode::effective(c).0 == IoMode::Uring);
        settings.io = if uring { IoMode::Uring } else { IoMode::Epoll };
        return None;
    }
    let reason = configs.iter().find_map(|c| iomode::effective(c).1)?;
    settings.io = IoMode::Epoll;
    Some(Warning::IoFallback { reason })
}

/// The per-class checks; a driver that spins is busy by design, and one on
/// CPUs the idle baseline found busy is not alone in its busy figure; `io`
/// is the stored effective backend, which the class's connections are
/// checked against.
pub fn class_warnings(
    class: &ClassResult,
    driver_threads: u32,
    (spin, io): (Spin, IoMode),
    driver_background_pct: Option<f64>,
    socket: &SocketOptions,
) -> Vec<Warning> {
    let mut out = warnings::class_warnings(
        class,
        Some(driver_threads),
        spin.driver(),
        driver_background_pct,
    );
    out.extend(warnings::check_io_served(class, io));
    // A socket buffer below loopback's MSS stalls on delayed ACKs whatever
    // Nagle does: the stall check names it instead, and judges the band
    // whatever the class's p50 and size.
    if let Some(small) = small_buffer(socket) {
        out.retain(|w| !matches!(w, Warning::DelayedAckStall { .. }));
        out.extend(warnings::check_stall_with(class, Some(small)));
    }
    out
}

/// The socket buffer set below loopback's MSS (`--sndbuf` first), with its
/// flag; `None` when neither is.
pub fn small_buffer(socket: &SocketOptions) -> Option<(&'static str, u32)> {
    let small = |b: Option<u32>| b.filter(|&b| b < warnings::LOOPBACK_MSS_BYTES);
    small(socket.sndbuf_bytes)
        .map(|b| ("--sndbuf", b))
        .or_else(|| small(socket.rcvbuf_bytes).map(|b| ("--rcvbuf", b)))
}

/// Whether `w` judges a class's CPU figures, which in a mix on shared
/// workers are the whole mix's (every class holds the same): such a warning
/// belongs to the mix, not to each of its classes.
pub fn is_mix_wide(w: &Warning) -> bool {
    matches!(
        w,
        Warning::DriverSaturated { .. }
            | Warning::DriverSpinning { .. }
            | Warning::StealPresent { .. }
    )
}

/// A run over agents with more agent processes than driver CPUs (or more
/// responders than server CPUs) whose p99 is over ten times its p50: the
/// processes queue for the CPUs. 256K users over 15 agents and 15
/// responders on one CPU each gave p99 45 ms against p50 91 µs, the same
/// with --nodelay (so not Nagle), at 37% and 25% busy. `cpus` are the
/// driver's and the responder's as placed (empty: not pinned, so this
/// process's).
pub fn agents_share_cpus(
    agents: u32,
    cpus: (&[usize], &[usize]),
    responders: u32,
    class: &ClassResult,
) -> Option<Warning> {
    let count = |list: &[usize]| match list.len() {
        0 => stackbench_engine::affinity::current_cpus().map_or(1, |c| c.len()),
        n => n,
    };
    let (client_cpus, server_cpus) = (count(cpus.0), count(cpus.1));
    let crowded = agents as usize > client_cpus || responders as usize > server_cpus;
    let lat = class.latency_us.as_ref()?;
    (crowded && lat.p99 > 10.0 * lat.p50).then_some(Warning::AgentsShareCpus {
        agents,
        client_cpus,
        responders,
        server_cpus,
        p50_us: lat.p50,
        p99_us: lat.p99,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::LatencyUs;

    fn class(p50: f64, p99: f64) -> ClassResult {
        ClassResult {
            latency_us: Some(LatencyUs {
                p50,
                p99,
                ..Default::default()
            }),
            ..ClassResult::sample()
        }
    }

    #[test]
    fn crowded_agents_with_a_long_tail_are_named() {
        let cpus: (&[usize], &[usize]) = (&[0], &[1]);
        let w = agents_share_cpus(15, cpus, 15, &class(91.0, 45_350.0)).expect("fires");
        assert_eq!(w.code(), "agents_share_cpus");
        assert!(
            w.to_string().contains("15 agents share 1 driver CPU(s)"),
            "{w}"
        );
        assert!(w.to_string().contains("p99 45.4 ms"), "{w}");
        // A short tail, or agents within the CPUs: nothing.
        assert!(agents_share_cpus(15, cpus, 15, &class(91.0, 400.0)).is_none());
        assert!(agents_share_cpus(1, cpus, 1, &class(91.0, 45_350.0)).is_none());
    }

    /// The class checks hold the stored effective io against the
    /// connections each side's backends counted.
    #[test]
    fn a_class_served_off_the_stored_io_is_warned_about() {
        use stackbench_record::{BackendConnections, ServedBy};
        let on = |io_uring, epoll| BackendConnections {
            io_uring,
            epoll,
            direct: 0,
        };
        let c = ClassResult {
            served_by: Some(ServedBy {
                driver: on(2, 0),
                responder: Some(on(0, 2)),
            }),
            ..class(50.0, 60.0)
        };
        let codes = |io| -> Vec<&'static str> {
            class_warnings(&c, 1, (Spin::None, io), None, &SocketOptions::default())
                .iter()
                .map(Warning::code)
                .collect()
        };
        assert!(codes(IoMode::Uring).contains(&"io_served_elsewhere"));
        // io epoll: the driver's io_uring connections are the surprise.
        assert!(codes(IoMode::Epoll).contains(&"io_served_elsewhere"));
        let agreed = ClassResult {
            served_by: Some(ServedBy {
                driver: on(2, 0),
                responder: Some(on(2, 0)),
            }),
            ..c.clone()
        };
        let w = class_warnings(
            &agreed,
            1,
            (Spin::None, IoMode::Uring),
            None,
            &SocketOptions::default(),
        );
        assert!(w.iter().all(|w| w.code() != "io_served_elsewhere"), "{w:?}");
    }
}
