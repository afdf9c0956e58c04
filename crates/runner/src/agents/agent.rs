//! The agent: a driver process that runs one segment of a controller's runs
//! (`stackbench agent --controller HOST:PORT`). It says hello with its
//! segment, answers the controller's clock probes, and for each run connects
//! its clients to the responder it is given, reports armed, opens its window
//! at the controller's start time and sends back what it measured. It exits
//! when the controller says bye or its connection closes — also in the
//! middle of a run, within one tick of the driver's watch — so a controller
//! that dies leaves no agent behind.

use std::collections::HashMap;
use std::io::{BufReader, ErrorKind};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant, UNIX_EPOCH};

use stackbench_engine::affinity::pin_current_thread;
use stackbench_engine::token::{self, Proved, Refusal, Token, TOKEN_ENV};
use stackbench_engine::{run_workload_gated, ControlClient, GateState, RunConfig, StartGate};
use stackbench_model::segment::Segment;

use crate::agents::wire::{
    self, host_name, now_unix_ns, send, AgentResult, FromAgent, FromController, Hello, Incoming,
    ProgressReport, Tagged,
};
use crate::error::{input, RunError};

/// How long an agent keeps trying to reach its controller: an agent started
/// by a cluster engine may come up before the controller listens.
const CONNECT_PATIENCE: Duration = Duration::from_secs(60);
/// How often an agent tells the controller where its run is.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);

/// The segment an agent takes: `--segment I/N`, else Slurm's task rank
/// (`SLURM_PROCID` of `SLURM_NTASKS`), else a Kubernetes Indexed Job's
/// (`JOB_COMPLETION_INDEX` of `STACKBENCH_AGENTS`).
pub fn segment_from(
    flag: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Segment, String> {
    let parse = |i: &str, n: &str, from: &str| -> Result<Segment, String> {
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| format!("{from}: '{t}' is not a whole number"))
        };
        Segment::new(num(i)?, num(n)?).map_err(|e| format!("{from}: {e}"))
    };
    if let Some(text) = flag {
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("--segment '{text}': use I/N, e.g. 0/4 (agent 0 of 4)"))?;
        return parse(i, n, "--segment");
    }
    if let (Some(i), Some(n)) = (env("SLURM_PROCID"), env("SLURM_NTASKS")) {
        return parse(&i, &n, "SLURM_PROCID/SLURM_NTASKS");
    }
    if let (Some(i), Some(n)) = (env("JOB_COMPLETION_INDEX"), env("STACKBENCH_AGENTS")) {
        return parse(&i, &n, "JOB_COMPLETION_INDEX/STACKBENCH_AGENTS");
    }
    Err(
        "no segment: give --segment I/N, or run under srun (SLURM_PROCID, SLURM_NTASKS) or as a \
         Kubernetes Indexed Job (JOB_COMPLETION_INDEX with STACKBENCH_AGENTS)"
            .to_string(),
    )
}

/// Runs the agent until the controller says bye or goes away. `token` is
/// the run's: proved to the controller (which must prove it back) and to the
/// responders. `stop` (the agent's own Ctrl-C) ends the run in progress and
/// the agent.
pub fn agent_main(
    controller: &str,
    segment: Segment,
    token: &Token,
    stop: &AtomicBool,
) -> Result<(), RunError> {
    let mut stream = connect(controller)?;
    let hello = Hello::this(segment.index(), segment.count());
    let lines = prove_to(controller, &mut stream, token, &hello)?;
    let rx = wire::reader::<FromController>(lines, format!("the controller {controller}"));
    send(&mut stream, &FromAgent::Hello(hello))
        .map_err(|e| RunError::runtime("saying hello to the controller", e))?;
    let mut responders: HashMap<String, ControlClient> = HashMap::new();
    let mut welcomed = false;
    loop {
        // Until the welcome, the peer has not shown it is a controller.
        let got = if welcomed {
            rx.recv().ok()
        } else {
            rx.recv_timeout(CONNECT_PATIENCE).ok()
        };
        let msg = match got {
            Some((_, Incoming::Message(m))) => m,
            Some((_, Incoming::Closed(why) | Incoming::OtherProtocol(why))) if !welcomed => {
                return input(not_a_controller(controller, &why));
            }
            None if !welcomed => {
                let why = format!("it sent nothing in {} s", CONNECT_PATIENCE.as_secs());
                return input(not_a_controller(controller, &why));
            }
            // The controller ended without a bye (it died): nothing to do.
            Some((_, Incoming::Closed(_) | Incoming::OtherProtocol(_))) | None => return Ok(()),
        };
        match msg {
            FromController::Welcome => welcomed = true,
            FromController::Refused { reason } => return input(reason),
            FromController::Ping { seq } => {
                let pong = FromAgent::Pong {
                    seq,
                    agent_unix_ns: now_unix_ns(),
                };
                send(&mut stream, &pong).map_err(|e| RunError::runtime("control", e))?;
            }
            FromController::Run { run, order, target } => {
                let reply = run_one(
                    run,
                    &order.into_config(),
                    (&target, token),
                    &mut responders,
                    (&mut stream, &rx),
                    stop,
                );
                send(&mut stream, &reply).map_err(|e| RunError::runtime("control", e))?;
            }
            FromController::Bye => return Ok(()),
            // A start or stop of a run already over.
            FromController::Start { .. } | FromController::Stop { .. } => {}
        }
    }
}

/// The token handshake with the controller (channel `agents`): the
/// controller must prove the token too. The start line carries the hello's
/// kept fields, so that a controller of an earlier protocol refuses this
/// agent naming both. A peer that answers as no controller would (a web
/// server, a responder's control port, one that closes or stays silent) is
/// named as such ([`not_a_controller`]). Returns the reader the messages
/// follow on.
fn prove_to(
    controller: &str,
    stream: &mut TcpStream,
    token: &Token,
    hello: &Hello,
) -> Result<BufReader<TcpStream>, RunError> {
    let mut lines = BufReader::new(
        stream
            .try_clone()
            .map_err(|e| RunError::runtime("control connection", e))?,
    );
    let greeting = match serde_json::to_value(FromAgent::Hello(hello.clone())) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    };
    let refused = |why: String| {
        input(format!(
            "the controller {controller} refused this agent, or it refused the controller: \
             {why}: give every agent the run's token (--token-file FILE, or {TOKEN_ENV})"
        ))
    };
    // Until it answers, the peer has not shown it is a controller: it has
    // as long to answer as it then has to welcome the agent.
    stream
        .set_read_timeout(Some(CONNECT_PATIENCE))
        .map_err(|e| RunError::runtime("control connection", e))?;
    let proved = token::prove(&mut lines, stream, "agents", Some(token), (greeting, true));
    let outcome = match proved {
        Ok(Proved::Challenged) => token::verdict(&mut lines),
        Ok(Proved::Open) => unreachable!("prove refuses an open controller when required"),
        Err(r) => Err(r),
    };
    stream
        .set_read_timeout(None)
        .map_err(|e| RunError::runtime("control connection", e))?;
    match outcome {
        Ok(()) => Ok(lines),
        // A listener of another channel: a responder's control port.
        Err(Refusal::Refused(why)) if why.starts_with(token::OTHER_CHANNEL) => input(
            not_a_controller(controller, &format!("it said this agent {why}")),
        ),
        Err(Refusal::Refused(why)) => refused(why),
        // An older controller refuses in its own words; anything else is
        // not a controller.
        Err(Refusal::Foreign(line)) => match wire::decode::<FromController>(&line) {
            wire::Decoded::Message(FromController::Refused { reason }) => input(reason),
            _ if line.starts_with('\u{FFFD}') => input(not_a_controller(
                controller,
                "it opened with Telnet negotiation",
            )),
            _ => input(not_a_controller(
                controller,
                &format!(
                    "it sent a message this stackbench does not understand ({:?})",
                    first_line(&line)
                ),
            )),
        },
        Err(Refusal::Closed) => input(not_a_controller(
            controller,
            "it closed the connection without answering the hello",
        )),
        Err(Refusal::Io(e)) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            let why = format!("it sent nothing in {} s", CONNECT_PATIENCE.as_secs());
            input(not_a_controller(controller, &why))
        }
        // A connection reset or broken at the start line (a peer that
        // closes at once with the line unread).
        Err(Refusal::Io(e)) => input(not_a_controller(
            controller,
            &format!("the connection failed at the hello ({e})"),
        )),
    }
}

/// The first line of what a peer sent, at most 60 characters.
fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or(text);
    line.chars().take(60).collect()
}

/// `controller` answered this agent's hello as no controller would.
fn not_a_controller(controller: &str, why: &str) -> String {
    // The reader names its peer ("the controller HOST:PORT closed …"):
    // here the line already does.
    let peer = format!("the controller {controller}");
    let why = match why.strip_prefix(&peer) {
        Some(rest) if rest.starts_with(':') => rest[1..].trim_start().to_string(),
        Some(rest) => format!("it{rest}"),
        None => why.to_string(),
    };
    format!(
        "--controller {controller} is not a stackbench controller ({why}): give the \
         --agent-listen address of the `run` or `study` started with --agents"
    )
}

/// Connects to the controller, retrying while it is not yet listening.
fn connect(controller: &str) -> Result<TcpStream, RunError> {
    let deadline = Instant::now() + CONNECT_PATIENCE;
    loop {
        let addrs: Vec<_> = controller
            .to_socket_addrs()
            .or_else(|e| input(format!("--controller '{controller}': {e}: use HOST:PORT")))?
            .collect();
        let tried = addrs
            .iter()
            .find_map(|a| TcpStream::connect_timeout(a, Duration::from_secs(2)).ok());
        match tried {
            Some(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(200)),
            None => {
                return Err(RunError::Runtime(format!(
                    "no controller answered at {controller} within {} s: start the run or study \
                     with --agents first, or check the address",
                    CONNECT_PATIENCE.as_secs()
                )))
            }
        }
    }
}

/// One run of the agent's segment: its answer to the controller.
fn run_one(
    run: u64,
    cfg: &RunConfig,
    (target, token): (&str, &Token),
    responders: &mut HashMap<String, ControlClient>,
    (stream, rx): (&mut TcpStream, &Receiver<Tagged<FromController>>),
    stop: &AtomicBool,
) -> FromAgent {
    let failed = |error: String| FromAgent::Failed { run, error };
    if !cfg.client_cpus.is_empty() {
        if let Err(e) = pin_current_thread(&cfg.client_cpus) {
            return failed(format!("client_cpus: {e}"));
        }
    }
    if !responders.get(target).is_some_and(ControlClient::is_alive) {
        match ControlClient::connect_with(target, Some(token)) {
            Ok(c) => responders.insert(target.to_string(), c),
            Err(e) => return failed(format!("responder {target}: {e}")),
        };
    }
    let control = responders.get_mut(target).expect("connected above");
    let responder_host = if control.target().ip().is_loopback() {
        host_name()
    } else {
        control.target().ip().to_string()
    };
    let mut progress_to = stream.try_clone().ok();
    let mut gate = ControllerGate {
        run,
        stream,
        rx,
        armed_sent: false,
    };
    let mut last = Instant::now();
    let mut report = |p: &stackbench_engine::Progress| {
        // Live figures (about once a second) always go: the controller
        // serving them would otherwise miss those that fall between reports.
        if last.elapsed() < PROGRESS_EVERY && p.live.is_none() {
            return;
        }
        last = Instant::now();
        if let Some(s) = progress_to.as_mut() {
            let msg = FromAgent::Progress {
                run,
                progress: ProgressReport::of(p),
            };
            let _ = send(s, &msg);
        }
    };
    let refused_before = control.refused_peers();
    let outcome = run_workload_gated(control, cfg, Some(&mut gate), stop, &mut report);
    let control_refused = control
        .refused_peers()
        .zip(refused_before)
        .map(|(after, before)| after.saturating_sub(before));
    match outcome {
        Ok(o) => FromAgent::Done {
            run,
            part: Box::new(AgentResult {
                classes: o.classes,
                mix_cpu: o.mix_cpu,
                complete: o.complete,
                incomplete_reason: o.incomplete_reason,
                window_opened_unix_s: o.window_opened_unix_s,
                responder_host,
                control_refused,
            }),
        },
        Err(e) => failed(e.to_string()),
    }
}

/// The start barrier as the driver's watch sees it: says armed once, then
/// waits for the controller's start time; a stop, or the controller's
/// connection closing, ends the run.
struct ControllerGate<'a> {
    run: u64,
    stream: &'a mut TcpStream,
    rx: &'a Receiver<Tagged<FromController>>,
    armed_sent: bool,
}

impl StartGate for ControllerGate<'_> {
    fn poll(&mut self, armed: bool) -> GateState {
        if armed && !self.armed_sent {
            self.armed_sent = true;
            if let Err(e) = send(self.stream, &FromAgent::Armed { run: self.run }) {
                return GateState::Abort(format!("the controller's connection failed: {e}"));
            }
        }
        loop {
            match self.rx.try_recv().map(|(_, m)| m) {
                Ok(Incoming::Message(FromController::Start { run, at_unix_ns }))
                    if run == self.run =>
                {
                    return GateState::StartAt(UNIX_EPOCH + Duration::from_nanos(at_unix_ns));
                }
                Ok(Incoming::Message(FromController::Stop { run })) if run == self.run => {
                    return GateState::Abort("stopped by the controller".to_string());
                }
                Ok(Incoming::Message(FromController::Ping { seq })) => {
                    let pong = FromAgent::Pong {
                        seq,
                        agent_unix_ns: now_unix_ns(),
                    };
                    let _ = send(self.stream, &pong);
                }
                Ok(Incoming::Message(_)) => {} // a message of another run
                Ok(Incoming::Closed(reason) | Incoming::OtherProtocol(reason)) => {
                    return GateState::Abort(format!("controller lost: {reason}"))
                }
                Err(TryRecvError::Empty) => return GateState::Wait,
                Err(TryRecvError::Disconnected) => {
                    return GateState::Abort("controller lost".to_string())
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn segment_from_flag_then_slurm_then_kubernetes() {
        let none = env_of(&[]);
        assert_eq!(segment_from(Some("2/4"), &none).unwrap().to_string(), "2/4");
        let slurm = env_of(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "3")]);
        assert_eq!(segment_from(None, &slurm).unwrap().to_string(), "1/3");
        let k8s = env_of(&[("JOB_COMPLETION_INDEX", "5"), ("STACKBENCH_AGENTS", "8")]);
        assert_eq!(segment_from(None, &k8s).unwrap().to_string(), "5/8");
        // The flag wins over the environment.
        assert_eq!(
            segment_from(Some("0/2"), &slurm).unwrap().to_string(),
            "0/2"
        );
    }

    #[test]
    fn bad_segments_are_one_line_with_the_fix() {
        let none = env_of(&[]);
        assert!(segment_from(None, &none)
            .unwrap_err()
            .contains("--segment I/N"));
        assert!(segment_from(Some("4/4"), &none)
            .unwrap_err()
            .contains("0 to 3"));
        assert!(segment_from(Some("0/0"), &none)
            .unwrap_err()
            .contains("at least 1"));
        assert!(segment_from(Some("x"), &none)
            .unwrap_err()
            .contains("use I/N"));
        let bad = env_of(&[("SLURM_PROCID", "a"), ("SLURM_NTASKS", "2")]);
        assert!(segment_from(None, &bad)
            .unwrap_err()
            .contains("SLURM_PROCID"));
    }
}
