//! The responder's per-connection state machine, with no I/O inside: a
//! connection reads a request, writes the answer, and repeats; only what
//! follows an answer differs by kind (a CRR connection in server-close mode
//! is closed right away, every other one goes back to reading). Its state is
//! two fields — the [`Phase`] and the bytes left in it — kept flat in each
//! backend's connection entry (epoll and direct in [`super::worker`],
//! io_uring in [`super::uring`]) so the entries stay small; the backends
//! report the bytes they moved here and act on the answer.
//!
//! Sizes come from the test's application protocol ([`crate::app`]): when a
//! request is complete and how long its answer is are the [`Handler`]'s to
//! say (raw payloads: the test's sizes). Raw payloads go through
//! [`book_received`] and [`book_sent`], which read no bytes; a framed
//! protocol (`http1`) through [`book_received_framed`] and
//! [`book_sent_framed`] with the connection's parse state and the bytes.
//! Both are [`book_received_with`] and [`book_sent_with`] over their
//! handler, resolved at compile time.

use stackbench_model::{AppProtocol, CrrClose, Kind};

use crate::app::http1::{self, ServerState};
use crate::app::{Fault, Handler, Raw};
use crate::protocol::{ServerTestStats, TestSpec};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Phase {
    Reading,
    Writing,
}

/// The application protocol a test's connections speak.
#[inline]
pub(super) fn handler(spec: &TestSpec) -> Raw {
    Raw {
        request: spec.request_bytes,
        response: spec.response_bytes,
    }
}

/// The HTTP/1.1 handler of a test (`protocol http1`).
#[inline]
pub(super) fn http1_handler(spec: &TestSpec) -> http1::Server {
    http1::Server {
        request_bytes: spec.request_bytes,
        response_bytes: spec.response_bytes,
    }
}

/// Bytes of a whole request of the test, as its protocol says (a new
/// connection's first read, and where a read between requests starts).
#[inline]
pub(super) fn request_bytes(spec: &TestSpec) -> u64 {
    match spec.protocol {
        AppProtocol::Raw => Handler::request_bytes(&handler(spec)),
        AppProtocol::Http1 => Handler::request_bytes(&http1_handler(spec)),
    }
}

/// Bytes of the answer to a request of the test (what a corked answer spans).
#[inline]
pub(super) fn response_bytes(spec: &TestSpec) -> u64 {
    handler(spec).response_bytes(&())
}

/// Books `n` received bytes of a request (every backend shares it): true
/// when the request is complete and the response is due.
pub(super) fn book_received(
    phase: &mut Phase,
    remaining: &mut u64,
    n: u64,
    spec: &TestSpec,
    stats: &mut ServerTestStats,
) -> bool {
    // Raw payloads have no faults: `Err` cannot come back.
    matches!(
        book_received_with(&handler(spec), &mut (), (phase, remaining), &[], n, stats),
        Ok(true)
    )
}

/// [`book_received`] for a framed protocol: `chunk` holds the received
/// bytes, `state` the connection's parse; a fault means the request is
/// refused (the backend closes the connection and counts an error).
pub(super) fn book_received_framed(
    (phase, remaining): (&mut Phase, &mut u64),
    state: &mut ServerState,
    chunk: &[u8],
    spec: &TestSpec,
    stats: &mut ServerTestStats,
) -> Result<bool, Fault> {
    let n = chunk.len() as u64;
    book_received_with(
        &http1_handler(spec),
        state,
        (phase, remaining),
        chunk,
        n,
        stats,
    )
}

/// Books `n` received bytes (`chunk`, when framed) with handler `app`.
#[inline]
pub(super) fn book_received_with<H: Handler>(
    app: &H,
    state: &mut H::State,
    (phase, remaining): (&mut Phase, &mut u64),
    chunk: &[u8],
    n: u64,
    stats: &mut ServerTestStats,
) -> Result<bool, Fault> {
    stats.rx_bytes += n;
    *remaining = app.request_left(state, *remaining, n, chunk)?;
    if *remaining > 0 {
        return Ok(false);
    }
    *phase = Phase::Writing;
    *remaining = app.response_bytes(state);
    Ok(true)
}

/// Books `n` sent bytes of a response: `None` while some is still to go;
/// at its end the transaction counts and `Some(close)` says whether a CRR
/// server close ends the connection (else the next request is awaited).
pub(super) fn book_sent(
    phase: &mut Phase,
    remaining: &mut u64,
    n: u64,
    spec: &TestSpec,
    stats: &mut ServerTestStats,
) -> Option<bool> {
    book_sent_with(&handler(spec), &(), (phase, remaining), n, spec, stats)
}

/// [`book_sent`] for a framed protocol, whose answer may also end the
/// connection (HTTP's `Connection: close`).
pub(super) fn book_sent_framed(
    (phase, remaining): (&mut Phase, &mut u64),
    state: &ServerState,
    n: u64,
    spec: &TestSpec,
    stats: &mut ServerTestStats,
) -> Option<bool> {
    book_sent_with(
        &http1_handler(spec),
        state,
        (phase, remaining),
        n,
        spec,
        stats,
    )
}

/// Books `n` sent bytes with handler `app`.
#[inline]
pub(super) fn book_sent_with<H: Handler>(
    app: &H,
    state: &H::State,
    (phase, remaining): (&mut Phase, &mut u64),
    n: u64,
    spec: &TestSpec,
    stats: &mut ServerTestStats,
) -> Option<bool> {
    stats.tx_bytes += n;
    *remaining -= n;
    if *remaining > 0 {
        return None;
    }
    stats.transactions += 1;
    if app.closes(state) || (spec.kind == Kind::Crr && spec.socket.crr_close == CrrClose::Server) {
        return Some(true);
    }
    *phase = Phase::Reading;
    *remaining = app.request_bytes();
    Some(false)
}

#[cfg(test)]
mod tests {
    //! A mock backend in a few lines: scripted chunk sizes go in, what the
    //! machine booked and answered comes out.

    use stackbench_model::{IoMode, SocketOptions};

    use super::*;

    fn spec(kind: Kind, request_bytes: u64, response_bytes: u64, close: CrrClose) -> TestSpec {
        TestSpec {
            kind,
            request_bytes,
            response_bytes,
            socket: SocketOptions {
                crr_close: close,
                ..SocketOptions::default()
            },
            spin: false,
            io: IoMode::Epoll,
            protocol: AppProtocol::Raw,
        }
    }

    /// Serves `transactions` transactions on one connection, each request
    /// arriving in chunks of at most `rx_chunk` and each response leaving in
    /// chunks of at most `tx_chunk`; returns the stats, whether the machine
    /// asked to close after the last response, and the calls it took.
    fn serve(
        spec: &TestSpec,
        transactions: u64,
        rx_chunk: u64,
        tx_chunk: u64,
    ) -> (ServerTestStats, bool, u64) {
        let mut stats = ServerTestStats::default();
        let (mut phase, mut remaining) = (Phase::Reading, spec.request_bytes);
        let (mut closed, mut calls) = (false, 0);
        for _ in 0..transactions {
            assert!(!closed, "a closed connection serves no more");
            loop {
                calls += 1;
                let n = remaining.min(rx_chunk);
                if book_received(&mut phase, &mut remaining, n, spec, &mut stats) {
                    break;
                }
                assert_eq!(phase, Phase::Reading);
            }
            assert_eq!((phase, remaining), (Phase::Writing, spec.response_bytes));
            loop {
                calls += 1;
                let n = remaining.min(tx_chunk);
                match book_sent(&mut phase, &mut remaining, n, spec, &mut stats) {
                    None => assert_eq!(phase, Phase::Writing),
                    Some(close) => {
                        closed = close;
                        break;
                    }
                }
            }
        }
        (stats, closed, calls)
    }

    #[test]
    fn rr_reads_the_request_then_writes_the_response() {
        let rr = spec(Kind::Rr, 100, 4096, CrrClose::Client);
        let (stats, closed, calls) = serve(&rr, 10, 64, 1500);
        assert_eq!(stats.transactions, 10);
        assert_eq!((stats.rx_bytes, stats.tx_bytes), (10 * 100, 10 * 4096));
        assert!(!closed);
        // Two receives (64 + 36) and three sends (1500 + 1500 + 1096) each.
        assert_eq!(calls, 10 * 5);
    }

    #[test]
    fn str_streams_a_long_response_in_chunks() {
        let stream = spec(Kind::Str, 1, 20 << 20, CrrClose::Client);
        let (stats, closed, calls) = serve(&stream, 3, 1, 64 << 10);
        assert_eq!(stats.transactions, 3);
        assert_eq!(stats.tx_bytes, 3 * (20 << 20));
        assert!(!closed);
        assert_eq!(calls, 3 * (1 + 320));
    }

    #[test]
    fn crr_closes_after_the_response_only_when_the_server_closes() {
        for (close, server_closes) in [
            (CrrClose::Server, true),
            (CrrClose::Client, false),
            (CrrClose::Abort, false),
        ] {
            let crr = spec(Kind::Crr, 64, 8000, close);
            let (stats, closed, _) = serve(&crr, 1, 64, 8000);
            assert_eq!(stats.transactions, 1);
            assert_eq!(closed, server_closes, "{close:?}");
        }
        // An RR connection is never closed by the server, whatever the mode.
        let rr = spec(Kind::Rr, 1, 1, CrrClose::Server);
        assert!(!serve(&rr, 2, 1, 1).1);
    }
}
