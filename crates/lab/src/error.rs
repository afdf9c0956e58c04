//! The lab's errors: each one line that names the input or the kernel object
//! and says what to do, so a user can fix the input without reading code.
//! The cli prints them and exits 2.

use std::io;

use thiserror::Error;

/// Everything that can go wrong reading a lab file or building a lab.
#[derive(Debug, Error)]
pub enum LabError {
    /// The lab file is not valid: where, and what to write instead.
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// The lab file cannot be read.
    #[error("cannot read lab file {file}: {source}")]
    Read { file: String, source: io::Error },
    /// The caller lacks the privileges (EPERM/EACCES) to change namespaces,
    /// links or qdiscs.
    #[error(
        "{action}: permission denied: lab commands need root (CAP_SYS_ADMIN and CAP_NET_ADMIN); run them with sudo"
    )]
    NotRoot { action: String },
    /// The kernel lacks a feature the lab needs.
    #[error("{action}: the kernel has no {feature}: build it with {config} (or load its module), or use a kernel that has it, e.g. a guest (`--kernel linux-image-6.1.0-53-cloud-amd64-unsigned`)")]
    KernelFeature {
        action: String,
        feature: String,
        config: String,
    },
    /// A command the lab needs is not installed.
    #[error("{action}: the {tool} command is missing: install the {package} package (apt-get install {package})")]
    Tool {
        action: String,
        tool: String,
        package: String,
    },
    /// A lab of this name is up from another file (see [`crate::owner`]).
    #[error("lab '{lab}' is up from {owner}, not {file}: two lab files share the name '{lab}': give {file} another name, or take the other lab down first (`stackbench lab down {owner}`)")]
    Owned {
        lab: String,
        owner: String,
        file: String,
    },
    /// A host names CPUs this machine does not have.
    #[error("host '{host}': CPUs {cpus} are not all online here (this machine has {online}): change cpus in the lab file")]
    Cpus {
        host: String,
        cpus: String,
        online: String,
    },
    /// Any other failure of a system call or netlink request, with what was
    /// being done and the kernel's own message when it gave one.
    #[error("{action}: {source}{}", detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    System {
        action: String,
        source: io::Error,
        detail: Option<String>,
    },
}

impl LabError {
    /// A failed system call while doing `action`: permission errors become
    /// [`LabError::NotRoot`].
    pub fn os(action: impl Into<String>, source: io::Error) -> LabError {
        LabError::kernel(action, source, None)
    }

    /// As [`LabError::os`], with the kernel's extended-ack message if any.
    pub fn kernel(
        action: impl Into<String>,
        source: io::Error,
        detail: Option<String>,
    ) -> LabError {
        let action = action.into();
        match source.raw_os_error() {
            Some(libc::EPERM) | Some(libc::EACCES) => LabError::NotRoot { action },
            _ => LabError::System {
                action,
                source,
                detail,
            },
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = LabError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permission_errors_say_root() {
        let e = LabError::os(
            "create namespace sb-x-a",
            io::Error::from_raw_os_error(libc::EPERM),
        );
        let text = e.to_string();
        assert!(text.contains("need root"), "{text}");
        assert!(
            text.starts_with("create namespace sb-x-a: permission denied"),
            "{text}"
        );
        let e = LabError::kernel(
            "add qdisc",
            io::Error::from_raw_os_error(libc::EINVAL),
            Some("bad burst".into()),
        );
        assert!(e.to_string().ends_with("(bad burst)"), "{e}");
    }
}
