//! The `tls` transport: every workload kind over TLS 1.2 and 1.3 with the
//! cipher suites z/OS AT-TLS measurements compare, against an in-process responder.

use std::io::ErrorKind;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use stackbench_engine::transport::{self, tls, tls::Handshake};
use stackbench_engine::RunConfig;
use stackbench_model::settings::{CertType, CipherSuite, SettingValue, TlsVersion};
use stackbench_model::{CrrClose, SocketOptions, TlsParams, Transport};

use super::{assert_exact, config, responder, run};

fn tls(cipher: &str, cert: CertType, workload: &str, transactions: u64) -> RunConfig {
    let suite = CipherSuite::parse(cipher).unwrap();
    RunConfig {
        transport: Transport::Tls,
        tls: Some(TlsParams::resolve(None, Some(suite), None, cert, None, None).unwrap()),
        ..config(workload, transactions)
    }
}

#[test]
fn every_kind_runs_over_tls() {
    let h = responder("127.0.0.1:0");
    for cipher in ["C02F", "1301"] {
        let out = run(&h, &tls(cipher, CertType::Rsa2048, "RR10(4kB/4kB)", 503));
        assert_exact(&out, 503);
        assert_eq!(out.server_stats[0].connections, 10, "{cipher}");
        // The result names what was negotiated.
        let t = out.classes[0].tls.as_ref().expect("tls figures");
        assert_eq!(t.cipher_code, cipher);
        assert_eq!(t.full_handshakes + t.resumed_handshakes, 10, "{t:?}");
        assert!(t.handshake_latency_us.unwrap().max > 0.0, "{t:?}");
        for close in [CrrClose::Server, CrrClose::Client, CrrClose::Abort] {
            let mut cfg = tls(cipher, CertType::Rsa2048, "CRR4(64B/8kB)", 41);
            cfg.socket.crr_close = close;
            let out = run(&h, &cfg);
            assert_exact(&out, 41);
            let t = out.classes[0].tls.as_ref().expect("tls figures");
            assert_eq!((t.full_handshakes, t.resumed_handshakes), (41, 0), "{t:?}");
            assert_eq!(out.server_stats[0].connections, 41, "{cipher} {close:?}");
        }
        // Large messages span many records: reads must drain the socket.
        assert_exact(
            &run(&h, &tls(cipher, CertType::Rsa2048, "STR3(1B/2MB)", 5)),
            5,
        );
        assert_exact(
            &run(&h, &tls(cipher, CertType::Rsa2048, "STR3(2MB/1B)", 5)),
            5,
        );
        assert_exact(
            &run(&h, &tls(cipher, CertType::Rsa2048, "RR2(70kB/300kB)", 20)),
            20,
        );
    }
}

#[test]
fn rsa_key_exchange_and_ecdsa_certificates_work() {
    let h = responder("127.0.0.1:0");
    for cipher in ["3C", "9C", "C027"] {
        assert_exact(
            &run(&h, &tls(cipher, CertType::Rsa2048, "CRR2(64B/1kB)", 20)),
            20,
        );
    }
    let cfg = tls("1302", CertType::EcdsaP256, "CRR2(64B/1kB)", 20);
    assert_eq!(cfg.tls.as_ref().unwrap().version, TlsVersion::V13);
    let out = run(&h, &cfg);
    assert_exact(&out, 20);
    let t = out.classes[0].tls.as_ref().unwrap();
    assert_eq!(
        (t.version.as_str(), t.cipher.as_str()),
        ("1.3", "TLS_AES_256_GCM_SHA384")
    );
}

/// Serves one TLS connection configured with `cipher` to `openssl s_client`
/// offering its defaults for the version; returns s_client's output and what
/// our side negotiated.
fn s_client_against(cipher: &str, version_flag: &str) -> Option<(String, Handshake)> {
    if Command::new("openssl").arg("version").output().is_err() {
        let why = "no openssl command (apt package openssl)";
        stackbench_testkit::skip(stackbench_testkit::Tier::Openssl, "s_client", why);
        return None;
    }
    let suite = CipherSuite::parse(cipher).unwrap();
    let params =
        TlsParams::resolve(None, Some(suite), None, CertType::Rsa2048, None, None).unwrap();
    let addr = "127.0.0.1:0".parse().unwrap();
    let listener = transport::listen_inet(
        transport::row(Transport::Tls),
        addr,
        &SocketOptions::default(),
    )
    .unwrap()
    .with_tls(tls::server_context(&params).unwrap());
    let port = listener.local_addr().unwrap().port();
    let child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &format!("127.0.0.1:{port}"),
            version_flag,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut stream = loop {
        match listener.accept() {
            Ok(s) => break s,
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!("accept: {e}"),
        }
    };
    let mut buf = [0u8; 4096];
    let mut handshake = None;
    while Instant::now() < deadline {
        let r = stream.recv(&mut buf, false);
        handshake = handshake.or_else(|| stream.take_handshake());
        match r {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10))
            }
            // s_client closes when its stdin ends, after the handshake.
            _ => break,
        }
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some((text, handshake.expect("the handshake finished")))
}

/// Interop and truth: `openssl s_client` offering all its suites gets
/// exactly the configured version and cipher, and our side reports the same.
#[test]
fn s_client_negotiates_the_configured_version_and_cipher() {
    for (cipher, flag, proto, name) in [
        ("C02F", "-tls1_2", "TLSv1.2", "ECDHE-RSA-AES128-GCM-SHA256"),
        ("9C", "-tls1_2", "TLSv1.2", "AES128-GCM-SHA256"),
        ("1302", "-tls1_3", "TLSv1.3", "TLS_AES_256_GCM_SHA384"),
    ] {
        let Some((text, ours)) = s_client_against(cipher, flag) else {
            return;
        };
        let line = format!("New, {proto}, Cipher is {name}");
        assert!(text.contains(&line), "{cipher}: no '{line}' in:\n{text}");
        assert_eq!(format!("{:X}", ours.cipher), cipher);
    }
}

/// Resume ratio 1: after a worker's first full handshakes, every CRR
/// connection offers the last session and gets an abbreviated handshake
/// (TLS 1.2 session tickets or IDs, TLS 1.3 PSK tickets).
#[test]
fn resume_ratio_one_resumes_all_but_the_first_handshakes() {
    let h = responder("127.0.0.1:0");
    for cipher in ["C02F", "1301"] {
        let mut cfg = tls(cipher, CertType::Rsa2048, "CRR4(64B/1kB)", 61);
        cfg.tls.as_mut().unwrap().resume_ratio = 1.0;
        let out = run(&h, &cfg);
        assert_exact(&out, 61);
        let t = out.classes[0].tls.as_ref().unwrap();
        assert_eq!(t.full_handshakes + t.resumed_handshakes, 61, "{t:?}");
        // At most one full handshake per client before a session exists.
        assert!((1..=4).contains(&t.full_handshakes), "{cipher}: {t:?}");
    }
}
