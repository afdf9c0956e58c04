//! Priority classes on a link: packets sent with SO_PRIORITY = a level's
//! class id (what the run setting `priority` sets) land in that htb class,
//! read back through the kernel's class statistics over netlink; unmarked
//! packets land in the default class `1:10`; `lab show` prints the counts and
//! `lab down` removes it all. Needs root and namespaces, else skipped.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use stackbench_lab::htb::{self, ClassStats};
use stackbench_lab::netlink::Netlink;
use stackbench_lab::{netns, read, render, rtnl, up};
use stackbench_model::settings::{priority_class, priority_tos};
use stackbench_testkit::can_make_namespaces;

use crate::common::{namespaces, two_hosts, LabGuard};

/// Sends `count` datagrams at priority level `level` (`None`: unmarked).
fn send(addr: SocketAddr, level: Option<u8>, count: usize) {
    let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
    if let Some(level) = level {
        for (opt_level, name, value) in [
            (
                libc::IPPROTO_IP,
                libc::IP_TOS,
                u32::from(priority_tos(level)),
            ),
            (libc::SOL_SOCKET, libc::SO_PRIORITY, priority_class(level)),
        ] {
            let value = value as libc::c_int;
            // SAFETY: setsockopt with a valid int on an open socket.
            let rc = unsafe {
                libc::setsockopt(
                    socket.as_raw_fd(),
                    opt_level,
                    name,
                    (&value as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            assert_eq!(
                rc,
                0,
                "setsockopt {name}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    for _ in 0..count {
        socket.send_to(&[0u8; 100], addr).unwrap();
    }
}

fn packets(classes: &[ClassStats], level: u8) -> u64 {
    let id = priority_class(level);
    classes
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no class {} in {classes:?}", htb::class_name(id)))
        .packets
}

#[test]
fn each_priority_lands_in_its_htb_class() {
    if !can_make_namespaces("each_priority_lands_in_its_htb_class") {
        return;
    }
    let guard = LabGuard::new(&two_hosts(
        "tprio",
        "rate = \"100Mbit\"\npriority_classes = true",
    ));
    up(&guard.0).unwrap();
    // A second `up` keeps the htb and sets its classes again.
    up(&guard.0).unwrap();
    let addr: SocketAddr = "10.77.1.2:7003".parse().unwrap();
    let classes = netns::run_in("sb-tprio-client", || {
        send(addr, Some(6), 20);
        send(addr, Some(3), 10);
        send(addr, Some(0), 30);
        send(addr, None, 5);
        let mut nl = Netlink::open().unwrap();
        let link = rtnl::link(&mut nl, "tprio-0a").unwrap().expect("link");
        Ok(htb::classes(&mut nl, link.index).unwrap())
    })
    .unwrap();
    assert_eq!(classes.len(), 8, "1:1 and seven leaves: {classes:?}");
    assert_eq!(packets(&classes, 6), 20, "{classes:?}");
    assert_eq!(packets(&classes, 3), 10, "{classes:?}");
    // Level 0 is also the default class: ARP and the unmarked packets.
    assert!(packets(&classes, 0) >= 35, "{classes:?}");
    for level in [1, 2, 4, 5] {
        assert_eq!(packets(&classes, level), 0, "level {level}: {classes:?}");
    }
    let back = read(&guard.0).unwrap();
    let text = render(&guard.0, &back);
    assert!(text.contains("state: as configured"), "{text}");
    assert!(text.contains("htb 100Mbit [1:10 "), "{text}");
    assert!(text.contains("1:16 20 pkts"), "{text}");
    stackbench_lab::down("tprio").unwrap();
    assert!(namespaces("sb-tprio-").is_empty());
}
