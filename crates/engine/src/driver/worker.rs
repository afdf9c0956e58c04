//! One driver worker: an epoll loop (mio) over many client connections of any
//! classes. Every kind is one table-driven state machine (neper's `neper_fn`
//! idea): connect (CRR, or after an error) → send the request → receive the
//! response → record → next transaction; kinds differ only in what follows a
//! response (keep the connection, or close it and connect anew).
//!
//! Hot path: no allocation and no lock. Sockets are registered once for read
//! and write readiness (edge-triggered), a short read or write means "drained
//! for now", and after a request is sent we wait for the response's edge
//! rather than try a read that would say EAGAIN: per RR transaction that is
//! one send, one epoll_wait and one recv. Latencies go to a per-worker
//! histogram per class; counts to per-worker counters published with a relaxed
//! atomic store once per loop turn for the live progress line.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use slab::Slab;
use stackbench_metrics::{ErrorCounts, LatencyHistogram};
use stackbench_model::{CrrClose, Kind, SocketOptions};

use crate::sockopt::IO_CHUNK_BYTES;
use crate::timer::TimerWheel;
use crate::transport::{DataStream, Dialer};

/// Wait before reconnecting after a connection error.
const RECONNECT_BACKOFF_MS: u64 = 10;
/// Longest sleep in epoll, so stop requests are seen promptly.
const MAX_POLL_WAIT: Duration = Duration::from_millis(50);

/// What a worker needs to know about one class.
#[derive(Debug, Clone)]
pub struct ClassPlan {
    pub kind: Kind,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Opens this class's data connections (to its test's endpoints).
    pub dialer: Dialer,
}

/// The run's clock: nanoseconds since `epoch`.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub epoch: Instant,
    /// Transactions completing before this are warm-up and not counted.
    pub warmup_end_ns: u64,
    /// End of the measurement window; `None` when bounded by counts only.
    pub end_ns: Option<u64>,
}

impl Timing {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    #[inline]
    fn in_window(&self, t_ns: u64) -> bool {
        t_ns >= self.warmup_end_ns && self.end_ns.is_none_or(|end| t_ns < end)
    }
}

/// Everything one class accumulated on one worker.
#[derive(Debug, Clone, Default)]
pub struct ClassAccum {
    pub hist: LatencyHistogram,
    pub transactions: u64,
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    /// Errors over the whole run, warm-up included.
    pub errors: ErrorCounts,
    /// Transactions completed in each whole second of the window.
    pub per_second: Vec<u64>,
    /// Completion time of the last counted transaction, ns since the epoch.
    pub last_completion_ns: u64,
}

impl ClassAccum {
    pub fn merge(&mut self, o: &ClassAccum) {
        self.hist.merge(&o.hist);
        self.transactions += o.transactions;
        self.tx_bytes += o.tx_bytes;
        self.rx_bytes += o.rx_bytes;
        self.errors.add(&o.errors);
        if self.per_second.len() < o.per_second.len() {
            self.per_second.resize(o.per_second.len(), 0);
        }
        for (a, b) in self.per_second.iter_mut().zip(&o.per_second) {
            *a += b;
        }
        self.last_completion_ns = self.last_completion_ns.max(o.last_completion_ns);
    }
}

/// What one `send` achieved.
enum Sent {
    /// The whole request is out.
    Done,
    /// The socket took less than offered: wait for the writable edge.
    Blocked,
    /// A full chunk went out and more remains.
    More,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Sending the request (also while a new connection's handshake is in flight).
    Sending,
    Receiving,
    /// CRR with server-close: response complete, waiting for the server's FIN
    /// so that the client closes second and TIME_WAIT stays on the server.
    AwaitEof,
    /// Waiting out the reconnect back-off after an error.
    Backoff,
}

/// Per-connection state: 32 bytes (see `conn_state_is_small`).
struct Conn {
    stream: Option<DataStream>,
    class: u16,
    phase: Phase,
    /// Bytes left to send or receive in the current phase.
    remaining: u64,
    /// Start of the current transaction, ns since the epoch.
    start_ns: u64,
    /// Transactions this client still has to count (`u64::MAX`: unbounded).
    quota: u64,
}

/// One driver worker thread's state.
pub struct Worker<'a> {
    poll: Poll,
    classes: &'a [ClassPlan],
    socket: SocketOptions,
    spin: bool,
    timing: Timing,
    conns: Slab<Conn>,
    accum: Vec<ClassAccum>,
    timers: TimerWheel,
    fired: Vec<u32>,
    scratch: Vec<u8>,
    zeros: Vec<u8>,
    /// Connections that still have work (not finished their quota).
    active: usize,
    /// Published completed-transaction counts per class (progress display).
    published: &'a [AtomicU64],
}

impl<'a> Worker<'a> {
    /// `clients` lists (class index, quota) for each client this worker runs.
    pub fn new(
        classes: &'a [ClassPlan],
        clients: &[(u16, u64)],
        socket: SocketOptions,
        spin: bool,
        timing: Timing,
        published: &'a [AtomicU64],
    ) -> io::Result<Worker<'a>> {
        let window_s = timing.end_ns.map_or(0, |e| {
            (e.saturating_sub(timing.warmup_end_ns) / 1_000_000_000) as usize
        });
        let accum = (0..classes.len())
            .map(|_| ClassAccum {
                per_second: Vec::with_capacity(window_s + 2),
                ..ClassAccum::default()
            })
            .collect();
        let mut w = Worker {
            poll: Poll::new()?,
            classes,
            socket,
            spin,
            timing,
            conns: Slab::with_capacity(clients.len()),
            accum,
            timers: TimerWheel::new(),
            fired: Vec::new(),
            scratch: vec![0; IO_CHUNK_BYTES],
            zeros: vec![0; IO_CHUNK_BYTES],
            active: 0,
            published,
        };
        for &(class, quota) in clients.iter().filter(|c| c.1 > 0) {
            let key = w.conns.insert(Conn {
                stream: None,
                class,
                phase: Phase::Backoff,
                remaining: 0,
                start_ns: 0,
                quota,
            });
            w.active += 1;
            w.open(key);
        }
        Ok(w)
    }

    /// Runs until the window ends, every quota is met, or `abort` is set.
    pub fn run(mut self, abort: &AtomicBool) -> Vec<ClassAccum> {
        let mut events = Events::with_capacity(1024);
        loop {
            let now = self.timing.now_ns();
            if abort.load(Ordering::Relaxed)
                || self.active == 0
                || self.timing.end_ns.is_some_and(|e| now >= e)
            {
                break;
            }
            let mut wait = MAX_POLL_WAIT;
            if let Some(end) = self.timing.end_ns {
                wait = wait.min(Duration::from_nanos(end - now));
            }
            if !self.timers.is_empty() {
                wait = wait.min(Duration::from_millis(1));
            }
            if self.spin {
                wait = Duration::ZERO;
            }
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            for event in events.iter() {
                self.drive(event.token().0);
            }
            self.fire_timers();
            for (slot, acc) in self.published.iter().zip(&self.accum) {
                slot.store(acc.transactions, Ordering::Relaxed);
            }
        }
        self.accum
    }

    fn fire_timers(&mut self) {
        if self.timers.is_empty() {
            return;
        }
        self.timers
            .advance(self.timing.now_ns() / 1_000_000, &mut self.fired);
        while let Some(key) = self.fired.pop() {
            if self
                .conns
                .get(key as usize)
                .is_some_and(|c| c.phase == Phase::Backoff)
            {
                self.open(key as usize);
            }
        }
    }

    /// Starts a new connection for client `key` and sends the request at once:
    /// on loopback the handshake has usually completed inside `connect()`, and
    /// if not, `send` says EAGAIN and the connection's writable edge resumes
    /// it (or `send` reports the connect error), which saves the SO_ERROR and
    /// getpeername calls and an epoll round trip per CRR transaction.
    fn open(&mut self, key: usize) {
        let classes = self.classes;
        let plan = &classes[self.conns[key].class as usize];
        let started = self.timing.now_ns();
        let result = plan
            .dialer
            .connect(key, &self.socket, plan.response_bytes)
            .and_then(|mut stream| {
                self.poll.registry().register(
                    &mut stream,
                    Token(key),
                    Interest::READABLE | Interest::WRITABLE,
                )?;
                Ok(stream)
            });
        match result {
            Ok(stream) => {
                let conn = &mut self.conns[key];
                conn.stream = Some(stream);
                conn.phase = Phase::Sending;
                conn.remaining = plan.request_bytes;
                conn.start_ns = started;
            }
            Err(e) => return self.fail(key, &e),
        }
        loop {
            match self.send_chunk(key) {
                Ok(Sent::More) => {}
                Ok(Sent::Done | Sent::Blocked) => return,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => return self.fail(key, &e),
            }
        }
    }

    /// One `send` of the current request; moves to receiving when it is all out.
    fn send_chunk(&mut self, key: usize) -> io::Result<Sent> {
        let conn = &mut self.conns[key];
        let Some(stream) = conn.stream.as_mut() else {
            return Ok(Sent::Blocked);
        };
        let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
        let n = stream.send(&self.zeros[..want])?;
        conn.remaining -= n as u64;
        if self.timing.in_window(self.timing.now_ns()) {
            self.accum[conn.class as usize].tx_bytes += n as u64;
        }
        if conn.remaining == 0 {
            conn.phase = Phase::Receiving;
            conn.remaining = self.classes[conn.class as usize].response_bytes;
            return Ok(Sent::Done);
        }
        Ok(if n < want { Sent::Blocked } else { Sent::More })
    }

    /// Counts an error, drops the connection and schedules a reconnect.
    fn fail(&mut self, key: usize, e: &io::Error) {
        let conn = &mut self.conns[key];
        let errors = &mut self.accum[conn.class as usize].errors;
        match e.kind() {
            io::ErrorKind::ConnectionRefused => errors.refused += 1,
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted => errors.reset += 1,
            io::ErrorKind::UnexpectedEof => errors.eof += 1,
            io::ErrorKind::TimedOut => errors.timeout += 1,
            _ => errors.other += 1,
        }
        conn.stream = None;
        conn.phase = Phase::Backoff;
        let due_ms = self.timing.now_ns() / 1_000_000 + RECONNECT_BACKOFF_MS;
        self.timers.schedule(key as u32, due_ms);
    }

    /// A client finished its quota: close and stop counting it as active.
    fn finish(&mut self, key: usize) {
        self.conns.remove(key);
        self.active -= 1;
    }

    fn drive(&mut self, key: usize) {
        if let Err(e) = self.step(key) {
            if e.kind() != io::ErrorKind::WouldBlock {
                self.fail(key, &e);
            }
        }
    }

    /// Advances client `key` as far as its socket allows. `Err(WouldBlock)`
    /// (or `Ok`) means wait for the next readiness edge.
    fn step(&mut self, key: usize) -> io::Result<()> {
        loop {
            let Some(conn) = self.conns.get_mut(key) else {
                return Ok(());
            };
            let Some(stream) = conn.stream.as_mut() else {
                return Ok(());
            };
            match conn.phase {
                Phase::Backoff => return Ok(()),
                Phase::Sending => match self.send_chunk(key)? {
                    Sent::More => {}
                    // After the request, wait for the response's edge.
                    Sent::Done | Sent::Blocked => return Ok(()),
                },
                Phase::Receiving => {
                    let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
                    let n = stream.recv(&mut self.scratch[..want], self.socket.waitall)?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    if self.socket.quickack {
                        stream.quickack();
                    }
                    conn.remaining -= n as u64;
                    let now = self.timing.now_ns();
                    let counted = self.timing.in_window(now);
                    if counted {
                        self.accum[conn.class as usize].rx_bytes += n as u64;
                    }
                    if conn.remaining == 0 {
                        self.complete(key, now, counted);
                        if !self.next_transaction(key, now)? {
                            return Ok(());
                        }
                    } else if n < want {
                        return Ok(());
                    }
                }
                Phase::AwaitEof => {
                    let n = stream.recv(&mut self.scratch[..1], false)?;
                    if n != 0 {
                        return Err(io::Error::other(
                            "responder sent more than the response size",
                        ));
                    }
                    conn.stream = None;
                    self.reopen_or_finish(key);
                    return Ok(());
                }
            }
        }
    }

    /// Records a completed transaction.
    fn complete(&mut self, key: usize, now: u64, counted: bool) {
        let conn = &mut self.conns[key];
        if !counted {
            return;
        }
        let acc = &mut self.accum[conn.class as usize];
        acc.hist.record_ns(now - conn.start_ns);
        acc.transactions += 1;
        acc.last_completion_ns = now;
        let second = ((now - self.timing.warmup_end_ns) / 1_000_000_000) as usize;
        if acc.per_second.len() <= second {
            // At most once per second of run time, never per transaction.
            acc.per_second.resize(second + 1, 0);
        }
        acc.per_second[second] += 1;
        conn.quota = conn.quota.saturating_sub(1);
    }

    /// After a response: start the next transaction on this connection (RR,
    /// STR), or close it the configured way and connect anew (CRR). Returns
    /// whether the state machine should keep going on this connection.
    fn next_transaction(&mut self, key: usize, now: u64) -> io::Result<bool> {
        let conn = &mut self.conns[key];
        let classes = self.classes;
        let plan = &classes[conn.class as usize];
        if plan.kind != Kind::Crr {
            if conn.quota == 0 {
                self.finish(key);
                return Ok(false);
            }
            conn.phase = Phase::Sending;
            conn.remaining = plan.request_bytes;
            conn.start_ns = now;
            return Ok(true);
        }
        match self.socket.crr_close {
            CrrClose::Server => {
                conn.phase = Phase::AwaitEof;
                return Ok(true);
            }
            CrrClose::Client => {}
            CrrClose::Abort => {
                if let Some(s) = &conn.stream {
                    s.set_abortive_close()?;
                }
            }
        }
        conn.stream = None;
        self.reopen_or_finish(key);
        Ok(false)
    }

    fn reopen_or_finish(&mut self, key: usize) {
        if self.conns[key].quota == 0 {
            self.finish(key);
        } else {
            self.open(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-connection figure the README states; 256K connections must fit
    /// comfortably in one process.
    #[test]
    fn conn_state_is_small() {
        // A `DataStream` is its fd alone, in debug builds too (mio's own
        // socket types add a selector id there); 48 leaves room for that.
        let limit = if cfg!(debug_assertions) { 48 } else { 32 };
        let size = std::mem::size_of::<Conn>();
        eprintln!(
            "driver per-connection state: {size} bytes (slab entry {} bytes)",
            size_of::<slab::Slab<Conn>>()
        );
        assert!(size <= limit, "{size}");
    }
}
