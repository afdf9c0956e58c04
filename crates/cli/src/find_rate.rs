//! `run WORKLOAD --find-max-rate --p99-under 1ms`: the highest open-loop
//! rate whose p99 latency, measured from the intended send time (coordinated
//! omission corrected), stays under a bound. A bounded search over the `rate`
//! setting: double from the start rate (`--rate`, else 1000/s) while the bound
//! holds, then bisect (geometrically) between the last rate that held and the
//! first that did not, until they are within 2% or the step budget (12 runs
//! by default) is spent. Each step is a whole run (its own warm-up and
//! window), stored like any other with the labels `search=find-max-rate` and
//! `search.rate=<rate>`.
//!
//! These two are `run` flags, not settings of the table: they describe a
//! series of runs, not one run; every run of the series stores the `rate` it
//! was offered in its settings.

use std::fmt::Write as _;
use std::time::Duration;

use stackbench_metrics::RunRecord;
use stackbench_model::settings::{PerSecond, RunSettings};
use stackbench_model::{units, Workload};
use stackbench_results::store::{Labels, Store};

use crate::exit::{usage, FAILED_CHECK, INCOMPLETE, OK};
use crate::session;

/// Rate where the search starts without `--rate`.
const START_PER_S: f64 = 1000.0;
/// The search ends when the failing rate is within this factor of the passing one.
const RESOLUTION: f64 = 1.02;

/// What `run` hands to the search.
pub struct Search<'a> {
    pub workloads: &'a [Workload],
    pub settings: RunSettings,
    pub steps: u32,
    pub p99_under: &'a str,
    pub labels: &'a Labels,
    pub store: Option<&'a mut Store>,
    pub json: bool,
}

/// One step of the search: the rate offered and what the run measured.
struct Step {
    offered: PerSecond,
    record: RunRecord,
    meets: bool,
}

/// Checks the flags, runs the search and prints the table; the exit status
/// is 0 when a rate met the bound, 1 when none did, 3 when a run was cut short.
pub fn run(search: Search) -> anyhow::Result<i32> {
    let bound = check(&search)?;
    let mut store = search.store;
    let mut rate = search
        .settings
        .rate
        .unwrap_or(PerSecond::new(START_PER_S).expect("positive"));
    let (mut pass, mut fail): (Option<PerSecond>, Option<PerSecond>) = (None, None);
    let mut steps: Vec<Step> = Vec::new();
    let mut sessions = session::Sessions::default();
    for n in 1..=search.steps {
        eprintln!(
            "stackbench: find-max-rate step {n}/{}: {rate}",
            search.steps
        );
        let mut s = search.settings.clone();
        s.rate = Some(rate);
        let plan = session::resolve(s, search.workloads.to_vec(), false, !search.json)?;
        let record = sessions.execute(&plan)?;
        if let Some(store) = store.as_deref_mut() {
            let mut labels = search.labels.clone();
            labels.insert("search".into(), "find-max-rate".into());
            labels.insert("search.rate".into(), rate.to_string());
            session::store_record(store, &record, &labels);
        }
        let meets = meets(&record, bound);
        let complete = record.complete;
        steps.push(Step {
            offered: rate,
            record,
            meets,
        });
        if !complete {
            break;
        }
        if meets {
            pass = Some(higher(pass, rate));
        } else {
            fail = Some(lower(fail, rate));
        }
        match next_rate(pass, fail) {
            Some(next) => rate = next,
            None => break,
        }
    }
    print(&steps, search.p99_under, pass, search.json);
    Ok(if steps.iter().any(|s| !s.record.complete) {
        INCOMPLETE
    } else if pass.is_some() {
        OK
    } else {
        FAILED_CHECK
    })
}

/// The flags the search needs, checked before any run.
fn check(search: &Search) -> anyhow::Result<Duration> {
    let bound = units::parse_duration(search.p99_under)
        .or_else(|e| usage(format!("--p99-under {}: {e}", search.p99_under)))?;
    if bound.is_zero() {
        return usage("--p99-under 0s: no latency is under zero; give a bound such as 1ms");
    }
    if !(2..=30).contains(&search.steps) {
        return usage(format!(
            "--find-max-rate {}: out of range: use 2 to 30 steps",
            search.steps
        ));
    }
    if search.workloads.len() != 1 {
        return usage("--find-max-rate searches one workload: give exactly one");
    }
    if let Some(c) = search.workloads[0]
        .classes
        .iter()
        .find(|c| c.pacing.is_some())
    {
        return usage(format!(
            "--find-max-rate varies the rate setting, which {c} overrides with its own pacing: \
             remove the @… from the notation"
        ));
    }
    Ok(bound)
}

/// Whether a run met the bound: complete, every class's corrected p99 under
/// it, and no intended send dropped.
fn meets(record: &RunRecord, bound: Duration) -> bool {
    let bound_us = bound.as_secs_f64() * 1e6;
    record.complete
        && !record.classes.is_empty()
        && record.classes.iter().all(|c| {
            c.transactions > 0
                && c.latency_us.is_some_and(|l| l.p99 < bound_us)
                && c.population.as_ref().is_none_or(|p| p.dropped == 0)
        })
}

fn higher(a: Option<PerSecond>, b: PerSecond) -> PerSecond {
    a.filter(|a| a.per_s() > b.per_s()).unwrap_or(b)
}

fn lower(a: Option<PerSecond>, b: PerSecond) -> PerSecond {
    a.filter(|a| a.per_s() < b.per_s()).unwrap_or(b)
}

/// The next rate to try: double until a failure, halve until a success,
/// then the geometric middle; `None` when the bracket is tight enough.
fn next_rate(pass: Option<PerSecond>, fail: Option<PerSecond>) -> Option<PerSecond> {
    let next = match (pass, fail) {
        (Some(p), None) => p.per_s() * 2.0,
        (None, Some(f)) => f.per_s() / 2.0,
        (Some(p), Some(f)) if f.per_s() / p.per_s() > RESOLUTION => (p.per_s() * f.per_s()).sqrt(),
        _ => return None,
    };
    // Whole transactions per second read better and lose nothing.
    let rounded = if next >= 10.0 { next.round() } else { next };
    PerSecond::new(rounded)
}

fn print(steps: &[Step], bound: &str, pass: Option<PerSecond>, json: bool) {
    if json {
        let records: Vec<&RunRecord> = steps.iter().map(|s| &s.record).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&records).expect("records serialise")
        );
        return;
    }
    print!("{}", table(steps, bound, pass));
}

/// The latency-against-offered-rate table, in the order the rates were tried.
fn table(steps: &[Step], bound: &str, pass: Option<PerSecond>) -> String {
    let mut out = format!(
        "{:>14} {:>12} {:>10} {:>12} {:>12} {:>8} {:>8}  p99 < {bound}\n",
        "offered tr/s", "achieved", "p50 µs", "p99 µs", "p99 uncorr", "late", "dropped"
    );
    for step in steps {
        for c in &step.record.classes {
            let p = c.population.as_ref();
            let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
            let uncorrected = us(p.and_then(|p| p.latency_uncorrected_us).map(|u| u.p99));
            let verdict = match (step.record.complete, step.meets) {
                (false, _) => "incomplete",
                (true, true) => "yes",
                (true, false) => "no",
            };
            let _ = writeln!(
                out,
                "{:>14} {:>12.1} {:>10} {:>12} {:>12} {:>8} {:>8}  {verdict}",
                step.offered.to_string(),
                c.rate_tps,
                us(c.latency_us.map(|l| l.p50)),
                us(c.latency_us.map(|l| l.p99)),
                uncorrected,
                p.map_or(0, |p| p.late),
                p.map_or(0, |p| p.dropped),
            );
        }
    }
    match pass {
        Some(r) => {
            let _ = writeln!(out, "highest offered rate with p99 under {bound}: {r}");
        }
        None => {
            let _ = writeln!(
                out,
                "no offered rate tried had p99 under {bound}: start lower with --rate"
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--find-max-rate` alone (run_cmd's default_missing_value).
    const DEFAULT_STEPS: u32 = 12;

    fn r(x: f64) -> Option<PerSecond> {
        PerSecond::new(x)
    }

    #[test]
    fn doubles_then_bisects_then_stops() {
        assert_eq!(next_rate(r(1000.0), None), r(2000.0));
        assert_eq!(next_rate(None, r(1000.0)), r(500.0));
        assert_eq!(next_rate(r(4000.0), r(16000.0)), r(8000.0));
        assert_eq!(next_rate(r(10_000.0), r(10_100.0)), None);
        // A search of at most 12 runs from 1000/s spans 1000/s to 2048000/s.
        let (mut pass, mut fail) = (None, None);
        let mut rate = r(1000.0).unwrap();
        let capacity = 37_000.0;
        let mut tried = 0;
        while tried < DEFAULT_STEPS {
            tried += 1;
            if rate.per_s() < capacity {
                pass = Some(higher(pass, rate));
            } else {
                fail = Some(lower(fail, rate));
            }
            match next_rate(pass, fail) {
                Some(n) => rate = n,
                None => break,
            }
        }
        let found = pass.unwrap().per_s();
        assert!(found < capacity && found > capacity / 1.1, "{found}");
    }
}
