//! Study-file text → [`Study`]. The file is read as a spanned TOML tree so that
//! every error points at the key or value it is about (`file:line:column`).
//! Setting keys go through the settings table's setter, so a bad value reads
//! exactly as the same value given as a `run` flag, prefixed by its place.
//!
//! TOML values become setting text: strings as written, integers, floats and
//! booleans by their TOML spelling. So `duration = 10` is refused as the
//! command line refuses `--duration 10` (a duration needs a unit).

use std::path::Path;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::{
    reserved_label, Labels, SettingTexts, Study, StudyError, Variant, DEFAULT_REPETITIONS,
    MAX_REPETITIONS,
};
use crate::settings::{self, RunSettings};
use crate::sweep::{Sweep, SweepDim};
use crate::Workload;

/// Reads and parses a study file.
pub fn load_study(path: &Path) -> Result<Study, StudyError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| StudyError::Read {
        file: file.clone(),
        source,
    })?;
    parse_study(&text, &file)
}

/// The study's own keys (besides settings).
const STUDY_KEYS: &str = "name, description, workloads, repetitions, [sweep], [[variant]]";
/// A variant's own keys (besides settings).
const VARIANT_KEYS: &str = "name, description, labels";

/// Where errors are reported: the file and its text (for line and column).
struct Source<'a> {
    file: &'a str,
    text: &'a str,
}

impl Source<'_> {
    fn at(&self, offset: usize, message: impl Into<String>) -> StudyError {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        StudyError::Parse {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }
}

type Value<'i> = Spanned<DeValue<'i>>;

/// The text a scalar TOML value stands for, or `None` for arrays and tables.
fn scalar_text(v: &DeValue) -> Option<String> {
    match v {
        DeValue::String(s) => Some(s.to_string()),
        DeValue::Integer(i) => Some(i.as_str().to_string()),
        DeValue::Float(f) => Some(f.as_str().to_string()),
        DeValue::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn string(src: &Source, key: &str, v: &Value) -> Result<String, StudyError> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.to_string()),
        other => Err(src.at(
            v.span().start,
            format!("{key} must be a string, not {}", other.type_str()),
        )),
    }
}

/// Checks a setting key and value and returns it as `(name, text)`.
fn setting(
    src: &Source,
    key: &Spanned<std::borrow::Cow<str>>,
    v: &Value,
    own_keys: &str,
) -> Result<(String, String), StudyError> {
    let Some(def) = settings::find(key.get_ref()).filter(|d| d.name == key.get_ref().as_ref())
    else {
        return Err(src.at(
            key.span().start,
            format!(
                "unknown key '{}': use {own_keys}, or a setting: {}",
                key.get_ref(),
                settings::names().join(", ")
            ),
        ));
    };
    let text = scalar_text(v.get_ref()).ok_or_else(|| {
        let fix = if v.get_ref().is_array() {
            format!(
                "a list sweeps a setting: put `{} = [...]` under [sweep]",
                def.name
            )
        } else {
            format!("give one value, e.g. {} = \"...\"", def.name)
        };
        src.at(v.span().start, format!("{}: {fix}", def.name))
    })?;
    RunSettings::default().set(def.name, &text).map_err(|e| {
        src.at(
            v.span().start,
            format!("{} = {text}: {}", def.name, e.message),
        )
    })?;
    Ok((def.name.to_string(), text))
}

fn workloads(src: &Source, v: &Value) -> Result<Vec<Workload>, StudyError> {
    let items = v.get_ref().as_array().ok_or_else(|| {
        src.at(
            v.span().start,
            "workloads must be a list, e.g. [\"RR10(4kB/4kB)\"]",
        )
    })?;
    if items.is_empty() {
        return Err(src.at(
            v.span().start,
            "empty workloads: give at least one, e.g. [\"RR10(4kB/4kB)\"]",
        ));
    }
    let mut out: Vec<Workload> = Vec::with_capacity(items.len());
    for item in items {
        let text = string(src, "each workload", item)?;
        let workload = text
            .parse::<Workload>()
            .map_err(|e| src.at(item.span().start, e.to_string()))?;
        // Compared as parsed, so `RR1(1kB/1kB)` and `RR1(1024B/1024B)` are
        // the same workload: a second copy would only double its runs.
        if let Some(i) = out.iter().position(|w| *w == workload) {
            return Err(src.at(
                item.span().start,
                format!(
                    "duplicate workload '{text}' (the same as workload {} of the list, {}): \
                     remove it; to run a workload more often, raise repetitions",
                    i + 1,
                    out[i]
                ),
            ));
        }
        out.push(workload);
    }
    Ok(out)
}

fn repetitions(src: &Source, v: &Value) -> Result<u32, StudyError> {
    let n = v
        .get_ref()
        .as_integer()
        .and_then(|i| i.as_str().parse::<i64>().ok());
    n.and_then(|n| u32::try_from(n).ok())
        .filter(|n| (1..=MAX_REPETITIONS).contains(n))
        .ok_or_else(|| {
            src.at(
                v.span().start,
                format!(
                    "bad repetitions {}: use 1 to {MAX_REPETITIONS} (5 or more for a verdict)",
                    scalar_text(v.get_ref()).unwrap_or_else(|| v.get_ref().type_str().into())
                ),
            )
        })
}

/// `[sweep]`: one or two keys, each a list of values, crossed in file order.
fn sweep(src: &Source, v: &Value) -> Result<Sweep, StudyError> {
    let table = v.get_ref().as_table().ok_or_else(|| {
        src.at(
            v.span().start,
            "sweep must be a table: [sweep] then e.g. clients = [1, 2, 4]",
        )
    })?;
    if table.is_empty() {
        return Err(src.at(
            v.span().start,
            "empty [sweep]: give one or two settings to sweep, e.g. clients = [1, 2, 4], \
             or remove [sweep]",
        ));
    }
    let mut dims = Vec::new();
    for (key, value) in sorted(table) {
        let items = value.get_ref().as_array().ok_or_else(|| {
            src.at(
                value.span().start,
                format!(
                    "{} must be a list of values to sweep, e.g. [1, 2, 4]",
                    key.get_ref()
                ),
            )
        })?;
        let mut texts = Vec::new();
        for item in items {
            texts.push(scalar_text(item.get_ref()).ok_or_else(|| {
                src.at(
                    item.span().start,
                    "a swept value must be a string, number or boolean",
                )
            })?);
        }
        let dim = SweepDim::new(key.get_ref(), &texts).map_err(|e| {
            let what = if e.value.is_empty() {
                String::new()
            } else {
                format!("{}: ", e.value)
            };
            src.at(
                key.span().start,
                format!("sweep {}: {what}{}", key.get_ref(), e.message),
            )
        })?;
        dims.push(dim);
    }
    Sweep::new(dims).map_err(|e| src.at(v.span().start, format!("sweep: {}", e.message)))
}

fn labels(src: &Source, v: &Value) -> Result<Labels, StudyError> {
    let table = v.get_ref().as_table().ok_or_else(|| {
        src.at(
            v.span().start,
            "labels must be a table, e.g. labels = { kernel = \"6.1\" }",
        )
    })?;
    let mut out = Labels::new();
    for (key, value) in sorted(table) {
        let name = key.get_ref().to_string();
        if let Some(reserved) = reserved_label(&name) {
            return Err(src.at(key.span().start, reserved));
        }
        out.insert(name, string(src, "a label value", value)?);
    }
    Ok(out)
}

fn variant(src: &Source, v: &Value, taken: &[Variant]) -> Result<Variant, StudyError> {
    let table = v
        .get_ref()
        .as_table()
        .ok_or_else(|| src.at(v.span().start, "each [[variant]] must be a table"))?;
    let mut out = Variant {
        name: String::new(),
        description: String::new(),
        labels: Labels::new(),
        settings: SettingTexts::default(),
    };
    let mut name_at = v.span().start;
    for (key, value) in sorted(table) {
        match key.get_ref().as_ref() {
            "name" => {
                out.name = string(src, "name", value)?.trim().to_string();
                name_at = value.span().start;
            }
            "description" => out.description = string(src, "description", value)?,
            "labels" => out.labels = labels(src, value)?,
            _ => out.settings.0.push(setting(src, key, value, VARIANT_KEYS)?),
        }
    }
    if out.name.is_empty() {
        return Err(src.at(
            name_at,
            "empty or missing variant name: give each [[variant]] a unique name",
        ));
    }
    if taken.iter().any(|x| x.name == out.name) {
        return Err(src.at(
            name_at,
            format!(
                "duplicate variant name '{}': give each [[variant]] a unique name",
                out.name
            ),
        ));
    }
    Ok(out)
}

/// A table's entries in file order.
fn sorted<'a, 'i>(
    table: &'a DeTable<'i>,
) -> Vec<(&'a Spanned<std::borrow::Cow<'i, str>>, &'a Value<'i>)> {
    let mut entries: Vec<_> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

/// Parses study-file text; `file` names it in errors.
pub fn parse_study(text: &str, file: &str) -> Result<Study, StudyError> {
    let src = Source { file, text };
    let doc = DeTable::parse(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        src.at(offset, e.message().trim().replace('\n', " "))
    })?;
    let mut study = Study {
        name: String::new(),
        description: String::new(),
        workloads: Vec::new(),
        repetitions: DEFAULT_REPETITIONS,
        settings: SettingTexts::default(),
        sweep: Sweep::default(),
        overrides: SettingTexts::default(),
        variants: Vec::new(),
    };
    let (mut has_name, mut has_workloads) = (false, false);
    for (key, value) in sorted(doc.get_ref()) {
        match key.get_ref().as_ref() {
            "name" => (study.name, has_name) = (string(&src, "name", value)?, true),
            "description" => study.description = string(&src, "description", value)?,
            "workloads" => (study.workloads, has_workloads) = (workloads(&src, value)?, true),
            "repetitions" => study.repetitions = repetitions(&src, value)?,
            "sweep" => study.sweep = sweep(&src, value)?,
            "variant" => {
                let items = value.get_ref().as_array().ok_or_else(|| {
                    src.at(
                        value.span().start,
                        "variants are written [[variant]], one table each",
                    )
                })?;
                for item in items {
                    let v = variant(&src, item, &study.variants)?;
                    study.variants.push(v);
                }
            }
            _ => study
                .settings
                .0
                .push(setting(&src, key, value, STUDY_KEYS)?),
        }
    }
    for (present, key, example) in [
        (has_name, "name", "name = \"my-study\""),
        (
            has_workloads,
            "workloads",
            "workloads = [\"RR10(4kB/4kB)\"]",
        ),
    ] {
        if !present {
            return Err(src.at(0, format!("missing key '{key}': add e.g. {example}")));
        }
    }
    if study.variants.is_empty() {
        study.variants.push(Variant {
            name: "default".to_string(),
            description: String::new(),
            labels: Labels::new(),
            settings: SettingTexts::default(),
        });
    }
    Ok(study)
}
