//! The driver's end of the control connection (its messages are
//! [`crate::control`]'s; this private module shares the name because it is
//! the driver's half of them), or, for a
//! target named by a protocol's scheme, of none: a plain server driven
//! directly in its protocol — `http://HOST:PORT` (nginx, any HTTP/1.1
//! server) with `protocol http1`, `tn3270://HOST:PORT` (a TN3270 server)
//! with `protocol tn3270` — its one address the data endpoint of every
//! test, with no responder counters. Its CPU and memory samples are its
//! processes' when they run on this host ([`ControlClient::measure_server`],
//! [`crate::server_side`]); otherwise those figures are absent from the
//! record, not zero.

use std::io::{BufReader, BufWriter, ErrorKind};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::control::{self, Bounds, Reply, Request, ServerTestStats, TestSpec, PROTOCOL_VERSION};
use crate::error::EngineError;
use crate::server_side::ServerSide;
use crate::token::{self, Proved, Refusal, Token};
use crate::transport::{Endpoint, Transport};
use stackbench_model::settings::PlainTarget;
use stackbench_model::{AmqpParams, AppProtocol, TlsParams};

/// How long to wait for the responder to accept the control connection, and
/// for any control reply.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// A control session with a responder (or the stand-in for a plain server).
pub struct ControlClient {
    target: SocketAddr,
    /// The control connection; `None`: a plain server, which has none.
    link: Option<Link>,
    /// A plain server: the protocol its target's scheme named.
    plain: Option<AppProtocol>,
    /// A plain server: its target's host, path and whether its scheme
    /// named TLS (`https://`).
    plain_target: Option<PlainParts>,
    /// A plain server: ids handed out for its tests.
    plain_tests: u64,
    /// Worker threads of the responder.
    pub server_threads: u32,
    /// CPUs the responder is pinned to (empty: not pinned).
    pub server_cpus: Vec<usize>,
    /// A plain server's processes on this host, sampled as its side
    /// ([`Self::measure_server`]).
    server: Option<ServerSide>,
    /// Against a broker: its responder application's processes, sampled as
    /// a third side.
    application: Option<ServerSide>,
    /// The responder's count of refused control connections, as its latest
    /// hello or sample reply gave it (`None`: a plain server).
    refused_peers: Option<u64>,
    /// What the responder lets any driver ask, as its hello said (`None`:
    /// a plain server, or a responder too old to say).
    bounds: Option<Bounds>,
}

/// What a plain server's target says beyond its address.
#[derive(Debug, Clone)]
pub struct PlainParts {
    /// The scheme as written (`http://`, `https://`).
    pub scheme: &'static str,
    /// `HOST:PORT` as written.
    pub address: String,
    /// The host alone: the HTTP `Host` header and the TLS server name.
    pub host: String,
    /// The path every request names (`None`: the notation's `/N`).
    pub path: Option<String>,
    /// The scheme named TLS: the run goes over transport tls.
    pub tls: bool,
}

struct Link {
    stream: TcpStream,
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
}

/// How long the probe of a plain HTTP server waits for its answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The socket address `target` (`HOST:PORT`) resolves to first.
fn resolve(target: &str) -> Result<SocketAddr, EngineError> {
    target
        .to_socket_addrs()
        .map_err(|e| EngineError::BadTarget(target.to_string(), e.to_string()))?
        .next()
        .ok_or_else(|| EngineError::BadTarget(target.to_string(), "no address".into()))
}

impl ControlClient {
    /// [`Self::connect_with`] without a token: a responder that holds one
    /// refuses it.
    pub fn connect(target: &str) -> Result<ControlClient, EngineError> {
        Self::connect_with(target, None)
    }

    /// Connects to `target` (`HOST:PORT`), proves `token` in the run
    /// token's handshake ([`crate::token`]; a responder with another token
    /// is refused, one that holds none is served as before) and exchanges
    /// hellos; for `http://HOST:PORT`, checks that the plain server accepts
    /// a connection (see [`Self::is_plain`]).
    pub fn connect_with(target: &str, token: Option<&Token>) -> Result<ControlClient, EngineError> {
        if let Some(t) = PlainTarget::parse(target) {
            let parts = PlainParts {
                scheme: t.scheme,
                address: t.address.to_string(),
                host: t.host.to_string(),
                path: t.path.filter(|p| *p != "/").map(str::to_string),
                tls: t.tls,
            };
            return Self::plain(parts, t.protocol);
        }
        let addr = resolve(target)?;
        let stream = TcpStream::connect_timeout(&addr, CONTROL_TIMEOUT)
            .map_err(|e| EngineError::Connect(addr, e))?;
        stream.set_nodelay(true).map_err(EngineError::Control)?;
        stream
            .set_read_timeout(Some(CONTROL_TIMEOUT))
            .map_err(EngineError::Control)?;
        let link = Link {
            reader: BufReader::new(stream.try_clone().map_err(EngineError::Control)?),
            writer: BufWriter::new(stream.try_clone().map_err(EngineError::Control)?),
            stream,
        };
        let mut client = ControlClient {
            target: addr,
            link: Some(link),
            plain: None,
            plain_target: None,
            plain_tests: 0,
            server_threads: 0,
            server_cpus: Vec::new(),
            server: None,
            application: None,
            refused_peers: None,
            bounds: None,
        };
        let hello = Request::Hello {
            version: PROTOCOL_VERSION,
            software: software(),
        };
        let proved = client.handshake(token, &hello)?;
        let link = client.link.as_mut().expect("connected above");
        control::send(&mut link.writer, &hello).map_err(EngineError::Control)?;
        if proved == Proved::Challenged {
            token::verdict(&mut link.reader).map_err(|r| refusal(addr, r))?;
        }
        match client.receive()? {
            Reply::Hello {
                version,
                threads,
                cpus,
                refused_peers,
                bounds,
                ..
            } if version == PROTOCOL_VERSION => {
                client.server_threads = threads;
                client.server_cpus = cpus;
                client.refused_peers = Some(refused_peers);
                client.bounds = bounds;
                Ok(client)
            }
            Reply::Hello { version, .. } => Err(version_mismatch(version)),
            other => Err(unexpected(other)),
        }
    }

    /// The token handshake, up to the client's proof (the hello follows it
    /// at once, and then the server's verdict). The start line carries the
    /// hello's fields, so that an older responder reads it as a hello and
    /// refuses it naming both versions.
    fn handshake(&mut self, token: Option<&Token>, hello: &Request) -> Result<Proved, EngineError> {
        let target = self.target;
        let link = self.link.as_mut().expect("connected");
        let greeting = match serde_json::to_value(hello) {
            Ok(serde_json::Value::Object(fields)) => fields,
            _ => serde_json::Map::new(),
        };
        let mut writer = &link.stream;
        match token::prove(
            &mut link.reader,
            &mut writer,
            "control",
            token,
            (greeting, false),
        ) {
            Ok(p) => Ok(p),
            Err(Refusal::Foreign(line)) => match serde_json::from_str::<Reply>(&line) {
                Ok(Reply::Error { message }) => Err(EngineError::Refused(message)),
                Ok(_) => Err(EngineError::Refused(format!(
                    "{target} answered the token handshake with something else than stackbench \
                     serve of control protocol {PROTOCOL_VERSION} would: run the same stackbench \
                     version on both sides"
                ))),
                // Not stackbench at all: say what it is, and what to give.
                Err(_) if line.starts_with('\u{FFFD}') => {
                    Err(not_a_responder(target, "it opened with Telnet negotiation"))
                }
                Err(_) => Err(not_a_responder(
                    target,
                    &format!(
                        "it answered the control hello with {:?}",
                        first_line(line.as_bytes())
                    ),
                )),
            },
            Err(Refusal::Closed) => Err(not_a_responder(
                target,
                "it closed the connection without answering the control hello",
            )),
            Err(Refusal::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                Err(not_a_responder(
                    target,
                    &format!(
                        "it did not answer the control hello in {} s",
                        CONTROL_TIMEOUT.as_secs()
                    ),
                ))
            }
            // A connection reset or broken at the start line (a server
            // that closes at once with the line unread): named as such.
            Err(Refusal::Io(e)) => Err(not_a_responder(
                target,
                &format!("the connection failed at the control hello ({e})"),
            )),
            Err(r) => Err(refusal(target, r)),
        }
    }

    /// The responder's count of refused control connections as it last
    /// reported it (at the hello, then at every sample); `None` for a plain
    /// server.
    pub fn refused_peers(&self) -> Option<u64> {
        self.refused_peers
    }

    /// What the responder lets any driver ask, as its hello said (`None`:
    /// a plain server, or a responder too old to say).
    pub fn bounds(&self) -> Option<Bounds> {
        self.bounds
    }

    /// A plain server at `HOST:PORT`: one connection is opened and closed
    /// to check it listens, so a wrong address fails here in one line.
    fn plain(parts: PlainParts, protocol: AppProtocol) -> Result<ControlClient, EngineError> {
        let named = format!("{}{}", parts.scheme, parts.address);
        let addr = parts
            .address
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|mut a| a.next().ok_or_else(|| "no address".to_string()))
            .map_err(|e| {
                EngineError::Target(format!(
                    "target {named}: host {} does not resolve ({e}): give a name this host \
                     resolves, or an IP address",
                    parts.host
                ))
            })?;
        TcpStream::connect_timeout(&addr, CONTROL_TIMEOUT).map_err(|e| {
            EngineError::Target(format!(
                "target {named}: nothing accepts a connection at {addr} ({e}): start the {} \
                 server there, or give its port",
                protocol.server_name()
            ))
        })?;
        Ok(ControlClient {
            target: addr,
            link: None,
            plain: Some(protocol),
            plain_target: Some(parts),
            plain_tests: 0,
            server_threads: 0,
            server_cpus: Vec::new(),
            server: None,
            application: None,
            refused_peers: None,
            bounds: None,
        })
    }

    /// A plain server: samples `server`'s processes as its side (CPU,
    /// storage, memory), and takes their CPUs as the server's.
    pub fn measure_server(&mut self, server: ServerSide) {
        if self.is_plain() {
            self.server_cpus = server.identity.cpus.clone();
            self.server = Some(server);
        }
    }

    /// A broker: samples `application`'s processes as the third side.
    pub fn measure_application(&mut self, application: ServerSide) {
        if self.is_plain() {
            self.application = Some(application);
        }
    }

    /// The responder application's processes being measured, if any.
    pub fn application_side(&self) -> Option<&ServerSide> {
        self.application.as_ref()
    }

    /// The responder application's CPU counters now (`None`: not measured,
    /// or its processes are gone).
    pub fn sample_application(&self) -> Option<stackbench_metrics::cpu::CpuSample> {
        self.application.as_ref()?.cpu_sample()
    }

    /// The plain server's processes being measured, if any.
    pub fn server_side(&self) -> Option<&ServerSide> {
        self.server.as_ref()
    }

    /// A plain server, before anything runs, as the run's protocol's row
    /// checks one: first its `probe_plain` (AMQP's whole opening, so that
    /// an unreachable broker or a refused login is refused here), then its
    /// `PROBE` (HTTP/1.1's GET, HTTP/2's preface and GET): one connection
    /// (over TLS for https://, with the run's parameters and its row's
    /// ALPN, so that a certificate that does not verify is refused here)
    /// and one request for the target's path, whose answer must begin as
    /// the protocol does. A server that speaks no TLS, or not the protocol
    /// (a raw responder, an SSH banner, an HTTP/1.1-only server asked for
    /// h2), or does not answer within [`PROBE_TIMEOUT`] is one line naming
    /// what was seen; any status is an answer. Other targets, and rows
    /// without a probe: nothing to check.
    pub fn probe(
        &self,
        protocol: AppProtocol,
        tls: Option<&TlsParams>,
        amqp: &AmqpParams,
    ) -> Result<(), EngineError> {
        let Some(t) = self.plain_target.as_ref() else {
            return Ok(());
        };
        let row = crate::app::row(protocol);
        let named = format!("{}{}", t.scheme, t.address);
        let plain = crate::app::PlainProbe {
            addr: self.target,
            named: &named,
            amqp,
        };
        (row.probe_plain)(&plain).map_err(EngineError::Target)?;
        let Some(check) = row.probe else {
            return Ok(());
        };

        let mut target = crate::app::ProbeTarget {
            authority: &t.address,
            path: t.path.as_deref().unwrap_or("/"),
            tls: t.tls,
            alpn: None,
            timeout_s: PROBE_TIMEOUT.as_secs(),
        };
        let seen = match tls.filter(|_| t.tls) {
            Some(p) => {
                let mut s = crate::transport::tls::probe(self.target, &named, p)
                    .map_err(EngineError::Target)?;
                let _ = s.get_ref().set_read_timeout(Some(PROBE_TIMEOUT));
                let alpn = s.ssl().selected_alpn_protocol().map(<[u8]>::to_vec);
                let alpn = alpn.as_deref().map(String::from_utf8_lossy);
                target.alpn = alpn.as_deref();
                check(&mut s, &target)
            }
            None => {
                let mut s = TcpStream::connect_timeout(&self.target, CONTROL_TIMEOUT)
                    .map_err(|e| EngineError::Target(format!("target {named}: {e}")))?;
                let _ = s.set_read_timeout(Some(PROBE_TIMEOUT));
                check(&mut s, &target)
            }
        };
        seen.map_err(|what| {
            let speaks = match protocol {
                p if p == p.scheme_family() => format!("an {} server", p.server_name()),
                p => format!("a server of protocol {}", p.name()),
            };
            EngineError::Target(format!(
                "target {named}: not {speaks}: {what}: give the address of a server that \
                 speaks {}{}",
                protocol.name(),
                if t.tls {
                    ""
                } else {
                    " (https:// if it speaks TLS)"
                }
            ))
        })
    }

    /// A plain server's target beyond its address.
    pub fn plain_parts(&self) -> Option<&PlainParts> {
        self.plain_target.as_ref()
    }

    /// Whether the target is a plain server (no `stackbench serve`).
    pub fn is_plain(&self) -> bool {
        self.link.is_none()
    }

    /// A plain server's protocol, named by its target's scheme.
    pub fn plain_protocol(&self) -> Option<AppProtocol> {
        self.plain
    }

    /// The responder's control address (a plain server's own).
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// Asks for a test of `clients` connections over `transport` with
    /// `ports` listener ports; returns its id and data endpoints.
    pub fn start(
        &mut self,
        spec: TestSpec,
        transport: Transport,
        clients: u32,
        ports: u32,
    ) -> Result<(u64, Vec<Endpoint>), EngineError> {
        self.start_tls(spec, transport, clients, ports, None)
    }

    /// [`Self::start_tls`] on `own_workers` responder worker threads of the
    /// test's own (0: the shared pool), pinned to `own_cpus` (empty: not).
    pub fn start_own(
        &mut self,
        spec: TestSpec,
        transport: Transport,
        (clients, ports): (u32, u32),
        tls: Option<TlsParams>,
        (own_workers, own_cpus): (u32, Vec<usize>),
    ) -> Result<(u64, Vec<Endpoint>), EngineError> {
        if self.is_plain() {
            // Every test is the server's one address.
            self.plain_tests += 1;
            return Ok((self.plain_tests, vec![Endpoint::Inet(self.target)]));
        }
        let request = Request::Start {
            spec,
            transport,
            clients,
            ports,
            tls: tls.map(Box::new),
            own_workers,
            own_cpus,
        };
        match self.call(&request)? {
            Reply::Ready { test_id, endpoints } => Ok((test_id, endpoints)),
            other => Err(unexpected(other)),
        }
    }

    /// [`Self::start`] with the TLS parameters of a `tls` run.
    pub fn start_tls(
        &mut self,
        spec: TestSpec,
        transport: Transport,
        clients: u32,
        ports: u32,
        tls: Option<TlsParams>,
    ) -> Result<(u64, Vec<Endpoint>), EngineError> {
        self.start_own(spec, transport, (clients, ports), tls, (0, Vec::new()))
    }

    /// Ends a test; returns the responder's counters for it.
    pub fn stop(&mut self, test_id: u64) -> Result<ServerTestStats, EngineError> {
        if self.is_plain() {
            return Ok(ServerTestStats::default());
        }
        match self.call(&Request::Stop { test_id })? {
            Reply::Stopped { stats, .. } => Ok(stats),
            other => Err(unexpected(other)),
        }
    }

    /// Asks the responder for its CPU and memory counters now.
    pub fn sample(&mut self) -> Result<Reply, EngineError> {
        if !self.is_alive() {
            return Err(EngineError::ResponderGone);
        }
        if let Some(server) = &self.server {
            return server.sample().ok_or_else(|| {
                EngineError::Refused("the server's processes are gone or unreadable".into())
            });
        }
        self.call(&Request::Sample)
    }

    /// False once the responder has closed the control connection (it died,
    /// was killed, or was stopped). Never blocks.
    pub fn is_alive(&self) -> bool {
        let Some(link) = &self.link else {
            // A plain server's failures show on the data connections.
            return true;
        };
        if link.stream.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [0u8; 1];
        let alive = match link.stream.peek(&mut byte) {
            Ok(0) => false,
            Ok(_) => true,
            Err(e) => e.kind() == ErrorKind::WouldBlock,
        };
        let _ = link.stream.set_nonblocking(false);
        alive
    }

    fn call(&mut self, request: &Request) -> Result<Reply, EngineError> {
        let Some(link) = self.link.as_mut() else {
            return Err(EngineError::Refused(
                "a plain server has no control connection: no responder counters or samples".into(),
            ));
        };
        control::send(&mut link.writer, request).map_err(EngineError::Control)?;
        self.receive()
    }

    /// The next reply (an error reply as [`EngineError::Refused`]); a sample
    /// updates [`Self::refused_peers`].
    fn receive(&mut self) -> Result<Reply, EngineError> {
        let link = self.link.as_mut().expect("a control connection");
        match control::recv::<Reply>(&mut link.reader).map_err(EngineError::Control)? {
            Some(Reply::Error { message }) => Err(EngineError::Refused(message)),
            Some(reply) => {
                if let Reply::Sample { refused_peers, .. } = &reply {
                    self.refused_peers = Some(*refused_peers);
                }
                Ok(reply)
            }
            None => Err(EngineError::ResponderGone),
        }
    }
}

/// The handshake's failure as the driver reports it: one line naming the
/// responder and the fix.
fn refusal(target: SocketAddr, r: Refusal) -> EngineError {
    match r {
        Refusal::Refused(why) => EngineError::Refused(format!(
            "the token handshake with the responder at {target} failed: {why}: give the driver \
             the responder's token (--token-file FILE, the file its serve was given)"
        )),
        Refusal::Foreign(line) => EngineError::Refused(format!(
            "the responder at {target} answered the token handshake with {line:?}"
        )),
        Refusal::Closed => EngineError::Refused(format!(
            "the responder at {target} closed the connection during the token handshake"
        )),
        Refusal::Io(e) => EngineError::Control(e),
    }
}

fn software() -> String {
    format!("stackbench {}", env!("CARGO_PKG_VERSION"))
}

/// The first line of what a server sent, at most 60 characters.
fn first_line(bytes: &[u8]) -> String {
    let line = bytes
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or(bytes);
    String::from_utf8_lossy(&line[..line.len().min(60)]).into_owned()
}

/// `target` answered the control hello as no responder would (`seen`).
fn not_a_responder(target: SocketAddr, seen: &str) -> EngineError {
    EngineError::NotResponder(format!(
        "{target} is not `stackbench serve`: {seen}; a plain HTTP \
         server is --target http://{target} with --protocol http1, a TN3270 server \
         tn3270://{target} with --protocol tn3270"
    ))
}

fn unexpected(reply: Reply) -> EngineError {
    EngineError::Control(std::io::Error::new(
        ErrorKind::InvalidData,
        format!("unexpected reply {reply:?}"),
    ))
}

fn version_mismatch(version: u32) -> EngineError {
    EngineError::Refused(format!(
        "the responder speaks control protocol version {version}, this driver \
         {PROTOCOL_VERSION}: run the same stackbench version on both sides"
    ))
}

#[cfg(test)]
mod tests {
    /// A line continuation without its `\\` kept 18 spaces of indentation
    /// inside this message.
    #[test]
    fn version_mismatch_reads_as_one_sentence() {
        let m = super::version_mismatch(1).to_string();
        assert!(!m.contains("  "), "{m}");
        assert!(m.contains("version 1, this driver "), "{m}");
    }
}
