//! A pair of guests, the guests' side: the responder's guest runs the
//! hidden `__guest-peer CONTROL BYE` subcommand (a `stackbench serve` on
//! the wire's address until the driver's guest says goodbye, then its
//! adapter as JSON); the driver's guest runs `__guest-step` with a
//! [`PairStep`] (waits for that responder, runs the step against it as a
//! `target`, reads its own adapter, says goodbye). The control connection
//! crosses the same wire as the data: one more TCP connection on a link the
//! data does not fill (a handful of messages per class; the responder's
//! counters at the end), so no second adapter.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use stackbench_record::GuestAdapter;

use crate::error::{input, RunError};

/// The hidden subcommand the responder's guest runs.
pub const PEER_SUBCOMMAND: &str = "__guest-peer";
/// The responder's last argument when the step's transport is smc.
pub const SMC_R_ARG: &str = "smc-r";
/// The responder's control port on the wire (serve's default).
pub const CONTROL_PORT: u16 = 12870;
/// Where the responder's guest waits for the driver's goodbye.
pub const BYE_PORT: u16 = 12869;
/// How long the driver's guest waits for the responder's control port: both
/// guests boot at once, an emulated one in 5-25 s (2 CPUs shared).
const PEER_WAIT: Duration = Duration::from_secs(120);

/// The driver's part of a pair, in its step file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PairStep {
    /// The responder's control address (the step's `target`).
    pub(crate) control: String,
    /// Where to say goodbye once the step ended.
    pub(crate) bye: String,
}

impl PairStep {
    pub(crate) fn new(responder_address: &str) -> PairStep {
        PairStep {
            control: format!("{responder_address}:{CONTROL_PORT}"),
            bye: format!("{responder_address}:{BYE_PORT}"),
        }
    }

    /// Waits until the responder's control port accepts.
    pub(crate) fn wait_for_responder(&self) -> Result<(), RunError> {
        let addr: SocketAddr = self
            .control
            .parse()
            .or_else(|e| input(format!("pair: control address {}: {e}", self.control)))?;
        let start = Instant::now();
        loop {
            match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
                Ok(_) => return Ok(()),
                Err(e) if start.elapsed() > PEER_WAIT => {
                    return input(format!(
                        "pair: the responder's guest did not answer on {} within {} s ({e}); \
                         its console is in the error above",
                        self.control,
                        PEER_WAIT.as_secs()
                    ))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Tells the responder's guest to end (best effort: if it is gone, the
    /// host ends it).
    pub(crate) fn say_goodbye(&self) {
        if let Ok(addr) = self.bye.parse::<SocketAddr>() {
            if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) {
                let _ = s.write_all(b"bye\n");
                let mut ack = [0u8; 3];
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = s.read(&mut ack);
            }
        }
    }
}

/// The responder's guest: `__guest-peer CONTROL_ADDR BYE_PORT [smc-r]`.
/// Starts `stackbench serve --listen CONTROL_ADDR --open` (the wire reaches
/// only the two guests), with an rxe device and the UEID first for
/// `smc-r`, waits for the goodbye, stops the responder and returns its
/// adapter (with the SMC-R counters) as one line of JSON.
pub fn peer_main(args: &[String]) -> Result<String, RunError> {
    let (control, bye_port, smc) = match args {
        [c, b] => (c, b, false),
        [c, b, m] if m == SMC_R_ARG => (c, b, true),
        _ => {
            return input(format!(
                "{PEER_SUBCOMMAND}: expected CONTROL_ADDR BYE_PORT [{SMC_R_ARG}]"
            ))
        }
    };
    if smc {
        crate::smc_r::prepare(stackbench_guest::WIRE_IFNAME).or_else(input)?;
    }
    let bye_port: u16 = bye_port
        .parse()
        .or_else(|e| input(format!("{PEER_SUBCOMMAND}: bye port {bye_port}: {e}")))?;
    let host = control
        .rsplit_once(':')
        .map_or(control.as_str(), |(h, _)| h);
    let bye = TcpListener::bind((host, bye_port))?;
    let mut adapter = read_adapter(stackbench_guest::WIRE_IFNAME, host);
    let mut responder = ServeChild(
        Command::new(std::env::current_exe()?)
            .args(["serve", "--listen", control, "--open"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()?,
    );
    let (mut conn, _) = bye.accept()?;
    let mut line = [0u8; 4];
    let _ = conn.read(&mut line);
    responder.stop();
    if smc {
        adapter.smc_r = Some(crate::smc_r::counters().or_else(input)?);
    }
    let _ = conn.write_all(b"ok\n");
    Ok(serde_json::to_string(&adapter)?)
}

/// The responder process, ended when dropped.
struct ServeChild(Child);

impl ServeChild {
    fn stop(&mut self) {
        // SIGTERM first: serve ends its tests and exits.
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(3) {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            self.stop();
        }
    }
}

/// The guest's adapter on the wire: driver, address, queues, MTU and
/// offloads as the kernel reports them.
pub(crate) fn read_adapter(ifname: &str, address: &str) -> GuestAdapter {
    let sys = Path::new("/sys/class/net").join(ifname);
    let read = |rel: &str| {
        std::fs::read_to_string(sys.join(rel))
            .map(|t| t.trim().to_string())
            .unwrap_or_default()
    };
    let driver = std::fs::read_link(sys.join("device/driver"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let queues = |prefix: &str| {
        std::fs::read_dir(sys.join("queues"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
                    .count() as u32
            })
            .unwrap_or(0)
    };
    let prefix = address_prefix();
    let mut adapter = GuestAdapter {
        ifname: ifname.to_string(),
        driver,
        address: format!("{address}{prefix}"),
        mac: read("address"),
        mtu_bytes: read("mtu").parse().unwrap_or(0),
        rx_queues: queues("rx-"),
        tx_queues: queues("tx-"),
        ..GuestAdapter::default()
    };
    match stackbench_lab::ethtool::get(ifname) {
        Ok(o) => {
            for (name, on) in stackbench_lab::Offloads::NAMES.iter().zip(o.values()) {
                adapter.offloads.insert(name.to_string(), on);
            }
        }
        Err(e) => adapter.offloads_error = e.to_string(),
    }
    adapter
}

/// `/24` from the kernel command line's `stackbench_ip=ADDR/24`.
fn address_prefix() -> String {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    cmdline
        .split_whitespace()
        .find_map(|p| p.strip_prefix("stackbench_ip="))
        .and_then(|a| a.split_once('/'))
        .map(|(_, p)| format!("/{p}"))
        .unwrap_or_default()
}
