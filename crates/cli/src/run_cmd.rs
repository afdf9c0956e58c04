//! `stackbench run`: resolves the command line into run settings (raw flags →
//! immutable settings, printed and stored with the result), places the two
//! sides on CPUs, starts the responder process unless `--target` names one,
//! runs each workload in turn and prints the record.

use std::io::IsTerminal;
use std::time::Duration;

use clap::{Args, ValueEnum};
use stackbench_engine::affinity::parse_cpu_list;
use stackbench_metrics::RunRecord;
use stackbench_model::duration::parse_duration;
use stackbench_model::size::parse_size;
use stackbench_model::{CrrClose, SocketOptions, Workload};
use stackbench_results::store::{parse_labels, Store};

use crate::exit::{usage, INCOMPLETE, OK};
use crate::repeat;
use crate::session::{self, RunPlan};

/// The README's main job: a small study, a few seconds per workload.
pub const DEFAULT_STUDY: &[&str] = &[
    "RR1(1B/1B)",
    "RR10(4kB/4kB)",
    "CRR10(64B/8kB)",
    "STR3(1B/20MB)",
];

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
    /// [default: RR1(1B/1B) RR10(4kB/4kB) CRR10(64B/8kB) STR3(1B/20MB), 5 s each].
    workloads: Vec<String>,
    /// Measurement window per workload [default: 10s; 5s for the default study; none with --transactions].
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
    /// Run each workload N times; report mean, standard deviation and a 95% Student-t interval.
    #[arg(long)]
    repeat: Option<u32>,
    /// Repeat until the LEVEL% interval of rate and CPU µs/tr is at most WIDTH% of the mean, e.g. 99,5.
    #[arg(long, value_name = "LEVEL,WIDTH")]
    confidence: Option<String>,
    /// Bounds on repetitions with --confidence [default: 3,30].
    #[arg(long, value_name = "MIN,MAX")]
    iterations: Option<String>,
    /// Label stored with the run (repeatable), e.g. --label kernel=6.18 --label variant=A.
    #[arg(long, value_name = "KEY=VALUE")]
    label: Vec<String>,
    /// Result database [default: $STACKBENCH_DB, else $XDG_DATA_HOME/stackbench/results.db].
    #[arg(long, value_name = "PATH", conflicts_with = "no_store")]
    db: Option<std::path::PathBuf>,
    /// Do not store the run.
    #[arg(long)]
    no_store: bool,
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
    let plan = resolve(&args)?;
    let labels = parse_labels(&args.label).or_else(|e| usage(format!("--label: {e}")))?;
    let mut store = match (&args.db, args.no_store) {
        (_, true) => None,
        (db, false) => Some(Store::open(db.as_deref()).or_else(|e| usage(format!("--db: {e}")))?),
    };
    let record = session::execute(&plan)?;
    if let Some(store) = store.as_mut() {
        session::store_record(store, &record, &labels);
    }
    print_record(&record, args.json, args.csv);
    Ok(if record.complete { OK } else { INCOMPLETE })
}

/// Raw flags → the immutable plan of the run (ripgrep's LowArgs → HiArgs).
fn resolve(args: &RunArgs) -> anyhow::Result<RunPlan> {
    let workloads = parse_workloads(args)?;
    let default_study = args.workloads.is_empty();
    let mut duration = parse_flag_duration("duration", &args.duration)?;
    if duration.is_none() && args.transactions.is_none() {
        duration = Some(Duration::from_secs(if default_study { 5 } else { 10 }));
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
    let cpus = |flag: &str, v: &Option<String>| -> anyhow::Result<Option<Vec<usize>>> {
        v.as_deref()
            .map(|l| parse_cpu_list(l).or_else(|e| usage(format!("--{flag}: {e}"))))
            .transpose()
    };
    let place = session::placement(
        cpus("client-cpus", &args.client_cpus)?,
        cpus("server-cpus", &args.server_cpus)?,
        args.target.is_some(),
    )?;
    let threads = match args.threads {
        Some(0) => return usage("--threads 0: give at least 1 driver thread"),
        Some(n) => n,
        None => place.client.len().max(1),
    };
    Ok(RunPlan {
        workloads,
        duration,
        warmup,
        transactions: args.transactions,
        threads,
        server_threads: args.server_threads.unwrap_or(place.server.len().max(1)),
        client_cpus: place.client,
        server_cpus: place.server,
        target: args.target.clone(),
        ipv6: args.ipv6,
        socket: socket_options(args)?,
        spin: args.spin,
        iterations: repeat::iterations(
            args.repeat,
            args.confidence.as_deref(),
            args.iterations.as_deref(),
        )?,
        announce: !args.json && !args.csv,
    })
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

/// Whether live progress should be drawn (stderr is a terminal).
pub fn progress_wanted() -> bool {
    std::io::stderr().is_terminal()
}
