//! The checks of user-population runs (think time, open loop): Little's law
//! N = X(R+Z), and whether the driver kept to its schedule.

use super::{
    Warning, GENERATOR_LAG_P99_US, GENERATOR_TAIL_MIN_LAG_US, GENERATOR_TAIL_SHARE_PCT,
    LITTLE_LAW_PCT,
};
use stackbench_record::{ClassResult, PacingMode};

/// Little's law N = X(R+Z) for a think-time or open-loop class: X the
/// measured rate, R the mean time a request kept its connection busy (for
/// the open loop the uncorrected latency), Z the measured mean wait between
/// a response and the next request.
pub fn check_little_law(class: &ClassResult) -> Option<Warning> {
    let p = class.population.as_ref()?;
    if p.pacing == PacingMode::Closed || class.rate_tps <= 0.0 {
        return None;
    }
    let wait_s = p.wait_mean_s?;
    let busy_us = p.latency_uncorrected_us.or(class.latency_us)?.mean;
    let implied = class.rate_tps * (busy_us / 1e6 + wait_s);
    let n = f64::from(class.clients);
    (100.0 * (implied / n - 1.0).abs() > LITTLE_LAW_PCT).then(|| Warning::LittleLawOff {
        clients: class.clients,
        implied_clients: implied,
        connected: p.connected,
        errors: class.errors,
        lag_p99_us: p.generator_lag_us.map(|l| l.p99),
    })
}

/// Generator lag p99 above its bound, or dropped sends.
pub fn check_driver_behind(class: &ClassResult) -> Option<Warning> {
    let p = class.population.as_ref()?;
    let lag_p99_us = p.generator_lag_us.map_or(0.0, |l| l.p99);
    (lag_p99_us > GENERATOR_LAG_P99_US || p.dropped > 0).then_some(Warning::DriverBehind {
        lag_p99_us,
        late: p.late,
        dropped: p.dropped,
    })
}

/// The generator's lag is a large share of the latency tail.
pub fn check_generator_tail(class: &ClassResult) -> Option<Warning> {
    let p = class.population.as_ref()?;
    let share_pct = p.generator_lag_p99_share_pct?;
    let lag_p99_us = p.generator_lag_us?.p99;
    let latency_p99_us = class.latency_us?.p99;
    (share_pct >= GENERATOR_TAIL_SHARE_PCT && lag_p99_us > GENERATOR_TAIL_MIN_LAG_US).then_some(
        Warning::GeneratorTail {
            lag_p99_us,
            latency_p99_us,
            share_pct,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::{LagUs, LatencyUs, PopulationFigures};

    fn population(clients: u32, rate_tps: f64, r_us: f64, z_s: f64) -> ClassResult {
        let mut c = crate::warnings::tests::sample_class();
        c.clients = clients;
        c.rate_tps = rate_tps;
        c.latency_us = Some(LatencyUs {
            mean: r_us,
            ..Default::default()
        });
        c.population = Some(PopulationFigures {
            pacing: PacingMode::Think,
            wait_mean_s: Some(z_s),
            connected: clients,
            generator_lag_us: Some(LagUs {
                p50: 10.0,
                p99: 50.0,
                max: 90.0,
            }),
            ..Default::default()
        });
        c
    }

    #[test]
    fn little_law_within_two_percent_or_says_which_way() {
        // 8192 users, 30 s think, 100 µs response: X = 8192 / 30.0001.
        let ok = population(8192, 8192.0 / 30.0001, 100.0, 30.0);
        assert!(check_little_law(&ok).is_none());
        let low = population(8192, 0.95 * 8192.0 / 30.0001, 100.0, 30.0);
        let w = check_little_law(&low).unwrap();
        assert_eq!(w.code(), "little_law_off");
        assert!(w.to_string().contains("-5.0%"), "{w}");
        assert!(w.to_string().contains("fewer clients cycled"), "{w}");
        let high = population(100, 1.03 * 100.0 / 1.0001, 100.0, 1.0);
        assert!(check_little_law(&high)
            .unwrap()
            .to_string()
            .contains("window is short"));
        // Open loop: R is the uncorrected latency (the connection's busy time).
        let mut open = population(10, 1000.0, 5_000.0, 0.0099);
        let p = open.population.as_mut().unwrap();
        p.pacing = PacingMode::Open;
        p.latency_uncorrected_us = Some(LatencyUs {
            mean: 100.0,
            ..Default::default()
        });
        assert!(check_little_law(&open).is_none());
        // Closed-loop classes are not checked.
        assert!(check_little_law(&crate::warnings::tests::sample_class()).is_none());
    }

    #[test]
    fn driver_behind_on_lag_or_drops() {
        let mut c = population(10, 1.0, 1.0, 1.0);
        assert!(check_driver_behind(&c).is_none());
        c.population.as_mut().unwrap().dropped = 3;
        assert_eq!(check_driver_behind(&c).unwrap().code(), "driver_behind");
        let p = c.population.as_mut().unwrap();
        p.dropped = 0;
        p.generator_lag_us.as_mut().unwrap().p99 = 1500.0;
        assert!(check_driver_behind(&c)
            .unwrap()
            .to_string()
            .contains("lag p99 1500 µs"));
    }

    #[test]
    fn generator_tail_when_the_lag_is_half_the_latency_tail() {
        let mut c = population(10, 1.0, 1.0, 1.0);
        c.latency_us.as_mut().unwrap().p99 = 140_000.0;
        let p = c.population.as_mut().unwrap();
        p.generator_lag_us.as_mut().unwrap().p99 = 98_000.0;
        p.generator_lag_p99_share_pct = Some(70.0);
        let w = check_generator_tail(&c).unwrap();
        assert_eq!(w.code(), "generator_tail");
        assert!(
            w.to_string()
                .contains("lag p99 98000 µs is 70% of the latency p99 140000 µs"),
            "{w}"
        );
        // A small share, or a lag too small to be a tail, says nothing.
        c.population.as_mut().unwrap().generator_lag_p99_share_pct = Some(49.0);
        assert!(check_generator_tail(&c).is_none());
        let p = c.population.as_mut().unwrap();
        p.generator_lag_p99_share_pct = Some(90.0);
        p.generator_lag_us.as_mut().unwrap().p99 = 150.0;
        assert!(check_generator_tail(&c).is_none());
    }
}
