//! The run token: a secret shared by the processes of one run, which every
//! control connection (driver ↔ responder) and every agent connection
//! (controller ↔ agent) proves before anything else is read on it. The
//! token never crosses the wire: each side proves it holds it with an HMAC
//! (SHA-256) over both sides' fresh nonces, as iperf3's authentication and
//! TLS-PSK do, so a recorded handshake proves nothing later.
//!
//! Exchange, one line of JSON each, before the channel's own messages:
//!
//! 1. the connecting side (client) sends `start` with its nonce and the
//!    channel's name (`control`, `agents`);
//! 2. the listening side (server) answers `challenge` with its nonce and
//!    its proof (HMAC of the server's role, the channel and both nonces),
//!    or `open` when it holds no token (a loopback `serve` without one, or
//!    `serve --open`);
//! 3. the client checks that proof — a server with another token is
//!    refused there — and sends `proof` with its own (HMAC of the client's
//!    role; none when it has no token), followed at once by the channel's
//!    first message (pipelined: the handshake costs one round trip);
//! 4. the server answers `ok`, or `refused` with the reason, and counts it.
//!
//! The role and channel inside every MAC keep a proof from being replayed
//! in the other direction or on the other channel. The token authenticates
//! who opens a connection; it does not encrypt or sign what follows (the
//! measured traffic and the control messages travel in clear, as before).
//!
//! HMAC, SHA-256, the nonces and the constant-time comparison are
//! OpenSSL's, already linked for transport `tls`: no new dependency.

use std::io::{self, BufRead, Read, Write};
use std::path::Path;

use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::sign::Signer;
use serde::{Deserialize, Serialize};

/// The environment variable that carries the token (hex) to the processes a
/// run starts: its responders and local, lab and Slurm agents; a Kubernetes
/// Secret sets it in the agents' pods. An environment is readable only by
/// its process's user (/proc/PID/environ is mode 0400), unlike arguments.
pub const TOKEN_ENV: &str = "STACKBENCH_TOKEN";

/// Bytes of a generated token and of each nonce.
const RANDOM_BYTES: usize = 32;
/// Fewest bytes a token file must hold.
const MIN_FILE_BYTES: usize = 16;
/// Longest handshake line read: a peer cannot make the listener allocate more.
const MAX_LINE_BYTES: u64 = 4096;
/// The label inside every MAC, naming this handshake's version.
const LABEL: &str = "stackbench-token-1";
/// How the listening side's refusal of a peer of another channel begins
/// (the channel's name and " port" follow): the peer knows by it that it
/// reached another kind of listener, not one with another token.
pub const OTHER_CHANNEL: &str = "opened another channel's connection on the ";

/// A run's shared secret. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({} bytes)", self.0.len())
    }
}

impl Token {
    /// A fresh random token (OpenSSL's CSPRNG).
    pub fn generate() -> Token {
        Token(random_bytes())
    }

    /// The token in `path`: its bytes without trailing white space, at least
    /// 16 of them, in a file only its owner may read (as ssh wants of a key).
    /// The error is one line naming the file and the fix.
    pub fn from_file(path: &Path) -> Result<Token, String> {
        use std::os::unix::fs::PermissionsExt;
        let shown = path.display();
        let make = "make one with `head -c 32 /dev/urandom | base64 > FILE; chmod 600 FILE`";
        let meta = std::fs::metadata(path).map_err(|e| format!("token file {shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("token file {shown}: not a file: {make}"));
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(format!(
                "token file {shown} may be read by others (mode {mode:o}): chmod 600 {shown}"
            ));
        }
        let mut bytes = std::fs::read(path).map_err(|e| format!("token file {shown}: {e}"))?;
        while bytes.last().is_some_and(u8::is_ascii_whitespace) {
            bytes.pop();
        }
        if bytes.len() < MIN_FILE_BYTES {
            return Err(format!(
                "token file {shown} holds {} bytes, fewer than {MIN_FILE_BYTES}: {make}",
                bytes.len()
            ));
        }
        Ok(Token(bytes))
    }

    /// The token in [`TOKEN_ENV`], if set; the error names the variable.
    pub fn from_env() -> Result<Option<Token>, String> {
        match std::env::var(TOKEN_ENV) {
            Ok(hex) => Token::from_hex(&hex)
                .map(Some)
                .ok_or_else(|| format!("{TOKEN_ENV}: not a token (hex, as stackbench sets it)")),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(e) => Err(format!("{TOKEN_ENV}: {e}")),
        }
    }

    /// The token as [`TOKEN_ENV`] carries it (hex).
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// The token from its hex form; `None` when it is not hex or is shorter
    /// than a token file may be.
    pub fn from_hex(text: &str) -> Option<Token> {
        let bytes = unhex(text.trim())?;
        (bytes.len() >= MIN_FILE_BYTES).then_some(Token(bytes))
    }

    /// HMAC-SHA256 under this token of the role, the channel and both
    /// nonces (server's first).
    fn proof(&self, role: &str, channel: &str, server: &str, client: &str) -> Vec<u8> {
        let key = PKey::hmac(&self.0).expect("an HMAC key of any length");
        let mut mac = Signer::new(MessageDigest::sha256(), &key).expect("HMAC-SHA256");
        let message = format!("{LABEL} {role} {channel} {server} {client}");
        mac.sign_oneshot_to_vec(message.as_bytes())
            .expect("HMAC-SHA256 of a short message")
    }

    /// Whether `claimed` (hex) is this token's proof, compared in constant
    /// time.
    fn verifies(
        &self,
        claimed: &str,
        role: &str,
        channel: &str,
        server: &str,
        client: &str,
    ) -> bool {
        let expected = self.proof(role, channel, server, client);
        unhex(claimed)
            .is_some_and(|c| c.len() == expected.len() && openssl::memcmp::eq(&c, &expected))
    }
}

fn random_bytes() -> Vec<u8> {
    let mut buf = vec![0u8; RANDOM_BYTES];
    openssl::rand::rand_bytes(&mut buf).expect("OpenSSL's random generator");
    buf
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// One handshake line. Unknown fields are ignored: a client may add the
/// fields that make an older peer of its channel refuse it in that
/// channel's own words (see [`prove`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "auth", rename_all = "snake_case")]
enum Auth {
    Start { channel: String, nonce: String },
    Challenge { nonce: String, proof: String },
    Open,
    Proof { proof: Option<String> },
    Ok,
    Refused { reason: String },
}

/// Reads one handshake line (bounded); `Ok(None)` at end of stream.
fn read_line(input: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = Vec::new();
    let n = Read::take(&mut *input, MAX_LINE_BYTES + 1).read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.len() as u64 > MAX_LINE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "handshake line too long",
        ));
    }
    Ok(Some(String::from_utf8_lossy(&line).trim_end().to_string()))
}

fn write_line(out: &mut impl Write, value: &impl Serialize) -> io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

fn parse(line: &str) -> Option<Auth> {
    serde_json::from_str(line).ok()
}

/// What the listening side made of a connection's handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// The peer proved the token (or this side holds none): read on.
    Admitted,
    /// The peer was refused: it was told `reason` in one line; the caller
    /// counts it and says so (one line) on its side.
    Refused(String),
    /// The first line was not a handshake (an older stackbench, or not
    /// stackbench): it is returned so that the caller can refuse the peer
    /// in its channel's own words, which an older peer understands.
    Foreign(String),
}

/// The listening side of the handshake on `channel`, with `token` (`None`:
/// open, every peer admitted). Reads nothing beyond the handshake; the
/// caller bounds how long it waits (a read timeout on the socket).
pub fn admit(
    input: &mut impl BufRead,
    out: &mut impl Write,
    channel: &str,
    token: Option<&Token>,
) -> io::Result<Admission> {
    let Some(first) = read_line(input)? else {
        return Ok(Admission::Refused(
            "closed the connection without a word".to_string(),
        ));
    };
    let Some(Auth::Start {
        channel: theirs,
        nonce: client,
    }) = parse(&first)
    else {
        return Ok(Admission::Foreign(first));
    };
    if theirs != channel {
        // The peer's words are not echoed: they reach the operator's terminal.
        let reason = format!("{OTHER_CHANNEL}{channel} port");
        write_line(
            out,
            &Auth::Refused {
                reason: reason.clone(),
            },
        )?;
        return Ok(Admission::Refused(reason));
    }
    let Some(token) = token else {
        write_line(out, &Auth::Open)?;
        return Ok(Admission::Admitted);
    };
    let server = hex(&random_bytes());
    let proof = hex(&token.proof("server", channel, &server, &client));
    write_line(
        out,
        &Auth::Challenge {
            nonce: server.clone(),
            proof,
        },
    )?;
    let refusal = match read_line(input)?.as_deref().map(parse) {
        None => "closed the connection during the token handshake".to_string(),
        Some(Some(Auth::Proof { proof: Some(p) })) => {
            if token.verifies(&p, "client", channel, &server, &client) {
                write_line(out, &Auth::Ok)?;
                return Ok(Admission::Admitted);
            }
            "proved another token than this run's".to_string()
        }
        Some(Some(Auth::Proof { proof: None })) => "has no token".to_string(),
        // The peer refused this side's proof: it holds another token (its
        // words are not echoed: they reach the operator's terminal).
        Some(Some(Auth::Refused { .. })) => {
            return Ok(Admission::Refused(
                "holds another token (it refused this side's proof)".to_string(),
            ))
        }
        Some(_) => "sent something else than its proof".to_string(),
    };
    write_line(
        out,
        &Auth::Refused {
            reason: refusal.clone(),
        },
    )?;
    Ok(Admission::Refused(refusal))
}

/// What the connecting side made of the listening side's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proved {
    /// The server proved the token and has the client's proof: its verdict
    /// ([`verdict`]) follows, after whatever the client sends next.
    Challenged,
    /// The server holds no token (it said so): nothing was proved either
    /// way, no verdict follows.
    Open,
}

/// Why the connecting side's handshake failed.
#[derive(Debug)]
pub enum Refusal {
    /// The server refused this side (`reason` in its words), or this side
    /// refused the server (its proof was wrong, or it is open where this
    /// side requires a token).
    Refused(String),
    /// The server answered in its channel's own words, not the handshake's
    /// (an older stackbench): the line, for the caller to read.
    Foreign(String),
    /// The server closed the connection before answering.
    Closed,
    Io(io::Error),
}

impl From<io::Error> for Refusal {
    fn from(e: io::Error) -> Self {
        Refusal::Io(e)
    }
}

/// The connecting side of the handshake on `channel`. `greeting` holds extra
/// fields for the `start` line (the channel's hello fields, so that an older
/// peer refuses it in its own words); `require` refuses a server that holds
/// no token. On `Ok(Challenged)` the client's proof has been sent and the
/// caller sends its first message before reading the [`verdict`].
pub fn prove(
    input: &mut impl BufRead,
    out: &mut impl Write,
    channel: &str,
    token: Option<&Token>,
    (greeting, require): (serde_json::Map<String, serde_json::Value>, bool),
) -> Result<Proved, Refusal> {
    let client = hex(&random_bytes());
    let mut start = serde_json::to_value(Auth::Start {
        channel: channel.to_string(),
        nonce: client.clone(),
    })
    .map_err(io::Error::other)?;
    if let serde_json::Value::Object(fields) = &mut start {
        for (k, v) in greeting {
            fields.entry(k).or_insert(v);
        }
    }
    write_line(out, &start)?;
    // A handshake line is JSON: a peer whose first byte is anything else
    // is not stackbench (a web server's status line, Telnet negotiation
    // that never ends a line), and is returned as it began.
    match input.fill_buf()? {
        [] => return Err(Refusal::Closed),
        [b'{', ..] => {}
        bytes => {
            let end = bytes
                .iter()
                .position(|&b| b == b'\n')
                .unwrap_or(bytes.len());
            return Err(Refusal::Foreign(
                String::from_utf8_lossy(&bytes[..end])
                    .trim_end()
                    .to_string(),
            ));
        }
    }
    let Some(answer) = read_line(input)? else {
        return Err(Refusal::Closed);
    };
    match parse(&answer) {
        Some(Auth::Open) if require && token.is_some() => Err(Refusal::Refused(
            "holds no token, and this side requires one".into(),
        )),
        Some(Auth::Open) => Ok(Proved::Open),
        Some(Auth::Challenge {
            nonce: server,
            proof,
        }) => {
            let Some(token) = token else {
                write_line(out, &Auth::Proof { proof: None })?;
                return Err(verdict(input).err().unwrap_or(Refusal::Refused(
                    "requires a token, and this side has none".into(),
                )));
            };
            if !token.verifies(&proof, "server", channel, &server, &client) {
                let reason = "its proof is of another token than this side's".to_string();
                write_line(
                    out,
                    &Auth::Refused {
                        reason: reason.clone(),
                    },
                )?;
                return Err(Refusal::Refused(reason));
            }
            let mine = hex(&token.proof("client", channel, &server, &client));
            write_line(out, &Auth::Proof { proof: Some(mine) })?;
            Ok(Proved::Challenged)
        }
        Some(Auth::Refused { reason }) => Err(Refusal::Refused(reason)),
        Some(_) => Err(Refusal::Refused(
            "answered the handshake out of turn".into(),
        )),
        None => Err(Refusal::Foreign(answer)),
    }
}

/// The server's verdict on the client's proof, after [`Proved::Challenged`].
pub fn verdict(input: &mut impl BufRead) -> Result<(), Refusal> {
    match read_line(input)?.as_deref().map(parse) {
        Some(Some(Auth::Ok)) => Ok(()),
        Some(Some(Auth::Refused { reason })) => Err(Refusal::Refused(reason)),
        None => Err(Refusal::Refused(
            "closed the connection during the token handshake".into(),
        )),
        Some(_) => Err(Refusal::Refused(
            "answered the handshake out of turn".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;
    use std::net::{TcpListener, TcpStream};

    /// Runs `admit` on one end of a loopback connection and `prove` (then
    /// a `hello` line, then the verdict) on the other.
    fn handshake(
        server: Option<Token>,
        client: Option<Token>,
        require: bool,
    ) -> (Admission, Result<Proved, Refusal>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut w = s;
            let a = admit(&mut r, &mut w, "control", server.as_ref()).unwrap();
            let mut line = String::new();
            if a == Admission::Admitted {
                // What follows the handshake is the channel's.
                r.read_line(&mut line).unwrap();
            }
            (a, line)
        });
        let s = TcpStream::connect(addr).unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let mut c = prove(
            &mut r,
            &mut w,
            "control",
            client.as_ref(),
            (serde_json::Map::new(), require),
        );
        if let Ok(p) = &c {
            w.write_all(b"hello\n").unwrap();
            if *p == Proved::Challenged {
                c = verdict(&mut r).map(|()| Proved::Challenged);
            }
        }
        let sent_hello = c.is_ok();
        drop((r, w));
        let (a, line) = t.join().unwrap();
        if sent_hello {
            assert_eq!(line, "hello\n");
        }
        (a, c)
    }

    #[test]
    fn the_same_token_is_admitted_and_proved_both_ways() {
        let t = Token::generate();
        let (a, c) = handshake(Some(t.clone()), Some(t), true);
        assert_eq!(a, Admission::Admitted);
        assert_eq!(c.unwrap(), Proved::Challenged);
    }

    #[test]
    fn a_peer_without_the_token_is_refused_on_both_sides() {
        let (a, c) = handshake(Some(Token::generate()), None, false);
        assert_eq!(a, Admission::Refused("has no token".into()));
        assert!(
            matches!(c, Err(Refusal::Refused(ref r)) if r == "has no token"),
            "{c:?}"
        );
    }

    #[test]
    fn another_token_is_refused_on_both_sides() {
        let (a, c) = handshake(Some(Token::generate()), Some(Token::generate()), false);
        let Admission::Refused(why) = a else {
            panic!("admitted with another token: {a:?}");
        };
        assert!(why.starts_with("holds another token"), "{why}");
        let Err(Refusal::Refused(why)) = c else {
            panic!("{c:?}");
        };
        assert!(why.contains("another token"), "{why}");
    }

    #[test]
    fn an_open_server_admits_anyone_unless_the_client_requires_a_token() {
        let (a, c) = handshake(None, None, false);
        assert_eq!((a, c.unwrap()), (Admission::Admitted, Proved::Open));
        let (_, c) = handshake(None, Some(Token::generate()), true);
        assert!(matches!(c, Err(Refusal::Refused(_))), "{c:?}");
    }

    #[test]
    fn a_foreign_first_line_is_handed_back() {
        let mut input = BufReader::new(&br#"{"type":"hello","version":5}"#[..]);
        let a = admit(&mut input, &mut Vec::new(), "control", None).unwrap();
        assert_eq!(
            a,
            Admission::Foreign(r#"{"type":"hello","version":5}"#.into())
        );
    }

    #[test]
    fn proofs_differ_by_role_and_channel_and_never_hold_the_token() {
        let t = Token::from_hex(&"ab".repeat(32)).unwrap();
        let p = t.proof("client", "control", "s", "c");
        assert_ne!(p, t.proof("server", "control", "s", "c"));
        assert_ne!(p, t.proof("client", "agents", "s", "c"));
        assert!(!hex(&p).contains(&t.to_hex()));
        assert_eq!(Token::from_hex(&t.to_hex()), Some(t));
        assert_eq!(Token::from_hex("zz"), None);
        assert!(!format!("{:?}", Token::generate()).contains("Token(["));
    }

    #[test]
    fn token_files_are_checked_in_one_line() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "short\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = Token::from_file(&p).unwrap_err();
        assert!(e.contains("fewer than 16") && !e.contains('\n'), "{e}");
        std::fs::write(&p, "0123456789abcdef0123\n").unwrap();
        assert_eq!(
            Token::from_file(&p).unwrap(),
            Token(b"0123456789abcdef0123".to_vec())
        );
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = Token::from_file(&p).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        let e = Token::from_file(&dir.path().join("none")).unwrap_err();
        assert!(e.starts_with("token file "), "{e}");
    }

    mod hostile {
        use super::super::*;
        use proptest::prelude::*;
        use std::io::BufReader;

        /// Bytes that look like handshake lines often enough to reach past
        /// the first parse: any bytes, or lines of the handshake's tags with
        /// hostile values.
        fn lines() -> impl Strategy<Value = Vec<u8>> {
            let line = prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..600),
                (
                    prop::sample::select(vec!["start", "challenge", "open", "proof", "ok", "refused"]),
                    "[ -~]{0,80}",
                )
                    .prop_map(|(tag, v)| format!(
                        r#"{{"auth":"{tag}","channel":"control","nonce":"{v}","proof":"{v}","reason":"{v}"}}"#
                    )
                    .into_bytes()),
                "[0-9a-f]{0,70}".prop_map(|h| format!(r#"{{"auth":"proof","proof":"{h}"}}"#).into_bytes()),
            ];
            proptest::collection::vec(line, 0..4).prop_map(|ls| ls.join(&b'\n'))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// A listener fed hostile bytes refuses or hands the line back;
            /// it never admits a peer that proved nothing, and never panics.
            #[test]
            fn admit_never_admits_hostile_bytes(bytes in lines()) {
                let token = Token::generate();
                let mut out = Vec::new();
                let got = admit(&mut BufReader::new(&bytes[..]), &mut out, "control", Some(&token));
                prop_assert!(!matches!(got, Ok(Admission::Admitted)), "{got:?}");
                // What it wrote back is handshake lines, each bounded.
                for line in out.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                    prop_assert!(line.len() < 1024);
                    prop_assert!(parse(&String::from_utf8_lossy(line)).is_some());
                }
            }

            /// A connecting side fed a hostile listener's bytes never takes
            /// them for a proof of its token, and never panics.
            #[test]
            fn prove_never_accepts_a_hostile_listener(bytes in lines()) {
                let token = Token::generate();
                let got = prove(
                    &mut BufReader::new(&bytes[..]),
                    &mut Vec::new(),
                    "agents",
                    Some(&token),
                    (serde_json::Map::new(), true),
                );
                prop_assert!(got.is_err(), "{got:?}");
            }
        }
    }
}
