//! A responder's data listeners in other network namespaces: every test's
//! ports are opened again, same port numbers, on the wildcard address of
//! each namespace given (`serve --mirror-netns`), and the test's workers
//! accept on all of them. This is how one responder answers behind a load
//! distributor: IPVS on the distributor forwards a connection for the
//! virtual address to one of several target hosts (namespaces), keeping its
//! port, and each target has the test's listener on that port. A socket
//! keeps the namespace it was made in, so a thread enters each namespace
//! (setns(2)) only to make the listeners, as the lab's driver thread does.

use std::fs::File;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;

use stackbench_model::SocketOptions;

use crate::transport::{listen_inet, DataListener, Endpoint, TransportOps};

/// For each worker, its listeners in every namespace of `namespaces`: one
/// per inet endpoint (same port, wildcard address of its family).
pub(crate) fn listeners(
    namespaces: &[File],
    row: &'static dyn TransportOps,
    endpoints: &[Endpoint],
    workers: usize,
    socket: &SocketOptions,
) -> Result<Vec<Vec<DataListener>>, String> {
    let mut out: Vec<Vec<DataListener>> = (0..workers).map(|_| Vec::new()).collect();
    for ns in namespaces {
        let made =
            std::thread::scope(|s| {
                s.spawn(|| -> Result<Vec<Vec<DataListener>>, String> {
                    // SAFETY: setns(2) on this short-lived thread only, with a
                    // namespace descriptor that outlives the call.
                    if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                        let e = std::io::Error::last_os_error();
                        return Err(format!("enter a mirror namespace: {e}"));
                    }
                    let mut per_worker: Vec<Vec<DataListener>> =
                        (0..workers).map(|_| Vec::new()).collect();
                    for endpoint in endpoints {
                        let Endpoint::Inet(addr) = endpoint else {
                            return Err("mirror namespaces serve IP endpoints only".into());
                        };
                        let any: IpAddr = match addr {
                            SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
                            SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
                        };
                        for list in per_worker.iter_mut() {
                            let at = SocketAddr::new(any, addr.port());
                            list.push(listen_inet(row, at, socket).map_err(|e| {
                                format!("listen on {at} in a mirror namespace: {e}")
                            })?);
                        }
                    }
                    Ok(per_worker)
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
            })?;
        for (all, mine) in out.iter_mut().zip(made) {
            all.extend(mine);
        }
    }
    Ok(out)
}
