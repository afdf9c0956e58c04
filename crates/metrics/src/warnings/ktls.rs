//! TLS figures that are not what they seem: `tls_mode ktls` whose kernel
//! did not visibly carry the records (no connection switched, the kTLS
//! counters did not rise, or records failed to decrypt), and a foreign
//! server whose certificate was not verified (`--insecure`). Neither is
//! ever stored as fine.

use stackbench_record::ClassResult;

use super::Warning;

/// The class's kTLS shortfall, or `None` when the driver's connections
/// switched, the kernel counted sockets set up for both directions in the
/// driver's namespace, and no record failed to decrypt on either side.
pub fn check_ktls(class: &ClassResult) -> Option<Warning> {
    let k = class.tls.as_ref()?.ktls.as_ref()?;
    let mut why = Vec::new();
    if k.connections == 0 {
        why.push("no driver connection switched to kTLS".to_string());
    }
    match &k.client {
        None => why.push("/proc/net/tls_stat was unreadable on the driver's side".to_string()),
        Some(c) => {
            let (tx, rx) = c.carried();
            if tx == 0 || rx == 0 {
                why.push(format!(
                    "the driver's kTLS counters did not rise (tx {tx}, rx {rx} sockets)"
                ));
            }
        }
    }
    let decrypt_errors: u64 = [&k.client, &k.server]
        .iter()
        .filter_map(|c| c.as_ref().map(|c| c.decrypt_errors))
        .sum();
    if decrypt_errors > 0 {
        why.push(format!("{decrypt_errors} records failed to decrypt"));
    }
    (!why.is_empty()).then_some(Warning::KtlsNotCarried { why })
}

/// `--insecure` against an https:// target: the class's server was not
/// verified (`tls.server_verified` false), named by the run's target.
pub fn check_tls_unverified(class: &ClassResult) -> Option<Warning> {
    let verified = class.tls.as_ref()?.server_verified?;
    (!verified).then(|| Warning::TlsUnverified {
        server: "the target".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use stackbench_record::{KtlsCounters, KtlsFigures, TlsFigures};

    fn class(k: KtlsFigures) -> ClassResult {
        let mut c = crate::warnings::tests::sample_class();
        c.tls = Some(TlsFigures {
            ktls: Some(k),
            ..TlsFigures::default()
        });
        c
    }

    #[test]
    fn a_ktls_run_the_kernel_did_not_carry_is_flagged() {
        let risen = KtlsCounters {
            tx_sw: 2,
            rx_sw: 2,
            ..KtlsCounters::default()
        };
        let good = KtlsFigures {
            connections: 1,
            server_connections: 1,
            client: Some(risen),
            server: Some(risen),
        };
        assert_eq!(check_ktls(&class(good.clone())), None);
        let flat = KtlsFigures {
            client: Some(KtlsCounters::default()),
            ..good.clone()
        };
        let w = check_ktls(&class(flat)).unwrap();
        assert_eq!(w.code(), "ktls_not_carried");
        assert!(w.to_string().contains("did not rise"), "{w}");
        let bad = KtlsFigures {
            server: Some(KtlsCounters {
                decrypt_errors: 3,
                ..risen
            }),
            ..good
        };
        assert!(check_ktls(&class(bad))
            .unwrap()
            .to_string()
            .contains("3 records"));
    }

    /// Only a foreign server measured without verification is warned
    /// about: a verified one, and stackbench's own responder (never
    /// verified, so `None`), are not.
    #[test]
    fn an_unverified_foreign_server_is_warned_about() {
        let with = |verified| {
            let mut c = crate::warnings::tests::sample_class();
            c.tls = Some(TlsFigures {
                server_verified: verified,
                ..TlsFigures::default()
            });
            check_tls_unverified(&c)
        };
        assert_eq!(with(None), None);
        assert_eq!(with(Some(true)), None);
        let w = with(Some(false)).unwrap();
        assert_eq!(w.code(), "tls_unverified");
        assert!(w.to_string().contains("give --ca"), "{w}");
        let mut plain = crate::warnings::tests::sample_class();
        plain.tls = None;
        assert_eq!(check_tls_unverified(&plain), None);
    }
}
