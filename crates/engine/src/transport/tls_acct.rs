//! What a TLS connection costs and how it re-keys, beside the record layer
//! in [`super::tls`]: the thread CPU time a handshake's steps take (measured
//! only while the handshake is unfinished, so transactions pay nothing), and
//! `--rekey SIZE` — after every SIZE bytes a connection sends, a TLS 1.3
//! KeyUpdate (as IBM MQ channels renegotiate their secret key every 1 MB in
//! MQ on z/OS cost measurements).
//!
//! The re-key size travels in the context (OpenSSL ex_data), so every
//! connection made from a context re-keys without new parameters along the
//! way. A context that re-keys also counts the KeyUpdate messages it
//! RECEIVES (an OpenSSL message callback): the peer's own, independent view
//! of the sender's count ([`key_updates_received`]).
//!
//! TLS 1.2 would re-key by renegotiation. It is refused ([`check_rekey`]):
//! a renegotiation is a whole handshake (key exchange, certificate) in the
//! middle of the connection, not the record-layer key change TLS 1.3's
//! KeyUpdate is, and the connections here do not drive one; in a stream GET
//! it could not work at all, as the server only writes and would never read
//! the client's hello.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use foreign_types::ForeignTypeRef;
use openssl::ex_data::Index;
use openssl::ssl::{SslContext, SslContextBuilder, SslContextRef, SslRef};
use stackbench_model::settings::TlsVersion;
use stackbench_model::{StreamDirection, Workload};

/// `SSL_KEY_UPDATE_NOT_REQUESTED`: update our sending keys only (the peer
/// updates its receiving keys, and re-keys its own sending side when its
/// own byte count says so).
const KEY_UPDATE_NOT_REQUESTED: c_int = 0;
/// Record content type of handshake messages, and the KeyUpdate message type.
const CONTENT_HANDSHAKE: c_int = 22;
const MSG_KEY_UPDATE: u8 = 24;

type MsgCallback = unsafe extern "C" fn(
    write_p: c_int,
    version: c_int,
    content_type: c_int,
    buf: *const c_void,
    len: usize,
    ssl: *mut openssl_sys::SSL,
    arg: *mut c_void,
);

// Not bound by openssl-sys; the symbols are in the vendored libssl it links.
extern "C" {
    fn SSL_key_update(ssl: *mut openssl_sys::SSL, updatetype: c_int) -> c_int;
    fn SSL_CTX_set_msg_callback(ctx: *mut openssl_sys::SSL_CTX, cb: Option<MsgCallback>);
    fn SSL_set_default_read_buffer_len(ssl: *mut openssl_sys::SSL, len: usize);
}

/// Largest read-ahead buffer a connection gets (see [`set_read_buffer`]).
const MAX_READ_BUFFER_BYTES: usize = 128 * 1024;

/// With read-ahead, how much one `recv` may pull into OpenSSL's buffer.
/// OpenSSL's default holds one full record (~16 KiB); a connection that
/// receives larger messages (a stream) gets a buffer of its message size up
/// to 128 KiB, so one system call takes several records. TLS STR3(1B/20MB)
/// GET here: +24% with the buffer on every connection (49-51 → 60-63 tr/s,
/// 3 interleaved pairs, quiet machine); with it on stream receivers only (this
/// code) the median of 9 noisier pairs gained +10%. Small-message
/// connections keep the default, so a large population holds no more memory.
pub(crate) fn set_read_buffer(ssl: &mut openssl::ssl::SslRef, message_bytes: u64) {
    const RECORD_BYTES: u64 = 16 * 1024;
    if message_bytes > RECORD_BYTES {
        let len = (message_bytes as usize).min(MAX_READ_BUFFER_BYTES);
        // SAFETY: a valid SSL not yet reading; the call only stores a length.
        unsafe { SSL_set_default_read_buffer_len(ssl.as_ptr(), len) };
    }
}

/// KeyUpdate messages received by every re-keying context of this process.
static KEY_UPDATES_RECEIVED: AtomicU64 = AtomicU64::new(0);

/// KeyUpdate messages this process's re-keying connections received so far
/// (counted by OpenSSL's message callback on the receiving side).
pub fn key_updates_received() -> u64 {
    KEY_UPDATES_RECEIVED.load(Ordering::Relaxed)
}

unsafe extern "C" fn on_message(
    write_p: c_int,
    _version: c_int,
    content_type: c_int,
    buf: *const c_void,
    len: usize,
    _ssl: *mut openssl_sys::SSL,
    _arg: *mut c_void,
) {
    // SAFETY: OpenSSL passes `len` readable bytes at `buf`.
    if write_p == 0
        && content_type == CONTENT_HANDSHAKE
        && len > 0
        && unsafe { *buf.cast::<u8>() } == MSG_KEY_UPDATE
    {
        KEY_UPDATES_RECEIVED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Refuses a re-key the version cannot do here (one line, with the fix),
/// naming the reason that holds for the run's `workloads`.
pub fn check_rekey(version: TlsVersion, bytes: u64, workloads: &[Workload]) -> Result<(), String> {
    if bytes == 0 || version != TlsVersion::V12 {
        return Ok(());
    }
    let get = workloads
        .iter()
        .flat_map(|w| &w.classes)
        .find(|c| c.stream_direction() == Some(StreamDirection::Get));
    let stall = get.map_or(String::new(), |c| {
        format!(
            ", and in {c} the server only writes, so it would never read the client's \
             hello and the stream would stall"
        )
    });
    Err(format!(
        "rekey with TLS 1.2 would be a renegotiation, a whole handshake (key exchange and \
         certificate) in the middle of the connection rather than the key change --rekey \
         measures (TLS 1.3's KeyUpdate), which stackbench does not drive{stall}: use \
         --tls-version 1.3 or drop --rekey"
    ))
}

/// The re-key size a context carries.
#[derive(Debug, Clone, Copy)]
struct RekeyEvery(u64);

fn rekey_index() -> Index<SslContext, RekeyEvery> {
    static INDEX: OnceLock<Index<SslContext, RekeyEvery>> = OnceLock::new();
    *INDEX.get_or_init(|| SslContext::new_ex_index().expect("an OpenSSL ex_data index"))
}

/// Makes connections of `b` re-key after every `bytes` sent (0: never), and
/// count the KeyUpdates they receive.
pub(crate) fn set_rekey(b: &mut SslContextBuilder, bytes: u64) {
    if bytes == 0 {
        return;
    }
    b.set_ex_data(rekey_index(), RekeyEvery(bytes));
    // SAFETY: a valid context under construction; the callback is a plain
    // function that only reads the message OpenSSL hands it.
    unsafe { SSL_CTX_set_msg_callback(b.as_ptr(), Some(on_message)) };
}

/// A connection's re-key state: bytes sent since its last key update.
#[derive(Debug, Default)]
pub(crate) struct Rekey {
    every: u64,
    since: u64,
    /// Key updates started and not yet taken by [`Self::take`].
    done: u32,
}

impl Rekey {
    pub(crate) fn of(ctx: &SslContextRef) -> Rekey {
        Rekey {
            every: ctx.ex_data(rekey_index()).map_or(0, |r| r.0),
            ..Rekey::default()
        }
    }

    /// Counts `n` bytes sent; past the size, starts a key update (sent with
    /// the next record). One that OpenSSL refuses now (a write still
    /// pending) is tried again after the next send.
    #[inline]
    pub(crate) fn sent(&mut self, ssl: &SslRef, n: usize) {
        if self.every == 0 {
            return;
        }
        self.since += n as u64;
        if self.since < self.every {
            return;
        }
        // SAFETY: a live SSL of a finished handshake (callers send only
        // after it); the call only sets OpenSSL's key-update state.
        if unsafe { SSL_key_update(ssl.as_ptr(), KEY_UPDATE_NOT_REQUESTED) } == 1 {
            // A backlog (updates refused while a write was pending) is
            // caught up one update per send.
            self.since -= self.every;
            self.done += 1;
        } else {
            // Drop the refusal from the thread's error queue, or a later
            // call would report it as its own.
            let _ = openssl::error::ErrorStack::get();
        }
    }

    /// Key updates started since the last call.
    #[inline]
    pub(crate) fn take(&mut self) -> u32 {
        std::mem::take(&mut self.done)
    }
}

/// This thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID).
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workloads(notation: &str) -> Vec<Workload> {
        vec![notation.parse().unwrap()]
    }

    #[test]
    fn tls12_rekey_is_refused_in_one_line() {
        let rr = workloads("RR1(1B/1B)");
        let e = check_rekey(TlsVersion::V12, 1 << 20, &rr).unwrap_err();
        assert!(e.contains("--tls-version 1.3") && !e.contains('\n'), "{e}");
        assert!(check_rekey(TlsVersion::V12, 0, &rr).is_ok());
        assert!(check_rekey(TlsVersion::V13, 1 << 20, &rr).is_ok());
    }

    /// An RR run was told its server was write-only (STR GET): the stall
    /// is named only where a stream GET is in the run.
    #[test]
    fn tls12_rekey_reason_fits_the_workload() {
        let e = check_rekey(TlsVersion::V12, 1 << 20, &workloads("RR1(1B/1B)")).unwrap_err();
        assert!(e.contains("whole handshake"), "{e}");
        assert!(!e.contains("only writes") && !e.contains("STR"), "{e}");
        let mix = workloads("RR1(100B/800B)+STR2(1B/20MB)");
        let e = check_rekey(TlsVersion::V12, 1 << 20, &mix).unwrap_err();
        assert!(e.contains("in STR2(1B/20MB) the server only writes"), "{e}");
        let put = workloads("STR1(20MB/1B)");
        let e = check_rekey(TlsVersion::V12, 1 << 20, &put).unwrap_err();
        assert!(!e.contains("only writes"), "{e}");
    }

    #[test]
    fn thread_cpu_time_moves_forward() {
        let a = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..100_000u64 {
            x = x.wrapping_add(std::hint::black_box(i));
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() >= a);
    }
}
