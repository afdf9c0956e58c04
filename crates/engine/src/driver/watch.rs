//! The coordinator's watch over a running workload: it wakes every
//! [`WATCH_INTERVAL`] (and exactly at the window's edges) to refresh progress,
//! notice Ctrl-C or a lost responder, open the window once every client is
//! connected (the warm-up starts after the ramp), and take the CPU samples of
//! both sides at the start and end of the measurement window — the same
//! instants that bound the transaction counts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use stackbench_metrics::cpu::CpuSample;
use stackbench_metrics::live::{LiveClass, LiveRun, LiveSide};
use stackbench_metrics::memory::MemorySample;

use super::class_threads::ClassThreads;
use super::clock::Window;
use super::gate::{self, GateState, StartGate};
use super::worker::WorkerSlots;
use super::{ControlClient, RunConfig};
use crate::control::Reply;
use crate::sampling::{self, MemoryPair, SidePair};
use crate::sockdiag::Side;
use crate::transport::Endpoint;

/// Longest sleep between checks. Short enough that a count-bounded window's
/// end sample lags the last transaction by at most this much.
const WATCH_INTERVAL: Duration = Duration::from_millis(20);
/// Sleep between checks while clients connect: the window opens within this
/// of the last connection (a few thousand cheap wake-ups over a long ramp).
const CONNECT_INTERVAL: Duration = Duration::from_millis(1);
/// A live view of a run, for progress displays (agents send it as the
/// agent wire's `ProgressReport`).
#[derive(Debug, Clone)]
pub struct Progress {
    pub elapsed: Duration,
    /// Clients are still connecting: the window has not opened.
    pub connecting: bool,
    /// Clients connected so far.
    pub connected: u64,
    /// Connecting or warming up.
    pub in_warmup: bool,
    /// Time into the measurement window, once it started.
    pub measured: Option<Duration>,
    /// Counted transactions so far, per class.
    pub transactions: Vec<u64>,
    /// With `RunConfig::live_metrics`, about once a second: the live
    /// figures (shared, so that passing progress on copies no histogram).
    pub live: Option<Arc<LiveRun>>,
}

/// Live figures are assembled this often (with `live_metrics`): a merge of
/// the workers' copies and one CPU and memory sample of each side, the
/// responder's over the control connection.
const LIVE_INTERVAL_NS: u64 = 1_000_000_000;

/// Progress is refreshed this often.
const PROGRESS_INTERVAL_NS: u64 = 100_000_000;

/// What the watch saw of a run, once it is over.
pub struct Watched {
    pub reason: Option<String>,
    pub stopped_at_ns: Option<u64>,
    pub start_samples: SidePair,
    pub end_samples: SidePair,
    /// Memory of (client, server) at the window's start (see [`Watch::tick`]).
    pub window_memory: MemoryPair,
    /// When the window (the warm-up) opened, on this host's wall clock.
    pub window_opened_unix_s: Option<f64>,
    /// A run bounded by transactions alone that was ended because no
    /// transaction completed for this long, ns ([`RunConfig::idle_bound_ns`]).
    pub idle_stop_ns: Option<u64>,
}

pub struct Watch<'a> {
    epoch: Instant,
    window: &'a Window,
    warmup: Duration,
    duration: Option<Duration>,
    classes: usize,
    slots: &'a [WorkerSlots],
    /// `class_workers`: the driver's threads per class, sampled with the CPU.
    threads: Option<&'a ClassThreads>,
    /// Clients to wait for, and the latest time to wait until.
    expected_clients: u64,
    connect_deadline_ns: u64,
    /// (warm-up end, end) once the window is open.
    pub opened: Option<(u64, Option<u64>)>,
    last_progress_ns: u64,
    pub reason: Option<String>,
    pub stopped_at_ns: Option<u64>,
    pub start_samples: SidePair,
    pub end_samples: SidePair,
    /// Memory of (client, server) at the window's start.
    pub window_memory: MemoryPair,
    started: bool,
    ended: bool,
    /// The responder's endpoints: this side's sockets to them are summed
    /// for kernel socket memory.
    pub endpoints: Vec<Endpoint>,
    /// An agent's run: the window opens at its gate's start time, not when
    /// the clients are connected.
    gated: bool,
    /// The gate's start time on the epoch, once given.
    start_ns: Option<u64>,
    window_opened_unix_s: Option<f64>,
    /// `live_metrics`, and when live figures were last assembled.
    live: bool,
    last_live_ns: Option<u64>,
    /// Bounded by transactions alone: the longest the measured window may
    /// go without a completed transaction ([`RunConfig::idle_bound_ns`]).
    idle_bound_ns: Option<u64>,
    /// Transactions counted so far, and when that count last moved.
    last_total: u64,
    last_change_ns: u64,
    idle_stop_ns: Option<u64>,
}

impl<'a> Watch<'a> {
    pub fn new(
        epoch: Instant,
        window: &'a Window,
        cfg: &RunConfig,
        (slots, threads): (&'a [WorkerSlots], Option<&'a ClassThreads>),
        expected_clients: u64,
        ramp_ns: u64,
    ) -> Watch<'a> {
        Watch {
            epoch,
            window,
            warmup: cfg.warmup,
            duration: cfg.duration,
            classes: cfg.workload.classes.len(),
            slots,
            threads,
            expected_clients,
            connect_deadline_ns: ramp_ns + super::config::CONNECT_GRACE_NS,
            opened: None,
            last_progress_ns: 0,
            reason: None,
            stopped_at_ns: None,
            start_samples: SidePair::default(),
            end_samples: SidePair::default(),
            window_memory: (None, None),
            started: false,
            ended: false,
            endpoints: Vec::new(),
            gated: false,
            start_ns: None,
            window_opened_unix_s: None,
            live: cfg.live_metrics,
            last_live_ns: None,
            idle_bound_ns: cfg.idle_bound_ns(),
            last_total: 0,
            last_change_ns: 0,
            idle_stop_ns: None,
        }
    }

    /// Opens the window at the start time of the gate passed to
    /// [`Watch::tick`] instead of when the clients are connected.
    pub fn gated(mut self, gated: bool) -> Watch<'a> {
        self.gated = gated;
        self
    }

    fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    fn connected(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| s.connected.load(Ordering::Relaxed))
            .sum()
    }

    /// Opens the window when every client is connected, or at the deadline.
    fn maybe_open(&mut self, now: u64) {
        if self.opened.is_some() || !self.armed(now) {
            return;
        }
        if self.gated && self.start_ns.is_none_or(|start| now < start) {
            return; // armed, waiting for the controller's start time
        }
        self.window_opened_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .ok()
            .map(|d| d.as_secs_f64());
        let warmup_end = now + self.warmup.as_nanos() as u64;
        let end = self.duration.map(|d| warmup_end + d.as_nanos() as u64);
        self.window.open(warmup_end, end);
        self.opened = Some((warmup_end, end));
    }

    /// Every client connected, or the deadline for them passed.
    fn armed(&self, now: u64) -> bool {
        self.connected() >= self.expected_clients || now >= self.connect_deadline_ns
    }

    /// Asks the gate (if any) for the start time or an early end.
    fn poll_gate(&mut self, gate: Option<&mut (dyn StartGate + '_)>, now: u64, abort: &AtomicBool) {
        let armed = self.opened.is_none() && self.armed(now);
        let Some(gate) = gate else {
            return;
        };
        match gate.poll(armed) {
            GateState::Wait => {}
            GateState::StartAt(at) => {
                self.start_ns.get_or_insert(gate::ns_until(at, now));
            }
            GateState::Abort(reason) => {
                if self.reason.is_none() {
                    self.reason = Some(reason);
                    self.stopped_at_ns = Some(now);
                    abort.store(true, Ordering::Relaxed);
                }
            }
        }
    }

    /// One turn of the watch: sleep to the next check or window edge, then act.
    pub fn tick(
        &mut self,
        control: &mut ControlClient,
        gate: Option<&mut (dyn StartGate + '_)>,
        stop: &AtomicBool,
        abort: &AtomicBool,
        on_progress: &mut dyn FnMut(&Progress),
    ) {
        let now = self.now_ns();
        let interval = match self.opened {
            None => CONNECT_INTERVAL,
            Some(_) => WATCH_INTERVAL,
        };
        let mut wake = now + interval.as_nanos() as u64;
        match self.opened {
            None => wake = self.start_ns.map_or(wake, |start| wake.min(start)),
            Some((warmup_end, _)) if !self.started => wake = wake.min(warmup_end),
            Some((_, Some(end))) if !self.ended => wake = wake.min(end),
            _ => {}
        }
        thread::sleep(Duration::from_nanos(wake.saturating_sub(now)));
        let now = self.now_ns();
        self.poll_gate(gate, now, abort);
        self.maybe_open(now);
        if let Some((warmup_end, end)) = self.opened {
            if !self.started && now >= warmup_end {
                self.started = true;
                // Memory when the window opens: every connection is up and
                // warmed. Not at the end, where the workers are already
                // closing their connections (an end sample found 843 of
                // 1,024 responder sockets and no driver socket left); and
                // before the CPU start sample, so that the socket dump's
                // own CPU is not charged to the run's transactions.
                self.window_memory = self.sample(control, &self.endpoints).1;
                self.start_samples = self.sample(control, &[]).0;
            }
            if !self.ended && end.is_some_and(|end| now >= end) {
                self.end_window(control);
            }
            if self.started {
                self.check_idle(now, warmup_end, abort);
            }
        }
        if now >= self.last_progress_ns + PROGRESS_INTERVAL_NS {
            self.last_progress_ns = now;
            let mut progress = self.progress();
            if self.live
                && self
                    .last_live_ns
                    .is_none_or(|t| now >= t + LIVE_INTERVAL_NS)
            {
                self.last_live_ns = Some(now);
                progress.live = Some(Arc::new(self.live_run(control)));
            }
            on_progress(&progress);
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

    /// Bounded by transactions alone: ends the run (the workers stop, the
    /// clients still waiting are booked where they wait) once nothing moved
    /// — no transaction completed, no byte sent or received — for the idle
    /// bound since the measurement began or the last thing moved. The reason is left to the summary, which says what the
    /// clients were waiting for.
    fn check_idle(&mut self, now: u64, warmup_end: u64, abort: &AtomicBool) {
        let Some(bound) = self.idle_bound_ns else {
            return;
        };
        if self.reason.is_some() || self.idle_stop_ns.is_some() {
            return;
        }
        let moved: u64 = self
            .slots
            .iter()
            .map(|w| w.moved_bytes.load(Ordering::Relaxed))
            .sum();
        let total = self
            .progress_counts()
            .iter()
            .sum::<u64>()
            .wrapping_add(moved);
        if total != self.last_total {
            self.last_total = total;
            self.last_change_ns = now;
        }
        if now.saturating_sub(self.last_change_ns.max(warmup_end)) >= bound {
            self.idle_stop_ns = Some(bound);
            self.stopped_at_ns = Some(now);
            abort.store(true, Ordering::Relaxed);
        }
    }

    /// After the workers are done: the end sample of a count-bounded or
    /// interrupted window.
    pub fn finish(&mut self, control: &mut ControlClient) {
        if self.started && !self.ended {
            self.end_window(control);
        }
    }

    pub fn into_outcome(self) -> Watched {
        Watched {
            reason: self.reason,
            stopped_at_ns: self.stopped_at_ns,
            start_samples: self.start_samples,
            end_samples: self.end_samples,
            window_memory: self.window_memory,
            window_opened_unix_s: self.window_opened_unix_s,
            idle_stop_ns: self.idle_stop_ns,
        }
    }

    fn end_window(&mut self, control: &mut ControlClient) {
        self.ended = true;
        self.end_samples = self.sample(control, &[]).0;
    }

    /// [`sample`], with the driver's threads per class under `class_workers`.
    fn sample(
        &self,
        control: &mut ControlClient,
        endpoints: &[Endpoint],
    ) -> (SidePair, MemoryPair) {
        let (mut pair, memory) = sample(control, endpoints);
        if let Some(threads) = self.threads {
            pair.client_threads = threads.sample(self.classes);
        }
        (pair, memory)
    }

    fn progress(&self) -> Progress {
        let elapsed = self.epoch.elapsed();
        let now = elapsed.as_nanos() as u64;
        let warmup_end = self.opened.map(|o| o.0);
        Progress {
            elapsed,
            connecting: warmup_end.is_none(),
            connected: self.connected(),
            in_warmup: warmup_end.is_none_or(|w| now < w),
            measured: warmup_end
                .filter(|&w| now >= w)
                .map(|w| Duration::from_nanos(now - w)),
            transactions: self.progress_counts(),
            live: None,
        }
    }

    /// Counted transactions so far, per class.
    fn progress_counts(&self) -> Vec<u64> {
        (0..self.classes)
            .map(|c| {
                self.slots
                    .iter()
                    .map(|w| w.transactions[c].load(Ordering::Relaxed))
                    .sum()
            })
            .collect()
    }

    /// The workers' live copies added up, with each side's CPU time and
    /// memory now.
    fn live_run(&self, control: &mut ControlClient) -> LiveRun {
        let mut classes = vec![LiveClass::default(); self.classes];
        for live in self.slots.iter().filter_map(|s| s.live.as_ref()) {
            let copy = live.classes.lock().unwrap_or_else(|e| e.into_inner());
            for (sum, part) in classes.iter_mut().zip(copy.iter()) {
                sum.add(part);
            }
        }
        let (cpu, (client_memory, server_memory)) = sample(control, &[]);
        let side = |cpu: Option<CpuSample>, memory: Option<MemorySample>| LiveSide {
            cpu_s: cpu
                .and_then(|c| c.process)
                .map(|p| (p.user_us + p.system_us) as f64 / 1e6),
            rss_bytes: memory.map(|m| m.rss_bytes),
        };
        LiveRun {
            classes,
            connected: self.connected(),
            client: side(cpu.client, client_memory),
            server: side(cpu.server, server_memory),
        }
    }
}

/// Both sides' CPU counters (and memory, with the driver's sockets to
/// `endpoints`), as close to the same instant as one control round trip
/// allows (tens of µs on loopback).
fn sample(control: &mut ControlClient, endpoints: &[Endpoint]) -> (SidePair, MemoryPair) {
    let client = sampling::local_cpu().ok();
    let (server, server_memory, server_threads) = match control.sample() {
        Ok(Reply::Sample {
            cpu,
            memory,
            test_threads,
            ..
        }) => (Some(cpu), memory, test_threads),
        _ => (None, None, Vec::new()),
    };
    (
        SidePair {
            client,
            server,
            client_threads: Vec::new(),
            server_threads,
            application: control.sample_application(),
        },
        (
            sampling::local_memory(endpoints, Side::Driver),
            server_memory,
        ),
    )
}

/// Both sides' memory now (client local, server over the control
/// connection), before the run's connections exist: no socket of the run to
/// sum yet.
pub fn memory_now(control: &mut ControlClient) -> MemoryPair {
    sample(control, &[]).1
}
