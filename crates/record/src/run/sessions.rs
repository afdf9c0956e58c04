//! How a class's connections set up their sessions, for a protocol whose
//! connections open with a negotiation (tn3270): logons attempted, those
//! that ended in a session by the mode negotiated (TN3270E or plain
//! TN3270), the TN3270E functions and device types agreed, and those that
//! failed by reason. Counted over the whole run, warm-up included, as the
//! errors are: a session is set up once per connection (per transaction
//! for CRR).
//!
//! Bounded: modes, functions and failure reasons are small fixed sets; the
//! device types are what servers confirm, one or two.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A class's session setups.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct Sessions {
    /// Connections whose negotiation began.
    pub attempted: u64,
    /// Sessions set up, by mode: `tn3270e` (RFC 2355, the 5-byte header on
    /// every record) or `tn3270` (plain, RFC 1576).
    pub negotiated: BTreeMap<String, u64>,
    /// TN3270E sessions that agreed each function, by its RFC 2355 name
    /// (`BIND-IMAGE`, `RESPONSES`, `SYSREQ`, …).
    pub functions: BTreeMap<String, u64>,
    /// Sessions by device type: the one the server confirmed (TN3270E) or
    /// the terminal type sent (TN3270).
    pub device_types: BTreeMap<String, u64>,
    /// Negotiations that failed, by reason: `tn3270e_refused` (tn3270e on,
    /// and the server refused it), `rejected_<reason>` (a DEVICE-TYPE
    /// REJECT, e.g. `rejected_inv_name`), `functions_added`, `unbind`,
    /// `not_telnet` (the server does not speak TN3270), `closed` (the
    /// connection ended first), `negotiation` (anything else); the run's
    /// fault line says what was seen.
    pub failed: BTreeMap<String, u64>,
}

impl Sessions {
    /// Sessions set up, all modes.
    pub fn negotiated_total(&self) -> u64 {
        self.negotiated.values().sum()
    }

    /// Failed negotiations, all reasons.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// Adds `other`'s counts (agents' parts, repetitions summed).
    pub fn add(&mut self, other: &Sessions) {
        self.attempted += other.attempted;
        for (into, from) in [
            (&mut self.negotiated, &other.negotiated),
            (&mut self.functions, &other.functions),
            (&mut self.device_types, &other.device_types),
            (&mut self.failed, &other.failed),
        ] {
            for (k, v) in from {
                *into.entry(k.clone()).or_default() += v;
            }
        }
    }

    /// One line for the terminal: `sessions 10: tn3270e 9, tn3270 1; failed
    /// 1 (closed 1)`.
    pub fn summary(&self) -> String {
        let list = |m: &BTreeMap<String, u64>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut line = format!("sessions {}", self.attempted);
        if !self.negotiated.is_empty() {
            line += &format!(": {}", list(&self.negotiated));
        }
        if !self.functions.is_empty() {
            line += &format!("; functions {}", list(&self.functions));
        }
        if !self.failed.is_empty() {
            line += &format!("; failed {} ({})", self.failed_total(), list(&self.failed));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_add_and_summarise() {
        let mut a = Sessions {
            attempted: 3,
            ..Sessions::default()
        };
        a.negotiated.insert("tn3270e".into(), 2);
        a.failed.insert("closed".into(), 1);
        let mut b = a.clone();
        b.functions.insert("RESPONSES".into(), 2);
        a.add(&b);
        assert_eq!(
            (a.attempted, a.negotiated_total(), a.failed_total()),
            (6, 4, 2)
        );
        assert_eq!(
            a.summary(),
            "sessions 6: tn3270e 4; functions RESPONSES 2; failed 2 (closed 2)"
        );
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<Sessions>(&json).unwrap(), a);
    }
}
