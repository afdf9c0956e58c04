//! What a lab file describes, after parsing and checking: hosts (the LPARs),
//! routers and links, with the few address computations the layout needs.
//! Pure data: nothing here touches the kernel.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use serde::Serialize;
pub use stackbench_model::settings::{IpsecAlgorithm, IpsecMode, LinkQdisc};

/// Longest lab name: it prefixes every interface name, and Linux allows 15
/// bytes for those (`<lab>-<link><end>`, e.g. `demo-12ra`).
pub const MAX_LAB_NAME: usize = 8;
/// Longest host or router name (it ends the namespace name `sb-<lab>-<host>`).
pub const MAX_HOST_NAME: usize = 24;
/// Most links in one lab: the link number is two digits of the interface name.
pub const MAX_LINKS: usize = 100;
/// MTU range for a link: IPv4's minimum to the largest veth frame.
pub const MTU_RANGE: std::ops::RangeInclusive<u32> = 68..=65_535;
/// Smallest MTU on which Linux keeps IPv6 (RFC 8200).
pub const IPV6_MIN_MTU: u32 = 1280;
/// The MTU of a link that does not name one (Ethernet's).
pub const DEFAULT_MTU: u32 = 1500;
/// Longest netem delay or jitter of a link.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// fq's per-flow maximum rate is a 32-bit count of bytes per second.
pub const FQ_MAXRATE_RANGE_BPS: std::ops::RangeInclusive<u64> = 1_000_000..=34_000_000_000;

/// A lab: its hosts, routers and the links between them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lab {
    /// Short name; prefixes every namespace (`sb-<name>-`) and interface (`<name>-`).
    pub name: String,
    /// Free text for people.
    pub description: String,
    /// The hosts, in file order.
    pub hosts: Vec<Host>,
    /// Router namespaces that `via` links pass through, in file order.
    pub routers: Vec<String>,
    /// IPVS virtual services on routers (load distribution), in file order.
    pub distributors: Vec<crate::lb::Distributor>,
    /// The links, in file order; a link's number is its index here.
    pub links: Vec<Link>,
}

/// A host: a network namespace with a CPU set, the analogue of an LPAR.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Host {
    /// Name, unique in the lab (hosts and routers together).
    pub name: String,
    /// CPUs the host's processes use; `None` = all of the machine's.
    pub cpus: Option<Vec<usize>>,
    /// Addresses with prefix lengths, put on the host's link interface (at
    /// most one per family, or one per family and link for a host on
    /// several links; see [`Lab::link_addresses`]).
    pub addresses: Vec<IpNet>,
    /// Virtual MACs: one macvlan interface per address on the host's link
    /// end (see [`crate::macvlan`]), each with its own MAC; empty: none.
    pub macvlans: Vec<IpNet>,
    /// How the macvlans reach each other.
    pub macvlan_mode: MacvlanMode,
}

/// A macvlan's mode (`IFLA_MACVLAN_MODE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MacvlanMode {
    /// Macvlans on one parent reach each other inside the host, as
    /// separate hosts on one switch would.
    #[default]
    Bridge,
    /// Macvlans on one parent never reach each other; each reaches only
    /// the link's other end.
    Private,
}

impl MacvlanMode {
    /// The spellings a lab file uses.
    pub const NAMES: [&'static str; 2] = ["bridge", "private"];

    /// The lab file's spelling.
    pub fn name(self) -> &'static str {
        match self {
            MacvlanMode::Bridge => "bridge",
            MacvlanMode::Private => "private",
        }
    }

    /// The kernel's `MACVLAN_MODE_*` bit.
    pub fn kernel(self) -> u32 {
        match self {
            MacvlanMode::Private => 1,
            MacvlanMode::Bridge => 4,
        }
    }

    /// The mode of a kernel `MACVLAN_MODE_*` value, if one of these.
    pub fn from_kernel(v: u32) -> Option<MacvlanMode> {
        match v {
            1 => Some(MacvlanMode::Private),
            4 => Some(MacvlanMode::Bridge),
            _ => None,
        }
    }
}

/// A link between two hosts: a veth pair, or two through a router.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// One end's host.
    pub a: String,
    /// The other end's host.
    pub b: String,
    /// Shaped rate in bit/s (tbf on every sending end); `None` = unshaped.
    pub rate_bps: Option<u64>,
    /// MTU of every interface of the link, in bytes.
    pub mtu: u32,
    /// Offloads on every interface of the link.
    pub offloads: Offloads,
    /// Router the link passes through (a multi-hop path), if any.
    pub via: Option<String>,
    /// Priority classes: an htb with one class per priority level instead
    /// of the tbf (see the `htb` module); needs a rate.
    pub priority_classes: bool,
    /// Delay, jitter and loss (netem) on every sending end of the hosts.
    pub netem: Netem,
    /// The leaf qdisc of every sending end (fq for per-flow pacing).
    pub qdisc: LinkQdisc,
    /// fq's per-flow maximum rate, bit/s (`None`: TCP's own pacing only).
    pub fq_maxrate_bps: Option<u64>,
    /// ESP between the two hosts (`Off`: clear text).
    pub ipsec: IpsecAlgorithm,
    pub ipsec_mode: IpsecMode,
    /// NAPI deferral and GRO flush timeout of every interface of the link
    /// (both 0, the kernel's default, unless a run sets them).
    pub napi: crate::napi::Napi,
    /// Transmit queue depth of every interface of the link, packets: the
    /// device's txqueuelen and the limit of the queueing qdiscs on it (tbf:
    /// this many MTU-sized packets; netem; htb's leaves, which take the
    /// device's); `None`: the kernel's txqueuelen (1000) and each qdisc's
    /// own rule.
    pub txqueuelen: Option<u32>,
}

/// netem's parameters on a link (see the `netem` module for placement).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Netem {
    /// One-way delay added in each direction.
    pub delay: Duration,
    /// Uniform random variation of the delay, ± this.
    pub jitter: Duration,
    /// Random loss in each direction, percent.
    pub loss_pct: f64,
}

impl Netem {
    /// Whether the link needs a netem at all.
    pub fn active(&self) -> bool {
        !self.delay.is_zero() || !self.jitter.is_zero() || self.loss_pct > 0.0
    }
}

/// The largest transmit queue a link may ask for, packets.
pub const MAX_TXQUEUELEN: u32 = 1_000_000;

impl Link {
    /// The tbf of this link's rate (unshaped: `unshaped_bps`), its queue
    /// `txqueuelen` MTU-sized packets when the link sets one.
    pub fn tbf(&self, unshaped_bps: u64) -> crate::qdisc::Tbf {
        let mut tbf = crate::qdisc::tbf_for(self.rate_bps.unwrap_or(unshaped_bps), self.mtu);
        if let Some(n) = self.txqueuelen {
            tbf.limit_bytes = u64::from(n) * u64::from(self.mtu);
        }
        tbf
    }

    /// A link between `a` and `b` with every property at its default.
    pub fn new(a: &str, b: &str) -> Link {
        Link {
            a: a.to_string(),
            b: b.to_string(),
            rate_bps: None,
            mtu: DEFAULT_MTU,
            offloads: Offloads::default(),
            via: None,
            priority_classes: false,
            netem: Netem::default(),
            qdisc: LinkQdisc::Fifo,
            txqueuelen: None,
            fq_maxrate_bps: None,
            ipsec: IpsecAlgorithm::Off,
            ipsec_mode: IpsecMode::Transport,
            napi: crate::napi::Napi::default(),
        }
    }

    /// The qdisc chain of a sending end, root first: `tbf` (rate), `netem`
    /// (delay, jitter, loss; on `host_end`s only, see the `netem` module) and
    /// `fq` (pacing), each present or not; `htb` alone with priority classes.
    pub fn qdisc_chain(&self, host_end: bool) -> Vec<&'static str> {
        if self.priority_classes && self.rate_bps.is_some() {
            return vec!["htb"];
        }
        let mut out = Vec::new();
        if self.rate_bps.is_some() {
            out.push("tbf");
        }
        if host_end && self.netem.active() {
            out.push("netem");
        }
        if self.qdisc == LinkQdisc::Fq {
            out.push("fq");
        }
        out
    }

    /// Checks the delay, loss, fq and IPsec properties together (the lab
    /// file and a run's overrides alike); the message names the key and the fix.
    pub fn check_properties(&self) -> Result<(), String> {
        let n = &self.netem;
        if n.delay > MAX_DELAY || n.jitter > MAX_DELAY {
            return Err("delay and jitter: use 0s to 10s".into());
        }
        if n.jitter > n.delay {
            return Err(format!(
                "jitter {:?} is larger than the delay {:?}: netem would send packets before their time; lower jitter or raise delay",
                n.jitter, n.delay
            ));
        }
        if !(0.0..=100.0).contains(&n.loss_pct) {
            return Err(format!("loss {}%: use 0% to 100%", n.loss_pct));
        }
        if let Some(r) = self.fq_maxrate_bps {
            if !FQ_MAXRATE_RANGE_BPS.contains(&r) {
                return Err(format!(
                    "fq_maxrate {r} bit/s: use 1Mbit to 34Gbit (fq counts bytes per second in 32 bits)"
                ));
            }
            if self.qdisc != LinkQdisc::Fq {
                return Err("fq_maxrate needs qdisc = \"fq\": add it or drop fq_maxrate".into());
            }
        }
        if self.priority_classes && (n.active() || self.qdisc == LinkQdisc::Fq) {
            return Err("priority_classes cannot be combined with delay, jitter, loss or qdisc fq (each htb leaf keeps its own fifo): drop one of them".into());
        }
        Ok(())
    }
}

/// Segmentation and checksum offloads of a link's interfaces (`ethtool -k`
/// names: tcp-segmentation-offload, generic-segmentation-offload,
/// generic-receive-offload, tx-checksumming, rx-checksumming).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Offloads {
    pub tso: bool,
    pub gso: bool,
    pub gro: bool,
    pub tx_csum: bool,
    pub rx_csum: bool,
}

impl Default for Offloads {
    /// All on, as a new veth has them.
    fn default() -> Self {
        Offloads {
            tso: true,
            gso: true,
            gro: true,
            tx_csum: true,
            rx_csum: true,
        }
    }
}

impl Offloads {
    /// The names lab files use, in display order.
    pub const NAMES: [&'static str; 5] = ["tso", "gso", "gro", "tx_csum", "rx_csum"];

    /// The values in the order of [`Offloads::NAMES`].
    pub fn values(&self) -> [bool; 5] {
        [self.tso, self.gso, self.gro, self.tx_csum, self.rx_csum]
    }

    /// Sets one offload by name; `false` when the name is unknown.
    pub fn set(&mut self, name: &str, on: bool) -> bool {
        let slot = match name {
            "tso" => &mut self.tso,
            "gso" => &mut self.gso,
            "gro" => &mut self.gro,
            "tx_csum" => &mut self.tx_csum,
            "rx_csum" => &mut self.rx_csum,
            _ => return false,
        };
        *slot = on;
        true
    }
}

impl fmt::Display for Offloads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Self::NAMES
            .iter()
            .zip(self.values())
            .map(|(n, on)| format!("{n} {}", if on { "on" } else { "off" }))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

/// An address with its prefix length, `10.77.1.1/24` or `fd77:1::1/64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IpNet {
    pub addr: IpAddr,
    pub prefix_len: u8,
}

impl IpNet {
    /// Parses `ADDRESS/PREFIX`; the message says what is wrong.
    pub fn parse(text: &str) -> Result<IpNet, String> {
        let (addr, len) = text
            .split_once('/')
            .ok_or("no prefix length: write e.g. 10.77.1.1/24 or fd77:1::1/64")?;
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("'{addr}' is not an IPv4 or IPv6 address"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix_len = len
            .trim()
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= max)
            .ok_or_else(|| format!("bad prefix length '{len}': use 0 to {max}"))?;
        Ok(IpNet { addr, prefix_len })
    }

    fn bits(&self) -> u32 {
        if self.addr.is_ipv4() {
            32
        } else {
            128
        }
    }

    fn as_u128(&self) -> u128 {
        match self.addr {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        }
    }

    fn with_bits(&self, value: u128) -> IpAddr {
        match self.addr {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(value as u32)),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(value)),
        }
    }

    /// The host bits' mask (all ones below the prefix).
    fn host_mask(&self) -> u128 {
        let host_bits = self.bits() - u32::from(self.prefix_len);
        if host_bits == 128 {
            u128::MAX
        } else {
            (1u128 << host_bits) - 1
        }
    }

    /// The subnet: the address with its host bits cleared.
    pub fn network(&self) -> IpNet {
        IpNet {
            addr: self.with_bits(self.as_u128() & !self.host_mask()),
            prefix_len: self.prefix_len,
        }
    }

    /// Whether both are the same family and subnet.
    pub fn same_subnet(&self, other: &IpNet) -> bool {
        self.addr.is_ipv4() == other.addr.is_ipv4() && self.network() == other.network()
    }

    /// The subnet's last-but-one address (`10.77.1.254` in a /24, `…:ffff:fffe`
    /// in a /64): where a router's interface sits, away from the hosts.
    /// `None` when the subnet has no room for it (IPv4 /31 and /32, IPv6 /127, /128).
    pub fn router_address(&self) -> Option<IpNet> {
        if self.bits() - u32::from(self.prefix_len) < 2 {
            return None;
        }
        let last = self.as_u128() | self.host_mask();
        Some(IpNet {
            addr: self.with_bits(last - 1),
            prefix_len: self.prefix_len,
        })
    }

    /// Whether the address lies in a range meant for private or benchmark
    /// networks (RFC 1918, RFC 2544's 198.18.0.0/15, IPv6 ULA fc00::/7 and
    /// RFC 5180's 2001:2::/48), so a lab never shadows a real host.
    pub fn is_lab_range(&self) -> bool {
        match self.addr {
            IpAddr::V4(a) => {
                let [x, y, ..] = a.octets();
                a.is_private() || (x == 198 && (y == 18 || y == 19))
            }
            IpAddr::V6(a) => {
                let s = a.segments();
                (s[0] & 0xfe00) == 0xfc00 || (s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0)
            }
        }
    }

    /// Whether the whole subnet, not only the address, lies in a lab range
    /// ([`Self::is_lab_range`] of its first and last address; the ranges are
    /// aligned blocks, so no subnet spans two of them with a gap between):
    /// `10.77.1.1/0` puts a route to every address on the link.
    pub fn subnet_in_lab_range(&self) -> bool {
        let first = self.network();
        let last = IpNet {
            addr: self.with_bits(self.as_u128() | self.host_mask()),
            prefix_len: self.prefix_len,
        };
        first.is_lab_range() && last.is_lab_range()
    }

    /// Whether the address is the subnet's own (all host bits zero) or, for
    /// IPv4, its broadcast address: neither can be a host's.
    pub fn is_reserved_in_subnet(&self) -> bool {
        let host = self.as_u128() & self.host_mask();
        let edge = self.bits() - u32::from(self.prefix_len) >= 2;
        edge && (host == 0 || (self.addr.is_ipv4() && host == self.host_mask()))
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix_len)
    }
}

impl Lab {
    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    /// How many links host `name` is on.
    pub fn links_of(&self, name: &str) -> usize {
        self.links
            .iter()
            .filter(|l| l.a == name || l.b == name)
            .count()
    }

    /// The addresses host `name` has on link `link`: all of them when the
    /// host is on that link alone (the usual LPAR with one NIC); for a host
    /// on several (direct) links, such as a server facing several driver
    /// hosts, those in a subnet of the link's other end — one NIC per link,
    /// each in its own subnet (the `check` module makes sure of that).
    pub fn link_addresses(&self, link: usize, name: &str) -> Vec<IpNet> {
        let l = &self.links[link];
        let Some(host) = self.host(name) else {
            return Vec::new();
        };
        if self.links_of(name) <= 1 {
            return host.addresses.clone();
        }
        let peer = if l.a == name { &l.b } else { &l.a };
        let theirs = self.host(peer).map_or(&[][..], |h| &h.addresses[..]);
        host.addresses
            .iter()
            .filter(|x| theirs.iter().any(|y| x.same_subnet(y)))
            .copied()
            .collect()
    }

    /// The namespace name of a host or router: `sb-<lab>-<name>`.
    pub fn namespace(&self, member: &str) -> String {
        format!("{}{member}", namespace_prefix(&self.name))
    }
}

/// Every namespace of lab `lab` starts with this (`sb-demo-`); lab names
/// have no `-`, so one lab's prefix never matches another's namespaces.
pub fn namespace_prefix(lab: &str) -> String {
    format!("sb-{lab}-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNet {
        IpNet::parse(text).unwrap()
    }

    #[test]
    fn subnets_and_router_addresses() {
        assert_eq!(net("10.77.1.9/24").network(), net("10.77.1.0/24"));
        assert!(net("10.77.1.1/24").same_subnet(&net("10.77.1.2/24")));
        assert!(!net("10.77.1.1/24").same_subnet(&net("10.77.2.1/24")));
        assert!(!net("10.77.1.1/24").same_subnet(&net("fd77::1/64")));
        assert_eq!(
            net("10.77.1.1/24").router_address(),
            Some(net("10.77.1.254/24"))
        );
        assert_eq!(
            net("fd77:1::1/64").router_address(),
            Some(net("fd77:1::ffff:ffff:ffff:fffe/64"))
        );
        assert_eq!(net("10.77.1.1/31").router_address(), None);
        assert_eq!(net("::/0").network(), net("::/0"));
    }

    #[test]
    fn lab_ranges() {
        for ok in [
            "10.77.0.1/24",
            "192.168.9.1/24",
            "198.19.0.1/16",
            "fd77::1/64",
            "2001:2::1/64",
        ] {
            assert!(net(ok).is_lab_range(), "{ok}");
        }
        for bad in ["8.8.8.8/24", "2001:db8::1/64", "127.0.0.2/8"] {
            assert!(!net(bad).is_lab_range(), "{bad}");
        }
        for ok in [
            "10.77.1.1/8",
            "10.77.1.1/24",
            "fd77:1::1/64",
            "192.168.1.1/16",
        ] {
            assert!(net(ok).subnet_in_lab_range(), "{ok}");
        }
        for bad in [
            "10.77.1.1/0",
            "10.77.1.1/7",
            "192.168.1.1/15",
            "fd77:1::1/0",
        ] {
            assert!(!net(bad).subnet_in_lab_range(), "{bad}");
        }
        assert!(net("10.77.1.0/24").is_reserved_in_subnet());
        assert!(net("10.77.1.255/24").is_reserved_in_subnet());
        assert!(!net("10.77.1.1/24").is_reserved_in_subnet());
    }

    #[test]
    fn bad_addresses_say_why() {
        assert!(IpNet::parse("10.77.1.1")
            .unwrap_err()
            .contains("prefix length"));
        assert!(IpNet::parse("10.77.1.1/33")
            .unwrap_err()
            .contains("0 to 32"));
        assert!(IpNet::parse("host/24").unwrap_err().contains("not an IPv4"));
    }
}
