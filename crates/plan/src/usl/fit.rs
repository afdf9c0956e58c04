//! Bounded nonlinear least squares for the USL: a projected Levenberg–Marquardt
//! over (σ, κ, λ) with σ, κ ∈ [0, 1] and λ > 0, R's `usl` start values
//! (σ₀ = 0.01, κ₀ = 1e−4, λ₀ = max X/N), and Marquardt's diagonal scaling so
//! the very different magnitudes of κ (~1e−4) and λ (~1e3) do not matter.
//!
//! Bounds are handled with an active set: a parameter sitting on a bound whose
//! gradient points outward is held there and the step is solved for the
//! others; every trial point is clamped into the box. The covariance
//! s²(JᵀJ)⁻¹ with s² = RSS/(n−3) is taken over the free parameters only.

use super::Coefficients;

/// Lower and upper bounds of (σ, κ, λ).
const LOWER: [f64; 3] = [0.0, 0.0, f64::MIN_POSITIVE];
const UPPER: [f64; 3] = [1.0, 1.0, f64::INFINITY];
/// Outer iterations; the test vectors converge in a few dozen.
const MAX_ITERATIONS: usize = 2000;

/// What the solver found.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    pub coefficients: Coefficients,
    pub rss: f64,
    /// Parameters held on a bound at the end.
    pub at_bound: [bool; 3],
    /// s²(JᵀJ)⁻¹ over the free parameters (zero rows for the bound ones);
    /// `None` when there are no degrees of freedom left or JᵀJ is singular.
    pub covariance: Option<[[f64; 3]; 3]>,
    pub iterations: usize,
    pub converged: bool,
}

fn model(p: &[f64; 3], n: f64) -> f64 {
    p[2] * n / (1.0 + p[0] * (n - 1.0) + p[1] * n * (n - 1.0))
}

/// Gradient of the model with respect to (σ, κ, λ) at `n`.
fn gradient(p: &[f64; 3], n: f64) -> [f64; 3] {
    let d = 1.0 + p[0] * (n - 1.0) + p[1] * n * (n - 1.0);
    let common = -p[2] * n * (n - 1.0) / (d * d);
    [common, common * n, n / d]
}

fn rss(p: &[f64; 3], points: &[(f64, f64)]) -> f64 {
    points.iter().map(|&(n, x)| (x - model(p, n)).powi(2)).sum()
}

/// JᵀJ and Jᵀr at `p`.
fn normal_equations(p: &[f64; 3], points: &[(f64, f64)]) -> ([[f64; 3]; 3], [f64; 3]) {
    let mut a = [[0.0; 3]; 3];
    let mut g = [0.0; 3];
    for &(n, x) in points {
        let j = gradient(p, n);
        let r = x - model(p, n);
        for row in 0..3 {
            g[row] += j[row] * r;
            for col in 0..3 {
                a[row][col] += j[row] * j[col];
            }
        }
    }
    (a, g)
}

/// Solves `m·x = b` for the indices in `free` (Gaussian elimination with
/// partial pivoting on the scaled system); `None` when singular.
fn solve(m: &[[f64; 3]; 3], b: &[f64; 3], free: &[usize]) -> Option<[f64; 3]> {
    let k = free.len();
    let mut aug = vec![vec![0.0; k + 1]; k];
    for (r, &i) in free.iter().enumerate() {
        for (c, &j) in free.iter().enumerate() {
            aug[r][c] = m[i][j];
        }
        aug[r][k] = b[i];
    }
    for col in 0..k {
        let pivot = (col..k).max_by(|&x, &y| aug[x][col].abs().total_cmp(&aug[y][col].abs()))?;
        if aug[pivot][col].abs() < 1e-300 {
            return None;
        }
        aug.swap(col, pivot);
        let pivot_row = aug[col].clone();
        for (row, values) in aug.iter_mut().enumerate() {
            if row != col {
                let f = values[col] / pivot_row[col];
                for (v, p) in values.iter_mut().zip(&pivot_row).skip(col) {
                    *v -= f * p;
                }
            }
        }
    }
    let mut x = [0.0; 3];
    for (r, &i) in free.iter().enumerate() {
        x[i] = aug[r][k] / aug[r][r];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// Inverse of `a` restricted to `free`, computed on the correlation-scaled
/// matrix D^−½ A D^−½ for accuracy; zero rows and columns elsewhere.
fn inverse(a: &[[f64; 3]; 3], free: &[usize]) -> Option<[[f64; 3]; 3]> {
    let scale: Vec<f64> = (0..3).map(|i| a[i][i].sqrt()).collect();
    if free.iter().any(|&i| scale[i].is_nan() || scale[i] <= 0.0) {
        return None;
    }
    let mut scaled = [[0.0; 3]; 3];
    for &i in free {
        for &j in free {
            scaled[i][j] = a[i][j] / (scale[i] * scale[j]);
        }
    }
    let mut inv = [[0.0; 3]; 3];
    for &col in free {
        let mut e = [0.0; 3];
        e[col] = 1.0;
        let x = solve(&scaled, &e, free)?;
        for &row in free {
            inv[row][col] = x[row] / (scale[row] * scale[col]);
        }
    }
    Some(inv)
}

/// Parameters free to move: not on a bound with the descent direction
/// (the gradient `g` = Jᵀr) pointing out of the box.
fn free_set(p: &[f64; 3], g: &[f64; 3]) -> Vec<usize> {
    (0..3)
        .filter(|&i| !((p[i] <= LOWER[i] && g[i] <= 0.0) || (p[i] >= UPPER[i] && g[i] >= 0.0)))
        .collect()
}

fn clamp(p: [f64; 3]) -> [f64; 3] {
    let mut q = p;
    for i in 0..3 {
        q[i] = q[i].clamp(LOWER[i], UPPER[i]);
    }
    q
}

/// One accepted Levenberg–Marquardt step from `p`, or `None` when no damping
/// reduces the residual (a minimum within the solver's resolution).
fn step(
    p: &[f64; 3],
    current: f64,
    mu: &mut f64,
    points: &[(f64, f64)],
) -> Option<([f64; 3], f64)> {
    let (a, g) = normal_equations(p, points);
    let free = free_set(p, &g);
    if free.is_empty() {
        return None;
    }
    while *mu < 1e20 {
        let mut damped = a;
        for &i in &free {
            damped[i][i] += *mu * a[i][i].max(1e-300);
        }
        if let Some(delta) = solve(&damped, &g, &free) {
            let trial = clamp([p[0] + delta[0], p[1] + delta[1], p[2] + delta[2]]);
            let value = rss(&trial, points);
            if value < current {
                *mu = (*mu / 10.0).max(1e-12);
                return Some((trial, value));
            }
        }
        *mu *= 10.0;
    }
    None
}

/// Fits the USL to `(N, X)` points (at least 3 distinct N, checked by the caller).
pub fn fit(points: &[(f64, f64)]) -> Solution {
    let lambda0 = points
        .iter()
        .map(|&(n, x)| x / n)
        .fold(f64::MIN_POSITIVE, f64::max);
    let mut p = [0.01, 1e-4, lambda0];
    let mut current = rss(&p, points);
    let mut mu = 1e-3;
    let mut iterations = 0;
    let mut converged = false;
    while iterations < MAX_ITERATIONS {
        iterations += 1;
        match step(&p, current, &mut mu, points) {
            None => {
                converged = true;
                break;
            }
            Some((next, value)) => {
                let small_gain = current - value <= 1e-15 * current;
                let small_step =
                    (0..3).all(|i| (next[i] - p[i]).abs() <= 1e-13 * p[i].abs().max(1e-12));
                p = next;
                current = value;
                if current == 0.0 || (small_gain && small_step) {
                    converged = true;
                    break;
                }
            }
        }
    }
    let (a, g) = normal_equations(&p, points);
    let free = free_set(&p, &g);
    let at_bound = [0, 1, 2].map(|i| !free.contains(&i));
    let dof = points.len().saturating_sub(3);
    let covariance = (dof > 0).then(|| inverse(&a, &free)).flatten().map(|inv| {
        let s2 = current / dof as f64;
        inv.map(|row| row.map(|v| v * s2))
    });
    Solution {
        coefficients: Coefficients {
            sigma: p[0],
            kappa: p[1],
            lambda: p[2],
        },
        rss: current,
        at_bound,
        covariance,
        iterations,
        converged,
    }
}
