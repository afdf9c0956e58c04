//! A private AMQP 1.0 broker for the `broker` tier: Debian's RabbitMQ
//! (3.10, with its `rabbitmq_amqp1_0` plugin) started by the test on free
//! loopback ports, with its data, logs, Erlang cookie and port mapper of
//! its own, and stopped — every process it started, its `epmd` too — when
//! the [`Broker`] is dropped.
//!
//! Why RabbitMQ and not Debian's ActiveMQ 5.17: the Debian package of
//! ActiveMQ ships no AMQP transport (no `activemq-amqp` jar, no proton-j in
//! the archive), so it does not speak AMQP 1.0 at all; RabbitMQ's plugin is
//! in the `rabbitmq-server` package. Started as root with the plugin
//! enabled through its own plugins file (what `rabbitmq-plugins enable
//! --offline` writes), it answered the AMQP 1.0 SASL header 14.6 s after
//! start on the 2-CPU development VM under load.
//!
//! Ready means AMQP 1.0 is served: the helper sends the SASL protocol
//! header (`AMQP 3 1 0 0`) and waits for the broker's own header back
//! (RabbitMQ requires SASL; it answers the plain AMQP header with the SASL
//! one, so the SASL header is the one both agree on). An open port alone is
//! not enough: RabbitMQ listens before its plugins have started.
//!
//! ```no_run
//! use stackbench_testkit::broker::Broker;
//! let broker = match Broker::start() {
//!     Ok(b) => b,
//!     Err(skip) => return skip.skip("my_test"),
//! };
//! let url = broker.url(); // amqp://127.0.0.1:PORT
//! ```

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::{skip, Tier};

/// The AMQP 1.0 SASL protocol header (AMQP 1.0 part 5.3.1).
pub const SASL_HEADER: [u8; 8] = *b"AMQP\x03\x01\x00\x00";
/// The AMQP 1.0 protocol header (AMQP 1.0 part 2.2).
pub const AMQP_HEADER: [u8; 8] = *b"AMQP\x00\x01\x00\x00";

/// How long the broker may take to serve AMQP 1.0 (a start-up bound, not a
/// timing claim: ~15 s on a loaded 2-CPU VM, ~20 s measured in CI).
const READY_WITHIN: Duration = Duration::from_secs(120);
/// How long a stopping broker may take before it is killed.
const STOP_WITHIN: Duration = Duration::from_secs(15);

/// Why a broker could not be started: the test skips with it (a failure
/// where `STACKBENCH_REQUIRE` names the `broker` tier).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip(pub String);

impl Skip {
    /// Skips `test` for this reason ([`skip`] in the broker tier).
    #[track_caller]
    pub fn skip(&self, test: &str) {
        skip(Tier::Broker, test, &self.0);
    }
}

/// A running private broker; stopped, with everything it started, on drop.
pub struct Broker {
    child: Child,
    port: u16,
    epmd_port: u16,
    dir: PathBuf,
}

/// The broker's start script: Debian's (the one `/usr/sbin/rabbitmq-server`
/// runs as the rabbitmq user; run directly, it runs as this user with the
/// environment given here), else one on PATH.
pub fn server_script() -> Option<PathBuf> {
    let debian = PathBuf::from("/usr/lib/rabbitmq/bin/rabbitmq-server");
    if debian.is_file() {
        return Some(debian);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("rabbitmq-server"))
        .find(|p| p.is_file())
}

impl Broker {
    /// Starts a broker on free loopback ports and waits until it serves
    /// AMQP 1.0; `Err` says why not (no broker installed, or it did not
    /// become ready, with the end of its log).
    pub fn start() -> Result<Broker, Skip> {
        let Some(script) = server_script() else {
            return Err(Skip(
                "no rabbitmq-server (apt-get install rabbitmq-server)".into(),
            ));
        };
        let dir = private_dir().map_err(|e| Skip(format!("a directory for the broker: {e}")))?;
        let ports = free_ports(3).map_err(|e| Skip(format!("free loopback ports: {e}")))?;
        let (port, dist_port, epmd_port) = (ports[0], ports[1], ports[2]);
        let child = spawn(&script, &dir, (port, dist_port, epmd_port)).map_err(|e| {
            let _ = std::fs::remove_dir_all(&dir);
            Skip(format!("{}: {e}", script.display()))
        })?;
        let mut broker = Broker {
            child,
            port,
            epmd_port,
            dir,
        };
        broker.wait_ready()?;
        Ok(broker)
    }

    /// `amqp://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("amqp://127.0.0.1:{}", self.port)
    }

    /// The AMQP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The AMQP listener's address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The port of the broker's own Erlang port mapper (`epmd`) on 127.0.0.1.
    pub fn epmd_port(&self) -> u16 {
        self.epmd_port
    }

    /// The broker's data directory (its Mnesia and message store).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("mnesia")
    }

    /// The processes the start script became and started (the Erlang VM,
    /// `beam.smp`, and its helpers), sorted; not `epmd`, which detaches.
    pub fn pids(&self) -> Vec<u32> {
        descendants(self.child.id())
    }

    /// Polls until the broker answers the AMQP 1.0 SASL header with its
    /// own; fails early when the broker's process ends.
    fn wait_ready(&mut self) -> Result<(), Skip> {
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if amqp_header_answered(self.addr(), &SASL_HEADER) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(Skip(format!(
                    "rabbitmq-server exited ({status}) before serving AMQP 1.0: {}",
                    self.log_tail()
                )));
            }
            if Instant::now() > deadline {
                return Err(Skip(format!(
                    "rabbitmq-server did not serve AMQP 1.0 on {} within {} s: {}",
                    self.addr(),
                    READY_WITHIN.as_secs(),
                    self.log_tail()
                )));
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The last lines of the broker's output and log, on one line.
    fn log_tail(&self) -> String {
        let mut text = String::new();
        for file in ["out.log", "log/rabbit.log"] {
            text.push_str(&std::fs::read_to_string(self.dir.join(file)).unwrap_or_default());
        }
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = &lines[lines.len().saturating_sub(4)..];
        tail.join(" | ")
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        // The VM stops cleanly on SIGTERM; whatever is left is killed.
        let pids = self.pids();
        for &pid in &pids {
            signal(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + STOP_WITHIN;
        while pids.iter().any(|&p| alive(p)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        for &pid in &pids {
            signal(pid, libc::SIGKILL);
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // epmd detached from the VM (a daemon, parent 1): found by the port
        // given to it alone.
        for pid in epmd_of(self.epmd_port) {
            signal(pid, libc::SIGKILL);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether a connection to `addr` that sends `header` gets an AMQP 1.0
/// protocol header (SASL or plain) back.
pub fn amqp_header_answered(addr: SocketAddr, header: &[u8; 8]) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let mut back = [0u8; 8];
    s.write_all(header).is_ok()
        && s.read_exact(&mut back).is_ok()
        && (back == SASL_HEADER || back == AMQP_HEADER)
}

/// Starts the script with everything in `dir`: node name, ports (AMQP,
/// Erlang distribution, epmd), Mnesia, logs, plugins (AMQP 1.0 enabled),
/// config (AMQP on 127.0.0.1 only) and `HOME` (the Erlang cookie).
fn spawn(script: &Path, dir: &Path, (port, dist, epmd): (u16, u16, u16)) -> std::io::Result<Child> {
    std::fs::write(dir.join("enabled_plugins"), "[rabbitmq_amqp1_0].\n")?;
    std::fs::write(
        dir.join("rabbit.conf"),
        format!("listeners.tcp.default = 127.0.0.1:{port}\n"),
    )?;
    let out = std::fs::File::create(dir.join("out.log"))?;
    let d = |sub: &str| dir.join(sub);
    Command::new(script)
        .env("HOME", dir)
        .env("RABBITMQ_NODENAME", format!("stackbench{port}@localhost"))
        .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
        .env("RABBITMQ_NODE_PORT", port.to_string())
        .env("RABBITMQ_DIST_PORT", dist.to_string())
        .env("ERL_EPMD_PORT", epmd.to_string())
        .env("ERL_EPMD_ADDRESS", "127.0.0.1")
        .env("RABBITMQ_MNESIA_BASE", d("mnesia"))
        .env("RABBITMQ_LOG_BASE", d("log"))
        .env("RABBITMQ_LOGS", d("log/rabbit.log"))
        .env("RABBITMQ_PID_FILE", d("rabbit.pid"))
        .env("RABBITMQ_ENABLED_PLUGINS_FILE", d("enabled_plugins"))
        .env("RABBITMQ_CONFIG_FILE", d("rabbit"))
        .env_remove("RABBITMQ_ALLOW_INPUT")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
}

/// A new empty directory under the temporary directory.
fn private_dir() -> std::io::Result<PathBuf> {
    static N: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "stackbench-broker-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `n` distinct free loopback ports (the listeners close before the broker
/// binds them; held together so no two are the same).
fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let held: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()?;
    held.iter()
        .map(|l| l.local_addr().map(|a| a.port()))
        .collect()
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

fn parent_of(pid: u32) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    text[text.rfind(')')? + 1..]
        .split_ascii_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `root` (when alive) and every process below it, sorted.
fn descendants(root: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = pids()
        .into_iter()
        .filter_map(|p| Some((p, parent_of(p)?)))
        .collect();
    let mut set: Vec<u32> = parents
        .iter()
        .filter(|(p, _)| *p == root)
        .map(|(p, _)| *p)
        .collect();
    loop {
        let more: Vec<u32> = parents
            .iter()
            .filter(|(p, parent)| set.contains(parent) && !set.contains(p))
            .map(|(p, _)| *p)
            .collect();
        if more.is_empty() {
            break;
        }
        set.extend(more);
    }
    set.sort_unstable();
    set
}

/// The `epmd` processes started with `ERL_EPMD_PORT=port` in their
/// environment (this helper's own; another broker's epmd has another port).
fn epmd_of(port: u16) -> Vec<u32> {
    let want = format!("ERL_EPMD_PORT={port}");
    pids()
        .into_iter()
        .filter(|p| {
            std::fs::read_link(format!("/proc/{p}/exe"))
                .is_ok_and(|exe| exe.file_name().is_some_and(|n| n == "epmd"))
        })
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == want.as_bytes()))
        })
        .collect()
}

fn signal(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) on a pid this helper started (the broker's tree or
    // its epmd); a pid already gone gives ESRCH, which is ignored.
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Alive and not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rfind(')')
            .and_then(|i| s[i + 1..].split_ascii_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}
