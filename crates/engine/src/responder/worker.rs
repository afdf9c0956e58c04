//! One responder worker: an epoll loop (mio) over the data listeners and data
//! connections of every active test, many connections per thread.
//!
//! Every test has one SO_REUSEPORT listener per worker on the same port, so the
//! kernel spreads incoming connections over the workers (neper's server does
//! the same). A data connection runs one state machine whatever the kind
//! ([`super::machine`]): read the request, write the response, repeat. Only
//! what happens after a response differs: a CRR connection in server-close
//! mode is closed right away; every other connection goes back to reading
//! (and a CRR client then closes or resets it).
//!
//! A test's application protocol (`TestSpec::protocol`) is looked at once
//! per connection, when it is accepted: raw payloads get [`Entry::Conn`]
//! (counted unread and answered from zeros, the machine compiled for
//! [`Raw`]), every other protocol [`Entry::Framed`], one boxed trait object
//! ([`Framed`]) built through the protocol table (`crate::app::with`) for
//! the row's handler, whose parse state it keeps beside the machine's. So a
//! raw connection costs no box and no indirect call; a framed one an
//! indirect call per readiness edge.
//!
//! Hot path: no allocation and no lock; sockets are registered once for read
//! and write readiness (edge-triggered), so there is no epoll_ctl per
//! transaction; a short read or write means "drained for now" and the next
//! edge wakes us.
//!
//! Accepting never stalls: when accept fails for want of descriptors
//! (EMFILE, ENFILE, ENOBUFS, ENOMEM) the connections stay queued, and with
//! edge-triggered epoll no new edge would come for them, so the listener is
//! retried every [`ACCEPT_RETRY`] until it drains (each episode counted in
//! the test's `accept_retries`).

use std::io;
use std::os::fd::AsRawFd;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use stackbench_model::AppProtocol;

use super::machine::{self, Buffers, ConnIo, ConnState, Step, Test};
use crate::app::{self, Handler, Protocol, Raw, Visit};
use crate::control::{ServerTestStats, TestSpec};
use crate::iomode::{self, Claims};
use crate::sockopt;
use crate::transport::tls::Handshake;
use crate::transport::{DataListener, DataStream};

/// Token of the waker that announces commands.
pub const WAKER: Token = Token(usize::MAX);
/// How soon a listener that ran out of descriptors is tried again.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// Commands from the control threads.
pub enum Command {
    AddTest {
        test_id: u64,
        spec: TestSpec,
        /// This worker's listeners for the test (one per port or path).
        listeners: Vec<DataListener>,
    },
    RemoveTest {
        test_id: u64,
        reply: Sender<ServerTestStats>,
    },
    Shutdown,
}

/// What a worker of either backend (epoll here, io_uring in `uring.rs`) does
/// with the control threads' commands: the dispatch is written once, the
/// backend-specific halves are `add_test` and `remove_test`.
pub(super) trait Commanded: Backend {
    fn commands(&self) -> &Receiver<Command>;
    fn add_test(&mut self, id: u64, spec: TestSpec, listeners: Vec<DataListener>);
    fn remove_test(&mut self, id: u64) -> ServerTestStats;

    /// Applies every pending command; false when told to shut down.
    fn handle_commands(&mut self) -> bool {
        while let Ok(cmd) = self.commands().try_recv() {
            match cmd {
                Command::AddTest {
                    test_id,
                    spec,
                    listeners,
                } => {
                    // The pool routes by the same rows (`Pool::start`).
                    debug_assert!(
                        listeners.iter().all(|l| self
                            .claims()
                            .serving_refusal(l.row().transport(), spec.kind, spec.protocol)
                            .is_none()),
                        "test {test_id} sent to a backend that does not claim it"
                    );
                    self.add_test(test_id, spec, listeners)
                }
                Command::RemoveTest { test_id, reply } => {
                    let _ = reply.send(self.remove_test(test_id));
                }
                Command::Shutdown => return false,
            }
        }
        true
    }
}

/// Per-connection state: 32 bytes for raw payloads (stream: an fd or a
/// boxed TLS session; the machine's state, which holds the test's slot;
/// `app`, the handler's state, `()`).
pub(super) struct Conn<A = ()> {
    pub(super) stream: DataStream,
    pub(super) state: ConnState,
    /// The application protocol's state for this connection.
    pub(super) app: A,
}

pub(super) enum Entry {
    Listener {
        listener: DataListener,
        test: u32,
    },
    /// A connection of raw payloads.
    Conn(Conn),
    /// A connection of a framed protocol (HTTP/1.1, TN3270, …): its parse
    /// beside the machine's state, boxed so raw entries do not grow.
    Framed(Box<dyn Framed + Send>),
}

impl Entry {
    /// A connection's stream and machine state, whatever its protocol.
    pub(super) fn conn(&self) -> Option<(&DataStream, &ConnState)> {
        match self {
            Entry::Conn(c) => Some((&c.stream, &c.state)),
            Entry::Framed(c) => Some(c.conn()),
            Entry::Listener { .. } => None,
        }
    }

    /// [`Entry::conn`], mutable.
    pub(super) fn conn_mut(&mut self) -> Option<(&mut DataStream, &mut ConnState)> {
        match self {
            Entry::Conn(c) => Some((&mut c.stream, &mut c.state)),
            Entry::Framed(c) => Some(c.conn_mut()),
            Entry::Listener { .. } => None,
        }
    }

    /// The slot of the test a listener or connection serves.
    fn test(&self) -> u32 {
        match self {
            Entry::Listener { test, .. } => *test,
            Entry::Conn(c) => c.state.test,
            Entry::Framed(c) => c.conn().1.test,
        }
    }

    /// A connection accepted for `test` (slot `slot`), of the variant its
    /// protocol asks for: the one place a connection's protocol is chosen.
    fn accepted(stream: DataStream, test: &mut Test, slot: u32) -> Entry {
        if test.protocol() == AppProtocol::Raw {
            return Entry::Conn(Conn {
                stream,
                state: ConnState::accepted::<Raw>(test, &mut (), slot),
                app: (),
            });
        }
        app::with(test.protocol(), Accept { stream, test, slot })
    }
}

/// Builds a framed connection's entry for the row's handler.
struct Accept<'a> {
    stream: DataStream,
    test: &'a mut Test,
    slot: u32,
}

impl Visit for Accept<'_> {
    type Out = Entry;

    fn visit<P: Protocol>(self) -> Entry {
        let mut app = <P::Server as Handler>::State::default();
        let state = ConnState::accepted::<P::Server>(self.test, &mut app, self.slot);
        let conn = Conn {
            stream: self.stream,
            state,
            app,
        };
        Entry::Framed(Box::new(Speaking::<P::Server>(conn)))
    }
}

/// A connection of a framed protocol, as the epoll and direct loops use
/// it: its stream and state, and its machine compiled for its handler.
pub(super) trait Framed: Send {
    fn conn(&self) -> (&DataStream, &ConnState);
    fn conn_mut(&mut self) -> (&mut DataStream, &mut ConnState);
    /// [`Conn::drive`] with the connection's handler.
    fn drive(&mut self, tests: &mut Slab<Test>, buffers: &mut Buffers) -> Step;
}

/// A connection speaking handler `H`, its state beside the machine's.
struct Speaking<H: Handler>(Conn<H::State>);

impl<H: Handler + 'static> Framed for Speaking<H> {
    fn conn(&self) -> (&DataStream, &ConnState) {
        (&self.0.stream, &self.0.state)
    }

    fn conn_mut(&mut self) -> (&mut DataStream, &mut ConnState) {
        (&mut self.0.stream, &mut self.0.state)
    }

    fn drive(&mut self, tests: &mut Slab<Test>, buffers: &mut Buffers) -> Step {
        self.0.drive::<H>(tests, buffers)
    }
}

impl<A> Conn<A> {
    /// Runs the connection's machine with handler `H` as far as its socket
    /// allows ([`machine::drive`]).
    #[inline]
    fn drive<H: Handler<State = A>>(
        &mut self,
        tests: &mut Slab<Test>,
        buffers: &mut Buffers,
    ) -> Step {
        let test = &mut tests[self.state.test as usize];
        machine::drive::<H, _>(
            &mut self.state,
            &mut self.app,
            test,
            &mut self.stream,
            buffers,
        )
    }
}

/// An I/O backend of the responder's machine ([`super::machine`]): the row
/// of what it covers and its loop, which feeds the machine events and
/// carries out its actions — the driver's `Backend` has the same two halves
/// (after fio's `struct ioengine_ops`, ioengine.h: an engine's name and
/// capability flags beside the hooks its core calls). Backends are called by
/// value, never boxed; the pool sends each test to a backend whose row
/// claims it (`Pool::start`, by `crate::iomode`'s rule).
pub(super) trait Backend {
    /// What the backend covers.
    fn claims(&self) -> &'static Claims;
    /// Serves until told to shut down (the mock: until its script ends);
    /// returns the counters of the tests it still served then, by test id.
    fn run(self) -> Vec<(u64, ServerTestStats)>;
}

/// The tests a worker still holds at its end, and their counters.
pub(super) fn leftover(tests: &mut Slab<Test>) -> Vec<(u64, ServerTestStats)> {
    tests.drain().map(|t| (t.id, t.stats)).collect()
}

pub struct Worker {
    pub(super) poll: Poll,
    commands: Receiver<Command>,
    pub(super) entries: Slab<Entry>,
    pub(super) tests: Slab<Test>,
    /// Data connections among `entries`.
    pub(super) conns: usize,
    buffers: Buffers,
    /// Listeners to accept on again after running out of descriptors.
    pub(super) retry_accept: Vec<usize>,
}

impl Worker {
    pub fn new(poll: Poll, commands: Receiver<Command>) -> Worker {
        Worker {
            poll,
            commands,
            entries: Slab::new(),
            tests: Slab::new(),
            conns: 0,
            buffers: Buffers::new(),
            retry_accept: Vec::new(),
        }
    }

    /// Creates the poll and its waker (the waker goes to the pool).
    pub fn poll_and_waker() -> io::Result<(Poll, Waker)> {
        let poll = Poll::new()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        Ok((poll, waker))
    }

    /// Runs until a `Shutdown` command. A worker left with one connection
    /// serves it with blocking calls until something else needs it
    /// ([`super::direct`]).
    fn serve(&mut self) {
        let mut events = Events::with_capacity(1024);
        loop {
            let polled = match self.direct_candidate() {
                Some(key) => self.run_direct(key, &mut events),
                None => self.poll.poll(&mut events, self.timeout()),
            };
            if let Err(e) = polled {
                if e.kind() != io::ErrorKind::Interrupted {
                    eprintln!("stackbench serve: poll failed: {e}");
                    return;
                }
            }
            for event in events.iter() {
                match event.token() {
                    WAKER => {
                        if !self.handle_commands() {
                            return;
                        }
                    }
                    Token(key) => self.ready(key),
                }
            }
            for key in std::mem::take(&mut self.retry_accept) {
                self.accept_all(key);
            }
        }
    }

    /// How long epoll may sleep (see [`poll_timeout`]).
    pub(super) fn timeout(&self) -> Option<Duration> {
        let spin = self.tests.iter().any(|(_, t)| t.spec.spin);
        poll_timeout(spin, !self.retry_accept.is_empty())
    }

    fn ready(&mut self, key: usize) {
        match self.entries.get(key) {
            Some(Entry::Listener { .. }) => self.accept_all(key),
            Some(Entry::Conn(_) | Entry::Framed(_)) => {
                if let Step::Close { error } = self.drive(key) {
                    self.close(key, error);
                }
            }
            None => {}
        }
    }

    /// Drops connection `key`, counting an error against its test if `error`.
    pub(super) fn close(&mut self, key: usize, error: bool) {
        let entry = self.entries.remove(key);
        if let Some((_, state)) = entry.conn() {
            self.conns -= 1;
            if let Some(t) = self.tests.get_mut(state.test as usize) {
                t.closed(error);
            }
        }
    }

    fn accept_all(&mut self, key: usize) {
        loop {
            let Some(Entry::Listener { listener, test }) = self.entries.get(key) else {
                return;
            };
            let (test, row) = (*test, listener.row());
            let stream = match listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // Interrupted, or a connection reset while queued: next one.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                Err(_) => {
                    // EMFILE, ENFILE, ENOBUFS...: the queue is intact but no
                    // new edge will announce it; try again soon, never stall.
                    if !self.retry_accept.contains(&key) {
                        self.retry_accept.push(key);
                        self.tests[test as usize].stats.accept_retries += 1;
                    }
                    return;
                }
            };
            let t = &mut self.tests[test as usize];
            row.accepted(&stream, &mut t.stats);
            let _ = stream.apply_options(&t.spec.socket, t.spec.request_bytes);
            // Counted as accepted even if it cannot be registered, and as
            // served by the epoll loop (evidence of the backend a run
            // measured: `ServerTestStats::epoll_connections`).
            t.stats.epoll_connections += 1;
            let mut conn = Entry::accepted(stream, t, test);
            let entry = self.entries.vacant_entry();
            let token = Token(entry.key());
            let registered = conn.conn_mut().is_some_and(|(stream, _)| {
                let interest = Interest::READABLE | Interest::WRITABLE;
                self.poll
                    .registry()
                    .register(stream, token, interest)
                    .is_ok()
            });
            if registered {
                entry.insert(conn);
                self.conns += 1;
            }
        }
    }

    /// Runs one connection's state machine as far as the socket allows
    /// ([`machine::drive`], which the mock backend runs too), with the
    /// handler its entry stands for: [`Raw`] inline, a framed protocol's
    /// through its box.
    pub(super) fn drive(&mut self, key: usize) -> Step {
        let (tests, buffers) = (&mut self.tests, &mut self.buffers);
        match self.entries.get_mut(key) {
            Some(Entry::Conn(c)) => c.drive::<Raw>(tests, buffers),
            Some(Entry::Framed(c)) => c.drive(tests, buffers),
            Some(Entry::Listener { .. }) | None => Step::Wait,
        }
    }
}

/// The transport's stream is what the readiness loop drives.
impl ConnIo for DataStream {
    #[inline]
    fn recv(&mut self, buf: &mut [u8], waitall: bool) -> io::Result<usize> {
        DataStream::recv(self, buf, waitall)
    }

    #[inline]
    fn send(&mut self, buf: &[u8]) -> io::Result<usize> {
        DataStream::send(self, buf)
    }

    #[inline]
    fn take_handshake(&mut self) -> Option<Handshake> {
        DataStream::take_handshake(self)
    }

    #[inline]
    fn take_rekeys(&mut self) -> u32 {
        DataStream::take_rekeys(self)
    }

    #[inline]
    fn quickack(&mut self) {
        DataStream::quickack(self)
    }

    #[inline]
    fn cork(&mut self, on: bool) {
        sockopt::cork(self.as_raw_fd(), on)
    }
}

/// The epoll worker, with direct waiting for a lone connection.
impl Backend for Worker {
    fn claims(&self) -> &'static Claims {
        &iomode::EPOLL
    }

    fn run(mut self) -> Vec<(u64, ServerTestStats)> {
        self.serve();
        leftover(&mut self.tests)
    }
}

impl Commanded for Worker {
    fn commands(&self) -> &Receiver<Command> {
        &self.commands
    }

    fn add_test(&mut self, id: u64, spec: TestSpec, listeners: Vec<DataListener>) {
        let test = self.tests.insert(Test::new(id, spec)) as u32;
        for mut listener in listeners {
            let entry = self.entries.vacant_entry();
            if let Err(e) =
                self.poll
                    .registry()
                    .register(&mut listener, Token(entry.key()), Interest::READABLE)
            {
                eprintln!("stackbench serve: cannot register listener: {e}");
                continue;
            }
            entry.insert(Entry::Listener { listener, test });
        }
    }

    fn remove_test(&mut self, id: u64) -> ServerTestStats {
        let Some((slot, _)) = self.tests.iter().find(|(_, t)| t.id == id) else {
            return ServerTestStats::default();
        };
        let test = self.tests.remove(slot);
        let slot = slot as u32;
        self.entries.retain(|_, e| e.test() != slot);
        self.conns = self
            .entries
            .iter()
            .filter(|(_, e)| e.conn().is_some())
            .count();
        test.stats
    }
}

/// How long epoll may sleep: not at all while a test asks the responder to
/// spin (busy-polling: `epoll_wait` with timeout 0), [`ACCEPT_RETRY`] while a
/// listener waits for descriptors, else until an event.
fn poll_timeout(spin: bool, retrying_accept: bool) -> Option<Duration> {
    match (spin, retrying_accept) {
        (true, _) => Some(Duration::ZERO),
        (false, true) => Some(ACCEPT_RETRY),
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spinning_test_polls_without_blocking() {
        assert_eq!(poll_timeout(true, false), Some(Duration::ZERO));
        assert_eq!(poll_timeout(true, true), Some(Duration::ZERO));
        assert_eq!(poll_timeout(false, true), Some(ACCEPT_RETRY));
        assert_eq!(poll_timeout(false, false), None);
    }

    /// The figure the doc comment on `Conn` states: a raw connection's
    /// entry does not grow for the framed protocols beside it.
    #[test]
    fn conn_state_is_small() {
        assert!(
            std::mem::size_of::<Conn>() <= 32,
            "{}",
            std::mem::size_of::<Conn>()
        );
        // An entry is as large as it would be with raw connections only.
        #[allow(dead_code)]
        enum RawOnly {
            Listener { listener: DataListener, test: u32 },
            Conn(Conn),
        }
        assert_eq!(std::mem::size_of::<Entry>(), std::mem::size_of::<RawOnly>());
    }
}
