//! The settings of protocol tn3270's sessions: whether the terminals use
//! TN3270E (RFC 2355), the 3278 model they say they are, the LU name they
//! ask for, and whether stackbench's responder offers TN3270E. Gathered in
//! [`Tn3270Options`], one small `Copy` value that the engine's codec and
//! handler are built from (and the control protocol carries to the
//! responder).

use serde::{Deserialize, Serialize};

use super::value::SettingValue;
use crate::tn3270_script::ScriptRef;

/// Whether a terminal uses TN3270E.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tn3270e {
    /// TN3270E when the server offers it, plain TN3270 when it does not
    /// or refuses the terminal's device type (as x3270 backs off).
    #[default]
    Auto,
    /// TN3270E or nothing: a server that refuses it is a fault.
    On,
    /// Plain TN3270: the terminal answers `DO TN3270E` with `WONT`.
    Off,
}

impl Tn3270e {
    pub fn name(self) -> &'static str {
        match self {
            Tn3270e::Auto => "auto",
            Tn3270e::On => "on",
            Tn3270e::Off => "off",
        }
    }
}

impl SettingValue for Tn3270e {
    const VALUE_NAME: &'static str = "MODE";
    const ALLOWED: &'static [&'static str] = &["auto", "on", "off"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "auto" => Ok(Tn3270e::Auto),
            "on" => Ok(Tn3270e::On),
            "off" => Ok(Tn3270e::Off),
            _ => Err("unknown TN3270E mode: use auto, on or off".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

/// What stackbench's responder does with TN3270E.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponderTn3270e {
    /// `DO TN3270E` first, as a z/OS TN3270 server; plain TN3270 when the
    /// terminal refuses.
    #[default]
    Offer,
    /// Plain TN3270 only: `DONT TN3270E` to a terminal that asks.
    Refuse,
}

impl ResponderTn3270e {
    pub fn name(self) -> &'static str {
        match self {
            ResponderTn3270e::Offer => "offer",
            ResponderTn3270e::Refuse => "refuse",
        }
    }
}

impl SettingValue for ResponderTn3270e {
    const VALUE_NAME: &'static str = "OFFER";
    const ALLOWED: &'static [&'static str] = &["offer", "refuse"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "offer" => Ok(ResponderTn3270e::Offer),
            "refuse" => Ok(ResponderTn3270e::Refuse),
            _ => Err("unknown responder TN3270E choice: use offer or refuse".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

/// What stackbench's responder serves a terminal after its logon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponderApp {
    /// An echo application (as ITPECHO): every input answered with one
    /// screen of the test's response size.
    #[default]
    Echo,
    /// A small formatted application a script can drive: a logon screen
    /// (user ID and password fields), a menu and an account screen.
    Demo,
}

impl ResponderApp {
    pub fn name(self) -> &'static str {
        match self {
            ResponderApp::Echo => "echo",
            ResponderApp::Demo => "demo",
        }
    }

    fn is_echo(&self) -> bool {
        *self == ResponderApp::Echo
    }
}

impl SettingValue for ResponderApp {
    const VALUE_NAME: &'static str = "APP";
    const ALLOWED: &'static [&'static str] = &["echo", "demo"];
    fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "echo" => Ok(ResponderApp::Echo),
            "demo" => Ok(ResponderApp::Demo),
            _ => Err("unknown responder application: use echo or demo".to_string()),
        }
    }
    fn text(&self) -> String {
        self.name().to_string()
    }
}

/// Longest SNA resource (LU) name.
pub const LU_NAME_MAX: usize = 8;

/// An LU name: 1 to 8 of `A-Z 0-9 @ # $`, the first not a digit (an SNA
/// network name), kept upper case in a fixed array so that options holding
/// it stay `Copy`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct LuName {
    bytes: [u8; LU_NAME_MAX],
    len: u8,
}

impl LuName {
    /// Its characters (ASCII).
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII is ever stored.
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

impl std::fmt::Debug for LuName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LuName({})", self.as_str())
    }
}

impl std::fmt::Display for LuName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl SettingValue for LuName {
    const VALUE_NAME: &'static str = "LU";
    fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim().to_ascii_uppercase();
        let ok_char = |c: u8| c.is_ascii_uppercase() || c.is_ascii_digit() || b"@#$".contains(&c);
        if t.is_empty()
            || t.len() > LU_NAME_MAX
            || !t.bytes().all(ok_char)
            || t.as_bytes()[0].is_ascii_digit()
        {
            return Err(format!(
                "'{}' is not an LU name: give 1 to {LU_NAME_MAX} of A-Z, 0-9, @, # and $, \
                 the first not a digit, e.g. SBLU0001",
                text.trim()
            ));
        }
        let mut bytes = [0; LU_NAME_MAX];
        bytes[..t.len()].copy_from_slice(t.as_bytes());
        Ok(LuName {
            bytes,
            len: t.len() as u8,
        })
    }
    fn text(&self) -> String {
        self.as_str().to_string()
    }
}

impl Serialize for LuName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for LuName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        LuName::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The 3278 models a terminal may be, and their screens (rows, columns).
pub const TN3270_MODELS: [(u8, u16, u16); 4] =
    [(2, 24, 80), (3, 32, 80), (4, 43, 80), (5, 27, 132)];

/// Everything protocol tn3270 takes from the settings, for both halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tn3270Options {
    /// The terminals' use of TN3270E.
    pub tn3270e: Tn3270e,
    /// The 3278 model (2 to 5).
    pub model: u8,
    /// The LU name the terminals ask for (TN3270E CONNECT); `None`: the
    /// server assigns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lu: Option<LuName>,
    /// What stackbench's responder does with TN3270E.
    pub responder: ResponderTn3270e,
    /// The script the terminals run (`tn3270_script`); `None`: sized
    /// Enter records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<ScriptRef>,
    /// What stackbench's responder serves after the logon.
    #[serde(default, skip_serializing_if = "ResponderApp::is_echo")]
    pub app: ResponderApp,
}

impl Default for Tn3270Options {
    fn default() -> Tn3270Options {
        Tn3270Options {
            tn3270e: Tn3270e::Auto,
            model: 2,
            lu: None,
            responder: ResponderTn3270e::Offer,
            script: None,
            app: ResponderApp::Echo,
        }
    }
}

impl Tn3270Options {
    /// The terminal type the terminals send: `IBM-3278-M-E` (the extended
    /// data stream), as x3270 names a 3278 of model M.
    pub fn terminal_type(&self) -> String {
        format!("IBM-3278-{}-E", self.model)
    }

    /// The model's screen: (rows, columns); model 2's for an unknown one.
    pub fn screen(&self) -> (u16, u16) {
        TN3270_MODELS
            .iter()
            .find(|(m, _, _)| *m == self.model)
            .map_or((24, 80), |(_, r, c)| (*r, *c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_bad_ones_say_the_fix() {
        for t in ["auto", "on", "off"] {
            assert_eq!(Tn3270e::parse(t).unwrap().text(), t);
        }
        assert!(Tn3270e::parse("yes")
            .unwrap_err()
            .contains("auto, on or off"));
        for t in ["offer", "refuse"] {
            assert_eq!(ResponderTn3270e::parse(t).unwrap().text(), t);
        }
        let lu = LuName::parse("sblu0001").unwrap();
        assert_eq!(lu.text(), "SBLU0001");
        assert_eq!(
            serde_json::to_string(&lu).unwrap(),
            "\"SBLU0001\"".to_string()
        );
        for bad in ["", "TOOLONGNAME", "1ABC", "LU-1"] {
            let e = LuName::parse(bad).unwrap_err();
            assert!(e.contains("not an LU name"), "{bad}: {e}");
        }
        let o = Tn3270Options {
            model: 5,
            ..Tn3270Options::default()
        };
        assert_eq!(
            (o.terminal_type().as_str(), o.screen()),
            ("IBM-3278-5-E", (27, 132))
        );
        let json = serde_json::to_string(&Tn3270Options::default()).unwrap();
        assert_eq!(json, r#"{"tn3270e":"auto","model":2,"responder":"offer"}"#);
    }
}
