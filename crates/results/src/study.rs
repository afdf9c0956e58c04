//! Study files: one declarative TOML description of a comparison (fio job
//! files): a name, a description, the workloads, the run settings shared by all
//! configurations, and named variants holding only what differs between them.
//!
//! Parsing is strict (`deny_unknown_fields`); every error is one line naming the
//! file, the line and column, and the allowed keys or values. [`Study::plan`]
//! turns a study into the interleaved execution order (repetition-major, then
//! workload, then variant: A B A B …) so drift over time hits every variant
//! alike, and [`run_study`] walks that plan with a caller-supplied runner — the
//! engine lives in another crate, so this one never opens a socket.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};
use stackbench_metrics::RunRecord;
use stackbench_model::size::parse_size;
use stackbench_model::{CrrClose, SocketOptions, Workload};
use thiserror::Error;

use crate::store::Labels;
pub use crate::values::{format_cpu_list, parse_cpu_list, parse_duration_s};

/// Repetitions when a study file gives none: enough for the compare verdict.
pub const DEFAULT_REPETITIONS: u32 = 5;
/// Upper bound on repetitions, so a typo cannot queue a week of runs.
pub const MAX_REPETITIONS: u32 = 1000;

/// The error a study runner returns (the CLI's `anyhow::Error` converts into it).
pub type RunnerError = Box<dyn std::error::Error + Send + Sync>;

/// Why a study file could not be used or a study stopped.
#[derive(Debug, Error)]
pub enum StudyError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    Parse {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{file}: unknown variant '{name}' in --variant: the file defines {allowed}")]
    UnknownVariant {
        file: String,
        name: String,
        allowed: String,
    },
    #[error("study step {step}/{total} ({workload}, variant {variant}) failed: {source}")]
    StepFailed {
        step: usize,
        total: usize,
        workload: String,
        variant: String,
        source: RunnerError,
    },
    #[error("study stopped at step {step}/{total} ({workload}, variant {variant}): the run was incomplete: {reason}")]
    Incomplete {
        step: usize,
        total: usize,
        workload: String,
        variant: String,
        reason: String,
    },
}

/// Run settings a study or variant may set; `None` = not given (the run's
/// default, or the study's value for a variant). Each is also a `run` flag.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct StudySettings {
    pub duration_s: Option<f64>,
    pub warmup_s: Option<f64>,
    pub transactions: Option<u64>,
    pub threads: Option<u32>,
    pub server_threads: Option<u32>,
    pub client_cpus: Option<Vec<usize>>,
    pub server_cpus: Option<Vec<usize>>,
    pub target: Option<String>,
    pub spin: Option<bool>,
    pub nodelay: Option<bool>,
    pub waitall: Option<bool>,
    pub quickack: Option<bool>,
    pub sndbuf_bytes: Option<u32>,
    pub rcvbuf_bytes: Option<u32>,
    pub crr_close: Option<CrrClose>,
}

impl StudySettings {
    /// `self` with every value `over` gives replacing it.
    pub fn overlay(&self, over: &StudySettings) -> StudySettings {
        macro_rules! pick {
            ($($f:ident),*) => { StudySettings { $($f: over.$f.clone().or_else(|| self.$f.clone()),)* } };
        }
        pick!(
            duration_s,
            warmup_s,
            transactions,
            threads,
            server_threads,
            client_cpus,
            server_cpus,
            target,
            spin,
            nodelay,
            waitall,
            quickack,
            sndbuf_bytes,
            rcvbuf_bytes,
            crr_close
        )
    }

    /// The socket options these settings give (unset ones at their defaults).
    pub fn socket_options(&self) -> SocketOptions {
        SocketOptions {
            nodelay: self.nodelay.unwrap_or(false),
            waitall: self.waitall.unwrap_or(false),
            quickack: self.quickack.unwrap_or(false),
            sndbuf_bytes: self.sndbuf_bytes,
            rcvbuf_bytes: self.rcvbuf_bytes,
            crr_close: self.crr_close.unwrap_or_default(),
        }
    }

    /// The settings given, as `key = value` in study-file spelling.
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut add = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                out.push(format!("{k} = {v}"));
            }
        };
        let secs = |v: Option<f64>| v.map(|s| format!("{s}s"));
        let cpus = |v: &Option<Vec<usize>>| v.as_ref().map(|c| format_cpu_list(c));
        let size = |v: Option<u32>| v.map(|b| stackbench_model::size::format_size(u64::from(b)));
        add("duration", secs(self.duration_s));
        add("warmup", secs(self.warmup_s));
        add("transactions", self.transactions.map(|v| v.to_string()));
        add("threads", self.threads.map(|v| v.to_string()));
        add("server_threads", self.server_threads.map(|v| v.to_string()));
        add("client_cpus", cpus(&self.client_cpus));
        add("server_cpus", cpus(&self.server_cpus));
        add("target", self.target.clone());
        add("spin", self.spin.map(|v| v.to_string()));
        add("nodelay", self.nodelay.map(|v| v.to_string()));
        add("waitall", self.waitall.map(|v| v.to_string()));
        add("quickack", self.quickack.map(|v| v.to_string()));
        add("sndbuf", size(self.sndbuf_bytes));
        add("rcvbuf", size(self.rcvbuf_bytes));
        add("crr_close", self.crr_close.map(|c| c.name().to_string()));
        out
    }
}

/// One named configuration of a study.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    pub name: String,
    pub description: String,
    /// Extra labels stored with this variant's runs (e.g. `kernel = "6.1"`).
    pub labels: Labels,
    /// Only the settings this variant overrides.
    pub settings: StudySettings,
}

/// A parsed study file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Study {
    pub name: String,
    pub description: String,
    pub workloads: Vec<Workload>,
    pub repetitions: u32,
    /// Settings shared by every variant.
    pub settings: StudySettings,
    /// At least one: a file without `[[variant]]` has one named `default`.
    pub variants: Vec<Variant>,
}

/// One run of the plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyStep {
    /// Position in the plan, from 0.
    pub index: usize,
    pub total: usize,
    /// From 1.
    pub repetition: u32,
    pub workload: Workload,
    pub variant: String,
    /// The study's settings overlaid with the variant's.
    pub settings: StudySettings,
    /// Labels to store the run with: study, variant, repetition, workload, and
    /// the variant's own labels.
    pub labels: Labels,
}

// Wrappers whose Deserialize parses and validates a value, so that serde's error
// carries the value's position in the file.

#[derive(Debug, Clone, Copy)]
struct Seconds(f64);
#[derive(Debug, Clone, Copy)]
struct Bytes(u32);
#[derive(Debug, Clone)]
struct CpuList(Vec<usize>);
#[derive(Debug, Clone, Copy)]
struct Repetitions(u32);
#[derive(Debug, Clone)]
struct Workloads(Vec<toml::Spanned<String>>);

/// A string or an integer, as TOML gives it.
#[derive(Deserialize)]
#[serde(untagged)]
enum TextOrInt {
    Text(String),
    Int(i64),
}

fn custom<E: serde::de::Error>(msg: impl fmt::Display) -> E {
    E::custom(msg)
}

impl<'de> Deserialize<'de> for Seconds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bad = |v: &str| {
            custom(format!(
                "bad duration '{v}': use a number with ms, s, m or h, e.g. \"10s\" or \"500ms\""
            ))
        };
        match TextOrInt::deserialize(d)? {
            TextOrInt::Int(n) if n >= 0 => Ok(Seconds(n as f64)),
            TextOrInt::Int(n) => Err(bad(&n.to_string())),
            TextOrInt::Text(t) => parse_duration_s(&t).map(Seconds).ok_or_else(|| bad(&t)),
        }
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let bad = |v: &str| {
            custom(format!("bad buffer size '{v}': use digits then B, kB, MB or GB (at most 2GB), e.g. \"256kB\""))
        };
        let bytes = match TextOrInt::deserialize(d)? {
            TextOrInt::Int(n) => u64::try_from(n)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(&n.to_string()))?,
            TextOrInt::Text(t) => parse_size(t.trim(), &t).map_err(|_| bad(&t))?,
        };
        u32::try_from(bytes)
            .map(Bytes)
            .map_err(|_| bad(&bytes.to_string()))
    }
}

impl<'de> Deserialize<'de> for CpuList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        parse_cpu_list(&text).map(CpuList).ok_or_else(|| {
            custom(format!(
                "bad CPU list '{text}': use CPU numbers and ranges, e.g. \"0-3,8\""
            ))
        })
    }
}

impl<'de> Deserialize<'de> for Repetitions {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        u32::try_from(n)
            .ok()
            .filter(|n| (1..=MAX_REPETITIONS).contains(n))
            .map(Repetitions)
            .ok_or_else(|| {
                custom(format!(
                    "bad repetitions {n}: use 1 to {MAX_REPETITIONS} (5 or more for a verdict)"
                ))
            })
    }
}

impl<'de> Deserialize<'de> for Workloads {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Kept as spanned text and parsed in `parse_study`, because the TOML
        // reader reports element errors at the array, not at the element.
        let items = Vec::<toml::Spanned<String>>::deserialize(d)?;
        if items.is_empty() {
            return Err(custom(
                "empty workloads: give at least one, e.g. [\"RR10(4kB/4kB)\"]",
            ));
        }
        Ok(Workloads(items))
    }
}

/// Declares a raw (file-shaped) struct holding its own keys plus every settings
/// key, so top level and variants accept the same settings without `flatten`
/// (which would defeat `deny_unknown_fields`).
macro_rules! raw_with_settings {
    ($name:ident { $($field:ident : $ty:ty,)* }) => {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        struct $name {
            $($field: $ty,)*
            duration: Option<Seconds>,
            warmup: Option<Seconds>,
            transactions: Option<u64>,
            threads: Option<u32>,
            server_threads: Option<u32>,
            client_cpus: Option<CpuList>,
            server_cpus: Option<CpuList>,
            target: Option<String>,
            spin: Option<bool>,
            nodelay: Option<bool>,
            waitall: Option<bool>,
            quickack: Option<bool>,
            sndbuf: Option<Bytes>,
            rcvbuf: Option<Bytes>,
            crr_close: Option<CrrClose>,
        }

        impl $name {
            fn settings(&self) -> StudySettings {
                StudySettings {
                    duration_s: self.duration.map(|s| s.0),
                    warmup_s: self.warmup.map(|s| s.0),
                    transactions: self.transactions,
                    threads: self.threads,
                    server_threads: self.server_threads,
                    client_cpus: self.client_cpus.clone().map(|c| c.0),
                    server_cpus: self.server_cpus.clone().map(|c| c.0),
                    target: self.target.clone(),
                    spin: self.spin,
                    nodelay: self.nodelay,
                    waitall: self.waitall,
                    quickack: self.quickack,
                    sndbuf_bytes: self.sndbuf.map(|b| b.0),
                    rcvbuf_bytes: self.rcvbuf.map(|b| b.0),
                    crr_close: self.crr_close,
                }
            }
        }
    };
}

raw_with_settings!(RawStudy {
    name: String,
    description: Option<String>,
    workloads: Workloads,
    repetitions: Option<Repetitions>,
    variant: Option<Vec<RawVariant>>,
});

raw_with_settings!(RawVariant {
    name: toml::Spanned<String>,
    description: Option<String>,
    labels: Option<Labels>,
});

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

/// Parses study-file text; `file` names it in errors.
pub fn parse_study(text: &str, file: &str) -> Result<Study, StudyError> {
    let at = |offset: usize, message: String| {
        let (line, column) = line_column(text, offset);
        StudyError::Parse {
            file: file.to_string(),
            line,
            column,
            message,
        }
    };
    let raw: RawStudy = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        at(offset, e.message().trim().replace('\n', " "))
    })?;
    let mut workloads = Vec::new();
    for w in &raw.workloads.0 {
        let parsed = w
            .get_ref()
            .parse::<Workload>()
            .map_err(|e| at(w.span().start, e.to_string()))?;
        workloads.push(parsed);
    }
    let mut variants: Vec<Variant> = Vec::new();
    for v in raw.variant.iter().flatten() {
        let name = v.name.get_ref().trim().to_string();
        if name.is_empty() || variants.iter().any(|x| x.name == name) {
            let why = if name.is_empty() {
                "empty variant name"
            } else {
                "duplicate variant name"
            };
            return Err(at(
                v.name.span().start,
                format!("{why} '{name}': give each [[variant]] a unique name"),
            ));
        }
        variants.push(Variant {
            name,
            description: v.description.clone().unwrap_or_default(),
            labels: v.labels.clone().unwrap_or_default(),
            settings: v.settings(),
        });
    }
    if variants.is_empty() {
        variants.push(Variant {
            name: "default".to_string(),
            description: String::new(),
            labels: Labels::new(),
            settings: StudySettings::default(),
        });
    }
    Ok(Study {
        name: raw.name.clone(),
        description: raw.description.clone().unwrap_or_default(),
        workloads,
        repetitions: raw.repetitions.map_or(DEFAULT_REPETITIONS, |r| r.0),
        settings: raw.settings(),
        variants,
    })
}

/// Reads and parses a study file.
pub fn load_study(path: &Path) -> Result<Study, StudyError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| StudyError::Read {
        file: file.clone(),
        source,
    })?;
    parse_study(&text, &file)
}

impl Study {
    /// The interleaved plan: for each repetition, for each workload, every
    /// selected variant in file order (A B A B …). `only` restricts the variants
    /// (e.g. one side of a release-to-release study run on its own machine);
    /// empty means all. `file` names the study in errors.
    pub fn plan(&self, only: &[String], file: &str) -> Result<Vec<StudyStep>, StudyError> {
        for name in only {
            if !self.variants.iter().any(|v| &v.name == name) {
                return Err(StudyError::UnknownVariant {
                    file: file.to_string(),
                    name: name.clone(),
                    allowed: self
                        .variants
                        .iter()
                        .map(|v| v.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let chosen: Vec<&Variant> = self
            .variants
            .iter()
            .filter(|v| only.is_empty() || only.contains(&v.name))
            .collect();
        let total = self.repetitions as usize * self.workloads.len() * chosen.len();
        let mut steps = Vec::with_capacity(total);
        for repetition in 1..=self.repetitions {
            for workload in &self.workloads {
                for variant in &chosen {
                    let mut labels = variant.labels.clone();
                    labels.insert("study".into(), self.name.clone());
                    labels.insert("variant".into(), variant.name.clone());
                    labels.insert("repetition".into(), repetition.to_string());
                    labels.insert("workload".into(), workload.to_string());
                    steps.push(StudyStep {
                        index: steps.len(),
                        total,
                        repetition,
                        workload: workload.clone(),
                        variant: variant.name.clone(),
                        settings: self.settings.overlay(&variant.settings),
                        labels,
                    });
                }
            }
        }
        Ok(steps)
    }
}

/// Runs `steps` in order: `runner` measures one step, `sink` stores it. Stops at
/// the first failure or incomplete run (after handing an incomplete record to
/// the sink, so what was measured is kept); every step before stays stored.
/// Returns the number of steps completed.
pub fn run_study(
    steps: &[StudyStep],
    runner: &mut dyn FnMut(&StudyStep) -> Result<RunRecord, RunnerError>,
    sink: &mut dyn FnMut(&StudyStep, &RunRecord) -> Result<(), RunnerError>,
) -> Result<usize, StudyError> {
    let failed = |step: &StudyStep, source: RunnerError| StudyError::StepFailed {
        step: step.index + 1,
        total: step.total,
        workload: step.workload.to_string(),
        variant: step.variant.clone(),
        source,
    };
    for step in steps {
        let record = runner(step).map_err(|e| failed(step, e))?;
        sink(step, &record).map_err(|e| failed(step, e))?;
        if !record.complete {
            return Err(StudyError::Incomplete {
                step: step.index + 1,
                total: step.total,
                workload: step.workload.to_string(),
                variant: step.variant.clone(),
                reason: record
                    .incomplete_reason
                    .clone()
                    .unwrap_or_else(|| "no reason given".into()),
            });
        }
    }
    Ok(steps.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_from_one() {
        assert_eq!(line_column("ab\ncd", 0), (1, 1));
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
    }

    #[test]
    fn overlay_prefers_the_variant() {
        let base = StudySettings {
            nodelay: Some(false),
            duration_s: Some(10.0),
            ..Default::default()
        };
        let over = StudySettings {
            nodelay: Some(true),
            ..Default::default()
        };
        let s = base.overlay(&over);
        assert_eq!((s.nodelay, s.duration_s), (Some(true), Some(10.0)));
        assert!(s.socket_options().nodelay);
        assert_eq!(s.describe(), vec!["duration = 10s", "nodelay = true"]);
    }
}
