//! `--rekey` and the CPU per handshake: the sender's count of key updates
//! is checked against what the peer's OpenSSL says it RECEIVED (a message
//! callback counting KeyUpdate messages), within bounds — a key update
//! started after a connection's last send is never sent.

use stackbench_engine::transport::tls_acct;
use stackbench_model::settings::{CertType, CipherSuite, SettingValue};
use stackbench_model::{TlsParams, Transport};

use super::{assert_exact, config, responder, run};

const REKEY_BYTES: u64 = 256 << 10;

fn rekeying(cipher: &str, workload: &str, transactions: u64) -> stackbench_engine::RunConfig {
    let suite = CipherSuite::parse(cipher).unwrap();
    let mut p = TlsParams::resolve(None, Some(suite), None, CertType::Rsa2048, None, None).unwrap();
    p.rekey_bytes = REKEY_BYTES;
    stackbench_engine::RunConfig {
        transport: Transport::Tls,
        tls: Some(p),
        ..config(workload, transactions)
    }
}

/// Expected key updates for `bytes` sent over `conns` connections: one per
/// REKEY_BYTES, less at most one per connection left unsent at its end.
fn assert_near(what: &str, got: u64, bytes: u64, conns: u64) {
    let want = bytes / REKEY_BYTES;
    assert!(
        got + conns >= want && got <= want + conns,
        "{what}: {got} key updates for {bytes} bytes sent (expected about {want})"
    );
}

#[test]
fn rekey_moves_bytes_over_size_key_updates_seen_by_the_peer() {
    let h = responder("127.0.0.1:0");
    for cipher in ["1301", "1302"] {
        // The driver sends (STR PUT): the responder receives the updates.
        let before = tls_acct::key_updates_received();
        let out = run(&h, &rekeying(cipher, "STR1(2MB/1B)", 8));
        assert_exact(&out, 8);
        let t = out.classes[0].tls.as_ref().expect("tls figures");
        let received = tls_acct::key_updates_received() - before;
        assert_near("driver started", t.rekeys, out.classes[0].tx_bytes, 1);
        assert_near("responder received", received, out.classes[0].tx_bytes, 1);
        assert!(
            received <= t.rekeys,
            "{received} received, {} sent",
            t.rekeys
        );

        // The responder sends (STR GET): the driver receives them.
        let before = tls_acct::key_updates_received();
        let out = run(&h, &rekeying(cipher, "STR1(1B/2MB)", 8));
        assert_exact(&out, 8);
        let t = out.classes[0].tls.as_ref().expect("tls figures");
        let received = tls_acct::key_updates_received() - before;
        let sent = out.server_stats[0].tx_bytes;
        assert_near("responder started", t.server_rekeys, sent, 1);
        assert_near("driver received", received, sent, 1);
        assert_eq!(t.rekeys, 0, "the driver sent no 256kB");
    }
}

#[test]
fn handshake_cpu_is_measured_per_side_and_kind() {
    let h = responder("127.0.0.1:0");
    let mut cfg = rekeying("C02F", "CRR2(64B/1kB)", 20);
    cfg.tls.as_mut().unwrap().rekey_bytes = 0;
    let out = run(&h, &cfg);
    assert_exact(&out, 20);
    let cpu = out.classes[0]
        .tls
        .as_ref()
        .unwrap()
        .handshake_cpu_us
        .unwrap();
    assert!(cpu.client_full.unwrap() > 0.0, "{cpu:?}");
    assert!(cpu.server_full.unwrap() > 0.0, "{cpu:?}");
    assert_eq!((cpu.client_resumed, cpu.server_resumed), (None, None));

    cfg.tls.as_mut().unwrap().resume_ratio = 1.0;
    let out = run(&h, &cfg);
    let cpu = out.classes[0]
        .tls
        .as_ref()
        .unwrap()
        .handshake_cpu_us
        .unwrap();
    assert!(cpu.client_resumed.unwrap() > 0.0, "{cpu:?}");
    assert!(cpu.server_resumed.unwrap() > 0.0, "{cpu:?}");
}
