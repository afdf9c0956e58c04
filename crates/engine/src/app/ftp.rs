//! FTP (RFC 959; EPSV, RFC 2428) as an application protocol: the driver's
//! [`Client`] codec, which logs on to an FTP server and moves one binary
//! file per transaction on a passive data connection of its own, and the
//! row ([`row::Ftp`]).
//!
//! What a transaction is. The performance summary's FTP rows ("FTP Server",
//! binary and ASCII put and get, a large file transfer) measure transfers,
//! so every FTP transaction here is one: `EPSV` (or `PASV`, after a server
//! refused EPSV once on the connection), the data connection to the port
//! the answer named, `RETR` or `STOR`, the file's bytes on the data
//! connection until its end, and the server's `226`. The notation's larger
//! size is the file: `STR3(1B/20MB)` retrieves 20 MB files (a get, the
//! server sends), `STR3(20MB/1B)` stores them (a put); a tie is a RETR. RR
//! is the same transfer on a control connection kept logged on (a small
//! file: `RR10(100B/8kB)` gets 8 kB files), and CRR logs on, transfers once
//! and logs off (`QUIT`, answered `221`, after which the server closes: the
//! `crr_close server` default), its latency from the connect to the `221`.
//! The smaller size names nothing: the commands and answers on the control
//! connection are what FTP says they are, counted in the bytes moved (see
//! docs/transports.md) but not in the notation's sizes.
//!
//! Log-on. The server speaks first (`220`); the client sends `USER
//! anonymous` and, when asked (`331`), `PASS stackbench@`, then `TYPE I`
//! (binary: image type, no line-end conversion). A server that greets with
//! anything but an FTP reply, refuses the log-on (`530`) or binary type is
//! a fault in one line, as is a transfer it refuses (`550`: no such file,
//! or no permission to store) or a file of another size than the
//! notation's.
//!
//! Files. The target's path names where they are: none or a directory
//! (`ftp://HOST:PORT/` or `ftp://HOST:PORT/pub/`): the file named by its
//! size in bytes there (`20000000`), as the http1 codec asks nginx for
//! `/N`; a path that does not end in `/` names the one file every transfer
//! moves.
//!
//! The data connection is a capability the row asks of the driver
//! ([`Codec::DATA`]): the codec says which port of the control connection's
//! peer to connect to ([`Turn::OpenData`]; the address in a PASV answer is
//! not used, as most clients do, so a server behind NAT still works), and
//! what the data connection carries ([`Turn::ReceiveData`],
//! [`Turn::SendData`]); the driver's machine counts its bytes as the
//! transaction's payload.

pub mod row;

use super::{grouped, ClassShape, Codec, Fault, Setup, Turn};
use stackbench_model::{AppProtocol, Kind};

/// Bytes of a control reply the client reads at a time.
const REPLY_READ_BYTES: u64 = 4096;
/// A control reply longer than this is not an FTP server's.
const MAX_REPLY_BYTES: usize = 64 * 1024;
/// The log-on every transfer runs under.
const USER: &str = "anonymous";
const USER_COMMAND: &str = "USER anonymous\r\n";
const PASS_COMMAND: &str = "PASS stackbench@\r\n";

/// Which way the file goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The server sends it (a get).
    Retr,
    /// The client sends it (a put).
    Stor,
}

/// The driver's half: one class's transfers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub direction: Direction,
    /// The file's bytes: the notation's larger size.
    pub file_bytes: u64,
    /// Its name in the commands.
    pub file: String,
    /// `RETR <file>\r\n` or `STOR <file>\r\n`, made once per class: the
    /// commands a connection sends are borrowed, never built per send.
    transfer: String,
    /// CRR: log off after the transfer.
    pub quit: bool,
}

/// Which command a connection sent last (or sends next).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum At {
    /// Waiting for the server's greeting.
    #[default]
    Greeting,
    User,
    Pass,
    Type,
    Epsv,
    Pasv,
    /// RETR or STOR.
    Transfer,
    /// The file is on the data connection; the transfer's end is answered next.
    Data,
    Quit,
}

/// One control connection's state.
#[derive(Debug, Default)]
pub struct Session {
    at: At,
    /// The server refused EPSV on this connection: PASV from then on.
    pasv: bool,
    /// Control bytes received and not yet read as a reply.
    buf: Vec<u8>,
    /// The last complete reply: its code and its last line.
    code: u16,
    line: String,
}

impl Client {
    /// The command a connection at `at` sends.
    fn command(&self, at: At) -> &str {
        match at {
            At::Greeting | At::Data => "",
            At::User => USER_COMMAND,
            At::Pass => PASS_COMMAND,
            At::Type => "TYPE I\r\n",
            At::Epsv => "EPSV\r\n",
            At::Pasv => "PASV\r\n",
            At::Transfer => &self.transfer,
            At::Quit => "QUIT\r\n",
        }
    }

    /// The first command of a transfer on a connection.
    fn first(state: &Session) -> At {
        if state.pasv {
            At::Pasv
        } else {
            At::Epsv
        }
    }

    /// A fault naming the reply `state` holds, after `what`.
    fn refused(&self, state: &Session, what: &str, fix: &str) -> Fault {
        Fault(format!(
            "{what} was answered '{} {}'{fix}",
            state.code,
            clip(&state.line)
        ))
    }

    /// What the transfer does after the reply `state` holds.
    fn after_reply(&self, state: &mut Session) -> Result<Turn, Fault> {
        let code = state.code;
        match state.at {
            At::Epsv if code == 229 => {
                let port = epsv_port(&state.line).ok_or_else(|| {
                    Fault(format!(
                        "EPSV's answer '229 {}' names no port as (|||PORT|)",
                        clip(&state.line)
                    ))
                })?;
                state.at = At::Transfer;
                Ok(Turn::OpenData(port))
            }
            // Not implemented or not understood: passive mode the old way.
            At::Epsv if matches!(code, 500 | 501 | 502 | 504 | 522) => {
                state.pasv = true;
                state.at = At::Pasv;
                Ok(Turn::Command)
            }
            At::Epsv => Err(self.refused(state, "EPSV", "")),
            At::Pasv if code == 227 => {
                let port = pasv_port(&state.line).ok_or_else(|| {
                    Fault(format!(
                        "PASV's answer '227 {}' names no address as (h1,h2,h3,h4,p1,p2)",
                        clip(&state.line)
                    ))
                })?;
                state.at = At::Transfer;
                Ok(Turn::OpenData(port))
            }
            At::Pasv => Err(self.refused(
                state,
                "PASV",
                ": the server offers no passive data connection",
            )),
            At::Transfer if code == 150 || code == 125 => {
                state.at = At::Data;
                Ok(match self.direction {
                    Direction::Retr => Turn::ReceiveData(self.file_bytes),
                    Direction::Stor => Turn::SendData(self.file_bytes),
                })
            }
            At::Transfer => Err(self.refused(state, &self.command_line(), &self.fix())),
            At::Data if code == 226 || code == 250 => {
                if self.quit {
                    state.at = At::Quit;
                    return Ok(Turn::Command);
                }
                state.at = Self::first(state);
                Ok(Turn::Complete)
            }
            At::Data => {
                Err(self.refused(state, &format!("the end of {}", self.command_line()), ""))
            }
            At::Quit if code == 221 => {
                state.at = Self::first(state);
                Ok(Turn::Complete)
            }
            At::Quit => Err(self.refused(state, "QUIT", "")),
            // Log-on replies come through `setup_received`.
            At::Greeting | At::User | At::Pass | At::Type => {
                Err(self.refused(state, "a command after the log-on", ""))
            }
        }
    }

    /// `RETR 20000000`, as a fault names it.
    fn command_line(&self) -> String {
        self.command(At::Transfer).trim_end().to_string()
    }

    /// What to change when the server refused the transfer.
    fn fix(&self) -> String {
        let n = grouped(self.file_bytes);
        match self.direction {
            Direction::Retr => format!(
                ": the server needs a file {} of {n} bytes (the notation's size) readable by \
                 the log-on user {USER}, or give --target ftp://HOST:PORT/DIR/ where it is",
                self.file
            ),
            Direction::Stor => format!(
                ": the server must let the log-on user {USER} store {} ({n} bytes, the \
                 notation's size; vsftpd: anon_upload_enable, anon_other_write_enable and \
                 a writable DIR in --target ftp://HOST:PORT/DIR/)",
                self.file
            ),
        }
    }

    /// The log-on's next step after the reply `state` holds.
    fn logon_step(&self, state: &mut Session) -> Result<Setup, Fault> {
        let code = state.code;
        match state.at {
            At::Greeting if code == 220 => {
                state.at = At::User;
                Ok(Setup::Send)
            }
            // "Service ready in n minutes": the 220 follows.
            At::Greeting if code == 120 => Ok(Setup::Read),
            At::Greeting => Err(self.refused(
                state,
                "the connection",
                ": the server is not ready for an FTP session",
            )),
            At::User | At::Pass if code == 230 || code == 202 => {
                state.at = At::Type;
                Ok(Setup::Send)
            }
            At::User if code == 331 => {
                state.at = At::Pass;
                Ok(Setup::Send)
            }
            At::User | At::Pass => Err(self.refused(
                state,
                &format!("the log-on as {USER}"),
                ": the server must allow anonymous log-on (vsftpd: anonymous_enable=YES)",
            )),
            At::Type if code == 200 => {
                state.at = Self::first(state);
                Ok(Setup::Done)
            }
            At::Type => Err(self.refused(state, "TYPE I (binary)", "")),
            _ => Err(self.refused(state, "the log-on", "")),
        }
    }
}

impl Session {
    /// Takes the first complete reply out of the received bytes (`false`:
    /// none is complete yet). A reply is one line `DDD text`, or lines
    /// from `DDD-text` to the first beginning `DDD ` (RFC 959 4.2).
    fn take_reply(&mut self) -> Result<bool, Fault> {
        let mut start = 0;
        let mut first: Option<[u8; 3]> = None;
        while let Some(i) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let line = &self.buf[start..start + i];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let end = start + i + 1;
            let head = line.get(..4);
            let code_of = |h: &[u8]| -> Option<[u8; 3]> {
                h[..3]
                    .iter()
                    .all(u8::is_ascii_digit)
                    .then(|| [h[0], h[1], h[2]])
            };
            match (first, head) {
                (None, Some(h)) if code_of(h).is_some() && (h[3] == b' ' || h[3] == b'-') => {
                    let code = code_of(h).expect("checked");
                    if h[3] == b' ' {
                        return Ok(self.finish(code, line.len(), end));
                    }
                    first = Some(code);
                }
                (None, _) if line.len() == 3 && code_of(line).is_some() => {
                    let code = code_of(line).expect("checked");
                    return Ok(self.finish(code, 3, end));
                }
                (None, _) => {
                    return Err(Fault(format!(
                        "the server sent '{}', not an FTP reply (three digits, then a space \
                         or '-'): is the target an FTP server?",
                        clip(&String::from_utf8_lossy(line))
                    )))
                }
                (Some(code), Some(h)) if h[..3] == code && h[3] == b' ' => {
                    return Ok(self.finish(code, line.len(), end));
                }
                (Some(_), _) => {}
            }
            start = end;
        }
        if self.buf.len() > MAX_REPLY_BYTES {
            return Err(Fault(format!(
                "the server sent {} bytes without completing an FTP reply: is the target an \
                 FTP server?",
                grouped(self.buf.len() as u64)
            )));
        }
        Ok(false)
    }

    /// Keeps the reply whose last line ends at `end` (its text `len`
    /// bytes from the line's start) and drops its bytes.
    fn finish(&mut self, code: [u8; 3], len: usize, end: usize) -> bool {
        let line_start = self.buf[..end - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let text = &self.buf[line_start..line_start + len];
        // Into the same String each time: no allocation per reply once it
        // has grown to a reply line's length.
        self.line.clear();
        self.line
            .push_str(&String::from_utf8_lossy(text.get(4..).unwrap_or_default()));
        self.code = code.iter().fold(0u16, |n, d| n * 10 + u16::from(d - b'0'));
        self.buf.drain(..end);
        true
    }
}

/// `text` cut to one short line for a fault.
fn clip(text: &str) -> String {
    let t = text.trim();
    if t.chars().count() > 80 {
        format!("{}…", t.chars().take(80).collect::<String>())
    } else {
        t.to_string()
    }
}

/// The port of an EPSV answer: `Entering Extended Passive Mode (|||6446|)`.
pub fn epsv_port(line: &str) -> Option<u16> {
    let open = line.find('(')?;
    let inner = &line[open + 1..line[open..].find(')')? + open];
    let d = inner.chars().next()?;
    let parts: Vec<&str> = inner.split(d).collect();
    // (<d><d><d>port<d>): the protocol and address fields are empty.
    if parts.len() != 5 {
        return None;
    }
    parts[3].parse().ok().filter(|&p| p != 0)
}

/// The port of a PASV answer: `Entering Passive Mode (h1,h2,h3,h4,p1,p2)`
/// (some servers leave out the parentheses).
pub fn pasv_port(line: &str) -> Option<u16> {
    let start = line.find(|c: char| c.is_ascii_digit())?;
    let numbers: Vec<u16> = line[start..]
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .take(6)
        .map(|s| s.parse().ok())
        .collect::<Option<_>>()?;
    if numbers.len() != 6 || numbers.iter().any(|&n| n > 255) {
        return None;
    }
    Some(numbers[4] * 256 + numbers[5]).filter(|&p| p != 0)
}

/// Writes bytes `offset..offset + out.len()` of `text` into `out`.
fn fill(text: &str, offset: u64, out: &mut [u8]) {
    let bytes = text.as_bytes();
    let from = (offset as usize).min(bytes.len());
    let n = out.len().min(bytes.len() - from);
    out[..n].copy_from_slice(&bytes[from..from + n]);
}

impl Codec for Client {
    const FRAMED: bool = true;
    const PROTOCOL: AppProtocol = AppProtocol::Ftp;
    type State = Session;
    const SETUP: bool = true;
    const DATA: bool = true;
    const RESPONSE_NAME: &'static str = "reply";
    const SETUP_NAME: &'static str = "log-on";

    fn of(shape: &ClassShape) -> Client {
        let direction = if shape.request_bytes > shape.response_bytes {
            Direction::Stor
        } else {
            Direction::Retr
        };
        let file_bytes = shape.request_bytes.max(shape.response_bytes);
        let path = shape.target.and_then(|t| t.path.as_deref());
        let file = match path {
            None => file_bytes.to_string(),
            Some(dir) if dir.ends_with('/') => format!("{dir}{file_bytes}"),
            Some(file) => file.to_string(),
        };
        let verb = match direction {
            Direction::Retr => "RETR",
            Direction::Stor => "STOR",
        };
        Client {
            direction,
            file_bytes,
            transfer: format!("{verb} {file}\r\n"),
            file,
            quit: shape.kind == Kind::Crr,
        }
    }

    /// The first command of a transfer (`EPSV`); what a connection sends
    /// is [`Codec::request_len`]'s.
    fn request_bytes(&self) -> u64 {
        self.command(At::Epsv).len() as u64
    }

    fn request_len(&self, state: &Session) -> u64 {
        self.command(state.at).len() as u64
    }

    fn fill_request(&self, state: &Session, offset: u64, out: &mut [u8]) {
        fill(self.command(state.at), offset, out);
    }

    fn response_bytes(&self) -> u64 {
        REPLY_READ_BYTES
    }

    fn response_left(
        &self,
        state: &mut Session,
        _remaining: u64,
        _n: u64,
        chunk: &[u8],
    ) -> Result<u64, Fault> {
        state.buf.extend_from_slice(chunk);
        if state.take_reply()? {
            Ok(0)
        } else {
            Ok(REPLY_READ_BYTES)
        }
    }

    fn response_seen(&self, state: &Session, _remaining: u64) -> Option<String> {
        (!state.buf.is_empty()).then(|| format!("'{}'", clip(&String::from_utf8_lossy(&state.buf))))
    }

    fn turn(&self, state: &mut Session) -> Result<Turn, Fault> {
        self.after_reply(state)
    }

    fn data_bytes(&self) -> u64 {
        self.file_bytes
    }

    fn data_done(&self, state: &mut Session, moved: u64) -> Result<Turn, Fault> {
        if moved != self.file_bytes {
            let (what, fix) = match self.direction {
                Direction::Retr => (
                    "the server sent",
                    format!(
                        ": its file {} is not of the notation's size; make it {} bytes",
                        self.file,
                        grouped(self.file_bytes)
                    ),
                ),
                Direction::Stor => ("the data connection took", String::new()),
            };
            return Err(Fault(format!(
                "{} of {} bytes: {what} {}{fix}",
                self.command_line(),
                grouped(self.file_bytes),
                grouped(moved)
            )));
        }
        // The transfer's end may have come with the reply to the command.
        if state.take_reply()? {
            return self.after_reply(state);
        }
        Ok(Turn::Reply)
    }

    fn setup_open(&self, state: &mut Session) -> Setup {
        state.at = At::Greeting;
        Setup::Read
    }

    fn setup_received(&self, state: &mut Session, chunk: &[u8]) -> Result<Setup, Fault> {
        state.buf.extend_from_slice(chunk);
        loop {
            if !state.take_reply()? {
                return Ok(Setup::Read);
            }
            match self.logon_step(state)? {
                // "120 ready in n minutes": its 220 may be in the same chunk.
                Setup::Read => continue,
                step => return Ok(step),
            }
        }
    }

    fn setup_bytes(&self, state: &Session) -> u64 {
        self.command(state.at).len() as u64
    }

    fn fill_setup(&self, state: &Session, offset: u64, out: &mut [u8]) {
        fill(self.command(state.at), offset, out);
    }

    fn setup_seen(&self, state: &Session) -> Option<String> {
        (state.at != At::Greeting || !state.buf.is_empty()).then(|| {
            if state.buf.is_empty() {
                format!("'{} {}'", state.code, clip(&state.line))
            } else {
                format!("'{}'", clip(&String::from_utf8_lossy(&state.buf)))
            }
        })
    }

    fn setup_failure(&self, state: &Session) -> &'static str {
        match state.at {
            At::Greeting => "not_ftp",
            At::User | At::Pass => "login_refused",
            _ => "fault",
        }
    }
}

#[cfg(test)]
mod tests;
