//! The guest crate's errors: each one line naming the input and the fix.

use std::io;
use std::path::PathBuf;

/// Why a guest could not run a job.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    #[error("kernel package '{package}': {detail}; `apt-cache search linux-image` lists the kernel packages")]
    KernelPackage { package: String, detail: String },
    #[error("kernel '{path}': {detail}; give a Debian kernel package name (e.g. linux-image-6.1.0-53-cloud-amd64-unsigned) or an unpacked package's boot/vmlinuz-REL with lib/modules/REL beside")]
    KernelPath { path: String, detail: String },
    #[error("kernel '{kernel}' ({release}) has no virtio-net driver (virtio_net neither built in nor a module): a guest of a pair needs it for its adapter; use a Debian kernel package (cloud or generic)")]
    NoVirtioNet { kernel: String, release: String },
    #[error("{tool} not found on PATH: install {package} (apt-get install {package})")]
    MissingTool {
        tool: &'static str,
        package: &'static str,
    },
    #[error("guest file '{}': {source}; give an existing host file as --file HOST=GUEST", host.display())]
    JobFile { host: PathBuf, source: io::Error },
    #[error("guest file path '{0}': must be absolute and outside /sb, /init, /bin, /sbin, /lib (e.g. /work/lab.toml)")]
    GuestPath(String),
    #[error("--accel kvm: {0}; use --accel tcg (emulated) or --accel auto")]
    Kvm(String),
    #[error("{action}: {source}")]
    Io { action: String, source: io::Error },
    #[error("guest job timed out after {timeout_s} s (raise --timeout); console: {tail}")]
    Timeout { timeout_s: u64, tail: String },
    #[error("guest stopped without a result ({detail}); console: {tail}")]
    NoResult { detail: String, tail: String },
    #[error("guest init failed: {detail}; console: {tail}")]
    Init { detail: String, tail: String },
}

impl GuestError {
    /// An I/O error while doing `action` (a phrase naming the file or tool).
    pub fn io(action: impl Into<String>, source: io::Error) -> GuestError {
        GuestError::Io {
            action: action.into(),
            source,
        }
    }
}

/// The last `lines` non-empty lines of `console`, joined into one line for
/// an error message.
pub fn one_line_tail(console: &str, lines: usize) -> String {
    let kept: Vec<&str> = console
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = kept.len().saturating_sub(lines);
    let tail = kept[start..].join(" | ");
    if tail.is_empty() {
        "(empty)".to_string()
    } else {
        tail
    }
}
