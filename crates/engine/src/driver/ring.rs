//! A driver worker's io_uring: the ring, the operations in flight, the
//! completions of one turn and the receive sink. The loop that fills and
//! drains it is `uring`'s; this module knows nothing of workers, so the
//! worker can own a ring without the two importing each other.

use std::io;

use io_uring::{squeue, IoUring};

use crate::iomode::build;
use crate::sockopt::IO_CHUNK_BYTES;

/// Largest submission queue (completions: twice that, and the kernel keeps
/// any overflow: IORING_FEAT_NODROP).
const MAX_ENTRIES: u32 = 4096;

/// A worker's ring and what its operations point into.
pub(in crate::driver) struct Ring {
    pub(super) ring: IoUring,
    /// Operations queued or submitted whose completion was not seen yet.
    pub(super) in_flight: usize,
    /// One turn's completions: (user data, result).
    pub(super) done: Vec<(u64, i32)>,
    /// The kernel posts no completion for a successful last send
    /// (IOSQE_CQE_SKIP_SUCCESS, Linux 5.17), so one transaction wakes the
    /// worker once, for its response.
    pub(super) skip_ok: bool,
    /// Where every receive lands (counted, never read).
    pub(super) sink: Box<[u8]>,
}

impl Ring {
    /// A ring for a worker of `conns` connections.
    pub(in crate::driver) fn new(conns: usize) -> io::Result<Ring> {
        let entries = ((conns * 2 + 8) as u32)
            .next_power_of_two()
            .min(MAX_ENTRIES);
        let ring = build(entries)?;
        let _ = ring.submitter().register_ring_fd();
        Ok(Ring {
            skip_ok: ring.params().is_feature_skip_cqe_on_success(),
            ring,
            in_flight: 0,
            done: Vec::with_capacity(entries as usize * 2),
            sink: vec![0; IO_CHUNK_BYTES].into_boxed_slice(),
        })
    }

    /// Queues one operation, submitting what is queued first when the
    /// submission queue is full.
    pub(super) fn push(&mut self, entry: &squeue::Entry) {
        self.push_silent(entry);
        self.in_flight += 1;
    }

    /// Queues an operation that posts no completion when it succeeds.
    pub(super) fn push_silent(&mut self, entry: &squeue::Entry) {
        // SAFETY: every buffer an entry points into (the sink, the worker's
        // zero buffer) lives until the ring is drained (`Worker::drain`) or
        // dropped (declared before those buffers).
        while unsafe { self.ring.submission().push(entry) }.is_err() {
            if self.ring.submit().is_err() {
                std::thread::yield_now();
            }
        }
    }
}
