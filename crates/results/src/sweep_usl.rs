//! The Universal Scalability Law over a client sweep: the planner's fit
//! (`stackbench_plan::usl`) applied to every run's (N, rate), plus an
//! interval for the peak rate, and the sentences the report prints.
//!
//! Design notes:
//! - Every repetition's rate is an observation (the fit takes repeated N), so
//!   the residual variance includes the run-to-run spread and the intervals
//!   are honest about it; fitting the means would hide it.
//! - The planner gives N* with a delta-method interval but the peak rate
//!   X* = X(N*) as a bare number. Its interval here is the delta method too:
//!   at the peak ∂X/∂N = 0, so ∂X*/∂θ is the model's gradient at N = N*
//!   (the envelope theorem), and Var X* = gᵀΣg with Σ = s²(JᵀJ)⁻¹,
//!   s² = RSS/(n−3), rebuilt from the fitted coefficients. It is left out
//!   when a coefficient sits on a bound (the planner gives it no error).

use stackbench_metrics::stats::t_quantile;
use stackbench_plan::report::sig;
use stackbench_plan::usl::{plan, Coefficients, Estimate, UslInput, UslPlan};

use crate::compare_output::format_value;
use crate::sweep::{Series, LEVEL_PCT};

/// Fewest runs and distinct client counts the planner's fit accepts.
const MIN_RUNS: usize = 4;
const MIN_COUNTS: usize = 3;

/// A fitted series.
#[derive(Debug, Clone, PartialEq)]
pub struct UslFit {
    pub plan: UslPlan,
    /// X(N*) with its interval; `None` when there is no peak (κ ≈ 0).
    pub peak_rate_tps: Option<Estimate>,
    pub runs: usize,
    pub counts: usize,
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
}

/// Fits the USL to every run's (N, rate) of `series` (N = the x value).
pub fn fit_usl(series: &Series) -> Result<UslFit, UslFailure> {
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
        _ => format!(
            "{}{unit} (no interval: a coefficient is at a bound)",
            fmt(e.value)
        ),
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
    let peak = match (&p.peak_n, &fit.peak_rate_tps) {
        (Some(n), Some(x)) => format!(
            "puts the peak at N* = {}, with a peak rate of {}",
            estimate(n, " clients", &num),
            estimate(x, " tr/s", &format_value)
        ),
        _ => "finds no peak (κ ≈ 0)".to_string(),
    };
    let mut out = vec![
        format!(
            "{who}: the Universal Scalability Law fitted to {} runs at {} client counts (R² = {}) {peak}; σ = {}, κ = {}, λ = {} tr/s at one client.",
            fit.runs,
            fit.counts,
            sig(p.r_squared, 4),
            estimate(&p.sigma, "", &num),
            estimate(&p.kappa, "", &num),
            format_value(p.lambda.value),
        ),
        format!("{who}: verdict — {}.", p.verdict_text),
    ];
    out.extend(p.warnings.iter().map(|w| format!("{who}: warning — {w}.")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{Point, Stat};

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
                    latency_p50_us: stat(&[1.0]),
                    latency_p99_us: stat(&[2.0]),
                    cpu_client_us_per_tran: None,
                    cpu_server_us_per_tran: None,
                })
                .collect(),
        }
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
