//! The crypto census, the Linux analogue of z/OS zERT's discovery: the
//! protection of every connection the window counted, from what the host
//! already shows without decrypting anything — the kernel's TLS record
//! layer through sock_diag ([`ktls`]), the TLS handshake on the wire
//! ([`capture`], [`hello`]), the IPsec SAs of the address pair (xfrm, read
//! by [`crate::observe`]) — else clear where the client's first bytes
//! were read and are not TLS, and unknown (with why) otherwise. Summed per server port, client
//! subnet and protection like zERT's interval summary records (SMF 119
//! subtype 12: one per server port and client address per interval).
//! Pure but for [`capture`]'s socket.

pub mod capture;
pub mod hello;
pub mod ktls;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};

use stackbench_lab::xfrm::SaState;
use stackbench_lab::IpNet;
use stackbench_record::applicability::{CryptoCensus, PortReset, ProtectionRow};

use crate::classify::{canonical, group_of, Classified};
use capture::{Capture, Seen};
use hello::{group_name, suite_name};
use ktls::version_name;

/// What the census had to go on besides the connections.
#[derive(Debug, Clone, Default)]
pub struct Evidence {
    /// The wire capture, or why it was refused.
    pub capture: Option<Result<Capture, String>>,
    pub sas: Vec<SaState>,
    pub listeners: HashSet<u16>,
    /// The `--subnet` prefixes (client subnets are grouped by them).
    pub subnets: Vec<IpNet>,
    /// Suites (IANA codes) whose connections are to be reset.
    pub disallowed: Vec<u16>,
}

/// A connection's (client, server) ends: the end whose local port is a
/// listener here is the server.
fn ends(c: &Classified, listeners: &HashSet<u16>) -> (SocketAddr, SocketAddr) {
    let canon = |a: SocketAddr| SocketAddr::new(canonical(a.ip()), a.port());
    let (l, r) = (canon(c.conn.local), canon(c.conn.remote));
    if listeners.contains(&l.port()) && !listeners.contains(&r.port()) {
        (r, l)
    } else {
        (l, r)
    }
}

/// The SA protecting the pair, either direction.
fn sa_of(sas: &[SaState], a: IpAddr, b: IpAddr) -> Option<&SaState> {
    sas.iter().find(|s| {
        let (src, dst) = (canonical(s.src), canonical(s.dst));
        (src, dst) == (a, b) || (src, dst) == (b, a)
    })
}

/// The wire's sightings by (client, server), each list in capture order.
fn by_ends(capture: &Capture) -> HashMap<(SocketAddr, SocketAddr), Vec<&Seen>> {
    let mut out: HashMap<_, Vec<&Seen>> = HashMap::new();
    for s in &capture.seen {
        let canon = |a: SocketAddr| SocketAddr::new(canonical(a.ip()), a.port());
        out.entry((canon(s.client), canon(s.server)))
            .or_default()
            .push(s);
    }
    out
}

/// The row key and the details one connection adds to its row.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    server_port: u16,
    client_subnet: String,
    protection: String,
    tls_version: Option<String>,
    tls_cipher: Option<String>,
    tls_cipher_code: Option<String>,
    tls_group: Option<String>,
    ktls_offload: Option<String>,
    ipsec: Option<String>,
}

#[derive(Default)]
struct Sum {
    connections: u64,
    bytes: u64,
    versions: BTreeSet<String>,
    suites: BTreeSet<String>,
    groups: BTreeSet<String>,
}

/// The protection of one connection as a row key, the ClientHello's offer
/// if one was seen, and why it reads `unknown` when it does.
fn key_of(
    c: &Classified,
    ev: &Evidence,
    wire: &mut HashMap<(SocketAddr, SocketAddr), Vec<&Seen>>,
) -> (Key, Option<hello::Offer>, Option<&'static str>) {
    let (client, server) = ends(c, &ev.listeners);
    let mut k = Key {
        server_port: server.port(),
        client_subnet: group_of(client.ip(), &ev.subnets),
        protection: String::new(),
        tls_version: None,
        tls_cipher: None,
        tls_cipher_code: None,
        tls_group: None,
        ktls_offload: None,
        ipsec: sa_of(&ev.sas, client.ip(), server.ip())
            .map(|s| format!("{} {} {}", s.protocol, s.mode, s.algorithm)),
    };
    // The next sighting of these ends (a reused 4-tuple's connections come
    // in the same order on the wire as in the window), either orientation
    // for one seen only mid-stream.
    let mut seen = None;
    for key in [(client, server), (server, client)] {
        if let Some(list) = wire.get_mut(&key) {
            if !list.is_empty() {
                seen = Some(list.remove(0));
                break;
            }
        }
    }
    let mut offer = None;
    let tls = if let Some(kt) = &c.conn.ktls {
        k.tls_version = Some(kt.version.clone());
        k.tls_cipher = Some(kt.cipher.clone());
        k.ktls_offload = Some(format!("tx {}, rx {}", kt.tx, kt.rx));
        k.tls_cipher_code = ktls::tls13_suite(kt).map(|c| format!("{c:04X}"));
        Some("ktls")
    } else if let Some(ch) = seen.and_then(|s| s.choice.as_ref()) {
        k.tls_version = Some(version_name(ch.version));
        k.tls_cipher = Some(suite_name(ch.suite));
        k.tls_cipher_code = Some(format!("{:04X}", ch.suite));
        k.tls_group = ch.group.map(group_name);
        offer = seen.and_then(|s| s.offer.clone());
        Some("tls")
    } else if seen.is_some_and(|s| s.tls_records || s.offer.is_some()) {
        offer = seen.and_then(|s| s.offer.clone());
        Some("tls-records")
    } else {
        None
    };
    // Clear only on evidence: the client's first bytes, read from the
    // start of its stream, are not TLS. Every other silence is unknown.
    let unknown = match (&ev.capture, seen) {
        (Some(Ok(_)), Some(s)) if s.not_tls => None,
        (Some(Ok(_)), Some(s)) => Some(s.unread.map_or("not seen", capture::Unread::name)),
        (Some(Ok(_)), None) => Some("not seen"),
        _ => Some("no capture"),
    };
    k.protection = match (tls, &k.ipsec) {
        (Some(t), Some(_)) => format!("{t}+ipsec"),
        (Some(t), None) => t.to_string(),
        (None, Some(_)) => "ipsec".into(),
        (None, None) if unknown.is_none() => "clear".into(),
        (None, None) => "unknown".into(),
    };
    let unknown = unknown.filter(|_| k.protection == "unknown");
    (k, offer, unknown)
}

/// The census of the classified connections.
pub fn census(classified: &[Classified], ev: &Evidence) -> CryptoCensus {
    let empty = Capture::default();
    let capture = match &ev.capture {
        Some(Ok(c)) => c,
        _ => &empty,
    };
    let mut wire = by_ends(capture);
    let mut rows: BTreeMap<Key, Sum> = BTreeMap::new();
    let mut unknown_reasons: BTreeMap<String, u64> = BTreeMap::new();
    for c in classified {
        let (key, offer, unknown) = key_of(c, ev, &mut wire);
        if let Some(why) = unknown {
            *unknown_reasons.entry(why.into()).or_default() += 1;
        }
        let sum = rows.entry(key).or_default();
        sum.connections += 1;
        sum.bytes += c.conn.window().bytes();
        if let Some(o) = offer {
            sum.versions
                .extend(o.versions.iter().map(|&v| version_name(v)));
            sum.suites
                .extend(o.suites.iter().map(|s| format!("{s:04X}")));
            sum.groups.extend(o.groups.iter().map(|&g| group_name(g)));
        }
    }
    let mut rows: Vec<ProtectionRow> = rows
        .into_iter()
        .map(|(k, s)| ProtectionRow {
            server_port: k.server_port,
            client_subnet: k.client_subnet,
            protection: k.protection,
            tls_version: k.tls_version,
            tls_cipher: k.tls_cipher,
            tls_cipher_code: k.tls_cipher_code,
            tls_group: k.tls_group,
            ktls_offload: k.ktls_offload,
            offered_versions: s.versions.into_iter().collect(),
            offered_suites: s.suites.into_iter().collect(),
            offered_groups: s.groups.into_iter().collect(),
            ipsec: k.ipsec,
            connections: s.connections,
            bytes: s.bytes,
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.connections));
    let resets = resets(&rows, &ev.disallowed);
    CryptoCensus {
        capture_refused: match &ev.capture {
            Some(Err(why)) => Some(why.clone()),
            None => Some("not run".into()),
            Some(Ok(_)) => None,
        },
        frames_captured: capture.frames,
        frames_dropped: capture.dropped,
        connections_untracked: capture.untracked,
        handshakes_seen: capture.seen.iter().filter(|s| s.choice.is_some()).count() as u64,
        unknown_reasons,
        ipsec_sas: ev.sas.len() as u64,
        rows,
        disallowed_suites: ev.disallowed.iter().map(|c| format!("{c:04X}")).collect(),
        resets,
    }
}

/// The ports to reset: each server port where a row chose a disallowed
/// suite, with what else connects to it.
fn resets(rows: &[ProtectionRow], disallowed: &[u16]) -> Vec<PortReset> {
    let bad = |r: &ProtectionRow| {
        r.tls_cipher_code
            .as_deref()
            .and_then(|c| u16::from_str_radix(c, 16).ok())
            .is_some_and(|c| disallowed.contains(&c))
    };
    let mut ports: BTreeMap<u16, PortReset> = BTreeMap::new();
    for r in rows.iter().filter(|r| bad(r)) {
        let p = ports.entry(r.server_port).or_insert_with(|| PortReset {
            server_port: r.server_port,
            setting: format!("host_policy_reset_port={}", r.server_port),
            ..PortReset::default()
        });
        p.disallowed_connections += r.connections;
    }
    for r in rows.iter().filter(|r| !bad(r)) {
        if let Some(p) = ports.get_mut(&r.server_port) {
            p.other_connections += r.connections;
        }
    }
    ports.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::{classify, HostFacts, Selection};
    use crate::sample::Counters;
    use crate::sizes::SizeTally;
    use crate::track::Conn;
    use hello::{Choice, Offer};
    use ktls::KtlsInfo;
    use netlink_packet_core::NetlinkBuffer;
    use stackbench_record::applicability::Thresholds;
    use std::time::Duration;

    fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(4 + value.len() as u16).to_ne_bytes());
        b.extend_from_slice(&kind.to_ne_bytes());
        b.extend_from_slice(value);
        b.resize(b.len().next_multiple_of(4), 0);
        b
    }

    /// One `XFRM_MSG_NEWSA` message of an SA dump as the kernel's
    /// `dump_one_state` (net/xfrm/xfrm_user.c) writes it: the netlink
    /// header, `struct xfrm_usersa_info` (224 bytes on 64-bit Linux), then
    /// `copy_to_user_state_extra`'s attributes in its order — here
    /// `XFRMA_ALG_AEAD` (`struct xfrm_algo_aead`: name, key bits, ICV bits,
    /// key), `XFRMA_LASTUSED` (u64) and `XFRMA_REPLAY_VAL` (`struct
    /// xfrm_replay_state`, 12 bytes). This machine's kernel has no ESP, so
    /// the bytes follow the kernel's source instead of a capture.
    fn newsa_message() -> Vec<u8> {
        let mut info = [0u8; 224];
        info[56..60].copy_from_slice(&[10, 77, 2, 2]); // id.daddr
        info[72..76].copy_from_slice(&0x0000_1234u32.to_be_bytes()); // id.spi
        info[76] = 50; // id.proto: ESP
        info[80..84].copy_from_slice(&[10, 77, 2, 1]); // saddr
        info[160..168].copy_from_slice(&5000u64.to_ne_bytes()); // curlft.bytes
        info[212..214].copy_from_slice(&2u16.to_ne_bytes()); // family AF_INET
        info[214] = 1; // mode: tunnel
        let mut aead = vec![0u8; 64];
        aead[..17].copy_from_slice(b"rfc4106(gcm(aes))");
        aead.extend_from_slice(&160u32.to_ne_bytes());
        aead.extend_from_slice(&128u32.to_ne_bytes());
        aead.extend_from_slice(&[7; 20]);
        let mut payload = info.to_vec();
        payload.extend(nla(18, &aead));
        payload.extend(nla(15, &0u64.to_ne_bytes()));
        payload.extend(nla(10, &[0; 12]));
        let mut msg = Vec::new();
        msg.extend_from_slice(&(16 + payload.len() as u32).to_ne_bytes());
        msg.extend_from_slice(&16u16.to_ne_bytes()); // XFRM_MSG_NEWSA
        msg.extend_from_slice(&2u16.to_ne_bytes()); // NLM_F_MULTI
        msg.extend_from_slice(&[0; 8]); // seq, pid
        msg.extend(payload);
        msg
    }

    fn conn(local: &str, remote: &str, open_at_start: bool) -> Conn {
        Conn {
            cookie: 0,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            first_seen: Duration::ZERO,
            last_seen: Duration::from_millis(10),
            open_at_start,
            closed: true,
            baseline: Counters::default(),
            last: Counters {
                bytes_out: 100,
                bytes_received: 900,
                ..Counters::default()
            },
            snd_mss: 1448,
            rcv_mss: 1448,
            sent: SizeTally::default(),
            received: SizeTally::default(),
            ktls: None,
        }
    }

    fn seen(client: &str, server: &str, choice: Option<Choice>, records: bool) -> Seen {
        Seen {
            client: client.parse().unwrap(),
            server: server.parse().unwrap(),
            from_start: choice.is_some(),
            offer: choice.as_ref().map(|c| Offer {
                versions: vec![c.version],
                suites: vec![c.suite, 0xC02B],
                groups: vec![29, 23],
            }),
            not_tls: choice.is_none() && !records,
            choice,
            tls_records: records,
            unread: None,
        }
    }

    #[test]
    fn each_connection_gets_its_protection_summed_per_server_port_and_client_subnet() {
        let bytes = newsa_message();
        let msg = NetlinkBuffer::new_checked(&bytes[..]).unwrap();
        assert_eq!(msg.message_type(), 16);
        let sa = stackbench_lab::xfrm::parse_sa(msg.payload()).unwrap();
        assert_eq!(
            (
                sa.protocol.as_str(),
                sa.mode.as_str(),
                sa.algorithm.as_str()
            ),
            ("esp", "tunnel", "rfc4106(gcm(aes))")
        );
        let tls13 = Choice {
            version: 0x0304,
            suite: 0x1301,
            group: Some(29),
        };
        let mut conns = vec![
            // Two TLS 1.3 clients of port 443, one of them on a reused 4-tuple.
            conn("10.77.1.1:40000", "10.77.1.2:443", false),
            conn("10.77.1.1:40000", "10.77.1.2:443", false),
            // Open before the window, TLS records seen mid-stream.
            conn("10.77.1.1:40001", "10.77.1.2:8443", true),
            // kTLS (no handshake captured for it).
            conn("10.77.1.1:40002", "10.77.1.2:443", false),
            // Clear: its SYN was seen, no TLS.
            conn("10.77.1.1:40003", "10.77.1.2:80", false),
            // Open before the window and idle: unknown.
            conn("10.77.1.1:40004", "10.77.1.2:22", true),
            // Over the SA (server end here: port 7701 listens).
            conn("10.77.2.1:7701", "10.77.2.2:50000", false),
        ];
        conns[3].ktls = Some(KtlsInfo {
            version: "1.3".into(),
            cipher: "AES_GCM_128".into(),
            tx: "sw".into(),
            rx: "sw".into(),
        });
        let capture = Capture {
            seen: vec![
                seen(
                    "10.77.1.1:40000",
                    "10.77.1.2:443",
                    Some(tls13.clone()),
                    false,
                ),
                seen("10.77.1.1:40000", "10.77.1.2:443", Some(tls13), false),
                // Seen mid-stream with the ends guessed the other way round.
                seen("10.77.1.2:8443", "10.77.1.1:40001", None, true),
                seen("10.77.1.1:40003", "10.77.1.2:80", None, false),
            ],
            frames: 40,
            dropped: 0,
            untracked: 0,
        };
        let facts = HostFacts {
            addresses: vec![IpNet::parse("10.77.1.1/24").unwrap()],
            ipsec_pairs: vec![(sa.src, sa.dst)],
            sas: vec![sa.clone()],
        };
        let listeners = HashSet::from([7701]);
        let sel = Selection {
            subnets: vec![],
            port: None,
            thresholds: Thresholds::default(),
        };
        let classified = classify(&conns, &listeners, &facts, &sel);
        let ev = Evidence {
            capture: Some(Ok(capture)),
            sas: vec![sa],
            listeners,
            subnets: vec![],
            disallowed: vec![0x1301],
        };
        let c = census(&classified, &ev);
        assert_eq!(
            (c.handshakes_seen, c.ipsec_sas, c.frames_captured),
            (2, 1, 40)
        );
        let row = |port: u16| c.rows.iter().find(|r| r.server_port == port).unwrap();
        let tls = row(443);
        assert_eq!(
            (tls.protection.as_str(), tls.connections),
            ("tls", 2),
            "{c:?}"
        );
        assert_eq!(tls.client_subnet, "10.77.1.0/24");
        assert_eq!(tls.tls_cipher.as_deref(), Some("TLS_AES_128_GCM_SHA256"));
        assert_eq!(tls.tls_cipher_code.as_deref(), Some("1301"));
        assert_eq!(tls.tls_group.as_deref(), Some("X25519"));
        assert_eq!(tls.offered_suites, ["1301", "C02B"]);
        assert_eq!(tls.offered_groups, ["P-256", "X25519"]);
        assert_eq!(tls.bytes, 2000);
        let ktls = c.rows.iter().find(|r| r.protection == "ktls").unwrap();
        assert_eq!(ktls.server_port, 443);
        assert_eq!(ktls.tls_cipher.as_deref(), Some("AES_GCM_128"));
        assert_eq!(ktls.ktls_offload.as_deref(), Some("tx sw, rx sw"));
        assert_eq!(row(8443).protection, "tls-records");
        assert_eq!(row(80).protection, "clear");
        assert_eq!(row(22).protection, "unknown");
        let esp = row(7701);
        assert_eq!(esp.protection, "ipsec");
        assert_eq!(esp.client_subnet, "10.77.2.0/24");
        assert_eq!(esp.ipsec.as_deref(), Some("esp tunnel rfc4106(gcm(aes))"));
        assert_eq!(c.rows.len(), 6);
        // TLS_AES_128_GCM_SHA256 is disallowed: port 443 is reset, where the
        // kTLS connection (TLS 1.3, AES-GCM-128: the same suite) is too.
        assert_eq!(ktls.tls_cipher_code.as_deref(), Some("1301"));
        assert_eq!(
            c.resets,
            [PortReset {
                server_port: 443,
                disallowed_connections: 3,
                other_connections: 0,
                setting: "host_policy_reset_port=443".into(),
            }]
        );

        // Without a capture nothing reads as clear: the wire was not read.
        let ev = Evidence {
            capture: Some(Err("no AF_PACKET socket".into())),
            ..ev
        };
        let c = census(&classified, &ev);
        assert_eq!(c.capture_refused.as_deref(), Some("no AF_PACKET socket"));
        assert!(c.rows.iter().all(|r| r.protection != "clear"), "{c:?}");
        assert_eq!(
            c.rows
                .iter()
                .find(|r| r.server_port == 443 && r.protection == "unknown")
                .unwrap()
                .connections,
            2
        );
    }

    fn tcp(seq: u32, syn: bool, ack: bool) -> capture::Tcp {
        capture::Tcp {
            seq,
            syn,
            ack,
            ..capture::Tcp::default()
        }
    }

    /// The one row's protection the census gives `conn` with what `r` read.
    fn protection_of(conn: Conn, r: capture::Reassembly) -> String {
        census_of(conn, r).rows[0].protection.clone()
    }

    fn census_of(conn: Conn, r: capture::Reassembly) -> CryptoCensus {
        let conns = [conn];
        let sel = Selection {
            subnets: vec![],
            port: None,
            thresholds: Thresholds::default(),
        };
        let listeners = HashSet::new();
        let classified = classify(&conns, &listeners, &HostFacts::default(), &sel);
        let ev = Evidence {
            capture: Some(Ok(Capture {
                seen: r.finish(),
                frames: 10,
                dropped: 0,
                untracked: 0,
            })),
            listeners,
            ..Evidence::default()
        };
        let c = census(&classified, &ev);
        assert_eq!(c.rows.len(), 1, "{c:?}");
        c
    }

    fn c_s() -> (SocketAddr, SocketAddr) {
        (
            "10.77.1.1:40000".parse().unwrap(),
            "10.77.1.2:443".parse().unwrap(),
        )
    }

    /// A SYN seen twice (retransmitted after a full accept queue dropped
    /// it, or one frame on a VLAN/bond device and its lower device) is one
    /// connection, and its handshake is read.
    #[test]
    fn a_repeated_syn_keeps_a_tls_connection_tls() {
        let (client, server) = hello::tests::handshake(&hello::tests::params(
            stackbench_model::settings::TlsVersion::V13,
            0x1301,
            &["X25519"],
        ));
        let (c, s) = c_s();
        let mut r = capture::Reassembly::default();
        r.segment(c, s, &tcp(1000, true, false), &[]);
        r.segment(c, s, &tcp(1000, true, false), &[]);
        r.segment(s, c, &tcp(7000, true, true), &[]);
        r.segment(c, s, &tcp(1001, false, true), &client);
        r.segment(s, c, &tcp(7001, false, true), &server);
        let p = protection_of(conn("10.77.1.1:40000", "10.77.1.2:443", false), r);
        assert_eq!(p, "tls");
    }

    fn tls13() -> (Vec<u8>, Vec<u8>) {
        hello::tests::handshake(&hello::tests::params(
            stackbench_model::settings::TlsVersion::V13,
            0x1301,
            &["X25519"],
        ))
    }

    /// A hello whose segments arrive out of order (reordering, or a lost
    /// segment retransmitted) is read once the hole fills; one whose hole
    /// never fills is unknown (a gap), never clear.
    #[test]
    fn a_reordered_hello_is_read_and_an_unfilled_gap_is_unknown() {
        let (client, server) = tls13();
        let (c, s) = c_s();
        let mut r = capture::Reassembly::default();
        r.segment(c, s, &tcp(1000, true, false), &[]);
        r.segment(s, c, &tcp(7000, true, true), &[]);
        r.segment(c, s, &tcp(1101, false, true), &client[100..]);
        r.segment(c, s, &tcp(1001, false, true), &client[..100]);
        r.segment(s, c, &tcp(7101, false, true), &server[100..]);
        r.segment(s, c, &tcp(7001, false, true), &server[..100]);
        let p = protection_of(conn("10.77.1.1:40000", "10.77.1.2:443", false), r);
        assert_eq!(p, "tls");

        let mut r = capture::Reassembly::default();
        r.segment(c, s, &tcp(1000, true, false), &[]);
        r.segment(c, s, &tcp(1101, false, true), b"GET / HTTP/1.1\r\n\r\n");
        let c = census_of(conn("10.77.1.1:40000", "10.77.1.2:443", false), r);
        assert_eq!(c.rows[0].protection, "unknown");
        assert_eq!(c.unknown_reasons, BTreeMap::from([("gap".into(), 1)]));
    }

    /// A TLS connection open before the window is mostly seen mid-record:
    /// that is not clear text, and its records are found at the segment
    /// where a record ends and the next header is due.
    #[test]
    fn mid_record_bytes_of_an_open_connection_are_not_clear() {
        let (c, s) = c_s();
        let mut r = capture::Reassembly::default();
        // Ciphertext from the middle of a 16 kB application-data record.
        let ciphertext: Vec<u8> = (0..1448u32).map(|i| (i * 7 + 3) as u8).collect();
        r.segment(s, c, &tcp(5_000_000, false, true), &ciphertext);
        let open = || conn("10.77.1.1:40000", "10.77.1.2:443", true);
        let census = census_of(open(), r);
        assert_eq!(census.rows[0].protection, "unknown");
        assert_eq!(
            census.unknown_reasons,
            BTreeMap::from([("open before the window".into(), 1)])
        );

        // Later segments: a record header starting a 16 kB record, its
        // middle, then the next header where that record ends.
        let mut r = capture::Reassembly::default();
        r.segment(s, c, &tcp(5_000_000, false, true), &ciphertext);
        let mut head = vec![23, 3, 3, 0x40, 0x00];
        head.extend_from_slice(&ciphertext[..1443]);
        r.segment(s, c, &tcp(5_001_448, false, true), &head);
        r.segment(s, c, &tcp(5_002_896, false, true), &ciphertext);
        let next = 5_001_448u32 + 5 + 0x4000;
        r.segment(s, c, &tcp(next, false, true), &head);
        assert_eq!(protection_of(open(), r), "tls-records");
    }

    /// A connection that opened in the window but that the capture never
    /// showed (its frames dropped, an interface the parser skips) is
    /// unknown, and so is one whose client sent nothing in the window.
    #[test]
    fn a_connection_the_capture_never_showed_is_not_clear() {
        let fresh = || conn("10.77.1.1:40000", "10.77.1.2:443", false);
        let c = census_of(fresh(), capture::Reassembly::default());
        assert_eq!(c.rows[0].protection, "unknown");
        assert_eq!(c.unknown_reasons, BTreeMap::from([("not seen".into(), 1)]));

        let (cl, s) = c_s();
        let mut r = capture::Reassembly::default();
        r.segment(cl, s, &tcp(1000, true, false), &[]);
        r.segment(s, cl, &tcp(7000, true, true), &[]);
        let c = census_of(fresh(), r);
        assert_eq!(c.rows[0].protection, "unknown");
        let why = BTreeMap::from([("window ended".into(), 1)]);
        assert_eq!(c.unknown_reasons, why);
    }

    /// TCP Fast Open: the first bytes ride in the SYN. Clear text there is
    /// clear (not a gap), and a hello begun there is read with the rest.
    #[test]
    fn fast_open_data_in_the_syn_is_read() {
        let (c, s) = c_s();
        let fresh = || conn("10.77.1.1:40000", "10.77.1.2:443", false);
        let mut r = capture::Reassembly::default();
        r.segment(c, s, &tcp(1000, true, false), b"GET / HTTP/1.1\r\n\r\n");
        r.segment(s, c, &tcp(7000, true, true), &[]);
        assert_eq!(protection_of(fresh(), r), "clear");

        let (client, server) = tls13();
        let mut r = capture::Reassembly::default();
        r.segment(c, s, &tcp(1000, true, false), &client[..100]);
        r.segment(s, c, &tcp(7000, true, true), &[]);
        r.segment(c, s, &tcp(1101, false, true), &client[100..]);
        r.segment(s, c, &tcp(7001, false, true), &server);
        let census = census_of(fresh(), r);
        assert_eq!(census.rows[0].protection, "tls");
        assert_eq!(census.rows[0].offered_groups, ["X25519"]);
    }
}
