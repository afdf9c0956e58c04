//! The Universal Scalability Law over a client sweep: the planner's fit
//! (`stackbench_plan::usl`) applied to every run's (N, rate), plus an
//! interval for the peak rate, and the sentences the report prints.
//!
//! Design notes:
//! - Every repetition's rate is an observation (the fit takes repeated N), so
//!   the residual variance includes the run-to-run spread and the intervals
//!   are honest about it; fitting the means would hide it.
//! - The USL describes what contention and coherency do to a load that
//!   saturates something. A closed loop without think time does by
//!   construction (each client always has a request in flight); a think-time
//!   population's rate is N/(R+Z) and an open loop's is the offered rate, by
//!   construction, whatever the system does. Those are fitted only when the
//!   measured rate falls more than 10% below that unloaded expectation
//!   somewhere in the sweep: for think time, when R rose by more than a ninth
//!   of R₁+Z (R₁ at the smallest N), the rise a rate can show. Otherwise the
//!   sweep is described instead (what R did, and that no saturation was
//!   reached), since a fit would call it "linear" by construction.
//! - The planner gives N* with a delta-method interval but the peak rate
//!   X* = X(N*) as a bare number. Its interval here is the delta method too:
//!   at the peak ∂X/∂N = 0, so ∂X*/∂θ is the model's gradient at N = N*
//!   (the envelope theorem), and Var X* = gᵀΣg with Σ = s²(JᵀJ)⁻¹,
//!   s² = RSS/(n−3), rebuilt from the fitted coefficients. It is left out
//!   when a coefficient sits on a bound (the planner gives it no error).

use stackbench_metrics::stats::{self, t_quantile};
use stackbench_plan::report::sig;
use stackbench_plan::usl::{plan, Coefficients, Estimate, UslInput, UslPlan};
use stackbench_record::PacingMode;

use super::{Point, Series, Stat, LEVEL_PCT};
use crate::compare::output::format_value;

/// Fewest runs and distinct client counts the planner's fit accepts.
const MIN_RUNS: usize = 4;
const MIN_COUNTS: usize = 3;
/// A paced sweep saturates when a rate falls this far below its unloaded
/// expectation (see the module notes); run-to-run noise stays well inside it.
const SATURATION_SHORTFALL: f64 = 0.10;

/// A sweep whose clients pace themselves (think time or an offered rate).
#[derive(Debug, Clone, PartialEq)]
pub struct Paced {
    pub pacing: PacingMode,
    /// Smallest and largest client count.
    pub n_first: f64,
    pub n_last: f64,
    /// Mean response time at those, µs.
    pub r_first_us: f64,
    pub r_last_us: f64,
    /// Mean think time Z, seconds (think-time pacing).
    pub think_s: Option<f64>,
    /// The largest shortfall of a mean rate below its unloaded expectation,
    /// as a fraction (0 when every rate met or exceeded it).
    pub shortfall: f64,
    /// Where it was found.
    pub shortfall_at_n: f64,
}

impl Paced {
    /// Whether the sweep saturated something (see the module notes).
    pub fn saturated(&self) -> bool {
        self.shortfall > SATURATION_SHORTFALL
    }

    fn population(&self) -> String {
        match (self.pacing, self.think_s) {
            (PacingMode::Open, _) => {
                "open-loop population: the rate follows the offered rate".into()
            }
            (_, Some(z)) => format!(
                "think-time population (Z = {}): the rate follows N/(R+Z)",
                time_us(z * 1e6)
            ),
            (_, None) => "think-time population: the rate follows N/(R+Z)".into(),
        }
    }

    fn expectation(&self) -> &'static str {
        match self.pacing {
            PacingMode::Open => "the offered rate",
            _ => "N/(R₁+Z) with R₁ at the smallest N",
        }
    }

    /// `R rose from 85 µs at N = 1 to 120 µs at N = 64`.
    fn response(&self) -> String {
        let verb = if self.r_last_us >= self.r_first_us {
            "rose"
        } else {
            "fell"
        };
        format!(
            "R {verb} from {} at N = {} to {} at N = {}",
            time_us(self.r_first_us),
            sig(self.n_first, 6),
            time_us(self.r_last_us),
            sig(self.n_last, 6)
        )
    }
}

impl std::fmt::Display for Paced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (pct, limit) = (self.shortfall * 100.0, SATURATION_SHORTFALL * 100.0);
        if self.saturated() {
            write!(
                f,
                "{} by construction; {}, and the rate at N = {} is {}% below {}: the sweep saturates, so the Universal Scalability Law is fitted",
                self.population(),
                self.response(),
                sig(self.shortfall_at_n, 6),
                sig(pct, 3),
                self.expectation()
            )
        } else {
            write!(
                f,
                "{} by construction; {}; every rate is within {limit:.0}% of {} (at most {}% below); no saturation reached — the Universal Scalability Law needs a sweep that saturates (more clients, {}or the closed loop), so it is not fitted",
                self.population(),
                self.response(),
                self.expectation(),
                sig(pct.max(0.0), 2),
                if self.pacing == PacingMode::Open { "a higher offered rate " } else { "a shorter think time " }
            )
        }
    }
}

/// `85 µs`, `1.20 ms`, `1.00 s`.
fn time_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{} s", sig(us / 1e6, 3))
    } else if us >= 1e3 {
        format!("{} ms", sig(us / 1e3, 3))
    } else {
        format!("{} µs", sig(us, 3))
    }
}

/// The rate a point would have with nothing saturated: the offered rate (open
/// loop), N/(R₁+Z) (think time, Z measured at the point), or, without a Z,
/// the first point's rate per client times N.
fn unloaded_rate(p: &Point, first: &Point) -> Option<f64> {
    match p.pacing {
        PacingMode::Open => p.offered_rate_tps,
        _ => match p.think_s {
            Some(z) => Some(p.x / (first.latency_mean_us.mean / 1e6 + z)),
            None => Some(first.rate_tps.mean / first.x * p.x),
        },
    }
}

/// What a paced series shows; `None` for the closed loop.
pub fn paced(series: &Series) -> Option<Paced> {
    let pacing = series
        .points
        .iter()
        .map(|p| p.pacing)
        .find(|m| *m != PacingMode::Closed)?;
    let (first, last) = (series.points.first()?, series.points.last()?);
    let (shortfall, shortfall_at_n) = series
        .points
        .iter()
        .filter_map(|p| {
            let want = unloaded_rate(p, first).filter(|w| *w > 0.0)?;
            Some((1.0 - p.rate_tps.mean / want, p.x))
        })
        .fold(
            (0.0, first.x),
            |best, s| if s.0 > best.0 { s } else { best },
        );
    Some(Paced {
        pacing,
        n_first: first.x,
        n_last: last.x,
        r_first_us: first.latency_mean_us.mean,
        r_last_us: last.latency_mean_us.mean,
        think_s: stats::mean(
            &series
                .points
                .iter()
                .filter_map(|p| p.think_s)
                .collect::<Vec<_>>(),
        ),
        shortfall,
        shortfall_at_n,
    })
}

/// Stored runs taken as one sweep, each the class `notation` of the record
/// at `path` (as `plan usl --from` fits them): what [`paced`] says of those
/// that are paced populations. A file that is not a run record counts as no
/// point; whoever loaded the runs for their figures has refused it already.
pub fn paced_runs(runs: &[(String, String)]) -> Option<Paced> {
    let mut points: Vec<Point> = runs
        .iter()
        .filter_map(|(path, notation)| {
            let text = std::fs::read_to_string(path).ok()?;
            let record =
                stackbench_record::record_from_json(serde_json::from_str(&text).ok()?).ok()?;
            let class = record.classes.iter().find(|c| &c.notation == notation)?;
            population_point(class)
        })
        .collect();
    points.sort_by(|a, b| a.x.total_cmp(&b.x));
    paced(&Series {
        variant: String::new(),
        second: None,
        label: String::new(),
        points,
    })
}

/// A stored class as a sweep point, when it is a paced population (think
/// time or an offered rate); `None` for the closed loop.
fn population_point(c: &stackbench_record::ClassResult) -> Option<Point> {
    let p = c.population.as_ref()?;
    let l = c.latency_us?;
    let one = |v: f64| Stat::of(vec![v]);
    Some(Point {
        x: f64::from(c.clients),
        x_text: c.clients.to_string(),
        runs: 1,
        rate_tps: one(c.rate_tps)?,
        latency_mean_us: one(l.mean)?,
        latency_p50_us: one(l.p50)?,
        latency_p99_us: one(l.p99)?,
        cpu_client_us_per_tran: None,
        cpu_server_us_per_tran: None,
        pacing: p.pacing,
        think_s: p.wait_mean_s.or(p.think_mean_s),
        offered_rate_tps: p.offered_rate_tps,
    })
}

/// A fitted series.
#[derive(Debug, Clone, PartialEq)]
pub struct UslFit {
    pub plan: UslPlan,
    /// X(N*) with its interval; `None` when there is no peak (κ ≈ 0).
    pub peak_rate_tps: Option<Estimate>,
    pub runs: usize,
    pub counts: usize,
    /// For a paced series that saturates: what its pacing showed.
    pub paced: Option<Paced>,
}

impl UslFit {
    /// The fitted coefficients (for drawing the curve).
    pub fn coefficients(&self) -> Coefficients {
        Coefficients {
            sigma: self.plan.sigma.value,
            kappa: self.plan.kappa.value,
            lambda: self.plan.lambda.value,
        }
    }
}

/// Why a series has no fit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UslFailure {
    #[error("too few client counts for a Universal Scalability Law fit: it needs at least {MIN_RUNS} runs at {MIN_COUNTS} or more client counts, and this series has {runs} runs at {counts}")]
    TooFew { runs: usize, counts: usize },
    #[error("the Universal Scalability Law fit failed: {0}")]
    Fit(String),
    /// A paced sweep that saturates nothing: the sentence says what it shows.
    #[error("{0}")]
    NotSaturated(Paced),
}

/// Fits the USL to every run's (N, rate) of `series` (N = the x value).
/// A paced series is fitted only when it saturates (see the module notes).
pub fn fit_usl(series: &Series) -> Result<UslFit, UslFailure> {
    let paced = paced(series);
    if let Some(p) = paced.as_ref().filter(|p| !p.saturated()) {
        return Err(UslFailure::NotSaturated(p.clone()));
    }
    let points: Vec<(f64, f64)> = series
        .points
        .iter()
        .flat_map(|p| p.rate_tps.values.iter().map(move |&r| (p.x, r)))
        .collect();
    let counts = series.points.iter().filter(|p| p.x > 0.0).count();
    let runs = points.len();
    if runs < MIN_RUNS || counts < MIN_COUNTS {
        return Err(UslFailure::TooFew { runs, counts });
    }
    let input = UslInput {
        points: points.clone(),
        confidence: LEVEL_PCT / 100.0,
        at_users: Vec::new(),
        at_throughput: Vec::new(),
    };
    let plan = plan(&input).map_err(|e| UslFailure::Fit(e.to_string()))?;
    let peak_rate_tps = peak_rate(&plan, &points);
    Ok(UslFit {
        plan,
        peak_rate_tps,
        runs,
        counts,
        paced,
    })
}

/// ∂X/∂(σ, κ, λ) at `n`.
fn gradient(c: &Coefficients, n: f64) -> [f64; 3] {
    let d = 1.0 + c.sigma * (n - 1.0) + c.kappa * n * (n - 1.0);
    let common = -c.lambda * n * (n - 1.0) / (d * d);
    [common, common * n, n / d]
}

/// Inverse of a symmetric positive 3×3 matrix, on its correlation-scaled form
/// (κ's column is ~10⁸ times σ's); `None` when singular.
fn inverse(a: &[[f64; 3]; 3]) -> Option<[[f64; 3]; 3]> {
    let s: Vec<f64> = (0..3).map(|i| a[i][i].sqrt()).collect();
    if s.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
        return None;
    }
    let m: [[f64; 3]; 3] =
        std::array::from_fn(|i| std::array::from_fn(|j| a[i][j] / (s[i] * s[j])));
    let cof = |i: usize, j: usize| {
        let (r0, r1) = ((i + 1) % 3, (i + 2) % 3);
        let (c0, c1) = ((j + 1) % 3, (j + 2) % 3);
        m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]
    };
    let det: f64 = (0..3).map(|j| m[0][j] * cof(0, j)).sum();
    if det.abs() < 1e-14 {
        return None;
    }
    // inverse[i][j] = cofactor(j, i) / det, unscaled.
    Some(std::array::from_fn(|i| {
        std::array::from_fn(|j| cof(j, i) / det / (s[i] * s[j]))
    }))
}

/// X* = X(N*) with its delta-method interval (see the module notes).
fn peak_rate(plan: &UslPlan, points: &[(f64, f64)]) -> Option<Estimate> {
    let n_star = plan.peak_n?.value;
    let c = Coefficients {
        sigma: plan.sigma.value,
        kappa: plan.kappa.value,
        lambda: plan.lambda.value,
    };
    let value = c.throughput(n_star);
    let bare = Estimate {
        value,
        std_error: None,
        ci_low: None,
        ci_high: None,
        unbounded_above: false,
    };
    let free = [&plan.sigma, &plan.kappa, &plan.lambda]
        .iter()
        .all(|e| e.std_error.is_some());
    let dof = plan.degrees_of_freedom;
    if !free || dof == 0 {
        return Some(bare);
    }
    let mut jtj = [[0.0; 3]; 3];
    for &(n, _) in points {
        let j = gradient(&c, n);
        for r in 0..3 {
            for k in 0..3 {
                jtj[r][k] += j[r] * j[k];
            }
        }
    }
    let (Some(inv), Some(t)) = (inverse(&jtj), t_quantile(LEVEL_PCT, dof as u32)) else {
        return Some(bare);
    };
    let s2 = plan.rss / dof as f64;
    let g = gradient(&c, n_star);
    let var: f64 = (0..3)
        .map(|i| (0..3).map(|j| g[i] * inv[i][j] * g[j]).sum::<f64>())
        .sum::<f64>()
        * s2;
    let se = var.max(0.0).sqrt();
    // A rate is never negative: the interval is clipped at 0.
    Some(Estimate {
        value,
        std_error: Some(se),
        ci_low: Some((value - t * se).max(0.0)),
        ci_high: Some(value + t * se),
        unbounded_above: false,
    })
}

/// `21.7 clients (95% interval 21.6 … 21.8)`: the value and its unit, then
/// the interval, each number formatted by `fmt`.
fn estimate(e: &Estimate, unit: &str, fmt: &dyn Fn(f64) -> String) -> String {
    match (e.ci_low, e.ci_high) {
        (Some(lo), Some(hi)) => format!(
            "{}{unit} ({LEVEL_PCT:.0}% interval {} … {})",
            fmt(e.value),
            fmt(lo),
            fmt(hi)
        ),
        (Some(lo), None) if e.unbounded_above => format!(
            "{}{unit} ({LEVEL_PCT:.0}% interval {} … unbounded)",
            fmt(e.value),
            fmt(lo)
        ),
        _ => format!(
            "{}{unit} (no interval: a coefficient is at a bound)",
            fmt(e.value)
        ),
    }
}

/// What the fit says of the peak: claimed only when established.
fn peak_phrase(fit: &UslFit, num: &dyn Fn(f64) -> String) -> String {
    let p = &fit.plan;
    match (&p.peak_n, &fit.peak_rate_tps) {
        (Some(n), Some(x)) if p.peak_established => format!(
            "puts the peak at N* = {}, with a peak rate of {}",
            estimate(n, " clients", num),
            estimate(x, " tr/s", &format_value)
        ),
        (Some(n), _) => format!(
            "establishes no peak: κ's interval includes 0 (the point estimate N* = {})",
            estimate(n, " clients", num)
        ),
        _ => "finds no peak (κ ≈ 0)".to_string(),
    }
}

/// The report's sentences for one fitted (or failed) series, each starting
/// with `who` (e.g. `RR1(1B/1B), base`).
pub fn usl_sentences(who: &str, fit: &Result<UslFit, UslFailure>) -> Vec<String> {
    let fit = match fit {
        Ok(f) => f,
        Err(e) => return vec![format!("{who}: {e}.")],
    };
    let p = &fit.plan;
    let num = |x: f64| sig(x, 3);
    let mut out: Vec<String> = fit
        .paced
        .iter()
        .map(|paced| format!("{who}: {paced}."))
        .collect();
    out.extend([
        format!(
            "{who}: the Universal Scalability Law fitted to {} runs at {} client counts (R² = {}) {}; σ = {}, κ = {}, λ = {} tr/s at one client.",
            fit.runs,
            fit.counts,
            sig(p.r_squared, 4),
            peak_phrase(fit, &num),
            estimate(&p.sigma, "", &num),
            estimate(&p.kappa, "", &num),
            format_value(p.lambda.value),
        ),
        format!("{who}: verdict — {}.", p.verdict_text),
    ]);
    out.extend(p.warnings.iter().map(|w| format!("{who}: warning — {w}.")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::{Point, Stat};

    fn series(points: &[(f64, &[f64])]) -> Series {
        let stat = |v: &[f64]| Stat::of(v.to_vec()).unwrap();
        Series {
            variant: "base".into(),
            second: None,
            label: "base".into(),
            points: points
                .iter()
                .map(|&(x, rates)| Point {
                    x,
                    x_text: x.to_string(),
                    runs: rates.len(),
                    rate_tps: stat(rates),
                    latency_mean_us: stat(&[1.0]),
                    latency_p50_us: stat(&[1.0]),
                    latency_p99_us: stat(&[2.0]),
                    cpu_client_us_per_tran: None,
                    cpu_server_us_per_tran: None,
                    pacing: PacingMode::Closed,
                    think_s: None,
                    offered_rate_tps: None,
                })
                .collect(),
        }
    }

    /// A think-time series: (N, rate tr/s, mean R µs), Z seconds, two runs a point.
    fn think_series(points: &[(f64, f64, f64)], z: f64) -> Series {
        let mut s = series(&[]);
        s.points = points
            .iter()
            .map(|&(n, rate, r_us)| {
                let mut p = series(&[(n, &[rate * 0.995, rate * 1.005])])
                    .points
                    .remove(0);
                p.latency_mean_us = Stat::of(vec![r_us]).unwrap();
                p.pacing = PacingMode::Think;
                p.think_s = Some(z);
                p
            })
            .collect();
        s
    }

    /// `RR(100B/800B)@1s --sweep clients=…` used to be fitted and called
    /// "linear: no measurable contention", which N/(R+Z) is by construction.
    #[test]
    fn a_think_time_sweep_that_saturates_nothing_is_described_not_fitted() {
        let z = 1.0;
        let pts: Vec<(f64, f64, f64)> = [100.0, 200.0, 400.0, 800.0, 1600.0]
            .iter()
            .zip([90.0, 95.0, 110.0, 140.0, 260.0])
            .map(|(&n, r_us)| (n, n / (r_us / 1e6 + z), r_us))
            .collect();
        let fit = fit_usl(&think_series(&pts, z));
        let Err(UslFailure::NotSaturated(paced)) = &fit else {
            panic!("fitted a think-time sweep that saturates nothing: {fit:?}");
        };
        assert!(!paced.saturated());
        let text = usl_sentences("RR(100B/800B)@1s, run", &fit).join(" ");
        for want in [
            "think-time population (Z = 1 s): the rate follows N/(R+Z)",
            "R rose from 90 µs at N = 100 to 260 µs at N = 1600",
            "no saturation reached",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
        assert!(!text.contains("linear"), "{text}");
    }

    /// The same population pushed until R dominates the cycle: saturated,
    /// so the USL is fitted, and the sentences say why.
    #[test]
    fn a_think_time_sweep_that_saturates_is_fitted() {
        let z = 1.0;
        let pts: Vec<(f64, f64, f64)> = [100.0, 200.0, 400.0, 800.0, 1600.0]
            .iter()
            .zip([100.0, 150.0, 2e5, 1.2e6, 3.2e6])
            .map(|(&n, r_us)| (n, n / (r_us / 1e6 + z), r_us))
            .collect();
        let fit = fit_usl(&think_series(&pts, z));
        let Ok(f) = &fit else { panic!("{fit:?}") };
        assert!(f.paced.as_ref().unwrap().saturated());
        let text = usl_sentences("w, run", &fit).join(" ");
        assert!(text.contains("the sweep saturates"), "{text}");
        assert!(text.contains("fitted to 10 runs"), "{text}");
    }

    #[test]
    fn too_few_points_is_one_sentence() {
        let fit = fit_usl(&series(&[(1.0, &[100.0]), (2.0, &[190.0])]));
        assert_eq!(fit, Err(UslFailure::TooFew { runs: 2, counts: 2 }));
        let text = usl_sentences("RR1(1B/1B), base", &fit);
        assert_eq!(text.len(), 1);
        assert!(text[0].contains("2 runs at 2"), "{}", text[0]);
    }

    #[test]
    fn peak_rate_interval_brackets_the_true_peak() {
        let truth = Coefficients {
            sigma: 0.05,
            kappa: 0.002,
            lambda: 1000.0,
        };
        let ns = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
        let noise = [0.99, 1.0, 1.01];
        let rates: Vec<Vec<f64>> = ns
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                (0..3)
                    .map(|r| truth.throughput(n) * noise[(i + r) % 3])
                    .collect()
            })
            .collect();
        let pts: Vec<(f64, &[f64])> = ns
            .iter()
            .zip(&rates)
            .map(|(&n, r)| (n, r.as_slice()))
            .collect();
        let fit = fit_usl(&series(&pts)).unwrap();
        let x = fit.peak_rate_tps.unwrap();
        let true_peak = truth.throughput(truth.peak().unwrap());
        assert!(
            x.ci_low.unwrap() < true_peak && true_peak < x.ci_high.unwrap(),
            "{x:?} vs {true_peak}"
        );
        assert!((x.value - true_peak).abs() / true_peak < 0.02);
        let text = usl_sentences("w, base", &Ok(fit)).join(" ");
        assert!(text.contains("N* = 2"), "{text}");
        assert!(text.contains("verdict"), "{text}");
    }

    #[test]
    fn inverse_of_a_diagonal_and_a_full_matrix() {
        let d = inverse(&[[4.0, 0.0, 0.0], [0.0, 1e8, 0.0], [0.0, 0.0, 0.25]]).unwrap();
        assert!(
            (d[0][0] - 0.25).abs() < 1e-12
                && (d[1][1] - 1e-8).abs() < 1e-20
                && (d[2][2] - 4.0).abs() < 1e-12
        );
        let a = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]];
        let inv = inverse(&a).unwrap();
        for (i, row) in a.iter().enumerate() {
            for j in 0..3 {
                let prod: f64 = row.iter().zip(&inv).map(|(x, r)| x * r[j]).sum();
                assert!((prod - f64::from(u8::from(i == j))).abs() < 1e-12);
            }
        }
        assert_eq!(
            inverse(&[[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]),
            None
        );
    }
}
