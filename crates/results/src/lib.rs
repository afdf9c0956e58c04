//! The results layer: output formats (human table, JSON, CSV), and later the
//! store, comparisons and reports.

pub mod output;
