//! One responder worker on io_uring (`io = uring` tests): the same per-test
//! state machine and counters as the epoll worker ([`super::worker`]: read
//! `request_bytes`, write `response_bytes`, repeat), with the I/O done by
//! completions. It serves raw payloads only: received bytes are never
//! read, so a framed protocol (http1), whose requests end where their bytes
//! say, stays on epoll (`iomode::URING` refuses it).
//!
//! Each listener has one multishot accept armed (re-armed when the kernel
//! ends it; after running out of descriptors, every [`ACCEPT_RETRY`], each
//! episode counted in `accept_retries` as on epoll). Each connection has one
//! receive in flight while it reads a request; when the request is complete
//! the response's last send is queued linked to the next request's receive.
//! Everything queued in a loop turn is submitted with the one
//! `io_uring_enter` that waits for the next completions. Commands from the
//! control threads arrive through an eventfd whose read stays armed on the
//! ring.
//!
//! What to queue next and what a completion means for a connection's bits
//! are decided in [`super::uring_submit`], without the ring (and tested
//! there); this file builds the entries and runs the loop.
//!
//! Design notes: received bytes are counted, never read, so every receive
//! lands in one shared sink; sends read one zero buffer. A connection or
//! listener with operations in flight is never dropped at once: its socket is
//! shut down (a listener's accept cancelled) and the entry kept, marked
//! closing, until its last completion arrives, so a completion never finds a
//! slab key reused by a newer connection. On shutdown everything is
//! cancelled and the ring drained before the buffers are freed.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};
use slab::Slab;

use super::machine::{errno_kind, ConnState, Step, Test, Then, Touch};
use super::uring_submit::{self as submit, Completed, Submit, CLOSING, QUEUED};
use super::worker::{leftover, Backend, Command, Commanded};
use crate::app::Raw;
use crate::control::{ServerTestStats, TestSpec};
use crate::iomode::{self, build, enter, Claims};
use crate::sockopt::{self, IO_CHUNK_BYTES};
use crate::transport::{DataListener, DataStream};

const OP_ACCEPT: u64 = 1;
const OP_SEND: u64 = 2;
const OP_RECV: u64 = 3;
const OP_WAKE: u64 = 4;
const OP_CANCEL: u64 = 5;
/// A response's last send with no completion on success (see `queue_io`).
const OP_SEND_LAST: u64 = 6;
/// Submission queue size (completion queue twice that; the kernel keeps any
/// overflow).
const ENTRIES: u32 = 4096;
/// How soon a listener that ran out of descriptors is armed again.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);
/// Longest sleep when idle (commands wake the ring at once anyway).
const IDLE_WAIT: Duration = Duration::from_secs(1);
/// How long shutdown waits for cancelled operations.
const DRAIN_WAIT: Duration = Duration::from_millis(200);

/// A connection: its stream and the machine's state, which holds the
/// test's slot and this backend's bits (`QUEUED`, `CLOSING`).
struct UConn {
    stream: DataStream,
    state: ConnState,
}

impl UConn {
    /// What it has in flight (`QUEUED` bits).
    #[inline]
    fn queued(&self) -> u8 {
        self.state.backend & QUEUED
    }

    #[inline]
    fn closing(&self) -> bool {
        self.state.backend & CLOSING != 0
    }
}

enum Entry {
    Listener {
        listener: DataListener,
        test: u32,
        armed: bool,
        closing: bool,
    },
    Conn(UConn),
}

/// The thread's ring and everything its operations point into (the ring is
/// declared first, so it is dropped before the buffers).
pub struct UringWorker {
    ring: IoUring,
    commands: Receiver<Command>,
    wake: Arc<OwnedFd>,
    wake_buf: Box<u64>,
    entries: Slab<Entry>,
    tests: Slab<Test>,
    in_flight: usize,
    retry_accept: Vec<usize>,
    done: Vec<(u64, i32, u32)>,
    sink: Box<[u8]>,
    zeros: Box<[u8]>,
    /// IOSQE_CQE_SKIP_SUCCESS works here (Linux 5.17).
    skip_ok: bool,
}

/// An eventfd to wake a [`UringWorker`] with (`wake_up` writes it).
pub fn eventfd() -> io::Result<Arc<OwnedFd>> {
    // SAFETY: eventfd returns a new descriptor or -1.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(Arc::new(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Wakes the worker reading `fd`.
pub fn wake_up(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: an 8-byte write to an open eventfd.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), 8) };
}

impl UringWorker {
    /// Builds the ring; call on the worker's own thread (the ring has a
    /// single issuer).
    pub fn new(commands: Receiver<Command>, wake: Arc<OwnedFd>) -> io::Result<UringWorker> {
        let ring = build(ENTRIES)?;
        let _ = ring.submitter().register_ring_fd();
        Ok(UringWorker {
            skip_ok: ring.params().is_feature_skip_cqe_on_success(),
            ring,
            commands,
            wake,
            wake_buf: Box::new(0),
            entries: Slab::new(),
            tests: Slab::new(),
            in_flight: 0,
            retry_accept: Vec::new(),
            done: Vec::with_capacity(ENTRIES as usize * 2),
            sink: vec![0; IO_CHUNK_BYTES].into_boxed_slice(),
            zeros: vec![0; IO_CHUNK_BYTES].into_boxed_slice(),
        })
    }

    /// Runs until a `Shutdown` command.
    fn serve(&mut self) {
        self.arm_wake();
        loop {
            let spin = self.tests.iter().any(|(_, t)| t.spec.spin);
            let wait = match (spin, self.retry_accept.is_empty()) {
                (true, _) => Duration::ZERO,
                (false, false) => ACCEPT_RETRY,
                (false, true) => IDLE_WAIT,
            };
            enter(&self.ring, wait);
            let mut done = std::mem::take(&mut self.done);
            done.extend(
                self.ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            for &(data, res, flags) in &done {
                if !self.on_completion(data, res, flags) {
                    return;
                }
            }
            done.clear();
            self.done = done;
            for key in std::mem::take(&mut self.retry_accept) {
                self.arm_accept(key);
            }
        }
    }

    /// Queues one operation (submitting first when the queue is full).
    fn push(&mut self, entry: &squeue::Entry) {
        // SAFETY: the buffers entries point into (sink, zeros, wake_buf) live
        // as long as the ring, and the ring is drained before they go.
        while unsafe { self.ring.submission().push(entry) }.is_err() {
            let _ = self.ring.submit();
        }
        self.in_flight += 1;
    }

    /// Queues an operation that posts no completion when it succeeds.
    fn push_silent(&mut self, entry: &squeue::Entry) {
        self.push(entry);
        self.in_flight -= 1;
    }

    fn arm_wake(&mut self) {
        let read = opcode::Read::new(
            types::Fd(self.wake.as_raw_fd()),
            (&mut *self.wake_buf as *mut u64).cast(),
            8,
        )
        .build()
        .user_data(OP_WAKE);
        self.push(&read);
    }

    fn arm_accept(&mut self, key: usize) {
        let Some(Entry::Listener {
            listener,
            armed,
            closing: false,
            ..
        }) = self.entries.get_mut(key)
        else {
            return;
        };
        if *armed {
            return;
        }
        *armed = true;
        let accept = opcode::AcceptMulti::new(types::Fd(listener.as_raw_fd()))
            .flags(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC)
            .build()
            .user_data(((key as u64) << 8) | OP_ACCEPT);
        self.push(&accept);
    }

    /// Handles one completion; false on `Shutdown`.
    fn on_completion(&mut self, data: u64, res: i32, flags: u32) -> bool {
        let more = cqueue::more(flags);
        let key = (data >> 8) as usize;
        if data & 0xff == OP_SEND_LAST {
            self.on_last_send_failed(key, res);
            return true;
        }
        if !more {
            self.in_flight -= 1;
        }
        match data & 0xff {
            OP_WAKE => {
                if !self.handle_commands() {
                    return false;
                }
                self.arm_wake();
            }
            OP_ACCEPT => self.on_accept(key, res, more),
            OP_SEND | OP_RECV => self.on_io(key, data & 0xff, res),
            _ => {}
        }
        true
    }

    fn on_accept(&mut self, key: usize, res: i32, more: bool) {
        let Some(Entry::Listener {
            test,
            armed,
            closing,
            ..
        }) = self.entries.get_mut(key)
        else {
            return;
        };
        if !more {
            *armed = false;
        }
        let (test, armed, closing) = (*test, *armed, *closing);
        if closing {
            if res >= 0 {
                // SAFETY: a connection accepted for a test that ended.
                drop(unsafe { OwnedFd::from_raw_fd(res) });
            }
            if !armed {
                self.entries.remove(key);
            }
            return;
        }
        if res < 0 {
            match -res {
                libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM => {
                    if !self.retry_accept.contains(&key) {
                        self.retry_accept.push(key);
                        self.tests[test as usize].stats.accept_retries += 1;
                    }
                }
                _ => self.arm_accept(key),
            }
            return;
        }
        // SAFETY: the accepted descriptor is new and owned by nobody else.
        let stream = DataStream::Plain(unsafe { OwnedFd::from_raw_fd(res) });
        let t = &mut self.tests[test as usize];
        let state = ConnState::accepted::<Raw>(t, &mut (), test);
        // Evidence of the backend that served it (`ServerTestStats`).
        t.stats.uring_connections += 1;
        let _ = stream.apply_options(&t.spec.socket, t.spec.request_bytes);
        let conn = self.entries.insert(Entry::Conn(UConn { stream, state }));
        self.queue_io(conn);
        if !more {
            self.arm_accept(key);
        }
    }

    /// Queues what connection `key`'s machine needs and is not in flight
    /// ([`submit::next`] decides): the request's next receive, or the
    /// answer's next send (its last one linked to the next request's
    /// receive).
    fn queue_io(&mut self, key: usize) {
        let Some(Entry::Conn(c)) = self.entries.get_mut(key) else {
            return;
        };
        let test = &self.tests[c.state.test as usize];
        let waitall = test.spec.socket.waitall;
        let fd = types::Fd(c.stream.as_raw_fd());
        let (sink, data) = (self.sink.as_mut_ptr(), (key as u64) << 8);
        let recv = |max: usize| {
            let flags = if waitall { libc::MSG_WAITALL } else { 0 };
            opcode::Recv::new(fd, sink, max as u32)
                .flags(flags)
                .build()
                .user_data(data | OP_RECV)
        };
        let what = submit::next(&c.state, test, self.skip_ok);
        c.state.backend |= what.queued();
        let mut ops: [Option<squeue::Entry>; 2] = [None, None];
        match what {
            Submit::Nothing => {}
            Submit::Recv { max } => ops[0] = Some(recv(max)),
            Submit::SilentLast { len } => return self.queue_last_send(key, fd, len as u32),
            Submit::Send {
                len,
                cork,
                then_recv,
            } => {
                if cork {
                    sockopt::cork(fd.0, true);
                }
                let send = opcode::Send::new(fd, self.zeros.as_ptr(), len as u32)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
                    .user_data(data | OP_SEND);
                ops[0] = Some(match then_recv {
                    Some(_) => send.flags(squeue::Flags::IO_LINK),
                    None => send,
                });
                ops[1] = then_recv.map(recv);
            }
        }
        for op in ops.iter().flatten() {
            self.push(op);
        }
    }

    /// Queues the response's last chunk as one MSG_WAITALL send that
    /// reports only a failure, linked to the next request's receive, and
    /// books it now (its success is known when that receive completes).
    fn queue_last_send(&mut self, key: usize, fd: types::Fd, len: u32) {
        let send = opcode::Send::new(fd, self.zeros.as_ptr(), len)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
            .user_data(((key as u64) << 8) | OP_SEND_LAST);
        self.push_silent(&send);
        match self.on_sent(key, len as i32) {
            Step::Close { error } => self.close(key, error),
            Step::Go | Step::Wait => self.queue_io(key),
        }
    }

    /// A response's last send failed or went out short: close, an error.
    fn on_last_send_failed(&mut self, key: usize, res: i32) {
        let Some(Entry::Conn(c)) = self.entries.get_mut(key) else {
            return;
        };
        let (bits, what) = submit::last_send_completed(c.state.backend);
        c.state.backend = bits;
        match what {
            None | Some(Completed::Closing { drained: false }) => {}
            Some(Completed::Closing { drained: true }) => drop(self.entries.remove(key)),
            Some(_) => {
                let test = &self.tests[c.state.test as usize];
                let error = res >= 0
                    || c.state.failed(test, errno_kind(res)) == (Step::Close { error: true });
                self.close(key, error);
            }
        }
    }

    fn on_io(&mut self, key: usize, op: u64, res: i32) {
        let Some(Entry::Conn(c)) = self.entries.get_mut(key) else {
            return;
        };
        let (bits, what) = submit::completed(c.state.backend, op == OP_SEND, res);
        c.state.backend = bits;
        let step = match what {
            Completed::Closing { drained } => {
                if drained {
                    self.entries.remove(key);
                }
                return;
            }
            // The next request's receive after a failed send.
            Completed::Cancelled => return,
            Completed::Again => Step::Wait,
            Completed::Event if op == OP_SEND => self.on_sent(key, res),
            Completed::Event => self.on_received(key, res),
        };
        match step {
            Step::Go | Step::Wait => self.queue_io(key),
            Step::Close { error } => self.close(key, error),
        }
    }

    /// Feeds a receive's completion to connection `key`'s machine and
    /// touches the socket as it says.
    fn on_received(&mut self, key: usize, res: i32) -> Step {
        let Some(Entry::Conn(c)) = self.entries.get_mut(key) else {
            return Step::Wait;
        };
        let test = &mut self.tests[c.state.test as usize];
        touch(&c.stream, c.state.recv_completed(test, res))
    }

    /// Feeds a send's completion to connection `key`'s machine.
    fn on_sent(&mut self, key: usize, res: i32) -> Step {
        let Some(Entry::Conn(c)) = self.entries.get_mut(key) else {
            return Step::Wait;
        };
        let test = &mut self.tests[c.state.test as usize];
        touch(&c.stream, c.state.send_completed(test, res))
    }

    /// Closes connection `key` (counting an error if `error`); one with
    /// operations in flight is shut down and removed at its last completion.
    fn close(&mut self, key: usize, error: bool) {
        let Some(Entry::Conn(c)) = self.entries.get_mut(key) else {
            return;
        };
        if let Some(t) = self.tests.get_mut(c.state.test as usize) {
            t.closed(error);
        }
        if c.queued() == 0 {
            self.entries.remove(key);
            return;
        }
        c.state.backend |= CLOSING;
        // SAFETY: shutdown on the connection's own open socket.
        unsafe { libc::shutdown(c.stream.as_raw_fd(), libc::SHUT_RDWR) };
    }

    /// Shutdown: cancel everything in flight and wait (bounded) until the
    /// kernel is done with it, so nothing writes into a freed buffer.
    fn drain(mut self) {
        let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any().all())
            .build()
            .user_data(OP_CANCEL);
        self.push(&cancel);
        let deadline = Instant::now() + DRAIN_WAIT;
        while self.in_flight > 0 && Instant::now() < deadline {
            enter(&self.ring, Duration::from_millis(10));
            let ended = self
                .ring
                .completion()
                .filter(|c| !cqueue::more(c.flags()))
                .count();
            self.in_flight = self.in_flight.saturating_sub(ended);
        }
        if self.in_flight > 0 {
            // Never free what the kernel may still write into.
            std::mem::forget(self);
        }
    }
}

/// Does to the socket what the machine said after an event; its step.
#[inline]
fn touch(stream: &DataStream, then: Then) -> Step {
    match then.touch {
        Touch::Nothing => {}
        Touch::Quickack => stream.quickack(),
        Touch::Uncork => sockopt::cork(stream.as_raw_fd(), false),
    }
    then.step
}

impl Backend for UringWorker {
    fn claims(&self) -> &'static Claims {
        &iomode::URING
    }

    fn run(mut self) -> Vec<(u64, ServerTestStats)> {
        self.serve();
        let left = leftover(&mut self.tests);
        self.drain();
        left
    }
}

impl Commanded for UringWorker {
    fn commands(&self) -> &Receiver<Command> {
        &self.commands
    }

    fn add_test(&mut self, id: u64, spec: TestSpec, listeners: Vec<DataListener>) {
        let test = self.tests.insert(Test::new(id, spec)) as u32;
        for listener in listeners {
            let key = self.entries.insert(Entry::Listener {
                listener,
                test,
                armed: false,
                closing: false,
            });
            self.arm_accept(key);
        }
    }

    /// Ends a test: its counters now, its sockets closed as their
    /// operations complete.
    fn remove_test(&mut self, id: u64) -> ServerTestStats {
        let Some((slot, _)) = self.tests.iter().find(|(_, t)| t.id == id) else {
            return ServerTestStats::default();
        };
        let stats = self.tests.remove(slot).stats;
        let slot = slot as u32;
        let keys: Vec<usize> = self
            .entries
            .iter()
            .filter(|(_, e)| match e {
                Entry::Listener { test, closing, .. } => *test == slot && !closing,
                Entry::Conn(c) => c.state.test == slot && !c.closing(),
            })
            .map(|(k, _)| k)
            .collect();
        for key in keys {
            match self.entries.get_mut(key) {
                Some(Entry::Listener {
                    armed: true,
                    closing,
                    ..
                }) => {
                    *closing = true;
                    let target = ((key as u64) << 8) | OP_ACCEPT;
                    let cancel = opcode::AsyncCancel::new(target)
                        .build()
                        .user_data(OP_CANCEL);
                    self.push(&cancel);
                }
                Some(Entry::Listener { .. }) => {
                    self.entries.remove(key);
                }
                Some(Entry::Conn(_)) => self.close(key, false),
                None => {}
            }
        }
        stats
    }
}
