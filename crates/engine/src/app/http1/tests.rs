//! The HTTP/1.1 codec and handler on scripted chunks: sizes, split heads,
//! the end of one response against the start of another, and faults.

use stackbench_model::{CrrClose, Kind};

use super::*;

fn shape(kind: Kind, request: u64, response: u64, close: CrrClose) -> ClassShape {
    ClassShape {
        h2: Default::default(),
        kind,
        request_bytes: request,
        response_bytes: response,
        crr_close: close,
        target: None,
        tn3270: Default::default(),
        amqp: Default::default(),
    }
}

fn request_of(client: &Client) -> Vec<u8> {
    let mut out = vec![b'x'; client.request_bytes() as usize];
    client.fill_request(&Parse::default(), 0, &mut out);
    out
}

/// Feeds `bytes` to the client codec in chunks of `chunk`; the bytes still
/// due after each.
fn receive(client: &Client, state: &mut Parse, bytes: &[u8], chunk: usize) -> Vec<u64> {
    bytes
        .chunks(chunk)
        .map(|c| client.response_left(state, 0, c.len() as u64, c).unwrap())
        .collect()
}

/// The server's whole answer to `request`, as its handler writes it.
fn serve(server: &Server, request: &[u8]) -> (Vec<u8>, bool) {
    let mut state = ServerState::default();
    let left = server
        .request_left(&mut state, 0, request.len() as u64, request)
        .unwrap();
    assert_eq!(left, 0, "{}", String::from_utf8_lossy(request));
    let mut out = vec![0u8; server.response_bytes(&state) as usize];
    server.fill_response(&state, 0, &mut out);
    (out, server.closes(&state))
}

#[test]
fn messages_are_the_notations_sizes_on_the_wire() {
    for (request, response) in [
        (100, 8192),
        (100, 100),
        (4096, 4096),
        (20 << 20, 1),
        (1, 20 << 20),
    ] {
        for close in [CrrClose::Server, CrrClose::Client] {
            let s = shape(Kind::Crr, request, response, close);
            let client = Client::of(&s);
            let server = Server {
                request_bytes: request,
                response_bytes: response,
            };
            let req = request_of(&client);
            let smallest = 38 + 19 * u64::from(s.server_closes());
            assert!(
                req.len() as u64 == request || request < 60,
                "{request}: {}",
                req.len()
            );
            let (answer, closes) = serve(&server, &req);
            assert_eq!(closes, s.server_closes());
            let want = response.max(smallest);
            assert!(
                answer.len() as u64 == want || answer.len() as u64 == want + 1,
                "{response}: {}",
                answer.len()
            );
            assert_eq!(client.answer_bytes(), answer.len() as u64);
            let mut state = Parse::default();
            let left = receive(&client, &mut state, &answer, answer.len());
            assert_eq!(left, vec![0]);
        }
    }
}

#[test]
fn a_size_is_exact_except_one_byte_over_where_the_length_gains_a_digit() {
    let mut over = 0;
    for response in 38..20_000 {
        let body = body_for(response, false);
        let total = response_head_bytes(body, false) + body;
        assert!(total == response || total == response + 1, "{response}");
        over += u64::from(total != response);
    }
    // Only at 10, 100, 1000, 10000 bytes of body.
    assert_eq!(over, 4);
}

#[test]
fn a_head_split_across_reads_is_put_together() {
    let client = Client::of(&shape(Kind::Rr, 100, 1000, CrrClose::Server));
    let server = Server {
        request_bytes: 100,
        response_bytes: 1000,
    };
    let (answer, _) = serve(&server, &request_of(&client));
    for chunk in [1, 3, 7, 20, 64] {
        let mut state = Parse::default();
        let left = receive(&client, &mut state, &answer, chunk);
        assert_eq!(*left.last().unwrap(), 0, "chunk {chunk}");
        assert!(
            left[..left.len() - 1].iter().all(|&l| l > 0),
            "chunk {chunk}"
        );
    }
    // The server's side likewise.
    let req = request_of(&client);
    let mut state = ServerState::default();
    let mut lefts = Vec::new();
    for c in req.chunks(5) {
        lefts.push(
            server
                .request_left(&mut state, 0, c.len() as u64, c)
                .unwrap(),
        );
    }
    assert_eq!(*lefts.last().unwrap(), 0);
    assert!(lefts[..lefts.len() - 1].iter().all(|&l| l > 0));
}

#[test]
fn a_second_response_is_not_taken_for_part_of_the_first() {
    let client = Client::of(&shape(Kind::Rr, 100, 200, CrrClose::Server));
    let one = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec();
    // After a body whose length is known, the reads ask for exactly the rest,
    // so a whole first response completes on its own.
    let mut state = Parse::default();
    assert_eq!(receive(&client, &mut state, &one, one.len()), vec![0]);
    // The state is ready for the next response: the same bytes again.
    assert_eq!(receive(&client, &mut state, &one, one.len()), vec![0]);
    // Head and body split: the rest due is the body's, not a guess.
    let mut state = Parse::default();
    assert_eq!(receive(&client, &mut state, &one, 40), vec![3, 0]);
    // Bytes of another response in the same read are a fault, not body.
    let two = [one.clone(), one.clone()].concat();
    let mut state = Parse::default();
    let fault = client
        .response_left(&mut state, 0, two.len() as u64, &two)
        .unwrap_err();
    assert!(fault.0.contains("past the end of a response"), "{fault}");
    assert!(!fault.0.contains('\n'));
}

#[test]
fn bad_responses_are_faults_in_one_line() {
    let client = Client::of(&shape(Kind::Rr, 100, 200, CrrClose::Server));
    let cases: [(&[u8], &str); 6] = [
        (
            b"HTPP/1.1 200 OK\r\n\r\n",
            "malformed HTTP response to GET /",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxyz",
            "Transfer-Encoding gzip: without chunked last",
        ),
        (
            b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n",
            "without Content-Length or chunked",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
            "bad Content-Length",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "bad chunk-size line \"zz\"",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n",
            "not followed by CRLF",
        ),
    ];
    for (bytes, needle) in cases {
        let mut state = Parse::default();
        let fault = client
            .response_left(&mut state, 0, bytes.len() as u64, bytes)
            .unwrap_err();
        assert!(fault.0.contains(needle), "{fault}");
        assert!(!fault.0.contains('\n'), "{fault}");
    }
}

/// Feeds `bytes` whole, then in every split of one to eight bytes: each
/// time the response ends exactly at its last byte (nothing due before
/// it), with `status`.
fn assert_ends_at_its_last_byte(client: &Client, bytes: &[u8], status: u16) {
    for chunk in [bytes.len(), 1, 2, 3, 5, 8] {
        let mut state = Parse::default();
        let left = receive(client, &mut state, bytes, chunk);
        let what = String::from_utf8_lossy(bytes);
        assert_eq!(*left.last().unwrap(), 0, "chunk {chunk}: {what}");
        assert!(
            left[..left.len() - 1].iter().all(|&l| l > 0),
            "chunk {chunk}: ended early: {what}"
        );
        assert_eq!(client.status(&state), status, "{what}");
        // Ready for the next response on the connection (keep-alive).
        let again = receive(client, &mut state, bytes, bytes.len());
        assert_eq!(again, vec![0], "{what}");
    }
}

#[test]
fn any_status_is_an_answer_framed_by_its_body() {
    let client = Client::of(&shape(Kind::Rr, 100, 200, CrrClose::Server));
    let cases: [(&[u8], u16); 4] = [
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 22\r\n\r\n<h1>404 Not Found</h1>",
            404,
        ),
        (
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\noops!",
            500,
        ),
        (
            b"HTTP/1.1 301 Moved Permanently\r\nLocation: /x\r\nContent-Length: 9\r\n\r\nmoved: /x",
            301,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            200,
        ),
    ];
    for (bytes, status) in cases {
        assert_ends_at_its_last_byte(&client, bytes, status);
    }
}

#[test]
fn a_204_or_304_has_no_body_whatever_its_headers_say() {
    let client = Client::of(&shape(Kind::Rr, 100, 200, CrrClose::Server));
    // A 304 states the length the full answer would have; no body follows.
    let cases: [(&[u8], u16); 3] = [
        (b"HTTP/1.1 204 No Content\r\nServer: t\r\n\r\n", 204),
        (
            b"HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\nContent-Length: 4096\r\n\r\n",
            304,
        ),
        (
            b"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
            304,
        ),
    ];
    for (bytes, status) in cases {
        assert_ends_at_its_last_byte(&client, bytes, status);
    }
    // So a body after a 204 is a fault, not the next response.
    let bytes = b"HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\nhi";
    let fault = client
        .response_left(&mut Parse::default(), 0, bytes.len() as u64, bytes)
        .unwrap_err();
    assert!(fault.0.contains("2 bytes past the end"), "{fault}");
}

#[test]
fn chunked_bodies_are_decoded_with_extensions_and_trailers() {
    let client = Client::of(&shape(Kind::Rr, 100, 200, CrrClose::Server));
    let cases: [&[u8]; 5] = [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        // Sizes in hex, either case; an empty body.
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n1b\r\n0123456789abcdef0123456789a\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        // Chunk extensions, and trailer fields after the last chunk.
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Expires\r\n\r\n4;name=value;x\r\nwiki\r\n5;q=\"a b\"\r\npedia\r\n0;end\r\nExpires: never\r\nX-Sum: 9\r\n\r\n",
        // Codings before chunked, and a Content-Length chunked wins over.
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 99\r\n\r\n3\r\n\x1f\x8b\x08\r\n0\r\n\r\n",
    ];
    for bytes in cases {
        assert_ends_at_its_last_byte(&client, bytes, 200);
    }
    let not_found =
        b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nnot found\r\n0\r\n\r\n";
    assert_ends_at_its_last_byte(&client, not_found, 404);
    // While a chunk's data is due, a read asks for at least all of it.
    let mut state = Parse::default();
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\nab";
    let left = client
        .response_left(&mut state, 0, head.len() as u64, head)
        .unwrap();
    assert!(left >= 0x10000 - 2, "{left}");
    // Bytes after the last chunk's empty line are a fault.
    let two = [cases[0], cases[0]].concat();
    let fault = client
        .response_left(&mut Parse::default(), 0, two.len() as u64, &two)
        .unwrap_err();
    assert!(
        fault
            .0
            .contains("past the end of a response (its last chunk)"),
        "{fault}"
    );
}

#[test]
fn the_responder_takes_a_chunked_request_body() {
    let server = Server {
        request_bytes: 100,
        response_bytes: 100,
    };
    let post =
        b"POST /7 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n0\r\nX: y\r\n\r\n";
    for chunk in [post.len(), 1, 4] {
        let mut state = ServerState::default();
        let lefts: Vec<u64> = post
            .chunks(chunk)
            .map(|c| {
                server
                    .request_left(&mut state, 0, c.len() as u64, c)
                    .unwrap()
            })
            .collect();
        assert_eq!(*lefts.last().unwrap(), 0);
        assert!(lefts[..lefts.len() - 1].iter().all(|&l| l > 0));
        assert_eq!(
            server.response_bytes(&state),
            response_head_bytes(7, false) + 7
        );
    }
}

#[test]
fn the_server_answers_the_length_the_path_names() {
    let server = Server {
        request_bytes: 100,
        response_bytes: 100,
    };
    let (answer, close) = serve(&server, b"GET /8192?aaaa HTTP/1.1\r\nHost: h\r\n\r\n");
    assert!(!close);
    assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\nContent-Length: 8192\r\n\r\n"));
    assert_eq!(answer.len() as u64, response_head_bytes(8192, false) + 8192);
    assert_eq!(response_head_bytes(8192, false), 41);
    // A path without a length: the test's response size.
    let (answer, _) = serve(&server, b"GET /index.html HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(answer.len(), 100);
    // A request body is read to its end before the answer is due.
    let post = b"POST /3 HTTP/1.1\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody";
    let (answer, close) = serve(&server, post);
    assert!(close);
    assert!(answer.ends_with(b"Connection: close\r\n\r\n\0\0\0"));
    let mut state = ServerState::default();
    assert!(server
        .request_left(&mut state, 0, 9, b"garbage\r\n\r\n")
        .is_err());
}

/// The figures docs/architecture.md gives for a connection's parse state.
#[test]
fn parse_state_is_small() {
    assert_eq!(std::mem::size_of::<Parse>(), 40);
    assert_eq!(std::mem::size_of::<ServerState>(), 80);
}

#[test]
fn a_response_that_says_close_is_the_connections_last() {
    let client = Client::of(&shape(Kind::Rr, 100, 200, CrrClose::Server));
    let cases: [(&[u8], bool); 4] = [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        (
            b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n",
            true,
        ),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", true),
    ];
    for (bytes, closes) in cases {
        let mut state = Parse::default();
        assert_eq!(receive(&client, &mut state, bytes, bytes.len()), vec![0]);
        let what = String::from_utf8_lossy(bytes);
        assert_eq!(client.server_closes(&state), closes, "{what}");
    }
}
