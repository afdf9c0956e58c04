//! Both halves against each other in memory, byte streams split every way
//! a socket may split them, and each fault the module names.

use fe2o3_amqp_types::definitions::{AmqpError, Error as AmqpErrorBody, Handle};
use fe2o3_amqp_types::performatives::{Close, Detach};
use fe2o3_amqp_types::sasl::{SaslCode, SaslOutcome};
use stackbench_model::{AmqpParams, AmqpPattern, CrrClose, Kind};

use super::client::{Client, ClientState};
use super::frames::{self, In, Reader};
use super::server::{Server, ServerState};
use super::*;
use crate::app::{ClassShape, Codec, Handler, Setup};

fn client(request: u64, response: u64, params: AmqpParams) -> Client {
    Client::of(&ClassShape {
        h2: Default::default(),
        kind: Kind::Rr,
        request_bytes: request,
        response_bytes: response,
        crr_close: CrrClose::Client,
        target: None,
        tn3270: Default::default(),
        amqp: params,
    })
}

/// Bytes a half's `fill` writes for a length, in pieces of `split`.
fn bytes(len: u64, split: usize, fill: impl Fn(u64, &mut [u8])) -> Vec<u8> {
    let mut out = vec![0xAA; len as usize];
    for (i, piece) in out.chunks_mut(split).enumerate() {
        fill((i * split) as u64, piece);
    }
    out
}

/// Hands `data` over in chunks of `split`; the step after the last.
fn feed<T>(
    data: &[u8],
    split: usize,
    mut on: impl FnMut(&[u8]) -> Result<T, Fault>,
) -> Result<Option<T>, Fault> {
    let mut last = None;
    for piece in data.chunks(split) {
        last = Some(on(piece)?);
    }
    Ok(last)
}

/// Hands `data` to a half's setup in chunks of `split`, collecting what it
/// sends after each (as the machines send at once); its last step.
fn setup_chunks<St>(
    data: &[u8],
    split: usize,
    state: &mut St,
    received: impl Fn(&mut St, &[u8]) -> Result<Setup, Fault>,
    sent: impl Fn(&St) -> Vec<u8>,
) -> Result<(Setup, Vec<u8>), Fault> {
    let (mut step, mut out) = (Setup::Read, Vec::new());
    for piece in data.chunks(split) {
        step = received(state, piece)?;
        if matches!(step, Setup::Send | Setup::SendLast) {
            out.extend(sent(state));
        }
    }
    Ok((step, out))
}

/// Runs both setups to their end, chunks split at `split`; the client's
/// and server's states and the round trips taken.
fn set_up(c: &Client, s: &Server, split: usize) -> (ClientState, ServerState, u32, [usize; 2]) {
    let (mut cs, mut ss) = (ClientState::default(), ServerState::default());
    assert_eq!(s.setup_open(&mut ss), Setup::Read);
    assert_eq!(c.setup_open(&mut cs), Setup::Send);
    let mut out = bytes(c.setup_bytes(&cs), split, |o, b| c.fill_setup(&cs, o, b));
    let (mut trips, mut moved) = (0, [0, 0]);
    loop {
        moved[0] += out.len();
        let (server_step, answer) = setup_chunks(
            &out,
            split,
            &mut ss,
            |st, piece| s.setup_received(st, piece),
            |st| bytes(s.setup_bytes(st), split, |o, b| s.fill_setup(st, o, b)),
        )
        .unwrap();
        trips += 1;
        moved[1] += answer.len();
        let (step, next) = setup_chunks(
            &answer,
            split,
            &mut cs,
            |st, piece| c.setup_received(st, piece),
            |st| bytes(c.setup_bytes(st), split, |o, b| c.fill_setup(st, o, b)),
        )
        .unwrap();
        if step == Setup::Done {
            assert_eq!(server_step, Setup::SendLast);
            assert!(next.is_empty());
            return (cs, ss, trips, moved);
        }
        assert!(!next.is_empty(), "the client sends, then waits");
        out = next;
    }
}

/// One transaction: the request's bytes, the server's answer, the
/// client's completion; the bytes each way.
fn transact(
    c: &Client,
    s: &Server,
    cs: &mut ClientState,
    ss: &mut ServerState,
    split: usize,
) -> (u64, u64) {
    let len = c.request_len(cs);
    let request = bytes(len, split, |o, b| c.fill_request(cs, o, b));
    let left = feed(&request, split, |piece| {
        s.request_left(ss, 0, piece.len() as u64, piece)
    })
    .unwrap()
    .unwrap();
    assert_eq!(left, 0, "the request is complete at its last byte");
    let answer_len = s.response_bytes(ss);
    let answer = bytes(answer_len, split, |o, b| s.fill_response(ss, o, b));
    let left = feed(&answer, split, |piece| {
        c.response_left(cs, 0, piece.len() as u64, piece)
    })
    .unwrap()
    .unwrap();
    assert_eq!(left, 0, "the reply is complete at its last byte");
    (len, answer_len)
}

#[test]
fn setup_takes_two_round_trips_however_the_bytes_are_split() {
    for split in [1, 3, 7, 64, 1 << 20] {
        let c = client(1024, 1024, AmqpParams::default());
        let s = Server::of(1024, 1024, &Default::default());
        let (cs, _, trips, moved) = set_up(&c, &s, split);
        assert_eq!(trips, 2, "split {split}");
        // docs/transports.md: what a logon moves, less the connection's
        // name in the client's container id, link names and reply address
        // (4 times; the request queue is the shared one) and in the
        // broker's link names and reply address (3); each attach's termini
        // ask to be durable (the broker's attaches echo them).
        let name = cs.name().len();
        assert_eq!([moved[0] - 4 * name, moved[1] - 3 * name], [281, 321]);
    }
}

#[test]
fn request_reply_moves_the_bodies_and_a_bounded_overhead() {
    for persistent in [false, true] {
        let params = AmqpParams {
            persistent,
            credit: 4,
            ..AmqpParams::default()
        };
        let c = client(1000, 3000, params);
        let s = Server::of(1000, 3000, &Default::default());
        let (mut cs, mut ss, _, _) = set_up(&c, &s, 1 << 20);
        for i in 0..20 {
            let split = [1 << 20, 5, 1000][i % 3];
            let (sent, got) = transact(&c, &s, &mut cs, &mut ss, split);
            assert!((1000..1000 + 400).contains(&sent), "{sent} bytes sent");
            assert!((3000..3000 + 400).contains(&got), "{got} bytes got");
        }
    }
}

#[test]
fn put_get_gets_the_message_back() {
    let params = AmqpParams {
        pattern: AmqpPattern::PutGet,
        body: AmqpBody::Text,
        ..AmqpParams::default()
    };
    // z is taken as y: the server echoes the 500-byte message.
    let c = client(500, 9, params);
    let s = Server::of(500, 9, &Default::default());
    let (mut cs, mut ss, _, _) = set_up(&c, &s, 17);
    for _ in 0..3 {
        let (sent, got) = transact(&c, &s, &mut cs, &mut ss, 33);
        assert!((500..700).contains(&got), "{got}");
        assert!((500..700).contains(&sent), "{sent}");
    }
    // The body is the request's kind: text.
    let answer = bytes(s.response_bytes(&ss), 1 << 20, |o, b| {
        s.fill_response(&ss, o, b)
    });
    assert!(answer.ends_with(&TEXT[..0]));
    let tail = &answer[answer.len() - 20..];
    assert!(tail.iter().all(|b| b.is_ascii()), "{tail:?}");
}

#[test]
fn bodies_are_the_same_bytes_however_they_are_written() {
    for kind in [AmqpBody::Zeros, AmqpBody::Text, AmqpBody::Random] {
        let whole = bytes(5000, 5000, |o, b| fill_body(kind, o, b));
        for split in [1, 7, 4096] {
            assert_eq!(bytes(5000, split, |o, b| fill_body(kind, o, b)), whole);
        }
    }
    let random = bytes(4096, 4096, |o, b| fill_body(AmqpBody::Random, o, b));
    let zeros = random.iter().filter(|b| **b == 0).count();
    assert!(zeros < 64, "{zeros} zero bytes of 4096 random ones");
}

#[test]
fn values_and_frames_are_read_across_any_split() {
    let mut out = Vec::new();
    frames::push_empty(&mut out);
    let flow_at = out.len();
    let flow = fe2o3_amqp_types::performatives::Flow {
        next_incoming_id: Some(1),
        incoming_window: 10,
        next_outgoing_id: 2,
        outgoing_window: 10,
        handle: Some(Handle(1)),
        delivery_count: Some(0),
        link_credit: Some(5),
        available: None,
        drain: false,
        echo: false,
        properties: None,
    };
    frames::push(&mut out, frames::TYPE_AMQP, 0, &flow).unwrap();
    assert_eq!(
        frames::value_len(&out[flow_at + 8..]),
        Some(out.len() - flow_at - 8)
    );
    assert_eq!(frames::descriptor(&out[flow_at + 8..]), Some(0x13));
    for split in [1, 2, 9, 100] {
        let mut reader = Reader::default();
        let mut seen = Vec::new();
        for piece in out.chunks(split) {
            reader
                .feed(piece, |input| {
                    if let In::Frame { kept, len, .. } = input {
                        seen.push((kept.len(), len));
                    }
                    Ok(false)
                })
                .unwrap();
        }
        assert_eq!(
            seen,
            [
                (0, 0),
                (out.len() - flow_at - 8, (out.len() - flow_at - 8) as u64)
            ]
        );
    }
}

/// The client's setup, answered by `answer` (the SASL header and the
/// frames given) instead of the server.
fn client_meets(answer: &[u8]) -> Fault {
    let c = client(100, 100, AmqpParams::default());
    let mut cs = ClientState::default();
    c.setup_open(&mut cs);
    c.setup_received(&mut cs, answer).unwrap_err()
}

#[test]
fn a_peer_that_is_not_amqp_1_0_is_named() {
    let e = client_meets(b"HTTP/1.1 400 Bad Request\r\n\r\n");
    assert!(e.0.contains("an HTTP server"), "{e}");
    let e = client_meets(b"AMQP\x00\x00\x09\x01");
    assert!(e.0.contains("AMQP 0-9-1 broker"), "{e}");
    // The raw responder answers with zeros: a frame header of size 0.
    let mut zeros = frames::SASL_HEADER.to_vec();
    zeros.extend_from_slice(&[0; 16]);
    let e = client_meets(&zeros);
    assert!(e.0.contains("not an AMQP 1.0 frame"), "{e}");
}

#[test]
fn a_refused_login_is_a_fault() {
    let mut answer = frames::SASL_HEADER.to_vec();
    let outcome = SaslOutcome {
        code: SaslCode::Auth,
        additional_data: None,
    };
    frames::push(&mut answer, frames::TYPE_SASL, 0, &outcome).unwrap();
    let e = client_meets(&answer);
    assert!(
        e.0.starts_with("the broker refused the SASL login (outcome Auth)"),
        "{e}"
    );
}

#[test]
fn a_detach_or_close_with_an_error_is_a_fault_naming_it() {
    let c = client(100, 100, AmqpParams::default());
    let s = Server::of(100, 100, &Default::default());
    let (mut cs, _, _, _) = set_up(&c, &s, 1 << 20);
    let mut frame = Vec::new();
    let detach = Detach {
        handle: Handle(0),
        closed: true,
        error: Some(AmqpErrorBody::new(
            AmqpError::NotFound,
            Some("no queue 'x'".to_string()),
            None,
        )),
    };
    frames::push(&mut frame, frames::TYPE_AMQP, 0, &detach).unwrap();
    let e = c.response_left(&mut cs, 0, 0, &frame).unwrap_err();
    assert!(
        e.0.starts_with("the peer closed the link with error"),
        "{e}"
    );
    assert!(e.0.ends_with("no queue 'x'"), "{e}");
    // The server, too, names a client's close.
    let (_, mut ss, _, _) = set_up(&c, &s, 1 << 20);
    let mut frame = Vec::new();
    frames::push(&mut frame, frames::TYPE_AMQP, 0, &Close { error: None }).unwrap();
    let e = s.request_left(&mut ss, 0, 0, &frame).unwrap_err();
    assert_eq!(e.0, "the peer closed the connection (no error given)");
}

#[test]
fn a_message_over_the_peers_max_frame_is_a_fault() {
    let c = client(2000, 100, AmqpParams::default());
    let s = Server::of(2000, 100, &Default::default());
    let (mut cs, mut ss) = (ClientState::default(), ServerState::default());
    s.setup_open(&mut ss);
    c.setup_open(&mut cs);
    let out = bytes(c.setup_bytes(&cs), 1 << 20, |o, b| c.fill_setup(&cs, o, b));
    s.setup_received(&mut ss, &out).unwrap();
    let answer = bytes(s.setup_bytes(&ss), 1 << 20, |o, b| s.fill_setup(&ss, o, b));
    c.setup_received(&mut cs, &answer).unwrap();
    let out = bytes(c.setup_bytes(&cs), 1 << 20, |o, b| c.fill_setup(&cs, o, b));
    s.setup_received(&mut ss, &out).unwrap();
    let mut answer = bytes(s.setup_bytes(&ss), 1 << 20, |o, b| s.fill_setup(&ss, o, b));
    // The broker's open, replaced by one declaring a max-frame-size of 512
    // bytes (the smallest AMQP allows).
    let at = answer
        .windows(8)
        .position(|w| w == frames::AMQP_HEADER)
        .unwrap()
        + 8;
    let size = u32::from_be_bytes(answer[at..at + 4].try_into().unwrap()) as usize;
    let open = fe2o3_amqp_types::performatives::Open {
        container_id: "small".into(),
        hostname: None,
        max_frame_size: 512u32.into(),
        channel_max: 0u16.into(),
        idle_time_out: None,
        outgoing_locales: None,
        incoming_locales: None,
        offered_capabilities: None,
        desired_capabilities: None,
        properties: None,
    };
    let mut small = Vec::new();
    frames::push(&mut small, frames::TYPE_AMQP, 0, &open).unwrap();
    answer.splice(at..at + size, small);
    let e = c.setup_received(&mut cs, &answer).unwrap_err();
    assert!(
        e.0.starts_with("a message of 2000 bytes (a frame of ")
            && e.0.contains("max-frame-size 512"),
        "{e}"
    );
}

#[test]
fn a_reply_to_another_request_is_a_fault() {
    let c = client(100, 100, AmqpParams::default());
    let s = Server::of(100, 100, &Default::default());
    let (mut cs, mut ss, _, _) = set_up(&c, &s, 1 << 20);
    let (mut cs2, _, _, _) = set_up(&c, &s, 1 << 20);
    transact(&c, &s, &mut cs2, &mut ss, 1 << 20);
    // cs2's request answered by ss; now a second answer to a request of
    // message id 2 reaches cs, waiting for message id 1.
    transact(&c, &s, &mut cs2, &mut ss, 1 << 20);
    let answer = bytes(s.response_bytes(&ss), 1 << 20, |o, b| {
        s.fill_response(&ss, o, b)
    });
    let e = c.response_left(&mut cs, 0, 0, &answer).unwrap_err();
    assert!(
        e.0.starts_with("a reply with correlation id Some(Ulong(2)) to message 1"),
        "{e}"
    );
}

/// Bytes around the bodies per transaction once ids need their full width
/// (docs/transports.md quotes these): the fewest and most of a request's
/// and a reply's over transactions 300 to 400 of 1000/3000-byte bodies,
/// and their totals.
fn overhead(params: AmqpParams) -> [u64; 6] {
    let c = client(1000, 3000, params);
    let s = Server::of(1000, 3000, &Default::default());
    let (mut cs, mut ss, _, _) = set_up(&c, &s, 1 << 20);
    let mut o = [u64::MAX, 0, u64::MAX, 0, 0, 0];
    // The reply-to address names the connection (the process id and a
    // count): counted apart.
    let name = cs.name().len() as u64;
    for i in 0..400 {
        let (a, b) = transact(&c, &s, &mut cs, &mut ss, 1 << 20);
        if i >= 300 {
            let (a, b) = (a - 1000 - name, b - 3000);
            o = [
                o[0].min(a),
                o[1].max(a),
                o[2].min(b),
                o[3].max(b),
                o[4] + a,
                o[5] + b,
            ];
        }
    }
    o
}

#[test]
fn overhead_per_transaction_is_what_the_docs_say() {
    // Non-persistent, credit 100: a transfer each way, and a flow in front
    // of every 50th request.
    let persistent = AmqpParams {
        persistent: true,
        ..AmqpParams::default()
    };
    // Non-persistent: a request's transfer frame is 82 bytes and its
    // reply-to address (`stackbench.reply.` and the connection's name:
    // the 17 bytes before the name are in the figure), its ids in fixed
    // width, 18 of them the reply size's application property; the
    // reply's 69; every 50th request (credit 100) carries a 43-byte flow
    // in front.
    assert_eq!(
        overhead(AmqpParams::default()),
        [99, 142, 69, 69, 100 * 99 + 2 * 43, 100 * 69]
    );
    // Persistent: both transfers carry a durable header (the request's 7
    // bytes, the reply's 8), and the other side's disposition accepting
    // the previous message (the client's 26, the broker's 25).
    assert_eq!(
        overhead(persistent),
        [132, 175, 102, 102, 100 * 132 + 2 * 43, 100 * 102]
    );
}

#[test]
fn a_long_transfer_is_counted_not_copied() {
    let c = client(100_000, 100, AmqpParams::default());
    let s = Server::of(100_000, 100, &Default::default());
    let (cs, _, _, _) = set_up(&c, &s, 1 << 20);
    let request = bytes(c.request_len(&cs), 4096, |o, b| c.fill_request(&cs, o, b));
    let mut reader = Reader::default();
    let mut frames = Vec::new();
    for piece in request.chunks(1000) {
        reader
            .feed(piece, |input| {
                if let In::Frame { kept, len, .. } = input {
                    frames.push((kept.len(), len));
                }
                Ok(false)
            })
            .unwrap();
    }
    assert_eq!(frames.len(), 1);
    let (kept, len) = frames[0];
    assert_eq!(kept, frames::TRANSFER_KEEP_BYTES);
    assert_eq!(len, request.len() as u64 - 8);
}

/// A hostile peer's lengths are checked against the frame before
/// serde_amqp sees them: it reserves what a string, binary or symbol
/// declares before finding the bytes missing (the `amqp_client` fuzz
/// target's finding, a sasl-mechanisms array whose symbol claims 2.4 kB
/// inside a 24-byte array; with a 32-bit length, up to 4 GiB).
#[test]
fn a_length_past_its_value_is_refused_before_decoding() {
    let detach = Detach {
        handle: Handle(7),
        closed: true,
        error: Some(AmqpErrorBody::new(
            AmqpError::NotFound,
            Some("no queue".to_string()),
            None,
        )),
    };
    let mut frame = Vec::new();
    frames::push(&mut frame, frames::TYPE_AMQP, 0, &detach).unwrap();
    let body = &frame[8..];
    assert_eq!(frames::well_formed(body), Some(body.len()));
    let (_, len) = frames::performative(body).unwrap();
    assert_eq!(len, body.len());

    // sasl-mechanisms, a list of one array of two sym32 whose first
    // claims 0x0967 bytes of the array's 0x18.
    let mut hostile = vec![0x00, 0x53, 0x40, 0xc0, 0x1b, 0x01, 0xe0, 0x18, 0x02, 0xb3];
    hostile.extend_from_slice(&[0x00, 0x00, 0x09, 0x67]);
    hostile.extend_from_slice(&[b'g'; 0x18 - 6]);
    hostile.extend_from_slice(&[0; 3]);
    assert_eq!(frames::well_formed(&hostile), None);
    let e = frames::decode::<Detach>(&hostile, "sasl-mechanisms").unwrap_err();
    assert!(e.0.contains("runs past"), "{e}");

    // A list whose count promises more values than its size holds, and an
    // array of empty values counting more than its bytes.
    assert_eq!(frames::well_formed(&[0xc0, 0x02, 0x05, 0x40]), None);
    assert_eq!(
        frames::well_formed(&[0xf0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0x40]),
        None
    );
    assert_eq!(
        frames::well_formed(&[0xc0, 0x03, 0x02, 0x40, 0x41]),
        Some(5)
    );
}

/// What the halves and brokers send passes the walk that guards decoding:
/// a described list holding an array of symbols (sasl-mechanisms, as
/// RabbitMQ sends it too), maps and nested lists.
#[test]
fn every_performative_the_halves_send_is_well_formed() {
    use fe2o3_amqp_types::sasl::SaslMechanisms;
    use serde_amqp::primitives::{Array, Symbol};
    let mechanisms = SaslMechanisms {
        sasl_server_mechanisms: Array(vec![
            Symbol::from("PLAIN"),
            Symbol::from("AMQPLAIN"),
            Symbol::from("ANONYMOUS"),
        ]),
    };
    let mut frame = Vec::new();
    frames::push(&mut frame, frames::TYPE_SASL, 0, &mechanisms).unwrap();
    let body = &frame[8..];
    assert_eq!(frames::well_formed(body), Some(body.len()), "{body:02x?}");
    frames::decode::<SaslMechanisms>(body, "sasl-mechanisms").unwrap();
}

#[test]
fn compressed_bodies_go_both_ways_and_text_moves_fewer_bytes() {
    use stackbench_model::{AmqpBody, AmqpCompress};
    const SIZE: u64 = 32_000;
    for pattern in [AmqpPattern::RequestReply, AmqpPattern::PutGet] {
        for compress in [AmqpCompress::ZlibFast, AmqpCompress::ZlibHigh] {
            for (body, split) in [(AmqpBody::Text, 1 << 20), (AmqpBody::Random, 1000)] {
                let params = AmqpParams {
                    pattern,
                    body,
                    compress,
                    persistent: body == AmqpBody::Random,
                    credit: 4,
                    ..AmqpParams::default()
                };
                let c = client(SIZE, SIZE, params);
                let s = Server::of(SIZE, SIZE, &Default::default());
                let (mut cs, mut ss, _, _) = set_up(&c, &s, split);
                for _ in 0..6 {
                    let (sent, got) = transact(&c, &s, &mut cs, &mut ss, split);
                    let what = format!("{pattern:?} {compress:?} {body:?}: {sent}/{got} bytes");
                    match body {
                        // 32 kB of repeated text is a few hundred bytes of zlib.
                        AmqpBody::Text => {
                            assert!(sent < SIZE / 20 && got < SIZE / 20, "{what}");
                        }
                        // Incompressible: stored blocks, a few bytes more.
                        _ => {
                            assert!((SIZE..SIZE + 500).contains(&sent), "{what}");
                            assert!((SIZE..SIZE + 500).contains(&got), "{what}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_compressed_body_of_another_size_or_cut_short_is_refused() {
    let mut packed = Vec::new();
    let mut plain = Vec::new();
    deflate_body(AmqpBody::Text, 5000, 9, &mut plain, &mut packed);
    assert_eq!(level_of(&packed), 9);
    inflate_body(&packed, 5000, true, &mut plain).unwrap();
    assert_eq!(plain.len(), 5000);
    assert!(plain.starts_with(TEXT));
    let e = inflate_body(&packed, 4999, true, &mut plain).unwrap_err();
    assert!(e.0.contains("the notation's size is 4999"), "{}", e.0);
    let e = inflate_body(&packed, 5001, true, &mut plain).unwrap_err();
    assert!(e.0.contains("holds 5000 bytes"), "{}", e.0);
    let e = inflate_body(&packed[..packed.len() / 2], 5000, true, &mut plain).unwrap_err();
    assert!(e.0.contains("cut short"), "{}", e.0);
    let e = inflate_body(b"not zlib at all", 5000, false, &mut plain).unwrap_err();
    assert!(e.0.contains("not zlib"), "{}", e.0);
    // A bomb: stops at its bound.
    packed.clear();
    deflate_body(AmqpBody::Zeros, 1 << 20, 1, &mut plain, &mut packed);
    assert_eq!(level_of(&packed), 1, "{:02x?}", &packed[..2]);
    let e = inflate_body(&packed, 4096, false, &mut plain).unwrap_err();
    assert!(e.0.contains("at most 4096"), "{}", e.0);
}
