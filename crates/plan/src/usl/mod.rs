//! Universal Scalability Law: X(N) = λN ÷ (1 + σ(N−1) + κN(N−1)), fitted to
//! measured (N, X) points (throughput-by-processors curves that peak and tail
//! off, as MQ on z/OS measured them).
//!
//! Reports the coefficients with standard errors and t intervals
//! (s² = RSS/(n−3), t_{(1+level)/2, n−3}, not R `confint`'s one-sided n−1),
//! R², the peak N* = √((1−σ)/κ) unrounded (the Go and Rust libraries floor it)
//! with a delta-method interval, X at the peak, the roof λ/σ, and a verdict.
//!
//! Intervals stay inside each parameter's domain, and the verdict never says
//! more than they do:
//! - σ and κ: the t interval clipped to the fit's box [0, 1] (a negative
//!   contention or coherency has no meaning; the fit never leaves the box).
//! - N*: the delta method on ln N* (so the interval is never negative), its
//!   lower end at least 1 (one client is the least concurrency there is), and
//!   unbounded above when κ's interval reaches 0, since N* → ∞ as κ → 0.
//! - A peak (retrograde, or coherency beyond the data) is claimed only when
//!   κ's interval excludes 0; contention only when σ's does.
//!
//! N(X) is the smaller root of κX·N² + (σX − κX − λ)·N + X(1−σ) = 0; the
//! reference libraries' (σ−1)/(σX−λ) holds only when κ = 0.

mod fit;
mod input;
mod law;
mod report;

pub use input::{parse_csv, parse_point};
pub use law::Coefficients;
use law::KAPPA_ZERO;

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::PlanError;

/// An estimate with its standard error and interval (`None` when the
/// parameter sits on a bound or there are no degrees of freedom).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub value: f64,
    pub std_error: Option<f64>,
    pub ci_low: Option<f64>,
    /// `None` either with `ci_low` (no interval) or, when
    /// `unbounded_above`, because the interval has no upper end.
    pub ci_high: Option<f64>,
    /// The interval runs to +∞ (N* when κ's interval reaches 0).
    pub unbounded_above: bool,
}

impl Estimate {
    /// A t interval clipped to the domain `[low, high]`.
    fn new(value: f64, std_error: Option<f64>, t: Option<f64>, domain: (f64, f64)) -> Self {
        let half = std_error.zip(t).map(|(se, t)| se * t);
        Estimate {
            value,
            std_error,
            ci_low: half.map(|h| (value - h).max(domain.0)),
            ci_high: half.map(|h| (value + h).min(domain.1)),
            unbounded_above: false,
        }
    }

    /// Whether the interval lies wholly above zero: the quantity is
    /// established by the data, not only by the point estimate.
    pub fn excludes_zero(&self) -> bool {
        self.ci_low.is_some_and(|low| low > 0.0)
    }
}

/// What limits scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// σ ≈ 0 and κ ≈ 0: linear in the measured range.
    Linear,
    /// κ ≈ 0: throughput levels off towards λ/σ, no peak.
    Contention,
    /// Both, with the peak beyond the measured range.
    ContentionThenCoherency,
    /// The peak lies inside the measured range; throughput falls beyond it.
    Retrograde,
    /// Neither σ's nor κ's interval excludes 0 although a point estimate is
    /// not 0: the data establish no limit (nor that there is none).
    Undetermined,
}

/// Inputs of `plan usl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UslInput {
    /// Measured (N, X) points (in the JSON as `residuals`).
    #[serde(skip)]
    pub points: Vec<(f64, f64)>,
    /// Confidence level of the intervals, e.g. 0.95.
    pub confidence: f64,
    /// Populations to predict X and R at.
    pub at_users: Vec<f64>,
    /// Throughputs to find N (and R = N/X) for.
    pub at_throughput: Vec<f64>,
}

/// One measured point against the fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Residual {
    pub n: f64,
    pub x_measured: f64,
    pub x_fitted: f64,
    pub residual: f64,
}

/// A prediction at a population or a throughput.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prediction {
    pub n: Option<f64>,
    pub throughput: f64,
    /// N ÷ X, in the time unit of 1/X.
    pub latency: Option<f64>,
}

/// Result of `plan usl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UslPlan {
    pub inputs: UslInput,
    pub sigma: Estimate,
    pub kappa: Estimate,
    pub lambda: Estimate,
    pub r_squared: f64,
    pub rss: f64,
    pub degrees_of_freedom: usize,
    /// N* with its delta-method interval (see the module notes); `None`
    /// when κ ≈ 0.
    pub peak_n: Option<Estimate>,
    /// Whether the data establish the peak: κ's interval excludes 0. When
    /// false, `peak_n` is a point estimate the verdict does not claim.
    pub peak_established: bool,
    pub peak_throughput: Option<f64>,
    /// λ/σ: the throughput ceiling without coherency.
    pub roof_throughput: Option<f64>,
    /// 1/σ.
    pub optimal_n: Option<f64>,
    pub verdict: Verdict,
    pub verdict_text: String,
    pub residuals: Vec<Residual>,
    pub predictions: Vec<Prediction>,
    /// Printed by the report (and the JSON envelope's `warnings`).
    #[serde(skip)]
    pub warnings: Vec<String>,
    pub iterations: usize,
}

fn validate(input: &UslInput) -> Result<usize, PlanError> {
    for &(n, x) in &input.points {
        if !(n > 0.0 && n.is_finite() && x > 0.0 && x.is_finite()) {
            return Err(PlanError::Invalid(format!(
                "point N = {n}, X = {x}: N and X must be positive numbers; fix the CSV or --point"
            )));
        }
    }
    let mut ns: Vec<f64> = input.points.iter().map(|p| p.0).collect();
    ns.sort_by(f64::total_cmp);
    ns.dedup();
    if input.points.len() < 4 || ns.len() < 3 {
        return Err(PlanError::Invalid(format!(
            "the USL fit needs at least 4 points (--point, --csv, --from) at 3 or more distinct N, got {} points at {} distinct N; measure more concurrency levels",
            input.points.len(),
            ns.len()
        )));
    }
    if !(input.confidence > 0.0 && input.confidence < 1.0) {
        return Err(PlanError::bad(
            "confidence",
            &format!("{}", input.confidence * 100.0),
            "must be between 0% and 100%",
            "e.g. 95%",
        ));
    }
    Ok(ns.len())
}

/// Fits the model and derives everything the report shows.
pub fn plan(input: &UslInput) -> Result<UslPlan, PlanError> {
    let distinct = validate(input)?;
    let sol = fit::fit(&input.points);
    let c = sol.coefficients;
    let dof = input.points.len() - 3;
    let t = StudentsT::new(0.0, 1.0, dof as f64)
        .ok()
        .map(|d| d.inverse_cdf(0.5 + input.confidence / 2.0));
    let cov = sol.covariance;
    let se = |i: usize| {
        cov.filter(|_| !sol.at_bound[i])
            .map(|m| m[i][i].max(0.0).sqrt())
    };
    let kappa = Estimate::new(c.kappa, se(1), t, (0.0, 1.0));
    let peak_n = c.peak().map(|peak| peak_estimate(&c, peak, cov, t, &kappa));
    let mean_x = input.points.iter().map(|p| p.1).sum::<f64>() / input.points.len() as f64;
    let tss: f64 = input.points.iter().map(|p| (p.1 - mean_x).powi(2)).sum();
    let residuals = input
        .points
        .iter()
        .map(|&(n, x)| Residual {
            n,
            x_measured: x,
            x_fitted: c.throughput(n),
            residual: x - c.throughput(n),
        })
        .collect();
    let mut plan = UslPlan {
        inputs: input.clone(),
        sigma: Estimate::new(c.sigma, se(0), t, (0.0, 1.0)),
        kappa,
        lambda: Estimate::new(c.lambda, se(2), t, (0.0, f64::INFINITY)),
        r_squared: if tss > 0.0 { 1.0 - sol.rss / tss } else { 1.0 },
        rss: sol.rss,
        degrees_of_freedom: dof,
        peak_n,
        peak_established: peak_n.is_some() && kappa.excludes_zero(),
        peak_throughput: peak_n.map(|p| c.throughput(p.value)),
        roof_throughput: (c.sigma > 0.0).then(|| c.lambda / c.sigma),
        optimal_n: (c.sigma > 0.0).then(|| 1.0 / c.sigma),
        verdict: Verdict::Linear,
        verdict_text: String::new(),
        residuals,
        predictions: predictions(&c, input),
        warnings: Vec::new(),
        iterations: sol.iterations,
    };
    let max_n = input.points.iter().map(|p| p.0).fold(0.0, f64::max);
    (plan.verdict, plan.verdict_text) = verdict(&plan, max_n);
    plan.warnings = warnings(&plan, distinct, max_n, sol.converged);
    Ok(plan)
}

/// N* with the delta method on ln N* = ½(ln(1−σ) − ln κ), whose gradient is
/// g = (−1/(2(1−σ)), −1/(2κ), 0): exp(ln N* ± t·√(gᵀΣg)), the lower end at
/// least 1, unbounded above when κ's interval reaches 0.
fn peak_estimate(
    c: &Coefficients,
    peak: f64,
    cov: Option<[[f64; 3]; 3]>,
    t: Option<f64>,
    kappa: &Estimate,
) -> Estimate {
    let g = [-0.5 / (1.0 - c.sigma), -0.5 / c.kappa, 0.0];
    let se_ln = cov.map(|m| {
        (0..3)
            .map(|i| (0..3).map(|j| g[i] * m[i][j] * g[j]).sum::<f64>())
            .sum::<f64>()
            .max(0.0)
            .sqrt()
    });
    let half = se_ln.zip(t).map(|(se, t)| se * t);
    let unbounded = half.is_some() && !kappa.excludes_zero();
    Estimate {
        value: peak,
        // The standard error of N* itself, by the delta method: N*·se(ln N*).
        std_error: se_ln.map(|se| se * peak),
        ci_low: half.map(|h| (peak * (-h).exp()).max(1.0)),
        ci_high: half.filter(|_| !unbounded).map(|h| peak * h.exp()),
        unbounded_above: unbounded,
    }
}

fn predictions(c: &Coefficients, input: &UslInput) -> Vec<Prediction> {
    let by_n = input.at_users.iter().map(|&n| {
        let x = c.throughput(n);
        Prediction {
            n: Some(n),
            throughput: x,
            latency: Some(n / x),
        }
    });
    let by_x = input.at_throughput.iter().map(|&x| {
        let n = c.concurrency_at_throughput(x);
        Prediction {
            n,
            throughput: x,
            latency: n.map(|n| n / x),
        }
    });
    by_n.chain(by_x).collect()
}

/// The verdict says what the intervals establish (see the module notes).
fn verdict(p: &UslPlan, max_n: f64) -> (Verdict, String) {
    let sig = |x: f64| crate::report::sig(x, 4);
    let level = crate::report::pct(p.inputs.confidence * 100.0, 4);
    let (s, k, l) = (p.sigma.value, p.kappa.value, p.lambda.value);
    let unproven_peak = match p.peak_n {
        Some(n) if !p.peak_established => format!(
            "; no peak established: κ's {level} interval includes 0, so the point estimate N* = {} is not supported by the data",
            sig(n.value)
        ),
        _ => String::new(),
    };
    match p.peak_n {
        Some(n) if p.peak_established && n.value <= max_n => (
            Verdict::Retrograde,
            format!("coherency-limited (retrograde): throughput peaks at N* = {} inside the measured range and falls beyond it", sig(n.value)),
        ),
        Some(n) if p.peak_established => {
            let dominant = if s > k * max_n { "contention dominates" } else { "coherency dominates" };
            (
                Verdict::ContentionThenCoherency,
                format!("{dominant} at the largest measured N = {}; coherency predicts a peak at N* = {} beyond the data", sig(max_n), sig(n.value)),
            )
        }
        _ if p.sigma.excludes_zero() => (
            Verdict::Contention,
            format!("contention-limited: throughput levels off towards λ/σ = {}{}", sig(l / s),
                if unproven_peak.is_empty() { " with no peak".to_string() } else { unproven_peak }),
        ),
        // Linear only where the straight line describes the points: with
        // R² under the warning's 0.9, σ = κ = 0 is the noise's best fit.
        _ if s < 1e-9 && k <= KAPPA_ZERO && p.r_squared >= 0.9 => (Verdict::Linear, "linear: no measurable contention or coherency in the measured range".into()),
        _ => (
            Verdict::Undetermined,
            format!(
                "undetermined: neither contention nor coherency is established (σ = {} and κ = {}, neither with a {level} interval above 0; R² = {}){}; measure more repetitions or a wider range of N",
                sig(s), sig(k), sig(p.r_squared),
                if unproven_peak.is_empty() { "; no peak established".to_string() } else { unproven_peak }
            ),
        ),
    }
}

fn warnings(plan: &UslPlan, distinct: usize, max_n: f64, converged: bool) -> Vec<String> {
    let sig = |x: f64| crate::report::sig(x, 4);
    let mut w = Vec::new();
    if distinct < 6 {
        w.push(format!("only {distinct} distinct N: fits from fewer than 6 concurrency levels are weak; measure more levels"));
    }
    if let Some(p) = plan.peak_n {
        if p.value > 2.0 * max_n {
            w.push(format!(
                "the peak N* = {} lies far beyond the largest measured N = {}: an extrapolation; measure closer to it",
                sig(p.value),
                sig(max_n)
            ));
        }
        if plan.kappa.ci_low.is_some_and(|low| low <= 0.0) {
            w.push("κ's interval includes 0: the data do not establish that a peak exists".into());
        }
    }
    if plan.r_squared < 0.9 {
        w.push(format!(
            "R² = {}: the USL describes these points poorly; check for noise or a change of regime",
            sig(plan.r_squared)
        ));
    }
    if !converged {
        w.push("the fit stopped at its iteration limit; treat the coefficients with care".into());
    }
    w
}

#[cfg(test)]
mod tests;
