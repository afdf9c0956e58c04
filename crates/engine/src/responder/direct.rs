//! Direct waiting on the responder (the driver's is `driver::direct`): a
//! worker whose only data connection is a plain socket of a test that keeps
//! its connections (RR, STR: not CRR) and does not busy-poll serves it with
//! blocking calls — the request's `recv` is the wait — as netperf's
//! netserver does: two system calls per transaction instead of epoll_wait,
//! recv and send. The connection leaves the epoll set meanwhile; the
//! listeners and the command waker stay in it and are looked at with a
//! zero-timeout poll every [`CHECK_EVERY`], so a new connection or a command
//! waits at most about that long, and when anything is pending the
//! connection goes back to the epoll loop (non-blocking, registered again)
//! before the events are handled. A busy-polling test's connection stays
//! non-blocking and the worker spins on its `recv` (bench/pingpong.c's loop)
//! rather than on a zero-timeout `epoll_wait` and then the `recv`.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Token};

use super::machine::Step;
use super::worker::{Entry, Worker};
use crate::iomode;

/// How often the epoll set (listeners, commands) is looked at, and the
/// longest a blocked call waits (so an idle connection does not hold them).
const CHECK_EVERY: Duration = Duration::from_millis(10);

/// The epoll worker's bit of a connection's state (`ConnState::backend`):
/// it has entered direct waiting, and is counted in `direct_connections`.
const ENTERED_DIRECT: u8 = 1;

impl Worker {
    /// The worker's one data connection, when it can be served directly.
    pub(super) fn direct_candidate(&self) -> Option<usize> {
        if self.conns != 1 || !self.retry_accept.is_empty() {
            return None;
        }
        let (key, (stream, state)) = self
            .entries
            .iter()
            .find_map(|(k, e)| Some((k, e.conn()?)))?;
        let kind = self.tests.get(state.test as usize)?.spec.kind;
        // A responder connection is never paced: it only answers. Any
        // protocol: the row claims framed ones (`iomode::DIRECT`).
        let takes = iomode::DIRECT.takes(kind, false);
        (stream.is_plain() && takes).then_some(key)
    }

    /// Serves connection `key` directly until it closes (`events` left
    /// empty) or a zero-timeout poll finds events (left in `events`, the
    /// connection back in the epoll set). If the connection cannot be made
    /// blocking, this is the ordinary poll.
    pub(super) fn run_direct(&mut self, key: usize, events: &mut Events) -> io::Result<()> {
        if !self.enter_direct(key) {
            return self.poll.poll(events, self.timeout());
        }
        events.clear();
        let mut checked = Instant::now();
        loop {
            if let Step::Close { error } = self.drive(key) {
                self.close(key, error);
                return Ok(());
            }
            if checked.elapsed() < CHECK_EVERY {
                continue;
            }
            self.poll.poll(events, Some(Duration::ZERO))?;
            if !events.is_empty() {
                self.leave_direct(key);
                return Ok(());
            }
            checked = Instant::now();
        }
    }

    /// Takes `key` out of the epoll set and makes it blocking; false (the
    /// connection as it was, or closed as an error if it could not be put
    /// back) when that did not happen.
    fn enter_direct(&mut self, key: usize) -> bool {
        let Some((stream, state)) = self.entries.get_mut(key).and_then(Entry::conn_mut) else {
            return false;
        };
        let spin = self
            .tests
            .get(state.test as usize)
            .is_some_and(|t| t.spec.spin);
        let wait = (!spin).then_some(CHECK_EVERY);
        match stream.enter_direct(self.poll.registry(), Token(key), wait) {
            Ok(entered) => {
                if entered && state.backend & ENTERED_DIRECT == 0 {
                    // Counted once per connection, however often it comes
                    // back: the evidence that direct waiting served it.
                    state.backend |= ENTERED_DIRECT;
                    if let Some(t) = self.tests.get_mut(state.test as usize) {
                        t.stats.direct_connections += 1;
                    }
                }
                entered
            }
            Err(_) => {
                self.close(key, true);
                false
            }
        }
    }

    /// Gives the connection back to the epoll loop; one that cannot go back
    /// is closed and counted as an error.
    fn leave_direct(&mut self, key: usize) {
        let Some((stream, _)) = self.entries.get_mut(key).and_then(Entry::conn_mut) else {
            return;
        };
        if stream
            .leave_direct(self.poll.registry(), Token(key))
            .is_err()
        {
            self.close(key, true);
        }
    }
}
