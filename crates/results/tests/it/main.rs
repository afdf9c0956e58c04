//! The results crate's integration tests, one test binary: output formats,
//! report and compare, the store, and running studies (parsing study files
//! is tested in the model crate). insta snapshots are in `snapshots/`, named
//! `it__<module>__<name>.snap`.

mod compare;
mod guest;
mod output;
mod report;
mod store;
mod study_runs;
