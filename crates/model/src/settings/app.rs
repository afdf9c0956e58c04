//! The application protocol a run's data connections speak (the engine's
//! `app` layer implements each): raw sized payloads, HTTP/1.1, or TN3270.

use serde::{Deserialize, Serialize};

use super::value::SettingValue;

/// Defines [`AppProtocol`] from one table, as `transports!` defines
/// `Transport`: each variant with its doc, its setting value (also its JSON
/// spelling) and, for a protocol that plain servers speak, their target
/// scheme and name — so the spelling, the parser, the allowed values and the
/// plain targets cannot disagree. What a protocol does is its row in the
/// engine's protocol table (`stackbench_engine::app::row`, whose tests check
/// that it has one row per variant here).
macro_rules! app_protocols {
    ($($(#[$meta:meta])* $variant:ident = $name:literal $(plain($scheme:literal, $server:literal))?,)+) => {
        /// What the bytes of a transaction are. The notation's sizes are the
        /// bytes of one request and one response on the wire, headers
        /// included — except for messaging (amqp), where they are message
        /// bodies, as a queue manager's message sizes are (see
        /// docs/transports.md, "Application protocols").
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
        pub enum AppProtocol {
            $($(#[$meta])* #[serde(rename = $name)] $variant,)+
        }

        impl AppProtocol {
            /// Every protocol, in the table's order.
            pub const ALL: &'static [AppProtocol] = &[$(AppProtocol::$variant),+];
            /// Their setting values, in the same order.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            pub fn name(self) -> &'static str {
                match self {
                    $(AppProtocol::$variant => $name,)+
                }
            }

            /// The scheme that names a plain server of this protocol as a
            /// target (`http://HOST:PORT`: nginx; `tn3270://HOST:PORT`: a
            /// TN3270 server; `amqp://HOST:PORT`: an AMQP 1.0 broker), driven
            /// without `stackbench serve`; raw payloads have none.
            pub fn plain_scheme(self) -> Option<&'static str> {
                match self {
                    // The row's scheme if it names one, else none.
                    $(AppProtocol::$variant => [$(Some($scheme),)? None][0],)+
                }
            }

            /// What a plain server of this protocol is called in messages
            /// (its setting value where it has no plain servers).
            pub fn server_name(self) -> &'static str {
                match self {
                    $(AppProtocol::$variant => [$($server,)? $name][0],)+
                }
            }
        }
    };
}

app_protocols! {
    /// Payload bytes of no meaning: a request of the request size, a
    /// response of the response size.
    #[default]
    Raw = "raw",
    /// HTTP/1.1: a GET (or, above what a request head carries, a POST with a
    /// Content-Length body) answered by `200 OK` with a Content-Length body.
    Http1 = "http1" plain("http://", "HTTP"),
    /// TN3270 (RFC 1576) or TN3270E (RFC 2355, the default when the server
    /// offers it): a Telnet negotiation when a connection opens, then one
    /// inbound 3270 record (Enter) answered by one Erase/Write record, each
    /// ending IAC EOR (TN3270E: after a 5-byte header).
    Tn3270 = "tn3270" plain("tn3270://", "TN3270"),
    /// AMQP 1.0: SASL, open, begin and two links when a connection opens;
    /// then a transfer of a y-byte message answered by a z-byte one
    /// (`amqp_pattern`); the sizes are message bodies.
    Amqp = "amqp" plain("amqp://", "AMQP 1.0"),
    /// FTP (RFC 959, EPSV of RFC 2428): an anonymous log-on when the
    /// control connection opens (USER, PASS, TYPE I), then per transaction
    /// a passive data connection (EPSV, PASV where the server refuses it)
    /// carrying one binary file of the notation's larger size: a RETR when
    /// the response is the larger, a STOR when the request is; CRR logs on,
    /// transfers once and logs off (QUIT).
    Ftp = "ftp" plain("ftp://", "FTP"),
    /// HTTP/2 (RFC 9113): prior knowledge on clear text (h2c), ALPN `h2`
    /// over TLS; a GET (or a POST with DATA) answered by a HEADERS frame
    /// with `:status 200` and DATA frames, HPACK-coded. Its servers are
    /// HTTP's: named by `http://` and `https://` (see
    /// [`AppProtocol::scheme_family`]).
    H2 = "h2",
}

impl AppProtocol {
    /// Whether where a message ends is read from its bytes (the backends
    /// must hand them to the protocol), rather than known from the sizes:
    /// every protocol but raw payloads (the engine's rows agree, a test
    /// there checks).
    pub fn framed(self) -> bool {
        self != AppProtocol::Raw
    }

    /// The protocol whose plain-server schemes name this one's servers:
    /// itself, but HTTP/2's servers are HTTP's (`http://`, `https://`
    /// name a server that speaks h2 as well as HTTP/1.1), so a scheme
    /// names one family and the `protocol` setting says which of its
    /// protocols is spoken.
    pub fn scheme_family(self) -> AppProtocol {
        match self {
            AppProtocol::H2 => AppProtocol::Http1,
            p => p,
        }
    }

    /// The protocols a plain server named by `self`'s schemes may be
    /// driven with (`self` and those of its family), in table order.
    pub fn family(self) -> impl Iterator<Item = AppProtocol> {
        AppProtocol::ALL
            .iter()
            .copied()
            .filter(move |p| p.scheme_family() == self)
    }

    /// The scheme that names a plain server of this protocol over TLS
    /// (`https://HOST:PORT`), driven over the `tls` transport; none for the
    /// others.
    pub fn tls_scheme(self) -> Option<&'static str> {
        match self {
            AppProtocol::Http1 => Some("https://"),
            _ => None,
        }
    }

    /// The protocol whose plain-server scheme (clear or TLS) `target`
    /// begins with, and the address after it (its path included).
    pub fn of_plain_target(target: &str) -> Option<(AppProtocol, &str)> {
        PlainTarget::parse(target).map(|t| (t.protocol, t.rest))
    }
}

/// A target named by a plain server's scheme, cut into its parts (no name
/// is looked up): `https://example.org:8443/api/x` is protocol http1 over
/// TLS, address `example.org:8443`, host `example.org`, path `/api/x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlainTarget<'a> {
    pub protocol: AppProtocol,
    /// The scheme as written (`http://`, `https://`, `tn3270://`).
    pub scheme: &'static str,
    /// Named by the protocol's TLS scheme (`https://`).
    pub tls: bool,
    /// Everything after the scheme.
    pub rest: &'a str,
    /// `HOST:PORT`.
    pub address: &'a str,
    /// The host alone (brackets of an IPv6 literal removed): the TLS
    /// server name (SNI) and the name the certificate must carry.
    pub host: &'a str,
    /// The path, from its `/` (`None`: no path given).
    pub path: Option<&'a str>,
    /// The user before `@` (`amqp://USER@HOST:PORT`: a SASL PLAIN login),
    /// with anything after a `:` in it (a password, which settings refuse).
    pub user: Option<&'a str>,
}

impl<'a> PlainTarget<'a> {
    /// The parts of `target`, if a plain server's scheme begins it.
    pub fn parse(target: &'a str) -> Option<PlainTarget<'a>> {
        let (protocol, scheme, tls) = AppProtocol::ALL.iter().find_map(|&p| {
            [(p.plain_scheme(), false), (p.tls_scheme(), true)]
                .into_iter()
                .find_map(|(s, tls)| Some((p, s.filter(|s| target.starts_with(s))?, tls)))
        })?;
        let rest = &target[scheme.len()..];
        let (address, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let (user, address) = match address.rsplit_once('@') {
            Some((user, address)) => (Some(user), address),
            None => (None, address),
        };
        let host = match address.rsplit_once(':') {
            Some((h, port)) if !port.contains(']') => h,
            _ => address,
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some(PlainTarget {
            protocol,
            scheme,
            tls,
            rest,
            address,
            host,
            path,
            user,
        })
    }
}

impl SettingValue for AppProtocol {
    const VALUE_NAME: &'static str = "PROTOCOL";
    const ALLOWED: &'static [&'static str] = AppProtocol::NAMES;
    fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Some(p) = AppProtocol::ALL.iter().find(|p| p.name() == text) {
            return Ok(*p);
        }
        let (last, rest) = AppProtocol::NAMES.split_last().expect("a protocol");
        Err(format!(
            "unknown application protocol: use {} or {last}",
            rest.join(", ")
        ))
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_round_trip_and_bad_ones_name_the_choices() {
        for &p in AppProtocol::ALL {
            assert_eq!(AppProtocol::parse(&p.text()), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
        }
        // The choices come from the table: every row's name, the last
        // after "or".
        let e = AppProtocol::parse("http2").unwrap_err();
        assert!(
            e.starts_with("unknown application protocol: use raw, http1"),
            "{e}"
        );
        assert!(AppProtocol::NAMES.iter().all(|n| e.contains(n)), "{e}");
        let last = AppProtocol::NAMES.last().unwrap();
        assert!(e.ends_with(&format!(" or {last}")), "{e}");
        assert!(!AppProtocol::Raw.framed() && AppProtocol::Http1.framed());
        assert!(AppProtocol::Tn3270.framed() && AppProtocol::H2.framed());
    }

    #[test]
    fn h2_servers_are_named_by_http_schemes() {
        assert_eq!(AppProtocol::H2.scheme_family(), AppProtocol::Http1);
        assert_eq!(AppProtocol::H2.plain_scheme(), None);
        let family: Vec<_> = AppProtocol::Http1.family().collect();
        assert_eq!(family, [AppProtocol::Http1, AppProtocol::H2]);
        assert_eq!(AppProtocol::Tn3270.family().count(), 1);
    }

    #[test]
    fn plain_targets_name_their_protocol() {
        assert_eq!(
            AppProtocol::of_plain_target("http://h:80"),
            Some((AppProtocol::Http1, "h:80"))
        );
        assert_eq!(
            AppProtocol::of_plain_target("tn3270://h:23"),
            Some((AppProtocol::Tn3270, "h:23"))
        );
        assert_eq!(AppProtocol::of_plain_target("h:23"), None);
        let t = PlainTarget::parse("https://[::1]:8443/api/x?q=1").unwrap();
        assert_eq!(
            (t.protocol, t.tls, t.address, t.host, t.path),
            (
                AppProtocol::Http1,
                true,
                "[::1]:8443",
                "::1",
                Some("/api/x?q=1")
            )
        );
        let t = PlainTarget::parse("http://example.org:80").unwrap();
        assert_eq!((t.tls, t.host, t.path), (false, "example.org", None));
        assert!(PlainTarget::parse("tn3270s://h:1").is_none());
        assert_eq!(AppProtocol::of_plain_target("raw://h:23"), None);
        assert_eq!(AppProtocol::Raw.plain_scheme(), None);
        assert_eq!(AppProtocol::Raw.server_name(), "raw");
        assert_eq!(AppProtocol::Http1.server_name(), "HTTP");
    }
}
