//! The guest a run executed in (`--kernel PACKAGE|PATH`), as stored
//! in its environment: the kernel setting and what the guest reported
//! (`uname -r` inside it), how its CPU was provided (KVM, or TCG emulation),
//! its size, the qemu that ran it and the host kernel under qemu. Results
//! from a TCG guest are `emulated`: functional only, so compare and the
//! report refuse performance verdicts on them. Serde defaults throughout, so
//! environments stored before guests existed (no `guest` at all) still read.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The note printed under a comparison whose runs were emulated.
pub const EMULATED_NOTE: &str = "measured in a TCG-emulated guest: functional only, no performance verdict; use a KVM guest or the host kernel";

/// The guest part of a run's environment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GuestEnvironment {
    /// The kernel booted: a Debian package name (a pattern setting's newest match) or a path.
    pub kernel: String,
    /// `uname -r` inside the guest.
    pub kernel_release: String,
    /// `"kvm"` or `"tcg"`: how the guest's CPUs were provided.
    pub accel: String,
    /// True under TCG: timings are functional only.
    pub emulated: bool,
    /// Virtual CPUs of the guest.
    pub vcpus: u32,
    /// Memory of the guest, in MiB.
    pub memory_mib: u64,
    /// `qemu-system-x86_64 --version`, first line's version number.
    pub qemu_version: String,
    /// `uname -r` of the machine that ran qemu.
    pub host_kernel_release: String,
    /// Seconds from starting qemu to the guest's stackbench running.
    pub boot_s: f64,
}

impl GuestEnvironment {
    /// `guest kernel 6.1.0-48-cloud-amd64 (linux-image-…), tcg — emulated
    /// (TCG): timings are functional only, 2 vCPUs, 2048 MiB, qemu 7.2.9, on
    /// host kernel 6.8.0, booted in 4.1 s`.
    pub fn summary(&self) -> String {
        let release = if self.kernel_release.is_empty() {
            "unknown release"
        } else {
            &self.kernel_release
        };
        let accel = if self.emulated {
            format!(
                "{} — emulated (TCG): timings are functional only",
                self.accel
            )
        } else {
            self.accel.clone()
        };
        let qemu = if self.qemu_version.is_empty() {
            "unknown"
        } else {
            &self.qemu_version
        };
        format!(
            "guest kernel {release} ({}), {accel}, {} vCPUs, {} MiB, qemu {qemu}, on host kernel {}, booted in {:.1} s",
            self.kernel,
            self.vcpus,
            self.memory_mib,
            if self.host_kernel_release.is_empty() {
                "unknown"
            } else {
                &self.host_kernel_release
            },
            self.boot_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_says_emulated_and_old_environments_read() {
        let g = GuestEnvironment {
            kernel: "linux-image-6.1.0-48-cloud-amd64-unsigned".into(),
            kernel_release: "6.1.0-48-cloud-amd64".into(),
            accel: "tcg".into(),
            emulated: true,
            vcpus: 2,
            memory_mib: 2048,
            qemu_version: "7.2.9".into(),
            host_kernel_release: "6.8.0".into(),
            boot_s: 4.12,
        };
        assert_eq!(
            g.summary(),
            "guest kernel 6.1.0-48-cloud-amd64 (linux-image-6.1.0-48-cloud-amd64-unsigned), \
             tcg — emulated (TCG): timings are functional only, 2 vCPUs, 2048 MiB, qemu 7.2.9, \
             on host kernel 6.8.0, booted in 4.1 s"
        );
        let kvm = GuestEnvironment {
            accel: "kvm".into(),
            emulated: false,
            ..g.clone()
        };
        assert!(!kvm.summary().contains("emulated"), "{}", kvm.summary());
        let back: GuestEnvironment =
            serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
        assert_eq!(back, g);
        let old: GuestEnvironment = serde_json::from_str("{\"kernel\":\"x\"}").unwrap();
        assert!(!old.emulated && old.vcpus == 0);
    }
}
