//! HTTP/2's driver half: one request built per class (a HEADERS frame, and
//! a POST's DATA frames), sent on stream 1, 3, 5, … of a connection, ahead
//! of it what the connection owes (the preface on a fresh one, ACKs,
//! WINDOW_UPDATEs); responses read frame by frame until their stream ends.

use std::sync::Arc;

use stackbench_model::{AppProtocol, H2Params};

use super::{
    answer_len, block, body_for, error_name, frame, goaway, index, put, put_data, settings,
    window_update, Block, Event, Fault, Head, Hpack, Reader, ACK, CONTINUATION, END_HEADERS,
    END_STREAM, FRAME_HEAD, GOAWAY, HEADERS, INITIAL_WINDOW, MAX_FRAME, MAX_STREAM, PING, PREFACE,
    PUSH_PROMISE, RST_STREAM, SETTINGS, SETTINGS_ENABLE_PUSH, SETTINGS_INITIAL_WINDOW_SIZE,
    SETTINGS_MAX_FRAME_SIZE,
};
use crate::app::http1::MAX_GET_BYTES;
use crate::app::{grouped, ClassShape, Codec};

/// Least a read of a response asks for (a foreign server's frames may be
/// longer than this responder's answer).
const MIN_READ: u64 = 4096;

/// The driver's half.
#[derive(Debug, Clone)]
pub struct Client {
    /// The request's header block (its frame header is written per
    /// request: the stream id changes).
    block: Arc<[u8]>,
    /// A POST's body bytes (0: a GET, whose HEADERS frame ends the stream).
    body: u64,
    request_bytes: u64,
    /// What a fresh connection sends ahead of its first request: the
    /// preface, SETTINGS and a connection WINDOW_UPDATE.
    opening: Arc<[u8]>,
    /// The answer stackbench's responder gives.
    answer_bytes: u64,
    /// `GET /N` (or `POST /N`), for faults.
    request_line: Arc<str>,
    /// Largest frame payload accepted (`h2_max_frame`, announced).
    max_frame: u32,
}

/// A connection's state: its frame reader and HPACK decoder, the stream in
/// flight, and what it owes the server.
#[derive(Default)]
pub struct ClientState {
    reader: Reader,
    hpack: Hpack,
    block: Block,
    /// The next stream id (0: a fresh connection, whose first is 1).
    next: u32,
    /// The stream of the request in flight.
    stream: u32,
    /// Frames owed the server, sent ahead of the next request.
    owed: Vec<u8>,
    /// DATA bytes consumed since the last connection WINDOW_UPDATE.
    consumed: u64,
    /// The response: its final status (0 before its HEADERS), body bytes
    /// seen, whether its stream ended.
    status: u16,
    body_seen: u64,
    ended: bool,
    /// The server said GOAWAY without error: close after this response.
    goaway: bool,
    /// The server's first frame (its SETTINGS: its preface) came.
    began: bool,
}

impl ClientState {
    fn fresh(&self) -> bool {
        self.next == 0
    }

    fn request_stream(&self) -> u32 {
        self.next.max(1)
    }
}

/// The header block of a request of `method` for `path` at `authority`,
/// with a `content-length` when `length` says one: indexed and literal
/// fields without Huffman or the dynamic table, so its length is known.
fn request_block(method: &str, path: &str, authority: &str, length: Option<u64>) -> Vec<u8> {
    let method = if method == "POST" {
        index::METHOD_POST
    } else {
        index::METHOD_GET
    };
    let length = length.map(|l| l.to_string());
    let mut literals: Vec<(u32, &[u8])> = vec![
        (index::PATH, path.as_bytes()),
        (index::AUTHORITY, authority.as_bytes()),
    ];
    if let Some(l) = &length {
        literals.push((index::CONTENT_LENGTH, l.as_bytes()));
    }
    block(&[method, index::SCHEME_HTTP], &literals)
}

/// The request of a class: its header block, its body bytes and the body
/// length the responder's answer has.
fn request_for(shape: &ClassShape) -> (Vec<u8>, u64, String) {
    let answer = body_for(shape.response_bytes);
    let (authority, path) = match shape.target {
        Some(t) => (t.host.as_str(), t.path.clone()),
        None => ("stackbench", None),
    };
    let path = path.unwrap_or_else(|| format!("/{answer}"));
    let want = shape.request_bytes;
    let frame_of = |block: &[u8]| FRAME_HEAD + block.len() as u64;
    if want <= MAX_GET_BYTES {
        let get = |pad: u64| {
            let padded = if pad == 0 {
                path.clone()
            } else {
                let sep = if path.contains('?') { '&' } else { '?' };
                format!("{path}{sep}{}", "a".repeat(pad as usize - 1))
            };
            request_block("GET", &padded, authority, None)
        };
        let plain = get(0);
        let mut pad = want.saturating_sub(frame_of(&plain));
        // A longer path may take a byte more for its length: step back to
        // the longest that fits (or, where none is exact, one byte over).
        let mut block = get(pad);
        while pad > 0 && frame_of(&block) > want {
            pad -= 1;
            block = get(pad);
        }
        return (block, 0, format!("GET {path}"));
    }
    let post = |len: u64| request_block("POST", &path, authority, Some(len));
    let total = |len: u64| frame_of(&post(len)) + super::data_frames(len) * FRAME_HEAD + len;
    let mut len = want.saturating_sub(frame_of(&post(0)));
    while len > 0 && total(len) > want {
        len -= 1;
    }
    (post(len), len, format!("POST {path}"))
}

/// What a fresh connection sends first: the preface, SETTINGS (no push,
/// the stream window, the frame size when above the initial one) and the
/// connection's WINDOW_UPDATE from the RFC's initial window up to
/// `h2_connection_window` (none when it is that initial window).
pub fn opening(h2: &H2Params) -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    let mut announced = vec![
        (SETTINGS_ENABLE_PUSH, 0),
        (SETTINGS_INITIAL_WINDOW_SIZE, h2.window_bytes),
    ];
    if h2.max_frame_bytes != MAX_FRAME {
        announced.push((SETTINGS_MAX_FRAME_SIZE, h2.max_frame_bytes));
    }
    settings(&mut out, &announced);
    window_update(
        &mut out,
        0,
        u64::from(h2.connection_window_bytes).saturating_sub(INITIAL_WINDOW),
    );
    out
}

impl Client {
    /// Bytes of the answer stackbench's responder gives this request.
    pub fn answer_bytes(&self) -> u64 {
        self.answer_bytes
    }

    /// The HEADERS frame's header for a request on `stream`.
    fn headers_head(&self, stream: u32) -> Head {
        Head {
            len: self.block.len() as u32,
            kind: HEADERS,
            flags: END_HEADERS | if self.body == 0 { END_STREAM } else { 0 },
            stream,
        }
    }

    /// Takes one frame of the server's.
    fn frame(&self, state: &mut ClientState, head: Head, payload: &[u8]) -> Result<(), Fault> {
        if !std::mem::replace(&mut state.began, true) && head.kind != SETTINGS {
            return Err(Fault(format!(
                "the server's first frame is of type {} rather than SETTINGS: it does not \
                 speak HTTP/2",
                head.kind
            )));
        }
        match head.kind {
            HEADERS | CONTINUATION => {
                let ClientState {
                    block,
                    hpack,
                    stream,
                    status,
                    ended,
                    ..
                } = state;
                block.take(&head, payload, |whole| {
                    let mut code = None;
                    hpack.decode(whole.bytes, |name, value| {
                        if name == b":status" {
                            code = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                        }
                    })?;
                    if whole.stream != *stream {
                        return Ok(());
                    }
                    match code {
                        // An interim response (100 Continue): the final
                        // one follows.
                        Some(c) if (100..200).contains(&c) => {}
                        Some(c) => *status = c,
                        // Trailers (no status) after the body.
                        None if *status != 0 => {}
                        None => {
                            return Err(Fault(format!(
                                "an HTTP/2 response to {} without :status",
                                self.request_line
                            )))
                        }
                    }
                    *ended |= whole.end_stream;
                    Ok(())
                })
            }
            SETTINGS if head.flags & ACK == 0 => {
                frame(&mut state.owed, SETTINGS, ACK, 0, &[]);
                Ok(())
            }
            PING if head.flags & ACK == 0 => {
                frame(&mut state.owed, PING, ACK, 0, payload);
                Ok(())
            }
            GOAWAY => {
                let (last, code, debug) = goaway(payload);
                if code != 0 {
                    return Err(Fault(format!(
                        "the server sent HTTP/2 GOAWAY {} (code {code}, last stream {last}){}",
                        error_name(code),
                        if debug.is_empty() {
                            String::new()
                        } else {
                            format!(": {debug:?}")
                        }
                    )));
                }
                state.goaway = true;
                Ok(())
            }
            RST_STREAM if head.stream == state.stream => {
                let code = payload
                    .get(..4)
                    .map_or(0, |b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
                Err(Fault(format!(
                    "the server reset the HTTP/2 stream of {} with RST_STREAM {} (code {code})",
                    self.request_line,
                    error_name(code)
                )))
            }
            PUSH_PROMISE => Err(Fault(
                "the server sent an HTTP/2 PUSH_PROMISE though the client's SETTINGS disabled \
                 push"
                    .to_string(),
            )),
            // ACKs, WINDOW_UPDATE (requests stay within the initial
            // windows), PRIORITY, a stream's late frames, unknown types.
            _ => Ok(()),
        }
    }
}

impl Codec for Client {
    const FRAMED: bool = true;
    const PROTOCOL: AppProtocol = AppProtocol::H2;
    type State = ClientState;
    const STATUS: bool = true;

    fn of(shape: &ClassShape) -> Client {
        let (block, body, request_line) = request_for(shape);
        let answer = body_for(shape.response_bytes);
        Client {
            request_bytes: FRAME_HEAD
                + block.len() as u64
                + super::data_frames(body) * FRAME_HEAD
                + body,
            block: block.into(),
            body,
            opening: opening(&shape.h2).into(),
            answer_bytes: answer_len(answer),
            request_line: request_line.into(),
            max_frame: shape.h2.max_frame_bytes,
        }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_bytes
    }

    #[inline]
    fn owed_bytes(&self, state: &ClientState) -> u64 {
        let opening = if state.fresh() { self.opening.len() } else { 0 };
        (opening + state.owed.len()) as u64
    }

    fn fill_request(&self, state: &ClientState, offset: u64, out: &mut [u8]) {
        let mut at = 0;
        if state.fresh() {
            at = put(out, offset, at, &self.opening);
        }
        at = put(out, offset, at, &state.owed);
        let stream = state.request_stream();
        at = put(out, offset, at, &self.headers_head(stream).bytes());
        at = put(out, offset, at, &self.block);
        if self.body > 0 {
            put_data(out, offset, at, stream, self.body);
        }
    }

    #[inline]
    fn request_sent(&self, state: &mut ClientState) {
        state.stream = state.request_stream();
        state.next = state.stream + 2;
        state.owed.clear();
        state.status = 0;
        state.body_seen = 0;
        state.ended = false;
    }

    #[inline]
    fn response_bytes(&self) -> u64 {
        self.answer_bytes.max(MIN_READ)
    }

    fn response_left(
        &self,
        state: &mut ClientState,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        if !state.began && !state.reader.mid_frame() && chunk.starts_with(b"HTTP/") {
            let text = String::from_utf8_lossy(&chunk[..chunk.len().min(60)]).into_owned();
            return Err(Fault(format!(
                "the server answered {} in HTTP/1.1 ({:?}): it does not speak HTTP/2 here \
                 (nginx: listen … http2)",
                self.request_line,
                text.lines().next().unwrap_or_default()
            )));
        }
        let mut reader = std::mem::take(&mut state.reader);
        reader.max_frame = self.max_frame;
        let fed = reader.feed(chunk, |event| match event {
            Event::Data { stream, n, end } => {
                state.consumed += u64::from(n);
                if stream == state.stream {
                    state.body_seen += u64::from(n);
                    state.ended |= end;
                }
                Ok(())
            }
            Event::Frame(head, payload) => self.frame(state, head, payload),
        });
        state.reader = reader;
        fed?;
        if !state.ended {
            let due = self.answer_bytes.saturating_sub(state.body_seen);
            return Ok(due.max(MIN_READ));
        }
        // The connection's window back, with the next request.
        let consumed = std::mem::take(&mut state.consumed);
        window_update(&mut state.owed, 0, consumed);
        Ok(0)
    }

    #[inline]
    fn status(&self, state: &ClientState) -> u16 {
        state.status
    }

    /// A GOAWAY without error (nginx's after `keepalive_requests`), or
    /// stream ids used up: the client connects anew.
    #[inline]
    fn server_closes(&self, state: &ClientState) -> bool {
        state.goaway || state.next >= MAX_STREAM - 2
    }

    fn response_seen(&self, state: &ClientState, _remaining: u64) -> Option<String> {
        if state.status == 0 && state.body_seen == 0 {
            return state
                .reader
                .mid_frame()
                .then(|| "part of an HTTP/2 frame".to_string());
        }
        Some(format!(
            "the HEADERS (status {}) and {} DATA bytes",
            state.status,
            grouped(state.body_seen)
        ))
    }
}
