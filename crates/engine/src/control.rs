//! The control protocol between driver and responder: versioned JSON messages,
//! one per line, on a TCP control connection separate from the data
//! connections (as netperf's netserver port 12865 and neper's control port do).
//! Data connections carry only payload bytes; everything else — sizes, kind,
//! socket options, the data port, the server's own statistics — travels here.
//!
//! Exchange: the run token's handshake ([`crate::token`]: one round trip,
//! the driver's proof pipelined with its hello), `hello` → `hello`; then any number of `start` → `ready` and
//! `stop` → `stopped`. `start` names the transport and the client count (the
//! responder raises its descriptor limit for them) and how many listener
//! ports to open; `ready` lists the data endpoints — `IP:port`, or AF_UNIX
//! socket paths — that serve exactly that test, and `stop` → `stopped`
//! (with the responder's counters for the test), and `sample` → `sample` (the
//! responder's own CPU and memory counters at that instant). When the control connection
//! closes, the responder tears down every test it started, so a killed driver
//! leaves nothing behind.

use std::io::{self, BufRead, Read, Write};

use serde::{Deserialize, Serialize};
use stackbench_metrics::cpu::CpuSample;
use stackbench_metrics::memory::MemorySample;
use stackbench_metrics::threads::ThreadTimes;
use stackbench_model::settings::Tn3270Options;
use stackbench_model::{AppProtocol, IoMode, Kind, SocketOptions, TlsParams, Transport};

pub use crate::test_stats::{ServerTestStats, SMC_REASONS};
use crate::transport::Endpoint;

/// Version of the messages below. A peer with another version is refused with
/// a message naming both versions. It rises whenever what the responder does
/// changes, not only when a message stops parsing: an older responder would
/// ignore a new field silently (serde defaults) and measure something else.
/// Version 2: `start` carries the transport, client count and ports wanted;
/// `ready` carries endpoints, not a bare port. Version 3: the socket options
/// carry `cork` (long responses corked until their last chunk), `start` asks
/// for the test's own worker threads (`class_workers`), and `sample` replies
/// with the responder's own sockets' memory and per-test thread times.
/// Version 4: a test names its application protocol (`protocol`: raw or
/// http1), which changes what the responder reads and writes. Version 5:
/// `protocol` may be tn3270, whose data connections open with the
/// responder's Telnet negotiation (a version-4 responder cannot read it).
/// (The `stopped` counters of which backend served a test's connections
/// did not raise it: they change what is reported, not what is served, and
/// an older responder's zeros read as "not counted".) Version 6: a tn3270
/// test's responder offers TN3270E and speaks it with a terminal that
/// agrees (a version-5 one refused it), or refuses it as `tn3270` says;
/// every connection opens with the run token's handshake ([`crate::token`],
/// channel `control`) before the hello, and the hello and sample replies
/// carry the responder's count of refused control connections
/// (`refused_peers`). Version 7: a tn3270 test may ask for the demo
/// application (`tn3270.app`), which a version-6 responder would ignore,
/// answering a script's screens with sized echo records; the hello says
/// the responder's `bounds`, what `serve --max-…` lets any driver ask, so
/// a driver asking beyond them is refused before the run (the responder
/// enforces them whether a driver reads them or not).
pub const PROTOCOL_VERSION: u32 = 7;

/// Longest control line accepted; a longer one is a protocol error, not an
/// allocation of whatever size the peer chooses.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// What a responder lets any driver ask (`serve --max-…`), advertised in its
/// hello: a driver refuses a workload beyond them in one line before
/// anything starts ([`Bounds::refusal`]), rather than at the test's `start`,
/// where the responder refuses it in the same words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// Tests one control connection may hold open at once.
    pub tests_per_session: u32,
    /// Connections one test may announce.
    pub clients_per_test: u32,
    /// Bytes of one request or one response.
    pub message_bytes: u64,
    /// How long one control connection may last, seconds.
    pub session_s: u64,
}

impl Bounds {
    /// Why a test asking for `clients` connections and messages of up to
    /// `message_bytes`, with `open_tests` already open on its control
    /// connection, is beyond these bounds (`None`: it is not), naming the
    /// bound and the `serve` flag that raises it.
    pub fn refusal(&self, open_tests: usize, clients: u32, message_bytes: u64) -> Option<String> {
        let over = |what: String, limit: String, flag: &str| {
            Some(format!(
                "{what} exceeds this responder's limit of {limit} (serve {flag}): \
                 ask less, or have its operator raise the limit"
            ))
        };
        if open_tests >= self.tests_per_session as usize {
            over(
                format!("a test beyond the {open_tests} this control connection holds"),
                format!("{} tests", self.tests_per_session),
                "--max-tests",
            )
        } else if clients > self.clients_per_test {
            over(
                format!("{clients} connections"),
                format!("{} per test", self.clients_per_test),
                "--max-clients",
            )
        } else if message_bytes > self.message_bytes {
            over(
                format!("a message of {message_bytes} bytes"),
                format!("{} bytes", self.message_bytes),
                "--max-message-bytes",
            )
        } else {
            None
        }
    }
}

/// What one test asks of the responder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSpec {
    pub kind: Kind,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Options for the test's sockets, with its class's priority level
    /// (`priority`), which the responder sets on every accepted socket.
    pub socket: SocketOptions,
    /// The responder busy-polls (epoll with zero timeout, or the recv of a lone connection) instead of sleeping
    /// while this test is active: the run's `spin` names the responder
    /// (`responder` or `both`). The driver's own spinning is not sent.
    pub spin: bool,
    /// The I/O backend the responder serves this test's connections with
    /// (the driver's effective one; absent from older drivers: epoll).
    #[serde(default)]
    pub io: IoMode,
    /// The application protocol its connections speak (absent from older
    /// drivers: raw).
    #[serde(default)]
    pub protocol: AppProtocol,
    /// Protocol tn3270's options: the responder takes what it does with
    /// TN3270E (`responder`) and the screen of its BIND image (`model`)
    /// (absent from older drivers: TN3270E offered, model 2).
    #[serde(default)]
    pub tn3270: Tn3270Options,
}

/// Driver → responder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    Hello {
        version: u32,
        software: String,
    },
    Start {
        spec: TestSpec,
        transport: Transport,
        /// Connections the driver will open (the responder reserves file
        /// descriptors for them).
        clients: u32,
        /// Listener ports wanted (TCP, MPTCP): the driver spreads its
        /// connections over them when one port's 4-tuples would run out.
        ports: u32,
        /// Transport `tls`: version, cipher, groups and certificate (boxed:
        /// the message's largest part, rarely present; the wire is the same).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tls: Option<Box<TlsParams>>,
        /// `class_workers`: serve this test on this many worker threads of
        /// its own, started for it, and report their CPU time in every
        /// sample (0: the shared pool; an older responder ignores it and
        /// reports no threads, so the driver keeps its side `mix`).
        #[serde(default, skip_serializing_if = "is_zero")]
        own_workers: u32,
        /// CPUs the test's own workers are pinned to, a share of the
        /// responder's (empty: not pinned beyond the process).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        own_cpus: Vec<usize>,
    },
    Stop {
        test_id: u64,
    },
    /// Sample the responder's own CPU counters (and memory) now; the driver
    /// asks at the start and end of each measurement window, as netperf's
    /// netserver measures its side for `-C`.
    Sample,
}

/// Responder → driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    Hello {
        version: u32,
        software: String,
        /// Worker threads of the responder.
        threads: u32,
        /// CPUs the responder is pinned to (empty: not pinned).
        cpus: Vec<usize>,
        /// Control connections the responder has refused since it started
        /// (no token, another token, beyond its session limit).
        #[serde(default)]
        refused_peers: u64,
        /// What this responder lets any driver ask (`None`: a responder
        /// older than the field, which refuses at `start`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bounds: Option<Bounds>,
    },
    Ready {
        test_id: u64,
        /// Where to connect; the driver spreads its clients over them.
        endpoints: Vec<Endpoint>,
    },
    Stopped {
        test_id: u64,
        stats: ServerTestStats,
    },
    Sample {
        cpu: CpuSample,
        /// `None` when /proc could not be read.
        memory: Option<MemorySample>,
        /// The processes summed in `cpu` and `memory`: the responder and
        /// its TLS proxies (`tls_mode sidecar`).
        #[serde(default)]
        pids: Vec<u32>,
        /// The CPU time of the worker threads of each test that has its own
        /// (`own_workers`), at the same instant as `cpu`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        test_threads: Vec<TestThreads>,
        /// Control connections refused since the responder started, at
        /// that instant (the run's share is the difference of two samples).
        #[serde(default)]
        refused_peers: u64,
    },
    Error {
        message: String,
    },
}

/// The CPU time of one test's own worker threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestThreads {
    pub test_id: u64,
    pub times: ThreadTimes,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Writes one message as a JSON line and flushes it.
pub fn send<T: Serialize>(out: &mut impl Write, msg: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Reads one message; `Ok(None)` at a clean end of stream.
pub fn recv<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> io::Result<Option<T>> {
    let mut line = Vec::new();
    let n = Read::take(&mut *input, MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.len() > MAX_LINE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "control message too long",
        ));
    }
    serde_json::from_slice(&line).map(Some).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad control message: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    #[test]
    fn a_hello_names_the_bounds_and_an_older_one_reads_without_them() {
        let bounds = Bounds {
            tests_per_session: 2,
            clients_per_test: 4,
            message_bytes: 1000,
            session_s: 60,
        };
        let hello = Reply::Hello {
            version: PROTOCOL_VERSION,
            software: "stackbench".into(),
            threads: 1,
            cpus: vec![],
            refused_peers: 0,
            bounds: Some(bounds),
        };
        let mut buf = Vec::new();
        send(&mut buf, &hello).unwrap();
        let back: Reply = recv(&mut BufReader::new(&buf[..])).unwrap().unwrap();
        assert_eq!(back, hello);
        // A responder of this protocol version before the field.
        let older = br#"{"type":"hello","version":6,"software":"s","threads":1,"cpus":[]}
"#;
        let back: Reply = recv(&mut BufReader::new(&older[..])).unwrap().unwrap();
        assert!(
            matches!(back, Reply::Hello { bounds: None, .. }),
            "{back:?}"
        );
        // Each bound in the responder's words, the first one exceeded.
        assert_eq!(bounds.refusal(1, 4, 1000), None);
        assert_eq!(
            bounds.refusal(2, 5, 1001).unwrap(),
            "a test beyond the 2 this control connection holds exceeds this responder's limit \
             of 2 tests (serve --max-tests): ask less, or have its operator raise the limit"
        );
        assert!(bounds
            .refusal(0, 5, 1001)
            .unwrap()
            .starts_with("5 connections exceeds"));
        assert!(bounds
            .refusal(0, 4, 1001)
            .unwrap()
            .contains("(serve --max-message-bytes)"));
    }

    #[test]
    fn messages_round_trip_as_lines() {
        let spec = TestSpec {
            kind: Kind::Crr,
            request_bytes: 64,
            response_bytes: 8192,
            socket: SocketOptions::default(),
            spin: false,
            io: IoMode::Epoll,
            protocol: Default::default(),
            tn3270: Default::default(),
        };
        let mut buf = Vec::new();
        let start = Request::Start {
            spec,
            transport: Transport::Unix,
            clients: 3,
            ports: 1,
            tls: None,
            own_workers: 0,
            own_cpus: Vec::new(),
        };
        send(&mut buf, &start).unwrap();
        send(&mut buf, &Request::Stop { test_id: 7 }).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(
            text.starts_with(r#"{"type":"start","spec":{"kind":"CRR""#)
                && text.contains(r#""transport":"unix","clients":3,"ports":1}"#),
            "{text}"
        );
        let ready = Reply::Ready {
            test_id: 1,
            endpoints: vec![Endpoint::Unix("/tmp/s/w0.sock".into())],
        };
        assert_eq!(
            serde_json::to_string(&ready).unwrap(),
            r#"{"type":"ready","test_id":1,"endpoints":[{"unix":"/tmp/s/w0.sock"}]}"#
        );
        let mut r = BufReader::new(&buf[..]);
        assert_eq!(recv::<Request>(&mut r).unwrap(), Some(start));
        assert_eq!(
            recv::<Request>(&mut r).unwrap(),
            Some(Request::Stop { test_id: 7 })
        );
        assert_eq!(recv::<Request>(&mut r).unwrap(), None);
    }

    #[test]
    fn garbage_and_overlong_lines_are_errors() {
        let mut r = BufReader::new(&b"not json\n"[..]);
        assert!(recv::<Request>(&mut r).is_err());
        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut r = BufReader::new(&long[..]);
        assert!(recv::<Request>(&mut r).is_err());
    }

    mod hostile {
        use super::super::*;
        use proptest::prelude::*;
        use std::io::BufReader;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// Any bytes read as control messages: a message, an error or
            /// the end, never a panic, and never more than one line's bound.
            #[test]
            fn hostile_bytes_never_panic_the_control_decoder(
                bytes in proptest::collection::vec(any::<u8>(), 0..4096),
                tagged in "[ -~]{0,200}",
            ) {
                for input in [bytes.clone(), format!(r#"{{"type":"start",{tagged}}}"#).into_bytes()] {
                    let mut r = BufReader::new(&input[..]);
                    for _ in 0..8 {
                        match recv::<Request>(&mut r) {
                            Ok(Some(_)) => {}
                            Ok(None) | Err(_) => break,
                        }
                    }
                    let mut r = BufReader::new(&input[..]);
                    let _ = recv::<Reply>(&mut r);
                }
            }
        }
    }
}
