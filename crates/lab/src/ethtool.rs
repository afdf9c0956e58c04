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
use std::os::fd::OwnedFd;

use crate::spec::Offloads;

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

fn ethtool(sock: &OwnedFd, ifname: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let mut value = EthtoolValue { cmd, data };
    // SAFETY: EthtoolValue is `struct ethtool_value`, the struct every
    // legacy get/set command of COMMANDS reads and writes.
    unsafe { crate::siocethtool::request(sock, ifname, &mut value)? };
    Ok(value.data)
}

/// Sets the offloads of `ifname`; the error names the offload refused.
pub fn set(ifname: &str, offloads: &Offloads) -> Result<(), (&'static str, io::Error)> {
    let sock = crate::siocethtool::socket().map_err(|e| ("socket", e))?;
    for ((name, on), (_, set)) in Offloads::NAMES.iter().zip(offloads.values()).zip(COMMANDS) {
        ethtool(&sock, ifname, set, u32::from(on)).map_err(|e| (*name, e))?;
    }
    Ok(())
}

/// Reads the offloads of `ifname` back.
pub fn get(ifname: &str) -> io::Result<Offloads> {
    let sock = crate::siocethtool::socket()?;
    let mut out = Offloads::default();
    for (name, (get, _)) in Offloads::NAMES.iter().zip(COMMANDS) {
        out.set(name, ethtool(&sock, ifname, get, 0)? != 0);
    }
    Ok(out)
}
