//! stackbench-applicability: `stackbench applicability`, the Linux analogue
//! of z/OS's SMC Applicability Tool (SMCAT). It watches the TCP connections
//! of this host (or of a lab host) for a window without touching them,
//! reports per destination subnet which of them could take a faster path
//! and how much of the traffic is well-suited, and projects the CPU a
//! faster path would save by running the observed mix over TCP and AF_UNIX.
//!
//! With `--census` it also takes the crypto census of the same connections
//! (the analogue of z/OS zERT): each one's protection — kTLS, user-space
//! TLS as its handshake shows on the wire, IPsec, clear.
//!
//! Layers, bottom up: [`sample`] (one sight of a socket), [`sockets`] (the
//! kernel's sock_diag dump and close events), [`sizes`] and [`track`]
//! (samples folded into connections), [`classify`] (paths, thresholds,
//! figures per subnet), [`protection`] (the crypto census), [`observe`]
//! (the window), [`mix`] (the observed mix as workloads), [`summary`] (the
//! stored form), [`project`] (the runs over TCP and unix) and [`command`]
//! (the command's steps from checked input to the stored record).
//! Everything but `sockets`, `protection::capture`, `observe`, `project`
//! and `command` is pure.

pub mod classify;
pub mod command;
pub mod mix;
pub mod observe;
pub mod project;
pub mod protection;
pub mod sample;
pub mod sizes;
pub mod sockets;
pub mod summary;
pub mod track;
