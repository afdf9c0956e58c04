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
