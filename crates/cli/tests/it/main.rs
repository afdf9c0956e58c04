//! The CLI's integration tests, one test binary: each module drives the
//! `stackbench` binary for one area; `common` holds the shared helpers.

mod agents;
mod amqp;
mod applicability;
mod bench_scripts;
mod common;
mod compare_cli;
mod completions;
mod docs;
mod guest;
mod guest_tier;
mod http1;
mod k8s;
mod lab;
mod lab_agents;
mod lab_distributor;
mod lab_fastpath;
mod lab_napi;
mod lab_policy;
mod lab_run;
mod lab_steering;
mod lab_vmac;
mod mix_cpu;
mod plan;
mod plan_errors;
mod population;
mod record_schema;
mod results_cli;
mod run;
mod sidecar;
mod spin;
mod stalls;
mod sweep;
mod tls_examples;
mod tn3270;
mod transport;
