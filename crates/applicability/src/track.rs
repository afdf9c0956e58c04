//! Samples folded into connections: each socket, keyed by its sock_diag
//! cookie, keeps its first and last sight, the counters it had when the
//! window opened (so only the window's traffic counts) and its last ones,
//! and the estimated message sizes of every interval between two sights.
//!
//! Lifetimes are as precise as the sampling: a connection is seen at most
//! one interval after it opened and its close event is read at most one
//! interval after it closed. One that opened and closed between two dumps
//! is known only from its close event: its lifetime reads as 0 (it was
//! shorter than one interval), its bytes and segments are exact.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::time::Duration;

use crate::protection::ktls::KtlsInfo;
use crate::sample::{Counters, TcpSample};
use crate::sizes::SizeTally;

/// One TCP connection end as the window saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Conn {
    pub cookie: u64,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    /// Time since the window opened of the first and the last sight.
    pub first_seen: Duration,
    pub last_seen: Duration,
    /// Open when the window opened: its lifetime is a lower bound and its
    /// traffic counts from the first dump on.
    pub open_at_start: bool,
    /// Its close event was received.
    pub closed: bool,
    /// The counters the window's traffic is measured from (zero for a
    /// connection that opened inside the window).
    pub baseline: Counters,
    /// The last counters seen.
    pub last: Counters,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    /// Estimated sizes of what this end sent and received.
    pub sent: SizeTally,
    pub received: SizeTally,
    /// The kernel's TLS record layer, as last seen (kTLS is set up after
    /// the handshake, so a later sight may have it where an earlier did not).
    pub ktls: Option<KtlsInfo>,
}

impl Conn {
    /// Its traffic inside the window.
    pub fn window(&self) -> Counters {
        self.last.since(&self.baseline)
    }

    /// From its first to its last sight.
    pub fn lifetime(&self) -> Duration {
        self.last_seen.saturating_sub(self.first_seen)
    }

    /// Adds one more sight: the sizes of the interval since the previous one.
    fn advance(&mut self, at: Duration, s: &TcpSample) {
        let d = s.counters.since(&self.last);
        self.sent
            .add(d.bytes_sent, d.data_segs_out, self.snd_mss.max(s.snd_mss));
        self.received.add(
            d.bytes_received,
            d.data_segs_in,
            self.rcv_mss.max(s.rcv_mss),
        );
        self.last = s.counters;
        self.last_seen = at;
        self.snd_mss = self.snd_mss.max(s.snd_mss);
        self.rcv_mss = self.rcv_mss.max(s.rcv_mss);
        self.closed |= s.closed;
        if s.ktls.is_some() {
            self.ktls.clone_from(&s.ktls);
        }
    }
}

/// The connections of one window, built dump by dump.
#[derive(Debug, Default)]
pub struct Tracker {
    conns: HashMap<u64, Conn>,
    /// Local ports of listening sockets seen in any dump.
    listeners: HashSet<u16>,
    dumps: u64,
}

impl Tracker {
    /// One dump taken `at` after the window opened. The first dump's
    /// connections are those open at the start.
    pub fn dump(&mut self, at: Duration, samples: &[TcpSample]) {
        let first = self.dumps == 0;
        self.dumps += 1;
        for s in samples {
            self.sight(at, s, first);
        }
    }

    /// Close events read `at` after the window opened.
    pub fn closed(&mut self, at: Duration, samples: &[TcpSample]) {
        for s in samples {
            self.sight(at, s, false);
        }
    }

    fn sight(&mut self, at: Duration, s: &TcpSample, at_start: bool) {
        if s.listening || s.remote.port() == 0 {
            self.listeners.insert(s.local.port());
            return;
        }
        match self.conns.get_mut(&s.cookie) {
            Some(c) => c.advance(at, s),
            None => {
                let baseline = if at_start {
                    s.counters
                } else {
                    Counters::default()
                };
                let mut c = Conn {
                    cookie: s.cookie,
                    local: s.local,
                    remote: s.remote,
                    first_seen: at,
                    last_seen: at,
                    open_at_start: at_start,
                    closed: false,
                    baseline,
                    last: baseline,
                    snd_mss: s.snd_mss,
                    rcv_mss: s.rcv_mss,
                    sent: SizeTally::default(),
                    received: SizeTally::default(),
                    ktls: None,
                };
                c.advance(at, s);
                self.conns.insert(s.cookie, c);
            }
        }
    }

    /// Dumps taken so far.
    pub fn dumps(&self) -> u64 {
        self.dumps
    }

    /// The connections (by first sight, then cookie) and the listening ports.
    pub fn finish(self) -> (Vec<Conn>, HashSet<u16>) {
        let mut conns: Vec<Conn> = self.conns.into_values().collect();
        conns.sort_by_key(|c| (c.first_seen, c.cookie));
        (conns, self.listeners)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(cookie: u64, acked: u64, received: u64, closed: bool) -> TcpSample {
        TcpSample {
            cookie,
            local: "10.0.0.1:40000".parse().unwrap(),
            remote: "10.0.0.2:80".parse().unwrap(),
            listening: false,
            closed,
            counters: Counters {
                bytes_out: acked,
                bytes_sent: acked,
                bytes_received: received,
                segs_out: acked / 100,
                segs_in: received / 100,
                data_segs_out: acked / 100,
                data_segs_in: received / 100,
            },
            snd_mss: 1448,
            rcv_mss: 1448,
            rtt_us: 50,
            ktls: None,
        }
    }

    #[test]
    fn traffic_before_the_window_is_not_counted_and_close_events_finish_a_connection() {
        let ms = Duration::from_millis;
        let mut t = Tracker::default();
        // Cookie 1 was open before the window with 5000 B sent.
        t.dump(ms(0), &[sample(1, 5000, 0, false)]);
        t.dump(
            ms(100),
            &[sample(1, 5400, 800, false), sample(2, 100, 0, false)],
        );
        t.closed(ms(150), &[sample(2, 100, 800, true)]);
        // Cookie 3 lived between two dumps: only its close event shows it.
        t.closed(ms(190), &[sample(3, 64, 8000, true)]);
        t.dump(ms(200), &[sample(1, 5800, 1600, false)]);
        let (conns, _) = t.finish();
        assert_eq!(conns.len(), 3);
        let c1 = &conns[0];
        assert!(c1.open_at_start && !c1.closed);
        assert_eq!(c1.window().bytes_out, 800);
        assert_eq!(c1.window().bytes_received, 1600);
        assert_eq!(c1.lifetime(), ms(200));
        let c2 = conns.iter().find(|c| c.cookie == 2).unwrap();
        assert!(c2.closed && !c2.open_at_start);
        assert_eq!(c2.window().bytes(), 900);
        assert_eq!(c2.lifetime(), ms(50));
        let c3 = conns.iter().find(|c| c.cookie == 3).unwrap();
        assert_eq!(c3.window().bytes(), 8064);
        assert_eq!(c3.lifetime(), Duration::ZERO);
    }

    #[test]
    fn listeners_are_ports_not_connections() {
        let mut t = Tracker::default();
        let mut l = sample(9, 0, 0, false);
        l.listening = true;
        l.local = "0.0.0.0:7701".parse().unwrap();
        l.remote = "0.0.0.0:0".parse().unwrap();
        t.dump(Duration::ZERO, &[l]);
        let (conns, listeners) = t.finish();
        assert!(conns.is_empty());
        assert!(listeners.contains(&7701));
    }
}
