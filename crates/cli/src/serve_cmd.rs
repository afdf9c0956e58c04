//! `stackbench serve`: the responder as its own process, for drivers on other
//! hosts, or spawned by `stackbench run` so each side's CPU can be accounted
//! separately. `serve --hold` is the control half of a driver and nothing
//! else: it holds one test open on a running responder for a client other
//! than stackbench (wrk in bench/http.sh), through the engine's own
//! control client, so the control protocol has one implementation.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use stackbench_engine::affinity::{format_cpu_list, parse_cpu_list, pin_current_thread};
use stackbench_engine::control::TestSpec;
use stackbench_engine::responder::ResponderLimits;
use stackbench_engine::token::Token;
use stackbench_engine::transport::Endpoint;
use stackbench_engine::{ControlClient, Responder, ResponderConfig};
use stackbench_model::settings::{
    AppProtocol, ResponderApp, ResponderTn3270e, SettingValue, Tn3270Options,
};
use stackbench_model::{IoMode, SocketOptions, Transport, Workload};

use stackbench_runner::spawn::LISTENING_PREFIX;

use crate::exit::usage;

/// Default control port (netperf uses 12865, neper 12866).
pub const DEFAULT_PORT: u16 = 12870;

#[derive(Debug, Args)]
#[command(after_help = "Examples:
  stackbench serve                         # loopback, port 12870
  stackbench serve --listen [::1]:12870    # IPv6 loopback
  stackbench serve --listen 0.0.0.0:12870 --token-file ~/.stackbench-token --cpus 2-3
  stackbench serve --listen 0.0.0.0:12870 --open   # anyone who reaches the port
  # hold an http1 test open on a running responder, for wrk (bench/http.sh):
  stackbench serve --hold 127.0.0.1:12870 'RR10(45B/4137B)' --protocol http1 --nodelay
  # the responder application of request-reply runs against an AMQP 1.0 broker:
  stackbench serve --protocol amqp --broker amqp://127.0.0.1:5672 --threads 2")]
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
    /// The token every driver must prove before anything it sends is read
    /// (an HMAC challenge: the token never crosses the wire); drivers give
    /// the same file (`run --token-file`). At least 16 bytes, mode 600
    /// [default: the STACKBENCH_TOKEN a run sets for the responder it
    /// starts, else none].
    #[arg(long, value_name = "FILE")]
    token_file: Option<std::path::PathBuf>,
    /// Serve without a token on an address other hosts reach: anyone who
    /// reaches the port may open tests on this host (listeners, connections
    /// and responses within the --max-… limits) and read its CPU and memory
    /// counters. Without a token a non-loopback --listen is refused.
    #[arg(long, conflicts_with = "token_file")]
    open: bool,
    /// Control connections served at once (each driver or agent holds one).
    #[arg(long, value_name = "N", default_value_t = ResponderLimits::default().sessions)]
    max_sessions: u32,
    /// Tests one control connection may hold open at once.
    #[arg(long, value_name = "N", default_value_t = ResponderLimits::default().tests_per_session)]
    max_tests: u32,
    /// Connections one test may announce (the file-descriptor limit bounds
    /// them too).
    #[arg(long, value_name = "N", default_value_t = ResponderLimits::default().clients_per_test)]
    max_clients: u32,
    /// Bytes of one request or response a test may ask for.
    #[arg(long, value_name = "BYTES", default_value_t = ResponderLimits::default().message_bytes)]
    max_message_bytes: u64,
    /// Seconds one control connection may last; at the limit it and its
    /// tests are ended.
    #[arg(long, value_name = "SECONDS", default_value_t = ResponderLimits::default().session.as_secs())]
    max_session: u64,
    /// Do not serve: hold one test (TEST) open on the responder at
    /// HOST:PORT (a running `stackbench serve`) for a client other than
    /// stackbench. Prints `port=PORT` of the test's listener, waits for
    /// SIGTERM or Ctrl-C (or --hold-limit), stops the test and prints the
    /// responder's counters for it (`srv_transactions=N`, …). The test ends
    /// when this process does, however it ends.
    #[arg(
        long,
        value_name = "HOST:PORT",
        requires = "test",
        conflicts_with_all = ["threads", "cpus", "mirror_netns", "open"]
    )]
    hold: Option<String>,
    /// --hold: the test, one class in workload notation (its kind, sizes
    /// and connections), e.g. 'RR10(45B/4137B)'.
    #[arg(requires = "hold")]
    test: Option<String>,
    /// --hold: the test's application protocol, as `run --protocol` takes it;
    /// with --broker, amqp (the only protocol with a responder application).
    #[arg(long, default_value = "raw")]
    protocol: String,
    /// Do not listen: be the responder application of request-reply runs
    /// against the AMQP 1.0 broker at this URL (amqp://[USER@]HOST:PORT;
    /// the password comes from --amqp-password-file, never the command
    /// line). Each --threads connection gets requests from the queue
    /// QUEUE.request and puts each reply on the queue its reply-to names.
    /// Runs until SIGTERM or Ctrl-C and prints its counters.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with_all = ["hold", "cpus", "mirror_netns", "open", "token_file"]
    )]
    broker: Option<String>,
    /// --broker: the queue name prefix, as `run --amqp-queue` takes it.
    #[arg(
        long,
        requires = "broker",
        value_name = "NAME",
        default_value = "stackbench"
    )]
    amqp_queue: String,
    /// --broker: the credit (prefetch) of each connection's request link.
    #[arg(long, requires = "broker", value_name = "N", default_value_t = 100)]
    amqp_credit: u32,
    /// --broker: a file holding the SASL PLAIN password of the URL's user
    /// (its first line; mode 600 advised).
    #[arg(long, requires = "broker", value_name = "FILE")]
    amqp_password_file: Option<std::path::PathBuf>,
    /// --hold, protocol tn3270: offer TN3270E (as a z/OS TN3270 server) or
    /// refuse it (plain TN3270 only), as `run --responder-tn3270e` takes it.
    #[arg(long, requires = "hold", default_value = "offer", value_name = "OFFER")]
    responder_tn3270e: String,
    /// --hold, protocol tn3270: what the test serves after the logon: echo
    /// (a screen of the response size per input) or demo (a logon screen,
    /// a menu and an account screen), as `run --responder-tn3270-app` takes it.
    #[arg(long, requires = "hold", default_value = "echo", value_name = "APP")]
    responder_tn3270_app: String,
    /// --hold: TCP_NODELAY on the responder's sockets of the test (as nginx
    /// sets it on keep-alive connections).
    #[arg(long, requires = "hold")]
    nodelay: bool,
    /// --hold: stop the test after this many seconds without a signal.
    #[arg(
        long,
        requires = "hold",
        value_name = "SECONDS",
        default_value_t = 3600
    )]
    hold_limit: u64,
}

pub fn run(args: ServeArgs) -> anyhow::Result<i32> {
    if let Some(target) = &args.hold {
        let test = args
            .test
            .as_deref()
            .expect("clap requires TEST with --hold");
        return hold(target, test, &args);
    }
    if let Some(url) = &args.broker {
        return crate::serve_broker::run(url, &args.broker_args());
    }
    if args.protocol != "raw" {
        return usage(format!(
            "--protocol {}: serve's protocol is for --hold or --broker (the responder serves \
             every protocol a driver asks for)",
            args.protocol
        ));
    }
    let listen: std::net::SocketAddr = args.listen.parse().or_else(|_| {
        usage(format!(
            "bad --listen '{}': use IP:PORT, e.g. 127.0.0.1:{DEFAULT_PORT} or [::1]:{DEFAULT_PORT}",
            args.listen
        ))
    })?;
    let token = token_of(args.token_file.as_deref())?;
    if token.is_none() && !args.open && !listen.ip().is_loopback() {
        return usage(format!(
            "serve --listen {listen} is reachable from other hosts: give --token-file FILE \
             (drivers give the same file), or --open to serve anyone who reaches it"
        ));
    }
    let limits = limits_of(&args)?;
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
    let who = match (&token, &args.token_file) {
        (Some(_), Some(file)) => format!("drivers that prove the token of {}", file.display()),
        (Some(_), None) => "drivers that prove the run's token (STACKBENCH_TOKEN)".to_string(),
        (None, _) if listen.ip().is_loopback() => {
            "any process of this host (loopback, no token)".to_string()
        }
        (None, _) => format!("anyone who reaches {listen} (--open, no token)"),
    };
    let responder = Responder::bind(ResponderConfig {
        listen,
        threads,
        cpus: cpus.clone(),
        token,
        limits,
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
    // One line: a run that starts this responder reads the first line only.
    writeln!(
        out,
        "{LISTENING_PREFIX}{addr} (threads {threads}, CPUs {pinned}); who may connect: {who}"
    )?;
    out.flush()?;
    responder.serve()?;
    Ok(crate::exit::OK)
}

impl ServeArgs {
    /// What `serve --broker` takes from the flags.
    fn broker_args(&self) -> crate::serve_broker::BrokerArgs {
        crate::serve_broker::BrokerArgs {
            protocol: self.protocol.clone(),
            threads: self.threads,
            queue: self.amqp_queue.clone(),
            credit: self.amqp_credit,
            password_file: self.amqp_password_file.clone(),
        }
    }
}

/// The responder's token: `--token-file`, else the STACKBENCH_TOKEN a run
/// sets for the responder it starts, else none. One line, exit 2, on a bad one.
fn token_of(file: Option<&std::path::Path>) -> anyhow::Result<Option<Token>> {
    match file {
        Some(path) => Token::from_file(path).map(Some).or_else(usage),
        None => Token::from_env().or_else(usage),
    }
}

/// The `--max-…` limits; zero is refused (it would refuse every driver).
fn limits_of(args: &ServeArgs) -> anyhow::Result<ResponderLimits> {
    for (flag, n) in [
        ("--max-sessions", u64::from(args.max_sessions)),
        ("--max-tests", u64::from(args.max_tests)),
        ("--max-clients", u64::from(args.max_clients)),
        ("--max-message-bytes", args.max_message_bytes),
        ("--max-session", args.max_session),
    ] {
        if n == 0 {
            return usage(format!(
                "{flag} 0: give at least 1 (0 would refuse every driver)"
            ));
        }
    }
    Ok(ResponderLimits {
        sessions: args.max_sessions,
        tests_per_session: args.max_tests,
        clients_per_test: args.max_clients,
        message_bytes: args.max_message_bytes,
        session: Duration::from_secs(args.max_session),
    })
}

/// `serve --hold`: starts the test on the responder at `target`, prints its
/// port, waits for a signal or the limit, stops it and prints its counters.
fn hold(target: &str, test: &str, args: &ServeArgs) -> anyhow::Result<i32> {
    let workload: Workload = test
        .parse()
        .or_else(|e| usage(format!("--hold test '{test}': {e}")))?;
    let [class] = workload.classes.as_slice() else {
        return usage(format!(
            "--hold test '{test}': give one class, e.g. 'RR10(45B/4137B)' (one test is held)"
        ));
    };
    let protocol = AppProtocol::parse(&args.protocol)
        .or_else(|e| usage(format!("--protocol '{}': {e}", args.protocol)))?;
    let responder = ResponderTn3270e::parse(&args.responder_tn3270e).or_else(|e| {
        usage(format!(
            "--responder-tn3270e '{}': {e}",
            args.responder_tn3270e
        ))
    })?;
    let app = ResponderApp::parse(&args.responder_tn3270_app).or_else(|e| {
        usage(format!(
            "--responder-tn3270-app '{}': {e}",
            args.responder_tn3270_app
        ))
    })?;
    if args.hold_limit == 0 {
        return usage("--hold-limit 0: give at least 1 second");
    }
    // Interrupts set the flag from here on: the test is stopped, not left.
    let stop = crate::interrupt::stop_flag();
    let token = token_of(args.token_file.as_deref())?;
    let mut control = ControlClient::connect_with(target, token.as_ref())
        .with_context(|| format!("--hold {target}"))?;
    if control.is_plain() {
        return usage(format!(
            "--hold {target}: name a stackbench responder's control address (HOST:PORT), \
             not a plain server"
        ));
    }
    let spec = TestSpec {
        kind: class.kind,
        request_bytes: class.request_bytes,
        response_bytes: class.response_bytes,
        socket: SocketOptions {
            nodelay: args.nodelay,
            ..SocketOptions::default()
        },
        spin: false,
        io: IoMode::Epoll,
        protocol,
        tn3270: Tn3270Options {
            responder,
            app,
            ..Tn3270Options::default()
        },
    };
    let (test_id, endpoints) = control
        .start(spec, Transport::Tcp, class.clients, 1)
        .with_context(|| format!("--hold {target}: starting the test"))?;
    let port = endpoints
        .iter()
        .find_map(|e| match e {
            Endpoint::Inet(a) => Some(a.port()),
            Endpoint::Unix(_) => None,
        })
        .with_context(|| format!("--hold {target}: the responder gave no TCP endpoint"))?;
    let mut out = std::io::stdout();
    writeln!(out, "port={port}")?;
    out.flush()?;
    let deadline = Instant::now() + Duration::from_secs(args.hold_limit);
    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
        if !control.is_alive() {
            anyhow::bail!("--hold {target}: the responder closed the control connection");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let stats = control
        .stop(test_id)
        .with_context(|| format!("--hold {target}: stopping the test"))?;
    // Every whole-number counter, as the protocol names it.
    if let serde_json::Value::Object(fields) = serde_json::to_value(stats)? {
        for (key, value) in fields {
            if let Some(n) = value.as_u64() {
                writeln!(out, "srv_{key}={n}")?;
            }
        }
    }
    Ok(crate::exit::OK)
}
