//! `stackbench applicability`: the command line of the SMCAT analogue and
//! of the crypto census (docs/applicability.md). The flags, and the
//! printing of what `stackbench_applicability::command` returns: the table
//! per subnet, the census per server port and client subnet, or the JSON.

use std::path::PathBuf;

use clap::Args;
use stackbench_applicability::command::{check, execute, Error, Input};
use stackbench_results::applicability_table::{census_table, table};

use crate::exit::{INCOMPLETE, OK};
use crate::progress::Terminal;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench applicability --window 30s                      # this host's TCP traffic for 30 s
  stackbench applicability --subnet 10.1.0.0/16 --port 5432  # only peers in 10.1/16 on port 5432
  stackbench applicability --lab examples/lab-two-hosts.toml --host client --window 10s   # a lab host (root)
  stackbench applicability --no-project --json
  stackbench applicability --census --no-project --port 443   # each connection's protection (root)

Nothing is sent or changed: the connections are read with sock_diag (tcp_info) every
--interval, and close events catch those that live shorter than one. The projection
runs the observed mix here over tcp and unix (--project-for each) and stores both runs.
--census also names each connection's protection: kTLS (sock_diag), TLS as its
handshake shows on the wire (an AF_PACKET capture: root), IPsec (xfrm SAs), clear.
Exit status: 0 done, 2 usage or input error, 3 interrupted (Ctrl-C).")]
pub struct ApplicabilityArgs {
    /// How long to watch, e.g. 10s, 5m.
    #[arg(long, value_name = "DURATION", default_value = "10s")]
    window: String,
    /// Time between two sock_diag dumps.
    #[arg(long, value_name = "DURATION", default_value = "100ms")]
    interval: String,
    /// Count only connections whose peer is in this prefix (repeatable); rows
    /// are then these prefixes [default: all peers, one row per /24 or /64].
    #[arg(long, value_name = "PREFIX")]
    subnet: Vec<String>,
    /// Count only connections with this local or remote port.
    #[arg(long, value_name = "N")]
    port: Option<u16>,
    /// Watch a lab host's connections: the lab file (with --host; root).
    #[arg(long, value_name = "FILE", requires = "host")]
    lab: Option<PathBuf>,
    /// The lab host to watch (its network namespace).
    #[arg(long, value_name = "NAME", requires = "lab")]
    host: Option<String>,
    /// Well-suited: the least lifetime inside the window.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    min_lifetime: String,
    /// Well-suited: the least payload, both directions, inside the window.
    #[arg(long, value_name = "SIZE", default_value = "16kB")]
    min_bytes: String,
    /// Only observe: run no projection (and store nothing).
    #[arg(long)]
    no_project: bool,
    /// The window of each projection run (TCP, then unix), after a 1 s warm-up.
    #[arg(long, value_name = "DURATION", default_value = "3s")]
    project_for: String,
    /// Also take the crypto census: each connection's protection (kTLS, TLS
    /// from its handshake on the wire, IPsec, clear) per server port and
    /// client subnet. Reading the wire needs CAP_NET_RAW.
    #[arg(long)]
    census: bool,
    /// With --census: a cipher suite (IANA hex code or name, repeatable)
    /// whose server ports are named for a reset (host_policy_reset_port).
    #[arg(long, value_name = "SUITE")]
    disallow: Vec<String>,
    /// Print the observation and projection as one JSON document.
    #[arg(long)]
    json: bool,
    /// Label stored with the projection runs (repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    label: Vec<String>,
    /// Result database [default: $STACKBENCH_DB, else $XDG_DATA_HOME/stackbench/results.db].
    #[arg(long, value_name = "PATH", conflicts_with = "no_store")]
    db: Option<PathBuf>,
    /// Do not store the projection runs.
    #[arg(long)]
    no_store: bool,
}

pub fn run(args: ApplicabilityArgs) -> anyhow::Result<i32> {
    let input = Input {
        window: args.window,
        interval: args.interval,
        subnets: args.subnet,
        port: args.port,
        lab: args.lab.zip(args.host),
        min_lifetime: args.min_lifetime,
        min_bytes: args.min_bytes,
        project: !args.no_project,
        project_for: args.project_for,
        census: args.census,
        disallow: args.disallow,
        labels: args.label,
        db: args.db,
        store: !args.no_store,
    };
    let checked = check(&input).map_err(command_error)?;
    // Said once the first dump is taken, also with --json (stderr is for
    // diagnostics): a script waits for it before it starts the traffic.
    let line = format!(
        "stackbench: watching the TCP connections of {} for {} (a dump every {}){}",
        checked.scope,
        input.window,
        input.interval,
        if input.census {
            ", with the crypto census"
        } else {
            ""
        }
    );
    let started = move || eprintln!("{line}");
    let stop = crate::interrupt::stop_flag();
    let mut terminal = Terminal::default();
    let mut runner = crate::interrupt::runner(&mut terminal);
    let outcome = execute(checked, stop, &started, &mut runner).map_err(command_error)?;
    for note in &outcome.notes {
        eprintln!("stackbench: {note}");
    }
    let record = &outcome.record;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(record).expect("the observation serialises")
        );
    } else {
        print!("{}", table(record));
        if let Some(c) = &record.census {
            print!("{}", census_table(c));
        }
    }
    Ok(if outcome.interrupted { INCOMPLETE } else { OK })
}

/// Bad input exits 2 in one line; a failed run as `stackbench run`'s does.
fn command_error(e: Error) -> anyhow::Error {
    match e {
        Error::Input(m) => crate::exit::UsageError(m).into(),
        Error::Run(e) => crate::run_cmd::run_error(e),
        e @ Error::Observe(_) => e.into(),
    }
}
