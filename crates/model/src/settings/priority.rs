//! Per-class priority in a mix, the analogue of z/OS WLM priority queues (the
//! mainframe workload manager's importance levels choosing an OSA adapter's
//! outbound queue: RR at importance 2 over STR at importance 3). One level per class
//! of the workload, in mix order, written `6,0`.
//!
//! A level `L` (0 lowest … 6 highest, Linux's unprivileged SO_PRIORITY range)
//! is applied to every data socket of its class, on both sides, as:
//! - **DSCP** class selector `CS<L>` (IP precedence `L`: TOS byte `L << 5`,
//!   IP_TOS / IPV6_TCLASS), so the marking shows on the wire — the top three
//!   bits, which z/OS's `SetSubnetPrioTosMask 11100000` maps to OSA queues;
//! - **SO_PRIORITY** `0x0001_0010 + L`, i.e. `skb->priority` = htb class id
//!   `1:1L` (tc's hex notation: level 6 → `1:16`, level 0 → `1:10`). A lab
//!   link with `priority_classes = true` has exactly those classes, so
//!   `skb->priority` picks the band with no filter. Values above 6 need
//!   CAP_NET_ADMIN (lab runs are root). SO_PRIORITY is set after IP_TOS,
//!   which would otherwise reset it.

use serde::{Deserialize, Serialize};

use super::value::SettingValue;

/// Highest level (Linux's TC_PRIO_INTERACTIVE).
pub const MAX_LEVEL: u8 = 6;
/// htb major `1:` and the minor of level 0 (`1:10`).
const CLASS_BASE: u32 = 0x0001_0010;

/// The htb class id (= SO_PRIORITY value) of priority level `level`.
pub fn priority_class(level: u8) -> u32 {
    CLASS_BASE + u32::from(level.min(MAX_LEVEL))
}

/// The TOS / traffic-class byte of priority level `level`: DSCP CS<level>.
pub fn priority_tos(level: u8) -> u8 {
    level.min(MAX_LEVEL) << 5
}

/// One priority level per class, in mix order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClassPriorities(pub Vec<u8>);

impl ClassPriorities {
    /// The level of class `index` (`None` past the end).
    pub fn level(&self, index: usize) -> Option<u8> {
        self.0.get(index).copied()
    }

    /// Checks the count against a workload of `classes` classes; the error
    /// is one line naming both counts and the fix.
    pub fn check_classes(&self, workload: &str, classes: usize) -> Result<(), String> {
        if self.0.len() == classes {
            return Ok(());
        }
        Err(format!(
            "priority {} gives {} level{} but {workload} has {classes} class{}: give one level \
             (0-{MAX_LEVEL}) per class in mix order, e.g. {}",
            self.text(),
            self.0.len(),
            if self.0.len() == 1 { "" } else { "s" },
            if classes == 1 { "" } else { "es" },
            example(classes),
        ))
    }
}

/// `6,0,0…` with `classes` entries.
fn example(classes: usize) -> String {
    let mut levels = vec!["0"; classes.max(1)];
    levels[0] = "6";
    levels.join(",")
}

impl SettingValue for ClassPriorities {
    const VALUE_NAME: &'static str = "LEVELS";
    fn parse(text: &str) -> Result<Self, String> {
        let bad = |part: &str| {
            format!(
                "bad level '{part}': give one whole number 0 to {MAX_LEVEL} per class in mix \
                 order (6 highest), e.g. 6,0"
            )
        };
        let levels = text
            .split(',')
            .map(|part| {
                let part = part.trim();
                part.parse::<u8>()
                    .ok()
                    .filter(|l| *l <= MAX_LEVEL)
                    .ok_or_else(|| bad(part))
            })
            .collect::<Result<Vec<u8>, String>>()?;
        Ok(ClassPriorities(levels))
    }
    fn text(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(u8::to_string).collect();
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_round_trip_and_map_to_classes() {
        let p = ClassPriorities::parse(" 6, 0 ").unwrap();
        assert_eq!(p.0, vec![6, 0]);
        assert_eq!(ClassPriorities::parse(&p.text()).unwrap(), p);
        assert_eq!(priority_class(6), 0x0001_0016);
        assert_eq!(priority_class(0), 0x0001_0010);
        assert_eq!(priority_tos(6), 0xc0);
        assert_eq!(priority_tos(1), 0x20);
    }

    #[test]
    fn bad_levels_and_counts_say_the_fix() {
        for bad in ["7", "6,", "high", "-1", ""] {
            let e = ClassPriorities::parse(bad).unwrap_err();
            assert!(e.contains("0 to 6"), "{bad}: {e}");
        }
        let p = ClassPriorities(vec![6]);
        let e = p
            .check_classes("RR1(100B/800B)+STR10(1B/20MB)", 2)
            .unwrap_err();
        assert!(e.contains("1 level but") && e.contains("e.g. 6,0"), "{e}");
        assert!(p.check_classes("RR1(1B/1B)", 1).is_ok());
    }
}
