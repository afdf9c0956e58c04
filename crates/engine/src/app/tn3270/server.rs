//! The responder's half of TN3270: an application such as ITPECHO behind
//! a TN3270 server that negotiates as z/OS's does — TN3270E offered first
//! (unless `responder_tn3270e refuse`), plain TN3270 when the terminal
//! refuses — sends the BIND image and a first screen, then answers each
//! inbound record with a screen of the test's response size.
//!
//! Device types and LUs. It accepts the device types of a 3278 or 3279
//! display, models 2 to 5, with or without `-E`, and `IBM-DYNAMIC`, and
//! rejects others (`REJECT REASON INV-DEVICE-TYPE`); its LU pool is
//! SBLU0000 to SBLU9999: a terminal that asks for another LU is rejected
//! (`INV-NAME`), as a z/OS server rejects a name it does not define, and
//! one that asks for none is given the next of the pool. Functions: it
//! grants what is asked of BIND-IMAGE, RESPONSES and SYSREQ and proposes
//! that subset when more was asked. With RESPONSES agreed, the first
//! screen asks for a definite response (ALWAYS-RESPONSE), as a logon
//! screen does, and each answer for an exception response only
//! (ERROR-RESPONSE), so a terminal answers nothing between transactions.

use std::sync::atomic::{AtomicU32, Ordering};

use stackbench_model::settings::{ResponderApp, ResponderTn3270e, Tn3270Options};

use super::demo::Demo;

use super::{
    command, fill, fill_record, function_bits, function_codes, function_names, is_aid, next_seq,
    push_escaped, release_logon, tn3270e_sub, Event, Fault, Framing, Piece, Record, Telnet,
    ANSWER_HEAD, ANSWER_TAIL, DO, DONT, DT_3270_DATA, DT_BIND_IMAGE, EOR, E_CONNECT, E_DEVICE_TYPE,
    E_FUNCTIONS, E_IS, E_REASON, E_REJECT, E_REQUEST, E_SEND, F_BIND_IMAGE, F_RESPONSES,
    HEADER_BYTES, IAC, LOGO, MIN_ANSWER_BYTES, MIN_REQUEST_BYTES, OPT_BINARY, OPT_EOR, OPT_TN3270E,
    OPT_TTYPE, REASON_INV_DEVICE_TYPE, REASON_INV_NAME, RSF_ALWAYS_RESPONSE, RSF_ERROR_RESPONSE,
    RSF_NO_RESPONSE, SB, SE, SLACK_BYTES, TERMINAL_FUNCTIONS, TERMINAL_TYPE, TTYPE_IS, TTYPE_SEND,
    WILL, WONT,
};
use crate::app::{Handler, Setup};

use super::BIND_IMAGE_BYTES;

/// The responder's half: negotiates a TN3270 session, sends a first
/// screen, then answers each inbound record with a screen of the test's
/// response size.
#[derive(Debug, Clone, Copy)]
pub struct Server {
    pub request_bytes: u64,
    pub response_bytes: u64,
    pub options: Tn3270Options,
}

/// How far a server connection's negotiation went.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Negotiation {
    /// `DO TN3270E` sent.
    #[default]
    Tn3270e,
    /// `SEND DEVICE-TYPE` sent.
    DeviceType,
    /// `DEVICE-TYPE IS` sent (or a counter-proposal of functions).
    Functions,
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
pub(super) const MODES_AGREED: u8 = 0b1111;

/// A server connection's parse: the Telnet scanner, the negotiation's
/// step, the setup bytes owed and the request being read.
#[derive(Debug, Default)]
pub struct ServerState {
    pub(super) telnet: Telnet,
    pub(super) step: Negotiation,
    pub(super) modes: u8,
    pub(super) reply: Vec<u8>,
    record: Record,
    /// The request being read began (its first 3270 byte came).
    began: bool,
    ended: bool,
    /// Bytes of the request being read.
    seen: u64,
    pub(super) framing: Framing,
    /// TN3270E functions proposed, then agreed.
    pub(super) functions: u8,
    /// Sequence number of the record written now (TN3270E).
    seq: u16,
    /// `DONT TN3270E` said (to a terminal that offered it unasked).
    dont_said: bool,
    /// `responder_tn3270_app demo`: the application's session.
    demo: Option<Box<Demo>>,
}

/// The next LU of the pool handed to a terminal that asks for none.
static NEXT_LU: AtomicU32 = AtomicU32::new(0);

/// Whether the pool defines `name`: SBLU and four digits.
fn defined_lu(name: &[u8]) -> bool {
    name.len() == 8 && name.starts_with(b"SBLU") && name[4..].iter().all(u8::is_ascii_digit)
}

/// Whether `t` is a display type the server serves: IBM-3278-M or
/// IBM-3279-M, M from 2 to 5, with or without `-E`, or IBM-DYNAMIC.
fn known_device(t: &[u8]) -> bool {
    if t == b"IBM-DYNAMIC" {
        return true;
    }
    (t.starts_with(b"IBM-3278-") || t.starts_with(b"IBM-3279-"))
        && t.len() >= 10
        && (b'2'..=b'5').contains(&t[9])
        && (t.len() == 10 || &t[10..] == b"-E")
}

/// The BIND image of an LU 2 session for a screen of `rows`×`cols` as the
/// alternate size (24×80 the default), from PLU "STACKBEN" (EBCDIC),
/// laid out where x3270's `process_bind` reads it, ending with an empty
/// user-data field (its length byte, 0).
fn bind_image(rows: u8, cols: u8) -> [u8; BIND_IMAGE_BYTES] {
    let mut b = [0u8; BIND_IMAGE_BYTES];
    b[..15].copy_from_slice(&[
        0x31, 0x01, 0x03, 0x03, 0xB1, 0x90, 0x30, 0x80, 0x00, 0x00, 0x87, 0x87, 0x00, 0x00, 0x02,
    ]);
    b[15] = 0x80;
    b[20..25].copy_from_slice(&[24, 80, rows, cols, 0x7F]);
    b[27] = 8;
    b[28..36].copy_from_slice(&[0xE2, 0xE3, 0xC1, 0xC3, 0xD2, 0xC2, 0xC5, 0xD5]);
    b
}

impl Server {
    fn answer_bytes(&self, framing: Framing) -> u64 {
        self.response_bytes
            .max(MIN_ANSWER_BYTES + framing.header_bytes() as u64)
    }

    /// The response flag of an answer's header: an exception response
    /// only, with RESPONSES agreed.
    fn answer_flag(state: &ServerState) -> u8 {
        if state.functions & 1 << F_RESPONSES != 0 {
            RSF_ERROR_RESPONSE
        } else {
            RSF_NO_RESPONSE
        }
    }

    /// Appends the first screen (after the BIND image, TN3270E with it
    /// agreed): Erase/Write with the responder's name.
    fn reply_screen(&self, s: &mut ServerState) {
        if s.framing == Framing::Tn3270e {
            let [hi, lo] = s.seq.to_be_bytes();
            if s.functions & 1 << F_BIND_IMAGE != 0 {
                let (rows, cols) = self.options.screen();
                push_escaped(&mut s.reply, &[DT_BIND_IMAGE, 0, RSF_NO_RESPONSE, hi, lo]);
                push_escaped(&mut s.reply, &bind_image(rows as u8, cols as u8));
                s.reply.extend_from_slice(&[IAC, EOR]);
                s.seq = next_seq(s.seq);
            }
            let flag = if s.functions & 1 << F_RESPONSES != 0 {
                RSF_ALWAYS_RESPONSE
            } else {
                RSF_NO_RESPONSE
            };
            let [hi, lo] = s.seq.to_be_bytes();
            push_escaped(&mut s.reply, &[DT_3270_DATA, 0, flag, hi, lo]);
        }
        if self.options.app == ResponderApp::Demo {
            let mut demo = Box::<Demo>::default();
            push_escaped(&mut s.reply, &demo.first_screen());
            s.reply.extend_from_slice(&[IAC, EOR]);
            s.demo = Some(demo);
        } else {
            s.reply.extend_from_slice(&ANSWER_HEAD);
            s.reply.extend_from_slice(&LOGO);
            s.reply.extend_from_slice(&ANSWER_TAIL);
        }
        s.step = Negotiation::Done;
    }

    /// Falls back to plain TN3270: asks for the terminal type.
    fn plain(s: &mut ServerState) {
        command(&mut s.reply, DO, OPT_TTYPE);
        s.step = Negotiation::TerminalType;
    }

    /// The terminal's `DEVICE-TYPE REQUEST <type> [CONNECT <lu>]`.
    fn device_type(&self, s: &mut ServerState, rest: &[u8]) {
        let mut parts = rest.splitn(2, |&b| b == E_CONNECT);
        let device = parts.next().unwrap_or_default();
        let lu = parts.next();
        let reject = if !known_device(device) {
            Some(REASON_INV_DEVICE_TYPE)
        } else if lu.is_some_and(|l| !defined_lu(l)) {
            Some(REASON_INV_NAME)
        } else {
            None
        };
        if let Some(reason) = reject {
            // The terminal may ask again, or refuse TN3270E (then plain).
            tn3270e_sub(&mut s.reply, &[E_DEVICE_TYPE, E_REJECT, E_REASON, reason]);
            return;
        }
        let mut body = vec![E_DEVICE_TYPE, E_IS];
        body.extend_from_slice(device);
        body.push(E_CONNECT);
        match lu {
            Some(lu) => body.extend_from_slice(lu),
            None => {
                let n = NEXT_LU.fetch_add(1, Ordering::Relaxed) % 10_000;
                body.extend_from_slice(format!("SBLU{n:04}").as_bytes());
            }
        }
        tn3270e_sub(&mut s.reply, &body);
        s.functions = TERMINAL_FUNCTIONS;
        s.step = Negotiation::Functions;
    }

    /// The terminal's `FUNCTIONS REQUEST` (`is`: false) or `FUNCTIONS IS`
    /// (its acceptance of a counter-proposal).
    fn functions(&self, s: &mut ServerState, codes: &[u8], is: bool) -> Result<(), Fault> {
        let (asked, unknown) = function_bits(codes);
        if is {
            if unknown || asked & !s.functions != 0 {
                return Err(Fault(format!(
                    "the terminal took TN3270E functions it was not offered ({} for {})",
                    function_names(asked),
                    function_names(s.functions)
                )));
            }
            s.functions = asked;
        } else {
            let grant = asked & TERMINAL_FUNCTIONS;
            if unknown || grant != asked {
                s.functions = grant;
                let mut body = vec![E_FUNCTIONS, E_REQUEST];
                body.extend(function_codes(grant));
                tn3270e_sub(&mut s.reply, &body);
                return Ok(());
            }
            s.functions = grant;
            let mut body = vec![E_FUNCTIONS, E_IS];
            body.extend(function_codes(grant));
            tn3270e_sub(&mut s.reply, &body);
        }
        s.framing = Framing::Tn3270e;
        self.reply_screen(s);
        Ok(())
    }

    /// One client event during the negotiation; what to send goes to the
    /// state's reply.
    fn negotiate(&self, s: &mut ServerState, event: Event<'_>) -> Result<(), Fault> {
        use Negotiation as N;
        let e_steps = matches!(s.step, N::Tn3270e | N::DeviceType | N::Functions);
        match (event, s.step) {
            (Event::Option(WILL, OPT_TN3270E), N::Tn3270e) => {
                tn3270e_sub(&mut s.reply, &[E_SEND, E_DEVICE_TYPE]);
                s.step = N::DeviceType;
            }
            (Event::Option(WILL, OPT_TN3270E), _) if !e_steps && !s.dont_said => {
                // Not spoken on this connection (refused, or fallen back):
                // said once.
                command(&mut s.reply, DONT, OPT_TN3270E);
                s.dont_said = true;
            }
            (Event::Option(WONT, OPT_TN3270E), _) if e_steps => Server::plain(s),
            (Event::Sub([OPT_TN3270E, E_DEVICE_TYPE, E_REQUEST, rest @ ..]), N::DeviceType) => {
                self.device_type(s, rest)
            }
            (
                Event::Sub([OPT_TN3270E, E_FUNCTIONS, op @ (E_REQUEST | E_IS), codes @ ..]),
                N::Functions,
            ) => self.functions(s, codes, *op == E_IS)?,
            (Event::Option(WILL, OPT_TTYPE), N::TerminalType) => {
                s.reply
                    .extend_from_slice(&[IAC, SB, OPT_TTYPE, TTYPE_SEND, IAC, SE]);
                s.step = N::TerminalTypeIs;
            }
            (Event::Option(WONT, OPT_TTYPE), _) => {
                return Err(Fault(
                    "the client refused TERMINAL-TYPE: not a TN3270 terminal".to_string(),
                ))
            }
            (Event::Sub(sub), N::TerminalTypeIs) => {
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
                    command(&mut s.reply, verb, option);
                }
                s.step = N::Modes;
            }
            (Event::Option(verb, option @ (OPT_EOR | OPT_BINARY)), _) => {
                let at = |b: u8| 1u8 << (b + 2 * u8::from(option == OPT_BINARY));
                match verb {
                    WILL => s.modes |= at(0),
                    DO => s.modes |= at(1),
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
        if s.step == N::Modes && s.modes == MODES_AGREED {
            self.reply_screen(s);
        }
        Ok(())
    }
}

impl Handler for Server {
    const FRAMED: bool = true;
    const SETUP: bool = true;
    type State = ServerState;

    #[inline]
    fn of(request_bytes: u64, response_bytes: u64, tn3270: &Tn3270Options) -> Server {
        Server {
            request_bytes,
            response_bytes,
            options: *tn3270,
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
        let ServerState {
            telnet,
            reply,
            record,
            began,
            ended,
            seen,
            framing,
            demo,
            ..
        } = state;
        release_logon(reply, telnet);
        *seen += chunk.len() as u64;
        let framing = *framing;
        telnet.scan(chunk, |event| {
            if *ended {
                return Err(Fault(
                    "bytes past the end of a request (its IAC EOR): records are not \
                     pipelined, so the peer sent a record of another length or two at once"
                        .to_string(),
                ));
            }
            if let (Some(d), Event::Data(b)) = (demo.as_mut(), event) {
                if usize::from(record.at) >= framing.header_bytes() {
                    d.byte(b);
                }
            }
            if let (Some(d), Event::Eor) = (demo.as_mut(), event) {
                if !*began {
                    // A RESPONSE record (or another that is no input) ended.
                    d.skip();
                }
            }
            match record.take(event, framing, "request")? {
                Piece::First(b, h) if h.is_data() => {
                    if !is_aid(b) {
                        return Err(Fault(format!(
                            "a request beginning with 0x{b:02X}: not a 3270 record (is the \
                             peer a TN3270 terminal?)"
                        )));
                    }
                    *began = true;
                }
                // A RESPONSE (the terminal's answer to a screen that asked
                // for one), or another record that is no input: skipped.
                Piece::End(h) if h.is_data() && *began => *ended = true,
                _ => {}
            }
            Ok(())
        })?;
        if state.ended {
            state.began = false;
            state.ended = false;
            state.seen = 0;
            state.seq = next_seq(state.seq);
            let flag = Server::answer_flag(state);
            if let Some(d) = state.demo.as_mut() {
                let data = d.answer();
                d.wire.clear();
                if state.framing == Framing::Tn3270e {
                    let [hi, lo] = state.seq.to_be_bytes();
                    push_escaped(&mut d.wire, &[DT_3270_DATA, 0, flag, hi, lo]);
                }
                push_escaped(&mut d.wire, &data);
                d.wire.extend_from_slice(&[IAC, EOR]);
            }
            return Ok(0);
        }
        if state.seen > expected + SLACK_BYTES {
            return Err(Fault(format!(
                "a request of more than {} bytes without IAC EOR: the peer does not end \
                 its records (END-OF-RECORD not agreed?)",
                expected + SLACK_BYTES
            )));
        }
        Ok(expected.saturating_sub(state.seen).max(1))
    }

    #[inline]
    fn response_bytes(&self, state: &ServerState) -> u64 {
        match &state.demo {
            Some(d) => d.wire.len() as u64,
            None => self.answer_bytes(state.framing),
        }
    }

    #[inline]
    fn fill_response(&self, state: &ServerState, offset: u64, out: &mut [u8]) {
        if let Some(d) = &state.demo {
            return fill(&d.wire, offset, out);
        }
        let len = self.answer_bytes(state.framing);
        match state.framing {
            Framing::Tn3270 => fill_record(&ANSWER_HEAD, &ANSWER_TAIL, len, offset, out),
            Framing::Tn3270e => {
                let [hi, lo] = state.seq.to_be_bytes();
                let mut head = [0u8; HEADER_BYTES as usize + ANSWER_HEAD.len()];
                head[..5].copy_from_slice(&[DT_3270_DATA, 0, Server::answer_flag(state), hi, lo]);
                head[5..].copy_from_slice(&ANSWER_HEAD);
                fill_record(&head, &ANSWER_TAIL, len, offset, out);
            }
        }
    }

    /// The server speaks first: it offers TN3270E, or (refusing it) asks
    /// for the terminal type.
    fn setup_open(&self, state: &mut ServerState) -> Setup {
        state.reply.clear();
        match self.options.responder {
            ResponderTn3270e::Offer => {
                command(&mut state.reply, DO, OPT_TN3270E);
                state.step = Negotiation::Tn3270e;
            }
            ResponderTn3270e::Refuse => Server::plain(state),
        }
        Setup::Send
    }

    fn setup_received(&self, state: &mut ServerState, chunk: &[u8]) -> Result<Setup, Fault> {
        state.reply.clear();
        let mut telnet = std::mem::take(&mut state.telnet);
        let scanned = telnet.scan(chunk, |event| {
            if state.step == Negotiation::Done {
                return Err(Fault(
                    "bytes after the terminal's last negotiation answer and before the \
                     first screen: the terminal must wait for its screen"
                        .to_string(),
                ));
            }
            self.negotiate(state, event)
        });
        state.telnet = telnet;
        scanned?;
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
