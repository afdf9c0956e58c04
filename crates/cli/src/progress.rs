//! The live progress line on stderr (indicatif), drawn only when stderr is a
//! terminal: the phase, elapsed time and the current transaction rate (the
//! text is [`ProgressText`]'s). When
//! stderr is not a terminal (CI, a log file) the same text is written as a
//! plain line once a minute, so a long run is never silent for hours.
//! [`Terminal`] is the runner's observer for the binary: the progress line,
//! the notes and warnings on stderr.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use stackbench_engine::{Progress, RunConfig};
use stackbench_record::WarningRecord;
use stackbench_runner::observe::ProgressText;
use stackbench_runner::Observer;

/// Whether live progress should be drawn (stderr is a terminal).
pub fn progress_wanted() -> bool {
    std::io::stderr().is_terminal()
}

/// What a run tells the user on stderr: its progress line, the placement
/// and other notes, and each warning as it is found.
#[derive(Default)]
pub struct Terminal {
    line: Option<ProgressLine>,
}

impl Observer for Terminal {
    fn started(&mut self, cfg: &RunConfig) {
        self.line = Some(ProgressLine::new(cfg));
    }

    fn progress(&mut self, p: &Progress) {
        if let Some(line) = self.line.as_mut() {
            line.update(p);
        }
    }

    fn finished(&mut self) {
        if let Some(mut line) = self.line.take() {
            line.finish();
        }
    }

    fn note(&mut self, line: &str) {
        eprintln!("stackbench: {line}");
    }

    fn warning(&mut self, w: &WarningRecord) {
        match &w.class {
            Some(c) => eprintln!("stackbench: warning [{}] {c}: {}", w.code, w.message),
            None => eprintln!("stackbench: warning [{}] {}", w.code, w.message),
        }
    }

    fn guest_stderr(&mut self, bytes: &[u8]) {
        let _ = std::io::stderr().write_all(bytes);
    }
}

pub struct ProgressLine {
    bar: Option<ProgressBar>,
    text: ProgressText,
    /// Elapsed time of the next plain line (no terminal).
    next_line: Duration,
    /// The wait for clients to connect was said (no terminal).
    said_waiting: bool,
}

/// A wait longer than this is said on stderr as it happens.
const SAY_WAITING_AFTER: Duration = Duration::from_secs(2);

/// Interval of the plain progress lines written when stderr is not a terminal.
const PLAIN_LINE_EVERY: Duration = Duration::from_secs(60);

impl ProgressLine {
    pub fn new(cfg: &RunConfig) -> ProgressLine {
        let bar = progress_wanted().then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}").expect("static template"),
            );
            bar
        });
        ProgressLine {
            bar,
            text: ProgressText::new(cfg),
            next_line: PLAIN_LINE_EVERY,
            said_waiting: false,
        }
    }

    pub fn update(&mut self, p: &Progress) {
        // A wait for clients past [`SAY_WAITING_AFTER`] is said at once,
        // with how long it may last, not a minute later.
        let say_waiting = p.connecting && p.elapsed >= SAY_WAITING_AFTER && !self.said_waiting;
        if self.bar.is_none() && p.elapsed < self.next_line && !say_waiting {
            return;
        }
        self.said_waiting |= say_waiting;
        let msg = self.text.line(p);
        match &self.bar {
            Some(bar) => {
                bar.set_message(msg);
                bar.tick();
            }
            None => {
                eprintln!("stackbench: {msg}");
                self.next_line = p.elapsed + PLAIN_LINE_EVERY;
            }
        }
    }

    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
