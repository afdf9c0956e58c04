//! The proxy process itself: one mio loop moving bytes between pairs of
//! streams — the accepted one and the one dialed for it, one of them TLS —
//! with the transport seam's [`DataListener`], [`Dialer`] and [`DataStream`]
//! (so the TLS is exactly inline TLS's: contexts, certificates, handshakes).
//!
//! Edge-triggered care: any event of a pair pumps both directions, and each
//! direction stops only on EAGAIN from its source (a readable edge follows)
//! or from its sink (a writable edge follows); TLS reads and writes loop
//! until EAGAIN themselves (see `transport::tls`).
//!
//! Close semantics pass through: a source's end (FIN or close_notify) becomes
//! a half-close of the sink once the bytes before it are out; a pair whose
//! two directions ended is closed; an error or reset on either stream resets
//! both (SO_LINGER 0), so an abortive close stays abortive across the proxy.

use std::io::{self, Write};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use slab::Slab;
use stackbench_metrics::LatencyHistogram;
use stackbench_model::{SocketOptions, Transport};

use super::{ProxyConfig, ProxyReport, Role};
use crate::affinity::pin_current_thread;
use crate::transport::tls::{self, Handshake};
use crate::transport::{self, row, DataListener, DataStream, Dialer};

/// Bytes buffered per direction of a pair.
const PIPE_BYTES: usize = 64 * 1024;
const STDIN: Token = Token(0);
const LISTENER: Token = Token(1);
/// Pair `k`'s streams are tokens `PAIR_BASE + 2k` (accepted) and `+ 1` (dialed).
const PAIR_BASE: usize = 2;

/// Runs a proxy from its one JSON argument; returns the exit status.
pub fn proxy_main(args: &[String]) -> i32 {
    // The terminal's Ctrl-C reaches the whole process group: the parent
    // stops this proxy when its run ends.
    // SAFETY: setting a signal's disposition to ignore.
    unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
    let result = args
        .first()
        .ok_or_else(|| "missing the configuration argument".to_string())
        .and_then(|a| serde_json::from_str::<ProxyConfig>(a).map_err(|e| e.to_string()))
        .and_then(|cfg| Proxy::new(&cfg));
    let mut out = io::stdout().lock();
    match result {
        Ok(mut proxy) => {
            let addr = proxy.listener.local_addr().map(|a| a.to_string());
            let _ = writeln!(out, "listening {}", addr.unwrap_or_default());
            let _ = out.flush();
            if let Err(e) = proxy.run() {
                eprintln!("stackbench tls proxy: {e}");
            }
            let report = serde_json::to_string(&proxy.report).unwrap_or_default();
            let _ = writeln!(out, "{report}");
            0
        }
        Err(e) => {
            let _ = writeln!(out, "error: {e}");
            2
        }
    }
}

/// One direction of a pair: bytes read from the source not yet sent.
struct Pipe {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// The source ended.
    eof: bool,
    /// The sink was half-closed after the source's end.
    shut: bool,
}

impl Pipe {
    fn new() -> Pipe {
        Pipe {
            buf: vec![0; PIPE_BYTES].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            shut: false,
        }
    }

    /// Moves bytes `from` → `to` until either says EAGAIN or the source
    /// ended and the sink was half-closed. An error means: reset the pair.
    fn pump(&mut self, from: &mut DataStream, to: &mut DataStream) -> io::Result<()> {
        loop {
            while self.start < self.end {
                match to.send(&self.buf[self.start..self.end]) {
                    Ok(n) => self.start += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                    Err(e) => return Err(e),
                }
            }
            (self.start, self.end) = (0, 0);
            if self.eof {
                if !self.shut {
                    self.shut = true;
                    to.close_write()?;
                }
                return Ok(());
            }
            match from.recv(&mut self.buf, false) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end = n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

/// An accepted stream and the one dialed for it.
struct Pair {
    accepted: DataStream,
    dialed: DataStream,
    up: Pipe,
    down: Pipe,
}

struct Proxy {
    poll: Poll,
    listener: DataListener,
    dialer: Dialer,
    role: Role,
    socket: SocketOptions,
    pairs: Slab<Pair>,
    /// Client role: the session to offer, and the credit deciding which
    /// connections offer it (a share `resume_ratio` of them, exactly).
    session: Option<openssl::ssl::SslSession>,
    resume_credit: f64,
    hist: LatencyHistogram,
    report: ProxyReport,
    _fds: crate::limits::FdReservation,
}

impl Proxy {
    fn new(cfg: &ProxyConfig) -> Result<Proxy, String> {
        if !cfg.cpus.is_empty() {
            pin_current_thread(&cfg.cpus).map_err(|e| format!("cannot pin: {e}"))?;
        }
        let fds = crate::limits::reserve_fds(2 * u64::from(cfg.clients))?;
        let socket = SocketOptions {
            waitall: false,
            ..cfg.socket
        };
        let cannot = |e: io::Error| format!("cannot listen on {}: {e}", cfg.listen);
        let (listener, dialer) = match cfg.role {
            Role::Server => {
                let ctx = tls::server_context(&cfg.tls)?;
                let l = transport::listen_inet(row(Transport::Tls), cfg.listen, &socket)
                    .map_err(cannot)?
                    .with_tls(ctx);
                (l, row(Transport::Tcp).dial(&cfg.upstream, 1, None)?)
            }
            Role::Client => {
                let l = transport::listen_inet(row(Transport::Tcp), cfg.listen, &socket)
                    .map_err(cannot)?;
                let d = row(Transport::Tls).dial(&cfg.upstream, 1, Some(&cfg.tls))?;
                (l, d)
            }
        };
        Ok(Proxy {
            poll: Poll::new().map_err(|e| e.to_string())?,
            listener,
            dialer,
            role: cfg.role,
            socket,
            pairs: Slab::new(),
            session: None,
            resume_credit: 0.0,
            hist: LatencyHistogram::new(),
            report: ProxyReport::default(),
            _fds: fds,
        })
    }

    /// Serves until stdin ends (the parent's stop, or its death).
    fn run(&mut self) -> io::Result<()> {
        set_nonblocking(0)?;
        let registry = self.poll.registry();
        registry.register(&mut SourceFd(&0), STDIN, Interest::READABLE)?;
        registry.register(&mut self.listener, LISTENER, Interest::READABLE)?;
        let mut events = Events::with_capacity(1024);
        loop {
            match self.poll.poll(&mut events, None) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            for ev in events.iter() {
                match ev.token() {
                    STDIN if stdin_ended() => {
                        self.report.handshake_latency_us = self.hist.summary_us();
                        return Ok(());
                    }
                    STDIN => {}
                    LISTENER => self.accept_all(),
                    Token(t) => self.service((t - PAIR_BASE) / 2),
                }
            }
        }
    }

    /// Accepts every queued connection and dials its partner.
    fn accept_all(&mut self) {
        loop {
            let accepted = match self.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                Err(e) => {
                    eprintln!("stackbench tls proxy: accept: {e}");
                    return;
                }
            };
            self.report.connections += 1;
            if let Err(e) = self.open_pair(accepted) {
                eprintln!("stackbench tls proxy: cannot connect onwards: {e}");
                self.report.aborted += 1;
            }
        }
    }

    fn open_pair(&mut self, accepted: DataStream) -> io::Result<()> {
        accepted.apply_options(&self.socket, 0)?;
        let session = self.session_to_offer();
        let route = self.report.connections as usize;
        let dialed = self
            .dialer
            .connect_resuming(route, &self.socket, 0, session.as_ref())?;
        let entry = self.pairs.vacant_entry();
        let key = entry.key();
        let mut pair = Pair {
            accepted,
            dialed,
            up: Pipe::new(),
            down: Pipe::new(),
        };
        let both = Interest::READABLE | Interest::WRITABLE;
        let registry = self.poll.registry();
        registry.register(&mut pair.accepted, Token(PAIR_BASE + 2 * key), both)?;
        registry.register(&mut pair.dialed, Token(PAIR_BASE + 2 * key + 1), both)?;
        entry.insert(pair);
        // The client's TLS handshake starts now, not at the first byte.
        self.service(key);
        Ok(())
    }

    fn session_to_offer(&mut self) -> Option<openssl::ssl::SslSession> {
        let ratio = self.dialer.resume_ratio();
        if self.role != Role::Client || ratio <= 0.0 {
            return None;
        }
        self.resume_credit += ratio;
        if self.resume_credit < 1.0 {
            return None;
        }
        self.resume_credit -= 1.0;
        self.session.clone()
    }

    /// Pumps both directions of pair `key`; closes it when both ended,
    /// resets both streams on an error.
    fn service(&mut self, key: usize) {
        let Some(pair) = self.pairs.get_mut(key) else {
            return;
        };
        let up = pair.up.pump(&mut pair.accepted, &mut pair.dialed);
        let down = up.and_then(|()| pair.down.pump(&mut pair.dialed, &mut pair.accepted));
        let tls_end = match self.role {
            Role::Server => &mut pair.accepted,
            Role::Client => &mut pair.dialed,
        };
        let handshake = tls_end.take_handshake();
        let aborted = down.is_err();
        let ended = pair.up.shut && pair.down.shut;
        // The session to offer next is taken when a pair ends: TLS 1.3
        // tickets arrive after the handshake, with the first bytes.
        let resumes = self.role == Role::Client && self.dialer.resume_ratio() > 0.0;
        if resumes && (aborted || ended) {
            self.session = tls_end.tls_session().or(self.session.take());
        }
        if let Some(h) = handshake {
            self.record(&h);
        }
        if aborted || ended {
            let mut pair = self.pairs.remove(key);
            if aborted {
                self.report.aborted += 1;
                let _ = pair.accepted.set_abortive_close();
                let _ = pair.dialed.set_abortive_close();
            }
            let registry = self.poll.registry();
            let _ = registry.deregister(&mut pair.accepted);
            let _ = registry.deregister(&mut pair.dialed);
        }
    }

    fn record(&mut self, h: &Handshake) {
        let r = &mut self.report;
        if h.resumed {
            r.resumed_handshakes += 1;
        } else {
            r.full_handshakes += 1;
        }
        if r.version.is_empty() {
            r.version = h.version.to_string();
            r.cipher = h.cipher_name.to_string();
            r.cipher_code = h.cipher;
        }
        self.hist.record_ns(h.ns);
    }
}

fn set_nonblocking(fd: i32) -> io::Result<()> {
    // SAFETY: fcntl on an fd this process owns (its stdin).
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether stdin reached its end (or failed); anything written is ignored.
fn stdin_ended() -> bool {
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reading into a stack buffer of its length.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            continue;
        }
        return n == 0 || io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock;
    }
}
