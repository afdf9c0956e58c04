//! `--tls-mode sidecar` (a TLS proxy process per side): runs through
//! the proxy processes count exactly, the responder's samples include its
//! proxy, `openssl s_client` against the server proxy gets the configured
//! suite, and no proxy outlives its run or its parent. One test, serial:
//! the leftover check looks at every proxy this binary started.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stackbench_engine::control::{Reply, TestSpec};
use stackbench_engine::transport::Endpoint;
use stackbench_engine::ControlClient;
use stackbench_model::settings::{CertType, CipherSuite, SettingValue, TlsMode};
use stackbench_model::{Kind, SocketOptions, TlsParams, Transport};

use crate::common::*;
use crate::run::{assert_incomplete, start_cut_run, Serve};

/// Pids of live `__tls-proxy` processes of this build's binary.
fn live_proxies() -> Vec<u32> {
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_stackbench")).unwrap();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let is_proxy = String::from_utf8_lossy(&cmdline).contains("__tls-proxy");
        if is_proxy && std::fs::read_link(entry.path().join("exe")).ok() == Some(exe.clone()) {
            pids.push(pid);
        }
    }
    pids
}

/// Waits (bounded) until no proxy of this binary is left.
fn assert_no_proxy_left(when: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !live_proxies().is_empty() {
        assert!(
            Instant::now() < deadline,
            "proxies left {when}: {:?}",
            live_proxies()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sidecar_run(workload: &str, extra: &[&str]) -> Value {
    let flags = [&["--transport", "tls", "--tls-mode", "sidecar"][..], extra].concat();
    run_json(workload, 60, &flags)
}

/// Exact counts through both proxies, the negotiated suite named.
fn rr_and_crr_count_exactly() {
    for (workload, req, resp, extra) in [
        ("RR2(100B/3kB)", 100, 3072, &["--cipher", "C02F"][..]),
        ("CRR2(64B/8kB)", 64, 8192, &["--resume-ratio", "0.5"][..]),
    ] {
        let doc = sidecar_run(workload, extra);
        assert_eq!(doc["complete"], true, "{workload}");
        assert_eq!(doc["settings"]["tls_mode"], "sidecar");
        let c = &doc["classes"][0];
        assert_eq!(c["transactions"], 60, "{workload}");
        assert_eq!(c["errors"], 0, "{workload}");
        assert_eq!(c["tx_bytes"], 60 * req, "{workload}");
        assert_eq!(c["rx_bytes"], 60 * resp, "{workload}");
        let tls = &c["tls"];
        let handshakes =
            tls["full_handshakes"].as_u64().unwrap() + tls["resumed_handshakes"].as_u64().unwrap();
        if workload.starts_with("CRR") {
            assert_eq!(tls["version"], "1.3", "{tls}");
            assert!(handshakes >= 60, "one handshake per connection: {tls}");
            assert!(tls["resumed_handshakes"].as_u64().unwrap() > 0, "{tls}");
        } else {
            assert_eq!(tls["cipher_code"], "C02F", "{tls}");
            assert_eq!(tls["cipher"], "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
            assert_eq!(handshakes, 2, "{tls}");
        }
        assert_no_proxy_left(&format!("after {workload}"));
    }
}

/// The pids a responder's sample sums.
fn sampled_pids(control: &mut ControlClient) -> Vec<u32> {
    match control.sample().unwrap() {
        Reply::Sample { pids, .. } => pids,
        other => panic!("{other:?}"),
    }
}

fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Starts a sidecar test with suite C02F on `serve`; returns its id and the
/// server proxy's endpoint.
fn start_sidecar_test(control: &mut ControlClient) -> (u64, String) {
    let suite = CipherSuite::parse("C02F").unwrap();
    let tls = TlsParams {
        mode: TlsMode::Sidecar,
        ..TlsParams::resolve(None, Some(suite), None, CertType::Rsa2048, None, None).unwrap()
    };
    let spec = TestSpec {
        kind: Kind::Rr,
        request_bytes: 10,
        response_bytes: 20,
        socket: SocketOptions::default(),
        spin: false,
        io: Default::default(),
        protocol: Default::default(),
        tn3270: Default::default(),
    };
    let (id, endpoints) = control
        .start_tls(spec, Transport::Tls, 1, 1, Some(tls))
        .unwrap();
    match &endpoints[..] {
        [Endpoint::Inet(a)] => (id, a.to_string()),
        other => panic!("{other:?}"),
    }
}

/// The responder counts its proxy; s_client offering all its 1.2 suites
/// gets the configured one from the proxy; stop and a killed responder
/// both end the proxy.
fn server_proxy_is_counted_and_speaks_the_configured_suite() {
    let serve = Serve::start();
    let mut control = ControlClient::connect(&serve.addr).unwrap();
    assert_eq!(sampled_pids(&mut control), vec![serve.child.id()]);
    let (id, endpoint) = start_sidecar_test(&mut control);
    let pids = sampled_pids(&mut control);
    assert_eq!(pids.len(), 2, "responder and its proxy: {pids:?}");
    assert_eq!(parent_of(pids[1]), serve.child.id());
    if Command::new("openssl").arg("version").output().is_ok() {
        let out = Command::new("openssl")
            .args(["s_client", "-connect", &endpoint, "-tls1_2"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("Cipher is ECDHE-RSA-AES128-GCM-SHA256") && text.contains("TLSv1.2"),
            "{text}"
        );
    } else {
        stackbench_testkit::skip(
            stackbench_testkit::Tier::Openssl,
            "the sidecar's s_client part",
            "no openssl command (apt package openssl)",
        );
    }
    control.stop(id).unwrap();
    assert_eq!(sampled_pids(&mut control), vec![serve.child.id()]);
    assert_no_proxy_left("after stop");
    // A responder killed outright takes its proxy with it (PR_SET_PDEATHSIG).
    let (_, _) = start_sidecar_test(&mut control);
    assert_eq!(live_proxies().len(), 1);
    drop(serve);
    assert_no_proxy_left("after the responder was killed");
}

/// Ctrl-C reaches the terminal's whole process group: the proxies ignore
/// it, the driver stops them, their report still arrives, none is left.
fn ctrl_c_leaves_no_proxy() {
    let sidecar = ["--transport", "tls", "--tls-mode", "sidecar", "--no-store"];
    let driver = start_cut_run("RR2(1B/1B)", &sidecar);
    for pid in std::iter::once(driver.id()).chain(live_proxies()) {
        // SAFETY: plain kill(2) on our own processes.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
    }
    let doc = assert_incomplete(driver, "interrupted");
    assert_eq!(doc["classes"][0]["tls"]["full_handshakes"], 2, "{doc}");
    assert_no_proxy_left("after Ctrl-C");
}

#[test]
fn sidecar_tls_through_proxy_processes() {
    rr_and_crr_count_exactly();
    server_proxy_is_counted_and_speaks_the_configured_suite();
    ctrl_c_leaves_no_proxy();
}
