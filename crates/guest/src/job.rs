//! A job: the one stackbench command a guest runs, and what comes back. A
//! leaf of its own so that the initramfs that packs a job and the boot that
//! runs it (`lib.rs`) both name it without importing each other.

use std::path::PathBuf;
use std::time::Duration;

use stackbench_record::GuestEnvironment;

/// One stackbench command to run in the guest.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// The arguments after the program name, e.g. `["run", "RR1(1B/1B)", "--json"]`.
    /// A first argument that is an absolute path runs that guest program
    /// instead of stackbench (`["/bin/sh", "-c", "modprobe tls"]`).
    pub args: Vec<String>,
    /// (host file, absolute guest path) pairs copied into the guest.
    pub files: Vec<(PathBuf, String)>,
    /// For the whole guest run, boot included.
    pub timeout: Duration,
}

/// The job's result.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOutput {
    /// The command's exit status (128 + signal when a signal ended it).
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// What the guest was, as the run's environment stores it.
    pub info: GuestEnvironment,
    /// The last ~40 lines of the guest console.
    pub console_tail: String,
}
