//! rtnetlink requests for links, addresses and routes (rtnetlink(7)), over
//! [`crate::netlink`], acting in the calling thread's namespace. Each
//! function is one message shape; callers add the context for errors.

use std::net::IpAddr;
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::netlink::{attrs, text, u32_at, Message, Netlink, NlError, F_CREATE, F_EXCL, F_REPLACE};
use crate::spec::IpNet;

const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const RTM_GETLINK: u16 = 18;
const RTM_NEWADDR: u16 = 20;
const RTM_DELADDR: u16 = 21;
const RTM_GETADDR: u16 = 22;
const RTM_NEWROUTE: u16 = 24;
const RTM_GETROUTE: u16 = 26;
const IFLA_ADDRESS: u16 = 1;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_TXQLEN: u16 = 13;
const IFLA_LINK: u16 = 5;
const IFLA_OPERSTATE: u16 = 16;
const IFLA_IFALIAS: u16 = 20;
const IFLA_LINKINFO: u16 = 18;
/// `struct rtnl_link_stats64`: rx_packets, tx_packets, rx_bytes, tx_bytes, …
const IFLA_STATS64: u16 = 23;
const IFLA_NET_NS_FD: u16 = 28;
const IFLA_INFO_KIND: u16 = 1;
const IFLA_INFO_DATA: u16 = 2;
const VETH_INFO_PEER: u16 = 1;
const IFLA_MACVLAN_MODE: u16 = 1;
const IFA_ADDRESS: u16 = 1;
const IFA_LOCAL: u16 = 2;
const IFA_FLAGS: u16 = 8;
const IFA_F_NODAD: u32 = 0x02;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_TABLE: u16 = 15;
const RT_TABLE_MAIN: u8 = 254;
const RTPROT_STATIC: u8 = 4;
const RTN_UNICAST: u8 = 1;
const IFF_UP: u32 = 0x1;
const IFF_RUNNING: u32 = 0x40;
/// `IF_OPER_UP` (RFC 2863), as `IFLA_OPERSTATE` reports it.
const IF_OPER_UP: u8 = 6;

/// A link as the kernel reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkInfo {
    pub index: u32,
    pub name: String,
    pub mtu: u32,
    /// Administratively up (IFF_UP).
    pub up: bool,
    /// Carrier on (IFF_RUNNING).
    pub running: bool,
    /// `IFLA_OPERSTATE` is UP: the kernel's link watch has seen the carrier
    /// and attached the qdisc, so the link passes packets. IFF_RUNNING comes
    /// first; until the link watch runs (batched, up to a second later, or
    /// later on a loaded machine) the device drops what it is given.
    pub oper_up: bool,
    /// `IFLA_INFO_KIND` (`veth`), if any.
    pub kind: Option<String>,
    /// `IFLA_LINK`: for a veth, its peer's index (in the peer's namespace).
    pub peer_index: Option<u32>,
    /// Bytes received and sent (`IFLA_STATS64`), when reported.
    pub rx_bytes: Option<u64>,
    pub tx_bytes: Option<u64>,
    /// Packets received and sent (`IFLA_STATS64`), when reported.
    pub rx_packets: Option<u64>,
    pub tx_packets: Option<u64>,
    /// `IFLA_IFALIAS` (`ip link set … alias TEXT`), when set.
    pub alias: Option<String>,
    /// `IFLA_ADDRESS`: the MAC, `aa:bb:cc:dd:ee:ff`.
    pub mac: Option<String>,
    /// `IFLA_MACVLAN_MODE` of a macvlan (`MACVLAN_MODE_*`).
    pub macvlan_mode: Option<u32>,
    /// `IFLA_TXQLEN`: the device's transmit queue length, packets.
    pub txqueuelen: Option<u32>,
}

/// A veth's transmit queue length as the kernel makes it, packets.
pub const DEFAULT_TXQUEUELEN: u32 = 1000;

/// A `struct ifinfomsg` (family, type, index, flags, change mask).
fn ifinfomsg(index: u32, flags: u32, change: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[4..8].copy_from_slice(&index.to_ne_bytes());
    b[8..12].copy_from_slice(&flags.to_ne_bytes());
    b[12..16].copy_from_slice(&change.to_ne_bytes());
    b
}

fn parse_link(payload: &[u8]) -> LinkInfo {
    let mut info = LinkInfo {
        index: u32_at(payload, 4),
        name: String::new(),
        mtu: 0,
        up: u32_at(payload, 8) & IFF_UP != 0,
        running: u32_at(payload, 8) & IFF_RUNNING != 0,
        oper_up: false,
        kind: None,
        peer_index: None,
        rx_bytes: None,
        tx_bytes: None,
        rx_packets: None,
        tx_packets: None,
        alias: None,
        mac: None,
        macvlan_mode: None,
        txqueuelen: None,
    };
    for (kind, data) in attrs(payload.get(16..).unwrap_or_default()) {
        match kind {
            IFLA_IFNAME => info.name = text(data),
            IFLA_MTU => info.mtu = u32_at(data, 0),
            IFLA_TXQLEN => info.txqueuelen = Some(u32_at(data, 0)),
            IFLA_LINK => info.peer_index = Some(u32_at(data, 0)),
            IFLA_OPERSTATE => info.oper_up = data.first() == Some(&IF_OPER_UP),
            IFLA_IFALIAS => info.alias = Some(text(data)).filter(|a| !a.is_empty()),
            IFLA_STATS64 if data.len() >= 32 => {
                let at = |i: usize| u64::from_ne_bytes(data[i..i + 8].try_into().expect("8 bytes"));
                (info.rx_bytes, info.tx_bytes) = (Some(at(16)), Some(at(24)));
                (info.rx_packets, info.tx_packets) = (Some(at(0)), Some(at(8)));
            }
            IFLA_ADDRESS if data.len() == 6 => {
                let hex: Vec<String> = data.iter().map(|b| format!("{b:02x}")).collect();
                info.mac = Some(hex.join(":"));
            }
            IFLA_LINKINFO => {
                info.kind = attrs(data)
                    .find(|(k, _)| *k == IFLA_INFO_KIND)
                    .map(|(_, d)| text(d));
                if info.kind.as_deref() == Some("macvlan") {
                    info.macvlan_mode = attrs(data)
                        .find(|(k, _)| *k == IFLA_INFO_DATA)
                        .and_then(|(_, d)| attrs(d).find(|(k, _)| *k == IFLA_MACVLAN_MODE))
                        .map(|(_, d)| u32_at(d, 0));
                }
            }
            _ => {}
        }
    }
    info
}

/// The link named `name`, or `None` when there is none.
pub fn link(nl: &mut Netlink, name: &str) -> Result<Option<LinkInfo>, NlError> {
    let mut msg = Message::new(RTM_GETLINK, 0, &ifinfomsg(0, 0, 0));
    msg.attr_str(IFLA_IFNAME, name);
    match nl.get(msg) {
        Ok(payload) => Ok(Some(parse_link(&payload))),
        Err(e) if e.errno() == Some(libc::ENODEV) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Every link in the namespace.
pub fn links(nl: &mut Netlink) -> Result<Vec<LinkInfo>, NlError> {
    let replies = nl.dump(Message::new(RTM_GETLINK, 0, &ifinfomsg(0, 0, 0)))?;
    Ok(replies.iter().map(|p| parse_link(p)).collect())
}

/// One end of a veth pair to create: name, namespace and interface index.
pub type VethEnd<'a> = (&'a str, BorrowedFd<'a>, u32);

/// Creates a veth pair with each end directly in its namespace (so a pair
/// is never half-made, nor ever seen in the caller's namespace).
pub fn create_veth(nl: &mut Netlink, ends: [VethEnd; 2], mtu: u32) -> Result<(), NlError> {
    let [(name0, ns0, index0), (name1, ns1, index1)] = ends;
    let mut msg = Message::new(RTM_NEWLINK, F_CREATE | F_EXCL, &ifinfomsg(index0, 0, 0));
    msg.attr_str(IFLA_IFNAME, name0)
        .attr_u32(IFLA_MTU, mtu)
        .attr_u32(IFLA_NET_NS_FD, ns0.as_raw_fd() as u32);
    let info = msg.nest(IFLA_LINKINFO);
    msg.attr_str(IFLA_INFO_KIND, "veth");
    let data = msg.nest(IFLA_INFO_DATA);
    let peer = msg.nest(VETH_INFO_PEER);
    msg.raw(&ifinfomsg(index1, 0, 0));
    msg.attr_str(IFLA_IFNAME, name1)
        .attr_u32(IFLA_MTU, mtu)
        .attr_u32(IFLA_NET_NS_FD, ns1.as_raw_fd() as u32);
    msg.end(peer);
    msg.end(data);
    msg.end(info);
    nl.request(msg)
}

/// Creates macvlan `name` on link `parent` (this namespace) in mode `mode`
/// (`MACVLAN_MODE_*`), with `mtu`; the kernel gives it a random MAC.
pub fn create_macvlan(
    nl: &mut Netlink,
    name: &str,
    parent: u32,
    mode: u32,
    mtu: u32,
) -> Result<(), NlError> {
    let mut msg = Message::new(RTM_NEWLINK, F_CREATE | F_EXCL, &ifinfomsg(0, 0, 0));
    msg.attr_str(IFLA_IFNAME, name)
        .attr_u32(IFLA_LINK, parent)
        .attr_u32(IFLA_MTU, mtu);
    let info = msg.nest(IFLA_LINKINFO);
    msg.attr_str(IFLA_INFO_KIND, "macvlan");
    let data = msg.nest(IFLA_INFO_DATA);
    msg.attr_u32(IFLA_MACVLAN_MODE, mode);
    msg.end(data);
    msg.end(info);
    nl.request(msg)
}

/// Sets a link's MTU and brings it up.
pub fn set_up(nl: &mut Netlink, index: u32, mtu: Option<u32>) -> Result<(), NlError> {
    let mut msg = Message::new(RTM_NEWLINK, 0, &ifinfomsg(index, IFF_UP, IFF_UP));
    if let Some(mtu) = mtu {
        msg.attr_u32(IFLA_MTU, mtu);
    }
    nl.request(msg)
}

/// Sets link `index`'s transmit queue length, packets.
pub fn set_txqueuelen(nl: &mut Netlink, index: u32, packets: u32) -> Result<(), NlError> {
    let mut msg = Message::new(RTM_NEWLINK, 0, &ifinfomsg(index, 0, 0));
    msg.attr_u32(IFLA_TXQLEN, packets);
    nl.request(msg)
}

/// Sets link `index`'s alias (at most 255 bytes, the kernel's IFALIASZ - 1).
pub fn set_alias(nl: &mut Netlink, index: u32, alias: &str) -> Result<(), NlError> {
    let mut msg = Message::new(RTM_NEWLINK, 0, &ifinfomsg(index, 0, 0));
    msg.attr_str(IFLA_IFALIAS, alias);
    nl.request(msg)
}

/// Deletes a link (a veth takes its peer with it).
pub fn delete_link(nl: &mut Netlink, index: u32) -> Result<(), NlError> {
    nl.request(Message::new(RTM_DELLINK, 0, &ifinfomsg(index, 0, 0)))
}

fn family(addr: &IpAddr) -> u8 {
    if addr.is_ipv4() {
        libc::AF_INET as u8
    } else {
        libc::AF_INET6 as u8
    }
}

fn addr_bytes(addr: &IpAddr) -> Vec<u8> {
    match addr {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

fn parse_addr(family: u8, data: &[u8]) -> Option<IpAddr> {
    match (i32::from(family), data.len()) {
        (libc::AF_INET, 4) => Some(IpAddr::from(<[u8; 4]>::try_from(data).ok()?)),
        (libc::AF_INET6, 16) => Some(IpAddr::from(<[u8; 16]>::try_from(data).ok()?)),
        _ => None,
    }
}

/// A `struct ifaddrmsg` for `net` on link `index`.
fn ifaddrmsg(net: &IpNet, index: u32) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[0] = family(&net.addr);
    b[1] = net.prefix_len;
    b[4..8].copy_from_slice(&index.to_ne_bytes());
    b
}

/// The global addresses on link `index` (IPv6 link-local ones left out:
/// the kernel makes those itself).
pub fn addresses(nl: &mut Netlink, index: u32) -> Result<Vec<IpNet>, NlError> {
    let replies = nl.dump(Message::new(RTM_GETADDR, 0, &[0u8; 8]))?;
    let mut out = Vec::new();
    for p in replies.iter().filter(|p| u32_at(p, 4) == index) {
        let (fam, prefix_len) = (p[0], p[1]);
        let want = if i32::from(fam) == libc::AF_INET {
            IFA_LOCAL
        } else {
            IFA_ADDRESS
        };
        let addr = attrs(&p[8..])
            .find(|(k, _)| *k == want)
            .and_then(|(_, d)| parse_addr(fam, d));
        match addr {
            Some(IpAddr::V6(a)) if a.segments()[0] & 0xffc0 == 0xfe80 => {}
            Some(addr) => out.push(IpNet { addr, prefix_len }),
            None => {}
        }
    }
    Ok(out)
}

fn address_msg(kind: u16, flags: u16, index: u32, net: &IpNet) -> Message {
    let mut msg = Message::new(kind, flags, &ifaddrmsg(net, index));
    let bytes = addr_bytes(&net.addr);
    msg.attr(IFA_LOCAL, &bytes).attr(IFA_ADDRESS, &bytes);
    msg
}

/// Adds (or keeps) `net` on link `index`; IPv6 without duplicate address
/// detection, so the address is usable at once rather than after ~1 s.
pub fn add_address(nl: &mut Netlink, index: u32, net: &IpNet) -> Result<(), NlError> {
    let mut msg = address_msg(RTM_NEWADDR, F_CREATE | F_REPLACE, index, net);
    if net.addr.is_ipv6() {
        msg.attr_u32(IFA_FLAGS, IFA_F_NODAD);
    }
    nl.request(msg)
}

/// Removes `net` from link `index`.
pub fn delete_address(nl: &mut Netlink, index: u32, net: &IpNet) -> Result<(), NlError> {
    nl.request(address_msg(RTM_DELADDR, 0, index, net))
}

/// A `struct rtmsg` for a static unicast route in the main table.
fn rtmsg(family: u8, dst_len: u8) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[0] = family;
    b[1] = dst_len;
    b[4] = RT_TABLE_MAIN;
    b[5] = RTPROT_STATIC;
    b[7] = RTN_UNICAST;
    b
}

/// Adds or replaces the route to `dest` through `gateway` on link `oif`.
pub fn replace_route(
    nl: &mut Netlink,
    dest: &IpNet,
    gateway: &IpAddr,
    oif: u32,
) -> Result<(), NlError> {
    let mut msg = Message::new(
        RTM_NEWROUTE,
        F_CREATE | F_REPLACE,
        &rtmsg(family(&dest.addr), dest.prefix_len),
    );
    msg.attr(RTA_DST, &addr_bytes(&dest.addr))
        .attr(RTA_GATEWAY, &addr_bytes(gateway))
        .attr_u32(RTA_OIF, oif);
    nl.request(msg)
}

/// A route read back: destination, gateway and outgoing link.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteInfo {
    pub dest: IpNet,
    pub gateway: IpAddr,
    pub oif: u32,
}

/// The main table's routes that have a gateway (the lab's routes).
pub fn gateway_routes(nl: &mut Netlink) -> Result<Vec<RouteInfo>, NlError> {
    let replies = nl.dump(Message::new(RTM_GETROUTE, 0, &rtmsg(0, 0)))?;
    let mut out = Vec::new();
    for p in &replies {
        let (fam, dst_len) = (p[0], p[1]);
        let (mut dest, mut gateway, mut oif, mut table) = (None, None, 0, u32::from(p[4]));
        for (kind, data) in attrs(p.get(12..).unwrap_or_default()) {
            match kind {
                RTA_DST => dest = parse_addr(fam, data),
                RTA_GATEWAY => gateway = parse_addr(fam, data),
                RTA_OIF => oif = u32_at(data, 0),
                RTA_TABLE => table = u32_at(data, 0),
                _ => {}
            }
        }
        if let (Some(addr), Some(gateway), true) =
            (dest, gateway, table == u32::from(RT_TABLE_MAIN))
        {
            out.push(RouteInfo {
                dest: IpNet {
                    addr,
                    prefix_len: dst_len,
                },
                gateway,
                oif,
            });
        }
    }
    Ok(out)
}

const RTM_NEWRULE: u16 = 32;
const FRA_SRC: u16 = 2;
const FRA_PRIORITY: u16 = 6;
const FRA_TABLE: u16 = 15;
const FR_ACT_TO_TBL: u8 = 1;
const RT_SCOPE_LINK: u8 = 253;
const RTPROT_KERNEL: u8 = 2;

/// Adds the policy rule "from `source` (one address) look up table
/// `table`" at priority `priority`; one already there is kept (`F_EXCL`:
/// without it the kernel adds a duplicate).
pub fn add_source_rule(
    nl: &mut Netlink,
    source: &IpAddr,
    table: u32,
    priority: u32,
) -> Result<(), NlError> {
    // struct fib_rule_hdr: family, dst_len, src_len, tos, table, res1,
    // res2, action, flags.
    let mut hdr = [0u8; 12];
    hdr[0] = family(source);
    hdr[2] = if source.is_ipv4() { 32 } else { 128 };
    hdr[7] = FR_ACT_TO_TBL;
    let mut msg = Message::new(RTM_NEWRULE, F_CREATE | F_EXCL, &hdr);
    msg.attr(FRA_SRC, &addr_bytes(source))
        .attr_u32(FRA_TABLE, table)
        .attr_u32(FRA_PRIORITY, priority);
    match nl.request(msg) {
        Err(e) if e.errno() == Some(libc::EEXIST) => Ok(()),
        other => other,
    }
}

/// Adds or replaces the on-link route to `dest` out of link `oif` (no
/// gateway, scope link: as the kernel's own prefix route) in table `table`.
pub fn replace_link_route(
    nl: &mut Netlink,
    dest: &IpNet,
    oif: u32,
    table: u32,
) -> Result<(), NlError> {
    let mut hdr = rtmsg(family(&dest.addr), dest.prefix_len);
    hdr[4] = 0; // RT_TABLE_UNSPEC: RTA_TABLE gives it
    hdr[5] = RTPROT_KERNEL;
    hdr[6] = RT_SCOPE_LINK;
    let mut msg = Message::new(RTM_NEWROUTE, F_CREATE | F_REPLACE, &hdr);
    msg.attr(RTA_DST, &addr_bytes(&dest.addr))
        .attr_u32(RTA_OIF, oif)
        .attr_u32(RTA_TABLE, table);
    nl.request(msg)
}
