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
    /// TN3270 (RFC 1576): a Telnet negotiation when a connection opens, then
    /// one inbound 3270 record (Enter) answered by one Erase/Write record,
    /// each ending IAC EOR.
    Tn3270 = "tn3270" plain("tn3270://", "TN3270"),
    /// AMQP 1.0: SASL, open, begin and two links when a connection opens;
    /// then a transfer of a y-byte message answered by a z-byte one
    /// (`amqp_pattern`); the sizes are message bodies.
    Amqp = "amqp" plain("amqp://", "AMQP 1.0"),
}

impl AppProtocol {
    /// Whether where a message ends is read from its bytes (the backends
    /// must hand them to the protocol), rather than known from the sizes:
    /// every protocol but raw payloads (the engine's rows agree, a test
    /// there checks).
    pub fn framed(self) -> bool {
        self != AppProtocol::Raw
    }

    /// The protocol whose plain-server scheme `target` begins with, and
    /// the address after it.
    pub fn of_plain_target(target: &str) -> Option<(AppProtocol, &str)> {
        AppProtocol::ALL
            .iter()
            .find_map(|&p| Some((p, target.strip_prefix(p.plain_scheme()?)?)))
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
        assert!(AppProtocol::Tn3270.framed());
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
        assert_eq!(AppProtocol::of_plain_target("raw://h:23"), None);
        assert_eq!(AppProtocol::Raw.plain_scheme(), None);
        assert_eq!(AppProtocol::Raw.server_name(), "raw");
        assert_eq!(AppProtocol::Http1.server_name(), "HTTP");
    }
}
