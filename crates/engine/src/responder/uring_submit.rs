//! The io_uring responder's decisions, with no ring inside: what a
//! connection queues next given its machine's state and the bits of what it
//! has in flight ([`next`]), and what a completion means for those bits
//! ([`completed`], [`last_send_completed`]). `uring.rs` builds the entries
//! and pushes them; these are the rules, tested here the way the machine's
//! `recv_completed` and `send_completed` are, where loopback tests could
//! only show their effect.
//!
//! The rules: at most one send and one receive in flight per connection. An
//! answer's last send is queued linked (IO_LINK) to the next request's
//! receive, so the connection waits for that request in the same
//! submission; where the kernel supports it, and the answer is neither
//! corked nor a CRR one (whose connection may end after it), that send is
//! a MSG_WAITALL send that reports only failure (skip-success), booked as
//! sent at once. A receive completion ends the linked last send too. A
//! closing connection (shut down) only waits for its operations to drain;
//! a receive cancelled because its linked send failed is no event.

use stackbench_model::Kind;

use super::machine::{ConnState, Io, Test};
use crate::app::Raw;
use crate::sockopt::IO_CHUNK_BYTES;

/// The backend's bits of a connection's state (`ConnState::backend`): a
/// send, a receive in flight.
pub(super) const SEND_QUEUED: u8 = 1;
pub(super) const RECV_QUEUED: u8 = 2;
/// A last send that reports only failure; over when its linked receive is.
pub(super) const LAST_QUEUED: u8 = 4;
/// Any operation in flight.
pub(super) const QUEUED: u8 = SEND_QUEUED | RECV_QUEUED | LAST_QUEUED;
/// Shut down, removed at its last completion.
pub(super) const CLOSING: u8 = 8;

/// What a connection queues next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Submit {
    /// Nothing: what its machine needs is in flight already.
    Nothing,
    /// A receive of at most `max` bytes of the request.
    Recv { max: usize },
    /// A chunk of the answer, `len` bytes; `cork`: cork the socket first.
    /// `then_recv`: the answer's last chunk, linked to the next request's
    /// receive of at most that many bytes.
    Send {
        len: usize,
        cork: bool,
        then_recv: Option<usize>,
    },
    /// The answer's last chunk as a send that reports only failure, linked
    /// to the next request's receive (queued once the send is booked).
    SilentLast { len: usize },
}

impl Submit {
    /// The bits the connection has in flight once this is queued (a
    /// silent last send's receive is queued with the next decision).
    pub(super) fn queued(self) -> u8 {
        match self {
            Submit::Nothing => 0,
            Submit::Recv { .. } => RECV_QUEUED,
            Submit::Send {
                then_recv: None, ..
            } => SEND_QUEUED,
            Submit::Send {
                then_recv: Some(_), ..
            } => SEND_QUEUED | RECV_QUEUED,
            Submit::SilentLast { .. } => LAST_QUEUED,
        }
    }
}

/// What connection `state` of `test` queues next, by its machine's next
/// I/O and what it has in flight (`state.backend`); `skip_ok`: the kernel
/// honours skip-success.
pub(super) fn next(state: &ConnState, test: &Test, skip_ok: bool) -> Submit {
    let queued = state.backend & QUEUED;
    match state.io::<Raw>(test, &()) {
        Io::Recv { max } if queued & RECV_QUEUED == 0 => Submit::Recv { max },
        Io::Send {
            len, cork, last, ..
        } if queued & SEND_QUEUED == 0 => {
            // With a receive in flight the answer's end cannot link one.
            let last = last && queued & RECV_QUEUED == 0;
            // A corked answer's last send reports its completion, at which
            // the machine lifts the cork (the cork must outlast it).
            if last && skip_ok && test.spec.kind != Kind::Crr && !test.raw_corks() {
                return Submit::SilentLast { len };
            }
            let first = test.raw_request_bytes().min(IO_CHUNK_BYTES as u64) as usize;
            Submit::Send {
                len,
                cork,
                then_recv: last.then_some(first),
            }
        }
        _ => Submit::Nothing,
    }
}

/// What a send's or receive's completion means for a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Completed {
    /// It is closing: remove it when `drained` (nothing left in flight).
    Closing { drained: bool },
    /// The receive linked to a failed send, cancelled: no event.
    Cancelled,
    /// Interrupted or would block: queue again.
    Again,
    /// An event for the machine.
    Event,
}

/// A send's (`send`) or receive's completion with result `res` on a
/// connection with bits `bits`: its bits after, and what it means. A
/// receive ends its linked silent last send too.
pub(super) fn completed(bits: u8, send: bool, res: i32) -> (u8, Completed) {
    let over = if send {
        SEND_QUEUED
    } else {
        RECV_QUEUED | LAST_QUEUED
    };
    let bits = bits & !over;
    let what = if bits & CLOSING != 0 {
        Completed::Closing {
            drained: bits & QUEUED == 0,
        }
    } else if res == -libc::ECANCELED {
        Completed::Cancelled
    } else if res == -libc::EAGAIN || res == -libc::EINTR {
        Completed::Again
    } else {
        Completed::Event
    };
    (bits, what)
}

/// A silent last send reported (it failed, or went out short) on a
/// connection with bits `bits`: its bits after, and what it means (an
/// event: close it; `None`: stale, its linked receive completed first and
/// ended it).
pub(super) fn last_send_completed(bits: u8) -> (u8, Option<Completed>) {
    if bits & LAST_QUEUED == 0 {
        // Its linked receive completed first and ended it.
        return (bits, None);
    }
    let bits = bits & !LAST_QUEUED;
    let what = if bits & CLOSING != 0 {
        Completed::Closing {
            drained: bits & QUEUED == 0,
        }
    } else {
        Completed::Event
    };
    (bits, Some(what))
}

#[cfg(test)]
mod tests {
    use stackbench_model::{AppProtocol, IoMode, SocketOptions};

    use super::*;
    use crate::control::TestSpec;

    fn test(kind: Kind, (request, response): (u64, u64), socket: SocketOptions) -> Test {
        Test::new(
            1,
            TestSpec {
                kind,
                request_bytes: request,
                response_bytes: response,
                socket,
                spin: false,
                io: IoMode::Uring,
                protocol: AppProtocol::Raw,
                tn3270: Default::default(),
            },
        )
    }

    /// A connection of `t` whose request has just been received whole.
    fn answering(t: &mut Test) -> ConnState {
        let mut c = ConnState::accepted::<Raw>(t, &mut (), 0);
        let n = t.spec.request_bytes as i32;
        c.recv_completed(t, n);
        c
    }

    #[test]
    fn a_request_is_received_once_at_a_time() {
        let mut t = test(Kind::Rr, (100, 10), SocketOptions::default());
        let mut c = ConnState::accepted::<Raw>(&mut t, &mut (), 0);
        let recv = next(&c, &t, true);
        assert_eq!(recv, Submit::Recv { max: 100 });
        c.backend |= recv.queued();
        assert_eq!(next(&c, &t, true), Submit::Nothing, "one in flight");
    }

    #[test]
    fn the_last_send_is_silent_where_the_kernel_skips_success() {
        let mut t = test(Kind::Rr, (100, 10), SocketOptions::default());
        let c = answering(&mut t);
        assert_eq!(next(&c, &t, true), Submit::SilentLast { len: 10 });
        assert_eq!(Submit::SilentLast { len: 10 }.queued(), LAST_QUEUED);
        // Without skip-success: a reporting send linked to the receive of
        // the next request's first chunk.
        let linked = next(&c, &t, false);
        assert_eq!(
            linked,
            Submit::Send {
                len: 10,
                cork: false,
                then_recv: Some(100)
            }
        );
        assert_eq!(linked.queued(), SEND_QUEUED | RECV_QUEUED);
    }

    #[test]
    fn crr_and_corked_answers_report_their_last_send() {
        let mut crr = test(Kind::Crr, (64, 8), SocketOptions::default());
        let c = answering(&mut crr);
        assert!(matches!(
            next(&c, &crr, true),
            Submit::Send {
                then_recv: Some(64),
                ..
            }
        ));
        let cork = SocketOptions {
            cork: true,
            ..SocketOptions::default()
        };
        let long = 2 * IO_CHUNK_BYTES as u64;
        let mut t = test(Kind::Rr, (1, long), cork);
        let mut c = answering(&mut t);
        let chunk = IO_CHUNK_BYTES;
        let first = Submit::Send {
            len: chunk,
            cork: true,
            then_recv: None,
        };
        assert_eq!(next(&c, &t, true), first);
        c.send_completed(&mut t, chunk as i32);
        let last = Submit::Send {
            len: chunk,
            cork: false,
            then_recv: Some(1),
        };
        assert_eq!(next(&c, &t, true), last, "reported, so the cork is lifted");
    }

    #[test]
    fn an_answer_with_a_receive_in_flight_links_nothing() {
        let mut t = test(Kind::Rr, (100, 10), SocketOptions::default());
        let mut c = answering(&mut t);
        c.backend |= RECV_QUEUED;
        let plain = Submit::Send {
            len: 10,
            cork: false,
            then_recv: None,
        };
        assert_eq!(next(&c, &t, true), plain);
        c.backend |= SEND_QUEUED;
        assert_eq!(next(&c, &t, true), Submit::Nothing);
    }

    #[test]
    fn completions_clear_their_bits_and_say_what_they_mean() {
        let both = SEND_QUEUED | RECV_QUEUED;
        assert_eq!(completed(both, true, 10), (RECV_QUEUED, Completed::Event));
        // A receive ends the silent last send linked before it.
        let silent = LAST_QUEUED | RECV_QUEUED;
        assert_eq!(completed(silent, false, 5), (0, Completed::Event));
        let cancelled = completed(RECV_QUEUED, false, -libc::ECANCELED);
        assert_eq!(cancelled, (0, Completed::Cancelled));
        assert_eq!(
            completed(RECV_QUEUED, false, -libc::EAGAIN),
            (0, Completed::Again)
        );
        // Closing: wait for the other operation, then remove.
        let closing = CLOSING | both;
        let (bits, what) = completed(closing, true, -libc::ECONNRESET);
        assert_eq!(what, Completed::Closing { drained: false });
        assert_eq!(
            completed(bits, false, 0),
            (CLOSING, Completed::Closing { drained: true })
        );
    }

    #[test]
    fn a_silent_last_send_that_reports_closes_unless_its_receive_ended_it() {
        assert_eq!(
            last_send_completed(LAST_QUEUED | RECV_QUEUED),
            (RECV_QUEUED, Some(Completed::Event))
        );
        assert_eq!(last_send_completed(RECV_QUEUED), (RECV_QUEUED, None));
        assert_eq!(
            last_send_completed(LAST_QUEUED | CLOSING),
            (CLOSING, Some(Completed::Closing { drained: true }))
        );
    }
}
