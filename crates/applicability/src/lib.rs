//! stackbench-applicability: `stackbench applicability`, the Linux analogue
//! of z/OS's SMC Applicability Tool (SMCAT). It watches the TCP connections
//! of this host (or of a lab host) for a window without touching them,
//! reports per destination subnet which of them could take a faster path
//! and how much of the traffic is well-suited, and projects the CPU a
//! faster path would save by running the observed mix over TCP and AF_UNIX.
//!
//! Layers, bottom up: [`sample`] (one sight of a socket), [`census`] (the
//! kernel's sock_diag dump and close events), [`sizes`] and [`track`]
//! (samples folded into connections), [`classify`] (paths, thresholds,
//! figures per subnet), [`observe`] (the window), [`mix`] (the observed
//! mix as workloads), [`summary`] (the stored form) and [`project`] (the
//! runs over TCP and unix).
//! Everything but `census`, `observe` and `project` is pure.

pub mod census;
pub mod classify;
pub mod mix;
pub mod observe;
pub mod project;
pub mod sample;
pub mod sizes;
pub mod summary;
pub mod track;
