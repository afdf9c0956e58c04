//! The `tls` transport: every workload kind over TLS 1.2 and 1.3 with the
//! seeds' suites, against an in-process responder.

use stackbench_engine::RunConfig;
use stackbench_model::settings::{CertType, CipherSuite, SettingValue, TlsVersion};
use stackbench_model::{CrrClose, TlsParams, Transport};

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
        for close in [CrrClose::Server, CrrClose::Client, CrrClose::Abort] {
            let mut cfg = tls(cipher, CertType::Rsa2048, "CRR4(64B/8kB)", 41);
            cfg.socket.crr_close = close;
            let out = run(&h, &cfg);
            assert_exact(&out, 41);
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
    assert_exact(&run(&h, &cfg), 20);
}
