//! The runner: executes resolved runs ([`ResolvedRun`]) and returns their
//! records. Places the driver on its CPUs, checks what cannot work before a
//! responder starts, starts the responder process (or reaches the target),
//! runs every workload with its repetitions, collects the warnings and builds
//! the record. Consecutive runs that need the same responder reuse it.
//! A run on another kernel runs whole in a guest ([`crate::guest_step`]);
//! a run across a lab runs the driver in host A's namespace
//! ([`crate::lab_run`]). Everything here reads the resolved run; the only
//! calls back into [`crate::resolve`] are its two projections, the engine's
//! [`RunConfig`] and the stored settings.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{SystemTime, UNIX_EPOCH};

use stackbench_engine::affinity::{format_cpu_list, pin_current_thread};
use stackbench_engine::server_side::ServerSide;
use stackbench_engine::token::Token;
use stackbench_engine::{limits, transport, ControlClient, RunConfig};
use stackbench_metrics::warnings::Warning;
use stackbench_model::settings::{CpuList, Launcher, Text};
use stackbench_model::study::StudyStep;
use stackbench_model::Workload;
use stackbench_record::CpuAttribution;
use stackbench_record::{
    MixCpu, RefusedPeers, RunRecord, ServerFoundBy, ServerProcess, WarningRecord, SCHEMA_VERSION,
};
use stackbench_results::env::Environment;

use crate::agents::controller::{AgentsSpec, Controller};
use crate::error::{input, RunError};
use crate::lab_run::LabRun;
use crate::observe::Observer;
use crate::resolve::{resolve, HostRun, ResolvedRun, Responder, Site};
use crate::spawn::SpawnedResponder;
use crate::{quality, repeat};

/// An open responder and control connection, with the run-level warnings
/// measured when it was opened (the 1 s idle baseline among them).
struct Session {
    /// What decides the responder and the measured CPUs: a run with the same
    /// key reuses the session.
    key: String,
    /// A run split over agents: the controller of its agents.
    agents: Option<Controller>,
    /// Responder processes started here: one, or one per local agent.
    responders: Vec<SpawnedResponder>,
    target: String,
    spawned: bool,
    control: ControlClient,
    warnings: Vec<WarningRecord>,
    /// The idle baseline's busy % of the driver's CPUs when it showed
    /// background load ([`quality::RunChecks`]).
    driver_background_pct: Option<f64>,
    /// A plain server's processes measured as its side, or why none were.
    server_process: Option<ServerProcess>,
    /// A broker's responder application measured as the third side, or why
    /// it was not.
    responder_application: Option<ServerProcess>,
}

/// Runs the resolved runs of one command. Consecutive runs that need the same
/// responder and CPUs (the points of a `--sweep`, the steps of
/// `--find-max-rate` or of a study) share one responder process, control
/// connection and idle baseline instead of paying for them per run.
pub struct Runner<'a> {
    open: Option<Session>,
    observer: &'a mut dyn Observer,
    /// Set from outside (the binary's Ctrl-C handler): the run in progress
    /// ends early and its record says what it measured.
    stop: &'a AtomicBool,
    /// The program started as the responder (`PROGRAM serve …`).
    responder_program: Option<PathBuf>,
    /// Called before each responder session opens (see [`Runner::on_session_open`]).
    on_open: Option<fn()>,
}

impl<'a> Runner<'a> {
    /// A runner that reports to `observer` and ends a run when `stop` is set.
    /// The responder it starts (when a run gives no target) is this
    /// process's own executable run as `serve`: the stackbench binary.
    pub fn new(observer: &'a mut dyn Observer, stop: &'a AtomicBool) -> Runner<'a> {
        Runner {
            open: None,
            observer,
            stop,
            responder_program: None,
            on_open: None,
        }
    }

    /// Calls `hook` before each responder session opens: the binary
    /// installs its Ctrl-C handler there, so that an interrupt before any
    /// measurement (while resolving, or a study's `--dry-run`) still ends
    /// the process at once, and one during a run ends only the run.
    pub fn on_session_open(mut self, hook: fn()) -> Runner<'a> {
        self.on_open = Some(hook);
        self
    }

    /// Starts `program serve …` as the responder instead of this process's
    /// executable (for a library user whose executable is not stackbench).
    pub fn with_responder_program(mut self, program: PathBuf) -> Runner<'a> {
        self.responder_program = Some(program);
        self
    }

    /// The observer the runner reports to (for what is built on it:
    /// sweeps and the search announce their steps through it).
    pub fn observer(&mut self) -> &mut dyn Observer {
        &mut *self.observer
    }

    /// Runs `run` and returns its record, complete or not: a run that
    /// ends early (a lost responder, `stop`) is a record with
    /// `complete = false` holding what was measured; an error means nothing
    /// was measured.
    pub fn execute(&mut self, run: &ResolvedRun) -> Result<RunRecord, RunError> {
        let host = match &run.site {
            Site::Guest(guest) => {
                self.open = None; // the guest starts its own responder
                return crate::guest_step::execute(run, guest, &mut *self.observer);
            }
            Site::Host(host) => host,
        };
        let client_cpus = &host.placement.client_cpus;
        if !client_cpus.is_empty() {
            pin_current_thread(client_cpus).or_else(|e| input(format!("--client-cpus: {e}")))?;
        }
        preflight(run, host)?;
        if let Some(lab) = &host.lab {
            lab.up()?; // the step's overrides; in place, the responder stays
        }
        let key = &run.session_key;
        if self.open.as_ref().is_none_or(|o| &o.key != key) {
            self.open = None; // the old responder stops before a new one starts
            if let Some(hook) = self.on_open {
                hook();
            }
            let opened = open_session(
                run,
                host,
                key.clone(),
                self.responder_program.as_deref(),
                &mut *self.observer,
                self.stop,
            )?;
            self.open = Some(opened);
        }
        let session = self.open.as_mut().expect("opened above");
        within_bounds(run, host, &session.control, &session.target)?;
        let mut record = new_record(run, &session.control, &session.target, session.spawned);
        let obs = &mut *self.observer;
        if let Some(w) = quality::transport_options(&mut record.settings) {
            warn(obs, &mut record, &w, None);
        }
        let configs: Vec<RunConfig> = run
            .workloads
            .iter()
            .map(|w| run.run_config(host, w))
            .collect();
        if let Some(w) = quality::io_fallback(&mut record.settings, &configs) {
            warn(obs, &mut record, &w, None);
        }
        record.warnings.extend(session.warnings.iter().cloned());
        let control_before = session.control.refused_peers();
        record.server_process = session.server_process.clone();
        record.responder_application = session.responder_application.clone();
        let stop = self.stop;
        let measured = Measured {
            configs,
            host,
            iterations: &run.iterations,
        };
        match &host.lab {
            None => run_workloads(&measured, session, &mut record, obs, stop),
            Some(lab) => {
                let before = lab.read();
                // The driver's threads are made in host A's namespace.
                lab.in_from(|| run_workloads(&measured, session, &mut record, &mut *obs, stop))?;
                let (mut env, warnings) = lab.environment(before, lab.read());
                if let Some(rate) = env.path_rate_bps() {
                    env.utilisation = stackbench_record::link_utilisation(rate, &record.classes);
                }
                for w in &warnings {
                    obs.warning(w);
                }
                record.warnings.extend(warnings);
                record.lab = Some(env);
            }
        }
        if let Some(open) = &self.open {
            record.refused_peers = Some(refused_peers(open, control_before));
        }
        if let Some(controller) = self.open.as_mut().and_then(|o| o.agents.as_mut()) {
            record.agents = controller.take_summary();
        }
        if !record.complete {
            self.open = None; // a lost responder or an interrupt: start afresh
        }
        Ok(record)
    }

    /// Measures one step of a study: its workload with the study's settings
    /// overlaid by the variant's and the sweep point's, resolved as `run` does.
    pub fn study_step(&mut self, step: &StudyStep) -> Result<RunRecord, RunError> {
        let run = resolve(
            step.settings.clone(),
            vec![step.workload.clone()],
            false,
            false,
        )?;
        self.execute(&run)
    }
}

/// Starts (or reaches) the responder, connects the control channel and takes
/// the run-level warnings (shared CPUs, governors, the idle baseline).
fn open_session(
    run: &ResolvedRun,
    host: &HostRun,
    key: String,
    program: Option<&std::path::Path>,
    obs: &mut dyn Observer,
    stop: &AtomicBool,
) -> Result<Session, RunError> {
    // The agents' preconditions, before a responder starts or the idle
    // baseline is taken: Slurm reachable, the agents' address bindable
    // (bound here, and kept for the controller).
    let mut agent_listener = None;
    if let Some(agents) = &host.agents {
        if agents.launcher == Launcher::Slurm {
            crate::agents::slurm::check().or_else(input)?;
        }
        if host.lab.is_none() {
            agent_listener = Some(crate::agents::controller::bind_agent_listener(
                agents.listen.as_deref(),
            )?);
        }
    }
    // The run token: given (token_file, STACKBENCH_TOKEN), else made here
    // for the responders and agents this session starts.
    let token = host.token.clone().unwrap_or_else(Token::generate);
    let (spawned, targets) = start_responders(host, program, &token)?;
    let target = targets[0].clone();
    let connect =
        || ControlClient::connect_with(&target, Some(&token)).or_else(|e| input(e.to_string()));
    let mut control = match &host.lab {
        None => connect()?,
        Some(lab) => lab.in_from(connect)??, // the control socket is A's
    };
    // A plain server (an https:// one's certificate), checked once before
    // anything runs, as the protocol's row checks one.
    control
        .probe(
            run.connections.protocol,
            run.tls.as_ref(),
            &run.connections.amqp,
        )
        .or_else(|e| input(e.to_string()))?;
    // Before the idle baseline and the run's warnings (and again for
    // each run that reuses the session: `Runner::execute`).
    within_bounds(run, host, &control, &target)?;
    let server_process = plain_server(run, host, &mut control);
    let responder_application = broker_application(&mut control);
    match &responder_application {
        Some(ServerProcess {
            note: Some(note), ..
        }) => obs.note(note),
        Some(p) if run.announce => obs.note(&format!(
            "responder application: {} pids {} (connected to the broker)",
            p.exe.as_deref().unwrap_or("(executable unreadable)"),
            p.pids
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )),
        _ => {}
    }
    match &server_process {
        Some(ServerProcess {
            note: Some(note), ..
        }) => obs.note(note),
        Some(p) if run.announce => obs.note(&format!(
            "server side: {} pid{} {} (found by {})",
            p.exe.as_deref().unwrap_or("(executable unreadable)"),
            if p.pids.len() == 1 { "" } else { "s" },
            p.pids
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            match &p.listener {
                Some(l) => format!("its listener {l}"),
                None => "server_pid".to_string(),
            }
        )),
        _ => {}
    }
    let client = &host.placement.client_cpus;
    // The responder's CPUs as it reports them (a remote one places itself).
    let server = match (&host.placement.responder, control.server_cpus.is_empty()) {
        (Responder::Spawned { cpus, .. }, true) => cpus.clone(),
        _ => control.server_cpus.clone(),
    };
    let threads = host.placement.threads;
    match &host.agents {
        Some(agents) if run.announce => obs.note(&format!(
            "{} agents ({} launcher, {threads} threads each) on CPUs {}, {} responder{} on CPUs {}",
            agents.count,
            agents.launcher.name(),
            cpu_text(client),
            targets.len(),
            if targets.len() == 1 { "" } else { "s" },
            cpu_text(&server)
        )),
        None if run.announce => obs.note(&format!(
            "driver on CPUs {} ({threads} threads), responder {target} on CPUs {}",
            cpu_text(client),
            cpu_text(&server)
        )),
        _ => {}
    }
    // A lab's hosts are namespaces of this machine: both sides share its CPUs.
    let same_host = host.lab.is_some() || control.target().ip().is_loopback();
    // Every side measured is work of the run, not background load.
    let own_pids: Vec<u32> = [control.server_side(), control.application_side()]
        .into_iter()
        .flatten()
        .flat_map(|s| s.pids())
        .collect();
    let checks = quality::run_warnings(client, &server, same_host, &own_pids);
    let mut warnings: Vec<WarningRecord> =
        checks.warnings.iter().map(|w| w.to_record(None)).collect();
    for w in &warnings {
        obs.warning(w);
    }
    // Agent processes whenever agents were asked for or needed, even one.
    let controller = match &host.agents {
        Some(agents) => {
            // Agents in lab hosts cannot reach this namespace's loopback: the
            // controller listens in host B, on the links they drive.
            let (listener, hosts) = match &host.lab {
                Some(lab) => {
                    let (l, h) = lab.agent_listener(host.ipv6)?;
                    (Some(l), h)
                }
                None => (agent_listener, Vec::new()),
            };
            let spec = AgentsSpec {
                count: agents.count.get(),
                launcher: agents.launcher,
                listen: agents.listen.as_deref(),
                targets,
                program,
                listener,
                hosts,
                token,
            };
            let controller = Controller::start(spec, stop, &mut |line| obs.note(line))?;
            if let Some(w) = controller.build_warning() {
                let w = w.to_record(None);
                obs.warning(&w);
                warnings.push(w);
            }
            Some(controller)
        }
        None => None,
    };
    Ok(Session {
        key,
        agents: controller,
        spawned: !spawned.is_empty(),
        responders: spawned,
        target,
        control,
        warnings,
        driver_background_pct: checks.driver_background_pct,
        server_process,
        responder_application,
    })
}

/// What the responder lets any driver ask, as its hello said: a run beyond
/// it is refused in one line before it starts (exit 2), rather than by the
/// responder when the run's tests start (exit 3, mid-run).
fn within_bounds(
    run: &ResolvedRun,
    host: &HostRun,
    control: &ControlClient,
    target: &str,
) -> Result<(), RunError> {
    match control
        .bounds()
        .and_then(|b| beyond_bounds(&run.workloads, host, b))
    {
        Some(why) => input(format!("responder {target} refuses this run: {why}")),
        None => Ok(()),
    }
}

/// Why one of `workloads` (every one a run or a sweep measures) asks more
/// of a responder than `bounds` allow, as the responder would say it when
/// the workload's tests start (`None`: none does). Each driver process
/// holds a control connection with one test per class; over agents each
/// agent holds its own, with its share of each class's clients (the
/// largest share: the count divided by the agents, rounded up).
fn beyond_bounds(
    workloads: &[Workload],
    host: &HostRun,
    bounds: stackbench_engine::control::Bounds,
) -> Option<String> {
    let processes = host.agents.as_ref().map_or(1, |a| a.count.get());
    workloads.iter().find_map(|w| {
        w.classes
            .iter()
            .enumerate()
            .find_map(|(open_tests, class)| {
                let clients = class.clients.div_ceil(processes);
                let bytes = class.request_bytes.max(class.response_bytes);
                bounds.refusal(open_tests, clients, bytes)
            })
    })
}

/// A plain server's processes on this host (`server_pid`, else found by
/// the target's listening socket), set on `control` to be sampled as the
/// server side; what the record says about them, with a note when none
/// were found. `None` for stackbench's own responder.
fn plain_server(
    run: &ResolvedRun,
    host: &HostRun,
    control: &mut ControlClient,
) -> Option<ServerProcess> {
    if !control.is_plain() {
        return None;
    }
    let not_found = |note: String| ServerProcess {
        found_by: ServerFoundBy::NotFound,
        note: Some(format!("server side not measured: {note}")),
        ..ServerProcess::default()
    };
    if host.agents.is_some() {
        // Each agent drives its share from a process of its own.
        return Some(not_found(
            "a run over agents does not sample a plain server (each agent would count it \
             again); run without agents to measure it"
                .into(),
        ));
    }
    let target = control.target();
    let side = match run.server_pid() {
        Some(pids) => ServerSide::given(pids, target),
        None => match ServerSide::find(target) {
            Ok(side) => side,
            Err(note) => return Some(not_found(note)),
        },
    };
    let identity = side.identity.clone();
    control.measure_server(side);
    Some(identity)
}

/// Against a broker whose processes were found (its protocol row says it
/// is one): the processes of this host connected to it other than the
/// driver, set on `control` as the third side (the responder application);
/// what the record says about them, or why they were not measured.
fn broker_application(control: &mut ControlClient) -> Option<ServerProcess> {
    let protocol = control.plain_protocol()?;
    if !stackbench_engine::app::row(protocol).plain_server_is_broker {
        return None;
    }
    let broker = control.server_side()?;
    match ServerSide::clients_of(broker) {
        Ok(side) => {
            let identity = side.identity.clone();
            control.measure_application(side);
            Some(identity)
        }
        Err(note) => Some(ServerProcess {
            found_by: ServerFoundBy::NotFound,
            note: Some(format!("responder application not measured: {note}")),
            ..ServerProcess::default()
        }),
    }
}

/// Refuses, before a responder is started, what cannot work: a transport the
/// target or this kernel cannot carry (unix to another host, mptcp without
/// MPTCP), or more connections than the file-descriptor limit allows.
fn preflight(run: &ResolvedRun, host: &HostRun) -> Result<(), RunError> {
    let target = match (&host.lab, &host.placement.responder) {
        (Some(lab), _) => Some(SocketAddr::new(lab.responder_ip, 0)),
        // An unresolvable target gets its error from the control connection.
        (None, Responder::Remote { target }) => {
            target.to_socket_addrs().ok().and_then(|mut a| a.next())
        }
        (None, _) if host.ipv6 => Some(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))),
        (None, _) => Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
    };
    if let Some(addr) = target {
        transport::row(run.connections.transport)
            .check_usable(addr)
            .or_else(input)?;
    }
    // Each agent holds its share (the largest one) of the connections.
    let agents = u64::from(host.driver_processes());
    let most = run.workloads.iter().map(Workload::total_clients).max();
    limits::reserve_fds(most.unwrap_or(0).div_ceil(agents)).or_else(input)?;
    Ok(())
}

/// The responders to drive: the given target (every address its name
/// resolves to when the run has agents: agent i drives the i-th, modulo
/// their number), or `stackbench serve` children started on loopback — one,
/// or one per agent so that no process holds more connections than one
/// process may open — or in host B of a lab run (returned so they live as
/// long as the run).
fn start_responders(
    host: &HostRun,
    program: Option<&std::path::Path>,
    token: &Token,
) -> Result<(Vec<SpawnedResponder>, Vec<String>), RunError> {
    let agents = host.driver_processes();
    let (cpus, threads) = match &host.placement.responder {
        Responder::Remote { target } => {
            let mut all: Vec<String> = match target.to_socket_addrs() {
                Ok(addrs) if agents > 1 => addrs.map(|a| a.to_string()).collect(),
                _ => Vec::new(),
            };
            all.sort();
            all.dedup();
            if all.len() < 2 {
                all = vec![target.clone()];
            }
            return Ok((Vec::new(), all));
        }
        Responder::Spawned { cpus, threads } => (cpus, threads.get() as usize),
    };
    let lab = host.lab.as_ref();
    // Responder i (agent i's) listens on host B's address on the link of
    // agent i's host.
    let listen = |i: usize| match lab {
        Some(lab) => lab.listen(i),
        None if host.ipv6 => "[::1]:0".to_string(),
        None => "127.0.0.1:0".to_string(),
    };
    // Spawned from this (long-lived) thread: the child's PR_SET_PDEATHSIG
    // fires when the thread that forked it ends.
    let netns = lab.map(|l| l.netns_file(&l.path.to));
    let mirrors = lab.map(LabRun::mirror_netns).unwrap_or_default();
    let mut spawned = Vec::new();
    for i in 0..agents {
        spawned.push(SpawnedResponder::start(
            &listen(i as usize),
            cpus,
            threads,
            (netns.as_deref(), program),
            &mirrors,
            token,
        )?);
    }
    let addrs = spawned.iter().map(|r| r.addr.clone()).collect();
    Ok((spawned, addrs))
}

/// Runs every workload (with its repetitions) into `record`, with each
/// class's warnings; stops at the first incomplete one.
fn run_workloads(
    run: &Measured,
    session: &mut Session,
    record: &mut RunRecord,
    obs: &mut dyn Observer,
    stop: &AtomicBool,
) {
    let threads = run.host.placement.threads.get();
    for config in &run.configs {
        let cfg = RunConfig {
            // The effective backend (`quality::io_fallback`), for every workload.
            io: record.settings.io,
            ..config.clone()
        };
        let workload = &cfg.workload;
        let exec: &mut dyn repeat::Execute = match session.agents.as_mut() {
            Some(controller) => controller,
            None => &mut session.control,
        };
        let outcome = repeat::run_repeated(exec, &cfg, run.iterations, stop, obs);
        let mix_name = workload.to_string();
        let mut said_for_mix: Vec<(&'static str, String)> = Vec::new();
        for class in &outcome.classes {
            let background = session.driver_background_pct;
            let shared = class
                .cpu
                .as_ref()
                .is_some_and(|c| c.attribution == CpuAttribution::Mix);
            let side = (cfg.spin, record.settings.io);
            for w in quality::class_warnings(class, threads, side, background, &cfg.socket) {
                // A mix on shared workers: every class holds the mix's CPU,
                // so its CPU warnings are the mix's, said once under its name.
                if shared && quality::is_mix_wide(&w) {
                    let key = (w.code(), w.to_string());
                    if !said_for_mix.contains(&key) {
                        said_for_mix.push(key);
                        warn(obs, record, &w, Some(&mix_name));
                    }
                    continue;
                }
                warn(obs, record, &w, Some(&class.notation));
            }
        }
        if let Some(agents) = &run.host.agents {
            let responders = session.responders.len().max(1) as u32;
            let cpus = (
                run.host.placement.client_cpus.as_slice(),
                run.host.placement.responder.cpus(),
            );
            for class in &outcome.classes {
                let w = quality::agents_share_cpus(agents.count.get(), cpus, responders, class);
                if let Some(w) = w {
                    warn(obs, record, &w, Some(&class.notation));
                }
            }
        }
        if let Some(cpu) = outcome.mix_cpu {
            // On their own workers the classes' figures are their threads'
            // alone: whether the driver's CPUs were saturated is the mix's.
            let saturated = cpu
                .client
                .as_ref()
                .filter(|_| cfg.class_workers)
                .and_then(|c| {
                    stackbench_metrics::warnings::check_driver_saturated(
                        c,
                        Some(threads),
                        session.driver_background_pct,
                    )
                });
            if let Some(w) = saturated {
                warn(obs, record, &w, None);
            }
            record.mix_cpu.push(MixCpu {
                workload: workload.to_string(),
                transactions: outcome.classes.iter().map(|c| c.transactions).sum(),
                cpu,
            });
        }
        record.classes.extend(outcome.classes);
        if !outcome.complete {
            record.complete = false;
            record.incomplete_reason = outcome.incomplete_reason;
            break;
        }
    }
}

/// What [`run_workloads`] runs: each workload's engine configuration, on
/// the run's host, repeated as the run says.
struct Measured<'a> {
    configs: Vec<RunConfig>,
    host: &'a HostRun,
    iterations: &'a stackbench_metrics::stats::Iterations,
}

fn new_record(
    run: &ResolvedRun,
    control: &ControlClient,
    target: &str,
    spawned: bool,
) -> RunRecord {
    let mut settings = run.stored_settings();
    settings.target = Some(Text(target.to_string()));
    settings.server_threads = Some(control.server_threads);
    if !control.server_cpus.is_empty() || !spawned {
        let cpus = control.server_cpus.clone();
        settings.server_cpus = (!cpus.is_empty()).then_some(CpuList(cpus));
    }
    RunRecord {
        schema_version: SCHEMA_VERSION,
        stackbench_version: env!("CARGO_PKG_VERSION").to_string(),
        complete: true,
        incomplete_reason: None,
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        settings,
        responder: if spawned { "spawned" } else { "remote" }.to_string(),
        classes: Vec::new(),
        warnings: Vec::new(),
        mix_cpu: Vec::new(),
        agents: None,
        refused_peers: None,
        lab: None,
        environment: None,
        server_process: None,
        responder_application: None,
    }
}

/// The connections refused for want of the run token over the run just
/// measured: the agents' responders' and controller's counts, or this
/// driver's responder's since `before` (its count before the run).
fn refused_peers(session: &Session, before: Option<u64>) -> RefusedPeers {
    match &session.agents {
        Some(controller) => RefusedPeers {
            control_connections: controller.control_refused(),
            agent_connections: Some(controller.refused_agents()),
        },
        None => RefusedPeers {
            control_connections: session
                .control
                .refused_peers()
                .zip(before)
                .map(|(after, before)| after.saturating_sub(before)),
            agent_connections: None,
        },
    }
}

/// Stores a warning in the record and shows it to the observer.
fn warn(obs: &mut dyn Observer, record: &mut RunRecord, w: &Warning, class: Option<&str>) {
    let w = w.to_record(class);
    obs.warning(&w);
    record.warnings.push(w);
}

fn cpu_text(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "(not pinned)".to_string()
    } else {
        format_cpu_list(cpus)
    }
}

/// The environment a record was measured in: the guest's when it ran in one,
/// else captured now, on this host.
pub fn environment_of(record: &RunRecord) -> Environment {
    if let Some(env) = record.environment.as_ref() {
        if let Ok(env) = serde_json::from_value::<Environment>(env.clone()) {
            return env; // measured in a guest (`crate::guest_step`)
        }
    }
    let s = &record.settings;
    let target = s.target.as_ref().map_or("", |t| t.0.as_str());
    let cpus = |list: &Option<CpuList>| list.as_ref().map(|c| c.0.clone()).unwrap_or_default();
    let mut env =
        stackbench_results::env::capture(target, &cpus(&s.client_cpus), &cpus(&s.server_cpus));
    if let Some(lab) = &record.lab {
        // The route to the lab's address is in host A, not here: the lab's
        // own read-back describes the interfaces.
        env.interface = None;
        env.lab = Some(lab.clone());
    }
    env
}
