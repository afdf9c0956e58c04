//! Every spelling docs/running.md, docs/plan.md and docs/results.md document, the
//! refusals with their messages, and format→parse round trips.

use super::*;
use proptest::prelude::*;

fn secs(text: &str) -> f64 {
    parse_duration_s(text).unwrap()
}

fn problem<T: fmt::Debug>(r: Result<T, UnitError>) -> Problem {
    r.unwrap_err().problem
}

#[test]
fn documented_durations() {
    let ms = Duration::from_millis;
    for (text, want) in [
        ("10s", Duration::from_secs(10)),
        ("2s", Duration::from_secs(2)),
        ("30s", Duration::from_secs(30)),
        ("60s", Duration::from_secs(60)),
        ("500ms", ms(500)),
        ("1.5s", ms(1500)),
        ("2m", Duration::from_secs(120)),
        ("2min", Duration::from_secs(120)),
        ("1h", Duration::from_secs(3600)),
        ("0s", Duration::ZERO),
        ("5 s", Duration::from_secs(5)),
        ("0.176ms", Duration::from_micros(176)),
        ("199.666us", Duration::from_nanos(199_666)),
        ("199.666µs", Duration::from_nanos(199_666)),
        ("199.666μs", Duration::from_nanos(199_666)),
        ("0.000199666s", Duration::from_nanos(199_666)),
        ("1.5e-1ms", Duration::from_micros(150)),
        ("250ns", Duration::from_nanos(250)),
        (".5s", ms(500)),
    ] {
        assert_eq!(parse_duration(text).unwrap(), want, "{text}");
    }
}

#[test]
fn durations_in_seconds_scale_exactly() {
    assert_eq!(secs("199.666us"), 0.000199666);
    assert_eq!(secs("0.176ms"), 0.000176);
    assert_eq!(secs("0.000199666s"), 0.000199666);
    assert_eq!(secs("1.5e-1ms"), 0.00015);
    assert_eq!(secs("176µs"), 0.000176);
    assert_eq!(secs("2min"), 120.0);
    assert_eq!(secs("0.5h"), 1800.0);
    assert_eq!(secs("0.1ns"), 1e-10);
    assert_eq!(secs("-0s"), 0.0);
    assert!(secs("-0s").is_sign_positive());
}

#[test]
fn durations_refused_with_the_reason() {
    assert_eq!(problem(parse_duration("10")), Problem::DurationWithoutUnit);
    assert_eq!(
        problem(parse_duration("-1s")),
        Problem::Negative(UnitKind::Duration)
    );
    assert_eq!(problem(parse_duration("ms")), Problem::MissingNumber);
    assert_eq!(
        problem(parse_duration("3sec")),
        Problem::UnknownTimeUnit("sec".into())
    );
    assert_eq!(problem(parse_duration("1.2.3s")), Problem::NotANumber);
    for too_long in ["1e99h", "1000000001s", "2e7m"] {
        assert!(matches!(
            problem(parse_duration(too_long)),
            Problem::TooLarge(_)
        ));
        assert!(matches!(
            problem(parse_duration_s(too_long)),
            Problem::TooLarge(_)
        ));
    }
    let e = parse_duration("10").unwrap_err().to_string();
    assert!(
        e.starts_with(
            "bad duration '10': the duration has no unit (seconds or milliseconds?); write"
        ),
        "{e}"
    );
    let e = parse_duration("-1s").unwrap_err().to_string();
    assert!(e.contains("a duration cannot be negative"), "{e}");
}

#[test]
fn format_duration_picks_the_largest_exact_unit() {
    assert_eq!(format_duration(Duration::ZERO), "0s");
    assert_eq!(format_duration(Duration::from_secs(120)), "2m");
    assert_eq!(format_duration(Duration::from_secs(7200)), "2h");
    assert_eq!(format_duration(Duration::from_millis(1500)), "1500ms");
    assert_eq!(format_duration(Duration::from_nanos(199_666)), "199666ns");
    assert_eq!(format_duration(Duration::from_micros(176)), "176us");
}

#[test]
fn documented_sizes() {
    for (text, want) in [
        ("1B", 1),
        ("64B", 64),
        ("100B", 100),
        ("800B", 800),
        ("2004B", 2004),
        ("4kB", 4096),
        ("4KB", 4096),
        ("4KiB", 4096),
        ("8kB", 8192),
        ("256kB", 262_144),
        ("20MB", 20 << 20),
        ("2MiB", 2 << 20),
        ("501MB", 501 << 20),
        ("1GB", 1 << 30),
        ("1GiB", 1 << 30),
        ("1.5kB", 1536),
        ("0.5MB", 512 << 10),
        ("0B", 0),
        ("4 kB", 4096),
    ] {
        assert_eq!(parse_size(text).unwrap(), want, "{text}");
    }
    assert_eq!(parse_size_f64("4.1kB").unwrap(), 4198.4);
    assert_eq!(parse_size_f64("1.07GB").unwrap(), 1_148_903_751.68);
    assert_eq!(parse_size_f64("4382.72B").unwrap(), 4382.72);
}

#[test]
fn sizes_refused_with_the_reason() {
    assert_eq!(
        problem(parse_size("4kb")),
        Problem::UnknownSizeUnit("kb".into())
    );
    assert_eq!(
        problem(parse_size("4Mb")),
        Problem::UnknownSizeUnit("Mb".into())
    );
    assert_eq!(problem(parse_size("4096")), Problem::SizeWithoutUnit);
    assert_eq!(problem(parse_size_f64("4096")), Problem::SizeWithoutUnit);
    assert_eq!(problem(parse_size("kB")), Problem::MissingNumber);
    assert_eq!(
        problem(parse_size("-1kB")),
        Problem::Negative(UnitKind::Size)
    );
    assert_eq!(
        problem(parse_size("4.1kB")),
        Problem::NotWholeBytes("4198.4".into())
    );
    assert!(matches!(
        problem(parse_size("99999999999GB")),
        Problem::TooLarge(_)
    ));
    let e = parse_size("4kb").unwrap_err().to_string();
    assert!(
        e.starts_with("bad size '4kb': unknown size unit 'kb'; write"),
        "{e}"
    );
}

#[test]
fn format_size_picks_the_largest_exact_unit() {
    assert_eq!(format_size(1), "1B");
    assert_eq!(format_size(4096), "4kB");
    assert_eq!(format_size(4097), "4097B");
    assert_eq!(format_size(1536), "1536B");
    assert_eq!(format_size(20 << 20), "20MB");
    assert_eq!(format_size(3 << 30), "3GB");
}

#[test]
fn documented_rates() {
    let r = parse_rate("2/min").unwrap();
    assert_eq!((r.count, r.interval_s), (2.0, 60.0));
    assert_eq!(parse_rate("8275/s").unwrap().per_s(), 8275.0);
    assert_eq!(parse_rate("1/30s").unwrap().interval_s, 30.0);
    assert_eq!(parse_rate("120/h").unwrap().per_s(), 120.0 / 3600.0);
    assert_eq!(parse_rate("2/m").unwrap().interval_s, 60.0);
    assert_eq!(parse_rate("5 / 100ms").unwrap().per_s(), 50.0);
    assert_eq!(problem(parse_rate("8275")), Problem::NoSlash);
    assert_eq!(
        problem(parse_rate("8275/sec")),
        Problem::UnknownInterval("sec".into())
    );
    assert_eq!(problem(parse_rate("1/0s")), Problem::ZeroInterval);
    assert_eq!(
        problem(parse_rate("-1/s")),
        Problem::Negative(UnitKind::Rate)
    );
    assert_eq!(problem(parse_rate("x/s")), Problem::NotANumber);
}

#[test]
fn documented_bit_rates() {
    for (text, want) in [
        ("100Mbit", 100_000_000),
        ("1Gbit", 1_000_000_000),
        ("10Gbit", 10_000_000_000),
        ("2.5Gbit", 2_500_000_000),
        ("25 Gbit", 25_000_000_000),
        ("64kbit", 64_000),
        ("1500bit", 1500),
        ("0bit", 0),
        ("1.0004kbit", 1000),
    ] {
        assert_eq!(parse_bit_rate(text).unwrap(), want, "{text}");
    }
    assert_eq!(problem(parse_bit_rate("100")), Problem::BitRateWithoutUnit);
    assert_eq!(
        problem(parse_bit_rate("100mbit")),
        Problem::UnknownBitRateUnit("mbit".into())
    );
    assert_eq!(
        problem(parse_bit_rate("-1Mbit")),
        Problem::Negative(UnitKind::BitRate)
    );
    assert!(matches!(
        problem(parse_bit_rate("1e30Gbit")),
        Problem::TooLarge(_)
    ));
    let e = parse_bit_rate("10G").unwrap_err().to_string();
    assert!(
        e.starts_with("bad bit rate '10G': unknown bit rate unit 'G'; write a number and a unit: bit, kbit, Mbit or Gbit"),
        "{e}"
    );
    assert_eq!(format_bit_rate(100_000_000), "100Mbit");
    assert_eq!(format_bit_rate(2_500_000_000), "2500Mbit");
    assert_eq!(format_bit_rate(1234), "1234bit");
}

#[test]
fn documented_percentages_and_numbers() {
    assert_eq!(parse_pct("56.88%").unwrap(), 56.88);
    assert_eq!(parse_pct("56.88").unwrap(), 56.88);
    assert_eq!(parse_pct("36.3%").unwrap(), 36.3);
    assert_eq!(parse_pct("80 %").unwrap(), 80.0);
    assert_eq!(parse_pct("-5%").unwrap(), -5.0);
    assert!(parse_pct("%").is_err());
    assert!(parse_pct("5%%").is_err());
    assert_eq!(parse_number("1e-4").unwrap(), 1e-4);
    assert_eq!(parse_number("1592").unwrap(), 1592.0);
    for bad in ["x", "inf", "NaN", "1e999", "", "4s"] {
        assert!(parse_number(bad).is_err(), "{bad}");
    }
}

#[test]
fn documented_counts() {
    assert_eq!(parse_count("8000").unwrap(), 8000);
    assert_eq!(parse_count("256K").unwrap(), 262_144);
    assert_eq!(parse_count("1024K").unwrap(), 1 << 20);
    assert_eq!(parse_count("1M").unwrap(), 1 << 20);
    assert_eq!(parse_count("0").unwrap(), 0);
    assert_eq!(problem(parse_count("1.5K")), Problem::NotWhole);
    assert_eq!(
        problem(parse_count("8k")),
        Problem::UnknownSuffix("k".into())
    );
    assert_eq!(problem(parse_count("K")), Problem::MissingNumber);
    assert_eq!(
        problem(parse_count("-1")),
        Problem::Negative(UnitKind::Count)
    );
    assert!(matches!(
        problem(parse_count("99999999999999999999")),
        Problem::TooLarge(_)
    ));
    assert_eq!(format_count(262_144), "256K");
    assert_eq!(format_count(1000), "1000");
}

#[test]
fn documented_cpu_lists() {
    assert_eq!(parse_cpu_list("0").unwrap(), vec![0]);
    assert_eq!(parse_cpu_list("0,1").unwrap(), vec![0, 1]);
    assert_eq!(parse_cpu_list("0-3,8").unwrap(), vec![0, 1, 2, 3, 8]);
    assert_eq!(parse_cpu_list("0,2,4-5").unwrap(), vec![0, 2, 4, 5]);
    assert_eq!(parse_cpu_list("0-2,5,1").unwrap(), vec![0, 1, 2, 5]);
    assert_eq!(parse_cpu_list(" 3 , 1-2 ,").unwrap(), vec![1, 2, 3]);
    assert_eq!(parse_cpu_list("1023").unwrap(), vec![1023]);
    assert_eq!(problem(parse_cpu_list("")), Problem::EmptyCpuList);
    assert_eq!(problem(parse_cpu_list(",")), Problem::EmptyCpuList);
    assert_eq!(
        problem(parse_cpu_list("3-1")),
        Problem::ReversedRange("3-1".into())
    );
    assert_eq!(problem(parse_cpu_list("a")), Problem::BadCpu("a".into()));
    assert_eq!(
        problem(parse_cpu_list("0-x")),
        Problem::BadCpu("0-x".into())
    );
    assert!(matches!(
        problem(parse_cpu_list("0-1024")),
        Problem::TooLarge(_)
    ));
    let e = parse_cpu_list("a").unwrap_err().to_string();
    assert!(e.starts_with("bad CPU list 'a': "), "{e}");
    assert_eq!(format_cpu_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    assert_eq!(format_cpu_list(&[5, 0, 1, 1]), "0-1,5");
    assert_eq!(format_cpu_list(&[]), "");
}

proptest! {
    #[test]
    fn durations_round_trip(ns in 0u64..=MAX_DURATION_S * 1_000_000_000) {
        let d = Duration::from_nanos(ns);
        prop_assert_eq!(parse_duration(&format_duration(d)).unwrap(), d);
    }

    #[test]
    fn sizes_round_trip(bytes in any::<u64>()) {
        prop_assert_eq!(parse_size(&format_size(bytes)).unwrap(), bytes);
    }

    #[test]
    fn cpu_lists_round_trip(cpus in proptest::collection::vec(0usize..MAX_CPUS, 1..64)) {
        let mut want = cpus.clone();
        want.sort_unstable();
        want.dedup();
        prop_assert_eq!(parse_cpu_list(&format_cpu_list(&cpus)).unwrap(), want);
    }

    #[test]
    fn bit_rates_round_trip(bits in any::<u64>()) {
        prop_assert_eq!(parse_bit_rate(&format_bit_rate(bits)).unwrap(), bits);
    }

    #[test]
    fn counts_round_trip(count in any::<u64>()) {
        prop_assert_eq!(parse_count(&format_count(count)).unwrap(), count);
    }
}
