//! The protocol halves fed a peer's arbitrary bytes, driven as the driver's
//! machine drives a [`Codec`] (`driver/machine.rs`) and the responder's a
//! [`Handler`] (`responder/machine.rs`): setup steps first when the
//! protocol has them, then transactions; every send is filled (so a fill
//! that reads state a hostile read left behind runs too); receives are at
//! most what is due, as the backends ask for. The session ends when the
//! bytes do, or at the half's first fault (a fault is the right answer).
//!
//! Input layout ([`Class::HEAD_BYTES`] bytes, then the peer's bytes):
//!
//! | byte | meaning |
//! |---|---|
//! | 0 | kind (bit 0: CRR), CRR close (bits 1–2), protocol options (bits 3–7) |
//! | 1 | the length of each read (0: everything left in one read) |
//! | 2 | request size: 16 × (1 + byte) bytes |
//! | 3 | response size: 16 × (1 + byte) bytes |
//! | 4 | more protocol options |

use stackbench_engine::app::{amqp, http1, tn3270, ClassShape, Codec, Handler, Setup};
use stackbench_model::settings::{
    AmqpBody, AmqpCompress, AmqpParams, AmqpPattern, AmqpQueues, LuName, ResponderApp,
    ResponderTn3270e, SettingValue, Tn3270Options, Tn3270e,
};
use stackbench_model::{CrrClose, Kind};

/// What the backends receive at most in one read (`sockopt::IO_CHUNK_BYTES`).
const IO_CHUNK_BYTES: u64 = 128 * 1024;

/// Bytes of one send filled at most (a hostile peer may make a half ask
/// for a long send; its fill is exercised on this much of it).
const FILL_CAP_BYTES: u64 = 1 << 20;

/// Transactions one input may drive at most (a half that completes a
/// transaction reading nothing would otherwise go on for ever).
const MAX_TRANSACTIONS: usize = 4096;

/// The peer's bytes as reads of at most `len` bytes each.
pub struct Reads<'a> {
    rest: &'a [u8],
    len: usize,
}

impl<'a> Reads<'a> {
    /// `len` 0: each read takes all that is left (what it may).
    pub fn new(bytes: &'a [u8], len: u8) -> Reads<'a> {
        Reads {
            rest: bytes,
            len: if len == 0 {
                usize::MAX
            } else {
                usize::from(len)
            },
        }
    }

    /// The next read of at most `due` bytes; `None` once the bytes are
    /// all read (the peer closed).
    pub fn next(&mut self, due: u64) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let n = self
            .len
            .min(self.rest.len())
            .min(usize::try_from(due.max(1)).unwrap_or(usize::MAX));
        let (read, rest) = self.rest.split_at(n);
        self.rest = rest;
        Some(read)
    }

    pub fn left(&self) -> usize {
        self.rest.len()
    }
}

/// The class an input's head chooses.
pub struct Class {
    pub shape: ClassShape,
    pub read_len: u8,
}

impl Class {
    pub const HEAD_BYTES: usize = 5;

    /// The class of `head` (its first [`Class::HEAD_BYTES`] bytes).
    pub fn of(head: &[u8; Class::HEAD_BYTES]) -> Class {
        let [flags, read_len, request, response, more] = *head;
        let tn3270e = [Tn3270e::Auto, Tn3270e::On, Tn3270e::Off][usize::from(flags >> 3 & 3) % 3];
        let lu = (more & 0x10 != 0).then(|| LuName::parse("LU1").expect("an LU name"));
        let tn3270 = Tn3270Options {
            tn3270e,
            model: 2 + (more & 3),
            lu,
            responder: if flags & 0x20 == 0 {
                ResponderTn3270e::Offer
            } else {
                ResponderTn3270e::Refuse
            },
            script: None,
            app: if more & 0x20 == 0 {
                ResponderApp::Echo
            } else {
                ResponderApp::Demo
            },
        };
        let amqp = AmqpParams {
            pattern: if flags & 0x40 == 0 {
                AmqpPattern::RequestReply
            } else {
                AmqpPattern::PutGet
            },
            persistent: flags & 0x80 != 0,
            credit: 1 + u32::from(more >> 5),
            body: [AmqpBody::Zeros, AmqpBody::Text, AmqpBody::Random]
                [usize::from(more >> 2 & 3) % 3],
            compress: [
                AmqpCompress::None,
                AmqpCompress::ZlibFast,
                AmqpCompress::ZlibHigh,
            ][usize::from(flags >> 1 & 3) % 3],
            queues: if more & 0x10 == 0 {
                AmqpQueues::PerClient
            } else {
                AmqpQueues::Shared
            },
            ..AmqpParams::default()
        };
        Class {
            shape: ClassShape {
                h2: Default::default(),
                kind: if flags & 1 == 0 { Kind::Rr } else { Kind::Crr },
                request_bytes: 16 * (1 + u64::from(request)),
                response_bytes: 16 * (1 + u64::from(response)),
                crr_close: [
                    CrrClose::Server,
                    CrrClose::Client,
                    CrrClose::Abort,
                    CrrClose::Server,
                ][usize::from(flags >> 1 & 3)],
                target: None,
                tn3270,
                amqp,
            },
            read_len,
        }
    }

    /// The class of an input and the peer's bytes after its head; `None`
    /// for an input shorter than its head.
    pub fn split(data: &[u8]) -> Option<(Class, &[u8])> {
        let (head, peer) = data.split_first_chunk::<{ Class::HEAD_BYTES }>()?;
        Some((Class::of(head), peer))
    }
}

/// Fills a send of `len` bytes (the first [`FILL_CAP_BYTES`] of it) in
/// pieces whose length depends on `piece`, as a backend whose sends are
/// short would.
fn fill(len: u64, piece: u8, sent: &mut Sent, mut fill: impl FnMut(u64, &mut [u8])) {
    let piece = if piece == 0 { 4096 } else { u64::from(piece) };
    let mut buf = vec![0u8; piece as usize];
    let mut offset = 0;
    while offset < len.min(FILL_CAP_BYTES) {
        let n = piece.min(len - offset) as usize;
        fill(offset, &mut buf[..n]);
        if let Some(kept) = &mut sent.0 {
            kept.extend_from_slice(&buf[..n]);
        }
        offset += n as u64;
    }
}

/// What a half sent, kept when asked for (the seed corpus is made of
/// what one half sends the other: [`converse`]); fuzzing keeps nothing.
pub struct Sent(pub Option<Vec<u8>>);

/// A codec's (driver half's) connections against a server that sends
/// `peer`: setup, then transactions; a CRR class connects anew after each.
pub fn drive_codec<C: Codec>(codec: &C, class: &Class, peer: &[u8], sent: &mut Sent) {
    let mut reads = Reads::new(peer, class.read_len);
    let per_connection = if class.shape.kind == Kind::Crr {
        1
    } else {
        MAX_TRANSACTIONS
    };
    for _ in 0..MAX_TRANSACTIONS {
        let before = reads.left();
        let mut state = C::State::default();
        if C::SETUP && !codec_setup(codec, &mut state, &mut reads, (class.read_len, sent)) {
            return;
        }
        for _ in 0..per_connection {
            if !codec_transaction(codec, &mut state, &mut reads, (class.read_len, sent)) {
                return;
            }
            if codec.server_closes(&state) {
                break;
            }
        }
        if reads.left() == before {
            return;
        }
    }
}

/// The codec's setup dialogue; false once the session is over (a fault,
/// or the peer's bytes ran out).
fn codec_setup<C: Codec>(
    codec: &C,
    state: &mut C::State,
    reads: &mut Reads,
    (piece, sent): (u8, &mut Sent),
) -> bool {
    let mut step = codec.setup_open(state);
    loop {
        match step {
            Setup::Read => {
                let Some(chunk) = reads.next(IO_CHUNK_BYTES) else {
                    let _ = codec.setup_seen(state);
                    return false;
                };
                step = match codec.setup_received(state, chunk) {
                    Ok(step) => step,
                    Err(_) => {
                        let _ = codec.setup_failure(state);
                        return false;
                    }
                };
            }
            Setup::Send | Setup::SendLast => {
                fill(codec.setup_bytes(state), piece, sent, |offset, out| {
                    codec.fill_setup(state, offset, out)
                });
                if step == Setup::SendLast {
                    break;
                }
                step = Setup::Read;
            }
            Setup::Done => break,
        }
    }
    let _ = codec.settled(state);
    true
}

/// One request out and its response in; false once the session is over.
fn codec_transaction<C: Codec>(
    codec: &C,
    state: &mut C::State,
    reads: &mut Reads,
    (piece, sent): (u8, &mut Sent),
) -> bool {
    let len = codec.request_len(state);
    fill(len, piece, sent, |offset, out| {
        codec.fill_request(state, offset, out)
    });
    codec.request_sent(state);
    let mut remaining = codec.response_bytes();
    while remaining > 0 {
        let Some(chunk) = reads.next(remaining.min(IO_CHUNK_BYTES)) else {
            let _ = codec.response_seen(state, remaining);
            return false;
        };
        remaining = match codec.response_left(state, remaining, chunk.len() as u64, chunk) {
            Ok(left) => left,
            Err(_) => return false,
        };
    }
    let _ = codec.status(state);
    true
}

/// A handler's (responder half's) connection from a client that sends
/// `peer`: setup, then requests, each answered (filled), until the
/// handler closes it, refuses a request or the bytes run out.
pub fn drive_handler<H: Handler>(handler: &H, class: &Class, peer: &[u8], sent: &mut Sent) {
    let mut reads = Reads::new(peer, class.read_len);
    let mut state = H::State::default();
    if H::SETUP && !handler_setup(handler, &mut state, &mut reads, (class.read_len, sent)) {
        return;
    }
    for _ in 0..MAX_TRANSACTIONS {
        let before = reads.left();
        let mut remaining = handler.request_bytes();
        while remaining > 0 {
            let Some(chunk) = reads.next(remaining.min(IO_CHUNK_BYTES)) else {
                return;
            };
            remaining = match handler.request_left(&mut state, remaining, chunk.len() as u64, chunk)
            {
                Ok(left) => left,
                Err(_) => return,
            };
        }
        fill(
            handler.response_bytes(&state),
            class.read_len,
            sent,
            |offset, out| handler.fill_response(&state, offset, out),
        );
        if handler.closes(&state) || reads.left() == before {
            return;
        }
    }
}

/// The handler's setup dialogue; false once the connection is over.
fn handler_setup<H: Handler>(
    handler: &H,
    state: &mut H::State,
    reads: &mut Reads,
    (piece, sent): (u8, &mut Sent),
) -> bool {
    let mut step = handler.setup_open(state);
    loop {
        match step {
            Setup::Read => {
                let Some(chunk) = reads.next(IO_CHUNK_BYTES) else {
                    return false;
                };
                step = match handler.setup_received(state, chunk) {
                    Ok(step) => step,
                    Err(_) => return false,
                };
            }
            Setup::Send | Setup::SendLast => {
                fill(handler.setup_bytes(state), piece, sent, |offset, out| {
                    handler.fill_setup(state, offset, out)
                });
                if step == Setup::SendLast {
                    return true;
                }
                step = Setup::Read;
            }
            Setup::Done => return true,
        }
    }
}

fn codec_target<C: Codec>(data: &[u8]) {
    if let Some((class, peer)) = Class::split(data) {
        drive_codec(&C::of(&class.shape), &class, peer, &mut Sent(None));
    }
}

fn handler_target<H: Handler>(data: &[u8]) {
    if let Some((class, peer)) = Class::split(data) {
        let shape = &class.shape;
        let handler = H::of(shape.request_bytes, shape.response_bytes, &shape.tn3270);
        drive_handler(&handler, &class, peer, &mut Sent(None));
    }
}

/// A dialogue between a protocol's two halves of class `head`, found as
/// a fixed point: each half is driven with what the other sent so far,
/// until neither sends more (each round adds at least one step while
/// the dialogue goes on). Reads are of one byte: a longer read could take
/// answers to what was not yet asked (all the other half sent so far),
/// which a peer waiting for its turn never sends. Returns what the server
/// sent (the client's input) and what the client sent (the server's).
pub fn converse<C: Codec, H: Handler>(head: [u8; Class::HEAD_BYTES]) -> (Vec<u8>, Vec<u8>) {
    let mut class = Class::of(&head);
    class.read_len = 1;
    let shape = &class.shape;
    let codec = C::of(shape);
    let handler = H::of(shape.request_bytes, shape.response_bytes, &shape.tn3270);
    let (mut to_client, mut to_server) = (Vec::new(), Vec::new());
    for _ in 0..16 {
        let mut server = Sent(Some(Vec::new()));
        drive_handler(&handler, &class, &to_server, &mut server);
        let mut client = Sent(Some(Vec::new()));
        let server = server.0.unwrap_or_default();
        drive_codec(&codec, &class, &server, &mut client);
        let client = client.0.unwrap_or_default();
        let settled = server == to_client && client == to_server;
        (to_client, to_server) = (server, client);
        if settled {
            break;
        }
    }
    (to_client, to_server)
}

/// HTTP/1.1's client half: a server's responses.
pub fn http1_client(data: &[u8]) {
    codec_target::<http1::Client>(data);
}

/// HTTP/1.1's server half: a client's requests.
pub fn http1_server(data: &[u8]) {
    handler_target::<http1::Server>(data);
}

/// TN3270's terminal: a server's Telnet negotiation (TN3270E included),
/// its records and TN3270E headers.
pub fn tn3270_client(data: &[u8]) {
    codec_target::<tn3270::client::Client>(data);
}

/// TN3270's server: a terminal's negotiation, records and headers.
pub fn tn3270_server(data: &[u8]) {
    handler_target::<tn3270::server::Server>(data);
}

/// AMQP 1.0's client: a broker's (or responder's) frames.
pub fn amqp_client(data: &[u8]) {
    codec_target::<amqp::client::Client>(data);
}

/// AMQP 1.0's embedded broker-and-responder: a client's frames.
pub fn amqp_server(data: &[u8]) {
    handler_target::<amqp::server::Server>(data);
}
