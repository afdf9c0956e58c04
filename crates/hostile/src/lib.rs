//! Hostile bytes into every decoder a peer or a file reaches: one entry per
//! decoder, each taking arbitrary bytes and returning only when the decoder
//! has read them all or refused them. A decoder that panics, loops or grows
//! without bound on some input fails its entry; a refusal (an `Err`, a
//! fault) is the right answer to garbage and passes.
//!
//! The entries are called by the cargo-fuzz targets in `/fuzz` (nightly,
//! the long campaigns) and by this crate's stable test (`tests/replay.rs`:
//! the checked-in seed corpus under `/fuzz/corpus/TARGET`, then fixed-seed
//! mutations of it). [`TARGETS`] is the one list: a target's name is its
//! corpus directory and its cargo-fuzz binary.
//!
//! The protocol halves (HTTP/1.1, TN3270, AMQP 1.0) are driven the way the
//! driver's and responder's machines drive them ([`halves`]): the input's
//! first bytes choose the class (kind, sizes, the protocol's options) and how
//! the peer's bytes are cut into reads; the rest are the peer's bytes.

pub mod halves;
pub mod seeds;

use std::io::{BufReader, Cursor};

use stackbench_engine::app::tn3270::screen::Screen;
use stackbench_engine::control::{self, Reply, Request};
use stackbench_engine::token::{self, Proved, Token};
use stackbench_runner::agents::wire::{self, Decoded, FromAgent, FromController};

/// One fuzz target: its name (corpus directory, cargo-fuzz binary) and entry.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
}

/// Every target, in the order the campaign runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "control",
        run: control,
    },
    Target {
        name: "agent_wire",
        run: agent_wire,
    },
    Target {
        name: "token_admit",
        run: token_admit,
    },
    Target {
        name: "token_prove",
        run: token_prove,
    },
    Target {
        name: "http1_client",
        run: halves::http1_client,
    },
    Target {
        name: "http1_server",
        run: halves::http1_server,
    },
    Target {
        name: "tn3270_client",
        run: halves::tn3270_client,
    },
    Target {
        name: "tn3270_server",
        run: halves::tn3270_server,
    },
    Target {
        name: "tn3270_screen",
        run: tn3270_screen,
    },
    Target {
        name: "amqp_client",
        run: halves::amqp_client,
    },
    Target {
        name: "amqp_server",
        run: halves::amqp_server,
    },
    Target {
        name: "study_file",
        run: study_file,
    },
    Target {
        name: "lab_file",
        run: lab_file,
    },
    Target {
        name: "record",
        run: record,
    },
];

/// The target named `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The control protocol's decoder, as the responder (requests) and the
/// driver (replies) read a connection: message after message until the end
/// or the first refusal.
pub fn control(data: &[u8]) {
    let mut input = BufReader::new(Cursor::new(data));
    while let Ok(Some(_)) = control::recv::<Request>(&mut input) {}
    let mut input = BufReader::new(Cursor::new(data));
    while let Ok(Some(_)) = control::recv::<Reply>(&mut input) {}
}

/// The agent wire, line by line as both ends read it, each message taken
/// as far as its receiver takes it before it acts (a run order becomes the
/// agent's run configuration, a progress report the controller's figures).
pub fn agent_wire(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        match wire::decode::<FromController>(line) {
            Decoded::Message(FromController::Run { order, .. }) => {
                let _ = order.into_config();
            }
            Decoded::Message(_) | Decoded::OtherProtocol(_) | Decoded::Garbage(_) => {}
        }
        match wire::decode::<FromAgent>(line) {
            Decoded::Message(FromAgent::Progress { progress, .. }) => {
                let _ = progress.into_progress();
            }
            Decoded::Message(_) | Decoded::OtherProtocol(_) | Decoded::Garbage(_) => {}
        }
    }
}

/// The token every handshake target holds (the peer's bytes cannot know
/// it: what is fuzzed is everything around the MAC).
fn fuzz_token() -> Token {
    Token::from_hex("737461636b62656e63682066757a7a20746f6b656e2121").expect("hex token")
}

/// The listening side of the token handshake (a responder's control port,
/// a controller's agent port), with a token and open: the first byte
/// chooses which.
pub fn token_admit(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let token = fuzz_token();
    let held = (mode & 1 == 0).then_some(&token);
    let channel = if mode & 2 == 0 { "control" } else { "agents" };
    let mut input = BufReader::new(Cursor::new(rest));
    let _ = token::admit(&mut input, &mut std::io::sink(), channel, held);
}

/// The connecting side of the token handshake (a driver, an agent): the
/// listener's answer and its verdict are the input.
pub fn token_prove(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let token = fuzz_token();
    let held = (mode & 1 == 0).then_some(&token);
    let channel = if mode & 2 == 0 { "control" } else { "agents" };
    let require = mode & 4 != 0;
    let mut input = BufReader::new(Cursor::new(rest));
    let greeting = (serde_json::Map::new(), require);
    if let Ok(Proved::Challenged) =
        token::prove(&mut input, &mut std::io::sink(), channel, held, greeting)
    {
        let _ = token::verdict(&mut input);
    }
}

/// The 3270 data-stream parser of the screen model, fed records as a
/// terminal takes them off a TN3270 session: the first byte picks the model
/// (2 to 5, bits 0–1) and whether records carry the TN3270E header (bit 2);
/// the rest is the server's Telnet stream ([`records`]), each record
/// applied in turn and the screen read back after each.
pub fn tn3270_screen(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let mut screen = Screen::of_model(2 + head % 4);
    let header = if head & 4 != 0 { 5 } else { 0 };
    for record in records(rest) {
        let _ = screen.apply(record.get(header..).unwrap_or_default());
        let _ = (
            screen.cursor(),
            screen.keyboard_locked(),
            screen.fields().len(),
        );
    }
    let (rows, _) = screen.size();
    for row in 0..rows {
        let _ = screen.row_text(row);
    }
}

/// Telnet's IAC, and the commands a record stream holds.
const IAC: u8 = 0xFF;
const EOR: u8 = 0xEF;
const SB: u8 = 0xFA;
const SE: u8 = 0xF0;

/// The records of a Telnet stream (RFC 885's END-OF-RECORD ends each):
/// IAC IAC is a data byte, option negotiation and subnegotiation are
/// dropped; what follows the last IAC EOR is no record.
pub fn records(stream: &[u8]) -> Vec<Vec<u8>> {
    let (mut records, mut record) = (Vec::new(), Vec::new());
    let mut bytes = stream.iter().copied();
    while let Some(b) = bytes.next() {
        if b != IAC {
            record.push(b);
            continue;
        }
        match bytes.next() {
            Some(IAC) => record.push(IAC),
            Some(EOR) => records.push(std::mem::take(&mut record)),
            // Subnegotiation: up to IAC SE.
            Some(SB) => {
                let mut last = 0;
                for b in bytes.by_ref() {
                    if last == IAC && b == SE {
                        break;
                    }
                    last = b;
                }
            }
            // WILL, WONT, DO, DONT: their option byte.
            Some(0xFB..=0xFE) => {
                bytes.next();
            }
            _ => {}
        }
    }
    records
}

/// A study file's text (the TOML tree, then every setting's parser).
pub fn study_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = stackbench_model::study::parse_study(&text, "fuzz.toml");
}

/// A lab file's text.
pub fn lab_file(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = stackbench_lab::parse_lab(&text, "fuzz.toml");
}

/// A stored run record: JSON, then the migrations of older schema versions
/// and the typed record (`record_from_json`, what `compare`, `report` and
/// `plan` read).
pub fn record(data: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = stackbench_record::record_from_json(value);
    }
}
