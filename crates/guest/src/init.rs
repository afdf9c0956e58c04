//! The guest side: stackbench as PID 1 of a guest we booted. Mounts the
//! kernel file systems, puts the results port (ttyS1) in raw mode and says
//! ready, brings `lo` up, raises the open-file limit, runs the job as a CHILD
//! `/init ARGS…` (same binary, pid ≠ 1, so the normal command line) with its
//! output captured, writes the framed result and powers off. Every failure,
//! a panic included, is reported on the port and still powers off: a guest
//! never idles until the host's timeout.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::process::Command;

use crate::frame::{encode_failure, encode_result, JobFile, JOB_PATH, READY};

/// The results port.
const PORT: &str = "/dev/ttyS1";

/// True when this process is PID 1 of a guest built by this crate.
pub fn is_guest_init() -> bool {
    std::process::id() == 1 && Path::new(JOB_PATH).exists()
}

/// Runs the job of `/sb/job.json`, reports and powers the guest off.
pub fn guest_init_main() -> ! {
    let mut port: Option<File> = None;
    let wire = match std::panic::catch_unwind(AssertUnwindSafe(|| run(&mut port))) {
        Ok(Ok(wire)) => wire,
        Ok(Err(message)) => encode_failure(&message),
        Err(panic) => {
            let text = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            encode_failure(&format!("init panicked: {text}"))
        }
    };
    if port.is_none() {
        port = open_port().ok();
    }
    match port {
        Some(mut p) => {
            let _ = p.write_all(&wire);
            // SAFETY: tcdrain on an open descriptor; waits until the UART sent everything.
            unsafe { libc::tcdrain(p.as_raw_fd()) };
        }
        None => eprintln!(
            "stackbench guest init: cannot open {PORT}: {}",
            String::from_utf8_lossy(&wire)
        ),
    }
    power_off()
}

fn run(port: &mut Option<File>) -> Result<Vec<u8>, String> {
    mount("proc", "/proc", "proc")?;
    mount("sysfs", "/sys", "sysfs")?;
    mount("devtmpfs", "/dev", "devtmpfs")?;
    mount("tmpfs", "/tmp", "tmpfs")?;
    let p = port.insert(open_port()?);
    p.write_all(READY)
        .map_err(|e| format!("write {PORT}: {e}"))?;
    loopback_up().map_err(|e| format!("bring lo up: {e}"))?;
    if let Some(address) = cmdline_param(ADDRESS_PARAM) {
        wire_up(&address)?;
    }
    raise_nofile();
    let text = std::fs::read_to_string(JOB_PATH).map_err(|e| format!("read {JOB_PATH}: {e}"))?;
    let job: JobFile = serde_json::from_str(&text).map_err(|e| format!("parse {JOB_PATH}: {e}"))?;
    // A first argument that is an absolute path names another guest program
    // (`/bin/sh -c 'modprobe tls'`): for tests and for looking around.
    let (program, args) = match job.args.split_first() {
        Some((first, rest)) if first.starts_with('/') => (first.as_str(), rest),
        _ => ("/init", job.args.as_slice()),
    };
    let out = Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", "/bin:/sbin:/usr/bin:/usr/sbin")
        .env("HOME", "/root")
        .env("STACKBENCH_IN_GUEST", "1")
        .env(ACCEL_ENV, accel_of_cmdline())
        .current_dir("/root")
        .output()
        .map_err(|e| format!("start {program}: {e}"))?;
    let status = out.status.code().unwrap_or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        128 + out.status.signal().unwrap_or(0)
    });
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    Ok(encode_result(
        release.trim(),
        &out.stdout,
        &out.stderr,
        status,
    ))
}

/// What the job is told of its CPU: `kvm` or `tcg` (emulated), from the
/// `stackbench_accel=` the host put on the kernel command line.
pub const ACCEL_ENV: &str = "STACKBENCH_GUEST_ACCEL";

fn accel_of_cmdline() -> String {
    cmdline_param("stackbench_accel").unwrap_or_default()
}

/// The kernel command line's `stackbench_ip=ADDR/PREFIX`: the guest is one
/// of a pair and this is its address on the wire (its virtio-net adapter).
pub const ADDRESS_PARAM: &str = "stackbench_ip";

/// The wire's adapter in the guest.
pub const WIRE_IFNAME: &str = "eth0";

/// How long the adapter may take to appear once its driver is loaded (an
/// emulated CPU probes PCI slowly).
const ADAPTER_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

fn cmdline_param(name: &str) -> Option<String> {
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let prefix = format!("{name}=");
    cmdline
        .split_whitespace()
        .find_map(|p| p.strip_prefix(prefix.as_str()).map(str::to_string))
}

/// Loads virtio-net (no udev here to do it on the PCI device's uevent),
/// waits for its interface and gives it `address`, up. Busybox `ip` does
/// the configuration: the applet is in every guest already.
fn wire_up(address: &str) -> Result<(), String> {
    for module in ["virtio_pci", "virtio_net"] {
        // A built-in driver (virtio_pci on 6.12 cloud) makes modprobe fail
        // harmlessly; whether the interface appears is what counts.
        let _ = Command::new("/sbin/modprobe").arg(module).output();
    }
    let sys = format!("/sys/class/net/{WIRE_IFNAME}");
    let start = std::time::Instant::now();
    while !Path::new(&sys).exists() {
        if start.elapsed() > ADAPTER_WAIT {
            return Err(format!(
                "no {WIRE_IFNAME} {} s after loading virtio_net: the kernel has no driver for \
                 the pair's virtio-net adapter",
                ADAPTER_WAIT.as_secs()
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    for args in [
        vec!["addr", "add", address, "dev", WIRE_IFNAME],
        vec!["link", "set", WIRE_IFNAME, "up"],
    ] {
        let out = Command::new("/bin/ip")
            .args(&args)
            .output()
            .map_err(|e| format!("start /bin/ip: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    Ok(())
}

fn mount(source: &str, target: &str, fstype: &str) -> Result<(), String> {
    let c = |s: &str| CString::new(s).expect("no NUL in a mount argument");
    let (src, tgt, fs) = (c(source), c(target), c(fstype));
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe { libc::mount(src.as_ptr(), tgt.as_ptr(), fs.as_ptr(), 0, std::ptr::null()) };
    let err = std::io::Error::last_os_error();
    if rc == 0 || err.raw_os_error() == Some(libc::EBUSY) {
        Ok(())
    } else {
        Err(format!("mount {fstype} on {target}: {err}"))
    }
}

/// The results port in raw mode (no `\n` → `\r\n`, no echo, 8 bits), opened
/// `O_NOCTTY`: PID 1 must not acquire it as its controlling terminal.
fn open_port() -> Result<File, String> {
    let port = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(PORT)
        .map_err(|e| format!("open {PORT}: {e}"))?;
    let fd = port.as_raw_fd();
    // SAFETY: termios is plain data, filled by tcgetattr before use.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) == 0 {
            libc::cfmakeraw(&mut t);
            libc::tcsetattr(fd, libc::TCSANOW, &t);
        }
    }
    Ok(port)
}

/// `ip link set lo up` by ioctl (SIOCGIFFLAGS, SIOCSIFFLAGS; netdevice(7)).
fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a fresh socket, closed below; ifreq is plain data with the name set.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo".iter().enumerate() {
            req.ifr_name[i] = *b as libc::c_char;
        }
        let mut rc = libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req);
        if rc == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            rc = libc::ioctl(fd, libc::SIOCSIFFLAGS, &req);
        }
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if rc == 0 {
            Ok(())
        } else {
            Err(err)
        }
    }
}

/// Open files up to the kernel's `nr_open` (population workloads hold
/// thousands of sockets); best effort.
fn raise_nofile() {
    let max = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20);
    let limit = libc::rlimit {
        rlim_cur: max,
        rlim_max: max,
    };
    // SAFETY: setrlimit with a valid struct.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) };
}

fn power_off() -> ! {
    // SAFETY: sync and reboot take no pointers; PID 1 may power off.
    unsafe {
        libc::sync();
        libc::reboot(libc::RB_POWER_OFF);
    }
    // reboot only returns on failure: PID 1 exiting panics the kernel, and
    // panic=-1 with qemu's -no-reboot ends qemu too.
    std::process::exit(1)
}
