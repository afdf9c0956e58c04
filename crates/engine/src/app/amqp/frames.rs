//! AMQP 1.0 framing (OASIS AMQP 1.0, part 2.3): protocol headers, frames
//! read from a byte stream split anywhere, frames written, and the few
//! facts about encoded values (1.6) that reading a transfer needs without
//! decoding its message. Performatives, SASL bodies and message sections
//! are encoded and decoded by `serde_amqp` with `fe2o3-amqp-types`' types;
//! the 8-byte frame header and the value lengths are written here.

use fe2o3_amqp_types::performatives::Performative;
use serde::{Deserialize, Serialize};

use crate::app::Fault;

/// The header that opens the SASL layer (protocol id 3, version 1.0.0).
pub const SASL_HEADER: [u8; 8] = *b"AMQP\x03\x01\x00\x00";
/// The header that opens the AMQP layer (protocol id 0, version 1.0.0).
pub const AMQP_HEADER: [u8; 8] = *b"AMQP\x00\x01\x00\x00";
/// Frame type of AMQP frames and of SASL frames.
pub const TYPE_AMQP: u8 = 0;
pub const TYPE_SASL: u8 = 1;

/// SASL descriptors (5.3.3).
pub const SASL_MECHANISMS: u64 = 0x40;
pub const SASL_INIT: u64 = 0x41;
pub const SASL_OUTCOME: u64 = 0x44;

/// Message section descriptors (3.2).
pub const SECTION_HEADER: u64 = 0x70;
pub const SECTION_PROPERTIES: u64 = 0x73;
pub const SECTION_APPLICATION_PROPERTIES: u64 = 0x74;
pub const SECTION_DATA: u64 = 0x75;

/// Bytes of a frame kept for decoding: all of a frame up to this, and the
/// first this many of a longer one.
pub const KEEP_BYTES: usize = 64 * 1024;
/// Bytes of a transfer frame kept: its performative and its message's
/// leading sections (header, annotations, properties: a few hundred bytes
/// from a broker); its body is counted, never copied, so a connection
/// keeps at most this much of a message between reads.
pub const TRANSFER_KEEP_BYTES: usize = 2048;
/// Bytes of a transfer frame kept when its message names a
/// content-encoding (a compressed body, decompressed from memory): all of
/// it up to this.
pub const ENCODED_KEEP_BYTES: usize = 64 << 20;
/// How a transfer frame's body begins (described type 0x14).
const TRANSFER: [u8; 3] = [0x00, 0x53, 0x14];

/// What a peer sent, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum In<'a> {
    /// A protocol header (8 bytes).
    Header([u8; 8]),
    /// A frame: its type, channel, and body (after the extended header):
    /// `kept` its first bytes (all of them up to [`KEEP_BYTES`]), `len` all.
    Frame {
        kind: u8,
        channel: u16,
        kept: &'a [u8],
        len: u64,
    },
}

/// A frame reader: protocol headers and frames out of a stream of chunks.
/// Holds at most [`KEEP_BYTES`] of one frame, whatever its size.
#[derive(Debug, Default)]
pub struct Reader {
    /// Bytes of a header (protocol or frame) read so far.
    head: [u8; 8],
    head_len: u8,
    /// A protocol header is due next rather than a frame.
    pub header_next: bool,
    /// The current frame: its type, channel, bytes to skip at its body's
    /// start (extended header), body bytes still to come, and the total.
    kind: u8,
    channel: u16,
    skip: u32,
    left: u64,
    len: u64,
    in_frame: bool,
    kept: Vec<u8>,
    /// The current transfer was looked at once [`TRANSFER_KEEP_BYTES`] of
    /// it were kept, and its message names a content-encoding: kept whole.
    looked: bool,
    encoded: bool,
}

impl Reader {
    /// A reader that expects a protocol header first.
    pub fn expecting_header() -> Reader {
        Reader {
            header_next: true,
            ..Reader::default()
        }
    }

    /// Bytes still due of what is being read (at least 1).
    pub fn due(&self) -> u64 {
        if self.in_frame {
            (self.left + u64::from(self.skip)).max(1)
        } else {
            (8 - u64::from(self.head_len)).max(1)
        }
    }

    /// Frees the kept buffer's heap after a long frame (an `open` with many
    /// properties): between messages a connection keeps at most
    /// [`TRANSFER_KEEP_BYTES`].
    pub fn shrink(&mut self) {
        if self.kept.capacity() > TRANSFER_KEEP_BYTES {
            self.kept = Vec::new();
        }
    }

    /// Feeds `chunk`, calling `on` with each header and complete frame in
    /// order; `on` says whether a protocol header comes next.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        mut on: impl FnMut(In<'_>) -> Result<bool, Fault>,
    ) -> Result<(), Fault> {
        while !chunk.is_empty() || (self.in_frame && self.left == 0 && self.skip == 0) {
            if !self.in_frame {
                let take = (8 - usize::from(self.head_len)).min(chunk.len());
                let at = usize::from(self.head_len);
                self.head[at..at + take].copy_from_slice(&chunk[..take]);
                self.head_len += take as u8;
                chunk = &chunk[take..];
                if self.head_len < 8 {
                    return Ok(());
                }
                self.head_len = 0;
                if self.header_next {
                    self.header_next = on(In::Header(self.head))?;
                    continue;
                }
                self.begin_frame()?;
                continue;
            }
            let skip = (self.skip as usize).min(chunk.len());
            self.skip -= skip as u32;
            chunk = &chunk[skip..];
            // The first 3 bytes say whether the frame is a transfer, and so
            // how much of it to keep.
            // and a transfer's first TRANSFER_KEEP_BYTES whether its
            // message names a content-encoding (kept whole).
            let ahead = if self.kept.len() < TRANSFER.len() {
                TRANSFER.len() - self.kept.len()
            } else if !self.looked
                && self.kept.len() < TRANSFER_KEEP_BYTES
                && self.kept.starts_with(&TRANSFER)
            {
                TRANSFER_KEEP_BYTES - self.kept.len()
            } else {
                usize::MAX
            };
            let take = (self.left.min(chunk.len() as u64) as usize).min(ahead);
            let limit = if self.kept.starts_with(&TRANSFER) {
                if !self.looked && self.kept.len() >= TRANSFER_KEEP_BYTES {
                    self.looked = true;
                    self.encoded = transfer_encoded(&self.kept);
                }
                if self.encoded {
                    ENCODED_KEEP_BYTES
                } else {
                    TRANSFER_KEEP_BYTES
                }
            } else {
                KEEP_BYTES
            };
            let room = limit.saturating_sub(self.kept.len()).min(take);
            self.kept.extend_from_slice(&chunk[..room]);
            self.left -= take as u64;
            chunk = &chunk[take..];
            if self.left == 0 && self.skip == 0 {
                self.in_frame = false;
                let frame = In::Frame {
                    kind: self.kind,
                    channel: self.channel,
                    kept: &self.kept,
                    len: self.len,
                };
                self.header_next = on(frame)?;
                self.kept.clear();
            } else if chunk.is_empty() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// A frame header was read: checks it and starts the frame's body.
    fn begin_frame(&mut self) -> Result<(), Fault> {
        let h = self.head;
        if &h[..4] == b"AMQP" || &h[..4] == b"HTTP" {
            return Err(Fault(format!(
                "a header {} where a frame was due: the peer is not in step",
                show_header(&h)
            )));
        }
        let size = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let doff = u32::from(h[4]) * 4;
        if doff < 8 || size < doff {
            return Err(Fault(format!(
                "a frame of {size} bytes with data offset {doff}: not an AMQP 1.0 frame \
                 (is the peer an AMQP 1.0 broker or stackbench serve?)"
            )));
        }
        self.kind = h[5];
        self.channel = u16::from_be_bytes([h[6], h[7]]);
        self.skip = doff - 8;
        self.len = u64::from(size - doff);
        self.left = self.len;
        self.in_frame = true;
        self.kept.clear();
        self.looked = false;
        self.encoded = false;
        Ok(())
    }
}

/// A protocol header as text: `AMQP 1.0.0 (SASL)`, or its bytes.
pub fn show_header(h: &[u8; 8]) -> String {
    if &h[..4] == b"AMQP" {
        let layer = match h[4] {
            0 => "AMQP",
            2 => "TLS",
            3 => "SASL",
            _ => "unknown",
        };
        return format!("AMQP {}.{}.{} ({layer})", h[5], h[6], h[7]);
    }
    let text: String = h
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    format!("{text:?}")
}

/// Checks a protocol header the peer sent against `want`, naming what a
/// peer of another protocol is.
pub fn check_header(got: &[u8; 8], want: &[u8; 8]) -> Result<(), Fault> {
    if got == want {
        return Ok(());
    }
    let what = if &got[..4] == b"AMQP" && got[4..] == [0, 0, 9, 1] {
        "an AMQP 0-9-1 broker (RabbitMQ without its AMQP 1.0 plugin?)".to_string()
    } else if &got[..4] == b"HTTP" {
        "an HTTP server".to_string()
    } else if &got[..4] == b"AMQP" {
        format!("an AMQP peer that answers {}", show_header(got))
    } else {
        format!("not an AMQP peer (it sent {})", show_header(got))
    };
    Err(Fault(format!(
        "expected the header {}, got {}: {what}",
        show_header(want),
        show_header(got)
    )))
}

/// Appends a frame of `kind` on `channel` whose body is `value` encoded
/// (a transfer's message sections may follow: [`push_value`],
/// [`push_data_head`]); returns where the frame starts.
pub fn push<T: Serialize>(
    out: &mut Vec<u8>,
    kind: u8,
    channel: u16,
    value: &T,
) -> Result<usize, Fault> {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, 2, kind, 0, 0]);
    out[start + 6..start + 8].copy_from_slice(&channel.to_be_bytes());
    let mut ser = serde_amqp::ser::Serializer::new(&mut *out);
    value
        .serialize(&mut ser)
        .map_err(|e| Fault(format!("encoding an AMQP frame failed: {e}")))?;
    set_frame_size(out, start, 0);
    Ok(start)
}

/// Appends an encoded value (a message section) to the frame begun at
/// `start`, keeping its size right.
pub fn push_value<T: Serialize>(out: &mut Vec<u8>, start: usize, value: &T) -> Result<(), Fault> {
    let mut ser = serde_amqp::ser::Serializer::new(&mut *out);
    value
        .serialize(&mut ser)
        .map_err(|e| Fault(format!("encoding an AMQP message section failed: {e}")))?;
    set_frame_size(out, start, 0);
    Ok(())
}

/// Appends the constructor of a data section of `body_bytes` bytes (the
/// bytes themselves follow on the wire) to the frame begun at `start`,
/// whose size then counts them.
pub fn push_data_head(out: &mut Vec<u8>, start: usize, body_bytes: u32) {
    out.extend_from_slice(&[0x00, 0x53, SECTION_DATA as u8, 0xb0]);
    out.extend_from_slice(&body_bytes.to_be_bytes());
    set_frame_size(out, start, u64::from(body_bytes));
}

/// Writes the size of the frame begun at `start` (its bytes in `out` from
/// there, plus `more` that follow).
fn set_frame_size(out: &mut [u8], start: usize, more: u64) {
    let size = (out.len() - start) as u64 + more;
    let size = u32::try_from(size).unwrap_or(u32::MAX);
    out[start..start + 4].copy_from_slice(&size.to_be_bytes());
}

/// Appends an application-properties section naming the reply body's
/// size (`{"z": ulong}`, 18 bytes) to the frame begun at `start`: what a
/// responder application against a broker answers with.
pub fn push_reply_bytes(out: &mut Vec<u8>, start: usize, reply_bytes: u64) {
    // map8: size (count byte and entries: str8 "z" 3, ulong 9), count 2.
    out.extend_from_slice(&[
        0x00,
        0x53,
        SECTION_APPLICATION_PROPERTIES as u8,
        0xc1,
        13,
        2,
    ]);
    out.extend_from_slice(&[0xa1, 1, b'z', 0x80]);
    out.extend_from_slice(&reply_bytes.to_be_bytes());
    set_frame_size(out, start, 0);
}

/// Appends an empty frame (a heartbeat: 2.4.5).
#[cfg(test)]
pub fn push_empty(out: &mut Vec<u8>) {
    out.extend_from_slice(&[0, 0, 0, 8, 2, TYPE_AMQP, 0, 0]);
}

/// Length of the encoded value at the start of `b` (1.6: the constructor
/// says it), `None` when `b` is too short or not an AMQP encoding.
pub fn value_len(b: &[u8]) -> Option<usize> {
    let code = *b.first()?;
    if code == 0x00 {
        let descriptor = value_len(b.get(1..)?)?;
        let value = value_len(b.get(1 + descriptor..)?)?;
        return Some(1 + descriptor + value);
    }
    let len = 1 + width(code, b.get(1..)?)?;
    (b.len() >= len).then_some(len)
}

/// Bytes after constructor `code` (not described) that its value takes, as
/// its width or its size field says, `b` being the bytes after the
/// constructor; `None`: not a constructor of AMQP's, or `b` too short to
/// say.
fn width(code: u8, b: &[u8]) -> Option<usize> {
    Some(match code >> 4 {
        0x4 => 0,
        0x5 => 1,
        0x6 => 2,
        0x7 => 4,
        0x8 => 8,
        0x9 => 16,
        0xa | 0xc | 0xe => 1 + usize::from(*b.first()?),
        0xb | 0xd | 0xf => {
            4 + usize::try_from(u32::from_be_bytes(b.get(..4)?.try_into().ok()?)).ok()?
        }
        _ => return None,
    })
}

/// The numeric descriptor of the described value at the start of `b`
/// (`0x00` then a small ulong, a ulong or ulong 0), `None` otherwise.
pub fn descriptor(b: &[u8]) -> Option<u64> {
    match b {
        [0x00, 0x53, code, ..] => Some(u64::from(*code)),
        [0x00, 0x44, ..] => Some(0),
        [0x00, 0x80, rest @ ..] => Some(u64::from_be_bytes(rest.get(..8)?.try_into().ok()?)),
        _ => None,
    }
}

/// Decodes the value `b` holds exactly, naming `what` in the fault. The
/// encoding is walked first ([`well_formed`]): serde_amqp allocates the
/// length a string, binary or symbol declares before it finds the bytes
/// missing, so a peer's 32-bit length past the frame would reserve up to
/// 4 GiB (found by the `amqp_client` fuzz target).
pub fn decode<'a, T: Deserialize<'a>>(b: &'a [u8], what: &str) -> Result<T, Fault> {
    if well_formed(b) != Some(b.len()) {
        return Err(Fault(format!(
            "a malformed {what} (a length or count runs past its {} bytes)",
            b.len()
        )));
    }
    serde_amqp::from_slice(b).map_err(|e| Fault(format!("a malformed {what} ({e})")))
}

/// Length of the encoded value at the start of `b` with every length and
/// count inside it (lists, maps, arrays, described values) within `b`;
/// `None` when one runs past it or a constructor is not AMQP's.
pub fn well_formed(b: &[u8]) -> Option<usize> {
    match *b.first()? {
        0x00 => {
            let descriptor = well_formed(b.get(1..)?)?;
            let value = well_formed(b.get(1 + descriptor..)?)?;
            Some(1 + descriptor + value)
        }
        code => Some(1 + element(code, b.get(1..)?)?),
    }
}

/// Length of one value of constructor `code` whose bytes (after the
/// constructor) start `b`, nested values checked.
fn element(code: u8, b: &[u8]) -> Option<usize> {
    let (head, size, count) = match code {
        0xc0 | 0xc1 | 0xe0 => (1, usize::from(*b.first()?), usize::from(*b.get(1)?)),
        0xd0 | 0xd1 | 0xf0 => {
            let size = u32::from_be_bytes(b.get(..4)?.try_into().ok()?);
            let count = u32::from_be_bytes(b.get(4..8)?.try_into().ok()?);
            (4, usize::try_from(size).ok()?, usize::try_from(count).ok()?)
        }
        _ => {
            let len = width(code, b)?;
            return (b.len() >= len).then_some(len);
        }
    };
    // `size` counts the count's bytes and the elements.
    if size < head {
        return None;
    }
    let body = b.get(head..head + size)?;
    let mut at = head;
    if code == 0xe0 || code == 0xf0 {
        // One constructor (perhaps described), then `count` values of it.
        let mut cons = *body.get(at)?;
        at += 1;
        if cons == 0x00 {
            at += well_formed(body.get(at..)?)?;
            cons = *body.get(at)?;
            at += 1;
        }
        for _ in 0..count {
            let n = element(cons, body.get(at..)?)?;
            if n == 0 && count > body.len() {
                return None;
            }
            at += n;
        }
    } else {
        for _ in 0..count {
            at += well_formed(body.get(at..)?)?;
        }
    }
    (at == body.len()).then_some(head + size)
}

/// The performative at the start of an AMQP frame's body, and the bytes
/// after it (a transfer's message).
pub fn performative(kept: &[u8]) -> Result<(Performative, usize), Fault> {
    let len = value_len(kept).ok_or_else(|| {
        Fault(
            "an AMQP frame whose performative does not parse: is the peer speaking AMQP 1.0?"
                .to_string(),
        )
    })?;
    Ok((decode(&kept[..len], "performative")?, len))
}

/// Where a message's body begins in `message` (the first bytes of a
/// transfer's payload) and the sections before it: the header's and
/// properties' encodings, each if present; `None` when the sections before
/// the body are not all in `message`.
pub struct Sections<'a> {
    pub header: Option<&'a [u8]>,
    pub properties: Option<&'a [u8]>,
    pub application_properties: Option<&'a [u8]>,
    /// Where the body's bytes begin (a data section's, after its
    /// constructor; another body section's encoding, at its start).
    pub body_at: usize,
}

/// Splits the leading sections of a message (3.2): header, annotations,
/// properties and application properties, up to the first body section.
pub fn sections(message: &[u8]) -> Option<Sections<'_>> {
    let mut at = 0;
    let (mut header, mut properties, mut application_properties) = (None, None, None);
    loop {
        let rest = message.get(at..)?;
        let code = descriptor(rest)?;
        if code == SECTION_DATA {
            // 0x00 0x53 0x75, then vbin8 or vbin32 and the bytes.
            let head = match rest.get(3)? {
                0xa0 => 5,
                0xb0 => 8,
                _ => return None,
            };
            return Some(Sections {
                header,
                properties,
                application_properties,
                body_at: at + head,
            });
        }
        let len = value_len(rest)?;
        match code {
            SECTION_HEADER => header = Some(&rest[..len]),
            SECTION_PROPERTIES => properties = Some(&rest[..len]),
            SECTION_APPLICATION_PROPERTIES => application_properties = Some(&rest[..len]),
            // amqp-sequence or amqp-value: a body of another form, counted
            // as its encoding.
            0x76 | 0x77 => {
                return Some(Sections {
                    header,
                    properties,
                    application_properties,
                    body_at: at,
                })
            }
            _ => {}
        }
        at += len;
    }
}

/// Where a [`transfer_template`]'s per-message fields are, to patch in place.
#[derive(Debug, Default, Clone, Copy)]
pub struct TemplateAt {
    /// The delivery id (a 4-byte uint), the delivery tag (8 bytes), the
    /// message id (an 8-byte ulong).
    pub delivery_id: usize,
    pub delivery_tag: usize,
    pub message_id: usize,
}

/// What a connection's transfers hold that does not change per message.
pub struct TransferShape<'a> {
    pub handle: u32,
    pub settled: bool,
    pub durable: bool,
    pub reply_to: Option<&'a str>,
    pub content_type: Option<&'a str>,
    /// The body's content-encoding (a compressed body).
    pub content_encoding: Option<&'a str>,
    /// The reply body's size, named in an application property.
    pub reply_bytes: Option<u64>,
    pub body_bytes: u32,
}

/// Appends a transfer frame of one message up to its body, with its
/// per-message fields (delivery id and tag, message id) in fixed-width
/// encodings so that each message patches them in place ([`patch`])
/// instead of encoding the frame again: the transfer (handle, delivery id,
/// tag, message format 0, settled), the header section (durable), the
/// properties (message id, reply-to, content type), the reply size's
/// application property and the data section's constructor. The same
/// values as `serde_amqp` writes, in the wider of the encodings AMQP allows
/// for each (1.6), so every peer decodes them alike.
pub fn transfer_template(out: &mut Vec<u8>, shape: &TransferShape<'_>) -> TemplateAt {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, 2, TYPE_AMQP, 0, 0]);
    // transfer: list8 of 5 (size: the count byte and 5 + 5 + 10 + 1 + 1).
    out.extend_from_slice(&[0x00, 0x53, 0x14, 0xc0, 23, 5, 0x70]);
    out.extend_from_slice(&shape.handle.to_be_bytes());
    out.push(0x70);
    let delivery_id = out.len();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&[0xa0, 8]);
    let delivery_tag = out.len();
    out.extend_from_slice(&[0; 8]);
    out.push(0x43);
    out.push(if shape.settled { 0x41 } else { 0x42 });
    if shape.durable {
        out.extend_from_slice(&[0x00, 0x53, SECTION_HEADER as u8, 0xc0, 2, 1, 0x41]);
    }
    let mut fields = vec![0x80];
    let message_id_in_fields = fields.len();
    fields.extend_from_slice(&[0; 8]);
    let mut count = 1u32;
    if shape.reply_to.is_some() || shape.content_type.is_some() || shape.content_encoding.is_some()
    {
        // user-id, to, subject: null.
        fields.extend_from_slice(&[0x40, 0x40, 0x40]);
        match shape.reply_to {
            Some(r) => push_str(&mut fields, 0xa1, 0xb1, r),
            None => fields.push(0x40),
        }
        count = 5;
    }
    if shape.content_type.is_some() || shape.content_encoding.is_some() {
        fields.push(0x40); // correlation-id
        match shape.content_type {
            Some(c) => push_str(&mut fields, 0xa3, 0xb3, c),
            None => fields.push(0x40),
        }
        count = 7;
    }
    if let Some(e) = shape.content_encoding {
        push_str(&mut fields, 0xa3, 0xb3, e);
        count = 8;
    }
    out.extend_from_slice(&[0x00, 0x53, SECTION_PROPERTIES as u8]);
    let message_id = out.len() + push_list_head(out, fields.len(), count) + message_id_in_fields;
    out.extend_from_slice(&fields);
    if let Some(z) = shape.reply_bytes {
        push_reply_bytes(out, start, z);
    }
    push_data_head(out, start, shape.body_bytes);
    TemplateAt {
        delivery_id,
        delivery_tag,
        message_id,
    }
}

/// Writes a message's delivery id (its tag too) and message id into a
/// template copied to `out` at `base`.
pub fn patch(out: &mut [u8], base: usize, at: &TemplateAt, delivery_id: u32, message_id: u64) {
    let put =
        |out: &mut [u8], i: usize, b: &[u8]| out[base + i..base + i + b.len()].copy_from_slice(b);
    put(out, at.delivery_id, &delivery_id.to_be_bytes());
    put(out, at.delivery_tag, &u64::from(delivery_id).to_be_bytes());
    put(out, at.message_id, &message_id.to_be_bytes());
}

/// Appends a string or symbol: its short form (`short` code, 1-byte length)
/// up to 255 bytes, its long one beyond.
fn push_str(out: &mut Vec<u8>, short: u8, long: u8, s: &str) {
    match u8::try_from(s.len()) {
        Ok(n) => out.extend_from_slice(&[short, n]),
        Err(_) => {
            out.push(long);
            out.extend_from_slice(&(s.len() as u32).to_be_bytes());
        }
    }
    out.extend_from_slice(s.as_bytes());
}

/// Appends a list's constructor, size and count for `fields` bytes of
/// `count` elements (list8 when it fits); returns the bytes appended.
fn push_list_head(out: &mut Vec<u8>, fields: usize, count: u32) -> usize {
    match u8::try_from(fields + 1) {
        Ok(size) => {
            out.extend_from_slice(&[0xc0, size, count as u8]);
            3
        }
        Err(_) => {
            out.push(0xd0);
            out.extend_from_slice(&((fields + 4) as u32).to_be_bytes());
            out.extend_from_slice(&count.to_be_bytes());
            9
        }
    }
}

/// Appends a disposition frame accepting and settling delivery `id` (the
/// receiver's), as `serde_amqp` would write it with a fixed-width id.
pub fn push_accept(out: &mut Vec<u8>, id: u32) {
    out.extend_from_slice(&[0, 0, 0, 26, 2, TYPE_AMQP, 0, 0]);
    // disposition: list8 of 5: role receiver, first, last null, settled,
    // state accepted (an empty described list).
    out.extend_from_slice(&[0x00, 0x53, 0x15, 0xc0, 13, 5, 0x41, 0x70]);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0x40, 0x41, 0x00, 0x53, 0x24, 0x45]);
}

/// What a transfer says about its delivery, read without decoding it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferHead {
    pub handle: u32,
    pub delivery_id: Option<u32>,
    pub settled: Option<bool>,
    pub more: bool,
}

/// The fields of a transfer performative at the start of `kept` and its
/// length, read in place (no allocation); `None` when it is not a transfer
/// or uses an encoding this reader does not take (the caller then decodes
/// it with `serde_amqp`).
pub fn transfer_head(kept: &[u8]) -> Option<(TransferHead, usize)> {
    if !kept.starts_with(&TRANSFER) {
        return None;
    }
    let len = value_len(kept)?;
    let (mut at, count) = list_elements(kept.get(3..len)?)?;
    at += 3;
    let mut head = TransferHead {
        handle: 0,
        delivery_id: None,
        settled: None,
        more: false,
    };
    for i in 0..count.min(6) {
        let v = kept.get(at..len)?;
        let n = value_len(v)?;
        match i {
            0 => head.handle = uint(v)??,
            1 => head.delivery_id = uint(v)?,
            4 => head.settled = boolean(v)?,
            5 => head.more = boolean(v)?.unwrap_or(false),
            _ => {}
        }
        at += n;
    }
    Some((head, len))
}

/// Where a list's first element is (from its constructor) and how many
/// elements it has.
fn list_elements(b: &[u8]) -> Option<(usize, u32)> {
    match *b.first()? {
        0x45 => Some((1, 0)),
        0xc0 => Some((3, u32::from(*b.get(2)?))),
        0xd0 => Some((9, u32::from_be_bytes(b.get(5..9)?.try_into().ok()?))),
        _ => None,
    }
}

/// A uint or null: `Some(None)` for null, `None` for another encoding.
fn uint(v: &[u8]) -> Option<Option<u32>> {
    match *v.first()? {
        0x40 => Some(None),
        0x43 => Some(Some(0)),
        0x52 => Some(Some(u32::from(*v.get(1)?))),
        0x70 => Some(Some(u32::from_be_bytes(v.get(1..5)?.try_into().ok()?))),
        _ => None,
    }
}

/// A boolean or null, as [`uint`].
fn boolean(v: &[u8]) -> Option<Option<bool>> {
    match *v.first()? {
        0x40 => Some(None),
        0x41 => Some(Some(true)),
        0x42 => Some(Some(false)),
        0x56 => Some(Some(*v.get(1)? != 0)),
        _ => None,
    }
}

/// Whether a transfer frame's message (its first bytes, `kept`) names a
/// content-encoding in its properties.
fn transfer_encoded(kept: &[u8]) -> bool {
    transfer_head(kept)
        .and_then(|(_, len)| sections(&kept[len..]))
        .and_then(|s| s.properties)
        .is_some_and(properties_encoded)
}

/// Whether an encoded properties section's content-encoding (field 7) is
/// there and not null.
pub fn properties_encoded(section: &[u8]) -> bool {
    let field = || -> Option<bool> {
        if !section.starts_with(&[0x00, 0x53, SECTION_PROPERTIES as u8]) {
            return None;
        }
        let (mut at, count) = list_elements(&section[3..])?;
        at += 3;
        if count <= 7 {
            return Some(false);
        }
        for _ in 0..7 {
            at += value_len(section.get(at..)?)?;
        }
        Some(*section.get(at)? != 0x40)
    };
    field().unwrap_or(false)
}

/// Field `index` of an encoded properties section when it is a ulong
/// message id (`Some(Some(id))`) or absent or null (`Some(None)`); `None`
/// for another encoding (a string or uuid id: decode it in full).
pub fn properties_ulong(section: &[u8], index: u32) -> Option<Option<u64>> {
    if !section.starts_with(&[0x00, 0x53, SECTION_PROPERTIES as u8]) {
        return None;
    }
    let (mut at, count) = list_elements(&section[3..])?;
    at += 3;
    if index >= count {
        return Some(None);
    }
    for _ in 0..index {
        at += value_len(section.get(at..)?)?;
    }
    let v = section.get(at..)?;
    match *v.first()? {
        0x40 => Some(None),
        0x44 => Some(Some(0)),
        0x53 => Some(Some(u64::from(*v.get(1)?))),
        0x80 => Some(Some(u64::from_be_bytes(v.get(1..9)?.try_into().ok()?))),
        _ => None,
    }
}
