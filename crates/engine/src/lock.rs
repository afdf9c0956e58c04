//! Locking a mutex whose data stays consistent even if a holder panicked
//! (counters, thread ids, registries): poisoning is ignored rather than
//! turned into a second panic. A leaf for the responder's and the driver's
//! thread bookkeeping alike.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, ignoring poisoning.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
