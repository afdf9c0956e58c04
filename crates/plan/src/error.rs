//! The planner's one error type. Every message names the input (a flag, which is
//! also the plan-file key, or a file) and says how to fix it, so the binary can
//! print it as one line and exit with status 2.

use thiserror::Error;

/// An input the planner cannot use.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PlanError {
    /// A value that does not parse or is out of range.
    #[error("--{flag} '{text}': {problem}; {fix}")]
    BadValue {
        flag: String,
        text: String,
        problem: String,
        fix: String,
    },
    /// A required input is absent.
    #[error("--{flag} is required: {fix}")]
    Missing { flag: String, fix: String },
    /// Inputs that cannot be used together, or a model that has no solution.
    #[error("{0}")]
    Invalid(String),
    /// A plan file, ratings file, CSV or result file that cannot be used.
    #[error("{path}: {problem}")]
    File { path: String, problem: String },
}

impl PlanError {
    /// A value of `--flag` that is wrong, with the fix.
    pub fn bad(flag: &str, text: &str, problem: impl Into<String>, fix: impl Into<String>) -> Self {
        PlanError::BadValue {
            flag: flag.to_string(),
            text: text.to_string(),
            problem: problem.into(),
            fix: fix.into(),
        }
    }

    /// `--flag` is required.
    pub fn missing(flag: &str, fix: impl Into<String>) -> Self {
        PlanError::Missing {
            flag: flag.to_string(),
            fix: fix.into(),
        }
    }

    /// A file that cannot be used.
    pub fn file(path: &str, problem: impl Into<String>) -> Self {
        PlanError::File {
            path: path.to_string(),
            problem: problem.into(),
        }
    }
}
