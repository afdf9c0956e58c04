//! Worker threads started for one test (`class_workers`): a class of a mix
//! served on threads of its own, so that their CPU time is that class's alone.
//! The shared pool cannot say which of its tests used its CPU; these threads
//! serve nothing else, and every sample reports their run time
//! ([`stackbench_metrics::threads`]). They stop with their test.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use stackbench_metrics::threads::ThreadTimes;
use stackbench_model::IoMode;

use super::worker::{Backend, Command, Worker};
use super::{lock, uring, Wake, WorkerHandle};

/// One test's worker threads.
pub(super) struct OwnWorkers {
    pub(super) handles: Vec<WorkerHandle>,
    threads: Vec<JoinHandle<()>>,
    /// Kernel thread ids, each pushed by its thread as it starts.
    tids: Arc<Mutex<Vec<u32>>>,
}

impl OwnWorkers {
    /// Starts `n` workers of backend `io` (epoll or io_uring, as the test
    /// would have had from the pool) for test `id`, pinned to `cpus` (empty:
    /// wherever the process may run).
    pub(super) fn start(
        io: IoMode,
        (n, cpus): (u32, &[usize]),
        id: u64,
    ) -> Result<OwnWorkers, String> {
        // As the pool would: io_uring where usable, else epoll.
        let uring = io == IoMode::Uring && crate::iomode::uring_available().is_ok();
        let tids = Arc::new(Mutex::new(Vec::new()));
        let (mut handles, mut threads) = (Vec::new(), Vec::new());
        let cannot = |e: std::io::Error| format!("cannot start a worker of the test's own: {e}");
        for i in 0..n.max(1) {
            let (tx, rx) = mpsc::channel();
            let tids = Arc::clone(&tids);
            let cpus = cpus.to_vec();
            let name = format!("serve-t{id}-w{i}");
            let (waker, run): (Wake, Box<dyn FnOnce() + Send>) = if uring {
                let fd = uring::eventfd().map_err(cannot)?;
                let wake = Arc::clone(&fd);
                let run = move || match uring::UringWorker::new(rx, wake) {
                    Ok(w) => drop(w.run()),
                    Err(e) => eprintln!("stackbench serve: io_uring worker of test {id}: {e}"),
                };
                (Wake::Uring(fd), Box::new(run))
            } else {
                let (poll, waker) = Worker::poll_and_waker().map_err(cannot)?;
                let worker = Worker::new(poll, rx);
                (Wake::Epoll(waker), Box::new(move || drop(worker.run())))
            };
            let thread = thread::Builder::new()
                .name(name)
                .spawn(move || {
                    if !cpus.is_empty() {
                        if let Err(e) = crate::affinity::pin_current_thread(&cpus) {
                            eprintln!("stackbench serve: worker of test {id} not pinned: {e}");
                        }
                    }
                    // SAFETY: gettid has no preconditions.
                    lock(&tids).push(unsafe { libc::gettid() } as u32);
                    run();
                })
                .map_err(cannot)?;
            threads.push(thread);
            handles.push(WorkerHandle {
                commands: tx,
                waker,
            });
        }
        Ok(OwnWorkers {
            handles,
            threads,
            tids,
        })
    }

    /// The workers' CPU time now, summed; `None` when a thread cannot be read
    /// (or has not started), so that no partial sum passes for the test's.
    pub(super) fn times(&self) -> Option<ThreadTimes> {
        let tids = lock(&self.tids);
        if tids.len() != self.handles.len() {
            return None;
        }
        let mut sum = ThreadTimes::default();
        for &tid in tids.iter() {
            sum.add(&ThreadTimes::of_thread(tid).ok()?);
        }
        Some(sum)
    }
}

/// Stops the workers and waits for them: when their test is removed, and
/// when a start fails after they were started.
impl Drop for OwnWorkers {
    fn drop(&mut self) {
        for h in &self.handles {
            h.command(Command::Shutdown);
        }
        for t in std::mem::take(&mut self.threads) {
            let _ = t.join();
        }
    }
}
