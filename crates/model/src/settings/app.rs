//! The application protocol a run's data connections speak (the engine's
//! `app` layer implements each): raw sized payloads, HTTP/1.1, or TN3270.

use serde::{Deserialize, Serialize};

use super::value::SettingValue;

/// What the bytes of a transaction are. The notation's sizes mean the same
/// for every protocol: the bytes of one request and one response on the
/// wire, headers included (see docs/transports.md, "Application protocols").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppProtocol {
    /// Payload bytes of no meaning: a request of the request size, a
    /// response of the response size.
    #[default]
    Raw,
    /// HTTP/1.1: a GET (or, above what a request head carries, a POST with a
    /// Content-Length body) answered by `200 OK` with a Content-Length body.
    Http1,
    /// TN3270 (RFC 1576): a Telnet negotiation when a connection opens, then
    /// one inbound 3270 record (Enter) answered by one Erase/Write record,
    /// each ending IAC EOR.
    Tn3270,
}

impl AppProtocol {
    pub fn name(self) -> &'static str {
        match self {
            AppProtocol::Raw => "raw",
            AppProtocol::Http1 => "http1",
            AppProtocol::Tn3270 => "tn3270",
        }
    }

    /// Whether where a message ends is read from its bytes (the backends
    /// must hand them to the protocol), rather than known from the sizes.
    pub fn framed(self) -> bool {
        self != AppProtocol::Raw
    }

    /// The scheme that names a plain server of this protocol as a target
    /// (`http://HOST:PORT`: nginx; `tn3270://HOST:PORT`: a TN3270 server),
    /// driven without `stackbench serve`; raw payloads have none.
    pub fn plain_scheme(self) -> Option<&'static str> {
        match self {
            AppProtocol::Raw => None,
            AppProtocol::Http1 => Some("http://"),
            AppProtocol::Tn3270 => Some("tn3270://"),
        }
    }

    /// The protocol whose plain-server scheme `target` begins with, and
    /// the address after it.
    pub fn of_plain_target(target: &str) -> Option<(AppProtocol, &str)> {
        [AppProtocol::Http1, AppProtocol::Tn3270]
            .into_iter()
            .find_map(|p| Some((p, target.strip_prefix(p.plain_scheme()?)?)))
    }

    /// What a plain server of this protocol is called in messages.
    pub fn server_name(self) -> &'static str {
        match self {
            AppProtocol::Raw => "raw",
            AppProtocol::Http1 => "HTTP",
            AppProtocol::Tn3270 => "TN3270",
        }
    }
}

impl SettingValue for AppProtocol {
    const VALUE_NAME: &'static str = "PROTOCOL";
    const ALLOWED: &'static [&'static str] = &["raw", "http1", "tn3270"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "raw" => Ok(AppProtocol::Raw),
            "http1" => Ok(AppProtocol::Http1),
            "tn3270" => Ok(AppProtocol::Tn3270),
            _ => Err("unknown application protocol: use raw, http1 or tn3270".to_string()),
        }
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
        for p in [AppProtocol::Raw, AppProtocol::Http1, AppProtocol::Tn3270] {
            assert_eq!(AppProtocol::parse(&p.text()), Ok(p));
        }
        assert_eq!(
            AppProtocol::parse("http2"),
            Err("unknown application protocol: use raw, http1 or tn3270".to_string())
        );
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
    }
}
