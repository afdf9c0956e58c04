//! The result store on temporary databases: round trips, label selection,
//! migrations, records from a newer stackbench, read-only opening, the default
//! location, and a process killed mid-study.

use std::path::Path;
use std::process::Command;

use stackbench_model::study::parse_study;
use stackbench_record::{
    MemoryFigures, RepetitionValues, Repetitions, RunRecord, SideMemory, WarningRecord,
    SCHEMA_VERSION,
};
use stackbench_results::fixtures;
use stackbench_results::store::{
    default_db_path, parse_label, parse_labels, Labels, RunId, Store, StoreError, MIGRATIONS,
};
use stackbench_results::study::run_study;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn runs_round_trip_with_labels_and_environment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub/dir/results.db");
    let mut store = Store::open(Some(&path)).unwrap();
    assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as u32);
    let rec = fixtures::record("RR10(4kB/4kB)", 1234.5, 40.0, 80.0, 1_700_000_000.0);
    let env = fixtures::environment("6.1.0");
    let id = store
        .save(
            &rec,
            &labels(&[("study", "s"), ("variant", "A"), ("kernel", "6.1")]),
            &env,
        )
        .unwrap();
    let with_cpu = fixtures::with_cpu(&rec, 3.5, 2.5);
    let id2 = store
        .save(
            &with_cpu,
            &labels(&[("study", "s"), ("variant", "B")]),
            &env,
        )
        .unwrap();
    drop(store);

    let store = Store::open(Some(&path)).unwrap();
    let back = store.get(id).unwrap();
    assert_eq!(back.record, rec);
    assert_eq!(back.env, env);
    assert_eq!(back.labels["kernel"], "6.1");
    assert_eq!(store.get(id2).unwrap().record, with_cpu);

    let list = store.list(&Labels::new()).unwrap();
    assert_eq!(list.iter().map(|r| r.id).collect::<Vec<_>>(), [id, id2]);
    assert_eq!(list[0].workloads, "RR10(4kB/4kB)");
    assert_eq!(list[0].study.as_deref(), Some("s"));
    assert_eq!(list[1].variant.as_deref(), Some("B"));
    assert!(list[0].complete);
    assert_eq!(
        store.select_ids(&labels(&[("variant", "B")])).unwrap(),
        [id2]
    );
    assert_eq!(
        store
            .select_ids(&labels(&[("study", "s"), ("kernel", "6.1")]))
            .unwrap(),
        [id]
    );
    assert!(store
        .select_ids(&labels(&[("study", "other")]))
        .unwrap()
        .is_empty());
    assert!(matches!(store.get(999), Err(StoreError::NoSuchRun(999))));
    assert!(store.integrity_ok().unwrap());
}

/// A record with every optional part filled and floats that the default
/// serde_json parser reads back 1 ULP off (found by the metrics proptest).
fn rich_record() -> RunRecord {
    let mut rec = fixtures::with_cpu(
        &fixtures::record(
            "RR1(100B/800B)+STR10(1B/20MB)",
            0.1 + 0.2,
            1e-310,
            3.3512887393678246e87,
            1.7e9,
        ),
        4.000000000000001,
        2.5,
    );
    rec.complete = false;
    rec.incomplete_reason = Some("interrupted (Ctrl-C)".into());
    rec.warnings.push(WarningRecord {
        code: "run_too_short".into(),
        message: "the window was 0.50 s: use --duration 10s".into(),
        class: Some("STR10(1B/20MB)".into()),
    });
    rec.classes[1].memory = Some(MemoryFigures {
        client: Some(SideMemory {
            rss_bytes: u64::MAX,
            rss_bytes_per_conn: Some(123.456),
            ..SideMemory::default()
        }),
        server: None,
    });
    rec.classes[0].repetitions = Some(Repetitions {
        runs: vec![RepetitionValues::default(); 3],
        target_width_pct: Some(5.0),
        reached: Some(false),
        ..Repetitions::default()
    });
    rec
}

#[test]
fn a_saved_record_reads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let rec = rich_record();
    let id = Store::open(Some(&path))
        .unwrap()
        .save(
            &rec,
            &labels(&[("study", "rt")]),
            &fixtures::environment("6.1"),
        )
        .unwrap();
    assert_eq!(
        Store::open(Some(&path)).unwrap().get(id).unwrap().record,
        rec
    );
    assert_eq!(
        Store::open_read_only(&path)
            .unwrap()
            .get(id)
            .unwrap()
            .record,
        rec
    );
}

/// Stores two runs, then rewrites the second's record as a newer stackbench
/// would have written it.
fn store_with_a_newer_row(path: &Path) -> (RunId, RunId) {
    let mut store = Store::open(Some(path)).unwrap();
    let env = fixtures::environment("6.1");
    let rec = fixtures::record("RR1(1B/1B)", 10.0, 1.0, 2.0, 1.0);
    let good = store.save(&rec, &labels(&[("study", "v")]), &env).unwrap();
    let bad = store.save(&rec, &labels(&[("study", "v")]), &env).unwrap();
    drop(store);
    rusqlite::Connection::open(path)
        .unwrap()
        .execute(
            "UPDATE runs SET record_json = json_set(record_json, '$.schema_version', ?1) WHERE id = ?2",
            rusqlite::params![SCHEMA_VERSION + 1, bad],
        )
        .unwrap();
    (good, bad)
}

#[test]
fn a_newer_record_is_refused_by_id_but_still_listed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let (good, bad) = store_with_a_newer_row(&path);
    let store = Store::open_read_only(&path).unwrap();
    let err = store.get(bad).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "stored run {bad}: record schema_version {} is newer than this stackbench reads ({SCHEMA_VERSION}): upgrade stackbench",
            SCHEMA_VERSION + 1
        )
    );
    assert!(store.get(good).is_ok());
    // Listing reads the indexed columns, so the bad row is shown with its error.
    let list = store.list(&Labels::new()).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].error, None);
    assert_eq!(list[1].error.as_deref(), Some(err.as_str()));
    // Anything that needs the records themselves refuses the set, naming the run.
    let err = store.select(&Labels::new()).unwrap_err().to_string();
    assert!(err.starts_with(&format!("stored run {bad}: ")), "{err}");
}

#[test]
fn a_row_that_is_not_json_is_one_line_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let (_, bad) = store_with_a_newer_row(&path);
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE runs SET record_json = '{\"classes\": [' WHERE id = ?1",
            [bad],
        )
        .unwrap();
    let store = Store::open_read_only(&path).unwrap();
    let err = store.get(bad).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("stored run {bad} is not valid JSON: ")),
        "{err}"
    );
    assert!(!err.contains('\n'));
    let list = store.list(&Labels::new()).unwrap();
    assert_eq!(list[1].error.as_deref(), Some(err.as_str()));
}

#[test]
fn read_only_open_of_a_missing_file_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nonexistent/sub/results.db");
    let err = Store::open_read_only(&path).err().unwrap();
    assert!(matches!(err, StoreError::Missing { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "no results database at {}: run `stackbench run` or `stackbench study` first, or give --db PATH",
            path.display()
        )
    );
    assert!(!dir.path().join("nonexistent").exists());
}

#[test]
fn read_only_open_reads_a_wal_database_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let mut writer = Store::open(Some(&path)).unwrap();
    let rec = fixtures::record("RR1(1B/1B)", 10.0, 1.0, 2.0, 1.0);
    let env = fixtures::environment("6.1");
    let id = writer.save(&rec, &labels(&[("study", "w")]), &env).unwrap();
    // The writer stays open: its commit may still be only in the WAL.
    let mut reader = Store::open_read_only(&path).unwrap();
    assert_eq!(reader.get(id).unwrap().record, rec);
    assert_eq!(reader.schema_version().unwrap(), MIGRATIONS.len() as u32);
    let err = reader
        .save(&rec, &Labels::new(), &env)
        .unwrap_err()
        .to_string();
    assert!(err.contains("readonly"), "{err}");
    // A run saved while the reader is open is seen by its next query.
    writer.save(&rec, &labels(&[("study", "w")]), &env).unwrap();
    assert_eq!(reader.list(&Labels::new()).unwrap().len(), 2);
}

#[test]
fn read_only_open_refuses_newer_and_foreign_databases() {
    let dir = tempfile::tempdir().unwrap();
    let newer_path = dir.path().join("newer.db");
    let mut newer: Vec<&str> = MIGRATIONS.to_vec();
    newer.push("ALTER TABLE runs ADD COLUMN note TEXT");
    Store::open_with(&newer_path, &newer).unwrap();
    let err = Store::open_read_only(&newer_path)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("newer than this stackbench supports"), "{err}");

    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let err = Store::open_read_only(&empty).err().unwrap().to_string();
    assert!(err.contains("is not a stackbench result database"), "{err}");
    // Nothing was added to the foreign file.
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);

    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "not sqlite at all, just text long enough to have a header",
    )
    .unwrap();
    let err = Store::open_read_only(&text).err().unwrap().to_string();
    assert!(
        err.starts_with(&format!("result database {}", text.display())),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn database_is_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let _store = Store::open(Some(&path)).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn studies_are_stored_with_their_description() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(Some(&dir.path().join("r.db"))).unwrap();
    assert_eq!(store.study_description("x").unwrap(), None);
    store.save_study("x", "first", "name = \"x\"").unwrap();
    store.save_study("x", "second", "name = \"x\"").unwrap();
    assert_eq!(
        store.study_description("x").unwrap().as_deref(),
        Some("second")
    );
    assert_eq!(
        store.study_file("x").unwrap().as_deref(),
        Some("name = \"x\"")
    );
}

#[test]
fn migrations_apply_in_order_and_keep_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.db");
    let rec = fixtures::record("RR1(1B/1B)", 10.0, 1.0, 2.0, 1.0);
    let env = fixtures::environment("6.1.0");
    let id = {
        let mut s = Store::open_with(&path, MIGRATIONS).unwrap();
        s.save(&rec, &labels(&[("study", "m")]), &env).unwrap()
    };
    // A later version adds a column: opening applies only the new step.
    let mut newer: Vec<&str> = MIGRATIONS.to_vec();
    newer.push("ALTER TABLE runs ADD COLUMN note TEXT");
    {
        let s = Store::open_with(&path, &newer).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as u32 + 1);
        assert_eq!(s.get(id).unwrap().record, rec);
        // Reopening is idempotent.
        drop(s);
        let s = Store::open_with(&path, &newer).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as u32 + 1);
    }
    // An older stackbench refuses a newer database instead of misreading it.
    let err = Store::open_with(&path, MIGRATIONS)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("newer than this stackbench supports"), "{err}");
    assert!(!err.contains('\n'));
}

#[test]
fn default_location_honours_env_and_xdg() {
    // The only test in this binary that reads or sets these variables.
    std::env::set_var("STACKBENCH_DB", "/tmp/explicit.db");
    assert_eq!(default_db_path().unwrap(), Path::new("/tmp/explicit.db"));
    std::env::remove_var("STACKBENCH_DB");
    std::env::set_var("XDG_DATA_HOME", "/tmp/xdg");
    assert_eq!(
        default_db_path().unwrap(),
        Path::new("/tmp/xdg/stackbench/results.db")
    );
    std::env::remove_var("XDG_DATA_HOME");
    std::env::set_var("HOME", "/home/u");
    assert_eq!(
        default_db_path().unwrap(),
        Path::new("/home/u/.local/share/stackbench/results.db")
    );
}

#[test]
fn labels_parse_as_key_value() {
    assert_eq!(
        parse_label("kernel=6.1").unwrap(),
        ("kernel".into(), "6.1".into())
    );
    assert_eq!(
        parse_label("note=a=b").unwrap(),
        ("note".into(), "a=b".into())
    );
    assert_eq!(parse_label("x=").unwrap(), ("x".into(), "".into()));
    let err = parse_label("kernel").unwrap_err().to_string();
    assert_eq!(err, "bad label 'kernel': use key=value, e.g. kernel=6.1");
    assert!(parse_label("=v").is_err());
    assert_eq!(
        parse_labels(&["a=1", "b=2", "a=3"]).unwrap(),
        labels(&[("a", "3"), ("b", "2")])
    );
}

const CHILD_DB: &str = "STACKBENCH_TEST_KILL_DB";
const STEPS_BEFORE_MARKER: usize = 20;

/// Run by `a_study_killed_midway_keeps_completed_runs` in a child process:
/// stores runs as fast as it can, touching a marker after 20 of them, until
/// it is killed.
#[test]
#[ignore = "helper: run as a child process by a_study_killed_midway_keeps_completed_runs"]
fn kill_child_study() {
    let Ok(db) = std::env::var(CHILD_DB) else {
        return;
    };
    let study = parse_study(
        "name = \"kill\"\nworkloads = [\"RR1(1B/1B)\"]\nrepetitions = 1000\n",
        "kill.toml",
    )
    .unwrap();
    let plan = study.plan(&[], "kill.toml").unwrap();
    let mut store = Store::open(Some(Path::new(&db))).unwrap();
    let env = fixtures::environment("6.1.0");
    let marker = format!("{db}.marker");
    let _ = run_study(
        &plan,
        &mut |step| {
            Ok(fixtures::record(
                "RR1(1B/1B)",
                100.0 + step.index as f64,
                1.0,
                2.0,
                step.index as f64,
            ))
        },
        &mut |step, rec| {
            store.save(rec, &step.labels, &env)?;
            if step.index + 1 == STEPS_BEFORE_MARKER {
                std::fs::write(&marker, b"20")?;
            }
            Ok(())
        },
    );
}

#[test]
fn a_study_killed_midway_keeps_completed_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("kill.db");
    let marker = dir.path().join("kill.db.marker");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::kill_child_study",
            "--ignored",
            "--test-threads=1",
        ])
        .env(CHILD_DB, &db)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Polls, at most 60 s (a hang check), for the child to have stored 20 runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !marker.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no destructors, no chance to tidy up.
    child.wait().unwrap();
    assert!(marker.exists(), "the child never stored 20 runs");

    let store = Store::open(Some(&db)).unwrap();
    assert!(store.integrity_ok().unwrap());
    let runs = store.select(&labels(&[("study", "kill")])).unwrap();
    assert!(
        runs.len() >= STEPS_BEFORE_MARKER,
        "only {} runs survived",
        runs.len()
    );
    assert!(runs.len() < 1000, "the child was killed before the end");
    for (i, run) in runs.iter().enumerate() {
        // Every surviving run is whole: record, all four labels, in order.
        assert_eq!(run.record.classes[0].rate_tps, 100.0 + i as f64);
        assert_eq!(run.labels.len(), 4, "{:?}", run.labels);
        assert_eq!(run.labels["repetition"], (i + 1).to_string());
    }
}

/// Regression: parallel `run`s opening a new database at once must not race
/// on its migrations (seen as a failed CLI test under parallel load).
#[test]
fn concurrent_opens_of_a_new_database_all_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| Store::open(Some(&path)).map(|_| ())))
            .collect();
        for h in handles {
            h.join().unwrap().expect("every concurrent open succeeds");
        }
    });
}
