//! Plan files: one TOML file describing a study's plans, one section per
//! subcommand (`[cpu]`, `[rescale]`, `[storage]`, `[offload]`, `[normalize]`,
//! `[mva]`, `[usl]`), whose keys are exactly the subcommand's flag names
//! (`users = 8000`, `per-user = "2/min"`). Flags on the command line override
//! the file. Values are handed on as text, the same text a flag would carry,
//! so one parser serves both; numbers may be written bare (`processors = 4`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::PlanError;
use crate::rescale::one_line;

/// The sections a plan file may have.
pub const SECTIONS: &[&str] = &[
    "cpu",
    "rescale",
    "storage",
    "offload",
    "normalize",
    "mva",
    "usl",
];

/// Top-level keys that document the file and are otherwise ignored.
const DOC_KEYS: &[&str] = &["title", "description"];

/// A parsed plan file: each section's keys with their values as text (or
/// arrays of text).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanFile {
    path: String,
    sections: BTreeMap<String, Map<String, Value>>,
}

/// A TOML value as the text a flag would carry.
fn as_flag_value(path: &str, key: &str, value: &toml::Value) -> Result<Value, PlanError> {
    let bad = |what: &str| {
        PlanError::file(
            path,
            format!("key '{key}' is {what}; write a string, a number or an array of them, as the flag would take"),
        )
    };
    Ok(match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::String(i.to_string()),
        toml::Value::Float(f) => Value::String(f.to_string()),
        toml::Value::Boolean(b) => Value::String(b.to_string()),
        toml::Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| match v {
                    toml::Value::Array(_) | toml::Value::Table(_) => {
                        Err(bad("a nested array or table"))
                    }
                    other => as_flag_value(path, key, other),
                })
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(_) => return Err(bad("a table")),
        toml::Value::Datetime(_) => return Err(bad("a date")),
    })
}

impl PlanFile {
    /// Parses a plan file; `path` names it in errors.
    pub fn parse(path: &str, text: &str) -> Result<Self, PlanError> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            PlanError::file(
                path,
                format!("not valid TOML ({})", one_line(&e.to_string())),
            )
        })?;
        let mut sections = BTreeMap::new();
        for (name, value) in &table {
            if DOC_KEYS.contains(&name.as_str()) {
                continue;
            }
            let toml::Value::Table(entries) = value else {
                return Err(PlanError::file(
                    path,
                    format!(
                        "top-level key '{name}' is not a section; the sections are [{}]",
                        SECTIONS.join("], [")
                    ),
                ));
            };
            if !SECTIONS.contains(&name.as_str()) {
                return Err(PlanError::file(
                    path,
                    format!(
                        "unknown section [{name}]; the sections are [{}]",
                        SECTIONS.join("], [")
                    ),
                ));
            }
            let mut map = Map::new();
            for (key, v) in entries {
                map.insert(key.clone(), as_flag_value(path, key, v)?);
            }
            sections.insert(name.clone(), map);
        }
        Ok(PlanFile {
            path: path.to_string(),
            sections,
        })
    }

    /// The file's path as given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Names of the sections present, in file order of [`SECTIONS`].
    pub fn section_names(&self) -> Vec<&'static str> {
        SECTIONS
            .iter()
            .copied()
            .filter(|s| self.sections.contains_key(*s))
            .collect()
    }

    /// The `[name]` section, checked against the subcommand's flag names.
    pub fn section(&self, name: &str, flags: &[String]) -> Result<&Map<String, Value>, PlanError> {
        let map = self.sections.get(name).ok_or_else(|| {
            PlanError::file(
                &self.path,
                format!(
                    "has no [{name}] section; add one whose keys are the flags of `plan {name}`"
                ),
            )
        })?;
        if let Some(key) = map.keys().find(|k| !flags.contains(k)) {
            return Err(PlanError::file(
                &self.path,
                format!(
                    "unknown key '{key}' in [{name}]; the keys are the flags of `plan {name}`: {}",
                    flags.join(", ")
                ),
            ));
        }
        Ok(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sections_become_flag_text() {
        let text = r#"
title = "TN3270 capacity plan"
[cpu]
users = 8000
per-user = "2/min"
cpu-per-tran = "199.666us"
processors = 4
[mva]
demand = ["cpu=0.176ms"]
"#;
        let f = PlanFile::parse("p.toml", text).unwrap();
        assert_eq!(f.section_names(), vec!["cpu", "mva"]);
        let cpu = f
            .section(
                "cpu",
                &flags(&["users", "per-user", "cpu-per-tran", "processors"]),
            )
            .unwrap();
        assert_eq!(cpu["users"], Value::String("8000".into()));
        assert_eq!(cpu["processors"], Value::String("4".into()));
        let mva = f.section("mva", &flags(&["demand"])).unwrap();
        assert_eq!(mva["demand"], serde_json::json!(["cpu=0.176ms"]));
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let e = PlanFile::parse("p.toml", "[cpux]\nusers = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("p.toml: unknown section [cpux]"), "{e}");
        let f = PlanFile::parse("p.toml", "[cpu]\nuser = 1\n").unwrap();
        let e = f
            .section("cpu", &flags(&["users"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "p.toml: unknown key 'user' in [cpu]; the keys are the flags of `plan cpu`: users"
        );
        let e = f
            .section("mva", &flags(&["users"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("has no [mva] section"), "{e}");
        let e = PlanFile::parse("p.toml", "[cpu\n").unwrap_err().to_string();
        assert!(
            e.starts_with("p.toml: not valid TOML") && !e.contains('\n'),
            "{e}"
        );
        assert!(PlanFile::parse("p.toml", "[cpu.x]\ny = 1\n").is_err());
    }
}
