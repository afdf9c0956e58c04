//! A run resolved: the one place run-time defaults are decided (window,
//! warm-up, placement, threads, agents, repetitions, seed, TLS parameters)
//! and settings that exclude each other are refused, for `run`, `study`,
//! sweeps and the max-rate search alike. [`resolve`] turns the settings as
//! given ([`RunSettings`]: what flags and study files parse into, and what a
//! record stores) into a [`ResolvedRun`], which has nothing left to default:
//! the engine's [`RunConfig`] ([`ResolvedRun::run_config`]) and the settings
//! stored with the result ([`ResolvedRun::stored_settings`]) are projections
//! of it, and nothing downstream reads a raw setting again. Pure but for
//! reading this process's CPU affinity and, for kTLS, the kernel's support;
//! nothing here opens a socket.

use std::num::NonZeroU32;
use std::time::{Duration, SystemTime};

use stackbench_engine::token::{Token, TOKEN_ENV};
use stackbench_engine::{limits, sched, sockopt, transport, PacingConfig, RunConfig};
use stackbench_guest::{Accel, GuestSpec};
use stackbench_metrics::stats::Iterations;
use stackbench_metrics::warnings::PathFloor;
use stackbench_model::settings::PlainTarget;
use stackbench_model::settings::{
    AppProtocol, ClassPriorities, CpuList, GenSched, GuestAccel, IoMode, IterationBounds,
    KernelSpec, Launcher, PidList, RunSettings, Secs, SettingValue, SocketOptions, Spin, Text,
    TlsMode, Tn3270Options,
};
use stackbench_model::units::format_cpu_list;

use crate::cpus::{available_cpus, cpus_not_allowed};
use stackbench_model::{AmqpParams, H2Params, TlsParams, Transport, Workload};

use crate::error::{input, RunError};
use crate::lab_run::LabRun;

/// What `run` measures when given no workload (the README's main job): a
/// small study, [`Window::of`]'s 5 s per workload.
pub const DEFAULT_STUDY: &[&str] = &[
    "RR1(1B/1B)",
    "RR10(4kB/4kB)",
    "CRR10(64B/8kB)",
    "STR3(1B/20MB)",
];

/// The workloads of `texts`, or [`DEFAULT_STUDY`] when there are none (the
/// flag `default_study` of [`resolve`] then says so); the error is the
/// notation's, naming the text.
pub fn workloads_or_default(texts: &[String]) -> Result<Vec<Workload>, RunError> {
    let texts: Vec<&str> = if texts.is_empty() {
        DEFAULT_STUDY.to_vec()
    } else {
        texts.iter().map(String::as_str).collect()
    };
    texts
        .iter()
        .map(|t| t.parse::<Workload>().or_else(|e| input(e.to_string())))
        .collect()
}

/// A run with every run-time default decided and every setting checked:
/// what [`crate::Runner::execute`] runs. Built only by [`resolve`].
#[derive(Debug, Clone)]
pub struct ResolvedRun {
    pub workloads: Vec<Workload>,
    pub iterations: Iterations,
    /// Print the placement line on stderr.
    pub announce: bool,
    pub window: Window,
    /// Think time, open-loop rate, arrivals, ramp and the seed, decided.
    pub pacing: PacingConfig,
    /// Transport `tls`: the parameters both sides use, parsed and checked
    /// once (`None` for the other transports).
    pub tls: Option<TlsParams>,
    pub connections: Connections,
    /// Where the run happens: here (or in a lab of this machine's
    /// namespaces), or whole in a guest.
    pub site: Site,
    /// What decides the responder process and the CPUs measured
    /// ([`session_key`] of the stored settings): consecutive runs with the
    /// same key share one responder session.
    pub session_key: String,
    /// The settings as given: the base that [`ResolvedRun::stored_settings`]
    /// writes the resolved values into, and read for nothing else.
    given: RunSettings,
}

/// The measurement window of every workload and repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// How long each window lasts; `None` when the run is bounded by
    /// `transactions` alone.
    pub duration: Option<Duration>,
    /// Warm-up before each window, not counted.
    pub warmup: Duration,
    /// Exact counted transactions per class; with `duration` too, the run is
    /// incomplete when the duration ends first.
    pub transactions: Option<u64>,
}

/// What the data connections are and how each side drives them: settings
/// whose table defaults are already values, passed to the engine as given.
#[derive(Debug, Clone)]
pub struct Connections {
    pub transport: Transport,
    pub protocol: AppProtocol,
    /// Protocol amqp: what its clients do.
    pub amqp: AmqpParams,
    /// Protocol h2: what its clients announce.
    pub h2: H2Params,
    /// `http_error_share`: percent of a class's responses that may be other
    /// than 2xx before the run is incomplete.
    pub http_error_share_pct: f64,
    /// Protocol tn3270's options (TN3270E, model, LU, the responder's offer).
    pub tn3270: Tn3270Options,
    /// The I/O backend asked for (`auto` is decided per run by the engine's
    /// rows, and the record stores the one measured).
    pub io: IoMode,
    pub spin: Spin,
    /// How the driver's worker threads are scheduled (checked against
    /// this host's kernel at resolution).
    pub gen_sched: GenSched,
    /// Socket options, `nodelay`'s default (on for tls) decided.
    pub socket: SocketOptions,
    pub priority: Option<ClassPriorities>,
    pub class_workers: bool,
}

/// Where a run happens.
#[derive(Debug, Clone)]
pub enum Site {
    /// On this machine: driver and responder processes here, in a lab of
    /// its namespaces, or against a remote target. Boxed: a resolved lab
    /// makes it some 600 bytes against the guest's 72.
    Host(Box<HostRun>),
    /// Whole in a guest booted with another kernel ([`crate::guest_step`]):
    /// placement, threads and the lab are resolved by the guest, which runs
    /// the step as `run` does there.
    Guest(GuestRun),
}

/// A run on this machine, placed.
#[derive(Debug, Clone)]
pub struct HostRun {
    pub placement: Placement,
    /// The driver processes the run is split over; `None`: the driver runs
    /// in this process.
    pub agents: Option<Agents>,
    /// The lab the run crosses (`lab`, `lab_from`, `lab_to`), resolved.
    pub lab: Option<LabRun>,
    /// Loopback and the lab's addresses are IPv6.
    pub ipv6: bool,
    /// The run token (`token_file`, else the environment's STACKBENCH_TOKEN);
    /// `None`: the session makes a random one for what it starts.
    pub token: Option<Token>,
}

impl HostRun {
    /// Driver processes: the agents, or this one.
    pub fn driver_processes(&self) -> u32 {
        self.agents.as_ref().map_or(1, |a| a.count.get())
    }
}

/// Where each side runs and on how many threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The driver's CPUs (empty: not pinned, against a remote target
    /// without `client_cpus`).
    pub client_cpus: Vec<usize>,
    /// Driver worker threads (per agent, in a run over agents).
    pub threads: NonZeroU32,
    pub responder: Responder,
}

/// The responder the run drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Responder {
    /// `target`: started elsewhere; it places itself and says how.
    Remote { target: String },
    /// Started by the run (one per driver process), on these CPUs with
    /// this many worker threads.
    Spawned {
        cpus: Vec<usize>,
        threads: NonZeroU32,
    },
}

impl Responder {
    /// The responder's CPUs as placed here (empty for a remote target).
    pub fn cpus(&self) -> &[usize] {
        match self {
            Responder::Remote { .. } => &[],
            Responder::Spawned { cpus, .. } => cpus,
        }
    }
}

/// A run split over agent processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agents {
    pub count: NonZeroU32,
    pub launcher: Launcher,
    /// Where the controller listens for them (`None`: loopback, any port,
    /// or host B of a lab).
    pub listen: Option<String>,
}

/// A step on another kernel.
#[derive(Debug, Clone)]
pub struct GuestRun {
    pub kernel: KernelSpec,
    pub spec: GuestSpec,
    /// The responder's guest of a pair (`peer_kernel`): the driver runs in
    /// `spec`'s guest, the responder in this one, over a virtual wire.
    pub peer: Option<GuestPeer>,
}

/// The second guest of a pair.
#[derive(Debug, Clone)]
pub struct GuestPeer {
    pub kernel: KernelSpec,
    pub spec: GuestSpec,
    /// Queue pairs of each guest's adapter.
    pub queues: u32,
}

impl ResolvedRun {
    /// The processes `server_pid` names as a plain server's side (`None`:
    /// find them by the target's listening socket).
    pub fn server_pid(&self) -> Option<&[u32]> {
        self.given.server_pid.as_ref().map(|p| p.0.as_slice())
    }

    /// What the engine runs for `workload` of this run on `host` (the run's
    /// own [`Site::Host`]).
    pub fn run_config(&self, host: &HostRun, workload: &Workload) -> RunConfig {
        let c = &self.connections;
        RunConfig {
            workload: workload.clone(),
            duration: self.window.duration,
            warmup: self.window.warmup,
            transactions: self.window.transactions,
            threads: host.placement.threads.get() as usize,
            class_workers: c.class_workers,
            client_cpus: host.placement.client_cpus.clone(),
            socket: c.socket,
            spin: c.spin,
            gen_sched: c.gen_sched,
            transport: c.transport,
            tls: self.tls.clone(),
            priority: c.priority.clone(),
            io: c.io,
            protocol: c.protocol,
            amqp: c.amqp.clone(),
            h2: c.h2,
            http_error_share_pct: c.http_error_share_pct,
            tn3270: c.tn3270,
            pacing: self.pacing,
            path: PathFloor {
                // Set by the guest's init from the kernel command line the host
                // booted it with (a TCG guest's CPU is emulated).
                emulated: std::env::var("STACKBENCH_GUEST_ACCEL").is_ok_and(|a| a == "tcg"),
                ..host
                    .lab
                    .as_ref()
                    .map(LabRun::path_floor)
                    .unwrap_or_default()
            },
            segment: Default::default(),
            live_metrics: self.given.metrics_listen.is_some(),
        }
    }

    /// The settings the record stores: those given with every value
    /// decided here written in (window, seed, the TLS version, placement,
    /// threads, agents, a lab policy's conntrack), so that the run can be
    /// repeated from them.
    pub fn stored_settings(&self) -> RunSettings {
        let mut s = self.given.clone();
        s.duration = self.window.duration.map(Secs);
        s.warmup = Some(Secs(self.window.warmup));
        s.seed = Some(self.pacing.seed);
        if let Some(p) = &self.tls {
            s.tls_version = Some(p.version); // the version the cipher implies, or 1.3
        }
        let Site::Host(host) = &self.site else {
            return s; // placement is the guest's
        };
        let list = |cpus: &[usize]| (!cpus.is_empty()).then(|| CpuList(cpus.to_vec()));
        s.client_cpus = list(&host.placement.client_cpus);
        s.threads = Some(host.placement.threads.get());
        match &host.placement.responder {
            Responder::Spawned { cpus, threads } => {
                s.server_cpus = list(cpus);
                s.server_threads = Some(threads.get());
            }
            // A remote responder says its own (the record takes them from it).
            Responder::Remote { .. } => s.server_cpus = None,
        }
        s.agents = host.agents.as_ref().map(|a| a.count.get());
        if let Some(policy) = host.lab.as_ref().and_then(|l| l.policy.as_ref()) {
            s.host_policy_conntrack = Some(policy.conntrack);
        }
        s
    }
}

impl Window {
    /// The window of settings `s`: the duration as given, else 10 s (5 s for
    /// the default study) unless bounded by `transactions`; the warm-up as
    /// given, else 2 s (1 s for the default study, 0 when count-bounded).
    /// Also what a study's time estimate counts per step.
    pub fn of(s: &RunSettings, default_study: bool) -> Window {
        let counted = s.transactions.is_some();
        let duration = match s.duration {
            Some(d) => Some(d.0),
            None if counted => None,
            None => Some(Duration::from_secs(if default_study { 5 } else { 10 })),
        };
        let warmup = s.warmup.map_or(
            match (counted, default_study) {
                (true, _) => Duration::ZERO,
                (false, true) => Duration::from_secs(1),
                (false, false) => Duration::from_secs(2),
            },
            |w| w.0,
        );
        Window {
            duration,
            warmup,
            transactions: s.transactions,
        }
    }
}

/// The one place run-time defaults are decided, for `run` and `study` alike:
/// the window (10 s, 5 s for the default study, none when count-bounded), the
/// warm-up (2 s, 1 s for the default study, 0 when count-bounded), placement
/// (disjoint CPU halves), threads (one per CPU of the side), the agents,
/// repetitions and the seed of think-time and arrival draws (random, stored
/// so that the run can be repeated with `--seed`). Settings that exclude
/// each other are refused here, whatever their source.
pub fn resolve(
    s: RunSettings,
    workloads: Vec<Workload>,
    default_study: bool,
    announce: bool,
) -> Result<ResolvedRun, RunError> {
    // An https:// target runs over tls: resolved, checked and stored so.
    let s = s.with_implied_transport();
    let window = Window::of(&s, default_study);
    if s.ipv6 && s.target.is_some() {
        return input("ipv6 and target exclude each other: the target's address decides the family; drop ipv6");
    }
    s.check_combination()
        .or_else(|e| input(format!("{}: {}", e.name, e.message)))?;
    check_server_pid(&s)?;
    check_pacing(&s, &workloads)?;
    check_plain_crr(&s, &workloads)?;
    check_gen_sched(&s)?;
    check_protocol_sizes(&s, &workloads)?;
    let tn3270 = tn3270_options(&s, &workloads)?;
    sockopt::check_priority(s.priority.as_ref(), &workloads, s.transport).or_else(input)?;
    let tls = tls_params(&s).or_else(input)?;
    if let Some(p) = &tls {
        transport::tls_acct::check_rekey(p.version, s.rekey.0, &workloads).or_else(input)?;
    }
    let pacing = PacingConfig {
        think: s.think,
        rate: s.rate,
        arrivals: s.arrivals,
        ramp: s.ramp,
        seed: s.seed.unwrap_or_else(random_seed),
    };
    let iterations = iterations(&s)?;
    check_pair(&s)?;
    let site = if s.kernel.is_guest() {
        Site::Guest(guest_run(&s)?)
    } else {
        Site::Host(Box::new(host_run(&s, &workloads)?))
    };
    let mut run = ResolvedRun {
        workloads,
        iterations,
        announce,
        window,
        pacing,
        tls,
        connections: Connections {
            transport: s.transport,
            protocol: s.protocol,
            amqp: amqp_params(&s)?,
            h2: s.h2_params(),
            http_error_share_pct: s.http_error_share.0,
            tn3270,
            io: s.io,
            spin: s.spin,
            gen_sched: s.gen_sched,
            socket: s.socket_options(),
            priority: s.priority.clone(),
            class_workers: s.class_workers,
        },
        site,
        session_key: String::new(),
        given: s,
    };
    run.session_key = session_key(&run.stored_settings());
    Ok(run)
}

/// `gen_sched` as this host's kernel takes it (a thread of the resolver's
/// is scheduled so and exits), and no real-time class for a spinning
/// driver: a busy-polling FIFO or RR thread never yields its CPU until the
/// kernel's real-time throttling (`sched_rt_runtime_us`) stops it.
fn check_gen_sched(s: &RunSettings) -> Result<(), RunError> {
    if s.gen_sched.real_time() && s.spin.driver() {
        return input(format!(
            "--gen-sched {} and --spin {} exclude each other: a spinning real-time worker \
             holds its CPU until the kernel's real-time throttling stops it; use slice:DURATION, \
             or spin only the responder",
            s.gen_sched.text(),
            s.spin.name()
        ));
    }
    sched::check(s.gen_sched).or_else(input)
}

/// `server_pid` names the processes of a plain server on this host: it
/// needs a plain-server target (stackbench serve measures itself), one
/// driver process (each agent would count the server again), and processes
/// that exist.
fn check_server_pid(s: &RunSettings) -> Result<(), RunError> {
    let Some(PidList(pids)) = &s.server_pid else {
        return Ok(());
    };
    let plain = s
        .target
        .as_ref()
        .is_some_and(|Text(t)| AppProtocol::of_plain_target(t).is_some());
    if !plain {
        return input(format!(
            "--server-pid {}: applies to a plain-server target (http://HOST:PORT, \
             tn3270://HOST:PORT); stackbench's own responder measures itself: drop server_pid",
            PidList(pids.clone()).text()
        ));
    }
    if s.agents.is_some() {
        return input(
            "server_pid and agents exclude each other: each agent would count the server's \
             CPU again; drop agents, or server_pid",
        );
    }
    if let Some(missing) = pids
        .iter()
        .find(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
    {
        return input(format!(
            "--server-pid {}: no process {missing} on this host: give the pids of the \
             server's processes (e.g. pgrep -d, nginx)",
            PidList(pids.clone()).text()
        ));
    }
    Ok(())
}

/// A run on this machine: its agents (first: how many driver processes
/// there are decides how many responders a lab run's virtual hosts and
/// distributor may take), its lab, then its placement.
fn host_run(s: &RunSettings, workloads: &[Workload]) -> Result<HostRun, RunError> {
    let agents = resolve_agents(s, workloads, crate::lab_run::driver_hosts(s))?;
    let processes = agents.as_ref().map_or(1, |a| a.count.get());
    let lab = crate::lab_run::resolve(s, processes)?;
    let given = |c: &Option<CpuList>| c.as_ref().map(|c| c.0.clone());
    // The lab file's host CPUs unless the run gives its own; agents in
    // several hosts are pinned as the first host says.
    let client = given(&s.client_cpus).or_else(|| lab.as_ref()?.driver_cpus.clone());
    let server = given(&s.server_cpus).or_else(|| lab.as_ref()?.responder_cpus.clone());
    let placement = placement(s, client, server)?;
    let token = run_token(s)?;
    if token.is_none()
        && agents
            .as_ref()
            .is_some_and(|a| a.launcher == Launcher::External)
    {
        return input(format!(
            "launcher external: give --token-file FILE (or {TOKEN_ENV}), the token its agents \
             are given too (stackbench agent --token-file, or {TOKEN_ENV} from a Secret): they \
             must prove it to the controller"
        ));
    }
    Ok(HostRun {
        placement,
        agents,
        lab,
        ipv6: s.ipv6,
        token,
    })
}

/// The run's token as given: the `token_file`'s, else STACKBENCH_TOKEN's
/// (a Kubernetes Secret sets it), else none.
fn run_token(s: &RunSettings) -> Result<Option<Token>, RunError> {
    match &s.token_file {
        Some(Text(path)) => Token::from_file(std::path::Path::new(path))
            .map(Some)
            .or_else(input),
        None => Token::from_env().or_else(input),
    }
}

/// How many agents (driver processes) the run is split over: as given, or,
/// for the local launcher, as many as keep each agent (and the responder
/// process it drives) within 90% of what one process may open. Every agent
/// must get at least one client of every class. `None` when one process
/// holds the run and no agent was asked for: it then runs in this process
/// (`--agents 1` runs it in one agent process, which is how the
/// controller's own overhead is measured). In a lab run (`lab_hosts`: the
/// hosts `lab_from` lists) the agents are started here, each inside one of
/// those hosts.
fn resolve_agents(
    s: &RunSettings,
    workloads: &[Workload],
    lab_hosts: Option<usize>,
) -> Result<Option<Agents>, RunError> {
    let hosts = lab_hosts.unwrap_or(1);
    let most = workloads
        .iter()
        .map(Workload::total_clients)
        .max()
        .unwrap_or(0);
    let n = match (s.agents, s.launcher) {
        (Some(n), _) => n,
        (None, Launcher::Local) => match agents_needed(most, limits::connections_per_process()) {
            1 if hosts > 1 => {
                return input(format!(
                    "lab_from lists {hosts} hosts, and one driver process runs in one host: \
                     add --agents {hosts} (agent i runs in host i mod {hosts}) or give one host"
                ))
            }
            1 if s.agent_listen.is_some() => {
                // Beside lab_run's refusal of lab settings without --lab: a
                // run that stays in this process has no controller to listen.
                return input(
                    "--agent-listen applies only to a run split over agents (the controller \
                     listens there for them): add --launcher external --agents N (or \
                     --launcher slurm) or drop --agent-listen",
                );
            }
            1 => return Ok(None),
            n => n,
        },
        (None, other) => {
            return input(format!(
                "launcher {}: give the number of agents it starts, e.g. --agents 4",
                other.name()
            ))
        }
    };
    let lab = lab_hosts.is_some();
    if lab && s.launcher != Launcher::Local {
        return input(format!(
            "launcher {} with a lab: agents in lab hosts are started here, inside their \
             namespaces; use --launcher local (the default)",
            s.launcher.name()
        ));
    }
    if (n as usize) < hosts {
        return input(format!(
            "agents {n} for the {hosts} hosts lab_from lists: some host would run no agent; \
             use at least --agents {hosts}"
        ));
    }
    if lab && s.agent_listen.is_some() {
        return input(
            "agent_listen with a lab: the controller listens in host lab_to, where the \
             agents in the lab_from hosts reach it; drop agent_listen",
        );
    }
    check_agents_fit(n, workloads)?;
    Ok(Some(Agents {
        count: nonzero("agents", n)?,
        launcher: s.launcher,
        listen: s.agent_listen.as_ref().map(|t| t.0.clone()),
    }))
}

/// Refuses `agents` driver processes for `workloads` when a class has fewer
/// clients than there are agents: every agent runs a share of every class
/// (see `stackbench_model::segment`), and the controller arms an agent only
/// once its share of each class is connected. The one rule for a run and for
/// whatever plans agents ahead of it (`k8s render` checks every study step
/// with it).
pub fn check_agents_fit(agents: u32, workloads: &[Workload]) -> Result<(), RunError> {
    let fewest = workloads
        .iter()
        .flat_map(|w| w.classes.iter().map(move |c| (c.clients, w)))
        .min_by_key(|(c, _)| *c);
    if let Some((clients, w)) = fewest.filter(|(c, _)| *c < agents) {
        return input(format!(
            "agents {agents}: {w} has a class of {clients} clients and every agent runs a share \
             of every class: use at most {clients} agents"
        ));
    }
    Ok(())
}

/// Agents enough that none holds more than 90% of `per_process` connections.
fn agents_needed(clients: u64, per_process: u64) -> u32 {
    let per_agent = (per_process / 10 * 9).max(1);
    clients.div_ceil(per_agent).clamp(1, 1024) as u32
}

/// A count the table's range keeps above zero; refused here too, for
/// settings that reach us without the table (a step file, a library user).
fn nonzero(name: &str, n: u32) -> Result<NonZeroU32, RunError> {
    NonZeroU32::new(n).map_or_else(|| input(format!("{name} 0: give at least 1")), Ok)
}

/// Pacing settings that contradict each other or apply to nothing.
fn check_pacing(s: &RunSettings, workloads: &[Workload]) -> Result<(), RunError> {
    if s.think.is_some() && s.rate.is_some() {
        return input(
            "think and rate exclude each other: a class is paced by a think time or by an \
             offered rate; give one, or pace classes apart in the notation (RR8K(100B/800B)@30s+RR10(1kB/1kB)@5000/s)",
        );
    }
    let open_class = workloads
        .iter()
        .flat_map(|w| &w.classes)
        .any(|c| matches!(c.pacing, Some(stackbench_model::Pacing::Rate(_))));
    if s.arrivals != stackbench_model::Arrivals::Constant && s.rate.is_none() && !open_class {
        return input(
            "arrivals applies to open-loop classes: give --rate (e.g. --rate 5000/s) or a class \
             rate such as RR10(1kB/1kB)@5000/s",
        );
    }
    Ok(())
}

/// Protocol amqp's parameters, with the password of the target's user read
/// from `amqp_password_file` (its first line; the settings keep the path).
fn amqp_params(s: &RunSettings) -> Result<AmqpParams, RunError> {
    let mut params = s.amqp_params();
    if let Some(file) = &s.amqp_password_file {
        let text = std::fs::read_to_string(&file.0).or_else(|e| {
            input(format!(
                "amqp_password_file {}: {e}: give a readable file whose first line is the \
                 password",
                file.0
            ))
        })?;
        params.password = Some(text.lines().next().unwrap_or("").to_string());
    }
    Ok(params)
}

/// CRR against a plain server that does not close after a reply (a
/// broker; an HTTP/2 server, which no request can ask to: the protocol's
/// row says so) with `crr_close server`: stackbench's
/// responder closes after a CRR reply, such a server only when the client
/// does, so each transaction would wait for a close that never comes.
fn check_plain_crr(s: &RunSettings, workloads: &[Workload]) -> Result<(), RunError> {
    let plain = s
        .target
        .as_ref()
        .is_some_and(|t| stackbench_model::AppProtocol::of_plain_target(&t.0).is_some());
    if !plain {
        return Ok(());
    }
    let crr = workloads
        .iter()
        .flat_map(|w| &w.classes)
        .any(|c| c.kind == stackbench_model::Kind::Crr);
    if !crr || s.crr_close != stackbench_model::CrrClose::Server {
        return Ok(());
    }
    match stackbench_engine::app::row(s.protocol).refuses_crr_close_server() {
        Some(why) => input(format!(
            "target {}: {why}",
            s.target.as_ref().map_or("", |t| t.0.as_str())
        )),
        None => Ok(()),
    }
}

/// Sizes the protocol's row cannot carry (HTTP/2's flow-control windows
/// bound a request and a response), refused before anything starts.
fn check_protocol_sizes(s: &RunSettings, workloads: &[Workload]) -> Result<(), RunError> {
    let row = stackbench_engine::app::row(s.protocol);
    for class in workloads.iter().flat_map(|w| &w.classes) {
        let label = class.to_string();
        if let Some(why) = row.refuses_sizes(
            &label,
            class.request_bytes,
            class.response_bytes,
            &s.h2_params(),
        ) {
            return input(why);
        }
    }
    Ok(())
}

/// Protocol tn3270's options, with `tn3270_script` read and parsed: a
/// script that does not parse is refused in one line naming its file, line
/// and column; a script drives RR classes (a session runs its steps over
/// and over), paced by its own think times or the class's, not a rate.
fn tn3270_options(s: &RunSettings, workloads: &[Workload]) -> Result<Tn3270Options, RunError> {
    use stackbench_model::tn3270_script::{Script, ScriptRef};
    let mut options = s.tn3270_options();
    let Some(Text(file)) = &s.tn3270_script else {
        return Ok(options);
    };
    let text = std::fs::read_to_string(file).or_else(|e| {
        input(format!(
            "tn3270_script {file}: cannot read it ({e}): give a script file on this host"
        ))
    })?;
    let script = Script::parse(file, &text, options.screen()).or_else(|e| input(e.0))?;
    let classes = workloads.iter().flat_map(|w| &w.classes);
    if let Some(c) = classes
        .clone()
        .find(|c| c.kind != stackbench_model::Kind::Rr)
    {
        return input(format!(
            "tn3270_script drives RR classes (a session runs its steps over and over), and \
             {c} is {}: use RR, e.g. RR{}(100B/2kB)",
            c.kind.name(),
            c.clients
        ));
    }
    let open = classes
        .clone()
        .any(|c| matches!(c.pacing, Some(stackbench_model::Pacing::Rate(_))));
    if s.rate.is_some() || open {
        return input(
            "tn3270_script paces a session by its steps' think times (or the class's think), \
             not by an offered rate: drop rate",
        );
    }
    options.script = Some(ScriptRef(Script::intern(script)));
    Ok(options)
}

/// A fresh seed (32 bits, easy to retype) from the standard library's
/// per-process random hasher keys.
fn random_seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(SystemTime::now()) & 0xFFFF_FFFF
}

/// The repetition controller of `repeat`, `confidence` and `iterations`
/// (also what a study's time estimate counts per step).
pub fn iterations(s: &RunSettings) -> Result<Iterations, RunError> {
    let it = match (s.repeat, s.confidence, s.iterations) {
        (Some(_), Some(_), _) => {
            return input("repeat and confidence exclude each other: use one");
        }
        (_, None, Some(_)) => {
            return input("iterations needs confidence LEVEL,WIDTH, e.g. --confidence 99,5");
        }
        (repeat, None, None) => Iterations::repeat(repeat.unwrap_or(1)),
        (_, Some(c), bounds) => {
            let b = bounds.unwrap_or(IterationBounds { min: 3, max: 30 });
            Iterations::confidence(c.level_pct, c.width_pct, b.min, b.max)
        }
    };
    it.or_else(|e| input(format!("repetitions: {e}")))
}

/// Each side's CPUs and threads. Default CPUs: with two or more, disjoint
/// halves (netperf `-T 0,1` on a 2-CPU machine); with one, both sides share
/// it, which the CPU accounting warns about. Default threads: one per CPU
/// of the side. Against a remote target only the driver is placed.
fn placement(
    s: &RunSettings,
    client: Option<Vec<usize>>,
    server: Option<Vec<usize>>,
) -> Result<Placement, RunError> {
    check_cpus_allowed("client-cpus", s.client_cpus.as_ref())?;
    if let Some(Text(target)) = &s.target {
        let client_cpus = client.unwrap_or_default();
        return Ok(Placement {
            threads: threads("threads", s.threads, &client_cpus)?,
            client_cpus,
            responder: Responder::Remote {
                target: target.clone(),
            },
        });
    }
    check_cpus_allowed("server-cpus", s.server_cpus.as_ref())?;
    let (lo, hi) = cpu_halves()?;
    let (client_cpus, server_cpus) = (client.unwrap_or(lo), server.unwrap_or(hi));
    Ok(Placement {
        threads: threads("threads", s.threads, &client_cpus)?,
        responder: Responder::Spawned {
            threads: threads("server_threads", s.server_threads, &server_cpus)?,
            cpus: server_cpus,
        },
        client_cpus,
    })
}

/// Threads as given, else one per CPU of the side (one when not pinned).
fn threads(name: &str, given: Option<u32>, cpus: &[usize]) -> Result<NonZeroU32, RunError> {
    nonzero(name, given.unwrap_or(cpus.len().max(1) as u32))
}

/// Refuses a given CPU list (`--client-cpus`, `--server-cpus`) naming a CPU
/// this process may not run on, here rather than when the driver or the
/// responder is pinned: a sweep's points are all resolved before the first
/// runs, so a bad point costs no run either.
fn check_cpus_allowed(flag: &str, cpus: Option<&CpuList>) -> Result<(), RunError> {
    let Some(CpuList(cpus)) = cpus else {
        return Ok(());
    };
    match cpus_not_allowed(cpus) {
        Some((outside, allowed)) => input(format!(
            "--{flag} {}: {outside} (it may run on {allowed}): give CPUs from {allowed}",
            format_cpu_list(cpus),
        )),
        None => Ok(()),
    }
}

/// This process's CPUs in two halves (both the one CPU when there is one).
fn cpu_halves() -> Result<(Vec<usize>, Vec<usize>), RunError> {
    let available = available_cpus().to_vec();
    if available.is_empty() {
        return Err(RunError::Runtime(
            "cannot read this process's CPU affinity".into(),
        ));
    }
    Ok(match available.len() {
        0 | 1 => (available.clone(), available.clone()),
        n => (available[..n / 2].to_vec(), available[n / 2..].to_vec()),
    })
}

/// A step on another kernel: what depends on the machine (placement,
/// threads, the lab's namespaces, the kernel's features) is resolved by the
/// guest, which runs the step whole ([`crate::guest_step`]); here only what
/// the files name is checked, so a typo costs no boot.
fn guest_run(s: &RunSettings) -> Result<GuestRun, RunError> {
    if s.target.is_some() {
        return input(
            "kernel and target exclude each other: a step on another kernel runs whole in \
             its guest (driver and responder); drop target, or kernel",
        );
    }
    for (name, path) in [("lab", &s.lab), ("cert", &s.cert), ("key", &s.key)] {
        if let Some(Text(p)) = path {
            if !std::path::Path::new(p).is_file() {
                return input(format!(
                    "{name} {p}: no such file (with kernel, it is copied into the guest)"
                ));
            }
        }
    }
    let peer = s.peer_kernel.is_guest().then(|| {
        let mut p = s.clone();
        p.kernel = s.peer_kernel.clone();
        GuestPeer {
            kernel: s.peer_kernel.clone(),
            spec: guest_spec(&p),
            queues: s.guest_queues,
        }
    });
    Ok(GuestRun {
        kernel: s.kernel.clone(),
        spec: guest_spec(s),
        peer,
    })
}

/// A pair of guests (`peer_kernel`) puts the driver in one guest and the
/// responder in the other, joined by one virtual wire: what needs both
/// sides in one kernel, or the wire to be something else, is refused here,
/// before anything boots.
fn check_pair(s: &RunSettings) -> Result<(), RunError> {
    if !s.peer_kernel.is_guest() {
        if s.guest_queues > 1 {
            return input(format!(
                "guest_queues {}: the queues are those of a pair's adapters; give peer_kernel \
                 (and kernel) for two guests on a wire, or drop guest_queues",
                s.guest_queues
            ));
        }
        return Ok(());
    }
    let peer = s.peer_kernel.text();
    if !s.kernel.is_guest() {
        return input(format!(
            "peer_kernel {peer} without kernel: a pair is two guests, the driver's booted with \
             kernel and the responder's with peer_kernel; give kernel too"
        ));
    }
    let refused = if s.lab.is_some() {
        Some("lab (a pair's path is its wire; a lab runs in one guest)")
    } else if s.transport == Transport::Unix {
        Some("transport unix (AF_UNIX does not cross a wire)")
    } else if s.agents.is_some_and(|a| a > 1) {
        Some("agents (one driver process per guest)")
    } else if s.guest_queues > 1 {
        Some(
            "guest_queues above 1 (qemu's dgram backend, the pair's wire, carries one queue \
             pair; multiqueue needs tap or vhost-user)",
        )
    } else {
        None
    };
    match refused {
        Some(what) => input(format!(
            "peer_kernel {peer} excludes {what}: drop one of them"
        )),
        None => Ok(()),
    }
}

/// The guest that settings `kernel`, `guest_vcpus`, `guest_memory` and
/// `guest_accel` describe (a study step's and `guest exec`'s alike).
pub fn guest_spec(s: &RunSettings) -> GuestSpec {
    GuestSpec {
        kernel: s.kernel.text(),
        vcpus: s.guest_vcpus,
        memory_mib: s.guest_memory.0 >> 20,
        accel: match s.guest_accel {
            GuestAccel::Auto => Accel::Auto,
            GuestAccel::Kvm => Accel::Kvm,
            GuestAccel::Tcg => Accel::Tcg,
        },
    }
}

/// The settings that decide the responder process and the CPUs measured.
pub fn session_key(s: &RunSettings) -> String {
    [
        "target",
        "server_pid",
        "lab",
        "lab_from",
        "lab_to",
        "ipv6",
        "server_cpus",
        "server_threads",
        "client_cpus",
        "agents",
        "launcher",
        "agent_listen",
    ]
    .iter()
    .map(|k| s.text_of(k).unwrap_or_default())
    .collect::<Vec<_>>()
    .join(" ")
}

/// The TLS parameters of a `tls` run; a cipher of the other version, or TLS
/// settings without `--transport tls`, is refused with the valid choices.
fn tls_params(s: &RunSettings) -> Result<Option<TlsParams>, String> {
    let given = s.tls_version.is_some()
        || s.cipher.is_some()
        || s.groups.is_some()
        || s.cert.is_some()
        || s.key.is_some()
        || s.resume_ratio.0 > 0.0
        || s.rekey.0 > 0
        || s.tls_mode != TlsMode::Inline;
    if s.transport != Transport::Tls {
        if given {
            return Err(format!(
                "tls_version, cipher, groups, cert, key, resume_ratio, rekey and tls_mode apply to transport tls, not {}: \
                 add --transport tls or drop them",
                s.transport.name()
            ));
        }
        return Ok(None);
    }
    TlsParams::resolve(
        s.tls_version,
        s.cipher,
        s.groups.as_ref(),
        s.cert_type,
        s.cert.as_ref().map(|t| t.0.clone()),
        s.key.as_ref().map(|t| t.0.clone()),
    )
    .and_then(|p| {
        if let (Some(cert), Some(key)) = (&p.cert, &p.key) {
            // Read here, not when the responder starts: a bad file costs no run.
            transport::tls::check_cert_key(cert, key)?;
        }
        if s.rekey.0 > 0 && s.tls_mode == TlsMode::Sidecar {
            // The proxies would re-key, but their reports carry no counts:
            // a stored `rekeys` of 0 would be wrong.
            return Err(
                "rekey with tls_mode sidecar: the proxies' key updates are not \
                        counted yet: use --tls-mode inline or drop --rekey"
                    .to_string(),
            );
        }
        let foreign = s
            .target
            .as_ref()
            .and_then(|t| PlainTarget::parse(&t.0))
            .filter(|t| t.tls);
        if let (Some(t), false) = (foreign, s.tls_mode == TlsMode::Inline) {
            // The client proxy reaches the responder's proxy, which a
            // foreign server has not, and kTLS's receive path takes no
            // post-handshake message (a server's TLS 1.3 tickets).
            return Err(format!(
                "tls_mode {} against {}{}: a foreign server is driven with tls_mode inline \
                 only (the sidecar proxies pair with stackbench serve's; kTLS cannot take a \
                 server's post-handshake messages): use --tls-mode inline",
                s.tls_mode.text(),
                t.scheme,
                t.address
            ));
        }
        if let Some(ca) = &s.ca {
            transport::tls::check_ca(&ca.0)?;
        }
        let p = TlsParams {
            resume_ratio: s.resume_ratio.0,
            mode: s.tls_mode,
            rekey_bytes: s.rekey.0,
            // The run's protocol, by its ALPN name, where it has one.
            alpn: stackbench_engine::app::row(s.protocol)
                .alpn
                .iter()
                .map(|n| n.to_string())
                .collect(),
            server_name: foreign.map(|t| t.host.to_string()),
            ca: s.ca.as_ref().map(|c| c.0.clone()),
            insecure: s.insecure,
            ..p
        };
        // What the kernel's TLS cannot carry first, then whether it exists.
        transport::ktls::check(&p)?;
        if p.mode == TlsMode::Ktls && !s.kernel.is_guest() {
            // A guest's kernel is probed in the guest.
            transport::ktls::ktls_available()?;
        }
        Ok(Some(p))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> RunSettings {
        let mut s = RunSettings::default();
        for (name, value) in pairs {
            s.set(name, value).unwrap();
        }
        s
    }

    fn refused(pairs: &[(&str, &str)], workload: &str) -> String {
        let w = vec![workload.parse().unwrap()];
        match resolve(settings(pairs), w, false, false) {
            Err(RunError::Input(m)) => m,
            other => panic!("expected an input error, got {other:?}"),
        }
    }

    fn host(run: &ResolvedRun) -> &HostRun {
        match &run.site {
            Site::Host(h) => h,
            Site::Guest(_) => panic!("expected a run on this host"),
        }
    }

    /// A remote target needs no CPU affinity read; the window defaults and
    /// the seed are decided here once, and stored as decided.
    #[test]
    fn resolution_decides_the_window_warm_up_and_seed() {
        let remote = [("target", "192.0.2.1:12870")];
        let w = || vec!["RR1(1B/1B)".parse().unwrap()];
        let run = resolve(settings(&remote), w(), false, false).unwrap();
        let secs = Duration::from_secs;
        assert_eq!(run.window.duration, Some(secs(10)));
        assert_eq!(run.window.warmup, secs(2));
        let stored = run.stored_settings();
        assert_eq!(stored.duration.map(|d| d.0), Some(secs(10)));
        assert_eq!(stored.warmup.map(|d| d.0), Some(secs(2)));
        assert_eq!(stored.seed, Some(run.pacing.seed));
        assert_eq!(
            stored.server_threads, None,
            "a remote responder says its own"
        );
        assert_eq!(run.iterations.max, 1);
        let study = resolve(settings(&remote), w(), true, false).unwrap();
        assert_eq!(study.window.duration, Some(secs(5)));
        assert_eq!(study.window.warmup, secs(1));
        let counted = [("target", "192.0.2.1:12870"), ("transactions", "100")];
        let counted = resolve(settings(&counted), w(), false, false).unwrap();
        assert_eq!(counted.window.duration, None);
        assert_eq!(counted.window.warmup, Duration::ZERO);
        assert_eq!(counted.window.transactions, Some(100));
        assert_eq!(counted.stored_settings().duration, None);
        let seeded = [("target", "192.0.2.1:12870"), ("seed", "7")];
        let seeded = resolve(settings(&seeded), w(), false, false).unwrap();
        assert_eq!(seeded.pacing.seed, 7);
    }

    /// Nothing is left to default: both sides have their CPUs and a thread
    /// count above zero, and the engine's configuration is read off them.
    #[test]
    fn placement_gives_each_side_cpus_and_threads() {
        let w = || vec!["RR4(1B/1B)".parse().unwrap()];
        let run = resolve(settings(&[]), w(), false, false).unwrap();
        let h = host(&run);
        let Responder::Spawned { cpus, threads } = &h.placement.responder else {
            panic!("no target: the responder is started here");
        };
        assert!(!h.placement.client_cpus.is_empty() && !cpus.is_empty());
        assert_eq!(
            h.placement.threads.get() as usize,
            h.placement.client_cpus.len()
        );
        assert_eq!(threads.get() as usize, cpus.len());
        assert!(h.agents.is_none() && h.lab.is_none());
        assert_eq!(h.driver_processes(), 1);
        let cfg = run.run_config(h, &run.workloads[0]);
        assert_eq!(cfg.threads, h.placement.threads.get() as usize);
        assert_eq!(cfg.client_cpus, h.placement.client_cpus);
        assert_eq!(cfg.pacing.seed, run.pacing.seed);
        assert_eq!(cfg.duration, Some(Duration::from_secs(10)));
        // Given threads win; against a target without client_cpus the
        // driver is not pinned and runs one thread.
        let given = [("threads", "3"), ("server_threads", "2")];
        let given = resolve(settings(&given), w(), false, false).unwrap();
        let h = host(&given);
        assert_eq!(h.placement.threads.get(), 3);
        assert!(
            matches!(h.placement.responder, Responder::Spawned { threads, .. } if threads.get() == 2)
        );
        let remote = resolve(settings(&[("target", "192.0.2.1:1")]), w(), false, false).unwrap();
        let h = host(&remote);
        assert_eq!(
            (h.placement.client_cpus.len(), h.placement.threads.get()),
            (0, 1)
        );
        assert_eq!(h.placement.responder.cpus(), &[] as &[usize]);
        let stored = remote.stored_settings();
        assert_eq!((stored.threads, stored.client_cpus), (Some(1), None));
        // A zero from outside the table (a step file) is refused, not run.
        let mut zero = settings(&[("target", "192.0.2.1:1")]);
        zero.threads = Some(0);
        assert!(matches!(
            resolve(zero, w(), false, false),
            Err(RunError::Input(m)) if m == "threads 0: give at least 1"
        ));
    }

    /// The TLS parameters are parsed once, here: a bad combination is an
    /// input error (exit status 2), and the run carries what was parsed to
    /// the engine and the stored settings alike.
    #[test]
    fn tls_parameters_are_parsed_once_and_refused_as_input() {
        let w = || vec!["RR4(1B/1B)".parse().unwrap()];
        let tls = [
            ("target", "192.0.2.1:1"),
            ("transport", "tls"),
            ("cipher", "TLS_AES_128_GCM_SHA256"),
        ];
        let run = resolve(settings(&tls), w(), false, false).unwrap();
        let p = run.tls.clone().expect("transport tls");
        assert_eq!(p.version.name(), "1.3");
        let cfg = run.run_config(host(&run), &run.workloads[0]);
        assert_eq!(cfg.tls, Some(p.clone()));
        assert_eq!(run.stored_settings().tls_version, Some(p.version));
        let plain = resolve(settings(&[("target", "192.0.2.1:1")]), w(), false, false).unwrap();
        assert!(plain.tls.is_none());
        assert_eq!(plain.stored_settings().tls_version, None);
        let m = refused(
            &[
                ("transport", "tls"),
                ("tls_version", "1.2"),
                ("cipher", "TLS_AES_128_GCM_SHA256"),
            ],
            "RR1(1B/1B)",
        );
        assert!(
            m.starts_with("cipher 1301 (TLS_AES_128_GCM_SHA256) is a TLS 1.3 suite, not 1.2"),
            "{m}"
        );
        let m = refused(
            &[
                ("transport", "tls"),
                ("tls_mode", "sidecar"),
                ("rekey", "1MB"),
            ],
            "RR1(1B/1B)",
        );
        assert!(m.starts_with("rekey with tls_mode sidecar"), "{m}");
    }

    /// The stored settings repeat the run: resolved again (as a guest does
    /// with its step file, or a user with `--seed` and the rest), they give
    /// the same run and store the same settings.
    #[test]
    fn the_stored_settings_resolve_to_the_same_run() {
        let cases: &[&[(&str, &str)]] = &[
            &[],
            &[("target", "192.0.2.1:1"), ("server_threads", "3")],
            &[("transactions", "100"), ("threads", "2")],
            &[
                ("transport", "tls"),
                ("cipher", "C02F"),
                ("resume_ratio", "0.5"),
            ],
            &[("agents", "2"), ("think", "1s"), ("ramp", "100/s")],
            &[("kernel", "linux-image-6.1.0-48-cloud-amd64-unsigned")],
        ];
        for given in cases {
            let w = || vec!["RR4(1B/1B)".parse().unwrap()];
            let first = resolve(settings(given), w(), true, false).unwrap();
            let stored = first.stored_settings();
            let again = resolve(stored.clone(), w(), false, false).unwrap();
            assert_eq!(again.stored_settings(), stored, "{given:?}");
            assert_eq!(again.window, first.window, "{given:?}");
            assert_eq!(again.pacing.seed, first.pacing.seed, "{given:?}");
            assert_eq!(again.tls, first.tls, "{given:?}");
            assert_eq!(again.session_key, first.session_key, "{given:?}");
            if let (Site::Host(a), Site::Host(b)) = (&again.site, &first.site) {
                assert_eq!(a.placement, b.placement, "{given:?}");
                assert_eq!(a.agents, b.agents, "{given:?}");
            }
        }
    }

    /// Agents are decided once: the count, the launcher and where the
    /// controller listens, or none (the driver in this process).
    #[test]
    fn agents_are_resolved_with_their_launcher() {
        use std::os::unix::fs::PermissionsExt;
        let w = || vec!["RR4(1B/1B)".parse().unwrap()];
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "resolve-test-token-0123456789").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut given = vec![
            ("target", "192.0.2.1:1"),
            ("agents", "2"),
            ("launcher", "external"),
            ("agent_listen", "0.0.0.0:7700"),
        ];
        // External agents must be given the token: the run cannot make one.
        if std::env::var_os(TOKEN_ENV).is_none() {
            let m = refused(&given, "RR4(1B/1B)");
            assert!(
                m.starts_with("launcher external: give --token-file FILE"),
                "{m}"
            );
        }
        given.push(("token_file", file.to_str().unwrap()));
        let run = resolve(settings(&given), w(), false, false).unwrap();
        assert!(host(&run).token.is_some());
        let h = host(&run);
        let agents = h.agents.as_ref().expect("asked for");
        assert_eq!(agents.count.get(), 2);
        assert_eq!(agents.launcher, Launcher::External);
        assert_eq!(agents.listen.as_deref(), Some("0.0.0.0:7700"));
        assert_eq!(h.driver_processes(), 2);
        assert_eq!(run.stored_settings().agents, Some(2));
        let m = refused(&[("launcher", "slurm")], "RR4(1B/1B)");
        assert!(
            m.starts_with("launcher slurm: give the number of agents"),
            "{m}"
        );
    }

    #[test]
    fn no_workload_is_the_default_study() {
        let names = |w: Vec<Workload>| w.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(names(workloads_or_default(&[]).unwrap()), DEFAULT_STUDY);
        let given = workloads_or_default(&["CRR2(1B/1B)".into()]).unwrap();
        assert_eq!(names(given), ["CRR2(1B/1B)"]);
        assert!(matches!(
            workloads_or_default(&["RR1(1kb/1B)".into()]),
            Err(RunError::Input(m)) if m.contains("1kb")
        ));
    }

    /// Every agent runs a share of every class: the smallest class of any
    /// workload bounds the agents, whichever workload holds it.
    #[test]
    fn agents_are_bounded_by_the_smallest_class() {
        let w: Vec<Workload> = vec![
            "RR8(1B/1B)".parse().unwrap(),
            "RR100(1B/1B)+RR3(1B/1B)".parse().unwrap(),
        ];
        assert!(check_agents_fit(3, &w).is_ok());
        match check_agents_fit(4, &w) {
            Err(RunError::Input(m)) => assert!(
                m.starts_with("agents 4: RR100(1B/1B)+RR3(1B/1B) has a class of 3 clients")
                    && m.ends_with("use at most 3 agents"),
                "{m}"
            ),
            other => panic!("expected an input error, got {other:?}"),
        }
    }

    #[test]
    fn settings_that_exclude_each_other_are_refused_with_the_fix() {
        let m = refused(&[("think", "1s"), ("rate", "100/s")], "RR1(1B/1B)");
        assert!(m.starts_with("think and rate exclude each other"), "{m}");
        let m = refused(&[("arrivals", "poisson")], "RR1(1B/1B)");
        assert!(m.contains("give --rate"), "{m}");
        let m = refused(&[("repeat", "3"), ("confidence", "99,5")], "RR1(1B/1B)");
        assert_eq!(m, "repeat and confidence exclude each other: use one");
        let m = refused(&[("iterations", "3,10")], "RR1(1B/1B)");
        assert!(m.starts_with("iterations needs confidence"), "{m}");
        let m = refused(&[("ipv6", "true"), ("target", "192.0.2.1:1")], "RR1(1B/1B)");
        assert!(m.contains("drop ipv6"), "{m}");
        let m = refused(&[("tls_mode", "ktls")], "RR1(1B/1B)");
        assert!(m.contains("apply to transport tls, not tcp"), "{m}");
    }

    #[test]
    fn a_step_on_another_kernel_checks_only_what_its_files_name() {
        let kernel = ("kernel", "linux-image-6.1.0-48-cloud-amd64-unsigned");
        let m = refused(&[kernel, ("target", "192.0.2.1:1")], "RR1(1B/1B)");
        assert!(m.starts_with("kernel and target exclude each other"), "{m}");
        let m = refused(&[kernel, ("lab", "/nonexistent/lab.toml")], "RR1(1B/1B)");
        assert!(m.contains("no such file (with kernel"), "{m}");
        // Placement is the guest's: nothing is decided here.
        let w = vec!["RR1(1B/1B)".parse().unwrap()];
        let run = resolve(settings(&[kernel]), w, false, false).unwrap();
        let Site::Guest(guest) = &run.site else {
            panic!("a step on another kernel runs in a guest");
        };
        assert_eq!(guest.spec.kernel, kernel.1);
        let stored = run.stored_settings();
        assert_eq!((stored.client_cpus, stored.threads), (None, None));
    }

    #[test]
    fn a_remote_target_places_only_the_driver() {
        // A CPU this process has: a given list is checked against them. The
        // responder's is not: it is remote.
        let cpu = available_cpus()[0];
        let cpu_text = cpu.to_string();
        let given = [("client_cpus", cpu_text.as_str()), ("server_cpus", "1")];
        let remote = settings(&[("target", "192.0.2.1:1")]);
        let p = placement(&remote, Some(vec![cpu]), Some(vec![1])).unwrap();
        assert_eq!(p.client_cpus, vec![cpu]);
        assert_eq!(
            p.responder,
            Responder::Remote {
                target: "192.0.2.1:1".into()
            }
        );
        let stored = resolve(
            settings(&[given[0], given[1], ("target", "192.0.2.1:1")]),
            vec!["RR1(1B/1B)".parse().unwrap()],
            false,
            false,
        )
        .unwrap()
        .stored_settings();
        assert_eq!(stored.server_cpus, None, "a remote responder says its own");
        let local = placement(&RunSettings::default(), None, None).unwrap();
        let server = local.responder.cpus();
        assert!(!local.client_cpus.is_empty() && !server.is_empty());
        // With two or more CPUs the halves are disjoint.
        if local.client_cpus != server {
            assert!(local.client_cpus.iter().all(|c| !server.contains(c)));
        }
    }

    /// A lab run from `hosts` of the four-driver example to its server,
    /// resolved as `lab_run::resolve` does (which needs root; this does not).
    fn four_driver_lab(hosts: &[&str]) -> LabRun {
        let text = include_str!("../../../examples/lab-four-drivers.toml");
        let lab = stackbench_lab::parse_lab(text, "lab-four-drivers.toml").unwrap();
        let drivers: Vec<crate::lab_run::LabDriver> = hosts
            .iter()
            .map(|h| {
                let path = stackbench_lab::path::path(&lab, h, "server").unwrap();
                let ip = stackbench_lab::path::address(&lab, path.link, "server", false).unwrap();
                crate::lab_run::LabDriver {
                    path,
                    responder_ip: ip,
                }
            })
            .collect();
        LabRun {
            file: "lab-four-drivers.toml".into(),
            path: drivers[0].path.clone(),
            responder_ip: drivers[0].responder_ip,
            lab,
            drivers,
            policy: None,
            steering: None,
            flowtable: false,
            distribution: None,
            virtual_to: Vec::new(),
            driver_cpus: None,
            responder_cpus: None,
        }
    }

    #[test]
    fn agents_in_lab_hosts_need_one_per_host_and_start_here() {
        let w: Vec<Workload> = vec!["RR8(64B/64B)".parse().unwrap()];
        let four = four_driver_lab(&["d1", "d2", "d3", "d4"]);
        let hosts = |lab: &LabRun| Some(lab.drivers.len());
        let refused = |pairs: &[(&str, &str)], lab: &LabRun| match resolve_agents(
            &settings(pairs),
            &w,
            hosts(lab),
        ) {
            Err(RunError::Input(m)) => m,
            other => panic!("expected an input error, got {other:?}"),
        };
        let m = refused(&[], &four);
        assert!(
            m.contains("lab_from lists 4 hosts") && m.contains("--agents 4"),
            "{m}"
        );
        let m = refused(&[("agents", "2")], &four);
        assert!(m.contains("use at least --agents 4"), "{m}");
        let m = refused(&[("agents", "4"), ("launcher", "slurm")], &four);
        assert!(m.starts_with("launcher slurm with a lab"), "{m}");
        let m = refused(&[("agents", "4"), ("agent_listen", "0.0.0.0:7700")], &four);
        assert!(m.starts_with("agent_listen with a lab"), "{m}");
        let ok = resolve_agents(&settings(&[("agents", "4")]), &w, hosts(&four)).unwrap();
        assert_eq!(ok.map(|a| a.count.get()), Some(4));
        // One host: no agents keeps the run in this process, as before.
        let one = four_driver_lab(&["d2"]);
        assert_eq!(
            resolve_agents(&settings(&[]), &w, hosts(&one)).unwrap(),
            None
        );
        // Responder i listens on the server's address on agent i's link.
        assert_eq!(four.listen(5), "10.72.1.2:0");
    }

    #[test]
    fn the_session_key_names_what_decides_the_responder() {
        let a = settings(&[("server_threads", "2")]);
        let b = settings(&[("server_threads", "3")]);
        let c = settings(&[("server_threads", "2"), ("duration", "3s")]);
        assert_ne!(session_key(&a), session_key(&b));
        assert_eq!(
            session_key(&a),
            session_key(&c),
            "the window is no part of it"
        );
    }
}
