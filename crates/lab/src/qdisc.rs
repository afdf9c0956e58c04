//! The link rate: a tbf (token bucket filter) root qdisc on every sending
//! end, set and read back over rtnetlink (tc-tbf(8), linux/pkt_sched.h).
//!
//! Parameters (see [`tbf_for`]):
//! - **burst** (bucket size) = the larger of 1 ms of traffic at the rate and
//!   128 KiB. 128 KiB holds a 64 KiB TSO/GSO super-packet with the headers of
//!   each of its segments twice over, so offloaded packets pass whole (tbf
//!   would otherwise segment them in software and blur an offloads on/off
//!   comparison); 1 ms keeps the timer from capping high rates. A full bucket
//!   lets through at most one burst above the rate at the start of a flow
//!   (at 100 Mbit/s: 128 KiB on 25 MB in 2 s, 0.5%).
//! - **limit** (queue) = burst + 20 ms at the rate: like a switch port's
//!   buffer, enough for TCP to keep the link busy, small enough that a queue
//!   standing behind a stream does not hide request/response latency.
//! - linklayer ethernet, so the kernel needs no rate table.

use crate::netlink::{attrs, text, u32_at, Message, Netlink, NlError, F_CREATE, F_REPLACE};

const RTM_NEWQDISC: u16 = 36;
const RTM_DELQDISC: u16 = 37;
const RTM_GETQDISC: u16 = 38;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_BURST: u16 = 6;
/// The parent of a root qdisc.
pub const TC_H_ROOT: u32 = 0xffff_ffff;
/// Handle `1:` for the lab's root qdisc.
const HANDLE: u32 = 0x0001_0000;
const TC_LINKLAYER_ETHERNET: u8 = 1;
/// Scheduler ticks are 64 ns (`PSCHED_SHIFT`).
const PSCHED_SHIFT: u32 = 6;
const MIN_BURST_BYTES: u64 = 128 * 1024;
const QUEUE_LATENCY_NS: u64 = 20_000_000;

/// A tbf's parameters: rate, bucket and queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tbf {
    pub rate_bps: u64,
    pub burst_bytes: u64,
    pub limit_bytes: u64,
}

/// The tbf for a link of `rate_bps` and `mtu` (the module doc says why).
pub fn tbf_for(rate_bps: u64, mtu: u32) -> Tbf {
    let bytes_per_s = rate_bps / 8;
    let burst = (bytes_per_s / 1000)
        .max(MIN_BURST_BYTES)
        .max(2 * (u64::from(mtu) + 14));
    let queue =
        u64::try_from(u128::from(bytes_per_s) * u128::from(QUEUE_LATENCY_NS) / 1_000_000_000)
            .unwrap_or(u64::MAX);
    Tbf {
        rate_bps,
        burst_bytes: burst.min(u64::from(u32::MAX)),
        limit_bytes: burst.saturating_add(queue).min(u64::from(u32::MAX)),
    }
}

/// A `struct tcmsg` for the root of link `index`.
fn tcmsg(index: u32, handle: u32) -> [u8; 20] {
    tcmsg_at(index, handle, TC_H_ROOT)
}

/// A `struct tcmsg` for qdisc `handle` under `parent` on link `index`.
fn tcmsg_at(index: u32, handle: u32, parent: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[4..8].copy_from_slice(&index.to_ne_bytes());
    b[8..12].copy_from_slice(&handle.to_ne_bytes());
    b[12..16].copy_from_slice(&parent.to_ne_bytes());
    b
}

/// `struct tc_tbf_qopt`: rate and peak rate (`struct tc_ratespec`, 12 bytes
/// each), limit, buffer (ticks), mtu (ticks, only for a peak rate).
fn tbf_qopt(tbf: &Tbf) -> [u8; 36] {
    let bytes_per_s = tbf.rate_bps / 8;
    let mut b = [0u8; 36];
    b[1] = TC_LINKLAYER_ETHERNET;
    let rate32 = u32::try_from(bytes_per_s).unwrap_or(u32::MAX);
    b[8..12].copy_from_slice(&rate32.to_ne_bytes());
    b[24..28].copy_from_slice(&(tbf.limit_bytes as u32).to_ne_bytes());
    let burst_ns = u128::from(tbf.burst_bytes) * 1_000_000_000 / u128::from(bytes_per_s.max(1));
    let ticks = u32::try_from(burst_ns >> PSCHED_SHIFT).unwrap_or(u32::MAX);
    b[28..32].copy_from_slice(&ticks.to_ne_bytes());
    b
}

/// Puts `kind` as link `index`'s root qdisc (replacing the lab's earlier one)
/// with the options `options` writes inside `TCA_OPTIONS`.
pub fn replace_root(
    nl: &mut Netlink,
    index: u32,
    kind: &str,
    options: impl FnOnce(&mut Message),
) -> Result<(), NlError> {
    replace(nl, index, (HANDLE, TC_H_ROOT), kind, options)
}

/// Puts `kind` with `handle` under `parent` (a class `X:1`, or
/// [`TC_H_ROOT`]) on link `index`, changing it in place when it is there.
pub fn replace(
    nl: &mut Netlink,
    index: u32,
    (handle, parent): (u32, u32),
    kind: &str,
    options: impl FnOnce(&mut Message),
) -> Result<(), NlError> {
    let mut msg = Message::new(
        RTM_NEWQDISC,
        F_CREATE | F_REPLACE,
        &tcmsg_at(index, handle, parent),
    );
    msg.attr_str(TCA_KIND, kind);
    let nest = msg.nest(TCA_OPTIONS);
    options(&mut msg);
    msg.end(nest);
    nl.request(msg)
}

/// Shapes link `index` with `tbf` as its root.
pub fn replace_tbf(nl: &mut Netlink, index: u32, tbf: &Tbf) -> Result<(), NlError> {
    replace_tbf_at(nl, index, (HANDLE, TC_H_ROOT), tbf)
}

/// Shapes link `index` with `tbf`, as qdisc `handle` under `parent`.
pub fn replace_tbf_at(
    nl: &mut Netlink,
    index: u32,
    at: (u32, u32),
    tbf: &Tbf,
) -> Result<(), NlError> {
    replace(nl, index, at, "tbf", |msg| {
        msg.attr(TCA_TBF_PARMS, &tbf_qopt(tbf));
        let bytes_per_s = tbf.rate_bps / 8;
        if bytes_per_s > u64::from(u32::MAX) {
            msg.attr(TCA_TBF_RATE64, &bytes_per_s.to_ne_bytes());
        }
        msg.attr_u32(TCA_TBF_BURST, tbf.burst_bytes as u32);
    })
}

/// Removes link `index`'s root qdisc, back to the device default; `Ok` when
/// there was none to remove.
pub fn delete_root(nl: &mut Netlink, index: u32) -> Result<(), NlError> {
    match nl.request(Message::new(RTM_DELQDISC, 0, &tcmsg(index, 0))) {
        Err(e) if matches!(e.errno(), Some(libc::ENOENT) | Some(libc::EINVAL)) => Ok(()),
        other => other,
    }
}

/// A root qdisc read back from the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootQdisc {
    /// `tbf`, `noqueue`, `htb`…
    pub kind: String,
    /// The tbf's parameters, when it is one.
    pub tbf: Option<Tbf>,
}

/// One qdisc of a link as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QdiscEntry {
    pub handle: u32,
    pub parent: u32,
    pub kind: String,
    /// The `TCA_OPTIONS` payload.
    pub options: Vec<u8>,
}

/// Every qdisc of link `index`.
pub fn qdiscs(nl: &mut Netlink, index: u32) -> Result<Vec<QdiscEntry>, NlError> {
    let replies = nl.dump(Message::new(RTM_GETQDISC, 0, &[0u8; 20]))?;
    Ok(replies
        .iter()
        .filter(|p| u32_at(p, 4) == index)
        .map(|p| {
            let mut out = QdiscEntry {
                handle: u32_at(p, 8),
                parent: u32_at(p, 12),
                kind: String::new(),
                options: Vec::new(),
            };
            for (kind, data) in attrs(p.get(20..).unwrap_or_default()) {
                match kind {
                    TCA_KIND => out.kind = text(data),
                    TCA_OPTIONS => out.options = data.to_vec(),
                    _ => {}
                }
            }
            out
        })
        .collect())
}

/// Link `index`'s root qdisc, if the kernel reports one.
pub fn root(nl: &mut Netlink, index: u32) -> Result<Option<RootQdisc>, NlError> {
    let replies = nl.dump(Message::new(RTM_GETQDISC, 0, &[0u8; 20]))?;
    let root = replies
        .iter()
        .find(|p| u32_at(p, 4) == index && u32_at(p, 12) == TC_H_ROOT);
    Ok(root.map(|p| parse_root(p)))
}

fn parse_root(payload: &[u8]) -> RootQdisc {
    let mut out = RootQdisc {
        kind: String::new(),
        tbf: None,
    };
    let mut options: &[u8] = &[];
    for (kind, data) in attrs(payload.get(20..).unwrap_or_default()) {
        match kind {
            TCA_KIND => out.kind = text(data),
            TCA_OPTIONS => options = data,
            _ => {}
        }
    }
    if out.kind == "tbf" {
        out.tbf = parse_tbf(options);
    }
    out
}

/// A tbf's parameters from its `TCA_OPTIONS`.
pub fn parse_tbf(options: &[u8]) -> Option<Tbf> {
    let parms = attrs(options).find(|(k, _)| *k == TCA_TBF_PARMS)?.1;
    let rate64 = attrs(options)
        .find(|(k, _)| *k == TCA_TBF_RATE64)
        .and_then(|(_, d)| Some(u64::from_ne_bytes(d.get(..8)?.try_into().ok()?)));
    let bytes_per_s = rate64.unwrap_or_else(|| u64::from(u32_at(parms, 8)));
    let buffer_ns = u128::from(u32_at(parms, 28)) << PSCHED_SHIFT;
    let burst = buffer_ns * u128::from(bytes_per_s) / 1_000_000_000;
    Some(Tbf {
        rate_bps: bytes_per_s * 8,
        burst_bytes: u64::try_from(burst).unwrap_or(u64::MAX),
        limit_bytes: u64::from(u32_at(parms, 24)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_and_limit_follow_the_documented_rule() {
        let slow = tbf_for(100_000_000, 1500);
        assert_eq!(slow.burst_bytes, 128 * 1024);
        assert_eq!(slow.limit_bytes, 128 * 1024 + 250_000);
        let fast = tbf_for(25_000_000_000, 9000);
        assert_eq!(fast.burst_bytes, 3_125_000);
        let jumbo = tbf_for(1_000_000, 65_535);
        assert_eq!(jumbo.burst_bytes, 2 * (65_535 + 14));
        assert_eq!(tbf_for(1_000_000_000_000, 1500).limit_bytes, 2_625_000_000);
    }

    #[test]
    fn options_read_back_as_written() {
        for tbf in [tbf_for(100_000_000, 1500), tbf_for(40_000_000_000, 9000)] {
            let mut msg = Message::new(0, 0, &[]);
            msg.attr(TCA_TBF_PARMS, &tbf_qopt(&tbf));
            if tbf.rate_bps / 8 > u64::from(u32::MAX) {
                msg.attr(TCA_TBF_RATE64, &(tbf.rate_bps / 8).to_ne_bytes());
            }
            let bytes = msg.body().to_vec();
            let back = parse_tbf(&bytes).unwrap();
            assert_eq!(back.rate_bps, tbf.rate_bps);
            assert_eq!(back.limit_bytes, tbf.limit_bytes);
            assert!(
                back.burst_bytes.abs_diff(tbf.burst_bytes) * 1000 < tbf.burst_bytes,
                "{back:?} {tbf:?}"
            );
        }
    }
}
