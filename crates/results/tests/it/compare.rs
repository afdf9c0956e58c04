//! `compare` on stored fixtures: incomplete runs left out, per-class CPU of a
//! mix refused and compared for the whole mix, zero-width intervals judged
//! too coarse, and the settings, kernel and path that differ named above the
//! verdicts.

use stackbench_record::RunRecord;
use stackbench_record::{record_from_json, CpuAttribution};
use stackbench_results::compare::output::{render_json, render_markdown, render_table};
use stackbench_results::compare::{
    compare, compare_runs, Margins, RunInput, Verdict, CPU_NOT_ATTRIBUTABLE,
};
use stackbench_results::env::Environment;
use stackbench_results::fixtures::{environment, jitter, record, with_cpu};
use stackbench_results::metric::Metric;

/// `n` complete runs of `workload` at about `rate` tr/s (±0.5%).
fn runs(workload: &str, n: usize, rate: f64, seed: u64) -> Vec<RunRecord> {
    (0..n)
        .map(|i| {
            let r = rate * (1.0 + 0.005 * jitter(seed, i));
            with_cpu(&record(workload, r, 50.0, 90.0, 1.7e9 + i as f64), 5.0, 4.0)
        })
        .collect()
}

/// A run interrupted before its first transaction (SIGTERM during a study).
fn interrupted(workload: &str) -> RunRecord {
    let mut r = record(workload, 0.0, 0.0, 0.0, 1.8e9);
    r.complete = false;
    r.incomplete_reason = Some("interrupted (SIGTERM)".into());
    for c in &mut r.classes {
        c.transactions = 0;
    }
    r
}

#[test]
fn incomplete_runs_are_kept_out_of_counts_and_verdicts() {
    let mut a = runs("RR1(1B/1B)", 5, 1000.0, 1);
    a.push(interrupted("RR1(1B/1B)"));
    let b = runs("RR1(1B/1B)", 5, 1000.0, 2);
    let c = compare("A", &a, "B", &b, Margins::default());
    assert_eq!((c.runs_a, c.runs_b), (5, 5));
    let rate = c.row("RR1(1B/1B)", Metric::RateTps).unwrap();
    assert_eq!(rate.n_a, 5, "{rate:?}");
    // The interrupted run's 0 tr/s would have made the log ratio impossible.
    assert_eq!(rate.verdict, Verdict::Equivalent, "{rate:?}");
    assert_eq!(c.left_out.len(), 1);
    assert_eq!(c.left_out[0].run, "A #6");
    assert_eq!(c.left_out[0].reason, "interrupted (SIGTERM)");
    let table = render_table(&c);
    assert!(
        table.contains("A = A (5 complete runs; 1 incomplete left out)"),
        "{table}"
    );
    assert!(
        table.contains("left out 1 incomplete run (A #6 of A: interrupted (SIGTERM))"),
        "{table}"
    );
    assert!(render_json(&c).contains("\"left_out\""));
}

/// Records of a mix as a stackbench before `cpu.attribution` wrote them:
/// the mix's CPU divided by each class's own transactions.
fn old_mix_runs(n: usize, seed: u64) -> Vec<RunRecord> {
    runs("RR1(100B/800B)+STR10(1B/20MB)", n, 100.0, seed)
        .into_iter()
        .map(|r| {
            let mut v = serde_json::to_value(&r).unwrap();
            for class in v["classes"].as_array_mut().unwrap() {
                let cpu = class["cpu"].as_object_mut().unwrap();
                cpu.remove("attribution");
                cpu.get_mut("client").unwrap()["cpu_seconds"] = 2.0.into();
                cpu.get_mut("server").unwrap()["cpu_seconds"] = 3.0.into();
            }
            record_from_json(v).unwrap()
        })
        .collect()
}

#[test]
fn an_old_mix_gets_no_per_class_cpu_verdict_but_a_whole_mix_one() {
    let (a, b) = (old_mix_runs(5, 3), old_mix_runs(5, 4));
    for class in &a[0].classes {
        assert_eq!(class.cpu.as_ref().unwrap().attribution, CpuAttribution::Mix);
    }
    let c = compare("A", &a, "B", &b, Margins::default());
    for key in [
        "RR1(100B/800B)+STR10(1B/20MB): RR1(100B/800B)",
        "RR1(100B/800B)+STR10(1B/20MB): STR10(1B/20MB)",
    ] {
        assert!(c.row(key, Metric::RateTps).is_some(), "{key}");
        for m in [Metric::CpuClientUsPerTran, Metric::CpuServerUsPerTran] {
            assert!(c.row(key, m).is_none(), "{key} {m:?}: no per-class CPU");
        }
    }
    assert_eq!(c.cpu_not_attributable.len(), 1);
    assert_eq!(c.cpu_not_attributable[0].reason, CPU_NOT_ATTRIBUTABLE);
    let mix = "RR1(100B/800B)+STR10(1B/20MB)";
    let secs = c.row(mix, Metric::CpuClientSeconds).unwrap();
    assert!(secs.whole_mix);
    assert_eq!(secs.mean_a, Some(2.0));
    // 3 s of server CPU over both classes' transactions (2 × ~1000).
    let per_tran = c.row(mix, Metric::CpuServerUsPerTran).unwrap();
    let transactions: u64 = a.iter().map(|r| r.classes[0].transactions * 2).sum();
    let expect = 3.0e6 * a.len() as f64 / transactions as f64;
    assert!(
        (per_tran.mean_a.unwrap() / expect - 1.0).abs() < 0.01,
        "{per_tran:?} vs {expect}"
    );
    let table = render_table(&c);
    assert!(table.contains(CPU_NOT_ATTRIBUTABLE), "{table}");
    assert!(table.contains("(whole mix)"), "{table}");
    assert!(render_markdown(&c).contains(CPU_NOT_ATTRIBUTABLE));
    let json = render_json(&c);
    assert!(json.contains("\"cpu_not_attributable\""), "{json}");
    assert!(json.contains("\"whole_mix\": true"), "{json}");
}

/// The mix of issue 38: in B the cheap RR class ran 130 times as many
/// transactions and the mix's client CPU-seconds rose 172%. Dividing each
/// side's CPU by all its transactions said "reduces client CPU cost per
/// transaction by 96%"; the make-up changed, so no CPU per transaction of
/// the mix is compared or averaged, and the headline says why, with the
/// CPU-seconds that did rise.
#[test]
fn a_mix_whose_make_up_changed_gets_no_cpu_per_transaction_headline() {
    let a = old_mix_runs(5, 3);
    let b: Vec<RunRecord> = old_mix_runs(5, 4)
        .into_iter()
        .map(|mut r| {
            r.classes[0].transactions *= 130;
            for class in &mut r.classes {
                let cpu = class.cpu.as_mut().unwrap();
                cpu.client.as_mut().unwrap().cpu_seconds = 2.0 * 2.72;
            }
            r
        })
        .collect();
    let c = compare("A", &a, "B", &b, Margins::default());
    let mix = "RR1(100B/800B)+STR10(1B/20MB)";
    for m in [Metric::CpuClientUsPerTran, Metric::CpuServerUsPerTran] {
        assert!(c.row(mix, m).is_none(), "{m:?}: {:?}", c.row(mix, m));
    }
    let secs = c.row(mix, Metric::CpuClientSeconds).unwrap();
    assert!((secs.change_pct.unwrap() - 172.0).abs() < 0.5, "{secs:?}");
    assert_eq!(c.summary.cpu_client_change_pct, None);
    assert_eq!(c.summary.cpu_server_change_pct, None);
    assert_eq!(c.summary.cpu_left_out.len(), 1);
    let table = render_table(&c);
    assert!(!table.contains("CPU cost per transaction by"), "{table}");
    assert!(
        table.contains("CPU cost per transaction of RR1(100B/800B)+STR10(1B/20MB): not attributable and in no average"),
        "{table}"
    );
    assert!(
        table.contains("its client CPU-seconds rose 172.00%"),
        "{table}"
    );
    assert!(table.contains("RR1(100B/800B) 1,000 → 130,"), "{table}");
    assert!(render_json(&c).contains("\"cpu_left_out\""));
    // An unchanged make-up keeps the whole-mix figure (the test above).
    let same = compare("A", &a, "B", &old_mix_runs(5, 4), Margins::default());
    assert!(same.summary.cpu_left_out.is_empty());
    assert!(same.row(mix, Metric::CpuClientUsPerTran).is_some());
}

#[test]
fn a_mix_attributed_on_one_side_only_gets_no_per_class_cpu_verdict() {
    // A ran its classes on their own workers (per-class CPU); B shared them.
    let a = runs("RR1(100B/800B)+STR10(1B/20MB)", 5, 100.0, 5);
    let mut b = runs("RR1(100B/800B)+STR10(1B/20MB)", 5, 100.0, 6);
    for r in &mut b {
        for class in &mut r.classes {
            let cpu = class.cpu.as_mut().unwrap();
            cpu.attribution = CpuAttribution::Mix;
            for side in [&mut cpu.client, &mut cpu.server] {
                side.as_mut().unwrap().cpu_us_per_tran = None;
            }
        }
    }
    let c = compare("A", &a, "B", &b, Margins::default());
    let key = "RR1(100B/800B)+STR10(1B/20MB): STR10(1B/20MB)";
    assert!(c.row(key, Metric::CpuClientUsPerTran).is_none());
    assert_eq!(c.cpu_not_attributable.len(), 1);
}

#[test]
fn one_class_runs_keep_their_cpu_verdicts() {
    let (a, b) = (
        runs("RR1(1B/1B)", 5, 1000.0, 7),
        runs("RR1(1B/1B)", 5, 1000.0, 8),
    );
    let c = compare("A", &a, "B", &b, Margins::default());
    assert!(c.row("RR1(1B/1B)", Metric::CpuClientUsPerTran).is_some());
    assert!(c.cpu_not_attributable.is_empty());
}

#[test]
fn a_zero_width_rate_interval_is_too_coarse_not_equivalent() {
    // Every window of every run held exactly 10 transfers: 10.0 tr/s each.
    let same = |n: usize| -> Vec<RunRecord> {
        (0..n)
            .map(|i| record("STR10(1B/20MB)", 10.0, 9.0e5, 1.1e6, i as f64))
            .collect()
    };
    let c = compare("A", &same(3), "B", &same(3), Margins::default());
    let rate = c.row("STR10(1B/20MB)", Metric::RateTps).unwrap();
    assert_eq!(rate.verdict, Verdict::TooCoarse, "{rate:?}");
    assert!(rate
        .note
        .as_deref()
        .unwrap()
        .contains("quantised, too few transactions per window"));
    let table = render_table(&c);
    assert!(!table.contains("EQUIVALENT"), "{table}");
    assert!(table.contains("TOO COARSE"), "{table}");
    assert!(!table.contains("+0.00% … +0.00%"), "{table}");
    assert!(render_json(&c).contains("\"TOO_COARSE\""));
}

/// Stored runs named by `names`, each in `env`.
fn inputs<'a>(
    runs: &'a [RunRecord],
    names: &'a [String],
    env: &'a Environment,
) -> Vec<RunInput<'a>> {
    runs.iter()
        .zip(names)
        .map(|(record, name)| RunInput {
            name,
            record,
            env: Some(env),
        })
        .collect()
}

#[test]
fn settings_kernel_and_path_that_differ_are_named() {
    let a = runs("RR1(1B/1B)", 3, 1000.0, 9);
    let mut b = runs("RR1(1B/1B)", 3, 1000.0, 10);
    for r in &mut b {
        r.settings.set("transport", "tls").unwrap();
    }
    // B's runs differ among themselves too: one ran with nodelay.
    b[0].settings.set("nodelay", "true").unwrap();
    let (env_a, env_b) = (environment("6.1.0"), environment("6.6.0"));
    let names: Vec<String> = (1..=6).map(|i| format!("run {i}")).collect();
    let ia = inputs(&a, &names[..3], &env_a);
    let ib = inputs(&b, &names[3..], &env_b);
    let c = compare_runs("A", &ia, "B", &ib, Margins::default());
    let find = |k: &str| c.differences.iter().find(|d| d.key == k);
    let t = find("transport").expect("transport differs");
    assert_eq!(
        (t.a.clone(), t.b.clone()),
        (vec!["tcp".into()], vec!["tls".into()])
    );
    assert!(t.between_sides);
    let k = find("kernel_release").expect("kernel differs");
    assert_eq!(
        (k.a.clone(), k.b.clone()),
        (vec!["6.1.0".into()], vec!["6.6.0".into()])
    );
    let n = find("nodelay").expect("nodelay differs inside B");
    assert_eq!(n.b, vec!["true".to_string(), "false".to_string()]);
    assert!(find("duration").is_none());
    let table = render_table(&c);
    let verdicts = table.find("Verdict").unwrap();
    let named = table.find("transport: A tcp | B tls").expect(&table);
    assert!(named < verdicts, "{table}");
    assert!(
        table.contains("kernel_release: A 6.1.0 | B 6.6.0"),
        "{table}"
    );
    assert!(
        table.contains(
            "nodelay: A false | B true / false (the runs inside B differ among themselves)"
        ),
        "{table}"
    );
    // The same runs on both sides: nothing differs, and it says so.
    let same = compare_runs("A", &ia, "B", &ia, Margins::default());
    assert!(same.differences.is_empty());
    assert!(render_table(&same).contains("A and B ran with the same settings"));
}

/// A warning a compared run carries reaches every form of the comparison:
/// its rows are marked in the table and Markdown, a note names the code,
/// the side, how many runs and which workloads, and the JSON carries both.
#[test]
fn warnings_of_compared_runs_mark_their_rows_in_every_form() {
    let a = runs("RR1(1B/1B)", 5, 1000.0, 1);
    let mut b = runs("RR1(1B/1B)", 5, 1000.0, 2);
    for r in &mut b[..2] {
        r.warnings.push(stackbench_record::WarningRecord {
            code: "delayed_ack_stall".into(),
            message: "p99 near 40 ms".into(),
            class: Some("RR1(1B/1B)".into()),
        });
    }
    let c = compare("A", &a, "B", &b, Margins::default());
    assert_eq!(c.warned.len(), 1);
    let w = &c.warned[0];
    assert_eq!(
        (w.side.as_str(), w.code.as_str(), w.runs),
        ("B", "delayed_ack_stall", 2)
    );
    assert_eq!(w.workloads, ["RR1(1B/1B)"]);
    assert!(c.rows.iter().all(|r| r.warned));
    let note = "warning delayed_ack_stall in 2 of 5 compared runs of B (RR1(1B/1B))";
    for text in [render_table(&c), render_markdown(&c)] {
        assert!(text.contains(note), "{text}");
        // Every row's verdict is marked, and the note names the mark.
        assert_eq!(text.matches('⚠').count(), c.rows.len() + 1, "{text}");
    }
    let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
    assert_eq!(json["warned"][0]["code"], "delayed_ack_stall");
    assert_eq!(json["rows"][0]["warned"], true);
    // Runs without warnings: nothing marked, no note.
    let clean = compare("A", &a, "B", &a, Margins::default());
    assert!(clean.warned.is_empty() && clean.rows.iter().all(|r| !r.warned));
    assert!(!render_table(&clean).contains('⚠'));
}

/// A workload one side measured once has no verdict (the table's "-"):
/// the averages leave it out, and say so (it moved "On average, B
/// increases throughput by 5.61%" before).
#[test]
fn a_workload_without_a_verdict_is_left_out_of_the_averages_and_named() {
    let mut a = runs("RR1(1B/1B)", 5, 1000.0, 1);
    let mut b = runs("RR1(1B/1B)", 5, 1000.0, 2);
    a.extend(runs("RR8(1B/1B)", 5, 5000.0, 3));
    b.extend(runs("RR8(1B/1B)", 1, 9000.0, 4));
    let c = compare("A", &a, "B", &b, Margins::default());
    let one = c.row("RR8(1B/1B)", Metric::RateTps).unwrap();
    assert!(one.change_pct.is_none() && !one.has_verdict());
    assert_eq!(c.summary.workloads, 1);
    assert_eq!(c.summary.left_out, ["RR8(1B/1B)"]);
    // RR1's own change only, not RR8's +80%.
    let t = c.summary.throughput_change_pct.unwrap();
    assert!(t.abs() < 2.0, "{t}");
    let text = render_table(&c);
    assert!(
        text.contains(
            "Left out of the throughput average: 1 workload without a verdict (RR8(1B/1B)): \
             fewer than 2 runs on a side, a zero figure, or too coarse to judge; run more \
             repetitions."
        ),
        "{text}"
    );
    assert!(
        text.contains("for these 1 workload (geometric mean)"),
        "{text}"
    );
}
