//! HTTP/2 (RFC 9113) as an application protocol: the driver's
//! [`client::Client`] codec and the responder's [`server::Server`] handler,
//! over one frame reader ([`Reader`]) and header blocks coded by HPACK
//! (RFC 7541) through `httlib-hpack`. The frames, the connection's state
//! machine and flow control are ours; the crate only codes header blocks.
//!
//! Connections. On clear text the client speaks with prior knowledge
//! (the preface, no `Upgrade`: h2c as h2load and curl's
//! `--http2-prior-knowledge` do); over TLS its row offers ALPN `h2` only,
//! so a server without HTTP/2 fails the handshake's ALPN or the probe
//! before the run, not in the middle of it. The preface, the client's
//! SETTINGS and a connection WINDOW_UPDATE go ahead of a connection's first
//! request in the same write (the codec's owed bytes), so a CRR
//! transaction costs no round trip more than HTTP/1.1's.
//!
//! Streams. One request is in flight per connection (`RR10(100B/4kB)` is
//! 10 streams in flight, on 10 connections): stream 1, 3, 5, … one after
//! the other, each request's latency from its first byte written to its
//! END_STREAM. Several streams in flight on one connection (h2load's
//! `-m`) need the driver's machine to carry several outstanding requests
//! per connection, which it does not yet; the responder already answers
//! every stream a client opens, so h2load with `-m 10` can drive it.
//!
//! Sizes. The notation's sizes are the frames of one request and one
//! response, their 9-byte frame headers included, as HTTP/1.1's are whole
//! messages with their heads: a request is one HEADERS frame (`:method
//! GET`, `:scheme`, `:path /N`, `:authority`), padded to the request size
//! by a query in the path; above [`crate::app::http1::MAX_GET_BYTES`] a POST
//! whose DATA frames fill the size. An answer is a HEADERS frame (`:status
//! 200`, `content-length`) and DATA frames of at most [`MAX_FRAME`] bytes of
//! payload each, `N` the body that makes the whole the response size. The
//! preface, SETTINGS, their ACKs, PING answers and WINDOW_UPDATEs are
//! bytes moved (counted in the record's bytes), not part of a
//! transaction's sizes. Header blocks are coded without Huffman or the
//! dynamic table on our side, so a size is exact; a foreign server's
//! blocks (nginx's: Huffman, dynamic table) are decoded whatever they are.
//!
//! Flow control. The client announces `h2_window` bytes as the stream
//! window in SETTINGS (and `h2_max_frame` as its SETTINGS_MAX_FRAME_SIZE
//! when above the initial 16,384) and raises the connection's window to
//! `h2_connection_window` with a WINDOW_UPDATE (all three default to
//! h2load's, 2^30 − 1, and the RFC's frame size); the responder announces
//! [`WINDOW`] both ways. The client returns what it consumed of the
//! connection's window with a WINDOW_UPDATE ahead of its next request
//! (streams are not reused, so their windows need none), and the
//! responder keeps the client's windows and refuses an answer they would
//! not admit. A request body is bounded by the RFC's initial window
//! (65,535 bytes, which every server grants before its SETTINGS arrive),
//! a response by the smaller of the client's two windows: beyond them a transaction would wait for a
//! WINDOW_UPDATE sent only between transactions, so the row refuses such
//! sizes before the run.
//!
//! Errors. A response's `:status` is counted per code as HTTP/1.1's are
//! (a non-2xx is an `http_status` error and the connection goes on). A
//! GOAWAY without error (a server's `keepalive_requests`) closes the
//! connection after the response in flight and the client connects anew;
//! a GOAWAY or RST_STREAM with an error code is a fault naming the code.

pub mod client;
mod probe;
pub mod row;
pub mod server;
#[cfg(test)]
mod tests;

use super::{grouped, Fault};

/// The client's connection preface (RFC 9113 §3.4).
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Frame header bytes.
pub const FRAME_HEAD: u64 = 9;
/// Largest frame payload sent, and the largest a peer must accept before
/// it says otherwise (SETTINGS_MAX_FRAME_SIZE's initial value).
pub const MAX_FRAME: u32 = 16_384;
/// The flow-control window every stream and connection starts with.
pub const INITIAL_WINDOW: u64 = 65_535;
/// The window the responder announces, for every stream and the
/// connection: 2^30 − 1, h2load's default (`-w 30 -W 30`); the client's are
/// the `h2_window` and `h2_connection_window` settings.
pub const WINDOW: u64 = (1 << 30) - 1;
/// Highest stream id (31 bits): a connection that reaches it is closed and
/// opened anew.
pub const MAX_STREAM: u32 = (1 << 31) - 1;

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

pub const SETTINGS_ENABLE_PUSH: u16 = 2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 5;

/// A frame's 9-byte header.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Head {
    pub len: u32,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    fn parse(b: &[u8; 9]) -> Head {
        Head {
            len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_STREAM,
        }
    }

    /// Its wire form.
    pub fn bytes(&self) -> [u8; 9] {
        let len = self.len.to_be_bytes();
        let stream = self.stream.to_be_bytes();
        [
            len[1], len[2], len[3], self.kind, self.flags, stream[0], stream[1], stream[2],
            stream[3],
        ]
    }
}

/// Appends a frame of `payload` to `out`.
pub fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let head = Head {
        len: payload.len() as u32,
        kind,
        flags,
        stream,
    };
    out.extend_from_slice(&head.bytes());
    out.extend_from_slice(payload);
}

/// Appends a SETTINGS frame of `(id, value)` pairs.
pub fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    let mut payload = Vec::with_capacity(pairs.len() * 6);
    for (id, value) in pairs {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(out, SETTINGS, 0, 0, &payload);
}

/// Appends a WINDOW_UPDATE of `increment` bytes on `stream` (0: the
/// connection); increments above 2^31 − 1 go as several frames.
pub fn window_update(out: &mut Vec<u8>, stream: u32, mut increment: u64) {
    while increment > 0 {
        let step = increment.min(u64::from(MAX_STREAM));
        frame(out, WINDOW_UPDATE, 0, stream, &(step as u32).to_be_bytes());
        increment -= step;
    }
}

/// What a frame reader hands over.
#[derive(Debug)]
pub enum Event<'a> {
    /// A whole frame other than DATA, with its payload.
    Frame(Head, &'a [u8]),
    /// `n` payload bytes of a DATA frame on `stream` (padding included, as
    /// flow control counts them); `end`: the last of a frame that ends its
    /// stream.
    Data { stream: u32, n: u32, end: bool },
}

/// Frames read across reads: a frame header split between reads is kept
/// (9 bytes), a control frame's payload split between them is copied until
/// whole (at most a frame's length), and DATA payloads are counted as they
/// pass, never copied. A frame that arrives whole is handed over where it
/// lies.
#[derive(Debug, Default)]
pub struct Reader {
    head_bytes: [u8; 9],
    /// Header bytes so far; 9: in a payload.
    have: u8,
    head: Head,
    /// Payload bytes still due of the frame in progress.
    left: u32,
    payload: Vec<u8>,
    /// Largest frame payload accepted (the SETTINGS_MAX_FRAME_SIZE this
    /// side announced); 0: the initial [`MAX_FRAME`].
    max_frame: u32,
}

impl Reader {
    fn max_frame(&self) -> u32 {
        if self.max_frame == 0 {
            MAX_FRAME
        } else {
            self.max_frame
        }
    }

    /// Whether a frame is partly read (for the lines that explain a
    /// connection cut short).
    pub fn mid_frame(&self) -> bool {
        self.have > 0
    }

    /// Feeds `bytes`, handing each frame (or DATA piece) to `on`.
    pub fn feed(
        &mut self,
        mut bytes: &[u8],
        mut on: impl FnMut(Event<'_>) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        while !bytes.is_empty() {
            if self.have < 9 {
                let take = (9 - self.have as usize).min(bytes.len());
                self.head_bytes[self.have as usize..self.have as usize + take]
                    .copy_from_slice(&bytes[..take]);
                self.have += take as u8;
                bytes = &bytes[take..];
                if self.have < 9 {
                    return Ok(());
                }
                self.head = Head::parse(&self.head_bytes);
                if self.head.len > self.max_frame() {
                    return Err(Fault(format!(
                        "an HTTP/2 frame of {} bytes, above the {} allowed: the peer does \
                         not speak HTTP/2, or breaks its frame size",
                        grouped(u64::from(self.head.len)),
                        grouped(u64::from(self.max_frame()))
                    )));
                }
                self.left = self.head.len;
                if self.left == 0 {
                    self.have = 0;
                    let h = self.head;
                    if h.kind == DATA {
                        on(Event::Data {
                            stream: h.stream,
                            n: 0,
                            end: h.flags & END_STREAM != 0,
                        })?;
                    } else {
                        on(Event::Frame(h, &[]))?;
                    }
                }
                continue;
            }
            let take = (self.left as usize).min(bytes.len());
            let (here, rest) = bytes.split_at(take);
            bytes = rest;
            self.left -= take as u32;
            let h = self.head;
            if self.left == 0 {
                self.have = 0;
            }
            if h.kind == DATA {
                on(Event::Data {
                    stream: h.stream,
                    n: take as u32,
                    end: self.left == 0 && h.flags & END_STREAM != 0,
                })?;
                continue;
            }
            if self.left == 0 && self.payload.is_empty() {
                on(Event::Frame(h, here))?;
                continue;
            }
            self.payload.extend_from_slice(here);
            if self.left == 0 {
                let payload = std::mem::take(&mut self.payload);
                let r = on(Event::Frame(h, &payload));
                self.payload = payload;
                self.payload.clear();
                r?;
            }
        }
        Ok(())
    }
}

/// The header block fragment of a HEADERS frame (its padding and priority
/// removed) or a CONTINUATION frame.
pub fn fragment<'a>(head: &Head, payload: &'a [u8]) -> Result<&'a [u8], Fault> {
    let bad = || {
        Fault(format!(
            "an HTTP/2 HEADERS frame on stream {} whose padding is longer than the frame",
            head.stream
        ))
    };
    if head.kind != HEADERS {
        return Ok(payload);
    }
    let mut p = payload;
    let mut pad = 0usize;
    if head.flags & PADDED != 0 {
        let (&n, rest) = p.split_first().ok_or_else(bad)?;
        pad = usize::from(n);
        p = rest;
    }
    if head.flags & PRIORITY_FLAG != 0 {
        p = p.get(5..).ok_or_else(bad)?;
    }
    p.get(..p.len().checked_sub(pad).ok_or_else(bad)?)
        .ok_or_else(bad)
}

/// A header block assembled from HEADERS and CONTINUATION frames: whole
/// blocks (END_HEADERS on the HEADERS frame, the usual case) are decoded
/// where they lie; the fragments of a split one are copied until its end.
#[derive(Debug, Default)]
pub struct Block {
    bytes: Vec<u8>,
    /// The stream of a block awaiting CONTINUATION (0: none) and whether
    /// its HEADERS frame ended the stream.
    stream: u32,
    end_stream: bool,
}

/// A whole header block: its stream, whether it ends the stream, and its
/// bytes.
pub struct Whole<'a> {
    pub stream: u32,
    pub end_stream: bool,
    pub bytes: &'a [u8],
}

impl Block {
    /// Takes a HEADERS or CONTINUATION frame; `whole` is called with the
    /// block once it is complete.
    pub fn take(
        &mut self,
        head: &Head,
        payload: &[u8],
        whole: impl FnOnce(Whole<'_>) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        let piece = fragment(head, payload)?;
        match head.kind {
            HEADERS if self.stream != 0 => Err(Fault(format!(
                "an HTTP/2 HEADERS frame on stream {} while stream {}'s header block awaited \
                 its CONTINUATION",
                head.stream, self.stream
            ))),
            CONTINUATION if self.stream != head.stream => Err(Fault(format!(
                "an HTTP/2 CONTINUATION frame on stream {} with no header block open",
                head.stream
            ))),
            HEADERS if head.flags & END_HEADERS != 0 => whole(Whole {
                stream: head.stream,
                end_stream: head.flags & END_STREAM != 0,
                bytes: piece,
            }),
            HEADERS => {
                self.stream = head.stream;
                self.end_stream = head.flags & END_STREAM != 0;
                self.bytes.clear();
                self.bytes.extend_from_slice(piece);
                Ok(())
            }
            _ => {
                self.bytes.extend_from_slice(piece);
                if head.flags & END_HEADERS == 0 {
                    return Ok(());
                }
                let stream = std::mem::take(&mut self.stream);
                let bytes = std::mem::take(&mut self.bytes);
                let r = whole(Whole {
                    stream,
                    end_stream: self.end_stream,
                    bytes: &bytes,
                });
                self.bytes = bytes;
                r
            }
        }
    }
}

/// An HPACK decoder (RFC 7541: the dynamic table a connection's blocks
/// build) and the buffers a block is decoded through, kept per
/// connection so that a block costs no allocation but its fields'.
#[derive(Debug, Default)]
pub struct Hpack {
    decoder: httlib_hpack::Decoder<'static>,
    buf: Vec<u8>,
    fields: Vec<(Vec<u8>, Vec<u8>, u8)>,
}

impl Hpack {
    /// Decodes a header block, handing each field to `field`.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Fault> {
        self.buf.clear();
        self.buf.extend_from_slice(block);
        self.fields.clear();
        self.decoder
            .decode(&mut self.buf, &mut self.fields)
            .map_err(|e| {
                Fault(format!(
                    "an HTTP/2 header block HPACK cannot decode ({e:?})"
                ))
            })?;
        for (name, value, _) in &self.fields {
            field(name, value);
        }
        Ok(())
    }
}

/// HPACK's static table entries this side writes (RFC 7541, appendix A).
pub mod index {
    pub const AUTHORITY: u32 = 1;
    pub const METHOD_GET: u32 = 2;
    pub const METHOD_POST: u32 = 3;
    pub const PATH: u32 = 4;
    pub const SCHEME_HTTP: u32 = 6;
    pub const SCHEME_HTTPS: u32 = 7;
    pub const STATUS_200: u32 = 8;
    pub const CONTENT_LENGTH: u32 = 28;
}

/// A header block of `indexed` static entries and `(name index, value)`
/// literals without indexing or Huffman coding: the same bytes whatever
/// came before, so its length is known.
pub fn block(indexed: &[u32], literals: &[(u32, &[u8])]) -> Vec<u8> {
    let mut encoder = httlib_hpack::Encoder::default();
    let mut out = Vec::with_capacity(64);
    for &i in indexed {
        encoder
            .encode_indexed(i, &mut out)
            .expect("a static table index");
    }
    for &(i, value) in literals {
        encoder
            .encode_indexed_name(i, value.to_vec(), 0, &mut out)
            .expect("a static table index");
    }
    out
}

/// The name of an HTTP/2 error code (RFC 9113 §7), for faults.
pub fn error_name(code: u32) -> &'static str {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES.get(code as usize).copied().unwrap_or("unknown")
}

/// A GOAWAY's last stream id, error code and debug text.
pub fn goaway(payload: &[u8]) -> (u32, u32, String) {
    let word = |i: usize| {
        payload
            .get(i..i + 4)
            .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let debug = payload.get(8..).unwrap_or_default();
    let debug = String::from_utf8_lossy(&debug[..debug.len().min(80)]).into_owned();
    (word(0) & MAX_STREAM, word(4), debug)
}

/// Digits of `n` in decimal.
fn digits(n: u64) -> u64 {
    n.checked_ilog10().map_or(1, |d| u64::from(d) + 1)
}

/// DATA frames that carry `body` bytes (none for an empty body: the
/// HEADERS frame ends the stream).
pub fn data_frames(body: u64) -> u64 {
    body.div_ceil(u64::from(MAX_FRAME))
}

/// Bytes of this responder's answer with a body of `body` bytes: a
/// HEADERS frame (`:status 200` indexed, `content-length` a literal with
/// an indexed name) and the DATA frames.
pub fn answer_len(body: u64) -> u64 {
    answer_head_len(body) + data_frames(body) * FRAME_HEAD + body
}

/// Bytes of the answer's HEADERS frame for a body of `body` bytes.
pub fn answer_head_len(body: u64) -> u64 {
    // 0x88 (:status 200); 0x0f 0x0d (content-length, index 28, without
    // indexing); the value's length and digits.
    FRAME_HEAD + 1 + 2 + 1 + digits(body)
}

/// The body whose answer is `response` bytes, or the least whose answer
/// is longer where none is exact (where a digit or a DATA frame is added),
/// 0 below the smallest answer.
pub fn body_for(response: u64) -> u64 {
    // answer_len is monotonic in the body: the least body reaching it.
    let (mut lo, mut hi) = (0u64, response);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if answer_len(mid) >= response {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// Writes into `out`, which holds bytes `offset..offset + out.len()` of a
/// message, what of `part` lies there when `part` is at `at..`; returns
/// where the part ends.
pub fn put(out: &mut [u8], offset: u64, at: u64, part: &[u8]) -> u64 {
    let end = at + part.len() as u64;
    let lo = offset.max(at);
    let hi = (offset + out.len() as u64).min(end);
    if lo < hi {
        out[(lo - offset) as usize..(hi - offset) as usize]
            .copy_from_slice(&part[(lo - at) as usize..(hi - at) as usize]);
    }
    end
}

/// [`put`] for the DATA frames of `body` bytes on `stream` at `at..`, the
/// last ending the stream: only their headers are written (a payload is
/// any bytes). Returns where they end.
pub fn put_data(out: &mut [u8], offset: u64, at: u64, stream: u32, body: u64) -> u64 {
    let step = FRAME_HEAD + u64::from(MAX_FRAME);
    let frames = data_frames(body);
    let end = at + frames * FRAME_HEAD + body;
    let window_end = offset + out.len() as u64;
    if window_end <= at || offset >= end {
        return end;
    }
    let first = offset.saturating_sub(at) / step;
    let mut k = first;
    while k < frames {
        let start = at + k * step;
        if start >= window_end {
            break;
        }
        let last = k + 1 == frames;
        let len = if last {
            body - k * u64::from(MAX_FRAME)
        } else {
            u64::from(MAX_FRAME)
        };
        let head = Head {
            len: len as u32,
            kind: DATA,
            flags: if last { END_STREAM } else { 0 },
            stream,
        };
        put(out, offset, start, &head.bytes());
        k += 1;
    }
    end
}
