//! TLS settings of the `tls` transport: protocol version, cipher suite (the
//! IANA hex codes z/OS AT-TLS reports use, or the OpenSSL/IANA names),
//! key-exchange groups and the server certificate's kind. A cipher belongs to
//! one version; a bad pair is refused with the valid choices
//! ([`TlsParams::check`]).

use serde::{Deserialize, Serialize};

use super::value::SettingValue;

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlsVersion {
    #[serde(rename = "1.2")]
    V12,
    #[serde(rename = "1.3")]
    V13,
}

impl TlsVersion {
    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::V12 => "1.2",
            TlsVersion::V13 => "1.3",
        }
    }
}

impl SettingValue for TlsVersion {
    const VALUE_NAME: &'static str = "VERSION";
    const ALLOWED: &'static [&'static str] = &["1.2", "1.3"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "1.2" => Ok(TlsVersion::V12),
            "1.3" => Ok(TlsVersion::V13),
            _ => Err("unknown TLS version: use 1.2 or 1.3".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

/// One cipher suite of those the z/OS AT-TLS measurements compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CipherSuite {
    /// IANA code, e.g. 0xC02F.
    pub code: u16,
    /// IANA name.
    pub iana: &'static str,
    /// OpenSSL name.
    pub openssl: &'static str,
    pub version: TlsVersion,
}

/// The suites `--cipher` accepts: the ones the z/OS Communications Server
/// AT-TLS measurements compare (RSA against ECDHE key exchange, CBC against
/// GCM, TLS 1.2 against 1.3).
pub const CIPHER_SUITES: &[CipherSuite] = &[
    suite(
        0x003C,
        "TLS_RSA_WITH_AES_128_CBC_SHA256",
        "AES128-SHA256",
        TlsVersion::V12,
    ),
    suite(
        0x009C,
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
        "AES128-GCM-SHA256",
        TlsVersion::V12,
    ),
    suite(
        0xC027,
        "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
        "ECDHE-RSA-AES128-SHA256",
        TlsVersion::V12,
    ),
    suite(
        0xC02F,
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256",
        TlsVersion::V12,
    ),
    suite(
        0x1301,
        "TLS_AES_128_GCM_SHA256",
        "TLS_AES_128_GCM_SHA256",
        TlsVersion::V13,
    ),
    suite(
        0x1302,
        "TLS_AES_256_GCM_SHA384",
        "TLS_AES_256_GCM_SHA384",
        TlsVersion::V13,
    ),
];

const fn suite(
    code: u16,
    iana: &'static str,
    openssl: &'static str,
    version: TlsVersion,
) -> CipherSuite {
    CipherSuite {
        code,
        iana,
        openssl,
        version,
    }
}

/// The valid `--cipher` values, for error messages.
fn cipher_choices() -> String {
    CIPHER_SUITES
        .iter()
        .map(|s| format!("{:X} ({}, TLS {})", s.code, s.openssl, s.version.name()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl CipherSuite {
    /// The suite with IANA code `code` (any suite, also outside the table's
    /// choices, is named by the engine from what OpenSSL negotiated).
    pub fn by_code(code: u16) -> Option<&'static CipherSuite> {
        CIPHER_SUITES.iter().find(|s| s.code == code)
    }
}

impl SettingValue for CipherSuite {
    const VALUE_NAME: &'static str = "CIPHER";
    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let hex = t.trim_start_matches("0x").trim_start_matches("0X");
        let found = CIPHER_SUITES.iter().find(|s| {
            u16::from_str_radix(hex, 16).is_ok_and(|c| c == s.code)
                || s.iana.eq_ignore_ascii_case(t)
                || s.openssl.eq_ignore_ascii_case(t)
        });
        found
            .copied()
            .ok_or_else(|| format!("unknown cipher '{t}': use one of {}", cipher_choices()))
    }
    fn text(&self) -> String {
        format!("{:X}", self.code)
    }
}

/// Key-exchange groups, in preference order (OpenSSL's list syntax).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsGroups(pub Vec<String>);

const GROUPS: &[&str] = &["P-256", "X25519"];

impl SettingValue for TlsGroups {
    const VALUE_NAME: &'static str = "GROUPS";
    fn parse(text: &str) -> Result<Self, String> {
        let mut out = Vec::new();
        for g in text.split([':', ',']).map(str::trim) {
            let known = GROUPS.iter().find(|k| k.eq_ignore_ascii_case(g));
            match known {
                Some(k) => out.push(k.to_string()),
                None => {
                    return Err(format!(
                        "unknown group '{g}': use P-256, X25519 or both (P-256:X25519)"
                    ))
                }
            }
        }
        Ok(TlsGroups(out))
    }
    fn text(&self) -> String {
        self.0.join(":")
    }
}

/// Serde as the setting's text (`"C02F"`, `"X25519:P-256"`).
macro_rules! serde_as_text {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.text())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                <$t>::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}
serde_as_text!(CipherSuite);
serde_as_text!(TlsGroups);

/// The share of CRR connections that offer the last session for an
/// abbreviated ("short") handshake: 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ResumeRatio(pub f64);

impl SettingValue for ResumeRatio {
    const VALUE_NAME: &'static str = "RATIO";
    fn parse(text: &str) -> Result<Self, String> {
        let r = crate::units::parse_number(text).map_err(|e| e.to_string())?;
        if !(0.0..=1.0).contains(&r) {
            return Err("out of range: use 0 (all full handshakes) to 1 (all resumed)".into());
        }
        Ok(ResumeRatio(r))
    }
    fn text(&self) -> String {
        self.0.to_string()
    }
    fn ordered(&self) -> Option<f64> {
        Some(self.0)
    }
}

impl Serialize for ResumeRatio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for ResumeRatio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(ResumeRatio(f64::deserialize(d)?))
    }
}

/// Where TLS runs: inside driver and responder (`inline`, as an application
/// calling System SSL), in the kernel's record layer after a user-space
/// handshake (`ktls`: TLS done by the stack under an unchanged application,
/// the AT-TLS analogue), or in TLS proxy processes (`sidecar`: the
/// application is unchanged too, but every byte crosses two more loopback
/// legs and a process, so it costs more than inline where AT-TLS costs less —
/// a TLS proxy, not AT-TLS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlsMode {
    #[default]
    Inline,
    Sidecar,
    Ktls,
}

impl SettingValue for TlsMode {
    const VALUE_NAME: &'static str = "MODE";
    const ALLOWED: &'static [&'static str] = &["inline", "sidecar", "ktls"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "inline" => Ok(TlsMode::Inline),
            "sidecar" => Ok(TlsMode::Sidecar),
            "ktls" => Ok(TlsMode::Ktls),
            _ => Err("unknown TLS mode: use inline, sidecar or ktls".to_string()),
        }
    }
    fn text(&self) -> String {
        match self {
            TlsMode::Inline => "inline",
            TlsMode::Sidecar => "sidecar",
            TlsMode::Ktls => "ktls",
        }
        .to_string()
    }
}

/// The kind of certificate a responder makes at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CertType {
    #[default]
    Rsa2048,
    EcdsaP256,
}

impl SettingValue for CertType {
    const VALUE_NAME: &'static str = "KIND";
    const ALLOWED: &'static [&'static str] = &["rsa2048", "ecdsa-p256"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "rsa2048" => Ok(CertType::Rsa2048),
            "ecdsa-p256" => Ok(CertType::EcdsaP256),
            _ => Err("unknown certificate kind: use rsa2048 or ecdsa-p256".to_string()),
        }
    }
    fn text(&self) -> String {
        match self {
            CertType::Rsa2048 => "rsa2048",
            CertType::EcdsaP256 => "ecdsa-p256",
        }
        .to_string()
    }
}

/// What both sides of a `tls` run need, resolved from the settings and sent
/// to the responder in `start`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsParams {
    pub version: TlsVersion,
    /// IANA code of the one suite allowed; `None`: OpenSSL's defaults.
    pub cipher: Option<u16>,
    /// Key-exchange groups (OpenSSL names: P-256, X25519); empty: defaults.
    pub groups: Vec<String>,
    pub cert_type: CertType,
    /// PEM certificate and key files on the responder's host.
    pub cert: Option<String>,
    pub key: Option<String>,
    /// Share of connections offering the client's last session (0 to 1).
    #[serde(default)]
    pub resume_ratio: f64,
    /// Where TLS runs: `sidecar` makes the responder put a TLS proxy process
    /// in front of clear-text listeners.
    #[serde(default)]
    pub mode: TlsMode,
    /// Re-key a connection after every this many bytes it sent; 0: never.
    #[serde(default)]
    pub rekey_bytes: u64,
    /// ALPN protocols the client offers and the server selects from, in
    /// preference order (`http/1.1` for protocol http1); empty: no ALPN.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alpn: Vec<String>,
    /// A foreign server (`https://HOST`): the name sent as SNI, and the
    /// certificate is verified against it (unless `insecure`); `None`:
    /// stackbench's own responder, never verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// PEM file of the CAs that verify a foreign server (on the driver's
    /// host); `None`: the system's roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// A foreign server's certificate is not verified (`--insecure`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure: bool,
}

impl TlsParams {
    /// Whether the driver verifies the server's certificate: a foreign
    /// server's, unless `insecure`.
    pub fn verifies(&self) -> bool {
        self.server_name.is_some() && !self.insecure
    }

    /// Resolves the version (given, the cipher's, or 1.3) and refuses a
    /// cipher of the other version or an ECDSA certificate with an RSA suite.
    pub fn resolve(
        version: Option<TlsVersion>,
        cipher: Option<CipherSuite>,
        groups: Option<&TlsGroups>,
        cert_type: CertType,
        cert: Option<String>,
        key: Option<String>,
    ) -> Result<TlsParams, String> {
        let version = version
            .or(cipher.map(|c| c.version))
            .unwrap_or(TlsVersion::V13);
        if let Some(c) = cipher {
            if c.version != version {
                let valid: Vec<String> = CIPHER_SUITES
                    .iter()
                    .filter(|s| s.version == version)
                    .map(|s| format!("{:X} ({})", s.code, s.openssl))
                    .collect();
                return Err(format!(
                    "cipher {:X} ({}) is a TLS {} suite, not {}: with --tls-version {} use {}",
                    c.code,
                    c.openssl,
                    c.version.name(),
                    version.name(),
                    version.name(),
                    valid.join(", ")
                ));
            }
            if version == TlsVersion::V12 && cert_type == CertType::EcdsaP256 {
                return Err(format!(
                    "cipher {:X} ({}) needs an RSA certificate: use --cert-type rsa2048",
                    c.code, c.openssl
                ));
            }
        }
        if cert.is_some() != key.is_some() {
            return Err("--cert and --key go together: give both PEM files or neither".into());
        }
        Ok(TlsParams {
            version,
            cipher: cipher.map(|c| c.code),
            groups: groups.map(|g| g.0.clone()).unwrap_or_default(),
            cert_type,
            cert,
            key,
            resume_ratio: 0.0,
            mode: TlsMode::Inline,
            rekey_bytes: 0,
            alpn: Vec::new(),
            server_name: None,
            ca: None,
            insecure: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ciphers_parse_from_hex_iana_and_openssl_names() {
        for t in [
            "C02F",
            "0xc02f",
            "ECDHE-RSA-AES128-GCM-SHA256",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        ] {
            assert_eq!(CipherSuite::parse(t).unwrap().code, 0xC02F, "{t}");
        }
        assert_eq!(CipherSuite::parse("3C").unwrap().text(), "3C");
        let e = CipherSuite::parse("C030").unwrap_err();
        assert!(e.contains("1301") && e.contains("9C"), "{e}");
    }

    #[test]
    fn bad_pairs_list_the_valid_choices() {
        let c02f = CipherSuite::parse("C02F").ok();
        let r = |v, c| TlsParams::resolve(v, c, None, CertType::Rsa2048, None, None);
        let e = r(Some(TlsVersion::V13), c02f).unwrap_err();
        assert!(
            e.contains("1301") && e.contains("1302") && !e.contains('\n'),
            "{e}"
        );
        let e = r(Some(TlsVersion::V12), CipherSuite::parse("1301").ok()).unwrap_err();
        assert!(e.contains("C02F"), "{e}");
        assert_eq!(r(None, c02f).unwrap().version, TlsVersion::V12);
        assert_eq!(r(None, None).unwrap().version, TlsVersion::V13);
    }

    #[test]
    fn groups_and_cert_types_round_trip() {
        let g = TlsGroups::parse("x25519:p-256").unwrap();
        assert_eq!(g.text(), "X25519:P-256");
        assert!(TlsGroups::parse("P-384").is_err());
        assert_eq!(CertType::parse("ecdsa-p256").unwrap().text(), "ecdsa-p256");
    }
}
