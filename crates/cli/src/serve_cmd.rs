//! `stackbench serve`: the responder as its own process, for drivers on other
//! hosts, or spawned by `stackbench run` so each side's CPU can be accounted
//! separately.

use std::io::Write;

use anyhow::Context;
use clap::Args;
use stackbench_engine::affinity::{format_cpu_list, parse_cpu_list, pin_current_thread};
use stackbench_engine::{Responder, ResponderConfig};

use stackbench_runner::spawn::LISTENING_PREFIX;

use crate::exit::usage;

/// Default control port (netperf uses 12865, neper 12866).
pub const DEFAULT_PORT: u16 = 12870;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench serve                         # loopback, port 12870
  stackbench serve --listen [::1]:12870    # IPv6 loopback
  stackbench serve --listen 0.0.0.0:12870 --cpus 2-3 --threads 2")]
pub struct ServeArgs {
    /// Control address to listen on (data ports are chosen per test).
    #[arg(long, default_value_t = format!("127.0.0.1:{DEFAULT_PORT}"))]
    listen: String,
    /// Worker threads [default: one per CPU the responder may use].
    #[arg(long)]
    threads: Option<usize>,
    /// Pin the responder to these CPUs, e.g. 1 or 2-3.
    #[arg(long)]
    cpus: Option<String>,
    /// Also open every test's listeners, same ports, in these network
    /// namespaces (files such as /run/netns/NAME, comma-separated): the
    /// target hosts behind a lab's load distributor.
    #[arg(long, value_delimiter = ',')]
    mirror_netns: Vec<std::path::PathBuf>,
}

pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    let listen = args.listen.parse().or_else(|_| {
        usage(format!(
            "bad --listen '{}': use IP:PORT, e.g. 127.0.0.1:{DEFAULT_PORT} or [::1]:{DEFAULT_PORT}",
            args.listen
        ))
    })?;
    let cpus = match &args.cpus {
        Some(list) => {
            let cpus = parse_cpu_list(list).or_else(|e| usage(format!("--cpus: {e}")))?;
            pin_current_thread(&cpus).or_else(|e| usage(format!("--cpus: {e}")))?;
            cpus
        }
        None => Vec::new(),
    };
    let available = stackbench_engine::affinity::current_cpus().map_or(1, |c| c.len());
    let threads = match args.threads {
        Some(0) => return usage("--threads 0: give at least 1 worker thread"),
        Some(n) => n,
        None => available,
    };
    let responder = Responder::bind(ResponderConfig {
        listen,
        threads,
        cpus: cpus.clone(),
    })
    .with_context(|| format!("cannot listen on {listen}"))?;
    if !args.mirror_netns.is_empty() {
        if let Err(e) = responder.mirror_in(&args.mirror_netns) {
            return usage(format!("--mirror-netns: {e}"));
        }
    }
    let addr = responder.local_addr()?;
    let pinned = if cpus.is_empty() {
        "not pinned".to_string()
    } else {
        format_cpu_list(&cpus)
    };
    let mut out = std::io::stdout();
    writeln!(
        out,
        "{LISTENING_PREFIX}{addr} (threads {threads}, CPUs {pinned})"
    )?;
    out.flush()?;
    responder.serve()?;
    Ok(crate::exit::OK)
}
