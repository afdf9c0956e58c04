//! The results layer: output formats (table, JSON, CSV), the result store, environment capture, running studies,
//! statistical comparison of stored runs, sweeps (grouping, USL fit, figures), and the performance summary report.
//! Everything here reads run records as data; nothing opens a socket.

pub mod applicability_table;
pub mod compare;
pub mod complete;
pub mod doc;
pub mod env;
pub mod export;
pub mod figure;
pub mod figure_marks;
pub mod fixtures;
pub mod metric;
pub mod observe;
pub mod output;
pub mod quality;
pub mod record_file;
pub mod release_table;
pub mod report;
pub mod run_table;
pub mod store;
pub mod study;
pub mod sweep;
pub mod verdict_table;
