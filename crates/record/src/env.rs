//! The environment stored beside every run record: the machine a run was
//! measured on (kernel, CPUs, each side's CPU set, governor, interface,
//! TCP sysctls) and, where the run crossed a lab or ran in a guest VM, those.
//! Capturing it is `stackbench_results::env::capture`; this module holds the
//! stored form only.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The interface a run's traffic used.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct InterfaceInfo {
    /// Interface name, e.g. `lo`.
    pub name: String,
    /// MTU, bytes.
    pub mtu_bytes: Option<u32>,
    /// Offload feature → `on`/`off` (with `[fixed]` when ethtool says so).
    /// Empty when `ethtool` is not installed.
    pub offloads: BTreeMap<String, String>,
    /// GSO/GRO size limits from `/sys/class/net/IF/`, read even without ethtool.
    pub gso_max_size_bytes: Option<u64>,
    /// GRO size limit, bytes.
    pub gro_max_size_bytes: Option<u64>,
    /// Where the offload list came from: `"ethtool"` or `"unavailable"`.
    pub offload_source: String,
}

/// The machine a run was measured on. Stored beside every run record.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    /// The machine's host name.
    pub hostname: Option<String>,
    /// `uname -r`.
    pub kernel_release: Option<String>,
    /// CPU model name from `/proc/cpuinfo`.
    pub cpu_model: Option<String>,
    /// Online logical CPUs.
    pub cpu_count: usize,
    /// CPUs the driver was pinned to (empty: not pinned).
    pub client_cpus: Vec<usize>,
    /// CPUs the responder was pinned to (empty: not pinned or unknown).
    pub server_cpus: Vec<usize>,
    /// cpufreq scaling governor of CPU 0, when the kernel exposes it.
    pub governor: Option<String>,
    /// The interface the run's traffic used; `None` when it could not be told.
    pub interface: Option<InterfaceInfo>,
    /// Sysctl name (`net.ipv4.tcp_rmem`) → value, whitespace collapsed.
    pub sysctls: BTreeMap<String, String>,
    /// The lab the run crossed (`run --lab`): its path and the kernel's
    /// values of each interface on it; absent for loopback and remote runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<crate::lab::LabEnvironment>,
    /// The guest VM the run executed in (`kernel` other than `host`): its
    /// kernel, accelerator (`emulated` under TCG), size and qemu; absent for
    /// runs on this machine's kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<crate::guest::GuestEnvironment>,
    /// The traffic observation a `stackbench applicability` projection run
    /// stands for (see docs/applicability.md); absent for other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applicability: Option<crate::applicability::Applicability>,
}

impl Environment {
    /// A one-line summary for reports: `6.1.0 · AMD EPYC ×8 · lo MTU 65536`.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!(
            "kernel {}",
            self.kernel_release.as_deref().unwrap_or("unknown")
        )];
        parts.push(format!(
            "{} × {} CPUs",
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.cpu_count
        ));
        if let Some(i) = &self.interface {
            let mtu = i.mtu_bytes.map_or("?".to_string(), |m| m.to_string());
            parts.push(format!("{} MTU {mtu}", i.name));
        }
        if let Some(lab) = &self.lab {
            parts.push(lab.path_text());
        }
        if let Some(g) = &self.guest {
            let emulated = if g.emulated { ", emulated" } else { "" };
            parts.push(format!(
                "guest kernel {} ({}{emulated})",
                g.kernel_release, g.accel
            ));
            if let Some(peer) = &g.peer {
                parts.push(format!(
                    "over a virtual wire to guest kernel {}",
                    peer.kernel_release
                ));
            }
        }
        parts.join(" · ")
    }
}
