//! The pacing transitions of a worker's state machine: when a client's next
//! request starts (at once, after a think time, at its open-loop slot), and
//! what each start and completion records (latency from the intended send,
//! the uncorrected latency, generator lag, waits, late and dropped sends).
//! Also the booking of sent and received bytes both I/O paths share. The
//! I/O of the state machine is in [`super::worker`] (epoll) and
//! [`super::uring`] (io_uring); the draws and the
//! schedule arithmetic in [`super::pace`].

use stackbench_model::Kind;

use super::pace::{Pace, LATE_NS};
use std::io;
use std::os::fd::AsRawFd;

use crate::sockopt;

use super::worker::{Phase, Sent, Worker, CONNECTED, NOT_WAITING, RELEASED};

/// What a received chunk did to the current transaction.
pub(super) enum Got {
    /// More of the response is due.
    More,
    /// The response is complete and the next request has begun.
    Next,
    /// The response is complete; the connection waits, closed or finished.
    Stop,
}

impl Worker<'_> {
    /// Client `key`'s place in the ramp came: connect it (a CRR client is a
    /// connection slot and connects per transaction: it counts as connected
    /// at once) and park it at the start barrier until the window opens, so
    /// that nothing is sent before every client is connected.
    pub(super) fn arrive(&mut self, key: usize) {
        let class = self.conns[key].class as usize;
        if self.classes[class].kind == Kind::Crr {
            self.mark_connected(key);
        } else if let Err(e) = self.attach(key) {
            return self.fail(key, &e);
        }
        if self.timing.is_known() {
            return self.release(key);
        }
        self.conns[key].phase = Phase::Waiting;
        self.parked.push(key as u32);
    }

    /// The window opened: the client starts. A paced client first waits a
    /// random phase (see `pace`), so a population starts spread out.
    pub(super) fn release(&mut self, key: usize) {
        let now = self.timing.now_ns();
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        conn.flags |= RELEASED;
        let plan = self.classes[conn.class as usize];
        if plan.pace.is_paced() {
            conn.due_ns = now + plan.pace.first_wait_ns(&mut conn.rng);
            conn.start_ns = NOT_WAITING;
            conn.phase = Phase::Waiting;
            self.timers.schedule(key as u32, conn.due_ns);
        } else {
            conn.due_ns = now;
            self.wait_over(key);
        }
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
        conn.remaining = plan.request_bytes;
        conn.start_ns = now;
    }

    /// After a response at `now`: when the next request is intended (paced
    /// classes). The wait is measured from now.
    pub(super) fn plan_next(&mut self, key: usize, now: u64) {
        let conn = &mut self.conns[key];
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
    pub(super) fn go_now(&mut self, key: usize, now: u64) -> bool {
        let conn = &mut self.conns[key];
        if !self.classes[conn.class as usize].pace.is_paced() || conn.due_ns <= now {
            return true;
        }
        conn.phase = Phase::Waiting;
        self.timers.schedule(key as u32, conn.due_ns);
        false
    }

    /// A waiting client's timer fired: send on its connection, or (CRR)
    /// connect anew and send.
    pub(super) fn wait_over(&mut self, key: usize) {
        if self.conns[key].stream.is_none() {
            return self.open(key);
        }
        self.begin_request(key, self.timing.now_ns());
        self.drive(key);
    }

    /// Records a completed transaction: latency from the actual send, or for
    /// the open loop from the intended send (and the actual one apart).
    pub(super) fn complete(&mut self, key: usize, now: u64, counted: bool) {
        let conn = &mut self.conns[key];
        if !counted {
            return;
        }
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
    /// sent): counted once per client, for the window's start.
    pub(super) fn mark_connected(&mut self, key: usize) {
        let Some(conn) = self.conns.get_mut(key) else {
            return;
        };
        if conn.flags & CONNECTED != 0 {
            return;
        }
        conn.flags |= CONNECTED;
        let acc = &mut self.accum[conn.class as usize];
        acc.connected += 1;
        acc.last_connected_ns = self.timing.now_ns();
        self.connected += 1;
    }

    /// Whether class `class`'s requests are corked while they are written
    /// (`SocketOptions::cork`: longer than one write, and Nagle on).
    pub(super) fn corks_request(&self, class: u16) -> bool {
        sockopt::corks(&self.socket, self.classes[class as usize].request_bytes)
    }

    /// Before a send of client `key`'s request (both paths call it): the
    /// first chunk of a corked request corks the socket; [`Self::sent`]
    /// lifts the cork after the last.
    pub(super) fn before_send(&mut self, key: usize) {
        let conn = &self.conns[key];
        if self.corks_request(conn.class)
            && conn.remaining == self.classes[conn.class as usize].request_bytes
        {
            if let Some(s) = conn.stream.as_ref() {
                sockopt::cork(s.as_raw_fd(), true);
            }
        }
    }

    /// Books `n` sent bytes of client `key`'s request (of `want` offered; the
    /// epoll and io_uring paths share it); moves to receiving when it is all
    /// out, lifting a corked request's cork.
    pub(super) fn sent(&mut self, key: usize, n: usize, want: usize) -> Sent {
        let corked = self.corks_request(self.conns[key].class);
        let conn = &mut self.conns[key];
        let plan = self.classes[conn.class as usize];
        // The request's first bytes are booked at its start, read by
        // `begin_request` just before this send: one clock read per
        // transaction fewer. Later chunks of a long request read the clock.
        let t = if conn.remaining == plan.request_bytes {
            conn.start_ns
        } else {
            self.timing.now_ns()
        };
        conn.remaining -= n as u64;
        if self.timing.in_window(t) {
            self.accum[conn.class as usize].tx_bytes += n as u64;
        }
        if conn.remaining == 0 {
            if corked {
                if let Some(s) = conn.stream.as_ref() {
                    sockopt::cork(s.as_raw_fd(), false);
                }
            }
            conn.phase = Phase::Receiving;
            conn.remaining = plan.response_bytes;
            return Sent::Done;
        }
        if n < want {
            Sent::Blocked
        } else {
            Sent::More
        }
    }

    /// Books `n` received bytes of client `key`'s response (the epoll and
    /// io_uring paths share it): byte counts, the TLS handshake, and on the
    /// last byte the transaction and what follows it.
    pub(super) fn received(&mut self, key: usize, n: usize) -> io::Result<Got> {
        let conn = &mut self.conns[key];
        if self.socket.quickack {
            if let Some(s) = conn.stream.as_ref() {
                s.quickack();
            }
        }
        conn.remaining -= n as u64;
        let now = self.timing.now_ns();
        self.received_ns = now;
        let counted = self.timing.in_window(now);
        if let Some(h) = conn.stream.as_mut().and_then(|s| s.take_handshake()) {
            let class = conn.class as usize;
            self.accum[class].handshake(&h, counted);
            if self.dialers[class].resume_ratio() > 0.0 {
                self.sessions[class] = conn.stream.as_ref().and_then(|s| s.tls_session());
            }
        }
        if counted {
            self.accum[conn.class as usize].rx_bytes += n as u64;
        }
        if conn.remaining > 0 {
            return Ok(Got::More);
        }
        self.complete(key, now, counted);
        Ok(if self.next_transaction(key, now)? {
            Got::Next
        } else {
            Got::Stop
        })
    }
}
