//! Lab-file text → [`Lab`]. The file is read as a spanned TOML tree (as study
//! files are, crates/model/src/study/parse.rs) so that every error points at
//! the key or value it is about, `file:line:column: what is wrong; the fix`.
//! Strict: unknown keys, wrong types and impossible topologies are refused
//! here, before anything touches the kernel. Checks across entries (a host on
//! two links, subnets that cannot reach each other) live in the `check` module.

use std::borrow::Cow;
use std::net::IpAddr;

use stackbench_model::settings::SettingValue;
use stackbench_model::units::{
    format_cpu_list, parse_bit_rate, parse_cpu_list, parse_duration, parse_pct,
};
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::check;
use crate::error::{LabError, Result};
use crate::lb::{Distributor, Forwarding, Scheduler};
use crate::source::{Source, Spans};
use crate::spec::{
    IpNet, IpsecAlgorithm, IpsecMode, Lab, Link, LinkQdisc, Offloads, MAX_HOST_NAME, MAX_LAB_NAME,
    MAX_LINKS, MTU_RANGE,
};

const LAB_KEYS: &str = "name, description, [[host]], [[router]], [[link]], [[distributor]]";
const HOST_KEYS: &str = "name, cpus, address, macvlan, macvlan_mode";
const ROUTER_KEYS: &str = "name";
const LINK_KEYS: &str = "a, b, rate, mtu, offloads, via, priority_classes, delay, jitter, loss, qdisc, fq_maxrate, ipsec, ipsec_mode";
use crate::path::RATE_RANGE_BPS;

pub(crate) type Value<'i> = Spanned<DeValue<'i>>;
type Key<'i> = Spanned<Cow<'i, str>>;

fn string(src: &Source, key: &str, v: &Value) -> Result<String> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.to_string()),
        other => Err(src.at(
            v.span().start,
            format!("{key} must be a string, not {}", other.type_str()),
        )),
    }
}

/// A table's entries in file order.
fn sorted<'a, 'i>(table: &'a DeTable<'i>) -> Vec<(&'a Key<'i>, &'a Value<'i>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

fn unknown(src: &Source, key: &Key, what: &str, keys: &str) -> LabError {
    src.at(
        key.span().start,
        format!("unknown key '{}' in {what}: use {keys}", key.get_ref()),
    )
}

/// A name of `max` characters or fewer: lowercase letters and digits (and
/// `-` where `dash` allows), starting with a letter.
fn name(src: &Source, what: &str, v: &Value, max: usize, dash: bool) -> Result<String> {
    let text = string(src, what, v)?;
    let ok_char = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || (dash && c == '-');
    let starts = text.starts_with(|c: char| c.is_ascii_lowercase());
    if text.len() > max || !starts || !text.chars().all(ok_char) {
        let dash = if dash {
            ", digits and -"
        } else {
            " and digits"
        };
        return Err(src.at(
            v.span().start,
            format!("bad {what} '{text}': use 1 to {max} lowercase letters{dash}, starting with a letter"),
        ));
    }
    Ok(text)
}

fn table_items<'a, 'i>(src: &Source, key: &str, v: &'a Value<'i>) -> Result<Vec<&'a Value<'i>>> {
    let items = v.get_ref().as_array().ok_or_else(|| {
        src.at(
            v.span().start,
            format!("write each {key} as [[{key}]], one table each"),
        )
    })?;
    for item in items {
        if item.get_ref().as_table().is_none() {
            return Err(src.at(item.span().start, format!("each [[{key}]] must be a table")));
        }
    }
    Ok(items.iter().collect())
}

/// A host's addresses: at most one per family for each link it is on
/// (`links`, counted from the file's `[[link]]` entries).
fn addresses(src: &Source, v: &Value, links: usize) -> Result<Vec<IpNet>> {
    let items: Vec<&Value> = match v.get_ref() {
        DeValue::Array(items) => items.iter().collect(),
        _ => vec![v],
    };
    let mut out: Vec<IpNet> = Vec::new();
    for item in items {
        let text = string(src, "each address", item)?;
        let at = |m: String| src.at(item.span().start, format!("address '{text}': {m}"));
        let net = IpNet::parse(&text).map_err(at)?;
        if !net.is_lab_range() {
            return Err(at("use a private or benchmark range, e.g. 10.77.1.1/24 or fd77:1::1/64 (lab traffic stays in its namespaces, but a public address would hide the real host)".into()));
        }
        if !net.subnet_in_lab_range() {
            return Err(at(format!(
                "the prefix /{} makes the subnet {} reach outside the private and benchmark \
                 ranges (a route on the link to addresses of real hosts): use a longer \
                 prefix, e.g. /24 for IPv4 or /64 for IPv6",
                net.prefix_len,
                net.network()
            )));
        }
        if net.is_reserved_in_subnet() {
            return Err(at(format!(
                "that is the subnet's own or broadcast address in {}: pick a host address",
                net.network()
            )));
        }
        let same_family = out
            .iter()
            .filter(|o| o.addr.is_ipv4() == net.addr.is_ipv4())
            .count();
        if same_family >= links.max(1) {
            return Err(at(format!(
                "a host has at most one IPv4 and one IPv6 address per link it is on (this one: {})",
                links.max(1)
            )));
        }
        out.push(net);
    }
    Ok(out)
}

/// A host's macvlan addresses (`macvlan = ["10.77.1.11/24", …]`), one
/// interface each: at most [`crate::macvlan::MAX`], checked as host
/// addresses are, and only on a host with one link (the parent).
fn macvlans(src: &Source, v: &Value, links: usize) -> Result<Vec<IpNet>> {
    if links != 1 {
        return Err(src.at(
            v.span().start,
            "macvlan: the host is on several links (or none), and its macvlans need one link end as parent: give them to a host with one link",
        ));
    }
    let items: Vec<&Value> = match v.get_ref() {
        DeValue::Array(items) => items.iter().collect(),
        _ => vec![v],
    };
    if items.len() > crate::macvlan::MAX {
        return Err(src.at(
            v.span().start,
            format!(
                "macvlan: {} addresses, at most {} (one interface each)",
                items.len(),
                crate::macvlan::MAX
            ),
        ));
    }
    let mut out = Vec::new();
    for item in items {
        // Each is checked as a host address (range, subnet, not reserved).
        out.extend(addresses(src, item, 1)?);
    }
    Ok(out)
}

fn host(src: &Source, v: &Value, links: &dyn Fn(&str) -> usize) -> Result<crate::spec::Host> {
    let mut out = crate::spec::Host {
        name: String::new(),
        cpus: None,
        addresses: Vec::new(),
        macvlans: Vec::new(),
        macvlan_mode: crate::spec::MacvlanMode::Bridge,
    };
    let table = v.get_ref().as_table().expect("checked by table_items");
    // The name first: how many addresses the host may have depends on it.
    if let Some(value) = table.get("name") {
        out.name = name(src, "host name", value, MAX_HOST_NAME, true)?;
    }
    for (key, value) in sorted(table) {
        match key.get_ref().as_ref() {
            "name" => out.name = name(src, "host name", value, MAX_HOST_NAME, true)?,
            "cpus" => {
                let text = match value.get_ref() {
                    DeValue::Integer(i) => i.as_str().to_string(),
                    _ => string(src, "cpus", value)?,
                };
                let cpus = parse_cpu_list(&text)
                    .map_err(|e| src.at(value.span().start, format!("cpus: {e}")))?;
                out.cpus = Some(cpus);
            }
            "address" => out.addresses = addresses(src, value, links(&out.name))?,
            "macvlan" => out.macvlans = macvlans(src, value, links(&out.name))?,
            "macvlan_mode" => {
                let text = string(src, "macvlan_mode", value)?;
                out.macvlan_mode = match text.as_str() {
                    "bridge" => crate::spec::MacvlanMode::Bridge,
                    "private" => crate::spec::MacvlanMode::Private,
                    _ => {
                        return Err(src.at(
                            value.span().start,
                            format!("macvlan_mode '{text}': use bridge or private"),
                        ))
                    }
                };
            }
            _ => return Err(unknown(src, key, "[[host]]", HOST_KEYS)),
        }
    }
    if out.name.is_empty() {
        return Err(src.at(
            v.span().start,
            "[[host]] without a name: add e.g. name = \"client\"",
        ));
    }
    if out.addresses.is_empty() {
        return Err(src.at(
            v.span().start,
            format!(
                "host '{}' has no address: add e.g. address = \"10.77.1.1/24\"",
                out.name
            ),
        ));
    }
    Ok(out)
}

fn router(src: &Source, v: &Value) -> Result<String> {
    let table = v.get_ref().as_table().expect("checked by table_items");
    let mut out = None;
    for (key, value) in sorted(table) {
        match key.get_ref().as_ref() {
            "name" => out = Some(name(src, "router name", value, MAX_HOST_NAME, true)?),
            _ => return Err(unknown(src, key, "[[router]]", ROUTER_KEYS)),
        }
    }
    out.ok_or_else(|| {
        src.at(
            v.span().start,
            "[[router]] without a name: add e.g. name = \"r1\"",
        )
    })
}

fn on_off(src: &Source, key: &str, v: &Value) -> Result<bool> {
    match v.get_ref() {
        DeValue::Boolean(b) => Ok(*b),
        DeValue::String(s) if s.as_ref() == "on" => Ok(true),
        DeValue::String(s) if s.as_ref() == "off" => Ok(false),
        _ => Err(src.at(
            v.span().start,
            format!("offload {key}: write \"on\" or \"off\""),
        )),
    }
}

fn offloads(src: &Source, v: &Value) -> Result<Offloads> {
    let table = v.get_ref().as_table().ok_or_else(|| {
        src.at(
            v.span().start,
            "offloads must be a table, e.g. offloads = { tso = \"off\", gso = \"on\" }",
        )
    })?;
    let mut out = Offloads::default();
    for (key, value) in sorted(table) {
        let on = on_off(src, key.get_ref(), value)?;
        if !out.set(key.get_ref(), on) {
            return Err(unknown(src, key, "offloads", &Offloads::NAMES.join(", ")));
        }
    }
    if out.tso && !out.tx_csum {
        return Err(src.at(
            v.span().start,
            "offloads: tso on needs tx_csum on (the kernel drops TSO without checksum offload): set tso = \"off\" or tx_csum = \"on\"",
        ));
    }
    Ok(out)
}

fn rate(src: &Source, v: &Value) -> Result<u64> {
    let text = string(src, "rate", v)?;
    let bps = parse_bit_rate(&text).map_err(|e| src.at(v.span().start, format!("rate: {e}")))?;
    if !RATE_RANGE_BPS.contains(&bps) {
        return Err(src.at(
            v.span().start,
            format!("rate {text}: use 1Mbit to 1000Gbit, or leave rate out for an unshaped link"),
        ));
    }
    Ok(bps)
}

fn mtu(src: &Source, v: &Value) -> Result<u32> {
    v.get_ref()
        .as_integer()
        .and_then(|i| i.as_str().parse::<u32>().ok())
        .filter(|m| MTU_RANGE.contains(m))
        .ok_or_else(|| {
            src.at(
                v.span().start,
                format!(
                    "bad mtu: use a whole number of bytes from {} to {}, e.g. mtu = 9000",
                    MTU_RANGE.start(),
                    MTU_RANGE.end()
                ),
            )
        })
}

/// A value in one of the settings' grammars (`SettingValue`), so a lab
/// file and a run's override read alike.
fn typed<T: SettingValue>(src: &Source, key: &str, v: &Value) -> Result<T> {
    let text = string(src, key, v)?;
    T::parse(&text).map_err(|e| src.at(v.span().start, format!("{key}: {e}")))
}

fn duration(src: &Source, key: &str, v: &Value) -> Result<std::time::Duration> {
    let text = string(src, key, v)?;
    parse_duration(&text).map_err(|e| src.at(v.span().start, format!("{key}: {e}")))
}

/// The keys of a link's delay, loss, fq and IPsec; `false` when `key` is none of them.
fn property(src: &Source, out: &mut Link, key: &str, value: &Value) -> Result<bool> {
    match key {
        "delay" => out.netem.delay = duration(src, key, value)?,
        "jitter" => out.netem.jitter = duration(src, key, value)?,
        "loss" => {
            let text = string(src, key, value)?;
            out.netem.loss_pct =
                parse_pct(&text).map_err(|e| src.at(value.span().start, format!("loss: {e}")))?;
        }
        "qdisc" => out.qdisc = typed::<LinkQdisc>(src, key, value)?,
        "fq_maxrate" => {
            let text = string(src, key, value)?;
            let bps = parse_bit_rate(&text)
                .map_err(|e| src.at(value.span().start, format!("fq_maxrate: {e}")))?;
            out.fq_maxrate_bps = Some(bps);
        }
        "ipsec" => out.ipsec = typed::<IpsecAlgorithm>(src, key, value)?,
        "ipsec_mode" => out.ipsec_mode = typed::<IpsecMode>(src, key, value)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn link(src: &Source, v: &Value) -> Result<Link> {
    let mut out = Link::new("", "");
    let table = v.get_ref().as_table().expect("checked by table_items");
    for (key, value) in sorted(table) {
        if property(src, &mut out, key.get_ref(), value)? {
            continue;
        }
        match key.get_ref().as_ref() {
            "a" => out.a = string(src, "a", value)?,
            "b" => out.b = string(src, "b", value)?,
            "rate" => out.rate_bps = Some(rate(src, value)?),
            "mtu" => out.mtu = mtu(src, value)?,
            "offloads" => out.offloads = offloads(src, value)?,
            "via" => out.via = Some(string(src, "via", value)?),
            "priority_classes" => {
                out.priority_classes = value.get_ref().as_bool().ok_or_else(|| {
                    src.at(value.span().start, "priority_classes: write true or false")
                })?;
            }
            _ => return Err(unknown(src, key, "[[link]]", LINK_KEYS)),
        }
    }
    if out.a.is_empty() || out.b.is_empty() {
        return Err(src.at(
            v.span().start,
            "[[link]] needs both ends: add a = \"HOST\" and b = \"HOST\"",
        ));
    }
    if out.priority_classes && out.rate_bps.is_none() {
        return Err(src.at(
            v.span().start,
            "priority_classes needs a rate to share: add e.g. rate = \"100Mbit\" to the link",
        ));
    }
    if table.contains_key("ipsec_mode") && out.ipsec == IpsecAlgorithm::Off {
        return Err(src.at(
            v.span().start,
            "ipsec_mode without ipsec: add e.g. ipsec = \"aes-gcm-128\" or drop ipsec_mode",
        ));
    }
    out.check_properties()
        .map_err(|m| src.at(v.span().start, m))?;
    Ok(out)
}

/// Reads the top-level keys into a lab (entries checked one by one).
fn entries(src: &Source, doc: &DeTable, lab: &mut Lab, spans: &mut Spans) -> Result<()> {
    let links = |host: &str| link_count(doc, host);
    for (key, value) in sorted(doc) {
        match key.get_ref().as_ref() {
            "name" => lab.name = name(src, "lab name", value, MAX_LAB_NAME, false)?,
            "description" => lab.description = string(src, "description", value)?,
            "host" => {
                for item in table_items(src, "host", value)? {
                    lab.hosts.push(host(src, item, &links)?);
                    spans.hosts.push(item.span().start);
                }
            }
            "router" => {
                for item in table_items(src, "router", value)? {
                    lab.routers.push(router(src, item)?);
                    spans.routers.push(item.span().start);
                }
            }
            "link" => {
                for item in table_items(src, "link", value)? {
                    if lab.links.len() == MAX_LINKS {
                        return Err(src.at(
                            item.span().start,
                            format!("too many links: a lab has at most {MAX_LINKS}"),
                        ));
                    }
                    lab.links.push(link(src, item)?);
                    spans.links.push(item.span().start);
                }
            }
            "distributor" => {
                for item in table_items(src, "distributor", value)? {
                    lab.distributors.push(distributor(src, item)?);
                    spans.distributors.push(item.span().start);
                }
            }
            _ => return Err(unknown(src, key, "the lab file", LAB_KEYS)),
        }
    }
    Ok(())
}

const DISTRIBUTOR_KEYS: &str = "host, address, port, targets, scheduler, forwarding, weights";

fn integer(
    src: &Source,
    key: &str,
    v: &Value,
    range: std::ops::RangeInclusive<u32>,
) -> Result<u32> {
    v.get_ref()
        .as_integer()
        .and_then(|i| i.as_str().parse::<u32>().ok())
        .filter(|n| range.contains(n))
        .ok_or_else(|| {
            src.at(
                v.span().start,
                format!(
                    "{key}: use a whole number from {} to {}",
                    range.start(),
                    range.end()
                ),
            )
        })
}

/// Parses one `[[distributor]]` table (checks against the lab: the
/// `check` module).
fn distributor(src: &Source, v: &Value) -> Result<Distributor> {
    let table = v.get_ref().as_table().expect("checked by table_items");
    let mut out = Distributor {
        host: String::new(),
        address: IpAddr::from([0, 0, 0, 0]),
        port: 0,
        targets: Vec::new(),
        scheduler: Scheduler::Wlc,
        forwarding: Forwarding::Nat,
        weights: Vec::new(),
    };
    let (mut address, mut weights_at) = (false, None);
    for (key, value) in sorted(table) {
        let at = |m: String| src.at(value.span().start, m);
        match key.get_ref().as_ref() {
            "host" => out.host = string(src, "host", value)?,
            "address" => {
                let text = string(src, "address", value)?;
                out.address = text.parse().map_err(|_| {
                    at(format!(
                        "address '{text}': write the virtual address alone, e.g. \"10.80.1.254\""
                    ))
                })?;
                address = true;
            }
            "port" => out.port = integer(src, "port", value, 1..=65_535)? as u16,
            "targets" => {
                let items = value.get_ref().as_array().ok_or_else(|| {
                    at("targets: write a list of hosts, e.g. targets = [\"t1\", \"t2\"]".into())
                })?;
                for item in items.iter() {
                    let name = string(src, "each target", item)?;
                    if name.len() > MAX_HOST_NAME || out.targets.contains(&name) {
                        return Err(src.at(
                            item.span().start,
                            format!("target '{name}' is listed twice: list each host once"),
                        ));
                    }
                    out.targets.push(name);
                }
            }
            "scheduler" => {
                out.scheduler = Scheduler::parse(&string(src, "scheduler", value)?).map_err(at)?
            }
            "forwarding" => {
                out.forwarding =
                    Forwarding::parse(&string(src, "forwarding", value)?).map_err(at)?
            }
            "weights" => {
                let items = value.get_ref().as_array().ok_or_else(|| {
                    at("weights: write one per target, e.g. weights = [1, 2]".into())
                })?;
                for item in items.iter() {
                    out.weights
                        .push(integer(src, "each weight", item, 1..=65_535)?);
                }
                weights_at = Some(value.span().start);
            }
            _ => return Err(unknown(src, key, "[[distributor]]", DISTRIBUTOR_KEYS)),
        }
    }
    let missing = |what: &str| {
        src.at(
            v.span().start,
            format!("[[distributor]] without {what}: see docs/lab.md, \"Load distribution\""),
        )
    };
    if out.host.is_empty() {
        return Err(missing("a host (host = \"dist\")"));
    }
    if !address {
        return Err(missing("a virtual address (address = one of the host's)"));
    }
    if out.port == 0 {
        return Err(missing("a port (port = 8080)"));
    }
    if out.targets.is_empty() {
        return Err(missing("targets (targets = [\"t1\", \"t2\"])"));
    }
    match weights_at {
        Some(at) if out.weights.len() != out.targets.len() => {
            return Err(src.at(
                at,
                format!(
                    "weights: {} given for {} targets: give one per target",
                    out.weights.len(),
                    out.targets.len()
                ),
            ))
        }
        Some(_) => {}
        None => out.weights = vec![1; out.targets.len()],
    }
    Ok(out)
}

/// How many `[[link]]` entries name `host` as an end (read from the raw
/// tree: the links come after the hosts in most files).
fn link_count(doc: &DeTable, host: &str) -> usize {
    let Some(items) = doc.get("link").and_then(|v| v.get_ref().as_array()) else {
        return 0;
    };
    let is_end = |t: &DeTable, key: &str| {
        t.get(key)
            .is_some_and(|v| matches!(v.get_ref(), DeValue::String(s) if s.as_ref() == host))
    };
    items
        .iter()
        .filter_map(|i| i.get_ref().as_table())
        .filter(|t| is_end(t, "a") || is_end(t, "b"))
        .count()
}

/// Parses lab-file text; `file` names it in errors.
pub fn parse_lab(text: &str, file: &str) -> Result<Lab> {
    let src = Source { file, text };
    let doc = DeTable::parse(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        src.at(offset, e.message().trim().replace('\n', " "))
    })?;
    let mut lab = Lab {
        name: String::new(),
        description: String::new(),
        hosts: Vec::new(),
        routers: Vec::new(),
        distributors: Vec::new(),
        links: Vec::new(),
    };
    let mut spans = Spans::default();
    entries(&src, doc.get_ref(), &mut lab, &mut spans)?;
    if lab.name.is_empty() {
        return Err(src.at(0, "missing key 'name': add e.g. name = \"demo\" (it prefixes every namespace and interface)"));
    }
    if lab.hosts.is_empty() {
        return Err(src.at(
            0,
            "a lab needs at least one [[host]]: add e.g. [[host]] name = \"client\"",
        ));
    }
    check::topology(&src, &lab, &spans)?;
    check::distributors(&src, &lab, &spans)?;
    Ok(lab)
}

/// Reads and parses a lab file.
pub fn read_lab(path: &std::path::Path) -> Result<Lab> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LabError::Read {
        file: file.clone(),
        source,
    })?;
    parse_lab(&text, &file)
}

/// The CPU list as the file would write it (for messages and `show`).
pub fn cpus_text(cpus: &Option<Vec<usize>>) -> String {
    cpus.as_deref()
        .map_or_else(|| "all".to_string(), format_cpu_list)
}
