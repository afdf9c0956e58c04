//! Load distribution on a lab host (the analogue of z/OS's Sysplex
//! Distributor): an IPVS virtual service — a virtual address and port on
//! the distributor host — that spreads connections over real servers on
//! other lab hosts with a scheduler (round robin, weighted round robin,
//! least-connection, weighted least-connection) and a forwarding method
//! (NAT, or direct routing), programmed over IPVS's generic netlink family
//! and read back with IPVS's own per-destination counters.
//!
//! # Design note
//!
//! - **Generic netlink, encoded here.** The messages are few and fixed
//!   (resolve the `IPVS` family, NEW_SERVICE, NEW_DEST, GET_DEST,
//!   DEL_SERVICE; `linux/ip_vs.h`), and the lab already speaks netlink
//!   through its own small client ([`crate::netlink`], used for rtnetlink,
//!   xfrm and nf_tables), so a second netlink stack (`neli`, or the
//!   `netlink-packet-*` family, which has no IPVS messages) would add a
//!   dependency to encode a dozen attributes. `ipvsadm` was weighed too: it
//!   is not on this host nor in the guest's initramfs, and its text output
//!   would be parsed for the counters that GET_DEST gives as numbers.
//! - **Per namespace.** IPVS tables belong to the network namespace of the
//!   socket that programs them, so the service is made from a thread in the
//!   distributor's namespace and dies with it at `lab down`.
//! - **Kernel support** is `CONFIG_IP_VS` with the scheduler's module
//!   (`CONFIG_IP_VS_RR`, …), which the kernel loads by name when a service
//!   asks for it. The family appears when `ip_vs` is loaded; [`check`]
//!   asks `modprobe` for it first, as ipvsadm does, then refuses a kernel
//!   without it in one line naming the option and a guest that has it.
//! - **Counters** ([`destinations`]): per destination, the connections
//!   IPVS scheduled to it (`IPVS_STATS_ATTR_CONNS`, 64-bit), the packets
//!   and bytes in and out, and its active and inactive connections now.

use std::net::IpAddr;

use crate::error::{LabError, Result};
pub use crate::lb::{Forwarding, Scheduler};
use crate::netlink::{attrs, u32_at, Message, Netlink};

/// A TCP virtual service: an address and port, or, with `fwmark`, every
/// packet of the address's family that carries that firewall mark (the
/// real servers then keep each connection's own port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    pub address: IpAddr,
    pub port: u16,
    pub scheduler: Scheduler,
    /// A firewall-mark service (`IPVS_SVC_ATTR_FWMARK`) instead of
    /// address and port.
    pub fwmark: Option<u32>,
}

/// A real server of a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub address: IpAddr,
    pub port: u16,
    pub forwarding: Forwarding,
    /// Share for the weighted schedulers (1 and up; 0 takes it out).
    pub weight: u32,
}

/// A destination as IPVS counts it (see [`destinations`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DestinationCounts {
    pub address: Option<IpAddr>,
    pub port: u16,
    /// `IP_VS_CONN_F_*` forwarding method as the kernel holds it.
    pub forwarding: u32,
    pub weight: u32,
    /// Connections scheduled to it since it was added.
    pub connections: u64,
    pub packets_in: u64,
    pub packets_out: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Connections established now, and in other states (TIME_WAIT, …).
    pub active: u32,
    pub inactive: u32,
}

// linux/genetlink.h: the controller family that resolves family names.
const NETLINK_GENERIC: libc::c_int = 16;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

// linux/ip_vs.h.
const IPVS_GENL_NAME: &str = "IPVS";
const IPVS_GENL_VERSION: u8 = 1;
const IPVS_CMD_NEW_SERVICE: u8 = 1;
const IPVS_CMD_DEL_SERVICE: u8 = 3;
const IPVS_CMD_NEW_DEST: u8 = 5;
const IPVS_CMD_GET_DEST: u8 = 8;
const IPVS_CMD_ATTR_SERVICE: u16 = 1;
const IPVS_CMD_ATTR_DEST: u16 = 2;
const IPVS_SVC_ATTR_AF: u16 = 1;
const IPVS_SVC_ATTR_PROTOCOL: u16 = 2;
const IPVS_SVC_ATTR_ADDR: u16 = 3;
const IPVS_SVC_ATTR_PORT: u16 = 4;
const IPVS_SVC_ATTR_FWMARK: u16 = 5;
const IPVS_SVC_ATTR_SCHED_NAME: u16 = 6;
const IPVS_SVC_ATTR_FLAGS: u16 = 7;
const IPVS_SVC_ATTR_TIMEOUT: u16 = 8;
const IPVS_SVC_ATTR_NETMASK: u16 = 9;
const IPVS_DEST_ATTR_ADDR: u16 = 1;
const IPVS_DEST_ATTR_PORT: u16 = 2;
const IPVS_DEST_ATTR_FWD_METHOD: u16 = 3;
const IPVS_DEST_ATTR_WEIGHT: u16 = 4;
const IPVS_DEST_ATTR_U_THRESH: u16 = 5;
const IPVS_DEST_ATTR_L_THRESH: u16 = 6;
const IPVS_DEST_ATTR_ACTIVE_CONNS: u16 = 7;
const IPVS_DEST_ATTR_INACT_CONNS: u16 = 8;
const IPVS_DEST_ATTR_STATS: u16 = 10;
const IPVS_DEST_ATTR_ADDR_FAMILY: u16 = 11;
const IPVS_DEST_ATTR_STATS64: u16 = 12;
const IPVS_STATS_ATTR_CONNS: u16 = 1;
const IPVS_STATS_ATTR_INPKTS: u16 = 2;
const IPVS_STATS_ATTR_OUTPKTS: u16 = 3;
const IPVS_STATS_ATTR_INBYTES: u16 = 4;
const IPVS_STATS_ATTR_OUTBYTES: u16 = 5;

/// A generic netlink socket on IPVS's family, in the calling thread's
/// namespace.
pub struct Ipvs {
    nl: Netlink,
    family: u16,
}

impl Ipvs {
    /// Opens the socket and resolves the family; `Ok(None)` when the
    /// kernel has no `IPVS` family (no `ip_vs` loaded or built).
    pub fn open() -> Result<Option<Ipvs>> {
        let action = "open IPVS's generic netlink family";
        let mut nl = Netlink::open_protocol(NETLINK_GENERIC)
            .map_err(|e| LabError::os(format!("{action}: open NETLINK_GENERIC"), e))?;
        let mut msg = Message::new(GENL_ID_CTRL, 0, &genl_header(CTRL_CMD_GETFAMILY, 1));
        msg.attr_str(CTRL_ATTR_FAMILY_NAME, IPVS_GENL_NAME);
        let reply = match nl.get(msg) {
            Ok(r) => r,
            Err(e) if e.errno() == Some(libc::ENOENT) => return Ok(None),
            Err(e) => return Err(LabError::kernel(action, e.source, e.message)),
        };
        let family = attrs(reply.get(4..).unwrap_or_default())
            .find(|(k, _)| *k == CTRL_ATTR_FAMILY_ID)
            .and_then(|(_, d)| d.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]])));
        Ok(family.map(|family| Ipvs { nl, family }))
    }

    /// Adds `service` (an error if it is there already).
    pub fn add_service(&mut self, service: &Service) -> Result<()> {
        let msg = new_service_message(self.family, service);
        self.nl.request(msg).map_err(|e| {
            let action = format!(
                "add IPVS service {} with scheduler {}",
                endpoint(service.address, service.port),
                service.scheduler.name()
            );
            LabError::kernel(action, e.source, e.message)
        })
    }

    /// Adds real server `dest` to `service`.
    pub fn add_destination(&mut self, service: &Service, dest: &Destination) -> Result<()> {
        let msg = new_dest_message(self.family, service, dest);
        self.nl.request(msg).map_err(|e| {
            let action = format!(
                "add real server {} to IPVS service {}",
                endpoint(dest.address, dest.port),
                endpoint(service.address, service.port)
            );
            LabError::kernel(action, e.source, e.message)
        })
    }

    /// Deletes `service` with its real servers; nothing when it is absent.
    pub fn delete_service(&mut self, service: &Service) -> Result<()> {
        let mut msg = self.message(IPVS_CMD_DEL_SERVICE, 0);
        service_key(&mut msg, service);
        match self.nl.request(msg) {
            Ok(()) => Ok(()),
            Err(e) if e.errno() == Some(libc::ESRCH) => Ok(()),
            Err(e) => Err(LabError::kernel("delete IPVS service", e.source, e.message)),
        }
    }

    /// The real servers of `service` with IPVS's counters; `None` when the
    /// service is absent.
    pub fn destinations(&mut self, service: &Service) -> Result<Option<Vec<DestinationCounts>>> {
        let mut msg = self.message(IPVS_CMD_GET_DEST, 0);
        service_key(&mut msg, service);
        let replies = match self.nl.dump(msg) {
            Ok(r) => r,
            Err(e) if e.errno() == Some(libc::ESRCH) => return Ok(None),
            Err(e) => {
                return Err(LabError::kernel(
                    "read IPVS's real servers",
                    e.source,
                    e.message,
                ))
            }
        };
        Ok(Some(
            replies
                .iter()
                .filter_map(|r| parse_dest_reply(r.get(4..).unwrap_or_default()))
                .collect(),
        ))
    }

    fn message(&self, cmd: u8, flags: u16) -> Message {
        Message::new(self.family, flags, &genl_header(cmd, IPVS_GENL_VERSION))
    }
}

/// `struct genlmsghdr`: command, version, reserved.
fn genl_header(cmd: u8, version: u8) -> [u8; 4] {
    [cmd, version, 0, 0]
}

fn endpoint(ip: IpAddr, port: u16) -> String {
    std::net::SocketAddr::new(ip, port).to_string()
}

/// `union nf_inet_addr`: 16 bytes, an IPv4 address in the first four.
fn inet_addr(ip: IpAddr) -> [u8; 16] {
    let mut out = [0u8; 16];
    match ip {
        IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => out.copy_from_slice(&v6.octets()),
    }
    out
}

fn family_of(ip: IpAddr) -> u16 {
    match ip {
        IpAddr::V4(_) => libc::AF_INET as u16,
        IpAddr::V6(_) => libc::AF_INET6 as u16,
    }
}

/// The attributes that name a TCP service: family, protocol, address, port.
fn service_key(msg: &mut Message, service: &Service) {
    let nest = msg.nest(IPVS_CMD_ATTR_SERVICE);
    service_key_attrs(msg, service);
    msg.end(nest);
}

fn service_key_attrs(msg: &mut Message, service: &Service) {
    msg.attr(IPVS_SVC_ATTR_AF, &family_of(service.address).to_ne_bytes());
    if let Some(mark) = service.fwmark {
        msg.attr_u32(IPVS_SVC_ATTR_FWMARK, mark);
        return;
    }
    msg.attr(
        IPVS_SVC_ATTR_PROTOCOL,
        &(libc::IPPROTO_TCP as u16).to_ne_bytes(),
    );
    msg.attr(IPVS_SVC_ATTR_ADDR, &inet_addr(service.address));
    msg.attr(IPVS_SVC_ATTR_PORT, &service.port.to_be_bytes());
}

/// IPVS_CMD_NEW_SERVICE: the key plus what a full entry needs (scheduler,
/// flags with their mask, persistence timeout 0, netmask all ones).
fn new_service_message(family: u16, service: &Service) -> Message {
    let mut msg = Message::new(
        family,
        0,
        &genl_header(IPVS_CMD_NEW_SERVICE, IPVS_GENL_VERSION),
    );
    let nest = msg.nest(IPVS_CMD_ATTR_SERVICE);
    service_key_attrs(&mut msg, service);
    msg.attr_str(IPVS_SVC_ATTR_SCHED_NAME, service.scheduler.name());
    // struct ip_vs_flags { flags, mask }: no flags set.
    msg.attr(IPVS_SVC_ATTR_FLAGS, &[0u8; 8]);
    msg.attr_u32(IPVS_SVC_ATTR_TIMEOUT, 0);
    msg.attr(IPVS_SVC_ATTR_NETMASK, &u32::MAX.to_be_bytes());
    msg.end(nest);
    msg
}

/// IPVS_CMD_NEW_DEST: the service's key and the real server.
fn new_dest_message(family: u16, service: &Service, dest: &Destination) -> Message {
    let mut msg = Message::new(
        family,
        0,
        &genl_header(IPVS_CMD_NEW_DEST, IPVS_GENL_VERSION),
    );
    service_key(&mut msg, service);
    let nest = msg.nest(IPVS_CMD_ATTR_DEST);
    msg.attr(IPVS_DEST_ATTR_ADDR, &inet_addr(dest.address));
    msg.attr(IPVS_DEST_ATTR_PORT, &dest.port.to_be_bytes());
    msg.attr_u32(IPVS_DEST_ATTR_FWD_METHOD, dest.forwarding.flag());
    msg.attr_u32(IPVS_DEST_ATTR_WEIGHT, dest.weight);
    msg.attr_u32(IPVS_DEST_ATTR_U_THRESH, 0);
    msg.attr_u32(IPVS_DEST_ATTR_L_THRESH, 0);
    msg.attr(
        IPVS_DEST_ATTR_ADDR_FAMILY,
        &family_of(dest.address).to_ne_bytes(),
    );
    msg.end(nest);
    msg
}

/// One GET_DEST reply's destination (the attributes after the genl header).
fn parse_dest_reply(body: &[u8]) -> Option<DestinationCounts> {
    let (_, dest) = attrs(body).find(|(k, _)| *k == IPVS_CMD_ATTR_DEST)?;
    let mut out = DestinationCounts::default();
    let (mut raw_addr, mut family) = (None, libc::AF_INET as u16);
    let (mut stats32, mut stats64) = (None, None);
    for (kind, data) in attrs(dest) {
        match kind {
            IPVS_DEST_ATTR_ADDR => raw_addr = Some(data),
            IPVS_DEST_ATTR_ADDR_FAMILY if data.len() >= 2 => {
                family = u16::from_ne_bytes([data[0], data[1]])
            }
            IPVS_DEST_ATTR_PORT if data.len() >= 2 => {
                out.port = u16::from_be_bytes([data[0], data[1]])
            }
            IPVS_DEST_ATTR_FWD_METHOD => out.forwarding = u32_at(data, 0),
            IPVS_DEST_ATTR_WEIGHT => out.weight = u32_at(data, 0),
            IPVS_DEST_ATTR_ACTIVE_CONNS => out.active = u32_at(data, 0),
            IPVS_DEST_ATTR_INACT_CONNS => out.inactive = u32_at(data, 0),
            IPVS_DEST_ATTR_STATS => stats32 = Some(data),
            IPVS_DEST_ATTR_STATS64 => stats64 = Some(data),
            _ => {}
        }
    }
    out.address = raw_addr.and_then(|a| addr_of(a, family));
    // STATS64 (Linux 4.1 on) does not wrap; STATS is the older 32-bit form.
    if let Some(s) = stats64.or(stats32) {
        for (kind, data) in attrs(s) {
            let value = match data.len() {
                8 => u64::from_ne_bytes(data.try_into().expect("8 bytes")),
                4 => u64::from(u32_at(data, 0)),
                _ => continue,
            };
            match kind {
                IPVS_STATS_ATTR_CONNS => out.connections = value,
                IPVS_STATS_ATTR_INPKTS => out.packets_in = value,
                IPVS_STATS_ATTR_OUTPKTS => out.packets_out = value,
                IPVS_STATS_ATTR_INBYTES => out.bytes_in = value,
                IPVS_STATS_ATTR_OUTBYTES => out.bytes_out = value,
                _ => {}
            }
        }
    }
    Some(out)
}

fn addr_of(data: &[u8], family: u16) -> Option<IpAddr> {
    if family == libc::AF_INET6 as u16 {
        let b: [u8; 16] = data.get(..16)?.try_into().ok()?;
        Some(IpAddr::from(b))
    } else {
        let b: [u8; 4] = data.get(..4)?.try_into().ok()?;
        Some(IpAddr::from(b))
    }
}

/// Refuses IPVS on this machine before anything is built: loads `ip_vs`
/// when a `modprobe` is there (the family exists only once it is loaded),
/// then resolves the family in a scratch namespace.
pub fn check() -> Result<()> {
    let action = "load distribution (IPVS)";
    let _ = std::process::Command::new("modprobe")
        .arg("ip_vs")
        .stderr(std::process::Stdio::null())
        .status();
    let found = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: unshare(2) moves this short-lived thread only.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                return Err(LabError::os(
                    "make a scratch namespace to check for IPVS",
                    std::io::Error::last_os_error(),
                ));
            }
            Ipvs::open().map(|i| i.is_some())
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })?;
    if found {
        return Ok(());
    }
    Err(LabError::KernelFeature {
        action: action.into(),
        feature: "IPVS".into(),
        config: "CONFIG_IP_VS and its schedulers (CONFIG_IP_VS_RR, _WRR, _LC, _WLC)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::text;

    fn service() -> Service {
        Service {
            address: "10.80.1.254".parse().unwrap(),
            port: 8080,
            scheduler: Scheduler::Wrr,
            fwmark: None,
        }
    }

    #[test]
    fn a_firewall_mark_service_is_keyed_by_family_and_mark_alone() {
        let marked = Service {
            fwmark: Some(0x5b),
            ..service()
        };
        let msg = new_service_message(33, &marked);
        let attrs = nested(&msg.body()[4..], IPVS_CMD_ATTR_SERVICE);
        let kinds: Vec<u16> = attrs.iter().map(|(k, _)| *k).collect();
        assert!(kinds.contains(&IPVS_SVC_ATTR_FWMARK), "{kinds:?}");
        assert!(
            !kinds.contains(&IPVS_SVC_ATTR_ADDR) && !kinds.contains(&IPVS_SVC_ATTR_PORT),
            "{kinds:?}"
        );
    }

    /// The attributes of a nest, by kind.
    fn nested(body: &[u8], kind: u16) -> Vec<(u16, Vec<u8>)> {
        let (_, data) = attrs(body).find(|(k, _)| *k == kind).expect("nest");
        attrs(data).map(|(k, d)| (k, d.to_vec())).collect()
    }

    #[test]
    fn schedulers_and_forwarding_parse_or_say_what_is_allowed() {
        for s in Scheduler::ALL {
            assert_eq!(Scheduler::parse(s.name()), Ok(s));
        }
        let e = Scheduler::parse("sh").unwrap_err();
        assert!(
            e.contains("unknown IPVS scheduler 'sh'") && e.contains("rr, wrr, lc or wlc"),
            "{e}"
        );
        assert_eq!(Forwarding::parse("dr"), Ok(Forwarding::Dr));
        assert!(Forwarding::parse("tun")
            .unwrap_err()
            .contains("use nat or dr"));
    }

    #[test]
    fn a_new_service_carries_the_key_and_a_full_entry() {
        let msg = new_service_message(33, &service());
        let body = msg.body();
        assert_eq!(&body[..4], &[IPVS_CMD_NEW_SERVICE, 1, 0, 0], "genlmsghdr");
        let attrs = nested(&body[4..], IPVS_CMD_ATTR_SERVICE);
        let get = |k: u16| attrs.iter().find(|(kind, _)| *kind == k).unwrap().1.clone();
        assert_eq!(get(IPVS_SVC_ATTR_AF), (libc::AF_INET as u16).to_ne_bytes());
        assert_eq!(get(IPVS_SVC_ATTR_PROTOCOL), 6u16.to_ne_bytes());
        let addr = get(IPVS_SVC_ATTR_ADDR);
        assert_eq!(addr.len(), 16, "union nf_inet_addr");
        assert_eq!(&addr[..4], &[10, 80, 1, 254]);
        assert_eq!(
            get(IPVS_SVC_ATTR_PORT),
            [0x1f, 0x90],
            "8080 in network order"
        );
        assert_eq!(text(&get(IPVS_SVC_ATTR_SCHED_NAME)), "wrr");
        assert_eq!(get(IPVS_SVC_ATTR_FLAGS).len(), 8);
        assert_eq!(get(IPVS_SVC_ATTR_NETMASK), [0xff; 4]);
    }

    #[test]
    fn a_new_destination_names_its_service_and_forwarding() {
        let dest = Destination {
            address: "10.80.2.1".parse().unwrap(),
            port: 8080,
            forwarding: Forwarding::Dr,
            weight: 3,
        };
        let msg = new_dest_message(33, &service(), &dest);
        let body = &msg.body()[4..];
        let key = nested(body, IPVS_CMD_ATTR_SERVICE);
        assert_eq!(key.len(), 4, "family, protocol, address, port: {key:?}");
        let d = nested(body, IPVS_CMD_ATTR_DEST);
        let get = |k: u16| d.iter().find(|(kind, _)| *kind == k).unwrap().1.clone();
        assert_eq!(&get(IPVS_DEST_ATTR_ADDR)[..4], &[10, 80, 2, 1]);
        assert_eq!(get(IPVS_DEST_ATTR_FWD_METHOD), 3u32.to_ne_bytes(), "DROUTE");
        assert_eq!(get(IPVS_DEST_ATTR_WEIGHT), 3u32.to_ne_bytes());
        let nat = Destination {
            forwarding: Forwarding::Nat,
            ..dest
        };
        let msg = new_dest_message(33, &service(), &nat);
        let d = nested(&msg.body()[4..], IPVS_CMD_ATTR_DEST);
        let fwd = &d
            .iter()
            .find(|(k, _)| *k == IPVS_DEST_ATTR_FWD_METHOD)
            .unwrap()
            .1;
        assert_eq!(fwd, &0u32.to_ne_bytes(), "MASQ");
    }

    #[test]
    fn a_destination_reply_gives_ipvs_counters() {
        // As the kernel builds a GET_DEST reply (ip_vs_genl_fill_dest).
        let mut m = Message::new(0, 0, &[]);
        let dest = m.nest(IPVS_CMD_ATTR_DEST);
        m.attr(
            IPVS_DEST_ATTR_ADDR,
            &inet_addr("10.80.3.1".parse().unwrap()),
        );
        m.attr(IPVS_DEST_ATTR_PORT, &8080u16.to_be_bytes());
        m.attr_u32(IPVS_DEST_ATTR_FWD_METHOD, 0);
        m.attr_u32(IPVS_DEST_ATTR_WEIGHT, 1);
        m.attr_u32(IPVS_DEST_ATTR_ACTIVE_CONNS, 2);
        m.attr_u32(IPVS_DEST_ATTR_INACT_CONNS, 40);
        m.attr(
            IPVS_DEST_ATTR_ADDR_FAMILY,
            &(libc::AF_INET as u16).to_ne_bytes(),
        );
        let s32 = m.nest(IPVS_DEST_ATTR_STATS);
        m.attr_u32(IPVS_STATS_ATTR_CONNS, 7); // stale 32-bit form: not used
        m.end(s32);
        let s64 = m.nest(IPVS_DEST_ATTR_STATS64);
        m.attr(IPVS_STATS_ATTR_CONNS, &42u64.to_ne_bytes());
        m.attr(IPVS_STATS_ATTR_INPKTS, &300u64.to_ne_bytes());
        m.attr(IPVS_STATS_ATTR_OUTPKTS, &280u64.to_ne_bytes());
        m.attr(IPVS_STATS_ATTR_INBYTES, &20_000u64.to_ne_bytes());
        m.attr(IPVS_STATS_ATTR_OUTBYTES, &400_000u64.to_ne_bytes());
        m.end(s64);
        m.end(dest);
        let got = parse_dest_reply(m.body()).unwrap();
        assert_eq!(got.address, Some("10.80.3.1".parse().unwrap()));
        assert_eq!((got.port, got.weight), (8080, 1));
        assert_eq!((got.active, got.inactive), (2, 40));
        assert_eq!(got.connections, 42, "the 64-bit counters win");
        assert_eq!((got.packets_in, got.packets_out), (300, 280));
        assert_eq!((got.bytes_in, got.bytes_out), (20_000, 400_000));
        assert_eq!(parse_dest_reply(&[]), None);
    }
}
