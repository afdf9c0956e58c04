//! Study files: one declarative TOML description of a comparison (fio job
//! files): a name, a description, the workloads, the run settings shared by all
//! configurations, and named variants holding only what differs between them.
//!
//! Every run setting of the settings table ([`crate::settings`]) is a
//! key, at the top (all variants) or in a `[[variant]]`; `[sweep]` names one or
//! two dimensions to cross (`clients = [1, 2, 4]`, `server_cpus = ["1", "0-1"]`).
//! Parsing is strict; every error is one line naming the file, the line and
//! column, and the allowed keys or values (see [`parse`]). [`Study::plan`]
//! turns a study into the interleaved execution order (repetition-major, then
//! workload, then variant: A B A B …) so drift over time hits every variant
//! alike; `stackbench_results::study::run_study` walks that plan with a
//! caller-supplied runner. The file and its plan live here, beside the
//! settings table whose rows are the file's keys, so that everything that
//! reads a study file (the cli, the runner's Kubernetes renderer, the report)
//! takes it from the bottom layer.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::settings::{RunSettings, SettingError};
use crate::sweep::{Sweep, SweepPoint};
use crate::Workload;

mod parse;
pub use parse::{load_study, parse_study};

/// Label key → value, e.g. `study=best-practices`, `kernel=6.1`: what a run
/// is stored with (the result store's labels).
pub type Labels = BTreeMap<String, String>;

/// Repetitions when a study file gives none: enough for the compare verdict.
pub const DEFAULT_REPETITIONS: u32 = 5;
/// Upper bound on repetitions, so a typo cannot queue a week of runs.
pub const MAX_REPETITIONS: u32 = 1000;

/// Labels every study run is stored with (see [`Study::plan`]); a variant's
/// or `--label`'s label of the same key would be overwritten, so it is refused.
/// `sweep` and `sweep.<dimension>` come from the sweep point.
pub const RESERVED_LABELS: [&str; 5] = ["study", "variant", "repetition", "workload", "sweep"];

/// Why label `key` may not be given by the user, or `None` when it may.
pub fn reserved_label(key: &str) -> Option<String> {
    let key = key.trim();
    if !RESERVED_LABELS.contains(&key) && !key.starts_with("sweep.") {
        return None;
    }
    Some(format!(
        "label '{key}' is reserved: every study run is stored with the labels {} and \
         sweep.<dimension>, set by the study itself: rename the label, e.g. my_{key}",
        RESERVED_LABELS.join(", ")
    ))
}

/// The error a study runner returns (the CLI's `anyhow::Error` converts into
/// it; see `stackbench_results::study::run_study`).
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
    #[error("{file}: variant '{variant}': {message}")]
    Setting {
        file: String,
        variant: String,
        message: String,
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

/// Settings as written in a study file or variant: `(name, text)` in file
/// order, checked when parsed and applied with `RunSettings::set`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SettingTexts(pub Vec<(String, String)>);

impl SettingTexts {
    /// Applies these settings over `settings`.
    pub fn apply(&self, settings: &mut RunSettings) -> Result<(), SettingError> {
        for (name, text) in &self.0 {
            settings.set(name, text)?;
        }
        Ok(())
    }

    /// Adds `over`, each replacing an earlier value of the same key.
    pub fn overlay(&mut self, over: &[(String, String)]) {
        for (k, v) in over {
            self.0.retain(|(name, _)| name != k);
            self.0.push((k.clone(), v.clone()));
        }
    }

    /// The settings given, as `key = value` in study-file spelling.
    pub fn describe(&self) -> Vec<String> {
        self.0.iter().map(|(k, v)| format!("{k} = {v}")).collect()
    }
}

/// One named configuration of a study.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub name: String,
    pub description: String,
    /// Extra labels stored with this variant's runs (e.g. `kernel = "6.1"`).
    pub labels: Labels,
    /// Only the settings this variant overrides.
    pub settings: SettingTexts,
}

/// A parsed study file.
#[derive(Debug, Clone, PartialEq)]
pub struct Study {
    pub name: String,
    pub description: String,
    pub workloads: Vec<Workload>,
    pub repetitions: u32,
    /// Settings shared by every variant.
    pub settings: SettingTexts,
    /// Dimensions crossed for every workload and variant (may be empty).
    pub sweep: Sweep,
    /// Settings from the command line (`study FILE --duration 1s`): over the
    /// study's and every variant's, under the sweep point's.
    pub overrides: SettingTexts,
    /// At least one: a file without `[[variant]]` has one named `default`.
    pub variants: Vec<Variant>,
}

/// One run of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyStep {
    /// Position in the plan, from 0.
    pub index: usize,
    pub total: usize,
    /// From 1.
    pub repetition: u32,
    /// The workload run: the study's, at the sweep point.
    pub workload: Workload,
    /// The workload as the study names it (the `workload` label).
    pub base_workload: Workload,
    pub variant: String,
    /// The sweep point (empty when nothing is swept).
    pub point: SweepPoint,
    /// Defaults, then the study's settings, the variant's, the sweep point's.
    pub settings: RunSettings,
    /// The settings the file gave for this step (study, variant, sweep point).
    pub given: SettingTexts,
    /// Labels to store the run with: study, variant, repetition, workload, and
    /// the variant's own labels.
    pub labels: Labels,
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
        let points = self.sweep.points();
        let total = self.repetitions as usize * self.workloads.len() * points.len() * chosen.len();
        let mut steps = Vec::with_capacity(total);
        for repetition in 1..=self.repetitions {
            for workload in &self.workloads {
                for point in &points {
                    for variant in &chosen {
                        let step = self
                            .step(repetition, workload, point, variant, (steps.len(), total))
                            .map_err(|e| StudyError::Setting {
                                file: file.to_string(),
                                variant: variant.name.clone(),
                                message: format!("{} = {}: {}", e.name, e.value, e.message),
                            })?;
                        steps.push(step);
                    }
                }
            }
        }
        Ok(steps)
    }

    /// One step: the variant's settings over the study's, then the sweep point.
    fn step(
        &self,
        repetition: u32,
        workload: &Workload,
        point: &SweepPoint,
        variant: &Variant,
        (index, total): (usize, usize),
    ) -> Result<StudyStep, SettingError> {
        let mut settings = RunSettings::default();
        self.settings.apply(&mut settings)?;
        variant.settings.apply(&mut settings)?;
        self.overrides.apply(&mut settings)?;
        let effective = point.apply(workload, &mut settings)?;
        settings.check_combination()?;
        let mut given = self.settings.clone();
        given.overlay(&variant.settings.0);
        given.overlay(&self.overrides.0);
        given.overlay(&point.values);
        let mut labels = variant.labels.clone();
        labels.insert("study".into(), self.name.clone());
        labels.insert("variant".into(), variant.name.clone());
        labels.insert("repetition".into(), repetition.to_string());
        labels.insert("workload".into(), workload.to_string());
        labels.extend(point.labels());
        Ok(StudyStep {
            index,
            total,
            repetition,
            workload: effective,
            base_workload: workload.clone(),
            variant: variant.name.clone(),
            point: point.clone(),
            settings,
            given,
            labels,
        })
    }
}

impl StudyStep {
    /// The line that names the step, in a `--dry-run` listing and as a study
    /// runs: `[3/8] repetition 2 RR1(1B/1B) variant a (nodelay = true)`.
    pub fn line(&self) -> String {
        let settings = self.given.describe();
        format!(
            "[{}/{}] repetition {} {} variant {}{}",
            self.index + 1,
            self.total,
            self.repetition,
            self.workload,
            self.variant,
            if settings.is_empty() {
                String::new()
            } else {
                format!(" ({})", settings.join(", "))
            }
        )
    }
}

impl Study {
    /// The first `listed` steps of the plan of `total` steps, each step
    /// numbered out of `total`; the plan is built only for the repetitions
    /// they span (a 256,000-step plan listed by its head builds its head).
    pub fn head(
        &self,
        only: &[String],
        file: &str,
        listed: usize,
        total: usize,
    ) -> Result<Vec<StudyStep>, StudyError> {
        let per_repetition = (total / self.repetitions.max(1) as usize).max(1);
        let head = Study {
            repetitions: listed.div_ceil(per_repetition).max(1) as u32,
            ..self.clone()
        };
        let mut steps = head.plan(only, file)?;
        steps.truncate(listed);
        for step in &mut steps {
            step.total = total;
        }
        Ok(steps)
    }

    /// `--repetitions N` over the file's: 1 to [`MAX_REPETITIONS`].
    pub fn set_repetitions(&mut self, n: u32) -> Result<(), String> {
        if !(1..=MAX_REPETITIONS).contains(&n) {
            return Err(format!(
                "--repetitions {n}: out of range: use 1 to {MAX_REPETITIONS}"
            ));
        }
        self.repetitions = n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variant_overrides_the_study() {
        let study = parse_study(
            "name = \"s\"\nworkloads = [\"RR1(1B/1B)\"]\nduration = \"10s\"\nnodelay = false\n\
             [[variant]]\nname = \"a\"\nnodelay = true\n",
            "s.toml",
        )
        .unwrap();
        let plan = study.plan(&[], "s.toml").unwrap();
        let s = &plan[0].settings;
        assert_eq!(s.nodelay, Some(true));
        assert_eq!(s.text_of("duration").unwrap(), "10s");
        assert_eq!(
            plan[0].given.describe(),
            vec!["duration = 10s", "nodelay = true"]
        );
    }

    /// Two workloads × two variants × three repetitions: the head is built
    /// from the repetitions it spans and numbered out of the whole plan.
    #[test]
    fn the_head_of_a_long_plan_is_its_first_steps() {
        let mut study = parse_study(
            "name = \"s\"\nworkloads = [\"RR1(1B/1B)\", \"RR2(1B/1B)\"]\n\
             [[variant]]\nname = \"a\"\nnodelay = true\n[[variant]]\nname = \"b\"\n",
            "s.toml",
        )
        .unwrap();
        study.set_repetitions(3).unwrap();
        let full = study.plan(&[], "s.toml").unwrap();
        let head = study.head(&[], "s.toml", 5, full.len()).unwrap();
        assert_eq!(head, full[..5]);
        assert_eq!(
            head[4].line(),
            "[5/12] repetition 2 RR1(1B/1B) variant a (nodelay = true)"
        );
        assert_eq!(head[1].line(), "[2/12] repetition 1 RR1(1B/1B) variant b");
        assert_eq!(
            study.set_repetitions(0).unwrap_err(),
            "--repetitions 0: out of range: use 1 to 1000"
        );
        assert!(study.set_repetitions(MAX_REPETITIONS + 1).is_err());
        assert_eq!(study.repetitions, 3);
    }
}
