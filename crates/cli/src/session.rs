//! One measurement session: place the sides on CPUs, start the responder
//! process unless a target is given, run every workload (with repetitions),
//! collect warnings, and return the record. Shared by `run` and `study`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use stackbench_engine::affinity::{current_cpus, format_cpu_list, pin_current_thread};
use stackbench_engine::{ControlClient, RunConfig};
use stackbench_metrics::stats::Iterations;
use stackbench_metrics::{RunRecord, RunSettings, SCHEMA_VERSION};
use stackbench_model::{SocketOptions, Workload};
use stackbench_results::env::Environment;
use stackbench_results::store::{Labels, Store};
use stackbench_results::study::StudyStep;

use crate::exit::usage;
use crate::spawn::SpawnedResponder;
use crate::{quality, repeat};

/// Set by Ctrl-C; the run ends early and prints what it measured.
static STOP: AtomicBool = AtomicBool::new(false);

/// Everything a session needs, resolved and immutable.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub workloads: Vec<Workload>,
    pub duration: Option<Duration>,
    pub warmup: Duration,
    pub transactions: Option<u64>,
    pub threads: usize,
    pub server_threads: usize,
    pub client_cpus: Vec<usize>,
    /// CPUs of the responder process started here (ignored with a target).
    pub server_cpus: Vec<usize>,
    pub target: Option<String>,
    pub ipv6: bool,
    pub socket: SocketOptions,
    pub spin: bool,
    pub iterations: Iterations,
    /// Print the placement line on stderr.
    pub announce: bool,
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
    let available = match AVAILABLE.get() {
        Some(cpus) => cpus.clone(),
        None => AVAILABLE
            .get_or_init(|| current_cpus().unwrap_or_default())
            .clone(),
    };
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

/// Runs the plan and returns its record (complete or not).
pub fn execute(plan: &RunPlan) -> anyhow::Result<RunRecord> {
    if !plan.client_cpus.is_empty() {
        pin_current_thread(&plan.client_cpus).or_else(|e| usage(format!("--client-cpus: {e}")))?;
    }
    // A second installation (a study's later steps) fails harmlessly.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));
    let spawned = match &plan.target {
        Some(_) => None,
        None => {
            let listen = if plan.ipv6 { "[::1]:0" } else { "127.0.0.1:0" };
            Some(SpawnedResponder::start(
                listen,
                &plan.server_cpus,
                plan.server_threads,
            )?)
        }
    };
    let target = match (&plan.target, &spawned) {
        (Some(t), _) => t.clone(),
        (None, Some(s)) => s.addr.clone(),
        (None, None) => unreachable!("a responder was spawned when no target was given"),
    };
    let mut control = ControlClient::connect(&target).or_else(|e| usage(e.to_string()))?;
    let mut record = new_record(plan, &control, &target, spawned.is_some());
    if plan.announce {
        eprintln!(
            "stackbench: driver on CPUs {} ({} threads), responder {target} on CPUs {}",
            cpu_text(&record.settings.client_cpus),
            plan.threads,
            cpu_text(&record.settings.server_cpus)
        );
    }
    let same_host = control.target().ip().is_loopback();
    for w in quality::run_warnings(
        &record.settings.client_cpus,
        &record.settings.server_cpus,
        same_host,
    ) {
        record.warnings.push(quality::report(&w, None));
    }
    for workload in &plan.workloads {
        let cfg = RunConfig {
            workload: workload.clone(),
            duration: plan.duration,
            warmup: plan.warmup,
            transactions: plan.transactions,
            threads: plan.threads,
            client_cpus: plan.client_cpus.clone(),
            socket: plan.socket,
            spin: plan.spin,
        };
        let outcome = repeat::run_repeated(&mut control, &cfg, &plan.iterations, &STOP);
        for class in &outcome.classes {
            for w in quality::class_warnings(class, plan.threads as u32) {
                record
                    .warnings
                    .push(quality::report(&w, Some(&class.notation)));
            }
        }
        record.classes.extend(outcome.classes);
        if !outcome.complete {
            record.complete = false;
            record.incomplete_reason = outcome.incomplete_reason;
            break;
        }
    }
    Ok(record)
}

fn new_record(plan: &RunPlan, control: &ControlClient, target: &str, spawned: bool) -> RunRecord {
    let settings = RunSettings {
        duration_s: plan.duration.map_or(0.0, |d| d.as_secs_f64()),
        warmup_s: plan.warmup.as_secs_f64(),
        transactions: plan.transactions,
        client_threads: plan.threads as u32,
        server_threads: Some(control.server_threads),
        client_cpus: plan.client_cpus.clone(),
        server_cpus: if control.server_cpus.is_empty() && spawned {
            plan.server_cpus.clone()
        } else {
            control.server_cpus.clone()
        },
        target: target.to_string(),
        responder: if spawned { "spawned" } else { "remote" }.to_string(),
        spin: plan.spin,
        socket: plan.socket,
    };
    RunRecord {
        schema_version: SCHEMA_VERSION,
        stackbench_version: env!("CARGO_PKG_VERSION").to_string(),
        complete: true,
        incomplete_reason: None,
        started_unix_s: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        settings,
        classes: Vec::new(),
        warnings: Vec::new(),
    }
}

/// Saves a record with its environment. A store failure is reported, never
/// allowed to lose the measurement, which is still printed.
pub fn store_record(store: &mut Store, record: &RunRecord, labels: &Labels) {
    let s = &record.settings;
    let env = Environment::capture(&s.target, &s.client_cpus, &s.server_cpus);
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

/// Measures one step of a study: its workload with the study's settings
/// overlaid by the variant's; defaults are those of `run`.
pub fn study_step(step: &StudyStep) -> anyhow::Result<RunRecord> {
    let s = &step.settings;
    let place = placement(
        s.client_cpus.clone(),
        s.server_cpus.clone(),
        s.target.is_some(),
    )?;
    let count_bounded = s.transactions.is_some();
    let duration = s.duration_s.map(Duration::from_secs_f64);
    let duration = duration.or((!count_bounded).then_some(Duration::from_secs(10)));
    let warmup = s.warmup_s.map(Duration::from_secs_f64);
    let warmup = warmup.unwrap_or(if count_bounded {
        Duration::ZERO
    } else {
        Duration::from_secs(2)
    });
    let plan = RunPlan {
        workloads: vec![step.workload.clone()],
        duration,
        warmup,
        transactions: s.transactions,
        threads: s.threads.map_or(place.client.len().max(1), |t| t as usize),
        server_threads: s
            .server_threads
            .map_or(place.server.len().max(1), |t| t as usize),
        client_cpus: place.client,
        server_cpus: place.server,
        target: s.target.clone(),
        ipv6: false,
        socket: s.socket_options(),
        spin: s.spin.unwrap_or(false),
        iterations: Iterations::repeat(1).expect("one repetition is valid"),
        announce: false,
    };
    execute(&plan)
}
