//! The start barrier of a run split over agents (several driver processes):
//! each agent connects its clients, says it is armed, and opens its window at
//! the one start time the controller sends to all of them — uperf's
//! master/slave barriers and perfSONAR pScheduler's common future start time,
//! rather than k6-operator's runners unpaused one by one, whose start skew
//! grows with their number. The driver's watch polls the gate on every tick
//! from its own thread; the gate's owner (the agent) does the talking.

use std::time::SystemTime;

/// What the watch asks of the gate on each tick.
pub trait StartGate {
    /// `armed`: every client of this process is connected (or the connect
    /// deadline passed). Called on every tick, also after the window opened,
    /// so that the controller can end the run early.
    fn poll(&mut self, armed: bool) -> GateState;
}

/// The gate's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum GateState {
    /// No start time yet: keep the clients connected and wait.
    Wait,
    /// Open the window (start the warm-up) at this instant of this host's clock.
    StartAt(SystemTime),
    /// End the run now, incomplete, for this reason (the controller said
    /// stop, or its connection was lost).
    Abort(String),
}

/// Nanoseconds from `epoch_now_ns` (now, on a monotonic epoch) to the
/// wall-clock instant `at` (0 when it has passed): where on the monotonic
/// epoch a start time given on the wall clock falls.
pub fn ns_until(at: SystemTime, epoch_now_ns: u64) -> u64 {
    let ahead = at
        .duration_since(SystemTime::now())
        .map_or(0, |d| d.as_nanos() as u64);
    epoch_now_ns + ahead
}
