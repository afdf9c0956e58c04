//! SMC-R between the two guests of a pair, each guest's side: an rxe
//! (Soft-RoCE) device on the wire's adapter in the guest's initial
//! namespace (`rdma link add rxe0 type rxe netdev eth0`, by NETLINK_RDMA),
//! and an SMC User EID (smc-tools' `smc_ueid add`, by the SMC generic
//! netlink family): rxe has only RoCE v2 GIDs, which only SMC-R v2 uses, and
//! Linux proposes SMC-R v2 only with a UEID. Both guests add the same one.
//! After the step, [`counters`] reads the kernel's SMC-R statistics
//! (SMC_NETLINK_GET_STATS), so each side shows whether SMC-R carried the
//! traffic; a fallback's decline code is the smc transport's own check.

use stackbench_lab::netlink::{attrs, Message, Netlink};
use stackbench_record::SmcRCounters;

/// The rxe device each guest adds.
pub const RXE_DEVICE: &str = "rxe0";
/// The User EID both guests add (up to 32 of A-Z 0-9 . -).
const UEID: &str = "STACKBENCH-PAIR";

const NETLINK_RDMA: libc::c_int = 20;
/// `RDMA_NL_GET_TYPE(RDMA_NL_NLDEV = 5, RDMA_NLDEV_CMD_NEWLINK = 3)`.
const RDMA_NEWLINK: u16 = (5 << 10) + 3;
const RDMA_ATTR_DEV_NAME: u16 = 2;
const RDMA_ATTR_NDEV_NAME: u16 = 51;
const RDMA_ATTR_LINK_TYPE: u16 = 65;

/// `GENL_ID_CTRL`, `CTRL_CMD_GETFAMILY`, `CTRL_ATTR_FAMILY_ID`/`_NAME`.
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// linux/smc.h.
const SMC_FAMILY: &str = "SMC_GEN_NETLINK";
const SMC_NETLINK_GET_STATS: u8 = 7;
const SMC_NETLINK_ADD_UEID: u8 = 10;
const SMC_NLA_EID_TABLE_ENTRY: u16 = 1;
const SMC_GEN_STATS: u16 = 7;
const SMC_NLA_STATS_SMCR_TECH: u16 = 2;
const SMC_NLA_STATS_CLNT_HS_ERR_CNT: u16 = 3;
const SMC_NLA_STATS_SRV_HS_ERR_CNT: u16 = 4;

/// Loads rdma_rxe and smc, puts rxe0 on `ifname` and adds the UEID.
pub(crate) fn prepare(ifname: &str) -> Result<(), String> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    for module in ["rdma_rxe", "smc", "smc_diag"] {
        let ok = std::process::Command::new("/sbin/modprobe")
            .arg(module)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok && module == "rdma_rxe" {
            return Err(format!(
                "SMC-R on a pair: kernel {} has no rdma_rxe (Soft-RoCE, CONFIG_RDMA_RXE); \
                 Debian's cloud kernels lack it: use the generic kernel, e.g. \
                 linux-image-6.12.*+deb12-amd64-unsigned",
                release.trim()
            ));
        }
    }
    let mut rdma = Netlink::open_protocol(NETLINK_RDMA)
        .map_err(|e| format!("SMC-R: open NETLINK_RDMA: {e}"))?;
    let mut msg = Message::new(RDMA_NEWLINK, 0, &[]);
    msg.attr_str(RDMA_ATTR_DEV_NAME, RXE_DEVICE)
        .attr_str(RDMA_ATTR_LINK_TYPE, "rxe")
        .attr_str(RDMA_ATTR_NDEV_NAME, ifname);
    rdma.request(msg).map_err(|e| {
        format!(
            "SMC-R: rdma link add {RXE_DEVICE} type rxe netdev {ifname}: {}{}",
            e.source,
            e.message.map(|m| format!(" ({m})")).unwrap_or_default()
        )
    })?;
    let mut genl = genl()?;
    let family = smc_family(&mut genl)?;
    let mut msg = genl_message(family, SMC_NETLINK_ADD_UEID);
    // The kernel takes exactly SMC_MAX_EID_LEN (32) characters, blank
    // padded, and a NUL (smc_nl_add_ueid: anything else is EINVAL).
    msg.attr_str(SMC_NLA_EID_TABLE_ENTRY, &format!("{UEID:<32}"));
    genl.request(msg).map_err(|e| {
        format!(
            "SMC-R: add the SMC User EID {UEID}: {}{}",
            e.source,
            e.message.map(|m| format!(" ({m})")).unwrap_or_default()
        )
    })
}

/// The kernel's SMC-R statistics now.
pub(crate) fn counters() -> Result<SmcRCounters, String> {
    let mut genl = genl()?;
    let family = smc_family(&mut genl)?;
    let replies = genl
        .dump(genl_message(family, SMC_NETLINK_GET_STATS))
        .map_err(|e| format!("SMC-R: read the SMC statistics: {}", e.source))?;
    let mut out = SmcRCounters {
        device: RXE_DEVICE.to_string(),
        ..SmcRCounters::default()
    };
    for reply in &replies {
        // After the 4-byte genl header: SMC_GEN_STATS, a nest.
        for (kind, stats) in attrs(reply.get(4..).unwrap_or_default()) {
            if kind == SMC_GEN_STATS {
                add_stats(stats, &mut out);
            }
        }
    }
    Ok(out)
}

fn add_stats(stats: &[u8], out: &mut SmcRCounters) {
    for (kind, data) in attrs(stats) {
        match kind {
            SMC_NLA_STATS_SMCR_TECH => add_tech(data, out),
            SMC_NLA_STATS_CLNT_HS_ERR_CNT => out.client_handshake_errors += u64_of(data),
            SMC_NLA_STATS_SRV_HS_ERR_CNT => out.server_handshake_errors += u64_of(data),
            _ => {}
        }
    }
}

/// `SMC_NLA_STATS_T_*` of the SMC-R part (linux/smc.h).
fn add_tech(tech: &[u8], out: &mut SmcRCounters) {
    for (kind, data) in attrs(tech) {
        let slot = match kind {
            7 => &mut out.client_v1,
            8 => &mut out.client_v2,
            9 => &mut out.server_v1,
            10 => &mut out.server_v2,
            16 => &mut out.rx_bytes,
            17 => &mut out.tx_bytes,
            18 => &mut out.rx_calls,
            19 => &mut out.tx_calls,
            _ => continue,
        };
        *slot += u64_of(data);
    }
}

fn u64_of(data: &[u8]) -> u64 {
    data.get(..8)
        .map_or(0, |b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
}

fn genl() -> Result<Netlink, String> {
    Netlink::open_protocol(libc::NETLINK_GENERIC)
        .map_err(|e| format!("SMC-R: open NETLINK_GENERIC: {e}"))
}

/// A generic netlink request: the 4-byte `genlmsghdr` (cmd, version 1).
fn genl_message(family: u16, cmd: u8) -> Message {
    Message::new(family, 0, &[cmd, 1, 0, 0])
}

/// The SMC generic netlink family's id (the smc module registers it).
fn smc_family(genl: &mut Netlink) -> Result<u16, String> {
    let mut msg = Message::new(GENL_ID_CTRL, 0, &[CTRL_CMD_GETFAMILY, 1, 0, 0]);
    msg.attr_str(CTRL_ATTR_FAMILY_NAME, SMC_FAMILY);
    let reply = genl.get(msg).map_err(|e| {
        format!(
            "SMC-R: no {SMC_FAMILY} netlink family ({}): is the smc module loaded?",
            e.source
        )
    })?;
    let id = attrs(reply.get(4..).unwrap_or_default())
        .find(|(kind, _)| *kind == CTRL_ATTR_FAMILY_ID)
        .and_then(|(_, data)| data.get(..2).map(|b| u16::from_ne_bytes([b[0], b[1]])));
    id.ok_or_else(|| format!("SMC-R: the {SMC_FAMILY} family reply has no id"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One netlink attribute, padded to 4 bytes.
    fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
        let mut out = ((4 + data.len()) as u16).to_ne_bytes().to_vec();
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(data);
        out.resize((out.len() + 3) & !3, 0);
        out
    }

    #[test]
    fn smcr_statistics_are_summed_from_their_nests() {
        // SMC_GEN_STATS { SMCR_TECH { CLNT_V2_SUCC 3, TX_BYTES 100 }, SRV_HS_ERR 1 }
        let tech = [
            attr(8, &3u64.to_ne_bytes()),
            attr(17, &100u64.to_ne_bytes()),
        ]
        .concat();
        let stats = [
            attr(SMC_NLA_STATS_SMCR_TECH | 0x8000, &tech),
            attr(SMC_NLA_STATS_SRV_HS_ERR_CNT, &1u64.to_ne_bytes()),
        ]
        .concat();
        let mut out = SmcRCounters::default();
        add_stats(&stats, &mut out);
        assert_eq!(out.client_v2, 3);
        assert_eq!(out.tx_bytes, 100);
        assert_eq!(out.server_handshake_errors, 1);
        assert_eq!(out.connections(), 3);
    }
}
