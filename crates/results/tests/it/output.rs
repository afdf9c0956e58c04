//! Snapshots of `run`'s output formats (human table, CSV, JSON) for a fixed
//! record, so any change to a column, a unit or a field name shows in review.

use stackbench_results::{fixtures, output};

fn record() -> stackbench_record::RunRecord {
    let mut r = fixtures::record(
        "RR10(4kB/4kB)+STR3(1B/20MB)",
        12_345.6,
        61.0,
        180.0,
        1_790_000_000.0,
    );
    r.classes[1].rx_bytes_per_s = 3.5 * 1024.0 * 1024.0 * 1024.0;
    // As stored: `io = auto` is settled before a run (a mix with a stream
    // runs on epoll).
    r.settings.io = stackbench_model::IoMode::Epoll;
    r
}

#[test]
fn human_table() {
    insta::assert_snapshot!(output::human(&record(), output::Layout::NOT_A_TERMINAL));
}

/// `--wide`: every column, as the table was before it was fitted.
#[test]
fn human_table_wide() {
    let layout = output::Layout {
        width: 80,
        wide: true,
    };
    insta::assert_snapshot!(output::human(&record(), layout));
}

/// An 80-column terminal: the key columns and the settings fit, so no row
/// wraps (all 17 columns took 186, and the settings wrapped at ~100).
#[test]
fn human_output_fits_80_columns() {
    let layout = output::Layout {
        width: 80,
        wide: false,
    };
    let text = output::human(&record(), layout);
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} > 80: {line}",
            line.chars().count()
        );
    }
    for key in [
        "class",
        "tr/s",
        "p50 µs",
        "p99 µs",
        "cli µs/tr",
        "srv µs/tr",
        "errors",
    ] {
        assert!(text.contains(key), "{key}: {text}");
    }
    assert!(text.contains("seed=default"), "{text}");
}

#[test]
fn human_output_of_a_population() {
    use stackbench_record::{
        LagUs, LatencyUs, MemoryFigures, PacingMode, PopulationFigures, SideMemory,
    };
    let mut r = fixtures::record(
        "RR8K(100B/800B)@30s+RR4(100B/100B)@2000/s",
        272.9,
        61.0,
        180.0,
        0.0,
    );
    let side = SideMemory {
        rss_bytes_per_conn: Some(312.0),
        kernel_sock_bytes_per_conn: Some(1280.0),
        ..SideMemory::default()
    };
    let server = SideMemory {
        kernel_sock_bytes_per_conn: None,
        notes: vec!["the run's own sockets could not be read".into()],
        ..side.clone()
    };
    r.classes[0].memory = Some(MemoryFigures {
        client: Some(side),
        server: Some(server),
    });
    r.classes[0].population = Some(PopulationFigures {
        pacing: PacingMode::Think,
        pacing_text: Some("30s".into()),
        think_mean_s: Some(30.0),
        wait_mean_s: Some(30.0012),
        generator_lag_us: Some(LagUs {
            p50: 12.0,
            p99: 48.0,
            max: 1500.0,
        }),
        generator_lag_p99_share_pct: Some(32.0),
        late: 1,
        connected: 8192,
        connect_s: 0.41,
        ..PopulationFigures::default()
    });
    r.classes[1].population = Some(PopulationFigures {
        pacing: PacingMode::Open,
        pacing_text: Some("2000/s".into()),
        offered_rate_tps: Some(2000.0),
        arrivals: Some("poisson".into()),
        wait_mean_s: Some(0.00192),
        latency_uncorrected_us: Some(LatencyUs {
            mean: 70.0,
            p50: 55.0,
            p99: 150.0,
            ..LatencyUs::default()
        }),
        connected: 4,
        connect_s: 0.002,
        ..PopulationFigures::default()
    });
    let text = output::human(&r, output::Layout::NOT_A_TERMINAL);
    let lines: String = text
        .lines()
        .skip_while(|l| !l.starts_with("population"))
        .take_while(|l| !l.starts_with("settings"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(lines);
}

#[test]
fn human_table_marks_an_incomplete_run() {
    let mut r = record();
    r.complete = false;
    r.incomplete_reason = Some("interrupted (Ctrl-C)".into());
    let text = output::human(&r, output::Layout::NOT_A_TERMINAL);
    assert!(text.contains("INCOMPLETE: interrupted (Ctrl-C)"), "{text}");
}

/// A side that busy-polled is named under the table, so its util% and
/// µs/tr are read as spin; a run without spin has no such line.
#[test]
fn human_table_says_which_side_spun() {
    use stackbench_model::settings::Spin;
    assert!(!output::human(&record(), output::Layout::NOT_A_TERMINAL).contains("busy-polled"));
    for (spin, side) in [
        (Spin::Driver, "spin driver: the driver (cli) busy-polled"),
        (
            Spin::Responder,
            "spin responder: the responder (srv) busy-polled",
        ),
        (
            Spin::Both,
            "spin both: both sides (cli and srv) busy-polled",
        ),
    ] {
        let mut r = record();
        r.settings.spin = spin;
        let text = output::human(&r, output::Layout::NOT_A_TERMINAL);
        assert!(text.contains(side), "{text}");
        assert!(text.contains("spin="), "settings block: {text}");
    }
}

#[test]
fn csv_rows() {
    insta::assert_snapshot!(output::csv(&record()));
}

#[test]
fn json_document() {
    insta::assert_snapshot!(output::json(&record()));
}
