//! The driver: opens a control session with a responder, starts one test per
//! workload class, spreads the clients over worker threads, watches the run
//! (progress, Ctrl-C, responder liveness) and merges the per-worker figures
//! into one [`ClassResult`] per class.
//!
//! Counts are exact: with `--transactions N`, class quotas are split over its
//! clients (client i gets N/c, plus one for the first N mod c), so the class
//! completes exactly N counted transactions with no shared counter. With both
//! `--transactions N` and a `--duration`, a class's window ends when its N are
//! done (its rate is N over the time they took); if the duration ends first,
//! or a class completes no transaction at all, the run is incomplete with a
//! reason saying what to change, and the figures are kept.
//!
//! Pacing (closed loop, think time, open-loop rate: [`pace`]) composes with
//! those stop conditions in the one worker core. The measurement window opens
//! only once every client is connected (after the `ramp`, if any): the
//! warm-up starts then, so a population is whole before anything is counted.

mod accum;
mod class_threads;
mod clock;
pub mod config;
mod control;
mod direct;
pub mod gate;
mod machine;
#[cfg(test)]
mod mock;
mod pace;
mod ring;
mod seen;
mod summary;
mod uring;
mod watch;
mod worker;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::AtomicBool;
use std::thread;
use std::time::Instant;

use stackbench_metrics::cpu::Work;
use stackbench_metrics::warnings::stall_band;
use stackbench_model::segment::Segment;
use stackbench_model::settings::{TlsMode, Tn3270Options};
use stackbench_model::{ClassSpec, SocketOptions, TlsParams, Transport, Workload};
use stackbench_record::CpuAttribution;
use stackbench_record::{ClassResult, CpuFigures};

use accum::ClassAccum;
use class_threads::ClassThreads;
use clock::{Timing, Window};
pub use config::RunConfig;
pub use config::{CONNECT_GRACE_NS, IDLE_BOUND_NS};
pub use control::ControlClient;
pub use gate::{GateState, StartGate};
use pace::Pace;
pub use pace::{PacingConfig, DROP_BEHIND_NS, LATE_NS};
pub use watch::Progress;
use watch::{Watch, Watched};
use worker::{Backend, ClassPlan, Client, Shared, Worker, WorkerSlots};

use crate::affinity;
use crate::app::{self, Protocol, Raw, Visit};
use crate::control::{ServerTestStats, TestSpec};
use crate::error::EngineError;
use crate::limits;
use crate::sampling::{self, Placement};
use crate::sidecar::{ProxyConfig, Role, SidecarProxy};
use crate::transport::{self, Dialer, TransportOps};

/// What one workload run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub classes: Vec<ClassResult>,
    /// A mix: the whole mix's CPU (CPU-set and process views) over all its
    /// classes' transactions, marked `mix`. On shared workers its classes
    /// carry [`CpuFigures::mix_share`]; with `class_workers` their own
    /// figures, and this one also holds what no class's threads ran
    /// (softirq in interrupt context, the coordinator). `None` for one
    /// class, or when the driver's samples are missing.
    pub mix_cpu: Option<CpuFigures>,
    /// The responder's counters per class (empty when it was lost).
    pub server_stats: Vec<ServerTestStats>,
    /// False when the run was cut short (Ctrl-C, SIGTERM, responder lost), a
    /// class completed no transaction, or a count was not reached.
    pub complete: bool,
    pub incomplete_reason: Option<String>,
    /// When the window (its warm-up) opened, on this host's wall clock
    /// (Unix seconds); `None` when it never opened.
    pub window_opened_unix_s: Option<f64>,
}

/// Runs one workload (all its classes concurrently) against the responder
/// behind `control`. `stop` ends it early (Ctrl-C); the figures up to then are
/// returned with `complete = false`.
pub fn run_workload(
    control: &mut ControlClient,
    cfg: &RunConfig,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunOutcome, EngineError> {
    run_workload_gated(control, cfg, None, stop, on_progress)
}

/// [`run_workload`] for an agent: its share is `cfg.segment`, and its window
/// opens at the start time `gate` gives (see [`gate`]), not as soon as its
/// clients are connected.
pub fn run_workload_gated(
    control: &mut ControlClient,
    cfg: &RunConfig,
    gate: Option<&mut dyn StartGate>,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Result<RunOutcome, EngineError> {
    if let (Some(p), Some(t)) = (control.plain_protocol(), control.plain_parts()) {
        let over = if t.tls {
            Transport::Tls
        } else {
            Transport::Tcp
        };
        if cfg.protocol.scheme_family() != p || cfg.transport != over {
            return Err(EngineError::Target(format!(
                "target {}{} is a plain {} server: run it with protocol {} over transport {}",
                t.scheme,
                t.address,
                p.server_name(),
                p.name(),
                over.name()
            )));
        }
    }
    if let Some(why) = app::row(cfg.protocol).refuses_transport(cfg.transport) {
        return Err(EngineError::Refused(why));
    }
    let row = transport::row_for(cfg.transport, cfg.tls.as_ref());
    row.check_usable(control.target())
        .map_err(EngineError::Transport)?;
    // Both sides apply only the options the transport supports.
    let cfg = &RunConfig {
        socket: row.effective_options(&cfg.socket).0,
        io: crate::iomode::effective(cfg).0,
        ..cfg.clone()
    };
    let _fds = limits::reserve_fds(cfg.total_clients_here()).map_err(EngineError::Limit)?;
    // Before any connection of the run: the kernel's kTLS counters here.
    let ktls_before = row.kernel_counters();
    let ktls = ktls_before.is_some();
    // Memory before this workload's connections exist: the fixed part.
    let baseline_memory = watch::memory_now(control);
    let Started {
        test_ids,
        plans,
        dialers,
        proxies,
        endpoints,
    } = start_tests(control, cfg)?;
    let Driven {
        per_worker,
        watched,
        timing,
    } = drive(
        control,
        cfg,
        (&plans, &dialers, &endpoints),
        gate,
        stop,
        on_progress,
    );
    let Watched {
        mut reason,
        stopped_at_ns,
        start_samples,
        end_samples,
        window_memory,
        window_opened_unix_s,
        idle_stop_ns,
    } = watched;
    let merged = merge_workers(plans.len(), per_worker, &mut reason);
    if reason.is_none() && merged.iter().all(|a| a.fault.is_none()) {
        // Answers that say the requests failed, beyond the bound (a
        // message the protocol refused says more: `shortfall` names it).
        reason = summary::status_share(cfg, &merged);
    }
    if reason.is_none() {
        // Not cut short, yet a class may have measured nothing, missed its
        // count or met a message its protocol refuses: never report that
        // as a complete run, and say what was seen.
        reason = summary::shortfall(cfg, &merged, idle_stop_ns);
    }
    // Sidecar: what the client proxies negotiated (their whole life).
    let proxy_tls: Vec<_> = proxies
        .into_iter()
        .map(|p| p.and_then(|p| p.finish()).and_then(|r| r.figures()))
        .collect();
    let mut server_stats = Vec::new();
    if reason.is_none() || control.is_alive() {
        for id in &test_ids {
            server_stats.push(control.stop(*id)?);
        }
    }
    if reason.is_none() {
        reason = row.fallback(&server_stats);
    }
    let ktls_client = ktls_before.and_then(|b| Some(transport::ktls::tls_stat()?.since(&b)));
    let workload = cfg.workload.to_string();
    let mix_cpu = cpu_of(control, cfg, &merged, (&start_samples, &end_samples));
    let mix = cfg.workload.classes.len() > 1;
    let samples = (&start_samples, &end_samples);
    let class_cpus = class_cpus(control, cfg, &merged, &test_ids, samples, mix_cpu.as_ref());
    let memory =
        sampling::memory_figures(&window_memory, &baseline_memory, cfg.total_clients_here());
    let classes = cfg
        .workload
        .classes
        .iter()
        .zip(&merged)
        .zip(&plans)
        .zip(proxy_tls)
        .zip(class_cpus)
        .enumerate()
        .map(|(index, ((((spec, acc), plan), proxy_tls), cpu))| {
            let count = cfg.transactions_here(index);
            let window_ns = window_ns(&timing, stopped_at_ns, count, acc);
            // This process's share of the class (all of it but for an agent).
            let here = ClassSpec {
                clients: cfg.clients_here(index),
                ..*spec
            };
            let mut class = summary::class_result(&workload, &here, acc, window_ns);
            // Only where Nagle can hold data: a TCP-family transport without
            // nodelay (AF_UNIX has no Nagle; with nodelay nothing is held),
            // or where a socket buffer below loopback's MSS holds segments
            // for ACKs whatever Nagle does.
            let small_buffer = [cfg.socket.sndbuf_bytes, cfg.socket.rcvbuf_bytes]
                .iter()
                .flatten()
                .any(|&b| b < stackbench_metrics::warnings::LOOPBACK_MSS_BYTES);
            let nagle = row.nagle() && (!cfg.socket.nodelay || small_buffer);
            let floor_ns = cfg.path.floor_ns(spec.request_bytes + spec.response_bytes);
            class.stall_band = nagle
                .then(|| stall_band(&acc.hist, floor_ns, &cfg.path))
                .flatten();
            class.population = summary::population(spec, &plan.pace, &cfg.pacing, acc);
            if let Some(rate) = class
                .population
                .as_mut()
                .and_then(|p| p.offered_rate_tps.as_mut())
            {
                // An agent offers its segment's share of the class's rate.
                *rate = cfg.segment.rate_share(*rate, u64::from(spec.clients));
            }
            class.cpu = cpu;
            class.memory = Some(memory.clone());
            class.tls = class.tls.take().or(proxy_tls);
            if let (Some(t), Some(p)) = (class.tls.as_mut(), &cfg.tls) {
                t.server_verified = p.server_name.is_some().then_some(!p.insecure);
            }
            class
        })
        .zip(server_stats.iter().map(Some).chain(std::iter::repeat(None)))
        .zip(&merged)
        .map(|((mut class, stats), acc)| {
            if let (Some(tls), Some(s)) = (class.tls.as_mut(), stats) {
                summary::add_server_tls(tls, s);
            }
            if let (Some(tls), true) = (class.tls.as_mut(), ktls) {
                summary::add_ktls(tls, acc, stats, ktls_client);
            }
            if let Some(served) = class.served_by.as_mut() {
                served.responder = stats.and_then(summary::responder_served);
            }
            class
        })
        .collect();
    Ok(RunOutcome {
        classes,
        mix_cpu: mix_cpu.filter(|_| mix).map(|c| CpuFigures {
            attribution: CpuAttribution::Mix,
            ..c
        }),
        server_stats,
        complete: reason.is_none(),
        incomplete_reason: reason,
        window_opened_unix_s,
    })
}

/// Sums the workers' figures per class; a worker's failure becomes the
/// run's `reason` unless it has one.
fn merge_workers(
    classes: usize,
    per_worker: Vec<Result<Vec<ClassAccum>, String>>,
    reason: &mut Option<String>,
) -> Vec<ClassAccum> {
    let mut merged: Vec<ClassAccum> = (0..classes).map(|_| ClassAccum::default()).collect();
    for result in per_worker {
        match result {
            Ok(accums) => merged.iter_mut().zip(&accums).for_each(|(m, a)| m.merge(a)),
            Err(e) => {
                reason.get_or_insert(e);
            }
        }
    }
    merged
}

/// The window's CPU figures from its (start, end) samples; `None` when the
/// driver's own samples are missing.
fn cpu_of(
    control: &ControlClient,
    cfg: &RunConfig,
    merged: &[ClassAccum],
    (start, end): (&sampling::SidePair, &sampling::SidePair),
) -> Option<CpuFigures> {
    let work = Work {
        transactions: merged.iter().map(|a| a.transactions).sum(),
        payload_bytes: merged.iter().map(|a| a.tx_bytes + a.rx_bytes).sum(),
    };
    let place = placement(control, cfg);
    (start.client.is_some() && end.client.is_some())
        .then(|| sampling::cpu_figures(start, end, &place, work))
}

/// Each class's CPU figures. One class alone: the window's. A mix on shared
/// worker threads: the mix's for every class ([`CpuFigures::mix_share`]),
/// since CPU is measured per CPU set and process, not per connection. A mix
/// with `class_workers`: each side from the class's own threads where they
/// were sampled ([`sampling::class_cpu_figures`]).
fn class_cpus(
    control: &ControlClient,
    cfg: &RunConfig,
    merged: &[ClassAccum],
    test_ids: &[u64],
    samples: (&sampling::SidePair, &sampling::SidePair),
    window: Option<&CpuFigures>,
) -> Vec<Option<CpuFigures>> {
    let classes = cfg.workload.classes.len();
    let Some(window) = window else {
        return vec![None; classes];
    };
    if classes == 1 {
        return vec![Some(window.clone())];
    }
    if !cfg.class_workers {
        return vec![Some(window.mix_share()); classes];
    }
    let whole = placement(control, cfg);
    merged
        .iter()
        .zip(test_ids)
        .enumerate()
        .map(|(class, (acc, &test_id))| {
            // A class pinned to a share of a side's CPUs: its util% is of them.
            let share = |cpus: &[usize]| match cpu_share(cpus, cfg, class) {
                s if s.is_empty() => cpus.to_vec(),
                s => s,
            };
            let place = Placement {
                client_cpus: share(&whole.client_cpus),
                server_cpus: share(&whole.server_cpus),
                ..whole.clone()
            };
            let work = Work {
                transactions: acc.transactions,
                payload_bytes: acc.tx_bytes + acc.rx_bytes,
            };
            let at = (class, test_id);
            Some(sampling::class_cpu_figures(
                samples, &place, window, at, work,
            ))
        })
        .collect()
}

fn placement(control: &ControlClient, cfg: &RunConfig) -> Placement {
    Placement {
        client_cpus: cfg.client_cpus.clone(),
        server_cpus: control.server_cpus.clone(),
        same_host: control.target().ip().is_loopback(),
    }
}

/// The responder tests of a run, one per class.
struct Started {
    test_ids: Vec<u64>,
    plans: Vec<ClassPlan>,
    /// Per class: spreads its connections over enough paths (see
    /// `transport::spread`).
    dialers: Vec<Dialer>,
    /// Per class: its client TLS proxy (`tls_mode sidecar`).
    proxies: Vec<Option<SidecarProxy>>,
    /// Every class's responder endpoints: the driver's sockets to them are
    /// the run's (their kernel memory, `crate::sockdiag`).
    endpoints: Vec<transport::Endpoint>,
}

/// The TLS parameters of a `tls` run (the defaults when none were given).
fn tls_params(cfg: &RunConfig) -> Result<Option<TlsParams>, EngineError> {
    if cfg.transport != Transport::Tls {
        return Ok(None);
    }
    match &cfg.tls {
        Some(p) => Ok(Some(p.clone())),
        None => TlsParams::resolve(None, None, None, Default::default(), None, None)
            .map(Some)
            .map_err(EngineError::Transport),
    }
}

/// Starts one responder test per class.
fn start_tests(control: &mut ControlClient, cfg: &RunConfig) -> Result<Started, EngineError> {
    let (mut test_ids, mut plans, mut dialers) = (Vec::new(), Vec::new(), Vec::new());
    let (mut proxies, mut all_endpoints) = (Vec::new(), Vec::new());
    let row = transport::row_for(cfg.transport, cfg.tls.as_ref());
    for (index, class) in cfg.workload.classes.iter().enumerate() {
        // The class's level travels to the responder in its test's options.
        let priority = cfg.priority.as_ref().and_then(|p| p.level(index));
        let (socket, _) = row.effective_options(&SocketOptions {
            priority,
            ..cfg.socket
        });
        let spec = TestSpec {
            kind: class.kind,
            request_bytes: class.request_bytes,
            response_bytes: class.response_bytes,
            socket,
            spin: cfg.spin.responder(),
            io: cfg.io,
            protocol: cfg.protocol,
            // The script is the terminals' own: the responder never sees it.
            tn3270: Tn3270Options {
                script: None,
                ..cfg.tn3270
            },
        };
        let clients = cfg.clients_here(index);
        let spread = transport::spread(row, control.target().ip(), clients);
        let tls = tls_params(cfg)?;
        let conns = (clients, spread.ports);
        let own = own_server_workers(cfg, control.server_threads);
        let own_cpus = cpu_share(&control.server_cpus, cfg, index);
        let own = (own, if own > 0 { own_cpus } else { Vec::new() });
        let (id, endpoints) = control.start_own(spec, cfg.transport, conns, tls.clone(), own)?;
        test_ids.push(id);
        let (dialer, proxy) = class_dialer((cfg, row), clients, (&endpoints, spread.sources), tls)
            .map_err(EngineError::Transport)?;
        dialers.push(dialer);
        proxies.push(proxy);
        all_endpoints.extend(endpoints);
        plans.push(ClassPlan {
            kind: class.kind,
            app: Raw {
                request: class.request_bytes,
                response: class.response_bytes,
            },
            pace: Pace::of(class, &cfg.pacing),
            priority: socket.priority,
            target: control
                .plain_parts()
                .map(|t| app::TargetHead::intern(&t.address, t.path.as_deref())),
            tn3270: cfg.tn3270,
        });
    }
    Ok(Started {
        test_ids,
        plans,
        dialers,
        proxies,
        endpoints: all_endpoints,
    })
}

/// `class_workers` in a mix whose side has at least one CPU per class: class
/// `index`'s share of that side's `cpus` (contiguous, the first classes one
/// more when they do not divide), so that the classes do not compete for
/// CPUs. Empty (not pinned beyond the side) otherwise: the classes' CPU is
/// still their threads' own, the classes only share the CPUs.
fn cpu_share(cpus: &[usize], cfg: &RunConfig, index: usize) -> Vec<usize> {
    let classes = cfg.workload.classes.len();
    if !cfg.class_workers || classes < 2 || cpus.len() < classes {
        return Vec::new();
    }
    let (base, extra) = (cpus.len() / classes, cpus.len() % classes);
    let start = index * base + index.min(extra);
    let len = base + usize::from(index < extra);
    cpus[start..start + len].to_vec()
}

/// `class_workers` in a mix: the responder's worker threads for each class
/// (its threads shared out, at least one); 0 (the shared pool) otherwise.
fn own_server_workers(cfg: &RunConfig, server_threads: u32) -> u32 {
    let classes = cfg.workload.classes.len() as u32;
    if cfg.class_workers && classes > 1 {
        (server_threads / classes).max(1)
    } else {
        0
    }
}

/// The dialer of one class to the endpoints `ready` named: the row's
/// (TLS inside the driver for `inline` and `ktls`), or clear text to a
/// client TLS proxy started here for the class (`sidecar`), returned with
/// it. `sources`: loopback source addresses to spread over.
fn class_dialer(
    (cfg, row): (&RunConfig, &dyn TransportOps),
    clients: u32,
    (endpoints, sources): (&[transport::Endpoint], u32),
    tls: Option<TlsParams>,
) -> Result<(Dialer, Option<SidecarProxy>), String> {
    let p = match tls {
        Some(p) if p.mode == TlsMode::Sidecar => p,
        tls => return Ok((row.dial(endpoints, sources, tls.as_ref())?, None)),
    };
    let proxy = SidecarProxy::start(&ProxyConfig {
        role: Role::Client,
        listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        upstream: endpoints.to_vec(),
        tls: p,
        socket: cfg.socket,
        cpus: cfg.client_cpus.clone(),
        clients,
    })?;
    let clear = [transport::Endpoint::Inet(proxy.addr())];
    let tcp = transport::row(Transport::Tcp);
    Ok((tcp.dial(&clear, sources, None)?, Some(proxy)))
}

/// What the workers and the coordinator's watch produced.
struct Driven {
    per_worker: Vec<Result<Vec<ClassAccum>, String>>,
    watched: Watched,
    /// The window as opened (never opened: nothing was counted).
    timing: Timing,
}

/// Spreads the clients over worker threads, runs them, and watches the run
/// from this thread until every worker is done. `classes`: each class's plan
/// and dialer.
fn drive(
    control: &mut ControlClient,
    cfg: &RunConfig,
    (plans, dialers, endpoints): (&[ClassPlan], &[Dialer], &[transport::Endpoint]),
    gate: Option<&mut dyn StartGate>,
    stop: &AtomicBool,
    on_progress: &mut dyn FnMut(&Progress),
) -> Driven {
    let by_class = cfg.class_workers && cfg.workload.classes.len() > 1;
    let assignments = if by_class {
        assign_by_class(&cfg.workload, cfg.transactions, cfg.threads, cfg.segment)
    } else {
        assign_clients(&cfg.workload, cfg.transactions, cfg.threads, cfg.segment)
    };
    let class_threads = by_class.then(ClassThreads::default);
    let expected = assignments.iter().flatten().filter(|c| c.quota > 0).count() as u64;
    let ramp_gap_ns = cfg.pacing.ramp.map_or(0.0, |r| 1e9 / r.per_s());
    let window = &Window::default();
    let slots: &[WorkerSlots] = &assignments
        .iter()
        .map(|_| WorkerSlots::new(plans.len(), cfg.live_metrics))
        .collect::<Vec<_>>();
    let shared = Shared {
        classes: plans,
        dialers,
        socket: cfg.socket,
        spin: cfg.spin.driver(),
        io: cfg.io,
        epoch: Instant::now(),
        window,
        window_s: cfg.duration.map_or(0, |d| d.as_secs() as usize),
        ramp_gap_ns,
        seed: cfg.pacing.seed,
        amqp: &cfg.amqp,
        h2: cfg.h2,
    };
    let abort = AtomicBool::new(false);
    let ramp_ns = cfg.ramp_ns();
    let watched = (slots, class_threads.as_ref());
    let mut gate = gate;
    let mut watch =
        Watch::new(shared.epoch, window, cfg, watched, expected, ramp_ns).gated(gate.is_some());
    watch.endpoints = endpoints.to_vec();
    let per_worker = thread::scope(|scope| {
        let handles: Vec<_> = assignments
            .iter()
            .zip(slots)
            .enumerate()
            .map(|(i, (clients, slots))| {
                let (shared, abort) = (&shared, &abort);
                let threads = class_threads.as_ref();
                thread::Builder::new()
                    .name(format!("drive-w{i}"))
                    .spawn_scoped(scope, move || {
                        // A class's worker serves that class alone.
                        let class = clients.first().map_or(0, |c| usize::from(c.class));
                        let share = cpu_share(&cfg.client_cpus, cfg, class);
                        if threads.is_some() && !share.is_empty() {
                            affinity::pin_current_thread(&share)
                                .map_err(|e| format!("worker {i} could not be pinned: {e}"))?;
                        }
                        crate::sched::apply(cfg.gen_sched)
                            .map_err(|e| format!("worker {i} could not be scheduled: {e}"))?;
                        let tid = threads.map(|t| t.register(class));
                        let run = RunWorker {
                            shared,
                            clients,
                            slots,
                            abort,
                        };
                        let result = app::with(cfg.protocol, run)
                            .map_err(|e| format!("worker {i} could not start: {e}"));
                        threads.zip(tid).inspect(|(t, tid)| t.exiting(*tid));
                        result
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        while !handles.iter().all(|h| h.is_finished()) {
            watch.tick(control, gate.as_deref_mut(), stop, &abort, on_progress);
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a worker thread panicked".to_string()))
            })
            .collect()
    });
    watch.finish(control);
    let mut timing = Timing::new(shared.epoch);
    timing.refresh(window);
    Driven {
        per_worker,
        watched: watch.into_outcome(),
        timing,
    }
}

/// One worker thread's run, with the codec of the run's protocol row
/// (chosen once per thread through the protocol table, so the loop calls it
/// without indirection).
struct RunWorker<'a, 'b> {
    shared: &'a Shared<'b>,
    clients: &'a [Client],
    slots: &'a WorkerSlots,
    abort: &'a AtomicBool,
}

impl Visit for RunWorker<'_, '_> {
    type Out = std::io::Result<Vec<ClassAccum>>;

    fn visit<P: Protocol>(self) -> Self::Out {
        Worker::<P::Client>::new(self.shared, self.clients, self.slots).map(|w| w.run(self.abort))
    }
}

/// Length of one class's measurement window in ns. A class that completed
/// its `--transactions` count is measured up to its last counted completion,
/// also when a `--duration` bounds the run: its rate is the count over the
/// time the count took. Otherwise the window is the configured duration, cut
/// short by an early stop (transactions completing until the workers noticed
/// the stop are counted, so the window reaches the last of them).
fn window_ns(
    timing: &Timing,
    stopped_at_ns: Option<u64>,
    transactions: Option<u64>,
    acc: &ClassAccum,
) -> u64 {
    let last = acc.last_completion_ns;
    let end = if transactions.is_some_and(|n| acc.transactions >= n) {
        last
    } else {
        match (timing.end_ns, stopped_at_ns) {
            (Some(end), Some(stop)) => end.min(stop.max(last)),
            (Some(end), None) => end,
            (None, stop) => stop.map_or(last, |s| s.max(last)),
        }
    };
    end.saturating_sub(timing.warmup_end_ns)
}

/// Spreads every client of every class in `segment` round-robin over
/// `threads` workers, each with its exact quota (see [`for_each_client`]).
/// Returns, per worker, its clients (class index, quota, index in the run);
/// workers without clients are omitted.
fn assign_clients(
    workload: &Workload,
    transactions: Option<u64>,
    threads: usize,
    segment: Segment,
) -> Vec<Vec<Client>> {
    let threads = threads.max(1);
    let mut workers = vec![Vec::new(); threads];
    let mut next = 0;
    for_each_client(workload, transactions, segment, |client| {
        workers[next % threads].push(client);
        next += 1;
    });
    workers.retain(|w| !w.is_empty());
    workers
}

/// `class_workers`: each class's clients in `segment` round-robin over
/// workers of its own, `threads / classes` of them (at least one, at most
/// one per client), quotas as in [`assign_clients`].
fn assign_by_class(
    workload: &Workload,
    transactions: Option<u64>,
    threads: usize,
    segment: Segment,
) -> Vec<Vec<Client>> {
    let classes = workload.classes.len();
    let per_class = (threads / classes.max(1)).max(1);
    let mut own = vec![vec![Vec::new(); per_class]; classes];
    let mut next = vec![0usize; classes];
    for_each_client(workload, transactions, segment, |client| {
        let class = usize::from(client.class);
        own[class][next[class] % per_class].push(client);
        next[class] += 1;
    });
    own.into_iter()
        .flatten()
        .filter(|w| !w.is_empty())
        .collect()
}

/// Every client of every class that `segment` runs, in class order, with its
/// index in the whole run and its exact quota: client `i` of a class of `c`
/// gets `n / c` of `--transactions n`, plus one for the first `n % c`, by
/// its global index, so the agents' quotas add up to one process's.
fn for_each_client(
    workload: &Workload,
    transactions: Option<u64>,
    segment: Segment,
    mut each: impl FnMut(Client),
) {
    let mut first = 0u64; // the class's first global index
    for (class_idx, class) in workload.classes.iter().enumerate() {
        let c = u64::from(class.clients);
        for i in segment.range(c) {
            let quota = transactions.map_or(u64::MAX, |n| n / c + u64::from(i < n % c));
            each(Client {
                class: class_idx as u16,
                quota,
                index: first + i,
            });
        }
        first += c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_metrics::warnings::PathFloor;
    use stackbench_model::{IoMode, Spin};
    use std::time::Duration;

    #[test]
    fn class_workers_share_out_the_cpus_only_when_each_class_gets_one() {
        let mut cfg = RunConfig {
            workload: "RR1(1B/1B)+STR1(1B/1MB)".parse().unwrap(),
            duration: None,
            warmup: Duration::ZERO,
            transactions: Some(1),
            threads: 1,
            class_workers: true,
            client_cpus: vec![],
            socket: SocketOptions::default(),
            spin: Spin::None,
            gen_sched: Default::default(),
            pacing: PacingConfig::default(),
            transport: Transport::Tcp,
            tls: None,
            priority: None,
            io: IoMode::Epoll,
            protocol: Default::default(),
            amqp: Default::default(),
            h2: Default::default(),
            http_error_share_pct: 1.0,
            path: PathFloor::default(),
            segment: Default::default(),
            tn3270: Default::default(),
            live_metrics: false,
        };
        assert_eq!(cpu_share(&[4, 5, 6], &cfg, 0), vec![4, 5]);
        assert_eq!(cpu_share(&[4, 5, 6], &cfg, 1), vec![6]);
        // Fewer CPUs than classes: the classes share them (threads still own).
        assert!(cpu_share(&[4], &cfg, 0).is_empty());
        cfg.class_workers = false;
        assert!(cpu_share(&[4, 5, 6], &cfg, 0).is_empty());
    }

    #[test]
    fn class_workers_serve_one_class_each() {
        let w: Workload = "RR3(1B/1B)+CRR2(1B/1B)".parse().unwrap();
        // Fewer threads than classes: still one worker per class.
        let a = assign_by_class(&w, Some(10), 1, Segment::WHOLE);
        assert_eq!(a.len(), 2);
        for worker in &a {
            assert!(worker.iter().all(|c| c.class == worker[0].class));
        }
        // Four threads: two per class; quotas still sum to the count.
        let a = assign_by_class(&w, Some(10), 4, Segment::WHOLE);
        assert_eq!(a.len(), 4);
        for class in [0, 1] {
            let sum: u64 = a
                .iter()
                .flatten()
                .filter(|c| c.class == class)
                .map(|c| c.quota)
                .sum();
            assert_eq!(sum, 10);
        }
        let mut indices: Vec<u64> = a.iter().flatten().map(|c| c.index).collect();
        indices.sort_unstable();
        assert_eq!(indices, (0..5).collect::<Vec<_>>());
    }

    #[test]
    fn quotas_sum_to_exact_counts_and_spread_evenly() {
        let w: Workload = "RR3(1B/1B)+CRR2(1B/1B)".parse().unwrap();
        let a = assign_clients(&w, Some(10), 2, Segment::WHOLE);
        assert_eq!(a.len(), 2);
        let sum = |class: u16| {
            a.iter()
                .flatten()
                .filter(|c| c.class == class)
                .map(|c| c.quota)
                .sum::<u64>()
        };
        assert_eq!(sum(0), 10);
        assert_eq!(sum(1), 10);
        assert_eq!(a[0].len(), 3);
        assert_eq!(a[1].len(), 2);
        // Fewer transactions than clients: some clients get nothing.
        let a = assign_clients(&"RR4(1B/1B)".parse().unwrap(), Some(2), 1, Segment::WHOLE);
        assert_eq!(
            a[0].iter().map(|c| c.quota).collect::<Vec<_>>(),
            vec![1, 1, 0, 0]
        );
        // More threads than clients: no idle workers.
        assert_eq!(
            assign_clients(&"RR1(1B/1B)".parse().unwrap(), None, 8, Segment::WHOLE).len(),
            1
        );
    }
}
