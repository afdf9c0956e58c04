//! The JSON field reference, `docs/record.md`, rendered from the record's
//! types: `schemars` turns their `///` doc comments into a JSON Schema, and
//! this module prints one table per type (field, type, unit, description)
//! with the paths where the type appears, then the flat table's columns
//! ([`crate::flat::columns`]). As with docs/settings.md (ripgrep's idea: its
//! man page is rendered from the flag definitions, crates/core/flags/doc/
//! man.rs), the hidden `stackbench __docs record` prints the page and a test
//! compares it with the checked-in file.

use std::collections::BTreeMap;

use schemars::{schema_for, Schema};
use serde_json::{Map, Value};

use crate::{Environment, RunRecord};

/// The command that regenerates the page.
pub const REGENERATE: &str = "cargo run -q -- __docs record > docs/record.md";

/// The page.
pub fn record_page() -> String {
    let mut out = format!(
        "# Run record (JSON) reference\n\n\
         Generated from the record types in `crates/record/src` (their doc\n\
         comments): edit those, not this page, then regenerate it with\n\
         `{REGENERATE}`\n(a test fails while the two differ).\n\n\
         `stackbench run --json` prints one run record; the store keeps it with\n\
         the environment it was measured in (`results show N --json` prints\n\
         both). Readers decode it with `record_from_json`, which migrates older\n\
         `schema_version`s and refuses newer ones. Units are in the field names\n\
         (`_s` seconds, `_us` µs, `_pct` percent, `_bytes`, `_tps` transactions\n\
         per second) or, where a name has none, in the description. A field\n\
         whose type ends in `| null` may be null or absent. The same types'\n\
         JSON Schema (draft 2020-12) is published as\n\
         [record.schema.json](record.schema.json), for validating records of\n\
         the current `schema_version` with any JSON Schema validator.\n\n"
    );
    out.push_str("## The run record\n\n");
    render_types(&mut out, &schema_for!(RunRecord), "");
    out.push_str(
        "## The environment\n\n\
         Stored beside each run (`env` in `results show N --json`), not in the\n\
         record `run --json` prints.\n\n",
    );
    render_types(&mut out, &schema_for!(Environment), "env");
    out.push_str(
        "## The flat table\n\n\
         `stackbench results export --flat` (CSV; `--format json` for JSON\n\
         lines) gives one row per class per run with these columns; an empty\n\
         cell (null) means not measured. Scripts read this instead of the JSON.\n\n\
         | column | description |\n| --- | --- |\n",
    );
    for c in crate::flat::columns() {
        out.push_str(&format!("| `{}` | {} |\n", c.name, cell(c.description)));
    }
    out
}

/// The unit a field's name gives, by its suffix (longest first).
pub fn unit_of(name: &str) -> &'static str {
    const SUFFIXES: &[(&str, &str)] = &[
        ("_us_per_tran", "µs per transaction"),
        ("_us_per_mb", "µs per MiB"),
        ("_bytes_per_tran", "bytes per transaction"),
        ("_bytes_per_conn", "bytes per connection"),
        ("_bytes_per_socket", "bytes per socket"),
        ("_bytes_per_s", "bytes/s"),
        ("_unix_s", "s since the Unix epoch"),
        ("_tps", "transactions/s"),
        ("_pct", "%"),
        ("_bytes", "bytes"),
        ("_bps", "bit/s"),
        ("_mib", "MiB"),
        ("_packets", "packets"),
        ("_ns", "ns"),
        ("_us", "µs"),
        ("_s", "s"),
    ];
    SUFFIXES
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map_or("", |(_, unit)| unit)
}

/// A type of the schema and where it appears.
struct Section {
    paths: Vec<String>,
    schema: Value,
}

/// Renders the root type and every type it reaches, in order of first
/// appearance, each once.
fn render_types(out: &mut String, schema: &Schema, root_path: &str) {
    let root = schema.as_value();
    let defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let root_name = root
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("Root")
        .to_string();
    let mut order: Vec<String> = vec![root_name.clone()];
    let mut sections: BTreeMap<String, Section> = BTreeMap::new();
    sections.insert(
        root_name,
        Section {
            paths: vec![if root_path.is_empty() {
                "(top level)".into()
            } else {
                root_path.into()
            }],
            schema: root.clone(),
        },
    );
    let mut i = 0;
    while i < order.len() {
        let name = order[i].clone();
        let (schema, base) = {
            let s = &sections[&name];
            (s.schema.clone(), s.paths[0].clone())
        };
        for (field, prop) in properties(&schema) {
            let path = join(&base, &field);
            for (target, suffix) in refs(prop) {
                let entry = sections.entry(target.clone()).or_insert_with(|| {
                    order.push(target.clone());
                    Section {
                        paths: Vec::new(),
                        schema: defs.get(&target).cloned().unwrap_or(Value::Null),
                    }
                });
                entry.paths.push(format!("{path}{suffix}"));
            }
        }
        i += 1;
    }
    for name in &order {
        let section = &sections[name];
        let props = properties(&section.schema);
        if props.is_empty() {
            continue; // an enum: its values are listed where it is used
        }
        out.push_str(&format!("### {name}\n\n"));
        if let Some(d) = section.schema.get("description").and_then(Value::as_str) {
            out.push_str(&format!("{}\n\n", d.replace('\n', " ")));
        }
        let paths: Vec<String> = section.paths.iter().map(|p| format!("`{p}`")).collect();
        out.push_str(&format!("At: {}.\n\n", paths.join(", ")));
        out.push_str("| field | type | unit | description |\n| --- | --- | --- | --- |\n");
        for (field, prop) in props {
            out.push_str(&format!(
                "| `{field}` | {} | {} | {} |\n",
                type_text(prop, &defs),
                unit_of(&field),
                cell(description(prop).unwrap_or_default()),
            ));
        }
        out.push('\n');
    }
}

fn join(base: &str, field: &str) -> String {
    if base == "(top level)" || base.is_empty() {
        field.to_string()
    } else {
        format!("{base}.{field}")
    }
}

/// A type's fields, by name (the schema's map is sorted).
fn properties(schema: &Value) -> Vec<(String, &Value)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v)).collect())
        .unwrap_or_default()
}

/// The named types a property refers to, with the path suffix that reaches
/// them (`[]` through an array, `.*` through a map).
fn refs(prop: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(r) = prop.get("$ref").and_then(Value::as_str) {
        out.push((r.trim_start_matches("#/$defs/").to_string(), String::new()));
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        for alt in prop
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(refs(alt));
        }
    }
    if let Some(items) = prop.get("items") {
        out.extend(refs(items).into_iter().map(|(t, s)| (t, format!("[]{s}"))));
    }
    if let Some(values) = prop.get("additionalProperties").filter(|v| v.is_object()) {
        out.extend(refs(values).into_iter().map(|(t, s)| (t, format!(".*{s}"))));
    }
    out
}

fn description(prop: &Value) -> Option<&str> {
    prop.get("description").and_then(Value::as_str)
}

/// A property's type as the table shows it: `number | null`,
/// `array of SideCpu`, `string: closed, think, open`.
fn type_text(prop: &Value, defs: &Map<String, Value>) -> String {
    if let Some(r) = prop.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        return match defs.get(name).map(enum_values) {
            Some(Some(values)) => format!("string: {values}"),
            _ => format!("[{name}](#{})", name.to_lowercase()),
        };
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = prop.get(key).and_then(Value::as_array) {
            let parts: Vec<String> = alts.iter().map(|a| type_text(a, defs)).collect();
            return parts.join(" \\| ");
        }
    }
    if let Some(values) = enum_values(prop) {
        return format!("string: {values}");
    }
    let one = |t: &str| match t {
        "array" => {
            let items = prop
                .get("items")
                .map_or("any".into(), |i| type_text(i, defs));
            format!("array of {items}")
        }
        "object" => match prop.get("additionalProperties").filter(|v| v.is_object()) {
            Some(v) => format!("map of string → {}", type_text(v, defs)),
            None => "object".into(),
        },
        other => other.to_string(),
    };
    match prop.get("type") {
        Some(Value::String(t)) => one(t),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(one)
            .collect::<Vec<_>>()
            .join(" \\| "),
        _ => "any".into(),
    }
}

/// `a`, `b`, `c` for a string enum (`enum`, or `oneOf` of `const`s).
fn enum_values(schema: &Value) -> Option<String> {
    let values: Vec<String> = if let Some(e) = schema.get("enum").and_then(Value::as_array) {
        e.iter()
            .filter_map(Value::as_str)
            .map(|s| format!("`{s}`"))
            .collect()
    } else {
        let alts = schema.get("oneOf").and_then(Value::as_array)?;
        let consts: Option<Vec<String>> = alts
            .iter()
            .map(|a| {
                a.get("const")
                    .or_else(|| a.get("enum").and_then(|e| e.get(0)))
                    .and_then(Value::as_str)
                    .map(|s| format!("`{s}`"))
            })
            .collect();
        consts?
    };
    (!values.is_empty()).then(|| values.join(", "))
}

/// Text for one table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of every record and environment type says what it holds:
    /// a field added without a doc comment fails here (the page would show
    /// an empty description).
    #[test]
    fn every_field_has_a_description() {
        let mut missing = Vec::new();
        for schema in [schema_for!(RunRecord), schema_for!(Environment)] {
            let root = schema.as_value();
            let mut types: Vec<(String, &Value)> = vec![("(root)".into(), root)];
            if let Some(defs) = root.get("$defs").and_then(Value::as_object) {
                types.extend(defs.iter().map(|(k, v)| (k.clone(), v)));
            }
            for (name, ty) in types {
                for (field, prop) in properties(ty) {
                    if description(prop).is_none_or(|d| d.trim().is_empty()) {
                        missing.push(format!("{name}.{field}"));
                    }
                }
            }
        }
        assert!(
            missing.is_empty(),
            "fields without a doc comment: {missing:?}"
        );
    }

    #[test]
    fn the_page_lists_nested_fields_with_their_paths_and_units() {
        let page = record_page();
        assert!(page.contains("### SideCpu"), "{page}");
        assert!(page.contains("`classes[].cpu.client`"), "{page}");
        assert!(page.contains("| `util_pct` | number | % |"), "{page}");
        assert!(
            page.contains("| `rate_tps` | number | transactions/s |"),
            "{page}"
        );
        assert!(page.contains("string: `closed`, `think`, `open`"), "{page}");
        assert!(page.contains("| `client_util_pct` |"), "{page}");
        assert_eq!(unit_of("started_unix_s"), "s since the Unix epoch");
        assert_eq!(unit_of("process_cpu_us_per_tran"), "µs per transaction");
        assert_eq!(unit_of("write_bytes_per_tran"), "bytes per transaction");
    }
}
