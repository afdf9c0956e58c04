//! Published test vectors (codahale/usl, usl-rs) and property tests of the
//! fit.

use super::*;
use proptest::prelude::*;

fn input(points: &[(f64, f64)]) -> UslInput {
    UslInput {
        points: points.to_vec(),
        confidence: 0.95,
        at_users: vec![],
        at_throughput: vec![],
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

/// codahale/usl cmd/usl/example.csv.
const EXAMPLE: [(f64, f64); 7] = [
    (1.0, 65.0),
    (18.0, 996.0),
    (36.0, 1652.0),
    (72.0, 1853.0),
    (108.0, 1829.0),
    (144.0, 1775.0),
    (216.0, 1702.0),
];

/// codahale/usl-rs's 32-point test data.
const THIRTY_TWO: [(f64, f64); 32] = [
    (1.0, 955.16),
    (2.0, 1878.91),
    (3.0, 2688.01),
    (4.0, 3548.68),
    (5.0, 4315.54),
    (6.0, 5130.43),
    (7.0, 5931.37),
    (8.0, 6531.08),
    (9.0, 7219.8),
    (10.0, 7867.61),
    (11.0, 8278.71),
    (12.0, 8646.7),
    (13.0, 9047.84),
    (14.0, 9426.55),
    (15.0, 9645.37),
    (16.0, 9897.24),
    (17.0, 10097.6),
    (18.0, 10240.5),
    (19.0, 10532.39),
    (20.0, 10798.52),
    (21.0, 11151.43),
    (22.0, 11518.63),
    (23.0, 11806.0),
    (24.0, 12089.37),
    (25.0, 12075.41),
    (26.0, 12177.29),
    (27.0, 12211.41),
    (28.0, 12158.93),
    (29.0, 12155.27),
    (30.0, 12118.04),
    (31.0, 12140.4),
    (32.0, 12074.39),
];

/// Go: σ = 0.0277299, κ = 0.000104343, λ = 89.9878; R: peak 1884 at
/// N = 96.52, roof 3246, N_opt 36.06. Our fit agrees to 4e−5 relative and
/// its residual sum of squares is slightly lower than at Go's coefficients
/// (Go's unconstrained LM stops a little early).
#[test]
fn codahale_example_vector() {
    let p = plan(&input(&EXAMPLE)).unwrap();
    assert!(close(p.sigma.value, 0.0277299, 1e-4), "{}", p.sigma.value);
    assert!(close(p.kappa.value, 0.000104343, 1e-4), "{}", p.kappa.value);
    assert!(close(p.lambda.value, 89.9878, 1e-4), "{}", p.lambda.value);
    let go = Coefficients {
        sigma: 0.0277299,
        kappa: 0.000104343,
        lambda: 89.9878,
    };
    let go_rss: f64 = EXAMPLE
        .iter()
        .map(|&(n, x)| (x - go.throughput(n)).powi(2))
        .sum();
    assert!(p.rss <= go_rss, "{} > {}", p.rss, go_rss);
    let peak = p.peak_n.unwrap();
    // R prints 96.52 from its own fit; Go's coefficients give 96.530.
    assert!((peak.value - 96.52).abs() < 0.015, "{}", peak.value);
    assert_eq!(p.peak_throughput.unwrap().round(), 1884.0);
    assert_eq!(p.roof_throughput.unwrap().round(), 3245.0);
    assert_eq!(format!("{:.2}", p.optimal_n.unwrap()), "36.06");
    assert_eq!(p.verdict, Verdict::Retrograde);
    // The peak interval brackets the estimate; σ, κ, λ have errors.
    assert!(peak.ci_low.unwrap() < peak.value && peak.value < peak.ci_high.unwrap());
    assert!(p.sigma.std_error.unwrap() > 0.0 && p.kappa.std_error.unwrap() > 0.0);
    assert!((p.r_squared - 0.98961).abs() < 1e-5, "{}", p.r_squared);
    assert_eq!(p.degrees_of_freedom, 4);
    assert!(!p.warnings.iter().any(|w| w.contains("distinct N")));
}

/// usl-rs: σ = 0.02671591, κ = 7.690945e−4, λ = 995.6486, N_max = 35
/// (floored; ours is unrounded), X_max = 12341.7454 at N = 35.
#[test]
fn usl_rs_thirty_two_point_vector() {
    let p = plan(&input(&THIRTY_TWO)).unwrap();
    let c = Coefficients {
        sigma: p.sigma.value,
        kappa: p.kappa.value,
        lambda: p.lambda.value,
    };
    assert!(close(c.sigma, 0.02671591, 1e-5), "{}", c.sigma);
    assert!(close(c.kappa, 7.690945e-4, 1e-5), "{}", c.kappa);
    assert!(close(c.lambda, 995.6486, 1e-5), "{}", c.lambda);
    assert_eq!(p.peak_n.unwrap().value.floor(), 35.0);
    assert!(close(c.throughput(35.0), 12341.7454, 1e-6));
    // The exact N(X) root: 19.92 at X = 11048, where the κ = 0 formula of the
    // reference libraries gives 15.35.
    let n = c.concurrency_at_throughput(11048.0).unwrap();
    assert_eq!(format!("{n:.2}"), "19.92");
    assert!(close(c.throughput(n), 11048.0, 1e-12));
    let reference = (c.sigma - 1.0) / (c.sigma * 11048.0 - c.lambda) * 11048.0;
    assert_eq!(format!("{reference:.2}"), "15.35");
    assert!(c.concurrency_at_throughput(13000.0).is_none());
}

#[test]
fn few_points_warn_and_too_few_fail() {
    let e = plan(&input(&EXAMPLE[..3])).unwrap_err().to_string();
    assert!(e.contains("at least 4 points"), "{e}");
    let p = plan(&input(&EXAMPLE[..5])).unwrap();
    assert!(
        p.warnings.iter().any(|w| w.contains("only 5 distinct N")),
        "{:?}",
        p.warnings
    );
    let bad = plan(&input(&[(0.0, 1.0), (1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]));
    assert!(bad.unwrap_err().to_string().contains("must be positive"));
}

#[test]
fn linear_data_has_no_peak() {
    let pts: Vec<(f64, f64)> = (1..=8).map(|n| (n as f64, 100.0 * n as f64)).collect();
    let p = plan(&input(&pts)).unwrap();
    assert!(p.peak_n.is_none());
    assert_eq!(p.verdict, Verdict::Linear);
    assert!(close(p.lambda.value, 100.0, 1e-9));
}

#[test]
fn contention_only_data_has_no_peak() {
    let c = Coefficients {
        sigma: 0.05,
        kappa: 0.0,
        lambda: 50.0,
    };
    let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
        .iter()
        .map(|&n| (n, c.throughput(n)))
        .collect();
    let p = plan(&input(&pts)).unwrap();
    assert!(p.peak_n.is_none(), "{:?}", p.kappa);
    assert_eq!(p.verdict, Verdict::Contention);
    assert!(close(p.roof_throughput.unwrap(), 1000.0, 1e-6));
}

#[test]
fn far_peak_is_flagged() {
    let c = Coefficients {
        sigma: 0.01,
        kappa: 1e-6,
        lambda: 10.0,
    };
    let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
        .iter()
        .map(|&n| (n, c.throughput(n)))
        .collect();
    let p = plan(&input(&pts)).unwrap();
    assert_eq!(p.verdict, Verdict::ContentionThenCoherency);
    assert!(
        p.warnings.iter().any(|w| w.contains("far beyond")),
        "{:?}",
        p.warnings
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A fit on noise-free synthetic data recovers its parameters.
    #[test]
    fn recovers_noise_free_parameters(sigma in 0.001f64..0.2, kappa in 1e-5f64..1e-2, lambda in 1.0f64..5000.0) {
        let truth = Coefficients { sigma, kappa, lambda };
        let pts: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0, 64.0]
            .iter().map(|&n| (n, truth.throughput(n))).collect();
        let p = plan(&input(&pts)).unwrap();
        prop_assert!(close(p.sigma.value, sigma, 1e-5), "σ {} vs {}", p.sigma.value, sigma);
        prop_assert!(close(p.kappa.value, kappa, 1e-5), "κ {} vs {}", p.kappa.value, kappa);
        prop_assert!(close(p.lambda.value, lambda, 1e-7), "λ {} vs {}", p.lambda.value, lambda);
        prop_assert!(close(p.peak_n.unwrap().value, truth.peak().unwrap(), 1e-5));
    }
}

/// `run 'RR(1B/1B)' --sweep clients=1,2,4,8 --repeat 2` used to print
/// "coherency-limited (retrograde), peak N* = 6.4" beside "κ's interval
/// includes 0" and an N* interval of −8.93 … 21.7. Two noisy repetitions at
/// four client counts that level off: the point estimate has a peak, the data
/// do not establish one.
#[test]
fn verdict_agrees_with_intervals_in_their_domain() {
    let pts = [
        (1.0, 21_000.0),
        (1.0, 18_000.0),
        (2.0, 37_000.0),
        (2.0, 30_000.0),
        (4.0, 54_000.0),
        (4.0, 44_000.0),
        (8.0, 54_000.0),
        (8.0, 46_000.0),
    ];
    let p = plan(&input(&pts)).unwrap();
    let peak = p.peak_n.expect("the point estimate has a peak");
    assert!(peak.value < 8.0, "{peak:?}");
    assert!(p.kappa.ci_low.unwrap() <= 0.0, "{:?}", p.kappa);
    assert!(!p.peak_established);
    assert_ne!(p.verdict, Verdict::Retrograde, "{}", p.verdict_text);
    assert_ne!(p.verdict, Verdict::ContentionThenCoherency);
    assert!(
        p.verdict_text.contains("no peak established"),
        "{}",
        p.verdict_text
    );
    assert!(!p.verdict_text.contains("retrograde"), "{}", p.verdict_text);
    // Every interval inside its domain: σ, κ ≥ 0; N* ≥ 1 and unbounded above.
    for e in [&p.sigma, &p.kappa] {
        assert!(e.ci_low.unwrap() >= 0.0, "{e:?}");
        assert!(e.ci_high.unwrap() <= 1.0, "{e:?}");
    }
    assert!(peak.ci_low.unwrap() >= 1.0, "{peak:?}");
    assert!(peak.unbounded_above && peak.ci_high.is_none(), "{peak:?}");
    let report = p.report(4);
    let cells: Vec<&String> = report
        .tables
        .iter()
        .flat_map(|t| t.rows.iter().flatten())
        .collect();
    assert!(cells.iter().any(|c| c.ends_with(", ∞)")), "{cells:?}");
}

/// A peak the data do establish keeps the retrograde verdict, and its N*
/// interval (on the log scale) is finite, brackets N* and stays above 1.
#[test]
fn established_peak_has_a_finite_interval() {
    let p = plan(&input(&EXAMPLE)).unwrap();
    assert!(p.peak_established);
    assert_eq!(p.verdict, Verdict::Retrograde);
    let n = p.peak_n.unwrap();
    assert!(!n.unbounded_above);
    assert!(n.ci_low.unwrap() >= 1.0 && n.ci_high.unwrap() > n.value);
}

/// A sweep on a busy machine: rates all over the place, σ = κ = 0 at their
/// bounds with R² = 0.26, used to be called "linear: no measurable
/// contention". Noise is not linearity.
#[test]
fn noise_is_not_called_linear() {
    let pts = [
        (1.0, 1_000.0),
        (1.0, 7_000.0),
        (2.0, 100.0),
        (2.0, 7_000.0),
        (4.0, 500.0),
        (4.0, 2_500.0),
        (8.0, 2_000.0),
        (8.0, 42_000.0),
    ];
    let p = plan(&input(&pts)).unwrap();
    assert!(p.r_squared < 0.9, "{}", p.r_squared);
    assert_ne!(p.verdict, Verdict::Linear, "{}", p.verdict_text);
    assert!(
        p.verdict_text.starts_with("undetermined"),
        "{}",
        p.verdict_text
    );
}
