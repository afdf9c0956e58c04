//! SMCAT's classification of the observed connections: each connection's
//! path (same host, same subnet, IPsec-protected, routed), whether it is
//! well-suited (eligible, long enough, enough bytes), and the figures per
//! destination subnet. Pure: the host's addresses and SAs come in as
//! [`HostFacts`].
//!
//! SMC (SMC-R over RoCE, SMC-D over ISM) is set up by a TCP handshake whose
//! options both peers must understand; SMCv1 requires both on one IP subnet,
//! and IPsec-protected traffic never takes it (the stack must see the
//! packets to protect them). Same-host connections are eligible for the
//! memory-to-memory paths (AF_UNIX, SMC-D loopback) and reported apart.

use std::collections::{BTreeMap, HashSet};
use std::net::IpAddr;
use std::time::Duration;

use stackbench_lab::xfrm::SaState;
use stackbench_lab::IpNet;
use stackbench_record::applicability::{SubnetFigures, Thresholds};

use crate::sizes::SizeTally;
use crate::track::Conn;

/// What the host's configuration tells about a pair of addresses.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostFacts {
    /// The local interface addresses with their prefix lengths.
    pub addresses: Vec<IpNet>,
    /// Pairs of addresses an IPsec SA protects (source, destination).
    pub ipsec_pairs: Vec<(IpAddr, IpAddr)>,
    /// The SAs themselves (protocol, mode, algorithms), for the census.
    pub sas: Vec<SaState>,
}

/// How a connection reaches its peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// The peer is this host (loopback or a local address).
    SameHost,
    /// The peer is on the subnet of a local interface.
    SameSubnet,
    /// An IPsec SA protects the pair: excluded.
    Ipsec,
    /// The peer is behind a router: excluded.
    Routed,
}

/// What is counted and how it is grouped.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// Count only connections whose peer is in these prefixes, grouped by them
    /// (empty: all, grouped by the remote address's /24 or /64).
    pub subnets: Vec<IpNet>,
    /// Count only connections with this local or remote port.
    pub port: Option<u16>,
    pub thresholds: Thresholds,
}

/// An IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4
/// peer) as the IPv4 address it is.
pub fn canonical(a: IpAddr) -> IpAddr {
    a.to_canonical()
}

fn within(addr: IpAddr, net: &IpNet) -> bool {
    IpNet {
        addr,
        prefix_len: net.prefix_len,
    }
    .same_subnet(net)
}

impl HostFacts {
    /// The path of a connection from `local` to `remote`.
    pub fn path(&self, local: IpAddr, remote: IpAddr) -> PathKind {
        let (local, remote) = (canonical(local), canonical(remote));
        let protected = self.ipsec_pairs.iter().any(|&(s, d)| {
            let (s, d) = (canonical(s), canonical(d));
            (s, d) == (local, remote) || (s, d) == (remote, local)
        });
        if protected {
            PathKind::Ipsec
        } else if self.is_local(remote) {
            PathKind::SameHost
        } else if self.addresses.iter().any(|n| within(remote, n)) {
            PathKind::SameSubnet
        } else {
            PathKind::Routed
        }
    }

    /// Loopback or an address of this host.
    pub fn is_local(&self, addr: IpAddr) -> bool {
        let addr = canonical(addr);
        addr.is_loopback() || addr.is_unspecified() || self.addresses.iter().any(|n| n.addr == addr)
    }
}

/// The group a remote address falls in: the given prefix holding it, else
/// its /24 (IPv4) or /64 (IPv6).
pub fn group_of(remote: IpAddr, subnets: &[IpNet]) -> String {
    let remote = canonical(remote);
    if let Some(n) = subnets.iter().find(|n| within(remote, n)) {
        return n.network().to_string();
    }
    let prefix_len = if remote.is_ipv4() { 24 } else { 64 };
    IpNet {
        addr: remote,
        prefix_len,
    }
    .network()
    .to_string()
}

/// Whether a connection passes the selection.
fn selected(c: &Conn, sel: &Selection) -> bool {
    let port_ok = sel
        .port
        .is_none_or(|p| c.local.port() == p || c.remote.port() == p);
    let subnet_ok = sel.subnets.is_empty()
        || sel
            .subnets
            .iter()
            .any(|n| within(canonical(c.remote.ip()), n));
    port_ok && subnet_ok
}

/// Whether an eligible connection reached both thresholds.
pub fn well_suited(c: &Conn, t: &Thresholds) -> bool {
    c.lifetime() >= Duration::from_secs_f64(t.min_lifetime_s) && c.window().bytes() >= t.min_bytes
}

/// A connection counted once: a same-host connection shows both of its
/// ends in this namespace, and only the client end (whose local port is no
/// listener here) stands for it.
pub fn counted(c: &Conn, listeners: &HashSet<u16>, facts: &HostFacts) -> bool {
    !(facts.is_local(c.remote.ip()) && listeners.contains(&c.local.port()))
}

/// One classified connection, as the figures and the projection read it.
#[derive(Debug, Clone)]
pub struct Classified<'a> {
    pub conn: &'a Conn,
    pub group: String,
    pub path: PathKind,
    pub well_suited: bool,
}

/// The selected connections, each counted once, with their path.
pub fn classify<'a>(
    conns: &'a [Conn],
    listeners: &HashSet<u16>,
    facts: &HostFacts,
    sel: &Selection,
) -> Vec<Classified<'a>> {
    conns
        .iter()
        .filter(|c| selected(c, sel) && counted(c, listeners, facts))
        .map(|c| {
            let path = facts.path(c.local.ip(), c.remote.ip());
            let eligible = matches!(path, PathKind::SameHost | PathKind::SameSubnet);
            Classified {
                conn: c,
                group: group_of(c.remote.ip(), &sel.subnets),
                path,
                well_suited: eligible && well_suited(c, &sel.thresholds),
            }
        })
        .collect()
}

/// Sums and shares of a set of classified connections.
#[derive(Default)]
struct Sum {
    f: SubnetFigures,
    well_segments: u64,
    well_bytes: u64,
    sent: SizeTally,
    received: SizeTally,
}

impl Sum {
    fn add(&mut self, c: &Classified) {
        let w = c.conn.window();
        self.f.connections += 1;
        match c.path {
            PathKind::SameHost => self.f.same_host += 1,
            PathKind::SameSubnet => self.f.same_subnet += 1,
            PathKind::Ipsec => self.f.excluded_ipsec += 1,
            PathKind::Routed => self.f.excluded_routed += 1,
        }
        self.f.segments += w.segments();
        self.f.bytes += w.bytes();
        if c.well_suited {
            self.f.well_suited += 1;
            self.well_segments += w.segments();
            self.well_bytes += w.bytes();
        }
        self.sent.merge(&c.conn.sent);
        self.received.merge(&c.conn.received);
    }

    fn figures(mut self, subnet: String) -> SubnetFigures {
        let pct = |part: u64, all: u64| {
            if all == 0 {
                0.0
            } else {
                part as f64 * 100.0 / all as f64
            }
        };
        self.f.subnet = subnet;
        self.f.eligible = self.f.same_host + self.f.same_subnet;
        self.f.well_suited_pct = pct(self.f.well_suited, self.f.connections);
        self.f.well_suited_segments_pct = pct(self.well_segments, self.f.segments);
        self.f.well_suited_bytes_pct = pct(self.well_bytes, self.f.bytes);
        self.f.send_sizes = self.sent.buckets();
        self.f.receive_sizes = self.received.buckets();
        self.f
    }
}

/// The figures per destination subnet (most connections first, then by
/// name) and over all of them.
pub fn figures(classified: &[Classified]) -> (Vec<SubnetFigures>, SubnetFigures) {
    let mut groups: BTreeMap<&str, Sum> = BTreeMap::new();
    let mut total = Sum::default();
    for c in classified {
        groups.entry(&c.group).or_default().add(c);
        total.add(c);
    }
    let mut rows: Vec<SubnetFigures> = groups
        .into_iter()
        .map(|(g, s)| s.figures(g.to_string()))
        .collect();
    rows.sort_by(|a, b| {
        b.connections
            .cmp(&a.connections)
            .then(a.subnet.cmp(&b.subnet))
    });
    (rows, total.figures("all".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Counters;

    fn net(t: &str) -> IpNet {
        IpNet::parse(t).unwrap()
    }

    fn facts() -> HostFacts {
        HostFacts {
            addresses: vec![
                net("10.77.1.1/24"),
                net("10.77.2.1/24"),
                net("fd77:1::1/64"),
            ],
            ipsec_pairs: vec![("10.77.2.2".parse().unwrap(), "10.77.2.1".parse().unwrap())],
            sas: vec![],
        }
    }

    fn conn(local: &str, remote: &str, lifetime_ms: u64, bytes: u64) -> Conn {
        Conn {
            cookie: 0,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            first_seen: Duration::ZERO,
            last_seen: Duration::from_millis(lifetime_ms),
            open_at_start: false,
            closed: true,
            baseline: Counters::default(),
            last: Counters {
                bytes_out: bytes / 2,
                bytes_received: bytes - bytes / 2,
                segs_out: 10,
                segs_in: 10,
                ..Counters::default()
            },
            snd_mss: 1448,
            rcv_mss: 1448,
            sent: SizeTally::default(),
            received: SizeTally::default(),
            ktls: None,
        }
    }

    fn selection() -> Selection {
        Selection {
            subnets: vec![],
            port: None,
            thresholds: Thresholds {
                min_lifetime_s: 1.0,
                min_bytes: 16 * 1024,
            },
        }
    }

    #[test]
    fn paths_follow_addresses_and_sas() {
        let f = facts();
        let ip = |t: &str| t.parse::<IpAddr>().unwrap();
        assert_eq!(f.path(ip("127.0.0.1"), ip("127.0.0.1")), PathKind::SameHost);
        assert_eq!(f.path(ip("10.77.1.1"), ip("10.77.2.1")), PathKind::SameHost);
        assert_eq!(
            f.path(ip("10.77.1.1"), ip("10.77.1.9")),
            PathKind::SameSubnet
        );
        assert_eq!(
            f.path(ip("fd77:1::1"), ip("fd77:1::2")),
            PathKind::SameSubnet
        );
        assert_eq!(
            f.path(ip("::ffff:10.77.1.1"), ip("::ffff:10.77.1.9")),
            PathKind::SameSubnet
        );
        // The SA protects the pair in either direction.
        assert_eq!(f.path(ip("10.77.2.1"), ip("10.77.2.2")), PathKind::Ipsec);
        assert_eq!(f.path(ip("10.77.1.1"), ip("192.0.2.7")), PathKind::Routed);
    }

    #[test]
    fn shares_per_subnet_count_well_suited_connections_segments_and_bytes() {
        let f = facts();
        let conns = vec![
            // Long and big: well-suited.
            conn("10.77.1.1:40000", "10.77.1.2:7701", 5000, 1_000_000),
            // Short: eligible, not well-suited.
            conn("10.77.1.1:40001", "10.77.1.2:7701", 10, 8000),
            conn("10.77.1.1:40002", "10.77.1.2:7701", 10, 8000),
            // Long but few bytes: not well-suited.
            conn("10.77.1.1:40003", "10.77.1.3:22", 5000, 1000),
            // IPsec and routed: excluded even though long and big.
            conn("10.77.2.1:40004", "10.77.2.2:7701", 5000, 1_000_000),
            conn("10.77.1.1:40005", "192.0.2.7:443", 5000, 1_000_000),
        ];
        let c = classify(&conns, &HashSet::new(), &f, &selection());
        let (rows, total) = figures(&c);
        assert_eq!(rows[0].subnet, "10.77.1.0/24");
        let r = &rows[0];
        assert_eq!(
            (r.connections, r.eligible, r.same_subnet, r.well_suited),
            (4, 4, 4, 1)
        );
        assert!((r.well_suited_pct - 25.0).abs() < 1e-9);
        let all_bytes = 1_000_000 + 8000 + 8000 + 1000;
        assert_eq!(r.bytes, all_bytes);
        assert!((r.well_suited_bytes_pct - 1e8 / all_bytes as f64).abs() < 1e-9);
        assert!((r.well_suited_segments_pct - 25.0).abs() < 1e-9);
        assert_eq!(total.connections, 6);
        assert_eq!((total.excluded_ipsec, total.excluded_routed), (1, 1));
        assert_eq!(total.eligible, 4);
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn a_same_host_connection_counts_once_by_its_client_end() {
        let f = facts();
        let conns = vec![
            conn("127.0.0.1:40000", "127.0.0.1:7701", 5000, 100_000),
            conn("127.0.0.1:7701", "127.0.0.1:40000", 5000, 100_000),
        ];
        let listeners = HashSet::from([7701]);
        let c = classify(&conns, &listeners, &f, &selection());
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].conn.local.port(), 40000);
        assert_eq!(c[0].path, PathKind::SameHost);
        assert!(c[0].well_suited);
    }

    #[test]
    fn the_selection_filters_by_prefix_and_port_and_groups_by_the_prefix() {
        let f = facts();
        let conns = vec![
            conn("10.77.1.1:40000", "10.77.1.2:7701", 5000, 100_000),
            conn("10.77.1.1:40001", "10.77.1.3:22", 5000, 100_000),
            conn("10.77.1.1:40002", "192.0.2.7:7701", 5000, 100_000),
        ];
        let mut sel = selection();
        sel.subnets = vec![net("10.77.0.0/16")];
        sel.port = Some(7701);
        let c = classify(&conns, &HashSet::new(), &f, &sel);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].group, "10.77.0.0/16");
    }
}
