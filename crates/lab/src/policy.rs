//! A per-connection policy on a lab host (the analogue of z/OS zERT
//! enforcement): an nftables table in the host's input path whose chain
//! `rules` holds N rules that never match, walked before the accept, plus
//! the choices that change what the walk costs — connection tracking (a
//! connection's later packets accepted before the walk) or none (`notrack`:
//! every packet walks it), rate-limited logging, and a reset action for one
//! port. The run settings `host_policy_*` ask for it; the runner applies it
//! to host `lab_to` after each `up`, and the environment reads it back.
//!
//! # Design note
//!
//! - **Installed with `nft -f -`**, the ruleset generated as text
//!   ([`ruleset`]) and applied atomically (`table …; delete table …; table
//!   … { … }` in one transaction, so a changed policy never leaves a half
//!   table). The netlink crates were weighed: `rustables` is GPL-3.0 (this
//!   workspace is MIT/Apache), `nftnl` binds libnftnl (a C library to
//!   install as well), and the `nftables` crate drives the same `nft`
//!   binary through JSON; the ruleset here is six fixed statements and one
//!   repeated rule, which nft's own language states most plainly. `nft` is
//!   Debian's `nftables` package; [`check`] refuses a policy without it.
//! - **Read back over netlink** ([`read`]): a dump of the table's rules
//!   (NFT_MSG_GETRULE on NETLINK_NETFILTER, nf_tables.h) counted per chain,
//!   so the stored count is what the kernel holds, not what was asked.
//! - **The rules**: rule i is `ip saddr 192.0.2.1 tcp dport P drop`, an
//!   address of TEST-NET-1 (RFC 5737) that no lab uses, so every rule is
//!   evaluated and none matches (an IPv4 packet loads and compares its
//!   source address; an IPv6 one stops at the family check). They sit in a
//!   chain of their own, reached by one `jump`, so the read-back count is
//!   exactly N.
//! - **Removal**: `lab down` deletes the host's namespace and the kernel
//!   frees its tables with it; a later step without a policy deletes the
//!   table ([`apply`] with `None`).

use std::io::Write;
use std::process::{Command, Stdio};

use crate::error::{LabError, Result};
use crate::netlink::{attrs, text, Message, Netlink};
use crate::netns;

/// The table's name (family `inet`: IPv4 and IPv6 alike).
pub const TABLE: &str = "stackbench_policy";
/// The chain holding the N rules.
pub const RULES_CHAIN: &str = "rules"; // "policy" is a keyword of nft's language
/// The base chain on the input hook.
pub const INPUT_CHAIN: &str = "input";
/// Log messages per second at most (`limit rate`), enough to see logging's
/// cost per packet without filling the kernel log.
pub const LOG_PER_S: u32 = 10;
/// The log prefix, to find the messages (`dmesg | grep stackbench-policy`).
pub const LOG_PREFIX: &str = "stackbench-policy ";

/// The policy a run asks for on its server host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Rules that never match, walked ahead of the accept.
    pub rules: u32,
    /// Connection tracking: established packets accepted before the walk.
    pub conntrack: bool,
    /// Rate-limited log of what passes the rules.
    pub log: bool,
    /// Connections to this port are reset after the walk.
    pub reset_port: Option<u16>,
}

/// The policy as the kernel holds it (see [`read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PolicyState {
    /// Rules in the `rules` chain.
    pub rules: u32,
    /// Rules in the `input` base chain (the frame: established accept,
    /// jump, reset, log, accept).
    pub input_rules: u32,
    /// The raw-priority `notrack` chains are there (connection tracking off).
    pub notrack: bool,
    /// Packets the reset rule answered with a reset (its counter), one per
    /// refused connection attempt; `None` without a reset rule.
    pub resets: Option<u64>,
    /// Connections the namespace's conntrack table held at the read
    /// (`nf_conntrack_count`; TIME_WAIT entries stay 120 s), `None` when
    /// unreadable.
    pub conntrack_entries: Option<u64>,
}

/// The nft script that replaces the table with `policy` (module doc).
pub fn ruleset(policy: &Policy) -> String {
    let mut out = String::with_capacity(64 + policy.rules as usize * 48);
    out.push_str(&format!(
        "table inet {TABLE}\ndelete table inet {TABLE}\ntable inet {TABLE} {{\n"
    ));
    out.push_str(&format!("  chain {RULES_CHAIN} {{\n"));
    for i in 0..policy.rules {
        out.push_str(&format!(
            "    ip saddr 192.0.2.1 tcp dport {} drop\n",
            i % 65535 + 1
        ));
    }
    out.push_str("  }\n");
    out.push_str(&format!(
        "  chain {INPUT_CHAIN} {{\n    type filter hook input priority filter; policy accept;\n"
    ));
    if policy.conntrack {
        out.push_str("    ct state established,related accept\n");
    }
    out.push_str(&format!("    jump {RULES_CHAIN}\n"));
    if policy.log {
        out.push_str(&format!(
            "    limit rate {LOG_PER_S}/second log prefix \"{LOG_PREFIX}\"\n"
        ));
    }
    if let Some(port) = policy.reset_port {
        out.push_str(&format!(
            "    tcp dport {port} counter reject with tcp reset\n"
        ));
    }
    out.push_str("    accept\n  }\n");
    if !policy.conntrack {
        // Both directions, before conntrack's own hooks (priority raw).
        for (chain, hook) in [("notrack_in", "prerouting"), ("notrack_out", "output")] {
            out.push_str(&format!(
                "  chain {chain} {{\n    type filter hook {hook} priority raw; policy accept;\n    notrack\n  }}\n"
            ));
        }
    }
    out.push_str("}\n");
    out
}

/// Installs `policy` in namespace `ns` (replacing any), or removes the
/// table when `policy` is `None` and one is there.
pub fn apply(ns: &str, policy: Option<&Policy>) -> Result<()> {
    match policy {
        Some(p) => netns::run_in(ns, || nft(install(ns), &ruleset(p))),
        None => {
            if read(ns)?.is_none() {
                return Ok(()); // nothing to remove: no nft needed
            }
            let script = format!("table inet {TABLE}\ndelete table inet {TABLE}\n");
            netns::run_in(ns, || nft(install(ns), &script))
        }
    }
}

/// What installing a policy in `ns` is called in an error.
fn install(ns: &str) -> String {
    format!("{ns}: install the host policy (nft -f)")
}

/// Refuses a policy on this machine before anything is built: the `nft`
/// command must run, and the kernel must answer nf_tables requests.
pub fn check() -> Result<()> {
    let action = "host policy (host_policy_rules)";
    nft_present(action)?;
    rules_by_chain().map(drop).map_err(|e| match e {
        LabError::System { source, .. } if no_nf_tables(&source) => LabError::KernelFeature {
            action: action.into(),
            feature: "nftables".into(),
            config: "CONFIG_NF_TABLES (with CONFIG_NF_TABLES_INET)".into(),
        },
        other => other,
    })
}

/// Refuses `action` in one line when the `nft` command does not run.
pub(crate) fn nft_present(action: &str) -> Result<()> {
    match Command::new("nft").arg("--version").output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(LabError::Tool {
            action: action.into(),
            tool: "nft".into(),
            package: "nftables".into(),
        }),
        Err(e) => Err(LabError::os(format!("{action}: run nft --version"), e)),
        Ok(_) => Ok(()),
    }
}

/// The errors of a kernel without nfnetlink or nf_tables.
pub(crate) fn no_nf_tables(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPROTONOSUPPORT) | Some(libc::EOPNOTSUPP)
    )
}

/// Runs `nft -f -` with `script` in the calling thread's namespace (a
/// child forked from a thread inherits that thread's namespace); `action`
/// names what it does in an error.
pub(crate) fn nft(action: String, script: &str) -> Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => LabError::Tool {
                action: action.clone(),
                tool: "nft".into(),
                package: "nftables".into(),
            },
            _ => LabError::os(action.clone(), e),
        })?;
    let mut stdin = child.stdin.take().expect("piped");
    let written = stdin.write_all(script.as_bytes());
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| LabError::os(action.clone(), e))?;
    written.map_err(|e| LabError::os(action.clone(), e))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(LabError::System {
            action,
            source: std::io::Error::other(format!("nft exited with {}", out.status)),
            detail: Some(first.trim().to_string()),
        });
    }
    Ok(())
}

/// The policy table of namespace `ns` as the kernel holds it; `None` when
/// there is none.
pub fn read(ns: &str) -> Result<Option<PolicyState>> {
    let read_both = || {
        let count = std::fs::read_to_string("/proc/sys/net/netfilter/nf_conntrack_count")
            .ok()
            .and_then(|t| t.trim().parse().ok());
        rules_by_chain().map(|r| (r, count))
    };
    let (rules, conntrack_entries) = match netns::run_in(ns, read_both) {
        // A kernel without nf_tables holds no policy (lab runs without one
        // and `lab show` work there as before).
        Err(LabError::System { source, .. }) if no_nf_tables(&source) => return Ok(None),
        other => other?,
    };
    if rules.is_empty() {
        return Ok(None);
    }
    let count = |name: &str| {
        rules
            .iter()
            .filter(|r| r.chain == name)
            .count()
            .try_into()
            .unwrap_or(u32::MAX)
    };
    let resets = rules
        .iter()
        .filter_map(|r| r.reset_packets)
        .reduce(|a, b| a + b);
    Ok(Some(PolicyState {
        rules: count(RULES_CHAIN),
        input_rules: count(INPUT_CHAIN),
        notrack: rules.iter().any(|r| r.chain.starts_with("notrack")),
        resets,
        conntrack_entries,
    }))
}

/// One line per lab host that has a policy, for `lab show`: its rules as
/// read back and, with a reset action, how many attempts it reset.
pub fn show_lines(lab: &crate::Lab) -> Result<String> {
    let mut out = String::new();
    for host in &lab.hosts {
        let ns = lab.namespace(&host.name);
        if !netns::exists(&ns) {
            continue;
        }
        if let Some(p) = read(&ns)? {
            let tracking = if p.notrack { "notrack" } else { "conntrack" };
            let resets = p.resets.map(|n| format!(", {n} reset")).unwrap_or_default();
            out.push_str(&format!(
                "policy on {}: {} rules + {} in input, {tracking}{resets}\n",
                host.name, p.rules, p.input_rules
            ));
        }
    }
    Ok(out)
}

/// nfnetlink: the nf_tables subsystem and its messages (linux/netfilter/
/// nfnetlink.h, nf_tables.h).
pub(crate) const NETLINK_NETFILTER: libc::c_int = 12;
pub(crate) const NFNL_SUBSYS_NFTABLES: u16 = 10;
const NFT_MSG_GETRULE: u16 = 7;
pub(crate) const NFPROTO_INET: u8 = 1;
const NFTA_RULE_TABLE: u16 = 1;
const NFTA_RULE_CHAIN: u16 = 2;
const NFTA_RULE_EXPRESSIONS: u16 = 4;
const NFTA_LIST_ELEM: u16 = 1;
const NFTA_EXPR_NAME: u16 = 1;
const NFTA_EXPR_DATA: u16 = 2;
const NFTA_COUNTER_PACKETS: u16 = 2;

/// One rule of an nftables table, as the dump gives it.
pub(crate) struct DumpedRule {
    pub chain: String,
    /// A rule with a `reject` expression: its counter's packets.
    pub reset_packets: Option<u64>,
    /// A rule with a `counter` expression: its packets.
    pub counter_packets: Option<u64>,
}

/// Whether a rule rejects, and its counter's packets (`None` without a
/// counter), from its NFTA_RULE_EXPRESSIONS list.
fn rule_counter(expressions: &[u8]) -> (bool, Option<u64>) {
    let (mut rejects, mut packets) = (false, None);
    for (_, elem) in attrs(expressions).filter(|(k, _)| *k == NFTA_LIST_ELEM) {
        let name = attrs(elem)
            .find(|(k, _)| *k == NFTA_EXPR_NAME)
            .map(|(_, d)| text(d));
        let data = attrs(elem)
            .find(|(k, _)| *k == NFTA_EXPR_DATA)
            .map(|(_, d)| d);
        match (name.as_deref(), data) {
            (Some("reject"), _) => rejects = true,
            (Some("counter"), Some(d)) => {
                packets = attrs(d)
                    .find(|(k, _)| *k == NFTA_COUNTER_PACKETS)
                    .and_then(|(_, v)| v.try_into().ok().map(u64::from_be_bytes));
            }
            _ => {}
        }
    }
    (rejects, packets)
}

/// Every rule of the policy table in the calling thread's namespace (see
/// [`table_rules`]).
fn rules_by_chain() -> Result<Vec<DumpedRule>> {
    table_rules(TABLE, "read the host policy (nf_tables rule dump)")
}

/// Every rule of inet table `table` in the calling thread's namespace, with
/// its chain and counter (rules of other tables are skipped); an empty list
/// when the table is absent.
pub(crate) fn table_rules(table_name: &str, action: &str) -> Result<Vec<DumpedRule>> {
    let mut nl = Netlink::open_protocol(NETLINK_NETFILTER)
        .map_err(|e| LabError::os(format!("{action}: open NETLINK_NETFILTER"), e))?;
    // struct nfgenmsg: family, version NFNETLINK_V0, resource id (0).
    let mut msg = Message::new(
        (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETRULE,
        0,
        &[NFPROTO_INET, 0, 0, 0],
    );
    msg.attr_str(NFTA_RULE_TABLE, table_name);
    let replies = match nl.dump(msg) {
        Ok(r) => r,
        // No such table: nothing installed.
        Err(e) if e.errno() == Some(libc::ENOENT) => return Ok(Vec::new()),
        Err(e) => return Err(LabError::kernel(action, e.source, e.message)),
    };
    let mut rules = Vec::new();
    for reply in replies {
        let body = reply.get(4..).unwrap_or_default();
        let (mut table, mut chain, mut counted) = (String::new(), String::new(), (false, None));
        for (kind, data) in attrs(body) {
            match kind {
                NFTA_RULE_TABLE => table = text(data),
                NFTA_RULE_CHAIN => chain = text(data),
                NFTA_RULE_EXPRESSIONS => counted = rule_counter(data),
                _ => {}
            }
        }
        if table == table_name {
            let (rejects, packets) = counted;
            rules.push(DumpedRule {
                chain,
                reset_packets: rejects.then_some(packets.unwrap_or(0)),
                counter_packets: packets,
            });
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ruleset_walks_n_rules_and_says_each_choice() {
        let p = Policy {
            rules: 3,
            conntrack: true,
            log: false,
            reset_port: None,
        };
        let text = ruleset(&p);
        assert_eq!(text.matches("ip saddr 192.0.2.1 tcp dport").count(), 3);
        assert!(text.contains("tcp dport 3 drop"), "{text}");
        // With conntrack, established packets skip the walk: that rule
        // comes before the jump.
        let ct = text.find("ct state established").unwrap();
        assert!(ct < text.find("jump rules").unwrap(), "{text}");
        assert!(
            !text.contains("notrack") && !text.contains("log "),
            "{text}"
        );
        let off = ruleset(&Policy {
            rules: 0,
            conntrack: false,
            log: true,
            reset_port: Some(7),
        });
        assert!(!off.contains("ct state"), "{off}");
        assert_eq!(off.matches("notrack\n").count(), 2, "{off}");
        assert!(off.contains("limit rate 10/second log prefix"), "{off}");
        let reset = off
            .find("tcp dport 7 counter reject with tcp reset")
            .unwrap();
        assert!(off.find("jump rules").unwrap() < reset, "{off}");
        assert!(off.starts_with("table inet stackbench_policy\ndelete table"));
    }

    #[test]
    fn rule_ports_stay_in_range() {
        let text = ruleset(&Policy {
            rules: 70_000,
            conntrack: true,
            log: false,
            reset_port: None,
        });
        assert!(!text.contains("dport 0 "), "port 0 is not a rule");
        assert!(!text.contains("dport 65536 "));
        assert_eq!(text.matches(" drop\n").count(), 70_000);
    }
}
