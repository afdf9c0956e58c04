//! Runs measured in a guest: compare refuses verdicts when a side was
//! TCG-emulated (figures kept, a note says why, JSON carries `EMULATED` and
//! `no_verdict_reason`); the report of a study whose variants differ by
//! `kernel` gets the kernel comparison (a release-to-release table); and
//! `results show` prints the guest line.

use stackbench_record::RunRecord;
use stackbench_results::compare::output::{render_json, render_table};
use stackbench_results::compare::{compare, emulated_sides, is_emulated, Margins, Verdict};
use stackbench_results::export::render_show;
use stackbench_results::fixtures::{guest_run_environment, with_kernel};
use stackbench_results::report::{build_report, ReportOptions, StudyInput};
use stackbench_results::store::StoredRun;

use crate::report::{runs, stored};

const OLD: &str = "linux-image-6.1.0-47-cloud-amd64-unsigned";
const NEW: &str = "linux-image-6.1.0-48-cloud-amd64-unsigned";

/// Stored runs of `variant` in a guest booted with `kernel` under `accel`.
fn guest_runs(variant: &str, kernel: &str, accel: &str, records: Vec<RunRecord>) -> Vec<StoredRun> {
    let release = kernel
        .trim_start_matches("linux-image-")
        .trim_end_matches("-unsigned");
    stored("kernel-release", variant, release, records, 1)
        .into_iter()
        .map(|mut r| {
            r.record = with_kernel(&r.record, kernel, accel);
            r.env = guest_run_environment(release, accel);
            r
        })
        .collect()
}

fn compared(accel_a: &str, accel_b: &str) -> stackbench_results::compare::Comparison {
    let a = guest_runs("old", OLD, accel_a, runs(5, 1.0, 1.0, 31));
    let b = guest_runs("new", NEW, accel_b, runs(5, 1.2, 0.8, 32));
    let records = |g: &[StoredRun]| g.iter().map(|r| r.record.clone()).collect::<Vec<_>>();
    let emulated = |g: &[StoredRun]| g.iter().any(|r| is_emulated(&r.record, Some(&r.env)));
    let mut c = compare("old", &records(&a), "new", &records(&b), Margins::default());
    if let Some(side) = emulated_sides("old", emulated(&a), "new", emulated(&b)) {
        c.refuse_verdicts(&side);
    }
    c
}

#[test]
fn an_emulated_side_gets_figures_but_no_verdict() {
    let c = compared("kvm", "tcg");
    assert!(c.rows.iter().all(|r| r.verdict == Verdict::Emulated));
    assert!(
        c.rows.iter().all(|r| r.change_pct.is_some()),
        "figures kept"
    );
    assert!(!c.any_worse());
    let table = render_table(&c);
    for word in ["BETTER", "WORSE", "EQUIVALENT", "INCONCLUSIVE"] {
        assert!(!table.contains(word), "{word} in {table}");
    }
    assert!(table.contains("┆ emulated │"), "{table}");
    assert!(table.contains(
        "new was measured in a TCG-emulated guest: functional only, no performance verdict; use a KVM guest or the host kernel"
    ), "{table}");
    let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
    assert_eq!(json["rows"][0]["verdict"], "EMULATED");
    assert!(json["no_verdict_reason"]
        .as_str()
        .unwrap()
        .contains("TCG-emulated"));
}

#[test]
fn kvm_guests_and_records_without_environment_keep_verdicts() {
    let c = compared("kvm", "kvm");
    assert!(c.rows.iter().all(|r| r.verdict != Verdict::Emulated));
    let json: serde_json::Value = serde_json::from_str(&render_json(&c)).unwrap();
    assert!(json.get("no_verdict_reason").is_none());
    // A record alone (a JSON file): its settings say tcg, or not.
    let rec = &runs(1, 1.0, 1.0, 1)[0];
    assert!(!is_emulated(rec, None), "host kernel");
    assert!(is_emulated(&with_kernel(rec, NEW, "tcg"), None));
    assert!(!is_emulated(&with_kernel(rec, NEW, "auto"), None));
}

fn kernel_report(accel: &str) -> String {
    let mut all = guest_runs("6.1.0-47", OLD, accel, runs(5, 1.0, 1.0, 41));
    all.extend(guest_runs("6.1.0-48", NEW, accel, runs(5, 1.03, 0.97, 42)));
    let study = StudyInput {
        name: "kernel-release".into(),
        description: "6.1.0-48 against 6.1.0-47".into(),
        study: None,
        runs: all,
    };
    let opts = ReportOptions {
        title: "Kernels".into(),
        generated: "2024-05-01".into(),
        margins: Margins::default(),
    };
    let report = build_report(&[study], &opts).unwrap();
    assert!(report
        .figures
        .iter()
        .any(|(_, svg)| svg.contains("New kernel relative to old")));
    report.markdown
}

#[test]
fn a_kernel_study_gets_the_release_table() {
    let md = kernel_report("kvm");
    assert!(md.contains("### Kernel comparison"), "{md}");
    assert!(
        md.contains("| Workload | Throughput new/old | Verdict |"),
        "{md}"
    );
    assert!(md.contains("| Average (geometric mean) |"), "{md}");
    assert!(
        md.contains("Guest VM: 6.1.0-47: guest kernel 6.1.0-47-cloud-amd64"),
        "{md}"
    );
    assert!(!md.contains("emulated (TCG)"), "{md}");
}

#[test]
fn an_emulated_kernel_study_shows_ratios_without_verdicts() {
    let md = kernel_report("tcg");
    assert!(md.contains("### Kernel comparison"), "{md}");
    assert!(
        md.contains("emulated (TCG): timings are functional only"),
        "{md}"
    );
    assert!(
        md.contains("No performance verdict for 6.1.0-48 against 6.1.0-47"),
        "{md}"
    );
    let after = md.split("### Kernel comparison").nth(1).unwrap();
    let section = after.split("\n## ").next().unwrap();
    assert!(
        !section.contains("BETTER") && section.contains("| emulated |"),
        "{section}"
    );
    assert!(section.contains("Note: 6.1.0-47 and 6.1.0-48 were measured in a TCG-emulated guest"));
}

#[test]
fn results_show_prints_the_guest() {
    let run = &guest_runs("new", NEW, "tcg", runs(1, 1.0, 1.0, 1))[0];
    let text = render_show(run, stackbench_results::output::Layout::NOT_A_TERMINAL);
    assert!(text.contains(
        "guest kernel 6.1.0-48-cloud-amd64 (linux-image-6.1.0-48-cloud-amd64-unsigned), tcg — emulated (TCG): timings are functional only, 2 vCPUs, 2048 MiB, qemu 7.2.9, on host kernel 6.8.0-test"
    ), "{text}");
}

/// docs/results.md and docs/output.md (the README's output section, moved
/// there) name every field of the stored guest environment (the serde names of `GuestEnvironment`).
#[test]
fn docs_name_every_guest_field() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let results = std::fs::read_to_string(root.join("docs/results.md")).unwrap();
    let output = std::fs::read_to_string(root.join("docs/output.md")).unwrap();
    let fields = serde_json::to_value(stackbench_record::GuestEnvironment::default()).unwrap();
    for name in fields
        .as_object()
        .unwrap()
        .keys()
        .chain(["guest".to_string()].iter())
    {
        let quoted = format!("`{name}`");
        assert!(results.contains(&quoted), "docs/results.md lacks {quoted}");
        assert!(output.contains(&quoted), "docs/output.md lacks {quoted}");
    }
    assert!(results.contains("\"no_verdict_reason\"") && results.contains("EMULATED"));
}
