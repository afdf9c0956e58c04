//! Delay, jitter, loss (netem) and per-flow pacing (fq) on a link, built
//! and read back over rtnetlink like the tbf (tc-netem(8), tc-fq(8),
//! linux/pkt_sched.h).
//!
//! Placement: a sending end's qdiscs form one chain, root first —
//! `tbf 1:` (the link rate) → `netem 10:` (delay, jitter, loss) → `fq 20:`
//! (pacing) — each present only when the link asks for it; each one after
//! the first is the child of the one before (its class `X:1`). A packet thus
//! waits in fq for its pacing time, in netem for its delay, then for tbf's
//! tokens, as on a paced host behind a long, slow wire.
//!
//! - **Delay is one-way, on both directions.** netem sits on the sending
//!   end of each host (`a` and `b`; router ends of a routed link get the
//!   tbf and fq only), so `delay = "10ms"` is 10 ms from A to B and 10 ms
//!   back: an RR transaction's round trip gains 2 × delay (20 ms), a
//!   link's propagation delay as a cable has it.
//! - **Jitter** is uniform, ± jitter around the delay (no distribution table
//!   is loaded), at most the delay; packets may then leave out of order, as
//!   tc-netem(8) describes.
//! - **Loss** is independent per packet, in each direction.
//! - **netem's queue** holds what is in flight during the delay: the larger of
//!   1000 packets and the link rate (10 Gbit/s when unshaped) × (delay +
//!   jitter + 20 ms) in 1500-byte packets, at most 1 000 000.
//! - **fq** keeps its defaults (10 000 packets, 100 per flow) and paces each
//!   flow at the rate TCP sets; `fq_maxrate` caps every flow (fq's
//!   `maxrate`, a 32-bit count of bytes per second, hence at most 34 Gbit/s).
//!
//! With `priority_classes` the htb is the whole tree (the file check refuses
//! netem or fq beside it).

use std::time::Duration;

use serde::Serialize;

use crate::netlink::{attrs, u32_at, Message, Netlink, NlError};
use crate::qdisc::{self, QdiscEntry, Tbf, TC_H_ROOT};
use crate::spec::{Link, Netem};

const TCA_NETEM_LATENCY64: u16 = 10;
const TCA_NETEM_JITTER64: u16 = 11;
const TCA_FQ_FLOW_MAX_RATE: u16 = 7;
const PSCHED_SHIFT: u32 = 6;
/// Handles of the chain's qdiscs.
const TBF: u32 = 0x0001_0000;
const NETEM: u32 = 0x0010_0000;
const FQ: u32 = 0x0020_0000;
const MIN_LIMIT_PACKETS: u64 = 1000;
const MAX_LIMIT_PACKETS: u64 = 1_000_000;
const UNSHAPED_BPS: u64 = 10_000_000_000;

/// netem's queue for `netem` on a link of `rate_bps` (module doc).
pub fn limit_packets(netem: &Netem, rate_bps: Option<u64>) -> u32 {
    let window = netem.delay + netem.jitter + Duration::from_millis(20);
    let bytes =
        u128::from(rate_bps.unwrap_or(UNSHAPED_BPS) / 8) * window.as_nanos() / 1_000_000_000;
    let packets = u64::try_from(bytes / 1500).unwrap_or(u64::MAX);
    packets.clamp(MIN_LIMIT_PACKETS, MAX_LIMIT_PACKETS) as u32
}

/// `loss_pct` as netem's probability, a fraction of `u32::MAX`.
fn probability(loss_pct: f64) -> u32 {
    (loss_pct.clamp(0.0, 100.0) / 100.0 * f64::from(u32::MAX)).round() as u32
}

/// `struct tc_netem_qopt`: latency (ticks), limit (packets), loss
/// (probability), gap, duplicate, jitter (ticks) — six u32, 24 bytes.
pub fn netem_qopt(netem: &Netem, limit: u32) -> [u8; 24] {
    let ticks = |d: Duration| u32::try_from(d.as_nanos() >> PSCHED_SHIFT).unwrap_or(u32::MAX);
    let mut b = [0u8; 24];
    b[0..4].copy_from_slice(&ticks(netem.delay).to_ne_bytes());
    b[4..8].copy_from_slice(&limit.to_ne_bytes());
    b[8..12].copy_from_slice(&probability(netem.loss_pct).to_ne_bytes());
    b[20..24].copy_from_slice(&ticks(netem.jitter).to_ne_bytes());
    b
}

/// Writes netem's options: the struct, then the exact 64-bit times.
pub fn netem_options(msg: &mut Message, netem: &Netem, limit: u32) {
    msg.raw(&netem_qopt(netem, limit));
    let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    msg.attr(TCA_NETEM_LATENCY64, &ns(netem.delay).to_ne_bytes());
    msg.attr(TCA_NETEM_JITTER64, &ns(netem.jitter).to_ne_bytes());
}

/// netem as read back, with its queue.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NetemState {
    pub delay: Duration,
    pub jitter: Duration,
    pub loss_pct: f64,
    pub limit_packets: u32,
}

/// netem's parameters from its `TCA_OPTIONS` (the struct, then attributes).
pub fn parse_netem(options: &[u8]) -> Option<NetemState> {
    let qopt = options.get(..24)?;
    let from_ticks = |t: u32| Duration::from_nanos(u64::from(t) << PSCHED_SHIFT);
    let exact = |kind: u16| {
        attrs(&options[24..])
            .find(|(k, _)| *k == kind)
            .and_then(|(_, d)| Some(i64::from_ne_bytes(d.get(..8)?.try_into().ok()?)))
            .map(|ns| Duration::from_nanos(ns.max(0) as u64))
    };
    let loss = f64::from(u32_at(qopt, 8)) / f64::from(u32::MAX) * 100.0;
    Some(NetemState {
        delay: exact(TCA_NETEM_LATENCY64).unwrap_or(from_ticks(u32_at(qopt, 0))),
        jitter: exact(TCA_NETEM_JITTER64).unwrap_or(from_ticks(u32_at(qopt, 20))),
        loss_pct: (loss * 1e6).round() / 1e6,
        limit_packets: u32_at(qopt, 4),
    })
}

/// fq's per-flow cap from its options (`None`: unlimited).
pub fn parse_fq_maxrate(options: &[u8]) -> Option<u64> {
    let (_, d) = attrs(options).find(|(k, _)| *k == TCA_FQ_FLOW_MAX_RATE)?;
    let bytes_per_s = u32_at(d, 0);
    (bytes_per_s != u32::MAX && bytes_per_s != 0).then(|| u64::from(bytes_per_s) * 8)
}

/// fq's options: the per-flow cap, or unlimited (`~0`) to clear an old one.
fn fq_options(msg: &mut Message, maxrate_bps: Option<u64>) {
    let rate = maxrate_bps.map_or(u32::MAX, |r| u32::try_from(r / 8).unwrap_or(u32::MAX));
    msg.attr_u32(TCA_FQ_FLOW_MAX_RATE, rate);
}

/// The handle each kind has in the chain.
fn handle(kind: &str) -> u32 {
    match kind {
        "netem" => NETEM,
        "fq" => FQ,
        _ => TBF,
    }
}

/// The chain on link `index`, root first: each qdisc whose parent is the
/// class `X:1` of the one before.
pub fn chain(all: &[QdiscEntry]) -> Vec<&QdiscEntry> {
    let mut out: Vec<&QdiscEntry> = Vec::new();
    let mut parent = TC_H_ROOT;
    while let Some(q) = all.iter().find(|q| q.parent == parent) {
        out.push(q);
        if out.len() > 3 || q.handle == 0 {
            break;
        }
        parent = q.handle | 1;
    }
    out
}

/// Builds `kinds` (a chain of `tbf`, `netem`, `fq`, root first, from
/// [`Link::qdisc_chain`]) on link `index`: changed in place when the same
/// chain is there, else the old tree is removed first. Returns the kind
/// being set when the kernel refused, for the error's kernel option.
pub fn replace_chain(
    nl: &mut Netlink,
    index: u32,
    link: &Link,
    kinds: &[&'static str],
) -> Result<(), (&'static str, NlError)> {
    let have = qdisc::qdiscs(nl, index).map_err(|e| ("", e))?;
    let same = chain(&have)
        .iter()
        .map(|q| q.kind.as_str())
        .eq(kinds.iter().copied())
        && chain(&have)
            .iter()
            .zip(kinds)
            .all(|(q, k)| q.handle == handle(k));
    if !same {
        qdisc::delete_root(nl, index).map_err(|e| ("", e))?;
    }
    let mut parent = TC_H_ROOT;
    for &kind in kinds {
        let at = (handle(kind), parent);
        let done = match kind {
            "tbf" => {
                let tbf: Tbf = link.tbf(UNSHAPED_BPS);
                qdisc::replace_tbf_at(nl, index, at, &tbf)
            }
            "netem" => {
                let limit = link
                    .txqueuelen
                    .unwrap_or_else(|| limit_packets(&link.netem, link.rate_bps));
                qdisc::replace(nl, index, at, "netem", |m| {
                    netem_options(m, &link.netem, limit)
                })
            }
            _ => qdisc::replace(nl, index, at, "fq", |m| fq_options(m, link.fq_maxrate_bps)),
        };
        done.map_err(|e| (kind, e))?;
        parent = handle(kind) | 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn netem(delay_ms: u64, jitter_ms: u64, loss_pct: f64) -> Netem {
        Netem {
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::from_millis(jitter_ms),
            loss_pct,
        }
    }

    #[test]
    fn netem_qopt_has_the_kernels_layout() {
        let n = netem(10, 1, 0.1);
        let b = netem_qopt(&n, 1000);
        assert_eq!(b.len(), 24, "sizeof(struct tc_netem_qopt)");
        // 10 ms = 10 000 000 ns = 156 250 ticks of 64 ns.
        assert_eq!(u32_at(&b, 0), 156_250);
        assert_eq!(u32_at(&b, 4), 1000);
        assert_eq!(u32_at(&b, 8), 4_294_967);
        assert_eq!(u32_at(&b, 12), 0, "gap");
        assert_eq!(u32_at(&b, 16), 0, "duplicate");
        assert_eq!(u32_at(&b, 20), 15_625);
    }

    #[test]
    fn netem_options_read_back_as_written() {
        let n = netem(10, 1, 0.1);
        let mut msg = Message::new(0, 0, &[]);
        netem_options(&mut msg, &n, 4321);
        let back = parse_netem(msg.body()).unwrap();
        assert_eq!(back.delay, n.delay);
        assert_eq!(back.jitter, n.jitter);
        assert!((back.loss_pct - 0.1).abs() < 1e-6, "{back:?}");
        assert_eq!(back.limit_packets, 4321);
        // Without the 64-bit attributes the ticks give the times.
        let short = parse_netem(&netem_qopt(&netem(7, 0, 0.0), 5)).unwrap();
        assert_eq!(short.delay, Duration::from_millis(7));
    }

    #[test]
    fn queue_holds_the_delay_at_the_rate() {
        assert_eq!(limit_packets(&netem(0, 0, 1.0), Some(1_000_000)), 1000);
        // 10 Gbit/s × 30 ms = 37.5 MB = 25 000 packets.
        assert_eq!(limit_packets(&netem(10, 0, 0.0), None), 25_000);
        assert_eq!(
            limit_packets(&netem(10_000, 0, 0.0), Some(1_000_000_000_000)),
            1_000_000
        );
    }

    #[test]
    fn fq_maxrate_round_trips_and_clears() {
        let mut msg = Message::new(0, 0, &[]);
        fq_options(&mut msg, Some(1_000_000_000));
        assert_eq!(parse_fq_maxrate(msg.body()), Some(1_000_000_000));
        let mut msg = Message::new(0, 0, &[]);
        fq_options(&mut msg, None);
        assert_eq!(parse_fq_maxrate(msg.body()), None);
    }

    #[test]
    fn chains_follow_parents() {
        let q = |handle: u32, parent: u32, kind: &str| QdiscEntry {
            handle,
            parent,
            kind: kind.into(),
            options: Vec::new(),
        };
        let all = [
            q(FQ, NETEM | 1, "fq"),
            q(TBF, TC_H_ROOT, "tbf"),
            q(NETEM, TBF | 1, "netem"),
        ];
        let kinds: Vec<&str> = chain(&all).iter().map(|q| q.kind.as_str()).collect();
        assert_eq!(kinds, ["tbf", "netem", "fq"]);
        assert!(chain(&[]).is_empty());
    }
}
