//! Application protocols: what the bytes of a transaction are, above the
//! byte stream and independent of the I/O backend and the transport. (Not to
//! be confused with [`crate::protocol`], the control protocol between driver
//! and responder.) A protocol is two halves:
//!
//! - a [`Codec`] on the driver side: how long the next request is, and when
//!   the response to it is complete;
//! - a [`Handler`] on the responder side: when a request is complete, and how
//!   long the answer to it is.
//!
//! The state machines ([`crate::driver`]'s per-connection machine, the
//! responder's `ConnState`) ask these halves and nothing else about sizes,
//! so HTTP, messaging or TN3270 become a codec plus a handler. [`Raw`] —
//! sized payloads of zero bytes, the notation's `RR10(4kB/4kB)` — is the
//! first implementation; its sizes are known before a byte moves, so the
//! backends count received bytes without reading them (io_uring receives
//! into one shared sink). A protocol whose ends are found in the bytes
//! (a header's length field, a delimiter) would set [`Codec::FRAMED`] and
//! get the received bytes in [`Codec::response_left`].
//!
//! The halves are plain types, used by value and resolved at compile time:
//! no call through a pointer per event.

/// The driver's half of an application protocol.
pub trait Codec: Copy {
    /// Whether where a response ends depends on its bytes (then a backend
    /// must hand them over; when false it may count them unread).
    const FRAMED: bool;

    /// Length of the next request, bytes.
    fn request_bytes(&self) -> u64;

    /// Bytes of the response expected once the request is out (a framed
    /// protocol: what it needs before it can tell more).
    fn response_bytes(&self) -> u64;

    /// Bytes of the response still due after `chunk` arrived, when
    /// `remaining` were due before it; 0: the response is complete. `chunk`
    /// is empty for an unframed codec (the backend did not read it), whose
    /// answer follows from the count alone.
    fn response_left(&self, remaining: u64, n: u64, chunk: &[u8]) -> u64;
}

/// The responder's half of an application protocol.
pub trait Handler: Copy {
    /// Whether where a request ends depends on its bytes.
    const FRAMED: bool;

    /// Bytes of the next request expected (a framed protocol: what it needs
    /// before it can tell more).
    fn request_bytes(&self) -> u64;

    /// Bytes of the request still due after `n` more arrived (`chunk`, empty
    /// when not framed), when `remaining` were due; 0: it is complete.
    fn request_left(&self, remaining: u64, n: u64, chunk: &[u8]) -> u64;

    /// Length of the answer to a complete request, bytes.
    fn response_bytes(&self) -> u64;
}

/// Sized payloads of zero bytes: a request of `request` bytes, answered with
/// `response` bytes. Both ends are known in advance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw {
    pub request: u64,
    pub response: u64,
}

impl Codec for Raw {
    const FRAMED: bool = false;

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request
    }

    #[inline]
    fn response_bytes(&self) -> u64 {
        self.response
    }

    #[inline]
    fn response_left(&self, remaining: u64, n: u64, _chunk: &[u8]) -> u64 {
        remaining - n
    }
}

impl Handler for Raw {
    const FRAMED: bool = false;

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request
    }

    #[inline]
    fn request_left(&self, remaining: u64, n: u64, _chunk: &[u8]) -> u64 {
        remaining - n
    }

    #[inline]
    fn response_bytes(&self) -> u64 {
        self.response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_ends_where_its_sizes_say() {
        let raw = Raw {
            request: 100,
            response: 4096,
        };
        assert_eq!(Codec::request_bytes(&raw), 100);
        assert_eq!(Codec::response_bytes(&raw), 4096);
        assert_eq!(raw.response_left(4096, 4000, &[]), 96);
        assert_eq!(raw.response_left(96, 96, &[]), 0);
        assert_eq!(Handler::request_bytes(&raw), 100);
        assert_eq!(raw.request_left(100, 60, &[]), 40);
        assert_eq!(raw.request_left(40, 40, &[]), 0);
        assert_eq!(Handler::response_bytes(&raw), 4096);
    }
}
