//! The responder (`stackbench serve`): a control listener, one thread per
//! control connection, and a pool of event-loop workers that serve the data
//! connections of every test from every driver at once (seed 000's zERT test:
//! two client instances of 15 connections each against one server).
//!
//! A `start` request creates one SO_REUSEPORT data listener per worker on one
//! fresh port, bound to the address the control connection arrived on, and
//! hands one to each worker; `stop` (or the control connection closing)
//! removes the test from every worker and sums their counters.

mod worker;

use std::collections::{HashMap, HashSet};
use std::io::{self, BufReader, BufWriter};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use mio::Waker;
use socket2::{Domain, Protocol, Socket, Type};

use crate::protocol::{self, Reply, Request, ServerTestStats, TestSpec, PROTOCOL_VERSION};
use crate::sockopt;
use worker::{Command, Worker};

/// Listen backlog of data listeners: CRR with many clients connects in bursts.
const DATA_BACKLOG: i32 = 4096;

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
}

struct WorkerHandle {
    commands: Sender<Command>,
    waker: Waker,
}

/// The worker pool shared by all control threads.
struct Pool {
    workers: Vec<WorkerHandle>,
    next_test_id: AtomicU64,
    /// Serialises add/remove so that every worker sees tests in one order.
    lock: Mutex<()>,
}

impl Pool {
    fn send(&self, cmd_for: impl Fn() -> Command) {
        for w in &self.workers {
            let _ = w.commands.send(cmd_for());
            let _ = w.waker.wake();
        }
    }

    fn start(&self, local_ip: std::net::IpAddr, spec: TestSpec) -> io::Result<(u64, u16)> {
        let _guard = lock(&self.lock);
        let id = self.next_test_id.fetch_add(1, Ordering::Relaxed);
        let mut port = 0;
        let mut listeners = Vec::with_capacity(self.workers.len());
        for _ in &self.workers {
            let l = data_listener(SocketAddr::new(local_ip, port), &spec)?;
            port = l.local_addr()?.port();
            listeners.push(l);
        }
        for (w, listener) in self.workers.iter().zip(listeners) {
            let _ = w.commands.send(Command::AddTest {
                test_id: id,
                spec,
                listener,
            });
            let _ = w.waker.wake();
        }
        Ok((id, port))
    }

    fn stop(&self, test_id: u64) -> ServerTestStats {
        let _guard = lock(&self.lock);
        let (tx, rx) = mpsc::channel();
        self.send(|| Command::RemoveTest {
            test_id,
            reply: tx.clone(),
        });
        drop(tx);
        let mut total = ServerTestStats::default();
        for s in rx.iter() {
            total.add(&s);
        }
        total
    }
}

/// Locks a mutex, ignoring poisoning: the data behind these locks stays
/// consistent even if a holder panicked.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn data_listener(addr: SocketAddr, spec: &TestSpec) -> io::Result<TcpListener> {
    let socket = sockopt::new_tcp_socket(&addr, &spec.socket)?;
    socket.set_reuse_port(true)?;
    socket.set_reuse_address(true)?;
    if addr.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    socket.bind(&addr.into())?;
    socket.listen(DATA_BACKLOG)?;
    Ok(socket.into())
}

/// A bound responder, not yet serving.
pub struct Responder {
    listener: TcpListener,
    pool: Arc<Pool>,
    threads: Vec<JoinHandle<()>>,
    config: ResponderConfig,
    shutdown: Arc<AtomicBool>,
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
                    .spawn(move || worker.run())?,
            );
            workers.push(WorkerHandle {
                commands: tx,
                waker,
            });
        }
        let pool = Arc::new(Pool {
            workers,
            next_test_id: AtomicU64::new(1),
            lock: Mutex::new(()),
        });
        Ok(Responder {
            listener,
            pool,
            threads,
            config,
            shutdown: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The control address actually bound.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accepts control connections until shut down (see [`Responder::spawn`]).
    pub fn serve(self) -> io::Result<()> {
        let info = Arc::new((self.config.threads.max(1) as u32, self.config.cpus.clone()));
        // Clones of the live control connections, to end their sessions at
        // shutdown; each session removes its own entry when it ends.
        let sessions: Arc<Mutex<HashMap<u64, TcpStream>>> = Arc::default();
        for (session_id, conn) in (0u64..).zip(self.listener.incoming()) {
            if self.shutdown.load(Ordering::Acquire) {
                break;
            }
            let Ok(conn) = conn else { continue };
            if let Ok(clone) = conn.try_clone() {
                lock(&sessions).insert(session_id, clone);
            }
            let (pool, info, sessions) = (
                Arc::clone(&self.pool),
                Arc::clone(&info),
                Arc::clone(&sessions),
            );
            let _ = thread::Builder::new()
                .name("serve-ctl".into())
                .spawn(move || {
                    if let Err(e) = control_session(conn, &pool, info.0, &info.1) {
                        eprintln!("stackbench serve: control connection: {e}");
                    }
                    lock(&sessions).remove(&session_id);
                });
        }
        for s in lock(&sessions).values() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        self.pool.send(|| Command::Shutdown);
        for t in self.threads {
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

/// One driver's control session. Tests it leaves running are removed at the end.
fn control_session(conn: TcpStream, pool: &Pool, threads: u32, cpus: &[usize]) -> io::Result<()> {
    conn.set_nodelay(true)?;
    let local_ip = conn.local_addr()?.ip();
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut writer = BufWriter::new(conn);
    let mut owned: HashSet<u64> = HashSet::new();
    let result = (|| -> io::Result<()> {
        while let Some(request) = protocol::recv::<Request>(&mut reader)? {
            let reply = match request {
                Request::Hello { version, .. } if version != PROTOCOL_VERSION => {
                    let message = format!(
                        "protocol version {version} is not supported by this responder (speaks {PROTOCOL_VERSION}): run the same stackbench version on both sides"
                    );
                    protocol::send(&mut writer, &Reply::Error { message })?;
                    return Ok(());
                }
                Request::Hello { .. } => Reply::Hello {
                    version: PROTOCOL_VERSION,
                    software: format!("stackbench {}", env!("CARGO_PKG_VERSION")),
                    threads,
                    cpus: cpus.to_vec(),
                },
                Request::Start { spec } => match pool.start(local_ip, spec) {
                    Ok((test_id, data_port)) => {
                        owned.insert(test_id);
                        Reply::Ready { test_id, data_port }
                    }
                    Err(e) => Reply::Error {
                        message: format!("cannot open a data listener: {e}"),
                    },
                },
                Request::Sample => match crate::sampling::local_cpu() {
                    Ok(cpu) => Reply::Sample {
                        cpu,
                        memory: crate::sampling::local_memory(),
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
            protocol::send(&mut writer, &reply)?;
        }
        Ok(())
    })();
    for test_id in owned {
        pool.stop(test_id);
    }
    result
}
