//! What every subcommand's input shares: the injected environment, the
//! invocation's context (the plan file and its directory), the computed
//! output, and the flag-parsing helpers. A leaf below the subcommands, so
//! that `input/mod.rs`, which dispatches to them, is imported by none.

use std::path::{Path, PathBuf};

use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;

use crate::planfile::PlanFile;
use crate::report::{Envelope, Report};
use crate::runfile::{self, RunClass};
use crate::storage::Side;
use crate::PlanError;

/// Keys whose values are paths: taken from a plan file, they are relative to
/// the file's directory.
const PATH_KEYS: &[&str] = &["from", "csv", "ratings"];

/// What planning needs from outside this crate, injected by the caller.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    /// Reads the file at a path (the binary passes `std::fs::read_to_string`).
    pub read: &'a dyn Fn(&Path) -> std::io::Result<String>,
    /// The sweep analysis of the stored runs `plan usl --from` fits (path
    /// and class notation of each): `None` when none is a paced population
    /// (think time or an offered rate). The results crate judges it, as it
    /// judges a sweep; it depends on this crate, not the reverse.
    pub paced: &'a dyn Fn(&[StoredClass]) -> Option<Paced>,
}

/// A class of a stored run: the record's path and the class's notation.
pub type StoredClass = (String, String);

/// Stored runs of a paced population, as the sweep analysis sees them.
#[derive(Debug, Clone, PartialEq)]
pub struct Paced {
    /// They saturate something, so the USL may be fitted.
    pub saturated: bool,
    /// The sentence saying what they show.
    pub text: String,
}

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
    pub fn new<T: Serialize>(plan: &str, body: &T, report: Report) -> Result<Self, PlanError> {
        let json = serde_json::to_string_pretty(&Envelope::new(plan, body, &report))
            .map_err(|e| PlanError::Invalid(e.to_string()))?;
        Ok(Output { report, json })
    }
}

/// Settings shared by the subcommands of one invocation.
pub struct Ctx<'a> {
    file: Option<PlanFile>,
    dir: PathBuf,
    pub digits: usize,
    pub(super) env: Env<'a>,
}

impl<'a> Ctx<'a> {
    /// Loads the plan file, when one is given.
    pub fn new(file: Option<&Path>, digits: usize, env: Env<'a>) -> Result<Self, PlanError> {
        let mut ctx = Ctx {
            file: None,
            dir: PathBuf::new(),
            digits,
            env,
        };
        if let Some(path) = file {
            let text = ctx.read_text(path, "file")?;
            ctx.file = Some(PlanFile::parse(&path.display().to_string(), &text)?);
            ctx.dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        }
        Ok(ctx)
    }

    pub fn file(&self) -> Option<&PlanFile> {
        self.file.as_ref()
    }

    /// The flags of `T` overlaid on the plan file's `[section]`: a key the
    /// command line left empty takes the file's value. The file's keys must be
    /// flag names of `T`: its fields' names, in kebab case, as clap and serde
    /// spell them alike.
    pub fn merge<T>(&self, cli: T, section: &str) -> Result<T, PlanError>
    where
        T: Serialize + DeserializeOwned,
    {
        let Some(file) = &self.file else {
            return Ok(cli);
        };
        let not_a_struct = || PlanError::Invalid("plan arguments are not a struct".into());
        let flags: Vec<String> = field_names::<T>().iter().map(|f| f.to_string()).collect();
        let values = file.section(section, &flags)?;
        let mut merged = serde_json::to_value(&cli).map_err(|_| not_a_struct())?;
        let Value::Object(map) = &mut merged else {
            return Err(not_a_struct());
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
            PlanError::Invalid(format!(
                "{}: [{section}]: {e}; write the value as the flag would take it",
                file.path()
            ))
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

    /// Reads a text file named by `--flag`.
    pub fn read_text(&self, path: &Path, flag: &str) -> Result<String, PlanError> {
        (self.env.read)(path).map_err(|e| {
            PlanError::Invalid(format!(
                "--{flag} {}: cannot read it ({e}); check the path",
                path.display()
            ))
        })
    }

    /// Loads one class of a stored run (`--from`, `--side`, `--class`).
    pub fn load_run(
        &self,
        path: &str,
        side: Option<&str>,
        class: Option<&str>,
    ) -> Result<RunClass, PlanError> {
        let text = self.read_text(Path::new(path), "from")?;
        runfile::read(path, &text, parse_side(side)?, class)
    }
}

/// The field names of `T` as serde reads them (renamed, in declaration
/// order, which is the order clap lists the flags in): a deserializer that
/// stops at the struct and keeps the names serde asks it for. The trick is
/// serde_aux's (`serde_introspect`, src/serde_introspection.rs); a
/// serialized value would not do, since serde_json's map sorts its keys.
pub(super) fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    use serde::de::{Error, Visitor};
    struct Introspect<'a>(&'a mut &'static [&'static str]);
    impl<'de> serde::Deserializer<'de> for Introspect<'_> {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(Error::custom("only the names were wanted"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }
    let mut names: &'static [&'static str] = &[];
    let _ = T::deserialize(Introspect(&mut names));
    names
}

/// Parses `--side`.
pub fn parse_side(text: Option<&str>) -> Result<Side, PlanError> {
    match text.unwrap_or("server") {
        "server" => Ok(Side::Server),
        "client" => Ok(Side::Client),
        other => Err(PlanError::bad(
            "side",
            other,
            "unknown side",
            "use server or client",
        )),
    }
}

/// Applies `parse` to an optional flag value.
pub fn opt<T>(
    value: &Option<String>,
    flag: &str,
    parse: impl Fn(&str, &str) -> Result<T, PlanError>,
) -> Result<Option<T>, PlanError> {
    value.as_deref().map(|v| parse(flag, v)).transpose()
}

/// Applies `parse` to a required flag value.
pub fn required<T>(
    value: &Option<String>,
    flag: &str,
    fix: &str,
    parse: impl Fn(&str, &str) -> Result<T, PlanError>,
) -> Result<T, PlanError> {
    opt(value, flag, parse)?.ok_or_else(|| PlanError::missing(flag, fix))
}
