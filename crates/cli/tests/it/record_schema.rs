//! The published record schema (docs/record.schema.json) against the records
//! stackbench writes: `run --json`, a stored run in `results show N --json`
//! and `results export`, and records of an older schema version once
//! migrated. (`common::run_json` validates every record the other tests
//! make, too; docs.rs checks the file is current.)

use serde_json::Value;

use crate::common::{
    assert_valid_record, json_ok, record_schema_errors, stackbench, WITHOUT_CPU, WITH_CPU,
};

#[test]
fn run_show_and_export_records_validate() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let db = db.to_str().unwrap();
    let run = json_ok(stackbench().args([
        "run",
        "RR2(64B/1kB)+CRR1(64B/64B)",
        "--transactions",
        "200",
        "--json",
        "--db",
        db,
    ]));
    assert_valid_record(&run);
    let shown = json_ok(stackbench().args(["results", "show", "1", "--json", "--db", db]));
    assert_valid_record(&shown["record"]);
    assert_eq!(shown["record"], run);
    let exported = json_ok(stackbench().args(["results", "export", "--db", db]));
    let runs = exported.as_array().expect("export is an array of runs");
    assert_eq!(runs.len(), 1);
    for r in runs {
        assert_valid_record(&r["record"]);
    }
}

/// Records of version 1 (the plan fixtures), read the way every reader reads
/// them, validate once migrated: the schema describes what readers get.
#[test]
fn migrated_older_records_validate() {
    for file in [WITH_CPU, WITHOUT_CPU] {
        let text = std::fs::read_to_string(file).unwrap();
        let old: Value = serde_json::from_str(&text).unwrap();
        assert!(
            old["schema_version"].as_u64() < Some(u64::from(stackbench_record::SCHEMA_VERSION))
        );
        let record = stackbench_record::record_from_json(old).unwrap();
        assert_valid_record(&serde_json::to_value(&record).unwrap());
    }
}

/// Where a record is broken (a JSON pointer; "" the top), and how.
type Breakage = (&'static str, fn(&mut Value));

/// The schema refuses what a reader could not read: so a validation above
/// that passes means something.
#[test]
fn the_schema_refuses_a_wrong_record() {
    let text = std::fs::read_to_string(WITH_CPU).unwrap();
    let record = stackbench_record::record_from_json(serde_json::from_str(&text).unwrap()).unwrap();
    let good = serde_json::to_value(&record).unwrap();
    assert!(record_schema_errors(&good).is_empty());
    let cases: [Breakage; 4] = [
        ("/complete", |r| r["complete"] = "yes".into()),
        ("/schema_version", |r| r["schema_version"] = 2.into()),
        ("/classes/0/clients", |r| {
            r["classes"][0]["clients"] = (-1).into()
        }),
        ("", |r| {
            r.as_object_mut().unwrap().remove("classes");
        }),
    ];
    for (path, break_it) in cases {
        let mut bad = good.clone();
        break_it(&mut bad);
        let errors = record_schema_errors(&bad);
        assert!(
            errors.iter().any(|e| e.starts_with(&format!("{path}: "))),
            "{path}: {errors:?}"
        );
    }
}
