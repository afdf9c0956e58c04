//! Why an SMC connection fell back to TCP: the decline reason and the peer's
//! diagnosis SMC_DIAG reports for each socket (the `SMC_DIAG_FALLBACK`
//! attribute, `struct smc_diag_fallback` in include/uapi/linux/smc_diag.h),
//! named by the kernel's CLC decline codes (`SMC_CLC_DECL_*` in
//! include/uapi/linux/smc.h and net/smc/smc_clc.h; smc-tools' `smcss`
//! prints the same table). A code not in the table is shown in hex only.

/// `SMC_DIAG_FALLBACK`: the attribute carrying (reason, peer diagnosis).
const SMC_DIAG_FALLBACK: u16 = 5;

/// The CLC decline codes and what each means.
const CODES: &[(u32, &str)] = &[
    (0x0101_0000, "insufficient memory resources"),
    (
        0x0201_0000,
        "timeout waiting for the RDMA confirm-link message",
    ),
    (0x0202_0000, "timeout waiting for the RDMA add-link message"),
    (0x0300_0000, "configuration error"),
    (0x0301_0000, "the peer did not propose SMC"),
    (0x0302_0000, "the connection uses IPsec"),
    (0x0303_0000, "no SMC device found (RoCE or ISM)"),
    (0x0303_0001, "no SMC-D (ISM) device found"),
    (0x0303_0002, "no SMC-R (RoCE) device found"),
    (0x0303_0003, "the ISM hardware has no ISMv2 support"),
    (0x0303_0004, "the peer sent no CLC v2 extension"),
    (0x0303_0005, "the peer sent no SMC-Dv2 extension"),
    (0x0303_0006, "the peer sent no system EID"),
    (0x0303_0007, "no SMC-Dv2 device found"),
    (0x0303_0008, "the peer sent no user EID"),
    (0x0303_0009, "release version negotiation failed"),
    (0x0303_000a, "maximum connections negotiation failed"),
    (0x0303_000b, "maximum links negotiation failed"),
    (0x0304_0000, "the SMC modes (R or D) do not match"),
    (0x0305_0000, "the peer has an eyecatcher in its RMBE"),
    (
        0x0306_0000,
        "a socket option (e.g. TCP Fast Open) SMC does not support",
    ),
    (0x0307_0000, "IP prefix or subnet mismatch"),
    (0x0308_0000, "cannot get the VLAN id of the IP device"),
    (0x0309_0000, "cannot register the VLAN id on the ISM device"),
    (0x030a_0000, "no active SMC-R link in the link group"),
    (0x030b_0000, "the server's SMC-R link was not found"),
    (0x030c_0000, "SMC version mismatch"),
    (0x030d_0000, "SMC-D DMB limit exceeded"),
    (0x030e_0000, "SMC-Rv2: no route to the peer"),
    (0x030f_0000, "SMC-Rv2: indirect route mismatch"),
    (0x0400_0000, "synchronization error"),
    (0x0500_0000, "the peer declined during the handshake"),
    (0x0999_0000, "internal error"),
    (0x0999_0001, "internal error: rtoken handling failed"),
    (0x0999_0002, "internal error: IB ready link failed"),
    (
        0x0999_0003,
        "internal error: registering RDMA buffers failed",
    ),
];

/// What decline code `code` means, when the table knows it.
pub fn describe(code: u32) -> Option<&'static str> {
    CODES.iter().find(|(c, _)| *c == code).map(|(_, d)| *d)
}

/// `0x05000000 (the peer declined during the handshake)`.
fn named(code: u32) -> String {
    match describe(code) {
        Some(d) => format!("{code:#010x} ({d})"),
        None => format!("{code:#010x}"),
    }
}

/// One line for a fallback: the local reason and, when the peer gave one,
/// its diagnosis — the two together say which side found what missing.
pub fn explain(reason: u32, peer_diagnosis: u32) -> String {
    if peer_diagnosis == 0 {
        format!("decline {}", named(reason))
    } else {
        format!(
            "decline {}, peer's diagnosis {}",
            named(reason),
            named(peer_diagnosis)
        )
    }
}

/// (reason, peer diagnosis) from the attributes after a `smc_diag_msg`;
/// `None` when absent, or both zero (the connection did not fall back).
pub fn fallback_of(mut attrs: &[u8]) -> Option<(u32, u32)> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == SMC_DIAG_FALLBACK && len >= 12 {
            let word = |at: usize| u32::from_ne_bytes(attrs[at..at + 4].try_into().expect("4"));
            let pair = (word(4), word(8));
            return (pair != (0, 0)).then_some(pair);
        }
        attrs = &attrs[((len + 3) & !3).min(attrs.len())..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, data: &[u8]) -> Vec<u8> {
        let mut a = ((4 + data.len()) as u16).to_ne_bytes().to_vec();
        a.extend_from_slice(&kind.to_ne_bytes());
        a.extend_from_slice(data);
        a.resize((a.len() + 3) & !3, 0);
        a
    }

    #[test]
    fn the_fallback_attribute_is_found_after_others() {
        // What a 6.12 guest's responder socket said when its client found no
        // SMC device: SHUTD, then FALLBACK = (PEERDECL, NOSMCDEV).
        let mut attrs = attr(3, &[0]);
        let mut fb = 0x0500_0000u32.to_ne_bytes().to_vec();
        fb.extend_from_slice(&0x0303_0000u32.to_ne_bytes());
        attrs.extend(attr(SMC_DIAG_FALLBACK, &fb));
        let (reason, peer) = fallback_of(&attrs).unwrap();
        assert_eq!((reason, peer), (0x0500_0000, 0x0303_0000));
        assert_eq!(
            explain(reason, peer),
            "decline 0x05000000 (the peer declined during the handshake), peer's diagnosis \
             0x03030000 (no SMC device found (RoCE or ISM))"
        );
        // A connection that did not fall back carries zeros.
        assert_eq!(fallback_of(&attr(SMC_DIAG_FALLBACK, &[0; 8])), None);
        assert_eq!(fallback_of(&[1, 0]), None);
    }

    #[test]
    fn unknown_codes_show_in_hex() {
        assert_eq!(
            explain(0x0201_0000, 0),
            "decline 0x02010000 (timeout waiting for the RDMA confirm-link message)"
        );
        assert_eq!(explain(0x0777_0000, 0), "decline 0x07770000");
        let mut seen = std::collections::BTreeSet::new();
        assert!(
            CODES.iter().all(|(c, _)| seen.insert(*c)),
            "codes are unique"
        );
    }
}
