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
//! A test's application protocol decides what is read and written
//! (`TestSpec::protocol`): raw payloads are counted unread and answered from
//! a zero buffer; a framed one (`http1`) gets each received chunk with the
//! connection's parse state, kept in a table beside the entries, and writes
//! its answer's head into an output buffer before the body.
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
use stackbench_model::Kind;

use super::machine::{
    book_received, book_received_framed, book_sent, book_sent_framed, http1_handler, request_bytes,
    response_bytes, Phase,
};
use crate::app::http1::ServerState;
use crate::app::Handler;
use crate::protocol::{ServerTestStats, TestSpec};
use crate::sockopt::{self, IO_CHUNK_BYTES};
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
pub(super) trait Commanded {
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
                } => self.add_test(test_id, spec, listeners),
                Command::RemoveTest { test_id, reply } => {
                    let _ = reply.send(self.remove_test(test_id));
                }
                Command::Shutdown => return false,
            }
        }
        true
    }
}

pub(super) struct Test {
    pub(super) id: u64,
    pub(super) spec: TestSpec,
    pub(super) stats: ServerTestStats,
}

impl Test {
    pub(super) fn new(id: u64, spec: TestSpec) -> Test {
        Test {
            id,
            spec,
            stats: ServerTestStats::default(),
        }
    }
}

/// Per-connection state: 32 bytes (stream: an fd or a boxed TLS session;
/// test slot, phase, bytes left).
pub(super) struct Conn {
    pub(super) stream: DataStream,
    pub(super) test: u32,
    phase: Phase,
    remaining: u64,
}

pub(super) enum Entry {
    Listener { listener: DataListener, test: u32 },
    Conn(Conn),
}

/// What a connection wants after being driven.
pub(super) enum Next {
    Wait,
    Close { error: bool },
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
    /// Framed protocols (`http1`): each connection's parse state, by its
    /// entry key (kept beside the entries so a raw connection stays 32
    /// bytes), and the buffer its answers are written into.
    framed: Vec<ServerState>,
    out: Vec<u8>,
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
            framed: Vec::new(),
            out: Vec::new(),
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
    pub fn run(mut self) {
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
                if let Next::Close { error } = self.drive(key) {
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
            if let Some(t) = self.tests.get_mut(conn.test as usize) {
                t.stats.errors += u64::from(error);
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
            t.stats.connections += 1;
            row.accepted(&stream, &mut t.stats);
            let _ = stream.apply_options(&t.spec.socket, t.spec.request_bytes);
            let remaining = request_bytes(&t.spec);
            let entry = self.entries.vacant_entry();
            let token = Token(entry.key());
            if t.spec.protocol.framed() {
                let key = entry.key();
                if self.framed.len() <= key {
                    self.framed.resize_with(key + 1, ServerState::default);
                }
                self.framed[key] = ServerState::default();
                self.out.resize(IO_CHUNK_BYTES, 0);
            }
            if self
                .poll
                .registry()
                .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                .is_ok()
            {
                entry.insert(Entry::Conn(Conn {
                    stream,
                    test,
                    phase: Phase::Reading,
                    remaining,
                }));
                self.conns += 1;
            }
        }
    }

    /// Runs one connection's state machine as far as the socket allows.
    pub(super) fn drive(&mut self, key: usize) -> Next {
        let Some(Entry::Conn(conn)) = self.entries.get_mut(key) else {
            return Next::Wait;
        };
        let test = &mut self.tests[conn.test as usize];
        let spec = test.spec;
        let framed = spec.protocol.framed();
        let stream = &mut conn.stream;
        loop {
            match conn.phase {
                Phase::Reading => {
                    let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
                    let n = match stream.recv(&mut self.scratch[..want], spec.socket.waitall) {
                        Ok(0) => {
                            // The client closed: normal between transactions
                            // (CRR client close, end of run), an error mid-request.
                            let mid = conn.remaining != request_bytes(&spec);
                            return Next::Close { error: mid };
                        }
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return would_block_or_close(&e, spec.kind),
                    };
                    if spec.socket.quickack {
                        stream.quickack();
                    }
                    if let Some(h) = stream.take_handshake() {
                        h.count_into(&mut test.stats);
                    }
                    let (phase, remaining) = (&mut conn.phase, &mut conn.remaining);
                    let done = if framed {
                        let state = &mut self.framed[key];
                        let chunk = &self.scratch[..n];
                        match book_received_framed(
                            (phase, remaining),
                            state,
                            chunk,
                            &spec,
                            &mut test.stats,
                        ) {
                            Ok(done) => done,
                            // A request the protocol refuses: close, counted.
                            Err(_) => return Next::Close { error: true },
                        }
                    } else {
                        book_received(phase, remaining, n as u64, &spec, &mut test.stats)
                    };
                    if !done && n < want {
                        return Next::Wait;
                    }
                }
                Phase::Writing => {
                    let want = conn.remaining.min(IO_CHUNK_BYTES as u64) as usize;
                    let whole = if framed {
                        http1_handler(&spec).response_bytes(&self.framed[key])
                    } else {
                        response_bytes(&spec)
                    };
                    let corked = sockopt::corks(&spec.socket, whole);
                    if corked && conn.remaining == whole {
                        sockopt::cork(stream.as_raw_fd(), true);
                    }
                    let bytes = if framed {
                        let out = &mut self.out[..want];
                        http1_handler(&spec).fill_response(
                            &self.framed[key],
                            whole - conn.remaining,
                            out,
                        );
                        &self.out[..want]
                    } else {
                        &self.zeros[..want]
                    };
                    let n = match stream.send(bytes) {
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return would_block_or_close(&e, spec.kind),
                    };
                    test.stats.tls_rekeys += u64::from(stream.take_rekeys());
                    if corked && n as u64 == conn.remaining {
                        sockopt::cork(stream.as_raw_fd(), false);
                    }
                    let (phase, remaining) = (&mut conn.phase, &mut conn.remaining);
                    let booked = if framed {
                        let state = &self.framed[key];
                        book_sent_framed(
                            (phase, remaining),
                            state,
                            n as u64,
                            &spec,
                            &mut test.stats,
                        )
                    } else {
                        book_sent(phase, remaining, n as u64, &spec, &mut test.stats)
                    };
                    match booked {
                        Some(true) => return Next::Close { error: false },
                        // The next request cannot arrive before the client has
                        // this response, so its arrival is a fresh edge: wait
                        // for it instead of a read that would say EAGAIN.
                        Some(false) => return Next::Wait,
                        None if n < want => return Next::Wait,
                        None => {}
                    }
                }
            }
        }
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
            Entry::Listener { test, .. } | Entry::Conn(Conn { test, .. }) => *test != slot,
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

/// EAGAIN means wait for the next edge; a reset from a CRR client that closes
/// abortively is its normal goodbye; anything else closes the connection and
/// counts as an error.
pub(super) fn would_block_or_close(e: &io::Error, kind: Kind) -> Next {
    match e.kind() {
        io::ErrorKind::WouldBlock => Next::Wait,
        io::ErrorKind::ConnectionReset if kind == Kind::Crr => Next::Close { error: false },
        _ => Next::Close { error: true },
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
