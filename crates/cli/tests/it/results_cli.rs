//! `stackbench results`, `compare`, `report` and `study` through the binary,
//! on a temporary database seeded with fabricated runs.

use std::path::Path;

use assert_cmd::prelude::*;
use predicates::prelude::*;
use stackbench_results::fixtures::{environment, jitter, record, with_cpu};
use stackbench_results::store::{Labels, Store};

use crate::common::{examples, stackbench};

/// Seeds a database: study "quick", variants A and B (B 10% slower on RR),
/// 5 runs each of two workloads.
fn seed(db: &Path, b_scale: f64) {
    let mut store = Store::open(Some(db)).unwrap();
    store
        .save_study(
            "quick",
            "Does B keep A's rate?",
            "name = \"quick\"\nworkloads = [\"RR1(1B/1B)\"]\n",
        )
        .unwrap();
    let env = environment("6.1.0");
    for rep in 0..5 {
        for (v, scale) in [("A", 1.0), ("B", b_scale)] {
            for (i, w) in ["RR2(64B/64B)", "CRR2(64B/1kB)"].iter().enumerate() {
                let n = 1.0 + 0.002 * jitter(rep as u64 * 7 + i as u64, v.len() + rep);
                let rec = record(w, 10_000.0 * scale * n, 50.0, 90.0 * n, 1.7e9 + rep as f64);
                let labels: Labels = [
                    ("study", "quick"),
                    ("variant", v),
                    ("repetition", &rep.to_string()),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                store
                    .save(&with_cpu(&rec, 5.0 * n, 4.0 / n), &labels, &env)
                    .unwrap();
            }
        }
    }
}

#[test]
fn results_list_show_export() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    seed(&db, 1.0);
    stackbench()
        .args(["results", "list", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("RR2(64B/64B)").and(predicate::str::contains("repetition=4")),
        );
    stackbench()
        .args(["results", "list", "--where", "variant=B", "--json", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("\"variant\": \"B\"")
                .and(predicate::str::contains("\"variant\": \"A\"").not()),
        );
    stackbench()
        .args(["results", "show", "1", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(
            predicate::str::contains("kernel 6.1.0").and(predicate::str::contains("srv µs/tr")),
        );
    stackbench()
        .args(["results", "show", "999", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no stored run with id 999"));
    let csv = stackbench()
        .args(["results", "export", "--format", "csv", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().count(), 21, "header + 20 runs × 1 class");
    assert!(csv.starts_with("id,started_utc,study,variant,labels,complete,workload,class,"));
    let out = dir.path().join("x.md");
    stackbench()
        .args(["results", "export", "--format", "markdown", "-o"])
        .arg(&out)
        .arg("--db")
        .arg(&db)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .starts_with("| id | started_utc |"));
    stackbench()
        .args(["results", "export", "--where", "variant", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--where: bad label 'variant': use key=value, e.g. kernel=6.1; --where keeps the runs that carry the label key=value",
        ))
        .stderr(predicate::str::contains("--label").not());
    stackbench()
        .args([
            "compare",
            "variant=A",
            "variant=B",
            "--where",
            "study",
            "--db",
        ])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--where: bad label 'study': use key=value, e.g. kernel=6.1; --where keeps",
        ))
        .stderr(predicate::str::contains("--label").not());
}

/// The files beside `db` (the database and SQLite's -wal/-shm), sorted.
fn files_beside(db: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(db.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn read_only_commands_create_no_database() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nonexistent/db");
    let out = dir.path().join("rep");
    for args in [
        vec!["results", "list"],
        vec!["results", "show", "1"],
        vec!["results", "export"],
        vec!["compare", "variant=A", "variant=B"],
        vec!["report", "--out", out.to_str().unwrap()],
    ] {
        let result = stackbench()
            .args(&args)
            .arg("--db")
            .arg(&missing)
            .output()
            .unwrap();
        assert_eq!(result.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(result.stderr).unwrap();
        assert_eq!(
            err,
            format!(
                "stackbench: error: no results database at {}: run `stackbench run` or `stackbench study` first, or give --db PATH\n",
                missing.display()
            ),
            "{args:?}"
        );
    }
    assert!(!dir.path().join("nonexistent").exists());
    assert!(!out.exists());
    // The default location is not created either.
    let home = dir.path().join("home");
    stackbench()
        .args(["results", "list"])
        .env_remove("STACKBENCH_DB")
        .env("XDG_DATA_HOME", &home)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no results database at"));
    assert!(!home.exists());
}

#[test]
fn a_read_only_database_can_be_listed() {
    let dir = tempfile::tempdir().unwrap();
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let db = ro.join("r.db");
    seed(&db, 1.0);
    let before = std::fs::read(&db).unwrap();
    let set_mode = |p: &Path, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    // Root (the test runner) ignores these modes; the read-only open flag
    // is what keeps the commands from writing, checked by the file list.
    set_mode(&db, 0o444);
    set_mode(&ro, 0o555);
    stackbench()
        .args(["results", "list", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("CRR2(64B/1kB)"));
    stackbench()
        .args(["compare", "variant=A", "variant=B", "--db"])
        .arg(&db)
        .assert()
        .success();
    set_mode(&ro, 0o755);
    // The database is unchanged; SQLite may have added its WAL index files
    // (reading a WAL database needs them), nothing else.
    assert_eq!(std::fs::read(&db).unwrap(), before);
    let files = files_beside(&db);
    assert!(
        files
            .iter()
            .all(|f| ["r.db", "r.db-wal", "r.db-shm"].contains(&f.as_str())),
        "{files:?}"
    );
}

#[test]
fn a_record_from_a_newer_stackbench_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    seed(&db, 1.0);
    let newer = stackbench_record::SCHEMA_VERSION + 1;
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE runs SET record_json = json_set(record_json, '$.schema_version', ?1) WHERE id = 3",
            [newer],
        )
        .unwrap();
    let message = format!(
        "stored run 3: record schema_version {newer} is newer than this stackbench reads ({}): upgrade stackbench",
        newer - 1
    );
    // The list survives: the row is marked and its error is a warning.
    stackbench()
        .args(["results", "list", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("UNREADABLE").count(1))
        .stderr(format!(
            "stackbench: warning: {message} (listed as UNREADABLE)\n"
        ));
    stackbench()
        .args(["results", "list", "--json", "--db"])
        .arg(&db)
        .assert()
        .success()
        .stdout(predicate::str::contains("\"error\":").count(1));
    stackbench()
        .args(["results", "show", "3", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(format!("stackbench: error: {message}\n"));
    stackbench()
        .args(["results", "show", "2", "--db"])
        .arg(&db)
        .assert()
        .success();
    stackbench()
        .args(["compare", "variant=A", "variant=B", "--db"])
        .arg(&db)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(message));

    let file = dir.path().join("new.json");
    let mut value = serde_json::to_value(record("RR1(1B/1B)", 1.0, 1.0, 1.0, 0.0)).unwrap();
    value["schema_version"] = newer.into();
    std::fs::write(&file, value.to_string()).unwrap();
    stackbench()
        .arg("compare")
        .arg(&file)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(format!(
            "stackbench: error: {}: record schema_version {newer} is newer than this stackbench reads ({}): upgrade stackbench\n",
            file.display(),
            newer - 1
        ));
    std::fs::write(&file, format!("[{value}, {value}]")).unwrap();
    stackbench()
        .arg("compare")
        .arg(&file)
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(format!(
            "{} (record 1): record schema_version",
            file.display()
        )));
}

#[test]
fn compare_exits_one_on_worse_and_zero_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let same = dir.path().join("same.db");
    seed(&same, 1.0);
    stackbench()
        .args([
            "compare",
            "variant=A",
            "variant=B",
            "--where",
            "study=quick",
            "--db",
        ])
        .arg(&same)
        .assert()
        .code(0)
        .stdout(
            predicate::str::contains("EQUIVALENT").and(predicate::str::contains("WORSE").not()),
        );
    let worse = dir.path().join("worse.db");
    seed(&worse, 0.9);
    stackbench()
        .args(["compare", "variant=A", "variant=B", "--db"])
        .arg(&worse)
        .assert()
        .code(1)
        .stdout(
            predicate::str::contains("WORSE")
                .and(predicate::str::contains("decreases throughput by 10.00%")),
        );
    stackbench()
        .args(["compare", "variant=A", "variant=B", "--json", "--db"])
        .arg(&worse)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("\"verdict\": \"WORSE\""));
    stackbench()
        .args(["compare", "variant=A", "variant=B", "--markdown", "--db"])
        .arg(&worse)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("| Workload | Metric |"));
    stackbench()
        .args(["compare", "variant=A", "variant=Z", "--db"])
        .arg(&worse)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no stored runs match variant=Z"));
    stackbench()
        .args(["compare", "nonsense", "variant=A", "--db"])
        .arg(&worse)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "'nonsense' is neither a JSON file nor a label selector",
        ));
    stackbench()
        .args(["compare", "variant=A", "variant=B", "--margin", "0", "--db"])
        .arg(&worse)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--margin 0: give a percentage"));
}

#[test]
fn compare_reads_json_files() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<_> = (0..5)
        .map(|i| record("RR1(1B/1B)", 1000.0 + i as f64, 10.0, 20.0, 0.0))
        .collect();
    let b: Vec<_> = (0..5)
        .map(|i| record("RR1(1B/1B)", 1001.0 + i as f64, 10.0, 20.0, 0.0))
        .collect();
    let (fa, fb) = (dir.path().join("a.json"), dir.path().join("b.jsonl"));
    std::fs::write(&fa, serde_json::to_string(&a).unwrap()).unwrap();
    let lines: Vec<String> = b
        .iter()
        .map(|r| serde_json::to_string(r).unwrap())
        .collect();
    std::fs::write(&fb, lines.join("\n")).unwrap();
    stackbench()
        .arg("compare")
        .arg(&fa)
        .arg(&fb)
        .assert()
        .success()
        .stdout(predicate::str::contains("RR1(1B/1B)").and(predicate::str::contains("EQUIVALENT")));
}

#[test]
fn report_writes_html_markdown_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db");
    seed(&db, 1.0);
    let out = dir.path().join("rep");
    stackbench()
        .args(["report", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Does B keep A's rate?"));
    assert!(
        md.contains("Based on the results, B performs as equivalent to A."),
        "{md}"
    );
    assert!(out.join("figures/figure-2.svg").exists());
    stackbench()
        .args(["report", "--study", "nope", "--db"])
        .arg(&db)
        .arg("--out")
        .arg(&out)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--study nope: no stored runs"));
}

#[test]
fn study_dry_run_prints_the_interleaved_plan() {
    let out = stackbench()
        .args(["study", "--dry-run"])
        .arg(examples().join("quick.toml"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 13, "{text}");
    assert!(
        lines[12].starts_with("study plan: 12 steps, estimated at least "),
        "{}",
        lines[12]
    );
    assert!(
        lines[0].starts_with("[1/12] repetition 1 RR2(64B/64B) variant nagle"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with("[2/12] repetition 1 RR2(64B/64B) variant nodelay"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with("[3/12] repetition 1 CRR2(64B/1kB) variant nagle"),
        "{}",
        lines[2]
    );
}

#[test]
fn study_errors_are_one_line_with_status_two() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\nworkloads = [\"RR1(1B/1B)\"]\nnodely = true\n",
    )
    .unwrap();
    let out = stackbench()
        .args(["study", "--dry-run"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad.toml:3:1: unknown key 'nodely': use name,"),
        "{err}"
    );
    stackbench()
        .args(["study", "--dry-run", "--variant", "zzz"])
        .arg(examples().join("quick.toml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "unknown variant 'zzz' in --variant: the file defines nagle, nodelay",
        ));
}

/// A 16 × 16 sweep of 1000 repetitions of 24 h runs used to be accepted,
/// and `--dry-run` listed its 256,000 steps with no total time.
#[test]
fn a_study_longer_than_a_day_is_summarised_and_needs_yes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.toml");
    let values: Vec<String> = (1..=16).map(|n| n.to_string()).collect();
    std::fs::write(
        &file,
        format!(
            "name = \"huge\"\nworkloads = [\"RR1(1B/1B)\"]\nrepetitions = 1000\nduration = \"24h\"\n\
             [sweep]\nclients = [{0}]\nserver_threads = [{0}]\n",
            values.join(", ")
        ),
    )
    .unwrap();
    let out = stackbench()
        .args(["study", "--dry-run"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().count() < 30, "{}", text.lines().count());
    assert!(text.contains("… and 255980 more steps"), "{text}");
    // 256,000 × (2 s warm-up + 24 h) + a 1 s baseline per step (each step
    // changes server_threads, so each starts its responder afresh).
    let secs: u64 = 256_000 * (2 + 24 * 3600 + 1);
    let days = format!("{} d {} h", secs / 86_400, secs / 3600 % 24);
    assert!(
        text.contains(&format!(
            "study plan: 256000 steps, estimated at least {days}"
        )),
        "{text}"
    );
    assert!(text.contains("runs it only with --yes"), "{text}");
    let out = stackbench()
        .args(["study", "--no-store"])
        .arg(&file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("study too long: 256000 steps") && err.contains("add --yes"),
        "{err}"
    );
}

/// A reserved label from `--label` used to be silently overwritten, and
/// `--transport unix --ipv6` accepted; both are now refused.
#[test]
fn reserved_labels_and_unix_with_ipv6_are_refused() {
    stackbench()
        .args(["study", "--dry-run", "--label", "variant=mine"])
        .arg(examples().join("quick.toml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--label: label 'variant' is reserved",
        ));
    stackbench()
        .args(["study", "--dry-run", "--transport", "unix", "--ipv6"])
        .arg(examples().join("quick.toml"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "ipv6 = true: transport unix uses a socket file, not an IP address",
        ));
    stackbench()
        .args([
            "run",
            "--no-store",
            "--transport",
            "unix",
            "--ipv6",
            "RR1(1B/1B)",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "ipv6: transport unix uses a socket file, not an IP address: drop ipv6",
        ));
}

/// `results export --flat FILE`: a schema-1 record file becomes one CSV row
/// per class with the migrated figures under unit-named columns, and a file
/// from a newer stackbench is refused in one line (exit 2), with no store.
#[test]
fn flat_export_reads_record_files_of_any_version() {
    let out = crate::common::output_ok(stackbench().args([
        "results",
        "export",
        "--flat",
        crate::common::WITH_CPU,
    ]));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    for column in [
        "notation",
        "rate_tps",
        "latency_p99_us",
        "server_cpu_us_per_tran",
        "warnings",
    ] {
        assert!(header.contains(&column), "no {column} in {header:?}");
    }
    assert_eq!(lines.clone().count(), 2, "{text}");
    assert!(lines.next().unwrap().contains("RR8K(100B/800B)"), "{text}");
    let dir = tempfile::tempdir().unwrap();
    let newer = dir.path().join("newer.json");
    std::fs::write(&newer, r#"{"schema_version": 99}"#).unwrap();
    let out = stackbench()
        .args(["results", "export", "--flat", "--format", "json"])
        .arg(&newer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("newer than this stackbench reads"),
        "{stderr}"
    );
}
