//! TN3270 (RFC 1576, 3270 terminals over Telnet) as an application
//! protocol: the driver's [`Client`] codec, a terminal, and the responder's
//! [`Server`] handler, an echo-style application such as ITPECHO that
//! answers every Enter with one screen.
//!
//! Setup. A connection opens with the server's Telnet negotiation, as a
//! z/OS TN3270 server runs it: `DO TN3270E`, which this client refuses
//! (`WONT`), then `DO TERMINAL-TYPE` (client `WILL`), `SB TERMINAL-TYPE
//! SEND` (client `IS IBM-3278-2-E`), and `DO`/`WILL` of END-OF-RECORD and
//! BINARY both ways; the server then sends its first screen, and the client
//! is logged on once that record arrives. TN3270E (RFC 2355) is refused
//! because it puts a 5-byte header before every record and adds a function
//! negotiation of its own; plain TN3270 records keep the notation's sizes
//! what a terminal and an application exchange. A client that accepts
//! TN3270E is told `DONT` and the negotiation goes on as TN3270. The client
//! answers whatever the server asks, in any order and split over any reads:
//! it agrees to the three options a 3270 session needs and refuses every
//! other, answering each request once, as x3270 does (pmattes/x3270,
//! Common/telnet.c: its option handling agrees to BINARY, EOR, TTYPE and
//! TN3270E and refuses the rest, and sends the terminal type on `SEND`).
//!
//! Transactions. A request is one inbound record: the Enter AID, the cursor
//! address, an SBA order with a field's address and the field's data,
//! ending `IAC EOR`; the answer is one outbound record: Erase/Write, a WCC,
//! SBA, a start-field order, the screen's data and an insert-cursor order,
//! ending `IAC EOR`. The notation's sizes are these records on the wire,
//! `IAC EOR` and any doubled `0xFF` included, so `RR(100B/800B)` is a
//! terminal sending 100 bytes and receiving 800 per transaction; a size
//! below the smallest record (8 bytes in, 10 out) is raised to it. The data
//! is EBCDIC text, which has no `0xFF`; a peer's data may, doubled as `IAC
//! IAC`, and both sides read it so. Records are never pipelined, so bytes
//! past a record's `IAC EOR` are a fault, as are a record that begins with
//! no 3270 command (answers) or AID (requests). Telnet commands between
//! records (a NOP, a late option) are skipped.

use stackbench_model::AppProtocol;

use super::{grouped, ClassShape, Codec, Fault, Handler, Protocol, Setup};

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
const OPT_TTYPE: u8 = 24;
const OPT_EOR: u8 = 25;
const OPT_TN3270E: u8 = 40;
const TTYPE_IS: u8 = 0;
const TTYPE_SEND: u8 = 1;

/// The terminal this client says it is: a 3278 model 2 (24×80) with the
/// extended data stream.
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

/// Bytes a logon moves with stackbench's responder: its negotiation and
/// first screen (server to terminal), and the terminal's answers.
pub const LOGON_BYTES_OUT: u64 = 3 + 3 + 6 + 12 + MIN_ANSWER_BYTES + LOGO.len() as u64;
pub const LOGON_BYTES_IN: u64 = 3 + 3 + 4 + TERMINAL_TYPE.len() as u64 + 2 + 12;

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

/// Frees what only the logon needed (its answers, a subnegotiation's
/// bytes) once records flow: a logged-on user keeps no heap for them,
/// which counts at 256K users. One branch per chunk after that.
fn release_logon(reply: &mut Vec<u8>, telnet: &mut Telnet) {
    if reply.capacity() != 0 || telnet.sub.capacity() != 0 {
        *reply = Vec::new();
        telnet.sub = Vec::new();
    }
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

/// Appends `IAC <verb> <option>`.
fn command(out: &mut Vec<u8>, verb: u8, option: u8) {
    out.extend_from_slice(&[IAC, verb, option]);
}

/// A set of Telnet options (0–255), one bit each.
#[derive(Debug, Default, Clone, Copy)]
struct Options([u64; 4]);

impl Options {
    /// Adds `option`; whether it was new.
    fn insert(&mut self, option: u8) -> bool {
        let (word, bit) = (usize::from(option / 64), 1u64 << (option % 64));
        let new = self.0[word] & bit == 0;
        self.0[word] |= bit;
        new
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

/// One record's progress: bytes seen on the wire, whether data began and
/// whether its `IAC EOR` came.
#[derive(Debug, Default)]
struct Record {
    seen: u64,
    began: bool,
    ended: bool,
}

impl Record {
    /// Feeds `chunk`; `first_ok` checks a record's first byte, `what`
    /// names the record in faults. Ok(true) when the record ended at the
    /// chunk's end (the record is reset for the next).
    fn feed(
        &mut self,
        telnet: &mut Telnet,
        chunk: &[u8],
        expected: u64,
        what: &str,
        first_ok: fn(u8) -> bool,
    ) -> Result<bool, Fault> {
        self.seen += chunk.len() as u64;
        let record = &mut *self;
        telnet.scan(chunk, |event| {
            if record.ended {
                return Err(Fault(format!(
                    "bytes past the end of a {what} (its IAC EOR): records are not \
                     pipelined, so the peer sent a record of another length or two at once"
                )));
            }
            match event {
                Event::Data(b) if !record.began => {
                    if !first_ok(b) {
                        return Err(Fault(format!(
                            "a {what} beginning with 0x{b:02X}: not a 3270 record (is the \
                             peer a TN3270 {}?)",
                            if what == "request" {
                                "terminal"
                            } else {
                                "server"
                            }
                        )));
                    }
                    record.began = true;
                }
                Event::Eor if record.began => record.ended = true,
                // Commands between records, and an empty record, carry no data.
                _ => {}
            }
            Ok(())
        })?;
        if self.ended {
            *self = Record::default();
            return Ok(true);
        }
        if self.seen > expected + SLACK_BYTES {
            return Err(Fault(format!(
                "a {what} of more than {} bytes without IAC EOR: the peer does not end \
                 its records (END-OF-RECORD not agreed?)",
                expected + SLACK_BYTES
            )));
        }
        Ok(false)
    }

    /// Bytes still worth asking for while the record is incomplete.
    fn hint(&self, expected: u64) -> u64 {
        expected.saturating_sub(self.seen).max(1)
    }
}

/// The driver's half: a terminal. Requests are Enter records of the
/// request size; answers end at `IAC EOR`.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    request_bytes: u64,
    answer_bytes: u64,
}

/// A terminal connection's parse: the Telnet scanner, the options agreed
/// or refused (one bit per option), the setup bytes owed, and the record
/// being read.
#[derive(Debug, Default)]
pub struct ClientState {
    telnet: Telnet,
    answered: Answered,
    reply: Vec<u8>,
    record: Record,
    /// Bytes the server sent during setup.
    setup_seen: u64,
}

impl Client {
    /// Bytes of the answer stackbench's responder gives.
    pub fn answer_bytes(&self) -> u64 {
        self.answer_bytes
    }
}

/// Which option requests a terminal answered, so each is answered once:
/// answering an answer again would loop.
#[derive(Debug, Default, Clone, Copy)]
struct Answered {
    /// Options answered to a DO (WILL or WONT said).
    to_do: Options,
    /// Options answered to a WILL (DO or DONT said).
    to_will: Options,
}

impl Answered {
    /// Answers the server's `IAC <verb> <option>` into `reply`, once.
    fn answer(&mut self, reply: &mut Vec<u8>, verb: u8, option: u8) {
        let wanted = matches!(option, OPT_BINARY | OPT_EOR | OPT_TTYPE);
        match verb {
            DO if self.to_do.insert(option) => {
                command(reply, if wanted { WILL } else { WONT }, option);
            }
            WILL if self.to_will.insert(option) => {
                // TERMINAL-TYPE is the terminal's to send, not the server's.
                let agree = wanted && option != OPT_TTYPE;
                command(reply, if agree { DO } else { DONT }, option);
            }
            // A withdrawal needs no answer here: the session ends either way.
            _ => {}
        }
    }
}

/// TN3270's row of the protocol table (`crate::app::row`).
#[derive(Debug, Clone, Copy)]
pub struct Tn3270;

impl Protocol for Tn3270 {
    const PROTOCOL: AppProtocol = AppProtocol::Tn3270;
    type Client = Client;
    type Server = Server;
}

impl Codec for Client {
    const FRAMED: bool = true;
    const PROTOCOL: AppProtocol = AppProtocol::Tn3270;
    const SETUP: bool = true;
    type State = ClientState;

    fn of(shape: &ClassShape) -> Client {
        Client {
            request_bytes: shape.request_bytes.max(MIN_REQUEST_BYTES),
            answer_bytes: shape.response_bytes.max(MIN_ANSWER_BYTES),
        }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_bytes
    }

    #[inline]
    fn fill_request(&self, offset: u64, out: &mut [u8]) {
        fill_record(
            &REQUEST_HEAD,
            &REQUEST_TAIL,
            self.request_bytes,
            offset,
            out,
        );
    }

    #[inline]
    fn response_bytes(&self) -> u64 {
        self.answer_bytes
    }

    fn response_left(
        &self,
        state: &mut ClientState,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        let expected = self.answer_bytes;
        release_logon(&mut state.reply, &mut state.telnet);
        let ended = state.record.feed(
            &mut state.telnet,
            chunk,
            expected,
            "response",
            is_write_command,
        )?;
        Ok(if ended {
            0
        } else {
            state.record.hint(expected)
        })
    }

    const RESPONSE_NAME: &'static str = "screen";
    const SETUP_NAME: &'static str = "Telnet negotiation";

    fn response_seen(&self, state: &ClientState, _remaining: u64) -> Option<String> {
        let seen = state.record.seen;
        (seen > 0).then(|| format!("{} bytes of a screen without its IAC EOR", grouped(seen)))
    }

    fn setup_seen(&self, state: &ClientState) -> Option<String> {
        let seen = state.setup_seen;
        (seen > 0).then(|| format!("{} bytes of Telnet negotiation", grouped(seen)))
    }

    /// The server speaks first.
    fn setup_open(&self, _state: &mut ClientState) -> Setup {
        Setup::Read
    }

    /// Answers the server's option requests; setup is over with the first
    /// screen's record (which may arrive with the last requests).
    fn setup_received(&self, state: &mut ClientState, chunk: &[u8]) -> Result<Setup, Fault> {
        state.reply.clear();
        state.setup_seen += chunk.len() as u64;
        let ClientState {
            telnet,
            record,
            reply,
            answered,
            ..
        } = state;
        let mut screen = false;
        telnet.scan(chunk, |event| {
            if screen {
                return Err(Fault(
                    "bytes past the end of the server's first screen (its IAC EOR): it \
                     must wait for the terminal's input"
                        .to_string(),
                ));
            }
            match event {
                Event::Option(verb, option) => answered.answer(reply, verb, option),
                Event::Sub(sub) if sub == [OPT_TTYPE, TTYPE_SEND] => {
                    reply.extend_from_slice(&[IAC, SB, OPT_TTYPE, TTYPE_IS]);
                    reply.extend_from_slice(TERMINAL_TYPE.as_bytes());
                    reply.extend_from_slice(&[IAC, SE]);
                }
                Event::Sub(_) | Event::Data(_) if record.began => {}
                Event::Sub(_) => {}
                Event::Data(b) => {
                    if !is_write_command(b) {
                        return Err(Fault(format!(
                            "the server's first screen begins with 0x{b:02X}, not a 3270 \
                             write command: is it a TN3270 server?"
                        )));
                    }
                    record.began = true;
                }
                Event::Eor if record.began => {
                    *record = Record::default();
                    screen = true;
                }
                Event::Eor => {}
            }
            Ok(())
        })?;
        if !screen && state.setup_seen > SLACK_BYTES {
            return Err(Fault(format!(
                "no first screen within {SLACK_BYTES} bytes of Telnet negotiation: the \
                 server never ends a record (is it a TN3270 server?)"
            )));
        }
        Ok(match (screen, state.reply.is_empty()) {
            (true, true) => Setup::Done,
            (true, false) => Setup::SendLast,
            (false, false) => Setup::Send,
            (false, true) => Setup::Read,
        })
    }

    #[inline]
    fn setup_bytes(&self, state: &ClientState) -> u64 {
        state.reply.len() as u64
    }

    #[inline]
    fn fill_setup(&self, state: &ClientState, offset: u64, out: &mut [u8]) {
        fill(&state.reply, offset, out);
    }
}

/// The responder's half: negotiates a TN3270 session, sends a first
/// screen, then answers each inbound record with a screen of the test's
/// response size.
#[derive(Debug, Clone, Copy)]
pub struct Server {
    pub request_bytes: u64,
    pub response_bytes: u64,
}

/// How far a server connection's negotiation went.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Negotiation {
    /// `DO TN3270E` sent.
    #[default]
    Tn3270e,
    /// `DO TERMINAL-TYPE` sent.
    TerminalType,
    /// `SB TERMINAL-TYPE SEND` sent.
    TerminalTypeIs,
    /// `DO`/`WILL` of EOR and BINARY sent: their four answers are due.
    Modes,
    /// The first screen is sent: transactions.
    Done,
}

/// The four answers [`Negotiation::Modes`] waits for, one bit each.
const MODES_AGREED: u8 = 0b1111;

/// A server connection's parse: the Telnet scanner, the negotiation's
/// step, the setup bytes owed and the request being read.
#[derive(Debug, Default)]
pub struct ServerState {
    telnet: Telnet,
    step: Negotiation,
    modes: u8,
    reply: Vec<u8>,
    record: Record,
}

impl Server {
    fn answer_bytes(&self) -> u64 {
        self.response_bytes.max(MIN_ANSWER_BYTES)
    }

    /// One client event during the negotiation; what to send goes to
    /// `reply`.
    fn negotiate(
        step: &mut Negotiation,
        modes: &mut u8,
        reply: &mut Vec<u8>,
        event: Event<'_>,
    ) -> Result<(), Fault> {
        match (event, *step) {
            (Event::Option(WONT | WILL, OPT_TN3270E), Negotiation::Tn3270e) => {
                if let Event::Option(WILL, _) = event {
                    // TN3270E is not spoken here: withdraw the offer.
                    command(reply, DONT, OPT_TN3270E);
                }
                command(reply, DO, OPT_TTYPE);
                *step = Negotiation::TerminalType;
            }
            (Event::Option(WILL, OPT_TTYPE), Negotiation::TerminalType) => {
                reply.extend_from_slice(&[IAC, SB, OPT_TTYPE, TTYPE_SEND, IAC, SE]);
                *step = Negotiation::TerminalTypeIs;
            }
            (Event::Option(WONT, OPT_TTYPE), _) => {
                return Err(Fault(
                    "the client refused TERMINAL-TYPE: not a TN3270 terminal".to_string(),
                ))
            }
            (Event::Sub(sub), Negotiation::TerminalTypeIs) => {
                let name = match sub {
                    [OPT_TTYPE, TTYPE_IS, name @ ..] => String::from_utf8_lossy(name),
                    _ => return Ok(()),
                };
                if !name.to_ascii_uppercase().starts_with("IBM-327") {
                    return Err(Fault(format!(
                        "the client's terminal type is {name:?}: a TN3270 session needs an \
                         IBM 3278 or 3279 (such as {TERMINAL_TYPE})"
                    )));
                }
                for (verb, option) in [
                    (DO, OPT_EOR),
                    (WILL, OPT_EOR),
                    (DO, OPT_BINARY),
                    (WILL, OPT_BINARY),
                ] {
                    command(reply, verb, option);
                }
                *step = Negotiation::Modes;
            }
            (Event::Option(verb, option @ (OPT_EOR | OPT_BINARY)), _) => {
                let at = |b: u8| 1u8 << (b + 2 * u8::from(option == OPT_BINARY));
                match verb {
                    WILL => *modes |= at(0),
                    DO => *modes |= at(1),
                    _ => {
                        return Err(Fault(format!(
                            "the client refused {}: a TN3270 session needs BINARY and \
                             END-OF-RECORD both ways",
                            if option == OPT_EOR {
                                "END-OF-RECORD"
                            } else {
                                "BINARY"
                            }
                        )))
                    }
                }
            }
            (Event::Data(b), _) => {
                return Err(Fault(format!(
                    "data (0x{b:02X}) before the TN3270 negotiation finished: is the client \
                     a TN3270 terminal?"
                )))
            }
            _ => {}
        }
        if *step == Negotiation::Modes && *modes == MODES_AGREED {
            reply_screen(reply);
            *step = Negotiation::Done;
        }
        Ok(())
    }
}

/// Appends the first screen: Erase/Write with the responder's name.
fn reply_screen(reply: &mut Vec<u8>) {
    reply.extend_from_slice(&ANSWER_HEAD);
    reply.extend_from_slice(&LOGO);
    reply.extend_from_slice(&ANSWER_TAIL);
}

impl Handler for Server {
    const FRAMED: bool = true;
    const SETUP: bool = true;
    type State = ServerState;

    #[inline]
    fn of(request_bytes: u64, response_bytes: u64) -> Server {
        Server {
            request_bytes,
            response_bytes,
        }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_bytes.max(MIN_REQUEST_BYTES)
    }

    fn request_left(
        &self,
        state: &mut ServerState,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        let expected = Handler::request_bytes(self);
        release_logon(&mut state.reply, &mut state.telnet);
        let ended = state
            .record
            .feed(&mut state.telnet, chunk, expected, "request", is_aid)?;
        Ok(if ended {
            0
        } else {
            state.record.hint(expected)
        })
    }

    #[inline]
    fn response_bytes(&self, _state: &ServerState) -> u64 {
        self.answer_bytes()
    }

    #[inline]
    fn fill_response(&self, _state: &ServerState, offset: u64, out: &mut [u8]) {
        fill_record(&ANSWER_HEAD, &ANSWER_TAIL, self.answer_bytes(), offset, out);
    }

    /// The server speaks first: it offers TN3270E.
    fn setup_open(&self, state: &mut ServerState) -> Setup {
        state.reply.clear();
        command(&mut state.reply, DO, OPT_TN3270E);
        state.step = Negotiation::Tn3270e;
        Setup::Send
    }

    fn setup_received(&self, state: &mut ServerState, chunk: &[u8]) -> Result<Setup, Fault> {
        state.reply.clear();
        let ServerState {
            telnet,
            step,
            modes,
            reply,
            ..
        } = state;
        telnet.scan(chunk, |event| {
            if *step == Negotiation::Done {
                return Err(Fault(
                    "bytes after the terminal's last negotiation answer and before the \
                     first screen: the terminal must wait for its screen"
                        .to_string(),
                ));
            }
            Server::negotiate(step, modes, reply, event)
        })?;
        Ok(match (state.step, state.reply.is_empty()) {
            (Negotiation::Done, _) => Setup::SendLast,
            (_, false) => Setup::Send,
            (_, true) => Setup::Read,
        })
    }

    #[inline]
    fn setup_bytes(&self, state: &ServerState) -> u64 {
        state.reply.len() as u64
    }

    #[inline]
    fn fill_setup(&self, state: &ServerState, offset: u64, out: &mut [u8]) {
        fill(&state.reply, offset, out);
    }
}

#[cfg(test)]
mod tests;
