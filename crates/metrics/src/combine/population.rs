//! A user population's figures (think time, open loop, connection ramp),
//! combined in either [`Mode`](super::Mode), field by field:
//!
//! | field | parts of one run | repetitions |
//! |---|---|---|
//! | `pacing`, `pacing_text`, `think_mean_s`, `arrivals` | first | first |
//! | `wait_mean_s` | mean weighted by transactions | mean (when every run has it) |
//! | `offered_rate_tps` | sum (each part offered its share) | first |
//! | `latency_uncorrected_us` | the one part's, else left out with a note | mean of runs (`min`/`max` the extremes) |
//! | `late`, `dropped` | sum | sum (as errors: one in any run stays visible) |
//! | `generator_lag_us`, `generator_lag_hdr` | histograms added, summarised from the sum (left out with a note when a part that sent on a schedule has none) | `p50`, `p99` the mean, `max` the largest; a histogram only of a single run |
//! | `generator_lag_p99_share_pct` | of the merged lag and latency p99 | of the mean lag and latency p99 |
//! | `connected` | sum | the fewest |
//! | `connect_s` | the longest | mean |
//!
//! Parts: the wait is weighted by transactions because each transaction of
//! a paced client is followed by one wait (the weights are the waits'
//! counts up to one per client at the window's edges); the percentiles of
//! the uncorrected latency travel without a histogram and cannot be added;
//! the lag's histogram travels (agent wire protocol 5), so the lag of a run
//! over agents is exact at any scale. Little's law N = X(R+Z) then holds of the merged figures when
//! it held of every part's: N and X are sums, R the merged histogram's mean
//! and Z a transaction-weighted mean (`warnings::check_little_law` runs on
//! it). Parts without population figures are left out of them; of
//! repetitions every run must have them.

use stackbench_record::{ClassResult, LagUs, PopulationFigures};

use super::exact::{generator_lag, only_one};
use super::mean::{self, Of};
use super::parts::Parts;
use crate::latency::generator_lag_p99_share_pct;

/// Of parts of one run: those that have population figures;
/// `latency_p99_us` is the merged latency's.
pub(super) fn of_parts(
    classes: &[&ClassResult],
    parts: &mut dyn Parts,
    latency_p99_us: Option<f64>,
) -> Option<PopulationFigures> {
    let have: Vec<(&PopulationFigures, u64)> = classes
        .iter()
        .filter_map(|c| c.population.as_ref().map(|p| (p, c.transactions)))
        .collect();
    let first = have.first()?.0;
    let waits: Vec<(f64, f64)> = have
        .iter()
        .filter_map(|(p, n)| p.wait_mean_s.map(|w| (w, *n as f64)))
        .collect();
    let weight: f64 = waits.iter().map(|(_, n)| n).sum();
    let offered: Option<f64> = have.iter().map(|(p, _)| p.offered_rate_tps).sum();
    let notation = &classes[0].notation;
    let (lag, lag_hdr) = generator_lag(classes, parts);
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
            parts,
        ),
        late: have.iter().map(|(p, _)| p.late).sum(),
        dropped: have.iter().map(|(p, _)| p.dropped).sum(),
        generator_lag_us: lag.map(LagUs::of),
        generator_lag_hdr: lag_hdr,
        generator_lag_p99_share_pct: generator_lag_p99_share_pct(
            lag.map(|l| l.p99),
            latency_p99_us,
        ),
        connected: have.iter().map(|(p, _)| p.connected).sum(),
        connect_s: have.iter().map(|(p, _)| p.connect_s).fold(0.0, f64::max),
    })
}

/// Of repetitions: when every run has them.
/// Of repetitions: when every run has them; `latency_p99_us` is the mean
/// latency's.
pub(super) fn of_repetitions(
    classes: &[&ClassResult],
    latency_p99_us: Option<f64>,
) -> Option<PopulationFigures> {
    let runs = Of(classes.to_vec()).each(|c| c.population.as_ref())?;
    let first = runs.first();
    let lag = runs.each(|p| p.generator_lag_us.as_ref()).map(|l| LagUs {
        p50: l.f(|l| l.p50),
        p99: l.f(|l| l.p99),
        max: l.max(|l| l.max),
    });
    Some(PopulationFigures {
        pacing: first.pacing,
        pacing_text: first.pacing_text.clone(),
        think_mean_s: first.think_mean_s,
        wait_mean_s: runs.opt(|p| p.wait_mean_s),
        offered_rate_tps: first.offered_rate_tps,
        arrivals: first.arrivals.clone(),
        latency_uncorrected_us: runs
            .each(|p| p.latency_uncorrected_us.as_ref())
            .map(|l| mean::latency(&l)),
        late: runs.0.iter().map(|p| p.late).sum(),
        dropped: runs.0.iter().map(|p| p.dropped).sum(),
        generator_lag_us: lag,
        // A mean has no one distribution; a single run keeps its own.
        generator_lag_hdr: match classes {
            [one] => one
                .population
                .as_ref()
                .and_then(|p| p.generator_lag_hdr.clone()),
            _ => None,
        },
        generator_lag_p99_share_pct: generator_lag_p99_share_pct(
            lag.map(|l| l.p99),
            latency_p99_us,
        ),
        connected: runs.0.iter().map(|p| p.connected).min().unwrap_or(0),
        connect_s: runs.f(|p| p.connect_s),
    })
}
