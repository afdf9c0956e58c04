//! A run resolved: the one place run-time defaults are decided (window,
//! warm-up, placement, threads, repetitions, seed) and settings that exclude
//! each other are refused, for `run`, `study`, sweeps and the max-rate search
//! alike. Pure but for reading this process's CPU affinity and, for kTLS, the
//! kernel's support; nothing here opens a socket.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use stackbench_engine::affinity::current_cpus;
use stackbench_engine::{limits, sockopt, transport, PacingConfig};
use stackbench_metrics::stats::Iterations;
use stackbench_model::settings::{
    CpuList, IterationBounds, Launcher, RunSettings, Secs, Text, TlsMode,
};
use stackbench_model::{TlsParams, Transport, Workload};

use crate::error::{input, RunError};
use crate::lab_run::LabRun;

/// What `run` measures when given no workload (the README's main job): a
/// small study, [`fill_window`]'s 5 s per workload.
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
    pub(crate) fn threads(&self) -> usize {
        self.settings.threads.unwrap_or(1) as usize
    }

    pub(crate) fn cpus(list: &Option<CpuList>) -> Vec<usize> {
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
) -> Result<RunPlan, RunError> {
    fill_window(&mut s, default_study);
    if s.ipv6 && s.target.is_some() {
        return input("ipv6 and target exclude each other: the target's address decides the family; drop ipv6");
    }
    s.check_combination()
        .or_else(|e| input(format!("{}: {}", e.name, e.message)))?;
    check_pacing(&s, &workloads)?;
    sockopt::check_priority(s.priority.as_ref(), &workloads, s.transport).or_else(input)?;
    if let Some(p) = tls_params(&s).or_else(input)? {
        transport::tls_acct::check_rekey(p.version, s.rekey.0, &workloads).or_else(input)?;
        // Stored resolved: the version the cipher implies, or 1.3.
        s.tls_version = Some(p.version);
    }
    s.seed = s.seed.or_else(|| Some(random_seed()));
    let iterations = iterations(&s)?;
    if s.kernel.is_guest() {
        return guest_plan(s, workloads, iterations, announce);
    }
    let lab = crate::lab_run::resolve(&mut s)?;
    resolve_agents(&mut s, &workloads, lab.as_ref())?;
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

/// How many agents (driver processes) the run is split over: as given, or,
/// for the local launcher, as many as keep each agent (and the responder
/// process it drives) within 90% of what one process may open. Every agent
/// must get at least one client of every class. Left `None` when one
/// process holds the run and no agent was asked for: it then runs in this
/// process (`--agents 1` runs it in one agent process, which is how the
/// controller's own overhead is measured). In a lab run the agents are
/// started here, each inside one of the hosts `lab_from` lists.
fn resolve_agents(
    s: &mut RunSettings,
    workloads: &[Workload],
    lab: Option<&LabRun>,
) -> Result<(), RunError> {
    let hosts = lab.map_or(1, |l| l.drivers.len());
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
            1 => return Ok(()),
            n => n,
        },
        (None, other) => {
            return input(format!(
                "launcher {}: give the number of agents it starts, e.g. --agents 4",
                other.name()
            ))
        }
    };
    s.agents = Some(n);
    if lab.is_some() && s.launcher != Launcher::Local {
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
    if lab.is_some() && s.agent_listen.is_some() {
        return input(
            "agent_listen with a lab: the controller listens in host lab_to, where the \
             agents in the lab_from hosts reach it; drop agent_listen",
        );
    }
    check_agents_fit(n, workloads)
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
fn iterations(s: &RunSettings) -> Result<Iterations, RunError> {
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
) -> Result<Placement, RunError> {
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
        return Err(RunError::Runtime(
            "cannot read this process's CPU affinity".into(),
        ));
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

/// A step on another kernel: what depends on the machine (placement,
/// threads, the lab's namespaces, the kernel's features) is resolved by the
/// guest, which runs the step whole ([`crate::guest_step`]); here only what
/// the files name is checked, so a typo costs no boot.
fn guest_plan(
    s: RunSettings,
    workloads: Vec<Workload>,
    iterations: Iterations,
    announce: bool,
) -> Result<RunPlan, RunError> {
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
pub(crate) fn tls_params(s: &RunSettings) -> Result<Option<TlsParams>, String> {
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

    /// A remote target needs no CPU affinity read; the window defaults and
    /// the seed are decided here once and stored.
    #[test]
    fn resolution_decides_the_window_warm_up_and_seed() {
        let remote = [("target", "192.0.2.1:12870")];
        let w = || vec!["RR1(1B/1B)".parse().unwrap()];
        let run = resolve(settings(&remote), w(), false, false).unwrap();
        let secs = |d: Option<Secs>| d.map(|d| d.0.as_secs());
        assert_eq!(secs(run.settings.duration), Some(10));
        assert_eq!(secs(run.settings.warmup), Some(2));
        assert!(run.settings.seed.is_some());
        assert_eq!(
            run.settings.server_threads, None,
            "a remote responder says its own"
        );
        assert_eq!(run.iterations.max, 1);
        let study = resolve(settings(&remote), w(), true, false).unwrap();
        assert_eq!(secs(study.settings.duration), Some(5));
        assert_eq!(secs(study.settings.warmup), Some(1));
        let counted = [("target", "192.0.2.1:12870"), ("transactions", "100")];
        let counted = resolve(settings(&counted), w(), false, false).unwrap();
        assert_eq!(counted.settings.duration, None);
        assert_eq!(secs(counted.settings.warmup), Some(0));
        let seeded = [("target", "192.0.2.1:12870"), ("seed", "7")];
        assert_eq!(
            resolve(settings(&seeded), w(), false, false)
                .unwrap()
                .settings
                .seed,
            Some(7)
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
        let plan = resolve(settings(&[kernel]), w, false, false).unwrap();
        assert_eq!(
            (plan.settings.client_cpus, plan.settings.threads),
            (None, None)
        );
        assert!(plan.lab.is_none());
    }

    #[test]
    fn a_remote_target_places_only_the_driver() {
        let p = placement(Some(vec![3]), Some(vec![1]), true).unwrap();
        assert_eq!((p.client, p.server), (vec![3], Vec::<usize>::new()));
        let local = placement(None, None, false).unwrap();
        assert!(!local.client.is_empty() && !local.server.is_empty());
        // With two or more CPUs the halves are disjoint.
        if local.client.len() + local.server.len() >= 2 && local.client != local.server {
            assert!(local.client.iter().all(|c| !local.server.contains(c)));
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
        }
    }

    #[test]
    fn agents_in_lab_hosts_need_one_per_host_and_start_here() {
        let w: Vec<Workload> = vec!["RR8(64B/64B)".parse().unwrap()];
        let four = four_driver_lab(&["d1", "d2", "d3", "d4"]);
        let refused = |pairs: &[(&str, &str)], lab: &LabRun| match resolve_agents(
            &mut settings(pairs),
            &w,
            Some(lab),
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
        let mut ok = settings(&[("agents", "4")]);
        resolve_agents(&mut ok, &w, Some(&four)).unwrap();
        assert_eq!(ok.agents, Some(4));
        // One host: no agents keeps the run in this process, as before.
        let one = four_driver_lab(&["d2"]);
        let mut single = settings(&[]);
        resolve_agents(&mut single, &w, Some(&one)).unwrap();
        assert_eq!(single.agents, None);
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
