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
            let ahead = if self.kept.len() < TRANSFER.len() {
                TRANSFER.len() - self.kept.len()
            } else {
                usize::MAX
            };
            let take = (self.left.min(chunk.len() as u64) as usize).min(ahead);
            let limit = if self.kept.starts_with(&TRANSFER) {
                TRANSFER_KEEP_BYTES
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
    let width = match code >> 4 {
        0x4 => 0,
        0x5 => 1,
        0x6 => 2,
        0x7 => 4,
        0x8 => 8,
        0x9 => 16,
        0xa | 0xc | 0xe => 1 + usize::from(*b.get(1)?),
        0xb | 0xd | 0xf => {
            let n = u32::from_be_bytes(b.get(1..5)?.try_into().ok()?);
            4 + usize::try_from(n).ok()?
        }
        _ => return None,
    };
    let len = 1 + width;
    (b.len() >= len).then_some(len)
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

/// Decodes the value `b` holds exactly, naming `what` in the fault.
pub fn decode<'a, T: Deserialize<'a>>(b: &'a [u8], what: &str) -> Result<T, Fault> {
    serde_amqp::from_slice(b).map_err(|e| Fault(format!("a malformed {what} ({e})")))
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
