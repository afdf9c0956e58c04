//! The server side of a real AMQP 1.0 broker (Debian's RabbitMQ, started
//! by the test on loopback with its own data directory): found by its
//! listening socket, its processes are the Erlang VM and its helpers, and
//! their CPU, storage bytes and connections are sampled as a plain server's
//! side. The AMQP protocol row is another module's; here the broker is
//! driven only with AMQP 1.0 SASL headers, which it answers.

use std::io::{Read, Write};
use std::net::TcpStream;

use stackbench_engine::control::Reply;
use stackbench_engine::server_side::{listeners, ServerSide};
use stackbench_metrics::cpu::{side_cpu, Work};
use stackbench_record::ServerFoundBy;
use stackbench_testkit::broker::{amqp_header_answered, Broker, SASL_HEADER};

fn exe_name(pid: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[test]
fn a_broker_is_found_by_its_listener_and_sampled_as_the_server_side() {
    let test = "a_broker_is_found_by_its_listener_and_sampled_as_the_server_side";
    let broker = match Broker::start() {
        Ok(b) => b,
        Err(skip) => return skip.skip(test),
    };
    assert!(broker.url().starts_with("amqp://127.0.0.1:"));
    let side = ServerSide::find(broker.addr()).expect("the broker's listener is found");
    let id = &side.identity;
    assert_eq!(id.found_by, ServerFoundBy::ListeningSocket);
    // The Erlang VM holds the listener; every process found is the broker's.
    let started = broker.pids();
    let vm = id.pids.iter().find(|&&p| exe_name(p) == "beam.smp");
    assert!(vm.is_some(), "no beam.smp among {:?}", id.pids);
    assert!(id.exe.as_deref().unwrap().ends_with("beam.smp"), "{id:?}");
    assert!(
        id.pids.iter().all(|p| started.contains(p)),
        "{id:?} ⊄ {started:?}"
    );
    assert!(id.pids.len() >= 2, "the VM and its helpers: {:?}", id.pids);

    // Connections held open across the window, each with the SASL header
    // exchanged, and more opened and closed inside it: broker work.
    let sample = || match side.sample() {
        Some(Reply::Sample { cpu, memory, .. }) => (cpu, memory.unwrap()),
        other => panic!("no sample: {other:?}"),
    };
    let (start, _) = sample();
    let mut held = Vec::new();
    for _ in 0..20 {
        let mut s = TcpStream::connect(broker.addr()).unwrap();
        s.write_all(&SASL_HEADER).unwrap();
        let mut back = [0u8; 8];
        s.read_exact(&mut back).unwrap();
        assert_eq!(back, SASL_HEADER);
        held.push(s);
    }
    for _ in 0..200 {
        assert!(amqp_header_answered(broker.addr(), &SASL_HEADER));
    }
    let (end, memory) = sample();
    let work = Work {
        transactions: 220,
        payload_bytes: 0,
    };
    let cpu = side_cpu(&start, &end, &[], work).unwrap();
    let process = cpu.process.expect("the broker's process CPU");
    assert!(process.cpu_seconds > 0.0, "{process:?}");
    assert!(cpu.process_cpu_us_per_tran.unwrap() > 0.0);
    let disk = cpu.disk.expect("the broker's storage bytes (/proc/PID/io)");
    assert_eq!(
        disk.write_bytes_per_tran,
        Some(disk.write_bytes as f64 / 220.0)
    );
    // The server ends of the held connections (closed ones may linger).
    let sockets = memory.own_sockets.expect("the broker's sockets");
    assert!(sockets.sockets >= 20, "{sockets:?}");
    assert!(memory.rss_bytes > 0);
    drop(held);

    // Stopped on drop: every process it started, its epmd too.
    let (port, epmd) = (broker.port(), broker.epmd_port());
    drop(broker);
    for pid in &started {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z"),
            "{pid} still runs: {stat}"
        );
    }
    assert!(
        listeners(port).unwrap().is_empty(),
        "the broker still listens"
    );
    assert!(
        listeners(epmd).unwrap().is_empty(),
        "its epmd still listens"
    );
}
