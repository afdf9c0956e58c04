//! HTTP/2's check of a plain server before a run (its row's `PROBE`): over
//! TLS, that ALPN settled `h2`; then the preface, SETTINGS and one GET of
//! the target's path, whose answer must be HTTP/2 frames beginning with
//! the server's SETTINGS and bringing the stream's HEADERS.

use std::io::ErrorKind;

use super::{
    block, frame, index, Event, Head, Reader, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PREFACE,
    SETTINGS,
};
use crate::app::{ProbeTarget, Wire};

/// Most bytes read before the stream's HEADERS must have come.
const MAX_PROBE_BYTES: usize = 1 << 20;

pub fn probe(s: &mut dyn Wire, t: &ProbeTarget<'_>) -> Result<(), String> {
    if t.tls && t.alpn != Some("h2") {
        return Err(format!(
            "its TLS handshake settled ALPN {} rather than h2: it does not serve HTTP/2 over \
             TLS (nginx: listen … ssl http2, or http2 on)",
            t.alpn.unwrap_or("(none)")
        ));
    }
    let path_line = format!("GET {}", t.path);
    let mut request = PREFACE.to_vec();
    frame(&mut request, SETTINGS, 0, 0, &[]);
    let scheme = if t.tls {
        index::SCHEME_HTTPS
    } else {
        index::SCHEME_HTTP
    };
    let block = block(
        &[index::METHOD_GET, scheme],
        &[
            (index::PATH, t.path.as_bytes()),
            (index::AUTHORITY, t.authority.as_bytes()),
        ],
    );
    frame(&mut request, HEADERS, END_HEADERS | END_STREAM, 1, &block);
    s.write_all(&request)
        .map_err(|e| format!("{path_line} could not be sent ({e})"))?;
    let mut reader = Reader::default();
    let mut first: Option<Head> = None;
    let mut answered = false;
    let mut got = 0usize;
    let mut buf = [0u8; 4096];
    while !answered {
        let n = match s.read(&mut buf) {
            Ok(0) if got == 0 => {
                return Err(format!(
                    "it closed the connection without answering the HTTP/2 preface and \
                     {path_line}"
                ))
            }
            Ok(0) => {
                return Err(format!(
                    "it closed the connection before answering {path_line}"
                ))
            }
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(format!("no answer to {path_line} within {} s", t.timeout_s))
            }
            Err(e) => return Err(format!("{path_line} was answered by an error ({e})")),
        };
        if got == 0 && buf[..n].starts_with(b"HTTP/") {
            let text = String::from_utf8_lossy(&buf[..n]);
            return Err(format!(
                "it answered the HTTP/2 preface in HTTP/1.1 ({:?}): it takes no h2 with prior \
                 knowledge on clear text (nginx: listen … http2)",
                text.lines().next().unwrap_or_default()
            ));
        }
        got += n;
        let mut fault = None;
        let _ = reader.feed(&buf[..n], |event| {
            if let Event::Frame(head, payload) = event {
                if first.is_none() {
                    first = Some(head);
                }
                if head.kind == HEADERS && head.stream == 1 {
                    answered = true;
                }
                if head.kind == GOAWAY && fault.is_none() {
                    let (_, code, debug) = super::goaway(payload);
                    fault = Some(format!(
                        "it answered {path_line} with GOAWAY {} (code {code}) {debug:?}",
                        super::error_name(code)
                    ));
                }
            }
            Ok(())
        });
        if let Some(f) = fault {
            return Err(f);
        }
        if first.is_some_and(|h| h.kind != SETTINGS) {
            let shown = String::from_utf8_lossy(&buf[..n.min(40)]).into_owned();
            return Err(format!("its answer to the HTTP/2 preface begins {shown:?}"));
        }
        if got > MAX_PROBE_BYTES && !answered {
            return Err(format!(
                "no HEADERS for {path_line} in its first {got} bytes"
            ));
        }
    }
    Ok(())
}
