//! Where a lab-file error points: the file and its text (for line and
//! column), and the byte offsets of the entries that the checks across
//! entries (the `check` module) report against. Shared by the parser and
//! those checks, which the parser runs last.

use crate::error::LabError;

/// Where errors are reported: the file and its text (for line and column).
pub(crate) struct Source<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

impl Source<'_> {
    /// An error at byte `offset` of the file.
    pub fn at(&self, offset: usize, message: impl Into<String>) -> LabError {
        let before = &self.text[..offset.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
        LabError::Parse {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }
}

/// Byte offsets of the entries a cross-entry check may need to point at.
#[derive(Debug, Default)]
pub(crate) struct Spans {
    pub hosts: Vec<usize>,
    pub routers: Vec<usize>,
    pub links: Vec<usize>,
    pub distributors: Vec<usize>,
}
