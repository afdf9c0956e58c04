//! The driver's worker threads per class under `class_workers`: each worker
//! registers its kernel thread id as it starts and leaves its final CPU time
//! as it ends, so the watch can sample every class's threads at the window's
//! edges — also when a count-bounded window ends after the workers did (the
//! end sample is then taken once they have exited, and their `/proc` entries
//! are gone).

use std::sync::Mutex;

use stackbench_metrics::threads::ThreadTimes;

use crate::lock::lock;

/// One worker thread of a class.
struct Entry {
    class: usize,
    tid: u32,
    /// Its CPU time as it ended; `None` while it runs.
    exited: Option<ThreadTimes>,
}

/// Every class's driver worker threads.
#[derive(Default)]
pub struct ClassThreads {
    threads: Mutex<Vec<Entry>>,
}

/// The calling thread's kernel id.
fn this_tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

impl ClassThreads {
    /// The calling thread works for `class` from now on; returns its id.
    pub fn register(&self, class: usize) -> u32 {
        let tid = this_tid();
        lock(&self.threads).push(Entry {
            class,
            tid,
            exited: None,
        });
        tid
    }

    /// The calling thread (`tid`, from [`Self::register`]) is about to end.
    pub fn exiting(&self, tid: u32) {
        let times = ThreadTimes::of_thread(tid).ok();
        if let Some(e) = lock(&self.threads).iter_mut().find(|e| e.tid == tid) {
            e.exited = times;
        }
    }

    /// Per class (of `classes`), its threads' CPU time now: the live count of
    /// a running thread, the last one of an ended thread; `None` for a class
    /// one of whose threads cannot be read.
    pub fn sample(&self, classes: usize) -> Vec<Option<ThreadTimes>> {
        let threads = lock(&self.threads);
        let mut out = vec![Some(ThreadTimes::default()); classes];
        for e in threads.iter() {
            // Read the live thread first: if it has ended in between, its
            // final figure was stored before it ended.
            let now = ThreadTimes::of_thread(e.tid).ok().or(e.exited);
            match (out.get_mut(e.class), now) {
                (Some(Some(sum)), Some(t)) => sum.add(&t),
                (Some(slot), None) => *slot = None,
                _ => {}
            }
        }
        out
    }
}
