//! HTTP/1.1's check of a plain server before a run (its row's `PROBE`):
//! one `GET` of the target's path, whose answer must begin `HTTP/`.

use std::io::ErrorKind;

use crate::app::{ProbeTarget, Wire};

/// Sends one `GET` of the target's path and reads the answer's first
/// bytes: `Err` says what came back instead of `HTTP/`.
pub fn probe(s: &mut dyn Wire, t: &ProbeTarget<'_>) -> Result<(), String> {
    let path = t.path;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        t.authority
    );
    let path_line = format!("GET {path}");
    s.write_all(request.as_bytes())
        .map_err(|e| format!("{path_line} could not be sent ({e})"))?;
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while got.len() < 5 {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(format!("no answer to {path_line} within {} s", t.timeout_s))
            }
            Err(e) => return Err(format!("{path_line} was answered by an error ({e})")),
        }
    }
    if got.starts_with(b"HTTP/") {
        return Ok(());
    }
    if got.is_empty() {
        return Err(format!(
            "it closed the connection without answering {path_line}"
        ));
    }
    let line = String::from_utf8_lossy(&got);
    let line = line.lines().next().unwrap_or_default();
    Err(format!("its answer to {path_line} begins {line:?}"))
}
