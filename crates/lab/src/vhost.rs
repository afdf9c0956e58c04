//! Virtual hosts as run ends: `HOST.vN` names macvlan `N` of host `HOST`
//! (interface `<link end>vN`, the `N`th address of its `macvlan` list),
//! a stack reached by its own MAC and address on a link it shares with
//! its host. A run's `lab_to` may name one; the responder then runs in the
//! host's namespace and listens on the macvlan's address. Host names are
//! lowercase letters, digits and `-` (crate::parse), so the `.` cannot be
//! part of one and `server.v1` never means a host.
//!
//! That the traffic then really passes through the macvlan (its own ARP
//! answers and a source rule) is [`crate::macvlan::isolate`]'s part.

use std::net::IpAddr;

use crate::macvlan;
use crate::netlink::Netlink;
use crate::spec::Lab;
use crate::{netns, rtnl, LabError};

/// A macvlan named as a run's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualHost {
    /// The host it belongs to (whose namespace it is in).
    pub host: String,
    /// Its index in the host's `macvlan` list.
    pub index: usize,
    /// Its interface, `<link end>v<index>`.
    pub ifname: String,
}

impl VirtualHost {
    /// `HOST.vN`, as a run names it.
    pub fn name(&self) -> String {
        format!("{}.v{}", self.host, self.index)
    }
}

/// The ends `lab_to` names: one host, or one or more virtual hosts of one
/// host separated by commas (`server.v0,server.v1`: responder i, the one
/// agent i drives, listens on the i-th, modulo their number).
pub fn ends(lab: &Lab, text: &str) -> std::result::Result<(String, Vec<VirtualHost>), String> {
    let mut host = None;
    let mut virtual_hosts = Vec::new();
    for part in text.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!(
                "lab_to '{text}': an empty name in the list: write HOST.vN,HOST.vM"
            ));
        }
        let (h, v) = end(lab, "lab_to", part)?;
        if v.is_none() && text.contains(',') {
            return Err(format!(
                "lab_to '{text}': a list names virtual hosts of one host (e.g. {h}.v0,{h}.v1), and '{part}' is a host"
            ));
        }
        if host.as_ref().is_some_and(|first| *first != h) {
            return Err(format!(
                "lab_to '{text}': the virtual hosts of a list must share one host, and these are on several: list only one host's"
            ));
        }
        if let Some(v) = v {
            if virtual_hosts.contains(&v) {
                return Err(format!(
                    "lab_to '{text}': {} is listed twice: list each once",
                    v.name()
                ));
            }
            virtual_hosts.push(v);
        }
        host = Some(h);
    }
    Ok((host.unwrap_or_default(), virtual_hosts))
}

/// Splits a run end `text` into its host and, for `HOST.vN`, the virtual
/// host; `role` (`lab_from`, `lab_to`) names the setting in errors. A host
/// not in the lab is left for [`crate::path::path`] to report with the
/// lab's listing.
pub fn end(
    lab: &Lab,
    role: &str,
    text: &str,
) -> std::result::Result<(String, Option<VirtualHost>), String> {
    let Some((host, suffix)) = text.split_once('.') else {
        return Ok((text.to_string(), None));
    };
    let index = suffix
        .strip_prefix('v')
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| suffix == format!("v{n}")) // no `+1`, no `01`
        .ok_or_else(|| {
            format!("{role} '{text}': a virtual host is HOST.vN, N the index of one of the host's macvlan addresses (e.g. {host}.v0)")
        })?;
    let Some(h) = lab.host(host) else {
        return Err(format!(
            "{role} '{text}': lab {} has no host '{host}'",
            lab.name
        ));
    };
    if h.macvlans.is_empty() {
        return Err(format!(
            "{role} '{text}': host {host} has no macvlans: add a macvlan list to it in the lab file, or use {role} '{host}'"
        ));
    }
    if index >= h.macvlans.len() {
        let names: Vec<String> = (0..h.macvlans.len())
            .map(|i| format!("{host}.v{i}"))
            .collect();
        return Err(format!(
            "{role} '{text}': host {host} has {} macvlan(s): use {}",
            h.macvlans.len(),
            names.join(", ")
        ));
    }
    let parent = macvlan::parent(lab, host).unwrap_or_default();
    Ok((
        host.to_string(),
        Some(VirtualHost {
            host: host.to_string(),
            index,
            ifname: macvlan::name(&parent, index),
        }),
    ))
}

/// The address the responder of virtual host `v` listens on: its macvlan
/// address, which must be of the run's family.
pub fn address(lab: &Lab, v: &VirtualHost, ipv6: bool) -> std::result::Result<IpAddr, String> {
    let net = lab
        .host(&v.host)
        .and_then(|h| h.macvlans.get(v.index))
        .ok_or_else(|| format!("no virtual host {} in lab {}", v.name(), lab.name))?;
    if net.addr.is_ipv6() != ipv6 {
        let (has, want) = if ipv6 {
            ("IPv4", "drop ipv6")
        } else {
            ("IPv6", "add ipv6")
        };
        return Err(format!(
            "lab_to '{}': its macvlan address {} is {has}: {want}, or give the host an address of the other family",
            v.name(),
            net.addr
        ));
    }
    Ok(net.addr)
}

/// Packets virtual host `v`'s macvlan has received and sent so far
/// (`IFLA_STATS64`), `None` when it cannot be read.
pub fn packets(lab: &Lab, v: &VirtualHost) -> Option<(u64, u64)> {
    let ns = lab.namespace(&v.host);
    let link = netns::run_in(&ns, || {
        let mut nl = Netlink::open().map_err(|e| LabError::os("open netlink socket", e))?;
        Ok(rtnl::link(&mut nl, &v.ifname).ok().flatten())
    })
    .ok()
    .flatten()?;
    Some((link.rx_packets?, link.tx_packets?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_lab;

    const LAB: &str = r#"name = "vm"
[[host]]
name = "client"
address = ["10.77.1.1/24"]
[[host]]
name = "server"
address = ["10.77.1.2/24"]
macvlan = ["10.77.1.11/24", "10.77.1.12/24"]
[[link]]
a = "client"
b = "server"
"#;

    #[test]
    fn ends_name_a_host_or_one_of_its_macvlans() {
        let lab = parse_lab(LAB, "t.toml").unwrap();
        assert_eq!(
            end(&lab, "lab_to", "server").unwrap(),
            ("server".into(), None)
        );
        let (host, v) = end(&lab, "lab_to", "server.v1").unwrap();
        let v = v.unwrap();
        assert_eq!(
            (host.as_str(), v.index, v.ifname.as_str()),
            ("server", 1, "vm-0bv1")
        );
        assert_eq!(v.name(), "server.v1");
        assert_eq!(address(&lab, &v, false).unwrap().to_string(), "10.77.1.12");
        let e = address(&lab, &v, true).unwrap_err();
        assert!(e.contains("is IPv4: drop ipv6"), "{e}");
    }

    #[test]
    fn a_list_names_virtual_hosts_of_one_host() {
        let lab = parse_lab(LAB, "t.toml").unwrap();
        let (host, vs) = ends(&lab, "server.v1, server.v0").unwrap();
        assert_eq!(host, "server");
        let names: Vec<String> = vs.iter().map(VirtualHost::name).collect();
        assert_eq!(names, ["server.v1", "server.v0"]);
        assert_eq!(ends(&lab, "server").unwrap(), ("server".into(), Vec::new()));
        for (text, needle) in [
            ("server.v0,server", "and 'server' is a host"),
            ("server.v0,server.v0", "server.v0 is listed twice"),
            ("server.v0,client.v0", "host client has no macvlans"),
            ("server.v0,", "an empty name in the list"),
        ] {
            let e = ends(&lab, text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn bad_virtual_hosts_are_one_line() {
        let lab = parse_lab(LAB, "t.toml").unwrap();
        for (text, needle) in [
            ("server.v2", "has 2 macvlan(s): use server.v0, server.v1"),
            ("client.v0", "host client has no macvlans"),
            ("server.x0", "a virtual host is HOST.vN"),
            ("server.v", "a virtual host is HOST.vN"),
            ("server.v+1", "a virtual host is HOST.vN"),
            ("server.v01", "a virtual host is HOST.vN"),
            ("nobody.v0", "has no host 'nobody'"),
        ] {
            let e = end(&lab, "lab_to", text).unwrap_err();
            assert!(
                e.contains(needle) && e.contains(&format!("lab_to '{text}'")),
                "{text}: {e}"
            );
            assert_eq!(e.lines().count(), 1);
        }
    }

    #[test]
    fn a_host_name_cannot_look_like_a_virtual_host() {
        let text = LAB.replace("name = \"client\"", "name = \"server.v1\"");
        let e = parse_lab(&text, "t.toml").unwrap_err().to_string();
        assert!(e.contains("bad host name 'server.v1'"), "{e}");
    }
}
