//! The backend matrix: which I/O backend serves each side of each workload
//! case over each transport, by the rows in [`crate::iomode`] — the same
//! rows the driver ([`crate::iomode::effective`], `direct_candidate`) and the
//! responder (`Pool::start`, `direct_candidate`) apply at run time. The
//! engine's test table (tests/engine/backends.rs) runs every cell of it on
//! loopback and checks the exact transaction count and, from the counts
//! each side's backends keep ([`check_served`]), which backend served the
//! cell on each side; `docs/backends.md` is rendered from it ([`page`]), so
//! the page states what the test runs.
//!
//! A pair is a driver backend against a responder backend. The responder
//! does not choose: it serves on io_uring what the driver settled on
//! io_uring, and its epoll workers take direct waiting for a lone
//! connection by themselves. So the pairs are the ones a run can reach,
//! each by its thread and client counts.

use std::fmt::Write;

use stackbench_model::{AppProtocol, CrrClose, IoMode, Kind, Transport};
use stackbench_record::BackendConnections;

use crate::iomode::{Claims, DIRECT, EPOLL, URING};

/// The command that regenerates the page, from the repository's root.
pub const REGENERATE: &str = "cargo run -q -- __docs backends > docs/backends.md";

/// A driver backend against a responder backend, and how a run reaches it.
#[derive(Debug, Clone, Copy)]
pub struct Pair {
    pub driver: &'static Claims,
    pub responder: &'static Claims,
    /// The run's `io` setting.
    pub io: IoMode,
    /// Driver threads, and clients of the case's class: a driver worker
    /// with one connection waits directly, with several it runs epoll.
    pub driver_threads: usize,
    pub clients: u32,
    /// Responder worker threads: one, so every connection of the case is
    /// on the one worker (alone: direct waiting; several: epoll).
    pub responder_threads: usize,
}

impl Pair {
    pub fn name(&self) -> String {
        format!("{} / {}", self.driver.name, self.responder.name)
    }
}

/// The pairs a run reaches. An epoll driver against a direct responder is
/// not a pair of its own: it happens where the driver may not wait directly
/// (think time, open loop) in the direct/direct column.
pub const PAIRS: &[Pair] = &[
    Pair {
        driver: &EPOLL,
        responder: &EPOLL,
        io: IoMode::Epoll,
        driver_threads: 1,
        clients: 2,
        responder_threads: 1,
    },
    Pair {
        driver: &DIRECT,
        responder: &DIRECT,
        io: IoMode::Epoll,
        driver_threads: 1,
        clients: 1,
        responder_threads: 1,
    },
    Pair {
        driver: &DIRECT,
        responder: &EPOLL,
        io: IoMode::Epoll,
        driver_threads: 2,
        clients: 2,
        responder_threads: 1,
    },
    Pair {
        driver: &URING,
        responder: &URING,
        io: IoMode::Uring,
        driver_threads: 1,
        clients: 2,
        responder_threads: 1,
    },
];

/// One workload case: a kind with its sizes, close mode and pacing.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub name: &'static str,
    pub kind: Kind,
    /// The notation's sizes and pacing suffix, e.g. `(64B/8kB)@1ms`.
    pub tail: &'static str,
    pub crr_close: CrrClose,
    /// Open loop: offered transactions per second of the class.
    pub rate_tps: Option<f64>,
}

impl Case {
    /// Whether its requests are paced (think time or open loop).
    pub fn paced(&self) -> bool {
        self.tail.contains('@') || self.rate_tps.is_some()
    }

    /// Its workload in the notation, with `pair`'s clients.
    pub fn workload(&self, pair: &Pair) -> String {
        format!("{}{}{}", self.kind.name(), pair.clients, self.tail)
    }
}

/// Every workload kind, each CRR close mode, streams both ways, and both
/// pacings.
pub const CASES: &[Case] = &[
    Case {
        name: "RR",
        kind: Kind::Rr,
        tail: "(2kB/3kB)",
        crr_close: CrrClose::Client,
        rate_tps: None,
    },
    Case {
        name: "CRR, server closes",
        kind: Kind::Crr,
        tail: "(64B/8kB)",
        crr_close: CrrClose::Server,
        rate_tps: None,
    },
    Case {
        name: "CRR, client closes",
        kind: Kind::Crr,
        tail: "(64B/8kB)",
        crr_close: CrrClose::Client,
        rate_tps: None,
    },
    Case {
        name: "CRR, client resets",
        kind: Kind::Crr,
        tail: "(64B/8kB)",
        crr_close: CrrClose::Abort,
        rate_tps: None,
    },
    Case {
        name: "STR get",
        kind: Kind::Str,
        tail: "(1B/1MB)",
        crr_close: CrrClose::Client,
        rate_tps: None,
    },
    Case {
        name: "STR put",
        kind: Kind::Str,
        tail: "(1MB/1B)",
        crr_close: CrrClose::Client,
        rate_tps: None,
    },
    Case {
        name: "RR, think time",
        kind: Kind::Rr,
        tail: "(100B/100B)@1ms",
        crr_close: CrrClose::Client,
        rate_tps: None,
    },
    Case {
        name: "RR, open loop",
        kind: Kind::Rr,
        tail: "(100B/100B)",
        crr_close: CrrClose::Client,
        rate_tps: Some(4000.0),
    },
];

/// The transports of the matrix: those that need nothing from the host
/// but loopback (mptcp: a kernel with it enabled).
pub const TRANSPORTS: &[Transport] = &[
    Transport::Tcp,
    Transport::Unix,
    Transport::Mptcp,
    Transport::Tls,
];

/// What a cell of the matrix runs on, and why not on its pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub driver: &'static str,
    pub responder: &'static str,
    /// The first case of the pair's rows that refused, in one line.
    pub refused: Option<String>,
}

/// The backends `case` over `transport` runs on when asked for `pair`.
pub fn cell(pair: &Pair, case: &Case, transport: Transport) -> Cell {
    let kind = std::iter::once(case.kind);
    let driver_refused = pair.driver.refuses(transport, false, case.paced(), kind);
    // io_uring on the responder is the driver's settled choice; direct
    // waiting is the responder's own (a responder connection is not paced).
    let responder_refused = match (pair.io, &driver_refused) {
        (IoMode::Uring, Some(why)) => Some(why.clone()),
        // The matrix's cases are raw payloads; a framed protocol is refused
        // by io_uring alone, on both sides (`Claims::framed`).
        _ => pair
            .responder
            .serving_refusal(transport, case.kind, AppProtocol::Raw),
    };
    Cell {
        driver: driver_refused
            .as_ref()
            .map_or(pair.driver.name, |_| EPOLL.name),
        responder: responder_refused
            .as_ref()
            .map_or(pair.responder.name, |_| EPOLL.name),
        refused: driver_refused.or(responder_refused),
    }
}

/// Whether a side's epoll loop may wait directly in `case` over
/// `transport` where the cell does not run on direct waiting: an epoll
/// worker takes a lone connection by itself (before its other connections
/// arrive, after they are done) wherever the direct row covers the case.
/// (driver, responder).
pub fn may_wait_directly(case: &Case, transport: Transport) -> (bool, bool) {
    let kind = std::iter::once(case.kind);
    let driver = DIRECT
        .refuses(transport, false, case.paced(), kind)
        .is_none();
    let responder = DIRECT
        .serving_refusal(transport, case.kind, AppProtocol::Raw)
        .is_none();
    (driver, responder)
}

/// Whether a side's connection counts (`served`, from the run's record)
/// show that the cell's `backend` for that side served it: io_uring every
/// connection; direct every connection, opened by the epoll backend and
/// waiting directly; epoll every connection, waiting directly only where
/// `may_wait` ([`may_wait_directly`]). The error says what was counted.
pub fn check_served(
    backend: &str,
    served: &BackendConnections,
    may_wait: bool,
) -> Result<(), String> {
    let all = served.total();
    let ok = all > 0
        && if backend == URING.name {
            served.io_uring == all
        } else if backend == DIRECT.name {
            served.epoll == all && served.direct == all
        } else {
            served.epoll == all && (may_wait || served.direct == 0)
        };
    if ok {
        return Ok(());
    }
    Err(format!(
        "expected {backend}, counted {} on io_uring, {} on epoll of which {} waited directly",
        served.io_uring, served.epoll, served.direct
    ))
}

/// The page: how each pair is reached, then per transport a table of
/// cases against pairs, each refusal a numbered note (the same line recurs
/// across cells).
pub fn page() -> String {
    let mut page = format!(
        "# I/O backends: the matrix\n\
         \n\
         Generated from `crates/engine/src/matrix.rs` and the backend rows in\n\
         `crates/engine/src/iomode.rs`: edit those, not this page, then\n\
         regenerate it with `{REGENERATE}`\n\
         (a test fails while the two differ). The engine's test table\n\
         (`crates/engine/tests/engine/backends.rs`) runs every cell on loopback\n\
         and checks the exact transaction count on both sides, and which\n\
         backend served the cell on each side, from the connections each\n\
         side's backends counted (the record's `classes[].served_by`).\n\
         \n\
         A column is a driver backend against a responder backend. `io = uring`\n\
         gives io_uring on both sides; epoll waits directly (`direct`) on a\n\
         worker's lone connection, by itself, whenever a worker has one — so\n\
         an epoll column also begins and ends on it (before a worker's other\n\
         connections arrive, after they are done). A cell says `runs` when the\n\
         case runs on that pair; otherwise which backends it runs on (driver /\n\
         responder) and, in a note, the one line that refused the pair (for\n\
         io_uring, the run's warning).\n\
         \n\
         | column | `io` | driver threads | clients | responder threads |\n\
         |---|---|---|---|---|\n"
    );
    for p in PAIRS {
        let _ = writeln!(
            page,
            "| {} | {} | {} | {} | {} |",
            p.name(),
            p.io.name(),
            p.driver_threads,
            p.clients,
            p.responder_threads
        );
    }
    let mut notes: Vec<String> = Vec::new();
    for &transport in TRANSPORTS {
        let _ = write!(page, "\n## {}\n\n| case |", transport.name());
        for pair in PAIRS {
            let _ = write!(page, " {} |", pair.name());
        }
        page.push_str("\n|---|");
        page.push_str(&"---|".repeat(PAIRS.len()));
        page.push('\n');
        for case in CASES {
            let _ = write!(page, "| {} |", case.name);
            for pair in PAIRS {
                let cell = cell(pair, case, transport);
                let Some(why) = cell.refused else {
                    page.push_str(" runs |");
                    continue;
                };
                let note = match notes.iter().position(|n| *n == why) {
                    Some(i) => i + 1,
                    None => {
                        notes.push(why);
                        notes.len()
                    }
                };
                let _ = write!(page, " {} / {} ({note}) |", cell.driver, cell.responder);
            }
            page.push('\n');
        }
    }
    page.push_str("\n## Notes\n\n");
    for (i, note) in notes.iter().enumerate() {
        let _ = writeln!(page, "{}. {note}", i + 1);
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_is_reached_by_its_counts() {
        for pair in PAIRS {
            let per_driver_worker = pair.clients as usize / pair.driver_threads;
            let driver_direct = per_driver_worker == 1;
            assert_eq!(
                driver_direct,
                pair.driver.name == "direct",
                "{}",
                pair.name()
            );
            let per_responder_worker = pair.clients as usize / pair.responder_threads;
            if pair.io == IoMode::Epoll {
                let alone = per_responder_worker == 1;
                assert_eq!(alone, pair.responder.name == "direct", "{}", pair.name());
            }
        }
    }

    #[test]
    fn cells_follow_the_rows() {
        let [epoll, direct, _, uring] = [PAIRS[0], PAIRS[1], PAIRS[2], PAIRS[3]];
        let (rr, crr, think) = (&CASES[0], &CASES[1], &CASES[6]);
        let runs = |p: &Pair| Cell {
            driver: p.driver.name,
            responder: p.responder.name,
            refused: None,
        };
        for &t in TRANSPORTS {
            assert_eq!(cell(&epoll, crr, t), runs(&epoll));
        }
        assert_eq!(cell(&uring, rr, Transport::Tcp), runs(&uring));
        let crr_on_uring = cell(&uring, crr, Transport::Tcp);
        assert_eq!(
            (crr_on_uring.driver, crr_on_uring.responder),
            ("epoll", "epoll")
        );
        assert_eq!(
            crr_on_uring.refused.as_deref(),
            Some("CRR is not covered by the io_uring backend (RR and STR are)")
        );
        // Paced: the driver leaves direct waiting, its lone responder
        // connection keeps it.
        let paced = cell(&direct, think, Transport::Unix);
        assert_eq!((paced.driver, paced.responder), ("epoll", "direct"));
        let tls = cell(&direct, rr, Transport::Tls);
        assert_eq!((tls.driver, tls.responder), ("epoll", "epoll"));
    }

    #[test]
    fn served_counts_must_match_the_cells_backend() {
        let counts = |io_uring, epoll, direct| BackendConnections {
            io_uring,
            epoll,
            direct,
        };
        assert_eq!(check_served("io_uring", &counts(2, 0, 0), false), Ok(()));
        assert!(check_served("io_uring", &counts(0, 2, 0), false).is_err());
        assert!(check_served("io_uring", &counts(1, 1, 0), false).is_err());
        assert_eq!(check_served("direct", &counts(0, 1, 1), false), Ok(()));
        let never_direct = check_served("direct", &counts(0, 1, 0), true);
        assert_eq!(
            never_direct,
            Err(
                "expected direct, counted 0 on io_uring, 1 on epoll of which 0 waited directly"
                    .into()
            )
        );
        assert_eq!(check_served("epoll", &counts(0, 2, 1), true), Ok(()));
        assert!(check_served("epoll", &counts(0, 2, 1), false).is_err());
        assert!(check_served("epoll", &counts(2, 0, 0), true).is_err());
        assert!(
            check_served("epoll", &counts(0, 0, 0), true).is_err(),
            "nothing counted"
        );
        // CRR never waits directly, on either side; a paced driver neither.
        let (crr, think) = (&CASES[1], &CASES[6]);
        assert_eq!(may_wait_directly(crr, Transport::Tcp), (false, false));
        assert_eq!(may_wait_directly(think, Transport::Tcp), (false, true));
        assert_eq!(may_wait_directly(&CASES[0], Transport::Tls), (false, false));
    }

    #[test]
    fn the_page_has_a_row_per_case_and_transport() {
        let page = page();
        let is_case = |l: &&str| {
            CASES
                .iter()
                .any(|c| l.starts_with(&format!("| {} |", c.name)))
        };
        assert_eq!(
            page.lines().filter(is_case).count(),
            CASES.len() * TRANSPORTS.len()
        );
        let note = "1. CRR is not covered by the direct backend (RR and STR are)\n";
        assert!(page.contains(note), "{page}");
        let crr = "| CRR, server closes | runs | epoll / epoll (1) |";
        assert!(page.contains(crr), "{page}");
        assert!(
            page.contains("| RR | runs | runs | runs | runs |"),
            "{page}"
        );
    }
}
