//! Engine tests of the transport seam: every kind over unix and
//! mptcp, unix socket directories, connection spreading over source
//! addresses and responder ports, accepting after EMFILE, and the control
//! protocol's version check.

use std::time::Duration;

use stackbench_engine::{ControlClient, RunConfig};
use stackbench_model::{CrrClose, SocketOptions, Transport};

use super::{assert_exact, config, responder, run};

fn over(transport: Transport, workload: &str, transactions: u64) -> RunConfig {
    RunConfig {
        transport,
        ..config(workload, transactions)
    }
}

/// RR, CRR in every close mode, and STR both ways over one transport.
fn every_kind_over(transport: Transport) {
    let h = responder("127.0.0.1:0");
    let out = run(&h, &over(transport, "RR10(4kB/4kB)", 1003));
    assert_exact(&out, 1003);
    assert_eq!(out.server_stats[0].connections, 10);
    for close in [CrrClose::Server, CrrClose::Client, CrrClose::Abort] {
        let mut cfg = over(transport, "CRR4(64B/8kB)", 201);
        cfg.socket.crr_close = close;
        let out = run(&h, &cfg);
        assert_exact(&out, 201);
        assert_eq!(out.server_stats[0].connections, 201, "{close:?}");
    }
    assert_exact(&run(&h, &over(transport, "STR3(1B/2MB)", 7)), 7);
    assert_exact(&run(&h, &over(transport, "STR3(2MB/1B)", 7)), 7);
    // Options the transport lacks are skipped, not failed on.
    let mut cfg = over(transport, "RR3(2kB/300kB)", 60);
    cfg.socket = SocketOptions {
        nodelay: true,
        waitall: true,
        quickack: true,
        sndbuf_bytes: Some(128 * 1024),
        rcvbuf_bytes: Some(128 * 1024),
        crr_close: CrrClose::Server,
        ..SocketOptions::default()
    };
    assert_exact(&run(&h, &cfg), 60);
}

#[test]
fn every_kind_runs_over_unix_sockets() {
    every_kind_over(Transport::Unix);
}

#[test]
fn unix_socket_directories_are_removed_when_tests_stop() {
    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = stackbench_engine::control::TestSpec {
        kind: stackbench_model::Kind::Rr,
        request_bytes: 1,
        response_bytes: 1,
        socket: SocketOptions::default(),
        spin: false,
        io: Default::default(),
        protocol: Default::default(),
        tn3270: Default::default(),
    };
    let (id, endpoints) = control.start(spec, Transport::Unix, 1, 1).unwrap();
    // One path per responder worker, in one private directory.
    assert_eq!(endpoints.len(), 2);
    let stackbench_engine::transport::Endpoint::Unix(path) = &endpoints[0] else {
        panic!("{endpoints:?}");
    };
    assert!(path.exists());
    let dir = path.parent().unwrap().to_path_buf();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    control.stop(id).unwrap();
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn every_kind_runs_over_mptcp() {
    let target = "127.0.0.1:1".parse().unwrap();
    if let Err(e) = stackbench_engine::transport::row(Transport::Mptcp).check_usable(target) {
        let test = "every_kind_runs_over_mptcp";
        return stackbench_testkit::skip(stackbench_testkit::Tier::Mptcp, test, &e);
    }
    every_kind_over(Transport::Mptcp);
    // The responder checks every accepted connection with MPTCP_INFO: a
    // fallback to plain TCP would have made the runs above incomplete.
    let h = responder("127.0.0.1:0");
    let out = run(&h, &over(Transport::Mptcp, "RR2(1B/1B)", 100));
    assert_eq!(out.server_stats[0].mptcp_fallbacks, 0);
    assert_eq!(out.server_stats[0].connections, 2);
}

#[test]
fn ipv6_spreads_over_responder_ports() {
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        let why = "no IPv6 loopback on this machine (enable ::1 to run this test)";
        let test = "ipv6_spreads_over_responder_ports";
        return stackbench_testkit::skip(stackbench_testkit::Tier::Ipv6, test, why);
    }
    let h = responder("[::1]:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = stackbench_engine::control::TestSpec {
        kind: stackbench_model::Kind::Rr,
        request_bytes: 1,
        response_bytes: 1,
        socket: SocketOptions::default(),
        spin: false,
        io: Default::default(),
        protocol: Default::default(),
        tn3270: Default::default(),
    };
    let (id, endpoints) = control.start(spec, Transport::Tcp, 3, 3).unwrap();
    assert_eq!(endpoints.len(), 3, "{endpoints:?}");
    control.stop(id).unwrap();
}

/// Moves the calling thread (and the threads it starts later) into a new
/// network namespace with loopback up and `port_range` as its ephemeral
/// ports, leaving the host's settings alone. `Err` when not permitted
/// (needs CAP_SYS_ADMIN), for a skip message.
fn enter_fresh_netns(port_range: &str) -> Result<(), String> {
    let ns = || std::fs::read_link("/proc/thread-self/ns/net").map_err(|e| e.to_string());
    let before = ns()?;
    // SAFETY: unshare affects only the calling thread's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
        return Err(format!(
            "cannot create a network namespace: {}",
            std::io::Error::last_os_error()
        ));
    }
    if ns()? == before {
        return Err("unshare left the thread in the host's network namespace".into());
    }
    // ifreq: 16-byte name, then the flags (the union is 24 bytes).
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    let mut req = IfReq {
        name: *b"lo\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        flags: 0,
        _pad: [0; 22],
    };
    let sock = std::net::UdpSocket::bind("0.0.0.0:0").map_err(|e| e.to_string())?;
    use std::os::fd::AsRawFd;
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write an ifreq-sized buffer.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
        req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) != 0 {
            return Err(std::io::Error::last_os_error().to_string());
        }
    }
    std::fs::write("/proc/sys/net/ipv4/ip_local_port_range", port_range)
        .map_err(|e| format!("cannot set the namespace's port range: {e}"))
}

/// More connections than one source address has ephemeral ports,
/// from one driver to one responder. A full-size check (30,000 connections
/// against the default 28,232 ports) needs ~61K descriptors in this one
/// process, more than a hard limit of 20,000 without CAP_SYS_RESOURCE allows;
/// so the test shrinks the port range instead, in a private network
/// namespace: 3,000 connections over a 1,000-port range must use seven
/// source addresses (IPv4) or seven responder ports (IPv6) — 434
/// connections a path, under the half of the range connect() searches
/// first — and every one of them must connect. docs/running.md gives the full-size manual command.
#[test]
fn more_connections_than_one_address_has_ports() {
    const CLIENTS: u64 = 3_000;
    let (tx, rx) = std::sync::mpsc::channel();
    // A thread of its own: the namespace stays with it and its children.
    std::thread::spawn(move || {
        if let Err(e) = enter_fresh_netns("40000 40999") {
            let why = format!("{e} (run as root to test connection spreading)");
            let test = "more_connections_than_one_address_has_ports";
            stackbench_testkit::skip(stackbench_testkit::Tier::Root, test, &why);
            return tx.send(None).unwrap();
        }
        let per_path = u64::from(stackbench_engine::transport::connections_per_path());
        assert_eq!(per_path, 434, "the namespace's range is in force");
        let mut outs = Vec::new();
        for listen in ["127.0.0.1:0", "[::1]:0"] {
            let h = responder(listen);
            outs.push(run(&h, &config(&format!("RR{CLIENTS}(1B/1B)"), CLIENTS)));
        }
        tx.send(Some(outs)).unwrap();
    });
    let Some(outs) = rx.recv().unwrap() else {
        return;
    };
    for out in &outs {
        assert_exact(out, CLIENTS);
        assert_eq!(out.server_stats[0].connections, CLIENTS);
    }
}

/// A responder that runs out of descriptors (EMFILE) keeps
/// accepting once some are free, instead of leaving queued connections
/// stalled (with edge-triggered epoll no new edge announces them). Runs in a
/// child process, since it lowers the process's descriptor limit.
#[test]
fn accept_keeps_going_after_running_out_of_descriptors() {
    const NAME: &str = "transport::accept_keeps_going_after_running_out_of_descriptors";
    if std::env::var_os("STACKBENCH_EMFILE_CHILD").is_some() {
        return emfile_scenario();
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env("STACKBENCH_EMFILE_CHILD", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn set_soft_nofile(soft: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on plain structs.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = soft;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
}

/// 20 CRR clients against a responder with room for 3 accepted connections
/// at a time: every client must get its response.
fn emfile_scenario() {
    use stackbench_engine::control::TestSpec;
    use stackbench_engine::transport::Endpoint;
    use std::io::{Read, Write};
    const CLIENTS: usize = 20;
    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = TestSpec {
        kind: stackbench_model::Kind::Crr,
        request_bytes: 1,
        response_bytes: 1,
        socket: SocketOptions::default(),
        spin: false,
        io: Default::default(),
        protocol: Default::default(),
        tn3270: Default::default(),
    };
    let (id, endpoints) = control
        .start(spec, Transport::Tcp, CLIENTS as u32, 1)
        .unwrap();
    let Endpoint::Inet(addr) = endpoints[0] else {
        panic!("{endpoints:?}")
    };
    // The client sockets exist before the limit drops; connecting them then
    // needs no new descriptor. All connect before any sends, so the
    // responder fills its 3 slots with connections waiting for requests.
    let sockets: Vec<socket2::Socket> = (0..CLIENTS)
        .map(|_| socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap())
        .collect();
    let highest = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u64>().ok())
        .max()
        .unwrap();
    // Fill every free number below the highest (descriptors are allocated
    // lowest first), so that exactly 3 stay free under the limit.
    let mut fillers = Vec::new();
    loop {
        let f = std::fs::File::open("/dev/null").unwrap();
        use std::os::fd::AsRawFd;
        if f.as_raw_fd() as u64 > highest {
            break;
        }
        fillers.push(f);
    }
    set_soft_nofile(highest + 4);
    let mut streams: Vec<std::net::TcpStream> = sockets
        .into_iter()
        .map(|s| {
            s.connect(&addr.into()).unwrap();
            s.into()
        })
        .collect();
    for s in &mut streams {
        s.write_all(&[0]).unwrap();
    }
    let mut byte = [0u8; 1];
    for (i, s) in streams.iter_mut().enumerate() {
        // A hang check, not a performance claim: retries come every 10 ms.
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let n = s.read(&mut byte);
        assert!(matches!(n, Ok(1)), "client {i} got no response: {n:?}");
    }
    set_soft_nofile(highest + 1024);
    let stats = control.stop(id).unwrap();
    assert_eq!(stats.connections, CLIENTS as u64);
    assert!(stats.accept_retries > 0, "{stats:?}");
}

#[test]
fn an_old_driver_is_refused_naming_both_versions() {
    use std::io::{BufRead, BufReader, Write};
    let h = responder("127.0.0.1:0");
    let mut conn = std::net::TcpStream::connect(h.addr()).unwrap();
    conn.write_all(b"{\"type\":\"hello\",\"version\":1,\"software\":\"stackbench 0.1\"}\n")
        .unwrap();
    let mut line = String::new();
    BufReader::new(conn).read_line(&mut line).unwrap();
    assert!(
        line.contains(r#""type":"error""#)
            && line.contains(&format!(
                "protocol version 1 is not supported by this responder (speaks {})",
                stackbench_engine::control::PROTOCOL_VERSION
            )),
        "{line}"
    );
}

/// Over `smc` where the kernel has AF_SMC (the smc tier); elsewhere (no
/// CONFIG_SMC) the refusal is asserted to be one line naming the kernel
/// option, and the run is skipped through the tier gate.
#[test]
fn smc_runs_where_the_kernel_has_it_and_is_refused_with_the_reason_otherwise() {
    let test = "smc_runs_where_the_kernel_has_it_and_is_refused_with_the_reason_otherwise";
    let target = "127.0.0.1:1".parse().unwrap();
    if let Err(e) = stackbench_engine::transport::row(Transport::Smc).check_usable(target) {
        assert!(e.starts_with("transport smc: "), "{e}");
        assert!(e.contains("CONFIG_SMC") && !e.contains('\n'), "{e}");
        return stackbench_testkit::skip(stackbench_testkit::Tier::Smc, test, &e);
    }
    // Without an RDMA or ISM device SMC falls back to TCP and still runs;
    // the fallback is not checked yet (see transport::smc).
    let h = responder("127.0.0.1:0");
    let out = run(&h, &over(Transport::Smc, "RR2(100B/800B)", 200));
    assert_exact(&out, 200);
}

/// Per-class priority: both classes of a mix run with their own level
/// (DSCP and SO_PRIORITY on both sides) and count exactly; where the
/// process may not set SO_PRIORITY above 6 the pre-run check says why.
#[test]
fn a_mix_with_per_class_priority_runs() {
    use stackbench_model::ClassPriorities;
    let mut cfg = config("RR1(100B/800B)+RR2(100B/800B)", 150);
    cfg.priority = Some(ClassPriorities(vec![6, 0]));
    let workloads = [cfg.workload.clone()];
    let check = stackbench_engine::sockopt::check_priority(
        cfg.priority.as_ref(),
        &workloads,
        cfg.transport,
    );
    if let Err(e) = check {
        assert!(e.contains("CAP_NET_ADMIN"), "{e}");
        return stackbench_testkit::skip(stackbench_testkit::Tier::Root, "priority", &e);
    }
    let h = responder("127.0.0.1:0");
    assert_exact(&run(&h, &cfg), 150);
    let three = [("RR1(1B/1B)+RR1(1B/1B)+RR1(1B/1B)".parse().unwrap())];
    let e =
        stackbench_engine::sockopt::check_priority(cfg.priority.as_ref(), &three, cfg.transport)
            .unwrap_err();
    assert!(
        e.contains("gives 2 levels but") && e.contains("3 classes"),
        "{e}"
    );
}
