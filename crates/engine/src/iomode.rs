//! Which I/O backend a run actually gets. Each backend's row ([`Claims`]:
//! [`EPOLL`], [`URING`]) says what it covers. `io = uring` covers closed-loop
//! RR and STR of raw payloads over the fd-based transports `tcp` and `unix`,
//! driver and responder; every other case (TLS and MPTCP, think time, open
//! loop, ramp, CRR, a framed application protocol such as `http1`) and a
//! kernel without io_uring run on epoll, and [`effective`] says
//! which case it was, so the stored setting is the one measured. `io = auto`
//! (the default) takes the backend that measured better for the workload
//! ([`auto_choice`]), silently.
//!
//! io_uring is detected at run time, once per process: the
//! `kernel.io_uring_disabled` sysctl (2: off for everyone; 1: only for the
//! `kernel.io_uring_group`, which the probe then settles) and a real
//! `io_uring_setup` call (ENOSYS: not built in; EPERM: refused, e.g. by a
//! seccomp filter in a container).

use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use io_uring::{types, IoUring};

use stackbench_model::{AppProtocol, IoMode, Kind, Transport};

/// What choosing a run's backend reads of the run. The driver's
/// `RunConfig` implements it (`driver/config.rs`): this module sits below
/// the driver and the responder that build on its rows, so it names no type
/// of theirs.
pub trait RunCase {
    /// The backend asked for.
    fn io(&self) -> IoMode;
    fn transport(&self) -> Transport;
    fn protocol(&self) -> AppProtocol;
    /// Each class's kind, and whether it is paced (think time or an offered
    /// rate, its own or the run's).
    fn classes(&self) -> Vec<(Kind, bool)>;
    /// A connection ramp is set.
    fn ramp(&self) -> bool;
    /// Connections this process holds, over all classes.
    fn total_clients_here(&self) -> u64;
    /// The driver's worker threads.
    fn threads(&self) -> usize;
}

/// Whether this process can use io_uring; the error says why not.
pub fn uring_available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok());
    if disabled == Some(2) {
        return Err("this kernel has io_uring switched off (kernel.io_uring_disabled = 2)".into());
    }
    match io_uring::IoUring::new(2) {
        Ok(_) => Ok(()),
        Err(e) => Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no io_uring (io_uring_setup: ENOSYS)".into(),
            Some(libc::EPERM) => {
                "io_uring_setup is not permitted here (EPERM: kernel.io_uring_disabled, \
                 or a seccomp filter)"
                    .into()
            }
            _ => format!("io_uring_setup failed: {e}"),
        }),
    }
}

/// The backend `cfg` runs with, and when it is not the one asked for, why
/// (one line naming the case, for the run's warnings; `auto` never warns).
pub fn effective(cfg: &impl RunCase) -> (IoMode, Option<String>) {
    match cfg.io() {
        IoMode::Epoll => return (IoMode::Epoll, None),
        IoMode::Auto => return (auto_choice(cfg), None),
        IoMode::Uring => {}
    }
    match URING.refusal(cfg).map_or_else(uring_available, Err) {
        Ok(()) => (IoMode::Uring, None),
        Err(why) => (
            IoMode::Epoll,
            Some(format!("io uring not used, this run measured epoll: {why}")),
        ),
    }
}

/// What `io = auto` picks for `cfg`, from bench/ab.sh on the 2-CPU reference
/// VM (7 interleaved pairs, one driver thread, uring against epoll):
/// RR100(1kB/1kB) +27% rate and -21% CPU per transaction each side, RR10(4kB/4kB)
/// +6% and -8%, but STR3(1B/20MB) -21% rate at +36% client CPU. So io_uring
/// for closed-loop RR whose workers each hold 2 or more connections, when
/// this kernel has it; epoll otherwise — streams, CRR, paced classes, TLS,
/// a framed protocol (http1), and a lone connection per worker, which epoll's direct waiting serves
/// with two syscalls per transaction (`driver::direct`).
pub fn auto_choice(cfg: &impl RunCase) -> IoMode {
    let rr_only = cfg.classes().iter().all(|&(kind, _)| kind == Kind::Rr);
    let shared = cfg.total_clients_here() >= 2 * cfg.threads().max(1) as u64;
    if rr_only && shared && URING.refusal(cfg).is_none() && uring_available().is_ok() {
        IoMode::Uring
    } else {
        IoMode::Epoll
    }
}

/// What an I/O backend covers, driver and responder: one row per backend
/// (fio's engines each declare their name and capability flags in `struct
/// ioengine_ops`, ioengine.h, and its core refuses a job an engine cannot
/// run). A case a backend does not claim runs on epoll, which claims all.
#[derive(Debug, Clone, Copy)]
pub struct Claims {
    pub name: &'static str,
    /// Whether it drives a transport's connections (io_uring asks the
    /// transport row, `TransportOps::uring`, so the row stays the one place
    /// that knows).
    pub covers: fn(Transport) -> bool,
    /// Whether it drives a connection ramp.
    pub ramp: bool,
    /// Whether it paces requests (think time, open-loop rate).
    pub paced: bool,
    /// Workload kinds it runs.
    pub kinds: &'static [Kind],
    /// Whether it hands received bytes to the application protocol (a
    /// framed one, `http1`, reads them; raw payloads are counted unread).
    pub framed: bool,
}

/// epoll (with direct waiting for a lone connection): everything.
pub const EPOLL: Claims = Claims {
    name: "epoll",
    covers: |_| true,
    ramp: true,
    paced: true,
    kinds: &[Kind::Rr, Kind::Crr, Kind::Str],
    framed: true,
};

/// io_uring: closed-loop RR and STR of raw payloads over the fd-based
/// transports (its receives land in one shared sink, unread, so a framed
/// protocol would need per-connection buffers it does not have).
pub const URING: Claims = Claims {
    name: "io_uring",
    covers: |t| crate::transport::row(t).uring(),
    ramp: false,
    paced: false,
    kinds: &[Kind::Rr, Kind::Str],
    framed: false,
};

/// Direct waiting, epoll's path for a worker's lone connection (driver and
/// responder, `driver::direct`, `responder::direct`): a closed-loop RR or
/// STR connection that keeps its socket, over a plain kernel socket — every
/// transport whose row says so (`TransportOps::plain`: all but tls, whose
/// stream is a user-space session; `DataStream::is_plain` is what the path
/// checks on the socket), of any application
/// protocol (it runs the readiness loop that hands each received chunk to
/// the protocol). Not a setting: epoll takes
/// this path by itself, and a case it does not cover stays in the epoll
/// loop; the row is the rule both sides' `direct_candidate` apply.
pub const DIRECT: Claims = Claims {
    name: "direct",
    covers: |t| crate::transport::row(t).plain(),
    ramp: true,
    paced: false,
    kinds: &[Kind::Rr, Kind::Str],
    framed: true,
};

impl Claims {
    /// The first case of `cfg` this backend does not cover, in one line.
    pub fn refusal(&self, cfg: &impl RunCase) -> Option<String> {
        let classes = cfg.classes();
        let paced = classes.iter().any(|&(_, paced)| paced);
        let kinds = classes.iter().map(|&(kind, _)| kind);
        self.refuses(cfg.transport(), cfg.ramp(), paced, kinds)
            .or_else(|| self.refuses_protocol(cfg.protocol()))
    }

    /// Whether this backend refuses the application protocol, in one line
    /// (the protocol's row says whether it is framed).
    fn refuses_protocol(&self, protocol: AppProtocol) -> Option<String> {
        (crate::app::row(protocol).framed && !self.framed).then(|| {
            format!(
                "protocol {} is not covered by the {} backend (raw is): it needs each \
                 connection's received bytes",
                protocol.name(),
                self.name
            )
        })
    }

    /// Whether this backend serves a responder's connections of `kind` over
    /// `transport` speaking `protocol`, or why not, in one line (the
    /// responder's half of the row: pacing and the ramp are the driver's, a
    /// responder connection only answers).
    pub fn serving_refusal(
        &self,
        transport: Transport,
        kind: Kind,
        protocol: AppProtocol,
    ) -> Option<String> {
        self.refuses(transport, false, false, std::iter::once(kind))
            .or_else(|| self.refuses_protocol(protocol))
    }

    /// The first of these cases this backend does not cover, in one line.
    pub(crate) fn refuses(
        &self,
        transport: Transport,
        ramp: bool,
        paced: bool,
        mut kinds: impl Iterator<Item = Kind>,
    ) -> Option<String> {
        let backend = self.name;
        if !(self.covers)(transport) {
            let names: Vec<&str> = Transport::ALL
                .iter()
                .filter(|t| (self.covers)(**t))
                .map(|t| t.name())
                .collect();
            return Some(format!(
                "transport {} is not covered by the {backend} backend ({} are)",
                transport.name(),
                list(&names)
            ));
        }
        if ramp && !self.ramp {
            return Some(format!(
                "a connection ramp is not covered by the {backend} backend"
            ));
        }
        if paced && !self.paced {
            return Some(format!(
                "think time and open-loop rates are not covered by the {backend} backend \
                 (closed loop is)"
            ));
        }
        if let Some(kind) = kinds.find(|k| !self.kinds.contains(k)) {
            let names: Vec<&str> = self.kinds.iter().map(|k| k.name()).collect();
            return Some(format!(
                "{} is not covered by the {backend} backend ({} are)",
                kind.name(),
                list(&names)
            ));
        }
        None
    }

    /// Whether this row lets a connection of `kind`, paced or not, take
    /// the backend (the checks a backend makes per connection at run time;
    /// the transport is checked on the socket itself).
    #[inline]
    pub(crate) fn takes(&self, kind: Kind, paced: bool) -> bool {
        self.kinds.contains(&kind) && (self.paced || !paced)
    }
}

/// "a", "a and b", "a, b and c".
fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

/// A ring with the cheapest completion handling this kernel offers: task
/// work run only when this (single) thread enters to reap (Linux 6.1), else
/// cooperative task work (5.19), else the plain ring. Every enter of both
/// sides asks for completions ([`enter`]), busy-polling ones with a zero
/// wait, so deferred work is always run.
pub(crate) fn build(entries: u32) -> io::Result<IoUring> {
    let cq = entries * 2;
    let deferred = IoUring::builder()
        .setup_cqsize(cq)
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(entries);
    if let Ok(r) = deferred {
        return Ok(r);
    }
    IoUring::builder()
        .setup_cqsize(cq)
        .setup_coop_taskrun()
        .build(entries)
        .or_else(|_| IoUring::builder().setup_cqsize(cq).build(entries))
}

/// Submits what is queued on `ring` and waits up to `wait` (zero: not at
/// all, but completions are still reaped) for a completion, in one
/// `io_uring_enter`. ETIME (the wait ended), EINTR and EBUSY (completions to
/// reap first) all mean: go on with the loop.
pub(crate) fn enter(ring: &IoUring, wait: Duration) {
    let ts = types::Timespec::from(wait);
    let _ = ring
        .submitter()
        .submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_claims_or_refuses_a_case_in_one_line() {
        let all = [Kind::Rr, Kind::Crr, Kind::Str];
        for t in [
            Transport::Tcp,
            Transport::Unix,
            Transport::Tls,
            Transport::Mptcp,
        ] {
            assert_eq!(EPOLL.refuses(t, true, true, all.into_iter()), None);
        }
        let rr_str = [Kind::Rr, Kind::Str];
        assert_eq!(
            URING.refuses(Transport::Unix, false, false, rr_str.into_iter()),
            None
        );
        let refused = [
            (URING.refuses(Transport::Tls, false, false, rr_str.into_iter())),
            (URING.refuses(Transport::Tcp, true, false, rr_str.into_iter())),
            (URING.refuses(Transport::Tcp, false, true, rr_str.into_iter())),
            (URING.refuses(Transport::Tcp, false, false, all.into_iter())),
        ];
        let want = [
            "transport tls is not covered by the io_uring backend (tcp and unix are)",
            "a connection ramp is not covered by the io_uring backend",
            "think time and open-loop rates are not covered by the io_uring backend (closed \
             loop is)",
            "CRR is not covered by the io_uring backend (RR and STR are)",
        ];
        for (got, want) in refused.iter().zip(want) {
            assert_eq!(got.as_deref(), Some(want));
        }
        assert_eq!(EPOLL.refuses_protocol(AppProtocol::Http1), None);
        assert_eq!(URING.refuses_protocol(AppProtocol::Raw), None);
        assert_eq!(
            URING.refuses_protocol(AppProtocol::Http1).as_deref(),
            Some(
                "protocol http1 is not covered by the io_uring backend (raw is): it needs \
                 each connection's received bytes"
            )
        );
        // The responder's half applies the same rule: http1 is served by
        // epoll and direct waiting, never on the ring.
        let serve =
            |row: &Claims, protocol| row.serving_refusal(Transport::Tcp, Kind::Rr, protocol);
        assert_eq!(serve(&EPOLL, AppProtocol::Http1), None);
        assert_eq!(serve(&DIRECT, AppProtocol::Http1), None);
        assert_eq!(serve(&URING, AppProtocol::Raw), None);
        assert_eq!(
            serve(&URING, AppProtocol::Http1),
            URING.refuses_protocol(AppProtocol::Http1)
        );
    }

    #[test]
    fn direct_waiting_claims_closed_loop_rr_and_str_on_plain_sockets() {
        let rr_str = [Kind::Rr, Kind::Str];
        for t in [Transport::Tcp, Transport::Unix, Transport::Mptcp] {
            assert_eq!(DIRECT.refuses(t, true, false, rr_str.into_iter()), None);
        }
        assert_eq!(
            DIRECT
                .refuses(Transport::Tls, false, false, rr_str.into_iter())
                .as_deref(),
            Some(
                "transport tls is not covered by the direct backend (tcp, unix, mptcp and smc are)"
            )
        );
        assert!(DIRECT.takes(Kind::Rr, false) && DIRECT.takes(Kind::Str, false));
        assert!(!DIRECT.takes(Kind::Crr, false) && !DIRECT.takes(Kind::Rr, true));
        assert!(EPOLL.takes(Kind::Crr, true));
    }

    #[test]
    fn this_kernel_has_io_uring_or_says_why_not() {
        match uring_available() {
            Ok(()) => {}
            Err(e) => {
                eprintln!("io_uring unavailable here: {e}");
                assert!(!e.contains('\n'));
            }
        }
    }
}
