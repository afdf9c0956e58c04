//! stackbench-runner: executes measurements. [`Runner::execute`] takes a
//! [`ResolvedRun`] ([`resolve()`]: window, placement, threads, agents, TLS
//! parameters, pacing, repetitions, the lab it crosses or the guest it runs
//! in, all decided) and returns the
//! [`RunRecord`](stackbench_record::RunRecord) for host, lab and guest
//! placement alike; what the run reports while it runs goes to an injected
//! [`Observer`]. Sweeps ([`sweep`]), repetitions ([`repeat`], averaged by
//! [`repeat_mean`]), the max-rate search ([`find_rate`]) and study steps
//! ([`Runner::study_step`], [`study`], [`study_estimate`]) are built on it. The binary
//! keeps the command line, printing and exit statuses.
//!
//! Modules depend on each other in one direction (a test checks it):
//! `error`, `observe`, `quality`, `repeat_mean`, `agents::merge` at the bottom; `lab_run`,
//! `spawn`, `repeat`, `resolve` above them; `guest_step` (the host's side of a
//! step on another kernel) on `resolve`; `session` (the [`Runner`]) on all of
//! those; `guest_side`, `sweep`, `find_rate`, `study` and `study_estimate` on top.
//! [`agents`] (a run split over agent processes: the wire, the agent, the
//! controller, the merge and the launchers, `slurm` among them) sits below
//! `session`; `k8s` (a study's Kubernetes objects) sits on `resolve`;
//! `metrics_listen` (`--metrics-listen`'s server, an observer around the
//! caller's) on `observe` and `error`.

pub mod agents;
mod cpus;
pub mod error;
pub mod find_rate;
pub mod guest_pair;
pub mod guest_side;
pub mod guest_step;
pub mod k8s;
pub mod lab_run;
pub mod metrics_listen;
pub mod observe;
pub mod quality;
pub mod repeat;
pub mod repeat_mean;
pub mod resolve;
pub mod session;
mod smc_r;
pub mod spawn;
pub mod study;
pub mod study_estimate;
pub mod sweep;

pub use error::RunError;
pub use observe::Observer;
pub use resolve::{resolve, ResolvedRun};
pub use session::{environment_of, Runner};
