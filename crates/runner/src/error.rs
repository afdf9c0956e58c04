//! The runner's errors, typed by whose they are so that the binary can map
//! them to exit statuses: the input's (settings, workloads, files: the
//! message names the input and the fix) or the machine's at run time (a
//! responder that will not start, an unreadable CPU affinity). A run that
//! starts and ends early is not an error: its record comes back with
//! `complete = false` and what it measured.

/// Why a run could not be resolved or measured.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The input cannot run as given; the message names the input and the fix.
    #[error("{0}")]
    Input(String),
    /// The machine failed the run before it measured anything (one line,
    /// its cause included).
    #[error("{0}")]
    Runtime(String),
}

impl RunError {
    /// A runtime failure with what was being done: `cannot start the responder process: …`.
    pub fn runtime(doing: &str, cause: impl std::fmt::Display) -> RunError {
        RunError::Runtime(format!("{doing}: {cause}"))
    }
}

impl From<std::io::Error> for RunError {
    fn from(e: std::io::Error) -> RunError {
        RunError::Runtime(e.to_string())
    }
}

impl From<serde_json::Error> for RunError {
    fn from(e: serde_json::Error) -> RunError {
        RunError::Runtime(e.to_string())
    }
}

/// Shorthand for refusing the input.
pub fn input<T>(message: impl Into<String>) -> Result<T, RunError> {
    Err(RunError::Input(message.into()))
}
