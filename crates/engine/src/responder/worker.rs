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

use super::machine::{self, ConnIo, ConnState, Step, Test};
use crate::iomode::{self, Claims};
use crate::protocol::{ServerTestStats, TestSpec};
use crate::sockopt::{self, IO_CHUNK_BYTES};
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
                            .serving_refusal(l.row().transport(), spec.kind)
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

/// Per-connection state: 32 bytes (stream: an fd or a boxed TLS session;
/// the machine's state, which holds the test's slot).
pub(super) struct Conn {
    pub(super) stream: DataStream,
    pub(super) state: ConnState,
}

pub(super) enum Entry {
    Listener { listener: DataListener, test: u32 },
    Conn(Conn),
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
    scratch: Vec<u8>,
    zeros: Vec<u8>,
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
            scratch: vec![0; IO_CHUNK_BYTES],
            zeros: vec![0; IO_CHUNK_BYTES],
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
            Some(Entry::Conn(_)) => {
                if let Step::Close { error } = self.drive(key) {
                    self.close(key, error);
                }
            }
            None => {}
        }
    }

    /// Drops connection `key`, counting an error against its test if `error`.
    pub(super) fn close(&mut self, key: usize, error: bool) {
        if let Entry::Conn(conn) = self.entries.remove(key) {
            self.conns -= 1;
            if let Some(t) = self.tests.get_mut(conn.state.test as usize) {
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
            let mut stream = match listener.accept() {
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
            let state = ConnState::accepted(t, test);
            let entry = self.entries.vacant_entry();
            let token = Token(entry.key());
            if self
                .poll
                .registry()
                .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                .is_ok()
            {
                entry.insert(Entry::Conn(Conn { stream, state }));
                self.conns += 1;
            }
        }
    }

    /// Runs one connection's state machine as far as the socket allows
    /// ([`machine::drive`], which the mock backend runs too).
    pub(super) fn drive(&mut self, key: usize) -> Step {
        let Some(Entry::Conn(conn)) = self.entries.get_mut(key) else {
            return Step::Wait;
        };
        let test = &mut self.tests[conn.state.test as usize];
        machine::drive(
            &mut conn.state,
            test,
            &mut conn.stream,
            &mut self.scratch,
            &self.zeros,
        )
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
        self.entries.retain(|_, e| match e {
            Entry::Listener { test, .. } => *test != slot,
            Entry::Conn(c) => c.state.test != slot,
        });
        self.conns = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Conn(_)))
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

    /// The figure the doc comment on `Conn` states.
    #[test]
    fn conn_state_is_small() {
        assert!(
            std::mem::size_of::<Conn>() <= 32,
            "{}",
            std::mem::size_of::<Conn>()
        );
    }
}
