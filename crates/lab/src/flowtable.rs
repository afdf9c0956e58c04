//! The routing fast path on a lab router (the analogue of the QDIO
//! accelerator, which forwards in the adapter instead of the stack): an
//! nftables flowtable on the router's path interfaces, so a forwarded
//! connection, once conntrack has seen it established, is forwarded from
//! the ingress hook by the flowtable's lookup and skips the routing
//! decision, the forward hook and the rest of the full path. The run
//! setting `router_flowtable` asks for it; the runner installs it on every
//! router of the lab path after each `up` and reads it back after the
//! window.
//!
//! # Design note
//!
//! - **Installed with `nft -f -`**, like the host policy ([`crate::policy`]
//!   says why nft's language over a netlink crate), atomically replacing
//!   the table:
//!   a flowtable `fastpath` on the ingress hook of the router's path
//!   interfaces, and a forward chain whose one rule counts the TCP and UDP
//!   packets that reach it and adds their flow to the flowtable
//!   (`flow add`, which offloads a connection once conntrack has seen it
//!   established both ways).
//! - **Proof that it was active, from the kernel's own counters**
//!   ([`read`]): the rule's counter is the packets that still took the
//!   full path (the forward hook sees no offloaded packet), and the
//!   flowtable's devices' received packets are what the router forwarded
//!   in all. With the fast path, a long-lived connection's packets after its
//!   handshake bypass the chain, so the first stays at a handful while the
//!   second grows with the transactions.
//! - **Kernel support** is `CONFIG_NF_FLOW_TABLE`, `CONFIG_NF_FLOW_TABLE_INET`
//!   and `CONFIG_NFT_FLOW_OFFLOAD`; [`check`] tries a flowtable in a scratch
//!   namespace before `up` builds anything, so a kernel without them is
//!   refused in one line that names them and the guest that has them.
//! - **Removal**: `lab down` deletes the router's namespace and the table
//!   with it; a later step without the setting deletes the table
//!   ([`apply`] with `None`).
//! - After the nftables wiki's "Flowtables" page (the `flowtable` block and
//!   the `flow add @name` statement in a forward chain).

use crate::error::{LabError, Result};
use crate::netlink::{attrs, text, Message, Netlink};
use crate::netns;
use crate::policy::{self, NETLINK_NETFILTER, NFNL_SUBSYS_NFTABLES, NFPROTO_INET};

/// The table's name (family `inet`: IPv4 and IPv6 alike).
pub const TABLE: &str = "stackbench_fastpath";
/// The flowtable's name.
pub const FLOWTABLE: &str = "fastpath";
/// The chain on the forward hook.
pub const FORWARD_CHAIN: &str = "forward";

/// The fast path of one router as the kernel holds it (see [`read`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FlowtableState {
    /// The devices the flowtable's ingress hook is bound to.
    pub devices: Vec<String>,
    /// TCP and UDP packets that reached the forward hook: the full path.
    pub slow_path_packets: u64,
    /// Packets the flowtable's devices received in all (their
    /// `IFLA_STATS64` rx_packets), `None` when unreadable.
    pub rx_packets: Option<u64>,
}

/// The nft script that replaces the table with a flowtable on `devices`.
pub fn ruleset(devices: &[String]) -> String {
    let list = devices.join(", ");
    format!(
        "table inet {TABLE}\ndelete table inet {TABLE}\ntable inet {TABLE} {{\n  \
         flowtable {FLOWTABLE} {{\n    hook ingress priority filter\n    devices = {{ {list} }}\n  }}\n  \
         chain {FORWARD_CHAIN} {{\n    type filter hook forward priority filter; policy accept;\n    \
         meta l4proto {{ tcp, udp }} counter flow add @{FLOWTABLE}\n  }}\n}}\n"
    )
}

/// Installs the fast path on `devices` in namespace `ns` (replacing any),
/// or removes the table when `devices` is `None` and one is there.
pub fn apply(ns: &str, devices: Option<&[String]>) -> Result<()> {
    let action = format!("{ns}: install the routing fast path (nft -f)");
    match devices {
        Some(d) => netns::run_in(ns, || policy::nft(action, &ruleset(d))),
        None => {
            if read(ns)?.is_none() {
                return Ok(()); // nothing to remove: no nft needed
            }
            let script = format!("table inet {TABLE}\ndelete table inet {TABLE}\n");
            netns::run_in(ns, || policy::nft(action, &script))
        }
    }
}

/// Refuses the fast path on this machine before anything is built: `nft`
/// must run, and a flowtable must be creatable (tried in a scratch
/// namespace that dies with the thread that made it).
pub fn check() -> Result<()> {
    let action = "routing fast path (router_flowtable)";
    policy::nft_present(action)?;
    // No devices: the probe needs none, and a flowtable without them is
    // accepted by every kernel that has flowtables.
    let script = format!(
        "table inet {TABLE} {{\n  flowtable {FLOWTABLE} {{\n    hook ingress priority filter\n  }}\n  \
         chain {FORWARD_CHAIN} {{\n    type filter hook forward priority filter;\n    \
         meta l4proto tcp flow add @{FLOWTABLE}\n  }}\n}}\n"
    );
    let tried = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: unshare(2) moves this short-lived thread only.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(LabError::os(
                    "make a scratch namespace to check for flowtables",
                    std::io::Error::last_os_error(),
                ));
            }
            policy::nft(action.to_string(), &script)
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    match tried {
        Err(LabError::System { detail, .. }) if detail.as_deref().is_some_and(missing) => {
            Err(LabError::KernelFeature {
                action: action.into(),
                feature: "nftables flowtable".into(),
                config:
                    "CONFIG_NF_FLOW_TABLE, CONFIG_NF_FLOW_TABLE_INET and CONFIG_NFT_FLOW_OFFLOAD"
                        .into(),
            })
        }
        other => other,
    }
}

/// nft's message for a flowtable (or its expression) the kernel does not
/// know: the type's module is absent.
fn missing(detail: &str) -> bool {
    detail.contains("No such file or directory") || detail.contains("Operation not supported")
}

/// The fast path of namespace `ns` as the kernel holds it; `None` when
/// there is none.
pub fn read(ns: &str) -> Result<Option<FlowtableState>> {
    let read_all = || {
        let devices = flowtable_devices()?;
        let rules = policy::table_rules(TABLE, "read the routing fast path (nf_tables rule dump)")?;
        Ok((devices, rules))
    };
    let (devices, rules) = match netns::run_in(ns, read_all) {
        // A kernel without nf_tables or flowtables holds no fast path.
        Err(LabError::System { source, .. }) if policy::no_nf_tables(&source) => return Ok(None),
        other => other?,
    };
    let Some(devices) = devices else {
        return Ok(None);
    };
    let slow_path_packets = rules
        .iter()
        .filter(|r| r.chain == FORWARD_CHAIN)
        .filter_map(|r| r.counter_packets)
        .sum();
    let rx_packets = netns::run_in(ns, || {
        let mut nl = crate::nl::netlink()?;
        let links = crate::rtnl::links(&mut nl)
            .map_err(|e| crate::nl::nl_error("read the fast path's interfaces", e))?;
        Ok(devices
            .iter()
            .map(|d| {
                links
                    .iter()
                    .find(|l| &l.name == d)
                    .and_then(|l| l.rx_packets)
            })
            .sum::<Option<u64>>())
    })?;
    Ok(Some(FlowtableState {
        devices,
        slow_path_packets,
        rx_packets,
    }))
}

/// One line per router with a fast path, for `lab show`.
pub fn show_lines(lab: &crate::Lab) -> Result<String> {
    let mut out = String::new();
    for router in &lab.routers {
        let ns = lab.namespace(router);
        if !netns::exists(&ns) {
            continue;
        }
        if let Some(f) = read(&ns)? {
            out.push_str(&format!(
                "fast path on {router}: flowtable on {}, {} packets took the full path of {} received\n",
                f.devices.join(", "),
                f.slow_path_packets,
                f.rx_packets.map_or("?".into(), |n| n.to_string()),
            ));
        }
    }
    Ok(out)
}

/// nf_tables.h: NFT_MSG_GETFLOWTABLE and its attributes.
const NFT_MSG_GETFLOWTABLE: u16 = 23;
const NFTA_FLOWTABLE_TABLE: u16 = 1;
const NFTA_FLOWTABLE_NAME: u16 = 2;
const NFTA_FLOWTABLE_HOOK: u16 = 3;
const NFTA_FLOWTABLE_HOOK_DEVS: u16 = 3;
const NFTA_DEVICE_NAME: u16 = 1;

/// The devices of flowtable [`FLOWTABLE`] in table [`TABLE`] of the
/// calling thread's namespace; `None` when there is no such flowtable.
fn flowtable_devices() -> Result<Option<Vec<String>>> {
    let action = "read the routing fast path (nf_tables flowtable dump)";
    let mut nl = Netlink::open_protocol(NETLINK_NETFILTER)
        .map_err(|e| LabError::os(format!("{action}: open NETLINK_NETFILTER"), e))?;
    let mut msg = Message::new(
        (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETFLOWTABLE,
        0,
        &[NFPROTO_INET, 0, 0, 0],
    );
    msg.attr_str(NFTA_FLOWTABLE_TABLE, TABLE);
    let replies = match nl.dump(msg) {
        Ok(r) => r,
        Err(e) if e.errno() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(LabError::kernel(action, e.source, e.message)),
    };
    Ok(replies
        .iter()
        .filter_map(|reply| parse_flowtable(reply.get(4..).unwrap_or_default()))
        .next())
}

/// The devices of one NFT_MSG_NEWFLOWTABLE reply's attributes, when it is
/// [`FLOWTABLE`] of [`TABLE`].
fn parse_flowtable(body: &[u8]) -> Option<Vec<String>> {
    let (mut table, mut name, mut devices) = (String::new(), String::new(), Vec::new());
    for (kind, data) in attrs(body) {
        match kind {
            NFTA_FLOWTABLE_TABLE => table = text(data),
            NFTA_FLOWTABLE_NAME => name = text(data),
            NFTA_FLOWTABLE_HOOK => {
                for (_, devs) in attrs(data).filter(|(k, _)| *k == NFTA_FLOWTABLE_HOOK_DEVS) {
                    devices.extend(
                        attrs(devs)
                            .filter(|(k, _)| *k == NFTA_DEVICE_NAME)
                            .map(|(_, d)| text(d)),
                    );
                }
            }
            _ => {}
        }
    }
    (table == TABLE && name == FLOWTABLE).then_some(devices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruleset_binds_the_flowtable_to_the_devices_and_counts_the_full_path() {
        let text = ruleset(&["hop-0b".into(), "hop-0c".into()]);
        assert!(
            text.starts_with("table inet stackbench_fastpath\ndelete table"),
            "{text}"
        );
        assert!(text.contains("flowtable fastpath {"), "{text}");
        assert!(text.contains("devices = { hop-0b, hop-0c }"), "{text}");
        assert!(text.contains("hook ingress priority filter"), "{text}");
        // One rule: counted before it offloads, so the counter is the
        // packets that still took the forward hook.
        let rule = "meta l4proto { tcp, udp } counter flow add @fastpath";
        assert_eq!(text.matches(rule).count(), 1, "{text}");
        assert!(text.contains("type filter hook forward"), "{text}");
    }

    /// Builds a flowtable reply body as the kernel sends it.
    fn reply(table: &str, name: &str, devices: &[&str]) -> Vec<u8> {
        let mut m = Message::new(0, 0, &[]);
        m.attr_str(NFTA_FLOWTABLE_TABLE, table);
        m.attr_str(NFTA_FLOWTABLE_NAME, name);
        let hook = m.nest(NFTA_FLOWTABLE_HOOK);
        m.attr_u32(1, 0); // NFTA_FLOWTABLE_HOOK_NUM: ingress
        let devs = m.nest(NFTA_FLOWTABLE_HOOK_DEVS);
        for d in devices {
            m.attr_str(NFTA_DEVICE_NAME, d);
        }
        m.end(devs);
        m.end(hook);
        m.body().to_vec()
    }

    #[test]
    fn the_flowtable_dump_gives_its_devices() {
        let body = reply(TABLE, FLOWTABLE, &["hop-0b", "hop-0c"]);
        assert_eq!(
            parse_flowtable(&body),
            Some(vec!["hop-0b".to_string(), "hop-0c".to_string()])
        );
        assert_eq!(
            parse_flowtable(&reply("other", FLOWTABLE, &["x"])),
            None,
            "another table's flowtable is not the fast path"
        );
        assert_eq!(parse_flowtable(&reply(TABLE, "ft", &["x"])), None);
    }

    #[test]
    fn nft_messages_of_a_kernel_without_flowtables_are_recognised() {
        assert!(missing(
            "Error: Could not process rule: No such file or directory"
        ));
        assert!(!missing("Error: syntax error, unexpected newline"));
    }
}
