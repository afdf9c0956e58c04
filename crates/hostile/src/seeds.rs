//! The seed corpus: a few valid inputs per target, made from what the real
//! code sends (the halves' own dialogues, the control and handshake
//! messages as their senders write them) and from the checked-in files
//! (the agent wire's golden files, the example study and lab files, record
//! fixtures). `tests/replay.rs` writes them under `/fuzz/corpus/TARGET`
//! with `STACKBENCH_BLESS=1` and replays them in every `cargo test`.

use std::path::Path;

use serde_json::json;
use stackbench_engine::app::{amqp, http1, tn3270};
use stackbench_engine::control::{Reply, Request, TestSpec};
use stackbench_model::settings::{SocketOptions, Transport};
use stackbench_model::Kind;

use crate::halves::{converse, Class};

/// One seed: its target, its file name and its bytes.
pub struct Seed {
    pub target: &'static str,
    pub name: String,
    pub bytes: Vec<u8>,
}

fn seed(target: &'static str, name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Seed {
    Seed {
        target,
        name: name.into(),
        bytes: bytes.into(),
    }
}

/// Every seed, made afresh (`root`: the workspace, for the checked-in files).
pub fn all(root: &Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    seeds.extend(control());
    seeds.extend(token());
    seeds.extend(halves());
    seeds.extend(files(root));
    seeds
}

fn lines<T: serde::Serialize>(messages: &[T]) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages {
        out.extend(serde_json::to_vec(m).expect("a message serializes"));
        out.push(b'\n');
    }
    out
}

fn control() -> Vec<Seed> {
    let spec = TestSpec {
        kind: Kind::Rr,
        request_bytes: 64,
        response_bytes: 8192,
        socket: SocketOptions::default(),
        spin: false,
        io: Default::default(),
        protocol: Default::default(),
        tn3270: Default::default(),
    };
    let requests = [
        Request::Hello {
            version: stackbench_engine::control::PROTOCOL_VERSION,
            software: "stackbench 0.1.0".into(),
        },
        Request::Start {
            spec,
            transport: Transport::Tcp,
            clients: 4,
            ports: 1,
            tls: None,
            own_workers: 2,
            own_cpus: vec![0, 1],
        },
        Request::Sample,
        Request::Stop { test_id: 1 },
    ];
    let replies = [
        Reply::Hello {
            version: stackbench_engine::control::PROTOCOL_VERSION,
            software: "stackbench 0.1.0".into(),
            threads: 4,
            cpus: vec![0, 1],
            refused_peers: 0,
            bounds: Some(stackbench_engine::control::Bounds {
                tests_per_session: 64,
                clients_per_test: 100_000,
                message_bytes: 1 << 36,
                session_s: 86_400,
            }),
        },
        Reply::Error {
            message: "the responder refused: a message of 2048 bytes exceeds this \
                      responder's limit of 1000 bytes (serve --max-message-bytes)"
                .into(),
        },
    ];
    vec![
        seed("control", "requests", lines(&requests)),
        seed("control", "replies", lines(&replies)),
    ]
}

fn token() -> Vec<Seed> {
    let nonce = "ab".repeat(32);
    let proof = "cd".repeat(32);
    let start = json!({"auth": "start", "channel": "control", "nonce": nonce, "version": 6});
    let agents = json!({"auth": "start", "channel": "agents", "nonce": nonce});
    let with = |mode: u8, messages: &[serde_json::Value]| {
        let mut bytes = vec![mode];
        bytes.extend(lines(messages));
        bytes
    };
    vec![
        seed(
            "token_admit",
            "start-proof",
            with(
                0,
                &[start.clone(), json!({"auth": "proof", "proof": proof})],
            ),
        ),
        seed(
            "token_admit",
            "start-no-token",
            with(2, &[agents, json!({"auth": "proof", "proof": null})]),
        ),
        seed("token_admit", "open", with(1, &[start])),
        seed("token_admit", "older-hello", {
            let mut b = vec![1];
            b.extend(lines(&[
                json!({"type": "hello", "version": 5, "software": "x"}),
            ]));
            b
        }),
        seed(
            "token_prove",
            "challenge-ok",
            with(
                0,
                &[
                    json!({"auth": "challenge", "nonce": nonce, "proof": proof}),
                    json!({"auth": "ok"}),
                ],
            ),
        ),
        seed("token_prove", "open", with(4, &[json!({"auth": "open"})])),
        seed(
            "token_prove",
            "refused",
            with(1, &[json!({"auth": "refused", "reason": "has no token"})]),
        ),
        seed("token_prove", "http", {
            let mut b = vec![0];
            b.extend_from_slice(b"HTTP/1.1 400 Bad Request\r\n\r\n");
            b
        }),
    ]
}

/// The classes the halves' seeds are dialogues of (see [`Class`]'s layout).
/// Reads are short (a dialogue's halves wait for each other: a read that
/// took all the peer ever sent would hold answers to what was not yet
/// asked, which a fixed point makes but a peer does not).
const HEADS: &[(&str, [u8; Class::HEAD_BYTES])] = &[
    ("rr-64-512", [0, 8, 3, 31, 0]),
    ("rr-tiny-reads", [0, 1, 0, 0, 0]),
    ("crr-client-close", [0b011, 16, 3, 3, 0]),
    ("tn3270e-on-lu-model3", [0b01000, 5, 7, 63, 0x11]),
    ("tn3270e-off", [0b10000, 11, 7, 63, 0]),
    ("refuse-tn3270e", [0b100000, 3, 7, 63, 0]),
    ("put-get-persistent", [0b1100_0000, 7, 3, 3, 0x24]),
];

/// A dialogue's two seeds: what the server sent for the client half's
/// target, what the client sent for the server half's.
fn pair(
    (client, server): (&'static str, &'static str),
    name: &str,
    head: [u8; Class::HEAD_BYTES],
    (to_client, to_server): (Vec<u8>, Vec<u8>),
) -> [Seed; 2] {
    let with = |bytes: &[u8]| [&head[..], bytes].concat();
    [
        seed(client, name, with(&to_client)),
        seed(server, name, with(&to_server)),
    ]
}

fn halves() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for &(name, head) in HEADS {
        let http = converse::<http1::Client, http1::Server>(head);
        seeds.extend(pair(("http1_client", "http1_server"), name, head, http));
        let tn3270 = converse::<tn3270::client::Client, tn3270::server::Server>(head);
        // The screen's input: the model, whether TN3270E was agreed (the
        // terminal's `tn3270e` not off, the responder offering), then the
        // server's stream.
        let tn3270e = (head[0] >> 3 & 3 != 2 && head[0] & 0x20 == 0) as u8;
        let screens = [&[head[4] & 3 | tn3270e << 2][..], &tn3270.0].concat();
        seeds.push(seed("tn3270_screen", name, screens));
        seeds.extend(pair(("tn3270_client", "tn3270_server"), name, head, tn3270));
        let amqp = converse::<amqp::client::Client, amqp::server::Server>(head);
        seeds.extend(pair(("amqp_client", "amqp_server"), name, head, amqp));
    }
    seeds
}

/// Seeds from the checked-in files.
fn files(root: &Path) -> Vec<Seed> {
    let mut seeds = Vec::new();
    let read =
        |path: &Path| std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The agent wire's golden files hold `KIND LINE`: the lines.
    for n in 1..=9 {
        let path = root.join(format!("crates/runner/tests/wire/protocol-{n}.jsonl"));
        if !path.exists() {
            continue;
        }
        let text = String::from_utf8(read(&path)).expect("UTF-8 golden file");
        let wire: String = text
            .lines()
            .filter_map(|l| l.find(" {").map(|i| &l[i + 1..]))
            .flat_map(|l| [l, "\n"])
            .collect();
        seeds.push(seed("agent_wire", format!("protocol-{n}"), wire));
    }
    let mut examples: Vec<_> = std::fs::read_dir(root.join("examples"))
        .expect("examples/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    examples.sort();
    for path in examples {
        let name = path
            .file_stem()
            .expect("a name")
            .to_string_lossy()
            .to_string();
        let text = read(&path);
        let lab = stackbench_lab::parse_lab(&String::from_utf8_lossy(&text), "x").is_ok();
        seeds.push(seed(
            if lab { "lab_file" } else { "study_file" },
            name,
            text,
        ));
    }
    for name in ["result-with-cpu", "result-without-cpu"] {
        let path = root.join(format!("crates/plan/tests/fixtures/{name}.json"));
        seeds.push(seed("record", name, read(&path)));
    }
    seeds
}
