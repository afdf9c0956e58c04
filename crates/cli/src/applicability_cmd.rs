//! `stackbench applicability`: the command line of the SMCAT analogue
//! (docs/applicability.md). Checks the flags before anything starts, hands
//! the window to `stackbench_applicability`, prints the table per subnet (or
//! the JSON), and stores the projection runs with the observation in their
//! environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use stackbench_applicability::classify::Selection;
use stackbench_applicability::observe::{observe, Watch};
use stackbench_applicability::project::{project, TRANSPORTS};
use stackbench_applicability::summary::summarize;
use stackbench_lab::{netns, read_lab, IpNet};
use stackbench_model::duration::parse_duration;
use stackbench_model::size::{format_size, parse_size};
use stackbench_record::applicability::{Applicability, SizeBucket, SubnetFigures, Thresholds};
use stackbench_results::store::{parse_labels, Store};
use stackbench_runner::environment_of;

use crate::exit::{usage, INCOMPLETE, OK};
use crate::progress::Terminal;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench applicability --window 30s                      # this host's TCP traffic for 30 s
  stackbench applicability --subnet 10.1.0.0/16 --port 5432  # only peers in 10.1/16 on port 5432
  stackbench applicability --lab examples/lab-two-hosts.toml --host client --window 10s   # a lab host (root)
  stackbench applicability --no-project --json

Nothing is sent or changed: the connections are read with sock_diag (tcp_info) every
--interval, and close events catch those that live shorter than one. The projection
runs the observed mix here over tcp and unix (--project-for each) and stores both runs.
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

/// A duration flag that must be longer than zero.
fn positive(flag: &str, text: &str) -> anyhow::Result<Duration> {
    match parse_duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => usage(format!(
            "--{flag} {text}: must be longer than 0, e.g. --{flag} 10s"
        )),
        Err(e) => usage(format!("--{flag} {text}: {e}")),
    }
}

/// The namespace and scope of `--lab FILE --host NAME`, refused when the
/// host is not in the file or the lab is not up.
fn lab_host(file: &Path, host: &str) -> anyhow::Result<(String, String)> {
    let lab = read_lab(file).or_else(|e| usage(format!("--lab {}: {e}", file.display())))?;
    if lab.host(host).is_none() {
        let names: Vec<&str> = lab.hosts.iter().map(|h| h.name.as_str()).collect();
        return usage(format!(
            "--host {host}: no such host in {}: use one of {}",
            file.display(),
            names.join(", ")
        ));
    }
    let ns = lab.namespace(host);
    if !netns::exists(&ns) {
        return usage(format!(
            "--host {host}: lab host is not up (no namespace {ns}): run `stackbench lab up {}` first (as root)",
            file.display()
        ));
    }
    Ok((ns, format!("lab {} host {host}", file.display())))
}

pub fn run(args: ApplicabilityArgs) -> anyhow::Result<i32> {
    let window = positive("window", &args.window)?;
    let interval = positive("interval", &args.interval)?;
    if interval > window {
        return usage(format!(
            "--interval {}: longer than --window {}: use a shorter interval",
            args.interval, args.window
        ));
    }
    let project_for = positive("project-for", &args.project_for)?;
    let min_lifetime = parse_duration(&args.min_lifetime)
        .or_else(|e| usage(format!("--min-lifetime {}: {e}", args.min_lifetime)))?;
    let min_bytes = parse_size(&args.min_bytes, &args.min_bytes)
        .or_else(|e| usage(format!("--min-bytes: {e}")))?;
    let subnets = args
        .subnet
        .iter()
        .map(|t| IpNet::parse(t).or_else(|e| usage(format!("--subnet {t}: {e}"))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let labels = parse_labels(&args.label).or_else(|e| usage(format!("--label: {e}")))?;
    let (namespace, scope) = match (&args.lab, &args.host) {
        (Some(file), Some(host)) => {
            let (ns, scope) = lab_host(file, host)?;
            (Some(ns), scope)
        }
        _ => (None, "this host".to_string()),
    };
    let mut store = match (args.no_store || args.no_project, &args.db) {
        (true, _) => None,
        (false, db) => Some(Store::open(db.as_deref()).or_else(|e| usage(format!("--db: {e}")))?),
    };
    let watch = Watch {
        window,
        interval,
        namespace,
    };
    let sel = Selection {
        subnets,
        port: args.port,
        thresholds: Thresholds {
            min_lifetime_s: min_lifetime.as_secs_f64(),
            min_bytes,
        },
    };
    // Said once the first dump is taken, also with --json (stderr is for
    // diagnostics): a script waits for it before it starts the traffic.
    let line = format!(
        "stackbench: watching the TCP connections of {scope} for {} (a dump every {})",
        args.window, args.interval
    );
    let started = move || eprintln!("{line}");
    let stop = crate::interrupt::stop_flag();
    let observed = observe(&watch, stop, &started)?;
    if let Some(why) = &observed.close_events_refused {
        eprintln!(
            "stackbench: warning: no close events ({why}): connections that opened and closed within one --interval were not seen"
        );
    }
    if observed.close_events_overran {
        eprintln!("stackbench: warning: the kernel dropped close events (too many at once): short connections are undercounted");
    }
    let interrupted = observed.window < window;
    let (mut record, classes) = summarize(&observed, &watch, &sel, &scope);
    if !args.no_project && !interrupted && !classes.is_empty() {
        let mut terminal = Terminal::default();
        let mut runner = crate::interrupt::runner(&mut terminal);
        let (runs, projection) =
            project(&mut runner, &classes, project_for).map_err(crate::run_cmd::run_error)?;
        record.projection = Some(projection);
        if let Some(store) = store.as_mut() {
            let stamp = format!("{:.0}", record.started_unix_s);
            for (run, transport) in runs.iter().zip(TRANSPORTS) {
                let mut l = labels.clone();
                l.insert("applicability".into(), stamp.clone());
                l.insert("applicability.transport".into(), transport.into());
                let mut env = environment_of(run);
                env.applicability = Some(record.clone());
                match store.save(run, &l, &env) {
                    Ok(id) => {
                        eprintln!("stackbench: stored the {transport} projection as run {id}")
                    }
                    Err(e) => eprintln!("stackbench: warning: the projection was not stored: {e}"),
                }
            }
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&record).expect("the observation serialises")
        );
    } else {
        print!("{}", table(&record));
    }
    Ok(if interrupted { INCOMPLETE } else { OK })
}

fn row(f: &SubnetFigures) -> String {
    format!(
        "{:<22} {:>6} {:>8} {:>9} {:>11} {:>5} {:>6} {:>11} {:>7.1} {:>9.1} {:>7.1}\n",
        f.subnet,
        f.connections,
        f.eligible,
        f.same_host,
        f.same_subnet,
        f.excluded_ipsec,
        f.excluded_routed,
        f.well_suited,
        f.well_suited_pct,
        f.well_suited_segments_pct,
        f.well_suited_bytes_pct
    )
}

fn sizes(name: &str, buckets: &[SizeBucket]) -> String {
    let all: u64 = buckets.iter().map(|b| b.messages).sum();
    if all == 0 {
        return format!("  {name}: no data\n");
    }
    let parts: Vec<String> = buckets
        .iter()
        .map(|b| {
            let bound = b
                .up_to_bytes
                .map_or("> MSS/2".to_string(), |u| format!("≤{}", format_size(u)));
            format!("{bound} {:.0}%", b.messages as f64 * 100.0 / all as f64)
        })
        .collect();
    format!("  {name} ({all} messages): {}\n", parts.join(", "))
}

/// The human report: the window, the table per subnet, the sizes and the projection.
fn table(r: &Applicability) -> String {
    let mut out = format!(
        "{}: window {:.1} s, {} dumps every {:.0} ms (the slowest took {:.0} ms), {} close events{}\n\
         well-suited: eligible, lifetime ≥ {} s and ≥ {} moved inside the window\n\n",
        r.scope,
        r.window_s,
        r.samples,
        r.interval_ms,
        r.slowest_dump_ms,
        r.close_events,
        if r.close_events_subscribed {
            ""
        } else {
            " (not subscribed)"
        },
        r.thresholds.min_lifetime_s,
        format_size(r.thresholds.min_bytes)
    );
    out.push_str(&format!(
        "{:<22} {:>6} {:>8} {:>9} {:>11} {:>5} {:>6} {:>11} {:>7} {:>9} {:>7}\n",
        "subnet",
        "conns",
        "eligible",
        "same-host",
        "same-subnet",
        "ipsec",
        "routed",
        "well-suited",
        "%conns",
        "%segments",
        "%bytes"
    ));
    for f in &r.subnets {
        out.push_str(&row(f));
    }
    out.push_str(&row(&r.total));
    out.push_str("\napplication message sizes (estimated from tcp_info, all subnets):\n");
    out.push_str(&sizes("sent", &r.total.send_sizes));
    out.push_str(&sizes("received", &r.total.receive_sizes));
    if let Some(p) = &r.projection {
        out.push_str(&format!(
            "\nprojected over AF_UNIX (each class run {:.0} s here over tcp, then unix):\n",
            p.run_window_s
        ));
        out.push_str(&format!(
            "{:<24} {:>6} {:>12} {:>10} {:>10} {:>11}\n",
            "class", "conns", "observed/s", "tcp µs/tr", "unix µs/tr", "saved µs/tr"
        ));
        let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        for c in &p.classes {
            out.push_str(&format!(
                "{:<24} {:>6} {:>12.1} {:>10} {:>10} {:>11}\n",
                c.workload,
                c.connections,
                c.observed_tps,
                num(c.tcp_cpu_us_per_tran),
                num(c.unix_cpu_us_per_tran),
                num(c.saved_cpu_us_per_tran)
            ));
        }
        match (p.saved_cpu_us_per_tran, p.saved_cpu_us_per_s) {
            (Some(t), Some(s)) => out.push_str(&format!(
                "saved: {t:.1} µs CPU per transaction, {s:.0} µs per second of the observed traffic ({:.2}% of one CPU)\n",
                s / 1e4
            )),
            _ => out.push_str("saved: unknown (a projection run gave no CPU figure)\n"),
        }
    } else {
        out.push_str(
            "\nno projection (--no-project, an interrupted window, or no eligible traffic)\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::applicability::{ProjectedClass, Projection};

    fn figures(subnet: &str, connections: u64, well: u64) -> SubnetFigures {
        SubnetFigures {
            subnet: subnet.into(),
            connections,
            eligible: connections,
            same_subnet: connections,
            well_suited: well,
            well_suited_pct: well as f64 * 100.0 / connections as f64,
            well_suited_segments_pct: 94.3,
            well_suited_bytes_pct: 98.8,
            send_sizes: vec![
                SizeBucket {
                    up_to_bytes: Some(64),
                    messages: 1,
                    bytes: 64,
                },
                SizeBucket {
                    up_to_bytes: Some(4096),
                    messages: 3,
                    bytes: 12288,
                },
            ],
            ..SubnetFigures::default()
        }
    }

    #[test]
    fn the_table_has_a_row_per_subnet_the_sizes_and_the_projection() {
        let mut r = Applicability {
            scope: "lab x.toml host client".into(),
            window_s: 16.0,
            interval_ms: 100.0,
            samples: 161,
            slowest_dump_ms: 17.0,
            close_events: 1754,
            close_events_subscribed: true,
            thresholds: Thresholds {
                min_lifetime_s: 1.0,
                min_bytes: 16384,
            },
            subnets: vec![figures("10.77.1.0/24", 1754, 1)],
            total: figures("all", 1754, 1),
            ..Applicability::default()
        };
        let text = table(&r);
        assert!(text.starts_with("lab x.toml host client: window 16.0 s, 161 dumps every 100 ms (the slowest took 17 ms), 1754 close events\n"), "{text}");
        assert!(text.contains("lifetime ≥ 1 s and ≥ 16kB"), "{text}");
        let row = text
            .lines()
            .find(|l| l.starts_with("10.77.1.0/24"))
            .unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "10.77.1.0/24",
                "1754",
                "1754",
                "0",
                "1754",
                "0",
                "0",
                "1",
                "0.1",
                "94.3",
                "98.8"
            ]
        );
        assert!(
            text.contains("  sent (4 messages): ≤64B 25%, ≤4kB 75%\n"),
            "{text}"
        );
        assert!(text.contains("received: no data"), "{text}");
        assert!(text.contains("no projection"), "{text}");
        r.projection = Some(Projection {
            classes: vec![ProjectedClass {
                workload: "CRR1(64B/8kB)".into(),
                connections: 1752,
                observed_transactions: 1752,
                observed_tps: 109.4,
                tcp_cpu_us_per_tran: Some(78.6),
                unix_cpu_us_per_tran: Some(62.3),
                saved_cpu_us_per_tran: Some(16.3),
            }],
            run_window_s: 5.0,
            saved_cpu_us_per_tran: Some(16.3),
            saved_cpu_us_per_s: Some(1783.2),
        });
        let text = table(&r);
        let row = text.lines().find(|l| l.starts_with("CRR1")).unwrap();
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            cells,
            ["CRR1(64B/8kB)", "1752", "109.4", "78.6", "62.3", "16.3"]
        );
        assert!(text.contains("saved: 16.3 µs CPU per transaction, 1783 µs per second of the observed traffic (0.18% of one CPU)"), "{text}");
    }
}
