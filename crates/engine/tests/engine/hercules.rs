//! The `tn3270` codec against a real TN3270 server: hercules (the
//! S/370–z/Architecture emulator) with a 3270 device, whose console port
//! negotiates a TN3270 session and sends its logo screen to each terminal
//! that connects — with no operating system IPLed, nothing answers a
//! terminal's input, so this tier covers the logon, not transactions. Each
//! connection is a CRR without its record: connect, negotiate, receive the
//! first screen, close; counted exactly. Hercules 3.13 offers no TN3270E
//! (its console sends no `DO TN3270E`): `tn3270e auto`, the default, falls
//! back to plain TN3270, and `on` is a fault naming what it asked for
//! instead. The `hercules` tier: skipped where the binary is missing, a
//! failure where `STACKBENCH_REQUIRE` names it.
//! The test starts its own hercules on a free loopback port and kills it
//! when done, whatever happens.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stackbench_engine::app::tn3270::client::{Client, ClientState};
use stackbench_engine::app::tn3270::LOGON_BYTES_IN;
use stackbench_engine::app::{ClassShape, Codec, Setup};
use stackbench_model::settings::{Tn3270Options, Tn3270e};
use stackbench_model::{CrrClose, Kind};
use stackbench_testkit::{skip, Tier};

/// A running hercules, killed and reaped when dropped.
struct Hercules {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Drop for Hercules {
    fn drop(&mut self) {
        // SIGKILL: its orderly shutdown takes seconds and there is no disk
        // to flush.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Hercules {
    /// Starts hercules with one 3270 device and its console on a free
    /// loopback port; None when the binary cannot run.
    fn start(dir: &std::path::Path) -> Option<Hercules> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .ok()?;
        let config = dir.join("hercules.cnf");
        std::fs::write(
            &config,
            format!(
                "CPUSERIAL 000611\nCPUMODEL 3090\nMAINSIZE 16\nNUMCPU 1\n\
                 ARCHMODE ESA/390\nCNSLPORT 127.0.0.1:{port}\n0700 3270\n"
            ),
        )
        .ok()?;
        let log = dir.join("hercules.log");
        let out = std::fs::File::create(&log).ok()?;
        let child = Command::new("hercules")
            .arg("-d")
            .arg("-f")
            .arg(&config)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().ok()?)
            .stderr(out)
            .spawn()
            .ok()?;
        Some(Hercules { child, port, log })
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Connects once the console port listens (hercules starts in about a
    /// second).
    fn connect(&self) -> TcpStream {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match TcpStream::connect(("127.0.0.1", self.port)) {
                Ok(s) => return s,
                Err(e) if Instant::now() > deadline => {
                    panic!("hercules' console port never listened: {e}\n{}", self.log())
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
}

/// What one logon moved: bytes from the server, bytes to it.
#[derive(Debug, PartialEq, Eq)]
struct Logon {
    received: u64,
    sent: u64,
    mode: &'static str,
}

/// Runs the codec's setup over `stream` until the first screen, as the
/// driver's machine does: read, answer what the codec owes, until `Done`;
/// the session's mode with what it moved.
fn logon(codec: &Client, stream: &mut TcpStream) -> Result<Logon, String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut state = ClientState::default();
    let mut step = codec.setup_open(&mut state);
    let (mut received, mut sent) = (0, 0);
    let mut buf = [0u8; 4096];
    loop {
        if matches!(step, Setup::Send | Setup::SendLast) {
            let mut out = vec![0; codec.setup_bytes(&state) as usize];
            codec.fill_setup(&state, 0, &mut out);
            stream.write_all(&out).map_err(|e| e.to_string())?;
            sent += out.len() as u64;
        }
        if matches!(step, Setup::Done | Setup::SendLast) {
            let mode = codec.settled(&state).map_or("?", |s| s.mode);
            return Ok(Logon {
                received,
                sent,
                mode,
            });
        }
        let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err(format!("hercules closed after {received} bytes"));
        }
        received += n as u64;
        step = codec
            .setup_received(&mut state, &buf[..n])
            .map_err(|f| f.0)?;
    }
}

#[test]
fn hercules_logs_each_terminal_on_with_its_logo_screen() {
    let test = "hercules_logs_each_terminal_on_with_its_logo_screen";
    let dir = std::env::temp_dir().join(format!("stackbench-hercules-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let Some(hercules) = Hercules::start(&dir) else {
        return skip(Tier::Hercules, test, "no runnable hercules on PATH");
    };
    let shape = |tn3270e| ClassShape {
        h2: Default::default(),
        kind: Kind::Crr,
        request_bytes: 100,
        response_bytes: 800,
        crr_close: CrrClose::Client,
        target: None,
        tn3270: Tn3270Options {
            tn3270e,
            ..Tn3270Options::default()
        },
        amqp: Default::default(),
    };
    // `tn3270e auto`, the default.
    let codec = Client::of(&shape(Tn3270e::Auto));
    let mut logons = Vec::new();
    for _ in 0..3 {
        let mut stream = hercules.connect();
        let logon = logon(&codec, &mut stream)
            .unwrap_or_else(|e| panic!("logon {}: {e}\n{}", logons.len() + 1, hercules.log()));
        drop(stream);
        logons.push(logon);
        // Hercules frees the device when its console thread sees the close.
        std::thread::sleep(Duration::from_millis(300));
    }
    // Every terminal got its screen, and each logon moved the same bytes:
    // the same negotiation, answered the same way, and the same logo.
    assert_eq!(logons.len(), 3);
    assert!(logons.iter().all(|l| l == &logons[0]), "{logons:?}");
    assert!(logons[0].received > 100, "a logo screen: {logons:?}");
    // Hercules 3.13 asks for TERMINAL-TYPE, EOR and BINARY but offers no
    // TN3270E (its console never sends DO TN3270E): `auto` falls back to
    // plain TN3270, and the terminal's answers are a logon's less the
    // WONT TN3270E.
    assert_eq!(logons[0].mode, "tn3270", "{logons:?}");
    assert_eq!(logons[0].sent, LOGON_BYTES_IN - 3, "{logons:?}");
    // `tn3270e on` refuses it in one line naming what the server did.
    let on = Client::of(&shape(Tn3270e::On));
    let mut stream = hercules.connect();
    let fault = logon(&on, &mut stream).expect_err("tn3270e on against hercules");
    assert!(
        fault.contains("asks for TERMINAL-TYPE") && fault.contains("tn3270e is on"),
        "{fault}"
    );
    drop(stream);
    drop(hercules);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The driver runs a script against hercules (`tn3270://` target, no
/// control connection): the first screen must show hercules' logo text,
/// which it does, so each session logs on; the step then presses ENTER,
/// which nothing answers with no operating system IPLed, so its wait times
/// out, counted with the logo screen seen instead, and the session logs
/// on again — the run goes on. A script whose first screen text is not on
/// the logo fails each logon as `first_screen`, naming what it read.
#[test]
fn hercules_runs_a_script_that_waits_for_its_logo() {
    use std::sync::atomic::AtomicBool;

    use stackbench_engine::{run_workload, ControlClient};
    use stackbench_model::settings::Tn3270Options;
    use stackbench_model::tn3270_script::{Script, ScriptRef};
    use stackbench_model::AppProtocol;

    let test = "hercules_runs_a_script_that_waits_for_its_logo";
    let dir = std::env::temp_dir().join(format!("stackbench-hercules-s-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let Some(hercules) = Hercules::start(&dir) else {
        return skip(Tier::Hercules, test, "no runnable hercules on PATH");
    };
    drop(hercules.connect());
    std::thread::sleep(Duration::from_millis(300));
    let run = |text: &str| {
        let script = Script::parse("hercules.script", text, (24, 80)).unwrap();
        let mut cfg = super::config("RR1(100B/800B)", 1);
        cfg.transactions = None;
        cfg.duration = Some(Duration::from_millis(3000));
        cfg.threads = 1;
        cfg.protocol = AppProtocol::Tn3270;
        cfg.tn3270 = Tn3270Options {
            script: Some(ScriptRef(Script::intern(script))),
            ..Tn3270Options::default()
        };
        let mut plain = ControlClient::connect(&format!("tn3270://127.0.0.1:{}", hercules.port))
            .unwrap_or_else(|e| panic!("{e}\n{}", hercules.log()));
        let stop = AtomicBool::new(false);
        run_workload(&mut plain, &cfg, &stop, &mut |_| {}).unwrap()
    };
    let out = run("wait \"The S/370, ESA/390 and z/Architecture\"\n\
                   step enter\n key ENTER\n wait \"NO OPERATING SYSTEM\" timeout 500ms\n");
    let c = &out.classes[0];
    let sessions = c.sessions.as_ref().expect("sessions");
    let steps = c.steps.as_ref().expect("steps");
    assert!(
        steps[0].timeouts >= 1,
        "{steps:?} {sessions:?} {:?} {:?}\n{}",
        c.error_counts,
        out.incomplete_reason,
        hercules.log()
    );
    assert_eq!(steps[0].transactions, 0);
    let seen = steps[0].seen.as_deref().unwrap();
    assert!(
        seen.contains("Hercules") && seen.contains("Emulator"),
        "{seen}"
    );
    // Every timeout logged on again, each logon passing the first wait.
    assert!(
        sessions.negotiated.get("tn3270") >= Some(&steps[0].timeouts),
        "{sessions:?}"
    );
    assert!(
        !sessions.failed.contains_key("first_screen"),
        "{sessions:?}"
    );
    assert_eq!(c.error_counts.timeout, steps[0].timeouts);
    // A first screen without the text: each logon fails, by name.
    std::thread::sleep(Duration::from_millis(300));
    let out = run("wait \"CICS SIGNON\"\nstep enter\n key ENTER\n");
    let c = &out.classes[0];
    assert!(!out.complete);
    let failed = c.sessions.as_ref().unwrap().failed.get("first_screen");
    assert!(failed.is_some_and(|&n| n >= 1), "{:?}", c.sessions);
    let reason = out.incomplete_reason.unwrap_or_default();
    assert!(
        reason.contains("does not show \"CICS SIGNON\"") && reason.contains("Hercules"),
        "{reason}"
    );
    drop(hercules);
    let _ = std::fs::remove_dir_all(&dir);
}
