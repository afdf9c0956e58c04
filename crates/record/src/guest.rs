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
    /// A guest of a pair (`peer_kernel`): the qemu backend of the wire
    /// between the two guests; empty for a lone guest.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub wire: String,
    /// A guest of a pair: its adapter on the wire, as read in the guest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adapter: Option<GuestAdapter>,
    /// The driver's guest of a pair: the responder's guest (its kernel,
    /// size, boot time and adapter).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<Box<GuestEnvironment>>,
}

/// A guest's network adapter on the pair's wire, read inside the guest
/// (sysfs and the `SIOCETHTOOL` ioctl) after the link settings were applied.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GuestAdapter {
    /// Interface name in the guest, e.g. eth0.
    pub ifname: String,
    /// The kernel driver bound to it (`/sys/class/net/IF/device/driver`), e.g. virtio_net.
    pub driver: String,
    /// The guest's address on the wire, e.g. 10.77.0.1/24.
    pub address: String,
    /// MAC address.
    pub mac: String,
    /// MTU, in bytes.
    pub mtu_bytes: u32,
    /// Receive queues (`/sys/class/net/IF/queues/rx-*`).
    pub rx_queues: u32,
    /// Transmit queues (`/sys/class/net/IF/queues/tx-*`).
    pub tx_queues: u32,
    /// Offloads as the kernel reports them: (tso, gso, gro, tx_csum, rx_csum) by name, on or off.
    pub offloads: std::collections::BTreeMap<String, bool>,
    /// Why an offload could not be read (the ioctl's error), if one could not.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub offloads_error: String,
    /// With transport smc: the guest kernel's SMC-R statistics after the
    /// step (SMC_NETLINK_GET_STATS, SMC-R part), with an rxe (Soft-RoCE)
    /// device on this adapter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smc_r: Option<SmcRCounters>,
}

/// The SMC-R counters of one guest kernel (`smcr stats` of smc-tools reads
/// the same): connections that completed the SMC-R handshake as client or
/// server, by SMC version, and what moved over RDMA.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SmcRCounters {
    /// The rxe device put on the adapter, e.g. rxe0.
    pub device: String,
    /// Connections this kernel opened as client over SMC-R v1.
    pub client_v1: u64,
    /// Connections this kernel opened as client over SMC-R v2.
    pub client_v2: u64,
    /// Connections this kernel accepted as server over SMC-R v1.
    pub server_v1: u64,
    /// Connections this kernel accepted as server over SMC-R v2.
    pub server_v2: u64,
    /// Bytes sent over SMC-R.
    pub tx_bytes: u64,
    /// Bytes received over SMC-R.
    pub rx_bytes: u64,
    /// Send calls served over SMC-R.
    pub tx_calls: u64,
    /// Receive calls served over SMC-R.
    pub rx_calls: u64,
    /// Client handshakes (CLC exchanges) that failed.
    pub client_handshake_errors: u64,
    /// Server handshakes (CLC exchanges) that failed.
    pub server_handshake_errors: u64,
}

impl SmcRCounters {
    /// Connections that completed an SMC-R handshake on this kernel.
    pub fn connections(&self) -> u64 {
        self.client_v1 + self.client_v2 + self.server_v1 + self.server_v2
    }
}

impl GuestAdapter {
    /// `eth0 virtio_net 10.77.0.1/24, 1 rx/1 tx queues, mtu 1500, tso on gso on …`.
    pub fn summary(&self) -> String {
        let offloads: Vec<String> = self
            .offloads
            .iter()
            .map(|(k, v)| format!("{k} {}", if *v { "on" } else { "off" }))
            .collect();
        format!(
            "{} {} {}, {} rx/{} tx queues, mtu {}, {}",
            self.ifname,
            self.driver,
            self.address,
            self.rx_queues,
            self.tx_queues,
            self.mtu_bytes,
            if offloads.is_empty() {
                format!("offloads unread ({})", self.offloads_error)
            } else {
                offloads.join(" ")
            }
        ) + &self.smc_r.as_ref().map_or(String::new(), |c| {
            format!(
                "; SMC-R over {}: {} connections, {} B sent, {} B received",
                c.device,
                c.connections(),
                c.tx_bytes,
                c.rx_bytes
            )
        })
    }
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
        ) + &self.pair_summary()
    }

    /// A pair's part of [`GuestEnvironment::summary`]: the adapter, the wire
    /// and the responder's guest; empty for a lone guest.
    fn pair_summary(&self) -> String {
        let mut out = String::new();
        if let Some(a) = &self.adapter {
            out.push_str(&format!("; adapter {}", a.summary()));
        }
        if let Some(peer) = &self.peer {
            out.push_str(&format!(
                "; over {} to the responder's {}",
                if self.wire.is_empty() {
                    "a wire"
                } else {
                    &self.wire
                },
                peer.summary()
            ));
        }
        out
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
            ..GuestEnvironment::default()
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
