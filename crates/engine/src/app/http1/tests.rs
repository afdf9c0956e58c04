//! The HTTP/1.1 codec and handler on scripted chunks: sizes, split heads,
//! the end of one response against the start of another, and faults.

use stackbench_model::{CrrClose, Kind};

use super::*;

fn shape(kind: Kind, request: u64, response: u64, close: CrrClose) -> ClassShape {
    ClassShape {
        kind,
        request_bytes: request,
        response_bytes: response,
        crr_close: close,
    }
}

fn request_of(client: &Client) -> Vec<u8> {
    let mut out = vec![b'x'; client.request_bytes() as usize];
    client.fill_request(0, &mut out);
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
    let cases: [(&[u8], &str); 5] = [
        (
            b"HTPP/1.1 200 OK\r\n\r\n",
            "malformed HTTP response to GET /",
        ),
        (
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
            "answered 404 Not Found to GET /160: ",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "Transfer-Encoding chunked",
        ),
        (
            b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n",
            "without Content-Length",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
            "bad Content-Length",
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
