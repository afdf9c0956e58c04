//! What a run tells its caller while it runs: each workload run's start,
//! the engine's periodic progress and its end, the lines the user reads
//! (placement, a guest's boot, a sweep point, a search step) and each
//! measurement-quality warning as it is found. The runner prints nothing;
//! the binary's terminal observer draws and prints, a test records.

use std::time::Duration;

use stackbench_engine::{Progress, RunConfig};
use stackbench_record::WarningRecord;

/// The caller's view of a run in progress. `Send`: a lab run's driver runs
/// on a thread inside host A's network namespace.
pub trait Observer: Send {
    /// One run of a workload starts (each repetition is one).
    fn started(&mut self, cfg: &RunConfig);
    /// The engine's periodic progress of the run started last.
    fn progress(&mut self, p: &Progress);
    /// The run started last ended, complete or not.
    fn finished(&mut self);
    /// A line for the user, without the program's name: the placement, a
    /// guest's boot, a sweep point, a search step.
    fn note(&mut self, line: &str);
    /// A measurement-quality warning, as it is found (it is also stored in
    /// the record's `warnings`).
    fn warning(&mut self, w: &WarningRecord);
    /// What a guest's step wrote on its stderr (its own progress, warnings
    /// and errors), passed on as is.
    fn guest_stderr(&mut self, bytes: &[u8]);
}

/// An observer that drops everything, for callers that want the record only.
#[derive(Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {
    fn started(&mut self, _: &RunConfig) {}
    fn progress(&mut self, _: &Progress) {}
    fn finished(&mut self) {}
    fn note(&mut self, _: &str) {}
    fn warning(&mut self, _: &WarningRecord) {}
    fn guest_stderr(&mut self, _: &[u8]) {}
}

/// The text of a run's progress line: the phase (connecting, warm-up, the
/// window), the time and the transaction rate since the previous update.
/// Apart from drawing it, which is the binary's (a spinner on a terminal, a
/// plain line once a minute otherwise).
pub struct ProgressText {
    name: String,
    window: Option<Duration>,
    warmup: Duration,
    clients: u64,
    /// The longest the window waits for the clients to connect.
    connect_wait: Duration,
    /// Elapsed time and transactions at the previous update.
    last: Option<(Duration, u64)>,
    /// Bounded by transactions alone: how long the window may go with
    /// nothing moving (no transaction, no byte) before the run ends incomplete
    /// ([`RunConfig::idle_bound_ns`]).
    idle_bound: Option<Duration>,
    /// Elapsed time when the count last moved (or the window began).
    moved_at: Option<Duration>,
}

/// A wait longer than this is said on the progress line, with its bound.
const SAY_WAIT_AFTER: Duration = Duration::from_secs(2);

impl ProgressText {
    pub fn new(cfg: &RunConfig) -> ProgressText {
        ProgressText {
            name: cfg.workload.to_string(),
            window: cfg.duration,
            warmup: cfg.warmup,
            clients: cfg.workload.total_clients(),
            connect_wait: cfg.connect_wait(),
            last: None,
            idle_bound: cfg.idle_bound_ns().map(Duration::from_nanos),
            moved_at: None,
        }
    }

    /// The line for `p`; the rate is over the time since the previous call.
    pub fn line(&mut self, p: &Progress) -> String {
        let total: u64 = p.transactions.iter().sum();
        let rate = match self.last {
            Some((t, n)) if p.elapsed > t => {
                (total.saturating_sub(n)) as f64 / (p.elapsed - t).as_secs_f64()
            }
            _ => 0.0,
        };
        if self.last.is_none_or(|(_, n)| n != total) || p.measured.is_none() {
            self.moved_at = Some(p.elapsed);
        }
        self.last = Some((p.elapsed, total));
        if p.connecting {
            format!(
                "{}: connecting {}/{} clients, {:.1} s (waiting up to {:.0} s for them)",
                self.name,
                p.connected,
                self.clients,
                p.elapsed.as_secs_f64(),
                self.connect_wait.as_secs_f64()
            )
        } else if p.in_warmup {
            format!(
                "{}: warm-up ({:.1} s), {:.1} s in",
                self.name,
                self.warmup.as_secs_f64(),
                p.elapsed.as_secs_f64()
            )
        } else {
            let measured = p.measured.unwrap_or_default().as_secs_f64();
            let of = self
                .window
                .map_or(String::new(), |w| format!("/{:.0}", w.as_secs_f64()));
            let mut line = format!(
                "{}: {measured:.1}{of} s, {total} transactions, {rate:.0} tr/s",
                self.name
            );
            let idle = p.elapsed.saturating_sub(self.moved_at.unwrap_or(p.elapsed));
            if let Some(bound) = self.idle_bound.filter(|_| idle > SAY_WAIT_AFTER) {
                line.push_str(&format!(
                    "; none for {:.0} s (ends incomplete after {:.0} s with no byte moving)",
                    idle.as_secs_f64(),
                    bound.as_secs_f64()
                ));
            }
            line
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(elapsed_s: u64, phase: &str, transactions: u64) -> Progress {
        Progress {
            elapsed: Duration::from_secs(elapsed_s),
            connecting: phase == "connecting",
            connected: 3,
            in_warmup: phase == "warmup",
            measured: (phase == "window").then(|| Duration::from_secs(elapsed_s - 3)),
            transactions: vec![transactions, transactions],
            live: None,
        }
    }

    /// Each phase reads as itself; the rate is over the last interval, not
    /// since the start.
    #[test]
    fn the_line_names_the_phase_and_the_recent_rate() {
        let mut text = ProgressText {
            name: "RR4(1B/1B)".into(),
            window: Some(Duration::from_secs(10)),
            warmup: Duration::from_secs(2),
            clients: 4,
            connect_wait: Duration::from_secs(10),
            last: None,
            idle_bound: None,
            moved_at: None,
        };
        assert_eq!(
            text.line(&at(1, "connecting", 0)),
            "RR4(1B/1B): connecting 3/4 clients, 1.0 s (waiting up to 10 s for them)"
        );
        assert_eq!(
            text.line(&at(2, "warmup", 0)),
            "RR4(1B/1B): warm-up (2.0 s), 2.0 s in"
        );
        assert_eq!(
            text.line(&at(4, "window", 1000)),
            "RR4(1B/1B): 1.0/10 s, 2000 transactions, 1000 tr/s"
        );
        assert_eq!(
            text.line(&at(6, "window", 1500)),
            "RR4(1B/1B): 3.0/10 s, 3000 transactions, 500 tr/s"
        );
    }

    /// A run bounded by transactions alone says, once no transaction
    /// completed for more than 2 s, how long and when it ends without one.
    #[test]
    fn a_transactions_run_says_its_idle_wait_and_bound() {
        let mut text = ProgressText {
            name: "RR4(1B/1B)".into(),
            window: None,
            warmup: Duration::ZERO,
            clients: 4,
            connect_wait: Duration::from_secs(10),
            last: None,
            idle_bound: Some(Duration::from_secs(10)),
            moved_at: None,
        };
        assert_eq!(
            text.line(&at(4, "window", 0)),
            "RR4(1B/1B): 1.0 s, 0 transactions, 0 tr/s"
        );
        assert_eq!(
            text.line(&at(6, "window", 0)),
            "RR4(1B/1B): 3.0 s, 0 transactions, 0 tr/s"
        );
        assert_eq!(
            text.line(&at(9, "window", 0)),
            "RR4(1B/1B): 6.0 s, 0 transactions, 0 tr/s; none for 5 s (ends incomplete after 10 s \
             with no byte moving)"
        );
        assert_eq!(
            text.line(&at(10, "window", 5)),
            "RR4(1B/1B): 7.0 s, 10 transactions, 10 tr/s"
        );
    }
}
