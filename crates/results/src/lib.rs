//! The results layer: the result store, environment capture, study files,
//! statistical comparison of stored runs, and the performance summary report.
//! Everything here reads run records as data; nothing opens a socket.

pub mod compare;
pub mod compare_output;
pub mod env;
pub mod figure;
pub mod metric;
pub mod store;
pub mod study;
