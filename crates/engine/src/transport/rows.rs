//! The table of transport rows: which [`TransportOps`] serves a transport
//! setting. Apart from the trait (`ops`) so that the rows, which implement
//! the trait, and the table, which names the rows, do not import each other.

use stackbench_model::settings::TlsMode;
use stackbench_model::{ClassPriorities, SocketOptions, TlsParams, Transport, Workload};

use super::ops::TransportOps;
use crate::sockopt;

/// The row of `transport` (`tls` is the inline row; see [`row_for`]).
pub fn row(transport: Transport) -> &'static dyn TransportOps {
    match transport {
        Transport::Tcp => &super::tcp::TCP,
        Transport::Unix => &super::unix::UNIX,
        Transport::Mptcp => &super::mptcp::MPTCP,
        Transport::Tls => &super::tls_row::TLS,
        Transport::Smc => &super::smc::SMC,
    }
}

/// The row of a run of `transport` with TLS parameters `tls`: `ktls` for
/// `tls_mode ktls`, else [`row`] (`tls_mode sidecar` keeps the tls row; the
/// sidecar arrangement puts the tcp row under it).
pub fn row_for(transport: Transport, tls: Option<&TlsParams>) -> &'static dyn TransportOps {
    match tls {
        Some(p) if transport == Transport::Tls && p.mode == TlsMode::Ktls => &super::tls_row::KTLS,
        _ => row(transport),
    }
}

/// Checks a run's priority setting before it starts: one level per class of
/// every workload, and a process allowed to set SO_PRIORITY above 6. The
/// error is one line with the fix.
pub fn check_priority(
    priority: Option<&ClassPriorities>,
    workloads: &[Workload],
    transport: Transport,
) -> Result<(), String> {
    let Some(p) = priority else {
        return Ok(());
    };
    for w in workloads {
        p.check_classes(&w.to_string(), w.classes.len())?;
    }
    let level = p.0.iter().copied().max().unwrap_or(0);
    let asked = SocketOptions {
        priority: Some(level),
        ..SocketOptions::default()
    };
    if row(transport)
        .effective_options(&asked)
        .0
        .priority
        .is_none()
    {
        return Ok(()); // not applied (a warning says so)
    }
    sockopt::probe_priority(level)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setting value has its row, serving it under its own name; the
    /// one row without a setting value of its own is `ktls`, chosen by the
    /// TLS mode.
    #[test]
    fn every_transport_has_its_row() {
        for &t in Transport::ALL {
            assert_eq!(row(t).transport(), t);
            assert_eq!(row(t).name(), t.name());
            assert_eq!(row(t).as_row().name(), t.name());
        }
        let mut p = TlsParams::resolve(None, None, None, Default::default(), None, None).unwrap();
        assert_eq!(row_for(Transport::Tls, Some(&p)).name(), "tls");
        p.mode = TlsMode::Ktls;
        assert_eq!(row_for(Transport::Tls, Some(&p)).name(), "ktls");
        assert_eq!(
            row_for(Transport::Tls, Some(&p)).transport(),
            Transport::Tls
        );
        assert_eq!(row_for(Transport::Tcp, Some(&p)).name(), "tcp");
        p.mode = TlsMode::Sidecar;
        assert_eq!(row_for(Transport::Tls, Some(&p)).name(), "tls");
    }

    /// Only the kTLS row reads kernel counters, and only tcp and unix run on
    /// the io_uring backend.
    #[test]
    fn rows_differ_where_their_transports_do() {
        let ktls = TlsParams {
            mode: TlsMode::Ktls,
            ..TlsParams::resolve(None, None, None, Default::default(), None, None).unwrap()
        };
        assert!(row_for(Transport::Tls, Some(&ktls))
            .kernel_counters()
            .is_some());
        let uring: Vec<_> = Transport::ALL.iter().filter(|t| row(**t).uring()).collect();
        assert_eq!(uring, [&Transport::Tcp, &Transport::Unix]);
        assert!(Transport::ALL
            .iter()
            .all(|&t| row(t).nagle() != row(t).paths()));
        let user_space: Vec<_> = Transport::ALL
            .iter()
            .filter(|t| !row(**t).plain())
            .collect();
        assert_eq!(user_space, [&Transport::Tls]);
        assert!(!row_for(Transport::Tls, Some(&ktls)).plain());
    }
}
