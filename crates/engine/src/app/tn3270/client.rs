//! The driver's half of TN3270: a terminal. It answers the server's
//! negotiation (TN3270E or plain TN3270, see the parent module), is logged
//! on once the first screen arrives, then sends Enter records of the
//! request size and reads each answer to its `IAC EOR`, answering what the
//! server asks on the way.

use stackbench_model::settings::{Tn3270Options, Tn3270e};
use stackbench_model::{AppProtocol, Kind};

use super::script::Scripted;
use super::{
    command, fill, fill_record, function_bits, function_codes, function_names, is_write_command,
    reason_name, release_logon, tn3270e_sub, Event, Fault, Framing, Header, Piece, Record, Telnet,
    DO, DONT, DT_3270_DATA, DT_RESPONSE, DT_UNBIND, EOR, E_CONNECT, E_DEVICE_TYPE, E_FUNCTIONS,
    E_IS, E_REJECT, E_REQUEST, E_SEND, HEADER_BYTES, IAC, MIN_ANSWER_BYTES, MIN_REQUEST_BYTES,
    OPT_BINARY, OPT_EOR, OPT_TIMING_MARK, OPT_TN3270E, OPT_TTYPE, REASONS, REQUEST_HEAD,
    REQUEST_HEAD_E, REQUEST_TAIL, RESPONSE_COMMAND_REJECT, RESPONSE_DEVICE_END,
    RSF_ALWAYS_RESPONSE, RSF_NEGATIVE, RSF_NO_RESPONSE, RSF_POSITIVE, SB, SE, SLACK_BYTES,
    TERMINAL_FUNCTIONS, TTYPE_IS, TTYPE_SEND, WILL, WONT,
};
use crate::app::{grouped, ClassShape, Codec, Settled, Setup};

/// The driver's half: a terminal. Requests are Enter records of the
/// request size; answers end at `IAC EOR`.
#[derive(Debug, Clone, Copy)]
pub struct Client {
    request_bytes: u64,
    answer_bytes: u64,
    options: Tn3270Options,
    /// CRR: what the logon owes goes with the first request (see
    /// [`Session::record_end`]).
    crr: bool,
}

/// Longest device type kept from the server's `DEVICE-TYPE IS`.
const DEVICE_MAX: usize = 24;

/// Where a terminal's TN3270E negotiation is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Tn3270eStep {
    /// The server has not offered it (or the terminal refused).
    #[default]
    None,
    /// `WILL TN3270E` said: device type and functions under way.
    Agreed,
    /// Functions agreed: records carry the header.
    Negotiated,
    /// Refused by the server, or backed off by the terminal: plain TN3270.
    Refused,
}

/// A terminal connection's parse: the Telnet scanner apart from the rest,
/// so that a scan can hand each event to the session.
#[derive(Debug, Default)]
pub struct ClientState {
    pub(super) telnet: Telnet,
    pub(super) session: Session,
}

/// Everything of a terminal connection but its scanner.
#[derive(Debug, Default)]
pub struct Session {
    answered: Answered,
    /// Setup bytes owed now (freed once logged on).
    pub(super) reply: Vec<u8>,
    /// Bytes owed ahead of the next request (after logon).
    pub(super) owed: Vec<u8>,
    record: Record,
    /// The record being read was refused (a negative response is owed at
    /// its end, and it is no answer).
    rejecting: bool,
    /// Bytes the server sent during setup.
    setup_seen: u64,
    e: Tn3270eStep,
    framing: Framing,
    /// TN3270E functions: those asked for while negotiating, those agreed
    /// once negotiated.
    functions: u8,
    device: [u8; DEVICE_MAX],
    device_len: u8,
    /// Why setup failed (a key of the record's failure counts).
    failure: &'static str,
    /// A scripted terminal's screen and step (`tn3270_script`).
    pub(super) script: Option<Box<Scripted>>,
}

impl Client {
    /// Bytes of the answer stackbench's responder gives.
    pub fn answer_bytes(&self) -> u64 {
        self.answer_bytes
    }

    /// The terminal type it sends: IBM-3278-M-E (12 bytes).
    fn terminal_type(&self) -> [u8; 12] {
        let mut t = *b"IBM-3278-2-E";
        t[9] = b'0' + self.options.model;
        t
    }

    /// Its request's bytes before the data, in `framing`.
    fn request_head(framing: Framing) -> &'static [u8] {
        match framing {
            Framing::Tn3270 => &REQUEST_HEAD,
            Framing::Tn3270e => &REQUEST_HEAD_E,
        }
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

/// A fault of the setup, with the key its session is counted under.
fn failed(failure: &mut &'static str, key: &'static str, line: String) -> Fault {
    *failure = key;
    Fault(line)
}

impl Session {
    /// The server's `IAC <verb> <option>`: answered into `out` (the setup's
    /// reply, or what is owed ahead of the next request).
    fn option(&mut self, c: &Client, verb: u8, option: u8, setup: bool) -> Result<(), Fault> {
        let mode = c.options.tn3270e;
        let out = if setup {
            &mut self.reply
        } else {
            &mut self.owed
        };
        match (verb, option) {
            // Answered each time it is asked (x3270's `tm_count`).
            (DO, OPT_TIMING_MARK) => command(out, WILL, OPT_TIMING_MARK),
            (DO, OPT_TN3270E) if mode != Tn3270e::Off && self.e == Tn3270eStep::None => {
                if self.answered.to_do.insert(option) {
                    command(out, WILL, OPT_TN3270E);
                    self.e = Tn3270eStep::Agreed;
                }
            }
            (DONT, OPT_TN3270E) if self.e == Tn3270eStep::Agreed => {
                if mode == Tn3270e::On {
                    return Err(failed(
                        &mut self.failure,
                        "tn3270e_refused",
                        "the server refused TN3270E (it answered WILL TN3270E with DONT \
                         TN3270E) and tn3270e is on: use tn3270e auto to fall back to \
                         plain TN3270"
                            .to_string(),
                    ));
                }
                command(out, WONT, OPT_TN3270E);
                self.e = Tn3270eStep::Refused;
            }
            (DO, OPT_TTYPE) if mode == Tn3270e::On && self.e != Tn3270eStep::Negotiated => {
                return Err(failed(
                    &mut self.failure,
                    "tn3270e_refused",
                    "the server asks for TERMINAL-TYPE, plain TN3270's negotiation, and \
                     never agreed TN3270E, and tn3270e is on: use tn3270e auto or off"
                        .to_string(),
                ));
            }
            _ => {
                let wanted = matches!(option, OPT_BINARY | OPT_EOR | OPT_TTYPE);
                match verb {
                    DO if self.answered.to_do.insert(option) => {
                        command(out, if wanted { WILL } else { WONT }, option);
                    }
                    WILL if self.answered.to_will.insert(option) => {
                        // TERMINAL-TYPE is the terminal's to send, not the server's.
                        let agree = wanted && option != OPT_TTYPE;
                        command(out, if agree { DO } else { DONT }, option);
                    }
                    // A withdrawal needs no answer here: the session ends either way.
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Gives up TN3270E (auto): `WONT TN3270E`, then plain TN3270's
    /// negotiation, as x3270's `backoff_tn3270e`; with `tn3270e on` the
    /// fault `line` instead.
    fn back_off(&mut self, c: &Client, key: &'static str, line: String) -> Result<(), Fault> {
        if c.options.tn3270e == Tn3270e::On {
            return Err(failed(&mut self.failure, key, line));
        }
        command(&mut self.reply, WONT, OPT_TN3270E);
        self.e = Tn3270eStep::Refused;
        Ok(())
    }

    /// A subnegotiation during setup.
    fn sub(&mut self, c: &Client, sub: &[u8]) -> Result<(), Fault> {
        match sub {
            [OPT_TTYPE, TTYPE_SEND] => {
                let t = c.terminal_type();
                self.reply
                    .extend_from_slice(&[IAC, SB, OPT_TTYPE, TTYPE_IS]);
                self.reply.extend_from_slice(&t);
                self.reply.extend_from_slice(&[IAC, SE]);
                self.device[..t.len()].copy_from_slice(&t);
                self.device_len = t.len() as u8;
            }
            [OPT_TN3270E, rest @ ..] if self.e == Tn3270eStep::Agreed => self.tn3270e(c, rest)?,
            _ => {}
        }
        Ok(())
    }

    /// A TN3270E subnegotiation (after `SB TN3270E`) while negotiating.
    fn tn3270e(&mut self, c: &Client, sub: &[u8]) -> Result<(), Fault> {
        match sub {
            [E_SEND, E_DEVICE_TYPE] => {
                let mut body = vec![E_DEVICE_TYPE, E_REQUEST];
                body.extend_from_slice(&c.terminal_type());
                if let Some(lu) = c.options.lu {
                    body.push(E_CONNECT);
                    body.extend_from_slice(lu.as_bytes());
                }
                tn3270e_sub(&mut self.reply, &body);
            }
            [E_DEVICE_TYPE, E_IS, rest @ ..] => {
                let name = rest.split(|&b| b == E_CONNECT).next().unwrap_or_default();
                let n = name.len().min(DEVICE_MAX);
                self.device[..n].copy_from_slice(&name[..n]);
                self.device_len = n as u8;
                self.functions = TERMINAL_FUNCTIONS;
                let mut body = vec![E_FUNCTIONS, E_REQUEST];
                body.extend(function_codes(self.functions));
                tn3270e_sub(&mut self.reply, &body);
            }
            [E_DEVICE_TYPE, E_REJECT, rest @ ..] => {
                let code = match rest {
                    [super::E_REASON, code, ..] => *code,
                    _ => 6,
                };
                let asked = String::from_utf8_lossy(&c.terminal_type()).into_owned();
                let lu = c.options.lu.map(|lu| format!(" with LU {lu}"));
                let line = format!(
                    "the server rejected device type {asked}{}: DEVICE-TYPE REJECT REASON {} \
                     ({code}){}",
                    lu.as_deref().unwrap_or(""),
                    reason_name(code),
                    if lu.is_some() {
                        ": ask for an LU the server defines, or none (drop tn3270_lu)"
                    } else {
                        ": use tn3270e auto to fall back to plain TN3270, or another tn3270_model"
                    }
                );
                let key = REASONS.get(usize::from(code)).map_or("rejected", |r| r.1);
                if lu.is_some() {
                    // A particular LU was asked for: a session on another
                    // would measure something else.
                    return Err(failed(&mut self.failure, key, line));
                }
                self.back_off(c, key, line)?;
            }
            [E_FUNCTIONS, E_REQUEST, codes @ ..] => {
                let (theirs, unknown) = function_bits(codes);
                if !unknown && theirs & !self.functions == 0 {
                    // What we asked for, or less: agreed (RFC 2355 7.2).
                    self.functions = theirs;
                    let mut body = vec![E_FUNCTIONS, E_IS];
                    body.extend(function_codes(theirs));
                    tn3270e_sub(&mut self.reply, &body);
                    self.e = Tn3270eStep::Negotiated;
                } else {
                    // Ask for what both can do.
                    self.functions &= theirs;
                    let mut body = vec![E_FUNCTIONS, E_REQUEST];
                    body.extend(function_codes(self.functions));
                    tn3270e_sub(&mut self.reply, &body);
                }
            }
            [E_FUNCTIONS, E_IS, codes @ ..] => {
                let (theirs, unknown) = function_bits(codes);
                if unknown || theirs & !self.functions != 0 {
                    let line = format!(
                        "the server granted TN3270E functions the terminal did not ask for \
                         ({} for {}): use tn3270e auto to fall back to plain TN3270",
                        function_names(theirs),
                        function_names(self.functions)
                    );
                    return self.back_off(c, "functions_added", line);
                }
                self.functions = theirs;
                self.e = Tn3270eStep::Negotiated;
            }
            _ => {}
        }
        Ok(())
    }

    /// A data byte or `IAC EOR` during setup; `Ok(true)` when it ended the
    /// first screen.
    fn setup_record(&mut self, c: &Client, event: Event<'_>) -> Result<bool, Fault> {
        if !self.record.begun() {
            self.framing = if self.e == Tn3270eStep::Negotiated {
                Framing::Tn3270e
            } else {
                Framing::Tn3270
            };
            if c.options.tn3270e == Tn3270e::On && self.framing == Framing::Tn3270 {
                return Err(failed(
                    &mut self.failure,
                    "tn3270e_refused",
                    "the server sent a screen without agreeing TN3270E, and tn3270e is on: \
                     use tn3270e auto or off"
                        .to_string(),
                ));
            }
        }
        let framing = self.framing;
        if let (Some(sc), Event::Data(b)) = (self.script.as_mut(), event) {
            sc.byte(b)
                .map_err(|f| failed(&mut self.failure, "not_telnet", f.0))?;
        }
        let piece = self
            .record
            .take(event, framing, "screen")
            .map_err(|f| failed(&mut self.failure, "not_telnet", f.0))?;
        match piece {
            Piece::First(b, h) if h.is_data() && !is_write_command(b) => {
                if h.response_flag == RSF_NO_RESPONSE {
                    return Err(failed(
                        &mut self.failure,
                        "not_telnet",
                        format!(
                            "the server's first screen begins with 0x{b:02X}, not a 3270 \
                             write command: is it a TN3270 server?"
                        ),
                    ));
                }
                self.rejecting = true;
            }
            Piece::End(h) => {
                let first = self.record_end(c, h, true)?;
                if let Some(sc) = self.script.as_mut() {
                    if first {
                        sc.logged_on(framing)
                            .map_err(|f| failed(&mut self.failure, "first_screen", f.0))?;
                    } else {
                        sc.skip();
                    }
                }
                return Ok(first);
            }
            _ => {}
        }
        Ok(false)
    }

    /// A record ended: answers what its header asks (into the setup's
    /// reply or what is owed); `Ok(true)` for a 3270 data record, the
    /// screen that ends a logon or answers a request. The definite
    /// response a CRR logon's screen asks for is owed, not replied: it goes
    /// in the same write as the request that follows at once, where a
    /// write of its own would make the request wait, under Nagle, for the
    /// server's delayed ACK (measured: 57 ms against 21 ms per CRR
    /// transaction on loopback). An RR terminal answers it as its logon's
    /// last bytes, before the window opens.
    fn record_end(&mut self, c: &Client, h: Header, setup: bool) -> Result<bool, Fault> {
        // A scripted session may log on again mid-run (after a step timed
        // out): its first step's request follows at once, as CRR's does.
        let follows = c.crr || c.options.script.is_some();
        let owe = !setup || (follows && h.is_data() && !self.rejecting);
        let out = if owe { &mut self.owed } else { &mut self.reply };
        if std::mem::take(&mut self.rejecting) {
            push_response(out, RSF_NEGATIVE, h.seq, RESPONSE_COMMAND_REJECT);
            return Ok(false);
        }
        match h.data_type {
            DT_3270_DATA => {
                if h.response_flag == RSF_ALWAYS_RESPONSE {
                    push_response(out, RSF_POSITIVE, h.seq, RESPONSE_DEVICE_END);
                }
                Ok(true)
            }
            DT_UNBIND => Err(failed(
                &mut self.failure,
                "unbind",
                "the server sent UNBIND: the application ended the session".to_string(),
            )),
            // BIND-IMAGE (passed through), RESPONSE, SSCP-LU and NVT
            // records are no screens of the workload.
            _ => Ok(false),
        }
    }
}

/// Appends a TN3270E RESPONSE record answering the server's record `seq`.
fn push_response(out: &mut Vec<u8>, flag: u8, seq: u16, data: u8) {
    let [hi, lo] = seq.to_be_bytes();
    super::push_escaped(out, &[DT_RESPONSE, 0, flag, hi, lo, data]);
    out.extend_from_slice(&[IAC, EOR]);
}

impl Codec for Client {
    const FRAMED: bool = true;
    const PROTOCOL: AppProtocol = AppProtocol::Tn3270;
    const SETUP: bool = true;
    type State = ClientState;

    fn of(shape: &ClassShape) -> Client {
        // A terminal that may run TN3270E sizes its records for the header.
        let header = match shape.tn3270.tn3270e {
            Tn3270e::Off => 0,
            Tn3270e::Auto | Tn3270e::On => HEADER_BYTES,
        };
        Client {
            request_bytes: shape.request_bytes.max(MIN_REQUEST_BYTES + header),
            answer_bytes: shape.response_bytes.max(MIN_ANSWER_BYTES + header),
            options: shape.tn3270,
            crr: shape.kind == Kind::Crr,
        }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_bytes
    }

    #[inline]
    fn fill_request(&self, state: &ClientState, offset: u64, out: &mut [u8]) {
        let owed = state.session.owed.len() as u64;
        let mut out = out;
        let mut offset = offset;
        if offset < owed {
            fill(&state.session.owed, offset, out);
            let n = ((owed - offset) as usize).min(out.len());
            out = &mut out[n..];
            offset = owed;
        }
        if let Some(sc) = &state.session.script {
            return fill(sc.request(), offset - owed, out);
        }
        fill_record(
            Client::request_head(state.session.framing),
            &REQUEST_TAIL,
            self.request_bytes,
            offset - owed,
            out,
        );
    }

    #[inline]
    fn owed_bytes(&self, state: &ClientState) -> u64 {
        state.session.owed.len() as u64
    }

    /// A scripted terminal's request is its step's record.
    #[inline]
    fn request_len(&self, state: &ClientState) -> u64 {
        let owed = state.session.owed.len() as u64;
        match &state.session.script {
            Some(sc) => owed + sc.request().len() as u64,
            None => owed + self.request_bytes,
        }
    }

    #[inline]
    fn request_sent(&self, state: &mut ClientState) {
        state.session.owed.clear();
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
        let ClientState { telnet, session } = state;
        release_logon(&mut session.reply, telnet);
        session.setup_seen += chunk.len() as u64;
        let mut answered = false;
        telnet.scan(chunk, |event| {
            if answered {
                return Err(Fault(
                    "bytes past the end of a response (its IAC EOR): records are not \
                     pipelined, so the peer sent a record of another length or two at once"
                        .to_string(),
                ));
            }
            match event {
                Event::Option(verb, option) => session.option(self, verb, option, false),
                Event::Sub(_) => Ok(()),
                Event::Data(_) | Event::Eor => {
                    if let (Some(sc), Event::Data(b)) = (session.script.as_mut(), event) {
                        sc.byte(b)?;
                    }
                    match session.record.take(event, session.framing, "response")? {
                        Piece::First(b, h) if h.is_data() && !is_write_command(b) => {
                            if h.response_flag == RSF_NO_RESPONSE {
                                return Err(Fault(format!(
                                    "a response beginning with 0x{b:02X}: not a 3270 record \
                                     (is the peer a TN3270 server?)"
                                )));
                            }
                            session.rejecting = true;
                        }
                        Piece::End(h) => {
                            let data = session.record_end(self, h, false)?;
                            answered = match session.script.as_mut() {
                                Some(sc) if data => sc.answered(session.framing)?,
                                Some(sc) => {
                                    sc.skip();
                                    false
                                }
                                None => data,
                            };
                        }
                        _ => {}
                    }
                    Ok(())
                }
            }
        })?;
        if answered {
            session.setup_seen = 0;
            return Ok(0);
        }
        if session.setup_seen > expected + SLACK_BYTES {
            return Err(Fault(format!(
                "a response of more than {} bytes without IAC EOR: the peer does not end \
                 its records (END-OF-RECORD not agreed?)",
                expected + SLACK_BYTES
            )));
        }
        Ok(expected.saturating_sub(session.setup_seen).max(1))
    }

    const RESPONSE_NAME: &'static str = "screen";
    const SETUP_NAME: &'static str = "Telnet negotiation";

    /// Bytes of the answer so far (the session's count of what the server
    /// sent since the last record ended).
    fn response_seen(&self, state: &ClientState, _remaining: u64) -> Option<String> {
        let seen = state.session.setup_seen;
        (seen > 0).then(|| format!("{} bytes of a screen without its IAC EOR", grouped(seen)))
    }

    fn setup_seen(&self, state: &ClientState) -> Option<String> {
        let seen = state.session.setup_seen;
        (seen > 0).then(|| format!("{} bytes of Telnet negotiation", grouped(seen)))
    }

    /// The server speaks first. A scripted terminal starts its script
    /// afresh with each session.
    fn setup_open(&self, state: &mut ClientState) -> Setup {
        state.session.script = self
            .options
            .script
            .map(|s| Box::new(Scripted::new(s.0, self.options.model)));
        Setup::Read
    }

    /// Answers the server's negotiation; setup is over with the first
    /// screen's record (which may arrive with the last requests).
    fn setup_received(&self, state: &mut ClientState, chunk: &[u8]) -> Result<Setup, Fault> {
        let ClientState { telnet, session } = state;
        session.reply.clear();
        session.setup_seen += chunk.len() as u64;
        let mut screen = false;
        let scanned = telnet.scan(chunk, |event| {
            if screen {
                return Err(failed(
                    &mut session.failure,
                    "not_telnet",
                    "bytes past the end of the server's first screen (its IAC EOR): it \
                     must wait for the terminal's input"
                        .to_string(),
                ));
            }
            match event {
                Event::Option(verb, option) => session.option(self, verb, option, true),
                Event::Sub(sub) => session.sub(self, sub),
                Event::Data(_) | Event::Eor => {
                    screen = session.setup_record(self, event)?;
                    Ok(())
                }
            }
        });
        if let Err(fault) = scanned {
            if session.failure.is_empty() {
                session.failure = "not_telnet";
            }
            return Err(fault);
        }
        if !screen && session.setup_seen > SLACK_BYTES {
            session.failure = "not_telnet";
            return Err(Fault(format!(
                "no first screen within {SLACK_BYTES} bytes of Telnet negotiation: the \
                 server never ends a record (is it a TN3270 server?)"
            )));
        }
        if screen {
            session.setup_seen = 0;
        }
        Ok(match (screen, session.reply.is_empty()) {
            (true, true) => Setup::Done,
            (true, false) => Setup::SendLast,
            (false, false) => Setup::Send,
            (false, true) => Setup::Read,
        })
    }

    #[inline]
    fn setup_bytes(&self, state: &ClientState) -> u64 {
        state.session.reply.len() as u64
    }

    #[inline]
    fn fill_setup(&self, state: &ClientState, offset: u64, out: &mut [u8]) {
        fill(&state.session.reply, offset, out);
    }

    fn settled<'a>(&self, state: &'a ClientState) -> Option<Settled<'a>> {
        let s = &state.session;
        Some(Settled {
            mode: s.framing.mode(),
            functions: match s.framing {
                Framing::Tn3270e => s.functions,
                Framing::Tn3270 => 0,
            },
            // The type the server confirmed (TN3270E), or the one sent.
            device_type: std::str::from_utf8(&s.device[..usize::from(s.device_len)]).unwrap_or("?"),
        })
    }

    fn setup_failure(&self, state: &ClientState) -> &'static str {
        match state.session.failure {
            "" => "negotiation",
            key => key,
        }
    }

    #[inline]
    fn scripted(&self) -> bool {
        self.options.script.is_some()
    }

    #[inline]
    fn response_timeout_ns(&self, state: &ClientState) -> Option<u64> {
        state.session.script.as_ref().map(|sc| sc.timeout_ns())
    }

    #[inline]
    fn step_done(&self, state: &ClientState) -> Option<usize> {
        state.session.script.as_ref()?.done()
    }

    #[inline]
    fn think_ns(&self, state: &ClientState) -> Option<u64> {
        state.session.script.as_ref()?.think_ns()
    }

    fn timed_out(&self, state: &ClientState) -> Option<(usize, String)> {
        state.session.script.as_ref().map(|sc| sc.timed_out())
    }
}
