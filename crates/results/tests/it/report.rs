//! The report and compare outputs on fabricated runs: insta snapshots of the
//! Markdown report and of compare's table, and the HTML report rendered in
//! headless Chromium (skipped with a message when Chromium is not installed;
//! CI installs it).

use std::path::Path;
use std::process::Command;

use stackbench_model::study::parse_study;
use stackbench_record::{CpuFigures, RunRecord, SideCpu};
use stackbench_results::compare::output::{render_markdown, render_table};
use stackbench_results::compare::{compare, Margins, Verdict};
use stackbench_results::fixtures::{environment, jitter, record, with_cpu};
use stackbench_results::metric::Metric;
use stackbench_results::report::{build_report, Report, ReportOptions, StudyInput};
use stackbench_results::store::{Labels, StoredRun};
use stackbench_results::sweep::group;
use stackbench_results::sweep::usl::fit_usl;

/// Runs of one variant: `n` repetitions per workload with ±0.3% noise.
/// `scale` multiplies rate, `cpu` multiplies CPU per transaction.
pub(crate) fn runs(n: usize, scale: f64, cpu: f64, seed: u64) -> Vec<RunRecord> {
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

pub(crate) fn stored(
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

/// A lab study: the environment section prints each variant's
/// path and the kernel's values of its link.
/// The Markdown report of one lab study made of `runs`.
fn lab_markdown(name: &str, runs: Vec<StoredRun>) -> String {
    let studies = vec![StudyInput {
        name: name.into(),
        description: String::new(),
        study: None,
        runs,
    }];
    let opts = ReportOptions {
        title: "Lab".into(),
        generated: "2024-05-01".into(),
        margins: Margins::default(),
    };
    build_report(&studies, &opts).unwrap().markdown
}

#[test]
fn lab_runs_show_their_path_and_link() {
    let with_lab = |variant: &str, rate_bps: u64, first_id: i64| {
        let mut runs = stored(
            "lab-link-rate",
            variant,
            "6.6.0",
            runs(1, 1.0, 1.0, 5),
            first_id,
        );
        for r in &mut runs {
            r.env.interface = None;
            r.env.lab = Some(stackbench_record::LabEnvironment {
                name: "pair".into(),
                from: "client".into(),
                to: "server".into(),
                interfaces: vec![stackbench_record::LabInterface {
                    namespace: "sb-pair-client".into(),
                    name: "pair-0a".into(),
                    mtu_bytes: 1500,
                    rate_bps: Some(rate_bps),
                    qdisc: "tbf".into(),
                    offloads: [("tso".to_string(), true)].into(),
                    addresses: vec!["10.77.1.1/24".into()],
                    ..Default::default()
                }],
                utilisation: stackbench_record::link_utilisation(rate_bps, &r.record.classes),
                ..Default::default()
            });
        }
        runs
    };
    let mut all = with_lab("100Mbit", 100_000_000, 1);
    all.extend(with_lab("1Gbit", 1_000_000_000, 100));
    let first = all[0].record.classes[0].clone();
    let md = lab_markdown("lab-link-rate", all);
    assert!(
        md.contains("Lab path: lab pair: client → server, direct"),
        "{md}"
    );
    assert!(
        md.contains("100Mbit: sb-pair-client/pair-0a: MTU 1500, rate 100Mbit, tso on, 10.77.1.1/24; 1Gbit: sb-pair-client/pair-0a: MTU 1500, rate 1Gbit"),
        "{md}"
    );
    // Link utilisation per variant and class, each way, from the window's
    // payload over the path's rate: ten times the share on a tenth the rate.
    let (tx, rx) = (first.tx_bytes_per_s * 8.0, first.rx_bytes_per_s * 8.0);
    let (notation, pct) = (&first.notation, |bits: f64, rate: f64| 100.0 * bits / rate);
    let label = "Lab link utilisation (payload over the window, % of the path's rate, to server / to client; mean over runs)";
    let expect = [
        format!(
            "{label}: 100Mbit: {notation} {:.1}% / {:.1}%,",
            pct(tx, 1e8),
            pct(rx, 1e8)
        ),
        format!(
            "; 1Gbit: {notation} {:.1}% / {:.1}%,",
            pct(tx, 1e9),
            pct(rx, 1e9)
        ),
    ];
    for expect in expect {
        assert!(md.contains(&expect), "{expect}\n{md}");
    }
}

/// A steering study: the environment section prints the RPS CPUs the
/// kernel held and each variant's NET_RX softirqs per CPU in the window.
#[test]
fn steered_lab_runs_show_where_receive_processing_ran() {
    let with_lab = |variant: &str, rps: Option<&str>, net_rx: [u64; 2], first_id: i64| {
        let mut runs = stored(
            "lab-steering",
            variant,
            "6.6.0",
            runs(1, 1.0, 1.0, 5),
            first_id,
        );
        for r in &mut runs {
            r.env.lab = Some(stackbench_record::LabEnvironment {
                name: "pair".into(),
                steering: rps
                    .map(|cpus| {
                        vec![stackbench_record::LabSteering {
                            namespace: "sb-pair-server".into(),
                            name: "pair-0b".into(),
                            queues: vec![stackbench_record::LabRxQueue {
                                queue: "rx-0".into(),
                                rps_cpus_mask: "2".into(),
                                rps_cpus: cpus.into(),
                                rps_flow_cnt: 0,
                            }],
                        }]
                    })
                    .unwrap_or_default(),
                net_rx_before: vec![100, 200],
                net_rx_after: vec![100 + net_rx[0], 200 + net_rx[1]],
                ..Default::default()
            });
        }
        runs
    };
    let mut all = with_lab("off", None, [10, 20], 1);
    all.extend(with_lab("rps-1", Some("1"), [5, 40], 100));
    let md = lab_markdown("lab-steering", all);
    assert!(
        md.contains("Lab inbound steering (kernel's RPS CPUs): off: off; rps-1: 1"),
        "{md}"
    );
    assert!(
        md.contains("NET_RX softirqs per CPU in the window: off: CPU 0: 10, CPU 1: 20; rps-1: CPU 0: 5, CPU 1: 40"),
        "{md}"
    );
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

/// USL truth of the sweep fixture's variants: (σ, κ, λ per client).
const USL_BASE: (f64, f64, f64) = (0.05, 0.002, 1000.0);
const USL_TUNED: (f64, f64, f64) = (0.03, 0.001, 1100.0);
const SWEEP_CLIENTS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

fn usl(c: (f64, f64, f64), n: f64) -> f64 {
    c.2 * n / (1.0 + c.0 * (n - 1.0) + c.1 * n * (n - 1.0))
}

/// One run of the client sweep: rate on the USL curve with ±1% noise,
/// latency from Little's law, CPU per transaction growing with N.
fn sweep_run(variant: &str, truth: (f64, f64, f64), n: u32, rep: usize, seed: u64) -> StoredRun {
    let i = rep * 100 + n as usize;
    let x = usl(truth, f64::from(n)) * (1.0 + 0.01 * jitter(seed, i));
    let p50_us = f64::from(n) / x * 1e6;
    let mut rec: RunRecord = record(
        &format!("RR{n}(1B/1B)"),
        x,
        p50_us,
        3.0 * p50_us,
        1.7e9 + i as f64,
    );
    let side = |us: f64| SideCpu {
        cpu_us_per_tran: Some(us * (1.0 + 0.02 * jitter(seed + 1, i))),
        ..SideCpu::default()
    };
    rec.classes[0].cpu = Some(CpuFigures {
        client: Some(side(5.0 + 0.1 * f64::from(n))),
        server: Some(side(4.0 + 0.05 * f64::from(n))),
        separable: true,
        ..CpuFigures::default()
    });
    let (clients, repetition) = (n.to_string(), (rep + 1).to_string());
    let labels: Labels = [
        ("study", "scalability"),
        ("variant", variant),
        ("repetition", repetition.as_str()),
        ("workload", "RR1(1B/1B)"),
        ("sweep", "clients"),
        ("sweep.clients", clients.as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    StoredRun {
        id: i as i64,
        stored_unix_s: 0.0,
        labels,
        record: rec,
        env: environment("6.6.0"),
    }
}

/// A client sweep, 3 repetitions interleaved, variants `base` and `tuned`.
fn sweep_study() -> StudyInput {
    let mut runs = Vec::new();
    for rep in 0..3 {
        for (variant, truth, seed) in [("base", USL_BASE, 31), ("tuned", USL_TUNED, 32)] {
            for n in SWEEP_CLIENTS {
                runs.push(sweep_run(variant, truth, n, rep, seed));
            }
        }
    }
    StudyInput {
        name: "scalability".into(),
        description: "How does the request/response rate scale with the number of clients?".into(),
        study: None,
        runs,
    }
}

fn sweep_report() -> Report {
    let opts = ReportOptions {
        title: "Scalability".into(),
        generated: "2024-05-01".into(),
        margins: Margins::default(),
    };
    build_report(&[sweep_study()], &opts).unwrap()
}

#[test]
fn client_sweep_fit_finds_the_true_peak() {
    let input = sweep_study();
    let refs: Vec<(&Labels, &RunRecord)> =
        input.runs.iter().map(|r| (&r.labels, &r.record)).collect();
    let sweep = group(&refs).unwrap();
    let base = &sweep.workloads[0].classes[0].series[0];
    assert_eq!((base.label.as_str(), base.points.len()), ("base", 7));
    let fit = fit_usl(base).unwrap();
    let n_star = fit.plan.peak_n.unwrap();
    let truth = ((1.0 - USL_BASE.0) / USL_BASE.1).sqrt();
    assert!((truth - 21.79).abs() < 0.01);
    assert!(
        (n_star.value - truth).abs() / truth < 0.05,
        "N* = {n_star:?}, true {truth}"
    );
    assert!(
        n_star.ci_low.unwrap() < truth && truth < n_star.ci_high.unwrap(),
        "{n_star:?}"
    );
    assert!((fit.plan.sigma.value - USL_BASE.0).abs() < 0.01);
    let peak = fit.peak_rate_tps.unwrap();
    let true_peak = usl(USL_BASE, truth);
    assert!(
        peak.ci_low.unwrap() < true_peak && true_peak < peak.ci_high.unwrap(),
        "{peak:?} vs {true_peak}"
    );
}

#[test]
fn sweep_report_snapshot() {
    let report = sweep_report();
    let md = &report.markdown;
    let section = &md[md.find("## Study:").unwrap()..md.find("## Summary across studies").unwrap()];
    insta::assert_snapshot!("sweep_markdown", section);
    assert_eq!(
        report.figures.len(),
        1,
        "one figure for the one swept workload"
    );
    let svg = &report.figures[0].1;
    for text in [
        "USL fit",
        "Transaction rate",
        "[tr/s]",
        "clients [count], log₂ scale",
        "Server CPU",
        "p99",
        "tuned",
        "64",
    ] {
        assert!(svg.contains(text), "figure lacks {text}");
    }
    // Error bars: each is three strokes in the series colour at width 1.
    let bars = svg.matches("stroke=\"#0072B2\" stroke-width=\"1\"").count();
    assert!(bars >= 3 * 7, "error bars of the base series: {bars}");
    // The fitted curves: one dashed path of many segments per variant.
    assert!(svg.matches("<polyline").count() > 50, "dashed USL curves");
    let _ = std::fs::write(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/report-sweep-figure.svg"),
        svg,
    );
}

#[test]
fn unswept_runs_beside_a_sweep_still_compare() {
    let mut input = sweep_study();
    input.runs.extend(stored(
        "scalability",
        "6.1",
        "6.1.0",
        runs(2, 1.0, 1.0, 41),
        5000,
    ));
    input.runs.extend(stored(
        "scalability",
        "6.6",
        "6.6.0",
        runs(2, 1.01, 1.0, 42),
        6000,
    ));
    let opts = ReportOptions {
        title: "Mixed".into(),
        generated: "2024-05-01".into(),
        margins: Margins::default(),
    };
    let report = build_report(&[input], &opts).unwrap();
    assert_eq!(
        report.figures.len(),
        4 + 1,
        "the unswept workloads, then the sweep"
    );
    assert!(report
        .markdown
        .contains("6.6 compared with 6.1 (baseline):"));
    assert!(report
        .markdown
        .contains("### Scalability: sweep over clients"));
    assert!(report
        .markdown
        .contains("Swept: clients = 1, 2, 4, 8, 16, 32, 64"));
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
    render_in_chromium(
        &sample_report(),
        "Performance summary",
        "sample",
        "screenshot",
    );
}

/// The same for a report with a client sweep (target/report-sweep-screenshot.png).
#[test]
fn sweep_report_renders_in_chromium() {
    render_in_chromium(&sweep_report(), "Scalability", "sweep", "sweep-screenshot");
}

/// Renders `report` in headless Chromium and checks it (see above); returns
/// the rendered DOM, or `None` when Chromium is absent and not required.
fn render_in_chromium(
    report: &Report,
    title: &str,
    html_name: &str,
    png_name: &str,
) -> Option<String> {
    let Some(bin) = find_chromium() else {
        let test = format!("rendering the {html_name} report");
        let why = "chromium is not installed (.ci/run installs it)";
        stackbench_testkit::skip(stackbench_testkit::Tier::Chromium, &test, why);
        return None;
    };
    let figures = report.figures.len();
    let dir = tempfile::tempdir().unwrap();
    let html_path = dir.path().join("report.html");
    let html = &report.html;
    std::fs::write(&html_path, html).unwrap();
    // Kept beside the screenshot for a person to open.
    let _ = std::fs::write(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../target/report-{html_name}.html")),
        html,
    );
    let url = format!("file://{}", html_path.display());

    let dom = chromium(
        bin,
        &dir.path().join("p1"),
        &["--dump-dom".into(), url.clone()],
    );
    let dom = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(
        dom.contains(&format!("<h1 id=\"top\">{title}</h1>")),
        "page did not load: {}",
        &dom[..dom.len().min(300)]
    );
    assert_eq!(dom.matches("<svg").count(), figures, "figures in the DOM");
    assert_eq!(dom.matches("<figcaption>").count(), figures);

    let png_path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../target/report-{png_name}.png"));
    let _ = std::fs::remove_file(&png_path);
    // The workspace's target/ is absent when CARGO_TARGET_DIR points
    // elsewhere, and Chromium does not create a screenshot's directory.
    std::fs::create_dir_all(png_path.parent().unwrap()).unwrap();
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
    Some(dom)
}

/// A study where variant `nagle` holds two complete runs and one interrupted
/// (SIGTERM: 0 transactions, `complete: false`), and `nodelay` two complete
/// runs. Run ids: nagle 1, 2 complete and 3 incomplete; nodelay 11, 12.
fn study_with_incomplete_run() -> StudyInput {
    let rec = |rate: f64, i: usize| {
        with_cpu(
            &record("RR2(64B/64B)", rate, 50.0, 90.0, i as f64),
            8.0,
            9.0,
        )
    };
    let mut nagle = stored(
        "quick",
        "nagle",
        "6.6.0",
        vec![rec(20_000.0, 1), rec(20_100.0, 2), rec(0.0, 3)],
        1,
    );
    let cut = &mut nagle[2].record;
    cut.complete = false;
    cut.incomplete_reason = Some("interrupted by SIGTERM".into());
    for c in &mut cut.classes {
        c.transactions = 0;
    }
    let mut all = nagle;
    all.extend(stored(
        "quick",
        "nodelay",
        "6.6.0",
        vec![rec(30_000.0, 4), rec(30_200.0, 5)],
        11,
    ));
    StudyInput {
        name: "quick".into(),
        description: String::new(),
        study: None,
        runs: all,
    }
}

fn report_of(studies: &[StudyInput]) -> Report {
    let opts = ReportOptions {
        title: "Quick".into(),
        generated: "2024-05-01".into(),
        margins: Margins::default(),
    };
    build_report(studies, &opts).unwrap()
}

/// An interrupted run (0 transactions) used to be averaged into the
/// figure's bar and counted in the comparison (n=3). It must be shown,
/// marked, and left out of every aggregate with a line saying so.
#[test]
fn incomplete_runs_are_shown_but_left_out_of_aggregates() {
    let report = report_of(&[study_with_incomplete_run()]);
    let md = &report.markdown;
    assert!(
        md.contains("20,050 (n=2)"),
        "nagle's mean over its 2 complete runs:\n{md}"
    );
    assert!(
        !md.contains("(n=3)"),
        "the incomplete run was counted:\n{md}"
    );
    assert!(md.contains("runs: nagle 2, nodelay 2"), "{md}");
    assert!(
        md.contains("1 incomplete run was left out of every mean, error bar, verdict and fit: run 3 (nagle): interrupted by SIGTERM"),
        "{md}"
    );
    assert!(md.contains("incomplete: interrupted by SIGTERM"), "{md}");
    // Said in the observations, under the figure and under the comparison table.
    assert_eq!(
        md.matches("1 incomplete run was left out").count(),
        3,
        "{md}"
    );
    // Drawn, marked, with its reason as the tooltip.
    let svg = &report.figures[0].1;
    assert!(
        svg.contains("run 3 (nagle): incomplete: interrupted by SIGTERM"),
        "no marked run in the figure"
    );
    assert!(
        svg.contains("stroke=\"#D55E00\""),
        "no hollow mark for the incomplete run"
    );
}

fn warning(code: &str, message: &str) -> stackbench_record::WarningRecord {
    stackbench_record::WarningRecord {
        code: code.into(),
        message: message.into(),
        class: None,
    }
}

/// The study of [`study_with_incomplete_run`] with warnings: nagle's run 1
/// saw background load, nodelay's runs both stalled on delayed ACKs.
fn study_with_warnings() -> StudyInput {
    let mut input = study_with_incomplete_run();
    for r in &mut input.runs {
        match r.id {
            1 => r.record.warnings.push(warning(
                "background_load",
                "the idle baseline showed the client CPUs 31% busy:          stop other work",
            )),
            11 | 12 => r.record.warnings.push(warning(
                "delayed_ack_stall",
                "2.1% of transactions took 35–250 ms: pass --nodelay",
            )),
            _ => {}
        }
    }
    input
}

/// report.html used to show no warning at all. Each warned run is
/// marked on its figure (codes in the SVG tooltip), listed in a measurement
/// quality table per variant, and a figure whose every run is warned says so.
#[test]
fn warnings_are_shown_where_the_figure_is_drawn() {
    let report = report_of(&[study_with_warnings()]);
    let html = &report.html;
    for code in ["background_load", "delayed_ack_stall", "incomplete"] {
        assert!(html.contains(code), "report.html lacks {code}");
    }
    assert!(html.contains("<h3>Measurement quality</h3>"));
    assert!(html.contains("<td>delayed_ack_stall</td>"), "{html}");
    assert!(html.contains("2.1% of transactions took 35–250 ms: pass --nodelay</td>"));
    assert!(
        html.contains("31% busy: stop other work"),
        "spaces collapsed"
    );
    let svg = &report.figures[0].1;
    assert!(svg.contains("<title>run 1 (nagle): background_load — note [1]</title>"));
    // Runs 11 and 12 sit at the same value: one mark, both in its tooltip.
    assert!(svg.contains(
        "<title>run 11 (nodelay): delayed_ack_stall — note [3]\nrun 12 (nodelay): delayed_ack_stall — note [4]</title>"
    ));
    assert!(svg.contains(">[3,4]</text>"));
    let md = &report.markdown;
    assert!(
        md.contains("Warned runs (background_load, delayed_ack_stall) are marked"),
        "{md}"
    );

    // Only the nodelay variant: every run in the figure is warned.
    let mut only = study_with_warnings();
    only.runs.retain(|r| r.id > 10);
    let md = report_of(&[only]).markdown;
    assert!(
        md.contains("Every run in this figure carries a warning: delayed_ack_stall"),
        "{md}"
    );
}

/// The warned report in headless Chromium: the measurement-quality table and
/// the marks' tooltips are in the rendered DOM.
#[test]
fn warnings_render_in_chromium() {
    let report = report_of(&[study_with_warnings()]);
    let Some(dom) = render_in_chromium(&report, "Quick", "warnings", "warnings-screenshot") else {
        return;
    };
    assert!(dom.contains("<h3>Measurement quality</h3>"));
    for cell in [
        "<td>background_load</td>",
        "<td>delayed_ack_stall</td>",
        "<td>incomplete</td>",
    ] {
        assert!(dom.contains(cell), "rendered DOM lacks {cell}");
    }
    assert!(
        dom.contains("<title>run 3 (nagle): incomplete: interrupted by SIGTERM — note [2]</title>")
    );
}

/// A TN3270-style sweep whose every run saw background load (CPU/tr falling
/// as users rise) used to read as scalability. The sweep figure's
/// caption says every run is warned; an interrupted sweep run is left out of
/// the points and the fit.
#[test]
fn a_sweep_of_warned_runs_says_so_and_drops_incomplete_points() {
    let mut input = sweep_study();
    for r in &mut input.runs {
        r.record.warnings.push(warning(
            "background_load",
            "the idle baseline showed the server CPUs 40% busy",
        ));
    }
    let mut cut = sweep_run("base", USL_BASE, 64, 3, 31);
    cut.id = 99_999;
    cut.record.complete = false;
    cut.record.incomplete_reason = Some("interrupted by SIGTERM".into());
    cut.record.classes[0].rate_tps = 0.0;
    input.runs.push(cut);
    let report = report_of(&[input]);
    let svg = &report.figures[0].1;
    assert!(
        svg.contains("<title>run 99999 (base): incomplete: interrupted by SIGTERM"),
        "the incomplete sweep run is not drawn"
    );
    assert!(
        svg.contains("(tuned): background_load — note ["),
        "warned points are not marked"
    );
    let _ = std::fs::write(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/report-sweep-warned.svg"),
        svg,
    );
    let md = report.markdown;
    assert!(
        md.contains("Every run in this figure carries a warning: background_load"),
        "{md}"
    );
    assert!(
        md.contains("| 64 | base | 3 |"),
        "the incomplete run was counted at N=64:\n{md}"
    );
    assert!(
        md.contains("run 99999 (base): interrupted by SIGTERM"),
        "{md}"
    );
}

/// The observations used to give each variant five near-identical
/// sentences. Now: one verdict table per study (variant × workload × metric:
/// ratio, interval, verdict, n) and sentences only for what changed.
#[test]
fn observations_are_one_verdict_table_and_sentences_for_changes() {
    let md = report_of(&[study_with_incomplete_run()]).markdown;
    let obs = &md[md.find("### Observations").unwrap()..md.find("### Results").unwrap()];
    assert_eq!(obs.matches("| Variant vs baseline | Workload | Metric | Ratio B/A | 90% interval | Verdict | n (A/B) |").count(), 1, "{obs}");
    assert!(
        obs.contains(
            "| nodelay vs nagle | RR2(64B/64B) | tr/s | 1.501× | 1.482× … 1.521× | BETTER | 2/2 |"
        ),
        "{obs}"
    );
    assert!(
        obs.contains("| nodelay vs nagle | RR2(64B/64B) | client CPU µs/tr | 1.000× |"),
        "{obs}"
    );
    assert!(
        obs.contains("- nodelay has higher transaction rate than nagle in RR2(64B/64B) (ratio 1.501×, 90% CI 1.482× … 1.521×): BETTER."),
        "{obs}"
    );
    assert!(
        !obs.contains("uses the same client CPU"),
        "a sentence for an unchanged metric:\n{obs}"
    );
    assert!(!obs.contains("On average"), "{obs}");
}

/// Bars 100× apart (lab-priority: 98 vs 8,016 tr/s) left
/// the short bar unreadable; each bar now carries its value and its ratio to
/// the smallest.
#[test]
fn bars_ten_times_apart_carry_their_values() {
    let rec = |rate: f64, i: usize| record("RR1(1B/1B)", rate, 50.0, 90.0, i as f64);
    let mut runs = stored("prio", "low", "6.6.0", vec![rec(98.0, 1), rec(98.0, 2)], 1);
    runs.extend(stored(
        "prio",
        "high",
        "6.6.0",
        vec![rec(8_016.0, 3), rec(8_016.0, 4)],
        11,
    ));
    let report = report_of(&[StudyInput {
        name: "prio".into(),
        description: String::new(),
        study: None,
        runs,
    }]);
    let svg = &report.figures[0].1;
    // plotters writes each text's content on its own line.
    let texts: Vec<&str> = svg.lines().map(str::trim).collect();
    assert!(texts.contains(&"98"), "the short bar's value");
    assert!(
        texts.contains(&"8.0k (82×)"),
        "the tall bar's value and ratio"
    );
}

const THINK_STUDY: &str = r#"
name = "think"
description = "What do users with 30 s think time cost?"
workloads = ["RR2(64B/64B)"]
think = "30s"
repetitions = 3
[[variant]]
name = "nagle"
[[variant]]
name = "nodelay"
nodelay = true
"#;

/// The report used to say "Repetitions: 3" after `--repetitions 2`, and
/// the TN3270 text said 30 s think while 3 s ran. Every statement
/// comes from the stored settings of the runs shown; where the study file
/// disagrees the report says so, and runs of one variant that differ are named.
#[test]
fn statements_come_from_the_runs_stored_settings() {
    let rec = |rate: f64, i: usize, nodelay: bool| {
        let mut r = record("RR2(64B/64B)", rate, 50.0, 90.0, i as f64);
        r.settings.set("think", "3s").unwrap();
        r.settings.set("nodelay", &nodelay.to_string()).unwrap();
        r
    };
    let mut runs = stored(
        "think",
        "nagle",
        "6.6.0",
        vec![rec(100.0, 1, false), rec(101.0, 2, false)],
        1,
    );
    let mut odd = rec(150.0, 4, true);
    odd.settings.set("think", "1s").unwrap();
    odd.settings.set("duration", "5s").unwrap();
    runs.extend(stored(
        "think",
        "nodelay",
        "6.6.0",
        vec![rec(150.0, 3, true), odd],
        11,
    ));
    let input = StudyInput {
        name: "think".into(),
        description: "What do users with 30 s think time cost?".into(),
        study: Some(parse_study(THINK_STUDY, "think.toml").unwrap()),
        runs,
    };
    let md = report_of(&[input]).markdown;
    assert!(!md.contains("Repetitions: 3"), "{md}");
    assert!(
        md.contains(
            "Repetitions: 2 per workload and variant, interleaved (the study file asks for 3)"
        ),
        "{md}"
    );
    assert!(md.contains("Variant nagle (baseline): think = 3s"), "{md}");
    assert!(
        md.contains(
            "Variant nodelay: nodelay = true; its runs differ: think = 3s (run 11), 1s (run 12)"
        ),
        "{md}"
    );
    assert!(
        md.contains("Runs: nagle: 10 s measured after 2 s warm-up; nodelay: runs differ: 10 s measured after 2 s warm-up (run 11), 5 s measured after 2 s warm-up (run 12)"),
        "{md}"
    );
    assert!(
        md.contains("the study file sets think = 30s, but its runs were measured with think = 3s (runs 1, 2, 11), 1s (run 12)"),
        "{md}"
    );
}

/// A kernel-to-kernel study with an interrupted run on the new kernel: the
/// kernel comparison's ratios are over complete runs only.
#[test]
fn kernel_comparison_leaves_incomplete_runs_out() {
    use stackbench_results::fixtures::with_kernel;
    let rec = |rate: f64, kernel: &str, i: usize| {
        with_kernel(
            &with_cpu(&record("RR1(1B/1B)", rate, 50.0, 90.0, i as f64), 8.0, 9.0),
            kernel,
            "kvm",
        )
    };
    let mut runs = stored(
        "k",
        "6.1",
        "6.1.0",
        vec![
            rec(1000.0, "linux-image-6.1.0-test", 1),
            rec(1000.0, "linux-image-6.1.0-test", 2),
        ],
        1,
    );
    let mut new = stored(
        "k",
        "6.6",
        "6.6.0",
        vec![
            rec(0.0, "linux-image-6.6.0-test", 3),
            rec(1100.0, "linux-image-6.6.0-test", 4),
            rec(1100.0, "linux-image-6.6.0-test", 5),
        ],
        11,
    );
    new[0].record.complete = false;
    new[0].record.incomplete_reason = Some("interrupted by SIGTERM".into());
    runs.extend(new);
    let md = report_of(&[StudyInput {
        name: "k".into(),
        description: String::new(),
        study: None,
        runs,
    }])
    .markdown;
    let section = &md[md.find("### Kernel comparison").expect(&md)..];
    assert!(
        section.contains("1.100"),
        "rate ratio over complete runs:\n{section}"
    );
}

/// A distribution study and a fast-path study: the environment section
/// gives each variant's IPVS connection share per target, and the share of
/// the router's packets that took the full path.
#[test]
fn distributed_and_fast_path_lab_runs_show_the_kernels_counters() {
    let distributed = |variant: &str, per_target: &[u64], first_id: i64| {
        let mut runs = stored(
            "lab-distributor",
            variant,
            "6.12.0",
            runs(1, 1.0, 1.0, 5),
            first_id,
        );
        for r in &mut runs {
            r.env.lab = Some(stackbench_record::LabEnvironment {
                name: "dist".into(),
                distribution: per_target
                    .iter()
                    .enumerate()
                    .map(|(i, n)| stackbench_record::LabTarget {
                        host: format!("t{}", i + 1),
                        connections: *n,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            });
        }
        runs
    };
    let mut all = distributed("targets-1", &[200], 1);
    all.extend(distributed("targets-2", &[100, 300], 100));
    let md = lab_markdown("lab-distributor", all);
    assert!(
        md.contains("Lab load distribution (IPVS connections per target): targets-1: t1 100%; targets-2: t1 25%, t2 75%"),
        "{md}"
    );
    assert!(!md.contains("routing fast path"), "{md}");

    let routed = |variant: &str, slow: Option<u64>, first_id: i64| {
        let mut runs = stored(
            "lab-fastpath",
            variant,
            "6.12.0",
            runs(1, 1.0, 1.0, 5),
            first_id,
        );
        for r in &mut runs {
            r.env.lab = Some(stackbench_record::LabEnvironment {
                name: "hop".into(),
                flowtables: slow
                    .map(|n| {
                        vec![stackbench_record::LabFlowtable {
                            namespace: "sb-hop-r1".into(),
                            devices: vec!["hop-0ra".into(), "hop-0rb".into()],
                            slow_path_packets: n,
                            rx_packets: Some(1000),
                        }]
                    })
                    .unwrap_or_default(),
                ..Default::default()
            });
        }
        runs
    };
    let mut all = routed("full-path", None, 1);
    all.extend(routed("fast-path", Some(9), 100));
    let md = lab_markdown("lab-fastpath", all);
    assert!(
        md.contains("Lab routing fast path (packets on the router's full path): full-path: off; fast-path: sb-hop-r1: flowtable, 0.9% of packets"),
        "{md}"
    );
    assert!(!md.contains("load distribution"), "{md}");
}
