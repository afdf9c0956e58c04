//! The memory of a run measured by several agents, per side: each figure
//! summed over what it describes, once each.
//!
//! - RSS: over distinct processes (client: every agent; server: each
//!   distinct responder, which reports its whole RSS to every agent it
//!   serves);
//! - the run's own sockets (`kernel_sock_*`): over every agent, since each
//!   agent's sockets, and its test's sockets on the responder, are its own;
//! - the host's socket memory and TCP counts (sockstat): once per host,
//!   since every agent on a host reads the same figures. The baseline of a
//!   host is the lowest any of its agents saw: agents connect while the
//!   others take theirs, and the lowest was taken before the most
//!   connections existed.
//!
//! Per-connection figures are then the sums over all connections, with
//! `stackbench_metrics::memory::per_conn` as one process has them.

use stackbench_metrics::combine::once_per;
use stackbench_metrics::memory::{grown_per_conn, per_conn};
use stackbench_record::{SideMemory, SkMemInfo};

/// One agent's figures of one side.
#[derive(Debug, Clone)]
pub struct MemoryInput<'a> {
    /// The host the side ran on (keys the host's sockstat figures).
    pub host: String,
    /// The process whose RSS this is: the agent (`host:pid`) or its responder.
    pub process: String,
    /// The figures.
    pub memory: &'a SideMemory,
}

/// One side over every agent; `None` without input.
pub fn merge_side(inputs: &[MemoryInput]) -> Option<SideMemory> {
    let first = inputs.first()?.memory;
    let processes = once(inputs, |i| i.process.clone());
    let hosts = once(inputs, |i| i.host.clone());
    let connections: u64 = inputs.iter().map(|i| i.memory.connections).sum();
    let every = |f: fn(&SideMemory) -> Option<u64>| -> Option<u64> {
        inputs.iter().map(|i| f(i.memory)).sum()
    };
    let mut notes: Vec<String> = Vec::new();
    for n in inputs.iter().flat_map(|i| &i.memory.notes) {
        if !notes.contains(n) {
            notes.push(n.clone());
        }
    }
    let rss_bytes: u64 = processes.iter().map(|m| m.rss_bytes).sum();
    let rss_baseline_bytes: Option<u64> = processes.iter().map(|m| m.rss_baseline_bytes).sum();
    let host_sock_mem_bytes: u64 = hosts.iter().map(|m| m.host_sock_mem_bytes).sum();
    let host_base = host_baselines(inputs);
    let kernel_sock_bytes = every(|m| m.kernel_sock_bytes);
    Some(SideMemory {
        rss_bytes,
        rss_baseline_bytes,
        rss_bytes_per_conn: grown_per_conn(
            "RSS summed over the agents",
            rss_bytes,
            rss_baseline_bytes,
            connections,
            &mut notes,
        ),
        kernel_sock_bytes,
        kernel_sock_bytes_per_conn: kernel_sock_bytes.and_then(|b| per_conn(b, connections)),
        kernel_sock_sockets: every(|m| m.kernel_sock_sockets),
        kernel_sock_method: first.kernel_sock_method.clone(),
        kernel_sock_fields: first.kernel_sock_fields.clone(),
        kernel_sock_meminfo: inputs
            .iter()
            .map(|i| i.memory.kernel_sock_meminfo)
            .try_fold(SkMemInfo::default(), |mut sum, m| {
                sum.add(&m?);
                Some(sum)
            }),
        // A property of the kernel: kept where every agent's kernel agrees.
        kernel_sock_object_bytes_per_socket: first.kernel_sock_object_bytes_per_socket.filter(
            |b| {
                inputs
                    .iter()
                    .all(|i| i.memory.kernel_sock_object_bytes_per_socket == Some(*b))
            },
        ),
        host_sock_mem_bytes,
        host_sock_mem_baseline_bytes: host_base,
        host_sock_mem_bytes_per_conn: grown_per_conn(
            "the hosts' socket memory (sockstat) summed over the agents",
            host_sock_mem_bytes,
            host_base,
            connections,
            &mut notes,
        ),
        connections,
        tcp_inuse: hosts.iter().map(|m| m.tcp_inuse).sum(),
        tcp_orphan: hosts.iter().map(|m| m.tcp_orphan).sum(),
        tcp_tw: hosts.iter().map(|m| m.tcp_tw).sum(),
        notes,
    })
}

/// Each input's figures once per what `key` names (the first seen).
fn once<'a>(
    inputs: &[MemoryInput<'a>],
    key: impl Fn(&MemoryInput<'a>) -> String,
) -> Vec<&'a SideMemory> {
    once_per(inputs, |i| key(i), |_, _| false)
        .into_iter()
        .map(|i| i.memory)
        .collect()
}

/// Per host the lowest baseline its agents saw, summed over hosts; `None`
/// when a host has none.
fn host_baselines(inputs: &[MemoryInput]) -> Option<u64> {
    let mut lowest: Vec<(String, Option<u64>)> = Vec::new();
    for i in inputs {
        let base = i.memory.host_sock_mem_baseline_bytes;
        match lowest.iter_mut().find(|(h, _)| *h == i.host) {
            Some((_, low)) => *low = low.zip(base).map(|(a, b)| a.min(b)),
            None => lowest.push((i.host.clone(), base)),
        }
    }
    lowest.into_iter().map(|(_, b)| b).sum()
}
