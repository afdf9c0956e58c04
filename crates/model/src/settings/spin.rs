//! Which side busy-polls: user-space spinning of a side's event loop (epoll
//! with a zero timeout instead of sleeping). A spinning side keeps its CPUs
//! ~100% busy whatever the load, so its utilisation and CPU µs/tr count the
//! polling: the stored setting says which side spun, and readers of those
//! figures are told (the human output, the driver-saturation warning).
//!
//! Not the kernel's busy polling: `busy_poll` (SO_BUSY_POLL, default
//! `net.core.busy_read`) makes a socket read poll the device queue, and
//! `net.core.busy_poll` makes a *blocking* epoll/poll/select poll it before
//! sleeping; both need a NAPI device (nothing on loopback), and a spinning
//! epoll (zero timeout) never blocks, so only SO_BUSY_POLL's one pass per read
//! still applies to a spinning side.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::value::SettingValue;

/// The sides whose event loops busy-poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Spin {
    /// Both sides sleep in epoll until an event or a timer (the default).
    #[default]
    None,
    /// The driver's workers spin.
    Driver,
    /// The responder's workers spin while a test of this run is active.
    Responder,
    /// Both sides spin.
    Both,
}

impl Spin {
    pub fn name(self) -> &'static str {
        match self {
            Spin::None => "none",
            Spin::Driver => "driver",
            Spin::Responder => "responder",
            Spin::Both => "both",
        }
    }

    /// The driver's workers spin.
    pub fn driver(self) -> bool {
        matches!(self, Spin::Driver | Spin::Both)
    }

    /// The responder's workers spin.
    pub fn responder(self) -> bool {
        matches!(self, Spin::Responder | Spin::Both)
    }
}

impl SettingValue for Spin {
    const VALUE_NAME: &'static str = "SIDES";
    const ALLOWED: &'static [&'static str] = &["none", "driver", "responder", "both"];
    /// `true`/`false` (the setting was a switch for both sides) still read as
    /// `both`/`none`, so older study files keep working.
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "none" | "false" => Ok(Spin::None),
            "driver" => Ok(Spin::Driver),
            "responder" => Ok(Spin::Responder),
            "both" | "true" => Ok(Spin::Both),
            _ => Err("unknown spin: use none, driver, responder or both".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

impl Serialize for Spin {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A stored record holds the side names; records from before per-side spin
/// hold a boolean (both sides or neither).
impl<'de> Deserialize<'de> for Spin {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Both(bool),
            Sides(String),
        }
        match Stored::deserialize(d)? {
            Stored::Both(b) => Ok(if b { Spin::Both } else { Spin::None }),
            Stored::Sides(text) => Spin::parse(&text).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_and_spellings() {
        for (text, driver, responder) in [
            ("none", false, false),
            ("driver", true, false),
            ("responder", false, true),
            ("both", true, true),
        ] {
            let s = Spin::parse(text).unwrap();
            assert_eq!((s.driver(), s.responder()), (driver, responder), "{text}");
            assert_eq!(s.text(), text);
        }
        assert_eq!(Spin::parse("true").unwrap(), Spin::Both);
        assert!(Spin::parse("client")
            .unwrap_err()
            .contains("none, driver, responder or both"));
    }

    #[test]
    fn stored_as_text_and_old_booleans_still_read() {
        assert_eq!(serde_json::to_string(&Spin::Driver).unwrap(), "\"driver\"");
        let read = |json: &str| serde_json::from_str::<Spin>(json).unwrap();
        assert_eq!(read("\"responder\""), Spin::Responder);
        assert_eq!(read("true"), Spin::Both);
        assert_eq!(read("false"), Spin::None);
        assert!(serde_json::from_str::<Spin>("\"sideways\"").is_err());
    }
}
