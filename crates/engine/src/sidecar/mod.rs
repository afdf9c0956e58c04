//! `tls_mode sidecar`: a TLS proxy on each side. The application (driver,
//! responder) speaks clear text; on each side one TLS proxy process — the
//! same binary started as `stackbench __tls-proxy CONFIG` — carries the bytes
//! over TLS. It leaves the application unchanged, as AT-TLS does, but adds
//! two loopback legs and a process per side, so it is a TLS proxy (a service
//! mesh's sidecar), not the AT-TLS analogue: that is `tls_mode ktls`, TLS in
//! the stack.
//!
//! Client side: the driver connects in clear text to its proxy's loopback
//! listener; per accepted connection the proxy opens one TLS connection to
//! the server proxy (so CRR still does one handshake per connection, and the
//! client proxy offers its last session to a share `resume_ratio` of them).
//! Server side: the responder opens clear-text listeners and starts a proxy
//! that accepts TLS and connects in clear text to them; `ready` announces the
//! proxy's endpoint. One proxy per side and test (class).
//!
//! Life cycle: the parent reads the proxy's `listening ADDR` line, and ends it
//! by closing its stdin; the proxy then prints one [`ProxyReport`] line and
//! exits. A proxy also dies with the thread that started it
//! (PR_SET_PDEATHSIG), ignores the terminal's SIGINT (its parent decides when
//! it stops), and the handle kills and reaps it when dropped, so no proxy
//! outlives a run, an error or Ctrl-C.
//!
//! Accounting: live proxies are registered in this process ([`side_pids`]),
//! and each side's CPU and memory samples sum its own process and its proxies.

mod proxy;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stackbench_model::{SocketOptions, TlsParams};
use stackbench_record::{LatencyUs, TlsFigures};

use crate::transport::Endpoint;

pub use proxy::proxy_main;

/// The hidden subcommand that runs a proxy.
pub const PROXY_SUBCOMMAND: &str = "__tls-proxy";

/// How long a stopping proxy may take to report before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// Which side a proxy serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Accepts clear text, dials TLS (the driver's side).
    Client,
    /// Accepts TLS, dials clear text (the responder's side).
    Server,
}

/// What a proxy runs with (one JSON argument).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProxyConfig {
    pub role: Role,
    /// Where to listen (port 0 picks one).
    pub listen: SocketAddr,
    /// Where to connect, spread round-robin over accepted connections.
    pub upstream: Vec<Endpoint>,
    pub tls: TlsParams,
    /// Applied to both legs (MSG_WAITALL and SO_RCVLOWAT never: a proxy
    /// forwards whatever arrives).
    pub socket: SocketOptions,
    /// CPUs to pin to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Connections to expect (descriptors are reserved for two per client).
    pub clients: u32,
}

/// What a proxy saw over its life (warm-up included), printed when it stops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProxyReport {
    /// Connection pairs accepted.
    pub connections: u64,
    /// Pairs ended by an error or a reset.
    pub aborted: u64,
    pub full_handshakes: u64,
    pub resumed_handshakes: u64,
    /// Negotiated version ("1.2", "1.3") and suite; empty before any handshake.
    pub version: String,
    pub cipher: String,
    pub cipher_code: u16,
    pub handshake_latency_us: Option<LatencyUs>,
}

impl ProxyReport {
    /// The class's `tls` figures (`None` when no handshake finished).
    pub fn figures(&self) -> Option<TlsFigures> {
        (self.full_handshakes + self.resumed_handshakes > 0).then(|| TlsFigures {
            version: self.version.clone(),
            cipher: self.cipher.clone(),
            cipher_code: format!("{:X}", self.cipher_code),
            full_handshakes: self.full_handshakes,
            resumed_handshakes: self.resumed_handshakes,
            handshake_latency_us: self.handshake_latency_us,
            // Not reported by the proxies yet: their CPU is in the side's
            // process figures, not split per handshake.
            handshake_cpu_us: None,
            rekeys: 0,
            server_rekeys: 0,
            ktls: None,
            // The proxies offer no ALPN, and verify no certificate (they
            // reach stackbench's own responder only).
            alpn: None,
            server_verified: None,
        })
    }
}

/// Pids of the live proxies this process started.
static PROXY_PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// This side's processes: this one and its live proxies.
pub fn side_pids() -> Vec<u32> {
    let mut pids = vec![std::process::id()];
    pids.extend(PROXY_PIDS.lock().unwrap_or_else(|p| p.into_inner()).iter());
    pids
}

/// A running proxy process; dropping it stops and reaps it.
#[derive(Debug)]
pub struct SidecarProxy {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    addr: SocketAddr,
}

impl SidecarProxy {
    /// Starts a proxy with `cfg` and waits for its listener. The error is
    /// one line.
    pub fn start(cfg: &ProxyConfig) -> Result<SidecarProxy, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("tls_mode sidecar: cannot find this program: {e}"))?;
        let json = serde_json::to_string(cfg).map_err(|e| e.to_string())?;
        let mut cmd = Command::new(exe);
        cmd.arg(PROXY_SUBCOMMAND)
            .arg(json)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls (prctl, getppid) between fork
        // and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1); // the parent is already gone
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("tls_mode sidecar: cannot start the TLS proxy: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut proxy = SidecarProxy {
            child,
            stdin,
            stdout,
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        };
        PROXY_PIDS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(proxy.pid());
        let line = proxy.read_line();
        match line.strip_prefix("listening ").map(str::parse) {
            Some(Ok(addr)) => proxy.addr = addr,
            _ => {
                let said = line.strip_prefix("error: ").unwrap_or(&line);
                return Err(format!("tls_mode sidecar: the TLS proxy failed: {said}"));
            }
        }
        Ok(proxy)
    }

    /// Where the proxy listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn read_line(&mut self) -> String {
        let mut line = String::new();
        let _ = self.stdout.read_line(&mut line);
        line.trim_end().to_string()
    }

    /// Stops the proxy and returns its report (`None` if it died first).
    pub fn finish(mut self) -> Option<ProxyReport> {
        self.stdin = None; // EOF: the proxy's signal to stop
        let line = self.read_line();
        serde_json::from_str(&line).ok()
    }
}

impl Drop for SidecarProxy {
    fn drop(&mut self) {
        self.stdin = None;
        let deadline = Instant::now() + STOP_GRACE;
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let pid = self.child.id();
        PROXY_PIDS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&p| p != pid);
    }
}
