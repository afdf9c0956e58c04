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
//!
//! The search assumes p99 rises with the offered rate. Two things make its
//! answer weak, and both are said under the table and stored in the steps'
//! `warnings` (so the JSON carries them): a step whose p99 rests on fewer than
//! 1000 transactions (`p99_few_samples`: fewer than 10 lie above it, so one
//! slow transaction decides the step), and a search that was not monotonic
//! (`search_not_monotonic`: a rate met the bound above one that did not, so
//! the bound lies inside the run-to-run noise). The second is known only
//! when the search ends, after the steps were stored: the store keeps the
//! first, the printed records both.

use std::fmt::Write as _;
use std::time::Duration;

use stackbench_model::settings::{PerSecond, RunSettings};
use stackbench_model::{units, Workload};
use stackbench_record::{RunRecord, WarningRecord};

use crate::error::{input, RunError};
use crate::resolve::resolve;
use crate::session::Runner;

/// Rate where the search starts without `--rate`.
const START_PER_S: f64 = 1000.0;
/// The search ends when the failing rate is within this factor of the passing one.
const RESOLUTION: f64 = 1.02;
/// Fewest transactions behind a p99 that decides a step: n/100 of them lie
/// above p99, and under 1000 that is fewer than 10, so a single slow
/// transaction moves the p99 and with it the step's verdict.
const P99_MIN_SAMPLES: u64 = 1000;

/// What `run` hands to the search.
pub struct Search<'a> {
    pub workloads: &'a [Workload],
    pub settings: RunSettings,
    /// The most runs the search makes.
    pub steps: u32,
    /// The p99 bound as the user wrote it (`--p99-under`).
    pub p99_under: &'a str,
    /// Print the placement line of each step ([`ResolvedRun::announce`]).
    ///
    /// [`ResolvedRun::announce`]: crate::resolve::ResolvedRun
    pub announce: bool,
}

/// One step of the search: the rate offered and what the run measured.
pub struct Step {
    pub offered: PerSecond,
    pub record: RunRecord,
    /// Complete, and every class's corrected p99 under the bound.
    pub meets: bool,
}

/// What the search found.
pub struct Found {
    /// The steps in the order the rates were tried.
    pub steps: Vec<Step>,
    /// The highest rate that met the bound, if any did.
    pub pass: Option<PerSecond>,
}

impl Found {
    /// Whether a step was cut short (the search stopped there).
    pub fn incomplete(&self) -> bool {
        self.steps.iter().any(|s| !s.record.complete)
    }

    /// The latency-against-offered-rate table (see [`table`]).
    pub fn table(&self, bound: &str) -> String {
        table(&self.steps, bound, self.pass)
    }
}

/// Checks the flags and runs the search on `runner`; `on_step` gets each
/// step's rate and record as soon as it is measured (to store it). The
/// `search_not_monotonic` warnings are known only at the end: they are in
/// the returned records, not in those `on_step` saw.
pub fn find_max_rate(
    runner: &mut Runner,
    search: Search,
    on_step: &mut dyn FnMut(PerSecond, &RunRecord),
) -> Result<Found, RunError> {
    let bound = check(&search)?;
    let mut rate = search
        .settings
        .rate
        .unwrap_or(PerSecond::new(START_PER_S).expect("positive"));
    let (mut pass, mut fail): (Option<PerSecond>, Option<PerSecond>) = (None, None);
    let mut steps: Vec<Step> = Vec::new();
    for n in 1..=search.steps {
        runner
            .observer()
            .note(&format!("find-max-rate step {n}/{}: {rate}", search.steps));
        let mut s = search.settings.clone();
        s.rate = Some(rate);
        let run = resolve(s, search.workloads.to_vec(), false, search.announce)?;
        let mut record = runner.execute(&run)?;
        let thin = few_samples(&record);
        record.warnings.extend(thin);
        on_step(rate, &record);
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
    not_monotonic(&mut steps);
    Ok(Found { steps, pass })
}

/// The flags the search needs, checked before any run.
fn check(search: &Search) -> Result<Duration, RunError> {
    let bound = units::parse_duration(search.p99_under)
        .or_else(|e| input(format!("--p99-under {}: {e}", search.p99_under)))?;
    if bound.is_zero() {
        return input("--p99-under 0s: no latency is under zero; give a bound such as 1ms");
    }
    if !(2..=30).contains(&search.steps) {
        return input(format!(
            "--find-max-rate {}: out of range: use 2 to 30 steps",
            search.steps
        ));
    }
    if search.workloads.len() != 1 {
        return input("--find-max-rate searches one workload: give exactly one");
    }
    if let Some(c) = search.workloads[0]
        .classes
        .iter()
        .find(|c| c.pacing.is_some())
    {
        return input(format!(
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

/// `p99_few_samples` for each class of a step whose p99 rests on fewer than
/// [`P99_MIN_SAMPLES`] transactions, with the step length that would give enough.
fn few_samples(record: &RunRecord) -> Vec<WarningRecord> {
    record
        .classes
        .iter()
        .filter(|c| c.transactions < P99_MIN_SAMPLES)
        .map(|c| {
            let longer = if c.rate_tps > 0.0 {
                let s = (P99_MIN_SAMPLES as f64 / c.rate_tps).ceil();
                format!("--duration {s}s or more gives {P99_MIN_SAMPLES} at this rate")
            } else {
                "lengthen the steps with --duration".to_string()
            };
            WarningRecord {
                code: "p99_few_samples".into(),
                message: format!(
                    "the p99 of {} rests on {} transactions: fewer than 10 lie above it, so one slow transaction decides the step; {longer}",
                    c.notation, c.transactions
                ),
                class: Some(c.notation.clone()),
            }
        })
        .collect()
}

/// Finds each pair of complete steps where a rate met the bound above a
/// rate that did not, adds one `search_not_monotonic` per step concerned
/// (naming every pair it is in) to its record, and returns one message per
/// pair for the table.
fn not_monotonic(steps: &mut [Step]) -> Vec<String> {
    let complete = |s: &&Step| s.record.complete;
    let mut pairs = Vec::new();
    for (i, high) in steps
        .iter()
        .enumerate()
        .filter(|(_, s)| complete(s) && s.meets)
    {
        for (j, low) in steps
            .iter()
            .enumerate()
            .filter(|(_, s)| complete(s) && !s.meets)
        {
            if high.offered.per_s() > low.offered.per_s() {
                pairs.push((i, j));
            }
        }
    }
    let message = |i: usize, j: usize| {
        format!(
            "the search was not monotonic: {} met the bound but {}, a lower rate, did not; the bound lies within the run-to-run noise here, so the highest passing rate is not a capacity: repeat the search with longer steps (--duration)",
            steps[i].offered, steps[j].offered
        )
    };
    let messages: Vec<String> = pairs.iter().map(|&(i, j)| message(i, j)).collect();
    // One warning per step, naming every rate it conflicts with.
    for k in 0..steps.len() {
        let others: Vec<String> = pairs
            .iter()
            .filter_map(|&(i, j)| match k {
                _ if k == i => Some(steps[j].offered.to_string()),
                _ if k == j => Some(steps[i].offered.to_string()),
                _ => None,
            })
            .collect();
        if others.is_empty() {
            continue;
        }
        let (this, others) = (steps[k].offered.to_string(), others.join(", "));
        let what = if steps[k].meets {
            format!("{this} met the bound but the lower {others} did not")
        } else {
            format!("{this} did not meet the bound but the higher {others} did")
        };
        steps[k].record.warnings.push(WarningRecord {
            code: "search_not_monotonic".into(),
            message: format!(
                "the search was not monotonic: {what}; the bound lies within the run-to-run noise here, so the highest passing rate is not a capacity: repeat the search with longer steps (--duration)"
            ),
            class: None,
        });
    }
    messages
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
    let mut said = Vec::new();
    for w in steps.iter().flat_map(|s| &s.record.warnings) {
        if matches!(w.code.as_str(), "p99_few_samples" | "search_not_monotonic")
            && !said.contains(&&w.message)
        {
            let _ = writeln!(out, "warning: {}", w.message);
            said.push(&w.message);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--find-max-rate` alone (the `run` flag's default_missing_value).
    const DEFAULT_STEPS: u32 = 12;

    fn r(x: f64) -> Option<PerSecond> {
        PerSecond::new(x)
    }

    fn step(rate: f64, p99_us: f64, transactions: u64, meets: bool) -> Step {
        let mut record =
            stackbench_results::fixtures::record("RR1(1B/1B)", rate, 50.0, p99_us, 1.0);
        record.classes[0].transactions = transactions;
        Step {
            offered: PerSecond::new(rate).unwrap(),
            record,
            meets,
        }
    }

    /// A search that ended on 125/s with steps that contradict each other and
    /// p99s from ~125 transactions used to say neither; now it says both.
    #[test]
    fn a_search_says_when_it_was_not_monotonic_and_p99_rests_on_few_samples() {
        let mut steps = vec![
            step(1000.0, 9000.0, 10_000, false),
            step(500.0, 9000.0, 5000, false),
            step(250.0, 500.0, 2500, true),
            step(125.0, 600.0, 125, true),
            step(177.0, 2000.0, 1770, false),
        ];
        let thin = few_samples(&steps[3].record);
        assert_eq!(thin.len(), 1);
        assert_eq!(thin[0].code, "p99_few_samples");
        assert!(
            thin[0].message.contains("rests on 125 transactions"),
            "{:?}",
            thin[0]
        );
        assert!(thin[0].message.contains("--duration 8s"), "{:?}", thin[0]);
        assert!(few_samples(&steps[2].record).is_empty());
        steps[3].record.warnings.extend(thin);
        let said = not_monotonic(&mut steps);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("250/s met the bound but 177/s"),
            "{}",
            said[0]
        );
        let flagged = |s: &Step| {
            s.record
                .warnings
                .iter()
                .any(|w| w.code == "search_not_monotonic")
        };
        assert!(flagged(&steps[2]) && flagged(&steps[4]) && !flagged(&steps[3]));
        // One warning per step, however many pairs it is in.
        for s in &steps {
            let n = s
                .record
                .warnings
                .iter()
                .filter(|w| w.code == "search_not_monotonic");
            assert!(n.count() <= 1);
        }
        // The table and the JSON (the records) both carry them.
        let text = table(&steps, "1ms", PerSecond::new(250.0));
        assert!(
            text.contains("warning: the search was not monotonic"),
            "{text}"
        );
        assert!(
            text.contains("warning: the p99 of RR1(1B/1B) rests on 125"),
            "{text}"
        );
        let json = serde_json::to_string(&steps[4].record).unwrap();
        assert!(json.contains("search_not_monotonic"), "{json}");
    }

    #[test]
    fn a_monotonic_search_is_not_flagged() {
        let mut steps = vec![
            step(1000.0, 500.0, 10_000, true),
            step(2000.0, 2000.0, 20_000, false),
            step(1414.0, 700.0, 14_140, true),
        ];
        assert!(not_monotonic(&mut steps).is_empty());
        assert!(steps.iter().all(|s| s.record.warnings.is_empty()));
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
