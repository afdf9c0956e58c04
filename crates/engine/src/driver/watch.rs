//! The coordinator's watch over a running workload: it wakes every
//! [`WATCH_INTERVAL`] (and exactly at the window's edges) to refresh progress,
//! notice Ctrl-C or a lost responder, and take the CPU samples of both sides at
//! the start and end of the measurement window — the same instants that bound
//! the transaction counts.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

use super::worker::{ClassPlan, Timing};
use super::{ControlClient, Progress, RunConfig};
use crate::protocol::Reply;
use crate::sampling::{self, MemoryPair, SidePair};

/// Longest sleep between checks. Short enough that a count-bounded window's
/// end sample lags the last transaction by at most this much.
const WATCH_INTERVAL: Duration = Duration::from_millis(20);
/// Progress is refreshed this often.
const PROGRESS_INTERVAL_NS: u64 = 100_000_000;

pub struct Watch<'a> {
    timing: Timing,
    warmup: Duration,
    classes: usize,
    published: &'a [Vec<AtomicU64>],
    last_progress_ns: u64,
    pub reason: Option<String>,
    pub stopped_at_ns: Option<u64>,
    pub start_samples: SidePair,
    pub end_samples: SidePair,
    /// Memory of (client, server) at the end of the window.
    pub end_memory: MemoryPair,
    started: bool,
    ended: bool,
}

impl<'a> Watch<'a> {
    pub fn new(
        timing: Timing,
        cfg: &RunConfig,
        plans: &[ClassPlan],
        published: &'a [Vec<AtomicU64>],
    ) -> Watch<'a> {
        Watch {
            timing,
            warmup: cfg.warmup,
            classes: plans.len(),
            published,
            last_progress_ns: 0,
            reason: None,
            stopped_at_ns: None,
            start_samples: SidePair::default(),
            end_samples: SidePair::default(),
            end_memory: (None, None),
            started: false,
            ended: false,
        }
    }

    fn now_ns(&self) -> u64 {
        self.timing.epoch.elapsed().as_nanos() as u64
    }

    /// One turn of the watch: sleep to the next check or window edge, then act.
    pub fn tick(
        &mut self,
        control: &mut ControlClient,
        stop: &AtomicBool,
        abort: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) {
        let now = self.now_ns();
        let mut wake = now + WATCH_INTERVAL.as_nanos() as u64;
        if !self.started {
            wake = wake.min(self.timing.warmup_end_ns);
        } else if let (false, Some(end)) = (self.ended, self.timing.end_ns) {
            wake = wake.min(end);
        }
        thread::sleep(Duration::from_nanos(wake.saturating_sub(now)));
        let now = self.now_ns();
        if !self.started && now >= self.timing.warmup_end_ns {
            self.started = true;
            self.start_samples = sample(control).0;
        }
        if !self.ended && self.timing.end_ns.is_some_and(|end| now >= end) {
            self.end_window(control);
        }
        if now >= self.last_progress_ns + PROGRESS_INTERVAL_NS {
            self.last_progress_ns = now;
            on_progress(&self.progress());
        }
        if self.reason.is_none() {
            self.reason = if stop.load(Ordering::Relaxed) {
                Some("interrupted (Ctrl-C or SIGTERM)".to_string())
            } else if !control.is_alive() {
                Some(
                    "the responder closed the control connection (it died or was stopped)"
                        .to_string(),
                )
            } else {
                None
            };
            if self.reason.is_some() {
                self.stopped_at_ns = Some(self.now_ns());
                abort.store(true, Ordering::Relaxed);
            }
        }
    }

    /// After the workers are done: the end sample of a count-bounded or
    /// interrupted window.
    pub fn finish(&mut self, control: &mut ControlClient) {
        if self.started && !self.ended {
            self.end_window(control);
        }
    }

    fn end_window(&mut self, control: &mut ControlClient) {
        self.ended = true;
        // One round trip: the responder's reply carries CPU and memory.
        (self.end_samples, self.end_memory) = sample(control);
    }

    fn progress(&self) -> Progress {
        let elapsed = self.timing.epoch.elapsed();
        Progress {
            elapsed,
            in_warmup: elapsed < self.warmup,
            transactions: (0..self.classes)
                .map(|c| {
                    self.published
                        .iter()
                        .map(|w| w[c].load(Ordering::Relaxed))
                        .sum()
                })
                .collect(),
        }
    }
}

/// Both sides' CPU counters (and memory), as close to the same instant as
/// one control round trip allows (tens of µs on loopback).
fn sample(control: &mut ControlClient) -> (SidePair, MemoryPair) {
    let client = sampling::local_cpu().ok();
    let (server, server_memory) = match control.sample() {
        Ok(Reply::Sample { cpu, memory }) => (Some(cpu), memory),
        _ => (None, None),
    };
    (
        SidePair { client, server },
        (sampling::local_memory(), server_memory),
    )
}

/// Both sides' memory now (client local, server over the control connection).
pub fn memory_now(control: &mut ControlClient) -> MemoryPair {
    sample(control).1
}
