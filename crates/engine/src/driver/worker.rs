//! One driver worker: an epoll loop (mio) over many client connections of any
//! classes. Every kind is one table-driven state machine (neper's `neper_fn`
//! idea): connect (CRR, or after an error) → send the request → receive the
//! response → record → next transaction; kinds differ only in what follows a
//! response (keep the connection, or close it and connect anew), and pacing
//! (closed loop, think time, open-loop rate: [`super::pace`], transitions in
//! [`super::flow`]) only in *when* the next request starts. Stop conditions
//! (the window's end, per-client quotas, abort) compose with all of them.
//!
//! Hot path: no allocation and no lock. Sockets are registered once for read
//! and write readiness (edge-triggered), a short read or write means "drained
//! for now", and after a request is sent we wait for the response's edge
//! rather than try a read that would say EAGAIN: per RR transaction that is
//! one send, one epoll_wait and one recv (one send and one recv when the
//! worker has a single connection: [`super::direct`]). Latencies go to a per-worker
//! histogram per class; counts to per-worker counters published with a relaxed
//! atomic store once per loop turn for the live progress line.
//!
//! Timers (reconnect back-off, ramp, think times, open-loop send times) live
//! in the timing wheel; a `timerfd` armed at the wheel's next deadline wakes
//! epoll exactly then, so a worker whose clients all think sleeps.
//! With `io = uring` the same worker runs [`super::uring`]'s loop instead;
//! a worker left with one closed-loop connection waits in its `recv`
//! ([`super::direct`]).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use openssl::ssl::SslSession;
use slab::Slab;
use stackbench_model::{CrrClose, IoMode, Kind, SocketOptions};

use super::accum::ClassAccum;
use super::clock::{Timing, Window};
use super::machine::Got;
use super::pace::{self, Pace};
use super::uring::Ring;
use crate::sockopt::IO_CHUNK_BYTES;
use crate::timer::{TimerWheel, WakeTimer};
use crate::transport::{DataStream, Dialer};

/// Wait before reconnecting after a connection error.
const RECONNECT_BACKOFF_NS: u64 = 10_000_000;
/// Longest sleep in epoll, so stop requests are seen promptly.
const MAX_POLL_WAIT: Duration = Duration::from_millis(50);
/// The wake-up timer's token (slab keys never reach it).
const WAKE: Token = Token(usize::MAX);

/// What a worker needs to know about one class.
#[derive(Debug, Clone, Copy)]
pub struct ClassPlan {
    pub kind: Kind,
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub pace: Pace,
    /// Priority level of the class's sockets (see `sockopt`).
    pub priority: Option<u8>,
}

/// What every worker of a run shares.
#[derive(Debug)]
pub struct Shared<'a> {
    pub classes: &'a [ClassPlan],
    /// Per class: opens its data connections (to its test's endpoints).
    pub dialers: &'a [Dialer],
    pub socket: SocketOptions,
    pub spin: bool,
    /// The effective I/O backend (see `crate::iomode`).
    pub io: IoMode,
    pub epoch: Instant,
    pub window: &'a Window,
    /// Capacity hint for the per-second counts.
    pub window_s: usize,
    /// ns between two connection openings (the ramp); 0: all at once.
    pub ramp_gap_ns: f64,
    pub seed: u64,
}

/// One client given to a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Client {
    pub class: u16,
    /// Transactions it has to count (`u64::MAX`: unbounded).
    pub quota: u64,
    /// Its index in the whole run: its place in the ramp and its random seed.
    pub index: u64,
}

/// What a worker publishes for the coordinator (relaxed atomics).
#[derive(Debug, Default)]
pub struct WorkerSlots {
    /// Counted transactions per class.
    pub transactions: Vec<AtomicU64>,
    /// Clients connected at least once.
    pub connected: AtomicU64,
}

impl WorkerSlots {
    pub fn new(classes: usize) -> WorkerSlots {
        WorkerSlots {
            transactions: (0..classes).map(|_| AtomicU64::new(0)).collect(),
            connected: AtomicU64::new(0),
        }
    }
}

/// What one `send` achieved.
pub(super) enum Sent {
    /// The whole request is out.
    Done,
    /// The socket took less than offered: wait for the writable edge.
    Blocked,
    /// A full chunk went out and more remains.
    More,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    /// Sending the request (also while a new connection's handshake is in flight).
    Sending,
    Receiving,
    /// CRR with server-close: response complete, waiting for the server's FIN
    /// so that the client closes second and TIME_WAIT stays on the server.
    AwaitEof,
    /// No connection: it opens when its timer fires (ramp, reconnect back-off).
    Closed,
    /// Between transactions: the next request starts when its timer fires
    /// (think time, open-loop schedule; CRR connects then).
    Waiting,
}

/// `Conn::flags`: the client has connected at least once.
pub(super) const CONNECTED: u8 = 1;
/// `Conn::flags`: the client is past the start barrier (the window is open).
pub(super) const RELEASED: u8 = 2;
/// `Conn::flags` (io_uring): a send, a receive, a connect watch in flight.
pub(super) const SEND_QUEUED: u8 = 4;
pub(super) const RECV_QUEUED: u8 = 8;
pub(super) const CONNECT_QUEUED: u8 = 16;
/// A last send that reports only failure (over when its linked receive is).
pub(super) const LAST_QUEUED: u8 = 32;
/// `Conn::start_ns` while waiting: no wait to measure (first request, after an error).
pub(super) const NOT_WAITING: u64 = u64::MAX;

/// Per-connection state: 56 bytes (see `conn_state_is_small`; the stream is
/// an fd or a boxed TLS session, 16 bytes, in debug builds too).
pub(super) struct Conn {
    pub(super) stream: Option<DataStream>,
    pub(super) class: u16,
    pub(super) phase: Phase,
    pub(super) flags: u8,
    /// Bytes left to send or receive in the current phase.
    pub(super) remaining: u64,
    /// Start of the current transaction (its actual send; for CRR its
    /// connect), ns since the epoch; while waiting, when the wait began.
    pub(super) start_ns: u64,
    /// Paced classes: intended send time of the current or next request.
    pub(super) due_ns: u64,
    /// Transactions this client still has to count (`u64::MAX`: unbounded).
    pub(super) quota: u64,
    /// This client's random state (think times, arrival gaps).
    pub(super) rng: u64,
}

/// One driver worker thread's state.
pub struct Worker<'a> {
    /// `io = uring`: the ring its I/O goes through (declared before the
    /// buffers it points into, so it is dropped first).
    pub(super) ring: Option<Box<Ring>>,
    pub(super) poll: Poll,
    pub(super) classes: &'a [ClassPlan],
    pub(super) dialers: &'a [Dialer],
    pub(super) socket: SocketOptions,
    pub(super) spin: bool,
    pub(super) timing: Timing,
    window: &'a Window,
    pub(super) conns: Slab<Conn>,
    pub(super) accum: Vec<ClassAccum>,
    pub(super) timers: TimerWheel,
    wake: Option<WakeTimer>,
    fired: Vec<u32>,
    scratch: Vec<u8>,
    pub(super) zeros: Vec<u8>,
    /// Connections that still have work (not finished their quota).
    pub(super) active: usize,
    /// Clients connected at least once, on this worker.
    pub(super) connected: u64,
    /// Connected clients waiting for the window to open.
    pub(super) parked: Vec<u32>,
    slots: &'a WorkerSlots,
    /// TLS: per class, the last session this worker's clients got, offered
    /// again with the class's resume ratio.
    pub(super) sessions: Vec<Option<SslSession>>,
    /// The clock as `received` last read it (every response chunk): the
    /// direct loop reuses it instead of reading the clock again.
    pub(super) received_ns: u64,
}

impl<'a> Worker<'a> {
    /// A worker for `clients`; each opens at once, or at its place in the ramp.
    pub fn new(
        shared: &Shared<'a>,
        clients: &[Client],
        slots: &'a WorkerSlots,
    ) -> io::Result<Worker<'a>> {
        let timing = Timing::new(shared.epoch);
        let accum = shared
            .classes
            .iter()
            .map(|c| ClassAccum::new(shared.window_s, c.pace.is_paced(), c.pace.is_open()))
            .collect();
        let poll = Poll::new()?;
        // Busy-polling looks at the wheel every turn and needs no wake-up.
        let wake = if shared.spin {
            None
        } else {
            let t = WakeTimer::new(timing.now_ns())?;
            poll.registry()
                .register(&mut SourceFd(&t.raw_fd()), WAKE, Interest::READABLE)?;
            Some(t)
        };
        let ring = match shared.io {
            IoMode::Uring => Some(Box::new(Ring::new(clients.len())?)),
            // `auto` is settled before a run starts (`iomode::effective`).
            IoMode::Epoll | IoMode::Auto => None,
        };
        let mut w = Worker {
            ring,
            poll,
            classes: shared.classes,
            dialers: shared.dialers,
            socket: shared.socket,
            spin: shared.spin,
            timing,
            received_ns: 0,
            window: shared.window,
            conns: Slab::with_capacity(clients.len()),
            accum,
            timers: TimerWheel::new(),
            wake,
            fired: Vec::new(),
            scratch: vec![0; IO_CHUNK_BYTES],
            zeros: vec![0; IO_CHUNK_BYTES],
            active: 0,
            connected: 0,
            parked: Vec::with_capacity(clients.len()),
            slots,
            sessions: vec![None; shared.classes.len()],
        };
        for c in clients.iter().filter(|c| c.quota > 0) {
            let key = w.conns.insert(Conn {
                stream: None,
                class: c.class,
                phase: Phase::Closed,
                flags: 0,
                remaining: 0,
                start_ns: NOT_WAITING,
                due_ns: 0,
                quota: c.quota,
                rng: pace::rng_for(shared.seed, c.index),
            });
            w.active += 1;
            let at_ns = (c.index as f64 * shared.ramp_gap_ns) as u64;
            if at_ns == 0 {
                w.arrive(key);
            } else {
                w.timers.schedule(key as u32, at_ns);
            }
        }
        Ok(w)
    }

    /// Runs until the window ends, every quota is met, or `abort` is set.
    pub fn run(mut self, abort: &AtomicBool) -> Vec<ClassAccum> {
        if self.ring.is_some() {
            return self.run_uring(abort);
        }
        let mut events = Events::with_capacity(1024);
        loop {
            self.refresh_window();
            let now = self.timing.now_ns();
            if self.should_stop(abort, now) {
                break;
            }
            let wait = self.poll_wait(now);
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            self.refresh_window();
            for event in events.iter() {
                if event.token() == WAKE {
                    if let Some(w) = self.wake.as_mut() {
                        w.fired();
                    }
                    continue;
                }
                let key = event.token().0;
                if event.is_writable() && !event.is_error() && !event.is_write_closed() {
                    self.mark_connected(key);
                }
                self.drive(key);
            }
            self.fire_timers();
            self.publish();
            if let Some(key) = self.direct_candidate() {
                if self.run_direct(key, abort) {
                    break;
                }
            }
        }
        self.accum
    }

    /// Whether the loop ends: aborted, every quota met, or the window over.
    pub(super) fn should_stop(&self, abort: &AtomicBool, now: u64) -> bool {
        abort.load(Ordering::Relaxed)
            || self.active == 0
            || self.timing.end_ns.is_some_and(|e| now >= e)
    }

    /// Publishes the counts for the coordinator, once per loop turn.
    pub(super) fn publish(&self) {
        for (slot, acc) in self.slots.transactions.iter().zip(&self.accum) {
            slot.store(acc.transactions, Ordering::Relaxed);
        }
        self.slots
            .connected
            .store(self.connected, Ordering::Relaxed);
    }

    /// How long epoll may sleep: until the window's end or [`MAX_POLL_WAIT`];
    /// the wheel's next deadline is armed on the wake-up timer (busy-polling:
    /// not at all).
    fn poll_wait(&mut self, now: u64) -> Duration {
        if self.spin {
            return Duration::ZERO;
        }
        let mut wait = MAX_POLL_WAIT;
        if let Some(end) = self.timing.end_ns {
            wait = wait.min(Duration::from_nanos(end - now));
        }
        let next = self.timers.next_deadline();
        if next.is_some_and(|d| d <= now) {
            return Duration::ZERO;
        }
        let armed = self.wake.as_mut().map(|w| w.arm(next));
        if !matches!(armed, Some(Ok(()))) && next.is_some() {
            // No timerfd: fall back to millisecond polling.
            wait = wait.min(Duration::from_millis(1));
        }
        wait
    }

    /// Takes the window once the coordinator opened it, noting how many
    /// clients of each class were connected then, and releases the clients
    /// waiting at the start barrier.
    pub(super) fn refresh_window(&mut self) {
        if self.timing.refresh(self.window) {
            for acc in &mut self.accum {
                acc.connected_at_window = acc.connected;
            }
            for key in std::mem::take(&mut self.parked) {
                self.release(key as usize);
            }
        }
    }

    pub(super) fn fire_timers(&mut self) {
        if self.timers.is_empty() {
            return;
        }
        self.timers.advance(self.timing.now_ns(), &mut self.fired);
        while let Some(key) = self.fired.pop() {
            match self.conns.get(key as usize).map(|c| (c.phase, c.flags)) {
                Some((Phase::Closed, f)) if f & RELEASED == 0 => self.arrive(key as usize),
                Some((Phase::Closed, _)) => self.open(key as usize),
                Some((Phase::Waiting, _)) => self.wait_over(key as usize),
                _ => {}
            }
        }
    }

    /// Starts a new connection for client `key` and sends the request at once:
    /// on loopback the handshake has usually completed inside `connect()`, and
    /// if not, `send` says EAGAIN and the connection's writable edge resumes
    /// it (or `send` reports the connect error), which saves the SO_ERROR and
    /// getpeername calls and an epoll round trip per CRR transaction.
    pub(super) fn open(&mut self, key: usize) {
        let started = self.timing.now_ns();
        if let Err(e) = self.attach(key) {
            return self.fail(key, &e);
        }
        self.begin_request(key, started);
        if self.ring.is_some() {
            return self.queue_io(key);
        }
        loop {
            match self.send_chunk(key) {
                Ok(Sent::More) => self.mark_connected(key),
                Ok(Sent::Done | Sent::Blocked) => return self.mark_connected(key),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => return self.fail(key, &e),
            }
        }
    }

    /// Connects client `key` and registers the connection (nothing sent).
    pub(super) fn attach(&mut self, key: usize) -> io::Result<()> {
        let class = self.conns[key].class as usize;
        let response_bytes = self.classes[class].response_bytes;
        let session = self.session_to_offer(key, class);
        let opts = SocketOptions {
            priority: self.classes[class].priority,
            ..self.socket
        };
        let mut stream =
            self.dialers[class].connect_resuming(key, &opts, response_bytes, session.as_ref())?;
        if self.ring.is_none() {
            self.poll.registry().register(
                &mut stream,
                Token(key),
                Interest::READABLE | Interest::WRITABLE,
            )?;
        }
        self.conns[key].stream = Some(stream);
        if self.ring.is_some() && self.conns[key].flags & RELEASED == 0 {
            // Before the window: the connection counts once connected.
            self.watch_connect(key);
        }
        Ok(())
    }

    /// TLS: the session a new connection of client `key` offers — the last
    /// one of its class on this worker, with the class's resume ratio (a
    /// seeded draw when strictly between 0 and 1).
    fn session_to_offer(&mut self, key: usize, class: usize) -> Option<SslSession> {
        let ratio = self.dialers[class].resume_ratio();
        if ratio <= 0.0 {
            return None;
        }
        let offer = ratio >= 1.0 || pace::unit(&mut self.conns[key].rng) < ratio;
        offer.then(|| self.sessions[class].clone()).flatten()
    }

    /// One `send` of the current request; moves to receiving when it is all out.
    fn send_chunk(&mut self, key: usize) -> io::Result<Sent> {
        let conn = &self.conns[key];
        if conn.stream.is_none() {
            return Ok(Sent::Blocked);
        }
        let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
        self.before_send(key);
        let stream = self.conns[key].stream.as_mut().expect("checked above");
        let n = stream.send(&self.zeros[..want])?;
        let rekeys = stream.take_rekeys();
        if rekeys > 0 && self.timing.in_window(self.timing.now_ns()) {
            let class = self.conns[key].class as usize;
            self.accum[class].rekeys += u64::from(rekeys);
        }
        Ok(self.sent(key, n, want))
    }

    /// Counts an error, drops the connection and schedules a reconnect.
    pub(super) fn fail(&mut self, key: usize, e: &io::Error) {
        if self.ring.is_some() {
            self.abandon_queued(key);
        }
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
        conn.phase = Phase::Closed;
        conn.start_ns = NOT_WAITING;
        let due_ns = self.timing.now_ns() + RECONNECT_BACKOFF_NS;
        self.timers.schedule(key as u32, due_ns);
    }

    /// A client finished its quota: close and stop counting it as active.
    pub(super) fn finish(&mut self, key: usize) {
        self.conns.remove(key);
        self.active -= 1;
    }

    pub(super) fn drive(&mut self, key: usize) {
        if self.ring.is_some() {
            return self.queue_io(key);
        }
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
                // A waiting connection acts when its timer fires.
                Phase::Closed | Phase::Waiting => return Ok(()),
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
                    match self.received(key, n)? {
                        Got::Next => {}
                        Got::Stop => return Ok(()),
                        Got::More if n < want => return Ok(()),
                        Got::More => {}
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

    /// After a response: start the next transaction on this connection (RR,
    /// STR), or close it the configured way and connect anew (CRR) — at once,
    /// or when the class's pacing says. Returns whether the state machine
    /// should keep going on this connection.
    pub(super) fn next_transaction(&mut self, key: usize, now: u64) -> io::Result<bool> {
        self.plan_next(key, now);
        let conn = &mut self.conns[key];
        let plan = self.classes[conn.class as usize];
        if plan.kind != Kind::Crr {
            if conn.quota == 0 {
                self.finish(key);
                return Ok(false);
            }
            if !self.go_now(key, now) {
                return Ok(false);
            }
            self.begin_request(key, now);
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

    /// CRR after closing: connect anew now or when the pacing says, unless
    /// the quota is met.
    fn reopen_or_finish(&mut self, key: usize) {
        if self.conns[key].quota == 0 {
            self.finish(key);
        } else if self.go_now(key, self.timing.now_ns()) {
            self.open(key);
        }
    }
}

#[cfg(test)]
mod tests;
