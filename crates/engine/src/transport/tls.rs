//! The `tls` transport: OpenSSL (the `openssl` crate, vendored build) inside
//! driver and responder, on the same non-blocking sockets and mio loops as
//! clear text. A TLS stream does its handshake inside the first `send` or
//! `recv` (WANT_READ/WANT_WRITE become `WouldBlock`, and the state machines
//! retry on the next readiness edge of either kind, which they already do).
//!
//! Edge-triggered epoll needs one rule the state machines rely on: a short
//! `send`/`recv` means the socket is drained or full. OpenSSL moves one
//! record per call, so [`TlsConn::send`] and [`TlsConn::recv`] loop until the
//! buffer is done or the socket says EAGAIN.
//!
//! `tls_mode ktls` uses the same handshake, then hands the record layer to
//! the kernel ([`super::ktls`]): from then on `send`/`recv` are plain system
//! calls on the socket and OpenSSL is out of the data path.
//!
//! Against its own responder the driver verifies no certificate (the
//! responder makes a self-signed one once per process unless given PEM
//! files). Against a foreign server (`https://HOST`, [`TlsParams::server_name`])
//! it sends the host as SNI and verifies the server's certificate chain
//! against the system's roots or `--ca`, and its name against the host,
//! unless `--insecure`; [`probe`] checks this once before a run starts.
//! ALPN is offered where the run's protocol names one (`http/1.1`), and
//! the responder selects it.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::ssl::{
    ErrorCode, ShutdownState, SslContext, SslContextBuilder, SslMethod, SslMode, SslOptions,
    SslSession, SslStream, SslVerifyMode, SslVersion,
};
use openssl::x509::{X509NameBuilder, X509};
use stackbench_model::settings::{CertType, CipherSuite, TlsVersion};
use stackbench_model::TlsParams;

use super::ktls;
pub use super::ktls::ktls_available;
use super::tls_acct::{self, Rekey};
use crate::sockopt;

/// The socket under OpenSSL: plain send/recv on the fd.
///
/// With read-ahead on, OpenSSL asks for a whole buffer (~16 KiB) per read
/// and gets every record the socket holds in one `recv`. A read that comes
/// back short means the socket was drained at that instant, so the next read
/// returns `WouldBlock` without a system call (`drained`), as the clear-text
/// streams treat a short read: edge-triggered epoll reports any byte that
/// arrives later as a new edge. [`TlsConn::send`] and [`TlsConn::recv`]
/// clear the flag when they start. Without this each record cost two reads
/// (header, body) and each drain a third that said EAGAIN.
#[derive(Debug)]
pub(crate) struct FdIo {
    fd: OwnedFd,
    drained: bool,
}

impl Read for FdIo {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.drained {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = sockopt::recv(self.fd.as_raw_fd(), buf, false)?;
        self.drained = n < buf.len();
        Ok(n)
    }
}

impl Write for FdIo {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sockopt::send(self.fd.as_raw_fd(), buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A finished handshake, as the driver records it once per connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// From the connection's start (connect or accept) to the handshake's end.
    pub ns: u64,
    pub resumed: bool,
    /// "1.2" or "1.3" (or OpenSSL's name of another version).
    pub version: &'static str,
    /// IANA code and name of the negotiated suite.
    pub cipher: u16,
    pub cipher_name: &'static str,
    /// Thread CPU time of the calls that advanced the handshake.
    pub cpu_ns: u64,
    /// The record layer went to the kernel (`tls_mode ktls`).
    pub ktls: bool,
    /// The ALPN protocol the server selected (`None`: none offered or none
    /// selected).
    pub alpn: Option<&'static str>,
}

/// The protocols ALPN may settle on, by name (a `Handshake` is `Copy`: the
/// negotiated name is one of these, or "other").
const ALPN_NAMES: &[&str] = &["http/1.1", "h2"];

fn alpn_name(selected: &[u8]) -> &'static str {
    ALPN_NAMES
        .iter()
        .find(|n| n.as_bytes() == selected)
        .copied()
        .unwrap_or("other")
}

/// The first of `ours` (wire form) that the client `offered`.
fn select_alpn<'a>(ours: &[u8], offered: &'a [u8]) -> Result<&'a [u8], openssl::ssl::AlpnError> {
    fn names(wire: &[u8]) -> impl Iterator<Item = &[u8]> {
        let mut rest = wire;
        std::iter::from_fn(move || {
            let (&len, tail) = rest.split_first()?;
            let name = tail.get(..usize::from(len))?;
            rest = &tail[name.len()..];
            Some(name)
        })
    }
    names(ours)
        .find_map(|ours| names(offered).find(|o| *o == ours))
        .ok_or(openssl::ssl::AlpnError::NOACK)
}

/// ALPN's wire form of `protocols`: each name prefixed by its length.
fn alpn_wire(protocols: &[String]) -> Vec<u8> {
    protocols
        .iter()
        .flat_map(|p| std::iter::once(p.len() as u8).chain(p.bytes()))
        .collect()
}

impl Handshake {
    /// Counts this finished server handshake into a test's statistics.
    pub fn count_into(&self, stats: &mut crate::test_stats::ServerTestStats) {
        stats.tls_ktls_connections += u64::from(self.ktls);
        if self.resumed {
            stats.tls_resumed_handshakes += 1;
            stats.tls_resumed_cpu_ns += self.cpu_ns;
        } else {
            stats.tls_full_handshakes += 1;
            stats.tls_full_cpu_ns += self.cpu_ns;
        }
    }
}

/// One TLS connection: the OpenSSL stream and its handshake's timing.
#[derive(Debug)]
pub struct TlsConn {
    stream: SslStream<FdIo>,
    started: Instant,
    /// Set when the handshake finished, taken once by [`Self::take_handshake`].
    done: Option<Handshake>,
    finished: bool,
    /// CPU time of the handshake's steps so far.
    handshake_cpu_ns: u64,
    rekey: Rekey,
    /// `tls_mode ktls`: switch to the kernel when the handshake finishes.
    wants_ktls: bool,
    /// Switched: data moves by plain send/recv, OpenSSL is bypassed.
    ktls: bool,
}

fn to_io(e: openssl::ssl::Error) -> io::Error {
    let code = e.code();
    match e.into_io_error() {
        Ok(io) => io,
        Err(_) if code == ErrorCode::WANT_READ || code == ErrorCode::WANT_WRITE => {
            io::ErrorKind::WouldBlock.into()
        }
        Err(_) if code == ErrorCode::ZERO_RETURN => io::ErrorKind::UnexpectedEof.into(),
        Err(e) => io::Error::other(format!("tls: {e}")),
    }
}

impl TlsConn {
    /// Wraps a connected (client) or accepted (server) socket; a connection
    /// that receives messages of `recv_message_bytes` gets a read-ahead
    /// buffer to match (0: OpenSSL's default).
    pub(crate) fn new(
        ctx: &SslContext,
        fd: OwnedFd,
        client: bool,
        session: Option<&SslSession>,
        recv_message_bytes: u64,
    ) -> io::Result<TlsConn> {
        Self::named(ctx, fd, (client, None), session, recv_message_bytes)
    }

    /// [`Self::new`] for a client of a foreign server `server_name`: SNI,
    /// and the name its certificate is checked against (where the context
    /// verifies).
    pub(crate) fn named(
        ctx: &SslContext,
        fd: OwnedFd,
        (client, server_name): (bool, Option<&str>),
        session: Option<&SslSession>,
        recv_message_bytes: u64,
    ) -> io::Result<TlsConn> {
        let mut ssl = openssl::ssl::Ssl::new(ctx).map_err(io::Error::other)?;
        if let Some(name) = server_name.filter(|_| client) {
            name_server(&mut ssl, name).map_err(io::Error::other)?;
        }
        super::tls_acct::set_read_buffer(&mut ssl, recv_message_bytes);
        let wants_ktls = ktls::enabled(ctx);
        if wants_ktls {
            ktls::prepare(&mut ssl);
        }
        if client {
            if let Some(s) = session {
                // SAFETY: the session comes from a context of the same kind.
                unsafe { ssl.set_session(s) }.map_err(io::Error::other)?;
            }
            ssl.set_connect_state();
        } else {
            ssl.set_accept_state();
        }
        let stream = SslStream::new(ssl, FdIo { fd, drained: false }).map_err(io::Error::other)?;
        Ok(TlsConn {
            stream,
            started: Instant::now(),
            done: None,
            finished: false,
            handshake_cpu_ns: 0,
            rekey: Rekey::of(ctx),
            wants_ktls,
            ktls: false,
        })
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.stream.get_ref().fd.as_raw_fd()
    }

    fn handshake(&mut self) -> io::Result<()> {
        if self.finished {
            return Ok(());
        }
        let cpu_ns = tls_acct::thread_cpu_ns();
        let step = self.stream.do_handshake();
        self.handshake_cpu_ns += tls_acct::thread_cpu_ns().saturating_sub(cpu_ns);
        step.map_err(to_io)?;
        self.finished = true;
        if self.wants_ktls {
            ktls::switch(self.raw_fd(), self.stream.ssl(), self.client())?;
            self.ktls = true;
            // OpenSSL may never write again (its records would go out as
            // data under the kernel's keys), and a connection freed without
            // a shutdown has its session marked not resumable: mark the
            // shutdown done. (No close_notify is sent, which TLS 1.2 no
            // longer ties to resumption, RFC 5246 §7.2.1.)
            self.stream
                .set_shutdown(ShutdownState::SENT | ShutdownState::RECEIVED);
        }
        let ssl = self.stream.ssl();
        let cipher = ssl.current_cipher();
        let id = cipher.map_or([0, 0], |c| c.protocol_id());
        let cipher_name = cipher.and_then(|c| c.standard_name()).unwrap_or("unknown");
        self.done = Some(Handshake {
            ns: self.started.elapsed().as_nanos() as u64,
            resumed: ssl.session_reused(),
            version: match ssl.version_str() {
                "TLSv1.2" => "1.2",
                "TLSv1.3" => "1.3",
                other => other,
            },
            cipher: u16::from_be_bytes(id),
            cipher_name,
            cpu_ns: self.handshake_cpu_ns,
            ktls: self.ktls,
            alpn: ssl.selected_alpn_protocol().map(alpn_name),
        });
        Ok(())
    }

    fn client(&self) -> bool {
        !self.stream.ssl().is_server()
    }

    /// Writes all of `buf` or until the socket is full (then what was
    /// written, or `WouldBlock` if nothing). With kTLS: one `send`, which
    /// the kernel turns into records (a short one means the socket is full).
    pub(crate) fn send(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.ktls {
            return sockopt::send(self.raw_fd(), buf);
        }
        self.stream.get_mut().drained = false;
        self.handshake()?;
        if self.ktls {
            return sockopt::send(self.raw_fd(), buf);
        }
        let mut done = 0;
        while done < buf.len() {
            match self.stream.ssl_write(&buf[done..]) {
                Ok(n) => done += n,
                Err(e) => {
                    let e = to_io(e);
                    if e.kind() == io::ErrorKind::WouldBlock && done > 0 {
                        break;
                    }
                    return Err(e);
                }
            }
        }
        self.rekey.sent(self.stream.ssl(), done);
        Ok(done)
    }

    /// Reads until `buf` is full or the socket is drained; `Ok(0)` at the end
    /// of the stream (close_notify or a plain FIN).
    pub(crate) fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ktls {
            return ktls_recv(self.raw_fd(), buf);
        }
        self.stream.get_mut().drained = false;
        self.handshake()?;
        if self.ktls {
            return ktls_recv(self.raw_fd(), buf);
        }
        let mut got = 0;
        while got < buf.len() {
            match self.stream.ssl_read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                // close_notify, or a FIN without one (SYSCALL with no
                // errno: OpenSSL's "unexpected EOF").
                Err(e)
                    if e.code() == ErrorCode::ZERO_RETURN
                        || (e.code() == ErrorCode::SYSCALL && e.io_error().is_none()) =>
                {
                    break
                }
                Err(e) => {
                    let e = to_io(e);
                    if e.kind() == io::ErrorKind::WouldBlock && got > 0 {
                        break;
                    }
                    return Err(e);
                }
            }
        }
        Ok(got)
    }

    /// Key updates this side started since the last call.
    pub(crate) fn take_rekeys(&mut self) -> u32 {
        self.rekey.take()
    }

    /// The finished handshake, once.
    pub(crate) fn take_handshake(&mut self) -> Option<Handshake> {
        self.done.take()
    }

    /// Ends this side's sending: close_notify (once the handshake finished),
    /// then a FIN. Reading goes on until the peer ends too.
    /// With kTLS: a plain FIN without close_notify (the kernel would send
    /// one only as a control record, which the peer's plain `recv` reports
    /// as EIO); both sides of a ktls run read a FIN as the end.
    pub(crate) fn close_write(&mut self) -> io::Result<()> {
        if self.finished && !self.ktls {
            // One record; never waits for the peer's close_notify.
            let _ = self.stream.shutdown();
        }
        sockopt::shutdown_write(self.raw_fd())
    }

    /// The session to offer on a later connection (client side).
    pub(crate) fn session(&self) -> Option<SslSession> {
        self.stream.ssl().session().map(|s| s.to_owned())
    }
}

/// Closing sends close_notify (one record, never waiting for the peer's):
/// a proper TLS close, and OpenSSL drops a session from the cache (and marks
/// it not resumable) when its connection ends without one.
impl Drop for TlsConn {
    fn drop(&mut self) {
        // With kTLS, OpenSSL's close_notify would go out as application
        // data under the kernel's keys: a plain close instead.
        if self.finished && !self.ktls {
            let _ = self.stream.shutdown();
        }
    }
}

/// One `recv` on a kTLS socket: the kernel decrypts whole records and
/// returns what is ready (a short read means no further record is ready).
/// EIO means a record other than application data (an alert or a
/// post-handshake message), which plain `recv` cannot take.
fn ktls_recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    sockopt::recv(fd, buf, false).map_err(|e| {
        if e.raw_os_error() == Some(libc::EIO) {
            io::Error::other(
                "tls_mode ktls: the peer sent a TLS control record (alert or key update)",
            )
        } else {
            e
        }
    })
}

/// Applies version, cipher and groups to a context of either side.
fn restrict(b: &mut SslContextBuilder, p: &TlsParams) -> Result<(), String> {
    let v = match p.version {
        TlsVersion::V12 => SslVersion::TLS1_2,
        TlsVersion::V13 => SslVersion::TLS1_3,
    };
    let e = |what: &str, err: openssl::error::ErrorStack| format!("tls {what}: {err}");
    b.set_min_proto_version(Some(v))
        .map_err(|x| e("version", x))?;
    b.set_max_proto_version(Some(v))
        .map_err(|x| e("version", x))?;
    if let Some(suite) = p.cipher.and_then(CipherSuite::by_code) {
        match suite.version {
            TlsVersion::V12 => b.set_cipher_list(suite.openssl),
            TlsVersion::V13 => b.set_ciphersuites(suite.openssl),
        }
        .map_err(|x| e("cipher", x))?;
    }
    if !p.groups.is_empty() {
        b.set_groups_list(&p.groups.join(":"))
            .map_err(|x| e("groups", x))?;
    }
    tls_acct::set_rekey(b, p.rekey_bytes);
    b.set_options(SslOptions::IGNORE_UNEXPECTED_EOF | SslOptions::NO_COMPRESSION);
    b.set_mode(SslMode::ENABLE_PARTIAL_WRITE | SslMode::ACCEPT_MOVING_WRITE_BUFFER);
    // Whole records (and several) per recv: see [`FdIo`].
    b.set_read_ahead(true);
    // ktls: read-ahead off, GCM only, secrets kept (see `ktls::configure`).
    ktls::configure(b, p)
}

/// SNI (a name, never an IP literal: RFC 6066 §3) and the name or
/// address the certificate must carry.
fn name_server(ssl: &mut openssl::ssl::SslRef, name: &str) -> Result<(), String> {
    let e = |x: openssl::error::ErrorStack| format!("tls: server name {name}: {x}");
    match name.parse::<std::net::IpAddr>() {
        Ok(ip) => ssl.param_mut().set_ip(ip).map_err(e),
        Err(_) => {
            ssl.set_hostname(name).map_err(e)?;
            ssl.param_mut().set_host(name).map_err(e)
        }
    }
}

/// The driver's context for `p`: a foreign server's certificate verified
/// against `p.ca` or the system's roots (unless `p.insecure`), none of
/// stackbench's own responder; ALPN offered where `p.alpn` names any.
pub fn client_context(p: &TlsParams) -> Result<SslContext, String> {
    let mut b = SslContextBuilder::new(SslMethod::tls_client()).map_err(|e| e.to_string())?;
    restrict(&mut b, p)?;
    if p.verifies() {
        match &p.ca {
            Some(ca) => b
                .set_ca_file(ca)
                .map_err(|_| format!("--ca {ca}: not a readable PEM file of CA certificates"))?,
            None => b
                .set_default_verify_paths()
                .map_err(|e| format!("tls: cannot load the system's CA certificates: {e}"))?,
        }
        b.set_verify(SslVerifyMode::PEER);
    } else {
        b.set_verify(SslVerifyMode::NONE);
    }
    if !p.alpn.is_empty() {
        b.set_alpn_protos(&alpn_wire(&p.alpn))
            .map_err(|e| format!("tls alpn: {e}"))?;
    }
    // The driver keeps the one session it offers per class and worker
    // itself: no client cache growing with every connection.
    b.set_session_cache_mode(openssl::ssl::SslSessionCacheMode::OFF);
    Ok(b.build())
}

/// The responder's context for `p`: its certificate from `p.cert`/`p.key`,
/// or the one this process made for `p.cert_type`.
pub fn server_context(p: &TlsParams) -> Result<SslContext, String> {
    let mut b = SslContextBuilder::new(SslMethod::tls_server()).map_err(|e| e.to_string())?;
    restrict(&mut b, p)?;
    match (&p.cert, &p.key) {
        (Some(cert), Some(key)) => {
            b.set_certificate_chain_file(cert)
                .map_err(|e| format!("tls: cannot use certificate '{cert}': {e}"))?;
            b.set_private_key_file(key, openssl::ssl::SslFiletype::PEM)
                .map_err(|e| format!("tls: cannot use key '{key}': {e}"))?;
        }
        _ => {
            let (cert, key) = made_certificate(p.cert_type)?;
            b.set_certificate(&cert).map_err(|e| e.to_string())?;
            b.set_private_key(&key).map_err(|e| e.to_string())?;
        }
    }
    b.check_private_key()
        .map_err(|e| format!("tls: certificate and key do not match: {e}"))?;
    if !p.alpn.is_empty() {
        // The first of ours the client offers; none in common: no ALPN
        // (the client then sees none selected), as nginx does.
        let ours = alpn_wire(&p.alpn);
        b.set_alpn_select_callback(move |_, offered| select_alpn(&ours, offered));
    }
    b.set_session_id_context(b"stackbench")
        .map_err(|e| e.to_string())?;
    Ok(b.build())
}

/// Checks the responder's PEM files before anything starts: each readable,
/// each PEM of its kind, and the key the certificate's. `Err` is one line
/// naming the flag and the fix (OpenSSL's error stack is left out: it names
/// its own functions, not the input).
pub fn check_cert_key(cert: &str, key: &str) -> Result<(), String> {
    let read = |flag: &str, path: &str| {
        std::fs::read(path)
            .map_err(|e| format!("--{flag} {path}: cannot read it ({e}): give a readable PEM file"))
    };
    let certs = X509::stack_from_pem(&read("cert", cert)?).unwrap_or_default();
    let Some(first) = certs.first() else {
        return Err(format!(
            "--cert {cert}: not a PEM certificate (no -----BEGIN CERTIFICATE----- block): \
             give the certificate in PEM"
        ));
    };
    let pkey = PKey::private_key_from_pem_passphrase(&read("key", key)?, b"").map_err(|_| {
        format!(
            "--key {key}: not a PEM private key (no -----BEGIN ... PRIVATE KEY----- block, \
             or encrypted): give the unencrypted private key in PEM"
        )
    })?;
    let public = first.public_key().map_err(|e| e.to_string())?;
    if !public.public_eq(&pkey) {
        return Err(format!(
            "--key {key} is not the key of --cert {cert}: give the private key the \
             certificate was made for"
        ));
    }
    Ok(())
}

/// One blocking connection to the foreign server at `addr` (`named` in
/// messages) with the run's client context, before the run starts: a
/// certificate that does not verify, a server that speaks no TLS or
/// refuses the run's version, suite or groups is one line naming what was
/// seen and the fix, rather than every connection of the run failing. The
/// connection comes back handshaken, for the caller's own look at what
/// the server speaks above TLS.
pub fn probe(
    addr: std::net::SocketAddr,
    named: &str,
    p: &TlsParams,
) -> Result<SslStream<std::net::TcpStream>, String> {
    use std::time::Duration;
    let ctx = client_context(p)?;
    let tcp = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(10))
        .map_err(|e| format!("target {named}: cannot connect to {addr} ({e})"))?;
    let _ = tcp.set_read_timeout(Some(Duration::from_secs(10)));
    let mut ssl = openssl::ssl::Ssl::new(&ctx).map_err(|e| e.to_string())?;
    if let Some(name) = &p.server_name {
        name_server(&mut ssl, name)?;
    }
    // The certificate that failed, for the message (OpenSSL keeps no peer
    // certificate of a handshake it aborted).
    let failed = std::sync::Arc::new(Mutex::new(None::<String>));
    if p.verifies() {
        let seen = failed.clone();
        ssl.set_verify_callback(SslVerifyMode::PEER, move |ok, store| {
            if let (false, Some(cert)) = (ok, store.current_cert()) {
                let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
                seen.get_or_insert_with(|| describe_cert(cert));
            }
            ok
        });
    }
    match ssl.connect(tcp) {
        Ok(stream) => Ok(stream),
        Err(openssl::ssl::HandshakeError::Failure(mid)) => {
            let verify = mid.ssl().verify_result();
            if verify != openssl::x509::X509VerifyResult::OK {
                let subject = failed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take()
                    .unwrap_or_else(|| "its certificate".to_string());
                let against =
                    p.ca.as_deref()
                        .map_or("the system's CA certificates".into(), |c| {
                            format!("--ca {c}")
                        });
                return Err(format!(
                    "target {named}: the server's certificate does not verify against {against} \
                     ({}; {subject}): give --ca with the CA that signed it, or --insecure to \
                     measure without verifying",
                    verify.error_string()
                ));
            }
            let error = mid.error().to_string();
            if error.contains("no application protocol") {
                return Err(format!(
                    "target {named}: the server selected none of the protocols ALPN offered \
                     ({}): it does not serve that protocol over TLS (TLS alert \
                     no_application_protocol)",
                    p.alpn.join(", ")
                ));
            }
            Err(format!(
                "target {named}: the TLS handshake failed ({}): check that it serves TLS on \
                 this port and accepts TLS {} (--tls-version){}",
                mid.error(),
                p.version.name(),
                if p.cipher.is_some() || !p.groups.is_empty() {
                    ", the cipher and the groups asked for"
                } else {
                    ""
                }
            ))
        }
        Err(e) => Err(format!(
            "target {named}: the TLS handshake failed ({e}): check that it serves TLS on this port"
        )),
    }
}

/// A certificate in messages: its subject's CN and its issuer's.
fn describe_cert(c: &openssl::x509::X509Ref) -> String {
    let cn = |n: &openssl::x509::X509NameRef| {
        n.entries_by_nid(Nid::COMMONNAME)
            .next()
            .and_then(|e| e.data().to_string().ok())
            .unwrap_or_else(|| "?".to_string())
    };
    format!(
        "certificate CN={} issued by CN={}",
        cn(c.subject_name()),
        cn(c.issuer_name())
    )
}

/// Checks a `--ca` file before anything starts: readable, and holding at
/// least one PEM certificate.
pub fn check_ca(ca: &str) -> Result<(), String> {
    let pem = std::fs::read(ca)
        .map_err(|e| format!("--ca {ca}: cannot read it ({e}): give a readable PEM file"))?;
    match X509::stack_from_pem(&pem) {
        Ok(certs) if !certs.is_empty() => Ok(()),
        _ => Err(format!(
            "--ca {ca}: not a PEM certificate (no -----BEGIN CERTIFICATE----- block): give \
             the CA certificates in PEM"
        )),
    }
}

type Made = (X509, PKey<Private>);

/// The self-signed certificate of `kind`, made once per process.
pub fn made_certificate(kind: CertType) -> Result<Made, String> {
    static MADE: OnceLock<Mutex<Vec<(CertType, Made)>>> = OnceLock::new();
    let mut made = MADE
        .get_or_init(|| Mutex::new(Vec::new()))
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some((_, m)) = made.iter().find(|(k, _)| *k == kind) {
        return Ok(m.clone());
    }
    let m = self_signed(kind).map_err(|e| format!("tls: cannot make a certificate: {e}"))?;
    made.push((kind, m.clone()));
    Ok(m)
}

fn self_signed(kind: CertType) -> Result<Made, openssl::error::ErrorStack> {
    let key = match kind {
        CertType::Rsa2048 => PKey::from_rsa(Rsa::generate(2048)?)?,
        CertType::EcdsaP256 => {
            let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
            PKey::from_ec_key(EcKey::generate(&group)?)?
        }
    };
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_text("CN", "stackbench")?;
    let name = name.build();
    let mut b = X509::builder()?;
    b.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(64, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(&name)?;
    b.set_issuer_name(&name)?;
    b.set_pubkey(&key)?;
    let (from, to) = (Asn1Time::days_from_now(0)?, Asn1Time::days_from_now(30)?);
    b.set_not_before(&from)?;
    b.set_not_after(&to)?;
    b.sign(&key, MessageDigest::sha256())?;
    Ok((b.build(), key))
}
