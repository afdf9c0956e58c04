//! Value types of the lab-link settings (`link_rate`, `link_offloads`,
//! `link_loss`, `link_qdisc`, `link_ipsec`, `link_ipsec_mode`): a link's bit
//! rate (`100Mbit`, `10Gbit`, decimal as `tc` writes it), the offloads to
//! override on every interface of the path A→B (`on`, `off`, or named ones,
//! `tso=off,gro=off`), a loss percentage (`0.1%`), the leaf qdisc (`fq`) and
//! the IPsec algorithm and mode. The lab crate applies them (and the lab file
//! uses the same types); here they are only text, numbers and JSON.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::value::SettingValue;
use crate::units;

/// A link rate in bit/s, stored as `*_bps`, written `100Mbit`, `10Gbit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BitRate(pub u64);

impl SettingValue for BitRate {
    const VALUE_NAME: &'static str = "RATE";
    fn parse(text: &str) -> Result<Self, String> {
        units::parse_bit_rate(text)
            .map(BitRate)
            .map_err(|e| e.to_string())
    }
    fn text(&self) -> String {
        units::format_bit_rate(self.0)
    }
    fn ordered(&self) -> Option<f64> {
        Some(self.0 as f64)
    }
}

/// Offloads to set on a lab link, by `ethtool -k` short name; `None` keeps
/// the lab file's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkOffloads {
    pub tso: Option<bool>,
    pub gso: Option<bool>,
    pub gro: Option<bool>,
    pub tx_csum: Option<bool>,
    pub rx_csum: Option<bool>,
}

impl LinkOffloads {
    /// The names, in the lab file's order.
    pub const NAMES: [&'static str; 5] = ["tso", "gso", "gro", "tx_csum", "rx_csum"];

    /// `(name, value)` in [`Self::NAMES`] order.
    pub fn values(&self) -> [(&'static str, Option<bool>); 5] {
        let v = [self.tso, self.gso, self.gro, self.tx_csum, self.rx_csum];
        std::array::from_fn(|i| (Self::NAMES[i], v[i]))
    }

    fn slot(&mut self, name: &str) -> Option<&mut Option<bool>> {
        Some(match name {
            "tso" => &mut self.tso,
            "gso" => &mut self.gso,
            "gro" => &mut self.gro,
            "tx_csum" => &mut self.tx_csum,
            "rx_csum" => &mut self.rx_csum,
            _ => return None,
        })
    }

    /// Every offload on (`true`) or off.
    pub fn all(on: bool) -> LinkOffloads {
        LinkOffloads {
            tso: Some(on),
            gso: Some(on),
            gro: Some(on),
            tx_csum: Some(on),
            rx_csum: Some(on),
        }
    }
}

impl SettingValue for LinkOffloads {
    const VALUE_NAME: &'static str = "OFFLOADS";
    fn parse(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "bad offloads '{}': write on, off, or NAME=on|off,… with names {}, e.g. tso=off,gso=off",
                text.trim(),
                Self::NAMES.join(", ")
            )
        };
        match text.trim() {
            "on" => return Ok(Self::all(true)),
            "off" => return Ok(Self::all(false)),
            "" => return Err(bad()),
            _ => {}
        }
        let mut out = LinkOffloads::default();
        for part in text.split(',') {
            let (name, value) = part.split_once('=').ok_or_else(bad)?;
            let on = match value.trim() {
                "on" => true,
                "off" => false,
                _ => return Err(bad()),
            };
            *out.slot(name.trim()).ok_or_else(bad)? = Some(on);
        }
        Ok(out)
    }
    fn text(&self) -> String {
        if *self == Self::all(true) {
            return "on".into();
        }
        if *self == Self::all(false) {
            return "off".into();
        }
        let parts: Vec<String> = self
            .values()
            .iter()
            .filter_map(|(n, v)| v.map(|on| format!("{n}={}", if on { "on" } else { "off" })))
            .collect();
        parts.join(",")
    }
}

impl Serialize for LinkOffloads {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for LinkOffloads {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        LinkOffloads::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A percentage, stored as a number of percent (`*_pct` keys), written
/// `0.1%` (the `%` may be left out).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Pct(pub f64);

impl SettingValue for Pct {
    const VALUE_NAME: &'static str = "PERCENT";
    fn parse(text: &str) -> Result<Self, String> {
        units::parse_pct(text).map(Pct).map_err(|e| e.to_string())
    }
    fn text(&self) -> String {
        format!("{}%", self.0)
    }
    fn ordered(&self) -> Option<f64> {
        Some(self.0)
    }
}

/// Declares a closed set of spellings: the enum, its names, the setting
/// grammar and JSON as the name.
macro_rules! named_enum {
    ($(#[doc = $doc:literal])+ $name:ident, $what:literal { $($(#[doc = $vdoc:literal])+ $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[doc = $doc])+
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[doc = $vdoc])+ $variant),+ }

        impl $name {
            /// Every value, in the order `--help` lists them.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The spelling lab files, flags and JSON use.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl SettingValue for $name {
            const VALUE_NAME: &'static str = $what;
            const ALLOWED: &'static [&'static str] = &[$($text),+];
            fn parse(text: &str) -> Result<Self, String> {
                Self::ALL.iter().copied().find(|v| v.name() == text.trim()).ok_or_else(|| {
                    format!("unknown {} '{}': use {}", $what.to_lowercase(), text.trim(), Self::ALLOWED.join(", "))
                })
            }
            fn text(&self) -> String {
                self.name().to_string()
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                <$name as SettingValue>::parse(&text).map_err(serde::de::Error::custom)
            }
        }
    };
}
pub(super) use named_enum;

named_enum! {
    /// The leaf qdisc of a lab link's sending ends.
    LinkQdisc, "QDISC" {
        /// The device's default (or the tbf/netem's own queue).
        Fifo = "fifo",
        /// fq: per-flow queues with pacing (TCP's pacing rate, capped by
        /// `fq_maxrate` per flow).
        Fq = "fq",
    }
}

named_enum! {
    /// IPsec (ESP) on a lab link: the transform, or none.
    IpsecAlgorithm, "IPSEC" {
        /// Clear text.
        Off = "off",
        /// AES-GCM with a 128-bit key (`rfc4106(gcm(aes))`, 16-byte ICV).
        AesGcm128 = "aes-gcm-128",
        /// AES-CBC with a 128-bit key and HMAC-SHA-256 truncated to 128 bits.
        AesCbc128Sha256 = "aes-cbc-128-sha256",
    }
}

named_enum! {
    /// IPsec mode: ESP between the two hosts' addresses, with or without an
    /// outer IP header.
    IpsecMode, "MODE" {
        /// ESP after the original IP header.
        Transport = "transport",
        /// The whole packet in ESP under a new IP header (host to host).
        Tunnel = "tunnel",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offloads_round_trip_and_refuse_nonsense() {
        for text in ["on", "off", "tso=off", "tso=off,gro=on"] {
            let v = LinkOffloads::parse(text).unwrap();
            assert_eq!(v.text(), text);
            assert_eq!(LinkOffloads::parse(&v.text()).unwrap(), v);
        }
        assert_eq!(
            LinkOffloads::parse("gro=off, tso=off").unwrap().text(),
            "tso=off,gro=off"
        );
        for bad in ["fast", "tso", "tso=maybe", "lro=off", ""] {
            assert!(LinkOffloads::parse(bad).is_err(), "{bad}");
        }
        let json = serde_json::to_string(&LinkOffloads::all(false)).unwrap();
        assert_eq!(json, "\"off\"");
    }

    #[test]
    fn link_property_values_round_trip() {
        assert_eq!(Pct::parse("0.1%").unwrap(), Pct(0.1));
        assert_eq!(Pct::parse("2").unwrap().text(), "2%");
        assert!(Pct::parse("lots").is_err());
        for v in IpsecAlgorithm::ALL {
            assert_eq!(IpsecAlgorithm::parse(&v.text()).unwrap(), *v);
        }
        assert_eq!(IpsecMode::parse("tunnel").unwrap(), IpsecMode::Tunnel);
        assert!(IpsecMode::parse("beet")
            .unwrap_err()
            .contains("transport, tunnel"));
        assert_eq!(LinkQdisc::parse("fq").unwrap(), LinkQdisc::Fq);
        let json = serde_json::to_string(&IpsecAlgorithm::AesGcm128).unwrap();
        assert_eq!(json, "\"aes-gcm-128\"");
    }

    #[test]
    fn bit_rates_use_link_units() {
        assert_eq!(BitRate::parse("100Mbit").unwrap(), BitRate(100_000_000));
        assert_eq!(BitRate(10_000_000_000).text(), "10Gbit");
        assert!(BitRate::parse("100mb").is_err());
    }
}
