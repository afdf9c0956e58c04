//! One way to combine class results: several [`ClassResult`]s of one class
//! become one by a rule per field, the rule chosen by how they relate
//! ([`Mode`]):
//!
//! - [`Mode::Parts`]: disjoint parts of one run, measured apart in windows
//!   that opened together (the agents' segments, `runner::agents::merge`):
//!   merged exactly, so the run's figures are sums over the parts;
//! - [`Mode::Repetitions`]: the same run done again (`--repeat`,
//!   `--confidence`, `runner::repeat_mean`): averaged, so that `rate_tps` is
//!   the mean `repetitions.rate_tps` summarises, not whichever run came last.
//!
//! [`combine`] names every field of `ClassResult` in one struct literal (no
//! `..`), so a new field does not compile until it has its rule there, in
//! both modes; the test `one_is_its_own_combine_in_every_field` then fails
//! for a rule that loses a single part's figure.
//!
//! A driver's own worker threads are parts too, merged one level down
//! (`engine::driver::accum`) while their histograms of the generator lag,
//! the uncorrected latency and the handshakes, and their wait counts, still
//! exist; the class's record is built from that merged accumulator
//! (`engine::driver::summary`) with the same [`rate`]. Merged here instead,
//! those figures would be percentiles of percentiles.
//!
//! The rules, field by field:
//!
//! | field | parts of one run | repetitions |
//! |---|---|---|
//! | `workload`, `notation`, `kind`, `stream_direction`, `request_bytes`, `response_bytes` | first | first |
//! | `clients` | sum (each part ran its share) | first |
//! | `transactions`, `tx_bytes`, `rx_bytes` | sum | mean, rounded to a whole number |
//! | `duration_s` | the longest (the windows opened together) | mean |
//! | `rate_tps`, `tx_bytes_per_s`, `rx_bytes_per_s` | the summed count over `duration_s` ([`rate`]) | mean |
//! | `latency_us`, `latency_hdr` | histograms added, summarised from the sum | mean of runs (`min`/`max` the extremes); a histogram only of a single run |
//! | `error_counts` | sum | sum (an error in any run stays visible) |
//! | `errors` | `error_counts`' total | `error_counts`' total |
//! | `per_second_tps` | summed second by second, over the seconds every complete part has | mean of each second every run has |
//! | `cpu`, `memory` | host views once per host, process figures once per process ([`Parts::cpu`], [`Parts::memory`]) | mean of every figure |
//! | `repetitions` | none (the caller fills it) | none (the caller fills it) |
//! | `population` | see the `population` module | see the `population` module |
//! | `tls` | counts summed, CPU per handshake weighted, kTLS counters once per host; `server_verified` false if any part's was | what was negotiated the first's (the same in every run), counts and µs the mean; `server_verified` false if any run's was |
//! | `stall_band` | bands added | bands added (a stall in any run is counted) |
//! | `served_by` | connections added, unknown when a part did not count | connections added, unknown when a run did not count |
//! | `http_status` | each code's count summed | each code's mean count (a run without the code counts 0), rounded |
//! | `sessions` | each count summed | each count summed (as errors) |
//! | `steps` | per step: counts summed, histograms added | the same (the repetitions' transactions pooled) |
//!
//! An optional figure of repetitions is present only when every run has it.

mod exact;
mod mean;
mod once;
mod parts;
mod population;
mod verified;

use stackbench_record::{ClassResult, CpuFigures, ErrorCounts, HttpStatus, ServedBy, Sessions};

use crate::cpu::Work;
use mean::Of;
pub use once::once_per;
pub use parts::{Parts, Who};

/// How the classes being combined relate.
pub enum Mode<'a> {
    /// Disjoint parts of one run, merged exactly; what only the caller knows
    /// about them (who measured each, their CPU and memory by host and
    /// process) through [`Parts`].
    Parts(&'a mut dyn Parts),
    /// Repetitions of one run, averaged.
    Repetitions,
}

/// How one figure of several classes becomes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// The first's: what is the same in every one (identity, setup).
    First,
    /// Added up.
    Sum,
    /// The largest.
    Max,
    /// The arithmetic mean; of a count, rounded to a whole number.
    Mean,
}

impl Rule {
    /// The rule applied to a count.
    pub fn count<T>(self, all: &[&T], get: impl Fn(&T) -> u64) -> u64 {
        let values = all.iter().map(|x| get(x));
        match self {
            Rule::First => get(all[0]),
            Rule::Sum => values.sum(),
            Rule::Max => values.max().unwrap_or(0),
            Rule::Mean => Of(all.to_vec()).u(get),
        }
    }

    /// The rule applied to a figure.
    pub fn figure<T>(self, all: &[&T], get: impl Fn(&T) -> f64) -> f64 {
        match self {
            Rule::First => get(all[0]),
            Rule::Sum => all.iter().map(|x| get(x)).sum(),
            Rule::Max => Of(all.to_vec()).max(get),
            Rule::Mean => Of(all.to_vec()).f(get),
        }
    }
}

/// One class from several measurements of it (`classes`, never empty, all
/// of the same class), each field by its rule in `mode` (see the module's
/// table).
pub fn combine(mut mode: Mode, classes: &[&ClassResult]) -> ClassResult {
    use Rule::{First, Max, Mean, Sum};
    let all = Of(classes.to_vec());
    let first = all.first();
    let parts = matches!(mode, Mode::Parts(_));
    // A figure's rule: of parts of one run, of repetitions.
    let rule = |of_parts: Rule, of_repetitions: Rule| {
        if parts {
            of_parts
        } else {
            of_repetitions
        }
    };
    let transactions = rule(Sum, Mean).count(classes, |c| c.transactions);
    let duration_s = rule(Max, Mean).figure(classes, |c| c.duration_s);
    let tx_bytes = rule(Sum, Mean).count(classes, |c| c.tx_bytes);
    let rx_bytes = rule(Sum, Mean).count(classes, |c| c.rx_bytes);
    // Parts: the summed count over the common window; repetitions: the
    // mean of each one's rate.
    let rate_of = |count: u64, each: fn(&ClassResult) -> f64| {
        if parts {
            rate(count, duration_s)
        } else {
            Mean.figure(classes, each)
        }
    };
    let mut error_counts = ErrorCounts::default();
    classes
        .iter()
        .for_each(|c| error_counts.add(&c.error_counts));
    let (latency_us, latency_hdr) = match &mut mode {
        Mode::Parts(p) => exact::latency(classes, &mut **p),
        Mode::Repetitions => (
            all.each(|c| c.latency_us.as_ref())
                .map(|l| mean::latency(&l)),
            // A mean over repetitions has no one distribution of its own; a
            // single repetition keeps its own.
            match classes {
                [one] => one.latency_hdr.clone(),
                _ => None,
            },
        ),
    };
    let latency_p99_us = latency_us.map(|l| l.p99);
    let work = Work {
        transactions,
        payload_bytes: tx_bytes + rx_bytes,
    };
    ClassResult {
        workload: first.workload.clone(),
        notation: first.notation.clone(),
        kind: first.kind,
        stream_direction: first.stream_direction,
        clients: u32::try_from(rule(Sum, First).count(classes, |c| u64::from(c.clients)))
            .unwrap_or(u32::MAX),
        request_bytes: first.request_bytes,
        response_bytes: first.response_bytes,
        transactions,
        duration_s,
        rate_tps: rate_of(transactions, |c| c.rate_tps),
        latency_us,
        latency_hdr,
        tx_bytes,
        rx_bytes,
        tx_bytes_per_s: rate_of(tx_bytes, |c| c.tx_bytes_per_s),
        rx_bytes_per_s: rate_of(rx_bytes, |c| c.rx_bytes_per_s),
        errors: error_counts.total(),
        error_counts,
        per_second_tps: match &mode {
            Mode::Parts(p) => exact::per_second(classes, &**p),
            Mode::Repetitions => mean::per_second(&all),
        },
        cpu: match &mut mode {
            Mode::Parts(p) => p.cpu(work),
            Mode::Repetitions => all
                .each(|c| c.cpu.as_ref())
                .map(|cpu| mean::cpu_figures(&cpu)),
        },
        memory: match &mut mode {
            Mode::Parts(p) => p.memory(),
            Mode::Repetitions => all.each(|c| c.memory.as_ref()).map(|m| mean::memory(&m)),
        },
        repetitions: None,
        population: match &mut mode {
            Mode::Parts(p) => population::of_parts(classes, &mut **p, latency_p99_us),
            Mode::Repetitions => population::of_repetitions(classes, latency_p99_us),
        },
        tls: match &mut mode {
            Mode::Parts(p) => exact::tls(classes, &mut **p),
            Mode::Repetitions => all.each(|c| c.tls.as_ref()).map(|t| mean::tls(&t)),
        },
        stall_band: classes
            .iter()
            .filter_map(|c| c.stall_band)
            .reduce(|a, b| a.add(&b)),
        served_by: served_by(classes.iter().map(|c| c.served_by)),
        http_status: http_status(classes, rule(Sum, Mean)),
        // Setups are counted like errors: summed either way.
        sessions: classes.iter().filter_map(|c| c.sessions.as_ref()).fold(
            None,
            |acc: Option<Sessions>, s| {
                let mut acc = acc.unwrap_or_default();
                acc.add(s);
                Some(acc)
            },
        ),
        steps: exact::steps(classes),
    }
}

/// The responses by status code of several measurements: each code's count
/// by `rule` (a measurement without the code counts 0 there); `None` when
/// none has codes (a protocol without statuses).
fn http_status(classes: &[&ClassResult], rule: Rule) -> Option<HttpStatus> {
    let codes: std::collections::BTreeSet<u16> = classes
        .iter()
        .filter_map(|c| c.http_status.as_ref())
        .flat_map(|s| s.codes.keys().copied())
        .collect();
    if classes.iter().all(|c| c.http_status.is_none()) {
        return None;
    }
    let count = |c: &ClassResult, code: u16| {
        c.http_status
            .as_ref()
            .and_then(|s| s.codes.get(&code).copied())
            .unwrap_or(0)
    };
    let codes = codes
        .into_iter()
        .map(|code| (code, rule.count(classes, |c| count(c, code))))
        .collect();
    Some(HttpStatus { codes })
}

/// `count / duration_s`, and 0 for an empty window.
pub fn rate(count: u64, duration_s: f64) -> f64 {
    if duration_s > 0.0 {
        count as f64 / duration_s
    } else {
        0.0
    }
}

/// The mean of a mix's CPU figures over its repetitions (as a class's CPU
/// is averaged); `None` when `runs` is empty.
pub fn mean_cpu(runs: &[&CpuFigures]) -> Option<CpuFigures> {
    (!runs.is_empty()).then(|| mean::cpu_figures(&Of(runs.to_vec())))
}

/// The backends' connection counts of several runs of one class (its
/// repetitions, or its agents' shares) added up; `None` when one of them
/// has none (a part counted by nobody is unknown).
pub fn served_by(all: impl Iterator<Item = Option<ServedBy>>) -> Option<ServedBy> {
    all.reduce(|a, b| a.zip(b).map(|(a, b)| a.add(&b)))
        .flatten()
}

#[cfg(test)]
mod tests;
