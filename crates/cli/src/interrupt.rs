//! Ctrl-C and SIGTERM during a measurement: the run in progress ends early,
//! and what it measured is printed, marked incomplete (exit status 3).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use stackbench_runner::{Observer, Runner};

/// Set by the handler; the runner reads it.
static STOP: AtomicBool = AtomicBool::new(false);

/// A runner for the binary: its progress and notes on the terminal, ended
/// early by Ctrl-C once a responder session is open (before that, Ctrl-C
/// ends the process as usual).
pub fn runner(terminal: &mut dyn Observer) -> Runner<'_> {
    Runner::new(terminal, &STOP).on_session_open(install)
}

/// The flag Ctrl-C and SIGTERM set, with the handler installed (for what
/// runs without a [`Runner`], such as an agent).
pub fn stop_flag() -> &'static AtomicBool {
    install();
    &STOP
}

/// Installs the handler that sets the flag (once per process).
fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Fails only when another handler is installed; there is none.
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::Relaxed));
    });
}
