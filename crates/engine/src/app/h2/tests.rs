//! The HTTP/2 codec and handler against each other on scripted chunks:
//! sizes, a connection's opening and its later requests, frames split at
//! every boundary, a foreign server's frames (Huffman, dynamic table,
//! CONTINUATION, PING, GOAWAY, RST_STREAM) and faults.

use stackbench_model::{CrrClose, Kind};

use super::client::{Client, ClientState};
use super::server::{Server, ServerState};
use super::*;
use crate::app::{ClassShape, Codec, Handler};

fn shape(request: u64, response: u64) -> ClassShape {
    ClassShape {
        h2: Default::default(),
        kind: Kind::Rr,
        request_bytes: request,
        response_bytes: response,
        crr_close: CrrClose::Server,
        target: None,
        tn3270: Default::default(),
        amqp: Default::default(),
    }
}

/// The bytes of the next request on a connection in `state` (owed bytes
/// first), written in pieces of `piece` bytes as a backend would.
fn request_of(client: &Client, state: &ClientState, piece: usize) -> Vec<u8> {
    let len = client.request_len(state) as usize;
    let mut out = vec![0xEE; len];
    let mut at = 0;
    while at < len {
        let end = (at + piece).min(len);
        client.fill_request(state, at as u64, &mut out[at..end]);
        at = end;
    }
    out
}

/// The server's answer to `request` fed in chunks of `chunk`.
fn serve(server: &Server, state: &mut ServerState, request: &[u8], chunk: usize) -> Vec<u8> {
    let mut left = u64::MAX;
    for c in request.chunks(chunk) {
        left = server.request_left(state, 0, c.len() as u64, c).unwrap();
    }
    assert_eq!(left, 0);
    let len = server.response_bytes(state) as usize;
    let mut out = vec![0xEE; len];
    for at in (0..len).step_by(chunk.max(1)) {
        let end = (at + chunk).min(len);
        server.fill_response(state, at as u64, &mut out[at..end]);
    }
    out
}

/// Feeds `bytes` to the client in chunks of `chunk`: what was still due
/// after each.
fn receive(client: &Client, state: &mut ClientState, bytes: &[u8], chunk: usize) -> Vec<u64> {
    bytes
        .chunks(chunk)
        .map(|c| client.response_left(state, 0, c.len() as u64, c).unwrap())
        .collect()
}

#[test]
fn messages_are_the_notations_sizes_in_frames() {
    for (request, response) in [
        (100, 4096),
        (100, 100),
        (300, 16_384 + 40),
        (4096, 65_536),
        (20_000, 1),
        (1, 1 << 20),
    ] {
        let client = Client::of(&shape(request, response));
        let server = Server::of(request, response, &Default::default());
        let mut cs = ClientState::default();
        let mut ss = ServerState::default();
        for round in 0..3 {
            let owed = client.owed_bytes(&cs);
            let wire = request_of(&client, &cs, 1000);
            let got = wire.len() as u64 - owed;
            // Exact, or one byte over where no exact length exists.
            assert!(
                got == request || got == request + 1 || request < 40,
                "{request}: {got}"
            );
            client.request_sent(&mut cs);
            let answer = serve(&server, &mut ss, &wire, 777);
            let left = receive(&client, &mut cs, &answer, 1500);
            assert_eq!(
                *left.last().unwrap(),
                0,
                "{request}/{response} round {round}"
            );
            assert!(left[..left.len() - 1].iter().all(|&l| l > 0));
            assert_eq!(client.status(&cs), 200);
            let body = body_for(response);
            let exact = answer_len(body);
            assert!(exact == response || exact <= response + 10 || response < 14);
            // The first answer carries the server's SETTINGS and ACKs; a
            // later one a WINDOW_UPDATE for a POST's body, or nothing.
            let extra = answer.len() as u64 - exact;
            match (round, request > crate::app::http1::MAX_GET_BYTES) {
                (0, _) => assert!(extra > 9),
                (_, true) => assert_eq!(extra, 13),
                (_, false) => assert_eq!(extra, 0),
            }
        }
        assert!(!client.server_closes(&cs));
    }
}

#[test]
fn a_connection_opens_with_its_preface_and_returns_the_window() {
    let client = Client::of(&shape(100, 4096));
    let cs = ClientState::default();
    let wire = request_of(&client, &cs, 7);
    assert!(wire.starts_with(PREFACE));
    let mut cs = cs;
    client.request_sent(&mut cs);
    let server = Server::of(100, 4096, &Default::default());
    let mut ss = ServerState::default();
    let answer = serve(&server, &mut ss, &wire, 1 << 20);
    receive(&client, &mut cs, &answer, 1 << 20);
    // The second request: SETTINGS ACK and the connection's window first,
    // on stream 3.
    let second = request_of(&client, &cs, 1 << 20);
    let mut frames = Vec::new();
    Reader::default()
        .feed(&second, |e| {
            if let Event::Frame(h, p) = e {
                frames.push((h.kind, h.flags, h.stream, p.to_vec()));
            }
            Ok(())
        })
        .unwrap();
    let kinds: Vec<_> = frames.iter().map(|f| (f.0, f.1, f.2)).collect();
    assert_eq!(
        kinds,
        [
            (SETTINGS, ACK, 0),
            (WINDOW_UPDATE, 0, 0),
            (HEADERS, END_HEADERS | END_STREAM, 3)
        ]
    );
    let inc = u32::from_be_bytes(frames[1].3[..4].try_into().unwrap());
    assert_eq!(u64::from(inc), body_for(4096));
}

#[test]
fn frames_split_at_every_byte_still_complete_one_response() {
    let client = Client::of(&shape(100, 20_000));
    let server = Server::of(100, 20_000, &Default::default());
    for chunk in [1, 2, 9, 10, 100] {
        let mut cs = ClientState::default();
        let mut ss = ServerState::default();
        let wire = request_of(&client, &cs, chunk);
        client.request_sent(&mut cs);
        let answer = serve(&server, &mut ss, &wire, chunk);
        let left = receive(&client, &mut cs, &answer, chunk);
        assert_eq!(*left.last().unwrap(), 0);
        assert_eq!(left.iter().filter(|&&l| l == 0).count(), 1, "{chunk}");
    }
}

/// A server's response as nginx writes one: SETTINGS, WINDOW_UPDATE,
/// HEADERS coded with Huffman and the dynamic table, split over a
/// CONTINUATION, a PING, DATA with padding.
#[test]
fn a_foreign_servers_frames_are_read_whatever_their_coding() {
    let client = Client::of(&shape(100, 4096));
    let mut cs = ClientState::default();
    client.request_sent(&mut cs);
    let mut wire = Vec::new();
    settings(&mut wire, &[(SETTINGS_MAX_CONCURRENT_STREAMS, 128)]);
    window_update(&mut wire, 0, 1 << 20);
    // ":status 404" and the rest Huffman-coded, added to the dynamic
    // table, as a server's encoder may.
    let mut encoder = httlib_hpack::Encoder::default();
    let flags = httlib_hpack::Encoder::HUFFMAN_VALUE
        | httlib_hpack::Encoder::WITH_INDEXING
        | httlib_hpack::Encoder::BEST_FORMAT;
    let mut block = Vec::new();
    for (name, value) in [
        (&b":status"[..], &b"404"[..]),
        (b"server", b"nginx/1.22.1"),
        (b"x-custom", b"y"),
    ] {
        encoder
            .encode((name.to_vec(), value.to_vec(), flags), &mut block)
            .unwrap();
    }
    let (a, b) = block.split_at(3);
    frame(&mut wire, HEADERS, 0, 1, a);
    frame(&mut wire, CONTINUATION, END_HEADERS, 1, b);
    frame(&mut wire, PING, 0, 0, &[1, 2, 3, 4, 5, 6, 7, 8]);
    let mut padded = vec![4u8];
    padded.extend_from_slice(&[0; 100]);
    padded.extend_from_slice(&[0; 4]);
    frame(&mut wire, DATA, PADDED | END_STREAM, 1, &padded);
    let left = receive(&client, &mut cs, &wire, 13);
    assert_eq!(*left.last().unwrap(), 0);
    assert_eq!(client.status(&cs), 404);
    // Owed: the SETTINGS ACK, the PING's ACK with its payload, the window.
    let next = request_of(&client, &cs, 1 << 16);
    let mut kinds = Vec::new();
    Reader::default()
        .feed(&next, |e| {
            if let Event::Frame(h, p) = e {
                kinds.push((h.kind, h.flags, p.len()));
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(
        &kinds[..3],
        [(SETTINGS, ACK, 0), (PING, ACK, 8), (WINDOW_UPDATE, 0, 4)]
    );
}

#[test]
fn goaway_without_error_reconnects_and_with_one_is_a_fault_naming_it() {
    let client = Client::of(&shape(100, 100));
    let mut cs = ClientState::default();
    client.request_sent(&mut cs);
    let mut wire = Vec::new();
    settings(&mut wire, &[]);
    frame(&mut wire, GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]);
    let block = block(&[index::STATUS_200], &[]);
    frame(&mut wire, HEADERS, END_HEADERS | END_STREAM, 1, &block);
    receive(&client, &mut cs, &wire, 1 << 16);
    assert!(client.server_closes(&cs));

    let mut cs = ClientState::default();
    client.request_sent(&mut cs);
    let mut wire = Vec::new();
    settings(&mut wire, &[]);
    frame(
        &mut wire,
        GOAWAY,
        0,
        0,
        &[0, 0, 0, 0, 0, 0, 0, 11, b'c', b'a', b'l', b'm'],
    );
    let e = client.response_left(&mut cs, 0, 0, &wire).unwrap_err();
    assert!(e.0.contains("GOAWAY ENHANCE_YOUR_CALM (code 11"), "{e}");

    let mut cs = ClientState::default();
    client.request_sent(&mut cs);
    let mut wire = Vec::new();
    settings(&mut wire, &[]);
    frame(&mut wire, RST_STREAM, 0, 1, &[0, 0, 0, 7]);
    let e = client.response_left(&mut cs, 0, 0, &wire).unwrap_err();
    assert!(e.0.contains("RST_STREAM REFUSED_STREAM (code 7)"), "{e}");
}

#[test]
fn an_http1_answer_is_a_fault_not_a_hang() {
    let client = Client::of(&shape(100, 100));
    let mut cs = ClientState::default();
    client.request_sent(&mut cs);
    let e = client
        .response_left(&mut cs, 0, 0, b"HTTP/1.1 400 Bad Request\r\n\r\n")
        .unwrap_err();
    assert!(
        e.0.contains("in HTTP/1.1 (\"HTTP/1.1 400 Bad Request\")"),
        "{e}"
    );
    let mut cs = ClientState::default();
    let mut wire = Vec::new();
    frame(&mut wire, PING, 0, 0, &[0; 8]);
    let e = client.response_left(&mut cs, 0, 0, &wire).unwrap_err();
    assert!(e.0.contains("rather than SETTINGS"), "{e}");
    let server = Server::of(100, 100, &Default::default());
    let e = server
        .request_left(&mut ServerState::default(), 0, 0, b"GET / HTTP/1.1\r\n\r\n")
        .unwrap_err();
    assert!(e.0.contains("no connection preface"), "{e}");
}

/// h2load's `-m 3`: three streams in one write are answered in one.
#[test]
fn the_responder_answers_every_stream_a_read_completes() {
    let server = Server::of(100, 1000, &Default::default());
    let mut wire = PREFACE.to_vec();
    settings(&mut wire, &[]);
    for stream in [1, 3, 5] {
        let path = format!("/{}", 10 * stream);
        let block = block(&[index::METHOD_GET], &[(index::PATH, path.as_bytes())]);
        frame(&mut wire, HEADERS, END_HEADERS | END_STREAM, stream, &block);
    }
    let mut ss = ServerState::default();
    let answer = serve(&server, &mut ss, &wire, 1 << 16);
    let mut data = std::collections::BTreeMap::new();
    Reader::default()
        .feed(&answer, |e| {
            if let Event::Data { stream, n, .. } = e {
                *data.entry(stream).or_insert(0) += n;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(
        data.into_iter().collect::<Vec<_>>(),
        [(1, 10), (3, 30), (5, 50)]
    );
}

#[test]
fn answer_sizes_step_where_frames_and_digits_do() {
    assert_eq!(answer_len(0), 14);
    assert_eq!(answer_len(1), 9 + 5 + 9 + 1);
    assert_eq!(body_for(answer_len(16_384)), 16_384);
    assert_eq!(answer_len(16_385), 9 + 4 + 5 + 18 + 16_385);
    for z in [14u64, 100, 4096, 16_400, 1 << 20] {
        let b = body_for(z);
        assert!(answer_len(b) >= z && (b == 0 || answer_len(b - 1) < z));
    }
    // The formula is what the encoder writes.
    for body in [0u64, 9, 10, 4096, 1 << 30] {
        let length = body.to_string();
        let block = block(
            &[index::STATUS_200],
            &[(index::CONTENT_LENGTH, length.as_bytes())],
        );
        assert_eq!(answer_head_len(body), 9 + block.len() as u64);
    }
}

/// The frames of `bytes` after the preface: (type, stream, payload).
fn frames_of(bytes: &[u8], max_frame: u32) -> Vec<(u8, u32, Vec<u8>)> {
    let mut frames = Vec::new();
    let mut reader = Reader {
        max_frame,
        ..Reader::default()
    };
    reader
        .feed(bytes, |e| {
            if let Event::Frame(h, p) = e {
                frames.push((h.kind, h.stream, p.to_vec()));
            }
            Ok(())
        })
        .unwrap();
    frames
}

#[test]
fn the_client_announces_its_window_and_frame_settings() {
    let h2 = stackbench_model::H2Params {
        window_bytes: 100_000,
        connection_window_bytes: 1 << 20,
        max_frame_bytes: 1 << 20,
    };
    let opening = client::opening(&h2);
    let frames = frames_of(&opening[PREFACE.len()..], MAX_FRAME);
    assert_eq!(frames[0].0, SETTINGS);
    let pairs: Vec<(u16, u32)> = frames[0]
        .2
        .chunks(6)
        .map(|c| {
            (
                u16::from_be_bytes([c[0], c[1]]),
                u32::from_be_bytes([c[2], c[3], c[4], c[5]]),
            )
        })
        .collect();
    assert_eq!(
        pairs,
        [
            (SETTINGS_ENABLE_PUSH, 0),
            (SETTINGS_INITIAL_WINDOW_SIZE, 100_000),
            (SETTINGS_MAX_FRAME_SIZE, 1 << 20)
        ]
    );
    assert_eq!(frames[1].0, WINDOW_UPDATE);
    let inc = u32::from_be_bytes(frames[1].2[..4].try_into().unwrap());
    assert_eq!(u64::from(inc), (1 << 20) - INITIAL_WINDOW);
    // The defaults: no frame size (the initial one), h2load's windows.
    let plain = client::opening(&Default::default());
    let frames = frames_of(&plain[PREFACE.len()..], MAX_FRAME);
    assert_eq!(frames[0].2.len(), 12);
    let inc = u32::from_be_bytes(frames[1].2[..4].try_into().unwrap());
    assert_eq!(u64::from(inc), WINDOW - INITIAL_WINDOW);
    // A connection window of the RFC's initial one needs no WINDOW_UPDATE.
    let least = client::opening(&stackbench_model::H2Params {
        connection_window_bytes: INITIAL_WINDOW as u32,
        ..Default::default()
    });
    assert_eq!(frames_of(&least[PREFACE.len()..], MAX_FRAME).len(), 1);
}

#[test]
fn the_client_accepts_frames_up_to_its_max_frame_setting() {
    let big = |max_frame_bytes| {
        let mut s = shape(100, 100);
        s.h2.max_frame_bytes = max_frame_bytes;
        let client = Client::of(&s);
        let mut cs = ClientState::default();
        client.request_sent(&mut cs);
        let mut wire = Vec::new();
        settings(&mut wire, &[]);
        frame(&mut wire, PING, 0, 0, &[0; 8]);
        // A 20,000-byte frame of an unknown type: skipped when admitted.
        frame(&mut wire, 0xEE, 0, 0, &[0; 20_000]);
        client.response_left(&mut cs, 0, wire.len() as u64, &wire)
    };
    assert!(big(MAX_FRAME).unwrap_err().0.contains("20,000 bytes"));
    assert!(big(32_768).is_ok());
}

#[test]
fn the_responder_keeps_to_the_window_the_client_announced() {
    // A stream window of 65,535 announced: a 65,535-byte body is sent, a
    // larger one refused by the responder.
    for (body, ok) in [(60_000, true), (70_000, false)] {
        let response = answer_len(body);
        let mut s = shape(100, response);
        s.h2.window_bytes = INITIAL_WINDOW as u32;
        let client = Client::of(&s);
        let server = Server::of(100, response, &Default::default());
        let cs = ClientState::default();
        let wire = request_of(&client, &cs, 1 << 20);
        let mut ss = ServerState::default();
        let mut left = 0;
        let mut fault = None;
        for c in wire.chunks(1000) {
            match server.request_left(&mut ss, 0, c.len() as u64, c) {
                Ok(l) => left = l,
                Err(f) => fault = Some(f),
            }
        }
        assert_eq!(fault.is_none(), ok, "{body}: {fault:?} {left}");
    }
}

#[test]
fn the_row_refuses_a_response_beyond_the_clients_windows() {
    let row = crate::app::row(stackbench_model::AppProtocol::H2);
    let h2 = stackbench_model::H2Params {
        window_bytes: 1 << 20,
        connection_window_bytes: 1 << 21,
        ..Default::default()
    };
    assert!(row
        .refuses_sizes("RR(100B/1MB)", 100, 1 << 20, &h2)
        .is_none());
    let why = row
        .refuses_sizes("RR(100B/2MB)", 100, (1 << 20) + 1, &h2)
        .unwrap();
    assert!(
        why.contains("1,048,576") && why.contains("--h2-window"),
        "{why}"
    );
    let h2 = stackbench_model::H2Params {
        connection_window_bytes: 100_000,
        ..h2
    };
    assert!(row.refuses_sizes("x", 100, 100_001, &h2).is_some());
    // The defaults admit h2load's 2^30 − 1.
    assert!(row
        .refuses_sizes("x", 100, WINDOW, &Default::default())
        .is_none());
}
