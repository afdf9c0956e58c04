//! The exact merge of the agents' results into one run's figures, and each
//! agent's rows of the record (`RunRecord::agents`). Pure: the controller
//! collects one [`AgentPart`] per agent and calls [`merge`].
//!
//! The agents ran disjoint segments of every class (agent i of N: clients
//! [i/N, (i+1)/N), `stackbench_model::segment`) in windows that opened at
//! one start time, so the run's figures are SUMS over the segments — the
//! counterpart of `repeat_mean`, whose repetitions measured the same thing
//! over and are averaged. Both combine each class by the one combine of
//! class results, [`stackbench_metrics::combine`] (here in its parts mode:
//! distributions merged by adding histogram buckets, never by averaging
//! percentiles); this module gives it what only the controller knows, who
//! ran each part and where, for the CPU and memory figures taken once per
//! host or process (`cpu`, `memory`). Where a figure cannot be merged
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

use stackbench_metrics::combine::{combine, Mode, Parts, Who};
use stackbench_metrics::cpu::Work;
use stackbench_record::{
    AgentClassRow, AgentRecord, AgentsSummary, ClassResult, CpuFigures, MemoryFigures,
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

/// One class over every agent's segment: the parts of one run, each
/// field by its rule in [`combine`] (counts summed, the longest window,
/// histograms added, …); its CPU and memory per side, host views once per
/// host and process figures once per process ([`merge_class_cpu`],
/// [`merge_memory`]).
fn merge_class(of: &[(usize, &AgentPart, &ClassResult)], notes: &mut Vec<String>) -> ClassResult {
    let classes: Vec<&ClassResult> = of.iter().map(|(_, _, c)| *c).collect();
    combine(Mode::Parts(&mut Segments { of, notes }), &classes)
}

/// The agents of one class, as [`combine`] asks about its parts.
struct Segments<'a, 'n> {
    of: &'a [(usize, &'a AgentPart, &'a ClassResult)],
    notes: &'n mut Vec<String>,
}

impl Parts for Segments<'_, '_> {
    fn who(&self, i: usize) -> Who {
        let p = self.of[i].1;
        Who {
            index: p.index,
            count: p.count,
            host: p.host.clone(),
            responder_host: p.responder_host.clone(),
            complete: p.complete,
        }
    }

    fn cpu(&mut self, work: Work) -> Option<CpuFigures> {
        merge_class_cpu(self.of, work, self.notes)
    }

    fn memory(&mut self) -> Option<MemoryFigures> {
        merge_memory(self.of, self.notes)
    }

    fn note(&mut self, note: String) {
        self.notes.push(note);
    }
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
