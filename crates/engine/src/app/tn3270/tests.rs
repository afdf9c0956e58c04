//! The TN3270 codec and handler on scripted chunks: the negotiation split
//! at every byte, records of the notation's sizes, `IAC IAC` inside data, a
//! record split across reads, a second record in the same read, and
//! garbage refused as a fault.

use stackbench_model::{CrrClose, Kind};

use super::*;

fn client(request: u64, response: u64) -> Client {
    Client::of(&ClassShape {
        kind: Kind::Rr,
        request_bytes: request,
        response_bytes: response,
        crr_close: CrrClose::Client,
        amqp: Default::default(),
    })
}

fn server(request: u64, response: u64) -> Server {
    Server {
        request_bytes: request,
        response_bytes: response,
    }
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

/// Runs the whole negotiation, each side's bytes handed to the other in
/// chunks of `split` (each side sends what a chunk made it owe, as the
/// machines do); the number of server turns, and both states after.
fn negotiate(split: usize) -> (usize, u64, u64) {
    let (c, s) = (client(100, 800), server(100, 800));
    let (mut cs, mut ss) = (ClientState::default(), ServerState::default());
    assert_eq!(
        c.setup_open(&mut cs),
        Setup::Read,
        "the server speaks first"
    );
    assert_eq!(s.setup_open(&mut ss), Setup::Send);
    let mut from_server = owed_server(&s, &ss);
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
            match c.setup_received(&mut cs, chunk).unwrap() {
                Setup::Read => {}
                Setup::Send => from_client.extend(owed_client(&c, &cs)),
                Setup::SendLast => {
                    from_client.extend(owed_client(&c, &cs));
                    client_done = true;
                }
                Setup::Done => client_done = true,
            }
        }
        if client_done {
            assert!(server_done, "the client ends with the server's screen");
            assert!(from_client.is_empty());
            assert_eq!((ss.step, ss.modes), (Negotiation::Done, MODES_AGREED));
            return (trips, bytes_in, bytes_out);
        }
        assert!(!from_client.is_empty(), "trip {trips}: the client answers");
        from_server.clear();
        bytes_in += from_client.len() as u64;
        for chunk in from_client.chunks(split) {
            match s.setup_received(&mut ss, chunk).unwrap() {
                Setup::Read => {}
                Setup::Send => from_server.extend(owed_server(&s, &ss)),
                Setup::SendLast => {
                    from_server.extend(owed_server(&s, &ss));
                    server_done = true;
                }
                Setup::Done => unreachable!("the server ends by sending its screen"),
            }
        }
    }
}

#[test]
fn the_negotiation_completes_whatever_its_reads() {
    for split in [1, 2, 3, 5, 7, 1000] {
        let (trips, bytes_in, bytes_out) = negotiate(split);
        // TN3270E, TERMINAL-TYPE, SEND/IS, EOR and BINARY, then the screen.
        assert_eq!(trips, 5, "split {split}");
        assert_eq!((bytes_in, bytes_out), (LOGON_BYTES_IN, LOGON_BYTES_OUT));
    }
}

#[test]
fn the_terminal_refuses_tn3270e_and_names_its_type() {
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
    // above 63).
    let other = [IAC, DO, 31, IAC, WILL, 1, IAC, DO, 24 + 64];
    c.setup_received(&mut cs, &other).unwrap();
    assert_eq!(
        owed_client(&c, &cs),
        [IAC, WONT, 31, IAC, DONT, 1, IAC, WONT, 24 + 64]
    );
}

#[test]
fn a_terminal_that_accepts_tn3270e_is_told_dont_and_goes_on() {
    let s = server(100, 800);
    let mut ss = ServerState::default();
    s.setup_open(&mut ss);
    assert_eq!(owed_server(&s, &ss), [IAC, DO, OPT_TN3270E]);
    let step = s
        .setup_received(&mut ss, &[IAC, WILL, OPT_TN3270E])
        .unwrap();
    assert_eq!(step, Setup::Send);
    assert_eq!(
        owed_server(&s, &ss),
        [IAC, DONT, OPT_TN3270E, IAC, DO, OPT_TTYPE]
    );
}

#[test]
fn records_are_the_notations_sizes_on_the_wire() {
    for (request, response) in [(100, 800), (8, 10), (1, 1), (4096, 20_000)] {
        let (c, s) = (client(request, response), server(request, response));
        let mut req = vec![0; c.request_bytes() as usize];
        c.fill_request(0, &mut req);
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
        let mut cs = ClientState::default();
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
    c.fill_request(0, &mut req);
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
    c.fill_request(0, &mut req);
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
    let fault = c
        .setup_received(&mut ClientState::default(), b"220 smtp ready\r\n")
        .unwrap_err();
    assert!(fault.0.contains("TN3270 server"), "{fault}");
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
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..200 {
        let bytes: Vec<u8> = (0..64)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let _ = c.setup_received(&mut ClientState::default(), &bytes);
        let _ = c.response_left(&mut ClientState::default(), 0, 0, &bytes);
        let _ = s.request_left(&mut ServerState::default(), 0, 0, &bytes);
        let mut ss = ServerState::default();
        s.setup_open(&mut ss);
        let _ = s.setup_received(&mut ss, &bytes);
    }
}

#[test]
fn a_logged_on_connection_keeps_no_logon_buffers() {
    let (c, s) = (client(100, 800), server(100, 800));
    let mut cs = ClientState::default();
    c.setup_received(&mut cs, &[IAC, SB, OPT_TTYPE, TTYPE_SEND, IAC, SE])
        .unwrap();
    assert!(cs.reply.capacity() > 0 && cs.telnet.sub.capacity() > 0);
    let mut answer = vec![0; 800];
    s.fill_response(&ServerState::default(), 0, &mut answer);
    assert_eq!(c.response_left(&mut cs, 0, 0, &answer), Ok(0));
    assert_eq!((cs.reply.capacity(), cs.telnet.sub.capacity()), (0, 0));
    let mut ss = ServerState::default();
    s.setup_open(&mut ss);
    assert!(ss.reply.capacity() > 0);
    let mut req = vec![0; 100];
    c.fill_request(0, &mut req);
    assert_eq!(s.request_left(&mut ss, 0, 0, &req), Ok(0));
    assert_eq!(ss.reply.capacity(), 0);
}
