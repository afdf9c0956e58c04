//! A handle on one responder worker thread: its command channel and how to
//! wake it (its epoll waker, or the eventfd an io_uring worker keeps a read
//! armed on). A leaf shared by the pool (`responder/mod.rs`) and a test's
//! own workers (`own.rs`), which the pool starts.

use std::os::fd::OwnedFd;
use std::sync::mpsc::Sender;
use std::sync::Arc;

use mio::Waker;

use super::uring;
use super::worker::Command;

/// One worker thread, as the pool and a test's own workers hold it.
pub(super) struct WorkerHandle {
    pub(super) commands: Sender<Command>,
    pub(super) waker: Wake,
}

/// How a worker is woken for its commands.
pub(super) enum Wake {
    Epoll(Waker),
    /// An io_uring worker keeps a read of this eventfd armed.
    Uring(Arc<OwnedFd>),
}

impl WorkerHandle {
    pub(super) fn command(&self, cmd: Command) {
        let _ = self.commands.send(cmd);
        match &self.waker {
            Wake::Epoll(w) => drop(w.wake()),
            Wake::Uring(fd) => uring::wake_up(fd),
        }
    }
}
