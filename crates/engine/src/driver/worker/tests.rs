//! Unit tests of the driver worker's event loop.

use super::*;
use crate::app::Raw;
use crate::driver::machine::Conn;

/// A spinning worker polls epoll with a zero timeout and has no wake-up
/// timer; a sleeping one waits up to [`MAX_POLL_WAIT`].
#[test]
fn a_spinning_worker_polls_without_blocking() {
    let window = Window::default();
    let slots = WorkerSlots::new(0, false);
    for spin in [true, false] {
        let shared = Shared {
            classes: &[],
            dialers: &[],
            socket: SocketOptions::default(),
            spin,
            io: Default::default(),
            epoch: Instant::now(),
            window: &window,
            window_s: 0,
            ramp_gap_ns: 0.0,
            seed: 1,
            amqp: &Default::default(),
            h2: Default::default(),
        };
        let mut w = Worker::<Raw>::new(&shared, &[], &slots).unwrap();
        let now = w.m.now_ns();
        let want = if spin { Duration::ZERO } else { MAX_POLL_WAIT };
        assert_eq!(w.poll_wait(now), want, "spin {spin}");
        assert_eq!(w.wake.is_none(), spin);
    }
}

/// The per-connection figure the README states; 256K connections must fit
/// comfortably in one process (the target is ≤ 1 KiB of user-space state
/// per connection per side).
#[test]
fn conn_state_is_small() {
    // A `DataStream` is its fd or a boxed TLS session (16 bytes), in
    // debug builds too (mio's own
    // socket types add a selector id there).
    let limit = if cfg!(debug_assertions) { 64 } else { 56 };
    let size = std::mem::size_of::<Conn<DataStream>>();
    eprintln!(
        "driver per-connection state: {size} bytes (slab entry {} bytes)",
        size_of::<slab::Slab<Conn<DataStream>>>()
    );
    assert!(size <= limit, "{size}");
}
