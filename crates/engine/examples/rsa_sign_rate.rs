//! The full handshake's floor, measured with the OpenSSL stackbench links
//! (the vendored build, not the system's `openssl speed`): RSA-2048 private-key
//! signatures per second on the calling thread, as the server's certificate
//! signs one ECDHE key share per full handshake (C02F). `bench/tls.sh` runs it
//! pinned to the server's CPU next to `openssl speed rsa2048`, whose library
//! may be another version.
//!
//! Usage: `cargo run --release -p stackbench-engine --example rsa_sign_rate -- SECONDS`
//! prints `rsa2048_signs_per_s N openssl VERSION`.

use std::time::{Duration, Instant};

use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::rsa::{Padding, Rsa};
use openssl::sign::Signer;

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("SECONDS: a number, e.g. 5"))
        .unwrap_or(5.0);
    let key = PKey::from_rsa(Rsa::generate(2048).expect("RSA-2048 key")).expect("key");
    // What a TLS 1.2/1.3 server signs with an RSA certificate by default:
    // RSA-PSS over SHA-256 of the handshake's params (PKCS#1 v1.5 costs the same
    // private-key operation).
    let data = [0x5a_u8; 128];
    let window = Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let mut signs = 0_u64;
    while start.elapsed() < window {
        let mut signer = Signer::new(MessageDigest::sha256(), &key).expect("signer");
        signer.set_rsa_padding(Padding::PKCS1_PSS).expect("PSS");
        signer.update(&data).expect("update");
        let sig = signer.sign_to_vec().expect("sign");
        assert_eq!(sig.len(), 256);
        signs += 1;
    }
    let rate = signs as f64 / start.elapsed().as_secs_f64();
    println!(
        "rsa2048_signs_per_s {rate:.0} openssl {}",
        openssl::version::version()
    );
}
