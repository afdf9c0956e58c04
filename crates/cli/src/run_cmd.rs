//! `stackbench run`: resolves the command line into run settings (raw flags →
//! immutable settings, printed and stored with the result), places the two
//! sides on CPUs, starts the responder process unless `--target` names one,
//! runs each workload in turn and prints the record.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use clap::{Args, ValueEnum};
use stackbench_engine::affinity::{
    current_cpus, format_cpu_list, parse_cpu_list, pin_current_thread,
};
use stackbench_engine::{run_workload, ControlClient, RunConfig};
use stackbench_metrics::{RunRecord, RunSettings, SCHEMA_VERSION};
use stackbench_model::duration::parse_duration;
use stackbench_model::size::parse_size;
use stackbench_model::{CrrClose, SocketOptions, Workload};

use crate::exit::{usage, INCOMPLETE, OK};
use crate::progress::ProgressLine;
use crate::quality;
use crate::spawn::SpawnedResponder;

/// The README's main job: a small study, a few seconds per workload.
pub const DEFAULT_STUDY: &[&str] = &[
    "RR1(1B/1B)",
    "RR10(4kB/4kB)",
    "CRR10(64B/8kB)",
    "STR3(1B/20MB)",
];

/// Set by Ctrl-C; the run ends early and prints what it measured.
static STOP: AtomicBool = AtomicBool::new(false);

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CrrCloseArg {
    Server,
    Client,
    Abort,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench run                                   # the default study against a local responder
  stackbench run 'RR10(4kB/4kB)' --duration 30s    # 10 clients, 4 kB each way
  stackbench run 'CRR40(64B/8kB)' --crr-close abort
  stackbench run 'STR3(1B/20MB)' 'STR3(20MB/1B)'   # GET then PUT
  stackbench run 'RR1(100B/800B)+STR10(1B/20MB)'   # a mix: classes run at once
  stackbench run 'RR1(1B/1B)' --transactions 100000 --json
  stackbench run 'RR60(4kB/4kB)' --target 127.0.0.1:12870   # against `stackbench serve`

Notation: NAME<clients>(<request>/<response>), NAME = RR | CRR | STR; clients take K (=1024);
sizes B, kB/KB/KiB, MB/MiB, GB/GiB (binary multiples).
Exit status: 0 complete, 2 usage or input error, 3 incomplete run (Ctrl-C, responder lost).")]
pub struct RunArgs {
    /// Workloads in the seeds' notation, run one after another
    /// [default: RR1(1B/1B) RR10(4kB/4kB) CRR10(64B/8kB) STR3(1B/20MB), 3 s each].
    workloads: Vec<String>,
    /// Measurement window per workload [default: 10s; 3s for the default study; none with --transactions].
    #[arg(long)]
    duration: Option<String>,
    /// Warm-up before each window, not counted [default: 2s; 1s for the default study; 0 with --transactions].
    #[arg(long)]
    warmup: Option<String>,
    /// Run exactly this many counted transactions per class.
    #[arg(long)]
    transactions: Option<u64>,
    /// Driver worker threads [default: one per driver CPU].
    #[arg(long)]
    threads: Option<usize>,
    /// A running `stackbench serve` (HOST:PORT); without it a responder process is started on loopback.
    #[arg(long)]
    target: Option<String>,
    /// Print one JSON document on stdout.
    #[arg(long)]
    json: bool,
    /// Print CSV, one row per class.
    #[arg(long, conflicts_with = "json")]
    csv: bool,
    /// CPUs for the driver [default: the first half of the available CPUs].
    #[arg(long)]
    client_cpus: Option<String>,
    /// CPUs for the started responder [default: the second half of the available CPUs].
    #[arg(long)]
    server_cpus: Option<String>,
    /// Worker threads of the started responder [default: one per server CPU].
    #[arg(long)]
    server_threads: Option<usize>,
    /// Start the local responder on IPv6 loopback (::1) instead of 127.0.0.1.
    #[arg(long, conflicts_with = "target")]
    ipv6: bool,
    /// TCP_NODELAY on every data connection (both sides).
    #[arg(long)]
    nodelay: bool,
    /// Receive whole messages: MSG_WAITALL plus SO_RCVLOWAT = message size.
    #[arg(long)]
    waitall: bool,
    /// Delayed ACK off: TCP_QUICKACK re-armed after every receive.
    #[arg(long)]
    quickack: bool,
    /// SO_SNDBUF for data sockets, e.g. 256kB [default: kernel autotuning].
    #[arg(long)]
    sndbuf: Option<String>,
    /// SO_RCVBUF for data sockets, e.g. 256kB [default: kernel autotuning].
    #[arg(long)]
    rcvbuf: Option<String>,
    /// Who closes a CRR connection first: server (TIME_WAIT on the server), client, or abort (RST, no TIME_WAIT).
    #[arg(long, value_enum, default_value = "server")]
    crr_close: CrrCloseArg,
    /// Busy-poll (epoll with zero timeout) instead of sleeping: lower latency, a full CPU per worker.
    #[arg(long)]
    spin: bool,
}

/// Where each side runs.
struct Placement {
    client: Vec<usize>,
    server: Vec<usize>,
}

fn parse_flag_duration(flag: &str, value: &Option<String>) -> anyhow::Result<Option<Duration>> {
    value
        .as_deref()
        .map(|v| parse_duration(v).or_else(|e| usage(format!("--{flag}: {e}"))))
        .transpose()
}

fn parse_buffer(flag: &str, value: &Option<String>) -> anyhow::Result<Option<u32>> {
    let Some(v) = value else { return Ok(None) };
    let bytes = parse_size(v, v).or_else(|e| usage(format!("--{flag}: {e}")))?;
    u32::try_from(bytes)
        .map(Some)
        .or_else(|_| usage(format!("--{flag} {v}: at most 2GB")))
}

fn parse_workloads(args: &RunArgs) -> anyhow::Result<Vec<Workload>> {
    let texts: Vec<&str> = if args.workloads.is_empty() {
        DEFAULT_STUDY.to_vec()
    } else {
        args.workloads.iter().map(String::as_str).collect()
    };
    texts
        .iter()
        .map(|t| t.parse::<Workload>().or_else(|e| usage(e.to_string())))
        .collect()
}

fn placement(args: &RunArgs) -> anyhow::Result<Placement> {
    let cpus = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<Vec<usize>>> {
        v.as_deref()
            .map(|l| parse_cpu_list(l).or_else(|e| usage(format!("--{flag}: {e}"))))
            .transpose()
    };
    let (client, server) = (
        cpus("client-cpus", &args.client_cpus)?,
        cpus("server-cpus", &args.server_cpus)?,
    );
    let available = current_cpus().context("reading the CPU affinity")?;
    if args.target.is_some() {
        return Ok(Placement {
            client: client.unwrap_or_default(),
            server: Vec::new(),
        });
    }
    // Two or more CPUs: disjoint halves (netperf -T 0,1 on a 2-CPU machine).
    // One CPU: both sides share it, which the CPU accounting warns about.
    let (lo, hi) = match available.len() {
        0 | 1 => (available.clone(), available.clone()),
        n => (available[..n / 2].to_vec(), available[n / 2..].to_vec()),
    };
    Ok(Placement {
        client: client.unwrap_or(lo),
        server: server.unwrap_or(hi),
    })
}

fn socket_options(args: &RunArgs) -> anyhow::Result<SocketOptions> {
    Ok(SocketOptions {
        nodelay: args.nodelay,
        waitall: args.waitall,
        quickack: args.quickack,
        sndbuf_bytes: parse_buffer("sndbuf", &args.sndbuf)?,
        rcvbuf_bytes: parse_buffer("rcvbuf", &args.rcvbuf)?,
        crr_close: match args.crr_close {
            CrrCloseArg::Server => CrrClose::Server,
            CrrCloseArg::Client => CrrClose::Client,
            CrrCloseArg::Abort => CrrClose::Abort,
        },
    })
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let workloads = parse_workloads(&args)?;
    let default_study = args.workloads.is_empty();
    let mut duration = parse_flag_duration("duration", &args.duration)?;
    if duration.is_none() && args.transactions.is_none() {
        duration = Some(Duration::from_secs(if default_study { 3 } else { 10 }));
    }
    if duration == Some(Duration::ZERO) {
        return usage(
            "--duration 0s: give a window of at least 1ms, or bound the run with --transactions N",
        );
    }
    if args.transactions == Some(0) {
        return usage("--transactions 0: give at least 1");
    }
    let warmup = parse_flag_duration("warmup", &args.warmup)?.unwrap_or(
        match (args.transactions, default_study) {
            (Some(_), _) => Duration::ZERO,
            (None, true) => Duration::from_secs(1),
            (None, false) => Duration::from_secs(2),
        },
    );
    let socket = socket_options(&args)?;
    let place = placement(&args)?;
    let threads = match args.threads {
        Some(0) => return usage("--threads 0: give at least 1 driver thread"),
        Some(n) => n,
        None => place.client.len().max(1),
    };
    let server_threads = args.server_threads.unwrap_or(place.server.len().max(1));
    if !place.client.is_empty() {
        pin_current_thread(&place.client).or_else(|e| usage(format!("--client-cpus: {e}")))?;
    }
    install_ctrl_c();
    let spawned = match &args.target {
        Some(_) => None,
        None => {
            let listen = if args.ipv6 { "[::1]:0" } else { "127.0.0.1:0" };
            Some(SpawnedResponder::start(
                listen,
                &place.server,
                server_threads,
            )?)
        }
    };
    let target = args
        .target
        .clone()
        .unwrap_or_else(|| spawned.as_ref().expect("spawned").addr.clone());
    let mut control = ControlClient::connect(&target).or_else(|e| usage(e.to_string()))?;
    let settings = RunSettings {
        duration_s: duration.map_or(0.0, |d| d.as_secs_f64()),
        warmup_s: warmup.as_secs_f64(),
        transactions: args.transactions,
        client_threads: threads as u32,
        server_threads: Some(control.server_threads),
        client_cpus: place.client.clone(),
        server_cpus: if control.server_cpus.is_empty() {
            place.server.clone()
        } else {
            control.server_cpus.clone()
        },
        target: target.clone(),
        responder: if spawned.is_some() {
            "spawned"
        } else {
            "remote"
        }
        .to_string(),
        spin: args.spin,
        socket,
    };
    if !args.json && !args.csv {
        eprintln!(
            "stackbench: driver on CPUs {} ({threads} threads), responder {} on CPUs {}",
            cpu_text(&settings.client_cpus),
            target,
            cpu_text(&settings.server_cpus)
        );
    }
    let mut record = RunRecord {
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
    };
    let same_host = control.target().ip().is_loopback();
    for w in quality::run_warnings(
        &record.settings.client_cpus,
        &record.settings.server_cpus,
        same_host,
    ) {
        record.warnings.push(quality::report(&w, None));
    }
    for workload in workloads {
        let cfg = RunConfig {
            workload,
            duration,
            warmup,
            transactions: args.transactions,
            threads,
            client_cpus: place.client.clone(),
            socket,
            spin: args.spin,
        };
        let mut progress = ProgressLine::new(&cfg);
        let outcome = run_workload(&mut control, &cfg, &STOP, &mut |p| progress.update(p));
        progress.finish();
        match outcome {
            Ok(outcome) => {
                for class in &outcome.classes {
                    for w in quality::class_warnings(class, threads as u32) {
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
            Err(e) => {
                record.complete = false;
                record.incomplete_reason = Some(e.to_string());
                break;
            }
        }
    }
    drop(spawned);
    print_record(&record, args.json, args.csv);
    Ok(if record.complete { OK } else { INCOMPLETE })
}

fn cpu_text(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "(not pinned)".to_string()
    } else {
        format_cpu_list(cpus)
    }
}

fn print_record(record: &RunRecord, json: bool, csv: bool) {
    use stackbench_results::output;
    let text = if json {
        output::json(record)
    } else if csv {
        output::csv(record)
    } else {
        output::human(record)
    };
    print!("{text}");
}

fn install_ctrl_c() {
    // A second installation (tests calling run twice) fails harmlessly.
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));
}

/// Whether live progress should be drawn (stderr is a terminal).
pub fn progress_wanted() -> bool {
    std::io::stderr().is_terminal()
}
