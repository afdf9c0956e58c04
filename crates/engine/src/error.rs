//! Errors of the engine layer. Errors of single data connections are not here:
//! they are counted per class in the results, never fatal.

use std::io;
use std::net::SocketAddr;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("bad target '{0}': {1} (use HOST:PORT, e.g. 127.0.0.1:12870 or [::1]:12870)")]
    BadTarget(String, String),
    #[error("cannot reach the responder at {0}: {1} (is `stackbench serve` running there?)")]
    Connect(SocketAddr, #[source] io::Error),
    #[error("control connection failed")]
    Control(#[source] io::Error),
    #[error("the responder refused: {0}")]
    Refused(String),
    /// The target answered the control hello as no responder would
    /// (one line: what it did, and the target to give it instead).
    #[error("{0}")]
    NotResponder(String),
    #[error("the responder closed the control connection")]
    ResponderGone,
    /// The transport cannot be used here (one line with the fix).
    #[error("{0}")]
    Transport(String),
    /// A plain server's target cannot be used as given (one line naming
    /// the target, what was seen, and the fix).
    #[error("{0}")]
    Target(String),
    /// Not enough file descriptors for the connections (one line with the fix).
    #[error("{0}")]
    Limit(String),
}
