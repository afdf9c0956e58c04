//! A load distributor's description, as a lab file gives it: the
//! `[[distributor]]` entry with its IPVS scheduler and forwarding method.
//! Pure data, shared by the parser, the layout (the targets' routes back),
//! [`crate::ipvs`] (the kernel's names) and [`crate::distributor`] (which
//! programs it).

use std::net::IpAddr;

/// How IPVS picks a real server for a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// Round robin (`rr`).
    Rr,
    /// Weighted round robin (`wrr`).
    Wrr,
    /// Least-connection (`lc`).
    Lc,
    /// Weighted least-connection (`wlc`).
    Wlc,
}

impl Scheduler {
    /// Every scheduler, as spelled in a lab file and by the kernel.
    pub const ALL: [Scheduler; 4] = [Scheduler::Rr, Scheduler::Wrr, Scheduler::Lc, Scheduler::Wlc];

    /// The kernel's name (`IPVS_SVC_ATTR_SCHED_NAME`, module `ip_vs_<name>`).
    pub fn name(self) -> &'static str {
        match self {
            Scheduler::Rr => "rr",
            Scheduler::Wrr => "wrr",
            Scheduler::Lc => "lc",
            Scheduler::Wlc => "wlc",
        }
    }

    /// Parses a scheduler's name; the error lists the allowed ones.
    pub fn parse(text: &str) -> std::result::Result<Scheduler, String> {
        Scheduler::ALL
            .into_iter()
            .find(|s| s.name() == text)
            .ok_or_else(|| format!("unknown IPVS scheduler '{text}': use rr, wrr, lc or wlc"))
    }
}

/// How IPVS sends a connection's packets to the real server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Forwarding {
    /// Masquerading: the destination address is rewritten to the real
    /// server's, and replies come back through the distributor.
    Nat,
    /// Direct routing: the frame is sent to the real server's MAC with the
    /// virtual address kept; the real server holds the virtual address
    /// itself and replies straight to the client.
    Dr,
}

impl Forwarding {
    pub fn name(self) -> &'static str {
        match self {
            Forwarding::Nat => "nat",
            Forwarding::Dr => "dr",
        }
    }

    pub fn parse(text: &str) -> std::result::Result<Forwarding, String> {
        match text {
            "nat" => Ok(Forwarding::Nat),
            "dr" => Ok(Forwarding::Dr),
            _ => Err(format!(
                "unknown IPVS forwarding '{text}': use nat or dr (direct routing)"
            )),
        }
    }

    /// `IP_VS_CONN_F_MASQ` / `IP_VS_CONN_F_DROUTE`.
    pub fn flag(self) -> u32 {
        match self {
            Forwarding::Nat => 0,
            Forwarding::Dr => 3,
        }
    }
}

/// One `[[distributor]]` entry.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Distributor {
    /// The host it runs on.
    pub host: String,
    /// The virtual address: one of the host's addresses.
    pub address: IpAddr,
    pub port: u16,
    /// Hosts behind it, each on a direct link with it.
    pub targets: Vec<String>,
    pub scheduler: Scheduler,
    pub forwarding: Forwarding,
    /// One weight per target (1 each when the file gives none).
    pub weights: Vec<u32>,
}
