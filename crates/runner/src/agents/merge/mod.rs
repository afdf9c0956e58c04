//! The exact merge of the agents' results into one run's figures, and each
//! agent's rows of the record (`RunRecord::agents`). Pure: the controller
//! collects one [`AgentPart`] per agent and calls [`merge`].
//!
//! The agents ran disjoint segments of every class (agent i of N: clients
//! [i/N, (i+1)/N), `stackbench_model::segment`) in windows that opened at
//! one start time, so the run's figures are SUMS over the segments — the
//! counterpart of `repeat_mean`, whose repetitions measured the same thing
//! over and are averaged. Distributions are merged by adding histogram
//! buckets and taking percentiles from the sum, never by averaging the
//! agents' percentiles: k8s-netperf reports the average of its samples' P99
//! (pkg/results/result.go, `ShowLatencyResult`), and Locust adds its
//! workers' response-time counts only after rounding each time to two
//! significant digits (locust/stats.py, `StatsEntry._log_response_time`);
//! both report figures no transaction had. Where a figure cannot be merged
//! exactly it is left out with a note (`AgentsSummary::merge_notes`),
//! never estimated.
//!
//! Each part's `classes` are that agent's own, with its segment's share in
//! `clients` (and in a population's `connected` and `offered_rate_tps`),
//! listed in the workload's class order.

mod cpu;
mod memory;
#[cfg(test)]
mod tests;

use stackbench_metrics::cpu::Work;
use stackbench_metrics::LatencyHistogram;
use stackbench_record::{
    AgentClassRow, AgentRecord, AgentsSummary, ClassResult, CpuFigures, ErrorCounts,
    HandshakeCpuUs, KtlsCounters, KtlsFigures, LagUs, LatencyUs, MemoryFigures, PopulationFigures,
    StallBand, TlsFigures,
};

use cpu::SideInput;
use memory::MemoryInput;

/// What one agent sent back for one workload, with what the controller knows
/// of it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPart {
    /// Its segment's index i.
    pub index: u32,
    /// The segments' count N.
    pub count: u32,
    /// Its process id on its host.
    pub pid: u32,
    /// The agent's host name: groups the client side's CPU-set figures.
    pub host: String,
    /// The responder target it drove: groups the server's process and
    /// memory figures (one responder driven by several agents is one process).
    pub responder: String,
    /// That responder's host: groups the server side's CPU-set figures.
    pub responder_host: String,
    /// The engine's per-class results of its segment, each with its
    /// `latency_hdr`; empty when it reported nothing.
    pub classes: Vec<ClassResult>,
    /// The CPU of its whole mix (a mix of several classes); `None` otherwise.
    pub mix_cpu: Option<CpuFigures>,
    /// False when it ended early or stopped reporting.
    pub complete: bool,
    /// Why it is incomplete, in its own words.
    pub incomplete_reason: Option<String>,
    /// When its window opened, Unix seconds on the agent's own clock;
    /// `None` when it never opened.
    pub window_start_s: Option<f64>,
    /// Agent clock minus controller clock, seconds (NTP-style estimate).
    pub clock_offset_s: f64,
    /// Round trip of the offset's exchange, seconds.
    pub clock_rtt_s: f64,
}

/// The run's figures from every agent's.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Per class, the agents' segments merged.
    pub classes: Vec<ClassResult>,
    /// The whole mix's CPU over every agent (for `RunRecord::mix_cpu`).
    pub mix_cpu: Option<CpuFigures>,
    /// False when any agent is incomplete or missing.
    pub complete: bool,
    /// Which agents fell short and why, `; `-separated.
    pub incomplete_reason: Option<String>,
    /// The agents' own rows, for `RunRecord::agents`.
    pub agents: AgentsSummary,
}

/// Merges the agents' parts of one workload; `launcher` is stored as given.
pub fn merge(parts: &[AgentPart], launcher: &str) -> Merged {
    let mut notes = Vec::new();
    let mut reasons = incomplete_reasons(parts);
    let members = matching_parts(parts, &mut reasons);
    let classes: Vec<ClassResult> = match members.first() {
        None => Vec::new(),
        Some(first) => (0..first.classes.len())
            .map(|i| {
                let of: Vec<(usize, &AgentPart, &ClassResult)> = members
                    .iter()
                    .map(|p| (position(parts, p), *p, &p.classes[i]))
                    .collect();
                merge_class(&of, &mut notes)
            })
            .collect(),
    };
    let mix_cpu = merge_mix_cpu(parts, &members, &classes, &mut notes);
    let mut rows: Vec<AgentRecord> = parts.iter().map(agent_row).collect();
    rows.sort_by_key(|r| r.index);
    let starts: Vec<f64> = rows.iter().filter_map(|r| r.window_start_s).collect();
    let start_skew_s = (!starts.is_empty()).then(|| {
        let max = starts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        max - starts.iter().copied().fold(f64::INFINITY, f64::min)
    });
    Merged {
        classes,
        mix_cpu,
        complete: reasons.is_empty(),
        incomplete_reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
        agents: AgentsSummary {
            count: parts.first().map_or(0, |p| p.count),
            launcher: launcher.to_string(),
            responders: {
                let mut distinct: Vec<&str> = parts.iter().map(|p| p.responder.as_str()).collect();
                distinct.sort_unstable();
                distinct.dedup();
                distinct.len() as u32
            },
            start_skew_s,
            merge_notes: notes,
            agents: rows,
        },
    }
}

/// One clause per agent that fell short (incomplete, or a segment nobody
/// reported), naming it by index, segment and host.
fn incomplete_reasons(parts: &[AgentPart]) -> Vec<String> {
    let mut reasons: Vec<String> = parts
        .iter()
        .filter(|p| !p.complete)
        .map(|p| {
            format!(
                "agent {} (segment {}/{}, host {}, pid {}) is incomplete: {}",
                p.index,
                p.index,
                p.count,
                p.host,
                p.pid,
                p.incomplete_reason.as_deref().unwrap_or("no reason given")
            )
        })
        .collect();
    let count = parts.first().map_or(0, |p| p.count);
    for index in 0..count {
        if !parts.iter().any(|p| p.index == index) {
            reasons.push(format!(
                "agent {index} (segment {index}/{count}) never reported"
            ));
        }
    }
    if parts.is_empty() {
        reasons.push("no agent reported".to_string());
    }
    reasons
}

/// The parts whose classes can be merged: those that reported classes, with
/// the same classes in the same order as the first of them. One that
/// differs ran another workload and is named in the reasons.
fn matching_parts<'a>(parts: &'a [AgentPart], reasons: &mut Vec<String>) -> Vec<&'a AgentPart> {
    let Some(reference) = parts.iter().find(|p| !p.classes.is_empty()) else {
        return Vec::new();
    };
    let names =
        |p: &AgentPart| -> Vec<String> { p.classes.iter().map(|c| c.notation.clone()).collect() };
    // The same classes: kind, direction and sizes. Not the notation, which
    // names each agent's own share of the clients (RR17477 beside RR17476
    // when 262,144 users split over 15 agents).
    let identity = |p: &AgentPart| -> Vec<String> {
        p.classes
            .iter()
            .map(|c| {
                format!(
                    "{:?} {:?} {} {}",
                    c.kind, c.stream_direction, c.request_bytes, c.response_bytes
                )
            })
            .collect()
    };
    let want = names(reference);
    let want_identity = identity(reference);
    let mut kept = Vec::new();
    for p in parts.iter().filter(|p| !p.classes.is_empty()) {
        if identity(p) == want_identity {
            kept.push(p);
        } else {
            reasons.push(format!(
                "agent {} (segment {}/{}, host {}) measured {} instead of {}: its figures are \
                 left out of the merge",
                p.index,
                p.index,
                p.count,
                p.host,
                names(p).join("+"),
                want.join("+")
            ));
        }
    }
    kept
}

fn position(parts: &[AgentPart], part: &AgentPart) -> usize {
    parts
        .iter()
        .position(|p| std::ptr::eq(p, part))
        .unwrap_or(0)
}

/// One class over every agent's segment. Every field of [`ClassResult`]:
/// - identity (workload, notation, kind, direction, sizes): the first
///   agent's (all ran the same class);
/// - `clients` and every count (transactions, bytes, errors by cause):
///   summed;
/// - `duration_s`: the longest window (the windows opened together), and
///   the rates (`rate_tps`, `*_bytes_per_s`) the summed counts over it;
/// - `per_second_tps`: summed second by second (see [`per_second`]);
/// - latency: the agents' histograms added ([`merge_latency`]);
/// - CPU and memory: per side, host views once per host and process
///   figures once per process ([`merge_class_cpu`], [`merge_memory`]);
/// - `repetitions`: `None` (an agent's run is one repetition);
/// - `population`, `tls`, `stall_band`: see their functions.
fn merge_class(of: &[(usize, &AgentPart, &ClassResult)], notes: &mut Vec<String>) -> ClassResult {
    let first = of[0].2;
    let sum = |f: fn(&ClassResult) -> u64| -> u64 { of.iter().map(|(_, _, c)| f(c)).sum() };
    let transactions = sum(|c| c.transactions);
    let (tx_bytes, rx_bytes) = (sum(|c| c.tx_bytes), sum(|c| c.rx_bytes));
    let duration_s = of.iter().map(|(_, _, c)| c.duration_s).fold(0.0, f64::max);
    let per_s = |n: u64| {
        if duration_s > 0.0 {
            n as f64 / duration_s
        } else {
            0.0
        }
    };
    let mut error_counts = ErrorCounts::default();
    of.iter()
        .for_each(|(_, _, c)| error_counts.add(&c.error_counts));
    let (latency_us, latency_hdr) = merge_latency(of, notes);
    let work = Work {
        transactions,
        payload_bytes: tx_bytes + rx_bytes,
    };
    ClassResult {
        workload: first.workload.clone(),
        notation: first.notation.clone(),
        kind: first.kind,
        stream_direction: first.stream_direction,
        clients: of.iter().map(|(_, _, c)| c.clients).sum(),
        request_bytes: first.request_bytes,
        response_bytes: first.response_bytes,
        transactions,
        duration_s,
        rate_tps: per_s(transactions),
        latency_us,
        latency_hdr,
        tx_bytes,
        rx_bytes,
        tx_bytes_per_s: per_s(tx_bytes),
        rx_bytes_per_s: per_s(rx_bytes),
        errors: error_counts.total(),
        error_counts,
        per_second_tps: per_second(of),
        cpu: merge_class_cpu(of, work, notes),
        memory: merge_memory(of, notes),
        repetitions: None,
        population: merge_population(of, notes),
        tls: merge_tls(of, notes),
        stall_band: stall_band(of),
        served_by: crate::repeat_mean::served_by(of.iter().map(|(_, _, c)| c.served_by)),
    }
}

/// The agents' histograms added and summarised with the engine's own
/// function ([`LatencyHistogram::summary_us`]), the sum re-encoded for the
/// record. An agent with transactions but no (readable) histogram leaves
/// the class without latency, with a note: its transactions' latencies are
/// unknown, and the others' alone would be another distribution.
fn merge_latency(
    of: &[(usize, &AgentPart, &ClassResult)],
    notes: &mut Vec<String>,
) -> (Option<LatencyUs>, Option<String>) {
    let mut sum = LatencyHistogram::new();
    for (_, p, c) in of {
        let decoded = match &c.latency_hdr {
            Some(text) => LatencyHistogram::from_base64(text),
            None if c.transactions == 0 => continue,
            None => Err("no latency histogram".to_string()),
        };
        match decoded {
            Ok(h) => sum.merge(&h),
            Err(why) => {
                notes.push(format!(
                    "{}: agent {} (segment {}/{}, host {}) sent {why} for its {} transactions: \
                     the class has no merged latency",
                    c.notation, p.index, p.index, p.count, p.host, c.transactions
                ));
                return (None, None);
            }
        }
    }
    (sum.summary_us(), (sum.count() > 0).then(|| sum.to_base64()))
}

/// Transactions of each whole second, summed over the agents. The seconds
/// kept are those every complete agent has (windows that opened together
/// but closed a few µs apart can differ by their last whole second, which
/// would read as a dip); an agent cut short adds 0 for the seconds it
/// missed. Without a complete agent, the longest.
fn per_second(of: &[(usize, &AgentPart, &ClassResult)]) -> Vec<f64> {
    let complete = of
        .iter()
        .filter(|(_, p, _)| p.complete)
        .map(|(_, _, c)| c.per_second_tps.len())
        .min();
    let longest = of.iter().map(|(_, _, c)| c.per_second_tps.len()).max();
    let seconds = complete.or(longest).unwrap_or(0);
    (0..seconds)
        .map(|s| {
            of.iter()
                .map(|(_, _, c)| c.per_second_tps.get(s).copied().unwrap_or(0.0))
                .sum()
        })
        .collect()
}

/// Inputs of one side from every agent, or `None` when an agent lacks the
/// side (a sum missing an agent is no one's figure).
fn side_inputs<'a>(
    of: &[(usize, &'a AgentPart, &'a CpuFigures)],
    get: fn(&CpuFigures) -> Option<&stackbench_record::SideCpu>,
    server: bool,
) -> Vec<SideInput<'a>> {
    of.iter()
        .filter_map(|(i, p, f)| {
            get(f).map(|side| SideInput {
                host: (if server { &p.responder_host } else { &p.host }).clone(),
                part: *i,
                process: if server {
                    format!("responder {}", p.responder)
                } else {
                    format!("agent {}:{}", p.host, p.pid)
                },
                side,
            })
        })
        .collect()
}

/// CPU over every agent (see the `cpu` module): `None` when an agent
/// measured none, with a note.
fn cpu_of(
    what: &str,
    of: &[(usize, &AgentPart, Option<&CpuFigures>)],
    work: Work,
    notes: &mut Vec<String>,
) -> Option<CpuFigures> {
    let have: Vec<(usize, &AgentPart, &CpuFigures)> = of
        .iter()
        .filter_map(|(i, p, f)| f.map(|f| (*i, *p, f)))
        .collect();
    if have.is_empty() {
        return None;
    }
    if have.len() < of.len() {
        notes.push(format!(
            "{what}: {} of {} agents measured no CPU: no merged CPU figures",
            of.len() - have.len(),
            of.len()
        ));
        return None;
    }
    type Get = fn(&CpuFigures) -> Option<&stackbench_record::SideCpu>;
    let side = |get: Get, server: bool| {
        let inputs = side_inputs(&have, get, server);
        // An agent whose side did not report leaves the side out.
        if inputs.len() == have.len() {
            inputs
        } else {
            Vec::new()
        }
    };
    let (figures, note) = cpu::merge_cpu(
        &side(|f| f.client.as_ref(), false),
        &side(|f| f.server.as_ref(), true),
        &side_inputs(&have, |f| f.shared.as_ref(), false),
        have.len(),
        work,
    );
    notes.extend(note.map(|n| format!("{what}: {n}")));
    Some(figures)
}

fn merge_class_cpu(
    of: &[(usize, &AgentPart, &ClassResult)],
    work: Work,
    notes: &mut Vec<String>,
) -> Option<CpuFigures> {
    let cpu: Vec<_> = of
        .iter()
        .map(|(i, p, c)| (*i, *p, c.cpu.as_ref()))
        .collect();
    cpu_of(&of[0].2.notation, &cpu, work, notes)
}

/// The whole mix's CPU over every agent, per transaction of all its classes.
fn merge_mix_cpu(
    parts: &[AgentPart],
    members: &[&AgentPart],
    classes: &[ClassResult],
    notes: &mut Vec<String>,
) -> Option<CpuFigures> {
    let work = Work {
        transactions: classes.iter().map(|c| c.transactions).sum(),
        payload_bytes: classes.iter().map(|c| c.tx_bytes + c.rx_bytes).sum(),
    };
    let mix: Vec<_> = members
        .iter()
        .map(|p| (position(parts, p), *p, p.mix_cpu.as_ref()))
        .collect();
    let name = classes.first().map_or("the mix", |c| c.workload.as_str());
    cpu_of(name, &mix, work, notes)
}

/// Memory per side over every agent (see the `memory` module); a side
/// is left out when an agent lacks it.
fn merge_memory(
    of: &[(usize, &AgentPart, &ClassResult)],
    notes: &mut Vec<String>,
) -> Option<MemoryFigures> {
    let have: Vec<_> = of
        .iter()
        .filter_map(|(_, p, c)| c.memory.as_ref().map(|m| (*p, m)))
        .collect();
    if have.is_empty() {
        return None;
    }
    if have.len() < of.len() {
        notes.push(format!(
            "{}: {} of {} agents measured no memory: no merged memory figures",
            of[0].2.notation,
            of.len() - have.len(),
            of.len()
        ));
        return None;
    }
    let side = |server: bool| {
        let inputs: Vec<MemoryInput> = have
            .iter()
            .filter_map(|(p, m)| {
                let memory = if server { &m.server } else { &m.client }.as_ref()?;
                Some(MemoryInput {
                    host: (if server { &p.responder_host } else { &p.host }).clone(),
                    process: if server {
                        format!("responder {}", p.responder)
                    } else {
                        format!("agent {}:{}", p.host, p.pid)
                    },
                    memory,
                })
            })
            .collect();
        (inputs.len() == have.len())
            .then(|| memory::merge_side(&inputs))
            .flatten()
    };
    Some(MemoryFigures {
        client: side(false),
        server: side(true),
    })
}

/// A population's figures over its agents:
/// - counts (`late`, `dropped`, `connected`) summed, and `offered_rate_tps`
///   (each agent offered its segment's share);
/// - what was configured (`pacing`, `pacing_text`, `think_mean_s`,
///   `arrivals`) the first agent's;
/// - `wait_mean_s` the agents' means weighted by their transactions (each
///   transaction of a paced client is followed by one wait, so the weights
///   are the waits' counts up to one per client at the window's edges);
/// - `connect_s` the longest (the class was connected when its last agent was);
/// - `latency_uncorrected_us` and `generator_lag_us`: an agent's own when
///   only one has them; from several, left out with a note, since their
///   percentiles travel without histograms and cannot be added.
///
/// Little's law N = X(R+Z) then holds of the merged figures when it held of
/// every agent's: N and X are sums, R the merged histogram's mean and Z a
/// transaction-weighted mean (`warnings::check_little_law` runs on it).
fn merge_population(
    of: &[(usize, &AgentPart, &ClassResult)],
    notes: &mut Vec<String>,
) -> Option<PopulationFigures> {
    let have: Vec<(&PopulationFigures, u64)> = of
        .iter()
        .filter_map(|(_, _, c)| c.population.as_ref().map(|p| (p, c.transactions)))
        .collect();
    let first = have.first()?.0;
    let waits: Vec<(f64, f64)> = have
        .iter()
        .filter_map(|(p, n)| p.wait_mean_s.map(|w| (w, *n as f64)))
        .collect();
    let weight: f64 = waits.iter().map(|(_, n)| n).sum();
    let offered: Option<f64> = have.iter().map(|(p, _)| p.offered_rate_tps).sum();
    let notation = &of[0].2.notation;
    Some(PopulationFigures {
        pacing: first.pacing,
        pacing_text: first.pacing_text.clone(),
        think_mean_s: first.think_mean_s,
        wait_mean_s: (weight > 0.0).then(|| waits.iter().map(|(w, n)| w * n).sum::<f64>() / weight),
        offered_rate_tps: offered.filter(|_| first.offered_rate_tps.is_some()),
        arrivals: first.arrivals.clone(),
        latency_uncorrected_us: only_one(
            have.iter().filter_map(|(p, _)| p.latency_uncorrected_us),
            &format!("{notation}: the latency from the actual send (open loop)"),
            notes,
        ),
        late: have.iter().map(|(p, _)| p.late).sum(),
        dropped: have.iter().map(|(p, _)| p.dropped).sum(),
        generator_lag_us: only_one::<LagUs>(
            have.iter().filter_map(|(p, _)| p.generator_lag_us),
            &format!("{notation}: the generator lag"),
            notes,
        ),
        connected: have.iter().map(|(p, _)| p.connected).sum(),
        connect_s: have.iter().map(|(p, _)| p.connect_s).fold(0.0, f64::max),
    })
}

/// A summary of percentiles that came without its histogram: the one
/// agent's that has it, or `None` with a note when several have.
fn only_one<T>(
    mut values: impl Iterator<Item = T>,
    what: &str,
    notes: &mut Vec<String>,
) -> Option<T> {
    let one = values.next()?;
    if values.next().is_none() {
        return Some(one);
    }
    notes.push(format!(
        "{what} is measured by several agents as percentiles without a histogram, which \
         cannot be added: it is left out"
    ));
    None
}

/// TLS over every agent: what was negotiated is the first agent's (a note
/// when another's differs); handshake and re-key counts summed; the CPU per
/// handshake the agents' means weighted by their handshakes of that kind
/// (the responder's too: its means are over the agent's test, weighted by
/// that agent's window handshakes); the kTLS connection counts summed and
/// its kernel counters (one set per network namespace) taken once per host;
/// the handshake latency an agent's own when only one had handshakes in
/// its window, else left out with a note (no histogram travels with it).
fn merge_tls(
    of: &[(usize, &AgentPart, &ClassResult)],
    notes: &mut Vec<String>,
) -> Option<TlsFigures> {
    let have: Vec<(&AgentPart, &TlsFigures)> = of
        .iter()
        .filter_map(|(_, p, c)| c.tls.as_ref().map(|t| (*p, t)))
        .collect();
    let (_, first) = *have.first()?;
    let notation = &of[0].2.notation;
    for (p, t) in &have {
        if (&t.version, &t.cipher) != (&first.version, &first.cipher) {
            notes.push(format!(
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
            notes,
        ),
        rekeys: sum(|t| t.rekeys),
        server_rekeys: sum(|t| t.server_rekeys),
        handshake_cpu_us: handshake_cpu(&have),
        ktls: merge_ktls(&have),
    })
}

/// Per kind and side, the mean µs per handshake weighted by the agents'
/// handshakes of that kind; `None` where no agent has one.
fn handshake_cpu(have: &[(&AgentPart, &TlsFigures)]) -> Option<HandshakeCpuUs> {
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

fn merge_ktls(have: &[(&AgentPart, &TlsFigures)]) -> Option<KtlsFigures> {
    let ktls: Vec<(&AgentPart, &KtlsFigures)> = have
        .iter()
        .filter_map(|(p, t)| t.ktls.as_ref().map(|k| (*p, k)))
        .collect();
    if ktls.is_empty() {
        return None;
    }
    // The counters are their namespace's: one set per host.
    let per_host = |host: fn(&AgentPart) -> &str, get: fn(&KtlsFigures) -> Option<KtlsCounters>| {
        let mut seen: Vec<&str> = Vec::new();
        let mut sum: Option<KtlsCounters> = Some(KtlsCounters::default());
        for (p, k) in &ktls {
            if seen.contains(&host(p)) {
                continue;
            }
            seen.push(host(p));
            sum = sum.zip(get(k)).map(|(a, b)| add_ktls(&a, &b));
        }
        sum
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

/// The delayed-ACK band's counts summed over the agents that judged it
/// (`StallBand::add`, which recomputes the share); an agent whose path
/// could not tell a stall adds nothing.
fn stall_band(of: &[(usize, &AgentPart, &ClassResult)]) -> Option<StallBand> {
    of.iter()
        .filter_map(|(_, _, c)| c.stall_band)
        .reduce(|a, b| a.add(&b))
}

/// An agent's own row: its identity, its clock, its window start on the
/// controller's clock, and its view of each class.
fn agent_row(p: &AgentPart) -> AgentRecord {
    AgentRecord {
        index: p.index,
        count: p.count,
        host: p.host.clone(),
        pid: p.pid,
        responder: p.responder.clone(),
        clock_offset_s: p.clock_offset_s,
        clock_rtt_s: p.clock_rtt_s,
        // offset = agent − controller, so controller = agent − offset.
        window_start_s: p.window_start_s.map(|s| s - p.clock_offset_s),
        complete: p.complete,
        incomplete_reason: p.incomplete_reason.clone(),
        classes: p.classes.iter().map(class_row).collect(),
    }
}

fn class_row(c: &ClassResult) -> AgentClassRow {
    let cpu = c.cpu.as_ref();
    AgentClassRow {
        notation: c.notation.clone(),
        clients: c.clients,
        transactions: c.transactions,
        rate_tps: c.rate_tps,
        errors: c.errors,
        duration_s: c.duration_s,
        latency_us: c.latency_us,
        client_cpu_us_per_tran: cpu.and_then(|f| f.client.as_ref()?.cpu_us_per_tran),
        server_cpu_us_per_tran: cpu.and_then(|f| f.server.as_ref()?.cpu_us_per_tran),
        client_util_pct: cpu.and_then(|f| f.client.as_ref()).map(|s| s.util_pct),
        server_util_pct: cpu.and_then(|f| f.server.as_ref()).map(|s| s.util_pct),
    }
}
