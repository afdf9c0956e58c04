//! Errors of the model layer: every message names the bad part of the input and
//! shows a valid example, so a user can fix the command line without the docs.

use thiserror::Error;

/// A valid notation shown in every error message.
pub const EXAMPLE: &str =
    "RR10(4kB/4kB), CRR40(64B/8kB), STR3(1B/20MB) or RR1(100B/800B)+STR10(1B/20MB)";

/// Why a workload notation string did not parse.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NotationError {
    #[error("empty workload: give one such as {EXAMPLE}")]
    Empty,
    #[error("unknown workload kind in '{part}' of '{whole}': use RR, CRR or STR (e.g. {EXAMPLE})")]
    UnknownKind { part: String, whole: String },
    /// A `+` with nothing after it (`RR1(1B/1B)+`) or before it.
    #[error("empty class {place} in '{whole}': remove the '+' or add a class")]
    EmptyClass { place: &'static str, whole: String },
    #[error("bad client count '{part}' in '{whole}': use 1 to 1024K clients, digits with an optional K (=1024), e.g. RR256K(100B/800B)")]
    BadCount { part: String, whole: String },
    #[error("malformed class '{part}' in '{whole}': expected NAME<clients>(<request>/<response>), e.g. {EXAMPLE}")]
    Malformed { part: String, whole: String },
    #[error(
        "bad size '{part}' in '{whole}': a size is a number then a unit, e.g. 64B, 4kB, 1.5MB"
    )]
    BadSize { part: String, whole: String },
    #[error("unknown size unit '{unit}' in '{whole}': use B, kB (=KB=KiB), MB (=MiB) or GB (=GiB), e.g. RR10(4kB/4kB)")]
    UnknownUnit { unit: String, whole: String },
    #[error("size '{part}' in '{whole}' is too large: at most 2^64-1 bytes")]
    TooLarge { part: String, whole: String },
    #[error("size '{part}' in '{whole}' is {bytes} bytes, not a whole number: give whole bytes, e.g. 4kB or 4100B")]
    NotWholeBytes {
        part: String,
        whole: String,
        bytes: String,
    },
    #[error("bad pacing '@{pacing}' in '{whole}': {message} (e.g. RR8K(100B/800B)@30s or RR10(1kB/1kB)@5000/s)")]
    BadPacing {
        pacing: String,
        whole: String,
        message: String,
    },
    #[error("size '{part}' in '{whole}' is zero: every transaction sends and receives at least 1B, e.g. RR1(1B/1B)")]
    ZeroSize { part: String, whole: String },
}
