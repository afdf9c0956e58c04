//! The mock backend (tests only): serves one test's connections over
//! scripted sockets, no kernel involved. A script is a list of events — a
//! connection arrives, its client sends n bytes, reads n bytes of the
//! answers (freeing room in the send buffer), closes or resets — and after
//! each the mock drives the connection exactly as the epoll worker does on
//! a readiness edge: [`machine::drive`], the one readiness loop, over a
//! [`MockSocket`] instead of a `DataStream`. So what it books and every
//! call it makes are what the epoll and direct backends book and make for
//! the same sequence of socket states. The idea is hyperfine's mock executor
//! (src/benchmark/executor.rs: a `MockExecutor` behind its `Executor` trait
//! returning scripted results instead of running commands), as the driver's
//! mock (`driver/mock.rs`) applies it to the client side.
//!
//! The mock is generic over the protocol's row (`crate::app::Protocol`),
//! running [`machine::drive`] with its handler as the epoll and direct
//! backends do for a test of that protocol: raw payloads by default,
//! `http1::Http1` for the framed path (the client then writes real bytes,
//! [`Event::Write`], and what was sent is kept to be read back).
//!
//! The tests below pin the responder's behaviour per kind: RR (request
//! complete → answer → wait for the next), CRR in each close mode, STR both
//! ways, requests and answers split over many calls and events, corked
//! answers, quickack, interleaved connections, end of stream mid-request,
//! resets, TLS handshake and key-update counts, and the counters booked
//! exactly; for HTTP/1.1 a head split across reads, a Content-Length
//! body, `Connection: close`, and a malformed request; for TN3270 the
//! server-first negotiation, records split across writes, a doubled IAC,
//! and records out of turn.

use std::collections::VecDeque;
use std::io;

use stackbench_model::Kind;

use super::machine::{self, Buffers, ConnIo, ConnState, Step, Test};
use super::worker::Backend;
use crate::app::{Handler, Protocol, Raw};
use crate::control::{ServerTestStats, TestSpec};
use crate::iomode::Claims;
use crate::sockopt::IO_CHUNK_BYTES;
use crate::transport::tls::Handshake;

/// What the mock covers: every kind, over no real transport.
pub(super) const MOCK: Claims = Claims {
    name: "mock",
    covers: |_| false,
    ramp: true,
    paced: true,
    kinds: &[Kind::Rr, Kind::Crr, Kind::Str],
    framed: true,
};

/// A call the machine made on a socket, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Call {
    /// A receive that returned this many bytes (0: end of stream).
    Recv(usize),
    /// A send that took this many bytes.
    Send(usize),
    /// A receive or send that would have blocked.
    WouldBlock,
    /// A receive that found the connection reset.
    Reset,
    Cork(bool),
    Quickack,
}

/// A scripted socket: what the client sent and the room its send buffer
/// has, and every call made on it.
#[derive(Debug, Default)]
pub(super) struct MockSocket {
    /// What the client sent that was not received yet, in pieces.
    inbound: VecDeque<Piece>,
    /// The client closed its end after `inbound`.
    eof: bool,
    /// The client reset the connection.
    reset: bool,
    /// Bytes the send buffer takes before it is full.
    room: u64,
    /// A send came up short: the client's next read is a writable edge (as
    /// the kernel wakes a writer only after it found the buffer full).
    no_space: bool,
    corked: bool,
    /// A TLS handshake the next receive finishes, and key updates the next
    /// send starts.
    handshake: Option<Handshake>,
    rekeys: u32,
    /// Bytes sent while the socket was not corked.
    pub uncorked_bytes: u64,
    /// Every byte sent, kept when the test is framed (its answers' heads
    /// are then read back).
    keep: bool,
    pub wire: Vec<u8>,
    /// Answer bytes sent that the client has not read yet.
    pub sent: u64,
    pub calls: Vec<Call>,
}

impl ConnIo for MockSocket {
    fn recv(&mut self, buf: &mut [u8], _waitall: bool) -> io::Result<usize> {
        if self.reset {
            self.calls.push(Call::Reset);
            return Err(io::ErrorKind::ConnectionReset.into());
        }
        let mut n = 0;
        while n < buf.len() {
            let Some(piece) = self.inbound.front_mut() else {
                break;
            };
            n += piece.take(&mut buf[n..]);
            if piece.is_empty() {
                self.inbound.pop_front();
            }
        }
        if n == 0 && !self.eof {
            self.calls.push(Call::WouldBlock);
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.calls.push(Call::Recv(n));
        Ok(n)
    }

    fn send(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.room.min(buf.len() as u64) as usize;
        self.no_space |= n < buf.len();
        if n == 0 {
            self.calls.push(Call::WouldBlock);
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.room -= n as u64;
        self.sent += n as u64;
        if !self.corked {
            self.uncorked_bytes += n as u64;
        }
        if self.keep {
            self.wire.extend_from_slice(&buf[..n]);
        }
        self.calls.push(Call::Send(n));
        Ok(n)
    }

    fn take_handshake(&mut self) -> Option<Handshake> {
        self.handshake.take()
    }

    fn take_rekeys(&mut self) -> u32 {
        std::mem::take(&mut self.rekeys)
    }

    fn quickack(&mut self) {
        self.calls.push(Call::Quickack);
    }

    fn cork(&mut self, on: bool) {
        self.corked = on;
        self.calls.push(Call::Cork(on));
    }
}

/// Part of what a client sent: `n` zero bytes (raw payloads, HTTP bodies)
/// or these bytes.
#[derive(Debug, Clone, Copy)]
enum Piece {
    Zeros(u64),
    Bytes(&'static [u8]),
}

impl Piece {
    /// Moves what fits of the piece into `out`; the bytes moved.
    fn take(&mut self, out: &mut [u8]) -> usize {
        match self {
            Piece::Zeros(left) => {
                let n = (*left).min(out.len() as u64) as usize;
                out[..n].fill(0);
                *left -= n as u64;
                n
            }
            Piece::Bytes(bytes) => {
                let n = bytes.len().min(out.len());
                out[..n].copy_from_slice(&bytes[..n]);
                *bytes = &bytes[n..];
                n
            }
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Piece::Zeros(left) => *left == 0,
            Piece::Bytes(bytes) => bytes.is_empty(),
        }
    }
}

/// One scripted event; connections are numbered in the order they arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    /// A connection arrives, its send buffer `room` bytes large.
    Accept { room: u64 },
    /// Its client sends `bytes` zero bytes (a readable edge).
    Send { conn: usize, bytes: u64 },
    /// Its client sends these bytes (a readable edge).
    Write { conn: usize, data: &'static [u8] },
    /// Its client reads `bytes` of what was sent (a writable edge if a
    /// send found the buffer full).
    Read { conn: usize, bytes: u64 },
    /// Its client's TLS handshake ends with its next bytes.
    Handshake { conn: usize, handshake: Handshake },
    /// Its next send starts a TLS key update.
    Rekey { conn: usize },
    /// Its client closes its end (a readable edge).
    Eof { conn: usize },
    /// Its client resets the connection (a readable edge).
    Reset { conn: usize },
}

/// One connection: the machine's state, its handler's, and its scripted
/// socket.
pub(super) struct MockConn<H: Handler> {
    pub state: ConnState,
    pub app: H::State,
    pub socket: MockSocket,
    /// How it ended: `Some(error)` once closed.
    pub closed: Option<bool>,
}

/// One test's connections on the mock backend, speaking protocol `P`.
pub(super) struct Mock<P: Protocol = Raw> {
    pub test: Test,
    pub conns: Vec<MockConn<P::Server>>,
    script: Vec<Event>,
    buffers: Buffers,
}

impl<P: Protocol> Mock<P> {
    pub fn new(spec: TestSpec, script: Vec<Event>) -> Mock<P> {
        // The backends pick the row from the spec (`Entry::accepted`).
        assert_eq!(P::PROTOCOL, spec.protocol, "the mock's row is the test's");
        Mock {
            test: Test::new(1, spec),
            conns: Vec::new(),
            script,
            buffers: Buffers::new(),
        }
    }

    /// Plays the script; each event is an edge on its connection, which is
    /// then driven as far as its socket allows.
    pub fn play(&mut self) {
        for event in std::mem::take(&mut self.script) {
            let conn = match event {
                Event::Accept { room } => {
                    let mut app = <P::Server as Handler>::State::default();
                    let state = ConnState::accepted::<P::Server>(&mut self.test, &mut app, 0);
                    self.conns.push(MockConn {
                        state,
                        app,
                        socket: MockSocket {
                            room,
                            keep: P::Server::FRAMED,
                            ..MockSocket::default()
                        },
                        closed: None,
                    });
                    // A new connection is driven when its client's bytes
                    // arrive — or at once when the server speaks first, as
                    // the writable edge of its registration drives it on
                    // epoll.
                    if !P::Server::SETUP {
                        continue;
                    }
                    self.conns.len() - 1
                }
                Event::Send { conn, bytes } => {
                    self.conns[conn]
                        .socket
                        .inbound
                        .push_back(Piece::Zeros(bytes));
                    conn
                }
                Event::Write { conn, data } => {
                    self.conns[conn]
                        .socket
                        .inbound
                        .push_back(Piece::Bytes(data));
                    conn
                }
                Event::Read { conn, bytes } => {
                    let socket = &mut self.conns[conn].socket;
                    assert!(bytes <= socket.sent, "the client reads what was sent");
                    socket.sent -= bytes;
                    socket.room += bytes;
                    if !std::mem::take(&mut socket.no_space) {
                        continue;
                    }
                    conn
                }
                Event::Handshake { conn, handshake } => {
                    self.conns[conn].socket.handshake = Some(handshake);
                    continue;
                }
                Event::Rekey { conn } => {
                    self.conns[conn].socket.rekeys += 1;
                    continue;
                }
                Event::Eof { conn } => {
                    self.conns[conn].socket.eof = true;
                    conn
                }
                Event::Reset { conn } => {
                    self.conns[conn].socket.reset = true;
                    conn
                }
            };
            self.edge(conn);
        }
    }

    /// Drives connection `conn`, as the epoll worker's `ready` does.
    fn edge(&mut self, conn: usize) {
        let c = &mut self.conns[conn];
        if c.closed.is_some() {
            return;
        }
        let step = machine::drive::<P::Server, _>(
            &mut c.state,
            &mut c.app,
            &mut self.test,
            &mut c.socket,
            &mut self.buffers,
        );
        if let Step::Close { error } = step {
            c.closed = Some(error);
            self.test.closed(error);
        }
    }
}

impl<P: Protocol> Backend for Mock<P> {
    fn claims(&self) -> &'static Claims {
        &MOCK
    }

    /// Plays the script; the test's counters.
    fn run(mut self) -> Vec<(u64, ServerTestStats)> {
        self.play();
        vec![(self.test.id, self.test.stats)]
    }
}

#[cfg(test)]
mod tests {
    use stackbench_model::{AppProtocol, CrrClose, IoMode, SocketOptions};

    use super::*;
    use crate::app::{http1, tn3270};

    const CHUNK: u64 = IO_CHUNK_BYTES as u64;
    /// A send buffer that never fills in these tests.
    const ROOMY: u64 = u64::MAX / 2;

    fn spec(kind: Kind, (request_bytes, response_bytes): (u64, u64)) -> TestSpec {
        spec_with(
            kind,
            (request_bytes, response_bytes),
            SocketOptions::default(),
        )
    }

    fn spec_with(
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

    fn crr(close: CrrClose) -> TestSpec {
        let socket = SocketOptions {
            crr_close: close,
            ..SocketOptions::default()
        };
        spec_with(Kind::Crr, (64, 8000), socket)
    }

    /// Plays `script` for `spec`; the mock afterwards.
    fn play(spec: TestSpec, script: Vec<Event>) -> Mock {
        let mut mock = Mock::new(spec, script);
        mock.play();
        mock
    }

    /// `n` whole requests of `bytes` on connection `conn`, each read by
    /// the client once answered (`answer` bytes).
    fn requests(conn: usize, n: u64, bytes: u64, answer: u64) -> Vec<Event> {
        (0..n)
            .flat_map(|_| {
                [
                    Event::Send { conn, bytes },
                    Event::Read {
                        conn,
                        bytes: answer,
                    },
                ]
            })
            .collect()
    }

    fn stats<P: Protocol>(mock: &Mock<P>) -> (u64, u64, u64, u64, u64) {
        let s = &mock.test.stats;
        (
            s.connections,
            s.transactions,
            s.rx_bytes,
            s.tx_bytes,
            s.errors,
        )
    }

    #[test]
    fn rr_answers_each_request_then_waits_for_the_next() {
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(requests(0, 10, 100, 4096));
        script.push(Event::Eof { conn: 0 });
        let mock = play(spec(Kind::Rr, (100, 4096)), script);
        assert_eq!(stats(&mock), (1, 10, 10 * 100, 10 * 4096, 0));
        let conn = &mock.conns[0];
        // One receive and one send per transaction: after an answer the
        // machine waits for the next edge instead of a receive that would
        // block; the end of stream between requests is no error.
        let mut want: Vec<Call> = (0..10)
            .flat_map(|_| [Call::Recv(100), Call::Send(4096)])
            .collect();
        want.push(Call::Recv(0));
        assert_eq!(conn.socket.calls, want);
        assert_eq!(conn.closed, Some(false));
    }

    #[test]
    fn a_request_split_over_many_reads_is_answered_once_whole() {
        let mut script = vec![Event::Accept { room: ROOMY }];
        for _ in 0..3 {
            script.extend((0..100).map(|_| Event::Send { conn: 0, bytes: 1 }));
        }
        let mock = play(spec(Kind::Rr, (300, 7)), script);
        assert_eq!(stats(&mock), (1, 1, 300, 7, 0));
        let calls = &mock.conns[0].socket.calls;
        // Each byte a receive that came up short (so no second one), the
        // answer after the 300th.
        assert_eq!(calls.iter().filter(|c| **c == Call::Recv(1)).count(), 300);
        assert_eq!(calls.last(), Some(&Call::Send(7)));
        assert!(!calls.contains(&Call::WouldBlock), "{calls:?}");
    }

    #[test]
    fn an_answer_goes_out_as_the_send_buffer_makes_room() {
        // A 10 kB answer into 3 kB of room, the client reading 3 kB at a time.
        let mut script = vec![
            Event::Accept { room: 3000 },
            Event::Send { conn: 0, bytes: 1 },
        ];
        script.extend((0..3).map(|_| Event::Read {
            conn: 0,
            bytes: 3000,
        }));
        let mock = play(spec(Kind::Rr, (1, 10_000)), script);
        assert_eq!(stats(&mock), (1, 1, 1, 10_000, 0));
        let sends: Vec<Call> = mock.conns[0]
            .socket
            .calls
            .iter()
            .copied()
            .filter(|c| matches!(c, Call::Send(_) | Call::WouldBlock))
            .collect();
        // Each short send waits for the writable edge; nothing is retried
        // into a full buffer; the last 1 kB completes the transaction.
        let want = [3000, 3000, 3000, 1000].map(Call::Send);
        assert_eq!(sends, want);
        // The transaction counts only once the whole answer is out.
        let early = play(
            spec(Kind::Rr, (1, 10_000)),
            vec![
                Event::Accept { room: 3000 },
                Event::Send { conn: 0, bytes: 1 },
            ],
        );
        assert_eq!(stats(&early), (1, 0, 1, 3000, 0));
    }

    #[test]
    fn a_full_send_buffer_waits_without_booking() {
        // A writable edge that brings no room (spurious) finds the buffer
        // still full: the machine waits again, nothing booked.
        let script = vec![
            Event::Accept { room: 0 },
            Event::Send { conn: 0, bytes: 1 },
            Event::Read { conn: 0, bytes: 0 },
        ];
        let mock = play(spec(Kind::Rr, (1, 1)), script);
        assert_eq!(stats(&mock), (1, 0, 1, 0, 0));
        let calls = &mock.conns[0].socket.calls;
        assert_eq!(calls, &[Call::Recv(1), Call::WouldBlock, Call::WouldBlock]);
        assert_eq!(mock.conns[0].closed, None);
    }

    #[test]
    fn stream_answers_leave_in_chunks_and_stream_requests_arrive_in_them() {
        // STR get: 1 B asks for 2 MB, sent in 16 full chunks per answer.
        let answer = 2 << 20;
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(requests(0, 3, 1, answer));
        let mock = play(spec(Kind::Str, (1, answer)), script);
        assert_eq!(stats(&mock), (1, 3, 3, 3 * answer, 0));
        let sends = mock.conns[0]
            .socket
            .calls
            .iter()
            .filter(|c| **c == Call::Send(IO_CHUNK_BYTES));
        assert_eq!(sends.count() as u64, 3 * answer / CHUNK);
        // STR put: 2 MB arrive in 300 kB pieces, each read in chunks until
        // the piece is drained; one 1 B answer per request.
        let request = 2 << 20;
        let mut script = vec![Event::Accept { room: ROOMY }];
        for _ in 0..3 {
            let mut left = request;
            while left > 0 {
                let bytes = left.min(300_000);
                script.push(Event::Send { conn: 0, bytes });
                left -= bytes;
            }
            script.push(Event::Read { conn: 0, bytes: 1 });
        }
        let mock = play(spec(Kind::Str, (request, 1)), script);
        assert_eq!(stats(&mock), (1, 3, 3 * request, 3, 0));
        let calls = &mock.conns[0].socket.calls;
        let sends = calls.iter().filter(|c| matches!(c, Call::Send(_))).count();
        assert_eq!(sends, 3);
        // A piece ends with a short receive (drained): no receive ever blocks.
        assert!(!calls.contains(&Call::WouldBlock), "{calls:?}");
    }

    #[test]
    fn crr_ends_the_connection_the_way_its_close_mode_says() {
        // (mode, the client's goodbye after its answer, closed by the server
        // at the answer's end)
        for (close, goodbye, server_closes) in [
            (CrrClose::Server, None, true),
            (CrrClose::Client, Some(Event::Eof { conn: 0 }), false),
            (CrrClose::Abort, Some(Event::Reset { conn: 0 }), false),
        ] {
            let mut script = vec![Event::Accept { room: ROOMY }];
            script.extend(requests(0, 1, 64, 8000));
            script.extend(goodbye);
            let mock = play(crr(close), script);
            assert_eq!(stats(&mock), (1, 1, 64, 8000, 0), "{close:?}");
            let conn = &mock.conns[0];
            assert_eq!(conn.closed, Some(false), "{close:?}");
            // A server close comes right after the answer, before any goodbye.
            let after_answer = conn.socket.calls.last() == Some(&Call::Send(8000));
            assert_eq!(
                after_answer, server_closes,
                "{close:?} {:?}",
                conn.socket.calls
            );
        }
        // A reset outside CRR is an error.
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(requests(0, 1, 1, 1));
        script.push(Event::Reset { conn: 0 });
        let mock = play(spec(Kind::Rr, (1, 1)), script);
        assert_eq!(stats(&mock), (1, 1, 1, 1, 1));
        assert_eq!(mock.conns[0].closed, Some(true));
    }

    #[test]
    fn many_crr_connections_book_one_transaction_each() {
        let mut script = Vec::new();
        for conn in 0..50 {
            script.push(Event::Accept { room: ROOMY });
            script.extend(requests(conn, 1, 64, 8000));
            script.push(Event::Eof { conn });
        }
        let mock = play(crr(CrrClose::Client), script);
        assert_eq!(stats(&mock), (50, 50, 50 * 64, 50 * 8000, 0));
        assert!(mock.conns.iter().all(|c| c.closed == Some(false)));
    }

    #[test]
    fn interleaved_connections_keep_their_own_state() {
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Accept { room: ROOMY },
            Event::Send { conn: 0, bytes: 50 },
            Event::Send {
                conn: 1,
                bytes: 100,
            },
            Event::Send { conn: 0, bytes: 50 },
            Event::Eof { conn: 1 },
        ];
        let mock = play(spec(Kind::Rr, (100, 9)), script);
        assert_eq!(stats(&mock), (2, 2, 200, 18, 0));
        let calls = |conn: usize| mock.conns[conn].socket.calls.clone();
        assert_eq!(calls(0), [Call::Recv(50), Call::Recv(50), Call::Send(9)]);
        assert_eq!(calls(1), [Call::Recv(100), Call::Send(9), Call::Recv(0)]);
        assert_eq!(
            (mock.conns[0].closed, mock.conns[1].closed),
            (None, Some(false))
        );
    }

    #[test]
    fn the_end_of_stream_mid_request_is_an_error() {
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Send { conn: 0, bytes: 40 },
            Event::Eof { conn: 0 },
        ];
        let mock = play(spec(Kind::Rr, (100, 1)), script);
        assert_eq!(stats(&mock), (1, 0, 40, 0, 1));
        assert_eq!(mock.conns[0].closed, Some(true));
        // Events after the close find nothing to drive.
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Eof { conn: 0 },
            Event::Send {
                conn: 0,
                bytes: 100,
            },
        ];
        let mock = play(spec(Kind::Rr, (100, 1)), script);
        assert_eq!(stats(&mock), (1, 0, 0, 0, 0));
        assert_eq!(mock.conns[0].socket.calls, [Call::Recv(0)]);
    }

    #[test]
    fn a_corked_answer_is_corked_from_its_first_byte_to_its_last() {
        let socket = SocketOptions {
            cork: true,
            ..SocketOptions::default()
        };
        let answer = 3 * CHUNK + 10;
        // Room for a chunk and a half at a time, two answers.
        let room = CHUNK + CHUNK / 2;
        let mut script = vec![Event::Accept { room }];
        for _ in 0..2 {
            script.push(Event::Send { conn: 0, bytes: 1 });
            let mut left = answer;
            while left > 0 {
                script.push(Event::Read {
                    conn: 0,
                    bytes: left.min(room),
                });
                left -= left.min(room);
            }
        }
        let mock = play(spec_with(Kind::Rr, (1, answer), socket), script);
        assert_eq!(stats(&mock), (1, 2, 2, 2 * answer, 0));
        let calls = &mock.conns[0].socket.calls;
        // Each answer: corked before its first send, uncorked right after
        // its last, never in between (a short send keeps the cork).
        let corks: Vec<(usize, Call)> = calls
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, c)| matches!(c, Call::Cork(_)))
            .collect();
        let on_off: Vec<Call> = corks.iter().map(|(_, c)| *c).collect();
        assert_eq!(on_off, [true, false, true, false].map(Call::Cork));
        for pair in corks.chunks(2) {
            let sent: u64 = calls[pair[0].0..pair[1].0]
                .iter()
                .map(|c| match c {
                    Call::Send(n) => *n as u64,
                    _ => 0,
                })
                .sum();
            assert_eq!(sent, answer);
        }
        assert_eq!(mock.conns[0].socket.uncorked_bytes, 0);
        assert!(!mock.conns[0].socket.corked);
    }

    #[test]
    fn quickack_is_rearmed_after_every_receive() {
        let socket = SocketOptions {
            quickack: true,
            ..SocketOptions::default()
        };
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(requests(0, 4, 10, 10));
        let mock = play(spec_with(Kind::Rr, (10, 10), socket), script);
        let calls = &mock.conns[0].socket.calls;
        let want: Vec<Call> = (0..4)
            .flat_map(|_| [Call::Recv(10), Call::Quickack, Call::Send(10)])
            .collect();
        assert_eq!(calls, &want);
    }

    #[test]
    fn tls_handshakes_and_key_updates_are_counted() {
        let handshake = Handshake {
            ns: 1,
            resumed: false,
            version: "1.3",
            cipher: 0x1301,
            cipher_name: "TLS_AES_128_GCM_SHA256",
            cpu_ns: 5000,
            ktls: false,
            alpn: None,
        };
        let mut script = vec![
            Event::Accept { room: ROOMY },
            Event::Handshake { conn: 0, handshake },
        ];
        script.extend(requests(0, 1, 1, 1));
        script.push(Event::Rekey { conn: 0 });
        script.extend(requests(0, 1, 1, 1));
        let mock = play(spec(Kind::Rr, (1, 1)), script);
        let s = &mock.test.stats;
        assert_eq!((s.tls_full_handshakes, s.tls_full_cpu_ns), (1, 5000));
        assert_eq!((s.tls_resumed_handshakes, s.tls_rekeys), (0, 1));
        assert_eq!(s.transactions, 2);
    }

    #[test]
    fn the_mock_is_a_backend_like_the_others() {
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(requests(0, 3, 5, 6));
        let mock = Mock::<Raw>::new(spec(Kind::Rr, (5, 6)), script);
        assert_eq!(mock.claims().name, "mock");
        let stats = Backend::run(mock);
        assert_eq!(stats.len(), 1);
        assert_eq!((stats[0].0, stats[0].1.transactions), (1, 3));
        assert_eq!((stats[0].1.rx_bytes, stats[0].1.tx_bytes), (15, 18));
    }

    /// An HTTP/1.1 test of `kind`, its notation sizes (request, response).
    fn http1(kind: Kind, sizes: (u64, u64)) -> TestSpec {
        TestSpec {
            protocol: AppProtocol::Http1,
            ..spec(kind, sizes)
        }
    }

    /// Plays `script` for an HTTP/1.1 `spec`.
    fn play_http1(spec: TestSpec, script: Vec<Event>) -> Mock<http1::Http1> {
        let mut mock = Mock::new(spec, script);
        mock.play();
        mock
    }

    /// This responder's answer head for a body of `body` bytes.
    fn ok_head(body: u64, close: bool) -> String {
        let close = if close { "Connection: close\r\n" } else { "" };
        format!("HTTP/1.1 200 OK\r\nContent-Length: {body}\r\n{close}\r\n")
    }

    #[test]
    fn http1_a_head_split_across_reads_is_answered_once_whole() {
        const FIRST: &[u8] = b"GET /5 HTTP/1.1\r\nHo";
        const REST: &[u8] = b"st: responder\r\n\r\n";
        let head = ok_head(5, false);
        let answer = head.len() + 5;
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Write {
                conn: 0,
                data: FIRST,
            },
            Event::Write {
                conn: 0,
                data: REST,
            },
            Event::Read {
                conn: 0,
                bytes: answer as u64,
            },
            Event::Write {
                conn: 0,
                data: FIRST,
            },
            Event::Write {
                conn: 0,
                data: REST,
            },
        ];
        let mock = play_http1(http1(Kind::Rr, (100, 100)), script);
        let request = (FIRST.len() + REST.len()) as u64;
        let answer = answer as u64;
        assert_eq!(stats(&mock), (1, 2, 2 * request, 2 * answer, 0));
        let conn = &mock.conns[0];
        // Half a head is no request: the machine waits for the rest, then
        // answers with the length the path named.
        let one = [
            Call::Recv(FIRST.len()),
            Call::Recv(REST.len()),
            Call::Send(answer as usize),
        ];
        assert_eq!(conn.socket.calls, [one, one].concat());
        assert_eq!(conn.socket.wire.len() as u64, 2 * answer);
        assert!(conn.socket.wire.starts_with(head.as_bytes()));
        assert_eq!(conn.closed, None);
        // The end of stream after part of a head is mid-request: an error
        // (a framed request's bytes left are no count of what arrived).
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Write {
                conn: 0,
                data: FIRST,
            },
            Event::Eof { conn: 0 },
        ];
        let mock = play_http1(http1(Kind::Rr, (100, 100)), script);
        assert_eq!(mock.conns[0].closed, Some(true));
        assert_eq!(mock.test.stats.errors, 1);
    }

    #[test]
    fn http1_a_content_length_body_is_read_before_the_answer() {
        const HEAD: &[u8] = b"POST /300000 HTTP/1.1\r\nContent-Length: 1000\r\n\r\n";
        // An answer longer than two writes: its head leads the first one.
        let body = 300_000;
        let head = ok_head(body, false);
        let answer = head.len() as u64 + body;
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Write {
                conn: 0,
                data: HEAD,
            },
            Event::Send {
                conn: 0,
                bytes: 600,
            },
        ];
        let early = play_http1(http1(Kind::Rr, (100, 100)), script.clone());
        assert_eq!(early.test.stats.transactions, 0);
        assert!(
            !early.conns[0]
                .socket
                .calls
                .iter()
                .any(|c| matches!(c, Call::Send(_))),
            "answered before the body was in: {:?}",
            early.conns[0].socket.calls
        );
        let mut script = script;
        script.push(Event::Send {
            conn: 0,
            bytes: 400,
        });
        let mock = play_http1(http1(Kind::Rr, (100, 100)), script);
        let request = HEAD.len() as u64 + 1000;
        assert_eq!(stats(&mock), (1, 1, request, answer, 0));
        let wire = &mock.conns[0].socket.wire;
        assert_eq!(wire.len() as u64, answer);
        assert!(wire.starts_with(head.as_bytes()), "{:?}", &wire[..60]);
        let sends: Vec<Call> = mock.conns[0]
            .socket
            .calls
            .iter()
            .copied()
            .filter(|c| matches!(c, Call::Send(_)))
            .collect();
        let chunk = IO_CHUNK_BYTES;
        let tail = answer as usize - 2 * chunk;
        assert_eq!(
            sends,
            [Call::Send(chunk), Call::Send(chunk), Call::Send(tail)]
        );
        // Answered, the connection waits for its next request.
        assert_eq!(mock.conns[0].closed, None);
    }

    #[test]
    fn http1_connection_close_closes_after_the_answer() {
        const CLOSE: &[u8] = b"GET /10 HTTP/1.1\r\nConnection: close\r\n\r\n";
        const KEEP: &[u8] = b"GET /10 HTTP/1.1\r\n\r\n";
        for (request, closes) in [(CLOSE, true), (KEEP, false)] {
            let script = vec![
                Event::Accept { room: ROOMY },
                Event::Write {
                    conn: 0,
                    data: request,
                },
            ];
            // RR, so it is the request alone that closes (not a CRR server
            // close).
            let mock = play_http1(http1(Kind::Rr, (100, 100)), script);
            let head = ok_head(10, closes);
            let answer = head.len() as u64 + 10;
            let conn = &mock.conns[0];
            assert_eq!(
                stats(&mock),
                (1, 1, request.len() as u64, answer, 0),
                "{closes}"
            );
            assert!(conn.socket.wire.starts_with(head.as_bytes()));
            let want = closes.then_some(false);
            assert_eq!(conn.closed, want, "{closes}");
            assert_eq!(conn.socket.calls.last(), Some(&Call::Send(answer as usize)));
        }
    }

    #[test]
    fn http1_a_malformed_request_closes_as_an_error() {
        const BAD: &[u8] = b"GET /1 HTTP/1.1\r\nNo colon here\r\n\r\n";
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Accept { room: ROOMY },
            Event::Write { conn: 0, data: BAD },
            Event::Write {
                conn: 1,
                data: b"GET /1 HTTP/1.1\r\n\r\n",
            },
        ];
        let mock = play_http1(http1(Kind::Rr, (100, 100)), script);
        // Refused, never answered, counted as an error; the other
        // connection is served as usual.
        assert_eq!(mock.conns[0].closed, Some(true));
        assert_eq!(mock.conns[0].socket.calls, [Call::Recv(BAD.len())]);
        assert_eq!(mock.conns[1].closed, None);
        let s = &mock.test.stats;
        assert_eq!((s.connections, s.transactions, s.errors), (2, 1, 1));
    }

    /// A TN3270 test of `kind`, its notation sizes (request, response).
    fn tn3270(kind: Kind, sizes: (u64, u64)) -> TestSpec {
        TestSpec {
            protocol: AppProtocol::Tn3270,
            ..spec(kind, sizes)
        }
    }

    /// Plays `script` for a TN3270 `spec`.
    fn play_tn3270(spec: TestSpec, script: Vec<Event>) -> Mock<tn3270::row::Tn3270> {
        let mut mock = Mock::new(spec, script);
        mock.play();
        mock
    }

    /// A terminal's answers, turn by turn: refuses TN3270E, agrees to
    /// TERMINAL-TYPE, names itself (in two pieces), agrees to EOR and
    /// BINARY both ways.
    const WONT_TN3270E: &[u8] = &[0xFF, 0xFC, 40];
    const WILL_TTYPE: &[u8] = &[0xFF, 0xFB, 24];
    const IS_FIRST: &[u8] = &[0xFF, 0xFA, 24, 0, b'I', b'B', b'M', b'-'];
    const IS_REST: &[u8] = b"3278-2-E\xFF\xF0";
    const MODES: &[u8] = &[0xFF, 0xFB, 25, 0xFF, 0xFD, 25, 0xFF, 0xFB, 0, 0xFF, 0xFD, 0];
    /// An Enter record of 10 bytes, and one of 12 whose data holds a
    /// doubled 0xFF.
    const ENTER: &[u8] = &[0x7D, 0xC1, 0x5A, 0x11, 0xC1, 0x50, 0xC1, 0xC1, 0xFF, 0xEF];
    const ENTER_IAC: &[u8] = &[
        0x7D, 0xC1, 0x5A, 0x11, 0xC1, 0x50, 0xFF, 0xFF, 0xEF, 0xC1, 0xFF, 0xEF,
    ];

    fn write(conn: usize, data: &'static [u8]) -> Event {
        Event::Write { conn, data }
    }

    /// The negotiation of connection `conn`, the terminal's side.
    fn logon(conn: usize) -> Vec<Event> {
        [WONT_TN3270E, WILL_TTYPE, IS_FIRST, IS_REST, MODES]
            .into_iter()
            .map(|data| write(conn, data))
            .collect()
    }

    #[test]
    fn tn3270_the_server_negotiates_first_then_answers_each_record() {
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(logon(0));
        script.extend([
            write(0, ENTER),
            write(0, &ENTER[..4]),
            write(0, &ENTER[4..]),
        ]);
        let mock = play_tn3270(tn3270(Kind::Rr, (10, 800)), script);
        let conn = &mock.conns[0];
        // The server speaks first, each answer is one send, the first
        // screen ends the setup; then one answer per whole record.
        let screen = 37;
        // Each turn waits for the other side's edge: no call says EAGAIN.
        let setup = [
            Call::Send(3),
            Call::Recv(3),
            Call::Send(3),
            Call::Recv(3),
            Call::Send(6),
            Call::Recv(IS_FIRST.len()),
            Call::Recv(IS_REST.len()),
            Call::Send(12),
            Call::Recv(12),
            Call::Send(screen),
        ];
        let records = [
            Call::Recv(10),
            Call::Send(800),
            Call::Recv(4),
            Call::Recv(6),
            Call::Send(800),
        ];
        assert_eq!(conn.socket.calls, [&setup[..], &records[..]].concat());
        assert_eq!(conn.closed, None);
        let rx = (3 + 3 + IS_FIRST.len() + IS_REST.len() + 12 + 10 + 10) as u64;
        let tx = (3 + 3 + 6 + 12 + screen + 1600) as u64;
        assert_eq!(stats(&mock), (1, 2, rx, tx, 0));
        let wire = &conn.socket.wire;
        assert!(
            wire.starts_with(&[0xFF, 0xFD, 40, 0xFF, 0xFD, 24]),
            "{wire:?}"
        );
        // The first screen and every answer are Erase/Write records.
        let screen_at = 24;
        assert_eq!(wire[screen_at], 0xF5);
        assert_eq!(
            &wire[screen_at + screen - 2..screen_at + screen],
            &[0xFF, 0xEF]
        );
        assert_eq!(wire[screen_at + screen], 0xF5);
        assert_eq!(&wire[wire.len() - 2..], &[0xFF, 0xEF]);
    }

    #[test]
    fn tn3270_a_doubled_iac_in_a_record_is_data() {
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(logon(0));
        script.extend([write(0, ENTER_IAC), write(0, ENTER)]);
        let mock = play_tn3270(tn3270(Kind::Rr, (12, 100)), script);
        assert_eq!(mock.test.stats.transactions, 2);
        assert_eq!(mock.conns[0].closed, None);
    }

    #[test]
    fn tn3270_a_record_before_the_negotiation_ends_closes_as_an_error() {
        let script = vec![
            Event::Accept { room: ROOMY },
            Event::Accept { room: ROOMY },
            write(0, ENTER),
            Event::Eof { conn: 1 },
        ];
        let mock = play_tn3270(tn3270(Kind::Rr, (10, 100)), script);
        // Refused (no terminal sends data before its screen), never
        // answered; a terminal that leaves mid-negotiation (or a port
        // probe) had no transaction under way: closed, not an error.
        assert_eq!(mock.conns[0].closed, Some(true));
        assert_eq!(mock.conns[1].closed, Some(false));
        let s = &mock.test.stats;
        assert_eq!((s.connections, s.transactions, s.errors), (2, 0, 1));
        // Two records in one write: not pipelined, refused.
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(logon(0));
        script.push(write(0, b"\x7D\xC1\x5A\xFF\xEF\x7D\xC1\x5A\xFF\xEF"));
        let mock = play_tn3270(tn3270(Kind::Rr, (5, 100)), script);
        assert_eq!(mock.conns[0].closed, Some(true));
        assert_eq!(mock.test.stats.transactions, 0);
    }

    /// A client that closes with the server's first negotiation bytes
    /// unread makes its kernel reset (a port probe does): during the logon
    /// that is a goodbye like an end of stream, not an error; after it, an
    /// RR connection's reset still is one.
    #[test]
    fn tn3270_a_reset_during_the_logon_is_no_error() {
        let mut script = vec![
            Event::Accept { room: ROOMY },
            Event::Reset { conn: 0 },
            Event::Accept { room: ROOMY },
        ];
        script.extend(logon(1));
        script.push(Event::Reset { conn: 1 });
        let mock = play_tn3270(tn3270(Kind::Rr, (10, 100)), script);
        assert_eq!(mock.conns[0].closed, Some(false));
        assert_eq!(mock.conns[1].closed, Some(true));
        let s = &mock.test.stats;
        assert_eq!((s.connections, s.transactions, s.errors), (2, 0, 1));
    }

    #[test]
    fn tn3270_crr_server_close_ends_after_the_first_answer() {
        let socket = SocketOptions {
            crr_close: CrrClose::Server,
            ..SocketOptions::default()
        };
        let spec = TestSpec {
            protocol: AppProtocol::Tn3270,
            ..spec_with(Kind::Crr, (10, 800), socket)
        };
        let mut script = vec![Event::Accept { room: ROOMY }];
        script.extend(logon(0));
        script.push(write(0, ENTER));
        let mock = play_tn3270(spec, script);
        // The first screen is no transaction: the connection closes after
        // the record's answer, not the screen.
        assert_eq!(mock.test.stats.transactions, 1);
        assert_eq!(mock.conns[0].closed, Some(false));
        assert_eq!(mock.conns[0].socket.calls.last(), Some(&Call::Send(800)));
    }
}
