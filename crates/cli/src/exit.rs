//! Exit statuses and the one-line error printing shared by every subcommand.

use std::fmt;

/// Success.
pub const OK: i32 = 0;
/// A comparison or threshold failed (e.g. `compare` found a WORSE verdict).
pub const FAILED_CHECK: i32 = 1;
/// Usage or input error (bad flag value, bad workload notation, bad file),
/// and by the project's convention (exit 0 success, 1 a failed check, 2
/// usage or runtime error) any runtime failure too
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
        eprintln!("stackbench: error: {}", error_line(&err));
        USAGE
    })
}

/// The error and its causes joined with ': ', each said once. A library
/// error whose message already prints its source (thiserror's `{source}`,
/// as in "cannot read lab file F: No such file…" or "study step 1/1 … failed:
/// 30000 connections need …") also reports that source as its cause; joined
/// blindly, the cause's text came out twice.
fn error_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if parts.last().is_some_and(|outer| outer.contains(&text)) {
            continue;
        }
        parts.push(text);
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As the lab's and the study's errors are written: the message prints
    /// the source and the source is also the cause.
    #[derive(Debug)]
    struct Step {
        source: std::io::Error,
    }

    impl fmt::Display for Step {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "study step 1/1 failed: {}", self.source)
        }
    }

    impl std::error::Error for Step {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_the_message_already_prints_is_said_once() {
        let limit = "30000 connections need 30262 file descriptors but RLIMIT_NOFILE is 20000";
        let err = anyhow::Error::new(Step {
            source: std::io::Error::other(limit),
        });
        assert_eq!(err.chain().count(), 2);
        assert_eq!(error_line(&err), format!("study step 1/1 failed: {limit}"));
        // A cause the message does not print is still joined on.
        let err = anyhow::Error::new(std::io::Error::other("denied")).context("open db");
        assert_eq!(error_line(&err), "open db: denied");
    }
}
