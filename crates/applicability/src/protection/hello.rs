//! What a TLS handshake shows on the wire before anything is encrypted:
//! the ClientHello's offer (versions, cipher suites, key-exchange groups)
//! and the server's choice (the ServerHello's version and suite, the group
//! of its TLS 1.3 key share or of its TLS 1.2 ServerKeyExchange). Read from
//! the first bytes of each direction of a connection with `tls-parser`
//! (Rusticata's parser, as Suricata uses it); nothing is decrypted, and a
//! stream that is not TLS reads as such after its first five bytes.

use tls_parser::{
    parse_ecdh_params, parse_tls_extensions, parse_tls_message_handshake, parse_tls_raw_record,
    ECParametersContent, NamedGroup, TlsCipherSuite, TlsExtension, TlsMessage, TlsMessageHandshake,
    TlsRecordType,
};

/// The outcome of reading the start of one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read<T> {
    /// A record is incomplete: more bytes of the stream are needed.
    More,
    /// Part of what is looked for (the ServerHello without the
    /// ServerKeyExchange that follows it); more bytes are needed for the rest.
    Partial(T),
    /// The stream does not start with a TLS handshake.
    NotTls,
    Done(T),
}

/// The client's offer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Offer {
    /// `supported_versions`, else the ClientHello's own version.
    pub versions: Vec<u16>,
    pub suites: Vec<u16>,
    /// `supported_groups`.
    pub groups: Vec<u16>,
}

/// The server's choice.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Choice {
    /// TLS 1.3's `supported_versions`, else the ServerHello's version.
    pub version: u16,
    pub suite: u16,
    /// The key share's group (TLS 1.3) or the ServerKeyExchange's named
    /// curve (TLS 1.2 ECDHE); `None` for RSA key exchange, and for an
    /// ECDHE suite whose ServerKeyExchange was not read.
    pub group: Option<u16>,
}

/// The IANA name of a cipher suite (tls-parser's table), else its hex code.
pub fn suite_name(id: u16) -> String {
    TlsCipherSuite::from_id(id).map_or_else(|| format!("0x{id:04X}"), |s| s.name.to_string())
}

/// The name of a key-exchange group as the `groups` setting spells it
/// where it has one (P-256, X25519), else tls-parser's, else its code.
pub fn group_name(id: u16) -> String {
    match id {
        23 => "P-256".into(),
        24 => "P-384".into(),
        25 => "P-521".into(),
        29 => "X25519".into(),
        30 => "X448".into(),
        // draft-ietf-tls-ecdhe-mlkem, OpenSSL 3.5's first default share.
        0x11EC => "X25519MLKEM768".into(),
        _ => {
            let debug = format!("{:?}", NamedGroup(id));
            if debug.starts_with("NamedGroup(") {
                format!("0x{id:04X}")
            } else {
                debug
            }
        }
    }
}

/// The handshake messages of the first records of `stream` until `want`
/// finds what it looks for; `More` (or `Partial`) while a record or a
/// message is cut, `NotTls` when the stream's first record is not a
/// handshake. A message may span records (a TLS 1.2 Certificate chain over
/// 16 kB): the handshake records' bodies are joined and the messages read
/// from the join, tls-parser's two-step parsing (its `src/lib.rs` docs:
/// `parse_tls_raw_record`, then the messages from the record data).
fn walk<T>(
    stream: &[u8],
    mut want: impl FnMut(&TlsMessageHandshake, &mut Option<T>) -> bool,
) -> Read<T> {
    let mut rest = stream;
    let mut found = None;
    let mut first = true;
    let mut joined: Vec<u8> = Vec::new();
    let mut used = 0;
    let more = |found: Option<T>| found.map_or(Read::More, Read::Partial);
    loop {
        if rest.len() < 5 {
            return if first && rest.first().is_some_and(|&b| b != 0x16) {
                Read::NotTls
            } else {
                more(found)
            };
        }
        let Ok((after, raw)) = parse_tls_raw_record(rest) else {
            return if first && rest[0] != 0x16 {
                Read::NotTls
            } else {
                more(found)
            };
        };
        if raw.hdr.record_type != TlsRecordType::Handshake {
            // Past the plaintext handshake (ChangeCipherSpec, encrypted
            // records): what was looked for is not coming.
            return match (first, found) {
                (true, _) => Read::NotTls,
                (false, Some(t)) => Read::Done(t),
                (false, None) => Read::NotTls,
            };
        }
        first = false;
        joined.extend_from_slice(raw.data);
        while let Ok((left, m)) = parse_tls_message_handshake(&joined[used..]) {
            let next = joined.len() - left.len();
            if let TlsMessage::Handshake(h) = &m {
                if want(h, &mut found) {
                    return found.map_or(Read::NotTls, Read::Done);
                }
            }
            used = next;
        }
        rest = after;
    }
}

/// The ClientHello at the start of a client's stream.
pub fn client_offer(stream: &[u8]) -> Read<Offer> {
    walk(stream, |h, found| {
        let TlsMessageHandshake::ClientHello(ch) = h else {
            return true; // the first message of a client is its hello
        };
        let mut offer = Offer {
            versions: vec![ch.version.0],
            suites: ch.ciphers.iter().map(|c| c.0).collect(),
            groups: Vec::new(),
        };
        let exts = ch.ext.and_then(|e| parse_tls_extensions(e).ok());
        for e in exts.map(|(_, e)| e).unwrap_or_default() {
            match e {
                TlsExtension::SupportedVersions(v) => {
                    offer.versions = v.iter().map(|v| v.0).collect();
                }
                TlsExtension::EllipticCurves(g) => offer.groups = g.iter().map(|g| g.0).collect(),
                _ => {}
            }
        }
        *found = Some(offer);
        true
    })
}

/// The server's choice at the start of a server's stream: its ServerHello,
/// and for a TLS 1.2 ECDHE suite the ServerKeyExchange that follows it.
pub fn server_choice(stream: &[u8]) -> Read<Choice> {
    walk(stream, |h, found: &mut Option<Choice>| match h {
        TlsMessageHandshake::ServerHello(sh) => {
            let mut c = Choice {
                version: sh.version.0,
                suite: sh.cipher.0,
                group: None,
            };
            let exts = sh.ext.and_then(|e| parse_tls_extensions(e).ok());
            for e in exts.map(|(_, e)| e).unwrap_or_default() {
                match e {
                    TlsExtension::SupportedVersions(v) if !v.is_empty() => c.version = v[0].0,
                    TlsExtension::KeyShare(k) if k.len() >= 2 => {
                        c.group = Some(u16::from_be_bytes([k[0], k[1]]));
                    }
                    _ => {}
                }
            }
            let done = c.version >= 0x0304 || !is_ecdhe(c.suite);
            *found = Some(c);
            done
        }
        TlsMessageHandshake::ServerKeyExchange(ske) => {
            if let (Some(c), Ok((_, p))) = (found.as_mut(), parse_ecdh_params(ske.parameters)) {
                if let ECParametersContent::NamedGroup(g) = p.curve_params.params_content {
                    c.group = Some(g.0);
                }
            }
            true
        }
        // Certificate and the rest between ServerHello and ServerKeyExchange.
        _ => found.is_none(),
    })
}

/// A TLS 1.2 suite whose key exchange is ECDHE (its group is in the
/// ServerKeyExchange), by tls-parser's table.
fn is_ecdhe(suite: u16) -> bool {
    TlsCipherSuite::from_id(suite).is_some_and(|s| {
        matches!(
            s.kx,
            tls_parser::TlsCipherKx::Ecdhe | tls_parser::TlsCipherKx::Ecdh
        )
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{self, Read as _, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    use openssl::ssl::{Ssl, SslStream};
    use stackbench_engine::transport::tls::{client_context, server_context};
    use stackbench_model::settings::{CertType, TlsMode, TlsParams, TlsVersion};

    /// A TCP stream that keeps a copy of every byte it writes: the wire of
    /// one direction.
    #[derive(Debug)]
    struct Tee {
        inner: TcpStream,
        wire: Arc<Mutex<Vec<u8>>>,
    }

    impl io::Read for Tee {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.inner.read(b)
        }
    }

    impl io::Write for Tee {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let n = self.inner.write(b)?;
            self.wire.lock().unwrap().extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
    }

    pub(crate) fn params(version: TlsVersion, cipher: u16, groups: &[&str]) -> TlsParams {
        TlsParams {
            version,
            cipher: Some(cipher),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            cert_type: CertType::Rsa2048,
            cert: None,
            key: None,
            resume_ratio: 0.0,
            mode: TlsMode::Inline,
            rekey_bytes: 0,
            alpn: Vec::new(),
            server_name: None,
            ca: None,
            insecure: false,
        }
    }

    /// The bytes client and server wrote for one OpenSSL handshake (and
    /// one echoed message) with the stackbench contexts of `p`.
    pub(crate) fn handshake(p: &TlsParams) -> (Vec<u8>, Vec<u8>) {
        let (c, s, _) = handshake_at(p);
        (c, s)
    }

    /// [`handshake`], and the server's address (on loopback).
    pub(crate) fn handshake_at(p: &TlsParams) -> (Vec<u8>, Vec<u8>, std::net::SocketAddr) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server_wire = Arc::new(Mutex::new(Vec::new()));
        let sw = server_wire.clone();
        let sctx = server_context(p).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = listener.accept().unwrap();
            let tee = Tee { inner: s, wire: sw };
            let mut tls = Ssl::new(&sctx).unwrap().accept(tee).unwrap();
            let mut b = [0; 5];
            tls.read_exact(&mut b).unwrap();
            tls.write_all(&b).unwrap();
        });
        let client_wire = Arc::new(Mutex::new(Vec::new()));
        let tee = Tee {
            inner: TcpStream::connect(addr).unwrap(),
            wire: client_wire.clone(),
        };
        let cctx = client_context(p).unwrap();
        let mut tls: SslStream<Tee> = Ssl::new(&cctx).unwrap().connect(tee).unwrap();
        tls.write_all(b"hello").unwrap();
        let mut b = [0; 5];
        tls.read_exact(&mut b).unwrap();
        server.join().unwrap();
        let c = client_wire.lock().unwrap().clone();
        let s = server_wire.lock().unwrap().clone();
        (c, s, addr)
    }

    #[test]
    fn openssl_handshakes_read_as_the_configured_version_suite_and_group() {
        for (version, suite, group, want_group) in [
            (TlsVersion::V12, 0xC02F, "P-256", Some(23)),
            (TlsVersion::V13, 0x1302, "X25519", Some(29)),
            (TlsVersion::V12, 0x009C, "P-256", None),
        ] {
            let (client, server) = handshake(&params(version, suite, &[group]));
            let Read::Done(offer) = client_offer(&client) else {
                panic!("{suite:04X}: no ClientHello in {} bytes", client.len());
            };
            assert!(offer.suites.contains(&suite), "{suite:04X}: {offer:?}");
            // An RSA-only offer has no groups to offer.
            if let Some(g) = want_group {
                assert!(offer.groups.contains(&g), "{offer:?}");
            }
            let Read::Done(choice) = server_choice(&server) else {
                panic!("{suite:04X}: no server choice in {} bytes", server.len());
            };
            let code = if version == TlsVersion::V12 {
                0x0303
            } else {
                0x0304
            };
            assert_eq!(
                choice,
                Choice {
                    version: code,
                    suite,
                    group: want_group
                },
                "{suite:04X}"
            );
            // Cut short, the same bytes ask for more instead of guessing.
            assert_eq!(server_choice(&server[..40]), Read::More);
        }
    }

    /// The same stream with every handshake record's body cut into
    /// records of at most `n` bytes, as a server does with a message over
    /// the 16 kB record limit.
    fn fragmented(stream: &[u8], n: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rest = stream;
        while let Ok((after, raw)) = parse_tls_raw_record(rest) {
            let whole = &rest[..rest.len() - after.len()];
            if raw.hdr.record_type == TlsRecordType::Handshake {
                for piece in raw.data.chunks(n) {
                    out.extend_from_slice(&whole[..3]);
                    out.extend_from_slice(&(piece.len() as u16).to_be_bytes());
                    out.extend_from_slice(piece);
                }
            } else {
                out.extend_from_slice(whole);
            }
            rest = after;
        }
        out.extend_from_slice(rest);
        out
    }

    /// A TLS 1.2 server flight whose messages span records is read whole
    /// (the ServerKeyExchange's group too), and one cut before its
    /// ServerKeyExchange gives the choice it has, without a group.
    #[test]
    fn handshake_messages_spanning_records_are_joined() {
        let (client, server) = handshake(&params(TlsVersion::V12, 0xC02F, &["P-256"]));
        let server = fragmented(&server, 50);
        let want = Choice {
            version: 0x0303,
            suite: 0xC02F,
            group: Some(23),
        };
        assert_eq!(server_choice(&server), Read::Done(want.clone()));
        assert!(matches!(
            client_offer(&fragmented(&client, 40)),
            Read::Done(_)
        ));
        // The ServerHello's records and the first of the rest.
        let cut = &server[..server.len() / 2];
        let partial = Choice {
            group: None,
            ..want
        };
        assert_eq!(server_choice(cut), Read::Partial(partial));
    }

    #[test]
    fn clear_text_is_not_tls_and_names_read_as_the_settings_spell_them() {
        assert_eq!(client_offer(b"GET / HTTP/1.1\r\n\r\n"), Read::NotTls);
        assert_eq!(server_choice(&[0x17, 3, 3, 0, 1, 0]), Read::NotTls);
        assert_eq!(suite_name(0xC02F), "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256");
        assert_eq!(suite_name(0x1302), "TLS_AES_256_GCM_SHA384");
        assert_eq!(
            (group_name(23), group_name(29)),
            ("P-256".into(), "X25519".into())
        );
        assert_eq!(group_name(0xFAFA), "0xFAFA");
    }
}
