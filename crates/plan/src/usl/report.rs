//! The human tables of `plan usl`: coefficients with intervals, derived
//! quantities with their formulas, the points against the fit, predictions.

use super::{Estimate, UslPlan};
use crate::report::{num, pct, sig, Report, Table};

fn interval(e: &Estimate, digits: usize) -> String {
    match (e.ci_low, e.ci_high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", sig(lo, digits), sig(hi, digits)),
        _ => "-".into(),
    }
}

impl UslPlan {
    /// The human tables.
    pub fn report(&self, digits: usize) -> Report {
        let d = digits.max(4);
        let level = pct(self.inputs.confidence * 100.0, 4);
        let mut coef = Table::new(&[
            "coefficient",
            "estimate",
            "std error",
            &format!("{level} interval"),
            "meaning",
        ])
        .with_caption(format!(
            "fit of X(N) = λN ÷ (1 + σ(N−1) + κN(N−1)); t with {} degrees of freedom",
            self.degrees_of_freedom
        ));
        for (name, e, meaning) in [
            ("σ", &self.sigma, "contention (serialisation)"),
            ("κ", &self.kappa, "coherency (crosstalk)"),
            ("λ", &self.lambda, "throughput at N = 1"),
        ] {
            coef.row([
                name.to_string(),
                sig(e.value, d + 2),
                e.std_error.map_or("at bound".into(), |s| sig(s, 3)),
                interval(e, d),
                meaning.to_string(),
            ]);
        }
        let (s, k, l) = (self.sigma.value, self.kappa.value, self.lambda.value);
        let mut derived = Table::steps();
        match self.peak_n {
            Some(p) => {
                derived.row([
                    "peak N*".to_string(),
                    format!("√((1 − {}) ÷ {})", sig(s, d + 2), sig(k, d + 2)),
                    sig(p.value, d),
                ]);
                derived.row([
                    format!("N* {level} interval"),
                    "N* ± t·√(gᵀΣg) (delta method)".into(),
                    interval(&p, d),
                ]);
                if let Some(x) = self.peak_throughput {
                    derived.row([
                        "X at the peak".to_string(),
                        format!("X({})", sig(p.value, d)),
                        sig(x, d),
                    ]);
                }
            }
            None => derived.row([
                "peak N*".to_string(),
                "κ ≈ 0: no peak".into(),
                "none".into(),
            ]),
        }
        if let (Some(roof), Some(opt)) = (self.roof_throughput, self.optimal_n) {
            derived.row([
                "roof X".to_string(),
                format!("λ ÷ σ = {} ÷ {}", sig(l, d + 2), sig(s, d + 2)),
                sig(roof, d),
            ]);
            derived.row([
                "N_opt".to_string(),
                format!("1 ÷ σ = 1 ÷ {}", sig(s, d + 2)),
                sig(opt, d),
            ]);
        }
        derived.row([
            "R²".to_string(),
            "1 − RSS ÷ TSS".into(),
            sig(self.r_squared, d),
        ]);
        let mut points = Table::new(&["N", "X measured", "X fitted", "residual"]);
        for r in &self.residuals {
            points.row([
                num(r.n),
                num(r.x_measured),
                sig(r.x_fitted, d),
                sig(r.residual, 3),
            ]);
        }
        let mut tables = vec![coef, derived, points];
        if !self.predictions.is_empty() {
            let mut pred = Table::new(&["N", "X", "R = N ÷ X"])
                .with_caption("predictions (N from X is the rising-branch root of the quadratic)");
            for p in &self.predictions {
                pred.row([
                    p.n.map_or("beyond the peak".into(), |n| sig(n, d)),
                    sig(p.throughput, d),
                    p.latency.map_or("-".into(), |r| sig(r, d)),
                ]);
            }
            tables.push(pred);
        }
        Report {
            title: "Universal Scalability Law fit".into(),
            tables,
            notes: vec![format!("verdict: {}", self.verdict_text)],
            warnings: self.warnings.clone(),
        }
    }
}
