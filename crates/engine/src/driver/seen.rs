//! What a class's clients met when a transaction did not complete: why
//! connections ended (refused, closed or reset by the server — before its
//! setup began, during it, before any byte of a response, mid-response —
//! timed out, a message the protocol refuses, any other error) and, at the
//! window's end, where the clients still were (waiting for a setup the
//! server never began, or for a response it never sent). Each cause keeps
//! a count and the first example, so the line that explains an incomplete
//! run ([`Seen::explain`]) names what happened, most frequent first,
//! instead of suggesting a longer window.
//!
//! Causes are booked on errors and once per client at the window's end,
//! never per transaction: a small list searched linearly (at most one
//! entry per [`Cause`]), merged over workers.

use std::fmt::Write as _;
use std::io;

use crate::app::{grouped, Row};

/// Where a connection was when it ended or the window closed on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Connecting: no connection yet.
    Connect,
    /// Waiting for the server to begin the protocol's setup (nothing of it
    /// arrived).
    SetupNotBegun,
    /// In the setup, part of it received.
    InSetup,
    /// Sending the request, or waiting for the first byte of its response.
    BeforeResponse,
    /// Part of the response received.
    MidResponse,
}

/// One reason clients did not complete transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Connects refused: nothing listens at the address.
    Refused,
    /// The server closed the connection (end of stream) at a place.
    Closed(Place),
    /// The server reset the connection (or the pipe broke) at a place.
    Reset(Place),
    /// A connect or a connection timed out.
    TimedOut(Place),
    /// Any other I/O error (its first text is the example).
    Other,
    /// A message the protocol refuses (the codec's line is the example).
    Fault,
    /// At the window's end: still waiting, at a place, with nothing moving.
    Waiting(Place),
}

/// One cause's count and first example.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    cause: Cause,
    count: u64,
    example: Option<String>,
    /// `Waiting`: the longest such wait, ns.
    longest_ns: u64,
}

/// What the protocol calls its parts, for the sentences.
#[derive(Debug, Clone, Copy)]
pub struct Words {
    /// The protocol's setting value (`http1`).
    pub protocol: &'static str,
    /// Its connection setup (`Telnet negotiation`), if it has one.
    pub setup: Option<&'static str>,
    /// What answers a request (`response`, TN3270's `screen`).
    pub response: &'static str,
}

impl Words {
    /// The words of protocol row `row`.
    pub fn of(row: &Row) -> Words {
        Words {
            protocol: row.name(),
            setup: row.setup.then_some(row.setup_name),
            response: row.response_name,
        }
    }
}

/// A class's causes (see the module doc).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen(Vec<Entry>);

impl Seen {
    /// Books one occurrence of `cause`, keeping `example()` if it is the first.
    pub fn add(&mut self, cause: Cause, example: impl FnOnce() -> Option<String>) {
        self.add_n(cause, 1, example, 0);
    }

    /// Books a client still waiting at `place` when the window ended,
    /// after `waited_ns`.
    pub fn waiting(&mut self, place: Place, waited_ns: u64, example: Option<String>) {
        self.add_n(Cause::Waiting(place), 1, || example, waited_ns);
    }

    fn add_n(
        &mut self,
        cause: Cause,
        n: u64,
        example: impl FnOnce() -> Option<String>,
        longest_ns: u64,
    ) {
        match self.0.iter_mut().find(|e| e.cause == cause) {
            Some(e) => {
                e.count += n;
                e.longest_ns = e.longest_ns.max(longest_ns);
                if e.example.is_none() {
                    e.example = example();
                }
            }
            None => self.0.push(Entry {
                cause,
                count: n,
                example: example(),
                longest_ns,
            }),
        }
    }

    /// Adds another worker's causes.
    pub fn merge(&mut self, other: &Seen) {
        for e in &other.0 {
            let example = e.example.clone();
            self.add_n(e.cause, e.count, || example, e.longest_ns);
        }
    }

    /// The cause of an I/O error `e` at `place`.
    pub fn cause_of(e: &io::Error, place: Place) -> Cause {
        use io::ErrorKind as K;
        match e.kind() {
            K::ConnectionRefused => Cause::Refused,
            K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted => Cause::Reset(place),
            K::UnexpectedEof => Cause::Closed(place),
            K::TimedOut => Cause::TimedOut(place),
            _ => Cause::Other,
        }
    }

    /// What was seen, most frequent first, in one clause with what to
    /// check after it; `None` when nothing was booked.
    pub fn explain(&self, words: &Words, too_short: &str) -> Option<String> {
        // Connections the server closed and those it reset at the same
        // place read as one cause, with the resets counted inside it.
        let mut entries: Vec<(Entry, u64)> = Vec::with_capacity(self.0.len());
        for e in &self.0 {
            let (as_closed, reset) = match e.cause {
                Cause::Reset(place) => (Cause::Closed(place), e.count),
                other => (other, 0),
            };
            match entries.iter_mut().find(|(x, _)| x.cause == as_closed) {
                Some((x, resets)) => {
                    x.count += e.count;
                    *resets += reset;
                    if x.example.is_none() {
                        x.example.clone_from(&e.example);
                    }
                }
                None => entries.push((
                    Entry {
                        cause: as_closed,
                        ..e.clone()
                    },
                    reset,
                )),
            }
        }
        // Most frequent first; ties keep the order first seen.
        entries.sort_by_key(|(e, _)| std::cmp::Reverse(e.count));
        let (first, _) = entries.first()?;
        let parts: Vec<String> = entries
            .iter()
            .map(|(e, resets)| sentence(e, *resets, words))
            .collect();
        let mut text = join(&parts);
        if let Some(check) = check(first.cause, words, too_short) {
            let _ = write!(text, ": {check}");
        }
        Some(text)
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `1 connection`, `373 connections`.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", grouped(n), if n == 1 { one } else { many })
}

/// One cause as a clause (`resets`: of a `Closed` cause's connections,
/// those reset rather than closed).
fn sentence(e: &Entry, resets: u64, w: &Words) -> String {
    let n = e.count;
    let conns = count(n, "connection", "connections");
    let setup = w.setup.unwrap_or("connection setup");
    let first = |what: &str| match &e.example {
        Some(x) => format!(" ({what} {x})"),
        None => String::new(),
    };
    let (verb, conns) = match resets {
        0 => ("closed", conns),
        r if r == n => ("reset", conns),
        r => ("closed or reset", format!("{conns} ({} reset)", grouped(r))),
    };
    let ended = |place: Place| match place {
        Place::Connect => format!("the server {verb} {conns} while they connected"),
        Place::SetupNotBegun => format!("the server {verb} {conns} before its {setup} began"),
        Place::InSetup => format!(
            "the server {verb} {conns} during the {setup}{}",
            first("the first after")
        ),
        Place::BeforeResponse => format!(
            "the server {verb} {conns} after the request, before any byte of a {}",
            w.response
        ),
        Place::MidResponse => format!(
            "the server {verb} {conns} mid-{}{}",
            w.response,
            first("the first after")
        ),
    };
    match e.cause {
        Cause::Refused => format!(
            "{} refused (nothing listens there)",
            count(n, "connect was", "connects were")
        ),
        Cause::Closed(place) | Cause::Reset(place) => ended(place),
        Cause::TimedOut(Place::Connect) => {
            format!("{} out", count(n, "connect timed", "connects timed"))
        }
        Cause::TimedOut(_) => format!("{conns} timed out"),
        Cause::Other => format!("{conns} failed{}", first("the first:")),
        Cause::Fault => format!(
            "{} that protocol {} refuses{}",
            count(n, "client ended on a message", "clients ended on messages"),
            w.protocol,
            first("the first:")
        ),
        Cause::Waiting(place) => {
            let clients = count(n, "client", "clients");
            let waited = seconds(e.longest_ns);
            match place {
                Place::Connect => format!("{clients} still connecting after {waited}"),
                Place::SetupNotBegun => format!(
                    "{clients} waited {waited} for the server to begin the {setup}, and it never did"
                ),
                Place::InSetup => format!(
                    "{clients} still in the {setup} after {waited}{}",
                    first("the first had received")
                ),
                Place::BeforeResponse => {
                    let done = match w.setup {
                        Some(s) => format!(" completed the {s},"),
                        None => String::new(),
                    };
                    format!(
                        "{clients}{done} sent a request and received no byte of a {} in {waited}",
                        w.response
                    )
                }
                Place::MidResponse => format!(
                    "{clients} still receiving a {} after {waited}{}",
                    w.response,
                    first("the first had")
                ),
            }
        }
    }
}

/// What to check, after the most frequent cause (`too_short`: the fix of
/// a window too short for the transaction, for a client still receiving
/// one); `None` where the clause says it.
fn check(cause: Cause, w: &Words, too_short: &str) -> Option<String> {
    let speaks = if w.protocol == "raw" {
        // Raw payloads are only ever answered by stackbench's responder.
        "check the responder at the target and the path to it".to_string()
    } else {
        format!(
            "check that the target is a server of protocol {}",
            w.protocol
        )
    };
    match cause {
        Cause::Refused => Some("check --target, and that the server is running".into()),
        Cause::Closed(Place::SetupNotBegun | Place::BeforeResponse)
        | Cause::Reset(Place::SetupNotBegun | Place::BeforeResponse)
        | Cause::Waiting(Place::SetupNotBegun)
        | Cause::Fault => Some(speaks),
        Cause::Waiting(Place::BeforeResponse) => Some(match w.setup {
            // A TN3270 server logs a terminal on with no application
            // behind it (hercules without an operating system).
            Some(setup) => format!(
                "the {setup} succeeded but no {} answered a request; check that an \
                 application answers behind the server",
                w.response
            ),
            None => format!("the server accepts the connections but does not answer; {speaks}"),
        }),
        Cause::Waiting(Place::MidResponse) => Some(too_short.to_string()),
        _ => None,
    }
}

/// `1.00 s`, `250 ms`.
fn seconds(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.1} s", ns as f64 / 1e9)
    } else {
        format!("{} ms", ns / 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTTP: Words = Words {
        protocol: "http1",
        setup: None,
        response: "response",
    };

    #[test]
    fn the_most_frequent_cause_comes_first_with_its_check() {
        let mut seen = Seen::default();
        seen.add(Cause::Refused, || None);
        for _ in 0..373 {
            seen.add(Cause::Closed(Place::BeforeResponse), || None);
        }
        assert_eq!(
            seen.explain(&HTTP, "lengthen --duration").unwrap(),
            "the server closed 373 connections after the request, before any byte of a \
             response and 1 connect was refused (nothing listens there): check that the \
             target is a server of protocol http1"
        );
    }

    #[test]
    fn merged_workers_keep_the_first_example() {
        let mut a = Seen::default();
        a.add(Cause::Closed(Place::MidResponse), || {
            Some("100 of 4,000 body bytes".into())
        });
        let mut b = Seen::default();
        b.add(Cause::Closed(Place::MidResponse), || Some("other".into()));
        b.waiting(Place::BeforeResponse, 2_000_000_000, None);
        a.merge(&b);
        assert_eq!(
            a.explain(&HTTP, "lengthen --duration").unwrap(),
            "the server closed 2 connections mid-response (the first after 100 of 4,000 \
             body bytes) and 1 client sent a request and received no byte of a response \
             in 2.0 s"
        );
        assert_eq!(Seen::default().explain(&HTTP, ""), None);
    }

    /// A listener that closes at once resets some connections and closes
    /// others, at the same place: one cause, the resets counted in it.
    #[test]
    fn closed_and_reset_at_one_place_read_as_one_cause() {
        let mut seen = Seen::default();
        for _ in 0..72 {
            seen.add(Cause::Reset(Place::BeforeResponse), || None);
        }
        for _ in 0..13 {
            seen.add(Cause::Closed(Place::BeforeResponse), || None);
        }
        seen.add(Cause::Reset(Place::SetupNotBegun), || None);
        let tn3270 = Words {
            protocol: "tn3270",
            setup: Some("Telnet negotiation"),
            response: "screen",
        };
        assert_eq!(
            seen.explain(&tn3270, "").unwrap(),
            "the server closed or reset 85 connections (72 reset) after the request, before \
             any byte of a screen and the server reset 1 connection before its Telnet \
             negotiation began: check that the target is a server of protocol tn3270"
        );
    }

    #[test]
    fn errors_map_to_causes() {
        let e = |k| io::Error::from(k);
        let at = Place::BeforeResponse;
        assert_eq!(
            Seen::cause_of(&e(io::ErrorKind::ConnectionRefused), at),
            Cause::Refused
        );
        assert_eq!(
            Seen::cause_of(&e(io::ErrorKind::BrokenPipe), at),
            Cause::Reset(at)
        );
        assert_eq!(
            Seen::cause_of(&e(io::ErrorKind::UnexpectedEof), at),
            Cause::Closed(at)
        );
        assert_eq!(Seen::cause_of(&e(io::ErrorKind::Other), at), Cause::Other);
    }
}
