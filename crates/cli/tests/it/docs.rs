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

/// docs/record.schema.json is `stackbench __docs schema`, byte for byte: a
/// record type changed (a field added, renamed, retyped or re-documented)
/// without regenerating the published schema fails here, with the command
/// that fixes it.
#[test]
fn record_schema_is_up_to_date() {
    let out = stackbench().args(["__docs", "schema"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    let checked_in = std::fs::read_to_string(repository().join("docs/record.schema.json")).unwrap();
    assert!(
        generated == checked_in,
        "docs/record.schema.json is stale: run `{}`",
        stackbench_record::json_schema::REGENERATE
    );
}

/// docs/backends.md is `stackbench __docs backends`, byte for byte: a
/// backend row, pair or case changed without regenerating the page fails
/// here, with the command that fixes it.
#[test]
fn backend_matrix_is_up_to_date() {
    let out = stackbench().args(["__docs", "backends"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    let checked_in = std::fs::read_to_string(repository().join("docs/backends.md")).unwrap();
    assert!(
        generated == checked_in,
        "docs/backends.md is stale: run `{}`",
        stackbench_engine::matrix::REGENERATE
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

/// The hand-written pages, with the path each link in them is relative to.
fn markdown_pages() -> Vec<PathBuf> {
    let root = repository();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The anchor a heading gets on the code host's rendering: lower case,
/// punctuation dropped, spaces turned into hyphens, and `-1`, `-2` … on a
/// repeated heading.
fn anchors(markdown: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let mut out: Vec<String> = Vec::new();
    let mut bases: Vec<String> = Vec::new();
    let mut heading: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let text = heading.take().unwrap_or_default();
                let slug: String = text
                    .to_lowercase()
                    .chars()
                    .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
                    .map(|c| if c == ' ' { '-' } else { c })
                    .collect();
                let repeats = bases.iter().filter(|b| **b == slug).count();
                bases.push(slug.clone());
                out.push(if repeats == 0 {
                    slug.clone()
                } else {
                    format!("{slug}-{repeats}")
                });
            }
            _ => {}
        }
    }
    out
}

/// Every relative link in README.md and docs/*.md names a file or directory
/// of the repository, and a `#fragment` names a heading of the page it
/// points at: moving or renaming a page, or a heading, breaks no link
/// silently.
#[test]
fn docs_links_point_at_files_that_exist() {
    use pulldown_cmark::{Event, Parser, Tag};
    let root = repository();
    let mut broken = Vec::new();
    for page in markdown_pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        for event in Parser::new(&text) {
            let Event::Start(Tag::Link { dest_url, .. }) = event else {
                continue;
            };
            if dest_url.contains("://") || dest_url.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match dest_url.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (&*dest_url, None),
            };
            let target = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !target.exists() {
                broken.push(format!("{name}: {dest_url}: no such file"));
                continue;
            }
            if let Some(fragment) = fragment {
                if target.is_file() && target.extension().is_some_and(|e| e == "md") {
                    let heads = anchors(&std::fs::read_to_string(&target).unwrap());
                    if !heads.iter().any(|a| a == fragment) {
                        broken.push(format!("{name}: {dest_url}: no heading with that anchor"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// README's command list names real subcommands, and every subcommand of
/// `stackbench --help` is in it: the list a newcomer reads cannot name a
/// command that is gone, nor miss one that was added.
#[test]
fn readme_command_list_matches_the_subcommands() {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
    let out = stackbench().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let subcommands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(subcommands.len() >= 5, "no command list in --help:\n{help}");

    let readme = std::fs::read_to_string(repository().join("README.md")).unwrap();
    let mut in_list = false;
    let mut heading = None::<String>;
    let mut named = Vec::new();
    for event in Parser::new(&readme) {
        match event {
            Event::Start(Tag::Heading {
                level: HeadingLevel::H2,
                ..
            }) => heading = Some(String::new()),
            Event::Text(t) if heading.is_some() => heading.as_mut().unwrap().push_str(&t),
            Event::End(TagEnd::Heading(HeadingLevel::H2)) => {
                in_list = heading.take().unwrap() == "The commands";
            }
            Event::Code(code) if in_list => {
                if let Some(rest) = code.strip_prefix("stackbench ") {
                    named.push(rest.split_whitespace().next().unwrap_or("").to_string());
                }
            }
            _ => {}
        }
    }
    assert!(!named.is_empty(), "README.md has no `## The commands` list");
    for command in &named {
        assert!(
            subcommands.contains(&command.as_str()),
            "README.md's command list names `stackbench {command}`, which is not a subcommand ({})",
            subcommands.join(", ")
        );
    }
    for command in &subcommands {
        assert!(
            named.iter().any(|n| n == command),
            "README.md's command list lacks `stackbench {command}`"
        );
    }
}
