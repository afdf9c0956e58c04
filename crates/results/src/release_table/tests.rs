//! The release table on fabricated runs: a two-kernel study on KVM guests
//! (ratios and verdicts, snapshot of the text), the same under TCG (ratios
//! kept, verdicts refused) and the kernel detection.

use stackbench_record::RunRecord;

use super::*;
use crate::compare::{compare, emulated_sides, is_emulated, Margins};
use crate::fixtures::{guest_run_environment, jitter, record, with_cpu, with_kernel};
use crate::store::StoredRun;

const OLD: &str = "linux-image-6.1.0-47-cloud-amd64-unsigned";
const NEW: &str = "linux-image-6.1.0-48-cloud-amd64-unsigned";

/// Five repetitions of four workloads (one a mix); `scale` multiplies the
/// rate, `cpu` the CPU per transaction; ±0.3% deterministic noise.
fn runs(kernel: &str, accel: &str, scale: f64, cpu: f64, seed: u64) -> Vec<StoredRun> {
    let workloads = [
        ("RR1(1B/1B)", 30_000.0, 30.0, 9.0),
        ("RR10(4kB/4kB)", 95_000.0, 100.0, 8.0),
        ("CRR10(64B/8kB)", 21_000.0, 450.0, 40.0),
        ("RR1(100B/800B)+STR1(1B/2MB)", 900.0, 1_100.0, 300.0),
    ];
    let release = kernel
        .trim_start_matches("linux-image-")
        .trim_end_matches("-unsigned");
    let mut out = Vec::new();
    for rep in 0..5 {
        for (wi, (w, rate, p50, c_us)) in workloads.iter().enumerate() {
            let i = rep * 4 + wi;
            let noise = 1.0 + 0.003 * jitter(seed, i);
            let rec: RunRecord = record(w, rate * scale * noise, *p50, p50 * 3.0, 1.7e9 + i as f64);
            let rec = with_cpu(&rec, c_us * cpu * noise, c_us * 1.1 * cpu / noise);
            out.push(StoredRun {
                id: i as i64,
                stored_unix_s: 0.0,
                labels: [("study", "kernel-release"), ("variant", release)]
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                record: with_kernel(&rec, kernel, accel),
                env: guest_run_environment(release, accel),
            });
        }
    }
    out
}

fn table(accel: &str) -> ReleaseTable {
    let old = runs(OLD, accel, 1.0, 1.0, 1);
    let new = runs(NEW, accel, 1.05, 0.94, 2);
    let groups = vec![
        ("6.1.0-47".to_string(), old.iter().collect::<Vec<_>>()),
        ("6.1.0-48".to_string(), new.iter().collect::<Vec<_>>()),
    ];
    let kernels = variant_kernels(&groups).expect("the variants differ by kernel");
    let records = |g: &[StoredRun]| g.iter().map(|r| r.record.clone()).collect::<Vec<_>>();
    let mut c = compare(
        "6.1.0-47",
        &records(&old),
        "6.1.0-48",
        &records(&new),
        Margins::default(),
    );
    let emulated = |g: &[StoredRun]| g.iter().any(|r| is_emulated(&r.record, Some(&r.env)));
    if let Some(side) = emulated_sides("6.1.0-47", emulated(&old), "6.1.0-48", emulated(&new)) {
        c.refuse_verdicts(&side);
    }
    release_table(&c, &kernels[0], &kernels[1])
}

#[test]
fn kvm_guests_get_ratios_and_verdicts() {
    let t = table("kvm");
    assert_eq!(t.rows.len(), 5, "three workloads and a mix of two classes");
    let rr = &t.rows[0];
    assert_eq!(rr.workload, "RR1(1B/1B)");
    let rate = rr.figures[0].ratio.unwrap();
    assert!((rate - 1.05).abs() < 0.01, "{rate}");
    assert_eq!(rr.figures[0].verdict, Some(Verdict::Better));
    assert_eq!(
        rr.figures[1].verdict,
        Some(Verdict::Better),
        "less CPU is better"
    );
    let avg = t.average[0].unwrap();
    assert!((avg - 1.05).abs() < 0.01, "{avg}");
    assert!(t.no_verdict_reason.is_none());
    insta::assert_snapshot!("release_table_kvm", t.render_text());
    let svg = ratio_figure(&t).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("CPU/tr server"));
}

#[test]
fn emulated_guests_get_ratios_but_no_verdict() {
    let t = table("tcg");
    assert!(t.rows.iter().all(|r| r.figures[0].ratio.is_some()));
    assert!(t
        .rows
        .iter()
        .flat_map(|r| &r.figures)
        .all(|f| f.verdict == Some(Verdict::Emulated)));
    let text = t.render_text();
    assert!(
        !text.contains("BETTER") && !text.contains("EQUIVALENT"),
        "{text}"
    );
    assert!(
        text.contains("6.1.0-47 and 6.1.0-48 were measured in a TCG-emulated guest: functional only, no performance verdict; use a KVM guest or the host kernel"),
        "{text}"
    );
    insta::assert_snapshot!("release_table_tcg", text);
}

#[test]
fn kernels_detected_only_when_they_differ() {
    let a = runs(OLD, "kvm", 1.0, 1.0, 1);
    let b = runs(OLD, "kvm", 1.0, 1.0, 2);
    let same = vec![
        ("a".to_string(), a.iter().collect::<Vec<_>>()),
        ("b".to_string(), b.iter().collect::<Vec<_>>()),
    ];
    assert_eq!(variant_kernels(&same), None);
    assert_eq!(
        variant_kernels(&same[..1]),
        None,
        "one variant: nothing to compare"
    );
    let c = runs(NEW, "kvm", 1.0, 1.0, 3);
    let differ = vec![same[0].clone(), ("c".to_string(), c.iter().collect())];
    assert_eq!(
        variant_kernels(&differ).unwrap(),
        vec![
            format!("{OLD}, release 6.1.0-47-cloud-amd64"),
            format!("{NEW}, release 6.1.0-48-cloud-amd64"),
        ]
    );
}

#[test]
fn geometric_and_arithmetic_averages() {
    assert!((mean_geometric(&[2.0, 0.5]).unwrap() - 1.0).abs() < 1e-12);
    assert_eq!(mean_geometric(&[]), None);
}
