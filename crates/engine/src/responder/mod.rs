//! The responder (`stackbench serve`): a control listener, one thread per
//! control connection, and a pool of event-loop workers that serve the data
//! connections of every test from every driver at once (as in z/OS's zERT
//! enforcement measurements: two client instances of 15 connections each
//! against one server).
//!
//! A `start` request creates the test's data listeners and hands each worker
//! its share: for TCP and MPTCP one SO_REUSEPORT listener per worker on each
//! of the fresh ports asked for, bound to the address the control connection
//! arrived on; for AF_UNIX (no SO_REUSEPORT) one socket path per worker in a
//! private directory, the driver spreading its clients over the paths. It
//! also reserves file descriptors for the test's clients. `stop` (or the
//! control connection closing) removes the test from every worker, sums their
//! counters, and removes its socket directory.

mod direct;
mod handle;
mod machine;
mod mirror;
#[cfg(test)]
mod mock;
mod own;
mod uring;
mod uring_submit;
mod worker;

use std::collections::{HashMap, HashSet};
use std::io::{self, BufReader, BufWriter};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::control::{
    self, Bounds, Reply, Request, ServerTestStats, TestSpec, TestThreads, PROTOCOL_VERSION,
};
use crate::limits::{self, FdReservation};
use crate::lock::lock;
use crate::sockopt;
use crate::token::{self, Admission, Token};
use stackbench_model::settings::TlsMode;
use stackbench_model::{IoMode, TlsParams};
use stackbench_record::KtlsCounters;

use crate::sidecar::{ProxyConfig, Role, SidecarProxy};
use crate::transport::{self, Endpoint, ListenRequest, Listening, SocketDir, Transport};
use handle::{Wake, WorkerHandle};
use own::OwnWorkers;
use worker::{Backend, Command, Worker};

/// Most listener ports one test may ask for (each is one listener per worker).
const MAX_PORTS: u32 = 256;
/// Most worker threads of its own one test may ask for (`class_workers`).
const MAX_OWN_WORKERS: u32 = 256;
/// How long a control connection has to finish the token handshake: a peer
/// that connects and says nothing holds a thread no longer than this.
const HANDSHAKE_PATIENCE: Duration = Duration::from_secs(10);

/// What the responder runs with.
#[derive(Debug, Clone)]
pub struct ResponderConfig {
    /// Control address; port 0 picks a free one.
    pub listen: SocketAddr,
    /// Worker threads (at least 1).
    pub threads: usize,
    /// CPUs the process is pinned to (reported to drivers; pinning itself is
    /// the caller's job, before `bind`).
    pub cpus: Vec<usize>,
    /// The run token every control connection must prove ([`crate::token`]);
    /// `None`: open, any peer that reaches the port is served.
    pub token: Option<Token>,
    /// What a driver may ask of this responder.
    pub limits: ResponderLimits,
}

/// What any driver may ask of a responder, enforced by the responder (`serve
/// --max-…`): a driver that asks for more is refused in one line, which it
/// reports, and the responder prints. The defaults serve every workload the
/// seeds describe and keep a stranger's requests to a bounded share of the
/// host; the file-descriptor limit bounds connections besides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponderLimits {
    /// Control connections served at once (each driver or agent holds one).
    pub sessions: u32,
    /// Tests one control connection may hold open at once (each its
    /// listeners and file-descriptor reservation).
    pub tests_per_session: u32,
    /// Connections one test may announce (`clients`).
    pub clients_per_test: u32,
    /// Bytes of one request or one response a test may ask for.
    pub message_bytes: u64,
    /// How long one control connection may last; at the limit the responder
    /// ends it, and its tests with it.
    pub session: Duration,
}

impl Default for ResponderLimits {
    fn default() -> Self {
        ResponderLimits {
            sessions: 64,
            tests_per_session: 64,
            clients_per_test: 100_000,
            message_bytes: 1 << 36,
            session: Duration::from_secs(24 * 3600),
        }
    }
}

impl ResponderLimits {
    /// Why `start` asks for more than these limits allow (`None`: it does
    /// not), naming the limit and the `serve` flag that raises it.
    fn refusal(&self, start: &StartRequest, open_tests: usize) -> Option<String> {
        let spec = &start.spec;
        let bytes = spec.request_bytes.max(spec.response_bytes);
        if let Some(why) = self.bounds().refusal(open_tests, start.clients, bytes) {
            Some(why)
        } else if start.own_workers > MAX_OWN_WORKERS {
            Some(format!(
                "own_workers {} out of range 0 to {MAX_OWN_WORKERS}",
                start.own_workers
            ))
        } else {
            None
        }
    }

    /// The limits a driver is told in the hello.
    pub fn bounds(&self) -> Bounds {
        Bounds {
            tests_per_session: self.tests_per_session,
            clients_per_test: self.clients_per_test,
            message_bytes: self.message_bytes,
            session_s: self.session.as_secs(),
        }
    }
}

/// The worker pool shared by all control threads: the epoll workers, and
/// as many io_uring workers, started when a test first asks for them.
struct Pool {
    workers: Vec<WorkerHandle>,
    /// `Err`: io_uring is not usable here (said once; tests run on epoll).
    uring: OnceLock<Result<Vec<WorkerHandle>, String>>,
    uring_threads: Mutex<Vec<JoinHandle<()>>>,
    next_test_id: AtomicU64,
    /// Serialises add/remove so that every worker sees tests in one order,
    /// and holds what each live test owns besides its listeners.
    lock: Mutex<HashMap<u64, TestResources>>,
    /// Namespaces where every test listens too (see [`mirror`]).
    mirrors: OnceLock<Vec<std::fs::File>>,
}

/// What a test holds until it stops: its socket directory (removed on drop),
/// its file-descriptor reservation and its TLS proxy (`tls_mode sidecar`,
/// stopped and reaped on drop).
struct TestResources {
    _dir: Option<SocketDir>,
    _fds: FdReservation,
    _proxy: Option<SidecarProxy>,
    /// `tls_mode ktls`: the kernel's kTLS counters when the test started.
    ktls_before: Option<KtlsCounters>,
    /// `own_workers`: the threads that serve this test alone.
    own: Option<OwnWorkers>,
    /// Where the test listens (a sidecar proxy's address and the workers'
    /// behind it): the sockets whose local end is here are the test's.
    endpoints: Vec<Endpoint>,
}

/// What `start` asks for, as the control session received it.
struct StartRequest {
    spec: TestSpec,
    transport: Transport,
    clients: u32,
    ports: u32,
    tls: Option<TlsParams>,
    /// The responder's CPUs (a sidecar proxy is pinned to them).
    cpus: Vec<usize>,
    /// Worker threads of the test's own (0: the shared pool), and the CPUs
    /// they are pinned to (empty: not pinned beyond the process).
    own_workers: u32,
    own_cpus: Vec<usize>,
}

impl StartRequest {
    /// The TLS parameters of a `tls_mode sidecar` test.
    fn sidecar(&self) -> Option<&TlsParams> {
        let p = self.tls.as_ref()?;
        (self.transport == Transport::Tls && p.mode == TlsMode::Sidecar).then_some(p)
    }
}

impl Pool {
    fn send(&self, cmd_for: impl Fn() -> Command) {
        let uring = self.uring.get().and_then(|u| u.as_ref().ok());
        for w in self.workers.iter().chain(uring.into_iter().flatten()) {
            w.command(cmd_for());
        }
    }

    /// The workers that serve a test of backend `io`: io_uring tests go to
    /// the io_uring workers (started on first use), unless io_uring is not
    /// usable here, and then to the epoll workers.
    fn workers_for(&self, io: IoMode) -> &[WorkerHandle] {
        // The driver settles `auto` before asking; one that did not gets epoll.
        if io != IoMode::Uring {
            return &self.workers;
        }
        let uring = self.uring.get_or_init(|| {
            let started = start_uring_workers(self.workers.len());
            started.map(|(handles, threads)| {
                lock(&self.uring_threads).extend(threads);
                handles
            })
        });
        match uring {
            Ok(w) => w,
            Err(e) => {
                eprintln!("stackbench serve: io uring not used, serving on epoll: {e}");
                &self.workers
            }
        }
    }

    /// Opens a test's listeners and hands them to the workers. The error is
    /// one line for the driver.
    fn start(&self, local_ip: IpAddr, req: &StartRequest) -> Result<(u64, Vec<Endpoint>), String> {
        let mut tests = lock(&self.lock);
        let row = transport::row_for(req.transport, req.tls.as_ref());
        row.check_driver(local_ip)?;
        if !(1..=MAX_PORTS).contains(&req.ports) {
            return Err(format!("ports {} out of range 1 to {MAX_PORTS}", req.ports));
        }
        let fds = limits::reserve_fds(u64::from(req.clients))
            .map_err(|e| format!("on the responder's host: {e}"))?;
        let id = self.next_test_id.fetch_add(1, Ordering::Relaxed);
        let (spec_opts, _) = row.effective_options(&req.spec.socket);
        if let Some(level) = spec_opts.priority {
            // Accepted sockets ignore option errors: refuse here instead.
            sockopt::probe_priority(level).map_err(|e| format!("on the responder's host: {e}"))?;
        }
        let spec = TestSpec {
            socket: spec_opts,
            ..req.spec
        };
        // The io_uring workers serve what their row claims (the driver asks
        // for nothing else; see `crate::iomode`), epoll the rest: a framed
        // protocol (http1) among it.
        let claimed = crate::iomode::URING.serving_refusal(req.transport, spec.kind, spec.protocol);
        let io = if spec.io == IoMode::Uring && claimed.is_none() {
            IoMode::Uring
        } else {
            IoMode::Epoll
        };
        let own = match req.own_workers {
            0 => None,
            n => Some(OwnWorkers::start(io, (n, &req.own_cpus), id)?),
        };
        let workers = match &own {
            Some(o) => &o.handles,
            None => self.workers_for(io),
        };
        // Sidecar: the workers serve clear text (tcp) behind the proxy.
        let under = if req.sidecar().is_some() {
            transport::row(Transport::Tcp)
        } else {
            row
        };
        let Listening {
            mut per_worker,
            mut endpoints,
            dir,
        } = under.listen(&ListenRequest {
            workers: workers.len(),
            ip: local_ip,
            ports: req.ports,
            socket: &spec.socket,
            tls: req.tls.as_ref(),
        })?;
        if let Some(namespaces) = self.mirrors.get().filter(|m| !m.is_empty()) {
            let extra = mirror::listeners(
                namespaces,
                under.as_row(),
                &endpoints,
                workers.len(),
                &spec.socket,
            )?;
            for (mine, more) in per_worker.iter_mut().zip(extra) {
                mine.extend(more);
            }
        }
        let mut listening = endpoints.clone();
        let proxy = server_proxy(local_ip, req, &spec, &mut endpoints)?;
        if proxy.is_some() {
            listening.extend(endpoints.iter().cloned());
        }
        for (w, listeners) in workers.iter().zip(per_worker) {
            w.command(Command::AddTest {
                test_id: id,
                spec,
                listeners,
            });
        }
        tests.insert(
            id,
            TestResources {
                _dir: dir,
                _fds: fds,
                _proxy: proxy,
                ktls_before: row.kernel_counters(),
                own,
                endpoints: listening,
            },
        );
        Ok((id, endpoints))
    }
}

impl Pool {
    /// Where the tests `ids` listen.
    fn endpoints_of(&self, ids: &HashSet<u64>) -> Vec<Endpoint> {
        let tests = lock(&self.lock);
        ids.iter()
            .filter_map(|id| tests.get(id))
            .flat_map(|t| t.endpoints.iter().cloned())
            .collect()
    }

    fn stop(&self, test_id: u64) -> ServerTestStats {
        let mut tests = lock(&self.lock);
        let (tx, rx) = mpsc::channel();
        let remove = || Command::RemoveTest {
            test_id,
            reply: tx.clone(),
        };
        self.send(remove);
        let own = tests.get_mut(&test_id).and_then(|r| r.own.take());
        for w in own.iter().flat_map(|o| &o.handles) {
            w.command(remove());
        }
        drop(tx);
        let mut total = ServerTestStats::default();
        for s in rx.iter() {
            total.add(&s);
        }
        // The test's own workers (class_workers) end with it.
        drop(own);
        // Every worker has dropped its listeners: remove the socket files.
        let before = tests.remove(&test_id).and_then(|r| r.ktls_before);
        total.ktls = before.and_then(|b| Some(transport::ktls::tls_stat()?.since(&b)));
        total
    }

    /// The CPU time of every test's own worker threads now.
    fn test_threads(&self) -> Vec<TestThreads> {
        let tests = lock(&self.lock);
        let own = tests
            .iter()
            .filter_map(|(id, r)| Some((*id, r.own.as_ref()?)));
        own.filter_map(|(test_id, o)| {
            Some(TestThreads {
                test_id,
                times: o.times()?,
            })
        })
        .collect()
    }
}

/// `tls_mode sidecar`: starts the test's server proxy in front of the clear
/// `endpoints`, which become the proxy's (`None` for other tests).
fn server_proxy(
    local_ip: IpAddr,
    req: &StartRequest,
    spec: &TestSpec,
    endpoints: &mut Vec<Endpoint>,
) -> Result<Option<SidecarProxy>, String> {
    let Some(tls) = req.sidecar() else {
        return Ok(None);
    };
    let proxy = SidecarProxy::start(&ProxyConfig {
        role: Role::Server,
        listen: SocketAddr::new(local_ip, 0),
        upstream: std::mem::take(endpoints),
        tls: tls.clone(),
        socket: spec.socket,
        cpus: req.cpus.clone(),
        clients: req.clients,
    })?;
    *endpoints = vec![Endpoint::Inet(proxy.addr())];
    Ok(Some(proxy))
}

/// Starts `n` io_uring workers (their rings are built on their own
/// threads); the error says why io_uring cannot be used.
fn start_uring_workers(n: usize) -> Result<(Vec<WorkerHandle>, Vec<JoinHandle<()>>), String> {
    crate::iomode::uring_available()?;
    let (mut handles, mut threads) = (Vec::new(), Vec::new());
    for i in 0..n.max(1) {
        let wake = uring::eventfd().map_err(|e| format!("eventfd: {e}"))?;
        let (tx, rx) = mpsc::channel();
        let fd = Arc::clone(&wake);
        let thread = thread::Builder::new()
            .name(format!("serve-u{i}"))
            .spawn(move || match uring::UringWorker::new(rx, fd) {
                Ok(w) => drop(w.run()),
                Err(e) => eprintln!("stackbench serve: io_uring worker {i}: {e}"),
            })
            .map_err(|e| format!("cannot start an io_uring worker: {e}"))?;
        threads.push(thread);
        handles.push(WorkerHandle {
            commands: tx,
            waker: Wake::Uring(wake),
        });
    }
    Ok((handles, threads))
}

/// A bound responder, not yet serving.
pub struct Responder {
    listener: TcpListener,
    pool: Arc<Pool>,
    threads: Vec<JoinHandle<()>>,
    config: ResponderConfig,
    shutdown: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
}

impl Responder {
    /// Binds the control listener and starts the worker threads.
    pub fn bind(config: ResponderConfig) -> io::Result<Responder> {
        let socket = Socket::new(
            Domain::for_address(config.listen),
            Type::STREAM,
            Some(Protocol::TCP),
        )?;
        socket.set_reuse_address(true)?;
        if config.listen.is_ipv6() {
            socket.set_only_v6(true)?;
        }
        socket.bind(&config.listen.into())?;
        socket.listen(128)?;
        let listener: TcpListener = socket.into();
        let mut workers = Vec::new();
        let mut threads = Vec::new();
        for i in 0..config.threads.max(1) {
            let (poll, waker) = Worker::poll_and_waker()?;
            let (tx, rx) = mpsc::channel();
            let worker = Worker::new(poll, rx);
            threads.push(
                thread::Builder::new()
                    .name(format!("serve-w{i}"))
                    .spawn(move || drop(worker.run()))?,
            );
            workers.push(WorkerHandle {
                commands: tx,
                waker: Wake::Epoll(waker),
            });
        }
        let pool = Arc::new(Pool {
            workers,
            uring: OnceLock::new(),
            uring_threads: Mutex::new(Vec::new()),
            next_test_id: AtomicU64::new(1),
            lock: Mutex::new(HashMap::new()),
            mirrors: OnceLock::new(),
        });
        Ok(Responder {
            listener,
            pool,
            threads,
            config,
            shutdown: Arc::new(AtomicBool::new(false)),
            refused: Arc::default(),
        })
    }

    /// Every test will also listen, on the same ports, in the network
    /// namespaces at `paths` (`serve --mirror-netns`; see [`mirror`]).
    pub fn mirror_in(&self, paths: &[std::path::PathBuf]) -> io::Result<()> {
        let files = paths
            .iter()
            .map(|p| {
                std::fs::File::open(p)
                    .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", p.display())))
            })
            .collect::<io::Result<Vec<_>>>()?;
        let _ = self.pool.mirrors.set(files);
        Ok(())
    }

    /// The control address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Control connections refused so far (no token, another token, a peer
    /// that is not a stackbench driver, or beyond `limits.sessions`): the
    /// counter drivers read in every hello and sample reply.
    pub fn refused_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.refused)
    }

    /// Accepts control connections until shut down (see [`Responder::spawn`]).
    pub fn serve(self) -> io::Result<()> {
        let shared = Arc::new(Shared {
            pool: Arc::clone(&self.pool),
            threads: self.config.threads.max(1) as u32,
            cpus: self.config.cpus.clone(),
            token: self.config.token.clone(),
            limits: self.config.limits,
            refused: Arc::clone(&self.refused),
        });
        // Clones of the live control connections, to end their sessions at
        // shutdown; each session removes its own entry when it ends.
        let sessions: Arc<Mutex<HashMap<u64, TcpStream>>> = Arc::default();
        for (session_id, conn) in (0u64..).zip(self.listener.incoming()) {
            if self.shutdown.load(Ordering::Acquire) {
                break;
            }
            let Ok(conn) = conn else { continue };
            let live = lock(&sessions).len();
            if live >= shared.limits.sessions as usize {
                // Refused before the handshake, in the control protocol's
                // words (a handshaking driver reads it as such).
                let message = format!(
                    "this responder serves {live} control connections, its limit \
                     (serve --max-sessions): try again when one ends"
                );
                shared.refuse(&conn, &message);
                let mut w = &conn;
                let _ = control::send(&mut w, &Reply::Error { message });
                continue;
            }
            if let Ok(clone) = conn.try_clone() {
                lock(&sessions).insert(session_id, clone);
            }
            let (shared, sessions) = (Arc::clone(&shared), Arc::clone(&sessions));
            let _ = thread::Builder::new()
                .name("serve-ctl".into())
                .spawn(move || {
                    if let Err(e) = control_session(conn, &shared) {
                        eprintln!("stackbench serve: control connection: {e}");
                    }
                    lock(&sessions).remove(&session_id);
                });
        }
        for s in lock(&sessions).values() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.pool.send(|| Command::Shutdown);
        let uring_threads = std::mem::take(&mut *lock(&self.pool.uring_threads));
        for t in self.threads.into_iter().chain(uring_threads) {
            let _ = t.join();
        }
        Ok(())
    }

    /// Serves on a background thread; the handle stops it when dropped. Used
    /// by tests and by in-process use.
    pub fn spawn(self) -> io::Result<ResponderHandle> {
        let addr = self.local_addr()?;
        let shutdown = Arc::clone(&self.shutdown);
        let thread = thread::Builder::new().name("serve".into()).spawn(move || {
            let _ = self.serve();
        })?;
        Ok(ResponderHandle {
            addr,
            shutdown,
            thread: Some(thread),
        })
    }
}

/// A responder serving on a background thread.
pub struct ResponderHandle {
    addr: SocketAddr,
    shutdown: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ResponderHandle {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ResponderHandle {
    fn drop(&mut self) {
        self.shutdown.store(true, Ordering::Release);
        // Wake the blocking accept with a throw-away connection.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What every control session of a responder shares.
struct Shared {
    pool: Arc<Pool>,
    threads: u32,
    cpus: Vec<usize>,
    token: Option<Token>,
    limits: ResponderLimits,
    refused: Arc<AtomicU64>,
}

impl Shared {
    /// Counts a refused control connection and says so, one line.
    fn refuse(&self, conn: &TcpStream, why: &str) {
        let n = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        let peer = conn
            .peer_addr()
            .map_or_else(|_| "a peer".to_string(), |a| a.to_string());
        eprintln!("stackbench serve: refused the control connection of {peer}: {why} ({n} refused so far)");
    }
}

/// The token handshake of a new control connection (bounded in time); `false`
/// when the peer was refused (told, counted and printed).
fn admit_driver(
    conn: &TcpStream,
    reader: &mut BufReader<TcpStream>,
    shared: &Shared,
) -> io::Result<bool> {
    conn.set_read_timeout(Some(HANDSHAKE_PATIENCE))?;
    let mut writer = conn;
    let admission = match token::admit(reader, &mut writer, "control", shared.token.as_ref()) {
        Ok(a) => a,
        Err(e) => Admission::Refused(format!(
            "no handshake within {} s ({e})",
            HANDSHAKE_PATIENCE.as_secs()
        )),
    };
    match admission {
        Admission::Admitted => {}
        Admission::Refused(why) => {
            shared.refuse(conn, &why);
            return Ok(false);
        }
        Admission::Foreign(line) => {
            // An older driver's hello: refused in the words it reads.
            let message = match serde_json::from_str::<Request>(&line) {
                Ok(Request::Hello { version, .. }) => format!(
                    "protocol version {version} is not supported by this responder (speaks \
                     {PROTOCOL_VERSION}): run the same stackbench version on both sides \
                     (since version 6 a connection opens with a token handshake)"
                ),
                _ => "not a stackbench control connection (no token handshake)".to_string(),
            };
            shared.refuse(conn, &message);
            let _ = control::send(&mut writer, &Reply::Error { message });
            return Ok(false);
        }
    }
    conn.set_read_timeout(None)?;
    Ok(true)
}

/// One driver's control session, after its token handshake. Tests it leaves
/// running are removed at the end; at `limits.session` it is ended.
fn control_session(conn: TcpStream, shared: &Shared) -> io::Result<()> {
    conn.set_nodelay(true)?;
    // One reader for the handshake and the session: the driver's hello may
    // arrive with its proof, in one read.
    let mut reader = BufReader::new(conn.try_clone()?);
    if !admit_driver(&conn, &mut reader, shared)? {
        return Ok(());
    }
    let (pool, threads, cpus) = (&shared.pool, shared.threads, &shared.cpus);
    let deadline = Instant::now() + shared.limits.session;
    let local_ip = conn.local_addr()?.ip();
    let timer = conn.try_clone()?;
    let mut writer = BufWriter::new(conn);
    let mut owned: HashSet<u64> = HashSet::new();
    let result = (|| -> io::Result<()> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            timer.set_read_timeout(Some(left.max(Duration::from_millis(1))))?;
            let request = match control::recv::<Request>(&mut reader) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) if Instant::now() >= deadline && is_timeout(&e) => {
                    let message = format!(
                        "this control connection reached the responder's limit of {} s \
                         (serve --max-session): its tests are stopped",
                        shared.limits.session.as_secs()
                    );
                    eprintln!("stackbench serve: {message}");
                    control::send(&mut writer, &Reply::Error { message })?;
                    break;
                }
                Err(e) => return Err(e),
            };
            let reply = match request {
                Request::Hello { version, .. } if version != PROTOCOL_VERSION => {
                    let message = format!(
                        "protocol version {version} is not supported by this responder (speaks {PROTOCOL_VERSION}): run the same stackbench version on both sides"
                    );
                    control::send(&mut writer, &Reply::Error { message })?;
                    return Ok(());
                }
                Request::Hello { .. } => Reply::Hello {
                    version: PROTOCOL_VERSION,
                    software: format!("stackbench {}", env!("CARGO_PKG_VERSION")),
                    threads,
                    cpus: cpus.to_vec(),
                    refused_peers: shared.refused.load(Ordering::Relaxed),
                    bounds: Some(shared.limits.bounds()),
                },
                Request::Start {
                    spec,
                    transport,
                    clients,
                    ports,
                    tls,
                    own_workers,
                    own_cpus,
                } => {
                    let req = StartRequest {
                        spec,
                        transport,
                        clients,
                        ports,
                        tls: tls.map(|t| *t),
                        cpus: cpus.to_vec(),
                        own_workers,
                        own_cpus,
                    };
                    let refusal = shared.limits.refusal(&req, owned.len());
                    if let Some(message) = &refusal {
                        eprintln!("stackbench serve: refused a test: {message}");
                    }
                    match refusal.map_or_else(|| pool.start(local_ip, &req), Err) {
                        Ok((test_id, endpoints)) => {
                            owned.insert(test_id);
                            Reply::Ready { test_id, endpoints }
                        }
                        Err(message) => Reply::Error { message },
                    }
                }
                Request::Sample => match crate::sampling::local_cpu() {
                    Ok(cpu) => Reply::Sample {
                        cpu,
                        // This session's tests only: a responder may serve
                        // other drivers at the same time.
                        memory: crate::sampling::local_memory(
                            &pool.endpoints_of(&owned),
                            crate::sockdiag::Side::Responder,
                        ),
                        pids: crate::sidecar::side_pids(),
                        test_threads: pool.test_threads(),
                        refused_peers: shared.refused.load(Ordering::Relaxed),
                    },
                    Err(e) => Reply::Error {
                        message: format!("cannot sample CPU counters: {e}"),
                    },
                },
                Request::Stop { test_id } => {
                    owned.remove(&test_id);
                    Reply::Stopped {
                        test_id,
                        stats: pool.stop(test_id),
                    }
                }
            };
            control::send(&mut writer, &reply)?;
        }
        Ok(())
    })();
    for test_id in owned {
        pool.stop(test_id);
    }
    result
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}
