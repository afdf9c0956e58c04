//! The control protocol between a controller and its agents: one JSON object
//! per line over TCP, as the driver↔responder control connection is (and as
//! netperf's and neper's control ports are). The agent speaks first
//! ([`FromAgent::Hello`] with its version and segment); a controller of
//! another version refuses it in one line, since a field one side ignored
//! would change what is measured. Every message carries the run it belongs
//! to, so that a late answer to a run that was given up is never taken for
//! the next one's.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;

use serde::{Deserialize, Serialize};
use stackbench_engine::{Progress, RunConfig};
use stackbench_record::{ClassResult, CpuFigures};

/// Version of this protocol; both sides must also be the same stackbench.
pub const PROTOCOL: u32 = 1;

/// This build's version, compared in the hello.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What an agent sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum FromAgent {
    /// First message: who the agent is and which segment it takes.
    Hello {
        protocol: u32,
        version: String,
        index: u32,
        count: u32,
        host: String,
        pid: u32,
    },
    /// Answer to [`FromController::Ping`]: the agent's wall clock when it
    /// read the ping, in ns since the Unix epoch.
    Pong { seq: u32, agent_unix_ns: u64 },
    /// Every client of the agent's segment is connected: ready to start.
    Armed { run: u64 },
    /// Where its run is (about once a second), for the controller's progress line.
    Progress { run: u64, progress: Progress },
    /// The run is over; what the agent measured.
    Done { run: u64, part: Box<AgentResult> },
    /// The run could not start here (no responder, a refused option…).
    Failed { run: u64, error: String },
}

/// What a controller sends.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
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
        config: Box<RunConfig>,
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

/// One agent's result of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
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
}

/// Reads messages on a thread of their own into a channel, so that the
/// caller can wait with a timeout or poll without blocking (the driver's
/// watch polls between its ticks). The thread ends with the stream.
pub fn reader<T>(stream: TcpStream, peer: String) -> Receiver<Tagged<T>>
where
    T: for<'de> Deserialize<'de> + Send + 'static,
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
/// until one speaks instead of polling each in turn.
pub fn reader_into<T>(stream: TcpStream, peer: String, tag: usize, tx: Sender<Tagged<T>>)
where
    T: for<'de> Deserialize<'de> + Send + 'static,
{
    thread::Builder::new()
        .name("agent-control".into())
        .spawn(move || {
            let mut lines = BufReader::new(stream);
            let mut line = String::new();
            loop {
                line.clear();
                let end = match lines.read_line(&mut line) {
                    Ok(0) => Some(format!("{peer} closed the control connection")),
                    Err(e) => Some(format!("{peer}: control connection: {e}")),
                    Ok(_) => match serde_json::from_str::<T>(line.trim_end()) {
                        Ok(msg) => {
                            if tx.send((tag, Incoming::Message(msg))).is_err() {
                                return;
                            }
                            None
                        }
                        Err(e) => Some(format!(
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
        let hello = FromAgent::Hello {
            protocol: PROTOCOL,
            version: VERSION.into(),
            index: 2,
            count: 4,
            host: "h".into(),
            pid: 7,
        };
        let text = serde_json::to_string(&hello).unwrap();
        assert!(text.starts_with(r#"{"msg":"hello""#), "{text}");
        assert!(!text.contains('\n'));
        let back: FromAgent = serde_json::from_str(&text).unwrap();
        assert!(matches!(
            back,
            FromAgent::Hello {
                index: 2,
                count: 4,
                ..
            }
        ));
        let start: FromController =
            serde_json::from_str(r#"{"msg":"start","run":3,"at_unix_ns":5}"#).unwrap();
        assert!(matches!(
            start,
            FromController::Start {
                run: 3,
                at_unix_ns: 5
            }
        ));
    }
}
