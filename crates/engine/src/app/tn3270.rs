//! TN3270 (RFC 1576, 3270 terminals over Telnet) and TN3270E (RFC 2355)
//! as an application protocol: the driver's [`Client`] codec, a terminal
//! (`client.rs`), and the responder's [`Server`] handler (`server.rs`), an
//! echo-style application such as ITPECHO that answers every Enter with
//! one screen. This file holds what both halves share: the Telnet scanner,
//! the record parse, the records' bytes and the TN3270E codes.
//!
//! Setup. A connection opens with the server's Telnet negotiation. A z/OS
//! TN3270 server, and stackbench's responder unless told to refuse
//! (`responder_tn3270e refuse`), offers TN3270E first: `DO TN3270E`; a
//! terminal that agrees (`WILL`) is asked for its device type (`SB TN3270E
//! SEND DEVICE-TYPE`), requests one (`DEVICE-TYPE REQUEST IBM-3278-2-E`,
//! with `CONNECT <LU>` when it wants a particular LU), is told the type and
//! LU it got (`DEVICE-TYPE IS … CONNECT <LU>`, or `REJECT REASON <code>`),
//! then asks for the functions it wants (`FUNCTIONS REQUEST BIND-IMAGE
//! RESPONSES SYSREQ`, what x3270/s3270 ask for), which the server grants
//! (`FUNCTIONS IS`) or narrows (`FUNCTIONS REQUEST <subset>`, which the
//! terminal accepts with `FUNCTIONS IS`). The server then sends the SNA
//! BIND image (a BIND-IMAGE record, when that function was agreed) and the
//! first screen. TN3270E needs no TERMINAL-TYPE, BINARY or EOR negotiation:
//! the option implies them. A terminal that refuses TN3270E (`WONT`) gets
//! plain TN3270's negotiation: `DO TERMINAL-TYPE`, `SB TERMINAL-TYPE SEND`
//! (answered `IS IBM-3278-2-E`), `DO`/`WILL` of END-OF-RECORD and BINARY,
//! then the first screen. The client answers whatever the server asks, in
//! any order and split over any reads, each option request once, as x3270
//! does (pmattes/x3270, Common/telnet.c): `tn3270e auto` agrees to TN3270E
//! and falls back to plain TN3270 when the server refuses it or rejects the
//! device type; `on` makes either a fault; `off` refuses it.
//!
//! Records. Every record ends `IAC EOR` and doubles any `0xFF` of its data
//! (`IAC IAC`). In TN3270E each record begins with a 5-byte header: data
//! type (3270-DATA, BIND-IMAGE, RESPONSE, …), request flag, response flag
//! (NO-, ERROR- or ALWAYS-RESPONSE on the server's data) and a sequence
//! number. A request is one inbound record: the Enter AID, the cursor
//! address, an SBA order with a field's address and the field's data; the
//! answer is one outbound record: Erase/Write, a WCC, SBA, a start-field
//! order, the screen's data and an insert-cursor order. The notation's
//! sizes are these records on the wire, the TN3270E header, `IAC EOR` and
//! any doubled `0xFF` included, so `RR(100B/800B)` is a terminal sending
//! 100 bytes and receiving 800 per transaction in either mode; a size
//! below the smallest record (8 bytes in and 10 out, TN3270E 13 and 15) is
//! raised to it. Only 3270-DATA records are transactions: a BIND-IMAGE, a
//! RESPONSE or an SSCP-LU record between them is read and not counted.
//! Records are never pipelined, so bytes past the answer's `IAC EOR` are a
//! fault, as are a record that begins with no 3270 command (answers) or
//! AID (requests). Telnet commands between records are answered: a NOP is
//! skipped, `DO TIMING-MARK` answered `WILL TIMING-MARK` each time, a late
//! option request once. What the terminal owes the server after a response
//! (such an answer, or the definite response an answer's header asked for:
//! ALWAYS-RESPONSE) goes ahead of its next request, in the same write;
//! during the logon, at once (but a CRR logon screen's definite response
//! goes with the request: see `Session::record_end`).

pub mod client;
pub mod demo;
pub mod row;
pub mod screen;
pub mod script;
pub mod server;

use super::Fault;

const IAC: u8 = 0xFF;
const DONT: u8 = 0xFE;
const DO: u8 = 0xFD;
const WONT: u8 = 0xFC;
const WILL: u8 = 0xFB;
const SB: u8 = 0xFA;
const SE: u8 = 0xF0;
/// The Telnet command that ends a record (option END-OF-RECORD agreed).
const EOR: u8 = 0xEF;

const OPT_BINARY: u8 = 0;
const OPT_TIMING_MARK: u8 = 6;
const OPT_TTYPE: u8 = 24;
const OPT_EOR: u8 = 25;
const OPT_TN3270E: u8 = 40;
const TTYPE_IS: u8 = 0;
const TTYPE_SEND: u8 = 1;

/// TN3270E subnegotiation operations (RFC 2355 section 3).
const E_CONNECT: u8 = 1;
const E_DEVICE_TYPE: u8 = 2;
const E_FUNCTIONS: u8 = 3;
const E_IS: u8 = 4;
const E_REASON: u8 = 5;
const E_REJECT: u8 = 6;
const E_REQUEST: u8 = 7;
const E_SEND: u8 = 8;

/// DEVICE-TYPE REJECT reason codes, by code: their RFC names, and the keys
/// the record counts a session failed for them under.
const REASONS: [(&str, &str); 8] = [
    ("CONN-PARTNER", "rejected_conn_partner"),
    ("DEVICE-IN-USE", "rejected_device_in_use"),
    ("INV-ASSOCIATE", "rejected_inv_associate"),
    ("INV-NAME", "rejected_inv_name"),
    ("INV-DEVICE-TYPE", "rejected_inv_device_type"),
    ("TYPE-NAME-ERROR", "rejected_type_name_error"),
    ("UNKNOWN-ERROR", "rejected_unknown_error"),
    ("UNSUPPORTED-REQ", "rejected_unsupported_req"),
];
const REASON_INV_NAME: u8 = 3;
const REASON_INV_DEVICE_TYPE: u8 = 4;

/// TN3270E function codes, whose names the record lists.
pub const FUNCTIONS: [&str; 5] = [
    "BIND-IMAGE",
    "DATA-STREAM-CTL",
    "RESPONSES",
    "SCS-CTL-CODES",
    "SYSREQ",
];
const F_BIND_IMAGE: u8 = 0;
const F_RESPONSES: u8 = 2;
const F_SYSREQ: u8 = 4;
/// The functions a terminal asks for and the server grants, as bits by
/// code: BIND-IMAGE, RESPONSES and SYSREQ (x3270's request for a display).
const TERMINAL_FUNCTIONS: u8 = 1 << F_BIND_IMAGE | 1 << F_RESPONSES | 1 << F_SYSREQ;

/// TN3270E header data types and flags (RFC 2355 section 8).
const DT_3270_DATA: u8 = 0;
const DT_RESPONSE: u8 = 2;
const DT_BIND_IMAGE: u8 = 3;
const DT_UNBIND: u8 = 4;
const DT_LAST: u8 = 8;
const RSF_NO_RESPONSE: u8 = 0;
const RSF_ERROR_RESPONSE: u8 = 1;
const RSF_ALWAYS_RESPONSE: u8 = 2;
const RSF_POSITIVE: u8 = 0;
const RSF_NEGATIVE: u8 = 1;
/// A response's data: DEVICE-END (positive), COMMAND-REJECT (negative).
const RESPONSE_DEVICE_END: u8 = 0x00;
const RESPONSE_COMMAND_REJECT: u8 = 0x00;
/// Bytes of the TN3270E header.
/// Bytes of the BIND image's RU.
const BIND_IMAGE_BYTES: usize = 37;

pub const HEADER_BYTES: u64 = 5;

/// The default terminal: a 3278 model 2 (24×80) with the extended data
/// stream.
pub const TERMINAL_TYPE: &str = "IBM-3278-2-E";

/// AID Enter, the key a user's transaction sends.
const AID_ENTER: u8 = 0x7D;
/// 3270 orders and commands used by the records.
const ORDER_SBA: u8 = 0x11;
const ORDER_SF: u8 = 0x1D;
const ORDER_IC: u8 = 0x13;
const CMD_ERASE_WRITE: u8 = 0xF5;
/// WCC: reset, restore the keyboard, reset modified data tags.
const WCC: u8 = 0xC3;
/// Field attribute "protected", in the 6-bit address/attribute code.
const ATTR_PROTECTED: u8 = 0x60;

/// A request's bytes before its data: AID, cursor (row 2, column 11) and
/// SBA to the field's start (row 2, column 1), 12-bit addresses.
const REQUEST_HEAD: [u8; 6] = [AID_ENTER, 0xC1, 0x5A, ORDER_SBA, 0xC1, 0x50];
/// The same after a TN3270E header: 3270-DATA, no response asked, seq 0.
const REQUEST_HEAD_E: [u8; 11] = [
    DT_3270_DATA,
    0,
    RSF_NO_RESPONSE,
    0,
    0,
    AID_ENTER,
    0xC1,
    0x5A,
    ORDER_SBA,
    0xC1,
    0x50,
];
/// An answer's bytes before its data: Erase/Write, WCC, SBA to (0,0), a
/// protected field.
const ANSWER_HEAD: [u8; 7] = [
    CMD_ERASE_WRITE,
    WCC,
    ORDER_SBA,
    0x40,
    0x40,
    ORDER_SF,
    ATTR_PROTECTED,
];
const REQUEST_TAIL: [u8; 2] = [IAC, EOR];
const ANSWER_TAIL: [u8; 3] = [ORDER_IC, IAC, EOR];
/// Smallest request and answer records.
pub const MIN_REQUEST_BYTES: u64 = (REQUEST_HEAD.len() + REQUEST_TAIL.len()) as u64;
pub const MIN_ANSWER_BYTES: u64 = (ANSWER_HEAD.len() + ANSWER_TAIL.len()) as u64;

/// Bytes a plain TN3270 logon moves with stackbench's responder when the
/// terminal refuses TN3270E: the negotiation and first screen (server to
/// terminal), and the terminal's answers.
pub const LOGON_BYTES_OUT: u64 = 3 + 3 + 6 + 12 + MIN_ANSWER_BYTES + LOGO.len() as u64;
pub const LOGON_BYTES_IN: u64 = 3 + 3 + 4 + TERMINAL_TYPE.len() as u64 + 2 + 12;

/// Bytes a TN3270E logon moves with stackbench's responder (the
/// defaults: model 2, no LU asked for, so the responder names one of its
/// 8-character LUs; BIND-IMAGE, RESPONSES and SYSREQ agreed). Server to
/// terminal: `DO TN3270E`, `SEND DEVICE-TYPE`, `DEVICE-TYPE IS <type>
/// CONNECT <LU>`, `FUNCTIONS IS <3>`, the BIND-IMAGE record (header, 37
/// bytes, `IAC EOR`) and the first screen with its header. Terminal to
/// server: `WILL TN3270E`, `DEVICE-TYPE REQUEST <type>`, `FUNCTIONS
/// REQUEST <3>` and the positive response the first screen asks for.
pub const LOGON_E_BYTES_OUT: u64 = 3
    + 7
    + (7 + TERMINAL_TYPE.len() as u64 + 1 + 8)
    + (7 + 3)
    + (HEADER_BYTES + BIND_IMAGE_BYTES as u64 + 2)
    + (HEADER_BYTES + MIN_ANSWER_BYTES + LOGO.len() as u64);
pub const LOGON_E_BYTES_IN: u64 =
    3 + (7 + TERMINAL_TYPE.len() as u64) + (7 + 3) + (HEADER_BYTES + 1 + 2);

/// Data repeated in records: "STACKBENCH " in EBCDIC (no 0xFF in it).
const TEXT: [u8; 11] = [
    0xE2, 0xE3, 0xC1, 0xC3, 0xD2, 0xC2, 0xC5, 0xD5, 0xC3, 0xC8, 0x40,
];
/// The first screen's data: "STACKBENCH TN3270 RESPONDER" in EBCDIC.
const LOGO: [u8; 27] = [
    0xE2, 0xE3, 0xC1, 0xC3, 0xD2, 0xC2, 0xC5, 0xD5, 0xC3, 0xC8, 0x40, 0xE3, 0xD5, 0xF3, 0xF2, 0xF7,
    0xF0, 0x40, 0xD9, 0xC5, 0xE2, 0xD7, 0xD6, 0xD5, 0xC4, 0xC5, 0xD9,
];

/// Longest stretch of bytes accepted past what a record (or the setup) was
/// expected to take before the peer is refused as one that never ends it.
const SLACK_BYTES: u64 = 64 * 1024;

/// Writes bytes `offset..offset + out.len()` of a record of `len` bytes
/// made of `head`, data (repeated `TEXT`) and `tail`.
fn fill_record(head: &[u8], tail: &[u8], len: u64, offset: u64, out: &mut [u8]) {
    let (h, t) = (head.len() as u64, tail.len() as u64);
    for (i, b) in out.iter_mut().enumerate() {
        let at = offset + i as u64;
        *b = if at < h {
            head[at as usize]
        } else if at + t >= len {
            tail.get((at + t - len) as usize).copied().unwrap_or(0)
        } else {
            TEXT[((at - h) % TEXT.len() as u64) as usize]
        };
    }
}

/// Copies the part of `bytes` that falls in `offset..offset + out.len()`.
fn fill(bytes: &[u8], offset: u64, out: &mut [u8]) {
    let Ok(start) = usize::try_from(offset) else {
        return;
    };
    if start >= bytes.len() {
        return;
    }
    let n = (bytes.len() - start).min(out.len());
    out[..n].copy_from_slice(&bytes[start..start + n]);
}

/// Where the Telnet scanner is between two bytes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    #[default]
    Data,
    Iac,
    /// After `IAC DO|DONT|WILL|WONT`: the option byte is next.
    Option(u8),
    Sub,
    SubIac,
}

/// What the scanner found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event<'a> {
    /// A data byte (`IAC IAC` is one `0xFF`).
    Data(u8),
    /// `IAC <verb> <option>`.
    Option(u8, u8),
    /// A subnegotiation's bytes between `IAC SB` and `IAC SE`.
    Sub(&'a [u8]),
    /// `IAC EOR`: a record's end.
    Eor,
}

/// Telnet's byte stream as a parse that survives any split across reads.
#[derive(Debug, Default)]
struct Telnet {
    at: At,
    sub: Vec<u8>,
}

impl Telnet {
    /// Feeds `chunk`, calling `on` with each event in order.
    fn scan(
        &mut self,
        chunk: &[u8],
        mut on: impl FnMut(Event<'_>) -> Result<(), Fault>,
    ) -> Result<(), Fault> {
        for &b in chunk {
            self.at = match (self.at, b) {
                (At::Data, IAC) => At::Iac,
                (At::Data, b) => {
                    on(Event::Data(b))?;
                    At::Data
                }
                (At::Iac, IAC) => {
                    on(Event::Data(IAC))?;
                    At::Data
                }
                (At::Iac, DO | DONT | WILL | WONT) => At::Option(b),
                (At::Iac, SB) => {
                    self.sub.clear();
                    At::Sub
                }
                (At::Iac, EOR) => {
                    on(Event::Eor)?;
                    At::Data
                }
                // NOP, GA and the other two-byte commands carry nothing here.
                (At::Iac, _) => At::Data,
                (At::Option(verb), option) => {
                    on(Event::Option(verb, option))?;
                    At::Data
                }
                (At::Sub, IAC) => At::SubIac,
                (At::Sub, b) => {
                    self.sub.push(b);
                    if self.sub.len() as u64 > SLACK_BYTES {
                        return Err(Fault(format!(
                            "a Telnet subnegotiation longer than {SLACK_BYTES} bytes: the \
                             peer is not speaking Telnet"
                        )));
                    }
                    At::Sub
                }
                (At::SubIac, SE) => {
                    on(Event::Sub(&self.sub))?;
                    At::Data
                }
                (At::SubIac, b) => {
                    // IAC IAC inside a subnegotiation is one 0xFF.
                    self.sub.push(b);
                    At::Sub
                }
            };
        }
        Ok(())
    }
}

/// Frees what only the logon needed (its answers, a subnegotiation's
/// bytes) once records flow: a logged-on user keeps no heap for them,
/// which counts at 256K users. One branch per chunk after that.
fn release_logon(reply: &mut Vec<u8>, telnet: &mut Telnet) {
    if reply.capacity() != 0 || telnet.sub.capacity() != 0 {
        *reply = Vec::new();
        telnet.sub = Vec::new();
    }
}

/// Appends `IAC <verb> <option>`.
fn command(out: &mut Vec<u8>, verb: u8, option: u8) {
    out.extend_from_slice(&[IAC, verb, option]);
}

/// Appends `data` with every `0xFF` doubled (data inside a record or a
/// subnegotiation).
fn push_escaped(out: &mut Vec<u8>, data: &[u8]) {
    for &b in data {
        out.push(b);
        if b == IAC {
            out.push(IAC);
        }
    }
}

/// Appends `IAC SB TN3270E <body> IAC SE`.
fn tn3270e_sub(out: &mut Vec<u8>, body: &[u8]) {
    out.extend_from_slice(&[IAC, SB, OPT_TN3270E]);
    push_escaped(out, body);
    out.extend_from_slice(&[IAC, SE]);
}

/// The function codes of `bits`, in code order.
fn function_codes(bits: u8) -> impl Iterator<Item = u8> {
    (0..8u8).filter(move |f| bits & (1 << f) != 0)
}

/// The bits of a list of function codes (codes above 7 cannot be granted:
/// they set nothing and make the list differ from any grant).
fn function_bits(codes: &[u8]) -> (u8, bool) {
    let unknown = codes.iter().any(|&c| c > 7);
    let bits = codes
        .iter()
        .filter(|&&c| c <= 7)
        .fold(0u8, |b, &c| b | 1 << c);
    (bits, unknown)
}

/// The names of `bits` for messages, e.g. `BIND-IMAGE RESPONSES`.
fn function_names(bits: u8) -> String {
    let names: Vec<&str> = function_codes(bits)
        .map(|f| FUNCTIONS.get(usize::from(f)).copied().unwrap_or("??"))
        .collect();
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(" ")
    }
}

/// A DEVICE-TYPE REJECT reason's RFC name.
fn reason_name(code: u8) -> &'static str {
    REASONS.get(usize::from(code)).map_or("??", |r| r.0)
}

/// The next sequence number after `seq` whose two bytes hold no `0xFF`,
/// so a header's length never changes with it (RFC 2355 numbers 0 to
/// 32767 and wraps).
fn next_seq(seq: u16) -> u16 {
    let mut s = (seq + 1) & 0x7FFF;
    while s & 0xFF == 0xFF || s >> 8 == 0xFF {
        s = (s + 1) & 0x7FFF;
    }
    s
}

/// How a session's records are framed: plain TN3270, or TN3270E's header
/// first.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Framing {
    #[default]
    Tn3270,
    Tn3270e,
}

impl Framing {
    fn header_bytes(self) -> usize {
        match self {
            Framing::Tn3270 => 0,
            Framing::Tn3270e => HEADER_BYTES as usize,
        }
    }

    /// The record's name in the record's session counts.
    fn mode(self) -> &'static str {
        match self {
            Framing::Tn3270 => "tn3270",
            Framing::Tn3270e => "tn3270e",
        }
    }
}

/// A TN3270E header (all zeros in plain TN3270: a 3270-DATA record).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Header {
    data_type: u8,
    request_flag: u8,
    response_flag: u8,
    seq: u16,
}

impl Header {
    fn of(bytes: [u8; HEADER_BYTES as usize]) -> Header {
        Header {
            data_type: bytes[0],
            request_flag: bytes[1],
            response_flag: bytes[2],
            seq: u16::from_be_bytes([bytes[3], bytes[4]]),
        }
    }

    /// Whether the record carries 3270 data (a screen or a terminal's input).
    fn is_data(&self) -> bool {
        self.data_type == DT_3270_DATA
    }
}

/// What a byte or the end of a record amounted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Nothing,
    /// The record's first 3270 byte (after the header).
    First(u8, Header),
    /// The record ended (`IAC EOR`).
    End(Header),
}

/// One record's parse: its header as it arrives, and how many of its data
/// bytes came (saturating: only "none", "in the header" and "past it"
/// matter).
#[derive(Debug, Default, Clone, Copy)]
struct Record {
    head: [u8; HEADER_BYTES as usize],
    at: u16,
}

impl Record {
    /// One data byte or `IAC EOR` of the record (other events are not
    /// its). A TN3270E data type that does not exist is a fault at once.
    fn take(&mut self, event: Event<'_>, framing: Framing, what: &str) -> Result<Piece, Fault> {
        let hdr = framing.header_bytes();
        match event {
            Event::Data(b) => {
                let at = usize::from(self.at);
                self.at = self.at.saturating_add(1);
                if at < hdr {
                    if at == 0 && b > DT_LAST {
                        return Err(Fault(format!(
                            "a {what} whose TN3270E header has data type 0x{b:02X}: not a \
                             TN3270E record (RFC 2355 defines 0 to 8)"
                        )));
                    }
                    self.head[at] = b;
                    return Ok(Piece::Nothing);
                }
                Ok(if at == hdr {
                    Piece::First(b, self.header(framing))
                } else {
                    Piece::Nothing
                })
            }
            Event::Eor if self.at == 0 => Ok(Piece::Nothing),
            Event::Eor => {
                let header = self.header(framing);
                *self = Record::default();
                Ok(Piece::End(header))
            }
            Event::Option(..) | Event::Sub(_) => Ok(Piece::Nothing),
        }
    }

    fn header(&self, framing: Framing) -> Header {
        match framing {
            Framing::Tn3270 => Header::default(),
            Framing::Tn3270e => Header::of(self.head),
        }
    }

    /// Whether a record has begun (some of its bytes came).
    fn begun(&self) -> bool {
        self.at > 0
    }
}

/// Whether `b` begins an outbound record: a 3270 write command, in its
/// remote (0xF1…) or local (0x01…) code.
fn is_write_command(b: u8) -> bool {
    matches!(
        b,
        0xF1 | 0xF5 | 0x7E | 0x6F | 0xF3 | 0x01 | 0x05 | 0x0D | 0x0F | 0x11
    )
}

/// Whether `b` is an AID, the first byte of an inbound record.
fn is_aid(b: u8) -> bool {
    matches!(b,
        0x60 | 0x7D | 0x6D | 0x6B | 0x6C | 0x6E | 0x88
        | 0xF1..=0xF9 | 0x7A..=0x7C | 0xC1..=0xC9 | 0x4A..=0x4C)
}

#[cfg(test)]
mod tests;
