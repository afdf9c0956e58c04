//! `io_served_elsewhere`: the stored effective `io` setting against the
//! backends that served the class's connections (`ClassResult::served_by`).
//! The setting is what the run settled on before it started; the counts are
//! what each side's loops actually opened or accepted. A responder without
//! io_uring serves on epoll and says so only on its own stderr, so without
//! this check a run stored as `io uring` could have measured epoll.

use stackbench_model::IoMode;
use stackbench_record::{BackendConnections, ClassResult};

use super::Warning;

/// The sides whose connections the stored `io` does not account for, or
/// `None` when every counted connection was served as it says (`auto` is
/// never stored; a class without counts, from an older record, is not
/// judged).
pub fn check_io_served(class: &ClassResult, io: IoMode) -> Option<Warning> {
    let served = class.served_by.as_ref()?;
    let sides = [
        ("driver", Some(&served.driver)),
        ("responder", served.responder.as_ref()),
    ];
    let elsewhere: Vec<String> = sides
        .into_iter()
        .filter_map(|(side, counts)| Some((side, counts?)))
        .filter_map(|(side, c)| clause(side, c, io))
        .collect();
    (!elsewhere.is_empty()).then(|| Warning::IoServedElsewhere {
        io: io.name(),
        sides: elsewhere,
    })
}

/// One side's connections that `io` does not account for, in words.
fn clause(side: &str, c: &BackendConnections, io: IoMode) -> Option<String> {
    let total = c.total();
    match io {
        IoMode::Uring if c.epoll > 0 => Some(format!(
            "the {side} served {} of {total} connections on epoll ({} of them waiting directly)",
            c.epoll, c.direct
        )),
        IoMode::Epoll if c.io_uring > 0 => Some(format!(
            "the {side} served {} of {total} connections on io_uring",
            c.io_uring
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::ServedBy;

    fn class(driver: (u64, u64, u64), responder: Option<(u64, u64, u64)>) -> ClassResult {
        let counts = |(io_uring, epoll, direct)| BackendConnections {
            io_uring,
            epoll,
            direct,
        };
        let mut c = crate::warnings::tests::sample_class();
        c.served_by = Some(ServedBy {
            driver: counts(driver),
            responder: responder.map(counts),
        });
        c
    }

    #[test]
    fn a_uring_run_served_by_epoll_on_either_side_is_flagged() {
        let all_uring = class((4, 0, 0), Some((4, 0, 0)));
        assert_eq!(check_io_served(&all_uring, IoMode::Uring), None);
        // The responder fell back (no io_uring there): the driver's counts
        // alone would pass.
        let responder_fell_back = class((4, 0, 0), Some((0, 4, 1)));
        let w = check_io_served(&responder_fell_back, IoMode::Uring).unwrap();
        assert_eq!(w.code(), "io_served_elsewhere");
        let m = w.to_string();
        assert!(
            m.contains(
                "the responder served 4 of 4 connections on epoll (1 of them waiting directly)"
            ),
            "{m}"
        );
        assert!(!m.contains("the driver"), "{m}");
        let both = class((0, 4, 4), Some((0, 4, 0)));
        let Some(Warning::IoServedElsewhere { sides, .. }) = check_io_served(&both, IoMode::Uring)
        else {
            panic!("no warning");
        };
        assert_eq!(sides.len(), 2, "{sides:?}");
    }

    #[test]
    fn epoll_and_direct_waiting_are_what_io_epoll_says() {
        let epoll = class((0, 2, 2), Some((0, 2, 1)));
        assert_eq!(check_io_served(&epoll, IoMode::Epoll), None);
        let uring_anyway = class((2, 0, 0), None);
        let w = check_io_served(&uring_anyway, IoMode::Epoll).unwrap();
        assert!(w
            .to_string()
            .contains("the driver served 2 of 2 connections on io_uring"));
        // No counts (an older record): nothing to judge.
        let mut old = epoll.clone();
        old.served_by = None;
        assert_eq!(check_io_served(&old, IoMode::Uring), None);
    }
}
