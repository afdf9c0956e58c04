//! Real labs (root only; skipped with a message elsewhere): up → show →
//! down, a second up changing nothing, a changed file applied in place, a
//! routed path carrying TCP both ways, a host on four links reached on each,
//! and an unknown qdisc kind named by its kernel option.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use stackbench_lab::netlink::Netlink;
use stackbench_lab::{netns, parse_lab, qdisc, read, render, rtnl, up, LabError};
use stackbench_testkit::can_make_namespaces;

use crate::common::{namespaces, two_hosts, LabGuard};

#[test]
fn up_show_down_round_trip() {
    if !can_make_namespaces("up_show_down_round_trip") {
        return;
    }
    let guard = LabGuard::new(&two_hosts(
        "trt",
        "rate = \"100Mbit\"\nmtu = 9000\noffloads = { gro = \"off\" }",
    ));
    let lab = &guard.0;
    let report = up(lab).unwrap();
    assert_eq!((report.namespaces_created, report.pairs_created), (2, 1));
    assert_eq!(namespaces("sb-trt-"), ["sb-trt-client", "sb-trt-server"]);
    let back = read(lab).unwrap();
    for end in &back.ends {
        assert!(end.present && end.up && end.running, "{end:?}");
        assert_eq!(end.mtu, 9000);
        assert_eq!(end.qdisc, "tbf");
        assert_eq!(end.rate_bps, Some(100_000_000));
        let o = end.offloads.expect("offloads read back");
        assert!(!o.gro && o.tso && o.gso && o.tx_csum && o.rx_csum, "{o:?}");
        assert_eq!(end.addresses.len(), 2, "{:?}", end.addresses);
    }
    let text = render(lab, &back);
    assert!(
        text.contains("sb-trt-client/trt-0a: up, mtu 9000, tbf 100Mbit burst 128kB"),
        "{text}"
    );
    assert!(text.ends_with("state: as configured\n"), "{text}");
    let removed = stackbench_lab::down(&lab.name).unwrap();
    assert_eq!(removed, ["sb-trt-client", "sb-trt-server"]);
    assert!(namespaces("sb-trt-").is_empty());
    assert!(render(lab, &read(lab).unwrap()).contains("sb-trt-client (host, cpus 0): absent"));
    assert!(
        stackbench_lab::down(&lab.name).unwrap().is_empty(),
        "a second down has nothing to do"
    );
}

#[test]
fn up_twice_changes_nothing_and_a_changed_file_is_applied_in_place() {
    if !can_make_namespaces("up_twice_changes_nothing") {
        return;
    }
    let guard = LabGuard::new(&two_hosts("tidem", "rate = \"100Mbit\""));
    up(&guard.0).unwrap();
    let first = read(&guard.0).unwrap();
    let again = up(&guard.0).unwrap();
    assert_eq!((again.namespaces_created, again.pairs_created), (0, 0));
    assert!(again.removed.is_empty(), "{:?}", again.removed);
    assert_eq!(read(&guard.0).unwrap(), first);

    let changed = parse_lab(
        &two_hosts(
            "tidem",
            "rate = \"1Gbit\"\nmtu = 1400\noffloads = { tso = \"off\" }",
        )
        .replace("10.77.1.2/24", "10.77.1.3/24"),
        "changed.toml",
    )
    .unwrap();
    let report = up(&changed).unwrap();
    assert_eq!(
        report.pairs_created, 0,
        "the pair is kept, its settings changed"
    );
    let back = read(&changed).unwrap();
    assert!(
        render(&changed, &back).ends_with("state: as configured\n"),
        "{}",
        render(&changed, &back)
    );
    let server = &back.ends[1];
    assert_eq!((server.mtu, server.rate_bps), (1400, Some(1_000_000_000)));
    assert!(
        server
            .addresses
            .iter()
            .all(|a| a.to_string() != "10.77.1.2/24"),
        "old address removed"
    );
    // Unshaped: the qdisc goes.
    let unshaped = parse_lab(&two_hosts("tidem", ""), "f").unwrap();
    up(&unshaped).unwrap();
    assert!(read(&unshaped)
        .unwrap()
        .ends
        .iter()
        .all(|e| e.rate_bps.is_none()));
}

/// Accepts one connection on `addr` inside namespace `ns` and echoes one line.
fn echo_once(ns: &str, addr: SocketAddr) -> std::thread::JoinHandle<()> {
    let fd = netns::open(ns).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        netns::enter(std::os::fd::AsFd::as_fd(&fd)).unwrap();
        let listener = TcpListener::bind(addr).unwrap();
        tx.send(()).unwrap();
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 5];
        conn.read_exact(&mut buf).unwrap();
        conn.write_all(&buf).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("listener ready");
    handle
}

/// Connects to `addr` across a lab that was just brought up. Two CI runs
/// (of dozens, both on a machine loaded by a parallel build) saw the first
/// connect through the router fail with EHOSTUNREACH: the first neighbour
/// resolution on a fresh link can fail when its probes are not answered in
/// time, and the kernel then reports the host unreachable for that attempt.
/// A second attempt after a short pause is what a client would do; any other
/// error, or a third EHOSTUNREACH, still fails the test.
fn connect_through_fresh_link(addr: SocketAddr) -> TcpStream {
    for attempt in 1.. {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
            Ok(c) => return c,
            Err(e) if e.kind() == std::io::ErrorKind::HostUnreachable && attempt < 3 => {
                eprintln!("connect to {addr}: {e} (attempt {attempt}); trying again");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("connect to {addr} through the router: {e}"),
        }
    }
    unreachable!()
}

#[test]
fn routed_link_carries_tcp_over_ipv4_and_ipv6() {
    if !can_make_namespaces("routed_link_carries_tcp") {
        return;
    }
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/lab-router.toml"
    ))
    .unwrap()
    .replace("name = \"hop\"", "name = \"troute\"");
    let guard = LabGuard::new(&text);
    up(&guard.0).unwrap();
    let shown = render(&guard.0, &read(&guard.0).unwrap());
    assert!(
        shown.contains("sb-troute-r1 (router): present, forwarding on"),
        "{shown}"
    );
    assert!(shown.ends_with("state: as configured\n"), "{shown}");
    for server in ["10.77.2.1:7001", "[fd77:2::1]:7001"] {
        let addr: SocketAddr = server.parse().unwrap();
        let echo = echo_once("sb-troute-server", addr);
        let reply = netns::run_in("sb-troute-client", || {
            let mut c = connect_through_fresh_link(addr);
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            c.write_all(b"hello").unwrap();
            let mut buf = [0u8; 5];
            c.read_exact(&mut buf).unwrap();
            Ok(buf)
        })
        .unwrap();
        assert_eq!(&reply, b"hello");
        echo.join().unwrap();
    }
}

/// A server host on four links: each link's interface has the server's
/// addresses in that link's subnet only, `show` finds the kernel as the file
/// says, and each driver host reaches the server on its own link.
#[test]
fn a_host_on_four_links_is_reached_from_each_driver_host() {
    if !can_make_namespaces("a_host_on_four_links_is_reached") {
        return;
    }
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/lab-four-drivers.toml"
    ))
    .unwrap()
    .replace("name = \"four\"", "name = \"tmulti\"");
    let guard = LabGuard::new(&text);
    up(&guard.0).unwrap();
    let shown = render(&guard.0, &read(&guard.0).unwrap());
    assert!(
        shown.contains("sb-tmulti-server/tmulti-2b: up, mtu 1500, tbf 1Gbit")
            && shown.contains("10.73.1.2/24 fd73:1::2/64, tso"),
        "{shown}"
    );
    assert!(shown.ends_with("state: as configured\n"), "{shown}");
    for d in 1..=4 {
        for server in [format!("10.7{d}.1.2:7002"), format!("[fd7{d}:1::2]:7002")] {
            let addr: SocketAddr = server.parse().unwrap();
            let echo = echo_once("sb-tmulti-server", addr);
            let reply = netns::run_in(&format!("sb-tmulti-d{d}"), || {
                let mut c = connect_through_fresh_link(addr);
                c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                c.write_all(b"hello").unwrap();
                let mut buf = [0u8; 5];
                c.read_exact(&mut buf).unwrap();
                Ok(buf)
            })
            .unwrap();
            assert_eq!(&reply, b"hello", "d{d} -> {server}");
            echo.join().unwrap();
        }
    }
}

#[test]
fn an_unknown_qdisc_kind_names_its_kernel_option() {
    if !can_make_namespaces("an_unknown_qdisc_kind") {
        return;
    }
    let guard = LabGuard::new(&two_hosts("tqd", ""));
    up(&guard.0).unwrap();
    let err = netns::run_in("sb-tqd-client", || {
        let mut nl = Netlink::open().unwrap();
        let link = rtnl::link(&mut nl, "tqd-0a").unwrap().expect("link");
        let e = qdisc::replace_root(&mut nl, link.index, "nosuchqdisc", |_| {})
            .expect_err("unknown kind");
        Ok(stackbench_lab::up::qdisc_error(
            "nosuchqdisc",
            "set rate",
            e,
        ))
    })
    .unwrap();
    assert!(matches!(err, LabError::KernelFeature { .. }), "{err:?}");
    assert!(
        err.to_string().starts_with(
            "set rate: the kernel has no nosuchqdisc qdisc: build it with CONFIG_NET_SCH_NOSUCHQDISC (or load its module), or use a kernel that has it"
        ),
        "{err}"
    );
}
