//! The lab a run crossed (`run --lab FILE --from A --to B`), as stored in
//! its environment: the lab's name, the path A→B (routers on it) and, for
//! each interface on the path, the kernel's values read back before the
//! measurement window and again after it — rate, MTU, offloads, the qdisc
//! chain with netem's delay/jitter/loss and fq's cap, and the IPsec SAs with
//! their ESP packet and byte counters. Serde defaults throughout, so
//! environments stored before labs existed (no `lab` at all) still read.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The lab part of a run's environment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
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
    /// The host policy (nftables) of host `to` as the kernel held it after
    /// the window, read back rule by rule; `None`: no policy table there.
    /// The asked-for policy is the settings' `host_policy_*`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<LabPolicy>,
    /// Inbound steering (RPS/RFS) of each path interface as sysfs held it
    /// after `lab up`, read back queue by queue; empty when the run asked
    /// for none (the settings `link_rps_cpus`, `link_rps_flow_cnt`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steering: Vec<LabSteering>,
    /// NET_RX softirqs each CPU had handled before the window
    /// (`/proc/softirqs`, index = CPU; machine-wide, not per namespace):
    /// with `net_rx_after`, where receive processing ran. Empty when it
    /// could not be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub net_rx_before: Vec<u64>,
    /// The same counts after the window.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub net_rx_after: Vec<u64>,
    /// The macvlan interfaces (virtual MACs) of hosts `from` and `to`, as
    /// the kernel listed them before the window; empty: none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub macvlans: Vec<LabMacvlan>,
    /// The routing fast path (nftables flowtable) of each router on the
    /// path, as the kernel held it after the window; empty when the run
    /// asked for none (the setting `router_flowtable`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flowtables: Vec<LabFlowtable>,
    /// Load distribution: each target host behind host `to`'s distributor
    /// with IPVS's counters of the run's service, read after the window
    /// (the service is made anew at each step's `lab up`, so they count the
    /// step); empty without the setting `lab_targets`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub distribution: Vec<LabTarget>,
    /// The virtual hosts (macvlans) the responders listened on when `to`
    /// named them (`lab_to = "HOST.vN[,HOST.vM…]"`, responder i on the
    /// i-th modulo their number), with their packet counters around the
    /// window; empty: the responder used its host's own address.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub virtual_to: Vec<LabVirtualHost>,
    /// Link utilisation over each class's measurement window: its payload
    /// each way as a share of the path's rate (the slowest shaped interface
    /// on it), and a mix's classes together; empty when no interface on the
    /// path has a rate ([`crate::link_utilisation`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub utilisation: Vec<LabUtilisation>,
}

/// One class's (or a whole mix's) use of the path's link rate over its
/// window, each direction. Payload only: the wire carries the protocol
/// headers on top (on Ethernet with TCP timestamps, 66 bytes per segment
/// of up to an MSS — about 4.5% at MTU 1500), so 100% of payload is beyond
/// what the link can carry.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabUtilisation {
    /// The class's notation, or the mix's for its classes together.
    pub class: String,
    /// The rate it is a share of, bits/s (the path's slowest shaped interface).
    pub rate_bps: u64,
    /// Request payload (driver → responder) over the window, % of the rate.
    pub to_server_pct: f64,
    /// Response payload (responder → driver) over the window, % of the rate.
    pub to_client_pct: f64,
}

impl LabEnvironment {
    /// The path's rate: its slowest shaped interface's, bits/s, as the
    /// kernel held it before the window; `None` when none is shaped.
    pub fn path_rate_bps(&self) -> Option<u64> {
        self.interfaces.iter().filter_map(|i| i.rate_bps).min()
    }

    /// NET_RX softirqs each CPU handled during the window (after − before;
    /// empty when either read is missing).
    pub fn net_rx_window(&self) -> Vec<u64> {
        if self.net_rx_before.len() != self.net_rx_after.len() {
            return Vec::new();
        }
        self.net_rx_after
            .iter()
            .zip(&self.net_rx_before)
            .map(|(a, b)| a.saturating_sub(*b))
            .collect()
    }
}

/// One path interface's inbound steering, read back from sysfs.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabSteering {
    /// Namespace, `sb-<lab>-<host>`.
    pub namespace: String,
    /// Interface name.
    pub name: String,
    /// Its receive queues.
    pub queues: Vec<LabRxQueue>,
}

/// One receive queue's RPS/RFS state.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabRxQueue {
    /// Queue, `rx-0`.
    pub queue: String,
    /// `rps_cpus` as the kernel printed it (hex CPU mask; 0: RPS off).
    pub rps_cpus_mask: String,
    /// The mask's CPUs as a CPU list, e.g. `1` or `0-3`; empty: RPS off.
    pub rps_cpus: String,
    /// `rps_flow_cnt`, RFS flow-table entries of the queue (0: RFS off).
    pub rps_flow_cnt: u32,
}

/// A run's end that was a virtual host: which macvlan, and the kernel's
/// packet counters of that interface (`IFLA_STATS64`) before and after the
/// window, so the record shows the traffic passed through it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabVirtualHost {
    /// As the run named it, `HOST.vN`.
    pub name: String,
    /// Namespace, `sb-<lab>-<host>`.
    pub namespace: String,
    /// The macvlan interface, `<link end>vN`.
    pub interface: String,
    /// The address the responder listened on.
    pub address: String,
    /// Packets the macvlan had received before the window.
    pub rx_packets_before: u64,
    /// Packets it had received after the window.
    pub rx_packets_after: u64,
    /// Packets it had sent before the window.
    pub tx_packets_before: u64,
    /// Packets it had sent after the window.
    pub tx_packets_after: u64,
}

impl LabVirtualHost {
    /// Packets received and sent during the window.
    pub fn window_packets(&self) -> (u64, u64) {
        (
            self.rx_packets_after.saturating_sub(self.rx_packets_before),
            self.tx_packets_after.saturating_sub(self.tx_packets_before),
        )
    }
}

/// A macvlan interface: a virtual host with its own MAC on a link end.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabMacvlan {
    /// Namespace, `sb-<lab>-<host>`.
    pub namespace: String,
    /// Interface name, `<parent>v<i>`.
    pub name: String,
    /// The link end it sits on.
    pub parent: String,
    /// `bridge` or `private` (the kernel's IFLA_MACVLAN_MODE).
    pub mode: String,
    /// Its own MAC address.
    pub mac: String,
    /// Addresses with prefix lengths.
    pub addresses: Vec<String>,
}

/// One target host of a load distributor, with IPVS's own counters for it
/// (`IPVS_CMD_GET_DEST`, the 64-bit stats).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabTarget {
    /// The target host.
    pub host: String,
    /// Its address: IPVS's real server.
    pub address: String,
    /// Connections IPVS scheduled to it (for CRR, one per transaction).
    pub connections: u64,
    /// Packets IPVS forwarded to it.
    pub packets_in: u64,
    /// Packets of its replies IPVS forwarded back.
    pub packets_out: u64,
    /// Bytes to it.
    pub bytes_in: u64,
    /// Bytes of its replies.
    pub bytes_out: u64,
}

/// A router's routing fast path (table `stackbench_fastpath`), read back
/// from the kernel's flowtable and rule dumps after the window.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabFlowtable {
    /// Namespace the table is in, `sb-<lab>-<router>`.
    pub namespace: String,
    /// Interfaces the flowtable's ingress hook is bound to.
    pub devices: Vec<String>,
    /// TCP and UDP packets that still took the full forwarding path (the
    /// forward chain's counter) since the fast path was installed: with it
    /// active, a connection's packets after its handshake bypass the chain.
    pub slow_path_packets: u64,
    /// Packets the flowtable's interfaces received in all, by the same read
    /// (their rx_packets since the lab was built); `None` when unreadable.
    pub rx_packets: Option<u64>,
}

/// A lab host's per-connection policy (table `stackbench_policy`), counted
/// from the kernel's rule dump.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabPolicy {
    /// Namespace the table is in, `sb-<lab>-<host>`.
    pub namespace: String,
    /// Rules in chain `rules`: the non-matching rules walked ahead of the
    /// accept (the setting `host_policy_rules`).
    pub rules: u32,
    /// Rules in the input base chain: the frame around the walk
    /// (established accept, jump, log, reset, accept).
    pub input_rules: u32,
    /// Connection tracking bypassed (the `notrack` chains are there):
    /// every packet walks the rules.
    pub notrack: bool,
    /// Whether the kernel writes the log rule's messages: its syslog logger
    /// writes for a lab namespace only with net.netfilter.nf_log_all_netns
    /// = 1 (otherwise logging costs the limit and log evaluation alone).
    pub log_written: bool,
    /// Connection attempts the reset action answered with a TCP reset (the
    /// reset rule's packet counter) since the policy was installed; `None`
    /// without `host_policy_reset_port`.
    pub resets: Option<u64>,
    /// Entries in the host's conntrack table after the window
    /// (`nf_conntrack_count`; a closed connection's stay 120 s in
    /// TIME_WAIT, so earlier steps' count too, even in a notrack step): near net.netfilter.nf_conntrack_max the kernel drops new
    /// connections' SYNs, which a CRR run would show as stalls, not cost.
    pub conntrack_entries: Option<u64>,
}

/// One interface on the path, as the kernel reported it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabInterface {
    /// Namespace, `sb-<lab>-<host>`.
    pub namespace: String,
    /// Interface name, `<lab>-<link><end>`.
    pub name: String,
    /// MTU, bytes.
    pub mtu_bytes: u32,
    /// The shaping qdisc's rate (tbf); `None` = unshaped.
    pub rate_bps: Option<u64>,
    /// The shaping qdisc's burst, bytes; `None` = unshaped.
    pub burst_bytes: Option<u64>,
    /// The shaping qdisc's queue (tbf's limit), bytes: what waits for the
    /// rate; `link_txqueuelen` sets it to that many MTU-sized packets.
    /// `None` = unshaped, or a record older than the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    /// The device's transmit queue length (txqueuelen), packets, which htb's
    /// leaves take as their limit; the setting `link_txqueuelen`. `None`:
    /// not reported, or a record older than the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub txqueuelen_packets: Option<u32>,
    /// Root qdisc kind (`tbf`, `htb`, `noqueue`).
    pub qdisc: String,
    /// Offload → on/off (`tso`, `gso`, `gro`, `tx_csum`, `rx_csum`); empty
    /// when unreadable.
    pub offloads: BTreeMap<String, bool>,
    /// Addresses with prefix lengths.
    pub addresses: Vec<String>,
    /// Bytes sent and received by the end of the read (the kernel's counters).
    pub tx_bytes: Option<u64>,
    /// Bytes received by the end of the read.
    pub rx_bytes: Option<u64>,
    /// The qdisc chain, root first (`tbf`, `netem`, `fq`); empty with one
    /// qdisc or none.
    pub qdiscs: Vec<String>,
    /// netem's parameters, when the interface has one.
    pub netem: Option<LabNetem>,
    /// fq's per-flow cap, when the chain has an fq with one.
    pub fq_maxrate_bps: Option<u64>,
    /// The IPsec SAs of the interface's host, with their ESP counters.
    pub ipsec: Option<LabIpsec>,
    /// Hard interrupts NAPI defers after a busy poll
    /// (`/sys/class/net/IF/napi_defer_hard_irqs`, the setting
    /// `link_napi_defer_hard_irqs`); `None`: the kernel has no such file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub napi_defer_hard_irqs: Option<u32>,
    /// How long GRO holds packets before flushing, ns
    /// (`/sys/class/net/IF/gro_flush_timeout`, the setting
    /// `link_gro_flush_timeout`); `None`: the kernel has no such file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gro_flush_timeout_ns: Option<u64>,
    /// The device's interrupt coalescing (`ethtool -c`: rx/tx usecs and
    /// frames), or why there is none ("not supported by veth").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coalesce: Option<String>,
}

/// netem as read back from the kernel.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabNetem {
    /// One-way delay added on this sending end.
    pub delay_s: f64,
    /// Jitter on that delay, seconds.
    pub jitter_s: f64,
    /// Packets dropped on purpose, percent.
    pub loss_pct: f64,
    /// netem's queue limit, packets.
    pub limit_packets: u32,
}

/// IPsec on the interface's host: the configured transform and the ESP
/// counters of its SAs (out: the SA to the peer; in: the peer's to it).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabIpsec {
    /// `aes-gcm-128` or `aes-cbc-128-sha256`.
    pub algorithm: String,
    /// `transport` or `tunnel`.
    pub mode: String,
    /// ESP packets sent by the SA to the peer.
    pub esp_packets_out: u64,
    /// ESP bytes sent by the SA to the peer.
    pub esp_bytes_out: u64,
    /// ESP packets received by the peer's SA.
    pub esp_packets_in: u64,
    /// ESP bytes received by the peer's SA.
    pub esp_bytes_in: u64,
    /// Each SA: SPI, addresses, the kernel's algorithm names, counters.
    pub sas: Vec<LabSa>,
}

/// One IPsec SA as read back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LabSa {
    /// Security parameter index.
    pub spi: u32,
    /// `out` or `in`, seen from this host.
    pub direction: String,
    /// Source address.
    pub src: String,
    /// Destination address.
    pub dst: String,
    /// The kernel's names, e.g. `rfc4106(gcm(aes))`.
    pub kernel_algorithm: String,
    /// `transport` or `tunnel`, as the kernel reports it.
    pub mode: String,
    /// Packets the SA processed.
    pub packets: u64,
    /// Bytes the SA processed.
    pub bytes: u64,
}

impl LabIpsec {
    /// Without the counters (the configuration).
    fn config(&self) -> LabIpsec {
        LabIpsec {
            esp_packets_out: 0,
            esp_bytes_out: 0,
            esp_packets_in: 0,
            esp_bytes_in: 0,
            sas: self
                .sas
                .iter()
                .map(|s| LabSa {
                    packets: 0,
                    bytes: 0,
                    ..s.clone()
                })
                .collect(),
            ..self.clone()
        }
    }
}

impl LabInterface {
    /// The configuration without the traffic counters (what must not change
    /// during a window).
    pub fn config(&self) -> LabInterface {
        LabInterface {
            tx_bytes: None,
            rx_bytes: None,
            ipsec: self.ipsec.as_ref().map(LabIpsec::config),
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
        let mut extra = String::new();
        if let Some(n) = &self.netem {
            extra.push_str(&format!(
                ", netem delay {}ms jitter {}ms loss {}%",
                n.delay_s * 1000.0,
                n.jitter_s * 1000.0,
                n.loss_pct
            ));
        }
        if self.qdiscs.iter().any(|q| q == "fq") {
            let cap = self.fq_maxrate_bps.map_or("none".to_string(), |r| {
                stackbench_model::units::format_bit_rate(r)
            });
            extra.push_str(&format!(", fq maxrate {cap}"));
        }
        if let Some(i) = &self.ipsec {
            extra.push_str(&format!(", ipsec {} {}", i.algorithm, i.mode));
        }
        if let Some(n) = self.limit_bytes {
            extra.push_str(&format!(", queue {n} B"));
        }
        if let Some(n) = self.txqueuelen_packets {
            extra.push_str(&format!(", txqueuelen {n}"));
        }
        format!(
            "{}/{}: MTU {}, {rate}, {offloads}{extra}, {}",
            self.namespace,
            self.name,
            self.mtu_bytes,
            self.addresses.join(" ")
        )
    }
}

impl LabPolicy {
    /// One line for reports, e.g. `10000 rules + 3 in input, notrack, 20 reset`.
    pub fn summary(&self) -> String {
        format!(
            "{} rules + {} in input, {}{}{}",
            self.rules,
            self.input_rules,
            if self.notrack { "notrack" } else { "conntrack" },
            if self.log_written {
                ", log written"
            } else {
                ""
            },
            self.resets
                .map(|n| format!(", {n} reset"))
                .unwrap_or_default()
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

    /// Interfaces with IPsec whose ESP packet counters (out or in) did not
    /// rise between the reads before and after the window, as
    /// `namespace/name (out +0, in +0)`.
    pub fn ipsec_idle(&self) -> Vec<String> {
        self.interfaces
            .iter()
            .filter_map(|a| {
                let before = a.ipsec.as_ref()?;
                let after = self
                    .interfaces_after
                    .iter()
                    .find(|b| b.namespace == a.namespace && b.name == a.name)
                    .and_then(|b| b.ipsec.as_ref());
                let (out, inn) = after.map_or((0, 0), |x| {
                    (
                        x.esp_packets_out.saturating_sub(before.esp_packets_out),
                        x.esp_packets_in.saturating_sub(before.esp_packets_in),
                    )
                });
                (out == 0 || inn == 0)
                    .then(|| format!("{}/{} (out +{out}, in +{inn})", a.namespace, a.name))
            })
            .collect()
    }

    /// `lab pair: client → server, direct` (or `via r1`); a virtual host
    /// end reads `server.v0 (macvlan pair-0bv0)`.
    pub fn path_text(&self) -> String {
        let via = if self.hops.is_empty() {
            "direct".to_string()
        } else {
            format!("via {}", self.hops.join(", "))
        };
        let to = if self.virtual_to.is_empty() {
            self.to.clone()
        } else {
            let each: Vec<String> = self
                .virtual_to
                .iter()
                .map(|v| format!("{} (macvlan {})", v.name, v.interface))
                .collect();
            each.join(", ")
        };
        format!("lab {}: {} → {to}, {via}", self.name, self.from)
    }

    /// The virtual host ends whose macvlan did not both receive and send
    /// during the window, as `namespace/interface (rx +N, tx +N)`: the
    /// run's traffic did not pass through them.
    pub fn virtual_idle(&self) -> Vec<String> {
        self.virtual_to
            .iter()
            .filter_map(|v| {
                let (rx, tx) = v.window_packets();
                (rx == 0 || tx == 0)
                    .then(|| format!("{}/{} (rx +{rx}, tx +{tx})", v.namespace, v.interface))
            })
            .collect()
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
    fn the_path_rate_is_its_slowest_shaped_interface() {
        let env = LabEnvironment {
            interfaces: vec![
                end(1500, 0),
                LabInterface {
                    rate_bps: Some(10_000_000),
                    ..end(1500, 0)
                },
            ],
            ..LabEnvironment::default()
        };
        assert_eq!(env.path_rate_bps(), Some(10_000_000));
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

    #[test]
    fn idle_ipsec_is_found_and_counters_are_not_changes() {
        let with = |out: u64, inn: u64| {
            let mut e = end(1500, 10);
            e.ipsec = Some(LabIpsec {
                algorithm: "aes-gcm-128".into(),
                mode: "transport".into(),
                esp_packets_out: out,
                esp_packets_in: inn,
                sas: vec![LabSa {
                    spi: 1,
                    packets: out,
                    ..LabSa::default()
                }],
                ..LabIpsec::default()
            });
            e
        };
        let mut env = LabEnvironment {
            interfaces: vec![with(5, 5)],
            interfaces_after: vec![with(900, 880)],
            ..LabEnvironment::default()
        };
        assert!(env.changes().is_empty());
        assert!(env.ipsec_idle().is_empty());
        env.interfaces_after = vec![with(900, 5)];
        assert_eq!(
            env.ipsec_idle(),
            ["sb-pair-client/pair-0a (out +895, in +0)"]
        );
        assert!(env.interfaces[0]
            .summary()
            .contains("ipsec aes-gcm-128 transport"));
    }

    #[test]
    fn a_virtual_end_is_named_and_idle_when_its_counters_stand_still() {
        let mut env = LabEnvironment {
            name: "vmac".into(),
            from: "client".into(),
            to: "server".into(),
            virtual_to: vec![LabVirtualHost {
                name: "server.v0".into(),
                namespace: "sb-vmac-server".into(),
                interface: "vmac-0bv0".into(),
                address: "10.77.1.11".into(),
                rx_packets_before: 3,
                rx_packets_after: 1003,
                tx_packets_before: 2,
                tx_packets_after: 2,
            }],
            ..LabEnvironment::default()
        };
        assert_eq!(
            env.path_text(),
            "lab vmac: client → server.v0 (macvlan vmac-0bv0), direct"
        );
        assert_eq!(
            env.virtual_idle(),
            ["sb-vmac-server/vmac-0bv0 (rx +1000, tx +0)"]
        );
        env.virtual_to[0].tx_packets_after = 900;
        assert!(env.virtual_idle().is_empty());
        let mut second = env.virtual_to[0].clone();
        (second.name, second.interface) = ("server.v1".into(), "vmac-0bv1".into());
        env.virtual_to.push(second);
        assert_eq!(
            env.path_text(),
            "lab vmac: client → server.v0 (macvlan vmac-0bv0), server.v1 (macvlan vmac-0bv1), direct"
        );
        let old: LabEnvironment = serde_json::from_str(r#"{"name":"pair"}"#).unwrap();
        assert!(old.virtual_to.is_empty());
    }

    /// An environment stored before host policies has none, and one with a
    /// policy keeps its read-back counts.
    #[test]
    fn policy_read_back_round_trips_and_is_optional() {
        let old: LabEnvironment = serde_json::from_str(r#"{"name":"pair"}"#).unwrap();
        assert!(old.policy.is_none());
        assert!(!serde_json::to_string(&old).unwrap().contains("policy"));
        let env = LabEnvironment {
            policy: Some(LabPolicy {
                namespace: "sb-pair-server".into(),
                rules: 10000,
                input_rules: 3,
                notrack: true,
                log_written: false,
                resets: Some(20),
                conntrack_entries: None,
            }),
            ..LabEnvironment::default()
        };
        let back: LabEnvironment =
            serde_json::from_str(&serde_json::to_string(&env).unwrap()).unwrap();
        assert_eq!(back, env);
        let p = back.policy.unwrap();
        assert_eq!(p.summary(), "10000 rules + 3 in input, notrack, 20 reset");
    }
}
