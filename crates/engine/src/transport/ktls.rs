//! `tls_mode ktls`: OpenSSL does the handshake in user space (as `inline`),
//! then the record layer goes to the kernel (setsockopt TCP_ULP "tls", then
//! SOL_TLS TLS_TX and TLS_RX with a `tls12_crypto_info_aes_gcm_*` from
//! linux/tls.h), and data moves with plain send/recv on the socket.
//!
//! rust-openssl's `SslStream` reads through its own BIO, so OpenSSL's own
//! kTLS never engages: the keys are derived here. TLS 1.3: the traffic
//! secrets come from the keylog callback (stored in the connection's
//! ex_data), then key and IV by HKDF-Expand-Label (RFC 8446 §7.3). TLS 1.2
//! (AES-GCM only): the key block by the PRF (RFC 5246 §6.3) from the master
//! secret and both randoms.
//!
//! Record sequence numbers at the switch: TLS 1.3 application records start
//! at 0 in each direction because the server sends no NewSessionTicket
//! (`num_tickets 0`; so TLS 1.3 resumption is refused in this mode). TLS 1.2:
//! the Finished was record 0 of the new epoch, application data starts at 1.
//! Read-ahead is off, so OpenSSL never holds an application record at the
//! switch; one that does fails the connection rather than lose the record.

use std::io;
use std::os::fd::RawFd;
use std::sync::{Mutex, OnceLock};

use openssl::ex_data::Index;
use openssl::hash::MessageDigest;
use openssl::pkey::PKey;
use openssl::sign::Signer;
use openssl::ssl::{Ssl, SslContext, SslContextBuilder, SslContextRef, SslRef};
use stackbench_model::settings::{TlsMode, TlsVersion};
use stackbench_model::TlsParams;
use stackbench_record::KtlsCounters;

/// From linux/tls.h.
const SOL_TLS: libc::c_int = 282;
const TLS_TX: libc::c_int = 1;
const TLS_RX: libc::c_int = 2;
const TLS_1_2_VERSION: u16 = 0x0303;
const TLS_1_3_VERSION: u16 = 0x0304;
const TLS_CIPHER_AES_GCM_128: u16 = 51;
const TLS_CIPHER_AES_GCM_256: u16 = 52;

/// The AES-GCM suites the kernel's record layer carries: (IANA code, key
/// bytes, hash of the PRF or HKDF). Named in the refusal of other suites.
const GCM_SUITES: &[(u16, usize, Hash)] = &[
    (0x009C, 16, Hash::Sha256),
    (0x009D, 32, Hash::Sha384),
    (0xC02B, 16, Hash::Sha256),
    (0xC02C, 32, Hash::Sha384),
    (0xC02F, 16, Hash::Sha256),
    (0xC030, 32, Hash::Sha384),
    (0x1301, 16, Hash::Sha256),
    (0x1302, 32, Hash::Sha384),
];

/// Without `--cipher`, the suites a ktls context allows (OpenSSL names).
const TLS12_GCM_LIST: &str = "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:\
     ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:AES128-GCM-SHA256:AES256-GCM-SHA384";
const TLS13_GCM_LIST: &str = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hash {
    Sha256,
    Sha384,
}

impl Hash {
    fn md(self) -> MessageDigest {
        match self {
            Hash::Sha256 => MessageDigest::sha256(),
            Hash::Sha384 => MessageDigest::sha384(),
        }
    }
}

/// Refuses what the kernel's record layer cannot carry, in one line each:
/// a CBC suite, TLS 1.3 resumption (needs session tickets, which would
/// shift the record numbers) and re-keying (no key update for kTLS TX).
pub fn check(p: &TlsParams) -> Result<(), String> {
    if p.mode != TlsMode::Ktls {
        return Ok(());
    }
    if let Some(code) = p.cipher.filter(|c| suite(*c).is_none()) {
        return Err(format!(
            "cipher {code:X} with tls_mode ktls: the kernel's TLS carries AES-GCM suites only: \
             use --cipher 9C or C02F (TLS 1.2), 1301 or 1302 (TLS 1.3), or --tls-mode inline"
        ));
    }
    if p.version == TlsVersion::V13 && p.resume_ratio > 0.0 {
        return Err(
            "resume_ratio with tls_mode ktls and TLS 1.3: resumption needs session tickets, \
             sent after the handshake under the kernel's keys: use --tls-version 1.2 \
             (resumption by session ID) or drop --resume-ratio"
                .to_string(),
        );
    }
    if p.rekey_bytes > 0 {
        return Err(
            "rekey with tls_mode ktls: the kernel's TLS has no key update for sending \
             (Linux 6.1): use --tls-mode inline or drop --rekey"
                .to_string(),
        );
    }
    Ok(())
}

fn suite(code: u16) -> Option<(usize, Hash)> {
    GCM_SUITES
        .iter()
        .find(|s| s.0 == code)
        .map(|&(_, key, hash)| (key, hash))
}

/// Whether this kernel has kernel TLS (CONFIG_TLS): setting the `tls` upper
/// layer protocol on a TCP socket fails with ENOENT without it (with it, an
/// unconnected socket says ENOTCONN; the call also loads the module). The
/// error says what is missing and what would enable it.
pub fn ktls_available() -> Result<(), String> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        .map_err(|e| format!("tls_mode ktls: cannot open a probe socket: {e}"))?;
    match set_ulp(std::os::fd::AsRawFd::as_raw_fd(&socket)) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Err(format!(
            "tls_mode ktls: this kernel has no kernel TLS (setsockopt TCP_ULP \"tls\" \
             fails with ENOENT; {}): it needs CONFIG_TLS (modprobe tls, a kernel built with it, \
             or a guest kernel via --kernel); use --tls-mode inline",
            crate::kmod::module_state("tls").explain("tls", "CONFIG_TLS")
        )),
        _ => Ok(()),
    }
}

fn set_ulp(fd: RawFd) -> io::Result<()> {
    let ulp = b"tls\0";
    // SAFETY: a valid fd and a NUL-terminated option value of that length.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_TCP,
            libc::TCP_ULP,
            ulp.as_ptr().cast(),
            ulp.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A ktls context: no read-ahead, no TLS 1.3 tickets, only GCM suites, and
/// the keylog callback that keeps a connection's TLS 1.3 traffic secrets.
pub(crate) fn configure(b: &mut SslContextBuilder, p: &TlsParams) -> Result<(), String> {
    if p.mode != TlsMode::Ktls {
        return Ok(());
    }
    b.set_read_ahead(false);
    b.set_num_tickets(0).map_err(|e| format!("tls: {e}"))?;
    if p.cipher.is_none() {
        match p.version {
            TlsVersion::V12 => b.set_cipher_list(TLS12_GCM_LIST),
            TlsVersion::V13 => b.set_ciphersuites(TLS13_GCM_LIST),
        }
        .map_err(|e| format!("tls cipher: {e}"))?;
    }
    b.set_keylog_callback(keylog);
    b.set_ex_data(mode_index(), KtlsMarker);
    Ok(())
}

/// Marks a context whose connections switch to the kernel.
#[derive(Debug, Clone, Copy)]
struct KtlsMarker;

fn mode_index() -> Index<SslContext, KtlsMarker> {
    static INDEX: OnceLock<Index<SslContext, KtlsMarker>> = OnceLock::new();
    *INDEX.get_or_init(|| SslContext::new_ex_index().expect("an OpenSSL ex_data index"))
}

/// Whether connections of `ctx` switch to kTLS after the handshake.
pub(crate) fn enabled(ctx: &SslContextRef) -> bool {
    ctx.ex_data(mode_index()).is_some()
}

/// A connection's TLS 1.3 application traffic secrets (keylog lines).
#[derive(Debug, Default)]
pub(crate) struct Secrets {
    client: Vec<u8>,
    server: Vec<u8>,
}

fn secrets_index() -> Index<Ssl, Mutex<Secrets>> {
    static INDEX: OnceLock<Index<Ssl, Mutex<Secrets>>> = OnceLock::new();
    *INDEX.get_or_init(|| Ssl::new_ex_index().expect("an OpenSSL ex_data index"))
}

/// Gives a new connection of a ktls context its secrets' slot.
pub(crate) fn prepare(ssl: &mut SslRef) {
    ssl.set_ex_data(secrets_index(), Mutex::new(Secrets::default()));
}

/// Keeps `CLIENT_TRAFFIC_SECRET_0 <client_random> <hex>` and the server's
/// line in the connection's slot (the callback's own connection, so the
/// client random needs no matching).
fn keylog(ssl: &SslRef, line: &str) {
    let mut words = line.split(' ');
    let (Some(label), Some(_random), Some(hex)) = (words.next(), words.next(), words.next()) else {
        return;
    };
    let Some(slot) = ssl.ex_data(secrets_index()) else {
        return;
    };
    let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
    match label {
        "CLIENT_TRAFFIC_SECRET_0" => s.client = from_hex(hex),
        "SERVER_TRAFFIC_SECRET_0" => s.server = from_hex(hex),
        _ => {}
    }
}

fn from_hex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .filter_map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok())
        .collect()
}

/// One direction's keys as the kernel takes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DirKeys {
    pub key: Vec<u8>,
    pub salt: [u8; 4],
    pub iv: [u8; 8],
    pub seq: u64,
}

impl DirKeys {
    /// `struct tls12_crypto_info_aes_gcm_{128,256}`: version, cipher type
    /// (native u16s), iv, key, salt, rec_seq (big-endian).
    fn crypto_info(&self, version: u16) -> Vec<u8> {
        let cipher = if self.key.len() == 16 {
            TLS_CIPHER_AES_GCM_128
        } else {
            TLS_CIPHER_AES_GCM_256
        };
        let mut out = Vec::with_capacity(56);
        out.extend_from_slice(&version.to_ne_bytes());
        out.extend_from_slice(&cipher.to_ne_bytes());
        out.extend_from_slice(&self.iv);
        out.extend_from_slice(&self.key);
        out.extend_from_slice(&self.salt);
        out.extend_from_slice(&self.seq.to_be_bytes());
        out
    }
}

type Crypto = Result<Vec<u8>, openssl::error::ErrorStack>;

fn hmac(md: MessageDigest, key: &[u8], parts: &[&[u8]]) -> Crypto {
    let pkey = PKey::hmac(key)?;
    let mut s = Signer::new(md, &pkey)?;
    for p in parts {
        s.update(p)?;
    }
    s.sign_to_vec()
}

/// HKDF-Expand-Label(secret, label, "", len) of TLS 1.3 (RFC 8446 §7.1).
fn hkdf_expand_label(md: MessageDigest, secret: &[u8], label: &str, len: usize) -> Crypto {
    let full = format!("tls13 {label}");
    let mut info = Vec::with_capacity(4 + full.len());
    info.extend_from_slice(&(len as u16).to_be_bytes());
    info.push(full.len() as u8);
    info.extend_from_slice(full.as_bytes());
    info.push(0);
    let (mut out, mut t) = (Vec::with_capacity(len), Vec::new());
    let mut i = 1u8;
    while out.len() < len {
        t = hmac(md, secret, &[&t, &info, &[i]])?;
        out.extend_from_slice(&t);
        i += 1;
    }
    out.truncate(len);
    Ok(out)
}

/// The TLS 1.2 PRF: P_hash(secret, label + seed) (RFC 5246 §5).
fn prf(md: MessageDigest, secret: &[u8], label: &str, seed: &[u8], len: usize) -> Crypto {
    let seed = [label.as_bytes(), seed].concat();
    let (mut out, mut a) = (Vec::with_capacity(len), seed.clone());
    while out.len() < len {
        a = hmac(md, secret, &[&a])?;
        out.extend_from_slice(&hmac(md, secret, &[&a, &seed])?);
    }
    out.truncate(len);
    Ok(out)
}

/// TLS 1.3: key and IV of one direction from its traffic secret; the
/// 12-byte IV is the kernel's salt (4) and iv (8); records start at 0.
fn tls13_keys(hash: Hash, key_len: usize, secret: &[u8]) -> Result<DirKeys, String> {
    let e = |e: openssl::error::ErrorStack| e.to_string();
    let key = hkdf_expand_label(hash.md(), secret, "key", key_len).map_err(e)?;
    let iv = hkdf_expand_label(hash.md(), secret, "iv", 12).map_err(e)?;
    Ok(DirKeys {
        key,
        salt: iv[..4].try_into().expect("4 bytes"),
        iv: iv[4..].try_into().expect("8 bytes"),
        seq: 0,
    })
}

/// TLS 1.2 AES-GCM: (client, server) keys from the key block (no MAC keys;
/// 4-byte implicit salts). The explicit nonce starts at the record number
/// (any unique value works, it travels in each record); records start at 1.
fn tls12_keys(
    hash: Hash,
    key_len: usize,
    master: &[u8],
    client_random: &[u8],
    server_random: &[u8],
) -> Result<(DirKeys, DirKeys), String> {
    let seed = [server_random, client_random].concat();
    let block = prf(hash.md(), master, "key expansion", &seed, 2 * key_len + 8)
        .map_err(|e| e.to_string())?;
    let dir = |key: &[u8], salt: &[u8]| DirKeys {
        key: key.to_vec(),
        salt: salt.try_into().expect("4 bytes"),
        iv: 1u64.to_be_bytes(),
        seq: 1,
    };
    let (ck, rest) = block.split_at(key_len);
    let (sk, rest) = rest.split_at(key_len);
    Ok((dir(ck, &rest[..4]), dir(sk, &rest[4..8])))
}

/// (client, server) keys of a finished handshake.
fn keys_of(ssl: &SslRef) -> Result<(u16, DirKeys, DirKeys), String> {
    let code = ssl
        .current_cipher()
        .map_or(0, |c| u16::from_be_bytes(c.protocol_id()));
    let (key_len, hash) = suite(code).ok_or_else(|| format!("suite {code:X} is not AES-GCM"))?;
    if ssl.version_str() == "TLSv1.3" {
        let slot = ssl
            .ex_data(secrets_index())
            .ok_or("no secrets slot on the connection")?;
        let s = slot.lock().unwrap_or_else(|p| p.into_inner());
        if s.client.is_empty() || s.server.is_empty() {
            return Err("the keylog callback gave no traffic secrets".to_string());
        }
        let c = tls13_keys(hash, key_len, &s.client)?;
        return Ok((TLS_1_3_VERSION, c, tls13_keys(hash, key_len, &s.server)?));
    }
    let session = ssl.session().ok_or("no session after the handshake")?;
    let mut master = vec![0; session.master_key_len()];
    let n = session.master_key(&mut master);
    let (mut cr, mut sr) = ([0u8; 32], [0u8; 32]);
    ssl.client_random(&mut cr);
    ssl.server_random(&mut sr);
    let (c, s) = tls12_keys(hash, key_len, &master[..n], &cr, &sr)?;
    Ok((TLS_1_2_VERSION, c, s))
}

// Not bound by openssl-sys; in the vendored libssl it links.
extern "C" {
    fn SSL_has_pending(ssl: *const openssl_sys::SSL) -> libc::c_int;
}

/// Hands the record layer of `fd`'s finished handshake to the kernel.
/// Fails (the connection then fails) when OpenSSL still holds received
/// bytes, or the kernel refuses.
pub(crate) fn switch(fd: RawFd, ssl: &SslRef, client: bool) -> io::Result<()> {
    use foreign_types::ForeignTypeRef;
    let fail = |what: String| io::Error::other(format!("tls_mode ktls: {what}"));
    // SAFETY: a live SSL; the call only reads its buffers' state.
    if ssl.pending() > 0 || unsafe { SSL_has_pending(ssl.as_ptr()) } != 0 {
        return Err(fail(
            "OpenSSL holds received bytes at the switch to the kernel".to_string(),
        ));
    }
    let (version, c, s) = keys_of(ssl).map_err(fail)?;
    let (tx, rx) = if client { (c, s) } else { (s, c) };
    set_ulp(fd).map_err(|e| fail(format!("setsockopt TCP_ULP \"tls\": {e}")))?;
    for (dir, keys, name) in [(TLS_TX, &tx, "TLS_TX"), (TLS_RX, &rx, "TLS_RX")] {
        let info = keys.crypto_info(version);
        // SAFETY: a valid fd and a crypto-info buffer of that length.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                SOL_TLS,
                dir,
                info.as_ptr().cast(),
                info.len() as libc::socklen_t,
            )
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            return Err(fail(format!("setsockopt SOL_TLS {name}: {e}")));
        }
    }
    Ok(())
}

/// This network namespace's kTLS counters (`/proc/net/tls_stat`); `None`
/// when the file is absent (no kernel TLS, or its module not loaded yet).
pub fn tls_stat() -> Option<KtlsCounters> {
    std::fs::read_to_string("/proc/net/tls_stat")
        .ok()
        .map(|t| parse_tls_stat(&t))
}

fn parse_tls_stat(text: &str) -> KtlsCounters {
    let mut c = KtlsCounters::default();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some(name), Some(v)) = (w.next(), w.next().and_then(|v| v.parse().ok())) else {
            continue;
        };
        match name {
            "TlsTxSw" => c.tx_sw = v,
            "TlsRxSw" => c.rx_sw = v,
            "TlsTxDevice" => c.tx_device = v,
            "TlsRxDevice" => c.rx_device = v,
            "TlsDecryptError" => c.decrypt_errors = v,
            "TlsDecryptRetry" => c.decrypt_retries = v,
            "TlsRxNoPadViolation" => c.rx_no_pad_violations = v,
            _ => {}
        }
    }
    c
}

/// The `ktls` row (`tls` with `tls_mode ktls`): the tls row's listeners and
/// dialer (their contexts switch each connection to the kernel after the
/// handshake, see [`configure`]), usable only where the kernel has TLS, and
/// with the kernel's kTLS counters read around each test.
#[cfg(test)]
#[path = "ktls_tests.rs"]
mod tests;
