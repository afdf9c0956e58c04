//! The controller of a run split over agents. It listens for the agents,
//! starts them (locally, through `srun`, or not at all when a cluster engine
//! does), checks each one's version and segment, measures each one's clock
//! offset as NTP does (the sample with the shortest round trip: offset =
//! agent clock − midpoint of the probe), and then, for every workload run:
//!
//! 1. sends the run (the whole [`RunConfig`] with the agent's segment, and
//!    the responder it drives) to every agent;
//! 2. waits until every agent is armed (its clients connected) — the first
//!    phase of the barrier; each arms by its own connect deadline, and one
//!    that stops reporting is named;
//! 3. sends one start time, a little ahead, converted to each agent's clock —
//!    the second phase: all windows open at once, and the skew between them
//!    is measured from the times each agent says its window opened;
//! 4. collects every agent's result and merges them exactly
//!    ([`crate::agents::merge`]).
//!
//! An agent that fails or goes silent makes the run incomplete, naming the
//! agent with its host and segment; the others are stopped and their results
//! kept. The design follows uperf's master/slave barriers and perfSONAR
//! pScheduler's common start time; k6-operator starts its paused runners one
//! by one instead, and its skew grows with their number.

use std::io::BufReader;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stackbench_engine::token::{self, Admission, Token};
use stackbench_engine::{Progress, RunConfig, RunOutcome};
use stackbench_metrics::live::LiveRun;
use stackbench_metrics::warnings::Warning;
use stackbench_model::segment::Segment;
use stackbench_model::settings::Launcher;
use stackbench_record::AgentsSummary;

use crate::agents::launch::{AgentHost, Launched};
use crate::agents::merge::{self, AgentPart};
use crate::agents::wire::{
    self, now_unix_ns, send, AgentResult, Build, Decoded, FromAgent, FromController, Incoming,
    RunOrder, Tagged,
};
use crate::error::{input, RunError};

/// Clock probes per agent; the one with the shortest round trip is kept.
const CLOCK_PROBES: u32 = 8;
/// How far ahead of now the start time is set: every agent must receive it
/// before it comes (a few ms of control traffic each, on a loaded host).
const START_LEAD: Duration = Duration::from_millis(100);
const START_LEAD_PER_AGENT: Duration = Duration::from_millis(5);
/// How long the agents have to connect and say hello.
const HELLO_PATIENCE_LOCAL: Duration = Duration::from_secs(30);
const HELLO_PATIENCE_REMOTE: Duration = Duration::from_secs(300);
/// An agent that sends nothing for this long has stopped reporting. A live
/// agent reports its progress twice a second while it connects and runs;
/// after its window it is silent only while it closes its connections and
/// takes its end samples, seconds even for ~20K connections. Waits are
/// bounded by this silence, not by a guess of how long a ramp takes on a
/// loaded machine.
const SILENCE: Duration = Duration::from_secs(120);
/// How often a wait looks at `stop` and at the agents' silence while no
/// message comes.
const POLL: Duration = Duration::from_millis(100);

/// One connected agent.
struct Agent {
    segment: Segment,
    host: String,
    pid: u32,
    /// What it said it is, in its hello.
    build: Build,
    stream: TcpStream,
    /// Its messages' tag in the controller's inbox.
    tag: usize,
    /// Agent clock minus controller clock, and the probe's round trip, ns.
    offset_ns: i64,
    rtt_ns: u64,
    /// The responder it drives.
    target: String,
}

impl Agent {
    fn name(&self) -> String {
        format!("agent {} on {} (pid {})", self.segment, self.host, self.pid)
    }
}

/// The agents of a session, connected and ready for runs.
pub struct Controller {
    agents: Vec<Agent>,
    /// Every agent's messages, tagged by connection: the controller blocks
    /// here until one speaks (it runs on the driver's CPUs, so it must not
    /// poll).
    inbox: Receiver<Tagged<FromAgent>>,
    launcher: Launcher,
    next_run: u64,
    /// The segment index of the agent whose failure stopped the current
    /// run (the first one), to name it first.
    first_failed: Option<u32>,
    /// What each run's agents did, for the record (see [`Controller::take_summary`]).
    summaries: Vec<AgentsSummary>,
    /// See [`Controller::refused_agents`] and [`Controller::control_refused`].
    refused_agents: u64,
    control_refused: Option<u64>,
    _launched: Launched,
}

/// What starting the agents needs.
pub struct AgentsSpec<'a> {
    pub count: u32,
    pub launcher: Launcher,
    /// Where to listen for the agents (`None`: loopback, any port).
    pub listen: Option<&'a str>,
    /// The responders: agent i drives `targets[i % len]`.
    pub targets: Vec<String>,
    /// The stackbench executable for local and srun agents (`None`: this one).
    pub program: Option<&'a Path>,
    /// A listener already bound, used instead of binding `listen`: a lab
    /// run binds it inside host lab_to, where its agents can reach it.
    pub listener: Option<TcpListener>,
    /// Local agents in lab hosts: agent i runs in `hosts[i % len]` and dials
    /// the controller at that host's address for it (empty: here, at the
    /// listener's address).
    pub hosts: Vec<AgentHost>,
    /// The run token every agent must prove (and that the controller proves
    /// to them), passed to the agents it starts in their environment.
    pub token: Token,
}

/// The listener the agents connect to, at `listen` (`None`: loopback, any
/// port); an address this host cannot bind is an input error naming it.
pub fn bind_agent_listener(listen: Option<&str>) -> Result<TcpListener, RunError> {
    let listen = listen.unwrap_or("127.0.0.1:0");
    TcpListener::bind(listen).or_else(|e| {
        input(format!(
            "agent_listen {listen}: {e}: give an address of this host, e.g. 0.0.0.0:7700"
        ))
    })
}

impl Controller {
    /// Listens, starts the agents as `spec.launcher` says, and waits for
    /// each one's hello; then measures their clocks.
    /// `note` tells the user what it waits for (see [`accept_agents`]).
    pub fn start(
        spec: AgentsSpec,
        stop: &AtomicBool,
        note: &mut dyn FnMut(&str),
    ) -> Result<Controller, RunError> {
        let listener = match spec.listener {
            Some(l) => l,
            None => bind_agent_listener(spec.listen)?,
        };
        let addr = listener
            .local_addr()
            .map_err(|e| RunError::runtime("agent listener", e))?;
        let program = match spec.program {
            Some(p) => p.to_path_buf(),
            None => std::env::current_exe()
                .map_err(|e| RunError::runtime("cannot find the stackbench executable", e))?,
        };
        // Agents elsewhere cannot dial an unspecified address: name this host.
        let dial = if addr.ip().is_unspecified() {
            format!("{}:{}", wire::host_name(), addr.port())
        } else {
            addr.to_string()
        };
        let mut launched = crate::agents::launch::launch(
            spec.launcher,
            spec.count,
            (&program, &dial),
            &spec.hosts,
            &spec.token,
        )?;
        let patience = match spec.launcher {
            Launcher::Local => HELLO_PATIENCE_LOCAL,
            Launcher::Slurm | Launcher::External => HELLO_PATIENCE_REMOTE,
        };
        let (tx, inbox) = mpsc::channel();
        let mut refused = 0;
        let waiting = Waiting {
            at: &dial,
            say_now: spec.launcher == Launcher::External,
            note,
        };
        let mut agents = accept_agents(
            (&listener, &spec.token, &mut refused),
            (spec.count, patience),
            (&tx, &inbox),
            (&mut launched, waiting),
            stop,
        )?;
        agents.sort_by_key(|a| a.segment.index());
        for a in &mut agents {
            a.target = spec.targets[a.segment.index() as usize % spec.targets.len()].clone();
            (a.offset_ns, a.rtt_ns) = clock_offset(a, &inbox)?;
        }
        Ok(Controller {
            agents,
            inbox,
            launcher: spec.launcher,
            next_run: 0,
            first_failed: None,
            summaries: Vec::new(),
            refused_agents: refused,
            control_refused: None,
            _launched: launched,
        })
    }

    /// Agent connections refused while the agents started (no token,
    /// another token, not a stackbench agent of this protocol).
    pub fn refused_agents(&self) -> u64 {
        self.refused_agents
    }

    /// Control connections the agents' responders refused over the last
    /// run: each responder's largest count among the agents that drove it,
    /// summed over the responders; `None` when no agent counted (plain
    /// servers).
    pub fn control_refused(&self) -> Option<u64> {
        self.control_refused
    }

    /// The agents' rows of every run since the last call, for the record.
    pub fn take_summary(&mut self) -> Option<AgentsSummary> {
        let mut all = std::mem::take(&mut self.summaries).into_iter();
        let mut first = all.next()?;
        for s in all {
            first.start_skew_s = match (first.start_skew_s, s.start_skew_s) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            first.merge_notes.extend(s.merge_notes);
            first.agents.extend(s.agents);
        }
        Some(first)
    }

    /// The agents whose build is not this controller's (same wire protocol,
    /// another commit, version or dirty state), as a warning for the record;
    /// `None` when every agent is this build.
    pub fn build_warning(&self) -> Option<Warning> {
        let agents: Vec<(String, &Build)> =
            self.agents.iter().map(|a| (a.name(), &a.build)).collect();
        builds_differ(&Build::this(), &agents)
    }

    /// Runs `cfg` on every agent, each its own segment, and merges the
    /// results. An `Err` means no agent measured anything.
    pub fn run(
        &mut self,
        cfg: &RunConfig,
        stop: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunOutcome, String> {
        self.next_run += 1;
        self.first_failed = None;
        let run = self.next_run;
        let n = self.agents.len() as u32;
        let mut unsent = None;
        for a in &mut self.agents {
            let config = RunConfig {
                segment: a.segment,
                ..cfg.clone()
            };
            let msg = FromController::Run {
                run,
                order: Box::new(RunOrder::of(&config)),
                target: a.target.clone(),
            };
            if let Err(e) = send(&mut a.stream, &msg) {
                unsent = Some(agent_lost(a, &e.to_string()));
                break;
            }
        }
        if let Some(e) = unsent {
            // Those that got the run would wait for a start that never comes.
            self.stop_all(run);
            return Err(e);
        }
        // Phase 1: every agent armed (each arms by its own connect
        // deadline at the latest: the ramp plus the driver's grace).
        let mut state: Vec<AgentState> = vec![AgentState::Running; n as usize];
        let mut failure: Option<String> = None;
        // An agent reports its responder's CPU and memory: the first agent
        // of each responder stands for it in the merged live figures.
        let reports_responder = (0..self.agents.len())
            .map(|i| {
                let target = &self.agents[i].target;
                self.agents[..i].iter().all(|a| &a.target != target)
            })
            .collect();
        let mut seen = Seen::new(reports_responder, on_progress);
        let armed = |s: &AgentState| !matches!(s, AgentState::Running);
        self.wait(
            run,
            &mut state,
            None,
            stop,
            (&mut failure, &mut seen),
            armed,
        );
        if failure.is_none() && !state.iter().all(|s| matches!(s, AgentState::Armed)) {
            let late: Vec<String> = self
                .agents
                .iter()
                .zip(&state)
                .filter(|(_, s)| matches!(s, AgentState::Running))
                .map(|(a, _)| a.name())
                .collect();
            failure = Some(format!("agents not armed: {}", late.join(", ")));
        }
        // Phase 2: one start time for all.
        if failure.is_none() {
            let lead = START_LEAD + START_LEAD_PER_AGENT * n;
            let start = now_unix_ns() + lead.as_nanos() as u64;
            for a in &mut self.agents {
                let at = start.saturating_add_signed(a.offset_ns);
                let msg = FromController::Start {
                    run,
                    at_unix_ns: at,
                };
                if let Err(e) = send(&mut a.stream, &msg) {
                    failure.get_or_insert(format!("{}: {e}", a.name()));
                }
            }
        }
        if failure.is_some() {
            self.stop_all(run);
        }
        self.wait(
            run,
            &mut state,
            None,
            stop,
            (&mut failure, &mut seen),
            |s| matches!(s, AgentState::Done(_) | AgentState::Failed(_)),
        );
        if failure.is_some() {
            self.stop_all(run);
            // What the others measured until the stop.
            let grace = Instant::now() + Duration::from_secs(10);
            let mut ignored = None;
            self.wait(
                run,
                &mut state,
                Some(grace),
                &AtomicBool::new(false),
                (&mut ignored, &mut seen),
                |s| matches!(s, AgentState::Done(_) | AgentState::Failed(_)),
            );
        }
        self.control_refused = control_refused(&self.agents, &state);
        let parts = self.parts(state);
        if parts.iter().all(|p| p.classes.is_empty()) {
            return Err(failure.unwrap_or_else(|| "no agent returned a result".to_string()));
        }
        let mut merged = merge::merge(&parts, self.launcher.name());
        // Each agent named its class by its share (RR2 of RR8): the merged
        // class is the whole one.
        let workload = cfg.workload.to_string();
        for (class, spec) in merged.classes.iter_mut().zip(&cfg.workload.classes) {
            class.notation = spec.to_string();
            class.workload = workload.clone();
        }
        let mut reason = merged.incomplete_reason.map(|r| match self.first_failed {
            Some(index) => lead_with_agent(&r, index),
            None => r,
        });
        if let Some(f) = failure {
            reason = Some(match reason {
                Some(r) if !r.contains(&f) => format!("{f}; {r}"),
                Some(r) => r,
                None => f,
            });
        }
        let opened = parts
            .iter()
            .filter_map(|p| Some(p.window_start_s? - p.clock_offset_s))
            .fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.min(t))));
        self.summaries.push(merged.agents);
        Ok(RunOutcome {
            classes: merged.classes,
            mix_cpu: merged.mix_cpu,
            server_stats: Vec::new(),
            complete: reason.is_none(),
            incomplete_reason: reason,
            window_opened_unix_s: opened,
        })
    }

    /// Reads the agents' messages of `run` until every agent's state
    /// satisfies `done` or the deadline (if any) passes. `stop` tells the
    /// agents to stop, and waiting goes on for their results; an agent
    /// silent for [`SILENCE`] has failed.
    fn wait(
        &mut self,
        run: u64,
        state: &mut [AgentState],
        deadline: Option<Instant>,
        stop: &AtomicBool,
        (failure, seen): (&mut Option<String>, &mut Seen),
        done: impl Fn(&AgentState) -> bool,
    ) {
        let mut stopped = false;
        let mut heard = vec![Instant::now(); state.len()];
        while !state.iter().all(&done) {
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                return;
            }
            if stop.load(Ordering::Relaxed) && !stopped {
                stopped = true;
                self.stop_all(run);
            }
            for (i, st) in state.iter_mut().enumerate() {
                let over = matches!(st, AgentState::Done(_) | AgentState::Failed(_));
                if !over && now.duration_since(heard[i]) >= SILENCE {
                    if failure.is_none() {
                        self.first_failed = Some(self.agents[i].segment.index());
                    }
                    let why = format!(
                        "{} sent nothing for {} s (stopped reporting)",
                        self.agents[i].name(),
                        SILENCE.as_secs()
                    );
                    failure.get_or_insert(why.clone());
                    *st = AgentState::Failed(why);
                }
            }
            if failure.is_some() && !stopped {
                stopped = true;
                self.stop_all(run);
            }
            let mut timeout = POLL;
            if let Some(d) = deadline {
                timeout = timeout.min(d.saturating_duration_since(now));
            }
            let (tag, msg) = match self.inbox.recv_timeout(timeout) {
                Ok(m) => m,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            };
            let Some(i) = self.agents.iter().position(|a| a.tag == tag) else {
                continue;
            };
            heard[i] = Instant::now();
            let name = self.agents[i].name();
            let st = &mut state[i];
            // Every message updates its agent, whatever this wait is for: an
            // agent that fails after arming must not be missed.
            match msg {
                Incoming::Message(FromAgent::Progress { run: r, progress }) if r == run => {
                    seen.update(i, progress.into_progress());
                }
                Incoming::Message(FromAgent::Armed { run: r }) if r == run => {
                    if matches!(st, AgentState::Running) {
                        *st = AgentState::Armed;
                    }
                }
                Incoming::Message(FromAgent::Done { run: r, part }) if r == run => {
                    *st = AgentState::Done(part);
                }
                Incoming::Message(FromAgent::Failed { run: r, error }) if r == run => {
                    if failure.is_none() {
                        self.first_failed = Some(self.agents[i].segment.index());
                    }
                    failure.get_or_insert(format!("{name}: {error}"));
                    *st = AgentState::Failed(error);
                }
                Incoming::Message(_) => {} // a late message of an earlier run
                Incoming::Closed(reason) | Incoming::OtherProtocol(reason) => {
                    if !matches!(st, AgentState::Done(_)) {
                        if failure.is_none() {
                            self.first_failed = Some(self.agents[i].segment.index());
                        }
                        let why = format!("{name} died or stopped reporting ({reason})");
                        failure.get_or_insert(why.clone());
                        *st = AgentState::Failed(why);
                    }
                }
            }
        }
    }

    fn stop_all(&mut self, run: u64) {
        for a in &mut self.agents {
            let _ = send(&mut a.stream, &FromController::Stop { run });
        }
    }

    /// The merge's input: each agent's result (an empty one, incomplete and
    /// named, for an agent that returned none).
    fn parts(&self, state: Vec<AgentState>) -> Vec<AgentPart> {
        self.agents
            .iter()
            .zip(state)
            .map(|(a, st)| {
                let (result, reason) = match st {
                    AgentState::Done(r) => (Some(*r), None),
                    AgentState::Failed(e) => (None, Some(e)),
                    _ => (None, Some("returned no result".to_string())),
                };
                let r = result.unwrap_or_else(|| AgentResult {
                    classes: Vec::new(),
                    mix_cpu: None,
                    complete: false,
                    incomplete_reason: reason,
                    window_opened_unix_s: None,
                    responder_host: String::new(),
                    control_refused: None,
                });
                AgentPart {
                    index: a.segment.index(),
                    count: a.segment.count(),
                    pid: a.pid,
                    host: a.host.clone(),
                    responder: a.target.clone(),
                    responder_host: r.responder_host,
                    classes: r.classes,
                    mix_cpu: r.mix_cpu,
                    complete: r.complete,
                    incomplete_reason: r.incomplete_reason,
                    window_start_s: r.window_opened_unix_s,
                    clock_offset_s: a.offset_ns as f64 / 1e9,
                    clock_rtt_s: a.rtt_ns as f64 / 1e9,
                }
            })
            .collect()
    }
}

/// The merged reason (`agent N (segment …) is incomplete: …` clauses
/// joined by "; ", in segment order) with agent `index`'s clause first: the
/// agent that failed first, before those the controller then stopped.
fn lead_with_agent(reason: &str, index: u32) -> String {
    let mut clauses: Vec<String> = Vec::new();
    for (i, part) in reason.split("; agent ").enumerate() {
        clauses.push(if i == 0 {
            part.to_string()
        } else {
            format!("agent {part}")
        });
    }
    let head = format!("agent {index} (segment ");
    match clauses.iter().position(|c| c.starts_with(&head)) {
        Some(at) if at > 0 => {
            let first = clauses.remove(at);
            clauses.insert(0, first);
            clauses.join("; ")
        }
        _ => reason.to_string(),
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        for a in &mut self.agents {
            let _ = send(&mut a.stream, &FromController::Bye);
        }
    }
}

/// The agents' latest progress, summed into one line for the observer.
struct Seen<'a> {
    latest: Vec<Option<Progress>>,
    /// Each agent's latest live figures, and whether it is the one that
    /// reports its responder's side.
    live: Vec<Option<Arc<LiveRun>>>,
    reports_responder: Vec<bool>,
    on_progress: &'a mut dyn FnMut(&Progress),
}

impl<'a> Seen<'a> {
    fn new(reports_responder: Vec<bool>, on_progress: &'a mut dyn FnMut(&Progress)) -> Seen<'a> {
        Seen {
            latest: vec![None; reports_responder.len()],
            live: vec![None; reports_responder.len()],
            reports_responder,
            on_progress,
        }
    }

    /// The agents' latest live figures added up, when agent `i` brought
    /// new ones (an agent that sent none yet counts as nothing so far).
    fn merged_live(&mut self, i: usize, live: Option<Arc<LiveRun>>) -> Option<Arc<LiveRun>> {
        self.live[i] = Some(live?);
        let mut sum = LiveRun::default();
        for (part, &own) in self.live.iter().zip(&self.reports_responder) {
            if let Some(part) = part {
                sum.add_part(part, own);
            }
        }
        Some(Arc::new(sum))
    }

    /// Takes agent `i`'s progress and shows the sum: connections and counts
    /// added, time and phase the least advanced agent's.
    fn update(&mut self, i: usize, mut p: Progress) {
        let live = self.merged_live(i, p.live.take());
        self.latest[i] = Some(p);
        let all: Vec<&Progress> = self.latest.iter().flatten().collect();
        let Some(first) = all.first() else {
            return;
        };
        let mut sum = Progress {
            elapsed: all.iter().map(|p| p.elapsed).min().unwrap_or_default(),
            connecting: all.iter().any(|p| p.connecting),
            connected: all.iter().map(|p| p.connected).sum(),
            in_warmup: all.iter().any(|p| p.in_warmup),
            measured: all.iter().map(|p| p.measured).min().flatten(),
            transactions: vec![0; first.transactions.len()],
            live,
        };
        for p in &all {
            for (t, n) in sum.transactions.iter_mut().zip(&p.transactions) {
                *t += n;
            }
        }
        (self.on_progress)(&sum);
    }
}

/// Where an agent is in one run.
#[derive(Debug)]
enum AgentState {
    Running,
    Armed,
    Done(Box<AgentResult>),
    Failed(String),
}

impl Clone for AgentState {
    fn clone(&self) -> Self {
        match self {
            AgentState::Running => AgentState::Running,
            AgentState::Armed => AgentState::Armed,
            AgentState::Done(r) => AgentState::Done(r.clone()),
            AgentState::Failed(e) => AgentState::Failed(e.clone()),
        }
    }
}

/// What the agents' results say their responders refused: per responder
/// the largest count among its agents (agents sharing a responder see the
/// same counter), summed.
fn control_refused(agents: &[Agent], state: &[AgentState]) -> Option<u64> {
    let mut per_target: std::collections::BTreeMap<&str, u64> = Default::default();
    for (a, st) in agents.iter().zip(state) {
        if let AgentState::Done(r) = st {
            if let Some(n) = r.control_refused {
                let most = per_target.entry(a.target.as_str()).or_default();
                *most = (*most).max(n);
            }
        }
    }
    (!per_target.is_empty()).then(|| per_target.values().sum())
}

fn agent_lost(a: &Agent, e: &str) -> String {
    format!("{}: {e}", a.name())
}

/// How long a connection to the agent port has to finish the token
/// handshake; it runs on a thread of its own, so a silent peer delays no
/// agent.
const HANDSHAKE_PATIENCE: Duration = Duration::from_secs(10);

/// A connection to the agent port after its token handshake: the peer, and
/// its stream and reader, or why it was refused.
type Admitted = (String, Result<(TcpStream, BufReader<TcpStream>), String>);

/// A wait for agents is said after this long (at once for launcher
/// external: someone else must start them), then every [`SAY_EVERY`].
const SAY_WAITING_AFTER: Duration = Duration::from_secs(2);
const SAY_EVERY: Duration = Duration::from_secs(10);

/// What the wait for agents tells the user, and where they connect.
struct Waiting<'a> {
    at: &'a str,
    say_now: bool,
    note: &'a mut dyn FnMut(&str),
}

/// Accepts `count` agents and checks their hellos: same protocol and
/// version, segments of `count`, each index once. Each connection first
/// proves `token` on a thread of its own; one that does not is refused in
/// one line on both sides, counted in `refused`, and the wait goes on. A
/// wait longer than [`SAY_WAITING_AFTER`] is said with its deadline, then
/// how it goes.
fn accept_agents(
    (listener, token, refused): (&TcpListener, &Token, &mut u64),
    (count, patience): (u32, Duration),
    (tx, inbox): (&Sender<Tagged<FromAgent>>, &Receiver<Tagged<FromAgent>>),
    (launched, waiting): (&mut Launched, Waiting<'_>),
    stop: &AtomicBool,
) -> Result<Vec<Agent>, RunError> {
    listener
        .set_nonblocking(true)
        .map_err(|e| RunError::runtime("agent listener", e))?;
    let started = Instant::now();
    let deadline = started + patience;
    let mut next_say = if waiting.say_now {
        started
    } else {
        started + SAY_WAITING_AFTER
    };
    let mut said = false;
    let mut agents: Vec<Agent> = Vec::new();
    let (admitted_tx, admitted) = mpsc::channel::<Admitted>();
    while (agents.len() as u32) < count {
        if Instant::now() >= next_say {
            let line = if said {
                format!(
                    "agents: {} of {count} connected, {} s of {} s",
                    agents.len(),
                    started.elapsed().as_secs(),
                    patience.as_secs()
                )
            } else {
                format!(
                    "waiting up to {} s for {count} agent{} at {}",
                    patience.as_secs(),
                    if count == 1 { "" } else { "s" },
                    waiting.at
                )
            };
            (waiting.note)(&line);
            said = true;
            next_say = Instant::now() + SAY_EVERY;
        }
        if stop.load(Ordering::Relaxed) {
            return Err(RunError::Runtime(
                "interrupted while the agents started".into(),
            ));
        }
        if let Some(dead) = launched.exited() {
            return Err(RunError::Runtime(format!(
                "{dead} before it said hello ({} of {count} agents connected)",
                agents.len()
            )));
        }
        if Instant::now() >= deadline {
            return Err(not_ready(&agents, count, patience, launched, *refused));
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                let (token, done) = (token.clone(), admitted_tx.clone());
                let _ = std::thread::Builder::new()
                    .name("agent-handshake".into())
                    .spawn(move || {
                        let _ = done.send((peer.to_string(), admit_agent(stream, &token)));
                    });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(RunError::runtime("accepting an agent", e)),
        }
        match admitted.recv_timeout(Duration::from_millis(5)) {
            Ok((peer, Ok((stream, lines)))) => {
                let tag = agents.len();
                wire::reader_into(lines, format!("agent at {peer}"), tag, tx.clone());
                agents.push(hello(stream, (&peer, tag), count, (&agents, inbox))?);
            }
            Ok((peer, Err(why))) => {
                *refused += 1;
                (waiting.note)(&format!(
                    "refused the agent connection of {peer}: {why} ({} refused so far)",
                    *refused
                ));
            }
            Err(_) => {}
        }
    }
    Ok(agents)
}

/// The error of agents missing at the deadline: which, who was to start
/// them, and how many connections were refused for want of the token.
fn not_ready(
    agents: &[Agent],
    count: u32,
    patience: Duration,
    launched: &Launched,
    refused: u64,
) -> RunError {
    let have: Vec<u32> = agents.iter().map(|a| a.segment.index()).collect();
    let missing: Vec<String> = (0..count)
        .filter(|i| !have.contains(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    let strangers = match refused {
        0 => String::new(),
        n => format!("; {n} connections refused for want of the run token"),
    };
    RunError::Runtime(format!(
        "agents not ready after {} s: {} never said hello ({}{strangers})",
        patience.as_secs(),
        missing.join(", "),
        launched.describe()
    ))
}

/// The token handshake of one connection to the agent port: the stream and
/// its reader when the peer proved the token, else why it was refused (it
/// was told, in one line). An agent of an earlier protocol is refused in
/// its protocol's words, naming both.
fn admit_agent(
    mut stream: TcpStream,
    token: &Token,
) -> Result<(TcpStream, BufReader<TcpStream>), String> {
    let io = |e: std::io::Error| format!("during the token handshake: {e}");
    stream.set_nonblocking(false).map_err(io)?;
    let _ = stream.set_nodelay(true);
    stream
        .set_read_timeout(Some(HANDSHAKE_PATIENCE))
        .map_err(io)?;
    let mut lines = BufReader::new(stream.try_clone().map_err(io)?);
    let admission = token::admit(&mut lines, &mut stream, "agents", Some(token)).map_err(io)?;
    match admission {
        Admission::Admitted => {}
        Admission::Refused(why) => return Err(why),
        Admission::Foreign(line) => {
            let reason = match wire::decode::<FromAgent>(&line) {
                Decoded::OtherProtocol(refusal) => refusal,
                _ => "not a stackbench agent (no token handshake)".to_string(),
            };
            let refusal = FromController::Refused {
                reason: reason.clone(),
            };
            let _ = send(&mut stream, &refusal);
            return Err(reason);
        }
    }
    stream.set_read_timeout(None).map_err(io)?;
    Ok((stream, lines))
}

/// Reads and checks one agent's hello; a refusal is sent to the agent too.
fn hello(
    mut stream: TcpStream,
    (peer, tag): (&str, usize),
    count: u32,
    (have, inbox): (&[Agent], &Receiver<Tagged<FromAgent>>),
) -> Result<Agent, RunError> {
    let refuse = |stream: &mut TcpStream, reason: String| {
        let _ = send(
            stream,
            &FromController::Refused {
                reason: reason.clone(),
            },
        );
        input(reason)
    };
    let msg = match next_of(inbox, tag, Duration::from_secs(10)) {
        Some(Incoming::Message(m)) => m,
        Some(Incoming::OtherProtocol(why)) => return refuse(&mut stream, why),
        Some(Incoming::Closed(why)) => return Err(RunError::Runtime(why)),
        None => {
            return Err(RunError::Runtime(format!(
                "{peer} connected to the agent port but said nothing: is it a stackbench agent?"
            )))
        }
    };
    let FromAgent::Hello(hello) = msg else {
        return Err(RunError::Runtime(format!(
            "{peer} did not start with a hello"
        )));
    };
    let (index, theirs, host) = (hello.index, hello.count, hello.host.clone());
    // Another build of the same protocol is let in and named in the run's
    // warnings (`Controller::build_warning`): the protocol is what both
    // sides must agree on to run what was asked.
    let refusal = if hello.protocol != wire::PROTOCOL {
        let agent = format!("agent {index}/{theirs} on {host}");
        Some(wire::mismatch(&agent, hello.protocol, &hello.build()))
    } else if theirs != count {
        Some(format!(
            "agent {index}/{theirs} on {host} was started for {theirs} agents, this run has {count}: \
             start it with --segment I/{count} (or {count} srun tasks / Job completions)"
        ))
    } else if have.iter().any(|a| a.segment.index() == index) {
        Some(format!(
            "two agents took segment {index}/{count} (on {host} and {}): give each its own index",
            have.iter()
                .find(|a| a.segment.index() == index)
                .map_or("?", |a| a.host.as_str())
        ))
    } else {
        None
    };
    if let Some(reason) = refusal {
        return refuse(&mut stream, reason);
    }
    let segment = Segment::new(index, count).or_else(input)?;
    send(&mut stream, &FromController::Welcome)
        .map_err(|e| RunError::runtime("welcoming an agent", e))?;
    Ok(Agent {
        segment,
        build: hello.build(),
        host,
        pid: hello.pid,
        stream,
        tag,
        offset_ns: 0,
        rtt_ns: 0,
        target: String::new(),
    })
}

/// The agent's clock offset (agent − controller) from the probe with the
/// shortest round trip, and that round trip, ns.
fn clock_offset(
    a: &mut Agent,
    inbox: &Receiver<Tagged<FromAgent>>,
) -> Result<(i64, u64), RunError> {
    let mut best: Option<(i64, u64)> = None;
    for seq in 0..CLOCK_PROBES {
        let t0 = now_unix_ns();
        send(&mut a.stream, &FromController::Ping { seq })
            .map_err(|e| RunError::runtime(&a.name(), e))?;
        let pong = loop {
            match next_of(inbox, a.tag, Duration::from_secs(5)) {
                Some(Incoming::Message(FromAgent::Pong {
                    seq: s,
                    agent_unix_ns,
                })) if s == seq => break agent_unix_ns,
                Some(Incoming::Message(_)) => continue,
                Some(Incoming::Closed(why) | Incoming::OtherProtocol(why)) => {
                    return Err(RunError::Runtime(why))
                }
                None => {
                    return Err(RunError::Runtime(format!(
                        "{} did not answer its clock probe within 5 s",
                        a.name()
                    )))
                }
            }
        };
        let t2 = now_unix_ns();
        let rtt = t2.saturating_sub(t0);
        let offset = pong as i128 - (i128::from(t0) + i128::from(t2)) / 2;
        if best.is_none_or(|(_, r)| rtt < r) {
            best = Some((offset as i64, rtt));
        }
    }
    Ok(best.expect("at least one probe"))
}

/// The next message tagged `tag` within `patience` (others are dropped:
/// while one agent says hello or answers its clock probes, the others,
/// already welcomed, have nothing to say); `None` when none came.
fn next_of(
    inbox: &Receiver<Tagged<FromAgent>>,
    tag: usize,
    patience: Duration,
) -> Option<Incoming<FromAgent>> {
    let deadline = Instant::now() + patience;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match inbox.recv_timeout(left) {
            Ok((t, m)) if t == tag => return Some(m),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

/// The warning for the agents (named) whose build is not `this`.
fn builds_differ(this: &Build, agents: &[(String, &Build)]) -> Option<Warning> {
    let others: Vec<String> = agents
        .iter()
        .filter(|(_, b)| *b != this)
        .map(|(name, b)| format!("{name} is {b}"))
        .collect();
    (!others.is_empty()).then(|| Warning::AgentBuildsDiffer {
        controller: this.to_string(),
        agents: others,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Agent 1 died; the controller then stopped agent 0: agent 1 leads.
    #[test]
    fn the_agent_that_failed_first_is_named_first() {
        let merged = "agent 0 (segment 0/2, host h, pid 1) is incomplete: stopped by the \
                      controller; agent 1 (segment 1/2, host h, pid 2) is incomplete: agent \
                      1/2 on h died or stopped reporting (closed)";
        let led = lead_with_agent(merged, 1);
        assert!(
            led.starts_with("agent 1 (segment 1/2, host h, pid 2) is incomplete: agent 1/2"),
            "{led}"
        );
        assert!(
            led.ends_with("is incomplete: stopped by the controller"),
            "{led}"
        );
        assert_eq!(lead_with_agent(merged, 0), merged);
        assert_eq!(lead_with_agent(merged, 5), merged);
    }

    #[test]
    fn another_build_of_the_same_protocol_is_a_warning_naming_it() {
        let this = Build {
            version: "0.1.0".into(),
            commit: "a".repeat(40),
            dirty: false,
        };
        let same = this.clone();
        let dirty = Build {
            dirty: true,
            ..this.clone()
        };
        let other = Build {
            commit: "b".repeat(40),
            ..this.clone()
        };
        let named = |b| vec![("agent 0/2 on h1 (pid 1)".to_string(), b)];
        assert_eq!(builds_differ(&this, &named(&same)), None);
        let w = builds_differ(&this, &named(&other)).expect("another commit");
        assert_eq!(w.code(), "agent_builds_differ");
        let text = w.to_string();
        assert!(
            text.contains("controller (stackbench 0.1.0, commit aaaaaaaaaaaa)")
                && text
                    .contains("agent 0/2 on h1 (pid 1) is stackbench 0.1.0, commit bbbbbbbbbbbb"),
            "{text}"
        );
        let w = builds_differ(&this, &named(&dirty)).expect("the same commit, dirty");
        assert!(w.to_string().contains("commit aaaaaaaaaaaa, dirty"), "{w}");
    }
}
