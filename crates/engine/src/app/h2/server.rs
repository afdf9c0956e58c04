//! HTTP/2's responder half: a connection's preface and frames read as
//! they come; every stream whose request is whole (its HEADERS, and a
//! POST's DATA, ended the stream) is answered `200` with a body of the
//! length its path names (`/8192`), else of the test's response size. The
//! answers to every stream a read completed go out in one write, so a
//! client with several streams in flight (h2load's `-m`) is served too;
//! the responder's transaction count is then one per write, the client's
//! per stream.

use stackbench_model::settings::Tn3270Options;

use super::{
    block as header_block, body_for, data_frames, frame, goaway, index, put, put_data, settings,
    window_update, Block, Event, Fault, Head, Hpack, Reader, ACK, CONTINUATION, END_HEADERS,
    FRAME_HEAD, GOAWAY, HEADERS, INITIAL_WINDOW, PING, PREFACE, RST_STREAM, SETTINGS,
    SETTINGS_INITIAL_WINDOW_SIZE, SETTINGS_MAX_CONCURRENT_STREAMS, WINDOW,
};
use crate::app::http1::named_body;
use crate::app::{grouped, Handler};

/// What a read asks for while no request is whole.
const MIN_READ: u64 = 16 * 1024;
/// Streams a client may open at once (nginx's default is 128).
const MAX_STREAMS: u32 = 128;
/// Longest answer HEADERS frame: 9 + 4 + 20 digits.
const ANSWER_HEAD_MAX: usize = 40;

/// The responder's half.
#[derive(Debug, Clone, Copy)]
pub struct Server {
    pub request_bytes: u64,
    pub response_bytes: u64,
}

/// One stream's answer: its HEADERS frame, then `body` bytes of DATA.
#[derive(Debug, Clone, Copy)]
struct Answer {
    stream: u32,
    head: [u8; ANSWER_HEAD_MAX],
    head_len: u8,
    body: u64,
}

/// A server connection's state.
#[derive(Default)]
pub struct ServerState {
    /// Preface bytes seen (24: all).
    preface: u8,
    reader: Reader,
    hpack: Hpack,
    block: Block,
    /// This side's SETTINGS went out (with the first answer).
    opened: bool,
    /// Frames owed the client (ACKs, WINDOW_UPDATE; this side's SETTINGS
    /// first on a connection's first answer), sent ahead of the answers.
    owed: Vec<u8>,
    answers: Vec<Answer>,
    answer_bytes: u64,
    /// The answers went out: cleared when the next bytes arrive.
    answered: bool,
    /// Streams whose request body is still arriving, and the body their
    /// path named.
    open: Vec<(u32, Option<u64>)>,
    /// DATA bytes received since the last connection WINDOW_UPDATE.
    consumed: u64,
    /// The client's stream window (its SETTINGS_INITIAL_WINDOW_SIZE).
    peer_window: Option<u32>,
    /// Bytes sent on the connection's window, less the client's
    /// WINDOW_UPDATEs (what is left is `INITIAL_WINDOW - used`).
    used: i64,
    /// The client said GOAWAY: close after the answer.
    goaway: bool,
}

/// This side's first frames: SETTINGS (streams, the stream window) and the
/// connection's WINDOW_UPDATE up to [`WINDOW`].
fn opening() -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    settings(
        &mut out,
        &[
            (SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS),
            (SETTINGS_INITIAL_WINDOW_SIZE, WINDOW as u32),
        ],
    );
    window_update(&mut out, 0, WINDOW - INITIAL_WINDOW);
    out
}

impl Server {
    /// The answer to stream `stream`, whose path named `named`.
    fn answer(
        &self,
        state: &mut ServerState,
        stream: u32,
        named: Option<u64>,
    ) -> Result<(), Fault> {
        let body = named.unwrap_or_else(|| body_for(self.response_bytes));
        let window = u64::from(state.peer_window.unwrap_or(INITIAL_WINDOW as u32));
        let left = INITIAL_WINDOW as i64 - state.used;
        if body > window || body as i64 > left {
            return Err(Fault(format!(
                "an answer of {} body bytes exceeds the client's HTTP/2 flow-control window \
                 ({} bytes for the stream, {} for the connection): the responder sends an \
                 answer whole",
                grouped(body),
                grouped(window),
                left
            )));
        }
        state.used += body as i64;
        let length = body.to_string();
        let block = header_block(
            &[index::STATUS_200],
            &[(index::CONTENT_LENGTH, length.as_bytes())],
        );
        let block_len = block.len();
        let head = Head {
            len: block_len as u32,
            kind: HEADERS,
            flags: END_HEADERS | if body == 0 { super::END_STREAM } else { 0 },
            stream,
        };
        let mut bytes = [0u8; ANSWER_HEAD_MAX];
        bytes[..9].copy_from_slice(&head.bytes());
        bytes[9..9 + block_len].copy_from_slice(&block[..block_len]);
        state.answers.push(Answer {
            stream,
            head: bytes,
            head_len: (9 + block_len) as u8,
            body,
        });
        Ok(())
    }

    /// Takes one frame of the client's.
    fn frame(&self, state: &mut ServerState, head: Head, payload: &[u8]) -> Result<(), Fault> {
        match head.kind {
            HEADERS | CONTINUATION => {
                let mut whole_request = None;
                let ServerState { block, hpack, .. } = state;
                block.take(&head, payload, |whole| {
                    let mut named = None;
                    hpack.decode(whole.bytes, |name, value| {
                        if name == b":path" {
                            named = std::str::from_utf8(value).ok().and_then(named_body);
                        }
                    })?;
                    whole_request = Some((whole.stream, named, whole.end_stream));
                    Ok(())
                })?;
                match whole_request {
                    Some((stream, named, true)) => self.answer(state, stream, named),
                    Some((stream, named, false)) => {
                        state.open.push((stream, named));
                        Ok(())
                    }
                    None => Ok(()),
                }
            }
            SETTINGS if head.flags & ACK == 0 => {
                for pair in payload.chunks_exact(6) {
                    let id = u16::from_be_bytes([pair[0], pair[1]]);
                    let value = u32::from_be_bytes([pair[2], pair[3], pair[4], pair[5]]);
                    if id == SETTINGS_INITIAL_WINDOW_SIZE {
                        state.peer_window = Some(value);
                    }
                }
                frame(&mut state.owed, SETTINGS, ACK, 0, &[]);
                Ok(())
            }
            PING if head.flags & ACK == 0 => {
                frame(&mut state.owed, PING, ACK, 0, payload);
                Ok(())
            }
            super::WINDOW_UPDATE if head.stream == 0 => {
                let inc = payload.get(..4).map_or(0, |b| {
                    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & super::MAX_STREAM
                });
                state.used -= i64::from(inc);
                Ok(())
            }
            RST_STREAM => {
                state.open.retain(|(s, _)| *s != head.stream);
                Ok(())
            }
            GOAWAY => {
                let (_, code, _) = goaway(payload);
                state.goaway = true;
                if code != 0 {
                    return Err(Fault(format!(
                        "the client sent HTTP/2 GOAWAY {} (code {code})",
                        super::error_name(code)
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl Handler for Server {
    const FRAMED: bool = true;
    type State = ServerState;

    #[inline]
    fn of(request_bytes: u64, response_bytes: u64, _: &Tn3270Options) -> Server {
        Server {
            request_bytes,
            response_bytes,
        }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_bytes.max(MIN_READ)
    }

    fn request_left(
        &self,
        state: &mut ServerState,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        if std::mem::take(&mut state.answered) {
            state.answers.clear();
            state.owed.clear();
        }
        let mut bytes = chunk;
        if usize::from(state.preface) < PREFACE.len() {
            let at = usize::from(state.preface);
            let take = (PREFACE.len() - at).min(bytes.len());
            if bytes[..take] != PREFACE[at..at + take] {
                let shown = String::from_utf8_lossy(&chunk[..chunk.len().min(40)]).into_owned();
                return Err(Fault(format!(
                    "not an HTTP/2 client: no connection preface; it began {shown:?}"
                )));
            }
            state.preface += take as u8;
            bytes = &bytes[take..];
        }
        let mut reader = std::mem::take(&mut state.reader);
        let fed = reader.feed(bytes, |event| match event {
            Event::Data { stream, n, end } => {
                state.consumed += u64::from(n);
                if end {
                    if let Some(i) = state.open.iter().position(|(s, _)| *s == stream) {
                        let (stream, named) = state.open.swap_remove(i);
                        return self.answer(state, stream, named);
                    }
                }
                Ok(())
            }
            Event::Frame(head, payload) => self.frame(state, head, payload),
        });
        state.reader = reader;
        fed?;
        if state.answers.is_empty() {
            return Ok(MIN_READ);
        }
        if !state.opened {
            state.opened = true;
            let mut lead = opening();
            lead.extend_from_slice(&state.owed);
            state.owed = lead;
        }
        let consumed = std::mem::take(&mut state.consumed);
        window_update(&mut state.owed, 0, consumed);
        state.answer_bytes = state.owed.len() as u64
            + state
                .answers
                .iter()
                .map(|a| u64::from(a.head_len) + data_frames(a.body) * FRAME_HEAD + a.body)
                .sum::<u64>();
        state.answered = true;
        Ok(0)
    }

    #[inline]
    fn response_bytes(&self, state: &ServerState) -> u64 {
        state.answer_bytes
    }

    fn fill_response(&self, state: &ServerState, offset: u64, out: &mut [u8]) {
        let mut at = put(out, offset, 0, &state.owed);
        let end = offset + out.len() as u64;
        for a in &state.answers {
            if at >= end {
                break;
            }
            at = put(out, offset, at, &a.head[..usize::from(a.head_len)]);
            at = put_data(out, offset, at, a.stream, a.body);
        }
    }

    #[inline]
    fn closes(&self, state: &ServerState) -> bool {
        state.goaway
    }
}
