//! The `unix` row: AF_UNIX stream sockets, the memory-to-memory path
//! without TCP/IP. Same host only; endpoints are socket paths (one per
//! responder worker, in a private [`SocketDir`]); the TCP options that mean
//! nothing here are not set, each named in a note.

use std::net::{IpAddr, SocketAddr};

use socket2::{Domain, Protocol};
use stackbench_model::{CrrClose, SocketOptions, Transport};

use super::listen::listen_unix;
use super::ops::{ListenRequest, Listening, TransportOps};
use super::{Endpoint, SocketDir};

#[derive(Debug)]
pub struct Unix;

pub static UNIX: Unix = Unix;

impl TransportOps for Unix {
    fn transport(&self) -> Transport {
        Transport::Unix
    }

    fn socket(&self, _inet: Domain) -> (Domain, Option<Protocol>) {
        (Domain::UNIX, None)
    }

    fn uring(&self) -> bool {
        true
    }

    fn paths(&self) -> bool {
        true
    }

    fn nagle(&self) -> bool {
        false
    }

    fn effective_options(&self, opts: &SocketOptions) -> (SocketOptions, Vec<String>) {
        let mut eff = *opts;
        let mut notes = Vec::new();
        if eff.priority.take().is_some() {
            notes
                .push("priority not set: AF_UNIX has no IP header (DSCP) and no qdisc".to_string());
        }
        if eff.nodelay {
            eff.nodelay = false;
            notes.push("nodelay not set: AF_UNIX has no Nagle algorithm".to_string());
        }
        if eff.quickack {
            eff.quickack = false;
            notes.push("quickack not set: AF_UNIX has no delayed ACK".to_string());
        }
        if eff.busy_poll_us.take().is_some() {
            notes.push("busy_poll not set: AF_UNIX has no device queue to poll".to_string());
        }
        if eff.rcvbuf_bytes.take().is_some() {
            notes.push(
                "rcvbuf not set: AF_UNIX stream data is bounded by the sender's sndbuf".to_string(),
            );
        }
        if eff.waitall {
            notes.push(
                "waitall: MSG_WAITALL applies, but AF_UNIX epoll ignores SO_RCVLOWAT \
                 (a receiver may wake per chunk)"
                    .to_string(),
            );
        }
        if eff.crr_close == CrrClose::Abort {
            eff.crr_close = CrrClose::Client;
            notes.push(
                "crr_close abort runs as client: AF_UNIX has no reset (SO_LINGER 0 does \
                 nothing) and no TIME_WAIT"
                    .to_string(),
            );
        }
        // TCP_CORK is refused on AF_UNIX, and nothing is held to cork for.
        eff.cork = false;
        (eff, notes)
    }

    /// The responder must be on this host (loopback), with a writable
    /// socket directory with room for the paths (the responder, on the same
    /// host, makes its directories where this check does).
    fn check_usable(&self, target: SocketAddr) -> Result<(), String> {
        if !target.ip().is_loopback() {
            return Err(format!(
                "transport unix needs the responder on this host, but the target {target} is \
                 not loopback: use a loopback target (127.0.0.1:PORT or [::1]:PORT), drop \
                 --target, or use --transport tcp"
            ));
        }
        // The longest name a responder worker's socket gets.
        SocketDir::create()?.socket_path("w1023.sock").map(drop)
    }

    fn check_driver(&self, local: IpAddr) -> Result<(), String> {
        if local.is_loopback() {
            Ok(())
        } else {
            Err("transport unix needs the driver on this host: connect over loopback".to_string())
        }
    }

    /// One socket path per worker in a fresh private directory.
    fn listen(&self, req: &ListenRequest<'_>) -> Result<Listening, String> {
        let dir = SocketDir::create()?;
        let mut per_worker = Vec::new();
        let mut endpoints = Vec::new();
        for i in 0..req.workers {
            let path = dir.socket_path(&format!("w{i}.sock"))?;
            let l = listen_unix(&UNIX, &path, req.socket).map_err(|e| {
                format!("transport unix: cannot listen on '{}': {e}", path.display())
            })?;
            per_worker.push(vec![l]);
            endpoints.push(Endpoint::Unix(path));
        }
        Ok(Listening {
            per_worker,
            endpoints,
            dir: Some(dir),
        })
    }

    fn as_row(&self) -> &'static dyn TransportOps {
        &UNIX
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::row;

    #[test]
    fn unix_drops_tcp_options_and_says_so() {
        let opts = SocketOptions {
            nodelay: true,
            quickack: true,
            sndbuf_bytes: Some(65536),
            rcvbuf_bytes: Some(65536),
            crr_close: CrrClose::Abort,
            ..SocketOptions::default()
        };
        let (eff, notes) = row(Transport::Unix).effective_options(&opts);
        assert!(!eff.nodelay && !eff.quickack && eff.rcvbuf_bytes.is_none());
        assert_eq!(eff.sndbuf_bytes, Some(65536));
        assert_eq!(eff.crr_close, CrrClose::Client);
        assert_eq!(notes.len(), 4, "{notes:?}");
        assert!(notes[0].starts_with("nodelay"));
        let (eff, notes) = row(Transport::Tcp).effective_options(&opts);
        assert_eq!(eff, opts);
        assert!(notes.is_empty());
    }

    #[test]
    fn unix_needs_a_loopback_target() {
        let usable = |t, a: &str| row(t).check_usable(a.parse().unwrap());
        assert!(usable(Transport::Unix, "127.0.0.1:1").is_ok());
        assert!(usable(Transport::Unix, "[::1]:1").is_ok());
        let e = usable(Transport::Unix, "192.0.2.1:12870").unwrap_err();
        assert!(e.contains("needs the responder on this host"), "{e}");
        assert!(usable(Transport::Tcp, "192.0.2.1:1").is_ok());
    }

    /// The responder serves unix tests only to a driver on this host, with
    /// a socket path per worker.
    #[test]
    fn unix_listens_only_for_a_driver_on_this_host() {
        let e = UNIX.check_driver("192.0.2.1".parse().unwrap()).unwrap_err();
        assert!(e.contains("needs the driver on this host"), "{e}");
        assert!(UNIX.check_driver("::1".parse().unwrap()).is_ok());
        assert!(row(Transport::Tcp)
            .check_driver("192.0.2.1".parse().unwrap())
            .is_ok());
        let socket = SocketOptions::default();
        let here = UNIX
            .listen(&ListenRequest {
                workers: 2,
                ip: "127.0.0.1".parse().unwrap(),
                ports: 1,
                socket: &socket,
                tls: None,
            })
            .unwrap();
        assert_eq!(here.per_worker.len(), 2);
        assert!(matches!(
            &here.endpoints[..],
            [Endpoint::Unix(_), Endpoint::Unix(_)]
        ));
        assert!(here.dir.is_some());
    }
}
