//! The `tn3270` responder against a real TN3270 terminal: s3270 (the
//! scripted member of the x3270 suite) connects to the embedded
//! responder's data port, negotiates (it asks for TN3270E, is told `DONT`,
//! and goes on as TN3270), shows the responder's first screen, presses
//! Enter and shows the answer; the responder counts one connection, one
//! transaction and no error. Part of the `hercules` tier (CI installs
//! hercules and s3270 together): skipped where s3270 is missing, a failure
//! where `STACKBENCH_REQUIRE` names the tier.

use std::io::Write;
use std::process::{Command, Stdio};

use stackbench_engine::control::TestSpec;
use stackbench_engine::transport::{Endpoint, Transport};
use stackbench_engine::ControlClient;
use stackbench_model::{AppProtocol, IoMode, Kind};
use stackbench_testkit::{skip, Tier};

use super::responder;

#[test]
fn s3270_logs_on_to_the_responder_and_gets_an_answer_to_enter() {
    let test = "s3270_logs_on_to_the_responder_and_gets_an_answer_to_enter";
    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = TestSpec {
        kind: Kind::Rr,
        request_bytes: 100,
        response_bytes: 800,
        socket: Default::default(),
        spin: false,
        io: IoMode::Epoll,
        protocol: AppProtocol::Tn3270,
    };
    let (id, endpoints) = control.start(spec, Transport::Tcp, 1, 1).unwrap();
    let Endpoint::Inet(addr) = endpoints[0] else {
        panic!("{endpoints:?}");
    };
    // The waits are hang checks (10 s), not timing claims.
    let script = format!(
        "Connect({addr})\nWait(10,Output)\nAscii()\nEnter()\nWait(10,Output)\nAscii()\n\
         Disconnect()\nQuit()\n"
    );
    let child = Command::new("s3270")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        control.stop(id).unwrap();
        return skip(Tier::Hercules, test, "no runnable s3270 on PATH");
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let stats = control.stop(id).unwrap();
    // Every action succeeded.
    let results: Vec<&str> = text
        .lines()
        .filter(|l| *l == "ok" || *l == "error")
        .collect();
    assert!(results.iter().all(|r| *r == "ok"), "{text}");
    assert_eq!(results.len(), 8, "{text}");
    // The first screen names the responder; the answer to Enter is the
    // test's screen of repeated text.
    assert!(text.contains("STACKBENCH TN3270 RESPONDER"), "{text}");
    assert!(text.contains("STACKBENCH STACKBENCH STACKBENCH"), "{text}");
    let s = &stats;
    assert_eq!(
        (s.connections, s.transactions, s.errors),
        (1, 1, 0),
        "{text}"
    );
}
