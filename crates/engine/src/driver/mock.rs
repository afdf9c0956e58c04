//! The mock backend (tests only): drives the driver's state machine
//! ([`super::machine`]) with scripted I/O in virtual time, no sockets. The
//! responder it stands for answers every request, after a fixed service
//! time, with the whole response; sends and receives move at most one
//! chunk each, as on a socket. Time moves only from one scripted event (a
//! response due, a server FIN) or timer deadline to the next, so every
//! latency, wait and count the machine books is known exactly — the idea of
//! hyperfine's mock executor (src/benchmark/executor.rs: a `MockExecutor`
//! behind its `Executor` trait that returns scripted times instead of
//! running commands), applied to a connection's I/O.
//!
//! The tests below pin what the machine books for RR, CRR, STR, think time,
//! the open loop and the stop conditions (a transaction count, the window's
//! end), and a failed connect; with a framed codec (`http1`), the scripted
//! responder's answer is bytes ([`Script::answer`]) the codec parses, split
//! across receives as the chunk size says.

use std::cell::Cell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::rc::Rc;
use std::time::Instant;

use stackbench_model::{AmqpParams, H2Params, Kind, SocketOptions};

use super::accum::ClassAccum;
use super::clock::{Timing, Window};
use super::machine::{ClassPlan, Clock, Got, Machine, Next, Phase, Sent};
use super::worker::Backend;
use crate::app::{Codec, Raw};
use crate::iomode::Claims;

/// What the mock covers: every kind and pacing, framed protocols too (its
/// script holds the answer's bytes), over no real transport.
pub(super) const MOCK: Claims = Claims {
    name: "mock",
    covers: |_| false,
    ramp: true,
    paced: true,
    kinds: &[Kind::Rr, Kind::Crr, Kind::Str],
    framed: true,
};

/// Virtual time, shared by the mock and its machine.
#[derive(Debug, Clone, Default)]
pub(super) struct Virtual(Rc<Cell<u64>>);

impl Clock for Virtual {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
}

/// The mock's stand-in for a socket.
#[derive(Debug)]
pub(super) struct MockConn;

/// What the scripted responder and network do.
#[derive(Debug, Clone, Copy)]
pub(super) struct Script {
    /// From a request's last byte sent to its whole response received.
    pub service_ns: u64,
    /// Most bytes one send or receive moves.
    pub chunk: usize,
    /// The measurement window: warm-up end and end (`None`: counts only).
    pub warmup_end_ns: u64,
    pub end_ns: Option<u64>,
    /// The first connect of every client is refused.
    pub refuse_first_connect: bool,
    /// A framed codec: the bytes of every response (an unframed one is
    /// counted, never read). The scripted server sends no more than these.
    pub answer: &'static [u8],
}

impl Default for Script {
    fn default() -> Script {
        Script {
            service_ns: 1_000_000,
            chunk: 64 * 1024,
            warmup_end_ns: 0,
            end_ns: Some(1_000_000_000),
            refuse_first_connect: false,
            answer: &[],
        }
    }
}

/// A scripted event on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Due {
    /// The whole response is there to receive.
    Response,
    /// The server closed (CRR, server closes first).
    Fin,
}

/// One worker's clients on the mock backend, speaking protocol `P`.
pub(super) struct Mock<'a, P: Codec = Raw> {
    pub m: Machine<'a, MockConn, Virtual, P>,
    time: Virtual,
    script: Script,
    window: Window,
    due: BinaryHeap<Reverse<(u64, usize, Due)>>,
    /// Connections opened, sends and receives made, connects refused.
    pub connects: u64,
    pub sends: u64,
    pub receives: u64,
    refused: u64,
    refused_keys: Vec<usize>,
}

impl<'a> Mock<'a, Raw> {
    /// A mock worker for `clients` (class, quota) of `classes`, all
    /// arriving at once.
    pub fn new(classes: &'a [ClassPlan], socket: SocketOptions, script: Script) -> Mock<'a> {
        Mock::speaking(classes, socket, script)
    }
}

impl<'a, P: Codec> Mock<'a, P> {
    /// [`Mock::new`] with codec `P`.
    pub fn speaking(
        classes: &'a [ClassPlan],
        socket: SocketOptions,
        script: Script,
    ) -> Mock<'a, P> {
        let time = Virtual::default();
        let m = Machine::new(
            classes,
            socket,
            time.clone(),
            Timing::new(Instant::now()),
            8,
            0,
            (&AmqpParams::default(), H2Params::default()),
        );
        Mock {
            m,
            time,
            script,
            window: Window::default(),
            due: BinaryHeap::new(),
            connects: 0,
            sends: 0,
            receives: 0,
            refused: 0,
            refused_keys: Vec::new(),
        }
    }

    /// Adds client `index` of `class` with `quota` transactions to count.
    pub fn client(&mut self, class: u16, quota: u64, index: u64) {
        let (key, next) = self.m.add(class, quota, super::pace::rng_for(1, index), 0);
        self.act(key, next);
    }

    /// Opens the window at the current (virtual) time and runs until the
    /// machine is done or nothing is left to happen; returns what it booked
    /// and what the mock did.
    pub fn run_counted(mut self) -> (Vec<ClassAccum>, Counts) {
        self.window
            .open(self.script.warmup_end_ns, self.script.end_ns);
        for turn in 0.. {
            // A machine that never finishes is a failure, not a hang.
            assert!(turn < 10_000_000, "the mock run does not end");
            if let Some(parked) = self.m.refresh_window(&self.window) {
                for key in parked {
                    let next = self.m.release(key as usize);
                    self.act(key as usize, next);
                }
            }
            let now = self.m.now_ns();
            if self.m.done(now) {
                break;
            }
            let event = self.due.peek().map(|Reverse(e)| *e);
            let timer = self.m.timers.next_deadline();
            let event_first = match (event, timer) {
                (None, None) => break,
                (Some((t, _, _)), Some(d)) => t <= d,
                (e, _) => e.is_some(),
            };
            match (event, timer) {
                (Some((t, key, what)), _) if event_first => {
                    self.due.pop();
                    self.time.0.set(t.max(now));
                    self.on_due(key, what);
                }
                (_, Some(d)) => {
                    self.time.0.set(d.max(now));
                    self.m.advance_timers();
                    while let Some((key, next)) = self.m.next_fired() {
                        self.act(key, next);
                    }
                }
                _ => unreachable!("one of them is due"),
            }
        }
        let counts = Counts {
            connects: self.connects,
            sends: self.sends,
            receives: self.receives,
            refused: self.refused,
            end_ns: self.m.now_ns(),
        };
        (self.m.take_accum(), counts)
    }

    /// Carries out what the machine asked for client `key`.
    fn act(&mut self, key: usize, next: Next) {
        match next {
            Next::Idle => {}
            Next::Attach => {
                if !self.connect(key) {
                    return;
                }
                self.m.mark_connected(key);
                let next = self.m.attached(key);
                self.act(key, next);
            }
            Next::Open => {
                let started = self.m.now_ns();
                if !self.connect(key) {
                    return;
                }
                self.m.begin_request(key, started);
                self.m.mark_connected(key);
                self.drive(key);
            }
            Next::Drive => self.drive(key),
        }
    }

    /// A connect: refused once per client when the script says so.
    fn connect(&mut self, key: usize) -> bool {
        self.connects += 1;
        if self.script.refuse_first_connect && !self.refused_keys.contains(&key) {
            self.refused_keys.push(key);
            self.refused += 1;
            self.m.fail(key, &io::ErrorKind::ConnectionRefused.into());
            return false;
        }
        self.m.conns[key].stream = Some(MockConn);
        true
    }

    /// Sends the whole request, chunk by chunk; the response is due one
    /// service time after its last byte.
    fn drive(&mut self, key: usize) {
        let Some(conn) = self.m.conns.get(key) else {
            return;
        };
        match conn.phase {
            Phase::Sending => loop {
                let want = self.m.conns[key].remaining.min(self.script.chunk as u64) as usize;
                self.sends += 1;
                match self.m.sent(key, want, want) {
                    Sent::More => {}
                    Sent::Done => {
                        let at = self.m.now_ns() + self.script.service_ns;
                        self.due.push(Reverse((at, key, Due::Response)));
                        return;
                    }
                    Sent::Blocked => unreachable!("the mock takes every chunk whole"),
                }
            },
            Phase::AwaitEof => {
                let at = self.m.now_ns();
                self.due.push(Reverse((at, key, Due::Fin)));
            }
            _ => {}
        }
    }

    fn on_due(&mut self, key: usize, what: Due) {
        let Some(conn) = self.m.conns.get(key) else {
            return;
        };
        match (what, conn.phase) {
            (Due::Response, Phase::Receiving) => {
                let mut offset = 0;
                loop {
                    let mut want =
                        self.m.conns[key].remaining.min(self.script.chunk as u64) as usize;
                    let answer = self.script.answer;
                    if P::FRAMED {
                        want = want.min(answer.len() - offset);
                        if want == 0 {
                            // The scripted server sent all it had.
                            return;
                        }
                    }
                    let bytes = if P::FRAMED {
                        &answer[offset..offset + want]
                    } else {
                        &[]
                    };
                    offset += want;
                    if self.receive(key, want, bytes).is_none() {
                        return;
                    }
                }
            }
            (Due::Fin, Phase::AwaitEof) => {
                let next = self.m.closed(key);
                self.act(key, next);
            }
            _ => {}
        }
    }

    /// One receive of `n` bytes (`bytes`, framed); `None` when the response
    /// is over (what follows carried out).
    fn receive(&mut self, key: usize, n: usize, bytes: &[u8]) -> Option<()> {
        self.receives += 1;
        match self.m.received(key, n, bytes, None) {
            Got::More => Some(()),
            Got::Next => {
                self.drive(key);
                None
            }
            Got::Stop => None,
            // The mock's protocols open no data connections (`Codec::DATA`).
            Got::OpenData(_) => None,
            Got::Close { .. } => {
                let next = self.m.closed(key);
                self.act(key, next);
                None
            }
        }
    }
}

impl<P: Codec> Backend for Mock<'_, P> {
    fn claims(&self) -> &'static Claims {
        &MOCK
    }

    /// As [`Mock::run_counted`]; `abort` is not looked at (the run ends in
    /// virtual time).
    fn run(self, _abort: &std::sync::atomic::AtomicBool) -> Vec<ClassAccum> {
        self.run_counted().0
    }
}

/// What the mock did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counts {
    pub connects: u64,
    pub sends: u64,
    pub receives: u64,
    pub refused: u64,
    /// Virtual time when the run stopped.
    pub end_ns: u64,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use stackbench_model::{CrrClose, ThinkTime};

    use super::super::pace::Pace;
    use super::*;
    use crate::app::Raw;

    const MS: u64 = 1_000_000;

    fn plan(kind: Kind, request_bytes: u64, response_bytes: u64, pace: Pace) -> ClassPlan {
        ClassPlan {
            kind,
            app: Raw {
                request: request_bytes,
                response: response_bytes,
            },
            pace,
            priority: None,
            target: None,
            tn3270: Default::default(),
        }
    }

    /// Runs `clients` clients of `plan` with `quota` each under `script`.
    fn run(plan: ClassPlan, clients: u64, quota: u64, script: Script) -> (ClassAccum, Counts) {
        run_with(plan, clients, quota, script, SocketOptions::default())
    }

    fn run_with(
        plan: ClassPlan,
        clients: u64,
        quota: u64,
        script: Script,
        socket: SocketOptions,
    ) -> (ClassAccum, Counts) {
        let plans = [plan];
        let mut mock = Mock::new(&plans, socket, script);
        for i in 0..clients {
            mock.client(0, quota, i);
        }
        let (mut accum, counts) = mock.run_counted();
        (accum.remove(0), counts)
    }

    /// Latencies recorded within ±1 µs of `ns` (the histogram keeps 3
    /// significant digits).
    fn near(acc: &ClassAccum, ns: u64) -> u64 {
        acc.hist.count_between_ns(ns - 1_000, ns + 1_000)
    }

    #[test]
    fn rr_closed_loop_books_every_transaction_of_the_window() {
        let (acc, counts) = run(
            plan(Kind::Rr, 100, 200, Pace::Closed),
            2,
            u64::MAX,
            Script::default(),
        );
        // Two clients, 1 ms per transaction, a 1 s window: sends at 0, 1, …
        // 999 ms each; the ones sent at 999 ms complete at the window's end,
        // which is outside it.
        assert_eq!(acc.transactions, 2 * 999);
        assert_eq!(acc.hist.count(), 2 * 999);
        assert_eq!(near(&acc, MS), 2 * 999);
        assert_eq!(acc.tx_bytes, 2 * 1_000 * 100);
        assert_eq!(acc.rx_bytes, 2 * 999 * 200);
        assert_eq!(acc.connected, 2);
        assert_eq!(counts.connects, 2);
        assert_eq!(counts.end_ns, 1_000 * MS);
        assert_eq!(acc.per_second, vec![2 * 999]);
        assert!(acc.lag.is_none() && acc.uncorrected.is_none());
    }

    #[test]
    fn warm_up_is_not_counted() {
        let script = Script {
            warmup_end_ns: 500 * MS,
            ..Script::default()
        };
        let (acc, _) = run(plan(Kind::Rr, 1, 1, Pace::Closed), 1, u64::MAX, script);
        // Completions at 500 … 999 ms count; the one at 1 s does not.
        assert_eq!(acc.transactions, 500);
        assert_eq!(acc.rx_bytes, 500);
        assert_eq!(acc.tx_bytes, 500);
    }

    #[test]
    fn str_receives_a_long_response_in_chunks() {
        let script = Script {
            service_ns: 10 * MS,
            end_ns: Some(100 * MS),
            ..Script::default()
        };
        let (acc, counts) = run(
            plan(Kind::Str, 1, 1 << 20, Pace::Closed),
            1,
            u64::MAX,
            script,
        );
        // 10 ms per 1 MiB response: completions at 10 … 90 ms count.
        assert_eq!(acc.transactions, 9);
        assert_eq!(acc.rx_bytes, 9 << 20);
        assert_eq!(near(&acc, 10 * MS), 9);
        // Sixteen 64 KiB receives per response, the tenth response included.
        assert_eq!(counts.receives, 10 * 16);
    }

    #[test]
    fn a_long_request_goes_out_in_chunks() {
        let (acc, counts) = run(
            plan(Kind::Rr, 200 * 1024, 1, Pace::Closed),
            1,
            3,
            Script {
                end_ns: None,
                ..Script::default()
            },
        );
        assert_eq!(acc.transactions, 3);
        assert_eq!(acc.tx_bytes, 3 * 200 * 1024);
        assert_eq!(counts.sends, 3 * 4);
    }

    #[test]
    fn crr_connects_per_transaction_whichever_side_closes() {
        for close in [CrrClose::Client, CrrClose::Server, CrrClose::Abort] {
            let socket = SocketOptions {
                crr_close: close,
                ..SocketOptions::default()
            };
            let script = Script {
                end_ns: Some(100 * MS),
                ..Script::default()
            };
            let (acc, counts) = run_with(
                plan(Kind::Crr, 64, 8000, Pace::Closed),
                3,
                u64::MAX,
                script,
                socket,
            );
            assert_eq!(acc.transactions, 3 * 99, "{close:?}");
            assert_eq!(acc.rx_bytes, 3 * 99 * 8000, "{close:?}");
            // One connection per transaction started (at 0, 1, … 99 ms).
            // The run stops at the first event at the window's end: the
            // response it carries reconnects at once when this side closes;
            // the server's FIN, due then too, is not waited for.
            let last = u64::from(close != CrrClose::Server);
            assert_eq!(counts.connects, 3 * 100 + last, "{close:?}");
            assert_eq!(acc.connected, 3, "{close:?}");
        }
    }

    #[test]
    fn a_transaction_count_stops_each_client_at_its_quota() {
        let script = Script {
            end_ns: None,
            ..Script::default()
        };
        for kind in [Kind::Rr, Kind::Crr, Kind::Str] {
            let (acc, counts) = run(plan(kind, 10, 20, Pace::Closed), 3, 7, script);
            assert_eq!(acc.transactions, 21, "{kind:?}");
            assert_eq!(acc.tx_bytes, 21 * 10, "{kind:?}");
            // Every client done at 7 ms: the machine says so, nothing is left.
            assert_eq!(counts.end_ns, 7 * MS, "{kind:?}");
        }
    }

    #[test]
    fn think_time_waits_between_a_response_and_the_next_request() {
        let pace = Pace::Think(ThinkTime::Constant(Duration::from_millis(9)));
        let (acc, counts) = run(
            plan(Kind::Rr, 1, 1, pace),
            1,
            20,
            Script {
                end_ns: None,
                ..Script::default()
            },
        );
        assert_eq!(acc.transactions, 20);
        assert_eq!(near(&acc, MS), 20);
        // 19 waits of exactly 9 ms (the first request waits a random phase,
        // not measured as a wait), each request on time.
        assert_eq!(acc.waits, 19);
        assert_eq!(acc.wait_ns, 19 * 9 * u128::from(MS));
        let lag = acc.lag.as_ref().expect("paced classes track the lag");
        assert_eq!(lag.count(), 20);
        assert_eq!(lag.count_between_ns(0, 1_000), 20);
        assert_eq!(acc.late, 0);
        // The first request went out within one mean think time of the start.
        assert!(
            counts.end_ns <= 9 * MS + 20 * MS + 19 * 9 * MS,
            "{}",
            counts.end_ns
        );
        assert!(counts.end_ns >= 20 * MS + 19 * 9 * MS, "{}", counts.end_ns);
    }

    #[test]
    fn open_loop_keeps_its_schedule_when_the_responder_keeps_up() {
        let pace = Pace::Open {
            gap_ns: 10.0 * MS as f64,
            poisson: false,
        };
        let (acc, _) = run(
            plan(Kind::Rr, 1, 1, pace),
            1,
            50,
            Script {
                end_ns: None,
                ..Script::default()
            },
        );
        assert_eq!(acc.transactions, 50);
        // On schedule: corrected and uncorrected latency are the service time.
        assert_eq!(near(&acc, MS), 50);
        let uncorrected = acc.uncorrected.as_ref().expect("open loop");
        assert_eq!(uncorrected.count_between_ns(MS - 1_000, MS + 1_000), 50);
        assert_eq!((acc.late, acc.dropped), (0, 0));
    }

    #[test]
    fn open_loop_books_the_delay_of_a_slow_responder() {
        // A send every 10 ms, a response after 30: each request leaves 20 ms
        // later than the one before it was meant to.
        let pace = Pace::Open {
            gap_ns: 10.0 * MS as f64,
            poisson: false,
        };
        let script = Script {
            service_ns: 30 * MS,
            end_ns: None,
            ..Script::default()
        };
        let (acc, _) = run(plan(Kind::Rr, 1, 1, pace), 1, 10, script);
        assert_eq!(acc.transactions, 10);
        let uncorrected = acc.uncorrected.as_ref().expect("open loop");
        assert_eq!(
            uncorrected.count_between_ns(30 * MS - 30_000, 30 * MS + 30_000),
            10
        );
        // Corrected latency counts from the intended send: 30, 50, … 210 ms.
        assert_eq!(near(&acc, 30 * MS), 1);
        assert!(acc.hist.count_between_ns(209 * MS, 211 * MS) == 1);
        assert_eq!(acc.late, 9);
        assert_eq!(acc.dropped, 0);
    }

    #[test]
    fn the_mock_is_a_backend_like_the_others() {
        let plans = [plan(Kind::Crr, 1, 1, Pace::Closed)];
        let script = Script {
            end_ns: None,
            ..Script::default()
        };
        let mut mock = Mock::new(&plans, SocketOptions::default(), script);
        mock.client(0, 3, 0);
        assert_eq!(mock.claims().name, "mock");
        let accum = Backend::run(mock, &std::sync::atomic::AtomicBool::new(false));
        assert_eq!(accum[0].transactions, 3);
    }

    #[test]
    fn a_refused_connect_is_counted_and_retried_after_the_back_off() {
        let script = Script {
            refuse_first_connect: true,
            end_ns: None,
            ..Script::default()
        };
        let (acc, counts) = run(plan(Kind::Rr, 1, 1, Pace::Closed), 2, 5, script);
        assert_eq!(acc.errors.refused, 2);
        assert_eq!(counts.refused, 2);
        assert_eq!(counts.connects, 4);
        assert_eq!(acc.transactions, 10);
        // Reconnected after 10 ms, then five 1 ms transactions.
        assert_eq!(counts.end_ns, 15 * MS);
    }

    /// Runs `clients` http1 clients of `plan` with `quota` each, the
    /// scripted server answering `script.answer`.
    fn run_http(plan: ClassPlan, clients: u64, quota: u64, script: Script) -> (ClassAccum, Counts) {
        let plans = [plan];
        let mut mock =
            Mock::<crate::app::http1::Client>::speaking(&plans, SocketOptions::default(), script);
        for i in 0..clients {
            mock.client(0, quota, i);
        }
        let (mut accum, counts) = mock.run_counted();
        (accum.remove(0), counts)
    }

    const OK_5: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

    #[test]
    fn http1_responses_split_across_receives_complete_each_transaction() {
        let rr = plan(Kind::Rr, 100, 44, Pace::Closed);
        for chunk in [3, 16, 64 * 1024] {
            let script = Script {
                chunk,
                answer: OK_5,
                ..Script::default()
            };
            let (acc, counts) = run_http(rr, 2, 5, script);
            assert_eq!(acc.transactions, 10, "chunk {chunk}");
            assert_eq!(acc.rx_bytes, 10 * OK_5.len() as u64, "chunk {chunk}");
            assert_eq!(acc.tx_bytes, 10 * 100, "chunk {chunk}");
            assert!(acc.fault.is_none(), "{:?}", acc.fault);
            assert_eq!(counts.receives, 10 * OK_5.len().div_ceil(chunk) as u64);
            let status = acc.status.record().expect("statuses counted");
            assert_eq!(status.codes, [(200, 10)].into());
            assert_eq!(acc.errors.http_status, 0);
        }
    }

    #[test]
    fn a_non_2xx_answer_is_counted_and_the_connection_goes_on() {
        let rr = plan(Kind::Rr, 100, 44, Pace::Closed);
        let answer = b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
        for chunk in [1, 64 * 1024] {
            let script = Script {
                chunk,
                answer,
                ..Script::default()
            };
            let (acc, counts) = run_http(rr, 2, 5, script);
            assert!(acc.fault.is_none(), "{:?}", acc.fault);
            assert_eq!(acc.transactions, 10, "chunk {chunk}");
            assert_eq!(acc.rx_bytes, 10 * answer.len() as u64);
            let status = acc.status.record().expect("statuses counted");
            assert_eq!(status.codes, [(404, 10)].into());
            assert_eq!((acc.errors.http_status, acc.errors.total()), (10, 10));
            // Keep-alive: each client stayed on its one connection.
            assert_eq!(counts.connects, 2);
        }
    }

    #[test]
    fn a_server_that_says_close_is_left_and_connected_to_anew() {
        let rr = plan(Kind::Rr, 100, 44, Pace::Closed);
        // nginx closes after a 500 and says so.
        let answer = b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 4\r\n\r\noops";
        let script = Script {
            answer,
            ..Script::default()
        };
        let (acc, counts) = run_http(rr, 2, 5, script);
        assert!(acc.fault.is_none(), "{:?}", acc.fault);
        assert_eq!(acc.transactions, 10);
        // Only the statuses are errors: no request went into a closed
        // connection.
        assert_eq!((acc.errors.http_status, acc.errors.total()), (10, 10));
        // A connection per response but each client's last, which its
        // quota ends instead.
        assert_eq!(counts.connects, 2 + 2 * 4);
    }

    #[test]
    fn an_http1_fault_ends_the_client_with_its_line_not_a_panic() {
        let rr = plan(Kind::Rr, 100, 44, Pace::Closed);
        for (answer, needle) in [
            (&b"HTPP/1.1 200 OK\r\n\r\n"[..], "malformed HTTP response"),
            // A second response in the same read is not part of the first.
            (
                &b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n"[..],
                "past the end of a response",
            ),
        ] {
            let script = Script {
                answer,
                ..Script::default()
            };
            let (acc, counts) = run_http(rr, 2, 5, script);
            assert_eq!(acc.transactions, 0);
            assert_eq!(acc.errors.other, 2);
            let fault = acc.fault.expect("a fault");
            assert!(fault.contains(needle), "{fault}");
            // Each client gave up at once: no reconnect, no retry.
            assert_eq!(counts.connects, 2);
        }
    }
}
