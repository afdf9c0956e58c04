//! Netlink requests' errors as [`LabError`]s (a missing kernel feature
//! named with its config option) and the socket every lab step opens; shared
//! by `up`, `down`, `show`, `probe`, `ipsec` and `owner`.

use crate::error::{LabError, Result};
use crate::netlink::{Netlink, NlError};

/// A netlink socket in the calling thread's namespace.
pub(crate) fn netlink() -> Result<Netlink> {
    Netlink::open().map_err(|e| LabError::os("open netlink socket", e))
}

/// Maps a netlink error while doing `action` to a [`LabError`].
pub(crate) fn nl_error(action: impl Into<String>, e: NlError) -> LabError {
    LabError::kernel(action, e.source, e.message)
}

/// A qdisc request's error; an unknown kind names the kernel option.
pub fn qdisc_error(kind: &str, action: &str, e: NlError) -> LabError {
    if matches!(e.errno(), Some(libc::ENOENT) | Some(libc::EOPNOTSUPP)) {
        return LabError::KernelFeature {
            action: action.to_string(),
            feature: format!("{kind} qdisc"),
            config: format!("CONFIG_NET_SCH_{}", kind.to_ascii_uppercase()),
        };
    }
    nl_error(action, e)
}
