//! The wire between a controller and its agents: one JSON object per line
//! over TCP, as the driver↔responder control connection is (and as
//! netperf's and neper's control ports are). Both sides first prove the run
//! token (`stackbench_engine::token`, channel `agents`; a controller always
//! holds one, and an agent refuses a controller that cannot prove it). Then
//! the agent speaks ([`FromAgent::Hello`] with its protocol, build and segment); a controller
//! of another protocol refuses it in one line naming both, since a field one
//! side ignored would change what is measured. Every message carries the run
//! it belongs to, so that a late answer to a run that was given up is never
//! taken for the next one's.
//!
//! The messages are this module's own types, not the engine's: the run is
//! sent as a [`RunOrder`] (a projection of the engine's `RunConfig`, whose
//! changes therefore have to pass through here) and every struct refuses
//! fields it does not know. Versioning rule ([`PROTOCOL`]): any change to
//! what goes over the wire — a field added, removed, renamed or retyped, at
//! any depth, a new message or a new value of an enum that travels — raises
//! [`PROTOCOL`] and adds that protocol's golden file
//! (`crates/runner/tests/wire/protocol-N.jsonl`); the test `wire_golden`
//! fails on a shape that differs from the current protocol's file. The
//! hello's `msg`, `protocol`, `version`, `commit`, `dirty`, `index`, `count`
//! and `host` and the refusal's `reason` never change, so that every
//! protocol can name the other side's in its refusal (`Greeting`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use stackbench_engine::{PacingConfig, Progress, RunConfig};
use stackbench_metrics::live::LiveRun;
use stackbench_metrics::warnings::PathFloor;
use stackbench_model::segment::Segment;
use stackbench_model::settings::{ClassPriorities, GenSched, Spin, Tn3270Options};
use stackbench_model::{
    AmqpParams, AppProtocol, H2Params, IoMode, SocketOptions, TlsParams, Transport, Workload,
};
use stackbench_record::{ClassResult, CpuFigures};

/// Version of this wire; the controller refuses an agent of another one.
/// Protocol 1: the run was the engine's `RunConfig` as it stood, and the
/// hello named the crate version only (the same for every build). Protocol
/// 2: the wire's own messages ([`RunOrder`], [`ProgressReport`]), unknown
/// fields refused, durations in ns, and the build's commit in the hello.
/// Protocol 3: the order carries `http_error_share_pct`, and a class's
/// result its HTTP status counts (`http_status`, and `error_counts`'s
/// `http_status`). Protocol 4 (one release's additions): the connection
/// opens with the run token's handshake (`stackbench_engine::token`,
/// channel `agents`: the agent's `start` line carries its hello's kept
/// fields, so that a controller of protocol 3 or earlier refuses it naming
/// both); the order carries `tn3270` (TN3270E, model, LU, the responder's
/// offer), `amqp` (protocol amqp's settings), `live_metrics`, and TLS
/// parameters with `alpn`, `server_name`, `ca` and `insecure`; a class's
/// result its `sessions` and TLS figures with `alpn` and `server_verified`;
/// an agent's result counts the control connections its responder refused
/// (`control_refused`); progress the live figures (`live`, about once a
/// second) that a controller serving `--metrics-listen` adds up. Protocol
/// 5: a class's population figures carry the generator lag's histogram
/// (`generator_lag_hdr`, merged exactly like the latency's) and the lag p99's
/// share of the latency p99, and a scripted class its `steps` (per named
/// step: transactions, latency histogram, timeouts, the screen seen); the
/// order carries `gen_sched`, how the agent's driver workers are
/// scheduled, and `tn3270`'s `script` (its text, parsed again by the agent)
/// and `app` (the responder's screen application).
pub const PROTOCOL: u32 = 5;

/// Which stackbench a side is: its version number and the commit it was
/// built from (`build.rs`), which tells apart two builds of one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Build {
    /// The crate version (`CARGO_PKG_VERSION`).
    pub version: String,
    /// The git commit (40 hex digits), or `unknown` for a build outside a
    /// git checkout.
    pub commit: String,
    /// The sources differed from `commit` when it was built.
    pub dirty: bool,
}

impl Build {
    /// This build.
    pub fn this() -> Build {
        Build {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit: env!("STACKBENCH_BUILD_COMMIT").to_string(),
            dirty: env!("STACKBENCH_BUILD_DIRTY") == "1",
        }
    }
}

impl std::fmt::Display for Build {
    /// `stackbench 0.1.0, commit 0123456789ab, dirty`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.commit.get(..12).unwrap_or(&self.commit);
        let dirty = if self.dirty { ", dirty" } else { "" };
        write!(f, "stackbench {}, commit {short}{dirty}", self.version)
    }
}

/// What an agent sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromAgent {
    /// First message: who the agent is and which segment it takes.
    Hello(Hello),
    /// Answer to [`FromController::Ping`]: the agent's wall clock when it
    /// read the ping, in ns since the Unix epoch.
    Pong { seq: u32, agent_unix_ns: u64 },
    /// Every client of the agent's segment is connected: ready to start.
    Armed { run: u64 },
    /// Where its run is (about once a second), for the controller's progress line.
    Progress { run: u64, progress: ProgressReport },
    /// The run is over; what the agent measured.
    Done { run: u64, part: Box<AgentResult> },
    /// The run could not start here (no responder, a refused option…).
    Failed { run: u64, error: String },
}

/// An agent's hello.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hello {
    /// Its [`PROTOCOL`].
    pub protocol: u32,
    /// Its build: [`Build::version`], [`Build::commit`], [`Build::dirty`]
    /// (flat, as protocol 1's hello had `version` at this level).
    pub version: String,
    pub commit: String,
    pub dirty: bool,
    /// Its segment: agent `index` of `count`.
    pub index: u32,
    pub count: u32,
    /// Its host name and process id.
    pub host: String,
    pub pid: u32,
}

impl Hello {
    /// The hello of this process, for segment `index` of `count`.
    pub fn this(index: u32, count: u32) -> Hello {
        let build = Build::this();
        Hello {
            protocol: PROTOCOL,
            version: build.version,
            commit: build.commit,
            dirty: build.dirty,
            index,
            count,
            host: host_name(),
            pid: std::process::id(),
        }
    }

    /// The agent's build.
    pub fn build(&self) -> Build {
        Build {
            version: self.version.clone(),
            commit: self.commit.clone(),
            dirty: self.dirty,
        }
    }
}

/// What a controller sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromController {
    /// The hello was accepted.
    Welcome,
    /// The hello was refused; the agent prints the reason and exits.
    Refused { reason: String },
    /// Clock probe: the agent answers at once with its clock.
    Ping { seq: u32 },
    /// Run this workload (its `segment` is the agent's) against `target`.
    Run {
        run: u64,
        order: Box<RunOrder>,
        target: String,
    },
    /// Open the window (start the warm-up) at this instant of the agent's
    /// own clock (the controller has applied the agent's clock offset).
    Start { run: u64, at_unix_ns: u64 },
    /// End the run now (Ctrl-C at the controller, or another agent failed).
    Stop { run: u64 },
    /// No more runs: the agent exits.
    Bye,
}

/// One workload's run as the wire carries it: the engine's `RunConfig`,
/// field for field, with durations in ns. [`RunOrder::of`] and
/// [`RunOrder::into_config`] name every field of both, so a field added to
/// `RunConfig` does not compile until it is carried here (and
/// [`PROTOCOL`] raised).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOrder {
    pub workload: Workload,
    /// Measurement window, ns; `None` when bounded by `transactions` only.
    pub duration_ns: Option<u64>,
    pub warmup_ns: u64,
    /// Exact transactions per class (the whole run's, not the segment's).
    pub transactions: Option<u64>,
    /// Worker threads of the agent.
    pub threads: usize,
    /// Each class on worker threads of its own.
    pub class_workers: bool,
    /// CPUs the agent's driver is pinned to (empty: not pinned).
    pub client_cpus: Vec<usize>,
    pub socket: SocketOptions,
    pub spin: Spin,
    /// How the agent's driver workers schedule themselves (protocol 5).
    pub gen_sched: GenSched,
    pub pacing: PacingConfig,
    pub transport: Transport,
    pub tls: Option<TlsParams>,
    pub priority: Option<ClassPriorities>,
    pub io: IoMode,
    pub protocol: AppProtocol,
    /// Protocol amqp's settings.
    pub amqp: AmqpParams,
    /// Protocol h2's windows and frame size.
    pub h2: H2Params,
    /// `http_error_share`, percent.
    pub http_error_share_pct: f64,
    /// Protocol tn3270's options.
    pub tn3270: Tn3270Options,
    pub path: PathFloor,
    /// The agent's segment of every class.
    pub segment: Segment,
    /// Assemble live figures and send them with the progress.
    pub live_metrics: bool,
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl RunOrder {
    /// The order that runs `cfg`.
    pub fn of(cfg: &RunConfig) -> RunOrder {
        let RunConfig {
            workload,
            duration,
            warmup,
            transactions,
            threads,
            class_workers,
            client_cpus,
            socket,
            spin,
            gen_sched,
            pacing,
            transport,
            tls,
            priority,
            io,
            protocol,
            amqp,
            h2,
            http_error_share_pct,
            tn3270,
            path,
            segment,
            live_metrics,
        } = cfg.clone();
        RunOrder {
            workload,
            duration_ns: duration.map(ns),
            warmup_ns: ns(warmup),
            transactions,
            threads,
            class_workers,
            client_cpus,
            socket,
            spin,
            gen_sched,
            pacing,
            transport,
            tls,
            priority,
            io,
            protocol,
            amqp,
            h2,
            http_error_share_pct,
            tn3270,
            path,
            segment,
            live_metrics,
        }
    }

    /// The engine's configuration this order runs.
    pub fn into_config(self) -> RunConfig {
        let RunOrder {
            workload,
            duration_ns,
            warmup_ns,
            transactions,
            threads,
            class_workers,
            client_cpus,
            socket,
            spin,
            gen_sched,
            pacing,
            transport,
            tls,
            priority,
            io,
            protocol,
            amqp,
            h2,
            http_error_share_pct,
            tn3270,
            path,
            segment,
            live_metrics,
        } = self;
        RunConfig {
            workload,
            duration: duration_ns.map(Duration::from_nanos),
            warmup: Duration::from_nanos(warmup_ns),
            transactions,
            threads,
            class_workers,
            client_cpus,
            socket,
            spin,
            gen_sched,
            pacing,
            transport,
            tls,
            priority,
            io,
            protocol,
            amqp,
            h2,
            http_error_share_pct,
            tn3270,
            path,
            segment,
            live_metrics,
        }
    }
}

/// Where an agent's run is: the engine's `Progress`, durations in ns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressReport {
    pub elapsed_ns: u64,
    /// Clients are still connecting: the window has not opened.
    pub connecting: bool,
    /// Clients connected so far.
    pub connected: u64,
    /// Connecting or warming up.
    pub in_warmup: bool,
    /// Time into the measurement window, ns, once it started.
    pub measured_ns: Option<u64>,
    /// Counted transactions so far, per class.
    pub transactions: Vec<u64>,
    /// The live figures (`live_metrics`), about once a second.
    pub live: Option<LiveRun>,
}

impl ProgressReport {
    pub fn of(p: &Progress) -> ProgressReport {
        let Progress {
            elapsed,
            connecting,
            connected,
            in_warmup,
            measured,
            transactions,
            live,
        } = p.clone();
        ProgressReport {
            elapsed_ns: ns(elapsed),
            connecting,
            connected,
            in_warmup,
            measured_ns: measured.map(ns),
            transactions,
            live: live.map(|l| (*l).clone()),
        }
    }

    pub fn into_progress(self) -> Progress {
        Progress {
            elapsed: Duration::from_nanos(self.elapsed_ns),
            connecting: self.connecting,
            connected: self.connected,
            in_warmup: self.in_warmup,
            measured: self.measured_ns.map(Duration::from_nanos),
            transactions: self.transactions,
            live: self.live.map(Arc::new),
        }
    }
}

/// One agent's result of one run. The classes and CPU figures are the
/// record's own types (`stackbench_record`), carried whole: a field added
/// to them changes this wire too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentResult {
    pub classes: Vec<ClassResult>,
    pub mix_cpu: Option<CpuFigures>,
    pub complete: bool,
    pub incomplete_reason: Option<String>,
    /// When its window opened, on the agent's wall clock (Unix seconds).
    pub window_opened_unix_s: Option<f64>,
    /// The host name of the responder it drove, as that responder's host
    /// reports it (the agent's own host when the target is loopback).
    pub responder_host: String,
    /// Control connections its responder refused over the run (the
    /// difference of the responder's counter between the agent's last
    /// sample before the run and its last of the run); `None`: a plain
    /// server, which counts none.
    pub control_refused: Option<u64>,
}

/// The part of a hello every protocol keeps (see the module's rule), read
/// from a line that is not a message of this protocol: enough to refuse the
/// agent naming its protocol and build.
#[derive(Debug, Deserialize)]
struct Greeting {
    msg: String,
    protocol: u32,
    #[serde(default)]
    version: String,
    /// Absent from protocol 1.
    #[serde(default)]
    commit: Option<String>,
    #[serde(default)]
    dirty: bool,
    #[serde(default)]
    index: u32,
    #[serde(default)]
    count: u32,
    #[serde(default)]
    host: String,
}

/// The refusal of an agent of protocol `theirs` (its `build`), naming both
/// sides: one line.
pub fn mismatch(agent: &str, theirs: u32, build: &Build) -> String {
    format!(
        "{agent} speaks agent wire protocol {theirs} ({build}); this controller speaks \
         protocol {PROTOCOL} ({}): run the same stackbench build on every host",
        Build::this()
    )
}

/// One line read off the wire.
pub enum Decoded<T> {
    Message(T),
    /// A hello of another protocol: the refusal, one line naming both.
    OtherProtocol(String),
    /// Not a message of this protocol (why).
    Garbage(String),
}

/// Reads one line as a message of this protocol; a hello that is not
/// becomes the refusal that names both protocols.
pub fn decode<T: DeserializeOwned>(line: &str) -> Decoded<T> {
    // A hello is read for its protocol first: one of another protocol may
    // have this protocol's shape and still mean something else.
    if let Ok(g) = serde_json::from_str::<Greeting>(line) {
        if g.msg == "hello" && g.protocol != PROTOCOL {
            let build = Build {
                version: g.version,
                commit: g.commit.unwrap_or_else(|| "unknown".to_string()),
                dirty: g.dirty,
            };
            let agent = format!("agent {}/{} on {}", g.index, g.count, g.host);
            return Decoded::OtherProtocol(mismatch(&agent, g.protocol, &build));
        }
    }
    match serde_json::from_str::<T>(line) {
        Ok(msg) => Decoded::Message(msg),
        Err(e) => Decoded::Garbage(e.to_string()),
    }
}

/// Writes one message as one line.
pub fn send<T: Serialize>(stream: &mut TcpStream, msg: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    line.push(b'\n');
    stream.write_all(&line)
}

/// What the reader thread hands over: a message, or why the stream ended.
pub enum Incoming<T> {
    Message(T),
    /// The peer closed the connection, or a line did not parse (the reason).
    Closed(String),
    /// The peer's hello is of another protocol: the refusal naming both.
    OtherProtocol(String),
}

/// Reads messages on a thread of their own into a channel, so that the
/// caller can wait with a timeout or poll without blocking (the driver's
/// watch polls between its ticks). The thread ends with the stream.
pub fn reader<T>(stream: BufReader<TcpStream>, peer: String) -> Receiver<Tagged<T>>
where
    T: DeserializeOwned + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    reader_into(stream, peer, 0, tx);
    rx
}

/// A message (or the end of a stream) with the tag of the connection it
/// came from.
pub type Tagged<T> = (usize, Incoming<T>);

/// [`reader`] into a channel several connections share, each message tagged
/// `tag`: the controller waits on one channel for all its agents, blocking
/// until one speaks instead of polling each in turn. `stream` is the reader
/// the token handshake read from (it may hold what followed).
pub fn reader_into<T>(stream: BufReader<TcpStream>, peer: String, tag: usize, tx: Sender<Tagged<T>>)
where
    T: DeserializeOwned + Send + 'static,
{
    thread::Builder::new()
        .name("agent-control".into())
        .spawn(move || {
            let mut lines = stream;
            let mut line = String::new();
            loop {
                line.clear();
                let end = match lines.read_line(&mut line) {
                    Ok(0) => Some(format!("{peer} closed the control connection")),
                    Err(e) => Some(format!("{peer}: control connection: {e}")),
                    Ok(_) => match decode::<T>(line.trim_end()) {
                        Decoded::Message(msg) => {
                            if tx.send((tag, Incoming::Message(msg))).is_err() {
                                return;
                            }
                            None
                        }
                        Decoded::OtherProtocol(refusal) => {
                            let _ = tx.send((tag, Incoming::OtherProtocol(refusal)));
                            return;
                        }
                        Decoded::Garbage(e) => Some(format!(
                            "{peer} sent a message this stackbench does not understand ({e})"
                        )),
                    },
                };
                if let Some(reason) = end {
                    let _ = tx.send((tag, Incoming::Closed(reason)));
                    return;
                }
            }
        })
        .expect("spawning the control reader thread");
}

/// This host's name, as agents and responders report it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// Now on the wall clock, ns since the Unix epoch.
pub fn now_unix_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_tagged_one_line_json() {
        let hello = FromAgent::Hello(Hello::this(2, 4));
        let text = serde_json::to_string(&hello).unwrap();
        assert!(
            text.starts_with(&format!(r#"{{"msg":"hello","protocol":{PROTOCOL},"#)),
            "{text}"
        );
        assert!(!text.contains('\n'));
        let Decoded::Message(FromAgent::Hello(back)) = decode::<FromAgent>(&text) else {
            panic!("{text} did not read back");
        };
        assert_eq!((back.index, back.count), (2, 4));
        let Decoded::Message(start) =
            decode::<FromController>(r#"{"msg":"start","run":3,"at_unix_ns":5}"#)
        else {
            panic!("start did not read");
        };
        assert_eq!(
            start,
            FromController::Start {
                run: 3,
                at_unix_ns: 5
            }
        );
    }

    #[test]
    fn unknown_fields_are_refused_not_ignored() {
        let line = r#"{"msg":"start","run":3,"at_unix_ns":5,"lead_ns":7}"#;
        let Decoded::Garbage(why) = decode::<FromController>(line) else {
            panic!("a field this side does not know was accepted");
        };
        assert!(why.contains("lead_ns"), "{why}");
        let mut hello = serde_json::to_value(FromAgent::Hello(Hello::this(0, 1))).unwrap();
        hello["shiny"] = true.into();
        let line = hello.to_string();
        assert!(matches!(decode::<FromAgent>(&line), Decoded::Garbage(_)));
    }

    /// A protocol-1 agent's hello (as that release sent it): refused in one
    /// line that names both protocols and both builds.
    #[test]
    fn an_agent_of_protocol_1_is_refused_naming_both() {
        let line = r#"{"msg":"hello","protocol":1,"version":"0.1.0","index":1,"count":2,"host":"h2","pid":7}"#;
        let Decoded::OtherProtocol(why) = decode::<FromAgent>(line) else {
            panic!("a protocol-1 hello was not refused as such");
        };
        assert!(!why.contains('\n'));
        assert!(
            why.starts_with(&format!(
                "agent 1/2 on h2 speaks agent wire protocol 1 (stackbench 0.1.0, commit unknown); \
                 this controller speaks protocol {PROTOCOL} (stackbench "
            )),
            "{why}"
        );
        assert!(why.contains(&Build::this().to_string()), "{why}");
    }

    #[test]
    fn the_run_order_projects_the_run_config_both_ways() {
        let cfg = crate::agents::wire_golden::run_config();
        let back = RunOrder::of(&cfg).into_config();
        // RunConfig has no PartialEq: compare what the wire would carry.
        assert_eq!(RunOrder::of(&back), RunOrder::of(&cfg));
        assert_eq!(back.duration, cfg.duration);
        assert_eq!(back.warmup, cfg.warmup);
    }

    #[test]
    fn build_reads_as_version_commit_and_dirt() {
        let b = Build {
            version: "0.1.0".into(),
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            dirty: true,
        };
        assert_eq!(
            b.to_string(),
            "stackbench 0.1.0, commit 0123456789ab, dirty"
        );
        let this = Build::this();
        assert!(
            this.commit == "unknown" || this.commit.len() == 40,
            "{this:?}"
        );
    }

    mod hostile {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Any line, and any line shaped like a hello or a message of
            /// this wire with hostile values, decodes to a message, a
            /// refusal or garbage: never a panic.
            #[test]
            fn hostile_lines_never_panic_the_agent_wire_decoder(
                raw in "\\PC{0,400}",
                msg in prop::sample::select(vec!["hello", "pong", "armed", "progress", "done", "failed", "run", "start", "stop"]),
                protocol in any::<i64>(),
                value in "[ -~]{0,120}",
            ) {
                let shaped = format!(
                    r#"{{"msg":"{msg}","protocol":{protocol},"run":{protocol},"version":"{value}","index":{protocol},"count":0,"host":"{value}","part":{{}},"order":{{}}}}"#
                );
                for line in [raw.as_str(), shaped.as_str(), value.as_str()] {
                    let _ = decode::<FromAgent>(line);
                    let _ = decode::<FromController>(line);
                }
            }
        }
    }
}
