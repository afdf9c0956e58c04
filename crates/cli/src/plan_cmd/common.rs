//! What every `plan` subcommand shares: the plan file and how its section is
//! merged under the command-line flags, reading files, loading a stored run,
//! and turning planner errors into usage errors (exit 2).

use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use stackbench_plan::planfile::PlanFile;
use stackbench_plan::report::{Envelope, Report};
use stackbench_plan::runfile::{self, RunClass};
use stackbench_plan::storage::Side;
use stackbench_plan::PlanError;

use crate::exit::UsageError;

/// Keys whose values are paths: taken from a plan file, they are relative to
/// the file's directory.
const PATH_KEYS: &[&str] = &["from", "csv", "ratings"];

/// One computed plan, ready to print.
pub struct Output {
    pub report: Report,
    /// The pretty JSON document `{"schema_version", "plan", ...body, "notes",
    /// "warnings"}`, serialised straight from the structs so fields keep
    /// their declared order.
    pub json: String,
}

impl Output {
    /// Renders a planner result and its report.
    pub fn new<T: Serialize>(plan: &str, body: &T, report: Report) -> anyhow::Result<Self> {
        let json = serde_json::to_string_pretty(&Envelope::new(plan, body, &report))?;
        Ok(Output { report, json })
    }
}

/// Settings shared by the subcommands of one invocation.
pub struct Ctx {
    file: Option<PlanFile>,
    dir: PathBuf,
    pub digits: usize,
}

impl Ctx {
    /// Loads the plan file, when one is given.
    pub fn new(file: Option<&Path>, digits: usize) -> anyhow::Result<Self> {
        let (file, dir) = match file {
            Some(path) => {
                let text = read_text(path, "file")?;
                let plan =
                    PlanFile::parse(&path.display().to_string(), &text).map_err(usage_err)?;
                let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
                (Some(plan), dir)
            }
            None => (None, PathBuf::new()),
        };
        Ok(Ctx { file, dir, digits })
    }

    pub fn file(&self) -> Option<&PlanFile> {
        self.file.as_ref()
    }

    /// The flags of `T` overlaid on the plan file's `[section]`: a key the
    /// command line left empty takes the file's value. The file's keys must be
    /// flag names of `T` (checked against clap's own definition of them).
    pub fn merge<T>(&self, cli: T, section: &str) -> anyhow::Result<T>
    where
        T: clap::Args + Serialize + DeserializeOwned,
    {
        let Some(file) = &self.file else {
            return Ok(cli);
        };
        let command = T::augment_args(clap::Command::new("plan"));
        let flags: Vec<String> = command
            .get_arguments()
            .filter_map(|a| a.get_long().map(str::to_string))
            .collect();
        let values = file.section(section, &flags).map_err(usage_err)?;
        let mut merged = serde_json::to_value(&cli)?;
        let Value::Object(map) = &mut merged else {
            anyhow::bail!("plan arguments are not a struct");
        };
        for (key, file_value) in values {
            let current = map.get(key).cloned().unwrap_or(Value::Null);
            let given = match &current {
                Value::Null => false,
                Value::Array(a) => !a.is_empty(),
                _ => true,
            };
            if given {
                continue;
            }
            let mut value = self.resolve_paths(key, file_value.clone());
            if current.is_array() && !value.is_array() {
                value = Value::Array(vec![value]);
            }
            map.insert(key.clone(), value);
        }
        serde_json::from_value(merged).map_err(|e| {
            UsageError(format!(
                "{}: [{section}]: {e}; write the value as the flag would take it",
                file.path()
            ))
            .into()
        })
    }

    fn resolve_paths(&self, key: &str, value: Value) -> Value {
        if !PATH_KEYS.contains(&key) {
            return value;
        }
        match value {
            Value::String(s) => Value::String(self.dir.join(s).display().to_string()),
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .map(|v| self.resolve_paths(key, v))
                    .collect(),
            ),
            other => other,
        }
    }
}

/// Converts a planner error into a usage error (one line, exit 2).
pub fn usage_err(e: PlanError) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

/// `Result<T, PlanError>` → `anyhow::Result<T>` with exit status 2.
pub trait OrUsage<T> {
    fn or_usage(self) -> anyhow::Result<T>;
}

impl<T> OrUsage<T> for Result<T, PlanError> {
    fn or_usage(self) -> anyhow::Result<T> {
        self.map_err(usage_err)
    }
}

/// Reads a text file named by `--flag`; failure is a usage error.
pub fn read_text(path: &Path, flag: &str) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        UsageError(format!(
            "--{flag} {}: cannot read it ({e}); check the path",
            path.display()
        ))
        .into()
    })
}

/// Parses `--side`.
pub fn parse_side(text: Option<&str>) -> anyhow::Result<Side> {
    match text.unwrap_or("server") {
        "server" => Ok(Side::Server),
        "client" => Ok(Side::Client),
        other => Err(usage_err(PlanError::bad(
            "side",
            other,
            "unknown side",
            "use server or client",
        ))),
    }
}

/// Loads one class of a stored run (`--from`, `--side`, `--class`).
pub fn load_run(path: &str, side: Option<&str>, class: Option<&str>) -> anyhow::Result<RunClass> {
    let text = read_text(Path::new(path), "from")?;
    runfile::read(path, &text, parse_side(side)?, class).or_usage()
}

/// Applies `parse` to an optional flag value.
pub fn opt<T>(
    value: &Option<String>,
    flag: &str,
    parse: impl Fn(&str, &str) -> Result<T, PlanError>,
) -> anyhow::Result<Option<T>> {
    value
        .as_deref()
        .map(|v| parse(flag, v))
        .transpose()
        .or_usage()
}

/// Applies `parse` to a required flag value.
pub fn required<T>(
    value: &Option<String>,
    flag: &str,
    fix: &str,
    parse: impl Fn(&str, &str) -> Result<T, PlanError>,
) -> anyhow::Result<T> {
    opt(value, flag, parse)?.ok_or_else(|| usage_err(PlanError::missing(flag, fix)))
}
