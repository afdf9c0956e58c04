//! The `SIOCETHTOOL` ioctl: one request on a named interface in the calling
//! thread's namespace, whatever the command's struct. The offloads
//! ([`crate::ethtool`]) and the coalescing read-back ([`crate::napi`]) both
//! go through it.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SIOCETHTOOL: libc::c_ulong = 0x8946;

/// `struct ifreq` with its `ifr_data` member (40 bytes on 64-bit Linux),
/// pointing at the command's own struct (`ethtool_value`,
/// `ethtool_coalesce`, …).
#[repr(C)]
struct IfreqData<T> {
    name: [u8; libc::IFNAMSIZ],
    data: *mut T,
    _rest: [u8; 16],
}

/// A socket to send the requests on.
pub(crate) fn socket() -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2); the descriptor is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is fresh and owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One `SIOCETHTOOL` request on `ifname`: the kernel reads `data`'s
/// leading command word and reads or writes the rest of it.
///
/// # Safety
/// `T` must be `#[repr(C)]` and the kernel's struct for the command in its
/// first `u32`, so the kernel neither reads nor writes past it.
pub(crate) unsafe fn request<T>(sock: &OwnedFd, ifname: &str, data: &mut T) -> io::Result<()> {
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
