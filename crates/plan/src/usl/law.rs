//! The law itself: the three coefficients and what they imply (X(N), R(N),
//! the peak, N at a given X). A leaf, so that the fit (`fit.rs`) and the
//! report around it (`usl/mod.rs`) share it without importing each other.

use serde::Serialize;

/// κ below this is taken as zero: no coherency term, no peak.
pub(super) const KAPPA_ZERO: f64 = 1e-12;

/// The three coefficients.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Coefficients {
    /// Contention (serialisation), σ.
    pub sigma: f64,
    /// Coherency (crosstalk), κ.
    pub kappa: f64,
    /// Throughput at N = 1, λ.
    pub lambda: f64,
}

impl Coefficients {
    /// X(N).
    pub fn throughput(&self, n: f64) -> f64 {
        self.lambda * n / (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0))
    }

    /// R(N) = N ÷ X(N) = (1 + σ(N−1) + κN(N−1)) ÷ λ.
    pub fn latency(&self, n: f64) -> f64 {
        (1.0 + self.sigma * (n - 1.0) + self.kappa * n * (n - 1.0)) / self.lambda
    }

    /// N* = √((1−σ)/κ), unrounded; `None` when κ ≈ 0 or σ ≥ 1.
    pub fn peak(&self) -> Option<f64> {
        (self.kappa > KAPPA_ZERO && self.sigma < 1.0)
            .then(|| ((1.0 - self.sigma) / self.kappa).sqrt())
    }

    /// The concurrency at which throughput is `x`: the smaller (rising-branch)
    /// root of κX·N² + (σX − κX − λ)·N + X(1−σ) = 0; `None` when `x` is above
    /// what the model ever reaches.
    pub fn concurrency_at_throughput(&self, x: f64) -> Option<f64> {
        let (s, k, l) = (self.sigma, self.kappa, self.lambda);
        let b = s * x - k * x - l;
        let c = x * (1.0 - s);
        if k <= KAPPA_ZERO {
            let denom = l - s * x;
            return (denom > 0.0).then(|| c / denom);
        }
        let disc = b * b - 4.0 * k * x * c;
        // 2c ÷ (−b + √disc) is the smaller root without cancellation.
        (disc >= 0.0 && -b > 0.0).then(|| 2.0 * c / (-b + disc.sqrt()))
    }
}
