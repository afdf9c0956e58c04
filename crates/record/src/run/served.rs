//! Which I/O backend served a class's connections, on each side: the
//! evidence a reader checks the stored effective `io` setting against (the
//! setting says what the run asked for, these counts what carried it). The
//! counts come from the backends themselves — a connection is counted by
//! the loop that opened or accepted it — so a run that fell back to epoll
//! silently still shows it here, and `io_served_elsewhere` warns.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A class's connections by the backend that served them, driver and
/// responder side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct ServedBy {
    /// The driver's connections of the class (warm-up included).
    pub driver: BackendConnections,
    /// The responder's connections of the class's test (its whole life);
    /// `None` when the responder did not count them (an older responder,
    /// or none reached).
    #[serde(default)]
    pub responder: Option<BackendConnections>,
}

/// Connections by backend. Every connection is counted once in `io_uring`
/// or `epoll`; `direct` counts those of `epoll` that entered direct waiting
/// at least once (the epoll backend waits directly on a worker's lone
/// connection), so it is at most `epoll`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct BackendConnections {
    /// Connections opened or accepted by the io_uring backend.
    pub io_uring: u64,
    /// Connections opened or accepted by the epoll backend (its readiness loop).
    pub epoll: u64,
    /// Of `epoll`, connections that entered direct waiting (blocking calls).
    pub direct: u64,
}

impl BackendConnections {
    /// The counts of two runs or agents together.
    pub fn add(&self, o: &BackendConnections) -> BackendConnections {
        BackendConnections {
            io_uring: self.io_uring + o.io_uring,
            epoll: self.epoll + o.epoll,
            direct: self.direct + o.direct,
        }
    }

    /// All connections counted.
    pub fn total(&self) -> u64 {
        self.io_uring + self.epoll
    }
}

impl ServedBy {
    /// The counts of two runs or agents of one class together (a side one
    /// of them did not count stays uncounted: a part of it is unknown).
    pub fn add(&self, o: &ServedBy) -> ServedBy {
        ServedBy {
            driver: self.driver.add(&o.driver),
            responder: match (self.responder, o.responder) {
                (Some(a), Some(b)) => Some(a.add(&b)),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_and_an_uncounted_side_stays_unknown() {
        let one = BackendConnections {
            io_uring: 2,
            epoll: 3,
            direct: 1,
        };
        let a = ServedBy {
            driver: one,
            responder: Some(one),
        };
        let sum = a.add(&a);
        assert_eq!(sum.driver.total(), 10);
        assert_eq!(sum.responder.map(|r| r.direct), Some(2));
        let b = ServedBy {
            responder: None,
            ..a
        };
        assert_eq!(a.add(&b).responder, None);
    }
}
