//! The one error of reading the kernel's accounting files, in a leaf so that
//! the pure parsers ([`super::parse`]) and the readers that wrap them
//! (`procfs/mod.rs`) share it without importing each other.

use std::path::PathBuf;

/// Failure to read or understand one accounting file.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    #[error("cannot read {path}: {source} (is /proc mounted and the process still running?)")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file} has an unexpected layout: {detail} (unsupported kernel? please report it)")]
    Malformed { file: String, detail: String },
}
