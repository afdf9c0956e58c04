//! The responder's per-connection state machine, with no I/O inside: events
//! go in (accepted, n bytes received, n bytes sent, end of stream, a failed
//! call) and what the connection needs next comes out (the next I/O as an
//! [`Io`], and after each event a [`Then`]: a socket option to touch, and
//! whether to go on, wait for readiness, or close). A connection reads a
//! request, writes the answer, and repeats; only what follows an answer
//! differs (a CRR connection in server-close mode, or one whose request
//! asked to close, is closed right away; every other one goes back to
//! reading, and a CRR client then closes or resets it). The machine books
//! what happens — connections, bytes, transactions, errors, TLS handshakes
//! and key updates — into its [`Test`]'s counters.
//!
//! The backends carry out its actions and feed it their results, the way
//! the driver's backends feed [`crate::driver`]'s machine (fio's engines in
//! ioengine.h likewise carry out the I/O its core prepares): epoll and
//! direct waiting ([`super::worker`], [`super::direct`]) through
//! [`drive`], the readiness loop written once over any [`ConnIo`]; io_uring
//! ([`super::uring`]) event by event from its completions; and the test-only
//! mock (`mock.rs`), which runs [`drive`] over scripted sockets. Everything is
//! generic or plain functions over small `Copy` types, resolved at compile
//! time: no allocation and no call through a pointer per event.
//!
//! A connection's state is [`ConnState`], 16 bytes kept in each backend's
//! connection entry next to its socket. Sizes and contents come from the
//! test's application protocol ([`crate::app`]): when a request is complete,
//! how long its answer is, what the answer's bytes are and whether the
//! connection ends after it are the [`Handler`]'s to say, and the machine
//! is the only one that asks it. The events and [`drive`] are generic over
//! the handler; a backend picks it once per connection from the test's
//! `protocol` ([`Test::protocol`], through the protocol table
//! `crate::app::with`) and keeps the handler's
//! per-connection state (`Handler::State`) beside the machine's: `()` for
//! raw payloads, whose entries do not grow, an HTTP/1.1 parse for `http1`,
//! a Telnet and record parse for `tn3270`.
//! A request the handler refuses (a [`crate::app::Fault`]) closes the
//! connection as an error. A handler whose protocol opens with a setup
//! dialogue (`Handler::SETUP`: TN3270's negotiation, where the server
//! speaks first) runs it in phases of its own between the accept and the
//! first request; its bytes count, its messages are no transactions.

use std::io;

use stackbench_model::{AppProtocol, CrrClose, Kind};

use crate::app::{Handler, Raw, Setup};
use crate::control::{ServerTestStats, TestSpec};
use crate::sockopt::{self, IO_CHUNK_BYTES};
use crate::transport::tls::Handshake;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    /// Between requests: nothing of the next one received yet.
    Idle,
    /// Part of a request received.
    Reading,
    Writing,
    /// Connection setup (`Handler::SETUP`): reading what the client sends.
    SetupRecv,
    /// Connection setup: sending the handler's setup bytes, then reading.
    SetupSend,
    /// Connection setup: sending the handler's last setup bytes.
    SetupSendLast,
}

/// A test as its connections' machine sees it: what it asks for and what
/// it booked (one per test and worker; the workers' counters are summed
/// when the test stops).
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

    /// The application protocol the test's connections speak: what a
    /// backend dispatches on once per connection, to run the machine with
    /// that protocol's handler.
    #[inline]
    pub(super) fn protocol(&self) -> AppProtocol {
        self.spec.protocol
    }

    /// The test's handler of protocol `H` (two sizes: built where used).
    #[inline]
    pub(super) fn handler<H: Handler>(&self) -> H {
        H::of(
            self.spec.request_bytes,
            self.spec.response_bytes,
            &self.spec.tn3270,
        )
    }

    /// Bytes of a whole raw request (where io_uring, which serves raw
    /// payloads only, starts the receive after an answer).
    #[inline]
    pub(super) fn raw_request_bytes(&self) -> u64 {
        Handler::request_bytes(&self.handler::<Raw>())
    }

    /// Whether a raw answer is corked while it is written (io_uring's
    /// answers, raw payloads only).
    #[inline]
    pub(super) fn raw_corks(&self) -> bool {
        self.corks(self.handler::<Raw>().response_bytes(&()))
    }

    /// Whether an answer of `response` bytes is corked while it is written
    /// (longer than one write, and `cork` asked for: see
    /// `SocketOptions::cork`).
    #[inline]
    pub(super) fn corks(&self, response: u64) -> bool {
        sockopt::corks(&self.spec.socket, response)
    }

    /// A connection of the test was closed, as an error or not.
    #[inline]
    pub(super) fn closed(&mut self, error: bool) {
        self.stats.errors += u64::from(error);
    }
}

/// One connection's state: 16 bytes (see `conn_state_is_small`), whatever
/// the protocol (a framed one's parse is kept beside it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct ConnState {
    /// Bytes left in the phase (reading a framed request: what the handler
    /// asks for next).
    remaining: u64,
    /// The backend's slot of the test the connection serves (the machine
    /// never reads it; kept here, where the state's padding would be).
    pub(super) test: u32,
    phase: Phase,
    /// Bits the backend keeps about the connection (io_uring: what it has
    /// in flight, and closing), in the same padding.
    pub(super) backend: u8,
}

/// The next I/O a connection needs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Io {
    /// Receive up to `max` bytes of the request.
    Recv { max: usize },
    /// Send `len` bytes of the answer, from byte `offset` of it; `cork`:
    /// cork the socket first (the first chunk of a corked answer); `last`:
    /// the answer's last chunk.
    Send {
        len: usize,
        offset: u64,
        cork: bool,
        last: bool,
    },
}

/// What to do to the socket after an event, before its [`Step`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Touch {
    Nothing,
    /// Re-arm TCP_QUICKACK (the test asks for it after every receive).
    Quickack,
    /// Lift the cork: a corked answer's last byte went out.
    Uncork,
}

/// Where a connection goes after an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Step {
    /// Do its next [`Io`] now.
    Go,
    /// Wait for the socket's next readiness, then do its next [`Io`] (a
    /// short read or write, a would-block, or an answer out: the next
    /// request cannot come before the client has it, so its arrival is a
    /// fresh edge, and a read now would only say EAGAIN).
    Wait,
    /// Close it; `error`: count it against the test.
    Close { error: bool },
}

/// The machine's answer to an event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Then {
    pub(super) touch: Touch,
    pub(super) step: Step,
}

impl From<Step> for Then {
    #[inline]
    fn from(step: Step) -> Then {
        Then {
            touch: Touch::Nothing,
            step,
        }
    }
}

impl ConnState {
    /// A connection accepted for `test`, speaking `H`, kept by the backend
    /// in slot `slot`: counted, and waiting for its first request — or,
    /// when its protocol opens with a setup, at the setup's first step
    /// (`app`: its handler's state, fresh).
    #[inline]
    pub(super) fn accepted<H: Handler>(
        test: &mut Test,
        app: &mut H::State,
        slot: u32,
    ) -> ConnState {
        test.stats.connections += 1;
        let handler = test.handler::<H>();
        let mut state = ConnState {
            remaining: Handler::request_bytes(&handler),
            test: slot,
            phase: Phase::Idle,
            backend: 0,
        };
        if H::SETUP {
            let step = handler.setup_open(app);
            state.setup_step(&handler, app, step);
        }
        state
    }

    /// Moves the connection to its handler's setup step.
    fn setup_step<H: Handler>(&mut self, handler: &H, app: &H::State, step: Setup) {
        let bytes = handler.setup_bytes(app);
        (self.phase, self.remaining) = match step {
            Setup::Send if bytes > 0 => (Phase::SetupSend, bytes),
            Setup::SendLast if bytes > 0 => (Phase::SetupSendLast, bytes),
            Setup::Read | Setup::Send => (Phase::SetupRecv, IO_CHUNK_BYTES as u64),
            Setup::Done | Setup::SendLast => (Phase::Idle, Handler::request_bytes(handler)),
        };
    }

    /// Whether the connection is sending setup bytes (not an answer).
    #[inline]
    fn sending_setup(&self) -> bool {
        matches!(self.phase, Phase::SetupSend | Phase::SetupSendLast)
    }

    /// The I/O the connection's phase needs next (`app`: its handler's
    /// state, which says how long the answer is).
    #[inline]
    pub(super) fn io<H: Handler>(&self, test: &Test, app: &H::State) -> Io {
        let len = self.remaining.min(IO_CHUNK_BYTES as u64) as usize;
        match self.phase {
            Phase::Idle | Phase::Reading | Phase::SetupRecv => Io::Recv { max: len },
            Phase::SetupSend | Phase::SetupSendLast => Io::Send {
                len,
                offset: test.handler::<H>().setup_bytes(app) - self.remaining,
                cork: false,
                last: len as u64 == self.remaining,
            },
            Phase::Writing => {
                let whole = test.handler::<H>().response_bytes(app);
                Io::Send {
                    len,
                    offset: whole - self.remaining,
                    cork: test.corks(whole) && self.remaining == whole,
                    last: len as u64 == self.remaining,
                }
            }
        }
    }

    /// Whether the connection is between requests (nothing of the next one
    /// received yet).
    #[inline]
    pub(super) fn between_requests(&self) -> bool {
        self.phase == Phase::Idle
    }

    /// `n` bytes of the request arrived (`chunk`: them, or empty when the
    /// backend counts without reading, which only an unframed protocol
    /// allows) from a receive of at most `want`; `handshake`: the TLS
    /// handshake that receive finished, if any. A complete request turns
    /// the connection to writing its answer; one the handler refuses closes
    /// it as an error.
    #[inline]
    pub(super) fn received<H: Handler>(
        &mut self,
        test: &mut Test,
        app: &mut H::State,
        (n, want): (usize, usize),
        chunk: &[u8],
        handshake: Option<&Handshake>,
    ) -> Then {
        if let Some(h) = handshake {
            h.count_into(&mut test.stats);
        }
        if self.phase == Phase::Writing || self.sending_setup() {
            // A request before the answer went out: not a client of ours.
            return Step::Close { error: true }.into();
        }
        if H::SETUP && self.phase == Phase::SetupRecv {
            return self.setup_received::<H>(test, app, (n, want), chunk);
        }
        let touch = if test.spec.socket.quickack {
            Touch::Quickack
        } else {
            Touch::Nothing
        };
        let handler = test.handler::<H>();
        test.stats.rx_bytes += n as u64;
        self.phase = Phase::Reading;
        self.remaining = match handler.request_left(app, self.remaining, n as u64, chunk) {
            Ok(left) => left,
            // A request the protocol refuses: close, counted.
            Err(_) => {
                return Then {
                    touch,
                    step: Step::Close { error: true },
                }
            }
        };
        let step = if self.remaining == 0 {
            self.phase = Phase::Writing;
            self.remaining = handler.response_bytes(app);
            Step::Go
        } else if n < want {
            Step::Wait
        } else {
            Step::Go
        };
        Then { touch, step }
    }

    /// `n` bytes the client sent during setup (`chunk`): the handler says
    /// what comes next; a setup it refuses closes the connection as an
    /// error.
    fn setup_received<H: Handler>(
        &mut self,
        test: &mut Test,
        app: &mut H::State,
        (n, want): (usize, usize),
        chunk: &[u8],
    ) -> Then {
        test.stats.rx_bytes += n as u64;
        let handler = test.handler::<H>();
        match handler.setup_received(app, chunk) {
            Ok(step) => self.setup_step(&handler, app, step),
            Err(_) => return Step::Close { error: true }.into(),
        }
        if self.phase == Phase::SetupRecv && n < want {
            Step::Wait.into()
        } else {
            Step::Go.into()
        }
    }

    /// `n` setup bytes went out, of `want` offered: then the client's turn
    /// (a fresh edge), or, after the last, its first request.
    fn setup_sent<H: Handler>(&mut self, test: &mut Test, n: usize, want: usize) -> Then {
        test.stats.tx_bytes += n as u64;
        self.remaining -= n as u64;
        if self.remaining > 0 {
            return if n < want { Step::Wait } else { Step::Go }.into();
        }
        (self.phase, self.remaining) = if self.phase == Phase::SetupSendLast {
            (Phase::Idle, Handler::request_bytes(&test.handler::<H>()))
        } else {
            (Phase::SetupRecv, IO_CHUNK_BYTES as u64)
        };
        Step::Wait.into()
    }

    /// `n` bytes of the answer went out, of `want` offered; `rekeys`: TLS
    /// key updates that send started. At the answer's end the transaction
    /// counts, and the connection is closed when a CRR test's server closes
    /// or the handler says the request asked to (HTTP's `Connection:
    /// close`); every other goes back to reading.
    #[inline]
    pub(super) fn sent<H: Handler>(
        &mut self,
        test: &mut Test,
        app: &H::State,
        (n, want): (usize, usize),
        rekeys: u32,
    ) -> Then {
        test.stats.tls_rekeys += u64::from(rekeys);
        if H::SETUP && self.sending_setup() {
            return self.setup_sent::<H>(test, n, want);
        }
        let handler = test.handler::<H>();
        let n = n as u64;
        let touch = if test.corks(handler.response_bytes(app)) && n == self.remaining {
            Touch::Uncork
        } else {
            Touch::Nothing
        };
        test.stats.tx_bytes += n;
        self.remaining -= n;
        let step = if self.remaining > 0 {
            if n < want as u64 {
                Step::Wait
            } else {
                Step::Go
            }
        } else {
            test.stats.transactions += 1;
            let crr_server_close =
                test.spec.kind == Kind::Crr && test.spec.socket.crr_close == CrrClose::Server;
            if crr_server_close || handler.closes(app) {
                Step::Close { error: false }
            } else {
                self.phase = Phase::Idle;
                self.remaining = Handler::request_bytes(&handler);
                Step::Wait
            }
        };
        Then { touch, step }
    }

    /// The client closed its end: normal between requests (CRR client
    /// close, the end of a run) and during a connection's setup (a port
    /// probe, a terminal that gave up logging on: no transaction was
    /// under way), an error mid-request or mid-answer.
    #[inline]
    pub(super) fn eof(&self) -> Step {
        Step::Close {
            error: !self.between_requests() && !self.in_setup(),
        }
    }

    /// Whether the connection is still in its protocol's setup (TN3270's
    /// logon), where a client that leaves — a probe checking the port
    /// listens — is a goodbye, not an error.
    #[inline]
    fn in_setup(&self) -> bool {
        matches!(
            self.phase,
            Phase::SetupRecv | Phase::SetupSend | Phase::SetupSendLast
        )
    }

    /// A receive or send failed with `kind` (a backend retries an
    /// interrupted call itself): a would-block waits for readiness, a reset
    /// from a CRR client that closes abortively is its normal goodbye, as is
    /// a reset during the setup (a client that closed with the server's
    /// first setup bytes unread resets), and anything else closes the
    /// connection as an error.
    #[inline]
    pub(super) fn failed(&self, test: &Test, kind: io::ErrorKind) -> Step {
        match kind {
            io::ErrorKind::WouldBlock => Step::Wait,
            io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe if self.in_setup() => {
                Step::Close { error: false }
            }
            io::ErrorKind::ConnectionReset if test.spec.kind == Kind::Crr => {
                Step::Close { error: false }
            }
            _ => Step::Close { error: true },
        }
    }
}

impl ConnState {
    /// A receive's completion (io_uring: the bytes, 0 at end of stream, or
    /// a negative errno) as the machine's event. The bytes are not handed
    /// over: the completion backend receives into one shared sink, so it
    /// serves raw payloads only (`iomode::URING` refuses a framed protocol).
    #[inline]
    pub(super) fn recv_completed(&mut self, test: &mut Test, res: i32) -> Then {
        debug_assert!(
            !crate::app::row(test.protocol()).framed,
            "io_uring serves raw payloads"
        );
        match res {
            ..=-1 => self.failed(test, errno_kind(res)).into(),
            0 => self.eof().into(),
            // A completion that brought less than asked needs no wait of
            // its own: the backend queues the next receive either way.
            n => self.received::<Raw>(test, &mut (), (n as usize, n as usize), &[], None),
        }
    }

    /// A send's completion (the bytes taken, or a negative errno) as the
    /// machine's event.
    #[inline]
    pub(super) fn send_completed(&mut self, test: &mut Test, res: i32) -> Then {
        if res < 0 {
            return self.failed(test, errno_kind(res)).into();
        }
        self.sent::<Raw>(test, &(), (res as usize, res as usize), 0)
    }
}

/// The kind of the error a completion's negative result `res` stands for.
#[inline]
pub(super) fn errno_kind(res: i32) -> io::ErrorKind {
    io::Error::from_raw_os_error(-res).kind()
}

/// A connection's socket as the readiness loop ([`drive`]) uses it: the
/// transport's stream on epoll and direct waiting, a scripted one in the
/// mock. Generic, never boxed: the loop is compiled per socket type.
pub(super) trait ConnIo {
    /// Receives into `buf`; `Ok(0)` at end of stream.
    fn recv(&mut self, buf: &mut [u8], waitall: bool) -> io::Result<usize>;
    /// Sends what the socket takes of `buf`.
    fn send(&mut self, buf: &[u8]) -> io::Result<usize>;
    /// The TLS handshake a receive finished, once.
    fn take_handshake(&mut self) -> Option<Handshake>;
    /// TLS key updates started since the last call.
    fn take_rekeys(&mut self) -> u32;
    fn quickack(&mut self);
    fn cork(&mut self, on: bool);
}

/// A worker's buffers for the readiness loop, shared by its connections:
/// what is received (at least one I/O chunk long), the zeros raw answers
/// are sent from, and where a framed answer is written before it is sent.
pub(super) struct Buffers {
    scratch: Box<[u8]>,
    zeros: Box<[u8]>,
    out: Box<[u8]>,
}

impl Buffers {
    pub(super) fn new() -> Buffers {
        let chunk = || vec![0; IO_CHUNK_BYTES].into_boxed_slice();
        Buffers {
            scratch: chunk(),
            zeros: chunk(),
            out: chunk(),
        }
    }
}

/// Runs one connection, speaking `H`, as far as its socket allows (the
/// epoll loop on a readiness edge, direct waiting on a blocking socket):
/// does the machine's next I/O, feeds it the result, and repeats until the
/// machine says wait or close — [`Step::Wait`] or [`Step::Close`], never
/// [`Step::Go`]. `app` is the connection's handler state. Raw answers are
/// sent from zeros; a framed handler writes each chunk of its answer
/// (`Handler::fill_response`) first.
#[inline]
pub(super) fn drive<H: Handler, S: ConnIo>(
    state: &mut ConnState,
    app: &mut H::State,
    test: &mut Test,
    stream: &mut S,
    buffers: &mut Buffers,
) -> Step {
    loop {
        let then = match state.io::<H>(test, app) {
            Io::Recv { max } => {
                let scratch = &mut buffers.scratch[..max];
                match stream.recv(scratch, test.spec.socket.waitall) {
                    Ok(0) => state.eof().into(),
                    Ok(n) => {
                        let handshake = stream.take_handshake();
                        let chunk = &buffers.scratch[..n];
                        state.received::<H>(test, app, (n, max), chunk, handshake.as_ref())
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => state.failed(test, e.kind()).into(),
                }
            }
            Io::Send {
                len, offset, cork, ..
            } => {
                if cork {
                    stream.cork(true);
                }
                let bytes = if H::SETUP && state.sending_setup() {
                    let out = &mut buffers.out[..len];
                    test.handler::<H>().fill_setup(app, offset, out);
                    &buffers.out[..len]
                } else if H::FRAMED {
                    let out = &mut buffers.out[..len];
                    test.handler::<H>().fill_response(app, offset, out);
                    &buffers.out[..len]
                } else {
                    &buffers.zeros[..len]
                };
                match stream.send(bytes) {
                    Ok(n) => {
                        let rekeys = stream.take_rekeys();
                        state.sent::<H>(test, app, (n, len), rekeys)
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => state.failed(test, e.kind()).into(),
                }
            }
        };
        match then.touch {
            Touch::Nothing => {}
            Touch::Quickack => stream.quickack(),
            Touch::Uncork => stream.cork(false),
        }
        if then.step != Step::Go {
            return then.step;
        }
    }
}

#[cfg(test)]
mod tests {
    //! The events one by one; the readiness loop over scripted sockets is
    //! tested in `mock.rs`.

    use stackbench_model::{IoMode, SocketOptions};

    use super::*;

    fn spec(
        kind: Kind,
        (request_bytes, response_bytes): (u64, u64),
        socket: SocketOptions,
    ) -> TestSpec {
        TestSpec {
            kind,
            request_bytes,
            response_bytes,
            socket,
            spin: false,
            io: IoMode::Epoll,
            protocol: AppProtocol::Raw,
            tn3270: Default::default(),
        }
    }

    fn test(kind: Kind, sizes: (u64, u64), close: CrrClose) -> Test {
        let socket = SocketOptions {
            crr_close: close,
            ..SocketOptions::default()
        };
        Test::new(1, spec(kind, sizes, socket))
    }

    /// The figure the doc comment on `ConnState` states.
    #[test]
    fn conn_state_is_small() {
        assert_eq!(std::mem::size_of::<ConnState>(), 16);
    }

    #[test]
    fn a_request_in_pieces_then_its_answer() {
        let mut t = test(Kind::Rr, (100, 4096), CrrClose::Client);
        let mut c = ConnState::accepted::<Raw>(&mut t, &mut (), 7);
        assert_eq!((t.stats.connections, c.test), (1, 7));
        assert_eq!(c.io::<Raw>(&t, &()), Io::Recv { max: 100 });
        // A short read: wait for more.
        assert_eq!(
            c.received::<Raw>(&mut t, &mut (), (60, 100), &[], None)
                .step,
            Step::Wait
        );
        assert_eq!(c.io::<Raw>(&t, &()), Io::Recv { max: 40 });
        assert_eq!(
            c.received::<Raw>(&mut t, &mut (), (40, 40), &[], None).step,
            Step::Go
        );
        let send = Io::Send {
            len: 4096,
            offset: 0,
            cork: false,
            last: true,
        };
        assert_eq!(c.io::<Raw>(&t, &()), send);
        // A short write waits; the answer's end waits for the next request.
        assert_eq!(c.sent::<Raw>(&mut t, &(), (1000, 4096), 0).step, Step::Wait);
        assert_eq!(c.sent::<Raw>(&mut t, &(), (3096, 3096), 0).step, Step::Wait);
        assert!(c.between_requests());
        assert_eq!(
            (t.stats.rx_bytes, t.stats.tx_bytes, t.stats.transactions),
            (100, 4096, 1)
        );
    }

    #[test]
    fn the_end_of_stream_is_an_error_only_inside_a_transaction() {
        let mut t = test(Kind::Rr, (10, 10), CrrClose::Client);
        let mut c = ConnState::accepted::<Raw>(&mut t, &mut (), 0);
        assert_eq!(c.eof(), Step::Close { error: false });
        c.received::<Raw>(&mut t, &mut (), (4, 10), &[], None);
        assert_eq!(c.eof(), Step::Close { error: true });
        c.received::<Raw>(&mut t, &mut (), (6, 6), &[], None);
        assert_eq!(c.eof(), Step::Close { error: true }, "mid-answer");
    }

    #[test]
    fn a_reset_is_a_crr_goodbye_and_an_rr_error() {
        use io::ErrorKind::{BrokenPipe, ConnectionReset, WouldBlock};
        let crr = test(Kind::Crr, (1, 1), CrrClose::Abort);
        let rr = test(Kind::Rr, (1, 1), CrrClose::Abort);
        let c =
            ConnState::accepted::<Raw>(&mut test(Kind::Rr, (1, 1), CrrClose::Abort), &mut (), 0);
        assert_eq!(
            c.failed(&crr, ConnectionReset),
            Step::Close { error: false }
        );
        assert_eq!(c.failed(&rr, ConnectionReset), Step::Close { error: true });
        assert_eq!(c.failed(&crr, BrokenPipe), Step::Close { error: true });
        assert_eq!(c.failed(&rr, WouldBlock), Step::Wait);
    }

    #[test]
    fn only_a_server_close_crr_connection_ends_after_its_answer() {
        for (kind, close, closes) in [
            (Kind::Crr, CrrClose::Server, true),
            (Kind::Crr, CrrClose::Client, false),
            (Kind::Crr, CrrClose::Abort, false),
            (Kind::Rr, CrrClose::Server, false),
            (Kind::Str, CrrClose::Server, false),
        ] {
            let mut t = test(kind, (64, 8000), close);
            let mut c = ConnState::accepted::<Raw>(&mut t, &mut (), 0);
            c.received::<Raw>(&mut t, &mut (), (64, 64), &[], None);
            let step = c.sent::<Raw>(&mut t, &(), (8000, 8000), 0).step;
            let want = if closes {
                Step::Close { error: false }
            } else {
                Step::Wait
            };
            assert_eq!(step, want, "{kind:?} {close:?}");
            assert_eq!(t.stats.transactions, 1);
        }
    }

    #[test]
    fn completions_are_the_same_events() {
        let mut t = test(Kind::Crr, (10, 20), CrrClose::Abort);
        let mut c = ConnState::accepted::<Raw>(&mut t, &mut (), 0);
        let wait = |step| Then {
            touch: Touch::Nothing,
            step,
        };
        assert_eq!(c.recv_completed(&mut t, -libc::EAGAIN), wait(Step::Wait));
        assert_eq!(c.recv_completed(&mut t, 4), wait(Step::Go));
        assert_eq!(c.recv_completed(&mut t, 6), wait(Step::Go));
        assert_eq!(c.send_completed(&mut t, 15), wait(Step::Go));
        assert_eq!(c.send_completed(&mut t, 5), wait(Step::Wait));
        assert_eq!(
            (t.stats.rx_bytes, t.stats.tx_bytes, t.stats.transactions),
            (10, 20, 1)
        );
        // A CRR client's reset is its goodbye; the end of stream between
        // requests too; any other failure is an error.
        let goodbye = wait(Step::Close { error: false });
        assert_eq!(c.recv_completed(&mut t, -libc::ECONNRESET), goodbye);
        assert_eq!(c.recv_completed(&mut t, 0), goodbye);
        let error = wait(Step::Close { error: true });
        assert_eq!(c.send_completed(&mut t, -libc::EPIPE), error);
        c.recv_completed(&mut t, 3);
        assert_eq!(c.recv_completed(&mut t, 0), error, "mid-request");
    }

    #[test]
    fn a_corked_answer_is_corked_at_its_first_chunk_and_lifted_after_its_last() {
        let socket = SocketOptions {
            cork: true,
            ..SocketOptions::default()
        };
        let answer = 2 * IO_CHUNK_BYTES as u64 + 5;
        let mut t = Test::new(1, spec(Kind::Rr, (1, answer), socket));
        let mut c = ConnState::accepted::<Raw>(&mut t, &mut (), 0);
        c.received::<Raw>(&mut t, &mut (), (1, 1), &[], None);
        let chunk = IO_CHUNK_BYTES;
        let first = Io::Send {
            len: chunk,
            offset: 0,
            cork: true,
            last: false,
        };
        assert_eq!(c.io::<Raw>(&t, &()), first);
        assert_eq!(
            c.sent::<Raw>(&mut t, &(), (chunk, chunk), 0).touch,
            Touch::Nothing
        );
        let second = Io::Send {
            len: chunk,
            offset: chunk as u64,
            cork: false,
            last: false,
        };
        assert_eq!(c.io::<Raw>(&t, &()), second);
        assert_eq!(
            c.sent::<Raw>(&mut t, &(), (chunk, chunk), 0).touch,
            Touch::Nothing
        );
        let last = Io::Send {
            len: 5,
            offset: 2 * chunk as u64,
            cork: false,
            last: true,
        };
        assert_eq!(c.io::<Raw>(&t, &()), last);
        assert_eq!(
            c.sent::<Raw>(&mut t, &(), (5, 5), 0),
            Then {
                touch: Touch::Uncork,
                step: Step::Wait
            }
        );
        // An answer of one chunk is never corked.
        let mut small = Test::new(1, spec(Kind::Rr, (1, 100), socket));
        let mut c = ConnState::accepted::<Raw>(&mut small, &mut (), 0);
        c.received::<Raw>(&mut small, &mut (), (1, 1), &[], None);
        assert!(matches!(
            c.io::<Raw>(&small, &()),
            Io::Send { cork: false, .. }
        ));
    }
}
