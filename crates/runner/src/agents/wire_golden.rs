//! The agent wire's saved shapes: one sample of every message, serialized,
//! against `crates/runner/tests/wire/protocol-N.jsonl` for the current
//! [`PROTOCOL`] N. A message whose shape changed fails [`wire_golden`]
//! until the protocol number rises and the new protocol's file is written
//! (`STACKBENCH_BLESS=1` writes a missing file, never an existing one: the
//! files of earlier protocols stay as the record of what they sent).
//!
//! The samples set every optional field that an agent or a controller
//! sends, so that a field added, renamed or retyped below them shows.

use std::path::PathBuf;
use std::time::Duration;

use stackbench_engine::{PacingConfig, RunConfig};
use stackbench_metrics::live::{LiveClass, LiveRun, LiveSide};
use stackbench_metrics::warnings::PathFloor;
use stackbench_metrics::LatencyHistogram;
use stackbench_model::segment::Segment;
use stackbench_model::settings::{
    CertType, ClassPriorities, GenSched, LuName, ResponderApp, ResponderTn3270e, SettingValue,
    Spin, TlsMode, TlsVersion, Tn3270Options, Tn3270e,
};
use stackbench_model::tn3270_script::{Script, ScriptRef};
use stackbench_model::{
    AmqpBody, AmqpCompress, AmqpParams, AmqpPattern, AmqpQueues, AppProtocol, H2Params, IoMode,
    SocketOptions, TlsParams, Transport,
};
use stackbench_record::{
    ClassResult, CpuFigures, ErrorCounts, HttpStatus, PopulationFigures, ScriptStep, Sessions,
    TlsFigures,
};

use super::wire::{
    decode, AgentResult, Decoded, FromAgent, FromController, Hello, ProgressReport, RunOrder,
    PROTOCOL,
};

/// A run configuration with every optional part set.
pub fn run_config() -> RunConfig {
    RunConfig {
        workload: "RR2(64B/1kB)+CRR4(1B/8kB)"
            .parse()
            .expect("sample workload"),
        duration: Some(Duration::from_millis(10_500)),
        warmup: Duration::from_secs(2),
        transactions: Some(1_000_000),
        threads: 2,
        class_workers: true,
        client_cpus: vec![0, 1],
        socket: SocketOptions::default(),
        spin: Spin::Both,
        gen_sched: GenSched::Slice(Duration::from_micros(100)),
        pacing: PacingConfig {
            seed: 7,
            ..PacingConfig::default()
        },
        transport: Transport::Tls,
        tls: Some(TlsParams {
            version: TlsVersion::V13,
            cipher: Some(0x1301),
            groups: vec!["X25519".into()],
            cert_type: CertType::EcdsaP256,
            cert: Some("cert.pem".into()),
            key: Some("key.pem".into()),
            resume_ratio: 0.5,
            mode: TlsMode::Ktls,
            rekey_bytes: 1 << 20,
            alpn: vec!["http/1.1".into()],
            server_name: Some("example.org".into()),
            ca: Some("ca.pem".into()),
            insecure: false,
        }),
        priority: Some(ClassPriorities(vec![1, 2])),
        io: IoMode::Uring,
        protocol: AppProtocol::Http1,
        amqp: AmqpParams {
            pattern: AmqpPattern::PutGet,
            persistent: true,
            credit: 10,
            body: AmqpBody::Text,
            compress: AmqpCompress::ZlibFast,
            queues: AmqpQueues::Shared,
            queue: "q".into(),
            user: Some("u".into()),
            password: Some("p".into()),
        },
        h2: H2Params {
            window_bytes: 1 << 20,
            connection_window_bytes: 1 << 24,
            max_frame_bytes: 65_536,
        },
        http_error_share_pct: 1.0,
        tn3270: Tn3270Options {
            tn3270e: Tn3270e::On,
            model: 4,
            lu: Some(LuName::parse("SBLU0001").expect("an LU name")),
            responder: ResponderTn3270e::Refuse,
            script: Some(ScriptRef(Script::intern(
                Script::parse(
                    "s.script",
                    "wait \"LOGON\"\nstep a\n type \"U\" after \"ID\"\n key PF3\n wait \"M\" timeout 2s\n think 1s\n",
                    (24, 80),
                )
                .expect("a script"),
            ))),
            app: ResponderApp::Demo,
        },
        path: PathFloor::default(),
        segment: Segment::new(1, 2).expect("segment 1/2"),
        live_metrics: true,
    }
}

/// An agent's class result with each optional figure set.
fn class_result() -> ClassResult {
    ClassResult {
        latency_hdr: Some("HISTFAAAA".into()),
        cpu: Some(Default::default()),
        memory: Some(Default::default()),
        population: Some(PopulationFigures {
            generator_lag_us: Some(Default::default()),
            generator_lag_hdr: Some("HISTFAAAA".into()),
            generator_lag_p99_share_pct: Some(25.0),
            ..Default::default()
        }),
        tls: Some(TlsFigures {
            alpn: Some("http/1.1".into()),
            server_verified: Some(true),
            ..Default::default()
        }),
        stall_band: Some(Default::default()),
        served_by: Some(Default::default()),
        http_status: Some(HttpStatus {
            codes: [(200, 9), (404, 1)].into(),
        }),
        sessions: Some(Sessions {
            attempted: 3,
            negotiated: [("tn3270e".to_string(), 2)].into(),
            functions: [("RESPONSES".to_string(), 2)].into(),
            device_types: [("IBM-3278-4-E".to_string(), 2)].into(),
            failed: [("closed".to_string(), 1)].into(),
        }),
        steps: Some(vec![ScriptStep {
            name: "a".into(),
            key: "PF3".into(),
            transactions: 2,
            latency_us: Some(Default::default()),
            latency_hdr: Some("HISTFAAAA".into()),
            timeouts: 1,
            seen: Some("\"LOGON\"".into()),
        }]),
        ..ClassResult::sample()
    }
}

/// The name of a message's kind; a new message does not compile until it
/// is named here (and given a sample in [`samples`]).
fn kind_of_agent(m: &FromAgent) -> &'static str {
    match m {
        FromAgent::Hello(_) => "hello",
        FromAgent::Pong { .. } => "pong",
        FromAgent::Armed { .. } => "armed",
        FromAgent::Progress { .. } => "progress",
        FromAgent::Done { .. } => "done",
        FromAgent::Failed { .. } => "failed",
    }
}

fn kind_of_controller(m: &FromController) -> &'static str {
    match m {
        FromController::Welcome => "welcome",
        FromController::Refused { .. } => "refused",
        FromController::Ping { .. } => "ping",
        FromController::Run { .. } => "run",
        FromController::Start { .. } => "start",
        FromController::Stop { .. } => "stop",
        FromController::Bye => "bye",
    }
}

/// Live figures with every optional figure set.
fn live_run() -> LiveRun {
    let mut latency = LatencyHistogram::new();
    latency.record_ns(25_000);
    let mut lag = LatencyHistogram::new();
    lag.record_ns(1_000);
    LiveRun {
        classes: vec![LiveClass {
            transactions: 10,
            errors: ErrorCounts {
                reset: 1,
                http_status: 2,
                ..ErrorCounts::default()
            },
            http_status: vec![(200, 8), (503, 2)],
            tx_bytes: 100,
            rx_bytes: 800,
            latency,
            lag: Some(lag),
            late: 1,
            dropped: 0,
        }],
        connected: 6,
        client: LiveSide {
            cpu_s: Some(1.25),
            rss_bytes: Some(1 << 20),
        },
        server: LiveSide {
            cpu_s: Some(2.5),
            rss_bytes: Some(2 << 20),
        },
    }
}

/// One sample of every message, agent's first.
fn samples() -> (Vec<FromAgent>, Vec<FromController>) {
    let hello = Hello {
        protocol: PROTOCOL,
        version: "0.1.0".into(),
        commit: "0123456789abcdef0123456789abcdef01234567".into(),
        dirty: true,
        index: 1,
        count: 2,
        host: "h2".into(),
        pid: 4242,
    };
    let progress = ProgressReport {
        elapsed_ns: 1_500_000_000,
        connecting: false,
        connected: 6,
        in_warmup: false,
        measured_ns: Some(500_000_000),
        transactions: vec![10, 20],
        live: Some(live_run()),
    };
    let result = AgentResult {
        classes: vec![class_result()],
        mix_cpu: Some(CpuFigures::default()),
        complete: false,
        incomplete_reason: Some("stopped by the controller".into()),
        window_opened_unix_s: Some(1.75e9),
        responder_host: "h3".into(),
        control_refused: Some(2),
    };
    let agent = vec![
        FromAgent::Hello(hello),
        FromAgent::Pong {
            seq: 3,
            agent_unix_ns: 1_750_000_000_000_000_000,
        },
        FromAgent::Armed { run: 1 },
        FromAgent::Progress { run: 1, progress },
        FromAgent::Done {
            run: 1,
            part: Box::new(result),
        },
        FromAgent::Failed {
            run: 1,
            error: "responder 10.0.0.1:12870: refused".into(),
        },
    ];
    let controller = vec![
        FromController::Welcome,
        FromController::Refused {
            reason: "two agents took segment 1/2".into(),
        },
        FromController::Ping { seq: 3 },
        FromController::Run {
            run: 1,
            order: Box::new(RunOrder::of(&run_config())),
            target: "10.0.0.1:12870".into(),
        },
        FromController::Start {
            run: 1,
            at_unix_ns: 1_750_000_000_100_000_000,
        },
        FromController::Stop { run: 1 },
        FromController::Bye,
    ];
    (agent, controller)
}

/// The samples as the golden file holds them: `KIND LINE`, one a line.
fn golden_text() -> String {
    let (agent, controller) = samples();
    let mut lines = Vec::new();
    for m in &agent {
        let line = serde_json::to_string(m).unwrap();
        lines.push(format!("agent {} {line}", kind_of_agent(m)));
    }
    for m in &controller {
        let line = serde_json::to_string(m).unwrap();
        lines.push(format!("controller {} {line}", kind_of_controller(m)));
    }
    lines.join("\n") + "\n"
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/wire")
}

#[test]
fn wire_golden() {
    let path = golden_dir().join(format!("protocol-{PROTOCOL}.jsonl"));
    let now = golden_text();
    let Ok(saved) = std::fs::read_to_string(&path) else {
        if std::env::var_os("STACKBENCH_BLESS").is_some() {
            std::fs::write(&path, &now).unwrap();
            return;
        }
        panic!(
            "agent wire protocol {PROTOCOL} has no golden file ({}): after raising PROTOCOL, \
             write it with STACKBENCH_BLESS=1 cargo test -p stackbench-runner --lib wire_golden \
             and check it in",
            path.display()
        );
    };
    for (i, (was, is)) in saved.lines().zip(now.lines()).enumerate() {
        assert_eq!(
            was,
            is,
            "line {} of {}: the message's shape changed under agent wire protocol \
             {PROTOCOL}: raise agents::wire::PROTOCOL to {} (an agent of this build must not \
             pass for one of the last), then write protocol-{}.jsonl with STACKBENCH_BLESS=1; \
             protocol-{PROTOCOL}.jsonl stays as it is",
            i + 1,
            path.display(),
            PROTOCOL + 1,
            PROTOCOL + 1
        );
    }
    assert_eq!(
        saved.lines().count(),
        now.lines().count(),
        "{}: a message was added or removed under agent wire protocol {PROTOCOL}: raise \
         PROTOCOL and write the new protocol's file",
        path.display()
    );
}

/// Every line of the current golden file reads back as the message it was
/// made from, through the same decoding as the wire's reader.
#[test]
fn golden_lines_read_back_as_their_messages() {
    let (agent, controller) = samples();
    for (m, line) in agent.iter().zip(golden_text().lines()) {
        let json = line.splitn(3, ' ').nth(2).unwrap();
        let Decoded::Message(back) = decode::<FromAgent>(json) else {
            panic!("{json} does not read back");
        };
        assert_eq!(&back, m);
    }
    let text = golden_text();
    for (m, line) in controller.iter().zip(text.lines().skip(agent.len())) {
        let json = line.splitn(3, ' ').nth(2).unwrap();
        let Decoded::Message(back) = decode::<FromController>(json) else {
            panic!("{json} does not read back");
        };
        assert_eq!(&back, m);
    }
}

/// Every earlier protocol's saved hello is refused by this one with both
/// protocols named: the hello's kept fields (see `wire`'s rule) still read.
#[test]
fn earlier_protocols_hellos_are_refused_by_name() {
    for n in 1..PROTOCOL {
        let path = golden_dir().join(format!("protocol-{n}.jsonl"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}: keep every protocol's file", path.display()));
        let hello = text
            .lines()
            .find_map(|l| l.strip_prefix("agent hello "))
            .unwrap_or_else(|| panic!("{}: no agent hello line", path.display()));
        let Decoded::OtherProtocol(why) = decode::<FromAgent>(hello) else {
            panic!("protocol {n}'s hello was not refused as another protocol's");
        };
        assert!(
            why.contains(&format!("protocol {n} ("))
                && why.contains(&format!("protocol {PROTOCOL} (")),
            "{why}"
        );
    }
}
