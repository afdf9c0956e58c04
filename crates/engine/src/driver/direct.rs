//! Direct waiting, the epoll backend's single-connection path: a worker whose
//! only connection runs a closed-loop RR or STR class over a plain socket
//! waits for the response inside `recv` itself — the socket made blocking,
//! with a timeout so stop requests are still seen — instead of in
//! `epoll_wait` followed by a `recv`. That is netperf's pattern (its TCP_RR
//! loop in src/nettest_omni.c is a blocking send and a blocking recv per
//! transaction): two system calls per transaction and side instead of three,
//! and no epoll wake-up on the data path (the socket leaves the epoll set
//! while it is driven directly). Everything recorded — timestamps,
//! histograms, counts, the window — goes through the same state machine
//! ([`super::machine`], by `Worker::drive`) as the epoll loop; only the
//! wait differs.
//!
//! A busy-polling worker (`--spin`) drives its one connection the same way
//! but keeps the socket non-blocking and spins on the `recv` itself, as
//! bench/pingpong.c does, instead of on a zero-timeout `epoll_wait` followed
//! by the `recv`.
//!
//! The worker returns to its epoll loop when the connection fails (the
//! reconnect is timer-driven), finishes its quota, or the run stops.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mio::Token;

use super::machine::{Phase, CONNECTED, ENTERED_DIRECT, RELEASED};
use super::pace::Pace;
use super::worker::Worker;
use crate::app::Codec;
use crate::iomode;

/// Longest a blocked send or recv waits before the loop looks at the stop
/// conditions again (the epoll loop's longest sleep too).
const DIRECT_WAIT: Duration = Duration::from_millis(50);

impl<P: Codec> Worker<'_, P> {
    /// The worker's one connection, when it can be driven directly: epoll
    /// backend, no timer pending, a plain socket, a
    /// closed-loop class that keeps its connection (not CRR), and a client
    /// past the start barrier with a transaction under way.
    pub(super) fn direct_candidate(&self) -> Option<usize> {
        // A client with a data connection (`Codec::DATA`) has two sockets
        // to wait on: it stays on epoll.
        if P::DATA || self.ring.is_some() || self.m.conns.len() != 1 || !self.m.timers.is_empty() {
            return None;
        }
        let (key, conn) = self.m.conns.iter().next()?;
        let plan = &self.m.classes[conn.class as usize];
        let ready = conn.flags & (CONNECTED | RELEASED) == CONNECTED | RELEASED
            && matches!(conn.phase, Phase::Sending | Phase::Receiving);
        let plain = conn.stream.as_ref().is_some_and(|s| s.is_plain());
        let takes = iomode::DIRECT.takes(plan.kind, plan.pace != Pace::Closed);
        // A script's waits are bounded by timers, which a blocked recv
        // would not see.
        let timed = self.m.codecs[conn.class as usize].scripted();
        (ready && plain && takes && !timed).then_some(key)
    }

    /// Drives connection `key` with blocking calls until the run should stop
    /// (returns true) or the connection leaves this path (returns false: the
    /// epoll loop takes over, with the connection, if it still exists,
    /// non-blocking and registered again).
    pub(super) fn run_direct(&mut self, key: usize, abort: &AtomicBool) -> bool {
        if !self.enter_direct(key) {
            return false;
        }
        let mut now = self.m.now_ns();
        loop {
            if self.should_stop(abort, now) {
                return true;
            }
            let before = self.m.received_ns;
            self.drive(key);
            // A pass that received bytes read the clock a moment ago
            // (`received`): one clock read per transaction, not two. A pass
            // that did not (a recv timed out) reads it, so the run still
            // stops on time.
            now = if self.m.received_ns != before {
                self.m.received_ns
            } else {
                self.m.now_ns()
            };
            self.publish_at(Some(now));
            let still = self.m.conns.get(key).is_some_and(|c| {
                c.stream.is_some() && matches!(c.phase, Phase::Sending | Phase::Receiving)
            });
            if !still {
                break;
            }
        }
        self.leave_direct(key);
        false
    }

    /// Takes `key` out of the epoll set and makes it blocking; false (the
    /// connection as it was, or failed if it could not be put back) when
    /// that did not happen.
    fn enter_direct(&mut self, key: usize) -> bool {
        let Some(stream) = self.m.conns[key].stream.as_mut() else {
            return false;
        };
        let wait = (!self.spin).then_some(DIRECT_WAIT);
        match stream.enter_direct(self.poll.registry(), Token(key), wait) {
            Ok(entered) => {
                let conn = &mut self.m.conns[key];
                if entered && conn.flags & ENTERED_DIRECT == 0 {
                    // Once per connection, however often it comes back.
                    conn.flags |= ENTERED_DIRECT;
                    self.m.accum[conn.class as usize].direct_connections += 1;
                }
                entered
            }
            Err(e) => {
                self.fail(key, &e);
                false
            }
        }
    }

    /// Gives the connection back to the epoll loop; a connection that cannot
    /// go back fails like any other.
    fn leave_direct(&mut self, key: usize) {
        let Some(stream) = self.m.conns.get_mut(key).and_then(|c| c.stream.as_mut()) else {
            return;
        };
        if let Err(e) = stream.leave_direct(self.poll.registry(), Token(key)) {
            self.fail(key, &e);
        }
    }
}
