//! Priority classes on a link (the analogue of z/OS WLM priority queues, the
//! OSA adapter's outbound queues chosen by workload importance): with
//! `priority_classes = true` a link's root qdisc is an htb instead of a tbf,
//! built and read back over rtnetlink (tc-htb(8), linux/pkt_sched.h).
//!
//! Layout, for a link of rate R:
//! - qdisc `1:` htb, default class `1:10` (level 0: unmarked traffic, ARP,
//!   neighbour discovery and the control connection);
//! - class `1:1`, rate = ceil = R: the link;
//! - under it one class per priority level L = 0…6, class id `1:1L` (tc's hex
//!   notation; `0x0001_0010 + L`), rate R/7 (the fair share, so the rates add
//!   up to the link), ceil R (each may borrow up to the whole link), htb prio
//!   `6 − L` (htb serves prio 0 first, both within the assured rate and when
//!   borrowing): a higher level is served first, bulk takes what is left.
//!
//! Mapping: a socket with SO_PRIORITY = `1:1L` (what the run setting
//! `priority` sets for level L, `stackbench_model::settings::priority_class`)
//! has `skb->priority` equal to a leaf's class id, which htb uses directly,
//! without a filter. Any other value goes to `1:10`. Burst (buffer and
//! cbuffer) follows the tbf's rule ([`crate::qdisc::tbf_for`]); each leaf
//! keeps htb's default pfifo of the device's queue length.

use stackbench_model::settings::{priority_class, MAX_PRIORITY_LEVEL};

use crate::netlink::{attrs, u32_at, Message, Netlink, NlError, F_CREATE, F_REPLACE};
use crate::qdisc::{self, Tbf};

const RTM_NEWTCLASS: u16 = 40;
const RTM_GETTCLASS: u16 = 42;
const TCA_KIND: u16 = 1;
const TCA_OPTIONS: u16 = 2;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_HTB_PARMS: u16 = 1;
const TCA_HTB_INIT: u16 = 2;
const TCA_HTB_RATE64: u16 = 6;
const TCA_HTB_CEIL64: u16 = 7;
const HTB_VERSION: u32 = 3;
const RATE_TO_QUANTUM: u32 = 10;
/// Class `1:1`, the link.
pub const LINK_CLASS: u32 = 0x0001_0001;
/// The qdisc `1:`.
const QDISC: u32 = 0x0001_0000;
const TC_LINKLAYER_ETHERNET: u8 = 1;
const PSCHED_SHIFT: u32 = 6;
/// DRR quantum of every class: one 64 KiB GSO packet with its headers.
const QUANTUM_BYTES: u32 = 64 * 1024 + 1024;

/// One htb class read back: id and counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ClassStats {
    /// `0x0001_0016` for `1:16`.
    pub id: u32,
    pub parent: u32,
    pub rate_bps: u64,
    pub packets: u64,
    pub bytes: u64,
}

impl ClassStats {
    /// tc's notation, `1:16`.
    pub fn name(&self) -> String {
        class_name(self.id)
    }
}

/// tc's notation of class id `id` (major:minor in hex).
pub fn class_name(id: u32) -> String {
    format!("{:x}:{:x}", id >> 16, id & 0xffff)
}

/// The leaf classes' ids, levels 0…6.
pub fn leaf_ids() -> impl Iterator<Item = u32> {
    (0..=MAX_PRIORITY_LEVEL).map(priority_class)
}

fn tcmsg(index: u32, handle: u32, parent: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[4..8].copy_from_slice(&index.to_ne_bytes());
    b[8..12].copy_from_slice(&handle.to_ne_bytes());
    b[12..16].copy_from_slice(&parent.to_ne_bytes());
    b
}

/// `struct tc_ratespec` (12 bytes) for `bytes_per_s`.
fn ratespec(bytes_per_s: u64) -> [u8; 12] {
    let mut b = [0u8; 12];
    b[1] = TC_LINKLAYER_ETHERNET;
    let rate32 = u32::try_from(bytes_per_s).unwrap_or(u32::MAX);
    b[8..12].copy_from_slice(&rate32.to_ne_bytes());
    b
}

/// `burst_bytes` at `bytes_per_s` in scheduler ticks.
fn ticks(burst_bytes: u64, bytes_per_s: u64) -> u32 {
    let ns = u128::from(burst_bytes) * 1_000_000_000 / u128::from(bytes_per_s.max(1));
    u32::try_from(ns >> PSCHED_SHIFT).unwrap_or(u32::MAX)
}

/// `struct tc_htb_opt`: rate, ceil, buffer, cbuffer, quantum, level, prio.
fn htb_opt(rate_bps: u64, ceil_bps: u64, burst_bytes: u64, prio: u32) -> [u8; 44] {
    let (rate, ceil) = (rate_bps / 8, ceil_bps / 8);
    let mut b = [0u8; 44];
    b[0..12].copy_from_slice(&ratespec(rate));
    b[12..24].copy_from_slice(&ratespec(ceil));
    b[24..28].copy_from_slice(&ticks(burst_bytes, rate).to_ne_bytes());
    b[28..32].copy_from_slice(&ticks(burst_bytes, ceil).to_ne_bytes());
    b[32..36].copy_from_slice(&QUANTUM_BYTES.to_ne_bytes());
    b[40..44].copy_from_slice(&prio.to_ne_bytes());
    b
}

/// Creates or changes class `id` under `parent` on link `index`.
fn set_class(
    nl: &mut Netlink,
    index: u32,
    (id, parent): (u32, u32),
    (rate_bps, ceil_bps): (u64, u64),
    burst_bytes: u64,
    prio: u32,
) -> Result<(), NlError> {
    let mut msg = Message::new(
        RTM_NEWTCLASS,
        F_CREATE | F_REPLACE,
        &tcmsg(index, id, parent),
    );
    msg.attr_str(TCA_KIND, "htb");
    let nest = msg.nest(TCA_OPTIONS);
    msg.attr(
        TCA_HTB_PARMS,
        &htb_opt(rate_bps, ceil_bps, burst_bytes, prio),
    );
    if rate_bps / 8 > u64::from(u32::MAX) {
        msg.attr(TCA_HTB_RATE64, &(rate_bps / 8).to_ne_bytes());
    }
    if ceil_bps / 8 > u64::from(u32::MAX) {
        msg.attr(TCA_HTB_CEIL64, &(ceil_bps / 8).to_ne_bytes());
    }
    msg.end(nest);
    nl.request(msg)
}

/// Makes link `index`'s root the priority htb of the module doc for a link
/// shaped like `tbf`. An htb already there is kept and its classes set again
/// (htb cannot be changed in place; the classes can).
pub fn replace_htb(nl: &mut Netlink, index: u32, tbf: &Tbf) -> Result<(), NlError> {
    let current = qdisc::root(nl, index)?;
    if current.is_none_or(|q| q.kind != "htb") {
        qdisc::delete_root(nl, index)?;
        qdisc::replace_root(nl, index, "htb", |msg| {
            let mut glob = [0u8; 20];
            glob[0..4].copy_from_slice(&HTB_VERSION.to_ne_bytes());
            glob[4..8].copy_from_slice(&RATE_TO_QUANTUM.to_ne_bytes());
            glob[8..12].copy_from_slice(&(priority_class(0) & 0xffff).to_ne_bytes());
            msg.attr(TCA_HTB_INIT, &glob);
        })?;
    }
    let (rate, burst) = (tbf.rate_bps, tbf.burst_bytes);
    set_class(nl, index, (LINK_CLASS, QDISC), (rate, rate), burst, 0)?;
    let share = (rate / u64::from(MAX_PRIORITY_LEVEL + 1)).max(8);
    for level in 0..=MAX_PRIORITY_LEVEL {
        let prio = u32::from(MAX_PRIORITY_LEVEL - level);
        let ids = (priority_class(level), LINK_CLASS);
        set_class(nl, index, ids, (share, rate), burst, prio)?;
    }
    Ok(())
}

/// Link `index`'s htb classes with their counters (empty without an htb).
pub fn classes(nl: &mut Netlink, index: u32) -> Result<Vec<ClassStats>, NlError> {
    let replies = nl.dump(Message::new(RTM_GETTCLASS, 0, &tcmsg(index, 0, 0)))?;
    let mut out: Vec<ClassStats> = replies
        .iter()
        .filter(|p| u32_at(p, 4) == index)
        .filter_map(|p| parse_class(p))
        .collect();
    out.sort_by_key(|c| c.id);
    Ok(out)
}

fn parse_class(payload: &[u8]) -> Option<ClassStats> {
    let mut out = ClassStats {
        id: u32_at(payload, 8),
        parent: u32_at(payload, 12),
        rate_bps: 0,
        packets: 0,
        bytes: 0,
    };
    let mut htb = false;
    for (kind, data) in attrs(payload.get(20..)?) {
        match kind {
            TCA_KIND => htb = crate::netlink::text(data) == "htb",
            TCA_OPTIONS => {
                let parms = attrs(data).find(|(k, _)| *k == TCA_HTB_PARMS);
                let rate64 = attrs(data)
                    .find(|(k, _)| *k == TCA_HTB_RATE64)
                    .and_then(|(_, d)| Some(u64::from_ne_bytes(d.get(..8)?.try_into().ok()?)));
                let rate = rate64.or_else(|| parms.map(|(_, p)| u64::from(u32_at(p, 8))));
                out.rate_bps = rate.unwrap_or(0) * 8;
            }
            TCA_STATS2 => {
                if let Some((_, basic)) = attrs(data).find(|(k, _)| *k == TCA_STATS_BASIC) {
                    out.bytes = basic
                        .get(..8)
                        .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")));
                    out.packets = u64::from(u32_at(basic, 8));
                }
            }
            _ => {}
        }
    }
    htb.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_ids_read_as_tc_writes_them() {
        assert_eq!(class_name(priority_class(6)), "1:16");
        assert_eq!(class_name(LINK_CLASS), "1:1");
        assert_eq!(leaf_ids().count(), 7);
    }

    #[test]
    fn class_options_carry_rate_ceil_and_prio() {
        let o = htb_opt(100_000_000 / 7, 100_000_000, 128 * 1024, 6);
        assert_eq!(u32_at(&o, 8), 100_000_000 / 7 / 8);
        assert_eq!(u32_at(&o, 20), 12_500_000);
        assert_eq!(o[1], TC_LINKLAYER_ETHERNET);
        assert_eq!(u32_at(&o, 40), 6);
        // 128 KiB at 12.5 MB/s: 10.49 ms = 163 840 ticks of 64 ns.
        assert_eq!(u32_at(&o, 28), 163_840);
    }
}
