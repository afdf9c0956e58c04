//! Tests of the warning checks and their messages.

use super::*;
use crate::stats::{summarize_repetitions, Iterations};
use stackbench_record::RepetitionValues;
use stackbench_record::{
    CpuBreakdown, CpuFigures, MeasureSummary, ProcessCpu, Repetitions, SideCpu,
};

/// A plausible class with none of the optional figures.
pub(crate) fn sample_class() -> stackbench_record::ClassResult {
    stackbench_record::ClassResult::sample()
}

fn side(util_pct: f64) -> SideCpu {
    SideCpu {
        cpus: vec![0, 1],
        window_s: 10.0,
        util_pct,
        cpu_seconds: util_pct / 100.0 * 20.0,
        breakdown: CpuBreakdown {
            idle: (100.0 - util_pct) / 100.0 * 20.0,
            ..CpuBreakdown::default()
        },
        ..SideCpu::default()
    }
}

#[test]
fn driver_saturation_by_set_or_by_thread() {
    assert_eq!(check_driver_saturated(&side(50.0), None, None), None);
    assert!(matches!(
        check_driver_saturated(&side(95.0), None, None),
        Some(Warning::DriverSaturated { busy_pct, background_pct: None }) if busy_pct == 95.0
    ));
    // Unpinned 2-CPU view at 50%, but the one driver thread used 9.5 of 10 s.
    let mut one_thread = side(50.0);
    one_thread.process = Some(ProcessCpu {
        cpu_seconds: 9.5,
        ..ProcessCpu::default()
    });
    assert!(check_driver_saturated(&one_thread, Some(1), None).is_some());
    assert!(check_driver_saturated(&one_thread, Some(2), None).is_none());
}

/// The CPU-set view counts other work on the driver's CPUs; when the idle
/// baseline already showed it, the warning says the figure includes it
/// instead of blaming the driver alone.
#[test]
fn driver_saturation_names_background_load_seen_in_the_baseline() {
    let w = check_driver_saturated(&side(95.0), None, Some(60.0)).unwrap();
    assert_eq!(w.code(), "driver_saturated");
    let m = w.to_string();
    assert!(m.contains("already 60% busy with other work"), "{m}");
    assert!(!m.contains("measures the load generator"), "{m}");
    // A quiet baseline (below the background bound) changes nothing.
    let quiet = check_driver_saturated(&side(95.0), None, Some(2.0)).unwrap();
    assert!(quiet.to_string().contains("measures the load generator"));
    // The driver's own threads at 95%: the driver is saturated whatever else ran.
    let mut own = side(95.0);
    own.process = Some(ProcessCpu {
        cpu_seconds: 9.5,
        ..ProcessCpu::default()
    });
    let w = check_driver_saturated(&own, Some(1), Some(60.0)).unwrap();
    assert!(w.to_string().contains("measures the load generator"), "{w}");
}

#[test]
fn shared_cpus() {
    assert!(check_shared_cpus(&[0], &[0], true).is_some());
    assert!(check_shared_cpus(&[], &[], true).is_some());
    assert!(check_shared_cpus(&[0], &[1], true).is_none());
    assert!(check_shared_cpus(&[0], &[0], false).is_none());
    let w = check_shared_cpus(&[], &[1], true).unwrap();
    assert_eq!(w.code(), "shared_cpus");
    assert!(w.to_string().contains("all (not pinned)"), "{w}");
}

#[test]
fn steal_threshold() {
    let mut s = side(50.0); // 10 busy CPU-s + 10 idle = 20 CPU-s in all
    s.breakdown.steal = 0.2; // exactly 1%: not above
    assert_eq!(check_steal(Side::Server, &s), None);
    s.breakdown.steal = 0.5;
    let w = check_steal(Side::Server, &s).unwrap();
    assert!(
        w.to_string()
            .starts_with("responder (server) CPUs lost 2.5%"),
        "{w}"
    );
    assert_eq!(check_steal(Side::Client, &SideCpu::default()), None);
}

#[test]
fn background_governor_length() {
    assert!(check_background_load(&side(3.0)).is_none());
    assert_eq!(
        check_background_load(&side(7.0)).unwrap().code(),
        "background_load"
    );
    let govs = [
        (0, Some("performance".to_string())),
        (1, Some("powersave".to_string())),
        (2, None),
    ];
    let w = check_governors(&govs).unwrap();
    assert!(w.to_string().contains("cpu1=powersave"), "{w}");
    assert!(check_governors(&[(0, None)]).is_none());
    assert!(check_run_length(10.0, 1_000_000).is_none());
    assert!(check_run_length(4.9, 1_000_000).is_some());
    assert!(check_run_length(10.0, 999).is_some());
}

#[test]
fn rate_steadiness() {
    assert!(check_rate_steadiness(&[100.0, 102.0, 98.0, 101.0]).is_none());
    let w = check_rate_steadiness(&[100.0, 150.0, 60.0, 100.0]).unwrap();
    assert_eq!(w.code(), "rate_unsteady");
    // Too few seconds to judge.
    assert!(check_rate_steadiness(&[100.0, 10.0]).is_none());
    assert!(check_rate_steadiness(&[0.0, 0.0, 0.0]).is_none());
}

fn runs(rates: &[f64]) -> Vec<RepetitionValues> {
    rates
        .iter()
        .map(|&r| RepetitionValues {
            rate_tps: r,
            ..RepetitionValues::default()
        })
        .collect()
}

#[test]
fn confidence_not_reached() {
    let it = Iterations::confidence(99.0, 5.0, 3, 3).unwrap();
    let rep = summarize_repetitions(&runs(&[100.0, 150.0, 60.0]), &it);
    let w = check_confidence(&rep).unwrap();
    assert_eq!(w.code(), "confidence_not_reached");
    assert!(w.to_string().contains("rate"), "{w}");
    let ok = summarize_repetitions(&runs(&[100.0, 100.1, 99.9]), &it);
    assert!(check_confidence(&ok).is_none());
    let fixed = summarize_repetitions(&runs(&[1.0, 9.0]), &Iterations::repeat(2).unwrap());
    assert!(check_confidence(&fixed).is_none());
    let empty = Repetitions {
        target_width_pct: Some(5.0),
        reached: Some(false),
        rate_tps: MeasureSummary::default(),
        ..Repetitions::default()
    };
    assert!(check_confidence(&empty).is_some());
}

/// One warning of every kind, with figures that make each message whole.
fn every_warning() -> Vec<Warning> {
    vec![
        Warning::DriverSaturated {
            busy_pct: 95.0,
            background_pct: None,
        },
        Warning::DriverSaturated {
            busy_pct: 95.0,
            background_pct: Some(40.0),
        },
        Warning::DriverSpinning { busy_pct: 99.0 },
        Warning::SharedCpus {
            client_cpus: vec![0],
            server_cpus: vec![0],
        },
        Warning::StealPresent {
            side: Side::Client,
            steal_pct: 2.0,
        },
        Warning::BackgroundLoad {
            busy_pct: 7.0,
            cpus: vec![1],
        },
        Warning::RateUnsteady { cv_pct: 12.0 },
        Warning::RunTooShort {
            window_s: 1.0,
            transactions: 5,
        },
        Warning::GovernorNotPerformance {
            governors: vec![(0, "powersave".into())],
        },
        Warning::ConfidenceNotReached {
            level_pct: 99.0,
            target_width_pct: 5.0,
            repetitions: 30,
            measures: vec![("rate", Some(7.5))],
        },
        Warning::OptionsNotApplied {
            transport: "unix".into(),
            notes: vec!["nodelay not set: AF_UNIX has no Nagle algorithm".into()],
        },
        Warning::LittleLawOff {
            clients: 100,
            implied_clients: 90.0,
            connected: 100,
            errors: 0,
            lag_p99_us: None,
        },
        Warning::DriverBehind {
            lag_p99_us: 2000.0,
            late: 5,
            dropped: 0,
        },
        Warning::GeneratorTail {
            lag_p99_us: 98_000.0,
            latency_p99_us: 140_000.0,
            share_pct: 70.0,
        },
        Warning::LabChanged {
            changes: vec!["veth0 rate 1Gbit → 100Mbit".into()],
        },
        Warning::IpsecIdle {
            interfaces: vec!["a/veth0 (out +0, in +0)".into()],
        },
        Warning::VirtualHostIdle {
            interfaces: vec!["sb-v-server/v-0bv0 (rx +0, tx +0)".into()],
        },
        Warning::IoFallback {
            reason: "io uring not used, this run measured epoll: CRR is not covered".into(),
        },
        Warning::KtlsNotCarried {
            why: vec!["TlsTxSw did not rise".into()],
        },
        Warning::TlsUnverified {
            server: "the target".into(),
        },
    ]
}

#[test]
fn codes_are_stable_snake_case_and_records_carry_them() {
    for w in &every_warning() {
        assert!(w.code().chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        let r = w.to_record(Some("RR1(1B/1B)"));
        assert_eq!(r.code, w.code());
        assert!(
            r.message.contains(':'),
            "message should say what to change: {w}"
        );
    }
}

#[test]
fn class_warnings_collects_class_level_checks() {
    let class = sample_class();
    assert!(class_warnings(&class, Some(1), false, None).is_empty());
    let mut bad = class;
    bad.duration_s = 1.0;
    bad.per_second_tps = vec![100.0, 10.0, 100.0];
    bad.cpu = Some(CpuFigures::combine(Some(side(99.0)), None, None));
    let codes: Vec<&str> = class_warnings(&bad, None, false, None)
        .iter()
        .map(Warning::code)
        .collect();
    assert_eq!(
        codes,
        vec!["run_too_short", "rate_unsteady", "driver_saturated"]
    );
    // A spinning driver is busy by design: the warning says so instead.
    let spun = class_warnings(&bad, None, true, None);
    assert!(spun.iter().all(|w| w.code() != "driver_saturated"));
    let w = spun.iter().find(|w| w.code() == "driver_spinning").unwrap();
    assert!(w.to_string().contains("does not show saturation"), "{w}");
}

/// A line continuation that lost its `\\` keeps the next line's indentation
/// inside the message (driver_behind and little_law_off once carried runs of
/// 20 spaces).
#[test]
fn no_message_has_two_spaces_in_a_row() {
    let mut all = every_warning();
    all.push(Warning::LittleLawOff {
        clients: 100,
        implied_clients: 110.0,
        connected: 100,
        errors: 0,
        lag_p99_us: Some(40.0),
    });
    for w in &all {
        let m = w.to_string();
        assert!(!m.contains("  "), "[{}] {m}", w.code());
    }
}

#[test]
fn little_law_prints_the_gap_and_the_count_in_words() {
    let w = Warning::LittleLawOff {
        clients: 1,
        implied_clients: 0.95,
        connected: 1,
        errors: 0,
        lag_p99_us: None,
    };
    let m = w.to_string();
    assert!(m.contains("N = 1 client but X(R+Z) = 0.9500;"), "{m}");
    let w = Warning::LittleLawOff {
        clients: 8192,
        implied_clients: 7782.4,
        connected: 8192,
        errors: 0,
        lag_p99_us: None,
    };
    assert!(
        w.to_string()
            .contains("N = 8192 clients but X(R+Z) = 7782;"),
        "{w}"
    );
}
