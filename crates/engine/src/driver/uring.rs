//! The driver worker's io_uring backend (`io = uring`): the same state
//! machine ([`super::machine`]), clients and per-transaction bookkeeping as
//! the epoll backend (through [`Worker::sent`] and [`Worker::received`]),
//! with the I/O done by completions instead of readiness. What it covers is
//! its row in `crate::iomode` ([`crate::iomode::URING`]).
//!
//! Per transaction each connection queues its request's last `send` linked
//! (IOSQE_IO_LINK) to the `recv` of the response, and all of a worker's
//! connections' operations go to the kernel together in the one
//! `io_uring_enter` that also waits for the next completions: one system call
//! per loop turn, carrying the work of every connection that completed in the
//! turn before, instead of a send, a recv and an epoll_wait per transaction.
//! A short send or receive just queues the rest; the link never fails on a
//! short send (no MSG_WAITALL on sends), so the receive is always armed.
//!
//! Design notes. Received bytes are counted, never read, so every receive of
//! a worker lands in one shared sink buffer; sends read the worker's zero
//! buffer. At most one send and one receive per connection are in flight
//! (flags in `Conn::flags`, so the connection state does not grow), plus a
//! one-shot POLLOUT watch while a new connection's handshake completes (it
//! counts the client as connected for the start barrier). A failed
//! connection's socket is shut down before it is closed, so its queued
//! operations complete at once (the ring holds its own reference to the
//! socket) and are recognised as stale by their cleared flags; at the end
//! the worker shuts every socket down and drains the ring before the buffers
//! are freed. Timers (reconnect back-off) bound the wait through the enter's
//! timeout.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use io_uring::{opcode, squeue, types};

use crate::app::Codec;
use crate::iomode::enter;

use super::accum::ClassAccum;
use super::machine::{Got, Phase, BACKEND_FLAGS};
use super::ring::Ring;
use super::worker::Worker;
use crate::sockopt::{self, IO_CHUNK_BYTES};

/// `Conn::flags` (the machine leaves [`BACKEND_FLAGS`] to its backend): a
/// send, a receive, a connect watch in flight.
const SEND_QUEUED: u8 = 4;
const RECV_QUEUED: u8 = 8;
const CONNECT_QUEUED: u8 = 16;
/// A last send that reports only failure (over when its linked receive is).
const LAST_QUEUED: u8 = 32;
const _: () =
    assert!((SEND_QUEUED | RECV_QUEUED | CONNECT_QUEUED | LAST_QUEUED) & !BACKEND_FLAGS == 0);

/// Operation tags in the low byte of a completion's user data (the client's
/// key above it).
const OP_SEND: u64 = 1;
const OP_RECV: u64 = 2;
const OP_CONNECT: u64 = 3;
/// A request's last send with no completion on success: only a failure
/// (an error, or a short MSG_WAITALL send) reports.
const OP_SEND_LAST: u64 = 4;
/// Longest wait in one enter, so stop requests are seen promptly.
const MAX_WAIT: Duration = Duration::from_millis(50);
/// How long the end of a run waits for shut-down sockets' operations.
const DRAIN_WAIT: Duration = Duration::from_millis(200);

impl<P: Codec> Worker<'_, P> {
    /// The io_uring loop: submit everything queued and wait for the next
    /// completions in one call, handle them, fire due timers.
    pub(super) fn run_uring(mut self, abort: &AtomicBool) -> Vec<ClassAccum> {
        loop {
            self.refresh_window();
            let now = self.m.now_ns();
            if self.should_stop(abort, now) {
                break;
            }
            let wait = self.uring_wait(now);
            enter(&self.ring.as_ref().expect("ring").ring, wait);
            self.refresh_window();
            let ring: &mut Ring = self
                .ring
                .as_deref_mut()
                .expect("the io_uring path has a ring");
            ring.done
                .extend(ring.ring.completion().map(|c| (c.user_data(), c.result())));
            let mut done = std::mem::take(&mut ring.done);
            for &(data, res) in &done {
                self.on_completion(data, res);
            }
            done.clear();
            self.ring.as_mut().expect("ring").done = done;
            self.fire_timers();
            self.publish();
        }
        let accum = self.m.take_accum();
        self.drain();
        accum
    }
}

impl<P: Codec> Worker<'_, P> {
    /// How long the enter may wait: until the window's end, the wheel's next
    /// deadline or [`MAX_WAIT`]; busy-polling: not at all.
    fn uring_wait(&mut self, now: u64) -> Duration {
        if self.spin {
            return Duration::ZERO;
        }
        let mut wait = MAX_WAIT;
        if let Some(end) = self.m.timing.end_ns {
            wait = wait.min(Duration::from_nanos(end - now));
        }
        if let Some(next) = self.m.timers.next_deadline() {
            wait = wait.min(Duration::from_nanos(next.saturating_sub(now)));
        }
        wait
    }

    /// Queues what client `key`'s phase needs and is not in flight yet: the
    /// next chunk of the request (its last one linked to the response's
    /// receive), or the next receive.
    pub(super) fn queue_io(&mut self, key: usize) {
        let Some(conn) = self.m.conns.get_mut(key) else {
            return;
        };
        let Some(fd) = conn.stream.as_ref().map(|s| types::Fd(s.as_raw_fd())) else {
            return;
        };
        let plan = self.m.classes[conn.class as usize];
        let ring: &mut Ring = self.ring.as_deref_mut().expect("ring");
        let data = (key as u64) << 8;
        let sink = ring.sink.as_mut_ptr();
        let waitall = self.m.socket.waitall;
        let recv = |remaining: u64| {
            let len = remaining.min(IO_CHUNK_BYTES as u64) as u32;
            let flags = if waitall { libc::MSG_WAITALL } else { 0 };
            opcode::Recv::new(fd, sink, len)
                .flags(flags)
                .build()
                .user_data(data | OP_RECV)
        };
        match conn.phase {
            Phase::Sending if conn.flags & SEND_QUEUED == 0 => {
                let len = conn.remaining.min(IO_CHUNK_BYTES as u64);
                let last = len == conn.remaining && conn.flags & RECV_QUEUED == 0;
                // A corked request's last send reports its completion, at
                // which `sent` lifts the cork (the cork must outlast it).
                let corked = sockopt::corks(&self.m.socket, plan.app.request_bytes());
                if last && ring.skip_ok && !corked {
                    return self.queue_last_send(key, fd, len as u32);
                }
                if corked && conn.remaining == plan.app.request_bytes() {
                    sockopt::cork(fd.0, true);
                }
                let mut send = opcode::Send::new(fd, self.zeros.as_ptr(), len as u32)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
                    .user_data(data | OP_SEND);
                if last {
                    send = send.flags(squeue::Flags::IO_LINK);
                }
                ring.push(&send);
                conn.flags |= SEND_QUEUED;
                if last {
                    ring.push(&recv(plan.app.response_bytes()));
                    conn.flags |= RECV_QUEUED;
                }
            }
            Phase::Receiving if conn.flags & RECV_QUEUED == 0 => {
                ring.push(&recv(conn.remaining));
                conn.flags |= RECV_QUEUED;
            }
            _ => {}
        }
    }

    /// Queues the request's last chunk as one MSG_WAITALL send that reports
    /// only a failure, linked to the response's receive, and books it as
    /// sent now (the epoll path books a send when the call returns; here
    /// the kernel completes it before the response can arrive).
    fn queue_last_send(&mut self, key: usize, fd: types::Fd, len: u32) {
        let ring: &mut Ring = self.ring.as_deref_mut().expect("ring");
        let send = opcode::Send::new(fd, self.zeros.as_ptr(), len)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build()
            .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
            .user_data(((key as u64) << 8) | OP_SEND_LAST);
        ring.push_silent(&send);
        self.m.conns[key].flags |= LAST_QUEUED;
        self.m.mark_connected(key);
        self.sent(key, len as usize, len as usize);
        self.queue_io(key);
    }

    /// Watches a new connection's handshake (one-shot POLLOUT).
    pub(super) fn watch_connect(&mut self, key: usize) {
        let conn = &mut self.m.conns[key];
        let Some(fd) = conn.stream.as_ref().map(|s| s.as_raw_fd()) else {
            return;
        };
        let poll = opcode::PollAdd::new(types::Fd(fd), libc::POLLOUT as u32)
            .build()
            .user_data(((key as u64) << 8) | OP_CONNECT);
        self.ring.as_mut().expect("ring").push(&poll);
        conn.flags |= CONNECT_QUEUED;
    }

    /// Handles one completion.
    fn on_completion(&mut self, data: u64, res: i32) {
        let (key, op) = ((data >> 8) as usize, data & 0xff);
        if op == OP_SEND_LAST {
            return self.on_last_send_failed(key, res);
        }
        self.ring.as_mut().expect("ring").in_flight -= 1;
        let bit = match op {
            OP_SEND => SEND_QUEUED,
            OP_RECV => RECV_QUEUED,
            _ => CONNECT_QUEUED,
        };
        let Some(conn) = self.m.conns.get_mut(key) else {
            return;
        };
        if conn.flags & bit == 0 || conn.stream.is_none() {
            return; // stale: its connection failed and was shut down
        }
        conn.flags &= !bit;
        if op == OP_RECV {
            // The send linked before it is over too.
            conn.flags &= !LAST_QUEUED;
        }
        if res == -libc::ECANCELED {
            return; // a receive whose linked send failed: the send reports it
        }
        if res == -libc::EAGAIN || res == -libc::EINTR {
            return self.queue_io(key);
        }
        match op {
            OP_SEND => self.on_sent(key, res),
            OP_RECV => self.on_received(key, res),
            _ => self.on_connected(key, res),
        }
    }

    /// A request's last send failed or went out short: the connection
    /// fails (its linked receive is cancelled).
    fn on_last_send_failed(&mut self, key: usize, res: i32) {
        let Some(conn) = self.m.conns.get_mut(key) else {
            return;
        };
        if conn.flags & LAST_QUEUED == 0 || conn.stream.is_none() {
            return; // stale: its connection failed and was shut down
        }
        conn.flags &= !LAST_QUEUED;
        let e = if res < 0 {
            io::Error::from_raw_os_error(-res)
        } else {
            io::Error::from(io::ErrorKind::WriteZero)
        };
        self.fail(key, &e);
    }

    fn on_sent(&mut self, key: usize, res: i32) {
        if res < 0 {
            return self.fail(key, &io::Error::from_raw_os_error(-res));
        }
        self.m.mark_connected(key);
        let want = self.m.conns[key].remaining.min(IO_CHUNK_BYTES as u64) as usize;
        self.sent(key, res as usize, want);
        self.queue_io(key);
    }

    fn on_received(&mut self, key: usize, res: i32) {
        if res < 0 {
            return self.fail(key, &io::Error::from_raw_os_error(-res));
        }
        if res == 0 {
            return self.fail(key, &io::ErrorKind::UnexpectedEof.into());
        }
        if self.m.conns[key].phase != Phase::Receiving {
            let e = io::Error::other("responder answered before the request was complete");
            return self.fail(key, &e);
        }
        match self.received(key, res as usize) {
            // `settle` made an opened data connection `Next` (and io_uring runs
            // no protocol with data connections: `iomode`).
            Ok(Got::More | Got::Next | Got::OpenData(_)) => self.queue_io(key),
            Ok(Got::Stop | Got::Close { .. }) => {}
            Err(e) => self.fail(key, &e),
        }
    }

    /// The handshake of a new connection ended: connected, or refused.
    fn on_connected(&mut self, key: usize, revents: i32) {
        if revents < 0 || revents & (libc::POLLERR | libc::POLLHUP) as i32 != 0 {
            let e = self.m.conns[key]
                .stream
                .as_ref()
                .and_then(|s| {
                    // SAFETY: the connection's fd is open while borrowed.
                    let fd = unsafe { BorrowedFd::borrow_raw(s.as_raw_fd()) };
                    socket2::SockRef::from(&fd).take_error().ok().flatten()
                })
                .unwrap_or_else(|| io::ErrorKind::ConnectionRefused.into());
            if self.m.conns[key].flags & SEND_QUEUED == 0 {
                self.fail(key, &e);
            }
            return;
        }
        self.m.mark_connected(key);
    }

    /// Before `fail` drops client `key`'s socket: shut it down so that its
    /// queued operations complete now, and forget them.
    pub(super) fn abandon_queued(&mut self, key: usize) {
        let conn = &mut self.m.conns[key];
        let queued = SEND_QUEUED | RECV_QUEUED | CONNECT_QUEUED | LAST_QUEUED;
        if conn.flags & queued != 0 {
            if let Some(s) = conn.stream.as_ref() {
                // SAFETY: shutdown on the connection's own open socket.
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
        conn.flags &= !queued;
    }

    /// End of run: shut every socket down and wait (bounded) until the
    /// kernel has finished with every queued operation, so none writes into
    /// a freed buffer.
    fn drain(&mut self) {
        for (_, conn) in self.m.conns.iter() {
            if let Some(s) = conn.stream.as_ref() {
                // SAFETY: shutdown on an open socket this worker owns.
                unsafe { libc::shutdown(s.as_raw_fd(), libc::SHUT_RDWR) };
            }
        }
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        let deadline = Instant::now() + DRAIN_WAIT;
        while ring.in_flight > 0 && Instant::now() < deadline {
            enter(&ring.ring, Duration::from_millis(10));
            let seen = ring.ring.completion().count();
            ring.in_flight = ring.in_flight.saturating_sub(seen);
        }
        if ring.in_flight > 0 {
            // Never free what the kernel may still write into.
            std::mem::forget(self.ring.take());
        }
    }
}
