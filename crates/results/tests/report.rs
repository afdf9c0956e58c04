//! The report and compare outputs on fabricated runs: insta snapshots of the
//! Markdown report and of compare's table, and the HTML report rendered in
//! headless Chromium (skipped with a message when Chromium is not installed;
//! CI installs it).

use std::path::Path;
use std::process::Command;

use stackbench_metrics::RunRecord;
use stackbench_results::compare::{compare, Margins, Verdict};
use stackbench_results::compare_output::{render_markdown, render_table};
use stackbench_results::fixtures::{environment, jitter, record, with_cpu};
use stackbench_results::metric::Metric;
use stackbench_results::report::{build_report, Report, ReportOptions, StudyInput};
use stackbench_results::store::{Labels, StoredRun};
use stackbench_results::study::parse_study;

/// Runs of one variant: `n` repetitions per workload with ±0.3% noise.
/// `scale` multiplies rate, `cpu` multiplies CPU per transaction.
fn runs(n: usize, scale: f64, cpu: f64, seed: u64) -> Vec<RunRecord> {
    let workloads = [
        ("RR60(4kB/4kB)", 95_000.0, 500.0, 1_400.0, 9.0, 8.0),
        ("CRR40(64B/8kB)", 21_000.0, 1_700.0, 4_800.0, 38.0, 45.0),
        ("STR3(1B/20MB)", 260.0, 11_000.0, 16_000.0, 2_900.0, 3_500.0),
        ("STR3(20MB/1B)", 240.0, 12_000.0, 18_000.0, 3_400.0, 3_100.0),
    ];
    let mut out = Vec::new();
    for rep in 0..n {
        for (wi, (w, rate, p50, p99, c_us, s_us)) in workloads.iter().enumerate() {
            let i = rep * 4 + wi;
            let noise = 1.0 + 0.003 * jitter(seed, i);
            let rec = record(
                w,
                rate * scale * noise,
                p50 / scale,
                p99 / scale * noise,
                1.7e9 + i as f64,
            );
            let v = with_cpu(
                &rec,
                c_us * cpu * (1.0 + 0.004 * jitter(seed + 1, i)),
                s_us * cpu * noise,
            );
            out.push(v);
        }
    }
    out
}

fn stored(
    study: &str,
    variant: &str,
    kernel: &str,
    records: Vec<RunRecord>,
    first_id: i64,
) -> Vec<StoredRun> {
    records
        .into_iter()
        .enumerate()
        .map(|(i, record)| StoredRun {
            id: first_id + i as i64,
            stored_unix_s: 0.0,
            labels: [("study", study), ("variant", variant)]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Labels>(),
            record,
            env: environment(kernel),
        })
        .collect()
}

const R2R: &str = r#"
name = "release-to-release"
description = "Does the new kernel keep the throughput and CPU cost of the previous one?"
workloads = ["RR60(4kB/4kB)", "CRR40(64B/8kB)", "STR3(1B/20MB)", "STR3(20MB/1B)"]
repetitions = 5
[[variant]]
name = "6.1"
labels = { kernel = "6.1" }
[[variant]]
name = "6.6"
labels = { kernel = "6.6" }
"#;

fn sample_report() -> Report {
    let mut r2r = stored(
        "release-to-release",
        "6.1",
        "6.1.0",
        runs(5, 1.0, 1.0, 1),
        1,
    );
    r2r.extend(stored(
        "release-to-release",
        "6.6",
        "6.6.0",
        runs(5, 1.0123, 0.9439, 2),
        100,
    ));
    let mut bp = stored(
        "best-practices",
        "defaults",
        "6.6.0",
        runs(2, 1.0, 1.0, 3),
        200,
    );
    bp.extend(stored(
        "best-practices",
        "nodelay",
        "6.6.0",
        runs(2, 1.3, 0.8, 4),
        300,
    ));
    let studies = vec![
        StudyInput {
            name: "release-to-release".into(),
            description:
                "Does the new kernel keep the throughput and CPU cost of the previous one?".into(),
            study: Some(parse_study(R2R, "r2r.toml").unwrap()),
            runs: r2r,
        },
        StudyInput {
            name: "best-practices".into(),
            description: String::new(),
            study: None,
            runs: bp,
        },
    ];
    let opts = ReportOptions {
        title: "Performance summary".into(),
        generated: "2024-05-01".into(),
        margins: Margins::default(),
    };
    build_report(&studies, &opts).unwrap()
}

#[test]
fn markdown_report_snapshot() {
    let report = sample_report();
    insta::assert_snapshot!("report_markdown", report.markdown);
    assert_eq!(report.figures.len(), 8, "one figure per workload per study");
    assert!(report
        .figures
        .iter()
        .all(|(f, svg)| f.starts_with("figures/figure-") && svg.starts_with("<svg")));
}

#[test]
fn html_report_is_self_contained() {
    let html = sample_report().html;
    assert_eq!(html.matches("<svg").count(), 8);
    assert_eq!(html.matches("<figcaption>Figure ").count(), 8);
    for forbidden in [
        "<script",
        "<link",
        "src=\"http",
        "href=\"http",
        "@import",
        "url(",
    ] {
        assert!(
            !html.contains(forbidden),
            "HTML must not fetch anything: found {forbidden}"
        );
    }
}

fn comparison_fixture() -> stackbench_results::compare::Comparison {
    let a = runs(5, 1.0, 1.0, 11);
    let b = runs(5, 1.0123, 0.9439, 12);
    compare("6.1", &a, "6.6", &b, Margins::default())
}

#[test]
fn compare_table_snapshot() {
    let c = comparison_fixture();
    insta::assert_snapshot!("compare_table", render_table(&c));
    insta::assert_snapshot!("compare_markdown", render_markdown(&c));
    assert!(!c.any_worse());
    assert_eq!(
        c.row("RR60(4kB/4kB)", Metric::CpuServerUsPerTran)
            .unwrap()
            .verdict,
        Verdict::Better
    );
}

#[test]
fn compare_flags_worse_and_few_runs() {
    let a = runs(2, 1.0, 1.0, 21);
    let b = runs(10, 0.9, 1.0, 22);
    let c = compare("A", &a, "B", &b, Margins::default());
    let rate = c.row("CRR40(64B/8kB)", Metric::RateTps).unwrap();
    assert_eq!((rate.n_a, rate.n_b), (2, 10));
    assert!(rate.note.as_deref().unwrap().contains("fewer than 5"));
    assert!(c
        .notes
        .iter()
        .any(|n| n.contains("fewer than 5 runs per side")));
    assert_eq!(rate.verdict, Verdict::Worse, "{rate:?}");
    assert!(c.any_worse());
}

fn find_chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

fn chromium(bin: &str, profile: &Path, extra: &[String]) -> std::process::Output {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra);
    cmd.output().expect("chromium runs")
}

/// Loads the HTML report in headless Chromium: the DOM must hold every figure
/// and caption, and the screenshot must not be blank. The PNG is left at
/// target/report-screenshot.png for a person to look at.
#[test]
fn html_report_renders_in_chromium() {
    let Some(bin) = find_chromium() else {
        eprintln!(
            "SKIP html_report_renders_in_chromium: chromium is not installed (.ci/run installs it)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let html_path = dir.path().join("report.html");
    let html = sample_report().html;
    std::fs::write(&html_path, &html).unwrap();
    // Kept beside the screenshot for a person to open.
    let _ = std::fs::write(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/report-sample.html"),
        &html,
    );
    let url = format!("file://{}", html_path.display());

    let dom = chromium(
        bin,
        &dir.path().join("p1"),
        &["--dump-dom".into(), url.clone()],
    );
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert!(
        dom.contains("<h1 id=\"top\">Performance summary</h1>"),
        "page did not load: {}",
        &dom[..dom.len().min(300)]
    );
    assert_eq!(dom.matches("<svg").count(), 8, "figures in the DOM");
    assert_eq!(dom.matches("<figcaption>").count(), 8);

    let png_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/report-screenshot.png");
    let _ = std::fs::remove_file(&png_path);
    let out = chromium(
        bin,
        &dir.path().join("p2"),
        &[
            format!("--screenshot={}", png_path.display()),
            "--window-size=1280,2000".into(),
            url,
        ],
    );
    assert!(
        png_path.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 2000));
    let bytes = &buf[..info.buffer_size()];
    let (mut dark, mut light) = (0usize, 0usize);
    for px in bytes.chunks(info.color_type.samples()) {
        let lum = px.iter().take(3).map(|&v| u32::from(v)).sum::<u32>() / 3;
        if lum < 100 {
            dark += 1;
        } else if lum > 200 {
            light += 1;
        }
    }
    let total = bytes.len() / info.color_type.samples();
    assert!(
        dark > total / 200,
        "too few dark pixels ({dark} of {total}): blank page?"
    );
    assert!(
        light > total / 2,
        "mostly not light ({light} of {total}): broken render?"
    );
}
