//! Protocol tn3270 with a script (`tn3270_script`): each step's
//! transactions — its AID key sent to the screen that answers it — under
//! the step's name, so the record says which screen is slow; and the waits
//! that timed out, with the screen seen instead.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::LatencyUs;

/// One step of a class's script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScriptStep {
    /// The step's name in the script.
    pub name: String,
    /// The AID key it presses (`ENTER`, `PF3`, `CLEAR`, …).
    pub key: String,
    /// Its transactions completed inside the window (each also one of the
    /// class's `transactions`).
    pub transactions: u64,
    /// Latency from its key's record sent to the screen that met its wait
    /// (µs); `None` without a transaction in the window.
    pub latency_us: Option<LatencyUs>,
    /// The distribution behind `latency_us` (as the class's `latency_hdr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_hdr: Option<String>,
    /// Waits that were not met within the step's timeout, over the whole
    /// run (each also a `timeout` error of the class; the session then
    /// starts again with a new logon).
    pub timeouts: u64,
    /// What the screen read instead, at the first timeout: its non-blank
    /// rows, trimmed, joined by ` | `.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seen: Option<String>,
}

impl ScriptStep {
    /// One line for the terminal: `step logon (ENTER): 1,234 tr, p50 1.2 ms,
    /// p99 3.4 ms; 2 timeouts, seen: …`.
    pub fn summary(&self) -> String {
        let mut line = format!(
            "step {} ({}): {} tr",
            self.name, self.key, self.transactions
        );
        if let Some(l) = &self.latency_us {
            line += &format!(", p50 {:.0} us, p99 {:.0} us", l.p50, l.p99);
        }
        if self.timeouts > 0 {
            line += &format!("; {} timed out", self.timeouts);
            if let Some(seen) = &self.seen {
                line += &format!(", screen seen instead: {seen}");
            }
        }
        line
    }
}
