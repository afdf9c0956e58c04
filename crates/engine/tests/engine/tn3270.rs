//! `protocol tn3270` against the embedded responder: every connection
//! logs on (the Telnet negotiation and the first screen) before its
//! records; RR counts exactly and moves the notation's record bytes (the
//! logons fall before the window), CRR counts a logon per transaction in
//! every close mode, a lone connection is driven and served directly, and
//! `io uring` runs it on epoll.

use stackbench_engine::app::tn3270::{
    LOGON_BYTES_IN, LOGON_BYTES_OUT, LOGON_E_BYTES_IN, LOGON_E_BYTES_OUT,
};
use stackbench_engine::{iomode, RunConfig, RunOutcome};
use stackbench_model::{AppProtocol, CrrClose, IoMode};

use super::{config, responder, run};

fn tn3270(workload: &str, transactions: u64) -> RunConfig {
    RunConfig {
        protocol: AppProtocol::Tn3270,
        ..config(workload, transactions)
    }
}

/// Exact counts: `n` transactions of the notation's record sizes on both
/// sides, plus `logons` TN3270E logons' bytes on the client (CRR: one per
/// transaction) and one per connection on the responder.
fn assert_tn3270_exact(out: &RunOutcome, n: u64, logons: u64) {
    assert_logons_exact(out, n, logons, (LOGON_E_BYTES_IN, LOGON_E_BYTES_OUT));
    let sessions = out.classes[0].sessions.as_ref().expect("sessions counted");
    let conns = out.server_stats[0].connections;
    assert_eq!(sessions.attempted, conns);
    assert_eq!(sessions.negotiated.get("tn3270e"), Some(&conns));
    assert_eq!(sessions.functions.get("RESPONSES"), Some(&conns));
    assert_eq!(sessions.device_types.get("IBM-3278-2-E"), Some(&conns));
    assert!(sessions.failed.is_empty(), "{sessions:?}");
}

/// The same with logons of `logon` bytes (in, out) each.
fn assert_logons_exact(out: &RunOutcome, n: u64, logons: u64, logon: (u64, u64)) {
    let (logon_in, logon_out) = logon;
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let c = &out.classes[0];
    assert_eq!(c.transactions, n, "{}", c.notation);
    assert_eq!(c.errors, 0, "{}: {:?}", c.notation, c.error_counts);
    assert_eq!(c.tx_bytes, n * c.request_bytes + logons * logon_in);
    assert_eq!(c.rx_bytes, n * c.response_bytes + logons * logon_out);
    let server = &out.server_stats[0];
    let conns = server.connections;
    assert_eq!((server.transactions, server.errors), (n, 0));
    assert_eq!(server.rx_bytes, n * c.request_bytes + conns * logon_in);
    assert_eq!(server.tx_bytes, n * c.response_bytes + conns * logon_out);
}

#[test]
fn rr_logs_on_once_per_user_and_counts_records_exactly() {
    let h = responder("127.0.0.1:0");
    let out = run(&h, &tn3270("RR10(100B/800B)", 1003));
    // Logons happen before the window: the client counts records only.
    assert_tn3270_exact(&out, 1003, 0);
    assert_eq!(out.server_stats[0].connections, 10);
}

/// Plain TN3270 both ways: the terminal refuses TN3270E (`tn3270e off`),
/// or the responder does (`responder_tn3270e refuse`, no `DO TN3270E`
/// to answer: 3 bytes each way fewer); `tn3270e on` against the refusing
/// responder is an incomplete run whose fault names the refusal, with the
/// failed logons counted by reason.
#[test]
fn plain_tn3270_either_way_and_on_refused_is_incomplete() {
    use stackbench_model::settings::{ResponderTn3270e, Tn3270e};
    let h = responder("127.0.0.1:0");
    let mut off = tn3270("CRR2(100B/800B)", 20);
    off.tn3270.tn3270e = Tn3270e::Off;
    let out = run(&h, &off);
    assert_logons_exact(&out, 20, 20, (LOGON_BYTES_IN, LOGON_BYTES_OUT));
    let sessions = out.classes[0].sessions.as_ref().unwrap();
    assert_eq!(sessions.negotiated.get("tn3270"), Some(&20));
    let mut refused = tn3270("CRR2(100B/800B)", 20);
    refused.tn3270.responder = ResponderTn3270e::Refuse;
    let out = run(&h, &refused);
    let plain = (LOGON_BYTES_IN - 3, LOGON_BYTES_OUT - 3);
    assert_logons_exact(&out, 20, 20, plain);
    refused.tn3270.tn3270e = Tn3270e::On;
    let out = run(&h, &refused);
    assert!(!out.complete);
    let why = out.incomplete_reason.as_deref().unwrap_or_default();
    assert!(why.contains("tn3270e is on"), "{why}");
    let sessions = out.classes[0].sessions.as_ref().unwrap();
    assert_eq!(sessions.negotiated_total(), 0, "{sessions:?}");
    assert!(
        sessions
            .failed
            .get("tn3270e_refused")
            .is_some_and(|n| *n >= 1),
        "{sessions:?}"
    );
    assert_eq!(out.classes[0].transactions, 0);
}

/// An LU the responder does not define: DEVICE-TYPE REJECT REASON
/// INV-NAME, named in the fault line, counted by reason.
#[test]
fn an_lu_the_server_rejects_is_an_incomplete_run_naming_the_reason() {
    use stackbench_model::settings::{LuName, SettingValue};
    let h = responder("127.0.0.1:0");
    let mut cfg = tn3270("RR2(100B/800B)", 20);
    cfg.tn3270.lu = Some(LuName::parse("NOSUCHLU").unwrap());
    let out = run(&h, &cfg);
    assert!(!out.complete);
    let why = out.incomplete_reason.as_deref().unwrap_or_default();
    assert!(why.contains("REJECT REASON INV-NAME (3)"), "{why}");
    let sessions = out.classes[0].sessions.as_ref().unwrap();
    assert_eq!(
        sessions.failed.get("rejected_inv_name"),
        Some(&2),
        "{sessions:?}"
    );
    // One the pool defines is given.
    cfg.tn3270.lu = Some(LuName::parse("SBLU0007").unwrap());
    let out = run(&h, &cfg);
    assert!(out.complete, "{:?}", out.incomplete_reason);
}

#[test]
fn crr_logs_on_per_transaction_in_every_close_mode() {
    let h = responder("127.0.0.1:0");
    for close in [CrrClose::Server, CrrClose::Client, CrrClose::Abort] {
        let mut cfg = tn3270("CRR4(100B/800B)", 201);
        cfg.socket.crr_close = close;
        let out = run(&h, &cfg);
        assert_tn3270_exact(&out, 201, 201);
        assert_eq!(out.server_stats[0].connections, 201, "{close:?}");
    }
}

#[test]
fn a_lone_terminal_is_driven_and_served_directly() {
    let h = super::responder_threads("127.0.0.1:0", 1);
    let mut cfg = tn3270("RR1(100B/20kB)", 500);
    cfg.threads = 1;
    assert_tn3270_exact(&run(&h, &cfg), 500, 0);
}

#[test]
fn io_uring_refuses_tn3270_and_the_run_measures_epoll() {
    let mut cfg = tn3270("RR8(100B/800B)", 100);
    cfg.io = IoMode::Uring;
    let (io, why) = iomode::effective(&cfg);
    assert_eq!(io, IoMode::Epoll);
    if iomode::uring_available().is_ok() {
        let why = why.expect("a reason");
        assert!(
            why.contains("protocol tn3270 is not covered by the io_uring backend"),
            "{why}"
        );
    }
    let h = responder("127.0.0.1:0");
    assert_tn3270_exact(&run(&h, &cfg), 100, 0);
}

/// The protocol is independent of the transport: the logon runs over tcp,
/// unix and inline TLS alike (over TLS the server speaks first into a
/// handshake the terminal's first receive finishes).
#[test]
fn rr_and_crr_run_over_every_transport() {
    use stackbench_model::settings::{CertType, CipherSuite, SettingValue};
    use stackbench_model::{TlsParams, Transport};
    let h = responder("127.0.0.1:0");
    for transport in [Transport::Tcp, Transport::Unix, Transport::Tls] {
        for (workload, logons) in [("RR3(100B/800B)", 0), ("CRR2(100B/800B)", 31)] {
            let mut cfg = RunConfig {
                transport,
                ..tn3270(workload, 31)
            };
            if transport == Transport::Tls {
                let suite = CipherSuite::parse("1301").unwrap();
                let params =
                    TlsParams::resolve(None, Some(suite), None, CertType::Rsa2048, None, None);
                cfg.tls = Some(params.unwrap());
            }
            let out = run(&h, &cfg);
            assert_tn3270_exact(&out, 31, logons);
        }
    }
}

/// A plain TN3270 server as the target (`tn3270://HOST:PORT`, as a z/OS
/// TN3270 server would be named): here the embedded responder's data port
/// for a test started by hand, so both sides' counts can be checked. The
/// driver logs on and counts as against `stackbench serve`; a protocol
/// other than tn3270 is refused in one line.
#[test]
fn a_plain_tn3270_server_is_driven_without_a_control_connection() {
    use std::sync::atomic::AtomicBool;

    use stackbench_engine::control::TestSpec;
    use stackbench_engine::transport::{Endpoint, Transport};
    use stackbench_engine::{run_workload, ControlClient};

    let h = responder("127.0.0.1:0");
    let mut control = ControlClient::connect(&h.addr().to_string()).unwrap();
    let spec = TestSpec {
        kind: stackbench_model::Kind::Rr,
        request_bytes: 100,
        response_bytes: 800,
        socket: Default::default(),
        spin: false,
        io: IoMode::Epoll,
        protocol: AppProtocol::Tn3270,
        tn3270: Default::default(),
    };
    let (id, endpoints) = control.start(spec, Transport::Tcp, 3, 1).unwrap();
    let Endpoint::Inet(addr) = endpoints[0] else {
        panic!("{endpoints:?}");
    };
    let mut plain = ControlClient::connect(&format!("tn3270://{addr}")).unwrap();
    assert_eq!(plain.plain_protocol(), Some(AppProtocol::Tn3270));
    let cfg = tn3270("RR3(100B/800B)", 301);
    let stop = AtomicBool::new(false);
    let out = run_workload(&mut plain, &cfg, &stop, &mut |_| {}).unwrap();
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let c = &out.classes[0];
    assert_eq!((c.transactions, c.errors), (301, 0));
    assert_eq!((c.tx_bytes, c.rx_bytes), (301 * 100, 301 * 800));
    assert!(out.server_stats.iter().all(|s| s.connections == 0));
    let served = control.stop(id).unwrap();
    // The plain target's probe (connected and closed to check it listens)
    // left during the logon: a connection, no error.
    assert_eq!(
        (served.connections, served.transactions, served.errors),
        (1 + 3, 301, 0)
    );
    // http1 to a TN3270 server would measure its error path.
    let http = RunConfig {
        protocol: AppProtocol::Http1,
        ..cfg
    };
    let e = run_workload(&mut plain, &http, &stop, &mut |_| {}).unwrap_err();
    let want = format!(
        "target tn3270://{addr} is a plain TN3270 server: run it with protocol tn3270 over \
         transport tcp"
    );
    assert!(e.to_string().ends_with(&want), "{e}");
}

/// A plain server on loopback that sends `greeting` when a client connects
/// and `answer` for every chunk it receives.
fn greeting_server(greeting: &'static [u8], answer: &'static [u8]) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                let _ = conn.write_all(greeting);
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 || conn.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("tn3270://{addr}")
}

/// A server that is no TN3270 server — an SMTP greeting instead of a
/// negotiation, or a first screen and then HTTP — ends each client with
/// the fault's line: the run is incomplete, not a panic.
#[test]
fn a_server_that_is_not_tn3270_ends_the_run_incomplete_with_the_fault() {
    use std::sync::atomic::AtomicBool;

    use stackbench_engine::{run_workload, ControlClient};

    let screen: &'static [u8] = &[0xF5, 0xC3, 0xFF, 0xEF];
    let cases: [(&'static [u8], &'static [u8], &str); 2] = [
        (b"220 mail ready\r\n", b"", "not a 3270 write command"),
        (screen, b"HTTP/1.1 200 OK\r\n", "not a 3270 record"),
    ];
    for (greeting, answer, needle) in cases {
        let target = greeting_server(greeting, answer);
        let mut control = ControlClient::connect(&target).unwrap();
        let stop = AtomicBool::new(false);
        let cfg = tn3270("RR2(100B/800B)", 10);
        let out = run_workload(&mut control, &cfg, &stop, &mut |_| {}).unwrap();
        assert!(!out.complete);
        let reason = out.incomplete_reason.unwrap();
        assert!(
            reason.contains("that protocol tn3270 refuses (the first: "),
            "{reason}"
        );
        assert!(reason.contains(needle), "{reason}");
        assert!(!reason.contains('\n'), "{reason}");
        assert_eq!(out.classes[0].transactions, 0);
        assert!(out.classes[0].errors >= 1);
        // The greeting fails the logon itself: counted by reason.
        let sessions = out.classes[0].sessions.as_ref().unwrap();
        if greeting != screen {
            assert!(sessions.failed.contains_key("not_telnet"), "{sessions:?}");
        }
    }
}

/// A script (`tn3270_script`) against the responder's demo application:
/// each step is a transaction of its own, counted under its name, every
/// session logged on once and walking logon → menu → accounts → menu →
/// logoff over and over; exact counts, each step a quarter of them.
#[test]
fn a_script_drives_the_demo_application_step_by_step() {
    use stackbench_model::settings::ResponderApp;
    use stackbench_model::tn3270_script::{Script, ScriptRef};
    let h = responder("127.0.0.1:0");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/tn3270/demo.script"
    );
    let text = std::fs::read_to_string(file).unwrap();
    let script = Script::parse(file, &text, (24, 80)).unwrap();
    let mut cfg = tn3270("RR4(100B/800B)", 400);
    cfg.tn3270.app = ResponderApp::Demo;
    cfg.tn3270.script = Some(ScriptRef(Script::intern(script)));
    let out = run(&h, &cfg);
    assert!(out.complete, "{:?}", out.incomplete_reason);
    let c = &out.classes[0];
    assert_eq!((c.transactions, c.errors), (400, 0), "{:?}", c.error_counts);
    let steps = c.steps.as_ref().expect("steps recorded");
    let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["logon", "inquiry", "back", "logoff"]);
    // 100 per client, 25 per step per client: the steps take turns.
    for s in steps {
        assert_eq!((s.transactions, s.timeouts), (100, 0), "{s:?}");
        assert!(s.latency_us.is_some_and(|l| l.p50 > 0.0), "{s:?}");
        assert!(s.latency_hdr.is_some());
    }
    assert_eq!(steps[0].key, "ENTER");
    assert_eq!(steps[3].key, "PF3");
    // The account screen is the largest answer; the responder answered
    // every step.
    assert_eq!(out.server_stats[0].transactions, 400);
    assert_eq!(out.server_stats[0].connections, 4);
}

/// A step whose screen never comes (the script waits for text the demo
/// application never shows) is an error of the step, counted with the
/// screen seen instead, not the end of the run: the session logs on again
/// and its other steps go on being measured.
#[test]
fn a_step_that_times_out_is_counted_with_the_screen_seen() {
    use stackbench_model::settings::ResponderApp;
    use stackbench_model::tn3270_script::{Script, ScriptRef};
    use std::time::Duration;
    let h = responder("127.0.0.1:0");
    let text = "step logon\n type \"U1\" after \"USERID\"\n key ENTER\n \
                wait \"STACKBENCH MAIN MENU\" timeout 1s\n\
                step wrong\n key PF3\n wait \"NO SUCH SCREEN\" timeout 200ms\n";
    let script = Script::parse("t.script", text, (24, 80)).unwrap();
    let mut cfg = tn3270("RR1(100B/800B)", 1);
    cfg.transactions = None;
    cfg.duration = Some(Duration::from_millis(1500));
    cfg.tn3270.app = ResponderApp::Demo;
    cfg.tn3270.script = Some(ScriptRef(Script::intern(script)));
    let out = run(&h, &cfg);
    let c = &out.classes[0];
    let steps = c.steps.as_ref().unwrap();
    assert!(steps[0].transactions >= 3, "{steps:?}");
    assert_eq!(steps[1].transactions, 0);
    assert!(steps[1].timeouts >= 3, "{steps:?}");
    let seen = steps[1].seen.as_deref().unwrap();
    assert!(
        seen.contains("LOGGED OFF") && seen.contains("STACKBENCH LOGON"),
        "{seen}"
    );
    assert_eq!(
        c.error_counts.timeout,
        steps[1].timeouts + steps[0].timeouts
    );
    // Each timeout logged on again.
    let sessions = c.sessions.as_ref().unwrap();
    assert!(sessions.attempted > steps[1].timeouts, "{sessions:?}");
}
