//! The model layer: workload notation, units, the settings table, study files
//! and validation. No sockets, no clocks: everything here is a pure function
//! of its input (a study file is read by [`study::load_study`], the one
//! exception), so the engine, results and planner agree on what
//! `RR10(4kB/4kB)` means.

pub mod duration;
pub mod error;
pub mod notation;
pub mod pacing;
pub mod segment;
pub mod settings;
pub mod size;
pub mod study;
pub mod sweep;
pub mod tn3270_script;
pub mod units;

pub use error::NotationError;
pub use notation::{ClassSpec, Kind, StreamDirection, Workload};
pub use pacing::{Arrivals, Pacing, PerSecond, ThinkTime};
pub use settings::{
    AmqpBody, AmqpCompress, AmqpParams, AmqpPattern, AmqpQueues, AppProtocol, ClassPriorities,
    CrrClose, H2Params, IoMode, SocketOptions, Spin, TlsParams, Transport,
};

/// Largest client count one class may ask for (1024K): the user-population work
/// targets 256K connections in one process, so 4× that is a generous ceiling
/// that still keeps counts in a `u32`.
pub const MAX_CLIENTS: u32 = 1024 * 1024;
