//! Closed terminal populations (users with think time, such as TN3270
//! terminal users): exact Mean Value Analysis over single-server stations, and the
//! finite-source M/M/m//N ("machine-repairman") model for m processors.
//!
//! Exact MVA (PDQ's `PDQ_Exact.c`): with Q_k(0) = 0, for n = 1..N,
//! R_k(n) = D_k (1 + Q_k(n−1)), X(n) = n ÷ (Z + Σ R_k(n)), Q_k(n) = X(n) R_k(n).
//! One pass to the largest N answers every N of a sweep: O(N·K).
//!
//! Repairman: p_k ∝ N!/(N−k)! · (S/Z)^k ÷ β_k with β_k = k! for k ≤ m and
//! m!·m^(k−m) beyond. The weights overflow any float long before N = 256K, so
//! they are built in log space from the ratio p_k/p_{k−1} = (N−k+1)(S/Z) ÷
//! min(k, m) and normalised with log-sum-exp: O(N) per population.

use serde::Serialize;

use crate::error::PlanError;
use crate::report::{duration, num, pct, sig, Report, Table};

/// A service station with its demand per transaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Station {
    pub name: String,
    /// Service demand per transaction (visits × service time), seconds.
    pub demand_s: f64,
}

/// Inputs of `plan mva`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MvaInput {
    pub stations: Vec<Station>,
    /// Think time between a response and the user's next request, seconds.
    pub think_s: f64,
    /// Populations to solve for.
    pub users: Vec<u64>,
    /// Servers of the (single) station; above 1 selects the repairman model.
    pub processors: u32,
}

/// Which model solved the population.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    ExactMva,
    Repairman,
}

/// One station at one population.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StationResult {
    pub name: String,
    /// Utilisation of each server: X·D ÷ servers × 100.
    pub util_pct: f64,
    /// Mean transactions at the station (in service and waiting).
    pub queue_len: f64,
    /// Mean time per transaction at the station, seconds.
    pub residence_s: f64,
}

/// The model solved at one population.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub users: u64,
    pub throughput_tps: f64,
    /// Mean response time (excluding think time), seconds.
    pub response_s: f64,
    pub stations: Vec<StationResult>,
    /// min(N ÷ (D+Z), servers ÷ D_max).
    pub throughput_bound_tps: f64,
    /// max(D, N·D_max ÷ servers − Z).
    pub response_bound_s: f64,
    /// X·(R+Z): Little's law gives back N.
    pub littles_law_users: f64,
}

/// Result of `plan mva`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MvaPlan {
    pub inputs: MvaInput,
    pub model: Model,
    /// D = Σ D_k.
    pub total_demand_s: f64,
    /// D_max ÷ servers of the bottleneck.
    pub bottleneck_demand_s: f64,
    pub bottleneck: String,
    /// Throughput ceiling: servers ÷ D_max.
    pub max_throughput_tps: f64,
    /// N* = (D+Z) ÷ (D_max ÷ servers): where the two throughput bounds meet.
    pub knee_users: f64,
    pub points: Vec<Point>,
}

/// Largest population solved: every solver here is O(N), so this bounds a
/// typo's cost to about a second (published TN3270 capacity studies stop at
/// 256K).
pub const MAX_USERS: u64 = 16 * 1024 * 1024;
/// Largest sum over the requested populations (each is solved on its own).
pub const MAX_TOTAL_USERS: u64 = 4 * MAX_USERS;
/// Most processors of the repairman station.
pub const MAX_PROCESSORS: u32 = 4096;

fn validate(input: &MvaInput) -> Result<(), PlanError> {
    if input.stations.is_empty() {
        return Err(PlanError::missing(
            "demand",
            "give a station's demand, e.g. --demand cpu=0.176ms",
        ));
    }
    if input.stations.iter().all(|s| s.demand_s <= 0.0) {
        return Err(PlanError::bad(
            "demand",
            "0",
            "every demand is 0",
            "give at least one demand above 0",
        ));
    }
    if input.users.is_empty() {
        return Err(PlanError::missing(
            "users",
            "give populations, e.g. --users 8K,16K,256K",
        ));
    }
    if let Some(&n) = input.users.iter().find(|&&n| n > MAX_USERS) {
        return Err(PlanError::bad(
            "users",
            &n.to_string(),
            "more than 16M users in one population",
            "give at most 16M (16,777,216); the solvers are O(N)",
        ));
    }
    let total: u64 = input.users.iter().sum();
    if total > MAX_TOTAL_USERS {
        return Err(PlanError::bad(
            "users",
            &total.to_string(),
            "the populations add up to more than 64M users",
            "give fewer or smaller populations (each is solved in O(N))",
        ));
    }
    if input.processors == 0 || input.processors > MAX_PROCESSORS {
        return Err(PlanError::bad(
            "processors",
            &input.processors.to_string(),
            "out of range",
            "give 1 to 4096 processors, e.g. 4",
        ));
    }
    if input.processors > 1 && input.stations.len() > 1 {
        return Err(PlanError::Invalid(format!(
            "--processors {} takes exactly one --demand (the repairman model solves one m-server station); with several stations, use --processors 1 and fold the processors into the demand (D ÷ m)",
            input.processors
        )));
    }
    Ok(())
}

/// Solves the model for every requested population.
pub fn plan(input: &MvaInput) -> Result<MvaPlan, PlanError> {
    validate(input)?;
    let m = f64::from(input.processors);
    let total_demand_s: f64 = input.stations.iter().map(|s| s.demand_s).sum();
    let bottleneck_station = input
        .stations
        .iter()
        .max_by(|a, b| a.demand_s.total_cmp(&b.demand_s))
        .expect("validated non-empty");
    let bottleneck_demand_s = bottleneck_station.demand_s / m;
    let (model, mut points) = if input.processors > 1 {
        let s = &input.stations[0];
        let points = input
            .users
            .iter()
            .map(|&n| repairman(n, input.processors, s.demand_s, input.think_s, &s.name))
            .collect();
        (Model::Repairman, points)
    } else {
        (
            Model::ExactMva,
            exact_mva(&input.stations, input.think_s, &input.users),
        )
    };
    for p in &mut points {
        let n = p.users as f64;
        p.throughput_bound_tps =
            (n / (total_demand_s + input.think_s)).min(1.0 / bottleneck_demand_s);
        p.response_bound_s = total_demand_s.max(n * bottleneck_demand_s - input.think_s);
        p.littles_law_users = p.throughput_tps * (p.response_s + input.think_s);
    }
    Ok(MvaPlan {
        inputs: input.clone(),
        model,
        total_demand_s,
        bottleneck_demand_s,
        bottleneck: bottleneck_station.name.clone(),
        max_throughput_tps: 1.0 / bottleneck_demand_s,
        knee_users: (total_demand_s + input.think_s) / bottleneck_demand_s,
        points,
    })
}

/// Exact MVA, one pass up to the largest population; returns the points in
/// the order of `users`.
pub fn exact_mva(stations: &[Station], think_s: f64, users: &[u64]) -> Vec<Point> {
    let max_n = users.iter().copied().max().unwrap_or(0);
    let mut wanted: Vec<u64> = users.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut next = wanted.iter().peekable();
    let mut queue = vec![0.0f64; stations.len()];
    let mut residence = vec![0.0f64; stations.len()];
    let mut solved = Vec::with_capacity(wanted.len());
    for n in 1..=max_n {
        for (k, s) in stations.iter().enumerate() {
            residence[k] = s.demand_s * (1.0 + queue[k]);
        }
        let response_s: f64 = residence.iter().sum();
        let x = n as f64 / (think_s + response_s);
        for k in 0..stations.len() {
            queue[k] = x * residence[k];
        }
        if next.peek() == Some(&&n) {
            next.next();
            let st = stations
                .iter()
                .enumerate()
                .map(|(k, s)| StationResult {
                    name: s.name.clone(),
                    util_pct: x * s.demand_s * 100.0,
                    queue_len: queue[k],
                    residence_s: residence[k],
                })
                .collect();
            solved.push(point(n, x, response_s, st));
        }
    }
    users
        .iter()
        .map(|n| {
            solved
                .iter()
                .find(|p| p.users == *n)
                .cloned()
                .expect("every N solved")
        })
        .collect()
}

fn point(users: u64, throughput_tps: f64, response_s: f64, stations: Vec<StationResult>) -> Point {
    Point {
        users,
        throughput_tps,
        response_s,
        stations,
        throughput_bound_tps: 0.0,
        response_bound_s: 0.0,
        littles_law_users: 0.0,
    }
}

/// The finite-source M/M/m//N model: `n` users, `m` servers, service time
/// `service_s`, think time `think_s`. Response time comes from Little's law at
/// the station (R = L ÷ X), so N = X(R+Z) is a real check of the solution.
pub fn repairman(n: u64, m: u32, service_s: f64, think_s: f64, name: &str) -> Point {
    let mf = f64::from(m);
    let (x, busy, queue_len) = if think_s == 0.0 {
        // Everyone is always at the station.
        let busy = (n as f64).min(mf);
        (busy / service_s, busy, n as f64)
    } else {
        let log_rho = (service_s / think_s).ln();
        let mut log_w = Vec::with_capacity(n as usize + 1);
        log_w.push(0.0f64);
        for k in 1..=n {
            let prev = log_w[k as usize - 1];
            let servers = (k as f64).min(mf);
            log_w.push(prev + ((n - k + 1) as f64).ln() + log_rho - servers.ln());
        }
        let top = log_w.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (mut total, mut busy, mut queue) = (0.0, 0.0, 0.0);
        for (k, lw) in log_w.iter().enumerate() {
            let w = (lw - top).exp();
            total += w;
            busy += w * (k as f64).min(mf);
            queue += w * k as f64;
        }
        let busy = busy / total;
        (busy / service_s, busy, queue / total)
    };
    let response_s = queue_len / x;
    let station = StationResult {
        name: name.to_string(),
        util_pct: busy / mf * 100.0,
        queue_len,
        residence_s: response_s,
    };
    point(n, x, response_s, vec![station])
}

impl MvaPlan {
    /// The human tables: bounds with their formulas, then the sweep.
    pub fn report(&self, digits: usize) -> Report {
        let d = digits.max(4);
        let m = self.inputs.processors;
        let title = match self.model {
            Model::ExactMva => "Closed population, exact MVA".to_string(),
            Model::Repairman => format!("Closed population, finite-source M/M/{m} (repairman)"),
        };
        Report {
            title: format!(
                "{title}: think time Z = {}",
                duration(self.inputs.think_s, 9)
            ),
            tables: vec![self.bounds_table(d), self.sweep_table(d)],
            notes: Vec::new(),
            warnings: Vec::new(),
        }
    }

    fn bounds_table(&self, d: usize) -> Table {
        let i = &self.inputs;
        let m = i.processors;
        let dmax = duration(self.bottleneck_demand_s, d);
        let total = duration(self.total_demand_s, d);
        let demands: Vec<String> = i.stations.iter().map(|s| duration(s.demand_s, 9)).collect();
        let per = if m > 1 {
            format!(" ÷ {m} processors")
        } else {
            String::new()
        };
        let mut t = Table::steps();
        t.row([
            "total demand D".to_string(),
            demands.join(" + "),
            total.clone(),
        ]);
        t.row([
            "bottleneck D_max".to_string(),
            format!(
                "{} ({}){per}",
                duration(self.bottleneck_demand_s * f64::from(m), 9),
                self.bottleneck
            ),
            dmax.clone(),
        ]);
        t.row([
            "throughput ceiling".to_string(),
            format!("1 ÷ {dmax}"),
            format!("{} tr/s", sig(self.max_throughput_tps, d)),
        ]);
        t.row([
            "knee N*".to_string(),
            format!("(D {total} + Z {}) ÷ {dmax}", duration(i.think_s, 9)),
            format!("{} users", sig(self.knee_users, d)),
        ]);
        t
    }

    fn sweep_table(&self, d: usize) -> Table {
        let mut header = vec!["N".to_string(), "X tr/s".into(), "R".into()];
        for s in &self.inputs.stations {
            header.push(format!("U {}", s.name));
            header.push(format!("Q {}", s.name));
        }
        header.extend(["X bound".to_string(), "R bound".into(), "X(R+Z)".into()]);
        let mut t = Table {
            caption: Some(
                "X ≤ min(N ÷ (D+Z), 1 ÷ D_max); R ≥ max(D, N·D_max − Z); Little: N = X(R+Z)".into(),
            ),
            header,
            rows: Vec::new(),
        };
        for p in &self.points {
            let mut row = vec![
                num(p.users as f64),
                sig(p.throughput_tps, d),
                duration(p.response_s, d),
            ];
            for s in &p.stations {
                row.push(pct(s.util_pct, d));
                row.push(sig(s.queue_len, d));
            }
            row.extend([
                sig(p.throughput_bound_tps, d),
                duration(p.response_bound_s, d),
                sig(p.littles_law_users, d),
            ]);
            t.rows.push(row);
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn station(d: f64) -> Vec<Station> {
        vec![Station {
            name: "cpu".into(),
            demand_s: d,
        }]
    }

    /// Reference vector, worked by hand from the MVA recurrence: N = 10,
    /// D = 0.1 s, Z = 1 s gives X = 7.854176 (7.8541766 unrounded: the
    /// reference truncates) and R = 0.273208.
    #[test]
    fn anchor_vector_exact_mva() {
        let p = &exact_mva(&station(0.1), 1.0, &[10])[0];
        assert!(
            (p.throughput_tps - 7.854176).abs() < 1e-6,
            "{}",
            p.throughput_tps
        );
        assert!((p.response_s - 0.273208).abs() < 1e-6, "{}", p.response_s);
    }

    /// The same reference population on two processors (X = 8.961362,
    /// R = 0.115902 by hand).
    #[test]
    fn anchor_vector_repairman_two_processors() {
        let p = repairman(10, 2, 0.1, 1.0, "cpu");
        assert!(
            (p.throughput_tps - 8.961362).abs() < 1e-6,
            "{}",
            p.throughput_tps
        );
        assert!((p.response_s - 0.115902).abs() < 1e-6, "{}", p.response_s);
    }

    /// The largest TN3270 capacity-study population: 256K users, 30 s think, 0.176 ms per
    /// transaction on 4 processors, solved exactly without overflow.
    #[test]
    fn tn3270_population_256k_on_four_processors() {
        let input = MvaInput {
            stations: station(0.000176),
            think_s: 30.0,
            users: vec![8192, 262_144],
            processors: 4,
        };
        let p = plan(&input).unwrap();
        let big = &p.points[1];
        assert!(big.throughput_tps.is_finite());
        assert!((big.throughput_tps - 262_144.0 / 30.000176).abs() < 1.0);
        assert!(
            (big.stations[0].util_pct - 38.45).abs() < 0.05,
            "{}",
            big.stations[0].util_pct
        );
        assert!((big.littles_law_users - 262_144.0).abs() < 1e-6 * 262_144.0);
        // And the one-processor MVA at 256K is fast and finite too.
        let one = exact_mva(&station(0.000176), 30.0, &[262_144]);
        assert!(one[0].throughput_tps <= 1.0 / 0.000176 + 1e-9);
    }

    #[test]
    fn sweep_keeps_the_requested_order() {
        let pts = exact_mva(&station(0.1), 1.0, &[10, 1, 10]);
        assert_eq!(
            pts.iter().map(|p| p.users).collect::<Vec<_>>(),
            vec![10, 1, 10]
        );
        assert!((pts[1].throughput_tps - 1.0 / 1.1).abs() < 1e-12);
    }

    #[test]
    fn batch_population_without_think_time() {
        let p = repairman(3, 2, 0.5, 0.0, "cpu");
        assert_eq!(p.throughput_tps, 4.0);
        assert_eq!(p.response_s, 0.75);
        let mva = &exact_mva(&station(0.5), 0.0, &[3])[0];
        assert!((mva.throughput_tps - 2.0).abs() < 1e-12);
    }

    #[test]
    fn bounds_and_knee() {
        let p = plan(&MvaInput {
            stations: vec![
                Station {
                    name: "cpu".into(),
                    demand_s: 0.1,
                },
                Station {
                    name: "net".into(),
                    demand_s: 0.05,
                },
            ],
            think_s: 1.0,
            users: vec![1, 10, 100],
            processors: 1,
        })
        .unwrap();
        assert_eq!(p.bottleneck, "cpu");
        assert!((p.knee_users - 11.5).abs() < 1e-12);
        for pt in &p.points {
            assert!(pt.throughput_tps <= pt.throughput_bound_tps * (1.0 + 1e-12));
            assert!(pt.response_s >= pt.response_bound_s * (1.0 - 1e-12));
        }
        assert!(p.report(3).tables[1].rows.len() == 3);
    }

    #[test]
    fn several_stations_with_processors_is_refused() {
        let e = plan(&MvaInput {
            stations: vec![
                Station {
                    name: "cpu".into(),
                    demand_s: 0.1,
                },
                Station {
                    name: "net".into(),
                    demand_s: 0.05,
                },
            ],
            think_s: 1.0,
            users: vec![1],
            processors: 2,
        })
        .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--processors 2 takes exactly one --demand"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// With one processor the repairman model is the one-station MVA.
        #[test]
        fn repairman_with_one_processor_is_mva(n in 1u64..300, d in 1e-4f64..1.0, z in 0.0f64..10.0) {
            let a = &exact_mva(&station(d), z, &[n])[0];
            let b = repairman(n, 1, d, z, "cpu");
            prop_assert!((a.throughput_tps - b.throughput_tps).abs() <= 1e-9 * a.throughput_tps);
            prop_assert!((a.response_s - b.response_s).abs() <= 1e-8 * a.response_s.max(d));
        }

        /// Little's law N = X(R+Z) holds for every solved model.
        #[test]
        fn littles_law_holds(n in 1u64..2000, m in 1u32..8, d in 1e-4f64..1.0, z in 0.0f64..10.0,
                             d2 in 0.0f64..0.5) {
            let repair = plan(&MvaInput { stations: station(d), think_s: z, users: vec![n], processors: m }).unwrap();
            let two = plan(&MvaInput {
                stations: vec![Station { name: "cpu".into(), demand_s: d }, Station { name: "net".into(), demand_s: d2 }],
                think_s: z, users: vec![n], processors: 1,
            }).unwrap();
            for p in repair.points.iter().chain(two.points.iter()) {
                prop_assert!((p.littles_law_users - n as f64).abs() <= 1e-9 * n as f64, "{} vs {}", p.littles_law_users, n);
            }
        }
    }
}
