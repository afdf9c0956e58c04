//! `stackbench plan` through the binary: IBM's published worked examples
//! (TN3270 capacity planning, zIIP-assisted IPsec; from flags
//! and from the plan files in `examples/`), the JSON shape, `--from` a stored
//! run, and the one-line errors with exit status 2.

use assert_cmd::prelude::*;
use predicates::prelude::*;
use serde_json::Value;

use crate::common::{
    fails_with, json_ok, plan, RATINGS, TN3270_CAPACITY, USL_CSV, USL_PLAN, WITHOUT_CPU, WITH_CPU,
    ZIIP_IPSEC,
};

/// `plan ARGS… --json`, which must succeed, as JSON.
fn json(args: &[&str]) -> Value {
    json_ok(plan(args).arg("--json"))
}

fn num(v: &Value, path: &str) -> f64 {
    v.pointer(path)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{path} in {v}"))
}

fn round(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// 1M users × 10⁶ tr/s × 1 h used to print 3774873599996225 processors for
/// ⌈3774873600000000⌉ (float rounding); whole results are now exact.
#[test]
fn huge_cpu_requirements_are_exact_whole_numbers() {
    let args = [
        "cpu",
        "--users",
        "1M",
        "--per-user",
        "1000000/s",
        "--cpu-per-tran",
        "1h",
        "--processors",
        "4",
    ];
    plan(&args)
        .assert()
        .success()
        .stdout(predicate::str::contains("⌈3774873600000000 ÷ 100%⌉"))
        .stdout(predicate::str::contains("3774873599996225").not());
    let v = json(&args);
    assert_eq!(
        v.pointer("/processors_needed").and_then(Value::as_u64),
        Some(3_774_873_600_000_000),
        "{v}"
    );
}

#[test]
fn tn3270_cpu_example_from_flags() {
    plan(&[
        "cpu",
        "--users",
        "8000",
        "--per-user",
        "2/min",
        "--cpu-per-tran",
        "0.000199666s",
        "--processors",
        "4",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains(
        "2 tr/user × 8000 users × 0.000199666 CPU-s/tr ÷ 60 elapsed s",
    ))
    .stdout(predicate::str::contains("┆ 0.0532"))
    .stdout(predicate::str::contains("0.0532 ÷ 4 processors × 100%"))
    .stdout(predicate::str::contains("1.33%"));
}

#[test]
fn tn3270_cpu_example_from_plan_file_json() {
    let v = json(&["cpu", "-f", TN3270_CAPACITY]);
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["plan"], "cpu");
    assert_eq!(round(num(&v, "/cpu_s_per_elapsed_s"), 4), 0.0532);
    assert_eq!(round(num(&v, "/util_pct"), 1), 1.3);
    assert_eq!(num(&v, "/inputs/cpu_s_per_tran"), 0.000199666);
    assert_eq!(v["inputs"]["load"]["mode"], "users");
    assert_eq!(v["processors_needed"], 1);
    assert_eq!(v["more_than_one_processor_required"], false);
    assert!(v["warnings"].as_array().unwrap().is_empty());
}

#[test]
fn flags_override_the_plan_file() {
    let v = json(&["cpu", "-f", TN3270_CAPACITY, "--users", "256K"]);
    assert_eq!(num(&v, "/inputs/load/users"), 262_144.0);
}

#[test]
fn tn3270_rate_with_rating_needs_more_than_one_processor() {
    plan(&[
        "cpu",
        "--rate",
        "8275/s",
        "--cpu-per-tran",
        "0.176ms",
        "--processors",
        "4",
        "--rating",
        "1592",
    ])
    .assert()
    .success()
    .stdout(predicate::str::contains("36.4%"))
    .stdout(predicate::str::contains("MIPS required"))
    .stdout(predicate::str::contains(
        "more than one processor is required",
    ));
}

#[test]
fn ziip_ipsec_offload_no_ziip() {
    plan(&["offload", "-f", ZIIP_IPSEC])
        .assert()
        .success()
        .stdout(predicate::str::contains("CP 105.17 ÷ 2 engines"))
        .stdout(predicate::str::contains("52.59%"))
        .stdout(predicate::str::contains("113.76%"))
        .stdout(predicate::str::contains("113.76 − 105.17"))
        .stdout(predicate::str::contains("8.59%"))
        .stdout(predicate::str::contains("92.45%"))
        .stdout(predicate::str::contains("at least 5.17% spilling over"));
    let v = json(&["offload", "-f", ZIIP_IPSEC]);
    assert_eq!(round(num(&v, "/workload_cp_pct_per_engine"), 2), 52.59);
    assert_eq!(round(num(&v, "/measured_cp_equiv_pct"), 2), 113.76);
    assert_eq!(num(&v, "/eligible_of_measured_pct").round(), 92.0);
    assert_eq!(v["offload_engines_needed"], 2);
}

#[test]
fn ziip_ipsec_offload_one_ziip() {
    let args = [
        "offload",
        "--appl-cp",
        "7.78",
        "--iipcp",
        "7.78",
        "--iip",
        "95.13",
        "--general-engines",
        "2",
        "--offload-engines",
        "1",
    ];
    plan(&args)
        .assert()
        .success()
        .stdout(predicate::str::contains("IIPCP 7.78 ÷ 2 engines"))
        .stdout(predicate::str::contains("3.89%"));
    assert_eq!(
        round(num(&json(&args), "/workload_cp_pct_per_engine"), 2),
        3.89
    );
}

#[test]
fn ziip_ipsec_normalized_figures() {
    for (args, shown, value) in [
        (vec!["normalize", "-f", ZIIP_IPSEC], "+4.9%", 4.9),
        (
            vec![
                "normalize",
                "--networking-change",
                "13%",
                "--profile",
                "bulk",
            ],
            "+3.9%",
            3.9,
        ),
        (
            vec![
                "normalize",
                "--networking-change",
                "45%",
                "--networking-share",
                "30%",
            ],
            "+13.5%",
            13.5,
        ),
    ] {
        plan(&args)
            .assert()
            .success()
            .stdout(predicate::str::contains(shown));
        assert_eq!(round(num(&json(&args), "/total_change_pct"), 1), value);
    }
}

#[test]
fn mva_anchor_vectors() {
    let v = json(&[
        "mva", "--demand", "cpu=0.1s", "--think", "1s", "--users", "10",
    ]);
    assert_eq!(v["model"], "exact_mva");
    assert!((num(&v, "/points/0/throughput_tps") - 7.854176).abs() < 1e-6);
    assert!((num(&v, "/points/0/response_s") - 0.273208).abs() < 1e-6);
    let v = json(&[
        "mva",
        "--demand",
        "cpu=0.1s",
        "--think",
        "1s",
        "--users",
        "10",
        "--processors",
        "2",
    ]);
    assert_eq!(v["model"], "repairman");
    assert!((num(&v, "/points/0/throughput_tps") - 8.961362).abs() < 1e-6);
    assert!((num(&v, "/points/0/response_s") - 0.115902).abs() < 1e-6);
}

#[test]
fn mva_tn3270_population_sweep() {
    let v = json(&["mva", "-f", TN3270_CAPACITY]);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    let last = &points[5];
    assert_eq!(last["users"], 262_144);
    assert!((num(last, "/littles_law_users") - 262_144.0).abs() < 1e-3);
    assert!(num(last, "/throughput_tps") <= num(last, "/throughput_bound_tps") * (1.0 + 1e-12));
    // One processor, exact MVA to 256K users.
    let v = json(&[
        "mva",
        "--demand",
        "cpu=0.176ms",
        "--demand",
        "net=20us",
        "--think",
        "30s",
        "--users",
        "256K",
    ]);
    assert!(num(&v, "/points/0/throughput_tps").is_finite());
}

#[test]
fn usl_codahale_example() {
    let v = json(&["usl", "--csv", USL_CSV]);
    assert!((num(&v, "/sigma/value") - 0.0277299).abs() < 3e-6);
    assert!((num(&v, "/kappa/value") - 0.000104343).abs() < 1e-8);
    assert!((num(&v, "/lambda/value") - 89.9878).abs() < 1e-2);
    assert!((num(&v, "/peak_n/value") - 96.52).abs() < 0.015);
    assert_eq!(num(&v, "/peak_throughput").round(), 1884.0);
    assert!(num(&v, "/peak_n/ci_low") < 96.5 && num(&v, "/peak_n/ci_high") > 96.5);
    assert_eq!(v["verdict"], "retrograde");
    plan(&["usl", "-f", USL_PLAN])
        .assert()
        .success()
        .stdout(predicate::str::contains("√((1 − 0.0277289) ÷ 0.000104348)"))
        .stdout(predicate::str::contains("96.53"))
        .stdout(predicate::str::contains("verdict: coherency-limited"));
}

#[test]
fn usl_warns_about_few_levels() {
    plan(&[
        "usl", "--point", "1:65", "--point", "18:996", "--point", "36:1652", "--point", "72:1853",
    ])
    .assert()
    .success()
    .stderr(predicate::str::contains("warning: only 4 distinct N"));
}

#[test]
fn rescale_with_the_example_ratings() {
    let v = json(&[
        "rescale",
        "--cpu-per-tran",
        "0.176ms",
        "--ratings",
        RATINGS,
        "--source",
        "tn3270-capacity-z9-4way",
        "--target",
        "example-8way",
        "--measured-rate",
        "8275/s",
        "--measured-util",
        "36.3%",
    ]);
    assert_eq!(num(&v, "/source_per_engine_rating"), 398.0);
    assert_eq!(num(&v, "/target_per_engine_rating"), 450.0);
    assert!((num(&v, "/target_cpu_s_per_tran") - 0.000176 * 398.0 / 450.0).abs() < 1e-15);
    assert!((num(&v, "/source_itr_tps") - 8275.0 / 0.363).abs() < 1e-6);
}

/// The example ratings' z9 machine was named `seed003-z9-4way` before it was
/// named after its document: scripts giving the old name get the same plan.
#[test]
fn the_example_z9_machine_answers_to_its_earlier_name() {
    let by = |name: &str| {
        json(&[
            "rescale",
            "--cpu-per-tran",
            "0.176ms",
            "--ratings",
            RATINGS,
            "--source",
            name,
            "--target",
            "example-8way",
        ])
    };
    let (new, old) = (by("tn3270-capacity-z9-4way"), by("seed003-z9-4way"));
    assert_eq!(num(&old, "/source_per_engine_rating"), 398.0);
    assert_eq!(old["target_cpu_s_per_tran"], new["target_cpu_s_per_tran"]);
}

#[test]
fn storage_tn3270_projection() {
    let v = json(&["storage", "-f", TN3270_CAPACITY]);
    assert_eq!(v["users"], 131_072);
    assert_eq!(num(&v, "/components/1/total_bytes"), 2004.0 * 131_072.0);
    plan(&["storage", "-f", TN3270_CAPACITY])
        .assert()
        .success()
        .stdout(predicate::str::contains("0B + 2004B × 131072 users"));
}

#[test]
fn all_sections_of_a_plan_file() {
    let v = json(&["all", "-f", ZIIP_IPSEC]);
    let plans: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["plan"].as_str().unwrap())
        .collect();
    assert_eq!(plans, vec!["offload", "normalize"]);
    fails_with(&["all"], "plan all needs a plan file");
}

#[test]
fn from_a_stored_run() {
    let v = json(&[
        "cpu",
        "--from",
        WITH_CPU,
        "--class",
        "0",
        "--processors",
        "4",
    ]);
    assert_eq!(num(&v, "/inputs/cpu_s_per_tran"), 0.000176);
    assert_eq!(num(&v, "/rate_tps"), 265.0);
    let v = json(&[
        "rescale",
        "--from",
        WITH_CPU,
        "--class",
        "RR8K(100B/800B)",
        "--ratings",
        RATINGS,
        "--source",
        "tn3270-capacity-z9-4way",
        "--target",
        "example-8way",
    ]);
    assert!((num(&v, "/source_itr_tps") - 265.0 / 0.363).abs() < 1e-9);
    // The record's rss_bytes_per_conn is rss ÷ connections, so all of it is
    // per connection and nothing is fixed.
    let v = json(&[
        "storage", "--from", WITH_CPU, "--class", "0", "--users", "256K",
    ]);
    assert_eq!(num(&v, "/components/0/fixed_bytes"), 0.0);
    assert_eq!(num(&v, "/components/0/bytes_per_conn"), 12544.0);
    assert_eq!(num(&v, "/components/1/bytes_per_conn"), 2004.0);
    // A fixed part from the flags, the kernel part from the run.
    let v = json(&[
        "storage",
        "--from",
        WITH_CPU,
        "--class",
        "0",
        "--server-user-fixed",
        "66MB",
        "--server-user-per-conn",
        "4kB",
    ]);
    assert_eq!(
        num(&v, "/components/0/total_bytes"),
        69_206_016.0 + 4096.0 * 8192.0
    );
    assert_eq!(num(&v, "/components/1/bytes_per_conn"), 2004.0);
    // --processors defaults to the CPUs the side's figures cover.
    let v = json(&["cpu", "--from", WITH_CPU, "--class", "0"]);
    assert_eq!(num(&v, "/inputs/processors"), 4.0);
    let v = json(&["mva", "--from", WITH_CPU, "--class", "0", "--think", "30s"]);
    assert_eq!(v["points"][0]["users"], 8192);
    let v = json(&[
        "cpu",
        "--from",
        WITH_CPU,
        "--class",
        "0",
        "--side",
        "client",
        "--processors",
        "4",
    ]);
    assert_eq!(num(&v, "/inputs/cpu_s_per_tran"), 0.00013);
}

#[test]
fn flags_make_missing_run_figures_unnecessary() {
    let v = json(&[
        "rescale",
        "--from",
        WITHOUT_CPU,
        "--cpu-per-tran",
        "0.176ms",
        "--ratings",
        RATINGS,
        "--source",
        "tn3270-capacity-z9-4way",
        "--target",
        "example-8way",
    ]);
    assert!(v["source_itr_tps"].is_null());
    let v = json(&[
        "cpu",
        "--from",
        WITHOUT_CPU,
        "--cpu-per-tran",
        "0.176ms",
        "--processors",
        "4",
    ]);
    assert_eq!(num(&v, "/rate_tps"), 265.0);
}

#[test]
fn shared_cpus_are_warned_about() {
    plan(&["cpu", "--from", WITH_CPU, "--class", "1"])
        .assert()
        .success()
        .stderr(predicate::str::contains("shared CPUs in this run"));
}

#[test]
fn usl_from_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let template: Value =
        serde_json::from_str(&std::fs::read_to_string(WITHOUT_CPU).unwrap()).unwrap();
    let mut args = vec!["usl".to_string()];
    for (n, x) in [
        (1, 65.0),
        (18, 996.0),
        (36, 1652.0),
        (72, 1853.0),
        (108, 1829.0),
        (144, 1775.0),
        (216, 1702.0),
    ] {
        let mut record = template.clone();
        record["classes"][0]["clients"] = n.into();
        record["classes"][0]["rate_tps"] = x.into();
        let path = dir.path().join(format!("run{n}.json"));
        std::fs::write(&path, record.to_string()).unwrap();
        args.extend(["--from".to_string(), path.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = json(&args);
    assert!((num(&v, "/peak_n/value") - 96.52).abs() < 0.015);
}

#[test]
fn every_subcommand_help_has_examples() {
    for sub in [
        "cpu",
        "rescale",
        "storage",
        "offload",
        "normalize",
        "mva",
        "usl",
    ] {
        plan(&[sub, "--help"])
            .assert()
            .success()
            .stdout(predicate::str::contains("Example"));
    }
}

/// Runs of a think-time population used to be fitted and called
/// "linear: no measurable contention", which N/(R+Z) is by construction.
/// Stored runs that saturate nothing are refused with what they show.
#[test]
fn usl_from_a_think_time_population_that_saturates_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let template: Value =
        serde_json::from_str(&std::fs::read_to_string(WITHOUT_CPU).unwrap()).unwrap();
    let mut args = vec!["usl".to_string()];
    for (n, r_us) in [
        (100, 90.0),
        (200, 95.0),
        (400, 110.0),
        (800, 140.0),
        (1600, 260.0),
    ] {
        let mut record = template.clone();
        let class = &mut record["classes"][0];
        class["clients"] = n.into();
        class["rate_tps"] = (f64::from(n) / (r_us / 1e6 + 1.0)).into();
        class["latency_us"]["mean"] = r_us.into();
        class["population"] = serde_json::json!({
            "pacing": "think", "pacing_text": "1s", "think_mean_s": 1.0, "wait_mean_s": 1.0,
            "offered_rate_tps": null, "arrivals": null, "latency_uncorrected_us": null,
            "late": 0, "dropped": 0, "generator_lag_us": null, "connected": n, "connect_s": 0.1
        });
        let path = dir.path().join(format!("run{n}.json"));
        std::fs::write(&path, record.to_string()).unwrap();
        args.extend(["--from".to_string(), path.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_with(
        &args,
        "think-time population (Z = 1 s): the rate follows N/(R+Z)",
    );
    fails_with(&args, "no saturation reached");
}

/// A stored run of one class with `memory` as its server side.
fn run_with_memory(
    dir: &std::path::Path,
    kind: &str,
    notation: &str,
    clients: u32,
    memory: &str,
) -> String {
    let path = dir.join(format!("{kind}-{clients}.json"));
    let text = run_record(3, notation, kind, clients, 1000.0, memory);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A whole run record (it must decode as one) of one class whose server
/// side's memory is `memory`; the sockstat counts it leaves out are 0.
fn run_record(
    version: u32,
    notation: &str,
    kind: &str,
    clients: u32,
    rate_tps: f64,
    memory: &str,
) -> String {
    let mut server: Value = serde_json::from_str(memory).unwrap();
    for key in ["tcp_inuse", "tcp_orphan", "tcp_tw"] {
        server
            .as_object_mut()
            .unwrap()
            .entry(key)
            .or_insert(0.into());
    }
    serde_json::json!({
        "schema_version": version, "stackbench_version": "0.1.0", "complete": true,
        "incomplete_reason": null, "started_unix_s": 1.0, "settings": {},
        "classes": [{
            "workload": notation, "notation": notation, "kind": kind,
            "stream_direction": null, "clients": clients, "request_bytes": 100,
            "response_bytes": 800, "transactions": 1, "duration_s": 1.0,
            "rate_tps": rate_tps, "latency_us": null, "tx_bytes": 1, "rx_bytes": 1,
            "tx_bytes_per_s": 1.0, "rx_bytes_per_s": 1.0, "errors": 0,
            "error_counts": {"refused": 0, "reset": 0, "eof": 0, "timeout": 0, "other": 0},
            "per_second_tps": [], "memory": {"server": server}
        }]
    })
    .to_string()
}

/// A user population's kernel memory used to read 0 B per user (host-wide
/// sockstat, clamped), and `plan storage --from` projected
/// "0B × 262144 users". A missing or 0 B figure is refused; a run that is
/// not a population (one connection, CRR) is projected with a warning.
#[test]
fn storage_from_a_run_refuses_zero_kernel_memory_and_warns_off_non_populations() {
    let dir = tempfile::tempdir().unwrap();
    // Schema 2: kernel_sock_* were the host's sockstat change, 0 when it fell.
    let old = dir.path().join("old.json");
    std::fs::write(
        &old,
        run_record(
            2,
            "RR8K(100B/800B)@1s",
            "RR",
            8192,
            8000.0,
            r#"{"rss_bytes":40000000,"rss_bytes_per_conn":1200.0,"kernel_sock_bytes":856000,
          "kernel_sock_baseline_bytes":6100000,"kernel_sock_bytes_per_conn":0.0,"connections":8192}"#,
        ),
    )
    .unwrap();
    let old = old.display().to_string();
    fails_with(&["storage", "--from", &old, "--users", "256K"], "clamped");
    fails_with(
        &["storage", "--from", &old, "--users", "256K"],
        "--server-kernel-per-conn",
    );
    // The flag stands in for the refused figure.
    json(&[
        "storage",
        "--from",
        &old,
        "--users",
        "256K",
        "--server-kernel-per-conn",
        "3.5kB",
    ]);
    let own = r#"{"rss_bytes":4000000,"rss_bytes_per_conn":1200.0,"kernel_sock_bytes":null,
        "kernel_sock_bytes_per_conn":null,"host_sock_mem_bytes":0,"connections":1024}"#;
    let missing = run_with_memory(dir.path(), "RR", "RR1K(100B/800B)@1s", 1024, own);
    fails_with(
        &["storage", "--from", &missing],
        "no kernel socket memory per connection",
    );
    // A population with its own-socket figure: projected, no warning.
    let measured = r#"{"rss_bytes":4000000,"rss_bytes_per_conn":1200.0,"kernel_sock_bytes":3686400,
        "kernel_sock_bytes_per_conn":3600.0,"host_sock_mem_bytes":0,"connections":1024}"#;
    let population = run_with_memory(dir.path(), "RR", "RR1K(100B/800B)@1s", 1024, measured);
    let v = json(&["storage", "--from", &population, "--users", "256K"]);
    assert_eq!(num(&v, "/components/1/bytes_per_conn"), 3600.0);
    assert_eq!(v["warnings"].as_array().map_or(0, Vec::len), 0, "{v}");
    // One connection, and CRR: projected, with the reason it may mislead.
    let one = run_with_memory(
        dir.path(),
        "RR",
        "RR1(100B/800B)",
        1,
        &measured.replace("\"connections\":1024", "\"connections\":1"),
    );
    let v = json(&["storage", "--from", &one, "--users", "256K"]);
    assert!(
        v["warnings"][0]
            .as_str()
            .unwrap()
            .contains("one connection"),
        "{v}"
    );
    let crr = run_with_memory(dir.path(), "CRR", "CRR40(64B/8kB)", 40, measured);
    let v = json(&["storage", "--from", &crr, "--users", "256K"]);
    assert!(v["warnings"][0].as_str().unwrap().contains("CRR"), "{v}");
}

/// A plan made from a run carries the run's warnings (a `background_load`
/// baseline went into a `plan cpu --from RUN` with no word before): on
/// stderr and in the JSON, for every plan that reads a run.
#[test]
fn a_plan_carries_the_warnings_of_the_run_it_reads() {
    let mut record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(crate::common::WITH_CPU).unwrap()).unwrap();
    let message = "CPUs [0,1] were 35.0% busy in the idle baseline before the run: other \
                   work will be charged to the transactions; stop it or pin the run to idle CPUs";
    record["warnings"] = serde_json::json!([
        {"code": "background_load", "message": message, "class": null},
        {"code": "run_too_short", "message": "another class's", "class": "CRR1(64B/8kB)"}
    ]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("warned.json");
    std::fs::write(&file, record.to_string()).unwrap();
    let file = file.to_string_lossy().into_owned();
    let want = format!("{file}: the measured run warned [background_load] {message}");
    for args in [
        vec!["cpu", "--side", "server", "--processors", "8"],
        vec![
            "mva", "--side", "server", "--think", "30s", "--users", "100",
        ],
        vec!["storage", "--side", "server", "--users", "256K"],
    ] {
        let out = crate::common::plan(&args)
            .args(["--from", &file, "--class", "0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        assert!(
            err.contains(&format!("stackbench: warning: {want}")),
            "{args:?}: {err}"
        );
        // Only the run's and the chosen class's warnings.
        assert!(!err.contains("another class's"), "{args:?}: {err}");
        let json = crate::common::plan(&args)
            .args(["--from", &file, "--class", "0", "--json"])
            .output()
            .unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert!(
            doc["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w == &serde_json::json!(want)),
            "{args:?}: {doc}"
        );
    }
}
