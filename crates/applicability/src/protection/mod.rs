//! The crypto census, the Linux analogue of z/OS zERT's discovery: the
//! protection of every connection the window counted, from what the host
//! already shows without decrypting anything — the kernel's TLS record
//! layer through sock_diag ([`ktls`]), the TLS handshake on the wire
//! ([`capture`], [`hello`]), the IPsec SAs of the address pair (xfrm, read
//! by [`crate::observe`]) — else clear. Summed per server port, client
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
use stackbench_record::applicability::{CryptoCensus, ProtectionRow};

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
fn sa_of<'a>(sas: &'a [SaState], a: IpAddr, b: IpAddr) -> Option<&'a SaState> {
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

/// The protection of one connection as a row key, and the ClientHello's
/// offer if one was seen.
fn key_of(
    c: &Classified,
    ev: &Evidence,
    wire: &mut HashMap<(SocketAddr, SocketAddr), Vec<&Seen>>,
) -> (Key, Option<hello::Offer>) {
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
    // Clear only where the wire was read and showed this connection (or it
    // opened inside the window, so an idle one had no handshake to miss).
    let captured = matches!(ev.capture, Some(Ok(_)));
    let known = captured && (seen.is_some() || !c.conn.open_at_start);
    k.protection = match (tls, &k.ipsec) {
        (Some(t), Some(_)) => format!("{t}+ipsec"),
        (Some(t), None) => t.to_string(),
        (None, Some(_)) => "ipsec".into(),
        (None, None) if known => "clear".into(),
        (None, None) => "unknown".into(),
    };
    (k, offer)
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
    for c in classified {
        let (key, offer) = key_of(c, ev, &mut wire);
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
    rows.sort_by(|a, b| b.connections.cmp(&a.connections));
    CryptoCensus {
        capture_refused: match &ev.capture {
            Some(Err(why)) => Some(why.clone()),
            None => Some("not run".into()),
            Some(Ok(_)) => None,
        },
        frames_captured: capture.frames,
        frames_dropped: capture.dropped,
        handshakes_seen: capture.seen.iter().filter(|s| s.choice.is_some()).count() as u64,
        ipsec_sas: ev.sas.len() as u64,
        rows,
    }
}
