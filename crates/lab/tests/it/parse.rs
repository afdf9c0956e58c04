//! Lab files: the examples parse, and every refusal is one line that points
//! at the place (`file:line:column`) and says what to write instead.

use stackbench_lab::{parse_lab, read_lab, LabError};

use crate::common::two_hosts;

fn examples() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

#[test]
fn examples_parse() {
    let pair = read_lab(&examples().join("lab-two-hosts.toml")).unwrap();
    assert_eq!(pair.name, "pair");
    assert_eq!(pair.links[0].rate_bps, Some(100_000_000));
    assert_eq!(pair.hosts[0].cpus, Some(vec![0]));
    let hop = read_lab(&examples().join("lab-router.toml")).unwrap();
    assert_eq!(hop.links[0].via.as_deref(), Some("r1"));
    assert_eq!(hop.links[0].mtu, 9000);
    let prio = read_lab(&examples().join("lab-prio.toml")).unwrap();
    assert!(prio.links[0].priority_classes);
    assert!(!pair.links[0].priority_classes);
    let four = read_lab(&examples().join("lab-four-drivers.toml")).unwrap();
    assert_eq!(four.links_of("server"), 4);
    assert_eq!(four.links_of("d3"), 1);
}

/// A server that several driver hosts reach directly: one NIC per link,
/// each with the server's addresses in that link's subnet, and the
/// responder's address the one facing the driver.
#[test]
fn a_host_on_several_links_has_one_address_per_link() {
    use stackbench_lab::layout::layout;
    use stackbench_lab::path::{address, path};
    let lab = read_lab(&examples().join("lab-four-drivers.toml")).unwrap();
    let plan = layout(&lab);
    let server_ends: Vec<(String, Vec<String>)> = plan
        .pairs
        .iter()
        .flat_map(|p| p.ends.iter())
        .filter(|e| e.ns == "sb-four-server")
        .map(|e| {
            let addrs = e.addresses.iter().map(ToString::to_string).collect();
            (e.ifname.clone(), addrs)
        })
        .collect();
    assert_eq!(
        server_ends[2],
        (
            "four-2b".to_string(),
            vec!["10.73.1.2/24".to_string(), "fd73:1::2/64".to_string()]
        )
    );
    assert_eq!(server_ends.len(), 4);
    let d4 = path(&lab, "d4", "server").unwrap();
    assert_eq!(d4.link, 3);
    assert_eq!(
        address(&lab, d4.link, "server", false).unwrap().to_string(),
        "10.74.1.2"
    );
    assert_eq!(
        address(&lab, d4.link, "server", true).unwrap().to_string(),
        "fd74:1::2"
    );
    // A driver's own link is its only one: all its addresses.
    assert_eq!(lab.link_addresses(0, "d1"), lab.hosts[0].addresses);
}

/// Three hosts around `hub`, which is on both links; `hub_addrs` and
/// `extra` (appended to the second link) vary per case.
fn hub(hub_addrs: &str, extra: &str) -> String {
    format!(
        r#"name = "hub"
[[host]]
name = "d1"
address = "10.71.1.1/24"
[[host]]
name = "d2"
address = "10.72.1.1/24"
[[host]]
name = "hub"
address = [{hub_addrs}]
[[link]]
a = "d1"
b = "hub"
[[link]]
a = "d2"
b = "hub"
{extra}
"#
    )
}

#[test]
fn a_host_on_several_links_is_refused_when_its_links_cannot_be_told_apart() {
    let both = "\"10.71.1.2/24\", \"10.72.1.2/24\"";
    parse_lab(&hub(both, ""), "lab.toml").unwrap();
    // One address for two links in two subnets: d2 cannot reach it.
    refused(
        &hub("\"10.71.1.2/24\"", ""),
        "14:1",
        "host 'hub' is on several links and has no address in a subnet of host 'd2'",
    );
    // Three IPv4 addresses for two links.
    refused(
        &hub(&format!("{both}, \"10.73.1.2/24\""), ""),
        "10:44",
        "at most one IPv4 and one IPv6 address per link it is on (this one: 2)",
    );
    refused(
        &hub(both, "ipsec = \"aes-gcm-128\""),
        "14:1",
        "host 'hub' is on 2 links, and a host on several links reaches each directly without IPsec: drop ipsec here",
    );
}

#[test]
fn offloads_and_defaults() {
    let lab = parse_lab(
        &two_hosts(
            "t",
            "offloads = { tso = false, gso = \"off\", gro = \"on\" }",
        ),
        "f",
    )
    .unwrap();
    let o = lab.links[0].offloads;
    assert!(!o.tso && !o.gso && o.gro && o.tx_csum && o.rx_csum);
    assert_eq!(lab.links[0].mtu, 1500);
    assert_eq!(lab.links[0].rate_bps, None);
    assert_eq!(lab.hosts[1].cpus, None);
}

/// The error for `text`, checked to be one line at `line:col` containing `needle`.
fn refused(text: &str, at: &str, needle: &str) {
    let err = parse_lab(text, "lab.toml").expect_err(needle);
    assert!(matches!(err, LabError::Parse { .. }), "{err:?}");
    let msg = err.to_string();
    assert_eq!(msg.lines().count(), 1, "{msg}");
    assert!(
        msg.starts_with(&format!("lab.toml:{at}: ")),
        "want {at}: {msg}"
    );
    assert!(msg.contains(needle), "want '{needle}': {msg}");
}

const ROUTED: &str = r#"name = "mh"
[[host]]
name = "a"
address = "10.77.1.1/24"
[[host]]
name = "b"
address = "10.77.2.1/24"
[[router]]
name = "r"
[[link]]
a = "a"
b = "b"
via = "r"
"#;

#[test]
fn bad_entries_are_refused_with_place_and_fix() {
    let link = |extra: &str| two_hosts("t", extra);
    for (text, at, needle) in [
        (
            "description = \"x\"\n[[host]]\nname = \"a\"\naddress = \"10.77.1.1/24\"\n".to_string(),
            "1:1",
            "missing key 'name'",
        ),
        (
            "name = \"Demo-1\"\n".into(),
            "1:8",
            "bad lab name 'Demo-1': use 1 to 8 lowercase letters and digits",
        ),
        ("name = \"t\"\n".into(), "1:1", "at least one [[host]]"),
        (
            "name = \"t\"\nname = \"u\"\n".into(),
            "2:1",
            "duplicate key",
        ),
        (
            link("rate = \"100mbit\""),
            "12:8",
            "unknown bit rate unit 'mbit'",
        ),
        (link("rate = \"10kbit\""), "12:8", "use 1Mbit to 1000Gbit"),
        (
            link("mtu = 70000"),
            "12:7",
            "use a whole number of bytes from 68 to 65535",
        ),
        (link("mtu = 1200"), "9:1", "below IPv6's minimum 1280"),
        (
            link("offloads = { tx_csum = \"off\" }"),
            "12:12",
            "tso on needs tx_csum on",
        ),
        (
            link("offloads = { tso = \"yes\" }"),
            "12:20",
            "write \"on\" or \"off\"",
        ),
        (
            link("offloads = { lro = \"on\" }"),
            "12:14",
            "unknown key 'lro' in offloads: use tso, gso, gro, tx_csum, rx_csum",
        ),
        (
            link("speed = \"1Gbit\""),
            "12:1",
            "unknown key 'speed' in [[link]]: use a, b, rate, mtu, offloads, via, priority_classes",
        ),
        (
            link("priority_classes = true"),
            "9:1",
            "priority_classes needs a rate to share: add e.g. rate = \"100Mbit\"",
        ),
        (
            link("rate = \"1Gbit\"\npriority_classes = \"yes\""),
            "13:20",
            "priority_classes: write true or false",
        ),
        // A /0 used to be accepted: a route on the link to every address.
        (
            "name = \"t\"\n[[host]]\nname = \"a\"\naddress = \"10.77.1.1/0\"\n".into(),
            "4:11",
            "address '10.77.1.1/0': the prefix /0 makes the subnet 0.0.0.0/0 reach outside",
        ),
        (
            "name = \"t\"\n[[host]]\nname = \"a\"\naddress = \"fd77:1::1/0\"\n".into(),
            "4:11",
            "use a longer prefix, e.g. /24 for IPv4 or /64 for IPv6",
        ),
    ] {
        refused(&text, at, needle);
    }
}

#[test]
fn impossible_topologies_are_refused_with_place_and_fix() {
    let link = |extra: &str| two_hosts("t", extra);
    for (text, at, needle) in [
        (
            link("via = \"r9\""),
            "9:1",
            "unknown router 'r9': declare it with [[router]]",
        ),
        (
            two_hosts("t", "").replace("b = \"server\"", "b = \"srv\""),
            "9:1",
            "unknown host 'srv': use one of client, server",
        ),
        (
            two_hosts("t", "").replace("10.77.1.2/24", "10.77.2.2/24"),
            "9:1",
            "are in different subnets",
        ),
        (
            two_hosts("t", "").replace("10.77.1.2/24", "8.8.8.8/24"),
            "8:12",
            "use a private or benchmark range",
        ),
        (
            two_hosts("t", "").replace("10.77.1.2/24", "10.77.1.1/24"),
            "6:1",
            "is taken by host 'client'",
        ),
        (
            two_hosts("t", "").replace("name = \"server\"", "name = \"client\""),
            "6:1",
            "duplicate name 'client'",
        ),
        (
            two_hosts("t", "").replace("cpus = \"0\"", "cpus = \"3-1\""),
            "4:8",
            "cpus: bad CPU list '3-1'",
        ),
        (
            two_hosts("t", "").replace(
                "\"10.77.1.1/24\", \"fd77:1::1/64\"",
                "\"10.77.1.1/24\", \"10.77.3.1/24\"",
            ),
            "5:28",
            "at most one IPv4 and one IPv6",
        ),
        (
            format!("{}[[link]]\na = \"client\"\nb = \"server\"\n", link("")),
            "13:1",
            "host 'client' is already on link 0",
        ),
        (
            ROUTED.replace("10.77.2.1/24", "10.77.1.2/24"),
            "10:1",
            "are in one subnet, but the link goes through a router",
        ),
        (
            ROUTED
                .replace("10.77.2.1/24", "10.77.1.254/24")
                .replace("10.77.1.1/24", "10.77.3.1/24"),
            "10:1",
            "the router takes 10.77.1.254 in 10.77.1.0/24 but host 'b' has it",
        ),
        (
            ROUTED.replace("10.77.2.1/24", "10.77.2.1/31"),
            "10:1",
            "no room for the router's address",
        ),
    ] {
        refused(&text, at, needle);
    }
    assert!(parse_lab(ROUTED, "f").is_ok());
}
