//! The lab a run crossed (`run --lab FILE --from A --to B`), as stored in
//! its environment: the lab's name, the path A→B (routers on it) and, for
//! each interface on the path, the kernel's values read back before the
//! measurement window and again after it. Serde defaults throughout, so
//! environments stored before labs existed (no `lab` at all) still read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The lab part of a run's environment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LabEnvironment {
    /// The lab's name (the `name` of its file).
    pub name: String,
    /// The lab file as the run gave it.
    pub file: String,
    /// Host the driver ran in.
    pub from: String,
    /// Host the responder ran in.
    pub to: String,
    /// Routers on the path, in order; empty for a direct link.
    pub hops: Vec<String>,
    /// The responder's address in host `to`.
    pub responder_address: String,
    /// Interfaces on the path from `from` to `to`, read before the window.
    pub interfaces: Vec<LabInterface>,
    /// The same read after the window; empty when it could not be read.
    pub interfaces_after: Vec<LabInterface>,
}

/// One interface on the path, as the kernel reported it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LabInterface {
    /// Namespace, `sb-<lab>-<host>`.
    pub namespace: String,
    pub name: String,
    pub mtu_bytes: u32,
    /// The shaping qdisc's rate (tbf); `None` = unshaped.
    pub rate_bps: Option<u64>,
    pub burst_bytes: Option<u64>,
    /// Root qdisc kind (`tbf`, `htb`, `noqueue`).
    pub qdisc: String,
    /// Offload → on/off (`tso`, `gso`, `gro`, `tx_csum`, `rx_csum`); empty
    /// when unreadable.
    pub offloads: BTreeMap<String, bool>,
    /// Addresses with prefix lengths.
    pub addresses: Vec<String>,
    /// Bytes sent and received by the end of the read (the kernel's counters).
    pub tx_bytes: Option<u64>,
    pub rx_bytes: Option<u64>,
}

impl LabInterface {
    /// The configuration without the traffic counters (what must not change
    /// during a window).
    pub fn config(&self) -> LabInterface {
        LabInterface {
            tx_bytes: None,
            rx_bytes: None,
            ..self.clone()
        }
    }

    /// `mtu 1500, tbf 100Mbit, tso on gso on …`.
    pub fn summary(&self) -> String {
        let rate = self.rate_bps.map_or("unshaped".to_string(), |r| {
            format!("rate {}", stackbench_model::units::format_bit_rate(r))
        });
        let offloads: Vec<String> = self
            .offloads
            .iter()
            .map(|(n, on)| format!("{n} {}", if *on { "on" } else { "off" }))
            .collect();
        let offloads = if offloads.is_empty() {
            "offloads unreadable".to_string()
        } else {
            offloads.join(" ")
        };
        format!(
            "{}/{}: MTU {}, {rate}, {offloads}, {}",
            self.namespace,
            self.name,
            self.mtu_bytes,
            self.addresses.join(" ")
        )
    }
}

impl LabEnvironment {
    /// Interfaces whose configuration differs between the reads before and
    /// after the window, as `name: before → after`.
    pub fn changes(&self) -> Vec<String> {
        if self.interfaces_after.is_empty() {
            return Vec::new();
        }
        self.interfaces
            .iter()
            .zip(&self.interfaces_after)
            .filter(|(a, b)| a.config() != b.config())
            .map(|(a, b)| format!("{} → {}", a.summary(), b.summary()))
            .collect()
    }

    /// `lab pair: client → server, direct` (or `via r1`).
    pub fn path_text(&self) -> String {
        let via = if self.hops.is_empty() {
            "direct".to_string()
        } else {
            format!("via {}", self.hops.join(", "))
        };
        format!("lab {}: {} → {}, {via}", self.name, self.from, self.to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(mtu: u32, tx: u64) -> LabInterface {
        LabInterface {
            namespace: "sb-pair-client".into(),
            name: "pair-0a".into(),
            mtu_bytes: mtu,
            rate_bps: Some(100_000_000),
            qdisc: "tbf".into(),
            offloads: [("tso".to_string(), true)].into(),
            addresses: vec!["10.77.1.1/24".into()],
            tx_bytes: Some(tx),
            ..LabInterface::default()
        }
    }

    #[test]
    fn changes_ignore_traffic_counters() {
        let mut env = LabEnvironment {
            name: "pair".into(),
            from: "client".into(),
            to: "server".into(),
            interfaces: vec![end(1500, 10)],
            interfaces_after: vec![end(1500, 99)],
            ..LabEnvironment::default()
        };
        assert!(env.changes().is_empty());
        env.interfaces_after = vec![end(9000, 99)];
        let c = env.changes();
        assert_eq!(c.len(), 1);
        assert!(
            c[0].contains("MTU 1500, rate 100Mbit") && c[0].contains("MTU 9000"),
            "{c:?}"
        );
        assert_eq!(env.path_text(), "lab pair: client → server, direct");
        let old: LabEnvironment = serde_json::from_str("{\"name\":\"x\"}").unwrap();
        assert!(old.interfaces.is_empty());
    }
}
