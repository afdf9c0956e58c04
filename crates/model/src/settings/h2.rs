//! Protocol h2's flow-control settings: the windows and the frame size the
//! client announces, resolved into [`H2Params`] that the driver's codec is
//! built from.

use serde::{Deserialize, Serialize};

/// The `h2_window` and `h2_connection_window` default: 2^30 − 1 bytes,
/// h2load's (`-w 30 -W 30`).
pub const DEFAULT_WINDOW: u32 = (1 << 30) - 1;
/// The `h2_max_frame` default: SETTINGS_MAX_FRAME_SIZE's initial value.
pub const DEFAULT_MAX_FRAME: u32 = 16_384;

/// What a run's HTTP/2 clients announce: the stream window (their
/// SETTINGS_INITIAL_WINDOW_SIZE), the connection window (raised to it by a
/// WINDOW_UPDATE) and the largest frame payload they accept
/// (SETTINGS_MAX_FRAME_SIZE), in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct H2Params {
    pub window_bytes: u32,
    pub connection_window_bytes: u32,
    pub max_frame_bytes: u32,
}

impl Default for H2Params {
    fn default() -> Self {
        H2Params {
            window_bytes: DEFAULT_WINDOW,
            connection_window_bytes: DEFAULT_WINDOW,
            max_frame_bytes: DEFAULT_MAX_FRAME,
        }
    }
}

impl H2Params {
    /// The largest response body the windows admit without a WINDOW_UPDATE
    /// in the middle of it (the client returns its windows between
    /// transactions).
    pub fn max_response_bytes(&self) -> u64 {
        u64::from(self.window_bytes.min(self.connection_window_bytes))
    }
}
