//! Unit tests of the kTLS key derivations against published vectors, the
//! kernel's crypto-info layout and the refusals.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    from_hex(&s.replace(' ', ""))
}

/// RFC 8448 §3: the server's handshake and application traffic secrets and
/// the key and IV derived from them (TLS_AES_128_GCM_SHA256).
#[test]
fn tls13_keys_match_rfc8448() {
    let cases = [
        (
            "b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38",
            "3fce516009c21727d0f2e4e86ee403bc",
            "5d313eb2671276ee13000b30",
        ),
        (
            "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643",
            "9f02283b6c9c07efc26bb9f2ac92e356",
            "cf782b88dd83549aadf1e984",
        ),
    ];
    for (secret, key, iv) in cases {
        let k = tls13_keys(Hash::Sha256, 16, &hex(secret)).unwrap();
        assert_eq!(k.key, hex(key));
        assert_eq!([&k.salt[..], &k.iv[..]].concat(), hex(iv));
        assert_eq!(k.seq, 0);
    }
}

/// The TLS 1.2 PRF (P_SHA256) test vector of the IETF TLS list, as also
/// given by `openssl kdf ... TLS1-PRF`.
#[test]
fn tls12_prf_sha256_matches_the_known_vector() {
    let out = prf(
        MessageDigest::sha256(),
        &hex("9bbe436ba940f017b17652849a71db35"),
        "test label",
        &hex("a0ba9f936cda311827a6f796ffd5198c"),
        100,
    )
    .unwrap();
    let want = "e3f229ba727be17b8d122620557cd453c2aab21d07c3d495329b52d4e61edb5a\
                6b301791e90d35c9c9a46b4e14baf9af0fa022f7077def17abfd3797c0564bab\
                4fbc91666e9def9b97fce34f796789baa48082d122ee42c5a72e5a5110fff701\
                87347b66";
    assert_eq!(out, hex(want));
}

#[test]
fn tls12_key_block_splits_keys_then_salts() {
    let (master, cr, sr) = ([7u8; 48], [1u8; 32], [2u8; 32]);
    let (c, s) = tls12_keys(Hash::Sha384, 32, &master, &cr, &sr).unwrap();
    let seed = [&sr[..], &cr[..]].concat();
    let block = prf(MessageDigest::sha384(), &master, "key expansion", &seed, 72).unwrap();
    assert_eq!(c.key, block[..32]);
    assert_eq!(s.key, block[32..64]);
    assert_eq!(c.salt[..], block[64..68]);
    assert_eq!(s.salt[..], block[68..72]);
    assert_eq!((c.seq, s.seq), (1, 1));
}

#[test]
fn crypto_info_has_the_kernel_layout() {
    let k = DirKeys {
        key: vec![0xAA; 16],
        salt: [0xBB; 4],
        iv: [0xCC; 8],
        seq: 1,
    };
    let info = k.crypto_info(TLS_1_2_VERSION);
    assert_eq!(info.len(), 40);
    assert_eq!(info[..4], [0x03, 0x03, 51, 0][..]);
    assert_eq!(info[4..12], [0xCC; 8]);
    assert_eq!(info[12..28], [0xAA; 16]);
    assert_eq!(info[28..32], [0xBB; 4]);
    assert_eq!(info[32..], [0, 0, 0, 0, 0, 0, 0, 1]);
    let k256 = DirKeys {
        key: vec![0; 32],
        ..k
    };
    let info = k256.crypto_info(TLS_1_3_VERSION);
    assert_eq!((info.len(), &info[..4]), (56, &[0x04, 0x03, 52, 0][..]));
}

fn params(version: TlsVersion, cipher: Option<u16>) -> TlsParams {
    TlsParams {
        mode: TlsMode::Ktls,
        cipher,
        ..TlsParams::resolve(Some(version), None, None, Default::default(), None, None).unwrap()
    }
}

#[test]
fn what_the_kernel_cannot_carry_is_refused_in_one_line() {
    for cbc in [0x3C, 0xC027] {
        let e = check(&params(TlsVersion::V12, Some(cbc))).unwrap_err();
        assert!(
            e.contains("C02F") && e.contains("1301") && !e.contains('\n'),
            "{e}"
        );
    }
    assert!(check(&params(TlsVersion::V12, Some(0xC02F))).is_ok());
    assert!(check(&params(TlsVersion::V13, None)).is_ok());
    let resume = TlsParams {
        resume_ratio: 0.5,
        ..params(TlsVersion::V13, Some(0x1301))
    };
    let e = check(&resume).unwrap_err();
    assert!(e.contains("session tickets") && e.contains("1.2"), "{e}");
    let resume12 = TlsParams {
        resume_ratio: 0.5,
        ..params(TlsVersion::V12, None)
    };
    assert!(check(&resume12).is_ok());
    let rekey = TlsParams {
        rekey_bytes: 1 << 20,
        ..params(TlsVersion::V13, None)
    };
    assert!(check(&rekey).unwrap_err().contains("key update"));
    let inline = TlsParams {
        mode: TlsMode::Inline,
        ..params(TlsVersion::V12, Some(0x3C))
    };
    assert!(check(&inline).is_ok());
}

#[test]
fn tls_stat_reads_the_counters_it_knows() {
    let text = "TlsCurrTxSw                     \t2\nTlsCurrRxSw  2\nTlsTxSw 10\nTlsRxSw 9\n\
                TlsTxDevice 0\nTlsDecryptError 1\nTlsRxNoPadViolation 3\nTlsNew 5\n";
    let c = parse_tls_stat(text);
    assert_eq!((c.tx_sw, c.rx_sw, c.decrypt_errors), (10, 9, 1));
    assert_eq!(c.rx_no_pad_violations, 3);
}

#[test]
fn keylog_lines_parse_as_hex() {
    assert_eq!(from_hex("00ff10"), vec![0, 255, 16]);
}
