//! Virtual MACs: a host's `macvlan` addresses become macvlan interfaces on
//! its link end, read here straight from the kernel over rtnetlink (kind,
//! parent, mode, MAC, address); a client reaches each virtual host by its
//! own address; a changed file replaces them in place; bad values are
//! refused when the file is read. The kernel part needs root.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};

use stackbench_lab::netlink::Netlink;
use stackbench_lab::{netns, parse_lab, read, render, rtnl, up};
use stackbench_testkit::can_make_namespaces;

use crate::common::{namespaces, LabGuard};

fn lab_text(name: &str, macvlans: &str, mode: &str) -> String {
    format!(
        r#"name = "{name}"
[[host]]
name = "client"
address = ["10.77.1.1/24"]
[[host]]
name = "server"
address = ["10.77.1.2/24"]
macvlan = [{macvlans}]
macvlan_mode = "{mode}"
[[link]]
a = "client"
b = "server"
"#
    )
}

/// The macvlans of namespace `ns` as the kernel lists them, with their
/// parent's index and their addresses.
fn kernel_macvlans(ns: &str) -> (u32, Vec<(rtnl::LinkInfo, Vec<String>)>) {
    netns::run_in(ns, || {
        let mut nl = Netlink::open().unwrap();
        let links = rtnl::links(&mut nl).unwrap();
        let parent = links.iter().find(|l| l.name == "tvm-0b").unwrap().index;
        let mut out = Vec::new();
        for l in links
            .into_iter()
            .filter(|l| l.kind.as_deref() == Some("macvlan"))
        {
            let addrs = rtnl::addresses(&mut nl, l.index).unwrap();
            out.push((l, addrs.iter().map(ToString::to_string).collect()));
        }
        out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        Ok((parent, out))
    })
    .unwrap()
}

#[test]
fn macvlans_are_made_reachable_and_replaced() {
    if !can_make_namespaces("macvlans_are_made_reachable_and_replaced") {
        return;
    }
    let guard = LabGuard::new(&lab_text(
        "tvm",
        r#""10.77.1.11/24", "10.77.1.12/24""#,
        "private",
    ));
    let lab = &guard.0;
    up(lab).unwrap();
    let (parent, found) = kernel_macvlans("sb-tvm-server");
    let names: Vec<&str> = found.iter().map(|(l, _)| l.name.as_str()).collect();
    assert_eq!(names, ["tvm-0bv0", "tvm-0bv1"]);
    for ((l, addrs), want) in found.iter().zip(["10.77.1.11/24", "10.77.1.12/24"]) {
        assert_eq!(l.peer_index, Some(parent), "{l:?}");
        assert_eq!(l.macvlan_mode, Some(1), "MACVLAN_MODE_PRIVATE: {l:?}");
        assert!(l.up, "{l:?}");
        assert_eq!(addrs, &[want.to_string()]);
    }
    assert_ne!(found[0].0.mac, found[1].0.mac, "each has its own MAC");
    assert!(found[0].0.mac.is_some());

    // The client reaches the second virtual host at its own address.
    let listener = netns::run_in("sb-tvm-server", || {
        Ok(TcpListener::bind("10.77.1.12:0").unwrap())
    })
    .unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, peer) = listener.accept().unwrap();
        let mut b = [0u8; 4];
        s.read_exact(&mut b).unwrap();
        s.write_all(&b).unwrap();
        peer
    });
    netns::run_in("sb-tvm-client", || {
        let addr: SocketAddr = format!("10.77.1.12:{port}").parse().unwrap();
        let mut c = TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(5)).unwrap();
        c.write_all(b"vmac").unwrap();
        let mut b = [0u8; 4];
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"vmac");
        Ok(())
    })
    .unwrap();
    assert_eq!(server.join().unwrap().ip().to_string(), "10.77.1.1");

    let text = render(lab, &read(lab).unwrap());
    assert!(
        text.contains("sb-tvm-server/tvm-0bv1: macvlan private on tvm-0b, mac "),
        "{text}"
    );
    assert!(text.ends_with("state: as configured\n"), "{text}");

    // One fewer, in bridge mode: replaced in place, the extra one removed.
    let changed = parse_lab(&lab_text("tvm", r#""10.77.1.21/24""#, "bridge"), "c.toml").unwrap();
    let report = up(&changed).unwrap();
    assert_eq!(report.pairs_created, 0);
    let (_, found) = kernel_macvlans("sb-tvm-server");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0.macvlan_mode, Some(4), "MACVLAN_MODE_BRIDGE");
    assert_eq!(found[0].1, ["10.77.1.21/24"]);

    stackbench_lab::down(&lab.name).unwrap();
    assert!(namespaces("sb-tvm-").is_empty());
}

#[test]
fn bad_macvlans_are_refused_when_read() {
    let bad_mode = parse_lab(&lab_text("tvb", r#""10.77.1.11/24""#, "vepa"), "b.toml");
    assert!(
        bad_mode
            .unwrap_err()
            .to_string()
            .contains("use bridge or private"),
        "mode"
    );
    let many: Vec<String> = (0..17)
        .map(|i| format!("\"10.77.1.{}/24\"", 20 + i))
        .collect();
    let too_many = parse_lab(&lab_text("tvb", &many.join(", "), "bridge"), "b.toml");
    assert!(
        too_many.unwrap_err().to_string().contains("at most 16"),
        "count"
    );
    let public = parse_lab(&lab_text("tvb", r#""8.8.8.8/24""#, "bridge"), "b.toml");
    assert!(public.is_err());
    let taken = parse_lab(&lab_text("tvb", r#""10.77.1.1/24""#, "bridge"), "b.toml");
    assert!(
        taken
            .unwrap_err()
            .to_string()
            .contains("is taken by host 'client'"),
        "taken"
    );
    let elsewhere = parse_lab(&lab_text("tvb", r#""10.77.9.1/24""#, "bridge"), "b.toml");
    assert!(
        elsewhere
            .unwrap_err()
            .to_string()
            .contains("outside the host's subnets"),
        "subnet"
    );
}
