//! The driver's per-connection state machine, with no I/O inside: events go
//! in (a client's place in the ramp came, the window opened, a timer is due,
//! n bytes were sent, n bytes were received, the connection failed or was
//! closed) and what the connection needs next comes out ([`Next`]: nothing
//! for now, connect, connect and send, go on with the phase; [`Got`] after
//! received bytes, which may ask to close). Every workload kind is this one
//! table-driven machine (neper's idea in flow.h: one per-flow state machine
//! that the thread's event loop feeds, whatever the test): connect (CRR, or
//! after an error) → send the request → receive the response → record → next
//! transaction; kinds differ only in what follows a response (keep the
//! connection, or close it and connect anew), and pacing (closed loop, think
//! time, open-loop rate: [`super::pace`]) only in *when* the next request
//! starts. Stop conditions (the window's end, per-client quotas) compose with
//! all of them.
//!
//! The machine books what happens: latency from the intended send (open
//! loop) or the actual one, the uncorrected latency, generator lag, waits,
//! late and dropped sends, bytes, errors and TLS handshakes, into one
//! [`ClassAccum`] per class. The backends — epoll ([`super::worker`]),
//! io_uring ([`super::uring`]) and direct waiting ([`super::direct`]) — and
//! the test-only mock (`mock.rs`) carry out its actions and feed it
//! their results, the way fio's engines (ioengine.h, `struct ioengine_ops`)
//! carry out the I/O units its core prepares and report their completions.
//!
//! Each connection's state keeps its backend's handle (`S`: the socket, or
//! the mock's stand-in) next to it, so a backend finds both with one lookup;
//! the machine only looks whether it is there, and lets it go (drops it)
//! when the connection fails or its client is done. The clock is a type
//! parameter too ([`Clock`]), so the mock runs in virtual time; both are
//! generic, not boxed, so the hot path has no indirection.

use std::time::Instant;

use slab::Slab;
use stackbench_model::settings::Tn3270Options;
use stackbench_model::{AmqpParams, CrrClose, H2Params, Kind, SocketOptions};

use super::accum::{ClassAccum, StepAccum};
use super::clock::{Timing, Window};
use super::pace::{Pace, LATE_NS};
use super::seen::{Cause, Place, Seen};
use crate::app::{ClassShape, Codec, Fault, Raw, Setup, TargetHead, Turn};
use crate::sockopt::{self, IO_CHUNK_BYTES};
use crate::timer::TimerWheel;
use crate::transport::tls::Handshake;

/// Wait before reconnecting after a connection error.
const RECONNECT_BACKOFF_NS: u64 = 10_000_000;

/// A client still waiting at the window's end is booked as waiting
/// ([`Seen`]) from this long on: a server that has not answered in a
/// second is not answering, where a shorter wait may be a short window.
pub(super) const STILL_WAITING_NS: u64 = 1_000_000_000;
/// What a worker needs to know about one class.
#[derive(Debug, Clone, Copy)]
pub struct ClassPlan {
    pub kind: Kind,
    /// The notation's request and response sizes; the machine's codec
    /// (its type parameter `P`) is built from them ([`Codec::of`]).
    pub app: Raw,
    pub pace: Pace,
    /// Priority level of the class's sockets (see `sockopt`).
    pub priority: Option<u8>,
    /// A plain server's host and URL path, for the requests' heads.
    pub target: Option<&'static TargetHead>,
    /// Protocol tn3270's options (the codec is built with them).
    pub tn3270: Tn3270Options,
}

/// Where the machine reads the time: ns since the run's epoch.
pub trait Clock {
    fn now_ns(&self) -> u64;
}

/// The real clock: ns since the run's epoch.
#[derive(Debug, Clone, Copy)]
pub struct Epoch(pub Instant);

impl Clock for Epoch {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
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
    /// Connection setup (a protocol with `Codec::SETUP`): reading what the
    /// server sends.
    SetupRecv,
    /// Connection setup: sending the codec's setup bytes, then reading on.
    SetupSend,
    /// Connection setup: sending the codec's last setup bytes.
    SetupSendLast,
    /// A protocol with data connections (`Codec::DATA`): receiving the
    /// payload on the transaction's data connection until it ends.
    DataRecv,
    /// Sending the payload on the data connection (`remaining` bytes).
    DataSend,
}

/// `Conn::flags`: the client has connected at least once.
pub(super) const CONNECTED: u8 = 1;
/// `Conn::flags`: the client is past the start barrier (the window is open).
pub(super) const RELEASED: u8 = 2;
/// `Conn::flags` bits from here up belong to the backend (io_uring: what it
/// has in flight), kept in the same byte so the state does not grow.
pub(super) const BACKEND_FLAGS: u8 = !(CONNECTED | RELEASED);
/// `Conn::flags`, the epoll backend's bit (io_uring's are never set on an
/// epoll worker): the connection has entered direct waiting, and is
/// counted in `ClassAccum::direct_connections`; cleared when it reconnects.
pub(super) const ENTERED_DIRECT: u8 = 4;
const _: () = assert!(ENTERED_DIRECT & !BACKEND_FLAGS == 0);
/// `Conn::start_ns` while waiting: no wait to measure (first request, after an error).
pub(super) const NOT_WAITING: u64 = u64::MAX;

/// Per-connection state: 56 bytes with a socket as `S` (see
/// `conn_state_is_small`; the stream is an fd or a boxed TLS session, 16
/// bytes, in debug builds too).
pub(super) struct Conn<S, A = ()> {
    /// The backend's handle of the connection; `None` while closed.
    pub(super) stream: Option<S>,
    /// The codec's per-connection state (`()` for raw payloads: no bytes).
    pub(super) app: A,
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

/// What a connection needs from its backend after an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Next {
    /// Nothing now: it waits for a timer or the window, or its client is done.
    Idle,
    /// Connect it (nothing to send yet), then report [`Machine::attached`].
    Attach,
    /// Connect it and send the request [`Machine::begin_request`] set up.
    Open,
    /// Go on with its phase: send the rest of the request, or receive.
    Drive,
}

/// What one `send` achieved.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Sent {
    /// The whole request is out.
    Done,
    /// The socket took less than offered: wait for the writable edge.
    Blocked,
    /// A full chunk went out and more remains.
    More,
}

/// What a received chunk did to the current transaction.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Got {
    /// More of the response is due.
    More,
    /// The response is complete and the connection goes on: the next request
    /// has begun, or (CRR, server closes) the server's FIN is awaited.
    Next,
    /// The response is complete; the connection waits, or its client is done.
    Stop,
    /// The response is complete (CRR): close the connection — abortively
    /// (RST) when `abort` — then report [`Machine::closed`].
    Close { abort: bool },
    /// A protocol with data connections: open one to this port of the
    /// connection's peer, then go on (the next command is set up to send).
    OpenData(u16),
}

/// One worker's clients: their states, what they booked, their timers.
/// `P` is the run's application protocol (one per run), resolved at
/// compile time: raw payloads cost nothing per event.
pub(super) struct Machine<'a, S, C, P: Codec = Raw> {
    pub(super) classes: &'a [ClassPlan],
    /// Per class: its codec.
    pub(super) codecs: Vec<P>,
    pub(super) socket: SocketOptions,
    pub(super) clock: C,
    pub(super) timing: Timing,
    pub(super) conns: Slab<Conn<S, P::State>>,
    pub(super) accum: Vec<ClassAccum>,
    pub(super) timers: TimerWheel,
    fired: Vec<u32>,
    /// Connections that still have work (not finished their quota).
    pub(super) active: usize,
    /// Clients connected at least once, on this worker.
    pub(super) connected: u64,
    /// Connected clients waiting for the window to open.
    parked: Vec<u32>,
    /// The clock as `received` last read it (every response chunk): the
    /// direct loop reuses it instead of reading the clock again.
    pub(super) received_ns: u64,
}

impl<'a, S, C: Clock, P: Codec> Machine<'a, S, C, P> {
    /// A machine for `clients` clients of `classes`, its window not open
    /// yet; its codecs built with the run's amqp and h2 settings.
    pub(super) fn new(
        classes: &'a [ClassPlan],
        socket: SocketOptions,
        clock: C,
        timing: Timing,
        window_s: usize,
        clients: usize,
        (amqp, h2): (&AmqpParams, H2Params),
    ) -> Machine<'a, S, C, P> {
        let codecs = classes
            .iter()
            .map(|c| {
                P::of(&ClassShape {
                    kind: c.kind,
                    request_bytes: c.app.request,
                    response_bytes: c.app.response,
                    crr_close: socket.crr_close,
                    target: c.target,
                    tn3270: c.tn3270,
                    amqp: amqp.clone(),
                    h2,
                })
            })
            .collect();
        let accum = classes
            .iter()
            .map(|c| {
                let mut acc = ClassAccum::new(window_s, c.pace.is_paced(), c.pace.is_open());
                if let Some(script) = c.tn3270.script.filter(|_| P::FRAMED) {
                    acc.steps = script
                        .0
                        .steps
                        .iter()
                        .map(|s| StepAccum {
                            name: &s.name,
                            key: &s.key_name,
                            ..StepAccum::default()
                        })
                        .collect();
                }
                acc
            })
            .collect();
        Machine {
            classes,
            codecs,
            socket,
            clock,
            timing,
            conns: Slab::with_capacity(clients),
            accum,
            timers: TimerWheel::new(),
            fired: Vec::new(),
            active: 0,
            connected: 0,
            parked: Vec::with_capacity(clients),
            received_ns: 0,
        }
    }

    #[inline]
    pub(super) fn now_ns(&self) -> u64 {
        self.clock.now_ns()
    }

    /// Adds a client of class `class` with `quota` transactions to count,
    /// whose place in the ramp is `at_ns`: it arrives now (the returned
    /// action) or when its timer fires.
    pub(super) fn add(&mut self, class: u16, quota: u64, rng: u64, at_ns: u64) -> (usize, Next) {
        let key = self.conns.insert(Conn {
            stream: None,
            app: P::State::default(),
            class,
            phase: Phase::Closed,
            flags: 0,
            remaining: 0,
            start_ns: NOT_WAITING,
            due_ns: 0,
            quota,
            rng,
        });
        self.active += 1;
        if at_ns == 0 {
            (key, self.arrive(key))
        } else {
            self.timers.schedule(key as u32, at_ns);
            (key, Next::Idle)
        }
    }

    /// Whether the worker is done: every quota met, or the window over.
    pub(super) fn done(&self, now: u64) -> bool {
        self.active == 0 || self.timing.end_ns.is_some_and(|e| now >= e)
    }

    /// Client `key`'s place in the ramp came: connect it (a CRR client is a
    /// connection slot and connects per transaction: it counts as connected
    /// at once) and park it at the start barrier until the window opens, so
    /// that nothing is sent before every client is connected.
    pub(super) fn arrive(&mut self, key: usize) -> Next {
        let class = self.conns[key].class as usize;
        if self.classes[class].kind == Kind::Crr {
            self.mark_connected(key);
            return self.attached(key);
        }
        Next::Attach
    }

    /// An arriving client's connection is up (or, CRR, needs none yet).
    pub(super) fn attached(&mut self, key: usize) -> Next {
        if self.timing.is_known() {
            return self.release(key);
        }
        self.conns[key].phase = Phase::Waiting;
        self.parked.push(key as u32);
        Next::Idle
    }

    /// Takes the window once the coordinator opened it, noting how many
    /// clients of each class were connected then; returns the clients
    /// waiting at the start barrier, for the caller to [`Self::release`].
    pub(super) fn refresh_window(&mut self, window: &Window) -> Option<Vec<u32>> {
        if !self.timing.refresh(window) {
            return None;
        }
        for acc in &mut self.accum {
            acc.connected_at_window = acc.connected;
        }
        Some(std::mem::take(&mut self.parked))
    }

    /// The window opened: the client starts. A paced client first waits a
    /// random phase (see `pace`), so a population starts spread out.
    pub(super) fn release(&mut self, key: usize) -> Next {
        let now = self.now_ns();
        let Some(conn) = self.conns.get_mut(key) else {
            return Next::Idle;
        };
        conn.flags |= RELEASED;
        let plan = self.classes[conn.class as usize];
        if plan.pace.is_paced() {
            conn.due_ns = now + plan.pace.first_wait_ns(&mut conn.rng);
            conn.start_ns = NOT_WAITING;
            conn.phase = Phase::Waiting;
            self.timers.schedule(key as u32, conn.due_ns);
            Next::Idle
        } else {
            conn.due_ns = now;
            self.wait_over(key)
        }
    }

    /// Advances the timers to now; the caller then takes each fired client
    /// with [`Self::next_fired`].
    pub(super) fn advance_timers(&mut self) {
        if !self.timers.is_empty() {
            let now = self.now_ns();
            self.timers.advance(now, &mut self.fired);
        }
    }

    /// The next client whose timer fired, and what it needs now (the wheel
    /// cancels lazily: a client that moved on needs nothing).
    pub(super) fn next_fired(&mut self) -> Option<(usize, Next)> {
        let key = self.fired.pop()? as usize;
        let next = match self.conns.get(key).map(|c| (c.phase, c.flags)) {
            Some((Phase::Closed, f)) if f & RELEASED == 0 => self.arrive(key),
            Some((Phase::Closed, _)) => Next::Open,
            Some((Phase::Waiting, _)) if P::FRAMED && self.early(key) => Next::Idle,
            Some((Phase::Waiting, _)) => self.wait_over(key),
            Some((Phase::Receiving, _)) if P::FRAMED => self.overdue(key),
            _ => Next::Idle,
        };
        Some((key, next))
    }

    /// A scripted client's timer fired before its think time ended (the
    /// timer of a step's wait that was met: the wheel cancels lazily): it
    /// waits on, for a timer at its time.
    fn early(&mut self, key: usize) -> bool {
        let conn = &self.conns[key];
        if !self.codecs[conn.class as usize].scripted() || conn.flags & RELEASED == 0 {
            return false;
        }
        let now = self.now_ns();
        if conn.due_ns <= now {
            return false;
        }
        self.timers.schedule(key as u32, conn.due_ns);
        true
    }

    /// A scripted client's timer fired while it waits for a step's screen:
    /// past the step's timeout (the timer may be an earlier step's), the
    /// step timed out — counted with the screen seen instead, a `timeout`
    /// error of the class — and the session starts again, as a user whose
    /// screen did not come logs on again: the connection closes and
    /// reconnects (a new logon, the script from its first step).
    fn overdue(&mut self, key: usize) -> Next {
        let now = self.now_ns();
        let conn = &self.conns[key];
        let class = conn.class as usize;
        let codec = &self.codecs[class];
        let Some(timeout) = codec.response_timeout_ns(&conn.app) else {
            return Next::Idle;
        };
        if now < conn.start_ns.saturating_add(timeout) || conn.stream.is_none() {
            return Next::Idle;
        }
        let Some((step, seen)) = codec.timed_out(&conn.app) else {
            return Next::Idle;
        };
        let name = self.accum[class].steps.get(step).map_or("?", |s| s.name);
        let line = format!(
            "step {name}: its screen did not come within {:.3} s; the screen reads {seen}",
            timeout as f64 / 1e9
        );
        if let Some(s) = self.accum[class].steps.get_mut(step) {
            s.timeouts += 1;
            s.seen.get_or_insert(seen);
        }
        self.fail(
            key,
            &std::io::Error::new(std::io::ErrorKind::TimedOut, line),
        );
        Next::Idle
    }

    /// A waiting client's time came: send on its connection, or (CRR)
    /// connect anew and send.
    pub(super) fn wait_over(&mut self, key: usize) -> Next {
        if self.conns[key].stream.is_none() {
            return Next::Open;
        }
        self.begin_request(key, self.now_ns());
        Next::Drive
    }

    /// A request starts now: records the wait that ended and the lag behind
    /// the intended time (paced classes, in the window), then sends.
    pub(super) fn begin_request(&mut self, key: usize, now: u64) {
        let conn = &mut self.conns[key];
        let plan = self.classes[conn.class as usize];
        if plan.pace.is_paced() && self.timing.in_window(now) {
            let acc = &mut self.accum[conn.class as usize];
            if conn.start_ns != NOT_WAITING {
                acc.wait_ns += u128::from(now.saturating_sub(conn.start_ns));
                acc.waits += 1;
            }
            let lag = now.saturating_sub(conn.due_ns);
            if let Some(h) = acc.lag.as_mut() {
                h.record_ns(lag);
            }
            acc.late += u64::from(lag > LATE_NS);
        }
        conn.phase = Phase::Sending;
        conn.remaining = self.codecs[conn.class as usize].request_len(&conn.app);
        conn.start_ns = now;
    }

    /// After a response at `now`: when the next request is intended (paced
    /// classes). The wait is measured from now.
    fn plan_next(&mut self, key: usize, now: u64) {
        let conn = &mut self.conns[key];
        if P::FRAMED {
            if let Some(think) = self.codecs[conn.class as usize].think_ns(&conn.app) {
                // The script's think time after this step, not the class's.
                conn.due_ns = now + think;
                conn.start_ns = now;
                return;
            }
        }
        let pace = self.classes[conn.class as usize].pace;
        match pace {
            Pace::Closed => return,
            Pace::Think(_) => conn.due_ns = now + pace.think_ns(&mut conn.rng),
            Pace::Open { .. } => {
                let (due, dropped) = pace.next_send(conn.due_ns, now, &mut conn.rng);
                conn.due_ns = due;
                if self.timing.in_window(now) {
                    self.accum[conn.class as usize].dropped += dropped;
                }
            }
        }
        conn.start_ns = now;
    }

    /// Whether the next request may start now; if not, the client waits for
    /// its timer.
    fn go_now(&mut self, key: usize, now: u64) -> bool {
        let conn = &mut self.conns[key];
        let class = conn.class as usize;
        let thinks = P::FRAMED && self.codecs[class].think_ns(&conn.app).is_some();
        if !(self.classes[class].pace.is_paced() || thinks) || conn.due_ns <= now {
            return true;
        }
        conn.phase = Phase::Waiting;
        self.timers.schedule(key as u32, conn.due_ns);
        false
    }

    /// Records a completed transaction: latency from the actual send, or for
    /// the open loop from the intended send (and the actual one apart).
    fn complete(&mut self, key: usize, now: u64) {
        let conn = &mut self.conns[key];
        let acc = &mut self.accum[conn.class as usize];
        let busy = now - conn.start_ns;
        match acc.uncorrected.as_mut() {
            Some(uncorrected) => {
                uncorrected.record_ns(busy);
                acc.hist.record_ns(now - conn.due_ns.min(conn.start_ns));
            }
            None => acc.hist.record_ns(busy),
        }
        acc.transactions += 1;
        if P::FRAMED {
            if let Some(step) = self.codecs[conn.class as usize].step_done(&conn.app) {
                if let Some(s) = acc.steps.get_mut(step) {
                    s.hist.record_ns(busy);
                    s.transactions += 1;
                }
            }
        }
        if P::STATUS {
            // A status outside 2xx is an answer, not a fault: counted, shown,
            // and the connection goes on (`summary::status_share` bounds their share).
            let code = self.codecs[conn.class as usize].status(&conn.app);
            acc.status.add(code, 1);
            acc.errors.http_status += u64::from(!(200..300).contains(&code));
        }
        acc.last_completion_ns = now;
        let second = ((now - self.timing.warmup_end_ns) / 1_000_000_000) as usize;
        if acc.per_second.len() <= second {
            // At most once per second of run time, never per transaction.
            acc.per_second.resize(second + 1, 0);
        }
        acc.per_second[second] += 1;
        conn.quota = conn.quota.saturating_sub(1);
    }

    /// The client's connection is up (first writable edge or first bytes
    /// sent; with a protocol that sets up its connections, the setup's
    /// end, so an RR window opens on set-up clients and counts no setup
    /// bytes): counted once per client, for the window's start.
    pub(super) fn mark_connected(&mut self, key: usize) {
        if P::SETUP && self.in_setup(key) {
            return;
        }
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if conn.flags & CONNECTED != 0 {
            return;
        }
        conn.flags |= CONNECTED;
        let class = conn.class as usize;
        // The clock is read only the once per client this counts.
        let now = self.now_ns();
        let acc = &mut self.accum[class];
        acc.connected += 1;
        acc.last_connected_ns = now;
        self.connected += 1;
    }

    /// Client `key`'s new connection is up and its protocol opens with a
    /// setup dialogue (`Codec::SETUP`): starts it. An arriving client joins
    /// the start barrier when it ends; a released one (CRR, a reconnect)
    /// then sends its request. A new connection starts the codec afresh.
    pub(super) fn begin_setup(&mut self, key: usize) -> Next {
        let now = self.now_ns();
        let conn = &mut self.conns[key];
        conn.app = P::State::default();
        if conn.start_ns == NOT_WAITING {
            // An arriving client: its wait for the server's setup starts
            // now (seen at the window's end, `take_accum`).
            conn.start_ns = now;
        }
        self.accum[conn.class as usize].sessions.attempted += 1;
        let step = self.codecs[conn.class as usize].setup_open(&mut conn.app);
        self.setup_step(key, step)
    }

    /// Whether client `key` is setting up its connection.
    pub(super) fn in_setup(&self, key: usize) -> bool {
        self.conns.get(key).is_some_and(|c| {
            matches!(
                c.phase,
                Phase::SetupRecv | Phase::SetupSend | Phase::SetupSendLast
            )
        })
    }

    /// Moves client `key` to its codec's setup step: reading waits for the
    /// socket's readable edge ([`Next::Idle`]), sending goes on at once.
    fn setup_step(&mut self, key: usize, step: Setup) -> Next {
        let conn = &mut self.conns[key];
        let bytes = self.codecs[conn.class as usize].setup_bytes(&conn.app);
        let (phase, remaining) = match step {
            Setup::Send | Setup::SendLast if bytes == 0 => {
                // Nothing to send after all: read on, or setup is over.
                return if step == Setup::Send {
                    self.setup_step(key, Setup::Read)
                } else {
                    self.setup_done(key)
                };
            }
            Setup::Send => (Phase::SetupSend, bytes),
            Setup::SendLast => (Phase::SetupSendLast, bytes),
            Setup::Read => (Phase::SetupRecv, IO_CHUNK_BYTES as u64),
            Setup::Done => return self.setup_done(key),
        };
        conn.phase = phase;
        conn.remaining = remaining;
        if phase == Phase::SetupRecv {
            Next::Idle
        } else {
            Next::Drive
        }
    }

    /// Client `key`'s setup is over: it counts as connected; an arriving
    /// client waits at the start barrier; a released one sends its request
    /// — a CRR transaction timed from its connect (setup included), any
    /// other from now.
    fn setup_done(&mut self, key: usize) -> Next {
        let conn = &self.conns[key];
        if let Some(settled) = self.codecs[conn.class as usize].settled(&conn.app) {
            self.accum[conn.class as usize].sessions.settled(&settled);
        }
        self.conns[key].phase = Phase::Waiting;
        self.mark_connected(key);
        if self.conns[key].flags & RELEASED == 0 {
            return self.attached(key);
        }
        let now = self.now_ns();
        let conn = &mut self.conns[key];
        let class = conn.class as usize;
        conn.phase = Phase::Sending;
        conn.remaining = self.codecs[class].request_len(&conn.app);
        if self.classes[class].kind != Kind::Crr {
            conn.start_ns = now;
        }
        Next::Drive
    }

    /// Books `n` bytes client `key` received during setup (`chunk`), and
    /// the TLS handshake they finished; the codec says what comes next. A
    /// setup the codec refuses ends the client ([`Self::fault`]).
    pub(super) fn setup_received(
        &mut self,
        key: usize,
        chunk: &[u8],
        handshake: Option<&Handshake>,
    ) -> Next {
        let counted = self.timing.in_window(self.now_ns());
        let conn = &mut self.conns[key];
        let class = conn.class as usize;
        if let Some(h) = handshake {
            self.accum[class].handshake(h, counted);
        }
        if counted {
            self.accum[class].rx_bytes += chunk.len() as u64;
        }
        match self.codecs[class].setup_received(&mut conn.app, chunk) {
            Ok(step) => self.setup_step(key, step),
            Err(fault) => {
                let reason = self.codecs[class].setup_failure(&conn.app);
                self.accum[class].sessions.failed(reason);
                self.fault(key, fault);
                Next::Idle
            }
        }
    }

    /// Writes the next `out.len()` setup bytes of client `key` into `out`.
    pub(super) fn fill_setup(&self, key: usize, out: &mut [u8]) {
        let conn = &self.conns[key];
        let codec = &self.codecs[conn.class as usize];
        codec.fill_setup(
            &conn.app,
            codec.setup_bytes(&conn.app) - conn.remaining,
            out,
        );
    }

    /// Books `n` setup bytes client `key` sent (of `want` offered): more to
    /// send ([`Next::Drive`], or [`Next::Idle`] to wait for the writable
    /// edge after a short write), then read on or end the setup.
    pub(super) fn setup_sent(&mut self, key: usize, n: usize, want: usize) -> Next {
        let counted = self.timing.in_window(self.now_ns());
        let conn = &mut self.conns[key];
        if counted {
            self.accum[conn.class as usize].tx_bytes += n as u64;
        }
        conn.remaining -= n as u64;
        if conn.remaining > 0 {
            return if n < want { Next::Idle } else { Next::Drive };
        }
        if conn.phase == Phase::SetupSendLast {
            return self.setup_done(key);
        }
        conn.phase = Phase::SetupRecv;
        conn.remaining = IO_CHUNK_BYTES as u64;
        Next::Drive
    }

    /// Whether class `class`'s requests are corked while they are written
    /// (`SocketOptions::cork`: longer than one write, and Nagle on).
    #[inline]
    pub(super) fn corks_request(&self, class: u16) -> bool {
        sockopt::corks(&self.socket, self.codecs[class as usize].request_bytes())
    }

    /// Whether the next send of client `key` is the first chunk of a corked
    /// request: the backend corks the socket before it, and lifts the cork
    /// after the last (when [`Self::sent`] says `Done`).
    pub(super) fn corks_now(&self, key: usize) -> bool {
        let conn = &self.conns[key];
        self.corks_request(conn.class)
            && conn.remaining == self.codecs[conn.class as usize].request_len(&conn.app)
    }

    /// Writes the next `out.len()` bytes of client `key`'s request into
    /// `out` (a framed protocol's text; raw payloads write nothing).
    #[inline]
    pub(super) fn fill_request(&self, key: usize, out: &mut [u8]) {
        let conn = &self.conns[key];
        let codec = &self.codecs[conn.class as usize];
        codec.fill_request(
            &conn.app,
            codec.request_len(&conn.app) - conn.remaining,
            out,
        );
    }

    /// Books `n` sent bytes of client `key`'s request (of `want` offered);
    /// moves to receiving when it is all out.
    pub(super) fn sent(&mut self, key: usize, n: usize, want: usize) -> Sent {
        let conn = &self.conns[key];
        let codec = &self.codecs[conn.class as usize];
        // The request's first bytes are booked at its start, read by
        // `begin_request` just before this send: one clock read per
        // transaction fewer. Later chunks of a long request read the clock.
        let request_bytes = codec.request_len(&conn.app);
        let response_bytes = codec.response_bytes();
        let t = if conn.remaining == request_bytes {
            conn.start_ns
        } else {
            self.now_ns()
        };
        let conn = &mut self.conns[key];
        conn.remaining -= n as u64;
        if self.timing.in_window(t) {
            self.accum[conn.class as usize].tx_bytes += n as u64;
        }
        if conn.remaining == 0 {
            if P::FRAMED {
                let codec = &self.codecs[conn.class as usize];
                codec.request_sent(&mut conn.app);
                if let Some(timeout) = codec.response_timeout_ns(&conn.app) {
                    // The step's wait is bounded: `overdue` when it fires.
                    self.timers
                        .schedule(key as u32, conn.start_ns.saturating_add(timeout));
                }
            }
            conn.phase = Phase::Receiving;
            conn.remaining = response_bytes;
            return Sent::Done;
        }
        if n < want {
            Sent::Blocked
        } else {
            Sent::More
        }
    }

    /// Books `n` received bytes of client `key`'s response (`chunk`: them,
    /// for a framed protocol; empty otherwise), and the TLS handshake it
    /// finished, if any; on the last byte, the transaction and what follows
    /// it. A response the protocol refuses ends the client ([`Self::fault`]).
    pub(super) fn received(
        &mut self,
        key: usize,
        n: usize,
        chunk: &[u8],
        handshake: Option<&Handshake>,
    ) -> Got {
        let now = self.now_ns();
        self.received_ns = now;
        let counted = self.timing.in_window(now);
        let conn = &mut self.conns[key];
        let class = conn.class as usize;
        let left = self.codecs[class].response_left(&mut conn.app, conn.remaining, n as u64, chunk);
        if let Some(h) = handshake {
            self.accum[class].handshake(h, counted);
        }
        if counted {
            self.accum[class].rx_bytes += n as u64;
        }
        match left {
            Ok(left) => self.conns[key].remaining = left,
            Err(fault) => {
                self.fault(key, fault);
                return Got::Stop;
            }
        }
        if self.conns[key].remaining > 0 {
            return Got::More;
        }
        if P::DATA {
            let conn = &mut self.conns[key];
            let turn = self.codecs[class].turn(&mut conn.app);
            return self.take_turn(key, turn, now);
        }
        if counted {
            self.complete(key, now);
        }
        self.next_transaction(key, now)
    }

    /// A protocol with data connections: carries out what its codec said
    /// the transaction does next, completing it at [`Turn::Complete`]; a
    /// fault ends the client.
    fn take_turn(&mut self, key: usize, turn: Result<Turn, Fault>, now: u64) -> Got {
        let conn = &mut self.conns[key];
        let codec = &self.codecs[conn.class as usize];
        let (phase, remaining, got) = match turn {
            Ok(Turn::Complete) => {
                if self.timing.in_window(now) {
                    self.complete(key, now);
                }
                return self.next_transaction(key, now);
            }
            Ok(Turn::Command) => (Phase::Sending, codec.request_len(&conn.app), Got::Next),
            Ok(Turn::OpenData(port)) => (
                Phase::Sending,
                codec.request_len(&conn.app),
                Got::OpenData(port),
            ),
            Ok(Turn::ReceiveData(n)) => (Phase::DataRecv, n, Got::Next),
            Ok(Turn::SendData(n)) => (Phase::DataSend, n, Got::Next),
            Ok(Turn::Reply) => (Phase::Receiving, codec.response_bytes(), Got::Next),
            Err(fault) => {
                self.fault(key, fault);
                return Got::Stop;
            }
        };
        conn.phase = phase;
        conn.remaining = remaining;
        got
    }

    /// Books `n` payload bytes client `key` received on its data
    /// connection (0: it ended), counted as the transaction's; at its end,
    /// or past the bytes due, the codec says what follows.
    pub(super) fn data_received(&mut self, key: usize, n: usize) -> Got {
        let now = self.now_ns();
        if self.timing.in_window(now) {
            let class = self.conns[key].class as usize;
            self.accum[class].rx_bytes += n as u64;
        }
        let conn = &mut self.conns[key];
        let n = n as u64;
        if n > 0 && n <= conn.remaining {
            conn.remaining -= n;
            return Got::More;
        }
        let codec = &self.codecs[conn.class as usize];
        let moved = codec.data_bytes() - conn.remaining + n;
        let turn = codec.data_done(&mut conn.app, moved);
        self.take_turn(key, turn, now)
    }

    /// Books `n` payload bytes client `key` sent on its data connection;
    /// once all are out (the backend closes it then), the codec says what
    /// follows.
    pub(super) fn data_sent(&mut self, key: usize, n: usize) -> Got {
        let now = self.now_ns();
        let conn = &mut self.conns[key];
        let class = conn.class as usize;
        if self.timing.in_window(now) {
            self.accum[class].tx_bytes += n as u64;
        }
        conn.remaining -= n as u64;
        if conn.remaining > 0 {
            return Got::More;
        }
        let codec = &self.codecs[class];
        let turn = codec.data_done(&mut conn.app, codec.data_bytes());
        self.take_turn(key, turn, now)
    }

    /// After a response: start the next transaction on this connection (RR,
    /// STR), or close it the configured way and connect anew (CRR) — at once,
    /// or when the class's pacing says.
    fn next_transaction(&mut self, key: usize, now: u64) -> Got {
        self.plan_next(key, now);
        let conn = &mut self.conns[key];
        let plan = self.classes[conn.class as usize];
        if plan.kind != Kind::Crr {
            if conn.quota == 0 {
                self.finish(key);
                return Got::Stop;
            }
            if P::FRAMED && self.codecs[conn.class as usize].server_closes(&conn.app) {
                // The server closes after this answer: so does the client,
                // and it connects anew (`closed`) for its next request.
                return Got::Close { abort: false };
            }
            if !self.go_now(key, now) {
                return Got::Stop;
            }
            self.begin_request(key, now);
            return Got::Next;
        }
        match self.socket.crr_close {
            CrrClose::Server => {
                conn.phase = Phase::AwaitEof;
                Got::Next
            }
            CrrClose::Client => Got::Close { abort: false },
            CrrClose::Abort => Got::Close { abort: true },
        }
    }

    /// A CRR connection was closed after its response (by this side, or the
    /// server's FIN was seen): connect anew now or when the pacing says,
    /// unless the quota is met.
    pub(super) fn closed(&mut self, key: usize) -> Next {
        self.conns[key].stream = None;
        // The next connection starts its protocol afresh (HTTP/2: a new
        // preface, stream 1, empty HPACK tables).
        self.conns[key].app = P::State::default();
        if self.conns[key].quota == 0 {
            self.finish(key);
            return Next::Idle;
        }
        let now = self.now_ns();
        if self.go_now(key, now) {
            Next::Open
        } else {
            Next::Idle
        }
    }

    /// Where client `key`'s connection is, for [`Seen`]: connecting, in
    /// its setup (begun or not), before or in a response.
    fn place(&self, key: usize) -> Place {
        let conn = &self.conns[key];
        let codec = &self.codecs[conn.class as usize];
        if conn.stream.is_none() {
            return Place::Connect;
        }
        match conn.phase {
            Phase::SetupRecv | Phase::SetupSend | Phase::SetupSendLast => {
                if codec.setup_seen(&conn.app).is_some() {
                    Place::InSetup
                } else {
                    Place::SetupNotBegun
                }
            }
            Phase::Receiving if codec.response_seen(&conn.app, conn.remaining).is_some() => {
                Place::MidResponse
            }
            Phase::DataRecv | Phase::DataSend => Place::MidResponse,
            _ => Place::BeforeResponse,
        }
    }

    /// What client `key` had received at `place`, for a cause's example.
    fn seen_at(&self, key: usize, place: Place) -> Option<String> {
        let conn = &self.conns[key];
        let codec = &self.codecs[conn.class as usize];
        match place {
            Place::InSetup => codec.setup_seen(&conn.app),
            Place::MidResponse if matches!(conn.phase, Phase::DataRecv | Phase::DataSend) => {
                let total = codec.data_bytes();
                Some(format!(
                    "{} of {} bytes on the data connection",
                    crate::app::grouped(total - conn.remaining),
                    crate::app::grouped(total)
                ))
            }
            Place::MidResponse => codec.response_seen(&conn.app, conn.remaining),
            _ => None,
        }
    }

    /// The window is over: books where each client still was ([`Seen`]):
    /// waiting for a setup or a response that did not come, or in the
    /// middle of one, when it had waited at least [`STILL_WAITING_NS`]
    /// (a shorter wait may be only a short window). Returns the booking.
    pub(super) fn take_accum(&mut self) -> Vec<ClassAccum> {
        // Waits count up to the window's end: a worker that noticed the end
        // late (a long blocking send) must not make them look longer.
        let now = self
            .timing
            .end_ns
            .map_or(self.now_ns(), |end| end.min(self.now_ns()));
        let keys: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| {
                c.stream.is_some()
                    && c.start_ns != NOT_WAITING
                    && matches!(
                        c.phase,
                        Phase::Receiving
                            | Phase::DataRecv
                            | Phase::DataSend
                            | Phase::SetupRecv
                            | Phase::SetupSend
                            | Phase::SetupSendLast
                    )
            })
            .map(|(key, _)| key)
            .collect();
        for key in keys {
            let place = self.place(key);
            let conn = &self.conns[key];
            let waited = now.saturating_sub(conn.start_ns);
            if waited < STILL_WAITING_NS {
                continue;
            }
            let example = self.seen_at(key, place);
            let class = self.conns[key].class as usize;
            self.accum[class].seen.waiting(place, waited, example);
        }
        std::mem::take(&mut self.accum)
    }

    /// Client `key`'s connection failed with `e`: counts the error (and
    /// where the connection was), lets the connection go and schedules a
    /// reconnect.
    pub(super) fn fail(&mut self, key: usize, e: &std::io::Error) {
        use std::io::ErrorKind;
        let place = self.place(key);
        let cause = Seen::cause_of(e, place);
        let example = match cause {
            Cause::Other => Some(e.to_string()),
            _ => self.seen_at(key, place),
        };
        let now = self.now_ns();
        if P::SETUP && self.in_setup(key) {
            // The connection ended before its logon did.
            let class = self.conns[key].class as usize;
            self.accum[class].sessions.failed("closed");
        }
        let conn = &mut self.conns[key];
        let acc = &mut self.accum[conn.class as usize];
        acc.seen.add(cause, || example);
        let errors = &mut acc.errors;
        match e.kind() {
            ErrorKind::ConnectionRefused => errors.refused += 1,
            ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted => {
                errors.reset += 1
            }
            ErrorKind::UnexpectedEof => errors.eof += 1,
            ErrorKind::TimedOut => errors.timeout += 1,
            _ => errors.other += 1,
        }
        conn.stream = None;
        // A response cut off mid-parse must not prefix the next connection's.
        conn.app = P::State::default();
        conn.phase = Phase::Closed;
        conn.start_ns = NOT_WAITING;
        self.timers.schedule(key as u32, now + RECONNECT_BACKOFF_NS);
    }

    /// Client `key` got a response its protocol refuses: the first such
    /// fault of the class makes the run incomplete with its line, the error
    /// is counted, and the client ends (a server that answers wrongly would
    /// answer wrongly again; retrying would only hide it).
    pub(super) fn fault(&mut self, key: usize, fault: Fault) {
        let class = self.conns[key].class as usize;
        let acc = &mut self.accum[class];
        acc.errors.other += 1;
        acc.seen.add(Cause::Fault, || Some(fault.0.clone()));
        acc.fault.get_or_insert(fault.0);
        self.finish(key);
    }

    /// A client finished its quota: close and stop counting it as active.
    fn finish(&mut self, key: usize) {
        self.conns.remove(key);
        self.active -= 1;
    }
}
