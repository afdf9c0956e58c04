//! How long a study will take, before it runs: `study --dry-run` prints it
//! and `study` refuses a plan longer than [`MAX_UNCONFIRMED`] unless `--yes`
//! (a 16 × 16 sweep of 1000 repetitions of 24 h runs was accepted and listed
//! line by line, with no total).
//!
//! Each step costs its repetitions (`repeat`, or the minimum of `iterations`
//! under `confidence`) × (warm-up + duration), with the window defaults
//! `run` uses ([`Window::of`]); each time the responder session
//! changes (a step whose session key differs from the previous step's) the
//! one-second idle baseline ([`quality::BASELINE`]) is taken again. Starting
//! a responder and connecting take milliseconds and are not counted, so the
//! estimate is a lower bound; a step bounded by a transaction count has no
//! known window and is counted by its warm-up alone, and said so.

use std::time::Duration;

use stackbench_model::study::StudyStep;

use crate::quality;
use crate::resolve::{iterations, session_key, Window};

/// Longest study run without `--yes`.
pub const MAX_UNCONFIRMED: Duration = Duration::from_secs(24 * 3600);

/// A study's estimated time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    pub steps: usize,
    /// At least this long (see the module doc).
    pub total: Duration,
    /// Steps bounded by a transaction count, whose window is not known.
    pub counted: usize,
}

/// Estimates a study whose plan is `one` (the steps of one repetition)
/// repeated `repetitions` times: every repetition runs the same steps in the
/// same order, so the whole plan (256,000 steps took 680 MB) is never built
/// to be refused.
pub fn estimate(one: &[StudyStep], repetitions: u32) -> Estimate {
    let mut counted = 0;
    let steps: Vec<(Duration, String)> = one
        .iter()
        .map(|step| {
            let s = &step.settings;
            let w = Window::of(s, false);
            if w.duration.is_none() {
                counted += 1;
            }
            let window = w.warmup + w.duration.unwrap_or(Duration::ZERO);
            // The fewest repetitions the step runs, as `run` resolves them (a
            // step that would be refused counts one).
            let runs = iterations(s).map_or(1, |i| i.min);
            (window.saturating_mul(runs), session_key(s))
        })
        .collect();
    let mut total = Duration::ZERO;
    let mut last_key: Option<&String> = None;
    for _ in 0..repetitions {
        for (time, key) in &steps {
            total = total.saturating_add(*time);
            if last_key != Some(key) {
                total = total.saturating_add(quality::BASELINE);
                last_key = Some(key);
            }
        }
    }
    let n = repetitions as usize;
    Estimate {
        steps: one.len() * n,
        total,
        counted: counted * n,
    }
}

/// `3 d 4 h`, `2 h 5 min`, `4 min 10 s`, `12 s`: the two largest units
/// (hours up to two days).
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    let (hours, mins, secs) = (s / 3600, s / 60 % 60, s % 60);
    match (hours, mins) {
        (0, 0) => format!("{secs} s"),
        (0, _) => format!("{mins} min {secs} s"),
        (1..48, _) => format!("{hours} h {mins} min"),
        _ => format!("{} d {} h", hours / 24, hours % 24),
    }
}

impl Estimate {
    /// `256000 steps, at least 6144005 h (…)`: the line `--dry-run` prints
    /// and a refusal starts with.
    pub fn describe(&self) -> String {
        let counted = match self.counted {
            0 => String::new(),
            n => format!(
                ", not counting the measurement of {n} step(s) bounded by a transaction count"
            ),
        };
        format!(
            "{} steps, estimated at least {} (repetitions × (warm-up + duration) per step, \
             plus a 1 s idle baseline per responder session{counted})",
            self.steps,
            human(self.total)
        )
    }

    /// Refuses a study longer than [`MAX_UNCONFIRMED`] unless confirmed.
    pub fn check(&self, confirmed: bool) -> Result<(), String> {
        if confirmed || self.total <= MAX_UNCONFIRMED {
            return Ok(());
        }
        Err(format!(
            "study too long: {}, more than {}: add --yes to run it anyway, or shorten it \
             (fewer repetitions, sweep values, variants or a shorter duration)",
            self.describe(),
            human(MAX_UNCONFIRMED)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use stackbench_model::study::{parse_study, Study};

    fn plan(text: &str, repetitions: u32) -> Vec<StudyStep> {
        let study = parse_study(text, "e.toml").unwrap();
        Study {
            repetitions,
            ..study
        }
        .plan(&[], "e.toml")
        .unwrap()
    }

    #[test]
    fn one_repetition_scaled_is_the_whole_plan() {
        let head = "name = \"e\"\nworkloads = [\"RR1(1B/1B)\"]\nduration = \"10s\"\n\
                    [[variant]]\nname = \"a\"\n[[variant]]\nname = \"b\"\n";
        // Variant b starts its own responder (server_threads is in the
        // session key): a baseline at each of the 6 steps; 2 s warm-up each.
        let text = format!("{head}server_threads = 2\n");
        let e = estimate(&plan(&text, 1), 3);
        assert_eq!((e.steps, e.counted), (6, 0));
        assert_eq!(e.total, Duration::from_secs(6 * 12 + 6));
        assert_eq!(e, estimate(&plan(&text, 3), 1));
        // Same session throughout: one baseline.
        let e = estimate(&plan(head, 1), 3);
        assert_eq!(e.total, Duration::from_secs(6 * 12 + 1));
        assert_eq!(e, estimate(&plan(head, 3), 1));
        // A count-bounded step has no window: its warm-up (0) only, and said so.
        let text = "name = \"e\"\nworkloads = [\"RR1(1B/1B)\"]\ntransactions = 1000\n";
        let e = estimate(&plan(text, 1), 2);
        assert_eq!((e.total, e.counted), (Duration::from_secs(1), 2));
        assert!(e
            .describe()
            .contains("not counting the measurement of 2 step(s)"));
    }

    /// Each step counts the fewest repetitions `run` would make: `repeat`,
    /// or the minimum of `iterations` under `confidence` (3 by default).
    #[test]
    fn repetitions_count_as_run_resolves_them() {
        let total = |extra: &str| {
            let text =
                format!("name = \"e\"\nworkloads = [\"RR1(1B/1B)\"]\nduration = \"10s\"\n{extra}");
            estimate(&plan(&text, 1), 1).total
        };
        let secs = Duration::from_secs;
        assert_eq!(total(""), secs(12 + 1));
        assert_eq!(total("repeat = 2\n"), secs(2 * 12 + 1));
        assert_eq!(total("confidence = \"99,5\"\n"), secs(3 * 12 + 1));
        let bounded = "confidence = \"99,5\"\niterations = \"4,10\"\n";
        assert_eq!(total(bounded), secs(4 * 12 + 1));
    }

    #[test]
    fn durations_read_in_their_two_largest_units() {
        assert_eq!(human(Duration::from_secs(12)), "12 s");
        assert_eq!(human(Duration::from_secs(250)), "4 min 10 s");
        assert_eq!(human(Duration::from_secs(2 * 3600 + 300)), "2 h 5 min");
        assert_eq!(human(Duration::from_secs(24 * 3600)), "24 h 0 min");
        assert_eq!(
            human(Duration::from_secs(3 * 86_400 + 4 * 3600 + 5)),
            "3 d 4 h"
        );
    }
}
