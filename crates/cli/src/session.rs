//! One measurement session: place the sides on CPUs, start the responder
//! process unless a target is given, run every workload (with repetitions),
//! collect warnings, and return the record. Shared by `run` and `study`.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stackbench_engine::affinity::{current_cpus, format_cpu_list, pin_current_thread};
use stackbench_engine::{limits, sockopt, transport, ControlClient, PacingConfig, RunConfig};
use stackbench_metrics::record::CpuAttribution;
use stackbench_metrics::stats::Iterations;
use stackbench_metrics::{MixCpu, RunRecord, SCHEMA_VERSION};
use stackbench_model::settings::{CpuList, IterationBounds, RunSettings, Secs, Text, TlsMode};
use stackbench_model::{TlsParams, Transport, Workload};
use stackbench_results::env::Environment;
use stackbench_results::store::{Labels, Store};
use stackbench_results::study::StudyStep;

use crate::exit::usage;
use crate::lab_run::LabRun;
use crate::spawn::SpawnedResponder;
use crate::{quality, repeat};

/// Set by Ctrl-C; the run ends early and prints what it measured.
static STOP: AtomicBool = AtomicBool::new(false);

/// Everything a session needs, resolved and immutable.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub workloads: Vec<Workload>,
    /// Every setting, with the run-time defaults filled in (see [`resolve`]).
    pub settings: RunSettings,
    pub iterations: Iterations,
    /// Print the placement line on stderr.
    pub announce: bool,
    /// The lab the run crosses (`lab`, `lab_from`, `lab_to`), resolved.
    pub lab: Option<LabRun>,
}

/// What the driver runs with: CPUs, threads and the window of the settings.
impl RunPlan {
    fn threads(&self) -> usize {
        self.settings.threads.unwrap_or(1) as usize
    }

    fn cpus(list: &Option<CpuList>) -> Vec<usize> {
        list.as_ref().map(|c| c.0.clone()).unwrap_or_default()
    }
}

/// Fills in the default window and warm-up (see [`resolve`]); also what a
/// study's time estimate counts per step.
pub fn fill_window(s: &mut RunSettings, default_study: bool) {
    let secs = |n| Some(Secs(Duration::from_secs(n)));
    let counted = s.transactions.is_some();
    if s.duration.is_none() && !counted {
        s.duration = secs(if default_study { 5 } else { 10 });
    }
    if s.warmup.is_none() {
        s.warmup = Some(Secs(match (counted, default_study) {
            (true, _) => Duration::ZERO,
            (false, true) => Duration::from_secs(1),
            (false, false) => Duration::from_secs(2),
        }));
    }
}

/// The one place run-time defaults are decided, for `run` and `study` alike:
/// the window (10 s, 5 s for the default study, none when count-bounded), the
/// warm-up (2 s, 1 s for the default study, 0 when count-bounded), placement
/// (disjoint CPU halves), threads (one per CPU of the side), repetitions and
/// the seed of think-time and arrival draws (random, stored so that the run
/// can be repeated with `--seed`). Settings that exclude each other are
/// refused here, whatever their source.
pub fn resolve(
    mut s: RunSettings,
    workloads: Vec<Workload>,
    default_study: bool,
    announce: bool,
) -> anyhow::Result<RunPlan> {
    fill_window(&mut s, default_study);
    if s.ipv6 && s.target.is_some() {
        return usage("ipv6 and target exclude each other: the target's address decides the family; drop ipv6");
    }
    s.check_combination()
        .or_else(|e| usage(format!("{}: {}", e.name, e.message)))?;
    check_pacing(&s, &workloads)?;
    sockopt::check_priority(s.priority.as_ref(), &workloads, s.transport).or_else(usage)?;
    if let Some(p) = tls_params(&s).or_else(usage)? {
        transport::tls_acct::check_rekey(p.version, s.rekey.0, &workloads).or_else(usage)?;
        // Stored resolved: the version the cipher implies, or 1.3.
        s.tls_version = Some(p.version);
    }
    s.seed = s.seed.or_else(|| Some(random_seed()));
    let iterations = iterations(&s)?;
    if s.kernel.is_guest() {
        return guest_plan(s, workloads, iterations, announce);
    }
    let lab = crate::lab_run::resolve(&mut s)?;
    let remote = s.target.is_some();
    let place = placement(
        s.client_cpus.take().map(|c| c.0),
        s.server_cpus.take().map(|c| c.0),
        remote,
    )?;
    s.threads = s.threads.or(Some(place.client.len().max(1) as u32));
    if !remote {
        s.server_threads = s.server_threads.or(Some(place.server.len().max(1) as u32));
    }
    s.client_cpus = (!place.client.is_empty()).then_some(CpuList(place.client));
    s.server_cpus = (!place.server.is_empty()).then_some(CpuList(place.server));
    Ok(RunPlan {
        workloads,
        settings: s,
        iterations,
        announce,
        lab,
    })
}

/// Pacing settings that contradict each other or apply to nothing.
fn check_pacing(s: &RunSettings, workloads: &[Workload]) -> anyhow::Result<()> {
    if s.think.is_some() && s.rate.is_some() {
        return usage(
            "think and rate exclude each other: a class is paced by a think time or by an \
             offered rate; give one, or pace classes apart in the notation (RR8K(100B/800B)@30s+RR10(1kB/1kB)@5000/s)",
        );
    }
    let open_class = workloads
        .iter()
        .flat_map(|w| &w.classes)
        .any(|c| matches!(c.pacing, Some(stackbench_model::Pacing::Rate(_))));
    if s.arrivals != stackbench_model::Arrivals::Constant && s.rate.is_none() && !open_class {
        return usage(
            "arrivals applies to open-loop classes: give --rate (e.g. --rate 5000/s) or a class \
             rate such as RR10(1kB/1kB)@5000/s",
        );
    }
    Ok(())
}

/// A fresh seed (32 bits, easy to retype) from the standard library's
/// per-process random hasher keys.
fn random_seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(SystemTime::now()) & 0xFFFF_FFFF
}

/// The run-level pacing settings the engine needs.
pub fn pacing_config(s: &RunSettings) -> PacingConfig {
    PacingConfig {
        think: s.think,
        rate: s.rate,
        arrivals: s.arrivals,
        ramp: s.ramp,
        seed: s.seed.unwrap_or(0),
    }
}

/// The repetition controller of `repeat`, `confidence` and `iterations`.
fn iterations(s: &RunSettings) -> anyhow::Result<Iterations> {
    let it = match (s.repeat, s.confidence, s.iterations) {
        (Some(_), Some(_), _) => {
            return usage("repeat and confidence exclude each other: use one");
        }
        (_, None, Some(_)) => {
            return usage("iterations needs confidence LEVEL,WIDTH, e.g. --confidence 99,5");
        }
        (repeat, None, None) => Iterations::repeat(repeat.unwrap_or(1)),
        (_, Some(c), bounds) => {
            let b = bounds.unwrap_or(IterationBounds { min: 3, max: 30 });
            Iterations::confidence(c.level_pct, c.width_pct, b.min, b.max)
        }
    };
    it.or_else(|e| usage(format!("repetitions: {e}")))
}

/// Where each side runs.
pub struct Placement {
    pub client: Vec<usize>,
    pub server: Vec<usize>,
}

/// Default placement: with two or more CPUs, disjoint halves (netperf
/// `-T 0,1` on a 2-CPU machine); with one, both sides share it, which the CPU
/// accounting warns about. Against a remote target only the driver is placed.
pub fn placement(
    client: Option<Vec<usize>>,
    server: Option<Vec<usize>>,
    remote: bool,
) -> anyhow::Result<Placement> {
    if remote {
        return Ok(Placement {
            client: client.unwrap_or_default(),
            server: Vec::new(),
        });
    }
    // The CPUs the process was started with: later steps of a study run after
    // the main thread has been pinned to the driver's set.
    static AVAILABLE: OnceLock<Vec<usize>> = OnceLock::new();
    let available = AVAILABLE
        .get_or_init(|| current_cpus().unwrap_or_default())
        .clone();
    if available.is_empty() {
        anyhow::bail!("cannot read this process's CPU affinity");
    }
    let (lo, hi) = match available.len() {
        0 | 1 => (available.clone(), available.clone()),
        n => (available[..n / 2].to_vec(), available[n / 2..].to_vec()),
    };
    Ok(Placement {
        client: client.unwrap_or(lo),
        server: server.unwrap_or(hi),
    })
}

/// An open responder and control connection, with the run-level warnings
/// measured when it was opened (the 1 s idle baseline among them).
struct Session {
    /// What decides the responder and the measured CPUs: a plan with the same
    /// key reuses the session.
    key: String,
    _spawned: Option<SpawnedResponder>,
    target: String,
    spawned: bool,
    control: ControlClient,
    warnings: Vec<stackbench_metrics::WarningRecord>,
    /// The idle baseline's busy % of the driver's CPUs when it showed
    /// background load ([`quality::RunChecks`]).
    driver_background_pct: Option<f64>,
}

/// The sessions of one command: consecutive plans that need the same responder
/// and CPUs (the points of a `--sweep`, the steps of `--find-max-rate` or of a
/// study) share one responder process, control connection and idle baseline
/// instead of paying for them per run.
#[derive(Default)]
pub struct Sessions {
    open: Option<Session>,
}

impl Sessions {
    /// Runs the plan and returns its record (complete or not).
    pub fn execute(&mut self, plan: &RunPlan) -> anyhow::Result<RunRecord> {
        if plan.settings.kernel.is_guest() {
            self.open = None; // the guest starts its own responder
            return crate::guest_step::execute(plan);
        }
        let s = &plan.settings;
        let client_cpus = RunPlan::cpus(&s.client_cpus);
        if !client_cpus.is_empty() {
            pin_current_thread(&client_cpus).or_else(|e| usage(format!("--client-cpus: {e}")))?;
        }
        preflight(plan)?;
        if let Some(lab) = &plan.lab {
            lab.up()?; // the step's overrides; in place, the responder stays
        }
        let key = session_key(s);
        if self.open.as_ref().is_none_or(|o| o.key != key) {
            self.open = None; // the old responder stops before a new one starts
            self.open = Some(open_session(plan, key)?);
        }
        let session = self.open.as_mut().expect("opened above");
        let mut record = new_record(plan, &session.control, &session.target, session.spawned);
        if let Some(w) = quality::transport_options(&mut record.settings) {
            record.warnings.push(quality::report(&w, None));
        }
        let configs: Vec<RunConfig> = plan.workloads.iter().map(|w| run_config(plan, w)).collect();
        if let Some(w) = quality::io_fallback(&mut record.settings, &configs) {
            record.warnings.push(quality::report(&w, None));
        }
        record.warnings.extend(session.warnings.iter().cloned());
        match &plan.lab {
            None => run_workloads(plan, session, &mut record),
            Some(lab) => {
                let before = lab.read();
                // The driver's threads are made in host A's namespace.
                lab.in_from(|| run_workloads(plan, session, &mut record))?;
                let (env, warning) = lab.environment(before, lab.read());
                record.warnings.extend(warning);
                record.lab = Some(env);
            }
        }
        if !record.complete {
            self.open = None; // a lost responder or an interrupt: start afresh
        }
        Ok(record)
    }

    /// Measures one step of a study: its workload with the study's settings
    /// overlaid by the variant's and the sweep point's, resolved as `run` does.
    pub fn study_step(&mut self, step: &StudyStep) -> anyhow::Result<RunRecord> {
        let plan = resolve(
            step.settings.clone(),
            vec![step.workload.clone()],
            false,
            false,
        )?;
        self.execute(&plan)
    }
}

/// A step on another kernel: what depends on the machine (placement,
/// threads, the lab's namespaces, the kernel's features) is resolved by the
/// guest, which runs the step whole ([`crate::guest_step`]); here only what
/// the files name is checked, so a typo costs no boot.
fn guest_plan(
    s: RunSettings,
    workloads: Vec<Workload>,
    iterations: Iterations,
    announce: bool,
) -> anyhow::Result<RunPlan> {
    if s.target.is_some() {
        return usage(
            "kernel and target exclude each other: a step on another kernel runs whole in \
             its guest (driver and responder); drop target, or kernel",
        );
    }
    for (name, path) in [("lab", &s.lab), ("cert", &s.cert), ("key", &s.key)] {
        if let Some(Text(p)) = path {
            if !std::path::Path::new(p).is_file() {
                return usage(format!(
                    "{name} {p}: no such file (with kernel, it is copied into the guest)"
                ));
            }
        }
    }
    Ok(RunPlan {
        workloads,
        settings: s,
        iterations,
        announce,
        lab: None,
    })
}

/// The settings that decide the responder process and the CPUs measured.
pub fn session_key(s: &RunSettings) -> String {
    [
        "target",
        "lab",
        "lab_from",
        "lab_to",
        "ipv6",
        "server_cpus",
        "server_threads",
        "client_cpus",
    ]
    .iter()
    .map(|k| s.text_of(k).unwrap_or_default())
    .collect::<Vec<_>>()
    .join(" ")
}

/// Starts (or reaches) the responder, connects the control channel and takes
/// the run-level warnings (shared CPUs, governors, the idle baseline).
fn open_session(plan: &RunPlan, key: String) -> anyhow::Result<Session> {
    // A second installation (a study's later steps) fails harmlessly.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));
    let (spawned, target) = start_responder(&plan.settings, plan.lab.as_ref())?;
    let connect = || ControlClient::connect(&target).or_else(|e| usage(e.to_string()));
    let control = match &plan.lab {
        None => connect()?,
        Some(lab) => lab.in_from(connect)??, // the control socket is A's
    };
    let record = new_record(plan, &control, &target, spawned.is_some());
    let (client, server) = (
        RunPlan::cpus(&record.settings.client_cpus),
        RunPlan::cpus(&record.settings.server_cpus),
    );
    if plan.announce {
        eprintln!(
            "stackbench: driver on CPUs {} ({} threads), responder {target} on CPUs {}",
            cpu_text(&client),
            plan.threads(),
            cpu_text(&server)
        );
    }
    // A lab's hosts are namespaces of this machine: both sides share its CPUs.
    let same_host = plan.lab.is_some() || control.target().ip().is_loopback();
    let checks = quality::run_warnings(&client, &server, same_host);
    let warnings = checks
        .warnings
        .iter()
        .map(|w| quality::report(w, None))
        .collect();
    Ok(Session {
        key,
        spawned: spawned.is_some(),
        _spawned: spawned,
        target,
        control,
        warnings,
        driver_background_pct: checks.driver_background_pct,
    })
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
        if s.rekey.0 > 0 && s.tls_mode == TlsMode::Sidecar {
            // The proxies would re-key, but their reports carry no counts:
            // a stored `rekeys` of 0 would be wrong.
            return Err(
                "rekey with tls_mode sidecar: the proxies' key updates are not \
                        counted yet: use --tls-mode inline or drop --rekey"
                    .to_string(),
            );
        }
        let p = TlsParams {
            resume_ratio: s.resume_ratio.0,
            mode: s.tls_mode,
            rekey_bytes: s.rekey.0,
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

/// Refuses, before a responder is started, what cannot work: a transport the
/// target or this kernel cannot carry (unix to another host, mptcp without
/// MPTCP), or more connections than the file-descriptor limit allows.
fn preflight(plan: &RunPlan) -> anyhow::Result<()> {
    let s = &plan.settings;
    let target = match (&plan.lab, &s.target) {
        (Some(lab), _) => Some(SocketAddr::new(lab.responder_ip, 0)),
        // An unresolvable target gets its error from the control connection.
        (None, Some(t)) => t.0.to_socket_addrs().ok().and_then(|mut a| a.next()),
        (None, None) if s.ipv6 => Some(SocketAddr::from((Ipv6Addr::LOCALHOST, 0))),
        (None, None) => Some(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))),
    };
    if let Some(addr) = target {
        transport::row(s.transport)
            .check_usable(addr)
            .or_else(usage)?;
    }
    let most = plan.workloads.iter().map(Workload::total_clients).max();
    limits::reserve_fds(most.unwrap_or(0)).or_else(usage)?;
    Ok(())
}

/// The responder to drive: the given target, or a `stackbench serve` child
/// started on loopback, or in host B of a lab run (returned so it lives as
/// long as the run).
fn start_responder(
    s: &RunSettings,
    lab: Option<&LabRun>,
) -> anyhow::Result<(Option<SpawnedResponder>, String)> {
    if let Some(t) = &s.target {
        return Ok((None, t.0.clone()));
    }
    let listen = match lab {
        Some(lab) => lab.listen(),
        None if s.ipv6 => "[::1]:0".to_string(),
        None => "127.0.0.1:0".to_string(),
    };
    // Spawned from this (long-lived) thread: the child's PR_SET_PDEATHSIG
    // fires when the thread that forked it ends.
    let netns = lab.map(|l| l.netns_file(&l.path.to));
    let spawned = SpawnedResponder::start(
        &listen,
        &RunPlan::cpus(&s.server_cpus),
        s.server_threads.unwrap_or(1) as usize,
        netns.as_deref(),
    )?;
    let addr = spawned.addr.clone();
    Ok((Some(spawned), addr))
}

/// What the engine runs for one workload of the plan.
fn run_config(plan: &RunPlan, workload: &Workload) -> RunConfig {
    let s = &plan.settings;
    RunConfig {
        workload: workload.clone(),
        duration: s.duration.map(|d| d.0),
        warmup: s.warmup.map_or(Duration::ZERO, |d| d.0),
        transactions: s.transactions,
        threads: plan.threads(),
        class_workers: s.class_workers,
        client_cpus: RunPlan::cpus(&s.client_cpus),
        socket: s.socket_options(),
        spin: s.spin,
        transport: s.transport,
        tls: tls_params(s).ok().flatten(),
        priority: s.priority.clone(),
        io: s.io,
        pacing: pacing_config(s),
        path: plan
            .lab
            .as_ref()
            .map(LabRun::path_floor)
            .unwrap_or_default(),
    }
}

/// Runs every workload (with its repetitions) into `record`, with each
/// class's warnings; stops at the first incomplete one.
fn run_workloads(plan: &RunPlan, session: &mut Session, record: &mut RunRecord) {
    for workload in &plan.workloads {
        let cfg = RunConfig {
            // The effective backend (`quality::io_fallback`), for every workload.
            io: record.settings.io,
            ..run_config(plan, workload)
        };
        let outcome = repeat::run_repeated(&mut session.control, &cfg, &plan.iterations, &STOP);
        let mix_name = workload.to_string();
        let mut said_for_mix: Vec<(&'static str, String)> = Vec::new();
        for class in &outcome.classes {
            let threads = plan.threads() as u32;
            let background = session.driver_background_pct;
            let shared = class
                .cpu
                .as_ref()
                .is_some_and(|c| c.attribution == CpuAttribution::Mix);
            for w in quality::class_warnings(class, threads, plan.settings.spin, background) {
                // A mix on shared workers: every class holds the mix's CPU,
                // so its CPU warnings are the mix's, said once under its name.
                if shared && quality::is_mix_wide(&w) {
                    let key = (w.code(), w.to_string());
                    if !said_for_mix.contains(&key) {
                        said_for_mix.push(key);
                        record.warnings.push(quality::report(&w, Some(&mix_name)));
                    }
                    continue;
                }
                record
                    .warnings
                    .push(quality::report(&w, Some(&class.notation)));
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
                        Some(plan.threads() as u32),
                        session.driver_background_pct,
                    )
                });
            if let Some(w) = saturated {
                record.warnings.push(quality::report(&w, None));
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

fn new_record(plan: &RunPlan, control: &ControlClient, target: &str, spawned: bool) -> RunRecord {
    let mut settings = plan.settings.clone();
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
        lab: None,
        environment: None,
    }
}

/// Saves a record with its environment. A store failure is reported, never
/// allowed to lose the measurement, which is still printed.
pub fn store_record(store: &mut Store, record: &RunRecord, labels: &Labels) {
    let env = environment_of(record);
    match store.save(record, labels, &env) {
        Ok(id) => eprintln!("stackbench: stored as run {id}"),
        Err(e) => eprintln!("stackbench: warning: the run was not stored: {e}"),
    }
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
            return env; // measured in a guest (crate::guest_step)
        }
    }
    let s = &record.settings;
    let target = s.target.as_ref().map_or("", |t| t.0.as_str());
    let mut env = Environment::capture(
        target,
        &RunPlan::cpus(&s.client_cpus),
        &RunPlan::cpus(&s.server_cpus),
    );
    if let Some(lab) = &record.lab {
        // The route to the lab's address is in host A, not here: the lab's
        // own read-back describes the interfaces.
        env.interface = None;
        env.lab = Some(lab.clone());
    }
    env
}
