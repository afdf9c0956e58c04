//! One driver worker thread: the epoll backend (mio) of the per-connection
//! state machine ([`super::machine`]) over many client connections of any
//! classes. The machine decides; this loop waits for readiness and timers,
//! does the sends and receives, and feeds their results back.
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
//! The worker is generic over the run's application protocol (`P`, a
//! [`Codec`]): raw payloads send the zero buffer and receive into a scratch
//! buffer nobody reads; a framed codec (`http1`) writes its request into an
//! output buffer and is handed each received chunk.
//!
//! Timers (reconnect back-off, ramp, think times, open-loop send times) live
//! in the timing wheel; a `timerfd` armed at the wheel's next deadline wakes
//! epoll exactly then, so a worker whose clients all think sleeps.
//! With `io = uring` the same worker runs [`super::uring`]'s loop instead;
//! a worker left with one closed-loop connection waits in its `recv`
//! ([`super::direct`]).

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use openssl::ssl::SslSession;
use stackbench_metrics::live::{LiveClass, LIVE_COPY_INTERVAL_NS};
use stackbench_model::{AmqpParams, H2Params, IoMode, SocketOptions};

use super::accum::ClassAccum;
use super::clock::{Timing, Window};
pub use super::machine::ClassPlan;
use super::machine::{Epoch, Got, Machine, Next, Phase, Sent, ENTERED_DIRECT};
use super::pace;
use super::ring::Ring;
use crate::app::{Codec, Raw};
use crate::iomode::{self, Claims};
use crate::sockopt::{self, IO_CHUNK_BYTES};
use crate::timer::WakeTimer;
use crate::transport::{DataStream, Dialer};

/// Longest sleep in epoll, so stop requests are seen promptly.
const MAX_POLL_WAIT: Duration = Duration::from_millis(50);
/// The wake-up timer's token (slab keys never reach it).
const WAKE: Token = Token(usize::MAX);
/// A data connection's token is its client's key with this bit set
/// (`Codec::DATA`: FTP's transfers; slab keys never reach it).
const DATA_BIT: usize = 1 << (usize::BITS - 2);

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
    /// Protocol amqp's settings, for its codecs.
    pub amqp: &'a AmqpParams,
    /// Protocol h2's settings, for its codecs.
    pub h2: H2Params,
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
    /// Bytes sent and received, every class: a run bounded by transactions
    /// alone is idle only while neither this nor a count moves (a 20 MB
    /// response on a slow link is minutes without a completed transaction).
    pub moved_bytes: AtomicU64,
    /// `RunConfig::live_metrics`: the worker's copy of its accumulators.
    pub live: Option<LiveSlot>,
}

/// A worker's live copy of its classes' figures, refreshed at most every
/// [`LIVE_COPY_INTERVAL_NS`] from its own loop (a reset and add of each
/// histogram, tens of µs); never waited for: a worker that finds the watch
/// reading it tries again on its next turn.
#[derive(Debug, Default)]
pub struct LiveSlot {
    pub classes: Mutex<Vec<LiveClass>>,
    next_copy_ns: AtomicU64,
}

impl WorkerSlots {
    pub fn new(classes: usize, live: bool) -> WorkerSlots {
        WorkerSlots {
            transactions: (0..classes).map(|_| AtomicU64::new(0)).collect(),
            connected: AtomicU64::new(0),
            moved_bytes: AtomicU64::new(0),
            live: live.then(|| LiveSlot {
                classes: Mutex::new(vec![LiveClass::default(); classes]),
                next_copy_ns: AtomicU64::new(0),
            }),
        }
    }
}

/// An I/O backend of the driver's state machine: the row of what it covers
/// and its loop, which feeds the machine events and carries out its actions
/// (fio's engines have the same two halves, ioengine.h: `struct
/// ioengine_ops` names an engine, flags what it can do, and holds the hooks
/// the core calls). Backends are chosen once per worker and called by value
/// (no dynamic dispatch in the loop); `crate::iomode` refuses a case a
/// backend does not claim before a run starts.
pub trait Backend {
    /// What the backend covers.
    fn claims(&self) -> &'static Claims;
    /// Runs until the window ends, every quota is met, or `abort` is set;
    /// returns what each class booked.
    fn run(self, abort: &AtomicBool) -> Vec<ClassAccum>;
}

/// A worker is on epoll (with direct waiting) or io_uring, chosen when it is
/// built (`Shared::io`).
impl<P: Codec> Backend for Worker<'_, P> {
    fn claims(&self) -> &'static Claims {
        if self.ring.is_some() {
            &iomode::URING
        } else {
            &iomode::EPOLL
        }
    }

    fn run(self, abort: &AtomicBool) -> Vec<ClassAccum> {
        if self.ring.is_some() {
            self.run_uring(abort)
        } else {
            self.run_epoll(abort)
        }
    }
}

/// One driver worker thread's state; `P` is the run's application protocol.
pub struct Worker<'a, P: Codec = Raw> {
    /// `io = uring`: the ring its I/O goes through (declared before the
    /// buffers it points into, so it is dropped first).
    pub(super) ring: Option<Box<Ring>>,
    pub(super) poll: Poll,
    /// The clients' state machine, which holds their sockets.
    pub(super) m: Machine<'a, DataStream, Epoch, P>,
    pub(super) dialers: &'a [Dialer],
    pub(super) spin: bool,
    /// While an epoll edge is driven: it said the peer closed its side.
    peer_closed: bool,
    window: &'a Window,
    wake: Option<WakeTimer>,
    scratch: Vec<u8>,
    pub(super) zeros: Vec<u8>,
    /// A framed protocol's outgoing bytes (empty for raw payloads, which
    /// send `zeros`).
    out: Vec<u8>,
    slots: &'a WorkerSlots,
    /// TLS: per class, the last session this worker's clients got, offered
    /// again with the class's resume ratio.
    pub(super) sessions: Vec<Option<SslSession>>,
    /// A protocol with data connections (`Codec::DATA`): each client's
    /// open one, by key (empty for every other protocol).
    data: Vec<Option<DataStream>>,
}

impl<'a, P: Codec> Worker<'a, P> {
    /// A worker for `clients`; each opens at once, or at its place in the ramp.
    pub fn new(
        shared: &Shared<'a>,
        clients: &[Client],
        slots: &'a WorkerSlots,
    ) -> io::Result<Worker<'a, P>> {
        if P::FRAMED && shared.io == IoMode::Uring {
            // `iomode` never gives io_uring a framed protocol: its receives
            // land in one shared sink, unread.
            return Err(io::Error::other(format!(
                "protocol {} needs the received bytes, which the io_uring backend does not keep",
                P::PROTOCOL.name()
            )));
        }
        let timing = Timing::new(shared.epoch);
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
        let m = Machine::new(
            shared.classes,
            shared.socket,
            Epoch(shared.epoch),
            timing,
            shared.window_s,
            clients.len(),
            (shared.amqp, shared.h2),
        );
        let mut w = Worker {
            ring,
            poll,
            m,
            dialers: shared.dialers,
            spin: shared.spin,
            peer_closed: false,
            window: shared.window,
            wake,
            scratch: vec![0; IO_CHUNK_BYTES],
            zeros: vec![0; IO_CHUNK_BYTES],
            out: if P::FRAMED {
                vec![0; IO_CHUNK_BYTES]
            } else {
                Vec::new()
            },
            slots,
            sessions: vec![None; shared.classes.len()],
            data: if P::DATA {
                (0..clients.len()).map(|_| None).collect()
            } else {
                Vec::new()
            },
        };
        // `iomode` ran every case on a backend that claims it.
        debug_assert!(
            shared
                .classes
                .iter()
                .all(|c| w.claims().kinds.contains(&c.kind)
                    && (w.claims().paced || !c.pace.is_paced())),
            "{} does not cover {:?}",
            w.claims().name,
            shared.classes
        );
        for c in clients.iter().filter(|c| c.quota > 0) {
            let rng = pace::rng_for(shared.seed, c.index);
            let at_ns = (c.index as f64 * shared.ramp_gap_ns) as u64;
            let (key, next) = w.m.add(c.class, c.quota, rng, at_ns);
            w.act(key, next);
        }
        Ok(w)
    }

    /// The epoll loop (with direct waiting for a lone connection).
    fn run_epoll(mut self, abort: &AtomicBool) -> Vec<ClassAccum> {
        let mut events = Events::with_capacity(1024);
        loop {
            self.refresh_window();
            let now = self.m.now_ns();
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
                let key = event.token().0 & !DATA_BIT;
                let control = event.token().0 & DATA_BIT == 0;
                if control && event.is_writable() && !event.is_error() && !event.is_write_closed() {
                    self.m.mark_connected(key);
                }
                // The peer's FIN may come with the data of this edge, and
                // no edge after it: a short read must not end the drive.
                self.peer_closed = event.is_read_closed();
                self.drive(key);
                self.peer_closed = false;
            }
            self.fire_timers();
            self.publish();
            if let Some(key) = self.direct_candidate() {
                if self.run_direct(key, abort) {
                    break;
                }
            }
        }
        self.m.take_accum()
    }

    /// Carries out what the state machine asked for client `key`.
    pub(super) fn act(&mut self, key: usize, next: Next) {
        match next {
            Next::Idle => {}
            Next::Attach => match self.attach(key) {
                Ok(()) => {
                    // A protocol that opens with a setup joins the start
                    // barrier when its setup ends.
                    let next = if P::SETUP {
                        self.m.begin_setup(key)
                    } else {
                        self.m.attached(key)
                    };
                    self.act(key, next);
                }
                Err(e) => self.fail(key, &e),
            },
            Next::Open => self.open(key),
            Next::Drive => self.drive(key),
        }
    }

    /// Whether the loop ends: aborted, every quota met, or the window over.
    pub(super) fn should_stop(&self, abort: &AtomicBool, now: u64) -> bool {
        abort.load(Ordering::Relaxed) || self.m.done(now)
    }

    /// Publishes the counts for the coordinator, once per loop turn (and,
    /// for live metrics, a copy of the accumulators every few hundred ms).
    pub(super) fn publish(&self) {
        let now = self.slots.live.is_some().then(|| self.m.now_ns());
        self.publish_at(now);
    }

    /// [`Worker::publish`] with the time already read (`None`: no live
    /// copy wanted), for the direct path's one clock read per transaction.
    pub(super) fn publish_at(&self, now: Option<u64>) {
        for (slot, acc) in self.slots.transactions.iter().zip(&self.m.accum) {
            slot.store(acc.transactions, Ordering::Relaxed);
        }
        self.slots
            .connected
            .store(self.m.connected, Ordering::Relaxed);
        let moved = self.m.accum.iter().map(|a| a.rx_bytes + a.tx_bytes).sum();
        self.slots.moved_bytes.store(moved, Ordering::Relaxed);
        if let (Some(live), Some(now)) = (&self.slots.live, now) {
            if now >= live.next_copy_ns.load(Ordering::Relaxed) {
                self.copy_live(live, now);
            }
        }
    }

    #[cold]
    fn copy_live(&self, live: &LiveSlot, now: u64) {
        if let Ok(mut classes) = live.classes.try_lock() {
            for (out, acc) in classes.iter_mut().zip(&self.m.accum) {
                acc.copy_live(out);
            }
            live.next_copy_ns
                .store(now + LIVE_COPY_INTERVAL_NS, Ordering::Relaxed);
        }
    }

    /// How long epoll may sleep: until the window's end or [`MAX_POLL_WAIT`];
    /// the wheel's next deadline is armed on the wake-up timer (busy-polling:
    /// not at all).
    fn poll_wait(&mut self, now: u64) -> Duration {
        if self.spin {
            return Duration::ZERO;
        }
        let mut wait = MAX_POLL_WAIT;
        if let Some(end) = self.m.timing.end_ns {
            wait = wait.min(Duration::from_nanos(end - now));
        }
        let next = self.m.timers.next_deadline();
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

    /// Takes the window once the coordinator opened it and releases the
    /// clients waiting at the start barrier.
    pub(super) fn refresh_window(&mut self) {
        if let Some(parked) = self.m.refresh_window(self.window) {
            for key in parked {
                let next = self.m.release(key as usize);
                self.act(key as usize, next);
            }
        }
    }

    pub(super) fn fire_timers(&mut self) {
        self.m.advance_timers();
        while let Some((key, next)) = self.m.next_fired() {
            self.act(key, next);
        }
    }

    /// Starts a new connection for client `key` and sends the request at once:
    /// on loopback the handshake has usually completed inside `connect()`, and
    /// if not, `send` says EAGAIN and the connection's writable edge resumes
    /// it (or `send` reports the connect error), which saves the SO_ERROR and
    /// getpeername calls and an epoll round trip per CRR transaction.
    pub(super) fn open(&mut self, key: usize) {
        let started = self.m.now_ns();
        if let Err(e) = self.attach(key) {
            return self.fail(key, &e);
        }
        self.m.begin_request(key, started);
        if self.ring.is_some() {
            return self.queue_io(key);
        }
        if P::SETUP {
            // The request goes out once the setup is over.
            let next = self.m.begin_setup(key);
            return self.act(key, next);
        }
        loop {
            match self.send_chunk(key) {
                Ok(Sent::More) => self.m.mark_connected(key),
                Ok(Sent::Done | Sent::Blocked) => return self.m.mark_connected(key),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => return self.fail(key, &e),
            }
        }
    }

    /// Connects client `key` and registers the connection (nothing sent).
    pub(super) fn attach(&mut self, key: usize) -> io::Result<()> {
        let class = self.m.conns[key].class as usize;
        let response_bytes = self.m.classes[class].app.response_bytes();
        let session = self.session_to_offer(key, class);
        let opts = SocketOptions {
            priority: self.m.classes[class].priority,
            ..self.m.socket
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
        let conn = &mut self.m.conns[key];
        conn.stream = Some(stream);
        // Evidence of the backend that drove it (`ClassAccum`); a new
        // connection has not waited directly yet.
        let acc = &mut self.m.accum[class];
        if self.ring.is_some() {
            acc.uring_connections += 1;
        } else {
            acc.epoll_connections += 1;
            conn.flags &= !ENTERED_DIRECT;
        }
        if self.ring.is_some() && self.m.conns[key].flags & super::machine::RELEASED == 0 {
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
        let offer = ratio >= 1.0 || pace::unit(&mut self.m.conns[key].rng) < ratio;
        offer.then(|| self.sessions[class].clone()).flatten()
    }

    /// Before a send of client `key`'s request (both paths call it): the
    /// first chunk of a corked request corks the socket; [`Self::sent`]
    /// lifts the cork after the last.
    pub(super) fn before_send(&mut self, key: usize) {
        if self.m.corks_now(key) {
            if let Some(s) = self.m.conns[key].stream.as_ref() {
                sockopt::cork(s.as_raw_fd(), true);
            }
        }
    }

    /// Books `n` sent bytes of client `key`'s request (of `want` offered; the
    /// epoll and io_uring paths share it); when it is all out, lifts a
    /// corked request's cork.
    pub(super) fn sent(&mut self, key: usize, n: usize, want: usize) -> Sent {
        let corked = self.m.corks_request(self.m.conns[key].class);
        let sent = self.m.sent(key, n, want);
        if corked && sent == Sent::Done {
            if let Some(s) = self.m.conns[key].stream.as_ref() {
                sockopt::cork(s.as_raw_fd(), false);
            }
        }
        sent
    }

    /// Books `n` received bytes of client `key`'s response (the epoll and
    /// io_uring paths share it): the quick ACK, the TLS handshake and its
    /// session, then the machine's booking; a CRR connection it says to
    /// close is closed here, and what follows carried out.
    pub(super) fn received(&mut self, key: usize, n: usize) -> io::Result<Got> {
        let conn = &mut self.m.conns[key];
        let stream = conn.stream.as_mut();
        if self.m.socket.quickack {
            if let Some(s) = stream.as_ref() {
                s.quickack();
            }
        }
        let handshake = stream.and_then(|s| s.take_handshake());
        if handshake.is_some() {
            let class = conn.class as usize;
            if self.dialers[class].resume_ratio() > 0.0 {
                self.sessions[class] = conn.stream.as_ref().and_then(|s| s.tls_session());
            }
        }
        // A framed protocol reads what `step` received into `scratch`.
        let chunk: &[u8] = if P::FRAMED { &self.scratch[..n] } else { &[] };
        let got = self.m.received(key, n, chunk, handshake.as_ref());
        self.settle(key, got)
    }

    /// Carries out what a booking said beyond going on: a CRR connection it
    /// says to close is closed, and what follows carried out; a data
    /// connection it asks for is opened (then the client goes on: `Next`).
    fn settle(&mut self, key: usize, got: Got) -> io::Result<Got> {
        match got {
            Got::Close { abort } => {
                if abort {
                    if let Some(s) = &self.m.conns[key].stream {
                        s.set_abortive_close()?;
                    }
                }
                let next = self.m.closed(key);
                self.act(key, next);
                Ok(Got::Stop)
            }
            Got::OpenData(port) => {
                self.open_data(key, port)?;
                Ok(Got::Next)
            }
            got => {
                if P::DATA && got == Got::Stop && !self.m.conns.contains(key) {
                    // The client ended (a fault, its quota): so does its
                    // data connection.
                    self.data[key] = None;
                }
                Ok(got)
            }
        }
    }

    /// Opens client `key`'s data connection to `port` of its control
    /// connection's peer (non-blocking: the first receive or send finds
    /// out whether it was made) and registers it under its own token.
    fn open_data(&mut self, key: usize, port: u16) -> io::Result<()> {
        let class = self.m.conns[key].class as usize;
        let opts = SocketOptions {
            priority: self.m.classes[class].priority,
            ..self.m.socket
        };
        let bytes = self.m.codecs[class].data_bytes();
        let mut stream = self.dialers[class].connect_port(key, port, &opts, bytes)?;
        self.poll.registry().register(
            &mut stream,
            Token(key | DATA_BIT),
            Interest::READABLE | Interest::WRITABLE,
        )?;
        self.data[key] = Some(stream);
        Ok(())
    }

    /// Books `n` bytes client `key` received during its connection's setup
    /// (in `scratch`), with the TLS handshake and session as for a
    /// response; what the machine says comes next.
    fn setup_received(&mut self, key: usize, n: usize) -> Next {
        let conn = &mut self.m.conns[key];
        let handshake = conn.stream.as_mut().and_then(|s| s.take_handshake());
        if handshake.is_some() {
            let class = conn.class as usize;
            if self.dialers[class].resume_ratio() > 0.0 {
                self.sessions[class] = conn.stream.as_ref().and_then(|s| s.tls_session());
            }
        }
        self.m
            .setup_received(key, &self.scratch[..n], handshake.as_ref())
    }

    /// One `send` of the current request; moves to receiving when it is all out.
    fn send_chunk(&mut self, key: usize) -> io::Result<Sent> {
        let conn = &self.m.conns[key];
        if conn.stream.is_none() {
            return Ok(Sent::Blocked);
        }
        let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
        self.before_send(key);
        let bytes = if P::FRAMED {
            self.m.fill_request(key, &mut self.out[..want]);
            &self.out[..want]
        } else {
            &self.zeros[..want]
        };
        let stream = self.m.conns[key].stream.as_mut().expect("checked above");
        let n = stream.send(bytes)?;
        let rekeys = stream.take_rekeys();
        if rekeys > 0 && self.m.timing.in_window(self.m.now_ns()) {
            let class = self.m.conns[key].class as usize;
            self.m.accum[class].rekeys += u64::from(rekeys);
        }
        Ok(self.sent(key, n, want))
    }

    /// Counts an error, drops the connection (and its data connection)
    /// and schedules a reconnect.
    pub(super) fn fail(&mut self, key: usize, e: &io::Error) {
        if self.ring.is_some() {
            self.abandon_queued(key);
        }
        if P::DATA {
            self.data[key] = None;
        }
        self.m.fail(key, e);
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
            let Some(conn) = self.m.conns.get_mut(key) else {
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
                    let n = stream.recv(&mut self.scratch[..want], self.m.socket.waitall)?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    match self.received(key, n)? {
                        Got::Next | Got::OpenData(_) => {}
                        Got::Stop | Got::Close { .. } => return Ok(()),
                        // A short read drained the socket: wait for the
                        // next edge, unless the peer's FIN came with this
                        // one (then read on to see the end of stream).
                        Got::More if n < want && !self.peer_closed => return Ok(()),
                        Got::More => {}
                    }
                }
                Phase::SetupRecv => {
                    let n = stream.recv(&mut self.scratch[..IO_CHUNK_BYTES], false)?;
                    if n == 0 {
                        return Err(io::ErrorKind::UnexpectedEof.into());
                    }
                    let next = self.setup_received(key, n);
                    if next == Next::Drive || self.m.in_setup(key) {
                        continue;
                    }
                    self.act(key, next);
                    return Ok(());
                }
                Phase::SetupSend | Phase::SetupSendLast => {
                    let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
                    self.m.fill_setup(key, &mut self.out[..want]);
                    let stream = self.m.conns[key].stream.as_mut().expect("checked above");
                    let n = stream.send(&self.out[..want])?;
                    let next = self.m.setup_sent(key, n, want);
                    if next == Next::Drive {
                        continue;
                    }
                    if !self.m.in_setup(key) {
                        self.act(key, next);
                    }
                    return Ok(());
                }
                Phase::DataRecv | Phase::DataSend => {
                    if !self.step_data(key)? {
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
                    let next = self.m.closed(key);
                    self.act(key, next);
                    return Ok(());
                }
            }
        }
    }
}

impl<P: Codec> Worker<'_, P> {
    /// One receive or send on client `key`'s data connection
    /// (`Codec::DATA`); whether to go on at once (`Err(WouldBlock)` or
    /// `false`: wait for the next edge). The connection is closed when it
    /// ended (the server's FIN) or its last payload byte went out (the
    /// server's end of file).
    fn step_data(&mut self, key: usize) -> io::Result<bool> {
        let conn = &self.m.conns[key];
        let sending = conn.phase == Phase::DataSend;
        let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
        let Some(data) = self.data[key].as_mut() else {
            return Err(io::Error::other("the data connection was not opened"));
        };
        let got = if sending {
            let n = data.send(&self.zeros[..want])?;
            if n == want && want as u64 == self.m.conns[key].remaining {
                self.data[key] = None;
            }
            let got = self.m.data_sent(key, n);
            if got == Got::More && n < want {
                return Ok(false);
            }
            got
        } else {
            // Read a full chunk even at the end: bytes past the file's size
            // are the codec's to refuse, and the FIN is what ends it.
            let n = data.recv(&mut self.scratch[..IO_CHUNK_BYTES], false)?;
            if n == 0 {
                self.data[key] = None;
            }
            self.m.data_received(key, n)
        };
        Ok(!matches!(
            self.settle(key, got)?,
            Got::Stop | Got::Close { .. }
        ))
    }
}

#[cfg(test)]
mod tests;
