//! The human tables of `plan usl`: coefficients with intervals, derived
//! quantities with their formulas, the points against the fit, predictions.

use super::{Estimate, UslPlan};
use crate::report::{num, pct, sig, Report, Table};

fn interval(e: &Estimate, digits: usize) -> String {
    match (e.ci_low, e.ci_high) {
        (Some(lo), Some(hi)) => format!("[{}, {}]", sig(lo, digits), sig(hi, digits)),
        (Some(lo), None) if e.unbounded_above => format!("[{}, ∞)", sig(lo, digits)),
        _ => "-".into(),
    }
}

impl UslPlan {
    /// The human tables.
    pub fn report(&self, digits: usize) -> Report {
        let d = digits.max(4);
        let mut tables = vec![
            self.coefficients_table(d),
            self.derived_table(d),
            self.points_table(d),
        ];
        if !self.predictions.is_empty() {
            tables.push(self.predictions_table(d));
        }
        Report {
            title: "Universal Scalability Law fit".into(),
            tables,
            notes: vec![
                format!("verdict: {}", self.verdict_text),
                "intervals: σ and κ are t intervals clipped to [0, 1]; N*'s is the delta method on ln N*, at least 1, and unbounded when κ's interval reaches 0".into(),
            ],
            warnings: self.warnings.clone(),
        }
    }

    fn level(&self) -> String {
        pct(self.inputs.confidence * 100.0, 4)
    }

    fn coefficients_table(&self, d: usize) -> Table {
        let mut t = Table::new(&[
            "coefficient",
            "estimate",
            "std error",
            &format!("{} interval", self.level()),
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
            t.row([
                name.to_string(),
                sig(e.value, d + 2),
                e.std_error.map_or("at bound".into(), |s| sig(s, 3)),
                interval(e, d),
                meaning.to_string(),
            ]);
        }
        t
    }

    fn derived_table(&self, d: usize) -> Table {
        let (s, k, l) = (
            sig(self.sigma.value, d + 2),
            sig(self.kappa.value, d + 2),
            sig(self.lambda.value, d + 2),
        );
        let mut t = Table::steps();
        match self.peak_n {
            Some(p) => {
                t.row([
                    "peak N*".to_string(),
                    format!("√((1 − {s}) ÷ {k})"),
                    sig(p.value, d),
                ]);
                t.row([
                    format!("N* {} interval", self.level()),
                    "exp(ln N* ± t·√(gᵀΣg)) (delta method on ln N*)".into(),
                    interval(&p, d),
                ]);
                if !self.peak_established {
                    t.row([
                        "peak established".to_string(),
                        "κ's interval excludes 0".into(),
                        "no".into(),
                    ]);
                }
                if let Some(x) = self.peak_throughput {
                    t.row([
                        "X at the peak".to_string(),
                        format!("X({})", sig(p.value, d)),
                        sig(x, d),
                    ]);
                }
            }
            None => t.row([
                "peak N*".to_string(),
                "κ ≈ 0: no peak".into(),
                "none".into(),
            ]),
        }
        if let (Some(roof), Some(opt)) = (self.roof_throughput, self.optimal_n) {
            t.row([
                "roof X".to_string(),
                format!("λ ÷ σ = {l} ÷ {s}"),
                sig(roof, d),
            ]);
            t.row(["N_opt".to_string(), format!("1 ÷ σ = 1 ÷ {s}"), sig(opt, d)]);
        }
        t.row([
            "R²".to_string(),
            "1 − RSS ÷ TSS".into(),
            sig(self.r_squared, d),
        ]);
        t
    }

    fn points_table(&self, d: usize) -> Table {
        let mut t = Table::new(&["N", "X measured", "X fitted", "residual"]);
        for r in &self.residuals {
            t.row([
                num(r.n),
                num(r.x_measured),
                sig(r.x_fitted, d),
                sig(r.residual, 3),
            ]);
        }
        t
    }

    fn predictions_table(&self, d: usize) -> Table {
        let mut t = Table::new(&["N", "X", "R = N ÷ X"])
            .with_caption("predictions (N from X is the rising-branch root of the quadratic)");
        for p in &self.predictions {
            t.row([
                p.n.map_or("beyond the peak".into(), |n| sig(n, d)),
                sig(p.throughput, d),
                p.latency.map_or("-".into(), |r| sig(r, d)),
            ]);
        }
        t
    }
}
