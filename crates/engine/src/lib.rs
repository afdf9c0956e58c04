//! The engine layer: the control protocol, the responder (`stackbench serve`),
//! the driver, and the event-driven workers both are built on.
//!
//! Layout: `control` (the versioned messages of the control connection
//! between driver and responder), `app` (application
//! protocols above the byte stream: what a request and a response are), `transport` (the seam
//! every data connection is opened, read, written and closed through: tcp,
//! unix, mptcp), `sockopt` (socket options and the raw I/O calls under the
//! fd-based transports), `limits` (file-descriptor budget), `timer` (the
//! timing wheel for per-connection timers), `affinity` (CPU sets),
//! `test_stats` (the responder's counters of one test: the control messages
//! carry them, the transport rows count into them), `lock` (a mutex lock
//! that ignores poisoning),
//! `sidecar` (the TLS proxy processes of `tls_mode sidecar`), `responder`
//! and `driver`, `iomode` (epoll or io_uring, and when io_uring falls
//! back), `matrix` (which backend serves which case, as the rows say).

pub mod affinity;
pub mod app;
pub mod control;
pub mod driver;
pub mod error;
pub mod iomode;
pub mod kmod;
pub mod limits;
mod lock;
pub mod matrix;
pub mod responder;
pub mod sampling;
pub mod sched;
pub mod server_side;
pub mod sidecar;
pub mod sockdiag;
pub mod sockopt;
pub mod test_stats;
pub mod timer;
pub mod token;
pub mod transport;

pub use driver::{
    run_workload, run_workload_gated, ControlClient, GateState, PacingConfig, Progress, RunConfig,
    RunOutcome, StartGate, IDLE_BOUND_NS,
};
pub use error::EngineError;
pub use responder::{Responder, ResponderConfig, ResponderHandle};
