//! Interrupt and NAPI coalescing of a lab interface: the per-device
//! `napi_defer_hard_irqs` and `gro_flush_timeout` the kernel keeps in sysfs
//! (`/sys/class/net/IF/…`), set and read in the calling thread's network
//! namespace, and the device's `ethtool -C` coalescing, read through the
//! `ETHTOOL_GCOALESCE` ioctl (veth has none, which the read-back says).
//!
//! sysfs shows the interfaces of the namespace that mounted it, so the
//! calling thread first takes a mount namespace of its own and mounts a
//! fresh sysfs on /sys there, as `ip netns exec` does (iproute2,
//! lib/namespace.c `netns_switch`). The thread's mount namespace ends with
//! the thread, so nothing is left mounted.
//!
//! The values are the Linux counterpart of z/OS's Dynamic LAN Idle and
//! Optimized Latency Mode: defer N hard interrupts and let GRO hold packets
//! up to the timeout (throughput), or neither (latency). See the kernel's
//! Documentation/networking/napi.rst, "Deferring hard IRQs".

use std::ffi::CString;
use std::io;
use std::path::PathBuf;

/// The two sysfs values (both 0 is the kernel's default: no deferral).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Napi {
    /// Hard interrupts NAPI defers after a poll that found work.
    pub defer_hard_irqs: u32,
    /// How long GRO may hold packets before flushing, in ns (also the
    /// timer that re-arms polling while interrupts are deferred).
    pub gro_flush_timeout_ns: u64,
}

/// Largest `napi_defer_hard_irqs` the kernel takes (`S32_MAX`).
pub const DEFER_MAX: u32 = i32::MAX as u32;

/// What the kernel holds for one interface.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct NapiState {
    pub napi: Napi,
    /// The device's `ethtool -C` coalescing as `rx-usecs N, rx-frames N,
    /// tx-usecs N, tx-frames N`, or why there is none ("not supported by
    /// veth").
    pub coalesce: String,
}

/// Moves the calling thread into a mount namespace of its own with a sysfs
/// of its network namespace on /sys. Call it on a thread that is about to
/// end (as [`crate::netns::run_in`]'s are).
pub fn private_sysfs() -> io::Result<()> {
    // SAFETY: unshare(2) of this thread's mount namespace (implies an
    // unshared fs_struct, allowed for one thread of many).
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let root = CString::new("/").expect("no NUL");
    let sys = CString::new("/sys").expect("no NUL");
    let kind = CString::new("sysfs").expect("no NUL");
    // SAFETY: mount(2) with valid C strings; the propagation change keeps
    // the new sysfs from reaching the host's mount namespace.
    unsafe {
        if libc::mount(
            std::ptr::null(),
            root.as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        if libc::mount(
            kind.as_ptr(),
            sys.as_ptr(),
            kind.as_ptr(),
            0,
            std::ptr::null(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn file(ifname: &str, name: &str) -> PathBuf {
    PathBuf::from(format!("/sys/class/net/{ifname}/{name}"))
}

/// Whether the kernel has per-device NAPI deferral (Linux 5.10+).
pub fn supported(ifname: &str) -> bool {
    file(ifname, "napi_defer_hard_irqs").exists()
}

/// Writes both values of `ifname` (after [`private_sysfs`]).
pub fn set(ifname: &str, napi: &Napi) -> io::Result<()> {
    std::fs::write(
        file(ifname, "napi_defer_hard_irqs"),
        napi.defer_hard_irqs.to_string(),
    )?;
    std::fs::write(
        file(ifname, "gro_flush_timeout"),
        napi.gro_flush_timeout_ns.to_string(),
    )
}

/// Reads both values of `ifname` back (after [`private_sysfs`]).
pub fn get(ifname: &str) -> io::Result<Napi> {
    let read = |name| -> io::Result<u64> {
        let text = std::fs::read_to_string(file(ifname, name))?;
        text.trim()
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{name}: {e}")))
    };
    Ok(Napi {
        defer_hard_irqs: read("napi_defer_hard_irqs")? as u32,
        gro_flush_timeout_ns: read("gro_flush_timeout")?,
    })
}

/// `struct ethtool_coalesce`: the command and 22 u32 fields.
#[repr(C)]
#[derive(Default)]
struct Coalesce {
    cmd: u32,
    fields: [u32; 22],
}

const ETHTOOL_GCOALESCE: u32 = 0x0e;

/// The device's interrupt coalescing (`ethtool -c`), or why there is none;
/// `driver` names the device kind for the message (veth, …).
pub fn coalesce(ifname: &str, driver: &str) -> String {
    match read_coalesce(ifname) {
        // rx_coalesce_usecs, rx_max_coalesced_frames, …, tx_coalesce_usecs (5), tx_max_coalesced_frames (6)
        Ok(f) => format!(
            "rx-usecs {}, rx-frames {}, tx-usecs {}, tx-frames {}",
            f[0], f[1], f[4], f[5]
        ),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            format!("not supported by {driver}")
        }
        Err(e) => format!("unreadable: {e}"),
    }
}

fn read_coalesce(ifname: &str) -> io::Result<[u32; 22]> {
    let sock = crate::siocethtool::socket()?;
    let mut value = Coalesce {
        cmd: ETHTOOL_GCOALESCE,
        ..Coalesce::default()
    };
    // SAFETY: Coalesce is `struct ethtool_coalesce` (its command word and
    // 22 u32 fields), what ETHTOOL_GCOALESCE writes.
    unsafe { crate::siocethtool::request(&sock, ifname, &mut value)? };
    Ok(value.fields)
}
