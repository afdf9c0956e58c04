//! The status codes of a class's HTTP responses, as servers sent them
//! (protocol http1): every code seen and its count. The classes (2xx …
//! 5xx) and the non-2xx share follow from the codes, so they are methods,
//! not stored twice.
//!
//! Bounded: a status is three digits (httparse reads no other), so the map
//! has at most 900 keys; a server sends a handful.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Responses of the window by status code.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct HttpStatus {
    /// Responses counted in the window per status code, e.g. `{"200": 9000,
    /// "404": 1000}`; they add up to the class's `transactions`.
    #[serde(with = "code_keys")]
    #[schemars(with = "BTreeMap<u16, u64>")]
    pub codes: BTreeMap<u16, u64>,
}

/// The codes as JSON object keys, read back from their text: serde's
/// buffered readers (an internally tagged enum, such as the agent wire's
/// messages) do not turn a string key into a number as serde_json's own
/// reader does.
mod code_keys {
    use std::collections::BTreeMap;

    use serde::de::Error;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(codes: &BTreeMap<u16, u64>, s: S) -> Result<S::Ok, S::Error> {
        codes.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<u16, u64>, D::Error> {
        BTreeMap::<String, u64>::deserialize(d)?
            .into_iter()
            .map(|(code, n)| match code.parse::<u16>() {
                Ok(c) => Ok((c, n)),
                Err(_) => Err(D::Error::custom(format!(
                    "http_status code '{code}' is not a status code (three digits)"
                ))),
            })
            .collect()
    }
}

impl HttpStatus {
    /// Responses counted.
    pub fn total(&self) -> u64 {
        self.codes.values().sum()
    }

    /// Responses whose status is not 2xx (each an `http_status` error).
    pub fn non_2xx(&self) -> u64 {
        self.codes
            .iter()
            .filter(|(code, _)| !(200..300).contains(*code))
            .map(|(_, n)| n)
            .sum()
    }

    /// Non-2xx responses as a share of all, 0 to 1 (0 without responses).
    pub fn non_2xx_share(&self) -> f64 {
        match self.total() {
            0 => 0.0,
            total => self.non_2xx() as f64 / total as f64,
        }
    }

    /// Responses of each class that was seen, `("2xx", n)` in order.
    pub fn classes(&self) -> Vec<(String, u64)> {
        let mut out: BTreeMap<u16, u64> = BTreeMap::new();
        for (code, n) in &self.codes {
            *out.entry(code / 100).or_default() += n;
        }
        out.into_iter()
            .map(|(class, n)| (format!("{class}xx"), n))
            .collect()
    }

    /// The codes other than 2xx and their counts, e.g. `404 ×10, 500 ×2`
    /// (empty when every response was 2xx).
    pub fn non_2xx_text(&self) -> String {
        let parts: Vec<String> = self
            .codes
            .iter()
            .filter(|(code, _)| !(200..300).contains(*code))
            .map(|(code, n)| format!("{code} ×{n}"))
            .collect();
        parts.join(", ")
    }

    /// Every code and its count, e.g. `200 ×90, 404 ×10`.
    pub fn text(&self) -> String {
        let parts: Vec<String> = self
            .codes
            .iter()
            .map(|(code, n)| format!("{code} ×{n}"))
            .collect();
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_and_share_follow_from_the_codes() {
        let s = HttpStatus {
            codes: [(200, 60), (204, 10), (301, 5), (404, 20), (500, 5)].into(),
        };
        assert_eq!(s.total(), 100);
        assert_eq!(s.non_2xx(), 30);
        assert!((s.non_2xx_share() - 0.3).abs() < 1e-12);
        let classes = s.classes();
        assert_eq!(
            classes,
            [("2xx", 70), ("3xx", 5), ("4xx", 20), ("5xx", 5)].map(|(c, n)| (c.to_string(), n))
        );
        assert_eq!(s.non_2xx_text(), "301 ×5, 404 ×20, 500 ×5");
        assert_eq!(HttpStatus::default().non_2xx_share(), 0.0);
    }

    #[test]
    fn codes_are_json_keys_and_read_back() {
        let s = HttpStatus {
            codes: [(200, 3), (404, 1)].into(),
        };
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#"{"codes":{"200":3,"404":1}}"#);
        assert_eq!(serde_json::from_str::<HttpStatus>(&json).unwrap(), s);
    }
}
