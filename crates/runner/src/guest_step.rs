//! Steps on another kernel, the host's side (`kernel` = a Debian kernel package or a vmlinuz
//! path). On Linux the network stack is the kernel, so a step measured on
//! another kernel runs *whole* inside a guest VM booted with it: driver,
//! responder, and a lab's namespaces and links (whose kTLS, ESP, netem, fq
//! and AF_SMC come from the guest's kernel, not this machine's). The guest
//! runs the hidden `__guest-step` subcommand on the step's settings (with
//! `kernel = host`), which resolves and executes the step exactly as `run`
//! does there and prints the record and the environment it measured; both
//! come back over the guest's serial port (`stackbench-guest`).
//!
//! The stored environment is the guest's (its kernel release, CPUs,
//! sysctls, lab read-back) plus `guest` (kernel spec, accelerator, whether
//! the CPU was emulated, the host's kernel). Under TCG every timing is the
//! emulator's: the record carries an `emulated_guest` warning and compare and
//! the report give no performance verdict on it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use stackbench_guest::{Job, JobOutput};
use stackbench_model::settings::{GuestAccel, KernelSpec, RunSettings, SettingValue, Text};
use stackbench_model::{Transport, Workload};
use stackbench_record::{
    record_from_json, GuestAdapter, GuestEnvironment, RunRecord, WarningRecord,
};
use stackbench_results::env::Environment;

use crate::error::{input, RunError};
use crate::guest_pair::{PairStep, BYE_PORT, PEER_SUBCOMMAND, SMC_R_ARG};
use crate::observe::Observer;
pub use crate::resolve::guest_spec;
use crate::resolve::{GuestPeer, GuestRun, ResolvedRun};

/// The hidden subcommand the guest's init runs (outside clap and its help).
pub const STEP_SUBCOMMAND: &str = "__guest-step";
/// Where the step file lands in the guest.
const STEP_FILE: &str = "/stackbench/step.json";
/// Seconds a TCG guest needs beyond the windows: boot (~4 s), the
/// responder's start and its RSA key (seconds when emulated), the idle
/// baseline (1 s) per responder, and the read-back — measured ~15 s here for
/// a one-workload step; four times that before the step counts as hung.
const GUEST_OVERHEAD_S: u64 = 60;

/// One step, as the guest's `__guest-step` reads it.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StepFile {
    pub(crate) settings: RunSettings,
    /// Canonical notation of each workload (the run's, already resolved).
    pub(crate) workloads: Vec<String>,
    /// The driver's guest of a pair: where its responder is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pair: Option<PairStep>,
}

/// What `__guest-step` prints on stdout.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct StepResult {
    pub(crate) record: serde_json::Value,
    pub(crate) environment: Environment,
    /// The driver's guest of a pair: its adapter on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) adapter: Option<GuestAdapter>,
}

/// Runs `run` in `guest` (its site) and returns the record, whose stored
/// environment is the guest's. The guest gets the settings the record
/// stores, which it resolves again on its own machine.
pub fn execute(
    run: &ResolvedRun,
    guest: &GuestRun,
    obs: &mut dyn Observer,
) -> Result<RunRecord, RunError> {
    if let Some(peer) = &guest.peer {
        return execute_pair(run, guest, peer, obs);
    }
    let s = &run.stored_settings();
    let kernel = guest.kernel.text();
    let (inner, mut files) = guest_settings(s);
    let step = StepFile {
        settings: inner,
        workloads: run.workloads.iter().map(Workload::to_string).collect(),
        pair: None,
    };
    let mut step_file = tempfile::NamedTempFile::new()?;
    serde_json::to_writer(&mut step_file, &step)?;
    step_file.flush()?;
    files.push((step_file.path().to_path_buf(), STEP_FILE.to_string()));
    let spec = &guest.spec;
    let job = Job {
        args: vec![STEP_SUBCOMMAND.to_string(), STEP_FILE.to_string()],
        files,
        timeout: step_timeout(run),
    };
    if run.announce {
        obs.note(&format!(
            "kernel {kernel}: booting a guest ({} vCPUs, {} MiB) for the step",
            spec.vcpus, spec.memory_mib
        ));
    }
    let out = stackbench_guest::run_job(spec, &job)
        .or_else(|e| input(format!("kernel {kernel}: {e}")))?;
    // The guest's progress lines, warnings and errors, as `run` prints them.
    obs.guest_stderr(&out.stderr);
    if out.status != 0 {
        return input(format!(
            "kernel {kernel}: the step failed in the guest (kernel {}, exit status {}); \
             its error is above",
            out.info.kernel_release, out.status
        ));
    }
    record_of(s, &out, None, obs)
}

/// Runs `run` on a pair: the driver in `guest`'s guest, the responder in
/// `peer`'s, over the wire between them (`stackbench_guest::run_pair`). The
/// stored environment is the driver's guest's, with the responder's guest
/// (its kernel, boot, adapter) as its `peer`.
fn execute_pair(
    run: &ResolvedRun,
    guest: &GuestRun,
    peer: &GuestPeer,
    obs: &mut dyn Observer,
) -> Result<RunRecord, RunError> {
    let s = &run.stored_settings();
    let names = format!(
        "kernel {} ↔ peer_kernel {}",
        guest.kernel.text(),
        peer.kernel.text()
    );
    let (mut inner, mut files) = guest_settings(s);
    let pair = PairStep::new(stackbench_guest::RESPONDER_ADDRESS);
    inner.peer_kernel = KernelSpec::Host;
    inner.guest_queues = 1;
    inner.target = Some(Text(pair.control.clone()));
    let step = StepFile {
        settings: inner,
        workloads: run.workloads.iter().map(Workload::to_string).collect(),
        pair: Some(pair.clone()),
    };
    let mut step_file = tempfile::NamedTempFile::new()?;
    serde_json::to_writer(&mut step_file, &step)?;
    step_file.flush()?;
    files.push((step_file.path().to_path_buf(), STEP_FILE.to_string()));
    let timeout = step_timeout(run);
    let job = Job {
        args: vec![STEP_SUBCOMMAND.to_string(), STEP_FILE.to_string()],
        files,
        timeout,
    };
    let mut peer_args = vec![
        PEER_SUBCOMMAND.to_string(),
        pair.control.clone(),
        BYE_PORT.to_string(),
    ];
    if s.transport == Transport::Smc {
        peer_args.push(SMC_R_ARG.to_string());
    }
    let responder_job = Job {
        args: peer_args,
        files: Vec::new(),
        timeout,
    };
    if run.announce {
        obs.note(&format!(
            "{names}: booting two guests ({} vCPUs, {} MiB each) joined by a virtual wire",
            guest.spec.vcpus, guest.spec.memory_mib
        ));
    }
    let out = stackbench_guest::run_pair(&guest.spec, &job, &peer.spec, &responder_job)
        .or_else(|e| input(format!("{names}: {e}")))?;
    obs.guest_stderr(&out.driver.stderr);
    let peer_env = match &out.responder {
        Ok(r) => {
            if r.status != 0 {
                obs.guest_stderr(&r.stderr);
            }
            let mut info = r.info.clone();
            info.adapter = serde_json::from_slice(&r.stdout).ok();
            info
        }
        Err(e) => {
            obs.note(&format!("warning: the responder's guest: {e}"));
            stackbench_record::GuestEnvironment {
                kernel: peer.kernel.text(),
                ..Default::default()
            }
        }
    };
    if out.driver.status != 0 {
        return input(format!(
            "{names}: the step failed in the driver's guest (kernel {}, exit status {}); \
             its error is above",
            out.driver.info.kernel_release, out.driver.status
        ));
    }
    record_of(s, &out.driver, Some(peer_env), obs)
}

/// The step's settings for the guest: `kernel = host` there, and each file
/// the step names (lab file, certificate, key) copied in at a fixed path.
fn guest_settings(s: &RunSettings) -> (RunSettings, Vec<(PathBuf, String)>) {
    let mut inner = s.clone();
    inner.kernel = KernelSpec::Host;
    let mut files = Vec::new();
    for (name, slot) in [
        ("lab.toml", &mut inner.lab),
        ("cert.pem", &mut inner.cert),
        ("key.pem", &mut inner.key),
    ] {
        if let Some(Text(path)) = slot.as_ref() {
            let guest = format!("/stackbench/{name}");
            files.push((PathBuf::from(path), guest.clone()));
            *slot = Some(Text(guest));
        }
    }
    (inner, files)
}

/// Generous: the windows and warm-ups of every workload and repetition, plus
/// the guest's fixed costs (see [`GUEST_OVERHEAD_S`]).
fn step_timeout(run: &ResolvedRun) -> Duration {
    let window = run.window.duration.unwrap_or(Duration::from_secs(60)) + run.window.warmup;
    let reps = run.iterations.max;
    let per_workload = window * reps.max(1) + Duration::from_secs(GUEST_OVERHEAD_S);
    per_workload * run.workloads.len().max(1) as u32 * 2
}

/// The guest's record with the host's view of the settings restored (the
/// kernel and the files as the user named them) and its environment made
/// the one stored.
fn record_of(
    s: &RunSettings,
    out: &JobOutput,
    peer: Option<GuestEnvironment>,
    obs: &mut dyn Observer,
) -> Result<RunRecord, RunError> {
    let result: StepResult = serde_json::from_slice::<StepResult>(&out.stdout).or_else(|e| {
        input(format!(
            "kernel {}: the guest's step printed no result ({e}); console tail:\n{}",
            s.kernel.text(),
            out.console_tail
        ))
    })?;
    let mut record =
        record_from_json(result.record).map_err(|e| RunError::runtime("the guest's record", e))?;
    let info = &out.info;
    for name in [
        "kernel",
        "guest_vcpus",
        "guest_memory",
        "peer_kernel",
        "guest_queues",
        "lab",
        "cert",
        "key",
    ] {
        let text = s.text_of(name).unwrap_or_default();
        let _ = record.settings.set(name, &text);
    }
    // The accelerator that ran, never `auto`: a record read without its
    // environment (a JSON file) still says whether it was emulated.
    record.settings.guest_accel = GuestAccel::parse(&info.accel).unwrap_or(s.guest_accel);
    let mut env = result.environment;
    if let (Some(lab), Some(Text(path))) = (env.lab.as_mut(), &s.lab) {
        lab.file = path.clone(); // the user's file, not its copy in the guest
    }
    // The pair's responder address was the guest's target, not the user's.
    record.settings.target = s.target.clone();
    // `info.kernel` is the package booted (a pattern's newest match).
    let mut info = info.clone();
    info.adapter = result.adapter.clone();
    info.peer = peer.map(Box::new);
    env.guest = Some(info.clone());
    if info.emulated {
        let w = WarningRecord {
            code: "emulated_guest".to_string(),
            message: format!(
                "measured in a guest whose CPU was emulated ({}, kernel {}): timings, rates \
                 and CPU figures are the emulator's, functional only; use a KVM guest \
                 (--guest-accel kvm where it works) or --kernel host for performance",
                info.accel, info.kernel_release
            ),
            class: None,
        };
        obs.note(&format!("warning: {}", w.message));
        record.warnings.push(w);
    }
    record.environment = Some(serde_json::to_value(&env)?);
    Ok(record)
}
