//! The `tn3270` responder against a real TN3270 terminal: s3270 (the
//! scripted member of the x3270 suite) connects to the embedded
//! responder's data port, negotiates, shows the responder's first screen,
//! presses Enter and shows the answer; the responder counts one
//! connection, one transaction and no error. Three ways: TN3270E (s3270
//! agrees to the responder's `DO TN3270E`, asks for its device type and
//! BIND-IMAGE, RESPONSES and SYSREQ, and answers the logon screen's
//! definite response), plain TN3270 because the terminal refuses
//! TN3270E (s3270's `N:` host prefix), and plain TN3270 because the
//! responder does (`responder_tn3270e refuse`). Part of the `hercules`
//! tier (CI installs hercules and s3270 together): skipped where s3270 is
//! missing, a failure where `STACKBENCH_REQUIRE` names the tier.

use std::io::Write;
use std::process::{Command, Stdio};

use stackbench_engine::control::TestSpec;
use stackbench_engine::transport::{Endpoint, Transport};
use stackbench_engine::ControlClient;
use stackbench_model::settings::{ResponderTn3270e, Tn3270Options};
use stackbench_model::{AppProtocol, IoMode, Kind};
use stackbench_testkit::{skip, Tier};

use super::responder;

#[test]
fn s3270_logs_on_to_the_responder_and_gets_an_answer_to_enter() {
    let test = "s3270_logs_on_to_the_responder_and_gets_an_answer_to_enter";
    let h = responder("127.0.0.1:0");
    let cases = [
        ("", ResponderTn3270e::Offer, "connected-tn3270e"),
        ("N:", ResponderTn3270e::Offer, "connected-3270"),
        ("", ResponderTn3270e::Refuse, "connected-3270"),
    ];
    for (prefix, responder, mode) in cases {
        let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
        let spec = TestSpec {
            kind: Kind::Rr,
            request_bytes: 100,
            response_bytes: 800,
            socket: Default::default(),
            spin: false,
            io: IoMode::Epoll,
            protocol: AppProtocol::Tn3270,
            tn3270: Tn3270Options {
                responder,
                ..Tn3270Options::default()
            },
        };
        let (id, endpoints) = control.start(spec, Transport::Tcp, 1, 1).unwrap();
        let Endpoint::Inet(addr) = endpoints[0] else {
            panic!("{endpoints:?}");
        };
        // The waits are hang checks (10 s), not timing claims.
        let script = format!(
            "Connect({prefix}{addr})\nWait(10,Output)\nQuery(ConnectionState)\nAscii()\n\
             Enter()\nWait(10,Output)\nAscii()\nDisconnect()\nQuit()\n"
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
        assert!(results.iter().all(|r| *r == "ok"), "{prefix}{mode}: {text}");
        assert_eq!(results.len(), 9, "{text}");
        assert!(text.contains(&format!("data: {mode}\n")), "{mode}: {text}");
        // The first screen names the responder; the answer to Enter is the
        // test's screen of repeated text.
        assert!(text.contains("STACKBENCH TN3270 RESPONDER"), "{text}");
        assert!(text.contains("STACKBENCH STACKBENCH STACKBENCH"), "{text}");
        let s = &stats;
        assert_eq!(
            (s.connections, s.transactions, s.errors),
            (1, 1, 0),
            "{mode}: {text}"
        );
    }
}
