//! The exact merges of [`Mode::Parts`](super::Mode::Parts) for the parts of
//! a class that are structures of their own: the latency distribution, the
//! per-second rates and TLS. Distributions are merged by adding histogram
//! buckets and taking percentiles from the sum, never by averaging the
//! parts' percentiles: k8s-netperf reports the average of its samples' P99
//! (pkg/results/result.go, `ShowLatencyResult`), and Locust adds its
//! workers' response-time counts only after rounding each time to two
//! significant digits (locust/stats.py, `StatsEntry._log_response_time`);
//! both report figures no transaction had. Where a figure cannot be merged
//! exactly it is left out with a note ([`Parts::note`]), never estimated.

use stackbench_record::{
    ClassResult, HandshakeCpuUs, KtlsCounters, KtlsFigures, LatencyUs, ScriptStep, TlsFigures,
};

use super::once::once_per;
use super::parts::{Parts, Who};
use crate::LatencyHistogram;

/// The parts' histograms added and summarised with the engine's own
/// function ([`LatencyHistogram::summary_us`]), the sum re-encoded for the
/// record. A part with transactions but no (readable) histogram leaves the
/// class without latency, with a note: its transactions' latencies are
/// unknown, and the others' alone would be another distribution.
pub(super) fn latency(
    classes: &[&ClassResult],
    parts: &mut dyn Parts,
) -> (Option<LatencyUs>, Option<String>) {
    let each = classes
        .iter()
        .map(|c| (c.latency_hdr.as_deref(), c.transactions > 0, c.transactions));
    added(each, "latency", "transactions", &classes[0].notation, parts)
}

/// The generator lag of paced parts, added as [`latency`] is: a part that
/// sent on a schedule (it has lag figures) but whose histogram is missing
/// or unreadable leaves the class without a lag, with a note; parts that
/// sent nothing on a schedule add nothing.
pub(super) fn generator_lag(
    classes: &[&ClassResult],
    parts: &mut dyn Parts,
) -> (Option<LatencyUs>, Option<String>) {
    let each = classes.iter().map(|c| match &c.population {
        Some(p) => (
            p.generator_lag_hdr.as_deref(),
            p.generator_lag_us.is_some(),
            c.transactions,
        ),
        None => (None, false, 0),
    });
    added(
        each,
        "generator lag",
        "transactions",
        &classes[0].notation,
        parts,
    )
}

/// Histograms added: per part its encoded histogram, whether it measured
/// something (and so must have one) and the count it names in a note.
fn added<'a>(
    each: impl Iterator<Item = (Option<&'a str>, bool, u64)>,
    what: &str,
    counted: &str,
    notation: &str,
    parts: &mut dyn Parts,
) -> (Option<LatencyUs>, Option<String>) {
    let mut sum = LatencyHistogram::new();
    for (i, (text, measured, count)) in each.enumerate() {
        let decoded = match text {
            Some(text) => LatencyHistogram::from_base64(text),
            None if !measured => continue,
            None => Err(format!("no {what} histogram")),
        };
        match decoded {
            Ok(h) => sum.merge(&h),
            Err(why) => {
                let p = parts.who(i);
                parts.note(format!(
                    "{notation}: agent {} (segment {}/{}, host {}) sent {why} for its {count} \
                     {counted}: the class has no merged {what}",
                    p.index, p.index, p.count, p.host
                ));
                return (None, None);
            }
        }
    }
    (sum.summary_us(), (sum.count() > 0).then(|| sum.to_base64()))
}

/// A script's steps over several measurements, by name in the first's
/// order: transactions and timeouts summed, histograms added and
/// summarised (a step whose histogram cannot be read keeps no latency),
/// the first screen seen instead kept. `None` when none has steps.
pub(super) fn steps(classes: &[&ClassResult]) -> Option<Vec<ScriptStep>> {
    let mut out: Vec<(ScriptStep, Option<LatencyHistogram>)> = Vec::new();
    for c in classes {
        for s in c.steps.iter().flatten() {
            let i = match out.iter().position(|(o, _)| o.name == s.name) {
                Some(i) => i,
                None => {
                    let empty = ScriptStep {
                        transactions: 0,
                        timeouts: 0,
                        seen: None,
                        latency_us: None,
                        latency_hdr: None,
                        ..s.clone()
                    };
                    out.push((empty, Some(LatencyHistogram::new())));
                    out.len() - 1
                }
            };
            let (o, hist) = &mut out[i];
            o.transactions += s.transactions;
            o.timeouts += s.timeouts;
            if o.seen.is_none() {
                o.seen.clone_from(&s.seen);
            }
            let decoded = match &s.latency_hdr {
                Some(text) => LatencyHistogram::from_base64(text).ok(),
                None if s.transactions == 0 => Some(LatencyHistogram::new()),
                None => None,
            };
            match (hist.as_mut(), decoded) {
                (Some(h), Some(d)) => h.merge(&d),
                _ => *hist = None,
            }
        }
    }
    if out.is_empty() {
        return None;
    }
    Some(
        out.into_iter()
            .map(|(mut o, hist)| {
                if let Some(h) = hist.filter(|h| h.count() > 0) {
                    o.latency_us = h.summary_us();
                    o.latency_hdr = Some(h.to_base64());
                }
                o
            })
            .collect(),
    )
}

/// Transactions of each whole second, summed over the parts. The seconds
/// kept are those every complete part has (windows that opened together
/// but closed a few µs apart can differ by their last whole second, which
/// would read as a dip); a part cut short adds 0 for the seconds it
/// missed. Without a complete part, the longest.
pub(super) fn per_second(classes: &[&ClassResult], parts: &dyn Parts) -> Vec<f64> {
    let complete = classes
        .iter()
        .enumerate()
        .filter(|(i, _)| parts.who(*i).complete)
        .map(|(_, c)| c.per_second_tps.len())
        .min();
    let longest = classes.iter().map(|c| c.per_second_tps.len()).max();
    let seconds = complete.or(longest).unwrap_or(0);
    (0..seconds)
        .map(|s| {
            classes
                .iter()
                .map(|c| c.per_second_tps.get(s).copied().unwrap_or(0.0))
                .sum()
        })
        .collect()
}

/// A summary of percentiles that came without its histogram: the one
/// part's that has it, or `None` with a note when several have.
pub(super) fn only_one<T>(
    mut values: impl Iterator<Item = T>,
    what: &str,
    parts: &mut dyn Parts,
) -> Option<T> {
    let one = values.next()?;
    if values.next().is_none() {
        return Some(one);
    }
    parts.note(format!(
        "{what} is measured by several agents as percentiles without a histogram, which \
         cannot be added: it is left out"
    ));
    None
}

/// TLS over every part: what was negotiated is the first part's (a note
/// when another's differs); handshake and re-key counts summed; the CPU per
/// handshake the parts' means weighted by their handshakes of that kind
/// (the responder's too: its means are over the part's test, weighted by
/// that part's window handshakes); the kTLS connection counts summed and
/// its kernel counters (one set per network namespace) taken once per host;
/// the handshake latency a part's own when only one had handshakes in
/// its window, else left out with a note (no histogram travels with it).
pub(super) fn tls(classes: &[&ClassResult], parts: &mut dyn Parts) -> Option<TlsFigures> {
    let have: Vec<(Who, &TlsFigures)> = classes
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.tls.as_ref().map(|t| (parts.who(i), t)))
        .collect();
    let (_, first) = have.first()?;
    let notation = &classes[0].notation;
    for (p, t) in &have {
        if (&t.version, &t.cipher, &t.alpn) != (&first.version, &first.cipher, &first.alpn) {
            parts.note(format!(
                "{notation}: agent {} on {} negotiated {} {} where the first agent negotiated {} {}",
                p.index, p.host, t.version, t.cipher, first.version, first.cipher
            ));
        }
    }
    let sum = |f: fn(&TlsFigures) -> u64| have.iter().map(|(_, t)| f(t)).sum::<u64>();
    Some(TlsFigures {
        version: first.version.clone(),
        cipher: first.cipher.clone(),
        cipher_code: first.cipher_code.clone(),
        full_handshakes: sum(|t| t.full_handshakes),
        resumed_handshakes: sum(|t| t.resumed_handshakes),
        handshake_latency_us: only_one(
            have.iter().filter_map(|(_, t)| t.handshake_latency_us),
            &format!("{notation}: the handshake latency"),
            parts,
        ),
        rekeys: sum(|t| t.rekeys),
        server_rekeys: sum(|t| t.server_rekeys),
        handshake_cpu_us: handshake_cpu(&have),
        ktls: ktls(&have),
        alpn: first.alpn.clone(),
        server_verified: super::verified::verified_by_all(
            have.iter().map(|(_, t)| t.server_verified),
        ),
    })
}

/// Per kind and side, the mean µs per handshake weighted by the parts'
/// handshakes of that kind; `None` where no part has one.
fn handshake_cpu(have: &[(Who, &TlsFigures)]) -> Option<HandshakeCpuUs> {
    let cpus: Vec<(&TlsFigures, HandshakeCpuUs)> = have
        .iter()
        .filter_map(|(_, t)| t.handshake_cpu_us.map(|c| (*t, c)))
        .collect();
    if cpus.is_empty() {
        return None;
    }
    let mean = |get: fn(&HandshakeCpuUs) -> Option<f64>, full: bool| {
        let (sum, n) = cpus.iter().fold((0.0, 0u64), |(s, n), (t, c)| {
            let count = if full {
                t.full_handshakes
            } else {
                t.resumed_handshakes
            };
            match get(c) {
                Some(us) if count > 0 => (s + us * count as f64, n + count),
                _ => (s, n),
            }
        });
        (n > 0).then(|| sum / n as f64)
    };
    Some(HandshakeCpuUs {
        client_full: mean(|c| c.client_full, true),
        client_resumed: mean(|c| c.client_resumed, false),
        server_full: mean(|c| c.server_full, true),
        server_resumed: mean(|c| c.server_resumed, false),
    })
}

fn ktls(have: &[(Who, &TlsFigures)]) -> Option<KtlsFigures> {
    let ktls: Vec<(&Who, &KtlsFigures)> = have
        .iter()
        .filter_map(|(p, t)| t.ktls.as_ref().map(|k| (p, k)))
        .collect();
    if ktls.is_empty() {
        return None;
    }
    // The counters are their namespace's: one set per host.
    let per_host = |host: fn(&Who) -> &str, get: fn(&KtlsFigures) -> Option<KtlsCounters>| {
        once_per(&ktls, |(p, _)| host(p), |_, _| false)
            .iter()
            .try_fold(KtlsCounters::default(), |sum, (_, k)| {
                Some(add_ktls(&sum, &get(k)?))
            })
    };
    Some(KtlsFigures {
        connections: ktls.iter().map(|(_, k)| k.connections).sum(),
        server_connections: ktls.iter().map(|(_, k)| k.server_connections).sum(),
        client: per_host(|p| &p.host, |k| k.client),
        server: per_host(|p| &p.responder_host, |k| k.server),
    })
}

fn add_ktls(a: &KtlsCounters, b: &KtlsCounters) -> KtlsCounters {
    KtlsCounters {
        tx_sw: a.tx_sw + b.tx_sw,
        rx_sw: a.rx_sw + b.rx_sw,
        tx_device: a.tx_device + b.tx_device,
        rx_device: a.rx_device + b.rx_device,
        decrypt_errors: a.decrypt_errors + b.decrypt_errors,
        decrypt_retries: a.decrypt_retries + b.decrypt_retries,
        rx_no_pad_violations: a.rx_no_pad_violations + b.rx_no_pad_violations,
    }
}
