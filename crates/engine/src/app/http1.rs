//! HTTP/1.1 as an application protocol: the driver's [`Client`] codec and
//! the responder's [`Server`] handler, heads parsed with `httparse`.
//!
//! Sizes. The notation's sizes are whole messages on the wire, head
//! included, as for raw payloads: `RR40(100B/100B)` reads as "an HTTP GET
//! request of 100 bytes answered by 100 bytes", the way the workload's
//! definition describes web traffic. So a request is
//! `GET /N HTTP/1.1` with a `Host` header, padded to the request size by a
//! query string (`/N?aaa…`, which a static server ignores); above
//! [`MAX_GET_BYTES`], where servers stop taking request heads (nginx's
//! `large_client_header_buffers` is 8k), a `POST /N` whose Content-Length
//! body fills the size. `N` is the body length that makes this responder's
//! answer (`200 OK`, `Content-Length: N`) exactly the response size, so a
//! server that serves a file of N bytes at `/N` can be driven alike (its
//! own headers then make its responses longer: the record's byte counts are
//! what moved). A size below the smallest message is raised to it; where
//! the Content-Length's digit count steps (10, 100, … bytes of body) an
//! exact size may not exist and the message is one byte longer.
//!
//! Framing. A message ends after its head and its body: `Content-Length`
//! bytes, or a chunked body (`Transfer-Encoding: chunked`) decoded chunk by
//! chunk — size lines with their extensions (`httparse::parse_chunk_size`),
//! data, the last chunk and its trailers — whatever the reads' boundaries,
//! counting the data without copying it. A 204, 304 or 1xx response has no
//! body whatever its headers say. Requests are never pipelined, so bytes
//! past a response's end cannot belong to the next one: they are a fault (a
//! wrong Content-Length or chunk size), not the start of another response.
//! Connections are kept alive (RR, STR) until a response says
//! `Connection: close` (the client then connects anew); a CRR request whose
//! server closes says `Connection: close`, and the server closes after
//! answering. wrk frames responses the same way (wg/wrk, src/wrk.c: the
//! request is built once, `socket_readable` feeds each read to the HTTP
//! parser, and its message-complete callback ends the transaction and
//! decides keep-alive or reconnect).
//!
//! Statuses. Any status is an answer: the codec reports each response's
//! (`Codec::status`), the driver counts it per code and a non-2xx one as an
//! `http_status` error, and the connection goes on; only a share of
//! non-2xx answers above the `http_error_share` setting makes the run
//! incomplete (`driver::summary::status_share`), as wrk counts "Non-2xx or
//! 3xx responses" and goes on.

use std::sync::Arc;

use httparse::{Status, EMPTY_HEADER};
use stackbench_model::settings::Tn3270Options;
use stackbench_model::AppProtocol;

use super::{grouped, ClassShape, Codec, Fault, Handler, Protocol};

/// Largest request sent as a GET; a longer one is a POST with a body.
pub const MAX_GET_BYTES: u64 = 8000;
/// Longest message head accepted before the message is refused.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Headers parsed per message (httparse's fixed array).
const MAX_HEADERS: usize = 64;
/// Least a head read asks for, so a server whose head is longer than the
/// expected response is not read a few bytes at a time.
const MIN_HEAD_READ: u64 = 4096;

const OK_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Length: ";
const CLOSE_LINE: &str = "Connection: close\r\n";

fn digits(n: u64) -> u64 {
    n.checked_ilog10().map_or(1, |d| u64::from(d) + 1)
}

/// Length of this responder's head for a body of `body` bytes.
pub fn response_head_bytes(body: u64, close: bool) -> u64 {
    let close = if close { CLOSE_LINE.len() as u64 } else { 0 };
    OK_HEAD.len() as u64 + digits(body) + 2 + close + 2
}

/// The body length whose whole answer is `response` bytes, or one more
/// where no length fits exactly (where the Content-Length gains a digit),
/// or 0 below the smallest answer.
pub fn body_for(response: u64, close: bool) -> u64 {
    let without_digits = response_head_bytes(0, close) - 1;
    for total in [response, response + 1] {
        for d in 1..=20u64 {
            let Some(body) = total.checked_sub(without_digits + d) else {
                break;
            };
            if digits(body) == d {
                return body;
            }
        }
    }
    0
}

/// The request of a class: its head, and the body length after it.
fn request_for(shape: &ClassShape) -> (Vec<u8>, u64) {
    let body = body_for(shape.response_bytes, shape.server_closes());
    let close = if shape.server_closes() {
        CLOSE_LINE
    } else {
        ""
    };
    // A plain server's URL names the host and may name the path; else the
    // path names the body stackbench's responder answers with.
    let (host, path) = match shape.target {
        Some(t) => (t.host.as_str(), t.path.clone()),
        None => ("stackbench", None),
    };
    let path = path.unwrap_or_else(|| format!("/{body}"));
    let get = |query: &str| format!("GET {path}{query} HTTP/1.1\r\nHost: {host}\r\n{close}\r\n");
    let plain = get("");
    let want = shape.request_bytes;
    if want <= MAX_GET_BYTES {
        let pad = want.saturating_sub(plain.len() as u64);
        if pad == 0 {
            return (plain.into_bytes(), 0);
        }
        // A path with a query of its own gets the padding as one more field.
        let sep = if path.contains('?') { '&' } else { '?' };
        let query = format!("{sep}{}", "a".repeat(pad as usize - 1));
        return (get(&query).into_bytes(), 0);
    }
    let post = |len: u64| {
        format!("POST {path} HTTP/1.1\r\nHost: {host}\r\n{close}Content-Length: {len}\r\n\r\n")
    };
    let mut len = want.saturating_sub(post(0).len() as u64);
    while len > 0 && post(len).len() as u64 + len > want {
        len -= 1;
    }
    (post(len).into_bytes(), len)
}

/// Copies the part of `head` that falls in `offset..offset + out.len()`.
fn fill(head: &[u8], offset: u64, out: &mut [u8]) {
    let Ok(start) = usize::try_from(offset) else {
        return;
    };
    if start >= head.len() {
        return;
    }
    let n = (head.len() - start).min(out.len());
    out[..n].copy_from_slice(&head[start..start + n]);
}

/// Where a message's parse is (the `u8` beside [`Parse::left`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Reading a head (its bytes so far in [`Parse::head`]).
    #[default]
    Head,
    /// A Content-Length body: `left` bytes of it still due.
    Length,
    /// A chunked body: reading a chunk-size line (`1a;ext=v\r\n`).
    ChunkSize,
    /// A chunked body: `left` bytes of the current chunk's data due.
    ChunkData,
    /// A chunked body: the CRLF after a chunk's data, `left` bytes of it seen.
    ChunkEnd,
    /// A chunked body after its last (zero) chunk: trailer lines, until
    /// the empty line that ends the message.
    Trailer,
}

/// A message's parse, carried from one read to the next: a head's bytes
/// so far (or a chunk-size or trailer line's: the head is done by then),
/// where the body is, and what the last head said (its status, whether
/// the peer closes after it). 40 bytes: `left` and `at` are a
/// Content-Length count or the chunked decoder's place in one word and a
/// byte; status, close and `length` (the Content-Length itself, below
/// 4 GiB, for the line that explains a body cut short) share the word's
/// padding.
#[derive(Debug, Default)]
pub struct Parse {
    head: Vec<u8>,
    left: u64,
    length: u32,
    at: At,
    close: bool,
    status: u16,
}

/// How a message's body is framed (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Content-Length bytes (0: no body, as for a 204 or 304).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// What a complete head said: its length, how its body is framed, (a
/// response) its status, and whether it said `Connection: close`.
struct Head {
    len: usize,
    framing: Framing,
    status: u16,
    close: bool,
}

/// Longest chunk-size or trailer line accepted.
const MAX_LINE_BYTES: usize = 8 * 1024;

impl Parse {
    /// The status of the last response head parsed (0 before any).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Whether the last head said the peer closes after its message
    /// (`Connection: close`, or an HTTP/1.0 response).
    pub fn closes(&self) -> bool {
        self.close
    }

    /// What arrived of the message in progress: `None` before any byte of
    /// it (see `Codec::response_seen`).
    pub fn seen(&self) -> Option<String> {
        match self.at {
            At::Head if self.head.is_empty() => None,
            At::Head => Some(format!(
                "{} bytes of a head without its end",
                grouped(self.head.len() as u64)
            )),
            At::Length if self.length < u32::MAX => {
                let length = u64::from(self.length);
                Some(format!(
                    "the head and {} of {} body bytes",
                    grouped(length - self.left),
                    grouped(length)
                ))
            }
            At::Length => Some(format!(
                "the head, {} body bytes short of its Content-Length",
                grouped(self.left)
            )),
            _ => Some("the head and part of a chunked body".to_string()),
        }
    }

    /// Feeds `chunk`; `parse` reads a complete head. Returns the bytes
    /// still due (`hint` while the head is incomplete; what a chunked body
    /// may still need, at least [`MIN_HEAD_READ`]), 0 at the message's end.
    fn feed(
        &mut self,
        chunk: &[u8],
        hint: u64,
        what: &str,
        mut parse: impl FnMut(&[u8]) -> Result<Option<Head>, Fault>,
    ) -> Result<u64, Fault> {
        match self.at {
            At::Head => {}
            At::Length => return self.length(chunk.len() as u64, what),
            _ => return self.chunked(chunk, what),
        }
        // A head that arrives whole is parsed where it lies, not copied.
        let whole = self.head.is_empty();
        if !whole {
            self.head.extend_from_slice(chunk);
        }
        // Held apart while the body starts: a chunked body's lines reuse
        // the buffer (its capacity is kept for the next head).
        let held = std::mem::take(&mut self.head);
        let buf = if whole { chunk } else { &held[..] };
        let head = match parse(buf) {
            Ok(Some(head)) => head,
            Ok(None) => {
                self.head = held;
                if whole {
                    self.head.extend_from_slice(chunk);
                }
                if self.head.len() > MAX_HEAD_BYTES {
                    return Err(Fault(format!(
                        "{what} head longer than {MAX_HEAD_BYTES} bytes: not HTTP/1.1, or a \
                         server that sends no end of head"
                    )));
                }
                let seen = self.head.len() as u64;
                return Ok(hint.saturating_sub(seen).max(MIN_HEAD_READ));
            }
            Err(fault) => {
                self.head = held;
                return Err(fault);
            }
        };
        self.status = head.status;
        self.close = head.close;
        let rest = &buf[head.len..];
        let left = match head.framing {
            Framing::Length(n) => {
                self.at = At::Length;
                self.left = n;
                self.length = u32::try_from(n).unwrap_or(u32::MAX);
                self.length(rest.len() as u64, what)
            }
            Framing::Chunked => {
                self.at = At::ChunkSize;
                self.chunked(rest, what)
            }
        };
        if self.head.is_empty() {
            let mut held = held;
            held.clear();
            self.head = held;
        }
        left
    }

    /// `n` bytes of a Content-Length body arrived.
    fn length(&mut self, n: u64, what: &str) -> Result<u64, Fault> {
        if n > self.left {
            return Err(past_end(n - self.left, what, "its Content-Length"));
        }
        self.left -= n;
        if self.left == 0 {
            self.at = At::Head;
        }
        Ok(self.left)
    }

    /// Bytes of a chunked body arrived: decoded step by step, whatever the
    /// reads' boundaries (a line split across reads is kept in `head`).
    /// Only the framing is read; the data is counted, not kept.
    fn chunked(&mut self, mut bytes: &[u8], what: &str) -> Result<u64, Fault> {
        loop {
            match self.at {
                At::ChunkData => {
                    let take = self.left.min(bytes.len() as u64);
                    bytes = &bytes[take as usize..];
                    self.left -= take;
                    if self.left > 0 {
                        return Ok(self.left.saturating_add(MIN_HEAD_READ));
                    }
                    self.at = At::ChunkEnd;
                }
                At::ChunkEnd => {
                    while self.left < 2 {
                        let Some((&b, rest)) = bytes.split_first() else {
                            return Ok(MIN_HEAD_READ);
                        };
                        if b != b"\r\n"[self.left as usize] {
                            return Err(Fault(format!(
                                "a chunked {what}'s chunk data is not followed by CRLF: the \
                                 chunk is longer than its size line says"
                            )));
                        }
                        self.left += 1;
                        bytes = rest;
                    }
                    self.at = At::ChunkSize;
                }
                At::ChunkSize | At::Trailer => {
                    let Some(line) = self.line(&mut bytes, what)? else {
                        return Ok(MIN_HEAD_READ);
                    };
                    match (self.at, line) {
                        (At::Trailer, Line::Empty) => {
                            self.at = At::Head;
                            if !bytes.is_empty() {
                                let n = bytes.len() as u64;
                                return Err(past_end(n, what, "its last chunk"));
                            }
                            return Ok(0);
                        }
                        // A trailer field: its bytes are counted, not kept.
                        (At::Trailer, _) => {}
                        (_, Line::Size(size)) => {
                            self.left = size;
                            self.at = if size == 0 {
                                At::Trailer
                            } else {
                                At::ChunkData
                            };
                        }
                        (_, bad) => {
                            let shown = match bad {
                                Line::Other(text) => text,
                                _ => String::new(),
                            };
                            return Err(Fault(format!(
                                "a chunked {what} with a bad chunk-size line {shown:?}"
                            )));
                        }
                    }
                }
                At::Head | At::Length => unreachable!("chunked() outside a chunked body"),
            }
        }
    }

    /// The next whole line (up to and with its LF) from `bytes`, joined to
    /// what earlier reads left in `head`, read as a chunk-size line or an
    /// empty one; `None`: the line goes on in the next read (its bytes so
    /// far kept). A line that arrives whole is read where it lies.
    fn line(&mut self, bytes: &mut &[u8], what: &str) -> Result<Option<Line>, Fault> {
        let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
            self.head.extend_from_slice(bytes);
            *bytes = &[];
            if self.head.len() > MAX_LINE_BYTES {
                return Err(Fault(format!(
                    "a chunked {what} with a chunk-size or trailer line longer than \
                     {MAX_LINE_BYTES} bytes"
                )));
            }
            return Ok(None);
        };
        let (here, rest) = bytes.split_at(end + 1);
        *bytes = rest;
        if !self.head.is_empty() {
            self.head.extend_from_slice(here);
        }
        let text = if self.head.is_empty() {
            here
        } else {
            &self.head[..]
        };
        let line = Line::of(text);
        self.head.clear();
        Ok(Some(line))
    }
}

/// A line of a chunked body's framing.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// CRLF alone: the end of the trailers.
    Empty,
    /// A chunk-size line's size (its extensions skipped).
    Size(u64),
    /// Anything else (a trailer field, or a bad size line), for a message.
    Other(String),
}

impl Line {
    fn of(text: &[u8]) -> Line {
        if text == b"\r\n" || text == b"\n" {
            return Line::Empty;
        }
        match httparse::parse_chunk_size(text) {
            Ok(Status::Complete((_, size))) => Line::Size(size),
            _ => Line::Other(first_line(text)),
        }
    }
}

/// The fault of bytes after a message's end: requests are not pipelined,
/// so they cannot be the next message.
fn past_end(n: u64, what: &str, end: &str) -> Fault {
    Fault(format!(
        "{n} bytes past the end of a {what} ({end}): requests are not pipelined, so the \
         peer sent a wrong Content-Length or chunk size"
    ))
}

/// How a head's headers frame its body, and whether they say
/// `Connection: close`, in one pass over them: chunked when
/// Transfer-Encoding ends in chunked (it wins over a Content-Length), else
/// Content-Length; absent = 0 when `absent_ok` (a request). `bodiless`
/// (a 204, 304 or 1xx response): no body whatever they say.
fn framing(
    headers: &[httparse::Header<'_>],
    what: &str,
    absent_ok: bool,
    bodiless: bool,
) -> Result<(Framing, bool), Fault> {
    let mut length = None;
    let mut coding = None;
    let mut close = false;
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            length = Some(h.value);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            coding = Some(h.value);
        } else if h.name.eq_ignore_ascii_case("connection") {
            close |= h
                .value
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"));
        }
    }
    if bodiless {
        return Ok((Framing::Length(0), close));
    }
    if let Some(codings) = coding {
        let codings = String::from_utf8_lossy(codings);
        let last = codings.rsplit(',').next().unwrap_or("").trim();
        if last.eq_ignore_ascii_case("chunked") {
            return Ok((Framing::Chunked, close));
        }
        return Err(Fault(format!(
            "{what} with Transfer-Encoding {codings}: without chunked last its end is the \
             connection's close, which protocol http1 does not frame"
        )));
    }
    match length {
        Some(value) => {
            let text = std::str::from_utf8(value).unwrap_or("").trim();
            let n = text
                .parse::<u64>()
                .map_err(|_| Fault(format!("{what} with a bad Content-Length {text:?}")))?;
            Ok((Framing::Length(n), close))
        }
        None if absent_ok => Ok((Framing::Length(0), close)),
        None => Err(Fault(format!(
            "{what} without Content-Length or chunked Transfer-Encoding: protocol http1 needs \
             one to find the response's end"
        ))),
    }
}

/// Whether a response with this status has no body whatever its headers
/// say (RFC 9112 §6.3: 1xx, 204, 304; responses to HEAD too, never sent).
fn bodiless(status: u16) -> bool {
    (100..200).contains(&status) || status == 204 || status == 304
}

/// The body length a request path names: `/8192` (a query after it is
/// padding), else none.
pub(crate) fn named_body(path: &str) -> Option<u64> {
    let p = path.strip_prefix('/')?;
    p.split(['?', '#']).next()?.parse().ok()
}

/// The first line of `buf`, for a fault's message.
fn first_line(buf: &[u8]) -> String {
    let line = buf
        .split(|&b| b == b'\r' || b == b'\n')
        .next()
        .unwrap_or(buf);
    let line = &line[..line.len().min(60)];
    String::from_utf8_lossy(line).into_owned()
}

/// The driver's half: one request built for the class, responses framed by
/// their Content-Length or chunked body, each one's status kept for the driver.
#[derive(Debug, Clone)]
pub struct Client {
    /// The request's head (a POST's body after it is any bytes).
    head: Arc<[u8]>,
    request_bytes: u64,
    /// The answer stackbench's responder gives (the response size, or one
    /// byte more; see [`body_for`]).
    answer_bytes: u64,
}

impl Client {
    /// Bytes of the answer stackbench's responder gives this request.
    pub fn answer_bytes(&self) -> u64 {
        self.answer_bytes
    }

    /// The request's method and path without its padding, for messages.
    fn request_line(&self) -> String {
        let line = first_line(&self.head);
        let end = line.find(['?', ' ']).map_or(line.len(), |space| {
            // The method's space comes first; end at the path's end.
            line[space + 1..]
                .find(['?', ' '])
                .map_or(line.len(), |e| space + 1 + e)
        });
        line[..end].to_string()
    }
}

/// HTTP/1.1's row of the protocol table (`crate::app::row`).
#[derive(Debug, Clone, Copy)]
pub struct Http1;

impl Protocol for Http1 {
    const PROTOCOL: AppProtocol = AppProtocol::Http1;
    type Client = Client;
    type Server = Server;
    const ALPN: &'static [&'static str] = &["http/1.1"];
    const PROBE: Option<crate::app::Probe> = Some(probe::probe);
}

impl Codec for Client {
    const FRAMED: bool = true;
    const PROTOCOL: AppProtocol = AppProtocol::Http1;
    type State = Parse;
    const STATUS: bool = true;

    /// The status line's code, read with the head it came in.
    #[inline]
    fn status(&self, state: &Parse) -> u16 {
        state.status()
    }

    /// A server that says `Connection: close` (nginx does with a 500)
    /// closes after its answer: the client connects anew for its next
    /// request, as wrk does, instead of sending into a closed connection.
    #[inline]
    fn server_closes(&self, state: &Parse) -> bool {
        state.closes()
    }

    fn of(shape: &ClassShape) -> Client {
        let (head, body) = request_for(shape);
        let close = shape.server_closes();
        let answer = body_for(shape.response_bytes, close);
        Client {
            request_bytes: head.len() as u64 + body,
            head: head.into(),
            answer_bytes: response_head_bytes(answer, close) + answer,
        }
    }

    #[inline]
    fn request_bytes(&self) -> u64 {
        self.request_bytes
    }

    #[inline]
    fn fill_request(&self, _state: &Parse, offset: u64, out: &mut [u8]) {
        fill(&self.head, offset, out);
    }

    fn response_seen(&self, state: &Parse, _remaining: u64) -> Option<String> {
        state.seen()
    }

    /// The first read of a response: the expected answer, and at least
    /// [`MIN_HEAD_READ`], so a server whose head is longer (nginx's) is read
    /// in one call too. Reading past the answer cannot take another's bytes:
    /// requests are not pipelined, so nothing else is on the way.
    #[inline]
    fn response_bytes(&self) -> u64 {
        self.answer_bytes.max(MIN_HEAD_READ)
    }

    fn response_left(
        &self,
        state: &mut Parse,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        state.feed(chunk, self.answer_bytes, "response", |buf| {
            let mut headers = [EMPTY_HEADER; MAX_HEADERS];
            let mut response = httparse::Response::new(&mut headers);
            let len = match response.parse(buf) {
                Ok(Status::Complete(len)) => len,
                Ok(Status::Partial) => return Ok(None),
                Err(e) => {
                    return Err(Fault(format!(
                        "malformed HTTP response to {} ({e}): it begins {:?}",
                        self.request_line(),
                        first_line(buf)
                    )))
                }
            };
            let status = response.code.unwrap_or(0);
            let (framing, close) = framing(response.headers, "response", false, bodiless(status))?;
            Ok(Some(Head {
                len,
                framing,
                status,
                // HTTP/1.0 closes unless it says keep-alive (never asked
                // for here).
                close: close || response.version == Some(0),
            }))
        })
    }
}

/// The responder's half: requests framed by their heads and Content-Length
/// bodies, answered `200 OK` with a body of the length the path names
/// (`/8192`), else of the test's response size.
#[derive(Debug, Clone, Copy)]
pub struct Server {
    pub request_bytes: u64,
    pub response_bytes: u64,
}

/// A server connection's parse and the answer it owes.
#[derive(Debug, Default)]
pub struct ServerState {
    parse: Parse,
    answer: Vec<u8>,
    answer_body: u64,
    close: bool,
}

impl Server {
    /// The answer to a request whose path named a body length `named`
    /// (`close`: it asked to close). Its head is written per request (a few
    /// dozen bytes into the connection's buffer, which keeps its capacity).
    fn answer(&self, state: &mut ServerState, named: Option<u64>, close: bool) {
        use std::io::Write;
        let body = named.unwrap_or_else(|| body_for(self.response_bytes, close));
        state.answer.clear();
        let close_line = if close { CLOSE_LINE } else { "" };
        let _ = write!(state.answer, "{OK_HEAD}{body}\r\n{close_line}\r\n");
        state.answer_body = body;
        state.close = close;
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
        self.request_bytes
    }

    fn request_left(
        &self,
        state: &mut ServerState,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        let mut asked: Option<(Option<u64>, bool)> = None;
        let left = state
            .parse
            .feed(chunk, self.request_bytes, "request", |buf| {
                let mut headers = [EMPTY_HEADER; MAX_HEADERS];
                let mut request = httparse::Request::new(&mut headers);
                let len = match request.parse(buf) {
                    Ok(Status::Complete(len)) => len,
                    Ok(Status::Partial) => return Ok(None),
                    Err(e) => {
                        return Err(Fault(format!(
                            "malformed HTTP request ({e}): it begins {:?}",
                            first_line(buf)
                        )))
                    }
                };
                let (framing, close) = framing(request.headers, "request", true, false)?;
                asked = Some((named_body(request.path.unwrap_or("/")), close));
                Ok(Some(Head {
                    len,
                    framing,
                    status: 0,
                    close,
                }))
            })?;
        if let Some((named, close)) = asked {
            self.answer(state, named, close);
        }
        Ok(left)
    }

    #[inline]
    fn response_bytes(&self, state: &ServerState) -> u64 {
        state.answer.len() as u64 + state.answer_body
    }

    #[inline]
    fn fill_response(&self, state: &ServerState, offset: u64, out: &mut [u8]) {
        fill(&state.answer, offset, out);
    }

    #[inline]
    fn closes(&self, state: &ServerState) -> bool {
        state.close
    }
}

mod probe;
#[cfg(test)]
mod tests;
