//! The connecting side's SASL exchange (AMQP 1.0 part 5.3), shared by the
//! driver's half and the responder application: both log in to a broker the
//! same way, ANONYMOUS or PLAIN.

use fe2o3_amqp_types::sasl::{SaslCode, SaslInit, SaslMechanisms, SaslOutcome};
use serde_amqp::primitives::{Binary, Symbol};

use super::frames;
use crate::app::Fault;

/// One SASL frame from the server, `kept`: the mechanisms are answered
/// with an init (`Some`: PLAIN with `login`, else ANONYMOUS), an ok outcome
/// ends the exchange (`None`: the AMQP header is next). A mechanism the
/// server does not offer, a refused login, a challenge or another frame is
/// a fault naming `peer` ("the broker", "it").
pub fn answer(
    kept: &[u8],
    login: Option<(&str, &str)>,
    peer: &str,
) -> Result<Option<SaslInit>, Fault> {
    match frames::descriptor(kept) {
        Some(frames::SASL_MECHANISMS) => {
            let offered: SaslMechanisms = frames::decode(kept, "sasl-mechanisms")?;
            let offered: Vec<&str> = offered
                .sasl_server_mechanisms
                .0
                .iter()
                .map(|m| m.0.as_str())
                .collect();
            let want = if login.is_some() {
                "PLAIN"
            } else {
                "ANONYMOUS"
            };
            if !offered.contains(&want) {
                return Err(Fault(format!(
                    "{peer} offers SASL {} and not {want}: {}",
                    offered.join(", "),
                    if want == "PLAIN" {
                        "it does not take a user and password"
                    } else {
                        "it wants a user and password"
                    }
                )));
            }
            let initial_response = login
                .map(|(user, password)| Binary::from(format!("\0{user}\0{password}").into_bytes()));
            Ok(Some(SaslInit {
                mechanism: Symbol::from(want),
                initial_response,
                hostname: None,
            }))
        }
        Some(frames::SASL_OUTCOME) => {
            let outcome: SaslOutcome = frames::decode(kept, "sasl-outcome")?;
            if !matches!(outcome.code, SaslCode::Ok) {
                return Err(Fault(format!(
                    "{peer} refused the SASL login (outcome {:?}): check the user and \
                     password, or whether it allows anonymous logins",
                    outcome.code
                )));
            }
            Ok(None)
        }
        _ => Err(Fault(
            "a SASL frame other than mechanisms or outcome (a challenge?): stackbench logs in \
             with ANONYMOUS or PLAIN only"
                .into(),
        )),
    }
}
