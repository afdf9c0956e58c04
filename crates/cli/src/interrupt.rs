//! Ctrl-C and SIGTERM during a measurement: the run in progress ends early,
//! and what it measured is printed, marked incomplete (exit status 3).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// Set by the handler; the runner reads it.
static STOP: AtomicBool = AtomicBool::new(false);

/// The flag the runner ends a run on, with the handler that sets it
/// installed (once per process).
pub fn stop_flag() -> &'static AtomicBool {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Fails only when another handler is installed; there is none.
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));
    });
    &STOP
}
