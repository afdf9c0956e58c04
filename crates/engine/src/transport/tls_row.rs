//! The `tls` and `ktls` rows of the transport table: TCP listeners and
//! dialers whose connections are OpenSSL sessions ([`super::tls`]), the
//! `ktls` row's record layer handed to the kernel. Apart from the session
//! code so that the data stream, which holds a session, does not import the
//! rows that open it.

use std::net::SocketAddr;

use stackbench_model::{TlsParams, Transport};
use stackbench_record::KtlsCounters;

use super::ktls;
use super::listen::inet_listeners;
use super::ops::{dialer_for, ListenRequest, Listening, TransportOps};
use super::tls::{client_context, server_context};
use super::{Dialer, Endpoint};

/// The `tls` row (`tls_mode inline`): TCP sockets whose connections are
/// OpenSSL sessions on both sides, from the run's TLS parameters.
#[derive(Debug)]
pub struct Tls;

pub static TLS: Tls = Tls;

impl TransportOps for Tls {
    fn transport(&self) -> Transport {
        Transport::Tls
    }

    fn plain(&self) -> bool {
        false
    }

    fn listen(&self, req: &ListenRequest<'_>) -> Result<Listening, String> {
        let p = req
            .tls
            .ok_or("transport tls: the start request has no TLS parameters")?;
        inet_listeners(self.as_row(), req, Some(&server_context(p)?))
    }

    fn dial(
        &self,
        endpoints: &[Endpoint],
        sources: u32,
        tls: Option<&TlsParams>,
    ) -> Result<Dialer, String> {
        let p = tls.ok_or("transport tls: the run has no TLS parameters")?;
        let ctx = client_context(p)?;
        Ok(dialer_for(self.as_row(), endpoints, sources)?
            .with_tls(ctx, p.resume_ratio)
            .with_server_name(p.server_name.as_deref()))
    }

    fn as_row(&self) -> &'static dyn TransportOps {
        &TLS
    }
}

/// The `ktls` row: the tls row's handshake and listeners, with the record
/// layer handed to the kernel (see [`super::ktls`]); the kernel's TLS
/// counters are its own.
#[derive(Debug)]
pub struct Ktls;

pub static KTLS: Ktls = Ktls;

impl TransportOps for Ktls {
    fn transport(&self) -> Transport {
        Transport::Tls
    }

    fn plain(&self) -> bool {
        false
    }

    fn name(&self) -> &'static str {
        "ktls"
    }

    fn check_usable(&self, _target: SocketAddr) -> Result<(), String> {
        ktls::ktls_available()
    }

    fn listen(&self, req: &ListenRequest<'_>) -> Result<Listening, String> {
        TLS.listen(req)
    }

    fn dial(
        &self,
        endpoints: &[Endpoint],
        sources: u32,
        tls: Option<&TlsParams>,
    ) -> Result<Dialer, String> {
        TLS.dial(endpoints, sources, tls)
    }

    fn kernel_counters(&self) -> Option<KtlsCounters> {
        Some(ktls::tls_stat().unwrap_or_default())
    }

    fn as_row(&self) -> &'static dyn TransportOps {
        &KTLS
    }
}
