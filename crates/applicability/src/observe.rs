//! The observation window: every interval a sock_diag dump of all TCP
//! sockets, between dumps the close events, all folded into a [`Tracker`];
//! at the start and end the host's addresses and IPsec SAs; for the crypto
//! census, an `AF_PACKET` capture on a thread beside it. Runs in this
//! network namespace or, for a lab host, on a thread inside that host's.
//! Nothing is sent, nothing is changed: the traffic observed is the traffic
//! that would have flowed anyway.

use std::collections::HashSet;
use std::io;
use std::net::IpAddr;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stackbench_lab::netlink::Netlink;
use stackbench_lab::{netns, xfrm, IpNet};

use crate::classify::HostFacts;
use crate::protection::capture::{Capture, Tap};
use crate::sockets::{dump_tcp, CloseEvents};
use crate::track::{Conn, Tracker};

/// What to watch and for how long.
#[derive(Debug, Clone)]
pub struct Watch {
    pub window: Duration,
    pub interval: Duration,
    /// The network namespace to watch (a lab host's), by name; `None`: this one.
    pub namespace: Option<String>,
    /// Also read the TLS handshakes off the wire for the crypto census.
    pub capture: bool,
}

/// One window's connections and what the host told about them.
#[derive(Debug)]
pub struct Observed {
    pub conns: Vec<Conn>,
    /// Local ports of listening sockets.
    pub listeners: HashSet<u16>,
    pub facts: HostFacts,
    pub dumps: u64,
    pub close_events: u64,
    /// Why the close-event subscription failed, if it did.
    pub close_events_refused: Option<String>,
    /// The kernel dropped close events (the receive buffer overran).
    pub close_events_overran: bool,
    pub started_unix_s: f64,
    /// The window as it ran (shorter when `stop` ended it).
    pub window: Duration,
    /// The longest dump: when it exceeds the interval, sights are that far
    /// apart and lifetimes that coarse.
    pub slowest_dump: Duration,
    /// The wire capture (with [`Watch::capture`]), or why it was refused.
    pub capture: Option<Result<Capture, String>>,
}

/// Watches for `w.window` (or until `stop`), in `w.namespace` if given;
/// `started` is called once the first dump is taken (traffic from then on
/// is the window's).
pub fn observe(w: &Watch, stop: &AtomicBool, started: &(dyn Fn() + Sync)) -> io::Result<Observed> {
    let Some(name) = &w.namespace else {
        return observe_here(w, stop, started);
    };
    let ns = netns::open(name).map_err(|e| io::Error::other(e.to_string()))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            netns::enter(ns.as_fd())?;
            observe_here(w, stop, started)
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

fn now_unix_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The window in this namespace, with the wire capture running beside it
/// when asked (its socket opened here, so it sees this namespace's frames).
fn observe_here(w: &Watch, stop: &AtomicBool, started: &(dyn Fn() + Sync)) -> io::Result<Observed> {
    if !w.capture {
        return watch(w, stop, started);
    }
    let tap = match Tap::open() {
        Ok(t) => t,
        Err(e) => {
            let mut o = watch(w, stop, started)?;
            o.capture = Some(Err(format!("no AF_PACKET socket ({e}): run as root")));
            return Ok(o);
        }
    };
    let (observed, capture) = beside(|done| tap.run(done), || watch(w, stop, started));
    observed.map(|mut o| {
        o.capture = Some(Ok(capture));
        o
    })
}

/// Sets its flag when dropped: also when the window panics, so the thread
/// beside it stops and the scope that joins it does not wait forever.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `main` here and `reader` on a thread beside it until `main` returns or
/// panics; a panic of either is resumed here.
fn beside<R, C: Send>(
    reader: impl FnOnce(&AtomicBool) -> C + Send,
    main: impl FnOnce() -> R,
) -> (R, C) {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handle = s.spawn(|| reader(&done));
        let r = {
            let _stop = SetOnDrop(&done);
            main()
        };
        let c = handle
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (r, c)
    })
}

fn watch(w: &Watch, stop: &AtomicBool, started: &(dyn Fn() + Sync)) -> io::Result<Observed> {
    let (mut events, refused) = match CloseEvents::subscribe() {
        Ok(e) => (Some(e), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut facts = host_facts();
    // Sockets that closed before the first dump are not the window's.
    if let Some(e) = events.as_mut() {
        e.drain();
    }
    let started_unix_s = now_unix_s();
    let start = Instant::now();
    let mut tracker = Tracker::default();
    let mut close_events = 0;
    let mut overran = false;
    let mut next = start;
    let mut slowest_dump = Duration::ZERO;
    loop {
        let at = start.elapsed();
        if let Some(e) = events.as_mut() {
            let (closed, lost) = e.drain();
            close_events += closed.len() as u64;
            overran |= lost;
            tracker.closed(at, &closed);
        }
        let ended = at >= w.window || stop.load(Ordering::Relaxed);
        let before = Instant::now();
        let sockets = dump_tcp()?;
        slowest_dump = slowest_dump.max(before.elapsed());
        tracker.dump(start.elapsed(), &sockets);
        if tracker.dumps() == 1 {
            started();
        }
        if ended {
            break;
        }
        next += w.interval;
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
    let window = start.elapsed();
    // The close events of the last interval, queued by the kernel's
    // workqueue a little after the close itself.
    if let Some(e) = events.as_mut() {
        std::thread::sleep(Duration::from_millis(50));
        let (closed, lost) = e.drain();
        close_events += closed.len() as u64;
        overran |= lost;
        tracker.closed(window, &closed);
    }
    // An SA set up or torn down inside the window still protected traffic.
    let end = host_facts();
    for pair in end.ipsec_pairs {
        if !facts.ipsec_pairs.contains(&pair) {
            facts.ipsec_pairs.push(pair);
        }
    }
    for sa in end.sas {
        if !facts.sas.iter().any(|s| s.spi == sa.spi && s.dst == sa.dst) {
            facts.sas.push(sa);
        }
    }
    let dumps = tracker.dumps();
    let (conns, listeners) = tracker.finish();
    Ok(Observed {
        conns,
        listeners,
        facts,
        dumps,
        close_events,
        close_events_refused: refused,
        close_events_overran: overran,
        started_unix_s,
        window,
        slowest_dump,
        capture: None,
    })
}

/// This namespace's interface addresses and IPsec SAs, best effort: an
/// address list that cannot be read is empty (every peer then reads as
/// routed), as is the SA list of a kernel without XFRM.
pub fn host_facts() -> HostFacts {
    let sas = Netlink::open_protocol(libc::NETLINK_XFRM)
        .ok()
        .and_then(|mut nl| xfrm::sas(&mut nl).ok())
        .unwrap_or_default();
    HostFacts {
        addresses: interface_addresses().unwrap_or_default(),
        ipsec_pairs: sas.iter().map(|sa| (sa.src, sa.dst)).collect(),
        sas,
    }
}

/// Every IPv4 and IPv6 address of this namespace with its prefix length
/// (getifaddrs(3), which asks the calling thread's namespace).
pub fn interface_addresses() -> io::Result<Vec<IpNet>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `head` with a list freed below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut p = head;
    while !p.is_null() {
        // SAFETY: `p` walks the list getifaddrs returned; each entry's
        // address and netmask point to sockaddrs of the entry's family.
        let ifa = unsafe { &*p };
        if let (Some(addr), Some(mask)) =
            unsafe { (sockaddr_ip(ifa.ifa_addr), sockaddr_ip(ifa.ifa_netmask)) }
        {
            let prefix_len = match mask {
                IpAddr::V4(m) => u32::from(m).count_ones(),
                IpAddr::V6(m) => u128::from(m).count_ones(),
            } as u8;
            out.push(IpNet { addr, prefix_len });
        }
        p = ifa.ifa_next;
    }
    // SAFETY: the list getifaddrs allocated, freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

/// The IP address of a `sockaddr_in`/`sockaddr_in6`.
///
/// # Safety
/// `sa` is null or points to a sockaddr of the family it names.
unsafe fn sockaddr_ip(sa: *const libc::sockaddr) -> Option<IpAddr> {
    if sa.is_null() {
        return None;
    }
    match i32::from((*sa).sa_family) {
        libc::AF_INET => {
            let v4 = &*(sa as *const libc::sockaddr_in);
            Some(IpAddr::from(u32::from_be(v4.sin_addr.s_addr).to_be_bytes()))
        }
        libc::AF_INET6 => {
            let v6 = &*(sa as *const libc::sockaddr_in6);
            Some(IpAddr::from(v6.sin6_addr.s6_addr))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    /// A window that panics still stops the capture beside it: the panic
    /// comes back instead of the census waiting forever.
    #[test]
    fn a_panicking_window_stops_the_reader_beside_it() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(|| {
                beside(
                    |done: &AtomicBool| {
                        while !done.load(Ordering::Relaxed) {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    },
                    || panic!("the window failed"),
                )
            });
            tx.send(r.is_err()).unwrap();
        });
        let panicked = rx.recv_timeout(Duration::from_secs(10));
        assert_eq!(panicked, Ok(true), "the reader was never told to stop");
    }

    #[test]
    fn loopback_is_among_the_interface_addresses() {
        let a = interface_addresses().unwrap();
        assert!(
            a.iter()
                .any(|n| n.addr == IpAddr::from([127, 0, 0, 1]) && n.prefix_len == 8),
            "{a:?}"
        );
    }

    /// Short connections opened and closed while the window runs are all
    /// found (by their close events where the kernel sends them, else only
    /// those a dump caught), with their payload.
    #[test]
    fn a_window_counts_the_connections_that_opened_and_closed_inside_it() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let w = Watch {
            window: Duration::from_millis(600),
            interval: Duration::from_millis(100),
            namespace: None,
            capture: false,
        };
        let stop = AtomicBool::new(false);
        let observed = std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            let watcher = s.spawn(move || {
                let started = move || {
                    let _ = tx.send(());
                };
                observe(&w, &stop, &started).unwrap()
            });
            rx.recv().unwrap();
            for _ in 0..50 {
                let mut c = TcpStream::connect(addr).unwrap();
                let (mut srv, _) = listener.accept().unwrap();
                c.write_all(&[1; 64]).unwrap();
                let mut req = [0; 64];
                srv.read_exact(&mut req).unwrap();
                srv.write_all(&[2; 8000]).unwrap();
                let mut resp = vec![0; 8000];
                c.read_exact(&mut resp).unwrap();
            }
            watcher.join().unwrap()
        });
        let clients: Vec<&Conn> = observed.conns.iter().filter(|c| c.remote == addr).collect();
        if observed.close_events_refused.is_some() {
            assert!(!clients.is_empty() || observed.dumps > 0);
            return;
        }
        assert_eq!(clients.len(), 50, "{:?}", observed.close_events_refused);
        for c in clients {
            assert!(c.closed);
            assert_eq!(c.window().bytes_out, 64);
            assert_eq!(c.window().bytes_received, 8000);
        }
        assert!(observed.listeners.contains(&addr.port()));
    }
}
