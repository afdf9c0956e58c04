//! The reference docs generated from the code: the checked-in pages must be
//! what the generator prints today, and the hand-written docs must still
//! name every run setting.

use std::path::{Path, PathBuf};

use stackbench_model::settings::reference::REGENERATE;
use stackbench_model::settings::SETTINGS;

use crate::common::stackbench;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// docs/settings.md is `stackbench __docs settings`, byte for byte: a
/// setting added, renamed or re-documented in the table without
/// regenerating the page fails here, with the command that fixes it.
#[test]
fn settings_reference_is_up_to_date() {
    let out = stackbench().args(["__docs", "settings"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    let checked_in = std::fs::read_to_string(repository().join("docs/settings.md")).unwrap();
    assert!(
        generated == checked_in,
        "docs/settings.md is stale: run `{REGENERATE}`"
    );
}

/// docs/record.md is `stackbench __docs record`, byte for byte: a record
/// field added, renamed or re-documented without regenerating the page
/// fails here, with the command that fixes it.
#[test]
fn record_reference_is_up_to_date() {
    let out = stackbench().args(["__docs", "record"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    let checked_in = std::fs::read_to_string(repository().join("docs/record.md")).unwrap();
    assert!(
        generated == checked_in,
        "docs/record.md is stale: run `{}`",
        stackbench_record::reference::REGENERATE
    );
}

#[test]
fn docs_refuses_an_unknown_page_in_one_line() {
    let out = stackbench().args(["__docs", "man"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("use `__docs settings`"), "{stderr}");
}

/// Every run setting is a `run` flag, has its row in docs/settings.md (flag,
/// study key and JSON key), and is named as a study key by docs/results.md,
/// whose study-file prose is written by hand; README points at the reference
/// instead of repeating it.
#[test]
fn docs_name_every_run_setting() {
    let root = repository();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let reference = std::fs::read_to_string(root.join("docs/settings.md")).unwrap();
    let results = std::fs::read_to_string(root.join("docs/results.md")).unwrap();
    let help = stackbench().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        readme.contains("docs/settings.md"),
        "README.md does not point at docs/settings.md"
    );
    for def in SETTINGS {
        let flag = def.flag();
        assert!(help.contains(&flag), "run --help lacks {flag}");
        let row = format!("| `{flag}`");
        let row = reference
            .lines()
            .find(|l| l.starts_with(&row))
            .unwrap_or_else(|| panic!("docs/settings.md has no row for {flag}"));
        for key in [def.name, def.json] {
            assert!(
                row.contains(&format!("`{key}`")),
                "docs/settings.md's row for {flag} lacks `{key}`"
            );
        }
        assert!(
            results.contains(&format!("`{}`", def.name)),
            "docs/results.md lacks `{}`",
            def.name
        );
    }
}
