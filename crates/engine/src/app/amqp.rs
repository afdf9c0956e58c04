//! AMQP 1.0 (OASIS, ISO/IEC 19464) as an application protocol: the
//! driver's [`Client`] codec, an application putting messages on a broker's
//! queues as IBM's mq-cph Requester and PutGet classes do, and the
//! responder's [`Server`] handler, a minimal in-memory broker and responder
//! in one (`stackbench serve`'s default), so `run 'RR10(1kB/1kB)'
//! --protocol amqp` needs nothing installed.
//!
//! Setup (the client speaks first), in two round trips: the SASL header
//! (answered by the header and `sasl-mechanisms`); then, pipelined in one
//! write, `sasl-init` (ANONYMOUS, or PLAIN with credentials), the AMQP
//! header, `open`, `begin`, an `attach` of a sending link to the request
//! queue, an `attach` of a receiving link to the reply queue (put-get: the
//! same queue) and a `flow` granting it the `amqp_credit` setting's credit —
//! answered by `sasl-outcome`, the header, `open`, `begin`, both `attach`es
//! and a `flow` granting credit to the sending link. The connection is set
//! up once both links are attached and the sending link has credit.
//!
//! Transactions. A request is a `transfer` of one message on the sending
//! link: a header section (persistent: durable), a properties section
//! (message id, reply-to, content type) and a data section of y bytes; a
//! reply is a `transfer` on the receiving link, its correlation id the
//! request's message id (put-get: the message itself, its message id).
//! What a connection owes the broker rides in front of its next request:
//! a `flow` renewing the receiving link's credit once half of it is used,
//! and (persistent) a `disposition` accepting the previous reply. The
//! broker's `disposition` accepting a persistent put, and a `flow` renewing
//! the sending link's credit, ride in front of the reply. A transaction is
//! complete when its reply has arrived, a persistent put has been accepted,
//! and the sending link has credit for the next one. The notation's sizes
//! are message bodies; the frames around them are counted in the bytes
//! moved (docs/transports.md gives the overhead per transaction).
//!
//! Compression (`amqp_compress`): each request body zlib-compressed at
//! level 1 or 9 and marked `content-encoding: deflate`; the broker and the
//! responder application decompress it and compress the reply at the
//! request's level (the zlib header's FLEVEL); the client decompresses the
//! reply and checks its size. A compressed transfer is kept whole by the
//! frame reader (up to [`frames::ENCODED_KEEP_BYTES`]).
//!
//! Faults: a peer that is not AMQP 1.0 (its header), a SASL outcome other
//! than ok, a link or session or connection closed with an error, a put
//! rejected or released, a reply whose correlation id is not the request's,
//! and a message larger than the peer's max-frame-size (a message is sent
//! as one frame).

pub mod application;
pub mod client;
mod frames;
pub mod row;
mod sasl;
pub mod server;

use std::sync::atomic::{AtomicU64, Ordering};

use fe2o3_amqp_types::definitions::Error as AmqpError;
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use stackbench_model::AmqpBody;

use super::Fault;

/// The max-frame-size both sides declare: a message travels as one frame,
/// so this bounds the message (4 GiB − 1, the largest the field holds).
pub const MAX_FRAME_BYTES: u32 = u32::MAX;
/// Session windows both sides declare: large enough never to need a
/// session-level flow (2^31 − 1).
pub const SESSION_WINDOW: u32 = i32::MAX as u32;
/// The application property a request names its reply body's size in
/// (bytes, a ulong), for a responder application that has no test spec.
pub const REPLY_BYTES_KEY: &str = "z";
/// Credit stackbench's broker grants a client's sending link, renewed
/// with a reply once half of it is used.
pub const BROKER_CREDIT: u32 = 1000;

/// The content type that says what a body holds, so the embedded broker
/// answers in kind; none for zeros (the default: no bytes spent on it).
fn content_type(body: AmqpBody) -> Option<&'static str> {
    match body {
        AmqpBody::Zeros => None,
        AmqpBody::Text => Some("text/plain"),
        AmqpBody::Random => Some("application/x-stackbench-random"),
    }
}

/// The body kind a content type names (zeros for any other).
fn body_of(content_type: &str) -> AmqpBody {
    match content_type {
        "text/plain" => AmqpBody::Text,
        "application/x-stackbench-random" => AmqpBody::Random,
        _ => AmqpBody::Zeros,
    }
}

/// Text repeated in `text` bodies.
const TEXT: &[u8] = b"stackbench message body: the quick brown fox jumps over the lazy dog. ";

/// Writes bytes `offset..offset + out.len()` of a body of `kind`: a pure
/// function of the offset, so any split of the writes gives the same bytes.
fn fill_body(kind: AmqpBody, offset: u64, out: &mut [u8]) {
    match kind {
        AmqpBody::Zeros => out.fill(0),
        AmqpBody::Text => {
            for (i, b) in out.iter_mut().enumerate() {
                *b = TEXT[((offset + i as u64) % TEXT.len() as u64) as usize];
            }
        }
        AmqpBody::Random => {
            for (i, b) in out.iter_mut().enumerate() {
                let at = offset + i as u64;
                *b = splitmix(at / 8).to_le_bytes()[(at % 8) as usize];
            }
        }
    }
}

/// SplitMix64: a well-mixed 64-bit value per position.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Copies the part of `bytes` that falls in `offset..offset + out.len()`
/// into the start of `out`; how many bytes that was.
fn fill_from(bytes: &[u8], offset: u64, out: &mut [u8]) -> usize {
    let Ok(start) = usize::try_from(offset) else {
        return 0;
    };
    if start >= bytes.len() {
        return 0;
    }
    let n = (bytes.len() - start).min(out.len());
    out[..n].copy_from_slice(&bytes[start..start + n]);
    n
}

/// Writes bytes `offset..` of a message made of `head` (frames and the
/// transfer's head) and a body of `kind`.
fn fill_message(head: &[u8], kind: AmqpBody, offset: u64, out: &mut [u8]) {
    let n = fill_from(head, offset, out);
    let body_at = (offset + n as u64).saturating_sub(head.len() as u64);
    fill_body(kind, body_at, &mut out[n..]);
}

/// The `content-encoding` of a compressed body (zlib, RFC 1950, as HTTP's
/// `deflate`).
pub const DEFLATE: &str = "deflate";

/// Appends a body of `kind` and `len` bytes, zlib-compressed at `level`,
/// to `out`; `plain` is scratch for the uncompressed body. Per message, as
/// a channel compresses each one.
fn deflate_body(kind: AmqpBody, len: usize, level: u32, plain: &mut Vec<u8>, out: &mut Vec<u8>) {
    plain.clear();
    plain.resize(len, 0);
    fill_body(kind, 0, plain);
    let start = out.len();
    let mut z = Compress::new(Compression::new(level), true);
    // zlib's bound for incompressible input, with room to spare.
    out.reserve(len + len / 16 + 64);
    loop {
        let status = z
            .compress_vec(&plain[z.total_in() as usize..], out, FlushCompress::Finish)
            .expect("compressing into a growable buffer");
        if status == Status::StreamEnd {
            break;
        }
        out.reserve(len / 16 + 64);
    }
    // The header's FLEVEL as RFC 1950 has it (miniz_oxide writes 3 for
    // every level), so a peer can answer at the same level: 0 fastest, 3
    // maximum; FCHECK makes the header a multiple of 31 again.
    if let Some(&cmf) = out.get(start) {
        let flevel: u8 = if level < 2 {
            0
        } else if level < 6 {
            1
        } else if level == 6 {
            2
        } else {
            3
        };
        let flg = flevel << 6;
        let check = (31 - ((u16::from(cmf) << 8 | u16::from(flg)) % 31) as u8) % 31;
        out[start + 1] = flg | check;
    }
}

/// The zlib level a compressed body was made at, from its header's FLEVEL
/// bits (RFC 1950: 0 fastest, 3 maximum), so an answer is compressed alike:
/// 1 for the fastest two, 9 for the others.
fn level_of(data: &[u8]) -> u32 {
    match data.get(1).map(|f| f >> 6) {
        Some(0 | 1) | None => 1,
        _ => 9,
    }
}

/// Decompresses a zlib body into `plain`: exactly `want` bytes when
/// `exact`, else at most `want`; refuses one that is not zlib, is cut short
/// or holds another size (it stops past the bound, so a hostile body costs
/// no more).
fn inflate_body(data: &[u8], want: u64, exact: bool, plain: &mut Vec<u8>) -> Result<(), Fault> {
    let bound = usize::try_from(want).unwrap_or(usize::MAX);
    plain.clear();
    let mut z = Decompress::new(true);
    loop {
        plain.reserve(bound.clamp(64, 1 << 20) + 1);
        let status = z
            .decompress_vec(
                &data[z.total_in() as usize..],
                plain,
                FlushDecompress::Finish,
            )
            .map_err(|e| {
                Fault(format!(
                    "a body marked content-encoding {DEFLATE} that is not zlib: {e}"
                ))
            })?;
        let done = status == Status::StreamEnd;
        let fits = if exact {
            !done || plain.len() == bound
        } else {
            plain.len() <= bound
        };
        if !fits || plain.len() > bound {
            return Err(Fault(format!(
                "a body marked content-encoding {DEFLATE} of {} compressed bytes that \
                 holds {}{} bytes: {} {want}",
                data.len(),
                if done { "" } else { "over " },
                plain.len(),
                if exact {
                    "the notation's size is"
                } else {
                    "at most"
                }
            )));
        }
        if done {
            return Ok(());
        }
        if z.total_in() as usize >= data.len() && plain.len() < plain.capacity() {
            return Err(Fault(format!(
                "a body marked content-encoding {DEFLATE} cut short: {} compressed bytes \
                 gave {} bytes and no end of stream",
                data.len(),
                plain.len()
            )));
        }
    }
}

/// A name unique to one connection of this process and run, for its queue
/// and link names: the process id and a counter.
fn connection_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}

/// A peer's error (a detach, end or close) in one line.
fn show_error(what: &str, error: Option<&AmqpError>) -> Fault {
    match error {
        Some(e) => {
            let description = e.description.as_deref().unwrap_or("no description");
            Fault(format!(
                "the peer closed the {what} with error {:?}: {description}",
                e.condition
            ))
        }
        None => Fault(format!("the peer closed the {what} (no error given)")),
    }
}

#[cfg(test)]
mod tests;
