//! `--metrics-listen ADDR`: the run's live figures served as OpenMetrics
//! text on `GET /metrics` while it runs, for the dashboards a performance
//! team already watches during a long soak.
//!
//! The figures come from the progress path, not from the transactions: the
//! engine's watch assembles them about once a second
//! (`Progress::live`, with an agent run the controller's merge of its
//! agents'), and [`Served`] — an [`Observer`] wrapped around the caller's —
//! keeps the latest in an [`Exposition`] that a scrape encodes. A scrape
//! costs the run nothing but the lock around that copy.
//!
//! The listener is one thread of the standard library's `TcpListener`
//! answering one request per connection (HTTP/1.1, `Connection: close`),
//! its request head parsed by `httparse`, already the engine's HTTP/1.1
//! parser: a scrape every few seconds needs no server framework, and
//! tiny_http would add five crates for the same one route.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use stackbench_engine::{Progress, RunConfig};
use stackbench_metrics::openmetrics::{Exposition, CONTENT_TYPE};
use stackbench_model::settings::RunSettings;
use stackbench_record::WarningRecord;

use crate::error::{input, RunError};
use crate::Observer;

/// A request head larger than this is refused (a scrape's is ~200 bytes).
const MAX_HEAD_BYTES: usize = 8192;
/// A client that sends no complete request head within this is dropped.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The one `metrics_listen` address of several runs' settings (a study's
/// steps, which are measured one after the other under one listener);
/// `None` when none sets it.
pub fn one_address<'s>(
    settings: impl IntoIterator<Item = &'s RunSettings>,
) -> Result<Option<String>, RunError> {
    let mut found: Option<&str> = None;
    for s in settings {
        match (found, s.metrics_listen.as_ref()) {
            (Some(a), Some(b)) if a != b.0 => {
                return input(format!(
                    "metrics_listen differs between steps ({a}, {}): the steps run one after the \
                     other under one listener; give it once, e.g. --metrics-listen {a}",
                    b.0
                ))
            }
            (None, Some(b)) => found = Some(&b.0),
            _ => {}
        }
    }
    Ok(found.map(str::to_string))
}

/// The listener serving the live figures; it stops when dropped.
pub struct MetricsServer {
    state: Arc<Mutex<Exposition>>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `listen` (the `metrics_listen` setting) and starts serving:
    /// before a run starts, so that an address in use or not of this host
    /// is refused as input.
    pub fn bind(listen: &str) -> Result<MetricsServer, RunError> {
        let listener = TcpListener::bind(listen).or_else(|e| {
            input(format!(
                "metrics_listen {listen}: {e}: give a free address of this host, e.g. 127.0.0.1:9464"
            ))
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| RunError::runtime("metrics listener", e))?;
        let state = Arc::new(Mutex::new(Exposition::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = thread::Builder::new()
            .name("metrics-listen".into())
            .spawn({
                let (state, stop) = (Arc::clone(&state), Arc::clone(&stop));
                move || serve(&listener, &state, &stop)
            })
            .map_err(|e| RunError::runtime("cannot start the metrics listener", e))?;
        Ok(MetricsServer {
            state,
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen for `:0`).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `inner`, with what it is told also kept for the scrapes.
    pub fn observe<'a>(&self, inner: &'a mut dyn Observer) -> Served<'a> {
        Served {
            inner,
            state: Arc::clone(&self.state),
            announce: Some(format!("live metrics at http://{}/metrics", self.addr)),
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(listener: &TcpListener, state: &Mutex<Exposition>, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        // A failed accept or a client gone mid-answer concerns that client only.
        if let Ok(mut conn) = conn {
            let _ = answer(&mut conn, state);
        }
    }
}

/// Reads one request head and answers it.
fn answer(conn: &mut TcpStream, state: &Mutex<Exposition>) -> std::io::Result<()> {
    conn.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    let route = loop {
        let n = conn.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut headers);
        match req.parse(&head) {
            Ok(httparse::Status::Complete(_)) => {
                break (
                    req.method == Some("GET"),
                    req.path.unwrap_or("").to_string(),
                )
            }
            Ok(httparse::Status::Partial) if head.len() < MAX_HEAD_BYTES => continue,
            _ => return respond(conn, "400 Bad Request", "text/plain", "bad request\n"),
        }
    };
    match route {
        (true, path) if path == "/metrics" || path.starts_with("/metrics?") => {
            let body = state.lock().unwrap_or_else(|e| e.into_inner()).encode();
            respond(conn, "200 OK", CONTENT_TYPE, &body)
        }
        (true, _) => respond(conn, "404 Not Found", "text/plain", "GET /metrics\n"),
        (false, _) => respond(
            conn,
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics\n",
        ),
    }
}

fn respond(
    conn: &mut TcpStream,
    status: &str,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}

/// The caller's observer, with the run's progress and warnings also kept
/// for the scrapes.
pub struct Served<'a> {
    inner: &'a mut dyn Observer,
    state: Arc<Mutex<Exposition>>,
    /// Where to scrape, told when the first run starts (not before: input
    /// refused after the bind stays one line).
    announce: Option<String>,
}

impl Served<'_> {
    fn state(&self) -> std::sync::MutexGuard<'_, Exposition> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Observer for Served<'_> {
    fn started(&mut self, cfg: &RunConfig) {
        let classes = cfg.workload.classes.iter().map(|c| c.to_string()).collect();
        self.state().started(classes, cfg.workload.total_clients());
        if let Some(line) = self.announce.take() {
            self.inner.note(&line);
        }
        self.inner.started(cfg);
    }

    fn progress(&mut self, p: &Progress) {
        self.state().progress(
            (p.elapsed, p.measured, p.in_warmup),
            p.connected,
            &p.transactions,
            p.live.as_deref(),
        );
        self.inner.progress(p);
    }

    fn finished(&mut self) {
        self.inner.finished();
    }

    fn note(&mut self, line: &str) {
        self.inner.note(line);
    }

    fn warning(&mut self, w: &WarningRecord) {
        self.state().warning(&w.code);
        self.inner.warning(w);
    }

    fn guest_stderr(&mut self, bytes: &[u8]) {
        self.inner.guest_stderr(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(request.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn serves_the_exposition_on_get_metrics_only() {
        let server = MetricsServer::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr();
        let ok = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
            "{ok}"
        );
        assert!(ok.ends_with("# EOF\n"), "{ok}");
        assert!(get(addr, "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(addr, "\x01\x02 nonsense\r\n\r\n").starts_with("HTTP/1.1 400"));
    }

    #[test]
    fn steps_share_one_address() {
        let mut a = RunSettings::default();
        let none = RunSettings::default();
        assert_eq!(one_address([&a, &none]).unwrap(), None);
        a.set("metrics_listen", "127.0.0.1:9464").unwrap();
        let mut b = a.clone();
        assert_eq!(
            one_address([&none, &a, &b]).unwrap().as_deref(),
            Some("127.0.0.1:9464")
        );
        b.set("metrics_listen", "127.0.0.1:9465").unwrap();
        match one_address([&a, &b]) {
            Err(RunError::Input(m)) => assert!(m.starts_with("metrics_listen differs"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_address_in_use_is_refused_as_input() {
        let first = MetricsServer::bind("127.0.0.1:0").unwrap();
        let addr = first.local_addr().to_string();
        match MetricsServer::bind(&addr) {
            Err(RunError::Input(m)) => {
                assert!(m.starts_with(&format!("metrics_listen {addr}: ")), "{m}");
                assert!(m.ends_with("e.g. 127.0.0.1:9464"), "{m}");
            }
            other => panic!("{:?}", other.err()),
        }
    }
}
