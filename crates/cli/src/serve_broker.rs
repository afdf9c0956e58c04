//! `stackbench serve --protocol amqp --broker URL`: the responder
//! application of request-reply runs against an AMQP 1.0 broker (mq-cph's
//! Responder), as many connections as `--threads`, each in a thread of its
//! own (`stackbench_engine::app::amqp::application`). Every connection is
//! opened before any is served, so bad input — a URL that is not
//! `amqp://`, a password on the command line, an unreachable broker, a
//! refused login, a peer that is not AMQP 1.0 — is one line, exit 2.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use stackbench_engine::app::amqp::application::{Application, Counters, Options};
use stackbench_model::settings::QueueName;
use stackbench_model::settings::SettingValue;

use crate::exit::usage;

/// What `serve --broker` takes from serve's flags.
#[derive(Debug, Clone)]
pub struct BrokerArgs {
    pub protocol: String,
    pub threads: Option<usize>,
    pub queue: String,
    pub credit: u32,
    pub password_file: Option<PathBuf>,
}

/// Serves until SIGTERM or Ctrl-C (exit 0, its counters printed) or until a
/// connection fails (exit 2, with what the broker said).
pub fn run(url: &str, args: &BrokerArgs) -> anyhow::Result<i32> {
    if args.protocol != "amqp" {
        return usage(format!(
            "--broker with --protocol {}: the responder application speaks AMQP 1.0; add \
             --protocol amqp",
            args.protocol
        ));
    }
    let opts = options(url, args)?;
    let threads = match args.threads {
        Some(0) => return usage("--threads 0: give at least 1 connection"),
        Some(n) => n,
        None => 1,
    };
    let mut apps = Vec::with_capacity(threads);
    for i in 0..threads {
        let name = format!("{}-{i}", std::process::id());
        apps.push(Application::connect(&opts, &name).or_else(|f| usage(f.0))?);
    }
    let stop = crate::interrupt::stop_flag();
    let mut out = std::io::stdout();
    writeln!(
        out,
        "responding: {threads} connection{} to broker {}, getting requests from {}",
        if threads == 1 { "" } else { "s" },
        opts.broker,
        opts.request_queue()
    )?;
    out.flush()?;
    let counters = Counters::default();
    let failed = std::thread::scope(|scope| {
        let handles: Vec<_> = apps
            .into_iter()
            .map(|mut app| {
                let counters = &counters;
                scope.spawn(move || {
                    let served = app.serve(stop, counters);
                    // One failed connection ends the others: the responder
                    // is one application.
                    stop.store(true, Ordering::Relaxed);
                    served
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().expect("a responder thread panicked").err())
            .next()
    });
    let load = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    writeln!(
        out,
        "requests={} replies={} request_bytes={} reply_bytes={}",
        load(&counters.requests),
        load(&counters.replies),
        load(&counters.request_bytes),
        load(&counters.reply_bytes)
    )?;
    match failed {
        Some(fault) => usage(format!("broker {}: {}", opts.broker, fault.0)),
        None => Ok(crate::exit::OK),
    }
}

/// The connection options from the URL and flags: a password only from
/// its file (a command line is visible to every user in `ps`).
fn options(url: &str, args: &BrokerArgs) -> anyhow::Result<Options> {
    let Some(rest) = url.strip_prefix("amqp://") else {
        return usage(format!(
            "--broker '{url}': give amqp://[USER@]HOST:PORT, e.g. amqp://127.0.0.1:5672"
        ));
    };
    let rest = rest.trim_end_matches('/');
    let (user, address) = match rest.rsplit_once('@') {
        Some((user, address)) => (Some(user), address),
        None => (None, rest),
    };
    if user.is_some_and(|u| u.contains(':')) {
        return usage(format!(
            "--broker: a password in the URL shows in ps to every user of this host: give \
             amqp://USER@{address} and the password in --amqp-password-file FILE"
        ));
    }
    if address
        .rsplit_once(':')
        .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
    {
        return usage(format!(
            "--broker '{url}': give HOST:PORT after amqp://, e.g. amqp://127.0.0.1:5672"
        ));
    }
    let password = match &args.password_file {
        Some(file) => Some(
            std::fs::read_to_string(file)
                .map(|t| t.lines().next().unwrap_or("").to_string())
                .or_else(|e| usage(format!("--amqp-password-file {}: {e}", file.display())))?,
        ),
        None => None,
    };
    let login = match (user, password) {
        (Some(u), p) => Some((u.to_string(), p.unwrap_or_default())),
        (None, Some(_)) => {
            return usage(
                "--amqp-password-file without a user: give amqp://USER@HOST:PORT as --broker",
            )
        }
        (None, None) => None,
    };
    let queue = QueueName::parse(&args.queue)
        .or_else(|e| usage(format!("--amqp-queue '{}': {e}", args.queue)))?;
    if args.credit == 0 {
        return usage("--amqp-credit 0: give at least 1 (0 would never get a request)");
    }
    Ok(Options {
        broker: address.to_string(),
        login,
        queue: queue.0,
        credit: args.credit,
    })
}
