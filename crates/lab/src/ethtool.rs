//! Offloads (TSO, GSO, GRO, TX and RX checksumming) set and read through the
//! `SIOCETHTOOL` ioctl, in the calling thread's namespace.
//!
//! The legacy per-feature commands (`ETHTOOL_STSO`, `ETHTOOL_GGRO`…) are used
//! rather than `ETHTOOL_SFEATURES`: each names its feature group directly,
//! where SFEATURES needs the kernel's feature-name string table first to find
//! bit numbers. The kernel maps each legacy command onto the same feature
//! bits (`ethtool_set_one_feature`), so the result is identical; the kernel
//! may still refuse or drop a feature (TSO without TX checksumming), which is
//! why `show` reads every value back.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::spec::Offloads;

const SIOCETHTOOL: libc::c_ulong = 0x8946;

/// (get, set) legacy command pairs, in the order of [`Offloads::NAMES`].
const COMMANDS: [(u32, u32); 5] = [
    (0x1e, 0x1f), // ETHTOOL_GTSO, ETHTOOL_STSO
    (0x23, 0x24), // ETHTOOL_GGSO, ETHTOOL_SGSO
    (0x2b, 0x2c), // ETHTOOL_GGRO, ETHTOOL_SGRO
    (0x16, 0x17), // ETHTOOL_GTXCSUM, ETHTOOL_STXCSUM
    (0x14, 0x15), // ETHTOOL_GRXCSUM, ETHTOOL_SRXCSUM
];

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// `struct ifreq` with its `ifr_data` member (40 bytes on 64-bit Linux),
/// pointing at the command's own struct (`ethtool_value`,
/// `ethtool_coalesce`, …).
#[repr(C)]
struct IfreqData<T> {
    name: [u8; libc::IFNAMSIZ],
    data: *mut T,
    _rest: [u8; 16],
}

pub(crate) fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is fresh and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ethtool(sock: &OwnedFd, ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let mut value = EthtoolValue { cmd, data };
    // SAFETY: EthtoolValue is `struct ethtool_value`, the struct every
    // legacy get/set command of COMMANDS reads and writes.
    unsafe { siocethtool(sock, ifname, &mut value)? };
    Ok(value.data)
}

/// One `SIOCETHTOOL` request on `ifname`: the kernel reads `data`'s
/// leading command word and reads or writes the rest of it.
///
/// # Safety
/// `T` must be `#[repr(C)]` and the kernel's struct for the command in its
/// first `u32`, so the kernel neither reads nor writes past it.
pub(crate) unsafe fn siocethtool<T>(sock: &OwnedFd, ifname: &str, data: &mut T) -> io::Result<()> {
    let mut req = IfreqData {
        name: [0; libc::IFNAMSIZ],
        data,
        _rest: [0; 16],
    };
    let name = ifname.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    req.name[..name.len()].copy_from_slice(name);
    // SAFETY: SIOCETHTOOL reads the ifreq and the struct it points to, which
    // the caller vouches for; both outlive the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL as _, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets the offloads of `ifname`; the error names the offload refused.
pub fn set(ifname: &str, offloads: &Offloads) -> Result<(), (&'static str, io::Error)> {
    let sock = socket().map_err(|e| ("socket", e))?;
    for ((name, on), (_, set)) in Offloads::NAMES.iter().zip(offloads.values()).zip(COMMANDS) {
        ethtool(&sock, ifname, set, u32::from(on)).map_err(|e| (*name, e))?;
    }
    Ok(())
}

/// Reads the offloads of `ifname` back.
pub fn get(ifname: &str) -> io::Result<Offloads> {
    let sock = socket()?;
    let mut out = Offloads::default();
    for (name, (get, _)) in Offloads::NAMES.iter().zip(COMMANDS) {
        out.set(name, ethtool(&sock, ifname, get, 0)? != 0);
    }
    Ok(out)
}
