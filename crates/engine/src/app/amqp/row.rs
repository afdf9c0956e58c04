//! Amqp's row of the protocol table: apart from the module's shared
//! pieces, which its halves import, so that the row naming the halves
//! makes no import cycle.

use stackbench_model::AppProtocol;

use super::application::{Application, Options};
use super::client::Client;
use super::server::Server;
use crate::app::{PlainProbe, Protocol};

/// AMQP 1.0's row of the protocol table (`crate::app::row`).
#[derive(Debug, Clone, Copy)]
pub struct Amqp;

impl Protocol for Amqp {
    const PROTOCOL: AppProtocol = AppProtocol::Amqp;
    type Client = Client;
    type Server = Server;
    /// A broker closes a connection only when its client does.
    const PLAIN_SERVER_CLOSES: bool = false;
    /// Requests are answered by applications that get them from the broker.
    const PLAIN_SERVER_IS_BROKER: bool = true;

    /// The whole opening (SASL, open, begin) on one connection: a broker
    /// that is not reachable, not AMQP 1.0 or refuses the login is one line
    /// before the run, not a fault in it.
    fn probe_plain(target: &PlainProbe<'_>) -> Result<(), String> {
        let login = target.amqp.user.clone().map(|user| {
            let password = target.amqp.password.clone().unwrap_or_default();
            (user, password)
        });
        let opts = Options {
            broker: target.addr.to_string(),
            login,
            queue: target.amqp.queue.clone(),
            credit: target.amqp.credit,
        };
        Application::probe(&opts).map_err(|f| format!("target {}: {}", target.named, f.0))
    }
}
