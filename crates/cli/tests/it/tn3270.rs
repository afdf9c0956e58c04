//! `--protocol tn3270` from the command line: the example study runs both
//! its variants to completion, and what contradicts the protocol is
//! refused in one line.

/// examples/tn3270.toml runs as written (counts, not durations): raw and
/// tn3270, RR and CRR, all complete.
#[test]
fn the_tn3270_example_study_runs() {
    let out = crate::common::output_ok(
        crate::common::stackbench()
            .arg("study")
            .arg(crate::common::examples().join("tn3270.toml"))
            .args(["--transactions", "3", "--repetitions", "1", "--no-store"]),
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let complete = |variant: &str| {
        table
            .lines()
            .filter(|l| l.contains(variant) && l.contains(" yes"))
            .count()
    };
    assert_eq!(complete(" tn3270 "), 2, "{table}");
    assert_eq!(complete(" raw "), 2, "{table}");
}

#[test]
fn contradictions_with_tn3270_are_refused_in_one_line() {
    use crate::common::refused;
    let waitall = ["RR1(100B/800B)", "--protocol", "tn3270", "--waitall"];
    refused("run", &waitall, "drop waitall");
    let target = ["RR1(100B/800B)", "--target", "tn3270://127.0.0.1:9"];
    refused(
        "run",
        &target,
        "a tn3270:// target is a plain TN3270 server",
    );
}
