//! The engine layer: the control protocol, the responder (`stackbench serve`),
//! the driver, and the event-driven workers both are built on.
//!
//! Layout: `protocol` (versioned control messages), `sockopt` (socket options
//! and the raw I/O calls of the hot path), `timer` (the timing wheel for
//! per-connection timers), `affinity` (CPU sets), `responder` and `driver`.

pub mod affinity;
pub mod driver;
pub mod error;
pub mod protocol;
pub mod responder;
pub mod sampling;
pub mod sockopt;
pub mod timer;

pub use driver::{run_workload, ControlClient, PacingConfig, Progress, RunConfig, RunOutcome};
pub use error::EngineError;
pub use responder::{Responder, ResponderConfig, ResponderHandle};
