//! The TN3270 codec and handler on scripted chunks: the negotiation in
//! each mode (TN3270E, plain, the fallbacks) split at every byte, device
//! types, LUs and functions agreed or refused, records of the notation's
//! sizes with and without the TN3270E header, `IAC IAC` inside data, a
//! record split across reads, a second record in the same read, what a
//! terminal owes (definite responses, TIMING-MARK), and garbage refused as
//! a fault.

use stackbench_model::settings::{LuName, ResponderTn3270e, SettingValue, Tn3270Options, Tn3270e};
use stackbench_model::{CrrClose, Kind};

use super::client::{Client, ClientState};
use super::server::{Negotiation, MODES_AGREED};
use super::server::{Server, ServerState};
use super::*;
use crate::app::{ClassShape, Codec, Handler, Setup};

fn opts(tn3270e: Tn3270e) -> Tn3270Options {
    Tn3270Options {
        tn3270e,
        ..Tn3270Options::default()
    }
}

fn client_with(request: u64, response: u64, tn3270: Tn3270Options) -> Client {
    Client::of(&ClassShape {
        h2: Default::default(),
        kind: Kind::Rr,
        request_bytes: request,
        response_bytes: response,
        crr_close: CrrClose::Client,
        target: None,
        tn3270,
        amqp: Default::default(),
    })
}

/// A plain TN3270 terminal (`tn3270e off`).
fn client(request: u64, response: u64) -> Client {
    client_with(request, response, opts(Tn3270e::Off))
}

fn server_with(request: u64, response: u64, tn3270: Tn3270Options) -> Server {
    Server::of(request, response, &tn3270)
}

fn server(request: u64, response: u64) -> Server {
    server_with(request, response, Tn3270Options::default())
}

/// The setup bytes a side owes after `step`.
fn owed_client(c: &Client, state: &ClientState) -> Vec<u8> {
    let mut out = vec![0; c.setup_bytes(state) as usize];
    c.fill_setup(state, 0, &mut out);
    out
}

fn owed_server(s: &Server, state: &ServerState) -> Vec<u8> {
    let mut out = vec![0; s.setup_bytes(state) as usize];
    s.fill_setup(state, 0, &mut out);
    out
}

/// What a whole logon did.
struct Logon {
    /// Server turns (each a round trip but the last).
    trips: usize,
    bytes_in: u64,
    bytes_out: u64,
    cs: ClientState,
    ss: ServerState,
}

/// Runs the whole negotiation between `c` and `s`, each side's bytes
/// handed to the other in chunks of `split` (each side sends what a chunk
/// made it owe, as the machines do). What the terminal sends with its
/// last setup step (a definite response) goes to the server's first
/// request read, which must skip it.
fn negotiate_with(c: &Client, s: &Server, split: usize) -> Result<Logon, Fault> {
    let (mut cs, mut ss) = (ClientState::default(), ServerState::default());
    assert_eq!(
        c.setup_open(&mut cs),
        Setup::Read,
        "the server speaks first"
    );
    assert_eq!(s.setup_open(&mut ss), Setup::Send);
    let mut from_server = owed_server(s, &ss);
    let mut server_done = false;
    let mut trips = 0;
    let (mut bytes_in, mut bytes_out) = (0, 0);
    loop {
        trips += 1;
        bytes_out += from_server.len() as u64;
        let mut from_client = Vec::new();
        let mut client_done = false;
        for chunk in from_server.chunks(split) {
            assert!(!client_done, "bytes after the first screen");
            match c.setup_received(&mut cs, chunk)? {
                Setup::Read => {}
                Setup::Send => from_client.extend(owed_client(c, &cs)),
                Setup::SendLast => {
                    from_client.extend(owed_client(c, &cs));
                    client_done = true;
                }
                Setup::Done => client_done = true,
            }
        }
        bytes_in += from_client.len() as u64;
        if client_done {
            assert!(server_done, "the client ends with the server's screen");
            for chunk in from_client.chunks(split) {
                assert!(s.request_left(&mut ss, 0, 0, chunk)? > 0, "no request");
            }
            return Ok(Logon {
                trips,
                bytes_in,
                bytes_out,
                cs,
                ss,
            });
        }
        assert!(!from_client.is_empty(), "trip {trips}: the client answers");
        from_server.clear();
        for chunk in from_client.chunks(split) {
            match s.setup_received(&mut ss, chunk)? {
                Setup::Read => {}
                Setup::Send => from_server.extend(owed_server(s, &ss)),
                Setup::SendLast => {
                    from_server.extend(owed_server(s, &ss));
                    server_done = true;
                }
                Setup::Done => unreachable!("the server ends by sending its screen"),
            }
        }
    }
}

const SPLITS: [usize; 6] = [1, 2, 3, 5, 7, 1000];

#[test]
fn a_terminal_that_refuses_tn3270e_logs_on_as_tn3270() {
    for split in SPLITS {
        let l = negotiate_with(&client(100, 800), &server(100, 800), split).unwrap();
        // TN3270E refused, TERMINAL-TYPE, SEND/IS, EOR and BINARY, then
        // the screen.
        assert_eq!(l.trips, 5, "split {split}");
        assert_eq!((l.bytes_in, l.bytes_out), (LOGON_BYTES_IN, LOGON_BYTES_OUT));
        assert_eq!((LOGON_BYTES_IN, LOGON_BYTES_OUT), (36, 61));
        assert_eq!((l.ss.step, l.ss.modes), (Negotiation::Done, MODES_AGREED));
        let c = client(100, 800);
        let settled = c.settled(&l.cs).unwrap();
        assert_eq!((settled.mode, settled.functions), ("tn3270", 0));
        assert_eq!(settled.device_type, TERMINAL_TYPE);
    }
}

#[test]
fn tn3270e_is_the_default_when_the_server_offers_it() {
    let c = client_with(100, 800, Tn3270Options::default());
    let s = server(100, 800);
    for split in SPLITS {
        let l = negotiate_with(&c, &s, split).unwrap();
        // DO/WILL TN3270E, SEND/REQUEST DEVICE-TYPE, IS/FUNCTIONS REQUEST,
        // then FUNCTIONS IS with the BIND image and the screen: one round
        // trip fewer than plain TN3270.
        assert_eq!(l.trips, 4, "split {split}");
        let settled = c.settled(&l.cs).unwrap();
        assert_eq!(settled.mode, "tn3270e");
        assert_eq!(
            function_names(settled.functions),
            "BIND-IMAGE RESPONSES SYSREQ"
        );
        assert_eq!(settled.device_type, "IBM-3278-2-E");
        assert_eq!(l.ss.framing, Framing::Tn3270e);
        assert_eq!(l.ss.functions, settled.functions);
        // The logon screen asked for a definite response: the terminal's
        // last setup bytes are a positive RESPONSE record (8 bytes). The
        // figures docs/transports.md gives.
        assert_eq!(
            (l.bytes_in, l.bytes_out),
            (LOGON_E_BYTES_IN, LOGON_E_BYTES_OUT)
        );
        assert_eq!((LOGON_E_BYTES_IN, LOGON_E_BYTES_OUT), (40, 134));
    }
}

#[test]
fn a_server_that_refuses_tn3270e_gets_plain_tn3270_or_a_fault_with_on() {
    let refusing = server_with(
        100,
        800,
        Tn3270Options {
            responder: ResponderTn3270e::Refuse,
            ..Tn3270Options::default()
        },
    );
    let auto = client_with(100, 800, Tn3270Options::default());
    let l = negotiate_with(&auto, &refusing, 3).unwrap();
    // No DO TN3270E to answer: one trip and 3 bytes each way fewer.
    assert_eq!(l.trips, 4);
    assert_eq!(
        (l.bytes_in, l.bytes_out),
        (LOGON_BYTES_IN - 3, LOGON_BYTES_OUT - 3)
    );
    assert_eq!(auto.settled(&l.cs).unwrap().mode, "tn3270");
    let on = client_with(100, 800, opts(Tn3270e::On));
    let fault = negotiate_with(&on, &refusing, 1000).err().unwrap();
    assert!(fault.0.contains("tn3270e is on"), "{fault}");
    // The same terminal told DONT after its WILL.
    let mut cs = ClientState::default();
    on.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E]).unwrap();
    assert_eq!(owed_client(&on, &cs), [IAC, WILL, OPT_TN3270E]);
    let fault = on
        .setup_received(&mut cs, &[IAC, DONT, OPT_TN3270E])
        .unwrap_err();
    assert!(fault.0.contains("refused TN3270E"), "{fault}");
    assert_eq!(on.setup_failure(&cs), "tn3270e_refused");
    // With auto it acknowledges (WONT) and goes on.
    let mut cs = ClientState::default();
    auto.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E])
        .unwrap();
    auto.setup_received(&mut cs, &[IAC, DONT, OPT_TN3270E])
        .unwrap();
    assert_eq!(owed_client(&auto, &cs), [IAC, WONT, OPT_TN3270E]);
}

#[test]
fn an_lu_is_asked_for_and_one_the_server_does_not_define_is_a_fault() {
    let with_lu = |lu: &str| {
        client_with(
            100,
            800,
            Tn3270Options {
                lu: Some(LuName::parse(lu).unwrap()),
                model: 4,
                ..Tn3270Options::default()
            },
        )
    };
    let c = with_lu("SBLU0042");
    let l = negotiate_with(&c, &server(100, 800), 1000).unwrap();
    let settled = c.settled(&l.cs).unwrap();
    assert_eq!(
        (settled.mode, settled.device_type),
        ("tn3270e", "IBM-3278-4-E")
    );
    // The request named the LU (CONNECT); the server's IS confirmed it.
    let mut cs = ClientState::default();
    c.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E]).unwrap();
    c.setup_received(
        &mut cs,
        &[IAC, SB, OPT_TN3270E, E_SEND, E_DEVICE_TYPE, IAC, SE],
    )
    .unwrap();
    let mut want = vec![IAC, SB, OPT_TN3270E, E_DEVICE_TYPE, E_REQUEST];
    want.extend_from_slice(b"IBM-3278-4-E");
    want.push(E_CONNECT);
    want.extend_from_slice(b"SBLU0042");
    want.extend_from_slice(&[IAC, SE]);
    assert_eq!(owed_client(&c, &cs), want);
    // An LU outside the pool: INV-NAME, named in the fault, whatever the
    // mode (a session on another LU would measure something else).
    let c = with_lu("NOSUCHLU");
    let fault = negotiate_with(&c, &server(100, 800), 1000).err().unwrap();
    assert!(fault.0.contains("REJECT REASON INV-NAME (3)"), "{fault}");
    assert!(fault.0.contains("with LU NOSUCHLU"), "{fault}");
}

#[test]
fn a_rejected_device_type_falls_back_with_auto_and_is_a_fault_with_on() {
    let reject = [
        IAC,
        SB,
        OPT_TN3270E,
        E_DEVICE_TYPE,
        E_REJECT,
        E_REASON,
        REASON_INV_DEVICE_TYPE,
        IAC,
        SE,
    ];
    let auto = client_with(100, 800, Tn3270Options::default());
    let mut cs = ClientState::default();
    auto.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E])
        .unwrap();
    auto.setup_received(&mut cs, &reject).unwrap();
    assert_eq!(owed_client(&auto, &cs), [IAC, WONT, OPT_TN3270E]);
    let on = client_with(100, 800, opts(Tn3270e::On));
    let mut cs = ClientState::default();
    on.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E]).unwrap();
    let fault = on.setup_received(&mut cs, &reject).unwrap_err();
    assert!(
        fault.0.contains("REJECT REASON INV-DEVICE-TYPE (4)"),
        "{fault}"
    );
    assert_eq!(on.setup_failure(&cs), "rejected_inv_device_type");
    // The server rejects what no 3270 display is, and takes the terminal's
    // WONT to plain TN3270.
    let s = server(100, 800);
    let mut ss = ServerState::default();
    s.setup_open(&mut ss);
    s.setup_received(&mut ss, &[IAC, WILL, OPT_TN3270E])
        .unwrap();
    let mut vt = vec![IAC, SB, OPT_TN3270E, E_DEVICE_TYPE, E_REQUEST];
    vt.extend_from_slice(b"VT100");
    vt.extend_from_slice(&[IAC, SE]);
    s.setup_received(&mut ss, &vt).unwrap();
    assert_eq!(owed_server(&s, &ss), reject);
    s.setup_received(&mut ss, &[IAC, WONT, OPT_TN3270E])
        .unwrap();
    assert_eq!(owed_server(&s, &ss), [IAC, DO, OPT_TTYPE]);
}

#[test]
fn functions_are_narrowed_by_counter_proposal_either_way() {
    // A server that grants RESPONSES only: the terminal accepts (IS).
    let c = client_with(100, 800, Tn3270Options::default());
    let mut cs = ClientState::default();
    c.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E]).unwrap();
    let mut is = vec![IAC, SB, OPT_TN3270E, E_DEVICE_TYPE, E_IS];
    is.extend_from_slice(b"IBM-3278-2-E");
    is.extend_from_slice(&[E_CONNECT, b'L', b'U', IAC, SE]);
    c.setup_received(&mut cs, &is).unwrap();
    assert_eq!(
        owed_client(&c, &cs),
        [
            IAC,
            SB,
            OPT_TN3270E,
            E_FUNCTIONS,
            E_REQUEST,
            0,
            2,
            4,
            IAC,
            SE
        ]
    );
    c.setup_received(
        &mut cs,
        &[IAC, SB, OPT_TN3270E, E_FUNCTIONS, E_REQUEST, 2, IAC, SE],
    )
    .unwrap();
    assert_eq!(
        owed_client(&c, &cs),
        [IAC, SB, OPT_TN3270E, E_FUNCTIONS, E_IS, 2, IAC, SE]
    );
    // A server that asks for more than the terminal wants: it asks for
    // the common part.
    let mut cs2 = ClientState::default();
    c.setup_received(&mut cs2, &[IAC, DO, OPT_TN3270E]).unwrap();
    c.setup_received(&mut cs2, &is).unwrap();
    c.setup_received(
        &mut cs2,
        &[IAC, SB, OPT_TN3270E, E_FUNCTIONS, E_REQUEST, 1, 2, IAC, SE],
    )
    .unwrap();
    assert_eq!(
        owed_client(&c, &cs2),
        [IAC, SB, OPT_TN3270E, E_FUNCTIONS, E_REQUEST, 2, IAC, SE]
    );
    // The server narrows a terminal that asks for SCS-CTL-CODES too, and
    // takes the terminal's IS.
    let s = server(100, 800);
    let mut ss = ServerState::default();
    s.setup_open(&mut ss);
    s.setup_received(&mut ss, &[IAC, WILL, OPT_TN3270E])
        .unwrap();
    let mut req = vec![IAC, SB, OPT_TN3270E, E_DEVICE_TYPE, E_REQUEST];
    req.extend_from_slice(b"IBM-3279-2-E");
    req.extend_from_slice(&[IAC, SE]);
    s.setup_received(&mut ss, &req).unwrap();
    let step = s
        .setup_received(
            &mut ss,
            &[IAC, SB, OPT_TN3270E, E_FUNCTIONS, E_REQUEST, 0, 3, IAC, SE],
        )
        .unwrap();
    assert_eq!(step, Setup::Send);
    assert_eq!(
        owed_server(&s, &ss),
        [IAC, SB, OPT_TN3270E, E_FUNCTIONS, E_REQUEST, 0, IAC, SE]
    );
    let step = s
        .setup_received(
            &mut ss,
            &[IAC, SB, OPT_TN3270E, E_FUNCTIONS, E_IS, 0, IAC, SE],
        )
        .unwrap();
    assert_eq!(step, Setup::SendLast);
    let screen = owed_server(&s, &ss);
    // BIND-IMAGE first (seq 0), then the screen (seq 1, no response asked
    // without RESPONSES).
    assert_eq!(&screen[..5], &[DT_BIND_IMAGE, 0, 0, 0, 0]);
    let at = screen.windows(2).position(|w| w == [IAC, EOR]).unwrap() + 2;
    assert_eq!(
        &screen[at..at + 6],
        &[DT_3270_DATA, 0, 0, 0, 1, CMD_ERASE_WRITE]
    );
}

/// A logged-on TN3270E pair.
fn tn3270e_pair(request: u64, response: u64) -> (Client, Server, ClientState, ServerState) {
    let c = client_with(request, response, Tn3270Options::default());
    let s = server(request, response);
    let l = negotiate_with(&c, &s, 1000).unwrap();
    (c, s, l.cs, l.ss)
}

#[test]
fn tn3270e_records_are_the_notations_sizes_header_included() {
    for (request, response) in [(100, 800), (13, 15), (1, 1), (4096, 20_000)] {
        let (c, s, mut cs, mut ss) = tn3270e_pair(request, response);
        let mut req = vec![0; c.request_bytes() as usize];
        c.fill_request(&cs, 0, &mut req);
        assert_eq!(
            req.len() as u64,
            request.max(MIN_REQUEST_BYTES + HEADER_BYTES)
        );
        assert_eq!(&req[..6], &[DT_3270_DATA, 0, 0, 0, 0, AID_ENTER]);
        assert_eq!(s.request_left(&mut ss, 0, 0, &req), Ok(0));
        let mut answer = vec![0; s.response_bytes(&ss) as usize];
        s.fill_response(&ss, 0, &mut answer);
        assert_eq!(
            answer.len() as u64,
            response.max(MIN_ANSWER_BYTES + HEADER_BYTES)
        );
        // 3270-DATA, an exception response only (RESPONSES agreed), seq 2
        // after the BIND image's 0 and the logon screen's 1.
        assert_eq!(
            &answer[..6],
            &[DT_3270_DATA, 0, RSF_ERROR_RESPONSE, 0, 2, CMD_ERASE_WRITE]
        );
        assert_eq!(c.response_left(&mut cs, 0, 0, &answer), Ok(0));
        assert_eq!(
            c.owed_bytes(&cs),
            0,
            "nothing owed for an exception response"
        );
        // Written in pieces, the same bytes.
        let mut pieces = vec![0; answer.len()];
        for (i, piece) in pieces.chunks_mut(7).enumerate() {
            s.fill_response(&ss, i as u64 * 7, piece);
        }
        assert_eq!(pieces, answer);
    }
}

#[test]
fn records_that_are_no_transactions_are_read_and_skipped() {
    let (c, s, mut cs, mut ss) = tn3270e_pair(100, 800);
    // A BIND image before the answer, in the same read: the answer ends it.
    let mut answer = vec![0; 800];
    s.fill_response(&ss, 0, &mut answer);
    let mut bind = vec![DT_BIND_IMAGE, 0, 0, 0, 9, 0x31, 0x01];
    bind.extend_from_slice(&[IAC, EOR]);
    let first = c.response_left(&mut cs, 0, 0, &bind).unwrap();
    assert!(first > 0, "a BIND image is no answer");
    assert_eq!(c.response_left(&mut cs, 0, 0, &answer), Ok(0));
    // The terminal's RESPONSE record before a request: skipped.
    let mut req = vec![0; 100];
    c.fill_request(&cs, 0, &mut req);
    let response = [DT_RESPONSE, 0, RSF_POSITIVE, 0, 1, 0, IAC, EOR];
    let both = [response.as_slice(), &req].concat();
    assert_eq!(s.request_left(&mut ss, 0, 0, &both), Ok(0));
}

#[test]
fn what_a_terminal_owes_goes_ahead_of_its_next_request() {
    let (c, _, mut cs, _) = tn3270e_pair(100, 800);
    // An answer that asks for a definite response (seq 0x0102), with a
    // DO TIMING-MARK and a NOP before it.
    let mut answer = vec![IAC, DO, OPT_TIMING_MARK, IAC, 241];
    answer.extend_from_slice(&[DT_3270_DATA, 0, RSF_ALWAYS_RESPONSE, 1, 2]);
    answer.extend_from_slice(&ANSWER_HEAD);
    answer.extend_from_slice(&ANSWER_TAIL);
    assert_eq!(c.response_left(&mut cs, 0, 0, &answer), Ok(0));
    let owed = [
        IAC,
        WILL,
        OPT_TIMING_MARK,
        DT_RESPONSE,
        0,
        RSF_POSITIVE,
        1,
        2,
        RESPONSE_DEVICE_END,
        IAC,
        EOR,
    ];
    assert_eq!(c.owed_bytes(&cs), owed.len() as u64);
    let total = c.owed_bytes(&cs) + c.request_bytes();
    let mut out = vec![0; total as usize];
    // In pieces across the owed bytes' end, as a backend writes.
    for (i, piece) in out.chunks_mut(4).enumerate() {
        c.fill_request(&cs, i as u64 * 4, piece);
    }
    assert_eq!(&out[..owed.len()], &owed);
    assert_eq!(
        &out[owed.len()..owed.len() + 6],
        &[0, 0, 0, 0, 0, AID_ENTER]
    );
    c.request_sent(&mut cs);
    assert_eq!(c.owed_bytes(&cs), 0);
    // An answer that begins with no write command and asks for a
    // response on error: a negative response is owed, and it is no answer.
    let bad = [DT_3270_DATA, 0, RSF_ERROR_RESPONSE, 0, 7, 0x42, IAC, EOR];
    assert!(c.response_left(&mut cs, 0, 0, &bad).unwrap() > 0);
    let mut nak = vec![0; c.owed_bytes(&cs) as usize];
    c.fill_request(&cs, 0, &mut nak);
    assert_eq!(nak, [DT_RESPONSE, 0, RSF_NEGATIVE, 0, 7, 0, IAC, EOR]);
}

#[test]
fn sequence_numbers_never_hold_an_iac() {
    assert_eq!(next_seq(0), 1);
    assert_eq!(next_seq(0xFE), 0x100);
    // Past 0x7FFF it wraps; 0x7EFF holds an 0xFF byte.
    assert_eq!(next_seq(0x7EFE), 0x7F00);
    assert_eq!(next_seq(0x7FFE), 0);
    let mut s = 0;
    for _ in 0..70_000 {
        s = next_seq(s);
        assert!(!s.to_be_bytes().contains(&IAC), "{s:#x}");
    }
}

#[test]
fn the_terminal_refuses_tn3270e_with_off_and_names_its_type() {
    let c = client(100, 800);
    let mut cs = ClientState::default();
    let step = c.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E]).unwrap();
    assert_eq!(step, Setup::Send);
    assert_eq!(owed_client(&c, &cs), [IAC, WONT, OPT_TN3270E]);
    // Asked twice, answered once: answering an answer would loop.
    let again = c.setup_received(&mut cs, &[IAC, DO, OPT_TN3270E]).unwrap();
    assert_eq!(again, Setup::Read);
    c.setup_received(&mut cs, &[IAC, SB, OPT_TTYPE, TTYPE_SEND, IAC, SE])
        .unwrap();
    let mut want = vec![IAC, SB, OPT_TTYPE, TTYPE_IS];
    want.extend_from_slice(b"IBM-3278-2-E");
    want.extend_from_slice(&[IAC, SE]);
    assert_eq!(owed_client(&c, &cs), want);
    // Options a 3270 session does not use are refused (each its own, also
    // above 63); TIMING-MARK is answered each time.
    let other = [
        IAC,
        DO,
        31,
        IAC,
        WILL,
        1,
        IAC,
        DO,
        24 + 64,
        IAC,
        DO,
        6,
        IAC,
        DO,
        6,
    ];
    c.setup_received(&mut cs, &other).unwrap();
    assert_eq!(
        owed_client(&c, &cs),
        [
            IAC,
            WONT,
            31,
            IAC,
            DONT,
            1,
            IAC,
            WONT,
            24 + 64,
            IAC,
            WILL,
            6,
            IAC,
            WILL,
            6
        ]
    );
}

#[test]
fn a_terminal_that_accepts_tn3270e_unasked_is_told_dont() {
    let s = server_with(
        100,
        800,
        Tn3270Options {
            responder: ResponderTn3270e::Refuse,
            ..Tn3270Options::default()
        },
    );
    let mut ss = ServerState::default();
    s.setup_open(&mut ss);
    assert_eq!(owed_server(&s, &ss), [IAC, DO, OPT_TTYPE]);
    let step = s
        .setup_received(&mut ss, &[IAC, WILL, OPT_TN3270E])
        .unwrap();
    assert_eq!(step, Setup::Send);
    assert_eq!(owed_server(&s, &ss), [IAC, DONT, OPT_TN3270E]);
    // Once: a second offer is not answered again.
    let step = s
        .setup_received(&mut ss, &[IAC, WILL, OPT_TN3270E])
        .unwrap();
    assert_eq!(step, Setup::Read);
}

#[test]
fn records_are_the_notations_sizes_on_the_wire() {
    for (request, response) in [(100, 800), (8, 10), (1, 1), (4096, 20_000)] {
        let (c, s) = (client(request, response), server(request, response));
        let mut cs = ClientState::default();
        let mut req = vec![0; c.request_bytes() as usize];
        c.fill_request(&cs, 0, &mut req);
        assert_eq!(req.len() as u64, request.max(MIN_REQUEST_BYTES));
        assert_eq!(&req[req.len() - 2..], &[IAC, EOR]);
        assert!(!req[..req.len() - 2].contains(&IAC), "no IAC in the data");
        let mut ss = ServerState::default();
        assert_eq!(s.request_left(&mut ss, 0, 0, &req), Ok(0));
        let mut answer = vec![0; s.response_bytes(&ss) as usize];
        s.fill_response(&ss, 0, &mut answer);
        assert_eq!(answer.len() as u64, response.max(MIN_ANSWER_BYTES));
        assert_eq!(c.answer_bytes(), answer.len() as u64);
        assert_eq!(answer[0], CMD_ERASE_WRITE);
        assert_eq!(c.response_left(&mut cs, 0, 0, &answer), Ok(0));
        // Written in pieces, the same bytes.
        let mut pieces = vec![0; answer.len()];
        for (i, piece) in pieces.chunks_mut(7).enumerate() {
            s.fill_response(&ss, i as u64 * 7, piece);
        }
        assert_eq!(pieces, answer);
    }
}

#[test]
fn a_record_split_across_reads_ends_only_at_its_iac_eor() {
    let (c, s) = (client(100, 800), server(100, 800));
    let mut req = vec![0; 100];
    c.fill_request(&ClientState::default(), 0, &mut req);
    for split in [1, 2, 3, 99] {
        let mut ss = ServerState::default();
        let lefts: Vec<u64> = req
            .chunks(split)
            .map(|chunk| s.request_left(&mut ss, 0, 0, chunk).unwrap())
            .collect();
        assert_eq!(lefts.last(), Some(&0));
        assert!(lefts[..lefts.len() - 1].iter().all(|&l| l > 0), "{lefts:?}");
    }
    // The split between IAC and EOR is the hard one.
    let mut cs = ClientState::default();
    let mut answer = vec![0; 800];
    s.fill_response(&ServerState::default(), 0, &mut answer);
    assert_eq!(c.response_left(&mut cs, 0, 0, &answer[..799]), Ok(1));
    assert_eq!(c.response_left(&mut cs, 0, 0, &answer[799..]), Ok(0));
}

#[test]
fn doubled_iac_in_data_is_data_not_a_record_end() {
    let s = server(12, 800);
    // Enter, cursor, SBA, then data "FF EF" doubled as IAC IAC EOR-byte.
    let mut req = REQUEST_HEAD.to_vec();
    req.extend_from_slice(&[IAC, IAC, EOR, 0xC1]);
    let mut ss = ServerState::default();
    assert!(s.request_left(&mut ss, 0, 0, &req).unwrap() > 0, "not over");
    assert_eq!(s.request_left(&mut ss, 0, 0, &[IAC, EOR]), Ok(0));
    // The same in an answer, split between the two IACs.
    let c = client(100, 20);
    let mut cs = ClientState::default();
    let answer = [CMD_ERASE_WRITE, WCC, IAC];
    assert!(c.response_left(&mut cs, 0, 0, &answer).unwrap() > 0);
    assert!(c.response_left(&mut cs, 0, 0, &[IAC, EOR]).unwrap() > 0);
    assert_eq!(c.response_left(&mut cs, 0, 0, &[IAC, EOR]), Ok(0));
}

#[test]
fn a_second_record_is_not_part_of_the_first() {
    let (c, s) = (client(100, 800), server(100, 800));
    let mut req = vec![0; 100];
    c.fill_request(&ClientState::default(), 0, &mut req);
    // Two records in one read: records are not pipelined.
    let mut ss = ServerState::default();
    let two = [req.clone(), req.clone()].concat();
    let fault = s.request_left(&mut ss, 0, 0, &two).unwrap_err();
    assert!(
        fault.0.contains("bytes past the end of a request"),
        "{fault}"
    );
    // One after the other: two transactions.
    let mut ss = ServerState::default();
    assert_eq!(s.request_left(&mut ss, 0, 0, &req), Ok(0));
    assert_eq!(s.request_left(&mut ss, 0, 0, &req[..50]), Ok(50));
    assert_eq!(s.request_left(&mut ss, 0, 0, &req[50..]), Ok(0));
    let mut answer = vec![0; 800];
    s.fill_response(&ss, 0, &mut answer);
    let mut cs = ClientState::default();
    let fault = c
        .response_left(
            &mut cs,
            0,
            0,
            &[answer.clone(), vec![CMD_ERASE_WRITE]].concat(),
        )
        .unwrap_err();
    assert!(
        fault.0.contains("bytes past the end of a response"),
        "{fault}"
    );
}

#[test]
fn garbage_is_a_fault_not_a_panic() {
    let (c, s) = (client(100, 800), server(100, 800));
    let fault = s
        .request_left(&mut ServerState::default(), 0, 0, b"GET / HTTP/1.1\r\n")
        .unwrap_err();
    assert!(fault.0.contains("0x47"), "{fault}");
    let fault = c
        .response_left(&mut ClientState::default(), 0, 0, b"HTTP/1.1 200 OK")
        .unwrap_err();
    assert!(fault.0.contains("not a 3270 record"), "{fault}");
    let mut cs = ClientState::default();
    let fault = c
        .setup_received(&mut cs, b"220 smtp ready\r\n")
        .unwrap_err();
    assert!(fault.0.contains("TN3270 server"), "{fault}");
    assert_eq!(c.setup_failure(&cs), "not_telnet");
    // A TN3270E header with a data type RFC 2355 does not define.
    let (e, _, mut es, _) = tn3270e_pair(100, 800);
    let fault = e.response_left(&mut es, 0, 0, &[0x47, 0x45]).unwrap_err();
    assert!(fault.0.contains("data type 0x47"), "{fault}");
    let mut ss = ServerState::default();
    s.setup_open(&mut ss);
    let fault = s.setup_received(&mut ss, b"hello").unwrap_err();
    assert!(fault.0.contains("before the TN3270 negotiation"), "{fault}");
    // A terminal type that is no 3270.
    let mut ss = ServerState::default();
    s.setup_open(&mut ss);
    s.setup_received(&mut ss, &[IAC, WONT, OPT_TN3270E])
        .unwrap();
    s.setup_received(&mut ss, &[IAC, WILL, OPT_TTYPE]).unwrap();
    let mut vt = vec![IAC, SB, OPT_TTYPE, TTYPE_IS];
    vt.extend_from_slice(b"VT100");
    vt.extend_from_slice(&[IAC, SE]);
    let fault = s.setup_received(&mut ss, &vt).unwrap_err();
    assert!(fault.0.contains("\"VT100\""), "{fault}");
    // A stream that never ends a record is refused, not buffered forever.
    let mut cs = ClientState::default();
    let endless = vec![CMD_ERASE_WRITE; 70 * 1024];
    assert!(c.response_left(&mut cs, 0, 0, &endless).is_err());
    // Pseudo-random bytes: each call returns, whatever it says.
    let auto = client_with(100, 800, Tn3270Options::default());
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..300 {
        let bytes: Vec<u8> = (0..64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for c in [&c, &auto] {
            let _ = c.setup_received(&mut ClientState::default(), &bytes);
            let _ = c.response_left(&mut ClientState::default(), 0, 0, &bytes);
        }
        let _ = e.response_left(&mut ClientState::default(), 0, 0, &bytes);
        let _ = s.request_left(&mut ServerState::default(), 0, 0, &bytes);
        let mut ss = ServerState::default();
        s.setup_open(&mut ss);
        let _ = s.setup_received(&mut ss, &bytes);
        // After a valid opening too.
        let mut ss = ServerState::default();
        s.setup_open(&mut ss);
        let _ = s.setup_received(&mut ss, &[IAC, WILL, OPT_TN3270E]);
        let _ = s.setup_received(&mut ss, &bytes);
    }
}

#[test]
fn a_logged_on_connection_keeps_no_logon_buffers() {
    for (c, s, mut cs, mut ss) in [tn3270e_pair(100, 800), {
        let (c, s) = (client(100, 800), server(100, 800));
        let l = negotiate_with(&c, &s, 1000).unwrap();
        (c, s, l.cs, l.ss)
    }] {
        let mut answer = vec![0; s.response_bytes(&ss) as usize];
        s.fill_response(&ss, 0, &mut answer);
        assert_eq!(c.response_left(&mut cs, 0, 0, &answer), Ok(0));
        assert_eq!(
            (cs.session.reply.capacity(), cs.telnet.sub.capacity()),
            (0, 0)
        );
        let mut req = vec![0; c.request_bytes() as usize];
        c.fill_request(&cs, 0, &mut req);
        assert_eq!(s.request_left(&mut ss, 0, 0, &req), Ok(0));
        assert_eq!((ss.reply.capacity(), ss.telnet.sub.capacity()), (0, 0));
    }
    // A terminal's state stays small (it is kept per connection).
    assert!(
        std::mem::size_of::<ClientState>() <= 256,
        "{}",
        std::mem::size_of::<ClientState>()
    );
}
