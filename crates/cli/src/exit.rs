//! Exit statuses and the one-line error printing shared by every subcommand.

use std::fmt;

/// Success.
pub const OK: i32 = 0;
/// A comparison or threshold failed (e.g. `compare` found a WORSE verdict).
pub const FAILED_CHECK: i32 = 1;
/// Usage or input error (bad flag value, bad workload notation, bad file),
/// and by the project's convention (style.md 7) any runtime failure too
/// (cannot bind, cannot spawn the responder).
pub const USAGE: i32 = 2;
/// The run ended early or measured nothing; what was measured is printed,
/// marked incomplete.
pub const INCOMPLETE: i32 = 3;

/// An error caused by the user's input: printed as one line, exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// Shorthand for returning a usage error from a subcommand.
pub fn usage<T>(message: impl Into<String>) -> anyhow::Result<T> {
    Err(UsageError(message.into()).into())
}

/// Maps a subcommand's outcome to the process exit status, printing the error
/// (one line, its causes joined with ': ') on stderr. Every error is status 2:
/// usage errors and runtime failures alike (see [`USAGE`]).
pub fn code_for(result: anyhow::Result<i32>) -> i32 {
    result.unwrap_or_else(|err| {
        let line = err
            .chain()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join(": ");
        eprintln!("stackbench: error: {line}");
        USAGE
    })
}
